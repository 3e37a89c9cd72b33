//! `park_concurrently` in a run: the members park from one thread each through one
//! `SharedQueue` on the simulated disk (a real group commit), and the answers are checked
//! against the reference run on every order in which the members could have joined. The
//! reference is sequential; group commit is allowed any order of joining (D17: the seqs follow
//! it), and within that order it must answer as parks one after another do (D3, D16, D22). So
//! the crate passes when some order gives every member the answer the crate gave it, and the
//! state after the op is the reference's after that order.
//!
//! With a fault inside the op (a power loss at a sync, an I/O error, a full disk, a lost name),
//! the members of the group that failed and of every later one fail (`Io`, then `Poisoned`) and
//! the others keep their answers: some order must give every member that did not fail its
//! answer, and the recovered state must be the reference's after a prefix of that order that
//! holds every member acknowledged with a seq.

use std::collections::BTreeMap;

use parkline::{Line, RequestId, Seq};
use parkline_model::delivery::Reference;

use super::{Fault, Run, park_member, state_of_crate};
use crate::delivery::op::{MEMBERS_MAX, park_concurrently};
use crate::delivery::view::{Member, is_state_of};
use crate::simdisk::Full;

/// Every order of `0..n` (`n!` of them).
fn orders(n: usize) -> Vec<Vec<usize>> {
    let mut all: Vec<Vec<usize>> = vec![Vec::new()];
    for _ in 0..n {
        let mut longer = Vec::with_capacity(all.len() * n);
        for order in &all {
            for i in (0..n).filter(|i| !order.contains(i)) {
                let mut next = order.clone();
                next.push(i);
                longer.push(next);
            }
        }
        all = longer;
    }
    all
}

/// The members of `items` parked on `reference` one after another in `order`: each member's
/// answer, by item.
fn park_in_order(
    reference: &mut Reference,
    items: &[(u64, String)],
    order: &[usize],
) -> Vec<Member> {
    let mut answers = vec![Member::Error(String::new()); items.len()];
    for &i in order {
        let (request, line) = &items[i];
        answers[i] = park_member(reference, *request, line);
    }
    answers
}

/// The reference after the members of `items` parked from `before` in the first order of
/// joining whose answers are `got`.
///
/// # Errors
///
/// What differed, when no order gives the answers `got`.
fn serialization(
    before: &Reference,
    items: &[(u64, String)],
    got: &[Member],
) -> Result<Reference, String> {
    let mut first = None;
    for order in orders(items.len()) {
        let mut reference = before.clone();
        let expected = park_in_order(&mut reference, items, &order);
        if expected == got {
            return Ok(reference);
        }
        first.get_or_insert((order, expected));
    }
    let (order, expected) = first.unwrap_or_default();
    Err(format!(
        "D16 group commit: the members answered {got:?}, which no order of joining gives (in \
         the order {order:?} the reference answers {expected:?})"
    ))
}

impl Run {
    /// `QueueOp::ParkConcurrently` on both sides, with the fault armed for it, if any.
    pub(super) fn park_concurrently(&mut self, items: &[(u64, String)]) -> Result<(), String> {
        if items.len() > MEMBERS_MAX {
            return Err(format!(
                "park_concurrently with {} members; the check tries every order of at most \
                 {MEMBERS_MAX}",
                items.len()
            ));
        }
        let fault = self.fault.take();
        let before = self.reference.clone();
        self.next_seq_before = self.queue()?.queue().state().next_seq;
        let lost = fault.and_then(|fault| self.arm(fault));
        let syncs_before = self.disk.stats().syncs;
        self.disk.yield_at_sync(true);
        let got = park_concurrently(self.queue()?, items, |_, _| {});
        self.disk.yield_at_sync(false);
        let syncs = self.disk.stats().syncs - syncs_before;
        let failed = got.iter().any(Member::is_failure);
        self.disarm(lost, failed)
            .map_err(|m8| format!("M8: the concurrent parks answered {got:?} {m8}"))?;
        self.report.concurrent += 1;
        if failed {
            return self.recover_from_failed_members(fault, &before, items, &got);
        }
        //= spec/delivery.md#d16-durable-park
        //= type=test
        //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive
        //# while another's write and fsync are in progress MUST be written
        //# together, in one append and one fsync, once that fsync returns, each caller with its own
        //# answer: a refused line or request fails its caller only.
        // D17: in a group the seqs follow the order of joining, whichever it was.
        self.reference = serialization(&before, items, &got)?;
        let new = self.observe_members(items, &got)?;
        if new > 1 && syncs < new as u64 {
            self.report.grouped += 1;
        }
        self.expect_state("after the concurrent parks")?;
        self.check_invariants()?;
        if let Some(Fault::PowerLoss { torn, .. }) = fault {
            // The power goes out right after the acknowledged parks.
            self.reference.crash();
            self.power_loss(torn)?;
            self.expect_state("after a crash right after the concurrent parks")?;
            self.check_invariants()?;
        }
        Ok(())
    }

