//! [`check`]: a scenario of read ops applied to the crate's transcript and the reference's, every
//! read's answer compared, and R1, R5, R6, R8 asserted on the crate's answers along the chain of
//! cursors the caller follows.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::OnceLock;

use parkline::ErrorKind;
use parkline::RequestId;
use parkline::read::ReadRequest;
use parkline::read::{ChildId, Cursor, Partial, Selector, Transcript, TurnId, TurnSeq, Window};
use parkline_model::read::{
    RefCursor, RefReadRequest, RefRequest, RefSeen, RefSelector, RefTranscript, RefTurn, crc32,
    crc64, cursor_text, cursor_text_of, read, read_checking_fit, v1_cursor_text,
};

use super::compare::{compare_answer, id, transcript_of};
use super::op::{
    ALPHABET, BUDGET_MAX, CHILD, COLLIDING_CHILD, GROW_CHARS_MAX, OTHER_CHILD, ReadOp, budget,
    history,
};
use crate::known_bad::KnownBad;

/// What a passing check saw, so tests can assert the interesting cases were reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Ops applied.
    pub steps: usize,
    /// Reads answered (both sides agreed on an answer).
    pub windows: usize,
    /// Reads refused (both sides agreed on the error).
    pub errors: usize,
    /// Answers holding an excerpt.
    pub excerpts: usize,
    /// Answers with omitted turns.
    pub omissions: usize,
    /// Answers with the partial turn cut or omitted.
    pub partial_cuts: usize,
    /// Completed turns given along the followed cursor chain.
    pub followed_turns: usize,
    /// Answers holding only the new characters of a grown partial turn (R15).
    pub partial_new: usize,
    /// Answers holding a partial turn marked replaced (R15).
    pub partial_replaced: usize,
    /// Turns given along the followed chain that the follower already held: 0, since it
    /// resumes after a rebuild with `Transcript::resume_after` (section 5.2).
    pub resent_turns: usize,
    /// Turns that resuming at the refusal's `resume_cursor()`, the start cursor, would have sent
    /// again instead: the held turns each rebuilt transcript still had, summed over recoveries.
    pub resent_from_start: usize,
    /// Recoveries after a rebuild refused the followed cursor.
    pub recoveries: usize,
}

/// The crate and the reference disagreed, or a read requirement failed on the crate's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the op at which it was found.
    pub step: usize,
    /// The op.
    pub op: ReadOp,
    /// What differed, with the requirement id.
    pub message: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {} ({:?}): {}", self.step, self.op, self.message)
    }
}

impl std::error::Error for Divergence {}

/// Apply `ops` to the crate and the reference and compare every read.
///
/// # Errors
///
/// The first [`Divergence`].
pub fn check(ops: &[ReadOp]) -> Result<ReadReport, Divergence> {
    check_with(ops, None)
}

/// [`check`] with the crate's reads broken as `known_bad` says (one of [`KnownBad::READ`]:
/// [`read_as`] wraps `Transcript::read`; the reference stays correct, so the check must find a
/// divergence).
///
/// # Errors
///
/// The first [`Divergence`].
pub fn check_with(ops: &[ReadOp], known_bad: Option<KnownBad>) -> Result<ReadReport, Divergence> {
    run(ops, known_bad, false)
}

/// [`check`], and at every read also the reference deciding each fit by rendering the
/// candidate in full ([`read_checking_fit`]): a candidate whose counted length differs from its
/// rendered one, or an answer that differs from [`read`]'s, is a divergence. It shows that the
/// reference's counted fit is the rendered fit of `spec/read.md` on the scenario.
///
/// # Errors
///
/// The first [`Divergence`].
pub fn check_fit_rule(ops: &[ReadOp]) -> Result<ReadReport, Divergence> {
    run(ops, None, true)
}

fn run(
    ops: &[ReadOp],
    known_bad: Option<KnownBad>,
    fit_rule: bool,
) -> Result<ReadReport, Divergence> {
    let mut pair = Pair::new(known_bad).map_err(|message| Divergence {
        step: 0,
        op: ReadOp::Complete { gap: 0 },
        message,
    })?;
    pair.fit_rule = fit_rule;
    for (step, op) in ops.iter().enumerate() {
        pair.report.steps += 1;
        pair.apply(op).map_err(|message| Divergence {
            step,
            op: op.clone(),
            message,
        })?;
    }
    Ok(pair.report)
}

