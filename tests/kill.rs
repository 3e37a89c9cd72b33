//! The real-process crash test: a child process runs the crate on a real file in a temporary
//! directory and is killed with signal 9 at random moments; the parent reopens the mirror and
//! requires the reference's state after some prefix of the ops it wrote, a prefix that includes
//! every op whose effect it had read (acknowledged). D9 (no loss), D10 (repeat), D16 (durable
//! park) on a real file system, with the protocol of `spec/drive.md`.
//!
//! The kill moment is random by the number of effect lines read before the kill (seeded; the
//! seed is printed), never by time: the child runs ahead of the reader, so the kill lands
//! anywhere in the ops after the last one read, including inside an fsync.
//!
//! The child is this test binary itself, re-executed (sled's way) to run only
//! [`serve_answers_a_script_or_is_the_child`] with [`CHILD_MIRROR`] set: that test then runs the
//! harness's drive loop on stdin and stdout and exits without returning. So the drive protocol
//! and its known-bad protocols exist only in test code, never in the operator binary.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command as Process, Stdio};

use parkline::{Config, Queue, Seq};
use parkline_harness::delivery::view::{
    answer_of_ref, hand_over_of_ref, is_state_of, settlement_of_ref, state_of_ref,
};
use parkline_harness::delivery::{Effect, Member, QueueOp};
use parkline_harness::drive::{self, Command, Reply};
use parkline_harness::known_bad::KnownBad;
use parkline_harness::simdisk::SplitMix;
use parkline_model::delivery::Reference;

const FAILURES_MAX: u32 = 2;
/// The children's remembered window (D3): small, so that the planned retries after delivery
/// meet both a remembered request and a forgotten one.
const DELIVERED_MEMORY: u64 = 4;
/// Lives (kills) per mirror file before a fresh directory.
const LIVES_PER_MIRROR: usize = 10;

/// Set in the child's environment to the mirror it drives: makes the child test the drive loop.
const CHILD_MIRROR: &str = "PARKLINE_DRIVE_CHILD";
/// Set in the child's environment to a `KnownBad` name (kebab-case) the child's driver runs.
const CHILD_KNOWN_BAD: &str = "PARKLINE_DRIVE_KNOWN_BAD";
/// The one test the re-executed binary runs, by its full name in this binary.
const CHILD_TEST: &str = "kill::serve_answers_a_script_or_is_the_child";

