//! Operator requests to a live session: an operator command adds a request to the session's
//! request file `<name>.ops`, the daemon holding the mirror's lock applies it as one record that
//! makes the change and names the request's id, and the operator finds its answer by reading the
//! mirror lock-free.
//!
//! Source: `spec/mirror.md`, M17 "Operator requests to a live session" (with M7's atomic
//! records, M10's fsync at open and M13's lock-free reads).
//!
//! Every item is re-exported here, so users name `parkline_model::ops::OpsModel` and never the
//! file it lives in. The files, in reading order:
//!
//! 1. `model.rs`, [`OpsModel`], a stateright [`Model`](stateright::Model): the mirror (durable
//!    and volatile records), the request file, the daemon's memory (its view of the applied ids,
//!    the requests it last read, its stat stamp) and two operators, each with one request of its
//!    own id, with crashes of both and ghost fields for the properties; `bounds.rs`, the
//!    [`OpsBounds`] it runs at, with the unique state count pinned;
//! 2. `properties.rs`, the properties, each named by the spec id it checks (`"M17 applied at
//!    most once"`, ...);
//! 3. `variants.rs`, the known-bad [`OpsVariant`]s, each changing only the step it breaks, which
//!    the tests (`tests.rs`) show are caught for the right property;
//! 4. `narrate.rs`, a step of a path in the spec's words, for counterexamples.
//!
//! What the model leaves out: the dead letters a request changes (a record is "the change"), the
//! verbs, the request file's parse failures, the one-second re-read of the file (the stat stamp
//! alone decides) and the window's bound of 64 (at two requests the window never evicts; the
//! spec's argument that 64 pending and 64 remembered suffice is not checked here).

mod bounds;
mod model;
mod narrate;
mod properties;
#[cfg(test)]
mod tests;
mod variants;

pub use bounds::{OPS_DEEP_UNIQUE_STATES, OPS_UNIQUE_STATES, OpsBounds};
pub use model::{
    Daemon, Operator, OperatorPhase, OpsAction, OpsModel, OpsState, Record, RequestId,
};
pub use properties::{
    M17_ANSWERED_DURABLE, M17_AT_MOST_ONCE, M17_AT_REST, M17_VIEW, SOMETIMES_ALL_ANSWERED,
    SOMETIMES_APPLIED_AFTER_CRASH, SOMETIMES_KEPT_AT_OPEN, SOMETIMES_RETRY_ANSWERED,
};
pub use variants::OpsVariant;
