//! M8, M17, D3: files another process can write are input. A FIFO, a directory, a link or a huge
//! file at any name parkline opens fails that open at once (never blocks it), loses nothing, and
//! a request file can neither stop a queue nor reach another session or another change.

use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::shared::answered_within;
use super::*;
use crate::ops::{self, Answer, Applied, OpId, Request, Submitted, Verb, Which, Window};
use crate::{Life, Store};

/// A FIFO at `path`, as `mkfifo` makes it.
fn mkfifo(path: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, FileType, Mode, mknodat};
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).map_err(io::Error::from)
}

fn id(text: &str) -> OpId {
    OpId::new(text).unwrap_or_else(|e| panic!("{e}"))
}

fn ask(text: &str, verb: Verb, which: Which, life: Option<Life>) -> Request {
    Request {
        id: id(text),
        verb,
        which,
        life,
    }
}

/// A queue at `path` with one dead letter per line of `lines` (seqs from 1), on a clock the test
/// moves.
fn with_dead(path: &Path, lines: &[&str]) -> crate::Result<(Queue, Arc<Fixed>)> {
    let clock = fixed();
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::open_with(path, config)?.with_clock(clock.clone());
    for (n, line) in (1..).zip(lines) {
        queue.park(RequestId(n), line)?;
    }
    if let Some(batch) = queue.boundary(Budget(1 << 20))? {
        queue.settle(batch.id, &vec![Outcome::Failed; batch.items.len()])?;
    }
    assert_eq!(queue.dead_letters().len(), lines.len());
    Ok((queue, clock))
}

/// A mirror at `path` holding one parked line, closed.
fn one_parked(path: &Path) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut queue = Queue::open(path)?;
    queue.park(RequestId(1), "kept")?;
    drop(queue);
    Ok(fs::read(path)?)
}

/// M8: a FIFO at each name parkline opens (the mirror, its temp and lock files, the directory's
/// lock file, the request file with its temp and lock files) fails or passes `Queue::open` at
/// once, as that file's rule says, and the mirror keeps what it held.
#[test]
fn m8_a_fifo_at_any_file_parkline_opens_never_blocks_an_open() -> TestResult {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //= type=test
    //# Every file parkline opens that another process can write MUST be opened without blocking
    //# and without following a symbolic link, and refused unless the opened descriptor is a
    //# regular file.
    let cases: [(&str, Option<ErrorKind>); 7] = [
        ("s1.mirror", Some(ErrorKind::InvalidPath)),
        ("s1.mirror.tmp", Some(ErrorKind::InvalidPath)),
        ("s1.mirror.lock", Some(ErrorKind::Io)),
        (".parkline.lock", Some(ErrorKind::Io)),
        ("s1.mirror.ops", None),
        ("s1.mirror.ops.tmp", None),
        ("s1.mirror.ops.lock", None),
    ];
    for (name, refused) in cases {
        let (dir, path) = temp_mirror()?;
        let kept = if name == "s1.mirror" {
            Vec::new()
        } else {
            one_parked(&path)?
        };
        let fifo = dir.path().join(name);
        let _ = fs::remove_file(&fifo);
        mkfifo(&fifo)?;
        let opened = answered_within(move || {
            Queue::open(&path)
                .map(|queue| (queue.parked().len(), queue.stats().requests_unreadable))
        })
        .map_err(|e| format!("{name}: {e}"))?;
        match refused {
            Some(kind) => assert_eq!(opened.err().map(|e| e.kind()), Some(kind), "{name}"),
            None => {
                let unreadable = u64::from(name == "s1.mirror.ops");
                assert_eq!(opened?, (1, unreadable), "{name}");
            }
        }
        if !kept.is_empty() {
            assert_eq!(fs::read(dir.path().join("s1.mirror"))?, kept, "{name}");
        }
        assert!(
            fs::symlink_metadata(&fifo)?.file_type().is_fifo(),
            "{name}: left"
        );
    }
    Ok(())
}

