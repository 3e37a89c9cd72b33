//! [`ReadModel`], the read side as a stateright [`Model`]: the child works (its partial turn
//! grows, is rewritten, turns complete, a request opens and terminates) while a caller reads
//! with its cursor under one of a few small budgets, through the reference's `read`, with ghost
//! fields recording what the caller was given. The [`ReadAction`]s have their guards in
//! `actions`, the transitions are in `next_state`, and the properties are listed by spec id
//! (`properties.rs` names them); `narrate.rs` tells a step in the spec's words.

use std::collections::BTreeSet;

use stateright::{Model, Property};

use super::bounds::ReadBounds;
use super::cursor::{RefCursor, RefSeen, cursor_text_of};
use super::properties::*;
use super::reference::{chars, read_variant};
use super::types::{
    RefExcerpt, RefHistory, RefPartial, RefReadError, RefReadRequest, RefRequest, RefSelector,
    RefTranscript, RefTurn, RefWindow,
};
use super::variants::ReadVariant;

/// What the caller's last read gave, for the `sometimes` properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LastRead {
    /// The window held an excerpt of a turn larger than the budget.
    pub excerpt: bool,
    /// The partial turn was cut or omitted.
    pub partial_cut: bool,
    /// Selected turns did not fit.
    pub omitted: bool,
    /// The window held no completed turn.
    pub nothing_new: bool,
    /// The window held only the new characters of a grown partial turn.
    pub partial_new: bool,
    /// The window held a partial turn marked replaced.
    pub partial_replaced: bool,
    /// The read followed a cursor refused with `CursorDiverged` after a rebuild (section 5.2).
    pub diverged: bool,
}

/// The state: the child's transcript, the caller's cursor, and ghost history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadState {
    /// The child's transcript.
    pub transcript: RefTranscript,
    /// Steps of work in the partial turn.
    pub grown: usize,
    /// The caller's cursor (the seq it encodes).
    pub cursor: u64,
    /// The id of the turn the caller's cursor follows (its turn check, section 5); `None` at
    /// seq 0.
    pub cursor_turn: Option<String>,
    /// Times the daemon rebuilt the transcript without its last turn.
    pub rebuilds: usize,
    /// Ghost: seqs of the transcript's turns the caller was given whole, or as a marked excerpt
    /// naming the rest (a rebuild forgets the seq it drops: a later turn there is new).
    pub given: BTreeSet<u64>,
    /// Ghost: a read gave a completed turn the caller had already been given (R6).
    pub repeated: bool,
    /// Ghost: a window was longer than its `chars_max` (R1).
    pub over_budget: bool,
    /// Ghost: a read with the caller's own cursor failed (R7).
    pub refused: bool,
    /// Ghost: a read with unread turns did not move the cursor, or gave no character of them
    /// (R8).
    pub stalled: bool,
    /// Ghost: following an excerpt's rest with `turn:` reads, each at the budget its
    /// `CharsMaxTooSmall` names, did not end (R8).
    pub rest_loops: bool,
    /// Ghost: a `since:turn:` resume did not continue right after the turn (R16).
    pub resume_wrong: bool,
    /// What the caller's cursor records of the partial turn.
    pub seen: Option<RefSeen>,
    /// Ghost: the partial turn as the caller can rebuild it from what it was given.
    pub held: Option<String>,
    /// Ghost: a read re-sent partial-turn characters the caller holds, or sent a replaced part as
    /// grown (R15).
    pub partial_wrong: bool,
    /// The child rewrote its partial turn in this turn.
    pub rewritten: bool,
    /// Ghost: what the last read gave.
    pub last: Option<LastRead>,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReadAction {
    /// The child works: its partial turn grows by `grow_chars`.
    Grow,
    /// The partial turn completes.
    Complete,
    /// The child rewrites its partial turn (same length, other text): replaced, not grown.
    Rewrite,
    /// The child opens its next request.
    OpenRequest,
    /// The open request with this id terminates.
    TerminateRequest(u64),
    /// The caller reads with its cursor (`n:1` for [`ReadVariant::PeekLatest`]) under this budget.
    Read(usize),
    /// The caller reads with no budget, then again at the budget the `CharsMaxTooSmall` error
    /// names, and follows an excerpt's rest the same way (R8).
    ReadAtNeeded,
    /// The caller lost its cursor and resumes with `since:turn:<id>` of the last turn it holds,
    /// under this budget (R16).
    Resume(usize),
    /// The daemon restarts and rebuilds the transcript without its last turn and its partial
    /// turn; later turns grow it back under new ids at the same seqs (section 5.2).
    Rebuild,
}

