//! Compaction (M12): when a settle rewrites the mirror as a snapshot, exactly as the rule says,
//! and the bound on the file's size it keeps.

use super::*;
use crate::Settlement;
use crate::engine::core::Core;
use crate::mirror::{MirrorState, Record};

/// The bytes of every line the state holds: parked, in flight and dead letters.
fn held_line_bytes(state: &MirrorState) -> u64 {
    state
        .parked
        .iter()
        .chain(&state.dead_letters)
        .chain(state.in_flight.iter().flat_map(|batch| &batch.items))
        .map(|item| item.line.len() as u64)
        .sum()
}

/// The compaction shortcut's floor is exactly the bytes of the lines held, after every
/// commit and on reopening, and never more than the snapshot. Kills
/// `Core::snapshot_bytes_floor -> 0 / 1` and `+= with *=` in `Core::commit` (a floor stuck
/// at 0 makes every settle encode the whole state).
#[test]
fn snapshot_floor_tracks_the_line_bytes_held() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# (An implementation MAY skip computing the exact snapshot when a lower bound of the new
    //# snapshot's length already shows no compaction is due; parkline uses the bytes of the lines
    //# the new state holds.)
    let config = Config {
        failures_max: 2,
        ..Config::default()
    };
    let mut core = Core::new(MirrorState::default(), config.clone());
    assert_eq!(core.snapshot_bytes_floor(), 0);
    let check = |core: &Core, expected: u64| {
        assert_eq!(core.snapshot_bytes_floor(), expected);
        assert_eq!(held_line_bytes(&core.state), expected);
        assert!(expected <= mirror::encode(&core.state).len() as u64);
    };
    for (n, line) in ["abc", "de", "fghij", "é"].into_iter().enumerate() {
        let step = park_step(&core, RequestId(n as u64), line, 0)?;
        core.commit(step.record.as_ref().ok_or("a record")?);
    }
    check(&core, 3 + 2 + 5 + 2);
    let step = core.boundary(Budget(7), 0)?;
    core.commit(step.record.as_ref().ok_or("a record")?);
    let batch = step.value.ok_or("parked")?;
    assert_eq!(batch.items.len(), 2);
    core.handed_over();
    check(&core, 12);
    // "abc" delivered, "de" failed once: the floor drops by 3 only.
    let step = core.settle(batch.id, &[Outcome::Delivered, Outcome::Failed], 0)?;
    core.commit(step.record.as_ref().ok_or("a record")?);
    core.settled();
    check(&core, 9);
    // "de" fails again and becomes a dead letter: still held, still counted.
    let step = core.boundary(Budget(3), 0)?;
    core.commit(step.record.as_ref().ok_or("a record")?);
    let batch = step.value.ok_or("parked")?;
    core.handed_over();
    let step = core.settle(batch.id, &[Outcome::Failed], 0)?;
    assert_eq!(step.value.dead, vec![Seq(2)]);
    core.commit(step.record.as_ref().ok_or("a record")?);
    core.settled();
    check(&core, 9);
    // A group park adds every line of the group (kills deleting the `Parks` arm of
    // `Core::added_line_bytes`, found by `.ci/mutants --shard 0/80`).
    let step = park_all_step(&core, &[(RequestId(8), "klm"), (RequestId(9), "no")], 0)?;
    core.commit(step.record.as_ref().ok_or("a record")?);
    check(&core, 9 + 3 + 2);
    // A core rebuilt from the state (reopen) starts from the same floor.
    let reopened = Core::new(core.state.clone(), config);
    check(&reopened, 14);
    Ok(())
}

/// The encoded length of one record.
fn record_len(record: &Record) -> u64 {
    mirror::encode_record(record).len() as u64
}

fn settle_record(batch: &Batch, settlement: &Settlement) -> Record {
    Record::Settle {
        batch: batch.id,
        delivered: settlement.delivered.clone(),
        failed: settlement.failed.clone(),
        dead: settlement.dead.clone(),
        at: Some(NOW),
    }
}

