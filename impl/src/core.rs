//! The sans-I/O core: a deterministic state that turns the daemon's inputs (park, boundary,
//! settle) into records to persist, and advances only once the driver says they are durable.
//!
//! The core never touches storage; [`crate::Queue`] writes its records through
//! [`crate::Storage`] and then calls [`Core::commit`].

use std::collections::BTreeSet;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::mirror::{GroupItem, MirrorState, Record};
use crate::types::{
    Attempt, Batch, BatchId, Budget, Item, Outcome, RequestId, Seq, Settlement, split,
};

/// The durable state plus what only this life knows.
#[derive(Clone, Debug)]
pub(crate) struct Core {
    /// What the mirror holds (after every committed record).
    pub(crate) state: MirrorState,
    /// True once the in-flight batch was handed over in this life; a batch recovered from the
    /// file starts as not handed.
    handed: bool,
    /// The bytes of the lines the state holds: a lower bound of its snapshot's length, kept
    /// without a pass over the state, so a settle decides cheaply that no compaction is due.
    line_bytes: u64,
    pub(crate) config: Config,
}

/// What the driver must persist, and what the daemon gets once it is durable. One record at
/// most, so the driver can check it against the current state before writing it (a second
/// record would have to be checked against a state that does not exist yet).
#[derive(Debug)]
pub(crate) struct Step<T> {
    pub(crate) record: Option<Record>,
    pub(crate) value: T,
}

impl Core {
    pub(crate) fn new(state: MirrorState, config: Config) -> Self {
        let items = state
            .parked
            .iter()
            .chain(&state.dead_letters)
            .chain(state.in_flight.iter().flat_map(|batch| &batch.items));
        let line_bytes = items.map(|item| item.line.len() as u64).sum();
        Core {
            state,
            handed: false,
            line_bytes,
            config,
        }
    }

    /// A lower bound of the length of this state's snapshot (the tests check the tracking).
    #[cfg(test)]
    pub(crate) fn snapshot_bytes_floor(&self) -> u64 {
        self.line_bytes
    }

    /// A lower bound of the length of the snapshot of the state after `record` (planned from
    /// this state) is committed, in O(record) rather than O(state). M12 decides on the state
    /// after the settle: the floor of the state before it still counts the lines the settle
    /// delivers, so a settle that empties a big batch would never compact.
    pub(crate) fn snapshot_bytes_floor_after(&self, record: &Record) -> u64 {
        self.line_bytes
            .saturating_add(self.added_line_bytes(record))
            .saturating_sub(self.dropped_line_bytes(record))
    }

    fn added_line_bytes(&self, record: &Record) -> u64 {
        match record {
            Record::Park { line, .. } | Record::Dead { line, .. } => line.len() as u64,
            Record::Parks { items, .. } => items.iter().map(|item| item.line.len() as u64).sum(),
            _ => 0,
        }
    }

    /// The bytes of the lines a settle record delivers (they leave the state).
    fn dropped_line_bytes(&self, record: &Record) -> u64 {
        let Record::Settle { delivered, .. } = record else {
            return 0;
        };
        let Some(batch) = &self.state.in_flight else {
            return 0;
        };
        let items = batch.items.iter();
        if delivered.is_sorted() {
            // A planned settle lists its seqs in item order, which is seq order (D17): one merge
            // walk, no set built (at 10,000 lines the set was 15 % of a boundary).
            named_in_order(&batch.items, delivered)
                .filter(|(_, named)| *named)
                .map(|(item, _)| item.line.len() as u64)
                .sum()
        } else {
            let delivered: BTreeSet<&Seq> = delivered.iter().collect();
            items
                .filter(|item| delivered.contains(&item.seq))
                .map(|item| item.line.len() as u64)
                .sum()
        }
    }

