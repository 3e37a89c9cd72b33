//! One test per requirement id of `spec/read.md`, R1 to R8: the one budget, reads at the end of a
//! long history, what did not fit, since windows, following cursors, cursor errors and excerpts.

use std::collections::BTreeSet;

use parkline::ErrorKind;
use parkline::read::{
    ChildId, Cursor, ECHO_CHARS_MAX, ERROR_CHARS_MAX, Partial, ReadRequest, RequestHistory,
    Selector, TurnRef, TurnSeq, Window,
};

use super::{busy_child, child, push, read, seqs, since, turn_id};

#[test]
fn r1_one_budget_bounds_framing_turns_partial_and_requests_together() {
    //= spec/read.md#3-the-allocation-r1-r3-r8-r10-r13
    //= type=test
    //# **Framing first.** The window with no element (every selected turn omitted, the partial turn
    //# omitted, every asked request omitted) MUST fit, else the read fails with `CharsMaxTooSmall`.
    //= spec/read.md#r1-one-overall-budget
    //= type=test
    //# The response text of a window MUST be at most `chars_max` chars: framing, turns, the partial
    //# turn and requests **together**.
    //= spec/read.md#r1-one-overall-budget
    //= type=test
    //# The crate MUST NOT return a longer text; when not even the framing fits, the read MUST fail
    //# with `CharsMaxTooSmall` and say the smallest `chars_max` at which it succeeds (section 6).
    let c = busy_child();
    let selectors = [
        Selector::Since(c.start_cursor()),
        Selector::Latest { n: 2 },
        Selector::Turn {
            id: turn_id("t2"),
            offset: 5,
        },
    ];
    let mut answered = 0;
    for selector in selectors {
        for chars_max in 0..700 {
            let mut request = ReadRequest::new(selector.clone(), chars_max);
            request.requests = RequestHistory::All;
            match c.read(&request) {
                Ok(window) => {
                    answered += 1;
                    assert!(window.chars <= chars_max, "{} > {chars_max}", window.chars);
                    assert_eq!(window.chars, window.text.chars().count());
                }
                Err(error) => {
                    assert_eq!(error.kind(), ErrorKind::CharsMaxTooSmall);
                    assert!(
                        error
                            .needed_chars()
                            .is_some_and(|needed| needed > chars_max)
                    );
                }
            }
        }
    }
    assert!(answered > 1000);
    // The pre-parkline meaning (chars_max bounds turns only) would have given more: with a
    // budget that the turns alone fill, the requests and partial turn are left out here.
    let window = since(&c, &c.start_cursor(), 300);
    assert!(window.chars <= 300);
    assert!(window.requests_omitted > 0 || window.partial != Partial::Whole { chars: 75 });
}

#[test]
fn r2_a_read_at_the_end_of_a_long_history_returns_only_what_follows_the_cursor() {
    //= spec/read.md#r2-cost-proportional-to-what-is-returned
    //= type=test
    //= reason=the answers at the end of a 100,000-turn history; the time is measured by
    //= reason=benches/read
    //# Answering a read MUST take time in proportion to what the window holds (plus a logarithm of
    //# the history), not to the length of the child's history: the turn after a cursor is found by
    //# binary search on turn seq, a `turn:<id>` by an id index, counts of omitted turns and
    //# requests are computed, not counted by iteration, and character counts of turns are kept when
    //# turns are added.
    let mut c = child("c");
    let turns = 100_000;
    for seq in 1..=turns {
        push(&mut c, seq, "x");
    }
    let first = since(&c, &c.start_cursor(), 1000);
    let cursor = first.next.clone().expect("cursor");
    assert!(cursor.seq().0 < 100);
    assert_eq!(first.omitted.count as u64, turns - cursor.seq().0);
    assert_eq!(
        first.omitted.last.as_ref().map(|t| t.seq),
        Some(TurnSeq(turns))
    );
    // Locate the end of the history by following n:1's cursor, then read what follows it:
    // seq lookup is a binary search, the answer holds only the new turns.
    let at_end = read(&c, Selector::Latest { n: 1 }, 1000)
        .next
        .expect("cursor");
    push(&mut c, turns + 1, "new");
    for _ in 0..1000 {
        let window = since(&c, &at_end, 1000);
        assert_eq!(seqs(&window), [turns + 1]);
        assert_eq!(window.omitted.count, 0);
    }
}

