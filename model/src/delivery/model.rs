//! [`DeliveryModel`], the delivery protocol as a stateright [`Model`]: the state (the
//! [`Reference`] queue, the daemon's volatile [`Phase`], what the parent was handed, the notified
//! log and ghost history), the [`Action`]s with their guards in `actions`, the transitions in
//! `next_state` (each calling the reference), and the properties listed by spec id. What each
//! property checks is in `properties.rs`; how a step reads in the spec's words, `narrate.rs`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use stateright::{Expectation, Model, Property};

use super::bounds::Bounds;
use super::properties::*;
use super::reference::{
    RefBatch, RefEnded, RefError, RefItem, RefNotified, RefParked, RefRemembered, Reference,
    notified,
};
use super::snapshot::compacted;
use super::variants::Variant;

/// The daemon's volatile delivery phase (lost at a crash).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Up, no batch of this life in flight.
    Idle,
    /// Boundary persisted the batch ("batch written"); not handed over yet.
    Persisted(RefBatch),
    /// The turn was handed over; `outcomes` holds the outcome of the first `outcomes.len()`
    /// items (notified k of n).
    HandedOver {
        /// The batch handed over.
        batch: RefBatch,
        /// `true`: the item's notified event was recorded; `false`: the item failed.
        outcomes: Vec<bool>,
    },
    /// Crashed; waiting for the restart.
    Down,
}

/// Ghost: a batch returned by a boundary, with the parked list just before it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BoundaryRecord {
    /// The batch as the boundary returned it.
    pub batch: RefBatch,
    /// The parked list at the boundary, before the split (for a repeat: the list then).
    pub parked: Vec<RefItem>,
    /// The boundary replayed a recovered batch.
    pub replay: bool,
    /// The batch cap the split was held to (D11), `None` for none.
    pub cap: Option<u64>,
}

/// Ghost: a recovered batch the repeat bound closed (D10), with where the history stood.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CloseRecord {
    /// The batch closed, as it was recovered.
    pub batch: RefBatch,
    /// How many settles had happened before it.
    pub settles_before: usize,
    /// How many turns had been handed over before it.
    pub handed_before: usize,
    /// How many redrives had happened before it.
    pub redrives_before: usize,
}

/// Ghost: one settle, with each item's own outcome as the daemon saw it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SettleRecord {
    /// The batch settled.
    pub batch: u64,
    /// Its attempt.
    pub attempt: u32,
    /// `(seq, delivered)` per item, in item order.
    pub outcomes: Vec<(u64, bool)>,
    /// How many turns had been handed over when the settle happened.
    pub handed_before: usize,
}

/// Ghost: one redrive, with where the history stood when it happened.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedriveRecord {
    /// The seqs moved back to the parked list, in seq order.
    pub seqs: Vec<u64>,
    /// How many settles had happened before it.
    pub settles_before: usize,
    /// How many turns had been handed over before it.
    pub handed_before: usize,
}

/// Ghost: one discard of every dead letter (D8), with what the queue held before it, so the
/// properties can tell a line discarded from the dead letters from a line lost.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DiscardRecord {
    /// The dead letters just before the discard, in seq order.
    pub dead_before: Vec<u64>,
    /// `(seq, request)` of every line the queue held before the discard and not after it, in
    /// seq order: the dead letters, and nothing else, in the correct protocol.
    pub removed: Vec<(u64, u64)>,
    /// How many turns had been handed over before it.
    pub handed_before: usize,
}

/// Ghost, kept with a remembered window only (`Bounds::delivered_memory`): a request whose line
/// was settled delivered (the daemon's own outcome) or discarded, in the order the window
/// remembers them, with the next seq then, which tells the parks before it from those after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RememberRecord {
    /// The request.
    pub request: u64,
    /// The seq of its line.
    pub seq: u64,
    /// The mirror's next seq when the line ended: a seq below it was parked before.
    pub next_seq: u64,
    /// Settled delivered (`false`: discarded from the dead letters).
    pub delivered: bool,
}

/// A caller of a shared handle whose park takes part in group commit (`Bounds::group_parkers`,
/// D16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Member {
    /// The caller parking the line at this index of the bounds.
    Line(usize),
    /// The caller parking [`Bounds::INVALID_LINE`], which holds a `\n` (refused, D3).
    Invalid,
}

/// Ghost: a caller of a group took its answer (its park returned).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AckRecord {
    /// The caller.
    pub member: Member,
    /// Its answer: the seq of its line, or `None` for a refusal.
    pub answer: Option<u64>,
    /// How many boundaries had returned a batch before it.
    pub boundaries_before: usize,
}

/// A ghost log of the model's state: its records, shared (`Arc`) between a state and its
/// successors and copied only when a successor appends, and a running digest of them. Each
/// record sits behind an `Arc` of its own, so that copy is one pointer per record, not the
/// records (a batch's items and lines): at the test suite's bounds the check ran 3.21 G
/// instructions with the records copied whole and 3.03 G with this (callgrind, same states).
///
/// Equality compares the records. Hashing writes only the length and the digest, which chains
/// every record's hash in order (`digest' = H(digest, record)`, std's fixed-key SipHash), so a
/// state's fingerprint costs the same at any history length: hashing every record of every log
/// at every generated state was a fifth of the check's instructions. Equal logs have equal
/// digests, so the hash stays consistent with equality; two different logs of one length share
/// a digest with probability about 2^-64, the same odds at which the checker's own 64-bit
/// fingerprints would merge two states, and the pinned state counts would show a merge.
#[derive(Clone, Debug)]
pub struct Log<T> {
    records: Arc<Vec<Arc<T>>>,
    digest: u64,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log {
            records: Arc::default(),
            digest: 0,
        }
    }
}