/// Settles `batch` and checks M12 exactly: the settle compacts if and only if the log with
/// the settle record would be longer than twice the new snapshot plus the slack, whatever the
/// rest slack; then the file is that snapshot, else it is the old log plus the settle record.
/// Returns whether it compacted.
fn settle_and_check_m12(
    queue: &mut Queue<MemStorage>,
    batch: &Batch,
    outcomes: &[Outcome],
) -> Result<bool, Box<dyn std::error::Error>> {
    let before = queue.storage().file("m").ok_or("mirror")?.to_vec();
    let dir_syncs = queue.storage().dir_syncs();
    let settlement = queue.settle(batch.id, outcomes)?;
    let record = settle_record(batch, &settlement);
    let snapshot = mirror::encode(queue.state());
    let grown = before.len() as u64 + record_len(&record);
    let (len, config) = (snapshot.len() as u64, queue.config());
    let due = grown > 2 * len + config.compact_slack_bytes;
    let after = queue.storage().file("m").ok_or("mirror")?;
    if due {
        assert_eq!(
            after,
            snapshot.as_slice(),
            "compaction due at {grown} bytes"
        );
        assert_eq!(queue.storage().dir_syncs(), dir_syncs + 1);
    } else {
        let mut expected = before;
        expected.extend_from_slice(&mirror::encode_record(&record));
        assert_eq!(
            after,
            expected.as_slice(),
            "no compaction due at {grown} bytes"
        );
        assert_eq!(queue.storage().dir_syncs(), dir_syncs);
    }
    Ok(due)
}

/// M12: the compaction rule holds exactly at every settle of a queue whose items keep
/// failing (the log grows by batch and settle records only, so the settle record is more
/// than half of each step and the crossing cannot hide). Kills `+ with -` / `+ with *` in
/// the log length of `Queue::settle`, `> with <` in its cheap pre-check and `* with +` /
/// `* with /` in the exact rule.
#[test]
fn compaction_happens_exactly_when_the_rule_says() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# At a `settle` (and a `redrive`, below), when the log with the new record would be longer
    //# than twice the snapshot of the **new state** (the state after the settle) plus the slack
    //# (`Config::compact_slack_bytes`, default `COMPACT_SLACK_BYTES`, 4 MiB), the queue MUST write
    //# that snapshot instead of appending the settle record, through M5 (temp file, fsync, rename,
    //# directory fsync).
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# (An implementation MAY skip computing the exact snapshot when a lower bound of the new
    //# snapshot's length already shows no compaction is due; parkline uses the bytes of the lines
    //# the new state holds.)
    let config = Config {
        failures_max: u32::MAX,
        ..small_slack()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(fixed());
    for n in 0..40u64 {
        queue.park(RequestId(n), "z")?;
    }
    let mut compactions = 0;
    for _ in 0..1500 {
        let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
        let outcomes = vec![Outcome::Failed; batch.items.len()];
        if settle_and_check_m12(&mut queue, &batch, &outcomes)? {
            compactions += 1;
        }
    }
    assert!(compactions >= 3, "only {compactions} compactions");
    assert_eq!(queue.parked().len(), 40);
    Ok(())
}