/// `len % (GROW_CHARS_MAX + 1)` characters of [`ALPHABET`] from the one `letter` picks.
fn letters(letter: u8, len: u8) -> &'static str {
    cycle(
        usize::from(letter) % ALPHABET.len(),
        usize::from(len) % (GROW_CHARS_MAX + 1),
    )
}

/// The characters of [`ALPHABET`] cycling, `len` of them (at most [`PAD_CHARS_MAX`]) from the
/// `from`-th: a slice of one text built once per process, since most ops grow the partial turn
/// or pad a cursor with them.
fn cycle(from: usize, len: usize) -> &'static str {
    static CYCLE: OnceLock<(String, Vec<usize>)> = OnceLock::new();
    let (text, starts) = CYCLE.get_or_init(|| {
        let text: String = (0..PAD_CHARS_MAX + ALPHABET.len())
            .map(|i| ALPHABET[i % ALPHABET.len()])
            .collect();
        let starts = text
            .char_indices()
            .map(|(at, _)| at)
            .chain([text.len()])
            .collect();
        (text, starts)
    });
    &text[starts[from]..starts[from + len]]
}

/// The most characters [`ReadOp::ReadDamaged`] appends (and more than a grow adds).
const PAD_CHARS_MAX: usize = 4095;

/// The crate's transcript and the reference's, kept equal, and the caller's cursors.
struct Pair {
    crate_side: Transcript,
    /// How the crate's reads are broken, if they are.
    known_bad: Option<KnownBad>,
    model: RefTranscript,
    /// The cursor the caller follows (text), and every cursor handed out so far.
    followed: String,
    issued: Vec<String>,
    /// Seqs given along the followed chain (R5, R6).
    given: BTreeSet<u64>,
    /// Ids of the turns given along the followed chain, oldest first, as the follower keeps
    /// them: a rebuild does not tell it which survived (section 5.2).
    held_ids: Vec<TurnId>,
    /// The partial turn as the follower can rebuild it from what it was given (R15).
    held: Option<String>,
    report: ReadReport,
    /// Whether every read also checks the reference's counted fit against its rendered one.
    fit_rule: bool,
    /// Times the transcript was rebuilt: the suffix of later turns' ids.
    rebuilds: u32,
}

/// How a recovering follower reads on: with `since:` and the cursor of
/// `Transcript::resume_after` (after a rebuild refused its cursor), or with `since:turn:<id>` of
/// the same turn (R16, having lost its cursor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    After,
    SinceTurn,
}

impl Pair {
    fn new(known_bad: Option<KnownBad>) -> Result<Pair, String> {
        if let Some(bad) = known_bad.filter(|bad| !bad.is_read()) {
            return Err(format!("{bad} is a delivery behaviour, not a read one"));
        }
        let child = ChildId::new(CHILD).map_err(|e| e.to_string())?;
        let crate_side = Transcript::new(child);
        let followed = crate_side.start_cursor().to_string();
        if followed != cursor_text(CHILD, 0, None) {
            return Err(format!(
                "R7: start cursor {followed} differs from the reference's {}",
                cursor_text(CHILD, 0, None)
            ));
        }
        Ok(Pair {
            crate_side,
            known_bad,
            model: RefTranscript {
                child: CHILD.into(),
                ..RefTranscript::default()
            },
            issued: vec![followed.clone()],
            followed,
            given: BTreeSet::new(),
            held_ids: Vec::new(),
            held: None,
            report: ReadReport::default(),
            fit_rule: false,
            rebuilds: 0,
        })
    }

    fn latest(&self) -> u64 {
        self.model.turns.last().map_or(0, |turn| turn.seq)
    }

