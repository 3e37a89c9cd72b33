//! Unit tests of the read reference and model: the pinned state count, every known-bad variant
//! caught for its property, the cursor text, and the exact texts of the spec's examples.

use std::collections::BTreeSet;

use super::model::resumed_elsewhere;
use super::*;
use crate::test_support::state_after;
use stateright::{Checker, HasDiscoveries, Model};

const ALWAYS: [&str; 7] = [R1, R5, R6, R7, R8, R15, R16];
const SOMETIMES: [&str; 7] = [
    SOMETIMES_OVERSIZED,
    SOMETIMES_PARTIAL_CUT,
    SOMETIMES_OMITTED,
    SOMETIMES_NOTHING_NEW,
    SOMETIMES_PARTIAL_NEW,
    SOMETIMES_PARTIAL_REPLACED,
    SOMETIMES_DIVERGED,
];

#[test]
fn correct_model_holds_every_property_at_default_bounds() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# A cursor the crate handed out for a child MUST be accepted by every later read of that child
    //# while its transcript only grows (section 5.2 says what happens when it is rebuilt shorter).
    let bfs = ReadModel::default().checker().spawn_bfs().join();
    let dfs = ReadModel::default().checker().spawn_dfs().join();
    assert_eq!(bfs.unique_state_count(), DEFAULT_UNIQUE_STATES);
    assert_eq!(dfs.unique_state_count(), DEFAULT_UNIQUE_STATES);
    for name in ALWAYS {
        assert!(bfs.discovery(name).is_none(), "{name} fails");
    }
    // The interesting paths are really reached, so the always properties are not vacuous.
    for name in SOMETIMES {
        assert!(bfs.discovery(name).is_some(), "{name} never happens");
    }
}

/// Each search stops at its variant's first counterexample, as the ops model's does: the
/// question is whether the property catches it, which the first one answers. The correct model's
/// whole search is `correct_model_holds_every_property_at_default_bounds`.
#[test]
fn every_known_bad_variant_is_caught_for_its_property() {
    for variant in ReadVariant::ALL {
        let Some(name) = variant.breaks() else {
            assert_eq!(variant, ReadVariant::Correct);
            continue;
        };
        let checker = ReadModel::new(ReadBounds::default(), variant)
            .checker()
            .finish_when(HasDiscoveries::AnyOf([name].into()))
            .spawn_bfs()
            .join();
        assert!(
            checker.discovery(name).is_some(),
            "{variant:?}: no counterexample for {name:?}"
        );
    }
}

#[test]
fn budget_applied_to_turns_only_is_caught_for_r1_and_nothing_else_of_r5_r6() {
    let checker = ReadModel::new(ReadBounds::default(), ReadVariant::TurnsOnlyBudget)
        .checker()
        .spawn_bfs()
        .join();
    assert!(checker.discovery(R1).is_some());
    assert!(checker.discovery(R5).is_none());
    assert!(checker.discovery(R6).is_none());
}

#[test]
fn crc32_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn cursor_text_round_trips_and_rejects_every_single_character_change() {
    let text = after_t("s980-1", 0x2a);
    assert_eq!(
        parse_cursor(&text),
        Ok(RefCursor::new("s980-1", 0x2a, Some("t42"), None))
    );
    for (i, c) in text.char_indices() {
        for replacement in ['0', '1', 'f', '.', 'x'] {
            if replacement == c {
                continue;
            }
            let mut damaged = text.clone();
            damaged.replace_range(i..i + 1, &replacement.to_string());
            assert_eq!(
                parse_cursor(&damaged),
                Err(RefReadError::CursorDamaged),
                "{damaged}"
            );
        }
    }
    assert_eq!(parse_cursor(&text[1..]), Err(RefReadError::CursorDamaged));
    assert_eq!(
        parse_cursor(&format!("{text}0")),
        Err(RefReadError::CursorDamaged)
    );
}

/// R7: two ids whose CRC-32 collide (the tag of the retired v1 cursor) are still told apart.
#[test]
fn r7_colliding_ids_other_child() {
    assert_eq!(crc32(b"s61947-8"), crc32(b"s590020-12"));
    let mut t = transcript(&["one"], None);
    t.child = "s590020-12".into();
    let request = RefReadRequest {
        selector: RefSelector::Since(after_t("s61947-8", 0)),
        chars_max: 1000,
        history: RefHistory::Open,
    };
    assert_eq!(read(&t, &request), Err(RefReadError::CursorOtherChild));
    let retired = RefReadRequest {
        selector: RefSelector::Since(v1_cursor_text("s590020-12", 0)),
        ..request
    };
    assert_eq!(read(&t, &retired), Err(RefReadError::CursorRetired));
}

/// The cursor text of `child` after the turn `t<seq>` of [`transcript`] (the start at 0).
fn after_t(child: &str, seq: u64) -> String {
    let id = format!("t{seq}");
    cursor_text(child, seq, (seq > 0).then_some(id.as_str()))
}

