//! `FsyncHistogram`: how long fsyncs took, counted in fixed buckets, so a daemon exports
//! percentiles of its disk's waits without a metrics library of the crate's.

use std::time::Duration;

/// How many buckets have an upper edge; one overflow bucket follows them.
const EDGES_LEN: usize = 17;

/// The upper edges of the bounded buckets: powers of 2 from 16 µs to 1.048576 s (2^4 to 2^20
/// µs). 16 µs is below a page-cache fsync on tmpfs or a battery-backed cache, and an fsync of a
/// second is the disk an operator is paged for; a factor of 2 between edges keeps the table at
/// 18 numbers while a percentile read from it is off by at most that factor.
const EDGES: [Duration; EDGES_LEN] = {
    let mut edges = [Duration::ZERO; EDGES_LEN];
    let mut at = 0;
    while at < EDGES_LEN {
        edges[at] = Duration::from_micros(16 << at);
        at += 1;
    }
    edges
};

/// Fsync durations in fixed buckets, for percentiles: a field of `Stats`.
///
/// Bucket `i` below [`EDGES`](FsyncHistogram::EDGES)`.len()` counts the fsyncs that took more
/// than `EDGES[i - 1]` (zero for the first) and at most `EDGES[i]`; the last bucket counts those
/// that took longer than the last edge.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use std::time::Duration;
/// use parkline::{Config, FsyncHistogram, MemStorage, Queue, RequestId};
/// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
/// queue.park(RequestId(1), "done")?;
/// let histogram = queue.stats().fsync_durations;
/// assert_eq!(histogram.count(), 3); // the create's file and directory fsyncs, the park's
/// assert_eq!(histogram.buckets().len(), FsyncHistogram::EDGES.len() + 1);
/// assert!(histogram.quantile(0.99) >= Some(Duration::from_micros(16)));
/// # Ok(()) }
/// ```
///
/// With the `serde` feature it serializes as `{"edges_us": [16, 32, ...], "buckets": [...]}`,
/// the edges in microseconds beside the counts, so an exported table says what it counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsyncHistogram {
    buckets: [u64; EDGES_LEN + 1],
}

impl FsyncHistogram {
    /// The upper edges of the bounded buckets: 16 µs, 32 µs, ... 1.048576 s (powers of 2).
    pub const EDGES: [Duration; EDGES_LEN] = EDGES;

    /// Counts one fsync that took `took`.
    pub(crate) fn record(&mut self, took: Duration) {
        let at = EDGES
            .iter()
            .position(|edge| took <= *edge)
            .unwrap_or(EDGES_LEN);
        self.buckets[at] = self.buckets[at].saturating_add(1);
    }

    /// Adds `other`'s counts to this one's, bucket by bucket.
    pub(crate) fn merge(&mut self, other: &FsyncHistogram) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine = mine.saturating_add(theirs);
        }
    }

    /// The count of each bucket, the overflow bucket last.
    pub fn buckets(&self) -> &[u64] {
        &self.buckets
    }

    /// How many fsyncs were counted.
    pub fn count(&self) -> u64 {
        self.buckets
            .iter()
            .fold(0u64, |sum, count| sum.saturating_add(*count))
    }

    /// The upper edge of the bucket that holds the `q` quantile (`q` in 0..=1, clamped), so the
    /// true quantile is at most the answer (and, above the first bucket, more than half of it).
    /// `None` with nothing
    /// counted; `Duration::MAX` when the quantile falls in the overflow bucket, which has no
    /// upper edge (`Stats::fsync_max` bounds it).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        // The rank of the quantile among the counted fsyncs, 1-based: at least the first.
        let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (at, bucket) in self.buckets.iter().enumerate() {
            seen = seen.saturating_add(*bucket);
            if seen >= rank {
                return Some(EDGES.get(at).copied().unwrap_or(Duration::MAX));
            }
        }
        debug_assert!(false, "the rank is at most the count");
        Some(Duration::MAX)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for FsyncHistogram {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let edges_us = EDGES.map(|edge| edge.as_micros() as u64);
        let mut table = serializer.serialize_struct("FsyncHistogram", 2)?;
        table.serialize_field("edges_us", &edges_us)?;
        table.serialize_field("buckets", &self.buckets)?;
        table.end()
    }
}
