//! The mirror file format (spec/mirror.md): an append-only log of checksummed JSON lines.
//!
//! **Not part of the stable API**: these types change with the file format, in any release. The
//! conformance harness, the fuzz targets and the operator command use them; a daemon uses
//! `Queue`.
//!
//! Every line is `<crc32 of the JSON as 8 lowercase hex digits> <JSON>\n` (M1). The first record
//! is the header `{"format":"parkline-mirror","version":2}` (M2; version 1 files are read and
//! upgraded, M14); the others change the state as
//! [`MirrorState`] describes. The same check (`MirrorState::check`, private) runs on every record
//! read back and on every record the queue is about to write, and the same change
//! (`MirrorState::apply_checked`) rebuilds the state when the file is decoded and advances it when
//! the queue writes, so what the queue holds in memory is by construction what the file decodes
//! to, and a record the decoder would reject is never written.

pub(crate) mod json;
pub(crate) mod legacy;
mod record;

pub(crate) use record::{GroupItem, Record};

use json::{newline_position, park_or_dead, park_or_dead_prefix, write_lines_record};
use legacy::{RecordV1, RecordV2};

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::line::Line;
use crate::runs;
use crate::types::{Attempt, Batch, BatchId, Item, RequestId, Seq};

/// The mirror's format name, in the header.
pub const FORMAT: &str = "parkline-mirror";
/// The mirror format version this build writes (and the newest it reads).
pub const VERSION: u64 = 3;
/// The oldest mirror format version this build reads; an older file is upgraded on open (M14).
pub const VERSION_OLDEST: u64 = 1;

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
    /// The most items a new batch may hold, set by closing a batch that crashed the daemon at
    /// every hand-over (D10's repeat bound): half its size, doubled by each settle, lifted by a
    /// settle of a batch smaller than it. `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<u64>,
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
        }
    }
}

/// The header record (M2).
#[derive(Serialize)]
struct Header<'a> {
    format: &'a str,
    version: u64,
}

