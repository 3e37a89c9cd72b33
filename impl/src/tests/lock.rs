//! One handle per mirror and private files (M8, M9): the exclusive lock and the file modes.

use super::*;

/// M8: a second handle on the same mirror gets Locked, naming the lock file; after the first is
/// dropped the mirror opens again. Other mirrors in the same directory are independent.
#[test]
fn second_open_is_locked() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Opening a mirror MUST take an exclusive lock on the sibling file `<name>.lock` (the standard
    //# library's `File::try_lock`, an advisory `flock` on Linux), held for the life of the handle.
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
