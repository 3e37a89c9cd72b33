//! The plain reference of the delivery protocol: [`split`], [`turn_text`], [`notified`] and
//! [`Reference`], the durable mirror and volatile state of a correct queue with `park`,
//! `boundary`, `settle` and `crash`. It does no I/O and knows nothing of stateright: the
//! differential tests and the fuzz targets use it as their oracle, and [`super::DeliveryModel`]
//! calls it for every transition, so the three uses check one description of the protocol.
//! The known-bad steps it can follow are chosen by [`Variant`] (`variants.rs`).

use std::fmt;

use super::variants::{Variant, split_overshoot, take_in_hash_order};

/// The crate's default repeat bound (`Config::repeats_max`): a batch is handed over at most this
/// many times without a settle (D10).
pub const REPEATS_MAX: u32 = 3;

/// One parked line: its arrival number, the request it answers, the line verbatim, how many
/// times it failed (D7) and how many hand-overs of it were made durable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefItem {
    /// Arrival order number, assigned at park, strictly increasing from 1 (D17).
    pub seq: u64,
    /// The request the line answers (D3: kept as given at park).
    pub request: u64,
    /// The line, verbatim (D3).
    pub line: String,
    /// How many settles recorded this item as failed (D7, D8); 0 again after a redrive.
    pub failures: u32,
    /// How many hand-overs of the item were made durable: raised when the record that allows the
    /// hand-over (a batch or an attempt) is applied, before the boundary returns, so a crash
    /// between hand-over and settle keeps it. An upper bound on what the parent saw. Kept by
    /// settle and by redrive.
    pub handed: u64,
}

impl RefItem {
    /// The item's cost against the budget: Unicode scalar values of the line plus its newline.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::RefItem;
    /// let item = RefItem { seq: 1, request: 1, line: "é!".into(), failures: 0, handed: 0 };
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
    /// How many of its items were handed over in an earlier batch (their `handed` was above 0
    /// just before this batch's record). Fixed at the batch's creation: a repeat keeps it.
    pub seen: usize,
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
    /// The item's `handed` at this hand-over (1 at the first hand-over of a fresh line).
    pub handed: u64,
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

/// How a remembered request's line left the mirror (issue 42's remembered deliveries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefEnded {
    /// Settled `Delivered` as an item of this batch.
    Delivered {
        /// The batch that delivered it.
        batch: u64,
    },
    /// Discarded from the dead letters (D8); a dead letter's record names no batch.
    Discarded,
}

/// One entry of the remembered window: a request whose line the mirror settled as delivered or
/// discarded, kept so that a park of it again (a daemon retrying a park whose answer it lost)
/// is answered from here instead of parking the line anew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RefRemembered {
    /// The request.
    pub request: u64,
    /// The CRC-64/XZ of its line: a park again with the same line is answered from the window,
    /// one with another line is a conflict.
    pub crc: u64,
    /// The seq the line had.
    pub seq: u64,
    /// How the line ended.
    pub ended: RefEnded,
}

/// What a park answered ([`Reference::try_park_answer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefParked {
    /// The line is held with this seq: parked now, or already held (a retried park, D3).
    Held(u64),
    /// The request is remembered with this line: it was delivered or discarded, nothing was
    /// written.
    Remembered(RefRemembered),
}

