//! D4, D4a, as properties of `parkline::frame`: any lines (forged framing, `\r`, NUL, non-ASCII,
//! empty) render and parse back to themselves, and any text has at most one reading: when it
//! parses, rendering the frame gives back the text byte for byte.

use parkline::frame;
use parkline::{Attempt, BatchId};
use parkline_harness::frame::{check_frame_bytes, decode_frame_turn, one_reading};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

use super::cases;

/// Ids and counts small enough to collide with the forged lines' numbers, or anywhere in range.
fn id_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![1..10u64, any::<u64>()]
}

fn remaining_strategy() -> impl Strategy<Value = usize> {
    // Halved: N = K + REMAINING must fit in usize to be read back.
    prop_oneof![0..5usize, any::<usize>().prop_map(|r| r / 2)]
}

/// A line: anything but `\n` (`\r`, NUL, non-ASCII, empty included), or an imitation of the
/// framing with plausible numbers.
fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^\n]{0,24}",
        Just(String::new()),
        "[\r\0\t é—]{1,4}",
        "\\[parkline batch [1-9] attempt [1-3](, repeat)?: [0-3] of [0-6] parked lines, [0-2] seen before, [0-9]{1,2} bytes\\]",
        "\\[parkline batch [1-9] end: [0-3] parked lines still undelivered, crc32 [0-9a-f]{8}\\]",
    ]
}

/// The trailer this batch would have if its body were `before`: the best forgery of a line.
fn own_trailer(id: u64, remaining: usize, before: &[String]) -> String {
    let fake = frame::render(BatchId(id), Attempt(1), 0, remaining, before);
    fake.lines().last().unwrap_or_default().to_owned()
}

#[derive(Clone, Debug)]
struct Turn {
    id: u64,
    attempt: u32,
    seen: usize,
    remaining: usize,
    lines: Vec<String>,
}

impl Turn {
    fn text(&self) -> String {
        frame::render(
            BatchId(self.id),
            Attempt(self.attempt),
            self.seen,
            self.remaining,
            &self.lines,
        )
    }
}

/// A batch's fields and lines, with the batch's own trailer (correct crc of the lines before it)
/// or a whole fake turn of the same batch inserted among the lines at a random place.
fn turn_strategy() -> impl Strategy<Value = Turn> {
    (
        id_strategy(),
        prop_oneof![1..4u32, 1..=u32::MAX],
        remaining_strategy(),
        prop::collection::vec(line_strategy(), 0..8),
        0..3u8,
        any::<Index>(),
        any::<Index>(),
    )
        .prop_map(|(id, attempt, remaining, mut lines, forge, at, seen)| {
            let at = at.index(lines.len() + 1);
            match forge {
                1 => {
                    let trailer = own_trailer(id, remaining, &lines[..at]);
                    lines.insert(at, trailer);
                }
                2 => {
                    let fake = frame::render(BatchId(id), Attempt(1), 0, remaining, &lines[..at]);
                    let fake: Vec<String> = fake.lines().map(str::to_owned).collect();
                    lines.splice(at..at, fake);
                }
                _ => {}
            }
            let seen = seen.index(lines.len() + 1);
            Turn {
                id,
                attempt,
                seen,
                remaining,
                lines,
            }
        })
}

/// One edit of a text: a span replaced by digits, framing characters or `\n` (which cuts,
/// extends or shifts it), or one number of the text (a run of digits) replaced by another.
#[derive(Clone, Debug)]
enum Edit {
    Span(Index, usize, String),
    Number(Index, String),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 0..4usize, "[0-9a-f \n\\[\\],:]{0,3}")
            .prop_map(|(at, cut, insert)| Edit::Span(at, cut, insert)),
        (any::<Index>(), "[0-9]{1,2}").prop_map(|(at, number)| Edit::Number(at, number)),
    ]
}

fn apply(text: &mut String, edit: &Edit) {
    match edit {
        Edit::Span(at, cut, insert) => {
            let mut start = at.index(text.len() + 1);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (start + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, insert);
        }
        Edit::Number(at, number) => {
            let bytes = text.as_bytes();
            let runs: Vec<(usize, usize)> = (0..bytes.len())
                .filter(|&i| {
                    bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit())
                })
                .map(|i| {
                    let len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
                    (i, i + len)
                })
                .collect();
            if !runs.is_empty() {
                let (start, end) = runs[at.index(runs.len())];
                text.replace_range(start..end, number);
            }
        }
    }
}

