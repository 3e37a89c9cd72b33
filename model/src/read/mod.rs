//! The read side of parkline: budgeted `agent_read` windows over a child's growing transcript,
//! and a caller that follows `since:<cursor>` reads under a small budget.
//!
//! Source: Defect 2 of the seed (`spec/seed.md`, "agent_read re-sends turns the caller already
//! holds") as specified in `spec/read.md` (requirements R1..R16).
//!
//! Every item is re-exported here, so users name `parkline_model::read::RefTranscript` and never
//! the file it lives in. The files, in reading order:
//!
//! 1. the plain reference: `types.rs`, [`RefTranscript`], [`RefReadRequest`], [`RefWindow`] and
//!    [`RefReadError`]; `cursor.rs`, [`cursor_text`] and [`parse_cursor`]; `reference.rs`,
//!    [`read`], the answer to one read written the naive way (try candidate answers one element
//!    at a time and keep each that fits, sized by counting the lengths of their parts), and
//!    [`read_checking_fit`], the same deciding by rendering every candidate in full, which shows
//!    that the counted size is the rendered one. It does no I/O; the differential check of the
//!    production crate (`parkline::read`) uses it as its oracle;
//! 2. `model.rs`, [`ReadModel`], a stateright [`Model`](stateright::Model): the child works (its
//!    partial turn grows, turns complete, a request opens and terminates) while a caller reads
//!    with its cursor under one of a few small budgets, with ghost fields recording what the
//!    caller was given; `bounds.rs`, the [`ReadBounds`] it runs at, with the unique state count
//!    pinned;
//! 3. `properties.rs`, the properties, each named by the spec id it checks (`"R5 no skip"`, ...);
//! 4. `variants.rs`, the known-bad [`ReadVariant`]s, each changing only the step it breaks, which
//!    the tests (`tests.rs`) show are caught for the right property;
//! 5. `narrate.rs`, a step of a path in the spec's words, for counterexamples.

mod bounds;
mod cursor;
mod model;
mod narrate;
mod properties;
mod reference;
#[cfg(test)]
mod tests;
mod types;
mod variants;

pub use bounds::{DEEP_UNIQUE_STATES, DEFAULT_UNIQUE_STATES, ReadBounds};
pub use cursor::{
    RefCursor, RefSeen, crc32, crc64, cursor_text, cursor_text_of, parse_cursor, v1_cursor_text,
    valid_id,
};
pub use model::{LastRead, MODEL_CHILD, ReadAction, ReadModel, ReadState};
pub use properties::{
    R1, R5, R6, R7, R8, R15, R16, SOMETIMES_DIVERGED, SOMETIMES_NOTHING_NEW, SOMETIMES_OMITTED,
    SOMETIMES_OVERSIZED, SOMETIMES_PARTIAL_CUT, SOMETIMES_PARTIAL_NEW, SOMETIMES_PARTIAL_REPLACED,
};
pub use reference::{read, read_checking_fit, read_variant};
pub use types::{
    RefExcerpt, RefHistory, RefPartial, RefReadError, RefReadRequest, RefRequest, RefSelector,
    RefTranscript, RefTurn, RefWindow,
};
pub use variants::ReadVariant;