fn iterations() -> usize {
    std::env::var("PARKLINE_KILL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn seed() -> u64 {
    std::env::var("PARKLINE_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6b11_9000)
}

/// One planned op: the command, the effect the reference predicts, the reference after it.
struct Planned {
    command: Command,
    reply: Reply,
    after: Reference,
}

/// Plan `len` ops from `reference` (a reference at the start of a life); `lines` holds the line
/// of every request parked on this mirror, for the retries after delivery (D3).
fn plan(
    reference: &Reference,
    len: usize,
    lines: &mut BTreeMap<u64, String>,
    rng: &mut SplitMix,
) -> Vec<Planned> {
    let mut now = reference.clone();
    let mut handed: Option<(u64, usize)> = None;
    let mut plan = Vec::with_capacity(len);
    for _ in 0..len {
        let roll = rng.upto(12);
        let (op, effect) = if roll == 12 && !now.remembered().is_empty() {
            retry_op(&mut now, lines, rng)
        } else if roll == 11 && !now.dead_letters().is_empty() {
            dead_letters_op(&mut now, rng)
        } else if roll >= 10 {
            // D22: a group in one record; a kill during it keeps all or none.
            // One line per request (D3): the requests are the seqs the lines get.
            let first = now.mirror().next_seq;
            let items: Vec<(u64, String)> = (0..=rng.upto(2))
                .map(|i| {
                    let request = first + i as u64;
                    (
                        request,
                        format!("[delegation r-{request} group] outcome ok"),
                    )
                })
                .collect();
            lines.extend(items.iter().cloned());
            let group: Vec<(u64, &str)> = items.iter().map(|(r, l)| (*r, l.as_str())).collect();
            let seqs = now.park_all(&group);
            (
                QueueOp::ParkAll { items },
                Effect::ParkedAll {
                    seqs: seqs.into_iter().map(Seq).collect(),
                    ended: Vec::new(),
                },
            )
        } else if roll < 5 {
            // One line per request (D3): the request is the seq the line gets.
            let request = now.mirror().next_seq;
            let line = match rng.upto(3) {
                0 => format!("[delegation r-{request} done] outcome ok"),
                1 => "é→ü".to_owned(),
                2 => String::new(),
                _ => "x".repeat(40),
            };
            lines.insert(request, line.clone());
            let seq = Seq(now.park(request, &line));
            (
                QueueOp::Park { request, line },
                Effect::Parked { seq, ended: None },
            )
        } else if let Some((batch, count)) = handed.filter(|_| roll >= 7) {
            let delivered: Vec<bool> = (0..count).map(|_| rng.upto(3) > 0).collect();
            let settlement = now.settle(batch, &delivered).expect("planned settle");
            handed = None;
            (
                QueueOp::Settle { delivered },
                Effect::Settled(settlement_of_ref(&settlement)),
            )
        } else if roll == 6 && handed.is_none() && rng.upto(1) == 0 {
            // M12 at rest: the idle call compacts a drained mirror; kills land inside it too.
            (QueueOp::Idle, Effect::Idle)
        } else if handed.is_none() {
            let budget = [3, 12, 50, 4000][rng.upto(3)];
            let batch = now.boundary(budget).expect("planned boundary");
            handed = batch.as_ref().map(|b| (b.id, b.items.len()));
            (
                QueueOp::Boundary { budget },
                Effect::Batch {
                    batch: batch.as_ref().map(hand_over_of_ref),
                },
            )
        } else {
            plan.push(Planned {
                command: Command::State,
                reply: Reply::State {
                    state: state_of_ref(&now),
                },
                after: now.clone(),
            });
            continue;
        };
        let (command, reply) = (Command::Queue(op), Reply::Done(effect));
        plan.push(Planned {
            command,
            reply,
            after: now.clone(),
        });
    }
    plan
}

/// The operator's op on the dead letters of `now`, in one record: every one back to the parked
/// list (D21), or the first one removed for good, or all of them (D8).
/// D3: a park of a request the remembered window holds, with its line: answered from the window
/// (delivered, or discarded), nothing written.
fn retry_op(
    now: &mut Reference,
    lines: &BTreeMap<u64, String>,
    rng: &mut SplitMix,
) -> (QueueOp, Effect) {
    let window = now.remembered();
    let entry = window[rng.upto(window.len() - 1)];
    let line = lines[&entry.request].clone();
    let answer = now
        .try_park_answer(entry.request, &line)
        .expect("a remembered line");
    let (seq, ended) = answer_of_ref(answer);
    assert!(ended.is_some(), "a retry after delivery: {answer:?}");
    let op = QueueOp::Park {
        request: entry.request,
        line,
    };
    (op, Effect::Parked { seq, ended })
}

fn dead_letters_op(now: &mut Reference, rng: &mut SplitMix) -> (QueueOp, Effect) {
    let seqs = |seqs: Vec<u64>| seqs.into_iter().map(Seq).collect();
    match rng.upto(3) {
        0 => {
            let first = now.dead_letters().iter().map(|item| item.seq).take(1);
            let first: Vec<u64> = first.collect();
            let gone = now.discard(&first).expect("a dead letter");
            (
                QueueOp::Discard { seqs: Some(first) },
                Effect::Discarded { seqs: seqs(gone) },
            )
        }
        1 => {
            let gone = now.discard_all();
            let effect = Effect::Discarded { seqs: seqs(gone) };
            (QueueOp::Discard { seqs: None }, effect)
        }
        _ => {
            let moved = now.redrive_all();
            let effect = Effect::Redriven { seqs: seqs(moved) };
            (QueueOp::Redrive { seqs: None }, effect)
        }
    }
}

fn read_reply(stdout: &mut BufReader<ChildStdout>) -> Option<Reply> {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            // libtest's banner ("running 1 test") precedes the effects; no effect looks like it.
            Ok(_) if line.trim().is_empty() || line.starts_with("running ") => {}
            Ok(_) => return Some(serde_json::from_str(&line).expect("a JSON effect line")),
        }
    }
}

fn spawn(path: &Path) -> Child {
    spawn_with(path, None)
}

/// The M12 slack of the child's queue: small, so that settles and redrives of these short lines
/// compact the real file often and kills land inside compactions (temp file, fsync, rename,
/// directory fsync); the 4 MiB default would never be reached in a mirror's ten lives.
const COMPACT_SLACK_BYTES: u64 = 512;

/// The M12 rest slack of the child's queue: small, so that kills land inside the compactions of
/// idle calls too; the 64 KiB default would take hundreds of these lines.
const REST_SLACK_BYTES: u64 = 256;

/// The crate's configuration in the child and at every reopen: the reference's `failures_max`,
/// and small compaction slacks.
fn config() -> Config {
    let mut config = Config::default();
    config.failures_max = FAILURES_MAX;
    config.compact_slack_bytes = COMPACT_SLACK_BYTES;
    config.rest_slack_bytes = REST_SLACK_BYTES;
    config.delivered_memory = DELIVERED_MEMORY;
    config
}

