//! `parkline redrive <mirror> [--seq N ...] [--dry-run]`: move dead letters back to the parked
//! list (spec/delivery.md D21), for an operator who fixed what made them fail; and
//! `parkline discard <mirror> (--seq N ... | --all) [--dry-run]`: remove dead letters from the
//! mirror for good (D8), for an operator who has read them.
//!
//! It takes the mirror's lock as the daemon does (spec/mirror.md M8), so it never writes beside a
//! live queue: while the daemon holds the lock it refuses and says so. It then opens the queue
//! (`parkline::Queue::open`, which also upgrades a version 1 mirror, M14) and calls
//! `Queue::redrive` or `Queue::redrive_all`: one record, one fsync. It never creates a mirror: a
//! path with no mirror is an error. `--dry-run` reads and decodes the mirror as `inspect` does,
//! without the lock, and prints what would move, writing nothing at all (not even the lock file).
//!
//! Exit status ([`crate::status`]): 0 applied (also when there was nothing to move), 1 the mirror
//! is damaged, 2 usage (clap's, or a seq that is not a dead letter), 3 a file cannot be read or
//! written, 5 the lock is held, 6 no mirror exists at the path.

use std::io::Write;
use std::process::ExitCode;

use parkline::mirror;
use parkline::{Config, ErrorKind, FsStorage, Item, Queue, Seq, Storage};

use crate::status;

/// The arguments of `parkline redrive`.
#[derive(Clone, Debug, clap::Parser)]
pub struct RedriveArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// The dead letter to move back (repeat for several); without it, every dead letter
    #[arg(long = "seq", value_name = "N")]
    pub seqs: Vec<u64>,
    /// Print what would move and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// The arguments of `parkline discard`.
#[derive(Clone, Debug, clap::Parser)]
// One of the two is required: a group, so the usage error names both, not `--seq` alone.
#[command(group(clap::ArgGroup::new("which").required(true).args(["seqs", "all"])))]
pub struct DiscardArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// The dead letter to discard (repeat for several)
    #[arg(long = "seq", value_name = "N")]
    pub seqs: Vec<u64>,
    /// Discard every dead letter
    #[arg(long, conflicts_with = "seqs")]
    pub all: bool,
    /// Print what would be discarded and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// What the command does to the dead letters it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Back to the parked list (D21).
    Redrive,
    /// Out of the mirror for good (D8).
    Discard,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Redrive => "redrive",
            Verb::Discard => "discard",
        }
    }
}

/// Entry point of `parkline redrive`.
pub fn main(args: &RedriveArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    ExitCode::from(run(args, &mut stdout.lock(), &mut stderr.lock()))
}

/// Entry point of `parkline discard`.
pub fn discard_main(args: &DiscardArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let seqs: Vec<Seq> = args.seqs.iter().copied().map(Seq).collect();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let status = run_verb(
        Verb::Discard,
        args.mirror.as_path(),
        &seqs,
        args.dry_run,
        &mut out,
        &mut err,
    );
    ExitCode::from(status)
}

/// Runs `parkline redrive` with `args`, writing to `out` and `err`; returns the exit status.
pub fn run(args: &RedriveArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let seqs: Vec<Seq> = args.seqs.iter().copied().map(Seq).collect();
    run_verb(
        Verb::Redrive,
        args.mirror.as_path(),
        &seqs,
        args.dry_run,
        out,
        err,
    )
}