/// M12: "longer than" is strict: a settle that brings the log to exactly twice the snapshot
/// plus the slack appends, one byte more compacts. The log is steered to the threshold with
/// the lengths of delivered lines. Kills `> with >=` in the exact rule of `Queue::settle`.
#[test]
fn compaction_threshold_is_strict() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# At a `settle` (and a `redrive`, below), when the log with the new record would be longer
    //# than twice the snapshot of the **new state** (the state after the settle) plus the slack
    //# (`Config::compact_slack_bytes`, default `COMPACT_SLACK_BYTES`, 4 MiB), the queue MUST write
    //# that snapshot instead of appending the settle record, through M5 (temp file, fsync, rename,
    //# directory fsync).
    // Each settle drains the queue: no compaction at rest, so the rule above alone decides.
    let config = Config {
        rest_slack_bytes: u64::MAX,
        ..small_slack()
    };
    for extra in [0u64, 1] {
        let mut queue =
            Queue::with_storage(MemStorage::new(), "m", config.clone())?.with_clock(fixed());
        // One cycle parks a line of `len` bytes as seq n, hands it over as batch n, and
        // delivers it; its records' lengths, and the snapshot after it, are known ahead.
        let cycle = |n: u64, len: usize| {
            let park = Record::Park {
                seq: Seq(n),
                request: RequestId(n),
                line: "x".repeat(len).into(),
                failures: 0,
                handed: 0,
                at: Some(NOW),
            };
            let batch = Record::Batch {
                id: BatchId(n),
                attempt: Attempt(1),
                seqs: vec![Seq(n)],
                remaining: 0,
            };
            let settle = Record::Settle {
                batch: BatchId(n),
                delivered: vec![Seq(n)],
                failed: Vec::new(),
                dead: Vec::new(),
                at: Some(NOW),
            };
            let after = MirrorState {
                next_seq: Seq(n + 1),
                next_batch: BatchId(n + 1),
                life: Some(crate::Life(0)),
                ..MirrorState::default()
            };
            let snapshot = mirror::encode(&after).len() as u64;
            (
                record_len(&park) + record_len(&batch) + record_len(&settle),
                snapshot,
            )
        };
        let log_len = |queue: &Queue<MemStorage>| -> Result<u64, &'static str> {
            Ok(queue.storage().file("m").ok_or("mirror")?.len() as u64)
        };
        // The last cycle carries a short line (its floor must stay below the snapshot so
        // the cheap pre-check lets the exact rule decide).
        let last_len = 8usize;
        let mut n = 1u64;
        loop {
            let (last, snapshot) = cycle(n + 1, last_len);
            let target = 2 * snapshot + SMALL_SLACK + extra;
            let gap = target - log_len(&queue)? - last;
            let (fixed, _) = cycle(n, 0);
            // Fill with lines up to 2000 bytes; the one before the last closes the gap.
            let closing = gap <= fixed + 2000 + 500;
            let len = if closing {
                usize::try_from(gap - fixed)?
            } else {
                2000
            };
            queue.park(RequestId(n), &"x".repeat(len))?;
            let batch = queue.boundary(Budget(1 << 21))?.ok_or("parked")?;
            assert!(!settle_and_check_m12(
                &mut queue,
                &batch,
                &[Outcome::Delivered]
            )?);
            n += 1;
            if closing {
                break;
            }
        }
        let (last, snapshot) = cycle(n, last_len);
        assert_eq!(log_len(&queue)? + last, 2 * snapshot + SMALL_SLACK + extra);
        queue.park(RequestId(n), &"x".repeat(last_len))?;
        let batch = queue.boundary(Budget(1 << 21))?.ok_or("parked")?;
        let compacted = settle_and_check_m12(&mut queue, &batch, &[Outcome::Delivered])?;
        assert_eq!(compacted, extra == 1, "extra {extra}");
    }
    Ok(())
}

/// D3: an empty line is a line: it is parked, handed over and settled like any other,
/// also when every line held is empty (the compaction pre-check then sees 0 line bytes).
/// Kills `* with /` in `Queue::settle`'s pre-check (a division by that 0).
#[test]
fn empty_lines_park_hand_over_and_settle() -> TestResult {
    let mut queue =
        Queue::with_storage(MemStorage::new(), "m", Config::default())?.with_clock(fixed());
    queue.park(RequestId(1), "")?;
    queue.park(RequestId(2), "")?;
    let batch = queue.boundary(Budget(2))?.ok_or("parked")?;
    assert_eq!((batch.items.len(), batch.remaining), (2, 0));
    assert_eq!(
        batch.text(),
        "[parkline batch 1 attempt 1: 2 of 2 parked lines, 0 seen before, 2 bytes]\n\n\n\
         [parkline batch 1 end: 0 parked lines still undelivered, crc32 5be3136b]\n"
    );
    let settlement = queue.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
    assert_eq!(
        (settlement.delivered, settlement.failed),
        (vec![Seq(1)], vec![Seq(2)])
    );
    assert_eq!(queue.parked()[0].line, "");
    Ok(())
}