/// The read model: a growing transcript and a caller following cursors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadModel {
    /// The bounds.
    pub bounds: ReadBounds,
    /// Which protocol the model follows.
    pub variant: ReadVariant,
}

impl Default for ReadModel {
    fn default() -> Self {
        ReadModel {
            bounds: ReadBounds::default(),
            variant: ReadVariant::Correct,
        }
    }
}

/// The child id of the model.
pub const MODEL_CHILD: &str = "c";

fn letter(seq: u64) -> char {
    char::from(b'a' + (seq % 26) as u8)
}

impl ReadModel {
    /// The model of `variant` at `bounds`.
    pub fn new(bounds: ReadBounds, variant: ReadVariant) -> Self {
        ReadModel { bounds, variant }
    }

    /// The read the caller makes with `cursor` under `chars_max`.
    pub fn caller_read(&self, state: &ReadState, chars_max: usize) -> RefReadRequest {
        let selector = if self.variant == ReadVariant::PeekLatest {
            RefSelector::Latest(1)
        } else {
            RefSelector::Since(cursor_text_of(&RefCursor::new(
                MODEL_CHILD,
                state.cursor,
                state.cursor_turn.as_deref(),
                state.seen,
            )))
        };
        RefReadRequest {
            selector,
            chars_max,
            history: RefHistory::Open,
        }
    }

    /// The budget a caller in `state` reads at after asking with none: the one its
    /// `CharsMaxTooSmall` names (0 if the read at no budget did not fail so).
    pub(super) fn needed_budget(&self, state: &ReadState) -> usize {
        let probe = self.caller_read(state, 0);
        match read_variant(&state.transcript, &probe, self.variant) {
            Err(RefReadError::CharsMaxTooSmall { needed }) => needed,
            _ => 0,
        }
    }

    /// The caller makes `request` and keeps the next cursor; the ghost fields record what it was
    /// given ([`ReadModel::record_window`]) or that it was refused
    /// ([`ReadModel::record_refusal`]). Returns the window, if the read answered.
    fn caller_reads(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        request: &RefReadRequest,
    ) -> Option<RefWindow> {
        match read_variant(&state.transcript, request, self.variant) {
            Ok(window) => {
                self.record_window(state, next, &window, request.chars_max);
                Some(window)
            }
            Err(error @ (RefReadError::CursorDiverged | RefReadError::CursorAhead))
                if state.rebuilds > 0 =>
            {
                let window = self.recover(state, next, request.chars_max);
                if let Some(last) = next.last.as_mut() {
                    last.diverged = error == RefReadError::CursorDiverged;
                }
                window
            }
            Err(error) => {
                self.record_refusal(state, next, request, error);
                None
            }
        }
    }

