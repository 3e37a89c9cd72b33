//! Section 5: the v3 cursor names the turn it follows, so a transcript rebuilt shorter and grown
//! back is told from the one the cursor was handed out for (5.2); the partial-turn record is
//! checked with 64 bits (5.1); and a kept v2 cursor still reads, marked unchecked (5.3).

use parkline::ErrorKind;
use parkline::read::{Cursor, Partial, ReadRequest, Selector, Transcript, TurnSeq};
use parkline_model::read::crc32;

use super::{child, push, read, seqs, since, turn_id};

/// The transcript the daemon rebuilds after a restart: `kept` of the old turns, then `new`
/// turns under new ids at the seqs after them.
fn rebuilt(kept: u64, new: std::ops::Range<u64>) -> Transcript {
    let mut c = child("c");
    for seq in 1..=kept {
        push(&mut c, seq, &format!("turn {seq}"));
    }
    for seq in new {
        c.push_turn(
            turn_id(&format!("new{seq}")),
            TurnSeq(seq),
            format!("new {seq}"),
        )
        .expect("seqs increase");
    }
    c
}

/// The reproduction of the finding: the caller holds the cursor after t5; the daemon rebuilds
/// the transcript from t1 and t2, and new3..new6 arrive at seqs 3..6. A cursor that named only
/// its seq read on from seq 5 and gave new6 alone: new3..new5 were never delivered.
#[test]
fn r5_a_rebuilt_transcript_grown_back_refuses_the_old_cursor() {
    //= spec/read.md#5-2-a-transcript-rebuilt-shorter
    //= type=test
    //# A read with a cursor whose turn check does not match the id of the turn the
    //# transcript has at the cursor's seq, or with a cursor at a seq where the transcript
    //# has no turn, MUST fail with `CursorDiverged`, changing nothing.
    let before = rebuilt(5, 6..6);
    let held = since(&before, &before.start_cursor(), 4000)
        .next
        .expect("a since read gives a next cursor");
    assert_eq!(held.seq(), TurnSeq(5));

    let after = rebuilt(2, 3..7);
    let err = after
        .read(&ReadRequest::new(Selector::Since(held.clone()), 4000))
        .expect_err("the turn at seq 5 is another turn now");
    assert_eq!(err.kind(), ErrorKind::CursorDiverged);
    assert!(err.to_string().contains("since:turn:<id>"), "{err}");
    assert_eq!(err.resume_cursor(), Some(&after.start_cursor()));

    // The way on the error names: after the last turn the caller holds that survived.
    let resumed = read(&after, Selector::SinceTurn(turn_id("t2")), 4000);
    assert_eq!(seqs(&resumed), [3, 4, 5, 6]);
    // The same transcript rebuilt from the same turns reads the cursor as before.
    assert!(since(&rebuilt(5, 6..6), &held, 4000).whole.is_empty());
}

/// Section 5.2: a cursor at a seq where the rebuilt transcript has no turn is refused too, and a
/// cursor at the start never is.
#[test]
fn r5_a_cursor_at_a_seq_with_no_turn_diverges() {
    let before = rebuilt(3, 4..4);
    let held = since(&before, &before.start_cursor(), 4000)
        .next
        .expect("next");
    let mut after = child("c");
    push(&mut after, 1, "turn 1");
    after
        .push_turn(turn_id("new5"), TurnSeq(5), "new 5")
        .expect("seqs increase");
    let err = after
        .read(&ReadRequest::new(Selector::Since(held), 4000))
        .expect_err("no turn at seq 3");
    assert_eq!(err.kind(), ErrorKind::CursorDiverged);
    assert_eq!(seqs(&since(&after, &after.start_cursor(), 4000)), [1, 5]);
}

