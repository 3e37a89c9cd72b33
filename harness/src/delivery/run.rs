//! One delivery check's run: the crate over the simulated disk beside the reference, an op at a
//! time, with the faults an op may carry (power loss at a sync, I/O error) and the comparison of
//! what each side returned and holds after it.

mod concurrent;
mod invariants;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parkline::mirror::MirrorState;
use parkline::{Attempt, BatchId, Line, Queue, RequestId, Seq};
use parkline_model::delivery::Reference;

use super::check::{Report, Setup};
use super::clock::{Frozen, OpClock};
use super::craft::Crafted;
use super::m12::{m12_bound, m12_rest_bound};
use super::op::{Handed, MIRROR, Op, QueueOp};
use super::view::{
    Effect, EndedIn, Member, SameLines, answer_of_ref, hand_over_of_ref, is_state_of, item_of_ref,
    parked_all, settlement_of_ref, state_is_ref, state_of_ref,
};
use crate::known_bad::{Driver, KnownBad, Seamed, seamed};
use crate::simdisk::{Full, Lost, SimDisk};

/// A fault armed for the next op.
#[derive(Clone, Copy, Debug)]
enum Fault {
    PowerLoss {
        n: u64,
        torn: u64,
    },
    /// `reopen`: the daemon reopens in the same power cycle instead of losing power.
    IoError {
        n: u64,
        reopen: bool,
    },
    /// Appends refused for a full disk (ENOSPC) during the op; the daemon reopens after it.
    DiskFull(Full),
    /// The mirror's name taken from its file before the op (M8); the daemon reopens after it.
    NameLost {
        unlink: bool,
    },
}

/// The queue a check drives: over the simulated disk (behind the storage seam of a known-bad
/// behaviour, if it has one), through the driver (broken, if the behaviour says so).
type Driven = Driver<Seamed<SimDisk>>;

/// The crate's state, as its queue holds it (by construction what its file decodes to).
pub(super) fn state_of_crate(driver: &Driven) -> MirrorState {
    driver.queue().state().clone()
}

/// What the harness knows independently of the reference (for the direct invariants).
#[derive(Clone, Debug, Default)]
struct Ghost {
    /// Every park that returned `Ok`: seq -> (request, line).
    acked: BTreeMap<Seq, (RequestId, Line)>,
    /// Seqs settled `Delivered`.
    delivered: BTreeSet<Seq>,
    /// Seqs an acknowledged discard removed: D8's operator ended their keeping.
    discarded: BTreeSet<Seq>,
    /// Every batch id handed over: its membership, remaining and highest attempt seen.
    batches: BTreeMap<BatchId, (Vec<Seq>, usize, Attempt)>,
    /// The op (the harness clock's reading, D24) at which each acknowledged new line was parked.
    parked_at: BTreeMap<Seq, u64>,
}

/// What one side returned for a queue op.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Returned {
    Done(Effect),
    /// `park` refused the line (D3).
    Refused,
    /// The error's kind.
    Error(String),
}

pub(super) struct Run {
    setup: Setup,
    pub(super) disk: SimDisk,
    /// The time the crate reads: the index of the op being applied (D24).
    pub(super) clock: Arc<OpClock>,
    queue: Option<Driven>,
    reference: Reference,
    ghost: Ghost,
    /// The id and size of the batch the last boundary of this life returned, if unsettled.
    handed: Handed,
    fault: Option<Fault>,
    /// Boundaries called with a batch in flight since the last settle: each may have appended
    /// an `attempt` record, which M12 allows until the next settle.
    repeats_since_settle: u64,
    /// A compaction may have been abandoned for a full disk (M10): M12's bound is deferred until
    /// the next settle or redrive without a fault, which must bring the file back within it.
    deferring: bool,
    /// The last op was a settle, redrive or discard that wrote its record without a fault.
    clean_settle: bool,
    /// The last op was an idle call that returned without a fault: M12's bound at rest holds.
    clean_idle: bool,
    /// The crate's next seq before the last op: a park that returns a lower one repeated (D3).
    next_seq_before: Seq,
    /// The lines the crate and the reference were found to hold alike in this life.
    lines: SameLines,
    pub(super) report: Report,
}

