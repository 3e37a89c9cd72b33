//! Crashes: between "batch written" and "mirror cleared" (acceptance 2), at every sync point of
//! short scenarios, and at random moments of long runs.

use parkline::Storage;
use parkline::{Budget, Outcome, Queue, RequestId};
use parkline_harness::delivery::{self, MIRROR, Op, QueueOp, Setup, check, check_with};
use parkline_harness::known_bad::{Hooks, Seam};
use parkline_harness::simdisk::{SimDisk, SplitMix};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use super::park;
use crate::env_usize;

/// D10, D9: the batch was persisted by `boundary`, handed over, and the power went out before
/// `settle` (between ops, and inside `settle` at its first sync): the next life hands back the
/// same batch id and items with attempt 2 and the repeat mark on the turn and every notified
/// event, and nothing is lost.
#[test]
fn crash_between_batch_written_and_mirror_cleared_replays_as_repeat() {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A batch persisted and not settled before a crash MUST, at the first boundary of the next
    //# life, be re-persisted and handed over again with the same batch id, the same items (same
    //# seqs, same lines, same order), the same `remaining`, an attempt one higher than the attempt
    //# stored for it, and the repeat mark, both in the header (D4) and on every notified event
    //# (D5).
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# A repeat MUST reuse its stored membership and `remaining` whatever budget is passed to the
    //# boundary that hands it over again, until the repeat bound closes it (D10).
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# The count MUST be raised by the record that allows the hand-over, before `boundary` returns
    //# the batch, so that a crash between the hand-over and the settle still counts a hand-over the
    //# parent may have seen.
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# The notified event of each hand-over (D5) MUST carry the item's count including that
    //# hand-over (1 the first time).
    // D9, D10, D5: acceptance 2 of the seed, on the simulated disk.
    let lines: Vec<Op> = (1..=3).map(|r| park(r, &format!("r-{r} done"))).collect();
    for crash in [
        Op::Crash { torn: 0 },
        Op::Crash { torn: 1 },
        Op::CrashAtSync { n: 1, torn: 0 },
    ] {
        let mut ops = lines.clone();
        ops.push(Op::Queue(QueueOp::Boundary { budget: 100 }));
        ops.push(crash.clone());
        if matches!(crash, Op::CrashAtSync { .. }) {
            ops.push(Op::Queue(QueueOp::Settle {
                delivered: vec![true; 3],
            }));
        }
        ops.push(Op::Queue(QueueOp::Boundary { budget: 1 }));
        ops.push(Op::Queue(QueueOp::Settle {
            delivered: vec![true; 3],
        }));
        let report = check(&ops).unwrap_or_else(|d| panic!("{crash:?}: {d}"));
        assert_eq!((report.batches, report.repeats), (2, 1), "{crash:?}");
    }

    // The same, read directly off the crate.
    let disk = SimDisk::new();
    let mut queue =
        Queue::with_storage(disk.clone(), MIRROR, Setup::default().config()).expect("create");
    for r in 1..=3 {
        queue
            .park(RequestId(r), &format!("r-{r} done"))
            .expect("park");
    }
    let batch = queue
        .boundary(Budget(100))
        .expect("boundary")
        .expect("batch");
    drop(queue);
    let mut queue =
        Queue::with_storage(disk.crash(), MIRROR, Setup::default().config()).expect("recover");
    let repeat = queue
        .boundary(Budget(1))
        .expect("boundary")
        .expect("repeat");
    let seqs =
        |batch: &parkline::Batch| batch.items.iter().map(|item| item.seq).collect::<Vec<_>>();
    assert_eq!(
        (repeat.id, seqs(&repeat), repeat.remaining),
        (batch.id, seqs(&batch), 0)
    );
    // D19: a crash between hand-over and settle still counts the hand-over.
    assert!(batch.items.iter().all(|item| item.handed == 1));
    assert!(repeat.items.iter().all(|item| item.handed == 2));
    assert!(repeat.notified().iter().all(|event| event.handed == 2));
    assert_eq!(repeat.attempt.0, 2);
    assert!(repeat.is_repeat());
    assert!(
        repeat
            .notified()
            .iter()
            .all(|n| n.repeat && n.attempt.0 == 2)
    );
    assert!(repeat.text().starts_with(&format!(
        "[parkline batch {} attempt 2, repeat: 3 of 3 parked lines, 0 seen before, ",
        batch.id.0
    )));
    queue
        .settle(repeat.id, &[Outcome::Delivered; 3])
        .expect("settle");
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
}

