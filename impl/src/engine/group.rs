//! The one park planner (D3, D16, D22): the parks of many callers, queued while one leader
//! writes, turned into one record with an answer for each caller. A `Queue::park` or
//! `park_all` is a group of one unit (RocksDB's write thread: a write alone is a group of one).
//! Sans-I/O, like the core it reads.

use std::collections::BTreeMap;

use crate::engine::core::Core;
use crate::error::{Error, ErrorKind, Result};
use crate::line::Line;
use crate::mirror::{GroupItem, Record};
use crate::types::{Parked, RequestId, Seq};

/// One caller's part of a group: a `park` (one line), or a `park_all` that stays all or none.
#[derive(Clone, Debug)]
pub(crate) struct Unit {
    pub(crate) lines: Vec<(RequestId, Line)>,
    /// A `park_all`: its lines are refused or parked together, with consecutive seqs.
    pub(crate) whole: bool,
}

impl Unit {
    /// A `park`'s unit.
    pub(crate) fn one(request: RequestId, line: &str) -> Unit {
        Unit {
            lines: vec![(request, Line::from(line))],
            whole: false,
        }
    }

    /// A `park_all`'s unit.
    pub(crate) fn whole(lines: &[(RequestId, &str)]) -> Unit {
        Unit {
            lines: lines
                .iter()
                .map(|(request, line)| (*request, Line::from(*line)))
                .collect(),
            whole: true,
        }
    }

    /// The bytes of its lines: what a group of units is bounded by.
    pub(crate) fn bytes(&self) -> usize {
        self.lines
            .iter()
            .fold(0usize, |sum, (_, line)| sum.saturating_add(line.len()))
    }
}

/// The group being planned: the seqs given so far, and the requests they answer.
struct Plan<'a> {
    core: &'a Core,
    next: Seq,
    items: Vec<GroupItem>,
    planned: BTreeMap<RequestId, (Seq, Line)>,
    /// Whether a `park_all` gave the record a line.
    whole: bool,
}

/// Every unit's answer (in the order given), and the one record that parks every new line, in
/// the units' order with consecutive seqs, parked at `now`: a `park` record for one line of a
/// `park`, a `parks` record for more, or for any line of a `park_all`. A unit refused (a bad
/// line, a conflicting or dead request, no seq left) writes nothing and leaves the others' lines
/// in the record.
pub(crate) fn plan(
    core: &Core,
    units: &[Unit],
    now: u64,
) -> (Vec<Result<Vec<Parked>>>, Option<Record>) {
    let mut plan = Plan {
        core,
        next: core.state.next_seq,
        items: Vec::new(),
        planned: BTreeMap::new(),
        whole: false,
    };
    let answers = units
        .iter()
        .map(|unit| {
            if unit.whole {
                plan.whole(&unit.lines)
            } else {
                let (request, line) = &unit.lines[0];
                plan.one(*request, line).map(|parked| vec![parked])
            }
        })
        .collect();
    let first = core.state.next_seq;
    //= spec/delivery.md#d24-times
    //# Each park MUST record the time it parked the line, from the queue's clock.
    let record = match plan.items.len() {
        0 => None,
        //= spec/delivery.md#d3-items-verbatim
        //# Each item MUST keep the request id given at park.
        1 if !plan.whole => plan.items.pop().map(|item| Record::Park {
            seq: first,
            request: item.request,
            line: item.line,
            failures: 0,
            handed: 0,
            at: Some(now),
        }),
        _ => Some(Record::Parks {
            seq: first,
            at: Some(now),
            items: plan.items,
        }),
    };
    (answers, record)
}

