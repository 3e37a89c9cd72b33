//! The driver: writes the core's records through a [`Storage`], fail-stop.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;

use crate::config::Config;
use crate::engine::core::Core;
use crate::engine::group::{self, Unit};
use crate::error::{Error, ErrorKind, Result};
use crate::histogram::FsyncHistogram;
use crate::io::storage::{FsStorage, Stamp, Storage};
use crate::mirror::{MirrorState, Record};
use crate::observe;
use crate::ops::request as ops;
use crate::types::{Batch, BatchId, Budget, Item, Outcome, Parked, RequestId, Seq, Settlement};

pub(crate) mod figures;
pub(crate) mod open;
mod requests;
pub(crate) mod write;

/// What `poisoned` holds after [`Queue::remove`]: the handle is closed, not failed.
const REMOVED: &str = "removal";

/// The crash-safe queue of one parent session: parks lines durably, hands every parked line over
/// as one batch turn at a boundary, and clears what the daemon settles as delivered.
///
/// Single owner (`&mut self`), synchronous, one per mirror file; see the crate docs for the
/// daemon's loop and for use from async code.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use parkline::{Budget, Outcome, Queue, RequestId};
/// let dir = tempfile::tempdir().map_err(|e| panic!("{e}"))?;
/// let mut queue = Queue::open(dir.path().join("s1.mirror"))?;
/// queue.park(RequestId(1), "r1: done")?;
/// let batch = queue.boundary(Budget(4096))?.expect("one line parked");
/// queue.settle(batch.id, &[Outcome::Delivered])?;
/// assert!(queue.parked().is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Queue<S: Storage = FsStorage> {
    storage: S,
    name: String,
    tmp: String,
    core: Core,
    /// Length of the mirror file as this handle wrote it.
    log_bytes: u64,
    /// Set by the first failed write; every later call fails (M10).
    poisoned: Option<String>,
    /// What this handle did, for [`Queue::stats`].
    stats: Stats,
    /// The time stamped on parks and deaths (D24).
    clock: Arc<dyn Clock>,
    /// The request file as this handle last read it (M17).
    requests: Watch,
    /// Where a store session publishes its stats for the store's sum (M16).
    figures: Option<Arc<figures::Figures>>,
}

/// The request file's stamp when the queue last read it, and when (by its clock): an unchanged
/// stamp younger than [`ops::REREAD_MS`] needs no read.
#[derive(Debug, Default)]
struct Watch {
    stamp: Option<Stamp>,
    read_at: u64,
}

/// Counters of one queue handle, since it was opened, for a daemon's metrics: plain numbers, no
/// dependency. From [`Queue::stats`].
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use parkline::{Config, MemStorage, Queue, RequestId};
/// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
/// queue.park(RequestId(1), "done")?;
/// let stats = queue.stats();
/// // Creating the mirror fsynced its temp file; the park fsynced the mirror.
/// assert_eq!((stats.fsyncs, stats.parked, stats.appends), (2, 1, 1));
/// # Ok(()) }
/// ```
///
/// With the `serde` feature, `Stats` serializes as a map of its fields, each duration a number
/// with its unit in the field's name (`fsync_last_us`, `fsync_max_us`, `oldest_parked_age_ms`,
/// `oldest_dead_age_ms`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Stats {
    /// Records appended to the mirror.
    pub appends: u64,
    /// File fsyncs (of the mirror or its temp file).
    pub fsyncs: u64,
    /// Directory fsyncs.
    pub dir_fsyncs: u64,
    /// How long the last file or directory fsync took.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "fsync_last_us", serialize_with = "units::micros")
    )]
    pub fsync_last: Duration,
    /// How long the slowest file or directory fsync took.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "fsync_max_us", serialize_with = "units::micros")
    )]
    pub fsync_max: Duration,
    /// How long each file or directory fsync took, in fixed buckets: one table for both, as in
    /// `fsync_last` and `fsync_max`, since the caller waits for either and directory fsyncs
    /// (create, compaction, upgrade) are too few for a table of their own.
    pub fsync_durations: FsyncHistogram,
    /// Whole-file rewrites at a settle or redrive (M12).
    pub compactions: u64,
    /// Compactions abandoned because their temp file could not be written or fsynced (a full
    /// disk): the record was appended instead, and the next settle or redrive compacts (M10).
    pub compactions_deferred: u64,
    /// Lines parked now.
    pub parked: usize,
    /// Lines in the batch in flight now.
    pub in_flight: usize,
    /// Dead letters now.
    pub dead_letters: usize,
    /// The mirror's length in bytes as this handle wrote it.
    pub mirror_bytes: u64,
    /// Operator requests applied from the request file (M17).
    pub requests_applied: u64,
    /// Reads of the request file that failed or found it unparsable: none of it was applied
    /// (M17).
    pub requests_unreadable: u64,
    /// How long the oldest live line (parked or in flight) has waited, by the queue's clock
    /// (D24); `None` when none is live, or for a line parked before mirror format 4.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "oldest_parked_age_ms", serialize_with = "units::millis")
    )]
    pub oldest_parked_age: Option<Duration>,
    /// How long ago the first of the dead letters died (D24); `None` when there is none whose
    /// time of death the mirror knows.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "oldest_dead_age_ms", serialize_with = "units::millis")
    )]
    pub oldest_dead_age: Option<Duration>,
}

