//! Read-side conformance tests: seed acceptance 4, one test per requirement of `spec/read.md`
//! (R1..R14), the differential proptest of the crate (`parkline::read`) against the reference
//! (`parkline_model::read`) through `read_harness::check`, and the known-bad read protocols (the
//! harness's wrappers around `Transcript::read`) each caught by that same check.

use std::collections::BTreeSet;

use parkline::read::{
    ChildId, Cursor, ECHO_CHARS_MAX, ERROR_CHARS_MAX, InFlight, ReadRequest, RequestHistory,
    Selector, Transcript, TurnId, TurnSeq, Window,
};
use parkline::{ErrorKind, RequestId};
use parkline_harness::known_bad::{KnownBad, read_as};
use parkline_harness::read_harness::{self, ReadOp, check, check_with, decode_read_ops};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};

/// `name` from the environment as a number, or `default`.
fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Differential cases: `PARKLINE_READ_CASES` (each case runs up to 60 ops, every read on both
/// sides; the reference renders every candidate answer, so a case costs far more than a
/// delivery case).
fn cases() -> u32 {
    u32::try_from(env_usize("PARKLINE_READ_CASES", 1000)).unwrap_or(u32::MAX)
}

fn child(name: &str) -> Transcript {
    Transcript::new(ChildId::new(name).expect("valid child id"))
}

fn turn_id(id: &str) -> TurnId {
    TurnId::new(id).expect("valid turn id")
}

fn push(transcript: &mut Transcript, seq: u64, text: &str) {
    transcript
        .push_turn(turn_id(&format!("t{seq}")), TurnSeq(seq), text)
        .expect("seqs increase");
}

fn read(transcript: &Transcript, selector: Selector, max_chars: usize) -> Window {
    transcript
        .read(&ReadRequest::new(selector, max_chars))
        .expect("the read fits")
}

fn since(transcript: &Transcript, cursor: &Cursor, max_chars: usize) -> Window {
    read(transcript, Selector::Since(cursor.clone()), max_chars)
}

fn seqs(window: &Window) -> Vec<u64> {
    window.whole.iter().map(|turn| turn.seq.0).collect()
}

// ---------------------------------------------------------------------------------------------
// Seed acceptance 4
// ---------------------------------------------------------------------------------------------

/// R4, R6, R10, R11. Seed acceptance 4: `agent_read{sid, since:<cursor>}` on a working child
/// returns only unread turns plus in-flight; `n:1` behaviour unchanged (the "latest, may repeat"
/// read).
///
/// The scenario is the seed's: a planner peeks at a working child (s980-1) again and again.
#[test]
fn acceptance_4_since_cursor_returns_only_unread_turns_plus_in_flight() {
    let mut s980 = child("s980-1");
    let finished = "x".repeat(2500); // the seed's 2-3 k char turn re-sent on every n:1 peek
    push(&mut s980, 1, &finished);
    s980.set_in_flight(Some("step 1 of 3".into()));
    let budget = 8000;

    // First peek with since: the finished turn and the in-flight part.
    let first = since(&s980, &s980.start_cursor(), budget);
    assert_eq!(seqs(&first), [1]);
    assert_eq!(first.in_flight, InFlight::Whole { chars: 11 });
    assert!(first.text.contains(&finished));
    assert!(first.text.contains("[in-flight: 11 chars]\nstep 1 of 3\n"));
    let cursor = first
        .next
        .clone()
        .expect("since reads return a next cursor");

    // The child keeps working; no turn completes. Peeking again returns no completed turn,
    // only the in-flight part: the finished turn is NOT re-sent.
    s980.set_in_flight(Some("step 2 of 3".into()));
    let second = since(&s980, &cursor, budget);
    assert!(second.whole.is_empty() && second.excerpt.is_none());
    assert!(!second.text.contains(&finished));
    assert!(second.text.contains("step 2 of 3"));
    assert_eq!(
        second.in_flight,
        InFlight::Replaced {
            shown: 11,
            total: 11
        }
    );
    assert_eq!(
        second.next.as_ref().map(Cursor::seq),
        Some(cursor.seq()),
        "nothing new: the cursor stays at turn 1"
    );

    // A turn completes and the next one is in flight: only the new turn plus in-flight.
    push(&mut s980, 2, "second turn done");
    s980.set_in_flight(Some("step 3 of 3".into()));
    let third = since(&s980, &cursor, budget);
    assert_eq!(seqs(&third), [2]);
    assert!(!third.text.contains(&finished));
    assert!(third.text.contains("second turn done") && third.text.contains("step 3 of 3"));

    // n:1 behaves as before: the latest completed turn plus in-flight, on every peek, whether
    // or not the caller has it already ("latest, may repeat").
    let peek = read(&s980, Selector::Latest { n: 1 }, budget);
    let again = read(&s980, Selector::Latest { n: 1 }, budget);
    assert_eq!(seqs(&peek), [2]);
    assert_eq!(peek, again, "n:1 repeats the same turn");
    assert!(peek.text.contains("second turn done") && peek.text.contains("step 3 of 3"));
    assert!(peek.text.starts_with("[parkline read s980-1 n:1]\n"));

    // The cost the seed measured: six n:1 peeks of a 2.5 k turn re-send it six times; six
    // since peeks send it once.
    let mut s = child("s980-1");
    push(&mut s, 1, &finished);
    s.set_in_flight(Some("working".into()));
    let n1_chars: usize = (0..6)
        .map(|_| read(&s, Selector::Latest { n: 1 }, budget).chars)
        .sum();
    let mut cursor = s.start_cursor();
    let mut since_chars = 0;
    for _ in 0..6 {
        let window = since(&s, &cursor, budget);
        since_chars += window.chars;
        cursor = window.next.clone().expect("since cursor");
    }
    assert!(
        n1_chars > 6 * 2500 && since_chars < 2500 + 6 * 200,
        "{n1_chars} vs {since_chars}"
    );
}

// ---------------------------------------------------------------------------------------------
// One test per requirement id
// ---------------------------------------------------------------------------------------------

fn busy_child() -> Transcript {
    let mut c = child("c");
    for seq in 1..=3 {
        push(&mut c, seq, &format!("turn {seq} text ").repeat(4));
    }
    c.set_in_flight(Some("partial output ".repeat(5)));
    c.open_request(RequestId(1), "build the model")
        .expect("new");
    c.open_request(RequestId(2), "write the spec").expect("new");
    c.terminate_request(RequestId(2), "write the spec: done")
        .expect("open");
    c
}

#[test]
fn r1_one_budget_bounds_framing_turns_in_flight_and_requests_together() {
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
        for max_chars in 0..700 {
            let mut request = ReadRequest::new(selector.clone(), max_chars);
            request.requests = RequestHistory::All;
            match c.read(&request) {
                Ok(window) => {
                    answered += 1;
                    assert!(window.chars <= max_chars, "{} > {max_chars}", window.chars);
                    assert_eq!(window.chars, window.text.chars().count());
                }
                Err(error) => {
                    assert_eq!(error.kind(), ErrorKind::BudgetTooSmall);
                    assert!(
                        error
                            .needed_chars()
                            .is_some_and(|needed| needed > max_chars)
                    );
                }
            }
        }
    }
    assert!(answered > 1000);
    // The pre-parkline meaning (max_chars bounds turns only) would have given more: with a
    // budget that the turns alone fill, the requests and in-flight part are left out here.
    let window = since(&c, &c.start_cursor(), 300);
    assert!(window.chars <= 300);
    assert!(window.requests_omitted > 0 || window.in_flight != InFlight::Whole { chars: 75 });
}

