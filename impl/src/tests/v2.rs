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
    for (bytes, dead_handed) in [(V1_LOG, [2, 2]), (V1_COMPACTED, [0, 0])] {
        let queue = open_bytes(bytes, config_2())?;
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
        assert!(
            text.contains(r#"{"format":"parkline-mirror","version":2}"#),
            "{text}"
        );
        assert_eq!(mirror::decode_log(text.as_bytes())?.version, 2);
        let reopened = Queue::with_storage(queue.into_storage(), "m", config_2())?;
        assert_eq!(reopened.state(), &state);
    }
    Ok(())
}

/// M14: the upgraded recovered batch is handed over as a repeat at attempt 3, each item counting
/// its third hand-over.
#[test]
fn m14_upgraded_batch_repeats_with_its_counts() -> TestResult {
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
    let park = format!(
        r#"{{"type":"park","seq":1,"request":1,"line":"l1","failures":0,"handed":{}}}"#,
        u64::MAX
    );
    let bytes = file_of(&[park]);
    let mut queue = open_bytes(&bytes, Config::default())?;
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
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let before = file(&queue);
    let err = queue
        .park_all(&[(RequestId(1), "ok"), (RequestId(2), "a\nb")])
        .err()
        .ok_or("bad line")?;
    assert_eq!(err.kind(), ErrorKind::InvalidLine);
    assert!(err.to_string().contains("line 1 of the group"), "{err}");
    assert_eq!(file(&queue), before);
    assert!(!queue.is_poisoned());
    assert_eq!(queue.park_all(&[])?, Vec::<Seq>::new());
    assert_eq!(file(&queue), before);
    let seqs_parked = queue.park_all(&[(RequestId(1), "x"), (RequestId(2), "y")])?;
    assert_eq!(seqs_parked, [Seq(1), Seq(2)]);
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
    let next = format!(r#"{{"type":"next","seq":{},"batch":1}}"#, u64::MAX - 1);
    let bytes = file_of(&[next]);
    let mut queue = open_bytes(&bytes, Config::default())?;
    let err = queue
        .park_all(&[(RequestId(1), "x"), (RequestId(2), "y")])
        .err()
        .ok_or("exhausted")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert_eq!(file(&queue), bytes);
    assert_eq!(queue.park_all(&[(RequestId(1), "x")])?, [Seq(u64::MAX - 1)]);
    Ok(())
}

/// D21: a redrive moves dead letters back at their seq's place, failures 0, count kept; it is
/// allowed with a batch in flight and leaves that batch's remaining; a seq that is not dead
/// refuses the call and writes nothing.
#[test]
fn d21_redrive_keeps_seq_order_and_counts() -> TestResult {
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
