//! An open that fails: what its error says (no queue exists to refuse work, and a full
//! descriptor table or disk is named), the lock file it leaves (M8), the names it refuses up
//! front (M8).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use rustix::io::Errno;

use super::*;

/// A version 2 mirror (two parked lines), as the last version 2 build wrote it.
const V2_MIRROR: &[u8] = include_bytes!("../../tests/fixtures/v2/mixed.mirror");

/// Hooks whose calls named `fail`, after the first `pass` of them, return the OS error `errno`,
/// as a full descriptor table (`EMFILE`) or disk (`ENOSPC`) makes them.
#[derive(Debug)]
struct Exhausted {
    fail: &'static str,
    pass: u32,
    errno: Errno,
}

impl Exhausted {
    fn new(fail: &'static str, errno: Errno) -> Self {
        Exhausted {
            fail,
            pass: 0,
            errno,
        }
    }

    fn hit(&mut self, what: &str) -> io::Result<()> {
        if what != self.fail {
            return Ok(());
        }
        match self.pass.checked_sub(1) {
            Some(left) => {
                self.pass = left;
                Ok(())
            }
            None => Err(io::Error::from_raw_os_error(self.errno.raw_os_error())),
        }
    }
}

impl Hooks<MemStorage> for Exhausted {
    fn append(&mut self, inner: &mut MemStorage, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.hit("append")?;
        inner.append(name, bytes)
    }
    fn sync_dir(&mut self, inner: &mut MemStorage) -> io::Result<()> {
        self.hit("sync_dir")?;
        inner.sync_dir()
    }
}

/// An open's write that fails poisons a handle nobody gets: its error says the mirror was not
/// opened, never that "the queue refuses further work" (there is no queue), and it names a full
/// descriptor table or disk, for the create of a new mirror and the upgrade of a version 2 one.
#[test]
fn m10_an_open_error_names_the_cause_and_no_refusing_queue() -> TestResult {
    let cases = [
        (
            None,
            "sync_dir",
            Errno::MFILE,
            "too many open files in the process (EMFILE)",
        ),
        (
            None,
            "append",
            Errno::NFILE,
            "too many open files in the system (ENFILE)",
        ),
        (
            Some(V2_MIRROR),
            "append",
            Errno::NOSPC,
            "no space left on the device (ENOSPC)",
        ),
        (Some(V2_MIRROR), "sync_dir", Errno::MFILE, "(EMFILE)"),
    ];
    for (before, fail, errno, named) in cases {
        let mut inner = MemStorage::new();
        if let Some(bytes) = before {
            inner.set_file("m", bytes.to_vec());
        }
        let storage = Seam::new(inner, Exhausted::new(fail, errno));
        let err = Queue::with_storage(storage, "m", Config::default())
            .map(|_| ())
            .err()
            .ok_or("the open fails")?;
        let text = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Io, "{text}");
        assert!(!text.contains("refuses further work"), "{text}");
        assert!(text.contains("the mirror was not opened"), "{text}");
        assert!(text.ends_with(named), "{text}");
        let doing = match before {
            None => "cannot create the mirror",
            Some(_) => "cannot upgrade the version 2 mirror",
        };
        assert!(text.contains(doing), "{text}");
    }
    // A write of an open queue still says the handle refuses work: that is true there.
    let hooks = Exhausted {
        pass: 1, // the create's temp file
        ..Exhausted::new("append", Errno::NOSPC)
    };
    let storage = Seam::new(MemStorage::new(), hooks);
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    let err = queue
        .park(RequestId(1), "one")
        .map(|_| ())
        .err()
        .ok_or("fails")?;
    assert!(err.to_string().contains("refuses further work"), "{err}");
    assert!(err.to_string().ends_with("(ENOSPC)"), "{err}");
    Ok(())
}

/// M8: an open that created the lock file and then failed removes it while it holds the lock,
/// where no mirror exists; a lock file it did not create, or one beside a mirror, stays.
#[test]
fn m8_a_failed_open_removes_the_lock_file_it_created() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# An open that fails after it created the lock file MUST remove that file, while it still
    //# holds the lock and only when no mirror exists.
    let (dir, path) = temp_mirror()?;
    let lock = dir.path().join("s1.mirror.lock");
    let unusable = Config {
        failures_max: 0,
        ..Config::default()
    };
    let err = Queue::open_with(&path, unusable.clone()).map(|_| ()).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidConfig));
    assert_eq!(
        names_besides_dir_lock(dir.path())?.len(),
        0,
        "no lock file left"
    );
    // Its temp name taken by a directory: the open fails beside no mirror.
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::create_dir(&tmp)?;
    let err = Queue::open(&path).map(|_| ()).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidPath));
    assert!(!lock.exists() && tmp.is_dir());
    fs::remove_dir(&tmp)?;
    // A lock file an earlier open made is not this open's to remove.
    Queue::open(&path)?.remove(true)?;
    fs::write(&lock, b"")?;
    let err = Queue::open_with(&path, unusable.clone()).map(|_| ()).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidConfig));
    assert!(lock.exists());
    // Beside a (damaged) mirror the lock file stays with it.
    fs::remove_file(&lock)?;
    fs::write(&path, b"not a mirror\n")?;
    let err = Queue::open(&path).map(|_| ()).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::Corrupt));
    assert!(lock.exists());
    // The lock was released: the next open is refused for the file, not for the lock.
    let err = Queue::open(&path).map(|_| ()).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::Corrupt));
    Ok(())
}

/// M8: a name the file system cannot hold once `.lock` or `.tmp` is added, a name that is not
/// UTF-8, and a path with no file name are refused as `InvalidPath` before anything is created
/// (they failed halfway, with `Io`, before).
#[test]
fn m8_a_name_too_long_or_not_utf8_is_refused_up_front() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# A mirror path with no file name, a file name that is not UTF-8, or one longer than 255
    //# bytes once `.ops.lock` (the longest of parkline's suffixes) is added (`NAME_MAX`) MUST be
    //# refused with `InvalidPath`, touching nothing.
    let dir = tempfile::tempdir()?;
    let too_long = dir.path().join("m".repeat(247));
    let not_utf8 = dir.path().join(OsStr::from_bytes(b"s\xff.mirror"));
    let no_name = dir.path().join("..");
    for refused in [&too_long, &not_utf8, &no_name] {
        let err = Queue::open(refused).map(|_| ()).err().ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::InvalidPath, "{err}");
        assert_eq!(err.path(), Some(refused.as_path()));
    }
    assert_eq!(fs::read_dir(dir.path())?.count(), 0, "nothing created");
    // The longest name that fits: 246 bytes, and 255 with `.ops.lock`.
    let longest = dir.path().join("m".repeat(246));
    let mut queue = Queue::open(&longest)?;
    queue.park(RequestId(1), "one")?;
    Ok(())
}
