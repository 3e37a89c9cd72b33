//! One handle per mirror and private files (M8, M9): the exclusive lock and the file modes.

use super::*;

/// M8: a second handle on the same mirror gets Locked, naming the lock file; after the first is
/// dropped the mirror opens again. Other mirrors in the same directory are independent.
#[test]
fn second_open_is_locked() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Opening a mirror MUST take an exclusive lock on the sibling file `<name>.lock`, held
    //# for the life of the handle:
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# A second handle, in the same or another process, MUST get a `Locked` error naming the lock
    //# file, without waiting.
    let (dir, path) = temp_mirror()?;
    let queue = Queue::open(&path)?;
    let err = Queue::open(&path)
        .map(|_| ())
        .err()
        .ok_or("must be locked")?;
    assert_eq!(err.kind(), ErrorKind::Locked);
    assert_eq!(
        err.path(),
        Some(dir.path().join("s1.mirror.lock").as_path())
    );
    assert!(err.to_string().contains("s1.mirror.lock"));
    let other = Queue::open(dir.path().join("s2.mirror"))?;
    drop(queue);
    drop(other);
    Queue::open(&path)?;
    Ok(())
}

/// M9: the mirror, its lock file and a compacted mirror have mode 0600 (under a permissive umask
/// the mode bits asked for are what count).
#[test]
fn files_are_created_with_mode_0600() -> TestResult {
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it MUST:
    //# write the complete content to `<name>.tmp` (created with mode 0600), fsync it, rename it
    //# over `<name>`, and fsync the directory; only then is the new file durable.
    //= spec/mirror.md#m9-file-mode-0600
    //= type=test
    //# Every file the queue creates (mirror, temp file, lock file) MUST be created with mode 0600
    //# (before the umask).
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "secret")?;
    let mode = |p: &Path| fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&path)?, 0o600);
    assert_eq!(mode(&dir.path().join("s1.mirror.lock"))?, 0o600);
    Ok(())
}

/// The environment variable that turns [`m8_lock_probe`] into a probe of the mirror it names.
const PROBE_ENV: &str = "PARKLINE_LOCK_PROBE";

/// Not a test of its own: run by [`probe_in_another_process`] in a child process, it opens the
/// mirror named by [`PROBE_ENV`] and prints what it got. Without the variable it does nothing.
#[test]
fn m8_lock_probe() {
    let Some(path) = std::env::var_os(PROBE_ENV) else {
        return;
    };
    let got = match Queue::open(PathBuf::from(path)) {
        Ok(_) => "opened".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    };
    println!("probe: {got}");
}

/// Opens `path` in a child process (this test binary again, running [`m8_lock_probe`]) and
/// returns what the open got there: `opened`, or the error kind.
pub(super) fn probe_in_another_process(path: &Path) -> Result<String, Box<dyn std::error::Error>> {
    probe_in_a_child("tests::lock::m8_lock_probe", PROBE_ENV, path)
}

/// Runs the probe test `test` of this binary in a child process with `env` set to `path`, and
/// returns the word it printed after `probe: `.
pub(super) fn probe_in_a_child(
    test: &str,
    env: &str,
    path: &Path,
) -> Result<String, Box<dyn std::error::Error>> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(["--exact", test, "--nocapture"])
        .args(["--test-threads", "1"])
        .env(env, path)
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    // The test harness prints the test's name on the same line.
    let got = stdout
        .split("probe: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| format!("the probe printed no result: {stdout}"))?;
    Ok(got.to_owned())
}

/// M8: another process gets `Locked` while a handle is open, and opens the mirror once it is
/// dropped; a refused second open in this process does not release the lock.
#[test]
fn m8_another_process_is_locked_and_a_refused_open_keeps_the_lock() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# A second handle, in the same or another process, MUST get a `Locked` error naming the
    //# lock file, without waiting.
    let (_dir, path) = temp_mirror()?;
    let queue = Queue::open(&path)?;
    assert_eq!(probe_in_another_process(&path)?, "Locked");
    for _ in 0..3 {
        let err = Queue::open(&path)
            .map(|_| ())
            .err()
            .ok_or("must be locked")?;
        assert_eq!(err.kind(), ErrorKind::Locked);
    }
    assert_eq!(probe_in_another_process(&path)?, "Locked");
    drop(queue);
    assert_eq!(probe_in_another_process(&path)?, "opened");
    Ok(())
}

