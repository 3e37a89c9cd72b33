//! [`AsyncQueue`] (feature `tokio`): a [`SharedQueue`]'s calls as `async fn`s, for a tokio
//! daemon, whose parks hold no thread while they wait for their group's fsync.
//!
//! A park joins the pending group as a `SharedQueue` park does, with a one-shot channel for its
//! answer instead of a thread on a condition variable, and awaits the channel. One blocking task
//! (`shared.rs`'s `Writer`) leads the groups through the leader routine the threads use, and
//! stops when no park waits; the next park starts another. Every other call runs on the blocking
//! pool over `SharedQueue`'s exclusive path: it holds the queue alone, so it holds a thread
//! while it runs, as any fsync must.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::engine::group::Unit;
use crate::error::{Error, ErrorKind, Result};
use crate::io::storage::{FsStorage, Storage};
use crate::mirror::MirrorState;
use crate::queue::{Queue, Stats};
use crate::shared::{SharedQueue, lost, one_seq};
use crate::types::{Batch, BatchId, Budget, Item, Outcome, Parked, RequestId, Seq, Settlement};

/// A [`SharedQueue`] for async callers (`Clone`, `Send`, `Sync`): the same calls as `async fn`s,
/// the same group commit, the same answers (D16, D22, M10), on tokio.
///
/// A caller waiting for its park's fsync holds no thread of tokio's blocking pool: its line
/// joins the pending group with a one-shot channel for its answer, and one blocking task writes
/// and fsyncs each group and answers every member, group after group until no park waits. A
/// burst of 200 parks holds one blocking thread, not the 200 that `spawn_blocking` around each
/// `SharedQueue::park` would hold, and shares its fsyncs as the threads of a `SharedQueue` do.
/// Parks of an `AsyncQueue` and of the `SharedQueue` it was made of ([`AsyncQueue::shared`])
/// may join one group.
///
/// The other calls (`boundary`, `settle`, reads, `reopen`...) run one blocking task each, over
/// the exclusive path of [`SharedQueue`]: a group being written finishes first, and the parks
/// queued meanwhile go after the call.
///
/// # Cancellation
///
/// A park's future dropped after its first poll drops its answer, not its line: the line is in
/// the pending group, and the group is written and fsynced as if the caller still waited (D16).
/// A park of the same line again gets the seq it was given (D3). A future dropped before its
/// first poll has done nothing. Any other call's future dropped after
/// its first poll leaves its blocking task running to its end: a dropped `boundary` may still
/// have handed a batch over, which [`AsyncQueue::in_flight`] returns.
///
/// # Panics
///
/// Every call panics outside a tokio runtime (it spawns on the current runtime's blocking
/// pool, as [`tokio::task::spawn_blocking`] does); a call whose blocking task panicked panics its
/// caller with the same payload, as the `SharedQueue` call would. A panic in the writer while
/// it holds the queue fails every park of its group and every park queued behind it with
/// `Internal`, and every call after it, as on a `SharedQueue`; no caller waits for ever.
///
/// # Example
///
/// ```
/// use parkline::{AsyncQueue, Budget, RequestId};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let dir = tempfile::tempdir()?;
///     let queue = AsyncQueue::open(dir.path().join("s1.mirror")).await?;
///     let parks: Vec<_> = (1..=8)
///         .map(|request| {
///             let queue = queue.clone();
///             let line = format!("[r{request}] ok");
///             tokio::spawn(async move { queue.park(RequestId(request), &line).await })
///         })
///         .collect();
///     for park in parks {
///         park.await??;
///     }
///     let batch = queue.boundary(Budget(1 << 20)).await?.expect("eight parked");
///     assert_eq!(batch.items.len(), 8);
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct AsyncQueue<S: Storage = FsStorage> {
    queue: SharedQueue<S>,
}

impl<S: Storage> Clone for AsyncQueue<S> {
    fn clone(&self) -> Self {
        AsyncQueue {
            queue: self.queue.clone(),
        }
    }
}

