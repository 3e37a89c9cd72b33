//! Interleaved measurement: the contenders of one comparison take turns, one operation each per
//! round, so that a slow minute of a shared disk slows them all alike.
//!
//! Criterion measures one function for seconds before it moves to the next; on a machine whose
//! fsync latency drifts by 10x from one minute to the next (measured here: 0.25 ms to 5 ms),
//! ratios of such sequential measurements mostly compare the minutes. The medians of interleaved
//! rounds compare the contenders.

use std::time::Duration;

/// Rounds per comparison: `$PARKLINE_BENCH_ROUNDS` when set, else `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("PARKLINE_BENCH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|&rounds| rounds > 0)
        .unwrap_or(default)
}

/// Runs `rounds` rounds; in each, every contender measures one operation (the closure returns
/// the time of that operation alone, fixture work excluded). The first contender of a round
/// rotates, so none always follows the same one. Returns each contender's median.
pub fn medians(rounds: usize, contenders: &mut [&mut dyn FnMut() -> Duration]) -> Vec<Duration> {
    let count = contenders.len();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); count];
    for round in 0..rounds {
        for k in 0..count {
            let which = (round + k) % count;
            samples[which].push((contenders[which])());
        }
    }
    samples
        .into_iter()
        .map(|mut times| {
            times.sort();
            times.get(times.len() / 2).copied().unwrap_or_default()
        })
        .collect()
}