/// Durations as numbers for a daemon's metrics, the unit in the field's name.
#[cfg(feature = "serde")]
mod units {
    use std::time::Duration;

    pub(super) fn micros<S: serde::Serializer>(d: &Duration, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    pub(super) fn millis<S: serde::Serializer>(
        d: &Option<Duration>,
        out: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => out.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => out.serialize_none(),
        }
    }
}

impl Stats {
    /// Adds `other`'s counters to these (histograms merged, the slowest fsync kept).
    pub(crate) fn absorb_counters(&mut self, other: &Stats) {
        self.appends += other.appends;
        self.fsyncs += other.fsyncs;
        self.dir_fsyncs += other.dir_fsyncs;
        self.fsync_max = self.fsync_max.max(other.fsync_max);
        self.fsync_durations.merge(&other.fsync_durations);
        self.compactions += other.compactions;
        self.compactions_deferred += other.compactions_deferred;
        self.requests_applied += other.requests_applied;
        self.requests_unreadable += other.requests_unreadable;
    }

    /// Adds another session's figures to these: counters and gauges summed, the slowest fsync
    /// kept, the last fsync the latest seen (the ages are the caller's, from their times).
    pub(crate) fn absorb(&mut self, other: &Stats) {
        self.absorb_counters(other);
        self.fsync_last = other.fsync_last;
        self.parked += other.parked;
        self.in_flight += other.in_flight;
        self.dead_letters += other.dead_letters;
        self.mirror_bytes += other.mirror_bytes;
    }
}

