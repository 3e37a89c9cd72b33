//! A simulated disk behind `parkline::Storage` that keeps a live and a durable image, so a test
//! can cut the power at any moment and reopen the queue from what a real disk would still hold.
//!
//! The model of the medium is the one `spec/mirror.md` assumes:
//!
//! - a file's bytes become durable only through `sync(name)`; appended bytes that were not synced
//!   survive a power loss as a PREFIX (possibly empty, possibly torn mid-record), never reordered
//!   or corrupted in the middle;
//! - a truncate that was not synced may be lost (the file comes back with its durable bytes);
//! - directory entries (create, rename, remove) become durable only through `sync_dir()`; a rename
//!   is atomic: after a power loss the directory is either the durable one or the live one, never
//!   a mix;
//! - syncing a file does not make its directory entry durable (a file created and synced but whose
//!   directory was not synced may vanish).
//!
//! Files are inodes: the directory maps names to inode numbers, and an inode keeps its `live` and
//! `durable` bytes. A rename moves the inode, so data synced under the temporary name stays
//! durable under the new one.
//!
//! Crash points are enumerated with a sync counter: [`SimDisk::crash_at_sync`] arms a power loss
//! at the n-th `sync`/`sync_dir` call from now; that call does not take effect and fails, and so
//! does every later call, until the test takes the image with [`SimDisk::crash`]. I/O errors are
//! injected with [`SimDisk::fail_at_call`] (fail-stop tests): the n-th mutating or syncing call
//! from now fails once, without a power loss.
//!
//! `SimDisk` is a shared handle (`Arc<Mutex<_>>`, so `Send` and `Sync`): cloning it gives a
//! second handle on the same disk, so a test keeps one while the queue owns the other, also a
//! queue several threads park through (`parkline::SharedQueue<SimDisk>`). Every call holds the
//! disk's lock for its whole effect, so calls from several threads are atomic and ordered.
//! [`SimDisk::snapshot`] makes an independent copy.
//!
//! Each handle keeps the inode it first wrote under each name, as a real descriptor does: its
//! writes go to that inode whatever the name leads to later, and `identity` compares the two
//! (M8). [`SimDisk::lose_name`] renames the mirror away or unlinks it under such a handle, and
//! [`SimDisk::restore_name`] gives it back.

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use parkline::{Entry, Identity};

/// A simulated directory of files with live and durable images, shared behind `Arc<Mutex<_>>`.
#[derive(Clone, Debug, Default)]
pub struct SimDisk {
    inner: Arc<Mutex<Disk>>,
    /// The inode this handle writes under each name it wrote (its "descriptors").
    handles: BTreeMap<String, u64>,
}

/// A name [`SimDisk::lose_name`] took away: the inode, and where it went (`None`: unlinked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    name: String,
    ino: u64,
    moved_to: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct Inode {
    live: Vec<u8>,
    durable: Durable,
    /// Not a regular file (a FIFO another process made, [`SimDisk::put_special`]): every read
    /// or write of it is refused as a real directory refuses one, without blocking (M8).
    special: bool,
}

/// An inode's durable image. Almost always a prefix of its live bytes (a sync makes all of them
/// durable, and appends only add after them), so that case is a length: a sync of a multi-MB
/// mirror after each park used to copy the whole file (about a fifth of a `delivery_ops` exec).
/// Only a truncate below the durable length before the next sync needs the durable bytes kept
/// apart.
#[derive(Clone, Debug)]
enum Durable {
    /// The first `n` live bytes.
    Prefix(usize),
    /// Bytes the live image no longer starts with (or may not: after an unsynced truncate).
    Apart(Vec<u8>),
}

impl Default for Durable {
    fn default() -> Self {
        Durable::Prefix(0)
    }
}

impl Inode {
    /// An inode whose live and durable images are both `bytes`.
    fn durable(bytes: Vec<u8>) -> Inode {
        Inode {
            durable: Durable::Prefix(bytes.len()),
            live: bytes,
            special: false,
        }
    }

