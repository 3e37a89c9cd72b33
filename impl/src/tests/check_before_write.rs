//! Check before write (M3): a record the queue planned is checked against the mirror's rules
//! before it is appended, so a planning bug is an error, never a durable record.

use super::*;

/// M3, M6, M11: a record the queue planned but its own mirror rules reject (a planning bug) is
/// refused before it is written: `Internal`, the handle poisoned, the file and the fsync count
/// as they were, and the mirror reopens with what the last good write left. The same bytes
/// appended without the check make the next open fail with `Corrupt`, which is what the check
/// before the write prevents.
#[test]
fn a_planned_record_the_state_rejects_is_an_error_and_writes_nothing() -> TestResult {
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# The writer MUST check every record it planned against its current state BEFORE appending it:
    //# a record the check rejects is a bug in the planning, which fails the call with
    //# `ErrorKind::Internal`, poisons the handle and writes nothing, so the file never holds a
    //# record the next open would reject as `Corrupt`.
    use crate::mirror::Record;
    let park = |seq, line: &str| Record::Park {
        seq: Seq(seq),
        request: RequestId(9),
        line: line.into(),
        failures: 0,
        handed: 0,
        at: None,
    };
    let bad_plans = [
        (park(1, "reused"), "seq 1 reused"),
        (park(3, "two\nlines"), "contains a newline"),
        (
            Record::Batch {
                id: BatchId(1),
                attempt: Attempt(1),
                seqs: vec![Seq(2)],
                remaining: 0,
            },
            "first parked seqs are [1]",
        ),
        (
            Record::Attempt {
                batch: BatchId(1),
                attempt: Attempt(2),
            },
            "not in flight",
        ),
        (
            Record::Settle {
                batch: BatchId(1),
                delivered: vec![Seq(1)],
                failed: Vec::new(),
                dead: Vec::new(),
                at: None,
            },
            "not in flight",
        ),
    ];
    for (record, reason) in bad_plans {
        let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        queue.park(RequestId(1), "a")?;
        queue.park(RequestId(2), "b")?;
        let before = queue.storage().file("m").ok_or("mirror")?.to_vec();
        let syncs = queue.storage().syncs();
        let err = queue
            .append_checked(Some(&record))
            .err()
            .ok_or("a rejected plan must fail")?;
        assert_eq!(err.kind(), ErrorKind::Internal, "{record:?}: {err}");
        assert!(err.to_string().contains(reason), "{record:?}: {err}");
        assert!(queue.is_poisoned());
        let after = queue.park(RequestId(3), "c").map_err(|e| e.kind());
        assert_eq!(after, Err(ErrorKind::Poisoned));
        assert_eq!(queue.storage().file("m"), Some(before.as_slice()));
        assert_eq!(queue.storage().syncs(), syncs);
        let mut storage = queue.into_storage();
        let reopened = Queue::with_storage(storage.clone(), "m", Config::default())?;
        assert_eq!(reopened.parked().len(), 2);
        // Without the check: the record durable first, the next open refuses the mirror.
        let mut unchecked = before.clone();
        unchecked.extend_from_slice(&mirror::encode_record(&record));
        storage.set_file("m", unchecked);
        let err = Queue::with_storage(storage, "m", Config::default())
            .err()
            .ok_or("an impossible record must not open")?;
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{record:?}: {err}");
    }
    Ok(())
}
