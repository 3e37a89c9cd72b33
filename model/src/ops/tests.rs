//! Unit tests of the ops model: the pinned state count, every `sometimes` reached, every
//! known-bad variant caught for its property on the shortest path the spec's argument predicts.

use super::*;
use crate::search::shortest_path;
use crate::test_support::{assert_variant_names, state_after};
use stateright::{Checker, Model};

const ALWAYS: [&str; 4] = [
    M17_AT_MOST_ONCE,
    M17_ANSWERED_DURABLE,
    M17_VIEW,
    M17_AT_REST,
];
const SOMETIMES: [&str; 4] = [
    SOMETIMES_APPLIED_AFTER_CRASH,
    SOMETIMES_KEPT_AT_OPEN,
    SOMETIMES_RETRY_ANSWERED,
    SOMETIMES_ALL_ANSWERED,
];

const R1: RequestId = RequestId(0);

#[test]
fn correct_model_holds_every_property_at_default_bounds() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# Every request is applied at most once, and a request a command added is
    //# applied once while the session lives
    let bfs = OpsModel::default().checker().spawn_bfs().join();
    let dfs = OpsModel::default().checker().spawn_dfs().join();
    assert_eq!(bfs.unique_state_count(), OPS_UNIQUE_STATES);
    assert_eq!(dfs.unique_state_count(), OPS_UNIQUE_STATES);
    for name in ALWAYS {
        assert!(bfs.discovery(name).is_none(), "{name} fails");
        assert!(dfs.discovery(name).is_none(), "{name} fails");
    }
    // The interesting paths are really reached, so the always properties are not vacuous.
    for name in SOMETIMES {
        assert!(bfs.discovery(name).is_some(), "{name} never happens");
    }
}

#[test]
fn every_known_bad_variant_is_caught_for_its_property() {
    for variant in OpsVariant::ALL {
        let checker = OpsModel::new(OpsBounds::default(), variant)
            .checker()
            .spawn_bfs()
            .join();
        match variant.breaks() {
            None => assert!(ALWAYS.iter().all(|n| checker.discovery(n).is_none())),
            Some(name) => assert!(
                checker.discovery(name).is_some(),
                "{variant:?}: no counterexample for {name:?}"
            ),
        }
    }
}

/// The shortest counterexample of `variant` for the property it breaks, as actions.
fn counterexample(variant: OpsVariant) -> Vec<OpsAction> {
    let model = OpsModel::new(OpsBounds::default(), variant);
    let name = variant.breaks().expect("a known-bad variant");
    let property = model.property(name);
    let path = shortest_path(&model, &property).expect("caught");
    path.into_iter().filter_map(|(_, action)| action).collect()
}

#[test]
fn a_third_operator_and_more_crashes_hold_every_property() {
    let checker = OpsModel::new(OpsBounds::deep(), OpsVariant::Correct)
        .checker()
        .spawn_dfs()
        .join();
    assert_eq!(checker.unique_state_count(), OPS_DEEP_UNIQUE_STATES);
    for name in ALWAYS {
        assert!(checker.discovery(name).is_none(), "{name} fails");
    }
}

#[test]
fn apply_without_id_applies_a_request_again_after_a_crash() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It MUST apply a request as one record that both makes the change and names the request's id,
    //# made durable before the next request.
    use OpsAction::*;
    // The killed daemon's record survives in the page cache, and the open, which finds no id
    // in it, applies the request a second time.
    assert_eq!(
        counterexample(OpsVariant::ApplyWithoutId),
        [
            Stat,
            Submit(R1),
            Read,
            Apply,
            Crash { power_loss: false },
            Open,
            Stat,
            Read,
            Apply
        ]
    );
    // Synced first, the change is durable twice.
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::ApplyWithoutId);
    let steps = [
        Submit(R1),
        Stat,
        Read,
        Apply,
        Sync,
        Crash { power_loss: true },
    ];
    let mut again = steps.to_vec();
    again.extend([Open, Stat, Read, Apply, Sync]);
    let state = state_after(&model, &again);
    assert_eq!(state.durable.len(), 2);
    assert!(
        state
            .durable
            .iter()
            .all(|r| r.change_of == R1 && r.id.is_none())
    );
    // The correct daemon decodes the id at the open and applies nothing.
    let correct = OpsModel::default();
    let mut open = steps.to_vec();
    open.extend([Open, Stat, Read]);
    let state = state_after(&correct, &open);
    assert_eq!(state.daemon.view, [R1].into());
    assert_eq!(state.next_request(), None);
}