    /// The last turn the caller holds that the transcript still has: where it resumes.
    pub(super) fn resume_point<'s>(&self, state: &'s ReadState) -> Option<&'s RefTurn> {
        let turns = &state.transcript.turns;
        turns
            .iter()
            .rev()
            .find(|turn| state.given.contains(&turn.seq))
    }

    /// Section 5.2: a cursor refused after a rebuild is followed by `since:turn:<id>` of the last
    /// turn the caller still holds, or by the start cursor when it holds none; the resumed
    /// read is judged like any other.
    fn recover(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        chars_max: usize,
    ) -> Option<RefWindow> {
        let (selector, from) = match self.resume_point(state) {
            Some(turn) => (RefSelector::SinceTurn(turn.id.clone()), turn.seq),
            None => (
                RefSelector::Since(cursor_text_of(&RefCursor::new(MODEL_CHILD, 0, None, None))),
                0,
            ),
        };
        let request = RefReadRequest {
            selector,
            chars_max,
            history: RefHistory::Open,
        };
        let lost = ReadState {
            held: None,
            cursor: from,
            ..state.clone()
        };
        match read_variant(&state.transcript, &request, self.variant) {
            Ok(window) => {
                self.record_window(&lost, next, &window, chars_max);
                Some(window)
            }
            Err(error) => {
                self.record_refusal(state, next, &request, error);
                None
            }
        }
    }

    /// R7: a read that fails refuses the caller's cursor, unless the error is `CharsMaxTooSmall`
    /// naming a larger budget at which the same read answers: the framing of this answer has
    /// outgrown the budget (more turns to count as omitted, longer numbers), R2's refusal, not
    /// R7's.
    pub(super) fn record_refusal(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        request: &RefReadRequest,
        error: RefReadError,
    ) {
        let outgrown = match error {
            RefReadError::CharsMaxTooSmall { needed } => {
                needed > request.chars_max
                    && read_variant(
                        &state.transcript,
                        &RefReadRequest {
                            chars_max: needed,
                            ..request.clone()
                        },
                        self.variant,
                    )
                    .is_ok()
            }
            _ => false,
        };
        next.refused |= !outgrown;
        next.last = None;
    }

    /// The ghost fields after the caller, in `state`, was given `window` under `chars_max`: each
    /// clause below sets the flag of one property, and the tests give it a window that breaks
    /// only that clause.
    pub(super) fn record_window(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        window: &RefWindow,
        chars_max: usize,
    ) {
        let turn = |seq: u64| state.transcript.turns.iter().find(|turn| turn.seq == seq);
        // R6 and R5: a turn given again is a repeat; a turn counts as given only if the text
        // really holds it whole under its own marker, or holds the excerpt and names its rest.
        for &seq in &window.whole {
            next.repeated |= state.given.contains(&seq);
            if let Some(turn) = turn(seq) {
                let whole = format!(
                    "[turn {} seq {}: {} chars]\n{}\n",
                    turn.id,
                    turn.seq,
                    chars(&turn.text),
                    turn.text
                );
                if window.text.contains(&whole) {
                    next.given.insert(seq);
                }
            }
        }
        if let Some(excerpt) = window.excerpt {
            next.repeated |= state.given.contains(&excerpt.seq);
            if let Some(turn) = turn(excerpt.seq) {
                let rest = format!("rest at turn:{} offset {}", turn.id, excerpt.to);
                if excerpt.to == excerpt.total || window.text.contains(&rest) {
                    next.given.insert(excerpt.seq);
                }
            }
        }
        // R1.
        next.over_budget |= window.chars > chars_max;
        // R8: a read with unread turns moves the cursor, and gives at least one character of the
        // first of them (the latest-turn peek of `PeekLatest` is not a cursor read).
        let latest = state.transcript.turns.last().map_or(0, |turn| turn.seq);
        let unread = self.variant != ReadVariant::PeekLatest && latest > state.cursor;
        let new_cursor = window.next.unwrap_or(state.cursor);
        let progress = !window.whole.is_empty() || window.excerpt.is_some_and(|e| e.to > e.from);
        next.stalled |= unread && new_cursor <= state.cursor;
        next.stalled |= unread && !progress;
        next.cursor = new_cursor;
        next.cursor_turn = turn(new_cursor).map(|turn| turn.id.clone());
        next.seen = window.next_seen;
        // R15: a caller holding the partial turn as its cursor records it is sent only the
        // characters added since, or the part marked replaced when it changed otherwise.
        let partial = state.transcript.partial.as_deref();
        if let (Some(held), Some(partial)) = (state.held.as_deref(), partial) {
            let grown = partial.starts_with(held);
            next.partial_wrong |= match window.partial {
                RefPartial::New { seen, .. } => !grown || seen != chars(held),
                RefPartial::Replaced { .. } => grown,
                RefPartial::Omitted(_) => false,
                RefPartial::Whole(_) | RefPartial::Cut { .. } | RefPartial::Absent => true,
            };
        }
        // What the caller can now rebuild of the partial turn: all of it, unless it was cut.
        next.held = match (window.partial, partial) {
            (RefPartial::Whole(_), Some(p)) => Some(p.to_string()),
            (RefPartial::Replaced { shown, total }, Some(p)) if shown == total => {
                Some(p.to_string())
            }
            (RefPartial::New { from, seen, .. }, Some(p)) if from == seen => Some(p.to_string()),
            (RefPartial::Omitted(_), _) => state.held.clone(),
            _ => None,
        };
        if next.seen.is_none() || next.held.as_deref() == Some("") {
            next.held = None;
        }
        next.last = Some(LastRead {
            partial_new: matches!(window.partial, RefPartial::New { .. }),
            partial_replaced: matches!(window.partial, RefPartial::Replaced { .. }),
            excerpt: window.excerpt.is_some(),
            partial_cut: matches!(
                window.partial,
                RefPartial::Cut { .. } | RefPartial::Omitted(_)
            ),
            omitted: !window.omitted.is_empty(),
            nothing_new: window.whole.is_empty() && window.excerpt.is_none(),
            diverged: false,
        });
    }

    /// R8: the rest of `excerpt`, followed by `turn:` reads each at the budget that its
    /// `CharsMaxTooSmall` names, ends in a bounded number of reads, each giving a character.
    pub(super) fn rest_chain_ends(&self, state: &ReadState, excerpt: Option<RefExcerpt>) -> bool {
        let Some(mut part) = excerpt else {
            return true;
        };
        let Some(turn) = state.transcript.turns.iter().find(|t| t.seq == part.seq) else {
            return true;
        };
        // Every read gives at least one character, so `total` reads are enough.
        for _ in 0..=part.total {
            if part.to >= part.total {
                return true;
            }
            let read_at = |chars_max| {
                let request = RefReadRequest {
                    selector: RefSelector::Turn {
                        id: turn.id.clone(),
                        offset: part.to,
                    },
                    chars_max,
                    history: RefHistory::Open,
                };
                read_variant(&state.transcript, &request, self.variant)
            };
            let needed = match read_at(0) {
                Err(RefReadError::CharsMaxTooSmall { needed }) => needed,
                _ => 0,
            };
            let Some(rest) = read_at(needed).ok().and_then(|window| window.excerpt) else {
                return false;
            };
            if rest.to <= part.to {
                return false;
            }
            part = rest;
        }
        false
    }
}

