//! The delivery properties, each named by the spec id it checks (`"D9 no loss"`, ...; D19..D23
//! are the ids the delivery v2 requirements take after D18, in this order): the names
//! as constants, then one predicate per property over a [`DeliveryState`]. The model lists them
//! in `DeliveryModel::properties`, with the `sometimes` properties that show the interesting paths
//! are really reached.

use std::sync::Arc;

use super::model::{
    BoundaryRecord, DeliveryModel, DeliveryState, DiscardRecord, Member, Phase, SettleRecord,
};
use super::reference::{ParsedTurn, RefBatch, RefItem, RefNotified, parse_turn, split, turn_text};
use super::variants::{Variant, parse_turn_searching_trailer};

/// `always`: a new batch is the first `split` lines of the lines parked at its boundary, and no
/// fewer (pop-all, not pop-front).
pub const D1: &str = "D1 batch at the boundary";
/// `always`: a batch holds only lines parked at its original boundary; later lines wait.
pub const D2: &str = "D2 no waiting window";
/// `always`: every handed-over item is its parked line byte for byte, with its request (D3, D4).
pub const D3: &str = "D3 items verbatim";
/// `always`: one notified event per delivered item, matching its hand-over (D5).
pub const D5: &str = "D5 notified per request";
/// `always`: an item's state depends only on its own outcomes (D6, D7).
pub const D6: &str = "D6 per-request independence";
/// `always`: an item failed `failures_max` times is a dead letter, kept, never offered again.
pub const D8: &str = "D8 dead letter";
/// `always`: a discard removes every dead letter and nothing else, and a discarded line is
/// never offered again (D8, D18).
pub const DISCARD: &str = "D8 discard removes only dead letters";
/// `always`: every acknowledged line is exactly one of parked, in flight, delivered, dead, or
/// discarded from the dead letters.
pub const D9: &str = "D9 no loss";
/// `always`: a replay has the same id, items and remaining, attempt + 1 and the repeat mark.
pub const D10: &str = "D10 repeat recognisable";
/// `always`: every batch equals `split` applied to the parked list at its original boundary.
pub const D11: &str = "D11 deterministic split";
/// `always`: a batch costs at most the budget, unless it is one line alone.
pub const D12: &str = "D12 budget";
/// `always`: the header and trailer count what was parked at the original boundary (D4, D13).
pub const D13: &str = "D13 trailer count";
/// `always`: a collected line is still parked, in flight, delivered or dead.
pub const D14: &str = "D14 collected is not consumed";
/// `eventually`: every line of the bounds is delivered or dead-lettered.
pub const D15: &str = "D15 eventually";
/// `always`: once nothing more can happen but crashes and collections, every line is delivered
/// or dead-lettered (D15 as a safety property: `eventually` is judged at terminal states only).
pub const D15_QUIESCENT: &str = "D15 quiescent means delivered";
/// `always`: seqs increase, the parked list and each batch are in seq order, a batch precedes
/// what it leaves parked.
pub const D17: &str = "D17 order";
/// `always`: a line settled delivered or dead is never handed over again.
pub const D18: &str = "D18 no silent duplicate";
/// `always`: every item's `handed` is the number of durable hand-overs (boundaries) of its seq
/// so far, at each hand-over and in the mirror, so it is at least what the parent saw (a
/// hand-over cut by a crash included), and a line the parent saw is never offered again with
/// `handed` 1 (never offered twice silently); each notified event carries its item's count.
pub const HANDOVER_COUNT: &str = "D19 hand-over count";
/// `always`: a batch's `seen` is the number of its items handed over in an earlier batch.
pub const SEEN: &str = "D20 seen before";
/// `always`: no batch is handed over more than `repeats_max` times without a settle (D10's
/// repeat bound).
pub const REPEAT_BOUND: &str = "D10 repeat bound";
/// `always`: a compaction at any state with a batch in flight writes a snapshot that reads back
/// as that state (D9 through M12: a snapshot the next open refused would lose every line).
pub const SNAPSHOT: &str = "D9 snapshot keeps the state";
/// `sometimes`, listed only at bounds with as many crashes as the repeat bound: the repeat bound
/// closes a recovered batch.
pub const SOMETIMES_CLOSED: &str = "a batch is closed by the repeat bound";
/// `always`: a redriven line is parked, in flight, delivered or dead again (never lost), with
/// its failures counted from 0 at the redrive and its hand-over count kept.
pub const REDRIVE: &str = "D21 redrive keeps the line";
/// `always`: of a group park, every line or none is in the queue (or delivered), also after a
/// crash that tore its record.
pub const GROUP_PARK: &str = "D22 group park all or none";
/// `always`: every handed-over turn text reads back to exactly its batch's numbers and lines,
/// a line that imitates framing included.
pub const FRAMING: &str = "D23 framing read back";
/// `always`, listed with group parkers: no caller of a group takes its answer while the record
/// holding its line is written and not yet synced (D16: `park` returns only once the line is
/// durable, each caller of a group once that group's fsync returns).
pub const GROUP_ACK: &str = "D16 no park acknowledged before its fsync";
/// `always`, listed with group parkers: a caller of a group is refused only for its own line
/// (the invalid line, or a request that is a dead letter), never for another caller's, and the
/// invalid line is never parked (D16, D3).
pub const GROUP_REFUSAL: &str = "D16 a refusal fails its caller only";
/// `always`, listed with group parkers: a park acknowledged before a boundary is in that boundary's
/// batch or parked behind it, unless it left the queue before (delivered, dead or discarded).
pub const GROUP_BOUNDARY: &str = "D1 acknowledged park in the batch or behind it";
/// `always`, listed with a remembered window (`Bounds::delivered_memory`): no line of a request
/// is settled delivered (or discarded) when it was parked while an earlier line of that request
/// was still remembered, one of the last `delivered_memory` requests settled delivered or
/// discarded before that park (issue 42's remembered deliveries: D3's retried park answered past
/// the settle). The ghost window is the model's own count, not the queue's.
pub const D3_REMEMBERED: &str = "D3 a request is delivered at most once while remembered";
/// `sometimes`, listed with a remembered window and a lost park answer: the daemon's retry of a
/// park whose line was delivered and settled while it waited is answered "delivered".
pub const SOMETIMES_RETRY_REMEMBERED: &str = "a retried park is answered as delivered";
/// `sometimes`, listed with a remembered window smaller than the lines: the window forgets its
/// oldest request.
pub const SOMETIMES_REMEMBERED_EVICTED: &str = "the window forgets its oldest request";
/// `sometimes`, listed with group parkers: one written record parks the lines of two callers.
pub const SOMETIMES_GROUP_SHARED: &str = "one group record parks two callers' lines";
/// `sometimes`, listed with group parkers: a written record parks a line of a group whose
/// other caller is refused.
pub const SOMETIMES_GROUP_REFUSAL: &str = "a refusal beside a parked line in one group";
/// `sometimes`: a handed-over batch leaves lines parked.
pub const SOMETIMES_SPLIT: &str = "a split happens";
/// `sometimes`: a repeat is handed over.
pub const SOMETIMES_REPEAT: &str = "a repeat is delivered";
/// `sometimes`: a crash between "batch written" and "mirror cleared".
pub const SOMETIMES_CRASH_MID_BATCH: &str = "a crash between write and clear";
/// `sometimes`: an item reaches the dead letters.
pub const SOMETIMES_DEAD: &str = "an item is dead-lettered";
/// `sometimes`: the operator discards a dead letter (D8).
pub const SOMETIMES_DISCARD: &str = "a dead letter is discarded";
/// `sometimes`: a failed item is offered again (D7).
pub const SOMETIMES_RETRY: &str = "a failed item is retried";
/// `sometimes`: a line larger than the budget is delivered alone (D12).
pub const SOMETIMES_OVERSIZED: &str = "a line over the budget goes alone";
/// `sometimes`: a line arrives while a batch is being delivered (D2: it waits for the next).
pub const SOMETIMES_LATE_LINE: &str = "a line arrives during delivery";
/// `sometimes`: a collected line is delivered (D14).
pub const SOMETIMES_COLLECTED_DELIVERED: &str = "a collected line is delivered";
/// `sometimes`: a redriven line is handed over again, its earlier hand-overs counted.
pub const SOMETIMES_REDRIVEN_HANDED: &str = "a redriven line is handed over again";
/// `sometimes`: a batch carries a line handed over in an earlier batch.
pub const SOMETIMES_SEEN: &str = "a line seen before is handed over";
/// `sometimes`: a crash tears a group park's record.
pub const SOMETIMES_TORN_GROUP: &str = "a crash tears a group park";
/// `sometimes`: a line the parent saw is handed over again after a crash cut the settle, its
/// count one above what the parent saw before.
pub const SOMETIMES_CUT_HAND_OVER_COUNTED: &str = "a hand-over cut by a crash is counted";
/// `sometimes`, listed only at bounds of 4 lines or more (`parkline check --bounds deep`): a
/// batch leaves two or more lines for later turns, where the trailer's count and the next
/// turn's size differ (the known-bad `trailer-counts-next-turn` needs it).
pub const SOMETIMES_TWO_LEFT: &str = "a batch leaves two lines for later turns";

