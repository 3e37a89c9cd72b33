//! The allocation plan of one read: which selected turns, which part of the partial turn and
//! which requests fit in the one budget (R1, R3, R8, R10, R13, R15), decided before any text is
//! built, and the next cursor that follows from it (R5, R11, R12).

use super::cursor::Cursor;
use super::cursor::{Seen, Version};
use super::ids::{TurnId, TurnRef, TurnSeq};
use super::request::{ReadRequest, RequestHistory, Selector};
use super::store::TurnView;
use super::transcript::Transcript;
use super::window::{Omitted, Partial, RequestState};
use crate::error::{Error, ErrorKind};
use crate::ids::RequestId;

/// The selected turns in allocation order, as a range of turn indices (never materialised, so
/// selecting costs nothing).
#[derive(Clone, Copy, Debug)]
pub(super) enum Candidates {
    /// `since`: oldest first.
    Forward {
        start: usize,
        end: usize,
        since: TurnSeq,
    },
    /// `n:k`: newest first.
    Backward { start: usize, end: usize },
    /// `turn:`: one turn.
    Single { index: usize },
}

impl Candidates {
    pub(super) fn len(&self) -> usize {
        match *self {
            Candidates::Forward { start, end, .. } | Candidates::Backward { start, end } => {
                end - start
            }
            Candidates::Single { .. } => 1,
        }
    }

    /// The turn index of the `i`-th candidate in allocation order.
    pub(super) fn get(&self, i: usize) -> usize {
        match *self {
            Candidates::Forward { start, .. } => start + i,
            Candidates::Backward { end, .. } => end - 1 - i,
            Candidates::Single { index } => index,
        }
    }
}

/// How far the allocation has come; the trailer is a function of it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Progress {
    /// Candidates allocated, whole or as the excerpt.
    pub(super) taken: usize,
    /// The excerpt: turn index, from, to.
    pub(super) excerpt: Option<(usize, usize, usize)>,
    pub(super) partial: Option<Partial>,
    pub(super) requests_shown: usize,
    /// Characters of the elements between header and trailer.
    pub(super) body_chars: usize,
}

pub(super) struct Plan<'a> {
    pub(super) transcript: &'a Transcript,
    pub(super) request: &'a ReadRequest,
    pub(super) candidates: Candidates,
    pub(super) header_chars: usize,
    pub(super) progress: Progress,
    /// How the partial turn compares with what the cursor's caller was given (R15).
    pub(super) view: View,
    /// The cursor's partial-turn record, when it still holds (the part only grew).
    pub(super) kept: Option<Seen>,
    /// The record of the whole partial turn as it is now.
    pub(super) seen_now: Option<Seen>,
}

/// The partial turn against the cursor's record of it (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum View {
    /// Nothing of it was given under this cursor: sent as before (R10).
    Fresh,
    /// It only grew since its first `seen` characters were given: only the rest is sent.
    Grown { seen: usize },
    /// It was replaced since the cursor's read: sent as before, marked replaced.
    Replaced,
}

