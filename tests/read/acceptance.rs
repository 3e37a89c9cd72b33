//! Seed acceptance 4: `agent_read{sid, since:<cursor>}` on a working child returns only the turns
//! the caller does not hold, plus the partial turn.

use parkline::read::{Cursor, Partial, Selector};

use super::{child, push, read, seqs, since};

/// R4, R6, R10, R11. Seed acceptance 4: `agent_read{sid, since:<cursor>}` on a working child
/// returns only unread turns plus the partial turn; `n:1` behaviour unchanged (the "latest, may repeat"
/// read).
///
/// The scenario is the seed's: a planner peeks at a working child (s980-1) again and again.
#[test]
fn acceptance_4_since_cursor_returns_only_unread_turns_plus_partial() {
    //= spec/read.md#r4-since-returns-only-what-is-new
    //= type=test
    //# A `since:<cursor>` read MUST select exactly the turns with seq greater than the cursor's, in
    //# seq order, and MUST attach the partial turn (as far as it fits, R10) and a next cursor.
    //= spec/read.md#r6-no-repeat
    //= type=test
    //# Following the next cursors, a caller MUST NOT be given a turn twice (whole or as an
    //# excerpt).
    //= spec/read.md#r11-n-k-keeps-today-s-meaning-the-latest-may-repeat-read
    //= type=test
    //# An `n:<k>` read MUST select the latest `k` turns (fewer if the child has fewer), and MUST
    //# return them whether or not the caller has them already.
    let mut s980 = child("s980-1");
    let finished = "x".repeat(2500); // the seed's 2-3 k char turn re-sent on every n:1 peek
    push(&mut s980, 1, &finished);
    s980.set_partial(Some("step 1 of 3".into()));
    let budget = 8000;

    // First peek with since: the finished turn and the partial turn.
    let first = since(&s980, &s980.start_cursor(), budget);
    assert_eq!(seqs(&first), [1]);
    assert_eq!(first.partial, Partial::Whole { chars: 11 });
    assert!(first.text.contains(&finished));
    assert!(first.text.contains("[in-flight: 11 chars]\nstep 1 of 3\n"));
    let cursor = first
        .next
        .clone()
        .expect("since reads return a next cursor");

    // The child keeps working; no turn completes. Peeking again returns no completed turn,
    // only the partial turn: the finished turn is NOT re-sent.
    s980.set_partial(Some("step 2 of 3".into()));
    let second = since(&s980, &cursor, budget);
    assert!(second.whole.is_empty() && second.excerpt.is_none());
    assert!(!second.text.contains(&finished));
    assert!(second.text.contains("step 2 of 3"));
    assert_eq!(
        second.partial,
        Partial::Replaced {
            shown: 11,
            total: 11
        }
    );
    assert_eq!(
        second.next.as_ref().map(Cursor::seq),
        Some(cursor.seq()),
        "nothing new: the cursor stays at turn 1"
    );

    // A turn completes and the next one is partial: only the new turn plus the partial turn.
    push(&mut s980, 2, "second turn done");
    s980.set_partial(Some("step 3 of 3".into()));
    let third = since(&s980, &cursor, budget);
    assert_eq!(seqs(&third), [2]);
    assert!(!third.text.contains(&finished));
    assert!(third.text.contains("second turn done") && third.text.contains("step 3 of 3"));

    // n:1 behaves as before: the latest completed turn plus the partial turn, on every peek, whether
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
    s.set_partial(Some("working".into()));
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
        // Each `since` window's framing names two cursors (header and trailer).
        n1_chars > 6 * 2500 && since_chars < 2500 + 6 * 250,
        "{n1_chars} vs {since_chars}"
    );
}
