//! The mirror's state and its one transition (spec/mirror.md M3): [`MirrorState`], the check of
//! a record against it and the change the record makes. Decoding a file and the live queue both
//! go through here, so what is recovered is what was written; each kind of record has its own
//! check and its own change.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::json::newline_position;
use super::record::{GroupItem, Record};
use crate::crc64::crc64;
use crate::line::Line;
use crate::ops::request::{self as ops, Answer, Applied, OpId, Verb};
use crate::types::{Attempt, Batch, BatchId, Ended, Item, Life, Remembered, RequestId, Seq};

/// What a mirror holds: the durable state of one queue.
///
/// # Example
///
/// ```
/// let state = parkline::mirror::MirrorState::default();
/// assert!(state.parked.is_empty() && state.in_flight.is_none());
/// assert_eq!(state.next_seq, parkline::Seq(1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MirrorState {
    /// Parked items in seq order, excluding the items of the in-flight batch.
    pub parked: Vec<Item>,
    /// The batch persisted and not settled, with its attempt as stored.
    pub in_flight: Option<Batch>,
    //= spec/delivery.md#d8-dead-letter
    //# Dead letters MUST be kept in the mirror,
    //= spec/delivery.md#d8-dead-letter
    //# and MUST NOT be deleted by parkline.
    /// Items that failed `failures_max` times, in seq order; never deleted (D8).
    pub dead_letters: Vec<Item>,
    /// The seq the next park gets.
    pub next_seq: Seq,
    /// The id the next batch gets.
    pub next_batch: BatchId,
    /// The most items a new batch may hold, set by closing a batch handed over `repeats_max`
    /// times without a settle (D10's repeat bound): half its size, doubled by each settle, lifted by a
    /// settle of a batch smaller than it. `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<u64>,
    /// D3's remembered window, oldest first: the last `memory` requests whose lines were settled
    /// delivered or discarded.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub remembered: VecDeque<Remembered>,
    /// How many entries the remembered window keeps (the `next` record's `memory`; 0 in a file
    /// of a version before 4).
    #[serde(default)]
    pub memory: u64,
    /// The operator requests applied, oldest first: the newest
    /// [`APPLIED_MEMORY`](crate::ops::request::APPLIED_MEMORY) (M17).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub ops: VecDeque<Applied>,
    /// The mirror's life (M17), from its header; `None` in a file of a version before 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life: Option<Life>,
}

impl Default for MirrorState {
    fn default() -> Self {
        MirrorState {
            parked: Vec::new(),
            in_flight: None,
            dead_letters: Vec::new(),
            next_seq: Seq(1),
            next_batch: BatchId(1),
            cap: None,
            remembered: VecDeque::new(),
            memory: 0,
            ops: VecDeque::new(),
            life: None,
        }
    }
}

impl MirrorState {
    /// Whether the state holds no line: nothing parked, in flight or dead (M12's drained state,
    /// whose mirror is kept near its snapshot).
    ///
    /// # Example
    ///
    /// ```
    /// let mut state = parkline::mirror::MirrorState::default();
    /// assert!(state.is_drained());
    /// state.next_seq = parkline::Seq(7);
    /// assert!(state.is_drained(), "the counters are not lines");
    /// ```
    pub fn is_drained(&self) -> bool {
        self.parked.is_empty() && self.in_flight.is_none() && self.dead_letters.is_empty()
    }

