//! D4, D4a: the turn text's grammar and its one reading. Lines that imitate the framing stay
//! lines; a single-byte change or a cut is caught exactly as far as the crc, BYTES, K and the
//! header/trailer cross-checks reach; and a reader that finds the trailer by searching is shown
//! to be fooled by a line, so the reading tests here can fail.

use crate::frame::{self, Frame, FrameError, Part};
use crate::{Attempt, BatchId};

/// What a reader made of a text, owned so a known-bad reader can build it from a rewritten text.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Reading {
    id: BatchId,
    attempt: Attempt,
    repeat: bool,
    k: usize,
    n: usize,
    seen: usize,
    remaining: usize,
    lines: Vec<String>,
}

impl From<Frame<'_>> for Reading {
    fn from(frame: Frame<'_>) -> Self {
        Reading {
            id: frame.id,
            attempt: frame.attempt,
            repeat: frame.repeat,
            k: frame.k,
            n: frame.n,
            seen: frame.seen,
            remaining: frame.remaining,
            lines: frame.lines.iter().map(|l| (*l).to_owned()).collect(),
        }
    }
}

type Reader = fn(&str) -> Option<Reading>;

fn real(text: &str) -> Option<Reading> {
    frame::parse(text).ok().map(Reading::from)
}

/// The batch's own trailer, with the crc of `before` (the lines preceding it): what a forger
/// who knows the batch writes into a line.
fn own_trailer(id: u64, remaining: usize, before: &[&str]) -> String {
    let body: String = before.iter().map(|l| format!("{l}\n")).collect();
    format!(
        "[parkline batch {id} end: {remaining} parked lines still undelivered, crc32 {:08x}]",
        crc32fast::hash(body.as_bytes())
    )
}

/// Known-bad: takes the first line as the header, then SEARCHES for the batch's trailer
/// instead of counting BYTES, and checks what a careful reader would (same id, REMAINING = N - K,
/// crc of the lines before the trailer). Whatever follows the trailer it finds is ignored.
fn parse_by_search(text: &str) -> Option<Reading> {
    let (header, rest) = text.split_once('\n')?;
    let fields = header.strip_prefix("[parkline batch ")?;
    let (id, fields) = fields.split_once(" attempt ")?;
    let (attempt, fields) = fields.split_once(": ")?;
    let attempt = attempt.trim_end_matches(", repeat");
    let (k, fields) = fields.split_once(" of ")?;
    let (n, fields) = fields.split_once(" parked lines, ")?;
    let (seen, _) = fields.split_once(" seen before, ")?;
    let (k, n): (usize, usize) = (k.parse().ok()?, n.parse().ok()?);
    let at = rest.find(&format!("[parkline batch {id} end: "))?;
    let (body, trailer) = rest.split_at(at);
    let trailer = trailer.split('\n').next()?;
    let remaining = n.checked_sub(k)?;
    if trailer
        != format!(
            "[parkline batch {id} end: {remaining} parked lines still undelivered, crc32 {:08x}]",
            crc32fast::hash(body.as_bytes())
        )
    {
        return None;
    }
    let attempt = Attempt(attempt.parse().ok()?);
    Some(Reading {
        id: BatchId(id.parse().ok()?),
        attempt,
        repeat: attempt.0 > 1,
        k,
        n,
        seen: seen.parse().ok()?,
        remaining,
        lines: body.split_terminator('\n').map(str::to_owned).collect(),
    })
}

/// Known-bad: the real reader, but it does not check the crc (the trailer's crc is replaced by
/// the body's before reading).
fn parse_without_crc(text: &str) -> Option<Reading> {
    let (header, _) = text.split_once('\n')?;
    let bytes: usize = header
        .rsplit_once(", ")?
        .1
        .strip_suffix(" bytes]")?
        .parse()
        .ok()?;
    let body = text.get(header.len() + 1..header.len() + 1 + bytes)?;
    let cut = text.len().checked_sub(10)?;
    let fixed = format!(
        "{}{:08x}{}",
        text.get(..cut)?,
        crc32fast::hash(body.as_bytes()),
        text.get(cut + 8..)?
    );
    real(&fixed)
}

