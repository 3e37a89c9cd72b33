//! A store session's figures (M16): the [`Stats`] its queue last published, read by the store
//! without the session's lock, and the counters of the session's earlier lives (a reopen, a
//! queue dropped) folded into the store's.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::Stats;

/// When the oldest live line was parked and when the first dead letter died, in milliseconds
/// since the Unix epoch.
pub(crate) type Oldest = [Option<u64>; 2];

/// One session's published [`Stats`]; dropped or retired, its counters join `retired`.
#[derive(Debug)]
pub(crate) struct Figures {
    /// The stats, and when the oldest live line was parked and the first dead letter died
    /// (D24), so that the store tells their ages by its clock when asked, not at the last write.
    now: Mutex<(Stats, Oldest)>,
    retired: Arc<Mutex<Stats>>,
}

/// Locks a figures table: each change is one assignment or one `absorb`, whole across a panic.
pub(crate) fn lock(stats: &Mutex<Stats>) -> MutexGuard<'_, Stats> {
    stats.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Figures {
    /// A new session's figures, whose counters join `retired` when it ends.
    pub(crate) fn new(retired: Arc<Mutex<Stats>>) -> Figures {
        Figures {
            now: Mutex::new((Stats::default(), [None; 2])),
            retired,
        }
    }

    /// The queue's figures after a write: its stats without the ages, and the times they are
    /// told from.
    pub(crate) fn publish(&self, stats: Stats, oldest: Oldest) {
        *self.now() = (stats, oldest);
    }

    /// Adds what the session holds now to `sum`, its ages told at `now_ms` (the oldest kept).
    pub(crate) fn add_to(&self, sum: &mut Stats, now_ms: u64) {
        let now = self.now();
        let (stats, [parked_at, died_at]) = &*now;
        sum.absorb(stats);
        let age = |at: &Option<u64>| at.map(|at| crate::clock::age(now_ms, at));
        sum.oldest_parked_age = sum.oldest_parked_age.max(age(parked_at));
        sum.oldest_dead_age = sum.oldest_dead_age.max(age(died_at));
    }

    fn now(&self) -> MutexGuard<'_, (Stats, Oldest)> {
        // Each change is one assignment.
        self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's queue ends a life (a reopen starts the next at zero): its counters join the
    /// store's retired ones, its gauges are gone.
    pub(crate) fn retire(&self) {
        let (ended, _) = std::mem::take(&mut *self.now());
        lock(&self.retired).absorb_counters(&ended);
    }
}

impl Drop for Figures {
    fn drop(&mut self) {
        self.retire();
    }
}
