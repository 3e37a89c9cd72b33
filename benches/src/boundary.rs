//! One boundary, as the daemon runs it, and the floor it is measured against; shared by the
//! boundary bench and the table bench so both time the same work.

use std::hint::black_box;

use parkline::{Budget, Outcome};

use crate::fixture::CountedQueue;
use crate::floor::AppendFloor;

/// Large enough for every fixture's batch to be delivered whole.
pub const BUDGET: Budget = Budget(usize::MAX);

/// Batch, turn text and notified events, settle all delivered. Returns the lines delivered.
///
/// The turn text is written into `turn`, cleared first: the daemon's one buffer for turn texts,
/// which a caller keeps from one boundary to the next as a daemon would (`Batch::write_text`).
/// A fresh `String` per boundary costs more than the render itself at 10,000 lines: 2 MB of
/// fresh pages faulted in one by one (the profile driver's `boundary-phases` mode shows both).
///
/// # Panics
///
/// When the queue fails or holds nothing to deliver: a bench's fixture always has a batch.
pub fn parkline(queue: &mut CountedQueue, turn: &mut String) -> usize {
    let batch = queue.boundary(BUDGET).expect("boundary").expect("a batch");
    turn.clear();
    batch.write_text(turn);
    let notified = batch.notified();
    black_box((&*turn, &notified));
    let outcomes = vec![Outcome::Delivered; batch.items.len()];
    queue.settle(batch.id, &outcomes).expect("settle");
    batch.items.len()
}

/// The two durability points a crash-safe boundary of `n` lines needs: the batch durable before
/// it is handed over, its clearing durable after; each one small record and one fsync.
///
/// # Panics
///
/// On an I/O error of the floor file.
pub fn floor(floor: &mut AppendFloor, n: u64) {
    floor
        .append_durable(&format!("batch 1: seqs 1..={n}"))
        .expect("write + fsync");
    floor
        .append_durable("batch 1: settled, all delivered")
        .expect("write + fsync");
}
