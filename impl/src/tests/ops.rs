//! M17: operator requests to a live session, as the daemon's queue applies them and as a command
//! submits them and reads their answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::*;
use crate::ops::{self, Answer, Applied, OpId, Request, Submitted, Verb, Which};

/// A queue at `path` with `dead` dead letters (seqs 1..=dead, failures_max 1), on a clock the
/// test moves.
fn with_dead(path: &Path, dead: u64) -> crate::Result<(Queue, Arc<Fixed>)> {
    let clock = fixed();
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::open_with(path, config)?.with_clock(clock.clone());
    for n in 1..=dead {
        queue.park(RequestId(n), &format!("r{n}"))?;
    }
    if let Some(batch) = queue.boundary(Budget(1 << 20))? {
        let failed = vec![Outcome::Failed; batch.items.len()];
        queue.settle(batch.id, &failed)?;
    }
    assert_eq!(queue.dead_letters().len() as u64, dead);
    Ok((queue, clock))
}

fn request(id: &str, verb: Verb, which: Which) -> crate::Result<Request> {
    let id = OpId::new(id).map_err(|e| crate::Error::new(ErrorKind::InvalidLine, e))?;
    Ok(Request {
        id,
        verb,
        which,
        life: None,
    })
}

/// `request` submitted as a command submits it: naming the life of the mirror at `path` (none
/// when there is no mirror), with no request applied.
fn submit(path: &Path, request: &Request) -> crate::Result<Submitted> {
    let life = ops::durable_window(path).map_or(None, |window| window.life);
    let request = Request {
        life: request.life.or(life),
        ..request.clone()
    };
    let window = ops::Window {
        life: request.life,
        ..ops::Window::default()
    };
    ops::submit(path, &request, &window)
}

fn id(text: &str) -> OpId {
    OpId::new(text).unwrap_or_else(|e| panic!("{e}"))
}

/// M17: a request added beside a live queue is applied at its next boundary, in one record that
/// names it, and answered from the mirror; later boundaries and a reopen never apply it again.
#[test]
fn m17_a_request_is_applied_at_the_next_boundary_and_never_again() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# The holder of the mirror's lock MUST apply each request of the request file whose id
    //# the mirror's window (below) does not hold, in the file's order, when it opens the
    //# mirror (after recovery, before the open returns) and at each `boundary` and idle call
    //# (`Queue::idle`), before it plans the batch or compacts.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, 3)?;
    let redrive = request("r1", Verb::Redrive, Which::Seqs(vec![Seq(1), Seq(3)]))?;
    assert_eq!(submit(&path, &redrive)?, Submitted::Added(id("r1")));
    assert_eq!(
        ops::answer(&path, &id("r1"))?,
        None,
        "not before a boundary"
    );
    let batch = queue
        .boundary(Budget(1 << 20))?
        .ok_or("the redriven lines")?;
    assert_eq!(batch.items.len(), 2, "the redrive came before the batch");
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It MUST apply a request as one record that both makes the change and names the request's id,
    //# made durable before the next request.
    let text = String::from_utf8(fs::read(&path)?)?;
    let last = text.lines().rev().nth(1).ok_or("records")?;
    let change = redrive.change();
    assert!(
        last.ends_with(&format!(
            r#"{{"type":"redrive","seqs":[[1,1],[3,3]],"op":"r1","change":{change}}}"#
        )),
        "{last}"
    );
    let applied = ops::answer(&path, &id("r1"))?.ok_or("answered")?;
    assert_eq!(applied.answer, Answer::Moved(2));
    assert_eq!(queue.stats().requests_applied, 1);
    let window = ops::durable_window(&path)?;
    assert_eq!(
        window
            .applied
            .iter()
            .map(|a| a.id.as_str())
            .collect::<Vec<_>>(),
        ["r1"]
    );
    queue.settle(batch.id, &[Outcome::Delivered, Outcome::Delivered])?;
    clock.0.fetch_add(ops::REREAD_MS * 5, Ordering::SeqCst);
    assert!(queue.boundary(Budget(100))?.is_none());
    drop(queue);
    let queue = Queue::open(&path)?;
    assert_eq!(queue.stats().requests_applied, 0, "the window holds it");
    assert_eq!(queue.dead_letters().len(), 1);
    Ok(())
}