impl<T: Clone + Hash> Log<T> {
    /// Appends `record`, copying the records first if another state shares them.
    pub fn push(&mut self, record: T) {
        let mut hasher = DefaultHasher::new();
        self.digest.hash(&mut hasher);
        record.hash(&mut hasher);
        self.digest = hasher.finish();
        Arc::make_mut(&mut self.records).push(Arc::new(record));
    }
}

impl<T> Deref for Log<T> {
    type Target = [Arc<T>];

    fn deref(&self) -> &[Arc<T>] {
        &self.records
    }
}

impl<T: PartialEq> PartialEq for Log<T> {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest && self.records == other.records
    }
}

impl<T: Eq> Eq for Log<T> {}

impl<T> Hash for Log<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.records.len().hash(state);
        self.digest.hash(state);
    }
}

/// A state of the delivery model: the queue (durable mirror + volatile recovered flag), the
/// daemon's phase, what the parent was handed, the notified log, and ghost history.
///
/// The logs are [`Log`]s, shared between a state and its successors: most steps append to none
/// of them, so a successor copies four pointers instead of every batch and line of the history,
/// and a state's fingerprint hashes each log's running digest instead of its records.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeliveryState {
    /// The reference queue.
    pub queue: Reference,
    /// The daemon's volatile phase.
    pub phase: Phase,
    /// How many lines of the bounds have been parked (acknowledged): seqs `1..=arrived`.
    pub arrived: usize,
    /// Every batch the parent was handed, in order.
    pub handed: Log<RefBatch>,
    /// Every notified event recorded, in order.
    pub notified: Log<RefNotified>,
    /// Ghost: every boundary that returned a batch.
    pub boundaries: Log<BoundaryRecord>,
    /// Ghost: every settle.
    pub settles: Log<SettleRecord>,
    /// Ghost: crashes so far.
    pub crashes: u32,
    /// Ghost: failures so far.
    pub failures: u32,
    /// Ghost: seqs collected by agent_read.
    pub collected: Vec<u64>,
    /// Ghost: every redrive that moved something.
    pub redrives: Vec<RedriveRecord>,
    /// Ghost: every discard.
    pub discards: Vec<DiscardRecord>,
    /// Ghost: every batch closed by the repeat bound.
    pub closes: Vec<CloseRecord>,
    /// Ghost: a compaction's snapshot did not read back as the mirror it was written from.
    pub snapshot_broken: bool,
    /// Ghost: group parks whose record a crash tore.
    pub torn: u32,
    /// Ghost: parks whose answer a crash lost after their record reached the mirror.
    pub lost_parks: u32,
    /// The daemon restarts not knowing whether its last park reached the mirror: it parks that
    /// line again before anything else (D3).
    pub retry_pending: bool,
    /// Group commit: the callers that joined the pending group, in join order, waiting for a
    /// leader (volatile, like the rest of group commit).
    pub pending: Vec<Member>,
    /// Group commit: the group a leader wrote and has not synced yet, each caller with the
    /// answer planned for it; empty when no write is in progress. The leader holds the queue
    /// meanwhile, so no boundary, settle, redrive or discard runs.
    pub writing: Vec<(Member, Option<u64>)>,
    /// Group commit: answers posted after the fsync, not yet taken by their callers.
    pub answered: Vec<(Member, Option<u64>)>,
    /// Ghost: every answer a caller of a group took, in order.
    pub acks: Vec<AckRecord>,
    /// Group commit: the lines whose park was in progress at the last crash. The daemon parks
    /// them again, and before its first boundary (D3), so no boundary, redrive or discard runs
    /// until each is answered.
    pub retries: Vec<usize>,
    /// Ghost, with a remembered window only: every request the window was to remember, in order.
    pub remembers: Vec<RememberRecord>,
    /// Ghost: every park the remembered window answered (a retry after its line ended).
    pub remembered_answers: Vec<RefRemembered>,
}

/// One step of the model, in the spec's words.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The line at this index of the bounds arrives and is parked.
    Park(usize),
    /// The lines at this index and the next arrive together and are parked as one group.
    ParkGroup(usize),
    /// The daemon crashes while the group park of the lines at this index and the next is
    /// appended: the torn record is cut at recovery.
    TornGroup(usize),
    /// The operator redrives every dead letter (one record).
    Redrive,
    /// The operator discards every dead letter (one record, `parkline discard --all`, D8).
    Discard,
    /// The parent's turn ends: the boundary persists the next batch.
    Boundary,
    /// The line at this index is parked and its record reaches the mirror, but the daemon
    /// crashes before it learns so: after the restart it parks the line again (D3).
    ParkAnswerLost(usize),
    /// The daemon hands the batch's turn over to the parent.
    HandOver,
    /// A settle or redrive compacts the mirror: its snapshot, written by the model's own encoder
    /// (format 2's order for [`Variant::PrefixSnapshot`]), replaces it (M12).
    Compact,
    /// The hand-over fails: every item fails (failure 1 of D7).
    HandOverFails,
    /// The next item's delegation_notified event is recorded.
    Notify,
    /// The next item's notified event cannot be recorded: it fails (failure 2 of D7).
    ItemFails,
    /// Settle: record the outcomes and clear the delivered items.
    Settle,
    /// The daemon crashes.
    Crash,
    /// The daemon restarts and recovers the mirror.
    Recover,
    /// agent_read collects the parked line with this seq (must change nothing, D14).
    Collected(u64),
    /// Group commit: a caller starts its park and joins the pending group.
    JoinGroup(Member),
    /// Group commit: a leader takes the pending group and writes it as one record (volatile
    /// until its fsync); a group with no new line writes nothing and is answered at once.
    WriteGroup,
    /// Group commit: the leader's fsync returns; the record is durable and every caller's answer
    /// is posted.
    SyncGroup,
    /// Group commit: the caller takes its answer (its park returns).
    AckPark(Member),
}

