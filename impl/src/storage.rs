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

use crate::error::{Error, ErrorKind, Result};
use crate::lock::{MirrorLock, Refused};

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

/// A real directory. Holds an exclusive lock on `<mirror>.lock` for as long as it lives, so a
/// second handle or process opening the same mirror gets [`ErrorKind::Locked`] (M8). Files it
/// creates have mode 0600 (M9). Open file handles are cached, each with its file's device and
/// inode, so [`Storage::identity`] knows the file behind the name; a rename moves the handle
/// with the file. No file is opened through a symbolic link. An append never creates the mirror
/// (it is made whole by rename, M5): an absent mirror was removed under the handle. Any other
/// name (the temp file) is created exclusively, so a file or link someone left there is never
/// written.
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
    // Held for the lock; dropping it releases the lock. `None` once released.
    lock: Option<MirrorLock>,
}

/// A cached descriptor and the identity (device, inode) of the file it was opened on.
#[derive(Debug)]
struct Handle {
    file: File,
    key: (u64, u64),
}

/// Closes `file` on a thread of its own. The last close of a file a rename replaced frees its
/// blocks, and for the mirror a compaction replaces that is most of the compaction: 1.3 ms of
/// 1.8 ms for a 4 MiB mirror (docs/performance.md, "The steady state"). Nothing waits on it: the
/// rename and the directory fsync already made the new file the mirror (M5).
fn close_aside(file: File) {
    // When no thread can be started, the closure is dropped here, and the file closed with it.
    let _ = std::thread::Builder::new()
        .name("parkline-close".to_owned())
        .spawn(move || drop(file));
}

impl FsStorage {
    /// Opens the directory holding the mirror file `mirror` and takes the exclusive lock on the
    /// sibling file `<mirror>.lock` (created with mode 0600 if absent; removed only at a
    /// session's end, or by a [`Queue::open`](crate::Queue::open) that created it and failed
    /// where no mirror exists, M8). The mirror itself is not touched.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another handle (in this or another process) holds the lock;
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
        let lock_path = dir.join(format!("{mirror_name}.lock"));
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# Opening a mirror MUST take an exclusive lock on the sibling file `<name>.lock`, held
        //# for the life of the handle: a POSIX record lock (`fcntl(F_SETLK)`), which belongs to
        //# the process and is not inherited by a child it spawns, together with a table of the
        //# lock files the process holds.
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# A second handle, in the same or another process, MUST get a `Locked` error naming the
        //# lock file, without waiting.
        let lock = MirrorLock::acquire(&lock_path).map_err(|refused| match refused {
            Refused::Locked => {
                crate::observe::lock_refused(&lock_path);
                Error::new(
                    ErrorKind::Locked,
                    "another handle holds this mirror's lock; one queue per mirror",
                )
                .with_path(&lock_path)
            }
            Refused::Io(e) => Error::io("cannot lock the lock file", e).with_path(&lock_path),
        })?;
        Ok(FsStorage {
            dir,
            mirror_name,
            handles: BTreeMap::new(),
            lock: Some(lock),
        })
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
    /// ([`CreatedLock::remove_unless_mirror`], M8).
    pub(crate) fn created_lock(&self) -> Option<CreatedLock> {
        let lock = self.lock.as_ref().filter(|lock| lock.created())?;
        Some(CreatedLock {
            lock: lock.share(),
            dir: self.dir.clone(),
            mirror_name: self.mirror_name.clone(),
        })
    }

    /// Closes every file and releases the lock: the storage is then unusable, and the mirror can
    /// be opened again (`Queue::reopen`).
    pub(crate) fn release(&mut self) {
        self.handles.clear();
        self.lock = None;
    }

    /// Removes the lock file (`Queue::remove`, at a session's end); the lock itself is held until
    /// the storage is dropped or released.
    pub(crate) fn remove_lock_file(&mut self) -> io::Result<()> {
        fs::remove_file(self.dir.join(format!("{}.lock", self.mirror_name)))
    }

    fn handle(&mut self, name: &str) -> io::Result<&mut File> {
        if !self.handles.contains_key(name) {
            let handle = self.open_handle(name)?;
            self.handles.insert(name.to_owned(), handle);
        }
        self.handles
            .get_mut(name)
            .map(|handle| &mut handle.file)
            .ok_or_else(|| io::Error::other("handle vanished"))
    }

