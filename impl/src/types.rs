//! The vocabulary of delivery: items, batches, outcomes, the split and the turn text, over the
//! ids of `ids.rs`.

use serde::{Deserialize, Serialize};

pub use crate::ids::{Attempt, BatchId, Budget, Life, RequestId, Seq};
use crate::line::Line;

impl Budget {
    /// The budget whose batches' whole turn texts, header and trailer included, are at most
    /// `chars_max` characters, first hand-over or repeat (D12): `chars_max` less
    /// [`FRAMING_CHARS_MAX`](crate::frame::FRAMING_CHARS_MAX). A single line longer than that
    /// still goes alone and whole (D12), over the limit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BudgetTooSmall`](crate::error::ErrorKind::BudgetTooSmall) when `chars_max` cannot
    /// hold the framing; [`Error::needed_chars`](crate::error::Error::needed_chars) is the smallest that
    /// can.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Budget, ErrorKind, frame::FRAMING_CHARS_MAX};
    /// assert_eq!(Budget::for_turn_chars(FRAMING_CHARS_MAX + 100)?, Budget(100));
    /// let err = Budget::for_turn_chars(150).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::BudgetTooSmall);
    /// assert_eq!(err.needed_chars(), Some(FRAMING_CHARS_MAX));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn for_turn_chars(chars_max: usize) -> crate::error::Result<Budget> {
        //= spec/delivery.md#d12-budget
        //# A batch split under `Budget::for_turn_chars(n)` MUST have a turn text of at most `n`
        //# chars, header and trailer included, on every hand-over, unless it is a single item
        //# whose cost alone exceeds the budget.
        let framing = crate::frame::FRAMING_CHARS_MAX;
        chars_max.checked_sub(framing).map(Budget).ok_or_else(|| {
            crate::error::Error::new(
                crate::error::ErrorKind::BudgetTooSmall,
                format!(
                    "a turn of at most {chars_max} chars cannot hold its header and trailer \
                     ({framing} chars at most)"
                ),
            )
            .with_needed_chars(framing)
        })
    }
}

/// One parked completion line with its arrival number and failure count.
///
/// # Example
///
/// ```
/// use parkline::{Item, RequestId, Seq};
/// let item = Item::new(Seq(1), RequestId(9), "done");
/// assert_eq!(item.cost(), 5);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Item {
    /// Arrival order number.
    pub seq: Seq,
    /// The request the line answers.
    pub request: RequestId,
    /// The line, verbatim, without `\n`. Shared, not copied, between the parked list, the
    /// in-flight batch and the batch `boundary` returns (a clone is a reference count).
    pub line: Line,
    /// How many hand-overs of this item have failed so far.
    pub failures: u32,
    /// How many hand-overs of this item were made durable (the `batch` and `attempt` records
    /// that named it, D19): counted before `boundary` returns, so a hand-over the parent may have
    /// seen is counted even if a crash follows it. Kept through failures, dead letters and
    /// redrives.
    pub handed: u64,
    /// When the line was parked, in milliseconds since the Unix epoch, by the queue's
    /// [`Clock`](crate::clock::Clock); `None` for a line parked before mirror format 4 recorded times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_at: Option<u64>,
    /// When the line became a dead letter, in milliseconds since the Unix epoch; `None` while it
    /// is live, or when it died before mirror format 4 recorded times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub died_at: Option<u64>,
}

impl Item {
    /// An item that has never been handed over or failed.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Item, RequestId, Seq};
    /// let item = Item::new(Seq(1), RequestId(9), "done");
    /// assert_eq!((item.failures, item.handed), (0, 0));
    /// ```
    pub fn new(seq: Seq, request: RequestId, line: impl Into<Line>) -> Item {
        Item {
            seq,
            request,
            line: line.into(),
            failures: 0,
            handed: 0,
            parked_at: None,
            died_at: None,
        }
    }

