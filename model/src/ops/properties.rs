//! The ops properties, each named by the spec id it checks (`"M17 applied at most once"`, ...),
//! and their predicates. The model lists them in `OpsModel::properties`, with the `sometimes`
//! properties that show the interesting paths are really reached.

use super::model::{OperatorPhase, OpsModel, OpsState, Record, RequestId, answered, named};

/// M17: no request's change is in the mirror twice, durable or durable and volatile together
/// (counted by the ghost request and the change of each record, so a record without an id counts
/// too).
pub const M17_AT_MOST_ONCE: &str = "M17 applied at most once";
/// M17: an operator reports its answer only when the record of its request is durable.
pub const M17_ANSWERED_DURABLE: &str = "M17 an answered request's record is durable";
/// M17 (with M7): a live daemon with no unsynced record holds as its view exactly the window
/// the durable mirror decodes to.
pub const M17_VIEW: &str = "M17 the daemon's view is the durable mirror";
/// M17, liveness stated as safety: at rest (no step enabled but crashes, a session end or a
/// second command), the durable window holds every id the request file holds, and every operator
/// reported an answer or a refusal, but one still waiting for a request that named an ended life
/// (the spec promises the application only while the session lives).
pub const M17_AT_REST: &str = "M17 at rest every request is applied and answered";
/// M17: no record of the mirror makes the change of a request that named another life (the
/// request was meant for another session of the name).
pub const M17_ONE_LIFE: &str = "M17 a request changes only the life it names";
/// M17: an operator that reports an answer reports one made for the change it asked.
pub const M17_ANSWER_CHANGE: &str = "M17 an answer is for the change asked";
/// Sometimes: the daemon appends a record after a crash of its process (judged while that
/// record is unsynced).
pub const SOMETIMES_APPLIED_AFTER_CRASH: &str = "a request is applied after a daemon crash";
/// Sometimes: a killed daemon's volatile record survives in the page cache and the open takes
/// it in (so it is not applied again; judged right after the open).
pub const SOMETIMES_KEPT_AT_OPEN: &str = "an open takes in a record a crash kept";
/// Sometimes: an operator that crashed finds its answer in the window its command reads when it
/// runs again.
pub const SOMETIMES_RETRY_ANSWERED: &str = "an operator's retry finds its answer";
/// Sometimes: every operator answered (both, at the default bounds).
pub const SOMETIMES_ALL_ANSWERED: &str = "every operator is answered";
/// Sometimes: a command read the mirror of a session that then ended, its request reached the
/// new session's file, and the daemon refused it.
pub const SOMETIMES_STALE_REFUSED: &str = "a request for an ended session is refused";
/// Sometimes: a command's submit refuses an id that names a request of another change.
pub const SOMETIMES_REUSE_REFUSED: &str = "a reused id is refused at submit";
/// Sometimes: a reused id slips past the submit (the window it read did not hold the id yet and
/// the file no longer did), and the command refuses the answer of another change it finds.
pub const SOMETIMES_REUSE_REFUSED_AT_ANSWER: &str = "a reused id is refused at the answer";

fn ids(state: &OpsState) -> impl Iterator<Item = RequestId> + '_ {
    (0..state.operators.len()).map(|n| RequestId(n as u8))
}

/// Two records of `records` answer one change of one request (a check with no allocation: it
/// runs at every state).
fn twice(records: &[&Record]) -> bool {
    let key = |r: &Record| (r.change_of, r.change);
    records
        .iter()
        .enumerate()
        .any(|(n, a)| records[n + 1..].iter().any(|b| key(a) == key(b)))
}

pub(super) fn at_most_once(_: &OpsModel, s: &OpsState) -> bool {
    let mut records: Vec<&Record> = s.durable.iter().collect();
    if twice(&records) {
        return false;
    }
    records.extend(&s.volatile);
    !twice(&records)
}

pub(super) fn answered_durable(_: &OpsModel, s: &OpsState) -> bool {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It MUST fsync the mirror before it reports that answer, and before it removes the request
    //# from the request file.
    ids(s).filter(|&id| answered(s, id)).all(|id| {
        let answer = s.operator(id).answer;
        // An answer of an ended life was durable in a mirror that no longer exists.
        answer.is_none_or(|a| {
            a.life != s.life
                || s.durable
                    .iter()
                    .any(|r| r.change_of == id && r.change == a.change)
        })
    })
}

pub(super) fn view_is_the_file(_: &OpsModel, s: &OpsState) -> bool {
    let daemon = &s.daemon;
    !daemon.alive || daemon.unsynced.is_some() || daemon.view == named(&s.durable)
}

/// The durable mirror names `id`.
fn durable_names(s: &OpsState, id: RequestId) -> bool {
    s.durable.iter().any(|r| r.id == Some(id))
}

pub(super) fn at_rest_all_answered(model: &OpsModel, s: &OpsState) -> bool {
    // An operator that has not submitted, or is down, has a step: not at rest.
    let starting = s.operators.iter().any(|o| {
        matches!(
            o.phase,
            OperatorPhase::Idle | OperatorPhase::Looked | OperatorPhase::Down
        )
    });
    let done = || {
        s.file.iter().all(|r| durable_names(s, r.id))
            && s.operators.iter().all(|o| {
                // A request of an ended life is not the new session's to apply.
                let ended = matches!(o.phase, OperatorPhase::Waiting { life } if life != s.life);
                ended || matches!(o.phase, OperatorPhase::Answered | OperatorPhase::Refused)
            })
    };
    starting || done() || model.busy(s)
}

pub(super) fn changes_only_its_life(_: &OpsModel, s: &OpsState) -> bool {
    s.durable
        .iter()
        .chain(&s.volatile)
        .all(|r| !r.made || r.named == s.life)
}

pub(super) fn answer_is_for_the_change(_: &OpsModel, s: &OpsState) -> bool {
    s.operators.iter().all(|o| {
        o.phase != OperatorPhase::Answered || o.answer.is_some_and(|a| a.change == o.change)
    })
}
