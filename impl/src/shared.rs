//! [`SharedQueue`]: one queue shared by the threads of a daemon, with group commit.
//!
//! RocksDB's write thread without its timer: the first parker to find no write in progress
//! becomes the leader, takes every park queued behind it, writes them as one record with one
//! append and one fsync, and hands each caller its own answer; parks that arrive meanwhile queue
//! for the next leader. An uncontended park is a group of one: the write it always was.
//!
//! One leader routine, `Shared::lead`, serves two kinds of waiter: a thread blocked on the
//! condition variable, which collects its answer by ticket, and (feature `tokio`) an
//! `AsyncQueue` caller's future, which awaits a one-shot channel while one blocking task, the
//! `Writer`, leads group after group for it and holds no more threads however many wait. Both
//! kinds may join one group. An exclusive call waiting for the queue goes before the next group,
//! so a stream of parks cannot starve a `boundary`.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
#[cfg(not(shuttle))]
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

#[cfg(shuttle)]
use shuttle::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::config::Config;
use crate::engine::group::Unit;
use crate::error::{Error, ErrorKind, Result};
use crate::io::storage::{FsStorage, Storage};
use crate::mirror::MirrorState;
use crate::queue::{Queue, Stats};
use crate::types::{Batch, BatchId, Budget, Item, Outcome, Parked, RequestId, Seq, Settlement};

/// A [`Queue`] shared by many threads (`Clone`, `Send`, `Sync`): every call takes `&self`, and
/// parks that arrive while another's write is in progress share the next append and fsync
/// (group commit, D16, D22). Reads return owned values.
///
/// Each caller gets its own answer: an invalid line, a conflicting or dead request fails its
/// caller only; two callers parking one request with the same line both get its one seq (D3).
/// A `park_all` joins a group as one unit, all or none. Seqs follow the order in which callers
/// joined. A failed write or fsync fails every caller whose line it held and poisons the handle
/// (M10); [`SharedQueue::reopen`] is the way on, once for all of them.
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use parkline::{RequestId, SharedQueue};
/// let dir = tempfile::tempdir()?;
/// let queue = SharedQueue::open(dir.path().join("s1.mirror"))?;
/// let children: Vec<_> = (1..=8)
///     .map(|request| {
///         let queue = queue.clone();
///         std::thread::spawn(move || queue.park(RequestId(request), &format!("[r{request}] ok")))
///     })
///     .collect();
/// for child in children {
///     child.join().expect("a parker")?;
/// }
/// assert_eq!(queue.parked()?.len(), 8);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SharedQueue<S: Storage = FsStorage> {
    shared: Arc<Shared<S>>,
}

impl<S: Storage> Clone for SharedQueue<S> {
    fn clone(&self) -> Self {
        SharedQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

#[derive(Debug)]
struct Shared<S: Storage> {
    inner: Mutex<Inner<S>>,
    /// Signalled whenever the queue comes back from a leader or an exclusive call.
    turn: Condvar,
}

#[derive(Debug)]
struct Inner<S: Storage> {
    /// The queue; `None` while a leader writes a group outside the lock.
    queue: Option<Queue<S>>,
    /// Units waiting for the next group, in join order.
    pending: VecDeque<Member>,
    /// Answers of written groups their callers have not collected yet, by ticket.
    answers: BTreeMap<u64, Result<Vec<Parked>>>,
    next_ticket: u64,
    /// Exclusive calls waiting for the queue: no leader takes it for a group meanwhile, so a
    /// `boundary` is not starved by a stream of parks (the parks queued meanwhile go after it).
    exclusive_waiting: usize,
    /// A `Writer` is running for the async callers, or about to.
    #[cfg(feature = "tokio")]
    writing: bool,
    /// A leader panicked while it held the queue: every call fails.
    lost: bool,
    /// Tasks awaiting a parked line ([`SharedQueue::poll_parked`]), woken after every call.
    wakers: Vec<Waker>,
}

/// A caller's unit waiting for a group, and where its answer goes.
#[derive(Debug)]
struct Member {
    ticket: u64,
    unit: Unit,
    reply: Reply,
}

/// The answers of a group's async members, which its leader sends ([`Replies::send`]); none
/// without the `tokio` feature.
#[derive(Debug, Default)]
#[must_use]
struct Replies {
    #[cfg(feature = "tokio")]
    sends: Vec<(Sender, Result<Vec<Parked>>)>,
}

impl Replies {
    #[cfg(feature = "tokio")]
    fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }

    /// Sends each answer; a future dropped meanwhile has no receiver, and its answer is dropped
    /// (its line is written).
    fn send(self) {
        #[cfg(feature = "tokio")]
        for (sender, answer) in self.sends {
            let _ = sender.send(answer);
        }
    }
}

/// Where a member's answer goes once its group is written.
#[derive(Debug)]
enum Reply {
    /// Into `Inner::answers`, where the thread waiting on the condition variable collects it.
    Collect,
    /// Down a channel to an async caller's future; a future dropped meanwhile drops the answer,
    /// not the line, which its group writes all the same.
    #[cfg(feature = "tokio")]
    Send(Sender),
}

type Guard<'a, S> = MutexGuard<'a, Inner<S>>;

/// Where an async caller's answer is sent.
#[cfg(feature = "tokio")]
type Sender = tokio::sync::oneshot::Sender<Result<Vec<Parked>>>;

impl SharedQueue<FsStorage> {
    /// Opens the mirror at `path` as [`Queue::open`] does, for sharing.
    ///
    /// # Errors
    ///
    /// As [`Queue::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Queue::open(path).map(SharedQueue::new)
    }

