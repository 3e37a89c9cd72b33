//! Delivery conformance: one [`Op`] vocabulary and one [`check`] that drives the production
//! crate (`parkline::Queue` over a [`SimDisk`]) and the reference (`parkline_model::delivery::
//! Reference`) side by side, and compares them after every step.
//!
//! The same `check` is called by the differential proptest, the exhaustive replay of the model's
//! graph, the crash enumeration, the fuzz target `delivery_ops` and the corpus regression tests,
//! so a finding of any of them replays through all of them.
//!
//! What is compared after every op: the value the op returned (seq; the batch's id, attempt,
//! repeat mark, items in order, remaining and exact turn text; the notified events; the
//! settlement), and the whole state (parked, in flight, dead letters, next seq and batch id), all
//! in the crate's own types ([`view`]). A crash inside an op (the op was not acknowledged) may
//! leave the state before or after it: the recovered crate must equal one of the two, and the
//! reference continues from that one.
//!
//! Besides the comparison, the invariants are asserted directly on the crate's outputs, so a
//! mistake shared by the crate and the reference is still caught: D9 no loss (every acknowledged
//! park is parked, in flight, delivered, dead, or discarded by a discard op), D8 a discard removes
//! exactly the dead letters it names, D10 repeat recognisable, D6 independence, D11/D12 split
//! and budget, D17 order, D4 framing, and after every op the M12 file-size bound
//! ([`m12_bound`]), and after every idle call that finds the queue drained its bound at rest
//! ([`m12_rest_bound`]).
//!
//! The ops reach the extremes too: [`Op::ParkMany`] and the whole-queue budget [`BUDGET_ALL`]
//! build multi-megabyte batches (so compaction runs at the default slack), and [`Op::Craft`]
//! starts over from a mirror whose counters are at or next to their limits (seq and batch id
//! near `u64::MAX`, attempt and failures near `u32::MAX`), with valid checksums.

mod check;
mod clock;
mod corpus;
mod craft;
mod m12;
mod mirror_bytes;
mod op;
mod run;
pub mod view;

pub use check::{
    Divergence, GENERATED_COMPACT_SLACK_BYTES, GENERATED_REST_SLACK_BYTES, Report, Setup, check,
    check_with,
};
pub use clock::{Frozen, OpClock};
pub use corpus::{decode_ops, setup_from_env};
pub use craft::{Crafted, crafted_strategy};
pub use m12::{attempt_record_bytes_max, m12_bound, m12_rest_bound};
pub use mirror_bytes::check_mirror_bytes;
pub use op::{
    BIG_LINE_CHARS, BUDGET_ALL, BUDGET_MAX, Handed, LINES, MEMBERS_MAX, MIRROR, Op, PARK_MANY_MAX,
    QueueOp, line, member_of, op_strategy, ops_strategy, park_concurrently, seqs_strategy,
};
pub use view::{Effect, EndedIn, HandOver, Member};

#[cfg(doc)]
use crate::simdisk::SimDisk;
