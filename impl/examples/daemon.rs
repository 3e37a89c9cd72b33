//! A parent sessions' daemon on parkline, in the shape a team runs it: one `Store` for every
//! session, started at once (the sessions on disk and the expected ones, one directory fsync);
//! children whose requests end park completion lines from their own tasks; each session's task
//! sleeps until a line is parked, hands its turn one batch and settles it; a tick makes the
//! store's idle call (operator requests on idle sessions, drained mirrors compacted to rest) and
//! logs the store's figures; SIGTERM or Ctrl-C stops it after the turns in progress.
//!
//! ```text
//! cargo run -p parkline --features tokio --example daemon -- [DIR]
//! ```
//!
//! Without `DIR` the sessions live in a temporary directory. Run it twice on one `DIR`, stopped
//! in between with `kill -9`: the second start finds every parked line, and a batch handed
//! over but not settled comes back first as a repeat.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parkline::{AsyncQueue, Batch, Budget, Outcome, RequestId, Store};
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The parent sessions this daemon hosts.
const SESSIONS: [&str; 8] = [
    "s960", "s961", "s962", "s963", "s964", "s965", "s966", "s967",
];

/// A child's request ended: park its completion line in its parent's session.
async fn complete(session: &AsyncQueue, request: u64) -> Result<(), BoxError> {
    let turn = format!("t{}", request % 97);
    let line = format!(
        "[delegation r-{request} answered turn {turn}] outcome: ok; agent_read{{turn:\"{turn}\"}}"
    );
    session.park(RequestId(request), &line).await?;
    Ok(())
}

/// The parent's turn: the fake agent takes the batch's text, and fails one turn in twenty.
async fn deliver(batch: &Batch, request: u64) -> Outcome {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _text = batch.text();
    if request % 20 == 7 {
        Outcome::Failed
    } else {
        Outcome::Delivered
    }
}

/// A session's loop: wait for a parked line, hand the turn one batch, settle it; until stopped.
async fn run_session(session: AsyncQueue, stop: Arc<AtomicBool>) -> Result<(), BoxError> {
    let budget = Budget::for_turn_chars(16_000)?;
    while !stop.load(Ordering::Acquire) {
        // Woken by the park that gives it work; the timeout only lets it see `stop`.
        let waited = tokio::time::timeout(Duration::from_millis(100), session.wait_parked());
        match waited.await {
            Ok(ready) => ready?,
            Err(_elapsed) => continue,
        }
        let Some(batch) = session.boundary(budget).await? else {
            continue;
        };
        let first = batch.items.first().map_or(0, |item| item.request.0);
        let outcome = deliver(&batch, first).await;
        session
            .settle(batch.id, &vec![outcome; batch.items.len()])
            .await?;
    }
    Ok(())
}

/// Children finishing: a line every few milliseconds, spread over the sessions.
async fn run_children(sessions: Vec<AsyncQueue>, stop: Arc<AtomicBool>) -> Result<(), BoxError> {
    let mut request = std::process::id() as u64 * 1_000_000;
    while !stop.load(Ordering::Acquire) {
        request += 1;
        let session = &sessions[(request % sessions.len() as u64) as usize];
        complete(session, request).await?;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    Ok(())
}

/// The tick: the store's idle call, on the blocking pool (it fsyncs), and its figures.
async fn tick(store: &Arc<Store>) -> Result<(), BoxError> {
    let idle = Arc::clone(store);
    for (session, error) in tokio::task::spawn_blocking(move || idle.idle()).await? {
        eprintln!("daemon: the idle call of {session} failed: {error}");
    }
    let stats = store.stats();
    let sessions = &stats.sessions;
    println!(
        "daemon: {} sessions, {} parked, {} in flight, {} dead, {} fsyncs, {} of {} descriptors",
        stats.sessions_open,
        sessions.parked,
        sessions.in_flight,
        sessions.dead_letters,
        sessions.fsyncs,
        stats.descriptors_open,
        stats.descriptors_max
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let temporary = tempfile::tempdir()?;
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| temporary.path().to_path_buf(), Into::into);
    let store = Arc::new(Store::open(&dir)?);
    let mut sessions = Vec::new();
    for (name, session) in store.start(SESSIONS)? {
        // A damaged mirror is left as it is for an operator; the others run.
        match session {
            Ok(session) => sessions.push(AsyncQueue::from(session)),
            Err(error) => eprintln!("daemon: session {name} not started: {error}"),
        }
    }
    println!(
        "daemon: started {} sessions in {}",
        sessions.len(),
        dir.display()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = JoinSet::new();
    for session in &sessions {
        tasks.spawn(run_session(session.clone(), Arc::clone(&stop)));
    }
    tasks.spawn(run_children(sessions.clone(), Arc::clone(&stop)));

    let mut terminate = signal(SignalKind::terminate())?;
    let mut ticks = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = ticks.tick() => tick(&store).await?,
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    // The turns in progress end with their settles; a batch cut off by a crash instead would
    // come back first at the next start.
    stop.store(true, Ordering::Release);
    while let Some(task) = tasks.join_next().await {
        task??;
    }
    tick(&store).await?;
    println!("daemon: stopped");
    Ok(())
}