// # Checking the newest record only
//
// The ghost logs of a state (`boundaries`, `handed`, `notified`, `settles`) only grow, a step
// appends at most one record to each (the test `a_step_appends_at_most_one_record_to_each_log`
// walks every transition at small bounds to show it), and a record never changes once appended.
// The checker evaluates every `always` property at every reachable state, the initial one
// included, and every state on the path to a state was reached before it. So a property of the
// form "every record R of a log satisfies P(R, what was logged before R)" holds at every state
// exactly when P holds of the newest record at every state: each record was the newest one in
// the state that appended it, and its P cannot change afterwards. The properties below check
// the newest record of each log that way, instead of walking the whole history at every state
// (the walks were most of the check's time). Where the other side of a condition is what grows
// later (D18: a settled line handed over *afterwards*), the property is stated from the side
// appended last, the hand-over, which is what keeps the argument sound. Conditions on the
// current queue (D9, D6, D8, D14, ...) still read the whole state.

/// Whether `items` are the first `items.len()` lines of `parked`, by seq.
fn is_seq_prefix(items: &[RefItem], parked: &[RefItem]) -> bool {
    items.len() <= parked.len() && items.iter().zip(parked).all(|(b, p)| b.seq == p.seq)
}

/// The newest boundary record, if any.
fn newest_boundary(s: &DeliveryState) -> Option<&BoundaryRecord> {
    s.boundaries.last().map(Arc::as_ref)
}