/// The M12 bound after a settle: the file is at most twice the snapshot of the state plus
/// the slack.
fn assert_m12_bound(len: u64, state: &MirrorState, slack: u64) {
    let snapshot = mirror::encode(state).len() as u64;
    assert!(
        len <= 2 * snapshot + slack,
        "file {len} bytes over the M12 bound 2 * {snapshot} + {slack}"
    );
}

/// M12: the settle that delivers a big batch compacts, because compaction is decided on the
/// state after the settle (105-byte snapshot), not the state before (which still holds the
/// 100,000 bytes of the batch). The old shortcut left the file at 100,957 bytes, over the
/// 65,724-byte limit.
#[test]
fn m12_compaction_decided_after_settle() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# The decision MUST be made on the new state: the state before the settle still holds the
    //# batch, and the batch's delivered lines are exactly what makes compaction due.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open_with(&path, small_slack())?;
    let line = "x".repeat(10_000);
    for n in 0..10u64 {
        queue.park(RequestId(n), &line)?;
    }
    let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
    assert_eq!(batch.items.len(), 10);
    queue.settle(batch.id, &[Outcome::Delivered; 10])?;
    let snapshot = mirror::encode(queue.state());
    assert_eq!(snapshot.len(), 131, "105 and the header's life");
    assert_eq!(
        fs::metadata(&path)?.len(),
        131,
        "the settle must write the snapshot"
    );
    assert!(fs::read(&path)? == snapshot, "the file is not the snapshot");
    Ok(())
}

/// M12: the bound holds after every settle of a 6 MB run (60 settles of 10 lines of 10,000
/// bytes); the old shortcut left the file over it after 40 of them.
#[test]
fn m12_bound_holds_after_every_settle_of_a_6_mb_run() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", small_slack())?.with_clock(fixed());
    let line = "x".repeat(10_000);
    for round in 0..60u64 {
        for n in 0..10u64 {
            queue.park(RequestId(round * 10 + n), &line)?;
        }
        let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Delivered; 10])?;
        assert_m12_bound(file(&queue).len() as u64, queue.state(), SMALL_SLACK);
    }
    Ok(())
}

/// M12: `compact_slack_bytes` is the slack of the rule: with 0, a settle compacts as soon as
/// the log would exceed twice the snapshot; with the default it would not.
#[test]
fn m12_compact_slack_bytes_sets_the_slack() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# At a `settle` (and a `redrive`, below), when the log with the new record would be longer
    //# than twice the snapshot of the **new state** (the state after the settle) plus the slack
    //# (`Config::compact_slack_bytes`, default `COMPACT_SLACK_BYTES`, 4 MiB), the queue MUST write
    //# that snapshot instead of appending the settle record, through M5 (temp file, fsync, rename,
    //# directory fsync).
    // The default is the spec's 4 MiB.
    assert_eq!(crate::COMPACT_SLACK_BYTES, 4 << 20);
    assert_eq!(
        Config::default().compact_slack_bytes,
        crate::COMPACT_SLACK_BYTES
    );
    for (slack, compacts) in [(0u64, true), (crate::COMPACT_SLACK_BYTES, false)] {
        let config = Config {
            compact_slack_bytes: slack,
            ..small_slack()
        };
        let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(fixed());
        queue.park(RequestId(1), "one")?;
        queue.park(RequestId(2), "two")?;
        let batch = queue.boundary(Budget(2))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Delivered])?;
        let compacted = file(&queue) == mirror::encode(queue.state());
        assert_eq!(compacted, compacts, "slack {slack}");
        assert_m12_bound(file(&queue).len() as u64, queue.state(), slack);
    }
    Ok(())
}

