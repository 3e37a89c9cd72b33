//! Delivery-side conformance tests: the crate (`parkline::Queue` over the simulated disk) checked
//! against the reference (`parkline_model::delivery`) by one `check(ops)`: differential proptest,
//! exhaustive replay of the model's graph, crash at every sync point, random crashes in long
//! runs, fuzz corpus and artifact replay, and the known-bad protocols (the harness's seams
//! around the crate) each caught.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use parkline::{Budget, Outcome, Queue, RequestId};
use parkline_harness::harness::{self, MIRROR, Op, Setup, check, check_with, decode_ops};
use parkline_harness::known_bad::KnownBad;
use parkline_harness::simdisk::{SimDisk, SplitMix};
use parkline_model::delivery::{Action, DeliveryModel, DeliveryState, Phase, Variant};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use stateright::Model;

/// `name` from the environment as a number, or `default`.
fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn cases() -> u32 {
    u32::try_from(env_usize("PARKLINE_PROPTEST_CASES", 5000)).unwrap_or(u32::MAX)
}

fn setup(bad: KnownBad) -> Setup {
    Setup {
        known_bad: Some(bad),
        ..Setup::default()
    }
}

fn park(request: u64, line: &str) -> Op {
    Op::Park {
        request,
        line: line.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Differential proptest

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// D1..D17: any scenario of parks, boundaries, settles, failures, crashes (between ops, at a
    /// sync inside an op, torn), I/O errors and restarts: the crate equals the reference after
    /// every step and every invariant holds.
    #[test]
    fn differential_crate_equals_reference(ops in harness::ops_strategy(40)) {
        // D1, D3, D4, D5, D6, D7, D8, D9, D10, D11, D12, D13, D16, D17: compared after every step.
        if let Err(divergence) = check(&ops) {
            return Err(TestCaseError::fail(divergence.to_string()));
        }
    }
}

/// The generated scenarios reach what they are meant to reach: the sum of the reports of the
/// proptest's scenarios has repeats, dead letters, crashes inside ops and I/O errors (so a pass
/// of the differential test means something). Mirror rewrites (compaction) need longer
/// scenarios: see `d9_random_crashes_in_long_runs` and the crash enumeration.
#[test]
fn differential_scenarios_reach_every_kind_of_step() {
    // D7, D8, D10, D16: the generated scenarios reach failures, dead letters, repeats, faults.
    let mut runner = TestRunner::deterministic();
    let strategy = harness::ops_strategy(40);
    let mut total = harness::Report::default();
    let cases = cases();
    for _ in 0..cases {
        let ops = strategy.new_tree(&mut runner).expect("strategy").current();
        let report = check(&ops).unwrap_or_else(|d| panic!("{ops:?}\n{d}"));
        total.steps += report.steps;
        total.parks += report.parks;
        total.batches += report.batches;
        total.repeats += report.repeats;
        total.settles += report.settles;
        total.dead += report.dead;
        total.crashes += report.crashes;
        total.crashes_in_op += report.crashes_in_op;
        total.io_errors += report.io_errors;
        total.renames += report.renames;
        total.crafted += report.crafted;
        total.crafted_corrupt += report.crafted_corrupt;
        total.exhausted += report.exhausted;
    }
    eprintln!("differential, {cases} cases: {total:?}");
    assert!(
        total.repeats > 0 && total.dead > 0 && total.crashes_in_op > 0 && total.io_errors > 0,
        "{total:?}"
    );
    // M12, M6, D10: compaction at the default slack (multi-MB batches), crafted mirrors at the
    // counters' limits, impossible ones, and exhausted counters are reached too.
    assert!(
        total.renames > 0 && total.crafted > 0 && total.crafted_corrupt > 0 && total.exhausted > 0,
        "{total:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases() / 5, ..ProptestConfig::default() })]

    /// M12 with a small slack, so most settles decide a compaction: the crate equals the
    /// reference and the file stays within the M12 bound after every op.
    #[test]
    fn differential_with_a_small_compaction_slack(ops in harness::ops_strategy(40)) {
        let setup = Setup { compact_slack_bytes: 256, ..Setup::default() };
        if let Err(divergence) = check_with(&ops, &setup) {
            return Err(TestCaseError::fail(divergence.to_string()));
        }
    }
}

/// M12: the differential's shortest counterexample against the old compaction shortcut (decided
/// on the state before the settle): seven big lines in one batch, all delivered; the settle must
/// compact (a rename), and the file stays within the bound after every op.
#[test]
fn m12_settle_of_a_multi_line_big_batch_compacts() {
    let ops = vec![
        Op::ParkMany {
            request: 1,
            line: harness::line(harness::LINES.len()),
            count: 7,
        },
        Op::Boundary {
            budget: harness::BUDGET_ALL,
        },
        Op::Settle { delivered: vec![] },
    ];
    let report = check(&ops).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!((report.parks, report.settles, report.renames), (7, 1, 1));
}

/// M12: the bound the harness asserts after every op fails on a log that outgrew it (a queue
/// whose slack is far larger than the one asserted), so the check can fail.
#[test]
fn m12_bound_rejects_a_log_over_it() {
    let disk = SimDisk::new();
    let mut config = Setup::default().config();
    config.compact_slack_bytes = 1 << 30;
    let mut queue = Queue::with_storage(disk.clone(), MIRROR, config).expect("create");
    for n in 0..4 {
        queue.park(RequestId(n), &"x".repeat(25_000)).expect("park");
    }
    let batch = queue
        .boundary(Budget(usize::MAX))
        .expect("boundary")
        .expect("parked");
    queue
        .settle(batch.id, &[Outcome::Delivered; 4])
        .expect("settle");
    let len = disk.live_len(MIRROR).expect("mirror");
    let slack = parkline::COMPACT_SLACK_BYTES;
    let err = harness::m12_bound(len, queue.state(), slack, 0).expect_err("over the bound");
    assert!(err.starts_with("M12 file size: the mirror is "), "{err}");
    assert!(harness::m12_bound(len, queue.state(), 1 << 30, 0).is_ok());
}

/// M6, D10: every crafted start state (counters at and next to their limits) either opens on
/// both sides and conforms through parks, boundaries, settles and a crash, or is Corrupt on
/// both; the ones with a gap of 0 are the impossible or exhausted ones.
#[test]
fn m6_d10_crafted_mirrors_at_the_counter_limits_conform() {
    let mut total = harness::Report::default();
    for lines in 0..=3u8 {
        for in_flight in [0u8, 1, 3] {
            for seq_gap in 0..=2u8 {
                for gap in 0..=2u8 {
                    for max in [false, true] {
                        let crafted = harness::Crafted {
                            lines,
                            in_flight,
                            seq_gap,
                            batch_gap: gap,
                            attempt_gap: gap,
                            failures_gap: gap,
                            dead: lines % 2 == 1,
                            failures_max_max: max,
                        };
                        let ops = vec![
                            Op::Craft(crafted.clone()),
                            Op::Boundary { budget: 2 },
                            Op::Settle {
                                delivered: vec![false, true],
                            },
                            park(1, "after"),
                            Op::Crash { torn: 0 },
                            Op::Boundary {
                                budget: harness::BUDGET_ALL,
                            },
                            Op::HandOverFailed,
                            park(2, "again"),
                            Op::Boundary {
                                budget: harness::BUDGET_ALL,
                            },
                        ];
                        let report = check(&ops).unwrap_or_else(|d| panic!("{crafted:?}: {d}"));
                        total.crafted += report.crafted;
                        total.crafted_corrupt += report.crafted_corrupt;
                        total.exhausted += report.exhausted;
                        total.dead += report.dead;
                    }
                }
            }
        }
    }
    assert!(
        total.crafted > 0 && total.crafted_corrupt > 0 && total.exhausted > 0 && total.dead > 0,
        "{total:?}"
    );
}

#[test]
fn d1_thirteen_lines_parked_behind_one_turn_are_one_batch() {
    let mut ops: Vec<Op> = (1..=13)
        .map(|r| park(r, &format!("[delegation r-{r} done] outcome ok")))
        .collect();
    ops.push(Op::Boundary { budget: 4000 });
    ops.push(Op::Settle {
        delivered: vec![true; 13],
    });
    let report = check(&ops).expect("conforms");
    assert_eq!((report.parks, report.batches, report.settles), (13, 1, 1));
}

#[test]
fn d7_failed_items_come_back_and_dead_letter_at_failures_max() {
    let ops = vec![
        park(1, "a"),
        park(2, "b"),
        Op::Boundary { budget: 100 },
        Op::Settle {
            delivered: vec![true, false],
        },
        Op::Boundary { budget: 100 },
        Op::HandOverFailed,
        Op::Boundary { budget: 100 },
    ];
    let report = check(&ops).expect("conforms");
    // failures_max is 2 in the default setup: the second failure dead-letters seq 2.
    assert_eq!((report.batches, report.dead), (2, 1));
}

// ---------------------------------------------------------------------------------------------
// Crash between "batch written" and "mirror cleared" (acceptance 2)

/// D10, D9: the batch was persisted by `boundary`, handed over, and the power went out before
/// `settle` (between ops, and inside `settle` at its first sync): the next life hands back the
/// same batch id and items with attempt 2 and the repeat mark on the turn and every notified
/// event, and nothing is lost.
#[test]
fn crash_between_batch_written_and_mirror_cleared_replays_as_repeat() {
    // D9, D10, D5: acceptance 2 of the seed, on the simulated disk.
    let lines: Vec<Op> = (1..=3).map(|r| park(r, &format!("r-{r} done"))).collect();
    for crash in [
        Op::Crash { torn: 0 },
        Op::Crash { torn: 1 },
        Op::CrashAtSync { n: 1, torn: 0 },
    ] {
        let mut ops = lines.clone();
        ops.push(Op::Boundary { budget: 100 });
        ops.push(crash.clone());
        if matches!(crash, Op::CrashAtSync { .. }) {
            ops.push(Op::Settle {
                delivered: vec![true; 3],
            });
        }
        ops.push(Op::Boundary { budget: 1 });
        ops.push(Op::Settle {
            delivered: vec![true; 3],
        });
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
    assert_eq!(
        (repeat.id, &repeat.items, repeat.remaining),
        (batch.id, &batch.items, 0)
    );
    assert_eq!(repeat.attempt.0, 2);
    assert!(repeat.is_repeat());
    assert!(
        repeat
            .notified()
            .iter()
            .all(|n| n.repeat && n.attempt.0 == 2)
    );
    assert!(repeat.text().starts_with(&format!(
        "[parkline batch {} attempt 2, repeat: 3 of 3 parked lines]\n",
        batch.id.0
    )));
    queue
        .settle(repeat.id, &[Outcome::Delivered; 3])
        .expect("settle");
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
}

// ---------------------------------------------------------------------------------------------
// Crash at every sync point of short scenarios

/// Short scenarios that reach every kind of write: park (first create), boundary (new and
/// repeat), settle (delivered, failed, dead letter), and a compaction (big lines).
fn short_scenarios() -> Vec<Vec<Op>> {
    let big = harness::line(harness::LINES.len());
    vec![
        vec![park(1, "a")],
        vec![
            park(1, "a"),
            park(2, "r-2 failed"),
            Op::Boundary { budget: 4 },
        ],
        vec![
            park(1, "a"),
            park(2, "é→ü"),
            Op::Boundary { budget: 24 },
            Op::Settle {
                delivered: vec![true, false],
            },
            Op::Boundary { budget: 24 },
            Op::HandOverFailed,
            park(3, ""),
        ],
        vec![
            park(1, "a"),
            Op::Boundary { budget: 2 },
            Op::Restart,
            Op::Boundary { budget: 2 },
            Op::Settle {
                delivered: vec![true],
            },
        ],
        vec![
            park(1, &big),
            Op::Boundary { budget: 10 },
            Op::Settle {
                delivered: vec![true],
            },
            park(4, &big),
            Op::Boundary { budget: 10 },
            Op::Settle {
                delivered: vec![true],
            },
            park(2, &big),
            park(3, "a"),
            Op::Boundary { budget: 10 },
            Op::Settle {
                delivered: vec![true],
            },
            Op::Boundary { budget: 10 },
            Op::Settle {
                delivered: vec![false],
            },
        ],
    ]
}

/// Insert a power loss at sync `n` of op `i`, for every `i` and every `n` up to the number of
/// syncs that op makes, with each way unsynced changes may survive. Returns the number of crash
/// points checked.
fn crash_at_every_sync(ops: &[Op], setup: &Setup) -> Result<usize, String> {
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
    let runs = env_usize("PARKLINE_LONG_RUNS", 40);
    let seed = 0x5eed_0001;
    let mut rng = SplitMix::new(seed);
    let mut crashes = 0;
    let mut renames = 0;
    for run in 0..runs {
        let mut runner = TestRunner::deterministic();
        let mut ops = harness::ops_strategy(300)
            .new_tree(&mut runner)
            .expect("strategy")
            .current();
        // Big lines delivered at random positions grow the log past the compaction threshold.
        for _ in 0..20 {
            let at = rng.upto(ops.len());
            let delivered = Op::Settle {
                delivered: vec![true; 4],
            };
            let big = park(9, &harness::line(harness::LINES.len()));
            let boundary = Op::Boundary { budget: 0 };
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

// ---------------------------------------------------------------------------------------------
// Exhaustive replay of the model's reachable graph

/// The op of one model step (steps the crate does not see, hand over, notify, recover and
/// collected, map to nothing; a settle carries the notified outcomes).
fn op_of_step(model: &DeliveryModel, before: &DeliveryState, action: &Action) -> Option<Op> {
    match action {
        Action::Park(i) => {
            let (request, line) = &model.bounds.lines[*i];
            Some(park(*request, line))
        }
        Action::Boundary => Some(Op::Boundary {
            budget: model.bounds.budget,
        }),
        Action::HandOverFails => Some(Op::HandOverFailed),
        Action::Settle => match &before.phase {
            Phase::HandedOver { outcomes, .. } => Some(Op::Settle {
                delivered: outcomes.clone(),
            }),
            _ => None,
        },
        Action::Crash => Some(Op::Crash { torn: 0 }),
        Action::HandOver
        | Action::Notify
        | Action::ItemFails
        | Action::Recover
        | Action::Collected(_) => None,
    }
}

/// Every transition of the model's reachable graph (one path per reachable state, extended by
/// each enabled action), mapped to ops. The op sequences are kept in a trie (a state stores its
/// trie node, not its path), and only the trie's leaves are returned: a scenario that is a
/// prefix of another is checked by it, since `check` compares after every step. Returns the
/// number of reachable states, of transitions, and the scenarios.
fn model_transitions(model: &DeliveryModel) -> (usize, usize, Vec<Vec<Op>>) {
    // One exploration of the default model serves every test that needs it.
    static DEFAULT: OnceLock<(usize, usize, Vec<Vec<Op>>)> = OnceLock::new();
    if model.bounds == DeliveryModel::default().bounds && model.variant == Variant::Correct {
        return DEFAULT.get_or_init(|| explore(model)).clone();
    }
    explore(model)
}

fn explore(model: &DeliveryModel) -> (usize, usize, Vec<Vec<Op>>) {
    // Trie node i: (parent, op); node 0 is the empty scenario.
    let mut nodes: Vec<(usize, Option<Op>)> = vec![(0, None)];
    let mut children: HashMap<(usize, Op), usize> = HashMap::new();
    let mut has_child = vec![false];
    let mut node_of: HashMap<DeliveryState, usize> = HashMap::new();
    let mut queue = VecDeque::new();
    for init in model.init_states() {
        node_of.insert(init.clone(), 0);
        queue.push_back(init);
    }
    let mut transitions = 0;
    let mut actions = Vec::new();
    while let Some(state) = queue.pop_front() {
        let node = node_of[&state];
        actions.clear();
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let Some(next) = model.next_state(&state, action.clone()) else {
                continue;
            };
            transitions += 1;
            let next_node = match op_of_step(model, &state, &action) {
                None => node,
                Some(op) => *children.entry((node, op.clone())).or_insert_with(|| {
                    nodes.push((node, Some(op)));
                    has_child.push(false);
                    has_child[node] = true;
                    nodes.len() - 1
                }),
            };
            if !node_of.contains_key(&next) {
                node_of.insert(next.clone(), next_node);
                queue.push_back(next);
            }
        }
    }
    let leaves = (0..nodes.len())
        .filter(|&i| !has_child[i])
        .map(|leaf| {
            let mut ops = Vec::new();
            let mut at = leaf;
            while at != 0 {
                let (parent, op) = &nodes[at];
                ops.extend(op.clone());
                at = *parent;
            }
            ops.reverse();
            ops
        })
        .collect();
    (node_of.len(), transitions, leaves)
}

/// Exhaustive at the model's default bounds: every transition of the reachable graph, replayed
/// on the crate, conforms after every step.
#[test]
fn exhaustive_model_graph_replays_on_the_crate() {
    // D1..D17: every transition of the delivery model at its default bounds.
    let model = DeliveryModel::default();
    let (states, transitions, scenarios) = model_transitions(&model);
    let setup = Setup {
        failures_max: model.bounds.failures_max,
        ..Setup::default()
    };
    for ops in &scenarios {
        check_with(ops, &setup).unwrap_or_else(|d| panic!("{ops:?}\n{d}"));
    }
    eprintln!(
        "exhaustive: {states} model states, {transitions} transitions, {} maximal op scenarios \
         replayed ({})",
        scenarios.len(),
        model.bounds.summary()
    );
    assert!(states > 100 && scenarios.len() > 10);
}

/// The model's scenarios again, each with a power loss at every sync of every op (and between
/// ops), strict, keeping and torn: every scenario whose index is a multiple of
/// `PARKLINE_EXHAUSTIVE_CRASH_STRIDE` (default 1: all of them).
#[test]
fn exhaustive_model_graph_with_a_crash_at_every_sync() {
    // D9, D10, D16: every model scenario, a power loss at every sync.
    let model = DeliveryModel::default();
    let (_, _, scenarios) = model_transitions(&model);
    let setup = Setup {
        failures_max: model.bounds.failures_max,
        ..Setup::default()
    };
    let stride = env_usize("PARKLINE_EXHAUSTIVE_CRASH_STRIDE", 1).max(1);
    let mut points = 0;
    for ops in scenarios.iter().step_by(stride) {
        points += crash_at_every_sync(ops, &setup).unwrap_or_else(|e| panic!("{ops:?}\n{e}"));
    }
    eprintln!(
        "exhaustive with crashes: {} scenarios, {points} crash points",
        scenarios.len().div_ceil(stride)
    );
    assert!(points > scenarios.len() / stride);
}

// ---------------------------------------------------------------------------------------------
// Known-bad protocols (the harness's seams): each layer finds a counterexample

/// Search random scenarios for a divergence of the crate driven as `bad` says; the number of cases tried
/// when found.
fn differential_finds(bad: KnownBad, cases: u32) -> Option<(usize, String)> {
    let setup = setup(bad);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    });
    let tried = std::cell::Cell::new(0);
    let result = runner.run(&harness::ops_strategy(40), |ops| {
        tried.set(tried.get() + 1);
        check_with(&ops, &setup)
            .map(|_| ())
            .map_err(|d| TestCaseError::fail(d.to_string()))
    });
    match result {
        Err(proptest::test_runner::TestError::Fail(reason, ops)) => {
            Some((tried.get(), format!("{reason}\nminimal: {ops:?}")))
        }
        _ => None,
    }
}

#[test]
fn known_bad_each_caught_by_the_differential_proptest() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter), D16 (no-dir-sync).
    for bad in KnownBad::DELIVERY {
        let found = differential_finds(bad, 2000);
        let (tried, message) = found.unwrap_or_else(|| panic!("{bad}: no divergence found"));
        eprintln!("{bad}: caught after {tried} cases: {message}");
    }
}

#[test]
fn known_bad_each_caught_by_the_crash_enumeration() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter), D16 (no-dir-sync).
    for bad in KnownBad::DELIVERY {
        let caught = short_scenarios()
            .iter()
            .any(|ops| crash_at_every_sync(ops, &setup(bad)).is_err());
        assert!(caught, "{bad}: crash enumeration found nothing");
    }
}

