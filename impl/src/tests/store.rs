//! The store (M16): exclusion with single-path handles both ways, in this process and another;
//! one queue per session; the descriptor pool; start-up's fsyncs; a failed reopen.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use super::lock::{probe_in_a_child, probe_in_another_process};
use super::*;
use crate::{Error, SessionInfo, Store, StoreOptions, StoreStats};

fn store_with(dir: &Path, max_open: usize) -> Result<Store, Error> {
    Store::open_with(dir, StoreOptions { max_open }, Config::default())
}

/// M16: a store refuses a directory where a single-path handle lives, and a single-path open
/// of a session in a store's directory is refused, both in this process; single-path handles
/// of two mirrors of one directory share the directory's lock.
#[test]
fn m16_a_store_and_a_single_path_handle_exclude_each_other_in_one_process() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A store MUST take an exclusive lock on the directory's lock file `.parkline.lock`,
    //# held while the store or any queue it gave out lives, and refuse with `Locked`, without
    //# waiting, when another store or a single-path handle holds it.
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A single-path open MUST take a shared lock on the directory's lock file
    //# `.parkline.lock` before the mirror's own lock, and hold both for the life of the
    //# handle.
    let dir = tempfile::tempdir()?;
    let one = Queue::open(dir.path().join("a.mirror"))?;
    let two = Queue::open(dir.path().join("b.mirror"))?;
    let refused = Store::open(dir.path()).err().ok_or("a handle lives")?;
    assert_eq!(refused.kind(), ErrorKind::Locked);
    assert_eq!(
        refused.path(),
        Some(dir.path().canonicalize()?.join(".parkline.lock").as_path())
    );
    drop(one);
    assert_eq!(
        Store::open(dir.path()).map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::Locked)
    );
    drop(two);
    let store = Store::open(dir.path())?;
    let session = store.session("a")?;
    drop(store);
    // A queue the store gave out holds the directory's lock after the store is dropped.
    let err = Queue::open(dir.path().join("a.mirror"))
        .err()
        .ok_or("held")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    let err = Queue::open(dir.path().join("c.mirror"))
        .err()
        .ok_or("held")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    drop(session);
    Queue::open(dir.path().join("a.mirror"))?;
    Ok(())
}

/// The environment variable that turns [`m16_store_probe`] into a probe of the store it names.
const STORE_PROBE_ENV: &str = "PARKLINE_STORE_PROBE";

/// Not a test of its own: run by [`store_in_another_process`], it opens the store named by
/// [`STORE_PROBE_ENV`] and prints what it got. Without the variable it does nothing.
#[test]
fn m16_store_probe() {
    let Some(dir) = std::env::var_os(STORE_PROBE_ENV) else {
        return;
    };
    let got = match Store::open(PathBuf::from(dir)) {
        Ok(_) => "opened".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    };
    println!("probe: {got}");
}

fn store_in_another_process(dir: &Path) -> Result<String, Box<dyn std::error::Error>> {
    probe_in_a_child("tests::store::m16_store_probe", STORE_PROBE_ENV, dir)
}

/// M16 across processes: a single-path open in another process is refused while a store holds
/// the directory, and a store in another process is refused while a single-path handle lives.
#[test]
fn m16_a_store_and_a_single_path_handle_exclude_each_other_across_processes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("s1.mirror");
    let store = Store::open(dir.path())?;
    let session = store.session("s1")?;
    assert_eq!(probe_in_another_process(&path)?, "Locked");
    assert_eq!(store_in_another_process(dir.path())?, "Locked");
    drop((store, session));
    assert_eq!(probe_in_another_process(&path)?, "opened");
    let queue = Queue::open(&path)?;
    assert_eq!(store_in_another_process(dir.path())?, "Locked");
    drop(queue);
    assert_eq!(store_in_another_process(dir.path())?, "opened");
    Ok(())
}

/// M16: a session's queue is given out once at a time; the name follows M8's rules.
#[test]
fn m16_a_session_is_given_out_once_and_named_as_m8_allows() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A store MUST give out at most one queue of a session at a time: another request for
    //# it while that queue lives is `Locked`.
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    let mut queue = store.session("s1")?;
    queue.park(RequestId(1), "one")?;
    assert_eq!(
        store.session("s1").map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::Locked)
    );
    drop(queue);
    assert_eq!(store.session("s1")?.parked().len(), 1);
    for bad in ["", "a/b", "..", &"n".repeat(250)] {
        let kind = store.session(bad).map(|_| ()).map_err(|e| e.kind());
        assert_eq!(kind, Err(ErrorKind::InvalidPath), "{bad:?}");
    }
    assert_eq!(store.names()?, vec!["s1".to_owned()]);
    Ok(())
}

/// M8: a single-path open refuses the mirror name whose lock file is the directory's.
#[test]
fn m8_the_directory_lock_files_stem_is_not_a_mirror_name() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# The mirror name `.parkline` MUST be refused with `InvalidPath`: its lock file would be the
    //# directory's (M16).
    let dir = tempfile::tempdir()?;
    let err = Queue::open(dir.path().join(".parkline"))
        .err()
        .ok_or("reserved")?;
    assert_eq!(err.kind(), ErrorKind::InvalidPath);
    assert_eq!(fs::read_dir(dir.path())?.count(), 0, "nothing created");
    Ok(())
}

