//! The mirror's lock (M8): a POSIX record lock on `<mirror>.lock`, plus the table of lock files
//! this process holds. The same lock, shared or exclusive, on the directory's lock file is how a
//! `Store` and single-path handles exclude each other (M16).
//!
//! A record lock (`fcntl(F_SETLK)`) belongs to the process: a child forked while it is held does
//! not share it, so a daemon that spawns processes never finds its own mirror locked by one of
//! them (a `flock` is shared by every descriptor of the open file description, a forked child's
//! included, until that child's `exec`). Two properties of record locks need the table, as in
//! SQLite's unix VFS: the kernel does not exclude a second lock taken by the same process, and
//! it releases the process's lock as soon as the process closes any descriptor of the file.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fs::{FlockOperation, fcntl_lock};
use rustix::io::Errno;

/// A file's identity: its device and inode.
type Key = (u64, u64);

/// The lock files this process holds, each with every descriptor of it that parkline opened:
/// closing any one of them would release the record lock, so they close together, when the lock
/// is released.
static HELD: Mutex<BTreeMap<Key, Held>> = Mutex::new(BTreeMap::new());

/// One held lock file: its descriptors, how many [`MirrorLock`]s share the lock, and its mode.
#[derive(Debug)]
struct Held {
    files: Vec<File>,
    shares: usize,
    mode: Mode,
}

/// How a lock file is locked: exclusive (a mirror's lock; a store's lock on its directory) or
/// shared (a single-path handle's lock on its directory's lock file, which many hold at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Exclusive,
    Shared,
}

fn held() -> MutexGuard<'static, BTreeMap<Key, Held>> {
    // The table stays consistent across a panic: every change is one insert or remove.
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why [`MirrorLock::acquire`] did not lock.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Another handle, in this process or another, holds the lock.
    Locked,
    /// The lock file could not be opened, inspected or locked.
    Io(io::Error),
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Refused::Io(e)
    }
}

/// The exclusive lock on one lock file, held until it and every [`share`](MirrorLock::share)
/// of it are dropped.
#[derive(Debug)]
pub(crate) struct MirrorLock {
    key: Key,
    /// Whether the open that took the lock created the lock file.
    created: bool,
}

/// How many times [`MirrorLock::acquire`] opens the lock file again after finding that the file
/// it locked is no longer the one the path names. Each retry means a holder removed the lock file
/// at a session's end (M15) between this open and this lock; a path that keeps changing is being
/// worked on by others, and the open is refused as `Locked`.
const RELOCK_MAX: u32 = 64;

impl MirrorLock {
    /// Takes the lock on `path` (created with mode 0600 if absent) in `mode`, without waiting.
    /// A shared lock this process already holds is shared again; any other lock it holds is
    /// refused, since the kernel would not refuse it within one process.
    pub(crate) fn acquire(path: &Path, mode: Mode) -> Result<MirrorLock, Refused> {
        let mut held = held();
        for _ in 0..RELOCK_MAX {
            if let Some(lock) = try_lock(&mut held, path, mode)? {
                return Ok(lock);
            }
        }
        Err(Refused::Locked)
    }

    /// Whether the open that took this lock created its lock file.
    pub(crate) fn created(&self) -> bool {
        self.created
    }

    /// Another handle of this lock: the lock is released when the last handle is dropped, so
    /// an open that fails can still hold it while it removes the lock file it created (M8).
    pub(crate) fn share(&self) -> MirrorLock {
        if let Some(entry) = held().get_mut(&self.key) {
            entry.shares += 1;
        }
        MirrorLock {
            key: self.key,
            created: self.created,
        }
    }

    /// Removes the lock file at `path` if it is still the file this lock holds; another file
    /// there (made after a removal) belongs to another opener and is left.
    pub(crate) fn remove_file(&self, path: &Path) -> io::Result<()> {
        // The table stays locked, so no other handle of this process opens the file meanwhile.
        let _held = held();
        if key_of(path)? == Some(self.key) {
            std::fs::remove_file(path)?;
        }
        Ok(())
    }
}

