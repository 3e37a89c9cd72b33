//! The conformance harness: one [`Op`] vocabulary and one [`check`] that drives the production
//! crate (`parkline::Queue` over a [`SimDisk`]) and the reference (`parkline_model::delivery::
//! Reference`) side by side, and compares them after every step.
//!
//! The same `check` is called by the differential proptest, the exhaustive replay of the model's
//! graph, the crash enumeration, the fuzz target `delivery_ops` and the corpus regression tests,
//! so a finding of any of them replays through all of them.
//!
//! What is compared after every op: the value the op returned (seq; the batch's id, attempt,
//! repeat mark, items in order, remaining and exact turn text; the notified events; the
//! settlement), and the whole state (parked, in flight, dead letters). A crash inside an op (the
//! op was not acknowledged) may leave the state before or after it: the recovered crate must
//! equal one of the two, and the reference continues from that one.
//!
//! Besides the comparison, the invariants are asserted directly on the crate's outputs, so a
//! mistake shared by the crate and the reference is still caught: D9 no loss (every acknowledged
//! park is parked, in flight, delivered or dead), D10 repeat recognisable, D6 independence,
//! D11/D12 split and budget, D17 order, D4 framing, and after every op the M12 file-size bound
//! ([`m12_bound`]).
//!
//! The ops reach the extremes too: [`Op::ParkMany`] and the whole-queue budget [`BUDGET_ALL`]
//! build multi-megabyte batches (so compaction runs at the default slack), and [`Op::Craft`]
//! starts over from a mirror whose counters are at or next to their limits (seq and batch id
//! near `u64::MAX`, attempt and failures near `u32::MAX`), with valid checksums.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use arbitrary::{Arbitrary, Unstructured};
use parkline::{Budget, Config, Outcome, Queue, RequestId};
use parkline_model::delivery::{RefBatch, RefItem, Reference};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use crate::known_bad::{Driver, KnownBad, Seamed};
use crate::simdisk::SimDisk;

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
/// threshold (`parkline::COMPACT_SLACK_BYTES`), so the rewrite path (temp file, fsync, rename,
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

/// A start state at the counters' limits, for [`Op::Craft`]. With `m = lines + dead` items, the
/// seqs are the `m` up to `u64::MAX - seq_gap` (the lowest is the dead letter if `dead`), the
/// next seq follows the highest; the first `in_flight` of the parked items form the in-flight
/// batch with id `u64::MAX - batch_gap` and attempt `u32::MAX - attempt_gap` (without one, the
/// next batch id is `u64::MAX - batch_gap`); every parked item has `u32::MAX - failures_gap`
/// failures, the dead letter `u32::MAX`. A gap of 0 puts a record at a limit the mirror rules
/// forbid (M6: Corrupt), or a counter at its limit (`Exhausted` at the next park or boundary).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Crafted {
    /// Parked items (0..=3), the in-flight ones included.
    pub lines: u8,
    /// How many of them are in the in-flight batch (0: none).
    pub in_flight: u8,
    /// Below `u64::MAX`, the highest seq (0..=3).
    pub seq_gap: u8,
    /// Below `u64::MAX`, the batch id (0..=2).
    pub batch_gap: u8,
    /// Below `u32::MAX`, the in-flight batch's attempt (0..=2).
    pub attempt_gap: u8,
    /// Below `u32::MAX`, the parked items' failures (0..=3).
    pub failures_gap: u8,
    /// A dead letter below the parked items.
    pub dead: bool,
    /// Reopen from here on with `failures_max = u32::MAX`, so items near the limit can still
    /// fail and stay parked.
    pub failures_max_max: bool,
}

impl Crafted {
    /// The reference's mirror of this start state.
    pub fn mirror(&self) -> parkline_model::delivery::Mirror {
        let lines = u64::from(self.lines);
        let count = lines + u64::from(self.dead);
        let top = u64::MAX - u64::from(self.seq_gap);
        let first = top - count.saturating_sub(1);
        let failures = u32::MAX - u32::from(self.failures_gap);
        let mut items: Vec<RefItem> = (first..=top)
            .take(usize::try_from(count).unwrap_or(usize::MAX))
            .map(|seq| RefItem {
                seq,
                request: seq % 4 + 1,
                line: LINES[usize::try_from(seq % 4).unwrap_or(0)].to_owned(),
                failures,
            })
            .collect();
        let dead = if self.dead && !items.is_empty() {
            let mut item = items.remove(0);
            item.failures = u32::MAX;
            vec![item]
        } else {
            Vec::new()
        };
        let next_seq = if count > 0 {
            top.saturating_add(1)
        } else {
            top
        };
        let id = u64::MAX - u64::from(self.batch_gap);
        let k = usize::from(self.in_flight.min(self.lines));
        let in_flight = (k > 0).then(|| RefBatch {
            id,
            attempt: (u32::MAX - u32::from(self.attempt_gap)).max(1),
            items: items.drain(..k).collect(),
            remaining: items.len(),
        });
        let next_batch = if in_flight.is_some() {
            id.saturating_add(1)
        } else {
            id
        };
        parkline_model::delivery::Mirror {
            next_seq,
            next_batch,
            parked: items,
            in_flight,
            dead,
        }
    }

    /// The mirror file of this start state, as the crate writes snapshots (valid checksums; a
    /// state the rules forbid gives records the decoder must reject).
    pub fn bytes(&self) -> Vec<u8> {
        let mirror = self.mirror();
        let item = |item: &RefItem| parkline::Item {
            seq: parkline::Seq(item.seq),
            request: RequestId(item.request),
            line: item.line.clone(),
            failures: item.failures,
        };
        let state = parkline::mirror::MirrorState {
            parked: mirror.parked.iter().map(item).collect(),
            in_flight: mirror.in_flight.as_ref().map(|batch| parkline::Batch {
                id: parkline::BatchId(batch.id),
                attempt: parkline::Attempt(batch.attempt),
                items: batch.items.iter().map(item).collect(),
                remaining: batch.remaining,
            }),
            dead_letters: mirror.dead.iter().map(item).collect(),
            next_seq: parkline::Seq(mirror.next_seq),
            next_batch: parkline::BatchId(mirror.next_batch),
        };
        parkline::mirror::encode(&state)
    }
}