impl Plan<'_> {
    pub(super) fn turn(&self, index: usize) -> TurnView<'_> {
        self.transcript.turns.at(index)
    }

    pub(super) fn turn_ref(&self, index: usize) -> TurnRef {
        let turn = self.turn(index);
        TurnRef {
            // Checked when the turn was pushed.
            id: TurnId(turn.id.to_owned()),
            seq: turn.seq,
        }
    }

    pub(super) fn requests_total(&self) -> usize {
        match self.request.requests {
            RequestHistory::Open => self.transcript.open.len(),
            RequestHistory::All => self.transcript.open.len() + self.transcript.terminated.len(),
            RequestHistory::None => 0,
        }
    }

    pub(super) fn partial_total(&self) -> Option<usize> {
        match self.request.selector {
            Selector::Turn { .. } => None,
            _ => self.transcript.partial.as_ref().map(|(_, chars)| *chars),
        }
    }

    /// The turn indices of the first and last omitted candidates in seq order, if any.
    pub(super) fn omitted_range(&self, progress: &Progress) -> Option<(usize, usize)> {
        if self.candidates.len() == progress.taken {
            return None;
        }
        let (earliest, latest) = match self.candidates {
            Candidates::Backward { .. } => (self.candidates.len() - 1, progress.taken),
            _ => (progress.taken, self.candidates.len() - 1),
        };
        Some((self.candidates.get(earliest), self.candidates.get(latest)))
    }

    /// The omitted candidates, first and last in seq order.
    pub(super) fn omitted(&self, progress: &Progress) -> Omitted {
        //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
        //# Every selected turn that is not in the window MUST be reported: the window says how
        //# many, and names the first and the last of them by turn id (they are always consecutive
        //# among the selected turns, so the two ids and the count name them all).
        match self.omitted_range(progress) {
            None => Omitted::default(),
            Some((first, last)) => Omitted {
                count: self.candidates.len() - progress.taken,
                first: Some(self.turn_ref(first)),
                last: Some(self.turn_ref(last)),
            },
        }
    }

    /// What the next cursor records of the partial turn (R15): all of it when the window
    /// holds it (whole, cut or its new characters), the cursor's record when the window leaves
    /// out a part that only grew, nothing otherwise.
    fn next_seen(&self, progress: &Progress) -> Option<Seen> {
        //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
        //# The next cursor of a read that gives any of the partial turn (whole, cut, its new
        //# characters or marked replaced) MUST record it: its length in chars, a CRC-64 of its
        //# UTF-8 and the seq of the latest turn (section 5.1).
        match progress.partial {
            Some(
                Partial::Whole { .. }
                | Partial::Cut { .. }
                | Partial::New { .. }
                | Partial::Replaced { .. },
            ) => self.seen_now,
            // Before the partial-turn step the part counts as left out, as the trailer says.
            Some(Partial::Omitted { .. }) | None => self.kept,
            Some(Partial::Absent) => None,
        }
    }

    pub(super) fn next(&self, progress: &Progress) -> Option<Cursor> {
        let seq = self.next_seq(progress)?;
        Some(self.transcript.cursor_at(seq, self.next_seen(progress)))
    }

    /// The characters of the next cursor's text, counted without building the cursor.
    pub(super) fn next_chars(&self, progress: &Progress) -> Option<usize> {
        let seq = self.next_seq(progress)?;
        Some(Cursor::text_len_of(
            &self.transcript.child,
            seq,
            self.next_seen(progress),
            Version::V3,
        ))
    }

    fn next_seq(&self, progress: &Progress) -> Option<TurnSeq> {
        //= spec/read.md#r10-the-partial-turn
        //# The partial turn MUST NOT move the cursor's turn position (its seq); the cursor records
        //# what was given of it (R15).
        match self.candidates {
            //= spec/read.md#r5-no-skip
            //# The next cursor of a `since` read MUST advance only over turns the window holds,
            //# whole or as the marked excerpt of R8: its seq is the seq of the last such turn, or
            //# the given cursor's when the window holds none.
            //= spec/read.md#r6-no-repeat
            //# Following the next cursors, a caller MUST NOT be given a turn twice (whole or as an
            //# excerpt).
            //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
            //# For `since` and `n:` reads the excerpt counts as given: the next cursor MUST move
            //# past it (R5), so following the cursors never loops on a turn larger than the budget.
            // R5: the cursor advances only over the turns taken (whole or as the excerpt, R8).
            Candidates::Forward { since, .. } => Some(match progress.taken {
                0 => since,
                taken => self.turn(self.candidates.get(taken - 1)).seq,
            }),
            // R11: n:k starts a since chain at the latest turn.
            Candidates::Backward { .. } => Some(self.transcript.latest_seq()),
            //= spec/read.md#r12-turn-id-is-exact-location
            //# It returns no cursor (`next none`) and does not by itself avoid repeats;
            // R12: exact location is not a progress read.
            Candidates::Single { .. } => None,
        }
    }

    //= spec/read.md#r1-one-overall-budget
    //# The response text of a window MUST be at most `chars_max` chars: framing, turns, the partial
    //# turn and requests **together**.
    //= spec/read.md#r1-one-overall-budget
    //# The crate MUST NOT return a longer text; when not even the framing fits, the read MUST fail
    //# with `CharsMaxTooSmall` and say the smallest `chars_max` at which it succeeds (section 6).
    /// R1: the whole text as it would read if the allocation stopped at `progress`.
    pub(super) fn fits(&self, progress: &Progress) -> bool {
        self.header_chars + progress.body_chars + self.trailer_chars(progress)
            <= self.request.chars_max
    }

    pub(super) fn too_small(&self) -> Error {
        //= spec/read.md#r1-one-overall-budget
        //# The crate MUST NOT return a longer text; when not even the framing fits, the read MUST
        //# fail with `CharsMaxTooSmall` and say the smallest `chars_max` at which it succeeds
        //# (section 6).
        //= spec/read.md#r7-opaque-cursor-typed-errors
        //# `CharsMaxTooSmall` is not a refusal of the cursor: the framing of a later answer grows
        //# with the transcript (more turns to report omitted, longer numbers), so a budget that
        //# answered an earlier read can become too small for a later one, and the error names the
        //# smallest budget that answers it (R1); a read at that budget with the same cursor MUST
        //# succeed.
        //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
        //# `needed_chars` of `CharsMaxTooSmall` MUST be the smallest budget at which the read makes
        //# progress, so that a caller that always retries at `needed_chars` (and reads an excerpt's
        //# rest the same way) reaches the end of the transcript in a bounded number of reads: at
        //# most one per character of the turns plus one per turn.
        // The empty answer must fit first (step 3 of the allocation), then the first selected
        // turn in the smallest form that makes progress (R8): whole, its rest from the offset,
        // or an excerpt of one character. An excerpt of no character is not progress: a caller
        // retrying at this budget would be handed the same read again.
        let mut needed = self.header_chars + self.trailer_chars(&Progress::default());
        if self.candidates.len() > 0 {
            let index = self.candidates.get(0);
            let from = match self.request.selector {
                Selector::Turn { offset, .. } => offset,
                _ => 0,
            };
            let total = self.transcript.turns.chars(index);
            let mut options = Vec::new();
            if from == 0 {
                options.push(self.with_whole(&Progress::default(), index));
            } else {
                options.push(self.with_excerpt(&Progress::default(), index, from, total));
            }
            if from + 1 < total {
                options.push(self.with_excerpt(&Progress::default(), index, from, from + 1));
            }
            let first = options
                .iter()
                .map(|p| self.header_chars + p.body_chars + self.trailer_chars(p))
                .min()
                .unwrap_or(needed);
            needed = needed.max(first);
        }
        Error::new(
            ErrorKind::CharsMaxTooSmall,
            format!(
                "chars_max {} is below the {needed} this read needs",
                self.request.chars_max
            ),
        )
        .with_needed_chars(needed)
    }

    fn with_whole(&self, progress: &Progress, index: usize) -> Progress {
        let mut next = *progress;
        next.taken += 1;
        next.body_chars += self.whole_chars(index);
        next
    }

    fn with_excerpt(&self, progress: &Progress, index: usize, from: usize, to: usize) -> Progress {
        let mut next = *progress;
        next.taken += 1;
        next.excerpt = Some((index, from, to));
        next.body_chars += self.excerpt_chars(index, from, to);
        next
    }

    /// Whole turns in allocation order; the first candidate that does not fit whole becomes the
    /// excerpt when nothing was taken before it, else it and all after it are omitted (R3, R8).
    pub(super) fn allocate_turns(&mut self, first_from: usize) -> Result<(), Error> {
        //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
        //# When the first selected turn does not fit whole, it MUST come back as an excerpt marked
        //# with its position (`excerpt chars <from>..<to> of <total>`) and, when text remains, the
        //# reference that reads the rest (`rest at turn:<id> offset <to>`).
        while self.progress.taken < self.candidates.len() {
            let index = self.candidates.get(self.progress.taken);
            let first = self.progress.taken == 0;
            if !(first && first_from > 0) {
                let whole = self.with_whole(&self.progress, index);
                if self.fits(&whole) {
                    self.progress = whole;
                    continue;
                }
            }
            if !first {
                break;
            }
            let total = self.transcript.turns.chars(index);
            // The excerpt to the end of the turn (only possible from an offset) ...
            let to_end = self.with_excerpt(&self.progress, index, first_from, total);
            if first_from > 0 && self.fits(&to_end) {
                self.progress = to_end;
                break;
            }
            // ... else the longest excerpt that fits, of at least one character (R8: every
            // answer makes progress) and ending before the turn does; its size grows with its
            // length, so a binary search finds it.
            //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
            //# Every answer that is not an error MUST make progress: when the read selects at least
            //# one turn, it holds the first selected turn whole, or its rest from the offset whole
            //# (possibly empty, when a `turn:` read starts at the turn's end), or an excerpt of
            //# **at least one** character.
            let (mut low, mut high) = (first_from + 1, total);
            if low >= high || !self.fits(&self.with_excerpt(&self.progress, index, first_from, low))
            {
                return Err(self.too_small());
            }
            while high - low > 1 {
                let middle = low + (high - low) / 2;
                if self.fits(&self.with_excerpt(&self.progress, index, first_from, middle)) {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            self.progress = self.with_excerpt(&self.progress, index, first_from, low);
            break;
        }
        Ok(())
    }

    /// The element showing the newest `shown` characters of the partial turn, in the form the
    /// view asks for.
    fn partial_shown(&self, shown: usize, total: usize) -> Partial {
        //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
        //# - when the partial turn still starts with those `s` chars (same length, same CRC-64 of
        //# that prefix), the part only grew: the read MUST give only chars `s..total` (all of them
        //# if they fit, else their newest that fit), marked `chars <from>..<total> of <total>`, and
        //# never one of the first `s` again;
        //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
        //# - otherwise the part was replaced: the read MUST give it as R10 does, marked `replaced`.
        match self.view {
            View::Fresh if shown == total => Partial::Whole { chars: total },
            View::Fresh => Partial::Cut { shown, total },
            View::Replaced => Partial::Replaced { shown, total },
            View::Grown { seen } => Partial::New {
                from: total - shown,
                seen,
                total,
            },
        }
    }

    fn with_partial(&self, progress: &Progress, shown: usize, total: usize) -> Progress {
        let mut next = *progress;
        let part = self.partial_shown(shown, total);
        next.partial = Some(part);
        next.body_chars += Self::partial_element_chars(part);
        next
    }

    /// The partial turn, or of one that only grew the characters the caller was not given
    /// (R15); whole if it fits, else its newest characters that fit, else its omission (R10).
    pub(super) fn allocate_partial(&mut self) {
        //= spec/read.md#r10-the-partial-turn
        //# `n:` and `since` reads MUST attach the partial turn after the turns: whole if it fits,
        //# else its **newest** chars that fit (marked `last <n> of <total> chars`), else it is
        //# reported omitted.
        let Some(total) = self.partial_total() else {
            return;
        };
        let limit = match self.view {
            View::Grown { seen } => total - seen,
            View::Fresh | View::Replaced => total,
        };
        let all = self.with_partial(&self.progress, limit, total);
        if self.fits(&all) {
            self.progress = all;
            return;
        }
        if limit == 0 || !self.fits(&self.with_partial(&self.progress, 0, total)) {
            self.progress.partial = Some(Partial::Omitted { total });
            return;
        }
        let (mut low, mut high) = (0, limit);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.fits(&self.with_partial(&self.progress, middle, total)) {
                low = middle;
            } else {
                high = middle;
            }
        }
        self.progress = self.with_partial(&self.progress, low, total);
    }

    pub(super) fn requests(&self) -> impl Iterator<Item = (RequestId, RequestState, &str)> {
        let open = self
            .transcript
            .open
            .iter()
            .map(|(id, record)| (*id, RequestState::Open, record.as_str()));
        let terminated = self
            .transcript
            .terminated
            .iter()
            .map(|(id, record)| (*id, RequestState::Terminated, record.as_str()));
        //= spec/read.md#r13-request-history-on-demand
        //# By default a read MUST attach only the open requests.
        //= spec/read.md#r13-request-history-on-demand
        //# The records of terminated requests MUST be attached only when the read asks for them
        //# (`RequestHistory::All`); a read MAY ask for none.
        // R13: terminated requests only on demand.
        let (open_count, terminated_count) = match self.request.requests {
            RequestHistory::Open => (usize::MAX, 0),
            RequestHistory::All => (usize::MAX, usize::MAX),
            RequestHistory::None => (0, 0),
        };
        open.take(open_count)
            .chain(terminated.take(terminated_count))
    }

    /// Requests in order (open by id, then terminated by id), each whole; the first that does
    /// not fit ends the allocation (R3, R13).
    pub(super) fn allocate_requests(&mut self) {
        let mut progress = self.progress;
        for (id, state, record) in self.requests() {
            let mut next = progress;
            next.requests_shown += 1;
            next.body_chars += Self::request_line_chars(id, state, record);
            if !self.fits(&next) {
                break;
            }
            progress = next;
        }
        self.progress = progress;
    }
}
