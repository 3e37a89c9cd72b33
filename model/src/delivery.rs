//! The delivery protocol of parkline: parked completion lines delivered as one batch turn per
//! boundary, crash-safe, with per-request notified events, failures, dead letters and a
//! deterministic budget split.
//!
//! Source: Defect 1 of the seed (`shared/seed/000_5885aa2fe1498771.txt`, "Parked completion
//! notifications replay one turn each") as specified in `spec/delivery.md` (requirements D1..D18,
//! section 3 "Protocol as a state machine") and the delivery contract of `ARCHITECTURE.md`.
//!
//! The file reads top to bottom:
//!
//! 1. the plain reference: [`split`], [`turn_text`], [`notified`] and [`Reference`], the durable
//!    and volatile state of a correct queue with `park`, `boundary`, `settle` and `crash`. It does
//!    no I/O; the differential tests and the fuzz targets use it as their oracle;
//! 2. [`DeliveryModel`], a stateright [`Model`] whose transitions call that same [`Reference`]
//!    (one reference model, three uses: exhaustive check, proptest oracle, fuzz oracle), with the
//!    daemon's volatile phase, what the parent was handed, the notified log and ghost history;
//! 3. the properties, each named by the spec id it checks (`"D9 no loss"`, ...);
//! 4. the known-bad [`Variant`]s, each changing only the step it breaks, which the tests show
//!    are caught for the right property.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use stateright::{Model, Property};

// ---------------------------------------------------------------------------------------------
// 1. The plain reference
// ---------------------------------------------------------------------------------------------

/// One parked line: its arrival number, the request it answers, the line verbatim and how many
/// times it failed (D7).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefItem {
    /// Arrival order number, assigned at park, strictly increasing from 1 (D17).
    pub seq: u64,
    /// The request the line answers (D3: kept as given at park).
    pub request: u64,
    /// The line, verbatim (D3).
    pub line: String,
    /// How many settles recorded this item as failed (D7, D8).
    pub failures: u32,
}

impl RefItem {
    /// The item's cost against the budget: Unicode scalar values of the line plus its newline.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::RefItem;
    /// let item = RefItem { seq: 1, request: 1, line: "é!".into(), failures: 0 };
    /// assert_eq!(item.cost(), 3);
    /// ```
    pub fn cost(&self) -> usize {
        self.line.chars().count() + 1
    }
}

/// A batch: the lines delivered as one turn, with id, attempt and the count still parked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefBatch {
    /// Batch id, the same on every attempt; new batches get increasing ids from 1 (D10).
    pub id: u64,
    /// 1 the first time the batch is handed over, more for a repeat (D10).
    pub attempt: u32,
    /// The items, in seq order (D17).
    pub items: Vec<RefItem>,
    /// Lines parked at the batch's boundary that are not in the batch (D13).
    pub remaining: usize,
}

impl RefBatch {
    /// True when the batch is a repeat (attempt > 1, D10).
    pub fn is_repeat(&self) -> bool {
        self.attempt > 1
    }

    /// The seqs of the items, in item order.
    pub fn seqs(&self) -> Vec<u64> {
        self.items.iter().map(|item| item.seq).collect()
    }
}

/// One `delegation_notified` event (D5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RefNotified {
    /// The request the item answers.
    pub request: u64,
    /// The item's seq.
    pub seq: u64,
    /// The batch that carried it.
    pub batch: u64,
    /// The batch's attempt.
    pub attempt: u32,
    /// `attempt > 1`.
    pub repeat: bool,
}

/// What a settle did, by seq.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefSettlement {
    /// Items cleared from the mirror.
    pub delivered: Vec<u64>,
    /// Items parked again with one more failure.
    pub failed: Vec<u64>,
    /// Items that reached `failures_max` and moved to the dead letters.
    pub dead: Vec<u64>,
}

/// A call the reference refuses (spec/delivery.md section 3, notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefError {
    /// `boundary` while a batch of this life is unsettled.
    BatchInFlight,
    /// `settle` of an id other than the batch of this life's last `boundary`.
    UnknownBatch,
    /// `settle` with a number of outcomes different from the number of items.
    OutcomeCount,
    /// A counter is at the largest value of its type: the next seq or the next batch id is
    /// `u64::MAX` (never a seq or an id), or a recovered batch's attempt is `u32::MAX` (no higher
    /// attempt). Nothing changes (spec/mirror.md M6, spec/delivery.md D10).
    Exhausted,
    /// [`Reference::from_mirror`]: a mirror no correct queue can hold (a seq or batch id of
    /// `u64::MAX`, a parked item with `u32::MAX` failures, an attempt of 0).
    Corrupt,
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RefError::BatchInFlight => "a batch of this life is in flight",
            RefError::UnknownBatch => "no batch of this life with that id is in flight",
            RefError::OutcomeCount => "one outcome per item is required",
            RefError::Exhausted => "a counter is exhausted",
            RefError::Corrupt => "the mirror is impossible",
        })
    }
}

impl std::error::Error for RefError {}

/// The deterministic split (D11, D12): how many of `items`, in order, go into the next batch.
///
/// The longest prefix whose total cost (`chars + 1` per item) is at most `budget`, but always at
/// least one item; 0 only for an empty list. A pure function of the list and the budget.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{split, RefItem};
/// let item = |seq, line: &str| RefItem { seq, request: seq, line: line.into(), failures: 0 };
/// let items = [item(1, "abcd"), item(2, "ef"), item(3, "g")];
/// assert_eq!(split(&items, 8), 2); // 5 + 3 = 8 fits, + 2 does not
/// assert_eq!(split(&items, 1), 1); // always at least one: never cut a line
/// assert_eq!(split(&[], 100), 0);
/// ```
pub fn split(items: &[RefItem], budget: usize) -> usize {
    let mut total = 0usize;
    let mut k = 0usize;
    for item in items {
        if total.saturating_add(item.cost()) > budget {
            break;
        }
        total += item.cost();
        k += 1;
    }
    if items.is_empty() { 0 } else { k.max(1) }
}

/// The exact turn text of a batch (D3, D4, D13): header, each line verbatim, trailer, each
/// followed by `\n`.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{turn_text, RefBatch, RefItem};
/// let item = |seq, line: &str| RefItem { seq, request: seq, line: line.into(), failures: 0 };
/// let batch = RefBatch { id: 7, attempt: 2, items: vec![item(1, "a"), item(2, "b")], remaining: 1 };
/// assert_eq!(
///     turn_text(&batch),
///     "[parkline batch 7 attempt 2, repeat: 2 of 3 parked lines]\na\nb\n\
///      [parkline batch 7 end: 1 parked lines still undelivered]\n"
/// );
/// ```
pub fn turn_text(batch: &RefBatch) -> String {
    let k = batch.items.len();
    let repeat = if batch.is_repeat() { ", repeat" } else { "" };
    let mut text = format!(
        "[parkline batch {} attempt {}{repeat}: {k} of {} parked lines]\n",
        batch.id,
        batch.attempt,
        k + batch.remaining
    );
    for item in &batch.items {
        text.push_str(&item.line);
        text.push('\n');
    }
    text.push_str(&format!(
        "[parkline batch {} end: {} parked lines still undelivered]\n",
        batch.id, batch.remaining
    ));
    text
}

