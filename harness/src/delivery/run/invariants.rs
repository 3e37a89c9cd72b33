//! The invariants a run asserts on the crate's own outputs, so a mistake the crate and the
//! reference share is still caught: the batch a boundary returns (D1, D4, D5, D10..D13, D17),
//! what a settle did (D6..D8) and the whole state (D3, D9, no seq twice).

use std::collections::BTreeMap;

use parkline::mirror::MirrorState;
use parkline::{Attempt, Line, Notified, Seq, Settlement};

use super::{Ghost, Run};
use crate::delivery::op::QueueOp;
use crate::delivery::view::HandOver;

impl Run {
    /// D10's repeat bound: the state a boundary continues from when `before` holds a recovered
    /// batch at `repeats_max`, which it closes first (its items parked again, or its single item
    /// dead; the cap set, D11). `None` when the boundary closes nothing.
    pub(super) fn closed(&self, before: &MirrorState) -> Option<MirrorState> {
        let batch = before
            .in_flight
            .as_ref()
            .filter(|batch| batch.attempt.0 >= self.setup.repeats_max)?;
        let mut state = before.clone();
        state.in_flight = None;
        if let [item] = &batch.items[..] {
            state.dead_letters.push(item.clone());
            state.dead_letters.sort_by_key(|item| item.seq);
            state.cap = None;
        } else {
            state.parked.extend(batch.items.iter().cloned());
            state.parked.sort_by_key(|item| item.seq);
            state.cap = Some(batch.items.len().div_ceil(2) as u64);
        }
        Some(state)
    }

