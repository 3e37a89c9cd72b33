//! The delivery [`Op`] vocabulary, in the words of `spec/delivery.md`: what each op parks and the
//! budgets it uses, its `arbitrary::Arbitrary` decoding (the fuzz target's input) and its proptest
//! strategy, with the same bounds.

use arbitrary::{Arbitrary, Unstructured};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use parkline::{BatchId, Budget, Outcome, Parked, RequestId, Seq, Storage};

use super::craft::{Crafted, crafted_strategy};
use super::view::{Effect, HandOver, Member, answer_of, parked_all};
use crate::known_bad::{Driver, DriverError};

/// The mirror's file name on the simulated disk.
pub const MIRROR: &str = "parkline.mirror";

/// The lines ops park: small, of varied cost (so small budgets force splits), multi-byte ones
/// (cost counts chars, not bytes), one that imitates the framing, one larger than every budget
/// the ops use, an empty one, and one with a `\n` that `park` must refuse (D3). Index
/// `LINES.len()` is the big line ([`line()`]).
pub const LINES: &[&str] = &[
    "a",
    "r-1 done ok",
    "r-2 failed",
    "é→ü",
    "",
    "[parkline batch 1 end: 0 parked lines still undelivered]",
    "a line longer than every budget the ops use",
    "two\nlines",
];

/// Characters of the big line: a few of them grow the mirror past the crate's compaction
/// threshold (`GENERATED_COMPACT_SLACK_BYTES`), so the rewrite path (temp file, fsync, rename,
/// directory fsync) runs too.
pub const BIG_LINE_CHARS: usize = 25_000;

/// The line of index `i`: `LINES[i]`, or the big line for any larger index.
pub fn line(i: usize) -> String {
    match LINES.get(i) {
        Some(line) => (*line).to_owned(),
        None => "x".repeat(BIG_LINE_CHARS),
    }
}

/// The largest budget the generated ops use, besides [`BUDGET_ALL`].
pub const BUDGET_MAX: usize = 24;

/// A budget every parked line fits in: the batch is the whole parked list (with
/// [`Op::ParkMany`] of the big line, megabytes).
pub const BUDGET_ALL: usize = usize::MAX;

/// The most lines one [`Op::ParkMany`] parks.
pub const PARK_MANY_MAX: u32 = 64;

/// A queue op: what the daemon does to a queue, in the words of `spec/delivery.md`. The drive
/// protocol's ops are exactly these (spec/drive.md), and each is one call of the crate
/// ([`QueueOp::call`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueOp {
    /// Park `line` for `request` (D16: durable on return).
    Park {
        /// The request the line answers.
        request: u64,
        /// The line, verbatim.
        line: String,
    },
    /// The parent's turn ended: ask for the next batch under `budget` (D1, D11, D12).
    Boundary {
        /// Budget in characters.
        budget: usize,
    },
    /// Settle the batch of the last boundary: item `i` is `Delivered` if `delivered[i]`, else
    /// `Failed`. Missing entries count as delivered, extra entries are ignored (the op always
    /// gives one outcome per item). Without a batch of this life, settles batch id 0 (an error).
    Settle {
        /// Per-item outcome, in item order.
        delivered: Vec<bool>,
    },
    /// The hand-over failed as a whole: settle the batch of the last boundary with every item
    /// `Failed` (D7 case 1).
    HandOverFailed,
    /// Park every `(request, line)` in one record, all or nothing (D22).
    ParkAll {
        /// The group, in order.
        items: Vec<(u64, String)>,
    },
    /// Move dead letters back to the parked list (D21): the seqs given, or all of them.
    Redrive {
        /// The seqs, or `None` for every dead letter.
        seqs: Option<Vec<u64>>,
    },
    /// Remove dead letters from the mirror for good (D8): the seqs given, or all of them.
    Discard {
        /// The seqs, or `None` for every dead letter.
        seqs: Option<Vec<u64>>,
    },
    /// The session is idle: apply waiting operator requests and compact a drained mirror to
    /// rest (M12 at rest, M17). Changes no state.
    Idle,
    /// Park each `(request, line)` from its own thread, all through one `SharedQueue`, released
    /// together so that they tend to share a group (D16 group commit): each member gets its own
    /// answer, and the seqs follow the order in which they joined, which no one chooses. At
    /// most [`MEMBERS_MAX`] members (a check tries every order they could have joined in).
    ParkConcurrently {
        /// The members, one park each.
        items: Vec<(u64, String)>,
    },
}

