//! The split and the batch's turn text (D11-D13): which parked lines one boundary takes under
//! a budget, and the exact text the daemon hands over as one turn.

use super::*;

/// D11, D12: the longest prefix within the budget, at least one item, chars not bytes.
#[test]
fn split_takes_the_longest_prefix_within_budget() {
    //= spec/delivery.md#d4-framing
    //= type=test
    //# Header and trailer MUST NOT count toward the budget (D12).
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# The membership of a new batch MUST be `k = min(split(parked, budget), cap)` items, the first
    //# `k` of the parked list, where `split` is this pure function:
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# `split` MUST depend on nothing but the ordered parked list and the budget (no clock, no
    //# arrival timing, no hash order).
    let items = [item(1, "aaaa"), item(2, "bb"), item(3, "c")];
    // costs 5, 3, 2
    assert_eq!(split(&items, Budget(0)), 1);
    assert_eq!(split(&items, Budget(4)), 1);
    assert_eq!(split(&items, Budget(5)), 1);
    assert_eq!(split(&items, Budget(7)), 1);
    assert_eq!(split(&items, Budget(8)), 2);
    assert_eq!(split(&items, Budget(9)), 2);
    assert_eq!(split(&items, Budget(10)), 3);
    assert_eq!(split(&items, Budget(usize::MAX)), 3);
    assert_eq!(split(&[], Budget(10)), 0);
    // Characters, not bytes: "ééé" is 6 bytes, 3 characters, cost 4.
    let wide = [item(1, "ééé"), item(2, "x")];
    assert_eq!(split(&wide, Budget(4)), 1);
    assert_eq!(split(&wide, Budget(6)), 2);
}

/// D11: the split's shortcut (every line taken when their bytes fit, no character counted)
/// gives what the walk over the costs gives, at every budget from 0 to past the byte total, for
/// lines of 1- to 4-byte characters, so the shortcut can never take a line whose characters do
/// not fit.
#[test]
fn split_shortcut_agrees_with_the_walk_at_every_budget() {
    fn walk(items: &[Item], budget: usize) -> usize {
        let (mut spent, mut taken) = (0usize, 0usize);
        for item in items {
            spent += item.line.chars().count() + 1;
            if spent > budget {
                break;
            }
            taken += 1;
        }
        if items.is_empty() { 0 } else { taken.max(1) }
    }
    let lines = ["", "a", "é", "€€", "𝄞x", "plain ascii", "ü𝄞€a"];
    for start in 0..lines.len() {
        for end in start..=lines.len() {
            let items: Vec<Item> = lines[start..end]
                .iter()
                .enumerate()
                .map(|(i, line)| item(i as u64 + 1, line))
                .collect();
            let bytes: usize = items.iter().map(|item| item.line.len() + 1).sum();
            for budget in 0..=bytes + 2 {
                assert_eq!(
                    split(&items, Budget(budget)),
                    walk(&items, budget),
                    "lines {:?}, budget {budget}",
                    &lines[start..end]
                );
            }
        }
    }
}

/// D12: a single line larger than the budget is delivered alone and never cut; a big line behind
/// small ones ends the prefix before it.
#[test]
fn split_delivers_a_line_larger_than_the_budget_alone() {
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# The batch MUST be cut at item boundaries only, never inside a line.
    //= spec/delivery.md#d12-budget
    //= type=test
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    let big = "x".repeat(1000);
    let items = [item(1, &big), item(2, "a")];
    assert_eq!(split(&items, Budget(10)), 1);
    let items = [item(1, "a"), item(2, &big), item(3, "b")];
    assert_eq!(split(&items, Budget(10)), 1);
    assert_eq!(split(&items[1..], Budget(10)), 1);
}

/// D12 through the queue: the oversized line comes out whole, in a batch of its own.
#[test]
fn boundary_hands_an_oversized_line_alone_and_whole() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
    //# rewrite, reformat, truncate, cut, merge or annotate a line.
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# The batch MUST be cut at item boundaries only, never inside a line.
    //= spec/delivery.md#d12-budget
    //= type=test
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    let big = "é".repeat(500);
    queue.park(RequestId(1), &big)?;
    queue.park(RequestId(2), "small")?;
    let batch = queue.boundary(Budget(50))?.ok_or("parked")?;
    assert_eq!(batch.items.len(), 1);
    assert_eq!(batch.items[0].line, big);
    assert_eq!(batch.remaining, 1);
    assert!(batch.text().contains(&big));
    Ok(())
}

