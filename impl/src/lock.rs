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

impl MirrorLock {
    /// Takes the lock on `path` (created with mode 0600 if absent), without waiting.
    pub(crate) fn acquire(path: &Path) -> Result<MirrorLock, Refused> {
        let mut held = held();
        // Checked by name before any open: opening and closing a descriptor of a lock file this
        // process holds would release its lock.
        match std::fs::metadata(path) {
            Ok(meta) if held.contains_key(&(meta.dev(), meta.ino())) => {
                return Err(Refused::Locked);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        let meta = file.metadata()?;
        let key = (meta.dev(), meta.ino());
        if let Some(files) = held.get_mut(&key) {
            // The name was pointed at a held lock file between the check and the open: keep the
            // descriptor open with the lock's own, so the lock survives.
            files.push(file);
            return Err(Refused::Locked);
        }
        match fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == Errno::AGAIN || e == Errno::ACCESS => return Err(Refused::Locked),
            Err(e) => return Err(io::Error::from(e).into()),
        }
        held.insert(key, vec![file]);
        debug_assert!(held.contains_key(&key));
        Ok(MirrorLock { key })
    }
}

impl Drop for MirrorLock {
    fn drop(&mut self) {
        // Closing the descriptors releases the record lock.
        let released = held().remove(&self.key);
        debug_assert!(released.is_some(), "a held lock is in the table");
    }
}