    /// The same item parked at `at` (milliseconds since the Unix epoch).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Item, RequestId, Seq};
    /// let item = Item::new(Seq(1), RequestId(9), "done").with_parked_at(1_000);
    /// assert_eq!((item.parked_at(), item.died_at()), (Some(1_000), None));
    /// ```
    #[must_use]
    pub fn with_parked_at(mut self, at: u64) -> Item {
        self.parked_at = Some(at);
        self
    }

    /// When the line was parked (milliseconds since the Unix epoch), if the mirror knows.
    pub fn parked_at(&self) -> Option<u64> {
        self.parked_at
    }

    /// When the line became a dead letter (milliseconds since the Unix epoch), if it is one and
    /// the mirror knows.
    pub fn died_at(&self) -> Option<u64> {
        self.died_at
    }

    /// The same item with `failures` failed hand-overs.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Item, RequestId, Seq};
    /// assert_eq!(Item::new(Seq(1), RequestId(9), "done").with_failures(2).failures, 2);
    /// ```
    #[must_use]
    pub fn with_failures(mut self, failures: u32) -> Item {
        self.failures = failures;
        self
    }

    /// The same item with a hand-over count of `handed`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Item, RequestId, Seq};
    /// assert_eq!(Item::new(Seq(1), RequestId(9), "done").with_handed(3).handed, 3);
    /// ```
    #[must_use]
    pub fn with_handed(mut self, handed: u64) -> Item {
        self.handed = handed;
        self
    }

    /// The item's cost against a [`Budget`]: its characters plus one (D12).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Item, RequestId, Seq};
    /// let item = Item::new(Seq(1), RequestId(1), "é!");
    /// assert_eq!(item.cost(), 3); // two characters (three bytes) plus one
    /// ```
    pub fn cost(&self) -> usize {
        //= spec/delivery.md#d4-framing
        //# Header and trailer MUST NOT count toward the budget (D12).
        self.line.chars().count() + 1
    }
}

/// The lines delivered as one turn, with id, attempt and how many parked lines it leaves behind.
///
/// # Example
///
/// ```
/// use parkline::{Attempt, Batch, BatchId, Item, RequestId, Seq};
/// let items = vec![Item::new(Seq(1), RequestId(7), "r7 ok").with_handed(2)];
/// let batch = Batch::new(BatchId(4), Attempt(2), items, 3);
/// assert!(batch.is_repeat());
/// assert_eq!(
///     batch.text(),
///     "[parkline batch 4 attempt 2, repeat: 1 of 4 parked lines, 0 seen before, 6 bytes]\n\
///      r7 ok\n\
///      [parkline batch 4 end: 3 parked lines still undelivered, crc32 614c11ae]\n"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Batch {
    /// The batch id, the same on every attempt.
    pub id: BatchId,
    /// 1 the first time the batch is handed over, more for a repeat.
    pub attempt: Attempt,
    /// The items, in seq order (D17).
    pub items: Vec<Item>,
    /// Lines parked at the boundary that are not in this batch (D13).
    pub remaining: usize,
    /// How many of its items were handed over in an earlier batch (D20): fixed when the batch
    /// is created, so a repeat has the same `seen`.
    pub seen: usize,
}

impl Batch {
    /// A batch of `items` at `attempt`, leaving `remaining` parked lines behind, none of its
    /// items seen in an earlier batch. `Queue::boundary` is where
    /// batches come from; this is for tests and renderings of the turn text.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId};
    /// let batch = Batch::new(BatchId(1), Attempt(1), vec![], 0);
    /// assert_eq!(batch.seen, 0);
    /// ```
    pub fn new(id: BatchId, attempt: Attempt, items: Vec<Item>, remaining: usize) -> Batch {
        Batch {
            id,
            attempt,
            items,
            remaining,
            seen: 0,
        }
    }

    /// The same batch with `seen` of its items handed over in an earlier batch (D20).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId};
    /// assert_eq!(Batch::new(BatchId(1), Attempt(1), vec![], 0).with_seen(2).seen, 2);
    /// ```
    #[must_use]
    pub fn with_seen(mut self, seen: usize) -> Batch {
        self.seen = seen;
        self
    }

