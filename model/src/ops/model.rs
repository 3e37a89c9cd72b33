//! [`OpsModel`], operator requests to a live session as a stateright [`Model`]: the daemon stats
//! and reads the request file, applies each request it has not applied as one record (refused
//! when the request names another life than the mirror's), syncs it, crashes and opens again,
//! and its session ends and a new one of the same name begins with a new life; each operator's
//! command reads the mirror's life and window, then submits (it adopts the request or answer of
//! its id and change, refuses an id of another change, or adds its request naming that life,
//! dropping the requests of that life the window holds), polls the mirror lock-free, fsyncs it
//! and answers (or refuses an answer of another change), and prunes its request; operators crash
//! and retry with the same id, and run a second command under the same id with another change.
//! The [`OpsAction`]s have their guards in `actions`, the transitions are in `next_state`, and
//! the properties are listed by spec id (`properties.rs` names them); `narrate.rs` tells a step
//! in the spec's words.

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

/// A session's life: the id a mirror gets when it is created, new for each session of a name
/// (shown `life <n+1>`; the crate's is random, the model's counts the sessions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Life(pub u8);

impl fmt::Display for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "life {}", self.0 + 1)
    }
}

/// A change an operator asks (a verb and the dead letters it names): its operator's first
/// command asks change 0 (shown `a`), a second command under the same id change 1 (`b`). The
/// window keeps a 64-bit check of each applied request's change; the model keeps the number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Change(pub u8);

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", char::from(b'a' + self.0))
    }
}

/// One request of the request file: its id, the change it asks and the life it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// Its id.
    pub id: RequestId,
    /// The change it asks.
    pub change: Change,
    /// The life of the mirror its command read before it submitted.
    pub life: Life,
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (change {}, {})", self.id, self.change, self.life)
    }
}

/// One record of the mirror: the answer to one request, and the id it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// The id the record names (`None` for [`OpsVariant::ApplyWithoutId`]).
    pub id: Option<RequestId>,
    /// The check of the change the request asked, which the window keeps.
    pub change: Change,
    /// Ghost: the request whose change the record makes (or refuses), named or not.
    pub change_of: RequestId,
    /// The record makes the change; false: the request is refused and nothing changed.
    pub made: bool,
    /// Ghost: the life the request named (the record itself is of the mirror's life).
    pub named: Life,
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
    /// The requests of the request file as the daemon last read it whose id its view does not
    /// hold, in the file's order (one leaves when its record is durable).
    pub read: Vec<Request>,
    /// The stat stamp it holds is the file's current one (a write since makes it stale; the
    /// stamp is a version counter, compared only for equality, so a flag is the same).
    pub stamp_fresh: bool,
    /// Half of a look at the file is done: the stamp taken, not yet read (for
    /// [`OpsVariant::StampAfterRead`]: read, the stamp not yet taken).
    pub looking: bool,
    /// The record it appended and has not yet made durable: the next request waits for it.
    pub unsynced: Option<Record>,
}

impl Daemon {
    /// A daemon that has just created a mirror: it found no request file (an open that creates a
    /// mirror removes one), so its stamp is the file's.
    fn created() -> Daemon {
        Daemon {
            alive: true,
            view: BTreeSet::new(),
            read: Vec::new(),
            stamp_fresh: true,
            looking: false,
            unsynced: None,
        }
    }
}

/// Where an operator's command is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperatorPhase {
    /// Not started.
    Idle,
    /// It read the mirror's life and window ([`Operator::look`]) and has not yet submitted.
    Looked,
    /// Its request is submitted (or one of the same id and change found in the file): it polls
    /// the mirror.
    Waiting {
        /// The life of the mirror its command read, which its request names.
        life: Life,
    },
    /// It crashed before answering; a retry with the same id follows.
    Down,
    /// It reported the answer the mirror holds for its id.
    Answered,
    /// It reported a refusal (`OpIdReused`): its id names a request of another change, found
    /// at its submit or in the record that answers its id.
    Refused,
}

/// What a command read of the mirror before it submits: the life its request names, and the
/// window, made durable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Look {
    /// The mirror's life.
    pub life: Life,
    /// The ids the window holds: the requests of that life its submit drops from the file.
    pub window: BTreeSet<RequestId>,
    /// The change of the window's answer to the command's own id, if it holds one.
    pub answered: Option<Change>,
}