/// M8, M16: a FIFO beside one session of a store fails that session's open alone (at its request
/// file it only counts unreadable; at a lock file, which a store's session does not take, it is
/// not looked at); the others open. A FIFO at the directory's lock file fails the store's open at
/// once.
#[test]
fn m16_a_fifo_beside_one_session_never_stops_a_store_start_up() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    for n in 1..=5 {
        store
            .session(&format!("s{n}"))?
            .park(RequestId(n), "kept")?;
    }
    drop(store);
    for name in [
        "s2.mirror.ops",
        "s3.mirror.lock",
        "s4.mirror.tmp",
        "s6.mirror",
    ] {
        let fifo = dir.path().join(name);
        let _ = fs::remove_file(&fifo);
        mkfifo(&fifo)?;
    }
    let path = dir.path().to_owned();
    let opened = answered_within(move || -> crate::Result<Vec<(String, Option<ErrorKind>)>> {
        let store = Store::open(&path)?;
        let all = store.open_all()?;
        Ok(all
            .into_iter()
            .map(|(name, queue)| (name, queue.err().map(|e| e.kind())))
            .collect())
    })??;
    let expected = [
        ("s1", None),
        ("s2", None),
        // A store's session takes no lock file of its own: the store's lock covers it (M16).
        ("s3", None),
        ("s4", Some(ErrorKind::InvalidPath)),
        ("s5", None),
    ]
    .map(|(name, kind)| (name.to_owned(), kind));
    assert_eq!(opened, expected);
    // A FIFO named like a mirror (`s6.mirror`) is no session: neither the start-up nor the
    // lock-free listing opens it.
    let path = dir.path().to_owned();
    let listed = answered_within(move || -> crate::Result<Vec<bool>> {
        let store = Store::open(&path)?;
        Ok(store
            .list()?
            .into_iter()
            .map(|(_, info)| info.is_ok())
            .collect())
    })??;
    assert_eq!(listed, [true; 5]);
    let lock = dir.path().join(".parkline.lock");
    fs::remove_file(&lock)?;
    mkfifo(&lock)?;
    let path = dir.path().to_owned();
    let store = answered_within(move || Store::open(&path).map(|_| ()))?;
    assert_eq!(store.err().map(|e| e.kind()), Some(ErrorKind::Io));
    Ok(())
}

/// M17: a FIFO put at the request file beside a live queue never blocks a boundary or poisons
/// the queue: it is counted unreadable, and a request file written afterwards is applied.
#[test]
fn m17_a_fifo_request_file_never_blocks_a_boundary() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (queue, clock) = with_dead(&path, &["dead"])?;
    let ops_path = path.with_file_name("s1.mirror.ops");
    mkfifo(&ops_path)?;
    let (mut queue, batch) = answered_within(move || {
        let mut queue = queue;
        let batch = queue.boundary(Budget(100)).map(|batch| batch.is_none());
        (queue, batch)
    })?;
    assert!(batch?, "nothing parked");
    assert_eq!(queue.stats().requests_unreadable, 1);
    assert!(!queue.is_poisoned());
    // The command refuses the FIFO as a damaged request file and leaves it.
    let life = ops::durable_window(&path)?.life;
    let redrive = ask("r", Verb::Redrive, Which::All, life);
    let path_again = path.clone();
    let refused = answered_within(move || {
        ops::submit(&path_again, &redrive, &Window::default()).map_err(|e| e.kind())
    })?;
    assert_eq!(refused, Err(ErrorKind::RequestFileDamaged));
    assert!(fs::symlink_metadata(&ops_path)?.file_type().is_fifo());
    fs::remove_file(&ops_path)?;
    let redrive = ask("r", Verb::Redrive, Which::All, life);
    ops::submit(&path, &redrive, &Window::default())?;
    clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
    assert_eq!(queue.boundary(Budget(100))?.map(|b| b.items.len()), Some(1));
    Ok(())
}