/// Section 5.1: two 26-char partial turns with the same CRC-32 (found by a birthday search). With
/// the v3 record's CRC-64 the rewrite is seen as replaced; a v2 record, checked with CRC-32 as
/// section 5.3 says, takes it for grown and gives only `; next`.
#[test]
fn r15_a_crc32_collision_of_the_partial_turn_is_told_apart() {
    //= spec/read.md#5-3-a-cursor-of-version-2
    //= type=test
    //# The header of a read with a v2 cursor past seq 0 MUST end in ` (v2 cursor: turn
    //# unchecked)` before its `]`, and the window MUST say so as a value
    //# (`Window::cursor_unchecked`).
    let (first, twin) = ("mmbkbbcahlfwldncgnhmcxmlmg", "qsbnowadwglncxkhuswniyweka");
    assert_eq!(crc32(first.as_bytes()), crc32(twin.as_bytes()));
    let mut c = child("c");
    push(&mut c, 1, "one");
    c.set_partial(Some(first.to_string()));
    let given = since(&c, &c.start_cursor(), 4000).next.expect("next");
    c.set_partial(Some(format!("{twin}; next")));
    let again = since(&c, &given, 4000);
    assert_eq!(
        again.partial,
        Partial::Replaced {
            shown: 32,
            total: 32
        }
    );

    let v2 = Cursor::parse(&v2_text(1, Some((26, 1, crc32(first.as_bytes())))))
        .expect("a v2 cursor parses");
    let spliced = since(&c, &v2, 4000);
    assert!(spliced.cursor_unchecked);
    assert!(spliced.text.starts_with(&format!(
        "[parkline read c since:{v2} (v2 cursor: turn unchecked)]\n"
    )));
    assert_eq!(
        spliced.partial,
        Partial::New {
            from: 26,
            seen: 26,
            total: 32
        }
    );
}

/// The text of a v2 cursor of child `c` at `seq`, written as section 5.3 specifies it.
fn v2_text(seq: u64, seen: Option<(u64, u64, u32)>) -> String {
    let seen = seen.map_or("0".to_string(), |(chars, after, prefix)| {
        format!("{chars:x}-{after:x}-{prefix:08x}")
    });
    let check = crc32(format!("parkline-cursor-v2 {seq:x} {seen} c").as_bytes());
    format!("v2.{seq:x}.{seen}.{check:08x}.c")
}

/// Section 5.3: a kept v2 cursor reads where the transcript has a turn at its seq, marked
/// unchecked, and hands on a v3 cursor; at seq 0 it reads unmarked; where there is no turn at its
/// seq it diverges, and past the end it is ahead.
#[test]
fn r16_a_kept_v2_cursor_reads_on_marked_unchecked() {
    let mut c = child("c");
    for seq in [1, 2, 4] {
        push(&mut c, seq, &format!("turn {seq}"));
    }
    let at_2 = Cursor::parse(&v2_text(2, None)).expect("v2 parses");
    let window = since(&c, &at_2, 4000);
    assert_eq!(seqs(&window), [4]);
    assert!(window.cursor_unchecked);
    let next = window.next.expect("next");
    assert!(next.to_string().starts_with("v3.4."), "{next}");
    assert!(!since(&c, &next, 4000).cursor_unchecked);

    let start = Cursor::parse(&v2_text(0, None)).expect("v2 parses");
    let from_start = since(&c, &start, 4000);
    assert!(!from_start.cursor_unchecked);
    assert!(
        from_start
            .text
            .starts_with(&format!("[parkline read c since:{start}]\n"))
    );
    assert_eq!(seqs(&from_start), [1, 2, 4]);

    let kinds = [3, 9].map(|seq| {
        let cursor = Cursor::parse(&v2_text(seq, None)).expect("v2 parses");
        c.read(&ReadRequest::new(Selector::Since(cursor), 4000))
            .map(drop)
            .map_err(|e| e.kind())
    });
    assert_eq!(
        kinds,
        [Err(ErrorKind::CursorDiverged), Err(ErrorKind::CursorAhead)]
    );
}

