//! The queue's public surface as the daemon uses it: what crosses threads, and what the
//! accessors report.

use super::*;

/// The async daemon moves a queue to a blocking thread (`spawn_blocking`) and shares it behind a
/// mutex: the queue and its error must be `Send`, and the error `Sync` too.
#[test]
fn queue_and_error_can_cross_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Queue>();
    send::<Queue<MemStorage>>();
    send_sync::<crate::Error>();
    send_sync::<Batch>();
}

/// The accessors report the queue's own config, path and health. Kills
/// `Queue::config -> Default`, `Queue::path -> Default` and `Queue::is_poisoned -> true`
/// (otherwise only the doc tests, which the mutants run skips, catch them).
#[test]
fn accessors_report_the_queue() -> TestResult {
    let config = Config {
        failures_max: 7,
        line_bytes_max: 99,
        ..Config::default()
    };
    let queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    assert_eq!(queue.config(), &config);
    assert_eq!(queue.path(), PathBuf::from("m"));
    assert!(!queue.is_poisoned());
    let (_dir, path) = temp_mirror()?;
    let queue = Queue::open(&path)?;
    assert_eq!(queue.path(), path);
    assert!(!queue.is_poisoned());
    Ok(())
}

/// An I/O failure keeps the `io::Error` it came from as its `source()`, so a daemon that walks
/// the chain (`anyhow`, `tracing`) sees the OS error; an error without one has no source. Kills
/// `Error::source -> None` (mutants, 2026-12-03).
#[test]
fn an_io_error_is_the_source_of_the_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    let err = Queue::open(dir.path().join("no such directory").join("s1.mirror"))
        .expect_err("the directory does not exist");
    let source = std::error::Error::source(&err).ok_or("an I/O error has a source")?;
    let io = source
        .downcast_ref::<io::Error>()
        .ok_or("the source is the io::Error")?;
    assert_eq!(io.kind(), io::ErrorKind::NotFound, "{err}");
    let err = crate::Error::new(ErrorKind::Exhausted, "no seq left");
    assert!(std::error::Error::source(&err).is_none());
    Ok(())
}

/// The I/O error is printed once by a report that walks the chain: it is the `source`, and the
/// error's own text does not repeat it.
#[test]
fn the_source_is_printed_once_in_a_chain() -> TestResult {
    let dir = tempfile::tempdir()?;
    let err = Queue::open(dir.path().join("no such directory").join("s1.mirror"))
        .expect_err("the directory does not exist");
    let source = std::error::Error::source(&err).ok_or("an I/O error has a source")?;
    let mut chain = err.to_string();
    chain.push_str(": ");
    chain.push_str(&source.to_string());
    assert_eq!(chain.matches(&source.to_string()).count(), 1, "{chain}");
    assert!(!err.to_string().contains(&source.to_string()), "{err}");
    Ok(())
}

/// A `Result` of a small value stays two words: the error's fields are boxed.
#[test]
fn a_result_of_a_seq_is_two_words() {
    assert!(size_of::<crate::Result<Seq>>() <= 16);
    assert_eq!(size_of::<crate::Error>(), 8);
}

/// `{:?}` (what `fn main() -> Result<(), parkline::Error>` prints) reads: the kind, the text,
/// and each cause on a `caused by:` line; `{:#?}` keeps the fields for a debugger's eye.
#[test]
fn error_debug_prints_the_kind_the_text_and_each_cause() -> TestResult {
    let dir = tempfile::tempdir()?;
    let err = Queue::open(dir.path().join("no such directory").join("s1.mirror"))
        .expect_err("the directory does not exist");
    let source = std::error::Error::source(&err).ok_or("an I/O error has a source")?;
    assert_eq!(
        format!("{err:?}"),
        format!("Io: {err}\ncaused by: {source}")
    );
    assert!(format!("{err:#?}").contains("kind: Io"), "{err:#?}");
    let path = dir.path().join("s1.mirror");
    let _held = Queue::open(&path)?;
    let err = Queue::open(&path).expect_err("locked");
    assert_eq!(format!("{err:?}"), format!("Locked: {err}"));
    Ok(())
}

/// A full descriptor table or disk is named in the error's own text, errno and all, so that a
/// log that keeps only `Display` still says what to fix; other causes stay in `source` alone.
#[test]
fn an_exhausted_resource_is_named_in_display() {
    use rustix::io::Errno;
    let named = [
        (Errno::MFILE, "too many open files in the process (EMFILE)"),
        (Errno::NFILE, "too many open files in the system (ENFILE)"),
        (Errno::NOSPC, "no space left on the device (ENOSPC)"),
        (Errno::DQUOT, "disk quota exceeded (EDQUOT)"),
    ];
    for (errno, name) in named {
        let err = crate::Error::io(
            "cannot write",
            io::Error::from_raw_os_error(errno.raw_os_error()),
        );
        assert_eq!(err.to_string(), format!("i/o error: cannot write: {name}"));
    }
    let err = crate::Error::io(
        "cannot write",
        io::Error::from(io::ErrorKind::PermissionDenied),
    );
    assert_eq!(err.to_string(), "i/o error: cannot write");
}

/// M10: an open of an existing mirror fsyncs the file and its directory, and `Stats` counts
/// both (they ran before the handle's counters existed, and were not counted).
#[test]
fn m10_stats_count_the_fsyncs_of_an_open() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    queue.park(RequestId(1), "one")?;
    drop(queue);
    let stats = Queue::open(&path)?.stats();
    assert_eq!((stats.fsyncs, stats.dir_fsyncs, stats.appends), (1, 1, 0));
    let mut storage = MemStorage::new();
    storage.set_file("m", V2_BYTES.to_vec());
    let stats = Queue::with_storage(storage, "m", Config::default())?.stats();
    // The upgrade of a version 2 mirror: its temp file's fsync and the rename's directory fsync.
    assert_eq!((stats.fsyncs, stats.dir_fsyncs), (1, 1));
    // A complete snapshot beside no mirror (M5): the promotion's directory fsync, then the
    // open's own two.
    let mut queue = Queue::with_storage(MemStorage::new(), "x", Config::default())?;
    queue.park(RequestId(1), "one")?;
    let mut storage = MemStorage::new();
    storage.set_file("m.tmp", mirror::encode(queue.state()));
    let stats = Queue::with_storage(storage, "m", Config::default())?.stats();
    assert_eq!((stats.fsyncs, stats.dir_fsyncs), (1, 2));
    Ok(())
}

const V2_BYTES: &[u8] = include_bytes!("../../tests/fixtures/v2/mixed.mirror");