    pub(super) fn check_batch(
        &mut self,
        budget: usize,
        before: &MirrorState,
        hand_over: &HandOver,
    ) -> Result<(), String> {
        let closed = self.closed(before);
        let before = closed.as_ref().unwrap_or(before);
        //= spec/delivery.md#d18-no-silent-duplicate
        //= type=test
        //# A line MUST be handed over again only as part of a repeat of its batch (D10), as a retry
        //# after it failed (D7), or in a new batch after the repeat bound closed its batch (D10).
        //= spec/delivery.md#d18-no-silent-duplicate
        //= type=test
        //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
        let HandOver {
            batch,
            text,
            notified,
            ..
        } = hand_over;
        //= spec/delivery.md#d3-items-verbatim
        //= type=test
        //# Each item of a batch MUST be its parked line copied byte for byte: parkline MUST NOT
        //# rewrite, reformat, truncate, cut, merge or annotate a line.
        //= spec/delivery.md#d4a-one-reading-of-the-turn-text
        //= type=test
        //# A reader of a turn text (the daemon checking what it hands over, the parent's reader,
        //# the tests and the model's reference) MUST read it this one way, and MUST refuse the text
        //# when any step fails:
        //= spec/delivery.md#d20-seen-before-in-the-header
        //= type=test
        //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over
        //# (their count was above 0 before this batch's record), and the header MUST say it (`S
        //# seen before`, D4).
        //= spec/delivery.md#d23-framing-read-back
        //= type=test
        //# For every batch handed over, reading its turn text as D4a says MUST give back exactly
        //# the batch: its id, attempt, repeat mark, `K`, `N`, `seen`, `remaining` and every line
        //# byte for byte, also when a line imitates a header or a trailer.
        // D4, D4a: the turn has one reading, and it is this batch: its numbers, and the items
        // verbatim between header and trailer (D3). D20: seen counts the items handed over
        // before this batch, which after it have handed above this batch's attempt.
        let repeat = batch.attempt.0 > 1;
        let k = batch.items.len();
        let frame = parkline::frame::parse(text)
            .map_err(|e| format!("D4a framing: turn text {text:?} does not parse: {e}"))?;
        let lines: Vec<&str> = batch.items.iter().map(|item| item.line.as_str()).collect();
        let seen = batch
            .items
            .iter()
            .filter(|item| item.handed > u64::from(batch.attempt.0))
            .count();
        let read = (
            frame.id,
            frame.attempt,
            frame.repeat,
            frame.k,
            frame.n,
            frame.seen,
            frame.remaining,
        );
        let expected = (
            batch.id,
            batch.attempt,
            repeat,
            k,
            k + batch.remaining,
            seen,
            batch.remaining,
        );
        if read != expected || frame.lines != lines || batch.seen != seen {
            return Err(format!(
                "D4 framing: turn text {text:?} reads as {read:?} with lines {:?}, expected \
                 {expected:?} with lines {lines:?} (batch seen {})",
                frame.lines, batch.seen
            ));
        }
        //= spec/delivery.md#d5-notified-per-request
        //= type=test
        //# For every hand-over of a batch (first or repeat) the daemon MUST record one
        //# `delegation_notified` event per item, in item order, carrying `{ request, seq, batch,
        //# attempt, repeat, handed }` of that item and that hand-over, where `repeat = (attempt >
        //# 1)`.
        //= spec/delivery.md#d5-notified-per-request
        //= type=test
        //# `Batch::notified()` MUST return exactly these events.
        //= spec/delivery.md#d5-notified-per-request
        //= type=test
        //# parkline MUST NOT replace them by a single per-batch event.
        //= spec/delivery.md#d19-hand-over-count-per-item
        //= type=test
        //# The notified event of each hand-over (D5) MUST carry the item's count including that
        //# hand-over (1 the first time).
        // D5: one notified per item, in item order, with this hand-over's attempt and mark.
        let expected: Vec<Notified> = batch
            .items
            .iter()
            .map(|item| {
                let event =
                    Notified::new(item.request, item.seq, batch.id, batch.attempt, item.handed);
                debug_assert_eq!(event.repeat, repeat);
                event
            })
            .collect();
        if *notified != expected {
            return Err(format!("D5 notified: {notified:?}, expected {expected:?}"));
        }
        let seqs: Vec<Seq> = batch.items.iter().map(|item| item.seq).collect();
        //= spec/delivery.md#d17-order
        //= type=test
        //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of it, so
        //# items in a batch are in seq order and a line is first offered only after every line with
        //# a lower seq was offered.
        if seqs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("D17 order: batch items out of seq order {seqs:?}"));
        }
        if let Some(stored) = &before.in_flight {
            //= spec/delivery.md#d2-no-waiting-window
            //= type=test
            //# A line parked after the boundary (while its batch is being persisted, handed over,
            //# notified or settled) MUST NOT join that batch and MUST NOT be counted in its
            //# `remaining`; it is delivered at a later boundary.
            //= spec/delivery.md#d10-repeat-recognisable
            //= type=test
            //# A batch persisted and not settled before a crash MUST, at the first boundary of the
            //# next life, be re-persisted and handed over again with the same batch id, the same
            //# items (same seqs, same lines, same order), the same `remaining`, an attempt one
            //# higher than the attempt stored for it, and the repeat mark, both in the header (D4)
            //# and on every notified event (D5).
            //= spec/delivery.md#d10-repeat-recognisable
            //= type=test
            //# It MUST NOT hand the batch over with an attempt that is not one higher.
            //= spec/delivery.md#d20-seen-before-in-the-header
            //= type=test
            //# `seen` is fixed when the batch is created: a repeat MUST carry the same `seen`, so
            //# its turn text still equals the original's except for `ATTEMPT` and `REPEAT` (D10).
            // D10: a boundary with a recovered batch hands that batch again: same id, items
            // (D19: each with one more hand-over), seen and remaining, the stored attempt + 1,
            // marked repeat.
            let again: Vec<parkline::Item> = stored
                .items
                .iter()
                .map(|item| item.clone().with_handed(item.handed.saturating_add(1)))
                .collect();
            if batch.id != stored.id
                || batch.items != again
                || batch.seen != stored.seen
                || batch.remaining != stored.remaining
                || Some(batch.attempt.0) != stored.attempt.0.checked_add(1)
                || !repeat
            {
                return Err(format!(
                    "D10: the recovered batch {stored:?} was handed again as {batch:?}"
                ));
            }
        }
        if let Some((members, remaining, attempt_seen)) = self.ghost.batches.get(&batch.id) {
            //= spec/delivery.md#d10-repeat-recognisable
            //= type=test
            //# A batch id that was returned by `boundary` MUST NOT later denote a different
            //# membership.
            // D10: a batch id handed again is the same membership, a higher attempt, a repeat.
            if &seqs != members || batch.remaining != *remaining {
                return Err(format!(
                    "D10: batch {} handed again with items {seqs:?} remaining {}, first handed \
                     with {members:?} remaining {remaining}",
                    batch.id, batch.remaining
                ));
            }
            if batch.attempt <= *attempt_seen || !repeat {
                return Err(format!(
                    "D10: batch {} handed again with attempt {} (repeat {repeat}) after attempt \
                     {attempt_seen}",
                    batch.id, batch.attempt
                ));
            }
        } else if before.in_flight.is_none() {
            //= spec/delivery.md#d1-batch-at-the-boundary
            //= type=test
            //# At a boundary that delivers a new batch, the batch MUST consist of lines that were
            //# parked at that moment, and only those, taken from the front of the parked list as
            //# `split` (D11) decides; with a budget that admits them all and no cap set, it MUST be
            //# every parked line, in ONE turn.
            //= spec/delivery.md#d1-batch-at-the-boundary
            //= type=test
            //# A boundary MUST NOT deliver fewer lines than `split` returns, or than the cap when
            //# that is fewer (pop-all, not pop-front).
            //= spec/delivery.md#d8-dead-letter
            //= type=test
            //# MUST NOT be counted in `remaining`,
            //= spec/delivery.md#d11-deterministic-split
            //= type=test
            //# The membership of a new batch MUST be `k = min(split(parked, budget), cap)` items,
            //# the first `k` of the parked list, where `split` is this pure function:
            //= spec/delivery.md#d11-deterministic-split
            //= type=test
            //# `remaining` MUST be `parked.len() - k`.
            //= spec/delivery.md#d12-budget
            //= type=test
            //# The total cost of the items of a batch MUST be `<= budget`, except when the batch is
            //# a single item whose cost alone exceeds the budget: such a line MUST be delivered
            //# alone, whole, and MUST NOT be cut.
            //= spec/delivery.md#d13-trailer-count
            //= type=test
            //# It MUST NOT count lines parked later (D2) or dead letters (D8).
            // A new batch: attempt 1, the split of the parked list (D1, D11, D12).
            if batch.attempt != Attempt(1) {
                return Err(format!(
                    "D10: new batch {} has attempt {}",
                    batch.id, batch.attempt
                ));
            }
            //= spec/delivery.md#d10-repeat-recognisable
            //= type=test
            //# Batch ids of new batches MUST increase.
            if let Some(max) = self.ghost.batches.keys().next_back()
                && batch.id <= *max
            {
                return Err(format!(
                    "D10: new batch id {} does not increase (last {max})",
                    batch.id
                ));
            }
            let costs: Vec<usize> = before
                .parked
                .iter()
                .map(|item| item.line.chars().count() + 1)
                .collect();
            let mut split = 0;
            let mut total = 0;
            for cost in &costs {
                if total + cost > budget {
                    break;
                }
                total += cost;
                split += 1;
            }
            let split = split.max(usize::from(!costs.is_empty()));
            // D11: a close caps the batches after it.
            let split = before.cap.map_or(split, |cap| {
                split.min(usize::try_from(cap).unwrap_or(usize::MAX))
            });
            // D19: each item is the parked one, with this hand-over counted.
            let expected: Vec<parkline::Item> = before.parked[..split.min(before.parked.len())]
                .iter()
                .map(|item| item.clone().with_handed(item.handed.saturating_add(1)))
                .collect();
            if batch.items != expected {
                return Err(format!(
                    "D1/D11: new batch items {seqs:?} are not the first {split} parked lines \
                     {:?} under budget {budget}",
                    before.parked.iter().map(|i| i.seq).collect::<Vec<_>>()
                ));
            }
            let cost: usize = costs[..split].iter().sum();
            if cost > budget && split != 1 {
                return Err(format!(
                    "D12 budget: cost {cost} > budget {budget} with {split} items"
                ));
            }
            if batch.remaining != before.parked.len() - split {
                return Err(format!(
                    "D13: remaining {} with {} parked and {split} in the batch",
                    batch.remaining,
                    before.parked.len()
                ));
            }
        }
        let attempt = batch.attempt;
        self.ghost
            .batches
            .insert(batch.id, (seqs, batch.remaining, attempt));
        Ok(())
    }

    pub(super) fn check_settlement(
        &mut self,
        op: &QueueOp,
        before: &MirrorState,
        settlement: &Settlement,
    ) -> Result<(), String> {
        //= spec/delivery.md#d6-per-request-independence
        //= type=test
        //# `settle` MUST take one outcome per item, and each item MUST end in exactly one of
        //# `Settlement::{delivered, failed, dead}`.
        let Some(batch) = &before.in_flight else {
            return Err("settle returned Ok with no batch in flight".to_owned());
        };
        let outcomes = op.outcomes(batch.items.len());
        let driver = self
            .queue
            .as_ref()
            .ok_or_else(|| "internal: no open queue".to_owned())?;
        let after = driver.queue().state();
        let mut delivered = Vec::new();
        let mut failed = Vec::new();
        let mut dead = Vec::new();
        for (item, ok) in batch.items.iter().zip(&outcomes) {
            if *ok {
                delivered.push(item.seq);
            } else if item.failures.saturating_add(1) >= self.setup.failures_max {
                dead.push(item.seq);
            } else {
                failed.push(item.seq);
            }
        }
        let expected = Settlement::new(delivered, failed, dead);
        if settlement != &expected {
            return Err(format!(
                "D6/D7/D8: settlement {settlement:?}, the outcomes give {expected:?}"
            ));
        }
        //= spec/delivery.md#d6-per-request-independence
        //= type=test
        //# The delivery state of an item (parked, in flight, delivered, dead letter; its
        //# `failures`) MUST depend only on its own outcomes and on crashes; the outcome of one item
        //# MUST NOT drop, block, delay to a later boundary, or change the failure count of another
        //# item.
        //= spec/delivery.md#d7-failure-isolation
        //= type=test
        //# At settle, a failed item whose failure count stays below `failures_max` MUST stay parked
        //# with the same seq and `failures + 1`, and MUST be offered again at a later boundary in
        //# seq order (so it precedes lines parked after it); the delivered items of the same batch
        //# MUST leave the mirror.
        // D6/D7: each item where its own outcome puts it, the others untouched.
        for item in &batch.items {
            let parked = after.parked.iter().find(|i| i.seq == item.seq);
            let is_dead = after.dead_letters.iter().any(|i| i.seq == item.seq);
            let ok = if expected.delivered.contains(&item.seq) {
                parked.is_none() && !is_dead
            } else if expected.dead.contains(&item.seq) {
                parked.is_none() && is_dead
            } else {
                parked.is_some_and(|p| Some(p.failures) == item.failures.checked_add(1)) && !is_dead
            };
            if !ok {
                return Err(format!(
                    "D6/D7: item seq {} is not where its outcome puts it after settle",
                    item.seq
                ));
            }
        }
        for item in &before.parked {
            if !after.parked.contains(item) {
                return Err(format!(
                    "D6: item seq {} outside the batch changed at settle",
                    item.seq
                ));
            }
        }
        self.ghost
            .delivered
            .extend(expected.delivered.iter().copied());
        self.report.dead += expected.dead.len();
        Ok(())
    }

    /// D8: a discard that returned `seqs` for the seqs `named` (`None`: all) removed exactly those
    /// dead letters from the state `before` it, in seq order, and changed nothing else.
    pub(super) fn check_discard(
        &mut self,
        named: Option<&[u64]>,
        before: &MirrorState,
        seqs: &[Seq],
    ) -> Result<(), String> {
        //= spec/delivery.md#d8-dead-letter
        //= type=test
        //# `Queue::discard(seqs)` MUST remove the named dead letters from the mirror in one durable
        //# record, and MUST fail with `NotDead`, writing nothing, when a seq is not a dead letter
        //# or is named twice.
        let dead: Vec<Seq> = before.dead_letters.iter().map(|item| item.seq).collect();
        let mut expected: Vec<Seq> = match named {
            Some(named) => named.iter().copied().map(Seq).collect(),
            None => dead.clone(),
        };
        expected.sort_unstable();
        if seqs != expected || !seqs.iter().all(|seq| dead.contains(seq)) {
            return Err(format!(
                "D8 discard: returned {seqs:?} for {named:?} with dead letters {dead:?}"
            ));
        }
        let driver = self
            .queue
            .as_ref()
            .ok_or_else(|| "internal: no open queue".to_owned())?;
        let mut after = before.clone();
        after.dead_letters.retain(|item| !seqs.contains(&item.seq));
        // The window's new entries (D3) are checked against the reference's.
        after.remembered = driver.queue().state().remembered.clone();
        if *driver.queue().state() != after {
            return Err(format!(
                "D8 discard: removing {seqs:?} left {:?}, expected {after:?}",
                driver.queue().state()
            ));
        }
        self.ghost.discarded.extend(seqs.iter().copied());
        self.report.discarded += seqs.len();
        Ok(())
    }

    /// D9 and no duplicates, on the crate's state.
    pub(super) fn check_invariants(&mut self) -> Result<(), String> {
        //= spec/delivery.md#d9-no-loss
        //= type=test
        //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be
        //# exactly one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a
        //# dead letter until an explicit discard (D8) deletes it, through any sequence of
        //# boundaries, settles, failures, crashes and recoveries.
        let driver = self
            .queue
            .as_ref()
            .ok_or_else(|| "internal: no open queue".to_owned())?;
        let state = driver.queue().state();
        snapshot_round_trips(state, self.setup.snapshot_every_op)?;
        times_hold(state, &self.ghost, self.clock.now())?;
        if invariants_hold(state, &mut self.ghost) {
            return Ok(());
        }
        // Something fails: the same walk as always, which names the first failure.
        let mut seen = BTreeMap::new();
        let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
        for (place, item) in state
            .parked
            .iter()
            .map(|i| ("parked", i))
            .chain(in_flight.map(|i| ("in flight", i)))
            .chain(state.dead_letters.iter().map(|i| ("dead", i)))
        {
            if let Some(other) = seen.insert(item.seq, place) {
                return Err(format!("seq {} is both {other} and {place}", item.seq));
            }
            //= spec/delivery.md#d3-items-verbatim
            //= type=test
            //# Each item MUST keep the request id given at park.
            if let Some((request, line)) = self.ghost.acked.get_mut(&item.seq) {
                if request != &item.request || !same_line(line, &item.line) {
                    return Err(format!(
                        "D3: seq {} holds request {} line {:?}, parked as request {request} line \
                         {line:?}",
                        item.seq, item.request, item.line
                    ));
                }
                // The crate's line has the acknowledged bytes: keep its allocation instead, so
                // that while the crate keeps it the next check compares a pointer, not the bytes.
                *line = item.line.clone();
            }
        }
        for seq in self.ghost.acked.keys() {
            if !seen.contains_key(seq) && !self.ghost.gone(*seq) {
                return Err(format!(
                    "D9 no loss: acknowledged park seq {seq} is neither parked, in flight, \
                     delivered, dead nor discarded"
                ));
            }
        }
        Ok(())
    }
}