    /// Applies one record read back: [`check`](MirrorState::check), then the change, moving
    /// the record's lines into the state instead of copying them. An `Err` is the reason the
    /// record is impossible in this state; the state is then unchanged. Decoding uses it; the
    /// queue checks a planned record before writing it and applies it after
    /// ([`apply_checked`](MirrorState::apply_checked), the same change).
    pub(crate) fn apply(&mut self, record: Record) -> Result<(), String> {
        //= spec/mirror.md#m3-records-and-the-state-transition
        //# Applying the records in order to the empty state (no items, no batch, counters 1) MUST
        //# give the file's state; a record that is impossible in the state built so far MUST be
        //# rejected (M11).
        self.check(&record)?;
        match record {
            Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
                at,
            } => {
                let item = item_of(seq, request, line, failures, handed);
                self.push_parked_or_dead(
                    true,
                    Item {
                        parked_at: at,
                        ..item
                    },
                );
            }
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
                at,
                died,
            } => {
                let item = item_of(seq, request, line, failures, handed);
                let item = Item {
                    parked_at: at,
                    died_at: died,
                    ..item
                };
                self.push_parked_or_dead(false, item);
            }
            Record::Parks { seq, at, items } => {
                let lines = items.into_iter().map(|item| (item.request, item.line));
                self.push_group(seq, at, lines);
            }
            other => self.apply_checked(&other),
        }
        Ok(())
    }

    /// The change of a `park` (`parked`) or `dead` record.
    fn push_parked_or_dead(&mut self, parked: bool, item: Item) {
        self.next_seq = Seq(item.seq.0.saturating_add(1));
        if parked {
            self.parked.push(item);
        } else {
            self.dead_letters.push(item);
        }
    }

    /// The change of a `parks` record: the lines at `seq`, `seq + 1`, ...
    fn push_group(
        &mut self,
        seq: Seq,
        at: Option<u64>,
        lines: impl Iterator<Item = (RequestId, Line)>,
    ) {
        let mut next = seq.0;
        for (request, line) in lines {
            let item = item_of(Seq(next), request, line, 0, 0);
            self.parked.push(Item {
                parked_at: at,
                ..item
            });
            next = next.saturating_add(1);
        }
        self.next_seq = Seq(next);
    }

    /// Whether `record` is possible in this state (M3, M6, D10, D11, D17): the single definition
    /// of what the file may hold, run on every record read back and on every record the queue is
    /// about to write. It looks only at what the record names (its line, the batch's prefix of
    /// the parked list, the in-flight batch), so a park costs O(line), a boundary O(batch).
    ///
    /// # Errors
    ///
    /// The reason the record is impossible, in lowercase words.
    pub(crate) fn check(&self, record: &Record) -> Result<(), String> {
        match record {
            Record::Park {
                seq,
                line,
                failures,
                ..
            } => self.check_item(*seq, line, Some(*failures)),
            Record::Dead { seq, line, .. } => self.check_item(*seq, line, None),
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => self.check_batch(*id, *attempt, seqs, *remaining),
            Record::Attempt { batch, attempt } => self.check_attempt(*batch, *attempt),
            Record::Parks { seq, items, .. } => self.check_parks(*seq, items),
            Record::Redrive { seqs, op, change } => {
                self.check_op(op.as_ref(), *change)?;
                self.check_redrive(seqs)
            }
            Record::Settle {
                batch,
                delivered,
                failed,
                dead,
                ..
            } => self.check_settle(*batch, delivered, failed, dead),
            Record::Next {
                seq, batch, cap, ..
            } => self.check_next(*seq, *batch, *cap),
            Record::Close { batch, .. } => self.check_close(*batch),
            Record::Done {
                end, batch, seq, ..
            } => check_done(*end, *batch, *seq),
            Record::Discard { seqs, op, change } => {
                self.check_op(op.as_ref(), *change)?;
                self.check_discard(seqs)
            }
            Record::Op {
                op,
                change,
                moved,
                refused,
                ..
            } => {
                self.check_op(Some(op), *change)?;
                match (moved, refused) {
                    (Some(_), None) | (None, Some(_)) => Ok(()),
                    _ => Err(format!(
                        "request {op} is not exactly one of moved and refused"
                    )),
                }
            }
            Record::Flight {
                id, attempt, seqs, ..
            } => self.check_flight(*id, *attempt, seqs),
        }
    }

    /// A `park` (with its failure count) or `dead` record's item.
    fn check_item(&self, seq: Seq, line: &str, parked_failures: Option<u32>) -> Result<(), String> {
        //= spec/delivery.md#d17-order
        //# `park` MUST assign seqs that strictly increase and are never reused within a
        //# mirror (when none is left, it fails with `Exhausted` rather than wrap, D10
        //# "Attempt ceiling").
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# Seqs and batch ids MUST strictly increase along the file; a reader MUST reject a
        //# `park`/`dead` record whose seq, or a `batch` record whose id, is below the
        //# current counter.
        // M6: seqs strictly increase along the file and are never reused.
        if seq < self.next_seq {
            return Err(format!(
                "seq {seq} reused or out of order (expected at least {})",
                self.next_seq
            ));
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# - `u64::MAX` is never a seq or a batch id (no next counter would follow it): a
        //# `park`, `dead` or `batch` record holding it MUST be rejected (`Corrupt`).
        // M6: the counter after the last seq must exist; u64::MAX is never a seq.
        if seq.0.checked_add(1).is_none() {
            return Err(format!(
                "seq {seq} leaves no next seq (u64::MAX is never a seq)"
            ));
        }
        if has_newline(line) {
            return Err(format!("line of seq {seq} contains a newline"));
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# - A parked item (including one in flight) holds at most `u32::MAX - 1` failures,
        //# so that it can always fail once more: a `park` record with failures `u32::MAX`,
        //# or a settle that would park an item again at `u32::MAX`, MUST be rejected
        //# (`Corrupt`).
        // M6: a parked item must be able to fail once more; only dead letters may hold
        // the largest count.
        if parked_failures == Some(u32::MAX) {
            return Err(format!(
                "parked seq {seq} has failures u32::MAX and could not fail again"
            ));
        }
        Ok(())
    }

    fn check_batch(
        &self,
        id: BatchId,
        attempt: Attempt,
        seqs: &[Seq],
        remaining: usize,
    ) -> Result<(), String> {
        self.check_batch_id(id)?;
        if attempt.0 < 1 {
            return Err(format!("batch {id} has attempt 0"));
        }
        if seqs.is_empty() {
            return Err(format!("batch {id} has no items"));
        }
        //= spec/delivery.md#d11-deterministic-split
        //# While a cap is set, a new batch MUST hold at most `cap` items.
        if let Some(cap) = self.cap
            && u64::try_from(seqs.len()).is_ok_and(|k| k > cap)
        {
            return Err(format!(
                "batch {id} has {} items, over the cap of {cap}",
                seqs.len()
            ));
        }
        self.check_batch_prefix(id, seqs, remaining)?;
        self.check_batch_handed(id, attempt, seqs.len())
    }

    /// A new batch's id: no batch in flight, and the id above every earlier one with a next id
    /// after it.
    fn check_batch_id(&self, id: BatchId) -> Result<(), String> {
        if let Some(batch) = &self.in_flight {
            return Err(format!(
                "batch {id} persisted while batch {} is still in flight",
                batch.id
            ));
        }
        //= spec/delivery.md#d10-repeat-recognisable
        //# A batch id that was returned by `boundary` MUST NOT later denote a different
        //# membership.
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# Seqs and batch ids MUST strictly increase along the file; a reader MUST reject a
        //# `park`/`dead` record whose seq, or a `batch` record whose id, is below the
        //# current counter.
        if id < self.next_batch {
            return Err(format!(
                "batch id {id} reused or out of order (expected at least {})",
                self.next_batch
            ));
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# - `u64::MAX` is never a seq or a batch id (no next counter would follow it): a
        //# `park`, `dead` or `batch` record holding it MUST be rejected (`Corrupt`).
        if id.0.checked_add(1).is_none() {
            return Err(format!(
                "batch id {id} leaves no next id (u64::MAX is never a batch id)"
            ));
        }
        Ok(())
    }

    /// A new batch's seqs against the parked list: its first `seqs.len()` items, `remaining`
    /// behind them.
    fn check_batch_prefix(
        &self,
        id: BatchId,
        seqs: &[Seq],
        remaining: usize,
    ) -> Result<(), String> {
        let k = seqs.len();
        //= spec/delivery.md#d17-order
        //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of
        //# it, so items in a batch are in seq order and a line is first offered only after
        //# every line with a lower seq was offered.
        // D11, D17: a batch is a prefix of the parked items in seq order.
        let is_prefix = self.parked.len() >= k
            && self
                .parked
                .iter()
                .zip(seqs)
                .all(|(item, seq)| item.seq == *seq);
        if !is_prefix {
            let prefix: Vec<Seq> = self.parked.iter().take(k).map(|item| item.seq).collect();
            return Err(format!(
                "batch {id} names seqs {} but the first parked seqs are {}",
                list(seqs),
                list(&prefix)
            ));
        }
        //= spec/delivery.md#d11-deterministic-split
        //# `remaining` MUST be `parked.len() - k`.
        if self.parked.len() - k != remaining {
            return Err(format!(
                "batch {id} says {remaining} remaining but {} lines were parked behind it",
                self.parked.len() - k
            ));
        }
        Ok(())
    }

    /// The hand-over counts of a new batch's `k` items (the parked list's first), each raised
    /// by `attempt`.
    fn check_batch_handed(&self, id: BatchId, attempt: Attempt, k: usize) -> Result<(), String> {
        //= spec/delivery.md#d19-hand-over-count-per-item
        //# A hand-over count is never wrapped or saturated: a boundary that would raise an
        //# item's count past `u64::MAX` MUST fail with `Exhausted`, write nothing and not
        //# poison (as the counters of `mirror.md` M6).
        // D19, M6: the hand-over count is checked like every counter, never wrapped.
        if let Some(item) = self.parked[..k]
            .iter()
            .find(|item| item.handed.checked_add(u64::from(attempt.0)).is_none())
        {
            return Err(format!(
                "batch {id} at attempt {attempt} counts seq {} past {} hand-overs",
                item.seq, item.handed
            ));
        }
        Ok(())
    }

    fn check_attempt(&self, batch: BatchId, attempt: Attempt) -> Result<(), String> {
        let Some(in_flight) = self.in_flight.as_ref().filter(|b| b.id == batch) else {
            return Err(format!("attempt for batch {batch}, which is not in flight"));
        };
        //= spec/delivery.md#d10-repeat-recognisable
        //# It MUST NOT hand the batch over with an attempt that is not one higher.
        // D10: one higher than stored; at u32::MAX there is no higher attempt.
        if in_flight.attempt.0.checked_add(1) != Some(attempt.0) {
            return Err(format!(
                "attempt {attempt} of batch {batch} does not follow attempt {}",
                in_flight.attempt
            ));
        }
        if let Some(item) = in_flight.items.iter().find(|item| item.handed == u64::MAX) {
            return Err(format!(
                "attempt {attempt} of batch {batch} counts seq {} past {} hand-overs",
                item.seq, item.handed
            ));
        }
        Ok(())
    }

    fn check_parks(&self, seq: Seq, items: &[GroupItem]) -> Result<(), String> {
        if items.is_empty() {
            return Err(format!("group park at seq {seq} has no lines"));
        }
        if seq < self.next_seq {
            return Err(format!(
                "group park at seq {seq} reuses seqs (expected at least {})",
                self.next_seq
            ));
        }
        // M6: the group's last seq must leave a next seq, as for a single park.
        let last = u64::try_from(items.len() - 1)
            .ok()
            .and_then(|extra| seq.0.checked_add(extra))
            .filter(|last| last.checked_add(1).is_some());
        if last.is_none() {
            return Err(format!(
                "group park of {} lines at seq {seq} leaves no next seq",
                items.len()
            ));
        }
        if let Some(i) = items.iter().position(|item| has_newline(&item.line)) {
            return Err(format!(
                "line {i} of the group park at seq {seq} contains a newline"
            ));
        }
        Ok(())
    }

    fn check_redrive(&self, seqs: &[Seq]) -> Result<(), String> {
        if seqs.is_empty() {
            return Err("redrive names no seqs".to_owned());
        }
        if let Some(pair) = seqs.windows(2).find(|pair| pair[0] >= pair[1]) {
            return Err(format!(
                "redrive seqs are not strictly increasing ({} then {})",
                pair[0], pair[1]
            ));
        }
        for seq in seqs {
            if self
                .dead_letters
                .binary_search_by_key(seq, |item| item.seq)
                .is_err()
            {
                return Err(format!("redrive of seq {seq}, which is not a dead letter"));
            }
        }
        Ok(())
    }

    fn check_settle(
        &self,
        batch: BatchId,
        delivered: &[Seq],
        failed: &[Seq],
        dead: &[Seq],
    ) -> Result<(), String> {
        let Some(in_flight) = self.in_flight.as_ref().filter(|b| b.id == batch) else {
            return Err(format!("settle of batch {batch}, which is not in flight"));
        };
        let mut named: Vec<Seq> = delivered
            .iter()
            .chain(failed)
            .chain(dead)
            .copied()
            .collect();
        named.sort_unstable();
        let expected: Vec<Seq> = in_flight.items.iter().map(|item| item.seq).collect();
        if named != expected {
            return Err(format!(
                "settle of batch {batch} names seqs {} but the batch holds {}",
                list(&named),
                list(&expected)
            ));
        }
        let failed: BTreeSet<&Seq> = failed.iter().collect();
        let dead: BTreeSet<&Seq> = dead.iter().collect();
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# - A parked item (including one in flight) holds at most `u32::MAX - 1` failures,
        //# so that it can always fail once more: a `park` record with failures `u32::MAX`,
        //# or a settle that would park an item again at `u32::MAX`, MUST be rejected
        //# (`Corrupt`).
        // A failed item goes back to the parked list, where u32::MAX is not allowed (see
        // `park`); a dead one may reach it.
        for item in &in_flight.items {
            let limit = if failed.contains(&item.seq) {
                u32::MAX - 1
            } else {
                u32::MAX
            };
            let counted = failed.contains(&item.seq) || dead.contains(&item.seq);
            if counted && item.failures >= limit {
                return Err(format!(
                    "settle of batch {batch} counts one more failure of seq {} past \
                     failures {}",
                    item.seq, item.failures
                ));
            }
        }
        Ok(())
    }

    fn check_next(&self, seq: Seq, batch: BatchId, cap: Option<u64>) -> Result<(), String> {
        if cap == Some(0) {
            return Err("a cap of 0 batch items".to_owned());
        }
        if seq < self.next_seq || batch < self.next_batch {
            return Err(format!(
                "counters seq {seq} batch {batch} go back from seq {} batch {}",
                self.next_seq, self.next_batch
            ));
        }
        Ok(())
    }

    fn check_close(&self, batch: BatchId) -> Result<(), String> {
        match &self.in_flight {
            Some(in_flight) if in_flight.id == batch => Ok(()),
            _ => Err(format!("close of batch {batch}, which is not in flight")),
        }
    }

    /// D8: only dead letters are discarded, each named once, in seq order.
    fn check_discard(&self, seqs: &[Seq]) -> Result<(), String> {
        if seqs.is_empty() {
            return Err("discard names no seqs".to_owned());
        }
        match seqs.iter().find(|seq| !self.is_dead(**seq)) {
            Some(seq) => Err(format!("discard of seq {seq}, which is not a dead letter")),
            None => Ok(()),
        }
    }

    fn is_dead(&self, seq: Seq) -> bool {
        self.dead_letters
            .binary_search_by_key(&seq, |item| item.seq)
            .is_ok()
    }

    /// A snapshot's in-flight batch: the parked items it names, each counting at least the
    /// batch's own hand-overs (D19).
    fn check_flight(&self, id: BatchId, attempt: Attempt, seqs: &[Seq]) -> Result<(), String> {
        if let Some(in_flight) = &self.in_flight {
            return Err(format!(
                "batch {id} while batch {} is in flight",
                in_flight.id
            ));
        }
        if id < self.next_batch || id.0 == u64::MAX {
            return Err(format!("batch id {id} reused or past the last id"));
        }
        if attempt.0 < 1 || seqs.is_empty() {
            return Err(format!("batch {id} has attempt 0 or no items"));
        }
        for seq in seqs {
            let at = self.parked.binary_search_by_key(seq, |item| item.seq);
            let Ok(at) = at else {
                return Err(format!("batch {id} names seq {seq}, which is not parked"));
            };
            if self.parked[at].handed < u64::from(attempt.0) {
                return Err(format!(
                    "batch {id}'s seq {seq} counts fewer hand-overs than it had"
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn apply_checked(&mut self, record: &Record) {
        //= spec/delivery.md#d9-no-loss
        //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be
        //# exactly one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a
        //# dead letter until an explicit discard (D8) deletes it, through any sequence of
        //# boundaries, settles, failures, crashes and recoveries.
        match record {
            Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
                at,
            } => {
                let item = item_of(*seq, *request, line.clone(), *failures, *handed);
                self.push_parked_or_dead(
                    true,
                    Item {
                        parked_at: *at,
                        ..item
                    },
                );
            }
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
                at,
                died,
            } => {
                let item = item_of(*seq, *request, line.clone(), *failures, *handed);
                let item = Item {
                    parked_at: *at,
                    died_at: *died,
                    ..item
                };
                self.push_parked_or_dead(false, item);
            }
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => self.apply_batch(*id, *attempt, seqs.len(), *remaining),
            Record::Attempt { attempt, .. } => self.apply_attempt(*attempt),
            Record::Parks { seq, at, items } => {
                let lines = items.iter().map(|item| (item.request, item.line.clone()));
                self.push_group(*seq, *at, lines);
            }
            Record::Redrive { seqs, op, change } => {
                self.apply_redrive(seqs);
                let answer = Answer::Moved(seqs.len() as u64);
                self.applied(op.as_ref(), Verb::Redrive, *change, answer);
            }
            //= spec/delivery.md#d9-no-loss
            //# In particular, items MUST NOT leave the mirror before their batch is settled (no
            //# clear before hand-over), and a batch MUST NOT be settled `Delivered` on the daemon's
            //# behalf.
            //= spec/delivery.md#d18-no-silent-duplicate
            //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
            //= spec/delivery.md#d19-hand-over-count-per-item
            //# It MUST be kept by settles (failed and dead items),
            Record::Settle {
                batch,
                delivered,
                failed,
                dead,
                at,
            } => {
                let k = delivered.len() + failed.len() + dead.len();
                self.apply_settle(*batch, k, failed, dead, *at);
            }
            Record::Next {
                seq,
                batch,
                cap,
                memory,
            } => {
                self.next_seq = *seq;
                self.next_batch = *batch;
                self.cap = *cap;
                if let Some(memory) = memory {
                    self.memory = *memory;
                    self.forget_beyond_memory();
                }
            }
            Record::Close { at, .. } => self.apply_close(*at),
            Record::Discard { seqs, op, change } => {
                self.apply_discard(seqs);
                let answer = Answer::Moved(seqs.len() as u64);
                self.applied(op.as_ref(), Verb::Discard, *change, answer);
            }
            Record::Op {
                op,
                verb,
                change,
                moved,
                refused,
            } => {
                let answer = match (moved, refused) {
                    (Some(moved), _) => Answer::Moved(*moved),
                    (None, refused) => Answer::Refused(refused.clone().unwrap_or_default()),
                };
                self.applied(Some(op), *verb, *change, answer);
            }
            Record::Done {
                request,
                crc,
                seq,
                batch,
                end,
            } => self.remembered.push_back(Remembered {
                request: *request,
                crc: *crc,
                seq: *seq,
                batch: *batch,
                end: *end,
            }),
            Record::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => self.apply_flight(*id, *attempt, seqs, *remaining),
        }
        #[cfg(debug_assertions)]
        self.assert_applied(record);
    }

    /// The postconditions of `record` just applied, the pair of the preconditions `check`
    /// asserted before it was written: the batch moved in flight whole, a settle emptied it,
    /// a redrive's seqs are parked, and the lists stay in seq order (D17).
    #[cfg(debug_assertions)]
    fn assert_applied(&self, record: &Record) {
        let sorted = |items: &[Item]| items.windows(2).all(|pair| pair[0].seq < pair[1].seq);
        debug_assert!(
            sorted(&self.parked),
            "parked out of seq order after {record:?}"
        );
        debug_assert!(
            sorted(&self.dead_letters),
            "dead letters out of order after {record:?}"
        );
        match record {
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => {
                let batch = self.in_flight.as_ref();
                debug_assert!(batch.is_some_and(|b| b.id == *id && b.attempt == *attempt));
                debug_assert!(batch.is_some_and(|b| b.items.len() == seqs.len()));
                debug_assert_eq!(self.parked.len(), *remaining);
            }
            Record::Attempt { batch, attempt } => {
                let in_flight = self.in_flight.as_ref();
                debug_assert!(in_flight.is_some_and(|b| b.id == *batch && b.attempt == *attempt));
            }
            Record::Settle { failed, .. } => {
                debug_assert!(self.in_flight.is_none());
                let parked = |seq: &Seq| self.parked.binary_search_by_key(seq, |i| i.seq).is_ok();
                debug_assert!(failed.iter().all(parked), "a failed seq is not parked");
            }
            Record::Redrive { seqs, .. } => {
                let parked = |seq: &Seq| self.parked.binary_search_by_key(seq, |i| i.seq).is_ok();
                debug_assert!(seqs.iter().all(parked), "a redriven seq is not parked");
            }
            _ => {}
        }
    }

    fn apply_batch(&mut self, id: BatchId, attempt: Attempt, k: usize, remaining: usize) {
        // A batch of every parked item (D1's common case) takes the list's allocation whole.
        let mut items: Vec<Item> = if k == self.parked.len() {
            std::mem::take(&mut self.parked)
        } else {
            self.parked.drain(..k).collect()
        };
        // D20: seen counts the items an earlier batch handed over; then this batch's
        // hand-overs (attempt of them, for a snapshot of a repeat) are counted.
        let seen = items.iter().filter(|item| item.handed > 0).count();
        for item in &mut items {
            //= spec/delivery.md#d19-hand-over-count-per-item
            //# Every item MUST carry `handed`, the number of its hand-overs made durable:
            //# the `batch` and `attempt` records that named it since it was parked
            //# (`mirror.md` M3).
            item.handed = item.handed.saturating_add(u64::from(attempt.0));
        }
        self.in_flight = Some(Batch {
            id,
            attempt,
            items,
            remaining,
            seen,
        });
        self.next_batch = BatchId(id.0.saturating_add(1));
    }

    fn apply_attempt(&mut self, attempt: Attempt) {
        if let Some(in_flight) = self.in_flight.as_mut() {
            in_flight.attempt = attempt;
            for item in &mut in_flight.items {
                //= spec/delivery.md#d19-hand-over-count-per-item
                //# Every item MUST carry `handed`, the number of its hand-overs made
                //# durable: the `batch` and `attempt` records that named it since it was
                //# parked (`mirror.md` M3).
                item.handed = item.handed.saturating_add(1);
            }
        }
    }

    fn apply_redrive(&mut self, seqs: &[Seq]) {
        let named: BTreeSet<&Seq> = seqs.iter().collect();
        let (moved, kept): (Vec<Item>, Vec<Item>) = std::mem::take(&mut self.dead_letters)
            .into_iter()
            .partition(|item| named.contains(&item.seq));
        self.dead_letters = kept;
        //= spec/delivery.md#d19-hand-over-count-per-item
        //# and by a redrive (D21);
        //= spec/delivery.md#d21-dead-letter-redrive
        //# `Queue::redrive(seqs)` and `Queue::redrive_all()` MUST move the named dead
        //# letters (all of them) back to the parked list in one durable record (one append,
        //# one fsync), each at its seq's place in the parked list (which stays in seq
        //# order), with `failures` reset to 0 and `handed` kept.
        //= spec/delivery.md#d21-dead-letter-redrive
        //# A redriven line is then delivered or dead again like any parked line (D7, D8);
        //# it MUST NOT be lost (D9 holds for it) and MUST NOT be offered again without its
        //# count (D19) showing it was seen.
        // D21: back at the seq's place in the parked list, with a fresh failure budget
        // and the hand-over count kept.
        self.parked.extend(moved.into_iter().map(|item| Item {
            failures: 0,
            died_at: None,
            ..item
        }));
        self.parked.sort_by_key(|item| item.seq);
    }

    /// The change of a settle of a batch of `k` items (the state a compaction plans on may have
    /// dropped the delivered ones already).
    fn apply_settle(
        &mut self,
        id: BatchId,
        k: usize,
        failed: &[Seq],
        dead: &[Seq],
        at: Option<u64>,
    ) {
        //= spec/delivery.md#d11-deterministic-split
        //# A settle MUST double the cap, and lift it when the settled batch held fewer items
        //# than the cap.
        self.cap = self
            .cap
            .filter(|cap| u64::try_from(k).is_ok_and(|k| k >= *cap))
            .map(|cap| cap.saturating_mul(2));
        let failed: BTreeSet<&Seq> = failed.iter().collect();
        let dead: BTreeSet<&Seq> = dead.iter().collect();
        let items = self.in_flight.take().map_or_else(Vec::new, |b| b.items);
        let delivered = items.len() - failed.len() - dead.len();
        // Only the newest `memory` delivered lines stay remembered: the others' CRCs are not
        // computed.
        let skipped = delivered.saturating_sub(usize::try_from(self.memory).unwrap_or(usize::MAX));
        let mut seen = 0;
        for mut item in items {
            if failed.contains(&item.seq) {
                item.failures += 1;
                self.parked.push(item);
            } else if dead.contains(&item.seq) {
                item.failures += 1;
                //= spec/delivery.md#d24-times
                //# A line that becomes a dead letter at a settle or a close MUST carry the time
                //# of that record as its time of death.
                item.died_at = at;
                self.dead_letters.push(item);
            } else {
                seen += 1;
                if seen > skipped {
                    self.remember(&item, Some(id), Ended::Delivered);
                }
            }
        }
        self.forget_beyond_memory();
        //= spec/delivery.md#d7-failure-isolation
        //# At settle, a failed item whose failure count stays below `failures_max` MUST
        //# stay parked with the same seq and `failures + 1`, and MUST be offered again at a
        //# later boundary in seq order (so it precedes lines parked after it); the
        //# delivered items of the same batch MUST leave the mirror.
        //= spec/delivery.md#d17-order
        //# The parked list MUST be kept in seq order and a new batch MUST be a prefix of
        //# it, so items in a batch are in seq order and a line is first offered only after
        //# every line with a lower seq was offered.
        // D7, D17: failed items come first again, in seq order.
        self.parked.sort_by_key(|item| item.seq);
        self.dead_letters.sort_by_key(|item| item.seq);
    }

    /// A snapshot's in-flight batch: the named items leave the parked list, in seq order.
    fn apply_flight(&mut self, id: BatchId, attempt: Attempt, seqs: &[Seq], remaining: usize) {
        let (items, parked): (Vec<Item>, Vec<Item>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|item| seqs.binary_search(&item.seq).is_ok());
        self.parked = parked;
        // D20: an item was seen before this batch when it counts more than the batch's own
        // hand-overs.
        let before = u64::from(attempt.0);
        let seen = items.iter().filter(|item| item.handed > before).count();
        self.in_flight = Some(Batch {
            id,
            attempt,
            items,
            remaining,
            seen,
        });
        self.next_batch = BatchId(id.0.saturating_add(1));
    }

    /// D10's repeat bound: the closed batch's items go back to the parked list at their seqs'
    /// places with their counts (a crash is not a failure, D7), or its single item to the dead
    /// letters (D8); the cap halves the closed batch (D11), or is lifted once an item is isolated.
    fn apply_close(&mut self, at: Option<u64>) {
        let Some(batch) = self.in_flight.take() else {
            return;
        };
        //= spec/delivery.md#d8-dead-letter
        //# An item that was alone in a batch the repeat bound closed (D10) MUST move to the dead letters
        //# at that close, its failure count unchanged: it was handed over `repeats_max` times alone
        //# without a settle.
        let k = batch.items.len();
        if let [item] = &batch.items[..] {
            self.dead_letters.push(Item {
                died_at: at,
                ..item.clone()
            });
            self.dead_letters.sort_by_key(|item| item.seq);
            self.cap = None;
        } else {
            self.parked.extend(batch.items);
            self.parked.sort_by_key(|item| item.seq);
            self.cap = u64::try_from(k.div_ceil(2)).ok();
        }
    }
}

impl MirrorState {
    /// D8, D3: the named dead letters leave the mirror and join the remembered window.
    fn apply_discard(&mut self, seqs: &[Seq]) {
        let (gone, kept): (Vec<Item>, Vec<Item>) = std::mem::take(&mut self.dead_letters)
            .into_iter()
            .partition(|item| seqs.binary_search(&item.seq).is_ok());
        self.dead_letters = kept;
        for item in &gone {
            self.remember(item, None, Ended::Discarded);
        }
        self.forget_beyond_memory();
    }

    /// D3: `item` left the mirror as `end`; remembered while the window has room for it.
    fn remember(&mut self, item: &Item, batch: Option<BatchId>, end: Ended) {
        if self.memory == 0 {
            return;
        }
        self.remembered.push_back(Remembered {
            request: item.request,
            crc: crc64(item.line.as_bytes()),
            seq: item.seq,
            batch,
            end,
        });
    }

    /// D3: the window keeps its newest `memory` entries.
    fn forget_beyond_memory(&mut self) {
        let memory = usize::try_from(self.memory).unwrap_or(usize::MAX);
        while self.remembered.len() > memory {
            self.remembered.pop_front();
        }
    }

    /// M17: a record applying an operator request names one the window does not hold, so no
    /// request is applied twice while the window remembers it.
    /// A `change` check belongs to a request (`op`).
    fn check_op(&self, op: Option<&OpId>, change: Option<u64>) -> Result<(), String> {
        match op {
            Some(op) if ops::applied(&self.ops, op).is_some() => {
                Err(format!("request {op} is applied a second time"))
            }
            None if change.is_some() => Err("a change check without a request".to_owned()),
            _ => Ok(()),
        }
    }

    /// M17: request `op` (if any) was applied with `answer`; the window keeps the newest
    /// [`APPLIED_MEMORY`](ops::APPLIED_MEMORY).
    fn applied(&mut self, op: Option<&OpId>, verb: Verb, change: Option<u64>, answer: Answer) {
        let Some(op) = op else {
            return;
        };
        self.ops.push_back(Applied {
            id: op.clone(),
            verb,
            change,
            answer,
        });
        while self.ops.len() > ops::APPLIED_MEMORY {
            self.ops.pop_front();
        }
    }

    /// The entry of the remembered window for `request`, the newest if there are several.
    pub(crate) fn remembered(&self, request: RequestId) -> Option<&Remembered> {
        self.remembered
            .iter()
            .rev()
            .find(|entry| entry.request == request)
    }
}

/// A `done` record: a delivered entry names the batch that delivered it, a discarded one none.
fn check_done(end: Ended, batch: Option<BatchId>, seq: Seq) -> Result<(), String> {
    match (end, batch) {
        (Ended::Delivered, None) => {
            Err(format!("delivered seq {seq} remembered without its batch"))
        }
        (Ended::Discarded, Some(batch)) => {
            Err(format!("discarded seq {seq} remembered with batch {batch}"))
        }
        _ => Ok(()),
    }
}

/// Whether `line` holds a `\n` (a word at a time: recovery asks it of every line).
fn has_newline(line: &str) -> bool {
    newline_position(line.as_bytes()).is_some()
}

fn item_of(seq: Seq, request: RequestId, line: Line, failures: u32, handed: u64) -> Item {
    Item {
        seq,
        request,
        line,
        failures,
        handed,
        parked_at: None,
        died_at: None,
    }
}

fn list(seqs: &[Seq]) -> String {
    let parts: Vec<String> = seqs.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(","))
}
