//! `AsyncQueue` (feature `tokio`, D16, D3, M10): async parks share the groups of a
//! `SharedQueue`, hold no blocking thread while they wait, survive their future's drop, and are
//! told when the writer fails or panics.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::thread::ThreadId;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use super::shared::{Answer, Ask, Gate, Gated, answered_within, ask, gated};
use super::*;
use crate::AsyncQueue;

/// The worker threads of the tests' runtimes.
const WORKERS: usize = 2;

/// A multi-thread runtime of [`WORKERS`] workers, its blocking pool at tokio's default size,
/// and the threads it started (workers and blocking threads), once its workers are up.
fn counting_runtime() -> (Runtime, Arc<Mutex<HashSet<ThreadId>>>) {
    let started = Arc::new(Mutex::new(HashSet::new()));
    let record = Arc::clone(&started);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .on_thread_start(move || {
            let mut started = record.lock().unwrap_or_else(|e| e.into_inner());
            started.insert(std::thread::current().id());
        })
        .build()
        .expect("a runtime");
    // The workers are started by `build`, each on its own thread; wait until both have begun,
    // so that every thread counted after this is a blocking thread.
    while started.lock().map_or(0, |s| s.len()) < WORKERS {
        std::thread::yield_now();
    }
    (runtime, started)
}

fn blocking_threads(started: &Mutex<HashSet<ThreadId>>) -> usize {
    started.lock().map_or(usize::MAX, |s| s.len()) - WORKERS
}

async fn ask_async(queue: &AsyncQueue<Gated>, what: &Ask) -> Answer {
    let answer = match what {
        Ask::Park(request, line) => queue
            .park(RequestId(*request), line)
            .await
            .map(|seq| vec![seq]),
        Ask::All(lines) => {
            let lines: Vec<(RequestId, &str)> =
                lines.iter().map(|(r, l)| (RequestId(*r), *l)).collect();
            queue.park_all(&lines).await
        }
    };
    answer
        .map(|answers| answers.iter().map(|parked| parked.seq().0).collect())
        .map_err(|e| e.kind())
}

/// How a burst's callers reach the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Through {
    /// `AsyncQueue::park`, a task each.
    Async,
    /// `spawn_blocking` around each `SharedQueue::park`: what a daemon did without the facade.
    SpawnBlocking,
}

/// What a burst showed.
#[derive(Debug)]
struct Burst {
    answers: Vec<Answer>,
    /// File fsyncs the parks took.
    fsyncs: u64,
    /// Blocking threads the runtime started while the callers waited, and in all.
    blocking_waiting: usize,
    blocking: usize,
    /// Threads that appended or fsynced during the burst.
    writers: usize,
    queue: AsyncQueue<Gated>,
    gate: Arc<Gate>,
}

/// Starts `first` so that it leads a group whose fsync waits at the gate, queues each of `rest`
/// behind it in order (each caller joins before the next starts), counts the runtime's threads,
/// opens the gate and collects every answer in that order. The gate's fsync `fail_at` fails.
fn burst(first: Ask, rest: Vec<Ask>, fail_at: u64, through: Through) -> Burst {
    let (runtime, started) = counting_runtime();
    let gate = Arc::new(Gate::default());
    let queue = Queue::with_storage(gated(&gate), "m", Config::default()).expect("create");
    let queue = AsyncQueue::new(queue);
    let fsyncs_before = queue.shared().stats().expect("stats").fsyncs;
    gate.syncs.store(0, Ordering::SeqCst);
    gate.fail_at.store(fail_at, Ordering::SeqCst);
    gate.writers.lock().expect("writers").clear();
    gate.closed.store(true, Ordering::SeqCst);
    let start = |what: Ask| -> JoinHandle<Answer> {
        let queue = queue.clone();
        match through {
            Through::Async => runtime.spawn(async move { ask_async(&queue, &what).await }),
            Through::SpawnBlocking => runtime.spawn_blocking(move || ask(queue.shared(), &what)),
        }
    };
    let mut callers = vec![start(first)];
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    for (i, what) in rest.into_iter().enumerate() {
        callers.push(start(what));
        while queue.shared().pending() < i + 1 {
            std::thread::yield_now();
        }
    }
    let blocking_waiting = blocking_threads(&started);
    gate.closed.store(false, Ordering::SeqCst);
    let answers = runtime.block_on(async {
        let mut answers = Vec::with_capacity(callers.len());
        for caller in callers {
            answers.push(caller.await.expect("a caller"));
        }
        answers
    });
    let fsyncs = queue.shared().stats().map_or(u64::MAX, |s| s.fsyncs) - fsyncs_before;
    let writers = gate.writers.lock().map_or(usize::MAX, |w| w.len());
    Burst {
        answers,
        fsyncs,
        blocking_waiting,
        blocking: blocking_threads(&started),
        writers,
        queue,
        gate,
    }
}