/// D24: every time the mirror holds was read from the queue's clock (the harness's reads the op's
/// index): a line parked by an op the harness saw acknowledged carries that op's index, no time is
/// later than now, and a line died no sooner than it was parked.
fn times_hold(state: &MirrorState, ghost: &Ghost, now: u64) -> Result<(), String> {
    let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
    let live = state.parked.iter().chain(in_flight);
    for item in live.chain(&state.dead_letters) {
        //= spec/delivery.md#d24-times
        //= type=test
        //# Each park MUST record the time it parked the line, from the queue's clock.
        if let Some(at) = ghost.parked_at.get(&item.seq)
            && item.parked_at != Some(*at)
        {
            return Err(format!(
                "D24: seq {} was parked at op {at}, the mirror says {:?}",
                item.seq, item.parked_at
            ));
        }
        if item.parked_at.is_some_and(|at| at > now) || item.died_at.is_some_and(|d| d > now) {
            return Err(format!(
                "D24: seq {} holds a time after op {now}: {item:?}",
                item.seq
            ));
        }
    }
    for item in &state.dead_letters {
        let died_before_parked = item
            .died_at
            .zip(item.parked_at)
            .is_some_and(|(died, at)| died < at);
        let parked_here = ghost.parked_at.contains_key(&item.seq);
        if died_before_parked || (parked_here && item.died_at.is_none()) {
            return Err(format!(
                "D24: dead letter seq {} died at {:?}, parked at {:?}",
                item.seq, item.died_at, item.parked_at
            ));
        }
    }
    for item in &state.parked {
        if item.died_at.is_some() {
            return Err(format!("D24: parked seq {} has a time of death", item.seq));
        }
    }
    Ok(())
}