/// The most members of one [`QueueOp::ParkConcurrently`] the delivery check accepts (it runs
/// the reference on each of their orders: 120 at 5); the generators give 2 to 4.
pub const MEMBERS_MAX: usize = 5;

/// The batch the last boundary of this life returned, unsettled: its id and item count, what a
/// settle op addresses.
pub type Handed = Option<(BatchId, usize)>;

impl QueueOp {
    /// The outcomes (`true`: delivered) this op gives a batch of `count` items.
    pub fn outcomes(&self, count: usize) -> Vec<bool> {
        match self {
            QueueOp::Settle { delivered } => (0..count)
                .map(|i| delivered.get(i).copied().unwrap_or(true))
                .collect(),
            _ => vec![false; count],
        }
    }

    /// The batch id and item count a settle op addresses: the handed batch, or id 0 (which no
    /// batch has) without one.
    pub fn settle_target(handed: Handed) -> (BatchId, usize) {
        handed.unwrap_or((BatchId(0), 0))
    }

    /// Applies this op to the queue `driver` drives, keeping `handed` in step: a boundary that
    /// returns a batch hands it, a settle that returns clears it.
    ///
    /// # Errors
    ///
    /// The crate's (or a known-bad driver's) error; `handed` is then unchanged.
    pub fn call<S: Storage + Send>(
        &self,
        driver: &mut Driver<S>,
        handed: &mut Handed,
    ) -> Result<Effect, DriverError> {
        match self {
            QueueOp::Park { request, line } => {
                let (seq, ended) = answer_of(driver.park(RequestId(*request), line)?);
                Ok(Effect::Parked { seq, ended })
            }
            QueueOp::Boundary { budget } => {
                let batch = driver.boundary(Budget(*budget))?;
                if let Some(batch) = &batch {
                    *handed = Some((batch.id, batch.items.len()));
                }
                Ok(Effect::Batch {
                    batch: batch.map(HandOver::of),
                })
            }
            QueueOp::Settle { .. } | QueueOp::HandOverFailed => {
                let (id, count) = Self::settle_target(*handed);
                let outcomes: Vec<Outcome> = self
                    .outcomes(count)
                    .into_iter()
                    .map(|delivered| {
                        if delivered {
                            Outcome::Delivered
                        } else {
                            Outcome::Failed
                        }
                    })
                    .collect();
                let settlement = driver.settle(id, &outcomes)?;
                *handed = None;
                Ok(Effect::Settled(settlement))
            }
            QueueOp::ParkAll { items } => {
                let lines: Vec<(RequestId, &str)> = items
                    .iter()
                    .map(|(request, line)| (RequestId(*request), line.as_str()))
                    .collect();
                let answers = driver.park_all(&lines)?;
                Ok(parked_all(answers.into_iter().map(answer_of)))
            }
            QueueOp::Redrive { seqs } => Ok(Effect::Redriven {
                seqs: match seqs {
                    Some(seqs) => driver.redrive(&seqs_of(seqs))?,
                    None => driver.redrive_all()?,
                },
            }),
            QueueOp::Discard { seqs } => Ok(Effect::Discarded {
                seqs: match seqs {
                    Some(seqs) => driver.discard(&seqs_of(seqs))?,
                    None => driver.discard_all()?,
                },
            }),
            QueueOp::Idle => {
                driver.idle()?;
                Ok(Effect::Idle)
            }
            QueueOp::ParkConcurrently { items } => Ok(Effect::ParkedConcurrently {
                answers: park_concurrently(driver, items, |_, _| {}),
            }),
        }
    }
}

/// A `park_concurrently`'s members, parked from one thread each ([`Driver::park_concurrently`]);
/// `each(member, answer)` is called on this thread as each park returns (in the order they
/// return), and every answer comes back in item order.
pub fn park_concurrently<S: Storage + Send>(
    driver: &mut Driver<S>,
    items: &[(u64, String)],
    mut each: impl FnMut(usize, &Member),
) -> Vec<Member> {
    let lines: Vec<(RequestId, &str)> = items
        .iter()
        .map(|(request, line)| (RequestId(*request), line.as_str()))
        .collect();
    driver
        .park_concurrently(&lines, |member, answer| each(member, &member_of(answer)))
        .into_iter()
        .map(|answer| member_of(&answer))
        .collect()
}