/// The reference the child's queue is checked against: its failure bound and window.
fn reference() -> Reference {
    Reference::new(FAILURES_MAX).with_delivered_memory(DELIVERED_MEMORY as usize)
}

/// The test binary, re-executed to run only [`CHILD_TEST`], which drives the mirror at `path`.
fn spawn_with(path: &Path, known_bad: Option<KnownBad>) -> Child {
    let mut process = Process::new(std::env::current_exe().expect("the test binary's path"));
    // Terse output: the pretty format would print the test's name on the first effect's line.
    process
        .args([CHILD_TEST, "--exact", "--quiet", "--nocapture"])
        .env(CHILD_MIRROR, path);
    match known_bad {
        Some(bad) => process.env(CHILD_KNOWN_BAD, bad.name()),
        None => process.env_remove(CHILD_KNOWN_BAD),
    };
    process
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the drive child")
}

/// The child's side, in the re-executed test binary: the drive loop on stdin and stdout, then
/// exit with its status without returning to libtest (whose summary would follow the effects).
fn child_main(mirror: &Path) -> ! {
    let known_bad = KnownBad::from_env(CHILD_KNOWN_BAD).unwrap_or_else(|e| panic!("{e}"));
    let status = drive::serve(
        mirror,
        config(),
        known_bad,
        io::stdin().lock(),
        io::stdout().lock(),
    );
    std::process::exit(status.map_or(1, i32::from));
}

#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    acknowledged: usize,
    took_effect_unacknowledged: usize,
    repeats_recovered: usize,
    /// Lives in which the mirror was rewritten (a compaction's rename gives it a new inode).
    rewritten: usize,
    /// Acknowledged discards that removed a dead letter (D8).
    discards: usize,
    /// Acknowledged parks answered from the remembered window (D3): retries after delivery.
    retries_remembered: usize,
}

/// The inode of the mirror, if it exists.
fn inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// One life: open, run planned ops, read `k` effects, kill -9, reopen and check. Returns the
/// reference of the next life, or what differed.
fn life(
    path: &Path,
    known_bad: Option<KnownBad>,
    (reference, lines): (Reference, &mut BTreeMap<u64, String>),
    rng: &mut SplitMix,
    tally: &mut Tally,
) -> Result<Reference, String> {
    let planned = plan(&reference, 1 + rng.upto(24), lines, rng);
    let before = inode(path);
    let mut child = spawn_with(path, known_bad);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let outcome = exchange(&reference, &planned, &mut stdin, &mut stdout, rng);
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    drop(stdin);
    let read = outcome?;
    tally.kills += 1;
    tally.acknowledged += read;
    tally.discards += planned[..read]
        .iter()
        .filter(
            |op| matches!(&op.reply, Reply::Done(Effect::Discarded { seqs }) if !seqs.is_empty()),
        )
        .count();
    tally.retries_remembered += planned[..read]
        .iter()
        .filter(|op| {
            matches!(
                &op.reply,
                Reply::Done(Effect::Parked { ended: Some(_), .. })
            )
        })
        .count();

    // The killed child's lock went with it; a child another test spawns never holds one (M8).
    let queue =
        Queue::open_with(path, config()).map_err(|e| format!("reopen after kill -9: {e}"))?;
    let recovered = queue.state().clone();
    drop(queue);
    if before.is_some() && inode(path) != before {
        tally.rewritten += 1;
    }
    // The ops that took effect are a prefix of those written, at least the `read` acknowledged.
    let candidates = std::iter::once(&reference)
        .chain(planned.iter().map(|op| &op.after))
        .enumerate()
        .skip(read);
    for (done, candidate) in candidates {
        let mut crashed = candidate.clone();
        crashed.crash();
        // M4: the next op, a boundary closing a batch (D10), may have made only its close durable.
        let mut closed = candidate.clone();
        if closed.close_if_bounded() {
            closed.crash();
            if is_state_of(&recovered, &closed) {
                tally.took_effect_unacknowledged += done - read;
                return Ok(closed);
            }
        }
        if is_state_of(&recovered, &crashed) {
            tally.took_effect_unacknowledged += done - read;
            if recovered.in_flight.is_some() {
                tally.repeats_recovered += 1;
            }
            return Ok(crashed);
        }
    }
    Err(format!(
        "after kill -9 with {read} of {} effects read, the mirror holds {recovered:?}, which is \
         the reference after no prefix of the ops including the acknowledged ones",
        planned.len()
    ))
}

