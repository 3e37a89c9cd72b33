//! `parkline remove <mirror> [--force]`: end a session, removing its mirror and lock file
//! (spec/mirror.md M15).
//!
//! It opens the queue as the daemon does, so it refuses while the daemon holds the mirror's lock
//! (M8), and calls `Queue::remove`: the mirror, then the lock file, then a directory fsync. A
//! mirror that still holds parked, in-flight or dead lines is refused unless `--force`. It never
//! creates a mirror: a path with no mirror is an error.

use std::io::Write;
use std::process::ExitCode;

use parkline::{ErrorKind, Queue};

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
    if let Err(e) = std::fs::symlink_metadata(path) {
        let _ = writeln!(
            err,
            "parkline remove: {}: {e}; remove never creates a mirror, check the path",
            path.display()
        );
        return 3;
    }
    let removed = Queue::open(path).and_then(|mut queue| queue.remove(args.force));
    match removed {
        Ok(()) => {
            let _ = writeln!(out, "removed {} and its lock file", path.display());
            0
        }
        Err(e) => {
            let (advice, status) = match e.kind() {
                ErrorKind::Locked => (
                    "the daemon (or another parkline) holds the mirror's lock; nothing was removed",
                    3,
                ),
                ErrorKind::Corrupt => (
                    "the mirror is damaged and was left as it is; see `parkline inspect`",
                    1,
                ),
                ErrorKind::NotEmpty => (
                    "see the lines with `parkline inspect`; `--force` removes them; nothing was removed",
                    4,
                ),
                _ => ("see the error above", 3),
            };
            let _ = writeln!(err, "parkline remove: {e}");
            let _ = writeln!(err, "{advice}");
            status
        }
    }
}
