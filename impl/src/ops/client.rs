//! The command's side of operator requests (spec/mirror.md M17): [`submit`] adds a request to
//! the request file `<name>.ops` under the file's own lock, [`prune`] drops the answered ones, and
//! [`answer`] finds a request's answer in the mirror, made durable before it is returned.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::request::*;
use crate::error::{Error, ErrorKind, Result};
use crate::io::input;
use crate::io::lock::{MirrorLock, Mode, Refused};
use crate::types::Life;

/// The request file of the mirror at `mirror`, and its lock file and temp file.
fn paths(mirror: &Path) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let Some(name) = mirror.file_name().and_then(|name| name.to_str()) else {
        return Err(
            Error::new(ErrorKind::InvalidPath, "the mirror path has no file name")
                .with_path(mirror),
        );
    };
    let ops = mirror.with_file_name(format!("{name}{SUFFIX}"));
    let lock = mirror.with_file_name(format!("{name}{SUFFIX}.lock"));
    let tmp = mirror.with_file_name(format!("{name}{SUFFIX}.tmp"));
    Ok((ops, lock, tmp))
}

/// What [`submit`] did with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// Added to the request file under this id.
    Added(OpId),
    /// The file already held a request of this id or of the same change: that one stands.
    Pending(OpId),
    /// The mirror's window already answers the request of this id and of the same change.
    Answered(OpId),
}

impl Submitted {
    /// The id of the request that stands.
    pub fn id(&self) -> &OpId {
        match self {
            Submitted::Added(id) | Submitted::Pending(id) | Submitted::Answered(id) => id,
        }
    }
}

/// How long [`submit`] waits for another command's hold of the request file's lock (a test's
/// holder waits less).
const LOCK_WAIT: Duration = if cfg!(test) {
    Duration::from_millis(200)
} else {
    Duration::from_secs(5)
};

/// Adds `request` to the request file of the mirror at `mirror` (M17), under the file's lock,
/// whole (temp file, fsync, rename, directory fsync). First it drops the requests of `window`'s
/// life that its applied window holds (`window` is the mirror's, made durable by the caller:
/// [`durable_window`]); a request of the same id and change, waiting or answered, or of the same
/// change, waiting, stands instead of a second one.
///
/// # Errors
///
/// `OpIdReused` when the id names a waiting or answered request of another change;
/// `Locked` when another command holds the file's lock for longer than a few seconds;
/// `RequestFileDamaged` for a request file that cannot be read or parsed (it is left as it is);
/// `Exhausted` when [`PENDING_MAX`] requests are waiting or the file would grow past
/// [`REQUEST_FILE_BYTES_MAX`]; `Io` when a file cannot be read or written.
pub fn submit(mirror: &Path, request: &Request, window: &Window) -> Result<Submitted> {
    if let Some(answered) = applied(&window.applied, &request.id) {
        return match answered.change == Some(request.change()) {
            true => Ok(Submitted::Answered(request.id.clone())),
            false => Err(reused(&request.id, "an answered", answered.verb)),
        };
    }
    let answered = |pending: &Request| {
        pending.life == window.life && applied(&window.applied, &pending.id).is_some()
    };
    rewrite(mirror, &answered, |requests| {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command MUST refuse (`OpIdReused`, exit 2) a request whose id names a waiting or
        //# answered request of another change.
        if let Some(pending) = requests.iter().find(|pending| pending.id == request.id) {
            return match pending.same_change(request) {
                true => Ok(Submitted::Pending(pending.id.clone())),
                false => Err(reused(&request.id, "a waiting", pending.verb)),
            };
        }
        if let Some(pending) = requests.iter().find(|pending| pending.same_change(request)) {
            return Ok(Submitted::Pending(pending.id.clone()));
        }
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command MUST NOT add a request while the file holds 64 requests the mirror has not
        //# applied,
        if requests.len() >= PENDING_MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!(
                    "{PENDING_MAX} requests are waiting for the daemon; wait for its next boundary"
                ),
            ));
        }
        requests.push(request.clone());
        Ok(Submitted::Added(request.id.clone()))
    })
}