/// M17: a FIFO at the request file's lock or temp file, or at the mirror, never blocks a command:
/// the lock is refused, the temp file is replaced, the mirror cannot be read.
#[test]
fn m17_a_fifo_beside_a_command_never_blocks_it() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (queue, _clock) = with_dead(&path, &["dead"])?;
    let life = ops::durable_window(&path)?.life;
    let lock = path.with_file_name("s1.mirror.ops.lock");
    mkfifo(&lock)?;
    let asked = ask("a", Verb::Discard, Which::All, life);
    let (path_1, asked_1) = (path.clone(), asked.clone());
    let locked = answered_within(move || {
        ops::submit(&path_1, &asked_1, &Window::default()).map_err(|e| e.kind())
    })?;
    assert_eq!(locked, Err(ErrorKind::Io));
    fs::remove_file(&lock)?;
    mkfifo(&path.with_file_name("s1.mirror.ops.tmp"))?;
    assert_eq!(
        ops::submit(&path, &asked, &Window::default())?,
        Submitted::Added(id("a"))
    );
    drop(queue);
    let fifo_mirror = path.with_file_name("fifo.mirror");
    mkfifo(&fifo_mirror)?;
    let read = answered_within(move || ops::answer(&fifo_mirror, &id("a")).map_err(|e| e.kind()))?;
    assert_eq!(read, Err(ErrorKind::Io));
    Ok(())
}

/// M17: a request file longer than its bound (a sparse 4 GiB file, or a link to `/dev/zero`)
/// is unreadable: one bounded read, nothing applied, the queue goes on; a command leaves it.
#[test]
fn m17_a_request_file_past_its_bound_is_unreadable() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A request file longer than `REQUEST_FILE_BYTES_MAX` (256 KiB) or holding more than 64
    //# requests MUST be treated as one that cannot be read: none of it is applied.
    let (_dir, path) = temp_mirror()?;
    let (queue, clock) = with_dead(&path, &["dead"])?;
    drop(queue);
    let ops_path = path.with_file_name("s1.mirror.ops");
    let huge = fs::File::create(&ops_path)?;
    huge.set_len(4 << 30)?;
    let mut queue = Queue::open(&path)?.with_clock(clock.clone());
    assert_eq!(queue.stats().requests_unreadable, 1);
    assert_eq!(queue.dead_letters().len(), 1);
    let life = queue.state().life;
    let asked = ask("a", Verb::Discard, Which::All, life);
    let err = ops::submit(&path, &asked, &Window::default())
        .err()
        .ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::RequestFileDamaged);
    assert_eq!(fs::metadata(&ops_path)?.len(), 4 << 30, "left as it is");
    fs::remove_file(&ops_path)?;
    std::os::unix::fs::symlink("/dev/zero", &ops_path)?;
    clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
    assert!(queue.boundary(Budget(100))?.is_none());
    assert_eq!(queue.stats().requests_unreadable, 2);
    // Just within the bound, a file of padding and one request is read.
    fs::remove_file(&ops_path)?;
    let text = String::from_utf8(ops::encode(&[asked]))?;
    let padded = text.clone() + &" ".repeat(ops::REQUEST_FILE_BYTES_MAX - text.len());
    fs::write(&ops_path, padded)?;
    clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
    queue.boundary(Budget(100))?;
    assert!(queue.dead_letters().is_empty(), "applied");
    Ok(())
}

/// M17: a file of 65 requests is unreadable, so nothing in it is applied (its first request
/// never twice); 64 are each applied once, however many boundaries read the file again.
#[test]
fn m17_more_than_64_requests_are_unreadable_and_none_is_applied_twice() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, &["dead"])?;
    let life = queue.state().life;
    let requests: Vec<Request> = (0..65)
        .map(|n| {
            ask(
                &format!("q{n}"),
                Verb::Redrive,
                Which::Seqs(vec![Seq(99)]),
                life,
            )
        })
        .collect();
    let ops_path = path.with_file_name("s1.mirror.ops");
    fs::write(&ops_path, ops::encode(&requests))?;
    for _ in 0..3 {
        clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
        queue.boundary(Budget(100))?;
    }
    assert_eq!(queue.stats().requests_applied, 0);
    assert_eq!(queue.stats().requests_unreadable, 3);
    fs::write(&ops_path, ops::encode(&requests[1..]))?;
    for _ in 0..3 {
        clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
        queue.boundary(Budget(100))?;
    }
    assert_eq!(queue.stats().requests_applied, 64);
    drop(queue);
    let queue = Queue::open(&path)?;
    assert_eq!(queue.stats().requests_applied, 0, "each applied once");
    Ok(())
}

