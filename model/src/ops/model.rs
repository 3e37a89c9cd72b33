//! [`OpsModel`], operator requests to a live session as a stateright [`Model`]: the daemon stats
//! and reads the request file, applies each request it has not applied as one record, syncs it,
//! crashes and opens again; each operator submits its request, polls the mirror lock-free,
//! fsyncs it and answers, prunes its request, and crashes and retries with the same id. The
//! [`OpsAction`]s have their guards in `actions`, the transitions are in `next_state`, and the
//! properties are listed by spec id (`properties.rs` names them); `narrate.rs` tells a step in
//! the spec's words.

use std::collections::BTreeSet;
use std::fmt;

use stateright::{Model, Property};

use super::bounds::OpsBounds;
use super::properties::*;
use super::variants::OpsVariant;

/// A request's id: operator `n` owns request `n` (shown `r<n+1>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u8);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0 + 1)
    }
}

/// One record of the mirror: the change of one request, and the id it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// The id the record names (`None` for [`OpsVariant::ApplyWithoutId`]).
    pub id: Option<RequestId>,
    /// Ghost: the request whose change the record makes, named or not.
    pub change_of: RequestId,
}

/// The daemon, the holder of the mirror's lock: its memory, lost at a crash.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Daemon {
    /// The process runs (false between a crash and the next open).
    pub alive: bool,
    /// The window of applied ids as the daemon holds it: decoded from the durable records at
    /// open, and grown by each record it made durable ([`OpsVariant::ApplyWithoutId`]: its
    /// in-memory set of applied ids).
    pub view: BTreeSet<RequestId>,
    /// The request file as the daemon last read it.
    pub read: Vec<RequestId>,
    /// The stat stamp it holds is the file's current one (a write since makes it stale; the
    /// stamp is a version counter, compared only for equality, so a flag is the same).
    pub stamp_fresh: bool,
    /// Half of a look at the file is done: the stamp taken, not yet read (for
    /// [`OpsVariant::StampAfterRead`]: read, the stamp not yet taken).
    pub looking: bool,
    /// The record it appended and has not yet made durable: the next request waits for it.
    pub unsynced: Option<Record>,
}

/// Where an operator is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperatorPhase {
    /// Not started.
    Idle,
    /// Its request is submitted (or found in the file at a retry): it polls the mirror.
    Waiting,
    /// It crashed before answering; a retry with the same id follows.
    Down,
    /// It reported its answer.
    Answered,
}

/// An operator command with one request of its own id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operator {
    /// Where it is.
    pub phase: OperatorPhase,
    /// Crashes so far.
    pub crashes: u8,
    /// Ghost: it added its request to the file at least once.
    pub submitted: bool,
    /// Ghost: a retry found the answer in the mirror.
    pub retry_answered: bool,
}

/// The state: the files, the daemon, the operators, and ghost history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpsState {
    /// The mirror's durable records, in order.
    pub durable: Vec<Record>,
    /// The mirror's records appended after them and not yet fsynced (in the page cache).
    pub volatile: Vec<Record>,
    /// The request file `<name>.ops`: the requests in order (each write is whole and atomic).
    pub file: Vec<RequestId>,
    /// The daemon.
    pub daemon: Daemon,
    /// Daemon crashes so far.
    pub daemon_crashes: u8,
    /// The operators; operator `n` owns [`RequestId`]`(n)`.
    pub operators: Vec<Operator>,
    /// Ghost: a record was appended after a daemon crash.
    pub applied_after_crash: bool,
    /// Ghost: an open found records a crash kept in the page cache and took them in.
    pub kept_at_open: bool,
}

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpsAction {
    /// The daemon takes the request file's stat stamp (it differs from the one it holds).
    Stat,
    /// The daemon reads the request file.
    Read,
    /// The daemon appends one record for the first request it read whose id its view does not
    /// hold (volatile).
    Apply,
    /// The daemon fsyncs the mirror and takes its record into its view.
    Sync,
    /// The daemon crashes: a killed process (`power_loss: false`) keeps the volatile records
    /// in the page cache, a power loss drops them.
    Crash {
        /// The volatile records are dropped.
        power_loss: bool,
    },
    /// The daemon opens the mirror after a crash: it fsyncs it (M10) and decodes its view from
    /// the records.
    Open,
    /// The operator adds its request to the request file.
    Submit(RequestId),
    /// The operator reads the mirror lock-free, finds its id, fsyncs the mirror and answers.
    Poll(RequestId),
    /// The operator removes its answered request from the request file.
    Prune(RequestId),
    /// The operator crashes before answering.
    OperatorCrash(RequestId),
    /// The operator runs again with the same id: the mirror's answer if it holds the id, else
    /// waiting if the file holds it, else a new submit.
    Retry(RequestId),
}

/// The ops model: a daemon applying operators' requests, both crashing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpsModel {
    /// The bounds.
    pub bounds: OpsBounds,
    /// Which protocol the model follows.
    pub variant: OpsVariant,
}