/// M17: an idle session applies a waiting request at its idle call, with no boundary, once.
#[test]
fn m17_an_idle_call_applies_a_waiting_request() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# and at each `boundary` and idle call (`Queue::idle`), before it plans the batch or
    //# compacts.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, 3)?;
    let discard = request("d1", Verb::Discard, Which::All)?;
    assert_eq!(submit(&path, &discard)?, Submitted::Added(id("d1")));
    clock.0.fetch_add(ops::REREAD_MS * 5, Ordering::SeqCst);
    let before = fs::metadata(&path)?.len();
    queue.idle()?;
    assert_eq!(queue.stats().requests_applied, 1);
    assert!(queue.dead_letters().is_empty());
    let applied = ops::answer(&path, &id("d1"))?.ok_or("answered")?;
    assert_eq!(applied.answer, Answer::Moved(3));
    assert!(queue.state().is_drained());
    // The default rest slack is 64 KiB: this log is under it, so nothing was compacted.
    assert_eq!(queue.stats().compactions, 0);
    assert!(fs::metadata(&path)?.len() > before);
    queue.idle()?;
    assert_eq!(queue.stats().requests_applied, 1, "never applied twice");
    Ok(())
}

/// M17: requests a daemon left unapplied (it was down) are applied when the mirror opens, in
/// the file's order; a discard by time of death names only the dead letters that died before.
#[test]
fn m17_requests_are_applied_at_open_in_file_order() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (queue, clock) = with_dead(&path, 2)?;
    drop(queue);
    let died = NOW;
    let first = request("a", Verb::Discard, Which::DiedBefore(died))?;
    let second = request("b", Verb::Discard, Which::DiedBefore(died + 1))?;
    submit(&path, &first)?;
    submit(&path, &second)?;
    let queue = Queue::open(&path)?.with_clock(clock);
    assert!(queue.dead_letters().is_empty());
    let window: Vec<&Applied> = queue.applied_requests().iter().collect();
    assert_eq!(window.len(), 2);
    assert_eq!(
        (&window[0].id, &window[0].answer),
        (&id("a"), &Answer::Moved(0))
    );
    assert_eq!(
        (&window[1].id, &window[1].answer),
        (&id("b"), &Answer::Moved(2))
    );
    Ok(())
}

/// M17: a request the dead letters do not allow is refused, answered with the reason, and
/// changes nothing; a malformed one with an id is refused so too, and one without is skipped.
#[test]
fn m17_a_refused_request_is_answered_and_changes_nothing() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (queue, _clock) = with_dead(&path, 1)?;
    drop(queue);
    let life = ops::durable_window(&path)?.life.ok_or("a life")?;
    let requests = format!(
        r#"{{"schema":1,"requests":[
        {{"id":"x","verb":"redrive","seqs":[7],"life":"{life}"}},
        {{"id":"y","verb":"redrive","all":true,"seqs":[1]}},
        {{"verb":"discard","all":true}},
        {{"id":"z","verb":"discard","seqs":[1],"life":"{life}"}}]}}"#
    );
    fs::write(path.with_file_name("s1.mirror.ops"), requests)?;
    let queue = Queue::open(&path)?;
    let answers: Vec<(String, bool)> = queue
        .applied_requests()
        .iter()
        .map(|a| (a.id.to_string(), matches!(a.answer, Answer::Refused(_))))
        .collect();
    let expected = [("x", true), ("y", true), ("z", false)].map(|(i, r)| (i.to_owned(), r));
    assert_eq!(answers, expected);
    assert!(queue.dead_letters().is_empty(), "z discarded seq 1");
    assert_eq!(
        queue.stats().requests_unreadable,
        1,
        "the entry without an id"
    );
    Ok(())
}

