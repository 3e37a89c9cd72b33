//! How a [`Transcript`](super::Transcript) stores its completed turns: compactly, because a
//! child's history can reach millions of turns of a few dozen bytes each, and per-turn `String`s
//! plus an index of cloned ids cost several times the bytes they hold.
//!
//! [`Turns`] keeps every turn's id and text back to back in an [`Arena`] of a few large `String`
//! chunks, and per turn only a few small numbers: the arena offset where the turn ends (the low
//! 32 bits; the high bits are kept once per change, see [`Column`]), the id's length (an id has at
//! most [`ID_CHARS_MAX`] bytes, so one byte), and two columns that cost nothing in the common
//! case: the seq's distance from the turn's position (0 while seqs are 1, 2, 3, ...) and the
//! running count of bytes beyond one per character (0 while every text is ASCII). A turn of at
//! least [`CHAR_STRIDE`] characters that is not ASCII also has entries in a [`CharIndex`], so a
//! read from a character offset finds its byte without scanning the text before it. The id index
//! is an open-addressing hash table of `u32` turn numbers whose ids are compared in the arena,
//! not a map of cloned ids. The per-turn buffers grow by a quarter, not by doubling, so what is
//! allocated stays within 1.25x of what is needed (at about five copies of each element over a
//! buffer's growth instead of two); the arena is never copied, it adds chunks.
//!
//! Reads see the turns as [`TurnView`]s, borrowed from the arena.

use std::fmt;

use super::{ID_CHARS_MAX, Turn, TurnId, TurnSeq};

/// The most completed turns one transcript holds: the id index stores turn numbers as `u32`, and
/// `u32::MAX` marks an empty slot.
pub(crate) const TURNS_MAX: usize = u32::MAX as usize;

const EMPTY_SLOT: u32 = u32::MAX;

/// The fewest elements a buffer grows to, so small transcripts do not reallocate per turn.
const GROW_MIN: usize = 8;

/// The arena's first chunk grows (by a quarter, copying) up to this size; past it the arena adds
/// chunks instead, so no large text is copied again.
const FIRST_CHUNK_BYTES_MAX: usize = 64 << 10;

/// The largest chunk the arena opens for turns smaller than it, so the most a transcript leaves
/// unused once it holds 4 MiB (below that, a quarter of what it holds).
const CHUNK_BYTES_MAX: usize = 1 << 20;

/// The capacity a buffer of `capacity` grows to when it must hold `needed`: a quarter more, at
/// least `needed`. A quarter, not double, bounds the unused tail to a fifth of the buffer.
fn grown(capacity: usize, needed: usize) -> usize {
    needed.max(capacity + capacity / 4).max(GROW_MIN)
}

fn reserve_vec<T>(vec: &mut Vec<T>, extra: usize) {
    let needed = vec.len().saturating_add(extra);
    if needed > vec.capacity() {
        vec.reserve_exact(grown(vec.capacity(), needed) - vec.len());
    }
}

/// Every turn's id and text, back to back, in chunks: a turn lies whole in one chunk, and the
/// chunks together read as one string of offsets `0..len`.
///
/// One `String` that grows by a quarter would copy each byte about five times and, while it
/// reallocates, hold the old and the new copy at once; doubling instead would leave up to half of
/// it unused. Chunks are never copied: a full chunk is shrunk to what it holds and a new one is
/// opened, a quarter of what the arena holds (at most [`CHUNK_BYTES_MAX`], at least the turn).
#[derive(Clone, Debug, Default)]
struct Arena {
    /// The last chunk is open; the others are shrunk to their length.
    chunks: Vec<String>,
    /// The offset of each chunk's first byte.
    bases: Vec<u64>,
    len: u64,
}

impl Arena {
    fn len(&self) -> u64 {
        self.len
    }

    /// Appends `parts` as one turn, in one chunk.
    fn push(&mut self, parts: [&str; 2]) {
        let size = parts[0].len() + parts[1].len();
        let room = self
            .chunks
            .last()
            .map_or(0, |chunk| chunk.capacity() - chunk.len());
        if size > room {
            match self.chunks.as_mut_slice() {
                [first] if first.len() + size <= FIRST_CHUNK_BYTES_MAX => {
                    let needed = first.len() + size;
                    let target = grown(first.capacity(), needed).min(FIRST_CHUNK_BYTES_MAX);
                    first.reserve_exact(target.max(needed) - first.len());
                }
                chunks => {
                    if let Some(full) = chunks.last_mut() {
                        full.shrink_to_fit();
                    }
                    let quarter = usize::try_from(self.len / 4).unwrap_or(CHUNK_BYTES_MAX);
                    let capacity = quarter.min(CHUNK_BYTES_MAX).max(size).max(GROW_MIN);
                    reserve_vec(&mut self.chunks, 1);
                    reserve_vec(&mut self.bases, 1);
                    self.chunks.push(String::with_capacity(capacity));
                    self.bases.push(self.len);
                }
            }
        }
        if let Some(chunk) = self.chunks.last_mut() {
            for part in parts {
                chunk.push_str(part);
            }
        }
        self.len += size as u64;
    }

    /// The bytes `start..end`, which lie in one turn (so in one chunk), `start` below `end`.
    fn get(&self, start: u64, end: u64) -> &str {
        // The open chunk first: following a child reads its newest turns, and this keeps their
        // look-up from growing with the history.
        let chunk = match self.bases.last() {
            Some(&last) if last <= start => self.bases.len() - 1,
            _ => self.bases.partition_point(|&base| base <= start) - 1,
        };
        let base = self.bases[chunk];
        &self.chunks[chunk][(start - base) as usize..(end - base) as usize]
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum::<usize>()
            + self.chunks.capacity() * size_of::<String>()
            + self.bases.capacity() * size_of::<u64>()
    }
}

