//! Unit tests of the crate, on real temporary directories wherever files matter. Each names the
//! requirement ids (spec/delivery.md D.., spec/mirror.md M..) it covers.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::mirror;
use crate::{
    Attempt, Batch, BatchId, Budget, Config, ErrorKind, Item, MemStorage, Outcome, Queue,
    RequestId, Seq, Storage, split,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn item(seq: u64, line: &str) -> Item {
    Item {
        seq: Seq(seq),
        request: RequestId(seq + 100),
        line: line.to_owned(),
        failures: 0,
    }
}

fn temp_mirror() -> io::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("s1.mirror");
    Ok((dir, path))
}

/// A line in the format of the seed's deferred queue: request id, answering turn, outcome and
/// the agent_read reference, which must all survive verbatim.
fn seed_line(n: u64) -> String {
    format!(
        "[delegation r-{n:03} answered turn sj-18d3164fbb9ba765-{n:02}] outcome: ok; agent_read{{turn:\"s980-{n:02}\"}} \u{2014} done"
    )
}

/// One complete record line with a correct checksum, for building damaged files.
fn rec(json: &str) -> String {
    format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
}

fn header() -> String {
    rec(r#"{"format":"parkline-mirror","version":1}"#)
}

fn park_json(seq: u64) -> String {
    format!(r#"{{"type":"park","seq":{seq},"request":{seq},"line":"l{seq}","failures":0}}"#)
}

/// The async daemon moves a queue to a blocking thread (`spawn_blocking`) and shares it behind a
/// mutex: the queue and its error must be `Send`, and the error `Sync` too.
#[test]
fn queue_and_error_can_cross_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Queue>();
    send::<Queue<MemStorage>>();
    send_sync::<crate::Error>();
    send_sync::<Batch>();
}

// ---------------------------------------------------------------- split and turn text (D11-D13)

/// D11, D12: the longest prefix within the budget, at least one item, chars not bytes.
#[test]
fn split_takes_the_longest_prefix_within_budget() {
    let items = [item(1, "aaaa"), item(2, "bb"), item(3, "c")];
    // costs 5, 3, 2
    assert_eq!(split(&items, Budget(0)), 1);
    assert_eq!(split(&items, Budget(4)), 1);
    assert_eq!(split(&items, Budget(5)), 1);
    assert_eq!(split(&items, Budget(7)), 1);
    assert_eq!(split(&items, Budget(8)), 2);
    assert_eq!(split(&items, Budget(9)), 2);
    assert_eq!(split(&items, Budget(10)), 3);
    assert_eq!(split(&items, Budget(usize::MAX)), 3);
    assert_eq!(split(&[], Budget(10)), 0);
    // Characters, not bytes: "ééé" is 6 bytes, 3 characters, cost 4.
    let wide = [item(1, "ééé"), item(2, "x")];
    assert_eq!(split(&wide, Budget(4)), 1);
    assert_eq!(split(&wide, Budget(6)), 2);
}

/// D12: a single line larger than the budget is delivered alone and never cut; a big line behind
/// small ones ends the prefix before it.
#[test]
fn split_delivers_a_line_larger_than_the_budget_alone() {
    let big = "x".repeat(1000);
    let items = [item(1, &big), item(2, "a")];
    assert_eq!(split(&items, Budget(10)), 1);
    let items = [item(1, "a"), item(2, &big), item(3, "b")];
    assert_eq!(split(&items, Budget(10)), 1);
    assert_eq!(split(&items[1..], Budget(10)), 1);
}

/// D12 through the queue: the oversized line comes out whole, in a batch of its own.
#[test]
fn boundary_hands_an_oversized_line_alone_and_whole() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    let big = "é".repeat(500);
    queue.park(RequestId(1), &big)?;
    queue.park(RequestId(2), "small")?;
    let batch = queue.boundary(Budget(50))?.ok_or("parked")?;
    assert_eq!(batch.items.len(), 1);
    assert_eq!(batch.items[0].line, big);
    assert_eq!(batch.remaining, 1);
    assert!(batch.text().contains(&big));
    Ok(())
}

/// D4, D13: the exact turn text, first attempt and repeat.
#[test]
fn turn_text_is_exact() {
    let batch = Batch {
        id: BatchId(12),
        attempt: Attempt(1),
        items: vec![item(1, "first  line "), item(2, ""), item(3, "tab\there")],
        remaining: 4,
    };
    assert_eq!(
        batch.text(),
        "[parkline batch 12 attempt 1: 3 of 7 parked lines]\n\
         first  line \n\
         \n\
         tab\there\n\
         [parkline batch 12 end: 4 parked lines still undelivered]\n"
    );
    let repeat = Batch {
        attempt: Attempt(3),
        ..batch
    };
    assert_eq!(
        repeat.text(),
        "[parkline batch 12 attempt 3, repeat: 3 of 7 parked lines]\n\
         first  line \n\
         \n\
         tab\there\n\
         [parkline batch 12 end: 4 parked lines still undelivered]\n"
    );
}

/// D5, D10: one notified event per item, in order, with the repeat mark.
#[test]
fn notified_is_one_event_per_item_in_order() {
    let batch = Batch {
        id: BatchId(2),
        attempt: Attempt(2),
        items: vec![item(4, "a"), item(7, "b")],
        remaining: 0,
    };
    let events = batch.notified();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].seq, Seq(4));
    assert_eq!(events[0].request, RequestId(104));
    assert_eq!(events[1].seq, Seq(7));
    assert!(
        events
            .iter()
            .all(|e| e.repeat && e.attempt == Attempt(2) && e.batch == BatchId(2))
    );
}

// ------------------------------------------------------------------------- acceptance 1-3