/// The characters an excerpt of `window` shows: the `to - from` characters between its element's
/// header line and the window's trailer.
fn excerpt_text(window: &Window) -> (usize, usize, String) {
    let excerpt = window.excerpt.as_ref().expect("an excerpt");
    let element = &window.text[window.text.find("[turn ").expect("a turn element")..];
    let body = &element[element.find("]\n").expect("its header line") + 2..];
    let shown: String = body.chars().take(excerpt.to - excerpt.from).collect();
    assert!(
        body[shown.len()..].starts_with("\n[parkline read end: 0 whole, 1 excerpt"),
        "the excerpt ends where the window says: {}",
        window.text
    );
    (excerpt.from, excerpt.to, shown)
}

#[test]
fn r2_a_read_from_an_offset_finds_it_through_the_index() {
    //= spec/read.md#r2-cost-proportional-to-what-is-returned
    //= type=test
    //= reason=the windows it finds, against char slicing, at every boundary of the index; the
    //= reason=time is measured by benches/read (a long turn at offset 0 and at its end)
    //# A read of a turn from a character offset MUST find the offset's byte position through an
    //# index kept when the turn is added, scanning at most a fixed stride of characters before
    //# it, so that its time is in proportion to the characters returned, not to the offset.
    // Characters of 1, 2, 3 and 4 bytes in a cycle of 7, so that the index's boundaries (every
    // 1,024 characters; these offsets cover any stride that is a multiple of 256) fall on every
    // width. An ASCII turn of the same length needs no index; it is read the same way.
    let mixed: String = "aé日🦀 ü😀".chars().cycle().take(12_345).collect();
    let ascii = "z".repeat(12_345);
    let mut c = child("c");
    push(&mut c, 1, "é short");
    push(&mut c, 2, &mixed);
    push(&mut c, 3, &ascii);
    for (id, text) in [("t2", &mixed), ("t3", &ascii)] {
        let chars: Vec<char> = text.chars().collect();
        let slice = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
        let mut offsets: Vec<usize> = (0..=chars.len())
            .step_by(256)
            .flat_map(|boundary| [boundary.saturating_sub(1), boundary, boundary + 1])
            .chain([chars.len() - 1, chars.len()])
            .filter(|&offset| offset <= chars.len())
            .collect();
        offsets.dedup();
        for offset in offsets {
            for chars_max in [300, 1_300] {
                let selector = Selector::Turn {
                    id: turn_id(id),
                    offset,
                };
                let window = read(&c, selector, chars_max);
                let (from, to, shown) = excerpt_text(&window);
                assert_eq!(from, offset, "{id} offset {offset}");
                assert!(
                    to > from || to == chars.len(),
                    "{id} offset {offset}: progress"
                );
                assert_eq!(shown, slice(from, to), "{id} chars {from}..{to}");
            }
        }
        // Following the `rest at` references reassembles the turn exactly.
        let mut offset = 0;
        let mut whole = String::new();
        while offset < chars.len() {
            let selector = Selector::Turn {
                id: turn_id(id),
                offset,
            };
            let (from, to, shown) = excerpt_text(&read(&c, selector, 700));
            assert_eq!(from, offset);
            whole.push_str(&shown);
            offset = to;
        }
        assert_eq!(&whole, text, "{id} reassembled from its excerpts");
    }
}

