//! The mirror's on-disk format (M1-M3, M6, M12): what each operation appends, snapshots that
//! round-trip, and the bytes a reopen reads back.

use super::*;

/// A small deterministic generator, so the round-trip test covers many shapes without a
/// property-testing dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Drives a queue with random parks, boundaries and settles (failures included) and returns it.
fn random_workload<S: Storage>(queue: &mut Queue<S>, rng: &mut Rng, steps: usize) -> TestResult {
    for step in 0..steps {
        match rng.below(4) {
            0 | 1 => {
                let len = rng.below(40) as usize;
                let line: String = (0..len)
                    .map(|i| {
                        ['a', 'é', '"', '\\', ' ', '\t', '{', '\u{1F600}', '\r', '\0']
                            [(i + step) % 10]
                    })
                    .collect();
                // One line per request (D3): the step number is a fresh request.
                queue.park(RequestId(step as u64 * 1000 + rng.below(1000)), &line)?;
            }
            2 => {
                if queue.in_flight().is_none() {
                    queue.boundary(Budget(rng.below(120) as usize))?;
                }
            }
            _ => {
                if let Some(batch) = queue.in_flight().cloned() {
                    let outcomes: Vec<Outcome> = batch
                        .items
                        .iter()
                        .map(|_| {
                            if rng.below(3) == 0 {
                                Outcome::Failed
                            } else {
                                Outcome::Delivered
                            }
                        })
                        .collect();
                    queue.settle(batch.id, &outcomes)?;
                }
            }
        }
    }
    Ok(())
}

/// M1, M2, M3: encode(state) decodes to state, and the append log decodes to the state the queue
/// holds in memory after every step, for many random workloads.
#[test]
fn format_round_trips_snapshot_and_log() -> TestResult {
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# Applying the records in order to the empty state (no items, no batch, counters 1) MUST give
    //# the file's state; a record that is impossible in the state built so far MUST be rejected
    //# (M11).
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# A snapshot is the header and the records that rebuild the state: the dead letters and every
    //# live item (parked or in flight) as `dead`/`park` records in seq order, then a `flight`
    //# record naming the in-flight batch's items, then the remembered window as `done` records,
    //# oldest first, then the applied window of M17 as `op` records, oldest first, then `next`
    //# with the window's size.
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        random_workload(&mut queue, &mut rng, 80)?;
        let state = queue.state().clone();
        assert_eq!(
            mirror::decode(&mirror::encode(&state))?,
            state,
            "seed {seed}"
        );
        let storage = queue.into_storage();
        let log = storage.file("m").ok_or("mirror exists")?;
        assert_eq!(mirror::decode(log)?, state, "seed {seed}");
        let reopened = Queue::with_storage(storage.clone(), "m", Config::default())?;
        assert_eq!(reopened.state(), &state);
    }
    Ok(())
}

/// M1: the exact bytes of a fresh mirror and of a park record.
#[test]
fn format_bytes_are_as_specified() -> TestResult {
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# The first record MUST be the header `{"format":"parkline-mirror","version":4}`, with the
    //# mirror's life (M17) as a third field `"life"` of 16 lowercase hexadecimal digits.
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# Every record after the header is a JSON object with a `"type"` field and exactly the fields
    //# below (a reader MUST reject unknown types and unknown fields).
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Snapshots MUST end with a `next` record carrying the counters, so ids are not reused after
    //# the items that used them were dropped.
    //= spec/delivery.md#d24-times
    //= type=test
    //# Each park MUST record the time it parked the line, from the queue's clock.
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let mut queue = queue.with_clock(fixed());
    queue.park(RequestId(7), "hi \"you\"")?;
    let life = queue.state().life;
    assert!(life.is_some(), "a new mirror names its life");
    let storage = queue.into_storage();
    let text = String::from_utf8(storage.file("m").ok_or("exists")?.to_vec())?;
    let expected = header_of(life)
        + &rec(r#"{"type":"next","seq":1,"batch":1,"memory":256}"#)
        + &rec(&format!(
            r#"{{"type":"park","seq":1,"request":7,"line":"hi \"you\"","failures":0,"handed":0,"at":{NOW}}}"#
        ));
    assert_eq!(text, expected);
    Ok(())
}

/// M12, M6: a long-running queue compacts its log (bounded size), keeps its state and never
/// reuses a seq or batch id after compaction.
#[test]
fn compaction_bounds_the_log_and_keeps_counters() -> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A batch id that was returned by `boundary` MUST NOT later denote a different membership.
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# Batch ids of new batches MUST increase.
    //= spec/delivery.md#d17-order
    //= type=test
    //# `park` MUST assign seqs that strictly increase and are never reused within a mirror (when
    //# none is left, it fails with `Exhausted` rather than wrap, D10 "Attempt ceiling").
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Seqs and batch ids MUST strictly increase along the file; a reader MUST reject a
    //# `park`/`dead` record whose seq, or a `batch` record whose id, is below the current counter.
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Snapshots MUST end with a `next` record carrying the counters, so ids are not reused after
    //# the items that used them were dropped.
    //= spec/mirror.md#m9-file-mode-0600
    //= type=test
    //# Every file the queue creates (mirror, temp file, lock file) MUST be created with mode 0600
    //# (before the umask).
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open_with(&path, small_slack())?;
    let line = "y".repeat(8000);
    let mut max_len = 0u64;
    for n in 0..60u64 {
        queue.park(RequestId(n), &line)?;
        let batch = queue.boundary(Budget(1000))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Delivered])?;
        max_len = max_len.max(fs::metadata(&path)?.len());
    }
    // 60 parks of 8000 bytes would be > 480 KB without compaction.
    assert!(max_len < 3 * SMALL_SLACK, "log grew to {max_len}");
    assert_eq!(fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.park(RequestId(1), "next")?, Parked::Held(Seq(61)));
    assert_eq!(queue.boundary(Budget(10))?.map(|b| b.id), Some(BatchId(61)));
    assert!(!path.with_extension("mirror.tmp").exists());
    Ok(())
}

