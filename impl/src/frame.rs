//! The turn text of a batch: [`render`] writes it, [`parse`] is its one reading (D4, D4a).
//!
//! ```text
//! [parkline batch ID attempt ATTEMPT REPEAT: K of N parked lines, SEEN seen before, BYTES bytes]
//! ...K lines, each followed by "\n", BYTES bytes in all...
//! [parkline batch ID end: REMAINING parked lines still undelivered, crc32 CRC]
//! ```
//!
//! A line may hold anything but `\n`, including a copy of a header or a trailer, so the framing
//! is never found by looking at what the lines contain: the header is the first line of the
//! text and fixes the length of the body, the trailer starts exactly where the body ends and is
//! the rest of the text. Every number is plain decimal and every word fixed, so a text that
//! parses has exactly one [`Frame`] and rendering that frame gives back the same text.

use std::fmt;

use crate::ids::{Attempt, BatchId};

const HEADER_BATCH: &str = "[parkline batch ";
const HEADER_ATTEMPT: &str = " attempt ";
const HEADER_REPEAT: &str = ", repeat";
const HEADER_K: &str = ": ";
const HEADER_N: &str = " of ";
const HEADER_SEEN: &str = " parked lines, ";
const HEADER_BYTES: &str = " seen before, ";
const HEADER_END: &str = " bytes]\n";
const TRAILER_BATCH: &str = "[parkline batch ";
const TRAILER_REMAINING: &str = " end: ";
const TRAILER_CRC: &str = " parked lines still undelivered, crc32 ";
const TRAILER_END: &str = "]\n";
const CRC_DIGITS: usize = 8;

/// The widest decimal `u64` or `usize`, and the widest attempt (`u32`).
const NUMBER_DIGITS_MAX: usize = 20;
const ATTEMPT_DIGITS_MAX: usize = 10;

/// The most characters the header and trailer of any turn text take together: every number at
/// its widest and the repeat mark. What [`Budget::for_turn_chars`](crate::ids::Budget::for_turn_chars)
/// sets aside, so that a repeat, whose header is longer than its first hand-over's, still fits
/// the same limit (D12).
///
/// # Example
///
/// ```
/// use parkline::{Attempt, BatchId, frame};
/// let text = frame::render(BatchId(u64::MAX), Attempt(u32::MAX), 0, usize::MAX, ["line"]);
/// assert!(text.chars().count() - "line\n".len() <= frame::FRAMING_CHARS_MAX);
/// ```
pub const FRAMING_CHARS_MAX: usize = HEADER_BATCH.len()
    + NUMBER_DIGITS_MAX
    + HEADER_ATTEMPT.len()
    + ATTEMPT_DIGITS_MAX
    + HEADER_REPEAT.len()
    + HEADER_K.len()
    + NUMBER_DIGITS_MAX
    + HEADER_N.len()
    + NUMBER_DIGITS_MAX
    + HEADER_SEEN.len()
    + NUMBER_DIGITS_MAX
    + HEADER_BYTES.len()
    + NUMBER_DIGITS_MAX
    + HEADER_END.len()
    + TRAILER_BATCH.len()
    + NUMBER_DIGITS_MAX
    + TRAILER_REMAINING.len()
    + NUMBER_DIGITS_MAX
    + TRAILER_CRC.len()
    + CRC_DIGITS
    + TRAILER_END.len();

/// A turn text read by [`parse`]: the header's and trailer's fields and the lines, borrowed from
/// the text.
///
/// # Example
///
/// ```
/// use parkline::frame;
/// use parkline::{Attempt, BatchId};
///
/// let text = frame::render(BatchId(7), Attempt(2), 1, 3, ["r1 ok", "r2 x"]);
/// let turn = frame::parse(&text)?;
/// assert_eq!((turn.id, turn.attempt, turn.repeat), (BatchId(7), Attempt(2), true));
/// assert_eq!((turn.k, turn.n, turn.seen, turn.remaining), (2, 5, 1, 3));
/// assert_eq!(turn.lines, ["r1 ok", "r2 x"]);
/// assert_eq!(turn.render(), text);
/// # Ok::<(), parkline::frame::FrameError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Frame<'a> {
    /// The batch id, the same in the header and the trailer.
    pub id: BatchId,
    /// The attempt, at least 1.
    pub attempt: Attempt,
    /// `attempt > 1`: the header says `, repeat`.
    pub repeat: bool,
    /// The number of lines.
    pub k: usize,
    /// `k + remaining`: the parked lines at the boundary.
    pub n: usize,
    /// How many of the lines were handed over in an earlier batch; at most `k`.
    pub seen: usize,
    /// Parked lines not in this batch, as the trailer says.
    pub remaining: usize,
    /// The lines, byte for byte, without their `\n`.
    pub lines: Vec<&'a str>,
}

