//! The invariants a run asserts on the crate's own outputs, so a mistake the crate and the
//! reference share is still caught: the batch a boundary returns (D1, D4, D5, D10..D13, D17),
//! what a settle did (D6..D8) and the whole state (D3, D9, no seq twice).

use std::collections::BTreeMap;

use parkline::mirror::MirrorState;
use parkline::{Attempt, Notified, Seq, Settlement};

use super::{Run, state_of_crate};
use crate::delivery::op::QueueOp;
use crate::delivery::view::HandOver;

impl Run {
    pub(super) fn check_batch(
        &mut self,
        budget: usize,
        before: &MirrorState,
        hand_over: &HandOver,
    ) -> Result<(), String> {
        let HandOver {
            batch,
            text,
            notified,
            ..
        } = hand_over;
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
        // D5: one notified per item, in item order, with this hand-over's attempt and mark.
        let expected: Vec<Notified> = batch
            .items
            .iter()
            .map(|item| Notified {
                request: item.request,
                seq: item.seq,
                batch: batch.id,
                attempt: batch.attempt,
                repeat,
                handed: item.handed,
            })
            .collect();
        if *notified != expected {
            return Err(format!("D5 notified: {notified:?}, expected {expected:?}"));
        }
        let seqs: Vec<Seq> = batch.items.iter().map(|item| item.seq).collect();
        if seqs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("D17 order: batch items out of seq order {seqs:?}"));
        }
        if let Some(stored) = &before.in_flight {
            // D10: a boundary with a recovered batch hands that batch again: same id, items
            // (D19: each with one more hand-over), seen and remaining, the stored attempt + 1,
            // marked repeat.
            let again: Vec<parkline::Item> = stored
                .items
                .iter()
                .map(|item| parkline::Item {
                    handed: item.handed.saturating_add(1),
                    ..item.clone()
                })
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
            // A new batch: attempt 1, the split of the parked list (D1, D11, D12).
            if batch.attempt != Attempt(1) {
                return Err(format!(
                    "D10: new batch {} has attempt {}",
                    batch.id, batch.attempt
                ));
            }
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
            // D19: each item is the parked one, with this hand-over counted.
            let expected: Vec<parkline::Item> = before.parked[..split.min(before.parked.len())]
                .iter()
                .map(|item| parkline::Item {
                    handed: item.handed.saturating_add(1),
                    ..item.clone()
                })
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
        let Some(batch) = &before.in_flight else {
            return Err("settle returned Ok with no batch in flight".to_owned());
        };
        let outcomes = op.outcomes(batch.items.len());
        let after = state_of_crate(self.queue()?);
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
        let expected = Settlement {
            delivered,
            failed,
            dead,
        };
        if settlement != &expected {
            return Err(format!(
                "D6/D7/D8: settlement {settlement:?}, the outcomes give {expected:?}"
            ));
        }
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

    /// D9 and no duplicates, on the crate's state.
    pub(super) fn check_invariants(&mut self) -> Result<(), String> {
        let state = state_of_crate(self.queue()?);
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
            if let Some((request, line)) = self.ghost.acked.get(&item.seq)
                && (request != &item.request || line != &item.line)
            {
                return Err(format!(
                    "D3: seq {} holds request {} line {:?}, parked as request {request} line \
                     {line:?}",
                    item.seq, item.request, item.line
                ));
            }
        }
        for seq in self.ghost.acked.keys() {
            if !seen.contains_key(seq) && !self.ghost.delivered.contains(seq) {
                return Err(format!(
                    "D9 no loss: acknowledged park seq {seq} is neither parked, in flight, \
                     delivered nor dead"
                ));
            }
        }
        Ok(())
    }
}