impl<S: Storage> From<SharedQueue<S>> for AsyncQueue<S> {
    /// The async calls over `queue`'s state: the two handles share their groups.
    fn from(queue: SharedQueue<S>) -> Self {
        AsyncQueue { queue }
    }
}

impl AsyncQueue<FsStorage> {
    /// Opens the mirror at `path` as [`Queue::open`] does, on the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`Queue::open`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        unblock(move || SharedQueue::open(path))
            .await
            .map(Self::from)
    }

    /// As [`AsyncQueue::open`], with a given [`Config`].
    ///
    /// # Errors
    ///
    /// As [`Queue::open_with`].
    pub async fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        unblock(move || SharedQueue::open_with(path, config))
            .await
            .map(Self::from)
    }

    /// As [`SharedQueue::reopen`]: every caller that got the same failure may call it, and the
    /// mirror is reopened once.
    ///
    /// # Errors
    ///
    /// As [`Queue::reopen`].
    pub async fn reopen(&self) -> Result<()> {
        self.exclusive(|queue| queue.reopen()).await
    }

    /// As [`SharedQueue::remove`]: the session ends after every park already queued.
    ///
    /// # Errors
    ///
    /// As [`Queue::remove`].
    pub async fn remove(&self, force: bool) -> Result<()> {
        self.exclusive(move |queue| queue.remove(force)).await
    }
}