fn transcript(turns: &[&str], partial: Option<&str>) -> RefTranscript {
    RefTranscript {
        child: "c".into(),
        turns: turns
            .iter()
            .enumerate()
            .map(|(i, text)| RefTurn {
                id: format!("t{}", i + 1),
                seq: i as u64 + 1,
                text: (*text).into(),
            })
            .collect(),
        partial: partial.map(String::from),
        requests: Vec::new(),
    }
}

fn since(seq: u64, chars_max: usize) -> RefReadRequest {
    RefReadRequest {
        selector: RefSelector::Since(after_t("c", seq)),
        chars_max,
        history: RefHistory::Open,
    }
}

#[test]
fn the_reference_answer_has_the_exact_text_of_the_spec() {
    let t = transcript(&["one", "two"], Some("wor"));
    let window = read(&t, &since(1, 1000)).expect("fits");
    let expected = format!(
        "[parkline read c since:{}]\n[turn t2 seq 2: 3 chars]\ntwo\n[in-flight: 3 chars]\nwor\n\
         [parkline read end: 1 whole, 0 excerpt, 0 omitted; next since:{}]\n",
        after_t("c", 1),
        cursor_text_of(&RefCursor::new(
            "c",
            2,
            Some("t2"),
            Some(RefSeen {
                after: 2,
                chars: 3,
                prefix: crc64(b"wor"),
            }),
        ))
    );
    assert_eq!(window.text, expected);
    assert_eq!(window.next, Some(2));
}

/// R15: with the cursor that saw `wor`, a grown part sends only its new characters, a
/// replaced one comes whole and marked, and one after another turn is new.
#[test]
fn r15_since_partial_suffix() {
    //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
    //= type=test
    //# - when the partial turn still starts with those `s` chars (same length, same CRC-64 of that
    //# prefix), the part only grew: the read MUST give only chars `s..total` (all of them if they
    //# fit, else their newest that fit), marked `chars <from>..<total> of <total>`, and never one
    //# of the first `s` again;
    //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
    //= type=test
    //# - otherwise the part was replaced: the read MUST give it as R10 does, marked `replaced`.
    let t = transcript(&["one", "two"], Some("wor"));
    let first = read(&t, &since(1, 1000)).expect("fits");
    let cursor = RefCursor::new("c", 2, Some("t2"), first.next_seen);
    let again = |partial: &str| {
        let t = transcript(&["one", "two"], Some(partial));
        let request = RefReadRequest {
            selector: RefSelector::Since(cursor_text_of(&cursor)),
            chars_max: 1000,
            history: RefHistory::Open,
        };
        read(&t, &request).expect("fits")
    };
    let grown = again("working");
    assert_eq!(
        grown.partial,
        RefPartial::New {
            from: 3,
            seen: 3,
            total: 7
        }
    );
    assert!(grown.text.contains("[in-flight: chars 3..7 of 7]\nking\n"));
    let replaced = again("done");
    assert_eq!(
        replaced.partial,
        RefPartial::Replaced { shown: 4, total: 4 }
    );
    assert!(
        replaced
            .text
            .contains("[in-flight, replaced: 4 chars]\ndone\n")
    );
    let variant = read_variant(
        &transcript(&["one", "two"], Some("working")),
        &RefReadRequest {
            selector: RefSelector::Since(cursor_text_of(&cursor)),
            chars_max: 1000,
            history: RefHistory::Open,
        },
        ReadVariant::ResendPartial,
    )
    .expect("fits");
    assert_eq!(variant.partial, RefPartial::Whole(7));
}

#[test]
fn the_reference_needed_budget_is_the_smallest_that_works() {
    let t = transcript(&[&"x".repeat(300)], Some("partial"));
    let Err(RefReadError::CharsMaxTooSmall { needed }) = read(&t, &since(0, 10)) else {
        panic!("10 chars cannot hold the framing");
    };
    assert!(read(&t, &since(0, needed)).is_ok());
    assert!(read(&t, &since(0, needed - 1)).is_err());
}