/// M12: the snapshot of the state after an op decodes to that state, so a compaction there would
/// write a file that opens as the queue it was written from. With `every_op`, checked after every
/// op (states of up to 256 items; the large `ParkMany` ones meet the rule at compactions).
/// Without it (the fuzz target's setup), only where format 2's snapshot had none: a batch in
/// flight with a parked line below its last seq. Encoding and decoding every state made a
/// `delivery_ops` exec 8.5 times slower (419 against 3,600 execs a second).
fn snapshot_round_trips(state: &MirrorState, every_op: bool) -> Result<(), String> {
    let in_flight = state.in_flight.as_ref();
    let last = in_flight
        .and_then(|batch| batch.items.last())
        .map(|item| item.seq);
    let below = state
        .parked
        .first()
        .is_some_and(|item| Some(item.seq) < last);
    let items = state.parked.len() + state.dead_letters.len();
    let items = items + in_flight.map_or(0, |batch| batch.items.len());
    if (!every_op && !below) || items > 256 {
        return Ok(());
    }
    //= spec/mirror.md#m12-compaction
    //= type=test
    //# A snapshot is the header and the records that rebuild the state: the dead letters and every
    //# live item (parked or in flight) as `dead`/`park` records in seq order, then a `flight`
    //# record naming the in-flight batch's items, then the remembered window as `done` records,
    //# oldest first, then the applied window of M17 as `op` records, oldest first, then `next`
    //# with the window's size.
    match parkline::mirror::decode(&parkline::mirror::encode(state)) {
        Ok(back) if back == *state => Ok(()),
        Ok(back) => Err(format!("M12 snapshot: {state:?} decodes to {back:?}")),
        Err(e) => Err(format!("M12 snapshot: {state:?} does not decode: {e}")),
    }
}