/// Seed acceptance 1 (D1, D3, D4, D5): 13 lines parked behind one turn are delivered as one
/// batch turn, every request id, turn and outcome preserved, and 13 notified events.
#[test]
fn acceptance_1_thirteen_lines_one_batch_turn() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    let lines: Vec<String> = (1..=13).map(seed_line).collect();
    for (n, line) in lines.iter().enumerate() {
        let seq = queue.park(RequestId(n as u64 + 1), line)?;
        assert_eq!(seq, Seq(n as u64 + 1));
    }
    let batch = queue.boundary(Budget(1 << 20))?.ok_or("13 lines parked")?;
    assert_eq!(batch.items.len(), 13);
    assert_eq!(batch.remaining, 0);
    assert_eq!(
        queue.boundary(Budget(1 << 20)).map_err(|e| e.kind()),
        Err(ErrorKind::BatchInFlight)
    );
    let mut expected = String::from("[parkline batch 1 attempt 1: 13 of 13 parked lines]\n");
    for line in &lines {
        expected.push_str(line);
        expected.push('\n');
    }
    expected.push_str("[parkline batch 1 end: 0 parked lines still undelivered]\n");
    assert_eq!(batch.text(), expected);
    let events = batch.notified();
    assert_eq!(events.len(), 13);
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event.request, RequestId(n as u64 + 1));
        assert_eq!(event.seq, Seq(n as u64 + 1));
        assert!(!event.repeat);
    }
    let settlement = queue.settle(batch.id, &[Outcome::Delivered; 13])?;
    assert_eq!(settlement.delivered.len(), 13);
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    assert_eq!(queue.boundary(Budget(1 << 20))?, None);
    drop(queue);
    let queue = Queue::open(&path)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    Ok(())
}

/// The crash of acceptance 2, as a function: returns the batch of the first life and the first
/// boundary's batch of the second. (The harness runs the same scenario through its known-bad
/// drivers, to show the check catches them.)
fn crash_between_batch_written_and_mirror_cleared(
    path: &Path,
    config: Config,
) -> Result<(Batch, Option<Batch>), Box<dyn std::error::Error>> {
    let mut queue = Queue::open_with(path, config.clone())?;
    for n in 1..=5 {
        queue.park(RequestId(n), &seed_line(n))?;
    }
    let first = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
    // Crash: the batch is written, the daemon handed it over maybe, nothing was cleared.
    drop(queue);
    let mut queue = Queue::open_with(path, config)?;
    let second = queue.boundary(Budget(1 << 20))?;
    Ok((first, second))
}

/// Seed acceptance 2 (D9, D10, M3): a crash between "batch written" and "mirror cleared"
/// replays the batch in the next life marked as a repeat, same id and items, no item lost.
#[test]
fn acceptance_2_crash_between_batch_written_and_mirror_cleared_replays_as_repeat() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (first, second) = crash_between_batch_written_and_mirror_cleared(&path, Config::default())?;
    let second = second.ok_or("the batch must come back")?;
    assert_eq!(second.id, first.id);
    assert_eq!(second.items, first.items);
    assert_eq!(second.remaining, first.remaining);
    assert_eq!(second.attempt, Attempt(2));
    assert!(second.is_repeat());
    assert!(
        second
            .notified()
            .iter()
            .all(|e| e.repeat && e.attempt == Attempt(2))
    );
    assert!(
        second
            .text()
            .starts_with("[parkline batch 1 attempt 2, repeat: 5 of 5 parked lines]\n")
    );
    // A second crash before settling: attempt 3 next time, still nothing lost.
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.in_flight().map(|b| b.attempt), Some(Attempt(2)));
    let third = queue.boundary(Budget(1 << 20))?.ok_or("again")?;
    assert_eq!((third.id, third.attempt), (first.id, Attempt(3)));
    queue.settle(third.id, &[Outcome::Delivered; 5])?;
    drop(queue);
    let queue = Queue::open(&path)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    Ok(())
}

/// Seed acceptance 3 (D11, D12, D13, D17): a budget overflow splits deterministically, and the
/// trailer says how many remain; the split is the same in every life.
#[test]
fn acceptance_3_budget_overflow_splits_deterministically_with_trailer_count() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let lines: Vec<String> = (1..=13).map(seed_line).collect();
    let cost = lines[0].chars().count() + 1;
    assert!(lines.iter().all(|l| l.chars().count() + 1 == cost));
    let budget = Budget(cost * 5 + cost / 2); // room for five
    let mut runs = Vec::new();
    for run in 0..2 {
        let path = path.with_extension(format!("run{run}"));
        let mut queue = Queue::open(&path)?;
        for (n, line) in lines.iter().enumerate() {
            queue.park(RequestId(n as u64 + 1), line)?;
        }
        let mut texts = Vec::new();
        while let Some(batch) = queue.boundary(budget)? {
            texts.push(batch.text());
            let n = batch.items.len();
            queue.settle(batch.id, &vec![Outcome::Delivered; n])?;
        }
        runs.push(texts);
    }
    assert_eq!(runs[0], runs[1]);
    let texts = &runs[0];
    assert_eq!(texts.len(), 3);
    assert!(texts[0].starts_with("[parkline batch 1 attempt 1: 5 of 13 parked lines]\n"));
    assert!(texts[0].ends_with("[parkline batch 1 end: 8 parked lines still undelivered]\n"));
    assert!(texts[1].starts_with("[parkline batch 2 attempt 1: 5 of 8 parked lines]\n"));
    assert!(texts[1].ends_with("[parkline batch 2 end: 3 parked lines still undelivered]\n"));
    assert!(texts[2].starts_with("[parkline batch 3 attempt 1: 3 of 3 parked lines]\n"));
    assert!(texts[2].ends_with("[parkline batch 3 end: 0 parked lines still undelivered]\n"));
    let all: String = texts.concat();
    for line in &lines {
        assert_eq!(all.matches(line.as_str()).count(), 1, "{line}");
    }

    // A crash after the first boundary replays the same membership and trailer (D11).
    let mut queue = Queue::open(&path)?;
    for (n, line) in lines.iter().enumerate() {
        queue.park(RequestId(n as u64 + 1), line)?;
    }
    let first = queue.boundary(budget)?.ok_or("parked")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    let repeat = queue.boundary(budget)?.ok_or("recovered")?;
    assert_eq!(repeat.items, first.items);
    assert!(
        repeat
            .text()
            .ends_with("[parkline batch 1 end: 8 parked lines still undelivered]\n")
    );
    Ok(())
}

