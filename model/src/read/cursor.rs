//! The reference's cursor (spec/read.md section 5): its text, written and parsed the obvious way
//! with a bit-by-bit [`crc32`], so that the crate's cursor is checked against an independent
//! one. Only the canonical text of some cursor parses.

use super::types::RefReadError;

/// CRC-32 (IEEE, reflected, the zlib one), a byte at a time through a table that is computed
/// bit by bit at compile time: obvious, and independent of the crate's (`crc32fast`). Not bit by
/// bit at run time, because every reference read checksums its cursors and the partial turn.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc = (crc >> 8) ^ CRC_TABLE[usize::from((crc as u8) ^ byte)];
    }
    !crc
}

/// `CRC_TABLE[b]`: the CRC register after shifting the byte `b` through it bit by bit.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u32;
        let mut bit = 0;
        while bit < 8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
};

/// What a cursor records of the partial turn (R15): its first `chars` characters, whose UTF-8
/// has CRC-32 `prefix`, were given while the latest turn was `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefSeen {
    /// The latest turn's seq when they were given.
    pub after: u64,
    /// Characters given (at least 1).
    pub chars: usize,
    /// CRC-32 of their UTF-8 bytes.
    pub prefix: u32,
}

/// A parsed cursor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefCursor {
    /// The child id, as written in the cursor.
    pub child: String,
    /// The seq of the last turn given.
    pub seq: u64,
    /// What was seen of the partial turn.
    pub seen: Option<RefSeen>,
}

fn seen_text(seen: Option<RefSeen>) -> String {
    match seen {
        None => "0".to_string(),
        Some(s) => format!("{:x}-{:x}-{:08x}", s.chars, s.after, s.prefix),
    }
}

/// The text of a cursor: `v2.<seq hex>.<seen>.<check 8 hex>.<child>`, `<seen>` being `0` or
/// `<chars hex>-<after hex>-<prefix 8 hex>`, check = crc32 of
/// `parkline-cursor-v2 <seq hex> <seen> <child>`.
pub fn cursor_text_of(cursor: &RefCursor) -> String {
    let seen = seen_text(cursor.seen);
    let check = crc32(
        format!(
            "parkline-cursor-v2 {:x} {seen} {}",
            cursor.seq, cursor.child
        )
        .as_bytes(),
    );
    format!("v2.{:x}.{seen}.{check:08x}.{}", cursor.seq, cursor.child)
}

/// The characters of [`cursor_text_of`] for a cursor of `child` at `seq` recording `seen`
/// (`(chars, after)` of what it records of the partial turn), counted without computing the
/// checks: each check is 8 hex digits whatever its value.
pub(super) fn cursor_text_len(child: &str, seq: u64, seen: Option<(usize, u64)>) -> usize {
    let hex = |n: u64| format!("{n:x}").len();
    // "<chars hex>-<after hex>-<prefix 8 hex>" or "0"
    let seen = seen.map_or(1, |(chars, after)| {
        hex(chars as u64) + 1 + hex(after) + 1 + 8
    });
    // "v2.<seq hex>.<seen>.<check 8 hex>.<child>"
    "v2.".len() + hex(seq) + 1 + seen + 1 + 8 + 1 + child.chars().count()
}

/// The text of the cursor at `seq` of `child` with nothing seen of the partial turn.
pub fn cursor_text(child: &str, seq: u64) -> String {
    cursor_text_of(&RefCursor {
        child: child.to_string(),
        seq,
        seen: None,
    })
}

/// The text of a cursor of the retired v1 form (`v1.<seq hex>.<crc32(child)>.<check>`), which
/// reads refuse with [`RefReadError::CursorRetired`].
pub fn v1_cursor_text(child: &str, seq: u64) -> String {
    v1_text(seq, crc32(child.as_bytes()))
}

fn v1_text(seq: u64, tag: u32) -> String {
    let check = crc32(format!("parkline-cursor-v1 {seq:x} {tag:08x}").as_bytes());
    format!("v1.{seq:x}.{tag:08x}.{check:08x}")
}

/// Whether `id` is a valid child or turn id: 1 to 128 ASCII letters, digits, `-`, `_`, `.`.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Parses a cursor text. Only the canonical text of some cursor parses.
///
/// # Errors
///
/// [`RefReadError::CursorRetired`] for a v1 cursor, [`RefReadError::CursorDamaged`] for anything
/// else that is not a cursor.
pub fn parse_cursor(text: &str) -> Result<RefCursor, RefReadError> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() == 4
        && parts[0] == "v1"
        && let (Ok(seq), Ok(tag)) = (
            u64::from_str_radix(parts[1], 16),
            u32::from_str_radix(parts[2], 16),
        )
        && text == v1_text(seq, tag)
    {
        return Err(RefReadError::CursorRetired);
    }
    if parts.len() < 5 || parts[0] != "v2" {
        return Err(RefReadError::CursorDamaged);
    }
    let child = parts[4..].join(".");
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let seq = if hex(parts[1]) {
        u64::from_str_radix(parts[1], 16).map_err(|_| RefReadError::CursorDamaged)?
    } else {
        return Err(RefReadError::CursorDamaged);
    };
    let seen = if parts[2] == "0" {
        None
    } else {
        let fields: Vec<&str> = parts[2].split('-').collect();
        if fields.len() != 3 || !fields.iter().all(|f| hex(f)) {
            return Err(RefReadError::CursorDamaged);
        }
        let number = |f: &str| u64::from_str_radix(f, 16).map_err(|_| RefReadError::CursorDamaged);
        // Section 5.1: a record is of n >= 1 chars; 0 has no form.
        let chars = usize::try_from(number(fields[0])?).map_err(|_| RefReadError::CursorDamaged)?;
        if chars == 0 {
            return Err(RefReadError::CursorDamaged);
        }
        Some(RefSeen {
            chars,
            after: number(fields[1])?,
            prefix: u32::try_from(number(fields[2])?).map_err(|_| RefReadError::CursorDamaged)?,
        })
    };
    if !valid_id(&child) {
        return Err(RefReadError::CursorDamaged);
    }
    let cursor = RefCursor { child, seq, seen };
    if cursor_text_of(&cursor) != text {
        return Err(RefReadError::CursorDamaged);
    }
    Ok(cursor)
}
