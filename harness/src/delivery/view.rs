//! The one set of views of delivery: what the checks compare, what the drive protocol prints and
//! what the kill -9 test reads back are the crate's own types (`parkline::Item`, `Batch`,
//! `Notified`, `Settlement`, `mirror::MirrorState`, whose serde `parkline inspect --json` prints
//! too), plus [`HandOver`], a batch with the observables a boundary hands over, and [`Effect`],
//! what a queue op that returned did. The reference's values enter that set here, and only here.
//!
//! The reference's turn text and notified events are its own ([`hand_over_of_ref`] calls
//! `parkline_model::delivery::turn_text` and `notified`), never the crate's recomputed, so
//! comparing a crate [`HandOver`] with a reference one compares two implementations of D4 and D5.

use std::collections::BTreeMap;

use parkline::mirror::MirrorState;
use parkline::{
    Attempt, Batch, BatchId, Ended, Item, Line, Notified, Parked, Remembered, RequestId, Seq,
    Settlement,
};
use parkline_model::delivery::{
    Mirror, RefBatch, RefEnded, RefItem, RefNotified, RefParked, RefRemembered, RefSettlement,
    Reference, notified, turn_text,
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
    /// `park` returned: the line is durable with this seq (D16), or its request is remembered
    /// as `ended` and nothing was written (D3).
    Parked {
        /// Its seq.
        seq: Seq,
        /// How the remembered line ended; absent when the line is held.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended: Option<EndedIn>,
    },
    /// `boundary` returned: the batch to hand over (durable, D10), or none.
    Batch {
        /// The hand-over, if any.
        batch: Option<HandOver>,
    },
    /// `settle` returned: durable.
    Settled(Settlement),
    /// `park_all` returned: the group's new lines are durable with these seqs (D22), each line
    /// answered as a park of it alone (D3).
    ParkedAll {
        /// Their seqs, in order.
        seqs: Vec<Seq>,
        /// How each remembered line ended, in order (`None` for a held line); absent when every
        /// line is held.
        #[serde(default, skip_serializing_if = "all_held")]
        ended: Vec<Option<EndedIn>>,
    },
    /// `redrive` or `redrive_all` returned: these dead letters are parked again (D21).
    Redriven {
        /// The seqs moved, in order.
        seqs: Vec<Seq>,
    },
    /// `discard` or `discard_all` returned: these dead letters left the mirror for good (D8).
    Discarded {
        /// The seqs removed, in order.
        seqs: Vec<Seq>,
    },
    /// `idle` returned: what it wrote, if anything, is durable.
    Idle,
    /// Every park of a `park_concurrently` returned: each member's answer, in item order.
    ParkedConcurrently {
        /// The members' answers, in the order of the op's items.
        answers: Vec<Member>,
    },
}

/// How a remembered request's line ended, as a park of it again answers (D3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndedIn {
    /// Settled delivered in this batch.
    Delivered {
        /// The batch.
        batch: BatchId,
    },
    /// Discarded as a dead letter (D8).
    Discarded,
}

fn all_held(ended: &[Option<EndedIn>]) -> bool {
    ended.iter().all(Option::is_none)
}

/// A crate park's answer as the effect's words: its seq, and how a remembered line ended.
pub fn answer_of(parked: Parked) -> (Seq, Option<EndedIn>) {
    match parked {
        Parked::Delivered { seq, batch } => (seq, Some(EndedIn::Delivered { batch })),
        Parked::Discarded { seq } => (seq, Some(EndedIn::Discarded)),
        other => (other.seq(), None),
    }
}

/// A reference park's answer in the same words.
pub fn answer_of_ref(parked: RefParked) -> (Seq, Option<EndedIn>) {
    match parked {
        RefParked::Held(seq) => (Seq(seq), None),
        RefParked::Remembered(entry) => (Seq(entry.seq), Some(ended_of_ref(entry.ended))),
    }
}

fn ended_of_ref(ended: RefEnded) -> EndedIn {
    match ended {
        RefEnded::Delivered { batch } => EndedIn::Delivered {
            batch: BatchId(batch),
        },
        RefEnded::Discarded => EndedIn::Discarded,
    }
}

