//! The delivery protocol of parkline: parked completion lines delivered as one batch turn per
//! boundary, crash-safe, with per-request notified events, failures, dead letters and a
//! deterministic budget split.
//!
//! Source: Defect 1 of the seed (`spec/seed.md`, "Parked completion notifications replay one
//! turn each") as specified in `spec/delivery.md` (requirements D1..D23, section 3 "Protocol as a
//! state machine") and the delivery contract of `ARCHITECTURE.md`.
//!
//! Every item is re-exported here, so users name `parkline_model::delivery::Reference` and never
//! the file it lives in. The files, in reading order:
//!
//! 1. `reference.rs`, the plain reference: [`split`], [`turn_text`] and its reader
//!    [`parse_turn`], [`notified`] and [`Reference`], the durable and volatile state of a correct
//!    queue with `park`, `park_all`, `boundary`, `settle`, `redrive` and `crash`. It does no I/O; the differential tests and the fuzz targets use it as
//!    their oracle;
//! 2. `model.rs`, [`DeliveryModel`], a stateright [`Model`](stateright::Model) whose transitions
//!    call that same [`Reference`] (one reference model, three uses: exhaustive check, proptest
//!    oracle, fuzz oracle), with the daemon's volatile phase, what the parent was handed, the
//!    notified log and ghost history; `bounds.rs`, the [`Bounds`] it runs at, with the unique
//!    state counts pinned;
//! 3. `properties.rs`, the properties, each named by the spec id it checks (`"D9 no loss"`, ...);
//! 4. `variants.rs`, the known-bad [`Variant`]s, each changing only the step it breaks, which the
//!    tests show are caught for the right property;
//! 5. `narrate.rs`, a step of a path in the spec's words, for counterexamples.

mod bounds;
mod model;
mod narrate;
mod properties;
mod reference;
mod snapshot;
#[cfg(test)]
mod tests;
mod variants;

pub use bounds::{
    Bounds, CHECK_UNIQUE_STATES, CRASH_UNIQUE_STATES, DEEP_UNIQUE_STATES, DEFAULT_UNIQUE_STATES,
    GROUP_UNIQUE_STATES, LOST_PARK_UNIQUE_STATES, REMEMBER_UNIQUE_STATES,
};
pub use model::{
    AckRecord, Action, BoundaryRecord, CloseRecord, DeliveryModel, DeliveryState, DiscardRecord,
    Log, Member, Phase, RedriveRecord, RememberRecord, SettleRecord,
};
pub use properties::{
    D1, D2, D3, D3_REMEMBERED, D5, D6, D8, D9, D10, D11, D12, D13, D14, D15, D15_QUIESCENT, D17,
    D18, DISCARD, FRAMING, GROUP_ACK, GROUP_BOUNDARY, GROUP_PARK, GROUP_REFUSAL, HANDOVER_COUNT,
    REDRIVE, REPEAT_BOUND, SEEN, SNAPSHOT, SOMETIMES_CLOSED, SOMETIMES_COLLECTED_DELIVERED,
    SOMETIMES_CRASH_MID_BATCH, SOMETIMES_CUT_HAND_OVER_COUNTED, SOMETIMES_DEAD, SOMETIMES_DISCARD,
    SOMETIMES_GROUP_REFUSAL, SOMETIMES_GROUP_SHARED, SOMETIMES_LATE_LINE, SOMETIMES_OVERSIZED,
    SOMETIMES_REDRIVEN_HANDED, SOMETIMES_REMEMBERED_EVICTED, SOMETIMES_REPEAT, SOMETIMES_RETRY,
    SOMETIMES_RETRY_REMEMBERED, SOMETIMES_SEEN, SOMETIMES_SPLIT, SOMETIMES_TORN_GROUP,
    SOMETIMES_TWO_LEFT,
};
pub use reference::{
    Mirror, ParsedTurn, REPEATS_MAX, RefBatch, RefEnded, RefError, RefItem, RefNotified, RefParked,
    RefRemembered, RefSettlement, Reference, TurnError, notified, parse_turn, split, turn_text,
};
pub use snapshot::{compacted, snapshot_keeps};
pub use variants::Variant;
