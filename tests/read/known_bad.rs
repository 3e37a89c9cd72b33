//! The known-bad read protocols (the harness's wrappers around `Transcript::read`), each caught
//! by the differential check, by the proptest search and on the crate's answers alone.

use parkline::read::{Cursor, ReadRequest, Selector, Transcript, TurnSeq, Window};
use parkline_harness::known_bad::{KnownBad, read_as};
use parkline_harness::read::{self as read_harness, ReadOp, check, check_with};
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};

use super::{busy_child, child, push, since};

/// A scenario every known-bad read switch gets wrong: a turn larger than the budget, then two
/// short turns that do not fit one read, with a partial turn and an open request.
pub(super) fn known_bad_scenario() -> Vec<ReadOp> {
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
fn since_as(transcript: &Transcript, bad: KnownBad, cursor: &Cursor, chars_max: usize) -> Window {
    let request = ReadRequest::new(Selector::Since(cursor.clone()), chars_max);
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
    // turns-only-budget: the text is longer than chars_max.
    let c = busy_child();
    assert!(since(&c, &c.start_cursor(), 300).chars <= 300);
    let window = since_as(&c, KnownBad::TurnsOnlyBudget, &c.start_cursor(), 300);
    assert!(window.chars > 300, "R1 broken");
}