/// The effect of a `park_all` whose lines were answered `answers`, in order.
pub fn parked_all(answers: impl IntoIterator<Item = (Seq, Option<EndedIn>)>) -> Effect {
    let (seqs, mut ended): (Vec<Seq>, Vec<Option<EndedIn>>) = answers.into_iter().unzip();
    // As the protocol reads it back: no list when every line is held.
    if all_held(&ended) {
        ended.clear();
    }
    Effect::ParkedAll { seqs, ended }
}

/// What one member of a `park_concurrently` (one thread's `SharedQueue::park`) returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Member {
    /// The line is durable with this seq (D16), or a retry got the seq its line has (D3).
    Parked(Seq),
    /// A retry of a line that left the mirror: remembered as `ended` (D3).
    Remembered {
        /// The line's seq.
        seq: Seq,
        /// How it ended.
        ended: EndedIn,
    },
    /// The park failed: the error's kind, as `parkline::ErrorKind`'s `Debug` (`InvalidLine`,
    /// `RequestConflict`, `Io` for a failed write or fsync of its group, `Poisoned`, ...).
    Error(String),
}

impl Member {
    /// Whether this answer is a failure of the handle (its group's write or fsync failed, or an
    /// earlier one poisoned it) rather than the member's own refusal.
    pub fn is_failure(&self) -> bool {
        matches!(self, Member::Error(kind) if kind == "Io" || kind == "Poisoned")
    }
}

/// The reference's item as the crate's type.
pub fn item_of_ref(item: &RefItem) -> Item {
    Item::new(
        Seq(item.seq),
        RequestId(item.request),
        Line::from(item.line.as_str()),
    )
    .with_failures(item.failures)
    .with_handed(item.handed)
}

/// The reference's batch as the crate's type.
pub fn batch_of_ref(batch: &RefBatch) -> Batch {
    Batch::new(
        BatchId(batch.id),
        Attempt(batch.attempt),
        batch.items.iter().map(item_of_ref).collect(),
        batch.remaining,
    )
    .with_seen(batch.seen)
}

fn notified_of_ref(event: &RefNotified) -> Notified {
    let notified = Notified::new(
        RequestId(event.request),
        Seq(event.seq),
        BatchId(event.batch),
        Attempt(event.attempt),
        event.handed,
    );
    // The reference's repeat mark is its own (D5); the crate's follows from the attempt.
    let mut notified = notified;
    notified.repeat = event.repeat;
    notified
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
    Settlement::new(
        seqs(&settlement.delivered),
        seqs(&settlement.failed),
        seqs(&settlement.dead),
    )
}

/// The reference's durable mirror as the crate's type.
pub fn mirror_state_of(mirror: &Mirror) -> MirrorState {
    MirrorState {
        parked: mirror.parked.iter().map(item_of_ref).collect(),
        in_flight: mirror.in_flight.as_ref().map(batch_of_ref),
        dead_letters: mirror.dead.iter().map(item_of_ref).collect(),
        next_seq: Seq(mirror.next_seq),
        next_batch: BatchId(mirror.next_batch),
        cap: mirror.cap,
        remembered: mirror.remembered.iter().map(remembered_of_ref).collect(),
        memory: 0,
        // The harness drives no operator request: M17 is checked by the ops model and its tests.
        ops: Default::default(),
        // The reference has no session life: `state_matches` compares the delivery state.
        life: None,
    }
}

/// The reference's window entry as the crate's type.
pub fn remembered_of_ref(entry: &RefRemembered) -> Remembered {
    let (batch, end) = match entry.ended {
        RefEnded::Delivered { batch } => (Some(BatchId(batch)), Ended::Delivered),
        RefEnded::Discarded => (None, Ended::Discarded),
    };
    Remembered::new(
        RequestId(entry.request),
        entry.crc,
        Seq(entry.seq),
        batch,
        end,
    )
}

/// Whether the crate's `state` is the reference's durable state (times aside: the reference has
/// none; the harness checks them on its own, D24).
pub fn is_state_of(state: &MirrorState, reference: &Reference) -> bool {
    state_is_ref(state, reference.mirror(), &mut SameLines::default())
}