/// The delivery protocol as a stateright model (see the module documentation).
///
/// The model is finite and acyclic: every action grows a log or a counter of the state (lines
/// parked, boundaries, hand-overs, outcomes, settles, crashes, collections; a restart follows a
/// crash), so no path revisits a state. That is what makes stateright's `eventually`, judged
/// only at terminal states, sound here; D15 is also stated as an `always` on quiescent states.
///
/// # Example
///
/// ```
/// use parkline_model::delivery::{Bounds, DeliveryModel, Variant, D9};
/// use stateright::{Checker, Model};
/// let model = DeliveryModel { bounds: Bounds::generated(2, 6, 1, 0), variant: Variant::Correct };
/// let checker = model.checker().spawn_dfs().join();
/// assert!(checker.is_done());
/// assert!(checker.discovery(D9).is_none()); // no loss, crash included
/// ```
#[derive(Clone, Debug)]
pub struct DeliveryModel {
    /// The bounds.
    pub bounds: Bounds,
    /// Which protocol the model follows.
    pub variant: Variant,
}

impl Default for DeliveryModel {
    fn default() -> Self {
        DeliveryModel {
            bounds: Bounds::default(),
            variant: Variant::Correct,
        }
    }
}

impl Model for DeliveryModel {
    type State = DeliveryState;
    type Action = Action;

    fn init_states(&self) -> Vec<DeliveryState> {
        vec![DeliveryState {
            queue: Reference::with_variant(self.bounds.failures_max, self.variant)
                .with_repeats_max(self.bounds.repeats_max)
                .with_delivered_memory(self.bounds.delivered_memory as usize),
            phase: Phase::Idle,
            arrived: 0,
            handed: Log::default(),
            notified: Log::default(),
            boundaries: Log::default(),
            settles: Log::default(),
            crashes: 0,
            failures: 0,
            collected: Vec::new(),
            redrives: Vec::new(),
            discards: Vec::new(),
            closes: Vec::new(),
            snapshot_broken: false,
            torn: 0,
            lost_parks: 0,
            retry_pending: false,
            pending: Vec::new(),
            writing: Vec::new(),
            answered: Vec::new(),
            acks: Vec::new(),
            retries: Vec::new(),
            remembers: Vec::new(),
            remembered_answers: Vec::new(),
        }]
    }

    fn actions(&self, state: &DeliveryState, actions: &mut Vec<Action>) {
        let can_fail = state.failures < self.bounds.failures;
        // Group commit: a leader writing holds the queue (no other queue call runs), and lines
        // whose park a crash cut are parked again before the next boundary.
        let held = !state.writing.is_empty();
        let retrying = !state.retries.is_empty();
        if state.phase == Phase::Down {
            actions.push(Action::Recover);
            return;
        }
        // The park whose answer was lost is retried before any other park; without a remembered
        // window, before anything else (a line delivered before it would be parked anew).
        if state.retry_pending {
            actions.push(Action::Park(state.arrived));
            if self.bounds.delivered_memory == 0 {
                return;
            }
        }
        match &state.phase {
            Phase::Down => {}
            Phase::Idle => {
                if state.queue.has_batch_ready() && !held && !retrying {
                    actions.push(Action::Boundary);
                }
            }
            Phase::Persisted(_) => {
                actions.push(Action::HandOver);
                if can_fail && !held {
                    actions.push(Action::HandOverFails);
                }
            }
            Phase::HandedOver { batch, outcomes } => {
                if outcomes.len() < batch.items.len() {
                    actions.push(Action::Notify);
                    if can_fail {
                        actions.push(Action::ItemFails);
                    }
                } else if !held {
                    actions.push(Action::Settle);
                }
            }
        }
        // A compaction matters where format 2 had no snapshot, a batch in flight, and where the
        // snapshot holds the remembered window.
        let window = !state.queue.remembered().is_empty();
        if (state.queue.in_flight().is_some() || window) && !state.snapshot_broken && !held {
            actions.push(Action::Compact);
        }
        if self.bounds.group_parkers > 0 {
            self.group_actions(state, actions);
        } else if state.arrived < self.bounds.lines.len() && !state.retry_pending {
            if self.bounds.arrival_len(state.arrived) == 2 {
                actions.push(Action::ParkGroup(state.arrived));
                if state.crashes < self.bounds.crashes {
                    actions.push(Action::TornGroup(state.arrived));
                }
            } else {
                actions.push(Action::Park(state.arrived));
                if state.lost_parks < self.bounds.lost_parks && state.crashes < self.bounds.crashes
                {
                    actions.push(Action::ParkAnswerLost(state.arrived));
                }
            }
        }
        if state.redrives.len() < self.bounds.redrives as usize
            && !state.queue.dead_letters().is_empty()
            && !held
            && !retrying
        {
            actions.push(Action::Redrive);
        }
        // Bounded like the redrive, and only where it removes something (D8).
        if state.discards.len() < self.bounds.discards as usize
            && !state.queue.dead_letters().is_empty()
            && !held
            && !retrying
        {
            actions.push(Action::Discard);
        }
        if state.collected.len() < self.bounds.collects as usize {
            for item in state.queue.parked() {
                if !state.collected.contains(&item.seq) {
                    actions.push(Action::Collected(item.seq));
                }
            }
        }
        if state.crashes < self.bounds.crashes {
            actions.push(Action::Crash);
        }
    }