/// Opens (creates or recovers) the mirror on `disk` the way `setup` says: behind the storage seam
/// and through the driver of its known-bad behaviour, if any, with `clock`.
fn open(disk: &SimDisk, setup: &Setup, clock: &Arc<OpClock>) -> parkline::Result<Driven> {
    let storage = seamed(disk.clone(), setup.known_bad);
    if setup.known_bad == Some(KnownBad::ForgetAtReopen) && disk.live(MIRROR).is_some() {
        // The seam of `forget-at-reopen`: an open with no window empties it, and the one below
        // gives it its size back, empty.
        let mut forgetful = setup.config();
        forgetful.delivered_memory = 0;
        drop(Queue::with_storage(storage.clone(), MIRROR, forgetful)?);
    }
    let queue = Queue::with_storage(storage, MIRROR, setup.config())?;
    let queue = if setup.known_bad == Some(KnownBad::FrozenClock) {
        queue.with_clock(Arc::new(Frozen))
    } else {
        queue.with_clock(clock.clone())
    };
    Ok(Driver::new(queue, setup.known_bad))
}

impl Run {
    pub(super) fn new(setup: &Setup) -> Result<Self, String> {
        if let Some(bad) = setup.known_bad.filter(|bad| bad.is_read()) {
            return Err(format!(
                "{bad} is a read-side behaviour, not a delivery one"
            ));
        }
        let disk = SimDisk::new();
        let clock = Arc::new(OpClock::default());
        let queue =
            open(&disk, setup, &clock).map_err(|e| format!("creating the mirror failed: {e}"))?;
        Ok(Self {
            setup: setup.clone(),
            disk,
            clock,
            queue: Some(queue),
            reference: setup.reference(),
            ghost: Ghost::default(),
            handed: None,
            fault: None,
            repeats_since_settle: 0,
            deferring: false,
            clean_settle: false,
            clean_idle: false,
            next_seq_before: Seq(1),
            lines: SameLines::default(),
            report: Report::default(),
        })
    }

    /// M12 after an op, on the open queue's file (a poisoned handle's memory may lag its file;
    /// the reopen after it is checked instead).
    pub(super) fn check_file_bound(&mut self) -> Result<(), String> {
        let Some(driver) = &self.queue else {
            return Ok(());
        };
        let queue = driver.queue();
        if queue.is_poisoned() {
            return Ok(());
        }
        let len = self.disk.live_len(MIRROR).unwrap_or(0);
        let within = m12_bound(
            len,
            queue.state(),
            self.setup.compact_slack_bytes,
            self.repeats_since_settle,
        );
        let clean_settle = std::mem::take(&mut self.clean_settle);
        if std::mem::take(&mut self.clean_idle) {
            // No fault, so no compaction was deferred: a drained queue is at rest.
            m12_rest_bound(len, queue.state(), self.setup.rest_slack_bytes)?;
        }
        if within.is_ok() {
            // Within the bound: a deferred compaction, if any, has happened.
            self.deferring = false;
            return within;
        }
        if self.deferring && !clean_settle {
            // M12's deferred term: no settle or redrive has been able to compact since.
            return Ok(());
        }
        within
    }