#[test]
fn known_bad_each_caught_by_the_exhaustive_replay() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter), D16 (no-dir-sync).
    let model = DeliveryModel::default();
    let (_, _, scenarios) = model_transitions(&model);
    for bad in KnownBad::DELIVERY {
        let setup = Setup {
            failures_max: model.bounds.failures_max,
            ..setup(bad)
        };
        // no-dir-sync is invisible without a power loss that drops the directory changes; the
        // model's crashes are strict (torn 0), so it is caught here too.
        let caught = scenarios.iter().any(|ops| check_with(ops, &setup).is_err());
        assert!(caught, "{bad}: exhaustive replay found nothing");
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzz corpus and artifacts, replayed on stable

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn files_of(target: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in ["corpus", "artifacts"] {
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
fn fuzz_delivery_ops_corpus_and_artifacts_replay() {
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
fn fuzz_mirror_decode_corpus_and_artifacts_replay() {
    // M1, M11: the decoder on every fuzz finding, on stable.
    let files = files_of("mirror_decode");
    assert!(files.len() >= 4, "seed corpus missing: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).expect("read corpus file");
        harness::check_mirror_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

/// The fuzz target's check, on its committed seed corpus, finds each known-bad behaviour (the
/// corpus holds one seed per behaviour, found by `write_seed_corpus`).
#[test]
fn known_bad_each_caught_by_the_fuzz_check_on_its_corpus() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter), D16 (no-dir-sync).
    let corpus: Vec<Vec<Op>> = files_of("delivery_ops")
        .iter()
        .filter_map(|file| decode_ops(&std::fs::read(file).expect("read corpus file")))
        .collect();
    for bad in KnownBad::DELIVERY {
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

/// Regenerates the seed corpus when `PARKLINE_WRITE_CORPUS=1` (otherwise checks nothing but that
/// the generator runs): random byte strings decoded as ops, kept when they reach two batches
/// and a crash, plus for each known-bad behaviour the first that catches it.
#[test]
fn write_seed_corpus() {
    let write = std::env::var("PARKLINE_WRITE_CORPUS").is_ok_and(|v| v == "1");
    let mut rng = SplitMix::new(0xc0_47_05);
    let mut kept: Vec<(String, Vec<u8>)> = Vec::new();
    let mut wanted: Vec<KnownBad> = KnownBad::DELIVERY.to_vec();
    let mut plain = 0;
    let (mut limits, mut compaction) = (false, false);
    for attempt in 0..20_000 {
        if wanted.is_empty() && plain >= 4 && limits && compaction {
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
        }
    }
    assert!(wanted.is_empty(), "no seed found for {wanted:?}");
    assert!(
        limits && compaction,
        "no seed reaches the counter limits or compaction"
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
    let crafted = |lines, in_flight, gap, dead| harness::Crafted {
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
    ]
}

/// The crafted seeds of the `mirror_decode` corpus decode as M6 says: the one at the limits is
/// Corrupt, the others give their states with counters that did not wrap.
#[test]
fn m6_crafted_mirror_decode_seeds_decode_as_specified() {
    for (name, bytes) in crafted_mirrors() {
        harness::check_mirror_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let decoded = parkline::mirror::decode(&bytes);
        match name.as_str() {
            "crafted_at_limits" => {
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
    let mut queue =
        Queue::with_storage(disk.clone(), MIRROR, Setup::default().config()).expect("open");
    let mut last = None;
    for op in ops {
        match op {
            Op::Park { request, line } => {
                let _ = queue.park(RequestId(*request), line);
            }
            Op::Boundary { budget } => {
                if let Ok(Some(batch)) = queue.boundary(Budget(*budget)) {
                    last = Some(batch);
                }
            }
            Op::Settle { .. } | Op::HandOverFailed => {
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