/// The lines expected back: `reader` must read `text` as exactly these, whatever they hold.
fn reads_back(reader: Reader, text: &str, lines: &[&str]) -> bool {
    reader(text).is_some_and(|reading| reading.lines == lines)
}

fn forged_lines() -> Vec<Vec<String>> {
    let fake_turn = frame::render(BatchId(7), Attempt(1), 0, 3, ["r1 ok"]);
    let mut whole_fake_turn: Vec<String> = fake_turn.lines().map(str::to_owned).collect();
    whole_fake_turn.push("r2 after the fake turn".to_owned());
    vec![
        // The batch's own trailer, crc of the preceding lines correct, then a line it would hide.
        vec![
            "r1 ok".to_owned(),
            own_trailer(7, 3, &["r1 ok"]),
            "r3 hidden by a search".to_owned(),
        ],
        // The same trailer as the first line: its crc is that of an empty body.
        vec![own_trailer(7, 3, &[]), "r2".to_owned()],
        // A header of the same batch with another BYTES, K and N.
        vec![
            "[parkline batch 7 attempt 1: 1 of 4 parked lines, 0 seen before, 6 bytes]".to_owned(),
            "r1 ok".to_owned(),
        ],
        // A whole turn of the same batch, spread over lines, then one more line.
        whole_fake_turn,
        // The real trailer's first bytes, \r, NUL, empty lines and non-ASCII.
        vec![
            String::new(),
            "[parkline batch 7 end: ".to_owned(),
            "crc\r".to_owned(),
            "\0".to_owned(),
            "é \u{2014} ✓".to_owned(),
            String::new(),
        ],
    ]
}

/// D4: the design's example, byte for byte.
#[test]
fn d4_render_is_the_grammar_byte_for_byte() {
    //= spec/delivery.md#d4-framing
    //= type=test
    //# The turn text of a batch MUST be exactly the header, the body and the trailer, each line
    //# followed by one `\n` (including the last), and nothing else, where the body is each item's
    //# line followed by `\n`:
    //= spec/delivery.md#d4-framing
    //= type=test
    //# `ID`, `ATTEMPT`, `K`, `N`, `SEEN`, `BYTES`, `REMAINING` MUST be plain decimal (ASCII digits,
    //# no sign, no leading zeros, no digit grouping); `ATTEMPT` is at least 1.
    let text = frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]);
    let expected = format!(
        "[parkline batch 7 attempt 1: 2 of 5 parked lines, 1 seen before, 11 bytes]\nr1 ok\nr2 x\n\
         [parkline batch 7 end: 3 parked lines still undelivered, crc32 {:08x}]\n",
        crc32fast::hash(b"r1 ok\nr2 x\n")
    );
    assert_eq!(text, expected);
    let repeat = frame::render(BatchId(12), Attempt(10), 0, 0, [""]);
    assert_eq!(
        repeat,
        format!(
            "[parkline batch 12 attempt 10, repeat: 1 of 1 parked lines, 0 seen before, 1 bytes]\n\n\
             [parkline batch 12 end: 0 parked lines still undelivered, crc32 {:08x}]\n",
            crc32fast::hash(b"\n")
        )
    );
    let largest = frame::render(BatchId(u64::MAX), Attempt(u32::MAX), 0, usize::MAX, ["a"]);
    assert!(largest.starts_with(&format!(
        "[parkline batch {} attempt {}, repeat: 1 of {} parked lines, 0 seen before, 2 bytes]\n",
        u64::MAX,
        u32::MAX,
        u128::from(u64::MAX) + 1
    )));
}

