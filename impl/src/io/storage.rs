//! The storage boundary: the files of one directory, with explicit durability points.
//!
//! The queue makes durability claims only through [`Storage::sync`] and [`Storage::sync_dir`]
//! (M4): a simulated disk that keeps a live and a durable image can implement this trait and
//! crash the queue at any sync.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::io::lock::{MirrorLock, Mode, Refused};
use crate::io::pool::{Handle, Key, Member, Pool, Slot};

/// The files of one directory, named by plain file names.
///
/// Writes are not durable until [`sync`](Storage::sync) (file data) or
/// [`sync_dir`](Storage::sync_dir) (creates, renames and removes) returns `Ok`.
///
/// # Example
///
/// ```
/// use parkline::{MemStorage, Storage};
/// # fn main() -> std::io::Result<()> {
/// let mut storage = MemStorage::new();
/// storage.append("a", b"hello")?;
/// storage.sync("a")?;
/// assert_eq!(storage.read("a")?, Some(b"hello".to_vec()));
/// # Ok(()) }
/// ```
//= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
//# it makes no other durability assumption, so a simulated disk implementing `Storage` can crash it
//# at any point.
pub trait Storage {
    /// Hands the content of `name` to `each`, from its first byte to its last, in consecutive
    /// pieces of any length but never empty (an empty file calls it never), until the end or
    /// until `each` returns [`ControlFlow::Break`]. `Ok(false)` when there is no such file.
    ///
    /// This is how `Queue::open` reads the mirror: it decodes each piece as it comes, so the
    /// file is never held whole in memory.
    ///
    /// # Errors
    ///
    /// Any I/O error other than "not found"; `each` may then have seen part of the file.
    ///
    /// # Example
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use parkline::{MemStorage, Storage};
    /// # fn main() -> std::io::Result<()> {
    /// let mut storage = MemStorage::new();
    /// storage.append("a", b"hello")?;
    /// let mut read = Vec::new();
    /// let found = storage.read_chunks("a", &mut |piece| {
    ///     read.extend_from_slice(piece);
    ///     ControlFlow::Continue(())
    /// })?;
    /// assert!(found);
    /// assert_eq!(read, b"hello");
    /// assert!(!storage.read_chunks("b", &mut |_| ControlFlow::Break(()))?);
    /// # Ok(()) }
    /// ```
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool>;

    /// The whole content of `name`, or `None` when there is no such file: the pieces of
    /// [`read_chunks`](Storage::read_chunks) gathered.
    ///
    /// # Errors
    ///
    /// Any I/O error other than "not found".
    fn read(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let mut bytes = Vec::new();
        let found = self.read_chunks(name, &mut |piece| {
            bytes.extend_from_slice(piece);
            ControlFlow::Continue(())
        })?;
        Ok(found.then_some(bytes))
    }

    /// Appends `bytes` to `name`, creating it (mode 0600) if absent. Not durable until `sync`
    /// (and `sync_dir` for a created file).
    ///
    /// # Errors
    ///
    /// Any I/O error; the file may then hold any prefix of `bytes`.
    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()>;

    /// Cuts `name` to `len` bytes. Not durable until `sync`.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()>;

    /// Makes the data of `name` durable (fsync).
    ///
    /// # Errors
    ///
    /// Any I/O error. After a failed fsync nothing is known about the file's durable content; the
    /// queue never retries one (M10).
    fn sync(&mut self, name: &str) -> io::Result<()>;

    /// Renames `from` to `to`, atomically replacing `to`. Durable after `sync_dir`.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()>;

    /// Removes `name`. Durable after `sync_dir`.
    ///
    /// # Errors
    ///
    /// Any I/O error, including "not found".
    fn remove(&mut self, name: &str) -> io::Result<()>;

    /// Makes the directory's entries durable (fsync of the directory).
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn sync_dir(&mut self) -> io::Result<()>;

