//! The writer of a mirror (spec/mirror.md M1-M3, M12): a record's line with its checksum, the
//! header, and a whole file as the snapshot of a state.
//!
//! The records that carry lines (`park`, `dead`, `parks`) are written by hand
//! ([`write_lines_record`]): byte for byte what serde_json writes for the derived `Serialize`,
//! but each line's runs of plain bytes copied whole instead of one byte at a time, since a
//! park's cost was mostly serde_json escaping its line and a snapshot is nearly all park lines.
//! The other records hold integers only and are written by serde in version 3's spelling
//! (`v3.rs`, versions 3 and 4). The impl tests compare the hand-written writer with serde's
//! (`tests/record_json.rs`).

use super::header::{FORMAT, Header, VERSION};
use super::json::special_position;
use super::record::Record;
use super::state::MirrorState;
use super::v3::RecordV3;
use crate::ops::request::Answer;
use crate::types::{Item, Life, Seq};

/// The width of a record's checksum and the space after it: `crc32 hex` then ` `.
const CHECKSUM_PREFIX: usize = 9;

/// A record line (M1: checksum, space, JSON, newline) whose JSON `write` puts straight after
/// the checksum's place, in one buffer of `capacity` bytes to start with: the JSON is written
/// once and never copied, and the checksum is filled in over it at the end.
fn framed(capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut line = Vec::with_capacity(capacity);
    line.extend_from_slice(&[b'0'; CHECKSUM_PREFIX - 1]);
    line.push(b' ');
    write(&mut line);
    let crc = crc32fast::hash(&line[CHECKSUM_PREFIX..]);
    for (i, digit) in line[..CHECKSUM_PREFIX - 1].iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[((crc >> (28 - 4 * i)) & 0xf) as usize];
    }
    line.push(b'\n');
    line
}

/// Enough room for `record`'s line that it is rarely grown: the keys and counters, each line's
/// bytes, and each seq at its widest (20 digits and a comma).
fn capacity_of(record: &Record) -> usize {
    const FIXED: usize = 160;
    const SEQ: usize = 21;
    FIXED
        + match record {
            Record::Park { line, .. } | Record::Dead { line, .. } => line.len(),
            Record::Parks { items, .. } => items.iter().map(|item| item.line.len() + 48).sum(),
            Record::Batch { seqs, .. } | Record::Redrive { seqs, .. } => seqs.len() * SEQ,
            Record::Settle {
                delivered,
                failed,
                dead,
                ..
            } => (delivered.len() + failed.len() + dead.len()) * SEQ,
            Record::Flight { seqs, .. } => seqs.len() * SEQ,
            Record::Discard { seqs, .. } => seqs.len() * SEQ,
            Record::Op { refused, .. } => refused.as_ref().map_or(0, String::len),
            Record::Attempt { .. }
            | Record::Next { .. }
            | Record::Close { .. }
            | Record::Done { .. } => 0,
        }
}

/// The encoded line of one record.
pub(crate) fn encode_record(record: &Record) -> Vec<u8> {
    framed(capacity_of(record), |line| {
        // The park records are written by hand, byte for byte as serde would write them; the
        // others in their version 3 spelling (seq lists as runs).
        if !write_lines_record(line, record) {
            // Serialising a plain enum of integers, strings and vectors cannot fail.
            serde_json::to_writer(line, &RecordV3::of(record))
                .unwrap_or_else(|_| unreachable!("record serialises"));
        }
    })
}

pub(crate) fn encode_header(life: Option<Life>) -> Vec<u8> {
    //= spec/mirror.md#m2-header-and-version
    //# The first record MUST be the header `{"format":"parkline-mirror","version":4}`, with the
    //# mirror's life (M17) as a third field `"life"` of 16 lowercase hexadecimal digits.
    let header = Header {
        format: FORMAT,
        version: VERSION,
        life,
    };
    framed(64, |line| {
        serde_json::to_writer(line, &header).unwrap_or_else(|_| unreachable!("header serialises"));
    })
}

/// A complete mirror file (header and snapshot records) that decodes to `state`.
///
/// `state` must be one that [`decode`](fn@super::decode) could return (for instance a batch's
/// items must be the lowest seqs parked at its boundary); otherwise the bytes will not decode.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use parkline::mirror::{decode, encode, MirrorState};
/// let state = MirrorState::default();
/// assert_eq!(decode(&encode(&state))?, state);
/// # Ok(()) }
/// ```
pub fn encode(state: &MirrorState) -> Vec<u8> {
    let mut bytes = encode_header(state.life);
    for record in snapshot_records(state) {
        bytes.extend_from_slice(&encode_record(&record));
    }
    bytes
}