impl<'a> Arbitrary<'a> for Crafted {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Crafted {
            lines: u.int_in_range(0..=3)?,
            in_flight: u.int_in_range(0..=3)?,
            seq_gap: u.int_in_range(0..=3)?,
            batch_gap: u.int_in_range(0..=2)?,
            attempt_gap: u.int_in_range(0..=2)?,
            failures_gap: u.int_in_range(0..=3)?,
            dead: bool::arbitrary(u)?,
            failures_max_max: bool::arbitrary(u)?,
        })
    }
}

/// A proptest strategy for [`Crafted`], with the same bounds as its `Arbitrary`.
pub fn crafted_strategy() -> impl Strategy<Value = Crafted> {
    (
        (0..=3u8, 0..=3u8, 0..=3u8, 0..=2u8),
        (0..=2u8, 0..=3u8, any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |((lines, in_flight, seq_gap, batch_gap), (attempt_gap, failures_gap, dead, max))| {
                Crafted {
                    lines,
                    in_flight,
                    seq_gap,
                    batch_gap,
                    attempt_gap,
                    failures_gap,
                    dead,
                    failures_max_max: max,
                }
            },
        )
}

/// One step of a conformance scenario, in the words of `spec/delivery.md`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
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
    /// Power loss between ops, then reopen. `torn` picks what unsynced changes survive: 0 none,
    /// 1 all that can, any other value seeds random choices (see [`SimDisk::crash_with`]).
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
    /// Clean close and reopen (a restart without power loss).
    Restart,
    /// Park `line` for `request` `count` times, one park after another (a fault armed before
    /// applies to the first).
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
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(match u.int_in_range(0u8..=23)? {
            0..=6 => Op::Park {
                request: u.int_in_range(1..=4)?,
                line: line(u.int_in_range(0..=LINES.len())?),
            },
            7..=10 => Op::Boundary {
                budget: u.int_in_range(0..=BUDGET_MAX)?,
            },
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
            23 => Op::Boundary { budget: BUDGET_ALL },
            11..=13 => {
                let len = u.int_in_range(0..=6)?;
                let mut delivered = Vec::with_capacity(len);
                for _ in 0..len {
                    delivered.push(bool::arbitrary(u)?);
                }
                Op::Settle { delivered }
            }
            14 => Op::HandOverFailed,
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
            18 | 19 => Op::Restart,
            _ => Op::Restart,
        })
    }
}

/// A proptest strategy for one [`Op`], with the same bounds as its `Arbitrary`.
pub fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        7 => (1..=4u64, 0..=LINES.len()).prop_map(|(request, i)| Op::Park {
            request,
            line: line(i),
        }),
        3 => (0..=BUDGET_MAX).prop_map(|budget| Op::Boundary { budget }),
        1 => Just(Op::Boundary { budget: BUDGET_ALL }),
        3 => proptest::collection::vec(proptest::bool::weighted(0.7), 0..=6)
            .prop_map(|delivered| Op::Settle { delivered }),
        1 => Just(Op::HandOverFailed),
        1 => (0..=5u64).prop_map(|torn| Op::Crash { torn }),
        1 => (1..=3u64, 0..=5u64).prop_map(|(n, torn)| Op::CrashAtSync { n, torn }),
        1 => (1..=4u64).prop_map(|n| Op::IoError { n }),
        1 => Just(Op::Restart),
        1 => (1..=4u64, 0..=LINES.len(), prop_oneof![5 => 1..=8u32, 1 => Just(PARK_MANY_MAX)])
            .prop_map(|(request, i, count)| Op::ParkMany {
                request,
                line: line(i),
                count,
            }),
        1 => crafted_strategy().prop_map(Op::Craft),
    ]
}

/// A proptest strategy for a scenario of up to `len_max` ops.
pub fn ops_strategy(len_max: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op_strategy(), 0..=len_max)
}

/// How the crate is configured for a check.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Failures before an item becomes a dead letter (D8).
    pub failures_max: u32,
    /// A deliberately broken protocol around the crate (a delivery one of
    /// [`KnownBad::DELIVERY`]), to show the check catches it.
    pub known_bad: Option<KnownBad>,
    /// The crate's M12 slack (`Config::compact_slack_bytes`); the file-size bound checked after
    /// every op uses the same value.
    pub compact_slack_bytes: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            failures_max: 2,
            known_bad: None,
            compact_slack_bytes: parkline::COMPACT_SLACK_BYTES,
        }
    }
}

impl Setup {
    /// The crate's configuration for this setup.
    pub fn config(&self) -> Config {
        let mut config = Config::default();
        config.failures_max = self.failures_max;
        config.compact_slack_bytes = self.compact_slack_bytes;
        config
    }
}

/// The longest `attempt` record line (checksum, space, JSON, newline): with the largest batch id
/// and attempt.
pub fn attempt_record_bytes_max() -> u64 {
    let json = format!(
        r#"{{"type":"attempt","batch":{},"attempt":{}}}"#,
        u64::MAX,
        u32::MAX
    );
    json.len() as u64 + 10
}

/// The M12 bound (spec/mirror.md): a mirror file of `file_len` bytes holding `state`, written by
/// the crate with slack `slack`, where `repeats` boundaries of a recovered batch happened since
/// the last settle, is at most twice the state's snapshot plus the slack plus one `attempt`
/// record per such boundary.
///
/// # Errors
///
/// The bound and the figures, when the file is longer.
pub fn m12_bound(
    file_len: u64,
    state: &parkline::mirror::MirrorState,
    slack: u64,
    repeats: u64,
) -> Result<(), String> {
    let snapshot = parkline::mirror::encode(state).len() as u64;
    let allowance = repeats.saturating_mul(attempt_record_bytes_max());
    let bound = snapshot
        .saturating_mul(2)
        .saturating_add(slack)
        .saturating_add(allowance);
    if file_len > bound {
        return Err(format!(
            "M12 file size: the mirror is {file_len} bytes, over 2 x snapshot {snapshot} + slack \
             {slack} + {repeats} attempt records = {bound}"
        ));
    }
    Ok(())
}

/// What a passing check saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Ops applied.
    pub steps: usize,
    /// Parks acknowledged.
    pub parks: usize,
    /// Batches handed over (first or repeat).
    pub batches: usize,
    /// Of those, repeats.
    pub repeats: usize,
    /// Settles that returned `Ok`.
    pub settles: usize,
    /// Items that became dead letters.
    pub dead: usize,
    /// Power losses (between ops and inside ops).
    pub crashes: usize,
    /// Power losses inside an op (at a sync).
    pub crashes_in_op: usize,
    /// Injected I/O errors that failed an op.
    pub io_errors: usize,
    /// Renames the crate made (mirror rewrites: creation and compaction).
    pub renames: u64,
    /// For each op, how many syncs the crate made while applying it.
    pub syncs_per_step: Vec<u64>,
    /// Crafted mirrors opened (`Op::Craft` that both sides accepted).
    pub crafted: usize,
    /// Crafted mirrors both sides found impossible (M6: Corrupt).
    pub crafted_corrupt: usize,
    /// Parks and boundaries both sides refused with `Exhausted` (a counter at its limit).
    pub exhausted: usize,
}