// ------------------------------------------------------------------- settle semantics (D6-D8)

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

// --------------------------------------------------------------------- format (M1-M3, M6, M12)

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
        + &rec(r#"{"type":"park","seq":1,"request":7,"line":"hi \"you\"","failures":0}"#);
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

// ------------------------------------------------------------------- damaged files (M7, M11)

/// Opens a queue on a file holding `bytes`, expects Corrupt at `record`, and checks the file
/// (and a leftover temp file) are left exactly as they were (M11).
fn assert_corrupt(bytes: &[u8], record: u64, reason: &str) -> TestResult {
    let (dir, path) = temp_mirror()?;
    fs::write(&path, bytes)?;
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::write(&tmp, b"partial snapshot")?;
    let err = Queue::open(&path)
        .map(|_| ())
        .err()
        .ok_or("damaged file must not open")?;
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(err.path(), Some(path.as_path()));
    assert_eq!(err.record(), Some(record), "{err}");
    let offset = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(record as usize - 1)
        .map(<[u8]>::len)
        .sum::<usize>() as u64;
    assert_eq!(err.offset(), Some(offset), "{err}");
    assert!(err.context().contains(reason), "{err} lacks {reason:?}");
    assert!(err.to_string().starts_with("corrupt mirror: "));
    assert_eq!(fs::read(&path)?, bytes, "the damaged file was modified");
    assert_eq!(
        fs::read(&tmp)?,
        b"partial snapshot",
        "the temp file was touched"
    );
    Ok(())
}

/// M2, M11: an empty file has no header is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_empty_file_is_corrupt() -> TestResult {
    assert_corrupt(b"", 1, "empty file")
}

/// M2, M7, M11: a header without its newline is damage, not a torn append is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_torn_header_is_corrupt() -> TestResult {
    let header = header();
    assert_corrupt(
        &header.as_bytes()[..header.len() - 1],
        1,
        "header without its newline",
    )
}

/// M1, M11: a complete record whose checksum differs is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_bad_checksum_is_corrupt() -> TestResult {
    let mut line = rec(&park_json(1));
    line.replace_range(0..1, if line.starts_with('0') { "1" } else { "0" });
    assert_corrupt((header() + &line).as_bytes(), 2, "checksum mismatch")
}

/// M1, M11: one changed byte in a record's JSON is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_flipped_byte_in_json_is_corrupt() -> TestResult {
    let line = rec(&park_json(1)).replace("\"l1\"", "\"l2\"");
    let bytes = header() + &line + &rec(&park_json(2));
    assert_corrupt(bytes.as_bytes(), 2, "checksum mismatch")
}

/// M1, M11: a checksum that is not 8 lowercase hex digits is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_checksum_not_hex_is_corrupt() -> TestResult {
    let bytes = header() + "ZZZZZZZZ {}\n";
    assert_corrupt(bytes.as_bytes(), 2, "8 lowercase hex")
}

/// M1, M11: a record without its checksum is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_line_without_checksum_is_corrupt() -> TestResult {
    let bytes = header() + "{}\n";
    assert_corrupt(bytes.as_bytes(), 2, "not a record")
}

/// M3, M11: a record whose JSON does not parse is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_json_error_is_corrupt() -> TestResult {
    let bytes = header() + &rec(r#"{"type":"park","seq":1"#);
    assert_corrupt(bytes.as_bytes(), 2, "json error")
}

/// M3, M11: a record of an unknown type is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_unknown_record_type_is_corrupt() -> TestResult {
    let bytes = header() + &rec(r#"{"type":"merge","seq":1}"#);
    assert_corrupt(bytes.as_bytes(), 2, "json error")
}

/// M3, M11: a record with an unknown field is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_unknown_field_is_corrupt() -> TestResult {
    let bytes =
        header() + &rec(r#"{"type":"park","seq":1,"request":1,"line":"x","failures":0,"extra":1}"#);
    assert_corrupt(bytes.as_bytes(), 2, "json error")
}

/// M2, M11: a header of an unknown version is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_unknown_version_is_corrupt() -> TestResult {
    let bytes = rec(r#"{"format":"parkline-mirror","version":2}"#) + &rec(&park_json(1));
    assert_corrupt(bytes.as_bytes(), 1, "unknown mirror version 2")
}

/// M2, M11: a file that is not a mirror (the old deferred-input.json, another format) is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_foreign_file_is_corrupt() -> TestResult {
    // The daemon's old deferred-input.json is not a mirror.
    assert_corrupt(b"{\"deferred\":[]}\n", 1, "not a record")?;
    let bytes = rec(r#"{"format":"something-else","version":1}"#);
    assert_corrupt(bytes.as_bytes(), 1, "not a parkline mirror")
}

/// M2, M11: records without a header is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_missing_header_is_corrupt() -> TestResult {
    let bytes = rec(&park_json(1));
    assert_corrupt(bytes.as_bytes(), 1, "not a parkline mirror")
}

/// M6, M11: a seq used twice is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_duplicate_seq_is_corrupt() -> TestResult {
    let bytes = header() + &rec(&park_json(1)) + &rec(&park_json(1));
    assert_corrupt(bytes.as_bytes(), 3, "seq 1 reused")
}

/// M6, M11: a batch id used twice is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_duplicate_batch_id_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(&park_json(2))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1],"remaining":1}"#)
        + &rec(r#"{"type":"settle","batch":1,"delivered":[1],"failed":[],"dead":[]}"#)
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[2],"remaining":0}"#);
    assert_corrupt(bytes.as_bytes(), 6, "batch id 1 reused")
}

/// M3, M11: a second batch while one is in flight is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_two_batches_in_flight_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(&park_json(2))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1],"remaining":1}"#)
        + &rec(r#"{"type":"batch","id":2,"attempt":1,"seqs":[2],"remaining":0}"#);
    assert_corrupt(bytes.as_bytes(), 5, "still in flight")
}

/// M3, M11: a batch naming a seq that is not parked is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_batch_naming_unknown_seqs_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1,9],"remaining":0}"#);
    assert_corrupt(bytes.as_bytes(), 3, "names seqs [1,9]")
}