    /// What the directory entry `name` leads to, against the file this storage writes under
    /// that name: [`Identity::Same`] when it leads to that file, [`Identity::Gone`] when no
    /// entry has the name (the file was unlinked or renamed away, or its directory was), and
    /// [`Identity::Replaced`] when it leads to another file. For a name the storage has not
    /// written, the entry alone answers: `Same` when it exists. The queue asks before it
    /// acknowledges a write (M8). Required: a storage that cannot tell has no safe answer.
    ///
    /// # Errors
    ///
    /// Any I/O error other than "not found".
    fn identity(&mut self, name: &str) -> io::Result<Identity>;

    /// What kind of directory entry `name` is, without following a symbolic link: `None` when
    /// there is none. How `Queue::open` finds a leftover temp file (M5), so that a link is
    /// removed, never written through.
    ///
    /// # Errors
    ///
    /// Any I/O error other than "not found".
    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>>;

    /// A stamp of the file `name` from one look at its directory entry, without following a
    /// symbolic link: it differs from an earlier stamp when the file was written or replaced in
    /// between (a real directory's stamp is the device and inode, the length and the
    /// modification and change times). `None` when no entry has the name. How a queue notices
    /// an operator's request file (M17) with one `stat` per boundary. Required: a storage that
    /// cannot tell would hide every request.
    ///
    /// # Errors
    ///
    /// Any I/O error other than "not found".
    fn stamp(&mut self, name: &str) -> io::Result<Option<Stamp>>;

    /// How errors name the file `name`; the default is the plain name.
    fn path(&self, name: &str) -> PathBuf {
        PathBuf::from(name)
    }
}

/// What a directory entry leads to, against the file a storage writes under its name
/// ([`Storage::identity`]).
///
/// # Example
///
/// ```
/// use parkline::{Identity, MemStorage, Storage};
/// # fn main() -> std::io::Result<()> {
/// let mut storage = MemStorage::new();
/// storage.append("a", b"x")?;
/// assert_eq!(storage.identity("a")?, Identity::Same);
/// storage.remove("a")?;
/// assert_eq!(storage.identity("a")?, Identity::Gone);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Identity {
    /// The name leads to the file this storage writes under it.
    Same,
    /// No entry has the name.
    Gone,
    /// The name leads to another file.
    Replaced,
}

/// The kind of a directory entry ([`Storage::entry`]).
///
/// # Example
///
/// ```
/// use parkline::{Entry, MemStorage, Storage};
/// # fn main() -> std::io::Result<()> {
/// let mut storage = MemStorage::new();
/// storage.append("a", b"x")?;
/// assert_eq!(storage.entry("a")?, Some(Entry::File));
/// assert_eq!(storage.entry("b")?, None);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Entry {
    /// A regular file.
    File,
    /// A symbolic link, whatever it points to.
    Link,
    /// Anything else: a directory, a FIFO, a socket, a device.
    Other,
}

/// One look at a file's directory entry ([`Storage::stamp`]): two equal stamps mean the file was
/// not written or replaced between the looks, as far as the storage can tell.
///
/// # Example
///
/// ```
/// use parkline::{MemStorage, Storage};
/// # fn main() -> std::io::Result<()> {
/// let mut storage = MemStorage::new();
/// storage.append("a", b"x")?;
/// let before = storage.stamp("a")?;
/// storage.append("a", b"y")?;
/// assert_ne!(storage.stamp("a")?, before);
/// assert_eq!(storage.stamp("b")?, None);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stamp(pub [u64; 4]);

impl Stamp {
    /// The stamp of a file whose identity is `id` and whose content is `bytes`: for a storage
    /// that holds files in memory, where the content itself is cheap to look at.
    pub fn of_content(id: u64, bytes: &[u8]) -> Stamp {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        Stamp([id, bytes.len() as u64, hasher.finish(), 0])
    }
}

