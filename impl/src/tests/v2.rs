//! Format 2's additions, each by its requirement: the hand-over count (D19, D20), the group park
//! (D22), the redrive (D21) and the upgrade of a version 1 mirror (M14), on the committed
//! version 1 files written by the last build that wrote version 1.

use super::*;

const V1_LOG: &[u8] = include_bytes!("../../tests/fixtures/v1/mixed.mirror");
const V1_COMPACTED: &[u8] = include_bytes!("../../tests/fixtures/v1/compacted.mirror");

fn seqs(items: &[Item]) -> Vec<u64> {
    items.iter().map(|item| item.seq.0).collect()
}

fn handed(items: &[Item]) -> Vec<u64> {
    items.iter().map(|item| item.handed).collect()
}

fn config_2() -> Config {
    Config {
        failures_max: 2,
        ..Config::default()
    }
}

/// M14: a version 1 mirror opens with its state (fixtures/v1/README.md), the hand-overs its
/// records show counted, and is rewritten as version 2 before anything is appended; reopening
/// the rewritten file gives the same state.
#[test]
fn m14_version_1_mirrors_open_upgraded_without_loss() -> TestResult {
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# A writer MUST NOT append records of another version to a file.
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# A new version gets a new number; a reader of version N MAY read older versions.
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A reader MUST read a version 1 file (this document's format without `handed`, `parks` and
    //# `redrive`: version 1 `park` and `dead` records have exactly `seq, request, line, failures`)
    //# with the same transition, each `park` and `dead` item with handed equal to its failure
    //# count, so the `batch` and `attempt` records count the hand-overs the file still shows on top
    //# of those.
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# `open` of a version 1, 2 or 3 mirror that decodes without error MUST, before it appends
    //# anything, write the current version's snapshot of that state through M5 (temp file, fsync,
    //# rename, directory fsync).
    // A dead letter failed twice: both forms count at least those two hand-overs (the log's
    // batch records, the compacted file's failure counts).
    for (bytes, dead_handed) in [(V1_LOG, [2, 2]), (V1_COMPACTED, [2, 2])] {
        let queue = open_bytes(bytes, config_2())?;
        // M5: the rewrite went through a temp file renamed over the mirror, then a directory
        // fsync.
        assert_eq!(queue.storage().dir_syncs(), 1);
        assert_eq!(queue.storage().names(), ["m"]);
        let state = queue.state().clone();
        assert_eq!(seqs(&state.parked), [8]);
        assert_eq!(handed(&state.parked), [0]);
        let batch = state.in_flight.as_ref().ok_or("batch 3 in flight")?;
        assert_eq!(
            (batch.id, batch.attempt, batch.remaining),
            (BatchId(3), Attempt(2), 1)
        );
        assert_eq!(
            (seqs(&batch.items), handed(&batch.items)),
            (vec![6, 7], vec![2, 2])
        );
        assert_eq!(batch.seen, 0);
        assert_eq!(seqs(&state.dead_letters), [3, 5]);
        assert_eq!(handed(&state.dead_letters), dead_handed);
        assert!(state.dead_letters.iter().all(|item| item.failures == 2));
        assert_eq!((state.next_seq, state.next_batch), (Seq(9), BatchId(4)));
        let lines: Vec<&str> = state.dead_letters.iter().map(|i| i.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "[parkline batch 1 end: 0 parked lines still undelivered]",
                ""
            ]
        );
        let text = String::from_utf8(file(&queue))?;
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //= type=test
        //# The open that rewrites a mirror of a version before 4 (M14) MUST give it a fresh
        //# life.
        let life = state.life.ok_or("the upgrade gave the mirror a life")?;
        assert!(
            text.contains(&format!(
                r#"{{"format":"parkline-mirror","version":4,"life":"{life}"}}"#
            )),
            "{text}"
        );
        assert_eq!(mirror::decode_log(text.as_bytes())?.version, 4);
        let reopened = Queue::with_storage(queue.into_storage(), "m", config_2())?;
        assert_eq!(reopened.state(), &state);
    }
    Ok(())
}