    /// Opens `name` for appending, never through a symbolic link: the mirror only if it exists,
    /// any other name only by creating it (M5's temp file, so a leftover or planted file or link
    /// fails the create instead of being written).
    fn open_handle(&self, name: &str) -> io::Result<Handle> {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .append(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        if name != self.mirror_name {
            //= spec/mirror.md#m9-file-mode-0600
            //# Every file the queue creates (mirror, temp file, lock file) MUST be created with
            //# mode 0600 (before the umask).
            options.create_new(true).mode(0o600);
        }
        let file = options.open(self.dir.join(name))?;
        let meta = file.metadata()?;
        Ok(Handle {
            file,
            key: (meta.dev(), meta.ino()),
        })
    }

    /// The identity of the entry `name` in the directory, read without following a link.
    fn entry_key(&self, name: &str) -> io::Result<Option<(u64, u64)>> {
        crate::lock::key_of(&self.dir.join(name))
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

/// The suffixes of the files parkline keeps beside a mirror (M5's temp file, M8's lock file).
pub(crate) const RESERVED_SUFFIXES: [&str; 2] = [".tmp", ".lock"];

/// The longest file name, in bytes, that every common Unix file system takes (`NAME_MAX`).
const NAME_BYTES_MAX: usize = 255;

/// Refuses a mirror name that another mirror's temp or lock file would take (M8).
pub(crate) fn check_mirror_name(name: &str) -> Result<()> {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# A mirror name that ends in `.tmp` or `.lock` MUST be refused with `InvalidPath`: it is the
    //# name of another mirror's temp file (M5) or lock file.
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
    //# A mirror path with no file name, a file name that is not UTF-8, or one longer than
    //# 255 bytes once `.lock` or `.tmp` is added (`NAME_MAX`) MUST be refused with `InvalidPath`,
    //# touching nothing.
    let refused =
        |reason: String| Err(Error::new(ErrorKind::InvalidPath, reason).with_path(mirror));
    let Some(name) = mirror.file_name() else {
        return refused("the mirror path has no file name".to_owned());
    };
    let Some(name) = name.to_str() else {
        return refused("the mirror's file name is not UTF-8".to_owned());
    };
    let longest = name.len() + RESERVED_SUFFIXES.iter().map(|s| s.len()).max().unwrap_or(0);
    if longest > NAME_BYTES_MAX {
        return refused(format!(
            "the mirror's file name has {} bytes; with \".lock\" added it must fit in {NAME_BYTES_MAX}",
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
    let path = dir.join(name);
    let meta = match fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((dir, name.to_owned())),
        Err(e) => return Err(Error::io("cannot inspect the mirror", e).with_path(&path)),
    };
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# Opening a mirror whose path is a symbolic link, is not a regular file, or is a regular file
    //# with more than one name (a hard link) MUST fail with `InvalidPath` and touch nothing.
    let refusal = if meta.file_type().is_symlink() {
        let target = fs::read_link(&path).unwrap_or_default();
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
        Some(reason) => Err(Error::new(ErrorKind::InvalidPath, reason).with_path(&path)),
        None => Ok((dir, name.to_owned())),
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
        let fresh;
        let file = if name == self.mirror_name {
            match self.handle(name) {
                Ok(file) => &*file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            }
        } else {
            let opened = OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(self.dir.join(name));
            fresh = match opened {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            };
            &fresh
        };
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

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.handle(name)?.write_all(bytes)
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        self.handle(name)?.set_len(len)
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        self.handle(name)?.sync_all()
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.dir.join(from), self.dir.join(to))?;
        // The open handle follows the inode, so it now writes to `to`; the old `to` is gone.
        if let Some(replaced) = self.handles.remove(to) {
            close_aside(replaced.file);
        }
        if let Some(file) = self.handles.remove(from) {
            self.handles.insert(to.to_owned(), file);
        }
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.handles.remove(name);
        fs::remove_file(self.dir.join(name))
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        let entry = self.entry_key(name)?;
        Ok(match (entry, self.handles.get(name)) {
            (None, _) => Identity::Gone,
            (Some(_), None) => Identity::Same,
            (Some(key), Some(handle)) if key == handle.key => Identity::Same,
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

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// An in-memory directory with no durability semantics (every write is immediately "durable"),
/// for tests and simulations. Counts the fsyncs asked of it.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use parkline::{Budget, Config, MemStorage, Queue, RequestId};
/// let mut queue = Queue::with_storage(MemStorage::new(), "s1.mirror", Config::default())?;
/// queue.park(RequestId(1), "done")?;
/// let storage = queue.into_storage();
/// assert!(storage.file("s1.mirror").is_some());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemStorage {
    files: BTreeMap<String, Vec<u8>>,
    syncs: u64,
    dir_syncs: u64,
}

impl MemStorage {
    /// An empty directory.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::MemStorage::new().syncs(), 0);
    /// ```
    pub fn new() -> Self {
        MemStorage::default()
    }

    /// The content of `name`, if it exists.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(parkline::MemStorage::new().file("x").is_none());
    /// ```
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// Replaces (or creates) `name` with `bytes`, for tests that prepare a damaged file.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("x", b"abc".to_vec());
    /// assert_eq!(storage.file("x"), Some(&b"abc"[..]));
    /// ```
    pub fn set_file(&mut self, name: &str, bytes: Vec<u8>) {
        self.files.insert(name.to_owned(), bytes);
    }

    /// The names of the files, sorted.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("b", vec![]);
    /// storage.set_file("a", vec![]);
    /// assert_eq!(storage.names(), vec!["a", "b"]);
    /// ```
    pub fn names(&self) -> Vec<&str> {
        self.files.keys().map(String::as_str).collect()
    }

    /// How many file fsyncs were asked for.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::MemStorage::new().syncs(), 0);
    /// ```
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// How many directory fsyncs were asked for.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::MemStorage::new().dir_syncs(), 0);
    /// ```
    pub fn dir_syncs(&self) -> u64 {
        self.dir_syncs
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file {name:?}"))
}

impl Storage for MemStorage {
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool> {
        let Some(bytes) = self.files.get(name) else {
            return Ok(false);
        };
        if !bytes.is_empty() {
            // One piece: the whole file, where it lies.
            let _ = each(bytes);
        }
        Ok(true)
    }

    fn read(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(self.files.get(name).cloned())
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.files
            .entry(name.to_owned())
            .or_default()
            .extend_from_slice(bytes);
        Ok(())
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        let file = self.files.get_mut(name).ok_or_else(|| not_found(name))?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        file.resize(len, 0);
        Ok(())
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        if !self.files.contains_key(name) {
            return Err(not_found(name));
        }
        self.syncs += 1;
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let bytes = self.files.remove(from).ok_or_else(|| not_found(from))?;
        self.files.insert(to.to_owned(), bytes);
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.files
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        self.dir_syncs += 1;
        Ok(())
    }

    // A name here is its content: no handle outlives a rename, so a present name is the file.
    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        Ok(if self.files.contains_key(name) {
            Identity::Same
        } else {
            Identity::Gone
        })
    }

    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        Ok(self.files.contains_key(name).then_some(Entry::File))
    }
}
