//! Group commit under shuttle's scheduler (built with `RUSTFLAGS="--cfg shuttle"`): the real
//! `SharedQueue`, its mutex and condition variable swapped for shuttle's, run over many thread
//! interleavings, random and PCT. Each schedule parks from three threads (one line invalid)
//! beside a boundary and a settle, with or without an fsync that fails; every answer is checked
//! against the durable image of the file. A canary (a hand-off written wrong on purpose) shows
//! that the scheduler finds what these schedules must never show.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc as StdArc, Mutex as StdMutex};

use ::shuttle::sync::{Arc, Condvar, Mutex};
use ::shuttle::thread;

use super::*;
use crate::SharedQueue;

/// Schedules per search: `PARKLINE_SHUTTLE_SCHEDULES`, 2,000 by default (random and PCT each).
fn schedules() -> usize {
    std::env::var("PARKLINE_SHUTTLE_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// The files as written and as fsynced: a `MemStorage` whose `sync` records the length that is
/// durable, and which can fail the fsync of one number.
#[derive(Debug, Default)]
struct Disk {
    live: MemStorage,
    durable: BTreeMap<String, usize>,
    syncs: u64,
    fail_sync: Option<u64>,
}

#[derive(Debug, Clone, Default)]
struct Tracked(StdArc<StdMutex<Disk>>);

impl Tracked {
    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The mirror as a power loss now would leave it: each file cut to its fsynced length.
    fn durable_image(&self) -> MemStorage {
        let disk = self.disk();
        let mut image = MemStorage::new();
        for name in disk.live.names() {
            let bytes = disk.live.file(name).unwrap_or_default();
            let len = disk
                .durable
                .get(name)
                .copied()
                .unwrap_or(0)
                .min(bytes.len());
            image.set_file(name, bytes[..len].to_vec());
        }
        image
    }
}

impl Storage for Tracked {
    fn read_chunks(
        &mut self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> io::Result<bool> {
        self.disk().live.read_chunks(name, each)
    }
    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.disk().live.append(name, bytes)
    }
    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        self.disk().live.truncate(name, len)
    }
    fn sync(&mut self, name: &str) -> io::Result<()> {
        let mut disk = self.disk();
        disk.syncs += 1;
        if disk.fail_sync == Some(disk.syncs) {
            return Err(io::Error::other("injected fsync failure"));
        }
        let len = disk.live.file(name).map_or(0, <[u8]>::len);
        disk.durable.insert(name.to_owned(), len);
        disk.live.sync(name)
    }
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let mut disk = self.disk();
        if let Some(len) = disk.durable.remove(from) {
            disk.durable.insert(to.to_owned(), len);
        }
        disk.live.rename(from, to)
    }
    fn remove(&mut self, name: &str) -> io::Result<()> {
        let mut disk = self.disk();
        disk.durable.remove(name);
        disk.live.remove(name)
    }
    fn sync_dir(&mut self) -> io::Result<()> {
        self.disk().live.sync_dir()
    }
    fn identity(&mut self, name: &str) -> io::Result<Identity> {
        self.disk().live.identity(name)
    }
    fn entry(&mut self, name: &str) -> io::Result<Option<Entry>> {
        self.disk().live.entry(name)
    }

    fn stamp(&mut self, name: &str) -> io::Result<Option<Stamp>> {
        self.disk().live.stamp(name)
    }
}

/// One schedule: three parkers (request 3's line invalid) beside a boundary and a settle of
/// everything parked, the `fail_sync`-th fsync after the create failing if set. Checks that each
/// caller got its own answer, that every acknowledged line is in the durable image (parked or
/// delivered), that no seq was given twice, and that a failed fsync poisoned the handle.
fn parkers_beside_a_boundary(fail_sync: Option<u64>) {
    let tracked = Tracked::default();
    let queue = Queue::with_storage(tracked.clone(), "m", Config::default()).expect("create");
    let created_syncs = tracked.disk().syncs;
    tracked.disk().fail_sync = fail_sync.map(|n| created_syncs + n);
    let queue = SharedQueue::new(queue);
    let lines = [(1u64, "one"), (2, "two"), (3, "bad\nline")];
    let parkers: Vec<_> = lines
        .iter()
        .map(|&(request, line)| {
            let queue = queue.clone();
            thread::spawn(move || (request, queue.park(RequestId(request), line)))
        })
        .collect();
    let mut delivered = Vec::new();
    if let Ok(Some(batch)) = queue.boundary(Budget(usize::MAX)) {
        let outcomes = vec![Outcome::Delivered; batch.items.len()];
        if queue.settle(batch.id, &outcomes).is_ok() {
            delivered.extend(batch.items.iter().map(|item| item.seq));
        }
    }
    let answers: Vec<(u64, Result<Seq, ErrorKind>)> = parkers
        .into_iter()
        .map(|parker| {
            let (request, answer) = parker.join().expect("a parker");
            (request, answer.map(Parked::seq).map_err(|e| e.kind()))
        })
        .collect();
    let image = Queue::with_storage(tracked.durable_image(), "m", Config::default())
        .expect("the durable image opens");
    let mut seqs = BTreeSet::new();
    for (request, answer) in &answers {
        match answer {
            Ok(seq) => {
                assert!(seqs.insert(*seq), "seq {seq:?} given twice: {answers:?}");
                let kept = image
                    .find(RequestId(*request))
                    .is_some_and(|i| i.seq == *seq)
                    || delivered.contains(seq);
                assert!(
                    kept,
                    "request {request} acknowledged as {seq:?}, not durable"
                );
            }
            // M10: a handle poisoned before the caller's group refuses it whatever its line.
            Err(ErrorKind::Poisoned) if fail_sync.is_some() => {}
            Err(kind) if *request == 3 => assert_eq!(*kind, ErrorKind::InvalidLine),
            Err(kind) => {
                assert!(
                    fail_sync.is_some(),
                    "request {request} failed with {kind:?}"
                );
                assert_eq!(*kind, ErrorKind::Io);
            }
        }
    }
    if answers.iter().any(|(_, a)| *a == Err(ErrorKind::Io)) {
        assert_eq!(queue.is_poisoned().ok(), Some(true));
    }
}

/// D16, D22, M10 under random schedules and under PCT (which finds bugs of a few ordering
/// points with a known probability), without and with a failed fsync at each of the first four.
#[test]
fn d16_group_commit_holds_under_every_explored_schedule() {
    for fail_sync in [None, Some(1), Some(2), Some(3), Some(4)] {
        ::shuttle::check_random(move || parkers_beside_a_boundary(fail_sync), schedules());
        ::shuttle::check_pct(move || parkers_beside_a_boundary(fail_sync), schedules(), 3);
    }
}

/// The canary: a hand-off that sets its flag under the lock but never signals. A schedule where
/// the waiter waits first leaves it waiting for ever; shuttle must find that schedule (and report
/// the deadlock), or the searches above prove nothing.
fn lost_wakeup() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let setter = Arc::clone(&pair);
    thread::spawn(move || {
        *setter.0.lock().expect("lock") = true;
        // Wrong on purpose: no `setter.1.notify_one()`.
    });
    let (ready, signal) = &*pair;
    let mut guard = ready.lock().expect("lock");
    while !*guard {
        guard = signal.wait(guard).expect("wait");
    }
}

#[test]
fn the_canary_lost_wakeup_is_caught() {
    let caught = std::panic::catch_unwind(|| ::shuttle::check_random(lost_wakeup, 1_000));
    assert!(
        caught.is_err(),
        "shuttle ran 1,000 schedules of a lost wake-up without a failure"
    );
}