/// The crate and the reference disagreed, or an invariant failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the op at which it was found.
    pub step: usize,
    /// The op at that index (`None` when found before the first op).
    pub op: Option<Op>,
    /// What differed, in the spec's words, with the requirement id.
    pub message: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = abbreviate(&self.message);
        match &self.op {
            Some(op) => write!(
                f,
                "step {} ({}): {message}",
                self.step,
                abbreviate(&format!("{op:?}"))
            ),
            None => write!(f, "before step {}: {message}", self.step),
        }
    }
}

/// `text` with every run of more than 40 equal characters (the big line) shortened.
fn abbreviate(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        if run > 40 {
            out.push_str(&format!("{c}…({run} times)"));
        } else {
            out.extend(std::iter::repeat_n(c, run));
        }
    }
    out
}

impl std::error::Error for Divergence {}

/// Apply `ops` to the crate and the reference with the default [`Setup`] and compare.
///
/// # Errors
///
/// The first [`Divergence`]: a step where the crate's output or state differs from the
/// reference's, or an invariant fails.
pub fn check(ops: &[Op]) -> Result<Report, Divergence> {
    check_with(ops, &Setup::default())
}

/// Apply `ops` to the crate configured by `setup` and to the reference, and compare.
///
/// # Errors
///
/// The first [`Divergence`], as for [`check`].
pub fn check_with(ops: &[Op], setup: &Setup) -> Result<Report, Divergence> {
    let mut run = Run::new(setup).map_err(|message| Divergence {
        step: 0,
        op: None,
        message,
    })?;
    for (step, op) in ops.iter().enumerate() {
        let before = run.disk.stats();
        let result = run.apply(op);
        // A power loss replaces the disk; the counters carry over to the new one.
        let after = run.disk.stats();
        run.report
            .syncs_per_step
            .push(after.syncs.saturating_sub(before.syncs));
        run.report.renames += after.renames.saturating_sub(before.renames);
        result
            .and_then(|()| run.check_file_bound())
            .map_err(|message| Divergence {
                step,
                op: Some(op.clone()),
                message,
            })?;
        run.report.steps += 1;
    }
    Ok(run.report)
}

/// A fault armed for the next op.
#[derive(Clone, Copy, Debug)]
enum Fault {
    PowerLoss { n: u64, torn: u64 },
    IoError { n: u64 },
}