/// R16: a read resumed from the turn at seq `from` gives first (whole or as the excerpt) the
/// first turn after it: not the turn itself or one before it (given again), not a later one
/// (one skipped). A window that gives no turn is judged by R8, not here.
pub(super) fn resumed_elsewhere(state: &ReadState, from: u64, window: &RefWindow) -> bool {
    let first_unread = state
        .transcript
        .turns
        .iter()
        .find(|turn| turn.seq > from)
        .map(|turn| turn.seq);
    let first_given = window
        .whole
        .iter()
        .copied()
        .chain(window.excerpt.map(|excerpt| excerpt.seq))
        .min();
    first_given.is_some() && first_given != first_unread
}

impl Model for ReadModel {
    type State = ReadState;
    type Action = ReadAction;

    fn init_states(&self) -> Vec<ReadState> {
        vec![ReadState {
            transcript: RefTranscript {
                child: MODEL_CHILD.to_string(),
                ..RefTranscript::default()
            },
            grown: 0,
            cursor: 0,
            cursor_turn: None,
            rebuilds: 0,
            given: BTreeSet::new(),
            repeated: false,
            over_budget: false,
            refused: false,
            stalled: false,
            rest_loops: false,
            resume_wrong: false,
            seen: None,
            held: None,
            partial_wrong: false,
            rewritten: false,
            last: None,
        }]
    }

    fn actions(&self, state: &ReadState, actions: &mut Vec<ReadAction>) {
        let t = &state.transcript;
        if t.turns.len() < self.bounds.turns && state.grown < self.bounds.grows {
            actions.push(ReadAction::Grow);
        }
        if state.grown > 0 {
            actions.push(ReadAction::Complete);
            if !state.rewritten {
                actions.push(ReadAction::Rewrite);
            }
        }
        if t.requests.len() < self.bounds.requests {
            actions.push(ReadAction::OpenRequest);
        }
        for request in &t.requests {
            if request.open {
                actions.push(ReadAction::TerminateRequest(request.id));
            }
        }
        for &budget in &self.bounds.budgets {
            actions.push(ReadAction::Read(budget));
        }
        actions.push(ReadAction::ReadAtNeeded);
        if self.resume_point(state).is_some() && self.variant != ReadVariant::PeekLatest {
            actions.push(ReadAction::Resume(self.bounds.budgets[0]));
        }
        // A rebuild matters to a caller that holds a cursor past the start (section 5.2).
        if state.rebuilds < self.bounds.rebuilds && state.cursor > 0 {
            actions.push(ReadAction::Rebuild);
        }
    }

