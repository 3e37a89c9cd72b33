//! The driver: writes the core's records through a [`Storage`], fail-stop.

use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;

use crate::config::Config;
use crate::engine::core::Core;
use crate::engine::group::{self, Unit};
use crate::error::{Error, ErrorKind, Result};
use crate::histogram::FsyncHistogram;
use crate::io::storage::{Entry, FsStorage, Identity, Stamp, Storage};
use crate::mirror::{self, Decoded, LogDecoder, MirrorState, Record};
use crate::observe;
use crate::ops::request as ops;
use crate::types::{
    Batch, BatchId, Budget, Item, Life, Outcome, Parked, RequestId, Seq, Settlement,
};

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
/// With the `serde` feature, `Stats` serializes as a map of its fields (durations as serde
/// writes a `Duration`, `{"secs", "nanos"}`).
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
    pub fsync_last: Duration,
    /// How long the slowest file or directory fsync took.
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
    pub oldest_parked_age: Option<Duration>,
    /// How long ago the first of the dead letters died (D24); `None` when there is none whose
    /// time of death the mirror knows.
    pub oldest_dead_age: Option<Duration>,
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
        *self = opened?.with_clock(clock);
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

    /// [`Queue::with_storage`]; `sync_dir` false leaves the directory fsync of a recovery to
    /// the caller, who makes one for many opens before it hands any queue out (M10).
    pub(crate) fn open_storage(
        mut storage: S,
        name: &str,
        config: Config,
        sync_dir: bool,
    ) -> Result<Self> {
        config.validate()?;
        crate::io::storage::check_mirror_name(name).map_err(|e| e.with_path(storage.path(name)))?;
        let tmp = format!("{name}.tmp");
        let tmp_path = storage.path(&tmp);
        //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
        //# A leftover `<name>.tmp` that is neither a regular file nor a symbolic link MUST fail
        //# the open with `InvalidPath` naming it, touching nothing.
        let leftover = match storage.entry(&tmp) {
            Ok(Some(kind @ (Entry::File | Entry::Link))) => Some(kind),
            Ok(None) => None,
            Ok(Some(_)) => {
                return Err(Error::new(
                    ErrorKind::InvalidPath,
                    "the temp file's name is taken by something that is neither a file nor a \
                     link; move it away",
                )
                .with_path(&tmp_path));
            }
            Err(e) => {
                return Err(
                    Error::io("cannot inspect the leftover temp file", e).with_path(&tmp_path)
                );
            }
        };
        let Some(decoded) = read_mirror(&mut storage, name)? else {
            if let Some(kind) = leftover
                && let Some(took) = promote_leftover(&mut storage, name, &tmp, kind)?
            {
                let mut queue = Queue::open_storage(storage, name, config, sync_dir)?;
                // The promotion's directory fsync came before the open's own: counted, but not
                // the last.
                queue.stats.dir_fsyncs += 1;
                queue.stats.fsync_max = queue.stats.fsync_max.max(took);
                return Ok(queue);
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# **A request names its session's life.** A mirror MUST be created with a fresh life
            //# (`Life::fresh`: 64 random bits), written in its header (M2) and kept by every
            //# compaction.
            let state = MirrorState {
                memory: config.delivered_memory,
                life: Some(Life::fresh()),
                ..MirrorState::default()
            };
            // M17: a request file beside no mirror is left by a session that ended; its seqs
            // are not this one's.
            let stale = format!("{name}{}", ops::SUFFIX);
            match storage.remove(&stale) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    let path = storage.path(&stale);
                    return Err(Error::io("cannot remove a stale request file", e).with_path(&path));
                }
                _ => {}
            }
            let mut queue = Queue::unopened(storage, name, state, 0, config);
            // M5: the mirror appears whole (header and counters) or not at all.
            let bytes = mirror::encode(&queue.core.state);
            if let Err(e) = queue.replace_durable(&bytes) {
                return Err(queue.not_opened("cannot create the mirror", e));
            }
            let (state, bytes) = (&queue.core.state, queue.log_bytes);
            observe::opened(&queue.storage, name, true, mirror::VERSION, state, bytes);
            return Ok(queue);
        };
        if leftover.is_some() {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed
            //# (followed by a directory fsync) — but only after the mirror itself decoded
            //# without error (M11).
            // M5: the temp file never reached its rename, so the mirror is authoritative.
            storage.remove(&tmp).map_err(|e| {
                Error::io("cannot remove the leftover temp file", e).with_path(&tmp_path)
            })?;
        }
        Queue::recover(storage, name, decoded, config, sync_dir)
    }

    /// A handle on `state` that has written nothing yet.
    fn unopened(
        storage: S,
        name: &str,
        state: MirrorState,
        log_bytes: u64,
        config: Config,
    ) -> Self {
        Queue {
            storage,
            name: name.to_owned(),
            tmp: format!("{name}.tmp"),
            core: Core::new(state, config),
            log_bytes,
            poisoned: None,
            stats: Stats::default(),
            clock: crate::clock::system(),
            requests: Watch::default(),
        }
    }

    /// The handle on a mirror that decoded: its torn tail cut (M7), what it read made durable
    /// (M10), an older version rewritten as the current one (M14).
    fn recover(
        storage: S,
        name: &str,
        decoded: Decoded,
        config: Config,
        sync_dir: bool,
    ) -> Result<Self> {
        let path = storage.path(name);
        let io_error = |what: &str, e: io::Error| Error::io(what, e).with_path(&path);
        let version = decoded.version;
        let mut queue = Queue::unopened(storage, name, decoded.state, decoded.valid_len, config);
        if decoded.torn_len > 0 {
            //= spec/mirror.md#m7-torn-final-record
            //# On open, a final segment that does not end in `\n` (after at least a
            //# complete header) is a **torn append**: the reader MUST report it
            //# (`Decoded::torn_len`), and the queue MUST cut the file to the end of the
            //# last complete record and fsync it before writing anything else.
            // M7: the torn tail was never acknowledged; cut it before appending after it.
            queue
                .storage
                .truncate(name, decoded.valid_len)
                .map_err(|e| io_error("cannot cut the torn final record", e))?;
            observe::torn_tail_cut(&queue.storage, name, decoded.valid_len, decoded.torn_len);
        }
        //= spec/mirror.md#m10-fail-stop
        //# `open` of an existing mirror MUST fsync the mirror and then its directory before it
        //# returns, whether or not it changed anything, so that what it read is durable before
        //# the first acknowledgement built on it (an upgrade, M14, does both
        //# through M5).
        // A rename or create whose directory fsync failed before this open, in the same power
        // cycle, is visible here but not yet durable (M10's failure model).
        // An upgrade (below) writes the whole mirror through M5, which makes it durable.
        // Through `timed`, so that `Stats` counts them.
        let rewrite = version < mirror::VERSION;
        if !rewrite {
            queue
                .timed(|storage| storage.sync(name), false)
                .map_err(|e| io_error("cannot fsync the mirror", e))?;
            if sync_dir {
                queue
                    .timed(|storage| storage.sync_dir(), true)
                    .map_err(|e| io_error("cannot fsync the directory", e))?;
            }
        }
        if rewrite {
            //= spec/mirror.md#m2-header-and-version
            //# A writer MUST NOT append records of another version to a file.
            //= spec/mirror.md#m14-upgrade-from-older-versions
            //# `open` of a version 1, 2 or 3 mirror that decodes without error MUST, before it
            //# appends anything, write the current version's snapshot of that state through M5
            //# (temp file, fsync, rename, directory fsync).
            // M14: an older version is rewritten whole as the current one before any
            // record is appended (M2: never a record of another version in one file).
            let mut state = queue.core.state.clone();
            state.memory = queue.core.config.delivered_memory;
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# The open that rewrites a mirror of a version before 4 (M14) MUST give it a fresh
            //# life.
            state.life = Some(Life::fresh());
            queue.core = Core::new(state, queue.core.config.clone());
            let bytes = mirror::encode(&queue.core.state);
            if let Err(e) = queue.replace_durable(&bytes) {
                let doing = format!("cannot upgrade the version {version} mirror");
                return Err(queue.not_opened(&doing, e));
            }
            observe::upgraded(&queue.storage, name, version, mirror::VERSION);
        }
        queue.resize_window()?;
        queue.take_requests(true)?;
        let (state, bytes) = (&queue.core.state, queue.log_bytes);
        observe::opened(&queue.storage, name, false, decoded.version, state, bytes);
        Ok(queue)
    }

    /// M17: applies the requests of the request file that the window does not hold, each as one
    /// durable record. `at_open` reads the file whatever its stamp; a boundary reads it only when
    /// its stamp changed or the last read is [`ops::REREAD_MS`] old. A file that cannot be read or
    /// parsed is counted and reported, never an error: only a failed write of the mirror is.
    fn take_requests(&mut self, at_open: bool) -> Result<()> {
        let name = format!("{}{}", self.name, ops::SUFFIX);
        let now = self.clock.now_ms();
        let stamp = match self.storage.stamp(&name) {
            Ok(Some(stamp)) => stamp,
            Ok(None) => {
                self.requests = Watch::default();
                return Ok(());
            }
            Err(e) => {
                self.requests_unreadable(&name, &e.to_string());
                return Ok(());
            }
        };
        let fresh = now.saturating_sub(self.requests.read_at) <= ops::REREAD_MS;
        if !at_open && self.requests.stamp == Some(stamp) && fresh {
            return Ok(());
        }
        // The stamp before the read: a rewrite after it changes the stamp the next boundary sees.
        self.requests = Watch {
            stamp: Some(stamp),
            read_at: now,
        };
        let entries = match read_request_file(&mut self.storage, &name) {
            Ok(Some(bytes)) => ops::parse(&bytes),
            Ok(None) => return Ok(()),
            Err(why) => Err(why),
        };
        let entries = match entries {
            Ok(entries) => entries,
            Err(why) => {
                self.requests_unreadable(&name, &why);
                return Ok(());
            }
        };
        let named: Vec<&ops::OpId> = entries.iter().filter_map(ops::Entry::id).collect();
        for entry in &entries {
            let known = entry
                .id()
                .is_some_and(|id| ops::applied(&self.core.state.ops, id).is_some());
            if known {
                continue;
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# The holder MUST NOT apply a request that would make the window forget a request
            //# the file still names; it applies the rest once a command has dropped that one.
            let window = &self.core.state.ops;
            if window.len() >= ops::APPLIED_MEMORY
                && window
                    .front()
                    .is_some_and(|oldest| named.contains(&&oldest.id))
            {
                let why = "applying more would make the window forget a request the file still \
                           names; the next command that rewrites the file drops it";
                self.requests_unreadable(&name, why);
                break;
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# It MUST apply a request as one record that both makes the change and names the
            //# request's id, made durable before the next request.
            let Some(record) = self.core.apply_request(entry) else {
                self.requests_unreadable(&name, "a request without a valid id");
                continue;
            };
            self.check_poison()?;
            self.append_or_compact(&record)?;
            self.stats.requests_applied += 1;
            if let Some(applied) = self.core.state.ops.back() {
                observe::request_applied(&self.storage, &self.name, applied);
            }
        }
        Ok(())
    }

    /// M17: the request file `name` could not be used (or not all of it); counted and reported.
    fn requests_unreadable(&mut self, name: &str, reason: &str) {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A request file that cannot be read or parsed MUST NOT stop the queue: none of it is
        //# applied and the failure is reported (tracing, `Stats::requests_unreadable`).
        self.stats.requests_unreadable += 1;
        observe::requests_unreadable(&self.storage, name, reason);
    }

    /// D3: a mirror whose remembered window is not the size the config asks for gets a `next`
    /// record with the new size (the counters as they are), at open: one append and one fsync,
    /// or, since a smaller window shrinks the snapshot, the compaction M12 then makes due.
    fn resize_window(&mut self) -> Result<()> {
        let state = &self.core.state;
        let memory = self.core.config.delivered_memory;
        if state.memory == memory {
            return Ok(());
        }
        let record = Record::Next {
            seq: state.next_seq,
            batch: state.next_batch,
            cap: state.cap,
            memory: Some(memory),
        };
        if let Err(e) = self.append_or_compact(&record) {
            return Err(self.not_opened("cannot resize the remembered window", e));
        }
        debug_assert_eq!(self.core.state.memory, memory);
        Ok(())
    }

    /// A failure of `open` after its handle existed, reworded: the write poisoned a handle that
    /// is never returned, so no queue is there to refuse further work, as the poisoning's
    /// wording would say.
    fn not_opened(&self, doing: &str, e: Error) -> Error {
        let step = self.poisoned.as_deref().unwrap_or("write");
        e.with_context(format!(
            "{doing}: its {step} failed; the mirror was not opened, open it again once the cause \
             is fixed"
        ))
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
        self.check_poison()?;
        //= spec/delivery.md#d16-durable-park
        //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and
        //# the directory fsynced whenever a file was created, renamed or removed on the way.
        let step = self.core.park(request, line, self.clock.now_ms())?;
        self.append_checked(step.record.as_ref())?;
        Ok(step.value)
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
        self.check_poison()?;
        let step = self.core.park_all(lines, self.clock.now_ms())?;
        self.append_checked(step.record.as_ref())?;
        Ok(step.value)
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
        let _span = observe::boundary(budget.0);
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
        //# mirror (after recovery, before the open returns) and at each `boundary`, before it
        //# plans the batch.
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
            closing.closed();
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
    /// has grown past twice its live size plus [`Config::compact_slack_bytes`] (or, when the
    /// settle leaves nothing parked, in flight or dead, past that size plus
    /// [`Config::rest_slack_bytes`]), one snapshot written through a temp file, fsync, rename and
    /// directory fsync instead (M12).
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
        let _span = observe::settle(batch.0, outcomes.len());
        self.check_poison()?;
        //= spec/delivery.md#d16-durable-park
        //# `boundary` and `settle` MUST likewise return only once their record is durable.
        let step = self.core.settle(batch, outcomes, self.clock.now_ms())?;
        if let Some(record) = &step.record {
            self.append_or_compact(record)?;
        }
        observe::dead_after_settle(&self.core.state, &step.value.dead);
        self.core.settled();
        Ok(step.value)
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
        let state = &self.core.state;
        Stats {
            parked: state.parked.len(),
            in_flight: state
                .in_flight
                .as_ref()
                .map_or(0, |batch| batch.items.len()),
            dead_letters: state.dead_letters.len(),
            mirror_bytes: self.log_bytes,
            oldest_parked_age: self.oldest_parked_age(),
            oldest_dead_age: self.oldest_dead_age(),
            ..self.stats.clone()
        }
    }

    /// D24: the age of the live line with the lowest seq (parked or in flight), the oldest one
    /// unless the clock went back; `None` when no line is live or the mirror has no time for it.
    fn oldest_parked_age(&self) -> Option<Duration> {
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
        self.age(oldest?.parked_at?)
    }

    /// D24: the age of the dead letter that died first, among those whose time of death the
    /// mirror knows: one pass over the dead letters, which are few.
    fn oldest_dead_age(&self) -> Option<Duration> {
        let died = self
            .core
            .state
            .dead_letters
            .iter()
            .filter_map(Item::died_at);
        self.age(died.min()?)
    }

    /// How long ago `at` was by the queue's clock; 0 for a time ahead of it (a clock that went
    /// back changes only the ages shown, D24).
    fn age(&self, at: u64) -> Option<Duration> {
        Some(Duration::from_millis(
            self.clock.now_ms().saturating_sub(at),
        ))
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

    fn check_poison(&self) -> Result<()> {
        //= spec/mirror.md#m10-fail-stop
        //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
        //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed
        //# fsync.
        match &self.poisoned {
            None => Ok(()),
            Some(what) if what == REMOVED => Err(Error::new(
                ErrorKind::Poisoned,
                "the mirror was removed by this handle; reopen to start a new one",
            )
            .with_path(self.path())),
            Some(what) => Err(Error::new(
                ErrorKind::Poisoned,
                format!("an earlier {what} failed; reopen the queue to learn what the mirror kept"),
            )
            .with_path(self.path())),
        }
    }

    /// M10: the first failed write poisons the handle; the fsync is never retried.
    fn poison(&mut self, what: &str, name: &str, e: io::Error) -> Error {
        //= spec/delivery.md#d16-durable-park
        //# After a failed write or fsync the handle MUST refuse further work until reopened
        //# (`Poisoned`; see `mirror.md`).
        //= spec/mirror.md#m10-fail-stop
        //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
        //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed
        //# fsync.
        if crate::io::storage::is_reopen_failure(&e) {
            //= spec/mirror.md#m16-a-store-of-sessions
            //# A session whose mirror cannot be opened again after its descriptor was closed
            //# MUST fail the call with `Reopen`, having written nothing, and stay usable.
            return Error::new(
                ErrorKind::Reopen,
                format!("{what} not started: the session's mirror could not be opened again"),
            )
            .with_source(e)
            .with_path(self.storage.path(name));
        }
        observe::poisoned(&self.storage, name, what, &e);
        self.poisoned = Some(what.to_owned());
        Error::io(
            format!("{what} failed; the queue refuses further work until reopened"),
            e,
        )
        .with_path(self.storage.path(name))
    }

    /// The write path of every planned record: checked against the current state, then appended
    /// and fsynced (M4), then applied. The check comes first so that a planning bug is an error
    /// that writes nothing, not a durable record the next open would report as `Corrupt`.
    pub(crate) fn append_checked(&mut self, record: Option<&Record>) -> Result<()> {
        let Some(record) = record else {
            return Ok(());
        };
        self.check_planned(record)?;
        self.append_durable(&mirror::encode_record(record))?;
        self.core.commit(record);
        Ok(())
    }

    /// The write path of a settle, a redrive or a discard (M12): checked, then appended, or,
    /// when a compaction is due ([`Queue::snapshot_due`]), the snapshot of the state after it
    /// written whole instead (M5); then applied. These records have no counterpart in the
    /// snapshot and may shrink it, so each decides.
    fn append_or_compact(&mut self, record: &Record) -> Result<()> {
        self.check_planned(record)?;
        // Encoded once: its length decides, and the same bytes are appended when it does not
        // compact (a 10,000-line settle names 10,000 seqs).
        let encoded = mirror::encode_record(record);
        let grown = self.log_bytes + encoded.len() as u64;
        let floor = self.core.snapshot_bytes_floor_after(record);
        match self.snapshot_due(record, grown, floor) {
            Some(bytes) => self.compact_or_defer(&bytes, &encoded)?,
            None => self.append_durable(&encoded)?,
        }
        self.core.commit_with_floor(record, floor);
        Ok(())
    }

    /// The snapshot of the state after `record` when M12 makes a compaction due, the log with the
    /// record being `grown` bytes and the new state's lines `floor` bytes; `None` when the record
    /// is to be appended.
    fn snapshot_due(&self, record: &Record, grown: u64, floor: u64) -> Option<Vec<u8>> {
        let config = &self.core.config;
        let (slack, rest_slack) = (config.compact_slack_bytes, config.rest_slack_bytes);
        // The floor of the state after the record never exceeds its snapshot, so this skips
        // only records the exact rule below would not compact either, without encoding the
        // state every time. It must be the state after: the state before a settle still holds
        // the batch, whose delivered lines are exactly what makes compaction due.
        //= spec/mirror.md#m12-compaction
        //# (An implementation MAY skip computing the exact snapshot when a lower bound of the new
        //# snapshot's length already shows no compaction is due; parkline uses the bytes of the
        //# lines the new state holds.)
        let over_slack = grown > floor.saturating_mul(2).saturating_add(slack);
        // A drained state holds no line, so only a floor of 0 can be one.
        let may_rest = floor == 0 && grown > rest_slack;
        if !over_slack && !may_rest {
            return None;
        }
        //= spec/mirror.md#m12-compaction
        //# The decision MUST be made on the new state: the state before the settle still holds
        //# the batch, and the batch's delivered lines are exactly what makes compaction due.
        let mut next = state_to_apply(&self.core.state, record);
        next.apply_checked(record);
        let bytes = mirror::encode(&next);
        let snapshot = bytes.len() as u64;
        //= spec/mirror.md#m12-compaction
        //# At a `settle` (and a `redrive`, below), when the log with the new record would be
        //# longer than twice the snapshot of the **new state** (the state after the settle)
        //# plus the slack (`Config::compact_slack_bytes`, default `COMPACT_SLACK_BYTES`, 4
        //# MiB), the queue MUST write that snapshot instead of appending the settle record,
        //# through M5 (temp file, fsync, rename, directory fsync).
        let due = grown > snapshot.saturating_mul(2).saturating_add(slack);
        // A drained session's mirror is read whole by every open while it idles: keep it near
        // its snapshot rather than up to twice it plus 4 MiB.
        //= spec/mirror.md#m12-compaction
        //# At a `settle`, a `redrive` or a `discard` whose new state is drained, when the log
        //# with the new record would be longer than the snapshot of the new state plus the rest
        //# slack (`Config::rest_slack_bytes`, default `REST_SLACK_BYTES`, 64 KiB), the queue
        //# MUST write that snapshot instead of appending the record, through M5, whatever the
        //# rule above decides.
        let due_at_rest = next.is_drained() && grown > snapshot.saturating_add(rest_slack);
        (due || due_at_rest).then_some(bytes)
    }

    /// Writes the snapshot `bytes` through M5, or, when the temp file cannot be written or
    /// fsynced (a full disk), abandons the compaction and appends the record `encoded` instead.
    fn compact_or_defer(&mut self, bytes: &[u8], encoded: &[u8]) -> Result<()> {
        //= spec/mirror.md#m10-fail-stop
        //# A compaction whose temp file cannot be written or fsynced MUST be abandoned without
        //# poisoning the handle: the temp file removed (a failed removal poisons), then the
        //# record appended to the mirror as if no compaction were due.
        let Err((what, e)) = self.write_temp(bytes) else {
            let bytes_before = self.log_bytes;
            self.rename_temp(bytes)?;
            self.stats.compactions += 1;
            observe::compacted(&self.storage, &self.name, bytes_before, self.log_bytes);
            return Ok(());
        };
        let tmp = self.tmp.clone();
        //= spec/mirror.md#m10-fail-stop
        //# Only a full disk (`ENOSPC`, `EDQUOT`) or a full descriptor table (`EMFILE`, `ENFILE`)
        //# defers a compaction; any other failure to write or fsync the temp file MUST poison
        //# the handle.
        if !for_want_of_space(&e) {
            return Err(self.poison(what, &tmp, e));
        }
        // The temp file may hold part of the snapshot; the next compaction must not append to it.
        if let Err(removal) = self.storage.remove(&tmp)
            && removal.kind() != io::ErrorKind::NotFound
        {
            return Err(self.poison(what, &tmp, e));
        }
        self.stats.compactions_deferred += 1;
        observe::compaction_deferred(&self.storage, &self.name, what, &e);
        let len_before = self.log_bytes;
        self.append_durable(encoded)?;
        debug_assert_eq!(self.log_bytes, len_before + encoded.len() as u64);
        Ok(())
    }

    /// A planned record the mirror rules reject poisons the handle: the plan came from a state
    /// this handle can no longer trust, while the file still holds only good records.
    fn check_planned(&mut self, record: &Record) -> Result<()> {
        //= spec/mirror.md#m3-records-and-the-state-transition
        //# The writer MUST check every record it planned against its current state BEFORE appending
        //# it: a record the check rejects is a bug in the planning, which fails the call with
        //# `ErrorKind::Internal`, poisons the handle and writes nothing, so the file never holds a
        //# record the next open would reject as `Corrupt`.
        let Err(reason) = self.core.state.check(record) else {
            return Ok(());
        };
        let what = "check of a planned record";
        observe::poisoned(&self.storage, &self.name, what, &reason);
        self.poisoned = Some(what.to_owned());
        Err(Error::new(
            ErrorKind::Internal,
            format!("planned record rejected by the mirror rules, nothing written: {reason}"),
        )
        .with_path(self.path()))
    }

    /// Appends one checked record, encoded (`bytes`), and fsyncs the mirror (M4).
    fn append_durable(&mut self, bytes: &[u8]) -> Result<()> {
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# The queue MUST consider a write durable only after an `fsync` of the file
        //# (`Storage::sync`),
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# The number of fsyncs of an operation MUST NOT depend on the number of items: a boundary
        //# costs a bounded number of fsyncs whatever the batch size, because fsyncs dominate the
        //# cost and a large backlog is exactly when batching must stay cheap.
        let name = self.name.clone();
        if let Err(e) = self.storage.append(&name, bytes) {
            return Err(self.poison("append", &name, e));
        }
        if let Err(e) = self.timed(|storage| storage.sync(&name), false) {
            return Err(self.poison("fsync", &name, e));
        }
        self.stats.appends += 1;
        self.check_identity()?;
        self.log_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Fails with `Io` and poisons unless the mirror's name still leads to the file this handle
    /// wrote (M8): one `stat` before each acknowledgement.
    fn check_identity(&mut self) -> Result<()> {
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# Before it acknowledges a write, the queue MUST check that the mirror's name still
        //# leads to the file it wrote (device and inode, `Storage::identity`), and otherwise fail
        //# with `Io` and poison the handle (M10).
        let name = self.name.clone();
        let lost = match self.storage.identity(&name) {
            Ok(Identity::Same) => return Ok(()),
            Ok(Identity::Gone) => io::Error::new(
                io::ErrorKind::NotFound,
                "the mirror was unlinked or renamed away (or its directory was) while this handle \
                 had it open",
            ),
            Ok(_) => io::Error::other(
                "the mirror's name leads to another file than the one this handle wrote",
            ),
            Err(e) => e,
        };
        Err(self.poison("identity check", &name, lost))
    }

    /// Runs one fsync (`dir`: of the directory) and counts it and its duration in the stats.
    fn timed(&mut self, sync: impl FnOnce(&mut S) -> io::Result<()>, dir: bool) -> io::Result<()> {
        let start = Instant::now();
        let result = sync(&mut self.storage);
        let took = start.elapsed();
        if dir {
            self.stats.dir_fsyncs += 1;
        } else {
            self.stats.fsyncs += 1;
        }
        self.stats.fsync_last = took;
        self.stats.fsync_max = self.stats.fsync_max.max(took);
        self.stats.fsync_durations.record(took);
        result
    }

    /// Replaces the mirror by `bytes`: temp file, fsync, rename, directory fsync (M5).
    fn replace_durable(&mut self, bytes: &[u8]) -> Result<()> {
        //= spec/delivery.md#d16-durable-park
        //# and the directory fsynced whenever a file was created, renamed or removed on the way.
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# and a create, rename or remove durable only after an `fsync` of the directory
        //# (`Storage::sync_dir`);
        //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
        //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it
        //# MUST: write the complete content to `<name>.tmp` (created with mode 0600), fsync it,
        //# rename it over `<name>`, and fsync the directory; only then is the new file durable.
        if let Err((what, e)) = self.write_temp(bytes) {
            let tmp = self.tmp.clone();
            return Err(self.poison(what, &tmp, e));
        }
        self.rename_temp(bytes)
    }

    /// Writes `bytes` to the temp file and fsyncs it: the half of M5 that touches nothing the
    /// mirror holds.
    fn write_temp(&mut self, bytes: &[u8]) -> std::result::Result<(), (&'static str, io::Error)> {
        let tmp = self.tmp.clone();
        self.storage
            .append(&tmp, bytes)
            .map_err(|e| ("temp file write", e))?;
        self.timed(|storage| storage.sync(&tmp), false)
            .map_err(|e| ("temp file fsync", e))
    }

    /// Renames the written temp file over the mirror and fsyncs the directory: the half of M5
    /// after which the mirror is `bytes`.
    fn rename_temp(&mut self, bytes: &[u8]) -> Result<()> {
        let (name, tmp) = (self.name.clone(), self.tmp.clone());
        if let Err(e) = self.storage.rename(&tmp, &name) {
            return Err(self.poison("rename", &name, e));
        }
        if let Err(e) = self.timed(|storage| storage.sync_dir(), true) {
            return Err(self.poison("directory fsync", &name, e));
        }
        self.check_identity()?;
        self.log_bytes = bytes.len() as u64;
        Ok(())
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

/// The mirror `name` decoded piece by piece as it is read, never held whole; `None` when there
/// is no mirror. The first damaged record stops the reading.
fn read_mirror<S: Storage>(storage: &mut S, name: &str) -> Result<Option<Decoded>> {
    let path = storage.path(name);
    decode_read(&path, |each| storage.read_chunks(name, each))
}

/// Decodes the mirror at `path` as `read` hands it over, piece by piece, to the callback it is
/// given (the file never held whole): `Ok(None)` when `read` found no file. `Queue::open` reads
/// through its storage, a store's listing through a descriptor of its own.
pub(crate) fn decode_read(
    path: &Path,
    read: impl FnOnce(&mut dyn FnMut(&[u8]) -> ControlFlow<()>) -> io::Result<bool>,
) -> Result<Option<Decoded>> {
    let mut decoder = LogDecoder::new();
    let mut damage = None;
    let exists = read(&mut |piece| match decoder.feed(piece) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            damage = Some(e);
            ControlFlow::Break(())
        }
    })
    .map_err(|e| Error::io("cannot read the mirror", e).with_path(path))?;
    if !exists {
        return Ok(None);
    }
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# Anything in the file other than a torn final append (M7) — an empty file, a
    //# missing or torn header, an unknown format or version (M2), a bad checksum (M1),
    //# a JSON error, an unknown record type or field, an impossible record (M3, M6) —
    //# MUST make opening fail with a `Corrupt` error naming the file, the byte offset
    //# and the 1-based number of the bad record (the header is record 1), and the
    //# reason.
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# In that case the queue MUST NOT modify the mirror or its temp file: no
    //# truncation, no "repair", no removal of the temp file; both stay byte for byte as
    //# they were.
    // M11: decode first; a damaged file gets an error and no write at all.
    let decoded = match damage {
        Some(e) => Err(e),
        None => decoder.finish(),
    };
    decoded.map(Some).map_err(|e| e.with_path(path))
}

/// With no mirror, what becomes of a leftover temp file of the kind `with_storage` found (M5):
/// the time its directory fsync took
/// once a complete snapshot that holds something was renamed into the mirror's place and the
/// directory fsynced; `None` once a link, or a file that holds at most the initial state, was
/// removed. A file that holds more but is not a complete snapshot is refused as `Corrupt`,
/// naming both paths and touching nothing.
fn promote_leftover<S: Storage>(
    storage: &mut S,
    name: &str,
    tmp: &str,
    kind: Entry,
) -> Result<Option<Duration>> {
    let tmp_path = storage.path(tmp);
    let io_error = |what: &str, e: io::Error| Error::io(what, e).with_path(&tmp_path);
    let bytes = match kind {
        Entry::File => storage
            .read(tmp)
            .map_err(|e| io_error("cannot read the leftover temp file", e))?,
        _ => None,
    };
    match bytes.as_deref().map(leftover_holds) {
        Some(Leftover::Snapshot) => {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# With no `<name>`, a `<name>.tmp` that is a complete snapshot (the current
            //# version's encoding of the state its records build) of a state other than the
            //# initial one MUST be renamed into the mirror's place and the directory fsynced.
            let promoted = storage.rename(tmp, name).and_then(|()| {
                let start = Instant::now();
                storage.sync_dir().map(|()| start.elapsed())
            });
            return promoted
                .map(Some)
                .map_err(|e| io_error("cannot promote the leftover snapshot", e));
        }
        Some(Leftover::Damaged(reason)) => {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# A `<name>.tmp` beside no `<name>` that holds more than the initial state but is not
            //# a complete snapshot MUST fail the open with `Corrupt` naming both paths, touching
            //# nothing.
            return Err(Error::new(
                ErrorKind::Corrupt,
                format!(
                    "no mirror at {}, and its temp file holds lines but is not a complete \
                     snapshot ({reason}); move it away to start an empty mirror, or keep it to \
                     recover the lines by hand",
                    storage.path(name).display()
                ),
            )
            .with_path(&tmp_path));
        }
        Some(Leftover::Initial) | None => {}
    }
    // M5: an unfinished create (no park was acknowledged before it completed), or a link (never
    // its target). The create that follows fsyncs the directory.
    storage
        .remove(tmp)
        .map_err(|e| io_error("cannot remove the leftover temp file", e))?;
    Ok(None)
}

/// What a leftover temp file beside no mirror holds.
enum Leftover {
    /// At most the initial state: an unfinished create, or a torn header.
    Initial,
    /// A complete snapshot of a state other than the initial one.
    Snapshot,
    /// More than the initial state, but not a complete snapshot: why.
    Damaged(String),
}

fn leftover_holds(bytes: &[u8]) -> Leftover {
    if !bytes.contains(&b'\n') {
        // Not even a whole header: a create cut short.
        return Leftover::Initial;
    }
    match mirror::decode_log(bytes) {
        Err(e) => Leftover::Damaged(e.to_string()),
        Ok(decoded) if decoded.state == MirrorState::default() => Leftover::Initial,
        Ok(decoded) if decoded.torn_len == 0 && mirror::encode(&decoded.state) == bytes => {
            Leftover::Snapshot
        }
        Ok(_) => Leftover::Damaged("its records are not the whole snapshot of their state".into()),
    }
}

/// Whether `e` says the disk or the descriptor table is full: the failures a compaction waits
/// out (M10), where anything else (a directory renamed away, a planted temp file) is a fault.
fn for_want_of_space(e: &io::Error) -> bool {
    use rustix::io::Errno;
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) || [Errno::MFILE, Errno::NFILE]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

/// A copy of `state` that `record` can be applied to, giving the same state as applying it to
/// `state` itself. For a settle, the in-flight lines it delivers are left out of the copy, since
/// applying the settle drops them anyway: the compaction decision of a 10,000-line boundary no
/// longer clones 10,000 lines it is about to discard.
pub(crate) fn state_to_apply(state: &MirrorState, record: &Record) -> MirrorState {
    // D3: a settle's delivered lines join the remembered window, which needs them.
    let Record::Settle { delivered, .. } = record else {
        return state.clone();
    };
    if state.memory > 0 {
        return state.clone();
    }
    let in_flight = state.in_flight.as_ref().map(|batch| {
        // A planned settle lists its seqs in item order (D17): one merge walk.
        let items = crate::engine::core::named_in_order(&batch.items, delivered)
            .filter(|(_, named)| !named)
            .map(|(item, _)| item.clone())
            .collect();
        Batch {
            id: batch.id,
            attempt: batch.attempt,
            items,
            remaining: batch.remaining,
            seen: batch.seen,
        }
    });
    MirrorState {
        parked: state.parked.clone(),
        in_flight,
        dead_letters: state.dead_letters.clone(),
        next_seq: state.next_seq,
        next_batch: state.next_batch,
        cap: state.cap,
        remembered: state.remembered.clone(),
        memory: state.memory,
        ops: state.ops.clone(),
        life: state.life,
    }
}

/// M17: the request file `name`, read as input up to
/// [`REQUEST_FILE_BYTES_MAX`](ops::REQUEST_FILE_BYTES_MAX) bytes; `Ok(None)` when there is none,
/// `Err` with the reason when it cannot be read or is longer.
fn read_request_file<S: Storage>(
    storage: &mut S,
    name: &str,
) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut bytes = Vec::new();
    let mut longer = false;
    let found = storage
        .read_chunks(name, &mut |piece| {
            if bytes.len() + piece.len() > ops::REQUEST_FILE_BYTES_MAX {
                longer = true;
                return ControlFlow::Break(());
            }
            bytes.extend_from_slice(piece);
            ControlFlow::Continue(())
        })
        .map_err(|e| e.to_string())?;
    if longer {
        return Err(format!(
            "longer than the {} bytes the queue reads of a request file",
            ops::REQUEST_FILE_BYTES_MAX
        ));
    }
    Ok(found.then_some(bytes))
}
