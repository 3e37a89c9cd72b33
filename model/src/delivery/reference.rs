//! The plain reference of the delivery protocol: [`split`], [`turn_text`], [`notified`] and
//! [`Reference`], the durable mirror and volatile state of a correct queue with `park`,
//! `boundary`, `settle` and `crash`. It does no I/O and knows nothing of stateright: the
//! differential tests and the fuzz targets use it as their oracle, and [`super::DeliveryModel`]
//! calls it for every transition, so the three uses check one description of the protocol.
//! The known-bad steps it can follow are chosen by [`Variant`] (`variants.rs`).

use std::fmt;

use super::variants::{Variant, split_overshoot, take_in_hash_order};

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
    // Seen by the model: its known-bad DropCollected step removes a parked line, which no
    // method of a correct queue does.
    pub(super) mirror: Mirror,
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