/// The copy the compaction decision applies a settle to leaves out the delivered lines, and
/// applying the settle to it gives exactly the state applying it to the whole state gives, for a
/// settle in seq order (what `settle` plans, D17; the copy asserts the order). The floor of the
/// delivered bytes agrees.
#[test]
fn a_settle_is_applied_to_a_copy_without_its_delivered_lines() -> TestResult {
    let config = Config {
        failures_max: 2,
        ..Config::default()
    };
    let mut core = Core::new(MirrorState::default(), config);
    for (n, line) in ["abc", "de", "fghij", "é", "k"].into_iter().enumerate() {
        let step = park_step(&core, RequestId(n as u64), line, 0)?;
        core.commit(step.record.as_ref().ok_or("a record")?);
    }
    let step = core.boundary(Budget(usize::MAX), 0)?;
    core.commit(step.record.as_ref().ok_or("a batch")?);
    core.handed_over();
    let in_order = Record::Settle {
        batch: BatchId(1),
        delivered: vec![Seq(1), Seq(3), Seq(5)],
        failed: vec![Seq(2), Seq(4)],
        dead: vec![],
        at: None,
    };
    let mut whole = core.state.clone();
    whole.apply_checked(&in_order);
    let record = &in_order;
    let copy = crate::queue::write::state_to_apply(&core.state, record);
    let kept: Vec<Seq> = copy
        .in_flight
        .iter()
        .flat_map(|batch| &batch.items)
        .map(|item| item.seq)
        .collect();
    assert_eq!(kept, [Seq(2), Seq(4)]);
    core.state.check(record)?;
    let mut after = copy;
    after.apply_checked(record);
    assert_eq!(after, whole);
    assert_eq!(
        core.snapshot_bytes_floor_after(record),
        core.snapshot_bytes_floor() - ("abc".len() + "fghij".len() + "k".len()) as u64
    );
    // Any other record is applied to a plain copy.
    let park = Record::Park {
        seq: Seq(6),
        request: RequestId(9),
        line: "x".into(),
        failures: 0,
        handed: 0,
        at: None,
    };
    assert_eq!(
        crate::queue::write::state_to_apply(&core.state, &park),
        core.state
    );
    Ok(())
}

/// M12: the redrive that made format 2 append (a line back from the dead letters with a seq below
/// the in-flight batch's, which its snapshot could not say) compacts like any record, and the
/// snapshot opens to the same state: the `flight` record names the batch's items whole.
#[test]
fn m12_a_redrive_while_a_batch_is_in_flight_compacts_to_a_file_that_opens() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# A snapshot is the header and the records that rebuild the state: the dead letters and every
    //# live item (parked or in flight) as `dead`/`park` records in seq order, then a `flight`
    //# record naming the in-flight batch's items, then the remembered window as `done` records,
    //# oldest first, then the applied window of M17 as `op` records, oldest first, then `next`
    //# with the window's size.
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        failures_max: 1,
        repeats_max: u32::MAX,
        ..Config::default()
    };
    let mut queue =
        Queue::with_storage(MemStorage::new(), "m", config.clone())?.with_clock(fixed());
    queue.park(RequestId(1), "r1 dies")?;
    queue.park(RequestId(2), "r2 ok")?;
    let batch = queue.boundary(Budget(usize::MAX))?.ok_or("two parked")?;
    queue.settle(batch.id, &[Outcome::Failed, Outcome::Delivered])?;
    assert_eq!(queue.dead_letters().len(), 1);
    queue.park(RequestId(3), "r3 in flight")?;
    queue.park(RequestId(4), "r4 behind it")?;
    let batch = queue
        .boundary(Budget("r3 in flight".len() + 1))?
        .ok_or("a batch")?;
    assert_eq!(batch.remaining, 1);
    queue.park(RequestId(5), "r5 after the boundary")?;
    // Crashes and repeats grow the log (an `attempt` record each) and not the snapshot, so the
    // redrive below is the record that makes compaction due.
    for _ in 0..20 {
        queue = open_bytes(&file(&queue), config.clone())?;
        queue.boundary(Budget(usize::MAX))?.ok_or("the repeat")?;
    }
    let len = file(&queue).len();
    assert_eq!(queue.redrive_all()?, vec![Seq(1)]);
    let state = queue.state().clone();
    let bytes = file(&queue);
    assert!(bytes.len() < len, "compacted: {} after {len}", bytes.len());
    assert_eq!(bytes, mirror::encode(&state));
    assert_eq!(open_bytes(&bytes, config)?.state(), &state);
    Ok(())
}