impl Frame<'_> {
    /// The turn text of this frame: for a frame that [`parse`] returned, exactly the text it read.
    ///
    /// `repeat`, `k`, `n` are not read: they follow from `attempt`, `lines` and `remaining`.
    ///
    /// # Example
    ///
    /// ```
    /// let text = "[parkline batch 1 attempt 1: 0 of 0 parked lines, 0 seen before, 0 bytes]\n\
    ///             [parkline batch 1 end: 0 parked lines still undelivered, crc32 00000000]\n";
    /// assert_eq!(parkline::frame::parse(text)?.render(), text);
    /// # Ok::<(), parkline::frame::FrameError>(())
    /// ```
    pub fn render(&self) -> String {
        render(
            self.id,
            self.attempt,
            self.seen,
            self.remaining,
            self.lines.iter(),
        )
    }
}

/// The turn text of a batch: header, each line followed by `\n`, trailer (D4).
///
/// One allocation of the exact length; the CRC-32 is taken once over the body as copied into the
/// text. `lines` is walked twice (lengths first, then the copy), hence `Clone`.
///
/// The text is meant for lines without `\n`, an `attempt` of at least 1 and `seen <= k` (what a
/// `Batch` holds); [`parse`] rejects a text rendered from anything else, since
/// it could not be read back as the same lines.
///
/// # Example
///
/// ```
/// use parkline::frame;
/// use parkline::{Attempt, BatchId};
///
/// let text = frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]);
/// let crc = crc32fast::hash(b"r1 ok\nr2 x\n");
/// assert_eq!(
///     text,
///     format!(
///         "[parkline batch 7 attempt 1: 2 of 5 parked lines, 1 seen before, 11 bytes]\n\
///          r1 ok\nr2 x\n\
///          [parkline batch 7 end: 3 parked lines still undelivered, crc32 {crc:08x}]\n"
///     )
/// );
/// ```
pub fn render<I, S>(
    id: BatchId,
    attempt: Attempt,
    seen: usize,
    remaining: usize,
    lines: I,
) -> String
where
    I: IntoIterator<Item = S>,
    I::IntoIter: Clone,
    S: AsRef<str>,
{
    let mut text = String::new();
    render_into(&mut text, id, attempt, seen, remaining, lines);
    text
}

