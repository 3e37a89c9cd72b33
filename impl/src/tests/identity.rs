//! The file behind the name (M5, M8, M15): the lock is on the file the lock path names, a write
//! is acknowledged only into the file the mirror's name leads to, a leftover temp file is never
//! written through, and a removed session never comes back.

use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::io::lock::hook;

/// How many times the lock seam below replaced the lock file, and how many more it may.
static REPLACED: AtomicUsize = AtomicUsize::new(0);
static REPLACE_BUDGET: AtomicUsize = AtomicUsize::new(0);

/// The seam between the open and the lock: replaces the lock file, as a racing `Queue::remove`
/// and a later opener would, while its budget lasts.
fn replace_lock_file(path: &Path) {
    if REPLACE_BUDGET.load(Ordering::SeqCst) == 0 {
        return;
    }
    REPLACE_BUDGET.fetch_sub(1, Ordering::SeqCst);
    REPLACED.fetch_add(1, Ordering::SeqCst);
    let _ = fs::remove_file(path);
    let _ = fs::File::create(path);
}

/// M8, M15: a lock file replaced between the open and the lock is never the one held: the opener
/// opens again and locks the file the path names, so another process is refused; replaced at
/// every try, the open is refused as `Locked` rather than holding a lock nobody else can find.
#[test]
fn m8_a_lock_file_replaced_between_open_and_lock_is_never_held() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# After taking the lock, the opener MUST check that the lock file's path still names the
    //# file it locked (device and inode), and otherwise drop that descriptor and open again.
    let (_dir, path) = temp_mirror()?;
    hook::set(Some(replace_lock_file));
    REPLACED.store(0, Ordering::SeqCst);
    REPLACE_BUDGET.store(1, Ordering::SeqCst);
    let queue = Queue::open(&path);
    REPLACE_BUDGET.store(usize::MAX, Ordering::SeqCst);
    let always = Queue::open(path.with_file_name("s2.mirror")).map(|_| ());
    hook::set(None);
    let queue = queue?;
    assert!(REPLACED.load(Ordering::SeqCst) > 1);
    assert_eq!(lock::probe_in_another_process(&path)?, "Locked");
    assert_eq!(always.err().map(|e| e.kind()), Some(ErrorKind::Locked));
    drop(queue);
    assert_eq!(lock::probe_in_another_process(&path)?, "opened");
    Queue::open(path.with_file_name("s2.mirror"))?;
    Ok(())
}

/// `Err(kind)` of a call expected to fail.
fn kind_of<T>(result: crate::Result<T>) -> Option<ErrorKind> {
    result.err().map(|e| e.kind())
}

/// M8: a park into a mirror renamed away, within its directory or into another, or whose
/// directory was renamed, or whose name now leads to another file, is refused with `Io` and the
/// handle poisoned; nothing after it is acknowledged.
#[test]
fn m8_a_park_into_a_mirror_renamed_away_is_refused() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Before it acknowledges a write, the queue MUST check that the mirror's name still
    //# leads to the file it wrote (device and inode, `Storage::identity`), and otherwise fail
    //# with `Io` and poison the handle (M10).
    let elsewhere = tempfile::tempdir()?;
    for how in ["within", "across", "directory", "replaced", "unlinked"] {
        let parent = tempfile::tempdir()?;
        let dir = parent.path().join("sessions");
        fs::create_dir(&dir)?;
        let path = dir.join("s1.mirror");
        let mut queue = Queue::open(&path)?;
        assert_eq!(queue.park(RequestId(1), "one")?, Parked::Held(Seq(1)));
        match how {
            "within" => fs::rename(&path, dir.join("s1.mirror.old"))?,
            "across" => fs::rename(&path, elsewhere.path().join("s1.mirror"))?,
            "directory" => fs::rename(&dir, parent.path().join("moved"))?,
            "replaced" => {
                fs::rename(&path, dir.join("s1.mirror.old"))?;
                fs::write(&path, b"")?;
            }
            _ => fs::remove_file(&path)?,
        }
        assert_eq!(
            kind_of(queue.park(RequestId(2), "two")),
            Some(ErrorKind::Io),
            "{how}"
        );
        assert_eq!(
            kind_of(queue.park(RequestId(3), "three")),
            Some(ErrorKind::Poisoned),
            "{how}"
        );
    }
    Ok(())
}