/// One notified event per item, in item order, with the batch's attempt and repeat mark (D5, D10).
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{notified, RefBatch, RefItem};
/// let item = RefItem { seq: 5, request: 42, line: "x".into(), failures: 0 };
/// let events = notified(&RefBatch { id: 2, attempt: 3, items: vec![item], remaining: 0 });
/// assert_eq!((events[0].request, events[0].seq, events[0].batch), (42, 5, 2));
/// assert!(events[0].repeat);
/// ```
pub fn notified(batch: &RefBatch) -> Vec<RefNotified> {
    batch
        .items
        .iter()
        .map(|item| RefNotified {
            request: item.request,
            seq: item.seq,
            batch: batch.id,
            attempt: batch.attempt,
            repeat: batch.is_repeat(),
        })
        .collect()
}

/// The durable mirror: what survives a crash (spec/delivery.md section 3).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mirror {
    /// The seq the next park gets.
    pub next_seq: u64,
    /// The id the next new batch gets.
    pub next_batch: u64,
    /// Parked items in seq order, excluding the items of the in-flight batch.
    pub parked: Vec<RefItem>,
    /// The batch persisted and not yet settled, with its stored attempt.
    pub in_flight: Option<RefBatch>,
    /// Items that failed `failures_max` times, in the order they died; never deleted (D8).
    pub dead: Vec<RefItem>,
}

/// The reference queue: the durable mirror plus the volatile state of one life, plain and
/// deterministic. Each method is one atomic durable step (one record, one fsync), so a crash
/// falls between methods.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::Reference;
/// let mut queue = Reference::new(3);
/// queue.park(1, "r1 done");
/// queue.park(2, "r2 done");
/// let batch = queue.boundary(100).unwrap().unwrap();
/// assert_eq!((batch.id, batch.attempt, batch.items.len(), batch.remaining), (1, 1, 2, 0));
/// queue.crash(); // between "batch written" and "mirror cleared"
/// let repeat = queue.boundary(100).unwrap().unwrap();
/// assert_eq!((repeat.id, repeat.attempt, repeat.items), (1, 2, batch.items));
/// let settled = queue.settle(1, &[true, false]).unwrap();
/// assert_eq!((settled.delivered, settled.failed), (vec![1], vec![2]));
/// assert_eq!(queue.parked()[0].failures, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    failures_max: u32,
    variant: Variant,
    mirror: Mirror,
    /// Volatile: the in-flight batch was found at recovery and not yet handed over in this life.
    recovered: bool,
}

impl Reference {
    /// A fresh, empty queue; an item moves to the dead letters at its `failures_max`-th failure.
    pub fn new(failures_max: u32) -> Self {
        Self::with_variant(failures_max, Variant::Correct)
    }

    /// A fresh queue whose steps follow `variant` (`Variant::Correct` is [`Reference::new`]).
    pub fn with_variant(failures_max: u32, variant: Variant) -> Self {
        Reference {
            failures_max,
            variant,
            mirror: Mirror {
                next_seq: 1,
                next_batch: 1,
                parked: Vec::new(),
                in_flight: None,
                dead: Vec::new(),
            },
            recovered: false,
        }
    }

    /// A queue recovered from `mirror` (an in-flight batch is the recovered batch of this life),
    /// the way opening a mirror file with these contents would find it.
    ///
    /// # Errors
    ///
    /// [`RefError::Corrupt`] when no correct queue can hold `mirror` under the counter rules of
    /// spec/mirror.md M6: a seq or batch id of `u64::MAX`, a parked or in-flight item with
    /// `u32::MAX` failures, an attempt of 0.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::{Mirror, RefError, Reference};
    /// let mirror = Mirror { next_seq: u64::MAX, next_batch: 1, parked: vec![], in_flight: None, dead: vec![] };
    /// let mut queue = Reference::from_mirror(3, mirror).unwrap();
    /// assert_eq!(queue.try_park(1, "x"), Err(RefError::Exhausted));
    /// ```
    pub fn from_mirror(failures_max: u32, mirror: Mirror) -> Result<Self, RefError> {
        let live = mirror
            .parked
            .iter()
            .chain(mirror.in_flight.iter().flat_map(|batch| &batch.items));
        let mut corrupt = false;
        for item in live {
            corrupt |= item.seq == u64::MAX || item.failures == u32::MAX;
        }
        corrupt |= mirror.dead.iter().any(|item| item.seq == u64::MAX);
        if let Some(batch) = &mirror.in_flight {
            corrupt |= batch.id == u64::MAX || batch.attempt == 0;
        }
        if corrupt {
            return Err(RefError::Corrupt);
        }
        Ok(Reference {
            failures_max,
            variant: Variant::Correct,
            recovered: mirror.in_flight.is_some(),
            mirror,
        })
    }

    /// Park a line (durable on return, D16) and return its seq (D17: strictly increasing).
    ///
    /// # Panics
    ///
    /// When the seq counter is exhausted, which a queue started by [`Reference::new`] does not
    /// reach in any bounded run; [`Reference::try_park`] returns the error instead.
    pub fn park(&mut self, request: u64, line: &str) -> u64 {
        match self.try_park(request, line) {
            Ok(seq) => seq,
            Err(e) => panic!("park on a reference whose seq counter is exhausted: {e}"),
        }
    }

    /// Park a line and return its seq, as [`Reference::park`].
    ///
    /// # Errors
    ///
    /// [`RefError::Exhausted`] when the next seq is `u64::MAX`; nothing changes.
    pub fn try_park(&mut self, request: u64, line: &str) -> Result<u64, RefError> {
        let seq = self.mirror.next_seq;
        // M6: u64::MAX is never a seq, so the counter there means none is left.
        if seq == u64::MAX {
            return Err(RefError::Exhausted);
        }
        self.mirror.next_seq = seq + 1;
        self.mirror.parked.push(RefItem {
            seq,
            request,
            line: line.to_owned(),
            failures: 0,
        });
        Ok(seq)
    }