/// [`render`], appended to `out` instead of returned: `out` grows once, to its length plus the
/// text's, and what it held before is left as it was.
///
/// A daemon that hands over many batches can keep one buffer and clear it before each
/// boundary: a 10,000-line turn text is 2 MB, and a fresh allocation of that size is fresh pages
/// the kernel must fault in one by one (measured on the 2-core VM: about 1 ms of page faults
/// for a render of about 0.1 ms; `benches/benches/boundary.rs`).
///
/// # Example
///
/// ```
/// use parkline::frame;
/// use parkline::{Attempt, BatchId};
///
/// let mut turn = String::from("kept: ");
/// frame::render_into(&mut turn, BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]);
/// assert_eq!(turn, format!("kept: {}", frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"])));
/// ```
pub fn render_into<I, S>(
    out: &mut String,
    id: BatchId,
    attempt: Attempt,
    seen: usize,
    remaining: usize,
    lines: I,
) where
    I: IntoIterator<Item = S>,
    I::IntoIter: Clone,
    S: AsRef<str>,
{
    //= spec/delivery.md#d4-framing
    //# The turn text of a batch MUST be exactly the header, the body and the trailer, each line
    //# followed by one `\n` (including the last), and nothing else, where the body is each item's
    //# line followed by `\n`:
    let lines = lines.into_iter();
    let (k, body) = lines.clone().fold((0usize, 0u128), |(k, body), line| {
        (k + 1, body + line.as_ref().len() as u128 + 1)
    });
    // N is written from a u128 sum: `k + remaining` of a batch cannot overflow (both count items
    // held in memory), but `render` is total, and a wrong N would be a text no reader accepts
    // for the reason the caller meant.
    let n = k as u128 + remaining as u128;
    let repeat = if attempt.0 > 1 { HEADER_REPEAT } else { "" };
    let header = HEADER_BATCH.len()
        + decimal_len(id.0.into())
        + HEADER_ATTEMPT.len()
        + decimal_len(attempt.0.into())
        + repeat.len()
        + HEADER_K.len()
        + decimal_len(k as u128)
        + HEADER_N.len()
        + decimal_len(n)
        + HEADER_SEEN.len()
        + decimal_len(seen as u128)
        + HEADER_BYTES.len()
        + decimal_len(body)
        + HEADER_END.len();
    let trailer = TRAILER_BATCH.len()
        + decimal_len(id.0.into())
        + TRAILER_REMAINING.len()
        + decimal_len(remaining as u128)
        + TRAILER_CRC.len()
        + CRC_DIGITS
        + TRAILER_END.len();
    // A body that does not fit in memory cannot be rendered at all; saturating keeps the
    // reservation a plain hint for the allocator, which then fails as any oversized String does.
    let capacity = usize::try_from(body)
        .unwrap_or(usize::MAX)
        .saturating_add(header + trailer);
    let text = out;
    let start = text.len();
    text.reserve(capacity);
    text.push_str(HEADER_BATCH);
    push_decimal(text, id.0.into());
    text.push_str(HEADER_ATTEMPT);
    push_decimal(text, attempt.0.into());
    text.push_str(repeat);
    text.push_str(HEADER_K);
    push_decimal(text, k as u128);
    text.push_str(HEADER_N);
    push_decimal(text, n);
    text.push_str(HEADER_SEEN);
    //= spec/delivery.md#d20-seen-before-in-the-header
    //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over (their
    //# count was above 0 before this batch's record), and the header MUST say it (`S seen before`,
    //# D4).
    push_decimal(text, seen as u128);
    text.push_str(HEADER_BYTES);
    push_decimal(text, body);
    text.push_str(HEADER_END);
    let body_start = text.len();
    for line in lines {
        //= spec/delivery.md#d3-items-verbatim
        //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
        //# rewrite, reformat, truncate, cut, merge or annotate a line.
        //= spec/delivery.md#d3-items-verbatim
        //# The line carries its own request id, answering turn, outcome and `agent_read{turn:...}`
        //# reference; the per-item header line format is the daemon's and MUST stay unchanged.
        // D3: the line is copied byte for byte.
        text.push_str(line.as_ref());
        text.push('\n');
    }
    // One hash of the body just written (still in cache), not one update per line: crc32fast
    // takes its SIMD path only on long inputs, and per-line updates of a 1000-line body measured
    // 12x slower than this one call.
    let crc = crc32fast::hash(&text.as_bytes()[body_start..]);
    text.push_str(TRAILER_BATCH);
    push_decimal(text, id.0.into());
    text.push_str(TRAILER_REMAINING);
    //= spec/delivery.md#d13-trailer-count
    //# The trailer MUST state `remaining`: the number of lines parked at the batch's (original)
    //# boundary that are not in the batch.
    push_decimal(text, remaining as u128);
    text.push_str(TRAILER_CRC);
    push_hex(text, crc);
    text.push_str(TRAILER_END);
    debug_assert_eq!(text.len() - start, capacity, "render's capacity is exact");
}

