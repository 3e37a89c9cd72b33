//! The daemon's side of the contract: a reopen in place (M10), a session's end (M15) and the
//! counters a daemon exports (`Queue::stats`).

use super::*;

/// M10: after `Poisoned`, `reopen` puts the same handle back to work on what the mirror kept; a
/// reopen that fails leaves it poisoned, and a later reopen succeeds.
#[test]
fn m10_reopen_in_place_after_poison() -> TestResult {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# `Queue::reopen` MUST release the handle's lock before it opens the mirror again; until a
    //# reopen succeeds the handle MUST refuse every call with `Poisoned`.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "kept")?;
    let kept = fs::read(&path)?;
    // Poison it: the mirror is unlinked under the handle (M8's link check).
    fs::remove_file(&path)?;
    assert_eq!(
        queue.park(RequestId(2), "lost").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    assert!(queue.is_poisoned());
    // A damaged mirror in its place: the reopen fails and the handle stays poisoned.
    fs::write(&path, b"not a mirror\n")?;
    assert_eq!(
        queue.reopen().map_err(|e| e.kind()),
        Err(ErrorKind::Corrupt)
    );
    assert_eq!(
        queue.park(RequestId(3), "x").map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    // The operator puts the good file back; the same handle reopens and works.
    fs::write(&path, &kept)?;
    queue.reopen()?;
    assert!(!queue.is_poisoned());
    let seqs: Vec<Seq> = queue.parked().iter().map(|item| item.seq).collect();
    assert_eq!(seqs, [Seq(1)]);
    assert_eq!(queue.park(RequestId(4), "after")?, Parked::Held(Seq(2)));
    // The lock was released and taken again: a second handle is still refused.
    let err = Queue::open(&path).map(|_| ()).err().ok_or("locked")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    Ok(())
}

/// M15: a session's end removes the mirror and its lock file only when nothing is held, unless
/// forced; the handle is then closed, and a reopen starts a new mirror.
#[test]
fn m15_remove_refuses_held_lines_unless_forced() -> TestResult {
    //= spec/mirror.md#m15-removal-at-the-end-of-a-session
    //= type=test
    //# `Queue::remove` MUST refuse with `NotEmpty`, removing nothing, while lines are parked,
    //# in flight or dead, unless forced.
    //= spec/mirror.md#m15-removal-at-the-end-of-a-session
    //= type=test
    //# It MUST remove the temp file, then the mirror, then the lock file, then fsync the
    //# directory, and only then release the lock; a file already gone is not an error.
    let (dir, path) = temp_mirror()?;
    let lock = dir.path().join("s1.mirror.lock");
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "held")?;
    let before = fs::read(&path)?;
    let err = queue.remove(false).err().ok_or("held")?;
    assert_eq!(err.kind(), ErrorKind::NotEmpty);
    assert_eq!(fs::read(&path)?, before);
    // Still usable, and still the only handle.
    let batch = queue.boundary(Budget(100))?.ok_or("one line")?;
    let err = queue.remove(false).err().ok_or("in flight")?;
    assert_eq!(err.kind(), ErrorKind::NotEmpty);
    queue.settle(batch.id, &[Outcome::Delivered])?;
    queue.remove(false)?;
    assert!(!path.exists() && !lock.exists());
    assert_eq!(names_besides_dir_lock(dir.path())?.len(), 0);
    assert_eq!(
        queue.park(RequestId(2), "x").map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    // The lock went with the handle's files: another handle opens a new, empty mirror.
    let other = Queue::open(&path)?;
    assert!(other.parked().is_empty());
    drop(other);
    queue.reopen()?;
    queue.park(RequestId(3), "forced away")?;
    queue.remove(true)?;
    assert!(!path.exists() && !lock.exists());
    Ok(())
}

/// `Queue::stats`: the handle's fsyncs, appends and compactions, and the queue's sizes now.
#[test]
fn stats_count_what_the_handle_did() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", small_slack())?;
    let before = queue.stats();
    // Creating the mirror wrote it whole: one fsync of the temp file, one of the directory.
    assert_eq!(
        (before.fsyncs, before.dir_fsyncs, before.appends),
        (1, 1, 0)
    );
    for request in 0..300 {
        queue.park(RequestId(request), &seed_line(request))?;
        let batch = queue.boundary(Budget(10_000))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Delivered])?;
    }
    let stats = queue.stats();
    let storage = queue.storage();
    assert_eq!(stats.fsyncs, storage.syncs());
    assert_eq!(stats.dir_fsyncs, storage.dir_syncs());
    assert!(stats.compactions > 0, "{stats:?}");
    assert_eq!(stats.appends + stats.compactions, 900);
    assert!(stats.fsync_max >= stats.fsync_last);
    assert_eq!(
        stats.fsync_durations.count(),
        stats.fsyncs + stats.dir_fsyncs
    );
    assert_eq!(
        (stats.parked, stats.in_flight, stats.dead_letters),
        (0, 0, 0)
    );
    assert_eq!(
        stats.mirror_bytes,
        storage.file("m").ok_or("mirror")?.len() as u64
    );
    Ok(())
}