/// A real directory. Holds an exclusive lock on `<mirror>.lock` for as long as it lives, so a
/// second handle or process opening the same mirror gets [`ErrorKind::Locked`] (M8), and a
/// shared lock on the directory's lock file, so that no `Store` takes the
/// directory meanwhile (M16). Files it creates have mode 0600 (M9). Open file handles are
/// cached, each with its file's device and inode, so [`Storage::identity`] knows the file behind
/// the name; a rename moves the handle with the file. No file is opened through a symbolic link.
/// An append never creates the mirror (it is made whole by rename, M5): an absent mirror was
/// removed under the handle. Any other name (the temp file) is created exclusively, so a file or
/// link someone left there is never written.
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let storage = parkline::FsStorage::open(dir.path().join("s1.mirror"))?;
/// assert_eq!(storage.mirror_name(), "s1.mirror");
/// let again = parkline::FsStorage::open(dir.path().join("s1.mirror"));
/// assert_eq!(again.unwrap_err().kind(), parkline::ErrorKind::Locked);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FsStorage {
    dir: PathBuf,
    mirror_name: String,
    handles: BTreeMap<String, Handle>,
    /// The mirror's identity while its descriptor is in a store's pool or closed (M16).
    mirror_key: Option<Key>,
    // Held for the locks; dropping it releases them. `None` once released.
    hold: Option<Hold>,
}

/// What an [`FsStorage`] holds its mirror by.
#[derive(Debug)]
enum Hold {
    /// A single-path handle: the mirror's lock, and a share of the directory's lock (M16).
    Alone {
        mirror: MirrorLock,
        _dir: MirrorLock,
    },
    /// A session of a store, whose lock covers the directory and whose pool keeps the mirror's
    /// descriptor between calls (M16).
    Session(Member),
}

/// Closes `handle` on a thread of its own. The last close of a file a rename replaced frees its
/// blocks, and for the mirror a compaction replaces that is most of the compaction: 1.3 ms of
/// 1.8 ms for a 4 MiB mirror (docs/performance.md, "The steady state"). Nothing waits on it: the
/// rename and the directory fsync already made the new file the mirror (M5).
fn close_aside(handle: Handle) {
    // When no thread can be started, the closure is dropped here, and the file closed with it.
    let _ = std::thread::Builder::new()
        .name("parkline-close".to_owned())
        .spawn(move || drop(handle));
}

impl<S: Storage + ?Sized> crate::observe::Paths for S {
    fn path(&self, name: &str) -> PathBuf {
        Storage::path(self, name)
    }
}

/// The directory's lock file, beside its mirrors: a `Store` locks it exclusive,
/// every single-path handle shared (M16). No mirror derives the name: M8 reserves its stem.
pub(crate) const DIR_LOCK: &str = ".parkline.lock";

/// The mirror name M8 reserves, whose lock file would be [`DIR_LOCK`].
pub(crate) const RESERVED_NAME: &str = ".parkline";

/// A lock refused or failed at `path`, as the error `open` gives.
pub(crate) fn lock_error(refused: Refused, path: &Path, holder: &str) -> Error {
    match refused {
        Refused::Locked => {
            crate::observe::lock_refused(path);
            Error::new(ErrorKind::Locked, holder.to_owned()).with_path(path)
        }
        Refused::Io(e) => Error::io("cannot lock the lock file", e).with_path(path),
    }
}