/// Reads of every kind over two transcripts: one with long turns, a partial turn and requests,
/// one with twelve short turns (ids of two and three characters) and a partial turn of three-digit
/// length. The candidates they try cover whole turns, excerpts with and without a rest, every
/// partial view, omissions (ten and more, first and last ids of different lengths) and requests.
fn fit_cases() -> Vec<(RefTranscript, RefReadRequest)> {
    let mut long = transcript(
        &["one", &"é😀 x".repeat(40), "three", &"y".repeat(120)],
        Some("working\n[on] it"),
    );
    long.requests = vec![
        RefRequest {
            id: 1,
            open: true,
            record: "request 1 ééé".into(),
        },
        RefRequest {
            id: 2,
            open: false,
            record: "request 2 done".into(),
        },
    ];
    let texts: Vec<String> = (1..=12).map(|n| format!("the text of turn {n}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut many = transcript(&texts, Some(&format!("work{}", "z".repeat(101))));
    many.requests = (1..=12)
        .map(|id| RefRequest {
            id,
            open: id % 3 != 0,
            record: format!("r{id}"),
        })
        .collect();
    let mut cases = Vec::new();
    for t in [long, many] {
        let latest = t.turns.last().map_or(0, |turn| turn.seq);
        let grown = RefCursor::new(
            "c",
            1,
            Some("t1"),
            Some(RefSeen {
                after: latest,
                chars: 4,
                prefix: crc64(b"work"),
            }),
        );
        let replaced = RefCursor {
            seen: Some(RefSeen {
                after: latest,
                chars: 4,
                prefix: crc64(b"nope"),
            }),
            ..grown.clone()
        };
        let selectors = [
            RefSelector::Since(after_t("c", 0)),
            RefSelector::Since(cursor_text_of(&grown)),
            RefSelector::Since(cursor_text_of(&replaced)),
            RefSelector::Latest(3),
            RefSelector::Latest(12),
            RefSelector::SinceTurn("t2".into()),
            RefSelector::Turn {
                id: "t2".into(),
                offset: 7,
            },
        ];
        for selector in selectors {
            for history in [RefHistory::Open, RefHistory::All, RefHistory::None] {
                for chars_max in (0..700).step_by(7) {
                    cases.push((
                        t.clone(),
                        RefReadRequest {
                            selector: selector.clone(),
                            chars_max,
                            history,
                        },
                    ));
                }
            }
        }
    }
    cases
}

#[test]
fn the_counted_fit_is_the_rendered_fit_on_every_candidate() {
    let mut answers = 0;
    for (t, request) in fit_cases() {
        let (checked, mismatch) = read_checking_fit(&t, &request);
        assert_eq!(mismatch, None, "{request:?}");
        assert_eq!(checked, read(&t, &request), "{request:?}");
        // R1 of the reference itself: every answer within its budget, its size its text's.
        if let Ok(window) = &checked {
            assert!(window.chars <= request.chars_max, "{request:?}");
            assert_eq!(window.chars, window.text.chars().count());
        }
        answers += usize::from(checked.is_ok());
    }
    // Not only refusals: most budgets above the framing give an answer.
    assert!(answers > 2000, "{answers} answers");
}

/// The known-bad variants count their windows as they render them too (the variant that
/// presents an excerpt as whole has its own marker to count), so each is caught for the
/// property it breaks, not for a miscounted fit.
#[test]
fn every_variant_counts_the_fit_it_renders() {
    use super::reference::{Measure, read_measured};
    let counted = Measure::Checked(|reader, answer| reader.length(answer));
    let cases = fit_cases();
    for variant in ReadVariant::ALL {
        for (t, request) in &cases {
            let (_, mismatch) = read_measured(t, request, variant, counted);
            assert_eq!(mismatch, None, "{variant:?} {request:?}");
        }
    }
}

/// The trailer of a window that holds an excerpt and omits the turns after it: the counts of each
/// kind, and the ids of the first and last omitted turn.
#[test]
fn an_excerpts_window_counts_it_apart_and_names_the_omitted_turns() {
    let t = transcript(&[&"x".repeat(300), "two", "three"], None);
    let window = read(&t, &since(0, 250)).expect("an excerpt fits");
    assert_eq!(window.excerpt.map(|e| e.seq), Some(1));
    assert_eq!(window.omitted, [2, 3]);
    assert!(
        window.text.contains(
            "[parkline read end: 0 whole, 1 excerpt, 2 omitted (turn:t2 to turn:t3); next since:"
        ),
        "{}",
        window.text
    );
}

/// A `turn:` read holds that turn only: no partial turn, not even as omitted.
#[test]
fn a_turn_read_says_nothing_of_the_partial_turn() {
    let t = transcript(&["one"], Some("wor"));
    let window = read(&t, &turn_read("t1", 0, 1000)).expect("fits");
    assert_eq!(window.partial, RefPartial::Absent);
    assert!(!window.text.contains("in-flight"), "{}", window.text);
    assert_eq!((window.next, window.next_seen), (None, None));
}

/// An empty partial turn is shown as such, and the next cursor records nothing of it: there is no
/// prefix to check a later read against.
#[test]
fn an_empty_partial_turn_is_not_recorded_in_the_cursor() {
    let window = read(&transcript(&["one"], Some("")), &since(0, 1000)).expect("fits");
    assert_eq!(window.partial, RefPartial::Whole(0));
    assert_eq!(window.next_seen, None);
    let shown = read(&transcript(&["one"], Some("w")), &since(0, 1000)).expect("fits");
    assert!(shown.next_seen.is_some());
}

#[test]
fn a_counted_fit_off_by_one_is_caught_by_the_rendered_one() {
    use super::reference::{Measure, read_measured};
    // Forgets the newline after a shown partial turn.
    let broken = Measure::Checked(|reader, answer| {
        reader.length(answer) - usize::from(answer.partial.is_some_and(|shown| shown > 0))
    });
    let caught = fit_cases()
        .iter()
        .filter(|(t, request)| {
            read_measured(t, request, ReadVariant::Correct, broken)
                .1
                .is_some()
        })
        .count();
    assert!(caught > 100, "caught in {caught} cases");
}

#[test]
fn the_cursor_text_length_is_counted_without_the_checks() {
    use super::cursor::cursor_text_len;
    for child in ["c", "s61947-8", "a.b.c"] {
        for seq in [0, 1, 15, 16, 255, 4096, u64::MAX] {
            for seen in [None, Some((1, 0)), Some((17, 300)), Some((4096, u64::MAX))] {
                let seen = seen.map(|(chars, after)| RefSeen {
                    after,
                    chars,
                    prefix: 7,
                });
                let cursor = RefCursor::new(child, seq, Some("t1"), seen);
                let seen = seen.map(|seen| (seen.chars, seen.after));
                assert_eq!(
                    cursor_text_len(child, seq, seen),
                    cursor_text_of(&cursor).len()
                );
            }
        }
    }
}

#[test]
fn the_crc32_table_gives_the_bit_by_bit_crc32() {
    fn bit_by_bit(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                let mask = (crc & 1).wrapping_neg();
                crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
            }
        }
        !crc
    }
    let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    for end in 0..bytes.len() {
        assert_eq!(crc32(&bytes[..end]), bit_by_bit(&bytes[..end]));
    }
}