/// The refusal of a request whose `id` names `what` request of another change (`verb`).
fn reused(id: &OpId, what: &str, verb: Verb) -> Error {
    Error::new(
        ErrorKind::OpIdReused,
        format!(
            "request id {id} names {what} {} request of other dead letters; give a new id, or \
             the same command to wait for that one",
            verb.name()
        ),
    )
}

/// Drops from the request file of the mirror at `mirror` the requests `answered` picks: ones the
/// mirror applied, whose answers the caller made durable ([`answer`]), and that name the life of
/// the mirror it read; removes the file when none is left.
///
/// # Errors
///
/// As [`submit`], but never `Exhausted`.
pub fn prune(mirror: &Path, answered: &dyn Fn(&Request) -> bool) -> Result<()> {
    rewrite(mirror, answered, |_| Ok(()))
}

/// The request file of `mirror` read under its lock, the requests `answered` picks dropped,
/// changed by `change`, and written back whole if anything changed (removed when empty).
fn rewrite<T>(
    mirror: &Path,
    answered: &dyn Fn(&Request) -> bool,
    change: impl FnOnce(&mut Vec<Request>) -> Result<T>,
) -> Result<T> {
    let (ops, lock_path, tmp) = paths(mirror)?;
    let _lock = lock_request_file(&lock_path)?;
    let io = |what: &str, e: io::Error| Error::io(what, e).with_path(&ops);
    let read =
        input::open_read(&ops).and_then(|file| input::read_bounded(&file, REQUEST_FILE_BYTES_MAX));
    let (mut requests, existed) = match read {
        Ok(bytes) => (
            requests_of(&bytes).map_err(|why| damaged(&ops, &why))?,
            true,
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), false),
        Err(e) if is_not_input(&e) => return Err(damaged(&ops, &e.to_string())),
        Err(e) => return Err(io("cannot read the request file", e)),
    };
    let before = requests.clone();
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It removes only requests that name the window's life and whose id the window holds.
    requests.retain(|pending| !answered(pending));
    let value = change(&mut requests).map_err(|e| e.with_path(&ops))?;
    if requests == before {
        return Ok(value);
    }
    if requests.is_empty() && existed {
        std::fs::remove_file(&ops).map_err(|e| io("cannot remove the request file", e))?;
        sync_dir_of(&ops).map_err(|e| io("cannot fsync the directory", e))?;
    } else {
        let bytes = encode(&requests);
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# it adds no request that would make the file longer than `REQUEST_FILE_BYTES_MAX`.
        if bytes.len() > REQUEST_FILE_BYTES_MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!(
                    "the request would make the request file longer than the \
                     {REQUEST_FILE_BYTES_MAX} bytes the daemon reads; name fewer dead letters"
                ),
            )
            .with_path(&ops));
        }
        write_whole(&ops, &tmp, &bytes).map_err(|e| io("cannot write", e))?;
    }
    Ok(value)
}

/// Whether `e` refuses a file as input: not a regular file, or longer than its bound.
fn is_not_input(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::FileTooLarge
    )
}

/// A request file a command does not rewrite: it reports it, and leaves it as it is.
fn damaged(path: &Path, why: &str) -> Error {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# and MUST NOT rewrite a file it cannot parse (it reports it as `RequestFileDamaged`, "the
    //# request file <path> is damaged", exit 1, and leaves it as it is);
    Error::new(ErrorKind::RequestFileDamaged, why.to_owned()).with_path(path)
}

/// The requests of a request file a command rewrites: a malformed entry makes the whole file
/// one it does not rewrite.
fn requests_of(bytes: &[u8]) -> std::result::Result<Vec<Request>, String> {
    parse(bytes)?
        .into_iter()
        .map(|entry| match entry {
            Entry::Request(request) => Ok(request),
            Entry::Malformed { why, .. } => Err(why),
        })
        .collect()
}