/// Write every planned op, then read a random number of effects and compare them with the
/// reference's. Returns how many were read (acknowledged).
fn exchange(
    reference: &Reference,
    planned: &[Planned],
    stdin: &mut impl Write,
    stdout: &mut BufReader<ChildStdout>,
    rng: &mut SplitMix,
) -> Result<usize, String> {
    match read_reply(stdout) {
        Some(Reply::Opened { state }) if is_state_of(&state, reference) => {}
        other => {
            return Err(format!(
                "expected the opened effect of the reference's state, got {other:?}"
            ));
        }
    }
    let mut input = String::new();
    for op in planned {
        input.push_str(&serde_json::to_string(&op.command).expect("serialise"));
        input.push('\n');
    }
    stdin.write_all(input.as_bytes()).expect("write ops");
    stdin.flush().expect("flush ops");
    let read = rng.upto(planned.len());
    for op in &planned[..read] {
        let reply = read_reply(stdout).ok_or("the child closed its output")?;
        if reply.without_times() != op.reply {
            return Err(format!(
                "effect of {:?}: {reply:?}, the reference predicts {:?}",
                op.command, op.reply
            ));
        }
    }
    Ok(read)
}

/// Run `iterations` kills with the crate's `known_bad` switch; the first failure, if any.
fn kill_loop(
    seed: u64,
    iterations: usize,
    known_bad: Option<KnownBad>,
    tally: &mut Tally,
) -> Result<(), String> {
    let mut rng = SplitMix::new(seed);
    let mut done = 0;
    while done < iterations {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("session.mirror");
        let (mut reference, mut lines) = (reference(), BTreeMap::new());
        for _ in 0..LIVES_PER_MIRROR.min(iterations - done) {
            reference = life(&path, known_bad, (reference, &mut lines), &mut rng, tally)
                .map_err(|e| format!("seed {seed}, kill {done}: {e}"))?;
            done += 1;
        }
    }
    Ok(())
}

/// D9, D10, D16 on a real file: kill -9 at random moments never loses an acknowledged op (an
/// acknowledged discard stays done, D8), and an unsettled persisted batch comes back (then as a
/// repeat, checked by the next life's effects).
#[test]
fn kill_9_at_random_moments_loses_nothing_acknowledged() {
    //= spec/delivery.md#d9-no-loss
    //= type=test
    //# Once `park` has returned `Ok(seq)`, the line with that seq MUST at every moment be exactly
    //# one of: parked, in the in-flight batch, delivered (settled `Delivered`), or a dead letter
    //# until an explicit discard (D8) deletes it, through any sequence of boundaries, settles,
    //# failures, crashes and recoveries.
    //= spec/delivery.md#d10-repeat-recognisable
    //= type=test
    //# `boundary` MUST return a batch only after the batch is durable, and the daemon MUST NOT hand
    //# a batch over before `boundary` returned it; so every batch a parent may have seen is
    //# recoverable.
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `park` MUST return `Ok` only once the line is durable: the file holding it fsynced, and the
    //# directory fsynced whenever a file was created, renamed or removed on the way.
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# `boundary` and `settle` MUST likewise return only once their record is durable.
    // D9, D10, D16: on a real file, killed with signal 9.
    let seed = seed();
    let iterations = iterations();
    eprintln!("kill -9 test: seed {seed} (PARKLINE_KILL_SEED), {iterations} iterations");
    let mut tally = Tally::default();
    kill_loop(seed, iterations, None, &mut tally).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("kill -9 test: {tally:?}");
    assert_eq!(tally.kills, iterations);
    assert!(iterations < 20 || tally.took_effect_unacknowledged > 0);
    assert!(
        iterations < 20 || tally.discards > 0,
        "no life acknowledged a discard of a dead letter"
    );
    assert!(
        iterations < 20 || tally.rewritten > 0,
        "no life compacted the mirror: the kills never landed near a rewrite"
    );
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request the remembered window holds MUST write nothing: with the same line
    //# (the same CRC-64) it MUST answer how that line ended (delivered, with its seq and batch, or
    //# discarded, with its seq), and with another line it MUST fail with `RequestConflict`.
    assert!(
        iterations < 20 || tally.retries_remembered > 0,
        "no life acknowledged a retry after delivery answered from the window"
    );
}