/// M17: a request that would push out of the window a request the file still names waits (it
/// would be applied again at the next read); once a command drops the old one, it is applied.
#[test]
fn m17_a_request_the_window_would_forget_holds_back_the_rest() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# The holder MUST NOT apply a request that would make the window forget a request the file
    //# still names; it applies the rest once a command has dropped that one.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, &["dead"])?;
    let life = queue.state().life;
    let nothing = |n: usize| {
        ask(
            &format!("q{n}"),
            Verb::Redrive,
            Which::Seqs(vec![Seq(99)]),
            life,
        )
    };
    let ops_path = path.with_file_name("s1.mirror.ops");
    fs::write(
        &ops_path,
        ops::encode(&(0..64).map(nothing).collect::<Vec<_>>()),
    )?;
    queue.boundary(Budget(100))?;
    assert_eq!(queue.applied_requests().len(), ops::APPLIED_MEMORY);
    let late = ask("late", Verb::Discard, Which::All, life);
    fs::write(&ops_path, ops::encode(&[nothing(0), late]))?;
    for _ in 0..2 {
        clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
        queue.boundary(Budget(100))?;
    }
    assert_eq!(queue.stats().requests_applied, 64, "q0 kept, late waits");
    assert_eq!(queue.dead_letters().len(), 1);
    ops::prune(&path, &|request: &Request| request.id.as_str() == "q0")?;
    clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
    queue.boundary(Budget(100))?;
    assert_eq!(queue.stats().requests_applied, 65);
    assert!(queue.dead_letters().is_empty());
    Ok(())
}

/// M17: a command whose steps straddle a session's end (it read the mirror, the session was
/// removed and made again, then it wrote the request file) changes nothing in the new session:
/// the request names the old life and is refused. So is a request that names no life.
#[test]
fn m17_a_request_for_an_ended_session_is_refused_by_the_next() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A request that names another life than the mirror's (or a life, or none, where the
    //# mirror names none, or one) MUST be refused (answered `refused`, nothing changed): it
    //# was meant for another session of the name.
    for verb in [Verb::Discard, Verb::Redrive] {
        let (_dir, path) = temp_mirror()?;
        let (mut first, _clock) = with_dead(&path, &["the first life's line"])?;
        let old = ops::durable_window(&path)?;
        first.remove(true)?;
        let (mut next, _clock) = with_dead(&path, &["the next life's line"])?;
        assert_ne!(next.state().life, old.life, "a new life");
        let stale = ask("op-1", verb, Which::Seqs(vec![Seq(1)]), old.life);
        let unnamed = ask("op-2", verb, Which::All, None);
        ops::submit(&path, &stale, &old)?;
        ops::submit(&path, &unnamed, &old)?;
        assert!(next.boundary(Budget(100))?.is_none(), "nothing redriven");
        let stats = next.stats();
        assert_eq!((stats.requests_applied, stats.requests_unreadable), (2, 0));
        assert_eq!(next.dead_letters().len(), 1);
        assert_eq!(next.dead_letters()[0].line.as_str(), "the next life's line");
        for request in ["op-1", "op-2"] {
            let answer = ops::answer(&path, &id(request))?.ok_or("answered")?.answer;
            let Answer::Refused(why) = answer else {
                panic!("{request}: {answer:?}");
            };
            assert!(why.starts_with("another session"), "{why}");
        }
    }
    Ok(())
}

