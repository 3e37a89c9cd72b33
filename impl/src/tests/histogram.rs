//! `FsyncHistogram`: its edges, the bucket a duration lands in, and the quantile read back.

use std::time::Duration;

use crate::FsyncHistogram;

fn micros(us: u64) -> Duration {
    Duration::from_micros(us)
}

#[test]
fn edges_are_powers_of_two_from_16_micros_to_about_a_second() {
    let edges = FsyncHistogram::EDGES;
    assert_eq!(
        (edges[0], edges[edges.len() - 1]),
        (micros(16), micros(1 << 20))
    );
    assert!(edges.windows(2).all(|pair| pair[1] == pair[0] * 2));
    assert_eq!(FsyncHistogram::default().buckets().len(), edges.len() + 1);
}

#[test]
fn a_duration_lands_in_the_bucket_whose_upper_edge_holds_it() {
    let mut histogram = FsyncHistogram::default();
    for took in [
        Duration::ZERO,
        micros(16),
        micros(16) + Duration::from_nanos(1),
        micros(1 << 20),
        micros(1 << 20) + Duration::from_nanos(1),
        Duration::from_secs(60),
    ] {
        histogram.record(took);
    }
    let buckets = histogram.buckets();
    let last = buckets.len() - 1;
    assert_eq!((buckets[0], buckets[1]), (2, 1));
    assert_eq!((buckets[last - 1], buckets[last]), (1, 2));
    assert_eq!(histogram.count(), 6);
}

#[test]
fn quantile_is_the_upper_edge_of_the_bucket_holding_the_rank() {
    let mut histogram = FsyncHistogram::default();
    assert_eq!(histogram.quantile(0.5), None);
    // 90 fast fsyncs (at most 64 µs), 9 slower (at most 2,048 µs), one past every edge.
    for _ in 0..90 {
        histogram.record(micros(50));
    }
    for _ in 0..9 {
        histogram.record(micros(2_000));
    }
    histogram.record(Duration::from_secs(3));
    assert_eq!(histogram.quantile(0.0), Some(micros(64)));
    assert_eq!(histogram.quantile(0.9), Some(micros(64)));
    assert_eq!(histogram.quantile(0.91), Some(micros(2_048)));
    assert_eq!(histogram.quantile(0.99), Some(micros(2_048)));
    assert_eq!(histogram.quantile(1.0), Some(Duration::MAX));
    assert_eq!(histogram.quantile(7.0), Some(Duration::MAX), "q is clamped");
}