impl FsStorage {
    /// Opens the directory holding the mirror file `mirror` and takes the exclusive lock on the
    /// sibling file `<mirror>.lock` (created with mode 0600 if absent; removed only at a
    /// session's end, or by a `Queue::open` that created it and failed
    /// where no mirror exists, M8), after a shared lock on the directory's lock file
    /// `.parkline.lock` (M16). The mirror itself is not touched.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another handle (in this or another process) holds the lock,
    /// or a `Store` holds the directory;
    /// [`ErrorKind::InvalidPath`], touching nothing, when the path has no file name, a name that
    /// is not UTF-8 or too long for the file system with `.lock` added, or is a link, a hard
    /// link or not a regular file; [`ErrorKind::Io`] when the directory cannot be resolved or
    /// the lock file cannot be opened.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let storage = parkline::FsStorage::open(dir.path().join("s1.mirror"))?;
    /// assert!(dir.path().join("s1.mirror.lock").exists());
    /// # drop(storage); Ok(()) }
    /// ```
    pub fn open(mirror: impl AsRef<Path>) -> Result<FsStorage> {
        let (dir, mirror_name) = resolve(mirror.as_ref())?;
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A single-path open MUST take a shared lock on the directory's lock file
        //# `.parkline.lock` before the mirror's own lock, and hold both for the life of the
        //# handle.
        let dir_lock_path = dir.join(DIR_LOCK);
        let dir_lock = MirrorLock::acquire(&dir_lock_path, Mode::Shared).map_err(|refused| {
            lock_error(
                refused,
                &dir_lock_path,
                "a store holds this mirror's directory; open the session through it",
            )
        })?;
        let lock_path = dir.join(format!("{mirror_name}.lock"));
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# Opening a mirror MUST take an exclusive lock on the sibling file `<name>.lock`, held
        //# for the life of the handle: a POSIX record lock (`fcntl(F_SETLK)`), which belongs to
        //# the process and is not inherited by a child it spawns, together with a table of the
        //# lock files the process holds.
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# A second handle, in the same or another process, MUST get a `Locked` error naming the
        //# lock file, without waiting.
        let lock = MirrorLock::acquire(&lock_path, Mode::Exclusive).map_err(|refused| {
            lock_error(
                refused,
                &lock_path,
                "another handle holds this mirror's lock; one queue per mirror",
            )
        })?;
        Ok(FsStorage {
            dir,
            mirror_name,
            handles: BTreeMap::new(),
            mirror_key: None,
            hold: Some(Hold::Alone {
                mirror: lock,
                _dir: dir_lock,
            }),
        })
    }

    /// A store session's storage: `dir` is the store's, already resolved and locked.
    pub(crate) fn of_session(dir: PathBuf, mirror_name: String, member: Member) -> FsStorage {
        FsStorage {
            dir,
            mirror_name,
            handles: BTreeMap::new(),
            mirror_key: None,
            hold: Some(Hold::Session(member)),
        }
    }

    /// The mirror's file name inside the directory, as given to [`FsStorage::open`].
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let storage = parkline::FsStorage::open(dir.path().join("x.mirror"))?;
    /// assert_eq!(storage.mirror_name(), "x.mirror");
    /// # Ok(()) }
    /// ```
    pub fn mirror_name(&self) -> &str {
        &self.mirror_name
    }

    /// The directory.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let storage = parkline::FsStorage::open(dir.path().join("x.mirror"))?;
    /// assert_eq!(storage.dir(), dir.path());
    /// # Ok(()) }
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lock this storage took, when its open created the lock file: held by the caller
    /// across an open of the mirror, so that a failed open can remove the file it made
    /// ([`CreatedLock::remove_unless_mirror`], M8). A store session has no lock file.
    pub(crate) fn created_lock(&self) -> Option<CreatedLock> {
        let Some(Hold::Alone { mirror: lock, .. }) = &self.hold else {
            return None;
        };
        lock.created().then(|| CreatedLock {
            lock: lock.share(),
            dir: self.dir.clone(),
            mirror_name: self.mirror_name.clone(),
        })
    }

    /// The same mirror opened again as it was first: through its store for a session, by path
    /// otherwise. Called after [`release`](FsStorage::release).
    pub(crate) fn reopened(&self) -> Result<FsStorage> {
        match &self.hold {
            Some(Hold::Session(member)) => Ok(FsStorage::of_session(
                self.dir.clone(),
                self.mirror_name.clone(),
                member.again()?,
            )),
            _ => FsStorage::open(self.dir.join(&self.mirror_name)),
        }
    }