/// Found by the `deep` bound set (three turns): the framing of an answer grows with the
/// transcript, so a budget (260) that answered the first read is too small once two turns are
/// omitted. That is `CharsMaxTooSmall` with a budget that works (R1), not a refused cursor (R7);
/// before the model told the two apart, `parkline check --bounds deep` reported R7 violated on
/// this path. A `CharsMaxTooSmall` that names a budget which does not answer still counts as
/// refused.
#[test]
fn r7_a_budget_outgrown_by_the_framing_is_not_a_refused_cursor() {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //= type=test
    //# `CharsMaxTooSmall` is not a refusal of the cursor: the framing of a later answer grows with
    //# the transcript (more turns to report omitted, longer numbers), so a budget that answered an
    //# earlier read can become too small for a later one, and the error names the smallest budget
    //# that answers it (R1); a read at that budget with the same cursor MUST succeed.
    let model = ReadModel::new(ReadBounds::deep(), ReadVariant::Correct);
    let state = state_after(
        &model,
        &[
            ReadAction::Grow,
            ReadAction::Grow,
            ReadAction::OpenRequest,
            ReadAction::Read(260),
            ReadAction::Complete,
            ReadAction::Grow,
            ReadAction::Complete,
            ReadAction::Grow,
        ],
    );
    let request = model.caller_read(&state, 260);
    let needed = match read(&state.transcript, &request) {
        Err(RefReadError::CharsMaxTooSmall { needed }) => needed,
        other => panic!("expected CharsMaxTooSmall at 260, got {other:?}"),
    };
    assert!(needed > 260);
    assert!(
        read(
            &state.transcript,
            &RefReadRequest {
                chars_max: needed,
                ..request
            }
        )
        .is_ok()
    );
    let after = model
        .next_state(&state, ReadAction::Read(260))
        .expect("enabled");
    assert!(
        !after.refused,
        "an outgrown budget counted as a refused cursor"
    );
    assert!((model.property(R7).condition)(&model, &after));
}

#[test]
fn read_bound_sets_hold_the_limits_they_name() {
    let ci = ReadBounds::default();
    assert_eq!(
        ci.summary(),
        "turns=2 grow_chars=20 grows=3 budgets=260,300 requests=1 rebuilds=1"
    );
    // `deep` is the default with a third turn, nothing else.
    let deep = ReadBounds::deep();
    assert_eq!(deep, ReadBounds { turns: 3, ..ci });
    assert_eq!(
        deep.summary(),
        "turns=3 grow_chars=20 grows=3 budgets=260,300 requests=1 rebuilds=1"
    );
}

#[test]
fn ids_are_one_to_128_of_the_allowed_characters() {
    let longest = "a".repeat(128);
    for id in ["a", "Z9", "child-1_x.y", longest.as_str()] {
        assert!(valid_id(id), "{id:?} is a valid id");
    }
    let too_long = "a".repeat(129);
    for id in ["", "a b", "a/b", "é", "a\n", too_long.as_str()] {
        assert!(!valid_id(id), "{id:?} is not a valid id");
    }
}

#[test]
fn a_cursor_text_short_of_its_five_parts_is_damaged_and_a_dotted_child_round_trips() {
    for text in [
        "",
        "v3",
        "v3.1",
        "v3.1.0",
        "v3.1.0.0",
        "v3.0.0.0.00000000",
        "v2.1.0.00000000",
    ] {
        assert_eq!(
            parse_cursor(text),
            Err(RefReadError::CursorDamaged),
            "{text:?}"
        );
    }
    let text = after_t("child.with.dots", 7);
    let cursor = parse_cursor(&text).expect("a dotted child's cursor parses");
    assert_eq!((cursor.child.as_str(), cursor.seq), ("child.with.dots", 7));
    assert_eq!(cursor_text_of(&cursor), text);
}

