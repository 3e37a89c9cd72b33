//! Unit tests of the ops model: the pinned state count, every `sometimes` reached, every
//! known-bad variant caught for its property on the shortest path the spec's argument predicts.
//!
//! `PARKLINE_MODEL_SCALE=1` (default 0, as for the delivery model) adds the check at
//! [`OpsBounds::deep`], which `parkline check --bounds deep` runs on a schedule.

use super::*;
use crate::search::shortest_path;
use crate::test_support::{assert_variant_names, state_after};
use stateright::{Checker, HasDiscoveries, Model};

const ALWAYS: [&str; 6] = [
    M17_AT_MOST_ONCE,
    M17_ANSWERED_DURABLE,
    M17_VIEW,
    M17_AT_REST,
    M17_ONE_LIFE,
    M17_ANSWER_CHANGE,
];
const SOMETIMES: [&str; 7] = [
    SOMETIMES_APPLIED_AFTER_CRASH,
    SOMETIMES_KEPT_AT_OPEN,
    SOMETIMES_RETRY_ANSWERED,
    SOMETIMES_ALL_ANSWERED,
    SOMETIMES_STALE_REFUSED,
    SOMETIMES_REUSE_REFUSED,
    SOMETIMES_REUSE_REFUSED_AT_ANSWER,
];

const R1: RequestId = RequestId(0);
const R2: RequestId = RequestId(1);

fn scale() -> usize {
    std::env::var("PARKLINE_MODEL_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

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
    for variant in OpsVariant::ALL.into_iter().skip(1) {
        let name = variant.breaks().expect("a known-bad variant");
        let checker = OpsModel::new(OpsBounds::default(), variant)
            .checker()
            .finish_when(HasDiscoveries::AnyOf([name].into()))
            .spawn_bfs()
            .join();
        assert!(
            checker.discovery(name).is_some(),
            "{variant:?}: no counterexample for {name:?}"
        );
    }
    assert_eq!(OpsVariant::Correct.breaks(), None);
}

/// The shortest counterexample of `variant` for the property it breaks, as actions.
fn counterexample(variant: OpsVariant) -> Vec<OpsAction> {
    let model = OpsModel::new(OpsBounds::default(), variant);
    let name = variant.breaks().expect("a known-bad variant");
    let property = model.property(name);
    let path = shortest_path(&model, &property).expect("caught");
    path.into_iter().filter_map(|(_, action)| action).collect()
}

/// The shortest path of the correct model to the `sometimes` property `name`, as actions.
fn reached(name: &'static str) -> Vec<OpsAction> {
    let model = OpsModel::default();
    let path = shortest_path(&model, &model.property(name)).expect("reached");
    path.into_iter().filter_map(|(_, action)| action).collect()
}

#[test]
fn a_third_operator_holds_every_property() {
    // About two minutes in release (docs/verification.md): run here when asked
    // (`PARKLINE_MODEL_SCALE=1`); `parkline check --bounds deep` checks the same pin.
    if scale() == 0 {
        return;
    }
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
            Look(R1),
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
        Look(R1),
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
        [Stat, Look(R1), Submit(R1), Read, Apply, Poll(R1)]
    );
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::AnswerBeforeDurable);
    let path = [
        Look(R1),
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
    //# It removes only requests that name the window's life and whose id the window holds.
    use OpsAction::*;
    let path = counterexample(OpsVariant::PruneBeforeDurable);
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::PruneBeforeDurable);
    let state = state_after(&model, &path);
    // Request r2 left the file on seeing a volatile record, which the power loss dropped:
    // neither file nor mirror asks for it, and its operator waits for good in a session that
    // lives (r1's request went with the session that ended, which the spec allows).
    assert!(path.contains(&Prune(R2)) && path.contains(&Crash { power_loss: true }));
    assert!(!state.file.iter().any(|r| r.id == R2) && !state.visible().contains(&R2));
    assert_eq!(
        state.operators[1].phase,
        OperatorPhase::Waiting { life: state.life }
    );
    assert!(!model.busy(&state));
    assert_eq!(path.len(), 13, "{path:?}");
}