/// The mirror a compaction replaced is closed (so its blocks are freed) without the settle
/// waiting for it, and the new mirror is what the handle writes to: the open handles left on
/// the process are the lock's and the new mirror's. Linux only: it reads `/proc/self/fd`.
#[cfg(target_os = "linux")]
#[test]
fn m12_the_replaced_mirror_is_closed_and_the_new_one_written() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let replaced = format!("{} (deleted)", path.display());
    let open_replaced = || -> io::Result<usize> {
        let mut count = 0;
        for entry in fs::read_dir("/proc/self/fd")? {
            let Ok(target) = fs::read_link(entry?.path()) else {
                continue;
            };
            // The replaced file, unlinked under its handle (other tests' files have other paths).
            count += usize::from(target.to_string_lossy() == replaced);
        }
        Ok(count)
    };
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::open_with(&path, config)?;
    for request in 1..=3 {
        queue.park(RequestId(request), &"x".repeat(1_000))?;
    }
    let batch = queue.boundary(Budget(usize::MAX))?.expect("parked");
    queue.settle(batch.id, &[Outcome::Delivered; 3])?;
    assert_eq!(queue.stats().compactions, 1, "the settle compacted");
    // The close runs on its own thread: give it time, then none is left open.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open_replaced()? > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(open_replaced()?, 0, "the replaced mirror is still open");
    queue.park(RequestId(9), "after")?;
    drop(queue);
    let queue = Queue::open(&path)?;
    assert_eq!(queue.parked()[0].line, "after");
    Ok(())
}

/// Parks `lines` lines of `bytes` bytes from request `first` on, hands them over as one batch and
/// settles them with `outcome`.
fn round_of<S: Storage>(
    queue: &mut Queue<S>,
    first: u64,
    lines: u64,
    bytes: usize,
    outcome: Outcome,
) -> TestResult {
    let line = "x".repeat(bytes);
    for request in first..first + lines {
        queue.park(RequestId(request), &line)?;
    }
    let batch = queue.boundary(Budget(usize::MAX))?.ok_or("parked")?;
    queue.settle(batch.id, &vec![outcome; batch.items.len()])?;
    Ok(())
}