/// A column of `u64`, one per turn, in 4 bytes per value where values change slowly: the low 32
/// bits of each value, and the high 32 bits once per run of values that share them. A leading
/// run of zeros costs nothing, so a column that is 0 for every turn is free.
///
/// Exact for any values (nothing assumes they increase); it is compact when the high bits rarely
/// change, as for running totals and seq gaps.
#[derive(Clone, Debug, Default)]
struct Column {
    /// How many values before `low[0]` are 0.
    zeros: usize,
    /// The low 32 bits of the values after the zeros.
    low: Vec<u32>,
    /// `(position in low, high bits)` where the high bits change, in order; before the first
    /// entry they are 0.
    high: Vec<(usize, u32)>,
}

impl Column {
    fn len(&self) -> usize {
        self.zeros + self.low.len()
    }

    fn push(&mut self, value: u64) {
        if self.low.is_empty() && value == 0 {
            self.zeros += 1;
            return;
        }
        let high = (value >> 32) as u32;
        if high != self.high.last().map_or(0, |&(_, high)| high) {
            reserve_vec(&mut self.high, 1);
            self.high.push((self.low.len(), high));
        }
        reserve_vec(&mut self.low, 1);
        // The low half; the high half is in `high`.
        self.low.push(value as u32);
    }

    fn get(&self, index: usize) -> u64 {
        let Some(at) = index.checked_sub(self.zeros) else {
            return 0;
        };
        let runs = self.high.partition_point(|&(from, _)| from <= at);
        let high = match runs {
            0 => 0,
            runs => self.high[runs - 1].1,
        };
        (u64::from(high) << 32) | u64::from(self.low[at])
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.low.capacity() * size_of::<u32>() + self.high.capacity() * size_of::<(usize, u32)>()
    }
}

/// Characters between two entries of a long turn's [`CharIndex`]: the most a read from an offset
/// scans to find the offset's byte (R2). 1,024 characters are at most 4 KiB, which [`char_byte`]
/// scans in less time than a read of the 2,000-character windows a follower asks for takes
/// (`benches/read`); an entry costs 8 bytes per 1,024 characters, under 1 % of the text.
const CHAR_STRIDE: usize = 1_024;

/// Where every [`CHAR_STRIDE`]-th character starts in the texts of the long turns that are not
/// ASCII. Short turns (most) and ASCII ones have no entry: the first scan at most a stride, the
/// second need none (a character is a byte).
#[derive(Clone, Debug, Default)]
struct CharIndex {
    /// `(turn, its first entry in marks)` for each indexed turn, in turn order.
    turns: Vec<(u32, usize)>,
    /// For each indexed turn, the byte offset in its text of character `k * CHAR_STRIDE`, for
    /// `k` from 1 to its characters / `CHAR_STRIDE`.
    marks: Vec<u64>,
}

impl CharIndex {
    /// Indexes turn `turn`'s `text` of `chars` characters if it is long and not ASCII.
    fn push(&mut self, turn: usize, text: &str, chars: usize) {
        let count = chars / CHAR_STRIDE;
        if count == 0 || chars == text.len() {
            return;
        }
        reserve_vec(&mut self.turns, 1);
        // Below TURNS_MAX, which is at most u32::MAX (asserted at compile time above).
        self.turns.push((turn as u32, self.marks.len()));
        reserve_vec(&mut self.marks, count);
        let mut byte = 0;
        for _ in 0..count {
            byte += char_byte(&text[byte..], CHAR_STRIDE);
            self.marks.push(byte as u64);
        }
        debug_assert!(byte <= text.len() && text.is_char_boundary(byte));
    }

    /// The latest indexed character at or before `char` of turn `turn`, and its byte offset:
    /// character 0 at byte 0 for a turn without entries.
    fn mark_before(&self, turn: usize, char: usize) -> (usize, usize) {
        let Ok(at) = self
            .turns
            .binary_search_by_key(&turn, |&(indexed, _)| indexed as usize)
        else {
            return (0, 0);
        };
        let first = self.turns[at].1;
        let end = self
            .turns
            .get(at + 1)
            .map_or(self.marks.len(), |&(_, next)| next);
        let k = (char / CHAR_STRIDE).min(end - first);
        match k {
            0 => (0, 0),
            k => (k * CHAR_STRIDE, self.marks[first + k - 1] as usize),
        }
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.turns.capacity() * size_of::<(u32, usize)>() + self.marks.capacity() * size_of::<u64>()
    }
}