/// M17: an id names one change: the same id for another verb or other seqs, waiting or
/// answered, is refused at submit and nothing is written; the same change again is adopted.
#[test]
fn m17_an_id_names_one_change() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A command MUST refuse (`OpIdReused`, exit 2) a request whose id names a waiting or
    //# answered request of another change.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, _clock) = with_dead(&path, &["one", "two"])?;
    let life = queue.state().life;
    let discard_1 = ask("op-a", Verb::Discard, Which::Seqs(vec![Seq(1)]), life);
    let redrive_2 = ask("op-a", Verb::Redrive, Which::Seqs(vec![Seq(2)]), life);
    let discard_2 = ask("op-a", Verb::Discard, Which::Seqs(vec![Seq(2)]), life);
    let none = Window {
        life,
        ..Window::default()
    };
    assert_eq!(
        ops::submit(&path, &discard_1, &none)?,
        Submitted::Added(id("op-a"))
    );
    let ops_path = path.with_file_name("s1.mirror.ops");
    let before = fs::read(&ops_path)?;
    for other in [&redrive_2, &discard_2] {
        let err = ops::submit(&path, other, &none).err().ok_or("refused")?;
        assert_eq!(err.kind(), ErrorKind::OpIdReused);
        assert!(err.to_string().contains("op-a"), "{err}");
        assert_eq!(fs::read(&ops_path)?, before, "nothing written");
    }
    assert_eq!(
        ops::submit(&path, &discard_1, &none)?,
        Submitted::Pending(id("op-a"))
    );
    queue.boundary(Budget(100))?;
    let window = ops::durable_window(&path)?;
    let answered: &Applied = ops::applied(&window.applied, &id("op-a")).ok_or("applied")?;
    assert_eq!(answered.change, Some(discard_1.change()));
    let err = ops::submit(&path, &redrive_2, &window)
        .err()
        .ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::OpIdReused);
    assert_eq!(
        ops::submit(&path, &discard_1, &window)?,
        Submitted::Answered(id("op-a"))
    );
    assert_eq!(queue.dead_letters().len(), 1, "seq 2 still dead");
    Ok(())
}

/// D3: the remembered window names a line by 64 bits: a retry of a delivered request with
/// another line of the same CRC-32 is a conflict, not `Delivered` (which would drop it).
#[test]
fn d3_a_line_of_the_same_crc_32_is_a_conflict() -> TestResult {
    //= spec/delivery.md#d3-items-verbatim
    //= type=test
    //# A park for a request the remembered window holds MUST write nothing: with the same line
    //# (the same CRC-64) it MUST answer how that line ended (delivered, with its seq and batch, or
    //# discarded, with its seq), and with another line it MUST fail with `RequestConflict`.
    // Two lines of one CRC-32 (0x0ce01358), found by a birthday search.
    let delivered = "[delegation r-7 answered turn t-29685295] outcome: ok";
    let forged = "[delegation r-7 answered turn t-32060020] outcome: ok";
    assert_eq!(
        crc32fast::hash(delivered.as_bytes()),
        crc32fast::hash(forged.as_bytes())
    );
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(7), delivered)?;
    let batch = queue.boundary(Budget(1 << 10))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Delivered])?;
    assert!(matches!(
        queue.park(RequestId(7), delivered)?,
        Parked::Delivered { .. }
    ));
    let err = queue.park(RequestId(7), forged).err().ok_or("a conflict")?;
    assert_eq!(err.kind(), ErrorKind::RequestConflict);
    Ok(())
}

/// M17 with `MemStorage`: a name that is not a regular file (`MemStorage::set_special`) is read
/// as a real directory reads a FIFO: the request file is unreadable and the queue goes on.
#[test]
fn m17_a_special_request_file_in_memory_is_unreadable() -> TestResult {
    let created = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let mut storage = created.into_storage();
    storage.set_special("m.ops");
    let mut queue = Queue::with_storage(storage, "m", Config::default())?;
    assert_eq!(queue.stats().requests_unreadable, 1);
    queue.park(RequestId(1), "one")?;
    assert_eq!(queue.boundary(Budget(100))?.map(|b| b.items.len()), Some(1));
    Ok(())
}

