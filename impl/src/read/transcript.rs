//! The [`Transcript`]: a child's turns, partial turn and requests as the daemon knows them,
//! the calls that change them, and [`Transcript::read`], which resolves the selector and hands
//! the allocation to the plan.

use std::collections::BTreeMap;

use super::cursor::Cursor;
use super::cursor::{Seen, turn_check};
use super::error_text::echo;
use super::ids::{ChildId, TurnId, TurnSeq};
use super::store::Turns;
use crate::error::{Error, ErrorKind};
use crate::ids::RequestId;

/// A child's transcript as the daemon knows it, indexed for reads.
///
/// Turns are kept in seq order with their character counts and an id index, so a read costs
/// time in proportion to what it returns, not to the child's history (R2).
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, RequestHistory, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
/// use parkline::RequestId;
///
/// let mut child = Transcript::new(ChildId::new("s972-1")?);
/// child.open_request(RequestId(1), "review the split")?;
/// child.open_request(RequestId(2), "measure fsync")?;
/// child.terminate_request(RequestId(1), "review the split: done")?;
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "split reviewed")?;
///
/// let default = child.read(&ReadRequest::new(Selector::Latest { n: 1 }, 1000))?;
/// assert!(default.text.contains("[request 2 open] measure fsync"));
/// assert!(!default.text.contains("request 1"));
///
/// let mut all = ReadRequest::new(Selector::Latest { n: 1 }, 1000);
/// all.requests = RequestHistory::All;
/// let history = child.read(&all)?;
/// assert!(history.text.contains("[request 1 terminated] review the split: done"));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transcript {
    pub(super) child: ChildId,
    pub(super) turns: Turns,
    pub(super) partial: Option<(String, usize)>,
    pub(super) open: BTreeMap<RequestId, String>,
    pub(super) terminated: BTreeMap<RequestId, String>,
}