/// M16: with `max_open` 3, twenty live sessions that each parked hold at most 3 descriptors
/// between calls; each call on an idle session opens its mirror again, unseen, and its lines
/// are where they were.
#[test]
fn m16_idle_sessions_hold_no_descriptor_and_reopen_unseen() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A session's next call after its idle descriptor was closed MUST open its
    //# mirror again and check that it is the file the session wrote (M8).
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3)?;
    let mut queues = Vec::new();
    for s in 0..20u64 {
        let mut queue = store.session(&format!("s{s}"))?;
        queue.park(RequestId(s), &format!("line {s}"))?;
        queues.push(queue);
        assert!(store.stats().descriptors_open <= 3);
    }
    for (s, queue) in (0..20u64).zip(&mut queues) {
        queue.park(RequestId(100 + s), "second")?;
        let batch = queue.boundary(Budget(1_000))?.ok_or("two lines")?;
        assert_eq!(batch.items.len(), 2);
        queue.settle(batch.id, &[Outcome::Delivered, Outcome::Delivered])?;
    }
    let stats = store.stats();
    assert_eq!((stats.sessions_open, stats.descriptors_max), (20, 3));
    assert!(stats.descriptors_open <= 3, "{stats:?}");
    assert!(stats.reopens >= 17, "{stats:?}");
    assert!(stats.evictions >= 17, "{stats:?}");
    drop(queues);
    assert_eq!(store.stats().descriptors_open, 0);
    Ok(())
}

/// M16 with M8: a mirror replaced while its session was idle is not written: the reopen finds
/// another file, and the call fails with `Io` and poisons, as a write would.
#[test]
fn m16_a_mirror_replaced_while_idle_poisons_its_session() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 1)?;
    let mut s1 = store.session("s1")?;
    s1.park(RequestId(1), "one")?;
    let mut s2 = store.session("s2")?;
    s2.park(RequestId(2), "two")?;
    // s1's descriptor was closed for s2's; its mirror is now another file.
    let path = dir.path().join("s1.mirror");
    let copy = dir.path().join("copy");
    fs::copy(&path, &copy)?;
    fs::rename(&copy, &path)?;
    let err = s1.park(RequestId(3), "three").err().ok_or("replaced")?;
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(s1.is_poisoned());
    assert!(!s2.is_poisoned());
    Ok(())
}

/// M10 and M16: `open_all` fsyncs each mirror it recovers and the directory once for all.
#[test]
fn m10_open_all_fsyncs_each_mirror_and_the_directory_once() -> TestResult {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# `Store::open_all` MUST instead fsync each mirror it opens, and then the directory once
    //# for all of them, before it returns any queue.
    let dir = tempfile::tempdir()?;
    {
        let store = store_with(dir.path(), 2)?;
        for s in 0..7u64 {
            store
                .session(&format!("s{s}"))?
                .park(RequestId(s), "line")?;
        }
    }
    fs::write(dir.path().join("damaged.mirror"), b"not a mirror\n")?;
    fs::write(dir.path().join("notes.txt"), b"not a session")?;
    let store = store_with(dir.path(), 2)?;
    let opened = store.open_all()?;
    assert_eq!(opened.len(), 8);
    let err = opened["damaged"].as_ref().err().ok_or("damaged")?;
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    let queues: Vec<&Queue> = opened.values().filter_map(|q| q.as_ref().ok()).collect();
    assert_eq!(queues.len(), 7);
    for queue in &queues {
        let stats = queue.stats();
        assert_eq!(
            (stats.fsyncs, stats.dir_fsyncs, queue.parked().len()),
            (1, 0, 1)
        );
    }
    assert_eq!(store.stats().dir_fsyncs, 1);
    assert!(store.stats().descriptors_open <= 2);
    Ok(())
}

/// M16, M13: the listing reads each mirror without a lock or a write.
#[test]
fn m16_the_listing_says_what_each_session_holds() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    let mut s1 = store.session("s1")?;
    s1.park(RequestId(1), "one")?;
    s1.park(RequestId(2), "two")?;
    let batch = s1.boundary(Budget(1_000))?.ok_or("lines")?;
    s1.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
    drop(store.session("s2")?);
    let listed = store.list()?;
    let names: Vec<&str> = listed.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["s1", "s2"]);
    let info = |i: usize| -> Result<&SessionInfo, String> {
        listed[i].1.as_ref().map_err(|e| e.to_string())
    };
    let s1_info = info(0)?;
    assert_eq!(
        (
            s1_info.parked,
            s1_info.in_flight,
            s1_info.dead_letters,
            s1_info.open
        ),
        (1, 0, 0, true)
    );
    assert_eq!(
        s1_info.bytes,
        fs::metadata(dir.path().join("s1.mirror"))?.len()
    );
    assert!(!info(1)?.open);
    // A torn final append (a write in progress, M7) counts in the file's bytes: it is the
    // length of the file, not of its records (the `+ with -` mutant of `Store::info`).
    let s2 = dir.path().join("s2.mirror");
    fs::OpenOptions::new()
        .append(true)
        .open(&s2)?
        .write_all(b"0123")?;
    let listed = store.list()?;
    let s2_info = listed[1].1.as_ref().map_err(|e| e.to_string())?;
    assert_eq!(s2_info.bytes, fs::metadata(&s2)?.len());
    Ok(())
}

