//! The turn text's one reading (spec/delivery.md D4, D4a) on arbitrary bytes: the checks of the
//! fuzz target `frame_parse`, here so that its corpus replays as a test through the same code.

use arbitrary::{Arbitrary, Unstructured};
use parkline::frame;
use parkline::{Attempt, BatchId};

/// A batch as fuzz bytes decode it: id, attempt (0 read as 1), seen (reduced modulo the lines
/// plus one), remaining, lines (each `\n` removed), and optionally, at `forge_at` modulo the lines
/// plus one, a line that is the batch's own trailer over the lines before it.
#[derive(Clone, Debug, Arbitrary)]
pub struct FrameTurn {
    /// The batch id.
    pub id: u64,
    /// The attempt (0 is read as 1).
    pub attempt: u32,
    /// The items seen before, reduced modulo the lines plus one.
    pub seen: u8,
    /// The lines still parked.
    pub remaining: u32,
    /// The lines, each `\n` removed.
    pub lines: Vec<String>,
    /// Where to insert the forged trailer, if anywhere.
    pub forge_at: Option<u8>,
}

/// Both checks on `data`, as the fuzz target runs them: the bytes as a text ([`one_reading`]),
/// and the bytes decoded as a batch ([`round_trip`]).
///
/// # Errors
///
/// What broke D4a or D23, with the text.
pub fn check_frame_bytes(data: &[u8]) -> Result<(), String> {
    if let Ok(text) = std::str::from_utf8(data) {
        one_reading(text)?;
    }
    if let Some(turn) = decode_frame_turn(data) {
        round_trip(turn)?;
    }
    Ok(())
}

/// The batch the fuzz target decodes `data` into, as libFuzzer's bytes reach [`round_trip`];
/// `None` when the bytes make none.
pub fn decode_frame_turn(data: &[u8]) -> Option<FrameTurn> {
    FrameTurn::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// D4a: `parse` refuses `text`, or rendering what it read gives back `text` exactly (no text
/// has two readings). `Ok(true)` when it parsed.
///
/// # Errors
///
/// A text with two readings.
pub fn one_reading(text: &str) -> Result<bool, String> {
    let Ok(turn) = frame::parse(text) else {
        return Ok(false);
    };
    let rendered = turn.render();
    match rendered == text {
        true => Ok(true),
        false => Err(format!(
            "D4a: a text with two readings: {text:?} renders as {rendered:?}"
        )),
    }
}

/// D23: `parse(render(turn))` gives back every field and line of `turn`, also when a line is the
/// batch's own trailer.
///
/// # Errors
///
/// The text that does not parse, or the field read back wrong.
pub fn round_trip(turn: FrameTurn) -> Result<(), String> {
    let attempt = Attempt(turn.attempt.max(1));
    let remaining = turn.remaining as usize;
    let mut lines: Vec<String> = turn
        .lines
        .into_iter()
        .map(|l| l.replace('\n', ""))
        .collect();
    if let Some(at) = turn.forge_at {
        let at = usize::from(at) % (lines.len() + 1);
        let fake = frame::render(BatchId(turn.id), Attempt(1), 0, remaining, &lines[..at]);
        let trailer = fake.lines().last().unwrap_or_default().to_owned();
        lines.insert(at, trailer);
    }
    let seen = usize::from(turn.seen) % (lines.len() + 1);
    let text = frame::render(BatchId(turn.id), attempt, seen, remaining, &lines);
    let frame = frame::parse(&text).map_err(|e| format!("D23: {e}: {text:?}"))?;
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let expected = (
        BatchId(turn.id),
        attempt,
        attempt.0 > 1,
        lines.len(),
        lines.len() + remaining,
        seen,
        remaining,
    );
    let read = (
        frame.id,
        frame.attempt,
        frame.repeat,
        frame.k,
        frame.n,
        frame.seen,
        frame.remaining,
    );
    if read != expected || frame.lines != lines {
        return Err(format!(
            "D23: {text:?} reads back as {read:?} with lines {:?}, not {expected:?}",
            frame.lines
        ));
    }
    Ok(())
}
