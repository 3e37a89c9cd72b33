//! [`check`]: apply a scenario of ops to the crate and the reference and compare; its [`Setup`],
//! the [`Report`] of a passing run and the [`Divergence`] of a failing one.

use std::fmt;

use parkline::Config;
use parkline_model::delivery::Reference;

use super::op::Op;
use super::run::Run;
use crate::known_bad::KnownBad;

/// The M12 slack of a generated check: 64 KiB, not the crate's 4 MiB default
/// ([`parkline::COMPACT_SLACK_BYTES`]), so that the op sequences the generators draw (a few big
/// lines, a `ParkMany` of up to 1.6 MB) reach the rewrite path (temp file, fsync, rename,
/// directory fsync) and the crashes between its steps; at 4 MiB few sequences would.
pub const GENERATED_COMPACT_SLACK_BYTES: u64 = 64 * 1024;

/// The M12 rest slack of a generated check: 512 bytes, not the crate's 64 KiB default
/// ([`parkline::REST_SLACK_BYTES`]), so that the idle calls of generated op sequences, whose lines
/// are short, compact often and the bound at rest is checked on both of its paths.
pub const GENERATED_REST_SLACK_BYTES: u64 = 512;

/// How the crate is configured for a check.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Failures before an item becomes a dead letter (D8).
    pub failures_max: u32,
    /// A deliberately broken protocol around the crate (a delivery one of
    /// [`KnownBad::DELIVERY`]), to show the check catches it.
    pub known_bad: Option<KnownBad>,
    /// The crate's M12 slack (`Config::compact_slack_bytes`); the file-size bound checked after
    /// every op uses the same value.
    pub compact_slack_bytes: u64,
    /// The crate's M12 rest slack (`Config::rest_slack_bytes`); the bound at rest checked after
    /// every settle, redrive or discard that leaves the queue drained uses the same value.
    pub rest_slack_bytes: u64,
    /// The repeat bound (`Config::repeats_max`, D10): 2, below the crate's default, so that
    /// generated crashes close batches often.
    pub repeats_max: u32,
    /// M12's snapshot round trip after every op (`true`), or only where format 2 had no snapshot
    /// (`false`, the fuzz target's: the full check costs most of an exec).
    pub snapshot_every_op: bool,
    /// The remembered window (`Config::delivered_memory`, D3): 2, so that with the generated
    /// requests 1 to 4 a retry after delivery is answered from the window, a reused request
    /// with another line is a conflict, and a request forgotten is parked anew, all often.
    pub delivered_memory: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            failures_max: 2,
            known_bad: None,
            compact_slack_bytes: GENERATED_COMPACT_SLACK_BYTES,
            rest_slack_bytes: GENERATED_REST_SLACK_BYTES,
            repeats_max: 2,
            snapshot_every_op: true,
            delivered_memory: 2,
        }
    }
}

impl Setup {
    /// The crate's configuration for this setup.
    pub fn config(&self) -> Config {
        let mut config = Config::default();
        config.failures_max = self.failures_max;
        config.compact_slack_bytes = self.compact_slack_bytes;
        config.rest_slack_bytes = self.rest_slack_bytes;
        if self.known_bad == Some(KnownBad::NeverCompactAtRest) {
            // The seam of `never-compact-at-rest`: the crate's rule at rest never fires, while
            // the check keeps this setup's rest slack.
            config.rest_slack_bytes = u64::MAX;
        }
        config.repeats_max = self.repeats_max;
        config.delivered_memory = self.delivered_memory;
        config
    }

    /// The reference queue this setup's crate is checked against.
    pub fn reference(&self) -> Reference {
        self.tune(Reference::new(self.failures_max))
    }

    /// `reference` with this setup's repeat bound and remembered window.
    pub fn tune(&self, reference: Reference) -> Reference {
        let memory = usize::try_from(self.delivered_memory).unwrap_or(usize::MAX);
        reference
            .with_repeats_max(self.repeats_max)
            .with_delivered_memory(memory)
    }
}