    /// True when this batch was handed over before (attempt > 1, D10).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId};
    /// let batch = Batch::new(BatchId(1), Attempt(1), vec![], 0);
    /// assert!(!batch.is_repeat());
    /// ```
    pub fn is_repeat(&self) -> bool {
        self.attempt.0 > 1
    }

    /// The turn text handed to the parent: header, each line verbatim, trailer (D3, D4, D13).
    ///
    /// The grammar is D4 (spec/delivery.md), read back by [`crate::frame::parse`]; every line, the
    /// last included, ends in `\n`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId, Item, RequestId, Seq};
    /// let item = |seq, line: &str| Item::new(Seq(seq), RequestId(seq), line);
    /// let batch = Batch::new(BatchId(1), Attempt(1), vec![item(1, "a"), item(2, "b")], 0);
    /// assert_eq!(
    ///     batch.text(),
    ///     "[parkline batch 1 attempt 1: 2 of 2 parked lines, 0 seen before, 4 bytes]\na\nb\n\
    ///      [parkline batch 1 end: 0 parked lines still undelivered, crc32 18572a97]\n"
    /// );
    /// ```
    pub fn text(&self) -> String {
        let mut text = String::new();
        self.write_text(&mut text);
        text
    }

    /// [`text`](Batch::text), appended to `out`: a daemon can keep one buffer for every turn
    /// text and clear it before each boundary, so a large batch's text is not fresh memory each
    /// time ([`crate::frame::render_into`] says what that costs).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId, Item, RequestId, Seq};
    /// let item = Item::new(Seq(1), RequestId(1), "a");
    /// let batch = Batch::new(BatchId(1), Attempt(1), vec![item], 0);
    /// let mut turn = String::new();
    /// for _ in 0..2 {
    ///     turn.clear();
    ///     batch.write_text(&mut turn);
    ///     assert_eq!(turn, batch.text());
    /// }
    /// ```
    pub fn write_text(&self, out: &mut String) {
        //= spec/delivery.md#d10-repeat-recognisable
        //# Its turn text MUST equal the original's except for `ATTEMPT` and `REPEAT` in the header.
        crate::frame::render_into(
            out,
            self.id,
            self.attempt,
            self.seen,
            self.remaining,
            self.items.iter().map(|item| &*item.line),
        );
    }

    /// One notified event per item, in item order, carrying the batch's attempt and repeat mark
    /// (D5, D10).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, Batch, BatchId, Item, RequestId, Seq};
    /// let item = Item::new(Seq(5), RequestId(42), "x");
    /// let batch = Batch::new(BatchId(2), Attempt(3), vec![item], 0);
    /// let events = batch.notified();
    /// assert_eq!(events.len(), 1);
    /// assert_eq!(events[0].request, RequestId(42));
    /// assert!(events[0].repeat);
    /// ```
    pub fn notified(&self) -> Vec<Notified> {
        //= spec/delivery.md#d5-notified-per-request
        //# For every hand-over of a batch (first or repeat) the daemon MUST record one
        //# `delegation_notified` event per item, in item order, carrying `{ request, seq, batch,
        //# attempt, repeat, handed }` of that item and that hand-over, where `repeat = (attempt >
        //# 1)`.
        //= spec/delivery.md#d5-notified-per-request
        //# `Batch::notified()` MUST return exactly these events.
        //= spec/delivery.md#d5-notified-per-request
        //# parkline MUST NOT replace them by a single per-batch event.
        let repeat = self.is_repeat();
        self.items
            .iter()
            .map(|item| Notified {
                request: item.request,
                seq: item.seq,
                batch: self.id,
                attempt: self.attempt,
                repeat,
                //= spec/delivery.md#d19-hand-over-count-per-item
                //# The notified event of each hand-over (D5) MUST carry the item's count including
                //# that hand-over (1 the first time).
                handed: item.handed,
            })
            .collect()
    }
}