    /// Closes every file and releases the lock, or the store session: the storage is then
    /// unusable, and the mirror can be opened again (`Queue::reopen`). A session's membership
    /// is kept until the storage is dropped, so that `reopened` can use it.
    pub(crate) fn release(&mut self) {
        self.handles.clear();
        match self.pool() {
            Some((pool, id)) => drop(pool.take(id)),
            None => self.hold = None,
        }
    }

    /// Removes the lock file (`Queue::remove`, at a session's end); the lock itself is held until
    /// the storage is dropped or released. A store session has none.
    pub(crate) fn remove_lock_file(&mut self) -> io::Result<()> {
        if matches!(self.hold, Some(Hold::Session(_))) {
            return Ok(());
        }
        fs::remove_file(self.dir.join(format!("{}.lock", self.mirror_name)))
    }

    /// The store pool this storage's mirror descriptor lives in between calls, if a session.
    fn pool(&self) -> Option<(&Arc<Pool>, u64)> {
        match &self.hold {
            Some(Hold::Session(member)) => Some((member.pool(), member.id())),
            _ => None,
        }
    }

    fn handle(&mut self, name: &str) -> io::Result<&mut File> {
        if !self.handles.contains_key(name) {
            let handle = match self.pool() {
                Some(_) if name == self.mirror_name => self.checkout_mirror()?,
                _ => self.open_handle(name)?,
            };
            self.handles.insert(name.to_owned(), handle);
        }
        self.handles
            .get_mut(name)
            .map(|handle| &mut handle.file)
            .ok_or_else(|| io::Error::other("handle vanished"))
    }

    /// A store session's mirror descriptor: the pool's, or the file opened again and checked to
    /// be the one this storage wrote (M8, M16).
    fn checkout_mirror(&mut self) -> io::Result<Handle> {
        let Some((pool, id)) = self.pool() else {
            return Err(io::Error::other("not a store session"));
        };
        if let Some(handle) = pool.take(id) {
            return Ok(handle);
        }
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A session's next call after its idle descriptor was closed MUST open its
        //# mirror again and check that it is the file the session wrote (M8).
        let reopen = self.mirror_key.is_some();
        let handle = match self.open_handle(&self.mirror_name) {
            Ok(handle) => handle,
            // Gone is M8's identity failure, not a failed reopen.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(e),
            Err(e) if reopen => return Err(reopen_failure(e)),
            Err(e) => return Err(e),
        };
        if self.mirror_key.is_some_and(|key| key != handle.key) {
            return Err(io::Error::other(
                "the mirror's name leads to another file than the one this handle wrote",
            ));
        }
        if reopen && let Some((pool, _)) = self.pool() {
            pool.reopened();
        }
        self.mirror_key = Some(handle.key);
        Ok(handle)
    }

    /// Gives a store session's mirror descriptor back to the pool: only after the fsync of
    /// every write made through it, or a read (M16), so that no write's fsync goes through
    /// another descriptor than the write's.
    fn checkin_mirror(&mut self) {
        let Some(handle) = self.handles.remove(&self.mirror_name) else {
            return;
        };
        if self.pool().is_none() {
            self.handles.insert(self.mirror_name.clone(), handle);
            return;
        }
        self.mirror_key = Some(handle.key);
        if let Some((pool, id)) = self.pool() {
            pool.put(id, handle);
        }
    }

    /// Opens `name` for appending, never through a symbolic link: the mirror only if it exists,
    /// any other name only by creating it (M5's temp file, so a leftover or planted file or link
    /// fails the create instead of being written).
    fn open_handle(&self, name: &str) -> io::Result<Handle> {
        let mut options = OpenOptions::new();
        options.read(true).append(true);
        if name != self.mirror_name {
            //= spec/mirror.md#m9-file-mode-0600
            //# Every file the queue creates (mirror, temp file, lock file) MUST be created with
            //# mode 0600 (before the umask).
            options.create_new(true).mode(0o600);
        }
        // A failed open gives the slot back as it is dropped.
        let slot = self.acquire_slot();
        let (file, meta) =
            crate::io::input::open_with_metadata(&self.dir.join(name), &mut options)?;
        Ok(Handle {
            file,
            key: (meta.dev(), meta.ino()),
            slot,
        })
    }