/// M12 at rest: with the default slacks (4 MiB, 64 KiB), a settle that drains the queue never
/// compacts for the rest bound, and the idle call after it leaves the mirror at most its
/// snapshot plus 64 KiB, compacting exactly when the log is longer; a round of 100 lines of
/// 1,000 bytes is over it, one of 10 lines is not. The 4 MiB rule alone would have left the file
/// at 1.4 MB after the 13 rounds.
#[test]
fn m12_an_idle_call_leaves_a_drained_mirror_at_most_its_snapshot_plus_64_kib() -> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# At an idle call (`Queue::idle`) that finds the state drained, when the log is longer
    //# than the snapshot of the state plus the rest slack (`Config::rest_slack_bytes`, default
    //# `REST_SLACK_BYTES`, 64 KiB), the queue MUST write that snapshot through M5.
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# A `settle`, `redrive` or `discard` MUST NOT compact for this rule: the turn boundary
    //# pays only for the rule above.
    assert_eq!(crate::REST_SLACK_BYTES, 64 << 10);
    assert_eq!(Config::default().rest_slack_bytes, crate::REST_SLACK_BYTES);
    let forgetful = Config {
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", forgetful)?.with_clock(fixed());
    let (mut request, mut compacted) = (0, Vec::new());
    for lines in [10u64, 10, 100, 10, 100, 100, 10, 10, 10, 10, 10, 10, 100] {
        let line = "x".repeat(1_000);
        for _ in 0..lines {
            request += 1;
            queue.park(RequestId(request), &line)?;
        }
        let batch = queue.boundary(Budget(usize::MAX))?.ok_or("parked")?;
        let outcomes = vec![Outcome::Delivered; batch.items.len()];
        assert!(!settle_and_check_m12(&mut queue, &batch, &outcomes)?);
        assert!(queue.boundary(Budget(usize::MAX))?.is_none());
        let (log, compactions) = (file(&queue).len() as u64, queue.stats().compactions);
        queue.idle()?;
        let snapshot = mirror::encode(queue.state()).len() as u64;
        let due = log > snapshot + crate::REST_SLACK_BYTES;
        assert_eq!(queue.stats().compactions, compactions + u64::from(due));
        compacted.push(due);
        assert!(file(&queue).len() as u64 <= snapshot + crate::REST_SLACK_BYTES);
    }
    let yes = |n: usize| vec![true; n];
    let no = |n: usize| vec![false; n];
    let expected = [no(2), yes(1), no(1), yes(2), no(5), yes(2)].concat();
    assert_eq!(compacted, expected);
    // At rest the mirror is its snapshot: the header and the counters.
    assert_eq!(file(&queue), mirror::encode(queue.state()));
    assert_eq!(file(&queue).len(), 133, "107 and the header's life");
    Ok(())
}

/// M12 at rest: "longer than" is strict, at the rest slack too: an idle call that finds the
/// log exactly the snapshot plus the rest slack writes nothing, one byte more compacts. Kills `>`
/// with `>=` in `Queue::compact_at_rest`.
#[test]
fn m12_an_idle_call_compacts_only_past_the_rest_slack() -> TestResult {
    let mut queue =
        Queue::with_storage(MemStorage::new(), "m", Config::default())?.with_clock(fixed());
    round_of(&mut queue, 1, 20, 100, Outcome::Delivered)?;
    let grown = file(&queue).len() as u64;
    let snapshot = mirror::encode(queue.state()).len() as u64;
    for (rest_slack_bytes, compacts) in [(grown - snapshot, false), (grown - snapshot - 1, true)] {
        let config = Config {
            rest_slack_bytes,
            ..Config::default()
        };
        let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(fixed());
        round_of(&mut queue, 1, 20, 100, Outcome::Delivered)?;
        assert_eq!(
            file(&queue).len() as u64,
            grown,
            "a settle never compacts at rest"
        );
        queue.idle()?;
        assert_eq!(
            queue.stats().compactions,
            u64::from(compacts),
            "{rest_slack_bytes}"
        );
        let len = if compacts { snapshot } else { grown };
        assert_eq!(file(&queue).len() as u64, len);
    }
    Ok(())
}