/// `n` parks of distinct requests, `[r{i}] done`, the first alone.
fn parks(n: u64) -> (Ask, Vec<Ask>) {
    let mut asks =
        (1..=n).map(|i| Ask::Park(i, Box::leak(format!("[r{i}] done").into_boxed_str())));
    let first = asks.next().expect("n >= 1");
    (first, asks.collect())
}

/// D16: 200 concurrent async parks on a multi-thread runtime hold one blocking thread, the
/// writer, while they wait, and use at most two in all; they take two fsyncs (the first park's
/// and one for the 199 queued behind it), each gets its own seq, and every line is durable.
#[test]
fn d16_two_hundred_async_parks_use_at_most_two_blocking_threads() {
    let (first, rest) = parks(200);
    let burst = burst(first, rest, 0, Through::Async);
    let seqs: Vec<u64> = burst
        .answers
        .iter()
        .flat_map(|a| a.clone().expect("parked"))
        .collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<u64>>());
    assert_eq!(burst.fsyncs, 2);
    assert_eq!(burst.blocking_waiting, 1, "the writer alone");
    assert!(
        burst.blocking <= 2,
        "{} blocking threads for 200 async parks",
        burst.blocking
    );
    assert_eq!(burst.writers, 1, "one thread wrote every group");
    let image = burst.gate.durable_image().expect("the durable image opens");
    let durable: Vec<(u64, u64, String)> = image
        .parked()
        .iter()
        .map(|item| (item.seq.0, item.request.0, item.line.to_string()))
        .collect();
    let expected: Vec<(u64, u64, String)> =
        (1..=200).map(|i| (i, i, format!("[r{i}] done"))).collect();
    assert_eq!(durable, expected);
}

/// The check above can fail: the same burst through `spawn_blocking` around each
/// `SharedQueue::park` holds a blocking thread for every waiting park.
#[test]
fn a_park_through_spawn_blocking_holds_a_thread_while_it_waits() {
    let (first, rest) = parks(200);
    let burst = burst(first, rest, 0, Through::SpawnBlocking);
    assert!(burst.answers.iter().all(Result::is_ok));
    assert_eq!(burst.fsyncs, 2);
    assert_eq!(burst.blocking_waiting, 200);
}

/// D3, D16, D22: an async group gives each caller its own answer, as a `SharedQueue`'s does.
#[test]
fn d16_an_async_group_gives_each_caller_its_own_answer() {
    let rest = vec![
        Ask::Park(2, "b"),
        Ask::Park(3, "bad\nline"),
        Ask::Park(2, "b"),
        Ask::Park(2, "c"),
        Ask::All(vec![(4, "d"), (5, "e")]),
        Ask::Park(1, "a"),
    ];
    let burst = burst(Ask::Park(1, "a"), rest, 0, Through::Async);
    let expected: Vec<Answer> = vec![
        Ok(vec![1]),
        Ok(vec![2]),
        Err(ErrorKind::InvalidLine),
        Ok(vec![2]),
        Err(ErrorKind::RequestConflict),
        Ok(vec![3, 4]),
        Ok(vec![1]),
    ];
    assert_eq!(burst.answers, expected);
    assert_eq!(burst.fsyncs, 2);
}

