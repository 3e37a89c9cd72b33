//! The seed's acceptance scenarios 1-3, each as the daemon would meet it: thirteen lines in one
//! batch turn, a crash between the batch written and the mirror cleared, and a repeat told apart.

use super::*;

/// Seed acceptance 1 (D1, D3, D4, D5): 13 lines parked behind one turn are delivered as one
/// batch turn, every request id, turn and outcome preserved, and 13 notified events.
#[test]
fn acceptance_1_thirteen_lines_one_batch_turn() -> TestResult {
    //= spec/delivery.md#d1-batch-at-the-boundary
    //= type=test
    //# At a boundary that delivers a new batch, the batch MUST consist of lines that were parked at
    //# that moment, and only those, taken from the front of the parked list as `split` (D11)
    //# decides; with a budget that admits them all and no cap set, it MUST be every parked line, in
    //# ONE turn.
    //= spec/delivery.md#d1-batch-at-the-boundary
    //= type=test
    //# A boundary MUST NOT deliver fewer lines than `split` returns, or than the cap when that is
    //# fewer (pop-all, not pop-front).
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //= reason=one boundary call returns every line parked before it; the crate has no clock, timer
    //= reason=or sleep to wait with
    //# A boundary MUST deliver at once what is parked when it occurs; it MUST NOT wait, sleep or
    //# poll for more lines.
    //= spec/delivery.md#d2-no-waiting-window
    //= type=test
    //# A boundary with nothing parked and no recovered batch MUST return no batch.
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
    //# rewrite, reformat, truncate, cut, merge or annotate a line.
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# The line carries its own request id, answering turn, outcome and `agent_read{turn:...}`
    //# reference; the per-item header line format is the daemon's and MUST stay unchanged.
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# Each item MUST keep the request id given at park.
    //= spec/delivery.md#d5-notified-per-request
    //= type=test
    //# `Batch::notified()` MUST return exactly these events.
    //= spec/delivery.md#d5-notified-per-request
    //= type=test
    //# parkline MUST NOT replace them by a single per-batch event.
    //= spec/delivery.md#d17-order
    //= type=test
    //# `park` MUST assign seqs that strictly increase and are never reused within a mirror (when
    //# none is left, it fails with `Exhausted` rather than wrap, D10 "Attempt ceiling").
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    let lines: Vec<String> = (1..=13).map(seed_line).collect();
    for (n, line) in lines.iter().enumerate() {
        let seq = queue.park(RequestId(n as u64 + 1), line)?;
        assert_eq!(seq, Parked::Held(Seq(n as u64 + 1)));
    }
    let batch = queue.boundary(Budget(1 << 20))?.ok_or("13 lines parked")?;
    assert_eq!(batch.items.len(), 13);
    assert_eq!(batch.remaining, 0);
    assert_eq!(
        queue.boundary(Budget(1 << 20)).map_err(|e| e.kind()),
        Err(ErrorKind::BatchInFlight)
    );
    // D4: header, the lines verbatim, trailer; BYTES and the crc computed here from the lines.
    let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let expected = format!(
        "[parkline batch 1 attempt 1: 13 of 13 parked lines, 0 seen before, {} bytes]\n{body}\
         [parkline batch 1 end: 0 parked lines still undelivered, crc32 {:08x}]\n",
        body.len(),
        crc32fast::hash(body.as_bytes())
    );
    assert_eq!(batch.text(), expected);
    let events = batch.notified();
    assert_eq!(events.len(), 13);
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event.request, RequestId(n as u64 + 1));
        assert_eq!(event.seq, Seq(n as u64 + 1));
        assert!(!event.repeat);
    }
    let settlement = queue.settle(batch.id, &[Outcome::Delivered; 13])?;
    assert_eq!(settlement.delivered.len(), 13);
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    assert_eq!(queue.boundary(Budget(1 << 20))?, None);
    drop(queue);
    let queue = Queue::open(&path)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    Ok(())
}

/// The crash of acceptance 2, as a function: returns the batch of the first life and the first
/// boundary's batch of the second. (The harness runs the same scenario through its known-bad
/// drivers, to show the check catches them.)
fn crash_between_batch_written_and_mirror_cleared(
    path: &Path,
    config: Config,
) -> Result<(Batch, Option<Batch>), Box<dyn std::error::Error>> {
    let mut queue = Queue::open_with(path, config.clone())?;
    for n in 1..=5 {
        queue.park(RequestId(n), &seed_line(n))?;
    }
    let first = queue.boundary(Budget(1 << 20))?.ok_or("parked")?;
    // Crash: the batch is written, the daemon handed it over maybe, nothing was cleared.
    drop(queue);
    let mut queue = Queue::open_with(path, config)?;
    let second = queue.boundary(Budget(1 << 20))?;
    Ok((first, second))
}