impl MirrorState {
    /// Applies one record read back: [`check`](MirrorState::check), then the change, moving
    /// the record's lines into the state instead of copying them. An `Err` is the reason the
    /// record is impossible in this state; the state is then unchanged. Decoding uses it; the
    /// queue checks a planned record before writing it and applies it after
    /// ([`apply_checked`](MirrorState::apply_checked), the same change).
    pub(crate) fn apply(&mut self, record: Record) -> std::result::Result<(), String> {
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
            } => self.push_parked_or_dead(true, item_of(seq, request, line, failures, handed)),
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
            } => self.push_parked_or_dead(false, item_of(seq, request, line, failures, handed)),
            Record::Parks { seq, items } => {
                self.push_group(seq, items.into_iter().map(|item| (item.request, item.line)));
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
    fn push_group(&mut self, seq: Seq, lines: impl Iterator<Item = (RequestId, Line)>) {
        let mut next = seq.0;
        for (request, line) in lines {
            self.parked.push(item_of(Seq(next), request, line, 0, 0));
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
    pub(crate) fn check(&self, record: &Record) -> std::result::Result<(), String> {
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
            Record::Parks { seq, items } => self.check_parks(*seq, items),
            Record::Redrive { seqs } => self.check_redrive(seqs),
            Record::Settle {
                batch,
                delivered,
                failed,
                dead,
            } => self.check_settle(*batch, delivered, failed, dead),
            Record::Next { seq, batch, cap } => self.check_next(*seq, *batch, *cap),
            Record::Close { batch } => self.check_close(*batch),
            Record::Discard { seqs } => self.check_discard(seqs),
            Record::Flight {
                id, attempt, seqs, ..
            } => self.check_flight(*id, *attempt, seqs),
        }
    }

    /// A `park` (with its failure count) or `dead` record's item.
    fn check_item(
        &self,
        seq: Seq,
        line: &str,
        parked_failures: Option<u32>,
    ) -> std::result::Result<(), String> {
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
    ) -> std::result::Result<(), String> {
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

    fn check_attempt(&self, batch: BatchId, attempt: Attempt) -> std::result::Result<(), String> {
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

    fn check_parks(&self, seq: Seq, items: &[GroupItem]) -> std::result::Result<(), String> {
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

    fn check_redrive(&self, seqs: &[Seq]) -> std::result::Result<(), String> {
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
    ) -> std::result::Result<(), String> {
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

    fn check_next(
        &self,
        seq: Seq,
        batch: BatchId,
        cap: Option<u64>,
    ) -> std::result::Result<(), String> {
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

    fn check_close(&self, batch: BatchId) -> std::result::Result<(), String> {
        match &self.in_flight {
            Some(in_flight) if in_flight.id == batch => Ok(()),
            _ => Err(format!("close of batch {batch}, which is not in flight")),
        }
    }

    /// D8: only dead letters are discarded, each named once, in seq order.
    fn check_discard(&self, seqs: &[Seq]) -> std::result::Result<(), String> {
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
    fn check_flight(
        &self,
        id: BatchId,
        attempt: Attempt,
        seqs: &[Seq],
    ) -> std::result::Result<(), String> {
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
            }
            | Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
            } => {
                let item = item_of(*seq, *request, line.clone(), *failures, *handed);
                self.push_parked_or_dead(matches!(record, Record::Park { .. }), item);
            }
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => self.apply_batch(*id, *attempt, seqs.len(), *remaining),
            Record::Attempt { attempt, .. } => self.apply_attempt(*attempt),
            Record::Parks { seq, items } => {
                let lines = items.iter().map(|item| (item.request, item.line.clone()));
                self.push_group(*seq, lines);
            }
            Record::Redrive { seqs } => self.apply_redrive(seqs),
            //= spec/delivery.md#d9-no-loss
            //# In particular, items MUST NOT leave the mirror before their batch is settled (no
            //# clear before hand-over), and a batch MUST NOT be settled `Delivered` on the daemon's
            //# behalf.
            //= spec/delivery.md#d18-no-silent-duplicate
            //# A line settled `Delivered` or moved to the dead letters MUST NOT be offered again.
            //= spec/delivery.md#d19-hand-over-count-per-item
            //# It MUST be kept by settles (failed and dead items),
            Record::Settle {
                delivered,
                failed,
                dead,
                ..
            } => self.apply_settle(delivered.len() + failed.len() + dead.len(), failed, dead),
            Record::Next { seq, batch, cap } => {
                self.next_seq = *seq;
                self.next_batch = *batch;
                self.cap = *cap;
            }
            Record::Close { .. } => self.apply_close(),
            Record::Discard { seqs } => {
                self.dead_letters
                    .retain(|item| seqs.binary_search(&item.seq).is_err());
            }
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
            Record::Redrive { seqs } => {
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
            ..item
        }));
        self.parked.sort_by_key(|item| item.seq);
    }

    /// The change of a settle of a batch of `k` items (the state a compaction plans on may have
    /// dropped the delivered ones already).
    fn apply_settle(&mut self, k: usize, failed: &[Seq], dead: &[Seq]) {
        //= spec/delivery.md#d11-deterministic-split
        //# A settle MUST double the cap, and lift it when the settled batch held fewer items
        //# than the cap.
        self.cap = self
            .cap
            .filter(|cap| u64::try_from(k).is_ok_and(|k| k >= *cap))
            .map(|cap| cap.saturating_mul(2));
        let failed: BTreeSet<&Seq> = failed.iter().collect();
        let dead: BTreeSet<&Seq> = dead.iter().collect();
        for mut item in self.in_flight.take().into_iter().flat_map(|b| b.items) {
            if failed.contains(&item.seq) {
                item.failures += 1;
                self.parked.push(item);
            } else if dead.contains(&item.seq) {
                item.failures += 1;
                self.dead_letters.push(item);
            }
        }
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
    fn apply_close(&mut self) {
        let Some(batch) = self.in_flight.take() else {
            return;
        };
        //= spec/delivery.md#d8-dead-letter
        //# An item that was alone in a batch the repeat bound closed (D10) MUST move to the dead letters
        //# at that close, its failure count unchanged: it crashed the daemon `repeats_max` times by
        //# itself.
        let k = batch.items.len();
        if let [item] = &batch.items[..] {
            self.dead_letters.push(item.clone());
            self.dead_letters.sort_by_key(|item| item.seq);
            self.cap = None;
        } else {
            self.parked.extend(batch.items);
            self.parked.sort_by_key(|item| item.seq);
            self.cap = u64::try_from(k.div_ceil(2)).ok();
        }
    }

    /// The records that rebuild this state from an empty one, in an order `apply` accepts.
    pub(crate) fn snapshot_records(&self) -> Vec<Record> {
        //= spec/mirror.md#m12-compaction
        //# A snapshot is the header and the records that rebuild the state: the dead letters and
        //# every live item (parked or in flight) as `dead`/`park` records in seq order, then a
        //# `flight` record naming the in-flight batch's items, then `next`.
        let record = |item: &Item, parked: bool| {
            let (seq, request, line) = (item.seq, item.request, item.line.clone());
            let (failures, handed) = (item.failures, item.handed);
            if parked {
                Record::Park {
                    seq,
                    request,
                    line,
                    failures,
                    handed,
                }
            } else {
                Record::Dead {
                    seq,
                    request,
                    line,
                    failures,
                    handed,
                }
            }
        };
        //= spec/delivery.md#d8-dead-letter
        //# Dead letters MUST be kept in the mirror,
        let mut items: Vec<(Seq, Record)> = Vec::new();
        items.extend(
            self.dead_letters
                .iter()
                .map(|item| (item.seq, record(item, false))),
        );
        let in_flight = self.in_flight.iter().flat_map(|batch| &batch.items);
        let live = self.parked.iter().chain(in_flight);
        items.extend(live.map(|item| (item.seq, record(item, true))));
        items.sort_by_key(|(seq, _)| *seq);
        let mut records: Vec<Record> = items.into_iter().map(|(_, record)| record).collect();
        //= spec/delivery.md#d19-hand-over-count-per-item
        //# across crashes and recoveries,
        //= spec/delivery.md#d19-hand-over-count-per-item
        //# it is durable in the mirror.
        if let Some(batch) = &self.in_flight {
            records.push(Record::Flight {
                id: batch.id,
                attempt: batch.attempt,
                seqs: batch.items.iter().map(|item| item.seq).collect(),
                remaining: batch.remaining,
            });
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# Snapshots MUST end with a `next` record carrying the counters, so ids are not reused
        //# after the items that used them were dropped.
        records.push(Record::Next {
            seq: self.next_seq,
            batch: self.next_batch,
            cap: self.cap,
        });
        records
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
    }
}

fn list(seqs: &[Seq]) -> String {
    let parts: Vec<String> = seqs.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(","))
}

/// The width of a record's checksum and the space after it: `crc32 hex` then ` `.
const CHECKSUM_PREFIX: usize = 9;

/// A record line (M1: checksum, space, JSON, newline) whose JSON `write` puts straight after
/// the checksum's place, in one buffer of `capacity` bytes to start with: the JSON is written
/// once and never copied, and the checksum is filled in over it at the end.
fn framed(capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut line = Vec::with_capacity(capacity);
    line.extend_from_slice(&[b'0'; CHECKSUM_PREFIX - 1]);
    line.push(b' ');
    write(&mut line);
    let crc = crc32fast::hash(&line[CHECKSUM_PREFIX..]);
    for (i, digit) in line[..CHECKSUM_PREFIX - 1].iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[((crc >> (28 - 4 * i)) & 0xf) as usize];
    }
    line.push(b'\n');
    line
}

/// Enough room for `record`'s line that it is rarely grown: the keys and counters, each line's
/// bytes, and each seq at its widest (20 digits and a comma).
fn capacity_of(record: &Record) -> usize {
    const FIXED: usize = 160;
    const SEQ: usize = 21;
    FIXED
        + match record {
            Record::Park { line, .. } | Record::Dead { line, .. } => line.len(),
            Record::Parks { items, .. } => items.iter().map(|item| item.line.len() + 48).sum(),
            Record::Batch { seqs, .. } | Record::Redrive { seqs } => seqs.len() * SEQ,
            Record::Settle {
                delivered,
                failed,
                dead,
                ..
            } => (delivered.len() + failed.len() + dead.len()) * SEQ,
            Record::Flight { seqs, .. } => seqs.len() * SEQ,
            Record::Discard { seqs } => seqs.len() * SEQ,
            Record::Attempt { .. } | Record::Next { .. } | Record::Close { .. } => 0,
        }
}

/// The encoded line of one record.
pub(crate) fn encode_record(record: &Record) -> Vec<u8> {
    framed(capacity_of(record), |line| {
        // The park records are written by hand, byte for byte as serde would write them; the
        // others in their version 3 spelling (seq lists as runs).
        if !write_lines_record(line, record) {
            // Serialising a plain enum of integers, strings and vectors cannot fail.
            serde_json::to_writer(line, &RecordV3::of(record))
                .unwrap_or_else(|_| unreachable!("record serialises"));
        }
    })
}

//= spec/mirror.md#m3-records-and-the-state-transition
//# Every record after the header is a JSON object with a `"type"` field and exactly the fields
//# below (a reader MUST reject unknown types and unknown fields).
/// One record as version 3 spells it: seq lists as runs (`runs.rs`), the in-flight batch of a
/// snapshot whole. Read by serde's derived code (the `park` and `dead` lines parkline writes by
/// `json.rs`'s fast path first), then resolved against the state (`RecordV3::resolve`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum RecordV3 {
    Park(ItemFields),
    Dead(ItemFields),
    Parks {
        seq: Seq,
        items: Vec<GroupItem>,
    },
    Batch {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<[u64; 2]>,
        remaining: usize,
    },
    Attempt {
        batch: BatchId,
        attempt: Attempt,
    },
    Settle {
        batch: BatchId,
        delivered: Vec<[u64; 2]>,
        failed: Vec<[u64; 2]>,
        dead: Vec<[u64; 2]>,
    },
    Redrive {
        seqs: Vec<[u64; 2]>,
    },
    Discard {
        seqs: Vec<[u64; 2]>,
    },
    Close {
        batch: BatchId,
    },
    Flight {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<[u64; 2]>,
        remaining: usize,
    },
    Next {
        seq: Seq,
        batch: BatchId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<u64>,
    },
}

/// An item with its counts, as `park` and `dead` records name it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemFields {
    seq: Seq,
    request: RequestId,
    line: Line,
    failures: u32,
    handed: u64,
}

impl RecordV3 {
    /// The spelling of `record`.
    fn of(record: &Record) -> RecordV3 {
        let runs = |seqs: &[Seq]| runs::runs_of(seqs);
        let item = |seq, request, line: &Line, failures, handed| ItemFields {
            seq,
            request,
            line: line.clone(),
            failures,
            handed,
        };
        match record {
            Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
            } => RecordV3::Park(item(*seq, *request, line, *failures, *handed)),
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
            } => RecordV3::Dead(item(*seq, *request, line, *failures, *handed)),
            Record::Parks { seq, items } => RecordV3::Parks {
                seq: *seq,
                items: items.clone(),
            },
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => RecordV3::Batch {
                id: *id,
                attempt: *attempt,
                seqs: runs(seqs),
                remaining: *remaining,
            },
            Record::Attempt { batch, attempt } => RecordV3::Attempt {
                batch: *batch,
                attempt: *attempt,
            },
            Record::Settle {
                batch,
                delivered,
                failed,
                dead,
            } => RecordV3::Settle {
                batch: *batch,
                delivered: runs(delivered),
                failed: runs(failed),
                dead: runs(dead),
            },
            Record::Redrive { seqs } => RecordV3::Redrive { seqs: runs(seqs) },
            Record::Discard { seqs } => RecordV3::Discard { seqs: runs(seqs) },
            Record::Close { batch } => RecordV3::Close { batch: *batch },
            Record::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => RecordV3::Flight {
                id: *id,
                attempt: *attempt,
                seqs: runs(seqs),
                remaining: *remaining,
            },
            Record::Next { seq, batch, cap } => RecordV3::Next {
                seq: *seq,
                batch: *batch,
                cap: *cap,
            },
        }
    }

    /// The record, its runs turned into seqs: at most one more than the list they name holds
    /// in `state` (the in-flight batch for a settle, the parked list for a batch, the dead
    /// letters for a redrive or discard), so a file cannot make the reader build a longer list,
    /// and a record naming a seq the list lacks reaches the check, which says which.
    fn resolve(self, state: &MirrorState) -> std::result::Result<Record, String> {
        let in_flight = state.in_flight.as_ref();
        let batch_len = in_flight.map_or(0, |batch| batch.items.len()) + 1;
        let dead_len = state.dead_letters.len() + 1;
        let parked_len = state.parked.len() + 1;
        Ok(match self {
            RecordV3::Park(item) => Record::Park {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
            },
            RecordV3::Dead(item) => Record::Dead {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
            },
            RecordV3::Parks { seq, items } => Record::Parks { seq, items },
            RecordV3::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Batch {
                id,
                attempt,
                seqs: runs::seqs_of(&seqs, parked_len)?,
                remaining,
            },
            RecordV3::Attempt { batch, attempt } => Record::Attempt { batch, attempt },
            RecordV3::Settle {
                batch,
                delivered,
                failed,
                dead,
            } => Record::Settle {
                batch,
                delivered: runs::seqs_of(&delivered, batch_len)?,
                failed: runs::seqs_of(&failed, batch_len)?,
                dead: runs::seqs_of(&dead, batch_len)?,
            },
            RecordV3::Redrive { seqs } => Record::Redrive {
                seqs: runs::seqs_of(&seqs, dead_len)?,
            },
            RecordV3::Discard { seqs } => Record::Discard {
                seqs: runs::seqs_of(&seqs, dead_len)?,
            },
            RecordV3::Close { batch } => Record::Close { batch },
            RecordV3::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Flight {
                id,
                attempt,
                seqs: runs::seqs_of(&seqs, parked_len)?,
                remaining,
            },
            RecordV3::Next { seq, batch, cap } => Record::Next { seq, batch, cap },
        })
    }
}