/// Whether `byte` starts a character in UTF-8 (is not a continuation byte `10xxxxxx`).
fn starts_char(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

/// The byte offset of character `n` of `text` (`text.len()` when `n` is its character count).
/// The starts of characters are counted a block of bytes at a time, which the compiler
/// vectorises, then byte by byte in the block that holds character `n`.
fn char_byte(text: &str, n: usize) -> usize {
    const BLOCK: usize = 32;
    let bytes = text.as_bytes();
    let (mut at, mut left) = (0, n);
    while let Some(block) = bytes.get(at..at + BLOCK) {
        let starts = block.iter().filter(|&&byte| starts_char(byte)).count();
        if starts > left {
            break;
        }
        (at, left) = (at + BLOCK, left - starts);
    }
    for (offset, &byte) in bytes[at..].iter().enumerate() {
        if starts_char(byte) {
            if left == 0 {
                return at + offset;
            }
            left -= 1;
        }
    }
    debug_assert_eq!(left, 0, "character {n} lies past the end of the text");
    bytes.len()
}

/// What a binary search over the turns sees of each: its seq, the one thing they are sorted by.
pub(crate) struct SeqKey {
    pub(crate) seq: TurnSeq,
}

/// A completed turn, borrowed from its transcript's storage. [`Turns`] hands these out.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "done")?;
/// let turn = child.turns().get(0).expect("one turn");
/// assert_eq!((turn.id, turn.seq, turn.text), ("t1", TurnSeq(1), "done"));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TurnView<'a> {
    /// The turn's id (the text of a [`TurnId`]). A `&str` rather than a [`TurnId`] as
    /// [`TurnRef::id`](super::TurnRef) is: the ids lie back to back in the store's arena, and a
    /// borrowed `TurnId` would need an unsized newtype over `str`, whose cast takes the `unsafe`
    /// the crate forbids; [`TurnView::to_turn`] gives the owned `TurnId`.
    pub id: &'a str,
    /// The turn's sequence number.
    pub seq: TurnSeq,
    /// The turn's text, verbatim.
    pub text: &'a str,
}

impl TurnView<'_> {
    /// The turn as an owned [`Turn`].
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "done")?;
    /// let turn = child.turns().last().expect("one turn").to_turn();
    /// assert_eq!(turn.id, TurnId::new("t1")?);
    /// assert_eq!(turn.text, "done");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn to_turn(&self) -> Turn {
        Turn {
            // The id was checked when the turn was pushed.
            id: TurnId(self.id.to_owned()),
            seq: self.seq,
            text: self.text.to_owned(),
        }
    }
}

// A stored turn's id is a `&str`; these let it be compared with a `TurnId` directly.
impl PartialEq<str> for TurnId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for TurnId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<TurnId> for str {
    fn eq(&self, other: &TurnId) -> bool {
        self == other.0
    }
}

impl PartialEq<TurnId> for &str {
    fn eq(&self, other: &TurnId) -> bool {
        *self == other.0
    }
}

/// The completed turns of a [`Transcript`](super::Transcript), in seq order, stored compactly:
/// ids and texts in one arena, a few bytes of bookkeeping per turn, and an id index of turn
/// numbers. [`Transcript::turns`](super::Transcript::turns) returns it.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "first")?;
/// child.push_turn(TurnId::new("t2")?, TurnSeq(5), "second")?;
/// let turns = child.turns();
/// assert_eq!(turns.len(), 2);
/// let seqs: Vec<u64> = turns.iter().map(|turn| turn.seq.0).collect();
/// assert_eq!(seqs, [1, 5]);
/// assert_eq!(turns.last().map(|turn| turn.text), Some("second"));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone)]
pub struct Turns {
    /// Every turn's id, then its text, back to back in seq order.
    arena: Arena,
    /// Per turn: the arena offset where the turn (id and text) ends.
    ends: Column,
    /// Per turn: the id's length in bytes (at most [`ID_CHARS_MAX`]).
    id_lens: Vec<u8>,
    /// Per turn: `seq - (position + 1)`, wrapping; 0 for every turn while seqs are 1, 2, 3, ...
    seq_gaps: Column,
    /// Per turn: the running total over texts of bytes minus characters; 0 while all is ASCII.
    wide: Column,
    /// Byte offsets of every [`CHAR_STRIDE`]-th character of the long turns that are not ASCII.
    char_index: CharIndex,
    index: IdIndex,
    turns_max: usize,
}

// Both limits are facts the storage relies on; a change to either must fail the build here.
const _: () = assert!(ID_CHARS_MAX <= u8::MAX as usize);
const _: () = assert!(TURNS_MAX <= EMPTY_SLOT as usize);

impl Default for Turns {
    fn default() -> Self {
        Turns::with_turns_max(TURNS_MAX)
    }
}

impl fmt::Debug for Turns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Turns {
    pub(crate) fn with_turns_max(turns_max: usize) -> Self {
        Turns {
            arena: Arena::default(),
            ends: Column::default(),
            id_lens: Vec::new(),
            seq_gaps: Column::default(),
            wide: Column::default(),
            char_index: CharIndex::default(),
            index: IdIndex::default(),
            turns_max: turns_max.min(TURNS_MAX),
        }
    }