#[test]
fn answer_before_durable_answers_a_record_a_power_loss_drops() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It MUST fsync the mirror before it reports that answer, and before it removes the request
    //# from the request file.
    use OpsAction::*;
    assert_eq!(
        counterexample(OpsVariant::AnswerBeforeDurable),
        [Stat, Submit(R1), Read, Apply, Poll(R1)]
    );
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::AnswerBeforeDurable);
    let path = [
        Submit(R1),
        Stat,
        Read,
        Apply,
        Poll(R1),
        Crash { power_loss: true },
    ];
    let state = state_after(&model, &path);
    assert_eq!(state.operators[0].phase, OperatorPhase::Answered);
    assert!(state.durable.is_empty() && state.volatile.is_empty());
    // The correct operator's fsync made the record durable before the answer.
    let state = state_after(&OpsModel::default(), &path);
    assert_eq!(state.durable.len(), 1);
}

#[test]
fn prune_before_durable_loses_a_request() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It removes only requests whose id the window holds.
    use OpsAction::*;
    let path = counterexample(OpsVariant::PruneBeforeDurable);
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::PruneBeforeDurable);
    let state = state_after(&model, &path);
    // Request r2 left the file on seeing a volatile record, which the power loss dropped:
    // neither file nor mirror asks for it, and its operator waits for good.
    let r2 = RequestId(1);
    assert!(path.contains(&Prune(r2)) && path.contains(&Crash { power_loss: true }));
    assert!(!state.file.contains(&r2) && !state.visible().contains(&r2));
    assert_eq!(state.operators[1].phase, OperatorPhase::Waiting);
    assert!(!model.busy(&state));
    assert_eq!(path.len(), 14, "{path:?}");
}

#[test]
fn stamp_after_read_misses_a_request_written_between() {
    use OpsAction::*;
    assert_eq!(
        counterexample(OpsVariant::StampAfterRead),
        [Read, Submit(R1), Submit(RequestId(1)), Stat]
    );
    // The correct order: the stamp taken first, a write after it makes the stamp stale.
    let state = state_after(&OpsModel::default(), &[Stat, Read, Submit(R1)]);
    assert!(!state.daemon.stamp_fresh);
}

#[test]
fn a_retry_waits_for_a_pending_request_rather_than_adding_it_again() {
    use OpsAction::*;
    let model = OpsModel::default();
    let state = state_after(&model, &[Submit(R1), OperatorCrash(R1), Retry(R1)]);
    assert_eq!(state.file, [R1]);
    assert_eq!(state.operators[0].phase, OperatorPhase::Waiting);
    let state = state_after(
        &model,
        &[Submit(R1), Stat, Read, Apply, OperatorCrash(R1), Retry(R1)],
    );
    assert_eq!(state.operators[0].phase, OperatorPhase::Answered);
    assert_eq!(
        state.durable.len(),
        1,
        "the retry fsynced before it answered"
    );
}

#[test]
fn every_step_is_narrated_in_the_spec_words() {
    use OpsAction::*;
    assert_eq!(R1.to_string(), "r1");
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::ApplyWithoutId);
    let mut state = model.init_states().remove(0);
    let mut told = Vec::new();
    for action in counterexample(OpsVariant::ApplyWithoutId) {
        let next = model.next_state(&state, action).expect("enabled");
        told.push(model.narrate(&state, &action, &next));
        state = next;
    }
    assert_eq!(
        told[3],
        "the daemon applies r1: its record makes the change but names no id, r1 is kept in memory (volatile)"
    );
    assert_eq!(
        told[4],
        "the daemon is killed: its memory is lost, the page cache keeps 1 volatile record(s)"
    );
    let correct = OpsModel::default();
    let before = state_after(&correct, &[Submit(R1), Stat, Read, Apply]);
    let after = correct.next_state(&before, Poll(R1)).expect("enabled");
    assert_eq!(
        correct.narrate(&before, &Poll(R1), &after),
        "operator r1 reads the mirror lock-free, finds r1, fsyncs the mirror and answers; mirror durable [r1], volatile []"
    );
}

#[test]
fn variant_names_are_command_line_words() {
    assert_variant_names(&OpsVariant::ALL, OpsVariant::name, OpsVariant::from_name);
}
