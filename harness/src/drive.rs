//! The drive protocol (`spec/drive.md`): ops read as JSON lines are applied to a real
//! `parkline::Queue` on a mirror file, and one JSON line of effect per op is written back, flushed
//! at once.
//!
//! A reply is written only after the op returned, so a reply the reader has read is an
//! acknowledgement: the kill -9 test (`tests/kill.rs`) runs [`serve`] in a child process (the test
//! binary re-executed), reads replies, kills the child at a random moment, reopens the mirror and
//! checks that everything acknowledged survived. It lives here, not in the operator binary,
//! because it is how a test runs a known-bad protocol (the harness's [`Driver`] and storage
//! seams around the crate) on a real mirror.

use std::io::{self, BufRead, Write};
use std::path::Path;

use parkline::{Budget, Config, FsStorage, Outcome, Queue, RequestId};
use serde::{Deserialize, Serialize};

use crate::known_bad::{Driver, DriverError, KnownBad, Seamed};

/// One op of the drive protocol (one JSON line on stdin).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// `Queue::park(request, line)`.
    Park {
        /// The request id.
        request: u64,
        /// The line, verbatim.
        line: String,
    },
    /// `Queue::boundary(budget)`.
    Boundary {
        /// The budget in characters.
        budget: usize,
    },
    /// `Queue::settle(batch, outcomes)`.
    Settle {
        /// The batch id.
        batch: u64,
        /// One outcome per item, in item order.
        outcomes: Vec<OutcomeWord>,
    },
    /// Print the queue's state (changes nothing).
    State,
}

/// An item's outcome in the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeWord {
    /// Handed over and notified.
    Delivered,
    /// Hand-over or notified event failed.
    Failed,
}

/// An item as the protocol shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemJson {
    /// Arrival order number.
    pub seq: u64,
    /// The request id.
    pub request: u64,
    /// The line, verbatim.
    pub line: String,
    /// Failed hand-overs so far.
    pub failures: u32,
}

/// A notified event as the protocol shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotifiedJson {
    /// The request id.
    pub request: u64,
    /// The item's seq.
    pub seq: u64,
    /// The batch id.
    pub batch: u64,
    /// The hand-over's attempt.
    pub attempt: u32,
    /// `attempt > 1`.
    pub repeat: bool,
}

/// A batch as the protocol shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchJson {
    /// The batch id.
    pub id: u64,
    /// The attempt (as stored, for an in-flight batch shown by `state`).
    pub attempt: u32,
    /// `attempt > 1`.
    pub repeat: bool,
    /// The items, in order.
    pub items: Vec<ItemJson>,
    /// Lines parked at the boundary not in this batch.
    pub remaining: usize,
    /// The exact turn text.
    pub text: String,
    /// One notified event per item.
    pub notified: Vec<NotifiedJson>,
}

/// The queue's state as the protocol shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateJson {
    /// Parked items in seq order (excluding the batch in flight).
    pub parked: Vec<ItemJson>,
    /// The persisted, unsettled batch.
    pub in_flight: Option<BatchJson>,
    /// Dead letters.
    pub dead_letters: Vec<ItemJson>,
}

/// One effect line on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Reply {
    /// First line: the mirror was opened (created or recovered) and holds this state.
    Opened {
        /// The recovered state.
        state: StateJson,
    },
    /// `park` returned `Ok`: the line is durable.
    Parked {
        /// Its seq.
        seq: u64,
    },
    /// `boundary` returned: the batch (durable), or none.
    Batch {
        /// The batch to hand over, if any.
        batch: Option<BatchJson>,
    },
    /// `settle` returned: durable.
    Settled {
        /// Seqs delivered.
        delivered: Vec<u64>,
        /// Seqs failed and still parked.
        failed: Vec<u64>,
        /// Seqs moved to the dead letters.
        dead: Vec<u64>,
    },
    /// The state, for `{"op":"state"}`.
    State {
        /// The state.
        state: StateJson,
    },
    /// The op failed; nothing it did is acknowledged.
    Error {
        /// The error kind, as `parkline::ErrorKind`'s `Debug` (`"Poisoned"`, `"BatchInFlight"`,
        /// ...), or `"BadInput"` for a line that is not a valid op.
        kind: String,
        /// The error's message.
        message: String,
    },
}

