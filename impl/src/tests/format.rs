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
                queue.park(RequestId(rng.below(1000)), &line)?;
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
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(7), "hi \"you\"")?;
    let storage = queue.into_storage();
    let text = String::from_utf8(storage.file("m").ok_or("exists")?.to_vec())?;
    let expected = header()
        + &rec(r#"{"type":"next","seq":1,"batch":1}"#)
        + &rec(
            r#"{"type":"park","seq":1,"request":7,"line":"hi \"you\"","failures":0,"handed":0}"#,
        );
    assert_eq!(text, expected);
    Ok(())
}

/// M12, M6: a long-running queue compacts its log (bounded size), keeps its state and never
/// reuses a seq or batch id after compaction.
#[test]
fn compaction_bounds_the_log_and_keeps_counters() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    let line = "y".repeat(8000);
    let mut max_len = 0u64;
    for n in 0..60u64 {
        queue.park(RequestId(n), &line)?;
        let batch = queue.boundary(Budget(1000))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Delivered])?;
        max_len = max_len.max(fs::metadata(&path)?.len());
    }
    // 60 parks of 8000 bytes would be > 480 KB without compaction.
    assert!(
        max_len < 3 * crate::COMPACT_SLACK_BYTES,
        "log grew to {max_len}"
    );
    assert_eq!(fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.park(RequestId(1), "next")?, Seq(61));
    assert_eq!(queue.boundary(Budget(10))?.map(|b| b.id), Some(BatchId(61)));
    assert!(!path.with_extension("mirror.tmp").exists());
    Ok(())
}

/// M4, M12: fsyncs per operation are bounded whatever the batch size: park 1, boundary 1,
/// settle 1 (or 2 and a directory fsync when it compacts).
#[test]
fn fsyncs_per_operation_are_bounded() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let counts = |q: &Queue<MemStorage>| (q.storage().syncs(), q.storage().dir_syncs());
    for _ in 0..300 {
        let before = counts(&queue);
        queue.park(RequestId(1), "line")?;
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
    Ok(())
}

/// M3, D10: a state whose in-flight batch is a repeat (attempt 2) encodes to a snapshot that
/// decodes back to it, and reopens to it. Kills `< with >` in `MirrorState::apply`'s
/// attempt check (which would refuse any batch record with attempt above 1).
#[test]
fn snapshot_of_a_repeat_in_flight_round_trips() -> TestResult {
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