    /// The durable image.
    fn durable_bytes(&self) -> &[u8] {
        match &self.durable {
            Durable::Prefix(n) => &self.live[..*n],
            Durable::Apart(bytes) => bytes,
        }
    }

    /// The live image cut or zero-extended to `len` bytes; the durable image is kept.
    fn truncate(&mut self, len: usize) {
        if let Durable::Prefix(n) = self.durable
            && len < n
        {
            self.durable = Durable::Apart(self.live[..n].to_vec());
        }
        self.live.resize(len, 0);
    }

    /// Every live byte durable.
    fn sync(&mut self) {
        self.durable = Durable::Prefix(self.live.len());
    }
}

#[derive(Clone, Debug, Default)]
struct Disk {
    inodes: BTreeMap<u64, Inode>,
    inode_next: u64,
    live_dir: BTreeMap<String, u64>,
    durable_dir: BTreeMap<String, u64>,
    /// Number of `sync` and `sync_dir` calls so far (including one that hit the power loss).
    syncs: u64,
    /// Number of calls of any kind except `read` so far.
    calls: u64,
    /// Number of `rename` calls so far.
    renames: u64,
    /// The value of `syncs` at which the power goes out.
    power_loss_at_sync: Option<u64>,
    /// The value of `calls` at which one call fails with an I/O error.
    fail_at_call: Option<u64>,
    /// The power went out: every later call fails and nothing becomes durable.
    powered_off: bool,
    /// Which appends fail with "no space left on device" (`StorageFull`), writing nothing.
    full: Option<Full>,
    /// Each file sync yields the CPU before it takes effect ([`SimDisk::yield_at_sync`]).
    yield_at_sync: bool,
}

/// Which files a full disk refuses appends to ([`SimDisk::set_full`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Temp files (`*.tmp`): a compaction's snapshot does not fit, a small record still does.
    Temp,
    /// Every other file: the mirror's own appends.
    Log,
    /// Every file.
    Both,
}

impl Full {
    fn refuses(self, name: &str) -> bool {
        match self {
            Full::Temp => name.ends_with(".tmp"),
            Full::Log => !name.ends_with(".tmp"),
            Full::Both => true,
        }
    }
}

/// Counters of what a disk has seen, for reports and for enumerating crash points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// `sync` and `sync_dir` calls.
    pub syncs: u64,
    /// Calls that write or sync (append, truncate, sync, rename, remove, sync_dir).
    pub calls: u64,
    /// `rename` calls (the crate's mirror rewrites).
    pub renames: u64,
}

fn power_lost() -> io::Error {
    io::Error::other("simulated power loss")
}

fn injected() -> io::Error {
    io::Error::other("simulated I/O error")
}

/// A tiny deterministic generator (SplitMix64) for the choices of a torn crash.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..=max`.
    pub fn upto(&mut self, max: usize) -> usize {
        let span = max as u64 + 1;
        usize::try_from(self.next_u64() % span).unwrap_or(max)
    }
}

impl Disk {
    /// Count one mutating call; fail it if the power is out or an error was injected here.
    fn enter(&mut self) -> io::Result<()> {
        if self.powered_off {
            return Err(power_lost());
        }
        self.calls += 1;
        if self.fail_at_call == Some(self.calls) {
            self.fail_at_call = None;
            return Err(injected());
        }
        Ok(())
    }

    /// Count one sync; return false if the power goes out at it (the sync does not take effect).
    fn enter_sync(&mut self) -> io::Result<()> {
        self.enter()?;
        self.syncs += 1;
        if self.power_loss_at_sync == Some(self.syncs) {
            self.powered_off = true;
            return Err(power_lost());
        }
        Ok(())
    }

    fn new_inode(&mut self) -> u64 {
        self.inode_next += 1;
        self.inodes.insert(self.inode_next, Inode::default());
        self.inode_next
    }