#[test]
fn read_variant_names_are_distinct_command_line_words_that_round_trip() {
    crate::test_support::assert_variant_names(
        &ReadVariant::ALL,
        ReadVariant::name,
        ReadVariant::from_name,
    );
    assert_eq!(ReadVariant::Correct.name(), "correct");
    assert_eq!(
        ReadVariant::from_name("peek-latest"),
        Some(ReadVariant::PeekLatest)
    );
}

#[test]
fn read_steps_are_narrated_in_the_spec_words() {
    let model = ReadModel::default();
    let mut state = model.init_states().remove(0);
    let mut told = Vec::new();
    for action in [
        ReadAction::Grow,
        ReadAction::Complete,
        ReadAction::OpenRequest,
        ReadAction::ReadAtNeeded,
    ] {
        let after = model
            .next_state(&state, action.clone())
            .expect("the step is enabled");
        told.push(model.narrate(&state, &action, &after));
        state = after;
    }
    // The partial turn of seq 1 is written in the letter of seq 1; the read at no budget is told
    // the budget of the window it then gets, 209 characters.
    assert_eq!(
        told,
        [
            "the child works: partial turn \"bbbbbbbbbbbbbbbbbbbb\"",
            "turn t1 completes (seq 1, \"bbbbbbbbbbbbbbbbbbbb\")",
            "the child opens a request",
            "the caller reads with no budget and is told it needs 209; it retries: the caller \
             reads with cursor at seq 0 and chars_max 209; window (209 chars, next cursor at seq \
             1):\n[parkline read c since:v3.0.0.0.934ef23b.c]\n[turn t1 seq 1: 20 chars]\n\
             bbbbbbbbbbbbbbbbbbbb\n[request 1 open] r1\n[parkline read end: 1 whole, 0 \
             excerpt, 0 omitted; next since:v3.1.5732c817b025d2e8.0.91e0e5f9.c]\n",
        ]
    );
}

/// A caller about to read `t` with the cursor at seq 0, holding nothing.
fn reading(t: RefTranscript) -> ReadState {
    ReadState {
        transcript: t,
        ..ReadModel::default().init_states().remove(0)
    }
}

/// The state after the caller, in `state`, was given `window` under `chars_max`.
fn judged(model: &ReadModel, state: &ReadState, window: &RefWindow, chars_max: usize) -> ReadState {
    let mut next = state.clone();
    model.record_window(state, &mut next, window, chars_max);
    next
}

/// The names of the ghost flags set in `s`.
fn flags(s: &ReadState) -> Vec<&'static str> {
    [
        ("repeated", s.repeated),
        ("over_budget", s.over_budget),
        ("refused", s.refused),
        ("stalled", s.stalled),
        ("rest_loops", s.rest_loops),
        ("resume_wrong", s.resume_wrong),
        ("partial_wrong", s.partial_wrong),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect()
}

/// Each clause of the window judgement, given a real window changed in the one place that clause
/// judges, sets its own flag and no other. The model check alone cannot show this: a known-bad
/// variant breaks its property through several clauses at once (`EmptyExcerpt` neither moves the
/// cursor nor gives a character), so a clause that never fires would go unseen.
#[test]
fn each_ghost_clause_flags_a_window_that_breaks_only_it() {
    let model = ReadModel::default();
    let state = reading(transcript(&["one", "two"], Some("wor")));
    let window = read(&state.transcript, &since(0, 1000)).expect("fits");
    let good = judged(&model, &state, &window, 1000);
    assert_eq!(flags(&good), Vec::<&str>::new());
    assert_eq!(good.given, BTreeSet::from([1, 2]));
    assert_eq!((good.cursor, good.held.as_deref()), (2, Some("wor")));
    assert!(
        good.last
            .is_some_and(|last| !last.omitted && !last.nothing_new)
    );

    let broken = |change: &dyn Fn(&mut ReadState, &mut RefWindow) -> usize| {
        let (mut state, mut window) = (state.clone(), window.clone());
        let chars_max = change(&mut state, &mut window);
        flags(&judged(&model, &state, &window, chars_max))
    };
    // R1: one character over the budget.
    assert_eq!(broken(&|_, w| w.chars - 1), ["over_budget"]);
    // R6: a whole turn the caller holds, given again.
    assert_eq!(
        broken(&|s, _| {
            s.given.insert(1);
            1000
        }),
        ["repeated"]
    );
    // R8: the cursor does not move although turns are unread ...
    assert_eq!(
        broken(&|_, w| {
            w.next = Some(0);
            1000
        }),
        ["stalled"]
    );
    // ... or it moves, but the window gives no turn, or an excerpt of no character.
    assert_eq!(
        broken(&|_, w| {
            w.whole.clear();
            1000
        }),
        ["stalled"]
    );
    assert_eq!(
        broken(&|_, w| {
            w.whole.clear();
            w.excerpt = Some(RefExcerpt {
                seq: 1,
                from: 0,
                to: 0,
                total: 3,
            });
            1000
        }),
        ["stalled"]
    );
    // A caller with nothing unread is not stalled by a cursor that stays.
    let mut read_up = state.clone();
    read_up.cursor = 2;
    let mut staying = window.clone();
    staying.next = Some(2);
    staying.whole.clear();
    assert_eq!(
        flags(&judged(&model, &read_up, &staying, 1000)),
        Vec::<&str>::new()
    );
    // The latest-turn peek is not a cursor read: R8 does not judge it.
    let peek = ReadModel::new(ReadBounds::default(), ReadVariant::PeekLatest);
    let mut peeked = window.clone();
    peeked.next = Some(0);
    assert_eq!(
        flags(&judged(&peek, &state, &peeked, 1000)),
        Vec::<&str>::new()
    );

    // R3's trailer: omitted turns are seen as omitted.
    let mut omitted = window.clone();
    omitted.omitted = vec![2];
    let after = judged(&model, &state, &omitted, 1000);
    assert!(after.last.is_some_and(|last| last.omitted));
}