pub(crate) fn encode_header() -> Vec<u8> {
    //= spec/mirror.md#m2-header-and-version
    //# The first record MUST be the header `{"format":"parkline-mirror","version":3}`.
    let header = Header {
        format: FORMAT,
        version: VERSION,
    };
    framed(64, |line| {
        serde_json::to_writer(line, &header).unwrap_or_else(|_| unreachable!("header serialises"));
    })
}

/// A complete mirror file (header and snapshot records) that decodes to `state`.
///
/// `state` must be one that [`decode`] could return (for instance a batch's items must be the
/// lowest seqs parked at its boundary); otherwise the bytes will not decode.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// use parkline::mirror::{decode, encode, MirrorState};
/// let state = MirrorState::default();
/// assert_eq!(decode(&encode(&state))?, state);
/// # Ok(()) }
/// ```
pub fn encode(state: &MirrorState) -> Vec<u8> {
    let mut bytes = encode_header();
    for record in state.snapshot_records() {
        bytes.extend_from_slice(&encode_record(&record));
    }
    bytes
}

/// The outcome of decoding a mirror file: its state and where its valid records end.
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// let mut bytes = parkline::mirror::encode(&Default::default());
/// let valid = bytes.len() as u64;
/// bytes.extend_from_slice(b"0123"); // an append torn by a crash
/// let decoded = parkline::mirror::decode_log(&bytes)?;
/// assert_eq!(decoded.valid_len, valid);
/// assert_eq!(decoded.torn_len, 4);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The state the records build.
    pub state: MirrorState,
    /// How many complete records the file holds, the header included.
    pub records: u64,
    /// The length of the complete records; `open` cuts the file to this length.
    pub valid_len: u64,
    /// The length of a final segment without its `\n` (a torn append, M7); 0 when none.
    pub torn_len: u64,
    /// The format version of the file's header: [`VERSION`], or an older one `open` upgrades
    /// (M14).
    pub version: u64,
}

