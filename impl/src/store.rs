//! A store (spec/mirror.md M16): the directory of a daemon's sessions, one mirror per session,
//! under one lock for the directory, with the sessions' mirror descriptors in one pool of at
//! most `max_open`.
//!
//! The pool is PostgreSQL's virtual file descriptors (`fd.c`) and RocksDB's table cache: a
//! session's queue keeps the same handle for its life, while the descriptor behind it is closed
//! when it is the least recently used idle one and opened again, and checked to be the same
//! file (M8), at the session's next call. An idle session so holds no descriptor, and a daemon's
//! descriptors do not grow with its sessions. A descriptor is only given back to the pool once
//! every write made through it is fsynced, so no fsync goes through another descriptor than its
//! write's (the one the kernel is sure to tell of a failed writeback).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::io::lock::{MirrorLock, Mode};
use crate::io::pool::{Member, Pool, Sessions};
use crate::io::storage::{self, DIR_LOCK, FsStorage};
use crate::queue::figures::{self, Figures};
use crate::queue::{Queue, Stats};
use crate::shared::{SharedQueue, WeakSharedQueue};

/// The file name suffix of a session's mirror in a store: session `s966` is `s966.mirror`.
pub const SESSION_SUFFIX: &str = crate::observe::SESSION_SUFFIX;

/// How many mirror descriptors a store keeps open between calls by default.
pub const MAX_OPEN_DEFAULT: usize = 32;

/// A store's own settings, beside the [`Config`] its sessions' queues use. With the `serde`
/// feature it deserializes from a daemon's config file as `Config` does: a missing field takes
/// its default, an unknown one is refused ([`Store::open_with`] refuses a `max_open` of 0).
///
/// # Example
///
/// ```
/// let options = parkline::StoreOptions::default();
/// assert_eq!(options.max_open, parkline::MAX_OPEN_DEFAULT);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
#[non_exhaustive]
pub struct StoreOptions {
    /// The most session mirror descriptors kept open between calls (M16); at least 1.
    pub max_open: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_open: MAX_OPEN_DEFAULT,
        }
    }
}

/// The directory of a daemon's sessions (M16): opens or creates a session's [`Queue`] by name,
/// lists the sessions, opens them all at start-up, and keeps their mirror descriptors within
/// [`StoreOptions::max_open`].
///
/// It holds an exclusive lock on the directory's lock file `.parkline.lock` for as long as it
/// or any queue it gave out lives, so no [`Queue::open`] of a session in the directory (this
/// process or another) gets in meanwhile, and no store is opened where a single-path handle
/// lives (each takes the lock shared). A session is handed out once at a time: a second
/// [`session`](Store::session) of it, while its queue lives, is `Locked`.
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use parkline::{RequestId, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path())?;
/// let mut s966 = store.session("s966")?;
/// s966.park(RequestId(7), "[r7] done")?;
/// assert!(dir.path().join("s966.mirror").exists());
/// assert_eq!(store.names()?, vec!["s966".to_owned()]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Store {
    shared: Arc<Shared>,
}

/// What the store and every queue it gave out share; the directory's lock is released when the
/// last of them is dropped.
#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    config: Config,
    pool: Arc<Pool>,
    /// The sessions given out, by name, with the id of the queue that holds each.
    members: Mutex<BTreeMap<String, u64>>,
    next_id: AtomicU64,
    dir_fsyncs: AtomicU64,
    /// Directory fsyncs through `dir_file`, the sessions' own and the store's.
    sessions_dir_fsyncs: AtomicU64,
    /// The clock every session opened from now on stamps its times with (D24).
    clock: Mutex<Arc<dyn Clock>>,
    /// The sessions given out shared, which the idle call walks.
    reached: Mutex<Vec<(String, WeakSharedQueue<FsStorage>)>>,
    /// Every session's published figures, and the counters of the sessions' ended lives.
    figures: Mutex<Vec<Weak<Figures>>>,
    retired: Arc<Mutex<Stats>>,
    /// The directory, open for its fsyncs: one descriptor for every session's, so that a
    /// session's fsync of it needs no slot and cannot find the descriptor table full (M16).
    dir_file: fs::File,
    _lock: MirrorLock,
}