/// The excerpt clauses: an excerpt of a turn the caller holds is a repeat (R6), and an excerpt
/// counts as given (R5) only if the text names its rest, or it runs to the turn's end.
#[test]
fn an_excerpt_is_given_only_with_its_rest_and_repeats_like_a_whole_turn() {
    let model = ReadModel::default();
    let state = reading(transcript(&[&"x".repeat(300)], None));
    let window = read(&state.transcript, &since(0, 250)).expect("an excerpt fits");
    let excerpt = window.excerpt.expect("the turn is larger than the budget");
    assert!(excerpt.to < excerpt.total);
    let rest = format!(", rest at turn:t1 offset {}", excerpt.to);
    assert!(window.text.contains(&rest));
    let good = judged(&model, &state, &window, 250);
    assert_eq!(flags(&good), Vec::<&str>::new());
    assert_eq!(good.given, BTreeSet::from([1]));

    let mut holding = state.clone();
    holding.given.insert(1);
    assert_eq!(flags(&judged(&model, &holding, &window, 250)), ["repeated"]);

    let mut no_rest = window.clone();
    no_rest.text = window.text.replace(&rest, "");
    assert_eq!(judged(&model, &state, &no_rest, 250).given, BTreeSet::new());
    let mut to_the_end = no_rest.clone();
    to_the_end.excerpt = Some(RefExcerpt {
        to: excerpt.total,
        ..excerpt
    });
    assert_eq!(
        judged(&model, &state, &to_the_end, 250).given,
        BTreeSet::from([1])
    );
}

/// R15's clauses, and what the caller holds of the partial turn after each form of it.
#[test]
fn the_partial_turn_clauses_judge_each_form_against_what_the_caller_holds() {
    let model = ReadModel::default();
    let t = transcript(&["one", "two"], Some("wor"));
    let first = read(&t, &since(0, 1000)).expect("fits");
    let mut state = reading(transcript(&["one", "two"], Some("working")));
    state.cursor = 2;
    state.cursor_turn = Some("t2".into());
    state.given = BTreeSet::from([1, 2]);
    state.held = Some("wor".into());
    state.seen = first.next_seen;
    let request = model.caller_read(&state, 1000);
    let window = read(&state.transcript, &request).expect("fits");
    assert_eq!(
        window.partial,
        RefPartial::New {
            from: 3,
            seen: 3,
            total: 7
        }
    );
    let good = judged(&model, &state, &window, 1000);
    assert_eq!(flags(&good), Vec::<&str>::new());
    assert_eq!(good.held.as_deref(), Some("working"));

    let with = |partial: RefPartial| {
        let mut changed = window.clone();
        changed.partial = partial;
        judged(&model, &state, &changed, 1000)
    };
    // A grown part must come as new from exactly the characters held.
    for wrong in [
        RefPartial::New {
            from: 2,
            seen: 2,
            total: 7,
        },
        RefPartial::Replaced { shown: 7, total: 7 },
        RefPartial::Whole(7),
        RefPartial::Cut { shown: 4, total: 7 },
        RefPartial::Absent,
    ] {
        assert_eq!(flags(&with(wrong)), ["partial_wrong"], "{wrong:?}");
    }
    let omitted = with(RefPartial::Omitted(7));
    assert_eq!(flags(&omitted), Vec::<&str>::new());
    assert_eq!(omitted.held.as_deref(), Some("wor"));
    // What the caller can rebuild: a replaced part only if shown whole, a new part only if it
    // starts at the characters held.
    let held = |partial| with(partial).held;
    assert_eq!(held(RefPartial::Replaced { shown: 3, total: 7 }), None);
    assert_eq!(
        held(RefPartial::Replaced { shown: 7, total: 7 }).as_deref(),
        Some("working")
    );
    assert_eq!(
        held(RefPartial::New {
            from: 5,
            seen: 3,
            total: 7
        }),
        None
    );

    // A replaced part (not a continuation of what is held) must come marked replaced.
    let mut replaced = state.clone();
    replaced.transcript.partial = Some("done".into());
    let mut window = read(&replaced.transcript, &model.caller_read(&replaced, 1000)).expect("fits");
    assert_eq!(window.partial, RefPartial::Replaced { shown: 4, total: 4 });
    assert_eq!(
        flags(&judged(&model, &replaced, &window, 1000)),
        Vec::<&str>::new()
    );
    window.partial = RefPartial::New {
        from: 3,
        seen: 3,
        total: 4,
    };
    assert_eq!(
        flags(&judged(&model, &replaced, &window, 1000)),
        ["partial_wrong"]
    );
}