impl RefParked {
    /// The seq the answer names: the held line's, or the remembered line's.
    pub fn seq(self) -> u64 {
        match self {
            RefParked::Held(seq) => seq,
            RefParked::Remembered(entry) => entry.seq,
        }
    }
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
    /// `u64::MAX` (never a seq or an id), a recovered batch's attempt is `u32::MAX` (no higher
    /// attempt), a group park would reach seq `u64::MAX`, or a hand-over would overflow an item's
    /// `handed`. Nothing changes (spec/mirror.md M6, spec/delivery.md D10).
    Exhausted,
    /// `park_all`: the line at this index of the group holds a `\n`; nothing is parked.
    InvalidLine(usize),
    /// `redrive`: this seq is not a dead letter (or is named twice); nothing moves.
    NotDead(u64),
    /// A park for a request whose other line is held (parked or in flight) or remembered, or a
    /// group that names a request twice or mixes held or remembered requests with new ones (D3,
    /// D22); nothing changes.
    RequestConflict,
    /// A park for a request whose line is a dead letter (D3); nothing changes.
    RequestDead,
    /// [`Reference::from_mirror`]: a mirror no correct queue can hold (a seq or batch id of
    /// `u64::MAX`, a parked item with `u32::MAX` failures, an attempt of 0, an in-flight item
    /// handed fewer times than its batch's attempt, a `seen` its items do not give).
    Corrupt,
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RefError::BatchInFlight => "a batch of this life is in flight",
            RefError::UnknownBatch => "no batch of this life with that id is in flight",
            RefError::OutcomeCount => "one outcome per item is required",
            RefError::Exhausted => "a counter is exhausted",
            RefError::InvalidLine(index) => {
                return write!(f, "line {index} of the group holds a newline");
            }
            RefError::NotDead(seq) => return write!(f, "seq {seq} is not a dead letter"),
            RefError::Corrupt => "the mirror is impossible",
            RefError::RequestConflict => "the request has another line held",
            RefError::RequestDead => "the request's line is a dead letter",
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
/// let item = |seq, line: &str| RefItem { seq, request: seq, line: line.into(), failures: 0, handed: 0 };
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

/// The exact turn text of a batch (D3, D4, D13): header, body (each line verbatim followed by
/// `\n`), trailer. The header fixes the body's byte length and the trailer carries its CRC-32,
/// so a reader never takes a line that imitates framing for framing ([`parse_turn`]).
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{turn_text, RefBatch, RefItem};
/// let item = |seq, line: &str, handed| RefItem { seq, request: seq, line: line.into(), failures: 0, handed };
/// let items = vec![item(1, "r1 ok", 1), item(2, "r2 x", 2)];
/// let batch = RefBatch { id: 7, attempt: 1, items, remaining: 3, seen: 1 };
/// let crc = crc32fast::hash(b"r1 ok\nr2 x\n");
/// assert_eq!(
///     turn_text(&batch),
///     format!(
///         "[parkline batch 7 attempt 1: 2 of 5 parked lines, 1 seen before, 11 bytes]\n\
///          r1 ok\nr2 x\n\
///          [parkline batch 7 end: 3 parked lines still undelivered, crc32 {crc:08x}]\n"
///     )
/// );
/// ```
pub fn turn_text(batch: &RefBatch) -> String {
    let k = batch.items.len();
    let body_len: usize = batch.items.iter().map(|item| item.line.len() + 1).sum();
    // Written piece by piece rather than with `format!`: the model renders a turn in several
    // properties at every state it checks, and the formatting machinery was most of that cost.
    let mut text = String::with_capacity(body_len + 160);
    text.push_str("[parkline batch ");
    push_decimal(&mut text, batch.id);
    text.push_str(" attempt ");
    push_decimal(&mut text, u64::from(batch.attempt));
    if batch.is_repeat() {
        text.push_str(", repeat");
    }
    text.push_str(": ");
    push_decimal(&mut text, k as u64);
    text.push_str(" of ");
    push_decimal(&mut text, (k + batch.remaining) as u64);
    text.push_str(" parked lines, ");
    push_decimal(&mut text, batch.seen as u64);
    text.push_str(" seen before, ");
    push_decimal(&mut text, body_len as u64);
    text.push_str(" bytes]\n");
    let body_start = text.len();
    for item in &batch.items {
        text.push_str(&item.line);
        text.push('\n');
    }
    let crc = crc32fast::hash(&text.as_bytes()[body_start..]);
    text.push_str("[parkline batch ");
    push_decimal(&mut text, batch.id);
    text.push_str(" end: ");
    push_decimal(&mut text, batch.remaining as u64);
    text.push_str(" parked lines still undelivered, crc32 ");
    for shift in (0..8).rev() {
        let digit = (crc >> (shift * 4)) & 0xf;
        text.push(char::from_digit(digit, 16).unwrap_or('0'));
    }
    text.push_str("]\n");
    text
}

/// `n` in plain decimal (no sign, no leading zeros).
fn push_decimal(text: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        text.push(char::from(d));
    }
}

/// A turn text read back by [`parse_turn`]: the header's and trailer's numbers and the lines.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParsedTurn {
    /// The batch id (header and trailer agree).
    pub id: u64,
    /// The attempt.
    pub attempt: u32,
    /// The header carries `, repeat` (equal to `attempt > 1`).
    pub repeat: bool,
    /// Lines in the batch.
    pub k: usize,
    /// Lines parked at the batch's boundary (`k + remaining`).
    pub n: usize,
    /// Lines handed over in an earlier batch.
    pub seen: usize,
    /// Lines left parked (the trailer's count).
    pub remaining: usize,
    /// The lines, verbatim, without their `\n`.
    pub lines: Vec<String>,
}

/// Why [`parse_turn`] refused a text: which part of the framing is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TurnError {
    /// The first line is not a header of the grammar (or a number in it is out of range, or
    /// `, repeat` disagrees with the attempt).
    Header,
    /// The body (the `BYTES` bytes after the header) is short, does not end in `\n`, does not
    /// hold exactly `K` lines, or its CRC-32 differs from the trailer's.
    Body,
    /// What follows the body is not exactly one trailer of the same batch with `N - K` remaining.
    Trailer,
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TurnError::Header => "the turn does not start with a batch header",
            TurnError::Body => "the turn's body does not match its header and trailer",
            TurnError::Trailer => "the turn does not end with its batch's trailer",
        })
    }
}

impl std::error::Error for TurnError {}