/// M8, M10: a compacting settle whose directory was renamed away fails and poisons instead of
/// deferring the compaction and acknowledging the settle into a file no name reaches.
#[test]
fn m8_m10_a_compacting_settle_in_a_directory_renamed_away_is_refused() -> TestResult {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# Only a full disk (`ENOSPC`, `EDQUOT`) or a full descriptor table (`EMFILE`, `ENFILE`)
    //# defers a compaction; any other failure to write or fsync the temp file MUST poison
    //# the handle.
    let parent = tempfile::tempdir()?;
    let dir = parent.path().join("sessions");
    fs::create_dir(&dir)?;
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::open_with(dir.join("s1.mirror"), config)?;
    queue.park(RequestId(1), "one")?;
    let batch = queue.boundary(Budget(1000))?.ok_or("a batch")?;
    fs::rename(&dir, parent.path().join("moved"))?;
    let settled = queue.settle(batch.id, &[Outcome::Delivered]);
    assert_eq!(kind_of(settled), Some(ErrorKind::Io));
    let stats = queue.stats();
    assert_eq!((stats.compactions, stats.compactions_deferred), (0, 0));
    assert!(queue.is_poisoned());
    Ok(())
}

/// A dangling symbolic link at `<dir>/s1.mirror.tmp`, into `target_dir`; returns the target.
fn plant_temp_link(dir: &Path, target_dir: &Path) -> io::Result<PathBuf> {
    let target = target_dir.join("planted");
    symlink(&target, dir.join("s1.mirror.tmp"))?;
    Ok(target)
}

/// M5, M8: a dangling `<name>.tmp` link left before the open is removed, never followed: the
/// mirror is created as a regular file in its own directory and its target never exists.
#[test]
fn m5_a_leftover_temp_link_is_removed_not_followed() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed
    //# (followed by a directory fsync) — but only after the mirror itself decoded
    //# without error (M11).
    let elsewhere = tempfile::tempdir()?;
    for existing in [false, true] {
        let (dir, path) = temp_mirror()?;
        if existing {
            Queue::open(&path)?.park(RequestId(1), "one")?;
        }
        let target = plant_temp_link(dir.path(), elsewhere.path())?;
        let mut queue = Queue::open(&path)?;
        queue.park(RequestId(2), "two")?;
        assert!(fs::symlink_metadata(dir.path().join("s1.mirror.tmp")).is_err());
        assert!(!target.exists(), "existing {existing}");
        assert!(fs::symlink_metadata(&path)?.is_file());
        drop(queue);
        assert_eq!(
            Queue::open(&path)?.parked().len(),
            1 + usize::from(existing)
        );
    }
    Ok(())
}

/// M5, M8: a `<name>.tmp` link that appears under an open queue fails its next compaction (the
/// temp file is created exclusively, never through a link) and poisons the handle; the mirror
/// stays a regular file, and a reopen removes the link and recovers the state.
#[test]
fn m5_a_temp_link_appearing_under_an_open_queue_is_never_written_through() -> TestResult {
    let elsewhere = tempfile::tempdir()?;
    let (dir, path) = temp_mirror()?;
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::open_with(&path, config.clone())?;
    queue.park(RequestId(1), "one")?;
    queue.park(RequestId(2), "two")?;
    let batch = queue.boundary(Budget(1000))?.ok_or("a batch")?;
    let target = plant_temp_link(dir.path(), elsewhere.path())?;
    let settled = queue.settle(batch.id, &[Outcome::Delivered, Outcome::Delivered]);
    assert_eq!(kind_of(settled), Some(ErrorKind::Io));
    assert!(!target.exists());
    assert!(fs::symlink_metadata(&path)?.is_file());
    drop(queue);
    let queue = Queue::open_with(&path, config)?;
    assert_eq!(queue.in_flight().map(|batch| batch.items.len()), Some(2));
    assert!(fs::symlink_metadata(dir.path().join("s1.mirror.tmp")).is_err());
    Ok(())
}