    /// `Op::Craft`: a fresh disk holding the crafted mirror, opened by both sides.
    fn craft(&mut self, crafted: &Crafted) -> Result<(), String> {
        if crafted.failures_max_max {
            self.setup.failures_max = u32::MAX;
        }
        self.fault = None;
        self.handed = None;
        self.repeats_since_settle = 0;
        self.ghost = Ghost::default();
        self.lines.clear();
        self.queue = None;
        self.disk = SimDisk::new();
        let bytes = crafted.bytes();
        self.disk.put_durable(MIRROR, &bytes);
        let reference = Reference::from_mirror(self.setup.failures_max, crafted.mirror())
            .map(|reference| self.setup.tune(reference));
        let opened = open(&self.disk, &self.setup, &self.clock);
        match (reference, opened) {
            (Ok(reference), Ok(queue)) => {
                self.reference = reference;
                self.queue = Some(queue);
                self.report.crafted += 1;
            }
            (Err(_), Err(e)) if e.kind() == parkline::ErrorKind::Corrupt => {
                // M11: the impossible file is left as it was; the run goes on from scratch.
                if self.disk.live(MIRROR).as_deref() != Some(bytes.as_slice()) {
                    return Err("M11: opening a corrupt mirror modified it".to_owned());
                }
                let report = std::mem::take(&mut self.report);
                *self = Run::new(&self.setup)?;
                self.report = report;
                self.report.crafted_corrupt += 1;
                return Ok(());
            }
            (Ok(_), Err(e)) => {
                return Err(format!("M6: the crafted mirror {crafted:?} must open: {e}"));
            }
            (Err(e), Ok(_)) => {
                return Err(format!(
                    "M6: the crafted mirror {crafted:?} must be Corrupt ({e}), it opened"
                ));
            }
            (Err(_), Err(e)) => {
                return Err(format!(
                    "M6: the crafted mirror {crafted:?}: {e}, not Corrupt"
                ));
            }
        }
        self.expect_state("after opening a crafted mirror")?;
        let mirror = crafted.mirror();
        let items = mirror
            .parked
            .iter()
            .chain(mirror.in_flight.iter().flat_map(|batch| &batch.items))
            .chain(&mirror.dead);
        for item in items.map(item_of_ref) {
            self.ghost.acked.insert(item.seq, (item.request, item.line));
        }
        if let Some(batch) = &mirror.in_flight {
            let seqs = batch.seqs().into_iter().map(Seq).collect();
            self.ghost.batches.insert(
                BatchId(batch.id),
                (seqs, batch.remaining, Attempt(batch.attempt)),
            );
        }
        self.check_invariants()
    }

    fn queue(&mut self) -> Result<&mut Driven, String> {
        self.queue
            .as_mut()
            .ok_or_else(|| "internal: no open queue".to_owned())
    }