    fn next_state(&self, last: &DeliveryState, action: Action) -> Option<DeliveryState> {
        let mut state = last.clone();
        match action {
            Action::Park(index) => {
                let (request, line) = self.bounds.lines.get(index)?;
                match state.queue.try_park_answer(*request, line) {
                    Ok(RefParked::Held(_)) => {}
                    // A retry after its line was delivered or discarded: nothing is written.
                    Ok(RefParked::Remembered(entry)) => state.remembered_answers.push(entry),
                    // A retry whose line died while it waited is answered so (D3).
                    Err(RefError::RequestDead) if state.retry_pending => {}
                    Err(_) => return None,
                }
                state.arrived += 1;
                state.retry_pending = false;
            }
            Action::ParkAnswerLost(index) => {
                // The record is durable; the daemon never learns it and retries the park.
                let (request, line) = self.bounds.lines.get(index)?;
                state.queue.park(*request, line);
                state.queue.crash();
                state.phase = Phase::Down;
                state.crashes += 1;
                state.lost_parks += 1;
                state.retry_pending = true;
            }
            Action::ParkGroup(index) | Action::TornGroup(index) => {
                let lines = self.bounds.lines.get(index..index + 2)?;
                let group: Vec<(u64, &str)> = lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
                if action == Action::ParkGroup(index) {
                    state.queue.try_park_all(&group).ok()?;
                    state.arrived += 2;
                } else {
                    state.queue.crash_during_park_all(&group);
                    state.phase = Phase::Down;
                    state.crashes += 1;
                    state.torn += 1;
                }
            }
            Action::Compact => {
                let format_2 = self.variant == Variant::PrefixSnapshot;
                let forget = self.variant == Variant::ForgetAtCompaction;
                let read = compacted(state.queue.mirror(), format_2, forget);
                state.snapshot_broken = read.as_ref() != Some(state.queue.mirror());
                // Known bad: the compacted mirror is the snapshot without the window.
                if let Some(read) = read.filter(|_| forget) {
                    state.queue.mirror = read;
                }
            }
            Action::Redrive => {
                let seqs = state.queue.redrive_all();
                state.redrives.push(RedriveRecord {
                    seqs,
                    settles_before: state.settles.len(),
                    handed_before: state.handed.len(),
                });
            }
            Action::Discard => self.discard(&mut state),
            Action::Boundary => {
                let recovered = state
                    .queue
                    .in_flight()
                    .filter(|_| state.queue.is_recovered())
                    .cloned();
                let parked_before = state.queue.parked().to_vec();
                let batch = state.queue.boundary(self.bounds.budget).ok()?;
                // D10's repeat bound closed the recovered batch when the boundary did not
                // hand it over again: its lines were parked again (or one is dead) first.
                let replay = recovered
                    .as_ref()
                    .is_some_and(|r| batch.as_ref().is_some_and(|b| b.id == r.id));
                let closed = recovered.filter(|_| !replay);
                let any_closed = closed.is_some();
                let mut parked = parked_before;
                if let Some(closed) = closed {
                    if closed.items.len() > 1 {
                        parked.extend(closed.items.iter().cloned());
                        parked.sort_by_key(|item| item.seq);
                    }
                    state.closes.push(CloseRecord {
                        batch: closed,
                        settles_before: state.settles.len(),
                        handed_before: state.handed.len(),
                        redrives_before: state.redrives.len(),
                    });
                }
                let Some(batch) = batch else {
                    // A close that left nothing parked hands no turn over; without a close the
                    // step does nothing.
                    return any_closed.then_some(state);
                };
                state.boundaries.push(BoundaryRecord {
                    batch: batch.clone(),
                    parked,
                    replay,
                    cap: state.queue.mirror().cap,
                });
                state.phase = Phase::Persisted(batch);
            }
            Action::HandOver => {
                let Phase::Persisted(batch) = &last.phase else {
                    return None;
                };
                state.handed.push(batch.clone());
                state.phase = Phase::HandedOver {
                    batch: batch.clone(),
                    outcomes: Vec::new(),
                };
            }
            Action::HandOverFails => {
                let Phase::Persisted(batch) = &last.phase else {
                    return None;
                };
                state.failures += 1;
                let outcomes = vec![false; batch.items.len()];
                self.settle(&mut state, batch, &outcomes)?;
            }
            Action::Notify | Action::ItemFails => {
                let Phase::HandedOver { batch, outcomes } = &mut state.phase else {
                    return None;
                };
                let k = outcomes.len();
                let event = *notified(batch).get(k)?;
                let ok = action == Action::Notify;
                if ok {
                    if self.variant != Variant::NotifiedPerBatch || k == 0 {
                        state.notified.push(event); // D5
                    }
                } else {
                    state.failures += 1;
                }
                outcomes.push(ok);
            }
            Action::Settle => {
                let Phase::HandedOver { batch, outcomes } = &last.phase else {
                    return None;
                };
                self.settle(&mut state, batch, outcomes)?;
            }
            Action::Crash => {
                state.queue.crash();
                state.phase = Phase::Down;
                state.crashes += 1;
                self.crash_group(&mut state);
            }
            Action::Recover => state.phase = Phase::Idle,
            Action::Collected(seq) => {
                //= spec/delivery.md#d14-collected-is-not-consumed
                //# Reading a line through `agent_read` ("collected") MUST NOT remove, skip, shorten
                //# or mark the line in the queue: a collected line MUST still be delivered (or
                //# dead-lettered) like any other.
                state.collected.push(seq);
                if self.variant == Variant::DropCollected {
                    state.queue.mirror.parked.retain(|item| item.seq != seq);
                }
            }
            Action::JoinGroup(member) => state.pending.push(member),
            Action::WriteGroup => self.write_group(&mut state)?,
            Action::SyncGroup => self.sync_group(&mut state)?,
            Action::AckPark(member) => {
                let at = state.answered.iter().position(|(m, _)| *m == member)?;
                let (_, answer) = state.answered.remove(at);
                state.acks.push(AckRecord {
                    member,
                    answer,
                    boundaries_before: state.boundaries.len(),
                });
                state.retries.retain(|&i| Member::Line(i) != member);
            }
        }
        Some(state)
    }