/// M10, D16: an async group whose fsync fails gives every member whose line it held `Io` and
/// poisons the handle; a member refused for its own line keeps its own answer; the next park is
/// refused `Poisoned`.
#[test]
fn m10_a_failed_async_group_fsync_fails_every_member_and_poisons() -> TestResult {
    let rest = vec![
        Ask::Park(2, "b"),
        Ask::Park(3, "bad\nline"),
        Ask::All(vec![(4, "d"), (5, "e")]),
        Ask::Park(6, "f"),
    ];
    let burst = burst(Ask::Park(1, "a"), rest, 2, Through::Async);
    let expected: Vec<Answer> = vec![
        Ok(vec![1]),
        Err(ErrorKind::Io),
        Err(ErrorKind::InvalidLine),
        Err(ErrorKind::Io),
        Err(ErrorKind::Io),
    ];
    assert_eq!(burst.answers, expected);
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        assert!(burst.queue.is_poisoned().await?);
        let refused = burst
            .queue
            .park(RequestId(7), "g")
            .await
            .map_err(|e| e.kind());
        assert_eq!(refused, Err(ErrorKind::Poisoned));
        Ok::<_, crate::Error>(())
    })?;
    let image = burst.gate.durable_image()?;
    assert_eq!(image.parked().len(), 1, "only the first group is durable");
    Ok(())
}