/// M4, M12: fsyncs per operation are bounded whatever the batch size: park 1, boundary 1,
/// settle 1 (or 2 and a directory fsync when it compacts); D22, D21: a group park of 300 lines
/// and a redrive of 300 dead letters 1 each.
#[test]
fn fsyncs_per_operation_are_bounded() -> TestResult {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `boundary` and `settle` MUST likewise return only once their record is durable.
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# `Queue::redrive(seqs)` and `Queue::redrive_all()` MUST move the named dead letters (all of
    //# them) back to the parked list in one durable record (one append, one fsync), each at its
    //# seq's place in the parked list (which stays in seq order), with `failures` reset to 0 and
    //# `handed` kept.
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# `Queue::park_all(lines)` MUST park every new line of the slice, in slice order with
    //# consecutive seqs, in one record (one append and one fsync, whatever the number of lines), or
    //# none of them: a bad line (D3) MUST reject the whole call and write nothing, naming the first
    //# bad line's index; a slice with no new line writes nothing; seqs that would reach `u64::MAX`
    //# give `Exhausted`.
    //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
    //= type=test
    //# The number of fsyncs of an operation MUST NOT depend on the number of items: a boundary
    //# costs a bounded number of fsyncs whatever the batch size, because fsyncs dominate the cost
    //# and a large backlog is exactly when batching must stay cheap.
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    let counts = |q: &Queue<MemStorage>| (q.storage().syncs(), q.storage().dir_syncs());
    for request in 0..300 {
        let before = counts(&queue);
        queue.park(RequestId(request), "line")?;
        assert_eq!(counts(&queue), (before.0 + 1, before.1));
    }
    let before = counts(&queue);
    let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
    assert_eq!(batch.items.len(), 300);
    assert_eq!(counts(&queue), (before.0 + 1, before.1));
    let before = counts(&queue);
    queue.settle(batch.id, &[Outcome::Delivered; 300])?;
    let after = counts(&queue);
    assert!(
        after.0 - before.0 <= 2 && after.1 - before.1 <= 1,
        "{before:?} -> {after:?}"
    );
    let group: Vec<(RequestId, &str)> = (300..600).map(|n| (RequestId(n), "line")).collect();
    let before = counts(&queue);
    assert_eq!(queue.park_all(&group)?.len(), 300);
    assert_eq!(counts(&queue), (before.0 + 1, before.1));
    let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Failed; 300])?; // failures_max 1: 300 dead letters
    let before = counts(&queue);
    assert_eq!(queue.redrive_all()?.len(), 300);
    assert_eq!(counts(&queue), (before.0 + 1, before.1));
    Ok(())
}

/// M3, D10: a state whose in-flight batch is a repeat (attempt 2) encodes to a snapshot that
/// decodes back to it, and reopens to it. Kills `< with >` in `MirrorState::apply`'s
/// attempt check (which would refuse any batch record with attempt above 1).
#[test]
fn snapshot_of_a_repeat_in_flight_round_trips() -> TestResult {
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# MUST NOT be counted in its `remaining`;
    //= spec/delivery.md#d13-trailer-count
    //= type=test
    //# It MUST NOT count lines parked later (D2) or dead letters (D8).
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# A snapshot is the header and the records that rebuild the state: the dead letters and every
    //# live item (parked or in flight) as `dead`/`park` records in seq order, then a `flight`
    //# record naming the in-flight batch's items, then the remembered window as `done` records,
    //# oldest first, then the applied window of M17 as `op` records, oldest first, then `next`
    //# with the window's size.
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "one")?;
    queue.park(RequestId(2), "two")?;
    queue.boundary(Budget(4))?.ok_or("parked")?;
    queue.park(RequestId(3), "three")?;
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    let repeat = queue.boundary(Budget(4))?.ok_or("recovered")?;
    assert_eq!((repeat.attempt, repeat.remaining), (Attempt(2), 1));
    let state = queue.state().clone();
    let bytes = mirror::encode(&state);
    assert_eq!(mirror::decode(&bytes)?, state);
    let mut storage = MemStorage::new();
    storage.set_file("s", bytes);
    let reopened = Queue::with_storage(storage, "s", Config::default())?;
    assert_eq!(reopened.state(), &state);
    Ok(())
}