/// D4, D13: the exact turn text, first attempt and repeat.
#[test]
fn turn_text_is_exact() {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
    //# rewrite, reformat, truncate, cut, merge or annotate a line.
    //= spec/delivery.md#d4-framing
    //= type=test
    //# The turn text of a batch MUST be exactly the header, the body and the trailer, each line
    //# followed by one `\n` (including the last), and nothing else, where the body is each item's
    //# line followed by `\n`:
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# Its turn text MUST equal the original's except for `ATTEMPT` and `REPEAT` in the header.
    //= spec/delivery.md#d13-trailer-count
    //= type=test
    //# The trailer MUST state `remaining`: the number of lines parked at the batch's (original)
    //# boundary that are not in the batch.
    let batch = Batch {
        id: BatchId(12),
        attempt: Attempt(1),
        items: vec![item(1, "first  line "), item(2, ""), item(3, "tab\there")],
        remaining: 4,
        seen: 1,
    };
    assert_eq!(
        batch.text(),
        "[parkline batch 12 attempt 1: 3 of 7 parked lines, 1 seen before, 23 bytes]\n\
         first  line \n\
         \n\
         tab\there\n\
         [parkline batch 12 end: 4 parked lines still undelivered, crc32 a96f9813]\n"
    );
    let repeat = Batch {
        attempt: Attempt(3),
        ..batch
    };
    assert_eq!(
        repeat.text(),
        "[parkline batch 12 attempt 3, repeat: 3 of 7 parked lines, 1 seen before, 23 bytes]\n\
         first  line \n\
         \n\
         tab\there\n\
         [parkline batch 12 end: 4 parked lines still undelivered, crc32 a96f9813]\n"
    );
}

/// D5, D10: one notified event per item, in order, with the repeat mark.
#[test]
fn notified_is_one_event_per_item_in_order() {
    //= spec/delivery.md#d5-notified-per-request
    //= type=test
    //# `Batch::notified()` MUST return exactly these events.
    //= spec/delivery.md#d5-notified-per-request
    //= type=test
    //# parkline MUST NOT replace them by a single per-batch event.
    let batch = Batch {
        id: BatchId(2),
        attempt: Attempt(2),
        items: vec![item(4, "a"), item(7, "b")],
        remaining: 0,
        seen: 0,
    };
    let events = batch.notified();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].seq, Seq(4));
    assert_eq!(events[0].request, RequestId(104));
    assert_eq!(events[1].seq, Seq(7));
    assert!(
        events
            .iter()
            .all(|e| e.repeat && e.attempt == Attempt(2) && e.batch == BatchId(2))
    );
}

/// The batch `boundary` returns shares its lines with the in-flight batch the queue keeps and
/// with the parked list they came from: a boundary of n lines copies no line (the 10,000-line
/// row of the boundary bench was a fifth line copies before `Line`). A recovered batch handed
/// over again shares them too.
#[test]
fn a_boundary_hands_over_the_lines_without_copying_them() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park_all(&[(RequestId(1), "one"), (RequestId(2), "two")])?;
    let parked: Vec<Line> = queue
        .parked()
        .iter()
        .map(|item| item.line.clone())
        .collect();
    let batch = queue.boundary(Budget(usize::MAX))?.expect("two parked");
    let kept = queue.in_flight().expect("in flight");
    for ((given, kept), parked) in batch.items.iter().zip(&kept.items).zip(&parked) {
        assert!(std::ptr::eq(given.line.as_str(), parked.as_str()));
        assert!(std::ptr::eq(kept.line.as_str(), parked.as_str()));
    }
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    let recovered: Vec<Line> = queue
        .in_flight()
        .expect("recovered")
        .items
        .iter()
        .map(|item| item.line.clone())
        .collect();
    let repeat = queue.boundary(Budget(1))?.expect("the repeat");
    assert!(repeat.is_repeat());
    for (given, recovered) in repeat.items.iter().zip(&recovered) {
        assert!(std::ptr::eq(given.line.as_str(), recovered.as_str()));
    }
    Ok(())
}