    /// The image after a power loss; `choose(max)` picks a value in `0..=max` for each choice.
    fn crashed(&self, choose: &mut dyn FnMut(usize) -> usize) -> Disk {
        // A rename is atomic and the directory is one unit: either every unsynced entry change
        // reached the disk or none did.
        let dir = if self.live_dir != self.durable_dir && choose(1) == 1 {
            &self.live_dir
        } else {
            &self.durable_dir
        };
        // The counters go on across the power loss, so a test can count per op.
        let mut out = Disk {
            syncs: self.syncs,
            calls: self.calls,
            renames: self.renames,
            yield_at_sync: self.yield_at_sync,
            ..Disk::default()
        };
        for (name, ino) in dir {
            let Some(inode) = self.inodes.get(ino) else {
                continue;
            };
            let durable = inode.durable_bytes();
            let bytes = if inode.live.starts_with(durable) {
                // Unsynced appends survive as a prefix.
                let tail = &inode.live[durable.len()..];
                let keep = choose(tail.len()).min(tail.len());
                inode.live[..durable.len() + keep].to_vec()
            } else {
                // Truncated (and maybe appended) since the last sync: the truncate is lost.
                durable.to_vec()
            };
            let fresh = out.new_inode();
            if let Some(node) = out.inodes.get_mut(&fresh) {
                *node = Inode {
                    special: inode.special,
                    ..Inode::durable(bytes)
                };
            }
            out.live_dir.insert(name.clone(), fresh);
            out.durable_dir.insert(name.clone(), fresh);
        }
        out
    }
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// An independent copy of this disk (live and durable images, counters and armed faults).
    pub fn snapshot(&self) -> Self {
        Self {
            inner: Arc::new(Mutex::new(lock(&self.inner).clone())),
            handles: BTreeMap::new(),
        }
    }

    /// Takes the name `name` away from its file, as someone beside the queue would: renamed to
    /// `<name>.moved` in the same directory (`unlink` false) or unlinked (`unlink` true). The
    /// inode lives on for the handles that write it. `None` when there is no such name.
    pub fn lose_name(&self, name: &str, unlink: bool) -> Option<Lost> {
        let mut disk = lock(&self.inner);
        let ino = disk.live_dir.remove(name)?;
        let moved_to = (!unlink).then(|| format!("{name}.moved"));
        if let Some(moved) = &moved_to {
            disk.live_dir.insert(moved.clone(), ino);
        }
        Some(Lost {
            name: name.to_owned(),
            ino,
            moved_to,
        })
    }

    /// The live length of the file `lost` took the name of.
    pub fn lost_len(&self, lost: &Lost) -> Option<u64> {
        let disk = lock(&self.inner);
        disk.inodes
            .get(&lost.ino)
            .map(|inode| inode.live.len() as u64)
    }

    /// Gives the file `lost` its name back, unless the name leads to a file again (a compaction
    /// renamed a whole snapshot into its place, which is then the mirror): `true` when restored.
    pub fn restore_name(&self, lost: &Lost) -> bool {
        let mut disk = lock(&self.inner);
        if let Some(moved) = &lost.moved_to
            && disk.live_dir.get(moved) == Some(&lost.ino)
        {
            disk.live_dir.remove(moved);
        }
        if disk.live_dir.contains_key(&lost.name) || !disk.inodes.contains_key(&lost.ino) {
            return false;
        }
        disk.live_dir.insert(lost.name.clone(), lost.ino);
        true
    }

    /// The counters so far.
    pub fn stats(&self) -> DiskStats {
        let disk = lock(&self.inner);
        DiskStats {
            syncs: disk.syncs,
            calls: disk.calls,
            renames: disk.renames,
        }
    }