impl Queue<FsStorage> {
    /// Opens the mirror file at `path` with the default [`Config`]: creates it if absent,
    /// otherwise recovers its state (a batch persisted but not settled comes back first from the
    /// next [`boundary`](Queue::boundary), as a repeat).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another handle holds the mirror; [`ErrorKind::Corrupt`] when
    /// the file is damaged (it is then left exactly as it was); [`ErrorKind::Io`] when the
    /// directory or file cannot be read or written.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let queue = parkline::Queue::open(dir.path().join("s1.mirror"))?;
    /// assert!(queue.parked().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Queue::open_with(path, Config::default())
    }

    /// As [`Queue::open`], with a given [`Config`].
    ///
    /// # Errors
    ///
    /// As [`Queue::open`], and [`ErrorKind::InvalidConfig`] for an unusable config.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut config = parkline::Config::default();
    /// config.failures_max = 5;
    /// let queue = parkline::Queue::open_with(dir.path().join("s1.mirror"), config)?;
    /// assert_eq!(queue.config().failures_max, 5);
    /// # Ok(()) }
    /// ```
    pub fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Self> {
        let storage = FsStorage::open(path)?;
        let name = storage.mirror_name().to_owned();
        // Held across the open, so that a failed open still holds the lock when it removes the
        // lock file it created (M8).
        let created = storage.created_lock();
        let opened = Queue::with_storage(storage, &name, config);
        if opened.is_err()
            && let Some(created) = created
        {
            created.remove_unless_mirror();
        }
        opened
    }

    /// Reopens the mirror in place, with the same [`Config`]: releases this handle's lock and
    /// files, then opens the mirror again and recovers what it kept (M10). The way on after
    /// [`ErrorKind::Poisoned`], without replacing the handle the daemon shares.
    ///
    /// # Errors
    ///
    /// As [`Queue::open`]. The lock is released before the open, so another process may take it
    /// in between ([`ErrorKind::Locked`]); after a failed reopen the handle refuses every call
    /// with `Poisoned`, and `reopen` may be called again.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{Queue, RequestId};
    /// let dir = tempfile::tempdir()?;
    /// let mut queue = Queue::open(dir.path().join("s1.mirror"))?;
    /// queue.park(RequestId(1), "done")?;
    /// queue.reopen()?; // as after a Poisoned error
    /// assert_eq!(queue.parked().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn reopen(&mut self) -> Result<()> {
        //= spec/mirror.md#m10-fail-stop
        //# `Queue::reopen` MUST release the handle's lock before it opens the mirror again; until a
        //# reopen succeeds the handle MUST refuse every call with `Poisoned`.
        let config = self.core.config.clone();
        if self.poisoned.is_none() {
            self.poisoned = Some("reopen".to_owned());
        }
        self.storage.release();
        // A store's session opens again through its store (M16), any other mirror by its path.
        let storage = self.storage.reopened()?;
        let name = storage.mirror_name().to_owned();
        let created = storage.created_lock();
        let opened = Queue::open_storage(storage, &name, config, true);
        if opened.is_err()
            && let Some(created) = created
        {
            created.remove_unless_mirror();
        }
        let clock = self.clock.clone();
        let figures = self.figures.take();
        let reopened = opened?.with_clock(clock);
        *self = match figures {
            Some(figures) => {
                figures.retire();
                reopened.with_figures(figures)
            }
            None => reopened,
        };
        debug_assert!(!self.is_poisoned());
        Ok(())
    }

    /// Ends the session: removes the mirror, its temp file if any and its lock file, fsyncs the
    /// directory and releases the lock; the handle then refuses every call (`Poisoned`), and a
    /// [`reopen`](Queue::reopen) starts a new, empty mirror. Refuses while lines are parked, in
    /// flight or dead, unless `force` (they are then lost). Another handle on the mirror cannot
    /// exist: this one holds the lock (M8, M15).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotEmpty`] when lines are held and `force` is false (nothing removed, the
    /// handle stays usable); [`ErrorKind::Poisoned`] after an earlier failure (reopen first, to
    /// learn what the mirror holds); [`ErrorKind::Io`] when a removal or the directory fsync
    /// fails (the handle is then poisoned; what was removed is known by looking).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{ErrorKind, Queue, RequestId};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s1.mirror");
    /// let mut queue = Queue::open(&path)?;
    /// queue.park(RequestId(1), "done")?;
    /// assert_eq!(queue.remove(false).unwrap_err().kind(), ErrorKind::NotEmpty);
    /// queue.remove(true)?;
    /// assert!(!path.exists() && !dir.path().join("s1.mirror.lock").exists());
    /// # Ok(()) }
    /// ```
    pub fn remove(&mut self, force: bool) -> Result<()> {
        self.check_poison()?;
        //= spec/mirror.md#m15-removal-at-the-end-of-a-session
        //# `Queue::remove` MUST refuse with `NotEmpty`, removing nothing, while lines are parked,
        //# in flight or dead, unless forced.
        let stats = self.stats();
        if stats.parked + stats.in_flight + stats.dead_letters > 0 && !force {
            return Err(Error::new(
                ErrorKind::NotEmpty,
                format!(
                    "{} parked, {} in flight and {} dead lines would be lost; force to remove them",
                    stats.parked, stats.in_flight, stats.dead_letters
                ),
            )
            .with_path(self.path()));
        }
        //= spec/mirror.md#m15-removal-at-the-end-of-a-session
        //# It MUST remove the temp file, then the mirror, then the lock file, then fsync the
        //# directory, and only then release the lock; a file already gone is not an error.
        let gone_is_fine = |result: io::Result<()>| match result {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        let name = self.name.clone();
        // M17: a command's leftovers go after the mirror: no request can be applied without it.
        let leftovers = [".tmp", ".lock"].map(|suffix| format!("{name}{}{suffix}", ops::SUFFIX));
        let removed = removal_order(&name)
            .iter()
            .chain(&leftovers)
            .try_for_each(|file| gone_is_fine(self.storage.remove(file)))
            .and_then(|()| gone_is_fine(self.storage.remove_lock_file()))
            .and_then(|()| self.storage.sync_dir());
        if let Err(e) = removed {
            return Err(self.poison("removal of the mirror", &name, e));
        }
        self.poisoned = Some(REMOVED.to_owned());
        self.storage.release();
        Ok(())
    }
}