    /// As [`SharedQueue::open`], with a given [`Config`].
    ///
    /// # Errors
    ///
    /// As [`Queue::open_with`].
    pub fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Self> {
        Queue::open_with(path, config).map(SharedQueue::new)
    }

    /// Reopens a poisoned handle in place ([`Queue::reopen`]); on a handle that is not poisoned
    /// it does nothing, so every caller that got the same failure may call it and the mirror is
    /// reopened once.
    ///
    /// # Errors
    ///
    /// As [`Queue::reopen`].
    pub fn reopen(&self) -> Result<()> {
        self.exclusive(|queue| {
            if queue.is_poisoned() {
                queue.reopen()
            } else {
                Ok(())
            }
        })?
    }

    /// Ends the session as [`Queue::remove`] does, after every park already queued.
    ///
    /// # Errors
    ///
    /// As [`Queue::remove`].
    pub fn remove(&self, force: bool) -> Result<()> {
        self.exclusive(|queue| queue.remove(force))?
    }
}

impl<S: Storage> SharedQueue<S> {
    /// Shares `queue`.
    pub fn new(queue: Queue<S>) -> Self {
        SharedQueue {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    queue: Some(queue),
                    pending: VecDeque::new(),
                    answers: BTreeMap::new(),
                    next_ticket: 0,
                    exclusive_waiting: 0,
                    #[cfg(feature = "tokio")]
                    writing: false,
                    lost: false,
                    wakers: Vec::new(),
                }),
                turn: Condvar::new(),
            }),
        }
    }

    /// The queue back, to go on with it alone (its state, poison and storage as they are): once
    /// this is the last handle (every clone dropped, so no call is in progress). `None` while
    /// another handle exists, and when a call panicked while it held the queue (then it is
    /// gone; open the mirror again).
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> parkline::Result<()> {
    /// use parkline::{Config, MemStorage, Queue, RequestId, SharedQueue};
    /// let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// let shared = SharedQueue::new(queue);
    /// std::thread::scope(|scope| {
    ///     for request in 1..=3 {
    ///         let shared = &shared;
    ///         scope.spawn(move || shared.park(RequestId(request), "done"));
    ///     }
    /// });
    /// let queue = shared.into_queue().expect("the last handle");
    /// assert_eq!(queue.parked().len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn into_queue(self) -> Option<Queue<S>> {
        let shared = Arc::into_inner(self.shared)?;
        let inner = shared
            .inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        // The last handle: no call waits, so no unit is queued and no answer uncollected.
        debug_assert!(inner.pending.is_empty() && inner.answers.is_empty());
        inner.queue.filter(|_| !inner.lost)
    }

    /// Parks `line` for `request` as [`Queue::park`] does, sharing the append and fsync with the
    /// parks queued beside it; returns once the line is durable (D16).
    ///
    /// # Errors
    ///
    /// As [`Queue::park`], for this caller's line alone; `Io` when the group's write or fsync
    /// failed (then the handle is poisoned for every caller).
    pub fn park(&self, request: RequestId, line: &str) -> Result<Parked> {
        self.commit(Unit::one(request, line)).and_then(one_seq)
    }

    /// Parks `lines` as [`Queue::park_all`] does, all or none, as one unit of a group.
    ///
    /// # Errors
    ///
    /// As [`Queue::park_all`], and as [`SharedQueue::park`].
    pub fn park_all(&self, lines: &[(RequestId, &str)]) -> Result<Vec<Parked>> {
        self.commit(Unit::whole(lines))
    }

    /// As [`Queue::boundary`]: parks queued before it are in its batch or behind it.
    ///
    /// # Errors
    ///
    /// As [`Queue::boundary`].
    pub fn boundary(&self, budget: Budget) -> Result<Option<Batch>> {
        self.exclusive(|queue| queue.boundary(budget))?
    }

    /// As [`Queue::settle`].
    ///
    /// # Errors
    ///
    /// As [`Queue::settle`].
    pub fn settle(&self, batch: BatchId, outcomes: &[Outcome]) -> Result<Settlement> {
        self.exclusive(|queue| queue.settle(batch, outcomes))?
    }

    /// As [`Queue::redrive`].
    ///
    /// # Errors
    ///
    /// As [`Queue::redrive`].
    pub fn redrive(&self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        self.exclusive(|queue| queue.redrive(seqs))?
    }

    /// As [`Queue::redrive_all`].
    ///
    /// # Errors
    ///
    /// As [`Queue::redrive_all`].
    pub fn redrive_all(&self) -> Result<Vec<Seq>> {
        self.exclusive(Queue::redrive_all)?
    }

    /// As [`Queue::discard`].
    ///
    /// # Errors
    ///
    /// As [`Queue::discard`].
    pub fn discard(&self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        self.exclusive(|queue| queue.discard(seqs))?
    }

    /// As [`Queue::discard_all`].
    ///
    /// # Errors
    ///
    /// As [`Queue::discard_all`].
    pub fn discard_all(&self) -> Result<Vec<Seq>> {
        self.exclusive(Queue::discard_all)?
    }

    /// As [`Queue::idle`].
    ///
    /// # Errors
    ///
    /// As [`Queue::idle`].
    pub fn idle(&self) -> Result<()> {
        self.exclusive(Queue::idle)?
    }

    /// The parked lines, in seq order.
    ///
    /// # Errors
    ///
    /// `Internal` when a call panicked while it held the queue.
    pub fn parked(&self) -> Result<Vec<Item>> {
        self.exclusive(|queue| queue.parked().to_vec())
    }

    /// The batch handed over and not settled, if any.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn in_flight(&self) -> Result<Option<Batch>> {
        self.exclusive(|queue| queue.in_flight().cloned())
    }

    /// The dead letters, in seq order.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn dead_letters(&self) -> Result<Vec<Item>> {
        self.exclusive(|queue| queue.dead_letters().to_vec())
    }

    /// What the mirror holds for `request` ([`Queue::find`]).
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn find(&self, request: RequestId) -> Result<Option<Item>> {
        self.exclusive(|queue| queue.find(request).cloned())
    }

    /// The whole state ([`Queue::state`]).
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn state(&self) -> Result<MirrorState> {
        self.exclusive(|queue| queue.state().clone())
    }

    /// The counters of [`Queue::stats`]: `fsyncs` counts one per group.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn stats(&self) -> Result<Stats> {
        self.exclusive(|queue| queue.stats())
    }

    /// Whether the handle refuses work until reopened.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn is_poisoned(&self) -> Result<bool> {
        self.exclusive(|queue| queue.is_poisoned())
    }

    /// The mirror's path.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub fn path(&self) -> Result<PathBuf> {
        self.exclusive(|queue| queue.path())
    }

    /// Waits until the queue holds a parked line, for at most `timeout`: `true` once it does (at
    /// once when it holds one now), `false` when the time ran out. A daemon's session loop
    /// waits here between turns, woken by the park that gives it work, instead of polling.
    ///
    /// # Errors
    ///
    /// `Internal` when a call panicked while it held the queue.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{RequestId, SharedQueue};
    /// use std::time::Duration;
    /// let dir = tempfile::tempdir()?;
    /// let queue = SharedQueue::open(dir.path().join("s1.mirror"))?;
    /// assert!(!queue.wait_parked(Duration::from_millis(1))?);
    /// std::thread::scope(|scope| {
    ///     scope.spawn(|| queue.park(RequestId(1), "done"));
    ///     assert!(queue.wait_parked(Duration::from_secs(60)).unwrap());
    /// });
    /// # Ok(()) }
    /// ```
    pub fn wait_parked(&self, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            if inner.lost {
                return Err(lost());
            }
            if inner.holds_parked() {
                return Ok(true);
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Ok(false);
            };
            inner = self
                .shared
                .turn
                .wait_timeout(inner, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Ready once the queue holds a parked line (the future of `AsyncQueue::wait_parked`);
    /// otherwise `cx`'s waker is woken after the next call or group.
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_parked(
        &self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        use std::task::Poll;
        let mut inner = self.shared.lock();
        if inner.lost {
            return Poll::Ready(Err(lost()));
        }
        if inner.holds_parked() {
            return Poll::Ready(Ok(()));
        }
        if !inner.wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            inner.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// A handle that does not keep the queue alive: the store's, for its idle calls.
    pub(crate) fn downgrade(&self) -> WeakSharedQueue<S> {
        WeakSharedQueue(Arc::downgrade(&self.shared))
    }

    /// How many units wait for a leader (the tests' view of a group forming).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.shared.lock().pending.len()
    }

    /// How many exclusive calls wait for the queue.
    #[cfg(test)]
    pub(crate) fn exclusive_waiting(&self) -> usize {
        self.shared.lock().exclusive_waiting
    }

    /// Runs `call` on the queue alone, once no group is being written; the parks queued
    /// meanwhile go after it.
    fn exclusive<R>(&self, call: impl FnOnce(&mut Queue<S>) -> R) -> Result<R> {
        let mut inner = self.shared.lock();
        let mut waited = false;
        loop {
            if inner.lost {
                if waited {
                    inner.exclusive_waiting -= 1;
                }
                return Err(lost());
            }
            if waited && inner.queue.is_some() {
                // Counted off, and the parks held back by the count told, before the call: a
                // call that panics leaves no count behind and no one asleep.
                inner.exclusive_waiting -= 1;
                self.shared.turn.notify_all();
            }
            if let Some(queue) = inner.queue.as_mut() {
                let value = call(queue);
                // Parks that queued during the call wait for a leader: wake one.
                self.shared.signal(&mut inner);
                return Ok(value);
            }
            if !waited {
                waited = true;
                inner.exclusive_waiting += 1;
            }
            inner = self.shared.wait(inner);
        }
    }

    /// Queues `unit` and returns its answer: written by this caller as the leader of a group,
    /// or by another leader.
    fn commit(&self, unit: Unit) -> Result<Vec<Parked>> {
        //= spec/delivery.md#d16-durable-park
        //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive
        //# while another's write and fsync are in progress MUST be written
        //# together, in one append and one fsync, once that fsync returns, each caller with its own
        //# answer: a refused line or request fails its caller only.
        let mut inner = self.shared.lock();
        let ticket = inner.join(unit, Reply::Collect);
        loop {
            if let Some(answer) = inner.answers.remove(&ticket) {
                return answer;
            }
            if inner.lost {
                inner.pending.retain(|member| member.ticket != ticket);
                return Err(lost());
            }
            inner = if inner.may_lead() {
                let (inner, replies) = self.shared.lead(inner);
                // The async members of this thread's group, if any.
                replies.send();
                inner
            } else {
                self.shared.wait(inner)
            };
        }
    }
}

/// A [`SharedQueue`] that does not keep it alive.
#[derive(Debug)]
pub(crate) struct WeakSharedQueue<S: Storage>(std::sync::Weak<Shared<S>>);

impl<S: Storage> WeakSharedQueue<S> {
    /// The queue, while a handle of it lives.
    pub(crate) fn upgrade(&self) -> Option<SharedQueue<S>> {
        self.0.upgrade().map(|shared| SharedQueue { shared })
    }
}

impl<S: Storage> Inner<S> {
    /// Whether the queue, not in a leader's hands, holds a parked line.
    fn holds_parked(&self) -> bool {
        self.queue
            .as_ref()
            .is_some_and(|queue| !queue.parked().is_empty())
    }

    /// Queues `unit` for the next group; its ticket.
    fn join(&mut self, unit: Unit, reply: Reply) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.pending.push_back(Member {
            ticket,
            unit,
            reply,
        });
        ticket
    }

    /// Whether a waiter may take the queue for a group now: it is not being written, and no
    /// exclusive call waits for it.
    fn may_lead(&self) -> bool {
        self.queue.is_some() && self.exclusive_waiting == 0
    }
}