/// A member's answer in the words of the checks: its seq, or its error's kind.
pub fn member_of(answer: &Result<Parked, DriverError>) -> Member {
    match answer {
        Ok(parked) => match answer_of(*parked) {
            (seq, None) => Member::Parked(seq),
            (seq, Some(ended)) => Member::Remembered { seq, ended },
        },
        Err(e) => Member::Error(format!("{:?}", e.kind())),
    }
}

/// The crate's seqs of an op's numbers.
fn seqs_of(seqs: &[u64]) -> Vec<Seq> {
    seqs.iter().copied().map(Seq).collect()
}

/// One step of a conformance scenario: a queue op, or what happens to the process and its disk
/// around them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Power loss between ops, then reopen. `torn` picks what unsynced changes survive: 0 none,
    /// 1 all that can, any other value seeds random choices (see
    /// [`SimDisk::crash_with`](crate::simdisk::SimDisk::crash_with)).
    Crash {
        /// Survival of unsynced changes.
        torn: u64,
    },
    /// Power loss during the next op, at its `n`-th sync (the sync does not take effect), then
    /// reopen. If the next op makes fewer than `n` syncs, the power goes out after it.
    CrashAtSync {
        /// Which sync of the next op (1-based).
        n: u64,
        /// Survival of unsynced changes, as in [`Op::Crash`].
        torn: u64,
    },
    /// An I/O error at the `n`-th writing or syncing call of the next op: the op must fail, the
    /// handle must refuse further work (fail-stop), and a reopen after power loss must find the
    /// state before or after the op.
    IoError {
        /// Which call of the next op (1-based).
        n: u64,
    },
    /// An I/O error at the `n`-th writing or syncing call of the next op, as in
    /// [`Op::IoError`], after which the daemon reopens the mirror in the same power cycle (the
    /// live disk, no power loss; M10's way on after `Poisoned`): the reopened state must be the
    /// state before or after the op, and what follows is acknowledged on it, so a later power
    /// loss shows whether the reopen made it durable (a rename whose directory fsync failed).
    IoErrorReopen {
        /// Which call of the next op (1-based).
        n: u64,
    },
    /// A full disk during the next op (ENOSPC): appends to the temp file (`at` 0), to the
    /// mirror (1) or to both (2) fail and write nothing. A compaction that cannot write its temp
    /// file is abandoned and the record appended instead (M10); an append to the mirror that
    /// fails poisons the handle, and the daemon reopens once space is back.
    DiskFull {
        /// Which appends fail: 0 the temp file's, 1 the mirror's, 2 both.
        at: u8,
    },
    /// The mirror's name is taken from its file before the next op, under the open handle:
    /// renamed to `<name>.moved` in the same directory (`unlink` false) or unlinked (true). An op
    /// that writes must then fail and poison the handle instead of acknowledging into a file no
    /// name reaches (M8); after it the name is given back (unless a compaction put a whole
    /// snapshot in its place) and the daemon reopens, finding the state before or after the op.
    NameLost {
        /// Unlinked rather than renamed away.
        unlink: bool,
    },
    /// Another process puts a FIFO at the mirror's request file `<name>.ops` (M8, M17): every
    /// later look at the request file finds it unreadable, and the queue goes on as if it were
    /// absent; nothing in the state changes.
    RequestFileFifo,
    /// Clean close and reopen (a restart without power loss).
    Restart,
    /// Park `line` `count` times, one park after another, the `i`-th for request
    /// `request + 10 * i` (one line per request, D3; a fault armed before applies to the first).
    ParkMany {
        /// The request the lines answer.
        request: u64,
        /// The line, verbatim.
        line: String,
        /// How many parks (1..=[`PARK_MANY_MAX`]).
        count: u32,
    },
    /// Start over from the mirror file of `Crafted` (counters at or near their limits) on a
    /// fresh disk: both sides open it, or both find it impossible (then the run starts over
    /// from an empty mirror).
    Craft(Crafted),
    /// A queue op, spelt as itself (`{"op":"park",...}`).
    #[serde(untagged)]
    Queue(QueueOp),
}

