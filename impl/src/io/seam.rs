//! The one forwarding base of [`Storage`]: [`Seam`], a storage with [`Hooks`] on its calls, which
//! the unit tests' storages, the benches' counting storage and the harness's known-bad seams all
//! build on. A new required method of the trait is written here once, and once in each real
//! storage (`FsStorage`, `MemStorage`, the harness's simulated disk), never in a wrapper.

use std::io;
use std::ops::ControlFlow;
use std::path::PathBuf;

use super::storage::{Entry, Identity, Stamp, Storage};

/// What a seam changes of the calls to the storage it wraps: each hook gets that storage and by
/// default passes the call on. Reads, [`Storage::entry`], [`Storage::stamp`] and
/// [`Storage::path`] are not hooks: [`Seam`] forwards them as they are.
pub trait Hooks<S: Storage> {
    /// `append`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::append`].
    fn append(&mut self, inner: &mut S, name: &str, bytes: &[u8]) -> io::Result<()> {
        inner.append(name, bytes)
    }

    /// `truncate`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::truncate`].
    fn truncate(&mut self, inner: &mut S, name: &str, len: u64) -> io::Result<()> {
        inner.truncate(name, len)
    }

    /// `sync`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::sync`].
    fn sync(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        inner.sync(name)
    }

    /// `rename`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::rename`].
    fn rename(&mut self, inner: &mut S, from: &str, to: &str) -> io::Result<()> {
        inner.rename(from, to)
    }

    /// `remove`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::remove`].
    fn remove(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        inner.remove(name)
    }

    /// `sync_dir`, by default passed on.
    ///
    /// # Errors
    ///
    /// As [`Storage::sync_dir`].
    fn sync_dir(&mut self, inner: &mut S) -> io::Result<()> {
        inner.sync_dir()
    }

    /// `identity`, by default the wrapped storage's answer: a hook that answers it itself is a
    /// deliberate fault (the harness's `name-blind`).
    ///
    /// # Errors
    ///
    /// As [`Storage::identity`].
    fn identity(&mut self, inner: &mut S, name: &str) -> io::Result<Identity> {
        inner.identity(name)
    }
}

/// A storage with hooks: `inner` with `hooks` on its writing calls and its identity check, every
/// other call forwarded as it is.
///
/// # Example
///
/// ```
/// use parkline::{Hooks, MemStorage, Seam, Storage};
/// /// Counts the fsyncs it passes on.
/// #[derive(Default)]
/// struct CountSyncs(u64);
/// impl<S: Storage> Hooks<S> for CountSyncs {
///     fn sync(&mut self, inner: &mut S, name: &str) -> std::io::Result<()> {
///         self.0 += 1;
///         inner.sync(name)
///     }
/// }
/// let mut storage = Seam::new(MemStorage::new(), CountSyncs::default());
/// storage.append("a", b"x")?;
/// storage.sync("a")?;
/// assert_eq!((storage.hooks.0, storage.inner.syncs()), (1, 1));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Seam<S, H> {
    /// The storage under the seam.
    pub inner: S,
    /// What the seam changes.
    pub hooks: H,
}

impl<S, H> Seam<S, H> {
    /// `inner` behind `hooks`.
    pub fn new(inner: S, hooks: H) -> Self {
        Seam { inner, hooks }
    }
}

impl<S: Storage, H: Hooks<S>> Storage for Seam<S, H> {
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool> {
        self.inner.read_chunks(name, each)
    }
    fn read(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(name)
    }
    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.hooks.append(&mut self.inner, name, bytes)
    }
    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        self.hooks.truncate(&mut self.inner, name, len)
    }
    fn sync(&mut self, name: &str) -> io::Result<()> {
        self.hooks.sync(&mut self.inner, name)
    }
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.hooks.rename(&mut self.inner, from, to)
    }
    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.hooks.remove(&mut self.inner, name)
    }
    fn sync_dir(&mut self) -> io::Result<()> {
        self.hooks.sync_dir(&mut self.inner)
    }
    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        self.hooks.identity(&mut self.inner, name)
    }
    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        self.inner.entry(name)
    }
    fn stamp(&mut self, name: &str) -> io::Result<Option<Stamp>> {
        self.inner.stamp(name)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.inner.path(name)
    }
}