/// What a passing check saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Ops applied.
    pub steps: usize,
    /// Parks acknowledged.
    pub parks: usize,
    /// Batches handed over (first or repeat).
    pub batches: usize,
    /// Of those, repeats.
    pub repeats: usize,
    /// Settles that returned `Ok`.
    pub settles: usize,
    /// Items that became dead letters.
    pub dead: usize,
    /// Power losses (between ops and inside ops).
    pub crashes: usize,
    /// Power losses inside an op (at a sync).
    pub crashes_in_op: usize,
    /// Injected I/O errors that failed an op.
    pub io_errors: usize,
    /// Parks that returned the seq their request's line already had (D3).
    pub repeated_parks: usize,
    /// Parks answered from the remembered window: their line had been delivered or discarded
    /// (D3).
    pub remembered_parks: usize,
    /// Renames the crate made (mirror rewrites: creation and compaction).
    pub renames: u64,
    /// For each op, how many syncs the crate made while applying it.
    pub syncs_per_step: Vec<u64>,
    /// Crafted mirrors opened (`Op::Craft` that both sides accepted).
    pub crafted: usize,
    /// Crafted mirrors both sides found impossible (M6: Corrupt).
    pub crafted_corrupt: usize,
    /// Parks and boundaries both sides refused with `Exhausted` (a counter at its limit).
    pub exhausted: usize,
    /// Dead letters an acknowledged discard removed (D8).
    pub discarded: usize,
    /// `park_concurrently` ops run (several threads through one `SharedQueue`).
    pub concurrent: usize,
    /// Of those, the ones without a fault whose new lines took fewer fsyncs than lines: a group
    /// of two or more was written together (D16).
    pub grouped: usize,
}

/// The crate and the reference disagreed, or an invariant failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the op at which it was found.
    pub step: usize,
    /// The op at that index (`None` when found before the first op).
    pub op: Option<Op>,
    /// What differed, in the spec's words, with the requirement id.
    pub message: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = abbreviate(&self.message);
        match &self.op {
            Some(op) => write!(
                f,
                "step {} ({}): {message}",
                self.step,
                abbreviate(&format!("{op:?}"))
            ),
            None => write!(f, "before step {}: {message}", self.step),
        }
    }
}

/// `text` with every run of more than 40 equal characters (the big line) shortened.
fn abbreviate(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        if run > 40 {
            out.push_str(&format!("{c}…({run} times)"));
        } else {
            out.extend(std::iter::repeat_n(c, run));
        }
    }
    out
}

impl std::error::Error for Divergence {}

/// Apply `ops` to the crate and the reference with the default [`Setup`] and compare.
///
/// # Errors
///
/// The first [`Divergence`]: a step where the crate's output or state differs from the
/// reference's, or an invariant fails.
pub fn check(ops: &[Op]) -> Result<Report, Divergence> {
    check_with(ops, &Setup::default())
}

/// Apply `ops` to the crate configured by `setup` and to the reference, and compare.
///
/// # Errors
///
/// The first [`Divergence`], as for [`check`].
pub fn check_with(ops: &[Op], setup: &Setup) -> Result<Report, Divergence> {
    let mut run = Run::new(setup).map_err(|message| Divergence {
        step: 0,
        op: None,
        message,
    })?;
    for (step, op) in ops.iter().enumerate() {
        let before = run.disk.stats();
        run.clock.set(step as u64 + 1);
        let result = run.apply(op);
        // A power loss replaces the disk; the counters carry over to the new one.
        let after = run.disk.stats();
        run.report
            .syncs_per_step
            .push(after.syncs.saturating_sub(before.syncs));
        run.report.renames += after.renames.saturating_sub(before.renames);
        result
            .and_then(|()| run.check_file_bound())
            .map_err(|message| Divergence {
                step,
                op: Some(op.clone()),
                message,
            })?;
        run.report.steps += 1;
    }
    Ok(run.report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::QueueOp;

    #[test]
    fn abbreviate_shortens_only_long_runs() {
        let big = format!("a{}b", "x".repeat(100));
        assert_eq!(abbreviate(&big), "ax…(100 times)b");
        assert_eq!(abbreviate("aaa"), "aaa");
    }

    #[test]
    fn a_divergence_names_its_step_and_op() {
        let ops = [Op::Queue(QueueOp::Park {
            request: 1,
            line: "a".to_owned(),
        })];
        assert!(check(&ops).is_ok());
        let divergence = Divergence {
            step: 3,
            op: Some(Op::Restart),
            message: "D9 no loss: seq 1 lost".to_owned(),
        };
        assert_eq!(
            divergence.to_string(),
            "step 3 (Restart): D9 no loss: seq 1 lost"
        );
    }
}
