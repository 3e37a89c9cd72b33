//! Crash recovery (M5, M7, D9): a torn last append cut off at every byte, leftover temp files,
//! and the directory fsyncs that make a new or replaced mirror durable.

use super::*;

/// M7, D9: cutting the file at every byte (a crash tearing the last append anywhere) opens to
/// exactly the state of the complete records before the cut; the torn tail is cut off and
/// fsynced, and the queue works on. A cut inside the header is Corrupt (M2: it cannot happen).
#[test]
fn crash_tearing_the_last_append_at_every_byte_recovers_the_prefix() -> TestResult {
    //= spec/mirror.md#m7-torn-final-record
    //= type=test
    //# On open, a final segment that does not end in `\n` (after at least a complete header) is a
    //# **torn append**: the reader MUST report it (`Decoded::torn_len`), and the queue MUST cut the
    //# file to the end of the last complete record and fsync it before writing anything else.
    // Build a log with every record type: park, batch, settle (with a failure), attempt.
    // No remembered window: a cut before the counters record leaves a file of window 0,
    // which an open with another size would resize (an append, D3).
    let config = Config {
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    queue.park(RequestId(1), "one é")?;
    queue.park(RequestId(2), "two")?;
    let batch = queue.boundary(Budget(5))?.ok_or("parked")?;
    queue.park(RequestId(3), "three")?;
    queue.settle(batch.id, &[Outcome::Failed])?;
    queue.boundary(Budget(100))?.ok_or("parked")?;
    // A crash, and the recovered batch handed again (an attempt record).
    let mut queue = Queue::with_storage(queue.into_storage(), "m", config.clone())?;
    queue.boundary(Budget(100))?.ok_or("recovered")?;
    assert_eq!(queue.in_flight().map(|b| b.attempt), Some(Attempt(2)));
    let full = queue.into_storage().file("m").ok_or("exists")?.to_vec();
    let (dir, path) = temp_mirror()?;
    let header_len = full.iter().position(|&b| b == b'\n').ok_or("a header")? + 1;
    let mut checked = 0;
    for cut in 0..=full.len() {
        fs::write(&path, &full[..cut])?;
        let opened = Queue::open_with(&path, config.clone());
        if cut < header_len {
            let err = opened
                .map(|_| ())
                .err()
                .ok_or("a cut header must not open")?;
            assert_eq!(err.kind(), ErrorKind::Corrupt);
            assert_eq!(fs::read(&path)?, &full[..cut]);
            continue;
        }
        let mut queue = opened?;
        let complete = full[..cut]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let expected = mirror::decode(&full[..complete])?;
        assert_eq!(queue.state(), &expected, "cut at {cut}");
        assert_eq!(
            fs::read(&path)?,
            &full[..complete],
            "torn tail cut off at {cut}"
        );
        checked += 1;
        if cut % 7 != 0 && cut != complete {
            continue;
        }
        // The queue works on after the cut: park and reopen.
        let seq = queue.park(RequestId(9), "after")?;
        drop(queue);
        let queue = Queue::open_with(&path, config.clone())?;
        assert_eq!(queue.parked().last().map(|i| i.seq), Some(seq.seq()));
    }
    assert!(checked > 100);
    drop(dir);
    Ok(())
}

/// M5: a crash while a new mirror is created (temp file written, not renamed) leaves no mirror;
/// the next open removes the temp file and creates the mirror.
#[test]
fn crash_during_create_leaves_no_mirror_and_reopen_creates_it() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it MUST:
    //# write the complete content to `<name>.tmp` (created with mode 0600), fsync it, rename it
    //# over `<name>`, and fsync the directory; only then is the new file durable.
    let (dir, path) = temp_mirror()?;
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::write(&tmp, &header().as_bytes()[..10])?;
    let mut queue = Queue::open(&path)?;
    assert!(!tmp.exists());
    queue.park(RequestId(1), "x")?;
    drop(queue);
    assert_eq!(Queue::open(&path)?.parked().len(), 1);
    Ok(())
}

/// M5, M12: a crash during compaction (temp file complete or partial, not renamed) leaves the
/// old log authoritative; the temp file is removed on open.
#[test]
fn crash_during_compaction_keeps_the_old_log() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it MUST:
    //# write the complete content to `<name>.tmp` (created with mode 0600), fsync it, rename it
    //# over `<name>`, and fsync the directory; only then is the new file durable.
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed (followed by a
    //# directory fsync) — but only after the mirror itself decoded without error (M11).
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "kept")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let state = queue.state().clone();
    drop(queue);
    let tmp = dir.path().join("s1.mirror.tmp");
    // A complete snapshot of a later state (the batch settled) that never got renamed.
    let mut settled = state.clone();
    settled.in_flight = None;
    for partial in [
        mirror::encode(&settled),
        mirror::encode(&settled)[..20].to_vec(),
    ] {
        fs::write(&tmp, &partial)?;
        let queue = Queue::open(&path)?;
        assert_eq!(queue.state(), &state);
        assert_eq!(queue.in_flight().map(|b| b.id), Some(batch.id));
        assert!(!tmp.exists());
    }
    Ok(())
}

