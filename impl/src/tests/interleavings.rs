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

/// The files as fsynced, shared with the test while the queue owns the storage: each file's
/// bytes as its last fsync left them (an empty file from its first append), and the number of
/// the fsync to fail.
#[derive(Debug, Default)]
struct Disk {
    durable: BTreeMap<String, Vec<u8>>,
    syncs: u64,
    fail_sync: Option<u64>,
}

/// Hooks over a `MemStorage` that keep its durable image in a [`Disk`].
#[derive(Debug, Clone, Default)]
struct Tracked(StdArc<StdMutex<Disk>>);

impl Tracked {
    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The mirror as a power loss now would leave it: each file as its last fsync left it.
    fn durable_image(&self) -> MemStorage {
        let mut image = MemStorage::new();
        for (name, bytes) in &self.disk().durable {
            image.set_file(name, bytes.clone());
        }
        image
    }
}

impl Hooks<MemStorage> for Tracked {
    fn append(&mut self, inner: &mut MemStorage, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.disk().durable.entry(name.to_owned()).or_default();
        inner.append(name, bytes)
    }
    fn truncate(&mut self, inner: &mut MemStorage, name: &str, len: u64) -> io::Result<()> {
        if let Some(bytes) = self.disk().durable.get_mut(name) {
            bytes.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        }
        inner.truncate(name, len)
    }
    fn sync(&mut self, inner: &mut MemStorage, name: &str) -> io::Result<()> {
        let mut disk = self.disk();
        disk.syncs += 1;
        if disk.fail_sync == Some(disk.syncs) {
            return Err(io::Error::other("injected fsync failure"));
        }
        let bytes = inner.file(name).unwrap_or_default().to_vec();
        disk.durable.insert(name.to_owned(), bytes);
        inner.sync(name)
    }
    fn rename(&mut self, inner: &mut MemStorage, from: &str, to: &str) -> io::Result<()> {
        let mut disk = self.disk();
        if let Some(bytes) = disk.durable.remove(from) {
            disk.durable.insert(to.to_owned(), bytes);
        }
        inner.rename(from, to)
    }
    fn remove(&mut self, inner: &mut MemStorage, name: &str) -> io::Result<()> {
        self.disk().durable.remove(name);
        inner.remove(name)
    }
}

/// One schedule: three parkers (request 3's line invalid) beside a boundary and a settle of
/// everything parked, the `fail_sync`-th fsync after the create failing if set. Checks that each
/// caller got its own answer, that every acknowledged line is in the durable image (parked or
/// delivered), that no seq was given twice, and that a failed fsync poisoned the handle.
fn parkers_beside_a_boundary(fail_sync: Option<u64>) {
    let tracked = Tracked::default();
    let storage = Seam::new(MemStorage::new(), tracked.clone());
    let queue = Queue::with_storage(storage, "m", Config::default()).expect("create");
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