    /// D3: a line is one line; it is never rewritten to fit, so one with `\n` (or longer than
    /// `line_bytes_max`) is refused. `which` names the line in the error.
    fn check_line(&self, which: &str, line: &str) -> Result<()> {
        if line.contains('\n') {
            return Err(Error::new(
                ErrorKind::InvalidLine,
                format!("{which} contains a newline"),
            ));
        }
        if line.len() > self.config.line_bytes_max {
            return Err(Error::new(
                ErrorKind::InvalidLine,
                format!(
                    "{which} has {} bytes, more than line_bytes_max {}",
                    line.len(),
                    self.config.line_bytes_max
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn park(&self, request: RequestId, line: &str) -> Result<Step<Seq>> {
        self.check_line(&format!("line of request {request}"), line)?;
        // M6: u64::MAX is never a seq (no next seq would follow it), so a counter there means
        // the mirror has no seq left; refusing writes nothing and leaves the handle usable.
        let seq = self.state.next_seq;
        if seq.0 == u64::MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!("no seq left for request {request}: the next seq is u64::MAX"),
            ));
        }
        Ok(Step {
            record: Some(Record::Park {
                seq,
                request,
                line: line.to_owned(),
                failures: 0,
                handed: 0,
            }),
            value: seq,
        })
    }

    /// D22: every line of the group in one `parks` record, or none of them.
    pub(crate) fn park_all(&self, lines: &[(RequestId, &str)]) -> Result<Step<Vec<Seq>>> {
        if lines.is_empty() {
            return Ok(Step {
                record: None,
                value: Vec::new(),
            });
        }
        for (i, (request, line)) in lines.iter().enumerate() {
            self.check_line(&format!("line {i} of the group (request {request})"), line)?;
        }
        // M6: the group's seqs are consecutive; the last one must leave a next seq.
        let first = self.state.next_seq;
        let last = u64::try_from(lines.len() - 1)
            .ok()
            .and_then(|extra| first.0.checked_add(extra))
            .filter(|last| *last != u64::MAX);
        let Some(last) = last else {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!(
                    "no {} seqs left from seq {first} for the group",
                    lines.len()
                ),
            ));
        };
        let items = lines
            .iter()
            .map(|(request, line)| GroupItem {
                request: *request,
                line: (*line).to_owned(),
            })
            .collect();
        Ok(Step {
            record: Some(Record::Parks { seq: first, items }),
            value: (first.0..=last).map(Seq).collect(),
        })
    }

    /// D21: the named dead letters back to the parked list, in one `redrive` record.
    pub(crate) fn redrive(&self, seqs: &[Seq]) -> Result<Step<Vec<Seq>>> {
        let mut sorted = seqs.to_vec();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::new(
                ErrorKind::NotDead,
                format!("seq {} is named twice in the redrive", pair[0]),
            ));
        }
        let dead = &self.state.dead_letters;
        if let Some(seq) = sorted
            .iter()
            .find(|seq| dead.binary_search_by_key(*seq, |item| item.seq).is_err())
        {
            return Err(Error::new(
                ErrorKind::NotDead,
                format!("seq {seq} is not a dead letter; nothing was redriven"),
            ));
        }
        Ok(Step {
            record: (!sorted.is_empty()).then(|| Record::Redrive {
                seqs: sorted.clone(),
            }),
            value: sorted,
        })
    }

    /// D21: every dead letter back to the parked list.
    pub(crate) fn redrive_all(&self) -> Result<Step<Vec<Seq>>> {
        let seqs: Vec<Seq> = self
            .state
            .dead_letters
            .iter()
            .map(|item| item.seq)
            .collect();
        self.redrive(&seqs)
    }

    pub(crate) fn boundary(&self, budget: Budget) -> Result<Step<Option<Batch>>> {
        if let Some(batch) = &self.state.in_flight {
            if self.handed {
                return Err(in_flight_error(batch.id));
            }
            // D10: a batch recovered from a previous life goes first, same id, items and
            // remaining, attempt + 1, persisted before it is handed over (M3).
            let mut repeat = batch.clone();
            // D10: a repeat shows an attempt one higher; at u32::MAX there is none, and handing
            // the batch over with the same attempt would make two hand-overs indistinguishable.
            let Some(attempt) = batch.attempt.0.checked_add(1) else {
                return Err(Error::new(
                    ErrorKind::Exhausted,
                    format!(
                        "batch {} was handed over {} times: no higher attempt is left",
                        batch.id, batch.attempt
                    ),
                ));
            };
            repeat.attempt = Attempt(attempt);
            for item in &mut repeat.items {
                item.handed = handed_once_more(item)?;
            }
            return Ok(Step {
                record: Some(Record::Attempt {
                    batch: batch.id,
                    attempt: repeat.attempt,
                }),
                value: Some(repeat),
            });
        }
        let parked = &self.state.parked;
        if parked.is_empty() {
            return Ok(Step {
                record: None,
                value: None,
            });
        }
        // M6: u64::MAX is never a batch id, as for seqs.
        if self.state.next_batch.0 == u64::MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                "no batch id left: the next batch id is u64::MAX",
            ));
        }
        // D1, D11: every line parked now, split by the pure function.
        let k = split(parked, budget);
        let mut items = parked[..k].to_vec();
        // D20: seen counts the items an earlier batch handed over; this hand-over is counted in
        // the batch record, before the batch is returned.
        let seen = items.iter().filter(|item| item.handed > 0).count();
        for item in &mut items {
            item.handed = handed_once_more(item)?;
        }
        let batch = Batch {
            id: self.state.next_batch,
            attempt: Attempt(1),
            items,
            remaining: parked.len() - k,
            seen,
        };
        let record = Record::Batch {
            id: batch.id,
            attempt: batch.attempt,
            seqs: batch.items.iter().map(|item| item.seq).collect(),
            remaining: batch.remaining,
        };
        Ok(Step {
            record: Some(record),
            value: Some(batch),
        })
    }

    pub(crate) fn settle(&self, id: BatchId, outcomes: &[Outcome]) -> Result<Step<Settlement>> {
        let batch = match &self.state.in_flight {
            Some(batch) if batch.id == id && self.handed => batch,
            Some(batch) if batch.id == id => {
                return Err(Error::new(
                    ErrorKind::UnknownBatch,
                    format!(
                        "batch {id} was recovered from the mirror and not handed over yet; call boundary first"
                    ),
                ));
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::UnknownBatch,
                    format!("batch {id} is not the batch in flight"),
                ));
            }
        };
        check_settle(batch, id, outcomes)?;
        let mut settlement = Settlement::default();
        for (item, outcome) in batch.items.iter().zip(outcomes) {
            match outcome {
                Outcome::Delivered => settlement.delivered.push(item.seq),
                // D8: the failure that reaches failures_max moves the item to the dead letters.
                // A parked item has at most u32::MAX - 1 failures (M6), so this cannot saturate.
                Outcome::Failed if item.failures.saturating_add(1) >= self.config.failures_max => {
                    settlement.dead.push(item.seq)
                }
                Outcome::Failed => settlement.failed.push(item.seq),
            }
        }
        Ok(Step {
            record: Some(Record::Settle {
                batch: id,
                delivered: settlement.delivered.clone(),
                failed: settlement.failed.clone(),
                dead: settlement.dead.clone(),
            }),
            value: settlement,
        })
    }

    /// Advances the state by a record the driver checked with [`MirrorState::check`] against
    /// this very state and then made durable.
    pub(crate) fn commit(&mut self, record: &Record) {
        self.line_bytes += self.added_line_bytes(record);
        self.line_bytes = self
            .line_bytes
            .saturating_sub(self.dropped_line_bytes(record));
        self.state.apply_checked(record);
    }

    /// The batch just returned by `boundary` was handed to the daemon.
    pub(crate) fn handed_over(&mut self) {
        self.handed = true;
    }

    /// The in-flight batch was settled.
    pub(crate) fn settled(&mut self) {
        self.handed = false;
    }
}

