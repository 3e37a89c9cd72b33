//! A record's JSON (spec/mirror.md M3) read without serde's intermediate tree, where a mirror
//! holds the most of it: the `park` and `dead` lines; and the byte searches the reader and the
//! writer (`encode.rs`) share.
//!
//! [`park_or_dead`] is the reader's fast path: a `park` or `dead` record spelled exactly as
//! `encode_record` writes it (keys in declaration order, no whitespace, integers without leading
//! zeros, the escapes serde_json writes), which is nearly every line of a large mirror in every
//! version. It reads no byte twice and allocates the line once, at its exact length. Anything
//! else, valid or not, returns `None` and is read by serde's derived code for the file's version
//! (`RecordV3`, `RecordV2`, `RecordV1`): it only ever accepts a subset of what that code
//! accepts, with the same value. (A derived internally tagged enum buffers each record into
//! serde's `Content` tree before it knows the variant: for a park line that was more than half
//! of a recovery's instructions.)
//!
//! The impl tests compare it with serde's derived code (`tests/record_json.rs`).

use super::record::Record;
use crate::line::Line;
use crate::types::{RequestId, Seq};

/// A `park` or `dead` record exactly as `encode_record` writes it, or `None` for any other
/// text (which the general path then reads, or rejects).
pub(crate) fn park_or_dead(json: &[u8]) -> Option<Record> {
    park_or_dead_prefix(json, &mut String::new())
        .filter(|(_, len)| *len == json.len())
        .map(|(record, _)| record)
}