/// Runs `parkline <verb>` on the dead letters `seqs` (all of them when empty) of the mirror at
/// `path`; returns the exit status.
pub fn run_verb(
    verb: Verb,
    path: &std::path::Path,
    seqs: &[Seq],
    dry_run_only: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let name = verb.name();
    let fail = |err: &mut dyn Write, e: &parkline::Error| {
        let advice = match e.kind() {
            ErrorKind::Locked => {
                "the daemon (or another parkline) holds the mirror's lock: stop it, or wait until \
                 it closes the mirror, then run the command again; nothing was changed"
            }
            ErrorKind::Corrupt => {
                "the mirror is damaged and was left as it is; see `parkline inspect` and \
                 spec/mirror.md section 6"
            }
            ErrorKind::NotDead => {
                "see the dead letters with `parkline inspect`; nothing was changed"
            }
            _ => "nothing was changed",
        };
        let _ = writeln!(err, "parkline {name}: {e}");
        let _ = writeln!(err, "{advice}");
        match e.kind() {
            ErrorKind::Corrupt => status::FINDING,
            ErrorKind::NotDead => status::USAGE,
            ErrorKind::Locked => status::LOCKED,
            _ => status::IO,
        }
    };
    //= spec/delivery.md#d21-dead-letter-redrive
    //# `parkline redrive` MUST NOT create a mirror or its lock file where none exists: a path
    //# with no mirror is an error (exit 6, no such session), with or without `--dry-run`.
    if let Err(status) = mirror_exists(name, path, err) {
        return status;
    }
    if dry_run_only {
        return dry_run(verb, path, seqs, out, err, &fail);
    }
    // M8: the lock first, as the daemon takes it; a live daemon makes this fail at once.
    let mut storage = match FsStorage::open(path) {
        Ok(storage) => storage,
        Err(e) => return fail(err, &e),
    };
    let name = storage.mirror_name().to_owned();
    // Removed between the check above and the lock: still never created.
    match storage.read_chunks(&name, &mut |_| std::ops::ControlFlow::Break(())) {
        Ok(true) => {}
        Ok(false) => {
            let _ = writeln!(err, "parkline {name}: {} does not exist", path.display());
            return status::NO_SUCH_SESSION;
        }
        Err(e) => {
            let _ = writeln!(err, "parkline {name}: cannot read {}: {e}", path.display());
            return status::IO;
        }
    }
    let mut queue = match Queue::with_storage(storage, &name, Config::default()) {
        Ok(queue) => queue,
        Err(e) => return fail(err, &e),
    };
    let dead: Vec<Item> = queue.dead_letters().to_vec();
    let moved = match (verb, seqs.is_empty()) {
        (Verb::Redrive, true) => queue.redrive_all(),
        (Verb::Redrive, false) => queue.redrive(seqs),
        (Verb::Discard, true) => queue.discard_all(),
        (Verb::Discard, false) => queue.discard(seqs),
    };
    let done = match verb {
        Verb::Redrive => "redrove",
        Verb::Discard => "discarded",
    };
    match moved {
        Ok(moved) => report(verb, out, done, &dead, &moved),
        Err(e) => fail(err, &e),
    }
}

/// Whether a mirror exists at `path`, for a command that never creates one; the exit status when
/// not: no such session (6) when nothing is there, 3 when the path cannot be looked at.
pub(crate) fn mirror_exists(
    command: &str,
    path: &std::path::Path,
    err: &mut dyn Write,
) -> Result<(), u8> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = writeln!(
                err,
                "parkline {command}: {}: {e}; {command} never creates a mirror, check the path",
                path.display()
            );
            Err(if e.kind() == std::io::ErrorKind::NotFound {
                status::NO_SUCH_SESSION
            } else {
                status::IO
            })
        }
    }
}

/// `--dry-run`: read and decode the mirror as `inspect` does, lock-free and writing nothing (the
/// answer is the mirror as of the read), and say what would move.
fn dry_run(
    verb: Verb,
    path: &std::path::Path,
    seqs: &[Seq],
    out: &mut dyn Write,
    err: &mut dyn Write,
    fail: &dyn Fn(&mut dyn Write, &parkline::Error) -> u8,
) -> u8 {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = writeln!(
                err,
                "parkline {}: cannot read {}: {e}",
                verb.name(),
                path.display()
            );
            return if e.kind() == std::io::ErrorKind::NotFound {
                status::NO_SUCH_SESSION
            } else {
                status::IO
            };
        }
    };
    let state = match mirror::decode_log(&bytes) {
        Ok(decoded) => decoded.state,
        Err(e) => return fail(err, &e.with_path(path)),
    };
    let dead = state.dead_letters;
    let named: Vec<Seq> = if seqs.is_empty() {
        dead.iter().map(|item| item.seq).collect()
    } else {
        let mut sorted = seqs.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != seqs.len() {
            let _ = writeln!(
                err,
                "parkline {}: a seq is named twice; nothing would change",
                verb.name()
            );
            return status::USAGE;
        }
        if let Some(seq) = sorted
            .iter()
            .find(|seq| !dead.iter().any(|item| item.seq == **seq))
        {
            let _ = writeln!(
                err,
                "parkline {}: seq {seq} is not a dead letter; nothing would change",
                verb.name()
            );
            return status::USAGE;
        }
        sorted
    };
    let would = match verb {
        Verb::Redrive => "would redrive",
        Verb::Discard => "would discard",
    };
    report(verb, out, would, &dead, &named)
}

/// One line per dead letter moved or removed, then a summary.
fn report(verb: Verb, out: &mut dyn Write, done: &str, dead: &[Item], moved: &[Seq]) -> u8 {
    let mut text = String::new();
    for item in dead.iter().filter(|item| moved.contains(&item.seq)) {
        let failures = match verb {
            Verb::Redrive => format!("failures {} -> 0", item.failures),
            Verb::Discard => format!("failures {}", item.failures),
        };
        text.push_str(&format!(
            "{done} seq {} (request {}, {failures}, handed {}): {}\n",
            item.seq, item.request, item.handed, item.line
        ));
    }
    let whither = match verb {
        Verb::Redrive => "back to the parked list",
        Verb::Discard => "from the mirror",
    };
    text.push_str(&format!(
        "{done} {} of {} dead letters {whither}\n",
        moved.len(),
        dead.len()
    ));
    if out.write_all(text.as_bytes()).is_err() {
        return status::IO;
    }
    status::APPLIED
}