/// An answer an operator reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Answer {
    /// The change of the request the answer's record answers.
    pub change: Change,
    /// The life of the mirror that holds the record.
    pub life: Life,
}

/// Ghost: what the last step did that a `sometimes` property looks for. The next step clears
/// it, so that it does not multiply the states after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// An open found records a crash kept in the page cache and took them in.
    KeptAtOpen,
    /// A command found its answer in the window it read before it submitted (a retry of a
    /// command whose request was answered).
    RetryAnswered,
    /// A command refused at its submit an id that names a request of another change.
    ReuseRefused,
    /// A command refused at its answer an id whose record answers another change.
    ReuseRefusedAtAnswer,
}

/// An operator with one id of its own, and a command at a time under it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operator {
    /// Where its command is.
    pub phase: OperatorPhase,
    /// The change its command asks.
    pub change: Change,
    /// What its command read of the mirror, between its look and its submit.
    pub look: Option<Look>,
    /// Crashes so far.
    pub crashes: u8,
    /// Ghost: the answer it reported (with [`OperatorPhase::Answered`]).
    pub answer: Option<Answer>,
}

/// The state: the files, the daemon, the operators, and ghost history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpsState {
    /// The mirror's life (the number of sessions that ended before it).
    pub life: Life,
    /// The mirror's durable records, in order.
    pub durable: Vec<Record>,
    /// The mirror's records appended after them and not yet fsynced (in the page cache).
    pub volatile: Vec<Record>,
    /// The request file `<name>.ops`: the requests in order (each write is whole and atomic).
    pub file: Vec<Request>,
    /// The daemon.
    pub daemon: Daemon,
    /// Daemon crashes so far.
    pub daemon_crashes: u8,
    /// The operators; operator `n` owns [`RequestId`]`(n)`.
    pub operators: Vec<Operator>,
    /// Ghost: what the last step did, for the `sometimes` properties.
    pub event: Option<Event>,
}

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpsAction {
    /// The daemon takes the request file's stat stamp (it differs from the one it holds).
    Stat,
    /// The daemon reads the request file.
    Read,
    /// The daemon appends one record for the first request it read whose id its view does not
    /// hold (volatile): the change, or a refusal when the request names another life.
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
    /// The holder ends the session (`Queue::remove`: the request file, then the mirror), and a
    /// new session of the same name creates its mirror with a new life.
    EndSession,
    /// The operator's command (its first run, or a retry after a crash) reads the mirror
    /// lock-free: its life and window, which it fsyncs.
    Look(RequestId),
    /// The operator runs a second command under its id with another change; the command reads
    /// the mirror as [`OpsAction::Look`] does.
    Reuse(RequestId),
    /// The operator's command submits: it adopts the answer or the waiting request of its id
    /// and change, refuses an id of another change, or adds its request, naming the life it
    /// read, under the file's lock (dropping the requests of that life its window holds).
    Submit(RequestId),
    /// The operator reads the mirror lock-free, finds its id, fsyncs the mirror and answers (or
    /// refuses, when the record answers another change).
    Poll(RequestId),
    /// The operator removes its answered request from the request file.
    Prune(RequestId),
    /// The operator crashes before answering.
    OperatorCrash(RequestId),
}

/// What a command's submit does, by what its look read and what the file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Submitted {
    /// The window it read answers its id and change: it reports that answer.
    Answered(Change),
    /// The file holds a request of its id and change: it waits for that one.
    Pending,
    /// It adds its request.
    Added,
    /// Its id names an answered (`answered: true`) or waiting request of another change:
    /// refused, nothing written.
    Refused {
        /// The request of its id is answered in the window it read.
        answered: bool,
    },
}