impl Transcript {
    /// An empty transcript of `child`: no turns, no partial turn, no requests.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert!(child.turns().is_empty());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn new(child: ChildId) -> Self {
        Transcript {
            child,
            turns: Turns::default(),
            partial: None,
            open: BTreeMap::new(),
            terminated: BTreeMap::new(),
        }
    }

    /// The child this transcript belongs to.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.child().as_str(), "c");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn child(&self) -> &ChildId {
        &self.child
    }

    /// The completed turns, in seq order.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
    /// assert_eq!(child.turns().len(), 1);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn turns(&self) -> &Turns {
        &self.turns
    }

    /// The partial turn, if the child is working.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.set_partial(Some("half".to_string()));
    /// assert_eq!(child.partial(), Some("half"));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn partial(&self) -> Option<&str> {
        self.partial.as_ref().map(|(text, _)| text.as_str())
    }

    /// The cursor before this child's first turn.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.start_cursor(), Cursor::start(child.child()));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn start_cursor(&self) -> Cursor {
        Cursor::start(&self.child)
    }

    /// `CursorAhead`: the transcript ends before the cursor, either rebuilt shorter after a
    /// restart or never this long. The way on is the cursor at the transcript's last turn: what
    /// follows it now has not been given under this transcript (section 5.2 of the spec).
    pub(super) fn ahead(&self, cursor: &Cursor) -> Error {
        let last = match self.turns.last() {
            Some(turn) => format!("turn {} seq {}", turn.id, turn.seq),
            None => "no turn".to_string(),
        };
        let resume = self.cursor_at(self.latest_seq(), None);
        Error::new(
            ErrorKind::CursorAhead,
            format!(
                "cursor at seq {} is past the end of child {} ({last}): the transcript was rebuilt \
                 shorter or the cursor is not from it; resume with since:{resume}",
                cursor.seq, self.child,
            ),
        )
        .with_resume_cursor(resume)
    }

    /// `CursorDiverged`: the turn the cursor follows is not the turn this transcript has at its
    /// seq (section 5.2). Which of the caller's turns survived the rebuild only the caller knows,
    /// so the message names the ways on ([`Transcript::resume_after`] for a daemon that keeps
    /// the ids it handed over) and the value is the start cursor, which skips nothing.
    pub(super) fn diverged(&self, cursor: &Cursor) -> Error {
        let start = self.start_cursor();
        Error::new(
            ErrorKind::CursorDiverged,
            format!(
                "cursor at seq {} follows a turn that child {} no longer has at that seq: the \
                 transcript was rebuilt; resume after the last turn you hold that the child \
                 still has (Transcript::resume_after with the turn ids you hold, or resume with \
                 since:turn:<id> of that turn), or with since:{start} to read it from the \
                 beginning, repeating what you hold",
                cursor.seq, self.child,
            ),
        )
        .with_resume_cursor(start)
    }

    /// Where a follower whose cursor a rebuilt transcript refused goes on (section 5.2): the
    /// cursor just after the last turn of `held` (the ids of the turns it holds, oldest first)
    /// that this transcript still has, or the start cursor when it has none of them. Reading
    /// from it gives every turn the follower lost and nothing it holds.
    ///
    /// The crate keeps no transcript on disk: the daemon rebuilds it from its own turn log after
    /// a restart, and a follower (the daemon, on the parent's behalf) keeps the ids it handed
    /// over. Costs one id lookup per held turn the transcript lost, from the newest back.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
    /// let ids = |names: &[&str]| names.iter().map(|n| TurnId::new(*n)).collect::<Result<Vec<_>, _>>();
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// for (seq, id) in [(1, "t1"), (2, "t2"), (3, "t3")] {
    ///     child.push_turn(TurnId::new(id)?, TurnSeq(seq), "text")?;
    /// }
    /// let held = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 1000))?;
    /// let cursor = held.next.expect("a since read gives a next cursor");
    ///
    /// // The daemon restarts; its turn log lost t3, and the child goes on as t3b.
    /// let mut rebuilt = Transcript::new(ChildId::new("c")?);
    /// rebuilt.push_turn(TurnId::new("t1")?, TurnSeq(1), "text")?;
    /// rebuilt.push_turn(TurnId::new("t2")?, TurnSeq(2), "text")?;
    /// rebuilt.push_turn(TurnId::new("t3b")?, TurnSeq(3), "text")?;
    /// let refused = rebuilt.read(&ReadRequest::new(Selector::Since(cursor), 1000));
    /// assert_eq!(refused.unwrap_err().kind(), ErrorKind::CursorDiverged);
    ///
    /// let resume = rebuilt.resume_after(&ids(&["t1", "t2", "t3"])?);
    /// let next = rebuilt.read(&ReadRequest::new(Selector::Since(resume), 1000))?;
    /// assert_eq!(next.whole.len(), 1); // t3b alone: nothing held is sent again
    /// assert_eq!(next.whole[0].id.as_str(), "t3b");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn resume_after(&self, held: &[TurnId]) -> Cursor {
        //= spec/read.md#5-2-a-transcript-rebuilt-shorter
        //# `Transcript::resume_after(held)` MUST return the cursor just after the last turn of
        //# `held` that the transcript still has, or the start cursor when it has none of them.
        held.iter()
            .rev()
            .find_map(|id| self.turns.position(id.as_str()))
            .map_or_else(
                || self.start_cursor(),
                |index| self.cursor_at(self.turns.at(index).seq, None),
            )
    }

    /// The index of the turn at exactly `seq`, found by binary search (R2).
    pub(super) fn index_of_seq(&self, seq: TurnSeq) -> Option<usize> {
        let after = self.turns.partition_point(|turn| turn.seq <= seq);
        after
            .checked_sub(1)
            .filter(|&i| self.turns.at(i).seq == seq)
    }

    /// The cursor of this child just after its turn at `seq` (0: the start), recording `seen`.
    pub(super) fn cursor_at(&self, seq: TurnSeq, seen: Option<Seen>) -> Cursor {
        let turn = (seq.0 > 0).then(|| {
            let index = self.index_of_seq(seq);
            debug_assert!(index.is_some(), "a cursor is made only at a turn's seq");
            index.map_or(0, |index| turn_check(self.turns.at(index).id))
        });
        Cursor::at(&self.child, seq, turn, seen)
    }

    /// R7 and section 5.2: a cursor this transcript can read from, or the error that says why
    /// not and how to resume.
    pub(super) fn check_cursor(&self, cursor: &Cursor) -> Result<(), Error> {
        //= spec/read.md#r7-opaque-cursor-typed-errors
        //# A cursor the crate handed out for a child MUST be accepted by every later read
        //# of that child while its transcript only grows (section 5.2 says what happens
        //# when it is rebuilt shorter).
        if cursor.seq > self.latest_seq() {
            return Err(self.ahead(cursor));
        }
        if cursor.seq.0 == 0 {
            return Ok(());
        }
        //= spec/read.md#5-2-a-transcript-rebuilt-shorter
        //# A read with a cursor whose turn check does not match the id of the turn the
        //# transcript has at the cursor's seq, or with a cursor at a seq where the transcript
        //# has no turn, MUST fail with `CursorDiverged`, changing nothing.
        let index = self
            .index_of_seq(cursor.seq)
            .ok_or_else(|| self.diverged(cursor))?;
        match cursor.turn {
            Some(check) if check != turn_check(self.turns.at(index).id) => {
                Err(self.diverged(cursor))
            }
            _ => Ok(()),
        }
    }

    pub(super) fn latest_seq(&self) -> TurnSeq {
        self.turns.last().map_or(TurnSeq(0), |turn| turn.seq)
    }

    /// Appends a completed turn.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::SeqNotIncreasing`] when `seq` is 0 or not above the latest turn's seq;
    /// [`ErrorKind::DuplicateTurn`] when a turn with this id exists. Nothing changes then.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t2")?, TurnSeq(2), "b")?;
    /// let late = child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a").unwrap_err();
    /// assert_eq!(late.kind(), ErrorKind::SeqNotIncreasing);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn push_turn(
        &mut self,
        id: TurnId,
        seq: TurnSeq,
        text: impl Into<String>,
    ) -> Result<(), Error> {
        if seq.0 == 0 || seq <= self.latest_seq() {
            return Err(Error::new(
                ErrorKind::SeqNotIncreasing,
                format!("turn {id} seq {seq} after seq {}", self.latest_seq()),
            ));
        }
        if self.turns.position(id.as_str()).is_some() {
            return Err(Error::new(ErrorKind::DuplicateTurn, format!("turn {id}")));
        }
        if self.turns.is_full() {
            return Err(Error::new(
                ErrorKind::TranscriptFull,
                format!("turn {id}: the transcript holds {} turns", self.turns.len()),
            ));
        }
        self.turns.push(id.as_str(), seq, &text.into());
        Ok(())
    }

    /// Replaces the partial turn (`None`: the child is not working).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.set_partial(Some("step 1".to_string()));
    /// child.set_partial(None);
    /// assert_eq!(child.partial(), None);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn set_partial(&mut self, partial: Option<String>) {
        self.partial = partial.map(|text| {
            let chars = text.chars().count();
            (text, chars)
        });
    }

    /// Records a new open request with its short record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidRecord`] when the record holds a newline (R14: a request's record is
    /// one line of the window, so it cannot carry a line of framing).
    ///
    /// [`ErrorKind::DuplicateRequest`] when the request is already known (open or
    /// terminated).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.open_request(parkline::RequestId(1), "build the model")?;
    /// assert!(child.open_request(parkline::RequestId(1), "again").is_err());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn open_request(
        &mut self,
        request: RequestId,
        record: impl Into<String>,
    ) -> Result<(), Error> {
        let record = one_line(record.into())?;
        if self.open.contains_key(&request) || self.terminated.contains_key(&request) {
            return Err(Error::new(
                ErrorKind::DuplicateRequest,
                format!("request {request}"),
            ));
        }
        self.open.insert(request, record);
        Ok(())
    }

    /// Moves an open request to the terminated ones, with its final record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidRecord`] when the record holds a newline (nothing changes).
    ///
    /// [`ErrorKind::UnknownRequest`] when the request is not open.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// let err = child.terminate_request(parkline::RequestId(9), "done").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::UnknownRequest);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn terminate_request(
        &mut self,
        request: RequestId,
        record: impl Into<String>,
    ) -> Result<(), Error> {
        let record = one_line(record.into())?;
        if self.open.remove(&request).is_none() {
            return Err(Error::new(
                ErrorKind::UnknownRequest,
                format!("request {request} is not open"),
            ));
        }
        self.terminated.insert(request, record);
        Ok(())
    }
}

/// A request's record as the window shows it: one line (R14).
fn one_line(record: String) -> Result<String, Error> {
    //= spec/read.md#r14-exact-response-text
    //# A request's record MUST be one line: `open_request` and `terminate_request` MUST refuse a
    //# record holding a newline with `InvalidRecord`, changing nothing.
    if record.contains('\n') {
        return Err(Error::new(
            ErrorKind::InvalidRecord,
            format!(
                "a request's record is one line of the window; this one holds a newline: {}",
                echo(&record)
            ),
        ));
    }
    Ok(record)
}