impl<S: Storage> Shared<S> {
    /// The leader routine, for both kinds of waiter: takes the queue and the queued units (the
    /// oldest first, as many as `group_bytes_max` allows, at least one), writes them outside the
    /// lock, posts each thread's answer and returns each async caller's, for the leader to send
    /// once it has let go of what it holds.
    fn lead<'a>(&'a self, mut inner: Guard<'a, S>) -> (Guard<'a, S>, Replies) {
        let Some(mut queue) = inner.queue.take() else {
            return (inner, Replies::default());
        };
        let group = take_group(&mut inner.pending, queue.config().group_bytes_max);
        drop(inner);
        let leading = Leading { shared: self };
        let mut units = Vec::with_capacity(group.len());
        let mut members = Vec::with_capacity(group.len());
        for member in group {
            units.push(member.unit);
            members.push((member.ticket, member.reply));
        }
        // Every answer is handed over after `park_group` returned, so after the fsync that
        // covers its record: no member is acknowledged before it.
        let answers = queue.park_group(&units);
        crate::observe::group_written(queue.storage(), queue.mirror_name(), units.len(), || {
            units.iter().map(|unit| unit.lines.len()).sum()
        });
        std::mem::forget(leading);
        debug_assert_eq!(answers.len(), members.len(), "every member answered");
        let mut inner = self.lock();
        #[cfg(feature = "tokio")]
        let mut sends = Vec::new();
        for ((ticket, reply), answer) in members.into_iter().zip(answers) {
            match reply {
                Reply::Collect => {
                    let earlier = inner.answers.insert(ticket, answer);
                    debug_assert!(earlier.is_none(), "a member answered once");
                }
                // A dropped future's answer has no one to go to.
                #[cfg(feature = "tokio")]
                Reply::Send(sender) if sender.is_closed() => {}
                #[cfg(feature = "tokio")]
                Reply::Send(sender) => sends.push((sender, answer)),
            }
        }
        inner.queue = Some(queue);
        self.signal(&mut inner);
        let replies = Replies {
            #[cfg(feature = "tokio")]
            sends,
        };
        (inner, replies)
    }

    /// The queue is back after a call or a group: every thread waiting on the lock's condition
    /// and every task awaiting a parked line looks again.
    fn signal(&self, inner: &mut Inner<S>) {
        self.turn.notify_all();
        for waker in inner.wakers.drain(..) {
            waker.wake();
        }
    }

    fn lock(&self) -> Guard<'_, S> {
        // A panic inside a call is recorded in `lost`; the data behind the lock stays whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&'a self, inner: Guard<'a, S>) -> Guard<'a, S> {
        self.turn
            .wait(inner)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The oldest units of `pending` whose lines hold at most `bytes_max` bytes together; at least