/// M14: the upgraded recovered batch is handed over as a repeat at attempt 3, each item counting
/// its third hand-over.
#[test]
fn m14_upgraded_batch_repeats_with_its_counts() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A reader MUST read a version 1 file (this document's format without `handed`, `parks` and
    //# `redrive`: version 1 `park` and `dead` records have exactly `seq, request, line, failures`)
    //# with the same transition, each `park` and `dead` item with handed equal to its failure
    //# count, so the `batch` and `attempt` records count the hand-overs the file still shows on top
    //# of those.
    let mut queue = open_bytes(V1_LOG, config_2())?;
    let repeat = queue.boundary(Budget(12))?.ok_or("recovered")?;
    assert_eq!(
        (repeat.attempt, handed(&repeat.items)),
        (Attempt(3), vec![3, 3])
    );
    assert!(repeat.notified().iter().all(|event| event.handed == 3));
    Ok(())
}

/// M11, M14: a damaged version 1 file is `Corrupt` and left byte for byte, never upgraded.
#[test]
fn m14_damaged_version_1_file_is_left_alone() -> TestResult {
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //= type=test
    //# In that case the queue MUST NOT modify the mirror or its temp file: no truncation, no
    //# "repair", no removal of the temp file; both stay byte for byte as they were.
    let mut bytes = V1_LOG.to_vec();
    let at = bytes.len() - 5;
    bytes[at] ^= 1;
    let mut storage = MemStorage::new();
    storage.set_file("m", bytes.clone());
    let err = Queue::with_storage(storage.clone(), "m", config_2())
        .err()
        .ok_or("damaged")?;
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(storage.file("m"), Some(&bytes[..]));
    Ok(())
}

/// D19: the count is raised by the record that allows the hand-over, before `boundary` returns,
/// so a crash after the hand-over keeps it; failures and settles keep it; D20: seen counts the
/// items an earlier batch handed over and a repeat keeps it.
#[test]
fn d19_d20_hand_over_count_survives_crashes_and_retries() -> TestResult {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# Every item MUST carry `handed`, the number of its hand-overs made durable: the `batch` and
    //# `attempt` records that named it since it was parked (`mirror.md` M3).
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# The count MUST be raised by the record that allows the hand-over, before `boundary` returns
    //# the batch, so that a crash between the hand-over and the settle still counts a hand-over the
    //# parent may have seen.
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# It MUST be kept by settles (failed and dead items), across crashes and recoveries, and by a
    //# redrive (D21); it is durable in the mirror.
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# The notified event of each hand-over (D5) MUST carry the item's count including that
    //# hand-over (1 the first time).
    //= spec/delivery.md#d20-seen-before-in-the-header
    //= type=test
    //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over (their
    //# count was above 0 before this batch's record), and the header MUST say it (`S seen before`,
    //# D4).
    //= spec/delivery.md#d20-seen-before-in-the-header
    //= type=test
    //# `seen` is fixed when the batch is created: a repeat MUST carry the same `seen`, so its turn
    //# text still equals the original's except for `ATTEMPT` and `REPEAT` (D10).
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "a")?;
    queue.park(RequestId(2), "b")?;
    let first = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!((handed(&first.items), first.seen), (vec![1, 1], 0));
    queue.settle(first.id, &[Outcome::Failed, Outcome::Delivered])?;
    queue.park(RequestId(3), "c")?;
    let second = queue.boundary(Budget(100))?.ok_or("retry")?;
    assert_eq!(
        (seqs(&second.items), handed(&second.items)),
        (vec![1, 3], vec![2, 1])
    );
    assert_eq!(second.seen, 1);
    assert!(second.text().contains(", 1 seen before, "));
    drop(queue); // a crash after the hand-over, before the settle
    let mut queue = Queue::open(&path)?;
    assert_eq!(
        queue.in_flight().map(|b| handed(&b.items)),
        Some(vec![2, 1])
    );
    let repeat = queue.boundary(Budget(100))?.ok_or("repeat")?;
    assert_eq!((handed(&repeat.items), repeat.seen), (vec![3, 2], 1));
    let events = repeat.notified();
    assert_eq!(events.iter().map(|e| e.handed).collect::<Vec<_>>(), [3, 2]);
    Ok(())
}