/// The per-request `delegation_notified` event the daemon records for each item of a batch (D5).
///
/// # Example
///
/// ```
/// use parkline::{Attempt, BatchId, Notified, RequestId, Seq};
/// let event = Notified::new(RequestId(1), Seq(1), BatchId(1), Attempt(1), 1);
/// assert!(!event.repeat);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Notified {
    /// The request the item answers.
    pub request: RequestId,
    /// The item's seq.
    pub seq: Seq,
    /// The batch that carried it.
    pub batch: BatchId,
    /// The batch's attempt.
    pub attempt: Attempt,
    /// True when the batch is a repeat (attempt > 1).
    pub repeat: bool,
    /// The item's hand-over count at this hand-over, this one included (1: the first time the
    /// parent is given the line; D19).
    pub handed: u64,
}

impl Notified {
    /// The event of one item's hand-over, as [`Batch::notified`] makes it; for tests that
    /// compare events.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Attempt, BatchId, Notified, RequestId, Seq};
    /// let event = Notified::new(RequestId(1), Seq(1), BatchId(1), Attempt(1), 1);
    /// assert!(!event.repeat);
    /// ```
    pub fn new(
        request: RequestId,
        seq: Seq,
        batch: BatchId,
        attempt: Attempt,
        handed: u64,
    ) -> Self {
        Notified {
            request,
            seq,
            batch,
            attempt,
            repeat: attempt.0 > 1,
            handed,
        }
    }
}

/// What a park answers for one line (D3): the line is held under its seq, or the mirror
/// remembers that its request was already delivered or discarded, and nothing was written.
///
/// # Example
///
/// ```
/// use parkline::{BatchId, Parked, Seq};
/// let answer = Parked::Delivered { seq: Seq(4), batch: BatchId(2) };
/// assert_eq!(answer.seq(), Seq(4));
/// assert!(!answer.is_held() && Parked::Held(Seq(5)).is_held());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Parked {
    /// The mirror holds the line under this seq: parked now, or by an earlier park of the same
    /// line (parked, in flight; D3).
    Held(Seq),
    /// The request's line was settled delivered in batch `batch`: a retry, nothing written and
    /// nothing delivered again (D3's remembered window).
    Delivered {
        /// The seq the line had.
        seq: Seq,
        /// The batch that delivered it.
        batch: BatchId,
    },
    /// The request's line was a dead letter that was discarded (D8): a retry, nothing written.
    Discarded {
        /// The seq the line had.
        seq: Seq,
    },
}

impl Parked {
    /// The line's seq, whatever became of it.
    pub fn seq(self) -> Seq {
        match self {
            Parked::Held(seq) | Parked::Delivered { seq, .. } | Parked::Discarded { seq } => seq,
        }
    }

    /// Whether the mirror holds the line now (it will be delivered, or is a dead letter's retry
    /// refused apart).
    pub fn is_held(self) -> bool {
        matches!(self, Parked::Held(_))
    }
}

/// How a remembered request's line left the mirror (D3's remembered window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Ended {
    /// Settled delivered.
    Delivered,
    /// Discarded as a dead letter (D8).
    Discarded,
}

/// One entry of the mirror's remembered window (D3): a request whose line left the mirror, with
/// the CRC-64 of that line, so that a retried park of it answers instead of delivering twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Remembered {
    /// The request the line answered.
    pub request: RequestId,
    /// The CRC-64/XZ of the line's bytes.
    pub crc: u64,
    /// The seq the line had.
    pub seq: Seq,
    /// The batch that delivered it; `None` for a discarded dead letter.
    pub batch: Option<BatchId>,
    /// How it left.
    pub end: Ended,
}

impl Remembered {
    /// The entry of a request whose line (of CRC-64 `crc`) had seq `seq` and ended as `end`, in
    /// `batch` when delivered.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{BatchId, Ended, Parked, Remembered, RequestId, Seq};
    /// let entry = Remembered::new(RequestId(7), 0, Seq(1), Some(BatchId(2)), Ended::Delivered);
    /// assert_eq!(entry.answer(), Parked::Delivered { seq: Seq(1), batch: BatchId(2) });
    /// ```
    pub fn new(
        request: RequestId,
        crc: u64,
        seq: Seq,
        batch: Option<BatchId>,
        end: Ended,
    ) -> Remembered {
        Remembered {
            request,
            crc,
            seq,
            batch,
            end,
        }
    }

