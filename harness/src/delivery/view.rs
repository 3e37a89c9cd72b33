//! The one set of views of delivery: what the checks compare, what the drive protocol prints and
//! what the kill -9 test reads back are the crate's own types (`parkline::Item`, `Batch`,
//! `Notified`, `Settlement`, `mirror::MirrorState`, whose serde `parkline inspect --json` prints
//! too), plus [`HandOver`], a batch with the observables a boundary hands over, and [`Effect`],
//! what a queue op that returned did. The reference's values enter that set here, and only here.
//!
//! The reference's turn text and notified events are its own ([`hand_over_of_ref`] calls
//! `parkline_model::delivery::turn_text` and `notified`), never the crate's recomputed, so
//! comparing a crate [`HandOver`] with a reference one compares two implementations of D4 and D5.

use parkline::mirror::MirrorState;
use parkline::{Attempt, Batch, BatchId, Item, Line, Notified, RequestId, Seq, Settlement};
use parkline_model::delivery::{
    Mirror, RefBatch, RefItem, RefNotified, RefSettlement, Reference, notified, turn_text,
};
use serde::{Deserialize, Serialize};

/// A batch as a boundary hands it over: the batch, its repeat mark, the exact turn text (D4) and
/// one notified event per item (D5). Serialised as the batch's fields followed by `repeat`,
/// `text` and `notified` (spec/drive.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandOver {
    /// The batch (id, attempt, items, remaining).
    #[serde(flatten)]
    pub batch: Batch,
    /// `attempt > 1` (D10).
    pub repeat: bool,
    /// The turn text handed to the parent.
    pub text: String,
    /// The notified events, in item order.
    pub notified: Vec<Notified>,
}

impl HandOver {
    /// What the crate hands over for `batch`: its own text and notified events.
    pub fn of(batch: Batch) -> Self {
        HandOver {
            repeat: batch.is_repeat(),
            text: batch.text(),
            notified: batch.notified(),
            batch,
        }
    }
}

/// What a queue op that returned `Ok` did (the drive protocol's acknowledgements).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// `park` returned: the line is durable with this seq (D16).
    Parked {
        /// Its seq.
        seq: Seq,
    },
    /// `boundary` returned: the batch to hand over (durable, D10), or none.
    Batch {
        /// The hand-over, if any.
        batch: Option<HandOver>,
    },
    /// `settle` returned: durable.
    Settled(Settlement),
    /// `park_all` returned: the group is durable with these seqs (D22).
    ParkedAll {
        /// Their seqs, in order.
        seqs: Vec<Seq>,
    },
    /// `redrive` or `redrive_all` returned: these dead letters are parked again (D21).
    Redriven {
        /// The seqs moved, in order.
        seqs: Vec<Seq>,
    },
}

/// The reference's item as the crate's type.
pub fn item_of_ref(item: &RefItem) -> Item {
    Item {
        seq: Seq(item.seq),
        request: RequestId(item.request),
        line: Line::from(item.line.as_str()),
        failures: item.failures,
        handed: item.handed,
    }
}

/// The reference's batch as the crate's type.
pub fn batch_of_ref(batch: &RefBatch) -> Batch {
    Batch {
        id: BatchId(batch.id),
        attempt: Attempt(batch.attempt),
        items: batch.items.iter().map(item_of_ref).collect(),
        remaining: batch.remaining,
        seen: batch.seen,
    }
}

fn notified_of_ref(event: &RefNotified) -> Notified {
    Notified {
        request: RequestId(event.request),
        seq: Seq(event.seq),
        batch: BatchId(event.batch),
        attempt: Attempt(event.attempt),
        repeat: event.repeat,
        handed: event.handed,
    }
}

/// What the reference hands over for `batch`: its own turn text and notified events.
pub fn hand_over_of_ref(batch: &RefBatch) -> HandOver {
    HandOver {
        batch: batch_of_ref(batch),
        repeat: batch.is_repeat(),
        text: turn_text(batch),
        notified: notified(batch).iter().map(notified_of_ref).collect(),
    }
}

/// The reference's settlement as the crate's type.
pub fn settlement_of_ref(settlement: &RefSettlement) -> Settlement {
    let seqs = |seqs: &[u64]| seqs.iter().copied().map(Seq).collect();
    Settlement {
        delivered: seqs(&settlement.delivered),
        failed: seqs(&settlement.failed),
        dead: seqs(&settlement.dead),
    }
}

/// The reference's durable mirror as the crate's type.
pub fn mirror_state_of(mirror: &Mirror) -> MirrorState {
    MirrorState {
        parked: mirror.parked.iter().map(item_of_ref).collect(),
        in_flight: mirror.in_flight.as_ref().map(batch_of_ref),
        dead_letters: mirror.dead.iter().map(item_of_ref).collect(),
        next_seq: Seq(mirror.next_seq),
        next_batch: BatchId(mirror.next_batch),
    }
}

/// The reference's state (its durable mirror) as the crate's type.
pub fn state_of_ref(reference: &Reference) -> MirrorState {
    mirror_state_of(reference.mirror())
}