/// Seed acceptance 2 (D9, D10, M3): a crash between "batch written" and "mirror cleared"
/// replays the batch in the next life marked as a repeat, same id and items, no item lost.
#[test]
fn acceptance_2_crash_between_batch_written_and_mirror_cleared_replays_as_repeat() -> TestResult {
    //= spec/delivery.md#d7-failure-isolation
    //= type=test
    //# A crash is not a failure: it MUST NOT change `failures`.
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# In particular, items MUST NOT leave the mirror before their batch is settled (no clear
    //# before hand-over), and a batch MUST NOT be settled `Delivered` on the daemon's behalf.
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# A batch persisted and not settled before a crash MUST, at the first boundary of the next
    //# life, be re-persisted and handed over again with the same batch id, the same items (same
    //# seqs, same lines, same order), the same `remaining`, an attempt one higher than the attempt
    //# stored for it, and the repeat mark, both in the header (D4) and on every notified event
    //# (D5).
    //= spec/delivery.md#d20-seen-before-in-the-header
    //= type=test
    //# `seen` is fixed when the batch is created: a repeat MUST carry the same `seen`, so its turn
    //# text still equals the original's except for `ATTEMPT` and `REPEAT` (D10).
    let (_dir, path) = temp_mirror()?;
    let (first, second) = crash_between_batch_written_and_mirror_cleared(&path, Config::default())?;
    let second = second.ok_or("the batch must come back")?;
    assert_eq!(second.id, first.id);
    // The same items; D19: each counts the repeat as one more hand-over, and seen is kept.
    let again: Vec<Item> = first
        .items
        .iter()
        .map(|item| Item {
            handed: item.handed + 1,
            ..item.clone()
        })
        .collect();
    assert_eq!(second.items, again);
    assert_eq!(second.seen, first.seen);
    assert_eq!(second.remaining, first.remaining);
    assert_eq!(second.attempt, Attempt(2));
    assert!(second.is_repeat());
    assert!(
        second
            .notified()
            .iter()
            .all(|e| e.repeat && e.attempt == Attempt(2))
    );
    assert!(
        second.text().starts_with(
            "[parkline batch 1 attempt 2, repeat: 5 of 5 parked lines, 0 seen before, "
        )
    );
    // A second crash before settling: attempt 3 next time, still nothing lost.
    let mut queue = Queue::open(&path)?;
    assert_eq!(queue.in_flight().map(|b| b.attempt), Some(Attempt(2)));
    let third = queue.boundary(Budget(1 << 20))?.ok_or("again")?;
    assert_eq!((third.id, third.attempt), (first.id, Attempt(3)));
    queue.settle(third.id, &[Outcome::Delivered; 5])?;
    drop(queue);
    let queue = Queue::open(&path)?;
    assert!(queue.parked().is_empty() && queue.in_flight().is_none());
    Ok(())
}

/// Seed acceptance 3 (D11, D12, D13, D17): a budget overflow splits deterministically, and the
/// trailer says how many remain; the split is the same in every life.
#[test]
fn acceptance_3_budget_overflow_splits_deterministically_with_trailer_count() -> TestResult {
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
    //= spec/delivery.md#d11-deterministic-split
    //= type=test
    //# `remaining` MUST be `parked.len() - k`.
    //= spec/delivery.md#d13-trailer-count
    //= type=test
    //# The trailer MUST state `remaining`: the number of lines parked at the batch's (original)
    //# boundary that are not in the batch.
    //= spec/delivery.md#d18-no-silent-duplicate
    //= type=test
    //# A line MUST be handed over again only as part of a repeat of its batch (D10), as a retry
    //# after it failed (D7), or in a new batch after the repeat bound closed its batch (D10).
    //= spec/delivery.md#d18-no-silent-duplicate
    //= type=test
    //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
    let (_dir, path) = temp_mirror()?;
    let lines: Vec<String> = (1..=13).map(seed_line).collect();
    let cost = lines[0].chars().count() + 1;
    assert!(lines.iter().all(|l| l.chars().count() + 1 == cost));
    let budget = Budget(cost * 5 + cost / 2); // room for five
    let mut runs = Vec::new();
    for run in 0..2 {
        let path = path.with_extension(format!("run{run}"));
        let mut queue = Queue::open(&path)?;
        for (n, line) in lines.iter().enumerate() {
            queue.park(RequestId(n as u64 + 1), line)?;
        }
        let mut texts = Vec::new();
        while let Some(batch) = queue.boundary(budget)? {
            texts.push(batch.text());
            let n = batch.items.len();
            queue.settle(batch.id, &vec![Outcome::Delivered; n])?;
        }
        runs.push(texts);
    }
    assert_eq!(runs[0], runs[1]);
    let texts = &runs[0];
    assert_eq!(texts.len(), 3);
    assert!(
        texts[0].starts_with("[parkline batch 1 attempt 1: 5 of 13 parked lines, 0 seen before, ")
    );
    assert!(texts[0].contains("\n[parkline batch 1 end: 8 parked lines still undelivered, crc32 "));
    assert!(
        texts[1].starts_with("[parkline batch 2 attempt 1: 5 of 8 parked lines, 0 seen before, ")
    );
    assert!(texts[1].contains("\n[parkline batch 2 end: 3 parked lines still undelivered, crc32 "));
    assert!(
        texts[2].starts_with("[parkline batch 3 attempt 1: 3 of 3 parked lines, 0 seen before, ")
    );
    assert!(texts[2].contains("\n[parkline batch 3 end: 0 parked lines still undelivered, crc32 "));
    let all: String = texts.concat();
    for line in &lines {
        assert_eq!(all.matches(line.as_str()).count(), 1, "{line}");
    }

    // A crash after the first boundary replays the same membership and trailer (D11).
    let mut queue = Queue::open(&path)?;
    for (n, line) in lines.iter().enumerate() {
        queue.park(RequestId(n as u64 + 1), line)?;
    }
    let first = queue.boundary(budget)?.ok_or("parked")?;
    drop(queue);
    let mut queue = Queue::open(&path)?;
    let repeat = queue.boundary(budget)?.ok_or("recovered")?;
    let seqs = |batch: &Batch| batch.items.iter().map(|item| item.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&repeat), seqs(&first));
    assert!(
        repeat
            .text()
            .contains("\n[parkline batch 1 end: 8 parked lines still undelivered, crc32 ")
    );
    Ok(())
}