    /// Some members failed for the fault: the handle refuses work, the daemon reopens (in the
    /// same power cycle, or after the power loss), and the recovered state must be the
    /// reference's after a prefix of an order that agrees with every member that did not fail.
    fn recover_from_failed_members(
        &mut self,
        fault: Option<Fault>,
        before: &Reference,
        items: &[(u64, String)],
        got: &[Member],
    ) -> Result<(), String> {
        let (torn, reopen) = match fault {
            Some(Fault::PowerLoss { torn, .. }) => (torn, false),
            Some(Fault::IoError { reopen, .. }) => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                (0, reopen)
            }
            Some(Fault::DiskFull(Full::Temp)) => {
                return Err(format!(
                    "M10: with only the temp file out of space the concurrent parks failed \
                     ({got:?}); a park writes no temp file"
                ));
            }
            Some(Fault::DiskFull(_) | Fault::NameLost { .. }) => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                (0, true)
            }
            None => {
                return Err(format!(
                    "M10: the concurrent parks failed ({got:?}) with no fault injected"
                ));
            }
        };
        if reopen {
            self.queue = None;
            self.handed = None;
            self.reopen("after an I/O error, in the same power cycle")?;
        } else {
            self.power_loss(torn)?;
            self.report.crashes_in_op += 1;
        }
        let recovered = state_of_crate(self.queue()?);
        self.lines.clear();
        for order in orders(items.len()) {
            let mut reference = before.clone();
            let expected = park_in_order(&mut reference, items, &order);
            let agrees = expected
                .iter()
                .zip(got)
                .all(|(expected, got)| got == expected || got.is_failure());
            if !agrees {
                continue;
            }
            // The shortest prefix holding every member acknowledged with a seq, then longer ones:
            // a failed member may have taken effect (its record reached the file) unacknowledged.
            let acknowledged = order
                .iter()
                .rposition(|&i| matches!(got[i], Member::Parked(_)))
                .map_or(0, |last| last + 1);
            let mut reference = before.clone();
            park_in_order(&mut reference, items, &order[..acknowledged]);
            for k in acknowledged..=order.len() {
                if k > acknowledged {
                    let (request, line) = &items[order[k - 1]];
                    park_member(&mut reference, *request, line);
                }
                let mut crashed = reference.clone();
                crashed.crash();
                if is_state_of(&recovered, &crashed) {
                    self.reference = crashed;
                    self.observe_members(items, got)?;
                    return self.check_invariants();
                }
            }
        }
        Err(format!(
            "D9, D16: after a fault inside the concurrent parks (answers {got:?}), the recovered \
             state {recovered:?} is the reference's after no prefix of an order of joining that \
             holds every acknowledged member"
        ))
    }

    /// The members acknowledged with a seq join the ghost (D9 holds them from now on); a seq
    /// given before the op must hold the same request and line (D3), and the new ones must
    /// follow every seq acknowledged before (D17), one line per seq. Returns how many new seqs
    /// were given.
    fn observe_members(
        &mut self,
        items: &[(u64, String)],
        got: &[Member],
    ) -> Result<usize, String> {
        let mut new: BTreeMap<Seq, (u64, &str)> = BTreeMap::new();
        for ((request, line), answer) in items.iter().zip(got) {
            if let Member::Remembered { seq, ended } = answer {
                self.check_remembered_park(*seq, *ended, *request, line)?;
                self.report.remembered_parks += 1;
                continue;
            }
            let Member::Parked(seq) = answer else {
                continue;
            };
            if *seq < self.next_seq_before {
                self.check_repeated_park(*seq, *request, line)?;
                self.report.repeated_parks += 1;
                continue;
            }
            if let Some(other) = new.insert(*seq, (*request, line))
                && other != (*request, line.as_str())
            {
                return Err(format!(
                    "D3, D16: seq {seq} answered two members with different lines: {other:?} \
                     and {:?}",
                    (request, line)
                ));
            }
        }
        if let (Some(first), Some(last)) = (new.keys().next(), self.ghost.acked.keys().next_back())
            && first <= last
        {
            return Err(format!(
                "D17 order: a concurrent park returned seq {first} after seq {last}"
            ));
        }
        let count = new.len();
        for (seq, (request, line)) in new {
            self.ghost
                .acked
                .insert(seq, (RequestId(request), Line::from(line)));
            self.ghost.parked_at.insert(seq, self.clock.now());
        }
        self.report.parks += count;
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(lines: &[(u64, &str)]) -> Vec<(u64, String)> {
        lines.iter().map(|(r, l)| (*r, (*l).to_owned())).collect()
    }

    fn parked(seq: u64) -> Member {
        Member::Parked(Seq(seq))
    }

    fn error(kind: &str) -> Member {
        Member::Error(kind.to_owned())
    }

    /// Every order of joining is accepted, and only the answers some order gives: the check of
    /// a concurrent op can fail.
    #[test]
    fn a_serialization_is_any_order_of_joining_and_nothing_else() {
        let mut before = Reference::new(2);
        before.park(1, "a");
        let members = items(&[(2, "b"), (3, "c"), (3, "bad\nline"), (1, "a"), (1, "x")]);
        let answer = |b, c| {
            vec![
                parked(b),
                parked(c),
                error("InvalidLine"),
                parked(1),
                error("RequestConflict"),
            ]
        };
        for got in [answer(2, 3), answer(3, 2)] {
            let after = serialization(&before, &members, &got).expect("an order gives it");
            assert_eq!(after.mirror().next_seq, 4);
        }
        let wrong = [
            // Two members with one seq, a gap, a bad line accepted, a conflict accepted, a
            // retry given a new seq.
            answer(2, 2),
            answer(2, 4),
            vec![
                parked(2),
                parked(3),
                parked(4),
                parked(1),
                error("RequestConflict"),
            ],
            vec![
                parked(2),
                parked(3),
                error("InvalidLine"),
                parked(1),
                parked(4),
            ],
            vec![
                parked(2),
                parked(3),
                error("InvalidLine"),
                parked(4),
                error("RequestConflict"),
            ],
        ];
        for got in wrong {
            let refused = serialization(&before, &members, &got).expect_err("no order gives it");
            assert!(refused.starts_with("D16 group commit"), "{refused}");
        }
    }

    #[test]
    fn orders_are_every_permutation() {
        assert_eq!(orders(0), vec![Vec::<usize>::new()]);
        assert_eq!(orders(3).len(), 6);
        let mut four = orders(4);
        four.sort();
        four.dedup();
        assert_eq!(four.len(), 24);
    }
}