/// Whether the checks of [`Run::check_invariants`] pass on `state` (no seq twice, D3 for every
/// item, D9 for every acknowledged seq): the same verdict as its walk, with the seqs sorted in a
/// `Vec` instead of inserted into a map and the acknowledged ones merged against them (the map
/// was a third of the harness's own work per op). Keeps the crate's equal lines in the ghost, as
/// the walk does.
fn invariants_hold(state: &MirrorState, ghost: &mut Ghost) -> bool {
    let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
    let mut seqs = Vec::with_capacity(state.parked.len() + state.dead_letters.len());
    for item in state
        .parked
        .iter()
        .chain(in_flight)
        .chain(&state.dead_letters)
    {
        seqs.push(item.seq);
        if let Some((request, line)) = ghost.acked.get_mut(&item.seq) {
            if request != &item.request || !same_line(line, &item.line) {
                return false;
            }
            *line = item.line.clone();
        }
    }
    seqs.sort_unstable();
    if seqs.windows(2).any(|pair| pair[0] == pair[1]) {
        return false;
    }
    let mut placed = seqs.iter().peekable();
    ghost.acked.keys().all(|seq| {
        while placed.next_if(|placed| *placed < seq).is_some() {}
        placed.peek() == Some(&seq) || ghost.gone(*seq)
    })
}