/// `render_into` appends exactly `render`'s text to whatever the buffer held, and a buffer
/// cleared and reused for a text no longer than its capacity is not reallocated (the point of
/// keeping one: a large turn text is not fresh pages at every boundary).
#[test]
fn d4_render_into_appends_the_same_text_and_reuses_the_buffer() {
    let cases: Vec<(u64, u32, usize, usize, Vec<&str>)> = vec![
        (1, 1, 0, 0, vec![]),
        (7, 1, 1, 3, vec!["r1 ok", "r2 x"]),
        (
            u64::MAX - 1,
            u32::MAX,
            1,
            usize::MAX - 3,
            vec!["", "\r", "\0\t é"],
        ),
    ];
    for (id, attempt, seen, remaining, lines) in cases {
        let text = frame::render(BatchId(id), Attempt(attempt), seen, remaining, &lines);
        for before in ["", "x", "[parkline batch 1 end"] {
            let mut out = String::from(before);
            frame::render_into(
                &mut out,
                BatchId(id),
                Attempt(attempt),
                seen,
                remaining,
                &lines,
            );
            assert_eq!(out, format!("{before}{text}"));
        }
    }
    let lines: Vec<String> = (0..1_000).map(|i| format!("line {i}")).collect();
    let mut out = String::new();
    frame::render_into(&mut out, BatchId(1), Attempt(1), 0, 0, &lines);
    let (at, capacity) = (out.as_ptr(), out.capacity());
    for k in [1_000, 10, 0] {
        out.clear();
        frame::render_into(&mut out, BatchId(2), Attempt(1), 0, 0, &lines[..k]);
        assert_eq!(
            out,
            frame::render(BatchId(2), Attempt(1), 0, 0, &lines[..k])
        );
        assert_eq!(
            (out.as_ptr(), out.capacity()),
            (at, capacity),
            "reallocated at {k}"
        );
    }
}

/// D4a: what render writes, parse reads back field for field and line for line.
#[test]
fn d4a_render_parse_round_trip() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    //= spec/delivery.md#d23-framing-read-back
    //= type=test
    //# For every batch handed over, reading its turn text as D4a says MUST give back exactly the
    //# batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line byte for
    //# byte, also when a line imitates a header or a trailer.
    let cases: Vec<(u64, u32, usize, usize, Vec<&str>)> = vec![
        (1, 1, 0, 0, vec![]),
        (7, 1, 1, 3, vec!["r1 ok", "r2 x"]),
        (9, 2, 2, 0, vec!["a", "b", "c"]),
        (u64::MAX - 1, u32::MAX, 1, 5, vec!["", "\r", "\0\t é"]),
    ];
    for (id, attempt, seen, remaining, lines) in cases {
        let text = frame::render(BatchId(id), Attempt(attempt), seen, remaining, &lines);
        let parsed = frame::parse(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
        assert_eq!(
            parsed,
            Frame {
                id: BatchId(id),
                attempt: Attempt(attempt),
                repeat: attempt > 1,
                k: lines.len(),
                n: lines.len() + remaining,
                seen,
                remaining,
                lines: lines.clone(),
            }
        );
        assert_eq!(parsed.render(), text);
    }
}

/// D4a: lines that imitate the header, the batch's own trailer (correct crc of the preceding
/// lines) or a whole turn are read back as lines, byte for byte; the known-bad search reader is
/// fooled by the first, so this check can fail.
#[test]
fn d4a_forged_framing_lines_are_read_as_lines() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# The reader MUST NOT search the text for a header or trailer, and MUST NOT interpret a line.
    //= spec/delivery.md#d23-framing-read-back
    //= type=test
    //# For every batch handed over, reading its turn text as D4a says MUST give back exactly the
    //# batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line byte for
    //# byte, also when a line imitates a header or a trailer.
    for lines in forged_lines() {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let text = frame::render(BatchId(7), Attempt(1), 0, 3, &lines);
        assert!(reads_back(real, &text, &lines), "{text:?}");
        let parsed = frame::parse(&text).map_err(|e| e.to_string());
        assert_eq!(
            parsed.map(|f| (f.id, f.k, f.n, f.remaining)),
            Ok((BatchId(7), lines.len(), lines.len() + 3, 3))
        );
    }
}

