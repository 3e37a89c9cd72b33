//! One delivery check's run: the crate over the simulated disk beside the reference, an op at a
//! time, with the faults an op may carry (power loss at a sync, I/O error) and the comparison of
//! what each side returned and holds after it.

mod invariants;

use std::collections::{BTreeMap, BTreeSet};

use parkline::{Budget, Outcome, Queue, RequestId};
use parkline_model::delivery::{RefBatch, RefItem, Reference};

use super::check::{Report, Setup};
use super::craft::Crafted;
use super::m12::m12_bound;
use super::op::{MIRROR, Op};
use crate::known_bad::{Driver, Seamed};
use crate::simdisk::SimDisk;

/// A fault armed for the next op.
#[derive(Clone, Copy, Debug)]
enum Fault {
    PowerLoss { n: u64, torn: u64 },
    IoError { n: u64 },
}

/// An item as both sides can show it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ItemView {
    seq: u64,
    request: u64,
    line: String,
    failures: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BatchView {
    id: u64,
    attempt: u32,
    items: Vec<ItemView>,
    remaining: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StateView {
    parked: Vec<ItemView>,
    in_flight: Option<BatchView>,
    dead: Vec<ItemView>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NotifiedView {
    request: u64,
    seq: u64,
    batch: u64,
    attempt: u32,
    repeat: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SettlementView {
    delivered: Vec<u64>,
    failed: Vec<u64>,
    dead: Vec<u64>,
}

fn item_of_crate(item: &parkline::Item) -> ItemView {
    ItemView {
        seq: item.seq.0,
        request: item.request.0,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn item_of_ref(item: &RefItem) -> ItemView {
    ItemView {
        seq: item.seq,
        request: item.request,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn batch_of_crate(batch: &parkline::Batch) -> BatchView {
    BatchView {
        id: batch.id.0,
        attempt: batch.attempt.0,
        items: batch.items.iter().map(item_of_crate).collect(),
        remaining: batch.remaining,
    }
}

fn batch_of_ref(batch: &RefBatch) -> BatchView {
    BatchView {
        id: batch.id,
        attempt: batch.attempt,
        items: batch.items.iter().map(item_of_ref).collect(),
        remaining: batch.remaining,
    }
}

/// The queue a check drives: over the simulated disk (behind the storage seam of a known-bad
/// behaviour, if it has one), through the driver (broken, if the behaviour says so).
type Driven = Driver<Seamed<SimDisk>>;

pub(super) fn state_of_crate(driver: &Driven) -> StateView {
    let queue = driver.queue();
    StateView {
        parked: queue.parked().iter().map(item_of_crate).collect(),
        in_flight: queue.in_flight().map(batch_of_crate),
        dead: queue.dead_letters().iter().map(item_of_crate).collect(),
    }
}

fn state_of_ref(reference: &Reference) -> StateView {
    StateView {
        parked: reference.parked().iter().map(item_of_ref).collect(),
        in_flight: reference.in_flight().map(batch_of_ref),
        dead: reference.dead_letters().iter().map(item_of_ref).collect(),
    }
}

/// What the harness knows independently of the reference (for the direct invariants).
#[derive(Clone, Debug, Default)]
struct Ghost {
    /// Every park that returned `Ok`: seq -> (request, line).
    acked: BTreeMap<u64, (u64, String)>,
    /// Seqs settled `Delivered`.
    delivered: BTreeSet<u64>,
    /// Every batch id handed over: its membership, remaining and highest attempt seen.
    batches: BTreeMap<u64, (Vec<u64>, usize, u32)>,
}

/// Outcome of applying one op to one side, when it returned.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Effect {
    Parked(u64),
    Refused,
    Batch(Option<(BatchView, String, Vec<NotifiedView>)>),
    Settled(SettlementView),
    Error(String),
}

pub(super) struct Run {
    setup: Setup,
    pub(super) disk: SimDisk,
    queue: Option<Driven>,
    reference: Reference,
    ghost: Ghost,
    /// The id and size of the batch the last boundary of this life returned, if unsettled.
    handed: Option<(u64, usize)>,
    fault: Option<Fault>,
    /// Boundaries called with a batch in flight since the last settle: each may have appended
    /// an `attempt` record, which M12 allows until the next settle.
    repeats_since_settle: u64,
    pub(super) report: Report,
}

/// Opens (creates or recovers) the mirror on `disk` the way `setup` says: behind the storage seam
/// and through the driver of its known-bad behaviour, if any.
fn open(disk: &SimDisk, setup: &Setup) -> parkline::Result<Driven> {
    let storage = Seamed::new(disk.clone(), setup.known_bad);
    let queue = Queue::with_storage(storage, MIRROR, setup.config())?;
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
        let queue = open(&disk, setup).map_err(|e| format!("creating the mirror failed: {e}"))?;
        Ok(Self {
            setup: setup.clone(),
            disk,
            queue: Some(queue),
            reference: Reference::new(setup.failures_max),
            ghost: Ghost::default(),
            handed: None,
            fault: None,
            repeats_since_settle: 0,
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
        m12_bound(
            len,
            queue.state(),
            self.setup.compact_slack_bytes,
            self.repeats_since_settle,
        )
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
        self.queue = None;
        self.disk = SimDisk::new();
        let bytes = crafted.bytes();
        self.disk.put_durable(MIRROR, &bytes);
        let reference = Reference::from_mirror(self.setup.failures_max, crafted.mirror());
        let opened = open(&self.disk, &self.setup);
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
        let state = state_of_ref(&self.reference);
        self.expect_state(&state, "after opening a crafted mirror")?;
        let mirror = crafted.mirror();
        let items = mirror
            .parked
            .iter()
            .chain(mirror.in_flight.iter().flat_map(|batch| &batch.items))
            .chain(&mirror.dead);
        for item in items {
            self.ghost
                .acked
                .insert(item.seq, (item.request, item.line.clone()));
        }
        if let Some(batch) = &mirror.in_flight {
            self.ghost
                .batches
                .insert(batch.id, (batch.seqs(), batch.remaining, batch.attempt));
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
                let crashed = state_of_ref(&self.reference);
                self.expect_state(&crashed, "after a crash between ops")?;
                self.check_invariants()
            }
            Op::CrashAtSync { n, torn } => {
                self.fault = Some(Fault::PowerLoss { n: *n, torn: *torn });
                Ok(())
            }
            Op::IoError { n } => {
                self.fault = Some(Fault::IoError { n: *n });
                Ok(())
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
                let restarted = state_of_ref(&self.reference);
                self.expect_state(&restarted, "after a clean restart")?;
                self.check_invariants()
            }
            Op::Craft(crafted) => self.craft(crafted),
            Op::ParkMany {
                request,
                line,
                count,
            } => {
                let park = Op::Park {
                    request: *request,
                    line: line.clone(),
                };
                for _ in 0..*count {
                    match self.fault.take() {
                        None => self.step(&park)?,
                        Some(fault) => self.step_with_fault(&park, fault)?,
                    }
                }
                Ok(())
            }
            Op::Park { .. } | Op::Boundary { .. } | Op::Settle { .. } | Op::HandOverFailed => {
                if matches!(op, Op::Boundary { .. }) && self.queue()?.queue().in_flight().is_some()
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
    fn step(&mut self, op: &Op) -> Result<(), String> {
        let before = state_of_crate(self.queue()?);
        let len_before = self.disk.live_len(MIRROR);
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        if expected != got {
            return Err(format!(
                "the crate returned {got:?}, the reference {expected:?}"
            ));
        }
        if got == Effect::Error("Exhausted".to_owned()) {
            // M6, D10: an exhausted counter refuses the op without writing or poisoning.
            if self.disk.live_len(MIRROR) != len_before {
                return Err("M6: an op refused as Exhausted wrote to the mirror".to_owned());
            }
            if self.queue()?.queue().is_poisoned() {
                return Err("M6: an op refused as Exhausted poisoned the handle".to_owned());
            }
        }
        self.observe(op, &before, &got)?;
        let state = state_of_ref(&self.reference);
        self.expect_state(&state, "after the op")?;
        self.check_invariants()
    }

    /// Apply a queue op with a power loss or I/O error armed inside it.
    fn step_with_fault(&mut self, op: &Op, fault: Fault) -> Result<(), String> {
        let before_ref = self.reference.clone();
        let before = state_of_crate(self.queue()?);
        match fault {
            Fault::PowerLoss { n, .. } => self.disk.crash_at_sync(Some(n)),
            Fault::IoError { n } => self.disk.fail_at_call(Some(n)),
        }
        let expected = self.apply_ref(op);
        let got = self.apply_crate(op)?;
        self.disk.crash_at_sync(None);
        self.disk.fail_at_call(None);
        let failed = matches!(got, Effect::Error(_)) && !matches!(expected, Effect::Error(_));
        if !failed {
            // The fault was not reached (or the op failed for its own reason on both sides):
            // the op completed and is compared as usual.
            if expected != got {
                return Err(format!(
                    "the crate returned {got:?}, the reference {expected:?}"
                ));
            }
            self.observe(op, &before, &got)?;
            let state = state_of_ref(&self.reference);
            self.expect_state(&state, "after the op")?;
            self.check_invariants()?;
            if let Fault::PowerLoss { torn, .. } = fault {
                // The power goes out right after the acknowledged op.
                self.reference.crash();
                self.power_loss(torn)?;
                let crashed = state_of_ref(&self.reference);
                self.expect_state(&crashed, "after a crash right after the op")?;
                self.check_invariants()?;
            }
            return Ok(());
        }
        // The op failed: it was not acknowledged.
        let torn = match fault {
            Fault::PowerLoss { torn, .. } => torn,
            Fault::IoError { .. } => {
                self.report.io_errors += 1;
                self.expect_fail_stop()?;
                0
            }
        };
        let after_ref = self.reference.clone();
        self.power_loss(torn)?;
        self.report.crashes_in_op += 1;
        let recovered = state_of_crate(self.queue()?);
        let mut before_crashed = before_ref;
        before_crashed.crash();
        let mut after_crashed = after_ref;
        after_crashed.crash();
        if recovered == state_of_ref(&before_crashed) {
            self.reference = before_crashed;
        } else if recovered == state_of_ref(&after_crashed) {
            self.reference = after_crashed;
            // The op took effect although it was not acknowledged.
            self.observe_unacknowledged(op, &before, &expected);
        } else {
            return Err(format!(
                "after a power loss inside the op, the recovered state is neither the state \
                 before the op nor after it:\n  recovered {recovered:?}\n  before    {:?}\n  \
                 after     {:?}",
                state_of_ref(&before_crashed),
                state_of_ref(&after_crashed)
            ));
        }
        self.check_invariants()
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
        let queue = open(&self.disk, &self.setup)
            .map_err(|e| format!("reopening the mirror {when} failed: {e}"))?;
        self.queue = Some(queue);
        Ok(())
    }

    fn expect_state(&mut self, expected: &StateView, when: &str) -> Result<(), String> {
        let got = state_of_crate(self.queue()?);
        if &got != expected {
            return Err(format!(
                "state {when} differs:\n  crate     {got:?}\n  reference {expected:?}"
            ));
        }
        Ok(())
    }

    /// The batch id and item count a settle op addresses.
    fn settle_target(&self) -> (u64, usize) {
        self.handed.unwrap_or((0, 0))
    }

    fn outcomes(op: &Op, count: usize) -> Vec<bool> {
        match op {
            Op::Settle { delivered } => (0..count)
                .map(|i| delivered.get(i).copied().unwrap_or(true))
                .collect(),
            _ => vec![false; count],
        }
    }

    fn apply_ref(&mut self, op: &Op) -> Effect {
        match op {
            Op::Park { request, line } => {
                if !line_is_valid(line) {
                    return Effect::Refused;
                }
                match self.reference.try_park(*request, line) {
                    Ok(seq) => Effect::Parked(seq),
                    Err(e) => Effect::Error(ref_error_name(&e)),
                }
            }
            Op::Boundary { budget } => match self.reference.boundary(*budget) {
                Ok(Some(batch)) => Effect::Batch(Some((
                    batch_of_ref(&batch),
                    parkline_model::delivery::turn_text(&batch),
                    parkline_model::delivery::notified(&batch)
                        .iter()
                        .map(|n| NotifiedView {
                            request: n.request,
                            seq: n.seq,
                            batch: n.batch,
                            attempt: n.attempt,
                            repeat: n.repeat,
                        })
                        .collect(),
                ))),
                Ok(None) => Effect::Batch(None),
                Err(e) => Effect::Error(ref_error_name(&e)),
            },
            Op::Settle { .. } | Op::HandOverFailed => {
                let (id, count) = self.settle_target();
                let delivered = Self::outcomes(op, count);
                match self.reference.settle(id, &delivered) {
                    Ok(s) => Effect::Settled(SettlementView {
                        delivered: s.delivered.clone(),
                        failed: s.failed.clone(),
                        dead: s.dead.clone(),
                    }),
                    Err(e) => Effect::Error(ref_error_name(&e)),
                }
            }
            _ => Effect::Error("internal: not a queue op".to_owned()),
        }
    }

    fn apply_crate(&mut self, op: &Op) -> Result<Effect, String> {
        let (id, count) = self.settle_target();
        let queue = self.queue()?;
        Ok(match op {
            Op::Park { request, line } => match queue.park(RequestId(*request), line) {
                Ok(seq) => Effect::Parked(seq.0),
                Err(e) if e.kind() == parkline::ErrorKind::InvalidLine => Effect::Refused,
                Err(e) => Effect::Error(crate_error_name(&e)),
            },
            Op::Boundary { budget } => match queue.boundary(Budget(*budget)) {
                Ok(Some(batch)) => Effect::Batch(Some((
                    batch_of_crate(&batch),
                    batch.text(),
                    batch
                        .notified()
                        .iter()
                        .map(|n| NotifiedView {
                            request: n.request.0,
                            seq: n.seq.0,
                            batch: n.batch.0,
                            attempt: n.attempt.0,
                            repeat: n.repeat,
                        })
                        .collect(),
                ))),
                Ok(None) => Effect::Batch(None),
                Err(e) => Effect::Error(crate_error_name(&e)),
            },
            Op::Settle { .. } | Op::HandOverFailed => {
                let outcomes: Vec<Outcome> = Self::outcomes(op, count)
                    .into_iter()
                    .map(|d| {
                        if d {
                            Outcome::Delivered
                        } else {
                            Outcome::Failed
                        }
                    })
                    .collect();
                match queue.settle(parkline::BatchId(id), &outcomes) {
                    Ok(s) => Effect::Settled(SettlementView {
                        delivered: s.delivered.iter().map(|s| s.0).collect(),
                        failed: s.failed.iter().map(|s| s.0).collect(),
                        dead: s.dead.iter().map(|s| s.0).collect(),
                    }),
                    Err(e) => Effect::Error(crate_error_name(&e)),
                }
            }
            _ => Effect::Error("internal: not a queue op".to_owned()),
        })
    }

    /// Record an acknowledged op's effect in the ghost and check the op-level invariants.
    fn observe(&mut self, op: &Op, before: &StateView, effect: &Effect) -> Result<(), String> {
        match (op, effect) {
            (Op::Park { request, line }, Effect::Parked(seq)) => {
                if let Some(last) = self.ghost.acked.keys().next_back()
                    && seq <= last
                {
                    return Err(format!(
                        "D17 order: park returned seq {seq} after seq {last}"
                    ));
                }
                self.ghost.acked.insert(*seq, (*request, line.clone()));
                self.report.parks += 1;
            }
            (Op::Boundary { budget }, Effect::Batch(Some((batch, text, notified)))) => {
                self.check_batch(*budget, before, batch, text, notified)?;
                self.handed = Some((batch.id, batch.items.len()));
                self.report.batches += 1;
                if batch.attempt > 1 {
                    self.report.repeats += 1;
                }
            }
            (Op::Boundary { .. }, Effect::Batch(None))
                if !before.parked.is_empty() || before.in_flight.is_some() =>
            {
                return Err(format!(
                    "D1: boundary returned no batch with {} lines parked and in flight {:?}",
                    before.parked.len(),
                    before.in_flight
                ));
            }
            (Op::Park { .. } | Op::Boundary { .. }, Effect::Error(kind)) if kind == "Exhausted" => {
                self.report.exhausted += 1;
            }
            (Op::Settle { .. } | Op::HandOverFailed, Effect::Settled(settlement)) => {
                self.check_settlement(op, before, settlement)?;
                self.handed = None;
                self.repeats_since_settle = 0;
                self.report.settles += 1;
            }
            _ => {}
        }
        Ok(())
    }

    /// An op that was not acknowledged took effect before the power loss: keep the ghost in step.
    fn observe_unacknowledged(&mut self, op: &Op, _before: &StateView, expected: &Effect) {
        if let (Op::Settle { .. } | Op::HandOverFailed, Effect::Settled(s)) = (op, expected) {
            self.ghost.delivered.extend(s.delivered.iter().copied());
            self.repeats_since_settle = 0;
        }
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
    format!("{e:?}")
}