impl Ghost {
    /// Whether the acknowledged `seq` may have left the mirror: settled `Delivered` (D9), or
    /// discarded by the operator (D8).
    fn gone(&self, seq: Seq) -> bool {
        self.delivered.contains(&seq) || self.discarded.contains(&seq)
    }
}

/// Whether two lines hold the same bytes; without reading them when they are one allocation
/// (a `Line` is immutable).
fn same_line(a: &Line, b: &Line) -> bool {
    std::ptr::eq(a.as_str(), b.as_str()) || a.as_str() == b.as_str()
}

#[cfg(test)]
mod tests {
    use parkline::{Batch, BatchId, Item, RequestId};

    use super::*;

    fn item(seq: u64, line: &str) -> Item {
        Item::new(Seq(seq), RequestId(seq + 10), Line::from(line))
    }

    /// Seqs 1 to 4 acknowledged, 4 delivered; 1 parked, 2 in flight, 3 dead.
    fn passing() -> (MirrorState, Ghost) {
        let mut ghost = Ghost::default();
        for (seq, line) in [(1, "one"), (2, "two"), (3, "three"), (4, "four")] {
            ghost
                .acked
                .insert(Seq(seq), (RequestId(seq + 10), Line::from(line)));
        }
        ghost.delivered.insert(Seq(4));
        let state = MirrorState {
            parked: vec![item(1, "one")],
            in_flight: Some(Batch::new(BatchId(1), Attempt(1), vec![item(2, "two")], 1)),
            dead_letters: vec![item(3, "three")],
            next_seq: Seq(5),
            next_batch: BatchId(2),
            cap: None,
            ..MirrorState::default()
        };
        (state, ghost)
    }

