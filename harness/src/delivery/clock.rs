//! The clocks the checks give the crate (D24): one that reads the index of the op being applied,
//! so that a time in the mirror names the op that recorded it, and `frozen-clock`'s.

use std::sync::atomic::{AtomicU64, Ordering};

use parkline::Clock;

/// A clock that reads what the check set it to: the index of the op being applied.
#[derive(Debug, Default)]
pub struct OpClock(AtomicU64);

impl OpClock {
    /// From now on the clock reads `op`.
    pub fn set(&self, op: u64) {
        self.0.store(op, Ordering::SeqCst);
    }

    /// What the clock reads.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Clock for OpClock {
    fn now_ms(&self) -> u64 {
        self.now()
    }
}

/// A clock stuck at 0: `frozen-clock`'s seam.
#[derive(Debug)]
pub struct Frozen;

impl Clock for Frozen {
    fn now_ms(&self) -> u64 {
        0
    }
}