impl Default for OpsModel {
    fn default() -> Self {
        OpsModel {
            bounds: OpsBounds::default(),
            variant: OpsVariant::Correct,
        }
    }
}

/// The ids `records` name.
pub(super) fn named(records: &[Record]) -> BTreeSet<RequestId> {
    records.iter().filter_map(|record| record.id).collect()
}

impl OpsState {
    /// The ids a lock-free reader of the mirror finds: durable and volatile records alike (it
    /// reads the page cache).
    pub fn visible(&self) -> BTreeSet<RequestId> {
        let mut ids = named(&self.durable);
        ids.extend(named(&self.volatile));
        ids
    }

    /// The window of the durable mirror: what an open after a power loss would decode.
    pub fn durable_window(&self) -> BTreeSet<RequestId> {
        named(&self.durable)
    }

    /// An fsync of the mirror, by the daemon or an operator: every volatile record is durable.
    fn fsync(&mut self) {
        let volatile = std::mem::take(&mut self.volatile);
        self.durable.extend(volatile);
    }

    /// The first request the daemon read whose id its view does not hold.
    pub fn next_request(&self) -> Option<RequestId> {
        let daemon = &self.daemon;
        daemon
            .read
            .iter()
            .copied()
            .find(|id| !daemon.view.contains(id))
    }

    /// An operator command writes the request file (whole, atomic): the stat stamp changes.
    fn write_file(&mut self, file: Vec<RequestId>) {
        self.file = file;
        self.daemon.stamp_fresh = false;
    }

    fn operator(&self, id: RequestId) -> &Operator {
        &self.operators[usize::from(id.0)]
    }
}

impl OpsModel {
    /// The model of `variant` at `bounds`.
    pub fn new(bounds: OpsBounds, variant: OpsVariant) -> Self {
        OpsModel { bounds, variant }
    }

    /// The first half of a look at the request file is the stat, unless the variant reads first.
    fn stat_first(&self) -> bool {
        self.variant != OpsVariant::StampAfterRead
    }

    /// The operator found its id and answers: the fsync first, unless the variant skips it.
    fn answer(&self, next: &mut OpsState, id: RequestId) {
        if self.variant != OpsVariant::AnswerBeforeDurable {
            next.fsync();
        }
        next.operators[usize::from(id.0)].phase = OperatorPhase::Answered;
    }

    fn submit(next: &mut OpsState, id: RequestId) {
        let mut file = next.file.clone();
        file.push(id);
        next.write_file(file);
        let operator = &mut next.operators[usize::from(id.0)];
        operator.phase = OperatorPhase::Waiting;
        operator.submitted = true;
    }

    /// True when a step other than a crash is enabled: the model's "at rest" is its negation.
    pub fn busy(&self, state: &OpsState) -> bool {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        actions.iter().any(|action| {
            !matches!(
                action,
                OpsAction::Crash { .. } | OpsAction::OperatorCrash(_)
            )
        })
    }
}

impl Model for OpsModel {
    type State = OpsState;
    type Action = OpsAction;

    fn init_states(&self) -> Vec<OpsState> {
        let operator = Operator {
            phase: OperatorPhase::Idle,
            crashes: 0,
            submitted: false,
            retry_answered: false,
        };
        vec![OpsState {
            durable: Vec::new(),
            volatile: Vec::new(),
            file: Vec::new(),
            daemon: Daemon {
                alive: true,
                view: BTreeSet::new(),
                read: Vec::new(),
                stamp_fresh: false,
                looking: false,
                unsynced: None,
            },
            daemon_crashes: 0,
            operators: vec![
                operator;
                usize::from(self.bounds.operators.min(OpsBounds::OPERATORS_MAX))
            ],
            applied_after_crash: false,
            kept_at_open: false,
        }]
    }

    fn actions(&self, state: &OpsState, actions: &mut Vec<OpsAction>) {
        let daemon = &state.daemon;
        if daemon.alive {
            // A look at the file: stat then read (the variant: read then stat), only when the
            // stamp changed; every request read is applied, each made durable before the next.
            let first_half = !daemon.looking && !daemon.stamp_fresh && daemon.unsynced.is_none();
            if (first_half && self.stat_first()) || (daemon.looking && !self.stat_first()) {
                actions.push(OpsAction::Stat);
            }
            if (first_half && !self.stat_first()) || (daemon.looking && self.stat_first()) {
                actions.push(OpsAction::Read);
            }
            if !daemon.looking && daemon.unsynced.is_none() && state.next_request().is_some() {
                actions.push(OpsAction::Apply);
            }
            if daemon.unsynced.is_some() {
                actions.push(OpsAction::Sync);
            }
            if state.daemon_crashes < self.bounds.daemon_crashes {
                actions.push(OpsAction::Crash { power_loss: false });
                actions.push(OpsAction::Crash { power_loss: true });
            }
        } else {
            actions.push(OpsAction::Open);
        }
        let visible = state.visible();
        let durable = state.durable_window();
        for (n, operator) in state.operators.iter().enumerate() {
            let id = RequestId(n as u8);
            match operator.phase {
                OperatorPhase::Idle => actions.push(OpsAction::Submit(id)),
                OperatorPhase::Waiting => {
                    if visible.contains(&id) {
                        actions.push(OpsAction::Poll(id));
                    }
                    // The variant prunes on seeing its record, durable or not.
                    if self.variant == OpsVariant::PruneBeforeDurable
                        && visible.contains(&id)
                        && state.file.contains(&id)
                    {
                        actions.push(OpsAction::Prune(id));
                    }
                    if operator.crashes < self.bounds.operator_crashes {
                        actions.push(OpsAction::OperatorCrash(id));
                    }
                }
                OperatorPhase::Down => actions.push(OpsAction::Retry(id)),
                OperatorPhase::Answered => {
                    if state.file.contains(&id) && durable.contains(&id) {
                        actions.push(OpsAction::Prune(id));
                    }
                }
            }
        }
    }

