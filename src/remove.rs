//! `parkline remove <mirror> [--force]`: end a session, removing its mirror and lock file
//! (spec/mirror.md M15).
//!
//! It opens the queue as the daemon does, so it refuses while the daemon holds the mirror's lock
//! (M8), and calls `Queue::remove`: the mirror, then the lock file, then a directory fsync. A
//! mirror that still holds parked, in-flight or dead lines is refused unless `--force`. It never
//! creates a mirror: a path with no mirror is an error.
//!
//! Exit status ([`crate::status`]): 0 removed, 1 the mirror is damaged, 3 a file cannot be read
//! or removed, 4 lines are held and `--force` was not given, 5 the lock is held, 6 no mirror
//! exists at the path.

use std::io::Write;
use std::process::ExitCode;

use parkline::{ErrorKind, Queue};

use crate::redrive::mirror_exists;
use crate::status;

/// The arguments of `parkline remove`.
#[derive(Clone, Debug, clap::Parser)]
pub struct RemoveArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// Remove it even while it holds parked, in-flight or dead lines (they are lost)
    #[arg(long)]
    pub force: bool,
}

/// Entry point of `parkline remove`.
pub fn main(args: &RemoveArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    ExitCode::from(run(args, &mut stdout.lock(), &mut stderr.lock()))
}

/// Runs `parkline remove` with `args`, writing to `out` and `err`; returns the exit status.
pub fn run(args: &RemoveArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let path = args.mirror.as_path();
    if let Err(status) = mirror_exists("remove", path, err) {
        return status;
    }
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# `parkline remove` of a session whose lock is held MUST refuse (exit 5, locked): a
    //# session's end is the holder's to decide.
    let removed = Queue::open(path).and_then(|mut queue| queue.remove(args.force));
    match removed {
        Ok(()) => {
            let _ = writeln!(out, "removed {} and its lock file", path.display());
            status::APPLIED
        }
        Err(e) => {
            let (advice, status) = match e.kind() {
                ErrorKind::Locked => (
                    "the daemon (or another parkline) holds the session, and a session's end is \
                     the daemon's to decide; nothing was removed",
                    status::LOCKED,
                ),
                ErrorKind::Corrupt => (
                    "the mirror is damaged and was left as it is; see `parkline inspect`",
                    status::FINDING,
                ),
                ErrorKind::NotEmpty => (
                    "see the lines with `parkline inspect`; `--force` removes them; nothing was removed",
                    status::NOT_EMPTY,
                ),
                _ => ("see the error above", status::IO),
            };
            let _ = writeln!(err, "parkline remove: {e}");
            let _ = writeln!(err, "{advice}");
            status
        }
    }
}