/// D16, D3: a park whose future is dropped while it waits for its group is written all the
/// same, intact: the image holds it, and the caller's retry of the same line gets its seq.
#[test]
fn d16_a_dropped_park_future_still_parks_its_line() -> TestResult {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# **Async park.** On an async handle (`AsyncQueue`), a park whose future is dropped after its line
    //# joined the pending parks MUST still be written, in the group that takes it, as if its caller
    //# waited: only the answer is dropped.
    let (runtime, _) = counting_runtime();
    let gate = Arc::new(Gate::default());
    let queue = AsyncQueue::new(Queue::with_storage(gated(&gate), "m", Config::default())?);
    gate.closed.store(true, Ordering::SeqCst);
    let leader = {
        let queue = queue.clone();
        runtime.spawn(async move { queue.park(RequestId(1), "a").await })
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let dropped = {
        let queue = queue.clone();
        runtime.spawn(async move { queue.park(RequestId(2), "b").await })
    };
    while queue.shared().pending() < 1 {
        std::thread::yield_now();
    }
    dropped.abort();
    runtime.block_on(async {
        let aborted = dropped.await.expect_err("aborted while it waited");
        assert!(aborted.is_cancelled());
        gate.closed.store(false, Ordering::SeqCst);
        assert_eq!(leader.await??, Parked::Held(Seq(1)));
        // The retry of a line written, or queued, gets the one seq (D3).
        assert_eq!(queue.park(RequestId(2), "b").await?, Parked::Held(Seq(2)));
        assert_eq!(queue.park(RequestId(3), "c").await?, Parked::Held(Seq(3)));
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    let image = gate.durable_image()?;
    let durable: Vec<(u64, String)> = image
        .parked()
        .iter()
        .map(|item| (item.request.0, item.line.to_string()))
        .collect();
    assert_eq!(
        durable,
        vec![
            (1, "a".to_owned()),
            (2, "b".to_owned()),
            (3, "c".to_owned())
        ]
    );
    Ok(())
}

/// A panic in the writer's fsync hangs no one: the parks of its group and those queued behind
/// it, async or on a thread, get `Internal`, and so does every call after it.
#[test]
fn a_panic_in_the_writer_fails_every_waiter() -> TestResult {
    let (runtime, _) = counting_runtime();
    let gate = Arc::new(Gate::default());
    let queue = AsyncQueue::new(Queue::with_storage(gated(&gate), "m", Config::default())?);
    gate.syncs.store(0, Ordering::SeqCst);
    gate.panic_at.store(1, Ordering::SeqCst);
    gate.closed.store(true, Ordering::SeqCst);
    let park = |request: u64, line: &'static str| {
        let queue = queue.clone();
        runtime.spawn(async move { queue.park(RequestId(request), line).await })
    };
    let leader = park(1, "a");
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let behind = park(2, "b");
    while queue.shared().pending() < 1 {
        std::thread::yield_now();
    }
    let on_a_thread = {
        let shared = queue.shared().clone();
        std::thread::spawn(move || shared.park(RequestId(3), "c"))
    };
    while queue.shared().pending() < 2 {
        std::thread::yield_now();
    }
    gate.closed.store(false, Ordering::SeqCst);
    let kinds = runtime.block_on(async {
        let mut kinds = Vec::new();
        for task in [leader, behind] {
            kinds.push(
                task.await
                    .map_err(|_| "a park's task")?
                    .map_err(|e| e.kind()),
            );
        }
        kinds.push(queue.park(RequestId(4), "d").await.map_err(|e| e.kind()));
        kinds.push(
            queue
                .boundary(Budget(100))
                .await
                .map(|_| Parked::Held(Seq(0)))
                .map_err(|e| e.kind()),
        );
        Ok::<_, Box<dyn std::error::Error>>(kinds)
    })?;
    let on_a_thread = on_a_thread
        .join()
        .map_err(|_| "the thread's park panicked")?
        .map_err(|e| e.kind());
    assert_eq!(kinds, vec![Err(ErrorKind::Internal); 4]);
    assert_eq!(on_a_thread, Err(ErrorKind::Internal));
    Ok(())
}

/// Every call's future is `Send`, so a daemon can `tokio::spawn` it, and the handle crosses
/// tasks.
#[test]
fn the_async_calls_can_be_spawned() -> TestResult {
    fn send<T: Send>(_: &T) {}
    fn send_sync_clone<T: Send + Sync + Clone>() {}
    send_sync_clone::<AsyncQueue>();
    send_sync_clone::<AsyncQueue<MemStorage>>();
    let (dir, path) = temp_mirror()?;
    send(&AsyncQueue::open(&path));
    send(&AsyncQueue::open_with(&path, Config::default()));
    let queue = AsyncQueue::new(Queue::with_storage(
        MemStorage::new(),
        "m",
        Config::default(),
    )?);
    // Unpolled futures: nothing runs.
    send(&queue.park(RequestId(1), "a"));
    send(&queue.park_all(&[(RequestId(1), "a")]));
    send(&queue.boundary(Budget(1)));
    send(&queue.settle(BatchId(1), &[Outcome::Delivered]));
    send(&queue.redrive(&[Seq(1)]));
    send(&queue.discard_all());
    send(&queue.stats());
    assert_eq!(
        queue.shared().pending(),
        0,
        "an unpolled park joins no group"
    );
    drop(dir);
    Ok(())
}

/// A `boundary` waiting while a group is written goes before the next group, so a stream of
/// async parks cannot starve it: its batch holds the group written, and the parks queued behind
/// it come after, in the next batch. (The first park's future is dropped, so the writer has no
/// answer to send between the groups and would take the next group at once, were it not for
/// the waiting boundary.)
#[test]
fn a_boundary_waiting_for_a_group_goes_before_the_next() -> TestResult {
    let (runtime, _) = counting_runtime();
    let gate = Arc::new(Gate::default());
    let queue = AsyncQueue::new(Queue::with_storage(gated(&gate), "m", Config::default())?);
    gate.closed.store(true, Ordering::SeqCst);
    let park = |request: u64| {
        let queue = queue.clone();
        runtime.spawn(async move { queue.park(RequestId(request), "line").await })
    };
    let first = park(1);
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let mut behind = Vec::new();
    for request in [2, 3] {
        behind.push(park(request));
        while queue.shared().pending() < behind.len() {
            std::thread::yield_now();
        }
    }
    let boundary = {
        let queue = queue.clone();
        runtime.spawn(async move { queue.boundary(Budget(1 << 20)).await })
    };
    while queue.shared().exclusive_waiting() < 1 {
        std::thread::yield_now();
    }
    first.abort();
    gate.closed.store(false, Ordering::SeqCst);
    runtime.block_on(async {
        let batch = boundary.await??.ok_or("the first park is parked")?;
        let seqs: Vec<Seq> = batch.items.iter().map(|item| item.seq).collect();
        assert_eq!(
            seqs,
            vec![Seq(1)],
            "the boundary went before the second group"
        );
        assert!(first.await.is_err_and(|e| e.is_cancelled()));
        for (task, seq) in behind.into_iter().zip([Seq(2), Seq(3)]) {
            assert_eq!(task.await??, Parked::Held(seq));
        }
        queue.settle(batch.id, &[Outcome::Delivered]).await?;
        let next = queue.boundary(Budget(1 << 20)).await?.ok_or("two parked")?;
        assert_eq!(next.items.len(), 2);
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}

/// D16: a writer the runtime drops before it ran (a runtime shutting down drops the blocking
/// tasks it has not started) is not counted as running: the next async park starts a writer,
/// whose group also writes the line the dropped one was started for.
#[test]
fn d16_a_park_after_a_writer_dropped_unrun_starts_another() -> TestResult {
    // Kills `Writer::drop -> ()` and its `delete !` (shared.rs:650:9, 650:12), with which the
    // handle believes the dropped writer still runs and starts none for any async park after it.
    let queue = AsyncQueue::new(Queue::with_storage(
        MemStorage::new(),
        "m",
        Config::default(),
    )?);
    let stopped = tokio::runtime::Builder::new_current_thread().build()?;
    let handle = stopped.handle().clone();
    drop(stopped);
    {
        // Polled once on the stopped runtime: the line joins, and its writer is dropped unrun.
        let _entered = handle.enter();
        let mut park = std::pin::pin!(queue.park(RequestId(1), "a"));
        let mut context = Context::from_waker(Waker::noop());
        assert!(park.as_mut().poll(&mut context).is_pending());
    }
    assert_eq!(queue.shared().pending(), 1, "the dropped park's line waits");
    let next = answered_within({
        let queue = queue.clone();
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a runtime");
            runtime.block_on(queue.park(RequestId(2), "b"))
        }
    })?;
    assert_eq!(next?, Parked::Held(Seq(2)));
    let parked: Vec<(u64, u64)> = queue
        .shared()
        .parked()?
        .iter()
        .map(|item| (item.seq.0, item.request.0))
        .collect();
    assert_eq!(parked, vec![(1, 1), (2, 2)]);
    Ok(())
}

/// Every call of an async handle answers as the same call of its `Queue` does: the same steps
/// on a plain queue and on an async one, each answer compared (dead letters redriven and
/// discarded one by one and all at once, the reads, a batch in flight).
#[test]
fn every_call_of_an_async_handle_answers_as_its_queue_does() -> TestResult {
    // Kills the forwarding calls of `AsyncQueue` replaced by a default (async_queue.rs), which
    // no test compared with its queue's answer.
    // A rest slack of 0: the idle call after the last discard compacts.
    let config = Config {
        failures_max: 1,
        rest_slack_bytes: 0,
        ..Config::default()
    };
    // One clock for both: the times they record (D24) are compared too.
    let clock = fixed();
    let mut plain =
        Queue::with_storage(MemStorage::new(), "m", config.clone())?.with_clock(clock.clone());
    let queue = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(clock);
    let queue = AsyncQueue::new(queue);
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        let budget = Budget(1 << 20);
        for request in 1..=6 {
            let line = format!("[r{request}] done");
            assert_eq!(
                queue.park(RequestId(request), &line).await?,
                plain.park(RequestId(request), &line)?
            );
        }
        fail_all(&queue, &mut plain, budget).await?;
        let dead = plain.dead_letters().to_vec();
        assert_eq!(dead.len(), 6);
        assert_eq!(queue.dead_letters().await?, dead);
        let one = [Seq(1)];
        assert_eq!(queue.redrive(&one).await?, plain.redrive(&one)?);
        let two = [Seq(2)];
        assert_eq!(queue.discard(&two).await?, plain.discard(&two)?);
        assert_eq!(queue.redrive_all().await?, plain.redrive_all()?);
        assert_eq!(queue.parked().await?.len(), 5);
        assert_eq!(queue.parked().await?, plain.parked());
        let request = RequestId(3);
        assert!(plain.find(request).is_some());
        assert_eq!(queue.find(request).await?, plain.find(request).cloned());
        fail_all(&queue, &mut plain, budget).await?;
        assert_eq!(queue.discard_all().await?, plain.discard_all()?);
        queue.idle().await?;
        plain.idle()?;
        assert_eq!(queue.stats().await?.compactions, 1);
        assert_eq!(plain.stats().compactions, 1);
        assert_eq!(lifeless(&queue.state().await?), lifeless(plain.state()));
        let (stats, expected) = (queue.stats().await?, plain.stats());
        assert_eq!(
            (stats.appends, stats.fsyncs),
            (expected.appends, expected.fsyncs)
        );
        assert_eq!(queue.path().await?, plain.path());
        assert!(!queue.is_poisoned().await?);
        Ok(())
    })
}

/// The steps of [`every_call_of_an_async_handle_answers_as_its_queue_does`] that hand a batch
/// over and fail it whole, on both queues, each answer compared.
async fn fail_all(
    queue: &AsyncQueue<MemStorage>,
    plain: &mut Queue<MemStorage>,
    budget: Budget,
) -> TestResult {
    let batch = plain.boundary(budget)?.ok_or("a batch")?;
    assert_eq!(queue.boundary(budget).await?, Some(batch.clone()));
    assert_eq!(queue.in_flight().await?, plain.in_flight().cloned());
    let outcomes = vec![Outcome::Failed; batch.items.len()];
    assert_eq!(
        queue.settle(batch.id, &outcomes).await?,
        plain.settle(batch.id, &outcomes)?
    );
    Ok(())
}

/// An async handle says it is poisoned once a park's fsync failed, and its `reopen` makes it
/// usable again; `remove` ends the session on disk.
#[test]
fn an_async_handle_reports_poison_reopens_and_removes() -> TestResult {
    // Kills `reopen`, `remove` and `is_poisoned -> Ok(true)` replaced by a default
    // (async_queue.rs), which no test told from the real calls.
    let (_dir, path) = temp_mirror()?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        let queue = AsyncQueue::open(&path).await?;
        queue.park(RequestId(1), "[r1] done").await?;
        assert!(!queue.is_poisoned().await?);
        queue.reopen().await?;
        assert_eq!(
            queue.parked().await?.len(),
            1,
            "a reopen of a healthy handle does nothing"
        );
        fs::rename(&path, path.with_extension("away"))?;
        assert!(queue.park(RequestId(2), "[r2] done").await.is_err());
        assert!(queue.is_poisoned().await?);
        fs::rename(path.with_extension("away"), &path)?;
        queue.reopen().await?;
        assert!(!queue.is_poisoned().await?);
        assert_eq!(
            queue.park(RequestId(2), "[r2] done").await?,
            Parked::Held(Seq(2))
        );
        queue.remove(true).await?;
        assert!(!path.exists(), "the mirror is removed");
        Ok(())
    })
}