impl<S: Storage> Queue<S> {
    /// Opens the mirror `name` in `storage`: creates it if absent, otherwise recovers it.
    ///
    /// Recovery removes a leftover `<name>.tmp` (an unfinished create or compaction, M5) and cuts
    /// a torn final append (M7), then fsyncs; a damaged file is never written (M11).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] for a damaged file, [`ErrorKind::Io`] when the storage fails,
    /// [`ErrorKind::InvalidConfig`] for an unusable config ([`Config::validate`]).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "s1.mirror", Config::default())?;
    /// queue.park(RequestId(1), "done")?;
    /// let queue = Queue::with_storage(queue.into_storage(), "s1.mirror", Config::default())?;
    /// assert_eq!(queue.parked().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn with_storage(storage: S, name: &str, config: Config) -> Result<Self> {
        Queue::open_storage(storage, name, config, true)
    }

    /// Parks `line` for `request` once the line is durable (D16, M4: one append of O(line) bytes
    /// and one fsync), and answers [`Parked::Held`] with its seq.
    ///
    /// One completion line per request (D3): a park for a request whose line the mirror holds,
    /// parked or in flight, is a retry: the same line answers the seq it already has and writes
    /// nothing. A request whose line was delivered or discarded is remembered (the last
    /// [`Config::delivered_memory`] of them): the same line answers [`Parked::Delivered`] (with
    /// the batch) or [`Parked::Discarded`], writing nothing, so the line is not delivered twice.
    /// So a daemon that got `Io` (the line may or may not have reached the mirror) reopens and
    /// parks again whenever it can, and the line is delivered once. A retry past the window is a
    /// new line.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidLine`] for a line with `\n` or longer than `line_bytes_max` (nothing
    /// written); [`ErrorKind::RequestConflict`] when the mirror holds or remembers another line
    /// for the request, and [`ErrorKind::RequestDead`] when its line is a dead letter (redrive
    /// it; nothing written); [`ErrorKind::Io`] when the append or fsync fails (the queue is then
    /// poisoned and whether the line was kept is known only after reopening);
    /// [`ErrorKind::Poisoned`] after an earlier failure; [`ErrorKind::Exhausted`] when the next
    /// seq is `u64::MAX` (nothing written, the handle stays usable; M6);
    /// [`ErrorKind::Internal`] for a bug in parkline (nothing written, then poisoned).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, ErrorKind, MemStorage, Outcome, Parked, Queue, RequestId, Seq};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert_eq!(queue.park(RequestId(3), "r3 ok")?, Parked::Held(Seq(1)));
    /// assert_eq!(queue.park(RequestId(3), "a\nb").unwrap_err().kind(), ErrorKind::InvalidLine);
    /// let batch = queue.boundary(Budget(100))?.expect("parked");
    /// queue.settle(batch.id, &[Outcome::Delivered])?;
    /// let retry = queue.park(RequestId(3), "r3 ok")?; // its answer was lost: a retry
    /// assert_eq!(retry, Parked::Delivered { seq: Seq(1), batch: batch.id });
    /// # Ok(()) }
    /// ```
    pub fn park(&mut self, request: RequestId, line: &str) -> Result<Parked> {
        //= spec/delivery.md#d16-durable-park
        //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and
        //# the directory fsynced whenever a file was created, renamed or removed on the way.
        let parked = self.park_unit(Unit::one(request, line))?;
        debug_assert_eq!(parked.len(), 1, "a park answers one line");
        Ok(parked[0])
    }

    /// Parks the new lines of `lines`, in order, with consecutive seqs, all or nothing: one record
    /// appended and one fsync whatever the number of lines (D22, M4), and answers each line as
    /// [`park`](Queue::park) would alone: a line the mirror holds its seq, a remembered one how
    /// it ended, a new one the seq it got. A crash during the append keeps all of the new lines
    /// or none (M7: a torn record is cut whole). A slice with no new line writes nothing. So a
    /// group whose answer was lost, and which was partly delivered since, is retried whole.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidLine`] when any line has `\n` or is longer than `line_bytes_max`: the
    /// error names the first such line's index and nothing is written;
    /// [`ErrorKind::RequestConflict`] when the group names a request twice, or the mirror holds
    /// or remembers another line for one of its requests; [`ErrorKind::RequestDead`] when a held
    /// request's line is a dead letter (nothing written); [`ErrorKind::GroupTooLarge`] over
    /// `group_bytes_max`; [`ErrorKind::Exhausted`] when the group's seqs would reach `u64::MAX`
    /// (nothing written, the handle stays usable; M6); [`ErrorKind::Io`] when the append or fsync
    /// fails (then poisoned: reopen to learn whether the group was kept, whole or not at all);
    /// [`ErrorKind::Poisoned`]; [`ErrorKind::Internal`] for a bug in parkline (nothing written,
    /// then poisoned).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, ErrorKind, MemStorage, Parked, Queue, RequestId, Seq};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// let parked = queue.park_all(&[(RequestId(1), "r1 ok"), (RequestId(2), "r2 ok")])?;
    /// assert_eq!(parked, [Parked::Held(Seq(1)), Parked::Held(Seq(2))]);
    /// let bad = queue.park_all(&[(RequestId(3), "r3 ok"), (RequestId(4), "a\nb")]);
    /// assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidLine);
    /// assert_eq!(queue.parked().len(), 2); // the bad group parked nothing
    /// # Ok(()) }
    /// ```
    pub fn park_all(&mut self, lines: &[(RequestId, &str)]) -> Result<Vec<Parked>> {
        self.park_unit(Unit::whole(lines))
    }

    /// A group of one unit, through the planner every park goes through (D22); a failed write
    /// is this call's own error.
    fn park_unit(&mut self, unit: Unit) -> Result<Vec<Parked>> {
        self.check_poison()?;
        let units = [unit];
        let (answers, record) = group::plan(&self.core, &units, self.clock.now_ms());
        self.append_checked(record.as_ref())?;
        let [answer] = <[_; 1]>::try_from(answers).unwrap_or_else(|_| unreachable!("one unit"));
        answer
    }

    /// Group commit's write (D22, D3): every unit's answer, in order, for the lines of `units`
    /// parked in one record, one append and one fsync. A unit refused writes nothing and leaves
    /// the others' lines in the record; a failed write or fsync fails every unit that wrote
    /// (the handle is then poisoned, M10).
    pub(crate) fn park_group(&mut self, units: &[Unit]) -> Vec<Result<Vec<Parked>>> {
        if let Err(e) = self.check_poison() {
            return units.iter().map(|_| Err(e.for_member())).collect();
        }
        let (mut answers, record) = group::plan(&self.core, units, self.clock.now_ms());
        debug_assert_eq!(answers.len(), units.len());
        if let Err(e) = self.append_checked(record.as_ref()) {
            // Only the units whose lines the record held wrote; the others' answers stand.
            let first = self.core.state.next_seq;
            for answer in &mut answers {
                if answer.as_ref().is_ok_and(|answers| {
                    answers
                        .iter()
                        .any(|parked| parked.is_held() && parked.seq() >= first)
                }) {
                    *answer = Err(e.for_member());
                }
            }
        }
        answers
    }

    /// Moves the dead letters `seqs` back to the parked list, each at its seq's place, with its
    /// failure count reset to 0 and its hand-over count kept (D21): one record, one fsync.
    /// Returns the seqs moved, in seq order; an empty `seqs` writes nothing. Allowed while a
    /// batch is in flight: the lines join the parked list, not the batch.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotDead`] when a seq is not a dead letter or is named twice (nothing
    /// written, the handle stays usable); [`ErrorKind::Io`] when the append or fsync fails (then
    /// poisoned); [`ErrorKind::Poisoned`]; [`ErrorKind::Internal`] for a bug in parkline.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Outcome, Queue, RequestId, Seq};
    /// let mut config = Config::default();
    /// config.failures_max = 1;
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    /// queue.park(RequestId(1), "r1 ok")?;
    /// let batch = queue.boundary(Budget(100))?.expect("one parked");
    /// queue.settle(batch.id, &[Outcome::Failed])?; // failures_max 1: a dead letter
    /// assert_eq!(queue.redrive(&[Seq(1)])?, vec![Seq(1)]);
    /// let again = queue.boundary(Budget(100))?.expect("redriven");
    /// assert_eq!((again.items[0].failures, again.items[0].handed, again.seen), (0, 2, 1));
    /// # Ok(()) }
    /// ```
    pub fn redrive(&mut self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        self.check_poison()?;
        let step = self.core.redrive(seqs)?;
        if let Some(record) = &step.record {
            self.append_or_compact(record)?;
        }
        Ok(step.value)
    }

    /// As [`Queue::redrive`], for every dead letter.
    ///
    /// # Errors
    ///
    /// As [`Queue::redrive`] (never `NotDead`).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert!(queue.redrive_all()?.is_empty()); // no dead letters: nothing written
    /// # Ok(()) }
    /// ```
    pub fn redrive_all(&mut self) -> Result<Vec<Seq>> {
        self.check_poison()?;
        let step = self.core.redrive_all()?;
        if let Some(record) = &step.record {
            self.append_or_compact(record)?;
        }
        Ok(step.value)
    }

    /// Removes the dead letters `seqs` from the mirror for good (D8): one record, one fsync, or a
    /// compaction (M12). Returns the seqs removed, in seq order; an empty `seqs` writes nothing.
    /// A discarded line is gone: a park for its request is then a new line (D3).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotDead`] when a seq is not a dead letter or is named twice (nothing
    /// written, the handle stays usable); [`ErrorKind::Io`] when the write fails (then
    /// poisoned); [`ErrorKind::Poisoned`]; [`ErrorKind::Internal`] for a bug in parkline.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Outcome, Queue, RequestId, Seq};
    /// let mut config = Config::default();
    /// config.failures_max = 1;
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    /// queue.park(RequestId(1), "r1 ok")?;
    /// let batch = queue.boundary(Budget(100))?.expect("one parked");
    /// queue.settle(batch.id, &[Outcome::Failed])?; // failures_max 1: a dead letter
    /// assert_eq!(queue.discard(&[Seq(1)])?, vec![Seq(1)]);
    /// assert!(queue.dead_letters().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn discard(&mut self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        self.check_poison()?;
        let step = self.core.discard(seqs)?;
        if let Some(record) = &step.record {
            self.append_or_compact(record)?;
        }
        Ok(step.value)
    }

    /// As [`Queue::discard`], for every dead letter.
    ///
    /// # Errors
    ///
    /// As [`Queue::discard`] (never `NotDead`).
    pub fn discard_all(&mut self) -> Result<Vec<Seq>> {
        let seqs: Vec<Seq> = self.core.state.dead_letters.iter().map(|i| i.seq).collect();
        self.discard(&seqs)
    }

    /// The parent's turn ended: returns the next batch to hand over, persisted first (one append,
    /// one fsync), or `None` when nothing is parked.
    ///
    /// A batch recovered from a previous life comes first, as a repeat: same id, items and
    /// remaining, attempt + 1 (D10). Otherwise the batch is the split of every parked line under
    /// `budget` (D1, D11, D12) with attempt 1.
    ///
    /// Before it plans the batch, it applies the operator requests waiting in the session's
    /// request file (`parkline redrive` or `discard` on the live session, M17), as an open and
    /// an [`idle`](Queue::idle) call do: a session with no turn ending gets them from its idle
    /// call (`Store::idle` for a store's sessions).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BatchInFlight`] while a batch of this life is unsettled; [`ErrorKind::Io`]
    /// when the write fails (then poisoned); [`ErrorKind::Poisoned`]; [`ErrorKind::Exhausted`]
    /// when a new batch would need batch id `u64::MAX` or a recovered batch's attempt is
    /// `u32::MAX` (nothing written, the handle stays usable; M6, D10); [`ErrorKind::Internal`]
    /// for a bug in parkline (nothing written, then poisoned).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert!(queue.boundary(Budget(100))?.is_none());
    /// queue.park(RequestId(1), "one")?;
    /// queue.park(RequestId(2), "two")?;
    /// let batch = queue.boundary(Budget(100))?.expect("two parked");
    /// assert_eq!(batch.items.len(), 2);
    /// assert_eq!(batch.remaining, 0);
    /// # Ok(()) }
    /// ```
    pub fn boundary(&mut self, budget: Budget) -> Result<Option<Batch>> {
        let _span = observe::boundary(&self.storage, &self.name, budget.0);
        self.check_poison()?;
        //= spec/delivery.md#d10-repeat-recognisable
        //# `boundary` MUST return a batch only after the batch is durable, and the daemon MUST NOT
        //# hand a batch over before `boundary` returned it; so every batch a parent may have seen
        //# is recoverable.
        //= spec/delivery.md#d16-durable-park
        //# `boundary` and `settle` MUST likewise return only once their record is durable.
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# The holder of the mirror's lock MUST apply each request of the request file whose id
        //# the mirror's window (below) does not hold, in the file's order, when it opens the
        //# mirror (after recovery, before the open returns) and at each `boundary` and idle call
        //# (`Queue::idle`), before it plans the batch or compacts.
        self.take_requests(false)?;
        let now = self.clock.now_ms();
        let mut step = self.core.boundary(budget, now)?;
        if let Some(close @ Record::Close { .. }) = &step.record {
            // D10's repeat bound: the closed batch is durable before the boundary goes on, so a
            // crash after it leaves the lines parked (or dead), never the batch in flight again.
            // The boundary after it is planned first, so that an exhausted counter (M6) refuses
            // the whole boundary and writes nothing.
            let close = close.clone();
            let mut closed = self.core.clone();
            closed.commit(&close);
            closed.boundary(budget, now)?;
            let repeats_max = self.core.config.repeats_max;
            let closing = observe::Closing::of(self.core.state.in_flight.as_ref(), repeats_max);
            self.append_checked(Some(&close))?;
            closing.closed(&self.storage, &self.name);
            step = self.core.boundary(budget, now)?;
        }
        self.append_checked(step.record.as_ref())?;
        if step.value.is_some() {
            // The planned batch is the batch the durable record put in flight (D19's counts
            // included); the differential tests compare both with the reference.
            debug_assert_eq!(step.value.as_ref(), self.core.state.in_flight.as_ref());
            self.core.handed_over();
        }
        Ok(step.value)
    }

    /// Records the outcome of each item of the handed-over batch `batch`, in item order:
    /// delivered items leave the mirror; failed ones stay parked with one more failure, or move to
    /// the dead letters at `failures_max` (D6, D7, D8). One append and one fsync, or, when the log
    /// has grown past twice its live size plus [`Config::compact_slack_bytes`], one snapshot
    /// written through a temp file, fsync, rename and directory fsync instead (M12). A settle
    /// that drains the queue leaves its log to the next [`idle`](Queue::idle) call.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownBatch`] when `batch` is not the batch handed over in this life;
    /// [`ErrorKind::OutcomeCount`] when `outcomes` does not have one entry per item;
    /// [`ErrorKind::Io`] when the write fails (then poisoned: reopen to learn whether the settle
    /// was kept); [`ErrorKind::Poisoned`]; [`ErrorKind::Internal`] for a bug in parkline
    /// (nothing written, then poisoned).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Outcome, Queue, RequestId, Seq};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// queue.park(RequestId(1), "one")?;
    /// queue.park(RequestId(2), "two")?;
    /// let batch = queue.boundary(Budget(100))?.expect("two parked");
    /// let settlement = queue.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
    /// assert_eq!(settlement.delivered, vec![Seq(1)]);
    /// assert_eq!(settlement.failed, vec![Seq(2)]);
    /// assert_eq!(queue.parked()[0].failures, 1);
    /// # Ok(()) }
    /// ```
    pub fn settle(&mut self, batch: BatchId, outcomes: &[Outcome]) -> Result<Settlement> {
        let _span = observe::settle(&self.storage, &self.name, batch.0, outcomes.len());
        self.check_poison()?;
        //= spec/delivery.md#d16-durable-park
        //# `boundary` and `settle` MUST likewise return only once their record is durable.
        let step = self.core.settle(batch, outcomes, self.clock.now_ms())?;
        if let Some(record) = &step.record {
            self.append_or_compact(record)?;
        }
        observe::dead_after_settle(
            &self.storage,
            &self.name,
            &self.core.state,
            &step.value.dead,
        );
        self.core.settled();
        Ok(step.value)
    }

    /// The session is idle (its parent between turns, nothing to hand over): applies the
    /// operator requests waiting in the request file (M17), then, when the queue holds nothing
    /// parked, in flight or dead and its log is longer than its snapshot plus
    /// [`Config::rest_slack_bytes`], writes the snapshot through a temp file, fsync, rename and
    /// directory fsync (M12 at rest). Writes nothing otherwise. Call it when a session has been
    /// idle for a while, off the turn boundary, so that the mirror a start-up reads is small;
    /// a full disk defers the compaction to the next call.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when a write fails (then poisoned); [`ErrorKind::Poisoned`];
    /// [`ErrorKind::Internal`] for a bug in parkline (nothing written, then poisoned).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Outcome, Queue, RequestId};
    /// let mut config = Config::default();
    /// config.rest_slack_bytes = 0;
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    /// queue.park(RequestId(1), "one")?;
    /// let batch = queue.boundary(Budget(100))?.expect("one parked");
    /// queue.settle(batch.id, &[Outcome::Delivered])?;
    /// assert_eq!(queue.stats().compactions, 0);
    /// queue.idle()?;
    /// assert_eq!(queue.stats().compactions, 1);
    /// # Ok(()) }
    /// ```
    pub fn idle(&mut self) -> Result<()> {
        self.check_poison()?;
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# and at each `boundary` and idle call (`Queue::idle`), before it plans the batch or
        //# compacts.
        self.take_requests(false)?;
        self.compact_at_rest()
    }

    /// The operator requests the mirror applied from its request file, oldest first: the newest
    /// [`ops::APPLIED_MEMORY`], each with its answer (M17).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert!(queue.applied_requests().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn applied_requests(&self) -> &std::collections::VecDeque<ops::Applied> {
        &self.core.state.ops
    }

    /// The parked items in seq order, excluding those of the in-flight batch.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// queue.park(RequestId(5), "five")?;
    /// assert_eq!(queue.parked()[0].line, "five");
    /// # Ok(()) }
    /// ```
    pub fn parked(&self) -> &[Item] {
        &self.core.state.parked
    }

    /// The batch persisted and not settled, if any; a batch recovered from a previous life shows
    /// its attempt as stored (the next boundary hands it over with attempt + 1).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// queue.park(RequestId(5), "five")?;
    /// let batch = queue.boundary(Budget(10))?;
    /// assert_eq!(queue.in_flight(), batch.as_ref());
    /// # Ok(()) }
    /// ```
    pub fn in_flight(&self) -> Option<&Batch> {
        self.core.state.in_flight.as_ref()
    }

    /// The dead letters in seq order (D8).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Outcome, Queue, RequestId};
    /// let mut config = Config::default();
    /// config.failures_max = 1;
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    /// queue.park(RequestId(5), "five")?;
    /// let batch = queue.boundary(Budget(10))?.expect("parked");
    /// queue.settle(batch.id, &[Outcome::Failed])?;
    /// assert_eq!(queue.dead_letters()[0].line, "five");
    /// # Ok(()) }
    /// ```
    pub fn dead_letters(&self) -> &[Item] {
        //= spec/delivery.md#d8-dead-letter
        //# MUST be listable (`Queue::dead_letters`, `parkline inspect`),
        &self.core.state.dead_letters
    }

    /// The whole durable state, as the mirror holds it. **Not part of the stable API** (its type
    /// is the file format's, which changes with the format); [`Queue::parked`],
    /// [`Queue::in_flight`] and [`Queue::dead_letters`] are.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, Seq};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert_eq!(queue.state().next_seq, Seq(1));
    /// # Ok(()) }
    /// ```
    #[doc(hidden)]
    pub fn state(&self) -> &MirrorState {
        &self.core.state
    }

    /// The config the queue was opened with.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert_eq!(queue.config().failures_max, 3);
    /// # Ok(()) }
    /// ```
    pub fn config(&self) -> &Config {
        &self.core.config
    }

    /// The mirror file as errors name it.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert_eq!(queue.path(), std::path::Path::new("m"));
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> PathBuf {
        self.storage.path(&self.name)
    }

    /// The line the mirror holds for `request` (parked, in flight or dead), if any: what a
    /// daemon that does not know whether an earlier `park` reached the mirror can ask (D3). A
    /// line that was delivered and settled is no longer held.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, RequestId, Seq};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// queue.park(RequestId(7), "r7 done")?;
    /// assert_eq!(queue.find(RequestId(7)).map(|item| item.seq), Some(Seq(1)));
    /// assert!(queue.find(RequestId(8)).is_none());
    /// # Ok(()) }
    /// ```
    pub fn find(&self, request: RequestId) -> Option<&Item> {
        self.core.find(request)
    }

    /// This handle's counters since it was opened (fsyncs and their durations, appends,
    /// compactions) and the queue's sizes now.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Budget, Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// queue.park(RequestId(1), "one")?;
    /// queue.boundary(Budget(100))?;
    /// let stats = queue.stats();
    /// assert_eq!((stats.parked, stats.in_flight, stats.appends), (0, 1, 2));
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> Stats {
        let now_ms = self.clock.now_ms();
        let [parked_at, died_at] = self.oldest();
        Stats {
            oldest_parked_age: parked_at.map(|at| crate::clock::age(now_ms, at)),
            oldest_dead_age: died_at.map(|at| crate::clock::age(now_ms, at)),
            ..self.stats_untimed()
        }
    }

    /// The stats without the ages, which a reader tells from [`Queue::oldest`] by its clock.
    fn stats_untimed(&self) -> Stats {
        let state = &self.core.state;
        Stats {
            parked: state.parked.len(),
            in_flight: state
                .in_flight
                .as_ref()
                .map_or(0, |batch| batch.items.len()),
            dead_letters: state.dead_letters.len(),
            mirror_bytes: self.log_bytes,
            oldest_parked_age: None,
            oldest_dead_age: None,
            ..self.stats.clone()
        }
    }

    /// D24: when the oldest live line was parked and when the first dead letter died.
    fn oldest(&self) -> figures::Oldest {
        [self.oldest_parked_at(), self.oldest_died_at()]
    }

    /// D24: when the live line with the lowest seq (parked or in flight) was parked, the oldest
    /// one unless the clock went back; `None` when no line is live or the mirror has no time for
    /// it.
    fn oldest_parked_at(&self) -> Option<u64> {
        let state = &self.core.state;
        let in_flight = state
            .in_flight
            .as_ref()
            .and_then(|batch| batch.items.first());
        let oldest = match (state.parked.first(), in_flight) {
            (Some(parked), Some(flying)) => Some(if parked.seq < flying.seq {
                parked
            } else {
                flying
            }),
            (one, other) => one.or(other),
        };
        oldest?.parked_at
    }

    /// D24: when the first of the dead letters died, among those whose time the mirror knows:
    /// one pass over the dead letters, which are few.
    fn oldest_died_at(&self) -> Option<u64> {
        let state = &self.core.state;
        state.dead_letters.iter().filter_map(Item::died_at).min()
    }

    /// The handle with `clock` for the times it records from now on (D24); the system clock
    /// unless given another. A test gives a clock it controls.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Clock, Config, MemStorage, Queue, RequestId};
    /// #[derive(Debug)]
    /// struct Fixed(u64);
    /// impl Clock for Fixed {
    ///     fn now_ms(&self) -> u64 {
    ///         self.0
    ///     }
    /// }
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// let mut queue = queue.with_clock(std::sync::Arc::new(Fixed(5_000)));
    /// queue.park(RequestId(1), "done")?;
    /// assert_eq!(queue.parked()[0].parked_at(), Some(5_000));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// A store session's queue, publishing its stats to `figures` after every write.
    pub(crate) fn with_figures(mut self, figures: Arc<figures::Figures>) -> Self {
        self.figures = Some(figures);
        self.publish();
        self
    }

    /// Publishes the stats for the store's sum, if a store session.
    pub(super) fn publish(&self) {
        if let Some(figures) = &self.figures {
            figures.publish(self.stats_untimed(), self.oldest());
        }
    }

    /// The clock this handle stamps times with (D24).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// True after a failed write: every call fails until the queue is reopened (M10).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert!(!queue.is_poisoned());
    /// # Ok(()) }
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// The storage, for inspection (tests count its fsyncs).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// let before = queue.storage().syncs();
    /// queue.park(RequestId(1), "x")?;
    /// assert_eq!(queue.storage().syncs(), before + 1);
    /// # Ok(()) }
    /// ```
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The mirror's name in its storage.
    pub(crate) fn mirror_name(&self) -> &str {
        &self.name
    }

    /// Gives the storage back (closing the queue; an [`FsStorage`] keeps the lock until dropped).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// assert!(queue.into_storage().file("m").is_some());
    /// # Ok(()) }
    /// ```
    pub fn into_storage(self) -> S {
        self.storage
    }
}

/// The files of the mirror `name` that `Queue::remove` unlinks, in order, before the lock file
/// (M15). The temp file first: with the mirror gone, a complete snapshot in it would be promoted
/// by the next open (M5), bringing the removed session back.
pub(crate) fn removal_order(name: &str) -> [String; 3] {
    // The request file before the mirror: requests left beside no mirror would be applied to
    // the next session of the name, whose seqs start again at 1.
    [
        format!("{name}.tmp"),
        format!("{name}{}", ops::SUFFIX),
        name.to_owned(),
    ]
}
