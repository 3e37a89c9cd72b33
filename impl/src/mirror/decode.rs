//! The reader of a mirror (spec/mirror.md M1-M3, M7, M11, M14): [`LogDecoder`] takes a file in
//! the pieces it is read in and rebuilds its state record by record, each checksum checked and
//! each record applied through the one transition; [`decode_log`] is the same on a file held
//! whole. A final segment without its newline is a torn append, reported rather than refused
//! (M7); anything else wrong is `Corrupt` with the record's number and offset (M11).

use super::header::{VERSION, VERSION_OLDEST, check_header};
use super::json::{newline_position, park_or_dead, park_or_dead_prefix};
use super::legacy::{RecordV1, RecordV2};
use super::record::Record;
use super::state::MirrorState;
use super::v3::RecordV3;
use crate::error::{Error, Result};

/// The outcome of decoding a mirror file: its state and where its valid records end.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// let mut bytes = parkline::mirror::encode(&Default::default());
/// let valid = bytes.len() as u64;
/// bytes.extend_from_slice(b"0123"); // an append torn by a crash
/// let decoded = parkline::mirror::decode_log(&bytes)?;
/// assert_eq!(decoded.valid_len, valid);
/// assert_eq!(decoded.torn_len, 4);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The state the records build.
    pub state: MirrorState,
    /// How many complete records the file holds, the header included.
    pub records: u64,
    /// The length of the complete records; `open` cuts the file to this length.
    pub valid_len: u64,
    /// The length of a final segment without its `\n` (a torn append, M7); 0 when none.
    pub torn_len: u64,
    /// The format version of the file's header: [`VERSION`], or an older one `open` upgrades
    /// (M14).
    pub version: u64,
}

/// Decodes a mirror file into its state; see [`decode_log`] for the torn tail.
///
/// # Errors
///
/// [`ErrorKind::Corrupt`](crate::error::ErrorKind::Corrupt) with the record number, byte offset and
/// reason, for anything but a torn final segment: no header, an unknown format or version, a bad
/// checksum, a JSON error, or an impossible record (M11).
///
/// # Example
///
/// ```
/// let err = parkline::mirror::decode(b"00000000 {}\n").unwrap_err();
/// assert_eq!(err.kind(), parkline::ErrorKind::Corrupt);
/// assert_eq!(err.record(), Some(1));
/// ```
pub fn decode(bytes: &[u8]) -> Result<MirrorState> {
    decode_log(bytes).map(|decoded| decoded.state)
}

/// Decodes a mirror file, reporting a torn final segment instead of failing on it (M7).
///
/// # Errors
///
/// As [`decode`].
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// let decoded = parkline::mirror::decode_log(&parkline::mirror::encode(&Default::default()))?;
/// assert_eq!(decoded.torn_len, 0);
/// assert_eq!(decoded.records, 2); // header and counters
/// # Ok(()) }
/// ```
pub fn decode_log(bytes: &[u8]) -> Result<Decoded> {
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# Anything in the file other than a torn final append (M7) — an empty file, a missing or torn
    //# header, an unknown format or version (M2), a bad checksum (M1), a JSON error, an unknown
    //# record type or field, an impossible record (M3, M6) — MUST make opening fail with a
    //# `Corrupt` error naming the file, the byte offset and the 1-based number of the bad record
    //# (the header is record 1), and the reason.
    let mut decoder = LogDecoder::new();
    decoder.feed(bytes)?;
    decoder.finish()
}

/// [`decode_log`] of a file read in pieces: the pieces are fed in file order, as they come, so
/// a file is decoded without ever being held whole (`Queue::open` reads the mirror so).
/// A line split between pieces is gathered in a buffer of its own; the others are read where
/// they lie. The first error ends the decoding: nothing may be fed after it.
#[derive(Debug)]
pub(crate) struct LogDecoder {
    state: MirrorState,
    /// The complete records so far, the header included.
    records: u64,
    /// The length of those records: the offset of the next line.
    valid_len: u64,
    version: u64,
    /// Whether any byte was fed (an empty file has no header, M2).
    fed: bool,
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
    /// Where the fast path unescapes a line that holds escapes, before the line is allocated
    /// once at its length; its capacity serves the next such line.
    unescaped: String,
}