    /// A store session's slot for a descriptor it is about to open (M16); `None` otherwise.
    fn acquire_slot(&self) -> Option<Slot> {
        let (pool, _) = self.pool()?;
        // The pool's wait ends only because no caller waits while it holds a slot.
        debug_assert!(
            self.handles.is_empty(),
            "a session holds one descriptor of its own at a time"
        );
        Some(pool.acquire())
    }

    /// After a write, fsync or rename of `name` that failed (M10 poisons the handle, so no fsync
    /// of it follows): a store session closes the file's descriptor and gives its slot back, so
    /// that a poisoned session holds none of the pool's while it waits to be reopened (M16).
    fn close_on_failure<T>(&mut self, name: &str, result: io::Result<T>) -> io::Result<T> {
        if result.is_err() && self.pool().is_some() {
            self.handles.remove(name);
        }
        result
    }

    /// The identity of the entry `name` in the directory, read without following a link.
    fn entry_key(&self, name: &str) -> io::Result<Option<(u64, u64)>> {
        crate::io::lock::key_of(&self.dir.join(name))
    }
}

/// A share of the lock of an open that created the lock file (from [`FsStorage::created_lock`]):
/// the lock stays held until this is dropped, even after the storage is.
#[derive(Debug)]
pub(crate) struct CreatedLock {
    lock: MirrorLock,
    dir: PathBuf,
    mirror_name: String,
}

impl CreatedLock {
    /// After a failed open: removes the lock file unless a mirror exists, then releases the lock.
    pub(crate) fn remove_unless_mirror(self) {
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# An open that fails after it created the lock file MUST remove that file, while it still
        //# holds the lock and only when no mirror exists.
        let mirror = self.dir.join(&self.mirror_name);
        if matches!(fs::symlink_metadata(&mirror), Err(e) if e.kind() == io::ErrorKind::NotFound) {
            // The open's own error is what the caller gets; a lock file left behind is only
            // untidy (the next open locks it as it is).
            let lock_path = self.dir.join(format!("{}.lock", self.mirror_name));
            let _ = self.lock.remove_file(&lock_path);
        }
    }
}

/// The suffixes of the files parkline keeps beside a mirror (M5's temp file, M8's lock file,
/// M17's request file).
pub(crate) const RESERVED_SUFFIXES: [&str; 3] = [".tmp", ".lock", ".ops"];

/// The longest suffix parkline adds to a mirror's name: the request file's lock (M17).
pub(crate) const LONGEST_SUFFIX: &str = ".ops.lock";

/// The longest file name, in bytes, that every common Unix file system takes (`NAME_MAX`).
pub(crate) const NAME_BYTES_MAX: usize = 255;

/// Refuses a mirror name that another mirror's temp or lock file would take (M8).
pub(crate) fn check_mirror_name(name: &str) -> Result<()> {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# A mirror name that ends in `.tmp`, `.lock` or `.ops` MUST be refused with `InvalidPath`:
    //# it is the name of another mirror's temp file (M5), lock file or request file (M17).
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# The mirror name `.parkline` MUST be refused with `InvalidPath`: its lock file would be the
    //# directory's (M16).
    if name == RESERVED_NAME {
        return Err(Error::new(
            ErrorKind::InvalidPath,
            format!(
                "the mirror name {RESERVED_NAME:?} is parkline's own: its lock file would be the directory's {DIR_LOCK:?}"
            ),
        ));
    }
    if let Some(suffix) = RESERVED_SUFFIXES.iter().find(|s| name.ends_with(*s)) {
        return Err(Error::new(
            ErrorKind::InvalidPath,
            format!(
                "a mirror name must not end in {suffix:?}: parkline keeps its own files under such names"
            ),
        ));
    }
    Ok(())
}