impl From<QueueOp> for Op {
    fn from(op: QueueOp) -> Self {
        Op::Queue(op)
    }
}

/// How many op kinds the first byte of an op picks among, by its value modulo this: what
/// `int_in_range(0..=26)` read from that byte before there was a discard op.
const OP_KINDS: u8 = 27;

/// The first bytes of an op that pick a discard, taken from a park (168, 216) and a settle (202)
/// rather than a new value modulo [`OP_KINDS`]: a wider modulo would change what nearly every
/// committed fuzz input decodes to, while these are among the bytes its files hold least often.
/// A discard's weight, 3 in 256, is a third of a redrive's (9 in 256): it needs dead letters.
const DISCARD_BYTES: [u8; 3] = [168, 202, 216];

/// The first bytes of an op that pick a lost name, taken from a group park (both are 25 modulo
/// [`OP_KINDS`]) for the reason [`DISCARD_BYTES`] gives.
const NAME_LOST_BYTES: [u8; 2] = [187, 241];

/// The first byte of an op that picks a FIFO at the request file, taken from a park (163 is 1
/// modulo [`OP_KINDS`]) for the reason [`DISCARD_BYTES`] gives.
const REQUEST_FILE_FIFO_BYTE: u8 = 163;

/// The first bytes of an op that pick an idle call, taken from a park (190 and 245 are 1 and 2
/// modulo [`OP_KINDS`]) for the reason [`DISCARD_BYTES`] gives.
const IDLE_BYTES: [u8; 2] = [190, 245];

/// The seqs a redrive or discard names: `None` (all dead letters) half the time, else up to two
/// of the first twelve.
fn arbitrary_seqs(u: &mut Unstructured<'_>) -> arbitrary::Result<Option<Vec<u64>>> {
    if u.ratio(1, 2)? {
        return Ok(None);
    }
    let len = u.int_in_range(0..=2)?;
    let mut seqs = Vec::with_capacity(len);
    for _ in 0..len {
        seqs.push(u.int_in_range(1..=12)?);
    }
    Ok(Some(seqs))
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        // The whole byte (an empty input gives 0, as `int_in_range` did).
        let byte = u.int_in_range(0u8..=u8::MAX)?;
        if DISCARD_BYTES.contains(&byte) {
            return Ok(Op::Queue(QueueOp::Discard {
                seqs: arbitrary_seqs(u)?,
            }));
        }
        if NAME_LOST_BYTES.contains(&byte) {
            return Ok(Op::NameLost {
                unlink: u.ratio(1, 2)?,
            });
        }
        if byte == REQUEST_FILE_FIFO_BYTE {
            return Ok(Op::RequestFileFifo);
        }
        if IDLE_BYTES.contains(&byte) {
            return Ok(Op::Queue(QueueOp::Idle));
        }
        Ok(match byte % OP_KINDS {
            24 | 25 => {
                let len = u.int_in_range(0..=4)?;
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push((
                        u.int_in_range(1..=4)?,
                        line(u.int_in_range(0..=LINES.len())?),
                    ));
                }
                Op::Queue(QueueOp::ParkAll { items })
            }
            26 => Op::Queue(QueueOp::Redrive {
                seqs: arbitrary_seqs(u)?,
            }),
            0..=6 => Op::Queue(QueueOp::Park {
                request: u.int_in_range(1..=4)?,
                line: line(u.int_in_range(0..=LINES.len())?),
            }),
            7..=10 => Op::Queue(QueueOp::Boundary {
                budget: u.int_in_range(0..=BUDGET_MAX)?,
            }),
            20 | 21 => Op::ParkMany {
                request: u.int_in_range(1..=4)?,
                line: line(u.int_in_range(0..=LINES.len())?),
                count: if u.ratio(1, 6)? {
                    PARK_MANY_MAX
                } else {
                    u.int_in_range(1..=8)?
                },
            },
            22 => Op::Craft(Crafted::arbitrary(u)?),
            23 => Op::Queue(QueueOp::Boundary { budget: BUDGET_ALL }),
            11..=13 => {
                let len = u.int_in_range(0..=6)?;
                let mut delivered = Vec::with_capacity(len);
                for _ in 0..len {
                    delivered.push(bool::arbitrary(u)?);
                }
                Op::Queue(QueueOp::Settle { delivered })
            }
            14 => Op::Queue(QueueOp::HandOverFailed),
            15 => Op::Crash {
                torn: u.int_in_range(0..=5)?,
            },
            16 => Op::CrashAtSync {
                n: u.int_in_range(1..=3)?,
                torn: u.int_in_range(0..=5)?,
            },
            17 => Op::IoError {
                n: u.int_in_range(1..=4)?,
            },
            18 => {
                if u.ratio(1, 2)? {
                    Op::Restart
                } else {
                    Op::DiskFull {
                        at: u.int_in_range(0..=2)?,
                    }
                }
            }
            19 => Op::IoErrorReopen {
                n: u.int_in_range(1..=4)?,
            },
            _ => Op::Restart,
        })
    }
}

