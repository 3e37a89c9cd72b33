//! D10's repeat bound and the dead-letter discard: a batch that crashes the daemon at every
//! life is closed after `repeats_max` hand-overs, the line that crashes it isolated by halving
//! the batches (D11's cap) and dead-lettered (D8), and the lines behind it flow again.

use super::*;

/// A life of the daemon: open the mirror, take the boundary, then either settle every line
/// delivered or die before the settle (a line that crashes the daemon) when `crashes` says so.
fn life(
    storage: MemStorage,
    config: &Config,
    budget: usize,
    crashes: impl Fn(&Batch) -> bool,
) -> crate::Result<(MemStorage, Option<Batch>)> {
    let mut queue = Queue::with_storage(storage, "m", config.clone())?;
    let batch = queue.boundary(Budget(budget))?;
    if let Some(batch) = batch.as_ref().filter(|batch| !crashes(batch)) {
        queue.settle(batch.id, &vec![Outcome::Delivered; batch.items.len()])?;
    }
    Ok((queue.into_storage(), batch))
}

/// The reproduction of the finding: 3 lines parked, then 2,000 lives that each park one more
/// line, take the boundary and die before the settle. Without the bound the first batch was
/// handed over 2,000 times and 1,999 lines waited behind it; with it no batch is handed over
/// more than `repeats_max` times, every line is accounted for, and the mirror stays small.
#[test]
fn d10_a_batch_that_crashes_the_daemon_at_every_life_is_handed_over_at_most_repeats_max_times()
-> TestResult {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A recovered batch whose attempt is `repeats_max` or more MUST NOT be handed over
    //# again: the boundary MUST write a `close` record instead, after which the batch's
    //# items are parked again, or its single item is a dead letter, and the boundary goes
    //# on as one with no recovered batch.
    let config = Config::default();
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    for request in 1..=3 {
        queue.park(RequestId(request), &format!("r{request} ok"))?;
    }
    let mut storage = queue.into_storage();
    let mut most = 0;
    for request in 4..2004 {
        let mut queue = Queue::with_storage(storage, "m", config.clone())?;
        queue.park(RequestId(request), &format!("r{request} ok"))?;
        let (next, batch) = life(queue.into_storage(), &config, 1 << 20, |_| true)?;
        most = most.max(batch.map_or(0, |batch| batch.attempt.0));
        storage = next;
    }
    assert_eq!(most, config.repeats_max);
    let queue = Queue::with_storage(storage, "m", config.clone())?;
    let held = queue.parked().len()
        + queue.dead_letters().len()
        + queue.in_flight().map_or(0, |batch| batch.items.len());
    assert_eq!(held, 2003, "every line is parked, in flight or dead");
    assert!(!queue.dead_letters().is_empty());
    // Once lives settle again, the lines behind flow: the cap doubles at each settle.
    let mut storage = queue.into_storage();
    let mut lives = 0;
    loop {
        let (next, batch) = life(storage, &config, 1 << 20, |_| false)?;
        storage = next;
        lives += 1;
        if batch.is_none() {
            break;
        }
    }
    assert!(lives <= 14, "{lives} lives to deliver what waited");
    let queue = Queue::with_storage(storage, "m", config)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    Ok(())
}

/// D10, D11, D8: one line of eight crashes the daemon whenever its batch holds it. Closing
/// halves the batches until it is alone, the close of its single-line batch makes it a dead
/// letter, and the seven others are delivered; a smaller budget is honoured after the close.
#[test]
fn d11_the_line_that_crashes_the_daemon_is_isolated_and_the_others_delivered() -> TestResult {
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# An item that was alone in a batch the repeat bound closed (D10) MUST move to the dead letters
    //# at that close, its failure count unchanged: it was handed over `repeats_max` times alone
    //# without a settle.
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# While a cap is set, a new batch MUST hold at most `cap` items.
    let config = Config::default();
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    for request in 1..=8 {
        let line = if request == 6 { "r6 crashes" } else { "ok" };
        queue.park(RequestId(request), &format!("{line} {request}"))?;
    }
    let mut storage = queue.into_storage();
    let poison = |batch: &Batch| batch.items.iter().any(|item| item.line.contains("crashes"));
    let mut sizes = Vec::new();
    for _ in 0..40 {
        let (next, batch) = life(storage, &config, 1 << 20, poison)?;
        storage = next;
        match batch {
            Some(batch) if batch.attempt.0 == 1 => sizes.push(batch.items.len()),
            Some(_) => {}
            None => break,
        }
    }
    let queue = Queue::with_storage(storage, "m", config)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    let dead: Vec<&str> = queue
        .dead_letters()
        .iter()
        .map(|i| i.line.as_str())
        .collect();
    assert_eq!(dead, ["r6 crashes 6"]);
    // Halved at each close, doubled at each settle: 6 is alone after five closes.
    assert_eq!(sizes, [8, 4, 4, 2, 1, 2, 1, 2]);
    Ok(())
}