/// The request file's lock, waited for a few seconds: commands hold it only while they rewrite
/// the file.
fn lock_request_file(path: &Path) -> Result<MirrorLock> {
    let start = std::time::Instant::now();
    loop {
        match MirrorLock::acquire(path, Mode::Exclusive) {
            Ok(lock) => return Ok(lock),
            Err(Refused::Locked) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(refused) => return Err(crate::io::storage::lock_error(refused, path, "a command")),
        }
    }
}

/// Writes `bytes` as the whole of `path` through `tmp` (M5's sequence).
fn write_whole(path: &Path, tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    // A temp file left by a command that died holding the lock is no one's now.
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(tmp, path)?;
    sync_dir_of(path)
}

fn sync_dir_of(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// The mirror's answer to request `id`, read lock-free (M13): `None` while its window does not
/// hold it. An answer is made durable (the mirror and its directory fsynced) before it is
/// returned, so no answer is given that a power loss could take back.
///
/// # Errors
///
/// `Corrupt` for a damaged mirror, `Io` when it cannot be read (a path that is not a regular
/// file included: it is never opened blocking) or fsynced.
pub fn answer(mirror: &Path, id: &OpId) -> Result<Option<Applied>> {
    let decoded = read_mirror(mirror)?;
    let Some(found) = applied(&decoded.state.ops, id).cloned() else {
        return Ok(None);
    };
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It MUST fsync the mirror before it reports that answer, and before it removes the request
    //# from the request file.
    make_durable(mirror).map_err(|e| Error::io("cannot fsync the mirror", e).with_path(mirror))?;
    Ok(Some(found))
}

/// `applied`, the answer the window holds under the id `request` stands on, as the answer to
/// `request`: refused unless it answers the same change. A command's request added after a
/// first request of its id was applied (a second command with another change, whose read of the
/// window came first) is skipped by the holder, and the first one's answer is not its own.
///
/// # Errors
///
/// `OpIdReused` when `applied` answers another change.
pub fn check_answer(applied: &Applied, request: &Request) -> Result<()> {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# A command whose id the window answers for another change than its own (its request was
    //# added after the first was applied) MUST report `OpIdReused` (exit 2), never that answer.
    if applied.change == Some(request.change()) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::OpIdReused,
        format!(
            "request id {} was answered for another change (a {} of other dead letters); give a \
             new id",
            applied.id,
            applied.verb.name()
        ),
    ))
}

/// What a command reads of a mirror before it asks: its life and its applied window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The mirror's life, which the command's request names.
    pub life: Option<Life>,
    /// The requests the mirror applied, oldest first, with their answers.
    pub applied: VecDeque<Applied>,
}

/// The life and applied window of the mirror at `mirror`, made durable: what a command's request
/// names, and what it may drop from the request file.
///
/// # Errors
///
/// As [`answer`].
pub fn durable_window(mirror: &Path) -> Result<Window> {
    let decoded = read_mirror(mirror)?;
    if !decoded.state.ops.is_empty() {
        make_durable(mirror)
            .map_err(|e| Error::io("cannot fsync the mirror", e).with_path(mirror))?;
    }
    Ok(Window {
        life: decoded.state.life,
        applied: decoded.state.ops,
    })
}

/// The mirror at `path` read as input (never blocking on a FIFO) and decoded.
fn read_mirror(path: &Path) -> Result<crate::mirror::Decoded> {
    let bytes = input::read_whole(path)
        .map_err(|e| Error::io("cannot read the mirror", e).with_path(path))?;
    crate::mirror::decode_log(&bytes).map_err(|e| e.with_path(path))
}

/// fsyncs the file at `path` (read-only: a descriptor of either kind flushes the file's pages)
/// and its directory (a compaction's rename).
fn make_durable(path: &Path) -> io::Result<()> {
    input::open_read(path)?.sync_all()?;
    sync_dir_of(path)
}
