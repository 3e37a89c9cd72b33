//! Exhaustive replay of the model's reachable graph on the crate: one path per reachable state,
//! extended by every enabled action, with and without a crash at every sync.

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use parkline_harness::delivery::{Op, QueueOp, Setup, check_with};
use parkline_model::delivery::{Action, DeliveryModel, DeliveryState, Phase, Variant};
use stateright::Model;

use super::crash::crash_at_every_sync;
use super::park;
use crate::env_usize;

/// The ops of one model step (steps the crate does not see, hand over, notify, recover and
/// collected, map to nothing; a settle carries the notified outcomes). A group park is one
/// `park_all`, a torn one a power loss at its only sync, a redrive `redrive_all`, a discard
/// `discard_all` (D8, D21, D22).
fn ops_of_step(model: &DeliveryModel, before: &DeliveryState, action: &Action) -> Vec<Op> {
    let group = |i: usize| {
        Op::Queue(QueueOp::ParkAll {
            items: model.bounds.lines[i..i + 2].to_vec(),
        })
    };
    match action {
        Action::ParkGroup(i) => vec![group(*i)],
        // D22: power lost during the group's one append: its sync never returns, nothing of
        // the group survives.
        Action::TornGroup(i) => vec![Op::CrashAtSync { n: 1, torn: 0 }, group(*i)],
        // D3: the park's record is durable, then the power goes; the retry follows Recover.
        Action::ParkAnswerLost(i) => {
            let (request, line) = &model.bounds.lines[*i];
            vec![park(*request, line), Op::Crash { torn: 0 }]
        }
        _ => op_of_step(model, before, action).into_iter().collect(),
    }
}

fn op_of_step(model: &DeliveryModel, before: &DeliveryState, action: &Action) -> Option<Op> {
    match action {
        Action::Park(i) => {
            let (request, line) = &model.bounds.lines[*i];
            Some(park(*request, line))
        }
        Action::ParkGroup(_) | Action::TornGroup(_) | Action::ParkAnswerLost(_) => None,
        Action::Redrive => Some(Op::Queue(QueueOp::Redrive { seqs: None })),
        Action::Discard => Some(Op::Queue(QueueOp::Discard { seqs: None })),
        Action::Boundary => Some(Op::Queue(QueueOp::Boundary {
            budget: model.bounds.budget,
        })),
        Action::HandOverFails => Some(Op::Queue(QueueOp::HandOverFailed)),
        Action::Settle => match &before.phase {
            Phase::HandedOver { outcomes, .. } => Some(Op::Queue(QueueOp::Settle {
                delivered: outcomes.clone(),
            })),
            _ => None,
        },
        Action::Crash => Some(Op::Crash { torn: 0 }),
        // A compaction is the crate's own decision at a settle or redrive (M12), not an op.
        Action::HandOver
        | Action::Notify
        | Action::ItemFails
        | Action::Recover
        | Action::Compact
        | Action::Collected(_) => None,
        // Group commit runs at `Bounds::group` only; this replay is of single parks.
        Action::JoinGroup(_) | Action::WriteGroup | Action::SyncGroup | Action::AckPark(_) => None,
    }
}

/// Every transition of the model's reachable graph (one path per reachable state, extended by
/// each enabled action), mapped to ops. The op sequences are kept in a trie (a state stores its
/// trie node, not its path), and only the trie's leaves are returned: a scenario that is a
/// prefix of another is checked by it, since `check` compares after every step. Returns the
/// number of reachable states, of transitions, and the scenarios.
pub(super) fn model_transitions(model: &DeliveryModel) -> (usize, usize, Vec<Vec<Op>>) {
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
            let mut next_node = node;
            for op in ops_of_step(model, &state, &action) {
                let parent = next_node;
                next_node = *children.entry((parent, op.clone())).or_insert_with(|| {
                    nodes.push((parent, Some(op)));
                    has_child.push(false);
                    has_child[parent] = true;
                    nodes.len() - 1
                });
            }
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
    //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
    //= type=test
    //# The queue MUST consider a write durable only after an `fsync` of the file (`Storage::sync`),
    //# and a create, rename or remove durable only after an `fsync` of the directory
    //# (`Storage::sync_dir`); it makes no other durability assumption, so a simulated disk
    //# implementing `Storage` can crash it at any point.
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

/// D3: the model's graph with a park whose answer a crash lost, replayed on the crate: the retry
/// after the restart gets the seq the mirror holds, and the line is delivered once.
#[test]
fn d3_the_lost_park_answer_graph_replays_on_the_crate() {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    let model = DeliveryModel::new(
        parkline_model::delivery::Bounds::with_lost_park(),
        Variant::Correct,
    );
    let (states, _, scenarios) = model_transitions(&model);
    let setup = Setup {
        failures_max: model.bounds.failures_max,
        ..Setup::default()
    };
    let repeated: usize = scenarios
        .iter()
        .map(|ops| {
            check_with(ops, &setup)
                .unwrap_or_else(|d| panic!("{ops:?}\n{d}"))
                .repeated_parks
        })
        .sum();
    eprintln!("lost park answer: {states} states, {repeated} retried parks replayed");
    assert!(repeated > 0);
}