#[test]
fn r3_what_did_not_fit_is_reported_by_count_and_turn_id_in_allocation_order() {
    //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
    //= type=test
    //# The budget MUST be allocated in the fixed order of section 3, a pure function of the
    //# transcript and the read.
    //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
    //= type=test
    //# Every selected turn that is not in the window MUST be reported: the window says how many,
    //# and names the first and the last of them by turn id (they are always consecutive among the
    //# selected turns, so the two ids and the count name them all).
    //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
    //= type=test
    //# A partial turn that did not fit at all and requests that did not fit MUST be reported too.
    //= spec/read.md#r10-the-partial-turn
    //= type=test
    //# `n:` and `since` reads MUST attach the partial turn after the turns: whole if it fits, else
    //# its **newest** chars that fit (marked `last <n> of <total> chars`), else it is reported
    //# omitted.
    let c = busy_child();
    // Room for the framing and one turn: the other two selected turns are omitted and named.
    let window = since(&c, &c.start_cursor(), 330);
    assert_eq!(seqs(&window), [1]);
    assert_eq!(window.omitted.count, 2);
    assert_eq!(
        window.omitted.first.as_ref().map(|t| t.id.as_str()),
        Some("t2")
    );
    assert_eq!(
        window.omitted.last.as_ref().map(|t| t.id.as_str()),
        Some("t3")
    );
    assert!(
        window
            .text
            .contains("1 whole, 0 excerpt, 2 omitted (turn:t2 to turn:t3)")
    );
    // Turns come before the partial turn and the requests: what is left is given to the
    // partial turn (its newest characters), and the request that no longer fits is reported.
    assert!(matches!(window.partial, Partial::Cut { total: 75, .. }));
    assert!(window.text.contains(", 1 requests omitted;"));
    // With a little less room, the partial turn is left out and reported too.
    let tighter = (250..330)
        .filter_map(|chars_max| {
            c.read(&ReadRequest::new(
                Selector::Since(c.start_cursor()),
                chars_max,
            ))
            .ok()
        })
        .find(|w| seqs(w) == [1] && w.partial == Partial::Omitted { total: 75 })
        .expect("a budget with room for one turn but not the partial-turn marker");
    assert!(
        tighter
            .text
            .contains(", in-flight omitted, 1 requests omitted;")
    );
    // With more room the partial turn comes next, then the open request.
    let roomy = since(&c, &c.start_cursor(), 2000);
    let positions: Vec<usize> = [
        "[turn t3",
        "[in-flight:",
        "[request 1 open]",
        "[parkline read end",
    ]
    .iter()
    .map(|marker| roomy.text.find(marker).expect("present"))
    .collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    // n:k gives the newest turns priority and omits the older ones.
    let latest = (200..400)
        .filter_map(|chars_max| {
            c.read(&ReadRequest::new(Selector::Latest { n: 3 }, chars_max))
                .ok()
        })
        .find(|w| !w.whole.is_empty())
        .expect("a budget with room for one turn");
    assert_eq!(seqs(&latest), [3]);
    assert_eq!(latest.omitted.count, 2);
    assert!(latest.text.contains("2 omitted (turn:t1 to turn:t2)"));
}

#[test]
fn r4_since_returns_only_the_turns_after_the_cursor_plus_partial_and_a_next_cursor() {
    //= spec/read.md#r4-since-returns-only-what-is-new
    //= type=test
    //# A `since:<cursor>` read MUST select exactly the turns with seq greater than the cursor's, in
    //# seq order, and MUST attach the partial turn (as far as it fits, R10) and a next cursor.
    let c = busy_child();
    let first = since(&c, &c.start_cursor(), 2000);
    assert_eq!(seqs(&first), [1, 2, 3]);
    let next = first.next.clone().expect("cursor");
    assert_eq!(next.seq(), TurnSeq(3));
    let rest = since(&c, &next, 2000);
    assert!(rest.whole.is_empty());
    // R15: the caller has the partial turn already; nothing of it is new.
    assert_eq!(
        rest.partial,
        Partial::New {
            from: 75,
            seen: 75,
            total: 75
        }
    );
    assert_eq!(rest.next, Some(next));
}

/// Follows the cursor through a child that grows between reads, under a small budget, and
/// returns the seqs given (whole or as an excerpt) in order, reassembling excerpts.
fn follow(budget: usize, sizes: &[usize]) -> (Vec<u64>, Vec<String>) {
    let mut c = child("c");
    let mut cursor = c.start_cursor();
    let mut given = Vec::new();
    let mut texts = Vec::new();
    let mut seq = 0;
    for (i, &size) in sizes.iter().enumerate() {
        seq += 1 + (i as u64 % 2); // seqs with gaps
        let text: String = (0..size).map(|k| ['a', 'é', '\n'][k % 3]).collect();
        push(&mut c, seq, &text);
        c.set_partial(Some("y".repeat(size)));
        if i % 2 == 0 {
            continue; // two turns complete between some reads
        }
        loop {
            let window = since(&c, &cursor, budget);
            for turn in &window.whole {
                given.push(turn.seq.0);
                texts.push(
                    c.turns()
                        .iter()
                        .find(|t| t.seq == turn.seq)
                        .expect("turn")
                        .text
                        .to_owned(),
                );
            }
            if let Some(excerpt) = &window.excerpt {
                given.push(excerpt.turn.seq.0);
                // Read the rest by exact location and reassemble it.
                let mut text = String::new();
                let mut part = excerpt.clone();
                loop {
                    let turn = &c
                        .turns()
                        .iter()
                        .find(|t| t.seq == part.turn.seq)
                        .expect("turn")
                        .text;
                    text.extend(turn.chars().skip(part.from).take(part.to - part.from));
                    let Some(rest) = part.rest() else { break };
                    part = read(&c, rest, budget).excerpt.expect("rest is an excerpt");
                }
                texts.push(text);
            }
            let next = window.next.clone().expect("since cursor");
            if next == cursor {
                break;
            }
            cursor = next;
        }
    }
    (given, texts)
}