/// D19, M6: the hand-over count of `item` after one more hand-over; at `u64::MAX` there is none,
/// and the boundary fails like every exhausted counter (nothing written, not poisoned).
fn handed_once_more(item: &Item) -> Result<u64> {
    item.handed.checked_add(1).ok_or_else(|| {
        Error::new(
            ErrorKind::Exhausted,
            format!(
                "seq {} was handed over {} times: no higher hand-over count is left",
                item.seq, item.handed
            ),
        )
    })
}

fn in_flight_error(id: BatchId) -> Error {
    Error::new(
        ErrorKind::BatchInFlight,
        format!("batch {id} was handed over and is not settled yet"),
    )
}

fn check_settle(batch: &Batch, id: BatchId, outcomes: &[Outcome]) -> Result<()> {
    if batch.id != id {
        return Err(Error::new(
            ErrorKind::UnknownBatch,
            format!("batch {id} is not the batch in flight"),
        ));
    }
    if outcomes.len() != batch.items.len() {
        return Err(Error::new(
            ErrorKind::OutcomeCount,
            format!(
                "batch {id} has {} items but settle got {} outcomes",
                batch.items.len(),
                outcomes.len()
            ),
        ));
    }
    Ok(())
}

/// Each of `items` with whether `seqs` names it, for both in seq order: one merge walk.
pub(crate) fn named_in_order<'a>(
    items: &'a [Item],
    seqs: &'a [Seq],
) -> impl Iterator<Item = (&'a Item, bool)> + 'a {
    let mut rest = seqs;
    items.iter().map(move |item| {
        while let [first, tail @ ..] = rest {
            if *first >= item.seq {
                break;
            }
            rest = tail;
        }
        (item, rest.first() == Some(&item.seq))
    })
}