/// The ops model: a daemon applying operators' requests, both crashing, sessions ending.
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

    /// The record a lock-free reader finds for `id`, durable or volatile.
    pub fn record_of(&self, id: RequestId) -> Option<&Record> {
        self.durable
            .iter()
            .chain(&self.volatile)
            .find(|r| r.id == Some(id))
    }

    /// An fsync of the mirror, by the daemon or an operator: every volatile record is durable.
    fn fsync(&mut self) {
        let volatile = std::mem::take(&mut self.volatile);
        self.durable.extend(volatile);
    }

    /// The first request the daemon read whose id its view does not hold.
    pub fn next_request(&self) -> Option<Request> {
        let daemon = &self.daemon;
        daemon
            .read
            .iter()
            .copied()
            .find(|r| !daemon.view.contains(&r.id))
    }

    /// An operator command writes the request file (whole, atomic): the stat stamp changes.
    fn write_file(&mut self, file: Vec<Request>) {
        self.file = file;
        self.daemon.stamp_fresh = false;
    }

    /// The operator of `id`.
    pub fn operator(&self, id: RequestId) -> &Operator {
        &self.operators[usize::from(id.0)]
    }

    fn operator_mut(&mut self, id: RequestId) -> &mut Operator {
        &mut self.operators[usize::from(id.0)]
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

    /// The request file a submit of `look` writes before its own change: without the requests
    /// of the life it read whose id its window holds (the variant: of any life).
    pub fn dropped(&self, file: &[Request], look: &Look) -> Vec<Request> {
        let any_life = self.variant == OpsVariant::DropAnyLife;
        file.iter()
            .copied()
            .filter(|r| !(look.window.contains(&r.id) && (any_life || r.life == look.life)))
            .collect()
    }

    /// What the submit of operator `id` does in `state` (`None` when it has not looked).
    pub fn submitted(&self, state: &OpsState, id: RequestId) -> Option<Submitted> {
        let operator = state.operator(id);
        let look = operator.look.as_ref()?;
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command MUST refuse (`OpIdReused`, exit 2) a request whose id names a waiting or
        //# answered request of another change.
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# The same change again under the same id waits for, or reports, that request's answer.
        let adopt =
            |change: Change| change == operator.change || self.variant == OpsVariant::AdoptReusedId;
        if let Some(change) = look.answered {
            return Some(match adopt(change) {
                true => Submitted::Answered(change),
                false => Submitted::Refused { answered: true },
            });
        }
        let file = self.dropped(&state.file, look);
        Some(match file.iter().find(|r| r.id == id) {
            Some(waiting) if adopt(waiting.change) => Submitted::Pending,
            Some(_) => Submitted::Refused { answered: false },
            None => Submitted::Added,
        })
    }

    /// The poll of operator `id` finds a record of another change for its id, and (the
    /// protocol) refuses rather than answers.
    pub fn poll_refuses(&self, state: &OpsState, id: RequestId) -> bool {
        self.variant != OpsVariant::AnswerAnyChange
            && state
                .record_of(id)
                .is_some_and(|r| r.change != state.operator(id).change)
    }

    /// The operator found its id and answers: the fsync first, unless the variant skips it.
    fn answer(&self, next: &mut OpsState, id: RequestId) {
        if self.variant != OpsVariant::AnswerBeforeDurable {
            next.fsync();
        }
        let life = next.life;
        let answer = next.record_of(id).map(|r| Answer {
            change: r.change,
            life,
        });
        let operator = next.operator_mut(id);
        operator.phase = OperatorPhase::Answered;
        operator.answer = answer;
    }

    /// A command of operator `id` asking `change` reads the mirror lock-free: its life and its
    /// window, which it makes durable when the window holds anything.
    fn look(next: &mut OpsState, id: RequestId, change: Change) {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command reads the mirror's life with its window, before it writes the request file,
        //# and its request names that life
        if next
            .durable
            .iter()
            .chain(&next.volatile)
            .any(|r| r.id.is_some())
        {
            next.fsync();
        }
        let look = Look {
            life: next.life,
            window: named(&next.durable),
            answered: next.record_of(id).map(|r| r.change),
        };
        let operator = next.operator_mut(id);
        operator.phase = OperatorPhase::Looked;
        operator.change = change;
        operator.look = Some(look);
        operator.answer = None;
    }

    /// True when a step other than a crash, a session end or a second command is enabled: the
    /// model's "at rest" is its negation.
    pub fn busy(&self, state: &OpsState) -> bool {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        actions.iter().any(|action| {
            !matches!(
                action,
                OpsAction::Crash { .. }
                    | OpsAction::OperatorCrash(_)
                    | OpsAction::EndSession
                    | OpsAction::Reuse(_)
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
            change: Change(0),
            look: None,
            crashes: 0,
            answer: None,
        };
        vec![OpsState {
            life: Life(0),
            durable: Vec::new(),
            volatile: Vec::new(),
            file: Vec::new(),
            daemon: Daemon {
                stamp_fresh: false,
                ..Daemon::created()
            },
            daemon_crashes: 0,
            operators: vec![
                operator;
                usize::from(self.bounds.operators.min(OpsBounds::OPERATORS_MAX))
            ],
            event: None,
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
            // The holder ends its session between two of its steps.
            if state.life.0 < self.bounds.session_ends
                && !daemon.looking
                && daemon.unsynced.is_none()
            {
                actions.push(OpsAction::EndSession);
            }
        } else {
            actions.push(OpsAction::Open);
        }
        for (n, operator) in state.operators.iter().enumerate() {
            let id = RequestId(n as u8);
            let in_file = state.file.iter().any(|r| r.id == id);
            let visible = state.record_of(id).is_some();
            // Operators r1 to r<id_reuses> each run one second command.
            let second = operator.change == Change(0) && n < usize::from(self.bounds.id_reuses);
            match operator.phase {
                OperatorPhase::Idle => actions.push(OpsAction::Look(id)),
                OperatorPhase::Looked => actions.push(OpsAction::Submit(id)),
                OperatorPhase::Waiting { .. } => {
                    if visible {
                        actions.push(OpsAction::Poll(id));
                    }
                    // The variant prunes on seeing its record, durable or not.
                    if self.variant == OpsVariant::PruneBeforeDurable && visible && in_file {
                        actions.push(OpsAction::Prune(id));
                    }
                    if operator.crashes < self.bounds.operator_crashes {
                        actions.push(OpsAction::OperatorCrash(id));
                    }
                }
                OperatorPhase::Down => {
                    actions.push(OpsAction::Look(id));
                    if second {
                        actions.push(OpsAction::Reuse(id));
                    }
                }
                OperatorPhase::Answered => {
                    if in_file && state.durable.iter().any(|r| r.id == Some(id)) {
                        actions.push(OpsAction::Prune(id));
                    }
                    if second {
                        actions.push(OpsAction::Reuse(id));
                    }
                }
                OperatorPhase::Refused => {}
            }
        }
    }

    fn next_state(&self, state: &OpsState, action: OpsAction) -> Option<OpsState> {
        let mut next = state.clone();
        next.event = None;
        match action {
            OpsAction::Stat => {
                next.daemon.stamp_fresh = true;
                next.daemon.looking = self.stat_first();
            }
            OpsAction::Read => {
                // The requests whose id the view holds are skipped: only the others are kept.
                let view = &state.daemon.view;
                next.daemon.read = state
                    .file
                    .iter()
                    .copied()
                    .filter(|r| !view.contains(&r.id))
                    .collect();
                next.daemon.looking = !self.stat_first();
            }
            OpsAction::Apply => {
                let request = state.next_request()?;
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# A request that names another life than the mirror's (or a life, or none, where
                //# the mirror names none, or one) MUST be refused (answered `refused`, nothing
                //# changed): it was meant for another session of the name.
                let made = request.life == state.life || self.variant == OpsVariant::ApplyAnyLife;
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# It MUST apply a request as one record that both makes the change and names the
                //# request's id, made durable before the next request.
                let record = Record {
                    id: (self.variant != OpsVariant::ApplyWithoutId).then_some(request.id),
                    change: request.change,
                    change_of: request.id,
                    made,
                    named: request.life,
                };
                next.volatile.push(record);
                next.daemon.unsynced = Some(record);
            }
            OpsAction::Sync => {
                let record = state.daemon.unsynced?;
                next.fsync();
                // The view grows only by records the daemon made durable: by the id the record
                // names, or (the variant) by its in-memory set of applied ids.
                let applied = record.id.unwrap_or(record.change_of);
                next.daemon.view.insert(applied);
                next.daemon.unsynced = None;
                next.daemon.read.retain(|r| r.id != applied);
            }
            OpsAction::Crash { power_loss } => {
                if power_loss {
                    next.volatile.clear();
                }
                next.daemon = Daemon {
                    alive: false,
                    stamp_fresh: false,
                    ..Daemon::created()
                };
                next.daemon_crashes += 1;
            }
            OpsAction::Open => {
                if !state.volatile.is_empty() {
                    next.event = Some(Event::KeptAtOpen);
                }
                next.fsync();
                next.daemon.alive = true;
                next.daemon.view = named(&next.durable);
            }
            OpsAction::EndSession => {
                // The request file goes first, then the mirror; the new session's mirror is
                // empty and has a new life, and its daemon starts afresh.
                next.write_file(Vec::new());
                next.durable.clear();
                next.volatile.clear();
                next.life = Life(state.life.0 + 1);
                next.daemon = Daemon::created();
            }
            OpsAction::Look(id) => {
                let change = state.operator(id).change;
                Self::look(&mut next, id, change);
            }
            OpsAction::Reuse(id) => {
                Self::look(&mut next, id, Change(state.operator(id).change.0 + 1));
            }
            OpsAction::Submit(id) => {
                let submitted = self.submitted(state, id)?;
                let look = next.operator_mut(id).look.take()?;
                let change = state.operator(id).change;
                match submitted {
                    Submitted::Answered(answered) => {
                        // The look made the window durable: the answer it read stands.
                        let operator = next.operator_mut(id);
                        operator.phase = OperatorPhase::Answered;
                        operator.answer = Some(Answer {
                            change: answered,
                            life: look.life,
                        });
                        next.event = Some(Event::RetryAnswered);
                    }
                    Submitted::Refused { .. } => {
                        next.operator_mut(id).phase = OperatorPhase::Refused;
                        next.event = Some(Event::ReuseRefused);
                    }
                    Submitted::Pending | Submitted::Added => {
                        //= spec/mirror.md#m17-operator-requests-to-a-live-session
                        //# It removes only requests that name the window's life and whose id the window holds.
                        let mut file = self.dropped(&state.file, &look);
                        if submitted == Submitted::Added {
                            file.push(Request {
                                id,
                                change,
                                life: look.life,
                            });
                        }
                        if file != state.file {
                            next.write_file(file);
                        }
                        next.operator_mut(id).phase = OperatorPhase::Waiting { life: look.life };
                    }
                }
            }
            OpsAction::Poll(id) => {
                if self.poll_refuses(state, id) {
                    next.fsync();
                    next.operator_mut(id).phase = OperatorPhase::Refused;
                    next.event = Some(Event::ReuseRefusedAtAnswer);
                } else {
                    //= spec/mirror.md#m17-operator-requests-to-a-live-session
                    //# It MUST fsync the mirror before it reports that answer, and before it
                    //# removes the request from the request file.
                    self.answer(&mut next, id);
                }
            }
            OpsAction::Prune(id) => {
                //= spec/mirror.md#m17-operator-requests-to-a-live-session
                //# It removes only requests that name the window's life and whose id the window holds.
                let file = state.file.iter().copied().filter(|r| r.id != id).collect();
                next.write_file(file);
            }
            OpsAction::OperatorCrash(id) => {
                let operator = next.operator_mut(id);
                operator.phase = OperatorPhase::Down;
                operator.crashes += 1;
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
            Property::always(M17_ONE_LIFE, changes_only_its_life),
            Property::always(M17_ANSWER_CHANGE, answer_is_for_the_change),
            // The unsynced record is the one the daemon appended last.
            Property::sometimes(SOMETIMES_APPLIED_AFTER_CRASH, |_, s: &OpsState| {
                s.daemon.unsynced.is_some() && s.daemon_crashes > 0
            }),
            Property::sometimes(SOMETIMES_KEPT_AT_OPEN, |_, s: &OpsState| {
                s.event == Some(Event::KeptAtOpen)
            }),
            Property::sometimes(SOMETIMES_RETRY_ANSWERED, |_, s: &OpsState| {
                s.event == Some(Event::RetryAnswered)
            }),
            Property::sometimes(SOMETIMES_ALL_ANSWERED, |_, s: &OpsState| {
                s.operators.len() >= 2
                    && s.operators
                        .iter()
                        .all(|o| o.phase == OperatorPhase::Answered)
            }),
            Property::sometimes(SOMETIMES_STALE_REFUSED, |_, s: &OpsState| {
                s.durable.iter().chain(&s.volatile).any(|r| !r.made)
            }),
            Property::sometimes(SOMETIMES_REUSE_REFUSED, |_, s: &OpsState| {
                s.event == Some(Event::ReuseRefused)
            }),
            Property::sometimes(SOMETIMES_REUSE_REFUSED_AT_ANSWER, |_, s: &OpsState| {
                s.event == Some(Event::ReuseRefusedAtAnswer)
            }),
        ]
    }
}

/// Used by the properties: the operator of `id` answered.
pub(super) fn answered(state: &OpsState, id: RequestId) -> bool {
    state.operator(id).phase == OperatorPhase::Answered
}
