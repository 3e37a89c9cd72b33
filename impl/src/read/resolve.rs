//! [`Transcript::read`]: the selector resolved to candidate turns and the partial turn's view,
//! then the allocation handed to the plan and the text; and [`Transcript::cursor_after`], which
//! resolves a turn the same way.

use super::cursor::{Cursor, Seen, Version};
use super::error_text::{RESUME, echo};
use super::ids::TurnId;
use super::plan::{Candidates, Plan, Progress, View};
use super::request::{ReadRequest, Selector};
use super::text::char_slice;
use super::transcript::Transcript;
use super::window::Window;
use crate::crc64::crc64;
use crate::error::{Error, ErrorKind};

impl Transcript {
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