/// Reads a turn text the one way D4a allows: the header is the first line, its `BYTES` fixes the
/// body, the trailer starts right after the body and is the rest of the text.
///
/// The lines are returned byte for byte, whatever they contain: a line that looks like a header
/// or a trailer (even the batch's own trailer, with a correct crc) is a line, never framing.
///
/// # Errors
///
/// [`FrameError`] for any text [`render`] does not produce: a header or trailer that is not the
/// grammar's (wrong word, a number with a sign or leading zero, too large for its type, text after
/// the trailer), attempt 0, more lines seen than there are, `K > N`, a body shorter than `BYTES`
/// or not ending in `\n`, a body holding another number of lines than `K`, a trailer with another
/// id or a `REMAINING` other than `N - K`, or a crc other than the body's.
///
/// # Example
///
/// ```
/// use parkline::frame::{self, FrameError};
/// use parkline::{Attempt, BatchId};
///
/// // A line that is the batch's own trailer, crc and all, stays a line.
/// let forged = frame::render(BatchId(3), Attempt(1), 0, 0, ["a"]);
/// let forged_trailer = forged.lines().last().unwrap_or_default();
/// let text = frame::render(BatchId(3), Attempt(1), 0, 0, ["a", forged_trailer, "b"]);
/// assert_eq!(frame::parse(&text)?.lines, ["a", forged_trailer, "b"]);
///
/// // The text cut short is no turn.
/// assert!(matches!(frame::parse(&text[..text.len() - 1]), Err(FrameError::Syntax { .. })));
/// # Ok::<(), FrameError>(())
/// ```
pub fn parse(text: &str) -> Result<Frame<'_>, FrameError> {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //# The reader MUST NOT search the text for a header or trailer, and MUST NOT interpret a line.
    //= spec/delivery.md#d23-framing-read-back
    //# For every batch handed over, reading its turn text as D4a says MUST give back exactly the
    //# batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line byte for
    //# byte, also when a line imitates a header or a trailer.
    let mut at = Cursor { text, at: 0 };
    at.literal(Part::Header, HEADER_BATCH)?;
    let id = BatchId(at.number(Part::Header)?);
    at.literal(Part::Header, HEADER_ATTEMPT)?;
    let attempt = Attempt(at.number(Part::Header)?);
    if attempt.0 == 0 {
        return Err(FrameError::AttemptZero);
    }
    let repeat = attempt.0 > 1;
    if repeat {
        at.literal(Part::Header, HEADER_REPEAT)?;
    }
    at.literal(Part::Header, HEADER_K)?;
    let k: usize = at.number(Part::Header)?;
    at.literal(Part::Header, HEADER_N)?;
    let n: usize = at.number(Part::Header)?;
    at.literal(Part::Header, HEADER_SEEN)?;
    let seen: usize = at.number(Part::Header)?;
    at.literal(Part::Header, HEADER_BYTES)?;
    let bytes: usize = at.number(Part::Header)?;
    at.literal(Part::Header, HEADER_END)?;
    let expected_remaining = n.checked_sub(k).ok_or(FrameError::KAboveN { k, n })?;
    if seen > k {
        return Err(FrameError::SeenAboveK { seen, k });
    }

    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //# They MUST be present, end in `\n` (unless `BYTES` is 0) and hold exactly `K` `\n`; the lines
    //# are the body split on `\n`.
    let start = at.at;
    let available = text.len() - start;
    if bytes > available {
        return Err(FrameError::BodyShort { bytes, available });
    }
    let end = start + bytes;
    // The body must end in "\n", so `end` follows an ASCII byte and is a char boundary; `get`
    // keeps that an error rather than a panic should the check ever move.
    let body = match text.get(start..end) {
        Some(body) if body.is_empty() || body.ends_with('\n') => body,
        _ => return Err(FrameError::BodyEnd { offset: end }),
    };
    let mut lines = Vec::with_capacity(k);
    for line in body.split_terminator('\n') {
        if lines.len() == k {
            return Err(FrameError::LineCount {
                k,
                found: body.bytes().filter(|&b| b == b'\n').count(),
            });
        }
        lines.push(line);
    }
    if lines.len() != k {
        return Err(FrameError::LineCount {
            k,
            found: lines.len(),
        });
    }

    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //# The trailer MUST start exactly where the body ends, carry the header's `ID`, a `REMAINING`
    //# equal to `N - K`, and a `CRC` equal to the CRC-32 of the body, and MUST be the rest of the
    //# text (ending in its `\n`, nothing after it).
    at.at = end;
    at.literal(Part::Trailer, TRAILER_BATCH)?;
    let trailer_id = BatchId(at.number(Part::Trailer)?);
    if trailer_id != id {
        return Err(FrameError::IdMismatch {
            header: id,
            trailer: trailer_id,
        });
    }
    at.literal(Part::Trailer, TRAILER_REMAINING)?;
    let remaining: usize = at.number(Part::Trailer)?;
    if remaining != expected_remaining {
        return Err(FrameError::RemainingMismatch {
            expected: expected_remaining,
            found: remaining,
        });
    }
    at.literal(Part::Trailer, TRAILER_CRC)?;
    let crc = at.hex(Part::Trailer)?;
    let body_crc = crc32fast::hash(body.as_bytes());
    if crc != body_crc {
        return Err(FrameError::CrcMismatch {
            expected: body_crc,
            found: crc,
        });
    }
    at.literal(Part::Trailer, TRAILER_END)?;
    if at.at != text.len() {
        return Err(FrameError::TrailingText { offset: at.at });
    }
    Ok(Frame {
        id,
        attempt,
        repeat,
        k,
        n,
        seen,
        remaining,
        lines,
    })
}