    /// Arm a power loss at the `n`-th sync call from now (`n >= 1`): that call does not take
    /// effect and fails, and so does every later call. `None` disarms.
    pub fn crash_at_sync(&self, n: Option<u64>) {
        let mut disk = lock(&self.inner);
        disk.power_loss_at_sync = n.map(|n| disk.syncs + n.max(1));
    }

    /// Arm a one-off I/O error at the `n`-th writing or syncing call from now (`n >= 1`).
    /// `None` disarms.
    pub fn fail_at_call(&self, n: Option<u64>) {
        let mut disk = lock(&self.inner);
        disk.fail_at_call = n.map(|n| disk.calls + n.max(1));
    }

    /// Make appends fail with `StorageFull` (ENOSPC), writing nothing: to temp files, to the
    /// others, or to all, until `None`. The ENOSPC of the media model (spec/mirror.md section 5).
    pub fn set_full(&self, full: Option<Full>) {
        lock(&self.inner).full = full;
    }

    /// Make each file sync yield the CPU before it takes effect (`true`), as a real
    /// fsync lets other threads run: threads parking beside a group's leader then queue behind
    /// it and are written as the next group (D16), where on a sync this fast the leader would
    /// be done before they woke. Off for a new disk; kept across a power loss.
    pub fn yield_at_sync(&self, yielding: bool) {
        lock(&self.inner).yield_at_sync = yielding;
    }

    /// Whether an armed power loss has happened.
    pub fn powered_off(&self) -> bool {
        lock(&self.inner).powered_off
    }

    /// The disk after a power loss now, in the strictest outcome: the durable directory, each
    /// file with its durable bytes only (every unsynced change lost).
    pub fn crash(&self) -> SimDisk {
        self.crash_choosing(&mut |_| 0)
    }

    /// The disk after a power loss now, with every unsynced change that can survive surviving
    /// (the live directory, every unsynced append whole).
    pub fn crash_keeping(&self) -> SimDisk {
        self.crash_choosing(&mut |max| max)
    }

    /// The disk after a power loss now, with the choices (directory changes kept or not, how
    /// long a prefix of each file's unsynced appends survives) drawn from `seed`.
    pub fn crash_with(&self, seed: u64) -> SimDisk {
        let mut rng = SplitMix::new(seed);
        self.crash_choosing(&mut |max| rng.upto(max))
    }

    /// The disk after a power loss now; `choose(max)` returns a value in `0..=max` for each
    /// choice: first whether the directory changes survive (1) or not (0), then for each file in
    /// name order how many of its unsynced appended bytes survive.
    pub fn crash_choosing(&self, choose: &mut dyn FnMut(usize) -> usize) -> SimDisk {
        let crashed = lock(&self.inner).crashed(choose);
        SimDisk {
            inner: Arc::new(Mutex::new(crashed)),
            handles: BTreeMap::new(),
        }
    }

    /// The live bytes of `name`, if it exists (what a reader sees now).
    pub fn live(&self, name: &str) -> Option<Vec<u8>> {
        let disk = lock(&self.inner);
        let ino = disk.live_dir.get(name)?;
        disk.inodes.get(ino).map(|inode| inode.live.clone())
    }

    /// The live length of `name`, if it exists, without copying its bytes.
    pub fn live_len(&self, name: &str) -> Option<u64> {
        let disk = lock(&self.inner);
        let ino = disk.live_dir.get(name)?;
        disk.inodes.get(ino).map(|inode| inode.live.len() as u64)
    }

    /// The names in the live directory, in order.
    pub fn names(&self) -> Vec<String> {
        lock(&self.inner).live_dir.keys().cloned().collect()
    }

    /// Replace (or create) `name` with `bytes`, durable at once (to seed a damaged mirror).
    pub fn put_durable(&self, name: &str, bytes: &[u8]) {
        let mut disk = lock(&self.inner);
        let ino = disk.new_inode();
        if let Some(node) = disk.inodes.get_mut(&ino) {
            *node = Inode::durable(bytes.to_vec());
        }
        disk.live_dir.insert(name.to_owned(), ino);
        disk.durable_dir.insert(name.to_owned(), ino);
    }