/// M3, M11, D17: a batch that is not the front of the parked list is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_batch_not_a_prefix_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(&park_json(2))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[2],"remaining":1}"#);
    assert_corrupt(bytes.as_bytes(), 4, "first parked seqs are [1]")
}

/// M3, M11, D13: a batch whose remaining is not the lines parked behind it is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_batch_with_wrong_remaining_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(&park_json(2))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1],"remaining":0}"#);
    assert_corrupt(bytes.as_bytes(), 4, "says 0 remaining")
}

/// M3, M11: a batch without items is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_empty_batch_is_corrupt() -> TestResult {
    let bytes = header() + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[],"remaining":0}"#);
    assert_corrupt(bytes.as_bytes(), 2, "no items")
}

/// M3, M11: a settle of a batch that is not in flight is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_settle_of_unknown_batch_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(r#"{"type":"settle","batch":1,"delivered":[1],"failed":[],"dead":[]}"#);
    assert_corrupt(bytes.as_bytes(), 3, "not in flight")
}

/// M3, M11, D6: a settle that does not name every item exactly once is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_settle_with_wrong_seqs_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(&park_json(2))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1,2],"remaining":0}"#)
        + &rec(r#"{"type":"settle","batch":1,"delivered":[1],"failed":[1],"dead":[]}"#);
    assert_corrupt(bytes.as_bytes(), 5, "names seqs [1,1]")
}

/// M3, M11, D10: an attempt that does not follow the stored one is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_attempt_not_increasing_is_corrupt() -> TestResult {
    let bytes = header()
        + &rec(&park_json(1))
        + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[1],"remaining":0}"#)
        + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#)
        + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#);
    assert_corrupt(bytes.as_bytes(), 5, "does not follow attempt 2")
}

/// M3, M11: an attempt for a batch that is not in flight is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_attempt_for_unknown_batch_is_corrupt() -> TestResult {
    let bytes = header() + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#);
    assert_corrupt(bytes.as_bytes(), 2, "not in flight")
}

/// M6, M11: counters that go back is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_counters_going_back_is_corrupt() -> TestResult {
    let bytes = header() + &rec(&park_json(5)) + &rec(r#"{"type":"next","seq":3,"batch":1}"#);
    assert_corrupt(bytes.as_bytes(), 3, "go back")
}

/// M3, M11, D3: a parked line that contains a newline is Corrupt at that record; the file is unchanged.
#[test]
fn damaged_line_with_newline_escape_is_corrupt() -> TestResult {
    let bytes =
        header() + &rec(r#"{"type":"park","seq":1,"request":1,"line":"a\nb","failures":0}"#);
    assert_corrupt(bytes.as_bytes(), 2, "contains a newline")
}

/// M11: damage in the middle of a file is found even when later records are fine.
#[test]
fn damaged_record_in_the_middle_is_found() -> TestResult {
    let mut bytes = header() + &rec(&park_json(1)) + &rec(&park_json(2)) + &rec(&park_json(3));
    let at = bytes.find("\"l2\"").ok_or("present")?;
    bytes.replace_range(at + 1..at + 2, "m");
    assert_corrupt(bytes.as_bytes(), 3, "checksum mismatch")
}

// ---------------------------------------------------------------- crash recovery (M5, M7, D9)

/// M7, D9: cutting the file at every byte (a crash tearing the last append anywhere) opens to
/// exactly the state of the complete records before the cut; the torn tail is cut off and
/// fsynced, and the queue works on. A cut inside the header is Corrupt (M2: it cannot happen).
#[test]
fn crash_tearing_the_last_append_at_every_byte_recovers_the_prefix() -> TestResult {
    // Build a log with every record type: park, batch, settle (with a failure), attempt.
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "one é")?;
    queue.park(RequestId(2), "two")?;
    let batch = queue.boundary(Budget(5))?.ok_or("parked")?;
    queue.park(RequestId(3), "three")?;
    queue.settle(batch.id, &[Outcome::Failed])?;
    queue.boundary(Budget(100))?.ok_or("parked")?;
    // A crash, and the recovered batch handed again (an attempt record).
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    queue.boundary(Budget(100))?.ok_or("recovered")?;
    assert_eq!(queue.in_flight().map(|b| b.attempt), Some(Attempt(2)));
    let full = queue.into_storage().file("m").ok_or("exists")?.to_vec();
    let (dir, path) = temp_mirror()?;
    let header_len = header().len();
    let mut checked = 0;
    for cut in 0..=full.len() {
        fs::write(&path, &full[..cut])?;
        let opened = Queue::open(&path);
        if cut < header_len {
            let err = opened
                .map(|_| ())
                .err()
                .ok_or("a cut header must not open")?;
            assert_eq!(err.kind(), ErrorKind::Corrupt);
            assert_eq!(fs::read(&path)?, &full[..cut]);
            continue;
        }
        let mut queue = opened?;
        let complete = full[..cut]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let expected = mirror::decode(&full[..complete])?;
        assert_eq!(queue.state(), &expected, "cut at {cut}");
        assert_eq!(
            fs::read(&path)?,
            &full[..complete],
            "torn tail cut off at {cut}"
        );
        checked += 1;
        if cut % 7 != 0 && cut != complete {
            continue;
        }
        // The queue works on after the cut: park and reopen.
        let seq = queue.park(RequestId(9), "after")?;
        drop(queue);
        let queue = Queue::open(&path)?;
        assert_eq!(queue.parked().last().map(|i| i.seq), Some(seq));
    }
    assert!(checked > 100);
    drop(dir);
    Ok(())
}

/// M5: a crash while a new mirror is created (temp file written, not renamed) leaves no mirror;
/// the next open removes the temp file and creates the mirror.
#[test]
fn crash_during_create_leaves_no_mirror_and_reopen_creates_it() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::write(&tmp, &header().as_bytes()[..10])?;
    let mut queue = Queue::open(&path)?;
    assert!(!tmp.exists());
    queue.park(RequestId(1), "x")?;
    drop(queue);
    assert_eq!(Queue::open(&path)?.parked().len(), 1);
    Ok(())
}