    /// The parent's turn ended: persist and return the next batch (D1, D2, D10, D11).
    ///
    /// A recovered batch is re-persisted with attempt + 1 and returned as a repeat with the same
    /// id, items and remaining; otherwise `None` when nothing is parked; otherwise the split of the
    /// parked list with a new id and attempt 1.
    ///
    /// # Errors
    ///
    /// [`RefError::BatchInFlight`] when a batch of this life is unsettled.
    pub fn boundary(&mut self, budget: usize) -> Result<Option<RefBatch>, RefError> {
        let variant = self.variant;
        if let Some(batch) = &mut self.mirror.in_flight {
            if !self.recovered {
                return Err(RefError::BatchInFlight);
            }
            // D10: a repeat shows an attempt one higher; at u32::MAX there is none, and the
            // batch stays recovered and untouched.
            if batch.attempt == u32::MAX && variant != Variant::NoAttemptCounter {
                return Err(RefError::Exhausted);
            }
            self.recovered = false;
            match variant {
                // Known bad: the replay keeps the stored attempt, so it is not marked a repeat.
                Variant::NoAttemptCounter => {}
                // Known bad: the replay re-splits what is parked now, so its membership depends
                // on which lines arrived since the original boundary.
                Variant::ArrivalTimedSplit => {
                    let mut all = std::mem::take(&mut batch.items);
                    all.append(&mut self.mirror.parked);
                    all.sort_by_key(|item| item.seq);
                    let k = split(&all, budget);
                    self.mirror.parked = all.split_off(k);
                    batch.items = all;
                    batch.remaining = self.mirror.parked.len();
                    batch.attempt += 1;
                }
                _ => batch.attempt += 1, // D10
            }
            return Ok(Some(batch.clone()));
        }
        if self.mirror.parked.is_empty() {
            return Ok(None); // D2: no batch, no waiting
        }
        if self.mirror.next_batch == u64::MAX {
            return Err(RefError::Exhausted); // M6: u64::MAX is never a batch id
        }
        let parked = &mut self.mirror.parked;
        let mut items: Vec<RefItem> = match variant {
            Variant::PopFront => parked.drain(..1).collect(),
            Variant::SplitOvershoot => {
                let k = split_overshoot(parked, budget);
                parked.drain(..k).collect()
            }
            Variant::HashOrderSplit => take_in_hash_order(parked, budget),
            _ => {
                let k = split(parked, budget); // D11
                parked.drain(..k).collect()
            }
        };
        // Known bad: a line over the budget is cut to fit.
        if let [item] = items.as_mut_slice()
            && variant == Variant::CutOversizedLine
            && item.cost() > budget
        {
            item.line = item.line.chars().take(budget.saturating_sub(1)).collect();
        }
        let remaining = match variant {
            Variant::TrailerCountsAll => parked.len() + items.len(),
            _ => parked.len(), // D13
        };
        let batch = RefBatch {
            id: self.mirror.next_batch,
            attempt: 1,
            items,
            remaining,
        };
        self.mirror.next_batch += 1;
        // Known bad: the items leave the mirror as soon as the batch is written.
        if variant != Variant::ClearBeforeHandOver {
            self.mirror.in_flight = Some(batch.clone());
        }
        Ok(Some(batch))
    }

    /// Record each item's outcome (`true`: delivered) and clear the batch (D6, D7, D8).
    ///
    /// # Errors
    ///
    /// [`RefError::UnknownBatch`] unless `batch` is the id of this life's last boundary;
    /// [`RefError::OutcomeCount`] unless there is one outcome per item.
    pub fn settle(&mut self, batch: u64, delivered: &[bool]) -> Result<RefSettlement, RefError> {
        if self.variant == Variant::ClearBeforeHandOver && self.mirror.in_flight.is_none() {
            return Ok(RefSettlement::default()); // the known-bad boundary already cleared it
        }
        let in_flight = match &self.mirror.in_flight {
            Some(b) if b.id == batch && !self.recovered => b,
            _ => return Err(RefError::UnknownBatch),
        };
        if in_flight.items.len() != delivered.len() {
            return Err(RefError::OutcomeCount);
        }
        let mut settlement = RefSettlement::default();
        let items = self
            .mirror
            .in_flight
            .take()
            .map(|b| b.items)
            .unwrap_or_default();
        for (mut item, &ok) in items.into_iter().zip(delivered) {
            if ok {
                settlement.delivered.push(item.seq);
                if self.variant == Variant::KeepDelivered {
                    self.park_again(item);
                }
                continue;
            }
            // A parked item has at most u32::MAX - 1 failures: one reaching u32::MAX reaches
            // every failures_max and is dead, so none is parked with it (M6).
            item.failures = item.failures.saturating_add(1);
            if item.failures >= self.failures_max {
                settlement.dead.push(item.seq);
                if self.variant != Variant::DeleteDeadLetter {
                    self.mirror.dead.push(item); // D8
                }
            } else {
                settlement.failed.push(item.seq);
                match self.variant {
                    Variant::DropFailed => {}
                    Variant::FailedToBack => self.mirror.parked.push(item),
                    _ => self.park_again(item), // D7: same seq, back at its place
                }
            }
        }
        Ok(settlement)
    }

    /// The process dies: the volatile state is lost; an unsettled batch becomes the recovered
    /// batch of the next life (D10). Everything in the mirror stays (D9).
    pub fn crash(&mut self) {
        self.recovered = self.mirror.in_flight.is_some();
    }

    /// Parked items, seq order, without the items of the in-flight batch.
    pub fn parked(&self) -> &[RefItem] {
        &self.mirror.parked
    }

    /// The persisted, unsettled batch (a recovered one with the attempt as stored).
    pub fn in_flight(&self) -> Option<&RefBatch> {
        self.mirror.in_flight.as_ref()
    }

    /// The dead letters (D8).
    pub fn dead_letters(&self) -> &[RefItem] {
        &self.mirror.dead
    }

    /// The durable part: what a crash keeps.
    pub fn mirror(&self) -> &Mirror {
        &self.mirror
    }

    /// True when the in-flight batch was recovered and not yet handed over again in this life.
    pub fn is_recovered(&self) -> bool {
        self.recovered
    }

    /// True when the next boundary returns a batch.
    pub fn has_batch_ready(&self) -> bool {
        match self.mirror.in_flight {
            Some(_) => self.recovered,
            None => !self.mirror.parked.is_empty(),
        }
    }

    /// The variant the reference follows.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    fn park_again(&mut self, item: RefItem) {
        let at = self.mirror.parked.partition_point(|p| p.seq < item.seq);
        self.mirror.parked.insert(at, item);
    }
}

/// Known bad (SplitOvershoot): keeps taking items while the total *before* an item fits, so the
/// item that crosses the budget joins the batch.
fn split_overshoot(items: &[RefItem], budget: usize) -> usize {
    let mut total = 0usize;
    let mut k = 0usize;
    for item in items {
        if total > budget {
            break;
        }
        total += item.cost();
        k += 1;
    }
    k
}

/// Known bad (HashOrderSplit): splits the parked lines in the order of a hash of their text,
/// then hands the chosen ones over in seq order.
fn take_in_hash_order(parked: &mut Vec<RefItem>, budget: usize) -> Vec<RefItem> {
    let fnv = |line: &str| {
        line.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let mut by_hash = parked.clone();
    by_hash.sort_by_key(|item| (fnv(&item.line), item.seq));
    let k = split(&by_hash, budget);
    let chosen: BTreeSet<u64> = by_hash[..k].iter().map(|item| item.seq).collect();
    let (taken, kept) = std::mem::take(parked)
        .into_iter()
        .partition(|item| chosen.contains(&item.seq));
    *parked = kept;
    taken
}

// ---------------------------------------------------------------------------------------------
// 2. The stateright model
// ---------------------------------------------------------------------------------------------

/// A protocol step that a known-bad variant gets wrong; `Correct` is the protocol of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// The protocol as specified.
    Correct,
    /// Boundary delivers one line per turn (the old queue). Breaks D1.
    PopFront,
    /// Boundary writes the batch already cleared, before the hand-over. Breaks D9.
    ClearBeforeHandOver,
    /// A replay keeps the stored attempt and no repeat mark. Breaks D10.
    NoAttemptCounter,
    /// A replay re-splits what is parked at replay time. Breaks D2, D10, D11.
    ArrivalTimedSplit,
    /// The split takes lines in hash order of their text. Breaks D11.
    HashOrderSplit,
    /// A failed item is dropped instead of parked again. Breaks D6, D9.
    DropFailed,
    /// agent_read collecting a line removes it from the queue. Breaks D14, D9.
    DropCollected,
    /// The split admits the item that crosses the budget. Breaks D12.
    SplitOvershoot,
    /// A line larger than the budget is cut to fit. Breaks D3.
    CutOversizedLine,
    /// The trailer counts the batch's own lines too. Breaks D13.
    TrailerCountsAll,
    /// A failed item is parked again at the back, behind later lines. Breaks D17.
    FailedToBack,
    /// One item's failure fails every item of its batch. Breaks D6.
    FailWholeBatch,
    /// One notified event per batch instead of one per request. Breaks D5.
    NotifiedPerBatch,
    /// A dead letter is deleted instead of kept. Breaks D8.
    DeleteDeadLetter,
    /// A delivered item is not cleared and is offered again. Breaks D18.
    KeepDelivered,
}