#[test]
fn r5_r6_following_the_cursors_gives_every_turn_exactly_once_under_a_small_budget() {
    //= spec/read.md#r5-no-skip
    //= type=test
    //# The next cursor of a `since` read MUST advance only over turns the window holds, whole or as
    //# the marked excerpt of R8: its seq is the seq of the last such turn, or the given cursor's
    //# when the window holds none.
    //= spec/read.md#r6-no-repeat
    //= type=test
    //# Following the next cursors, a caller MUST NOT be given a turn twice (whole or as an
    //# excerpt).
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A cursor the crate handed out for a child MUST be accepted by every later read of that child
    //# while its transcript only grows (section 5.2 says what happens when it is rebuilt shorter).
    let sizes = [3, 40, 250, 7, 0, 500, 60, 61, 2, 130];
    for budget in [300, 330, 420, 900] {
        let (given, texts) = follow(budget, &sizes);
        let mut expected_seqs = Vec::new();
        let mut seq = 0;
        for i in 0..sizes.len() {
            seq += 1 + (i as u64 % 2);
            expected_seqs.push(seq);
        }
        assert_eq!(given, expected_seqs, "budget {budget}: skip or repeat");
        let unique: BTreeSet<u64> = given.iter().copied().collect();
        assert_eq!(unique.len(), given.len());
        for (text, size) in texts.iter().zip(sizes) {
            assert_eq!(
                text.chars().count(),
                size,
                "budget {budget}: reassembled turn"
            );
        }
    }
}

#[test]
fn r7_a_damaged_a_foreign_or_an_ahead_cursor_gets_a_typed_error() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A cursor MUST be handed to the caller as text that encodes the child and the seq with a
    //# check (section 5); the caller MUST NOT need to understand it.
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A read with a cursor whose text is not exactly a cursor's MUST fail with `CursorDamaged`;
    //# with a cursor of another child, with `CursorOtherChild`, for **every** pair of distinct
    //# child ids (the cursor names its child, it does not carry a hash of it); with a cursor of the
    //# retired v1 form, with `CursorRetired`; with a cursor past the child's latest turn, with
    //# `CursorAhead`;
    //# with a cursor whose turn the transcript no longer has at its seq, with
    //# `CursorDiverged` (section 5.2).
    let c = busy_child();
    let good = since(&c, &c.start_cursor(), 2000)
        .next
        .clone()
        .expect("cursor");
    let text = good.to_string();
    // Damaged: every single-character change of the text.
    for (i, original) in text.char_indices() {
        for replacement in ['0', '7', 'a', 'f', '.', 'v', 'z'] {
            if replacement == original {
                continue;
            }
            let mut damaged = text.clone();
            damaged.replace_range(i..i + 1, &replacement.to_string());
            let error = Cursor::parse(&damaged).expect_err(&damaged);
            assert_eq!(error.kind(), ErrorKind::CursorDamaged, "{damaged}");
        }
    }
    for cut in [&text[..text.len() - 1], "", "v1", "since:v1.0.0.0"] {
        assert_eq!(
            Cursor::parse(cut).map_err(|e| e.kind()),
            Err(ErrorKind::CursorDamaged)
        );
    }
    // Another child's cursor parses but is refused by this child.
    let other = child("s978-5");
    let foreign = other.start_cursor();
    let error = c
        .read(&ReadRequest::new(Selector::Since(foreign), 2000))
        .expect_err("foreign");
    assert_eq!(error.kind(), ErrorKind::CursorOtherChild);
    // A cursor ahead of the transcript: from a longer history of the same child.
    let mut longer = busy_child();
    push(&mut longer, 4, "later");
    let ahead = since(&longer, &longer.start_cursor(), 3000)
        .next
        .expect("cursor");
    let error = c
        .read(&ReadRequest::new(Selector::Since(ahead), 2000))
        .expect_err("ahead");
    assert_eq!(error.kind(), ErrorKind::CursorAhead);
    // The text form round-trips, and a good cursor is accepted.
    assert_eq!(Cursor::parse(&text).expect("parses"), good);
    assert!(
        c.read(&ReadRequest::new(Selector::Since(good), 2000))
            .is_ok()
    );
}

