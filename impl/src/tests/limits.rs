//! Counter limits (M6, D10, D8): seqs and batch ids never reach u64::MAX, attempts and failures
//! never pass u32::MAX; an exhausted counter is an error that writes nothing, never a wrap.

use super::damaged::assert_corrupt;
use super::*;

fn next_json(seq: u64, batch: u64) -> String {
    format!(r#"{{"type":"next","seq":{seq},"batch":{batch}}}"#)
}

/// M6, M11: u64::MAX is never a seq: a `park` or `dead` record holding it is Corrupt (no
/// next seq follows it, so accepting it would wrap the counter to 0 and reuse seqs).
#[test]
fn m6_seq_at_u64_max_is_corrupt() -> TestResult {
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# - `u64::MAX` is never a seq or a batch id (no next counter would follow it): a `park`,
    //# `dead` or `batch` record holding it MUST be rejected (`Corrupt`).
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# A counter (`next` record, or the value after the last record) MAY be `u64::MAX`: it is
    //# **exhausted**.
    let max = u64::MAX;
    for kind in ["park", "dead"] {
        let json = format!(
            r#"{{"type":"{kind}","seq":{max},"request":1,"line":"l","failures":0,"handed":0}}"#
        );
        assert_corrupt(&file_of(&[json]), 2, "u64::MAX is never a seq")?;
    }
    // u64::MAX - 1 is a seq; the counter after it is u64::MAX, which is allowed.
    let json = park_json(max - 1);
    let state = mirror::decode(&file_of(&[json]))?;
    assert_eq!(state.next_seq, Seq(max));
    Ok(())
}

/// M6: a counter at u64::MAX means no seq is left: `park` fails with `Exhausted`, writes
/// nothing and does not poison the handle; the seq before it is still handed out once.
#[test]
fn m6_next_at_u64_max_park_is_exhausted() -> TestResult {
    //= spec/delivery.md#d17-order
    //= type=test
    //# `park` MUST assign seqs that strictly increase and are never reused within a mirror (when
    //# none is left, it fails with `Exhausted` rather than wrap, D10 "Attempt ceiling").
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# A counter (`next` record, or the value after the last record) MAY be `u64::MAX`: it is
    //# **exhausted**.
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Then `park` (for the seq) and a `boundary` that would create a batch (for the batch id) MUST
    //# fail with `Exhausted`, write nothing and leave the handle usable (not poisoned, M10); a
    //# `boundary` with nothing parked still returns none, and a recovered batch is still handed
    //# over.
    let max = u64::MAX;
    let bytes = file_of(&[next_json(max - 1, 1)]);
    let mut queue = open_bytes(&bytes, no_window())?;
    assert_eq!(
        queue.park(RequestId(1), "last")?,
        Parked::Held(Seq(max - 1))
    );
    let before = file(&queue);
    let err = queue
        .park(RequestId(2), "one too many")
        .err()
        .ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert!(err.to_string().starts_with("counter exhausted: "), "{err}");
    assert_eq!(file(&queue), before, "an exhausted park wrote");
    assert!(!queue.is_poisoned());
    // The line parked before is still delivered.
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!(batch.items[0].seq, Seq(max - 1));
    queue.settle(batch.id, &[Outcome::Delivered])?;
    // Reopening finds the counter still exhausted, never wrapped.
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    assert_eq!(queue.state().next_seq, Seq(max));
    let err = queue.park(RequestId(3), "x").err().ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted);
    Ok(())
}