    fn format_action(&self, action: &Action) -> String {
        match action {
            Action::Park(index) => match self.bounds.lines.get(*index) {
                Some((request, line)) => {
                    format!("park line {index} of request {request}: {line:?}")
                }
                None => format!("park line {index}"),
            },
            Action::ParkGroup(index) => format!("park lines {index} and {} as a group", index + 1),
            Action::ParkAnswerLost(index) => {
                format!(
                    "park line {index}: its record reaches the mirror, then a crash loses the answer"
                )
            }
            Action::TornGroup(index) => {
                format!(
                    "crash while the group of lines {index} and {} is appended",
                    index + 1
                )
            }
            Action::JoinGroup(Member::Line(index)) => {
                format!("the park of line {index} joins the pending group")
            }
            Action::JoinGroup(Member::Invalid) => {
                "the park of the invalid line joins the pending group".into()
            }
            Action::AckPark(Member::Line(index)) => format!("the park of line {index} returns"),
            Action::AckPark(Member::Invalid) => "the park of the invalid line returns".into(),
            other => format!("{other:?}"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always(D1, d1_batch_at_the_boundary),
            Property::always(D2, d2_no_waiting_window),
            Property::always(D3, d3_items_verbatim),
            Property::always(D5, d5_notified_per_request),
            Property::always(D6, d6_per_request_independence),
            Property::always(D8, d8_dead_letter),
            Property::always(D9, d9_no_loss),
            Property::always(D10, d10_repeat_recognisable),
            Property::always(D11, d11_deterministic_split),
            Property::always(D12, d12_budget),
            Property::always(D13, d13_trailer_count),
            Property::always(D14, d14_collected_is_not_consumed),
            Property::always(D15_QUIESCENT, d15_quiescent_means_delivered),
            Property::always(D17, d17_order),
            Property::always(D18, d18_no_silent_duplicate),
            Property::always(HANDOVER_COUNT, handover_count),
            Property::always(SEEN, seen_before),
            Property::always(REPEAT_BOUND, repeat_bound),
            //= spec/mirror.md#m12-compaction
            //# A snapshot is the header and the records that rebuild the state: the dead letters
            //# and every live item (parked or in flight) as `dead`/`park` records in seq order,
            //# then a `flight` record naming the in-flight batch's items, then the remembered
            //# window as `done` records, oldest first, then the applied window of M17 as `op`
            //# records, oldest first, then `next` with the window's size.
            Property::always(SNAPSHOT, |_, s: &DeliveryState| !s.snapshot_broken),
            Property::always(REDRIVE, redrive_keeps_the_line),
            Property::always(DISCARD, discard_removes_only_dead_letters),
            Property::always(GROUP_PARK, group_park_all_or_none),
            Property::always(FRAMING, framing_read_back),
            Property::eventually(D15, d15_everything_delivered),
            // The `sometimes` properties about hand-overs look at the turn just handed over
            // (`fresh_turn`): the first state where any turn of the history qualifies is the one
            // its hand-over produced, so they are reached exactly when a walk of the history would
            // be, and they hold at far fewer states (stateright records a discovery again at every
            // state where a `sometimes` holds).
            Property::sometimes(SOMETIMES_SPLIT, |_, s: &DeliveryState| {
                fresh_turn(s).is_some_and(|b| b.remaining > 0)
            }),
            Property::sometimes(SOMETIMES_REPEAT, |_, s: &DeliveryState| {
                fresh_turn(s).is_some_and(RefBatch::is_repeat)
            }),
            Property::sometimes(SOMETIMES_CRASH_MID_BATCH, |_, s: &DeliveryState| {
                s.phase == Phase::Down && s.queue.in_flight().is_some()
            }),
            Property::sometimes(SOMETIMES_DEAD, |_, s: &DeliveryState| {
                !s.queue.dead_letters().is_empty()
            }),
            Property::sometimes(SOMETIMES_RETRY, |_, s: &DeliveryState| {
                fresh_turn(s).is_some_and(|b| b.items.iter().any(|item| item.failures > 0))
            }),
            Property::sometimes(SOMETIMES_OVERSIZED, |m, s: &DeliveryState| {
                fresh_turn(s)
                    .is_some_and(|b| b.items.len() == 1 && b.items[0].cost() > m.bounds.budget)
            }),
            Property::sometimes(SOMETIMES_LATE_LINE, |_, s: &DeliveryState| {
                let batch = match &s.phase {
                    Phase::Persisted(batch) | Phase::HandedOver { batch, .. } => batch,
                    _ => return false,
                };
                s.original(batch.id).is_some_and(|o| {
                    s.queue
                        .parked()
                        .iter()
                        .any(|item| o.parked.iter().all(|p| p.seq != item.seq))
                })
            }),
            Property::sometimes(SOMETIMES_COLLECTED_DELIVERED, |_, s: &DeliveryState| {
                s.collected.iter().any(|&seq| s.is_delivered(seq))
            }),
            Property::sometimes(SOMETIMES_REDRIVEN_HANDED, |_, s: &DeliveryState| {
                // A redrive is logged before the turns after it (`handed_before` is the length of
                // `handed` then), so the turn just handed over is the one to look at.
                fresh_turn(s).is_some_and(|b| {
                    s.redrives.iter().any(|r| {
                        r.handed_before < s.handed.len()
                            && b.items
                                .iter()
                                .any(|i| r.seqs.contains(&i.seq) && i.handed > 1)
                    })
                })
            }),
            Property::sometimes(SOMETIMES_DISCARD, |_, s: &DeliveryState| {
                !s.discards.is_empty()
            }),
            Property::sometimes(SOMETIMES_SEEN, |_, s: &DeliveryState| {
                fresh_turn(s).is_some_and(|b| b.seen > 0)
            }),
            Property::sometimes(SOMETIMES_TORN_GROUP, |_, s: &DeliveryState| {
                s.torn > 0 && s.phase == Phase::Down
            }),
            Property::sometimes(SOMETIMES_CUT_HAND_OVER_COUNTED, |_, s: &DeliveryState| {
                // A line the parent saw, handed over again after a crash cut its settle.
                fresh_turn(s).is_some_and(|b| {
                    let earlier = &s.handed[..s.handed.len() - 1];
                    b.is_repeat()
                        && b.items.iter().any(|i| {
                            let saw = earlier
                                .iter()
                                .filter(|e| e.items.iter().any(|x| x.seq == i.seq))
                                .count() as u64;
                            saw > 0 && i.handed == saw + 1
                        })
                })
            }),
        ];
        if self.bounds.group_parkers > 0 {
            self.group_properties(&mut properties);
        }
        if self.bounds.delivered_memory > 0 {
            self.remember_properties(&mut properties);
        }
        // The goals of the deeper bound sets, listed only where their bounds can reach them, so
        // a deep check that never gets there fails as NOT REACHED instead of passing vacuously.
        if self.bounds.lines.len() >= 4 {
            properties.push(Property::sometimes(
                SOMETIMES_TWO_LEFT,
                |_, s: &DeliveryState| fresh_turn(s).is_some_and(|b| b.remaining >= 2),
            ));
        }
        if self.bounds.crashes >= self.bounds.repeats_max {
            properties.push(Property::sometimes(
                SOMETIMES_CLOSED,
                |_, s: &DeliveryState| !s.closes.is_empty(),
            ));
        }
        properties
    }
}

impl DeliveryModel {
    /// The model of `variant` at `bounds`.
    pub fn new(bounds: Bounds, variant: Variant) -> Self {
        DeliveryModel { bounds, variant }
    }