impl Variant {
    /// Every variant, `Correct` first.
    pub const ALL: [Variant; 16] = [
        Variant::Correct,
        Variant::PopFront,
        Variant::ClearBeforeHandOver,
        Variant::NoAttemptCounter,
        Variant::ArrivalTimedSplit,
        Variant::HashOrderSplit,
        Variant::DropFailed,
        Variant::DropCollected,
        Variant::SplitOvershoot,
        Variant::CutOversizedLine,
        Variant::TrailerCountsAll,
        Variant::FailedToBack,
        Variant::FailWholeBatch,
        Variant::NotifiedPerBatch,
        Variant::DeleteDeadLetter,
        Variant::KeepDelivered,
    ];

    /// The name used on the command line (`--variant pop-front`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::PopFront => "pop-front",
            Variant::ClearBeforeHandOver => "clear-before-hand-over",
            Variant::NoAttemptCounter => "no-attempt-counter",
            Variant::ArrivalTimedSplit => "arrival-timed-split",
            Variant::HashOrderSplit => "hash-order-split",
            Variant::DropFailed => "drop-failed",
            Variant::DropCollected => "drop-collected",
            Variant::SplitOvershoot => "split-overshoot",
            Variant::CutOversizedLine => "cut-oversized-line",
            Variant::TrailerCountsAll => "trailer-counts-all",
            Variant::FailedToBack => "failed-to-back",
            Variant::FailWholeBatch => "fail-whole-batch",
            Variant::NotifiedPerBatch => "notified-per-batch",
            Variant::DeleteDeadLetter => "delete-dead-letter",
            Variant::KeepDelivered => "keep-delivered",
        }
    }

    /// The variant with that command-line name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The property the variant is built to break (the one its test asserts), `None` for
    /// `Correct`.
    pub fn breaks(self) -> Option<&'static str> {
        Some(match self {
            Variant::Correct => return None,
            Variant::PopFront => D1,
            Variant::ClearBeforeHandOver | Variant::DropFailed => D9,
            Variant::NoAttemptCounter => D10,
            Variant::ArrivalTimedSplit | Variant::HashOrderSplit => D11,
            Variant::DropCollected => D14,
            Variant::SplitOvershoot => D12,
            Variant::CutOversizedLine => D3,
            Variant::TrailerCountsAll => D13,
            Variant::FailedToBack => D17,
            Variant::FailWholeBatch => D6,
            Variant::NotifiedPerBatch => D5,
            Variant::DeleteDeadLetter => D8,
            Variant::KeepDelivered => D18,
        })
    }
}

/// The bounds of one check: which lines arrive (in this order), the budget, and how many crashes,
/// failures and agent_read collections may happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// `(request, line)` in arrival order.
    pub lines: Vec<(u64, String)>,
    /// The budget passed to every boundary.
    pub budget: usize,
    /// Crashes allowed in one run.
    pub crashes: u32,
    /// Item failures allowed in one run (a failed hand-over counts once).
    pub failures: u32,
    /// The queue's dead-letter threshold.
    pub failures_max: u32,
    /// agent_read collections allowed in one run.
    pub collects: u32,
}

impl Bounds {
    /// The line sizes (characters) the generated lines cycle through. With budget 6 (costs 2, 3,
    /// 8): the first two share a batch, the third is larger than the budget and goes alone.
    pub const LINE_CHARS: [usize; 3] = [1, 2, 7];

    /// `lines` generated lines (request `i + 1`, sizes from [`Bounds::LINE_CHARS`], with a
    /// multi-byte character so bytes and characters differ) and the other bounds as given.
    pub fn generated(lines: usize, budget: usize, crashes: u32, failures: u32) -> Bounds {
        Bounds::with_sizes(lines, &Self::LINE_CHARS, budget, crashes, failures)
    }

    /// Like [`Bounds::generated`], with line sizes (characters) cycling through `sizes`
    /// (`[1]` when empty).
    pub fn with_sizes(
        lines: usize,
        sizes: &[usize],
        budget: usize,
        crashes: u32,
        failures: u32,
    ) -> Bounds {
        let sizes = if sizes.is_empty() { &[1][..] } else { sizes };
        let alphabet = ['a', 'é', 'c', 'd'];
        let lines = (0..lines)
            .map(|i| {
                let chars = sizes[i % sizes.len()];
                let c = alphabet[i % alphabet.len()];
                (i as u64 + 1, std::iter::repeat_n(c, chars).collect())
            })
            .collect();
        Bounds {
            lines,
            budget,
            crashes,
            failures,
            failures_max: 2,
            collects: 1,
        }
    }

    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        let sizes: Vec<String> = self
            .lines
            .iter()
            .map(|(_, line)| line.chars().count().to_string())
            .collect();
        format!(
            "lines={} (chars {}) budget={} crashes={} failures={} failures_max={} collects={}",
            self.lines.len(),
            sizes.join(","),
            self.budget,
            self.crashes,
            self.failures,
            self.failures_max,
            self.collects
        )
    }
}

impl Bounds {
    /// The bounds `parkline check` runs by default: [`Bounds::default`] with 2 crashes, so a
    /// repeat can itself crash and repeat again (attempt 3). About 25 s in release.
    pub fn check() -> Bounds {
        Bounds::generated(3, 6, 2, 2)
    }
}

impl Default for Bounds {
    /// The default bounds of the test suite and the exhaustive conformance replay: 3 lines (a
    /// 2-line batch and a line over the budget, so splits happen), budget 6, 1 crash, 2 failures
    /// (enough for a dead letter at `failures_max` 2), 1 agent_read collection.
    fn default() -> Self {
        Bounds::generated(3, 6, 1, 2)
    }
}

/// Regression alarm: unique states of the correct model at [`Bounds::default`]; a change means
/// the model or the bounds changed.
pub const DEFAULT_UNIQUE_STATES: usize = 100_782;

/// Regression alarm: unique states of the correct model at [`Bounds::check`]; `parkline check`
/// fails when its count differs.
pub const CHECK_UNIQUE_STATES: usize = 1_162_513;

/// The daemon's volatile delivery phase (lost at a crash).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Up, no batch of this life in flight.
    Idle,
    /// Boundary persisted the batch ("batch written"); not handed over yet.
    Persisted(RefBatch),
    /// The turn was handed over; `outcomes` holds the outcome of the first `outcomes.len()`
    /// items (notified k of n).
    HandedOver {
        /// The batch handed over.
        batch: RefBatch,
        /// `true`: the item's notified event was recorded; `false`: the item failed.
        outcomes: Vec<bool>,
    },
    /// Crashed; waiting for the restart.
    Down,
}