    fn next_state(&self, state: &ReadState, action: ReadAction) -> Option<ReadState> {
        let mut next = state.clone();
        let t = &mut next.transcript;
        match action {
            ReadAction::Grow => {
                let seq = t.turns.len() as u64 + 1;
                let grow: String =
                    std::iter::repeat_n(letter(seq), self.bounds.grow_chars).collect();
                t.partial.get_or_insert_with(String::new).push_str(&grow);
                next.grown += 1;
            }
            ReadAction::Complete => {
                let seq = t.turns.len() as u64 + 1;
                let text = t.partial.take()?;
                // A rebuilt transcript's new turns have new ids (section 5.2).
                let id = match state.rebuilds {
                    0 => format!("t{seq}"),
                    rebuilds => format!("t{seq}.{rebuilds}"),
                };
                t.turns.push(RefTurn { id, seq, text });
                next.grown = 0;
                next.rewritten = false;
                next.held = None;
            }
            ReadAction::Rewrite => {
                let partial = t.partial.as_mut()?;
                *partial = "X".repeat(chars(partial));
                next.rewritten = true;
            }
            ReadAction::OpenRequest => {
                let id = t.requests.len() as u64 + 1;
                t.requests.push(RefRequest {
                    id,
                    open: true,
                    record: format!("r{id}"),
                });
            }
            ReadAction::TerminateRequest(id) => {
                let request = t.requests.iter_mut().find(|r| r.id == id)?;
                request.open = false;
                request.record = format!("r{id} done");
            }
            ReadAction::Read(chars_max) => {
                self.caller_reads(state, &mut next, &self.caller_read(state, chars_max));
            }
            ReadAction::Rebuild => {
                let dropped = t.turns.pop()?;
                t.partial = None;
                next.given.remove(&dropped.seq);
                next.grown = 0;
                next.rewritten = false;
                next.held = None;
                next.rebuilds += 1;
            }
            ReadAction::Resume(chars_max) => {
                // The caller lost its cursor and resumes after the last turn it holds (R16).
                let resume = self.resume_point(state)?;
                let request = RefReadRequest {
                    selector: RefSelector::SinceTurn(resume.id.clone()),
                    chars_max,
                    history: RefHistory::Open,
                };
                // Without its cursor, the read cannot know what the caller has of the partial
                // turn: it is sent as new (R15 holds for cursor reads).
                let lost = ReadState {
                    held: None,
                    cursor: resume.seq,
                    ..state.clone()
                };
                if let Some(window) = self.caller_reads(&lost, &mut next, &request) {
                    next.resume_wrong |= resumed_elsewhere(state, resume.seq, &window);
                }
            }
            ReadAction::ReadAtNeeded => {
                let needed = self.needed_budget(state);
                let window = self.caller_reads(state, &mut next, &self.caller_read(state, needed));
                let excerpt = window.and_then(|window| window.excerpt);
                next.rest_loops |= !self.rest_chain_ends(state, excerpt);
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            //= spec/read.md#r1-one-overall-budget
            //# The response text of a window MUST be at most `chars_max` chars: framing, turns, the
            //# partial turn and requests **together**.
            Property::always(R1, |_, s: &ReadState| !s.over_budget),
            Property::always(R5, r5_no_skip),
            //= spec/read.md#r6-no-repeat
            //# Following the next cursors, a caller MUST NOT be given a turn twice (whole or as an
            //# excerpt).
            Property::always(R6, |_, s: &ReadState| !s.repeated),
            //= spec/read.md#r7-opaque-cursor-typed-errors
            //# A cursor the crate handed out for a child MUST be accepted by every later read of
            //# that child while its transcript only grows (section 5.2 says what happens when it is
            //# rebuilt shorter).
            Property::always(R7, |_, s: &ReadState| !s.refused),
            //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
            //# For `since` and `n:` reads the excerpt counts as given: the next cursor MUST move
            //# past it (R5), so following the cursors never loops on a turn larger than the budget.
            Property::always(R8, |_, s: &ReadState| !s.stalled && !s.rest_loops),
            //= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
            //# A `since:turn:<id>` read MUST be the `since` read with the cursor just after turn
            //# `<id>` that records nothing of the partial turn (the same selected turns, partial
            //# turn and next cursor; only the header differs), and MUST fail with `UnknownTurn` for
            //# an unknown id.
            Property::always(R16, |_, s: &ReadState| !s.resume_wrong),
            //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
            //# - when the partial turn still starts with those `s` chars (same length, same CRC-64
            //# of that prefix), the part only grew: the read MUST give only chars `s..total` (all
            //# of them if they fit, else their newest that fit), marked `chars <from>..<total> of
            //# <total>`, and never one of the first `s` again;
            //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
            //# - otherwise the part was replaced: the read MUST give it as R10 does, marked
            //# `replaced`.
            Property::always(R15, |_, s: &ReadState| !s.partial_wrong),
            Property::sometimes(SOMETIMES_PARTIAL_NEW, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.partial_new)
            }),
            Property::sometimes(SOMETIMES_PARTIAL_REPLACED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.partial_replaced)
            }),
            Property::sometimes(SOMETIMES_OVERSIZED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.excerpt)
            }),
            Property::sometimes(SOMETIMES_PARTIAL_CUT, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.partial_cut)
            }),
            Property::sometimes(SOMETIMES_OMITTED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.omitted)
            }),
            Property::sometimes(SOMETIMES_NOTHING_NEW, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.nothing_new)
            }),
            Property::sometimes(SOMETIMES_DIVERGED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.diverged)
            }),
        ]
    }
}