impl LogDecoder {
    pub(crate) fn new() -> Self {
        LogDecoder {
            state: MirrorState::default(),
            records: 0,
            valid_len: 0,
            version: VERSION,
            fed: false,
            partial: Vec::new(),
            unescaped: String::new(),
        }
    }

    /// Decodes the lines `piece` completes.
    ///
    /// # Errors
    ///
    /// As [`decode`], for the first damaged record.
    pub(crate) fn feed(&mut self, mut piece: &[u8]) -> Result<()> {
        if piece.is_empty() {
            return Ok(());
        }
        self.fed = true;
        if !self.partial.is_empty() {
            let Some(end) = newline_position(piece) else {
                self.partial.extend_from_slice(piece);
                return Ok(());
            };
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&piece[..end]);
            let decoded = self.line(&line);
            line.clear();
            self.partial = line; // its capacity serves the next split line
            decoded?;
            piece = &piece[end + 1..];
        }
        loop {
            // Nearly every line of a large mirror: read in one pass, its end found by the
            // parse instead of a search first.
            if self.records > 0
                && self.version >= 2
                && let Some((record, len)) = fast_line(piece, &mut self.unescaped)
            {
                self.records += 1;
                let (offset, number) = (self.valid_len, self.records);
                of_version(record, self.version)
                    .and_then(|record| self.state.apply(record))
                    .map_err(|reason| Error::corrupt(offset, number, reason))?;
                self.valid_len += len as u64 + 1;
                piece = &piece[len + 1..];
                continue;
            }
            let Some(end) = newline_position(piece) else {
                break;
            };
            self.line(&piece[..end])?;
            piece = &piece[end + 1..];
        }
        self.partial.extend_from_slice(piece);
        Ok(())
    }

    /// The state of the file fed, with its torn final segment (M7).
    ///
    /// # Errors
    ///
    /// As [`decode`]: an empty file, or a header without its newline.
    pub(crate) fn finish(self) -> Result<Decoded> {
        if !self.fed {
            return Err(Error::corrupt(0, 1, "empty file: no header"));
        }
        if self.records == 0 {
            // M2: the header is created whole (temp file, fsync, rename), so it is never torn.
            return Err(Error::corrupt(0, 1, "header without its newline"));
        }
        //= spec/mirror.md#m7-torn-final-record
        //# On open, a final segment that does not end in `\n` (after at least a complete
        //# header) is a **torn append**: the reader MUST report it (`Decoded::torn_len`), and
        //# the queue MUST cut the file to the end of the last complete record and fsync it
        //# before writing anything else.
        // M7: a final segment without its newline is an append whose fsync never returned.
        Ok(Decoded {
            state: self.state,
            records: self.records,
            valid_len: self.valid_len,
            torn_len: self.partial.len() as u64,
            version: self.version,
        })
    }

    /// One complete line, without its newline.
    fn line(&mut self, line: &[u8]) -> Result<()> {
        self.records += 1;
        let (offset, number) = (self.valid_len, self.records);
        let at = |reason: String| Error::corrupt(offset, number, reason);
        let json = checked_json(line).map_err(at)?;
        if number == 1 {
            //= spec/mirror.md#m2-header-and-version
            //# The first record MUST be the header `{"format":"parkline-mirror","version":4}`, with the
            //# mirror's life (M17) as a third field `"life"` of 16 lowercase hexadecimal digits.
            (self.version, self.state.life) = check_header(json).map_err(at)?;
        } else {
            let record = read_record(json, self.version, &self.state)
                .and_then(|record| of_version(record, self.version))
                .map_err(at)?;
            self.state.apply(record).map_err(at)?;
        }
        self.valid_len += line.len() as u64 + 1;
        Ok(())
    }
}