/// A proptest strategy for one [`Op`], with the same bounds as its `Arbitrary`.
pub fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        7 => (1..=4u64, 0..=LINES.len()).prop_map(|(request, i)| Op::Queue(QueueOp::Park {
            request,
            line: line(i),
        })),
        3 => (0..=BUDGET_MAX).prop_map(|budget| Op::Queue(QueueOp::Boundary { budget })),
        1 => Just(Op::Queue(QueueOp::Boundary { budget: BUDGET_ALL })),
        3 => proptest::collection::vec(proptest::bool::weighted(0.7), 0..=6)
            .prop_map(|delivered| Op::Queue(QueueOp::Settle { delivered })),
        1 => Just(Op::Queue(QueueOp::HandOverFailed)),
        1 => Just(Op::Queue(QueueOp::Idle)),
        1 => (0..=5u64).prop_map(|torn| Op::Crash { torn }),
        1 => (1..=3u64, 0..=5u64).prop_map(|(n, torn)| Op::CrashAtSync { n, torn }),
        1 => (1..=4u64).prop_map(|n| Op::IoError { n }),
        1 => (1..=4u64).prop_map(|n| Op::IoErrorReopen { n }),
        1 => (0..=2u8).prop_map(|at| Op::DiskFull { at }),
        1 => any::<bool>().prop_map(|unlink| Op::NameLost { unlink }),
        1 => Just(Op::RequestFileFifo),
        1 => Just(Op::Restart),
        1 => (1..=4u64, 0..=LINES.len(), prop_oneof![5 => 1..=8u32, 1 => Just(PARK_MANY_MAX)])
            .prop_map(|(request, i, count)| Op::ParkMany {
                request,
                line: line(i),
                count,
            }),
        1 => crafted_strategy().prop_map(Op::Craft),
        2 => proptest::collection::vec((1..=4u64, 0..=LINES.len()), 0..=4).prop_map(|items| {
            Op::Queue(QueueOp::ParkAll {
                items: items.into_iter().map(|(request, i)| (request, line(i))).collect(),
            })
        }),
        1 => seqs_strategy().prop_map(|seqs| Op::Queue(QueueOp::Redrive { seqs })),
        // A discard needs dead letters: as rare as a redrive.
        1 => seqs_strategy().prop_map(|seqs| Op::Queue(QueueOp::Discard { seqs })),
        // D16 group commit: 2 to 4 threads, requests drawn as a park's (so retries and
        // conflicts meet in one group). Its threads cost more than an op: as rare as a discard.
        1 => proptest::collection::vec((1..=4u64, 0..=LINES.len()), 2..=4).prop_map(|items| {
            Op::Queue(QueueOp::ParkConcurrently {
                items: items.into_iter().map(|(request, i)| (request, line(i))).collect(),
            })
        }),
    ]
}

/// A proptest strategy for the seqs a redrive or discard names, with the bounds of their
/// `Arbitrary` decoding.
pub fn seqs_strategy() -> impl Strategy<Value = Option<Vec<u64>>> {
    proptest::option::of(proptest::collection::vec(1..=12u64, 0..=2))
}

/// A proptest strategy for a scenario of up to `len_max` ops.
pub fn ops_strategy(len_max: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op_strategy(), 0..=len_max)
}
