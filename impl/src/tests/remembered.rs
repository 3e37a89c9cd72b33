//! Mirror format 4 (spec/delivery.md D3's remembered deliveries, D22's line-by-line group, D24's
//! times; spec/mirror.md M3, M14): a retry after delivery answers from the window, across a
//! reopen and a compaction; a group retried after part of it was delivered answers line by line;
//! every park and death carries the clock's time, which only ages read.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::*;
use crate::Ended;

/// A queue in memory with `config` and the clock `clock`.
fn queue_with(config: Config, clock: &Arc<Fixed>) -> crate::Result<Queue<MemStorage>> {
    Ok(Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(clock.clone()))
}

/// Hands over what is parked and settles it, every line as `delivered` says.
fn deliver(
    queue: &mut Queue<MemStorage>,
    budget: usize,
    delivered: bool,
) -> Result<BatchId, String> {
    let batch = queue
        .boundary(Budget(budget))
        .map_err(|e| e.to_string())?
        .ok_or("nothing parked")?;
    let outcome = if delivered {
        Outcome::Delivered
    } else {
        Outcome::Failed
    };
    queue
        .settle(batch.id, &vec![outcome; batch.items.len()])
        .map_err(|e| e.to_string())?;
    Ok(batch.id)
}

/// The issue's example: a park whose answer was lost, retried after its line was delivered and
/// the queue reopened, writes nothing and answers that it was delivered, with its seq and batch;
/// the same after a compaction; another line for the request is a conflict.
#[test]
fn d3_a_retry_after_delivery_is_answered_from_the_window() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request the remembered window holds MUST write nothing: with the same line
    //# (the same CRC-64) it MUST answer how that line ended (delivered, with its seq and batch, or
    //# discarded, with its seq), and with another line it MUST fail with `RequestConflict`.
    for compacting in [false, true] {
        let config = Config {
            compact_slack_bytes: if compacting { 0 } else { SMALL_SLACK },
            ..Config::default()
        };
        let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
        assert_eq!(queue.park(RequestId(7), "[r7] done")?, Parked::Held(Seq(1)));
        let batch = deliver(&mut queue, 4096, true)?;
        // The answer was never recorded; the daemon restarts and parks again.
        let mut queue = Queue::with_storage(queue.into_storage(), "m", config)?;
        let before = file(&queue);
        let retry = queue.park(RequestId(7), "[r7] done")?;
        assert_eq!(retry, Parked::Delivered { seq: Seq(1), batch });
        let other = queue
            .park(RequestId(7), "[r7] other")
            .err()
            .ok_or("conflict")?;
        assert_eq!(other.kind(), ErrorKind::RequestConflict);
        assert_eq!(
            file(&queue),
            before,
            "compacting {compacting}: nothing written"
        );
        assert!(
            queue.boundary(Budget(4096))?.is_none(),
            "nothing delivered twice"
        );
        let window = &queue.state().remembered;
        assert_eq!(window.len(), 1);
        assert_eq!(
            (window[0].request, window[0].end),
            (RequestId(7), Ended::Delivered)
        );
    }
    Ok(())
}

/// D22's retry of a group whose answer was lost and of which a boundary delivered a part: the
/// delivered line answers as delivered, the others their seqs, nothing is written, and parking
/// the group again never delivers r11 twice.
#[test]
fn d22_a_partly_delivered_group_is_retried_line_by_line() -> TestResult {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# A group that names one request twice MUST fail with `RequestConflict` and write nothing;
    //# otherwise each line is answered as a park of it alone would be (D3): a held line its seq, a
    //# remembered one how it ended, a new one parked, and a conflict or a dead letter refuses the
    //# whole group.
    let group = [
        (RequestId(11), "[r11] done"),
        (RequestId(12), "[r12] done"),
        (RequestId(13), "[r13] done"),
    ];
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park_all(&group)?;
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    // A budget of one line: r11 alone is delivered.
    let batch = deliver(&mut queue, 11, true)?;
    let before = file(&queue);
    let retry = queue.park_all(&group)?;
    assert_eq!(
        retry,
        [
            Parked::Delivered { seq: Seq(1), batch },
            Parked::Held(Seq(2)),
            Parked::Held(Seq(3)),
        ]
    );
    assert_eq!(file(&queue), before);
    // A new line beside them is parked alone, in one record.
    let mut more = group.to_vec();
    more.push((RequestId(14), "[r14] done"));
    assert_eq!(queue.park_all(&more)?[3], Parked::Held(Seq(4)));
    let delivered = queue.boundary(Budget(4096))?.ok_or("parked")?;
    let seqs: Vec<Seq> = delivered.items.iter().map(|item| item.seq).collect();
    assert_eq!(seqs, [Seq(2), Seq(3), Seq(4)], "r11 is not delivered twice");
    Ok(())
}