/// M15 in a store: removing a session's mirror leaves no lock file of its own, and the name
/// can be given out again.
#[test]
fn m15_a_store_session_removes_its_mirror_at_its_end() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    let mut queue = store.session("s1")?;
    queue.park(RequestId(1), "one")?;
    queue.remove(true)?;
    assert_eq!(names_besides_dir_lock(dir.path())?, Vec::<String>::new());
    drop(queue);
    assert!(store.names()?.is_empty());
    assert!(store.session("s1")?.parked().is_empty());
    Ok(())
}

/// `Queue::reopen` of a store session opens it again through its store.
#[test]
fn m10_a_store_session_reopens_through_its_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 1)?;
    let mut queue = store.session("s1")?;
    queue.park(RequestId(1), "one")?;
    queue.reopen()?;
    assert_eq!(queue.parked().len(), 1);
    assert_eq!(
        store.session("s1").map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::Locked)
    );
    assert_eq!(store.stats().sessions_open, 1);
    drop(queue);
    assert_eq!(store.stats().sessions_open, 0);
    Ok(())
}

/// The environment variable that makes [`m16_many_sessions_child`] run, in a directory.
const MANY_ENV: &str = "PARKLINE_STORE_MANY";

/// How many sessions the descriptor-limit child runs.
const MANY_SESSIONS: u64 = 1_000;

/// Not a test of its own: run by [`m16_a_thousand_sessions_run_under_ulimit_64`] under
/// `ulimit -n 64`. A daemon's life with 1,000 sessions: each created and parked into, all kept
/// live; half delivered; reopened at start-up; the descriptors counted in `/proc/self/fd`; then
/// the descriptor table filled, so an idle session's reopen fails, which must not poison.
#[test]
fn m16_many_sessions_child() {
    let Some(dir) = std::env::var_os(MANY_ENV) else {
        return;
    };
    match many_sessions(Path::new(&dir)) {
        Ok(most) => println!("child: ok {most}"),
        Err(e) => println!("child: failed {e}"),
    }
}

fn descriptors() -> io::Result<usize> {
    Ok(fs::read_dir("/proc/self/fd")?.count())
}

fn many_sessions(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let before = descriptors()?;
    let mut most = 0;
    {
        let store = store_with(dir, MAX_OPEN_DEFAULT_FOR_TEST)?;
        let mut queues = Vec::new();
        for s in 0..MANY_SESSIONS {
            let mut queue = store.session(&format!("s{s}"))?;
            queue.park(RequestId(s), &format!("line {s}"))?;
            queues.push(queue);
            most = most.max(descriptors()?);
        }
        for queue in queues.iter_mut().step_by(2) {
            let batch = queue.boundary(Budget(1_000))?.ok_or("a line")?;
            queue.settle(batch.id, &[Outcome::Delivered])?;
            most = most.max(descriptors()?);
        }
    }
    // Every drained session is due at rest at its idle call (M12), for the full table below.
    let config = Config {
        rest_slack_bytes: 0,
        ..Config::default()
    };
    let options = StoreOptions {
        max_open: MAX_OPEN_DEFAULT_FOR_TEST,
    };
    let store = Store::open_with(dir, options, config)?;
    let mut queues: Vec<Queue> = store.open_all()?.into_values().collect::<Result<_, _>>()?;
    most = most.max(descriptors()?);
    let parked: usize = queues.iter().map(|q| q.parked().len()).sum();
    if queues.len() as u64 != MANY_SESSIONS || parked as u64 != MANY_SESSIONS / 2 {
        return Err(format!("{} sessions, {parked} parked", queues.len()).into());
    }
    // Every other session gone, so the pool holds no idle descriptor to close for room, and
    // the table filled: the first session's reopen fails, and must leave it usable.
    let mut first = queues.swap_remove(0);
    drop(queues);
    let mut filler = Vec::new();
    while let Ok(file) = fs::File::open("/dev/null") {
        filler.push(file);
    }
    let err = first
        .park(RequestId(5_000), "late")
        .err()
        .ok_or("no descriptor left")?;
    if err.kind() != ErrorKind::Reopen || first.is_poisoned() {
        return Err(format!("a failed reopen gave {err}").into());
    }
    drop(filler);
    first.park(RequestId(5_000), "late")?;
    full_table_defers_a_compaction(&store, &mut first)?;
    Ok(most - before)
}