/// one, whatever its size (its own call refuses it if it is too large).
fn take_group(pending: &mut VecDeque<Member>, bytes_max: usize) -> Vec<Member> {
    let mut bytes = 0usize;
    let mut taken = 0;
    for member in pending.iter() {
        bytes = bytes.saturating_add(member.unit.bytes());
        if taken > 0 && bytes > bytes_max {
            break;
        }
        taken += 1;
    }
    pending.drain(..taken).collect()
}

/// The async callers' leader, on a blocking thread: at most one runs at a time.
#[cfg(feature = "tokio")]
impl<S: Storage + Send + 'static> SharedQueue<S> {
    /// Queues `unit` for the next group, answered down the channel returned, and starts a
    /// [`Writer`] on `runtime`'s blocking pool unless one is running.
    pub(crate) fn join_async(
        &self,
        unit: Unit,
        runtime: &tokio::runtime::Handle,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Vec<Parked>>>> {
        let (sender, answer) = tokio::sync::oneshot::channel();
        let mut inner = self.shared.lock();
        if inner.lost {
            return Err(lost());
        }
        inner.join(unit, Reply::Send(sender));
        if !inner.writing {
            inner.writing = true;
            drop(inner);
            let writer = Writer {
                shared: Arc::clone(&self.shared),
                finished: false,
            };
            // Not awaited: the writer answers through the members' channels, and its work
            // must not depend on any one caller's future staying alive.
            drop(runtime.spawn_blocking(move || writer.run()));
        }
        Ok(answer)
    }
}