/// M17: a request file that cannot be parsed never stops the queue: nothing of it is applied,
/// it is counted, and the file is left as it is.
#[test]
fn m17_an_unreadable_request_file_never_stops_the_queue() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A request file that cannot be read or parsed MUST NOT stop the queue: none of it is
    //# applied and the failure is reported (tracing, `Stats::requests_unreadable`).
    let (_dir, path) = temp_mirror()?;
    let (mut queue, _clock) = with_dead(&path, 1)?;
    let ops_path = path.with_file_name("s1.mirror.ops");
    fs::write(&ops_path, b"{\"schema\":1,\"requests\":[")?;
    assert!(queue.boundary(Budget(100))?.is_none());
    assert_eq!(queue.stats().requests_unreadable, 1);
    assert_eq!(queue.dead_letters().len(), 1);
    assert_eq!(fs::read(&ops_path)?, b"{\"schema\":1,\"requests\":[");
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# and MUST NOT rewrite a file it cannot parse (it reports it as `RequestFileDamaged`, "the
    //# request file <path> is damaged", exit 1, and leaves it as it is);
    let err = submit(&path, &request("q", Verb::Redrive, Which::All)?);
    assert_eq!(
        err.err().map(|e| e.kind()),
        Some(ErrorKind::RequestFileDamaged)
    );
    assert_eq!(fs::read(&ops_path)?, b"{\"schema\":1,\"requests\":[");
    Ok(())
}

/// M17: a boundary reads the request file only when its stamp changed since the last read, or
/// when that read is a second old by the queue's clock.
#[test]
fn m17_a_boundary_reads_the_request_file_only_when_it_changed() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# At a boundary it reads the file only when one `stat` of it (`Storage::stamp`: device,
    //# inode, size and times) differs from the stamp it saw at its last read, or when that
    //# read is more than a second old by the queue's clock; `park` never looks.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, 2)?;
    submit(&path, &request("one", Verb::Redrive, Which::All)?)?;
    let batch = queue.boundary(Budget(100))?.ok_or("redriven")?;
    queue.settle(batch.id, &[Outcome::Failed, Outcome::Failed])?;
    // Unreadable garbage written in place keeps no stamp: the rewrite shows in the size.
    let ops_path = path.with_file_name("s1.mirror.ops");
    let before = queue.stats().requests_unreadable;
    let mut text = fs::read(&ops_path)?;
    text.truncate(text.len() - 3);
    fs::write(&ops_path, &text)?;
    queue.boundary(Budget(100))?;
    assert_eq!(
        queue.stats().requests_unreadable,
        before + 1,
        "changed: read"
    );
    queue.boundary(Budget(100))?;
    assert_eq!(
        queue.stats().requests_unreadable,
        before + 1,
        "unchanged: not read"
    );
    // Rewritten in place, the same size: the times tell.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(&ops_path, &text)?;
    queue.boundary(Budget(100))?;
    assert_eq!(
        queue.stats().requests_unreadable,
        before + 2,
        "rewritten: read"
    );
    let before = before + 1;
    clock.0.fetch_add(ops::REREAD_MS, Ordering::SeqCst);
    queue.boundary(Budget(100))?;
    assert_eq!(
        queue.stats().requests_unreadable,
        before + 1,
        "a second old, not more: not read"
    );
    clock.0.fetch_add(1, Ordering::SeqCst);
    queue.boundary(Budget(100))?;
    assert_eq!(
        queue.stats().requests_unreadable,
        before + 2,
        "a second old: read"
    );
    Ok(())
}

/// M17: a command's request stands once: the same change or the same id again finds the
/// waiting one; applied requests are dropped when the file is next written; 64 waiting
/// requests refuse a 65th.
#[test]
fn m17_submit_keeps_one_request_per_change_and_at_most_64() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A command MUST NOT add a request while the file holds 64 requests the mirror has not
    //# applied,
    let (_dir, path) = temp_mirror()?;
    let all = request("a1", Verb::Redrive, Which::All)?;
    assert_eq!(submit(&path, &all)?, Submitted::Added(id("a1")));
    let again = request("a2", Verb::Redrive, Which::All)?;
    assert_eq!(submit(&path, &again)?, Submitted::Pending(id("a1")));
    for n in 2..=64 {
        let seqs = request(&format!("s{n}"), Verb::Discard, Which::Seqs(vec![Seq(n)]))?;
        submit(&path, &seqs)?;
    }
    let full = request("late", Verb::Discard, Which::All)?;
    let err = submit(&path, &full).err().ok_or("full")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted);
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It removes only requests that name the window's life and whose id the window holds.
    let a1_applied = ops::Window {
        life: None,
        applied: VecDeque::from([Applied {
            id: id("a1"),
            verb: Verb::Redrive,
            change: Some(all.change()),
            answer: Answer::Moved(0),
        }]),
    };
    assert_eq!(
        ops::submit(&path, &full, &a1_applied)?,
        Submitted::Added(id("late"))
    );
    let entries = ops::parse(&fs::read(path.with_file_name("s1.mirror.ops"))?)?;
    assert_eq!(entries.len(), 64);
    assert!(entries.iter().all(|entry| entry.id() != Some(&id("a1"))));
    ops::prune(&path, &|_| true)?;
    assert!(
        !path.with_file_name("s1.mirror.ops").exists(),
        "empty: removed"
    );
    Ok(())
}