/// The reference's state (its durable mirror) as the crate's type, with its window's size.
pub fn state_of_ref(reference: &Reference) -> MirrorState {
    let mut state = mirror_state_of(reference.mirror());
    state.memory = u64::try_from(reference.delivered_memory()).unwrap_or(u64::MAX);
    state
}

/// `items` without their times: what the reference, which has no clock, holds (D24).
fn untimed(items: &mut [Item]) {
    for item in items {
        item.parked_at = None;
        item.died_at = None;
    }
}

/// `state` without its lines' times (D24) and its life (M17), to compare with the reference's,
/// which has neither.
pub fn state_without_times(state: &MirrorState) -> MirrorState {
    let mut state = state.clone();
    state.life = None;
    untimed(&mut state.parked);
    untimed(&mut state.dead_letters);
    if let Some(batch) = state.in_flight.as_mut() {
        untimed(&mut batch.items);
    }
    state
}

impl Effect {
    /// The effect without the times of the items it holds (D24), to compare with the
    /// reference's.
    pub fn without_times(&self) -> Effect {
        let mut effect = self.clone();
        if let Effect::Batch {
            batch: Some(hand_over),
        } = &mut effect
        {
            untimed(&mut hand_over.batch.items);
        }
        effect
    }
}

/// The lines [`state_is_ref`] found equal, byte for byte, on the crate's side and the
/// reference's: for each seq, the crate's line (held, so its allocation cannot be freed and
/// reused) and where the reference's line lay. Comparing a multi-MB state after every op read
/// every line of both sides each time; a line whose crate allocation and reference buffer are
/// both the ones already compared holds the bytes already compared (a `Line` is immutable, and
/// the reference never rewrites a seq's line), so it is not read again. Cleared whenever the
/// queue is reopened or the reference replaced, where every line is read again.
#[derive(Debug, Default)]
pub struct SameLines {
    verified: BTreeMap<u64, (Line, usize, usize)>,
}

impl SameLines {
    /// Forget every line compared (the next comparison reads them all).
    pub fn clear(&mut self) {
        self.verified.clear();
    }

    /// Whether the crate's `line` of seq `seq` equals the reference's `reference`, byte for byte.
    fn same(&mut self, seq: u64, line: &Line, reference: &str) -> bool {
        let at = (reference.as_ptr().addr(), reference.len());
        if let Some((held, addr, len)) = self.verified.get(&seq)
            && std::ptr::eq(held.as_str(), line.as_str())
            && (*addr, *len) == at
        {
            return true;
        }
        let same = line.as_str() == reference;
        if same {
            self.verified.insert(seq, (line.clone(), at.0, at.1));
        }
        same
    }
}

/// Whether the crate's remembered window is the reference's, entry by entry, oldest first.
fn window_is_ref(
    window: &std::collections::VecDeque<Remembered>,
    reference: &[RefRemembered],
) -> bool {
    window.len() == reference.len()
        && window
            .iter()
            .zip(reference)
            .all(|(entry, reference)| *entry == remembered_of_ref(reference))
}

fn item_is_ref(item: &Item, reference: &RefItem, lines: &mut SameLines) -> bool {
    item.seq == Seq(reference.seq)
        && item.request == RequestId(reference.request)
        && item.failures == reference.failures
        && item.handed == reference.handed
        && lines.same(reference.seq, &item.line, &reference.line)
}

fn items_are_ref(items: &[Item], reference: &[RefItem], lines: &mut SameLines) -> bool {
    items.len() == reference.len()
        && items
            .iter()
            .zip(reference)
            .all(|(item, reference)| item_is_ref(item, reference, lines))
}