/// A blocking task that leads group after group for the async callers until no unit waits.
///
/// One task, not one per caller: the callers' futures wait on their channels and hold no
/// thread, so a burst of parks holds one blocking thread, whatever its size.
#[cfg(feature = "tokio")]
struct Writer<S: Storage> {
    shared: Arc<Shared<S>>,
    finished: bool,
}

#[cfg(feature = "tokio")]
impl<S: Storage> Writer<S> {
    fn run(mut self) {
        let mut inner = self.shared.lock();
        let mut replies = Replies::default();
        loop {
            // Checked under the lock that `join_async` takes: a unit queued after the writer
            // stops finds `writing` false and starts another.
            if inner.pending.is_empty() || inner.lost {
                inner.writing = false;
                break;
            }
            if !inner.may_lead() {
                inner = self.shared.wait(inner);
                continue;
            }
            let (next, led) = self.shared.lead(inner);
            if next.pending.is_empty() {
                replies = led;
            } else if !led.is_empty() {
                // More to write: these callers are answered now, without the lock.
                drop(next);
                led.send();
                inner = self.shared.lock();
                continue;
            }
            inner = next;
        }
        drop(inner);
        self.finished = true;
        // The last group's callers are answered once the writer holds the queue no more: a
        // caller answered last that drops its handle has closed the mirror, and may open it
        // again at once.
        drop(self);
        replies.send();
    }
}