/// The newest hand-over and its index in `handed`, if any.
fn newest_handed(s: &DeliveryState) -> Option<(usize, &RefBatch)> {
    s.handed.len().checked_sub(1).map(|h| (h, &*s.handed[h]))
}

/// The newest notified event, if any.
fn newest_notified(s: &DeliveryState) -> Option<&RefNotified> {
    s.notified.last().map(Arc::as_ref)
}

/// The newest settle, if any.
fn newest_settle(s: &DeliveryState) -> Option<&SettleRecord> {
    s.settles.last().map(Arc::as_ref)
}

/// The turn handed over by the step that produced `s`, if that step was a hand-over: the newest
/// batch of `handed` while the phase still shows it handed over with no outcome yet. Only the
/// hand-over appends to `handed`, and it leaves exactly this phase (the test
/// `a_step_appends_at_most_one_record_to_each_log` checks both at every transition), so every
/// turn is seen here in the state its hand-over produced; the states after it (an outcome, a
/// park, a crash) no longer show it. The text properties (D3, D10, D13, framing) render and read
/// a turn's text only here, and the `sometimes` properties about hand-overs look only here.
pub(super) fn fresh_turn(s: &DeliveryState) -> Option<&RefBatch> {
    match &s.phase {
        Phase::HandedOver { outcomes, .. } if outcomes.is_empty() => {
            s.handed.last().map(Arc::as_ref)
        }
        _ => None,
    }
}

pub(super) fn d1_batch_at_the_boundary(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d1-batch-at-the-boundary
    //# At a boundary that delivers a new batch, the batch MUST consist of lines that were parked at
    //# that moment, and only those, taken from the front of the parked list as `split` (D11)
    //# decides; with a budget that admits them all and no cap set, it MUST be every parked line, in
    //# ONE turn.
    //= spec/delivery.md#d1-batch-at-the-boundary
    //# A boundary MUST NOT deliver fewer lines than `split` returns, or than the cap when that is
    //# fewer (pop-all, not pop-front).
    newest_boundary(s).is_none_or(|r| {
        r.replay || {
            let cap = r.cap.map_or(usize::MAX, |cap| cap as usize);
            let k = split(&r.parked, m.bounds.budget).min(cap);
            r.batch.items.len() >= k && is_seq_prefix(&r.batch.items, &r.parked)
        }
    })
}

pub(super) fn d2_no_waiting_window(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d2-no-waiting-window
    //# A line parked after the boundary (while its batch is being persisted, handed over, notified
    //# or settled) MUST NOT join that batch and MUST NOT be counted in its `remaining`; it is
    //# delivered at a later boundary.
    newest_boundary(s).is_none_or(|r| match s.original(r.batch.id) {
        Some(o) => {
            r.batch
                .items
                .iter()
                .all(|i| o.parked.iter().any(|p| p.seq == i.seq))
                && r.batch.items.len() + r.batch.remaining <= o.parked.len()
        }
        None => false,
    })
}

pub(super) fn d3_items_verbatim(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d3-items-verbatim
    //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
    //# rewrite, reformat, truncate, cut, merge or annotate a line.
    //= spec/delivery.md#d3-items-verbatim
    //# Each item MUST keep the request id given at park.
    let verbatim = |item: &RefItem| {
        usize::try_from(item.seq)
            .ok()
            .and_then(|seq| m.bounds.lines.get(seq.wrapping_sub(1)))
            .is_some_and(|(request, line)| *request == item.request && *line == item.line)
    };
    //= spec/delivery.md#d3-items-verbatim
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    // One held item per request: a retried park added no second one.
    let mut requests: Vec<u64> = s.items().map(|item| item.request).collect();
    let held = requests.len();
    requests.sort_unstable();
    requests.dedup();
    requests.len() == held
        && s.items().all(verbatim)
        && fresh_turn(s).into_iter().all(|b| {
            let text = turn_text(b);
            let body: Vec<&str> = text.lines().skip(1).take(b.items.len()).collect();
            b.items.iter().all(verbatim)
                && body.len() == b.items.len()
                && body.iter().zip(&b.items).all(|(l, i)| *l == i.line)
        })
}

