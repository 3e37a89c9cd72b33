//! Operator requests to a live session: an operator command reads the mirror's life and window,
//! adds a request naming that life to the session's request file `<name>.ops`, the daemon
//! holding the mirror's lock applies it as one record that makes the change and names the
//! request's id (or refuses it, changing nothing, when it names another life), and the operator
//! finds its answer by reading the mirror lock-free.
//!
//! Source: `spec/mirror.md`, M17 "Operator requests to a live session" (with M7's atomic
//! records, M10's fsync at open and M13's lock-free reads), its paragraphs "A request names its
//! session's life" and "An id names one change" included.
//!
//! Every item is re-exported here, so users name `parkline_model::ops::OpsModel` and never the
//! file it lives in. The files, in reading order:
//!
//! 1. `model.rs`, [`OpsModel`], a stateright [`Model`](stateright::Model): the mirror (its life,
//!    durable and volatile records), the request file, the daemon's memory (its view of the
//!    applied ids, the requests it last read, its stat stamp), the session's end and a new life
//!    of the same name, and two operators, each with an id of its own, whose commands look (the
//!    life and the window) before they submit, with crashes of both, a second command under an
//!    id with another change, and ghost fields for the properties; `bounds.rs`, the
//!    [`OpsBounds`] it runs at, with the unique state counts pinned;
//! 2. `properties.rs`, the properties, each named by the spec id it checks (`"M17 applied at
//!    most once"`, ...);
//! 3. `variants.rs`, the known-bad [`OpsVariant`]s, each changing only the step it breaks, which
//!    the tests (`tests.rs`) show are caught for the right property;
//! 4. `narrate.rs`, a step of a path in the spec's words, for counterexamples.
//!
//! What the model leaves out: the dead letters a request changes (a record is "the change", a
//! change is a number per operator, so two ids never ask the same change and the adoption of a
//! waiting request of the same change under another id is not checked), the verbs, the request
//! file's parse failures and its bounds (64 waiting requests, `REQUEST_FILE_BYTES_MAX`), the
//! one-second re-read of the file (the stat stamp alone decides), the window's bound of 64 (at
//! three requests the window never evicts; the spec's argument that 64 pending and 64 remembered
//! suffice is not checked here), mirrors and requests without a life (a legacy mirror, a request
//! written by hand), a command whose `--wait` runs out (it waits until it crashes), a crash of a
//! command between its look and its submit (it has written nothing), and a session end other than
//! the holder's own between two of its steps (`Queue::remove` and the next session's creation
//! are one step; `parkline remove` of a session whose daemon is down is not modeled). A command
//! whose look finds its id answered for its change reports that answer, which its look made
//! durable; the crate reads the mirror once more, which in one life finds the same answer.

mod bounds;
mod model;
mod narrate;
mod properties;
#[cfg(test)]
mod tests;
mod variants;

pub use bounds::{OPS_DEEP_UNIQUE_STATES, OPS_UNIQUE_STATES, OpsBounds};
pub use model::{
    Answer, Change, Daemon, Event, Life, Look, Operator, OperatorPhase, OpsAction, OpsModel,
    OpsState, Record, Request, RequestId, Submitted,
};
pub use properties::{
    M17_ANSWER_CHANGE, M17_ANSWERED_DURABLE, M17_AT_MOST_ONCE, M17_AT_REST, M17_ONE_LIFE, M17_VIEW,
    SOMETIMES_ALL_ANSWERED, SOMETIMES_APPLIED_AFTER_CRASH, SOMETIMES_KEPT_AT_OPEN,
    SOMETIMES_RETRY_ANSWERED, SOMETIMES_REUSE_REFUSED, SOMETIMES_REUSE_REFUSED_AT_ANSWER,
    SOMETIMES_STALE_REFUSED,
};
pub use variants::OpsVariant;