    /// Group commit's properties and goals, listed with group parkers only: the `always` ones
    /// after the others (before D15's `eventually`), the goals last. A goal that needs what the
    /// bounds do not allow (a failure, a collection, ...) is left out, so the small `group` set
    /// checks group commit without the failures and operator steps the other sets cover;
    /// without group parkers every goal is listed, and an unreached one is reported as NOT
    /// REACHED, never hidden.
    fn group_properties(&self, properties: &mut Vec<Property<Self>>) {
        let at = properties
            .iter()
            .position(|p| p.name == FRAMING)
            .map_or(properties.len(), |i| i + 1);
        let group = [
            Property::always(GROUP_ACK, group_ack_after_fsync),
            Property::always(GROUP_REFUSAL, group_refusal_alone),
            Property::always(GROUP_BOUNDARY, group_ack_before_boundary),
        ];
        properties.splice(at..at, group);
        properties
            .retain(|p| p.expectation != Expectation::Sometimes || self.goal_reachable(p.name));
        properties.push(Property::sometimes(
            SOMETIMES_GROUP_SHARED,
            |_, s: &DeliveryState| s.new_lines_written() >= 2,
        ));
        properties.push(Property::sometimes(
            SOMETIMES_GROUP_REFUSAL,
            |_, s: &DeliveryState| {
                s.new_lines_written() >= 1 && s.writing.iter().any(|(m, _)| *m == Member::Invalid)
            },
        ));
    }

    /// The remembered window's property and goals, listed with a window only
    /// (`Bounds::delivered_memory`): the `always` one after the others (before D15's
    /// `eventually`), the goals last; as with group parkers, a goal the bounds cannot reach is
    /// left out, so the small `remember` set checks the window without the failures and
    /// operator steps the other sets cover.
    fn remember_properties(&self, properties: &mut Vec<Property<Self>>) {
        let at = properties
            .iter()
            .position(|p| p.name == D15)
            .unwrap_or(properties.len());
        properties.insert(
            at,
            Property::always(D3_REMEMBERED, delivered_once_while_remembered),
        );
        properties
            .retain(|p| p.expectation != Expectation::Sometimes || self.goal_reachable(p.name));
        if self.bounds.lost_parks > 0 {
            properties.push(Property::sometimes(
                SOMETIMES_RETRY_REMEMBERED,
                |_, s: &DeliveryState| {
                    s.remembered_answers
                        .iter()
                        .any(|e| matches!(e.ended, RefEnded::Delivered { .. }))
                },
            ));
        }
        if self.bounds.lines.len() > self.bounds.delivered_memory as usize {
            properties.push(Property::sometimes(
                SOMETIMES_REMEMBERED_EVICTED,
                |m, s: &DeliveryState| s.remembers.len() > m.bounds.delivered_memory as usize,
            ));
        }
    }

    /// Whether the `sometimes` goal `name` can be reached at these bounds, as far as the bounds
    /// say: a goal that needs a crash, a failure, a dead letter, a collection, a redrive, a
    /// discard or a group park is listed with group parkers only where the bounds allow it.
    fn goal_reachable(&self, name: &str) -> bool {
        let b = &self.bounds;
        let crashes = b.crashes > 0;
        // A line dies by failing `failures_max` times, or alone in a batch the repeat bound closes.
        let dead = b.failures >= b.failures_max || b.crashes >= b.repeats_max;
        let group_park = b.group_parkers > 0 || (0..b.lines.len()).any(|i| b.arrival_len(i) == 2);
        match name {
            SOMETIMES_REPEAT | SOMETIMES_CRASH_MID_BATCH | SOMETIMES_CUT_HAND_OVER_COUNTED => {
                crashes
            }
            SOMETIMES_DEAD => dead,
            // A retry needs a failure that does not kill the line.
            SOMETIMES_RETRY => b.failures > 0 && b.failures_max > 1,
            // Or a batch of two lines or more closed by the repeat bound, its lines parked again.
            SOMETIMES_SEEN => {
                let cost = |(_, line): &(u64, String)| line.chars().count() + 1;
                let two_fit = b
                    .lines
                    .windows(2)
                    .any(|w| cost(&w[0]) + cost(&w[1]) <= b.budget);
                (b.failures > 0 && b.failures_max > 1) || (b.crashes >= b.repeats_max && two_fit)
            }
            SOMETIMES_COLLECTED_DELIVERED => b.collects > 0,
            SOMETIMES_REDRIVEN_HANDED => b.redrives > 0 && dead,
            SOMETIMES_DISCARD => b.discards > 0 && dead,
            SOMETIMES_TORN_GROUP => crashes && group_park,
            _ => true,
        }
    }

