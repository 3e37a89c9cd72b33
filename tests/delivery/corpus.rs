//! The fuzz corpus and committed findings (`fuzz/regressions`) of `delivery_ops` and `mirror_decode`, replayed on stable, the
//! seed corpus they start from and the crafted mirror seeds.

use std::path::{Path, PathBuf};

use parkline::{Budget, Outcome, Queue, RequestId};
use parkline_harness::delivery::{self, MIRROR, Op, QueueOp, Setup, check, check_with, decode_ops};
use parkline_harness::known_bad::KnownBad;
use parkline_harness::simdisk::{SimDisk, SplitMix};

use super::crash::short_scenarios;
use super::{park, setup};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn files_of(target: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir().join(folder).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn fuzz_delivery_ops_corpus_and_regressions_replay() {
    // D1..D17: every fuzz finding stays a regression test on stable.
    let files = files_of("delivery_ops");
    assert!(files.len() >= 4, "seed corpus missing: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).expect("read corpus file");
        if let Some(ops) = decode_ops(&bytes) {
            check(&ops).unwrap_or_else(|d| panic!("{}: {d}", file.display()));
        }
    }
}

#[test]
fn fuzz_mirror_decode_corpus_and_regressions_replay() {
    // M1, M11: the decoder on every fuzz finding, on stable.
    let files = files_of("mirror_decode");
    assert!(files.len() >= 4, "seed corpus missing: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).expect("read corpus file");
        delivery::check_mirror_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

/// The fuzz target's check, on its committed seed corpus, finds each known-bad behaviour (the
/// corpus holds one seed per behaviour, found by `write_seed_corpus`).
#[test]
fn known_bad_each_caught_by_the_fuzz_check_on_its_corpus() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter), D16 (no-dir-sync),
    // D22 (torn-group-keeps-prefix), D19 (count-at-settle), M12 (compact-at-redrive), D8
    // (no-discard-sync), M8 (name-blind), D3 (forget-at-reopen), D24 (frozen-clock).
    let corpus: Vec<Vec<Op>> = files_of("delivery_ops")
        .iter()
        .filter_map(|file| decode_ops(&std::fs::read(file).expect("read corpus file")))
        .collect();
    for bad in KnownBad::DELIVERY
        .into_iter()
        .chain(KnownBad::FILE)
        .chain(KnownBad::FORMAT_4)
    {
        let caught = corpus
            .iter()
            .any(|ops| check_with(ops, &setup(bad)).is_err());
        assert!(caught, "{bad}: no corpus input diverges");
        // The seed `write_seed_corpus` kept for it, under its registry name, still catches it.
        let file = fuzz_dir()
            .join("corpus")
            .join("delivery_ops")
            .join(format!("known_bad_{bad}"));
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ops = decode_ops(&bytes).unwrap_or_else(|| panic!("{}: no ops", file.display()));
        assert!(
            check(&ops).is_ok(),
            "{}: the correct crate diverges",
            file.display()
        );
        assert!(
            check_with(&ops, &setup(bad)).is_err(),
            "{}: does not catch {bad} (PARKLINE_WRITE_CORPUS=1 regenerates it)",
            file.display()
        );
    }
}

/// Fuzz seeds written by hand for the known-bad behaviours the random search of
/// [`write_seed_corpus`] does not reach, with the ops each decodes to. `no-discard-sync` needs a
/// dead letter, a discard and a power loss before the next fsync, in that order: none of the
/// search's 20,000 random inputs holds them. In the bytes, an odd byte before each op goes on
/// and the even last byte ends the list (`Vec<Op>`'s decoding); then the op's first byte (its
/// kind) and its fields.
fn hand_written_seeds() -> Vec<(KnownBad, Vec<u8>, Vec<Op>)> {
    let discard_then_power_loss = vec![
        1, 0, 0, 0, // park, request 1, LINES[0]
        1, 7, 24, // boundary, budget 24
        1, 14, // the hand-over failed (1 of failures_max 2)
        1, 7, 24, // boundary, budget 24
        1, 14, // failed again: a dead letter
        1, 216, 0, // discard every dead letter
        1, 15, 0, // power loss, unsynced changes lost
        0,
    ];
    let boundary = || Op::Queue(QueueOp::Boundary { budget: 24 });
    let failed = || Op::Queue(QueueOp::HandOverFailed);
    let ops = vec![
        park(1, delivery::LINES[0]),
        boundary(),
        failed(),
        boundary(),
        failed(),
        Op::Queue(QueueOp::Discard { seqs: None }),
        Op::Crash { torn: 0 },
    ];
    vec![(KnownBad::NoDiscardSync, discard_then_power_loss, ops)]
}

/// Regenerates the seed corpus when `PARKLINE_WRITE_CORPUS=1` (otherwise checks that the generator
/// finds every seed): random byte strings decoded as ops, kept when they reach two batches and a
/// crash, the counters' limits, a compaction or a discard of a dead letter, plus for each
/// known-bad behaviour the first that catches it, or its hand-written seed.
#[test]
fn write_seed_corpus() {
    let write = std::env::var("PARKLINE_WRITE_CORPUS").is_ok_and(|v| v == "1");
    let mut rng = SplitMix::new(0xc0_47_05);
    let mut kept: Vec<(String, Vec<u8>)> = Vec::new();
    let mut wanted: Vec<KnownBad> = KnownBad::DELIVERY.to_vec();
    wanted.extend(KnownBad::FILE);
    wanted.extend(KnownBad::FORMAT_4);
    for (bad, bytes, ops) in hand_written_seeds() {
        assert_eq!(decode_ops(&bytes).as_ref(), Some(&ops), "{bad}");
        check(&ops).unwrap_or_else(|d| panic!("{bad}'s seed diverges on the correct crate: {d}"));
        assert!(check_with(&ops, &setup(bad)).is_err(), "{bad}: not caught");
        kept.push((format!("known_bad_{bad}"), bytes));
        wanted.retain(|wanted| *wanted != bad);
    }
    let mut plain = 0;
    let (mut limits, mut compaction, mut discard) = (false, false, false);
    for attempt in 0..20_000 {
        if wanted.is_empty() && plain >= 4 && limits && compaction && discard {
            break;
        }
        let len = 16 + rng.upto(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let Some(ops) = decode_ops(&bytes) else {
            continue;
        };
        let Ok(report) = check(&ops) else {
            panic!("corpus candidate {attempt} diverges on the correct crate: {ops:?}");
        };
        if let Some(i) = wanted
            .iter()
            .position(|bad| check_with(&ops, &setup(*bad)).is_err())
        {
            kept.push((format!("known_bad_{}", wanted[i]), bytes));
            wanted.remove(i);
        } else if plain < 4 && report.batches >= 2 && report.crashes > 0 {
            kept.push((format!("seed_{plain}"), bytes));
            plain += 1;
        } else if !limits && report.crafted > 0 && report.exhausted > 0 {
            kept.push(("seed_counter_limits".to_owned(), bytes));
            limits = true;
        } else if !compaction && report.renames > 0 {
            kept.push(("seed_compaction".to_owned(), bytes));
            compaction = true;
        } else if !discard && report.discarded > 0 {
            // D8: the fuzz target's decoding reaches a discard that removes a dead letter.
            kept.push(("seed_discard".to_owned(), bytes));
            discard = true;
        }
    }
    assert!(wanted.is_empty(), "no seed found for {wanted:?}");
    assert!(
        limits && compaction && discard,
        "no seed reaches the counter limits ({limits}), compaction ({compaction}) or a discard \
         of a dead letter ({discard})"
    );
    if write {
        let dir = fuzz_dir().join("corpus").join("delivery_ops");
        std::fs::create_dir_all(&dir).expect("corpus dir");
        for (name, bytes) in &kept {
            std::fs::write(dir.join(name), bytes).expect("write corpus file");
        }
        let dir = fuzz_dir().join("corpus").join("mirror_decode");
        std::fs::create_dir_all(&dir).expect("corpus dir");
        // The big-line scenario is left out: a 50 kB seed slows every execution.
        for (i, ops) in short_scenarios().iter().take(4).enumerate() {
            let disk = mirror_after(ops);
            std::fs::write(dir.join(format!("mirror_{i}")), disk).expect("write corpus file");
        }
        for (name, bytes) in crafted_mirrors() {
            std::fs::write(dir.join(name), bytes).expect("write corpus file");
        }
    }
}

/// Mirror files whose records sit at the counters' limits, with valid checksums: the decoder
/// must give a state or `Corrupt` (M6), never a panic or a wrapped counter. Seeds of the
/// `mirror_decode` fuzz target.
fn crafted_mirrors() -> Vec<(String, Vec<u8>)> {
    let crafted = |lines, in_flight, gap, dead| delivery::Crafted {
        lines,
        in_flight,
        seq_gap: gap,
        batch_gap: gap,
        attempt_gap: gap,
        failures_gap: gap,
        dead,
        failures_max_max: false,
    };
    vec![
        // Impossible: seq, batch id and failures at u64::MAX / u32::MAX.
        (
            "crafted_at_limits".to_owned(),
            crafted(2, 1, 0, true).bytes(),
        ),
        // Valid: every counter one below its limit (the next park, boundary or repeat is the
        // last or is exhausted).
        (
            "crafted_below_limits".to_owned(),
            crafted(2, 1, 1, true).bytes(),
        ),
        // Valid: counters at their limits with nothing that uses them (next seq and next batch
        // id u64::MAX).
        (
            "crafted_counters_exhausted".to_owned(),
            crafted(0, 0, 0, false).bytes(),
        ),
        // Valid: a window of applied operator requests, moved and refused (M17).
        (
            "crafted_operator_requests".to_owned(),
            with_requests(&["a", "b", "c"]),
        ),
        // Impossible: a request applied twice inside the window (M17).
        (
            "crafted_request_applied_twice".to_owned(),
            with_requests(&["a", "b", "a"]),
        ),
    ]
}

/// A mirror whose applied window holds `ids` in order, each alternately moved and refused, as a
/// snapshot writes it (`op` records, M17).
fn with_requests(ids: &[&str]) -> Vec<u8> {
    use parkline::ops::{Answer, Applied, OpId, Verb};
    let ops = (0u64..)
        .zip(ids)
        .map(|(n, id)| Applied {
            id: OpId::new(id).expect("an id"),
            verb: if n % 2 == 0 {
                Verb::Redrive
            } else {
                Verb::Discard
            },
            change: Some(n),
            answer: if n % 2 == 0 {
                Answer::Moved(n)
            } else {
                Answer::Refused(format!("seq {n} is not a dead letter"))
            },
        })
        .collect();
    let state = parkline::mirror::MirrorState {
        ops,
        ..parkline::mirror::MirrorState::default()
    };
    parkline::mirror::encode(&state)
}

/// The crafted seeds of the `mirror_decode` corpus decode as M6 says: the one at the limits is
/// Corrupt, the others give their states with counters that did not wrap.
#[test]
fn m6_crafted_mirror_decode_seeds_decode_as_specified() {
    for (name, bytes) in crafted_mirrors() {
        delivery::check_mirror_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let decoded = parkline::mirror::decode(&bytes);
        match name.as_str() {
            "crafted_at_limits" | "crafted_request_applied_twice" => {
                let err = decoded.expect_err("at the limits");
                assert_eq!(err.kind(), parkline::ErrorKind::Corrupt, "{err}");
            }
            "crafted_below_limits" => {
                let state = decoded.expect("below the limits");
                assert_eq!(state.next_seq, parkline::Seq(u64::MAX));
                assert_eq!(state.next_batch, parkline::BatchId(u64::MAX));
                let batch = state.in_flight.expect("in flight");
                assert_eq!(batch.attempt, parkline::Attempt(u32::MAX - 1));
            }
            "crafted_operator_requests" => {
                let state = decoded.expect("a window of requests");
                assert_eq!(state.ops.len(), 3);
            }
            _ => {
                let state = decoded.expect("exhausted counters");
                assert_eq!(
                    (state.next_seq, state.next_batch),
                    (parkline::Seq(u64::MAX), parkline::BatchId(u64::MAX))
                );
            }
        }
        let committed = fuzz_dir().join("corpus").join("mirror_decode").join(&name);
        assert_eq!(
            std::fs::read(&committed).ok().as_deref(),
            Some(bytes.as_slice()),
            "{name} is not committed as generated (PARKLINE_WRITE_CORPUS=1)"
        );
    }
}

/// The mirror's bytes after applying `ops` (queue ops only) to a fresh queue.
fn mirror_after(ops: &[Op]) -> Vec<u8> {
    let disk = SimDisk::new();
    // The harness's clock, left at 0: the seeds are the same bytes at every regeneration.
    let mut queue = Queue::with_storage(disk.clone(), MIRROR, Setup::default().config())
        .expect("open")
        .with_clock(std::sync::Arc::new(delivery::OpClock::default()));
    let mut last = None;
    for op in ops {
        match op {
            Op::Queue(QueueOp::Park { request, line }) => {
                let _ = queue.park(RequestId(*request), line);
            }
            Op::Queue(QueueOp::Boundary { budget }) => {
                if let Ok(Some(batch)) = queue.boundary(Budget(*budget)) {
                    last = Some(batch);
                }
            }
            Op::Queue(QueueOp::Settle { .. }) | Op::Queue(QueueOp::HandOverFailed) => {
                if let Some(batch) = last.take() {
                    let outcomes = vec![Outcome::Failed; batch.items.len()];
                    let _ = queue.settle(batch.id, &outcomes);
                }
            }
            _ => {}
        }
    }
    drop(queue);
    disk.live(MIRROR).expect("mirror exists")
}
