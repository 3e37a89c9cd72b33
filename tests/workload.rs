//! `parkline workload`: the shipped s966 trace through today's policy and parkline's, the cost
//! in the seed's units (cache-read tokens, calls per card, replay turns per boundary), the
//! `--json` report, the old format still read, and the trace format's errors, each naming its
//! line.

use parkline_cli::workload::{self, Event, Format, S966, TraceError, WorkloadRun};

fn shipped() -> WorkloadRun {
    let trace = workload::parse(S966).expect("the shipped trace parses");
    workload::run(&trace).expect("the shipped trace runs")
}

fn error_of(text: &str) -> TraceError {
    match workload::parse(text).and_then(|trace| workload::run(&trace)) {
        Ok(result) => panic!("expected an error, the trace run: {result:?}"),
        Err(e) => e,
    }
}

const HEADER: &str = r#"{"trace":"parkline-replay/1","session":"t","recorded":false,"source":"test","budget":1000,"max_chars":4000}"#;

fn trace(events: &[&str]) -> String {
    std::iter::once(HEADER)
        .chain(events.iter().copied())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn s966_the_long_turn_boundary_is_one_batch_turn_where_today_hands_thirteen() {
    let result = shipped();
    let thirteen: Vec<_> = result
        .boundaries
        .iter()
        .filter(|boundary| boundary.parked == 13)
        .collect();
    assert_eq!(thirteen.len(), 1, "one boundary with the 13 parked lines");
    assert_eq!(
        thirteen[0].today_turns, 13,
        "pop-front: one wake-up turn per line"
    );
    assert_eq!(thirteen[0].parkline_turns, 1, "parkline: one batch turn");
    // Every boundary: parkline never hands more turns than today, and one per boundary here
    // (every boundary's lines fit the budget).
    for boundary in &result.boundaries {
        assert_eq!(boundary.today_turns, boundary.parked);
        assert_eq!(boundary.parkline_turns, 1);
    }
    assert_eq!(result.today.wake_up_turns, 19, "one per completion line");
    assert_eq!(result.parkline.wake_up_turns, result.boundaries.len());
}

#[test]
fn s966_cursor_reads_repeat_no_completed_turn_while_n1_peeks_repeat_the_named_ones() {
    let result = shipped();
    assert_eq!(result.parkline.repeated_turns, 0);
    assert_eq!(result.parkline.repeated_chars, 0);
    // The same accounting on today's n:1 peeks finds the seed's repeats: s980-1 handed 6 times
    // (5 repeats), s972-1 5 times (4), s978-5 twice (1), and the reconstruction's others
    // (s975-2 and s983-1 3 times, s986-1, s970-1 and s976-3 twice: 7).
    assert_eq!(result.today.repeated_turns, 5 + 4 + 1 + 7);
    assert!(result.today.repeated_chars > 40_000);
}

/// R15 on the shipped trace: n:1 peeks hand the partial turn whole each time, so what grew
/// between peeks comes again; `since` reads hand only the characters added since.
#[test]
fn s966_since_reads_repeat_no_partial_character_while_n1_peeks_do() {
    //= spec/read.md#r15-the-partial-turn-is-sent-once-while-it-only-grows
    //= type=test
    //# - when the partial turn still starts with those `s` chars (same length, same CRC-64 of that
    //# prefix), the part only grew: the read MUST give only chars `s..total` (all of them if they
    //# fit, else their newest that fit), marked `chars <from>..<total> of <total>`, and never one
    //# of the first `s` again;
    let result = shipped();
    assert_eq!(result.today.partial_chars, 7603);
    assert_eq!(result.today.partial_repeated_chars, 2451);
    assert_eq!(result.parkline.partial_repeated_chars, 0);
    assert!(result.parkline.partial_chars < result.today.partial_chars);
    assert_eq!(
        result.today.repeated_with_partial(),
        result.today.repeated_chars + 2451
    );
    assert_eq!(result.parkline.repeated_with_partial(), 0);
    let table = workload::render(&result);
    assert!(table.contains("characters repeated, partial turns counted"));
    assert!(table.contains("share repeated, partial turns counted"));
}

#[test]
fn s966_matches_the_published_figures_it_was_reconstructed_from() {
    let trace = workload::parse(S966).expect("parses");
    assert!(!trace.header.recorded);
    assert!(
        trace
            .header
            .source
            .contains("reconstructed from the published figures")
    );
    assert!(trace.header.source.contains("not recorded"));
    let result = workload::run(&trace).expect("runs");
    assert_eq!(result.today.reads, 61, "61 reads of children");
    assert_eq!(result.today.partial_reads, 35, "35 of them partial");
    assert_eq!(
        result.parkline.reads, 61,
        "the same calls, as since:<cursor>"
    );
    let read_chars = result.today.read_chars;
    assert!(
        (105_000..=117_000).contains(&read_chars),
        "about 111 k chars of agent_read results, got {read_chars}"
    );
    let share = result.today.repeated_read_percent();
    assert!(
        (35.0..=45.0).contains(&share),
        "about 40 % repeats, got {share:.1}"
    );
    assert!(result.parkline.read_chars < read_chars - 40_000);
}

#[test]
fn workload_is_deterministic_and_the_table_names_both_policies() {
    let (first, second) = (shipped(), shipped());
    assert_eq!(first, second);
    let table = workload::render(&first);
    assert!(table.contains("today (pop-front, n:1)"));
    assert!(table.contains("parkline (batch, since:<cursor>)"));
    assert!(table.contains("replay turns at the largest boundary (13 lines)"));
    assert!(table.contains("reconstructed, not recorded"));
}

#[test]
fn a_small_trace_runs_by_hand() {
    // Two lines parked behind one turn; a child read three times between its turns.
    let text = trace(&[
        r#"{"ev":"turn_start","turn":"p-1"}"#,
        r#"{"ev":"child_turn","child":"c1","turn":"c1-1","chars":100}"#,
        r#"{"ev":"child_progress","child":"c1","chars":10}"#,
        r#"{"ev":"read","child":"c1","n":1}"#,
        r#"{"ev":"read","child":"c1","n":1}"#,
        r#"{"ev":"completion","request":1,"line":"done 1"}"#,
        r#"{"ev":"child_turn","child":"c1","turn":"c1-2","chars":50}"#,
        r#"{"ev":"read","child":"c1","n":1}"#,
        r#"{"ev":"completion","request":2,"line":"done 2"}"#,
        r#"{"ev":"turn_end","turn":"p-1"}"#,
    ]);
    let result = workload::run(&workload::parse(&text).expect("parses")).expect("runs");
    assert_eq!(result.boundaries.len(), 1);
    assert_eq!(result.boundaries[0].line, 11);
    assert_eq!(result.boundaries[0].parked, 2);
    assert_eq!(
        (result.today.wake_up_turns, result.parkline.wake_up_turns),
        (2, 1)
    );
    // Today's bare lines: "done 1\n" + "done 2\n".
    assert_eq!(result.today.delivered_chars, 14);
    // The second n:1 read hands c1-1 (100 chars) again; the cursor read hands nothing twice.
    assert_eq!(
        (result.today.repeated_turns, result.today.repeated_chars),
        (1, 100)
    );
    assert_eq!(
        (
            result.parkline.repeated_turns,
            result.parkline.repeated_chars
        ),
        (0, 0)
    );
    assert_eq!(result.today.partial_reads, 2);
}

#[test]
fn a_completion_reaching_an_idle_parent_is_a_boundary_of_its_own() {
    let text = trace(&[r#"{"ev":"completion","request":7,"line":"done"}"#]);
    let result = workload::run(&workload::parse(&text).expect("parses")).expect("runs");
    assert_eq!(result.boundaries.len(), 1);
    assert_eq!(result.boundaries[0].line, 2);
    assert_eq!(result.today.wake_up_turns, 1);
    assert_eq!(result.parkline.wake_up_turns, 1);
}

#[test]
fn an_empty_trace_is_an_error_on_line_1() {
    let e = error_of("");
    assert_eq!(e.line, 1);
    assert!(e.message.contains("header"), "{e}");
}

#[test]
fn a_header_of_another_format_or_missing_fields_is_an_error_on_line_1() {
    let e = error_of(r#"{"trace":"parkline-replay/9","session":"t"}"#);
    assert_eq!(e.line, 1);
    assert!(e.message.contains("unknown trace format"), "{e}");
    let e = error_of(r#"{"ev":"turn_start","turn":"p"}"#);
    assert_eq!(e.line, 1);
    assert!(e.message.contains("header"), "{e}");
    let e = error_of(
        r#"{"trace":"parkline-replay/1","session":"t","recorded":false,"source":"s","budget":10}"#,
    );
    assert_eq!(e.line, 1);
    assert!(e.message.contains("max_chars"), "{e}");
    let e = error_of(
        r#"{"trace":"parkline-replay/1","session":"t","recorded":false,"source":"s","budget":0,"max_chars":10}"#,
    );
    assert_eq!(e.line, 1);
    assert!(e.message.contains("budget"), "{e}");
}

#[test]
fn invalid_json_an_unknown_event_or_a_bad_field_names_its_line() {
    let cases: [(&[&str], usize, &str); 6] = [
        (
            &[r#"{"ev":"turn_start","turn":"p"}"#, "{not json"],
            3,
            "invalid event",
        ),
        (&[r#"{"ev":"nap","minutes":5}"#], 2, "unknown variant `nap`"),
        (
            &[r#"{"ev":"child_turn","child":"c","turn":"c-1"}"#],
            2,
            "missing field `chars`",
        ),
        (
            &[r#"{"ev":"child_turn","child":"c","turn":"c-1","chars":-4}"#],
            2,
            "invalid event",
        ),
        (
            &[r#"{"ev":"read","child":"c","n":1,"since":"x"}"#],
            2,
            "unknown field `since`",
        ),
        (
            &[
                r#"{"ev":"turn_start","turn":"p"}"#,
                "",
                r#"{"ev":"turn_end","turn":"p"}"#,
            ],
            3,
            "empty line",
        ),
    ];
    for (events, line, needle) in cases {
        let e = error_of(&trace(events));
        assert_eq!(e.line, line, "{events:?}: {e}");
        assert!(e.message.contains(needle), "{events:?}: {e}");
        assert!(e.to_string().starts_with(&format!("trace line {line}: ")));
    }
}

#[test]
fn impossible_sequences_name_their_line() {
    let cases: [(&[&str], usize, &str); 6] = [
        (
            &[
                r#"{"ev":"turn_start","turn":"p-1"}"#,
                r#"{"ev":"turn_start","turn":"p-2"}"#,
            ],
            3,
            "inside turn",
        ),
        (
            &[r#"{"ev":"turn_end","turn":"p-1"}"#],
            2,
            "no turn is in progress",
        ),
        (
            &[
                r#"{"ev":"turn_start","turn":"p-1"}"#,
                r#"{"ev":"turn_end","turn":"p-2"}"#,
            ],
            3,
            "is in progress",
        ),
        (&[r#"{"ev":"read","child":"c","n":1}"#], 2, "before any"),
        (
            &[
                r#"{"ev":"child_turn","child":"c","turn":"c-1","chars":5}"#,
                r#"{"ev":"child_turn","child":"c","turn":"c-1","chars":5}"#,
            ],
            3,
            "child turn",
        ),
        (
            &[
                r#"{"ev":"turn_start","turn":"p-1"}"#,
                r#"{"ev":"completion","request":1,"line":"x"}"#,
            ],
            3,
            "ends inside turn",
        ),
    ];
    for (events, line, needle) in cases {
        let e = error_of(&trace(events));
        assert_eq!(e.line, line, "{events:?}: {e}");
        assert!(e.message.contains(needle), "{events:?}: {e}");
    }
}

#[test]
fn ids_the_read_side_rejects_and_lines_the_queue_rejects_name_their_line() {
    let e = error_of(&trace(&[
        r#"{"ev":"child_progress","child":"two words","chars":5}"#,
    ]));
    assert_eq!(e.line, 2);
    assert!(e.message.contains("child id"), "{e}");
    let e = error_of(&trace(&[
        r#"{"ev":"turn_start","turn":"p"}"#,
        r#"{"ev":"completion","request":1,"line":"two\nlines"}"#,
    ]));
    assert_eq!(e.line, 3);
    assert!(e.message.contains("completion line"), "{e}");
}

/// The first format's header, as `HEADER`, but of the current format, with a `reconstructed`
/// label (required when `recorded` is false) and the estimate's assumptions.
fn header_2(chars_per_token: usize, wake_up_calls: usize) -> String {
    format!(
        r#"{{"trace":"parkline-workload/2","session":"t","recorded":false,"source":"test","reconstructed":{{"context_tokens":"written by hand"}},"budget":1000,"max_chars":4000,"chars_per_token":{chars_per_token},"wake_up_calls":{wake_up_calls}}}"#
    )
}

fn trace_2(header: &str, events: &[&str]) -> String {
    std::iter::once(header)
        .chain(events.iter().copied())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The shipped trace rewritten to the first format: its header's new fields and every event's
/// `context_tokens`, `calls` and `card` removed.
fn s966_as_format_1() -> String {
    S966.lines()
        .enumerate()
        .map(|(i, line)| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("json");
            let object = value.as_object_mut().expect("object");
            if i == 0 {
                object.insert("trace".into(), "parkline-replay/1".into());
                for field in ["reconstructed", "chars_per_token", "wake_up_calls"] {
                    assert!(object.remove(field).is_some(), "the header has {field}");
                }
            }
            for field in ["context_tokens", "calls", "card"] {
                object.remove(field);
            }
            value.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_old_format_still_runs_with_the_same_characters_and_its_token_rows_not_in_the_trace() {
    let old = workload::parse(&s966_as_format_1()).expect("the old format parses");
    assert_eq!(old.format, Format::Replay1);
    let old = workload::run(&old).expect("the old format runs");
    let new = shipped();
    assert_eq!(new.format, Format::Workload2);
    // What the first format carries gives the same figures.
    for (old, new) in [(&old.today, &new.today), (&old.parkline, &new.parkline)] {
        assert_eq!(old.wake_up_turns, new.wake_up_turns);
        assert_eq!(old.handed_chars(), new.handed_chars());
        assert_eq!(old.repeated_chars, new.repeated_chars);
        assert_eq!(old.cache_read_tokens, None);
        assert_eq!(old.calls, None);
        assert_eq!(old.context_first_tokens, None);
    }
    assert_eq!(old.cards, None);
    assert!(new.today.cache_read_tokens.is_some() && new.cards.is_some());
    let table = workload::render(&old);
    let row = table
        .lines()
        .find(|line| line.starts_with("cache-read tokens on wake-up turns (estimate)"))
        .expect("the token row is printed");
    assert_eq!(row.matches("not in the trace").count(), 2, "{row}");
    for label in ["parent calls per card", "per-card context delta"] {
        let row = table
            .lines()
            .find(|line| line.starts_with(label))
            .expect("row");
        assert_eq!(row.matches("not in the trace").count(), 2, "{row}");
    }
    let json: serde_json::Value = serde_json::from_str(&workload::json(&old)).expect("json");
    assert_eq!(json["trace"], "parkline-replay/1");
    assert!(json["today"]["cache_read_tokens"].is_null());
    assert!(json["cards"].is_null());
}

#[test]
fn the_new_fields_parse_and_a_misspelt_one_names_its_line() {
    let header = header_2(4, 1);
    let text = trace_2(
        &header,
        &[
            r#"{"ev":"turn_start","turn":"p-1","context_tokens":1000}"#,
            r#"{"ev":"completion","request":1,"line":"done","card":"k1"}"#,
            r#"{"ev":"turn_end","turn":"p-1","context_tokens":1500,"calls":3}"#,
        ],
    );
    let parsed = workload::parse(&text).expect("parses");
    assert_eq!(parsed.format, Format::Workload2);
    assert_eq!(parsed.header.chars_per_token, Some(4));
    assert_eq!(parsed.header.wake_up_calls, Some(1));
    assert_eq!(
        parsed
            .header
            .reconstructed
            .get("context_tokens")
            .map(String::as_str),
        Some("written by hand")
    );
    assert!(matches!(
        &parsed.events[0].1,
        Event::TurnStart {
            context_tokens: Some(1000),
            ..
        }
    ));
    assert!(matches!(
        &parsed.events[1].1,
        Event::Completion { card: Some(card), .. } if card == "k1"
    ));
    assert!(matches!(
        &parsed.events[2].1,
        Event::TurnEnd {
            context_tokens: Some(1500),
            calls: Some(3),
            ..
        }
    ));

    let cases: [(String, usize, &str); 7] = [
        (
            trace_2(
                &header,
                &[
                    r#"{"ev":"turn_start","turn":"p-1"}"#,
                    r#"{"ev":"turn_end","turn":"p-1","context_token":10}"#,
                ],
            ),
            3,
            "unknown field `context_token`",
        ),
        (
            trace_2(
                &header,
                &[r#"{"ev":"completion","request":1,"line":"x","cards":"k"}"#],
            ),
            2,
            "unknown field `cards`",
        ),
        (
            trace_2(&header.replace("chars_per_token", "chars_per_tokn"), &[]),
            1,
            "unknown field `chars_per_tokn`",
        ),
        // A field of the new format in a trace of the old one.
        (
            trace(&[r#"{"ev":"turn_start","turn":"p-1","context_tokens":5}"#]),
            2,
            "needs format \"parkline-workload/2\"",
        ),
        // A reconstructed trace must say what is reconstructed.
        (
            trace_2(
                &header.replace(
                    r#""reconstructed":{"context_tokens":"written by hand"},"#,
                    "",
                ),
                &[],
            ),
            1,
            "must say in `reconstructed` which figures",
        ),
        (
            trace_2(&header_2(0, 1), &[]),
            1,
            "chars_per_token must be at least 1",
        ),
        (
            trace_2(&header_2(4, 0), &[]),
            1,
            "wake_up_calls must be at least 1",
        ),
    ];
    for (text, line, needle) in cases {
        let e = error_of(&text);
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {e}");
    }
}

#[test]
fn calls_and_cards_on_some_events_only_or_a_boundary_before_any_context_name_their_line() {
    let header = header_2(4, 1);
    let cases: [(&[&str], usize, &str); 3] = [
        (
            &[
                r#"{"ev":"turn_start","turn":"p-1"}"#,
                r#"{"ev":"turn_end","turn":"p-1","calls":2}"#,
                r#"{"ev":"turn_start","turn":"p-2"}"#,
                r#"{"ev":"turn_end","turn":"p-2"}"#,
            ],
            5,
            "every turn_end gives `calls` or none does",
        ),
        (
            &[
                r#"{"ev":"completion","request":1,"line":"a"}"#,
                r#"{"ev":"completion","request":2,"line":"b","card":"k"}"#,
            ],
            3,
            "every completion gives `card` or none does",
        ),
        (
            &[
                r#"{"ev":"turn_start","turn":"p-1"}"#,
                r#"{"ev":"completion","request":1,"line":"a"}"#,
                r#"{"ev":"turn_end","turn":"p-1"}"#,
                r#"{"ev":"turn_start","turn":"p-2","context_tokens":100}"#,
                r#"{"ev":"turn_end","turn":"p-2"}"#,
            ],
            4,
            "before any context_tokens",
        ),
    ];
    for (events, line, needle) in cases {
        let e = error_of(&trace_2(&header, events));
        assert_eq!(e.line, line, "{events:?}: {e}");
        assert!(e.message.contains(needle), "{events:?}: {e}");
    }
}

/// Three lines parked behind one turn, no reads, so every figure is worked out by hand.
#[test]
fn the_token_figure_equals_the_hand_computed_value() {
    let text = trace_2(
        &header_2(4, 2),
        &[
            r#"{"ev":"turn_start","turn":"p-1","context_tokens":1000}"#,
            r#"{"ev":"completion","request":1,"line":"aaaa","card":"k1"}"#,
            r#"{"ev":"completion","request":2,"line":"bbbbbbb","card":"k1"}"#,
            r#"{"ev":"completion","request":3,"line":"cc","card":"k2"}"#,
            r#"{"ev":"turn_end","turn":"p-1","context_tokens":2000,"calls":5}"#,
        ],
    );
    let result = workload::run(&workload::parse(&text).expect("parses")).expect("runs");
    let boundary = &result.boundaries[0];
    assert_eq!(boundary.context_tokens, Some(2000));
    // Today: three wake-up turns of "aaaa\n", "bbbbbbb\n", "cc\n" (5, 8, 3 characters). Each
    // makes 2 calls reading the context before it: 2000, 2000 + 5/4 = 2001, 2000 + 13/4 = 2003.
    let today = 2 * (2000 + 2001 + 2003);
    assert_eq!(today, 12_008);
    assert_eq!(result.today.cache_read_tokens, Some(today));
    assert_eq!(boundary.today_cache_read_tokens, Some(today));
    // parkline: one batch turn, 2 calls reading the context at the boundary.
    assert_eq!(result.parkline.cache_read_tokens, Some(4000));
    assert_eq!(boundary.parkline_cache_read_tokens, Some(4000));
    // Calls: the turn's 5, plus 2 per wake-up turn.
    assert_eq!(result.today.calls, Some(5 + 3 * 2));
    assert_eq!(result.parkline.calls, Some(5 + 2));
    assert_eq!(result.cards, Some(2));
    let report = workload::report(&result);
    assert_eq!(report.today.calls_per_card, Some(5.5));
    assert_eq!(report.parkline.calls_per_card, Some(3.5));
    assert_eq!(report.today.replay_turns_per_boundary, Some(3.0));
    assert_eq!(report.parkline.replay_turns_per_boundary, Some(1.0));
    // Context delta per card: from 1000 at the first figure to 2000 + what each policy handed
    // after the last figure (today 16 characters: 4 tokens), over 2 cards.
    assert_eq!(result.today.context_last_tokens, Some(2004));
    assert_eq!(report.today.context_delta_per_card_tokens, Some(502.0));
    // parkline's batch turn is the crate's Batch::text(), whatever its framing.
    let batch = result.parkline.delivered_chars;
    assert!(batch > 16, "the batch turn has a header: {batch}");
    let parkline_last = 2000 + (batch / 4) as u64;
    assert_eq!(result.parkline.context_last_tokens, Some(parkline_last));
    assert_eq!(
        report.parkline.context_delta_per_card_tokens,
        Some((parkline_last - 1000) as f64 / 2.0)
    );
}

/// The trace records today's context; parkline's wake-up turn reads it less what parkline did
/// not hand (here: the repeat today's second n:1 peek hands). One character per token, so the
/// difference is exact.
#[test]
fn parkline_s_context_is_today_s_less_what_it_did_not_hand() {
    let text = trace_2(
        &header_2(1, 1),
        &[
            r#"{"ev":"turn_start","turn":"p-1","context_tokens":50000}"#,
            r#"{"ev":"child_turn","child":"c1","turn":"c1-1","chars":300}"#,
            r#"{"ev":"read","child":"c1","n":1}"#,
            r#"{"ev":"read","child":"c1","n":1}"#,
            r#"{"ev":"completion","request":1,"line":"done"}"#,
            r#"{"ev":"turn_end","turn":"p-1"}"#,
        ],
    );
    let result = workload::run(&workload::parse(&text).expect("parses")).expect("runs");
    assert_eq!(result.today.repeated_chars, 300);
    let saved = result.today.read_chars - result.parkline.read_chars;
    // The second since read hands no turn, only its framing: about the repeat's 300 less.
    assert!(saved > 250, "the repeat is not sent again: {saved}");
    let boundary = &result.boundaries[0];
    let today = 50_000 + result.today.read_chars as u64;
    assert_eq!(boundary.context_tokens, Some(today));
    assert_eq!(boundary.today_cache_read_tokens, Some(today));
    assert_eq!(
        boundary.parkline_cache_read_tokens,
        Some(today - saved as u64)
    );
}

/// The session's wall time in the seed: 2026-09-07 15:26 to 2026-09-08 04:23.
const S966_HOURS: f64 = 12.0 + 57.0 / 60.0;

#[test]
fn s966_cost_today_vs_parkline_keeps_the_relations_the_seed_states() {
    let result = shipped();
    let report = workload::report(&result);
    let (today, parkline) = (&report.today, &report.parkline);
    // Replay turns at the long turn's end: one per parked line today, one batch with parkline.
    assert_eq!(report.largest_boundary_parked, Some(13));
    assert_eq!(today.replay_turns_at_largest_boundary, Some(13));
    assert_eq!(parkline.replay_turns_at_largest_boundary, Some(1));
    assert!(parkline.replay_turns_per_boundary < today.replay_turns_per_boundary);
    // "13 replays / 9.9 M cache-read tokens": today's estimate at that boundary, from the
    // reconstructed context and the wake-up turns the crate hands, is the seed's figure (the
    // lines' own growth of the context adds well under 0.1 %).
    let today_long = today
        .cache_read_tokens_at_largest_boundary
        .expect("in the trace");
    assert!(
        (9_900_000..=9_910_000).contains(&today_long),
        "about 9.9 M, got {today_long}"
    );
    // parkline reads the context once there, and a smaller one (it handed less before).
    let parkline_long = parkline
        .cache_read_tokens_at_largest_boundary
        .expect("in the trace");
    let context = result
        .boundaries
        .iter()
        .find(|b| b.parked == 13)
        .and_then(|b| b.context_tokens)
        .expect("context at the long boundary");
    assert!(parkline_long < context, "{parkline_long} vs {context}");
    assert!(today_long > 13 * parkline_long);
    let (today_all, parkline_all) = (
        today.cache_read_tokens.expect("in the trace"),
        parkline.cache_read_tokens.expect("in the trace"),
    );
    assert!(today_all > today_long && parkline_all < today_all);
    // "context per hire 35.8 k": today's per-card context delta; parkline's is smaller by what it
    // did not hand, at 4 characters per token over the 19 cards.
    assert_eq!(report.cards, Some(19));
    let delta = today.context_delta_per_card_tokens.expect("in the trace");
    assert!((35_700.0..=35_900.0).contains(&delta), "{delta}");
    let saved_per_card = (today.handed_chars - parkline.handed_chars) as f64 / 4.0 / 19.0;
    let parkline_delta = parkline
        .context_delta_per_card_tokens
        .expect("in the trace");
    assert!(
        (delta - parkline_delta - saved_per_card).abs() < 1.0,
        "{delta} - {parkline_delta} vs {saved_per_card}"
    );
    // "calls/hour 59": today's calls over the session's hours; parkline saves one call per
    // wake-up turn it does not make.
    let (today_calls, parkline_calls) = (
        today.calls.expect("in the trace"),
        parkline.calls.expect("in the trace"),
    );
    let per_hour = today_calls as f64 / S966_HOURS;
    assert!((57.0..=61.0).contains(&per_hour), "{per_hour}");
    assert_eq!(
        today_calls - parkline_calls,
        (today.wake_up_turns - parkline.wake_up_turns) as u64
    );
    assert!(parkline.calls_per_card < today.calls_per_card);
    // Labelled reconstructed, and from what.
    assert!(!report.recorded);
    for figure in ["context_tokens", "calls", "cards", "wake_up_calls"] {
        assert!(report.reconstructed.contains_key(figure), "{figure}");
    }
    assert!(report.reconstructed["context_tokens"].contains("9,900,000 / 13 = 761,538"));
}

/// The value of `label`'s row in the table: (today's, parkline's) cells.
fn row<'a>(table: &'a str, label: &str) -> (&'a str, &'a str) {
    let line = table
        .lines()
        .find(|line| line.starts_with(label))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{table}"));
    let cells: Vec<&str> = line[label.len()..]
        .split("  ")
        .filter(|c| !c.trim().is_empty())
        .collect();
    assert_eq!(cells.len(), 2, "{line}");
    (cells[0].trim(), cells[1].trim())
}

#[test]
fn json_parses_and_carries_the_same_numbers_as_the_table() {
    let result = shipped();
    let table = workload::render(&result);
    let json: serde_json::Value = serde_json::from_str(&workload::json(&result)).expect("json");
    assert_eq!(json["report"], workload::REPORT_FORMAT);
    assert_eq!(json["trace"], workload::FORMAT);
    assert_eq!(json["recorded"], false);
    assert_eq!(json["cards"], 19);
    let integer = |v: &serde_json::Value| v.as_u64().expect("integer").to_string();
    let fixed =
        |v: &serde_json::Value, digits: usize| format!("{:.digits$}", v.as_f64().expect("number"));
    let (t, p) = (&json["today"], &json["parkline"]);
    let checks: Vec<(&str, String, String)> = vec![
        (
            "wake-up turns",
            integer(&t["wake_up_turns"]),
            integer(&p["wake_up_turns"]),
        ),
        (
            "replay turns per boundary (mean)",
            fixed(&t["replay_turns_per_boundary"], 2),
            fixed(&p["replay_turns_per_boundary"], 2),
        ),
        (
            "replay turns at the largest boundary (13 lines)",
            integer(&t["replay_turns_at_largest_boundary"]),
            integer(&p["replay_turns_at_largest_boundary"]),
        ),
        (
            "characters handed to the parent",
            integer(&t["handed_chars"]),
            integer(&p["handed_chars"]),
        ),
        (
            "characters repeated",
            integer(&t["repeated_chars"]),
            integer(&p["repeated_chars"]),
        ),
        (
            "share repeated, partial turns counted",
            format!("{} %", fixed(&t["repeated_with_partial_percent"], 1)),
            format!("{} %", fixed(&p["repeated_with_partial_percent"], 1)),
        ),
        (
            "cache-read tokens on wake-up turns (estimate)",
            integer(&t["cache_read_tokens"]),
            integer(&p["cache_read_tokens"]),
        ),
        (
            "  at the largest boundary (13 lines)",
            integer(&t["cache_read_tokens_at_largest_boundary"]),
            integer(&p["cache_read_tokens_at_largest_boundary"]),
        ),
        ("parent calls", integer(&t["calls"]), integer(&p["calls"])),
        (
            "parent calls per card (19 cards)",
            fixed(&t["calls_per_card"], 2),
            fixed(&p["calls_per_card"], 2),
        ),
        (
            "per-card context delta, tokens (estimate)",
            fixed(&t["context_delta_per_card_tokens"], 1),
            fixed(&p["context_delta_per_card_tokens"], 1),
        ),
    ];
    for (label, today, parkline) in checks {
        assert_eq!(
            row(&table, label),
            (today.as_str(), parkline.as_str()),
            "{label}"
        );
    }
    // The same numbers as the run itself, not only as the table.
    assert_eq!(
        t["cache_read_tokens"].as_u64(),
        result.today.cache_read_tokens
    );
    assert_eq!(
        json["boundaries"].as_array().map(Vec::len),
        Some(result.boundaries.len())
    );
    // Stable field names: a dashboard reads these; spec/workload.md lists them.
    let keys: Vec<&str> = t
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "cache_read_tokens",
        "cache_read_tokens_at_largest_boundary",
        "calls",
        "calls_per_card",
        "context_delta_per_card_tokens",
        "delivered_chars",
        "handed_chars",
        "partial_chars",
        "partial_reads",
        "partial_repeated_chars",
        "policy",
        "reads",
        "read_chars",
        "repeated_chars",
        "repeated_percent",
        "repeated_read_percent",
        "repeated_turns",
        "repeated_with_partial_chars",
        "repeated_with_partial_percent",
        "replay_turns_at_largest_boundary",
        "replay_turns_per_boundary",
        "wake_up_turns",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
}

#[test]
fn the_binary_prints_the_json_report_with_json() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_parkline"))
        .args(["workload", "--json"])
        .output()
        .expect("run parkline");
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).expect("utf-8");
    assert_eq!(text.lines().count(), 1, "one JSON object on one line");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(text.trim_end(), workload::json(&shipped()));
    assert_eq!(value["today"]["replay_turns_at_largest_boundary"], 13);
}