/// M10 with a real descriptor table: the drained session's idle call finds the table full, so
/// its compaction cannot open the temp file; it is deferred, nothing is poisoned, and the next
/// idle call, with room again, compacts.
fn full_table_defers_a_compaction(
    store: &Store,
    queue: &mut Queue,
) -> Result<(), Box<dyn std::error::Error>> {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A session's fsync of the directory MUST go through the store's own descriptor of it,
    //# opened with the store: so a store holds at most `max_open` + 2 descriptors in its
    //# directory (with its lock file), and a full descriptor table cannot fail the directory
    //# fsync after a compaction's rename.
    let batch = queue.boundary(Budget(1_000))?.ok_or("lines parked")?;
    let delivered = vec![Outcome::Delivered; batch.items.len()];
    queue.settle(batch.id, &delivered)?;
    let mut filler = Vec::new();
    while let Ok(file) = fs::File::open("/dev/null") {
        filler.push(file);
    }
    let idle = queue.idle();
    drop(filler);
    idle?;
    let stats = queue.stats();
    if (stats.compactions, stats.compactions_deferred) != (0, 1) || queue.is_poisoned() {
        return Err(format!("a full table at an idle call gave {stats:?}").into());
    }
    let through_the_store = store.dir_fsyncs_through_the_store();
    queue.idle()?;
    if queue.stats().compactions != 1 {
        return Err(format!("the next idle call gave {:?}", queue.stats()).into());
    }
    if store.dir_fsyncs_through_the_store() != through_the_store + 1 {
        return Err("the compaction's directory fsync went around the store's descriptor".into());
    }
    Ok(())
}

/// `max_open` of the descriptor-limit child: the default.
const MAX_OPEN_DEFAULT_FOR_TEST: usize = crate::MAX_OPEN_DEFAULT;

