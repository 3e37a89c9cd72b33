//! `parkline workload`: the shipped s966 trace through today's policy and parkline's, and the
//! trace format's errors, each naming its line.

use parkline_cli::workload::{self, S966, TraceError, WorkloadRun};

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
    assert!(table.contains("wake-up turns at the largest boundary (13 lines)"));
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