/// D4a known-bad: a reader that searches for "[parkline batch ID end:" takes the forged trailer
/// for the real one and silently drops the lines after it, although it checks id, REMAINING and
/// crc; the real reader on the same text gives back every line.
#[test]
fn d4a_a_search_reader_is_fooled_by_a_forged_trailer() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# The reader MUST NOT search the text for a header or trailer, and MUST NOT interpret a line.
    let forged = own_trailer(7, 3, &["r1 ok"]);
    let lines = ["r1 ok", forged.as_str(), "r3 hidden by a search"];
    let text = frame::render(BatchId(7), Attempt(1), 0, 3, lines);
    assert_eq!(
        parse_by_search(&text).map(|r| r.lines),
        Some(vec!["r1 ok".to_owned()])
    );
    assert!(!reads_back(parse_by_search, &text, &lines));
    assert!(reads_back(real, &text, &lines));
    // Without a forged line the search reader agrees: only the forgery separates the two.
    let plain = frame::render(BatchId(7), Attempt(1), 0, 3, ["r1 ok", "r2"]);
    assert_eq!(parse_by_search(&plain), real(&plain));
}

/// Every text one byte away from `text` (each byte replaced by every other value, deleted, or
/// every value inserted before it or at the end), as far as it is still UTF-8.
fn one_byte_changes(text: &str) -> Vec<(String, String)> {
    let bytes = text.as_bytes();
    let mut changes = Vec::new();
    let mut keep = |what: String, changed: Vec<u8>| {
        if let Ok(changed) = String::from_utf8(changed) {
            changes.push((what, changed));
        }
    };
    for at in 0..=bytes.len() {
        for value in 0..=u8::MAX {
            let mut inserted = bytes.to_vec();
            inserted.insert(at, value);
            keep(format!("insert {value:#04x} at {at}"), inserted);
            if at < bytes.len() && bytes[at] != value {
                let mut replaced = bytes.to_vec();
                replaced[at] = value;
                keep(format!("replace byte {at} by {value:#04x}"), replaced);
            }
        }
        if at < bytes.len() {
            let mut deleted = bytes.to_vec();
            deleted.remove(at);
            keep(format!("delete byte {at}"), deleted);
        }
    }
    changes
}

/// The guarantee, stated for one changed byte: the change is rejected, or the reading keeps the
/// id, K, N, REMAINING and every line byte for byte, and differs only in ATTEMPT or SEEN. The crc
/// covers the body; BYTES and K fix where the body ends (a body cut or grown by a byte no longer
/// ends in "\n" before the trailer's "["); ID, N and REMAINING are each checked against the
/// other part; ATTEMPT (beyond the REPEAT mark) and SEEN are the only fields nothing repeats.
/// Returns the changes that break it, and how many were accepted.
fn guarantee_breaks(reader: Reader, text: &str) -> (Vec<String>, usize) {
    let Some(original) = reader(text) else {
        return (vec!["the unchanged text is not read".to_owned()], 0);
    };
    let mut breaks = Vec::new();
    let mut accepted = 0;
    for (what, changed) in one_byte_changes(text) {
        if let Some(reading) = reader(&changed) {
            accepted += 1;
            let kept = (
                reading.id,
                reading.k,
                reading.n,
                reading.remaining,
                &reading.lines,
            ) == (
                original.id,
                original.k,
                original.n,
                original.remaining,
                &original.lines,
            );
            let moved = (reading.attempt, reading.seen) != (original.attempt, original.seen);
            if !(kept && moved) {
                breaks.push(format!("{what}: {reading:?}"));
            }
        }
    }
    (breaks, accepted)
}