    /// The actions of group commit (`Bounds::group_parkers`): a caller joins while fewer than
    /// `group_parkers` parks are in progress (the lines in order, each until it is answered,
    /// and the invalid line once), a leader writes the pending group when no write is in
    /// progress, the write's fsync returns, and each caller takes its answer, in any order.
    fn group_actions(&self, state: &DeliveryState, actions: &mut Vec<Action>) {
        let in_progress = state.pending.len() + state.writing.len() + state.answered.len();
        if in_progress < self.bounds.group_parkers as usize {
            let idle =
                |member: Member| !state.is_done(member, &self.bounds) && !state.in_progress(member);
            if let Some(index) = (0..self.bounds.lines.len()).find(|&i| idle(Member::Line(i))) {
                actions.push(Action::JoinGroup(Member::Line(index)));
            }
            if idle(Member::Invalid) {
                actions.push(Action::JoinGroup(Member::Invalid));
            }
        }
        if state.writing.is_empty() && !state.pending.is_empty() {
            actions.push(Action::WriteGroup);
        }
        if !state.writing.is_empty() {
            actions.push(Action::SyncGroup);
        }
        for (member, _) in &state.answered {
            actions.push(Action::AckPark(*member));
        }
    }

    /// The caller's line and request.
    fn member_line(&self, member: Member) -> Option<(u64, &str)> {
        match member {
            Member::Line(index) => {
                let (request, line) = self.bounds.lines.get(index)?;
                Some((*request, line.as_str()))
            }
            Member::Invalid => Some((self.bounds.lines.len() as u64 + 1, Bounds::INVALID_LINE)),
        }
    }

    /// The caller's park on `queue`, as the leader plans it (a park of one line, D3, D16): its
    /// seq, or `None` when it is refused.
    fn park_member(&self, queue: &mut Reference, member: Member) -> Option<Option<u64>> {
        let (request, line) = self.member_line(member)?;
        Some(
            queue
                .try_park_all(&[(request, line)])
                .ok()
                .and_then(|seqs| seqs.first().copied()),
        )
    }

    /// The leader takes the pending group and plans every caller's answer on a copy of the
    /// queue: the record (the new lines) is written, not yet durable. A group with no new line
    /// (every caller refused or answered from the mirror) writes nothing and is answered at
    /// once.
    fn write_group(&self, state: &mut DeliveryState) -> Option<()> {
        let members = std::mem::take(&mut state.pending);
        let mut planned = state.queue.clone();
        let mut group = Vec::with_capacity(members.len());
        for member in members {
            group.push((member, self.park_member(&mut planned, member)?));
        }
        let mut new_lines = planned.mirror().next_seq - state.queue.mirror().next_seq;
        // Known bad: one refusal fails the whole group, and nothing is written.
        if self.variant == Variant::RefusalFailsGroup && group.iter().any(|(_, a)| a.is_none()) {
            group.iter_mut().for_each(|(_, answer)| *answer = None);
            new_lines = 0;
        }
        if new_lines == 0 {
            state.answered.extend(group);
            return Some(());
        }
        // Known bad: every answer is posted when the record is written, before its fsync.
        if self.variant == Variant::AckBeforeSync {
            state.answered.extend(group.iter().copied());
        }
        state.writing = group;
        Some(())
    }

    /// The leader's fsync returns: the record's lines are parked (durable), and every caller's
    /// answer is posted.
    fn sync_group(&self, state: &mut DeliveryState) -> Option<()> {
        let group = std::mem::take(&mut state.writing);
        let before = state.queue.mirror().next_seq;
        for &(member, _) in &group {
            // Known bad: the record holds the leader's line only; its followers' are lost.
            if self.variant == Variant::GroupDropsFollower && state.queue.mirror().next_seq > before
            {
                break;
            }
            self.park_member(&mut state.queue, member)?;
        }
        state.arrived += usize::try_from(state.queue.mirror().next_seq - before).ok()?;
        if self.variant != Variant::AckBeforeSync {
            state.answered.extend(group);
        }
        Some(())
    }

    /// A crash ends every park in progress: the record written and not synced is lost (a torn
    /// group), no caller takes its answer, and the daemon parks those lines again after the
    /// restart, but for a line it recorded a notified event for: a boundary can hand a line over
    /// between its group's fsync and its caller's return, and a settle clear it, so that a park
    /// again would be a new line (D3).
    fn crash_group(&self, state: &mut DeliveryState) {
        if !state.writing.is_empty() {
            state.torn += 1;
        }
        let cut: Vec<usize> = state
            .pending
            .iter()
            .chain(state.writing.iter().map(|(m, _)| m))
            .chain(state.answered.iter().map(|(m, _)| m))
            .filter(|m| !state.is_done(**m, &self.bounds))
            .filter_map(|m| match m {
                Member::Line(index) => Some(*index),
                Member::Invalid => None,
            })
            .collect();
        state.retries.extend(cut);
        state.retries.sort_unstable();
        state.retries.dedup();
        state.pending.clear();
        state.writing.clear();
        state.answered.clear();
    }

    /// The discard step: every dead letter leaves the queue (D8), and the ghost record keeps what
    /// the queue held before and lost by it.
    fn discard(&self, state: &mut DeliveryState) {
        let held_before: Vec<(u64, u64)> = state.items().map(|i| (i.seq, i.request)).collect();
        let mut dead_before: Vec<u64> = state.queue.dead_letters().iter().map(|i| i.seq).collect();
        dead_before.sort_unstable();
        state.queue.discard_all();
        if self.variant == Variant::DiscardParked {
            state.queue.mirror.parked.clear(); // known bad: the parked lines go too
        }
        let mut removed: Vec<(u64, u64)> = held_before
            .into_iter()
            .filter(|&(seq, _)| state.held(seq) == 0)
            .collect();
        removed.sort_unstable();
        if self.bounds.delivered_memory > 0 {
            let next_seq = state.queue.mirror().next_seq;
            let discarded = removed.iter().filter(|(seq, _)| dead_before.contains(seq));
            state
                .remembers
                .extend(discarded.map(|&(seq, request)| RememberRecord {
                    request,
                    seq,
                    next_seq,
                    delivered: false,
                }));
        }
        state.discards.push(DiscardRecord {
            dead_before,
            removed,
            handed_before: state.handed.len(),
        });
    }