/// R7's clause: a failed read refuses the cursor, except a `CharsMaxTooSmall` naming a larger
/// budget that answers the same read.
#[test]
fn a_refusal_is_r7s_unless_it_names_a_budget_that_answers() {
    let model = ReadModel::default();
    let state = reading(transcript(&["one"], None));
    let request = since(0, 10);
    let Err(RefReadError::CharsMaxTooSmall { needed }) = read(&state.transcript, &request) else {
        panic!("10 chars cannot hold the framing");
    };
    let refused = |error| {
        let mut next = state.clone();
        model.record_refusal(&state, &mut next, &request, error);
        flags(&next)
    };
    assert_eq!(
        refused(RefReadError::CharsMaxTooSmall { needed }),
        Vec::<&str>::new()
    );
    // One short of it does not answer; the budget already tried does not either.
    assert!(needed - 1 > 10);
    assert_eq!(
        refused(RefReadError::CharsMaxTooSmall { needed: needed - 1 }),
        ["refused"]
    );
    assert_eq!(
        refused(RefReadError::CharsMaxTooSmall { needed: 10 }),
        ["refused"]
    );
    assert_eq!(refused(RefReadError::CursorDamaged), ["refused"]);
}

/// R16's clause: a resumed read's first turn given is the first after the turn resumed from.
#[test]
fn a_resume_is_wrong_when_its_first_turn_given_is_not_the_next_one() {
    let mut state = reading(transcript(&["one", "two", "three"], None));
    state.cursor = 1;
    let resume = |id: &str| RefReadRequest {
        selector: RefSelector::SinceTurn(id.into()),
        chars_max: 1000,
        history: RefHistory::Open,
    };
    let right = read(&state.transcript, &resume("t1")).expect("fits");
    assert_eq!(right.whole, [2, 3]);
    assert!(!resumed_elsewhere(&state, state.cursor, &right));
    let from_the_turn = read_variant(
        &state.transcript,
        &resume("t1"),
        ReadVariant::ResumeIncludesTurn,
    )
    .expect("fits");
    assert_eq!(from_the_turn.whole, [1, 2, 3]);
    let skipping = read(&state.transcript, &resume("t2")).expect("fits");
    assert!(resumed_elsewhere(&state, state.cursor, &from_the_turn));
    assert!(resumed_elsewhere(&state, state.cursor, &skipping));
    let mut nothing = right.clone();
    nothing.whole.clear();
    assert!(!resumed_elsewhere(&state, state.cursor, &nothing));
    let mut excerpt = nothing.clone();
    for (seq, wrong) in [(2, false), (3, true), (1, true)] {
        excerpt.excerpt = Some(RefExcerpt {
            seq,
            from: 0,
            to: 1,
            total: 3,
        });
        assert_eq!(
            resumed_elsewhere(&state, state.cursor, &excerpt),
            wrong,
            "excerpt of {seq}"
        );
    }
    // With nothing after the turn resumed from, any turn given is given again.
    state.cursor = 3;
    assert!(resumed_elsewhere(&state, state.cursor, &right));
}

/// R8's rest clause: following an excerpt's rest at the budgets the errors name ends for the
/// spec's read and loops for `EmptyExcerpt`; the model records it in its own flag.
#[test]
fn following_an_excerpts_rest_ends_and_the_empty_excerpt_loops() {
    // A turn of 200 characters: larger than an excerpt's marker, so the read at the budget the
    // error names is an excerpt, not the whole turn.
    let bounds = ReadBounds {
        grow_chars: 200,
        ..ReadBounds::default()
    };
    let correct = ReadModel::new(bounds.clone(), ReadVariant::Correct);
    let empty = ReadModel::new(bounds, ReadVariant::EmptyExcerpt);
    let state = reading(transcript(&["one", &"x".repeat(300)], None));
    let part = |seq| {
        Some(RefExcerpt {
            seq,
            from: 0,
            to: 5,
            total: 300,
        })
    };
    assert!(correct.rest_chain_ends(&state, part(2)));
    assert!(!empty.rest_chain_ends(&state, part(2)));
    assert!(empty.rest_chain_ends(&state, None));
    assert!(
        empty.rest_chain_ends(&state, part(9)),
        "no such turn: no chain"
    );

    let path = [
        ReadAction::Grow,
        ReadAction::Complete,
        ReadAction::ReadAtNeeded,
    ];
    let end = |model: &ReadModel| state_after(model, &path);
    assert!(end(&empty).rest_loops);
    assert_eq!(flags(&end(&correct)), Vec::<&str>::new());
}