/// M5: a `<name>.tmp` that is neither a file nor a link (a directory) fails the open with
/// `InvalidPath` naming it, and no mirror is created.
#[test]
fn m5_a_temp_name_taken_by_a_directory_fails_the_open() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# A leftover `<name>.tmp` that is neither a regular file nor a symbolic link MUST fail
    //# the open with `InvalidPath` naming it, touching nothing.
    let (dir, path) = temp_mirror()?;
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::create_dir(&tmp)?;
    let err = Queue::open(&path).map(|_| ()).err().ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::InvalidPath);
    assert_eq!(err.path(), Some(tmp.as_path()));
    assert!(!path.exists() && tmp.is_dir());
    Ok(())
}

/// The bytes of a mirror holding `n` parked lines, as a compaction writes it.
fn snapshot_of(n: u64) -> crate::Result<Vec<u8>> {
    let mut queue = Queue::with_storage(MemStorage::new(), "x", Config::default())?;
    for request in 1..=n {
        queue.park(RequestId(request), &format!("line {request}"))?;
    }
    Ok(mirror::encode(queue.state()))
}

/// M5: with no mirror, a temp file holding a complete snapshot of five parked lines is renamed
/// into the mirror's place (what a file system whose rename is two steps leaves after a crash
/// between them), on the simulated directory and on a real one.
#[test]
fn m5_a_complete_snapshot_beside_no_mirror_is_promoted() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# With no `<name>`, a `<name>.tmp` that is a complete snapshot (the current
    //# version's encoding of the state its records build) of a state other than the
    //# initial one MUST be renamed into the mirror's place and the directory fsynced.
    let bytes = snapshot_of(5)?;
    let mut storage = MemStorage::new();
    storage.set_file("s1.mirror.tmp", bytes.clone());
    let queue = Queue::with_storage(storage, "s1.mirror", Config::default())?;
    assert_eq!(queue.parked().len(), 5);
    let storage = queue.into_storage();
    assert_eq!(storage.names(), vec!["s1.mirror"]);
    assert_eq!(storage.file("s1.mirror"), Some(&bytes[..]));

    let (dir, path) = temp_mirror()?;
    fs::write(dir.path().join("s1.mirror.tmp"), &bytes)?;
    assert_eq!(Queue::open(&path)?.parked().len(), 5);
    assert!(!dir.path().join("s1.mirror.tmp").exists());
    Ok(())
}

/// M5: with no mirror, a temp file that holds at most the initial state (an unfinished create,
/// a torn header) is removed and an empty mirror created; one that holds lines but is not a whole
/// snapshot (its `next` record missing, a damaged record) is refused as `Corrupt`, naming both
/// paths and leaving every byte.
#[test]
fn m5_a_temp_beside_no_mirror_is_removed_or_refused_never_reset() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# A `<name>.tmp` beside no `<name>` that holds more than the initial state but is not
    //# a complete snapshot MUST fail the open with `Corrupt` naming both paths, touching
    //# nothing.
    let initial = mirror::encode(&mirror::MirrorState::default());
    for removed in [
        initial.clone(),
        initial[..initial.len() / 2].to_vec(),
        Vec::new(),
    ] {
        let mut storage = MemStorage::new();
        storage.set_file("s1.mirror.tmp", removed);
        let queue = Queue::with_storage(storage, "s1.mirror", Config::default())?;
        assert!(queue.parked().is_empty());
        assert_eq!(queue.into_storage().names(), vec!["s1.mirror"]);
    }
    let whole = snapshot_of(5)?;
    let without_next = whole[..whole[..whole.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .ok_or("lines")?
        + 1]
        .to_vec();
    let mut damaged = whole.clone();
    let last = damaged.len() - 3;
    damaged[last] ^= 1;
    for refused in [without_next, damaged] {
        let mut storage = MemStorage::new();
        storage.set_file("s1.mirror.tmp", refused.clone());
        let before = storage.clone();
        let err = Queue::with_storage(storage.clone(), "s1.mirror", Config::default())
            .map(|_| ())
            .err()
            .ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert_eq!(err.path(), Some(Path::new("s1.mirror.tmp")));
        assert!(err.to_string().contains("no mirror at s1.mirror"), "{err}");
        assert_eq!(storage, before);
    }
    Ok(())
}