/// The kill -9 test catches the known-bad protocols a process kill can reveal: clear before
/// hand-over (D9), pop-front (D1), no attempt counter (D10). `no-dir-sync` and
/// `no-discard-sync` need a power loss, not a process kill (the page cache survives kill -9): the
/// simulated disk's crash tests catch them.
#[test]
fn known_bad_caught_by_the_kill_9_test() {
    // D1 (pop-front), D9 (clear-before-hand-over), D10 (no-attempt-counter).
    let caught = [
        KnownBad::ClearBeforeHandOver,
        KnownBad::PopFront,
        KnownBad::NoAttemptCounter,
    ];
    for bad in caught {
        let mut tally = Tally::default();
        let found = kill_loop(seed(), 60, Some(bad), &mut tally);
        let message = found.expect_err(&format!("{bad}: not caught in 60 kills"));
        eprintln!("{bad}: caught after {} kills: {message}", tally.kills);
    }
}

/// The protocol's error paths (spec/drive.md): a refused op prints an `error` effect and the
/// driver goes on; a line that is not an op prints `BadInput` and exits 2.
#[test]
fn drive_reports_errors_and_refuses_bad_input() {
    // D3: a line with `\n` is refused (InvalidLine); spec/drive.md error paths.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.mirror");
    let mut child = spawn(&path);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let input = concat!(
        "{\"op\":\"park\",\"request\":1,\"line\":\"two\\nlines\"}\n",
        "{\"op\":\"settle\",\"delivered\":[]}\n",
        "{\"op\":\"park\",\"request\":1,\"line\":\"ok\"}\n",
        "not json\n",
    );
    stdin.write_all(input.as_bytes()).expect("write ops");
    drop(stdin);
    let kinds: Vec<String> = std::iter::from_fn(|| read_reply(&mut stdout))
        .map(|reply| match reply {
            Reply::Opened { .. } => "opened".to_owned(),
            Reply::Done(Effect::Parked { seq, .. }) => format!("parked {seq}"),
            Reply::Error { kind, .. } => kind,
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "opened",
            "InvalidLine",
            "UnknownBatch",
            "parked 1",
            "BadInput"
        ]
    );
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(2));
}