/// M5, M12: a crash during compaction (temp file complete or partial, not renamed) leaves the
/// old log authoritative; the temp file is removed on open.
#[test]
fn crash_during_compaction_keeps_the_old_log() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "kept")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let state = queue.state().clone();
    drop(queue);
    let tmp = dir.path().join("s1.mirror.tmp");
    // A complete snapshot of a later state (the batch settled) that never got renamed.
    let mut settled = state.clone();
    settled.in_flight = None;
    for partial in [
        mirror::encode(&settled),
        mirror::encode(&settled)[..20].to_vec(),
    ] {
        fs::write(&tmp, &partial)?;
        let queue = Queue::open(&path)?;
        assert_eq!(queue.state(), &state);
        assert_eq!(queue.in_flight().map(|b| b.id), Some(batch.id));
        assert!(!tmp.exists());
    }
    Ok(())
}

/// D9, D10: a crash (the queue dropped) after each step of the loop loses nothing acknowledged
/// and replays an unsettled batch as a repeat.
#[test]
fn crash_after_each_step_recovers_what_was_acknowledged() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    // After park: parked.
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "a")?;
    queue.park(RequestId(2), "b")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.parked().len(), 2);
    // After boundary: in flight, repeat next life.
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert_eq!(
        queue.in_flight().map(|b| (b.id, b.attempt)),
        Some((batch.id, Attempt(1)))
    );
    let repeat = queue.boundary(Budget(100))?.ok_or("recovered")?;
    assert_eq!(repeat.attempt, Attempt(2));
    // After settle with one failure: the failed item parked, nothing in flight.
    queue.settle(repeat.id, &[Outcome::Delivered, Outcome::Failed])?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    assert!(queue.in_flight().is_none());
    assert_eq!(
        queue
            .parked()
            .iter()
            .map(|i| (i.seq, i.failures))
            .collect::<Vec<_>>(),
        vec![(Seq(2), 1)]
    );
    let next = queue.boundary(Budget(100))?.ok_or("parked")?;
    assert_eq!((next.id, next.attempt), (BatchId(2), Attempt(1)));
    Ok(())
}

// ----------------------------------------------------------------- lock and permissions (M8, M9)

/// M8: a second handle on the same mirror gets Locked, naming the lock file; after the first is
/// dropped the mirror opens again. Other mirrors in the same directory are independent.
#[test]
fn second_open_is_locked() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let queue = Queue::open(&path)?;
    let err = Queue::open(&path)
        .map(|_| ())
        .err()
        .ok_or("must be locked")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    assert_eq!(
        err.path(),
        Some(dir.path().join("s1.mirror.lock").as_path())
    );
    assert!(err.to_string().contains("s1.mirror.lock"));
    let other = Queue::open(dir.path().join("s2.mirror"))?;
    drop(queue);
    drop(other);
    Queue::open(&path)?;
    Ok(())
}

/// M9: the mirror, its lock file and a compacted mirror have mode 0600 (under a permissive umask
/// the mode bits asked for are what count).
#[test]
fn files_are_created_with_mode_0600() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "secret")?;
    let mode = |p: &Path| fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&path)?, 0o600);
    assert_eq!(mode(&dir.path().join("s1.mirror.lock"))?, 0o600);
    Ok(())
}

// ----------------------------------------------------------------------------- fail-stop (M10)

/// A storage that fails the n-th call of one kind, then behaves (so a retry would "succeed":
/// the queue must not retry).
#[derive(Debug)]
struct FailingStorage {
    inner: MemStorage,
    fail: &'static str,
    countdown: u32,
}

impl FailingStorage {
    fn hit(&mut self, what: &str) -> io::Result<()> {
        if what == self.fail {
            if self.countdown == 0 {
                self.countdown = u32::MAX;
                return Err(io::Error::other(format!("injected {what} failure")));
            }
            self.countdown -= 1;
        }
        Ok(())
    }
}

impl Storage for FailingStorage {
    fn read(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(name)
    }
    fn append(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.hit("append")?;
        self.inner.append(name, bytes)
    }
    fn truncate(&mut self, name: &str, len: u64) -> io::Result<()> {
        self.inner.truncate(name, len)
    }
    fn sync(&mut self, name: &str) -> io::Result<()> {
        self.hit("sync")?;
        self.inner.sync(name)
    }
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.hit("rename")?;
        self.inner.rename(from, to)
    }
    fn remove(&mut self, name: &str) -> io::Result<()> {
        self.inner.remove(name)
    }
    fn sync_dir(&mut self) -> io::Result<()> {
        self.hit("sync_dir")?;
        self.inner.sync_dir()
    }
}