/// How many lines come back when `order`'s unlinks are cut after each prefix, on a directory
/// holding a mirror of three lines and a complete snapshot of it at the temp file: for each cut
/// that removed the mirror, the lines an open then finds.
fn lines_back_after_cuts(order: &[String]) -> crate::Result<Vec<usize>> {
    let mut storage = MemStorage::new();
    storage.set_file("s1.mirror", snapshot_of(3)?);
    storage.set_file("s1.mirror.tmp", snapshot_of(3)?);
    let request = br#"{"schema":1,"requests":[{"id":"r1","verb":"redrive","all":true}]}"#;
    storage.set_file("s1.mirror.ops", request.to_vec());
    let mut back = Vec::new();
    for cut in 0..=order.len() {
        let mut cut_storage = storage.clone();
        for name in &order[..cut] {
            cut_storage
                .remove(name)
                .map_err(|e| crate::Error::io("remove", e))?;
        }
        if cut_storage.file("s1.mirror").is_none() {
            let queue = Queue::with_storage(cut_storage, "s1.mirror", Config::default())?;
            back.push(queue.parked().len());
        }
    }
    Ok(back)
}

/// M15: a removal cut short after any prefix of its unlinks (a file system that makes them
/// durable in order) never brings the session back: once the mirror is gone, an open finds an
/// empty queue, even with a complete snapshot at the temp file when the removal began (M5 would
/// promote it). The mirror-first order would bring the three lines back.
#[test]
fn m15_a_removal_cut_at_each_step_never_brings_the_session_back() -> TestResult {
    //= spec/mirror.md#m15-removal-at-the-end-of-a-session
    //= type=test
    //# It MUST remove the temp file, then the mirror, then the lock file, then fsync the
    //# directory, and only then release the lock; a file already gone is not an error.
    let order = crate::queue::removal_order("s1.mirror");
    let back = lines_back_after_cuts(&order)?;
    assert!(!back.is_empty() && back.iter().all(|n| *n == 0), "{back:?}");
    let mirror_first: Vec<String> = order.iter().rev().cloned().collect();
    assert!(lines_back_after_cuts(&mirror_first)?.contains(&3));
    Ok(())
}

/// M15: `remove` of a mirror someone already unlinked goes on: the lock file is removed and the
/// removal succeeds.
#[test]
fn m15_remove_of_a_mirror_already_gone_removes_the_rest() -> TestResult {
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "one")?;
    fs::remove_file(&path)?;
    queue.remove(true)?;
    assert_eq!(names_besides_dir_lock(dir.path())?.len(), 0);
    Ok(())
}

/// The environment variables that turn [`m8_m15_remove_race_role`] into one side of the race:
/// the mirror's path, and the role (`remover` or `dropper`).
const RACE_PATH_ENV: &str = "PARKLINE_REMOVE_RACE_PATH";
const RACE_ROLE_ENV: &str = "PARKLINE_REMOVE_RACE_ROLE";