/// A complete version 2 `park` or `dead` line at the start of `bytes`, spelled as parkline
/// writes it and with the right checksum: its record and its length without the newline.
/// `None` for anything else, which [`LogDecoder::line`] then reads, or rejects with its reason;
/// for a line this accepts, `line` would give the same record.
fn fast_line(bytes: &[u8], unescaped: &mut String) -> Option<(Record, usize)> {
    let prefix = bytes.get(..9)?;
    if prefix[8] != b' ' {
        return None;
    }
    let stored = hex_checksum(&prefix[..8])?;
    let (record, json_len) = park_or_dead_prefix(&bytes[9..], unescaped)?;
    let end = 9 + json_len;
    if bytes.get(end) != Some(&b'\n') || crc32fast::hash(&bytes[9..end]) != stored {
        return None;
    }
    Some((record, end))
}

/// The record `json` holds, in a file of `version`, resolved against `state`: a `park` or
/// `dead` record as parkline writes it by the fast path; anything else of version 3 by serde's
/// derived code, of versions 2 and 1 by their derived enums.
fn read_record(
    json: &[u8],
    version: u64,
    state: &MirrorState,
) -> std::result::Result<Record, String> {
    let json_error = |e: serde_json::Error| format!("json error: {e}");
    //= spec/mirror.md#m2-header-and-version
    //# A new version gets a new number; a reader of version N MAY read older versions.
    if version == VERSION_OLDEST {
        return serde_json::from_slice::<RecordV1>(json)
            .map(Record::from)
            .map_err(json_error);
    }
    if let Some(record) = park_or_dead(json) {
        return Ok(record);
    }
    if version == 2 {
        //= spec/mirror.md#m14-upgrade-from-older-versions
        //# A reader MUST read a version 2 file (version 3's format with seq lists written as plain
        //# arrays, a snapshot's in-flight batch written as `park` records of its items, each with
        //# its handed minus the batch's attempt, before a `batch` record at the stored attempt, and
        //# no `close`, `discard`, `flight` or cap) with the same transition.
        return serde_json::from_slice::<RecordV2>(json)
            .map(Record::from)
            .map_err(json_error);
    }
    serde_json::from_slice::<RecordV3>(json)
        .map_err(json_error)?
        .resolve(state)
}

/// `record`, unless it uses what version 4 added in a file of an older version (M2: a writer
/// never mixes versions).
fn of_version(record: Record, version: u64) -> std::result::Result<Record, String> {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //# A reader MUST read a version 3 file (this document's format without the fields and the
    //# record version 4 added: no `at` or `died`, no `memory` in `next`, no `done` record, so no
    //# time and an empty remembered window of size 0) with the same transition, and MUST reject a
    //# record of a version 3 file that holds any of them.
    if version < 4 && record.is_version_4() {
        return Err(format!("a record of version 4 in a version {version} file"));
    }
    Ok(record)
}

/// The JSON of one line, after checking its checksum (M1).
pub(crate) fn checked_json(line: &[u8]) -> std::result::Result<&[u8], String> {
    //= spec/mirror.md#m1-record-lines
    //# A reader MUST reject a complete line (one ending in `\n`) whose checksum is missing, not 8
    //# lowercase hex digits, or different from the JSON's.
    if line.len() < 10 || line[8] != b' ' {
        return Err("not a record: expected `<8 hex digits> <json>`".to_owned());
    }
    let (crc, json) = (&line[..8], &line[9..]);
    let stored =
        hex_checksum(crc).ok_or_else(|| "checksum is not 8 lowercase hex digits".to_owned())?;
    let actual = crc32fast::hash(json);
    if stored != actual {
        return Err(format!(
            "checksum mismatch: stored {stored:08x}, computed {actual:08x}"
        ));
    }
    Ok(json)
}

/// The value of 8 lowercase hex digits, or `None`.
#[inline]
fn hex_checksum(digits: &[u8]) -> Option<u32> {
    // Without a branch per digit: a CRC's digits are digits or letters at random.
    let (mut value, mut hex) = (0u32, true);
    for &digit in digits {
        let is_digit = digit.wrapping_sub(b'0') < 10;
        let is_letter = digit.wrapping_sub(b'a') < 6;
        hex &= is_digit | is_letter;
        value = value << 4 | u32::from((digit & 0x0f) + 9 * u8::from(is_letter));
    }
    hex.then_some(value)
}