pub(super) fn d5_notified_per_request(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d5-notified-per-request
    //# For every hand-over of a batch (first or repeat) the daemon MUST record one
    //# `delegation_notified` event per item, in item order, carrying `{ request, seq, batch,
    //# attempt, repeat, handed }` of that item and that hand-over, where `repeat = (attempt > 1)`.
    let events_match = newest_notified(s).is_none_or(|e| {
        e.repeat == (e.attempt > 1)
            && s.handed.iter().any(|b| {
                b.id == e.batch
                    && b.attempt == e.attempt
                    && b.items
                        .iter()
                        .any(|i| i.seq == e.seq && i.request == e.request)
            })
    });
    let delivered_notified = newest_settle(s).is_none_or(|r| {
        r.outcomes.iter().filter(|(_, ok)| *ok).all(|(seq, _)| {
            s.notified
                .iter()
                .any(|e| e.seq == *seq && e.batch == r.batch && e.attempt == r.attempt)
        })
    });
    events_match && delivered_notified
}

pub(super) fn d6_per_request_independence(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d6-per-request-independence
    //# The delivery state of an item (parked, in flight, delivered, dead letter; its `failures`)
    //# MUST depend only on its own outcomes and on crashes; the outcome of one item MUST NOT drop,
    //# block, delay to a later boundary, or change the failure count of another item.
    //= spec/delivery.md#d7-failure-isolation
    //# A crash is not a failure: it MUST NOT change `failures`.
    s.acknowledged().all(|seq| {
        let (mut failed, mut delivered) = (0u32, false);
        for &(q, ok) in s.settles[s.last_redrive(seq)..]
            .iter()
            .flat_map(|r| r.outcomes.iter())
        {
            if q == seq {
                if ok {
                    delivered = true;
                } else {
                    failed += 1;
                }
            }
        }
        let item = s.items().find(|i| i.seq == seq);
        if delivered || s.is_discarded(seq) {
            return item.is_none();
        }
        // Failures count from the last redrive (D7 after a redrive).
        match item {
            // A crash is not a failure (D7); a line closed alone by the repeat bound is dead (D8).
            Some(item) => {
                let dead = failed >= m.bounds.failures_max || s.closed_alone(seq);
                item.failures == failed && s.is_dead(seq) == dead
            }
            None => false,
        }
    })
}

pub(super) fn d8_dead_letter(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d8-dead-letter
    //# An item whose failure count reaches `failures_max` (a positive integer, default 3) at a
    //# settle MUST move to the dead letters in that same settle.
    //= spec/delivery.md#d8-dead-letter
    //# MUST NOT be delivered again automatically
    // The dead letters are the acknowledged lines whose last life ended in a death (compared
    // as sets: a line listed twice is D9's finding).
    let known = s
        .queue
        .dead_letters()
        .iter()
        .all(|i| s.acknowledged().contains(&i.seq));
    known
        && s.acknowledged().all(|seq| {
            // The history of the seq in lives between redrives: (first settle, first hand-over,
            // redrives before it).
            let mut lives = std::iter::once((0, 0, 0))
                .chain(
                    s.redrives
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.seqs.contains(&seq))
                        .map(|(i, r)| (r.settles_before, r.handed_before, i + 1)),
                )
                .peekable();
            let mut dead_now = false;
            while let Some((from, _, redrives)) = lives.next() {
                let next = lives.peek().copied();
                let to = next.map_or(s.settles.len(), |(settles, _, _)| settles);
                let redrives_to = next.map_or(usize::MAX, |(_, _, r)| r);
                let mut failed = 0u32;
                let death = (from..to).find(|&index| {
                    failed += s.settles[index]
                        .outcomes
                        .iter()
                        .filter(|(q, ok)| *q == seq && !*ok)
                        .count() as u32;
                    failed >= m.bounds.failures_max
                });
                // D10's repeat bound: a batch of this one line closed in this life kills it too.
                let closed = s.closes.iter().find(|c| {
                    (redrives..redrives_to).contains(&c.redrives_before)
                        && matches!(&c.batch.items[..], [item] if item.seq == seq)
                });
                let handed_at = match (death, closed) {
                    (Some(index), Some(c)) => s.settles[index].handed_before.min(c.handed_before),
                    (Some(index), None) => s.settles[index].handed_before,
                    (None, Some(c)) => c.handed_before,
                    (None, None) => continue,
                };
                // Never offered again after its death, until a redrive.
                let until = next.map_or(s.handed.len(), |(_, handed, _)| handed);
                let after = s.handed.get(handed_at..until);
                if after
                    .is_some_and(|after| after.iter().any(|b| b.items.iter().any(|i| i.seq == seq)))
                {
                    return false;
                }
                dead_now = next.is_none();
            }
            // A discard ends the last life's death (D8): the line is gone, not dead.
            (dead_now && !s.is_discarded(seq)) == s.is_dead(seq)
        })
}

