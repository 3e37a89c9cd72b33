//! The bounds of a delivery check (which lines arrive, the budget, how many crashes, failures and
//! collections), the default bounds of the tests and of `parkline check`, and the unique state
//! counts pinned at those bounds as a regression alarm.

/// The bounds of one check: which lines arrive (in this order), the budget, and how many crashes,
/// failures and agent_read collections may happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// `(request, line)` in arrival order.
    pub lines: Vec<(u64, String)>,
    /// The budget passed to every boundary.
    pub budget: usize,
    /// Crashes allowed in one run.
    pub crashes: u32,
    /// Item failures allowed in one run (a failed hand-over counts once).
    pub failures: u32,
    /// The queue's dead-letter threshold.
    pub failures_max: u32,
    /// agent_read collections allowed in one run.
    pub collects: u32,
}

impl Bounds {
    /// The line sizes (characters) the generated lines cycle through. With budget 6 (costs 2, 3,
    /// 8): the first two share a batch, the third is larger than the budget and goes alone.
    pub const LINE_CHARS: [usize; 3] = [1, 2, 7];

    /// `lines` generated lines (request `i + 1`, sizes from [`Bounds::LINE_CHARS`], with a
    /// multi-byte character so bytes and characters differ) and the other bounds as given.
    pub fn generated(lines: usize, budget: usize, crashes: u32, failures: u32) -> Bounds {
        Bounds::with_sizes(lines, &Self::LINE_CHARS, budget, crashes, failures)
    }

    /// Like [`Bounds::generated`], with line sizes (characters) cycling through `sizes`
    /// (`[1]` when empty).
    pub fn with_sizes(
        lines: usize,
        sizes: &[usize],
        budget: usize,
        crashes: u32,
        failures: u32,
    ) -> Bounds {
        let sizes = if sizes.is_empty() { &[1][..] } else { sizes };
        let alphabet = ['a', 'é', 'c', 'd'];
        let lines = (0..lines)
            .map(|i| {
                let chars = sizes[i % sizes.len()];
                let c = alphabet[i % alphabet.len()];
                (i as u64 + 1, std::iter::repeat_n(c, chars).collect())
            })
            .collect();
        Bounds {
            lines,
            budget,
            crashes,
            failures,
            failures_max: 2,
            collects: 1,
        }
    }

    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        let sizes: Vec<String> = self
            .lines
            .iter()
            .map(|(_, line)| line.chars().count().to_string())
            .collect();
        format!(
            "lines={} (chars {}) budget={} crashes={} failures={} failures_max={} collects={}",
            self.lines.len(),
            sizes.join(","),
            self.budget,
            self.crashes,
            self.failures,
            self.failures_max,
            self.collects
        )
    }
}

impl Bounds {
    /// The bounds `parkline check` runs by default: [`Bounds::default`] with 2 crashes, so a
    /// repeat can itself crash and repeat again (attempt 3). About 25 s in release.
    pub fn check() -> Bounds {
        Bounds::generated(3, 6, 2, 2)
    }
}

impl Default for Bounds {
    /// The default bounds of the test suite and the exhaustive conformance replay: 3 lines (a
    /// 2-line batch and a line over the budget, so splits happen), budget 6, 1 crash, 2 failures
    /// (enough for a dead letter at `failures_max` 2), 1 agent_read collection.
    fn default() -> Self {
        Bounds::generated(3, 6, 1, 2)
    }
}

/// Regression alarm: unique states of the correct model at [`Bounds::default`]; a change means
/// the model or the bounds changed.
pub const DEFAULT_UNIQUE_STATES: usize = 100_782;

/// Regression alarm: unique states of the correct model at [`Bounds::check`]; `parkline check`
/// fails when its count differs.
pub const CHECK_UNIQUE_STATES: usize = 1_162_513;