    /// The answer a retried park of the same line gets.
    pub fn answer(&self) -> Parked {
        match (self.end, self.batch) {
            (Ended::Delivered, Some(batch)) => Parked::Delivered {
                seq: self.seq,
                batch,
            },
            _ => Parked::Discarded { seq: self.seq },
        }
    }
}

/// What happened to one item of a handed-over batch.
///
/// # Example
///
/// ```
/// use parkline::Outcome;
/// let outcomes = [Outcome::Delivered, Outcome::Failed];
/// assert_ne!(outcomes[0], outcomes[1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Outcome {
    /// The turn was handed over and the item's notified event recorded: clear it.
    Delivered,
    /// The hand-over or the notified event failed: keep it parked (D7).
    Failed,
}

/// What a settle did, by seq: cleared, parked again, or moved to the dead letters.
///
/// # Example
///
/// ```
/// let settlement = parkline::Settlement::default();
/// assert!(settlement.delivered.is_empty() && settlement.failed.is_empty() && settlement.dead.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Settlement {
    /// Items cleared from the mirror.
    pub delivered: Vec<Seq>,
    /// Items parked again with one more failure.
    pub failed: Vec<Seq>,
    /// Items that reached `failures_max` and moved to the dead letters (D8).
    pub dead: Vec<Seq>,
}

impl Settlement {
    /// A settlement of the given seqs; for tests that compare what a settle did.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Seq, Settlement};
    /// let settlement = Settlement::new(vec![Seq(1)], vec![], vec![]);
    /// assert_eq!(settlement.delivered, [Seq(1)]);
    /// ```
    pub fn new(delivered: Vec<Seq>, failed: Vec<Seq>, dead: Vec<Seq>) -> Self {
        Settlement {
            delivered,
            failed,
            dead,
        }
    }
}

/// The deterministic split (D11, D12): how many of the parked items, in seq order, go into the
/// next batch.
///
/// Takes the longest prefix whose total cost (`chars + 1` per item) is at most `budget`, but
/// always at least one item, so a single line larger than the budget is delivered alone and never
/// cut. Returns 0 only when `items` is empty. A pure function of the list and the budget.
///
/// # Example
///
/// ```
/// use parkline::{split, Budget, Item, RequestId, Seq};
/// let item = |seq, line: &str| Item::new(Seq(seq), RequestId(seq), line);
/// let items = [item(1, "abcd"), item(2, "ef"), item(3, "g")];
/// assert_eq!(split(&items, Budget(8)), 2); // 5 + 3 = 8 fits, + 2 does not
/// assert_eq!(split(&items, Budget(1)), 1); // always at least one
/// assert_eq!(split(&[], Budget(100)), 0);
/// ```
pub fn split(items: &[Item], budget: Budget) -> usize {
    //= spec/delivery.md#d11-deterministic-split
    //# The batch MUST be cut at item boundaries only, never inside a line.
    //= spec/delivery.md#d11-deterministic-split
    //# `split` MUST depend on nothing but the ordered parked list and the budget (no clock, no
    //# arrival timing, no hash order).
    //= spec/delivery.md#d12-budget
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    // A line's characters never outnumber its bytes, so when the bytes of every line (plus one
    // each) fit the budget, so does every cost, and the walk below would take them all: the
    // common case (a budget well above the backlog) counts no characters.
    let bytes = items.iter().fold(0usize, |sum, item| {
        sum.saturating_add(item.line.len()).saturating_add(1)
    });
    if bytes <= budget.0 {
        return items.len();
    }
    let mut spent = 0usize;
    let mut taken = 0usize;
    for item in items {
        spent = spent.saturating_add(item.cost());
        if spent > budget.0 {
            break;
        }
        taken += 1;
    }
    if items.is_empty() { 0 } else { taken.max(1) }
}