/// D19, M6: an item at the largest count cannot be handed over again: `boundary` is
/// `Exhausted`, writes nothing and does not poison.
#[test]
fn d19_hand_over_count_at_u64_max_is_exhausted() -> TestResult {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# A hand-over count is never wrapped or saturated: a boundary that would raise an item's count
    //# past `u64::MAX` MUST fail with `Exhausted`, write nothing and not poison (as the counters of
    //# `mirror.md` M6).
    let park = format!(
        r#"{{"type":"park","seq":1,"request":1,"line":"l1","failures":0,"handed":{}}}"#,
        u64::MAX
    );
    let bytes = file_of(&[park]);
    let mut queue = open_bytes(&bytes, no_window())?;
    let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert_eq!(file(&queue), bytes);
    assert!(!queue.is_poisoned());
    Ok(())
}

/// D22: a group park is one record: all its lines or none. A bad line refuses the whole call
/// and writes nothing; a torn group append is cut whole on reopen.
#[test]
fn d22_group_park_is_all_or_nothing() -> TestResult {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# `Queue::park_all(lines)` MUST park every new line of the slice, in slice order with
    //# consecutive seqs, in one record (one append and one fsync, whatever the number of lines), or
    //# none of them: a bad line (D3) MUST reject the whole call and write nothing, naming the first
    //# bad line's index; a slice with no new line writes nothing; seqs that would reach `u64::MAX`
    //# give `Exhausted`.
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# A crash during the append MUST leave all of the group's lines parked or none of them.
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# The index of the first bad line MUST also be a value of the error
    //# (`Error::line_index`).
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let before = file(&queue);
    let err = queue
        .park_all(&[(RequestId(1), "ok"), (RequestId(2), "a\nb")])
        .err()
        .ok_or("bad line")?;
    assert_eq!(err.kind(), ErrorKind::InvalidLine);
    assert!(err.to_string().contains("line 1 of the group"), "{err}");
    assert_eq!(err.line_index(), Some(1));
    let err = queue
        .park_all(&[(RequestId(1), "a\nb"), (RequestId(2), "c\nd")])
        .err()
        .ok_or("bad lines")?;
    assert_eq!(err.line_index(), Some(0), "the first bad line");
    assert_eq!(file(&queue), before);
    assert!(!queue.is_poisoned());
    assert_eq!(queue.park_all(&[])?, Vec::<Parked>::new());
    assert_eq!(file(&queue), before);
    let seqs_parked = queue.park_all(&[(RequestId(1), "x"), (RequestId(2), "y")])?;
    assert_eq!(seqs_parked, [Parked::Held(Seq(1)), Parked::Held(Seq(2))]);
    let whole = file(&queue);
    assert_eq!(
        whole[before.len()..]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        1
    );
    // Every cut inside the group's record leaves none of its lines; the whole record all.
    for cut in before.len()..=whole.len() {
        let mut storage = MemStorage::new();
        storage.set_file("m", whole[..cut].to_vec());
        let queue = Queue::with_storage(storage, "m", Config::default())?;
        let expected: &[u64] = if cut == whole.len() { &[1, 2] } else { &[] };
        assert_eq!(seqs(queue.parked()), expected, "cut at {cut}");
    }
    Ok(())
}

