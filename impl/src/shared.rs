//! [`SharedQueue`]: one queue shared by the threads of a daemon, with group commit.
//!
//! RocksDB's write thread without its timer: the first parker to find no write in progress
//! becomes the leader, takes every park queued behind it, writes them as one record with one
//! append and one fsync, and hands each caller its own answer; parks that arrive meanwhile queue
//! for the next leader. An uncontended park is a group of one: the write it always was.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
#[cfg(not(shuttle))]
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(shuttle)]
use shuttle::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::group::Unit;
use crate::line::Line;
use crate::mirror::MirrorState;
use crate::queue::{Queue, Stats};
use crate::storage::{FsStorage, Storage};
use crate::types::{Batch, BatchId, Budget, Item, Outcome, RequestId, Seq, Settlement};

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
    /// Units waiting for the next group, by ticket, in join order.
    pending: VecDeque<(u64, Unit)>,
    /// Answers of written groups their callers have not collected yet, by ticket.
    answers: BTreeMap<u64, Result<Vec<Seq>>>,
    next_ticket: u64,
    /// A leader panicked while it held the queue: every call fails.
    lost: bool,
}

type Guard<'a, S> = MutexGuard<'a, Inner<S>>;

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
                    lost: false,
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
    pub fn park(&self, request: RequestId, line: &str) -> Result<Seq> {
        let unit = Unit {
            lines: vec![(request, Line::from(line))],
            whole: false,
        };
        let seqs = self.commit(unit)?;
        debug_assert_eq!(seqs.len(), 1);
        seqs.first()
            .copied()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a park answered without a seq"))
    }

    /// Parks `lines` as [`Queue::park_all`] does, all or none, as one unit of a group.
    ///
    /// # Errors
    ///
    /// As [`Queue::park_all`], and as [`SharedQueue::park`].
    pub fn park_all(&self, lines: &[(RequestId, &str)]) -> Result<Vec<Seq>> {
        let unit = Unit {
            lines: lines
                .iter()
                .map(|(request, line)| (*request, Line::from(*line)))
                .collect(),
            whole: true,
        };
        self.commit(unit)
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

    /// How many units wait for a leader (the tests' view of a group forming).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Runs `call` on the queue alone, once no group is being written; the parks queued
    /// meanwhile go after it.
    fn exclusive<R>(&self, call: impl FnOnce(&mut Queue<S>) -> R) -> Result<R> {
        let mut inner = self.lock();
        loop {
            if inner.lost {
                return Err(lost());
            }
            if let Some(queue) = inner.queue.as_mut() {
                let value = call(queue);
                // Parks that queued during the call wait for a leader: wake one.
                self.shared.turn.notify_all();
                return Ok(value);
            }
            inner = self.wait(inner);
        }
    }

    /// Queues `unit` and returns its answer: written by this caller as the leader of a group,
    /// or by another leader.
    fn commit(&self, unit: Unit) -> Result<Vec<Seq>> {
        //= spec/delivery.md#d16-durable-park
        //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive
        //# while another's write and fsync are in progress MUST be written
        //# together, in one append and one fsync, once that fsync returns, each caller with its own
        //# answer: a refused line or request fails its caller only.
        let mut inner = self.lock();
        let ticket = inner.next_ticket;
        inner.next_ticket += 1;
        inner.pending.push_back((ticket, unit));
        loop {
            if let Some(answer) = inner.answers.remove(&ticket) {
                return answer;
            }
            if inner.lost {
                inner.pending.retain(|(queued, _)| *queued != ticket);
                return Err(lost());
            }
            inner = if inner.queue.is_some() {
                self.lead(inner)
            } else {
                self.wait(inner)
            };
        }
    }

    /// Takes the queue and the queued units (the oldest first, as many as `group_bytes_max`
    /// allows, at least one), writes them outside the lock, and posts every answer.
    fn lead<'a>(&'a self, mut inner: Guard<'a, S>) -> Guard<'a, S> {
        let Some(mut queue) = inner.queue.take() else {
            return inner;
        };
        let group = take_group(&mut inner.pending, queue.config().group_bytes_max);
        drop(inner);
        let leading = Leading {
            shared: &self.shared,
        };
        let (tickets, units): (Vec<u64>, Vec<Unit>) = group.into_iter().unzip();
        // Every answer is posted after `park_group` returned, so after the fsync that covers
        // its record: no member is acknowledged before it.
        let answers = queue.park_group(&units);
        crate::observe::group_written(&units);
        std::mem::forget(leading);
        let mut inner = self.lock();
        debug_assert_eq!(answers.len(), tickets.len(), "every member answered");
        for (ticket, answer) in tickets.into_iter().zip(answers) {
            let earlier = inner.answers.insert(ticket, answer);
            debug_assert!(earlier.is_none(), "a member answered once");
        }
        inner.queue = Some(queue);
        self.shared.turn.notify_all();
        inner
    }

    fn lock(&self) -> Guard<'_, S> {
        // A panic inside a call is recorded in `lost`; the data behind the lock stays whole.
        self.shared
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&'a self, inner: Guard<'a, S>) -> Guard<'a, S> {
        self.shared
            .turn
            .wait(inner)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The oldest units of `pending` whose lines hold at most `bytes_max` bytes together; at least
/// one, whatever its size (its own call refuses it if it is too large).
fn take_group(pending: &mut VecDeque<(u64, Unit)>, bytes_max: usize) -> Vec<(u64, Unit)> {
    let mut bytes = 0usize;
    let mut taken = 0;
    for (_, unit) in pending.iter() {
        bytes = bytes.saturating_add(unit.bytes());
        if taken > 0 && bytes > bytes_max {
            break;
        }
        taken += 1;
    }
    pending.drain(..taken).collect()
}

/// Held by a leader while it writes outside the lock: if the write panics, the queue is gone
/// with the leader's stack, and every waiting caller is told instead of waiting for ever.
struct Leading<'a, S: Storage> {
    shared: &'a Shared<S>,
}

impl<S: Storage> Drop for Leading<'_, S> {
    fn drop(&mut self) {
        let mut inner = self
            .shared
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        inner.lost = true;
        self.shared.turn.notify_all();
    }
}

fn lost() -> Error {
    Error::new(
        ErrorKind::Internal,
        "a call panicked while it held the shared queue; open the mirror again",
    )
}