/// Decodes a mirror file into its state; see [`decode_log`] for the torn tail.
///
/// # Errors
///
/// [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt) with the record number, byte offset and
/// reason, for anything but a torn final segment: no header, an unknown format or version, a bad
/// checksum, a JSON error, or an impossible record (M11).
///
/// # Example
///
/// ```
/// let err = parkline::mirror::decode(b"00000000 {}\n").unwrap_err();
/// assert_eq!(err.kind(), parkline::ErrorKind::Corrupt);
/// assert_eq!(err.record(), Some(1));
/// ```
pub fn decode(bytes: &[u8]) -> Result<MirrorState> {
    decode_log(bytes).map(|decoded| decoded.state)
}

/// Decodes a mirror file, reporting a torn final segment instead of failing on it (M7).
///
/// # Errors
///
/// As [`decode`].
///
/// # Example
///
/// ```
/// # fn main() -> parkline::Result<()> {
/// let decoded = parkline::mirror::decode_log(&parkline::mirror::encode(&Default::default()))?;
/// assert_eq!(decoded.torn_len, 0);
/// assert_eq!(decoded.records, 2); // header and counters
/// # Ok(()) }
/// ```
pub fn decode_log(bytes: &[u8]) -> Result<Decoded> {
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# Anything in the file other than a torn final append (M7) — an empty file, a missing or torn
    //# header, an unknown format or version (M2), a bad checksum (M1), a JSON error, an unknown
    //# record type or field, an impossible record (M3, M6) — MUST make opening fail with a
    //# `Corrupt` error naming the file, the byte offset and the 1-based number of the bad record
    //# (the header is record 1), and the reason.
    let mut decoder = LogDecoder::new();
    decoder.feed(bytes)?;
    decoder.finish()
}

