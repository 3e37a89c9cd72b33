//! The sans-I/O core: a deterministic state that turns the daemon's inputs (park, boundary,
//! settle) into records to persist, and advances only once the driver says they are durable.
//!
//! The core never touches storage; `Queue` writes its records through
//! `Storage` and then calls [`Core::commit`].

use std::collections::{BTreeSet, HashMap};

use crate::config::Config;
use crate::engine::by_request::ByRequest;
use crate::error::{Error, ErrorKind, Result};

use crate::mirror::{MirrorState, Record};
use crate::ops::request::{self as ops, OpId, Verb};
use crate::types::{
    Attempt, Batch, BatchId, Budget, Item, Life, Outcome, Parked, Remembered, RequestId, Seq,
    Settlement, split,
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
    /// The seqs of the items the state holds (parked, in flight or dead), by request: a retried
    /// park finds its line without a pass over the state (D3).
    by_request: ByRequest,
    /// The newest seq of each request in the remembered window (D3), so a park that is not a
    /// retry learns it without a pass over the window. It may name entries the window has
    /// forgotten since (each hit is checked against the window); it is rebuilt when it grows to
    /// twice the window.
    remembered: HashMap<RequestId, Seq>,
    pub(crate) config: Config,
}

/// What the mirror holds for a request already (D3).
enum Held<'a> {
    /// Parked or in flight.
    Live(&'a Item),
    /// A dead letter.
    Dead(&'a Item),
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
        let mut line_bytes = 0;
        let mut by_request = ByRequest::with_capacity(
            state.parked.len()
                + state.dead_letters.len()
                + state
                    .in_flight
                    .as_ref()
                    .map_or(0, |batch| batch.items.len()),
        );
        for item in items {
            line_bytes += item.line.len() as u64;
            by_request.insert(item.request, item.seq);
        }
        let mut core = Core {
            state,
            handed: false,
            line_bytes,
            by_request,
            remembered: HashMap::new(),
            config,
        };
        core.index_window();
        core
    }

    /// Rebuilds the index of the remembered window from the window.
    fn index_window(&mut self) {
        self.remembered.clear();
        for entry in &self.state.remembered {
            self.remembered.insert(entry.request, entry.seq);
        }
    }

    /// How many requests the remembered window's index holds, stale ones included.
    #[cfg(test)]
    pub(crate) fn remembered_index_len(&self) -> usize {
        self.remembered.len()
    }

    /// The remembered window's entry for `request`, if the window still holds one.
    fn remembered_entry(&self, request: RequestId) -> Option<&Remembered> {
        self.remembered.get(&request)?;
        self.state.remembered(request)
    }

    /// D3: what the mirror already answers for a park of `line` for `request` (held, or
    /// remembered as delivered or discarded), an error for another line or a dead letter, and
    /// `None` for a new line.
    pub(crate) fn known(&self, request: RequestId, line: &str) -> Result<Option<Parked>> {
        if let Some(held) = self.repeated_park(request, line) {
            return held.map(|seq| Some(Parked::Held(seq)));
        }
        let Some(entry) = self.remembered_entry(request) else {
            return Ok(None);
        };
        //= spec/delivery.md#d3-items-verbatim
        //# A park for a request the remembered window holds MUST write nothing: with the same
        //# line (the same CRC-64) it MUST answer how that line ended (delivered, with its seq
        //# and batch, or discarded, with its seq), and with another line it MUST fail with
        //# `RequestConflict`.
        if entry.crc == crate::crc64::crc64(line.as_bytes()) {
            return Ok(Some(entry.answer()));
        }
        Err(Error::new(
            ErrorKind::RequestConflict,
            format!(
                "request {request}'s line left the mirror (seq {}, {:?}) and this is another \
                 line; one completion line per request",
                entry.seq, entry.end
            ),
        ))
    }

    /// The item of `request` the state holds (parked, in flight or dead), if any.
    pub(crate) fn find(&self, request: RequestId) -> Option<&Item> {
        self.held(request).map(|held| match held {
            Held::Live(item) | Held::Dead(item) => item,
        })
    }

    /// The item of `request` the state holds, the lowest seq if a file holds several.
    fn held(&self, request: RequestId) -> Option<Held<'_>> {
        let seq = self.by_request.lowest(request)?;
        fn find(items: &[Item], seq: Seq) -> Option<&Item> {
            items
                .binary_search_by_key(&seq, |item| item.seq)
                .ok()
                .map(|at| &items[at])
        }
        let in_flight = self
            .state
            .in_flight
            .as_ref()
            .map_or(&[][..], |b| &b.items[..]);
        if let Some(item) = find(&self.state.parked, seq).or_else(|| find(in_flight, seq)) {
            return Some(Held::Live(item));
        }
        // Dead letters are in the order they died, not in seq order.
        let dead = self.state.dead_letters.iter().find(|item| item.seq == seq);
        debug_assert!(dead.is_some(), "an indexed seq is held");
        dead.map(Held::Dead)
    }

    /// D3: what a park of `line` for `request` gets when the mirror holds the request already:
    /// the seq it has (same line), or an error (another line, or a dead letter). `None` when the
    /// request is not held.
    fn repeated_park(&self, request: RequestId, line: &str) -> Option<Result<Seq>> {
        //= spec/delivery.md#d3-items-verbatim
        //# A park for a request whose line the mirror holds (parked or in flight) MUST write
        //# nothing and return the seq that line has when the line is the same, and fail with
        //# `RequestConflict` when it is another; a request whose line is a dead letter MUST fail
        //# with `RequestDead`, writing nothing.
        Some(match self.held(request)? {
            Held::Live(item) if item.line == line => Ok(item.seq),
            Held::Live(item) => Err(Error::new(
                ErrorKind::RequestConflict,
                format!(
                    "request {request} already has another line parked or in flight (seq {}); \
                     one completion line per request",
                    item.seq
                ),
            )),
            Held::Dead(item) => Err(Error::new(
                ErrorKind::RequestDead,
                format!(
                    "request {request}'s line is a dead letter (seq {}); redrive it to deliver \
                     it again",
                    item.seq
                ),
            )),
        })
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

    /// The dead letters a discard record names (they leave the state).
    fn discarded<'a>(&'a self, seqs: &'a [Seq]) -> impl Iterator<Item = &'a Item> + 'a {
        seqs.iter().filter_map(|seq| {
            let dead = &self.state.dead_letters;
            dead.binary_search_by_key(seq, |item| item.seq)
                .ok()
                .map(|at| &dead[at])
        })
    }

    /// The bytes of the lines a settle record delivers (they leave the state).
    fn dropped_line_bytes(&self, record: &Record) -> u64 {
        if let Record::Discard { seqs, .. } = record {
            return self
                .discarded(seqs)
                .map(|item| item.line.len() as u64)
                .sum();
        }
        let Record::Settle { delivered, .. } = record else {
            return 0;
        };
        let Some(batch) = &self.state.in_flight else {
            return 0;
        };
        // A planned settle lists its seqs in item order, which is seq order (D17): one merge
        // walk, no set built (at 10,000 lines the set was 15 % of a boundary).
        named_in_order(&batch.items, delivered)
            .filter(|(_, named)| *named)
            .map(|(item, _)| item.line.len() as u64)
            .sum()
    }

    /// D3: a line is one line; it is never rewritten to fit, so one with `\n` (or longer than
    /// `line_bytes_max`) is refused. `which` names the line in the error.
    pub(crate) fn check_line(&self, which: &str, line: &str) -> Result<()> {
        //= spec/delivery.md#d3-items-verbatim
        //# A line that cannot be carried verbatim in the turn text (it contains `\n`, or exceeds
        //# the configured `line_bytes_max`) MUST be refused by `park` with an error (`InvalidLine`)
        //# and MUST NOT be altered; a refused park parks nothing.
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

    /// D22, D3: what the mirror already answers for each line of a group (`None`: a new line),
    /// after the group's own checks: every line valid, the bytes within `group_bytes_max`, no
    /// request named twice. An error refuses the whole group.
    pub(crate) fn classify(&self, lines: &[(RequestId, &str)]) -> Result<Vec<Option<Parked>>> {
        //= spec/delivery.md#d22-group-park
        //# `Queue::park_all(lines)` MUST park every new line of the slice, in slice order with
        //# consecutive seqs, in one record (one append and one fsync, whatever the number of
        //# lines), or none of them: a bad line (D3) MUST reject the whole call and write nothing,
        //# naming the first bad line's index; a slice with no new line writes nothing; seqs that
        //# would reach `u64::MAX` give `Exhausted`.
        //= spec/delivery.md#d22-group-park
        //# The index of the first bad line MUST also be a value of the error
        //# (`Error::line_index`).
        for (i, (request, line)) in lines.iter().enumerate() {
            self.check_line(&format!("line {i} of the group (request {request})"), line)
                .map_err(|e| e.with_line_index(i))?;
        }
        //= spec/delivery.md#d22-group-park
        //# A group whose lines hold more than `group_bytes_max` bytes together MUST be refused
        //# with `GroupTooLarge`, writing nothing.
        let bytes = lines
            .iter()
            .fold(0usize, |sum, (_, line)| sum.saturating_add(line.len()));
        if bytes > self.config.group_bytes_max {
            return Err(Error::new(
                ErrorKind::GroupTooLarge,
                format!(
                    "the group's {} lines hold {bytes} bytes, more than group_bytes_max {}",
                    lines.len(),
                    self.config.group_bytes_max
                ),
            ));
        }
        //= spec/delivery.md#d22-group-park
        //# A group that names one request twice MUST fail with `RequestConflict` and write
        //# nothing; otherwise each line is answered as a park of it alone would be (D3): a held
        //# line its seq, a remembered one how it ended, a new one parked, and a conflict or a
        //# dead letter refuses the whole group.
        let mut named = BTreeSet::new();
        if !lines.iter().all(|(request, _)| named.insert(*request)) {
            return Err(Error::new(
                ErrorKind::RequestConflict,
                "the group names one request twice",
            ));
        }
        lines
            .iter()
            .map(|(request, line)| self.known(*request, line))
            .collect()
    }

    /// D21: the named dead letters back to the parked list, in one `redrive` record.
    pub(crate) fn redrive(&self, seqs: &[Seq]) -> Result<Step<Vec<Seq>>> {
        //= spec/delivery.md#d21-dead-letter-redrive
        //# A seq that is not a dead letter, or is named twice, MUST make the call fail with
        //# `NotDead`, write nothing and not poison.
        //= spec/delivery.md#d21-dead-letter-redrive
        //# `Queue::redrive(seqs)` and `Queue::redrive_all()` MUST move the named dead letters (all
        //# of them) back to the parked list in one durable record (one append, one fsync), each at
        //# its seq's place in the parked list (which stays in seq order), with `failures` reset to
        //# 0 and `handed` kept.
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
                op: None,
                change: None,
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

    /// D8: the dead letters `seqs` leave the mirror for good, in one record.
    pub(crate) fn discard(&self, seqs: &[Seq]) -> Result<Step<Vec<Seq>>> {
        let mut sorted = seqs.to_vec();
        sorted.sort_unstable();
        //= spec/delivery.md#d8-dead-letter
        //# `Queue::discard(seqs)` MUST remove the named dead letters from the mirror in one durable
        //# record, and MUST fail with `NotDead`, writing nothing, when a seq is not a dead letter
        //# or is named twice.
        let named_twice = sorted.windows(2).any(|pair| pair[0] == pair[1]);
        let not_dead = sorted.iter().find(|seq| {
            self.state
                .dead_letters
                .binary_search_by_key(*seq, |item| item.seq)
                .is_err()
        });
        if let Some(seq) = not_dead.filter(|_| !named_twice) {
            return Err(Error::new(
                ErrorKind::NotDead,
                format!("seq {seq} is not a dead letter: nothing discarded"),
            ));
        }
        if named_twice {
            return Err(Error::new(
                ErrorKind::NotDead,
                "a seq is named twice: nothing discarded",
            ));
        }
        Ok(Step {
            record: (!sorted.is_empty()).then(|| Record::Discard {
                seqs: sorted.clone(),
                op: None,
                change: None,
            }),
            value: sorted,
        })
    }

    /// M17: the one record that applies the operator request `entry` (which the window does
    /// not hold) and names it: a `redrive` or `discard` record with `op`, or an `op` record when
    /// it moves nothing or is refused. `None` for a malformed entry without an id, which cannot
    /// be answered.
    pub(crate) fn apply_request(&self, entry: &ops::Entry) -> Option<Record> {
        let request = match entry {
            ops::Entry::Request(request) => request,
            ops::Entry::Malformed { id, why } => {
                // A malformed request's verb is unknown; it is answered as a redrive refused.
                return id
                    .as_ref()
                    .map(|id| refused(id, Verb::Redrive, None, why.clone()));
            }
        };
        debug_assert!(ops::applied(&self.state.ops, &request.id).is_none());
        let change = Some(request.change());
        if let Some(why) = self.other_life(request) {
            return Some(refused(&request.id, request.verb, change, why));
        }
        let seqs = self.named(&request.which);
        let planned = match request.verb {
            Verb::Redrive => self.redrive(&seqs),
            Verb::Discard => self.discard(&seqs),
        };
        let op = Some(request.id.clone());
        Some(match planned {
            Err(e) => refused(&request.id, request.verb, change, e.to_string()),
            Ok(Step {
                record: Some(Record::Redrive { seqs, .. }),
                ..
            }) => Record::Redrive { seqs, op, change },
            Ok(Step {
                record: Some(Record::Discard { seqs, .. }),
                ..
            }) => Record::Discard { seqs, op, change },
            Ok(_) => Record::Op {
                op: request.id.clone(),
                verb: request.verb,
                change,
                moved: Some(0),
                refused: None,
            },
        })
    }

    /// M17: why `request` is not for this mirror's life, if it is not.
    fn other_life(&self, request: &ops::Request) -> Option<String> {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A request that names another life than the mirror's (or a life, or none, where the
        //# mirror names none, or one) MUST be refused (answered `refused`, nothing changed): it
        //# was meant for another session of the name.
        if request.life == self.state.life {
            return None;
        }
        let life = |life: Option<Life>| life.map_or_else(|| "none".to_owned(), |l| l.to_string());
        Some(format!(
            "another session: the request names session life {}, this mirror's is {}",
            life(request.life),
            life(self.state.life)
        ))
    }

    /// The seqs of the dead letters `which` names.
    fn named(&self, which: &ops::Which) -> Vec<Seq> {
        let dead = &self.state.dead_letters;
        match which {
            ops::Which::Seqs(seqs) => seqs.clone(),
            ops::Which::All => dead.iter().map(|item| item.seq).collect(),
            ops::Which::DiedBefore(time) => dead
                .iter()
                .filter(|item| item.died_at.is_some_and(|died| died < *time))
                .map(|item| item.seq)
                .collect(),
        }
    }

    pub(crate) fn boundary(&self, budget: Budget, now: u64) -> Result<Step<Option<Batch>>> {
        //= spec/delivery.md#d2-no-waiting-window
        //# A boundary MUST deliver at once what is parked when it occurs; it MUST NOT wait, sleep
        //# or poll for more lines.
        //= spec/delivery.md#d18-no-silent-duplicate
        //# A line MUST be handed over again only as part of a repeat of its batch (D10), as a retry
        //# after it failed (D7), or in a new batch after the repeat bound closed its batch (D10).
        if let Some(batch) = &self.state.in_flight {
            if self.handed {
                return Err(in_flight_error(batch.id));
            }
            //= spec/delivery.md#d10-repeat-recognisable
            //# A batch persisted and not settled before a crash MUST, at the first boundary of the
            //# next life, be re-persisted and handed over again with the same batch id, the same
            //# items (same seqs, same lines, same order), the same `remaining`, an attempt one
            //# higher than the attempt stored for it, and the repeat mark, both in the header (D4)
            //# and on every notified event (D5).
            // D10: a batch recovered from a previous life goes first, same id, items and
            // remaining, attempt + 1, persisted before it is handed over (M3).
            //= spec/delivery.md#d7-failure-isolation
            //# A crash is not a failure: it MUST NOT change `failures`.
            //= spec/delivery.md#d11-deterministic-split
            //# A repeat MUST reuse its stored membership and `remaining` whatever budget is passed
            //# to the boundary that hands it over again, until the repeat bound closes it (D10).
            //= spec/delivery.md#d20-seen-before-in-the-header
            //# `seen` is fixed when the batch is created: a repeat MUST carry the same `seen`, so
            //# its turn text still equals the original's except for `ATTEMPT` and `REPEAT` (D10).
            //= spec/delivery.md#d10-repeat-recognisable
            //# A recovered batch whose attempt is `repeats_max` or more MUST NOT be handed over
            //# again: the boundary MUST write a `close` record instead, after which the batch's
            //# items are parked again, or its single item is a dead letter, and the boundary goes
            //# on as one with no recovered batch.
            if batch.attempt.0 >= self.config.repeats_max {
                return Ok(Step {
                    record: Some(Record::Close {
                        batch: batch.id,
                        at: Some(now),
                    }),
                    value: None,
                });
            }
            let mut repeat = batch.clone();
            // D10: a repeat shows an attempt one higher; at u32::MAX there is none, and handing
            // the batch over with the same attempt would make two hand-overs indistinguishable.
            //= spec/delivery.md#d10-repeat-recognisable
            //# It MUST NOT hand the batch over with an attempt that is not one higher.
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
            //= spec/delivery.md#d19-hand-over-count-per-item
            //# The count MUST be raised by the record that allows the hand-over, before `boundary`
            //# returns the batch, so that a crash between the hand-over and the settle still counts
            //# a hand-over the parent may have seen.
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
        //= spec/delivery.md#d8-dead-letter
        //# MUST NOT be delivered again automatically,
        //= spec/delivery.md#d8-dead-letter
        //# MUST NOT be counted in `remaining`,
        let parked = &self.state.parked;
        //= spec/delivery.md#d2-no-waiting-window
        //# A boundary with nothing parked and no recovered batch MUST return no batch.
        if parked.is_empty() {
            return Ok(Step {
                record: None,
                value: None,
            });
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# A counter (`next` record, or the value after the last record) MAY be `u64::MAX`: it is
        //# **exhausted**.
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# Then `park` (for the seq) and a `boundary` that would create a batch (for the batch id)
        //# MUST fail with `Exhausted`, write nothing and leave the handle usable (not poisoned,
        //# M10); a `boundary` with nothing parked still returns none, and a recovered batch is
        //# still handed over.
        // M6: u64::MAX is never a batch id, as for seqs.
        if self.state.next_batch.0 == u64::MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                "no batch id left: the next batch id is u64::MAX",
            ));
        }
        //= spec/delivery.md#d1-batch-at-the-boundary
        //# At a boundary that delivers a new batch, the batch MUST consist of lines that were
        //# parked at that moment, and only those, taken from the front of the parked list as
        //# `split` (D11) decides; with a budget that admits them all and no cap set, it MUST be
        //# every parked line, in ONE turn.
        //= spec/delivery.md#d1-batch-at-the-boundary
        //# A boundary MUST NOT deliver fewer lines than `split` returns, or than the cap when that
        //# is fewer (pop-all, not pop-front).
        //= spec/delivery.md#d11-deterministic-split
        //# The membership of a new batch MUST be `k = min(split(parked, budget), cap)` items, the
        //# first `k` of the parked list, where `split` is this pure function:
        // D1, D11: every line parked now, split by the pure function.
        //= spec/delivery.md#d11-deterministic-split
        //# While a cap is set, a new batch MUST hold at most `cap` items.
        let cap = self
            .state
            .cap
            .map_or(usize::MAX, |cap| usize::try_from(cap).unwrap_or(usize::MAX));
        let k = split(parked, budget).min(cap);
        let mut items = parked[..k].to_vec();
        // D20: seen counts the items an earlier batch handed over; this hand-over is counted in
        // the batch record, before the batch is returned.
        //= spec/delivery.md#d20-seen-before-in-the-header
        //# A batch MUST carry `seen`, the number of its items that an earlier batch handed over
        //# (their count was above 0 before this batch's record), and the header MUST say it (`S
        //# seen before`, D4).
        let seen = items.iter().filter(|item| item.handed > 0).count();
        //= spec/delivery.md#d19-hand-over-count-per-item
        //# The count MUST be raised by the record that allows the hand-over, before `boundary`
        //# returns the batch, so that a crash between the hand-over and the settle still counts a
        //# hand-over the parent may have seen.
        for item in &mut items {
            item.handed = handed_once_more(item)?;
        }
        let batch = Batch {
            //= spec/delivery.md#d10-repeat-recognisable
            //# Batch ids of new batches MUST increase.
            id: self.state.next_batch,
            attempt: Attempt(1),
            items,
            //= spec/delivery.md#d2-no-waiting-window
            //# A line parked after the boundary (while its batch is being persisted, handed over,
            //# notified or settled) MUST NOT join that batch and MUST NOT be counted in its
            //# `remaining`; it is delivered at a later boundary.
            //= spec/delivery.md#d11-deterministic-split
            //# `remaining` MUST be `parked.len() - k`.
            //= spec/delivery.md#d13-trailer-count
            //# It MUST NOT count lines parked later (D2) or dead letters (D8).
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

    pub(crate) fn settle(
        &self,
        id: BatchId,
        outcomes: &[Outcome],
        now: u64,
    ) -> Result<Step<Settlement>> {
        //= spec/delivery.md#d9-no-loss
        //# In particular, items MUST NOT leave the mirror before their batch is settled (no clear
        //# before hand-over), and a batch MUST NOT be settled `Delivered` on the daemon's behalf.
        let batch = match &self.state.in_flight {
            Some(batch) if batch.id == id && self.handed => batch,
            Some(batch) if batch.id == id => {
                return Err(Error::new(
                    ErrorKind::UnknownBatch,
                    format!(
                        //= spec/delivery.md#d10-repeat-recognisable
                        //# A recovered batch MUST be handed over again (as a repeat) before it can
                        //# be settled.
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
        //= spec/delivery.md#d6-per-request-independence
        //# The delivery state of an item (parked, in flight, delivered, dead letter; its
        //# `failures`) MUST depend only on its own outcomes and on crashes; the outcome of one item
        //# MUST NOT drop, block, delay to a later boundary, or change the failure count of another
        //# item.
        //= spec/delivery.md#d6-per-request-independence
        //# `settle` MUST take one outcome per item, and each item MUST end in exactly one of
        //# `Settlement::{delivered, failed, dead}`.
        for (item, outcome) in batch.items.iter().zip(outcomes) {
            match outcome {
                Outcome::Delivered => settlement.delivered.push(item.seq),
                //= spec/delivery.md#d8-dead-letter
                //# An item whose failure count reaches `failures_max` (a positive integer, default
                //# 3) at a settle MUST move to the dead letters in that same settle.
                // D8: the failure that reaches failures_max moves the item to the dead letters.
                // A parked item has at most u32::MAX - 1 failures (M6), so this cannot saturate.
                Outcome::Failed if item.failures.saturating_add(1) >= self.config.failures_max => {
                    settlement.dead.push(item.seq)
                }
                //= spec/delivery.md#d7-failure-isolation
                //# At settle, a failed item whose failure count stays below `failures_max` MUST
                //# stay parked with the same seq and `failures + 1`, and MUST be offered again at a
                //# later boundary in seq order (so it precedes lines parked after it); the
                //# delivered items of the same batch MUST leave the mirror.
                Outcome::Failed => settlement.failed.push(item.seq),
            }
        }
        Ok(Step {
            record: Some(Record::Settle {
                batch: id,
                delivered: settlement.delivered.clone(),
                failed: settlement.failed.clone(),
                dead: settlement.dead.clone(),
                at: Some(now),
            }),
            value: settlement,
        })
    }

    /// Advances the state by a record the driver checked with [`MirrorState::check`] against
    /// this very state and then made durable.
    pub(crate) fn commit(&mut self, record: &Record) {
        let floor_after = self.snapshot_bytes_floor_after(record);
        self.commit_with_floor(record, floor_after);
    }

    /// [`commit`](Self::commit), given [`snapshot_bytes_floor_after`](Self::snapshot_bytes_floor_after)
    /// of `record`, which the driver computed for M12's decision: computing it twice was a fifth
    /// of a 10,000-line settle's instructions.
    pub(crate) fn commit_with_floor(&mut self, record: &Record, floor_after: u64) {
        debug_assert_eq!(floor_after, self.snapshot_bytes_floor_after(record));
        self.line_bytes = floor_after;
        self.index(record);
        self.state.apply_checked(record);
        self.index_remembered(record);
    }

    /// Keeps the remembered window's index in step with `record`, just applied: the entries it
    /// added are the window's newest.
    /// (A `done` record is written only by snapshots, which the core never commits.)
    fn index_remembered(&mut self, record: &Record) {
        let added = match record {
            Record::Settle { delivered, .. } => delivered.len(),
            Record::Discard { seqs, .. } => seqs.len(),
            _ => return,
        };
        let window = &self.state.remembered;
        for entry in window.iter().rev().take(added) {
            self.remembered.insert(entry.request, entry.seq);
        }
        if self.remembered.len() > 2 * window.len() + 64 {
            self.index_window();
        }
    }

    /// Keeps `by_request` in step with `record`, applied next: parks add, delivered items leave.
    fn index(&mut self, record: &Record) {
        let mut add = |request: RequestId, seq: Seq| self.by_request.insert(request, seq);
        match record {
            Record::Park { seq, request, .. } | Record::Dead { seq, request, .. } => {
                add(*request, *seq);
            }
            Record::Parks { seq, items, .. } => {
                // The group's seqs are consecutive and below u64::MAX (M6).
                for (offset, item) in (0u64..).zip(items) {
                    add(item.request, Seq(seq.0 + offset));
                }
            }
            Record::Discard { seqs, .. } => {
                let gone: Vec<(RequestId, Seq)> = self
                    .discarded(seqs)
                    .map(|item| (item.request, item.seq))
                    .collect();
                for (request, seq) in gone {
                    self.by_request.remove(request, seq);
                }
            }
            Record::Settle { delivered, .. } => {
                let Some(batch) = &self.state.in_flight else {
                    return;
                };
                // A planned settle names its seqs in item order: one merge walk (D17).
                for (item, named) in named_in_order(&batch.items, delivered) {
                    if named {
                        self.by_request.remove(item.request, item.seq);
                    }
                }
            }
            _ => {}
        }
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
    //= spec/delivery.md#d19-hand-over-count-per-item
    //# A hand-over count is never wrapped or saturated: a boundary that would raise an item's count
    //# past `u64::MAX` MUST fail with `Exhausted`, write nothing and not poison (as the counters of
    //# `mirror.md` M6).
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

/// M17: the `op` record answering request `id` refused, for `why`.
fn refused(id: &OpId, verb: Verb, change: Option<u64>, why: String) -> Record {
    Record::Op {
        op: id.clone(),
        verb,
        change,
        moved: None,
        refused: Some(why),
    }
}

fn in_flight_error(id: BatchId) -> Error {
    Error::new(
        ErrorKind::BatchInFlight,
        format!("batch {id} was handed over and is not settled yet"),
    )
}

fn check_settle(batch: &Batch, id: BatchId, outcomes: &[Outcome]) -> Result<()> {
    //= spec/delivery.md#d6-per-request-independence
    //# `settle` MUST take one outcome per item, and each item MUST end in exactly one of
    //# `Settlement::{delivered, failed, dead}`.
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

/// Each of `items` with whether `seqs` names it, for both in seq order: one merge walk. Every
/// caller passes a planned settle's seqs, which `settle` lists in item order (D17).
pub(crate) fn named_in_order<'a>(
    items: &'a [Item],
    seqs: &'a [Seq],
) -> impl Iterator<Item = (&'a Item, bool)> + 'a {
    debug_assert!(seqs.is_sorted(), "seqs not in seq order");
    debug_assert!(
        items.is_sorted_by_key(|item| item.seq),
        "items not in seq order"
    );
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