/// D4a: every single-byte change (replace, delete, insert) of a rendered text is rejected or
/// changes only ATTEMPT or SEEN, for texts with forged lines and non-ASCII; the same check
/// catches a reader that skips the crc.
#[test]
fn d4a_single_byte_changes_are_rejected_or_touch_only_attempt_or_seen() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    let mut texts = vec![
        frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]),
        frame::render(BatchId(30), Attempt(12), 0, 0, ["", "é\r\0"]),
        frame::render(BatchId(5), Attempt(1), 0, 10, [""; 0]),
    ];
    let forged = forged_lines();
    texts.push(frame::render(BatchId(7), Attempt(2), 2, 3, &forged[0]));
    let mut accepted_total = 0;
    for text in &texts {
        let (breaks, accepted) = guarantee_breaks(real, text);
        assert_eq!(breaks, Vec::<String>::new(), "{text:?}");
        accepted_total += accepted;
    }
    // Accepted changes exist (e.g. "attempt 12" -> "attempt 13"): the check reads Ok paths too.
    assert!(accepted_total > 0);
    // Known-bad: without the crc, replacing a byte of a line is read as another line.
    let (breaks, _) = guarantee_breaks(parse_without_crc, &texts[0]);
    assert!(
        breaks.iter().any(|b| b.starts_with("replace byte 76 ")),
        "{breaks:?}"
    );
}

/// D4a: every strict prefix of a rendered text is rejected (the trailer, whose end is fixed by
/// BYTES, is cut), and so is anything appended after the trailer.
#[test]
fn d4a_every_truncation_and_extension_is_rejected() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# The trailer MUST start exactly where the body ends, carry the header's `ID`, a `REMAINING`
    //# equal to `N - K`, and a `CRC` equal to the CRC-32 of the body, and MUST be the rest of the
    //# text (ending in its `\n`, nothing after it).
    let forged = forged_lines();
    let texts = [
        frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]),
        frame::render(BatchId(7), Attempt(1), 0, 3, &forged[3]),
        frame::render(BatchId(7), Attempt(1), 0, 3, &forged[4]),
    ];
    for text in &texts {
        for cut in (0..text.len()).filter(|&cut| text.is_char_boundary(cut)) {
            assert!(
                frame::parse(&text[..cut]).is_err(),
                "cut at {cut}: {text:?}"
            );
        }
        for tail in ["\n", "x", text.as_str()] {
            assert_eq!(
                frame::parse(&format!("{text}{tail}")),
                Err(FrameError::TrailingText { offset: text.len() })
            );
        }
    }
}