/// A caller that holds no turn has none to resume from: `Resume` is offered from the first read
/// that moved the cursor on. Before any work there is no partial turn to complete or rewrite.
#[test]
fn resume_is_offered_once_the_caller_holds_a_turn() {
    let model = ReadModel::default();
    let mut offered = Vec::new();
    model.actions(&model.init_states()[0], &mut offered);
    assert_eq!(
        offered,
        [
            ReadAction::Grow,
            ReadAction::OpenRequest,
            ReadAction::Read(260),
            ReadAction::Read(300),
            ReadAction::ReadAtNeeded,
        ]
    );
    let resumes = |s: &ReadState| {
        let mut actions = Vec::new();
        model.actions(s, &mut actions);
        actions
            .iter()
            .any(|action| matches!(action, ReadAction::Resume(_)))
    };
    let mut state = model.init_states().remove(0);
    for action in [ReadAction::Grow, ReadAction::Complete] {
        state = model.next_state(&state, action).expect("enabled");
        assert!(!resumes(&state));
    }
    state = model
        .next_state(&state, ReadAction::Read(300))
        .expect("enabled");
    assert_eq!(state.cursor, 1);
    assert!(resumes(&state));
}

fn turn_read(id: &str, offset: usize, chars_max: usize) -> RefReadRequest {
    RefReadRequest {
        selector: RefSelector::Turn {
            id: id.into(),
            offset,
        },
        chars_max,
        history: RefHistory::Open,
    }
}

/// R12: a `turn:` read from an offset gives the rest of the turn from there (no reference: there
/// is no rest after it), or its longest prefix that fits with a reference; an offset up to the
/// turn's length is accepted, one past it is not.
#[test]
fn a_turn_read_from_an_offset_gives_the_rest_and_checks_the_offset() {
    let t = transcript(&["one", &"y".repeat(300)], None);
    let rest = read(&t, &turn_read("t2", 7, 1000)).expect("fits");
    assert_eq!(rest.whole, Vec::<u64>::new());
    assert_eq!(
        rest.excerpt,
        Some(RefExcerpt {
            seq: 2,
            from: 7,
            to: 300,
            total: 300
        })
    );
    assert!(!rest.text.contains("rest at"), "{}", rest.text);
    let cut = read(&t, &turn_read("t2", 7, 250)).expect("fits");
    let part = cut.excerpt.expect("an excerpt");
    assert_eq!(part.from, 7);
    assert!(part.to < 300);
    assert!(
        cut.text
            .contains(&format!(", rest at turn:t2 offset {}]", part.to))
    );
    assert!(read(&t, &turn_read("t2", 300, 1000)).is_ok());
    assert_eq!(
        read(&t, &turn_read("t2", 301, 1000)),
        Err(RefReadError::OffsetOutOfRange)
    );
}

/// R13: `history` attaches the open requests (`open`), or every request (`all`), or none; the
/// window counts those that did not fit.
#[test]
fn history_selects_the_requests_and_the_window_counts_the_omitted() {
    let mut t = transcript(&["one"], None);
    t.requests = vec![
        RefRequest {
            id: 2,
            open: false,
            record: "two".into(),
        },
        RefRequest {
            id: 1,
            open: true,
            record: "one".into(),
        },
    ];
    let with = |history, chars_max| {
        let request = RefReadRequest {
            history,
            ..since(0, chars_max)
        };
        read(&t, &request).expect("fits")
    };
    let open = with(RefHistory::Open, 1000);
    assert_eq!((open.requests_shown, open.requests_omitted), (1, 0));
    assert!(open.text.contains("[request 1 open] one\n"));
    assert!(!open.text.contains("[request 2"));
    let all = with(RefHistory::All, 1000);
    assert_eq!((all.requests_shown, all.requests_omitted), (2, 0));
    assert!(
        all.text
            .contains("[request 1 open] one\n[request 2 terminated] two\n")
    );
    let none = with(RefHistory::None, 1000);
    assert_eq!((none.requests_shown, none.requests_omitted), (0, 0));
    // One request fits beside the trailer that reports the other omitted.
    let tight = with(RefHistory::All, all.chars - 1);
    assert_eq!((tight.requests_shown, tight.requests_omitted), (1, 1));
    assert!(tight.text.contains(", 1 requests omitted"));
}

/// The two budget variants change only what they are built to: `excerpt-without-reference`
/// reports the cut turn as whole, with no rest; `turns-only-budget` fits the turn text alone
/// under the budget, from the offset of a `turn:` read.
#[test]
fn the_excerpt_and_budget_variants_present_what_they_name() {
    let t = transcript(&[&"x".repeat(300)], None);
    let hidden =
        read_variant(&t, &since(0, 250), ReadVariant::ExcerptWithoutReference).expect("fits");
    assert_eq!((hidden.whole.as_slice(), hidden.excerpt), (&[1][..], None));
    assert!(!hidden.text.contains("rest at"), "{}", hidden.text);
    let text_only =
        read_variant(&t, &turn_read("t1", 100, 50), ReadVariant::TurnsOnlyBudget).expect("fits");
    assert_eq!(text_only.excerpt.map(|e| (e.from, e.to)), Some((100, 150)));
}