/// M6, M11: u64::MAX is never a batch id: a `batch` record holding it is Corrupt.
#[test]
fn m6_batch_id_at_u64_max_is_corrupt() -> TestResult {
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# - `u64::MAX` is never a seq or a batch id (no next counter would follow it): a `park`,
    //# `dead` or `batch` record holding it MUST be rejected (`Corrupt`).
    let max = u64::MAX;
    let batch =
        format!(r#"{{"type":"batch","id":{max},"attempt":1,"seqs":[[1,1]],"remaining":0}}"#);
    assert_corrupt(
        &file_of(&[park_json(1), batch]),
        3,
        "u64::MAX is never a batch id",
    )
}

/// M6: with the next batch id at u64::MAX, a boundary that would create a batch fails with
/// `Exhausted`, writes nothing and does not poison; one with nothing parked returns `None`.
#[test]
fn m6_next_batch_at_u64_max_boundary_is_exhausted() -> TestResult {
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A boundary with nothing parked and no recovered batch MUST return no batch.
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Then `park` (for the seq) and a `boundary` that would create a batch (for the batch id) MUST
    //# fail with `Exhausted`, write nothing and leave the handle usable (not poisoned, M10); a
    //# `boundary` with nothing parked still returns none, and a recovered batch is still handed
    //# over.
    let bytes = file_of(&[next_json(1, u64::MAX)]);
    let mut queue = open_bytes(&bytes, no_window())?;
    assert!(queue.boundary(Budget(100))?.is_none());
    queue.park(RequestId(1), "one")?;
    let before = file(&queue);
    let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert_eq!(file(&queue), before);
    assert!(!queue.is_poisoned());
    assert_eq!(queue.parked().len(), 1);
    assert_eq!(queue.park(RequestId(2), "two")?, Parked::Held(Seq(2)));
    Ok(())
}

fn batch_json(attempt: u32) -> String {
    format!(r#"{{"type":"batch","id":1,"attempt":{attempt},"seqs":[[1,1]],"remaining":0}}"#)
}

/// D10: a recovered batch stored with attempt u32::MAX is at every repeat bound: the boundary
/// closes it (one item: a dead letter) instead of failing, and the line behind it moves.
#[test]
fn d10_a_batch_at_the_attempt_ceiling_is_closed() -> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A recovered batch whose attempt is `repeats_max` or more MUST NOT be handed over
    //# again: the boundary MUST write a `close` record instead, after which the batch's
    //# items are parked again, or its single item is a dead letter, and the boundary goes
    //# on as one with no recovered batch.
    let bytes = file_of(&[park_json(1), batch_json(u32::MAX), park_json(2)]);
    let config = Config {
        repeats_max: u32::MAX,
        ..Config::default()
    };
    let mut queue = open_bytes(&bytes, config)?;
    let next = queue.boundary(Budget(100))?.ok_or("the line behind it")?;
    assert_eq!((next.id, next.attempt), (BatchId(2), Attempt(1)));
    assert_eq!(
        next.items.iter().map(|i| i.seq).collect::<Vec<_>>(),
        [Seq(2)]
    );
    assert_eq!(queue.dead_letters().len(), 1);
    assert_eq!(queue.dead_letters()[0].failures, 0);
    assert!(!queue.is_poisoned());
    Ok(())
}

/// D10: with no lower bound, the last attempt below the ceiling is handed over one higher
/// (u32::MAX), and the life after it closes the batch; an `attempt` record that wraps is
/// Corrupt.
#[test]
fn d10_attempt_ceiling_is_reached_once_and_never_wraps() -> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# It MUST NOT hand the batch over with an attempt that is not one higher.
    let config = Config {
        repeats_max: u32::MAX,
        ..Config::default()
    };
    let bytes = file_of(&[park_json(1), batch_json(u32::MAX - 1)]);
    let mut queue = open_bytes(&bytes, config.clone())?;
    let repeat = queue.boundary(Budget(100))?.ok_or("recovered")?;
    assert_eq!(repeat.attempt, Attempt(u32::MAX));
    assert!(repeat.is_repeat());
    let mut queue = Queue::with_storage(queue.into_storage(), "m", config)?;
    assert!(queue.boundary(Budget(100))?.is_none());
    assert_eq!(queue.dead_letters().len(), 1);
    let wrap = r#"{"type":"attempt","batch":1,"attempt":0}"#.to_owned();
    assert_corrupt(
        &file_of(&[park_json(1), batch_json(u32::MAX), wrap]),
        4,
        "does not follow attempt 4294967295",
    )
}