/// How many cycles each side of [`m8_m15_a_remove_racing_an_opener_never_gives_two_writers`]
/// runs: `PARKLINE_REMOVE_RACE_CYCLES`, 300 by default.
fn race_cycles() -> usize {
    std::env::var("PARKLINE_REMOVE_RACE_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// One cycle of a side of the race: open (retrying while locked), take the marker file that
/// only a lock holder may hold, park, give the marker back, then remove the session or drop it.
fn race_cycle(path: &Path, remover: bool, cycle: usize) -> Result<(), String> {
    let mut queue = loop {
        match Queue::open(path) {
            Ok(queue) => break queue,
            Err(e) if e.kind() == ErrorKind::Locked => std::thread::yield_now(),
            Err(e) => return Err(format!("open at cycle {cycle}: {e}")),
        }
    };
    let marker = path.with_file_name("held");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
        .map_err(|e| format!("two holders at cycle {cycle}: {e}"))?;
    let request = RequestId(cycle as u64 + if remover { 1 << 32 } else { 0 });
    queue
        .park(request, "raced")
        .map_err(|e| format!("park at cycle {cycle}: {e}"))?;
    fs::remove_file(&marker).map_err(|e| format!("marker at cycle {cycle}: {e}"))?;
    if remover {
        queue
            .remove(true)
            .map_err(|e| format!("remove at cycle {cycle}: {e}"))?;
    }
    Ok(())
}

/// The dropper's seam between the open of the lock file and its lock: the preemption the
/// contention aims at, made certain, so that the remover can unlink the file and release its
/// lock in between. Not a timing assertion: any pause long enough to span the remover's unlink,
/// directory fsync and release opens the window.
fn pause_before_lock(_path: &Path) {
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// Not a test of its own: run by the race test below in a child process, it runs one side of
/// the race on the mirror named by [`RACE_PATH_ENV`] and prints how it ended. Without the
/// variables it does nothing.
#[test]
fn m8_m15_remove_race_role() {
    let (Some(path), Ok(role)) = (
        std::env::var_os(RACE_PATH_ENV),
        std::env::var(RACE_ROLE_ENV),
    ) else {
        return;
    };
    let path = PathBuf::from(path);
    if role == "dropper" {
        hook::set(Some(pause_before_lock));
    }
    let outcome =
        (0..race_cycles()).try_for_each(|cycle| race_cycle(&path, role == "remover", cycle));
    match outcome {
        Ok(()) => println!("race: ok"),
        Err(e) => println!("race: {e}"),
    }
}

/// M8, M15: one process loops open / park / `remove(true)`, another (at `nice 19`) loops open /
/// park / drop on the same path, pausing between each open of its lock file and the lock. Each
/// takes an exclusive marker file while it holds the queue: two holders at once, or any error but
/// `Locked` (two writers make each other's creates, renames and identity checks fail), fails the
/// test. Without the re-check after locking it failed in 5 of 5 runs here, most within the first
/// dozen cycles; a CPU-bound thread per core beside it, the contention that preempts the
/// dropper between its open and its lock on a busy machine, made the pause's window rarer.
#[test]
fn m8_m15_a_remove_racing_an_opener_never_gives_two_writers() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# After taking the lock, the opener MUST check that the lock file's path still names the
    //# file it locked (device and inode), and otherwise drop that descriptor and open again.
    let (_dir, path) = temp_mirror()?;
    let exe = std::env::current_exe()?;
    let side = |role: &str, nice: bool| {
        let mut command = if nice {
            let mut command = std::process::Command::new("nice");
            command.args(["-n", "19"]).arg(&exe);
            command
        } else {
            std::process::Command::new(&exe)
        };
        command
            .args([
                "--exact",
                "tests::identity::m8_m15_remove_race_role",
                "--nocapture",
            ])
            .args(["--test-threads", "1"])
            .env(RACE_PATH_ENV, &path)
            .env(RACE_ROLE_ENV, role)
            .stdout(std::process::Stdio::piped())
            .spawn()
    };
    let remover = side("remover", false)?;
    let dropper = side("dropper", true)?;
    let outputs = [remover.wait_with_output(), dropper.wait_with_output()];
    for output in outputs {
        let stdout = String::from_utf8(output?.stdout)?;
        let said = stdout
            .split("race: ")
            .nth(1)
            .and_then(|rest| rest.lines().next());
        assert_eq!(said, Some("ok"), "{stdout}");
    }
    Ok(())
}
