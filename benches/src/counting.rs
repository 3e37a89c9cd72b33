//! A [`Storage`] wrapper that counts what the queue asks of the disk.
//!
//! The counters live behind an [`Arc`] so the bench keeps a [`Counts`] handle while the queue owns
//! the storage. The same handle can switch the syncs off while a fixture is built: parking
//! 100,000 lines with one fsync each would take minutes, and the fixture's durability is not what
//! is measured. [`crate::fixture::sync_dir_tree`] makes the fixture durable in one go afterwards,
//! so the first measured fsync does not also flush the fixture's bytes.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parkline::{Hooks, Seam, Storage};

/// Shared counters of one [`Counting`] storage; cloning shares them.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    syncs: AtomicU64,
    dir_syncs: AtomicU64,
    appends: AtomicU64,
    appended_bytes: AtomicU64,
    skip_syncs: AtomicBool,
}

/// A snapshot of the counters, for differences around one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// File fsyncs ([`Storage::sync`]) that reached the inner storage.
    pub syncs: u64,
    /// Directory fsyncs ([`Storage::sync_dir`]) that reached the inner storage.
    pub dir_syncs: u64,
    /// Calls of [`Storage::append`].
    pub appends: u64,
    /// Bytes passed to [`Storage::append`].
    pub appended_bytes: u64,
}

impl Snapshot {
    /// File and directory fsyncs together.
    pub fn fsyncs(&self) -> u64 {
        self.syncs + self.dir_syncs
    }

    /// The counts since `earlier`.
    pub fn since(&self, earlier: Snapshot) -> Snapshot {
        Snapshot {
            syncs: self.syncs - earlier.syncs,
            dir_syncs: self.dir_syncs - earlier.dir_syncs,
            appends: self.appends - earlier.appends,
            appended_bytes: self.appended_bytes - earlier.appended_bytes,
        }
    }
}

impl Counts {
    /// The counters now.
    pub fn snapshot(&self) -> Snapshot {
        let i = &self.inner;
        Snapshot {
            syncs: i.syncs.load(Ordering::Relaxed),
            dir_syncs: i.dir_syncs.load(Ordering::Relaxed),
            appends: i.appends.load(Ordering::Relaxed),
            appended_bytes: i.appended_bytes.load(Ordering::Relaxed),
        }
    }

    /// While `true`, `sync` and `sync_dir` return `Ok` without reaching the disk and are not
    /// counted. For building fixtures only.
    pub fn set_skip_syncs(&self, skip: bool) {
        self.inner.skip_syncs.store(skip, Ordering::Relaxed);
    }

    fn skipping(&self) -> bool {
        self.inner.skip_syncs.load(Ordering::Relaxed)
    }
}

/// A [`Storage`] that forwards every call to `S` and counts syncs and appends: the crate's
/// forwarding base with [`Counts`] as its hooks.
pub type Counting<S> = Seam<S, Counts>;

/// `inner` behind a counting seam, and a handle on its counters.
pub fn counting<S: Storage>(inner: S) -> (Counting<S>, Counts) {
    let counts = Counts::default();
    (Seam::new(inner, counts.clone()), counts)
}

impl<S: Storage> Hooks<S> for Counts {
    fn append(&mut self, inner: &mut S, name: &str, bytes: &[u8]) -> io::Result<()> {
        let i = &self.inner;
        i.appends.fetch_add(1, Ordering::Relaxed);
        i.appended_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        inner.append(name, bytes)
    }

    fn sync(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        if self.skipping() {
            return Ok(());
        }
        self.inner.syncs.fetch_add(1, Ordering::Relaxed);
        inner.sync(name)
    }

    fn sync_dir(&mut self, inner: &mut S) -> io::Result<()> {
        if self.skipping() {
            return Ok(());
        }
        self.inner.dir_syncs.fetch_add(1, Ordering::Relaxed);
        inner.sync_dir()
    }
}