pub(super) fn d9_no_loss(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d9-no-loss
    //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be exactly
    //# one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a dead letter
    //# until an explicit discard (D8) deletes it, through any sequence of boundaries, settles,
    //# failures, crashes and recoveries.
    s.acknowledged().all(|seq| {
        s.held(seq) + usize::from(s.is_delivered(seq)) + usize::from(s.is_discarded(seq)) == 1
    })
}

pub(super) fn d10_repeat_recognisable(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d10-repeat-recognisable
    //# A batch persisted and not settled before a crash MUST, at the first boundary of the next
    //# life, be re-persisted and handed over again with the same batch id, the same items (same
    //# seqs, same lines, same order), the same `remaining`, an attempt one higher than the attempt
    //# stored for it, and the repeat mark, both in the header (D4) and on every notified event
    //# (D5).
    //= spec/delivery.md#d10-repeat-recognisable
    //# A batch id that was returned by `boundary` MUST NOT later denote a different membership.
    //= spec/delivery.md#d10-repeat-recognisable
    //# Batch ids of new batches MUST increase.
    //= spec/delivery.md#d20-seen-before-in-the-header
    //# `seen` is fixed when the batch is created: a repeat MUST carry the same `seen`, so its turn
    //# text still equals the original's except for `ATTEMPT` and `REPEAT` (D10).
    let records_ok = s.boundaries.split_last().is_none_or(|(r, before)| {
        let b = &r.batch;
        match before.iter().rev().find(|o| o.batch.id == b.id) {
            Some(prev) => {
                let prev = &prev.batch;
                r.replay
                    && b.attempt == prev.attempt + 1
                    && same_lines(&b.items, &prev.items)
                    && b.remaining == prev.remaining
                    && b.seen == prev.seen
            }
            None => {
                let max_id = before.iter().map(|o| o.batch.id).max().unwrap_or(0);
                !r.replay && b.attempt == 1 && b.id > max_id
            }
        }
    });
    records_ok
        && fresh_turn(s).into_iter().all(|b| {
            let header = turn_text(b);
            header.lines().next().is_some_and(|h| {
                h.starts_with(&format!("[parkline batch {} attempt {}", b.id, b.attempt))
                    && h.contains(", repeat:") == b.is_repeat()
            })
        })
}

/// The same items but for `handed`, which every hand-over raises.
fn same_lines(a: &[RefItem], b: &[RefItem]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.seq, x.request, &x.line, x.failures) == (y.seq, y.request, &y.line, y.failures)
        })
}

pub(super) fn d11_deterministic_split(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d11-deterministic-split
    //# The membership of a new batch MUST be `k = min(split(parked, budget), cap)` items, the first
    //# `k` of the parked list, where `split` is this pure function:
    //= spec/delivery.md#d11-deterministic-split
    //# `remaining` MUST be `parked.len() - k`.
    //= spec/delivery.md#d11-deterministic-split
    //# A repeat MUST reuse its stored membership and `remaining` whatever budget is passed to the
    //# boundary that hands it over again, until the repeat bound closes it (D10).
    newest_boundary(s).is_none_or(|r| match s.original(r.batch.id) {
        Some(o) => {
            let cap = o.cap.map_or(usize::MAX, |cap| cap as usize);
            let k = split(&o.parked, m.bounds.budget).min(cap);
            r.batch.items.len() == k
                && is_seq_prefix(&r.batch.items, &o.parked)
                && r.batch.remaining == o.parked.len() - k
        }
        None => false,
    })
}

pub(super) fn d12_budget(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d12-budget
    //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is a
    //# single item whose cost alone exceeds the budget: such a line MUST be delivered alone, whole,
    //# and MUST NOT be cut.
    newest_handed(s).is_none_or(|(_, b)| {
        b.items.len() == 1 || b.items.iter().map(RefItem::cost).sum::<usize>() <= m.bounds.budget
    })
}

pub(super) fn d13_trailer_count(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d13-trailer-count
    //# The trailer MUST state `remaining`: the number of lines parked at the batch's (original)
    //# boundary that are not in the batch.
    //= spec/delivery.md#d13-trailer-count
    //# It MUST NOT count lines parked later (D2) or dead letters (D8).
    fresh_turn(s).into_iter().all(|b| match s.original(b.id) {
        Some(o) => {
            let remaining = o.parked.len().saturating_sub(o.batch.items.len());
            let text = turn_text(b);
            let mut lines = text.lines();
            let header_ok = lines.next().is_some_and(|h| {
                h.contains(&format!(
                    ": {} of {} parked lines, ",
                    b.items.len(),
                    o.parked.len()
                ))
            });
            let trailer_ok = lines.last().is_some_and(|t| {
                t.starts_with(&format!(
                    "[parkline batch {} end: {remaining} parked lines still undelivered, crc32 ",
                    b.id
                ))
            });
            header_ok && trailer_ok
        }
        None => false,
    })
}