    pub(super) fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Crash { torn } => {
                self.reference.crash();
                self.power_loss(*torn)?;
                self.expect_state("after a crash between ops")?;
                self.check_invariants()
            }
            Op::CrashAtSync { n, torn } => {
                self.fault = Some(Fault::PowerLoss { n: *n, torn: *torn });
                Ok(())
            }
            Op::IoError { n } => {
                self.fault = Some(Fault::IoError {
                    n: *n,
                    reopen: false,
                });
                Ok(())
            }
            Op::DiskFull { at } => {
                self.fault = Some(Fault::DiskFull(match at {
                    0 => Full::Temp,
                    1 => Full::Log,
                    _ => Full::Both,
                }));
                Ok(())
            }
            Op::IoErrorReopen { n } => {
                self.fault = Some(Fault::IoError {
                    n: *n,
                    reopen: true,
                });
                Ok(())
            }
            Op::NameLost { unlink } => {
                self.fault = Some(Fault::NameLost { unlink: *unlink });
                Ok(())
            }
            Op::RequestFileFifo => {
                self.disk
                    .put_special(&format!("{MIRROR}{}", parkline::ops::SUFFIX));
                self.expect_state("after a FIFO at the request file")
            }
            Op::Restart => {
                let queue = self
                    .queue
                    .take()
                    .ok_or_else(|| "internal: no open queue".to_owned())?;
                drop(queue.into_queue().into_storage());
                self.reopen("after a clean restart")?;
                self.reference.crash();
                self.handed = None;
                self.expect_state("after a clean restart")?;
                self.check_invariants()
            }
            Op::Craft(crafted) => self.craft(crafted),
            Op::ParkMany {
                request,
                line,
                count,
            } => {
                for i in 0..u64::from(*count) {
                    // One line per request (D3): the i-th park answers its own request.
                    let park = QueueOp::Park {
                        request: request + 10 * i,
                        line: line.clone(),
                    };
                    match self.fault.take() {
                        None => self.step(&park)?,
                        Some(fault) => self.step_with_fault(&park, fault)?,
                    }
                }
                Ok(())
            }
            Op::Queue(QueueOp::ParkConcurrently { items }) => self.park_concurrently(items),
            Op::Queue(op) => {
                if matches!(op, QueueOp::Boundary { .. })
                    && self.queue()?.queue().in_flight().is_some()
                {
                    self.repeats_since_settle += 1;
                }
                match self.fault.take() {
                    None => self.step(op),
                    Some(fault) => self.step_with_fault(op, fault),
                }
            }
        }
    }

    /// Apply a queue op on both sides with no fault, compare outputs and state.
    fn step(&mut self, op: &QueueOp) -> Result<(), String> {
        let before = self.state_before(op)?;
        let len_before = self.disk.live_len(MIRROR);
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        if expected != got.without_times() {
            return Err(format!(
                "the crate returned {got:?}, the reference {expected:?}"
            ));
        }
        self.clean_settle = wrote_a_settling_record(&got);
        self.clean_idle = matches!(got, Returned::Done(Effect::Idle));
        if let Returned::Error(kind) = &got
            && let Some(id) = refusal_requirement(kind)
        {
            // An exhausted counter (M6, D10) or a seq that is not dead (D8, D21) refuses the op
            // without writing or poisoning.
            if self.disk.live_len(MIRROR) != len_before {
                return Err(format!("{id}: an op refused as {kind} wrote to the mirror"));
            }
            if self.queue()?.queue().is_poisoned() {
                return Err(format!("{id}: an op refused as {kind} poisoned the handle"));
            }
        }
        self.observe(op, before.as_ref(), &got)?;
        self.expect_state("after the op")?;
        self.check_invariants()
    }

    /// Apply a queue op with a power loss or I/O error armed inside it.
    fn step_with_fault(&mut self, op: &QueueOp, fault: Fault) -> Result<(), String> {
        let before_ref = self.reference.clone();
        let before = self.state_before(op)?;
        let lost = self.arm(fault);
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        let failed = matches!(got, Returned::Error(_)) && !matches!(expected, Returned::Error(_));
        self.disarm(lost, failed)
            .map_err(|m8| format!("M8: {op:?} returned {got:?} {m8}"))?;
        if !failed {
            // The fault was not reached (or the op failed for its own reason on both sides):
            // the op completed and is compared as usual.
            if expected != got.without_times() {
                return Err(format!(
                    "the crate returned {got:?}, the reference {expected:?}"
                ));
            }
            if matches!(fault, Fault::IoError { .. } | Fault::DiskFull(_)) {
                // The op may have abandoned its compaction and appended instead (M10).
                self.deferring = true;
            }
            self.observe(op, before.as_ref(), &got)?;
            self.expect_state("after the op")?;
            self.check_invariants()?;
            if let Fault::PowerLoss { torn, .. } = fault {
                // The power goes out right after the acknowledged op.
                self.reference.crash();
                self.power_loss(torn)?;
                self.expect_state("after a crash right after the op")?;
                self.check_invariants()?;
            }
            return Ok(());
        }
        // The op failed: it was not acknowledged.
        let (torn, reopen) = match fault {
            Fault::PowerLoss { torn, .. } => (torn, false),
            Fault::IoError { reopen, .. } => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                (0, reopen)
            }
            Fault::DiskFull(Full::Temp) => {
                return Err(format!(
                    "M10: with only the temp file out of space, {op:?} failed ({got:?}); a \
                     compaction that cannot write its temp file must be abandoned and the \
                     record appended"
                ));
            }
            Fault::DiskFull(_) => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                // Space comes back and the daemon reopens, in the same power cycle.
                (0, true)
            }
            Fault::NameLost { .. } => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                // The name is back and the daemon reopens, in the same power cycle.
                (0, true)
            }
        };
        let after_ref = self.reference.clone();
        if reopen {
            // M10: the daemon reopens the poisoned handle; the power stays on.
            self.queue = None;
            self.handed = None;
            self.reopen("after an I/O error, in the same power cycle")?;
        } else {
            self.power_loss(torn)?;
            self.report.crashes_in_op += 1;
        }
        let recovered = state_of_crate(self.queue()?);
        let mut before_crashed = before_ref;
        // M4: a boundary that closes a batch (D10) makes the close durable before the new batch.
        let mut closed = before_crashed.clone();
        let closes = closed.close_if_bounded();
        closed.crash();
        before_crashed.crash();
        let mut after_crashed = after_ref;
        after_crashed.crash();
        self.lines.clear();
        if is_state_of(&recovered, &before_crashed) {
            self.reference = before_crashed;
        } else if closes && is_state_of(&recovered, &closed) {
            self.reference = closed;
        } else if is_state_of(&recovered, &after_crashed) {
            self.reference = after_crashed;
            // The op took effect although it was not acknowledged.
            self.observe_unacknowledged(&expected);
        } else {
            return Err(format!(
                "after a power loss or an I/O error inside the op, the recovered state is neither \
                 the state before the op nor after it:\n  recovered {recovered:?}\n  before    {:?}\n  \
                 after     {:?}",
                state_of_ref(&before_crashed),
                state_of_ref(&after_crashed)
            ));
        }
        self.check_invariants()
    }

    /// Arms `fault` on the disk for the next op: the name it took from the mirror, if any, with
    /// the length of the file it named.
    fn arm(&mut self, fault: Fault) -> Option<(Lost, Option<u64>)> {
        match fault {
            Fault::PowerLoss { n, .. } => self.disk.crash_at_sync(Some(n)),
            Fault::IoError { n, .. } => self.disk.fail_at_call(Some(n)),
            Fault::DiskFull(full) => self.disk.set_full(Some(full)),
            Fault::NameLost { unlink } => {
                let lost = self.disk.lose_name(MIRROR, unlink)?;
                let len = self.disk.lost_len(&lost);
                return Some((lost, len));
            }
        }
        None
    }

    /// Disarms every fault after the op, and gives a lost name back. M8: an op that wrote to the
    /// file whose name was taken must have `failed`.
    fn disarm(&mut self, lost: Option<(Lost, Option<u64>)>, failed: bool) -> Result<(), String> {
        self.disk.crash_at_sync(None);
        self.disk.fail_at_call(None);
        self.disk.set_full(None);
        if let Some((lost, len)) = lost {
            // A compaction that renamed a whole snapshot into the name's place dropped the lost
            // file without writing it.
            let grew = matches!(
                (len, self.disk.lost_len(&lost)),
                (Some(before), Some(after)) if before != after
            );
            self.disk.restore_name(&lost);
            if grew && !failed {
                return Err(
                    "after writing to a mirror whose name was taken from it; a write \
                            into a file no name reaches must fail and poison"
                        .to_owned(),
                );
            }
        }
        Ok(())
    }

    /// After an injected I/O error, the handle must refuse further work (M/D16 fail-stop).
    fn expect_fail_stop(&mut self) -> Result<(), String> {
        let queue = self.queue()?;
        match queue.park(RequestId(0), "after an I/O error") {
            Ok(seq) => Err(format!(
                "D16 fail-stop: park after a failed write or fsync returned Ok({seq:?}); the \
                 handle must refuse work until reopened"
            )),
            Err(e) if e.kind() == parkline::ErrorKind::Poisoned => Ok(()),
            Err(e) => Err(format!(
                "D16 fail-stop: park after a failed write or fsync failed with {e} instead of \
                 Poisoned"
            )),
        }
    }

    /// Power loss now: the disk keeps what a real one would, and the queue reopens from it.
    fn power_loss(&mut self, torn: u64) -> Result<(), String> {
        self.queue = None;
        self.disk = match torn {
            0 => self.disk.crash(),
            1 => self.disk.crash_keeping(),
            seed => self.disk.crash_with(seed),
        };
        self.handed = None;
        self.report.crashes += 1;
        self.reopen("after a power loss")
    }

    fn reopen(&mut self, when: &str) -> Result<(), String> {
        self.lines.clear();
        let queue = open(&self.disk, &self.setup, &self.clock)
            .map_err(|e| format!("reopening the mirror {when} failed: {e}"))?;
        self.queue = Some(queue);
        Ok(())
    }

    /// What [`Run::observe`] reads of the crate's state before `op`: all of it for a boundary,
    /// only the in-flight batch for a settle (the rest left empty), nothing for other ops. A
    /// copy of a multi-MB state before every op was a third of a `delivery_ops` fuzz exec.
    fn state_before(&mut self, op: &QueueOp) -> Result<Option<MirrorState>, String> {
        let state = self.queue()?.queue().state();
        Ok(match op {
            QueueOp::Boundary { .. } => Some(state.clone()),
            QueueOp::Settle { .. } | QueueOp::HandOverFailed => Some(MirrorState {
                in_flight: state.in_flight.clone(),
                ..MirrorState::default()
            }),
            QueueOp::Discard { .. } => Some(state.clone()),
            _ => None,
        })
    }

    /// The crate's state must be the reference's.
    fn expect_state(&mut self, when: &str) -> Result<(), String> {
        let driver = self
            .queue
            .as_ref()
            .ok_or_else(|| "internal: no open queue".to_owned())?;
        let got = driver.queue().state();
        if !state_is_ref(got, self.reference.mirror(), &mut self.lines) {
            let expected = state_of_ref(&self.reference);
            return Err(format!(
                "state {when} differs:\n  crate     {got:?}\n  reference {expected:?}"
            ));
        }
        Ok(())
    }

    fn apply_ref(&mut self, op: &QueueOp) -> Returned {
        let done = match op {
            QueueOp::Park { request, line } => {
                if !line_is_valid(line) {
                    return Returned::Refused;
                }
                self.reference
                    .try_park_answer(*request, line)
                    .map(|answer| {
                        let (seq, ended) = answer_of_ref(answer);
                        Effect::Parked { seq, ended }
                    })
            }
            QueueOp::Boundary { budget } => {
                self.reference.boundary(*budget).map(|batch| Effect::Batch {
                    batch: batch.as_ref().map(hand_over_of_ref),
                })
            }
            QueueOp::Settle { .. } | QueueOp::HandOverFailed => {
                let (id, count) = QueueOp::settle_target(self.handed);
                self.reference
                    .settle(id.0, &op.outcomes(count))
                    .map(|settlement| Effect::Settled(settlement_of_ref(&settlement)))
            }
            QueueOp::ParkAll { items } => {
                if !items.iter().all(|(_, line)| line_is_valid(line)) {
                    return Returned::Refused;
                }
                let lines: Vec<(u64, &str)> = items
                    .iter()
                    .map(|(request, line)| (*request, line.as_str()))
                    .collect();
                self.reference
                    .try_park_all_answers(&lines)
                    .map(|answers| parked_all(answers.into_iter().map(answer_of_ref)))
            }
            QueueOp::Redrive { seqs } => {
                let moved = match seqs {
                    Some(seqs) => self.reference.redrive(seqs),
                    None => Ok(self.reference.redrive_all()),
                };
                moved.map(|seqs| Effect::Redriven {
                    seqs: seqs.into_iter().map(Seq).collect(),
                })
            }
            QueueOp::Discard { seqs } => {
                let gone = match seqs {
                    Some(seqs) => self.reference.discard(seqs),
                    None => Ok(self.reference.discard_all()),
                };
                gone.map(|seqs| Effect::Discarded {
                    seqs: seqs.into_iter().map(Seq).collect(),
                })
            }
            // Requests and compaction change no state the reference holds.
            QueueOp::Idle => Ok(Effect::Idle),
            // The members in item order: one of the orders they may join in.
            QueueOp::ParkConcurrently { items } => Ok(Effect::ParkedConcurrently {
                answers: items
                    .iter()
                    .map(|(request, line)| park_member(&mut self.reference, *request, line))
                    .collect(),
            }),
        };
        match done {
            Ok(effect) => Returned::Done(effect),
            Err(e) => Returned::Error(ref_error_name(&e)),
        }
    }

    /// The crate's side of a queue op: the one call the drive protocol makes too. It moves
    /// `handed` (the reference's side, applied first, reads it as it was).
    fn apply_crate(&mut self, op: &QueueOp) -> Result<Returned, String> {
        self.next_seq_before = self.queue()?.queue().state().next_seq;
        let mut handed = self.handed;
        let returned = match op.call(self.queue()?, &mut handed) {
            Ok(effect) => Returned::Done(effect),
            Err(e) if e.kind() == parkline::ErrorKind::InvalidLine => Returned::Refused,
            Err(e) => Returned::Error(crate_error_name(&e)),
        };
        self.handed = handed;
        Ok(returned)
    }

    /// Record an acknowledged op's effect in the ghost and check the op-level invariants.
    fn observe(
        &mut self,
        op: &QueueOp,
        before: Option<&MirrorState>,
        returned: &Returned,
    ) -> Result<(), String> {
        let before_op = || before.ok_or("internal: no state kept before this op");
        match (op, returned) {
            (QueueOp::Park { request, line }, Returned::Done(Effect::Parked { seq, ended })) => {
                self.observe_parked(*seq, *ended, *request, line)?;
            }
            (
                QueueOp::Boundary { budget },
                Returned::Done(Effect::Batch {
                    batch: Some(hand_over),
                }),
            ) => {
                self.check_batch(*budget, before_op()?, hand_over)?;
                self.report.batches += 1;
                if hand_over.batch.is_repeat() {
                    self.report.repeats += 1;
                }
            }
            (QueueOp::Boundary { .. }, Returned::Done(Effect::Batch { batch: None })) => {
                let before = before_op()?;
                let closed = self.closed(before);
                let before = closed.as_ref().unwrap_or(before);
                if !before.parked.is_empty() || before.in_flight.is_some() {
                    return Err(format!(
                        "D1: boundary returned no batch with {} lines parked and in flight {:?}",
                        before.parked.len(),
                        before.in_flight
                    ));
                }
            }
            (QueueOp::ParkAll { items }, Returned::Done(Effect::ParkedAll { seqs, ended })) => {
                if seqs.len() != items.len() || !(ended.is_empty() || ended.len() == seqs.len()) {
                    return Err(format!(
                        "D22 group park: {} lines answered as seqs {seqs:?}, ended {ended:?}",
                        items.len()
                    ));
                }
                for (i, (seq, (request, line))) in seqs.iter().zip(items).enumerate() {
                    let how = ended.get(i).copied().flatten();
                    self.observe_parked(*seq, how, *request, line)?;
                }
            }
            (QueueOp::Park { .. } | QueueOp::Boundary { .. }, Returned::Error(kind))
                if kind == "Exhausted" =>
            {
                self.report.exhausted += 1;
            }
            (
                QueueOp::Settle { .. } | QueueOp::HandOverFailed,
                Returned::Done(Effect::Settled(settlement)),
            ) => {
                self.check_settlement(op, before_op()?, settlement)?;
                self.repeats_since_settle = 0;
                self.report.settles += 1;
            }
            (QueueOp::Discard { seqs: named }, Returned::Done(Effect::Discarded { seqs })) => {
                self.check_discard(named.as_deref(), before_op()?, seqs)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// One line's park answer (D3, D17): a remembered line must be one the ghost saw leave as
    /// `ended`; an older seq a line held with the same request and line; a new seq one above
    /// every seq acknowledged before.
    fn observe_parked(
        &mut self,
        seq: Seq,
        ended: Option<EndedIn>,
        request: u64,
        line: &str,
    ) -> Result<(), String> {
        if let Some(ended) = ended {
            self.check_remembered_park(seq, ended, request, line)?;
            self.report.remembered_parks += 1;
            return Ok(());
        }
        if seq < self.next_seq_before {
            // D3: a repeated park returns the seq its line already has, and only that.
            self.check_repeated_park(seq, request, line)?;
            self.report.repeated_parks += 1;
            return Ok(());
        }
        if let Some(last) = self.ghost.acked.keys().next_back()
            && seq <= *last
        {
            return Err(format!(
                "D17 order: park returned seq {seq} after seq {last}"
            ));
        }
        self.ghost
            .acked
            .insert(seq, (RequestId(request), Line::from(line)));
        self.ghost.parked_at.insert(seq, self.clock.now());
        self.report.parks += 1;
        Ok(())
    }

    /// D3: a park answered from the remembered window names a seq whose line, of the same
    /// request, the ghost saw delivered (in the batch named) or discarded.
    fn check_remembered_park(
        &self,
        seq: Seq,
        ended: EndedIn,
        request: u64,
        line: &str,
    ) -> Result<(), String> {
        // A line parked by an op a crash left unacknowledged is not in `acked`.
        let same = self
            .ghost
            .acked
            .get(&seq)
            .is_none_or(|(r, l)| *r == RequestId(request) && l.as_str() == line);
        let left = match ended {
            EndedIn::Delivered { .. } => self.ghost.delivered.contains(&seq),
            EndedIn::Discarded => self.ghost.discarded.contains(&seq),
        };
        if same && left {
            return Ok(());
        }
        Err(format!(
            "D3: a park of request {request} was answered {ended:?} with seq {seq}, which the \
             harness saw as {:?} (delivered {}, discarded {})",
            self.ghost.acked.get(&seq),
            self.ghost.delivered.contains(&seq),
            self.ghost.discarded.contains(&seq)
        ))
    }

    /// D3: a park that returned an older seq must find that seq held, parked or in flight, with
    /// the same request and line (it may have been parked by an op a crash left unacknowledged);
    /// it is acknowledged from now on.
    fn check_repeated_park(&mut self, seq: Seq, request: u64, line: &str) -> Result<(), String> {
        let queue = self.queue()?.queue();
        let held = queue
            .parked()
            .iter()
            .chain(queue.in_flight().into_iter().flat_map(|batch| &batch.items))
            .find(|item| item.seq == seq)
            .map(|item| (item.request, item.line.clone()));
        match held {
            Some((held_request, held_line))
                if held_request == RequestId(request) && held_line == line =>
            {
                self.ghost.acked.insert(seq, (held_request, held_line));
                Ok(())
            }
            held => Err(format!(
                "D3: a park of request {request} returned the older seq {seq}, which holds \
                 {held:?}"
            )),
        }
    }

    /// An op that was not acknowledged took effect before the power loss: keep the ghost in step.
    fn observe_unacknowledged(&mut self, expected: &Returned) {
        match expected {
            Returned::Done(Effect::Settled(settlement)) => {
                self.ghost
                    .delivered
                    .extend(settlement.delivered.iter().copied());
                self.repeats_since_settle = 0;
            }
            Returned::Done(Effect::Discarded { seqs }) => {
                self.ghost.discarded.extend(seqs.iter().copied());
            }
            _ => {}
        }
    }
}

impl Returned {
    /// What the op returned without the times of the items it holds: the reference has no
    /// clock, and the state's times are checked on their own (D24).
    fn without_times(&self) -> Returned {
        match self {
            Returned::Done(effect) => Returned::Done(effect.without_times()),
            other => other.clone(),
        }
    }
}

/// Whether an op that returned `got` wrote a record that decides compaction with no fault (M12):
/// a settle, or a redrive or discard that moved a line (one that moves none writes nothing).
fn wrote_a_settling_record(got: &Returned) -> bool {
    match got {
        Returned::Done(Effect::Settled(_)) => true,
        Returned::Done(Effect::Redriven { seqs } | Effect::Discarded { seqs }) => !seqs.is_empty(),
        _ => false,
    }
}

/// The requirement by which an op refused with the error `kind` writes nothing and leaves the
/// handle usable, if that kind is such a refusal.
fn refusal_requirement(kind: &str) -> Option<&'static str> {
    match kind {
        "Exhausted" => Some("M6"),
        "NotDead" => Some("D8, D21"),
        _ => None,
    }
}

/// What a member of a `park_concurrently` gets from the reference: what a `park` gets.
fn park_member(reference: &mut Reference, request: u64, line: &str) -> Member {
    if !line_is_valid(line) {
        return Member::Error("InvalidLine".to_owned());
    }
    match reference.try_park_answer(request, line).map(answer_of_ref) {
        Ok((seq, None)) => Member::Parked(seq),
        Ok((seq, Some(ended))) => Member::Remembered { seq, ended },
        Err(e) => Member::Error(ref_error_name(&e)),
    }
}

/// Whether `park` must accept `line` (D3: no `\n`; the lines used are far below
/// `line_bytes_max`).
fn line_is_valid(line: &str) -> bool {
    !line.contains('\n')
}

fn crate_error_name(e: &crate::known_bad::DriverError) -> String {
    format!("{:?}", e.kind())
}

fn ref_error_name(e: &parkline_model::delivery::RefError) -> String {
    match e {
        // The crate's error names the seq in its message, not in its kind.
        parkline_model::delivery::RefError::NotDead(_) => "NotDead".to_owned(),
        e => format!("{e:?}"),
    }
}