#[test]
fn r2_a_read_at_the_end_of_a_long_history_returns_only_what_follows_the_cursor() {
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

#[test]
fn r3_what_did_not_fit_is_reported_by_count_and_turn_id_in_allocation_order() {
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
    // Turns come before the in-flight part and the requests: what is left is given to the
    // in-flight part (its newest characters), and the request that no longer fits is reported.
    assert!(matches!(window.in_flight, InFlight::Cut { total: 75, .. }));
    assert!(window.text.contains(", 1 requests omitted;"));
    // With a little less room, the in-flight part is left out and reported too.
    let tighter = (250..330)
        .filter_map(|max_chars| {
            c.read(&ReadRequest::new(
                Selector::Since(c.start_cursor()),
                max_chars,
            ))
            .ok()
        })
        .find(|w| seqs(w) == [1] && w.in_flight == InFlight::Omitted { total: 75 })
        .expect("a budget with room for one turn but not the in-flight marker");
    assert!(
        tighter
            .text
            .contains(", in-flight omitted, 1 requests omitted;")
    );
    // With more room the in-flight part comes next, then the open request.
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
        .filter_map(|max_chars| {
            c.read(&ReadRequest::new(Selector::Latest { n: 3 }, max_chars))
                .ok()
        })
        .find(|w| !w.whole.is_empty())
        .expect("a budget with room for one turn");
    assert_eq!(seqs(&latest), [3]);
    assert_eq!(latest.omitted.count, 2);
    assert!(latest.text.contains("2 omitted (turn:t1 to turn:t2)"));
}

#[test]
fn r4_since_returns_only_the_turns_after_the_cursor_plus_in_flight_and_a_next_cursor() {
    let c = busy_child();
    let first = since(&c, &c.start_cursor(), 2000);
    assert_eq!(seqs(&first), [1, 2, 3]);
    let next = first.next.clone().expect("cursor");
    assert_eq!(next.seq(), TurnSeq(3));
    let rest = since(&c, &next, 2000);
    assert!(rest.whole.is_empty());
    // R15: the caller has the in-flight part already; nothing of it is new.
    assert_eq!(
        rest.in_flight,
        InFlight::New {
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
        c.set_in_flight(Some("y".repeat(size)));
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
    let sizes = [3, 40, 250, 7, 0, 500, 60, 61, 2, 130];
    for budget in [260, 300, 420, 900] {
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

#[test]
fn r9_reads_have_no_side_effects_and_a_collected_turn_is_not_consumed() {
    let c = busy_child();
    let request = ReadRequest::new(Selector::Since(c.start_cursor()), 500);
    let first = c.read(&request).expect("fits");
    let again = c.read(&request).expect("fits");
    assert_eq!(first, again);
    // Turn 1 was collected by the since read; n:3 and turn:t1 still return it.
    let latest = read(&c, Selector::Latest { n: 3 }, 2000);
    assert_eq!(seqs(&latest), [1, 2, 3]);
    let exact = read(
        &c,
        Selector::Turn {
            id: turn_id("t1"),
            offset: 0,
        },
        2000,
    );
    assert_eq!(seqs(&exact), [1]);
}

#[test]
fn r10_the_in_flight_part_is_cut_to_its_newest_characters_and_never_moves_the_cursor() {
    let mut c = child("c");
    push(&mut c, 1, "done");
    let partial: String = (0..400)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    c.set_in_flight(Some(partial.clone()));
    let start = c.start_cursor();
    let window = since(&c, &start, 300);
    let InFlight::Cut { shown, total } = window.in_flight else {
        panic!("in-flight not cut: {:?}", window.in_flight);
    };
    assert_eq!(total, 400);
    let tail: String = partial.chars().skip(400 - shown).collect();
    assert!(
        window
            .text
            .contains(&format!("[in-flight: last {shown} of 400 chars]\n{tail}\n"))
    );
    assert_eq!(
        window.next.as_ref().map(|cursor| cursor.seq()),
        Some(TurnSeq(1))
    );
    let after = since(&c, &window.next.clone().expect("cursor"), 300);
    assert_eq!(after.next, window.next, "in-flight never moves the cursor");
}

/// R15 (with R4): a `since` read sends only the new suffix of an in-flight part that only grew,
/// the whole part marked replaced when it changed otherwise, and the whole part as new after
/// another turn completed.
#[test]
fn r4_since_in_flight_suffix() {
    let mut c = child("c");
    push(&mut c, 1, "done");
    c.set_in_flight(Some("step 1".into()));
    let first = since(&c, &c.start_cursor(), 2000);
    assert_eq!(first.in_flight, InFlight::Whole { chars: 6 });
    let cursor = first.next.clone().expect("cursor");
    assert_eq!(cursor.in_flight_seen(), Some(6));

    c.set_in_flight(Some("step 1, step 2".into()));
    let grown = since(&c, &cursor, 2000);
    assert_eq!(
        grown.in_flight,
        InFlight::New {
            from: 6,
            seen: 6,
            total: 14
        }
    );
    assert!(
        grown
            .text
            .contains("[in-flight: chars 6..14 of 14]\n, step 2\n")
    );
    assert!(!grown.text.contains("step 1"), "{}", grown.text);
    let cursor = grown.next.clone().expect("cursor");
    assert_eq!(cursor.in_flight_seen(), Some(14));

    // Under a small budget only the newest of the new characters fit; the rest is not resent.
    c.set_in_flight(Some(format!("step 1, step 2{}", "x".repeat(500))));
    let cut = since(&c, &cursor, 200);
    let InFlight::New { from, seen, total } = cut.in_flight else {
        panic!("{:?}", cut.in_flight);
    };
    assert_eq!((seen, total), (14, 514));
    assert!(from > seen && cut.chars <= 200);

    // Replaced, not grown: the same length, another text.
    c.set_in_flight(Some("step 9, step 8".into()));
    let replaced = since(&c, &cursor, 2000);
    assert_eq!(
        replaced.in_flight,
        InFlight::Replaced {
            shown: 14,
            total: 14
        }
    );
    assert!(
        replaced
            .text
            .contains("[in-flight, replaced: 14 chars]\nstep 9, step 8\n")
    );
    // Shorter than what was seen: replaced too.
    c.set_in_flight(Some("step".into()));
    assert!(matches!(
        since(&c, &cursor, 2000).in_flight,
        InFlight::Replaced { .. }
    ));

    // After another turn completes, the in-flight part is a new one, even with the same text.
    push(&mut c, 2, "step 1, step 2");
    c.set_in_flight(Some("step 1, step 2".into()));
    let after = since(&c, &cursor, 2000);
    assert_eq!(seqs(&after), [2]);
    assert_eq!(after.in_flight, InFlight::Whole { chars: 14 });

    // n:1 keeps its meaning: the in-flight part whole, whatever was seen.
    assert_eq!(
        read(&c, Selector::Latest { n: 1 }, 2000).in_flight,
        InFlight::Whole { chars: 14 }
    );
}

#[test]
fn r11_latest_is_the_may_repeat_read() {
    let mut c = child("c");
    push(&mut c, 1, "one");
    push(&mut c, 2, "two");
    let one = read(&c, Selector::Latest { n: 1 }, 500);
    assert_eq!(seqs(&one), [2]);
    assert_eq!(read(&c, Selector::Latest { n: 1 }, 500), one);
    assert_eq!(seqs(&read(&c, Selector::Latest { n: 5 }, 500)), [1, 2]);
    assert!(read(&c, Selector::Latest { n: 0 }, 500).whole.is_empty());
    // Its cursor starts a since chain from the latest turn.
    let next = one.next.clone().expect("cursor");
    assert_eq!(next.seq(), TurnSeq(2));
    push(&mut c, 3, "three");
    assert_eq!(seqs(&since(&c, &next, 500)), [3]);
}

#[test]
fn r12_turn_reads_locate_exactly_and_do_not_avoid_repeats() {
    let mut c = child("c");
    push(&mut c, 1, "héllo wörld");
    let selector = Selector::Turn {
        id: turn_id("t1"),
        offset: 6,
    };
    let window = read(&c, selector.clone(), 500);
    assert_eq!(window.next, None, "turn reads give no cursor");
    let excerpt = window.excerpt.clone().expect("from an offset: an excerpt");
    assert_eq!((excerpt.from, excerpt.to, excerpt.total), (6, 11, 11));
    assert!(
        window
            .text
            .contains("[turn t1 seq 1: excerpt chars 6..11 of 11]\nwörld\n")
    );
    assert_eq!(read(&c, selector, 500), window, "the same turn again");
    let unknown = c.read(&ReadRequest::new(
        Selector::Turn {
            id: turn_id("t9"),
            offset: 0,
        },
        500,
    ));
    assert_eq!(
        unknown.map_err(|e| e.kind()).err(),
        Some(ErrorKind::UnknownTurn)
    );
    let past = c.read(&ReadRequest::new(
        Selector::Turn {
            id: turn_id("t1"),
            offset: 12,
        },
        500,
    ));
    assert_eq!(
        past.map_err(|e| e.kind()).err(),
        Some(ErrorKind::OffsetOutOfRange)
    );
}

#[test]
fn r13_terminated_requests_are_attached_only_on_demand() {
    let c = busy_child();
    let default = read(&c, Selector::Latest { n: 1 }, 2000);
    assert!(default.text.contains("[request 1 open] build the model\n"));
    assert!(!default.text.contains("[request 2"));
    assert_eq!((default.requests_shown, default.requests_omitted), (1, 0));
    let mut all = ReadRequest::new(Selector::Latest { n: 1 }, 2000);
    all.requests = RequestHistory::All;
    let history = c.read(&all).expect("fits");
    assert!(history.text.contains(
        "[request 1 open] build the model\n[request 2 terminated] write the spec: done\n"
    ));
    all.requests = RequestHistory::None;
    let none = c.read(&all).expect("fits");
    assert!(!none.text.contains("[request"));
}

#[test]
fn r14_the_response_text_is_exactly_the_specified_format() {
    let mut c = child("s972-1");
    push(&mut c, 1, "first");
    push(&mut c, 2, "second");
    c.set_in_flight(Some("third, half done".into()));
    c.open_request(RequestId(7), "review").expect("new");
    let start = c.start_cursor();
    let window = since(&c, &start, 2000);
    let next = window.next.clone().expect("cursor");
    let expected = format!(
        "[parkline read s972-1 since:{start}]\n\
         [turn t1 seq 1: 5 chars]\nfirst\n\
         [turn t2 seq 2: 6 chars]\nsecond\n\
         [in-flight: 16 chars]\nthird, half done\n\
         [request 7 open] review\n\
         [parkline read end: 2 whole, 0 excerpt, 0 omitted; next since:{next}]\n"
    );
    assert_eq!(window.text, expected);
    assert!(start.to_string().starts_with("v2.0.0."));
    assert!(start.to_string().ends_with(".s972-1"));
    // A turn read ends with "next none".
    let exact = read(
        &c,
        Selector::Turn {
            id: turn_id("t2"),
            offset: 0,
        },
        2000,
    );
    assert_eq!(
        exact.text,
        "[parkline read s972-1 turn:t2 offset 0]\n[turn t2 seq 2: 6 chars]\nsecond\n\
         [request 7 open] review\n[parkline read end: 1 whole, 0 excerpt, 0 omitted; next none]\n"
    );
}

/// R16: a caller that holds turns up to a known one resumes with `since:turn:<id>` (or
/// `Cursor::after`), and gets exactly what a cursor there would give.
#[test]
fn r16_since_turn_resumes_after_a_known_turn() {
    let c = busy_child();
    let resumed = read(&c, Selector::SinceTurn(turn_id("t2")), 2000);
    assert!(
        resumed
            .text
            .starts_with("[parkline read c since:turn:t2]\n")
    );
    assert_eq!(seqs(&resumed), [3]);
    let cursor = c.cursor_after(&turn_id("t2")).expect("known turn");
    assert_eq!(cursor, Cursor::after(c.child(), TurnSeq(2)));
    let by_cursor = since(&c, &cursor, 2000);
    assert_eq!(
        (&by_cursor.whole, &by_cursor.next, by_cursor.in_flight),
        (&resumed.whole, &resumed.next, resumed.in_flight)
    );
    let unknown = c
        .read(&ReadRequest::new(Selector::SinceTurn(turn_id("t9")), 2000))
        .expect_err("unknown turn");
    assert_eq!(unknown.kind(), ErrorKind::UnknownTurn);
    assert!(unknown.to_string().contains(&c.start_cursor().to_string()));
}

/// R16: a cursor the daemon keeps for the parent round-trips as text and through serde, and
/// reads the same after a restart that rebuilds the transcript from the same turns.
#[test]
fn r16_a_kept_cursor_survives_serde_and_a_rebuild() {
    let build = || {
        let mut c = busy_child();
        push(&mut c, 4, &"long turn ".repeat(40));
        c
    };
    let before = build();
    let first = since(&before, &before.start_cursor(), 300);
    let kept = first.next.clone().expect("cursor");
    let text = kept.to_string();
    assert_eq!(text.parse::<Cursor>().expect("parses"), kept);
    let json = serde_json::to_string(&kept).expect("serialises");
    assert_eq!(json, format!("{text:?}"));
    let back: Cursor = serde_json::from_str(&json).expect("deserialises");
    assert_eq!(back, kept);
    assert!(serde_json::from_str::<Cursor>("\"v2.0.0.00000000.c\"").is_err());
    // The daemon restarts and rebuilds the transcript from the same turns.
    let after = build();
    assert_eq!(since(&after, &back, 300), since(&before, &kept, 300));
}

/// R7, section 5.2: a transcript rebuilt shorter turns a cursor past its end into
/// `CursorAhead`, and the error names the last turn and the cursor that resumes from it.
#[test]
fn r7_rebuilt_shorter_cursor_ahead_names_the_resume() {
    let mut long = child("c");
    for seq in 1..=5 {
        push(&mut long, seq, &format!("turn {seq}"));
    }
    let at_end = since(&long, &long.start_cursor(), 2000)
        .next
        .expect("cursor");
    let mut short = child("c");
    for seq in 1..=3 {
        push(&mut short, seq, &format!("turn {seq}"));
    }
    let error = short
        .read(&ReadRequest::new(Selector::Since(at_end.clone()), 2000))
        .expect_err("ahead");
    assert_eq!(error.kind(), ErrorKind::CursorAhead);
    let text = error.to_string();
    assert!(text.contains("(turn t3 seq 3)"), "{text}");
    let resume = text
        .split("resume with since:")
        .nth(1)
        .expect("names a resume cursor");
    let resume: Cursor = resume.parse().expect("the named cursor parses");
    assert_eq!(resume.seq(), TurnSeq(3));
    push(&mut short, 6, "after the restart");
    assert_eq!(seqs(&since(&short, &resume, 2000)), [6]);
    // An empty rebuilt transcript names the start cursor.
    let empty = child("c")
        .read(&ReadRequest::new(Selector::Since(at_end), 2000))
        .expect_err("ahead")
        .to_string();
    assert!(empty.contains("(no turn)"), "{empty}");
    assert!(empty.ends_with(&format!("resume with since:{}", child("c").start_cursor())));
}

#[test]
fn budget_too_small_says_the_smallest_budget_that_works() {
    let c = busy_child();
    for selector in [
        Selector::Since(c.start_cursor()),
        Selector::Latest { n: 2 },
        Selector::Turn {
            id: turn_id("t3"),
            offset: 3,
        },
    ] {
        let error = c
            .read(&ReadRequest::new(selector.clone(), 5))
            .expect_err("5 chars hold nothing");
        let needed = error.needed_chars().expect("needed");
        assert!(c.read(&ReadRequest::new(selector.clone(), needed)).is_ok());
        assert!(c.read(&ReadRequest::new(selector, needed - 1)).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Differential: the crate against the reference
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn differential_reads_match_the_reference(ops in read_harness::read_ops_strategy(60)) {
        let report = check(&ops).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(report.steps, ops.len());
    }
}

/// The generated scenarios do reach the interesting cases (so the differential is not vacuous).
#[test]
fn differential_scenarios_reach_excerpts_omissions_cuts_and_errors() {
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    let mut total = read_harness::ReadReport::default();
    for _ in 0..64 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let report = check(&ops).expect("no divergence");
        total.windows += report.windows;
        total.errors += report.errors;
        total.excerpts += report.excerpts;
        total.omissions += report.omissions;
        total.in_flight_cuts += report.in_flight_cuts;
        total.followed_turns += report.followed_turns;
        total.in_flight_new += report.in_flight_new;
        total.in_flight_replaced += report.in_flight_replaced;
    }
    assert!(total.windows > 100, "{total:?}");
    assert!(total.errors > 20, "{total:?}");
    assert!(total.excerpts > 10, "{total:?}");
    assert!(total.omissions > 10, "{total:?}");
    assert!(total.in_flight_cuts > 10, "{total:?}");
    assert!(total.followed_turns > 20, "{total:?}");
    assert!(total.in_flight_new > 10, "{total:?}");
    assert!(total.in_flight_replaced > 5, "{total:?}");
}

/// A scenario every known-bad read switch gets wrong: a turn larger than the budget, then two
/// short turns that do not fit one read, with an in-flight part and an open request.
fn known_bad_scenario() -> Vec<ReadOp> {
    vec![
        ReadOp::OpenRequest { len: 5 },
        ReadOp::Grow { len: 60, letter: 0 },
        ReadOp::Grow { len: 60, letter: 1 },
        ReadOp::Grow { len: 60, letter: 2 },
        ReadOp::Complete { gap: 0 },
        ReadOp::Grow { len: 30, letter: 0 },
        ReadOp::Complete { gap: 0 },
        ReadOp::Grow { len: 30, letter: 0 },
        ReadOp::Complete { gap: 0 },
        ReadOp::Grow { len: 50, letter: 3 },
        ReadOp::ReadSince {
            budget: 330,
            history: 0,
        },
        ReadOp::ReadSince {
            budget: 330,
            history: 0,
        },
        ReadOp::ReadSince {
            budget: 330,
            history: 0,
        },
    ]
}

const KNOWN_BAD: [(KnownBad, &str); 3] = [
    (KnownBad::ExcerptWithoutReference, "R14"),
    (KnownBad::AdvanceBeforeBuild, "R14"),
    (KnownBad::TurnsOnlyBudget, "R14"),
];

#[test]
fn the_known_bad_scenario_passes_on_the_correct_crate() {
    let report = check(&known_bad_scenario()).expect("correct crate");
    assert!(report.excerpts >= 1 && report.omissions >= 1, "{report:?}");
}

#[test]
fn every_known_bad_read_switch_is_caught_by_the_differential_check() {
    for (bad, id) in KNOWN_BAD {
        let divergence = check_with(&known_bad_scenario(), Some(bad)).expect_err("caught");
        assert!(divergence.message.starts_with(id), "{bad:?}: {divergence}");
    }
}

/// The same switches found by the random search alone, with no hand-written scenario.
#[test]
fn every_known_bad_read_switch_is_found_by_the_proptest_search() {
    for (bad, _) in KNOWN_BAD {
        let mut runner = TestRunner::new(ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let result = runner.run(&read_harness::read_ops_strategy(60), |ops| {
            check_with(&ops, Some(bad))
                .map(drop)
                .map_err(|d| TestCaseError::fail(d.to_string()))
        });
        assert!(result.is_err(), "{bad:?} not found in 512 cases");
    }
}

/// A since read through the known-bad wrapper `bad`.
fn since_as(transcript: &Transcript, bad: KnownBad, cursor: &Cursor, max_chars: usize) -> Window {
    let request = ReadRequest::new(Selector::Since(cursor.clone()), max_chars);
    read_as(transcript, Some(bad), &request).expect("the read fits")
}

/// The crate's own checks on the followed chain catch a broken crate even where the texts
/// are not compared: the wrappers violate R5 or R1 on the answers alone, and the same reads
/// without them do not.
#[test]
fn the_known_bad_switches_break_their_requirement_on_the_crates_answers_alone() {
    // advance-before-build: the cursor passes turns that did not fit.
    let mut c = child("c");
    for seq in 1..=3 {
        push(&mut c, seq, &"z".repeat(60));
    }
    let sound = since(&c, &c.start_cursor(), 260);
    assert!(sound.next.as_ref().map(Cursor::seq) < Some(TurnSeq(3)));
    let window = since_as(&c, KnownBad::AdvanceBeforeBuild, &c.start_cursor(), 260);
    assert!(window.omitted.count > 0);
    assert_eq!(
        window.next.as_ref().map(|cursor| cursor.seq()),
        Some(TurnSeq(3)),
        "R5 broken"
    );
    // excerpt-without-reference: the cut turn has no reference to its rest.
    let mut c = child("c");
    push(&mut c, 1, &"z".repeat(1000));
    let sound = since(&c, &c.start_cursor(), 300);
    assert!(sound.excerpt.is_some() && sound.text.contains("rest at turn:t1"));
    let window = since_as(
        &c,
        KnownBad::ExcerptWithoutReference,
        &c.start_cursor(),
        300,
    );
    assert!(
        window.excerpt.is_none() && !window.text.contains("rest at turn:t1"),
        "R8 broken"
    );
    // turns-only-budget: the text is longer than max_chars.
    let c = busy_child();
    assert!(since(&c, &c.start_cursor(), 300).chars <= 300);
    let window = since_as(&c, KnownBad::TurnsOnlyBudget, &c.start_cursor(), 300);
    assert!(window.chars > 300, "R1 broken");
}

// ---------------------------------------------------------------------------------------------
// The spec's worked examples are the crate's output
// ---------------------------------------------------------------------------------------------

/// The fenced block after `<!-- read-example: {name} -->` in `spec/read.md`.
fn spec_example(spec: &str, name: &str) -> String {
    let marker = format!("<!-- read-example: {name} -->\n```text\n");
    let start = spec
        .find(&marker)
        .unwrap_or_else(|| panic!("no example {name}"))
        + marker.len();
    let end = start + spec[start..].find("```").expect("closed block");
    spec[start..end].to_string()
}

/// The worked examples of `spec/read.md` section 7 as the crate answers them: (name, text).
fn crate_examples() -> Vec<(&'static str, String)> {
    let mut examples = Vec::new();
    let mut small = child("s972-1");
    push(&mut small, 1, "first");
    push(&mut small, 2, "second");
    small.set_in_flight(Some("third, half done".into()));
    small.open_request(RequestId(7), "review").expect("new");
    let whole = since(&small, &small.start_cursor(), 2000);
    examples.push(("whole", whole.text));

    let mut c = child("s972-1");
    push(&mut c, 1, &"0123456789".repeat(30));
    push(&mut c, 2, "short answer");
    push(&mut c, 3, "another answer");
    c.set_in_flight(Some("working on step 4 of 9".into()));
    c.open_request(RequestId(7), "review").expect("new");
    let oversized = since(&c, &c.start_cursor(), 300);
    examples.push(("oversized", oversized.text.clone()));
    let next = oversized.next.clone().expect("cursor");
    let continued = since(&c, &next, 300);
    examples.push(("continue", continued.text.clone()));
    let again = since(&c, &continued.next.clone().expect("cursor"), 300);
    examples.push(("nothing-new", again.text.clone()));
    c.set_in_flight(Some("working on step 4 of 9; step 5 of 9".into()));
    let grown = since(&c, &again.next.clone().expect("cursor"), 300);
    examples.push(("grown", grown.text.clone()));
    c.set_in_flight(Some("step 4 failed, retrying".into()));
    let replaced = since(&c, &grown.next.clone().expect("cursor"), 300);
    examples.push(("replaced", replaced.text));
    c.set_in_flight(Some("working on step 4 of 9".into()));
    let rest = oversized.excerpt.and_then(|e| e.rest()).expect("rest");
    examples.push(("rest", read(&c, rest, 300).text));
    examples.push(("latest", read(&c, Selector::Latest { n: 1 }, 300).text));
    let error = c
        .read(&ReadRequest::new(Selector::Latest { n: 1 }, 100))
        .expect_err("too small");
    examples.push(("too-small", format!("{error}\n")));
    examples
}

/// R14: every worked example of `spec/read.md` section 7 is exactly what the crate answers.
/// With `PARKLINE_WRITE_SPEC=1` the examples in the spec are rewritten from the crate instead
/// (then review the diff: the spec is normative, the crate is not the authority).
#[test]
fn r14_the_spec_examples_are_the_crates_answers() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/read.md");
    let mut spec = std::fs::read_to_string(path).expect("spec/read.md");
    let write = std::env::var("PARKLINE_WRITE_SPEC").is_ok_and(|v| v == "1");
    for (name, text) in crate_examples() {
        let old = spec_example(&spec, name);
        if write {
            let marker = format!("<!-- read-example: {name} -->\n```text\n");
            spec = spec.replacen(&format!("{marker}{old}"), &format!("{marker}{text}"), 1);
        } else {
            assert_eq!(text, old, "example {name}");
        }
    }
    if write {
        std::fs::write(path, spec).expect("write spec/read.md");
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzz corpus and artifacts of `read_windows`, replayed on stable
// ---------------------------------------------------------------------------------------------

fn read_fuzz_files() -> Vec<std::path::PathBuf> {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for folder in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(folder).join("read_windows")) else {
            continue;
        };
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

#[test]
fn fuzz_read_windows_corpus_and_artifacts_replay() {
    for file in read_fuzz_files() {
        let bytes = std::fs::read(&file).expect("read corpus file");
        if let Some(ops) = decode_read_ops(&bytes) {
            check(&ops).unwrap_or_else(|d| panic!("{}: {d}", file.display()));
        }
    }
}

/// The encoder of seed corpora is the exact inverse of the fuzz target's decoding.
#[test]
fn encoded_read_ops_decode_to_the_same_ops() {
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    for _ in 0..200 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let bytes = read_harness::encode_read_ops(&ops);
        assert_eq!(decode_read_ops(&bytes), Some(ops));
    }
}

/// The seed corpus of `read_windows`: the known-bad scenario and generated scenarios that reach
/// an excerpt and an omission, encoded as fuzz input. Written to `fuzz/corpus/read_windows` when
/// `PARKLINE_WRITE_CORPUS=1`; always checked: the correct crate passes every seed and each
/// known-bad switch is caught by at least one.
#[test]
fn write_read_seed_corpus() {
    let write = std::env::var("PARKLINE_WRITE_CORPUS").is_ok_and(|v| v == "1");
    let mut seeds: Vec<(String, Vec<ReadOp>)> = vec![
        ("known_bad_scenario".to_string(), known_bad_scenario()),
        // R7: a cursor of a child whose id collides with this child's under CRC-32.
        (
            "r7_colliding_ids".to_string(),
            vec![
                ReadOp::Grow { len: 5, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadForeign { seq: 0, child: 1 },
                ReadOp::ReadForeign { seq: 1, child: 2 },
            ],
        ),
        // R7: a damaged cursor of 4,000 chars; the error echoes at most ECHO_CHARS_MAX of them.
        (
            "r7_error_echo".to_string(),
            vec![ReadOp::ReadDamaged {
                position: 0,
                replacement: 0,
                pad: 4000,
            }],
        ),
        // R15: an in-flight part that grows between reads, then is rewritten.
        (
            "r15_in_flight".to_string(),
            vec![
                ReadOp::Grow { len: 10, letter: 0 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::Grow { len: 5, letter: 1 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
                ReadOp::Rewrite { len: 15, letter: 3 },
                ReadOp::ReadSince {
                    budget: 520,
                    history: 0,
                },
            ],
        ),
        // R8: a follower that retries at needed_chars, on a turn larger than any budget.
        (
            "r8_needed_chars".to_string(),
            vec![
                ReadOp::Grow { len: 43, letter: 0 },
                ReadOp::Complete { gap: 0 },
                ReadOp::ReadAtNeeded { history: 0 },
            ],
        ),
    ];
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    while seeds.len() < 10 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let report = check(&ops).expect("correct crate");
        if report.excerpts > 0 && report.omissions > 0 && report.errors > 0 {
            seeds.push((format!("seed_{}", seeds.len() - 4), ops));
        }
    }
    for bad in KnownBad::READ {
        let caught = seeds
            .iter()
            .any(|(_, ops)| check_with(ops, Some(bad)).is_err());
        assert!(caught, "{bad}: no seed diverges");
    }
    if write {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join("corpus")
            .join("read_windows");
        std::fs::create_dir_all(&dir).expect("corpus dir");
        for (name, ops) in &seeds {
            let bytes = read_harness::encode_read_ops(ops);
            std::fs::write(dir.join(name), bytes).expect("write corpus file");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Exhaustive: every reachable state of the read model, every read, crate against reference
// ---------------------------------------------------------------------------------------------

/// Every transcript the read model reaches at its default bounds.
fn model_transcripts() -> Vec<parkline_model::read::RefTranscript> {
    use parkline_model::read::ReadModel;
    use stateright::Model;

    let model = ReadModel::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut transcripts = Vec::new();
    let mut queue: std::collections::VecDeque<_> = model.init_states().into();
    let mut states = BTreeSet::new();
    while let Some(state) = queue.pop_front() {
        if !states.insert(format!("{state:?}")) {
            continue;
        }
        if seen.insert(format!("{:?}", state.transcript)) {
            transcripts.push(state.transcript.clone());
        }
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        for action in actions {
            if let Some(next) = model.next_state(&state, action) {
                queue.push_back(next);
            }
        }
    }
    assert_eq!(states.len(), parkline_model::read::DEFAULT_UNIQUE_STATES);
    transcripts
}

/// Every read of every model transcript on the crate (with `known_bad`), compared with the
/// reference: (transcripts, reads, reads answered), or the first divergence.
fn exhaustive(known_bad: Option<KnownBad>) -> Result<(usize, usize, usize), String> {
    use parkline_model::read::{RefHistory, RefReadRequest, RefSelector, cursor_text};

    let full = std::env::var("PARKLINE_READ_EXHAUSTIVE").is_ok_and(|v| v == "full");
    let budgets: Vec<usize> = if full {
        (100..=400).step_by(10).collect()
    } else {
        vec![0, 180, 240, 270, 310]
    };
    let transcripts = model_transcripts();
    let (mut reads, mut answered) = (0, 0);
    for t in &transcripts {
        let transcript = read_harness::transcript_of(t)?;
        let latest = t.turns.last().map_or(0, |turn| turn.seq);
        let mut selectors: Vec<RefSelector> = (0..=latest + 1)
            .map(|seq| RefSelector::Since(cursor_text(&t.child, seq)))
            .collect();
        selectors.push(RefSelector::Since(cursor_text("other", 0)));
        selectors.extend((0..=3).map(RefSelector::Latest));
        for turn in &t.turns {
            for offset in [0, 1, turn.text.chars().count()] {
                selectors.push(RefSelector::Turn {
                    id: turn.id.clone(),
                    offset,
                });
            }
        }
        for selector in &selectors {
            for &max_chars in &budgets {
                for history in [RefHistory::Open, RefHistory::All, RefHistory::None] {
                    let request = RefReadRequest {
                        selector: selector.clone(),
                        max_chars,
                        history,
                    };
                    let window =
                        read_harness::compare_read_with(&transcript, known_bad, t, &request)
                            .map_err(|d| format!("{t:?}\n{request:?}\n{d}"))?;
                    reads += 1;
                    answered += usize::from(window.is_some());
                }
            }
        }
    }
    Ok((transcripts.len(), reads, answered))
}

/// Every transcript the read model reaches at its default bounds (`DEFAULT_UNIQUE_STATES`), rebuilt in the
/// crate, answers every read exactly as the reference: each cursor from the start to past the
/// end, a foreign cursor, `n:0..=3`, `turn:` of each turn at offsets 0, 1 and its end, each
/// request history, over budgets around the framing (every 10 chars from 100 to 400 with
/// `PARKLINE_READ_EXHAUSTIVE=full`).
#[test]
fn exhaustive_every_model_transcript_every_read_matches_the_reference() {
    let (transcripts, reads, answered) = exhaustive(None).unwrap_or_else(|d| panic!("{d}"));
    println!("{transcripts} transcripts, {reads} reads, {answered} answered");
    assert!(transcripts > 50, "{transcripts}");
    assert!(answered * 3 > reads, "{answered} of {reads}");
}

/// The same exhaustive replay catches each known-bad read switch.
#[test]
fn exhaustive_replay_catches_every_known_bad_read_switch() {
    for bad in KnownBad::READ {
        assert!(exhaustive(Some(bad)).is_err(), "{bad} not caught");
    }
}
