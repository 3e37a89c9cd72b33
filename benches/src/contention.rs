//! Many threads parking into one session: `SharedQueue`'s group commit against what a daemon
//! has without it (a `Queue` behind a mutex, one `park_all`, a committer thread that gathers
//! the lines and calls `park_all`), and (feature `tokio`) `AsyncQueue`'s tasks against
//! `SharedQueue`'s threads, for the table bench's contention rows and its chart.
//!
//! Every sample runs on a fresh mirror in a fresh directory; threads (or tasks) are spawned
//! before the clock starts and released together by a barrier, and the time is until the last
//! caller's park returned.

use std::io;
#[cfg(feature = "tokio")]
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(feature = "tokio")]
use parkline::AsyncQueue;
use parkline::{Queue, RequestId, SharedQueue};

use crate::fixture::{bench_dir, completion_line, discard};

const MIRROR: &str = "contention.mirror";

fn other(e: parkline::Error) -> io::Error {
    io::Error::other(e)
}

/// The time from `start` to the latest of `done`.
fn until_last(start: Instant, done: impl IntoIterator<Item = Instant>) -> Duration {
    done.into_iter()
        .map(|at| at.saturating_duration_since(start))
        .max()
        .unwrap_or_default()
}

/// Runs `work(i)` on `n` threads released together; the time until the last returned.
fn released<T: Send + 'static>(
    n: usize,
    work: impl Fn(usize) -> io::Result<T> + Send + Sync + 'static,
) -> io::Result<(Duration, Vec<T>)> {
    let barrier = Arc::new(Barrier::new(n + 1));
    let work = Arc::new(work);
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (barrier, work) = (Arc::clone(&barrier), Arc::clone(&work));
            thread::spawn(move || {
                barrier.wait();
                work(i).map(|value| (Instant::now(), value))
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut done = Vec::with_capacity(n);
    let mut values = Vec::with_capacity(n);
    for thread in threads {
        let (at, value) = thread
            .join()
            .map_err(|_| io::Error::other("a parker panicked"))??;
        done.push(at);
        values.push(value);
    }
    Ok((until_last(start, done), values))
}

/// `n` threads released at once, one `SharedQueue::park` each: the time until the last is
/// acknowledged, and the file fsyncs the parks took.
///
/// # Errors
///
/// Any error of the fixture or a park.
pub fn burst_shared(n: usize) -> io::Result<(Duration, u64)> {
    let dir = bench_dir()?;
    let queue = SharedQueue::open(dir.path().join(MIRROR)).map_err(other)?;
    let before = queue.stats().map_err(other)?.fsyncs;
    let parker = queue.clone();
    let (took, _) = released(n, move |i| {
        let line = completion_line(i as u64);
        parker.park(RequestId(i as u64), &line).map_err(other)
    })?;
    let fsyncs = queue.stats().map_err(other)?.fsyncs - before;
    drop(queue);
    discard(dir)?;
    Ok((took, fsyncs))
}

/// `n` tasks on `runtime` released at once, one `AsyncQueue::park` each (feature `tokio`): the burst of
/// [`burst_shared`] from an async daemon. The time until the last is acknowledged, and the file
/// fsyncs the parks took.
///
/// # Errors
///
/// Any error of the fixture, a park or a task.
#[cfg(feature = "tokio")]
pub fn burst_async(runtime: &tokio::runtime::Runtime, n: usize) -> io::Result<(Duration, u64)> {
    let dir = bench_dir()?;
    let queue = runtime
        .block_on(AsyncQueue::open(dir.path().join(MIRROR)))
        .map_err(other)?;
    let before = queue.shared().stats().map_err(other)?.fsyncs;
    // Every task registers as a waiter before it counts itself, so once all are counted one
    // `notify_waiters` releases them all, and the clock starts before it.
    let release = Arc::new(tokio::sync::Notify::new());
    let waiting = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (queue, release, waiting) =
                (queue.clone(), Arc::clone(&release), Arc::clone(&waiting));
            runtime.spawn(async move {
                let released = release.notified();
                let mut released = std::pin::pin!(released);
                released.as_mut().enable();
                waiting.fetch_add(1, Ordering::SeqCst);
                released.await;
                let line = completion_line(i as u64);
                queue
                    .park(RequestId(i as u64), &line)
                    .await
                    .map_err(other)?;
                Ok::<_, io::Error>(Instant::now())
            })
        })
        .collect();
    while waiting.load(Ordering::SeqCst) < n {
        thread::yield_now();
    }
    let start = Instant::now();
    release.notify_waiters();
    let took = runtime.block_on(async {
        let mut done = Vec::with_capacity(n);
        for task in tasks {
            done.push(task.await.map_err(io::Error::other)??);
        }
        Ok::<_, io::Error>(until_last(start, done))
    })?;
    let fsyncs = queue.shared().stats().map_err(other)?.fsyncs - before;
    drop(queue);
    discard(dir)?;
    Ok((took, fsyncs))
}