/// D3: the window is a count; a request pushed out of it by newer ones is a new line again, and
/// a discarded one answers as discarded.
#[test]
fn d3_a_retry_past_the_window_is_a_new_line() -> TestResult {
    let config = Config {
        failures_max: 1,
        delivered_memory: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    queue.park(RequestId(1), "one")?;
    deliver(&mut queue, 100, true)?;
    queue.park(RequestId(2), "two")?;
    deliver(&mut queue, 100, false)?; // failures_max 1: a dead letter
    assert_eq!(queue.discard_all()?, [Seq(2)]);
    // The discard pushed request 1 out of a window of one.
    assert_eq!(
        queue.park(RequestId(2), "two")?,
        Parked::Discarded { seq: Seq(2) }
    );
    assert_eq!(queue.park(RequestId(1), "one")?, Parked::Held(Seq(3)));
    Ok(())
}

/// D3, M3: a window of another size at open is one `next` record, and the window keeps its newest
/// entries; an open with the same size writes nothing.
#[test]
fn d3_the_window_takes_the_configured_size_at_open() -> TestResult {
    let sized = |memory| Config {
        delivered_memory: memory,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", sized(4))?;
    for request in 1..=3 {
        queue.park(RequestId(request), &format!("r{request}"))?;
    }
    deliver(&mut queue, 100, true)?;
    assert_eq!(queue.state().remembered.len(), 3);
    let queue = Queue::with_storage(queue.into_storage(), "m", sized(1))?;
    let window: Vec<RequestId> = queue.state().remembered.iter().map(|e| e.request).collect();
    assert_eq!((window, queue.state().memory), (vec![RequestId(3)], 1));
    let before = file(&queue);
    let queue = Queue::with_storage(queue.into_storage(), "m", sized(1))?;
    assert_eq!(file(&queue), before, "the same size writes nothing");
    let reopened = mirror::decode(&before)?;
    assert_eq!(&reopened, queue.state());
    Ok(())
}

/// M14, M2: a version 3 file holding a field only version 4 writes was not written by parkline:
/// `Corrupt`, and left as it was.
#[test]
fn m14_a_version_3_file_with_a_version_4_field_is_corrupt() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A reader MUST read a version 3 file (this document's format without the fields and the
    //# record version 4 added: no `at` or `died`, no `memory` in `next`, no `done` record, so no
    //# time and an empty remembered window of size 0) with the same transition, and MUST reject a
    //# record of a version 3 file that holds any of them.
    let header = rec(r#"{"format":"parkline-mirror","version":3}"#);
    for (record, fast) in [
        (
            r#"{"type":"park","seq":1,"request":1,"line":"a","failures":0,"handed":0,"at":5}"#,
            true,
        ),
        (r#"{"type":"next","seq":1,"batch":1,"memory":4}"#, false),
        (
            r#"{"type":"done","request":1,"crc":0,"seq":1,"batch":1,"end":"delivered"}"#,
            false,
        ),
    ] {
        let bytes = format!("{header}{}", rec(record)).into_bytes();
        let err = open_bytes(&bytes, Config::default())
            .err()
            .ok_or("corrupt")?;
        assert_eq!(
            err.kind(),
            ErrorKind::Corrupt,
            "{record} (fast path {fast})"
        );
        assert!(err.to_string().contains("version 4"), "{err}");
    }
    let plain = format!("{header}{}", rec(&park_json(1))).into_bytes();
    let queue = open_bytes(&plain, Config::default())?;
    assert_eq!(
        queue.parked()[0].parked_at(),
        None,
        "an upgraded line has no time"
    );
    Ok(())
}

/// D24: a park, a group park, a settle that kills and a close that kills carry the clock's
/// reading; ages are read against it; a redrive clears the time of death.
#[test]
fn d24_parks_and_deaths_carry_the_clock_s_times() -> TestResult {
    //= spec/delivery.md#d24-times
    //= type=test
    //# A line that becomes a dead letter at a settle or a close MUST carry the time of that record
    //# as its time of death.
    let clock = fixed();
    let at = |ms: u64| clock.0.store(NOW + ms, Ordering::SeqCst);
    let config = Config {
        failures_max: 1,
        repeats_max: 1,
        ..Config::default()
    };
    let mut queue = queue_with(config.clone(), &clock)?;
    queue.park(RequestId(1), "one")?;
    at(10);
    queue.park_all(&[(RequestId(2), "two"), (RequestId(3), "three")])?;
    let parked: Vec<Option<u64>> = queue.parked().iter().map(Item::parked_at).collect();
    assert_eq!(parked, [Some(NOW), Some(NOW + 10), Some(NOW + 10)]);
    at(25);
    let stats = queue.stats();
    assert_eq!(stats.oldest_parked_age, Some(Duration::from_millis(25)));
    assert_eq!(stats.oldest_dead_age, None);
    // Seq 1 fails once: dead at 40.
    at(40);
    let batch = queue.boundary(Budget(4))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Failed])?;
    assert_eq!(queue.dead_letters()[0].died_at(), Some(NOW + 40));
    // Seq 2 is handed over, and the process ends: the repeat bound closes it alone at 70.
    queue.boundary(Budget(4))?.ok_or("parked")?;
    let mut queue =
        Queue::with_storage(queue.into_storage(), "m", config)?.with_clock(clock.clone());
    at(70);
    queue.boundary(Budget(4))?;
    let died: Vec<(Seq, Option<u64>)> = queue
        .dead_letters()
        .iter()
        .map(|item| (item.seq, item.died_at()))
        .collect();
    assert_eq!(died, [(Seq(1), Some(NOW + 40)), (Seq(2), Some(NOW + 70))]);
    at(100);
    let stats = queue.stats();
    assert_eq!(stats.oldest_dead_age, Some(Duration::from_millis(60)));
    assert_eq!(stats.oldest_parked_age, Some(Duration::from_millis(90)));
    // The times are in the mirror: a reopen and a snapshot keep them.
    assert_eq!(&mirror::decode(&file(&queue))?, queue.state());
    assert_eq!(
        &mirror::decode(&mirror::encode(queue.state()))?,
        queue.state()
    );
    queue.redrive(&[Seq(1)])?;
    let redriven = queue
        .parked()
        .iter()
        .find(|item| item.seq == Seq(1))
        .ok_or("parked")?;
    assert_eq!(
        (redriven.parked_at(), redriven.died_at()),
        (Some(NOW), None)
    );
    // Seq 1, parked again below seq 3 in flight, is the oldest line now (kills the comparison
    // of the parked and in-flight fronts made `>` or `==`, found by `.ci/mutants --in-diff`).
    assert!(queue.in_flight().is_some_and(|b| b.items[0].seq == Seq(3)));
    assert_eq!(
        queue.stats().oldest_parked_age,
        Some(Duration::from_millis(100))
    );
    Ok(())
}

/// D24: a clock that goes back changes the times recorded and the ages shown (never below 0),
/// and nothing else: the same ops give the same lines, seqs, batches and window.
#[test]
fn d24_a_clock_that_goes_back_changes_only_the_ages() -> TestResult {
    let run = |step: i64| -> Result<Queue<MemStorage>, Box<dyn std::error::Error>> {
        let clock = fixed();
        let config = Config {
            failures_max: 1,
            ..Config::default()
        };
        let mut queue = queue_with(config, &clock)?;
        for request in 1..=4u64 {
            let now = NOW.saturating_add_signed(step * i64::try_from(request)?);
            clock.0.store(now, Ordering::SeqCst);
            queue.park(RequestId(request), &format!("r{request}"))?;
        }
        let batch = queue.boundary(Budget(6))?.ok_or("parked")?;
        let outcomes: Vec<Outcome> = (0..batch.items.len())
            .map(|i| {
                if i == 0 {
                    Outcome::Failed
                } else {
                    Outcome::Delivered
                }
            })
            .collect();
        queue.settle(batch.id, &outcomes)?;
        clock
            .0
            .store(NOW.saturating_add_signed(step * 10), Ordering::SeqCst);
        queue.park(RequestId(2), "r2")?;
        Ok(queue)
    };
    let (forward, backward) = (run(1_000)?, run(-1_000)?);
    assert_eq!(
        lifeless(&before_format_4(forward.state())),
        lifeless(&before_format_4(backward.state()))
    );
    assert_eq!(forward.state().remembered, backward.state().remembered);
    assert_ne!(
        forward.parked()[0].parked_at(),
        backward.parked()[0].parked_at()
    );
    // The clock now reads an earlier time than every line's: ages are 0, not negative.
    let stats = backward.stats();
    assert_eq!(stats.oldest_parked_age, Some(Duration::ZERO));
    assert_eq!(stats.oldest_dead_age, Some(Duration::ZERO));
    Ok(())
}

/// D3: what a remembered entry costs in a snapshot, for docs/performance.md: a full default
/// window of short requests, against the same state with none.
#[test]
fn d3_a_remembered_entry_costs_about_ninety_bytes_of_snapshot() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let lines: Vec<(RequestId, String)> = (1..=crate::DELIVERED_MEMORY)
        .map(|r| (RequestId(1_000_000 + r), format!("r{r}")))
        .collect();
    let group: Vec<(RequestId, &str)> = lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
    queue.park_all(&group)?;
    deliver(&mut queue, usize::MAX, true)?;
    let full = mirror::encode(queue.state()).len();
    let mut empty = queue.state().clone();
    empty.remembered.clear();
    let per_entry = (full - mirror::encode(&empty).len()) / lines.len();
    assert!(
        (80..=110).contains(&per_entry),
        "{per_entry} bytes per entry"
    );
    Ok(())
}

/// D3: the index of the remembered window names requests the window forgot only until it holds
/// twice the window plus 64, then it is rebuilt: with a window of three and three lines
/// delivered at each settle (the index grows by three, past 70 without touching it), it stays
/// within that bound over 200 settles, and a forgotten request is parked anew. Kills the bound's `>` made `==` (a settle of three steps over the equality and the index
/// grows without end, found by `.ci/mutants --in-diff`).
#[test]
fn d3_the_window_s_index_stays_within_twice_the_window() -> TestResult {
    let config = Config {
        delivered_memory: 3,
        ..Config::default()
    };
    let state = mirror::MirrorState {
        memory: 3,
        ..mirror::MirrorState::default()
    };
    let mut core = crate::engine::core::Core::new(state, config);
    let mut request = 0;
    for _ in 0..200 {
        for _ in 0..3 {
            request += 1;
            let step = park_step(&core, RequestId(request), "x", 0)?;
            core.commit(step.record.as_ref().ok_or("a park")?);
        }
        let step = core.boundary(Budget(usize::MAX), 0)?;
        core.commit(step.record.as_ref().ok_or("a batch")?);
        let batch = step.value.ok_or("parked")?;
        core.handed_over();
        let step = core.settle(batch.id, &[Outcome::Delivered; 3], 0)?;
        core.commit(step.record.as_ref().ok_or("a settle")?);
        core.settled();
        let len = core.remembered_index_len();
        assert!(len <= 2 * 3 + 64 + 3, "{len}");
    }
    assert_eq!(core.state.remembered.len(), 3);
    let forgotten = park_step(&core, RequestId(1), "x", 0)?;
    assert_eq!(forgotten.value, Parked::Held(core.state.next_seq));
    let remembered = park_step(&core, RequestId(request), "x", 0)?;
    assert!(remembered.record.is_none() && !remembered.value.is_held());
    Ok(())
}

/// M3: the change a record makes is the same whether it is applied as read back (`apply`, which
/// moves its lines) or as planned (`apply_checked`): the times and the window included. Kills
/// `apply_checked`'s `dead` arm without its times (found by `.ci/mutants --in-diff`: no test
/// applied a planned `dead` record, which only snapshots hold).
#[test]
fn m3_a_record_read_back_and_the_same_record_planned_change_the_state_alike() -> TestResult {
    use crate::mirror::{GroupItem, Record};
    let records = vec![
        Record::Park {
            seq: Seq(1),
            request: RequestId(1),
            line: Line::from("one"),
            failures: 0,
            handed: 0,
            at: Some(5),
        },
        Record::Dead {
            seq: Seq(2),
            request: RequestId(2),
            line: Line::from("two"),
            failures: 1,
            handed: 1,
            at: Some(6),
            died: Some(7),
        },
        Record::Parks {
            seq: Seq(3),
            at: Some(8),
            items: vec![GroupItem {
                request: RequestId(3),
                line: Line::from("three"),
            }],
        },
    ];
    let (mut read, mut planned) = (
        mirror::MirrorState::default(),
        mirror::MirrorState::default(),
    );
    for record in records {
        planned.check(&record)?;
        planned.apply_checked(&record);
        read.apply(record)?;
        assert_eq!(planned, read);
    }
    let dead = &read.dead_letters[0];
    assert_eq!((dead.parked_at(), dead.died_at()), (Some(6), Some(7)));
    assert_eq!(read.parked[1].parked_at(), Some(8));
    Ok(())
}

/// D3, D11: a settle's delivered lines join the window, the newest `memory` of them, whatever
/// else the batch held; and the settle doubles a cap the batch filled. Kills `apply_settle`'s
/// count of delivered lines with `+` for `-` (the window then skipped them) and the settle
/// record's count of the batch with `*` for `+` (the cap then lifted instead of doubling), found
/// by `.ci/mutants --in-diff` with the unit tests alone (the differential catches both too).
#[test]
fn d3_d11_a_settle_remembers_its_newest_delivered_lines_and_doubles_a_filled_cap() -> TestResult {
    let next = r#"{"type":"next","seq":1,"batch":1,"cap":3,"memory":2}"#;
    let bytes = file_of(&[next.to_owned()]);
    let config = Config {
        delivered_memory: 2,
        ..Config::default()
    };
    let mut queue = open_bytes(&bytes, config)?;
    for request in 1..=3 {
        queue.park(RequestId(request), &format!("r{request}"))?;
    }
    let batch = queue.boundary(Budget(usize::MAX))?.ok_or("parked")?;
    assert_eq!(batch.items.len(), 3, "the cap admits three");
    let outcomes = [Outcome::Delivered, Outcome::Failed, Outcome::Delivered];
    queue.settle(batch.id, &outcomes)?;
    let window: Vec<Seq> = queue.state().remembered.iter().map(|e| e.seq).collect();
    assert_eq!(window, [Seq(1), Seq(3)]);
    assert_eq!(queue.state().cap, Some(6));
    Ok(())
}

/// M3: a `done` record that says a line was delivered by no batch, or discarded by one, is
/// impossible: `Corrupt`, and the file left as it was. Kills `check_done` made `Ok(())` (found by
/// `.ci/mutants --in-diff`).
#[test]
fn m3_a_remembered_entry_that_contradicts_its_end_is_corrupt() -> TestResult {
    for (done, reason) in [
        (
            r#"{"type":"done","request":1,"crc":0,"seq":1,"end":"delivered"}"#,
            "without its batch",
        ),
        (
            r#"{"type":"done","request":1,"crc":0,"seq":1,"batch":1,"end":"discarded"}"#,
            "with batch 1",
        ),
    ] {
        let bytes = file_of(&[done.to_owned()]);
        let err = open_bytes(&bytes, no_window()).err().ok_or("corrupt")?;
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{done}");
        assert!(err.to_string().contains(reason), "{err}");
    }
    let good = r#"{"type":"done","request":1,"crc":0,"seq":1,"batch":1,"end":"delivered"}"#;
    let queue = open_bytes(&file_of(&[good.to_owned()]), no_window())?;
    assert_eq!(queue.state().remembered.len(), 1);
    Ok(())
}