/// An item as both sides can show it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ItemView {
    seq: u64,
    request: u64,
    line: String,
    failures: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct BatchView {
    id: u64,
    attempt: u32,
    items: Vec<ItemView>,
    remaining: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct StateView {
    parked: Vec<ItemView>,
    in_flight: Option<BatchView>,
    dead: Vec<ItemView>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct NotifiedView {
    request: u64,
    seq: u64,
    batch: u64,
    attempt: u32,
    repeat: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct SettlementView {
    delivered: Vec<u64>,
    failed: Vec<u64>,
    dead: Vec<u64>,
}

fn item_of_crate(item: &parkline::Item) -> ItemView {
    ItemView {
        seq: item.seq.0,
        request: item.request.0,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn item_of_ref(item: &RefItem) -> ItemView {
    ItemView {
        seq: item.seq,
        request: item.request,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn batch_of_crate(batch: &parkline::Batch) -> BatchView {
    BatchView {
        id: batch.id.0,
        attempt: batch.attempt.0,
        items: batch.items.iter().map(item_of_crate).collect(),
        remaining: batch.remaining,
    }
}

fn batch_of_ref(batch: &RefBatch) -> BatchView {
    BatchView {
        id: batch.id,
        attempt: batch.attempt,
        items: batch.items.iter().map(item_of_ref).collect(),
        remaining: batch.remaining,
    }
}

/// The queue a check drives: over the simulated disk (behind the storage seam of a known-bad
/// behaviour, if it has one), through the driver (broken, if the behaviour says so).
type Driven = Driver<Seamed<SimDisk>>;

fn state_of_crate(driver: &Driven) -> StateView {
    let queue = driver.queue();
    StateView {
        parked: queue.parked().iter().map(item_of_crate).collect(),
        in_flight: queue.in_flight().map(batch_of_crate),
        dead: queue.dead_letters().iter().map(item_of_crate).collect(),
    }
}

fn state_of_ref(reference: &Reference) -> StateView {
    StateView {
        parked: reference.parked().iter().map(item_of_ref).collect(),
        in_flight: reference.in_flight().map(batch_of_ref),
        dead: reference.dead_letters().iter().map(item_of_ref).collect(),
    }
}

/// What the harness knows independently of the reference (for the direct invariants).
#[derive(Clone, Debug, Default)]
struct Ghost {
    /// Every park that returned `Ok`: seq -> (request, line).
    acked: BTreeMap<u64, (u64, String)>,
    /// Seqs settled `Delivered`.
    delivered: BTreeSet<u64>,
    /// Every batch id handed over: its membership, remaining and highest attempt seen.
    batches: BTreeMap<u64, (Vec<u64>, usize, u32)>,
}

/// Outcome of applying one op to one side, when it returned.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Effect {
    Parked(u64),
    Refused,
    Batch(Option<(BatchView, String, Vec<NotifiedView>)>),
    Settled(SettlementView),
    Error(String),
}

struct Run {
    setup: Setup,
    disk: SimDisk,
    queue: Option<Driven>,
    reference: Reference,
    ghost: Ghost,
    /// The id and size of the batch the last boundary of this life returned, if unsettled.
    handed: Option<(u64, usize)>,
    fault: Option<Fault>,
    /// Boundaries called with a batch in flight since the last settle: each may have appended
    /// an `attempt` record, which M12 allows until the next settle.
    repeats_since_settle: u64,
    report: Report,
}

/// Opens (creates or recovers) the mirror on `disk` the way `setup` says: behind the storage seam
/// and through the driver of its known-bad behaviour, if any.
fn open(disk: &SimDisk, setup: &Setup) -> parkline::Result<Driven> {
    let storage = Seamed::new(disk.clone(), setup.known_bad);
    let queue = Queue::with_storage(storage, MIRROR, setup.config())?;
    Ok(Driver::new(queue, setup.known_bad))
}

impl Run {
    fn new(setup: &Setup) -> Result<Self, String> {
        if let Some(bad) = setup.known_bad.filter(|bad| bad.is_read()) {
            return Err(format!(
                "{bad} is a read-side behaviour, not a delivery one"
            ));
        }
        let disk = SimDisk::new();
        let queue = open(&disk, setup).map_err(|e| format!("creating the mirror failed: {e}"))?;
        Ok(Self {
            setup: setup.clone(),
            disk,
            queue: Some(queue),
            reference: Reference::new(setup.failures_max),
            ghost: Ghost::default(),
            handed: None,
            fault: None,
            repeats_since_settle: 0,
            report: Report::default(),
        })
    }

    /// M12 after an op, on the open queue's file (a poisoned handle's memory may lag its file;
    /// the reopen after it is checked instead).
    fn check_file_bound(&mut self) -> Result<(), String> {
        let Some(driver) = &self.queue else {
            return Ok(());
        };
        let queue = driver.queue();
        if queue.is_poisoned() {
            return Ok(());
        }
        let len = self.disk.live_len(MIRROR).unwrap_or(0);
        m12_bound(
            len,
            queue.state(),
            self.setup.compact_slack_bytes,
            self.repeats_since_settle,
        )
    }

    /// `Op::Craft`: a fresh disk holding the crafted mirror, opened by both sides.
    fn craft(&mut self, crafted: &Crafted) -> Result<(), String> {
        if crafted.failures_max_max {
            self.setup.failures_max = u32::MAX;
        }
        self.fault = None;
        self.handed = None;
        self.repeats_since_settle = 0;
        self.ghost = Ghost::default();
        self.queue = None;
        self.disk = SimDisk::new();
        let bytes = crafted.bytes();
        self.disk.put_durable(MIRROR, &bytes);
        let reference = Reference::from_mirror(self.setup.failures_max, crafted.mirror());
        let opened = open(&self.disk, &self.setup);
        match (reference, opened) {
            (Ok(reference), Ok(queue)) => {
                self.reference = reference;
                self.queue = Some(queue);
                self.report.crafted += 1;
            }
            (Err(_), Err(e)) if e.kind() == parkline::ErrorKind::Corrupt => {
                // M11: the impossible file is left as it was; the run goes on from scratch.
                if self.disk.live(MIRROR).as_deref() != Some(bytes.as_slice()) {
                    return Err("M11: opening a corrupt mirror modified it".to_owned());
                }
                let report = std::mem::take(&mut self.report);
                *self = Run::new(&self.setup)?;
                self.report = report;
                self.report.crafted_corrupt += 1;
                return Ok(());
            }
            (Ok(_), Err(e)) => {
                return Err(format!("M6: the crafted mirror {crafted:?} must open: {e}"));
            }
            (Err(e), Ok(_)) => {
                return Err(format!(
                    "M6: the crafted mirror {crafted:?} must be Corrupt ({e}), it opened"
                ));
            }
            (Err(_), Err(e)) => {
                return Err(format!(
                    "M6: the crafted mirror {crafted:?}: {e}, not Corrupt"
                ));
            }
        }
        let state = state_of_ref(&self.reference);
        self.expect_state(&state, "after opening a crafted mirror")?;
        let mirror = crafted.mirror();
        let items = mirror
            .parked
            .iter()
            .chain(mirror.in_flight.iter().flat_map(|batch| &batch.items))
            .chain(&mirror.dead);
        for item in items {
            self.ghost
                .acked
                .insert(item.seq, (item.request, item.line.clone()));
        }
        if let Some(batch) = &mirror.in_flight {
            self.ghost
                .batches
                .insert(batch.id, (batch.seqs(), batch.remaining, batch.attempt));
        }
        self.check_invariants()
    }

    fn queue(&mut self) -> Result<&mut Driven, String> {
        self.queue
            .as_mut()
            .ok_or_else(|| "internal: no open queue".to_owned())
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Crash { torn } => {
                self.reference.crash();
                self.power_loss(*torn)?;
                let crashed = state_of_ref(&self.reference);
                self.expect_state(&crashed, "after a crash between ops")?;
                self.check_invariants()
            }
            Op::CrashAtSync { n, torn } => {
                self.fault = Some(Fault::PowerLoss { n: *n, torn: *torn });
                Ok(())
            }
            Op::IoError { n } => {
                self.fault = Some(Fault::IoError { n: *n });
                Ok(())
            }
            Op::Restart => {
                let queue = self
                    .queue
                    .take()
                    .ok_or_else(|| "internal: no open queue".to_owned())?;
                drop(queue.into_queue().into_storage());
                self.reopen("after a clean restart")?;
                self.reference.crash();
                self.handed = None;
                let restarted = state_of_ref(&self.reference);
                self.expect_state(&restarted, "after a clean restart")?;
                self.check_invariants()
            }
            Op::Craft(crafted) => self.craft(crafted),
            Op::ParkMany {
                request,
                line,
                count,
            } => {
                let park = Op::Park {
                    request: *request,
                    line: line.clone(),
                };
                for _ in 0..*count {
                    match self.fault.take() {
                        None => self.step(&park)?,
                        Some(fault) => self.step_with_fault(&park, fault)?,
                    }
                }
                Ok(())
            }
            Op::Park { .. } | Op::Boundary { .. } | Op::Settle { .. } | Op::HandOverFailed => {
                if matches!(op, Op::Boundary { .. }) && self.queue()?.queue().in_flight().is_some()
                {
                    self.repeats_since_settle += 1;
                }
                match self.fault.take() {
                    None => self.step(op),
                    Some(fault) => self.step_with_fault(op, fault),
                }
            }
        }
    }

    /// Apply a queue op on both sides with no fault, compare outputs and state.
    fn step(&mut self, op: &Op) -> Result<(), String> {
        let before = state_of_crate(self.queue()?);
        let len_before = self.disk.live_len(MIRROR);
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        if expected != got {
            return Err(format!(
                "the crate returned {got:?}, the reference {expected:?}"
            ));
        }
        if got == Effect::Error("Exhausted".to_owned()) {
            // M6, D10: an exhausted counter refuses the op without writing or poisoning.
            if self.disk.live_len(MIRROR) != len_before {
                return Err("M6: an op refused as Exhausted wrote to the mirror".to_owned());
            }
            if self.queue()?.queue().is_poisoned() {
                return Err("M6: an op refused as Exhausted poisoned the handle".to_owned());
            }
        }
        self.observe(op, &before, &got)?;
        let state = state_of_ref(&self.reference);
        self.expect_state(&state, "after the op")?;
        self.check_invariants()
    }

    /// Apply a queue op with a power loss or I/O error armed inside it.
    fn step_with_fault(&mut self, op: &Op, fault: Fault) -> Result<(), String> {
        let before_ref = self.reference.clone();
        let before = state_of_crate(self.queue()?);
        match fault {
            Fault::PowerLoss { n, .. } => self.disk.crash_at_sync(Some(n)),
            Fault::IoError { n } => self.disk.fail_at_call(Some(n)),
        }
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        self.disk.crash_at_sync(None);
        self.disk.fail_at_call(None);
        let failed = matches!(got, Effect::Error(_)) && !matches!(expected, Effect::Error(_));
        if !failed {
            // The fault was not reached (or the op failed for its own reason on both sides):
            // the op completed and is compared as usual.
            if expected != got {
                return Err(format!(
                    "the crate returned {got:?}, the reference {expected:?}"
                ));
            }
            self.observe(op, &before, &got)?;
            let state = state_of_ref(&self.reference);
            self.expect_state(&state, "after the op")?;
            self.check_invariants()?;
            if let Fault::PowerLoss { torn, .. } = fault {
                // The power goes out right after the acknowledged op.
                self.reference.crash();
                self.power_loss(torn)?;
                let crashed = state_of_ref(&self.reference);
                self.expect_state(&crashed, "after a crash right after the op")?;
                self.check_invariants()?;
            }
            return Ok(());
        }
        // The op failed: it was not acknowledged.
        let torn = match fault {
            Fault::PowerLoss { torn, .. } => torn,
            Fault::IoError { .. } => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                0
            }
        };
        let after_ref = self.reference.clone();
        self.power_loss(torn)?;
        self.report.crashes_in_op += 1;
        let recovered = state_of_crate(self.queue()?);
        let mut before_crashed = before_ref;
        before_crashed.crash();
        let mut after_crashed = after_ref;
        after_crashed.crash();
        if recovered == state_of_ref(&before_crashed) {
            self.reference = before_crashed;
        } else if recovered == state_of_ref(&after_crashed) {
            self.reference = after_crashed;
            // The op took effect although it was not acknowledged.
            self.observe_unacknowledged(op, &before, &expected);
        } else {
            return Err(format!(
                "after a power loss inside the op, the recovered state is neither the state \
                 before the op nor after it:\n  recovered {recovered:?}\n  before    {:?}\n  \
                 after     {:?}",
                state_of_ref(&before_crashed),
                state_of_ref(&after_crashed)
            ));
        }
        self.check_invariants()
    }

    /// After an injected I/O error, the handle must refuse further work (M/D16 fail-stop).
    fn expect_fail_stop(&mut self) -> Result<(), String> {
        let queue = self.queue()?;
        match queue.park(RequestId(0), "after an I/O error") {
            Ok(seq) => Err(format!(
                "D16 fail-stop: park after a failed write or fsync returned Ok({seq:?}); the \
                 handle must refuse work until reopened"
            )),
            Err(e) if e.kind() == parkline::ErrorKind::Poisoned => Ok(()),
            Err(e) => Err(format!(
                "D16 fail-stop: park after a failed write or fsync failed with {e} instead of \
                 Poisoned"
            )),
        }
    }

    /// Power loss now: the disk keeps what a real one would, and the queue reopens from it.
    fn power_loss(&mut self, torn: u64) -> Result<(), String> {
        self.queue = None;
        self.disk = match torn {
            0 => self.disk.crash(),
            1 => self.disk.crash_keeping(),
            seed => self.disk.crash_with(seed),
        };
        self.handed = None;
        self.report.crashes += 1;
        self.reopen("after a power loss")
    }

    fn reopen(&mut self, when: &str) -> Result<(), String> {
        let queue = open(&self.disk, &self.setup)
            .map_err(|e| format!("reopening the mirror {when} failed: {e}"))?;
        self.queue = Some(queue);
        Ok(())
    }

    fn expect_state(&mut self, expected: &StateView, when: &str) -> Result<(), String> {
        let got = state_of_crate(self.queue()?);
        if &got != expected {
            return Err(format!(
                "state {when} differs:\n  crate     {got:?}\n  reference {expected:?}"
            ));
        }
        Ok(())
    }

    /// The batch id and item count a settle op addresses.
    fn settle_target(&self) -> (u64, usize) {
        self.handed.unwrap_or((0, 0))
    }

    fn outcomes(op: &Op, count: usize) -> Vec<bool> {
        match op {
            Op::Settle { delivered } => (0..count)
                .map(|i| delivered.get(i).copied().unwrap_or(true))
                .collect(),
            _ => vec![false; count],
        }
    }

    fn apply_ref(&mut self, op: &Op) -> Effect {
        match op {
            Op::Park { request, line } => {
                if !line_is_valid(line) {
                    return Effect::Refused;
                }
                match self.reference.try_park(*request, line) {
                    Ok(seq) => Effect::Parked(seq),
                    Err(e) => Effect::Error(ref_error_name(&e)),
                }
            }
            Op::Boundary { budget } => match self.reference.boundary(*budget) {
                Ok(Some(batch)) => Effect::Batch(Some((
                    batch_of_ref(&batch),
                    parkline_model::delivery::turn_text(&batch),
                    parkline_model::delivery::notified(&batch)
                        .iter()
                        .map(|n| NotifiedView {
                            request: n.request,
                            seq: n.seq,
                            batch: n.batch,
                            attempt: n.attempt,
                            repeat: n.repeat,
                        })
                        .collect(),
                ))),
                Ok(None) => Effect::Batch(None),
                Err(e) => Effect::Error(ref_error_name(&e)),
            },
            Op::Settle { .. } | Op::HandOverFailed => {
                let (id, count) = self.settle_target();
                let delivered = Self::outcomes(op, count);
                match self.reference.settle(id, &delivered) {
                    Ok(s) => Effect::Settled(SettlementView {
                        delivered: s.delivered.clone(),
                        failed: s.failed.clone(),
                        dead: s.dead.clone(),
                    }),
                    Err(e) => Effect::Error(ref_error_name(&e)),
                }
            }
            _ => Effect::Error("internal: not a queue op".to_owned()),
        }
    }

    fn apply_crate(&mut self, op: &Op) -> Result<Effect, String> {
        let (id, count) = self.settle_target();
        let queue = self.queue()?;
        Ok(match op {
            Op::Park { request, line } => match queue.park(RequestId(*request), line) {
                Ok(seq) => Effect::Parked(seq.0),
                Err(e) if e.kind() == parkline::ErrorKind::InvalidLine => Effect::Refused,
                Err(e) => Effect::Error(crate_error_name(&e)),
            },
            Op::Boundary { budget } => match queue.boundary(Budget(*budget)) {
                Ok(Some(batch)) => Effect::Batch(Some((
                    batch_of_crate(&batch),
                    batch.text(),
                    batch
                        .notified()
                        .iter()
                        .map(|n| NotifiedView {
                            request: n.request.0,
                            seq: n.seq.0,
                            batch: n.batch.0,
                            attempt: n.attempt.0,
                            repeat: n.repeat,
                        })
                        .collect(),
                ))),
                Ok(None) => Effect::Batch(None),
                Err(e) => Effect::Error(crate_error_name(&e)),
            },
            Op::Settle { .. } | Op::HandOverFailed => {
                let outcomes: Vec<Outcome> = Self::outcomes(op, count)
                    .into_iter()
                    .map(|d| {
                        if d {
                            Outcome::Delivered
                        } else {
                            Outcome::Failed
                        }
                    })
                    .collect();
                match queue.settle(parkline::BatchId(id), &outcomes) {
                    Ok(s) => Effect::Settled(SettlementView {
                        delivered: s.delivered.iter().map(|s| s.0).collect(),
                        failed: s.failed.iter().map(|s| s.0).collect(),
                        dead: s.dead.iter().map(|s| s.0).collect(),
                    }),
                    Err(e) => Effect::Error(crate_error_name(&e)),
                }
            }
            _ => Effect::Error("internal: not a queue op".to_owned()),
        })
    }

    /// Record an acknowledged op's effect in the ghost and check the op-level invariants.
    fn observe(&mut self, op: &Op, before: &StateView, effect: &Effect) -> Result<(), String> {
        match (op, effect) {
            (Op::Park { request, line }, Effect::Parked(seq)) => {
                if let Some(last) = self.ghost.acked.keys().next_back()
                    && seq <= last
                {
                    return Err(format!(
                        "D17 order: park returned seq {seq} after seq {last}"
                    ));
                }
                self.ghost.acked.insert(*seq, (*request, line.clone()));
                self.report.parks += 1;
            }
            (Op::Boundary { budget }, Effect::Batch(Some((batch, text, notified)))) => {
                self.check_batch(*budget, before, batch, text, notified)?;
                self.handed = Some((batch.id, batch.items.len()));
                self.report.batches += 1;
                if batch.attempt > 1 {
                    self.report.repeats += 1;
                }
            }
            (Op::Boundary { .. }, Effect::Batch(None))
                if !before.parked.is_empty() || before.in_flight.is_some() =>
            {
                return Err(format!(
                    "D1: boundary returned no batch with {} lines parked and in flight {:?}",
                    before.parked.len(),
                    before.in_flight
                ));
            }
            (Op::Park { .. } | Op::Boundary { .. }, Effect::Error(kind)) if kind == "Exhausted" => {
                self.report.exhausted += 1;
            }
            (Op::Settle { .. } | Op::HandOverFailed, Effect::Settled(settlement)) => {
                self.check_settlement(op, before, settlement)?;
                self.handed = None;
                self.repeats_since_settle = 0;
                self.report.settles += 1;
            }
            _ => {}
        }
        Ok(())
    }

    /// An op that was not acknowledged took effect before the power loss: keep the ghost in step.
    fn observe_unacknowledged(&mut self, op: &Op, _before: &StateView, expected: &Effect) {
        if let (Op::Settle { .. } | Op::HandOverFailed, Effect::Settled(s)) = (op, expected) {
            self.ghost.delivered.extend(s.delivered.iter().copied());
            self.repeats_since_settle = 0;
        }
    }

    fn check_batch(
        &mut self,
        budget: usize,
        before: &StateView,
        batch: &BatchView,
        text: &str,
        notified: &[NotifiedView],
    ) -> Result<(), String> {
        // D4: the frame, and the items verbatim between header and trailer (D3).
        let repeat = batch.attempt > 1;
        let k = batch.items.len();
        let header = format!(
            "[parkline batch {} attempt {}{}: {} of {} parked lines]",
            batch.id,
            batch.attempt,
            if repeat { ", repeat" } else { "" },
            k,
            k + batch.remaining
        );
        let trailer = format!(
            "[parkline batch {} end: {} parked lines still undelivered]",
            batch.id, batch.remaining
        );
        let mut framed = header;
        framed.push('\n');
        for item in &batch.items {
            framed.push_str(&item.line);
            framed.push('\n');
        }
        framed.push_str(&trailer);
        framed.push('\n');
        if text != framed {
            return Err(format!(
                "D4 framing: turn text {text:?}, expected {framed:?}"
            ));
        }
        // D5: one notified per item, in item order, with this hand-over's attempt and mark.
        let expected: Vec<NotifiedView> = batch
            .items
            .iter()
            .map(|item| NotifiedView {
                request: item.request,
                seq: item.seq,
                batch: batch.id,
                attempt: batch.attempt,
                repeat,
            })
            .collect();
        if notified != expected {
            return Err(format!("D5 notified: {notified:?}, expected {expected:?}"));
        }
        let seqs: Vec<u64> = batch.items.iter().map(|item| item.seq).collect();
        if seqs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("D17 order: batch items out of seq order {seqs:?}"));
        }
        if let Some(stored) = &before.in_flight {
            // D10: a boundary with a recovered batch hands that batch again: same id, items
            // and remaining, the stored attempt + 1, marked repeat.
            if batch.id != stored.id
                || batch.items != stored.items
                || batch.remaining != stored.remaining
                || Some(batch.attempt) != stored.attempt.checked_add(1)
                || !repeat
            {
                return Err(format!(
                    "D10: the recovered batch {stored:?} was handed again as {batch:?}"
                ));
            }
        }
        if let Some((members, remaining, attempt_seen)) = self.ghost.batches.get(&batch.id) {
            // D10: a batch id handed again is the same membership, a higher attempt, a repeat.
            if &seqs != members || batch.remaining != *remaining {
                return Err(format!(
                    "D10: batch {} handed again with items {seqs:?} remaining {}, first handed \
                     with {members:?} remaining {remaining}",
                    batch.id, batch.remaining
                ));
            }
            if batch.attempt <= *attempt_seen || !repeat {
                return Err(format!(
                    "D10: batch {} handed again with attempt {} (repeat {repeat}) after attempt \
                     {attempt_seen}",
                    batch.id, batch.attempt
                ));
            }
        } else if before.in_flight.is_none() {
            // A new batch: attempt 1, the split of the parked list (D1, D11, D12).
            if batch.attempt != 1 {
                return Err(format!(
                    "D10: new batch {} has attempt {}",
                    batch.id, batch.attempt
                ));
            }
            if let Some(max) = self.ghost.batches.keys().next_back()
                && batch.id <= *max
            {
                return Err(format!(
                    "D10: new batch id {} does not increase (last {max})",
                    batch.id
                ));
            }
            let costs: Vec<usize> = before
                .parked
                .iter()
                .map(|item| item.line.chars().count() + 1)
                .collect();
            let mut split = 0;
            let mut total = 0;
            for cost in &costs {
                if total + cost > budget {
                    break;
                }
                total += cost;
                split += 1;
            }
            let split = split.max(usize::from(!costs.is_empty()));
            if batch.items.as_slice() != &before.parked[..split.min(before.parked.len())] {
                return Err(format!(
                    "D1/D11: new batch items {seqs:?} are not the first {split} parked lines \
                     {:?} under budget {budget}",
                    before.parked.iter().map(|i| i.seq).collect::<Vec<_>>()
                ));
            }
            let cost: usize = costs[..split].iter().sum();
            if cost > budget && split != 1 {
                return Err(format!(
                    "D12 budget: cost {cost} > budget {budget} with {split} items"
                ));
            }
            if batch.remaining != before.parked.len() - split {
                return Err(format!(
                    "D13: remaining {} with {} parked and {split} in the batch",
                    batch.remaining,
                    before.parked.len()
                ));
            }
        }
        let attempt = batch.attempt;
        self.ghost
            .batches
            .insert(batch.id, (seqs, batch.remaining, attempt));
        Ok(())
    }

    fn check_settlement(
        &mut self,
        op: &Op,
        before: &StateView,
        settlement: &SettlementView,
    ) -> Result<(), String> {
        let Some(batch) = &before.in_flight else {
            return Err("settle returned Ok with no batch in flight".to_owned());
        };
        let outcomes = Self::outcomes(op, batch.items.len());
        let after = state_of_crate(self.queue()?);
        let mut delivered = Vec::new();
        let mut failed = Vec::new();
        let mut dead = Vec::new();
        for (item, ok) in batch.items.iter().zip(&outcomes) {
            if *ok {
                delivered.push(item.seq);
            } else if item.failures.saturating_add(1) >= self.setup.failures_max {
                dead.push(item.seq);
            } else {
                failed.push(item.seq);
            }
        }
        let expected = SettlementView {
            delivered,
            failed,
            dead,
        };
        if settlement != &expected {
            return Err(format!(
                "D6/D7/D8: settlement {settlement:?}, the outcomes give {expected:?}"
            ));
        }
        // D6/D7: each item where its own outcome puts it, the others untouched.
        for item in &batch.items {
            let parked = after.parked.iter().find(|i| i.seq == item.seq);
            let is_dead = after.dead.iter().any(|i| i.seq == item.seq);
            let ok = if expected.delivered.contains(&item.seq) {
                parked.is_none() && !is_dead
            } else if expected.dead.contains(&item.seq) {
                parked.is_none() && is_dead
            } else {
                parked.is_some_and(|p| Some(p.failures) == item.failures.checked_add(1)) && !is_dead
            };
            if !ok {
                return Err(format!(
                    "D6/D7: item seq {} is not where its outcome puts it after settle",
                    item.seq
                ));
            }
        }
        for item in &before.parked {
            if !after.parked.contains(item) {
                return Err(format!(
                    "D6: item seq {} outside the batch changed at settle",
                    item.seq
                ));
            }
        }
        self.ghost
            .delivered
            .extend(expected.delivered.iter().copied());
        self.report.dead += expected.dead.len();
        Ok(())
    }

    /// D9 and no duplicates, on the crate's state.
    fn check_invariants(&mut self) -> Result<(), String> {
        let state = state_of_crate(self.queue()?);
        let mut seen = BTreeMap::new();
        let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
        for (place, item) in state
            .parked
            .iter()
            .map(|i| ("parked", i))
            .chain(in_flight.map(|i| ("in flight", i)))
            .chain(state.dead.iter().map(|i| ("dead", i)))
        {
            if let Some(other) = seen.insert(item.seq, place) {
                return Err(format!("seq {} is both {other} and {place}", item.seq));
            }
            if let Some((request, line)) = self.ghost.acked.get(&item.seq)
                && (request != &item.request || line != &item.line)
            {
                return Err(format!(
                    "D3: seq {} holds request {} line {:?}, parked as request {request} line \
                     {line:?}",
                    item.seq, item.request, item.line
                ));
            }
        }
        for seq in self.ghost.acked.keys() {
            if !seen.contains_key(seq) && !self.ghost.delivered.contains(seq) {
                return Err(format!(
                    "D9 no loss: acknowledged park seq {seq} is neither parked, in flight, \
                     delivered nor dead"
                ));
            }
        }
        Ok(())
    }
}

/// Whether `park` must accept `line` (D3: no `\n`; the lines used are far below
/// `line_bytes_max`).
fn line_is_valid(line: &str) -> bool {
    !line.contains('\n')
}

fn crate_error_name(e: &crate::known_bad::DriverError) -> String {
    format!("{:?}", e.kind())
}

fn ref_error_name(e: &parkline_model::delivery::RefError) -> String {
    format!("{e:?}")
}

/// The check of the fuzz target `mirror_decode`, on `bytes` as given and on `bytes` with every
/// line's checksum recomputed (so mutations reach the records' JSON and their semantics): the
/// decoder returns a typed `Corrupt` error or a state; a state is valid (seqs increasing and
/// below `next_seq`, no seq twice, the batch id below `next_batch`, counters not wrapped to 0,
/// no parked item at `u32::MAX` failures), and it re-encodes to bytes
/// that decode to an equal state. Never a panic.
///
/// # Errors
///
/// A message saying which of these failed.
pub fn check_mirror_bytes(bytes: &[u8]) -> Result<(), String> {
    check_mirror_decode(bytes)?;
    check_mirror_decode(&with_checksums_fixed(bytes))
}

fn check_mirror_decode(bytes: &[u8]) -> Result<(), String> {
    let state = match parkline::mirror::decode(bytes) {
        Ok(state) => state,
        Err(e) if e.kind() == parkline::ErrorKind::Corrupt => return Ok(()),
        Err(e) => {
            return Err(format!(
                "decode failed with {:?}, not Corrupt: {e}",
                e.kind()
            ));
        }
    };
    let mut seqs: Vec<u64> = Vec::new();
    let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
    for item in state
        .parked
        .iter()
        .chain(in_flight)
        .chain(&state.dead_letters)
    {
        if item.seq.0 >= state.next_seq.0 {
            return Err(format!(
                "decoded seq {} is not below next_seq {}",
                item.seq.0, state.next_seq.0
            ));
        }
        seqs.push(item.seq.0);
    }
    // M6: counters start at 1 and never wrap; a parked item can always fail once more.
    if state.next_seq.0 == 0 || state.next_batch.0 == 0 {
        return Err(format!(
            "decoded counters wrapped: next seq {} next batch {}",
            state.next_seq.0, state.next_batch.0
        ));
    }
    let mut live = state
        .parked
        .iter()
        .chain(state.in_flight.iter().flat_map(|b| b.items.iter()));
    if let Some(item) = live.find(|item| item.failures == u32::MAX) {
        return Err(format!(
            "decoded parked seq {} has failures u32::MAX",
            item.seq.0
        ));
    }
    let parked: Vec<u64> = state.parked.iter().map(|i| i.seq.0).collect();
    if parked.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("decoded parked list out of seq order: {parked:?}"));
    }
    seqs.sort_unstable();
    if seqs.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("decoded state holds a seq twice: {seqs:?}"));
    }
    if let Some(batch) = &state.in_flight
        && batch.id.0 >= state.next_batch.0
    {
        return Err(format!(
            "decoded batch id {} is not below next_batch {}",
            batch.id.0, state.next_batch.0
        ));
    }
    let again = parkline::mirror::encode(&state);
    match parkline::mirror::decode(&again) {
        Ok(decoded) if decoded == state => Ok(()),
        Ok(decoded) => Err(format!(
            "re-encoded state decodes differently:\n  first  {state:?}\n  second {decoded:?}"
        )),
        Err(e) => Err(format!("re-encoded state does not decode: {e}")),
    }
}

