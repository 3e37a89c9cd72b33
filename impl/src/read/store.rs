//! How a `Transcript` stores its completed turns: compactly, because a
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

use super::ids::{ID_CHARS_MAX, Turn, TurnId, TurnSeq};

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
    /// [`TurnRef::id`](super::ids::TurnRef) is: the ids lie back to back in the store's arena, and a
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

/// The completed turns of a `Transcript`, in seq order, stored compactly:
/// ids and texts in one arena, a few bytes of bookkeeping per turn, and an id index of turn
/// numbers. `Transcript::turns` returns it.
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
mod tests;