    /// How many turns.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// assert_eq!(Transcript::new(ChildId::new("c")?).turns().len(), 0);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.id_lens.len()
    }

    /// Whether there are no turns.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// assert!(Transcript::new(ChildId::new("c")?).turns().is_empty());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.id_lens.is_empty()
    }

    /// The turn at `index` (0 is the oldest), if there is one.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
    /// assert_eq!(child.turns().get(0).map(|turn| turn.id), Some("t1"));
    /// assert!(child.turns().get(1).is_none());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn get(&self, index: usize) -> Option<TurnView<'_>> {
        (index < self.len()).then(|| self.at(index))
    }

    /// The newest turn, if there is one.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// assert!(child.turns().last().is_none());
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
    /// assert_eq!(child.turns().last().map(|turn| turn.seq), Some(TurnSeq(1)));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn last(&self) -> Option<TurnView<'_>> {
        self.len().checked_sub(1).map(|index| self.at(index))
    }

    /// The turns, oldest first.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
    /// child.push_turn(TurnId::new("t2")?, TurnSeq(2), "b")?;
    /// let newest_first: Vec<&str> = child.turns().iter().rev().map(|turn| turn.id).collect();
    /// assert_eq!(newest_first, ["t2", "t1"]);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn iter(&self) -> TurnsIter<'_> {
        TurnsIter {
            turns: self,
            front: 0,
            back: self.len(),
        }
    }

    /// The turn at `index`; `index` is below [`Turns::len`] (callers hold indices they got from
    /// this storage).
    pub(crate) fn at(&self, index: usize) -> TurnView<'_> {
        // Every turn holds at least its id's byte, so the range is never empty.
        let turn = self.arena.get(self.start(index), self.ends.get(index));
        let (id, text) = turn.split_at(usize::from(self.id_lens[index]));
        TurnView {
            id,
            seq: self.seq(index),
            text,
        }
    }

    fn start(&self, index: usize) -> u64 {
        match index {
            0 => 0,
            index => self.ends.get(index - 1),
        }
    }

    fn seq(&self, index: usize) -> TurnSeq {
        TurnSeq(self.seq_gaps.get(index).wrapping_add(index as u64 + 1))
    }

    fn wide_total(&self, turns: usize) -> u64 {
        match turns {
            0 => 0,
            turns => self.wide.get(turns - 1),
        }
    }

    /// The characters (Unicode scalar values) of the text of the turn at `index`, in constant
    /// time.
    pub(crate) fn chars(&self, index: usize) -> usize {
        let bytes = self.ends.get(index) - self.start(index) - u64::from(self.id_lens[index]);
        let wide = self.wide_total(index + 1) - self.wide_total(index);
        (bytes - wide) as usize
    }

    /// The byte offset of character `char` in the text of the turn at `index`, `char` at most
    /// its [`chars`](Turns::chars): through the [`CharIndex`], scanning fewer than
    /// [`CHAR_STRIDE`] characters (R2).
    fn text_byte(&self, index: usize, text: &str, char: usize) -> usize {
        let chars = self.chars(index);
        debug_assert!(char <= chars, "character {char} of a turn of {chars}");
        if chars == text.len() {
            // ASCII: a character is a byte.
            return char;
        }
        //= spec/read.md#r2-cost-proportional-to-what-is-returned
        //# A read of a turn from a character offset MUST find the offset's byte position through
        //# an index kept when the turn is added, scanning at most a fixed stride of characters
        //# before it, so that its time is in proportion to the characters returned, not to the
        //# offset.
        let (mark, byte) = self.char_index.mark_before(index, char);
        debug_assert!(char - mark < CHAR_STRIDE, "a long turn that is not indexed");
        let found = byte + char_byte(&text[byte..], char - mark);
        debug_assert!(text.is_char_boundary(found));
        found
    }

    /// Characters `from..to` of the text of the turn at `index`, `from <= to <=`
    /// [`chars`](Turns::chars): time in proportion to `to - from`, not to `from` (R2).
    pub(crate) fn text_chars(&self, index: usize, from: usize, to: usize) -> &str {
        debug_assert!(from <= to);
        let text = self.at(index).text;
        let start = self.text_byte(index, text, from);
        let end = start + char_byte(&text[start..], to - from);
        &text[start..end]
    }

    /// The position of the turn with this id.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        // The length first: it is one byte per turn, and spares reading the arena for most
        // turns that are not this one.
        self.index.find(id, |index| {
            usize::from(self.id_lens[index]) == id.len() && self.id(index) == id
        })
    }

    /// The number of turns for which `pred` holds, `pred` being true for a prefix of the turns
    /// (as [`slice::partition_point`]); a binary search that reads only the seqs, the order the
    /// turns are in, so a probe costs no look-up in the arena.
    pub(crate) fn partition_point(&self, mut pred: impl FnMut(&SeqKey) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            if pred(&SeqKey {
                seq: self.seq(middle),
            }) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// Whether the storage holds as many turns as it can.
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.turns_max
    }

    /// Appends a turn. The caller has checked the id (a valid [`TurnId`], not yet stored), the
    /// seq (above the newest turn's) and [`Turns::is_full`].
    pub(crate) fn push(&mut self, id: &str, seq: TurnSeq, text: &str) {
        debug_assert!(!self.is_full() && self.position(id).is_none());
        let index = self.len();
        self.arena.push([id, text]);
        self.ends.push(self.arena.len());
        reserve_vec(&mut self.id_lens, 1);
        // At most ID_CHARS_MAX bytes, which fits (asserted at compile time above).
        self.id_lens.push(id.len() as u8);
        self.seq_gaps.push(seq.0.wrapping_sub(index as u64 + 1));
        let chars = text.chars().count();
        self.wide
            .push(self.wide_total(index) + (text.len() - chars) as u64);
        self.char_index.push(index, text, chars);
        debug_assert!(self.ends.len() == self.len() && self.seq_gaps.len() == self.len());
        // Taken out for the insert, which reads the ids of the turns through `self`.
        let mut id_index = std::mem::take(&mut self.index);
        id_index.insert(index, self.len(), |index| self.id(index));
        self.index = id_index;
    }

    fn id(&self, index: usize) -> &str {
        let start = self.start(index);
        self.arena
            .get(start, start + u64::from(self.id_lens[index]))
    }

    /// The heap bytes this storage has asked for (capacities, not lengths).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.arena.heap_bytes()
            + self.ends.heap_bytes()
            + self.id_lens.capacity()
            + self.seq_gaps.heap_bytes()
            + self.wide.heap_bytes()
            + self.char_index.heap_bytes()
            + self.index.slots.capacity() * size_of::<u32>()
    }
}

impl<'a> IntoIterator for &'a Turns {
    type Item = TurnView<'a>;
    type IntoIter = TurnsIter<'a>;

    fn into_iter(self) -> TurnsIter<'a> {
        self.iter()
    }
}