/// A reader of the framing grammar: literals and plain decimal numbers, left to right.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn lit(&mut self, lit: &str) -> Option<()> {
        self.rest = self.rest.strip_prefix(lit)?;
        Some(())
    }

    /// A number in plain decimal: at least one digit, no sign, no leading zero.
    fn num<T: std::str::FromStr>(&mut self) -> Option<T> {
        let digits = self.rest.bytes().take_while(u8::is_ascii_digit).count();
        let (text, rest) = self.rest.split_at(digits);
        if text.is_empty() || (text.len() > 1 && text.starts_with('0')) {
            return None;
        }
        self.rest = rest;
        text.parse().ok()
    }

    fn crc(&mut self) -> Option<u32> {
        let hex = self.rest.get(..8)?;
        if !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        self.rest = &self.rest[8..];
        u32::from_str_radix(hex, 16).ok()
    }
}

/// Read a turn text back (the one reading of the grammar, whatever the lines hold): the header is
/// the first line; it fixes `BYTES`, so the body is exactly the next `BYTES` bytes; the trailer
/// starts exactly there and is the rest of the text. A line that imitates a header or a trailer is
/// inside the body and is never read as framing.
///
/// # Errors
///
/// [`TurnError`] naming the part that does not fit the grammar.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{parse_turn, turn_text, RefBatch, RefItem};
/// let forged = "[parkline batch 3 end: 0 parked lines still undelivered, crc32 00000000]";
/// let item = RefItem { seq: 1, request: 1, line: forged.into(), failures: 0, handed: 1 };
/// let batch = RefBatch { id: 3, attempt: 2, items: vec![item], remaining: 0, seen: 0 };
/// let turn = parse_turn(&turn_text(&batch)).unwrap();
/// assert_eq!((turn.id, turn.attempt, turn.repeat, turn.k), (3, 2, true, 1));
/// assert_eq!(turn.lines, [forged]);
/// ```
pub fn parse_turn(text: &str) -> Result<ParsedTurn, TurnError> {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    let (header, after) = text.split_once('\n').ok_or(TurnError::Header)?;
    let header = read_header(header).ok_or(TurnError::Header)?;
    let body = after.get(..header.bytes).ok_or(TurnError::Body)?;
    let trailer = &after[header.bytes..];
    if !body.ends_with('\n') || body.matches('\n').count() != header.k {
        return Err(TurnError::Body);
    }
    let mut t = Cursor { rest: trailer };
    let (id, remaining, crc) = (|| {
        t.lit("[parkline batch ")?;
        let id: u64 = t.num()?;
        t.lit(" end: ")?;
        let remaining: usize = t.num()?;
        t.lit(" parked lines still undelivered, crc32 ")?;
        let crc = t.crc()?;
        t.lit("]\n")?;
        Some((id, remaining, crc))
    })()
    .ok_or(TurnError::Trailer)?;
    if !t.rest.is_empty() || id != header.id || Some(remaining) != header.n.checked_sub(header.k) {
        return Err(TurnError::Trailer);
    }
    if crc != crc32fast::hash(body.as_bytes()) {
        return Err(TurnError::Body);
    }
    Ok(ParsedTurn {
        id,
        attempt: header.attempt,
        repeat: header.repeat,
        k: header.k,
        n: header.n,
        seen: header.seen,
        remaining,
        lines: body[..body.len() - 1]
            .split('\n')
            .map(str::to_owned)
            .collect(),
    })
}

/// A header's numbers (for the known-bad reader of `variants.rs` too).
pub(super) struct Header {
    pub(super) id: u64,
    pub(super) attempt: u32,
    pub(super) repeat: bool,
    pub(super) k: usize,
    pub(super) n: usize,
    pub(super) seen: usize,
    pub(super) bytes: usize,
}

pub(super) fn read_header(line: &str) -> Option<Header> {
    let mut c = Cursor { rest: line };
    c.lit("[parkline batch ")?;
    let id = c.num()?;
    c.lit(" attempt ")?;
    let attempt: u32 = c.num()?;
    let repeat = c.lit(", repeat").is_some();
    if repeat != (attempt > 1) {
        return None;
    }
    c.lit(": ")?;
    let k = c.num()?;
    c.lit(" of ")?;
    let n = c.num()?;
    c.lit(" parked lines, ")?;
    let seen = c.num()?;
    c.lit(" seen before, ")?;
    let bytes = c.num()?;
    c.lit(" bytes]")?;
    c.rest.is_empty().then_some(Header {
        id,
        attempt,
        repeat,
        k,
        n,
        seen,
        bytes,
    })
}

/// One notified event per item, in item order, with the batch's attempt and repeat mark (D5, D10).
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{notified, RefBatch, RefItem};
/// let item = RefItem { seq: 5, request: 42, line: "x".into(), failures: 0, handed: 3 };
/// let events = notified(&RefBatch { id: 2, attempt: 3, items: vec![item], remaining: 0, seen: 1 });
/// assert_eq!((events[0].request, events[0].seq, events[0].batch, events[0].handed), (42, 5, 2, 3));
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
            handed: item.handed,
        })
        .collect()
}

