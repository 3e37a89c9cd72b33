//! Settling a batch (D6-D8, D10): each item's outcome, failures counted up to a dead letter, and
//! the errors of a settle that does not match the batch in flight.

use super::*;

/// D6, D7, D17: a failed item stays parked with failures + 1 and comes first again; the others
/// clear; lines parked during delivery wait for the next boundary (D2).
#[test]
fn failed_items_stay_parked_and_come_first_again() -> TestResult {
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A boundary MUST deliver at once what is parked when it occurs; it MUST NOT wait, sleep or
    //# poll for more lines.
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A line parked after the boundary (while its batch is being persisted, handed over, notified
    //# or settled) MUST NOT join that batch
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# it is delivered at a later boundary.
    //= spec/delivery.md#d6-per-request-independence
    //= type=test
    //# The delivery state of an item (parked, in flight, delivered, dead letter; its `failures`)
    //# MUST depend only on its own outcomes and on crashes; the outcome of one item MUST NOT drop,
    //# block, delay to a later boundary, or change the failure count of another item.
    //= spec/delivery.md#d6-per-request-independence
    //= type=test
    //# `settle` MUST take one outcome per item, and each item MUST end in exactly one of
    //# `Settlement::{delivered, failed, dead}`.
    //= spec/delivery.md#d7-failure-isolation
    //= type=test
    //# At settle, a failed item whose failure count stays below `failures_max` MUST stay parked
    //# with the same seq and `failures + 1`, and MUST be offered again at a later boundary in seq
    //# order (so it precedes lines parked after it); the delivered items of the same batch MUST
    //# leave the mirror.
    //= spec/delivery.md#d17-order
    //= type=test
    //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of it, so items
    //# in a batch are in seq order and a line is first offered only after every line with a lower
    //# seq was offered.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    for n in 1..=3 {
        queue.park(RequestId(n), &format!("l{n}"))?;
    }
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    queue.park(RequestId(4), "l4")?; // arrives during delivery
    assert_eq!(queue.parked().len(), 1);
    let settlement = queue.settle(
        batch.id,
        &[Outcome::Delivered, Outcome::Failed, Outcome::Delivered],
    )?;
    assert_eq!(settlement.delivered, vec![Seq(1), Seq(3)]);
    assert_eq!(settlement.failed, vec![Seq(2)]);
    let seqs: Vec<(Seq, u32)> = queue.parked().iter().map(|i| (i.seq, i.failures)).collect();
    assert_eq!(seqs, vec![(Seq(2), 1), (Seq(4), 0)]);
    drop(queue);
    let mut queue = Queue::open(&path)?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!(batch.id, BatchId(2));
    assert_eq!(batch.attempt, Attempt(1));
    let seqs: Vec<Seq> = batch.items.iter().map(|i| i.seq).collect();
    assert_eq!(seqs, vec![Seq(2), Seq(4)]);
    Ok(())
}

/// D8: the failure that reaches failures_max moves the item to the dead letters, kept on disk.
#[test]
fn item_failing_failures_max_times_becomes_a_dead_letter() -> TestResult {
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# An item whose failure count reaches `failures_max` (a positive integer, default 3) at a
    //# settle MUST move to the dead letters in that same settle.
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# Dead letters MUST be kept in the mirror, MUST be listable (`Queue::dead_letters`, `parkline
    //# inspect`), MUST NOT be delivered again automatically,
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# and MUST NOT be deleted by parkline.
    //= spec/delivery.md#d18-no-silent-duplicate
    //= type=test
    //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "doomed")?;
    queue.park(RequestId(2), "fine")?;
    for round in 1..=3u32 {
        let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
        let outcomes: Vec<Outcome> = batch
            .items
            .iter()
            .map(|i| {
                if i.seq == Seq(1) {
                    Outcome::Failed
                } else {
                    Outcome::Delivered
                }
            })
            .collect();
        let settlement = queue.settle(batch.id, &outcomes)?;
        if round < 3 {
            assert_eq!(settlement.failed, vec![Seq(1)]);
            assert!(settlement.dead.is_empty());
        } else {
            assert_eq!(settlement.dead, vec![Seq(1)]);
            assert!(settlement.failed.is_empty());
        }
    }
    assert!(queue.parked().is_empty());
    assert_eq!(queue.dead_letters().len(), 1);
    assert_eq!(queue.dead_letters()[0].failures, 3);
    assert_eq!(queue.boundary(Budget(100))?, None);
    drop(queue);
    let queue = Queue::open(&path)?;
    assert_eq!(queue.dead_letters()[0].line, "doomed");
    Ok(())
}