/// [`decode_log`] of a file read in pieces: the pieces are fed in file order, as they come, so
/// a file is decoded without ever being held whole (`Queue::open` reads the mirror so).
/// A line split between pieces is gathered in a buffer of its own; the others are read where
/// they lie. The first error ends the decoding: nothing may be fed after it.
#[derive(Debug)]
pub(crate) struct LogDecoder {
    state: MirrorState,
    /// The complete records so far, the header included.
    records: u64,
    /// The length of those records: the offset of the next line.
    valid_len: u64,
    version: u64,
    /// Whether any byte was fed (an empty file has no header, M2).
    fed: bool,
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
    /// Where the fast path unescapes a line that holds escapes, before the line is allocated
    /// once at its length; its capacity serves the next such line.
    unescaped: String,
}

impl LogDecoder {
    pub(crate) fn new() -> Self {
        LogDecoder {
            state: MirrorState::default(),
            records: 0,
            valid_len: 0,
            version: VERSION,
            fed: false,
            partial: Vec::new(),
            unescaped: String::new(),
        }
    }

    /// Decodes the lines `piece` completes.
    ///
    /// # Errors
    ///
    /// As [`decode`], for the first damaged record.
    pub(crate) fn feed(&mut self, mut piece: &[u8]) -> Result<()> {
        if piece.is_empty() {
            return Ok(());
        }
        self.fed = true;
        if !self.partial.is_empty() {
            let Some(end) = newline_position(piece) else {
                self.partial.extend_from_slice(piece);
                return Ok(());
            };
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&piece[..end]);
            let decoded = self.line(&line);
            line.clear();
            self.partial = line; // its capacity serves the next split line
            decoded?;
            piece = &piece[end + 1..];
        }
        loop {
            // Nearly every line of a large mirror: read in one pass, its end found by the
            // parse instead of a search first.
            if self.records > 0
                && self.version >= 2
                && let Some((record, len)) = fast_line(piece, &mut self.unescaped)
            {
                self.records += 1;
                let (offset, number) = (self.valid_len, self.records);
                self.state
                    .apply(record)
                    .map_err(|reason| Error::corrupt(offset, number, reason))?;
                self.valid_len += len as u64 + 1;
                piece = &piece[len + 1..];
                continue;
            }
            let Some(end) = newline_position(piece) else {
                break;
            };
            self.line(&piece[..end])?;
            piece = &piece[end + 1..];
        }
        self.partial.extend_from_slice(piece);
        Ok(())
    }

    /// The state of the file fed, with its torn final segment (M7).
    ///
    /// # Errors
    ///
    /// As [`decode`]: an empty file, or a header without its newline.
    pub(crate) fn finish(self) -> Result<Decoded> {
        if !self.fed {
            return Err(Error::corrupt(0, 1, "empty file: no header"));
        }
        if self.records == 0 {
            // M2: the header is created whole (temp file, fsync, rename), so it is never torn.
            return Err(Error::corrupt(0, 1, "header without its newline"));
        }
        //= spec/mirror.md#m7-torn-final-record
        //# On open, a final segment that does not end in `\n` (after at least a complete
        //# header) is a **torn append**: the reader MUST report it (`Decoded::torn_len`), and
        //# the queue MUST cut the file to the end of the last complete record and fsync it
        //# before writing anything else.
        // M7: a final segment without its newline is an append whose fsync never returned.
        Ok(Decoded {
            state: self.state,
            records: self.records,
            valid_len: self.valid_len,
            torn_len: self.partial.len() as u64,
            version: self.version,
        })
    }

    /// One complete line, without its newline.
    fn line(&mut self, line: &[u8]) -> Result<()> {
        self.records += 1;
        let (offset, number) = (self.valid_len, self.records);
        let at = |reason: String| Error::corrupt(offset, number, reason);
        let json = checked_json(line).map_err(at)?;
        if number == 1 {
            //= spec/mirror.md#m2-header-and-version
            //# The first record MUST be the header `{"format":"parkline-mirror","version":3}`.
            self.version = check_header(json).map_err(at)?;
        } else {
            let record = read_record(json, self.version, &self.state).map_err(at)?;
            self.state.apply(record).map_err(at)?;
        }
        self.valid_len += line.len() as u64 + 1;
        Ok(())
    }
}