/// R7 for every pair of ids: `s61947-8` and `s590020-12` have the same CRC-32 (`b91ca91f`, the
/// child tag of the retired v1 cursor), and a cursor of one is still refused by the other.
#[test]
fn r7_colliding_ids_other_child() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A cursor MUST be handed to the caller as text that encodes the child and the seq with a
    //# check (section 5); the caller MUST NOT need to understand it.
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A read with a cursor whose text is not exactly a cursor's MUST fail with `CursorDamaged`;
    //# with a cursor of another child, with `CursorOtherChild`, for **every** pair of distinct
    //# child ids (the cursor names its child, it does not carry a hash of it); with a cursor of the
    //# retired v1 form, with `CursorRetired`; with a cursor past the child's latest turn, with
    //# `CursorAhead`;
    //# with a cursor whose turn the transcript no longer has at its seq, with
    //# `CursorDiverged` (section 5.2).
    let mut colliding = child("s590020-12");
    push(&mut colliding, 1, "the other child's turn");
    let start = child("s61947-8").start_cursor();
    let error = colliding
        .read(&ReadRequest::new(Selector::Since(start.clone()), 2000))
        .expect_err("a cursor of another child");
    assert_eq!(error.kind(), ErrorKind::CursorOtherChild);
    assert!(error.to_string().contains("s61947-8"), "{error}");
    // The cursor names its child, and the text round-trips.
    assert_eq!(start.child().as_str(), "s61947-8");
    assert_eq!(Cursor::parse(&start.to_string()).expect("parses"), start);
    // A child id with dots is a valid id and stays whole in the cursor.
    let dotted = child("a.b.c").start_cursor();
    assert_eq!(
        Cursor::parse(&dotted.to_string())
            .expect("parses")
            .child()
            .as_str(),
        "a.b.c"
    );
}

/// R7: the retired v1 form (whose tag could collide) is refused with its own kind, never read.
#[test]
fn r7_a_v1_cursor_is_retired() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A read with a cursor whose text is not exactly a cursor's MUST fail with `CursorDamaged`;
    //# with a cursor of another child, with `CursorOtherChild`, for **every** pair of distinct
    //# child ids (the cursor names its child, it does not carry a hash of it); with a cursor of the
    //# retired v1 form, with `CursorRetired`; with a cursor past the child's latest turn, with
    //# `CursorAhead`;
    //# with a cursor whose turn the transcript no longer has at its seq, with
    //# `CursorDiverged` (section 5.2).
    // The v1 start cursor of `s61947-8`, as the previous release handed it out.
    let error = Cursor::parse("v1.0.b91ca91f.5edfab16").expect_err("retired");
    assert_eq!(error.kind(), ErrorKind::CursorRetired);
    let error = Cursor::parse("v1.0.b91ca91f.5edfab17").expect_err("damaged");
    assert_eq!(error.kind(), ErrorKind::CursorDamaged);
}