/// The identity of what `path` names, without following a link; `None` when nothing does.
pub(crate) fn key_of(path: &Path) -> io::Result<Option<Key>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// One open, lock and check of `path`: `Ok(None)` when the file locked is no longer the one the
/// path names (removed or replaced between the open and the lock), so the caller opens again.
fn try_lock(
    held: &mut BTreeMap<Key, Held>,
    path: &Path,
    mode: Mode,
) -> Result<Option<MirrorLock>, Refused> {
    // Checked by name before any open: opening and closing a descriptor of a lock file this
    // process holds would release its lock.
    let existing = key_of(path)?;
    if let Some(key) = existing
        && let Some(entry) = held.get_mut(&key)
    {
        return share_held(entry, key, mode, None).map(Some);
    }
    // Created exclusively when absent, so the lock knows whether this open made the file.
    let ((file, meta), created) = match open_lock_file(path, existing.is_none()) {
        Ok(file) => (file, existing.is_none()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (open_lock_file(path, false)?, false),
        // Removed between the look and the open: look again.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let key = (meta.dev(), meta.ino());
    if let Some(entry) = held.get_mut(&key) {
        // The name was pointed at a held lock file between the check and the open: the
        // descriptor stays open with the lock's own, so the lock survives.
        return share_held(entry, key, mode, Some(file)).map(Some);
    }
    #[cfg(test)]
    hook::between_open_and_lock(path);
    let operation = match mode {
        Mode::Exclusive => FlockOperation::NonBlockingLockExclusive,
        Mode::Shared => FlockOperation::NonBlockingLockShared,
    };
    match fcntl_lock(&file, operation) {
        Ok(()) => {}
        Err(e) if e == Errno::AGAIN || e == Errno::ACCESS => return Err(Refused::Locked),
        Err(e) => return Err(io::Error::from(e).into()),
    }
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# After taking the lock, the opener MUST check that the lock file's path still names the
    //# file it locked (device and inode), and otherwise drop that descriptor and open again.
    if key_of(path)? != Some(key) {
        // Dropping this descriptor releases no lock of this process: the table holds none of
        // this file, and the table is locked, so no other handle of this process takes one.
        drop(file);
        return Ok(None);
    }
    held.insert(
        key,
        Held {
            files: vec![file],
            shares: 1,
            mode,
        },
    );
    debug_assert!(held.contains_key(&key));
    Ok(Some(MirrorLock { key, created }))
}

/// A lock file this process already holds, asked for again (with `file`, a descriptor of it
/// opened meanwhile, which joins the lock's own): shared again when both are shared, otherwise
/// refused.
fn share_held(
    entry: &mut Held,
    key: Key,
    mode: Mode,
    file: Option<File>,
) -> Result<MirrorLock, Refused> {
    entry.files.extend(file);
    if mode == Mode::Exclusive || entry.mode == Mode::Exclusive {
        return Err(Refused::Locked);
    }
    entry.shares += 1;
    Ok(MirrorLock {
        key,
        created: false,
    })
}

/// Opens the lock file at `path` without following a link: `create` creates it exclusively
/// (mode 0600), otherwise it must exist.
fn open_lock_file(path: &Path, create: bool) -> io::Result<(File, std::fs::Metadata)> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .create_new(create)
        .mode(0o600);
    crate::io::input::open_with_metadata(path, &mut options)
}

impl Drop for MirrorLock {
    fn drop(&mut self) {
        let mut held = held();
        debug_assert!(held.contains_key(&self.key), "a held lock is in the table");
        let last = held.get_mut(&self.key).is_some_and(|entry| {
            entry.shares -= 1;
            entry.shares == 0
        });
        if last {
            // Closing the descriptors releases the record lock.
            held.remove(&self.key);
        }
    }
}

/// The test seam between the open and the lock: a unit test replaces the lock file there, as a
/// racing `Queue::remove` in another process would.
#[cfg(test)]
pub(crate) mod hook {
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        static BETWEEN: Cell<Option<fn(&Path)>> = const { Cell::new(None) };
    }

    /// Runs `seam` on this thread between every open of a lock file and its lock, until `None`.
    pub(crate) fn set(seam: Option<fn(&Path)>) {
        BETWEEN.with(|cell| cell.set(seam));
    }

    pub(super) fn between_open_and_lock(path: &Path) {
        if let Some(seam) = BETWEEN.with(Cell::get) {
            seam(path);
        }
    }
}