    fn next_state(&self, state: &OpsState, action: OpsAction) -> Option<OpsState> {
        let mut next = state.clone();
        match action {
            OpsAction::Stat => {
                next.daemon.stamp_fresh = true;
                next.daemon.looking = self.stat_first();
            }
            OpsAction::Read => {
                next.daemon.read = state.file.clone();
                next.daemon.looking = !self.stat_first();
            }
            OpsAction::Apply => {
                let id = state.next_request()?;
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# It MUST apply a request as one record that both makes the change and names the
                //# request's id, made durable before the next request.
                let record = Record {
                    id: (self.variant != OpsVariant::ApplyWithoutId).then_some(id),
                    change_of: id,
                };
                next.volatile.push(record);
                next.daemon.unsynced = Some(record);
                next.applied_after_crash |= state.daemon_crashes > 0;
            }
            OpsAction::Sync => {
                let record = state.daemon.unsynced?;
                next.fsync();
                // The view grows only by records the daemon made durable: by the id the record
                // names, or (the variant) by its in-memory set of applied ids.
                next.daemon
                    .view
                    .insert(record.id.unwrap_or(record.change_of));
                next.daemon.unsynced = None;
            }
            OpsAction::Crash { power_loss } => {
                if power_loss {
                    next.volatile.clear();
                }
                next.daemon = Daemon {
                    alive: false,
                    view: BTreeSet::new(),
                    read: Vec::new(),
                    stamp_fresh: false,
                    looking: false,
                    unsynced: None,
                };
                next.daemon_crashes += 1;
            }
            OpsAction::Open => {
                next.kept_at_open |= !state.volatile.is_empty();
                next.fsync();
                next.daemon.alive = true;
                next.daemon.view = named(&next.durable);
            }
            OpsAction::Submit(id) => {
                // Neither in the file nor answered: an idle operator has never added it.
                Self::submit(&mut next, id);
            }
            OpsAction::Poll(id) => {
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# It MUST fsync the mirror before it reports that answer, and before it removes
                //# the request from the request file.
                self.answer(&mut next, id);
            }
            OpsAction::Prune(id) => {
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# It removes only requests whose id the window holds.
                let file = state.file.iter().copied().filter(|r| *r != id).collect();
                next.write_file(file);
            }
            OpsAction::OperatorCrash(id) => {
                let operator = &mut next.operators[usize::from(id.0)];
                operator.phase = OperatorPhase::Down;
                operator.crashes += 1;
            }
            OpsAction::Retry(id) => {
                if state.visible().contains(&id) {
                    self.answer(&mut next, id);
                    next.operators[usize::from(id.0)].retry_answered = true;
                } else if state.file.contains(&id) {
                    next.operators[usize::from(id.0)].phase = OperatorPhase::Waiting;
                } else {
                    Self::submit(&mut next, id);
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# Every request is applied at most once
            Property::always(M17_AT_MOST_ONCE, at_most_once),
            Property::always(M17_ANSWERED_DURABLE, answered_durable),
            Property::always(M17_VIEW, view_is_the_file),
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# a request a command added is applied once while the session lives
            Property::always(M17_AT_REST, at_rest_all_answered),
            Property::sometimes(SOMETIMES_APPLIED_AFTER_CRASH, |_, s: &OpsState| {
                s.applied_after_crash
            }),
            Property::sometimes(SOMETIMES_KEPT_AT_OPEN, |_, s: &OpsState| s.kept_at_open),
            Property::sometimes(SOMETIMES_RETRY_ANSWERED, |_, s: &OpsState| {
                s.operators.iter().any(|o| o.retry_answered)
            }),
            Property::sometimes(SOMETIMES_ALL_ANSWERED, |_, s: &OpsState| {
                s.operators.len() >= 2
                    && s.operators
                        .iter()
                        .all(|o| o.phase == OperatorPhase::Answered)
            }),
        ]
    }
}

/// Used by the properties: the operator of `id` answered.
pub(super) fn answered(state: &OpsState, id: RequestId) -> bool {
    state.operator(id).phase == OperatorPhase::Answered
}