impl Shared {
    fn members(&self) -> MutexGuard<'_, BTreeMap<String, u64>> {
        // Every change to the map is one insert or remove, so it stays whole across a panic.
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.clock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn reached(&self) -> MutexGuard<'_, Vec<(String, WeakSharedQueue<FsStorage>)>> {
        // Every change is one push or one `retain`.
        self.reached.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn figures(&self) -> MutexGuard<'_, Vec<Weak<Figures>>> {
        // Every change is one push or one `retain`.
        self.figures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sessions' figures summed: the ended lives' counters, and each live session's last
    /// published stats. No session's lock is taken.
    fn sessions_stats(&self) -> Stats {
        let mut figures = self.figures();
        figures.retain(|weak| weak.strong_count() > 0);
        // Held while the live ones are added: a session that ends meanwhile waits to retire
        // its counters, so none is counted twice.
        let now_ms = self.clock().now_ms();
        let retired = figures::lock(&self.retired);
        let mut sum = retired.clone();
        for live in figures.iter().filter_map(Weak::upgrade) {
            live.add_to(&mut sum, now_ms);
        }
        sum
    }
}

impl Sessions for Shared {
    fn join(self: Arc<Self>, name: &str) -> Result<Member> {
        let mut members = self.members();
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A store MUST give out at most one queue of a session at a time: another request for
        //# it while that queue lives is `Locked`.
        if members.contains_key(name) {
            return Err(Error::new(
                ErrorKind::Locked,
                "the store has given this session's queue out already; one queue per session",
            )
            .with_path(self.dir.join(mirror_name(name))));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        members.insert(name.to_owned(), id);
        drop(members);
        let pool = Arc::clone(&self.pool);
        Ok(Member::new(self, pool, name, id))
    }

    fn leave(&self, name: &str, id: u64) {
        let mut members = self.members();
        if members.get(name) == Some(&id) {
            members.remove(name);
        }
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.sessions_dir_fsyncs.fetch_add(1, Ordering::Relaxed);
        self.dir_file.sync_all()
    }
}

fn mirror_name(name: &str) -> String {
    format!("{name}{SESSION_SUFFIX}")
}

fn session_storage(dir: &Path, name: &str, member: Member) -> FsStorage {
    FsStorage::of_session(dir.to_path_buf(), mirror_name(name), member)
}

/// A store's figures for a daemon's metrics; with the `serde` feature it serializes as a map of
/// its fields, as [`Stats`](crate::queue::Stats) does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct StoreStats {
    /// Sessions whose queue is given out.
    pub sessions_open: usize,
    /// Session descriptors open now, idle in the pool or in a call: at most `descriptors_max`.
    pub descriptors_open: usize,
    /// [`StoreOptions::max_open`].
    pub descriptors_max: usize,
    /// Idle descriptors the pool closed to stay within `max_open`.
    pub evictions: u64,
    /// Mirrors opened again after their descriptor was closed.
    pub reopens: u64,
    /// Calls that waited for a descriptor, every one of the `max_open` in another call.
    pub descriptor_waits: u64,
    /// Directory fsyncs of [`Store::open_all`] and [`Store::start`].
    pub dir_fsyncs: u64,
    /// The sessions' [`Stats`] summed: each live session's as of its last write, with the
    /// counters (fsyncs and their histogram, appends, compactions, requests) of every session
    /// the store gave out since it opened; the gauges (parked, in flight, dead letters, mirror
    /// bytes) summed over the live ones, and the oldest ages and slowest fsync of any.
    pub sessions: Stats,
}

/// What one session's mirror holds, read lock-free (M13) by [`Store::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session's name.
    pub name: String,
    /// The mirror's length in bytes.
    pub bytes: u64,
    /// Whether this store has the session's queue given out.
    pub open: bool,
    /// Lines parked.
    pub parked: usize,
    /// Lines in the batch in flight.
    pub in_flight: usize,
    /// Dead letters.
    pub dead_letters: usize,
}