/// D9, D10: a crash (the queue dropped) after each step of the loop loses nothing acknowledged
/// and replays an unsettled batch as a repeat.
#[test]
fn crash_after_each_step_recovers_what_was_acknowledged() -> TestResult {
    //= spec/delivery.md#d7-failure-isolation
    //= type=test
    //# A crash is not a failure: it MUST NOT change `failures`.
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be exactly
    //# one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a dead letter
    //# until an explicit discard (D8) deletes it, through any sequence of boundaries, settles,
    //# failures, crashes and recoveries.
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# In particular, items MUST NOT leave the mirror before their batch is settled (no clear
    //# before hand-over), and a batch MUST NOT be settled `Delivered` on the daemon's behalf.
    let (_dir, path) = temp_mirror()?;
    // After park: parked.
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "a")?;
    queue.park(RequestId(2), "b")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.parked().len(), 2);
    // After boundary: in flight, repeat next life.
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(
        queue.in_flight().map(|b| (b.id, b.attempt)),
        Some((batch.id, Attempt(1)))
    );
    let repeat = queue.boundary(Budget(100))?.ok_or("recovered")?;
    assert_eq!(repeat.attempt, Attempt(2));
    // After settle with one failure: the failed item parked, nothing in flight.
    queue.settle(repeat.id, &[Outcome::Delivered, Outcome::Failed])?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert!(queue.in_flight().is_none());
    assert_eq!(
        queue
            .parked()
            .iter()
            .map(|i| (i.seq, i.failures))
            .collect::<Vec<_>>(),
        vec![(Seq(2), 1)]
    );
    let next = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!((next.id, next.attempt), (BatchId(2), Attempt(1)));
    Ok(())
}

/// M5: every whole-mirror write and the removal of a leftover temp file on recovery is
/// followed by a directory fsync (the count is exact, not a bound). Kills `delete !` in
/// `Queue::replace_durable` and in `Queue::with_storage`'s leftover-temp branch.
#[test]
fn directory_fsyncs_follow_create_and_leftover_removal() -> TestResult {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it MUST:
    //# write the complete content to `<name>.tmp` (created with mode 0600), fsync it, rename it
    //# over `<name>`, and fsync the directory; only then is the new file durable.
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed (followed by a
    //# directory fsync) — but only after the mirror itself decoded without error (M11).
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let mut storage = queue.into_storage();
    assert_eq!(
        storage.dir_syncs(),
        1,
        "create: temp, fsync, rename, dir fsync"
    );
    let reopened = Queue::with_storage(storage.clone(), "m", Config::default())?;
    assert_eq!(
        (reopened.storage().dir_syncs(), reopened.storage().syncs()),
        (storage.dir_syncs() + 1, storage.syncs() + 1),
        "a clean reopen writes nothing and fsyncs the mirror and the directory (M10)"
    );
    storage.set_file("m.tmp", b"unfinished compaction".to_vec());
    let reopened = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(reopened.storage().names(), vec!["m"]);
    assert_eq!(
        reopened.storage().dir_syncs(),
        2,
        "the removal of the temp file is made durable, with one directory fsync"
    );
    Ok(())
}

/// M7 on the in-memory storage the harnesses build on: a torn final append is cut off on
/// open, so the next park follows the last complete record and the log decodes. Kills
/// `MemStorage::truncate -> Ok(())`.
#[test]
fn torn_tail_is_cut_in_memory_storage_too() -> TestResult {
    //= spec/mirror.md#m7-torn-final-record
    //= type=test
    //# On open, a final segment that does not end in `\n` (after at least a complete header) is a
    //# **torn append**: the reader MUST report it (`Decoded::torn_len`), and the queue MUST cut the
    //# file to the end of the last complete record and fsync it before writing anything else.
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "one")?;
    let mut storage = queue.into_storage();
    let whole = storage.file("m").ok_or("mirror")?.to_vec();
    let mut torn = whole.clone();
    torn.extend_from_slice(b"0123abcd {\"type\":\"pa");
    storage.set_file("m", torn);
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(queue.storage().file("m"), Some(whole.as_slice()));
    queue.park(RequestId(2), "two")?;
    let log = queue.storage().file("m").ok_or("mirror")?;
    assert_eq!(mirror::decode(log)?, *queue.state());
    Ok(())
}