/// Ghost: a batch returned by a boundary, with the parked list just before it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BoundaryRecord {
    /// The batch as the boundary returned it.
    pub batch: RefBatch,
    /// The parked list at the boundary, before the split (for a repeat: the list then).
    pub parked: Vec<RefItem>,
    /// The boundary replayed a recovered batch.
    pub replay: bool,
}

/// Ghost: one settle, with each item's own outcome as the daemon saw it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SettleRecord {
    /// The batch settled.
    pub batch: u64,
    /// Its attempt.
    pub attempt: u32,
    /// `(seq, delivered)` per item, in item order.
    pub outcomes: Vec<(u64, bool)>,
    /// How many turns had been handed over when the settle happened.
    pub handed_before: usize,
}

/// A state of the delivery model: the queue (durable mirror + volatile recovered flag), the
/// daemon's phase, what the parent was handed, the notified log, and ghost history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeliveryState {
    /// The reference queue.
    pub queue: Reference,
    /// The daemon's volatile phase.
    pub phase: Phase,
    /// How many lines of the bounds have been parked (acknowledged): seqs `1..=arrived`.
    pub arrived: usize,
    /// Every batch the parent was handed, in order.
    pub handed: Vec<RefBatch>,
    /// Every notified event recorded, in order.
    pub notified: Vec<RefNotified>,
    /// Ghost: every boundary that returned a batch.
    pub boundaries: Vec<BoundaryRecord>,
    /// Ghost: every settle.
    pub settles: Vec<SettleRecord>,
    /// Ghost: crashes so far.
    pub crashes: u32,
    /// Ghost: failures so far.
    pub failures: u32,
    /// Ghost: seqs collected by agent_read.
    pub collected: Vec<u64>,
}

/// One step of the model, in the spec's words.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The line at this index of the bounds arrives and is parked.
    Park(usize),
    /// The parent's turn ends: the boundary persists the next batch.
    Boundary,
    /// The daemon hands the batch's turn over to the parent.
    HandOver,
    /// The hand-over fails: every item fails (failure 1 of D7).
    HandOverFails,
    /// The next item's delegation_notified event is recorded.
    Notify,
    /// The next item's notified event cannot be recorded: it fails (failure 2 of D7).
    ItemFails,
    /// Settle: record the outcomes and clear the delivered items.
    Settle,
    /// The daemon crashes.
    Crash,
    /// The daemon restarts and recovers the mirror.
    Recover,
    /// agent_read collects the parked line with this seq (must change nothing, D14).
    Collected(u64),
}

/// The delivery protocol as a stateright model (see the module documentation).
///
/// The model is finite and acyclic: every action grows a log or a counter of the state (lines
/// parked, boundaries, hand-overs, outcomes, settles, crashes, collections; a restart follows a
/// crash), so no path revisits a state. That is what makes stateright's `eventually`, judged
/// only at terminal states, sound here; D15 is also stated as an `always` on quiescent states.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{Bounds, DeliveryModel, Variant, D9};
/// use stateright::{Checker, Model};
/// let model = DeliveryModel { bounds: Bounds::generated(2, 6, 1, 0), variant: Variant::Correct };
/// let checker = model.checker().spawn_dfs().join();
/// assert!(checker.is_done());
/// assert!(checker.discovery(D9).is_none()); // no loss, crash included
/// ```
#[derive(Clone, Debug)]
pub struct DeliveryModel {
    /// The bounds.
    pub bounds: Bounds,
    /// Which protocol the model follows.
    pub variant: Variant,
}

impl Default for DeliveryModel {
    fn default() -> Self {
        DeliveryModel {
            bounds: Bounds::default(),
            variant: Variant::Correct,
        }
    }
}

impl Model for DeliveryModel {
    type State = DeliveryState;
    type Action = Action;

    fn init_states(&self) -> Vec<DeliveryState> {
        vec![DeliveryState {
            queue: Reference::with_variant(self.bounds.failures_max, self.variant),
            phase: Phase::Idle,
            arrived: 0,
            handed: Vec::new(),
            notified: Vec::new(),
            boundaries: Vec::new(),
            settles: Vec::new(),
            crashes: 0,
            failures: 0,
            collected: Vec::new(),
        }]
    }

    fn actions(&self, state: &DeliveryState, actions: &mut Vec<Action>) {
        let can_fail = state.failures < self.bounds.failures;
        match &state.phase {
            Phase::Down => {
                actions.push(Action::Recover);
                return;
            }
            Phase::Idle => {
                if state.queue.has_batch_ready() {
                    actions.push(Action::Boundary);
                }
            }
            Phase::Persisted(_) => {
                actions.push(Action::HandOver);
                if can_fail {
                    actions.push(Action::HandOverFails);
                }
            }
            Phase::HandedOver { batch, outcomes } => {
                if outcomes.len() < batch.items.len() {
                    actions.push(Action::Notify);
                    if can_fail {
                        actions.push(Action::ItemFails);
                    }
                } else {
                    actions.push(Action::Settle);
                }
            }
        }
        if state.arrived < self.bounds.lines.len() {
            actions.push(Action::Park(state.arrived));
        }
        if state.collected.len() < self.bounds.collects as usize {
            for item in state.queue.parked() {
                if !state.collected.contains(&item.seq) {
                    actions.push(Action::Collected(item.seq));
                }
            }
        }
        if state.crashes < self.bounds.crashes {
            actions.push(Action::Crash);
        }
    }

    fn next_state(&self, last: &DeliveryState, action: Action) -> Option<DeliveryState> {
        let mut state = last.clone();
        match action {
            Action::Park(index) => {
                let (request, line) = self.bounds.lines.get(index)?;
                state.queue.park(*request, line);
                state.arrived += 1;
            }
            Action::Boundary => {
                let parked = state.queue.parked().to_vec();
                let replay = state.queue.is_recovered();
                let batch = state.queue.boundary(self.bounds.budget).ok()??;
                state.boundaries.push(BoundaryRecord {
                    batch: batch.clone(),
                    parked,
                    replay,
                });
                state.phase = Phase::Persisted(batch);
            }
            Action::HandOver => {
                let Phase::Persisted(batch) = &last.phase else {
                    return None;
                };
                state.handed.push(batch.clone());
                state.phase = Phase::HandedOver {
                    batch: batch.clone(),
                    outcomes: Vec::new(),
                };
            }
            Action::HandOverFails => {
                let Phase::Persisted(batch) = &last.phase else {
                    return None;
                };
                state.failures += 1;
                let outcomes = vec![false; batch.items.len()];
                self.settle(&mut state, batch, &outcomes)?;
            }
            Action::Notify | Action::ItemFails => {
                let Phase::HandedOver { batch, outcomes } = &mut state.phase else {
                    return None;
                };
                let k = outcomes.len();
                let event = *notified(batch).get(k)?;
                let ok = action == Action::Notify;
                if ok {
                    if self.variant != Variant::NotifiedPerBatch || k == 0 {
                        state.notified.push(event); // D5
                    }
                } else {
                    state.failures += 1;
                }
                outcomes.push(ok);
            }
            Action::Settle => {
                let Phase::HandedOver { batch, outcomes } = &last.phase else {
                    return None;
                };
                self.settle(&mut state, batch, outcomes)?;
            }
            Action::Crash => {
                state.queue.crash();
                state.phase = Phase::Down;
                state.crashes += 1;
            }
            Action::Recover => state.phase = Phase::Idle,
            Action::Collected(seq) => {
                state.collected.push(seq);
                if self.variant == Variant::DropCollected {
                    state.queue.mirror.parked.retain(|item| item.seq != seq);
                }
            }
        }
        Some(state)
    }