/// [`park_or_dead`] of the record `bytes` starts with, and the record's length: what follows
/// it is not looked at. (Nothing it accepts holds a `\n`, so it never reads past a line.) A
/// line with escapes is unescaped into `unescaped` first (its old content is dropped).
pub(crate) fn park_or_dead_prefix(json: &[u8], unescaped: &mut String) -> Option<(Record, usize)> {
    let mut r = Reader { json, at: 0 };
    let park = if r.literal(br#"{"type":"park","seq":"#) {
        true
    } else if r.literal(br#"{"type":"dead","seq":"#) {
        false
    } else {
        return None;
    };
    let seq = Seq(r.integer()?);
    r.expect(br#","request":"#)?;
    let request = RequestId(r.integer()?);
    r.expect(br#","line":""#)?;
    let line = r.string(unescaped)?;
    r.expect(br#","failures":"#)?;
    let failures = u32::try_from(r.integer()?).ok()?;
    r.expect(br#","handed":"#)?;
    let handed = r.integer()?;
    // Version 4's times (D24), each written only when known.
    let at = r.optional(br#","at":"#)?;
    let died = if park {
        None
    } else {
        r.optional(br#","died":"#)?
    };
    r.expect(b"}")?;
    let record = if park {
        Record::Park {
            seq,
            request,
            line,
            failures,
            handed,
            at,
        }
    } else {
        Record::Dead {
            seq,
            request,
            line,
            failures,
            handed,
            at,
            died,
        }
    };
    Some((record, r.at))
}

struct Reader<'a> {
    json: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// Whether `text` comes next; if so, it is consumed. (A fixed length, so the comparison is
    /// a few loads, not a call.)
    fn literal<const N: usize>(&mut self, text: &[u8; N]) -> bool {
        let found = self.json.get(self.at..self.at + N) == Some(&text[..]);
        if found {
            self.at += N;
        }
        found
    }

    fn expect<const N: usize>(&mut self, text: &[u8; N]) -> Option<()> {
        self.literal(text).then_some(())
    }

    /// The integer after `key` when `key` comes next, `Some(None)` when it does not, and `None`
    /// when the key is there without an integer.
    fn optional<const N: usize>(&mut self, key: &[u8; N]) -> Option<Option<u64>> {
        if self.literal(key) {
            self.integer().map(Some)
        } else {
            Some(None)
        }
    }

    /// A non-negative integer as serde_json writes it: `0`, or digits not starting with `0`,
    /// within `u64`.
    fn integer(&mut self) -> Option<u64> {
        let digits = &self.json[self.at..];
        let first = *digits.first().filter(|first| first.is_ascii_digit())?;
        let mut value = u64::from(first - b'0');
        let mut len = 1;
        while let Some(&digit) = digits.get(len)
            && digit.is_ascii_digit()
        {
            // serde_json refuses a leading zero; the general path gives its error.
            if value == 0 {
                return None;
            }
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
            len += 1;
        }
        self.at += len;
        Some(value)
    }

    /// The rest of a string whose opening quote was consumed, through its closing quote: valid
    /// UTF-8, no control character, escapes of one character or of a code point outside the
    /// surrogates (a surrogate pair goes to the general path). One pass finds its end and its
    /// escapes (the first [`ESCAPES_KEPT`] kept by position), then the text between them is
    /// unescaped into `unescaped` (cleared first) and the line allocated once from it, at its
    /// exact length.
    fn string(&mut self, unescaped: &mut String) -> Option<Line> {
        let start = self.at;
        let mut shrink = 0usize;
        let mut escapes = [(0usize, '\0', 0usize); ESCAPES_KEPT];
        let mut count = 0usize;
        let mut at = start;
        let end = loop {
            at += special_position(&self.json[at..])?;
            match self.json[at] {
                b'"' => break at,
                b'\\' => {
                    let (unescaped, (unescaped_len, escaped_len)) = unescape(&self.json[at..])?;
                    if let Some(kept) = escapes.get_mut(count) {
                        *kept = (at - start, unescaped, escaped_len);
                    }
                    count += 1;
                    shrink += escaped_len - unescaped_len;
                    at += escaped_len;
                }
                _ => return None, // a control character: serde_json refuses it
            }
        };
        let raw = std::str::from_utf8(&self.json[start..end]).ok()?;
        self.at = end + 1;
        if count == 0 {
            return Some(Line::from(raw));
        }
        let line = unescaped;
        line.clear();
        line.reserve(raw.len() - shrink);
        let mut copied = 0;
        let mut rest = raw;
        if count <= ESCAPES_KEPT {
            for &(escape, unescaped, escaped_len) in &escapes[..count] {
                line.push_str(&raw[copied..escape]);
                line.push(unescaped);
                copied = escape + escaped_len;
            }
            rest = &raw[copied..];
        } else {
            // Too many to keep: found again, one after the other.
            while let Some(backslash) = backslash_position(rest.as_bytes()) {
                line.push_str(&rest[..backslash]);
                let (unescaped, (_, escaped_len)) = unescape(&rest.as_bytes()[backslash..])?;
                line.push(unescaped);
                rest = &rest[backslash + escaped_len..];
            }
        }
        line.push_str(rest);
        Some(Line::from(line.as_str()))
    }
}

/// How many escapes of one string the fast path keeps by position; a string with more is
/// searched for them again.
const ESCAPES_KEPT: usize = 16;

/// The character the escape at the start of `text` (a backslash) stands for, with its length
/// unescaped (in UTF-8) and escaped; `None` for an escape the general path must judge.
#[inline]
fn unescape(text: &[u8]) -> Option<(char, (usize, usize))> {
    let unescaped = match text.get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = text.get(2..6)?;
            let code = hex.iter().try_fold(0u32, |code, &digit| {
                Some(code * 16 + char::from(digit).to_digit(16)?)
            })?;
            // A surrogate is never a char: from_u32 refuses it, and the pair goes to serde.
            let unescaped = char::from_u32(code)?;
            return Some((unescaped, (unescaped.len_utf8(), 6)));
        }
        _ => return None,
    };
    Some((unescaped, (1, 2)))
}

/// Whether a string byte needs a look: its end, an escape, or a control character.
fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// The position of the first byte of `bytes` [`is_special`] holds for.
pub(crate) fn special_position(bytes: &[u8]) -> Option<usize> {
    let mask =
        |word: u64| equal_bytes(word, b'"') | equal_bytes(word, b'\\') | bytes_below(word, 0x20);
    position(bytes, mask, is_special)
}

/// The position of the first `\n` in `bytes` (memchr's vector search: recovery asks it of every
/// line and every record).
pub(crate) fn newline_position(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

/// The position of the first `\\` in `bytes`.
pub(crate) fn backslash_position(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\\', bytes)
}

// Eight bytes at a time, in a `u64` (byte 0 lowest): `mask` sets the high bit of the bytes that
// hit. Its lowest set bit is exact: the borrows these masks compute with only run upwards, so
// a byte may be flagged falsely only above a byte that truly hits.
const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `word` below `limit` (at most 128), exact up to the first.
fn bytes_below(word: u64, limit: u8) -> u64 {
    word.wrapping_sub(LOW_BITS * u64::from(limit)) & !word & HIGH_BITS
}

/// The high bit of every byte of `word` equal to `byte`, exact up to the first.
fn equal_bytes(word: u64, byte: u8) -> u64 {
    bytes_below(word ^ (LOW_BITS * u64::from(byte)), 1)
}

#[inline(always)]
fn position(bytes: &[u8], mask: impl Fn(u64) -> u64, hit: impl Fn(u8) -> bool) -> Option<usize> {
    let word = |bytes: &[u8]| {
        let mut eight = [0; 8];
        eight.copy_from_slice(bytes);
        mask(u64::from_le_bytes(eight))
    };
    // Sixteen bytes a turn, one branch for both words.
    let mut blocks = bytes.chunks_exact(16);
    let mut start = 0;
    for block in &mut blocks {
        let (low, high) = (word(&block[..8]), word(&block[8..]));
        if low | high != 0 {
            let hits = if low != 0 { low } else { high };
            let skipped = if low != 0 { 0 } else { 8 };
            return Some(start + skipped + hits.trailing_zeros() as usize / 8);
        }
        start += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&byte| hit(byte))
        .map(|i| start + i)
}