/// The mirror's directory, resolved once (so that every alias of it derives the same lock and
/// temp names), and its file name, checked (M8).
fn resolve(mirror: &Path) -> Result<(PathBuf, String)> {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# A mirror path with no file name, a file name that is not UTF-8, or one longer than 255
    //# bytes once `.ops.lock` (the longest of parkline's suffixes) is added (`NAME_MAX`) MUST be
    //# refused with `InvalidPath`, touching nothing.
    let refused =
        |reason: String| Err(Error::new(ErrorKind::InvalidPath, reason).with_path(mirror));
    let Some(name) = mirror.file_name() else {
        return refused("the mirror path has no file name".to_owned());
    };
    let Some(name) = name.to_str() else {
        return refused("the mirror's file name is not UTF-8".to_owned());
    };
    if name.len() + LONGEST_SUFFIX.len() > NAME_BYTES_MAX {
        return refused(format!(
            "the mirror's file name has {} bytes; with {LONGEST_SUFFIX:?} added it must fit in {NAME_BYTES_MAX}",
            name.len()
        ));
    }
    check_mirror_name(name).map_err(|e| e.with_path(mirror))?;
    let parent = match mirror.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let dir = fs::canonicalize(parent)
        .map_err(|e| Error::io("cannot resolve the mirror's directory", e).with_path(parent))?;
    check_mirror_entry(&dir.join(name))?;
    Ok((dir, name.to_owned()))
}

/// Refuses a mirror path that is a symbolic link, not a regular file, or a file with more than
/// one name (M8); an absent one is fine (the open creates it). A store checks each session's
/// mirror so too.
pub(crate) fn check_mirror_entry(path: &Path) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("cannot inspect the mirror", e).with_path(path)),
    };
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# Opening a mirror whose path is a symbolic link, is not a regular file, or is a regular file
    //# with more than one name (a hard link) MUST fail with `InvalidPath` and touch nothing.
    let refusal = if meta.file_type().is_symlink() {
        let target = fs::read_link(path).unwrap_or_default();
        Some(format!(
            "the mirror path is a symbolic link (to {}); open the file it names, so that one mirror has one lock",
            target.display()
        ))
    } else if !meta.is_file() {
        Some("the mirror path is not a regular file".to_owned())
    } else if meta.nlink() > 1 {
        Some(format!(
            "the mirror has {} names (hard links); one mirror must have one name, so that it has one lock",
            meta.nlink()
        ))
    } else {
        None
    };
    match refusal {
        Some(reason) => Err(Error::new(ErrorKind::InvalidPath, reason).with_path(path)),
        None => Ok(()),
    }
}

/// The pieces [`FsStorage`] reads a file in: large enough that the system calls cost little
/// against the decoding, small against any mirror worth streaming.
const READ_CHUNK_BYTES: usize = 64 * 1024;