impl Store {
    /// Opens the store over the existing directory `dir`, with the default options and
    /// [`Config`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another store, or a single-path handle of a mirror in the
    /// directory (this process or another), holds it; [`ErrorKind::Io`] when the directory
    /// cannot be resolved or its lock file opened.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// let again = parkline::Store::open(dir.path());
    /// assert_eq!(again.unwrap_err().kind(), parkline::ErrorKind::Locked);
    /// # drop(store); Ok(()) }
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(dir, StoreOptions::default(), Config::default())
    }

    /// As [`Store::open`], with the store's options and the sessions' [`Config`].
    ///
    /// # Errors
    ///
    /// As [`Store::open`], and [`ErrorKind::InvalidConfig`] for `max_open` 0 or an unusable
    /// config.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut options = parkline::StoreOptions::default();
    /// options.max_open = 8;
    /// let store = parkline::Store::open_with(dir.path(), options, parkline::Config::default())?;
    /// assert_eq!(store.stats().descriptors_max, 8);
    /// # Ok(()) }
    /// ```
    pub fn open_with(
        dir: impl AsRef<Path>,
        options: StoreOptions,
        config: Config,
    ) -> Result<Store> {
        config.validate()?;
        if options.max_open == 0 {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                "max_open must be at least 1: a session's call needs its mirror's descriptor",
            ));
        }
        let given = dir.as_ref();
        let dir = fs::canonicalize(given)
            .map_err(|e| Error::io("cannot resolve the store's directory", e).with_path(given))?;
        let lock_path = dir.join(DIR_LOCK);
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A store MUST take an exclusive lock on the directory's lock file `.parkline.lock`,
        //# held while the store or any queue it gave out lives, and refuse with `Locked`, without
        //# waiting, when another store or a single-path handle holds it.
        let lock = MirrorLock::acquire(&lock_path, Mode::Exclusive).map_err(|refused| {
            storage::lock_error(
                refused,
                &lock_path,
                "a store or a single-path handle of a mirror in it holds this directory",
            )
        })?;
        let dir_file = fs::File::open(&dir)
            .map_err(|e| Error::io("cannot open the store's directory", e).with_path(&dir))?;
        Ok(Store {
            shared: Arc::new(Shared {
                dir,
                config,
                pool: Arc::new(Pool::new(options.max_open)),
                members: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(0),
                dir_fsyncs: AtomicU64::new(0),
                sessions_dir_fsyncs: AtomicU64::new(0),
                clock: Mutex::new(crate::clock::system()),
                reached: Mutex::new(Vec::new()),
                figures: Mutex::new(Vec::new()),
                retired: Arc::new(Mutex::new(Stats::default())),
                dir_file,
                _lock: lock,
            }),
        })
    }

    /// The store's directory, resolved.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// assert_eq!(store.dir(), dir.path().canonicalize()?);
    /// # Ok(()) }
    /// ```
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The queue of session `name` (its mirror `<name>.mirror`): creates the mirror if absent,
    /// otherwise recovers it, as [`Queue::open`] does.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] while a queue of the session from this store lives;
    /// [`ErrorKind::InvalidPath`] for a name M8 refuses, or one with a `/`; otherwise as
    /// [`Queue::open`].
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// let queue = store.session("s1")?;
    /// assert_eq!(store.session("s1").unwrap_err().kind(), parkline::ErrorKind::Locked);
    /// drop(queue);
    /// store.session("s1")?;
    /// # Ok(()) }
    /// ```
    pub fn session(&self, name: &str) -> Result<Queue> {
        self.open_session(name, true)
    }

    fn open_session(&self, name: &str, sync_dir: bool) -> Result<Queue> {
        let path = self.dir().join(mirror_name(name));
        check_session_name(name).map_err(|e| e.with_path(&path))?;
        storage::check_mirror_entry(&path)?;
        let member = Arc::clone(&self.shared).join(name)?;
        let storage = session_storage(self.dir(), name, member);
        let mirror = storage.mirror_name().to_owned();
        let queue = Queue::open_storage(storage, &mirror, self.shared.config.clone(), sync_dir)?;
        let figures = Arc::new(Figures::new(Arc::clone(&self.shared.retired)));
        let mut all = self.shared.figures();
        // The ended sessions' go as a session opens, so the list holds at most the live ones
        // and one.
        all.retain(|weak| weak.strong_count() > 0);
        all.push(Arc::downgrade(&figures));
        drop(all);
        Ok(queue.with_clock(self.clock()).with_figures(figures))
    }

    /// The clock the sessions opened from now on stamp their times with (D24); the system
    /// clock unless set. A session keeps the clock it was opened with.
    pub fn set_clock(&self, clock: Arc<dyn Clock>) {
        *self
            .shared
            .clock
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = clock;
    }

    /// The clock sessions opened now get.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.shared.clock()
    }

    /// Opens every session of the directory (start-up after a restart): each mirror recovered
    /// and fsynced, then the directory fsynced once for all (M10, M16), before any queue is
    /// returned. A session that fails to open is an `Err` in the map; the others open.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the directory cannot be listed or its fsync fails (no queue is
    /// returned then).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{RequestId, Store};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// store.session("a")?.park(RequestId(1), "one")?;
    /// store.session("b")?;
    /// let sessions = store.open_all()?;
    /// assert_eq!(sessions.len(), 2);
    /// assert_eq!(sessions["a"].as_ref().map(|q| q.parked().len()).ok(), Some(1));
    /// # Ok(()) }
    /// ```
    pub fn open_all(&self) -> Result<BTreeMap<String, Result<Queue>>> {
        self.open_many(self.names()?)
    }

    /// Start-up as a daemon runs it: opens every session of the directory and creates each
    /// name of `expected` it does not hold, with one directory fsync for all (M10, M16), and
    /// gives each out shared, reached by the store's [`idle`](Store::idle) call (an
    /// `AsyncQueue` is `AsyncQueue::from` it). A session that fails to open is an `Err` in the
    /// map; the others open.
    ///
    /// # Errors
    ///
    /// As [`Store::open_all`].
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{RequestId, Store};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// store.session("a")?.park(RequestId(1), "one")?;
    /// let sessions = store.start(["b", "c"])?;
    /// assert_eq!(sessions.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    /// assert_eq!(store.stats().dir_fsyncs, 1);
    /// # Ok(()) }
    /// ```
    pub fn start<'a>(
        &self,
        expected: impl IntoIterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, Result<SharedQueue>>> {
        let mut names: BTreeSet<String> = self.names()?.into_iter().collect();
        names.extend(expected.into_iter().map(str::to_owned));
        let opened = self.open_many(names)?;
        Ok(opened
            .into_iter()
            .map(|(name, queue)| {
                let shared = queue.map(|queue| self.reach(&name, queue));
                (name, shared)
            })
            .collect())
    }

    /// Session `name` shared ([`Store::session`] otherwise), reached by the store's
    /// [`idle`](Store::idle) call while a handle of it lives.
    ///
    /// # Errors
    ///
    /// As [`Store::session`].
    pub fn shared_session(&self, name: &str) -> Result<SharedQueue> {
        let queue = self.session(name)?;
        Ok(self.reach(name, queue))
    }

    /// `queue` shared, its handle in the list the idle call walks.
    fn reach(&self, name: &str, queue: Queue) -> SharedQueue {
        let shared = SharedQueue::new(queue);
        self.shared
            .reached()
            .push((name.to_owned(), shared.downgrade()));
        shared
    }

    /// The daemon's tick, one call: the idle call ([`Queue::idle`]) of every session this store
    /// gave out shared ([`Store::start`], [`Store::shared_session`]) that is still held, which
    /// applies its waiting operator requests (M17) and compacts a drained mirror to rest (M12).
    /// Each session's failure is returned beside its name; the others go on.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// let sessions = store.start(["s1"])?;
    /// assert!(store.idle().is_empty());
    /// # drop(sessions); Ok(()) }
    /// ```
    pub fn idle(&self) -> Vec<(String, Error)> {
        let mut live = Vec::new();
        // The dropped ones leave the list as the live ones are taken from it.
        self.shared
            .reached()
            .retain(|(name, weak)| match weak.upgrade() {
                Some(session) => {
                    live.push((name.clone(), session));
                    true
                }
                None => false,
            });
        live.into_iter()
            .filter_map(|(name, session)| session.idle().err().map(|e| (name, e)))
            .collect()
    }

    /// The directory fsyncs made through the store's descriptor of it, the sessions' included
    /// (the tests' view of M16's rule that a session's goes through it).
    #[cfg(test)]
    pub(crate) fn dir_fsyncs_through_the_store(&self) -> u64 {
        self.shared.sessions_dir_fsyncs.load(Ordering::Relaxed)
    }

    /// Opens the sessions `names` (creating those without a mirror) with one directory fsync
    /// for all.
    fn open_many(
        &self,
        names: impl IntoIterator<Item = String>,
    ) -> Result<BTreeMap<String, Result<Queue>>> {
        let mut opened = BTreeMap::new();
        for name in names {
            let queue = self.open_session(&name, false);
            opened.insert(name, queue);
        }
        //= spec/mirror.md#m10-fail-stop
        //# `Store::open_all` MUST instead fsync each mirror it opens, and then the directory once
        //# for all of them, before it returns any queue.
        if opened.values().any(Result::is_ok) {
            let synced = self.shared.sync_dir();
            self.shared.dir_fsyncs.fetch_add(1, Ordering::Relaxed);
            synced.map_err(|e| {
                Error::io("cannot fsync the store's directory", e).with_path(self.dir())
            })?;
        }
        Ok(opened)
    }

    /// The names of the sessions whose mirrors the directory holds, sorted.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the directory cannot be listed.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// assert!(store.names()?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn names(&self) -> Result<Vec<String>> {
        let listing_failed = |e| Error::io("cannot list the store's directory", e);
        let mut names = Vec::new();
        for entry in fs::read_dir(self.dir()).map_err(listing_failed)? {
            let entry = entry.map_err(listing_failed)?;
            let Some(file) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if let Some(name) = file.strip_suffix(SESSION_SUFFIX)
                && check_session_name(name).is_ok()
                && entry.file_type().is_ok_and(|kind| kind.is_file())
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Each session's mirror and what it holds, read without a lock or a write (M13), so a
    /// session whose queue is given out is listed as its file last stood.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the directory cannot be listed; a mirror that cannot be read or
    /// decoded is an `Err` beside its name.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{RequestId, Store};
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path())?;
    /// let mut queue = store.session("s1")?;
    /// queue.park(RequestId(1), "done")?;
    /// let listed = store.list()?;
    /// let info = listed[0].1.as_ref().map_err(|e| e.to_string())?;
    /// assert_eq!((info.name.as_str(), info.parked, info.open), ("s1", 1, true));
    /// # Ok(()) }
    /// ```
    pub fn list(&self) -> Result<Vec<(String, Result<SessionInfo>)>> {
        let members = self.shared.members().clone();
        Ok(self
            .names()?
            .into_iter()
            .map(|name| {
                let info = self.info(&name, members.contains_key(&name));
                (name, info)
            })
            .collect())
    }

    fn info(&self, name: &str, open: bool) -> Result<SessionInfo> {
        let path = self.dir().join(mirror_name(name));
        let _slot = self.shared.pool.acquire();
        let file = crate::io::input::open_read(&path)
            .map_err(|e| Error::io("cannot open the mirror to read it", e).with_path(&path))?;
        let decoded =
            crate::queue::open::decode_read(&path, |each| storage::read_file(&file, each))?
                .ok_or_else(|| Error::io("the mirror vanished", io::ErrorKind::NotFound.into()))?;
        let state = decoded.state;
        Ok(SessionInfo {
            name: name.to_owned(),
            bytes: decoded.valid_len + decoded.torn_len,
            open,
            parked: state.parked.len(),
            in_flight: state.in_flight.as_ref().map_or(0, |b| b.items.len()),
            dead_letters: state.dead_letters.len(),
        })
    }

    /// The store's figures: sessions given out, descriptors open and the pool's work.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = parkline::Store::open(dir.path())?;
    /// let queue = store.session("s1")?;
    /// let stats = store.stats();
    /// assert_eq!((stats.sessions_open, stats.descriptors_open), (1, 1));
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> StoreStats {
        let pool = &self.shared.pool;
        StoreStats {
            sessions_open: self.shared.members().len(),
            descriptors_open: pool.open(),
            descriptors_max: pool.max_open(),
            evictions: pool.evictions(),
            reopens: pool.reopens(),
            descriptor_waits: pool.waits(),
            dir_fsyncs: self.shared.dir_fsyncs.load(Ordering::Relaxed),
            sessions: self.shared.sessions_stats(),
        }
    }
}

/// A session name: M8's rules for the mirror name it makes, and no `/`.
fn check_session_name(name: &str) -> Result<()> {
    let refused = |reason: &str| Err(Error::new(ErrorKind::InvalidPath, reason.to_owned()));
    if name.is_empty() || name == "." || name == ".." {
        return refused("a session name must name a file");
    }
    if name.contains('/') || name.contains('\0') {
        return refused("a session name must not hold '/' or NUL: it is a file name in the store");
    }
    if mirror_name(name).len() + storage::LONGEST_SUFFIX.len() > storage::NAME_BYTES_MAX {
        return refused("the session name is too long for a file name once suffixed");
    }
    storage::check_mirror_name(&mirror_name(name))
}
