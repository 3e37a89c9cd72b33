//! The mirror's lock (M8): a POSIX record lock on `<mirror>.lock`, plus the table of lock files
//! this process holds.
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
static HELD: Mutex<BTreeMap<Key, Vec<File>>> = Mutex::new(BTreeMap::new());

fn held() -> MutexGuard<'static, BTreeMap<Key, Vec<File>>> {
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

/// The exclusive lock on one lock file, held until dropped.
#[derive(Debug)]
pub(crate) struct MirrorLock {
    key: Key,
}

/// How many times [`MirrorLock::acquire`] opens the lock file again after finding that the file
/// it locked is no longer the one the path names. Each retry means a holder removed the lock file
/// at a session's end (M15) between this open and this lock; a path that keeps changing is being
/// worked on by others, and the open is refused as `Locked`.
const RELOCK_MAX: u32 = 64;

impl MirrorLock {
    /// Takes the lock on `path` (created with mode 0600 if absent), without waiting.
    pub(crate) fn acquire(path: &Path) -> Result<MirrorLock, Refused> {
        let mut held = held();
        for _ in 0..RELOCK_MAX {
            if let Some(lock) = try_lock(&mut held, path)? {
                return Ok(lock);
            }
        }
        Err(Refused::Locked)
    }
}

/// The identity of what `path` names, without following a link; `None` when nothing does.
fn key_of(path: &Path) -> io::Result<Option<Key>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// One open, lock and check of `path`: `Ok(None)` when the file locked is no longer the one the
/// path names (removed or replaced between the open and the lock), so the caller opens again.
fn try_lock(
    held: &mut BTreeMap<Key, Vec<File>>,
    path: &Path,
) -> Result<Option<MirrorLock>, Refused> {
    // Checked by name before any open: opening and closing a descriptor of a lock file this
    // process holds would release its lock.
    if key_of(path)?.is_some_and(|key| held.contains_key(&key)) {
        return Err(Refused::Locked);
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    let key = (meta.dev(), meta.ino());
    if let Some(files) = held.get_mut(&key) {
        // The name was pointed at a held lock file between the check and the open: keep the
        // descriptor open with the lock's own, so the lock survives.
        files.push(file);
        return Err(Refused::Locked);
    }
    #[cfg(test)]
    hook::between_open_and_lock(path);
    match fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive) {
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
    held.insert(key, vec![file]);
    debug_assert!(held.contains_key(&key));
    Ok(Some(MirrorLock { key }))
}

impl Drop for MirrorLock {
    fn drop(&mut self) {
        // Closing the descriptors releases the record lock.
        let released = held().remove(&self.key);
        debug_assert!(released.is_some(), "a held lock is in the table");
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
