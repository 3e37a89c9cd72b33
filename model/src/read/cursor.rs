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

/// CRC-64/XZ (ECMA-182, reflected, as `xz`), bit by bit: obvious, and independent of the
/// crate's table. The cursor's turn check and partial-turn record use it (section 5).
pub fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = !0u64;
    for &byte in bytes {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xC96C_5795_D787_0F42 & mask);
        }
    }
    !crc
}

/// What a cursor records of the partial turn (R15): its first `chars` characters, whose UTF-8
/// has the check `prefix` (CRC-64; CRC-32 in a v2 cursor), were given while the latest turn was
/// `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefSeen {
    /// The latest turn's seq when they were given.
    pub after: u64,
    /// Characters given (at least 1).
    pub chars: usize,
    /// The check of their UTF-8 bytes.
    pub prefix: u64,
}

/// A parsed cursor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefCursor {
    /// The child id, as written in the cursor.
    pub child: String,
    /// The seq of the last turn given.
    pub seq: u64,
    /// The CRC-64 of the id of the turn at `seq`; `None` at seq 0 and in a v2 cursor.
    pub turn: Option<u64>,
    /// What was seen of the partial turn.
    pub seen: Option<RefSeen>,
    /// Written in the older v2 form (section 5.3).
    pub v2: bool,
}

impl RefCursor {
    /// The v3 cursor of `child` after the turn `turn` (its id) at `seq`, recording `seen`.
    pub fn new(child: &str, seq: u64, turn: Option<&str>, seen: Option<RefSeen>) -> RefCursor {
        RefCursor {
            child: child.to_string(),
            seq,
            turn: turn.filter(|_| seq > 0).map(|id| crc64(id.as_bytes())),
            seen,
            v2: false,
        }
    }
}

fn seen_text(seen: Option<RefSeen>, v2: bool) -> String {
    match seen {
        None => "0".to_string(),
        Some(s) if v2 => format!("{:x}-{:x}-{:08x}", s.chars, s.after, s.prefix),
        Some(s) => format!("{:x}-{:x}-{:016x}", s.chars, s.after, s.prefix),
    }
}

/// The fields between the version and the check: `<seq hex> <turn> <seen>` (v3) or
/// `<seq hex> <seen>` (v2), space-separated as the check covers them.
fn fields(cursor: &RefCursor) -> String {
    let seen = seen_text(cursor.seen, cursor.v2);
    match (cursor.v2, cursor.turn) {
        (true, _) => format!("{:x} {seen}", cursor.seq),
        (false, None) => format!("{:x} 0 {seen}", cursor.seq),
        (false, Some(turn)) => format!("{:x} {turn:016x} {seen}", cursor.seq),
    }
}

/// The text of a cursor: `v3.<seq hex>.<turn>.<seen>.<check 8 hex>.<child>`, `<turn>` being `0`
/// at seq 0 or the 16-hex CRC-64 of the turn id, `<seen>` being `0` or
/// `<chars hex>-<after hex>-<prefix 16 hex>`, check = crc32 of
/// `parkline-cursor-v3 <seq hex> <turn> <seen> <child>`; the v2 form has no `<turn>` and an
/// 8-hex prefix.
pub fn cursor_text_of(cursor: &RefCursor) -> String {
    let tag = if cursor.v2 { "v2" } else { "v3" };
    let fields = fields(cursor);
    let check = crc32(format!("parkline-cursor-{tag} {fields} {}", cursor.child).as_bytes());
    format!(
        "{tag}.{}.{check:08x}.{}",
        fields.replace(' ', "."),
        cursor.child
    )
}

/// The characters of [`cursor_text_of`] for a v3 cursor of `child` at `seq` recording `seen`
/// (`(chars, after)` of what it records of the partial turn), counted without computing the
/// checks: each check has a fixed number of hex digits whatever its value.
pub(super) fn cursor_text_len(child: &str, seq: u64, seen: Option<(usize, u64)>) -> usize {
    let hex = |n: u64| format!("{n:x}").len();
    // "<chars hex>-<after hex>-<prefix 16 hex>" or "0"
    let seen = seen.map_or(1, |(chars, after)| {
        hex(chars as u64) + 1 + hex(after) + 1 + 16
    });
    let turn = if seq == 0 { 1 } else { 16 };
    // "v3.<seq hex>.<turn>.<seen>.<check 8 hex>.<child>"
    "v3.".len() + hex(seq) + 1 + turn + 1 + seen + 1 + 8 + 1 + child.chars().count()
}

/// The text of the v3 cursor of `child` after the turn with id `turn` at `seq` (no turn at 0),
/// with nothing seen of the partial turn.
pub fn cursor_text(child: &str, seq: u64, turn: Option<&str>) -> String {
    cursor_text_of(&RefCursor::new(child, seq, turn, None))
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
    let v2 = parts.first() == Some(&"v2");
    let width = if v2 { 5 } else { 6 };
    if parts.len() < width || !(v2 || parts[0] == "v3") {
        return Err(RefReadError::CursorDamaged);
    }
    let child = parts[width - 1..].join(".");
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let number = |f: &str| {
        if hex(f) {
            u64::from_str_radix(f, 16).map_err(|_| RefReadError::CursorDamaged)
        } else {
            Err(RefReadError::CursorDamaged)
        }
    };
    let seq = number(parts[1])?;
    let turn = match (v2, parts[2]) {
        (true, _) | (false, "0") => None,
        (false, check) => Some(number(check)?),
    };
    // Section 5: a v3 cursor names a turn exactly when its seq is past 0.
    if !v2 && (seq == 0) != turn.is_none() {
        return Err(RefReadError::CursorDamaged);
    }
    let seen = parse_seen(parts[width - 3], v2)?;
    if !valid_id(&child) {
        return Err(RefReadError::CursorDamaged);
    }
    let cursor = RefCursor {
        child,
        seq,
        turn,
        seen,
        v2,
    };
    if cursor_text_of(&cursor) != text {
        return Err(RefReadError::CursorDamaged);
    }
    Ok(cursor)
}

/// The `<seen>` field: `0`, or a record of at least one char (section 5.1: 0 has no form) whose
/// check has 8 hex digits in a v2 cursor and 16 in a v3 one (section 5.3).
fn parse_seen(text: &str, v2: bool) -> Result<Option<RefSeen>, RefReadError> {
    if text == "0" {
        return Ok(None);
    }
    let fields: Vec<&str> = text.split('-').collect();
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    if fields.len() != 3 || !fields.iter().all(|f| hex(f)) {
        return Err(RefReadError::CursorDamaged);
    }
    if fields[2].len() != if v2 { 8 } else { 16 } {
        return Err(RefReadError::CursorDamaged);
    }
    let number = |f: &str| u64::from_str_radix(f, 16).map_err(|_| RefReadError::CursorDamaged);
    let chars = usize::try_from(number(fields[0])?).map_err(|_| RefReadError::CursorDamaged)?;
    if chars == 0 {
        return Err(RefReadError::CursorDamaged);
    }
    Ok(Some(RefSeen {
        chars,
        after: number(fields[1])?,
        prefix: number(fields[2])?,
    }))
}