/// The records that rebuild `state` from an empty one, in an order `apply` accepts.
fn snapshot_records(state: &MirrorState) -> Vec<Record> {
    //= spec/mirror.md#m12-compaction
    //# A snapshot is the header and the records that rebuild the state: the dead letters and every
    //# live item (parked or in flight) as `dead`/`park` records in seq order, then a `flight`
    //# record naming the in-flight batch's items, then the remembered window as `done` records,
    //# oldest first, then the applied window of M17 as `op` records, oldest first, then `next`
    //# with the window's size.
    let record = |item: &Item, parked: bool| {
        let (seq, request, line) = (item.seq, item.request, item.line.clone());
        let (failures, handed, at) = (item.failures, item.handed, item.parked_at);
        if parked {
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
                died: item.died_at,
            }
        }
    };
    //= spec/delivery.md#d8-dead-letter
    //# Dead letters MUST be kept in the mirror,
    let mut items: Vec<(Seq, Record)> = Vec::new();
    items.extend(
        state
            .dead_letters
            .iter()
            .map(|item| (item.seq, record(item, false))),
    );
    let in_flight = state.in_flight.iter().flat_map(|batch| &batch.items);
    let live = state.parked.iter().chain(in_flight);
    items.extend(live.map(|item| (item.seq, record(item, true))));
    items.sort_by_key(|(seq, _)| *seq);
    let mut records: Vec<Record> = items.into_iter().map(|(_, record)| record).collect();
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# across crashes and recoveries,
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# it is durable in the mirror.
    if let Some(batch) = &state.in_flight {
        records.push(Record::Flight {
            id: batch.id,
            attempt: batch.attempt,
            seqs: batch.items.iter().map(|item| item.seq).collect(),
            remaining: batch.remaining,
        });
    }
    // D3: the remembered window, oldest first, so that `next` keeps the newest.
    records.extend(state.remembered.iter().map(|entry| Record::Done {
        request: entry.request,
        crc: entry.crc,
        seq: entry.seq,
        batch: entry.batch,
        end: entry.end,
    }));
    // M17: the applied window, oldest first.
    records.extend(state.ops.iter().map(|applied| {
        let (moved, refused) = match &applied.answer {
            Answer::Moved(moved) => (Some(*moved), None),
            Answer::Refused(why) => (None, Some(why.clone())),
        };
        Record::Op {
            op: applied.id.clone(),
            verb: applied.verb,
            change: applied.change,
            moved,
            refused,
        }
    }));
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //# Snapshots MUST end with a `next` record carrying the counters, so ids are not reused
    //# after the items that used them were dropped.
    records.push(Record::Next {
        seq: state.next_seq,
        batch: state.next_batch,
        cap: state.cap,
        memory: Some(state.memory),
    });
    records
}

/// Writes `record`'s JSON to `out` exactly as `serde_json::to_writer` writes it, if it is a
/// `park`, `dead` or `parks` record, and returns whether it was; any other record is left to
/// serde (it holds integers only).
pub(crate) fn write_lines_record(out: &mut Vec<u8>, record: &Record) -> bool {
    match record {
        Record::Park {
            seq,
            request,
            line,
            failures,
            handed,
            at,
        }
        | Record::Dead {
            seq,
            request,
            line,
            failures,
            handed,
            at,
            ..
        } => {
            out.extend_from_slice(if matches!(record, Record::Park { .. }) {
                br#"{"type":"park","seq":"#
            } else {
                br#"{"type":"dead","seq":"#
            });
            write_integer(out, seq.0);
            out.extend_from_slice(br#","request":"#);
            write_integer(out, request.0);
            out.extend_from_slice(br#","line":"#);
            write_string(out, line);
            out.extend_from_slice(br#","failures":"#);
            write_integer(out, u64::from(*failures));
            out.extend_from_slice(br#","handed":"#);
            write_integer(out, *handed);
            write_optional(out, br#","at":"#, *at);
            if let Record::Dead { died, .. } = record {
                write_optional(out, br#","died":"#, *died);
            }
            out.push(b'}');
            true
        }
        Record::Parks { seq, at, items } => {
            out.extend_from_slice(br#"{"type":"parks","seq":"#);
            write_integer(out, seq.0);
            write_optional(out, br#","at":"#, *at);
            out.extend_from_slice(br#","items":["#);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"request":"#);
                write_integer(out, item.request.0);
                out.extend_from_slice(br#","line":"#);
                write_string(out, &item.line);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
            true
        }
        _ => false,
    }
}

/// `key` and `value`, when there is a value: an optional field as serde skips it.
fn write_optional(out: &mut Vec<u8>, key: &[u8], value: Option<u64>) {
    if let Some(value) = value {
        out.extend_from_slice(key);
        write_integer(out, value);
    }
}

/// `value` in decimal, as serde_json writes a `u64`.
fn write_integer(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(crate::frame::decimal_digits(value.into(), &mut [0; 39]));
}

/// `text` as a JSON string, escaped as serde_json escapes it: `"` and `\\` with a backslash,
/// the control characters `\b`, `\t`, `\n`, `\f`, `\r` by letter and the others as `\u00xx`
/// (lowercase hex), every other character as itself. The runs between the bytes that need an
/// escape are found eight bytes at a time and copied whole.
fn write_string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text.as_bytes();
    while let Some(at) = special_position(rest) {
        out.extend_from_slice(&rest[..at]);
        let byte = rest[at];
        match byte {
            b'"' => out.extend_from_slice(br#"\""#),
            b'\\' => out.extend_from_slice(br"\\"),
            0x08 => out.extend_from_slice(br"\b"),
            b'\t' => out.extend_from_slice(br"\t"),
            b'\n' => out.extend_from_slice(br"\n"),
            0x0c => out.extend_from_slice(br"\f"),
            b'\r' => out.extend_from_slice(br"\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(br"\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xf)]);
            }
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}