/// M16: a daemon's 1,000 sessions in a process whose descriptor table holds 64: at most
/// `max_open` + 2 descriptors beyond what the process held before (the directory's lock and the
/// directory), a failed reopen does not poison, and a full table defers a compaction (M10).
#[test]
fn m16_a_thousand_sessions_run_under_ulimit_64() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A session whose mirror cannot be opened again after its descriptor was closed
    //# MUST fail the call with `Reopen`, having written nothing, and stay usable.
    let dir = tempfile::tempdir()?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))?;
    let exe = std::env::current_exe()?;
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args([
            "--exact",
            "tests::store::m16_many_sessions_child",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .env(MANY_ENV, dir.path())
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    let most: usize = stdout
        .split("child: ok ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("the child failed: {stdout}"))?;
    eprintln!("descriptors beyond the start: {most}");
    // The pool, the directory's lock and the directory.
    assert!(most <= crate::MAX_OPEN_DEFAULT + 2, "{most} descriptors");
    assert!(
        most > crate::MAX_OPEN_DEFAULT / 2,
        "{most}: the pool was used"
    );
    Ok(())
}

/// Whether this process holds a descriptor of `path`.
fn is_open(path: &Path) -> io::Result<bool> {
    for entry in fs::read_dir("/proc/self/fd")? {
        if fs::read_link(entry?.path()).is_ok_and(|target| target == path) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// M16: a write's descriptor stays open until its fsync, and the pool stays within `max_open`
/// meanwhile: another session's call waits for the slot, then closes the descriptor, now idle.
#[test]
fn m16_a_written_descriptor_stays_open_until_its_fsync() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A session's mirror descriptor MUST NOT be closed between a write through it and that
    //# write's fsync: the fsync goes through the descriptor the write used, which alone is
    //# sure to be told of a failed writeback.
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 1)?;
    let (a, b) = (store.dir().join("a.mirror"), store.dir().join("b.mirror"));
    let mut queue_a = store.session("a")?;
    queue_a.park(RequestId(1), "one")?;
    let mut queue_b = store.session("b")?;
    queue_b.park(RequestId(2), "two")?;
    assert!(
        !is_open(&a)? && is_open(&b)?,
        "a was the least recently used"
    );
    let mut storage_a = queue_a.into_storage();
    storage_a.append("a.mirror", b"")?;
    assert!(is_open(&a)? && !is_open(&b)?, "b's idle one made room");
    std::thread::scope(|scope| -> TestResult {
        let parked = scope.spawn(|| queue_b.park(RequestId(3), "three"));
        while store.stats().descriptor_waits == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            is_open(&a)? && !is_open(&b)?,
            "a written descriptor is never closed for room: b waits"
        );
        assert_eq!(store.stats().descriptors_open, 1);
        storage_a.sync("a.mirror")?;
        parked.join().map_err(|_| "the park panicked")??;
        Ok(())
    })?;
    assert!(
        !is_open(&a)? && is_open(&b)?,
        "once fsynced, it is idle like any other"
    );
    // A slot given back by a closed descriptor, not by one returned idle, wakes the waiter too.
    storage_a.append("a.mirror", b"")?;
    let waits = store.stats().descriptor_waits;
    std::thread::scope(|scope| -> TestResult {
        let parked = scope.spawn(|| queue_b.park(RequestId(4), "four"));
        while store.stats().descriptor_waits == waits {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(storage_a);
        parked.join().map_err(|_| "the park panicked")??;
        Ok(())
    })?;
    assert!(is_open(&b)?);
    Ok(())
}

/// The environment variable that makes [`m16_kill_child`] run, in a directory.
const KILL_ENV: &str = "PARKLINE_STORE_KILL";

/// How many sessions the kill -9 child parks into, round robin.
const KILL_SESSIONS: u64 = 100;

/// Not a test of its own: run by [`m16_a_store_daemon_killed_with_9_loses_nothing`]. A store
/// daemon's life: open every session, then park round robin and deliver every seventh session's
/// lines, printing each acknowledged park and each request handed over, until it is killed.
#[test]
fn m16_kill_child() {
    let Some(dir) = std::env::var_os(KILL_ENV) else {
        return;
    };
    let life: u64 = std::env::var("PARKLINE_STORE_KILL_LIFE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if let Err(e) = kill_child(Path::new(&dir), life) {
        println!("child: failed {e}");
    }
}

fn kill_child(dir: &Path, life: u64) -> Result<(), Box<dyn std::error::Error>> {
    let store = store_with(dir, 8)?;
    let mut queues: Vec<Queue> = (0..KILL_SESSIONS)
        .map(|s| store.session(&format!("s{s}")))
        .collect::<Result<_, _>>()?;
    println!("child: opened");
    for i in 0.. {
        let s = i % KILL_SESSIONS;
        let request = life * 1_000_000 + i;
        let queue = &mut queues[s as usize];
        queue.park(RequestId(request), &format!("line {request}"))?;
        println!("ack s{s} {request}");
        if i % 7 == 0
            && let Some(batch) = queue.boundary(Budget(100_000))?
        {
            // Handed over: from here the settle may or may not be durable when the kill comes.
            for item in &batch.items {
                println!("handed s{s} {}", item.request.0);
            }
            let outcomes = vec![Outcome::Delivered; batch.items.len()];
            queue.settle(batch.id, &outcomes)?;
        }
    }
    Ok(())
}

/// M16 with M4 and M10: a store daemon killed with signal 9 at a moment of its work, thirty
/// times, and reopened each time with `open_all`: every park it acknowledged and did not hand
/// over is in its session's mirror, no request is there twice, and no mirror is damaged.
#[test]
fn m16_a_store_daemon_killed_with_9_loses_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    let mut held: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut checked = 0;
    for life in 0..30u64 {
        let mut child = Command::new(&exe)
            .args(["--exact", "tests::store::m16_kill_child", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(KILL_ENV, dir.path())
            .env("PARKLINE_STORE_KILL_LIFE", (life + 1).to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let mut pipe = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut pipe, &mut bytes).map(|_| bytes)
        });
        // The kill comes after the child opened its sessions, from a few parks to a few
        // hundred later, varied by life.
        let opened = dir.path().join("s99.mirror");
        while !opened.exists() && child.try_wait()?.is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(20 + (life * 37) % 160));
        child.kill()?;
        child.wait()?;
        let stdout = String::from_utf8(reader.join().map_err(|_| "reader panicked")??)?;
        if let Some(failed) = stdout.lines().find(|line| line.contains("child: failed")) {
            return Err(failed.to_owned().into());
        }
        // The kill can cut the last line short: only whole lines were printed after their call.
        for line in stdout
            .split_inclusive('\n')
            .filter(|line| line.ends_with('\n'))
        {
            let mut words = line.split_whitespace();
            let (Some(what @ ("ack" | "handed")), Some(session), Some(request)) =
                (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let request: u64 = request.parse()?;
            let set = held.entry(session.to_owned()).or_default();
            if what == "ack" {
                set.insert(request);
            } else {
                set.remove(&request);
            }
        }
        let store = store_with(dir.path(), 8)?;
        for (name, queue) in store.open_all()? {
            let queue = queue?;
            let mut found = BTreeSet::new();
            let in_flight = queue
                .in_flight()
                .map(|batch| &batch.items[..])
                .unwrap_or(&[]);
            for item in queue.parked().iter().chain(in_flight) {
                assert!(
                    found.insert(item.request.0),
                    "{name}: request {} twice",
                    item.request.0
                );
            }
            let expected = held.get(&name).cloned().unwrap_or_default();
            let lost: Vec<_> = expected.difference(&found).collect();
            assert!(
                lost.is_empty(),
                "life {life}, {name}: acknowledged and lost: {lost:?}"
            );
            checked += expected.len();
        }
    }
    eprintln!("{checked} held lines checked");
    // Lives that parked nothing would prove nothing.
    assert!(checked > 1_000, "{checked} held lines checked");
    Ok(())
}

/// M16: a session's call that must open its mirror closes an idle descriptor first, so the
/// pool stays within `max_open` during the call too (the `make_room` mutant kept both open).
#[test]
fn m16_a_reopen_closes_an_idle_descriptor_before_it_opens() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 1)?;
    let (a, b) = (store.dir().join("a.mirror"), store.dir().join("b.mirror"));
    let mut queue_b = store.session("b")?;
    queue_b.park(RequestId(1), "one")?;
    let mut queue_a = store.session("a")?;
    queue_a.park(RequestId(2), "two")?;
    assert!(is_open(&a)? && !is_open(&b)?);
    let mut storage_b = queue_b.into_storage();
    storage_b.append("b.mirror", b"")?;
    assert!(
        is_open(&b)? && !is_open(&a)?,
        "a was closed before b opened"
    );
    assert_eq!(store.stats().descriptors_open, 1);
    storage_b.sync("b.mirror")?;
    Ok(())
}

