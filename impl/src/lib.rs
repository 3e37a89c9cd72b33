//! parkline: crash-safe parked completion lines, delivered as one batch turn per boundary, and
//! budgeted cursor reads for `agent_read`.
//!
//! While a parent session is mid-turn, the daemon [`park`](Queue::park)s each completion line
//! that arrives; `park` returns once the line is durable. When the turn ends, the daemon asks for
//! the next [`boundary`](Queue::boundary) batch: every line parked at that moment (split under a
//! budget), persisted before it is returned. The daemon hands the batch's [`text`](Batch::text)
//! over as one turn, records one [`notified`](Batch::notified) event per item, and
//! [`settle`](Queue::settle)s each item's outcome. A crash anywhere loses nothing a `park`
//! acknowledged: a batch persisted but not settled comes back first in the next life, as a
//! repeat (same id, attempt + 1).
//!
//! The contract (vocabulary, split, turn text, boundary and settle) is in `ARCHITECTURE.md`; the
//! requirements are in `spec/delivery.md` (D1..), the file format in `spec/mirror.md` (M1..) and
//! the read side in `spec/read.md` (R1..). All four files ship inside this package, at those
//! paths; the ids in these docs (D9, M8, R5) name their sections.
//!
//! `examples/daemon.rs` is an async daemon built on this crate (on `AsyncQueue`, feature
//! `tokio`), to copy from.
//!
//! # The daemon's loop, end to end
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use parkline::{Budget, Outcome, Queue, RequestId};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("session-s966.mirror");
//! let mut queue = Queue::open(&path)?;
//!
//! // The parent is mid-turn: completions are parked, each durable when `park` returns.
//! for request in 1..=3 {
//!     queue.park(RequestId(request), &format!("[r{request}] turn t{request}: ok"))?;
//! }
//!
//! // The turn ended: one batch holds every parked line. The parent's read budget bounds the
//! // whole turn text, header and trailer included (D12).
//! let budget = Budget::for_turn_chars(16_000)?;
//! let batch = queue.boundary(budget)?.expect("three lines parked");
//! assert_eq!(batch.items.len(), 3);
//! let turn = batch.text(); // hand this over as ONE turn
//! assert!(turn.starts_with("[parkline batch 1 attempt 1: 3 of 3 parked lines, 0 seen before, "));
//! let events = batch.notified(); // record one delegation_notified per request
//! assert_eq!(events.len(), 3);
//!
//! // Hand-over and every notified event succeeded: clear the batch.
//! queue.settle(batch.id, &[Outcome::Delivered; 3])?;
//! assert!(queue.parked().is_empty() && queue.in_flight().is_none());
//!
//! // Next turn: one more line, and the daemon crashes after the boundary, before the settle.
//! queue.park(RequestId(4), "[r4] turn t4: failed")?;
//! let batch = queue.boundary(budget)?.expect("one line parked");
//! drop(queue); // crash: nothing after the boundary reached the mirror
//!
//! // Next life: the unsettled batch comes back first, recognisable as a repeat.
//! let mut queue = Queue::open(&path)?;
//! let repeat = queue.boundary(budget)?.expect("recovered batch");
//! assert_eq!((repeat.id, repeat.items[0].seq), (batch.id, batch.items[0].seq));
//! assert_eq!(repeat.attempt.0, 2);
//! assert!(repeat.is_repeat() && repeat.notified()[0].repeat);
//! assert_eq!(repeat.notified()[0].handed, 2); // the parent may have seen it once already
//! assert!(repeat.text().starts_with("[parkline batch 2 attempt 2, repeat: 1 of 1 parked lines, "));
//! // The turn text has one reading, whatever the lines hold (D4a).
//! let text = repeat.text();
//! let frame = parkline::frame::parse(&text).expect("parkline's own framing");
//! assert_eq!(frame.lines, ["[r4] turn t4: failed"]);
//! queue.settle(repeat.id, &[Outcome::Delivered])?;
//! # Ok(()) }
//! ```
//!
//! # Use from an async daemon
//!
//! A [`Queue`] is synchronous and single-owner: every call that writes waits for an fsync
//! (hundreds of microseconds on an SSD, far more on a busy disk). A session's queue shared by
//! many threads is a [`SharedQueue`], whose concurrent parks share their fsyncs. On tokio, with
//! the `tokio` feature, an `AsyncQueue` has the same calls as `async fn`s: a park waiting for
//! its fsync holds no thread of the blocking pool, one blocking task writing each group for
//! every waiting park. Without it, an async daemon keeps one queue per parent session, each
//! behind its own `std::sync::Mutex` (not an async mutex: the lock is never held across an
//! `.await`), and runs each call on a blocking thread, for instance
//! `tokio::task::spawn_blocking(move || queue.lock().unwrap().park(request, &line))`, a thread
//! per waiting park. Queues of different sessions never contend. The example below shows that
//! shape with plain threads:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::{Arc, Mutex};
//! use parkline::{Budget, Queue, RequestId};
//!
//! let dir = tempfile::tempdir()?;
//! let sessions: Vec<Arc<Mutex<Queue>>> = (0..4)
//!     .map(|s| Queue::open(dir.path().join(format!("s{s}.mirror"))).map(|q| Arc::new(Mutex::new(q))))
//!     .collect::<Result<_, _>>()?;
//! let workers: Vec<_> = sessions
//!     .iter()
//!     .enumerate()
//!     .map(|(s, queue)| {
//!         let queue = Arc::clone(queue);
//!         // With tokio: tokio::task::spawn_blocking(move || ...).
//!         std::thread::spawn(move || {
//!             let mut queue = queue.lock().map_err(|_| "poisoned mutex")?;
//!             queue.park(RequestId(s as u64), "done").map_err(|e| e.to_string())?;
//!             Ok::<_, String>(())
//!         })
//!     })
//!     .collect();
//! for worker in workers {
//!     worker.join().map_err(|_| "worker panicked")??;
//! }
//! let mut first = sessions[0].lock().map_err(|_| "poisoned mutex")?;
//! assert_eq!(first.boundary(Budget(100))?.map(|b| b.items.len()), Some(1));
//! # Ok(()) }
//! ```
//!
//! # Failure model
//!
//! - A failed write or fsync poisons the queue ([`ErrorKind::Poisoned`] from then on); reopening
//!   it reads what the mirror kept. An fsync is never retried (M10).
//! - A damaged mirror gets [`ErrorKind::Corrupt`] naming the file, record and byte offset, and is
//!   never written (M11). `parkline inspect <mirror>` shows what it holds.
//! - A second handle on the same mirror gets [`ErrorKind::Locked`] (M8).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!(
    "parkline supports Unix targets only: the mirror's durability rests on fsync of files and \
     directories and its lock on POSIX record locks (spec/mirror.md M4, M5, M8)"
);

