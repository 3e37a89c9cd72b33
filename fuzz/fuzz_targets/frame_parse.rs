//! The turn text's one reading (spec/delivery.md D4, D4a) on arbitrary bytes, two ways:
//! - the bytes as a text: `parse` refuses it, or rendering what it read gives back the text
//!   exactly (no text has two readings);
//! - the bytes as a batch (id, attempt, seen, remaining, lines without `\n`, and optionally the
//!   batch's own trailer forged into a line): `parse(render(..))` gives back every field and line.
//!
//! The committed corpus holds rendered turns (forged lines included), so mutations start at texts
//! that parse.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use parkline::frame;
use parkline::{Attempt, BatchId};

#[derive(Debug, Arbitrary)]
struct Turn {
    id: u64,
    attempt: u32,
    seen: u8,
    remaining: u32,
    lines: Vec<String>,
    forge_at: Option<u8>,
}

fn one_reading(text: &str) {
    if let Ok(turn) = frame::parse(text) {
        assert_eq!(turn.render(), text, "a text with two readings");
    }
}

fn round_trip(turn: Turn) {
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
    let frame = frame::parse(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert_eq!(
        (frame.id, frame.attempt, frame.repeat, frame.k, frame.n),
        (
            BatchId(turn.id),
            attempt,
            attempt.0 > 1,
            lines.len(),
            lines.len() + remaining
        ),
        "{text:?}"
    );
    assert_eq!((frame.seen, frame.remaining), (seen, remaining), "{text:?}");
    assert_eq!(frame.lines, lines, "{text:?}");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        one_reading(text);
    }
    if let Ok(turn) = Turn::arbitrary_take_rest(Unstructured::new(data)) {
        round_trip(turn);
    }
});