    /// The shortcut passes a good state (and keeps the crate's lines in the ghost), and fails
    /// each thing the walk of `check_invariants` fails: a seq twice, a changed request or line
    /// (D3), an acknowledged seq nowhere (D9).
    #[test]
    fn invariants_hold_fails_what_the_walk_fails() {
        let (state, mut ghost) = passing();
        assert!(invariants_hold(&state, &mut ghost));
        let kept = &ghost.acked[&Seq(2)].1;
        let crate_line = state.in_flight.as_ref().map(|batch| &batch.items[0].line);
        assert!(crate_line.is_some_and(|line| std::ptr::eq(line.as_str(), kept.as_str())));
        let mut twice = state.clone();
        twice.dead_letters.push(item(1, "one"));
        let mut request = state.clone();
        request.parked[0].request = RequestId(1);
        let mut line = state.clone();
        line.dead_letters[0].line = Line::from("threE");
        let mut lost = state.clone();
        lost.parked.clear();
        for (what, bad) in [
            ("twice", twice),
            ("request", request),
            ("line", line),
            ("lost", lost),
        ] {
            let (_, mut ghost) = passing();
            assert!(!invariants_hold(&bad, &mut ghost), "{what}");
        }
        // Delivered, it may be nowhere; not delivered, it must be somewhere.
        let (mut state, mut ghost) = passing();
        state.parked.clear();
        ghost.delivered.insert(Seq(1));
        assert!(invariants_hold(&state, &mut ghost));
        ghost.delivered.remove(&Seq(4));
        assert!(!invariants_hold(&state, &mut ghost));
    }
}