/// The part of a turn text a [`FrameError::Syntax`] is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Part {
    /// The first line.
    Header,
    /// What follows the body.
    Trailer,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Header => "header",
            Part::Trailer => "trailer",
        })
    }
}

/// Why a text is not a turn text; offsets are bytes from the start of the text.
///
/// # Example
///
/// ```
/// use parkline::frame::{self, FrameError, Part};
/// let error = frame::parse("[parkline batch 07").unwrap_err();
/// assert_eq!(error, FrameError::Syntax { part: Part::Header, offset: 16, expected: "a plain decimal number" });
/// assert_eq!(error.to_string(), "turn text header: expected a plain decimal number at byte 16");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameError {
    /// The header or trailer differs from the grammar at `offset`: a word, a number (sign,
    /// leading zero, no digit, too large for its type) or the crc's 8 lowercase hex digits.
    Syntax {
        /// Header or trailer.
        part: Part,
        /// Where the difference starts.
        offset: usize,
        /// What the grammar has there.
        expected: &'static str,
    },
    /// The header says attempt 0; the first hand-over is attempt 1.
    AttemptZero,
    /// The header says more lines were seen before than the batch holds.
    SeenAboveK {
        /// SEEN.
        seen: usize,
        /// K.
        k: usize,
    },
    /// The header says more lines in the batch than were parked.
    KAboveN {
        /// K.
        k: usize,
        /// N.
        n: usize,
    },
    /// The text ends before the body's `BYTES` do.
    BodyShort {
        /// BYTES.
        bytes: usize,
        /// Bytes after the header.
        available: usize,
    },
    /// The `BYTES` of the body do not end in `\n` (the byte before `offset`).
    BodyEnd {
        /// Where the body ends.
        offset: usize,
    },
    /// The body holds another number of lines than `K`.
    LineCount {
        /// K.
        k: usize,
        /// Lines in the body.
        found: usize,
    },
    /// The trailer names another batch than the header.
    IdMismatch {
        /// The header's id.
        header: BatchId,
        /// The trailer's id.
        trailer: BatchId,
    },
    /// The trailer's `REMAINING` is not the header's `N - K`.
    RemainingMismatch {
        /// N - K.
        expected: usize,
        /// REMAINING.
        found: usize,
    },
    /// The trailer's crc is not the CRC-32 of the body.
    CrcMismatch {
        /// The body's crc.
        expected: u32,
        /// The trailer's.
        found: u32,
    },
    /// Text follows the trailer's `\n`.
    TrailingText {
        /// Where it starts.
        offset: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Syntax {
                part,
                offset,
                expected,
            } => write!(f, "turn text {part}: expected {expected} at byte {offset}"),
            FrameError::AttemptZero => f.write_str("turn text header: attempt 0"),
            FrameError::SeenAboveK { seen, k } => {
                write!(f, "turn text header: {seen} seen before of {k} lines")
            }
            FrameError::KAboveN { k, n } => {
                write!(f, "turn text header: {k} of {n} parked lines")
            }
            FrameError::BodyShort { bytes, available } => write!(
                f,
                "turn text body: header says {bytes} bytes, {available} follow it"
            ),
            FrameError::BodyEnd { offset } => write!(
                f,
                "turn text body: does not end in a newline (byte {offset})"
            ),
            FrameError::LineCount { k, found } => {
                write!(
                    f,
                    "turn text body: header says {k} lines, body holds {found}"
                )
            }
            FrameError::IdMismatch { header, trailer } => write!(
                f,
                "turn text trailer: batch {trailer}, header says batch {header}"
            ),
            FrameError::RemainingMismatch { expected, found } => write!(
                f,
                "turn text trailer: {found} still undelivered, header says {expected}"
            ),
            FrameError::CrcMismatch { expected, found } => write!(
                f,
                "turn text trailer: crc32 {found:08x}, body has {expected:08x}"
            ),
            FrameError::TrailingText { offset } => {
                write!(f, "turn text: text after the trailer at byte {offset}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// A position in the text being parsed.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn syntax(&self, part: Part, expected: &'static str) -> FrameError {
        FrameError::Syntax {
            part,
            offset: self.at,
            expected,
        }
    }

    fn literal(&mut self, part: Part, word: &'static str) -> Result<(), FrameError> {
        if self.text.as_bytes()[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.syntax(part, word))
        }
    }

    /// A plain decimal: one or more ASCII digits, no leading zero unless the number is 0, in range
    /// of `T`. Plain, because one number with two spellings would give a text two readings.
    fn number<T: TryFrom<u128>>(&mut self, part: Part) -> Result<T, FrameError> {
        //= spec/delivery.md#d4-framing
        //# `ID`, `ATTEMPT`, `K`, `N`, `SEEN`, `BYTES`, `REMAINING` MUST be plain decimal (ASCII
        //# digits, no sign, no leading zeros, no digit grouping); `ATTEMPT` is at least 1.
        const EXPECTED: &str = "a plain decimal number";
        let digits = self.text.as_bytes()[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let spelled = &self.text.as_bytes()[self.at..self.at + digits];
        if digits == 0 || (digits > 1 && spelled[0] == b'0') {
            return Err(self.syntax(part, EXPECTED));
        }
        let mut value: u128 = 0;
        for &digit in spelled {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(digit - b'0')))
                .ok_or_else(|| self.syntax(part, EXPECTED))?;
        }
        let value = T::try_from(value).map_err(|_| self.syntax(part, EXPECTED))?;
        self.at += digits;
        Ok(value)
    }

    /// Exactly 8 lowercase hex digits, as `{:08x}` writes them.
    fn hex(&mut self, part: Part) -> Result<u32, FrameError> {
        const EXPECTED: &str = "8 lowercase hex digits";
        let bytes = self.text.as_bytes();
        let digits = bytes
            .get(self.at..self.at + CRC_DIGITS)
            .ok_or_else(|| self.syntax(part, EXPECTED))?;
        let mut value: u32 = 0;
        for &digit in digits {
            let nibble = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                _ => return Err(self.syntax(part, EXPECTED)),
            };
            value = (value << 4) | u32::from(nibble);
        }
        self.at += CRC_DIGITS;
        Ok(value)
    }
}

fn decimal_len(mut n: u128) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

fn push_decimal(text: &mut String, n: u128) {
    //= spec/delivery.md#d4-framing
    //# `ID`, `ATTEMPT`, `K`, `N`, `SEEN`, `BYTES`, `REMAINING` MUST be plain decimal (ASCII digits,
    //# no sign, no leading zeros, no digit grouping); `ATTEMPT` is at least 1.
    for &digit in decimal_digits(n, &mut [0; 39]) {
        text.push(char::from(digit));
    }
}

/// `n` in plain decimal (ASCII digits, no sign, no leading zeros), written at the end of
/// `digits` (u128::MAX has 39 digits); the turn text's numbers and the mirror's record writer
/// both spell their numbers with it.
pub(crate) fn decimal_digits(mut n: u128, digits: &mut [u8; 39]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}

fn push_hex(text: &mut String, crc: u32) {
    for shift in (0..CRC_DIGITS).rev() {
        let nibble = ((crc >> (shift * 4)) & 0xf) as u8;
        text.push(char::from(if nibble < 10 {
            b'0' + nibble
        } else {
            b'a' + nibble - 10
        }));
    }
}
