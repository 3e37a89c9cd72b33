//! The delivery model: the plain reference follows the contract of `ARCHITECTURE.md` and
//! `spec/delivery.md`; the correct protocol holds every property at the default bounds; every
//! known-bad variant is caught for the property it breaks.
//!
//! `PARKLINE_MODEL_SCALE=n` (default 0) adds `n` lines to the exhaustive BFS/DFS check.

use parkline_model::delivery::{
    self, Action, Bounds, DeliveryModel, Phase, RefBatch, RefError, RefItem, Reference, TurnError,
    Variant, notified, parse_turn, split, turn_text,
};
use parkline_model::search::shortest_path;
use stateright::{Checker, Expectation, HasDiscoveries, Model};

fn scale() -> usize {
    std::env::var("PARKLINE_MODEL_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn item(seq: u64, line: &str) -> RefItem {
    RefItem {
        seq,
        request: seq + 4061,
        line: line.into(),
        failures: 0,
        handed: 0,
    }
}

/// The five lines of spec/delivery.md section 4, seqs 40..44.
fn spec_lines() -> Vec<RefItem> {
    [
        r#"[delegation r-4101 done] turn sj-7a1c-2 outcome ok; agent_read{turn:"sj-7a1c-2"}"#,
        r#"[delegation r-4102 done] turn sj-90be-1 outcome failed; agent_read{turn:"sj-90be-1"}"#,
        r#"[delegation r-4103 done] turn sj-33f0-4 outcome ok; agent_read{turn:"sj-33f0-4"}"#,
        r#"[delegation r-4104 done] turn sj-5d21-1 outcome ok; agent_read{turn:"sj-5d21-1"}"#,
        r#"[delegation r-4105 done] turn sj-c4e8-3 outcome cancelled; agent_read{turn:"sj-c4e8-3"}"#,
    ]
    .iter()
    .zip(40..)
    .map(|(line, seq)| item(seq, line))
    .collect()
}

// --- the plain reference ----------------------------------------------------------------------

#[test]
fn d11_d12_split_matches_the_spec_table() {
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# The membership of a new batch MUST be `k = min(split(parked, budget), cap)` items, the first
    //# `k` of the parked list, where `split` is this pure function:
    //= spec/delivery.md#d12-budget
    //= type=test
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    let lines = spec_lines();
    let costs: Vec<usize> = lines.iter().map(RefItem::cost).collect();
    assert_eq!(costs, [81, 85, 81, 81, 88]);
    let expected = [
        (0, 1),
        (80, 1),
        (81, 1),
        (165, 1),
        (166, 2),
        (246, 2),
        (247, 3),
        (327, 3),
    ];
    for (budget, k) in expected {
        assert_eq!(split(&lines, budget), k, "budget {budget}");
    }
    for (budget, k) in [(328, 4), (415, 4), (416, 5), (100_000, 5)] {
        assert_eq!(split(&lines, budget), k, "budget {budget}");
    }
    assert_eq!(split(&[], 0), 0);
    // Characters, not bytes: "é" is one character of two bytes.
    assert_eq!(split(&[item(1, "éé"), item(2, "é")], 5), 2);
    assert_eq!(split(&[item(1, "éé"), item(2, "é")], 4), 1);
}

#[test]
fn d4_turn_text_is_exact_for_the_spec_examples() {
    //= spec/delivery.md#d4-framing
    //= type=test
    //# The turn text of a batch MUST be exactly the header, the body and the trailer, each line
    //# followed by one `\n` (including the last), and nothing else, where the body is each item's
    //# line followed by `\n`:
    let lines = spec_lines();
    let batch = RefBatch {
        id: 12,
        attempt: 1,
        items: lines[..3].to_vec(),
        remaining: 0,
        seen: 0,
    };
    let body = format!("{}\n{}\n{}\n", lines[0].line, lines[1].line, lines[2].line);
    let want = format!(
        "[parkline batch 12 attempt 1: 3 of 3 parked lines, 0 seen before, {} bytes]\n{body}\
         [parkline batch 12 end: 0 parked lines still undelivered, crc32 {:08x}]\n",
        body.len(),
        crc32fast::hash(body.as_bytes())
    );
    assert_eq!(turn_text(&batch), want);
    let split_batch = RefBatch {
        id: 13,
        attempt: 1,
        items: lines[..2].to_vec(),
        remaining: 3,
        seen: 1,
    };
    let repeat = RefBatch {
        attempt: 2,
        ..split_batch.clone()
    };
    let body = format!("{}\n{}\n", lines[0].line, lines[1].line);
    let trailer = format!(
        "[parkline batch 13 end: 3 parked lines still undelivered, crc32 {:08x}]\n",
        crc32fast::hash(body.as_bytes())
    );
    let bytes = body.len();
    assert_eq!(
        turn_text(&split_batch),
        format!(
            "[parkline batch 13 attempt 1: 2 of 5 parked lines, 1 seen before, {bytes} bytes]\n{body}{trailer}"
        )
    );
    assert_eq!(
        turn_text(&repeat),
        format!(
            "[parkline batch 13 attempt 2, repeat: 2 of 5 parked lines, 1 seen before, {bytes} bytes]\n{body}{trailer}"
        )
    );
    // D3: a line is copied byte for byte, spaces and multi-byte characters included.
    let odd = RefBatch {
        id: 1,
        attempt: 1,
        items: vec![item(1, " é\t x ")],
        remaining: 0,
        seen: 0,
    };
    assert!(turn_text(&odd).contains("\n é\t x \n"));
    assert!(turn_text(&odd).contains(", 8 bytes]\n")); // bytes, not characters
}

/// The framing is read back exactly, whatever the lines hold: lines that imitate a header or a
/// trailer (of the same batch, with a right-looking CRC) stay lines; every damaged framing is
/// refused for the part it damages.
#[test]
fn framing_parse_turn_reads_back_forged_lines_and_refuses_damage() {
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# A reader of a turn text (the daemon checking what it hands over, the parent's reader, the
    //# tests and the model's reference) MUST read it this one way, and MUST refuse the text when
    //# any step fails:
    //= spec/delivery.md#d4a-one-reading-of-the-turn-text
    //= type=test
    //# The reader MUST NOT search the text for a header or trailer, and MUST NOT interpret a line.
    //= spec/delivery.md#d23-framing-read-back
    //= type=test
    //# For every batch handed over, reading its turn text as D4a says MUST give back exactly the
    //# batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line byte for
    //# byte, also when a line imitates a header or a trailer.
    let header = "[parkline batch 4 attempt 1: 1 of 1 parked lines, 0 seen before, 2 bytes]";
    let trailer_of = |body: &str| {
        format!(
            "[parkline batch 4 end: 0 parked lines still undelivered, crc32 {:08x}]",
            crc32fast::hash(body.as_bytes())
        )
    };
    let forged_trailer = trailer_of("a\n");
    let lines = ["a", header, forged_trailer.as_str(), "", " é "];
    let batch = RefBatch {
        id: 4,
        attempt: 3,
        items: lines.iter().zip(1..).map(|(l, seq)| item(seq, l)).collect(),
        remaining: 2,
        seen: 1,
    };
    let text = turn_text(&batch);
    let turn = parse_turn(&text).unwrap();
    assert_eq!(
        (
            turn.id,
            turn.attempt,
            turn.repeat,
            turn.k,
            turn.n,
            turn.seen,
            turn.remaining
        ),
        (4, 3, true, 5, 7, 1, 2)
    );
    assert_eq!(turn.lines, lines);
    // A reader that stopped at the first trailer-looking line would take 1 line; this one does not.
    let fake = format!("{header}\na\n{forged_trailer}\n");
    assert_eq!(parse_turn(&fake).map(|t| t.lines), Ok(vec!["a".to_owned()]));
    assert_eq!(parse_turn(&format!("{fake}x")), Err(TurnError::Trailer));
    let at = text.rfind("batch 4 end").unwrap();
    let other_id = format!("{}batch 5{}", &text[..at], &text[at + 7..]);
    let damaged = [
        ("", TurnError::Header),
        ("no header\n", TurnError::Header),
        (
            &text.replacen("attempt 3, repeat", "attempt 3", 1),
            TurnError::Header,
        ),
        (
            &text.replacen("attempt 3, repeat", "attempt 03, repeat", 1),
            TurnError::Header,
        ),
        (&text.replacen(" of 7 ", " of 4 ", 1), TurnError::Trailer),
        (&text.replacen("5 of 7", "4 of 7", 1), TurnError::Body),
        (&text.replacen("a\n", "b\n", 1), TurnError::Body),
        (&text[..text.len() - 1], TurnError::Trailer),
        (&other_id, TurnError::Trailer),
    ];
    for (text, want) in damaged {
        assert_eq!(parse_turn(text).map(|t| t.k), Err(want), "{text:?}");
    }
}

/// Group park: consecutive seqs in slice order, one step; a bad line or an exhausted counter
/// refuses the whole group; a crash during the append keeps none of it.
#[test]
fn group_park_is_all_or_nothing() {
    //= spec/delivery.md#d22-group-park
    //= type=test
    //# A crash during the append MUST leave all of the group's lines parked or none of them.
    let mut queue = Reference::new(3);
    queue.park(1, "a");
    assert_eq!(queue.park_all(&[(2, "b"), (3, "c")]), [2, 3]);
    let before = queue.clone();
    assert_eq!(
        queue.try_park_all(&[(4, "d"), (5, "e\nf")]),
        Err(RefError::InvalidLine(1))
    );
    assert_eq!(queue.try_park_all(&[]), Ok(vec![]));
    assert_eq!(queue, before);
    queue.crash_during_park_all(&[(4, "d"), (5, "e")]);
    assert_eq!(queue.mirror(), before.mirror());
    let seqs: Vec<u64> = queue.parked().iter().map(|i| i.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    let mut full = Reference::from_mirror(
        3,
        delivery::Mirror {
            next_seq: u64::MAX - 2,
            next_batch: 1,
            parked: vec![],
            in_flight: None,
            dead: vec![],
            cap: None,
            remembered: vec![],
        },
    )
    .unwrap();
    assert_eq!(
        full.try_park_all(&[(1, "x"), (2, "y"), (3, "z")]),
        Err(RefError::Exhausted)
    );
    assert_eq!(
        full.try_park_all(&[(1, "x"), (2, "y")]),
        Ok(vec![u64::MAX - 2, u64::MAX - 1])
    );
    assert_eq!(full.try_park(3, "z"), Err(RefError::Exhausted));
}

/// Hand-over counts and redrive: the count is raised by the batch and attempt records (a crash
/// before settle keeps it), `seen` counts the items handed over in an earlier batch, a redrive
/// puts dead letters back at their seq's place with failures 0 and the count kept.
#[test]
fn handed_seen_and_redrive_follow_the_records() {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# Every item MUST carry `handed`, the number of its hand-overs made durable: the `batch` and
    //# `attempt` records that named it since it was parked (`mirror.md` M3).
    //= spec/delivery.md#d20-seen-before-in-the-header
    //= type=test
    //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over (their
    //# count was above 0 before this batch's record), and the header MUST say it (`S seen before`,
    //# D4).
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# `Queue::redrive(seqs)` and `Queue::redrive_all()` MUST move the named dead letters (all of
    //# them) back to the parked list in one durable record (one append, one fsync), each at its
    //# seq's place in the parked list (which stays in seq order), with `failures` reset to 0 and
    //# `handed` kept.
    //= spec/delivery.md#d21-dead-letter-redrive
    //= type=test
    //# A seq that is not a dead letter, or is named twice, MUST make the call fail with `NotDead`,
    //# write nothing and not poison.
    let mut queue = Reference::new(1);
    queue.park_all(&[(1, "a"), (2, "b"), (3, "c")]);
    let first = queue.boundary(4).unwrap().unwrap();
    assert_eq!((first.seqs(), first.seen), (vec![1, 2], 0));
    assert!(notified(&first).iter().all(|e| e.handed == 1));
    queue.crash();
    let repeat = queue.boundary(4).unwrap().unwrap();
    assert_eq!((repeat.seen, repeat.items[0].handed), (0, 2));
    queue.settle(1, &[false, true]).unwrap(); // failures_max 1: seq 1 dies
    assert_eq!(queue.dead_letters()[0].handed, 2);
    assert_eq!(queue.redrive(&[]), Ok(vec![]));
    assert_eq!(queue.redrive(&[3]), Err(RefError::NotDead(3)));
    assert_eq!(queue.redrive(&[1, 1]), Err(RefError::NotDead(1)));
    let redriven = queue.redrive_all();
    assert_eq!(redriven, [1]);
    assert!(queue.dead_letters().is_empty());
    let parked: Vec<_> = queue
        .parked()
        .iter()
        .map(|i| (i.seq, i.failures, i.handed))
        .collect();
    assert_eq!(parked, [(1, 0, 2), (3, 0, 0)]); // at its seq's place, ahead of seq 3
    assert_eq!(queue.redrive_all(), Vec::<u64>::new());
    let again = queue.boundary(100).unwrap().unwrap();
    assert_eq!((again.seqs(), again.seen), (vec![1, 3], 1));
    assert_eq!(notified(&again)[0].handed, 3);
    // Redrive while a batch is in flight: the line joins the parked list, not the batch.
    queue.settle(again.id, &[false, true]).unwrap();
    queue.park(4, "d");
    let batch = queue.boundary(2).unwrap().unwrap();
    assert_eq!(batch.seqs(), [4]);
    assert_eq!(queue.redrive_all(), [1]);
    assert_eq!(
        queue.in_flight().map(|b| (b.seqs(), b.remaining)),
        Some((vec![4], 0))
    );
    assert_eq!(queue.parked()[0].seq, 1);
}

#[test]
fn d5_notified_is_one_event_per_item_with_the_repeat_mark() {
    let lines = spec_lines();
    let batch = RefBatch {
        id: 13,
        attempt: 2,
        items: lines[..2].to_vec(),
        remaining: 3,
        seen: 0,
    };
    let events = notified(&batch);
    let got: Vec<_> = events
        .iter()
        .map(|e| (e.request, e.seq, e.batch, e.attempt, e.repeat))
        .collect();
    assert_eq!(got, [(4101, 40, 13, 2, true), (4102, 41, 13, 2, true)]);
}

#[test]
fn d1_d2_d13_reference_batches_everything_parked_and_late_lines_wait() {
    //= spec/delivery.md#d1-batch-at-the-boundary
    //= type=test
    //# At a boundary that delivers a new batch, the batch MUST consist of lines that were parked at
    //# that moment, and only those, taken from the front of the parked list as `split` (D11)
    //# decides; with a budget that admits them all and no cap set, it MUST be every parked line, in
    //# ONE turn.
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A line parked after the boundary (while its batch is being persisted, handed over, notified
    //# or settled) MUST NOT join that batch and MUST NOT be counted in its `remaining`; it is
    //# delivered at a later boundary.
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A boundary with nothing parked and no recovered batch MUST return no batch.
    //= spec/delivery.md#d13-trailer-count
    //= type=test
    //# The trailer MUST state `remaining`: the number of lines parked at the batch's (original)
    //# boundary that are not in the batch.
    let mut queue = Reference::new(3);
    for i in 1..=13 {
        assert_eq!(queue.park(i, &format!("r{i} done")), i);
    }
    let batch = queue.boundary(10_000).unwrap().unwrap();
    assert_eq!(
        (batch.id, batch.attempt, batch.items.len(), batch.remaining),
        (1, 1, 13, 0)
    );
    assert_eq!(queue.park(14, "late"), 14); // D2: during delivery
    assert_eq!(queue.boundary(10_000), Err(RefError::BatchInFlight));
    let settled = queue.settle(1, &[true; 13]).unwrap();
    assert_eq!(settled.delivered, (1..=13).collect::<Vec<_>>());
    let next = queue.boundary(10_000).unwrap().unwrap();
    assert_eq!((next.id, next.seqs(), next.remaining), (2, vec![14], 0));
    queue.settle(2, &[true]).unwrap();
    assert_eq!(queue.boundary(10_000), Ok(None));
}

fn item_with(seq: u64, failures: u32) -> RefItem {
    RefItem {
        seq,
        request: seq % 7,
        line: "l".into(),
        failures,
        handed: 0,
    }
}

/// M6, D10: the reference models the counter rules. From a mirror at the limits: the last seq
/// and the last batch id are handed out once, then `Exhausted` with nothing changed; a recovered
/// batch at attempt u32::MAX is `Exhausted` and stays recovered; u64::MAX as a seq or batch id,
/// or a parked item with u32::MAX failures, is `Corrupt`.
#[test]
fn m6_d10_reference_counters_at_their_limits() {
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Then `park` (for the seq) and a `boundary` that would create a batch (for the batch id) MUST
    //# fail with `Exhausted`, write nothing and leave the handle usable (not poisoned, M10); a
    //# `boundary` with nothing parked still returns none, and a recovered batch is still handed
    //# over.
    let max = u64::MAX;
    let mirror = |parked: Vec<RefItem>, in_flight: Option<RefBatch>, next_batch| delivery::Mirror {
        next_seq: max - 1,
        next_batch,
        parked,
        in_flight,
        dead: vec![],
        cap: None,
        remembered: vec![],
    };
    let mut queue = Reference::from_mirror(3, mirror(vec![], None, max - 1)).unwrap();
    assert_eq!(queue.try_park(1, "last"), Ok(max - 1));
    let before = queue.clone();
    assert_eq!(queue.try_park(2, "none left"), Err(RefError::Exhausted));
    assert_eq!(queue, before);
    let batch = queue.boundary(100).unwrap().unwrap();
    assert_eq!(batch.id, max - 1);
    queue.settle(batch.id, &[false]).unwrap();
    assert_eq!(queue.boundary(100), Err(RefError::Exhausted));
    assert_eq!(queue.parked().len(), 1);

    let recovered = |attempt| RefBatch {
        id: 5,
        attempt,
        items: vec![RefItem {
            handed: u64::from(attempt),
            ..item_with(3, 0)
        }],
        remaining: 0,
        seen: 0,
    };
    // D10: a batch at the attempt ceiling is at every repeat bound: it is closed (its one item
    // dead), never handed over again.
    let mut queue =
        Reference::from_mirror(3, mirror(vec![], Some(recovered(u32::MAX)), 6)).unwrap();
    assert_eq!(queue.boundary(100), Ok(None));
    assert!(!queue.is_recovered());
    assert_eq!(queue.dead_letters().len(), 1);
    let mut queue = Reference::from_mirror(3, mirror(vec![], Some(recovered(u32::MAX - 1)), 6))
        .unwrap()
        .with_repeats_max(u32::MAX);
    assert_eq!(queue.boundary(100).unwrap().unwrap().attempt, u32::MAX);

    let corrupt = [
        mirror(vec![item_with(max, 0)], None, 1),
        mirror(vec![item_with(1, u32::MAX)], None, 1),
        mirror(
            vec![],
            Some(RefBatch {
                id: max,
                ..recovered(1)
            }),
            max,
        ),
    ];
    for mirror in corrupt {
        assert_eq!(
            Reference::from_mirror(3, mirror.clone()),
            Err(RefError::Corrupt),
            "{mirror:?}"
        );
    }
    // A parked item at u32::MAX - 1 failures dies at the next failure whatever failures_max.
    let mut queue =
        Reference::from_mirror(u32::MAX, mirror(vec![item_with(1, u32::MAX - 1)], None, 1))
            .unwrap();
    let batch = queue.boundary(100).unwrap().unwrap();
    assert_eq!(queue.settle(batch.id, &[false]).unwrap().dead, vec![1]);
    assert_eq!(queue.dead_letters()[0].failures, u32::MAX);
}

/// `from_mirror` refuses exactly the mirrors no correct queue holds, on each of its checks: a
/// dead letter at seq `u64::MAX`, an in-flight batch at attempt 0, an in-flight item counted
/// fewer hand-overs than its batch's attempt, a `seen` other than the items handed over before
/// the batch; and accepts the same mirrors with that one thing right (an item of an earlier batch
/// is counted more hand-overs than the attempt, and is `seen`).
#[test]
fn the_reference_recovers_exactly_the_mirrors_a_queue_can_hold() {
    let item = |seq: u64, handed: u64| RefItem {
        handed,
        ..item_with(seq, 0)
    };
    let batch = |attempt: u32, items: Vec<RefItem>, seen: usize| RefBatch {
        id: 4,
        attempt,
        items,
        remaining: 0,
        seen,
    };
    let mirror = |in_flight: Option<RefBatch>, dead: Vec<RefItem>| delivery::Mirror {
        next_seq: 10,
        next_batch: 5,
        parked: vec![],
        in_flight,
        dead,
        cap: None,
        remembered: vec![],
    };
    let good = [
        mirror(None, vec![item(2, 1)]),
        mirror(Some(batch(1, vec![item(3, 1)], 0)), vec![]),
        mirror(Some(batch(2, vec![item(3, 2)], 0)), vec![]),
        mirror(Some(batch(1, vec![item(3, 1), item(5, 3)], 1)), vec![]),
    ];
    for mirror in good {
        assert!(
            Reference::from_mirror(3, mirror.clone()).is_ok(),
            "{mirror:?}"
        );
    }
    let corrupt = [
        mirror(None, vec![item(u64::MAX, 1)]),
        mirror(Some(batch(0, vec![item(3, 0)], 0)), vec![]),
        mirror(Some(batch(2, vec![item(3, 1)], 0)), vec![]),
        mirror(Some(batch(1, vec![item(3, 1), item(5, 3)], 0)), vec![]),
        mirror(Some(batch(1, vec![item(3, 1)], 1)), vec![]),
    ];
    for mirror in corrupt {
        assert_eq!(
            Reference::from_mirror(3, mirror.clone()),
            Err(RefError::Corrupt),
            "{mirror:?}"
        );
    }
}

/// The reference's settle refuses a batch id when none is in flight (a fresh queue, a settled
/// batch settled twice), and keeps the dead letters in seq order when a redriven line dies again
/// after lines on both sides of it died.
#[test]
fn the_reference_settles_only_its_batch_and_files_the_dead_in_seq_order() {
    let mut queue = Reference::new(1);
    assert_eq!(queue.settle(1, &[]), Err(RefError::UnknownBatch));
    for request in 1..=3 {
        queue.park(request, "l");
    }
    let batch = queue.boundary(100).unwrap().unwrap();
    assert_eq!(
        queue.settle(batch.id, &[false; 3]).unwrap().dead,
        vec![1, 2, 3]
    );
    assert_eq!(
        queue.settle(batch.id, &[false; 3]),
        Err(RefError::UnknownBatch)
    );
    for seq in [2, 1] {
        assert_eq!(queue.redrive(&[seq]), Ok(vec![seq]));
        let batch = queue.boundary(100).unwrap().unwrap();
        assert_eq!(queue.settle(batch.id, &[false]).unwrap().dead, vec![seq]);
        let dead: Vec<u64> = queue.dead_letters().iter().map(|item| item.seq).collect();
        assert_eq!(dead, vec![1, 2, 3], "after seq {seq} died again");
    }
}

#[test]
fn d10_reference_replays_a_recovered_batch_as_a_repeat() {
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A batch persisted and not settled before a crash MUST, at the first boundary of the next
    //# life, be re-persisted and handed over again with the same batch id, the same items (same
    //# seqs, same lines, same order), the same `remaining`, an attempt one higher than the attempt
    //# stored for it, and the repeat mark, both in the header (D4) and on every notified event
    //# (D5).
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A recovered batch MUST be handed over again (as a repeat) before it can be settled.
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# A repeat MUST reuse its stored membership and `remaining` whatever budget is passed to the
    //# boundary that hands it over again, until the repeat bound closes it (D10).
    let mut queue = Reference::new(3);
    for i in 1..=3 {
        queue.park(i, "xxxx");
    }
    let first = queue.boundary(10).unwrap().unwrap();
    assert_eq!((first.seqs(), first.remaining), (vec![1, 2], 1));
    queue.crash();
    queue.park(4, "y");
    // A recovered batch is handed over again before it can be settled.
    assert_eq!(queue.settle(1, &[true, true]), Err(RefError::UnknownBatch));
    let again = queue.boundary(1_000).unwrap().unwrap(); // whatever the budget
    assert_eq!((again.id, again.attempt, again.remaining), (1, 2, 1));
    assert_eq!(again.seqs(), first.seqs());
    assert_eq!(again.seen, first.seen);
    // The cut hand-over counts: every item now shows 2 hand-overs.
    assert!(
        notified(&again)
            .iter()
            .all(|e| e.repeat && e.attempt == 2 && e.handed == 2)
    );
    queue.crash();
    let third = queue.boundary(1).unwrap().unwrap();
    assert_eq!((third.id, third.attempt), (1, 3));
    assert_eq!(queue.settle(1, &[true]), Err(RefError::OutcomeCount));
    assert_eq!(queue.settle(2, &[true, true]), Err(RefError::UnknownBatch));
    queue.settle(1, &[true, true]).unwrap();
    let next = queue.boundary(1_000).unwrap().unwrap();
    assert_eq!((next.id, next.attempt, next.seqs()), (2, 1, vec![3, 4]));
}

#[test]
fn d6_d7_d8_d17_reference_failures_stay_parked_in_seq_order_then_die() {
    //= spec/delivery.md#d6-per-request-independence
    //= type=test
    //# The delivery state of an item (parked, in flight, delivered, dead letter; its `failures`)
    //# MUST depend only on its own outcomes and on crashes; the outcome of one item MUST NOT drop,
    //# block, delay to a later boundary, or change the failure count of another item.
    //= spec/delivery.md#d7-failure-isolation
    //= type=test
    //# At settle, a failed item whose failure count stays below `failures_max` MUST stay parked
    //# with the same seq and `failures + 1`, and MUST be offered again at a later boundary in seq
    //# order (so it precedes lines parked after it); the delivered items of the same batch MUST
    //# leave the mirror.
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# An item whose failure count reaches `failures_max` (a positive integer, default 3) at a
    //# settle MUST move to the dead letters in that same settle.
    //= spec/delivery.md#d17-order
    //= type=test
    //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of it, so items
    //# in a batch are in seq order and a line is first offered only after every line with a lower
    //# seq was offered.
    let mut queue = Reference::new(2);
    queue.park(1, "a");
    queue.park(2, "b");
    let batch = queue.boundary(100).unwrap().unwrap();
    queue.park(3, "c");
    let settled = queue.settle(batch.id, &[false, true]).unwrap();
    assert_eq!((settled.delivered, settled.failed), (vec![2], vec![1]));
    let parked: Vec<_> = queue.parked().iter().map(|i| (i.seq, i.failures)).collect();
    assert_eq!(parked, [(1, 1), (3, 0)]);
    let retry = queue.boundary(100).unwrap().unwrap();
    assert_eq!(retry.seqs(), [1, 3]);
    let settled = queue.settle(retry.id, &[false, true]).unwrap();
    assert_eq!((settled.dead, settled.delivered), (vec![1], vec![3]));
    assert_eq!(queue.dead_letters().len(), 1);
    assert_eq!(queue.dead_letters()[0].failures, 2);
    assert_eq!(queue.boundary(100), Ok(None)); // D8: never offered again
    queue.crash();
    assert_eq!(queue.dead_letters().len(), 1); // kept
}

#[test]
fn d12_a_line_over_the_budget_goes_alone_and_whole() {
    //= spec/delivery.md#d12-budget
    //= type=test
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    let mut queue = Reference::new(3);
    queue.park(1, "0123456789");
    queue.park(2, "a");
    let batch = queue.boundary(4).unwrap().unwrap();
    assert_eq!(
        (batch.items[0].line.as_str(), batch.remaining),
        ("0123456789", 1)
    );
}

#[test]
fn d14_collected_changes_nothing_in_the_queue() {
    //= spec/delivery.md#d14-collected-is-not-consumed
    //= type=test
    //# Reading a line through `agent_read` ("collected") MUST NOT remove, skip, shorten or mark the
    //# line in the queue: a collected line MUST still be delivered (or dead-lettered) like any
    //# other.
    let model = DeliveryModel::default();
    let init = model.init_states().remove(0);
    let parked = model.next_state(&init, Action::Park(0)).unwrap();
    let collected = model.next_state(&parked, Action::Collected(1)).unwrap();
    assert_eq!(collected.queue, parked.queue);
    assert_eq!(collected.phase, parked.phase);
    assert_eq!(collected.collected, [1]);
    let bad = DeliveryModel::new(Bounds::default(), Variant::DropCollected);
    let dropped = bad.next_state(&parked, Action::Collected(1)).unwrap();
    assert_ne!(dropped.queue, parked.queue);
}

#[test]
fn the_model_steps_through_the_protocol_phases() {
    let model = DeliveryModel::default();
    let mut state = model.init_states().remove(0);
    for action in [Action::Park(0), Action::Park(1), Action::Boundary] {
        state = model.next_state(&state, action).unwrap();
    }
    assert!(matches!(&state.phase, Phase::Persisted(b) if b.seqs() == [1, 2]));
    state = model.next_state(&state, Action::HandOver).unwrap();
    state = model.next_state(&state, Action::Notify).unwrap();
    assert!(matches!(&state.phase, Phase::HandedOver { outcomes, .. } if outcomes == &[true]));
    state = model.next_state(&state, Action::Crash).unwrap();
    state = model.next_state(&state, Action::Recover).unwrap();
    state = model.next_state(&state, Action::Boundary).unwrap();
    assert!(matches!(&state.phase, Phase::Persisted(b) if b.attempt == 2 && b.id == 1));
}

// --- the bounds --------------------------------------------------------------------------------

/// The bound sets are what their documentation says. The state-count pins of the sets beyond the
/// default are checked by `parkline check` in release only, so these are the suite's checks of
/// how each set is built: line sizes cycling through the sizes given, the third line the forged
/// trailer, each named set adding what its name says, and the summary the check table prints.
#[test]
fn bound_sets_hold_the_lines_and_limits_they_name() {
    let chars = |bounds: &Bounds| -> Vec<usize> {
        bounds
            .lines
            .iter()
            .map(|(_, line)| line.chars().count())
            .collect()
    };
    let forged = Bounds::FORGED_LINE.chars().count();
    let five = Bounds::with_sizes(5, &[1, 2], 6, 1, 2);
    assert_eq!(chars(&five), [1, 2, forged, 2, 1]);
    let requests: Vec<u64> = five.lines.iter().map(|(request, _)| *request).collect();
    assert_eq!(requests, [1, 2, 3, 4, 5]);
    assert_eq!(five.lines[1].1, "éé");
    assert_eq!(five.lines[3].1, "dd");
    assert_eq!(five.lines[4].1, "a");
    assert_eq!(chars(&Bounds::with_sizes(2, &[], 6, 1, 2)), [1, 1]);

    let default = Bounds::default();
    assert_eq!(chars(&default), [1, 2, forged]);
    assert_eq!(
        (
            default.budget,
            default.crashes,
            default.failures,
            default.failures_max
        ),
        (6, 1, 2, 2)
    );
    assert_eq!(
        (
            default.collects,
            default.group_at,
            default.redrives,
            default.discards
        ),
        (1, Some(1), 1, 1)
    );
    assert_eq!(
        Bounds::check(),
        Bounds {
            crashes: 2,
            ..Bounds::default()
        }
    );
    let deep = Bounds::deep();
    assert_eq!(chars(&deep), [1, 2, forged, 1]);
    assert_eq!(
        deep,
        Bounds {
            lines: deep.lines.clone(),
            ..Bounds::check()
        }
    );
    assert_eq!(
        Bounds::crash(),
        Bounds {
            crashes: 3,
            failures: 3,
            failures_max: 3,
            repeats_max: 3,
            ..Bounds::default()
        }
    );

    // Group commit: two lines and the invalid caller, at once, beside one crash; the group park
    // it replaces is off, and the summary names it.
    let group = Bounds::group();
    assert_eq!(chars(&group), [1, 2]);
    assert_eq!(
        group,
        Bounds {
            lines: group.lines.clone(),
            budget: 2,
            crashes: 1,
            failures: 0,
            collects: 0,
            group_at: None,
            redrives: 0,
            discards: 0,
            group_parkers: 3,
            ..Bounds::default()
        }
    );
    assert!(Bounds::INVALID_LINE.contains('\n'));
    assert!(
        group.summary().ends_with(" group_parkers=3"),
        "{}",
        group.summary()
    );
    assert!(!default.summary().contains("group_parkers"));

    // The group is lines 2 and 3; without a third line there is no group.
    assert_eq!(default.arrival_len(1), 2);
    assert_eq!([0, 2].map(|i| default.arrival_len(i)), [1, 1]);
    let two = Bounds::generated(2, 6, 1, 2);
    assert_eq!(two.arrival_len(1), 1);
    assert_eq!(
        default.summary(),
        format!(
            "lines=3 (chars 1,2,{forged}) group=2,3 budget=6 crashes=1 failures=2 failures_max=2 \
             collects=1 redrives=1 discards=1 repeats_max=2"
        )
    );
    assert!(two.summary().contains(" group=none "), "{}", two.summary());
}

/// The known-bad `notified-per-batch` is the old daemon's behaviour exactly: one event per
/// batch, its first item's, the other items' events never recorded (D5).
#[test]
fn notified_per_batch_records_only_the_first_item_of_a_batch() {
    for (variant, seqs) in [
        (Variant::Correct, vec![1, 2]),
        (Variant::NotifiedPerBatch, vec![1]),
    ] {
        let model = DeliveryModel::new(Bounds::default(), variant);
        let mut state = model.init_states().remove(0);
        let steps = [
            Action::Park(0),
            Action::Park(1),
            Action::Boundary,
            Action::HandOver,
            Action::Notify,
            Action::Notify,
        ];
        for action in steps {
            state = model.next_state(&state, action).unwrap();
        }
        let notified: Vec<u64> = state.notified.iter().map(|event| event.seq).collect();
        assert_eq!(notified, seqs, "{variant:?}");
    }
}

/// The steps of a path as stateright's explorer and a counterexample's action list print them.
#[test]
fn actions_are_formatted_in_the_spec_words() {
    let model = DeliveryModel::default();
    assert_eq!(
        model.format_action(&Action::Park(0)),
        r#"park line 0 of request 1: "a""#
    );
    assert_eq!(model.format_action(&Action::Park(9)), "park line 9");
    assert_eq!(
        model.format_action(&Action::ParkGroup(1)),
        "park lines 1 and 2 as a group"
    );
    assert_eq!(
        model.format_action(&Action::TornGroup(1)),
        "crash while the group of lines 1 and 2 is appended"
    );
    assert_eq!(model.format_action(&Action::Boundary), "Boundary");
}

/// The goals of the deeper bound sets are listed only where their bounds reach them, and each
/// holds on the state it names and not on the state just short of it (the suite does not run
/// those sets: `parkline check --bounds deep|crash` does, in release).
#[test]
fn deeper_goals_are_listed_where_reachable_and_hold_on_their_state() {
    let names = |bounds: Bounds| -> Vec<&'static str> {
        DeliveryModel::new(bounds, Variant::Correct)
            .properties()
            .iter()
            .map(|p| p.name)
            .collect()
    };
    let closed = delivery::SOMETIMES_CLOSED;
    assert!(!names(Bounds::default()).contains(&delivery::SOMETIMES_TWO_LEFT));
    assert!(!names(Bounds::check()).contains(&delivery::SOMETIMES_TWO_LEFT));
    assert!(names(Bounds::deep()).contains(&delivery::SOMETIMES_TWO_LEFT));
    // The repeat bound's close is a goal wherever the crashes can reach it.
    assert!(!names(Bounds::default()).contains(&closed));
    for bounds in [Bounds::check(), Bounds::deep(), Bounds::crash()] {
        assert!(names(bounds).contains(&closed));
    }

    let goal = |model: &DeliveryModel, name: &str, steps: &[Action]| -> bool {
        let mut state = model.init_states().remove(0);
        for action in steps {
            state = model.next_state(&state, action.clone()).unwrap();
        }
        let property = model
            .properties()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap();
        (property.condition)(model, &state)
    };
    // Deep: lines of 1, 2, 72 and 1 characters at budget 6; the first batch takes two and
    // leaves two, or, parked before the last arrives, leaves one.
    use Action::*;
    let deep = DeliveryModel::new(Bounds::deep(), Variant::Correct);
    let two_left = delivery::SOMETIMES_TWO_LEFT;
    assert!(goal(
        &deep,
        two_left,
        &[Park(0), Park(1), Park(2), Park(3), Boundary, HandOver]
    ));
    assert!(!goal(
        &deep,
        two_left,
        &[Park(0), Park(1), Park(2), Boundary, HandOver]
    ));
    // Crash: each crash after the boundary makes the next hand-over a repeat, up to the repeat
    // bound (3); the boundary after that closes the batch.
    let crash = DeliveryModel::new(Bounds::crash(), Variant::Correct);
    let mut steps = vec![Park(0), Boundary];
    for _ in 0..2 {
        steps.extend([Crash, Recover, Boundary]);
    }
    let third_attempt = [steps.as_slice(), &[HandOver]].concat();
    assert!(!goal(&crash, closed, &third_attempt));
    steps.extend([Crash, Recover, Boundary]);
    assert!(goal(&crash, closed, &steps));
}

/// What `parkline check` prints for each step of a counterexample, one path through every
/// kind of step, word for word.
#[test]
fn every_kind_of_step_is_narrated_in_the_spec_words() {
    use Action::*;
    let correct = DeliveryModel::default();
    let per_batch = DeliveryModel::new(Bounds::default(), Variant::NotifiedPerBatch);
    let paths = [
        (
            &correct,
            vec![
                Park(0),
                ParkGroup(1),
                Collected(1),
                Boundary,
                HandOver,
                Notify,
                ItemFails,
                Settle,
                Boundary,
                HandOverFails,
                Boundary,
                HandOver,
                Crash,
                Recover,
                Boundary,
                HandOver,
                Notify,
                Settle,
                Redrive,
            ],
        ),
        (&correct, vec![Park(0), TornGroup(1), Recover]),
        (
            &correct,
            vec![
                Park(0),
                Boundary,
                HandOverFails,
                Boundary,
                HandOverFails,
                ParkGroup(1),
                Discard,
            ],
        ),
        (
            &per_batch,
            vec![Park(0), Park(1), Boundary, HandOver, Notify, Notify],
        ),
    ];
    let mut text = String::new();
    for (model, steps) in paths {
        let mut state = model.init_states().remove(0);
        for action in steps {
            let next = model.next_state(&state, action.clone()).unwrap();
            text.push_str(&model.narrate(&state, &action, &next));
            text.push('\n');
            state = next;
        }
    }
    let expected = r#"a line of request 1 arrives and is parked as seq 1 ("a", cost 2)
lines 1 and 2 arrive together and are parked as one group (one record): seqs [2, 3]
agent_read collects the line of seq 1
the parent's turn ends (boundary): batch 1 attempt 1 is written with seqs [1, 2] of parked [1, 2, 3], remaining 1, seen 0, handed [1, 1]
the daemon hands batch 1 attempt 1 over to the parent: "[parkline batch 1 attempt 1: 2 of 3 parked lines, 0 seen before, 7 bytes]\na\néé\n[parkline batch 1 end: 1 parked lines still undelivered, crc32 8319b96a]\n"
delegation_notified is recorded for seq 1 (request 1)
the notified event of seq 2 cannot be recorded: the item fails
settle (mirror cleared): batch 1 attempt 1: delivered [1], failed [2]; parked now [2, 3], dead letters []
the parent's turn ends (boundary): batch 2 attempt 1 is written with seqs [2] of parked [2, 3], remaining 1, seen 1, handed [2]
the hand-over fails: every item fails (batch 2 attempt 1: delivered [], failed [2]; parked now [3], dead letters [2])
the parent's turn ends (boundary): batch 3 attempt 1 is written with seqs [3] of parked [3], remaining 0, seen 0, handed [1]
the daemon hands batch 3 attempt 1 over to the parent: "[parkline batch 3 attempt 1: 1 of 1 parked lines, 0 seen before, 73 bytes]\n[parkline batch 2 end: 0 parked lines still undelivered, crc32 00000000]\n[parkline batch 3 end: 0 parked lines still undelivered, crc32 5d044f66]\n"
the daemon crashes (batch 3 handed over, notified 0 of 1)
the daemon restarts; batch 3 attempt 1 is recovered from the mirror
the parent's turn ends (boundary): batch 3 attempt 2 (repeat) is written with seqs [3] of parked [], remaining 0, seen 0, handed [2]
the daemon hands batch 3 attempt 2 over to the parent: "[parkline batch 3 attempt 2, repeat: 1 of 1 parked lines, 0 seen before, 73 bytes]\n[parkline batch 2 end: 0 parked lines still undelivered, crc32 00000000]\n[parkline batch 3 end: 0 parked lines still undelivered, crc32 5d044f66]\n"
delegation_notified is recorded for seq 3 (request 3)
settle (mirror cleared): batch 3 attempt 2: delivered [3], failed []; parked now [], dead letters [2]
the operator redrives the dead letters [2]: parked again with failures 0, hand-over counts kept ([(2, 2)])
a line of request 1 arrives and is parked as seq 1 ("a", cost 2)
the daemon crashes while the group park of lines 1 and 2 is appended (idle); parked now [1]
the daemon restarts and recovers the mirror
a line of request 1 arrives and is parked as seq 1 ("a", cost 2)
the parent's turn ends (boundary): batch 1 attempt 1 is written with seqs [1] of parked [1], remaining 0, seen 0, handed [1]
the hand-over fails: every item fails (batch 1 attempt 1: delivered [], failed [1]; parked now [1], dead letters [])
the parent's turn ends (boundary): batch 2 attempt 1 is written with seqs [1] of parked [1], remaining 0, seen 1, handed [2]
the hand-over fails: every item fails (batch 2 attempt 1: delivered [], failed [1]; parked now [], dead letters [1])
lines 1 and 2 arrive together and are parked as one group (one record): seqs [2, 3]
the operator discards the dead letters [1]: the queue no longer holds [1]; parked now [2, 3]
a line of request 1 arrives and is parked as seq 1 ("a", cost 2)
a line of request 2 arrives and is parked as seq 2 ("éé", cost 3)
the parent's turn ends (boundary): batch 1 attempt 1 is written with seqs [1, 2] of parked [1, 2], remaining 0, seen 0, handed [1, 1]
the daemon hands batch 1 attempt 1 over to the parent: "[parkline batch 1 attempt 1: 2 of 2 parked lines, 0 seen before, 7 bytes]\na\néé\n[parkline batch 1 end: 0 parked lines still undelivered, crc32 8319b96a]\n"
delegation_notified is recorded for seq 1 (request 1)
seq 2 (request 2) counts as delivered, but no delegation_notified is recorded for it
"#;
    assert_eq!(text, expected);
}

/// Clauses of the properties that no known-bad variant breaks on its own, each shown to refuse a
/// state a real path reaches with only that clause broken (its newest record tampered with).
#[test]
fn property_clauses_refuse_a_state_that_breaks_only_them() {
    use Action::*;
    let model = DeliveryModel::default();
    let holds = |name: &'static str, s: &delivery::DeliveryState| {
        (model.property(name).condition)(&model, s)
    };
    let walk = |steps: &[Action]| {
        let mut state = model.init_states().remove(0);
        for action in steps {
            state = model.next_state(&state, action.clone()).unwrap();
        }
        state
    };
    fn replace_newest<T: Clone + std::hash::Hash>(
        log: &delivery::Log<T>,
        change: impl FnOnce(&mut T),
    ) -> delivery::Log<T> {
        let mut copy = delivery::Log::default();
        for record in &log[..log.len() - 1] {
            copy.push((**record).clone());
        }
        let mut newest = (*log[log.len() - 1]).clone();
        change(&mut newest);
        copy.push(newest);
        copy
    }
    // `state` with its newest boundary record changed.
    let newest_boundary = |state: &delivery::DeliveryState,
                           change: fn(&mut delivery::BoundaryRecord)| {
        let mut bad = state.clone();
        bad.boundaries = replace_newest(&state.boundaries, change);
        bad
    };

    // D1, D11: a batch of the size split gives, not taken from the front of the parked list.
    let state = walk(&[Park(0), Park(1), Park(2), Boundary]);
    assert!(holds(delivery::D1, &state) && holds(delivery::D11, &state));
    let bad = newest_boundary(&state, |r| r.batch.items[0] = r.parked[2].clone());
    assert!(!holds(delivery::D1, &bad));
    assert!(!holds(delivery::D11, &bad));

    // D2: each clause alone: an item that was not parked; a remaining that, with the items,
    // outgrows the parked list (2 items and 1 remaining of a list cut to 2).
    let state = walk(&[Park(0), Park(1), Park(2), Boundary]);
    assert!(holds(delivery::D2, &state));
    assert!(!holds(
        delivery::D2,
        &newest_boundary(&state, |r| r.batch.items[0].seq = 9)
    ));
    assert!(!holds(
        delivery::D2,
        &newest_boundary(&state, |r| r.parked.truncate(2))
    ));

    // D3: a handed-over turn whose item is not its parked line, the queue's items untouched.
    let state = walk(&[Park(0), Park(1), Boundary, HandOver]);
    assert!(holds(delivery::D3, &state));
    let mut bad = state.clone();
    bad.handed = replace_newest(&state.handed, |b| b.items[1].line = "x".into());
    assert!(!holds(delivery::D3, &bad));

    // D5 and the hand-over count: the newest notified event must name a hand-over that happened
    // (batch, attempt, item, request), with its repeat mark and the item's count at it.
    let state = walk(&[Park(0), Park(1), Boundary, HandOver, Notify]);
    assert!(holds(delivery::D5, &state) && holds(delivery::HANDOVER_COUNT, &state));
    let event = |change: fn(&mut delivery::RefNotified)| {
        let mut bad = state.clone();
        bad.notified = replace_newest(&state.notified, change);
        bad
    };
    assert!(!holds(delivery::D5, &event(|e| e.batch = 9)));
    assert!(!holds(delivery::D5, &event(|e| e.repeat = true)));
    assert!(!holds(delivery::D5, &event(|e| e.request = 9)));
    assert!(!holds(
        delivery::D5,
        &event(|e| {
            e.attempt = 2;
            e.repeat = true;
        })
    ));
    assert!(!holds(delivery::HANDOVER_COUNT, &event(|e| e.handed = 2)));
    assert!(!holds(delivery::HANDOVER_COUNT, &event(|e| e.batch = 9)));
    // D10: a new batch is not a replay, has attempt 1 and an id above every earlier one (0 is
    // above none); a repeat has its original's lines, all of them.
    let state = walk(&[Park(0), Boundary]);
    assert!(holds(delivery::D10, &state));
    assert!(!holds(
        delivery::D10,
        &newest_boundary(&state, |r| r.replay = true)
    ));
    assert!(!holds(
        delivery::D10,
        &newest_boundary(&state, |r| r.batch.id = 0)
    ));
    let state = walk(&[Park(0), Park(1), Boundary, Crash, Recover, Boundary]);
    assert!(holds(delivery::D10, &state));
    assert!(!holds(
        delivery::D10,
        &newest_boundary(&state, |r| r.batch.items[1].line = "x".into())
    ));
    assert!(!holds(
        delivery::D10,
        &newest_boundary(&state, |r| {
            r.batch.items.pop();
        })
    ));

    // D13: the trailer's count is the original boundary's parked lines not in the batch (the
    // header's count alone right).
    let state = walk(&[Park(0), Park(1), Park(2), Boundary, HandOver]);
    assert!(holds(delivery::D13, &state));
    let bad = newest_boundary(&state, |r| {
        r.batch.items.pop();
    });
    assert!(!holds(delivery::D13, &bad));
    // D17: seqs follow the arrivals; a handed batch's items strictly increase.
    assert!(holds(delivery::D17, &state));
    let mut bad = state.clone();
    bad.arrived += 1;
    assert!(!holds(delivery::D17, &bad));
    let mut bad = state.clone();
    bad.handed = replace_newest(&state.handed, |b| b.items[1].seq = b.items[0].seq);
    assert!(!holds(delivery::D17, &bad));
    // The hand-over count: at the boundary (the newest boundary's items), as the parent saw it
    // (the newest hand-over's items), each alone.
    assert!(holds(delivery::HANDOVER_COUNT, &state));
    let bad = newest_boundary(&state, |r| r.batch.items[0].handed = 2);
    assert!(!holds(delivery::HANDOVER_COUNT, &bad));
    let mut bad = state.clone();
    bad.handed = replace_newest(&state.handed, |b| b.items[0].handed = 0);
    assert!(!holds(delivery::HANDOVER_COUNT, &bad));

    // D5: a settle's delivered item must have its event from that batch's hand-over.
    let state = walk(&[Park(0), Park(1), Boundary, HandOver, Notify, Notify, Settle]);
    assert!(holds(delivery::D5, &state));
    let mut bad = state.clone();
    bad.settles = replace_newest(&state.settles, |r| r.batch = 9);
    assert!(!holds(delivery::D5, &bad));
}

// --- the exhaustive check ---------------------------------------------------------------------

#[test]
fn correct_model_holds_every_property_bfs_and_dfs() {
    //= spec/delivery.md#d14-collected-is-not-consumed
    //= type=test
    //# Reading a line through `agent_read` ("collected") MUST NOT remove, skip, shorten or mark the
    //# line in the queue: a collected line MUST still be delivered (or dead-lettered) like any
    //# other.
    //= spec/delivery.md#d15-eventually
    //= type=test
    //# If boundaries keep occurring, every handed-over batch is eventually settled or interrupted
    //# by a crash, and the number of crashes is finite, then every parked line MUST eventually be
    //# delivered or dead-lettered.
    // Regression alarm: a change means the model (or the bounds) changed; see why first.
    let model = || DeliveryModel::new(Bounds::default(), Variant::Correct);
    let bfs = model().checker().spawn_bfs().join();
    bfs.assert_properties();
    assert_eq!(bfs.unique_state_count(), delivery::DEFAULT_UNIQUE_STATES);
    let dfs = model().checker().spawn_dfs().join();
    dfs.assert_properties();
    assert_eq!(dfs.unique_state_count(), delivery::DEFAULT_UNIQUE_STATES);
}

#[test]
fn correct_model_holds_at_the_check_and_scaled_bounds() {
    // The bounds of `parkline check` take about 12 s in release: run them here when asked
    // (`PARKLINE_MODEL_SCALE=1`); `parkline check` checks the same pin on every run.
    let extra = scale();
    if extra == 0 {
        return;
    }
    let model = DeliveryModel::new(Bounds::check(), Variant::Correct);
    let checker = model.checker().spawn_dfs().join();
    checker.assert_properties();
    assert_eq!(checker.unique_state_count(), delivery::CHECK_UNIQUE_STATES);
    if extra > 1 {
        let bounds = Bounds::generated(3 + extra - 1, 6, 1, 2);
        let checker = DeliveryModel::new(bounds, Variant::Correct)
            .checker()
            .spawn_dfs()
            .join();
        checker.assert_properties();
    }
}

/// The requirement ids of `spec/delivery.md` (its `### D<n> ...` headings, `D4a` included), and
/// the rows of its traceability table (section 5): each row's id with the property names its
/// "model property" column quotes in backticks.
fn spec_ids_and_traceability(spec: &str) -> (Vec<&str>, Vec<(&str, Vec<&str>)>) {
    let is_id = |id: &str| {
        id.strip_prefix('D').is_some_and(|n| {
            let n = n.strip_suffix('a').unwrap_or(n);
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
    };
    let ids = spec
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .filter_map(|heading| heading.split(' ').next())
        .filter(|id| is_id(id))
        .collect();
    let table = spec
        .split("\n## 5. Traceability\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("spec/delivery.md has section 5, Traceability");
    let rows = table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (id, properties) = (*cells.get(1)?, *cells.get(2)?);
            let quoted = properties.split('`').skip(1).step_by(2).collect();
            is_id(id).then_some((id, quoted))
        })
        .collect();
    (ids, rows)
}

/// Every property is named by a spec id or is a `sometimes`; the spec's traceability table and
/// the model agree: every requirement id has a row, every property a row names is the model's,
/// and every property named by an id is in that id's row. The ids come from the spec itself,
/// so a requirement added there without a row, or a row naming a property the model lost,
/// fails here; `duvet query` (`.ci/run`) checks that each requirement is cited by code and tests.
#[test]
fn every_property_is_named_by_a_spec_id_or_is_a_sometimes() {
    // Group commit's properties are listed at its bounds only.
    let models = [
        DeliveryModel::default(),
        DeliveryModel::new(Bounds::group(), Variant::Correct),
    ];
    let mut names: Vec<&str> = Vec::new();
    for model in &models {
        for p in model.properties() {
            let named = p.name.starts_with('D');
            assert_eq!(named, p.expectation != Expectation::Sometimes, "{}", p.name);
            if !names.contains(&p.name) {
                names.push(p.name);
            }
        }
    }
    let (ids, rows) = spec_ids_and_traceability(include_str!("../../spec/delivery.md"));
    assert!(ids.len() > 20, "the spec's ids were not found: {ids:?}");
    for id in &ids {
        let Some((_, quoted)) = rows.iter().find(|(row, _)| row == id) else {
            panic!("{id} has no row in spec/delivery.md's traceability table");
        };
        for name in quoted {
            assert!(
                names.contains(name),
                "{id}: the traceability table names the property {name:?}, which the model lacks"
            );
        }
    }
    for name in names.iter().filter(|name| name.starts_with('D')) {
        let id = name.split(' ').next().unwrap_or_default();
        assert!(
            rows.iter()
                .any(|(row, quoted)| row == &id && quoted.contains(name)),
            "the property {name:?} is not in the traceability row of {id}"
        );
    }
}

// --- the known-bad variants -------------------------------------------------------------------

fn narrate(model: &DeliveryModel, path: &[(delivery::DeliveryState, Option<Action>)]) -> String {
    path.windows(2)
        .enumerate()
        .map(|(i, w)| {
            let action = w[1]
                .1
                .as_ref()
                .expect("every step after the first has an action");
            format!("{}. {}\n", i + 1, model.narrate(&w[0].0, action, &w[1].0))
        })
        .collect()
}

#[test]
fn every_known_bad_variant_is_caught_for_the_property_it_breaks() {
    for variant in Variant::ALL {
        let model = DeliveryModel::new(variant.caught_at(), variant);
        let Some(name) = variant.breaks() else {
            continue;
        };
        let property = model.property(name);
        let path = shortest_path(&model, &property)
            .unwrap_or_else(|| panic!("{variant:?} is not caught by {name:?}"));
        assert!(
            path.len() >= 2,
            "{variant:?}: the initial state already violates {name:?}"
        );
        let last = &path[path.len() - 1].0;
        assert!(
            !(property.condition)(&model, last),
            "{variant:?}: path does not end in a violation"
        );
        // The same path under the correct protocol does not violate it.
        let correct = DeliveryModel::new(variant.caught_at(), Variant::Correct);
        let mut state = correct.init_states().remove(0);
        for (_, action) in &path[1..] {
            let action = action.clone().expect("action");
            match correct.next_state(&state, action) {
                Some(next) => state = next,
                None => break,
            }
            assert!(
                (property.condition)(&correct, &state),
                "{variant:?}: correct model fails too"
            );
        }
        eprintln!("{variant:?} breaks {name:?}:\n{}", narrate(&model, &path));
    }
}

/// Properties whose own variant is caught first by another: each is shown to catch a variant
/// by itself too, so none is vacuous (D2: a replay re-split at replay time takes lines parked
/// after the boundary; D15, both forms: a failed line dropped is never delivered).
#[test]
fn properties_without_a_variant_of_their_own_catch_one_too() {
    let caught_by = |variant: Variant, name: &'static str| {
        let model = DeliveryModel::new(variant.caught_at(), variant);
        let property = model.property(name);
        let path = shortest_path(&model, &property)
            .unwrap_or_else(|| panic!("{variant:?} is not caught by {name:?}"));
        let last = &path[path.len() - 1].0;
        assert!(!(property.condition)(&model, last));
        eprintln!("{variant:?} breaks {name:?}:\n{}", narrate(&model, &path));
    };
    caught_by(Variant::ArrivalTimedSplit, delivery::D2);
    // D1 with group parkers: the follower answered with a seq its line never got is in no batch.
    caught_by(Variant::GroupDropsFollower, delivery::GROUP_BOUNDARY);
    // D9: the parked lines a bad discard deletes are lost, not discarded dead letters.
    caught_by(Variant::DiscardParked, delivery::D9);
    // D15 (quiescent means delivered): a failed line dropped is never delivered.
    caught_by(Variant::DropFailed, delivery::D15_QUIESCENT);
    let checker = DeliveryModel::new(Bounds::default(), Variant::DropFailed)
        .checker()
        .finish_when(HasDiscoveries::AnyOf([delivery::D15].into()))
        .spawn_bfs()
        .join();
    assert!(checker.discovery(delivery::D15).is_some());
}

#[test]
fn stateright_finds_each_variant_counterexample_too() {
    for variant in Variant::ALL.into_iter().skip(1) {
        let name = variant
            .breaks()
            .expect("a known-bad variant breaks a property");
        let checker = DeliveryModel::new(variant.caught_at(), variant)
            .checker()
            .finish_when(HasDiscoveries::AnyOf([name].into()))
            .spawn_bfs()
            .join();
        assert!(
            checker.discovery(name).is_some(),
            "{variant:?}: no discovery for {name:?}"
        );
    }
}

/// What the deeper bounds buy: `trailer-counts-next-turn` holds at the default and CI bounds
/// (3 lines never leave two behind a batch) and is caught with a fourth line; the goal that
/// shows a bound set gets there is listed only where it can be reached.
#[test]
fn a_fourth_line_catches_what_three_cannot() {
    let variant = Variant::TrailerCountsNextTurn;
    for bounds in [Bounds::default(), Bounds::generated(3, 6, 0, 2)] {
        let model = DeliveryModel::new(bounds.clone(), variant);
        assert!(
            shortest_path(&model, &model.property(delivery::D13)).is_none(),
            "{variant:?} is caught at 3 lines ({})",
            bounds.summary()
        );
        assert!(
            model
                .properties()
                .iter()
                .all(|p| p.name != delivery::SOMETIMES_TWO_LEFT)
        );
    }
    let deep = variant.caught_at();
    assert_eq!(deep.lines.len(), 4);
    let model = DeliveryModel::new(deep.clone(), variant);
    let path = shortest_path(&model, &model.property(delivery::D13)).expect("caught at 4 lines");
    eprintln!("{variant:?} at 4 lines:\n{}", narrate(&model, &path));
    let correct = DeliveryModel::new(deep, Variant::Correct);
    let two_left = correct.property(delivery::SOMETIMES_TWO_LEFT);
    assert!(shortest_path(&correct, &two_left).is_some());
    let crashes = DeliveryModel::new(Bounds::crash_loop(), Variant::Correct);
    let closed = crashes.property(delivery::SOMETIMES_CLOSED);
    assert!(shortest_path(&crashes, &closed).is_some());
}

/// The correct protocol at four lines (two left behind a batch) with a crash and a failure, in
/// every CI run: every property that must hold holds, by DFS, at a pinned count (about 2 s). The
/// `deep` set (two crashes, two failures: 42,623,401 states, minutes) runs in the campaigns.
#[test]
fn a_fourth_line_holds_every_property() {
    let model = DeliveryModel::new(Bounds::generated(4, 6, 1, 1), Variant::Correct);
    let must_hold: Vec<&str> = model
        .properties()
        .iter()
        .filter(|p| p.expectation != Expectation::Sometimes)
        .map(|p| p.name)
        .collect();
    assert!(must_hold.contains(&delivery::D13));
    let dfs = model.checker().spawn_dfs().join();
    for name in &must_hold {
        assert!(dfs.discovery(name).is_none(), "{name} violated");
    }
    assert_eq!(dfs.unique_state_count(), 95_531);
}

#[test]
fn d15_a_dropped_failure_is_caught_as_liveness_too() {
    //= spec/delivery.md#d15-eventually
    //= type=test
    //# If boundaries keep occurring, every handed-over batch is eventually settled or interrupted
    //# by a crash, and the number of crashes is finite, then every parked line MUST eventually be
    //# delivered or dead-lettered.
    let model = DeliveryModel::new(Bounds::default(), Variant::DropFailed);
    for name in [delivery::D15, delivery::D15_QUIESCENT] {
        let path = shortest_path(&model, &model.property(name));
        assert!(path.is_some(), "{name:?} does not catch DropFailed");
    }
    // stateright judges `eventually` at terminal states; the model is acyclic, so it sees it.
    let checker = model
        .clone()
        .checker()
        .finish_when(HasDiscoveries::AnyOf([delivery::D15].into()))
        .spawn_dfs()
        .join();
    assert!(checker.discovery(delivery::D15).is_some());
    let correct = DeliveryModel::new(Bounds::generated(2, 6, 1, 1), Variant::Correct);
    assert!(shortest_path(&correct, &correct.property(delivery::D15)).is_none());
}

#[test]
fn the_interesting_paths_are_reached() {
    let model = DeliveryModel::new(Bounds::default(), Variant::Correct);
    for p in model.properties() {
        if p.expectation == Expectation::Sometimes {
            let path = shortest_path(&model, &p);
            assert!(path.is_some(), "{:?} is never reached", p.name);
        }
    }
}

/// D8: the operator's discard of every dead letter removes those and nothing else, in one step
/// that a redrive can no longer undo; the discarded line counts as neither lost (D9) nor dead
/// (D8) nor undelivered (D15), and the parked lines stay. `discard-parked` deletes the parked
/// lines too: the discard property and D9 refuse that state.
#[test]
fn d8_a_discard_removes_the_dead_letters_and_nothing_else() {
    //= spec/delivery.md#d8-dead-letter
    //= type=test
    //# `Queue::discard(seqs)` MUST remove the named dead letters from the mirror in one durable
    //# record, and MUST fail with `NotDead`, writing nothing, when a seq is not a dead letter or is
    //# named twice.
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be exactly
    //# one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a dead letter
    //# until an explicit discard (D8) deletes it, through any sequence of boundaries, settles,
    //# failures, crashes and recoveries.
    use Action::*;
    let steps = [
        Park(0),
        Boundary,
        HandOverFails,
        Boundary,
        HandOverFails,
        ParkGroup(1),
        Discard,
    ];
    let walk = |variant| {
        let model = DeliveryModel::new(Bounds::default(), variant);
        let mut state = model.init_states().remove(0);
        for action in steps.clone() {
            state = model.next_state(&state, action).expect("enabled");
        }
        let holds: Vec<bool> = [delivery::DISCARD, delivery::D9, delivery::D8, delivery::D6]
            .into_iter()
            .map(|name| (model.property(name).condition)(&model, &state))
            .collect();
        (model, state, holds)
    };
    let (model, state, holds) = walk(Variant::Correct);
    assert_eq!(holds, [true; 4]);
    assert!(state.queue.dead_letters().is_empty());
    let parked: Vec<u64> = state.queue.parked().iter().map(|i| i.seq).collect();
    assert_eq!(parked, [2, 3]);
    let record = &state.discards[0];
    assert_eq!(
        (&record.dead_before[..], &record.removed[..]),
        (&[1][..], &[(1, 1)][..])
    );
    // Nothing is left to redrive or discard again: both are enabled by dead letters only.
    let mut actions = Vec::new();
    model.actions(&state, &mut actions);
    assert!(
        !actions.contains(&Redrive) && !actions.contains(&Discard),
        "{actions:?}"
    );

    let (_, bad, holds) = walk(Variant::DiscardParked);
    assert!(bad.queue.parked().is_empty());
    assert_eq!(&holds[..2], [false, false]);

    // D18: the turn after the discard names a live line; the same turn naming the discarded
    // line instead is refused (no variant can reach that: the queue no longer holds it).
    let property = model.property(delivery::DISCARD);
    let after = [Boundary, HandOver].into_iter().fold(state, |s, action| {
        model.next_state(&s, action).expect("enabled")
    });
    assert!((property.condition)(&model, &after));
    let mut bad = after.clone();
    bad.handed = delivery::Log::default();
    for (i, batch) in after.handed.iter().enumerate() {
        let mut batch = (**batch).clone();
        if i + 1 == after.handed.len() {
            batch.items[0].seq = 1;
        }
        bad.handed.push(batch);
    }
    assert!(!(property.condition)(&model, &bad));
}

/// The hand-over count known-bad variant, at the step the brief names: counted at settle, a
/// crash between hand-over and settle loses the hand-over the parent saw, and the repeat offers
/// the line again with `handed` 1 (silently a first time); the correct count says 2.
#[test]
fn count_at_settle_loses_the_cut_hand_over() {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //= type=test
    //# The count MUST be raised by the record that allows the hand-over, before `boundary` returns
    //# the batch, so that a crash between the hand-over and the settle still counts a hand-over the
    //# parent may have seen.
    let path = [
        Action::Park(0),
        Action::Boundary,
        Action::HandOver,
        Action::Crash,
        Action::Recover,
        Action::Boundary,
        Action::HandOver,
    ];
    let last_handed = |variant| {
        let model = DeliveryModel::new(Bounds::default(), variant);
        let mut state = model.init_states().remove(0);
        for action in path.clone() {
            state = model.next_state(&state, action).expect("enabled");
        }
        let property = model.property(delivery::HANDOVER_COUNT);
        let holds = (property.condition)(&model, &state);
        let repeat = state.handed.last().expect("a repeat was handed over");
        (repeat.attempt, repeat.items[0].handed, holds)
    };
    assert_eq!(last_handed(Variant::Correct), (2, 2, true));
    assert_eq!(last_handed(Variant::CountAtSettle), (2, 1, false));
}

/// D3: with a park whose answer a crash lost (the record reached the mirror), the daemon's
/// retry after the restart is answered from the mirror: every property holds, by BFS and DFS,
/// at a pinned count; `no-park-dedup` is the known-bad side (caught in the variant tests).
#[test]
fn d3_a_retried_park_holds_every_property() {
    let model = DeliveryModel::new(Bounds::with_lost_park(), Variant::Correct);
    // The goals of the `sometimes` properties need the larger bounds; every other one holds.
    let must_hold: Vec<&str> = model
        .properties()
        .iter()
        .filter(|p| p.expectation != Expectation::Sometimes)
        .map(|p| p.name)
        .collect();
    assert!(must_hold.contains(&delivery::D3));
    let bfs = model.clone().checker().spawn_bfs().join();
    let dfs = model.checker().spawn_dfs().join();
    for checker in [&bfs as &dyn Checker<DeliveryModel>, &dfs] {
        for name in &must_hold {
            assert!(checker.discovery(name).is_none(), "{name} violated");
        }
        assert_eq!(
            checker.unique_state_count(),
            delivery::LOST_PARK_UNIQUE_STATES
        );
    }
}

// --- group commit ------------------------------------------------------------------------------

/// D16 group commit, at `Bounds::group`: every property holds by BFS and DFS at a pinned count,
/// and every goal is reached (two callers' lines in one record, a refusal beside a parked line,
/// a crash losing a written record).
#[test]
fn group_commit_holds_every_property_bfs_and_dfs() {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive while another's
    //# write and fsync are in progress MUST be written together, in one append and one fsync,
    //# once that fsync returns, each caller with its own answer: a refused line or request fails
    //# its caller only.
    //= spec/delivery.md#d1-batch-at-the-boundary
    //= type=test
    //# With a shared handle (`SharedQueue`), a park acknowledged before a `boundary` call starts
    //# is in that boundary's batch or parked behind it, never lost and never in two batches; a
    //# park concurrent with a boundary, settle, redrive, discard, reopen or `remove` is ordered
    //# before or after it as one whole, and answers as it would alone at that place.
    let model = || DeliveryModel::new(Bounds::group(), Variant::Correct);
    let names: Vec<&str> = model().properties().iter().map(|p| p.name).collect();
    for name in [
        delivery::GROUP_ACK,
        delivery::GROUP_REFUSAL,
        delivery::GROUP_BOUNDARY,
        delivery::SOMETIMES_GROUP_SHARED,
        delivery::SOMETIMES_GROUP_REFUSAL,
        delivery::SOMETIMES_TORN_GROUP,
    ] {
        assert!(names.contains(&name), "{name} is not listed");
    }
    let bfs = model().checker().spawn_bfs().join();
    bfs.assert_properties();
    assert_eq!(bfs.unique_state_count(), delivery::GROUP_UNIQUE_STATES);
    let dfs = model().checker().spawn_dfs().join();
    dfs.assert_properties();
    assert_eq!(dfs.unique_state_count(), delivery::GROUP_UNIQUE_STATES);
}

/// The group commit steps one by one: three callers join, one record parks both lines and
/// refuses the invalid one; nothing is answered before the fsync, each caller then returns on
/// its own; a crash before the fsync loses the record and every answer, and the lines are parked
/// again before the next boundary.
#[test]
fn d16_a_group_is_answered_after_its_fsync_and_lost_whole_before_it() {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    use Action::*;
    use delivery::Member::{Invalid, Line};
    let model = DeliveryModel::new(Bounds::group(), Variant::Correct);
    let walk = |steps: &[Action]| {
        let mut state = model.init_states().remove(0);
        for action in steps {
            state = model
                .next_state(&state, action.clone())
                .unwrap_or_else(|| panic!("{action:?} is enabled"));
        }
        state
    };
    let actions = |state: &delivery::DeliveryState| {
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions
    };
    let joined = [
        JoinGroup(Line(0)),
        JoinGroup(Invalid),
        JoinGroup(Line(1)),
        WriteGroup,
    ];
    let written = walk(&joined);
    assert_eq!(
        written.writing,
        [(Line(0), Some(1)), (Invalid, None), (Line(1), Some(2))]
    );
    assert!(written.queue.parked().is_empty() && written.answered.is_empty());
    // The leader holds the queue: no boundary while the record is written.
    assert!(!actions(&written).contains(&Boundary));
    let synced = walk(&[&joined[..], &[SyncGroup]].concat());
    assert_eq!(synced.queue.parked().len(), 2);
    assert_eq!(
        actions(&synced)
            .into_iter()
            .filter(|a| matches!(a, AckPark(_)))
            .collect::<Vec<_>>(),
        [AckPark(Line(0)), AckPark(Invalid), AckPark(Line(1))]
    );
    let answered = walk(
        &[
            &joined[..],
            &[SyncGroup, AckPark(Line(1)), AckPark(Invalid)],
        ]
        .concat(),
    );
    let acks: Vec<_> = answered.acks.iter().map(|a| (a.member, a.answer)).collect();
    assert_eq!(acks, [(Line(1), Some(2)), (Invalid, None)]);

    // A crash before the fsync: nothing parked, nobody answered; both lines are parked again,
    // with the seqs they would have had, before a boundary may run.
    let lost = walk(&[&joined[..], &[Crash, Recover]].concat());
    assert!(lost.queue.parked().is_empty() && lost.acks.is_empty());
    assert_eq!(lost.retries, [0, 1]);
    assert_eq!(lost.torn, 1);
    let again = walk(
        &[
            &joined[..],
            &[
                Crash,
                Recover,
                JoinGroup(Line(0)),
                JoinGroup(Line(1)),
                WriteGroup,
                SyncGroup,
            ],
        ]
        .concat(),
    );
    assert_eq!(again.answered, [(Line(0), Some(1)), (Line(1), Some(2))]);
    assert!(!actions(&again).contains(&Boundary));
    let retried = walk(
        &[
            &joined[..],
            &[
                Crash,
                Recover,
                JoinGroup(Line(0)),
                JoinGroup(Line(1)),
                WriteGroup,
                SyncGroup,
                AckPark(Line(0)),
                AckPark(Line(1)),
            ],
        ]
        .concat(),
    );
    assert!(actions(&retried).contains(&Boundary));
}

/// A line can be handed over and settled between its group's fsync and its caller's return (the
/// boundary runs as soon as the leader gives the queue back). After a crash there, a park again
/// would be a new line, delivered twice: the daemon does not park again a line whose
/// delegation_notified it recorded. The model's daemon follows that rule; without it, D3's
/// one-line-per-request check fails on this very path.
#[test]
fn d3_a_line_delivered_before_its_park_returned_is_not_parked_again() {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    use Action::*;
    use delivery::Member::Line;
    let model = DeliveryModel::new(Bounds::group(), Variant::Correct);
    let mut state = model.init_states().remove(0);
    let steps = [
        JoinGroup(Line(0)),
        WriteGroup,
        SyncGroup,
        Boundary,
        HandOver,
        Notify,
        Settle,
        Crash,
        Recover,
    ];
    for action in steps {
        state = model.next_state(&state, action).expect("enabled");
    }
    assert!(state.retries.is_empty());
    let mut actions = Vec::new();
    model.actions(&state, &mut actions);
    assert!(actions.contains(&JoinGroup(Line(1))), "{actions:?}");
    assert!(!actions.contains(&JoinGroup(Line(0))), "{actions:?}");
    // Parked anyway, the line would be delivered twice, under the seq of the next line: D3
    // refuses that state.
    let mut again = state.clone();
    again.queue.park(1, &model.bounds.lines[0].1);
    assert!(!(model.property(delivery::D3).condition)(&model, &again));
}

// --- the remembered window (issue 42) -----------------------------------------------------------

/// Issue 42's remembered deliveries, at `Bounds::remember`: a park whose answer a crash lost, the
/// line delivered and settled while the retry waits, then the retry, which the window answers
/// "delivered". Every property holds by BFS and DFS at a pinned count, and every goal listed is
/// reached (the window's own two among them).
#[test]
fn remembered_window_holds_every_property_bfs_and_dfs() {
    let model = || DeliveryModel::new(Bounds::remember(), Variant::Correct);
    let names: Vec<&str> = model().properties().iter().map(|p| p.name).collect();
    for name in [
        delivery::D3_REMEMBERED,
        delivery::SOMETIMES_RETRY_REMEMBERED,
        delivery::SOMETIMES_REMEMBERED_EVICTED,
        delivery::SOMETIMES_SPLIT,
        delivery::SOMETIMES_REPEAT,
    ] {
        assert!(names.contains(&name), "{name} is not listed");
    }
    let started = std::time::Instant::now();
    let bfs = model().checker().spawn_bfs().join();
    let bfs_time = started.elapsed();
    bfs.assert_properties();
    let started = std::time::Instant::now();
    let dfs = model().checker().spawn_dfs().join();
    let dfs_time = started.elapsed();
    dfs.assert_properties();
    eprintln!(
        "remember: {} unique states, BFS {bfs_time:?}, DFS {dfs_time:?}",
        bfs.unique_state_count()
    );
    assert_eq!(bfs.unique_state_count(), delivery::REMEMBER_UNIQUE_STATES);
    assert_eq!(dfs.unique_state_count(), delivery::REMEMBER_UNIQUE_STATES);
}

/// The reference's window, step by step: a settle as delivered and a discard remember the
/// request with its line's CRC-32, seq and how it ended (the batch of a delivery); a park again
/// with the same line is answered from the window and writes nothing, with another line it is a
/// conflict, alone or in a group; a crash and a compaction keep the window; the oldest entry goes
/// beyond the capacity, and a request forgotten is parked as a new line, as with no window.
#[test]
fn the_window_answers_a_park_of_a_remembered_request() {
    use delivery::{RefEnded, RefParked, RefRemembered, compacted};
    let mut queue = Reference::new(1).with_delivered_memory(2);
    queue.park_all(&[(1, "one"), (2, "two"), (3, "three")]);
    let batch = queue.boundary(100).unwrap().unwrap();
    queue.settle(batch.id, &[true, false, true]).unwrap(); // failures_max 1: seq 2 dies
    let entry = |request, line: &str, seq, ended| RefRemembered {
        request,
        crc: parkline_model::read::crc64(line.as_bytes()),
        seq,
        ended,
    };
    let delivered = RefEnded::Delivered { batch: 1 };
    assert_eq!(
        queue.remembered(),
        [
            entry(1, "one", 1, delivered),
            entry(3, "three", 3, delivered)
        ]
    );
    let before = queue.clone();
    assert_eq!(
        queue.try_park_answer(3, "three"),
        Ok(RefParked::Remembered(entry(3, "three", 3, delivered)))
    );
    assert_eq!(queue.try_park(1, "one"), Ok(1));
    assert_eq!(queue.try_park(1, "uno"), Err(RefError::RequestConflict));
    assert_eq!(queue.try_park(2, "two"), Err(RefError::RequestDead));
    // A group is answered line by line (D22): remembered lines from the window, writing nothing.
    assert_eq!(
        queue.try_park_all(&[(3, "three"), (1, "one")]),
        Ok(vec![3, 1])
    );
    assert_eq!(queue, before, "an answer from the window writes nothing");
    // Beside a new line, which alone is parked.
    let mut mixed = queue.clone();
    assert_eq!(
        mixed.try_park_all_answers(&[(1, "one"), (4, "four")]),
        Ok(vec![
            RefParked::Remembered(entry(1, "one", 1, delivered)),
            RefParked::Held(4)
        ])
    );
    assert_eq!(mixed.parked().len(), 1);
    // Durable: a crash keeps it, and so does a compaction's snapshot read back.
    queue.crash();
    assert_eq!(queue.remembered(), before.remembered());
    assert_eq!(
        compacted(queue.mirror(), false, false).as_ref(),
        Some(queue.mirror())
    );
    let forgot = compacted(queue.mirror(), false, true).expect("a snapshot");
    assert!(forgot.remembered.is_empty());
    // A discard remembers the dead letter, evicting the oldest entry (request 1).
    assert_eq!(queue.discard_all(), [2]);
    assert_eq!(
        queue.remembered(),
        [
            entry(3, "three", 3, delivered),
            entry(2, "two", 2, RefEnded::Discarded)
        ]
    );
    assert_eq!(
        queue.try_park_answer(2, "two"),
        Ok(RefParked::Remembered(entry(
            2,
            "two",
            2,
            RefEnded::Discarded
        )))
    );
    // Past the window: a new line, as with no window at all.
    assert_eq!(queue.try_park_answer(1, "one"), Ok(RefParked::Held(4)));
    // With no window (the default) nothing is remembered: a retry is a new line.
    let mut today = Reference::new(3);
    today.park(1, "one");
    let batch = today.boundary(100).unwrap().unwrap();
    today.settle(batch.id, &[true]).unwrap();
    assert!(today.remembered().is_empty());
    assert_eq!(today.try_park(1, "one"), Ok(2));
    // A smaller capacity forgets the oldest entries at once.
    let mut small = before.clone().with_delivered_memory(1);
    assert_eq!(small.remembered(), [entry(3, "three", 3, delivered)]);
    assert_eq!(small.try_park(1, "one"), Ok(4));
}

/// A recovered window is kept whole (its capacity is its length until the configured one is
/// set), and one no correct queue can hold is refused.
#[test]
fn the_reference_recovers_only_a_window_a_queue_can_hold() {
    use delivery::{Mirror, RefEnded, RefRemembered};
    let entry = |request, seq, batch| RefRemembered {
        request,
        crc: 0,
        seq,
        ended: RefEnded::Delivered { batch },
    };
    let mirror = |remembered: Vec<RefRemembered>| Mirror {
        next_seq: 4,
        next_batch: 3,
        parked: vec![RefItem {
            seq: 3,
            request: 3,
            line: "x".into(),
            failures: 0,
            handed: 0,
        }],
        in_flight: None,
        dead: vec![],
        cap: None,
        remembered,
    };
    let good = vec![entry(1, 1, 1), entry(2, 2, 2)];
    let queue = Reference::from_mirror(3, mirror(good.clone())).expect("a window that fits");
    assert_eq!(queue.remembered(), good);
    let bad = [
        vec![entry(1, 1, 1), entry(1, 2, 2)], // a request twice
        vec![entry(1, 1, 1), entry(2, 1, 2)], // a seq twice
        vec![entry(1, 3, 1)],                 // a seq still parked
        vec![entry(1, 4, 1)],                 // a seq not given out
        vec![entry(1, 1, 3)],                 // a batch not given out
    ];
    for window in bad {
        assert_eq!(
            Reference::from_mirror(3, mirror(window.clone())),
            Err(RefError::Corrupt),
            "{window:?}"
        );
    }
}

/// The window's knob is 0 in every named bound set but `remember`, and its property and goals
/// are listed only with a window: the named sets are the model they were (their pinned counts
/// are checked by their own tests and by `parkline check`).
#[test]
fn the_window_is_off_in_the_named_sets_and_listed_only_with_one() {
    let listed = |bounds: Bounds| {
        DeliveryModel::new(bounds, Variant::Correct)
            .properties()
            .iter()
            .any(|p| p.name == delivery::D3_REMEMBERED)
    };
    for bounds in [
        Bounds::default(),
        Bounds::check(),
        Bounds::deep(),
        Bounds::crash(),
        Bounds::group(),
        Bounds::with_lost_park(),
    ] {
        assert_eq!(bounds.delivered_memory, 0, "{}", bounds.summary());
        assert!(!listed(bounds));
    }
    let remember = Bounds::remember();
    assert_eq!(
        remember,
        Bounds {
            group_at: None,
            redrives: 0,
            discards: 0,
            collects: 0,
            lost_parks: 1,
            delivered_memory: 1,
            ..Bounds::generated(2, 2, 2, 0)
        }
    );
    assert!(
        remember
            .summary()
            .ends_with("lost_parks=1 delivered_memory=1")
    );
    assert!(listed(remember));
}

/// The two ways to lose the window, each caught by the window's property at `remember` on the
/// path the issue names: the park's answer lost, the line delivered and settled, the mirror
/// compacted (or the daemon restarted), then the retry, parked anew and delivered a second time.
/// The correct queue answers that same retry from the window ("delivered", nothing written).
#[test]
fn forgetting_the_window_at_a_compaction_or_a_reopen_is_caught() {
    for (variant, forgets) in [
        (Variant::ForgetAtCompaction, Action::Compact),
        (Variant::ForgetAtReopen, Action::Crash),
    ] {
        assert_eq!(variant.caught_at(), Bounds::remember());
        assert_eq!(variant.breaks(), Some(delivery::D3_REMEMBERED));
        let model = DeliveryModel::new(Bounds::remember(), variant);
        let property = model.property(delivery::D3_REMEMBERED);
        let path =
            shortest_path(&model, &property).unwrap_or_else(|| panic!("{variant:?} is not caught"));
        let actions: Vec<Action> = path.iter().filter_map(|(_, a)| a.clone()).collect();
        let settle = actions.iter().position(|a| *a == Action::Settle);
        let forgot = actions.iter().position(|a| *a == forgets);
        assert!(
            matches!(actions.first(), Some(Action::ParkAnswerLost(0)))
                && settle.is_some()
                && forgot > settle,
            "{variant:?}: {actions:?}"
        );
        let last = &path[path.len() - 1].0;
        assert!(!(property.condition)(&model, last));
        assert_eq!(last.queue.mirror().next_seq, 3, "the retry got a new seq");
        eprintln!("{variant:?}:\n{}", narrate(&model, &path));

        // The correct queue, on the same path up to the retry, answers it from the window.
        let correct = DeliveryModel::new(Bounds::remember(), Variant::Correct);
        let retry = actions
            .iter()
            .rposition(|a| *a == Action::Park(0))
            .expect("the retry");
        let mut state = correct.init_states().remove(0);
        for action in &actions[..=retry] {
            state = correct.next_state(&state, action.clone()).expect("enabled");
        }
        assert_eq!(state.remembered_answers.len(), 1);
        assert_eq!(state.queue.mirror().next_seq, 2, "nothing was written");
        assert!(!state.queue.has_batch_ready());
    }
    // At the named sets (no window) the variants change nothing the properties see.
    for variant in [Variant::ForgetAtCompaction, Variant::ForgetAtReopen] {
        let model = DeliveryModel::new(Bounds::with_lost_park(), variant);
        let dfs = model.checker().spawn_dfs().join();
        assert_eq!(
            dfs.unique_state_count(),
            delivery::LOST_PARK_UNIQUE_STATES,
            "{variant:?}"
        );
    }
}
