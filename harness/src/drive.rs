//! The drive protocol (`spec/drive.md`): ops read as JSON lines (the delivery vocabulary's queue
//! ops, [`QueueOp`], and `state`) are applied to a real `parkline::Queue` on a mirror file by the
//! same call the delivery check makes ([`QueueOp::call`]), and one JSON line of effect per op is
//! written back, flushed at once; items, batches and states are the crate's own serde. A
//! `park_concurrently` parks its members from one thread each through one `SharedQueue` and
//! also writes a `member` line for each as its park returns, before the op's own line.
//!
//! A reply is written only after the op returned, so a reply the reader has read is an
//! acknowledgement: the kill -9 test (`tests/kill.rs`) runs [`serve`] in a child process (the test
//! binary re-executed), reads replies, kills the child at a random moment, reopens the mirror and
//! checks that everything acknowledged survived. It lives here, not in the operator binary,
//! because it is how a test runs a known-bad protocol (the harness's [`Driver`] and storage
//! seams around the crate) on a real mirror.

use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use parkline::mirror::MirrorState;
use parkline::{Config, FsStorage, Queue};
use serde::{Deserialize, Serialize};

use crate::delivery::view::state_without_times;
use crate::delivery::{Effect, Handed, Member, OpClock, QueueOp, park_concurrently};
use crate::known_bad::{Driver, DriverError, KnownBad, seamed};

/// One op of the drive protocol (one JSON line on stdin): a queue op of the harness's
/// vocabulary, spelt as it is there, or `state`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// Print the queue's state (changes nothing).
    State,
    /// `park`, `boundary`, `settle` (the batch of the last boundary), `hand_over_failed`,
    /// `park_all`, `redrive`, `discard`, `idle` or `park_concurrently`.
    #[serde(untagged)]
    Queue(QueueOp),
}

/// One effect line on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Reply {
    /// First line: the mirror was opened (created or recovered) and holds this state.
    Opened {
        /// The recovered state.
        state: MirrorState,
    },
    /// The state, for `{"op":"state"}`.
    State {
        /// The state.
        state: MirrorState,
    },
    /// A member of a `park_concurrently` answered: printed as soon as its park returned, in the
    /// order the members' parks return (not their order in the op), before the op's own line.
    /// A `parked` answer acknowledges that member's line.
    Member {
        /// The op's index among the ops read (0-based; blank lines are not ops).
        op: u64,
        /// The member's index in the op's items.
        member: usize,
        /// What its park returned.
        answer: Member,
    },
    /// The op failed; nothing it did is acknowledged.
    Error {
        /// The error kind, as `parkline::ErrorKind`'s `Debug` (`"Poisoned"`, `"BatchInFlight"`,
        /// ...), or `"BadInput"` for a line that is not a valid op.
        kind: String,
        /// The error's message.
        message: String,
    },
    /// A queue op returned: `parked`, `batch`, `settled`, `parked_all`, `redriven` or
    /// `discarded`.
    #[serde(untagged)]
    Done(Effect),
}

impl Reply {
    /// The reply without the times of the items it holds (D24), to compare with what the
    /// reference, which has no clock, predicts.
    pub fn without_times(&self) -> Reply {
        match self {
            Reply::Opened { state } => Reply::Opened {
                state: state_without_times(state),
            },
            Reply::State { state } => Reply::State {
                state: state_without_times(state),
            },
            Reply::Done(effect) => Reply::Done(effect.without_times()),
            other => other.clone(),
        }
    }
}

fn error_reply(e: &DriverError) -> Reply {
    Reply::Error {
        kind: format!("{:?}", e.kind()),
        message: e.to_string(),
    }
}