/// R7: an error echoes at most `ECHO_CHARS_MAX` chars of the input, and every cursor error says
/// which read resumes following.
#[test]
fn r7_error_echo_is_capped() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# Every cursor error MUST say which read resumes following without repeats (section 6), and
    //# MUST NOT echo more than `ECHO_CHARS_MAX` chars of the caller's input.
    let long = "v2.".to_string() + &"x".repeat(100_000);
    let error = Cursor::parse(&long).expect_err("damaged");
    assert_eq!(error.kind(), ErrorKind::CursorDamaged);
    let text = error.to_string();
    assert!(text.chars().count() < 400, "{} chars", text.chars().count());
    assert!(text.contains(&"x".repeat(ECHO_CHARS_MAX - 3)), "{text}");
    assert!(!text.contains(&"x".repeat(ECHO_CHARS_MAX)), "{text}");
    assert!(text.contains("(100003 chars)"), "{text}");
    assert!(text.contains("resume with since:turn:"), "{text}");
    // A short damaged cursor is echoed whole.
    let short = Cursor::parse("v2.0").expect_err("damaged").to_string();
    assert!(short.contains("\"v2.0\""), "{short}");
    // Ids are echoed capped as well.
    let id = ChildId::new("y".repeat(10_000))
        .expect_err("too long")
        .to_string();
    assert!(id.chars().count() < 200, "{id}");
    // Each cursor error says what to do next.
    let mut c = child("c");
    push(&mut c, 1, "one");
    let other = c
        .read(&ReadRequest::new(
            Selector::Since(child("d").start_cursor()),
            2000,
        ))
        .expect_err("other child")
        .to_string();
    assert!(
        other.contains("resume with since:turn:") && other.contains(&c.start_cursor().to_string()),
        "{other}"
    );
    let retired = Cursor::parse("v1.0.b91ca91f.5edfab16")
        .expect_err("retired")
        .to_string();
    assert!(retired.contains("resume with since:turn:"), "{retired}");
    for error in [&text, &other, &retired] {
        assert!(error.chars().count() <= ERROR_CHARS_MAX);
    }
}

#[test]
fn r8_a_turn_larger_than_the_budget_is_a_marked_excerpt_and_the_cursor_moves_past_it() {
    //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
    //= type=test
    //# When the first selected turn does not fit whole, it MUST come back as an excerpt marked with
    //# its position (`excerpt chars <from>..<to> of <total>`) and, when text remains, the reference
    //# that reads the rest (`rest at turn:<id> offset <to>`).
    //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
    //= type=test
    //# For `since` and `n:` reads the excerpt counts as given: the next cursor MUST move past it
    //# (R5), so following the cursors never loops on a turn larger than the budget.
    //= spec/read.md#r12-turn-id-is-exact-location
    //= type=test
    //# A `turn:<id>` read with an offset MUST return that turn's text from that char offset, whole
    //# if it is the whole turn and fits, else as much as fits, marked as in R8.
    let mut c = child("c");
    let big: String = "0123456789".repeat(100);
    push(&mut c, 1, &big);
    push(&mut c, 2, "small");
    let window = since(&c, &c.start_cursor(), 300);
    let excerpt = window.excerpt.clone().expect("excerpt");
    assert_eq!(
        (excerpt.turn.seq, excerpt.from, excerpt.total),
        (TurnSeq(1), 0, 1000)
    );
    assert!(excerpt.to > 0 && excerpt.to < 1000);
    let marker = format!(
        "[turn t1 seq 1: excerpt chars 0..{} of 1000, rest at turn:t1 offset {}]\n",
        excerpt.to, excerpt.to
    );
    assert!(window.text.contains(&marker), "{}", window.text);
    assert!(window.chars <= 300);
    // The cursor moves past the excerpted turn: the next read gives turn 2, no loop.
    let next = window.next.clone().expect("cursor");
    assert_eq!(next.seq(), TurnSeq(1));
    assert_eq!(seqs(&since(&c, &next, 300)), [2]);
    // The rest, by exact location, until the turn is whole again.
    let mut text: String = big.chars().take(excerpt.to).collect();
    let mut rest = excerpt.rest();
    while let Some(selector) = rest {
        let part = read(&c, selector, 300).excerpt.expect("excerpt");
        text.extend(big.chars().skip(part.from).take(part.to - part.from));
        rest = part.rest();
    }
    assert_eq!(text, big);
}