/// `bytes` with the checksum of every `<8 hex> <json>\n` line replaced by the right one.
fn with_checksums_fixed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        if line.len() >= 9 && line[8] == b' ' {
            let json = &line[9..];
            out.extend_from_slice(format!("{:08x} ", parkline_model::read::crc32(json)).as_bytes());
            out.extend_from_slice(json);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Decode fuzz input the way `libfuzzer_sys::fuzz_target!(|ops: Vec<Op>| ...)` does, so corpus and
/// artifact files replay as plain tests on stable. `None` when libfuzzer would skip the input.
pub fn decode_ops(bytes: &[u8]) -> Option<Vec<Op>> {
    if bytes.len() < <Vec<Op> as Arbitrary>::size_hint(0).0 {
        return None;
    }
    <Vec<Op> as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The [`Setup`] the fuzz target uses: the default, or the delivery behaviour named by the
/// environment variable `PARKLINE_KNOWN_BAD` (kebab-case, `PARKLINE_KNOWN_BAD=pop-front`), to
/// show a campaign finds it.
///
/// # Errors
///
/// The variable names no known-bad behaviour, or a read-side one.
pub fn setup_from_env() -> Result<Setup, String> {
    match KnownBad::from_env("PARKLINE_KNOWN_BAD")? {
        Some(bad) if bad.is_read() => Err(format!(
            "PARKLINE_KNOWN_BAD={bad}: a read-side behaviour; delivery_ops runs one of {:?}",
            KnownBad::DELIVERY.map(KnownBad::name)
        )),
        known_bad => Ok(Setup {
            known_bad,
            ..Setup::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviate_shortens_only_long_runs() {
        let big = format!("a{}b", "x".repeat(100));
        assert_eq!(abbreviate(&big), "ax…(100 times)b");
        assert_eq!(abbreviate("aaa"), "aaa");
    }

    #[test]
    fn ops_decode_from_bytes_within_bounds() {
        let mut rng = crate::simdisk::SplitMix::new(7);
        let bytes: Vec<u8> = (0..4096).map(|_| rng.next_u64() as u8).collect();
        let ops = decode_ops(&bytes).expect("decodes");
        assert!(!ops.is_empty());
        for op in &ops {
            match op {
                Op::Park { request, line } => {
                    assert!((1..=4).contains(request));
                    assert!(LINES.contains(&line.as_str()) || line.len() == BIG_LINE_CHARS);
                }
                Op::Boundary { budget } => {
                    assert!(*budget <= BUDGET_MAX || *budget == BUDGET_ALL);
                }
                Op::ParkMany { count, line, .. } => {
                    assert!((1..=PARK_MANY_MAX).contains(count));
                    assert!(LINES.contains(&line.as_str()) || line.len() == BIG_LINE_CHARS);
                }
                Op::Craft(c) => {
                    assert!(c.lines <= 3 && c.in_flight <= 3 && c.seq_gap <= 3);
                    assert!(c.batch_gap <= 2 && c.attempt_gap <= 2 && c.failures_gap <= 3);
                }
                Op::Settle { delivered } => assert!(delivered.len() <= 6),
                Op::CrashAtSync { n, .. } => assert!((1..=3).contains(n)),
                Op::IoError { n } => assert!((1..=4).contains(n)),
                Op::HandOverFailed | Op::Crash { .. } | Op::Restart => {}
            }
        }
    }

    #[test]
    fn a_divergence_names_its_step_and_op() {
        let ops = [Op::Park {
            request: 1,
            line: "a".to_owned(),
        }];
        assert!(check(&ops).is_ok());
        let divergence = Divergence {
            step: 3,
            op: Some(Op::Restart),
            message: "D9 no loss: seq 1 lost".to_owned(),
        };
        assert_eq!(
            divergence.to_string(),
            "step 3 (Restart): D9 no loss: seq 1 lost"
        );
    }
}