/// Short scenarios that reach every kind of write: park (first create), boundary (new and
/// repeat), settle (delivered, failed, dead letter), redrive, discard, and a compaction (big
/// lines).
pub(super) fn short_scenarios() -> Vec<Vec<Op>> {
    let big = delivery::line(delivery::LINES.len());
    vec![
        vec![park(1, "a")],
        // D3, D22: a group whose answer was lost, partly delivered, retried after a restart:
        // answered line by line from the remembered window; a retry of a delivered line, and a
        // reused request with another line.
        vec![
            Op::Queue(QueueOp::ParkAll {
                items: vec![(11, "a".into()), (12, "b".into()), (13, "c".into())],
            }),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
            Op::Restart,
            Op::Queue(QueueOp::ParkAll {
                items: vec![(11, "a".into()), (12, "b".into()), (13, "c".into())],
            }),
            park(11, "a"),
            park(11, "another"),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true, true],
            }),
            park(12, "b"),
        ],
        // D22: a group of three in one record; D21: a dead letter redriven.
        vec![
            Op::Queue(QueueOp::ParkAll {
                items: vec![(1, "a".into()), (2, "é→ü".into()), (3, String::new())],
            }),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::HandOverFailed),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::HandOverFailed),
            Op::Queue(QueueOp::Redrive { seqs: None }),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
        ],
        vec![
            park(1, "a"),
            park(2, "r-2 failed"),
            Op::Queue(QueueOp::Boundary { budget: 4 }),
        ],
        vec![
            park(1, "a"),
            park(2, "é→ü"),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true, false],
            }),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::HandOverFailed),
            park(3, ""),
        ],
        vec![
            park(1, "a"),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Restart,
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
        ],
        // M12: a line dies, a later one goes in flight, the dead one is redriven below it (the
        // redrive appends; compaction waits for the settle), then a clean restart.
        vec![
            park(1, "a"),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::HandOverFailed),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::HandOverFailed),
            park(2, "b"),
            Op::Queue(QueueOp::Boundary { budget: 2 }),
            Op::Queue(QueueOp::Redrive { seqs: None }),
            Op::Restart,
        ],
        // D8: two lines die together, one is discarded while a third is in flight, then the
        // other.
        vec![
            park(1, "a"),
            park(2, "é→ü"),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::HandOverFailed),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::HandOverFailed),
            park(3, ""),
            Op::Queue(QueueOp::Boundary { budget: 24 }),
            Op::Queue(QueueOp::Discard {
                seqs: Some(vec![2]),
            }),
            Op::Queue(QueueOp::Discard { seqs: None }),
        ],
        vec![
            park(1, &big),
            Op::Queue(QueueOp::Boundary { budget: 10 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
            park(4, &big),
            Op::Queue(QueueOp::Boundary { budget: 10 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
            park(2, &big),
            park(3, "a"),
            Op::Queue(QueueOp::Boundary { budget: 10 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
            Op::Queue(QueueOp::Boundary { budget: 10 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![false],
            }),
        ],
    ]
}

/// Insert a power loss at sync `n` of op `i`, for every `i` and every `n` up to the number of
/// syncs that op makes, with each way unsynced changes may survive. Returns the number of crash
/// points checked.
pub(super) fn crash_at_every_sync(ops: &[Op], setup: &Setup) -> Result<usize, String> {
    let baseline = check_with(ops, setup).map_err(|d| format!("without crash: {d}"))?;
    let mut points = 0;
    for (i, syncs) in baseline.syncs_per_step.iter().enumerate() {
        for n in 1..=*syncs {
            for torn in [0, 1, 7, 8] {
                let mut crashed = ops[..i].to_vec();
                crashed.push(Op::CrashAtSync { n, torn });
                crashed.extend_from_slice(&ops[i..]);
                check_with(&crashed, setup)
                    .map_err(|d| format!("crash at sync {n} of op {i}, torn {torn}: {d}"))?;
                points += 1;
            }
        }
        // And right after the op (between ops), strict and keeping.
        for torn in [0, 1] {
            let mut crashed = ops[..=i].to_vec();
            crashed.push(Op::Crash { torn });
            crashed.extend_from_slice(&ops[i + 1..]);
            check_with(&crashed, setup)
                .map_err(|d| format!("crash after op {i}, torn {torn}: {d}"))?;
            points += 1;
        }
    }
    Ok(points)
}

/// D9, D10, D16: a power loss at every sync of every op of short scenarios recovers a state the
/// reference allows (before or after the interrupted op), and every later step conforms.
#[test]
fn d16_crash_at_every_sync_point_recovers_an_allowed_state() {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# `boundary` MUST return a batch only after the batch is durable, and the daemon MUST NOT hand
    //# a batch over before `boundary` returned it; so every batch a parent may have seen is
    //# recoverable.
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `boundary` and `settle` MUST likewise return only once their record is durable.
    //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
    //= type=test
    //# The queue MUST consider a write durable only after an `fsync` of the file (`Storage::sync`),
    //# and a create, rename or remove durable only after an `fsync` of the directory
    //# (`Storage::sync_dir`); it makes no other durability assumption, so a simulated disk
    //# implementing `Storage` can crash it at any point.
    let mut points = 0;
    let big = short_scenarios().pop().expect("the big-line scenario");
    let renames = check(&big).expect("conforms").renames;
    assert!(
        renames >= 1,
        "the big-line scenario does not compact the mirror"
    );
    for ops in short_scenarios() {
        points += crash_at_every_sync(&ops, &Setup::default()).unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!("crash points enumerated: {points}");
    assert!(points > 100, "only {points} crash points");
}

/// Random long scenarios with power losses inserted at random sync points.
#[test]
fn d9_random_crashes_in_long_runs() {
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be exactly
    //# one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a dead letter
    //# until an explicit discard (D8) deletes it, through any sequence of boundaries, settles,
    //# failures, crashes and recoveries.
    let runs = env_usize("PARKLINE_LONG_RUNS", 40);
    let seed = 0x5eed_0001;
    let mut rng = SplitMix::new(seed);
    let mut crashes = 0;
    let mut renames = 0;
    for run in 0..runs {
        let mut runner = TestRunner::deterministic();
        let mut ops = delivery::ops_strategy(300)
            .new_tree(&mut runner)
            .expect("strategy")
            .current();
        // Big lines delivered at random positions grow the log past the compaction threshold.
        for _ in 0..20 {
            let at = rng.upto(ops.len());
            let delivered = Op::Queue(QueueOp::Settle {
                delivered: vec![true; 4],
            });
            let big = park(9, &delivery::line(delivery::LINES.len()));
            let boundary = Op::Queue(QueueOp::Boundary { budget: 0 });
            ops.splice(at..at, [big, boundary, delivered]);
        }
        // Sprinkle more power losses at random positions.
        for _ in 0..8 {
            let at = rng.upto(ops.len());
            let n = 1 + rng.upto(2) as u64;
            ops.insert(
                at,
                Op::CrashAtSync {
                    n,
                    torn: rng.next_u64(),
                },
            );
            let _ = run;
        }
        let report = check(&ops).unwrap_or_else(|d| panic!("seed {seed:#x} run {run}: {d}"));
        crashes += report.crashes;
        renames += report.renames;
    }
    eprintln!("long runs: {runs} runs, {crashes} crashes, {renames} mirror rewrites");
    assert!(crashes >= runs, "{crashes} crashes in {runs} runs");
    assert!(
        renames > 0,
        "no mirror rewrite (compaction) in {runs} long runs"
    );
}

/// A storage that swallows the fsyncs of an open that changes nothing (those before the
/// handle's first write): the open of an earlier build, which built on a rename whose directory
/// fsync had failed. The known-bad side of
/// [`m10_a_failed_directory_fsync_then_a_reopen_then_a_power_loss_keeps_the_park`].
#[derive(Debug, Default)]
struct SkipOpenSync {
    written: bool,
}

impl Hooks<SimDisk> for SkipOpenSync {
    fn append(&mut self, disk: &mut SimDisk, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.written = true;
        disk.append(name, bytes)
    }
    fn truncate(&mut self, disk: &mut SimDisk, name: &str, len: u64) -> std::io::Result<()> {
        self.written = true;
        disk.truncate(name, len)
    }
    fn sync(&mut self, disk: &mut SimDisk, name: &str) -> std::io::Result<()> {
        if self.written {
            disk.sync(name)
        } else {
            Ok(())
        }
    }
    fn rename(&mut self, disk: &mut SimDisk, from: &str, to: &str) -> std::io::Result<()> {
        self.written = true;
        disk.rename(from, to)
    }
    fn remove(&mut self, disk: &mut SimDisk, name: &str) -> std::io::Result<()> {
        self.written = true;
        disk.remove(name)
    }
    fn sync_dir(&mut self, disk: &mut SimDisk) -> std::io::Result<()> {
        if self.written {
            disk.sync_dir()
        } else {
            Ok(())
        }
    }
}

/// M10: a compacting settle whose directory fsync fails, a reopen in the same power cycle, a
/// park acknowledged, then a power loss: the park survives, because the reopen fsyncs what it
/// read. Through the differential (the generators' `Op::IoErrorReopen`) and directly, where an
/// open that skips those fsyncs loses the park.
#[test]
fn m10_a_failed_directory_fsync_then_a_reopen_then_a_power_loss_keeps_the_park() {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# `open` of an existing mirror MUST fsync the mirror and then its directory before it
    //# returns, whether or not it changed anything, so that what it read is durable before
    //# the first acknowledgement built on it (an upgrade, M14, does both
    //# through M5).
    // Slack 0: the settle compacts (temp file 1, fsync 2, rename 3, directory fsync 4).
    let setup = Setup {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Setup::default()
    };
    let ops = vec![
        park(1, "a"),
        park(2, "b"),
        Op::Queue(QueueOp::Boundary { budget: 100 }),
        Op::IoErrorReopen { n: 4 },
        Op::Queue(QueueOp::Settle {
            delivered: vec![true; 2],
        }),
        park(3, "c"),
        Op::Crash { torn: 0 },
    ];
    let report = check_with(&ops, &setup).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(report.io_errors, 1);

    let mut config = parkline::Config::default();
    config.compact_slack_bytes = 0;
    config.delivered_memory = 0;
    for skip_open_sync in [false, true] {
        let disk = SimDisk::new();
        let open = |disk: &SimDisk| {
            Queue::with_storage(
                Seam {
                    inner: disk.clone(),
                    hooks: SkipOpenSync {
                        written: !skip_open_sync,
                    },
                },
                MIRROR,
                config.clone(),
            )
            .expect("open")
        };
        let mut queue = open(&disk);
        queue.park(RequestId(1), "a").expect("park");
        queue.park(RequestId(2), "b").expect("park");
        let batch = queue
            .boundary(Budget(100))
            .expect("boundary")
            .expect("batch");
        disk.fail_at_call(Some(4));
        let failed = queue.settle(batch.id, &[Outcome::Delivered; 2]);
        disk.fail_at_call(None);
        assert_eq!(
            failed.map(|_| ()).map_err(|e| e.kind()),
            Err(parkline::ErrorKind::Io)
        );
        drop(queue);
        let mut queue = open(&disk);
        assert_eq!(
            queue.park(RequestId(3), "c").expect("park"),
            parkline::Parked::Held(parkline::Seq(3))
        );
        drop(queue);
        let recovered = Queue::with_storage(disk.crash(), MIRROR, config.clone()).expect("open");
        let kept = recovered.parked().iter().any(|item| item.line == "c");
        assert_eq!(kept, !skip_open_sync, "skip_open_sync {skip_open_sync}");
    }
}

/// M10, M12: a full disk at the temp file during a compacting settle, through the differential:
/// the settle succeeds (the record appended), the bound is deferred, and the next settle with
/// space compacts; a full log fails the op, poisons, and the reopen finds the state before it.
#[test]
fn m10_a_full_disk_defers_the_compaction_and_never_stops_delivery() {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# A compaction whose temp file cannot be written or fsynced MUST be abandoned without
    //# poisoning the handle: the temp file removed (a failed removal poisons), then the
    //# record appended to the mirror as if no compaction were due.
    let setup = Setup {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Setup::default()
    };
    for at in 0..=2 {
        let ops = vec![
            park(1, "a"),
            park(2, "b"),
            Op::Queue(QueueOp::Boundary { budget: 100 }),
            Op::DiskFull { at },
            Op::Queue(QueueOp::Settle {
                delivered: vec![true, false],
            }),
            Op::Queue(QueueOp::Boundary { budget: 100 }),
            Op::Queue(QueueOp::Settle {
                delivered: vec![true],
            }),
            Op::Crash { torn: 0 },
        ];
        let report = check_with(&ops, &setup).unwrap_or_else(|d| panic!("at {at}: {d}"));
        // A full temp file defers the compaction (0); a full log does not stop a compaction,
        // which appends nothing (1); with both full the appended record fails too (2).
        assert_eq!(report.io_errors, usize::from(at == 2), "at {at}");
    }
}