/// D22, M6: a group whose last seq would be `u64::MAX` is `Exhausted` and writes nothing.
#[test]
fn d22_group_park_past_the_last_seq_is_exhausted() -> TestResult {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# `Queue::park_all(lines)` MUST park every new line of the slice, in slice order with
    //# consecutive seqs, in one record (one append and one fsync, whatever the number of lines), or
    //# none of them: a bad line (D3) MUST reject the whole call and write nothing, naming the first
    //# bad line's index; a slice with no new line writes nothing; seqs that would reach `u64::MAX`
    //# give `Exhausted`.
    let next = format!(r#"{{"type":"next","seq":{},"batch":1}}"#, u64::MAX - 1);
    let bytes = file_of(&[next]);
    let mut queue = open_bytes(&bytes, no_window())?;
    let err = queue
        .park_all(&[(RequestId(1), "x"), (RequestId(2), "y")])
        .err()
        .ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert_eq!(file(&queue), bytes);
    let parked = queue.park_all(&[(RequestId(1), "x")])?;
    assert_eq!(parked, [Parked::Held(Seq(u64::MAX - 1))]);
    Ok(())
}

/// D21: a redrive moves dead letters back at their seq's place, failures 0, count kept; it is
/// allowed with a batch in flight and leaves that batch's remaining; a seq that is not dead
/// refuses the call and writes nothing.
#[test]
fn d21_redrive_keeps_seq_order_and_counts() -> TestResult {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# It MUST be kept by settles (failed and dead items), across crashes and recoveries, and by a
    //# redrive (D21); it is durable in the mirror.
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# `Queue::redrive(seqs)` and `Queue::redrive_all()` MUST move the named dead letters (all of
    //# them) back to the parked list in one durable record (one append, one fsync), each at its
    //# seq's place in the parked list (which stays in seq order), with `failures` reset to 0 and
    //# `handed` kept.
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# A seq that is not a dead letter, or is named twice, MUST make the call fail with `NotDead`,
    //# write nothing and not poison.
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# A redriven line is then delivered or dead again like any parked line (D7, D8); it MUST NOT
    //# be lost (D9 holds for it) and MUST NOT be offered again without its count (D19) showing it
    //# was seen.
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open_with(&path, config.clone())?;
    queue.park_all(&[
        (RequestId(1), "a"),
        (RequestId(2), "b"),
        (RequestId(3), "c"),
    ])?;
    let batch = queue.boundary(Budget(4))?.ok_or("parked")?;
    assert_eq!(seqs(&batch.items), [1, 2]);
    queue.settle(batch.id, &[Outcome::Failed, Outcome::Failed])?;
    assert_eq!(seqs(queue.dead_letters()), [1, 2]);
    queue.park(RequestId(4), "d")?;
    let in_flight = queue.boundary(Budget(2))?.ok_or("seq 3")?;
    assert_eq!((seqs(&in_flight.items), in_flight.remaining), (vec![3], 1));
    let before = fs::read(&path)?;
    let err = queue
        .redrive(&[Seq(1), Seq(3)])
        .err()
        .ok_or("seq 3 is in flight")?;
    assert_eq!(err.kind(), ErrorKind::NotDead, "{err}");
    let twice = queue
        .redrive(&[Seq(2), Seq(2)])
        .err()
        .ok_or("named twice")?;
    assert_eq!(twice.kind(), ErrorKind::NotDead, "{twice}");
    assert_eq!(fs::read(&path)?, before);
    assert_eq!(queue.redrive(&[Seq(2)])?, [Seq(2)]);
    assert_eq!(seqs(queue.parked()), [2, 4]);
    assert_eq!(queue.in_flight().map(|b| b.remaining), Some(1));
    assert_eq!(queue.redrive_all()?, [Seq(1)]);
    assert_eq!(seqs(queue.parked()), [1, 2, 4]);
    assert!(
        queue.parked()[..2]
            .iter()
            .all(|i| i.failures == 0 && i.handed == 1)
    );
    drop(queue);
    let mut queue = Queue::open_with(&path, config)?;
    assert_eq!(seqs(queue.parked()), [1, 2, 4]);
    assert!(queue.dead_letters().is_empty());
    let repeat = queue.boundary(Budget(2))?.ok_or("recovered")?;
    queue.settle(repeat.id, &[Outcome::Delivered])?;
    let next = queue.boundary(Budget(100))?.ok_or("redriven")?;
    assert_eq!(
        (seqs(&next.items), handed(&next.items), next.seen),
        (vec![1, 2, 4], vec![2, 2, 1], 2)
    );
    Ok(())
}

/// D3: a retried park is answered from the mirror: the same line gets the seq it has and writes
/// nothing, another line is a conflict, a dead line points to redrive; once delivered, the
/// request is free again. A retry across a crash between the append and the fsync gets the
/// seq when the record reached the file, and a new one when it did not.
#[test]
fn d3_a_retried_park_is_delivered_once() -> TestResult {
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
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    assert_eq!(queue.park(RequestId(1), "r1 ok")?, Parked::Held(Seq(1)));
    let before = file(&queue);
    let syncs = queue.storage().syncs();
    assert_eq!(queue.park(RequestId(1), "r1 ok")?, Parked::Held(Seq(1)));
    assert_eq!(
        (file(&queue), queue.storage().syncs()),
        (before.clone(), syncs)
    );
    let err = queue
        .park(RequestId(1), "r1 other")
        .map(|_| ())
        .err()
        .ok_or("conflict")?;
    assert_eq!(err.kind(), ErrorKind::RequestConflict);
    assert_eq!(file(&queue), before);
    // In flight: still the same seq.
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!(queue.park(RequestId(1), "r1 ok")?, Parked::Held(Seq(1)));
    // Dead: a retry points to redrive.
    queue.settle(batch.id, &[Outcome::Failed])?;
    let err = queue
        .park(RequestId(1), "r1 ok")
        .map(|_| ())
        .err()
        .ok_or("dead")?;
    assert_eq!(err.kind(), ErrorKind::RequestDead);
    assert_eq!(queue.find(RequestId(1)).map(|item| item.seq), Some(Seq(1)));
    // Delivered and settled: the request is no longer held but remembered, and a retry
    // answers that it was delivered, writing nothing.
    queue.redrive_all()?;
    let batch = queue.boundary(Budget(100))?.ok_or("redriven")?;
    queue.settle(batch.id, &[Outcome::Delivered])?;
    assert!(queue.find(RequestId(1)).is_none());
    let before = file(&queue);
    let delivered = Parked::Delivered {
        seq: Seq(1),
        batch: batch.id,
    };
    assert_eq!(queue.park(RequestId(1), "r1 ok")?, delivered);
    assert_eq!(file(&queue), before);

    Ok(())
}

/// D3: a park whose answer was lost (the append reached the file or did not, then the daemon
/// died) is retried after the reopen and delivered exactly once either way.
#[test]
fn d3_a_park_retried_across_a_crash_is_kept_once() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let before_park = queue.into_storage();
    let mut queue = Queue::with_storage(before_park.clone(), "m", Config::default())?;
    queue.park(RequestId(5), "r5 ok")?;
    let after_park = queue.into_storage();
    for (reached, storage) in [(false, before_park), (true, after_park)] {
        let mut reopened = Queue::with_storage(storage, "m", Config::default())?;
        assert_eq!(
            reopened.park(RequestId(5), "r5 ok")?,
            Parked::Held(Seq(1)),
            "reached {reached}"
        );
        let lines: Vec<Seq> = reopened.parked().iter().map(|item| item.seq).collect();
        assert_eq!(lines, [Seq(1)], "reached {reached}");
    }
    Ok(())
}