    /// Put something that is not a regular file (a FIFO another process made) at `name`,
    /// durable at once, replacing what was there: a read of it fails at once, as
    /// `FsStorage` fails one (M8).
    pub fn put_special(&self, name: &str) {
        let mut disk = lock(&self.inner);
        let ino = disk.new_inode();
        if let Some(node) = disk.inodes.get_mut(&ino) {
            node.special = true;
        }
        disk.live_dir.insert(name.to_owned(), ino);
        disk.durable_dir.insert(name.to_owned(), ino);
    }
}

/// The error of a read or write of a name that is not a regular file.
fn not_regular(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{name}: a FIFO, not a regular file"),
    )
}

/// How many times a sync yields the CPU under [`SimDisk::yield_at_sync`].
const SYNC_YIELDS: usize = 1;

/// The disk, locked for one call. A thread that panicked while it held the lock left the disk
/// whole (no call panics halfway through a change), so poisoning is recovered from.
fn lock(disk: &Mutex<Disk>) -> MutexGuard<'_, Disk> {
    disk.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no such file: {name}"))
}

/// The inode a handle writes under `name`: the one it holds, or the one the name leads to now
/// (which it then holds).
fn handle_or_name(handles: &mut BTreeMap<String, u64>, disk: &Disk, name: &str) -> io::Result<u64> {
    if let Some(&ino) = handles.get(name) {
        return Ok(ino);
    }
    let ino = *disk.live_dir.get(name).ok_or_else(|| not_found(name))?;
    handles.insert(name.to_owned(), ino);
    Ok(ino)
}

impl parkline::Storage for SimDisk {
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool> {
        let disk = lock(&self.inner);
        if disk.powered_off {
            return Err(power_lost());
        }
        let Some(inode) = disk.live_dir.get(name).and_then(|ino| disk.inodes.get(ino)) else {
            return Ok(false);
        };
        if inode.special {
            return Err(not_regular(name));
        }
        if !inode.live.is_empty() {
            // The live image in one piece, where it lies.
            let _ = each(&inode.live);
        }
        Ok(true)
    }