#[test]
fn stamp_after_read_misses_a_request_written_between() {
    use OpsAction::*;
    assert_eq!(
        counterexample(OpsVariant::StampAfterRead),
        [Read, Look(R1), Submit(R1), Look(R2), Submit(R2), Stat]
    );
    // The correct order: the stamp taken first, a write after it makes the stamp stale.
    let state = state_after(&OpsModel::default(), &[Stat, Read, Look(R1), Submit(R1)]);
    assert!(!state.daemon.stamp_fresh);
}

#[test]
fn apply_any_life_changes_the_session_that_replaced_the_one_asked() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A request that names another life than the mirror's (or a life, or none, where the
    //# mirror names none, or one) MUST be refused (answered `refused`, nothing changed): it was
    //# meant for another session of the name.
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A command reads the mirror's life with its window, before it writes the request file,
    //# and its request names that life
    use OpsAction::*;
    // The command reads the mirror of life 1; the session ends and a new one begins; the
    // request, naming life 1, lands in the new session's file.
    let straddle = [Look(R1), EndSession, Submit(R1), Stat, Read, Apply];
    assert_eq!(counterexample(OpsVariant::ApplyAnyLife), straddle);
    assert_eq!(reached(SOMETIMES_STALE_REFUSED), straddle);
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::ApplyAnyLife);
    let state = state_after(&model, &straddle);
    assert_eq!(state.life, Life(1));
    assert_eq!(state.volatile.len(), 1);
    let record = state.volatile[0];
    assert!(record.made && record.named == Life(0));
    // The correct daemon answers it `refused` and changes nothing; the operator reports that
    // answer, durable.
    let correct = OpsModel::default();
    let mut answered = straddle.to_vec();
    answered.extend([Sync, Poll(R1)]);
    let state = state_after(&correct, &answered);
    assert_eq!(state.durable.len(), 1);
    assert!(!state.durable[0].made && state.durable[0].id == Some(R1));
    assert_eq!(state.operators[0].phase, OperatorPhase::Answered);
    let before = state_after(&correct, &straddle[..5]);
    let after = correct.next_state(&before, Apply).expect("enabled");
    assert_eq!(
        correct.narrate(&before, &Apply, &after),
        "the daemon refuses r1: it names life 1, not the mirror's life 2; one record names r1 \
         and changes nothing (volatile)"
    );
}

#[test]
fn a_request_cut_by_a_session_end_waits_as_the_spec_allows() {
    use OpsAction::*;
    // A request added while the session lived goes with its request file; its operator polls
    // the new session's mirror, which never answers it. The spec promises the application only
    // while the session lives, so the state at rest holds.
    let model = OpsModel::default();
    let mut path = vec![Look(R1), Submit(R1), EndSession];
    path.extend([
        Look(R2),
        Submit(R2),
        Stat,
        Read,
        Apply,
        Sync,
        Poll(R2),
        Prune(R2),
    ]);
    path.extend([Stat, Read]);
    let state = state_after(&model, &path);
    assert!(state.file.is_empty());
    assert_eq!(
        state.operators[0].phase,
        OperatorPhase::Waiting { life: Life(0) }
    );
    assert_eq!(state.operators[1].phase, OperatorPhase::Answered);
    assert!(!model.busy(&state));
    assert!((model.property(M17_AT_REST).condition)(&model, &state));
}