/// A rendered turn and the same text after up to 3 edits.
fn edited_strategy() -> impl Strategy<Value = (String, String)> {
    (
        turn_strategy(),
        prop::collection::vec(edit_strategy(), 0..3),
    )
        .prop_map(|(turn, edits)| {
            let original = turn.text();
            let mut text = original.clone();
            for edit in &edits {
                apply(&mut text, edit);
            }
            (original, text)
        })
}

/// A text near a turn text (rendered, edited) or any string at all.
fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => turn_strategy().prop_map(|turn| turn.text()),
        6 => edited_strategy().prop_map(|(_, edited)| edited),
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// D4, D4a: render then parse gives back the fields and every line byte for byte, whatever
    /// the lines imitate.
    #[test]
    fn frame_render_then_parse_gives_back_every_line(turn in turn_strategy()) {
        //= spec/delivery.md#d23-framing-read-back
        //= type=test
        //# For every batch handed over, reading its turn text as D4a says MUST give back exactly
        //# the batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line
        //# byte for byte, also when a line imitates a header or a trailer.
        let text = turn.text();
        let lines: Vec<&str> = turn.lines.iter().map(String::as_str).collect();
        let parsed = frame::parse(&text).map_err(|e| format!("{e}: {text:?}"));
        let frame = parsed.map_err(TestCaseError::fail)?;
        prop_assert_eq!(
            (frame.id, frame.attempt, frame.repeat, frame.k, frame.n),
            (
                BatchId(turn.id),
                Attempt(turn.attempt),
                turn.attempt > 1,
                lines.len(),
                lines.len() + turn.remaining
            )
        );
        prop_assert_eq!((frame.seen, frame.remaining), (turn.seen, turn.remaining));
        prop_assert_eq!(frame.lines, lines);
    }

    /// D4a: any text has at most one reading: when `parse` accepts it, rendering the frame gives
    /// back the text exactly; when it refuses, the error says it is about the turn text.
    #[test]
    fn frame_any_text_has_one_reading(text in text_strategy()) {
        match frame::parse(&text) {
            Ok(turn) => prop_assert_eq!(turn.render(), text),
            Err(error) => prop_assert!(error.to_string().starts_with("turn text"), "{}", error),
        }
    }
}

/// The edits reach both answers: refused texts, and changed texts that still parse (so the
/// one-reading property is tested on accepted edits, not only on untouched renders).
#[test]
fn frame_edited_texts_are_accepted_and_refused() {
    let mut runner = TestRunner::deterministic();
    let strategy = edited_strategy();
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..cases().min(2000) {
        let (original, edited) = strategy.new_tree(&mut runner).expect("strategy").current();
        match frame::parse(&edited) {
            Ok(turn) if edited != original => {
                assert_eq!(turn.render(), edited);
                accepted += 1;
            }
            Ok(_) => {}
            Err(_) => refused += 1,
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "accepted {accepted}, refused {refused}"
    );
}

/// The fuzz target `frame_parse`'s committed corpus and findings (`fuzz/regressions`), replayed
/// on stable through the target's own checks (`parkline_harness::frame`: one reading of the bytes
/// as a text, and the round trip of the bytes decoded as a batch); each named seed is a turn text
/// that parses (forged lines included).
#[test]
fn fuzz_frame_parse_corpus_replays() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for folder in ["corpus", "regressions"] {
        if let Ok(entries) = std::fs::read_dir(fuzz.join(folder).join("frame_parse")) {
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    files.sort();
    let mut seeds = 0;
    for file in &files {
        let bytes = std::fs::read(file).expect("read corpus file");
        check_frame_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.chars().all(|c| c.is_ascii_hexdigit()) {
            let text = std::str::from_utf8(&bytes).unwrap_or_default();
            assert_eq!(one_reading(text), Ok(true), "{}", file.display());
            seeds += 1;
        }
    }
    assert!(seeds >= 7, "seed corpus missing: {files:?}");
}

/// The round trip the replay runs is reached: corpus files decode into batches with lines, and
/// with a forged trailer among them (the text check alone never ran it before).
#[test]
fn fuzz_frame_parse_corpus_reaches_the_round_trip() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/frame_parse");
    let (mut with_lines, mut forged) = (0, 0);
    for entry in std::fs::read_dir(dir)
        .expect("the committed corpus")
        .flatten()
    {
        let bytes = std::fs::read(entry.path()).expect("read corpus file");
        if let Some(turn) = decode_frame_turn(&bytes) {
            with_lines += usize::from(!turn.lines.is_empty());
            forged += usize::from(!turn.lines.is_empty() && turn.forge_at.is_some());
        }
    }
    assert!(
        with_lines > 0 && forged > 0,
        "{with_lines} with lines, {forged} forged"
    );
}