/// Whether every turn text of 30 parked lines, each batch handed over and then repeated after
/// a crash, is within `chars_max` under `budget` (a single line over the budget alone excepted).
fn turns_within(chars_max: usize, budget: Budget) -> Result<bool, Box<dyn std::error::Error>> {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    for request in 0..30u64 {
        let line = "é".repeat((request as usize * 37) % 90);
        queue.park(RequestId(request), &line)?;
    }
    let mut within = true;
    while let Some(batch) = queue.boundary(budget)? {
        // The same batch again, as a repeat after a crash: its header is longer.
        let storage = queue.into_storage();
        queue = Queue::with_storage(storage, "m", Config::default())?;
        let repeat = queue.boundary(budget)?.ok_or("the batch repeats")?;
        assert!(repeat.is_repeat());
        for turn in [&batch, &repeat] {
            let alone_over = turn.items.len() == 1 && turn.items[0].cost() > budget.0;
            within &= turn.text().chars().count() <= chars_max || alone_over;
        }
        let outcomes = vec![Outcome::Delivered; repeat.items.len()];
        queue.settle(repeat.id, &outcomes)?;
    }
    Ok(within)
}

/// D12: a caller whose limit is the whole turn text (the parent's read budget) gets its budget
/// from `Budget::for_turn_chars`: every turn text, first hand-over and repeat, is within the
/// limit, but for a single line over the budget, which goes alone. The known-bad allowance
/// measured on a first hand-over's framing lets repeats overflow, and the same check says so.
#[test]
fn d12_a_budget_for_turn_chars_bounds_the_whole_turn_text() -> TestResult {
    //= spec/delivery.md#d12-budget
    //= type=test
    //# A batch split under `Budget::for_turn_chars(n)` MUST have a turn text of at most `n`
    //# chars, header and trailer included, on every hand-over, unless it is a single item
    //# whose cost alone exceeds the budget.
    let framing = crate::frame::FRAMING_CHARS_MAX;
    assert_eq!(
        Budget::for_turn_chars(framing - 1).map_err(|e| e.kind()),
        Err(ErrorKind::BudgetTooSmall)
    );
    // The framing of a first hand-over of an empty batch: what a naive allowance would take.
    let first = crate::frame::render(BatchId(1), Attempt(1), 0, 0, [""; 0])
        .chars()
        .count();
    let mut naive_caught = false;
    for extra in [0, 1, 7, 40, 150, 600] {
        let chars_max = framing + extra;
        assert!(
            turns_within(chars_max, Budget::for_turn_chars(chars_max)?)?,
            "{chars_max}"
        );
        naive_caught |= !turns_within(chars_max, Budget(chars_max - first))?;
    }
    assert!(naive_caught, "the naive allowance was never caught");
    Ok(())
}

/// D12: a repeat is the batch the mirror holds, split under its first budget; a daemon whose
/// limit shrank across the restart gets it at that size, and only the batches after it are split
/// under the new limit.
#[test]
fn d12_a_repeat_after_the_limit_shrank_keeps_its_first_size() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    for request in 1..=6 {
        queue.park(RequestId(request), &format!("line {request} of ten"))?;
    }
    let first = queue
        .boundary(Budget::for_turn_chars(1000)?)?
        .ok_or("parked")?;
    assert_eq!(first.items.len(), 6);
    let mut queue = Queue::with_storage(queue.into_storage(), "m", Config::default())?;
    let smaller = Budget::for_turn_chars(crate::frame::FRAMING_CHARS_MAX + 30)?;
    let repeat = queue.boundary(smaller)?.ok_or("recovered")?;
    let seqs = |batch: &Batch| batch.items.iter().map(|item| item.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&repeat), seqs(&first));
    let cost: usize = repeat
        .items
        .iter()
        .map(|item| item.line.chars().count() + 1)
        .sum();
    assert_eq!(cost, 84, "over the new budget of 30");
    let outcomes = vec![Outcome::Failed; repeat.items.len()];
    queue.settle(repeat.id, &outcomes)?;
    let next = queue.boundary(smaller)?.ok_or("parked again")?;
    assert_eq!(next.items.len(), 2); // 14 + 14 fit 30, a third does not
    Ok(())
}