pub(super) fn d14_collected_is_not_consumed(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d14-collected-is-not-consumed
    //# Reading a line through `agent_read` ("collected") MUST NOT remove, skip, shorten or mark the
    //# line in the queue: a collected line MUST still be delivered (or dead-lettered) like any
    //# other.
    s.collected
        .iter()
        .all(|&seq| s.held(seq) > 0 || s.is_delivered(seq) || s.is_discarded(seq))
}

fn quiescent(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.phase == Phase::Idle && s.arrived == m.bounds.lines.len() && !s.queue.has_batch_ready()
}

fn everything_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    s.arrived == m.bounds.lines.len()
        && s.acknowledged()
            .all(|seq| s.is_delivered(seq) || s.is_dead(seq) || s.is_discarded(seq))
}

pub(super) fn d15_quiescent_means_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d15-eventually
    //# If boundaries keep occurring, every handed-over batch is eventually settled or interrupted
    //# by a crash, and the number of crashes is finite, then every parked line MUST eventually be
    //# delivered or dead-lettered.
    !quiescent(m, s) || everything_delivered(m, s)
}

pub(super) fn d15_everything_delivered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d15-eventually
    //# If boundaries keep occurring, every handed-over batch is eventually settled or interrupted
    //# by a crash, and the number of crashes is finite, then every parked line MUST eventually be
    //# delivered or dead-lettered.
    everything_delivered(m, s)
}

pub(super) fn d17_order(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d17-order
    //# `park` MUST assign seqs that strictly increase and are never reused within a mirror (when
    //# none is left, it fails with `Exhausted` rather than wrap, D10 "Attempt ceiling").
    //= spec/delivery.md#d17-order
    //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of it, so items
    //# in a batch are in seq order and a line is first offered only after every line with a lower
    //# seq was offered.
    let increasing = |items: &[RefItem]| items.windows(2).all(|w| w[0].seq < w[1].seq);
    // A park whose answer was lost holds its seq before the daemon counts it as arrived.
    s.queue.mirror().next_seq == s.arrived as u64 + 1 + u64::from(s.retry_pending)
        && increasing(s.queue.parked())
        && newest_handed(s).is_none_or(|(_, b)| increasing(&b.items))
        && newest_boundary(s).is_none_or(|r| {
            r.replay || {
                let first_left = r
                    .parked
                    .iter()
                    .map(|i| i.seq)
                    .filter(|&seq| r.batch.items.iter().all(|i| i.seq != seq))
                    .min();
                first_left.is_none_or(|left| r.batch.items.iter().all(|i| i.seq < left))
            }
        })
}

pub(super) fn d18_no_silent_duplicate(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d18-no-silent-duplicate
    //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
    //= spec/delivery.md#d18-no-silent-duplicate
    //# A line MUST be handed over again only as part of a repeat of its batch (D10), as a retry
    //# after it failed (D7), or in a new batch after the repeat bound closed its batch (D10).
    // Stated from the hand-over, the record appended after the settle it must respect: the
    // newest turn names no line that a settle before it delivered.
    newest_handed(s).is_none_or(|(h, b)| {
        s.settles
            .iter()
            .take_while(|r| r.handed_before <= h)
            .flat_map(|r| r.outcomes.iter())
            .all(|&(seq, ok)| !ok || b.items.iter().all(|i| i.seq != seq))
    })
}

/// How many boundaries (durable hand-overs), among the first `upto`, named `seq`.
fn boundaries_naming(s: &DeliveryState, upto: usize, seq: u64) -> u64 {
    s.boundaries[..upto]
        .iter()
        .filter(|r| r.batch.items.iter().any(|i| i.seq == seq))
        .count() as u64
}

pub(super) fn handover_count(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# Every item MUST carry `handed`, the number of its hand-overs made durable: the `batch` and
    //# `attempt` records that named it since it was parked (`mirror.md` M3).
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# The count MUST be raised by the record that allows the hand-over, before `boundary` returns
    //# the batch, so that a crash between the hand-over and the settle still counts a hand-over the
    //# parent may have seen.
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# The notified event of each hand-over (D5) MUST carry the item's count including that
    //# hand-over (1 the first time).
    let total = s.boundaries.len();
    let at_boundaries = newest_boundary(s).is_none_or(|r| {
        r.batch
            .items
            .iter()
            .all(|i| i.handed == boundaries_naming(s, total, i.seq))
    });
    let durable = s
        .items()
        .all(|i| i.handed == boundaries_naming(s, total, i.seq));
    let parent = newest_handed(s).is_none_or(|(h, b)| {
        b.items.iter().all(|i| {
            let saw = s.handed[..=h]
                .iter()
                .filter(|e| e.items.iter().any(|x| x.seq == i.seq))
                .count() as u64;
            i.handed >= saw && (i.handed != 1 || saw == 1)
        })
    });
    let events = newest_notified(s).is_none_or(|e| {
        s.handed.iter().any(|b| {
            b.id == e.batch
                && b.attempt == e.attempt
                && b.items
                    .iter()
                    .any(|i| i.seq == e.seq && i.handed == e.handed)
        })
    });
    at_boundaries && durable && parent && events
}