impl Plan<'_> {
    /// A `park`'s answer (D3): a bad line refused, a line the mirror holds or remembers
    /// answered as it stands, a request another unit of this group parks held by it (the same
    /// line gets its seq, another is `RequestConflict`), else the next seq.
    fn one(&mut self, request: RequestId, line: &Line) -> Result<Parked> {
        self.core
            .check_line(&format!("line of request {request}"), line)?;
        if let Some(known) = self.core.known(request, line)? {
            return Ok(known);
        }
        if let Some(answer) = self.planned_answer(request, line) {
            return answer.map(Parked::Held);
        }
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# A counter (`next` record, or the value after the last record) MAY be `u64::MAX`: it is
        //# **exhausted**.
        //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
        //# Then `park` (for the seq) and a `boundary` that would create a batch (for the batch id)
        //# MUST fail with `Exhausted`, write nothing and leave the handle usable (not poisoned,
        //# M10); a `boundary` with nothing parked still returns none, and a recovered batch is
        //# still handed over.
        // M6: u64::MAX is never a seq (no next seq would follow it), so a counter there means
        // the mirror has no seq left; refusing writes nothing and leaves the handle usable.
        if self.next.0 == u64::MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!("no seq left for request {request}: the next seq is u64::MAX"),
            ));
        }
        self.give(&[(request, line.clone())])
            .map(|seqs| Parked::Held(seqs[0]))
    }

    /// A `park_all`'s answer (D22): its lines checked together, each answered as a park of it
    /// alone would be, and a line whose request another unit of this group parks held by it:
    /// its seq for the same line, else the whole unit is `RequestConflict`. The unit's new
    /// lines get consecutive seqs.
    fn whole(&mut self, lines: &[(RequestId, Line)]) -> Result<Vec<Parked>> {
        let borrowed: Vec<(RequestId, &str)> = lines
            .iter()
            .map(|(request, line)| (*request, line.as_str()))
            .collect();
        let mut answers = self.core.classify(&borrowed)?;
        let mut new = Vec::new();
        for (i, (request, line)) in lines.iter().enumerate() {
            if answers[i].is_some() {
                continue;
            }
            match self.planned_answer(*request, line) {
                Some(answer) => answers[i] = Some(Parked::Held(answer?)),
                None => new.push(i),
            }
        }
        let fresh: Vec<(RequestId, Line)> = new.iter().map(|i| lines[*i].clone()).collect();
        let seqs = self.give(&fresh)?;
        self.whole |= !seqs.is_empty();
        for (i, seq) in new.iter().zip(seqs) {
            answers[*i] = Some(Parked::Held(seq));
        }
        Ok(answers.into_iter().flatten().collect())
    }

    /// What this group already gives `request`: its seq for the same line, else a conflict.
    fn planned_answer(&self, request: RequestId, line: &Line) -> Option<Result<Seq>> {
        let (seq, planned) = self.planned.get(&request)?;
        Some(if planned == line {
            Ok(*seq)
        } else {
            Err(conflict(&format!(
                "request {request} already has another line in this write (seq {seq}); one \
                 completion line per request"
            )))
        })
    }

    /// Consecutive seqs for `lines`, added to the record; `Exhausted` when the last would reach
    /// `u64::MAX` (M6).
    fn give(&mut self, lines: &[(RequestId, Line)]) -> Result<Vec<Seq>> {
        //= spec/delivery.md#d17-order
        //# `park` MUST assign seqs that strictly increase and are never reused within a mirror
        //# (when none is left, it fails with `Exhausted` rather than wrap, D10 "Attempt ceiling").
        let count = u64::try_from(lines.len()).unwrap_or(u64::MAX);
        // The last seq given is `after - 1`, never `u64::MAX`; `after` may be: exhausted.
        let Some(after) = self.next.0.checked_add(count) else {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!("no {count} seqs left from seq {} for the group", self.next),
            ));
        };
        let seqs: Vec<Seq> = (self.next.0..after).map(Seq).collect();
        for ((request, line), seq) in lines.iter().zip(&seqs) {
            self.planned.insert(*request, (*seq, line.clone()));
            self.items.push(GroupItem {
                request: *request,
                line: line.clone(),
            });
        }
        self.next = Seq(after);
        debug_assert_eq!(
            self.items.len() as u64,
            self.next.0 - self.core.state.next_seq.0
        );
        Ok(seqs)
    }
}

fn conflict(why: &str) -> Error {
    Error::new(ErrorKind::RequestConflict, why.to_owned())
}