/// The errors of misuse: nothing is written and the queue stays usable.
#[test]
fn misuse_errors_write_nothing() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A line that cannot be carried verbatim in the turn text (it contains `\n`, or exceeds the
    //# configured `line_bytes_max`) MUST be refused by `park` with an error (`InvalidLine`) and
    //# MUST NOT be altered; a refused park parks nothing.
    //= spec/delivery.md#d6-per-request-independence
    //= type=test
    //# `settle` MUST take one outcome per item, and each item MUST end in exactly one of
    //# `Settlement::{delivered, failed, dead}`.
    let (_dir, path) = temp_mirror()?;
    let config = Config {
        line_bytes_max: 8,
        ..Config::default()
    };
    let mut queue = Queue::open_with(&path, config)?;
    let before = fs::read(&path)?;
    assert_eq!(
        queue.park(RequestId(1), "a\nb").map_err(|e| e.kind()),
        Err(ErrorKind::InvalidLine)
    );
    assert_eq!(
        queue.park(RequestId(1), "123456789").map_err(|e| e.kind()),
        Err(ErrorKind::InvalidLine)
    );
    assert_eq!(
        queue.settle(BatchId(1), &[]).map_err(|e| e.kind()),
        Err(ErrorKind::UnknownBatch)
    );
    assert_eq!(fs::read(&path)?, before);
    queue.park(RequestId(1), "12345678")?;
    let batch = queue.boundary(Budget(1))?.ok_or("parked")?;
    assert_eq!(
        queue.settle(batch.id, &[]).map_err(|e| e.kind()),
        Err(ErrorKind::OutcomeCount)
    );
    assert_eq!(
        queue
            .settle(BatchId(9), &[Outcome::Delivered])
            .map_err(|e| e.kind()),
        Err(ErrorKind::UnknownBatch)
    );
    queue.settle(batch.id, &[Outcome::Delivered])?;
    let bad = Config {
        failures_max: 0,
        ..Config::default()
    };
    drop(queue);
    assert_eq!(
        Queue::open_with(&path, bad)
            .map(|_| ())
            .map_err(|e| e.kind()),
        Err(ErrorKind::InvalidConfig)
    );
    Ok(())
}

/// D10: a recovered batch must be handed over again (boundary) before it can be settled.
#[test]
fn recovered_batch_cannot_be_settled_before_it_is_handed_again() -> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A recovered batch MUST be handed over again (as a repeat) before it can be settled.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "x")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.in_flight().map(|b| b.attempt), Some(Attempt(1)));
    let err = queue
        .settle(batch.id, &[Outcome::Delivered])
        .map(|_| ())
        .map_err(|e| e.kind());
    assert_eq!(err, Err(ErrorKind::UnknownBatch));
    let repeat = queue.boundary(Budget(100))?.ok_or("recovered")?;
    queue.settle(repeat.id, &[Outcome::Delivered])?;
    Ok(())
}

/// D10: settling a recovered batch before its repeat is handed over names the remedy, and
/// settling some other id says it is not in flight. Kills the match guard `batch.id == id`
/// in `Core::settle` replaced with true / false and `== with !=`, which give the other
/// message.
#[test]
fn settle_of_a_recovered_batch_names_the_remedy() -> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A recovered batch MUST be handed over again (as a repeat) before it can be settled.
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "x")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    let err = queue
        .settle(batch.id, &[Outcome::Delivered])
        .err()
        .ok_or("a recovered batch must be handed over again first")?;
    assert_eq!(err.kind(), ErrorKind::UnknownBatch);
    assert!(err.context().contains("call boundary first"), "{err}");
    let other = BatchId(batch.id.0 + 1);
    let err = queue
        .settle(other, &[Outcome::Delivered])
        .err()
        .ok_or("no such batch")?;
    assert_eq!(err.kind(), ErrorKind::UnknownBatch);
    assert!(
        err.context().contains("is not the batch in flight"),
        "{err}"
    );
    assert!(!err.context().contains("call boundary first"), "{err}");
    Ok(())
}