/// How many open/drop cycles [`m8_a_spawned_child_never_holds_the_lock`] runs:
/// `PARKLINE_LOCK_CYCLES`, 2,000 by default.
fn lock_cycles() -> usize {
    std::env::var("PARKLINE_LOCK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// M8: a daemon that spawns processes while it reopens a mirror never finds the mirror locked by
/// one of its children. With a `flock`, a child forked while a handle was open shared the lock
/// until its `exec`: 26-75 % of the reopens failed beside this spawner.
#[test]
fn m8_a_spawned_child_never_holds_the_lock() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Opening a mirror MUST take an exclusive lock on the sibling file `<name>.lock`, held
    //# for the life of the handle: a POSIX record lock (`fcntl(F_SETLK)`), which belongs to
    //# the process and is not inherited by a child it spawns, together with a table of the
    //# lock files the process holds.
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (_dir, path) = temp_mirror()?;
    drop(Queue::open(&path)?);
    let stop = Arc::new(AtomicBool::new(false));
    let spawned = Arc::new(AtomicU64::new(0));
    let spawner = {
        let (stop, spawned) = (Arc::clone(&stop), Arc::clone(&spawned));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if std::process::Command::new("/bin/true").status().is_ok() {
                    spawned.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let cycles = lock_cycles();
    let mut locked = 0;
    for _ in 0..cycles {
        match Queue::open(&path) {
            Ok(queue) => drop(queue),
            Err(e) if e.kind() == ErrorKind::Locked => locked += 1,
            Err(e) => return Err(e.into()),
        }
    }
    stop.store(true, Ordering::Relaxed);
    spawner.join().map_err(|_| "the spawner panicked")?;
    eprintln!(
        "{cycles} open/drop cycles beside {} spawns: {locked} Locked",
        spawned.load(Ordering::Relaxed)
    );
    assert!(spawned.load(Ordering::Relaxed) > 0, "the spawner ran");
    assert_eq!(
        locked, 0,
        "opens refused as Locked while children were spawned"
    );
    Ok(())
}

/// M8: aliases of the mirror's directory find the same lock; a symbolic link to the mirror, a
/// hard link and a name parkline reserves are refused with `InvalidPath`, touching nothing.
#[test]
fn m8_paths_that_alias_are_one_mirror_or_refused() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Opening a mirror whose path is a symbolic link, is not a regular file, or is a regular file
    //# with more than one name (a hard link) MUST fail with `InvalidPath` and touch nothing.
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "one")?;
    let sub = dir.path().join("sub");
    fs::create_dir(&sub)?;
    let dir_link = dir.path().join("alias");
    std::os::unix::fs::symlink(dir.path(), &dir_link)?;
    for alias in [sub.join("..").join("s1.mirror"), dir_link.join("s1.mirror")] {
        let err = Queue::open(&alias)
            .map(|_| ())
            .err()
            .ok_or("an alias must be locked")?;
        assert_eq!(err.kind(), ErrorKind::Locked, "{}", alias.display());
    }
    let file_link = dir.path().join("link.mirror");
    std::os::unix::fs::symlink(&path, &file_link)?;
    let hard_link = dir.path().join("hard.mirror");
    fs::hard_link(&path, &hard_link)?;
    let before = fs::read(&path)?;
    for refused in [&file_link, &hard_link, &sub] {
        let err = Queue::open(refused)
            .map(|_| ())
            .err()
            .ok_or("must be refused")?;
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{}", refused.display());
        assert!(!refused.with_extension("mirror.lock").exists());
    }
    assert!(!dir.path().join("link.mirror.lock").exists());
    assert_eq!(fs::read(&path)?, before);
    Ok(())
}

/// M8, M5, M17: a mirror cannot be named like another mirror's temp, lock or request file, so
/// opening `s1` never removes the lines of a mirror named `s1.tmp` or `s1.ops`.
#[test]
fn m8_reserved_names_are_refused() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# A mirror name that ends in `.tmp`, `.lock` or `.ops` MUST be refused with `InvalidPath`:
    //# it is the name of another mirror's temp file (M5), lock file or request file (M17).
    let dir = tempfile::tempdir()?;
    let names = ["s1.tmp", "s1.lock", "s1.mirror.tmp", "s1.mirror.lock"];
    for name in names.into_iter().chain(["s1.ops", "s1.mirror.ops"]) {
        let err = Queue::open(dir.path().join(name))
            .map(|_| ())
            .err()
            .ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{name}");
        let err = Queue::with_storage(MemStorage::new(), name, Config::default())
            .map(|_| ())
            .err()
            .ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{name}");
    }
    assert_eq!(fs::read_dir(dir.path())?.count(), 0, "nothing created");
    Ok(())
}

/// M8: a park into a mirror that was unlinked under the open handle is not acknowledged: the
/// handle fails with `Io` and is poisoned.
#[test]
fn m8_a_park_into_an_unlinked_mirror_is_refused() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Before it acknowledges a write, the queue MUST check that the mirror's name still
    //# leads to the file it wrote (device and inode, `Storage::identity`), and otherwise fail
    //# with `Io` and poison the handle (M10).
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "one")?;
    fs::remove_file(&path)?;
    let err = queue
        .park(RequestId(2), "two")
        .map(|_| ())
        .err()
        .ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::Io);
    let err = queue
        .park(RequestId(3), "three")
        .map(|_| ())
        .err()
        .ok_or("poisoned")?;
    assert_eq!(err.kind(), ErrorKind::Poisoned);
    Ok(())
}

/// M10: open fsyncs the mirror and its directory, even when it changed nothing.
#[test]
fn m10_open_makes_what_it_read_durable() -> TestResult {
    //= spec/mirror.md#m10-fail-stop
    //= type=test
    //# `open` of an existing mirror MUST fsync the mirror and then its directory before it
    //# returns, whether or not it changed anything, so that what it read is durable before
    //# the first acknowledgement built on it (an upgrade, M14, does both
    //# through M5).
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let storage = queue.into_storage();
    let (syncs, dir_syncs) = (storage.syncs(), storage.dir_syncs());
    let queue = Queue::with_storage(storage, "m", Config::default())?;
    let storage = queue.into_storage();
    assert_eq!(storage.syncs(), syncs + 1);
    assert_eq!(storage.dir_syncs(), dir_syncs + 1);
    Ok(())
}