pub(super) fn seen_before(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d20-seen-before-in-the-header
    //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over (their
    //# count was above 0 before this batch's record), and the header MUST say it (`S seen before`,
    //# D4).
    newest_boundary(s).is_none_or(|r| {
        let Some(first) = s.boundaries.iter().position(|o| o.batch.id == r.batch.id) else {
            return false;
        };
        let seen = r
            .batch
            .items
            .iter()
            .filter(|i| boundaries_naming(s, first, i.seq) > 0)
            .count();
        r.batch.seen == seen
    })
}

pub(super) fn redrive_keeps_the_line(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d21-dead-letter-redrive
    //# A redriven line is then delivered or dead again like any parked line (D7, D8); it MUST NOT
    //# be lost (D9 holds for it) and MUST NOT be offered again without its count (D19) showing it
    //# was seen.
    let total = s.boundaries.len();
    s.redrives.iter().flat_map(|r| &r.seqs).all(|&seq| {
        let gone = usize::from(s.is_delivered(seq)) + usize::from(s.is_discarded(seq));
        if s.held(seq) + gone != 1 {
            return false;
        }
        let failed = s.settles[s.last_redrive(seq)..]
            .iter()
            .flat_map(|r| r.outcomes.iter())
            .filter(|(q, ok)| *q == seq && !*ok)
            .count() as u32;
        s.items()
            .filter(|i| i.seq == seq)
            .all(|i| i.failures == failed && i.handed == boundaries_naming(s, total, seq))
    })
}

pub(super) fn discard_removes_only_dead_letters(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d8-dead-letter
    //# `Queue::discard(seqs)` MUST remove the named dead letters from the mirror in one durable
    //# record, and MUST fail with `NotDead`, writing nothing, when a seq is not a dead letter or is
    //# named twice.
    //= spec/delivery.md#d18-no-silent-duplicate
    //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
    // A discard of all names every dead letter: the queue loses exactly those.
    let exact = |d: &DiscardRecord| {
        d.removed
            .iter()
            .map(|&(seq, _)| seq)
            .eq(d.dead_before.iter().copied())
    };
    // Stated from the hand-over, appended after the discard it must respect (as D18).
    let not_offered = newest_handed(s).is_none_or(|(h, b)| {
        s.discards
            .iter()
            .filter(|d| d.handed_before <= h)
            .flat_map(|d| &d.removed)
            .all(|&(seq, _)| b.items.iter().all(|i| i.seq != seq))
    });
    s.discards.iter().all(exact) && not_offered
}

pub(super) fn group_park_all_or_none(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d22-group-park
    //# A crash during the append MUST leave all of the group's lines parked or none of them.
    // Group parkers replace the group park (`Bounds::arrival_len`).
    let Some(at) = m.bounds.group_at.filter(|_| m.bounds.group_parkers == 0) else {
        return true;
    };
    let Some(group) = m.bounds.lines.get(at..at + 2) else {
        return true;
    };
    let delivered_request = |request: u64| {
        s.boundaries
            .iter()
            .flat_map(|r| &r.batch.items)
            .any(|i| i.request == request && s.is_delivered(i.seq))
    };
    let discarded_request = |request: u64| {
        s.discards
            .iter()
            .flat_map(|d| &d.removed)
            .any(|&(seq, r)| r == request && s.is_discarded(seq))
    };
    let present = group
        .iter()
        .filter(|&&(request, _)| {
            s.items().any(|i| i.request == request)
                || delivered_request(request)
                || discarded_request(request)
        })
        .count();
    present == 0 || present == group.len()
}

pub(super) fn framing_read_back(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d23-framing-read-back
    //# For every batch handed over, reading its turn text as D4a says MUST give back exactly the
    //# batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line byte for
    //# byte, also when a line imitates a header or a trailer.
    fresh_turn(s).into_iter().all(|b| {
        let text = turn_text(b);
        let read = match m.variant {
            Variant::FramingSearchesTrailer => parse_turn_searching_trailer(&text),
            _ => parse_turn(&text),
        };
        read == Ok(ParsedTurn {
            id: b.id,
            attempt: b.attempt,
            repeat: b.is_repeat(),
            k: b.items.len(),
            n: b.items.len() + b.remaining,
            seen: b.seen,
            remaining: b.remaining,
            lines: b.items.iter().map(|i| i.line.clone()).collect(),
        })
    })
}