fn item_json(item: &parkline::Item) -> ItemJson {
    ItemJson {
        seq: item.seq.0,
        request: item.request.0,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn batch_json(batch: &parkline::Batch) -> BatchJson {
    BatchJson {
        id: batch.id.0,
        attempt: batch.attempt.0,
        repeat: batch.is_repeat(),
        items: batch.items.iter().map(item_json).collect(),
        remaining: batch.remaining,
        text: batch.text(),
        notified: batch
            .notified()
            .iter()
            .map(|n| NotifiedJson {
                request: n.request.0,
                seq: n.seq.0,
                batch: n.batch.0,
                attempt: n.attempt.0,
                repeat: n.repeat,
            })
            .collect(),
    }
}

/// The state of `queue` in the protocol's terms.
pub fn state_json<S: parkline::Storage>(queue: &Queue<S>) -> StateJson {
    StateJson {
        parked: queue.parked().iter().map(item_json).collect(),
        in_flight: queue.in_flight().map(batch_json),
        dead_letters: queue.dead_letters().iter().map(item_json).collect(),
    }
}

fn error_reply(e: &DriverError) -> Reply {
    Reply::Error {
        kind: format!("{:?}", e.kind()),
        message: e.to_string(),
    }
}

/// Apply one command to the queue `driver` drives.
pub fn apply<S: parkline::Storage>(driver: &mut Driver<S>, command: &Command) -> Reply {
    let queue = driver;
    match command {
        Command::Park { request, line } => match queue.park(RequestId(*request), line) {
            Ok(seq) => Reply::Parked { seq: seq.0 },
            Err(e) => error_reply(&e),
        },
        Command::Boundary { budget } => match queue.boundary(Budget(*budget)) {
            Ok(batch) => Reply::Batch {
                batch: batch.as_ref().map(batch_json),
            },
            Err(e) => error_reply(&e),
        },
        Command::Settle { batch, outcomes } => {
            let outcomes: Vec<Outcome> = outcomes
                .iter()
                .map(|o| match o {
                    OutcomeWord::Delivered => Outcome::Delivered,
                    OutcomeWord::Failed => Outcome::Failed,
                })
                .collect();
            match queue.settle(parkline::BatchId(*batch), &outcomes) {
                Ok(s) => Reply::Settled {
                    delivered: s.delivered.iter().map(|s| s.0).collect(),
                    failed: s.failed.iter().map(|s| s.0).collect(),
                    dead: s.dead.iter().map(|s| s.0).collect(),
                },
                Err(e) => error_reply(&e),
            }
        }
        Command::State => Reply::State {
            state: state_json(queue.queue()),
        },
    }
}

fn print(out: &mut impl Write, reply: &Reply) -> io::Result<()> {
    serde_json::to_writer(&mut *out, reply)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Opens (creating or recovering) the mirror at `mirror` with `config`, writes the `opened` effect,
/// then applies each op line of `input` and writes its effect to `output`, flushed after each.
/// With `known_bad` (a delivery behaviour), the ops go through its driver and storage seams.
///
/// Returns the exit status of the protocol: 0 at the end of `input`, 1 when the mirror cannot be
/// opened (after an `error` effect), 2 at a line that is not a valid op (after an `error` effect
/// of kind `BadInput`).
///
/// # Errors
///
/// Reading `input` or writing `output` failed.
pub fn serve(
    mirror: &Path,
    config: Config,
    known_bad: Option<KnownBad>,
    input: impl BufRead,
    mut output: impl Write,
) -> io::Result<u8> {
    let out = &mut output;
    let opened = FsStorage::open(mirror).and_then(|storage| {
        let name = storage.mirror_name().to_owned();
        Queue::with_storage(Seamed::new(storage, known_bad), &name, config)
    });
    let mut queue = match opened {
        Ok(queue) => Driver::new(queue, known_bad),
        Err(e) => {
            print(out, &error_reply(&e.into()))?;
            return Ok(1);
        }
    };
    print(
        out,
        &Reply::Opened {
            state: state_json(queue.queue()),
        },
    )?;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Command>(&line) {
            Ok(command) => apply(&mut queue, &command),
            Err(e) => {
                print(
                    out,
                    &Reply::Error {
                        kind: "BadInput".to_owned(),
                        message: e.to_string(),
                    },
                )?;
                return Ok(2);
            }
        };
        print(out, &reply)?;
    }
    Ok(0)
}
