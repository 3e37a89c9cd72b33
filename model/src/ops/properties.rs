//! The ops properties, each named by the spec id it checks (`"M17 applied at most once"`, ...),
//! and their predicates. The model lists them in `OpsModel::properties`, with the `sometimes`
//! properties that show the interesting paths are really reached.

use super::model::{OpsModel, OpsState, RequestId, answered, named};

/// M17: no request's change is in the mirror twice, durable or durable and volatile together
/// (counted by the ghost request of each record, so a record without an id counts too).
pub const M17_AT_MOST_ONCE: &str = "M17 applied at most once";
/// M17: an operator reports its answer only when the record of its request is durable.
pub const M17_ANSWERED_DURABLE: &str = "M17 an answered request's record is durable";
/// M17 (with M7): a live daemon with no unsynced record holds as its view exactly the window
/// the durable mirror decodes to.
pub const M17_VIEW: &str = "M17 the daemon's view is the durable mirror";
/// M17, liveness stated as safety: at rest (no step enabled but crashes), every request an
/// operator added is applied and durable, and every operator answered.
pub const M17_AT_REST: &str = "M17 at rest every request is applied and answered";
/// Sometimes: the daemon applies a request in a life after a crash.
pub const SOMETIMES_APPLIED_AFTER_CRASH: &str = "a request is applied after a daemon crash";
/// Sometimes: a killed daemon's volatile record survives in the page cache and the open takes
/// it in (so it is not applied again).
pub const SOMETIMES_KEPT_AT_OPEN: &str = "an open takes in a record a crash kept";
/// Sometimes: an operator that crashed finds its answer in the mirror when it runs again.
pub const SOMETIMES_RETRY_ANSWERED: &str = "an operator's retry finds its answer";
/// Sometimes: every operator answered (both, at the default bounds).
pub const SOMETIMES_ALL_ANSWERED: &str = "every operator is answered";

/// How many records of `records` make the change of `id`.
fn applied(records: impl Iterator<Item = RequestId>, id: RequestId) -> usize {
    records.filter(|r| *r == id).count()
}

fn ids(state: &OpsState) -> impl Iterator<Item = RequestId> + '_ {
    (0..state.operators.len()).map(|n| RequestId(n as u8))
}

pub(super) fn at_most_once(_: &OpsModel, s: &OpsState) -> bool {
    let durable = || s.durable.iter().map(|r| r.change_of);
    let all = || durable().chain(s.volatile.iter().map(|r| r.change_of));
    ids(s).all(|id| applied(durable(), id) <= 1 && applied(all(), id) <= 1)
}

pub(super) fn answered_durable(_: &OpsModel, s: &OpsState) -> bool {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It MUST fsync the mirror before it reports that answer, and before it removes the request
    //# from the request file.
    ids(s)
        .filter(|&id| answered(s, id))
        .all(|id| s.durable.iter().any(|r| r.change_of == id))
}

pub(super) fn view_is_the_file(_: &OpsModel, s: &OpsState) -> bool {
    let daemon = &s.daemon;
    !daemon.alive || daemon.unsynced.is_some() || daemon.view == named(&s.durable)
}

pub(super) fn at_rest_all_answered(model: &OpsModel, s: &OpsState) -> bool {
    if model.busy(s) {
        return true;
    }
    ids(s).all(|id| {
        let operator = &s.operators[usize::from(id.0)];
        let applied = s.durable.iter().any(|r| r.change_of == id);
        (!operator.submitted || applied) && answered(s, id)
    })
}