/// A writer that panicked, or that the runtime dropped before it ran (a runtime shutting down
/// drops the blocking tasks not started), is no longer running: the next async caller starts
/// one. (Its units stay queued; a panic also marks the queue lost, through [`Leading`].)
#[cfg(feature = "tokio")]
impl<S: Storage> Drop for Writer<S> {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.lock().writing = false;
        }
    }
}

/// Held by a leader while it writes outside the lock: if the write panics, the queue is gone
/// with the leader's stack, and every waiting caller is told instead of waiting for ever: a
/// thread when it wakes, a future at once (the members of the lost group see their senders
/// dropped with the leader's stack; those still queued are answered here).
struct Leading<'a, S: Storage> {
    shared: &'a Shared<S>,
}

impl<S: Storage> Drop for Leading<'_, S> {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        inner.lost = true;
        #[cfg(feature = "tokio")]
        {
            let pending = std::mem::take(&mut inner.pending);
            for member in pending {
                match member.reply {
                    Reply::Collect => inner.pending.push_back(member),
                    Reply::Send(sender) => {
                        let _ = sender.send(Err(lost()));
                    }
                }
            }
        }
        self.shared.turn.notify_all();
    }
}

/// A park's answer: its one seq.
pub(crate) fn one_seq(seqs: Vec<Parked>) -> Result<Parked> {
    debug_assert_eq!(seqs.len(), 1);
    seqs.first()
        .copied()
        .ok_or_else(|| Error::new(ErrorKind::Internal, "a park answered without a seq"))
}

pub(crate) fn lost() -> Error {
    Error::new(
        ErrorKind::Internal,
        "a call panicked while it held the shared queue; open the mirror again",
    )
}
