//! Crafted mirrors ([`Crafted`], the start state of `Op::Craft`): valid files whose counters are
//! at or next to their limits, for the reference and the crate alike.

use arbitrary::{Arbitrary, Unstructured};
use parkline_model::delivery::{RefBatch, RefItem};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::op::LINES;
use super::view::mirror_state_of;

/// A start state at the counters' limits, for [`Op::Craft`](super::Op::Craft). With
/// `m = lines + dead` items, the
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
                handed: 0,
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
        let attempt = (u32::MAX - u32::from(self.attempt_gap)).max(1);
        let in_flight = (k > 0).then(|| RefBatch {
            id,
            attempt,
            // Each attempt's record counted one hand-over (none before the batch).
            items: items
                .drain(..k)
                .map(|item| RefItem {
                    handed: u64::from(attempt),
                    ..item
                })
                .collect(),
            remaining: items.len(),
            seen: 0,
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
            cap: None,
            remembered: Vec::new(),
        }
    }

    /// The mirror file of this start state, as the crate writes snapshots (valid checksums; a
    /// state the rules forbid gives records the decoder must reject).
    pub fn bytes(&self) -> Vec<u8> {
        parkline::mirror::encode(&mirror_state_of(&self.mirror()))
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