pub(super) fn repeat_bound(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d10-repeat-recognisable
    //# A recovered batch whose attempt is `repeats_max` or more MUST NOT be handed over
    //# again: the boundary MUST write a `close` record instead, after which the batch's
    //# items are parked again, or its single item is a dead letter, and the boundary goes
    //# on as one with no recovered batch.
    newest_handed(s).is_none_or(|(_, batch)| batch.attempt <= m.bounds.repeats_max)
}

pub(super) fn group_ack_after_fsync(_: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d16-durable-park
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    //= spec/delivery.md#d16-durable-park
    //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive while another's
    //# write and fsync are in progress MUST be written together, in one append and one fsync,
    //# once that fsync returns, each caller with its own answer: a refused line or request fails
    //# its caller only.
    // A caller answered is done (it never joins again), so a written member that took an answer
    // took it from this record, before its fsync.
    s.writing.iter().all(|(member, _)| !s.is_answered(*member))
}

pub(super) fn group_refusal_alone(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d16-durable-park
    //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive while another's
    //# write and fsync are in progress MUST be written together, in one append and one fsync,
    //# once that fsync returns, each caller with its own answer: a refused line or request fails
    //# its caller only.
    //= spec/delivery.md#d3-items-verbatim
    //# A line that cannot be carried verbatim in the turn text (it contains `\n`, or exceeds the
    //# configured `line_bytes_max`) MUST be refused by `park` with an error (`InvalidLine`) and
    //# MUST NOT be altered; a refused park parks nothing.
    // The answers planned or posted: a line's caller is refused only when its own request is a
    // dead letter (D3's `RequestDead`), the invalid line's always.
    s.writing
        .iter()
        .chain(&s.answered)
        .all(|&(member, answer)| match (member, answer) {
            (Member::Line(index), None) => m.bounds.lines.get(index).is_some_and(|(request, _)| {
                s.queue.dead_letters().iter().any(|i| i.request == *request)
            }),
            (Member::Invalid, Some(_)) => false,
            _ => true,
        })
}

pub(super) fn group_ack_before_boundary(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d1-batch-at-the-boundary
    //# With a shared handle (`SharedQueue`), a park acknowledged before a `boundary` call starts
    //# is in that boundary's batch or parked behind it, never lost and never in two batches; a
    //# park concurrent with a boundary, settle, redrive, discard, reopen or `remove` is ordered
    //# before or after it as one whole, and answers as it would alone at that place.
    // Checked at the newest boundary (every answer logged before it is fixed by then); a line
    // that left the queue before the boundary (delivered, dead, or discarded, or dead then
    // and redriven since) is not in it.
    let Some(r) = newest_boundary(s) else {
        return true;
    };
    let index = s.boundaries.len() - 1;
    let redriven = |seq: u64| s.redrives.iter().any(|d| d.seqs.contains(&seq));
    s.acks
        .iter()
        .filter(|a| a.boundaries_before <= index)
        .all(|a| match (a.member, a.answer) {
            (Member::Line(line), Some(seq)) => {
                let request = m.bounds.lines.get(line).map(|(request, _)| *request);
                let at_boundary = r
                    .batch
                    .items
                    .iter()
                    .chain(&r.parked)
                    .any(|i| i.seq == seq && Some(i.request) == request);
                at_boundary
                    || s.is_delivered(seq)
                    || s.is_dead(seq)
                    || s.is_discarded(seq)
                    || redriven(seq)
            }
            _ => true,
        })
}

pub(super) fn delivered_once_while_remembered(m: &DeliveryModel, s: &DeliveryState) -> bool {
    //= spec/delivery.md#d3-items-verbatim
    //# A park for a request whose line the mirror holds (parked or in flight) MUST write
    //# nothing and return the seq that line has when the line is the same, and fail with
    //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
    //# with `RequestDead`, writing nothing.
    // Issue 42 carries that past the settle: a request the window remembers is answered from it.
    // The ghost records only grow, and whether a pair breaks this is fixed once its later record
    // is appended (a record appended after it has a next seq above every seq given out before),
    // so checking every pair at every state checks each pair once it exists; the records are a
    // handful at the bounds that list this property.
    let window = m.bounds.delivered_memory as usize;
    let ended = &s.remembers;
    ended.iter().enumerate().all(|(later, b)| {
        ended[..later].iter().enumerate().all(|(earlier, a)| {
            // Another line of the same request, parked after `a` ended (a line parked before is
            // D3's held request): `a` was forgotten by then only if `window` more requests
            // ended between `a` and that park.
            let forgotten = || {
                ended[earlier + 1..]
                    .iter()
                    .filter(|e| e.next_seq <= b.seq)
                    .count()
                    >= window
            };
            a.request != b.request || a.seq == b.seq || a.next_seq > b.seq || forgotten()
        })
    })
}
