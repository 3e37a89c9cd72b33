//! Read-side conformance: one [`ReadOp`] vocabulary and one [`check`] that drives the production
//! crate's `parkline::read::Transcript` and the reference (`parkline_model::read`) side by side,
//! and compares every read's answer.
//!
//! The same `check` is called by the differential proptest (`tests/read.rs`), the fuzz target
//! and the known-bad tests, so a finding of any of them replays through all of them.
//!
//! What is compared at every read: the whole result. For an answer: the exact response text
//! (R14), the turns returned whole, the excerpt, the omitted turns (count, first, last), the
//! in-flight part, the request counts, the next cursor (as text) and the characters used. For an
//! error: its kind, and for a budget error the budget that would do.
//!
//! Besides the comparison, the read requirements are asserted directly on the crate's answers,
//! so a mistake shared by the crate and the reference is still caught: R1 (the text is at most
//! `max_chars`), and along the chain of cursors the caller follows, R5 (every turn up to the
//! cursor was given, whole or as an excerpt naming its rest), R6 (no turn given twice) and R8
//! (a read with unread turns moves the cursor).

use std::collections::BTreeSet;
use std::fmt;

use arbitrary::{Arbitrary, Unstructured};
use parkline::read::{
    ChildId, Cursor, ERROR_CHARS_MAX, InFlight, ReadRequest, RequestHistory, Selector, Transcript,
    TurnId, TurnSeq, Window,
};
use parkline::{Error, ErrorKind, RequestId};
use parkline_model::read::{
    RefCursor, RefHistory, RefInFlight, RefReadError, RefReadRequest, RefRequest, RefSelector,
    RefTranscript, RefTurn, RefWindow, cursor_text, cursor_text_of, read, v1_cursor_text,
};
use proptest::prelude::*;

use crate::known_bad::{KnownBad, read_as};

/// The child every scenario reads.
pub const CHILD: &str = "s61947-8";

/// Another child, whose cursors the reads of [`CHILD`] must refuse.
pub const OTHER_CHILD: &str = "s978-5";

/// Another child whose id has the same CRC-32 as [`CHILD`]'s (`b91ca91f`): the child tag of the
/// retired v1 cursor could not tell them apart, so a generator that only used [`OTHER_CHILD`]
/// could never find that its cursor reads this child's turns (R7).
pub const COLLIDING_CHILD: &str = "s590020-12";

/// The characters the in-flight part grows with: multi-byte ones (budgets count characters, not
/// bytes), a newline, and the brackets of the framing.
pub const ALPHABET: [char; 8] = ['a', 'b', 'é', '😀', '\n', ' ', '[', ']'];

/// Characters one [`ReadOp::Grow`] adds at most.
pub const GROW_CHARS_MAX: usize = 60;

/// The largest `max_chars` the ops use. Small enough that turns are excerpted and omitted often.
pub const BUDGET_MAX: usize = 520;