    fn read(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let disk = lock(&self.inner);
        if disk.powered_off {
            return Err(power_lost());
        }
        match disk.live_dir.get(name).and_then(|ino| disk.inodes.get(ino)) {
            Some(inode) if inode.special => Err(not_regular(name)),
            found => Ok(found.map(|inode| inode.live.clone())),
        }
    }

    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut disk = lock(&self.inner);
        disk.enter()?;
        if disk.full.is_some_and(|full| full.refuses(name)) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ));
        }
        let ino = match (self.handles.get(name), disk.live_dir.get(name)) {
            (Some(&ino), _) | (None, Some(&ino)) => ino,
            (None, None) => {
                let ino = disk.new_inode();
                disk.live_dir.insert(name.to_owned(), ino);
                ino
            }
        };
        if disk.inodes.get(&ino).is_some_and(|inode| inode.special) {
            return Err(not_regular(name));
        }
        self.handles.insert(name.to_owned(), ino);
        if let Some(inode) = disk.inodes.get_mut(&ino) {
            inode.live.extend_from_slice(bytes);
        }
        Ok(())
    }

    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        let mut disk = lock(&self.inner);
        disk.enter()?;
        let ino = handle_or_name(&mut self.handles, &disk, name)?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        if let Some(inode) = disk.inodes.get_mut(&ino) {
            inode.truncate(len);
        }
        Ok(())
    }

    fn sync(&mut self, name: &str) -> io::Result<()> {
        if lock(&self.inner).yield_at_sync {
            for _ in 0..SYNC_YIELDS {
                std::thread::yield_now();
            }
        }
        let mut disk = lock(&self.inner);
        disk.enter_sync()?;
        let ino = handle_or_name(&mut self.handles, &disk, name)?;
        if let Some(inode) = disk.inodes.get_mut(&ino) {
            inode.sync();
        }
        Ok(())
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let mut disk = lock(&self.inner);
        disk.enter()?;
        disk.renames += 1;
        let ino = disk.live_dir.remove(from).ok_or_else(|| not_found(from))?;
        disk.live_dir.insert(to.to_owned(), ino);
        // A handle follows its inode, as a descriptor does.
        self.handles.remove(to);
        if let Some(ino) = self.handles.remove(from) {
            self.handles.insert(to.to_owned(), ino);
        }
        Ok(())
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        let mut disk = lock(&self.inner);
        disk.enter()?;
        disk.live_dir.remove(name).ok_or_else(|| not_found(name))?;
        self.handles.remove(name);
        Ok(())
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        let mut disk = lock(&self.inner);
        disk.enter_sync()?;
        disk.durable_dir = disk.live_dir.clone();
        // Inodes no directory and no handle of this one refers to any more can go.
        let referenced: Vec<u64> = disk
            .live_dir
            .values()
            .chain(self.handles.values())
            .copied()
            .collect();
        disk.inodes.retain(|ino, _| referenced.contains(ino));
        Ok(())
    }

    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        let disk = lock(&self.inner);
        if disk.powered_off {
            return Err(power_lost());
        }
        Ok(match (disk.live_dir.get(name), self.handles.get(name)) {
            (None, _) => Identity::Gone,
            (Some(entry), Some(held)) if entry != held => Identity::Replaced,
            (Some(_), _) => Identity::Same,
        })
    }

    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        let disk = lock(&self.inner);
        if disk.powered_off {
            return Err(power_lost());
        }
        let special = |ino: &u64| disk.inodes.get(ino).is_some_and(|inode| inode.special);
        Ok(match disk.live_dir.get(name) {
            Some(ino) if special(ino) => Some(Entry::Other),
            Some(_) => Some(Entry::File),
            None => None,
        })
    }

    fn stamp(&mut self, name: &str) -> io::Result<Option<parkline::Stamp>> {
        let disk = lock(&self.inner);
        if disk.powered_off {
            return Err(power_lost());
        }
        let inode = |ino: &u64| disk.inodes.get(ino).map(|inode| (*ino, &inode.live));
        let found = disk.live_dir.get(name).and_then(inode);
        Ok(found.map(|(ino, live)| parkline::Stamp::of_content(ino, live)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parkline::Storage;

    #[test]
    fn unsynced_append_is_lost_and_synced_append_survives() {
        let mut disk = SimDisk::new();
        disk.append("m", b"abc").unwrap();
        disk.sync("m").unwrap();
        disk.sync_dir().unwrap();
        disk.append("m", b"def").unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"abc");
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abcdef");
        let torn = (0..64)
            .map(|seed| disk.crash_with(seed).live("m").unwrap())
            .collect::<Vec<_>>();
        assert!(
            torn.iter()
                .all(|bytes| b"abcdef".starts_with(bytes) && bytes.len() >= 3)
        );
        assert!(
            torn.iter()
                .any(|bytes| bytes.len() == 4 || bytes.len() == 5)
        );
    }

    #[test]
    fn created_file_needs_directory_sync() {
        let mut disk = SimDisk::new();
        disk.append("m", b"abc").unwrap();
        disk.sync("m").unwrap();
        assert_eq!(disk.crash().live("m"), None);
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abc");
        disk.sync_dir().unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"abc");
    }

    #[test]
    fn rename_is_atomic_and_durable_after_directory_sync() {
        let mut disk = SimDisk::new();
        disk.append("m", b"old").unwrap();
        disk.sync("m").unwrap();
        disk.sync_dir().unwrap();
        disk.append("m.tmp", b"new").unwrap();
        disk.sync("m.tmp").unwrap();
        disk.rename("m.tmp", "m").unwrap();
        assert_eq!(disk.live("m").unwrap(), b"new");
        assert_eq!(disk.crash().live("m").unwrap(), b"old");
        assert_eq!(disk.crash().live("m.tmp"), None);
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"new");
        disk.sync_dir().unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"new");
        assert_eq!(disk.crash().names(), vec!["m".to_owned()]);
    }

    #[test]
    fn unsynced_truncate_is_lost() {
        let mut disk = SimDisk::new();
        disk.append("m", b"abcdef").unwrap();
        disk.sync("m").unwrap();
        disk.sync_dir().unwrap();
        disk.truncate("m", 2).unwrap();
        assert_eq!(disk.live("m").unwrap(), b"ab");
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abcdef");
        disk.sync("m").unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"ab");
    }

    /// A truncate below the durable bytes keeps them apart from the live image: a power loss
    /// brings them back, also when later appends make the live image start with them again
    /// (then, as after any append, a prefix of the appended bytes may survive too).
    #[test]
    fn a_truncate_below_the_durable_bytes_keeps_them() {
        let mut disk = SimDisk::new();
        disk.append("m", b"abcdef").unwrap();
        disk.sync("m").unwrap();
        disk.sync_dir().unwrap();
        disk.truncate("m", 8).unwrap();
        assert_eq!(disk.live("m").unwrap(), b"abcdef\0\0");
        assert_eq!(disk.crash().live("m").unwrap(), b"abcdef");
        disk.truncate("m", 1).unwrap();
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abcdef");
        disk.append("m", b"xcdef").unwrap();
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abcdef");
        disk.truncate("m", 1).unwrap();
        disk.append("m", b"bcdefgh").unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"abcdef");
        assert_eq!(disk.crash_keeping().live("m").unwrap(), b"abcdefgh");
        disk.sync("m").unwrap();
        disk.truncate("m", 3).unwrap();
        assert_eq!(disk.crash().live("m").unwrap(), b"abcdefgh");
    }

    #[test]
    fn power_loss_at_the_nth_sync_freezes_durability() {
        let mut disk = SimDisk::new();
        disk.crash_at_sync(Some(2));
        disk.append("m", b"abc").unwrap();
        disk.sync("m").unwrap();
        assert!(disk.sync_dir().is_err());
        assert!(disk.powered_off());
        assert!(disk.append("m", b"x").is_err());
        assert_eq!(disk.stats().syncs, 2);
        assert_eq!(disk.crash().live("m"), None);
    }

    #[test]
    fn injected_error_fails_one_call() {
        let mut disk = SimDisk::new();
        disk.fail_at_call(Some(2));
        disk.append("m", b"abc").unwrap();
        assert!(disk.sync("m").is_err());
        disk.sync("m").unwrap();
        assert_eq!(disk.stats().calls, 3);
    }

    /// A queue several threads park through holds the disk: the handle is `Send` and `Sync`,
    /// and appends from several threads each land whole.
    #[test]
    fn threads_share_one_disk() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<SimDisk>();
        let disk = SimDisk::new();
        std::thread::scope(|scope| {
            for byte in [b'a', b'b', b'c'] {
                let mut handle = disk.clone();
                scope.spawn(move || {
                    for _ in 0..100 {
                        handle.append("m", &[byte; 4]).expect("append");
                    }
                });
            }
        });
        let live = disk.live("m").expect("written");
        assert_eq!(live.len(), 1200);
        assert!(
            live.chunks(4)
                .all(|chunk| chunk.iter().all(|b| *b == chunk[0]))
        );
    }

    #[test]
    fn clones_share_and_snapshots_do_not() {
        let mut disk = SimDisk::new();
        let handle = disk.clone();
        let copy = disk.snapshot();
        disk.append("m", b"abc").unwrap();
        assert_eq!(handle.live("m").unwrap(), b"abc");
        assert_eq!(copy.live("m"), None);
    }
}