/// Section 5: a forged v3 cursor whose check is recomputed is still refused when its fields
/// break the rules: no turn named past seq 0, a turn named at seq 0, a record of 0 chars.
#[test]
fn r7_a_rechecked_forgery_of_the_v3_fields_is_damaged() {
    let check = |fields: &str| {
        let sum = crc32(format!("parkline-cursor-v3 {} c", fields.replace('.', " ")).as_bytes());
        format!("v3.{fields}.{sum:08x}.c")
    };
    let good = check("1.5732c817b025d2e8.0");
    assert_eq!(Cursor::parse(&good).map(|c| c.seq()).ok(), Some(TurnSeq(1)));
    for fields in [
        "1.0.0",
        "0.5732c817b025d2e8.0",
        "1.5732c817b025d2e8.0-1-0000000000000000",
        "1.5732c817b025d2e8.1-1-00000000",
        "1.5732c817b025d2e8",
    ] {
        let err = Cursor::parse(&check(fields)).expect_err(fields);
        assert_eq!(err.kind(), ErrorKind::CursorDamaged, "{fields}");
    }
}

/// Section 5.2: `resume_after` with the ids the follower holds is the cursor after the last of
/// them the rebuilt transcript still has (the start cursor when none), whatever the turns at
/// the seqs after it are now; reading from it gives every turn the follower lost, none it holds.
#[test]
fn r5_resume_after_is_the_cursor_after_the_last_held_turn_that_survived() {
    //= spec/read.md#5-2-a-transcript-rebuilt-shorter
    //= type=test
    //# `Transcript::resume_after(held)` MUST return the cursor just after the last turn of
    //# `held` that the transcript still has, or the start cursor when it has none of them.
    let ids = |names: &[&str]| names.iter().map(|name| turn_id(name)).collect::<Vec<_>>();
    let held = ids(&["t1", "t2", "t3", "t4", "t5"]);
    let after = rebuilt(2, 3..7);
    let resume = after.resume_after(&held);
    assert_eq!(
        resume,
        after.cursor_after(&turn_id("t2")).expect("t2 is kept")
    );
    assert_eq!(seqs(&since(&after, &resume, 4000)), [3, 4, 5, 6]);
    // Not grown back: the cursor at the last turn, as CursorAhead's advice says.
    let shorter = rebuilt(2, 3..3);
    assert_eq!(shorter.resume_after(&held).seq(), TurnSeq(2));
    assert!(
        since(&shorter, &shorter.resume_after(&held), 4000)
            .whole
            .is_empty()
    );
    // None of them survived, or none held: the start cursor.
    assert_eq!(
        after.resume_after(&ids(&["x1", "x2"])),
        after.start_cursor()
    );
    assert_eq!(after.resume_after(&[]), after.start_cursor());
    // The last held one that survived counts, not the newest of the transcript.
    assert_eq!(after.resume_after(&ids(&["t1", "new9"])).seq(), TurnSeq(1));
}

/// Section 5.2, measured on the read harness's follower: the child works through three turns,
/// the daemon restarts and rebuilds the transcript without the last, and the child goes on
/// under new ids, read before (the old cursor is ahead) or after (it diverges) the new turns.
/// Resuming with `resume_after` re-sends 0 turns; the start cursor the refusal offers as a value
/// would have re-sent the 2 the follower still holds.
#[test]
fn r5_a_follower_whose_child_lost_its_last_turn_resends_nothing() {
    use parkline_harness::read::{ReadOp, check};
    let read = ReadOp::ReadSince {
        budget: 520,
        history: 0,
    };
    let turn = |letter| [ReadOp::Grow { len: 5, letter }, ReadOp::Complete { gap: 0 }];
    let restart = [read.clone(), ReadOp::Rebuild { keep: 2 }];
    let ahead = [
        &turn(0)[..],
        &turn(1),
        &turn(2),
        &restart,
        std::slice::from_ref(&read),
        &turn(3),
    ]
    .concat();
    let diverged = [
        &turn(0)[..],
        &turn(1),
        &turn(2),
        &restart,
        &turn(3),
        &turn(4),
    ]
    .concat();
    for (name, mut ops, followed) in [("ahead", ahead, 4), ("diverged", diverged, 5)] {
        ops.push(read.clone());
        let report = check(&ops).unwrap_or_else(|d| panic!("{name}: {d}"));
        assert_eq!(report.recoveries, 1, "{name}");
        assert_eq!(report.resent_turns, 0, "{name}");
        assert_eq!(report.resent_from_start, 2, "{name}");
        assert_eq!(report.followed_turns, followed, "{name}");
    }
}
