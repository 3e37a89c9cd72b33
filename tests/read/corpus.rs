//! The fuzz corpus and committed findings (`fuzz/regressions`) of `read_windows`, replayed on stable, and the seed corpus they
//! start from.

use parkline_harness::known_bad::KnownBad;
use parkline_harness::read::{self as read_harness, ReadOp, check, check_with, decode_read_ops};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

use super::known_bad::known_bad_scenario;

fn read_fuzz_files() -> Vec<std::path::PathBuf> {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for folder in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(folder).join("read_windows")) else {
            continue;
        };
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

#[test]
fn fuzz_read_windows_corpus_and_regressions_replay() {
    for file in read_fuzz_files() {
        let bytes = std::fs::read(&file).expect("read corpus file");
        if let Some(ops) = decode_read_ops(&bytes) {
            check(&ops).unwrap_or_else(|d| panic!("{}: {d}", file.display()));
        }
    }
}

/// The encoder of seed corpora is the exact inverse of the fuzz target's decoding.
#[test]
fn encoded_read_ops_decode_to_the_same_ops() {
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    for _ in 0..200 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let bytes = read_harness::encode_read_ops(&ops);
        assert_eq!(decode_read_ops(&bytes), Some(ops));
    }
}

/// The seed corpus of `read_windows`: the known-bad scenario and generated scenarios that reach
/// an excerpt and an omission, encoded as fuzz input. Written to `fuzz/corpus/read_windows` when
/// `PARKLINE_WRITE_CORPUS=1`; always checked: the correct crate passes every seed and each
/// known-bad switch is caught by at least one.
#[test]
fn write_read_seed_corpus() {
    let write = std::env::var("PARKLINE_WRITE_CORPUS").is_ok_and(|v| v == "1");
    let mut seeds: Vec<(String, Vec<ReadOp>)> = vec![
        ("known_bad_scenario".to_string(), known_bad_scenario()),
        // R7: a cursor of a child whose id collides with this child's under CRC-32.
        (
            "r7_colliding_ids".to_string(),
            vec![
                ReadOp::Grow { len: 5, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadForeign { seq: 0, child: 1 },
                ReadOp::ReadForeign { seq: 1, child: 2 },
            ],
        ),
        // R7: a damaged cursor of 4,000 chars; the error echoes at most ECHO_CHARS_MAX of them.
        (
            "r7_error_echo".to_string(),
            vec![ReadOp::ReadDamaged {
                position: 0,
                replacement: 0,
                pad: 4000,
            }],
        ),
        // R15: a partial turn that grows between reads, then is rewritten.
        (
            "r15_partial".to_string(),
            vec![
                ReadOp::Grow { len: 10, letter: 0 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::Grow { len: 5, letter: 1 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::Rewrite { len: 15, letter: 3 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
            ],
        ),
        // Section 5.2: the transcript is rebuilt without the turn the follower's cursor follows
        // and grows back past it; then a forged v2 cursor and a re-checked 0-char record.
        (
            "r5_rebuilt_grown_back".to_string(),
            vec![
                ReadOp::Grow { len: 5, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::Rebuild { keep: 0 },
                ReadOp::Grow { len: 7, letter: 1 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::ReadForged { seq: 0, kind: 4 },
                ReadOp::ReadForged { seq: 0, kind: 3 },
            ],
        ),
        // Section 5.3: partial-turn records whose check has every width from 1 to 32 hex
        // digits, in v2 and v3 cursors; only 8 (v2) and 16 (v3) read.
        (
            "r7_forged_record_widths".to_string(),
            [
                ReadOp::Grow { len: 5, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::Grow { len: 3, letter: 1 },
            ]
            .into_iter()
            .chain(
                (6..=u8::MAX)
                    .step_by(8)
                    .map(|kind| ReadOp::ReadForged { seq: 0, kind }),
            )
            .chain(
                (7..=u8::MAX)
                    .step_by(8)
                    .map(|kind| ReadOp::ReadForged { seq: 0, kind }),
            )
            .collect(),
        ),
        // R8: a follower that retries at needed_chars, on a turn larger than any budget.
        (
            "r8_needed_chars".to_string(),
            vec![
                ReadOp::Grow { len: 43, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadAtNeeded { history: 0 },
            ],
        ),
    ];
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    while seeds.len() < 12 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let report = check(&ops).expect("correct crate");
        if report.excerpts > 0 && report.omissions > 0 && report.errors > 0 {
            seeds.push((format!("seed_{}", seeds.len() - 6), ops));
        }
    }
    for bad in KnownBad::READ {
        let caught = seeds
            .iter()
            .any(|(_, ops)| check_with(ops, Some(bad)).is_err());
        assert!(caught, "{bad}: no seed diverges");
    }
    if write {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join("corpus")
            .join("read_windows");
        std::fs::create_dir_all(&dir).expect("corpus dir");
        for (name, ops) in &seeds {
            let bytes = read_harness::encode_read_ops(ops);
            std::fs::write(dir.join(name), bytes).expect("write corpus file");
        }
    }
}