impl Storage for FsStorage {
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool> {
        // The mirror is read through the handle that writes it, so what is decoded is the file
        // that is appended to; any other name through a fresh descriptor that must not create.
        if name == self.mirror_name {
            let file = match self.handle(name) {
                Ok(file) => &*file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            };
            let read = read_file(file, each);
            self.checkin_mirror();
            return read;
        }
        let _slot = self.acquire_slot();
        match crate::io::input::open_read(&self.dir.join(name)) {
            Ok(file) => read_file(&file, each),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let written = self.handle(name)?.write_all(bytes);
        self.close_on_failure(name, written)
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        let cut = self.handle(name)?.set_len(len);
        self.close_on_failure(name, cut)
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        let synced = self.handle(name)?.sync_all();
        self.close_on_failure(name, synced)?;
        //= spec/mirror.md#m16-a-store-of-sessions
        //# A session's mirror descriptor MUST NOT be closed between a write through it and that
        //# write's fsync: the fsync goes through the descriptor the write used, which alone is
        //# sure to be told of a failed writeback.
        if name == self.mirror_name {
            self.checkin_mirror();
        }
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let renamed = fs::rename(self.dir.join(from), self.dir.join(to));
        self.close_on_failure(from, renamed)?;
        // The open handle follows the inode, so it now writes to `to`; the old `to` is gone.
        if let Some(replaced) = self.handles.remove(to) {
            close_aside(replaced);
        }
        if to == self.mirror_name
            && let Some((pool, id)) = self.pool()
            && let Some(replaced) = pool.take(id)
        {
            close_aside(replaced);
        }
        if let Some(handle) = self.handles.remove(from) {
            if to == self.mirror_name {
                self.mirror_key = Some(handle.key);
            }
            self.handles.insert(to.to_owned(), handle);
        }
        if to == self.mirror_name {
            // M5: the temp file was fsynced before its rename.
            self.checkin_mirror();
        }
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.handles.remove(name);
        if name == self.mirror_name
            && let Some((pool, id)) = self.pool()
        {
            drop(pool.take(id));
        }
        fs::remove_file(self.dir.join(name))
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        match &self.hold {
            //= spec/mirror.md#m16-a-store-of-sessions
            //# A session's fsync of the directory MUST go through the store's own descriptor of it,
            //# opened with the store: so a store holds at most `max_open` + 2 descriptors in its
            //# directory (with its lock file), and a full descriptor table cannot fail the directory
            //# fsync after a compaction's rename.
            Some(Hold::Session(member)) => member.sync_dir(),
            _ => File::open(&self.dir)?.sync_all(),
        }
    }

    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        let entry = self.entry_key(name)?;
        let known = match self.handles.get(name) {
            Some(handle) => Some(handle.key),
            None if name == self.mirror_name => self.mirror_key,
            None => None,
        };
        Ok(match (entry, known) {
            (None, _) => Identity::Gone,
            (Some(_), None) => Identity::Same,
            (Some(key), Some(known)) if key == known => Identity::Same,
            (Some(_), Some(_)) => Identity::Replaced,
        })
    }

    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        match fs::symlink_metadata(self.dir.join(name)) {
            Ok(meta) if meta.file_type().is_symlink() => Ok(Some(Entry::Link)),
            Ok(meta) if meta.is_file() => Ok(Some(Entry::File)),
            Ok(_) => Ok(Some(Entry::Other)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn stamp(&mut self, name: &str) -> io::Result<Option<Stamp>> {
        // Nanoseconds since the epoch: exact until the year 2554.
        let nanos = |secs: i64, nsec: i64| {
            (secs as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(nsec as u64)
        };
        match fs::symlink_metadata(self.dir.join(name)) {
            Ok(meta) => Ok(Some(Stamp([
                meta.dev().rotate_left(32) ^ meta.ino(),
                meta.size(),
                nanos(meta.mtime(), meta.mtime_nsec()),
                nanos(meta.ctime(), meta.ctime_nsec()),
            ]))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Hands `file`'s content to `each` in pieces of [`READ_CHUNK_BYTES`] (M3's streaming decode).
pub(crate) fn read_file(
    file: &File,
    each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
) -> io::Result<bool> {
    let mut buffer = vec![0; READ_CHUNK_BYTES];
    let mut offset = 0u64;
    loop {
        match file.read_at(&mut buffer, offset) {
            Ok(0) => return Ok(true),
            Ok(n) => {
                offset += n as u64;
                if each(&buffer[..n]).is_break() {
                    return Ok(true);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A store session's mirror that could not be opened again after its idle descriptor was
/// closed: nothing was written, so the queue reports [`ErrorKind::Reopen`] and stays usable.
#[derive(Debug)]
struct ReopenFailed(io::Error);

impl std::fmt::Display for ReopenFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot open the session's mirror again: {}", self.0)
    }
}

impl std::error::Error for ReopenFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

fn reopen_failure(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), ReopenFailed(e))
}

/// Whether `e` is a failed reopen of a store session's idle mirror, before anything was written
/// (M16).
pub(crate) fn is_reopen_failure(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ReopenFailed>())
}
