//! The operator binary beside a live daemon process (spec/mirror.md M17): a child process parks,
//! hands over and settles on a real mirror, making dead letters as it goes, while the parent
//! runs `parkline redrive` and `parkline discard` against the same mirror and kills the child
//! with signal 9 at random moments, each command's wait included. The next life opens the
//! mirror again and applies what is still pending.
//!
//! What must hold across every life: no open finds the mirror `Corrupt` (a request applied twice
//! inside the window would make it so, M3's check); every request a command added is applied
//! exactly once (its id in the final window once, with the answer the command printed, when it
//! printed one); and every acknowledged park is still held, or remembered as delivered or
//! discarded (D9, D3).
//!
//! The child is this test binary re-executed, as in `kill.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use parkline::ops::Answer;
use parkline::{Budget, Config, Ended, Outcome, Queue, RequestId};
use parkline_harness::simdisk::SplitMix;

/// Set in the child's environment to the mirror it runs the daemon loop on.
const CHILD_MIRROR: &str = "PARKLINE_LIVE_DAEMON";
/// Set in the child's environment to the life's number, which its request ids start from.
const CHILD_LIFE: &str = "PARKLINE_LIVE_LIFE";
const CHILD_TEST: &str = "live_operator::daemon_child_or_nothing";

/// The daemon's config: a line dies at its first failure, and the remembered window holds every
/// line the test parks, so a line that left is found there.
fn config() -> Config {
    let mut config = Config::default();
    config.failures_max = 1;
    config.delivered_memory = 4096;
    config
}

fn lives() -> usize {
    crate::env_usize("PARKLINE_LIVE_OPERATOR_LIVES", 12)
}

