//! Interleaved measurement: the contenders of one comparison take turns, one operation each per
//! round, so that a slow minute of a shared disk slows them all alike.
//!
//! Criterion measures one function for seconds before it moves to the next; on a machine whose
//! fsync latency drifts by 10x from one minute to the next (measured here: 0.25 ms to 5 ms),
//! ratios of such sequential measurements mostly compare the minutes. The medians of interleaved
//! rounds compare the contenders, and the quartiles of the per-round ratios say how far one
//! round's ratio strays: a wide spread with a median near 1 is the disk, a spread that sits
//! wholly above 1 is the contender.

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
/// rotates, so none always follows the same one. Returns each contender's samples in round
/// order, so that `samples[a][r]` and `samples[b][r]` were taken in the same round.
pub fn samples(
    rounds: usize,
    contenders: &mut [&mut dyn FnMut() -> Duration],
) -> Vec<Vec<Duration>> {
    let count = contenders.len();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); count];
    for round in 0..rounds {
        for k in 0..count {
            let which = (round + k) % count;
            samples[which].push((contenders[which])());
        }
    }
    samples
}

/// [`samples`], reduced to each contender's median.
pub fn medians(rounds: usize, contenders: &mut [&mut dyn FnMut() -> Duration]) -> Vec<Duration> {
    samples(rounds, contenders)
        .iter()
        .map(|times| Quartiles::of_durations(times).median_duration())
        .collect()
}

/// First quartile, median and third quartile of a set of figures (nearest rank, no
/// interpolation, so every figure printed was measured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quartiles {
    /// The 25th percentile.
    pub q1: f64,
    /// The 50th percentile.
    pub median: f64,
    /// The 75th percentile.
    pub q3: f64,
}

impl Quartiles {
    /// The quartiles of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Quartiles {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let at = |p: usize| {
            if sorted.is_empty() {
                0.0
            } else {
                sorted[(sorted.len() - 1) * p / 4]
            }
        };
        Quartiles {
            q1: at(1),
            median: at(2),
            q3: at(3),
        }
    }

    /// The quartiles of `times`, in microseconds.
    pub fn of_durations(times: &[Duration]) -> Quartiles {
        let us: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        Quartiles::of(&us)
    }

    /// The quartiles of the per-round ratios `a[r] / b[r]` (samples of the same rounds).
    pub fn of_ratios(a: &[Duration], b: &[Duration]) -> Quartiles {
        let ratios: Vec<f64> = a
            .iter()
            .zip(b)
            .filter(|(_, b)| !b.is_zero())
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect();
        Quartiles::of(&ratios)
    }

    /// Every figure divided by `by` (for example microseconds per line).
    pub fn scaled(self, by: f64) -> Quartiles {
        Quartiles {
            q1: self.q1 / by,
            median: self.median / by,
            q3: self.q3 / by,
        }
    }

    /// The median of quartiles taken in microseconds, as a [`Duration`].
    pub fn median_duration(self) -> Duration {
        Duration::from_secs_f64(self.median.max(0.0) / 1e6)
    }
}
