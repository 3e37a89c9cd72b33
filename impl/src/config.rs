//! Limits and switches of a queue.

/// Limits of a queue. Construct with [`Config::default`] and set fields.
///
/// # Example
///
/// ```
/// let mut config = parkline::Config::default();
/// config.failures_max = 5;
/// assert_eq!(config.line_bytes_max, 1 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// After this many failed hand-overs an item moves to the dead letters (D8). At least 1.
    pub failures_max: u32,
    /// The longest line `park` accepts, in bytes. At least 1.
    pub line_bytes_max: usize,
    /// M12: a settle compacts the mirror when the log would be longer than twice the snapshot
    /// of the new state plus this many bytes. Default [`COMPACT_SLACK_BYTES`](crate::COMPACT_SLACK_BYTES)
    /// (64 KiB), so small queues never compact; a smaller value trades more rewrites for a
    /// smaller file (tests use it to make compaction frequent). Any value is valid.
    pub compact_slack_bytes: u64,
    /// A deliberately broken behaviour, for tests that prove the checkers catch it. `None` in
    /// every real use.
    #[cfg(feature = "known-bad")]
    pub known_bad: Option<KnownBad>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            failures_max: 3,
            line_bytes_max: 1 << 20,
            compact_slack_bytes: crate::COMPACT_SLACK_BYTES,
            #[cfg(feature = "known-bad")]
            known_bad: None,
        }
    }
}

impl Config {
    pub(crate) fn is_bad(&self, _bad: KnownBadSwitch) -> bool {
        #[cfg(feature = "known-bad")]
        {
            self.known_bad == Some(_bad)
        }
        #[cfg(not(feature = "known-bad"))]
        {
            false
        }
    }
}

/// Deliberately broken behaviours (cargo feature `known-bad` only), each violating one
/// requirement, so tests can show that the model checker and the differential tests catch it.
///
/// # Example
///
/// ```
/// # #[cfg(feature = "known-bad")] {
/// let mut config = parkline::Config::default();
/// config.known_bad = Some(parkline::KnownBad::PopFront);
/// # }
/// ```
#[cfg(feature = "known-bad")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KnownBad {
    /// `boundary` persists the batch already settled as delivered, so a crash before the
    /// hand-over loses its items (violates D9, D10).
    ClearBeforeHandOver,
    /// `boundary` delivers at most one line per batch (violates D1).
    PopFront,
    /// A recovered batch is handed over with the stored attempt and not marked repeat (violates
    /// D10).
    NoAttemptCounter,
    /// The directory fsync after a create or rename is skipped (violates D16, M5).
    NoDirSync,
}

#[cfg(feature = "known-bad")]
pub(crate) type KnownBadSwitch = KnownBad;

/// Without the feature the switches still exist inside the crate, so the code that checks them
/// compiles the same way; nothing can select them.
#[cfg(not(feature = "known-bad"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum KnownBadSwitch {
    ClearBeforeHandOver,
    PopFront,
    NoAttemptCounter,
    NoDirSync,
}