/// M6, D8: a parked item must be able to fail once more, so a `park` record with failures
/// u32::MAX is Corrupt, and so is a settle that would park an item again at u32::MAX; an
/// item failing at u32::MAX - 1 becomes a dead letter with u32::MAX (never saturated, never
/// wrapped).
#[test]
fn m6_failures_never_pass_u32_max() -> TestResult {
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# - A parked item (including one in flight) holds at most `u32::MAX - 1` failures, so that it
    //# can always fail once more: a `park` record with failures `u32::MAX`, or a settle that would
    //# park an item again at `u32::MAX`, MUST be rejected (`Corrupt`).
    let max = u32::MAX;
    let park = |failures: u32| {
        format!(
            r#"{{"type":"park","seq":1,"request":1,"line":"l","failures":{failures},"handed":0}}"#
        )
    };
    assert_corrupt(&file_of(&[park(max)]), 2, "could not fail again")?;
    let settle = r#"{"type":"settle","batch":1,"delivered":[],"failed":[[1,1]],"dead":[]}"#;
    assert_corrupt(
        &file_of(&[park(max - 1), batch_json(1), settle.to_owned()]),
        4,
        "past failures 4294967294",
    )?;
    let config = Config {
        failures_max: max,
        ..Config::default()
    };
    let mut queue = open_bytes(&file_of(&[park(max - 2)]), config.clone())?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let settlement = queue.settle(batch.id, &[Outcome::Failed])?;
    assert_eq!(settlement.failed, vec![Seq(1)]);
    assert_eq!(queue.parked()[0].failures, max - 1);
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let settlement = queue.settle(batch.id, &[Outcome::Failed])?;
    assert_eq!(settlement.dead, vec![Seq(1)]);
    assert_eq!(queue.dead_letters()[0].failures, max);
    let queue = Queue::with_storage(queue.into_storage(), "m", config)?;
    assert_eq!(queue.dead_letters()[0].failures, max);
    Ok(())
}

/// Section 6 of spec/mirror.md: an item at the front whose hand-over count is at `u64::MAX`
/// blocks every boundary as the attempt ceiling does: each fails with `Exhausted`, writes
/// nothing and does not poison, and the line behind it never moves; `park` still works.
#[test]
fn d19_a_hand_over_count_at_its_ceiling_blocks_every_boundary() -> TestResult {
    //= spec/mirror.md#6-what-a-damaged-file-gets
    //= type=test
    //# With the hand-over count of the first parked item at its limit, every `boundary` fails with
    //# `Exhausted` and no line moves: the lines are listed by `parkline inspect`, and the way on is
    //# to move the file aside and park them again.
    let front = r#"{"type":"park","seq":1,"request":1,"line":"l1","failures":0,"handed":18446744073709551615}"#;
    let bytes = file_of(&[front.to_owned(), park_json(2)]);
    let mut queue = open_bytes(&bytes, no_window())?;
    for _ in 0..3 {
        let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
        assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    }
    assert_eq!(file(&queue), bytes);
    assert!(!queue.is_poisoned());
    assert_eq!(queue.parked().len(), 2);
    assert_eq!(queue.park(RequestId(3), "three")?, Parked::Held(Seq(3)));
    Ok(())
}

/// M2: a build refuses a mirror of a newer version (a daemon rolled back to an older build) with
/// `Corrupt` naming the version, and leaves the file as it was: there is no downgrade.
#[test]
fn m2_a_mirror_of_a_newer_version_is_refused_and_left_as_it_is() -> TestResult {
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# A build MUST refuse a mirror of a newer version than it writes, changing nothing: a
    //# daemon rolled back to an older build cannot open the mirrors a newer build wrote.
    let newer = mirror::VERSION + 1;
    let header = format!(r#"{{"format":"parkline-mirror","version":{newer}}}"#);
    let bytes = format!("{}{}", rec(&header), rec(&park_json(1))).into_bytes();
    let (_dir, path) = temp_mirror()?;
    fs::write(&path, &bytes)?;
    let err = Queue::open(&path)
        .err()
        .ok_or("a newer version is refused")?;
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string().contains(&format!("version {newer}")),
        "{err}"
    );
    assert_eq!(fs::read(&path)?, bytes);
    Ok(())
}