/// M17: the mirror remembers the last 64 requests it applied, across a compaction and a reopen,
/// and refuses a file that applies one of them twice.
#[test]
fn m17_the_window_keeps_64_requests_and_refuses_a_second_application() -> TestResult {
    let ops = (0..70)
        .map(|n| Applied {
            id: id(&format!("q{n}")),
            verb: Verb::Discard,
            change: Some(n),
            answer: if n % 2 == 0 {
                Answer::Moved(n)
            } else {
                Answer::Refused(format!("seq {n} is not a dead letter"))
            },
        })
        .skip(6)
        .collect::<VecDeque<_>>();
    let state = mirror::MirrorState {
        ops,
        ..mirror::MirrorState::default()
    };
    let bytes = mirror::encode(&state);
    assert_eq!(
        mirror::decode(&bytes)?,
        state,
        "the snapshot keeps the window"
    );
    let mut storage = MemStorage::new();
    storage.set_file("m", bytes.clone());
    let queue = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(queue.applied_requests().len(), 64);
    let mut storage = queue.into_storage();
    let more = br#"{"schema":1,"requests":[{"id":"new","verb":"redrive","all":true}]}"#;
    storage.set_file("m.ops", more.to_vec());
    let queue = Queue::with_storage(storage, "m", Config::default())?;
    let window = &queue.applied_requests();
    assert_eq!(window.len(), ops::APPLIED_MEMORY);
    assert_eq!(window.front().map(|a| a.id.as_str()), Some("q7"));
    assert_eq!(window.back().map(|a| a.id.as_str()), Some("new"));
    let mut twice = file(&queue);
    twice.extend(rec(r#"{"type":"op","op":"new","verb":"redrive","moved":0}"#).bytes());
    let err = mirror::decode(&twice).err().ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains("request new is applied a second time"),
        "{err}"
    );
    Ok(())
}

/// M17, M15: `remove` takes the request file before the mirror and a command's temp and lock
/// files after it, leaving nothing; a mirror created beside a request file left by an ended
/// session never applies it.
#[test]
fn m17_a_request_file_never_outlives_its_session() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let (mut queue, _clock) = with_dead(&path, 1)?;
    let ops_path = path.with_file_name("s1.mirror.ops");
    submit(&path, &request("r", Verb::Redrive, Which::All)?)?;
    fs::write(
        path.with_file_name("s1.mirror.ops.tmp"),
        b"a command cut short",
    )?;
    queue.remove(true)?;
    assert_eq!(names_besides_dir_lock(dir.path())?, Vec::<String>::new());
    fs::write(
        &ops_path,
        br#"{"schema":1,"requests":[{"id":"old","verb":"discard","all":true}]}"#,
    )?;
    let mut queue = Queue::open(&path)?;
    assert!(
        !ops_path.exists(),
        "a stale request file is removed at create"
    );
    // One that cannot be removed fails the create, which makes no mirror.
    let other = path.with_file_name("s2.mirror");
    fs::create_dir(other.with_file_name("s2.mirror.ops"))?;
    let err = Queue::open(&other).err().ok_or("refused")?;
    assert!(err.to_string().contains("stale request file"), "{err}");
    assert!(!other.exists());
    queue.park(RequestId(1), "one")?;
    drop(queue);
    let queue = Queue::open(&path)?;
    assert!(queue.applied_requests().is_empty());
    Ok(())
}