/// D22: a group is retried only as a whole.
#[test]
fn d22_a_group_is_answered_line_by_line() -> TestResult {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# A group that names one request twice MUST fail with `RequestConflict` and write
    //# nothing; otherwise each line is answered as a park of it alone would be (D3): a held
    //# line its seq, a remembered one how it ended, a new one parked, and a conflict or a
    //# dead letter refuses the whole group.
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let group = [(RequestId(1), "a"), (RequestId(2), "b")];
    let held = [Parked::Held(Seq(1)), Parked::Held(Seq(2))];
    assert_eq!(queue.park_all(&group)?, held);
    let before = file(&queue);
    assert_eq!(queue.park_all(&group)?, held);
    for bad in [
        vec![(RequestId(3), "c"), (RequestId(3), "c")],
        vec![(RequestId(3), "c"), (RequestId(2), "other")],
    ] {
        let err = queue.park_all(&bad).map(|_| ()).err().ok_or("conflict")?;
        assert_eq!(err.kind(), ErrorKind::RequestConflict, "{bad:?}");
    }
    assert_eq!(file(&queue), before);
    // A held line beside a new one: the held keeps its seq, the new one is parked alone.
    let mixed = [(RequestId(1), "a"), (RequestId(3), "c")];
    let answers = queue.park_all(&mixed)?;
    assert_eq!(answers, [Parked::Held(Seq(1)), Parked::Held(Seq(3))]);
    assert_eq!(queue.parked().len(), 3);
    Ok(())
}