#[test]
fn adopt_reused_id_reports_the_answer_of_another_change() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A command MUST refuse (`OpIdReused`, exit 2) a request whose id names a waiting or
    //# answered request of another change.
    use OpsAction::*;
    // The first command's request is answered; a second command under the same id with another
    // change reads the window and adopts that answer.
    let answered = [
        Stat,
        Look(R1),
        Submit(R1),
        Read,
        Apply,
        Poll(R1),
        Reuse(R1),
        Submit(R1),
    ];
    assert_eq!(counterexample(OpsVariant::AdoptReusedId), answered);
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::AdoptReusedId);
    let state = state_after(&model, &answered);
    let operator = &state.operators[0];
    assert_eq!(operator.phase, OperatorPhase::Answered);
    assert_eq!(operator.change, Change(1));
    assert_eq!(operator.answer.map(|a| a.change), Some(Change(0)));
    // The correct command refuses at its submit, answered or waiting, and writes nothing.
    let correct = OpsModel::default();
    let state = state_after(&correct, &answered);
    assert_eq!(state.operators[0].phase, OperatorPhase::Refused);
    assert_eq!(state.event, Some(Event::ReuseRefused));
    let waiting = [
        Look(R1),
        Submit(R1),
        OperatorCrash(R1),
        Reuse(R1),
        Submit(R1),
    ];
    assert_eq!(reached(SOMETIMES_REUSE_REFUSED), waiting);
    let before = state_after(&correct, &waiting[..4]);
    assert_eq!(
        correct.submitted(&before, R1),
        Some(Submitted::Refused { answered: false })
    );
    let after = correct.next_state(&before, Submit(R1)).expect("enabled");
    assert_eq!(after.file, before.file);
    assert_eq!(after.operators[0].phase, OperatorPhase::Refused);
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# The same change again under the same id waits for, or reports, that request's answer.
    // The same change again adopts: the waiting request (a retry), or the answer.
    let state = state_after(
        &correct,
        &[Look(R1), Submit(R1), OperatorCrash(R1), Look(R1)],
    );
    assert_eq!(correct.submitted(&state, R1), Some(Submitted::Pending));
    assert_eq!(
        reached(SOMETIMES_RETRY_ANSWERED),
        [
            Stat,
            Look(R1),
            Submit(R1),
            Read,
            Apply,
            OperatorCrash(R1),
            Look(R1),
            Submit(R1)
        ]
    );
}

#[test]
fn answer_any_change_reports_the_answer_a_stale_window_let_through() {
    use OpsAction::*;
    // r1's first command crashes with its request waiting; its second command (another change)
    // reads the window before the daemon applies the first; r2's command, whose window holds
    // r1, drops it from the file; r1's second request is added, and the daemon skips it (its
    // id is applied). The poll finds r1 answered for the first change.
    let race = [
        Stat,
        Look(R1),
        Submit(R1),
        Read,
        OperatorCrash(R1),
        Reuse(R1),
        Apply,
        Look(R2),
        Submit(R2),
        Submit(R1),
        Poll(R1),
    ];
    assert_eq!(counterexample(OpsVariant::AnswerAnyChange), race);
    assert_eq!(reached(SOMETIMES_REUSE_REFUSED_AT_ANSWER), race);
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::AnswerAnyChange);
    let before = state_after(&model, &race[..9]);
    assert_eq!(model.submitted(&before, R1), Some(Submitted::Added));
    let state = state_after(&model, &race);
    assert_eq!(state.operators[0].phase, OperatorPhase::Answered);
    assert_eq!(state.operators[0].answer.map(|a| a.change), Some(Change(0)));
    // The correct command compares the answer's change with its own and refuses.
    let state = state_after(&OpsModel::default(), &race);
    assert_eq!(state.operators[0].phase, OperatorPhase::Refused);
    assert_eq!(state.event, Some(Event::ReuseRefusedAtAnswer));
}

#[test]
fn drop_any_life_drops_a_request_of_the_new_session() {
    use OpsAction::*;
    let path = counterexample(OpsVariant::DropAnyLife);
    // r1's command read the window of life 1, which holds r2; the session ends; r2 runs again
    // in life 2 and adds r2; r1's submit drops it, by an id of the old window.
    assert_eq!(
        path[..12],
        [
            Stat,
            Look(R2),
            Submit(R2),
            Read,
            Apply,
            Sync,
            Look(R1),
            EndSession,
            OperatorCrash(R2),
            Look(R2),
            Submit(R2),
            Submit(R1)
        ]
    );
    let model = OpsModel::new(OpsBounds::default(), OpsVariant::DropAnyLife);
    let state = state_after(&model, &path);
    assert!(!state.file.iter().any(|r| r.id == R2));
    assert_eq!(
        state.operators[1].phase,
        OperatorPhase::Waiting { life: Life(1) }
    );
    // The correct submit drops only requests of the life its window is of.
    let correct = OpsModel::default();
    let state = state_after(&correct, &path[..12]);
    assert_eq!(
        state.file,
        [
            Request {
                id: R2,
                change: Change(0),
                life: Life(1)
            },
            Request {
                id: R1,
                change: Change(0),
                life: Life(0)
            }
        ]
    );
}

