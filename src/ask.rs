//! `parkline redrive` and `parkline discard` on a session whose lock the daemon holds
//! (spec/mirror.md M17): the change goes to the daemon as a request in the session's request
//! file, and the answer comes back in the mirror's window of applied requests.
//!
//! The command adds its request (or finds the same one already waiting), then reads the mirror
//! lock-free until the window holds the request's id or `--wait` runs out. An answer is made
//! durable (the mirror fsynced) before it is printed; then the request leaves the file. Exit
//! status ([`crate::status`]): 0 applied by the daemon, 8 refused by it, 7 still queued when
//! `--wait` ran out (the daemon applies it at the session's next boundary or open), 1 a damaged
//! mirror or request file, 2 a seq named twice or an id that names another change, 3 a file
//! that cannot be read or written.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use parkline::ErrorKind;
use parkline::ops::{self, Answer, Applied, OpId, Request};

use crate::status;

/// How often the command reads the mirror while it waits for its answer.
const POLL: Duration = Duration::from_millis(20);

/// How the command asks the daemon: the id its request carries, and how long it waits.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The request's id: the operator's (`--id`, to wait again for an earlier request), or a
    /// fresh one.
    pub id: Option<OpId>,
    /// How long to wait for the daemon's answer (`--wait`).
    pub wait: Duration,
}

/// Asks the daemon holding the mirror at `path` for `verb` on `which`; returns the exit status.
pub fn ask_daemon(
    path: &Path,
    verb: ops::Verb,
    which: ops::Which,
    ask: &Ask,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let name = verb.name();
    if let ops::Which::Seqs(seqs) = &which
        && seqs.windows(2).any(|pair| pair[0] == pair[1])
    {
        let _ = writeln!(
            err,
            "parkline {name}: a seq is named twice; nothing was asked"
        );
        return status::USAGE;
    }
    let request = Request {
        id: ask.id.clone().unwrap_or_else(OpId::fresh),
        verb,
        which,
        life: None,
    };
    let (request, id) = match submitted(path, request, err) {
        Ok(submitted) => submitted,
        Err(status) => return status,
    };
    let deadline = Instant::now() + ask.wait;
    loop {
        match ops::answer(path, &id) {
            Ok(Some(applied)) => match ops::check_answer(&applied, &request) {
                Ok(()) => return answered(path, &applied, request.life, out, err),
                Err(e) => return failed(name, &e, err),
            },
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => return queued(name, &id, out),
            Err(e) => return failed(name, &e, err),
        }
    }
}

/// `request` as submitted (naming the mirror's life) and the id of the request that stands for
/// it: its own, or that of the same change already waiting; or the exit status of a failure,
/// said on `err`.
fn submitted(path: &Path, request: Request, err: &mut dyn Write) -> Result<(Request, OpId), u8> {
    let name = request.verb.name();
    // The window, made durable, says which requests the file may drop (M17), and the life the
    // request names, so that a session of the same name made after this read refuses it.
    let window = ops::durable_window(path).map_err(|e| failed(name, &e, err))?;
    let request = Request {
        life: window.life,
        ..request
    };
    match ops::submit(path, &request, &window) {
        Ok(submitted) => {
            let id = submitted.id().clone();
            Ok((request, id))
        }
        Err(e) if e.kind() == ErrorKind::Exhausted => {
            let _ = writeln!(err, "parkline {name}: {e}; nothing was asked");
            Err(status::REFUSED)
        }
        Err(e) => Err(failed(name, &e, err)),
    }
}

/// The daemon's answer, durable: printed, and the request (of `life`) dropped from the file.
fn answered(
    path: &Path,
    applied: &Applied,
    life: Option<parkline::Life>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let name = applied.verb.name();
    let is_this = |request: &Request| request.id == applied.id && request.life == life;
    if let Err(e) = ops::prune(path, &is_this) {
        // The answer stands; the request stays in the file until a later command drops it.
        let _ = writeln!(err, "parkline {name}: the answer stands, but {e}");
    }
    let done = match applied.verb {
        ops::Verb::Redrive => "redrove",
        ops::Verb::Discard => "discarded",
    };
    match &applied.answer {
        Answer::Moved(moved) => {
            let text = format!(
                "the daemon {done} {moved} dead letters (request {})\n",
                applied.id
            );
            if out.write_all(text.as_bytes()).is_err() {
                return status::IO;
            }
            status::APPLIED
        }
        Answer::Refused(why) => {
            let _ = writeln!(
                err,
                "parkline {name}: the daemon refused request {}: {why}; nothing was changed",
                applied.id
            );
            status::REFUSED
        }
    }
}

/// `--wait` ran out: the request waits in the file for the daemon.
fn queued(name: &str, id: &OpId, out: &mut dyn Write) -> u8 {
    let text = format!(
        "queued request {id}: the daemon holds the session and applies it at the session's next \
         boundary (or its next open); `parkline {name} --id {id} --wait 30s` waits for the \
         answer\n"
    );
    if out.write_all(text.as_bytes()).is_err() {
        return status::IO;
    }
    status::QUEUED
}

/// A failure of the request's path, said on `err`, as its exit status.
fn failed(name: &str, e: &parkline::Error, err: &mut dyn Write) -> u8 {
    if e.kind() == ErrorKind::RequestFileDamaged {
        let file = e
            .path()
            .map_or_else(String::new, |path| format!(" {}", path.display()));
        let _ = writeln!(
            err,
            "parkline {name}: the request file{file} is damaged: {}; it was left as it is, \
             nothing was asked",
            e.context()
        );
        return status::FINDING;
    }
    let _ = writeln!(err, "parkline {name}: {e}");
    match e.kind() {
        ErrorKind::OpIdReused => {
            let _ = writeln!(err, "nothing was asked");
            status::USAGE
        }
        ErrorKind::Corrupt => {
            let _ = writeln!(err, "the file is damaged and was left as it is");
            status::FINDING
        }
        ErrorKind::Locked => {
            let _ = writeln!(err, "another parkline holds the request file; try again");
            status::LOCKED
        }
        _ => status::IO,
    }
}
