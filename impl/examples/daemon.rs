//! A parent session's daemon on parkline: its sessions live in a `Store` (one directory, one
//! mirror per session, a bounded pool of descriptors); child requests complete on their own
//! tasks while the parent is mid-turn, their completion lines are parked, and each turn
//! boundary hands the parent one batch. It shows a failed hand-over retried, a crash (a batch dropped without a settle) and
//! the restart that opens every session and repeats the batch, a park retried after the restart (answered with the seq the line
//! has), a reopen in place (the way on after `Poisoned`), the counters a
//! daemon exports, the session's end, and an `agent_read` follower that reads each child's new
//! turns through `since:` cursors.
//!
//! The daemon is a tokio program and uses `AsyncQueue` (the `tokio` feature): a park waiting
//! for its fsync holds no thread, and the children that finish together share one fsync.
//!
//! Run it with `cargo run -p parkline --features tokio --example daemon`.

use parkline::read::{ChildId, Cursor, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
use parkline::{AsyncQueue, Batch, Budget, Outcome, RequestId, Store};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A child's request ended: park its completion line. Children that finish together share one
/// fsync (group commit), each with its own answer; none holds a thread while it waits.
async fn complete(queue: AsyncQueue, request: u64, turn: &str) -> Result<(), BoxError> {
    let line = format!(
        "[delegation r-{request} answered turn {turn}] outcome: ok; agent_read{{turn:\"{turn}\"}}"
    );
    let parked = queue.park(RequestId(request), &line).await?;
    println!("parked r-{request} as seq {} ({parked:?})", parked.seq());
    Ok(())
}

/// The parent's turn ended: take the next batch, if any. The parent's read budget bounds the
/// whole turn text (D12).
async fn boundary(queue: &AsyncQueue) -> Result<Option<Batch>, BoxError> {
    let budget = Budget::for_turn_chars(16_000)?;
    Ok(queue.boundary(budget).await?)
}

/// The parent was (or was not) given the batch: settle it.
async fn settle(queue: &AsyncQueue, batch: &Batch, outcome: Outcome) -> Result<(), BoxError> {
    let settlement = queue
        .settle(batch.id, &vec![outcome; batch.items.len()])
        .await?;
    println!(
        "settled batch {}: {} delivered, {} parked again, {} dead",
        batch.id.0,
        settlement.delivered.len(),
        settlement.failed.len(),
        settlement.dead.len()
    );
    Ok(())
}

fn show(batch: &Batch) {
    println!("--- turn handed to the parent (one wake-up) ---");
    print!("{}", batch.text());
    for event in batch.notified() {
        let again = if event.repeat { ", repeat" } else { "" };
        println!(
            "delegation_notified r-{} (hand-over {}{again})",
            event.request.0, event.handed
        );
    }
}

/// An `agent_read` follower: each read returns what is new since its cursor.
fn follow(child: &Transcript, cursor: Cursor) -> Result<Cursor, parkline::Error> {
    let window = child.read(&ReadRequest::new(Selector::Since(cursor.clone()), 2_000))?;
    println!("--- agent_read since {cursor} ---\n{}", window.text);
    Ok(window.next.unwrap_or(cursor))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    // One store per daemon, one queue per session, for the session's life.
    let store = Store::open(dir.path())?;
    let queue = AsyncQueue::new(store.session("s966")?);
    let other = AsyncQueue::new(store.session("s967")?);

    // Three children finish while the parent is mid-turn, each on its own task.
    let tasks: Vec<_> = (1..=3)
        .map(|r| {
            tokio::spawn(complete(
                queue.clone(),
                r,
                ["t7", "t8", "t9"][r as usize - 1],
            ))
        })
        .collect();
    for task in tasks {
        task.await??;
    }

    // Turn boundary: one batch for all three. The hand-over fails: the lines stay parked.
    let batch = boundary(&queue).await?.ok_or("three lines are parked")?;
    show(&batch);
    settle(&queue, &batch, Outcome::Failed).await?;

    // The next boundary retries them; this time the daemon crashes before it settles.
    let batch = boundary(&queue)
        .await?
        .ok_or("the failed lines are parked")?;
    show(&batch);
    println!("--- the daemon crashes before the settle ---");
    drop((batch, queue, other, store));

    // The restart: every session of the store opens, with one directory fsync for all.
    let store = Store::open(dir.path())?;
    let mut sessions = store.open_all()?;
    println!("sessions after the restart: {:?}", store.names()?);
    let queue = AsyncQueue::new(sessions.remove("s966").ok_or("s966 was kept")??);
    // The daemon is not sure its last park reached the mirror: it parks the line again, and
    // the mirror answers with the seq the line already has (one line per request).
    complete(queue.clone(), 3, "t9").await?;
    // The same batch comes back first, marked as a repeat.
    let batch = boundary(&queue).await?.ok_or("the crashed batch repeats")?;
    assert!(batch.is_repeat());
    show(&batch);
    settle(&queue, &batch, Outcome::Delivered).await?;
    // After `Poisoned` (a failed write or fsync), every caller that got the error may reopen:
    // the mirror is reopened once, and a reopen of a handle that is not poisoned does nothing.
    queue.reopen().await?;
    let stats = queue.stats().await?;
    println!(
        "parked {}, in flight {}, dead {}, {} bytes, {} fsyncs",
        stats.parked, stats.in_flight, stats.dead_letters, stats.mirror_bytes, stats.fsyncs
    );
    let descriptors = store.stats();
    println!(
        "store: {} sessions open, {} of at most {} descriptors",
        descriptors.sessions_open, descriptors.descriptors_open, descriptors.descriptors_max
    );
    // The session ends: its mirror goes (refused while lines are held).
    queue.remove(false).await?;
    println!("session s966 ended; the store holds {:?}", store.names()?);

    // agent_read: the parent follows child s980-1's turns without being sent t7 twice.
    let mut child = Transcript::new(ChildId::new("s980-1")?);
    child.push_turn(TurnId::new("t7")?, TurnSeq(1), "the first answer")?;
    let cursor = follow(&child, child.start_cursor())?;
    child.push_turn(TurnId::new("t8")?, TurnSeq(2), "the second answer")?;
    follow(&child, cursor)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The example runs to its end without an error.
    #[test]
    fn the_daemon_example_runs() -> Result<(), super::BoxError> {
        super::main()
    }
}
