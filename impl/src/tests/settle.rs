//! Settling a batch (D6-D8, D10): each item's outcome, failures counted up to a dead letter, and
//! the errors of a settle that does not match the batch in flight.

use super::*;

/// D6, D7, D17: a failed item stays parked with failures + 1 and comes first again; the others
/// clear; lines parked during delivery wait for the next boundary (D2).
#[test]
fn failed_items_stay_parked_and_come_first_again() -> TestResult {
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
