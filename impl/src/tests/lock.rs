//! One handle per mirror and private files (M8, M9): the exclusive lock and the file modes.

use super::*;

/// M8: a second handle on the same mirror gets Locked, naming the lock file; after the first is
/// dropped the mirror opens again. Other mirrors in the same directory are independent.
#[test]
fn second_open_is_locked() -> TestResult {
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
    let (dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "secret")?;
    let mode = |p: &Path| fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&path)?, 0o600);
    assert_eq!(mode(&dir.path().join("s1.mirror.lock"))?, 0o600);
    Ok(())
}