/// A complete version 2 `park` or `dead` line at the start of `bytes`, spelled as parkline
/// writes it and with the right checksum: its record and its length without the newline.
/// `None` for anything else, which [`LogDecoder::line`] then reads, or rejects with its reason;
/// for a line this accepts, `line` would give the same record.
fn fast_line(bytes: &[u8], unescaped: &mut String) -> Option<(Record, usize)> {
    let prefix = bytes.get(..9)?;
    if prefix[8] != b' ' {
        return None;
    }
    let stored = hex_checksum(&prefix[..8])?;
    let (record, json_len) = park_or_dead_prefix(&bytes[9..], unescaped)?;
    let end = 9 + json_len;
    if bytes.get(end) != Some(&b'\n') || crc32fast::hash(&bytes[9..end]) != stored {
        return None;
    }
    Some((record, end))
}

/// The record `json` holds, in a file of `version`, resolved against `state`: a `park` or
/// `dead` record as parkline writes it by the fast path; anything else of version 3 by serde's
/// derived code, of versions 2 and 1 by their derived enums.
fn read_record(
    json: &[u8],
    version: u64,
    state: &MirrorState,
) -> std::result::Result<Record, String> {
    let json_error = |e: serde_json::Error| format!("json error: {e}");
    //= spec/mirror.md#m2-header-and-version
    //# A new version gets a new number; a reader of version N MAY read older versions.
    if version == VERSION_OLDEST {
        return serde_json::from_slice::<RecordV1>(json)
            .map(Record::from)
            .map_err(json_error);
    }
    if let Some(record) = park_or_dead(json) {
        return Ok(record);
    }
    if version == 2 {
        //= spec/mirror.md#m14-upgrade-from-versions-1-and-2
        //# A reader MUST read a version 2 file (this document's format with seq lists written as plain
        //# arrays, a snapshot's in-flight batch written as `park` records of its items, each with its
        //# handed minus the batch's attempt, before a `batch` record at the stored attempt, and no
        //# `close`, `discard`, `flight` or cap) with the same transition.
        return serde_json::from_slice::<RecordV2>(json)
            .map(Record::from)
            .map_err(json_error);
    }
    serde_json::from_slice::<RecordV3>(json)
        .map_err(json_error)?
        .resolve(state)
}

