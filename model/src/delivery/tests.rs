//! Unit tests of the model's own structure: the facts the newest-record properties rest on
//! (`properties.rs`, "Checking the newest record only"), checked at every transition.

use super::model::Log;
use super::properties::fresh_turn;
use super::*;
use crate::test_support::state_after;
use stateright::Model;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// The log lengths of a state, in the order `handed`, `notified`, `boundaries`, `settles`,
/// `redrives`.
fn lengths(s: &DeliveryState) -> [usize; 5] {
    [
        s.handed.len(),
        s.notified.len(),
        s.boundaries.len(),
        s.settles.len(),
        s.redrives.len(),
    ]
}

/// What is wrong with the step `prev -> next` for the newest-record argument, if anything: a log
/// that shrank, grew by more than one record or changed a record it held, or a hand-over whose
/// turn `fresh_turn` does not show in the state it produced.
fn step_fault(prev: &DeliveryState, next: &DeliveryState) -> Option<String> {
    let (before, after) = (lengths(prev), lengths(next));
    for (i, name) in ["handed", "notified", "boundaries", "settles", "redrives"]
        .iter()
        .enumerate()
    {
        if after[i] < before[i] || after[i] > before[i] + 1 {
            return Some(format!("{name} went from {} to {}", before[i], after[i]));
        }
    }
    let kept = next.handed[..before[0]] == prev.handed[..]
        && next.notified[..before[1]] == prev.notified[..]
        && next.boundaries[..before[2]] == prev.boundaries[..]
        && next.settles[..before[3]] == prev.settles[..]
        && next.redrives[..before[4]] == prev.redrives[..];
    if !kept {
        return Some("a step changed a record already logged".into());
    }
    if after[0] > before[0] && fresh_turn(next) != next.handed.last().map(|b| &**b) {
        return Some("a hand-over's state does not show its turn as fresh".into());
    }
    if fresh_turn(next).is_some() && next.handed.is_empty() {
        return Some("a fresh turn with nothing handed".into());
    }
    None
}

/// A state's fingerprint, as the checker takes one (a 64-bit hash).
fn fingerprint(s: &DeliveryState) -> u64 {
    let mut hasher = DefaultHasher::new();
    s.hash(&mut hasher);
    hasher.finish()
}

/// Every transition reachable from the initial states of `model`, checked with [`step_fault`],
/// until `cap` states are found (some known-bad variants never stop growing a log), each state
/// shown to `visit` once; returns the number of states found and the actions offered that had no
/// next state.
fn walk(
    model: &DeliveryModel,
    cap: usize,
    mut visit: impl FnMut(&DeliveryState),
) -> (usize, Vec<Action>) {
    let mut stack = model.init_states();
    let mut seen: HashSet<u64> = stack.iter().map(fingerprint).collect();
    let mut actions = Vec::new();
    let mut disabled = Vec::new();
    while let Some(state) = stack.pop() {
        if seen.len() >= cap {
            break;
        }
        visit(&state);
        actions.clear();
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let Some(next) = model.next_state(&state, action.clone()) else {
                disabled.push(action);
                continue;
            };
            if let Some(fault) = step_fault(&state, &next) {
                panic!("{:?} under {action:?}: {fault}", model.variant);
            }
            if seen.insert(fingerprint(&next)) {
                stack.push(next);
            }
        }
    }
    (seen.len(), disabled)
}

#[test]
fn a_step_appends_at_most_one_record_to_each_log() {
    // The correct model at the default bounds (every state the suite checks), and every
    // known-bad variant at smaller ones (its first 20,000 states: some never stop growing a
    // log), since a variant's verdict rests on the same argument.
    // And the correct model offers only actions it can take: an offered action without a next
    // state would be a guard of `actions` that `next_state` silently disagrees with.
    let correct = DeliveryModel::new(Bounds::default(), Variant::Correct);
    let (states, disabled) = walk(&correct, usize::MAX, |_| {});
    assert_eq!(states, DEFAULT_UNIQUE_STATES);
    assert!(
        disabled.is_empty(),
        "{} offered actions without a next state, the first {:?}",
        disabled.len(),
        disabled.first()
    );
    for variant in Variant::ALL {
        walk(
            &DeliveryModel::new(Bounds::generated(2, 6, 1, 1), variant),
            20_000,
            |_| {},
        );
    }
    // Group commit's steps, at the bounds that take them: the correct model whole, and the
    // variants that change those steps.
    let group = DeliveryModel::new(Bounds::group(), Variant::Correct);
    let (states, disabled) = walk(&group, usize::MAX, |_| {});
    assert_eq!(states, GROUP_UNIQUE_STATES);
    assert!(disabled.is_empty(), "{disabled:?}");
    for variant in [
        Variant::AckBeforeSync,
        Variant::GroupDropsFollower,
        Variant::RefusalFailsGroup,
    ] {
        walk(
            &DeliveryModel::new(Bounds::group(), variant),
            20_000,
            |_| {},
        );
    }
    // The remembered window's steps (a retry that waits, a compaction of the window): the
    // correct model whole, and the variants that forget the window.
    let remember = DeliveryModel::new(Bounds::remember(), Variant::Correct);
    let (states, disabled) = walk(&remember, usize::MAX, |_| {});
    assert_eq!(states, REMEMBER_UNIQUE_STATES);
    assert!(disabled.is_empty(), "{disabled:?}");
    for variant in [Variant::ForgetAtCompaction, Variant::ForgetAtReopen] {
        walk(
            &DeliveryModel::new(Bounds::remember(), variant),
            20_000,
            |_| {},
        );
    }
}