/// M8's name rule through a store: a session's mirror name with `.ops.lock` added may be 255
/// bytes long, and not one more.
#[test]
fn m8_a_session_name_fits_a_file_name_with_its_suffixes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    let longest = 255 - ".mirror".len() - ".ops.lock".len();
    store.session(&"n".repeat(longest))?;
    let err = store
        .session(&"n".repeat(longest + 1))
        .err()
        .ok_or("too long")?;
    assert_eq!(err.kind(), ErrorKind::InvalidPath);
    Ok(())
}

/// M8 through a store: a session's mirror that is a symbolic link or has a second name is
/// refused, touching nothing, as a single-path open refuses it.
#[test]
fn m8_a_store_session_refuses_a_link_or_a_second_name() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    store.session("real")?.park(RequestId(1), "one")?;
    let real = store.dir().join("real.mirror");
    std::os::unix::fs::symlink(&real, store.dir().join("link.mirror"))?;
    let err = store.session("link").err().ok_or("a link")?;
    assert_eq!(err.kind(), ErrorKind::InvalidPath);
    fs::hard_link(&real, store.dir().join("twin.mirror"))?;
    for name in ["twin", "real"] {
        let err = store.session(name).err().ok_or("a second name")?;
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{name}");
    }
    assert_eq!(store.stats().sessions_open, 0);
    Ok(())
}

/// M16 with M8: a mirror unlinked while its session was idle is not created again by the
/// reopen: the call fails with `Io` and poisons (the `NotFound` guard of the reopen).
#[test]
fn m16_a_mirror_unlinked_while_idle_poisons_its_session() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 1)?;
    let mut s1 = store.session("s1")?;
    s1.park(RequestId(1), "one")?;
    store.session("s2")?.park(RequestId(2), "two")?;
    fs::remove_file(store.dir().join("s1.mirror"))?;
    let err = s1.park(RequestId(3), "three").err().ok_or("gone")?;
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(s1.is_poisoned());
    assert!(!store.dir().join("s1.mirror").exists());
    Ok(())
}

/// M16 with M5 and M12: sessions whose every settle compacts (slack 0), two of them through a
/// pool of one descriptor: each compaction's rename gives the session its new file, no call
/// ever finds the old one (poison), the pool stays within its bound, and each mirror reopens
/// with what it held.
#[test]
fn m16_sessions_compact_through_a_pool_of_one() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let store = Store::open_with(dir.path(), StoreOptions { max_open: 1 }, config)?;
    let mut queues = [store.session("a")?, store.session("b")?];
    for round in 0..6u64 {
        for (k, queue) in (0..).zip(&mut queues) {
            queue.park(RequestId(round * 10 + k), "kept")?;
            queue.park(RequestId(round * 10 + k + 100), "delivered")?;
            let batch = queue.boundary(Budget(1_000))?.ok_or("two lines")?;
            let outcomes: Vec<Outcome> = batch
                .items
                .iter()
                .map(|item| match item.line.as_str() {
                    "kept" => Outcome::Failed,
                    _ => Outcome::Delivered,
                })
                .collect();
            queue.settle(batch.id, &outcomes)?;
            assert!(store.stats().descriptors_open <= 1, "{:?}", store.stats());
        }
    }
    let compactions: Vec<u64> = queues.iter().map(|q| q.stats().compactions).collect();
    assert!(compactions.iter().all(|&c| c >= 3), "{compactions:?}");
    drop(queues);
    for (name, queue) in store.open_all()? {
        let queue = queue?;
        let held = queue.parked().len() + queue.dead_letters().len();
        assert_eq!(held, 6, "{name}");
    }
    Ok(())
}

/// Sessions, producers and parks each of the store's load tests.
const LOAD_SESSIONS: u64 = 300;
const LOAD_PRODUCERS: u64 = 50;
const LOAD_PARKS: u64 = 24;
const LOAD_MAX_OPEN: usize = 32;

/// The environment variable that makes [`m16_load_child`] run: `threads` or `tasks`, then a
/// directory.
const LOAD_ENV: &str = "PARKLINE_STORE_LOAD";

/// The session producer `p`'s `k`th park goes to: every producer walks all sessions.
fn load_session(p: u64, k: u64) -> usize {
    ((p * 7 + k * 13) % LOAD_SESSIONS) as usize
}