/// D11: a settle doubles the cap, and lifts it when the settled batch held fewer items.
#[test]
fn d11_a_settle_doubles_the_cap_and_a_short_batch_lifts_it() -> TestResult {
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# A settle MUST double the cap, and lift it when the settled batch held fewer items
    //# than the cap.
    let config = Config {
        repeats_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    for request in 1..=12 {
        queue.park(RequestId(request), "ok")?;
    }
    queue.boundary(Budget(1 << 20))?.ok_or("12 parked")?;
    // The life ends before the settle; at repeats_max 1 the next boundary closes the batch.
    let mut queue = Queue::with_storage(queue.into_storage(), "m", config)?;
    let mut sizes = Vec::new();
    while let Some(batch) = queue.boundary(Budget(1 << 20))? {
        sizes.push((batch.items.len(), queue.state().cap));
        queue.settle(batch.id, &vec![Outcome::Delivered; batch.items.len()])?;
    }
    assert_eq!(sizes, [(6, Some(6)), (6, Some(12))]);
    assert_eq!(
        queue.state().cap,
        None,
        "a settle of 6 under a cap of 12 lifts it"
    );
    Ok(())
}

/// D8: `discard` removes dead letters for good, in one record; a seq that is not a dead letter,
/// or one named twice, is refused and nothing is written.
#[test]
fn d8_discard_removes_dead_letters_and_refuses_anything_else() -> TestResult {
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# `Queue::discard(seqs)` MUST remove the named dead letters from the mirror in one durable
    //# record, and MUST fail with `NotDead`, writing nothing, when a seq is not a dead letter
    //# or is named twice.
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    for request in 1..=3 {
        queue.park(RequestId(request), &format!("r{request}"))?;
    }
    let batch = queue.boundary(Budget(2 * 3))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Failed, Outcome::Failed])?;
    assert_eq!(queue.dead_letters().len(), 2);
    let before = file(&queue);
    for bad in [&[Seq(3)][..], &[Seq(1), Seq(1)]] {
        let err = queue.discard(bad).err().ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::NotDead, "{bad:?}");
        assert_eq!(file(&queue), before);
    }
    assert_eq!(queue.discard(&[Seq(2)])?, [Seq(2)]);
    assert_eq!(queue.discard_all()?, [Seq(1)]);
    assert!(queue.dead_letters().is_empty());
    assert_eq!(queue.parked().len(), 1);
    let reopened = open_bytes(&file(&queue), config)?;
    assert!(reopened.dead_letters().is_empty());
    // The request of a discarded line is no longer held but remembered, across a reopen (D3):
    // its line answers how it ended, another line is a conflict.
    let mut reopened = reopened;
    let retry = reopened.park(RequestId(1), "r1")?;
    assert_eq!(retry, Parked::Discarded { seq: Seq(1) });
    let other = reopened
        .park(RequestId(1), "r1 again")
        .err()
        .ok_or("conflict")?;
    assert_eq!(other.kind(), ErrorKind::RequestConflict);
    Ok(())
}

/// D3 after a discard (D8), on the live handle: the discarded request is no longer held, so its
/// park is a new line with a new seq, and a retry of that park answers the new seq. Kills
/// `Core::index` without its `Discard` arm (the index would still name the discarded seq).
#[test]
fn d3_a_discarded_request_is_parked_anew_and_its_retry_recognised() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    queue.park(RequestId(7), "first")?;
    let batch = queue.boundary(Budget(usize::MAX))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Failed])?;
    let dead = queue.park(RequestId(7), "first").err().ok_or("dead")?;
    assert_eq!(dead.kind(), ErrorKind::RequestDead);
    assert_eq!(queue.discard_all()?, [Seq(1)]);
    let before = file(&queue);
    // The discarded request is remembered (D3): the same line answers how it ended.
    let retry = queue.park(RequestId(7), "first")?;
    assert_eq!(retry, Parked::Discarded { seq: Seq(1) }, "a retry");
    let other = queue.park(RequestId(7), "other").err().ok_or("conflict")?;
    assert_eq!(other.kind(), ErrorKind::RequestConflict);
    assert_eq!(file(&queue), before, "neither wrote");
    // Past the window (here none), the request is new again.
    let forgetful = Config {
        failures_max: 1,
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(queue.into_storage(), "m", forgetful)?;
    assert_eq!(queue.park(RequestId(7), "again")?, Parked::Held(Seq(2)));
    assert_eq!(queue.park(RequestId(7), "again")?, Parked::Held(Seq(2)));
    Ok(())
}

/// M3, M4: seq lists are runs, so the boundary and the all-delivered settle of a contiguous batch
/// write one record each of the same size whatever the batch's (format 2 wrote 48,962 and 48,967
/// bytes for 10,000 lines).
#[test]
fn m4_a_contiguous_batch_and_its_settle_are_records_of_constant_size() -> TestResult {
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# A reader MUST reject runs that are not canonical (a run ending before it starts, a run not
    //# past the one before it by a gap) and runs that name more seqs than the list they index
    //# holds, plus one (the in-flight batch for a settle, the parked list for a batch, the dead
    //# letters for a redrive or discard), so a file cannot make it build a list longer than the
    //# state it names seqs of; the check then says which seq is wrong.
    let mut sizes = Vec::new();
    // The settle drains the queue and appends its record (M12 compacts at rest only at idle).
    let config = Config::default();
    for n in [10u64, 10_000] {
        let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
        let lines: Vec<(RequestId, &str)> = (1..=n).map(|r| (RequestId(r), "r ok")).collect();
        queue.park_all(&lines)?;
        let before = file(&queue).len();
        let batch = queue.boundary(Budget(usize::MAX))?.ok_or("parked")?;
        let boundary = file(&queue).len() - before;
        queue.settle(batch.id, &vec![Outcome::Delivered; batch.items.len()])?;
        let settle = file(&queue).len() - before - boundary;
        sizes.push((boundary, settle));
    }
    assert_eq!(
        sizes[0].0 + 3,
        sizes[1].0,
        "{sizes:?}: only the digits of 10,000 differ"
    );
    assert_eq!(sizes[0].1 + 3, sizes[1].1, "{sizes:?}");
    // The settle carries its time (D24): 13 digits.
    assert!(sizes[1].0 < 100 && sizes[1].1 < 125, "{sizes:?}");
    Ok(())
}