/// The durable mirror: what survives a crash (spec/delivery.md section 3). Every record's effect
/// is here: a group park's items (all of them, or none when its record was torn), a redrive's
/// lines back in the parked list, and each item's `handed`, raised by the batch and attempt
/// records (an in-flight item's count includes this batch's hand-overs).
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
    /// Dead letters in seq order: items that failed `failures_max` times, or that were alone in
    /// a batch closed by the repeat bound (D8); deleted only by a discard.
    pub dead: Vec<RefItem>,
    /// The most items a new batch may hold, set when a batch is closed (D11); `None`: no cap.
    pub cap: Option<u64>,
    /// The remembered window, oldest first: the last requests settled as delivered or discarded,
    /// at most the queue's `delivered_memory` of them (issue 42; empty at 0, today's queue).
    /// Durable: a crash, a reopen and a compaction keep it.
    pub remembered: Vec<RefRemembered>,
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
/// assert_eq!(batch.items[0].handed, 1); // this hand-over is durable before the boundary returns
/// queue.crash(); // between "batch written" and "mirror cleared"
/// let repeat = queue.boundary(100).unwrap().unwrap();
/// assert_eq!((repeat.id, repeat.attempt, repeat.seen), (1, 2, 0));
/// assert_eq!(repeat.items[1].handed, 2); // the cut hand-over still counts
/// let settled = queue.settle(1, &[true, false]).unwrap();
/// assert_eq!((settled.delivered, settled.failed), (vec![1], vec![2]));
/// assert_eq!(queue.parked()[0].failures, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    failures_max: u32,
    /// A recovered batch at this attempt is closed instead of repeated (D10).
    repeats_max: u32,
    variant: Variant,
    // Seen by the model: its known-bad DropCollected step removes a parked line, which no
    // method of a correct queue does.
    pub(super) mirror: Mirror,
    /// Volatile: the in-flight batch was found at recovery and not yet handed over in this life.
    recovered: bool,
    /// How many requests the remembered window holds (`Mirror::remembered`); 0: none, a retried
    /// park after its line left the mirror is a new line (today's queue).
    delivered_memory: usize,
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
            repeats_max: REPEATS_MAX,
            variant,
            mirror: Mirror {
                next_seq: 1,
                next_batch: 1,
                parked: Vec::new(),
                in_flight: None,
                dead: Vec::new(),
                cap: None,
                remembered: Vec::new(),
            },
            recovered: false,
            delivered_memory: 0,
        }
    }

    /// The queue with its repeat bound at `repeats_max` (at least 1) instead of the crate's
    /// default, [`REPEATS_MAX`].
    pub fn with_repeats_max(mut self, repeats_max: u32) -> Self {
        self.repeats_max = repeats_max.max(1);
        self
    }

    /// The queue with a remembered window of `delivered_memory` requests (0, the default: none);
    /// the oldest entries beyond it are forgotten now.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::{RefEnded, RefError, RefParked, Reference};
    /// let mut queue = Reference::new(3).with_delivered_memory(1);
    /// queue.park(7, "r7 done");
    /// let batch = queue.boundary(100).unwrap().unwrap();
    /// queue.settle(batch.id, &[true]).unwrap();
    /// queue.crash(); // the window is durable
    /// // The daemon parks again the line whose park answer it lost: nothing is written.
    /// let answer = queue.try_park_answer(7, "r7 done").unwrap();
    /// assert!(matches!(answer, RefParked::Remembered(e) if e.seq == 1 && e.ended == RefEnded::Delivered { batch: 1 }));
    /// assert_eq!((queue.mirror().next_seq, queue.parked().len()), (2, 0));
    /// assert_eq!(queue.try_park(7, "another line"), Err(RefError::RequestConflict));
    /// ```
    pub fn with_delivered_memory(mut self, delivered_memory: usize) -> Self {
        self.delivered_memory = delivered_memory;
        let window = &mut self.mirror.remembered;
        window.drain(..window.len().saturating_sub(delivered_memory));
        self
    }

    /// How many requests the remembered window holds at most.
    pub fn delivered_memory(&self) -> usize {
        self.delivered_memory
    }

    /// The remembered window, oldest first (`Mirror::remembered`).
    pub fn remembered(&self) -> &[RefRemembered] {
        &self.mirror.remembered
    }

    /// A queue recovered from `mirror` (an in-flight batch is the recovered batch of this life),
    /// the way opening a mirror file with these contents would find it. Its window's capacity is
    /// the window's length (nothing recovered is forgotten): [`Reference::with_delivered_memory`]
    /// sets the configured one.
    ///
    /// # Errors
    ///
    /// [`RefError::Corrupt`] when no correct queue can hold `mirror` under the counter rules of
    /// spec/mirror.md M6: a seq or batch id of `u64::MAX`, a parked or in-flight item with
    /// `u32::MAX` failures, an attempt of 0; or a remembered window naming a request or a seq
    /// twice, a seq the mirror holds or has not given out, or a batch it has not.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::{Mirror, RefError, Reference};
    /// let mirror = Mirror { next_seq: u64::MAX, next_batch: 1, parked: vec![], in_flight: None, dead: vec![], cap: None, remembered: vec![] };
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
            // Applying the batch record at attempt `a` added `a` to each item's count, and the
            // count before it decides `seen` (it is derived, never stored).
            let attempt = u64::from(batch.attempt);
            corrupt |= batch.items.iter().any(|item| item.handed < attempt);
            corrupt |= batch.seen != batch.items.iter().filter(|i| i.handed > attempt).count();
        }
        corrupt |= !window_fits(&mirror);
        if corrupt {
            return Err(RefError::Corrupt);
        }
        Ok(Reference {
            failures_max,
            repeats_max: REPEATS_MAX,
            variant: Variant::Correct,
            recovered: mirror.in_flight.is_some(),
            delivered_memory: mirror.remembered.len(),
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
        self.try_park_answer(request, line).map(RefParked::seq)
    }

    /// Park a line, as [`Reference::try_park`], and say whether the line is held or its request
    /// remembered: a park of a request in the remembered window with the same line (its CRC-32)
    /// writes nothing and answers how the line ended, with its seq and batch; with another line
    /// it fails with [`RefError::RequestConflict`], as for a held request. A request the window
    /// no longer holds is parked as a new line.
    ///
    /// # Errors
    ///
    /// As [`Reference::try_park`]; [`RefError::RequestConflict`] also for a remembered request
    /// with another line. Nothing changes on an error.
    pub fn try_park_answer(&mut self, request: u64, line: &str) -> Result<RefParked, RefError> {
        // Known bad: no deduplication, a retried park appends a second line.
        if self.variant != Variant::NoParkDedup
            && let Some(repeated) = self.repeated_park(request, line)
        {
            return repeated;
        }
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
            handed: 0,
        });
        Ok(RefParked::Held(seq))
    }

    /// Park a group of lines as one durable record (all or none, D16) and return their seqs:
    /// consecutive from the next seq, in slice order. An empty group parks nothing.
    ///
    /// # Panics
    ///
    /// When [`Reference::try_park_all`] fails, which a queue started by [`Reference::new`] with
    /// lines without `\n` does not in any bounded run.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::Reference;
    /// let mut queue = Reference::new(3);
    /// queue.park(1, "first");
    /// assert_eq!(queue.park_all(&[(2, "r2 ok"), (3, "r3 ok")]), vec![2, 3]);
    /// assert_eq!(queue.park_all(&[]), Vec::<u64>::new());
    /// ```
    pub fn park_all(&mut self, items: &[(u64, &str)]) -> Vec<u64> {
        match self.try_park_all(items) {
            Ok(seqs) => seqs,
            Err(e) => panic!("park_all refused: {e}"),
        }
    }

    /// Park a group of lines, as [`Reference::park_all`].
    ///
    /// # Errors
    ///
    /// As [`Reference::try_park_all_answers`].
    pub fn try_park_all(&mut self, items: &[(u64, &str)]) -> Result<Vec<u64>, RefError> {
        let answers = self.try_park_all_answers(items)?;
        Ok(answers.into_iter().map(RefParked::seq).collect())
    }

    /// Park a group of lines, answered line by line (D22): a line whose request is held with it
    /// its seq, one the window remembers how it ended, and the new lines parked together as one
    /// durable record, consecutive from the next seq in slice order. A group with no new line
    /// parks nothing.
    ///
    /// # Errors
    ///
    /// [`RefError::InvalidLine`] naming the first line holding `\n`;
    /// [`RefError::RequestConflict`] for a request named twice, or held or remembered with
    /// another line; [`RefError::RequestDead`] for a request whose line is a dead letter;
    /// [`RefError::Exhausted`] when a seq of the new lines would be `u64::MAX`. Nothing changes
    /// on an error.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::{RefParked, Reference};
    /// let mut queue = Reference::new(3);
    /// queue.park(1, "a");
    /// let answers = queue.try_park_all_answers(&[(1, "a"), (2, "b")]).unwrap();
    /// assert_eq!(answers, vec![RefParked::Held(1), RefParked::Held(2)]);
    /// ```
    pub fn try_park_all_answers(
        &mut self,
        items: &[(u64, &str)],
    ) -> Result<Vec<RefParked>, RefError> {
        if let Some(index) = items.iter().position(|(_, line)| line.contains('\n')) {
            return Err(RefError::InvalidLine(index));
        }
        let mut named: Vec<u64> = items.iter().map(|(request, _)| *request).collect();
        named.sort_unstable();
        named.dedup();
        if named.len() < items.len() {
            return Err(RefError::RequestConflict);
        }
        let known: Vec<Option<RefParked>> = items
            .iter()
            .map(|(request, line)| self.repeated_park(*request, line).transpose())
            .collect::<Result<_, _>>()?;
        let new = known.iter().filter(|answer| answer.is_none()).count();
        let first = self.mirror.next_seq;
        let count = u64::try_from(new).map_err(|_| RefError::Exhausted)?;
        // M6: u64::MAX is never a seq, so the group's last seq must stay below it.
        // The next seq after the group may be u64::MAX (then the next park is refused).
        let next = first.checked_add(count).ok_or(RefError::Exhausted)?;
        let mut seq = first;
        let mut answers = Vec::with_capacity(items.len());
        for (answer, (request, line)) in known.into_iter().zip(items) {
            if let Some(answer) = answer {
                answers.push(answer);
                continue;
            }
            self.mirror.parked.push(RefItem {
                seq,
                request: *request,
                line: (*line).to_owned(),
                failures: 0,
                handed: 0,
            });
            answers.push(RefParked::Held(seq));
            seq += 1;
        }
        self.mirror.next_seq = next;
        Ok(answers)
    }

    /// The lowest-seq item of `request` the mirror holds (parked, in flight or dead) and whether
    /// it is dead: a plain scan, the crate keeps an index.
    fn held(&self, request: u64) -> Option<(&RefItem, bool)> {
        let live = self
            .mirror
            .parked
            .iter()
            .chain(self.mirror.in_flight.iter().flat_map(|batch| &batch.items))
            .map(|item| (item, false));
        let dead = self.mirror.dead.iter().map(|item| (item, true));
        live.chain(dead)
            .filter(|(item, _)| item.request == request)
            .min_by_key(|(item, _)| item.seq)
    }

    /// The remembered window's entry of `request`, if any.
    fn remembered_entry(&self, request: u64) -> Option<&RefRemembered> {
        self.mirror
            .remembered
            .iter()
            .find(|entry| entry.request == request)
    }

    /// D3: a park for a request the mirror holds returns its seq (same line) or fails; one for a
    /// request the window remembers answers how its line ended (same line) or fails; `None` when
    /// the request is neither held nor remembered.
    fn repeated_park(&self, request: u64, line: &str) -> Option<Result<RefParked, RefError>> {
        if let Some(held) = self.held(request) {
            return Some(match held {
                (item, false) if item.line == line => Ok(RefParked::Held(item.seq)),
                (_, false) => Err(RefError::RequestConflict),
                (_, true) => Err(RefError::RequestDead),
            });
        }
        let entry = self.remembered_entry(request)?;
        Some(match entry.crc == crate::read::crc64(line.as_bytes()) {
            true => Ok(RefParked::Remembered(*entry)),
            false => Err(RefError::RequestConflict),
        })
    }

    /// The window remembers `item`'s request as ended `ended`, forgetting the oldest entry beyond
    /// `delivered_memory` (none is kept at 0).
    fn remember(&mut self, item: &RefItem, ended: RefEnded) {
        if self.delivered_memory == 0 {
            return;
        }
        let window = &mut self.mirror.remembered;
        window.push(RefRemembered {
            request: item.request,
            crc: crate::read::crc64(item.line.as_bytes()),
            seq: item.seq,
            ended,
        });
        window.drain(..window.len().saturating_sub(self.delivered_memory));
    }

    /// The process dies while a group park's record is appended: the torn record is cut at
    /// recovery (M7), so none of the group stays, and the volatile state is lost as in
    /// [`Reference::crash`]. (A crash after the record is complete is a `park_all` then a crash.)
    pub fn crash_during_park_all(&mut self, items: &[(u64, &str)]) {
        // Known bad: the torn record's first line is kept.
        if let (Variant::TornGroupKeepsPrefix, Some((request, line))) =
            (self.variant, items.first())
        {
            let _ = self.try_park(*request, line);
        }
        self.crash();
    }

    /// Move the named dead letters back to the parked list, each at its seq's position, with
    /// `failures` 0 and `handed` kept: one durable record. Returns the seqs moved, in seq order;
    /// an empty `seqs` moves nothing. Allowed while a batch is in flight: the redriven lines
    /// join the parked list, never that batch, and leave its `remaining` as it is (D2).
    ///
    /// # Errors
    ///
    /// [`RefError::NotDead`] naming the first seq (in the order given) that is not a dead
    /// letter or is named twice; nothing moves.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline_model::delivery::{RefError, Reference};
    /// let mut queue = Reference::new(1);
    /// queue.park(1, "r1");
    /// let batch = queue.boundary(100).unwrap().unwrap();
    /// queue.settle(batch.id, &[false]).unwrap(); // failures_max 1: dead at once
    /// assert_eq!(queue.redrive(&[2]), Err(RefError::NotDead(2)));
    /// assert_eq!(queue.redrive(&[1]), Ok(vec![1]));
    /// let again = queue.boundary(100).unwrap().unwrap();
    /// assert_eq!((again.items[0].failures, again.items[0].handed, again.seen), (0, 2, 1));
    /// ```
    pub fn redrive(&mut self, seqs: &[u64]) -> Result<Vec<u64>, RefError> {
        let mut moved: Vec<u64> = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            if moved.contains(&seq) || !self.mirror.dead.iter().any(|item| item.seq == seq) {
                return Err(RefError::NotDead(seq));
            }
            moved.push(seq);
        }
        moved.sort_unstable();
        let (back, kept) = std::mem::take(&mut self.mirror.dead)
            .into_iter()
            .partition(|item| moved.contains(&item.seq));
        self.mirror.dead = kept;
        let back: Vec<RefItem> = back;
        for mut item in back {
            item.failures = 0;
            if self.variant == Variant::RedriveResetsHanded {
                item.handed = 0; // known bad: the line looks never handed over
            }
            self.park_again(item);
        }
        Ok(moved)
    }

    /// Redrive every dead letter, as [`Reference::redrive`]; returns the seqs moved, in seq
    /// order (none when there are no dead letters). It cannot fail.
    pub fn redrive_all(&mut self) -> Vec<u64> {
        let mut seqs: Vec<u64> = self.mirror.dead.iter().map(|item| item.seq).collect();
        seqs.sort_unstable();
        // Every seq named is a dead letter, once.
        self.redrive(&seqs).unwrap_or_default()
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
        if self.recovered
            && self.variant != Variant::NoRepeatBound
            && self
                .mirror
                .in_flight
                .as_ref()
                .is_some_and(|batch| batch.attempt >= self.repeats_max)
        {
            // The boundary after the close is planned first: an exhausted counter refuses the
            // whole boundary, and nothing changes (M6).
            let mut closed = self.clone();
            closed.close();
            let batch = closed.boundary(budget)?;
            *self = closed;
            return Ok(batch);
        }
        if let Some(batch) = &mut self.mirror.in_flight {
            if !self.recovered {
                return Err(RefError::BatchInFlight);
            }
            // D10: a repeat shows an attempt one higher; at u32::MAX there is none, and the
            // batch stays recovered and untouched.
            if batch.attempt == u32::MAX && variant != Variant::NoAttemptCounter {
                return Err(RefError::Exhausted);
            }
            // The attempt record raises every item's count: refused whole if one would overflow.
            if batch.items.iter().any(|item| item.handed == u64::MAX) {
                return Err(RefError::Exhausted);
            }
            // Known bad (CountAtSettle): the stored count is left for settle to raise.
            if variant != Variant::CountAtSettle {
                for item in &mut batch.items {
                    item.handed += 1;
                }
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
                // Known bad: `seen` is taken from the counts now, which the batch's own first
                // attempt raised.
                Variant::SeenRecomputedAtRepeat => {
                    batch.seen = batch.items.iter().filter(|item| item.handed > 1).count();
                    batch.attempt += 1;
                }
                _ => batch.attempt += 1, // D10
            }
            let mut handed = batch.clone();
            if variant == Variant::CountAtSettle {
                for item in &mut handed.items {
                    item.handed += 1;
                }
            }
            return Ok(Some(handed));
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
                let cap = self.mirror.cap.map_or(usize::MAX, |cap| cap as usize);
                let k = split(parked, budget).min(cap); // D11, the cap of a close
                parked.drain(..k).collect()
            }
        };
        // The batch record raises the taken items' counts: a boundary whose record would overflow
        // one is refused whole and changes nothing (the items go back, the list stays in order).
        if items.iter().any(|item| item.handed == u64::MAX) {
            parked.append(&mut items);
            parked.sort_by_key(|item| item.seq);
            return Err(RefError::Exhausted);
        }
        // Known bad: a line over the budget is cut to fit.
        if let [item] = items.as_mut_slice()
            && variant == Variant::CutOversizedLine
            && item.cost() > budget
        {
            item.line = item.line.chars().take(budget.saturating_sub(1)).collect();
        }
        let seen = items.iter().filter(|item| item.handed > 0).count();
        for item in &mut items {
            item.handed += 1;
        }
        let remaining = match variant {
            Variant::TrailerCountsAll => parked.len() + items.len(),
            // Known bad: only the lines the next turn would take.
            Variant::TrailerCountsNextTurn => split(parked, budget),
            _ => parked.len(), // D13
        };
        let batch = RefBatch {
            id: self.mirror.next_batch,
            attempt: 1,
            items,
            remaining,
            seen,
        };
        self.mirror.next_batch += 1;
        // Known bad: the items leave the mirror as soon as the batch is written.
        if variant != Variant::ClearBeforeHandOver {
            let mut stored = batch.clone();
            // Known bad (CountAtSettle): the stored count misses this hand-over.
            if variant == Variant::CountAtSettle {
                for item in &mut stored.items {
                    item.handed -= 1;
                }
            }
            self.mirror.in_flight = Some(stored);
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
        // D11: a settle doubles the cap, or lifts it when the batch held fewer items.
        let k = in_flight.items.len() as u64;
        self.mirror.cap = self.mirror.cap.filter(|cap| k >= *cap).map(|cap| cap * 2);
        let mut settlement = RefSettlement::default();
        let mut items = self
            .mirror
            .in_flight
            .take()
            .map(|b| b.items)
            .unwrap_or_default();
        // Known bad: the hand-over is counted only now.
        if self.variant == Variant::CountAtSettle {
            for item in &mut items {
                item.handed = item.handed.saturating_add(1);
            }
        }
        for (mut item, &ok) in items.into_iter().zip(delivered) {
            if ok {
                settlement.delivered.push(item.seq);
                self.remember(&item, RefEnded::Delivered { batch });
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
                    // D8, mirror.md: the dead letters are in seq order, also when a redriven
                    // line dies after a line with a higher seq did.
                    let at = self.mirror.dead.partition_point(|dead| dead.seq < item.seq);
                    self.mirror.dead.insert(at, item);
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

    /// The first durable step of a boundary that finds a recovered batch at `repeats_max`: the
    /// close alone (D10), which a crash before the new batch is written leaves. Returns whether
    /// there was a batch to close.
    pub fn close_if_bounded(&mut self) -> bool {
        let bounded = self
            .mirror
            .in_flight
            .as_ref()
            .is_some_and(|batch| batch.attempt >= self.repeats_max);
        if self.recovered && bounded && self.variant != Variant::NoRepeatBound {
            self.close();
            return true;
        }
        false
    }

    /// D10's repeat bound: the recovered batch is closed. Its items go back to the parked list
    /// with their counts (a crash is not a failure), or its single item to the dead letters
    /// (D8); the cap becomes half the batch, or is lifted once an item is isolated (D11).
    fn close(&mut self) {
        let Some(batch) = self.mirror.in_flight.take() else {
            return;
        };
        self.recovered = false;
        let k = batch.items.len() as u64;
        if let [item] = &batch.items[..] {
            let at = self.mirror.dead.partition_point(|dead| dead.seq < item.seq);
            self.mirror.dead.insert(at, item.clone());
            self.mirror.cap = None;
        } else {
            for item in batch.items {
                self.park_again(item);
            }
            self.mirror.cap = Some(k.div_ceil(2));
        }
    }

    /// D8: the dead letters `seqs` leave the mirror for good; returns them in seq order.
    ///
    /// # Errors
    ///
    /// [`RefError::NotDead`] naming the first seq (in the order given) that is not a dead
    /// letter or is named twice; nothing changes then.
    pub fn discard(&mut self, seqs: &[u64]) -> Result<Vec<u64>, RefError> {
        let mut gone: Vec<u64> = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            if gone.contains(&seq) || !self.mirror.dead.iter().any(|item| item.seq == seq) {
                return Err(RefError::NotDead(seq));
            }
            gone.push(seq);
        }
        gone.sort_unstable();
        let (removed, kept): (Vec<RefItem>, Vec<RefItem>) = std::mem::take(&mut self.mirror.dead)
            .into_iter()
            .partition(|item| gone.contains(&item.seq));
        self.mirror.dead = kept;
        for item in &removed {
            self.remember(item, RefEnded::Discarded);
        }
        Ok(gone)
    }

    /// Discard every dead letter, as [`Reference::discard`]; returns the seqs removed, in seq
    /// order (none when there are no dead letters). It cannot fail.
    pub fn discard_all(&mut self) -> Vec<u64> {
        let seqs: Vec<u64> = self.mirror.dead.iter().map(|item| item.seq).collect();
        // Every seq named is a dead letter, once.
        self.discard(&seqs).unwrap_or_default()
    }

    /// The process dies: the volatile state is lost; an unsettled batch becomes the recovered
    /// batch of the next life (D10). Everything in the mirror stays (D9), the remembered window
    /// included.
    pub fn crash(&mut self) {
        self.recovered = self.mirror.in_flight.is_some();
        // Known bad: the reopen does not read the window back.
        if self.variant == Variant::ForgetAtReopen {
            self.mirror.remembered.clear();
        }
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

/// Whether `mirror`'s remembered window is one a correct queue can hold: no request or seq
/// twice, every seq given out (below the next seq) and no longer held, every batch given out.
fn window_fits(mirror: &Mirror) -> bool {
    let window = &mirror.remembered;
    let held = |seq: u64| {
        mirror
            .parked
            .iter()
            .chain(mirror.in_flight.iter().flat_map(|batch| &batch.items))
            .chain(&mirror.dead)
            .any(|item| item.seq == seq)
    };
    window.iter().enumerate().all(|(i, entry)| {
        let batch_ok = match entry.ended {
            RefEnded::Delivered { batch } => batch < mirror.next_batch,
            RefEnded::Discarded => true,
        };
        batch_ok
            && entry.seq < mirror.next_seq
            && !held(entry.seq)
            && window[..i]
                .iter()
                .all(|e| e.request != entry.request && e.seq != entry.seq)
    })
}