    /// The settle step: the daemon's own outcomes go to the queue and into the ghost record.
    fn settle(&self, state: &mut DeliveryState, batch: &RefBatch, own: &[bool]) -> Option<()> {
        let mut given = own.to_vec();
        if self.variant == Variant::FailWholeBatch && given.contains(&false) {
            given = vec![false; given.len()];
        }
        state.queue.settle(batch.id, &given).ok()?;
        if self.bounds.delivered_memory > 0 {
            let next_seq = state.queue.mirror().next_seq;
            let delivered = batch.items.iter().zip(own).filter(|(_, ok)| **ok);
            state
                .remembers
                .extend(delivered.map(|(item, _)| RememberRecord {
                    request: item.request,
                    seq: item.seq,
                    next_seq,
                    delivered: true,
                }));
        }
        state.settles.push(SettleRecord {
            batch: batch.id,
            attempt: batch.attempt,
            outcomes: batch
                .items
                .iter()
                .map(|i| i.seq)
                .zip(own.iter().copied())
                .collect(),
            handed_before: state.handed.len(),
        });
        state.phase = Phase::Idle;
        Some(())
    }
}

impl DeliveryState {
    /// Seqs that `park` acknowledged (with group parkers: every line whose record is durable,
    /// and every seq a caller was answered, durable or not).
    pub(super) fn acknowledged(&self) -> std::ops::RangeInclusive<u64> {
        let answered = self.acks.iter().filter_map(|a| a.answer).max().unwrap_or(0);
        1..=(self.arrived as u64).max(answered)
    }

    /// Whether the caller took an answer, in this life or an earlier one.
    pub(super) fn is_answered(&self, member: Member) -> bool {
        self.acks.iter().any(|a| a.member == member)
    }

    /// Whether the daemon is done with the caller's line: the caller took an answer, or the
    /// daemon recorded a notified event for the line (its park reached the mirror, and a batch
    /// handed it over before the caller returned).
    pub(super) fn is_done(&self, member: Member, bounds: &Bounds) -> bool {
        self.is_answered(member)
            || match member {
                Member::Line(index) => bounds.lines.get(index).is_some_and(|(request, _)| {
                    self.notified.iter().any(|e| e.request == *request)
                }),
                Member::Invalid => false,
            }
    }

    /// Whether the caller's park is in progress: pending, written or answered, not yet returned.
    pub(super) fn in_progress(&self, member: Member) -> bool {
        self.pending.contains(&member)
            || self.writing.iter().any(|(m, _)| *m == member)
            || self.answered.iter().any(|(m, _)| *m == member)
    }

    /// How many lines the record written and not yet synced parks anew (0 when no write is in
    /// progress).
    pub(super) fn new_lines_written(&self) -> usize {
        let next = self.queue.mirror().next_seq;
        self.writing
            .iter()
            .filter(|(_, answer)| answer.is_some_and(|seq| seq >= next))
            .count()
    }

    /// Whether the daemon's own outcome settled `seq` `Delivered` (a scan, not a set: the
    /// properties ask this of a handful of seqs at every state, and building a set there cost
    /// more than the scans).
    pub(super) fn is_delivered(&self, seq: u64) -> bool {
        self.settles
            .iter()
            .flat_map(|r| r.outcomes.iter())
            .any(|&(q, ok)| ok && q == seq)
    }

    /// How many places of the queue (parked, in flight, dead) hold `seq`: 1 for a line the queue
    /// keeps, 0 for one it does not, more for a line kept twice.
    pub(super) fn held(&self, seq: u64) -> usize {
        self.items().filter(|i| i.seq == seq).count()
    }

    /// Whether a discard removed `seq` while it was a dead letter (D8): the one way a line may
    /// leave the queue undelivered.
    pub(super) fn is_discarded(&self, seq: u64) -> bool {
        self.discards.iter().any(|d| {
            d.dead_before.contains(&seq) && d.removed.iter().any(|&(removed, _)| removed == seq)
        })
    }

    /// Whether `seq` is among the dead letters.
    pub(super) fn is_dead(&self, seq: u64) -> bool {
        self.queue.dead_letters().iter().any(|i| i.seq == seq)
    }

    /// Every item the queue holds, with its failures.
    pub(super) fn items(&self) -> impl Iterator<Item = &RefItem> {
        self.queue
            .parked()
            .iter()
            .chain(
                self.queue
                    .in_flight()
                    .into_iter()
                    .flat_map(|b| b.items.iter()),
            )
            .chain(self.queue.dead_letters())
    }

    /// Settles before the last redrive of `seq` (0 if it was never redriven): its failures
    /// count from there.
    /// Whether the repeat bound closed a batch of `seq` alone since its last redrive (its
    /// death, D8).
    pub(super) fn closed_alone(&self, seq: u64) -> bool {
        let redrives = self
            .redrives
            .iter()
            .rposition(|r| r.seqs.contains(&seq))
            .map_or(0, |i| i + 1);
        self.closes.iter().any(|c| {
            c.redrives_before >= redrives && matches!(&c.batch.items[..], [i] if i.seq == seq)
        })
    }

    pub(super) fn last_redrive(&self, seq: u64) -> usize {
        self.redrives
            .iter()
            .rev()
            .find(|r| r.seqs.contains(&seq))
            .map_or(0, |r| r.settles_before)
    }

    /// The boundary that first returned batch `id`.
    pub(super) fn original(&self, id: u64) -> Option<&BoundaryRecord> {
        self.boundaries
            .iter()
            .map(Arc::as_ref)
            .find(|r| r.batch.id == id)
    }
}
