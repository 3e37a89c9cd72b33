//! The real-process crash test: `parkline drive` runs the crate on a real file in a temporary
//! directory and is killed with signal 9 at random moments; the parent reopens the mirror and
//! requires the reference's state after some prefix of the ops it wrote, a prefix that includes
//! every op whose effect it had read (acknowledged). D9 (no loss), D10 (repeat), D16 (durable
//! park) on a real file system, with the protocol of `spec/drive.md`.
//!
//! The kill moment is random by the number of effect lines read before the kill (seeded; the
//! seed is printed), never by time: the child runs ahead of the reader, so the kill lands
//! anywhere in the ops after the last one read, including inside an fsync.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command as Process, Stdio};

use parkline::Queue;
use parkline_conformance::drive::{
    BatchJson, Command, ItemJson, NotifiedJson, OutcomeWord, Reply, StateJson, state_json,
};
use parkline_conformance::simdisk::SplitMix;
use parkline_model::delivery::{RefBatch, RefItem, Reference, notified, turn_text};

const FAILURES_MAX: u32 = 2;
/// Lives (kills) per mirror file before a fresh directory.
const LIVES_PER_MIRROR: usize = 10;

fn iterations() -> usize {
    std::env::var("PARKLINE_KILL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn seed() -> u64 {
    std::env::var("PARKLINE_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6b11_9000)
}

fn item_json(item: &RefItem) -> ItemJson {
    ItemJson {
        seq: item.seq,
        request: item.request,
        line: item.line.clone(),
        failures: item.failures,
    }
}

fn batch_json(batch: &RefBatch) -> BatchJson {
    BatchJson {
        id: batch.id,
        attempt: batch.attempt,
        repeat: batch.attempt > 1,
        items: batch.items.iter().map(item_json).collect(),
        remaining: batch.remaining,
        text: turn_text(batch),
        notified: notified(batch)
            .iter()
            .map(|n| NotifiedJson {
                request: n.request,
                seq: n.seq,
                batch: n.batch,
                attempt: n.attempt,
                repeat: n.repeat,
            })
            .collect(),
    }
}

fn ref_state(reference: &Reference) -> StateJson {
    StateJson {
        parked: reference.parked().iter().map(item_json).collect(),
        in_flight: reference.in_flight().map(batch_json),
        dead_letters: reference.dead_letters().iter().map(item_json).collect(),
    }
}

/// One planned op: the command, the effect the reference predicts, the reference after it.
struct Planned {
    command: Command,
    reply: Reply,
    after: Reference,
}

/// Plan `len` ops from `reference` (a reference at the start of a life).
fn plan(reference: &Reference, len: usize, rng: &mut SplitMix) -> Vec<Planned> {
    let mut now = reference.clone();
    let mut handed: Option<(u64, usize)> = None;
    let mut plan = Vec::with_capacity(len);
    for _ in 0..len {
        let roll = rng.upto(9);
        let (command, reply) = if roll < 5 {
            let request = 1 + rng.upto(5) as u64;
            let line = match rng.upto(3) {
                0 => format!("[delegation r-{request} done] outcome ok"),
                1 => "é→ü".to_owned(),
                2 => String::new(),
                _ => "x".repeat(40),
            };
            let seq = now.park(request, &line);
            (Command::Park { request, line }, Reply::Parked { seq })
        } else if let Some((batch, count)) = handed.filter(|_| roll >= 7) {
            let delivered: Vec<bool> = (0..count).map(|_| rng.upto(3) > 0).collect();
            let settlement = now.settle(batch, &delivered).expect("planned settle");
            handed = None;
            let outcomes = delivered
                .iter()
                .map(|d| {
                    if *d {
                        OutcomeWord::Delivered
                    } else {
                        OutcomeWord::Failed
                    }
                })
                .collect();
            (
                Command::Settle { batch, outcomes },
                Reply::Settled {
                    delivered: settlement.delivered,
                    failed: settlement.failed,
                    dead: settlement.dead,
                },
            )
        } else if handed.is_none() {
            let budget = [3, 12, 50, 4000][rng.upto(3)];
            let batch = now.boundary(budget).expect("planned boundary");
            handed = batch.as_ref().map(|b| (b.id, b.items.len()));
            (
                Command::Boundary { budget },
                Reply::Batch {
                    batch: batch.as_ref().map(batch_json),
                },
            )
        } else {
            (
                Command::State,
                Reply::State {
                    state: ref_state(&now),
                },
            )
        };
        plan.push(Planned {
            command,
            reply,
            after: now.clone(),
        });
    }
    plan
}

fn read_reply(stdout: &mut BufReader<ChildStdout>) -> Option<Reply> {
    let mut line = String::new();
    match stdout.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(serde_json::from_str(&line).expect("a JSON effect line")),
    }
}

fn spawn(path: &Path) -> Child {
    Process::new(env!("CARGO_BIN_EXE_parkline"))
        .arg("drive")
        .arg(path)
        .arg("--failures-max")
        .arg(FAILURES_MAX.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn parkline drive")
}

#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    acknowledged: usize,
    took_effect_unacknowledged: usize,
    repeats_recovered: usize,
}

/// One life: open, run planned ops, read `k` effects, kill -9, reopen and check. Returns the
/// reference of the next life.
fn life(path: &Path, reference: Reference, rng: &mut SplitMix, tally: &mut Tally) -> Reference {
    let planned = plan(&reference, 1 + rng.upto(24), rng);
    let mut child = spawn(path);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    match read_reply(&mut stdout) {
        Some(Reply::Opened { state }) => assert_eq!(
            state,
            ref_state(&reference),
            "the child opened a state other than the reference's"
        ),
        other => panic!("expected the opened effect, got {other:?}"),
    }
    let mut input = String::new();
    for op in &planned {
        input.push_str(&serde_json::to_string(&op.command).expect("serialise"));
        input.push('\n');
    }
    stdin.write_all(input.as_bytes()).expect("write ops");
    stdin.flush().expect("flush ops");
    let read = rng.upto(planned.len());
    for op in &planned[..read] {
        let reply = read_reply(&mut stdout).expect("an effect line");
        assert_eq!(reply, op.reply, "effect of {:?}", op.command);
    }
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    drop(stdin);
    tally.kills += 1;
    tally.acknowledged += read;

    let queue = Queue::open(path).expect("reopen after kill -9");
    let recovered = state_json(&queue);
    drop(queue);
    // The ops that took effect are a prefix of those written, at least the `read` acknowledged.
    let candidates = std::iter::once(&reference)
        .chain(planned.iter().map(|op| &op.after))
        .enumerate()
        .skip(read);
    for (done, candidate) in candidates {
        let mut crashed = candidate.clone();
        crashed.crash();
        if ref_state(&crashed) == recovered {
            tally.took_effect_unacknowledged += done - read;
            if recovered.in_flight.is_some() {
                tally.repeats_recovered += 1;
            }
            return crashed;
        }
    }
    panic!(
        "after kill -9 with {read} of {} effects read, the mirror holds {recovered:?}, which is \
         the reference after no prefix of the ops including the acknowledged ones",
        planned.len()
    );
}

/// D9, D10, D16 on a real file: kill -9 at random moments never loses an acknowledged op, and an
/// unsettled persisted batch comes back (then as a repeat, checked by the next life's effects).
#[test]
fn kill_9_at_random_moments_loses_nothing_acknowledged() {
    let seed = seed();
    let iterations = iterations();
    eprintln!("kill -9 test: seed {seed} (PARKLINE_KILL_SEED), {iterations} iterations");
    let mut rng = SplitMix::new(seed);
    let mut tally = Tally::default();
    let mut done = 0;
    while done < iterations {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("session.mirror");
        let mut reference = Reference::new(FAILURES_MAX);
        for _ in 0..LIVES_PER_MIRROR.min(iterations - done) {
            reference = life(&path, reference, &mut rng, &mut tally);
            done += 1;
        }
    }
    eprintln!("kill -9 test: {tally:?}");
    assert_eq!(tally.kills, iterations);
    assert!(iterations < 20 || tally.took_effect_unacknowledged > 0);
}