#[test]
fn step_fault_sees_each_kind_of_bad_step() {
    // The check above cannot pass vacuously: forged steps that break each fact are refused.
    let model = DeliveryModel::new(Bounds::default(), Variant::Correct);
    let mut actions = Vec::new();
    // Park up to a batch, then hand it over, to have a state with a logged turn.
    let mut state = model.init_states().remove(0);
    let mut handed = None;
    for _ in 0..8 {
        actions.clear();
        model.actions(&state, &mut actions);
        let next = actions
            .iter()
            .find_map(|a| {
                model
                    .next_state(&state, a.clone())
                    .filter(|n| n.handed.len() > state.handed.len())
            })
            .or_else(|| model.next_state(&state, actions[0].clone()))
            .expect("a step");
        if next.handed.len() > state.handed.len() {
            handed = Some(next);
            break;
        }
        state = next;
    }
    let handed = handed.expect("a hand-over within 8 steps");
    assert_eq!(step_fault(&state, &handed), None);

    let mut twice = handed.clone();
    twice.handed.push((*handed.handed[0]).clone());
    assert!(step_fault(&state, &twice).unwrap().contains("handed went"));

    let mut shrunk = handed.clone();
    shrunk.handed = Log::default();
    assert!(
        step_fault(&handed, &shrunk)
            .unwrap()
            .contains("handed went")
    );

    let mut stale = handed.clone();
    stale.phase = Phase::Idle;
    assert!(step_fault(&state, &stale).unwrap().contains("fresh"));

    // One record appended, but the one before it changed.
    let mut changed = (*handed.handed[0]).clone();
    changed.attempt += 1;
    let mut rewritten = handed.clone();
    rewritten.handed = Log::default();
    rewritten.handed.push(changed);
    rewritten.handed.push((*handed.handed[0]).clone());
    assert!(
        step_fault(&handed, &rewritten)
            .unwrap()
            .contains("changed a record")
    );
}

/// Two logs are equal when they hold the same records in the same order, whichever states
/// built them (stateright deduplicates by the hash, the tests compare states by `==`).
#[test]
fn logs_are_equal_exactly_when_their_records_are() {
    let log = |records: &[u32]| {
        let mut log = Log::default();
        for record in records {
            log.push(*record);
        }
        log
    };
    assert_eq!(log(&[1, 2]), log(&[1, 2]));
    assert_eq!(log(&[]), Log::<u32>::default());
    for (a, b) in [
        (&[1, 2][..], &[2, 1][..]),
        (&[1], &[2]),
        (&[1], &[1, 1]),
        (&[], &[1]),
    ] {
        assert_ne!(log(a), log(b), "{a:?} vs {b:?}");
    }
    let shared = log(&[7]);
    let mut grown = shared.clone();
    grown.push(8);
    assert_eq!(
        (shared.len(), grown.len()),
        (1, 2),
        "a push does not reach a clone"
    );
}