/// The turns of a [`Turns`], oldest first (from [`Turns::iter`]).
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
/// assert_eq!(child.turns().iter().len(), 1);
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TurnsIter<'a> {
    turns: &'a Turns,
    front: usize,
    back: usize,
}

impl<'a> Iterator for TurnsIter<'a> {
    type Item = TurnView<'a>;

    fn next(&mut self) -> Option<TurnView<'a>> {
        (self.front < self.back).then(|| {
            self.front += 1;
            self.turns.at(self.front - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl DoubleEndedIterator for TurnsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.turns.at(self.back)
        })
    }
}

impl ExactSizeIterator for TurnsIter<'_> {}

/// The id index: an open-addressing hash table (linear probing) of turn numbers. It stores no
/// ids; a probe compares the id in the arena, through the `id_of` the caller passes. At most
/// three quarters full, so a probe always reaches an empty slot.
#[derive(Clone, Debug, Default)]
struct IdIndex {
    /// A turn number, or [`EMPTY_SLOT`].
    slots: Vec<u32>,
}

/// A 64-bit hash of an id: FNV-1a over its bytes, then a finaliser (MurmurHash3's `fmix64`) so
/// that the high bits, which pick the slot, depend on every byte. Deterministic on purpose: the
/// daemon names the turns, and a seeded hash would make the layout differ run to run for nothing.
fn hash_id(id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

impl IdIndex {
    /// The first slot to probe for `hash` in a table of `slots` slots: the hash scaled to the
    /// table (multiply and shift), so the table need not be a power of two and can grow by a
    /// quarter like the other buffers.
    fn home(hash: u64, slots: usize) -> usize {
        ((u128::from(hash) * slots as u128) >> 64) as usize
    }

    /// The turn whose id is `id`, `is(index)` telling whether turn `index` has it.
    fn find(&self, id: &str, is: impl Fn(usize) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mut slot = Self::home(hash_id(id), self.slots.len());
        loop {
            match self.slots[slot] {
                EMPTY_SLOT => return None,
                index if is(index as usize) => return Some(index as usize),
                _ => slot = (slot + 1) % self.slots.len(),
            }
        }
    }

    /// Adds turn `index`; `turns` is the number of turns with it.
    fn insert<'a>(&mut self, index: usize, turns: usize, id_of: impl Fn(usize) -> &'a str) {
        if turns * 4 > self.slots.len() * 3 {
            let needed = turns * 4 / 3 + 1;
            let size = grown(self.slots.len(), needed);
            let mut slots = Vec::new();
            slots.reserve_exact(size);
            slots.resize(size, EMPTY_SLOT);
            self.slots = slots;
            for old in 0..index {
                self.place(old, id_of(old));
            }
        }
        self.place(index, id_of(index));
    }

    fn place(&mut self, index: usize, id: &str) {
        let mut slot = Self::home(hash_id(id), self.slots.len());
        while self.slots[slot] != EMPTY_SLOT {
            slot = (slot + 1) % self.slots.len();
        }
        // Below TURNS_MAX, which is at most EMPTY_SLOT (asserted at compile time above).
        self.slots[slot] = index as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use crate::read::{ChildId, ReadRequest, Selector, Transcript};

    fn id(text: &str) -> TurnId {
        TurnId::new(text).expect("a valid id")
    }

    /// Pushes through the transcript, so the checks of `push_turn` run too.
    fn transcript(turns: &[(&str, u64, &str)]) -> Transcript {
        let mut transcript = Transcript::new(ChildId::new("c").expect("child id"));
        for &(turn, seq, text) in turns {
            transcript
                .push_turn(id(turn), TurnSeq(seq), text)
                .expect("push");
        }
        transcript
    }

    fn assert_holds(turns: &Turns, expected: &[(String, u64, String)]) {
        assert_eq!(turns.len(), expected.len());
        assert_eq!(turns.is_empty(), expected.is_empty());
        for (index, (turn, seq, text)) in expected.iter().enumerate() {
            let view = turns.get(index).expect("in range");
            assert_eq!(turns.id(index), turn.as_str());
            assert_eq!(
                (view.id, view.seq, view.text),
                (turn.as_str(), TurnSeq(*seq), text.as_str())
            );
            assert_eq!(turns.chars(index), text.chars().count(), "turn {turn}");
            assert_eq!(turns.position(turn), Some(index), "turn {turn}");
        }
        assert!(turns.get(expected.len()).is_none());
        let seqs: Vec<u64> = turns.iter().map(|turn| turn.seq.0).collect();
        let expected_seqs: Vec<u64> = expected.iter().map(|(_, seq, _)| *seq).collect();
        assert_eq!(seqs, expected_seqs);
        assert_eq!(turns.iter().rev().count(), expected.len());
    }

    fn owned(turns: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
        turns
            .iter()
            .map(|&(id, seq, text)| (id.to_owned(), seq, text.to_owned()))
            .collect()
    }

    #[test]
    fn store_round_trips_ids_seqs_and_texts() {
        let turns = [
            ("t1", 1, "first answer"),
            ("t2", 2, ""),
            ("sj-18d3164fbb9ba765-7", 7, "é\u{1F980} mixed, wide"),
            ("t.x_y-z", 9, "line one\nline two"),
            ("t3", 10, "ascii again"),
        ];
        let t = transcript(&turns);
        assert_holds(t.turns(), &owned(&turns));
        assert_eq!(t.turns().last().map(|turn| turn.id), Some("t3"));
        assert_eq!(t.turns().at(2).to_turn().id, id("sj-18d3164fbb9ba765-7"));
    }

    #[test]
    fn store_of_no_turns_is_empty() {
        let t = transcript(&[]);
        assert_holds(t.turns(), &[]);
        assert!(t.turns().last().is_none());
        assert_eq!(t.turns().position("t1"), None);
        assert_eq!(t.turns().partition_point(|_| true), 0);
    }

    #[test]
    fn store_looks_up_by_id_and_misses_what_it_does_not_hold() {
        let t = transcript(&[("a", 1, "x"), ("ab", 2, "y"), ("abc", 3, "z")]);
        assert_eq!(t.turns().position("ab"), Some(1));
        for missing in ["", "b", "abcd", "A", "ab "] {
            assert_eq!(t.turns().position(missing), None, "{missing:?}");
        }
        let mut t = t;
        let err = t
            .push_turn(id("ab"), TurnSeq(4), "again")
            .expect_err("a duplicate id");
        assert_eq!(err.kind(), ErrorKind::DuplicateTurn);
        assert_eq!(t.turns().len(), 3, "nothing changed");
    }

    #[test]
    fn store_keeps_empty_texts() {
        let t = transcript(&[("t1", 1, ""), ("t2", 2, ""), ("t3", 3, "x"), ("t4", 4, "")]);
        assert_holds(
            t.turns(),
            &owned(&[("t1", 1, ""), ("t2", 2, ""), ("t3", 3, "x"), ("t4", 4, "")]),
        );
        let window = t
            .read(&ReadRequest::new(
                Selector::Turn {
                    id: id("t4"),
                    offset: 0,
                },
                500,
            ))
            .expect("read");
        assert!(window.text.contains("[turn t4 seq 4: 0 chars]\n\n"));
    }

    #[test]
    fn store_keeps_ids_of_id_chars_max() {
        let long_a = "a".repeat(ID_CHARS_MAX);
        let long_b = format!("{}b", "a".repeat(ID_CHARS_MAX - 1));
        let turns = [
            (long_a.as_str(), 1, "one"),
            ("s", 2, "two"),
            (long_b.as_str(), 3, "three"),
        ];
        let t = transcript(&turns);
        assert_holds(t.turns(), &owned(&turns));
        assert_eq!(t.turns().at(0).id.len(), ID_CHARS_MAX);
    }

    #[test]
    fn store_keeps_a_text_of_several_megabytes() {
        // 6 MB of text, one character in three two bytes wide.
        let big: String = (0..3_000_000).map(|k| ['a', 'é', '\n'][k % 3]).collect();
        let turns = [("t1", 1, "small"), ("t2", 2, big.as_str()), ("t3", 3, "é")];
        let t = transcript(&turns);
        assert_holds(t.turns(), &owned(&turns));
        assert_eq!(t.turns().chars(1), 3_000_000);
        let chunks: Vec<usize> = t.turns().arena.chunks.iter().map(String::len).collect();
        assert_eq!(
            chunks,
            [7, 4_000_002, 4],
            "the large turn has a chunk of its own"
        );
        assert_eq!(t.turns().at(1).text.len(), 4_000_000);
    }

    #[test]
    fn store_keeps_seqs_with_gaps_above_32_bits() {
        let turns = [
            ("t1", 1, "a"),
            ("t2", 2, "b"),
            ("t3", 1 << 32, "c"),
            ("t4", (1 << 32) + 1, "d"),
            ("t5", 1 << 40, "e"),
            ("t6", u64::MAX - 1, "f"),
            ("t7", u64::MAX, "g"),
        ];
        let t = transcript(&turns);
        assert_holds(t.turns(), &owned(&turns));
        let after = |seq: u64| t.turns().partition_point(|turn| turn.seq.0 <= seq);
        assert_eq!(
            [
                after(0),
                after(2),
                after(1 << 32),
                after(1 << 39),
                after(u64::MAX)
            ],
            [0, 2, 3, 4, 7]
        );
    }

    #[test]
    fn column_keeps_values_across_32_bits_in_any_order() {
        // A column that dropped the high bits, or read the wrong run of them, fails here; the
        // arena's offsets pass 4 GiB only in a transcript too large for a test.
        let values = [
            0,
            0,
            7,
            u64::from(u32::MAX),
            1 << 32,
            (1 << 32) + 5,
            (1 << 33) + 1,
            3,
            u64::MAX,
            u64::MAX,
            0,
        ];
        let mut column = Column::default();
        for value in values {
            column.push(value);
        }
        assert_eq!(column.len(), values.len());
        let read: Vec<u64> = (0..values.len()).map(|index| column.get(index)).collect();
        assert_eq!(read, values);
        assert_eq!(column.zeros, 2, "the leading zeros take no space");
    }

    #[test]
    fn store_keeps_many_turns_through_every_regrowth() {
        let count: u64 = 100_000;
        let turn = |i: u64| {
            (
                format!("t{i}"),
                i * 3,
                if i.is_multiple_of(7) {
                    format!("ünïcode {i}")
                } else {
                    format!("result {i}")
                },
            )
        };
        let mut t = Transcript::new(ChildId::new("c").expect("child id"));
        let mut expected = Vec::new();
        for i in 1..=count {
            let (turn, seq, text) = turn(i);
            t.push_turn(id(&turn), TurnSeq(seq), text.as_str())
                .expect("push");
            expected.push((turn, seq, text));
        }
        assert_holds(t.turns(), &expected);
        assert!(
            t.turns().arena.chunks.len() > 10,
            "turns are read across many arena chunks"
        );
        assert_eq!(t.turns().position("t100001"), None);
        let err = t
            .push_turn(id("t1"), TurnSeq(count * 3 + 1), "again")
            .expect_err("the first id is still indexed after every rehash");
        assert_eq!(err.kind(), ErrorKind::DuplicateTurn);
    }

    #[test]
    fn store_asks_for_under_twice_the_bytes_it_holds() {
        // Capacities, not lengths, checked after every turn from the 1,000th on. With `grown`
        // doubling instead, this fails at 2.65x (1,025 turns); as it is, the worst is 1.79x
        // (1,185 turns, where the buffers' minimum sizes still show). The bench `read` counts
        // the same through a counting allocator, up to 10^6 turns.
        let mut turns = Turns::default();
        let mut held = 0;
        let mut worst = (0.0, 0);
        for i in 1..=120_000_u64 {
            let (turn, text) = (format!("t{i}"), format!("result {i:011}"));
            held += turn.len() + text.len();
            turns.push(&turn, TurnSeq(i), &text);
            let ratio = turns.heap_bytes() as f64 / held as f64;
            if i >= 1_000 && ratio > worst.0 {
                worst = (ratio, i);
            }
        }
        let (ratio, at) = worst;
        assert!(ratio < 2.0, "{ratio:.2}x the bytes held at {at} turns");
    }

    #[test]
    fn a_turn_id_compares_with_a_str_both_ways() {
        let turn = id("t12");
        let (same, other): (&str, &str) = ("t12", "t1");
        let equal = [turn == *same, turn == same, *same == turn, same == turn];
        let unequal = [turn == *other, turn == other, *other == turn, other == turn];
        assert_eq!((equal, unequal), ([true; 4], [false; 4]));
        // A stored turn's id, as a `TurnView` holds it.
        let t = transcript(&[("t12", 1, "a")]);
        let view = t.turns().get(0).expect("a turn");
        assert_eq!((turn == view.id, view.id == turn), (true, true));
    }

    #[test]
    fn turns_debug_lists_each_turn() {
        // The storage's columns mean nothing to a reader; `{:?}` shows the turns themselves.
        let t = transcript(&[("t1", 1, "a"), ("t2", 2, "b")]);
        assert_eq!(
            format!("{:?}", t.turns()),
            r#"[TurnView { id: "t1", seq: TurnSeq(1), text: "a" }, TurnView { id: "t2", seq: TurnSeq(2), text: "b" }]"#
        );
    }

    #[test]
    fn the_turns_iterator_knows_how_many_are_left_from_either_end() {
        let t = transcript(&[
            ("t1", 1, "a"),
            ("t2", 2, "b"),
            ("t3", 3, "c"),
            ("t4", 4, "d"),
        ]);
        let mut iter = t.turns().iter();
        let mut lens = vec![iter.len()];
        assert_eq!(iter.next().map(|turn| turn.id), Some("t1"));
        lens.push(iter.len());
        assert_eq!(iter.next_back().map(|turn| turn.id), Some("t4"));
        lens.push(iter.len());
        assert_eq!(iter.size_hint(), (2, Some(2)));
        let rest: Vec<&str> = iter.by_ref().map(|turn| turn.id).collect();
        assert_eq!(rest, ["t2", "t3"]);
        lens.push(iter.len());
        assert_eq!(lens, [4, 3, 2, 0]);
    }

    #[test]
    fn a_buffer_grows_by_a_quarter_only_when_full() {
        // The growth policy exactly, since the store's 2x bound above cannot see a buffer that
        // doubles or grows early: the arena's bytes dominate it.
        let mut full: Vec<u32> = Vec::with_capacity(100);
        full.extend(0..100);
        reserve_vec(&mut full, 1);
        assert_eq!(full.capacity(), 125, "a full buffer grows by a quarter");
        let mut room: Vec<u32> = Vec::with_capacity(100);
        room.extend(0..99);
        reserve_vec(&mut room, 1);
        assert_eq!(
            room.capacity(),
            100,
            "a buffer with room for the element keeps its size"
        );
        assert_eq!(grown(0, 1), GROW_MIN);
        assert_eq!(grown(100, 101), 125);
        assert_eq!(grown(100, 300), 300);
    }

    #[test]
    fn the_arena_fills_its_first_chunk_then_opens_chunks() {
        // A turn that fits the open chunk's room exactly goes into it: no new chunk, no copy.
        let mut arena = Arena::default();
        arena.push(["ab", "cd"]);
        let room = arena.chunks[0].capacity() - arena.chunks[0].len();
        let exact = "x".repeat(room);
        arena.push([&exact, ""]);
        assert_eq!(arena.chunks.len(), 1, "a turn of exactly the room fits");
        assert_eq!(arena.chunks[0].len(), arena.chunks[0].capacity());
        // Small turns grow the first chunk (by a quarter) up to 64 KiB and only
        // then open a second one.
        let turn = "y".repeat(100);
        while arena.len() + 100 <= 64 << 10 {
            arena.push([&turn, ""]);
            assert_eq!(arena.chunks.len(), 1, "at {} bytes", arena.len());
        }
        arena.push([&turn, ""]);
        assert_eq!(arena.chunks.len(), 2, "past the first chunk's limit");
        assert_eq!(arena.bases, vec![0, arena.len() - 100]);
        assert_eq!(arena.get(arena.len() - 100, arena.len()), turn);
    }

    #[test]
    fn a_full_transcript_refuses_a_turn_and_keeps_what_it_has() {
        let mut t = transcript(&[]);
        t.turns = Turns::with_turns_max(2);
        t.push_turn(id("t1"), TurnSeq(1), "a").expect("push");
        t.push_turn(id("t2"), TurnSeq(2), "b").expect("push");
        let err = t
            .push_turn(id("t3"), TurnSeq(3), "c")
            .expect_err("full at two turns");
        assert_eq!(err.kind(), ErrorKind::TranscriptFull);
        assert_holds(t.turns(), &owned(&[("t1", 1, "a"), ("t2", 2, "b")]));
    }

    /// Mixed-width text of `chars` characters: 1, 2, 3 and 4 bytes in a cycle of 7, so that
    /// stride boundaries fall on characters of every width.
    fn mixed(chars: usize) -> String {
        "aé日🦀 ü😀".chars().cycle().take(chars).collect()
    }

    /// The byte offset of every character of `text`, and of its end, as `char_indices` says.
    fn boundaries(text: &str) -> Vec<usize> {
        text.char_indices()
            .map(|(byte, _)| byte)
            .chain([text.len()])
            .collect()
    }

    #[test]
    fn char_byte_finds_every_character_as_char_indices_does() {
        // Past several 32-byte blocks, and texts shorter than one.
        let texts = [
            mixed(200),
            "x".repeat(100),
            String::new(),
            mixed(3) + &"y".repeat(70),
        ];
        for text in texts {
            for (n, byte) in boundaries(&text).into_iter().enumerate() {
                assert_eq!(char_byte(&text, n), byte, "character {n} of {text:?}");
            }
        }
    }

    #[test]
    fn the_char_index_maps_every_offset_as_char_indices_does() {
        // A turn of several strides, one of exactly two, one a character short of one, a long
        // ASCII one and short ones: every offset of each, the end included.
        let long = mixed(5 * CHAR_STRIDE + 300);
        let exact = mixed(2 * CHAR_STRIDE);
        let short = mixed(CHAR_STRIDE - 1);
        let ascii = "z".repeat(3 * CHAR_STRIDE + 5);
        let texts = [&short, &long, "é", &ascii, &exact, ""];
        let mut turns = Turns::default();
        for (i, text) in texts.iter().enumerate() {
            turns.push(&format!("t{i}"), TurnSeq(i as u64 + 1), text);
        }
        for (index, text) in texts.iter().enumerate() {
            for (char, byte) in boundaries(text).into_iter().enumerate() {
                assert_eq!(
                    turns.text_byte(index, text, char),
                    byte,
                    "turn {index}, character {char}"
                );
            }
        }
        // Entries only for the long turns that are not ASCII, one per whole stride.
        let indexed: Vec<u32> = turns.char_index.turns.iter().map(|&(t, _)| t).collect();
        assert_eq!((indexed, turns.char_index.marks.len()), (vec![1, 4], 5 + 2));
    }

    #[test]
    fn the_char_index_costs_nothing_for_short_or_ascii_turns_and_8_bytes_a_stride_else() {
        let mut turns = Turns::default();
        for i in 1..=1_000_u64 {
            turns.push(&format!("t{i}"), TurnSeq(i), &mixed(CHAR_STRIDE - 1));
        }
        turns.push("ascii", TurnSeq(1_001), &"z".repeat(100 * CHAR_STRIDE));
        assert_eq!(turns.char_index.heap_bytes(), 0, "short and ASCII turns");
        let chars = 3_000 * CHAR_STRIDE + 7;
        turns.push("long", TurnSeq(1_002), &mixed(chars));
        let per_turn = GROW_MIN * size_of::<(u32, usize)>();
        assert_eq!(
            turns.char_index.heap_bytes(),
            per_turn + 8 * (chars / CHAR_STRIDE),
            "one long turn: its first entry's buffer, then 8 bytes a stride"
        );
    }

    /// The offsets (before, at and after each stride boundary, and the end) whose `turn:<id>
    /// offset <k>` read does not show characters `k..` of `text` as char slicing gives them.
    fn offset_reads_that_differ(t: &Transcript, id: &str, text: &str) -> Vec<usize> {
        let chars = text.chars().count();
        let mut offsets: Vec<usize> = (0..=chars / CHAR_STRIDE)
            .flat_map(|k| {
                [
                    k * CHAR_STRIDE,
                    k * CHAR_STRIDE + 1,
                    (k + 1) * CHAR_STRIDE - 1,
                ]
            })
            .chain([chars - 1, chars])
            .filter(|&offset| offset <= chars)
            .collect();
        offsets.sort_unstable();
        offsets.dedup();
        offsets.retain(|&offset| {
            let selector = Selector::Turn {
                id: TurnId::new(id).expect("id"),
                offset,
            };
            let window = t.read(&ReadRequest::new(selector, 300)).expect("read");
            let excerpt = window.excerpt.expect("an excerpt of a long turn");
            let element = &window.text[window.text.find("[turn ").expect("the turn")..];
            let body = &element[element.find("]\n").expect("its header") + 2..];
            let shown: String = body.chars().take(excerpt.to - excerpt.from).collect();
            let expected: String = text
                .chars()
                .skip(offset)
                .take(excerpt.to - offset)
                .collect();
            excerpt.from != offset || shown != expected
        });
        offsets
    }

    #[test]
    fn a_shifted_char_index_entry_is_caught() {
        // Known-bad: the entry of character 2 * CHAR_STRIDE off by one, pointing at the
        // character after it. The reads it serves, and only those, must be caught.
        let text = mixed(4 * CHAR_STRIDE + 10);
        let mut t = transcript(&[("long", 1, text.as_str())]);
        assert_eq!(offset_reads_that_differ(&t, "long", &text), [0_usize; 0]);
        t.turns.char_index.marks[1] = boundaries(&text)[2 * CHAR_STRIDE + 1] as u64;
        assert_eq!(
            offset_reads_that_differ(&t, "long", &text),
            [2 * CHAR_STRIDE, 2 * CHAR_STRIDE + 1, 3 * CHAR_STRIDE - 1]
        );
    }
}