/// R8: every answer makes progress, and `needed_chars` is the smallest budget that does. The
/// seed's shape: one turn of 3,000 chars. Before, `since:start` at its `needed_chars` (204) gave
/// an excerpt of 0 chars whose rest was `turn:t1 offset 0`, and that read at its own
/// `needed_chars` (168) gave the same empty excerpt again: a loop.
#[test]
fn r8_needed_chars_makes_progress() {
    //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
    //= type=test
    //# Every answer that is not an error MUST make progress: when the read selects at least one
    //# turn, it holds the first selected turn whole, or its rest from the offset whole (possibly
    //# empty, when a `turn:` read starts at the turn's end), or an excerpt of **at least one**
    //# character.
    //= spec/read.md#r8-no-read-loops-an-oversized-turn-is-a-marked-excerpt-and-every-answer-makes-progress
    //= type=test
    //# `needed_chars` of `CharsMaxTooSmall` MUST be the smallest budget at which the read makes
    //# progress, so that a caller that always retries at `needed_chars` (and reads an excerpt's
    //# rest the same way) reaches the end of the transcript in a bounded number of reads: at most
    //# one per character of the turns plus one per turn.
    let mut c = child("c");
    let big: String = (0..3000).map(|i| ['a', 'é', '\n'][i % 3]).collect();
    push(&mut c, 1, &big);
    let needed_at = |selector: &Selector| {
        c.read(&ReadRequest::new(selector.clone(), 0))
            .expect_err("nothing fits in 0 chars")
            .needed_chars()
            .expect("budget errors name a budget")
    };
    let start = Selector::Since(c.start_cursor());
    let needed = needed_at(&start);
    let first = read(&c, start.clone(), needed);
    let excerpt = first.excerpt.clone().expect("an excerpt");
    assert_eq!(
        (excerpt.from, excerpt.to),
        (0, 1),
        "one char at the smallest budget"
    );
    assert!(c.read(&ReadRequest::new(start, needed - 1)).is_err());
    // Following the rest at each read's needed_chars ends the turn, one char or more per read.
    let mut text: String = big.chars().take(excerpt.to).collect();
    let mut reads = 1;
    let mut rest = excerpt.rest();
    while let Some(selector) = rest {
        let needed = needed_at(&selector);
        let part = read(&c, selector.clone(), needed)
            .excerpt
            .expect("the rest is an excerpt");
        assert!(part.to > part.from, "{selector}: no progress at {needed}");
        assert!(c.read(&ReadRequest::new(selector, needed - 1)).is_err());
        text.extend(big.chars().skip(part.from).take(part.to - part.from));
        rest = part.rest();
        reads += 1;
        assert!(reads <= 3000, "the chain does not end");
    }
    assert_eq!(text, big);
    // A turn read at the very end of a turn reads its empty rest: that is the end, not a loop.
    let end = Selector::Turn {
        id: turn_id("t1"),
        offset: 3000,
    };
    let last = read(&c, end.clone(), needed_at(&end));
    assert_eq!(last.excerpt.and_then(|e| e.rest()), None);
}

/// R7, section 6: every error whose advice names a cursor or an id gives it whole as a value,
/// and its message echoes at most `ECHO_CHARS_MAX` chars of what the caller passed, even for
/// 128-char ids.
#[test]
fn r7_errors_give_their_advice_as_values() {
    //= spec/read.md#6-errors
    //= type=test
    //# Every error that gives advice naming a cursor or an id MUST also give it
    //# whole as a value (`Error::resume_cursor()`, `Error::cursor_child()`).
    let long = |c: char| std::iter::repeat_n(c, 128).collect::<String>();
    let mut c = child(&long('a'));
    push(&mut c, 1, "one");
    push(&mut c, 2, "two");
    let request = |selector| ReadRequest::new(selector, 4000);

    let t9 = TurnRef {
        id: turn_id("t9"),
        seq: TurnSeq(9),
    };
    let ahead = Cursor::after(c.child(), &t9);
    let err = c.read(&request(Selector::Since(ahead))).expect_err("ahead");
    assert_eq!(err.kind(), ErrorKind::CursorAhead);
    let resume = err.resume_cursor().expect("a cursor to resume with");
    assert_eq!(resume.seq(), TurnSeq(2));
    assert!(
        err.to_string().contains(&format!("since:{resume}")),
        "{err}"
    );
    assert!(c.read(&request(Selector::Since(resume.clone()))).is_ok());

    let other = ChildId::new(long('b')).expect("a 128-char id");
    let err = c
        .read(&request(Selector::Since(Cursor::start(&other))))
        .expect_err("another child's cursor");
    assert_eq!(err.kind(), ErrorKind::CursorOtherChild);
    assert_eq!(err.cursor_child(), Some(&other));
    assert_eq!(err.resume_cursor(), Some(&c.start_cursor()));
    let text = err.to_string();
    assert!(
        !text.contains(other.as_str()),
        "the other id echoed whole: {text}"
    );
    assert!(text.contains(&"b".repeat(ECHO_CHARS_MAX)), "{text}");

    let unknown = turn_id(&long('t'));
    let err = c
        .read(&request(Selector::SinceTurn(unknown.clone())))
        .expect_err("unknown turn");
    assert_eq!(err.kind(), ErrorKind::UnknownTurn);
    assert_eq!(err.resume_cursor(), Some(&c.start_cursor()));
    assert!(!err.to_string().contains(unknown.as_str()), "{err}");
    let err = c
        .read(&request(Selector::Turn {
            id: unknown.clone(),
            offset: 0,
        }))
        .expect_err("unknown turn");
    assert!(!err.to_string().contains(unknown.as_str()), "{err}");
    assert!(err.to_string().chars().count() <= ERROR_CHARS_MAX);

    // A damaged or retired cursor does not say which turn the caller holds: no value.
    let damaged = Cursor::parse("v2.0.0.00000000.c").expect_err("damaged");
    assert_eq!(damaged.kind(), ErrorKind::CursorDamaged);
    assert_eq!(damaged.resume_cursor(), None);
}