/// M17: the request file's ids are 1 to 64 of `[0-9a-z-]`, unique in a file; fresh ids differ.
#[test]
fn m17_request_ids_are_checked() {
    for bad in ["", "A", "a b", "a_b", &"a".repeat(65)] {
        assert!(OpId::new(bad).is_err(), "{bad:?}");
    }
    assert!(OpId::new(&"a".repeat(64)).is_ok());
    assert_ne!(OpId::fresh(), OpId::fresh());
    let twice = br#"{"schema":1,"requests":[{"id":"a","verb":"redrive","all":true},{"id":"a","verb":"discard","all":true}]}"#;
    assert!(ops::parse(twice).is_err());
    assert!(ops::parse(br#"{"schema":2,"requests":[]}"#).is_err());
}

/// M17: operators at once each add their request: the request file's lock makes each rewrite
/// see the one before it, so none is lost.
#[test]
fn m17_operators_at_once_each_add_their_request() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let threads: Vec<_> = (0..8u64)
        .map(|n| {
            let path = path.clone();
            std::thread::spawn(move || {
                let which = Which::Seqs(vec![Seq(n + 1)]);
                let mine = request(&format!("op-{n}"), Verb::Discard, which)?;
                submit(&path, &mine)
            })
        })
        .collect();
    for thread in threads {
        let submitted = thread.join().map_err(|_| "a submit panicked")??;
        assert!(matches!(submitted, Submitted::Added(_)));
    }
    let entries = ops::parse(&fs::read(path.with_file_name("s1.mirror.ops"))?)?;
    let mut ids: Vec<String> = entries
        .iter()
        .filter_map(|entry| entry.id().map(ToString::to_string))
        .collect();
    ids.sort();
    assert_eq!(ids, (0..8).map(|n| format!("op-{n}")).collect::<Vec<_>>());
    Ok(())
}

/// M17: a verb's name is how the request file and the mirror spell it.
#[test]
fn m17_verbs_are_named_as_the_files_spell_them() -> TestResult {
    for (verb, name) in [(Verb::Redrive, "redrive"), (Verb::Discard, "discard")] {
        assert_eq!(verb.name(), name);
        assert_eq!(serde_json::to_string(&verb)?, format!("\"{name}\""));
    }
    Ok(())
}

/// M17: each request names exactly one of `seqs`, `all: true` and `died_before`, and
/// `died_before` only for a discard; anything else is malformed, with its id kept so the refusal
/// can be answered.
#[test]
fn m17_a_request_names_its_dead_letters_one_way() -> TestResult {
    let malformed = [
        r#"{"id":"a","verb":"redrive","died_before":5}"#,
        r#"{"id":"a","verb":"discard","all":false}"#,
        r#"{"id":"a","verb":"discard"}"#,
        r#"{"id":"a","verb":"discard","all":true,"died_before":5}"#,
        r#"{"id":"a","verb":"discard","seqs":[1],"extra":1}"#,
    ];
    for entry in malformed {
        let file = format!(r#"{{"schema":1,"requests":[{entry}]}}"#);
        let entries = ops::parse(file.as_bytes())?;
        assert!(
            matches!(&entries[..], [ops::Entry::Malformed { id: Some(id), .. }] if id.as_str() == "a"),
            "{entry}: {entries:?}"
        );
    }
    let died = br#"{"schema":1,"requests":[{"id":"d","verb":"discard","died_before":5}]}"#;
    let entries = ops::parse(died)?;
    let expected = request("d", Verb::Discard, Which::DiedBefore(5))?;
    let encoded = ops::encode(std::slice::from_ref(&expected));
    assert_eq!(entries, vec![ops::Entry::Request(expected)]);
    assert_eq!(ops::parse(&encoded)?, entries);
    Ok(())
}

/// M17: a request file that cannot be read is reported, never taken for an empty one and
/// replaced; a command that cannot get the request file's lock gives up with `Locked` after a
/// short wait, writing nothing.
#[test]
fn m17_a_request_file_that_cannot_be_read_or_locked_is_left_alone() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let ops_path = path.with_file_name("s1.mirror.ops");
    fs::create_dir(&ops_path)?;
    let asked = request("a", Verb::Redrive, Which::All)?;
    let err = submit(&path, &asked).err().ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::RequestFileDamaged);
    assert!(err.to_string().contains("a directory"), "{err}");
    assert!(ops_path.is_dir());
    fs::remove_dir(&ops_path)?;
    let lock_path = path.with_file_name("s1.mirror.ops.lock");
    let held = crate::io::lock::MirrorLock::acquire(&lock_path, crate::io::lock::Mode::Exclusive)
        .map_err(|_| "the test takes the lock")?;
    let err = submit(&path, &asked).err().ok_or("locked")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    assert!(!ops_path.exists());
    drop(held);
    assert_eq!(submit(&path, &asked)?, Submitted::Added(id("a")));
    Ok(())
}
