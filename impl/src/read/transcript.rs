//! The [`Transcript`]: a child's turns, partial turn and requests as the daemon knows them,
//! the calls that change them, and [`Transcript::read`], which resolves the selector and hands
//! the allocation to the plan.

use std::collections::BTreeMap;

use super::cursor::{Seen, Version, turn_check};
use super::error_text::{RESUME, echo};
use super::plan::{Candidates, Plan, Progress, View};
use super::text::char_slice;
use super::{ChildId, Cursor, ReadRequest, Selector, TurnId, TurnSeq, Turns, Window};
use crate::crc64::crc64;
use crate::{Error, ErrorKind, RequestId};

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
    fn ahead(&self, cursor: &Cursor) -> Error {
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
    fn diverged(&self, cursor: &Cursor) -> Error {
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
    fn index_of_seq(&self, seq: TurnSeq) -> Option<usize> {
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
    fn check_cursor(&self, cursor: &Cursor) -> Result<(), Error> {
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

    /// The cursor just after turn `id`: what `since:turn:<id>` reads from.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownTurn`] when no turn has the id.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t7")?, TurnSeq(7), "seven")?;
    /// assert_eq!(child.cursor_after(&TurnId::new("t7")?)?.seq(), TurnSeq(7));
    /// assert!(child.cursor_after(&TurnId::new("t8")?).is_err());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn cursor_after(&self, id: &TurnId) -> Result<Cursor, Error> {
        //= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
        //# The crate MUST also offer that cursor itself (`Cursor::after(child, turn)`,
        //# `Transcript::cursor_after(id)`).
        match self.candidates(&Selector::SinceTurn(id.clone()))? {
            (Candidates::Forward { since, .. }, _) => Ok(self.cursor_at(since, None)),
            _ => Err(Error::new(
                ErrorKind::UnknownTurn,
                format!("child {} has no turn {}", self.child, echo(id.as_str())),
            )),
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

    /// Answers one read. No side effects: the same read of the same transcript gives the same
    /// window (R9).
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::CursorOtherChild`]: the cursor belongs to another child (R7).
    /// - [`ErrorKind::CursorAhead`]: the cursor is past this child's latest turn (R7).
    /// - [`ErrorKind::UnknownTurn`]: no turn has the `turn:` id.
    /// - [`ErrorKind::OffsetOutOfRange`]: the `turn:` offset is past the turn's end.
    /// - [`ErrorKind::CharsMaxTooSmall`]: not even the framing (and, when a turn is selected,
    ///   a marker of its excerpt) fits in `chars_max`; [`Error::needed_chars`] says how much
    ///   would.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "x".repeat(5000))?;
    /// // A turn larger than the whole budget comes back as a marked excerpt ...
    /// let window = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 300))?;
    /// let excerpt = window.excerpt.clone().expect("the turn is too large for 300 chars");
    /// assert!(window.text.contains("rest at turn:t1 offset"));
    /// assert!(window.chars <= 300);
    /// // ... and the cursor moves past it, so following the cursor does not loop (R8).
    /// assert_eq!(window.next.map(|cursor| cursor.seq()), Some(TurnSeq(1)));
    /// // The rest is read by exact location.
    /// let rest = child.read(&ReadRequest::new(excerpt.rest().expect("more to read"), 300))?;
    /// assert_eq!(rest.excerpt.map(|part| part.from), Some(excerpt.to));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn read(&self, request: &ReadRequest) -> Result<Window, Error> {
        //= spec/read.md#r9-no-side-effects-no-collected-state
        //# A read MUST NOT change anything: the same read of the same transcript gives the same
        //# window, and the daemon keeps no per-caller state.
        //= spec/read.md#r9-no-side-effects-no-collected-state
        //# There MUST be no rule that a turn read once is never returned again; what a caller has
        //# is told only by the cursor it holds.
        let (candidates, first_from) = self.candidates(&request.selector)?;
        let header = match &request.selector {
            //= spec/read.md#5-3-a-cursor-of-version-2
            //# The header of a read with a v2 cursor past seq 0 MUST end in ` (v2 cursor: turn
            //# unchecked)` before its `]`, and the window MUST say so as a value
            //# (`Window::cursor_unchecked`).
            Selector::Since(cursor) if cursor.unchecked() => format!(
                "[parkline read {} {} (v2 cursor: turn unchecked)]\n",
                self.child, request.selector
            ),
            selector => format!("[parkline read {} {selector}]\n", self.child),
        };
        let (view, kept, seen_now) = self.partial_view(&request.selector);
        let mut plan = Plan {
            transcript: self,
            request,
            candidates,
            header_chars: header.chars().count(),
            progress: Progress::default(),
            view,
            kept,
            seen_now,
        };
        //= spec/read.md#3-the-allocation-r1-r3-r8-r10-r13
        //# **Framing first.** The window with no element (every selected turn omitted, the partial
        //# turn omitted, every asked request omitted) MUST fit, else the read fails with
        //# `CharsMaxTooSmall`.
        if !plan.fits(&plan.progress) {
            return Err(plan.too_small());
        }
        //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
        //# The budget MUST be allocated in the fixed order of section 3, a pure function of the
        //# transcript and the read.
        plan.allocate_turns(first_from)?;
        //= spec/read.md#r10-the-partial-turn
        //# A `turn:` read MUST NOT attach it.
        if !matches!(request.selector, Selector::Turn { .. }) {
            plan.allocate_partial();
        }
        plan.allocate_requests();
        Ok(plan.render(header))
    }

    /// How a read sees the partial turn (R15): against what the cursor says its caller was
    /// given, whether the part only grew, was replaced, or is new to the caller; the cursor's
    /// record when it still holds; and the record of the whole part as it is now. Checksumming
    /// costs time in proportion to the partial turn, never to the history (R2).
    fn partial_view(&self, selector: &Selector) -> (View, Option<Seen>, Option<Seen>) {
        //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
        //# - when the partial turn still starts with those `s` chars (same length, same CRC-64 of
        //# that prefix), the part only grew: the read MUST give only chars `s..total` (all of them
        //# if they fit, else their newest that fit), marked `chars <from>..<total> of <total>`, and
        //# never one of the first `s` again;
        //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
        //# - otherwise the part was replaced: the read MUST give it as R10 does, marked `replaced`.
        let Some((text, total)) = self.partial.as_ref() else {
            return (View::Fresh, None, None);
        };
        let latest = self.latest_seq();
        let seen_now = (*total > 0).then(|| Seen {
            after: latest,
            chars: *total,
            prefix: crc64(text.as_bytes()),
        });
        let Selector::Since(Cursor {
            seen: Some(seen),
            version,
            ..
        }) = selector
        else {
            return (View::Fresh, None, seen_now);
        };
        // A part seen after another turn is a part of an earlier turn: this one is new.
        if seen.after != latest {
            return (View::Fresh, None, seen_now);
        }
        // Section 5.3: a v2 record checks its prefix with CRC-32.
        let prefix = (seen.chars <= *total).then(|| {
            let bytes = char_slice(text, 0, seen.chars).as_bytes();
            match version {
                Version::V2 => u64::from(crc32fast::hash(bytes)),
                Version::V3 => crc64(bytes),
            }
        });
        if prefix == Some(seen.prefix) {
            // The next cursor is v3: a v2 record is kept as the v3 check of the same prefix.
            let kept = match version {
                Version::V3 => *seen,
                Version::V2 => Seen {
                    prefix: crc64(char_slice(text, 0, seen.chars).as_bytes()),
                    ..*seen
                },
            };
            (View::Grown { seen: seen.chars }, Some(kept), seen_now)
        } else {
            (View::Replaced, None, seen_now)
        }
    }

    fn candidates(&self, selector: &Selector) -> Result<(Candidates, usize), Error> {
        match selector {
            Selector::Latest { n } => {
                //= spec/read.md#r11-n-k-keeps-today-s-meaning-the-latest-may-repeat-read
                //# An `n:<k>` read MUST select the latest `k` turns (fewer if the child has fewer),
                //# and MUST return them whether or not the caller has them already.
                let end = self.turns.len();
                let start = end - (*n).min(end);
                Ok((Candidates::Backward { start, end }, 0))
            }
            Selector::Since(cursor) => {
                //= spec/read.md#r7-opaque-cursor-typed-errors
                //# A read with a cursor whose text is not exactly a cursor's MUST fail with
                //# `CursorDamaged`; with a cursor of another child, with `CursorOtherChild`, for
                //# **every** pair of distinct child ids (the cursor names its child, it does not
                //# carry a hash of it); with a cursor of the retired v1 form, with `CursorRetired`;
                //# with a cursor past the child's latest turn, with `CursorAhead`;
                //# with a cursor whose turn the transcript no longer has at its seq, with
                //# `CursorDiverged` (section 5.2).
                // R7: the cursor names its child, so this holds for every pair of ids.
                if cursor.child != self.child {
                    //= spec/read.md#6-errors
                    //# Every error that gives advice naming a cursor or an id MUST also give it
                    //# whole as a value (`Error::resume_cursor()`, `Error::cursor_child()`).
                    let theirs = echo(cursor.child.as_str());
                    return Err(Error::new(
                        ErrorKind::CursorOtherChild,
                        format!(
                            "cursor of child {theirs} read on child {}; read child {theirs} with \
                             it, and for child {} {RESUME} (since:{})",
                            self.child,
                            self.child,
                            self.start_cursor()
                        ),
                    )
                    .with_cursor_child(cursor.child.clone())
                    .with_resume_cursor(self.start_cursor()));
                }
                self.check_cursor(cursor)?;
                //= spec/read.md#r2-cost-proportional-to-what-is-returned
                //# Answering a read MUST take time in proportion to what the window holds (plus a
                //# logarithm of the history), not to the length of the child's history: the turn
                //# after a cursor is found by binary search on turn seq, a `turn:<id>` by an id
                //# index, counts of omitted turns and requests are computed, not counted by
                //# iteration, and character counts of turns are kept when turns are added.
                // R2: binary search; the cost does not grow with the history before the cursor.
                //= spec/read.md#r4-since-returns-only-what-is-new
                //# A `since:<cursor>` read MUST select exactly the turns with seq greater than the
                //# cursor's, in seq order, and MUST attach the partial turn (as far as it fits,
                //# R10) and a next cursor.
                // R4: exactly the turns after the cursor.
                let start = self.turns.partition_point(|turn| turn.seq <= cursor.seq);
                Ok((
                    Candidates::Forward {
                        start,
                        end: self.turns.len(),
                        since: cursor.seq,
                    },
                    0,
                ))
            }
            Selector::SinceTurn(id) => {
                //= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
                //# A `since:turn:<id>` read MUST be the `since` read with the cursor just after
                //# turn `<id>` that records nothing of the partial turn (the same selected turns,
                //# partial turn and next cursor; only the header differs), and MUST fail with
                //# `UnknownTurn` for an unknown id.
                let Some(index) = self.turns.position(id.as_str()) else {
                    return Err(Error::new(
                        ErrorKind::UnknownTurn,
                        format!(
                            "child {} has no turn {}; resume with since:{} if you hold none \
                             of its turns",
                            self.child,
                            echo(id.as_str()),
                            self.start_cursor()
                        ),
                    )
                    .with_resume_cursor(self.start_cursor()));
                };
                Ok((
                    Candidates::Forward {
                        start: index + 1,
                        end: self.turns.len(),
                        since: self.turns.at(index).seq,
                    },
                    0,
                ))
            }
            Selector::Turn { id, offset } => {
                //= spec/read.md#r12-turn-id-is-exact-location
                //# A `turn:<id>` read with an offset MUST return that turn's text from that char
                //# offset, whole if it is the whole turn and fits, else as much as fits, marked as
                //# in R8.
                //= spec/read.md#r12-turn-id-is-exact-location
                //# An unknown id MUST fail with `UnknownTurn`; an offset past the turn's end with
                //# `OffsetOutOfRange`.
                let Some(index) = self.turns.position(id.as_str()) else {
                    return Err(Error::new(
                        ErrorKind::UnknownTurn,
                        format!("child {} has no turn {}", self.child, echo(id.as_str())),
                    ));
                };
                if *offset > self.turns.chars(index) {
                    return Err(Error::new(
                        ErrorKind::OffsetOutOfRange,
                        format!(
                            "offset {offset} is past the end of turn {id} ({} chars)",
                            self.turns.chars(index)
                        ),
                    ));
                }
                Ok((Candidates::Single { index }, *offset))
            }
        }
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