/// M12 at rest: a discard that drains the queue appends, and the idle call after it compacts;
/// an idle call while dead letters (or parked lines) remain is not at rest and writes nothing.
#[test]
fn m12_an_idle_call_after_a_draining_discard_leaves_at_most_the_snapshot_plus_the_rest_slack()
-> TestResult {
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# So right after an idle call that finds the state drained, `L <= S + rest slack` (`L <= S +
    //# 64 KiB` by default), and opening a drained session's mirror reads at most that.
    let config = Config {
        failures_max: 1,
        rest_slack_bytes: 1_000,
        ..Config::default()
    };
    let mut queue =
        Queue::with_storage(MemStorage::new(), "m", config.clone())?.with_clock(fixed());
    round_of(&mut queue, 1, 20, 100, Outcome::Failed)?;
    assert_eq!(queue.dead_letters().len(), 20);
    let redriven = queue.redrive_all()?;
    assert_eq!(redriven.len(), 20);
    queue.idle()?;
    let batch = queue.boundary(Budget(usize::MAX))?.ok_or("redriven")?;
    queue.settle(batch.id, &[Outcome::Failed; 20])?;
    queue.idle()?;
    assert_eq!(queue.stats().compactions, 0, "never drained");
    let before = file(&queue).len() as u64;
    assert!(before > 4_000, "{before} bytes");
    assert_eq!(queue.discard_all()?.len(), 20);
    assert_eq!(
        queue.stats().compactions,
        0,
        "a discard never compacts at rest"
    );
    assert!(file(&queue).len() as u64 > before);
    queue.idle()?;
    assert_eq!(queue.stats().compactions, 1);
    let snapshot = mirror::encode(queue.state());
    assert_eq!(file(&queue), snapshot);
    assert!(queue.state().is_drained());
    // Reopened, the drained mirror is read as it is: nothing more to compact.
    let storage = queue.into_storage();
    let mut queue = Queue::with_storage(storage, "m", config)?.with_clock(fixed());
    queue.idle()?;
    assert_eq!((queue.stats().compactions, file(&queue)), (0, snapshot));
    Ok(())
}

/// M12 at rest: an idle call compacts only a drained queue. A log far over the rest slack with
/// one line still parked is left as it is (the 4 MiB rule's to decide at a settle). Kills `||`
/// with `&&` in `Queue::compact_at_rest`.
#[test]
fn m12_an_idle_call_leaves_a_queue_that_holds_a_line_as_it_is() -> TestResult {
    let config = Config {
        rest_slack_bytes: 1_000,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(fixed());
    round_of(&mut queue, 1, 20, 100, Outcome::Delivered)?;
    queue.park(RequestId(100), "still parked")?;
    let before = file(&queue).to_vec();
    let snapshot = mirror::encode(queue.state()).len();
    assert!(before.len() > snapshot + 1_000, "{} bytes", before.len());
    queue.idle()?;
    assert_eq!(queue.stats().compactions, 0);
    assert_eq!(file(&queue), before);
    Ok(())
}

/// M10, M12 at rest: an idle call whose compaction finds the disk full writes nothing and stays
/// over the rest bound, unpoisoned; the next idle call that can write its temp file compacts and
/// brings the file back within it.
#[test]
fn m12_an_idle_call_on_a_full_disk_defers_the_rest_bound_to_the_next() -> TestResult {
    let config = Config {
        rest_slack_bytes: 1_000,
        ..Config::default()
    };
    let full = std::rc::Rc::new(std::cell::Cell::new(false));
    let storage = Seam::new(
        MemStorage::new(),
        fail_stop::TempFull {
            full: std::rc::Rc::clone(&full),
        },
    );
    let mut queue = Queue::with_storage(storage, "m", config)?.with_clock(fixed());
    let bytes = |queue: &Queue<fail_stop::FullTemp>| -> Result<Vec<u8>, &'static str> {
        Ok(queue.storage().inner.file("m").ok_or("mirror")?.to_vec())
    };
    round_of(&mut queue, 1, 20, 100, Outcome::Delivered)?;
    let drained = bytes(&queue)?;
    full.set(true);
    queue.idle()?;
    assert!(!queue.is_poisoned());
    assert_eq!(queue.stats().compactions_deferred, 1);
    assert_eq!(bytes(&queue)?, drained, "nothing written");
    assert!(
        queue.storage().inner.file("m.tmp").is_none(),
        "temp removed"
    );
    assert!(drained.len() as u64 > mirror::encode(queue.state()).len() as u64 + 1_000);
    full.set(false);
    queue.idle()?;
    assert_eq!(queue.stats().compactions, 1);
    assert_eq!(bytes(&queue)?, mirror::encode(queue.state()));
    Ok(())
}
