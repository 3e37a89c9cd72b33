//! Limits of a queue, and the bounds they must keep.

use crate::error::{Error, ErrorKind, Result};

/// The default of [`Config::compact_slack_bytes`]: the log is compacted when it is longer than
/// twice its snapshot plus this many bytes (M12).
///
/// 4 MiB, the amount of log SQLite lets its write-ahead log reach before it checkpoints (1,000
/// pages of 4 KiB). A compaction costs a temp file, its fsync, a rename and a directory fsync;
/// with 64 KiB (the default until 2026-12-03) every boundary of more than about 240 completion
/// lines paid it, and a 1,000-line boundary cost 2.8x its two fsyncs. At 4 MiB a boundary
/// compacts once per 4 MiB of delivered records, and recovery reads at most 4 MiB more than
/// twice the live state (about 5 ms here, at the recovery bench's 25 ms per 100,000 lines).
pub const COMPACT_SLACK_BYTES: u64 = 4 * 1024 * 1024;

/// The default of [`Config::rest_slack_bytes`]: an idle call (`Queue::idle`) that finds the
/// queue drained compacts when the log is longer than the snapshot plus this many bytes (M12,
/// at rest).
///
/// A drained session's mirror is what a daemon keeps for every idle session and reads whole at
/// each open; the 4 MiB of [`COMPACT_SLACK_BYTES`] would leave it at up to 4 MiB of dead
/// records. 64 KiB keeps it to 16 pages.
pub const REST_SLACK_BYTES: u64 = 64 * 1024;

/// The default of [`Config::delivered_memory`]: how many delivered or discarded requests the
/// mirror remembers (D3).
///
/// A retry after delivery comes from a daemon that lost a park's answer (a crash between the
/// fsync and its own record of it) and parks the line again once it restarts. Between the two,
/// the session delivers at most what it held plus what arrived meanwhile: the session's
/// outstanding delegations, tens in a busy daemon. 256 covers that several times over; each
/// entry is one `done` record of a snapshot, about 90 bytes (docs/performance.md), so a full
/// window adds about 23 KiB to every snapshot, and to the start-up read of each idle session.
pub const DELIVERED_MEMORY: u64 = 256;

/// Limits of a queue. Construct with [`Config::default`] and set fields.
///
/// # Example
///
/// ```
/// let mut config = parkline::Config::default();
/// config.failures_max = 5;
/// assert_eq!(config.line_bytes_max, 1 << 20);
/// ```
///
/// With the `serde` feature, a `Config` deserializes from a daemon's config file: a missing
/// field takes its default, an unknown field is refused (a misspelt limit would otherwise be
/// the default without a word), and the result is [`validate`](Config::validate)d, so a bound
/// not kept fails the deserialization.
#[derive(Clone, Debug, PartialEq, Eq)]
// `remote = "Self"` makes the derive an inherent `Config::deserialize`, which the `Deserialize`
// impl below calls before it validates.
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(remote = "Self", deny_unknown_fields, default)
)]
#[non_exhaustive]
pub struct Config {
    /// After this many failed hand-overs an item moves to the dead letters (D8). At least 1.
    pub failures_max: u32,
    /// A batch is handed over at most this many times without a settle: a recovered batch at
    /// this attempt is closed instead of repeated (D10's repeat bound), so a batch that crashes
    /// the daemon at every life cannot hold the lines behind it for good. At least 1.
    pub repeats_max: u32,
    /// The longest line `park` accepts, in bytes. At least 1.
    pub line_bytes_max: usize,
    /// The most bytes the lines of one `park_all` group may hold together (D22): the group is
    /// one record, read back whole. Default 64 MiB; at least `line_bytes_max`.
    pub group_bytes_max: usize,
    /// M12: a settle compacts the mirror when the log would be longer than twice the snapshot
    /// of the new state plus this many bytes. Default [`COMPACT_SLACK_BYTES`](COMPACT_SLACK_BYTES)
    /// (4 MiB, as SQLite checkpoints its WAL), so a boundary rarely compacts; a smaller value trades more rewrites for a
    /// smaller file (tests use it to make compaction frequent). Any value is valid.
    pub compact_slack_bytes: u64,
    /// M12 at rest: an idle call (`Queue::idle`) that finds nothing parked, in flight or dead
    /// compacts the mirror when the log is longer than the state's snapshot plus this many
    /// bytes. Default [`REST_SLACK_BYTES`](REST_SLACK_BYTES) (64 KiB), so a drained
    /// session's mirror stays small and opens fast; tests use a smaller value to make it
    /// frequent. Any value is valid: it only decides when a compaction is due.
    pub rest_slack_bytes: u64,
    /// D3: how many requests whose lines were settled delivered or discarded the mirror
    /// remembers, so that a retried park of one of them answers how it ended instead of
    /// delivering it again. Default [`DELIVERED_MEMORY`](DELIVERED_MEMORY); 0 remembers
    /// none. A count, not an age: no delivery rule reads the clock. Changing it appends one
    /// record at the next open.
    pub delivered_memory: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            failures_max: 3,
            repeats_max: 3,
            line_bytes_max: 1 << 20,
            group_bytes_max: 64 << 20,
            compact_slack_bytes: COMPACT_SLACK_BYTES,
            rest_slack_bytes: REST_SLACK_BYTES,
            delivered_memory: DELIVERED_MEMORY,
        }
    }
}

impl Config {
    /// Checks the bounds each field documents: `failures_max`, `repeats_max` and
    /// `line_bytes_max` at least 1, `group_bytes_max` at least `line_bytes_max`. The two slacks
    /// have no bound to keep: M12's bounds hold for any value.
    /// `Queue::with_storage` checks them before it opens anything,
    /// and so does a `Config` read with serde (the `serde` feature).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`] naming the first bound not kept.
    ///
    /// # Example
    ///
    /// ```
    /// let mut config = parkline::Config::default();
    /// assert!(config.validate().is_ok());
    /// config.group_bytes_max = config.line_bytes_max - 1;
    /// let err = config.validate().unwrap_err();
    /// assert_eq!(err.kind(), parkline::ErrorKind::InvalidConfig);
    /// ```
    pub fn validate(&self) -> Result<()> {
        let refusal = if self.failures_max == 0 {
            "failures_max must be at least 1"
        } else if self.repeats_max == 0 {
            "repeats_max must be at least 1"
        } else if self.line_bytes_max == 0 {
            "line_bytes_max must be at least 1"
        } else if self.group_bytes_max < self.line_bytes_max {
            "group_bytes_max must be at least line_bytes_max"
        } else {
            return Ok(());
        };
        Err(Error::new(ErrorKind::InvalidConfig, refusal))
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Config {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let config = Config::deserialize(deserializer)?;
        config.validate().map_err(serde::de::Error::custom)?;
        Ok(config)
    }
}