/// One `park_all` of the `n` lines [`burst_shared`] parks, on a fresh mirror.
///
/// # Errors
///
/// Any error of the fixture or the park.
pub fn burst_park_all(n: usize) -> io::Result<Duration> {
    let dir = bench_dir()?;
    let mut queue = Queue::open(dir.path().join(MIRROR)).map_err(other)?;
    let lines: Vec<(RequestId, String)> = (0..n as u64)
        .map(|i| (RequestId(i), completion_line(i)))
        .collect();
    let group: Vec<(RequestId, &str)> = lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
    let start = Instant::now();
    queue.park_all(&group).map_err(other)?;
    let took = start.elapsed();
    drop(queue);
    discard(dir)?;
    Ok(took)
}

/// `n` threads released at once hand their lines to one committer thread, which calls
/// `park_all` once for all of them and answers each: the scheduling floor of any group commit.
///
/// # Errors
///
/// Any error of the fixture or the park.
pub fn burst_handoff(n: usize) -> io::Result<Duration> {
    let dir = bench_dir()?;
    let mut queue = Queue::open(dir.path().join(MIRROR)).map_err(other)?;
    type Ask = (RequestId, String, mpsc::Sender<()>);
    let (send, receive) = mpsc::channel::<Ask>();
    let committer = thread::spawn(move || -> io::Result<()> {
        let asks: Vec<Ask> = receive.iter().take(n).collect();
        let group: Vec<(RequestId, &str)> = asks.iter().map(|(r, l, _)| (*r, l.as_str())).collect();
        queue.park_all(&group).map_err(other)?;
        for (_, _, answer) in asks {
            let _ = answer.send(());
        }
        Ok(())
    });
    let send = Mutex::new(send);
    let (took, _) = released(n, move |i| {
        let (answer, answered) = mpsc::channel();
        let line = completion_line(i as u64);
        let sender = send.lock().map_err(|_| io::Error::other("sender"))?.clone();
        sender
            .send((RequestId(i as u64), line, answer))
            .map_err(|_| io::Error::other("committer gone"))?;
        answered.recv().map_err(|_| io::Error::other("no answer"))
    })?;
    committer
        .join()
        .map_err(|_| io::Error::other("the committer panicked"))??;
    discard(dir)?;
    Ok(took)
}

/// How `threads` share one session in [`loop_parks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// `SharedQueue`: group commit.
    Shared,
    /// `Arc<Mutex<Queue>>`: every park holds the mutex across its own fsync.
    Mutex,
}

/// `threads` threads released at once, each parking `each` lines one after another: the time
/// until the last returned, and the file fsyncs taken.
///
/// # Errors
///
/// Any error of the fixture or a park.
pub fn loop_parks(sharing: Sharing, threads: usize, each: usize) -> io::Result<(Duration, u64)> {
    let dir = bench_dir()?;
    let path = dir.path().join(MIRROR);
    let request = move |t: usize, k: usize| (t * each + k) as u64;
    let (took, fsyncs) = match sharing {
        Sharing::Shared => {
            let queue = SharedQueue::open(&path).map_err(other)?;
            let before = queue.stats().map_err(other)?.fsyncs;
            let parker = queue.clone();
            let (took, _) = released(threads, move |t| {
                for k in 0..each {
                    let r = request(t, k);
                    parker
                        .park(RequestId(r), &completion_line(r))
                        .map_err(other)?;
                }
                Ok(())
            })?;
            (took, queue.stats().map_err(other)?.fsyncs - before)
        }
        Sharing::Mutex => {
            let queue = Arc::new(Mutex::new(Queue::open(&path).map_err(other)?));
            let before = lock(&queue)?.stats().fsyncs;
            let parker = Arc::clone(&queue);
            let (took, _) = released(threads, move |t| {
                for k in 0..each {
                    let r = request(t, k);
                    lock(&parker)?
                        .park(RequestId(r), &completion_line(r))
                        .map_err(other)?;
                }
                Ok(())
            })?;
            let fsyncs = lock(&queue)?.stats().fsyncs - before;
            (took, fsyncs)
        }
    };
    discard(dir)?;
    Ok((took, fsyncs))
}

fn lock(queue: &Mutex<Queue>) -> io::Result<std::sync::MutexGuard<'_, Queue>> {
    queue
        .lock()
        .map_err(|_| io::Error::other("queue mutex poisoned"))
}
