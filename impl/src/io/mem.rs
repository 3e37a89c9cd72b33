//! `MemStorage`: the volatile [`Storage`] of the unit tests and simulations, a directory in
//! memory.

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;

use super::storage::{Entry, Identity, Stamp, Storage};

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
    /// Names that are not regular files (a FIFO another process made): read as input, they are
    /// refused as a real directory refuses them (M8).
    specials: std::collections::BTreeSet<String>,
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

    /// Puts something that is not a regular file (a FIFO, say) at `name`, replacing any file
    /// there: every read of it is refused as [`FsStorage`](super::storage::FsStorage) refuses one, without blocking, and
    /// [`Storage::entry`] says [`Entry::Other`]. For tests of files another process can write.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Entry, MemStorage, Storage};
    /// let mut storage = MemStorage::new();
    /// storage.set_special("x.ops");
    /// assert_eq!(storage.entry("x.ops").unwrap(), Some(Entry::Other));
    /// assert!(storage.read("x.ops").is_err());
    /// ```
    pub fn set_special(&mut self, name: &str) {
        self.files.remove(name);
        self.specials.insert(name.to_owned());
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
        if self.specials.contains(name) {
            return Err(crate::io::input::not_regular("a FIFO"));
        }
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
        if self.specials.contains(name) {
            return Err(crate::io::input::not_regular("a FIFO"));
        }
        Ok(self.files.get(name).cloned())
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        if self.specials.contains(name) {
            return Err(crate::io::input::not_regular("a FIFO"));
        }
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
        self.specials.remove(to);
        self.files.insert(to.to_owned(), bytes);
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        if self.specials.remove(name) {
            return Ok(());
        }
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
        Ok(
            if self.files.contains_key(name) || self.specials.contains(name) {
                Identity::Same
            } else {
                Identity::Gone
            },
        )
    }

    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        if self.specials.contains(name) {
            return Ok(Some(Entry::Other));
        }
        Ok(self.files.contains_key(name).then_some(Entry::File))
    }

    fn stamp(&mut self, name: &str) -> io::Result<Option<Stamp>> {
        if self.specials.contains(name) {
            return Ok(Some(Stamp::of_content(1, b"")));
        }
        Ok(self
            .files
            .get(name)
            .map(|bytes| Stamp::of_content(0, bytes)))
    }
}