/// Section 5.1: a partial-turn record of 0 chars has no form, so a cursor text holding one, even
/// with a correct check, is damaged (it parsed with the crate's own check before).
#[test]
fn r7_a_zero_char_partial_record_is_damaged() {
    //= spec/read.md#5-1-the-partial-turn-record
    //= type=test
    //# A record of 0 chars has no form: a cursor text with one MUST fail with `CursorDamaged`.
    let err = Cursor::parse("v2.0.0-0-00000000.7a97152b.c").expect_err("no 0-char record");
    assert_eq!(err.kind(), ErrorKind::CursorDamaged);
    assert_eq!(
        parkline_model::read::parse_cursor("v2.0.0-0-00000000.7a97152b.c"),
        Err(parkline_model::read::RefReadError::CursorDamaged)
    );
    // A record of 1 char with its check still parses.
    let mut c = child("c");
    push(&mut c, 1, "one");
    c.set_partial(Some("x".to_owned()));
    let window = since(&c, &c.start_cursor(), 4000);
    let next = window.next.expect("a next cursor");
    assert_eq!(next.partial_seen(), Some(1));
    assert_eq!(Cursor::parse(&next.to_string()).ok(), Some(next));
}

/// Section 5.3: a v2 cursor's partial-turn check is a CRC-32 of 8 hex digits. One of 16 digits,
/// with the cursor's own check right, made a debug build panic in the encoder the parse compares
/// with and a release build read it; any width but 8 (16 in v3) is damaged, on both sides.
#[test]
fn r7_a_v2_cursor_with_a_long_check_is_damaged() {
    //= spec/read.md#5-3-a-cursor-of-version-2
    //= type=test
    //# A v2 cursor whose partial-turn check is not exactly 8 hex digits MUST fail with
    //# `CursorDamaged`.
    let reported = "v2.6.6-6-2af045c60a15f3da.5455d640.s980-1";
    let err = Cursor::parse(reported).expect_err("a 16-digit v2 check");
    assert_eq!(err.kind(), ErrorKind::CursorDamaged);
    assert_eq!(
        parkline_model::read::parse_cursor(reported),
        Err(parkline_model::read::RefReadError::CursorDamaged)
    );
    // Every width of the check, its cursor's own check computed over the fields: only 8 digits
    // (v2) and 16 (v3) parse.
    for (tag, good) in [("v2", 8), ("v3", 16)] {
        let turn = if tag == "v3" { " 1122334455667788" } else { "" };
        for width in 1..=32 {
            let record: String = "9".repeat(width);
            let fields = format!("6{turn} 6-6-{record}");
            let check =
                parkline_model::read::crc32(format!("parkline-cursor-{tag} {fields} c").as_bytes());
            let text = format!("{tag}.{}.{check:08x}.c", fields.replace(' ', "."));
            let parsed = Cursor::parse(&text);
            let reference = parkline_model::read::parse_cursor(&text);
            if width == good {
                assert_eq!(parsed.map(|c| c.to_string()).ok(), Some(text.clone()));
                assert!(reference.is_ok(), "{text}");
            } else {
                assert_eq!(
                    parsed.map_err(|e| e.kind()).err(),
                    Some(ErrorKind::CursorDamaged)
                );
                assert_eq!(
                    reference,
                    Err(parkline_model::read::RefReadError::CursorDamaged),
                    "{text}"
                );
            }
        }
    }
}