/// The JSON of one line, after checking its checksum (M1).
pub(crate) fn checked_json(line: &[u8]) -> std::result::Result<&[u8], String> {
    //= spec/mirror.md#m1-record-lines
    //# A reader MUST reject a complete line (one ending in `\n`) whose checksum is missing, not 8
    //# lowercase hex digits, or different from the JSON's.
    if line.len() < 10 || line[8] != b' ' {
        return Err("not a record: expected `<8 hex digits> <json>`".to_owned());
    }
    let (crc, json) = (&line[..8], &line[9..]);
    let stored =
        hex_checksum(crc).ok_or_else(|| "checksum is not 8 lowercase hex digits".to_owned())?;
    let actual = crc32fast::hash(json);
    if stored != actual {
        return Err(format!(
            "checksum mismatch: stored {stored:08x}, computed {actual:08x}"
        ));
    }
    Ok(json)
}

/// The value of 8 lowercase hex digits, or `None`.
#[inline]
fn hex_checksum(digits: &[u8]) -> Option<u32> {
    // Without a branch per digit: a CRC's digits are digits or letters at random.
    let (mut value, mut hex) = (0u32, true);
    for &digit in digits {
        let is_digit = digit.wrapping_sub(b'0') < 10;
        let is_letter = digit.wrapping_sub(b'a') < 6;
        hex &= is_digit | is_letter;
        value = value << 4 | u32::from((digit & 0x0f) + 9 * u8::from(is_letter));
    }
    hex.then_some(value)
}

/// The header's version, when this build reads it (M2, M14).
pub(crate) fn check_header(json: &[u8]) -> std::result::Result<u64, String> {
    //= spec/mirror.md#m2-header-and-version
    //# A reader MUST reject a file whose first record is not a header with format
    //# `parkline-mirror`, and a file whose version it does not know (this document is version 3;
    //# this build also reads versions 1 and 2, M14), with the version in the error.
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("header json error: {e}"))?;
    let format = value.get("format").and_then(serde_json::Value::as_str);
    if format != Some(FORMAT) {
        return Err(format!("not a parkline mirror (header format {format:?})"));
    }
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(version) if (VERSION_OLDEST..=VERSION).contains(&version) => Ok(version),
        //= spec/mirror.md#m2-header-and-version
        //# A build MUST refuse a mirror of a newer version than it writes, changing nothing: a
        //# daemon rolled back to an older build cannot open the mirrors a newer build wrote.
        Some(other) => Err(format!(
            "unknown mirror version {other} (this build reads versions {VERSION_OLDEST} to {VERSION})"
        )),
        None => Err("header has no version".to_owned()),
    }
}