    fn apply(&mut self, op: &ReadOp) -> Result<(), String> {
        match *op {
            ReadOp::Grow { len, letter } => {
                let grow = letters(letter, len);
                let mut partial = self.model.partial.take().unwrap_or_default();
                partial.push_str(grow);
                self.crate_side.set_partial(Some(partial.clone()));
                self.model.partial = Some(partial);
                Ok(())
            }
            ReadOp::Rewrite { len, letter } => {
                let text = letters(letter, len).to_string();
                self.crate_side.set_partial(Some(text.clone()));
                self.model.partial = Some(text);
                Ok(())
            }
            ReadOp::Complete { gap } => {
                self.held = None;
                let seq = self.latest() + 1 + u64::from(gap % 3);
                let text = self.model.partial.take().unwrap_or_default();
                // A rebuilt transcript's new turns have new ids (section 5.2).
                let turn = match self.rebuilds {
                    0 => format!("t{seq}"),
                    rebuilds => format!("t{seq}r{rebuilds}"),
                };
                self.crate_side
                    .push_turn(id(&turn)?, TurnSeq(seq), text.clone())
                    .map_err(|e| format!("push_turn: {e}"))?;
                self.crate_side.set_partial(None);
                self.model.turns.push(RefTurn {
                    id: turn,
                    seq,
                    text,
                });
                Ok(())
            }
            ReadOp::OpenRequest { len } => {
                let request = self.model.requests.len() as u64 + 1;
                let record: String = format!("request {request} ")
                    .chars()
                    .chain("é".repeat(usize::from(len) % 40).chars())
                    .collect();
                self.crate_side
                    .open_request(RequestId(request), record.clone())
                    .map_err(|e| format!("open_request: {e}"))?;
                self.model.requests.push(RefRequest {
                    id: request,
                    open: true,
                    record,
                });
                Ok(())
            }
            ReadOp::TerminateRequest { pick } => {
                let open: Vec<usize> = (0..self.model.requests.len())
                    .filter(|&i| self.model.requests[i].open)
                    .collect();
                if open.is_empty() {
                    return Ok(());
                }
                let request = &mut self.model.requests[open[usize::from(pick) % open.len()]];
                request.open = false;
                request.record.push_str(" done");
                self.crate_side
                    .terminate_request(RequestId(request.id), request.record.clone())
                    .map_err(|e| format!("terminate_request: {e}"))
            }
            ReadOp::ReadSince {
                budget: b,
                history: h,
            } => {
                let cursor = self.followed.clone();
                let window = self.compare(RefSelector::Since(cursor), budget(b), h)?;
                match window {
                    Some((window, next)) => self.follow(&window, next),
                    None if self.followed_refused_by_rebuild()? => {
                        self.recover(budget(b), h, Resume::After)
                    }
                    None => Ok(()),
                }
            }
            ReadOp::ReadStale { pick, budget: b } => {
                let cursor = self.issued[usize::from(pick) % self.issued.len()].clone();
                self.compare(RefSelector::Since(cursor), budget(b), 0)
                    .map(drop)
            }
            ReadOp::ReadLatest {
                n,
                budget: b,
                history: h,
            } => self
                .compare(RefSelector::Latest(usize::from(n % 4)), budget(b), h)
                .map(drop),
            ReadOp::ReadTurn {
                pick,
                offset,
                budget: b,
            } => {
                let (turn, chars) = match self.model.turns.len() {
                    0 => ("t0".to_string(), 0),
                    count => {
                        let turn = &self.model.turns[usize::from(pick) % count];
                        (turn.id.clone(), turn.text.chars().count())
                    }
                };
                let offset = usize::from(offset) % (chars + 2);
                self.compare(RefSelector::Turn { id: turn, offset }, budget(b), 0)
                    .map(drop)
            }
            ReadOp::ReadDamaged {
                position,
                replacement,
                pad,
            } => {
                let choices = "0123456789abcdef.v".as_bytes();
                let replacement = choices[usize::from(replacement) % choices.len()];
                // A cursor's text is ASCII, so its characters are its bytes.
                let followed = self.followed.as_bytes();
                let at = usize::from(position) % followed.len();
                let padding = cycle(0, usize::from(pad) % (PAD_CHARS_MAX + 1));
                let mut cursor = String::with_capacity(followed.len() + padding.len());
                cursor.push_str(&self.followed[..at]);
                cursor.push(char::from(replacement));
                cursor.push_str(&self.followed[at + 1..]);
                cursor.push_str(padding);
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadForeign { seq, child } => {
                let seq = u64::from(seq) % (self.latest() + 1);
                let turn = format!("t{seq}");
                let turn = (seq > 0).then_some(turn.as_str());
                let cursor = match child % 3 {
                    0 => cursor_text(OTHER_CHILD, seq, turn),
                    1 => cursor_text(COLLIDING_CHILD, seq, turn),
                    _ => v1_cursor_text(CHILD, seq),
                };
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadAhead { by } => {
                let seq = self.latest() + 1 + u64::from(by % 4);
                let cursor = cursor_text(CHILD, seq, Some(&format!("t{seq}")));
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadSinceTurn { pick, budget: b } => {
                // The last turn the follower holds that the transcript still has (after a
                // rebuild the followed cursor's seq may name another turn).
                let resume = self
                    .model
                    .turns
                    .iter()
                    .rev()
                    .find(|turn| self.given.contains(&turn.seq))
                    .map(|turn| turn.id.clone());
                match resume {
                    // R16: resuming from the last turn given continues the chain: the chain
                    // checks of `follow` (no skip, no repeat) apply to it.
                    Some(_) if pick % 2 == 0 => self.recover(budget(b), 0, Resume::SinceTurn),
                    _ => {
                        let id = match self.model.turns.len() {
                            0 => "t0".to_string(),
                            count => self.model.turns[usize::from(pick / 2) % count].id.clone(),
                        };
                        self.compare(RefSelector::SinceTurn(id), budget(b), 0)
                            .map(drop)
                    }
                }
            }
            ReadOp::Rebuild { keep } => {
                let keep = usize::from(keep) % (self.model.turns.len() + 1);
                self.model.turns.truncate(keep);
                self.model.partial = None;
                self.crate_side = transcript_of(&self.model)?;
                // The follower holds what it was given of the turns that remain.
                let last = self.latest();
                self.given.retain(|&seq| seq <= last);
                self.held = None;
                self.rebuilds += 1;
                Ok(())
            }
            ReadOp::ReadForged { seq, kind } => {
                let cursor = self.forged(seq, kind);
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadAtNeeded { history: h } => {
                if self.rebuilds > 0 && self.followed_refused_by_rebuild()? {
                    return self.recover(BUDGET_MAX, h, Resume::After);
                }
                let selector = RefSelector::Since(self.followed.clone());
                let needed = self.needed(&selector, h)?;
                let Some((window, next)) = self.compare(selector, needed, h)? else {
                    return Err(format!(
                        "R8: the since read fails at its needed_chars {needed}"
                    ));
                };
                self.follow(&window, next)?;
                let Some(mut part) = window.excerpt else {
                    return Ok(());
                };
                // Each read gives at least one character, so `total` reads end the turn.
                for _ in 0..part.total {
                    let Some(rest) = part.rest() else {
                        return Ok(());
                    };
                    let Selector::Turn { id, offset } = rest else {
                        return Err("R8: the rest of an excerpt is not a turn read".into());
                    };
                    let selector = RefSelector::Turn {
                        id: id.as_str().to_string(),
                        offset,
                    };
                    let needed = self.needed(&selector, h)?;
                    let next = self
                        .compare(selector, needed, h)?
                        .and_then(|(w, _)| w.excerpt);
                    match next {
                        Some(next) if next.to > offset => part = next,
                        _ => {
                            return Err(format!(
                                "R8: turn:{id} offset {offset} at its needed_chars {needed} \
                                 gives no character"
                            ));
                        }
                    }
                }
                match part.rest() {
                    None => Ok(()),
                    Some(rest) => Err(format!("R8: the rest chain does not end ({rest})")),
                }
            }
        }
    }

    /// Whether the crate refuses the followed cursor as one of a rebuilt transcript (both sides
    /// refused alike: the comparison checked it).
    fn followed_refused_by_rebuild(&self) -> Result<bool, String> {
        let cursor = Cursor::parse(&self.followed)
            .map_err(|e| format!("R7: the followed cursor does not parse: {e}"))?;
        let refused = self
            .crate_side
            .read(&ReadRequest::new(Selector::Since(cursor), BUDGET_MAX))
            .err()
            .map(|error| error.kind());
        Ok(matches!(
            refused,
            Some(ErrorKind::CursorDiverged | ErrorKind::CursorAhead)
        ))
    }

    /// Section 5.2: after a rebuild refused its cursor (or having lost it, R16), the follower
    /// resumes after the last turn it holds that the transcript still has (from the start if
    /// none), and follows on; the chain checks apply from there. The crate's
    /// `Transcript::resume_after` must name the cursor the reference's turns give.
    fn recover(&mut self, chars_max: usize, history_pick: u8, how: Resume) -> Result<(), String> {
        let survivor = self
            .held_ids
            .iter()
            .rev()
            .find_map(|id| self.model.turns.iter().find(|turn| turn.id == id.as_str()))
            .map(|turn| (turn.id.clone(), turn.seq));
        let expected = match &survivor {
            Some((turn, seq)) => cursor_text(CHILD, *seq, Some(turn)),
            None => cursor_text(CHILD, 0, None),
        };
        let resume = self.crate_side.resume_after(&self.held_ids).to_string();
        if resume != expected {
            return Err(format!(
                "5.2: resume_after gives {resume}, the last held turn the transcript has {expected}"
            ));
        }
        if how == Resume::After {
            self.report.recoveries += 1;
            self.report.resent_from_start += self
                .model
                .turns
                .iter()
                .filter(|turn| self.held_ids.iter().any(|id| id.as_str() == turn.id))
                .count();
        }
        let selector = match (how, survivor) {
            (Resume::SinceTurn, Some((turn, _))) => RefSelector::SinceTurn(turn),
            _ => RefSelector::Since(resume.clone()),
        };
        self.followed = resume;
        self.held = None;
        match self.compare(selector, chars_max, history_pick)? {
            Some((window, next)) => self.follow(&window, next),
            None => Ok(()),
        }
    }

    /// A cursor of this child with forged fields and a check computed over them
    /// ([`ReadOp::ReadForged`]).
    fn forged(&self, seq: u8, kind: u8) -> String {
        let turn = match self.model.turns.len() {
            0 => None,
            count => Some(&self.model.turns[usize::from(seq) % count]),
        };
        let (seq, id) = turn.map_or((0, "t0"), |turn| (turn.seq, turn.id.as_str()));
        let partial = self.model.partial.as_deref().unwrap_or("");
        let given = partial.chars().count().clamp(1, 7);
        let prefix: String = partial.chars().take(given).collect();
        let record = |chars, prefix| RefSeen {
            after: self.latest(),
            chars,
            prefix,
        };
        let mut cursor = RefCursor::new(CHILD, seq, Some(id), None);
        match kind % 8 {
            0 => cursor.turn = Some(crc64(format!("{id}x").as_bytes())),
            1 => (cursor.seq, cursor.turn) = (seq.max(1), None),
            2 => (cursor.seq, cursor.turn) = (0, Some(crc64(id.as_bytes()))),
            3 => cursor.seen = Some(record(0, crc64(b""))),
            4 => (cursor.v2, cursor.turn) = (true, None),
            5 => {
                let check = u64::from(crc32(prefix.as_bytes()));
                (cursor.v2, cursor.turn) = (true, None);
                cursor.seen = Some(record(given, check));
            }
            version => {
                let v2 = version == 6;
                let check = if v2 {
                    format!("{:08x}", crc32(prefix.as_bytes()))
                } else {
                    format!("{:016x}", crc64(prefix.as_bytes()))
                };
                if v2 {
                    (cursor.v2, cursor.turn) = (true, None);
                }
                let width = 1 + usize::from(kind / 8);
                let seen = format!("{given:x}-{:x}-{}", self.latest(), widened(&check, width));
                return cursor_text_with_seen(&cursor, &seen);
            }
        }
        cursor_text_of(&cursor)
    }

    /// The `needed_chars` of a read with no budget, on the crate (0 when it answers).
    fn needed(&self, selector: &RefSelector, history_pick: u8) -> Result<usize, String> {
        let request = RefReadRequest {
            selector: selector.clone(),
            chars_max: 0,
            history: history(history_pick).1,
        };
        match compare_answer(&self.crate_side, self.known_bad, &self.model, &request)? {
            Ok(_) => Ok(0),
            Err(error) => Ok(error.needed_chars().unwrap_or(0)),
        }
    }

    /// R5, R6, R8 along the followed chain, checked on the crate's answer alone.
    /// `next` is `window.next` as text, as the comparison wrote it.
    fn follow(&mut self, window: &Window, next_text: Option<String>) -> Result<(), String> {
        let before: u64 = Cursor::parse(&self.followed)
            .map_err(|e| format!("R7: the followed cursor does not parse: {e}"))?
            .seq()
            .0;
        let given_turns = window.whole.iter().map(|turn| &turn.id);
        for id in given_turns.chain(window.excerpt.as_ref().map(|e| &e.turn.id)) {
            if self.held_ids.contains(id) {
                self.report.resent_turns += 1;
            } else {
                self.held_ids.push(id.clone());
            }
        }
        for turn in &window.whole {
            if !self.given.insert(turn.seq.0) {
                return Err(format!(
                    "R6: turn {} given twice along the cursors",
                    turn.id
                ));
            }
            self.report.followed_turns += 1;
        }
        if let Some(excerpt) = &window.excerpt {
            let reference = format!("rest at turn:{} offset {}", excerpt.turn.id, excerpt.to);
            if excerpt.to < excerpt.total && !window.text.contains(&reference) {
                return Err(format!(
                    "R8: excerpt of turn {} without its reference",
                    excerpt.turn.id
                ));
            }
            if !self.given.insert(excerpt.turn.seq.0) {
                return Err(format!(
                    "R6: turn {} given twice along the cursors",
                    excerpt.turn.id
                ));
            }
            self.report.followed_turns += 1;
        }
        let unread = self.model.turns.iter().any(|turn| turn.seq > before);
        let progress =
            !window.whole.is_empty() || window.excerpt.as_ref().is_some_and(|e| e.to > e.from);
        if unread && !progress {
            return Err(format!(
                "R8: a read with unread turns gives no character of them:\n{}",
                window.text
            ));
        }
        // R15: holding the partial turn as far as the cursor says, the follower is sent only
        // what was added since, or the part marked replaced.
        let partial = self.model.partial.clone();
        if let (Some(held), Some(partial)) = (self.held.as_deref(), partial.as_deref()) {
            let grown = partial.starts_with(held);
            let wrong = match window.partial {
                Partial::New { seen, .. } => !grown || seen != held.chars().count(),
                Partial::Replaced { .. } => grown,
                Partial::Omitted { .. } => false,
                Partial::Whole { .. } | Partial::Cut { .. } | Partial::Absent | _ => true,
            };
            if wrong {
                return Err(format!(
                    "R15: holding {} partial-turn chars, the follower is sent {:?}",
                    held.chars().count(),
                    window.partial
                ));
            }
        }
        let held = match (window.partial, partial) {
            (Partial::Whole { .. }, Some(p)) => Some(p),
            (Partial::Replaced { shown, total }, Some(p)) if shown == total => Some(p),
            (Partial::New { from, seen, .. }, Some(p)) if from == seen => Some(p),
            (Partial::Omitted { .. }, _) => self.held.take(),
            _ => None,
        };
        let Some(next) = window.next.clone() else {
            return Err("R4: a since read returned no next cursor".into());
        };
        // The cursor says whether the partial turn was recorded; the follower's copy counts only
        // then (a cursor that records nothing gets the part as new).
        self.held = held.filter(|h| !h.is_empty() && next.partial_seen().is_some());
        let after = next.seq().0;
        for turn in &self.model.turns {
            if turn.seq <= after && !self.given.contains(&turn.seq) {
                return Err(format!(
                    //= spec/read.md#r5-no-skip
                    //= type=test
                    //# The next cursor of a `since` read MUST advance only over turns the window
                    //# holds, whole or as the marked excerpt of R8: its seq is the seq of the last
                    //# such turn, or the given cursor's when the window holds none.
                    "R5: the cursor passed turn {} (seq {}) without giving it",
                    turn.id, turn.seq
                ));
            }
        }
        if self.latest() > before && after <= before {
            return Err(format!(
                "R8: a read with unread turns left the cursor at seq {before}"
            ));
        }
        self.followed = next_text.unwrap_or_else(|| next.to_string());
        Ok(())
    }

    /// Read on both sides and compare; the crate's window and its next cursor's text when both
    /// answered.
    fn compare(
        &mut self,
        selector: RefSelector,
        chars_max: usize,
        history_pick: u8,
    ) -> Result<Option<(Window, Option<String>)>, String> {
        let (_, model_history) = history(history_pick);
        let request = RefReadRequest {
            selector,
            chars_max,
            history: model_history,
        };
        let answer = compare_answer(&self.crate_side, self.known_bad, &self.model, &request)?;
        if self.fit_rule {
            let (rendered, mismatch) = read_checking_fit(&self.model, &request);
            if let Some(mismatch) = mismatch {
                return Err(mismatch);
            }
            if rendered != read(&self.model, &request) {
                return Err(format!(
                    "R1: fitting by rendered size answers {rendered:?}, by counted size otherwise"
                ));
            }
        }
        match answer {
            Ok((window, next)) => {
                self.report.windows += 1;
                self.report.excerpts += usize::from(window.excerpt.is_some());
                self.report.omissions += usize::from(window.omitted.count > 0);
                self.report.partial_cuts += usize::from(matches!(
                    window.partial,
                    Partial::Cut { .. } | Partial::Omitted { .. }
                ));
                self.report.partial_new +=
                    usize::from(matches!(window.partial, Partial::New { .. }));
                self.report.partial_replaced +=
                    usize::from(matches!(window.partial, Partial::Replaced { .. }));
                if let Some(text) = &next
                    && !self.issued.contains(text)
                {
                    self.issued.push(text.clone());
                }
                Ok(Some((window, next)))
            }
            Err(_) => {
                self.report.errors += 1;
                Ok(None)
            }
        }
    }
}

/// `check` (the hex digits of a partial-turn record's check) spelled with `width` digits: its
/// last `width` digits when narrower, and nonzero digits before it when wider, so that a wider
/// check has a value its own width could not write (section 5.3's v2 check of 16 digits).
fn widened(check: &str, width: usize) -> String {
    if width <= check.len() {
        return check[check.len() - width..].to_string();
    }
    let high: String = "123456789abcdef"
        .chars()
        .cycle()
        .take(width - check.len())
        .collect();
    high + check
}

/// The text of `cursor` with `seen` as its partial-turn field verbatim and the check computed
/// over the fields, so that only the field rules of section 5 can refuse it.
fn cursor_text_with_seen(cursor: &RefCursor, seen: &str) -> String {
    let tag = if cursor.v2 { "v2" } else { "v3" };
    let fields = match (cursor.v2, cursor.turn) {
        (true, _) => format!("{:x} {seen}", cursor.seq),
        (false, None) => format!("{:x} 0 {seen}", cursor.seq),
        (false, Some(turn)) => format!("{:x} {turn:016x} {seen}", cursor.seq),
    };
    let check = crc32(format!("parkline-cursor-{tag} {fields} {}", cursor.child).as_bytes());
    format!(
        "{tag}.{}.{check:08x}.{}",
        fields.replace(' ', "."),
        cursor.child
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::read::read_ops_strategy;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The reference's fit by counted length is its fit by rendered size on arbitrary
        /// scenarios (the broken counting caught is in the model's unit tests).
        #[test]
        fn the_counted_fit_is_the_rendered_fit_on_arbitrary_scenarios(
            ops in read_ops_strategy(60)
        ) {
            let report = check_fit_rule(&ops).map_err(|d| TestCaseError::fail(d.to_string()))?;
            prop_assert_eq!(report.steps, ops.len());
        }
    }
}