/// Not a test of its own: run by the two load tests below under `ulimit -n 128`. Fills the
/// descriptor table but for `max_open` + 2 (the store's lock file and directory), so any
/// descriptor a session opens beyond the pool's slots fails its call with `EMFILE`; then 50
/// producers park into 300 sessions.
#[test]
fn m16_load_child() {
    let Some(how) = std::env::var_os(LOAD_ENV) else {
        return;
    };
    let how = how.to_string_lossy().into_owned();
    let Some((producers, dir)) = how.split_once(':') else {
        return;
    };
    let mut filler = Vec::new();
    while let Ok(file) = fs::File::open("/dev/null") {
        filler.push(file);
    }
    filler.truncate(filler.len().saturating_sub(LOAD_MAX_OPEN + 2));
    match load(producers, Path::new(dir)) {
        Ok(stats) => println!("child: ok {stats:?}"),
        Err(e) => println!("child: failed {e}"),
    }
}

fn load(producers: &str, dir: &Path) -> Result<StoreStats, Box<dyn std::error::Error>> {
    let store = store_with(dir, LOAD_MAX_OPEN)?;
    let queues = (0..LOAD_SESSIONS)
        .map(|s| store.session(&format!("s{s}")))
        .collect::<Result<Vec<_>, Error>>()?;
    let parked = match producers {
        "threads" => park_from_threads(queues)?,
        #[cfg(feature = "tokio")]
        "tasks" => park_from_tasks(queues)?,
        other => return Err(format!("no producers {other:?}").into()),
    };
    let stats = store.stats();
    if parked as u64 != LOAD_PRODUCERS * LOAD_PARKS || stats.evictions == 0 {
        return Err(format!("every park held, through the pool: {stats:?}").into());
    }
    Ok(stats)
}

/// Parks from [`LOAD_PRODUCERS`] threads; the lines the sessions hold then.
fn park_from_threads(queues: Vec<Queue>) -> Result<usize, Error> {
    let sessions: Vec<_> = queues.into_iter().map(crate::SharedQueue::new).collect();
    std::thread::scope(|scope| {
        let producers: Vec<_> = (0..LOAD_PRODUCERS)
            .map(|p| {
                let sessions = &sessions;
                scope.spawn(move || -> Result<(), Error> {
                    for k in 0..LOAD_PARKS {
                        let line = format!("[r{p}-{k}] done");
                        sessions[load_session(p, k)].park(RequestId(p * 1_000 + k), &line)?;
                    }
                    Ok(())
                })
            })
            .collect();
        producers
            .into_iter()
            .try_for_each(|producer| producer.join().expect("a producer"))
    })?;
    sessions.iter().map(|s| Ok(s.parked()?.len())).sum()
}