/// M10: after a failed fsync (or append) every later call returns Poisoned, nothing more is
/// written, and reopening reads what the mirror kept.
#[test]
fn failed_fsync_poisons_the_queue() -> TestResult {
    for fail in ["sync", "append"] {
        // Creating the mirror costs one sync and one append; fail the third park's.
        let storage = FailingStorage {
            inner: MemStorage::new(),
            fail,
            countdown: 3,
        };
        let mut queue = Queue::with_storage(storage, "m", Config::default())?;
        queue.park(RequestId(1), "a")?;
        queue.park(RequestId(2), "b")?;
        let err = queue
            .park(RequestId(3), "c")
            .map(|_| ())
            .err()
            .ok_or("injected")?;
        assert_eq!(err.kind(), ErrorKind::Io, "{fail}");
        assert!(err.to_string().contains("injected"), "{err}");
        assert!(queue.is_poisoned());
        let len = queue.into_storage();
        let bytes = len.inner.file("m").ok_or("exists")?.to_vec();
        let mut queue = Queue::with_storage(len, "m", Config::default())?;
        // A fresh handle over the same storage works; the poisoned one is gone. Re-poison:
        queue.park(RequestId(4), "d")?;
        let storage = queue.into_storage();
        assert_ne!(storage.inner.file("m").map(<[u8]>::to_vec), Some(bytes));
    }
    // Every call after the failure is Poisoned and writes nothing.
    let storage = FailingStorage {
        inner: MemStorage::new(),
        fail: "sync",
        countdown: 2,
    };
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    queue.park(RequestId(1), "a")?;
    assert_eq!(
        queue.park(RequestId(2), "b").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    let mut queue = poisoned_queue(queue.into_storage())?;
    let before = queue.storage().inner.clone();
    assert_eq!(
        queue.park(RequestId(3), "c").map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    assert_eq!(
        queue.boundary(Budget(10)).map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    assert_eq!(
        queue
            .settle(BatchId(1), &[Outcome::Delivered])
            .map_err(|e| e.kind()),
        Err(ErrorKind::Poisoned)
    );
    let err = queue
        .park(RequestId(3), "c")
        .map(|_| ())
        .err()
        .ok_or("poisoned")?;
    assert!(err.to_string().contains("reopen"), "{err}");
    assert_eq!(queue.into_storage().inner.file("m"), before.file("m"));
    Ok(())
}

/// Opens over `storage` and poisons the handle with a failed fsync on its first park.
fn poisoned_queue(
    mut storage: FailingStorage,
) -> Result<Queue<FailingStorage>, Box<dyn std::error::Error>> {
    storage.fail = "sync";
    storage.countdown = 0;
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(
        queue.park(RequestId(0), "z").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    // The failing storage now "works" again: a retry would succeed, but the queue refuses.
    assert!(queue.is_poisoned());
    Ok(queue)
}

/// M10: a failed boundary write or settle fsync poisons too; a failed rename during compaction
/// poisons and the old log stays authoritative.
#[test]
fn failed_boundary_and_settle_writes_poison_the_queue() -> TestResult {
    for (fail, countdown) in [("sync", 2u32), ("sync", 3u32)] {
        let storage = FailingStorage {
            inner: MemStorage::new(),
            fail,
            countdown,
        };
        let mut queue = Queue::with_storage(storage, "m", Config::default())?;
        queue.park(RequestId(1), "a")?; // sync 2
        let result = queue
            .boundary(Budget(10)) // sync 3
            .and_then(|b| queue.settle(b.map(|b| b.id).unwrap_or_default(), &[Outcome::Delivered]));
        assert_eq!(result.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::Io));
        assert_eq!(
            queue.park(RequestId(2), "b").map_err(|e| e.kind()),
            Err(ErrorKind::Poisoned)
        );
    }
    Ok(())
}

// ------------------------------------------------------------------ check before write (M3)

/// M3, M6, M11: a record the queue planned but its own mirror rules reject (a planning bug) is
/// refused before it is written: `Internal`, the handle poisoned, the file and the fsync count
/// as they were, and the mirror reopens with what the last good write left. The same bytes
/// appended without the check make the next open fail with `Corrupt`, which is what the check
/// before the write prevents.
#[test]
fn a_planned_record_the_state_rejects_is_an_error_and_writes_nothing() -> TestResult {
    use crate::mirror::Record;
    let park = |seq, line: &str| Record::Park {
        seq: Seq(seq),
        request: RequestId(9),
        line: line.to_owned(),
        failures: 0,
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

// ------------------------------------------------------------- gaps found by cargo mutants

/// Tests that kill mutants `cargo mutants` found alive in the delivery, split, mirror and
/// recovery code; each names the mutant it kills.
mod mutants_gaps {
    use super::*;
    use crate::Settlement;
    use crate::core::Core;
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
            let step = core.park(RequestId(n as u64), line)?;
            core.commit(step.record.as_ref().ok_or("a record")?);
        }
        check(&core, 3 + 2 + 5 + 2);
        let step = core.boundary(Budget(7))?;
        core.commit(step.record.as_ref().ok_or("a record")?);
        let batch = step.value.ok_or("parked")?;
        assert_eq!(batch.items.len(), 2);
        core.handed_over();
        check(&core, 12);
        // "abc" delivered, "de" failed once: the floor drops by 3 only.
        let step = core.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
        core.commit(step.record.as_ref().ok_or("a record")?);
        core.settled();
        check(&core, 9);
        // "de" fails again and becomes a dead letter: still held, still counted.
        let step = core.boundary(Budget(3))?;
        core.commit(step.record.as_ref().ok_or("a record")?);
        let batch = step.value.ok_or("parked")?;
        core.handed_over();
        let step = core.settle(batch.id, &[Outcome::Failed])?;
        assert_eq!(step.value.dead, vec![Seq(2)]);
        core.commit(step.record.as_ref().ok_or("a record")?);
        core.settled();
        check(&core, 9);
        // A core rebuilt from the state (reopen) starts from the same floor.
        let reopened = Core::new(core.state.clone(), config);
        check(&reopened, 9);
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

    /// M1, M11: the shortest well-framed line (8 hex digits, space, one byte of JSON) passes the
    /// framing and checksum checks and is reported as the JSON error it is. Kills `< with <=` in
    /// `checked_json`'s length check (which would call it "not a record").
    #[test]
    fn damaged_one_byte_json_record_is_a_json_error() -> TestResult {
        let line = rec("7");
        assert_eq!(line.len(), 11);
        let bytes = header() + &line;
        assert_corrupt(bytes.as_bytes(), 2, "json error")
    }

    /// M5: every whole-mirror write and the removal of a leftover temp file on recovery is
    /// followed by a directory fsync (the count is exact, not a bound). Kills `delete !` in
    /// `Queue::replace_durable` and in `Queue::with_storage`'s leftover-temp branch.
    #[test]
    fn directory_fsyncs_follow_create_and_leftover_removal() -> TestResult {
        let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        let mut storage = queue.into_storage();
        assert_eq!(
            storage.dir_syncs(),
            1,
            "create: temp, fsync, rename, dir fsync"
        );
        let reopened = Queue::with_storage(storage.clone(), "m", Config::default())?;
        assert_eq!(
            reopened.storage().dir_syncs(),
            1,
            "a clean reopen writes nothing"
        );
        storage.set_file("m.tmp", b"unfinished compaction".to_vec());
        let reopened = Queue::with_storage(storage, "m", Config::default())?;
        assert_eq!(reopened.storage().names(), vec!["m"]);
        assert_eq!(
            reopened.storage().dir_syncs(),
            2,
            "the removal of the temp file is made durable"
        );
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
        }
    }

    /// Settles `batch` and checks M12 exactly: the settle compacts if and only if the log with
    /// the settle record would be longer than twice the new snapshot plus the slack; then the
    /// file is that snapshot, else it is the old log plus the settle record. Returns whether it
    /// compacted.
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
        let due = grown > 2 * snapshot.len() as u64 + crate::COMPACT_SLACK_BYTES;
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
        let config = Config {
            failures_max: u32::MAX,
            ..Config::default()
        };
        let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
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
        for extra in [0u64, 1] {
            let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
            // One cycle parks a line of `len` bytes as seq n, hands it over as batch n, and
            // delivers it; its records' lengths, and the snapshot after it, are known ahead.
            let cycle = |n: u64, len: usize| {
                let park = Record::Park {
                    seq: Seq(n),
                    request: RequestId(n),
                    line: "x".repeat(len),
                    failures: 0,
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
                };
                let after = MirrorState {
                    next_seq: Seq(n + 1),
                    next_batch: BatchId(n + 1),
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
                let target = 2 * snapshot + crate::COMPACT_SLACK_BYTES + extra;
                let gap = target - log_len(&queue)? - last;
                let (fixed, _) = cycle(n, 0);
                // Fill with lines up to 2000 bytes; the one before the last closes the gap.
                let len = if gap > fixed + 2000 + 500 {
                    2000
                } else {
                    usize::try_from(gap - fixed)?
                };
                queue.park(RequestId(n), &"x".repeat(len))?;
                let batch = queue.boundary(Budget(1 << 21))?.ok_or("parked")?;
                assert!(!settle_and_check_m12(
                    &mut queue,
                    &batch,
                    &[Outcome::Delivered]
                )?);
                n += 1;
                if len < 2000 {
                    break;
                }
            }
            let (last, snapshot) = cycle(n, last_len);
            assert_eq!(
                log_len(&queue)? + last,
                2 * snapshot + crate::COMPACT_SLACK_BYTES + extra
            );
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
        let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        queue.park(RequestId(1), "")?;
        queue.park(RequestId(2), "")?;
        let batch = queue.boundary(Budget(2))?.ok_or("parked")?;
        assert_eq!((batch.items.len(), batch.remaining), (2, 0));
        assert_eq!(
            batch.text(),
            "[parkline batch 1 attempt 1: 2 of 2 parked lines]\n\n\n\
             [parkline batch 1 end: 0 parked lines still undelivered]\n"
        );
        let settlement = queue.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
        assert_eq!(
            (settlement.delivered, settlement.failed),
            (vec![Seq(1)], vec![Seq(2)])
        );
        assert_eq!(queue.parked()[0].line, "");
        Ok(())
    }

    /// M11: a mirror that exists but cannot be read (here: a directory in its place) is an I/O
    /// error at open, never taken for an absent mirror that open would create afresh over it.
    /// Kills the match guard `e.kind() == NotFound` replaced with true in `FsStorage::read`.
    #[test]
    fn unreadable_mirror_is_an_error_not_a_new_mirror() -> TestResult {
        let (dir, path) = temp_mirror()?;
        fs::create_dir(&path)?;
        let err = Queue::open(&path)
            .err()
            .ok_or("an unreadable mirror must not open")?;
        assert_eq!(err.kind(), ErrorKind::Io);
        assert!(err.context().contains("cannot read the mirror"), "{err}");
        assert!(path.is_dir());
        assert!(!dir.path().join("s1.mirror.tmp").exists());
        Ok(())
    }

    /// M7 on the in-memory storage the harnesses build on: a torn final append is cut off on
    /// open, so the next park follows the last complete record and the log decodes. Kills
    /// `MemStorage::truncate -> Ok(())`.
    #[test]
    fn torn_tail_is_cut_in_memory_storage_too() -> TestResult {
        let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        queue.park(RequestId(1), "one")?;
        let mut storage = queue.into_storage();
        let whole = storage.file("m").ok_or("mirror")?.to_vec();
        let mut torn = whole.clone();
        torn.extend_from_slice(b"0123abcd {\"type\":\"pa");
        storage.set_file("m", torn);
        let mut queue = Queue::with_storage(storage, "m", Config::default())?;
        assert_eq!(queue.storage().file("m"), Some(whole.as_slice()));
        queue.park(RequestId(2), "two")?;
        let log = queue.storage().file("m").ok_or("mirror")?;
        assert_eq!(mirror::decode(log)?, *queue.state());
        Ok(())
    }

    /// The accessors report the queue's own config, path and health. Kills
    /// `Queue::config -> Default`, `Queue::path -> Default` and `Queue::is_poisoned -> true`
    /// (otherwise only the doc tests, which the mutants run skips, catch them).
    #[test]
    fn accessors_report_the_queue() -> TestResult {
        let config = Config {
            failures_max: 7,
            line_bytes_max: 99,
            ..Config::default()
        };
        let queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
        assert_eq!(queue.config(), &config);
        assert_eq!(queue.path(), PathBuf::from("m"));
        assert!(!queue.is_poisoned());
        let (_dir, path) = temp_mirror()?;
        let queue = Queue::open(&path)?;
        assert_eq!(queue.path(), path);
        assert!(!queue.is_poisoned());
        Ok(())
    }
}

// ------------------------------------------- counter limits (M6, D10) and compaction (M12)

mod limits {
    use super::*;
    use crate::mirror::MirrorState;

    fn next_json(seq: u64, batch: u64) -> String {
        format!(r#"{{"type":"next","seq":{seq},"batch":{batch}}}"#)
    }

    fn file_of(records: &[String]) -> Vec<u8> {
        let mut text = header();
        for json in records {
            text.push_str(&rec(json));
        }
        text.into_bytes()
    }

    /// Opens `bytes` in memory; the storage shows afterwards what was written.
    fn open_bytes(bytes: &[u8], config: Config) -> crate::Result<Queue<MemStorage>> {
        let mut storage = MemStorage::new();
        storage.set_file("m", bytes.to_vec());
        Queue::with_storage(storage, "m", config)
    }

    fn file(queue: &Queue<MemStorage>) -> Vec<u8> {
        queue
            .storage()
            .file("m")
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
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
    /// state after the settle (94-byte snapshot), not the state before (which still holds the
    /// 100,000 bytes of the batch). The old shortcut left the file at 100,957 bytes, over the
    /// 65,724-byte limit.
    #[test]
    fn m12_compaction_decided_after_settle() -> TestResult {
        let (_dir, path) = temp_mirror()?;
        let mut queue = Queue::open(&path)?;
        let line = "x".repeat(10_000);
        for n in 0..10u64 {
            queue.park(RequestId(n), &line)?;
        }
        let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
        assert_eq!(batch.items.len(), 10);
        queue.settle(batch.id, &[Outcome::Delivered; 10])?;
        let snapshot = mirror::encode(queue.state());
        assert_eq!(snapshot.len(), 94);
        assert_eq!(
            fs::metadata(&path)?.len(),
            94,
            "the settle must write the snapshot"
        );
        assert!(fs::read(&path)? == snapshot, "the file is not the snapshot");
        Ok(())
    }

    /// M12: the bound holds after every settle of a 6 MB run (60 settles of 10 lines of 10,000
    /// bytes); the old shortcut left the file over it after 40 of them.
    #[test]
    fn m12_bound_holds_after_every_settle_of_a_6_mb_run() -> TestResult {
        let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
        let line = "x".repeat(10_000);
        for round in 0..60u64 {
            for n in 0..10u64 {
                queue.park(RequestId(round * 10 + n), &line)?;
            }
            let batch = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
            queue.settle(batch.id, &[Outcome::Delivered; 10])?;
            assert_m12_bound(
                file(&queue).len() as u64,
                queue.state(),
                crate::COMPACT_SLACK_BYTES,
            );
        }
        Ok(())
    }

    /// M12: `compact_slack_bytes` is the slack of the rule: with 0, a settle compacts as soon as
    /// the log would exceed twice the snapshot; with the default it would not.
    #[test]
    fn m12_compact_slack_bytes_sets_the_slack() -> TestResult {
        for (slack, compacts) in [(0u64, true), (crate::COMPACT_SLACK_BYTES, false)] {
            let config = Config {
                compact_slack_bytes: slack,
                ..Config::default()
            };
            let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
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

    /// M6, M11: u64::MAX is never a seq: a `park` or `dead` record holding it is Corrupt (no
    /// next seq follows it, so accepting it would wrap the counter to 0 and reuse seqs).
    #[test]
    fn m6_seq_at_u64_max_is_corrupt() -> TestResult {
        let max = u64::MAX;
        for kind in ["park", "dead"] {
            let json =
                format!(r#"{{"type":"{kind}","seq":{max},"request":1,"line":"l","failures":0}}"#);
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
        let max = u64::MAX;
        let bytes = file_of(&[next_json(max - 1, 1)]);
        let mut queue = open_bytes(&bytes, Config::default())?;
        assert_eq!(queue.park(RequestId(1), "last")?, Seq(max - 1));
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
        let max = u64::MAX;
        let batch =
            format!(r#"{{"type":"batch","id":{max},"attempt":1,"seqs":[1],"remaining":0}}"#);
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
        let bytes = file_of(&[next_json(1, u64::MAX)]);
        let mut queue = open_bytes(&bytes, Config::default())?;
        assert!(queue.boundary(Budget(100))?.is_none());
        queue.park(RequestId(1), "one")?;
        let before = file(&queue);
        let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
        assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
        assert_eq!(file(&queue), before);
        assert!(!queue.is_poisoned());
        assert_eq!(queue.parked().len(), 1);
        assert_eq!(queue.park(RequestId(2), "two")?, Seq(2));
        Ok(())
    }

    fn batch_json(attempt: u32) -> String {
        format!(r#"{{"type":"batch","id":1,"attempt":{attempt},"seqs":[1],"remaining":0}}"#)
    }

    /// D10: a recovered batch stored with attempt u32::MAX has no higher attempt: `boundary`
    /// fails with `Exhausted`, writes nothing, does not poison, and the batch stays in flight
    /// as stored (never handed over with an attempt that is not one higher).
    #[test]
    fn d10_attempt_ceiling_boundary_is_exhausted_and_writes_nothing() -> TestResult {
        let bytes = file_of(&[park_json(1), batch_json(u32::MAX)]);
        let mut queue = open_bytes(&bytes, Config::default())?;
        let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
        assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
        assert_eq!(file(&queue), bytes);
        assert!(!queue.is_poisoned());
        assert_eq!(
            queue.in_flight().map(|b| b.attempt),
            Some(Attempt(u32::MAX))
        );
        // Still refused: the batch was not handed over.
        let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
        assert_eq!(err.kind(), ErrorKind::Exhausted);
        let err = queue
            .settle(BatchId(1), &[Outcome::Delivered])
            .err()
            .ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::UnknownBatch);
        Ok(())
    }

    /// D10: the last attempt below the ceiling is handed over one higher (u32::MAX), and the
    /// life after it gets `Exhausted`; an `attempt` record that wraps is Corrupt.
    #[test]
    fn d10_attempt_ceiling_is_reached_once_and_never_wraps() -> TestResult {
        let bytes = file_of(&[park_json(1), batch_json(u32::MAX - 1)]);
        let queue = open_bytes(&bytes, Config::default())?;
        let mut queue = queue;
        let repeat = queue.boundary(Budget(100))?.ok_or("recovered")?;
        assert_eq!(repeat.attempt, Attempt(u32::MAX));
        assert!(repeat.is_repeat());
        let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
        let err = queue.boundary(Budget(100)).err().ok_or("exhausted")?;
        assert_eq!(err.kind(), ErrorKind::Exhausted);
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
        let max = u32::MAX;
        let park = |failures: u32| {
            format!(r#"{{"type":"park","seq":1,"request":1,"line":"l","failures":{failures}}}"#)
        };
        assert_corrupt(&file_of(&[park(max)]), 2, "could not fail again")?;
        let settle = r#"{"type":"settle","batch":1,"delivered":[],"failed":[1],"dead":[]}"#;
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
}