// The floors, lowest first (ARCHITECTURE.md, "Floors"): every file names only its own floor
// and those below, never through this root.
#[cfg(feature = "tokio")]
mod async_queue;
mod clock;
mod config;
mod crc64;
mod engine;
mod error;
pub mod frame;
mod histogram;
mod ids;
mod io;
mod line;
// The file format's in-memory types: public for the harness, the fuzz targets and the operator
// command, hidden and outside the stable API (the module's docs say so).
#[doc(hidden)]
pub mod mirror;
mod observe;
pub mod ops;
mod queue;
pub mod read;
mod runs;
mod shared;
mod store;
mod types;

#[cfg(feature = "tokio")]
pub use async_queue::AsyncQueue;
pub use clock::{Clock, SystemClock};
pub use config::{COMPACT_SLACK_BYTES, Config, DELIVERED_MEMORY, REST_SLACK_BYTES};
pub use error::{Error, ErrorKind, Result};
pub use histogram::FsyncHistogram;
// The one forwarding base of `Storage`, for the unit tests, the benches and the harness: public
// for them, hidden and outside the stable API.
pub use io::mem::MemStorage;
#[doc(hidden)]
pub use io::seam::{Hooks, Seam};
pub use io::storage::{Entry, FsStorage, Identity, Stamp, Storage};
pub use line::Line;
pub use queue::{Queue, Stats};
pub use shared::SharedQueue;
pub use store::{MAX_OPEN_DEFAULT, SESSION_SUFFIX, SessionInfo, Store, StoreOptions, StoreStats};
pub use types::{
    Attempt, Batch, BatchId, Budget, Ended, Item, Life, Notified, Outcome, Parked, Remembered,
    RequestId, Seq, Settlement, split,
};

#[cfg(test)]
mod tests;