/// M17: a mirror is created with a life, and every compaction and open keeps it; two mirrors get
/// two lives.
#[test]
fn m17_a_mirror_keeps_its_life_through_compactions_and_opens() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# **A request names its session's life.** A mirror MUST be created with a fresh life
    //# (`Life::fresh`: 64 random bits), written in its header (M2) and kept by every
    //# compaction.
    let (_dir, path) = temp_mirror()?;
    let config = Config {
        rest_slack_bytes: 1,
        ..Config::default()
    };
    let mut queue = Queue::open_with(&path, config.clone())?;
    let life = queue.state().life.ok_or("a life at creation")?;
    let header = String::from_utf8(fs::read(&path)?)?;
    assert!(header.contains(&format!(r#""life":"{life}""#)), "{header}");
    queue.park(RequestId(1), "one")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    queue.settle(batch.id, &[Outcome::Delivered])?;
    queue.idle()?;
    assert!(queue.stats().compactions > 0, "an idle call compacted");
    drop(queue);
    let reopened = Queue::open_with(&path, config)?;
    assert_eq!(reopened.state().life, Some(life));
    let (_other_dir, other) = temp_mirror()?;
    assert_ne!(Queue::open(&other)?.state().life, Some(life));
    Ok(())
}

/// M17: a command adds no request that would make the request file longer than the queue
/// reads: one naming 50,000 seqs is refused (`Exhausted`), and nothing is written.
#[test]
fn m17_a_command_never_writes_a_request_file_past_its_bound() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# it adds no request that would make the file longer than `REQUEST_FILE_BYTES_MAX`.
    let (_dir, path) = temp_mirror()?;
    let (_queue, _clock) = with_dead(&path, &["dead"])?;
    let life = ops::durable_window(&path)?.life;
    let seqs = (1..=50_000).map(Seq).collect();
    let many = ask("many", Verb::Discard, Which::Seqs(seqs), life);
    let err = ops::submit(&path, &many, &Window::default())
        .err()
        .ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::Exhausted);
    assert!(!path.with_file_name("s1.mirror.ops").exists());
    Ok(())
}

/// M17: a command drops from the request file only requests of the life it read: a request
/// of the same id for the next life of the session (added after the end) stays, and is applied.
#[test]
fn m17_a_command_drops_only_requests_of_the_life_it_read() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# It removes only requests that name the window's life and whose id the window holds.
    let (_dir, path) = temp_mirror()?;
    let (mut first, _clock) = with_dead(&path, &["first"])?;
    let life = first.state().life;
    ops::submit(
        &path,
        &ask("r2", Verb::Discard, Which::All, life),
        &Window::default(),
    )?;
    first.boundary(Budget(100))?;
    let old = ops::durable_window(&path)?;
    assert!(ops::applied(&old.applied, &id("r2")).is_some());
    first.remove(true)?;
    let (mut next, _clock) = with_dead(&path, &["next"])?;
    let next_life = next.state().life;
    let again = ask("r2", Verb::Discard, Which::All, next_life);
    ops::submit(&path, &again, &ops::durable_window(&path)?)?;
    // A command that read the first life's window rewrites the file: r2 of the next life stays.
    ops::submit(&path, &ask("r3", Verb::Redrive, Which::All, life), &old)?;
    next.boundary(Budget(100))?;
    assert!(
        next.dead_letters().is_empty(),
        "r2 of the next life applied"
    );
    Ok(())
}

/// M17: a second command under an id, for another change, whose request was added after the
/// first request of the id was applied, is skipped by the holder; the answer it then finds is
/// the first one's, and it is refused as `OpIdReused`, never reported as its own.
#[test]
fn m17_an_answer_for_another_change_is_refused() -> TestResult {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //= type=test
    //# A command whose id the window answers for another change than its own (its request was
    //# added after the first was applied) MUST report `OpIdReused` (exit 2), never that answer.
    let (_dir, path) = temp_mirror()?;
    let (mut queue, clock) = with_dead(&path, &["one", "two"])?;
    let life = queue.state().life;
    let first = ask("op-a", Verb::Discard, Which::Seqs(vec![Seq(1)]), life);
    let second = ask("op-a", Verb::Redrive, Which::Seqs(vec![Seq(2)]), life);
    let before = ops::durable_window(&path)?;
    ops::submit(&path, &first, &before)?;
    queue.boundary(Budget(100))?;
    // Another command drops the applied op-a; then the second, whose window read came before the
    // application, adds its own op-a.
    ops::prune(&path, &|request: &Request| request.id == first.id)?;
    assert_eq!(
        ops::submit(&path, &second, &before)?,
        Submitted::Added(id("op-a"))
    );
    clock.0.fetch_add(ops::REREAD_MS + 1, Ordering::SeqCst);
    queue.boundary(Budget(100))?;
    assert_eq!(queue.dead_letters().len(), 1, "the second op-a is skipped");
    let answer = ops::answer(&path, &id("op-a"))?.ok_or("answered")?;
    assert!(ops::check_answer(&answer, &first).is_ok());
    let err = ops::check_answer(&answer, &second).err().ok_or("refused")?;
    assert_eq!(err.kind(), ErrorKind::OpIdReused);
    Ok(())
}
