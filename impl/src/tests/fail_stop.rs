//! Fail-stop (M10): a failed write or fsync poisons the handle, is never retried, and the next
//! open reads what the mirror kept.

use super::*;

/// Hooks that fail the n-th call of one kind, then behave (so a retry would "succeed": the
/// queue must not retry).
#[derive(Debug)]
struct Failing {
    fail: &'static str,
    countdown: u32,
}

/// A memory storage behind [`Failing`].
type FailingStorage = Seam<MemStorage, Failing>;

impl Failing {
    fn hit(&mut self, what: &str) -> io::Result<()> {
        if what == self.fail {
            if self.countdown == 0 {
                self.countdown = u32::MAX;
                return Err(io::Error::other(format!("injected {what} failure")));
            }
            self.countdown -= 1;
        }
        Ok(())
    }
}

impl Hooks<MemStorage> for Failing {
    fn append(&mut self, inner: &mut MemStorage, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.hit("append")?;
        inner.append(name, bytes)
    }
    fn sync(&mut self, inner: &mut MemStorage, name: &str) -> io::Result<()> {
        self.hit("sync")?;
        inner.sync(name)
    }
    fn rename(&mut self, inner: &mut MemStorage, from: &str, to: &str) -> io::Result<()> {
        self.hit("rename")?;
        inner.rename(from, to)
    }
    fn sync_dir(&mut self, inner: &mut MemStorage) -> io::Result<()> {
        self.hit("sync_dir")?;
        inner.sync_dir()
    }
}

