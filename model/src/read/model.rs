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
    RefTranscript, RefTurn,
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
    /// Ghost: seqs the caller was given whole, or as a marked excerpt naming the rest.
    pub given: BTreeSet<u64>,
    /// Ghost: a read gave a completed turn the caller had already been given (R6).
    pub repeated: bool,
    /// Ghost: a window was longer than its `chars_max` (R1).
    pub over_budget: bool,
    /// Ghost: a read with the caller's own cursor failed (R7).
    pub refused: bool,
    /// Ghost: a read with unread turns did not move the cursor (R8).
    pub stalled: bool,
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
            RefSelector::Since(cursor_text_of(&RefCursor {
                child: MODEL_CHILD.to_string(),
                seq: state.cursor,
                seen: state.seen,
            }))
        };
        RefReadRequest {
            selector,
            chars_max,
            history: RefHistory::Open,
        }
    }

    /// The caller reads with its cursor under `chars_max` and keeps the next cursor; the ghost
    /// fields record what it was given. Returns the window's excerpt, if any.
    fn caller_reads(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        request: RefReadRequest,
    ) -> Option<RefExcerpt> {
        let chars_max = request.chars_max;
        let window = match read_variant(&state.transcript, &request, self.variant) {
            Ok(window) => window,
            // The cursor was accepted, but the framing of this answer has outgrown the budget
            // (more turns to count as omitted, longer numbers): R2's refusal, not R7's. It must
            // name a budget that works, or it counts as a refusal.
            Err(RefReadError::CharsMaxTooSmall { needed })
                if needed > chars_max
                    && read_variant(
                        &state.transcript,
                        &RefReadRequest {
                            chars_max: needed,
                            ..request.clone()
                        },
                        self.variant,
                    )
                    .is_ok() =>
            {
                next.last = None;
                return None;
            }
            Err(_) => {
                next.refused = true;
                next.last = None;
                return None;
            }
        };
        let turn = |seq: u64| state.transcript.turns.iter().find(|turn| turn.seq == seq);
        for &seq in &window.whole {
            next.repeated |= state.given.contains(&seq);
            // Given only if the text really holds the whole turn under its own marker.
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
        next.over_budget |= window.chars > chars_max;
        let latest = state.transcript.turns.last().map_or(0, |turn| turn.seq);
        let new_cursor = window.next.unwrap_or(state.cursor);
        next.stalled |= self.variant != ReadVariant::PeekLatest
            && latest > state.cursor
            && new_cursor <= state.cursor;
        // R8: an answer with unread turns gives at least one character of the first of them.
        let progress = !window.whole.is_empty() || window.excerpt.is_some_and(|e| e.to > e.from);
        next.stalled |=
            self.variant != ReadVariant::PeekLatest && latest > state.cursor && !progress;
        next.cursor = new_cursor;
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
        });
        window.excerpt
    }

    /// R8: the rest of `excerpt`, followed by `turn:` reads each at the budget that its
    /// `CharsMaxTooSmall` names, ends in a bounded number of reads, each giving a character.
    fn rest_chain_ends(&self, state: &ReadState, excerpt: Option<RefExcerpt>) -> bool {
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
            given: BTreeSet::new(),
            repeated: false,
            over_budget: false,
            refused: false,
            stalled: false,
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
        if state.cursor > 0 && self.variant != ReadVariant::PeekLatest {
            actions.push(ReadAction::Resume(self.bounds.budgets[0]));
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
                t.turns.push(RefTurn {
                    id: format!("t{seq}"),
                    seq,
                    text,
                });
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
                self.caller_reads(state, &mut next, self.caller_read(state, chars_max));
            }
            ReadAction::Resume(chars_max) => {
                // The caller lost its cursor and resumes after the last turn it holds (R16).
                let request = RefReadRequest {
                    selector: RefSelector::SinceTurn(format!("t{}", state.cursor)),
                    chars_max,
                    history: RefHistory::Open,
                };
                let first_unread = state
                    .transcript
                    .turns
                    .iter()
                    .find(|turn| turn.seq > state.cursor)
                    .map(|turn| turn.seq);
                let before = next.given.len();
                // Without its cursor, the read cannot know what the caller has of the partial
                // turn: it is sent as new (R15 holds for cursor reads).
                let lost = ReadState {
                    held: None,
                    seen: None,
                    ..state.clone()
                };
                self.caller_reads(&lost, &mut next, request);
                // The first turn given is the first one after the cursor: none skipped, none
                // given again.
                let first_given = next
                    .given
                    .iter()
                    .copied()
                    .filter(|seq| *seq > state.cursor)
                    .min();
                next.resume_wrong |= next.given.len() > before && first_given != first_unread;
                next.resume_wrong |= next.repeated && !state.repeated;
            }
            ReadAction::ReadAtNeeded => {
                // The caller asks with no budget, then retries at the budget the error names.
                let probe = self.caller_read(state, 0);
                let needed = match read_variant(&state.transcript, &probe, self.variant) {
                    Err(RefReadError::CharsMaxTooSmall { needed }) => needed,
                    _ => 0,
                };
                let excerpt = self.caller_reads(state, &mut next, self.caller_read(state, needed));
                next.stalled |= !self.rest_chain_ends(state, excerpt);
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
            Property::always(R8, |_, s: &ReadState| !s.stalled),
            //= spec/read.md#r16-resuming-from-a-known-turn-a-cursor-the-daemon-may-keep
            //# A `since:turn:<id>` read MUST be the `since` read with the cursor just after turn
            //# `<id>` that records nothing of the partial turn (the same selected turns, partial
            //# turn and next cursor; only the header differs), and MUST fail with `UnknownTurn` for
            //# an unknown id.
            Property::always(R16, |_, s: &ReadState| !s.resume_wrong),
            //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
            //# - when the partial turn still starts with those `s` chars (same length, same CRC-32
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
        ]
    }
}