/// One step of a read scenario, in the words of `spec/read.md`. Small integers pick among the
/// things that exist; each is reduced modulo what is there, so every op sequence is valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum ReadOp {
    /// The child works: its in-flight part grows by `len % (GROW_CHARS_MAX + 1)` characters of
    /// [`ALPHABET`] starting at `letter`.
    Grow {
        /// How many characters.
        len: u8,
        /// Which character first.
        letter: u8,
    },
    /// The in-flight part (empty if none) completes as a turn; its seq is the latest plus
    /// `1 + gap % 3` (seqs need not be consecutive).
    Complete {
        /// Seq gap.
        gap: u8,
    },
    /// The child opens a request with a record of `len % 40` characters.
    OpenRequest {
        /// Record length.
        len: u8,
    },
    /// The open request picked by `pick` terminates.
    TerminateRequest {
        /// Which open request.
        pick: u8,
    },
    /// The caller follows its cursor: `since:<cursor>`, and keeps the next cursor.
    ReadSince {
        /// `max_chars` = `budget % (BUDGET_MAX + 1)`.
        budget: u16,
        /// Request history: 0 open, 1 all, 2 none.
        history: u8,
    },
    /// A `since` read with a cursor handed out earlier (stale), picked by `pick`.
    ReadStale {
        /// Which earlier cursor.
        pick: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// `n:<k>` with `k = n % 4`.
    ReadLatest {
        /// How many.
        n: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
        /// Request history, as for `ReadSince`.
        history: u8,
    },
    /// `turn:<id>` of the turn picked by `pick` (or an unknown id when there is none), from
    /// offset `offset % (chars + 2)` (one past the end is out of range).
    ReadTurn {
        /// Which turn.
        pick: u8,
        /// Offset.
        offset: u16,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// A `since` read with the followed cursor's text changed at one character, then `pad`
    /// characters appended (`pad` up to 4,095: an error must not echo all of a long input).
    ReadDamaged {
        /// Which character.
        position: u8,
        /// Its replacement, from `0-9a-f.v`.
        replacement: u8,
        /// Characters appended, `pad % 4096` of them.
        pad: u16,
    },
    /// A `since` read with a cursor that is not this child's: `child % 3` picks a cursor of
    /// [`OTHER_CHILD`], of [`COLLIDING_CHILD`], or this child's cursor in the retired v1 form.
    ReadForeign {
        /// The foreign cursor's seq.
        seq: u8,
        /// Which foreign cursor.
        child: u8,
    },
    /// A `since` read with a cursor of this child ahead of its latest turn.
    ReadAhead {
        /// How far ahead (at least 1).
        by: u8,
    },
    /// `since:turn:<id>`. With an even `pick`, the caller resumes from the last turn it was given
    /// along its cursor chain (as after losing the cursor) and keeps following: the chain must
    /// still skip and repeat nothing (R16). With an odd `pick`, a read after the turn
    /// picked by `pick / 2` (or an unknown id when there is none), compared only.
    ReadSinceTurn {
        /// Which turn, and whether to resume.
        pick: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// The caller follows its cursor the way a client that trusts `needed_chars` does: it reads
    /// with `max_chars` 0, retries at the budget the `BudgetTooSmall` error names, and reads an
    /// excerpt's rest the same way until the turn ends (R8: every answer makes progress, so this
    /// ends within a read per character). Random budgets almost never land on that one budget,
    /// so without this op the generator could not reach an answer that makes no progress.
    ReadAtNeeded {
        /// Request history, as for `ReadSince`.
        history: u8,
    },
    /// The child rewrites its in-flight part: `len % (GROW_CHARS_MAX + 1)` characters of
    /// [`ALPHABET`] starting at `letter` replace it (a replaced part, unless it happens to start
    /// with the old one). Without it the in-flight part only ever grew, so no generated read
    /// could meet a replaced part (R15).
    Rewrite {
        /// How many characters.
        len: u8,
        /// Which character first.
        letter: u8,
    },
}

fn budget(value: u16) -> usize {
    usize::from(value) % (BUDGET_MAX + 1)
}

fn history(value: u8) -> (RequestHistory, RefHistory) {
    match value % 3 {
        0 => (RequestHistory::Open, RefHistory::Open),
        1 => (RequestHistory::All, RefHistory::All),
        _ => (RequestHistory::None, RefHistory::None),
    }
}

/// A proptest strategy for one [`ReadOp`], weighted towards the child working and the caller
/// following its cursor.
pub fn read_op_strategy() -> impl Strategy<Value = ReadOp> {
    let budget = any::<u16>();
    prop_oneof![
        4 => (any::<u8>(), any::<u8>()).prop_map(|(len, letter)| ReadOp::Grow { len, letter }),
        3 => any::<u8>().prop_map(|gap| ReadOp::Complete { gap }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(len, letter)| ReadOp::Rewrite { len, letter }),
        1 => any::<u8>().prop_map(|len| ReadOp::OpenRequest { len }),
        1 => any::<u8>().prop_map(|pick| ReadOp::TerminateRequest { pick }),
        5 => (budget, any::<u8>()).prop_map(|(budget, history)| ReadOp::ReadSince { budget, history }),
        1 => (any::<u8>(), budget).prop_map(|(pick, budget)| ReadOp::ReadStale { pick, budget }),
        2 => (any::<u8>(), budget, any::<u8>())
            .prop_map(|(n, budget, history)| ReadOp::ReadLatest { n, budget, history }),
        2 => (any::<u8>(), any::<u16>(), budget)
            .prop_map(|(pick, offset, budget)| ReadOp::ReadTurn { pick, offset, budget }),
        1 => (any::<u8>(), any::<u8>(), prop_oneof![Just(0u16), any::<u16>()])
            .prop_map(|(position, replacement, pad)| ReadOp::ReadDamaged { position, replacement, pad }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(seq, child)| ReadOp::ReadForeign { seq, child }),
        1 => any::<u8>().prop_map(|by| ReadOp::ReadAhead { by }),
        2 => any::<u8>().prop_map(|history| ReadOp::ReadAtNeeded { history }),
        1 => (any::<u8>(), budget).prop_map(|(pick, budget)| ReadOp::ReadSinceTurn { pick, budget }),
    ]
}

/// A proptest strategy for a scenario of up to `len_max` ops.
pub fn read_ops_strategy(len_max: usize) -> impl Strategy<Value = Vec<ReadOp>> {
    proptest::collection::vec(read_op_strategy(), 0..=len_max)
}

/// Decodes fuzz input the way `libfuzzer-sys` does for the `read_windows` target, so corpus
/// files replay as plain tests on stable. `None` when the bytes do not make ops.
pub fn decode_read_ops(bytes: &[u8]) -> Option<Vec<ReadOp>> {
    <Vec<ReadOp> as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The bytes that [`decode_read_ops`] (and so the fuzz target) decodes into `ops`: the inverse
/// of the derived `Arbitrary` layout (a continue byte before each op, the variant as a
/// little-endian `u32` scaled to the variant count, then the fields little-endian in order). Used
/// to write seed corpora from readable scenarios.
pub fn encode_read_ops(ops: &[ReadOp]) -> Vec<u8> {
    const VARIANTS: u64 = 14;
    let mut bytes = Vec::new();
    for op in ops {
        bytes.push(1);
        let (index, fields): (u64, Vec<u8>) = match *op {
            ReadOp::Grow { len, letter } => (0, vec![len, letter]),
            ReadOp::Complete { gap } => (1, vec![gap]),
            ReadOp::OpenRequest { len } => (2, vec![len]),
            ReadOp::TerminateRequest { pick } => (3, vec![pick]),
            ReadOp::ReadSince { budget, history } => {
                (4, [&budget.to_le_bytes()[..], &[history]].concat())
            }
            ReadOp::ReadStale { pick, budget } => {
                (5, [&[pick][..], &budget.to_le_bytes()].concat())
            }
            ReadOp::ReadLatest { n, budget, history } => {
                (6, [&[n][..], &budget.to_le_bytes(), &[history]].concat())
            }
            ReadOp::ReadTurn {
                pick,
                offset,
                budget,
            } => (
                7,
                [&[pick][..], &offset.to_le_bytes(), &budget.to_le_bytes()].concat(),
            ),
            ReadOp::ReadDamaged {
                position,
                replacement,
                pad,
            } => (
                8,
                [&[position, replacement][..], &pad.to_le_bytes()].concat(),
            ),
            ReadOp::ReadForeign { seq, child } => (9, vec![seq, child]),
            ReadOp::ReadAhead { by } => (10, vec![by]),
            ReadOp::ReadSinceTurn { pick, budget } => {
                (11, [&[pick][..], &budget.to_le_bytes()].concat())
            }
            ReadOp::ReadAtNeeded { history } => (12, vec![history]),
            ReadOp::Rewrite { len, letter } => (13, vec![len, letter]),
        };
        // The derive picks variant `(u32 * VARIANTS) >> 32`: the smallest u32 giving `index`.
        let discriminant = u32::try_from((index << 32).div_ceil(VARIANTS)).unwrap_or(u32::MAX);
        bytes.extend_from_slice(&discriminant.to_le_bytes());
        bytes.extend_from_slice(&fields);
    }
    bytes.push(0);
    bytes
}

/// The read behaviour the fuzz target `read_windows` runs: the one named by the environment
/// variable `PARKLINE_KNOWN_BAD` (kebab-case, `PARKLINE_KNOWN_BAD=turns-only-budget`), or none.
///
/// # Errors
///
/// The variable names no known-bad behaviour, or a delivery one.
pub fn known_bad_from_env() -> Result<Option<KnownBad>, String> {
    match KnownBad::from_env("PARKLINE_KNOWN_BAD")? {
        Some(bad) if !bad.is_read() => Err(format!(
            "PARKLINE_KNOWN_BAD={bad}: a delivery behaviour; read_windows runs one of {:?}",
            KnownBad::READ.map(KnownBad::name)
        )),
        known_bad => Ok(known_bad),
    }
}

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
    /// Answers with the in-flight part cut or omitted.
    pub in_flight_cuts: usize,
    /// Completed turns given along the followed cursor chain.
    pub followed_turns: usize,
    /// Answers holding only the new characters of a grown in-flight part (R15).
    pub in_flight_new: usize,
    /// Answers holding an in-flight part marked replaced (R15).
    pub in_flight_replaced: usize,
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
    let mut pair = Pair::new(known_bad).map_err(|message| Divergence {
        step: 0,
        op: ReadOp::Complete { gap: 0 },
        message,
    })?;
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
    /// The in-flight part as the follower can rebuild it from what it was given (R15).
    held: Option<String>,
    report: ReadReport,
}

fn id(text: &str) -> Result<TurnId, String> {
    TurnId::new(text).map_err(|e| format!("turn id {text}: {e}"))
}

impl Pair {
    fn new(known_bad: Option<KnownBad>) -> Result<Pair, String> {
        if let Some(bad) = known_bad.filter(|bad| !bad.is_read()) {
            return Err(format!("{bad} is a delivery behaviour, not a read one"));
        }
        let child = ChildId::new(CHILD).map_err(|e| e.to_string())?;
        let crate_side = Transcript::new(child);
        let followed = crate_side.start_cursor().to_string();
        if followed != cursor_text(CHILD, 0) {
            return Err(format!(
                "R7: start cursor {followed} differs from the reference's {}",
                cursor_text(CHILD, 0)
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
            held: None,
            report: ReadReport::default(),
        })
    }

    fn latest(&self) -> u64 {
        self.model.turns.last().map_or(0, |turn| turn.seq)
    }

    fn apply(&mut self, op: &ReadOp) -> Result<(), String> {
        match *op {
            ReadOp::Grow { len, letter } => {
                let len = usize::from(len) % (GROW_CHARS_MAX + 1);
                let grow: String = (0..len)
                    .map(|i| ALPHABET[(usize::from(letter) + i) % ALPHABET.len()])
                    .collect();
                let partial = format!("{}{grow}", self.model.in_flight.as_deref().unwrap_or(""));
                self.crate_side.set_in_flight(Some(partial.clone()));
                self.model.in_flight = Some(partial);
                Ok(())
            }
            ReadOp::Rewrite { len, letter } => {
                let len = usize::from(len) % (GROW_CHARS_MAX + 1);
                let text: String = (0..len)
                    .map(|i| ALPHABET[(usize::from(letter) + i) % ALPHABET.len()])
                    .collect();
                self.crate_side.set_in_flight(Some(text.clone()));
                self.model.in_flight = Some(text);
                Ok(())
            }
            ReadOp::Complete { gap } => {
                self.held = None;
                let seq = self.latest() + 1 + u64::from(gap % 3);
                let text = self.model.in_flight.take().unwrap_or_default();
                let turn = format!("t{seq}");
                self.crate_side
                    .push_turn(id(&turn)?, TurnSeq(seq), text.clone())
                    .map_err(|e| format!("push_turn: {e}"))?;
                self.crate_side.set_in_flight(None);
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
                if let Some(window) = window {
                    self.follow(&window)?;
                }
                Ok(())
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
                let mut chars: Vec<char> = self.followed.chars().collect();
                let at = usize::from(position) % chars.len();
                let choices: Vec<char> = "0123456789abcdef.v".chars().collect();
                chars[at] = choices[usize::from(replacement) % choices.len()];
                let padding = (0..usize::from(pad) % 4096).map(|i| ALPHABET[i % ALPHABET.len()]);
                let cursor: String = chars.into_iter().chain(padding).collect();
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadForeign { seq, child } => {
                let seq = u64::from(seq) % (self.latest() + 1);
                let cursor = match child % 3 {
                    0 => cursor_text(OTHER_CHILD, seq),
                    1 => cursor_text(COLLIDING_CHILD, seq),
                    _ => v1_cursor_text(CHILD, seq),
                };
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadAhead { by } => {
                let cursor = cursor_text(CHILD, self.latest() + 1 + u64::from(by % 4));
                self.compare(RefSelector::Since(cursor), BUDGET_MAX, 0)
                    .map(drop)
            }
            ReadOp::ReadSinceTurn { pick, budget: b } => {
                let followed = parse_followed(&self.followed)?;
                let resume = self
                    .model
                    .turns
                    .iter()
                    .find(|turn| turn.seq == followed)
                    .map(|turn| turn.id.clone());
                match resume {
                    Some(turn) if pick % 2 == 0 => {
                        let selector = RefSelector::SinceTurn(turn.clone());
                        let Some(window) = self.compare(selector, budget(b), 0)? else {
                            return Ok(());
                        };
                        // R16: resuming from the last turn given continues the chain: the
                        // chain checks of `follow` (no skip, no repeat) apply to it. Without
                        // its cursor, the read cannot know the caller's in-flight part.
                        self.held = None;
                        self.follow(&window)
                    }
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
            ReadOp::ReadAtNeeded { history: h } => {
                let selector = RefSelector::Since(self.followed.clone());
                let needed = self.needed(&selector, h)?;
                let Some(window) = self.compare(selector, needed, h)? else {
                    return Err(format!(
                        "R8: the since read fails at its needed_chars {needed}"
                    ));
                };
                self.follow(&window)?;
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
                    let next = self.compare(selector, needed, h)?.and_then(|w| w.excerpt);
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

    /// The `needed_chars` of a read with no budget, on the crate (0 when it answers).
    fn needed(&self, selector: &RefSelector, history_pick: u8) -> Result<usize, String> {
        let request = RefReadRequest {
            selector: selector.clone(),
            max_chars: 0,
            history: history(history_pick).1,
        };
        match compare_read_with(&self.crate_side, self.known_bad, &self.model, &request)? {
            Some(_) => Ok(0),
            None => {
                let (crate_history, _) = history(history_pick);
                let Ok(selector) = crate_selector(selector)? else {
                    return Ok(0);
                };
                let request = ReadRequest {
                    selector,
                    max_chars: 0,
                    requests: crate_history,
                };
                let error = read_as(&self.crate_side, self.known_bad, &request).err();
                Ok(error.and_then(|e| e.needed_chars()).unwrap_or(0))
            }
        }
    }

    /// R5, R6, R8 along the followed chain, checked on the crate's answer alone.
    fn follow(&mut self, window: &Window) -> Result<(), String> {
        let before: u64 = Cursor::parse(&self.followed)
            .map_err(|e| format!("R7: the followed cursor does not parse: {e}"))?
            .seq()
            .0;
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
        // R15: holding the in-flight part as far as the cursor says, the follower is sent only
        // what was added since, or the part marked replaced.
        let partial = self.model.in_flight.clone();
        if let (Some(held), Some(partial)) = (self.held.as_deref(), partial.as_deref()) {
            let grown = partial.starts_with(held);
            let wrong = match window.in_flight {
                InFlight::New { seen, .. } => !grown || seen != held.chars().count(),
                InFlight::Replaced { .. } => grown,
                InFlight::Omitted { .. } => false,
                InFlight::Whole { .. } | InFlight::Cut { .. } | InFlight::Absent => true,
            };
            if wrong {
                return Err(format!(
                    "R15: holding {} in-flight chars, the follower is sent {:?}",
                    held.chars().count(),
                    window.in_flight
                ));
            }
        }
        let held = match (window.in_flight, partial) {
            (InFlight::Whole { .. }, Some(p)) => Some(p),
            (InFlight::Replaced { shown, total }, Some(p)) if shown == total => Some(p),
            (InFlight::New { from, seen, .. }, Some(p)) if from == seen => Some(p),
            (InFlight::Omitted { .. }, _) => self.held.take(),
            _ => None,
        };
        let Some(next) = window.next.clone() else {
            return Err("R4: a since read returned no next cursor".into());
        };
        // The cursor says whether the in-flight part was recorded; the follower's copy counts only
        // then (a cursor that records nothing gets the part as new).
        self.held = held.filter(|h| !h.is_empty() && next.in_flight_seen().is_some());
        let after = next.seq().0;
        for turn in &self.model.turns {
            if turn.seq <= after && !self.given.contains(&turn.seq) {
                return Err(format!(
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
        self.followed = next.to_string();
        Ok(())
    }

    /// Read on both sides and compare; the crate's window when both answered.
    fn compare(
        &mut self,
        selector: RefSelector,
        max_chars: usize,
        history_pick: u8,
    ) -> Result<Option<Window>, String> {
        let (_, model_history) = history(history_pick);
        let request = RefReadRequest {
            selector,
            max_chars,
            history: model_history,
        };
        let window = compare_read_with(&self.crate_side, self.known_bad, &self.model, &request)?;
        match &window {
            Some(window) => {
                self.report.windows += 1;
                self.report.excerpts += usize::from(window.excerpt.is_some());
                self.report.omissions += usize::from(window.omitted.count > 0);
                self.report.in_flight_cuts += usize::from(matches!(
                    window.in_flight,
                    InFlight::Cut { .. } | InFlight::Omitted { .. }
                ));
                self.report.in_flight_new +=
                    usize::from(matches!(window.in_flight, InFlight::New { .. }));
                self.report.in_flight_replaced +=
                    usize::from(matches!(window.in_flight, InFlight::Replaced { .. }));
                if let Some(next) = &window.next {
                    let text = next.to_string();
                    if !self.issued.contains(&text) {
                        self.issued.push(text);
                    }
                }
            }
            None => self.report.errors += 1,
        }
        Ok(window)
    }
}

/// The crate's transcript holding what `model` holds (turns, in-flight part, requests with
/// their current records).
///
/// # Errors
///
/// The crate refused to build it (an id or seq the crate does not accept).
pub fn transcript_of(model: &RefTranscript) -> Result<Transcript, String> {
    let child = ChildId::new(model.child.as_str()).map_err(|e| e.to_string())?;
    let mut transcript = Transcript::new(child);
    for turn in &model.turns {
        transcript
            .push_turn(id(&turn.id)?, TurnSeq(turn.seq), turn.text.clone())
            .map_err(|e| format!("push_turn: {e}"))?;
    }
    transcript.set_in_flight(model.in_flight.clone());
    for request in &model.requests {
        transcript
            .open_request(RequestId(request.id), request.record.clone())
            .map_err(|e| format!("open_request: {e}"))?;
        if !request.open {
            transcript
                .terminate_request(RequestId(request.id), request.record.clone())
                .map_err(|e| format!("terminate_request: {e}"))?;
        }
    }
    Ok(transcript)
}

/// One read on the crate's `transcript` and on the reference's `model` (which must hold the
/// same), compared as [`check`] compares them: the crate's window when both answered, `None`
/// when both refused alike.
///
/// # Errors
///
/// What differed, with the requirement id.
pub fn compare_read(
    transcript: &Transcript,
    model: &RefTranscript,
    request: &RefReadRequest,
) -> Result<Option<Window>, String> {
    compare_read_with(transcript, None, model, request)
}

/// [`compare_read`] with the crate's read broken as `known_bad` says ([`read_as`]).
///
/// # Errors
///
/// What differed, with the requirement id.
pub fn compare_read_with(
    transcript: &Transcript,
    known_bad: Option<KnownBad>,
    model: &RefTranscript,
    request: &RefReadRequest,
) -> Result<Option<Window>, String> {
    let expected = read(model, request);
    let crate_history = match request.history {
        RefHistory::Open => RequestHistory::Open,
        RefHistory::All => RequestHistory::All,
        RefHistory::None => RequestHistory::None,
    };
    let max_chars = request.max_chars;
    let answer = crate_selector(&request.selector)?.and_then(|selector| {
        let request = ReadRequest {
            selector,
            max_chars,
            requests: crate_history,
        };
        read_as(transcript, known_bad, &request)
    });
    match (answer, expected) {
        (Ok(window), Ok(expected)) => {
            same_window(&window, &expected, &model.child)?;
            if window.chars > max_chars || window.text.chars().count() > max_chars {
                return Err(format!(
                    "R1: {} chars for max_chars {max_chars}",
                    window.text.chars().count()
                ));
            }
            Ok(Some(window))
        }
        (Err(error), Err(expected)) => {
            same_error(&error, expected)?;
            Ok(None)
        }
        (Ok(window), Err(expected)) => Err(format!(
            "the crate answered but the reference refuses ({expected:?}); crate text:\n{}",
            window.text
        )),
        (Err(error), Ok(expected)) => Err(format!(
            "the crate refuses ({error}) but the reference answers:\n{}",
            expected.text
        )),
    }
}

fn parse_followed(text: &str) -> Result<u64, String> {
    Cursor::parse(text)
        .map(|cursor| cursor.seq().0)
        .map_err(|e| format!("R7: the followed cursor does not parse: {e}"))
}

/// The crate's selector for the reference's: `Err` for an id the crate refuses, `Ok(Err)` for a
/// cursor text the crate does not parse (a read error, compared like any other).
fn crate_selector(selector: &RefSelector) -> Result<Result<Selector, Error>, String> {
    Ok(match selector {
        RefSelector::Latest(n) => Ok(Selector::Latest { n: *n }),
        RefSelector::Since(text) => Cursor::parse(text).map(Selector::Since),
        RefSelector::SinceTurn(turn) => Ok(Selector::SinceTurn(id(turn)?)),
        RefSelector::Turn { id: turn, offset } => Ok(Selector::Turn {
            id: id(turn)?,
            offset: *offset,
        }),
    })
}

fn same_error(error: &Error, expected: RefReadError) -> Result<(), String> {
    let (kind, needed) = match expected {
        RefReadError::CursorDamaged => (ErrorKind::CursorDamaged, None),
        RefReadError::CursorRetired => (ErrorKind::CursorRetired, None),
        RefReadError::CursorOtherChild => (ErrorKind::CursorOtherChild, None),
        RefReadError::CursorAhead => (ErrorKind::CursorAhead, None),
        RefReadError::UnknownTurn => (ErrorKind::UnknownTurn, None),
        RefReadError::OffsetOutOfRange => (ErrorKind::OffsetOutOfRange, None),
        RefReadError::BudgetTooSmall { needed } => (ErrorKind::BudgetTooSmall, Some(needed)),
    };
    // R7: what an error echoes of the input is capped, whatever the input's length.
    let text = error.to_string();
    if text.chars().count() > ERROR_CHARS_MAX {
        return Err(format!(
            "R7: a {:?} error of {} chars (at most {ERROR_CHARS_MAX})",
            error.kind(),
            text.chars().count()
        ));
    }
    // R7: a refused cursor comes with the read that resumes following.
    let cursor_error = matches!(
        error.kind(),
        ErrorKind::CursorDamaged
            | ErrorKind::CursorRetired
            | ErrorKind::CursorOtherChild
            | ErrorKind::CursorAhead
    );
    if cursor_error && !text.contains("resume with since:") {
        return Err(format!("R7: the error names no way to resume: {text}"));
    }
    if error.kind() != kind || error.needed_chars() != needed {
        return Err(format!(
            "R7: the crate refuses with {:?} (needed {:?}), the reference with {expected:?}",
            error.kind(),
            error.needed_chars()
        ));
    }
    Ok(())
}

fn same_window(window: &Window, expected: &RefWindow, child: &str) -> Result<(), String> {
    if window.text != expected.text {
        return Err(format!(
            "R14: response texts differ\n--- crate\n{}--- reference\n{}",
            window.text, expected.text
        ));
    }
    let whole: Vec<u64> = window.whole.iter().map(|turn| turn.seq.0).collect();
    if whole != expected.whole {
        return Err(format!(
            "R4: whole turns {whole:?}, reference {:?}",
            expected.whole
        ));
    }
    let excerpt = window
        .excerpt
        .as_ref()
        .map(|e| (e.turn.seq.0, e.from, e.to, e.total));
    let expected_excerpt = expected.excerpt.map(|e| (e.seq, e.from, e.to, e.total));
    if excerpt != expected_excerpt {
        return Err(format!(
            "R8: excerpt {excerpt:?}, reference {expected_excerpt:?}"
        ));
    }
    let omitted = (
        window.omitted.count,
        window.omitted.first.as_ref().map(|turn| turn.seq.0),
        window.omitted.last.as_ref().map(|turn| turn.seq.0),
    );
    let expected_omitted = (
        expected.omitted.len(),
        expected.omitted.first().copied(),
        expected.omitted.last().copied(),
    );
    if omitted != expected_omitted {
        return Err(format!(
            "R3: omitted {omitted:?}, reference {expected_omitted:?}"
        ));
    }
    let in_flight = match window.in_flight {
        InFlight::Absent => RefInFlight::Absent,
        InFlight::Whole { chars } => RefInFlight::Whole(chars),
        InFlight::Cut { shown, total } => RefInFlight::Cut { shown, total },
        InFlight::Omitted { total } => RefInFlight::Omitted(total),
        InFlight::New { from, seen, total } => RefInFlight::New { from, seen, total },
        InFlight::Replaced { shown, total } => RefInFlight::Replaced { shown, total },
    };
    if in_flight != expected.in_flight {
        return Err(format!(
            "R10: in-flight {in_flight:?}, reference {:?}",
            expected.in_flight
        ));
    }
    if (window.requests_shown, window.requests_omitted)
        != (expected.requests_shown, expected.requests_omitted)
    {
        return Err(format!(
            "R13: requests shown/omitted {}/{}, reference {}/{}",
            window.requests_shown,
            window.requests_omitted,
            expected.requests_shown,
            expected.requests_omitted
        ));
    }
    let next = window.next.as_ref().map(|cursor| cursor.to_string());
    let expected_next = expected.next.map(|seq| {
        cursor_text_of(&RefCursor {
            child: child.to_string(),
            seq,
            seen: expected.next_seen,
        })
    });
    if next != expected_next {
        return Err(format!(
            "R4: next cursor {next:?}, reference {expected_next:?}"
        ));
    }
    if window.chars != expected.chars {
        return Err(format!(
            "R1: chars {}, reference {}",
            window.chars, expected.chars
        ));
    }
    Ok(())
}