impl<S: Storage + Send + 'static> AsyncQueue<S> {
    /// Shares `queue` for async callers.
    pub fn new(queue: Queue<S>) -> Self {
        AsyncQueue::from(SharedQueue::new(queue))
    }

    /// The synchronous handle over the same state, for a thread of the daemon that is not a
    /// task: its parks join the same groups.
    pub fn shared(&self) -> &SharedQueue<S> {
        &self.queue
    }

    /// Resolves once the queue holds a parked line (at once when it holds one now), holding no
    /// thread while it waits: a session's task awaits it between turns, woken by the park that
    /// gives it work.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::wait_parked`].
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use parkline::{AsyncQueue, RequestId};
    /// let dir = tempfile::tempdir()?;
    /// let queue = AsyncQueue::open(dir.path().join("s1.mirror")).await?;
    /// let waiting = tokio::spawn({
    ///     let queue = queue.clone();
    ///     async move { queue.wait_parked().await }
    /// });
    /// queue.park(RequestId(1), "done").await?;
    /// waiting.await??;
    /// # Ok(()) }
    /// ```
    pub async fn wait_parked(&self) -> Result<()> {
        std::future::poll_fn(|cx| self.queue.poll_parked(cx)).await
    }

    /// Parks `line` for `request` as [`SharedQueue::park`] does; returns once the line is
    /// durable (D16), holding no thread while it waits.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::park`].
    pub async fn park(&self, request: RequestId, line: &str) -> Result<Parked> {
        self.commit(Unit::one(request, line))
            .await
            .and_then(one_seq)
    }

    /// Parks `lines` as [`Queue::park_all`] does, all or none, as one unit of a group.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::park_all`].
    pub async fn park_all(&self, lines: &[(RequestId, &str)]) -> Result<Vec<Parked>> {
        self.commit(Unit::whole(lines)).await
    }

    /// As [`Queue::boundary`]: parks queued before it are in its batch or behind it.
    ///
    /// # Errors
    ///
    /// As [`Queue::boundary`].
    pub async fn boundary(&self, budget: Budget) -> Result<Option<Batch>> {
        self.exclusive(move |queue| queue.boundary(budget)).await
    }

    /// As [`Queue::settle`].
    ///
    /// # Errors
    ///
    /// As [`Queue::settle`].
    pub async fn settle(&self, batch: BatchId, outcomes: &[Outcome]) -> Result<Settlement> {
        let outcomes = outcomes.to_vec();
        self.exclusive(move |queue| queue.settle(batch, &outcomes))
            .await
    }

    /// As [`Queue::redrive`].
    ///
    /// # Errors
    ///
    /// As [`Queue::redrive`].
    pub async fn redrive(&self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        let seqs = seqs.to_vec();
        self.exclusive(move |queue| queue.redrive(&seqs)).await
    }

    /// As [`Queue::redrive_all`].
    ///
    /// # Errors
    ///
    /// As [`Queue::redrive_all`].
    pub async fn redrive_all(&self) -> Result<Vec<Seq>> {
        self.exclusive(SharedQueue::redrive_all).await
    }

    /// As [`Queue::discard`].
    ///
    /// # Errors
    ///
    /// As [`Queue::discard`].
    pub async fn discard(&self, seqs: &[Seq]) -> Result<Vec<Seq>> {
        let seqs = seqs.to_vec();
        self.exclusive(move |queue| queue.discard(&seqs)).await
    }

    /// As [`Queue::discard_all`].
    ///
    /// # Errors
    ///
    /// As [`Queue::discard_all`].
    pub async fn discard_all(&self) -> Result<Vec<Seq>> {
        self.exclusive(SharedQueue::discard_all).await
    }

    /// As [`Queue::idle`].
    ///
    /// # Errors
    ///
    /// As [`Queue::idle`].
    pub async fn idle(&self) -> Result<()> {
        self.exclusive(SharedQueue::idle).await
    }

    /// The parked lines, in seq order.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn parked(&self) -> Result<Vec<Item>> {
        self.exclusive(SharedQueue::parked).await
    }

    /// The batch handed over and not settled, if any.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn in_flight(&self) -> Result<Option<Batch>> {
        self.exclusive(SharedQueue::in_flight).await
    }

    /// The dead letters, in seq order.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn dead_letters(&self) -> Result<Vec<Item>> {
        self.exclusive(SharedQueue::dead_letters).await
    }

    /// What the mirror holds for `request` ([`Queue::find`]).
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn find(&self, request: RequestId) -> Result<Option<Item>> {
        self.exclusive(move |queue| queue.find(request)).await
    }

    /// The whole state ([`Queue::state`]).
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn state(&self) -> Result<MirrorState> {
        self.exclusive(SharedQueue::state).await
    }

    /// The counters of [`Queue::stats`]: `fsyncs` counts one per group.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn stats(&self) -> Result<Stats> {
        self.exclusive(SharedQueue::stats).await
    }

    /// Whether the handle refuses work until reopened.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn is_poisoned(&self) -> Result<bool> {
        self.exclusive(SharedQueue::is_poisoned).await
    }

    /// The mirror's path.
    ///
    /// # Errors
    ///
    /// As [`SharedQueue::parked`].
    pub async fn path(&self) -> Result<PathBuf> {
        self.exclusive(SharedQueue::path).await
    }

    /// Queues `unit` for the next group and awaits its answer; no thread waits with it.
    async fn commit(&self, unit: Unit) -> Result<Vec<Parked>> {
        let runtime = tokio::runtime::Handle::current();
        //= spec/delivery.md#d16-durable-park
        //# **Async park.** On an async handle (`AsyncQueue`), a park whose future is dropped after its line
        //# joined the pending parks MUST still be written, in the group that takes it, as if its caller
        //# waited: only the answer is dropped.
        // The unit is the shared state's from here, and the writer is not this future's: a drop
        // of this future at the `.await` below leaves both.
        let answer = self.queue.join_async(unit, &runtime)?;
        // A sender dropped unanswered went with a writer that panicked while it held the queue.
        answer.await.unwrap_or_else(|_| Err(lost()))
    }

    /// Runs `call` on the blocking pool with a handle of the shared queue.
    async fn exclusive<R: Send + 'static>(
        &self,
        call: impl FnOnce(&SharedQueue<S>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let queue = self.queue.clone();
        unblock(move || call(&queue)).await
    }
}

/// Runs `call` on the current runtime's blocking pool and returns its answer; a panic goes on
/// in the caller.
async fn unblock<R: Send + 'static>(
    call: impl FnOnce() -> Result<R> + Send + 'static,
) -> Result<R> {
    match tokio::task::spawn_blocking(call).await {
        Ok(answer) => answer,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(_) => Err(Error::new(
                ErrorKind::Internal,
                "the runtime shut down before the call ran; it did nothing",
            )),
        },
    }
}