/// M10: after a failed fsync (or append) every later call returns Poisoned, nothing more is
/// written, and reopening reads what the mirror kept.
#[test]
fn failed_fsync_poisons_the_queue() -> TestResult {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# After a failed write or fsync the handle MUST refuse further work until reopened
    //# (`Poisoned`; see `mirror.md`).
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
    //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed fsync.
    for fail in ["sync", "append"] {
        // Creating the mirror costs one sync and one append; fail the third park's.
        let storage = Seam::new(MemStorage::new(), Failing { fail, countdown: 3 });
        let mut queue = Queue::with_storage(storage, "m", Config::default())?;
        queue.park(RequestId(1), "a")?;
        queue.park(RequestId(2), "b")?;
        let err = queue
            .park(RequestId(3), "c")
            .map(|_| ())
            .err()
            .ok_or("injected")?;
        assert_eq!(err.kind(), ErrorKind::Io, "{fail}");
        let source = std::error::Error::source(&err).ok_or("the injected error is the source")?;
        assert!(source.to_string().contains("injected"), "{err}");
        assert!(queue.is_poisoned());
        let len = queue.into_storage();
        let bytes = len.inner.file("m").ok_or("exists")?.to_vec();
        let mut queue = Queue::with_storage(len, "m", Config::default())?;
        // A fresh handle over the same storage works; the poisoned one is gone. Re-poison:
        queue.park(RequestId(4), "d")?;
        let storage = queue.into_storage();
        assert_ne!(storage.inner.file("m").map(<[u8]>::to_vec), Some(bytes));
    }
    // Every call after the failure is Poisoned and writes nothing.
    let storage = Seam::new(
        MemStorage::new(),
        Failing {
            fail: "sync",
            countdown: 2,
        },
    );
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    queue.park(RequestId(1), "a")?;
    assert_eq!(
        queue.park(RequestId(2), "b").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    let mut queue = poisoned_queue(queue.into_storage())?;
    let before = queue.storage().inner.clone();
    assert_eq!(
        queue.park(RequestId(3), "c").map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    assert_eq!(
        queue.boundary(Budget(10)).map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    assert_eq!(
        queue
            .settle(BatchId(1), &[Outcome::Delivered])
            .map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    let err = queue
        .park(RequestId(3), "c")
        .map(|_| ())
        .err()
        .ok_or("poisoned")?;
    assert!(err.to_string().contains("reopen"), "{err}");
    assert_eq!(queue.into_storage().inner.file("m"), before.file("m"));
    Ok(())
}

/// Opens over `storage` and poisons the handle with a failed fsync on its first park.
fn poisoned_queue(
    mut storage: FailingStorage,
) -> Result<Queue<FailingStorage>, Box<dyn std::error::Error>> {
    storage.hooks.fail = "sync";
    // The open's own fsync of the mirror (M10) passes; the park's fails.
    storage.hooks.countdown = 1;
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(
        queue.park(RequestId(0), "z").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    // The failing storage now "works" again: a retry would succeed, but the queue refuses.
    assert!(queue.is_poisoned());
    Ok(queue)
}

/// M10: a failed boundary write or settle fsync poisons too; a failed rename during compaction
/// poisons and the old log stays authoritative.
#[test]
fn failed_boundary_and_settle_writes_poison_the_queue() -> TestResult {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# After a failed write or fsync the handle MUST refuse further work until reopened
    //# (`Poisoned`; see `mirror.md`).
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
    //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed fsync.
    for (fail, countdown) in [("sync", 2u32), ("sync", 3u32)] {
        let storage = Seam::new(MemStorage::new(), Failing { fail, countdown });
        let mut queue = Queue::with_storage(storage, "m", Config::default())?;
        queue.park(RequestId(1), "a")?; // sync 2
        let result = queue
            .boundary(Budget(10)) // sync 3
            .and_then(|b| queue.settle(b.map(|b| b.id).unwrap_or_default(), &[Outcome::Delivered]));
        assert_eq!(result.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::Io));
        assert_eq!(
            queue.park(RequestId(2), "b").map_err(|e| e.kind()),
            Err(ErrorKind::Poisoned)
        );
    }
    Ok(())
}

/// Hooks whose appends to temp files fail with "no space left on device" while `full`.
#[derive(Debug)]
pub(super) struct TempFull {
    // Shared with the test, which frees the disk while the queue owns the storage.
    pub(super) full: std::rc::Rc<std::cell::Cell<bool>>,
}

/// A memory storage behind [`TempFull`].
pub(super) type FullTemp = Seam<MemStorage, TempFull>;

impl Hooks<MemStorage> for TempFull {
    fn append(&mut self, inner: &mut MemStorage, name: &str, bytes: &[u8]) -> io::Result<()> {
        if self.full.get() && name.ends_with(".tmp") {
            // A real ENOSPC may have written part of the snapshot first.
            inner.append(name, &bytes[..bytes.len() / 2])?;
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
        }
        inner.append(name, bytes)
    }
}

/// M10, M12: a settle whose compaction cannot write its temp file (a full disk) still settles:
/// the compaction is abandoned, its partial temp file removed, the settle record appended, and
/// the handle stays usable; once space is back the next settle compacts and the bound holds.
#[test]
fn m10_a_full_disk_at_the_temp_file_still_settles() -> TestResult {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# A compaction whose temp file cannot be written or fsynced MUST be abandoned without
    //# poisoning the handle: the temp file removed (a failed removal poisons), then the
    //# record appended to the mirror as if no compaction were due.
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let full = std::rc::Rc::new(std::cell::Cell::new(false));
    let storage = Seam::new(
        MemStorage::new(),
        TempFull {
            full: std::rc::Rc::clone(&full),
        },
    );
    let mut queue = Queue::with_storage(storage, "m", config.clone())?;
    queue.park(RequestId(1), "one")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let before = queue.storage().inner.file("m").ok_or("mirror")?.len();
    full.set(true);
    let settled = queue.settle(batch.id, &[Outcome::Delivered])?;
    assert_eq!(settled.delivered, [Seq(1)]);
    assert!(!queue.is_poisoned());
    assert_eq!(queue.stats().compactions_deferred, 1);
    assert_eq!(
        queue.storage().inner.names(),
        ["m"],
        "the partial temp file is gone"
    );
    let grown = queue.storage().inner.file("m").ok_or("mirror")?.len();
    assert!(grown > before, "the settle record was appended");
    // Space comes back: the next settle compacts.
    queue.park(RequestId(2), "two")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    full.set(false);
    queue.settle(batch.id, &[Outcome::Delivered])?;
    assert_eq!(queue.stats().compactions, 1);
    let state = queue.state().clone();
    let reopened = Queue::with_storage(queue.into_storage(), "m", config)?;
    assert_eq!(reopened.state(), &state);
    Ok(())
}