/// M14, D19: a compacted version 1 file dropped the batch records of a line that failed; its
/// failure count says it was handed over at least that often, so after the upgrade its next
/// batch says it was seen before, and its count is not below the truth.
#[test]
fn m14_an_upgraded_line_that_failed_counts_its_hand_overs() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A reader MUST read a version 1 file (this document's format without `handed`, `parks` and
    //# `redrive`: version 1 `park` and `dead` records have exactly `seq, request, line, failures`)
    //# with the same transition, each `park` and `dead` item with handed equal to its failure
    //# count, so the `batch` and `attempt` records count the hand-overs the file still shows on top
    //# of those.
    let bytes = [
        rec(r#"{"format":"parkline-mirror","version":1}"#),
        rec(r#"{"type":"park","seq":3,"request":13,"line":"r13","failures":1}"#),
        rec(r#"{"type":"next","seq":4,"batch":2}"#),
    ]
    .concat();
    let mut queue = open_bytes(bytes.as_bytes(), config_2())?;
    assert_eq!(handed(queue.parked()), [1]);
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!(batch.seen, 1, "the line was handed over before");
    assert_eq!(handed(&batch.items), [2]);
    Ok(())
}

/// M14: the committed version 2 mirrors (`tests/fixtures/v2/README.md`, written by the last
/// build that wrote version 2), compacted and not, open upgraded without loss: the state the
/// README gives, the state this build reaches by the same sequence, rewritten as version 3
/// through M5 before anything is appended, and the same state when reopened.
#[test]
fn m14_version_2_mirrors_open_upgraded_without_loss() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A reader MUST read a version 2 file (version 3's format with seq lists written as plain
    //# arrays, a snapshot's in-flight batch written as `park` records of its items, each with its
    //# handed minus the batch's attempt, before a `batch` record at the stored attempt, and no
    //# `close`, `discard`, `flight` or cap) with the same transition.
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# `open` of a version 1, 2 or 3 mirror that decodes without error MUST, before it appends
    //# anything, write the current version's snapshot of that state through M5 (temp file, fsync,
    //# rename, directory fsync).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2");
    let default_slack = Config::default().compact_slack_bytes;
    for (name, slack) in [("mixed.mirror", default_slack), ("compacted.mirror", 0)] {
        let config = Config {
            failures_max: 2,
            compact_slack_bytes: slack,
            ..Config::default()
        };
        let queue = open_bytes(&fs::read(dir.join(name))?, config.clone())?;
        assert_eq!(
            queue.storage().dir_syncs(),
            1,
            "{name}: rewritten through M5"
        );
        let state = queue.state().clone();
        assert_eq!(seqs(&state.parked), [7, 8]);
        let batch = state.in_flight.as_ref().ok_or("batch 3 in flight")?;
        assert_eq!(
            (batch.id, batch.attempt, batch.remaining),
            (BatchId(3), Attempt(2), 2)
        );
        assert_eq!(
            (seqs(&batch.items), handed(&batch.items)),
            (vec![5, 6], vec![4, 2])
        );
        assert_eq!(seqs(&state.dead_letters), [3]);
        assert_eq!(handed(&state.dead_letters), [2]);
        assert_eq!((state.next_seq, state.next_batch), (Seq(9), BatchId(4)));
        assert_eq!(mirror::decode_log(&file(&queue))?.version, 4);
        let written = before_format_4(v2_sequence(config.clone())?.state());
        assert_eq!(written, before_format_4(&state), "{name}");
        assert!(
            state.remembered.is_empty(),
            "{name}: a version 2 file remembers nothing"
        );
        let reopened = Queue::with_storage(queue.into_storage(), "m", config)?;
        assert_eq!(reopened.state(), &state);
    }
    Ok(())
}

/// The sequence of `tests/fixtures/v2/README.md`, in memory, run by this build; the queue at its
/// end.
fn v2_sequence(config: Config) -> crate::Result<Queue<MemStorage>> {
    let outcomes = |delivered: &[bool]| -> Vec<Outcome> {
        delivered
            .iter()
            .map(|&d| {
                if d {
                    Outcome::Delivered
                } else {
                    Outcome::Failed
                }
            })
            .collect()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    let lines = [
        "r11 a",
        "r12 b",
        "[parkline batch 1 end: 0 parked lines still undelivered]",
        "r14 d",
        "",
    ];
    for (request, line) in (11..).zip(lines) {
        queue.park(RequestId(request), line)?;
    }
    let first = queue
        .boundary(Budget(1 << 20))?
        .ok_or_else(|| internal("batch 1"))?;
    queue.settle(first.id, &outcomes(&[true, true, false, false, false]))?;
    let second = queue
        .boundary(Budget(1 << 20))?
        .ok_or_else(|| internal("batch 2"))?;
    queue.settle(second.id, &outcomes(&[false, true, false]))?;
    queue.park_all(&[
        (RequestId(16), "r16 a"),
        (RequestId(17), "r17 b"),
        (RequestId(18), "r18 c"),
    ])?;
    queue.redrive(&[Seq(5)])?;
    queue
        .boundary(Budget(12))?
        .ok_or_else(|| internal("batch 3"))?;
    // The process ends before the settle; the next life hands the batch over again and ends.
    let storage = queue.into_storage();
    let mut queue = Queue::with_storage(storage, "m", config)?;
    queue
        .boundary(Budget(12))?
        .ok_or_else(|| internal("batch 3 again"))?;
    Ok(queue)
}

fn internal(what: &str) -> crate::Error {
    crate::Error::new(ErrorKind::Internal, format!("{what}: nothing handed over"))
}

/// M14: a batch a version 1 build handed over is repeated in the current grammar, so its text
/// differs from the one the parent saw beyond `ATTEMPT` and `REPEAT` (version 1's header had no
/// `SEEN` or `BYTES`, its trailer no check); id, members, order and `remaining` are the same.
#[test]
fn m14_a_batch_a_version_1_build_handed_over_repeats_in_the_current_grammar() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# A batch that a version 1 build handed over is repeated in the current grammar: its text
    //# differs from the one the parent saw beyond `ATTEMPT` and `REPEAT`, the one exception to
    //# D10's equal text, while its id, members, order and `remaining` are those the parent saw.
    let mut queue = open_bytes(V1_LOG, config_2())?;
    let repeat = queue.boundary(Budget(12))?.ok_or("batch 3 recovered")?;
    let lines: Vec<&str> = repeat.items.iter().map(|item| item.line.as_str()).collect();
    let text = crate::frame::render(
        repeat.id,
        repeat.attempt,
        repeat.seen,
        repeat.remaining,
        &lines,
    );
    // Version 1's grammar (spec/delivery.md D4 before format 2), at the same attempt.
    let version_1 = "[parkline batch 3 attempt 3, repeat: 2 of 3 parked lines]\nr16 a\nr17 b\n\
                     [parkline batch 3 end: 1 parked lines still undelivered]\n";
    assert_ne!(text, version_1);
    let frame = crate::frame::parse(&text).map_err(|e| format!("{e:?}"))?;
    assert_eq!((frame.id, frame.remaining), (BatchId(3), 1));
    assert_eq!(frame.lines, ["r16 a", "r17 b"]);
    let header = "[parkline batch 3 attempt 3, repeat: 2 of 3 parked lines, 0 seen before";
    assert!(text.starts_with(header), "{text}");
    Ok(())
}

/// D22: a group over `group_bytes_max` is refused with `GroupTooLarge` and writes nothing; one
/// at the limit parks; a limit below `line_bytes_max` is an unusable config.
#[test]
fn d22_a_group_over_its_byte_limit_is_refused_whole() -> TestResult {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# A group whose lines hold more than `group_bytes_max` bytes together MUST be refused
    //# with `GroupTooLarge`, writing nothing.
    let config = Config {
        line_bytes_max: 4,
        group_bytes_max: 8,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    let before = file(&queue);
    let over = [
        (RequestId(1), "abcd"),
        (RequestId(2), "efgh"),
        (RequestId(3), "i"),
    ];
    let err = queue.park_all(&over).err().ok_or("over the limit")?;
    assert_eq!(err.kind(), ErrorKind::GroupTooLarge, "{err}");
    assert_eq!(file(&queue), before);
    assert!(!queue.is_poisoned());
    assert_eq!(
        queue.park_all(&over[..2])?,
        [Parked::Held(Seq(1)), Parked::Held(Seq(2))]
    );
    let small = Config {
        group_bytes_max: 3,
        ..config
    };
    let err = Queue::with_storage(MemStorage::new(), "m", small)
        .err()
        .ok_or("unusable")?;
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    Ok(())
}

/// D3: a daemon that restarts and parks again, before its first boundary, every line it has
/// no acknowledgement for (here all of them: parked, in the recovered batch, or lost with the
/// crash) duplicates none, and that boundary repeats the batch as it was.
#[test]
fn d3_lines_parked_again_before_the_first_boundary_are_never_duplicated() -> TestResult {
    let lines: Vec<(RequestId, String)> = (1..=5)
        .map(|r| (RequestId(r), format!("r{r} ok")))
        .collect();
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    for (request, line) in &lines[..3] {
        queue.park(*request, line)?;
    }
    let batch = queue.boundary(Budget(100))?.ok_or("three parked")?;
    queue.park(lines[3].0, &lines[3].1)?;
    // The daemon dies before r5's park reached the mirror, and before the settle.
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    let seqs: Vec<Seq> = lines
        .iter()
        .map(|(request, line)| queue.park(*request, line).map(Parked::seq))
        .collect::<crate::Result<_>>()?;
    assert_eq!(seqs, [Seq(1), Seq(2), Seq(3), Seq(4), Seq(5)]);
    let repeat = queue.boundary(Budget(100))?.ok_or("the recovered batch")?;
    assert_eq!((repeat.id, repeat.items.len()), (batch.id, 3));
    let parked: Vec<RequestId> = queue.parked().iter().map(|item| item.request).collect();
    assert_eq!(parked, [RequestId(4), RequestId(5)]);
    Ok(())
}