/// The model stays within its bounds, at bounds where going over is possible: with 4 failures
/// and dead letters at 2, a line can die again after the one redrive allowed, so a guard off by
/// one would offer a second redrive (the named bound sets give at most `failures_max` failures
/// after a redrive, so their state counts cannot see it).
#[test]
fn the_model_takes_no_more_than_its_bounds_allow() {
    let mut bounds = Bounds::generated(2, 6, 1, 4);
    bounds.collects = 1;
    let model = DeliveryModel::new(bounds.clone(), Variant::Correct);
    // Every `always` property holds here too: the named bound sets never fail a redriven line
    // again, so this walk is where the redrive properties see a second life's failures.
    let always: Vec<_> = model
        .properties()
        .into_iter()
        .filter(|p| p.expectation == stateright::Expectation::Always)
        .collect();
    let mut dead_after_the_redrive = false;
    let mut most = [0; 4];
    walk(&model, usize::MAX, |state| {
        let counts = [
            state.redrives.len(),
            state.crashes as usize,
            state.failures as usize,
            state.collected.len(),
        ];
        let limits = [
            bounds.redrives as usize,
            bounds.crashes as usize,
            bounds.failures as usize,
            bounds.collects as usize,
        ];
        assert!(
            counts
                .iter()
                .zip(limits)
                .all(|(count, limit)| *count <= limit),
            "redrives, crashes, failures, collects {counts:?} over {limits:?}"
        );
        for (most, count) in most.iter_mut().zip(counts) {
            *most = (*most).max(count);
        }
        dead_after_the_redrive |=
            !state.redrives.is_empty() && !state.queue.dead_letters().is_empty();
        for property in &always {
            assert!(
                (property.condition)(&model, state),
                "{} fails at {state:?}",
                property.name
            );
        }
    });
    // Not vacuous: every limit is reached, and a line is dead again after the redrive.
    assert_eq!(most, [1, 1, 4, 1]);
    assert!(dead_after_the_redrive);
}

/// `fresh_turn` shows a turn only in the state its hand-over produced: after the first outcome
/// the same batch is no longer fresh (the text properties read each turn once).
#[test]
fn a_turn_is_fresh_only_in_the_state_its_hand_over_produced() {
    let model = DeliveryModel::default();
    let mut state = state_after(
        &model,
        &[Action::Park(0), Action::Park(1), Action::Boundary],
    );
    assert!(fresh_turn(&state).is_none());
    state = model.next_state(&state, Action::HandOver).unwrap();
    assert_eq!(fresh_turn(&state).map(|b| b.id), Some(1));
    state = model.next_state(&state, Action::Notify).unwrap();
    assert!(fresh_turn(&state).is_none());
}

/// D6 clause by clause: an item's failure count and its dead-letter state are each checked on
/// their own (a state with only one of them wrong is refused).
#[test]
fn d6_refuses_a_wrong_failure_count_or_dead_state_alone() {
    use super::properties::d6_per_request_independence as d6;
    let model = DeliveryModel::default();
    let state = state_after(&model, &[Action::Park(0)]);
    assert!(d6(&model, &state));
    let mut counted = state.clone();
    counted.queue.mirror.parked[0].failures = 1;
    assert!(!d6(&model, &counted));
    let mut dead = state.clone();
    let item = dead.queue.mirror.parked.remove(0);
    dead.queue.mirror.dead.push(item);
    assert!(!d6(&model, &dead));
}

/// The group-park property counts a group line present when it is held, or delivered by its
/// own request: one line of the group held and the other gone (while another request's line was
/// delivered) is refused.
#[test]
fn group_park_refuses_half_a_group_beside_another_delivery() {
    use super::properties::group_park_all_or_none as group_park;
    let model = DeliveryModel::default();
    let state = state_after(
        &model,
        &[
            Action::Park(0),
            Action::Boundary,
            Action::HandOver,
            Action::Notify,
            Action::Settle,
            Action::ParkGroup(1),
        ],
    );
    assert!(group_park(&model, &state));
    let mut half = state.clone();
    half.queue.mirror.parked.retain(|item| item.request != 3);
    assert!(!group_park(&model, &half));
}

/// The reference's errors read as sentences (they appear in the differential's divergences).
#[test]
fn reference_errors_are_worded() {
    let words: Vec<String> = [
        RefError::BatchInFlight,
        RefError::UnknownBatch,
        RefError::OutcomeCount,
        RefError::Exhausted,
        RefError::InvalidLine(2),
        RefError::NotDead(7),
        RefError::Corrupt,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        words,
        [
            "a batch of this life is in flight",
            "no batch of this life with that id is in flight",
            "one outcome per item is required",
            "a counter is exhausted",
            "line 2 of the group holds a newline",
            "seq 7 is not a dead letter",
            "the mirror is impossible",
        ]
    );
}

#[test]
fn turn_errors_are_worded() {
    let words: Vec<String> = [TurnError::Header, TurnError::Body, TurnError::Trailer]
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        words,
        [
            "the turn does not start with a batch header",
            "the turn's body does not match its header and trailer",
            "the turn does not end with its batch's trailer",
        ]
    );
}

#[test]
fn variant_names_are_distinct_command_line_words_that_round_trip() {
    crate::test_support::assert_variant_names(&Variant::ALL, Variant::name, Variant::from_name);
    assert_eq!(Variant::Correct.name(), "correct");
    assert_eq!(Variant::from_name("pop-front"), Some(Variant::PopFront));
}