/// Parks from [`LOAD_PRODUCERS`] tasks; the lines the sessions hold then.
#[cfg(feature = "tokio")]
fn park_from_tasks(queues: Vec<Queue>) -> Result<usize, Box<dyn std::error::Error>> {
    let sessions: Arc<Vec<_>> = Arc::new(queues.into_iter().map(crate::AsyncQueue::new).collect());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    runtime.block_on(async {
        let tasks: Vec<_> = (0..LOAD_PRODUCERS)
            .map(|p| {
                let sessions = Arc::clone(&sessions);
                tokio::spawn(async move {
                    for k in 0..LOAD_PARKS {
                        let line = format!("[r{p}-{k}] done");
                        let session = &sessions[load_session(p, k)];
                        session.park(RequestId(p * 1_000 + k), &line).await?;
                    }
                    Ok::<(), Error>(())
                })
            })
            .collect();
        for task in tasks {
            task.await??;
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    let parked = sessions.iter().map(|s| Ok(s.shared().parked()?.len()));
    Ok(parked.sum::<Result<usize, Error>>()?)
}

/// Runs [`m16_load_child`] with `producers` under `ulimit -n 128`; its figures.
fn load_in_a_child(producers: &str) -> Result<String, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 128 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe()?)
        .args(["--exact", "tests::store::m16_load_child", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(LOAD_ENV, format!("{producers}:{}", dir.path().display()))
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    let figures = stdout
        .split("child: ok ")
        .nth(1)
        .ok_or_else(|| format!("the child failed: {stdout}"))?;
    Ok(figures.lines().next().unwrap_or_default().to_owned())
}

/// M16 under load: 50 threads park into 300 sessions' `SharedQueue`s through a store of
/// `max_open` 32, in a process with room for 34 more descriptors: the pool's 32, the store's
/// lock file and its directory. One more descriptor fails a park with `EMFILE`.
#[test]
fn m16_fifty_threads_over_300_sessions_stay_within_max_open() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# A store MUST keep at most `max_open` descriptors of its sessions' files open, idle or
    //# in a call; a call that needs one while all are open MUST close the least recently
    //# used idle mirror descriptor, or, when every one is in a call, wait for one to be
    //# given back.
    let figures = load_in_a_child("threads")?;
    eprintln!("{figures}");
    Ok(())
}

/// M16 under load, as above, with 50 tasks parking through the sessions' `AsyncQueue`s.
#[cfg(feature = "tokio")]
#[test]
fn m16_fifty_tasks_over_300_sessions_stay_within_max_open() -> TestResult {
    let figures = load_in_a_child("tasks")?;
    eprintln!("{figures}");
    Ok(())
}

/// A clock that stops the first reader after [`Stopping::arm`] until [`Stopping::release`]: a
/// session's call held inside it, its queue in use.
#[derive(Debug, Default)]
struct Stopping {
    armed: std::sync::atomic::AtomicBool,
    stopped: std::sync::atomic::AtomicBool,
    released: std::sync::atomic::AtomicBool,
}

impl crate::Clock for Stopping {
    fn now_ms(&self) -> u64 {
        use std::sync::atomic::Ordering::SeqCst;
        if self.armed.swap(false, SeqCst) {
            self.stopped.store(true, SeqCst);
            while !self.released.load(SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        NOW
    }
}

/// M16: `Store::stats` sums the sessions' figures (counters, gauges, the fsync histogram)
/// without any session's lock, keeps the counters of a session that ended or reopened, and
/// drops its gauges.
#[test]
fn m16_the_store_sums_its_sessions_without_their_locks() -> TestResult {
    use std::sync::atomic::Ordering::SeqCst;
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 4)?;
    let clock = Arc::new(Stopping::default());
    store.set_clock(clock.clone());
    let mut a = store.session("a")?;
    a.park(RequestId(1), "one")?;
    a.park(RequestId(2), "two")?;
    let b = crate::SharedQueue::new(store.session("b")?);
    b.park(RequestId(3), "three")?;
    let each = [a.stats(), b.stats()?];
    let sum = store.stats().sessions;
    assert_eq!(sum.parked, 3);
    assert_eq!(sum.fsyncs, each[0].fsyncs + each[1].fsyncs);
    assert_eq!(sum.appends, 3);
    assert_eq!(
        sum.fsync_durations.count(),
        sum.fsyncs + sum.dir_fsyncs,
        "the histograms merged"
    );
    assert_eq!(sum.oldest_parked_age, Some(Duration::ZERO));
    // b's park stopped inside its call: the sum is read all the same.
    clock.armed.store(true, SeqCst);
    std::thread::scope(|scope| -> TestResult {
        let parked = scope.spawn(|| b.park(RequestId(4), "four"));
        while !clock.stopped.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(store.stats().sessions.parked, 3, "b's call holds its queue");
        clock.released.store(true, SeqCst);
        parked.join().map_err(|_| "the park panicked")??;
        Ok(())
    })?;
    assert_eq!(store.stats().sessions.parked, 4);
    let fsyncs_before = store.stats().sessions.fsyncs;
    drop(b);
    let after = store.stats().sessions;
    assert_eq!(
        (after.parked, after.fsyncs),
        (2, fsyncs_before),
        "b's counters stay"
    );
    a.reopen()?;
    let reopened = store.stats().sessions;
    assert_eq!(reopened.parked, 2, "a's gauges once");
    assert!(reopened.fsyncs > fsyncs_before, "the reopen's fsyncs added");
    Ok(())
}

/// M16: start-up creates the sessions a daemon expects beside those the directory holds, under
/// the one directory fsync of the open (no create fsyncs the directory itself).
#[test]
fn m16_start_creates_the_expected_sessions_under_one_directory_fsync() -> TestResult {
    //= spec/mirror.md#m16-a-store-of-sessions
    //= type=test
    //# `Store::start` MUST create each session the daemon expects that the directory does not
    //# hold under the same one directory fsync, and no created session's own.
    let dir = tempfile::tempdir()?;
    {
        let store = store_with(dir.path(), 4)?;
        store.session("a")?.park(RequestId(1), "one")?;
    }
    let store = store_with(dir.path(), 4)?;
    let sessions = store.start(["b", "c", "a"])?;
    assert_eq!(sessions.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    let stats = store.stats();
    assert_eq!((stats.dir_fsyncs, stats.sessions.dir_fsyncs), (1, 0));
    let a = sessions["a"].as_ref().map_err(ToString::to_string)?;
    assert_eq!(a.parked()?.len(), 1);
    assert_eq!(store.names()?, ["a", "b", "c"]);
    Ok(())
}

/// M12 and M17 through the store: one idle call reaches every session given out shared and
/// still held, and compacts each drained one to rest; a dropped one is skipped.
#[test]
fn m16_the_stores_idle_call_reaches_every_shared_session() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = Config {
        rest_slack_bytes: 0,
        ..Config::default()
    };
    let store = Store::open_with(dir.path(), StoreOptions { max_open: 2 }, config)?;
    let sessions: Vec<crate::SharedQueue> = store
        .start(["a", "b", "c"])?
        .into_values()
        .collect::<Result<_, _>>()?;
    for (request, session) in (1..).zip(&sessions) {
        session.park(RequestId(request), "done")?;
        let batch = session.boundary(Budget(1_000))?.ok_or("one line")?;
        session.settle(batch.id, &[Outcome::Delivered])?;
    }
    let dropped = store.shared_session("d")?;
    drop(dropped);
    assert!(store.idle().is_empty());
    for session in &sessions {
        assert_eq!(session.stats()?.compactions, 1, "{:?}", session.path()?);
    }
    assert_eq!(store.stats().sessions.compactions, 3);
    Ok(())
}