    fn format_action(&self, action: &Action) -> String {
        match action {
            Action::Park(index) => match self.bounds.lines.get(*index) {
                Some((request, line)) => {
                    format!("park line {index} of request {request}: {line:?}")
                }
                None => format!("park line {index}"),
            },
            other => format!("{other:?}"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(D1, d1_batch_at_the_boundary),
            Property::always(D2, d2_no_waiting_window),
            Property::always(D3, d3_items_verbatim),
            Property::always(D5, d5_notified_per_request),
            Property::always(D6, d6_per_request_independence),
            Property::always(D8, d8_dead_letter),
            Property::always(D9, d9_no_loss),
            Property::always(D10, d10_repeat_recognisable),
            Property::always(D11, d11_deterministic_split),
            Property::always(D12, d12_budget),
            Property::always(D13, d13_trailer_count),
            Property::always(D14, d14_collected_is_not_consumed),
            Property::always(D15_QUIESCENT, d15_quiescent_means_delivered),
            Property::always(D17, d17_order),
            Property::always(D18, d18_no_silent_duplicate),
            Property::eventually(D15, d15_everything_delivered),
            Property::sometimes(SOMETIMES_SPLIT, |_, s: &DeliveryState| {
                s.handed.iter().any(|b| b.remaining > 0)
            }),
            Property::sometimes(SOMETIMES_REPEAT, |_, s: &DeliveryState| {
                s.handed.iter().any(RefBatch::is_repeat)
            }),
            Property::sometimes(SOMETIMES_CRASH_MID_BATCH, |_, s: &DeliveryState| {
                s.phase == Phase::Down && s.queue.in_flight().is_some()
            }),
            Property::sometimes(SOMETIMES_DEAD, |_, s: &DeliveryState| {
                !s.queue.dead_letters().is_empty()
            }),
            Property::sometimes(SOMETIMES_RETRY, |_, s: &DeliveryState| {
                s.handed
                    .iter()
                    .any(|b| b.items.iter().any(|item| item.failures > 0))
            }),
            Property::sometimes(SOMETIMES_OVERSIZED, |m, s: &DeliveryState| {
                s.handed
                    .iter()
                    .any(|b| b.items.len() == 1 && b.items[0].cost() > m.bounds.budget)
            }),
            Property::sometimes(SOMETIMES_LATE_LINE, |_, s: &DeliveryState| {
                let batch = match &s.phase {
                    Phase::Persisted(batch) | Phase::HandedOver { batch, .. } => batch,
                    _ => return false,
                };
                s.original(batch.id).is_some_and(|o| {
                    s.queue
                        .parked()
                        .iter()
                        .any(|item| o.parked.iter().all(|p| p.seq != item.seq))
                })
            }),
            Property::sometimes(SOMETIMES_COLLECTED_DELIVERED, |_, s: &DeliveryState| {
                let delivered = s.delivered();
                s.collected.iter().any(|seq| delivered.contains(seq))
            }),
        ]
    }
}

impl DeliveryModel {
    /// The model of `variant` at `bounds`.
    pub fn new(bounds: Bounds, variant: Variant) -> Self {
        DeliveryModel { bounds, variant }
    }

    /// The settle step: the daemon's own outcomes go to the queue and into the ghost record.
    fn settle(&self, state: &mut DeliveryState, batch: &RefBatch, own: &[bool]) -> Option<()> {
        let mut given = own.to_vec();
        if self.variant == Variant::FailWholeBatch && given.contains(&false) {
            given = vec![false; given.len()];
        }
        state.queue.settle(batch.id, &given).ok()?;
        state.settles.push(SettleRecord {
            batch: batch.id,
            attempt: batch.attempt,
            outcomes: batch
                .items
                .iter()
                .map(|i| i.seq)
                .zip(own.iter().copied())
                .collect(),
            handed_before: state.handed.len(),
        });
        state.phase = Phase::Idle;
        Some(())
    }

    /// One step of a path in the spec's words: what `action` did from `before` to `after`.
    pub fn narrate(
        &self,
        before: &DeliveryState,
        action: &Action,
        after: &DeliveryState,
    ) -> String {
        let seqs = |b: &RefBatch| format!("{:?}", b.seqs());
        match action {
            Action::Park(index) => {
                let (request, line) = self.bounds.lines.get(*index).cloned().unwrap_or_default();
                format!(
                    "a line of request {request} arrives and is parked as seq {} ({line:?}, cost {})",
                    after.arrived,
                    line.chars().count() + 1
                )
            }
            Action::Boundary => match after.boundaries.last() {
                Some(r) => format!(
                    "the parent's turn ends (boundary): batch {} attempt {}{} is written with seqs {} of parked {:?}, remaining {}",
                    r.batch.id,
                    r.batch.attempt,
                    if r.batch.is_repeat() { " (repeat)" } else { "" },
                    seqs(&r.batch),
                    r.parked.iter().map(|i| i.seq).collect::<Vec<_>>(),
                    r.batch.remaining
                ),
                None => "the parent's turn ends (boundary)".into(),
            },
            Action::HandOver => match after.handed.last() {
                Some(b) => format!(
                    "the daemon hands batch {} attempt {} over to the parent: {:?}",
                    b.id,
                    b.attempt,
                    turn_text(b)
                ),
                None => "the daemon hands the batch over".into(),
            },
            Action::HandOverFails => format!(
                "the hand-over fails: every item fails ({})",
                settle_words(after)
            ),
            Action::Notify => match &before.phase {
                Phase::HandedOver { batch, outcomes } => {
                    let item = &batch.items[outcomes.len().min(batch.items.len() - 1)];
                    if after.notified.len() > before.notified.len() {
                        format!(
                            "delegation_notified is recorded for seq {} (request {})",
                            item.seq, item.request
                        )
                    } else {
                        format!(
                            "seq {} (request {}) counts as delivered, but no delegation_notified is recorded for it",
                            item.seq, item.request
                        )
                    }
                }
                _ => "delegation_notified is recorded".into(),
            },
            Action::ItemFails => match &before.phase {
                Phase::HandedOver { batch, outcomes } => {
                    let item = &batch.items[outcomes.len().min(batch.items.len() - 1)];
                    format!(
                        "the notified event of seq {} cannot be recorded: the item fails",
                        item.seq
                    )
                }
                _ => "an item fails".into(),
            },
            Action::Settle => format!("settle (mirror cleared): {}", settle_words(after)),
            Action::Crash => format!("the daemon crashes ({})", phase_words(&before.phase)),
            Action::Recover => match after.queue.in_flight() {
                Some(b) => format!(
                    "the daemon restarts; batch {} attempt {} is recovered from the mirror",
                    b.id, b.attempt
                ),
                None => "the daemon restarts and recovers the mirror".into(),
            },
            Action::Collected(seq) => format!("agent_read collects the line of seq {seq}"),
        }
    }
}

fn settle_words(after: &DeliveryState) -> String {
    match after.settles.last() {
        Some(r) => {
            let pick = |want: bool| {
                r.outcomes
                    .iter()
                    .filter(|(_, ok)| *ok == want)
                    .map(|(seq, _)| *seq)
                    .collect::<Vec<_>>()
            };
            format!(
                "batch {} attempt {}: delivered {:?}, failed {:?}; parked now {:?}, dead letters {:?}",
                r.batch,
                r.attempt,
                pick(true),
                pick(false),
                after
                    .queue
                    .parked()
                    .iter()
                    .map(|i| i.seq)
                    .collect::<Vec<_>>(),
                after
                    .queue
                    .dead_letters()
                    .iter()
                    .map(|i| i.seq)
                    .collect::<Vec<_>>()
            )
        }
        None => String::new(),
    }
}

fn phase_words(phase: &Phase) -> String {
    match phase {
        Phase::Idle => "idle".into(),
        Phase::Persisted(b) => format!("batch {} written, not handed over", b.id),
        Phase::HandedOver { batch, outcomes } => format!(
            "batch {} handed over, notified {} of {}",
            batch.id,
            outcomes.len(),
            batch.items.len()
        ),
        Phase::Down => "down".into(),
    }
}

impl DeliveryState {
    /// Seqs settled `Delivered` by the daemon's own outcome.
    pub fn delivered(&self) -> BTreeSet<u64> {
        self.settles
            .iter()
            .flat_map(|r| r.outcomes.iter())
            .filter(|(_, ok)| *ok)
            .map(|(seq, _)| *seq)
            .collect()
    }