#[test]
fn a_retry_waits_for_a_pending_request_rather_than_adding_it_again() {
    use OpsAction::*;
    let model = OpsModel::default();
    let state = state_after(
        &model,
        &[
            Look(R1),
            Submit(R1),
            OperatorCrash(R1),
            Look(R1),
            Submit(R1),
        ],
    );
    assert_eq!(state.file.len(), 1);
    assert_eq!(
        state.operators[0].phase,
        OperatorPhase::Waiting { life: Life(0) }
    );
    let state = state_after(
        &model,
        &[
            Look(R1),
            Submit(R1),
            Stat,
            Read,
            Apply,
            OperatorCrash(R1),
            Look(R1),
            Submit(R1),
        ],
    );
    assert_eq!(state.operators[0].phase, OperatorPhase::Answered);
    assert_eq!(state.durable.len(), 1, "the look fsynced before the answer");
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
        told[4],
        "the daemon applies r1: its record makes the change but names no id, r1 is kept in memory (volatile)"
    );
    assert_eq!(
        told[5],
        "the daemon is killed: its memory is lost, the page cache keeps 1 volatile record(s)"
    );
    let correct = OpsModel::default();
    let before = state_after(&correct, &[Look(R1), Submit(R1), Stat, Read, Apply]);
    let after = correct.next_state(&before, Poll(R1)).expect("enabled");
    assert_eq!(
        correct.narrate(&before, &Poll(R1), &after),
        "operator r1 reads the mirror lock-free, finds r1, fsyncs the mirror and answers; mirror durable [r1], volatile []"
    );
    // Every step of every shortest counterexample and goal is told, none in the fallbacks.
    let mut paths: Vec<(OpsModel, Vec<OpsAction>)> = OpsVariant::ALL
        .into_iter()
        .skip(1)
        .map(|v| (OpsModel::new(OpsBounds::default(), v), counterexample(v)))
        .collect();
    paths.extend(SOMETIMES.map(|name| (OpsModel::default(), reached(name))));
    for (model, path) in paths {
        let mut state = model.init_states().remove(0);
        for action in path {
            let next = model.next_state(&state, action).expect("enabled");
            let text = model.narrate(&state, &action, &next);
            assert!(
                text.starts_with("the ") || text.starts_with("operator "),
                "{text}"
            );
            assert!(!text.ends_with("submits") && text != "the daemon applies a request");
            state = next;
        }
    }
    let told = |steps: &[OpsAction]| {
        let before = state_after(&correct, &steps[..steps.len() - 1]);
        let action = steps[steps.len() - 1];
        let after = correct.next_state(&before, action).expect("enabled");
        correct.narrate(&before, &action, &after)
    };
    assert_eq!(
        told(&[Look(R1), Submit(R1), EndSession]),
        "the session ends: the holder removes the request file, then the mirror; a new session \
         of the name creates its mirror, with life 2; the operators of r1 wait for an answer of \
         the ended session"
    );
    assert_eq!(
        told(&[Look(R1), Submit(R1), OperatorCrash(R1), Reuse(R1)]),
        "operator r1 runs a second command under id r1, asking change b: it reads the mirror \
         lock-free: life 1, window nothing"
    );
    assert_eq!(
        told(&[
            Look(R1),
            Submit(R1),
            OperatorCrash(R1),
            Reuse(R1),
            Submit(R1)
        ]),
        "operator r1's command asks change b, but r1 names a waiting request of another change: \
         refused (the id names another change), nothing written"
    );
}

#[test]
fn variant_names_are_command_line_words() {
    assert_variant_names(&OpsVariant::ALL, OpsVariant::name, OpsVariant::from_name);
}