/// In the re-executed child (with [`CHILD_MIRROR`] set): parks a line, prints `parked R` once
/// the park returned, and every third park reaches a boundary and settles the batch, even
/// requests failed (dead at once), odd ones delivered, until it is killed. Otherwise nothing.
#[test]
fn daemon_child_or_nothing() {
    let Some(mirror) = std::env::var_os(CHILD_MIRROR) else {
        return;
    };
    let life: u64 = std::env::var(CHILD_LIFE)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut queue =
        Queue::open_with(Path::new(&mirror), config()).unwrap_or_else(|e| panic!("open: {e}"));
    let mut out = std::io::stdout();
    let _ = writeln!(out, "opened");
    for k in 0.. {
        let request = life * 1_000_000 + k;
        queue
            .park(RequestId(request), &format!("r{request} done"))
            .unwrap_or_else(|e| panic!("park: {e}"));
        let _ = writeln!(out, "parked {request}");
        let _ = out.flush();
        if k % 3 == 2
            && let Some(batch) = queue
                .boundary(Budget(1 << 20))
                .unwrap_or_else(|e| panic!("boundary: {e}"))
        {
            let outcomes: Vec<Outcome> = batch
                .items
                .iter()
                .map(|item| match item.request.0 % 2 {
                    0 => Outcome::Failed,
                    _ => Outcome::Delivered,
                })
                .collect();
            queue
                .settle(batch.id, &outcomes)
                .unwrap_or_else(|e| panic!("settle: {e}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::process::exit(0);
}

fn spawn_daemon(mirror: &Path, life: usize) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([CHILD_TEST, "--exact", "--quiet", "--nocapture"])
        .env(CHILD_MIRROR, mirror)
        .env(CHILD_LIFE, life.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the daemon child");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    (child, stdout)
}

/// Reads the child's lines until `wanted` parks were acknowledged (or it died), adding each
/// acknowledged request to `acked`; whether it opened the mirror.
fn read_acks(
    stdout: &mut BufReader<std::process::ChildStdout>,
    wanted: usize,
    acked: &mut BTreeSet<u64>,
) -> bool {
    let (mut line, mut opened, mut count) = (String::new(), false, 0);
    while count < wanted {
        line.clear();
        if stdout.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        opened |= line.trim() == "opened";
        if let Some(request) = line.trim().strip_prefix("parked ") {
            acked.insert(request.parse().expect("a request id"));
            count += 1;
        }
    }
    opened
}

/// One operator command against the daemon, as the runbook runs it.
fn operator(mirror: &Path, id: &str, discard: bool) -> Child {
    let mut args = vec![if discard { "discard" } else { "redrive" }];
    let path = mirror.to_str().expect("a UTF-8 path");
    args.push(path);
    if discard {
        args.push("--all");
    }
    args.extend(["--id", id, "--wait", "2s"]);
    Command::new(env!("CARGO_BIN_EXE_parkline"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run parkline")
}

/// M17: the operator binary beside a daemon process killed with signal 9 at random moments.
#[test]
fn m17_operator_commands_beside_a_daemon_killed_with_9_apply_once() {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# The holder of the mirror's lock MUST apply each request of the request file whose id
    //# the mirror's window (below) does not hold, in the file's order, when it opens the
    //# mirror (after recovery, before the open returns) and at each `boundary` and idle call
    //# (`Queue::idle`), before it plans the batch or compacts.
    let dir = tempfile::tempdir().expect("temp dir");
    let mirror = dir.path().join("live.mirror");
    let seed = crate::env_usize("PARKLINE_LIVE_OPERATOR_SEED", 0x4c17) as u64;
    let mut rng = SplitMix::new(seed);
    let (mut acked, mut printed) = (BTreeSet::new(), BTreeMap::new());
    let (mut asked, mut direct) = (Vec::new(), 0);
    for life in 1..=lives() {
        let (mut daemon, mut stdout) = spawn_daemon(&mirror, life);
        let opened = read_acks(&mut stdout, 3 + rng.upto(20), &mut acked);
        assert!(
            opened,
            "seed {seed}, life {life}: the daemon did not open the mirror"
        );
        let id = format!("op-{life}");
        asked.push(id.clone());
        let command = operator(&mirror, &id, life % 2 == 0);
        // The kill lands before, during or after the daemon applies the request.
        read_acks(&mut stdout, rng.upto(12), &mut acked);
        daemon.kill().expect("kill -9");
        daemon.wait().expect("wait");
        let output = command.wait_with_output().expect("the command");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        match output.status.code() {
            // Answered by the daemon, with its request's id.
            Some(0) if text.contains(&format!("(request {id})")) => {
                let moved = text.split_whitespace().nth(3).expect("a count");
                printed.insert(id, moved.parse::<u64>().expect("a count"));
            }
            // The daemon was dead when the command looked: it held the lock and applied the
            // change itself, with no request (M17).
            Some(0) => {
                asked.pop();
                direct += 1;
            }
            Some(7) => assert!(text.contains(&format!("queued request {id}")), "{text}"),
            other => panic!(
                "seed {seed}, life {life}: {other:?}: {text} {}",
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }
    // The last open applies what is still pending.
    let queue = Queue::open_with(&mirror, config()).expect("no open finds the mirror damaged");
    let window: BTreeMap<String, Answer> = queue
        .applied_requests()
        .iter()
        .map(|applied| (applied.id.to_string(), applied.answer.clone()))
        .collect();
    assert_eq!(window.len(), queue.applied_requests().len(), "an id twice");
    for id in &asked {
        let answer = window
            .get(id)
            .unwrap_or_else(|| panic!("{id} never applied"));
        if let Some(moved) = printed.get(id) {
            assert_eq!(answer, &Answer::Moved(*moved), "{id}: the answer printed");
        }
    }
    let state = parkline::mirror::decode(&std::fs::read(&mirror).expect("read")).expect("decode");
    let remembered: BTreeMap<u64, Ended> = state
        .remembered
        .iter()
        .map(|entry| (entry.request.0, entry.end))
        .collect();
    for request in &acked {
        let held = queue.find(RequestId(*request)).is_some();
        assert!(
            held || remembered.contains_key(request),
            "seed {seed}: acknowledged request {request} is lost"
        );
    }
    let discarded = remembered.values().filter(|end| **end == Ended::Discarded);
    eprintln!(
        "{} lives: {} requests applied once ({} answered within the wait), {direct} commands \
         applied by themselves, {} parks checked, {} lines discarded",
        lives(),
        asked.len(),
        printed.len(),
        acked.len(),
        discarded.count()
    );
}