/// In the re-executed child (with [`CHILD_MIRROR`] set) this runs the drive loop and never
/// returns. In a normal run it checks that loop in process: a script's effects, in order, equal
/// the reference's, and a line that is not an op ends it with `BadInput` and status 2.
#[test]
fn serve_answers_a_script_or_is_the_child() {
    if let Some(mirror) = std::env::var_os(CHILD_MIRROR) {
        child_main(Path::new(&mirror));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut reference = reference();
    let mut expected = vec![Reply::Opened {
        state: state_of_ref(&reference),
    }];
    let park = |request, line: &str| {
        Command::Queue(QueueOp::Park {
            request,
            line: line.to_owned(),
        })
    };
    let mut script = vec![park(1, "r-1 done"), park(2, "é→ü")];
    for (request, line) in [(1, "r-1 done"), (2, "é→ü")] {
        expected.push(Reply::Done(Effect::Parked {
            seq: Seq(reference.park(request, line)),
            ended: None,
        }));
    }
    // "r-1 done" costs 9: the batch is that line alone, the other one remains parked.
    let batch = reference.boundary(10).expect("boundary").expect("a batch");
    assert_eq!((batch.items.len(), batch.remaining), (1, 1));
    script.push(Command::Queue(QueueOp::Boundary { budget: 10 }));
    expected.push(Reply::Done(Effect::Batch {
        batch: Some(hand_over_of_ref(&batch)),
    }));
    let settlement = reference.settle(batch.id, &[false]).expect("settle");
    script.push(Command::Queue(QueueOp::Settle {
        delivered: vec![false],
    }));
    expected.push(Reply::Done(Effect::Settled(settlement_of_ref(&settlement))));
    script.push(Command::State);
    expected.push(Reply::State {
        state: state_of_ref(&reference),
    });
    let mut input = String::new();
    for command in &script {
        input.push_str(&serde_json::to_string(command).expect("serialise"));
        input.push_str("\n\n");
    }
    input.push_str("{\"op\":\"park\",\"request\":3}\n{\"op\":\"state\"}\n");
    let mut output = Vec::new();
    let status = drive::serve(
        &dir.path().join("s.mirror"),
        config(),
        None,
        input.as_bytes(),
        &mut output,
    )
    .expect("in-memory input and output");
    let replies: Vec<Reply> = String::from_utf8(output)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON effect line"))
        .collect();
    assert_eq!(status, 2);
    let (last, replies) = replies.split_last().expect("effects");
    let untimed: Vec<Reply> = replies.iter().map(Reply::without_times).collect();
    assert_eq!(untimed, expected);
    assert!(
        matches!(last, Reply::Error { kind, .. } if kind == "BadInput"),
        "{last:?}"
    );
}

/// spec/drive.md's example is what `serve` writes for its four ops, byte for byte: the spec's
/// example cannot drift from the protocol.
#[test]
fn drive_md_example_is_what_serve_writes() {
    let example = crate::spec_blocks::example("drive.md", "drive-serve");
    let ops = concat!(
        r#"{"op":"park","request":1,"line":"r-1 done"}"#,
        "\n",
        r#"{"op":"boundary","budget":100}"#,
        "\n",
        r#"{"op":"settle","delivered":[true]}"#,
        "\n",
        r#"{"op":"state"}"#,
        "\n"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let mut out = Vec::new();
    let status = drive::serve(
        &dir.path().join("s1.mirror"),
        Config::default(),
        None,
        ops.as_bytes(),
        &mut out,
    )
    .expect("serve");
    assert_eq!(status, 0);
    let written = String::from_utf8(out).expect("utf-8");
    // The life is random at creation (M17): the example shows one, put in each state line.
    let life = "\"life\":\"";
    let written: String = written
        .split(life)
        .enumerate()
        .map(|(n, piece)| match n {
            0 => piece.to_owned(),
            _ => format!("{life}0123456789abcdef{}", &piece[16..]),
        })
        .collect();
    assert_eq!(
        example, written,
        "update spec/drive.md's example drive-serve"
    );
}

// ---- many threads parking through one `SharedQueue` ----

/// Set in the child's environment to the mirror its threads park into.
const THREADS_CHILD_MIRROR: &str = "PARKLINE_THREADS_CHILD";
/// Set in the child's environment to the life's number, which its request ids start from.
const THREADS_CHILD_LIFE: &str = "PARKLINE_THREADS_LIFE";
const THREADS_CHILD_TEST: &str = "kill::threads_child_or_nothing";
/// Threads parking in the child.
const PARKING_THREADS: u64 = 8;

fn thread_lives() -> usize {
    std::env::var("PARKLINE_KILL_THREAD_LIVES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// The line of `request`, so the parent knows every line from its request alone.
fn threaded_line(request: u64) -> String {
    format!("[delegation r-{request} threaded] outcome ok")
}

/// In the re-executed child (with [`THREADS_CHILD_MIRROR`] set): eight threads park through
/// one `SharedQueue` until the process is killed, each printing `request seq` once its park
/// returned (an acknowledgement). In a normal run it does nothing.
#[test]
fn threads_child_or_nothing() {
    let Some(mirror) = std::env::var_os(THREADS_CHILD_MIRROR) else {
        return;
    };
    let life: u64 = std::env::var(THREADS_CHILD_LIFE)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let queue = parkline::SharedQueue::open_with(Path::new(&mirror), config())
        .unwrap_or_else(|e| panic!("open: {e}"));
    let out = std::sync::Arc::new(std::sync::Mutex::new(io::stdout()));
    let threads: Vec<_> = (0..PARKING_THREADS)
        .map(|thread| {
            let (queue, out) = (queue.clone(), out.clone());
            std::thread::spawn(move || {
                for k in 0.. {
                    let request = life * 1_000_000_000 + thread * 1_000_000 + k;
                    let seq = queue
                        .park(parkline::RequestId(request), &threaded_line(request))
                        .unwrap_or_else(|e| panic!("park: {e}"));
                    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = writeln!(out, "{request} {}", seq.seq().0);
                    let _ = out.flush();
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    std::process::exit(0);
}

/// D9, D16 through group commit on a real file: eight threads of a child park through one
/// `SharedQueue`; the parent reads a random number of acknowledgements (out of op order), kills
/// the child with signal 9, and requires every acknowledged line in the reopened mirror with its
/// seq, no request twice; then it drains the mirror for the next life.
#[test]
fn kill_9_while_threads_park_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("threads.mirror");
    let mut rng = SplitMix::new(seed());
    let mut acknowledged = 0;
    for life in 1..=thread_lives() {
        let mut child = Process::new(std::env::current_exe().expect("the test binary's path"))
            .args([THREADS_CHILD_TEST, "--exact", "--quiet", "--nocapture"])
            .env(THREADS_CHILD_MIRROR, &path)
            .env(THREADS_CHILD_LIFE, life.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the parking child");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let wanted = 1 + rng.upto(300);
        let mut acked = Vec::with_capacity(wanted);
        let mut line = String::new();
        while acked.len() < wanted {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let mut fields = line.split_whitespace().map(str::parse::<u64>);
            if let (Some(Ok(request)), Some(Ok(seq))) = (fields.next(), fields.next()) {
                acked.push((request, seq));
            }
        }
        child.kill().expect("kill -9");
        child.wait().expect("wait");
        acknowledged += acked.len();
        let mut queue = Queue::open_with(&path, config())
            .unwrap_or_else(|e| panic!("seed {}, life {life}: reopen: {e}", seed()));
        for (request, seq) in &acked {
            let item = queue
                .find(parkline::RequestId(*request))
                .unwrap_or_else(|| panic!("life {life}: acknowledged request {request} is lost"));
            assert_eq!(
                (item.seq.0, item.line.as_str()),
                (*seq, threaded_line(*request).as_str())
            );
        }
        let requests: std::collections::BTreeSet<u64> =
            queue.parked().iter().map(|item| item.request.0).collect();
        assert_eq!(
            requests.len(),
            queue.parked().len(),
            "life {life}: a request parked twice"
        );
        if let Some(batch) = queue
            .boundary(parkline::Budget(usize::MAX))
            .expect("boundary")
        {
            let outcomes = vec![parkline::Outcome::Delivered; batch.items.len()];
            queue.settle(batch.id, &outcomes).expect("settle");
        }
    }
    assert!(acknowledged > 0);
    eprintln!(
        "{} lives, {acknowledged} acknowledged parks checked",
        thread_lives()
    );
}

// ---- several parkers inside the drive child: `park_concurrently` ----

/// Ops per life of the concurrent kill test: each a `park_concurrently` of 2 to 4 members.
const CONCURRENT_OPS_PER_LIFE: usize = 12;

fn concurrent_lives() -> usize {
    std::env::var("PARKLINE_KILL_CONCURRENT_LIVES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

/// The line of request `request` in the concurrent kill test.
fn member_line(request: u64) -> String {
    format!("[delegation r-{request} member] outcome ok")
}

/// A life's ops: `park_concurrently` ops of 2 to 4 members with fresh requests from `first`.
fn concurrent_ops(first: u64, rng: &mut SplitMix) -> Vec<Vec<u64>> {
    let mut next = first;
    (0..CONCURRENT_OPS_PER_LIFE)
        .map(|_| {
            let members = 2 + rng.upto(2) as u64;
            let requests = (next..next + members).collect();
            next += members;
            requests
        })
        .collect()
}

/// D9, D16 through group commit in the drive child: the parent writes `park_concurrently` ops
/// (2 to 4 members each, every member its own thread in the child, acknowledged one by one in
/// the order their parks return), reads a random number of effect lines, kills the child with
/// signal 9 and reopens: every acknowledged member is there with its seq and line; the lines
/// recovered are whole ops in op order and then some members of one more op (the records of
/// its groups that reached the file; which ones depends on the order of joining), with
/// consecutive seqs and no request twice; an op's own line repeats its members' answers.
#[test]
fn kill_9_while_members_park_concurrently_loses_nothing_acknowledged() {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive
    //# while another's write and fsync are in progress MUST be written
    //# together, in one append and one fsync, once that fsync returns, each caller with its own
    //# answer: a refused line or request fails its caller only.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("members.mirror");
    let mut rng = SplitMix::new(seed());
    let (mut acknowledged, mut unacknowledged_kept) = (0, 0);
    for life in 1..=concurrent_lives() {
        let failed = |what: String| format!("seed {}, life {life}: {what}", seed());
        let first = life as u64 * 1_000;
        let ops = concurrent_ops(first, &mut rng);
        let mut child = spawn(&path);
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let start = match read_reply(&mut stdout) {
            Some(Reply::Opened { state }) => state.next_seq,
            other => panic!("{}", failed(format!("expected opened, got {other:?}"))),
        };
        let mut input = String::new();
        for requests in &ops {
            let items = requests.iter().map(|r| (*r, member_line(*r))).collect();
            let command = Command::Queue(QueueOp::ParkConcurrently { items });
            input.push_str(&serde_json::to_string(&command).expect("serialise"));
            input.push('\n');
        }
        stdin.write_all(input.as_bytes()).expect("write ops");
        stdin.flush().expect("flush ops");
        let lines_max: usize = ops.iter().map(|op| op.len() + 1).sum();
        // Acknowledged members: request -> seq; and every op line read must agree with them.
        let mut acked = BTreeMap::new();
        let mut op_lines = 0;
        for _ in 0..rng.upto(lines_max) {
            match read_reply(&mut stdout).expect("an effect line") {
                Reply::Member {
                    op,
                    member,
                    answer: Member::Parked(seq),
                } => {
                    let request = ops[op as usize][member];
                    assert!(
                        acked.insert(request, seq).is_none(),
                        "member answered twice"
                    );
                }
                Reply::Done(Effect::ParkedConcurrently { answers }) => {
                    // Op lines come in op order, each after its members' lines.
                    let requests = &ops[op_lines];
                    op_lines += 1;
                    let members: Vec<Member> = requests
                        .iter()
                        .map(|request| {
                            acked
                                .get(request)
                                .map_or(Member::Error(String::new()), |seq| Member::Parked(*seq))
                        })
                        .collect();
                    assert_eq!(answers, members, "{}", failed("an op line".to_owned()));
                }
                other => panic!("{}", failed(format!("unexpected effect {other:?}"))),
            }
        }
        child.kill().expect("kill -9");
        child.wait().expect("wait");
        drop(stdin);
        acknowledged += acked.len();

        let mut queue = Queue::open_with(&path, config())
            .unwrap_or_else(|e| panic!("{}", failed(format!("reopen: {e}"))));
        let parked = queue.parked().to_vec();
        for (request, seq) in &acked {
            let item = queue
                .find(parkline::RequestId(*request))
                .unwrap_or_else(|| {
                    panic!(
                        "{}",
                        failed(format!("acknowledged request {request} is lost"))
                    )
                });
            assert_eq!(
                (item.seq, item.line.as_str()),
                (*seq, member_line(*request).as_str())
            );
        }
        // Consecutive seqs from the life's start, each a member of a prefix of the ops: whole
        // ops, then some members of one more.
        let seqs: Vec<u64> = parked.iter().map(|item| item.seq.0).collect();
        assert_eq!(
            seqs,
            (start.0..start.0 + seqs.len() as u64).collect::<Vec<_>>(),
            "{}",
            failed(String::new())
        );
        let mut rest = parked.iter().map(|item| item.request.0);
        let mut whole = true;
        for requests in &ops {
            let taken: std::collections::BTreeSet<u64> =
                rest.by_ref().take(requests.len()).collect();
            if taken.is_empty() {
                break;
            }
            assert!(
                whole,
                "{}",
                failed(format!("an op after a partial one: {parked:?}"))
            );
            let members: std::collections::BTreeSet<u64> = requests.iter().copied().collect();
            assert!(
                taken.is_subset(&members),
                "{}",
                failed(format!("{taken:?} are not members of {requests:?}"))
            );
            whole = taken.len() == requests.len();
        }
        assert_eq!(
            rest.count(),
            0,
            "{}",
            failed(format!("lines of no op: {parked:?}"))
        );
        unacknowledged_kept += parked.len() - acked.len();
        if let Some(batch) = queue
            .boundary(parkline::Budget(usize::MAX))
            .expect("boundary")
        {
            let outcomes = vec![parkline::Outcome::Delivered; batch.items.len()];
            queue.settle(batch.id, &outcomes).expect("settle");
        }
    }
    assert!(acknowledged > 0);
    eprintln!(
        "{} lives: {acknowledged} acknowledged members checked, {unacknowledged_kept} kept \
         unacknowledged",
        concurrent_lives()
    );
}

/// spec/drive.md's `park_concurrently`: a `member` line for each member as its park returns,
/// carrying the op's index, then the op's own line with every answer in item order; a bad line
/// and a conflicting request fail their members alone, a retry gets its line's seq (D3, D16).
#[test]
fn serve_prints_each_member_before_its_op_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ops = concat!(
        r#"{"op":"park","request":1,"line":"a"}"#,
        "\n\n",
        r#"{"op":"park_concurrently","items":[[2,"b"],[3,"bad\nline"],[1,"a"],[1,"x"]]}"#,
        "\n",
        r#"{"op":"state"}"#,
        "\n"
    );
    let mut out = Vec::new();
    let status = drive::serve(
        &dir.path().join("s.mirror"),
        config(),
        None,
        ops.as_bytes(),
        &mut out,
    )
    .expect("serve");
    assert_eq!(status, 0);
    let replies: Vec<Reply> = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON effect line"))
        .collect();
    let answers = vec![
        Member::Parked(Seq(2)),
        Member::Error("InvalidLine".to_owned()),
        Member::Parked(Seq(1)),
        Member::Error("RequestConflict".to_owned()),
    ];
    let mut members: Vec<(usize, Member)> = replies[2..6]
        .iter()
        .map(|reply| match reply {
            Reply::Member {
                op: 1,
                member,
                answer,
            } => (*member, answer.clone()),
            other => panic!("expected a member line of op 1, got {other:?}"),
        })
        .collect();
    members.sort_by_key(|(member, _)| *member);
    assert_eq!(
        members,
        answers.clone().into_iter().enumerate().collect::<Vec<_>>()
    );
    assert_eq!(
        replies[6],
        Reply::Done(Effect::ParkedConcurrently { answers })
    );
    assert!(
        matches!(&replies[7], Reply::State { state } if state.parked.len() == 2),
        "{:?}",
        replies[7]
    );
}