/// Whether the crate's `state` equals the reference's `mirror`: the same verdict as
/// `*state == mirror_state_of(mirror)`, field by field, without building that copy of every
/// line, and reading a line's bytes only when [`SameLines`] has not compared them already.
pub fn state_is_ref(state: &MirrorState, mirror: &Mirror, lines: &mut SameLines) -> bool {
    let in_flight = match (&state.in_flight, &mirror.in_flight) {
        (None, None) => true,
        (Some(batch), Some(reference)) => {
            batch.id == BatchId(reference.id)
                && batch.attempt == Attempt(reference.attempt)
                && batch.remaining == reference.remaining
                && batch.seen == reference.seen
                && items_are_ref(&batch.items, &reference.items, lines)
        }
        _ => false,
    };
    state.next_seq == Seq(mirror.next_seq)
        && state.next_batch == BatchId(mirror.next_batch)
        && state.cap == mirror.cap
        && window_is_ref(&state.remembered, &mirror.remembered)
        && in_flight
        && items_are_ref(&state.parked, &mirror.parked, lines)
        && items_are_ref(&state.dead_letters, &mirror.dead, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(seq: u64, line: &str) -> RefItem {
        RefItem {
            seq,
            request: seq % 3 + 1,
            line: line.to_owned(),
            failures: 1,
            handed: 2,
        }
    }

    fn mirror() -> Mirror {
        Mirror {
            next_seq: 9,
            next_batch: 4,
            parked: vec![item(3, "three"), item(5, "")],
            in_flight: Some(RefBatch {
                id: 3,
                attempt: 2,
                items: vec![item(1, "one"), item(2, "two é")],
                remaining: 2,
                seen: 1,
            }),
            dead: vec![item(4, "four")],
            cap: Some(3),
            remembered: vec![],
        }
    }

    /// A named change to a state.
    type Change = (&'static str, fn(&mut MirrorState));

    /// Each way the crate's state can differ from the reference's, one at a time.
    fn changes() -> Vec<Change> {
        vec![
            ("next seq", |s| s.next_seq = Seq(10)),
            ("next batch", |s| s.next_batch = BatchId(5)),
            ("cap", |s| s.cap = Some(2)),
            ("no cap", |s| s.cap = None),
            ("parked line, same length", |s| {
                s.parked[0].line = Line::from("thref")
            }),
            ("parked seq", |s| s.parked[1].seq = Seq(6)),
            ("parked request", |s| s.parked[0].request = RequestId(9)),
            ("parked failures", |s| s.parked[0].failures = 0),
            ("parked handed", |s| s.parked[0].handed = 3),
            ("parked item missing", |s| {
                s.parked.pop();
            }),
            ("batch line", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.items[1].line = Line::from("two e");
                }
            }),
            ("batch id", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.id = BatchId(2);
                }
            }),
            ("batch attempt", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.attempt = Attempt(1);
                }
            }),
            ("batch remaining", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.remaining = 1;
                }
            }),
            ("batch seen", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.seen = 0;
                }
            }),
            ("batch item extra", |s| {
                if let Some(b) = &mut s.in_flight {
                    b.items.push(b.items[0].clone());
                }
            }),
            ("no batch", |s| s.in_flight = None),
            ("dead line", |s| s.dead_letters[0].line = Line::from("fouR")),
            ("dead item moved to parked", |s| {
                let dead = s.dead_letters.remove(0);
                s.parked.push(dead);
            }),
        ]
    }

    /// `state_is_ref` gives the verdict of comparing with `mirror_state_of`: equal states pass
    /// (again with every line already compared), and a change to any field fails, also when the
    /// unchanged lines were compared before and a changed line is a new allocation.
    #[test]
    fn state_is_ref_is_equality_with_the_converted_reference() {
        let reference = mirror();
        let mut lines = SameLines::default();
        let state = mirror_state_of(&reference);
        assert!(state_is_ref(&state, &reference, &mut lines));
        assert!(state_is_ref(&state, &reference, &mut lines));
        assert_eq!(lines.verified.len(), 5);
        for (what, change) in changes() {
            let mut changed = state.clone();
            change(&mut changed);
            assert_ne!(changed, mirror_state_of(&reference), "{what}");
            assert!(!state_is_ref(&changed, &reference, &mut lines), "{what}");
            // The unchanged state still passes after the failed comparison.
            assert!(state_is_ref(&state, &reference, &mut lines), "{what}");
        }
        // The reference's side: a line replaced by other bytes of the same length.
        let mut other = reference.clone();
        other.parked[0].line = "thref".to_owned();
        assert!(!state_is_ref(&state, &other, &mut lines));
        // Cleared, every line is read again.
        lines.clear();
        assert!(lines.verified.is_empty());
        assert!(state_is_ref(&state, &reference, &mut lines));
    }
}
