//! Read-side conformance: one [`ReadOp`] vocabulary and one [`check`] that drives the production
//! crate's `parkline::read::Transcript` and the reference (`parkline_model::read`) side by side,
//! and compares every read's answer.
//!
//! The same `check` is called by the differential proptest (`tests/read/`), the fuzz target
//! and the known-bad tests, so a finding of any of them replays through all of them.
//!
//! What is compared at every read: the whole result. For an answer: the exact response text
//! (R14), the turns returned whole, the excerpt, the omitted turns (count, first, last), the
//! partial turn, the request counts, the next cursor (as text) and the characters used. For an
//! error: its kind, and for a budget error the budget that would do.
//!
//! Besides the comparison, the read requirements are asserted directly on the crate's answers,
//! so a mistake shared by the crate and the reference is still caught: R1 (the text is at most
//! `chars_max`), and along the chain of cursors the caller follows, R5 (every turn up to the
//! cursor was given, whole or as an excerpt naming its rest), R6 (no turn given twice) and R8
//! (a read with unread turns moves the cursor).

mod check;
mod compare;
mod corpus;
mod op;

pub use check::{Divergence, ReadReport, check, check_fit_rule, check_with};
pub use compare::{compare_read, compare_read_with, transcript_of};
pub use corpus::{decode_read_ops, encode_read_ops, known_bad_from_env};
pub use op::{
    ALPHABET, BUDGET_MAX, CHILD, COLLIDING_CHILD, GROW_CHARS_MAX, OTHER_CHILD, ReadOp,
    read_op_strategy, read_ops_strategy,
};