/// Apply one command to the queue `driver` drives; `handed` is the batch of the last boundary,
/// which a settle addresses ([`QueueOp::call`], the call the delivery check makes).
pub fn apply<S: parkline::Storage + Send>(
    driver: &mut Driver<S>,
    handed: &mut Handed,
    command: &Command,
) -> Reply {
    match command {
        Command::State => Reply::State {
            state: driver.queue().state().clone(),
        },
        Command::Queue(op) => match op.call(driver, handed) {
            Ok(effect) => Reply::Done(effect),
            Err(e) => error_reply(&e),
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
    // D24: the protocol's clock reads the index of the op being served, so that its replies are
    // the same bytes on every run.
    let clock = Arc::new(OpClock::default());
    let opened = FsStorage::open(mirror).and_then(|storage| {
        let name = storage.mirror_name().to_owned();
        let queue = Queue::with_storage(seamed(storage, known_bad), &name, config)?;
        Ok(queue.with_clock(clock.clone()))
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
            state: queue.queue().state().clone(),
        },
    )?;
    let mut handed = None;
    let mut index = 0u64;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let op = index;
        index += 1;
        clock.set(op);
        let reply = match serde_json::from_str::<Command>(&line) {
            Ok(Command::Queue(QueueOp::ParkConcurrently { items })) => {
                // Each member's answer is an acknowledgement of its own: printed as it comes.
                let mut printed = Ok(());
                let answers = park_concurrently(&mut queue, &items, |member, answer| {
                    if printed.is_ok() {
                        printed = print(
                            out,
                            &Reply::Member {
                                op,
                                member,
                                answer: answer.clone(),
                            },
                        );
                    }
                });
                printed?;
                Reply::Done(Effect::ParkedConcurrently { answers })
            }
            Ok(command) => apply(&mut queue, &mut handed, &command),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{Crafted, Op};

    /// The protocol's ops are the queue ops of the delivery vocabulary, spelt as `Op` spells
    /// them, and `state`; the ops that act on the process or the disk are not ops of it.
    #[test]
    fn drive_accepts_exactly_the_queue_ops_of_op() {
        let queue_ops = [
            QueueOp::Park {
                request: 7,
                line: "r-7 done".to_owned(),
            },
            QueueOp::Boundary { budget: 40 },
            QueueOp::Settle {
                delivered: vec![true, false],
            },
            QueueOp::HandOverFailed,
            QueueOp::Discard {
                seqs: Some(vec![3, 5]),
            },
            QueueOp::Discard { seqs: None },
            QueueOp::Idle,
            QueueOp::ParkConcurrently {
                items: vec![(7, "r-7 done".to_owned()), (8, "r-8 done".to_owned())],
            },
        ];
        for op in queue_ops {
            let line = serde_json::to_string(&Op::Queue(op.clone())).expect("serialises");
            let command: Command = serde_json::from_str(&line).expect("a drive op");
            assert_eq!(command, Command::Queue(op), "{line}");
        }
        let state: Command = serde_json::from_str(r#"{"op":"state"}"#).expect("a drive op");
        assert_eq!(state, Command::State);
        let others = [
            Op::Crash { torn: 1 },
            Op::CrashAtSync { n: 1, torn: 0 },
            Op::IoError { n: 2 },
            Op::Restart,
            Op::ParkMany {
                request: 1,
                line: "a".to_owned(),
                count: 3,
            },
            Op::Craft(Crafted {
                lines: 1,
                in_flight: 0,
                seq_gap: 1,
                batch_gap: 1,
                attempt_gap: 1,
                failures_gap: 1,
                dead: false,
                failures_max_max: false,
            }),
        ];
        for op in others {
            let line = serde_json::to_string(&op).expect("serialises");
            assert!(serde_json::from_str::<Command>(&line).is_err(), "{line}");
        }
        let unknown_field = r#"{"op":"boundary","budget":4,"batch":1}"#;
        assert!(serde_json::from_str::<Command>(unknown_field).is_err());
        // spec/drive.md's spelling of a discard and its effect.
        let discard: Command =
            serde_json::from_str(r#"{"op":"discard","seqs":null}"#).expect("a drive op");
        assert_eq!(discard, Command::Queue(QueueOp::Discard { seqs: None }));
        let effect = Reply::Done(Effect::Discarded {
            seqs: vec![parkline::Seq(3)],
        });
        assert_eq!(
            serde_json::to_string(&effect).expect("serialises"),
            r#"{"effect":"discarded","seqs":[3]}"#
        );
        // spec/drive.md's spelling of a member's answer and of the op's own line.
        let member = Reply::Member {
            op: 4,
            member: 1,
            answer: Member::Parked(parkline::Seq(12)),
        };
        assert_eq!(
            serde_json::to_string(&member).expect("serialises"),
            r#"{"effect":"member","op":4,"member":1,"answer":{"parked":12}}"#
        );
        let done = Reply::Done(Effect::ParkedConcurrently {
            answers: vec![
                Member::Parked(parkline::Seq(12)),
                Member::Error("InvalidLine".to_owned()),
            ],
        });
        assert_eq!(
            serde_json::to_string(&done).expect("serialises"),
            r#"{"effect":"parked_concurrently","answers":[{"parked":12},{"error":"InvalidLine"}]}"#
        );
    }
}