/// D4: plain decimal, exact words, the cross-checks, each with its typed error.
#[test]
fn d4_strict_grammar_errors_are_typed() {
    //= spec/delivery.md#d4-framing
    //= type=test
    //# `ID`, `ATTEMPT`, `K`, `N`, `SEEN`, `BYTES`, `REMAINING` MUST be plain decimal (ASCII digits,
    //# no sign, no leading zeros, no digit grouping); `ATTEMPT` is at least 1.
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# They MUST be present, end in `\n` (unless `BYTES` is 0) and hold exactly `K` `\n`; the lines
    //# are the body split on `\n`.
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# The trailer MUST start exactly where the body ends, carry the header's `ID`, a `REMAINING`
    //# equal to `N - K`, and a `CRC` equal to the CRC-32 of the body, and MUST be the rest of the
    //# text (ending in its `\n`, nothing after it).
    let body_crc = format!("{:08x}", crc32fast::hash(b"a\n"));
    let turn = |header: &str, body: &str, trailer: &str| format!("{header}\n{body}{trailer}\n");
    let header = "[parkline batch 7 attempt 1: 1 of 1 parked lines, 0 seen before, 2 bytes]";
    let trailer =
        format!("[parkline batch 7 end: 0 parked lines still undelivered, crc32 {body_crc}]");
    assert!(frame::parse(&turn(header, "a\n", &trailer)).is_ok());
    let number = "a plain decimal number";
    let syntax = |part, offset, expected| FrameError::Syntax {
        part,
        offset,
        expected,
    };
    let cases: Vec<(String, FrameError)> = vec![
        (String::new(), syntax(Part::Header, 0, "[parkline batch ")),
        (
            turn(&header.replace("batch 7", "batch 07"), "a\n", &trailer),
            syntax(Part::Header, 16, number),
        ),
        (
            turn(&header.replace("batch 7", "batch +7"), "a\n", &trailer),
            syntax(Part::Header, 16, number),
        ),
        (
            turn(
                &header.replace("batch 7", "batch 18446744073709551616"),
                "a\n",
                &trailer,
            ),
            syntax(Part::Header, 16, number),
        ),
        (
            turn(&header.replace("attempt 1", "attempt 0"), "a\n", &trailer),
            FrameError::AttemptZero,
        ),
        (
            turn(&header.replace("attempt 1", "attempt 2"), "a\n", &trailer),
            syntax(Part::Header, 27, ", repeat"),
        ),
        (
            turn(
                &header.replace("attempt 1", "attempt 1, repeat"),
                "a\n",
                &trailer,
            ),
            syntax(Part::Header, 27, ": "),
        ),
        (
            turn(
                &header.replace("parked lines,", "parked line,"),
                "a\n",
                &trailer,
            ),
            syntax(Part::Header, 35, " parked lines, "),
        ),
        (
            turn(&header.replace("0 seen", "2 seen"), "a\n", &trailer),
            FrameError::SeenAboveK { seen: 2, k: 1 },
        ),
        (
            turn(&header.replace("1 of 1", "2 of 1"), "a\n", &trailer),
            FrameError::KAboveN { k: 2, n: 1 },
        ),
        (
            turn(&header.replace("2 bytes", "999 bytes"), "a\n", &trailer),
            FrameError::BodyShort {
                bytes: 999,
                available: trailer.len() + 3,
            },
        ),
        (
            turn(&header.replace("2 bytes", "1 bytes"), "a\n", &trailer),
            FrameError::BodyEnd { offset: 75 },
        ),
        (
            turn(&header.replace("1 of 1", "2 of 2"), "a\n", &trailer),
            FrameError::LineCount { k: 2, found: 1 },
        ),
        (
            turn(
                &header.replace("1 of 1", "0 of 1"),
                "a\n",
                &trailer.replace(" 0 ", " 1 "),
            ),
            FrameError::LineCount { k: 0, found: 1 },
        ),
        (
            turn(header, "a\n", &trailer.replace("batch 7", "batch 8")),
            FrameError::IdMismatch {
                header: BatchId(7),
                trailer: BatchId(8),
            },
        ),
        (
            turn(header, "a\n", &trailer.replace(" 0 ", " 1 ")),
            FrameError::RemainingMismatch {
                expected: 0,
                found: 1,
            },
        ),
        (
            turn(header, "b\n", &trailer),
            FrameError::CrcMismatch {
                expected: crc32fast::hash(b"b\n"),
                found: crc32fast::hash(b"a\n"),
            },
        ),
        (
            turn(
                header,
                "a\n",
                &trailer.replace(&body_crc, &body_crc.to_uppercase()),
            ),
            syntax(Part::Trailer, 139, "8 lowercase hex digits"),
        ),
        (
            format!("{header}\na\n{trailer}"),
            syntax(Part::Trailer, 147, "]\n"),
        ),
        // Cut right after the body: the body is whole, the trailer is what is missing (kills
        // `> with >=` in the body's length test, mutants 2026-12-03).
        (
            format!("{header}\na\n"),
            syntax(Part::Trailer, 76, "[parkline batch "),
        ),
        // Two lines where one was announced: `found` counts the newlines, not the other bytes
        // (in "a\n" both are 1; kills `== with !=` in that count).
        (
            turn(&header.replace("2 bytes", "6 bytes"), "ab\ncd\n", &trailer),
            FrameError::LineCount { k: 1, found: 2 },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(frame::parse(&text), Err(expected), "{text:?}");
    }
    assert_eq!(
        FrameError::CrcMismatch {
            expected: 1,
            found: 0xab
        }
        .to_string(),
        "turn text trailer: crc32 000000ab, body has 00000001"
    );
    assert_eq!(
        FrameError::LineCount { k: 2, found: 1 }.to_string(),
        "turn text body: header says 2 lines, body holds 1"
    );
}