    /// Seqs that `park` acknowledged.
    fn acknowledged(&self) -> std::ops::RangeInclusive<u64> {
        1..=self.arrived as u64
    }

    /// Where each seq is in the queue: parked, in flight or dead (a seq may be listed twice).
    fn places(&self) -> BTreeMap<u64, Vec<&'static str>> {
        let mut places: BTreeMap<u64, Vec<&'static str>> = BTreeMap::new();
        for item in self.queue.parked() {
            places.entry(item.seq).or_default().push("parked");
        }
        for item in self.queue.in_flight().iter().flat_map(|b| b.items.iter()) {
            places.entry(item.seq).or_default().push("in flight");
        }
        for item in self.queue.dead_letters() {
            places.entry(item.seq).or_default().push("dead");
        }
        places
    }

    /// Every item the queue holds, with its failures.
    fn items(&self) -> impl Iterator<Item = &RefItem> {
        self.queue
            .parked()
            .iter()
            .chain(
                self.queue
                    .in_flight()
                    .into_iter()
                    .flat_map(|b| b.items.iter()),
            )
            .chain(self.queue.dead_letters())
    }

    /// The boundary that first returned batch `id`.
    fn original(&self, id: u64) -> Option<&BoundaryRecord> {
        self.boundaries.iter().find(|r| r.batch.id == id)
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The properties, named by spec id
// ---------------------------------------------------------------------------------------------

/// `always`: a new batch is the first `split` lines of the lines parked at its boundary, and no
/// fewer (pop-all, not pop-front).
pub const D1: &str = "D1 batch at the boundary";
/// `always`: a batch holds only lines parked at its original boundary; later lines wait.
pub const D2: &str = "D2 no waiting window";
/// `always`: every handed-over item is its parked line byte for byte, with its request (D3, D4).
pub const D3: &str = "D3 items verbatim";
/// `always`: one notified event per delivered item, matching its hand-over (D5).
pub const D5: &str = "D5 notified per request";
/// `always`: an item's state depends only on its own outcomes (D6, D7).
pub const D6: &str = "D6 per-request independence";
/// `always`: an item failed `failures_max` times is a dead letter, kept, never offered again.
pub const D8: &str = "D8 dead letter";
/// `always`: every acknowledged line is exactly one of parked, in flight, delivered, dead.
pub const D9: &str = "D9 no loss";
/// `always`: a replay has the same id, items and remaining, attempt + 1 and the repeat mark.
pub const D10: &str = "D10 repeat recognisable";
/// `always`: every batch equals `split` applied to the parked list at its original boundary.
pub const D11: &str = "D11 deterministic split";
/// `always`: a batch costs at most the budget, unless it is one line alone.
pub const D12: &str = "D12 budget";
/// `always`: the header and trailer count what was parked at the original boundary (D4, D13).
pub const D13: &str = "D13 trailer count";
/// `always`: a collected line is still parked, in flight, delivered or dead.
pub const D14: &str = "D14 collected is not consumed";
/// `eventually`: every line of the bounds is delivered or dead-lettered.
pub const D15: &str = "D15 eventually";
/// `always`: once nothing more can happen but crashes and collections, every line is delivered
/// or dead-lettered (D15 as a safety property: `eventually` is judged at terminal states only).
pub const D15_QUIESCENT: &str = "D15 quiescent means delivered";
/// `always`: seqs increase, the parked list and each batch are in seq order, a batch precedes
/// what it leaves parked.
pub const D17: &str = "D17 order";
/// `always`: a line settled delivered or dead is never handed over again.
pub const D18: &str = "D18 no silent duplicate";
/// `sometimes`: a handed-over batch leaves lines parked.
pub const SOMETIMES_SPLIT: &str = "a split happens";
/// `sometimes`: a repeat is handed over.
pub const SOMETIMES_REPEAT: &str = "a repeat is delivered";
/// `sometimes`: a crash between "batch written" and "mirror cleared".
pub const SOMETIMES_CRASH_MID_BATCH: &str = "a crash between write and clear";
/// `sometimes`: an item reaches the dead letters.
pub const SOMETIMES_DEAD: &str = "an item is dead-lettered";
/// `sometimes`: a failed item is offered again (D7).
pub const SOMETIMES_RETRY: &str = "a failed item is retried";
/// `sometimes`: a line larger than the budget is delivered alone (D12).
pub const SOMETIMES_OVERSIZED: &str = "a line over the budget goes alone";
/// `sometimes`: a line arrives while a batch is being delivered (D2: it waits for the next).
pub const SOMETIMES_LATE_LINE: &str = "a line arrives during delivery";
/// `sometimes`: a collected line is delivered (D14).
pub const SOMETIMES_COLLECTED_DELIVERED: &str = "a collected line is delivered";

fn d1_batch_at_the_boundary(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.boundaries.iter().filter(|r| !r.replay).all(|r| {
        let k = split(&r.parked, m.bounds.budget);
        let seqs: Vec<u64> = r.parked.iter().map(|i| i.seq).collect();
        r.batch.items.len() >= k && seqs.starts_with(&r.batch.seqs())
    })
}

fn d2_no_waiting_window(_: &DeliveryModel, s: &DeliveryState) -> bool {
    s.boundaries.iter().all(|r| match s.original(r.batch.id) {
        Some(o) => {
            let at_boundary: BTreeSet<u64> = o.parked.iter().map(|i| i.seq).collect();
            r.batch.items.iter().all(|i| at_boundary.contains(&i.seq))
                && r.batch.items.len() + r.batch.remaining <= o.parked.len()
        }
        None => false,
    })
}

fn d3_items_verbatim(m: &DeliveryModel, s: &DeliveryState) -> bool {
    let verbatim = |item: &RefItem| {
        usize::try_from(item.seq)
            .ok()
            .and_then(|seq| m.bounds.lines.get(seq.wrapping_sub(1)))
            .is_some_and(|(request, line)| *request == item.request && *line == item.line)
    };
    s.items().all(verbatim)
        && s.handed.iter().all(|b| {
            let text = turn_text(b);
            let body: Vec<&str> = text.lines().skip(1).take(b.items.len()).collect();
            b.items.iter().all(verbatim)
                && body.len() == b.items.len()
                && body.iter().zip(&b.items).all(|(l, i)| *l == i.line)
        })
}

fn d5_notified_per_request(_: &DeliveryModel, s: &DeliveryState) -> bool {
    let events_match = s.notified.iter().all(|e| {
        e.repeat == (e.attempt > 1)
            && s.handed.iter().any(|b| {
                b.id == e.batch
                    && b.attempt == e.attempt
                    && b.items
                        .iter()
                        .any(|i| i.seq == e.seq && i.request == e.request)
            })
    });
    let delivered_notified = s.settles.iter().all(|r| {
        r.outcomes.iter().filter(|(_, ok)| *ok).all(|(seq, _)| {
            s.notified
                .iter()
                .any(|e| e.seq == *seq && e.batch == r.batch && e.attempt == r.attempt)
        })
    });
    events_match && delivered_notified
}

fn d6_per_request_independence(m: &DeliveryModel, s: &DeliveryState) -> bool {
    let places = s.places();
    s.acknowledged().all(|seq| {
        let own: Vec<bool> = s
            .settles
            .iter()
            .flat_map(|r| r.outcomes.iter())
            .filter(|(q, _)| *q == seq)
            .map(|(_, ok)| *ok)
            .collect();
        let item = s.items().find(|i| i.seq == seq);
        if own.contains(&true) {
            return item.is_none();
        }
        let failed = own.len() as u32;
        match item {
            Some(item) => {
                let dead = places.get(&seq).is_some_and(|p| p.contains(&"dead"));
                item.failures == failed && dead == (failed >= m.bounds.failures_max)
            }
            None => false,
        }
    })
}

fn d8_dead_letter(m: &DeliveryModel, s: &DeliveryState) -> bool {
    let dead: BTreeSet<u64> = s.queue.dead_letters().iter().map(|i| i.seq).collect();
    let mut expected_dead = BTreeSet::new();
    for (index, r) in s.settles.iter().enumerate() {
        for (seq, ok) in &r.outcomes {
            if *ok {
                continue;
            }
            let failed = s.settles[..=index]
                .iter()
                .flat_map(|r| r.outcomes.iter())
                .filter(|(q, ok)| q == seq && !*ok)
                .count();
            if failed as u32 >= m.bounds.failures_max {
                expected_dead.insert(*seq);
                // Never offered again after its death.
                if s.handed[r.handed_before..]
                    .iter()
                    .any(|b| b.items.iter().any(|i| i.seq == *seq))
                {
                    return false;
                }
            }
        }
    }
    expected_dead == dead
}

fn d9_no_loss(_: &DeliveryModel, s: &DeliveryState) -> bool {
    let places = s.places();
    let delivered = s.delivered();
    s.acknowledged().all(|seq| {
        let held = places.get(&seq).map_or(0, Vec::len);
        held + usize::from(delivered.contains(&seq)) == 1
    })
}

fn d10_repeat_recognisable(_: &DeliveryModel, s: &DeliveryState) -> bool {
    let mut last: BTreeMap<u64, &RefBatch> = BTreeMap::new();
    let mut max_id = 0;
    for r in &s.boundaries {
        let b = &r.batch;
        let ok = match last.get(&b.id) {
            Some(prev) => {
                r.replay
                    && b.attempt == prev.attempt + 1
                    && b.items == prev.items
                    && b.remaining == prev.remaining
            }
            None => !r.replay && b.attempt == 1 && b.id > max_id,
        };
        if !ok {
            return false;
        }
        max_id = max_id.max(b.id);
        last.insert(b.id, b);
    }
    s.handed.iter().all(|b| {
        let header = turn_text(b);
        header.lines().next().is_some_and(|h| {
            h.starts_with(&format!("[parkline batch {} attempt {}", b.id, b.attempt))
                && h.contains(", repeat:") == b.is_repeat()
        })
    })
}

fn d11_deterministic_split(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.boundaries.iter().all(|r| match s.original(r.batch.id) {
        Some(o) => {
            let k = split(&o.parked, m.bounds.budget);
            let want: Vec<u64> = o.parked[..k].iter().map(|i| i.seq).collect();
            r.batch.seqs() == want && r.batch.remaining == o.parked.len() - k
        }
        None => false,
    })
}

fn d12_budget(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.handed.iter().all(|b| {
        b.items.len() == 1 || b.items.iter().map(RefItem::cost).sum::<usize>() <= m.bounds.budget
    })
}

fn d13_trailer_count(_: &DeliveryModel, s: &DeliveryState) -> bool {
    s.handed.iter().all(|b| match s.original(b.id) {
        Some(o) => {
            let remaining = o.parked.len().saturating_sub(o.batch.items.len());
            let text = turn_text(b);
            let mut lines = text.lines();
            let header_ok = lines.next().is_some_and(|h| {
                h.ends_with(&format!(
                    ": {} of {} parked lines]",
                    b.items.len(),
                    o.parked.len()
                ))
            });
            let trailer_ok = lines.last().is_some_and(|t| {
                t == format!(
                    "[parkline batch {} end: {remaining} parked lines still undelivered]",
                    b.id
                )
            });
            header_ok && trailer_ok
        }
        None => false,
    })
}

fn d14_collected_is_not_consumed(_: &DeliveryModel, s: &DeliveryState) -> bool {
    let places = s.places();
    let delivered = s.delivered();
    s.collected
        .iter()
        .all(|seq| places.contains_key(seq) || delivered.contains(seq))
}

fn quiescent(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.phase == Phase::Idle && s.arrived == m.bounds.lines.len() && !s.queue.has_batch_ready()
}

fn everything_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    let delivered = s.delivered();
    let dead: BTreeSet<u64> = s.queue.dead_letters().iter().map(|i| i.seq).collect();
    s.arrived == m.bounds.lines.len()
        && s.acknowledged()
            .all(|seq| delivered.contains(&seq) || dead.contains(&seq))
}

fn d15_quiescent_means_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    !quiescent(m, s) || everything_delivered(m, s)
}

fn d15_everything_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    everything_delivered(m, s)
}

fn d17_order(_: &DeliveryModel, s: &DeliveryState) -> bool {
    let increasing = |items: &[RefItem]| items.windows(2).all(|w| w[0].seq < w[1].seq);
    s.queue.mirror().next_seq == s.arrived as u64 + 1
        && increasing(s.queue.parked())
        && s.handed.iter().all(|b| increasing(&b.items))
        && s.boundaries.iter().filter(|r| !r.replay).all(|r| {
            let first_left = r
                .parked
                .iter()
                .map(|i| i.seq)
                .filter(|seq| !r.batch.seqs().contains(seq))
                .min();
            first_left.is_none_or(|left| r.batch.items.iter().all(|i| i.seq < left))
        })
}

fn d18_no_silent_duplicate(_: &DeliveryModel, s: &DeliveryState) -> bool {
    s.settles.iter().all(|r| {
        r.outcomes.iter().filter(|(_, ok)| *ok).all(|(seq, _)| {
            !s.handed[r.handed_before..]
                .iter()
                .any(|b| b.items.iter().any(|i| i.seq == *seq))
        })
    })
}
