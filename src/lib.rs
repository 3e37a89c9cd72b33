//! parkline-cli: the subcommands of the `parkline` operator command (check, explore, inspect,
//! redrive, discard, remove, workload). The command line itself, parsed with clap, is
//! `src/main.rs`; the conformance harness is the separate `parkline-harness` crate, which this one
//! does not link.

#[cfg(feature = "model")]
pub mod check;
pub mod inspect;
pub mod redrive;
pub mod remove;
pub mod workload;

/// The exit statuses of `parkline`, by name: what a runbook branches on (README's status table,
/// spec/delivery.md D21). A status keeps its meaning once given; [`QUEUED`](status::QUEUED) and
/// [`REFUSED`](status::REFUSED) are reserved for an operator command that asks a live daemon to
/// make the change, and no command exits with them yet.
pub mod status {
    //= spec/delivery.md#d21-dead-letter-redrive
    //# The operator commands that change a mirror (`parkline redrive`, `parkline discard`, `parkline
    //# remove`) MUST exit with a status of its own for each cause a runbook branches on: 0 applied, 1
    //# the mirror is damaged, 2 a usage error or a seq that is not a dead letter, 3 a file that cannot
    //# be read or written, 4 (`remove`) lines still held without `--force`, 5 locked (the daemon holds
    //# the mirror's lock), 6 no such session (no mirror at the path).

    /// Success; for a command that changes a mirror, the change was applied.
    pub const APPLIED: u8 = 0;
    /// A finding: a property violated or never reached, a pinned state count changed, a damaged
    /// mirror, an invalid trace.
    pub const FINDING: u8 = 1;
    /// A usage error: an unknown command or flag, a bad value, a seq that is not a dead letter.
    pub const USAGE: u8 = 2;
    /// A file cannot be read or written, or the output cannot be written.
    pub const IO: u8 = 3;
    /// `remove`: the mirror still holds parked, in-flight or dead lines and `--force` was not
    /// given.
    pub const NOT_EMPTY: u8 = 4;
    /// The daemon (or another parkline) holds the mirror's lock; nothing was changed.
    pub const LOCKED: u8 = 5;
    /// No mirror exists at the path: no such session; nothing was created.
    pub const NO_SUCH_SESSION: u8 = 6;
    /// Reserved: the change was handed to the live daemon, which applies it at its next step.
    pub const QUEUED: u8 = 7;
    /// Reserved: the live daemon refused the change.
    pub const REFUSED: u8 = 8;
}

/// The exit statuses every `parkline` command uses, as `--help` shows them ([`status`] names
/// them).
pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (applied)
  1  a finding: a property violated or never reached, or a pinned state count changed (check);
     the mirror is damaged (inspect, redrive, discard, remove); the trace is invalid (workload)
  2  usage error (an unknown command or flag, a bad value; redrive, discard: a seq not a dead
     letter)
  3  a file cannot be read, or the output cannot be written
  4  remove: the mirror still holds lines
  5  redrive, discard, remove: locked, the daemon holds the mirror's lock
  6  redrive, discard, remove: no such session, no mirror at the path
  7  reserved: queued for the daemon
  8  reserved: refused by the daemon";

/// `parkline check --help`'s exit statuses.
pub const EXIT_CHECK: &str = "\
Exit status:
  0  every property holds and every pinned state count matches
  1  a property violated or never reached, or a pinned state count changed
  2  usage error (an unknown flag, a bad value, a bound set file that cannot be read or parsed)";

/// `parkline explore --help`'s exit statuses.
pub const EXIT_EXPLORE: &str = "\
Exit status:
  2  usage error (an unknown flag, a bad value, a bound set file that cannot be read or parsed)
  otherwise it serves until it is killed";

/// `parkline inspect --help`'s exit statuses.
pub const EXIT_INSPECT: &str = "\
Exit status:
  0  the mirror was read and shown
  1  the mirror is damaged (the file is left as it is)
  2  usage error (an unknown flag, a bad value)
  3  the file cannot be read, or the output cannot be written";

/// `parkline redrive --help`'s exit statuses.
pub const EXIT_REDRIVE: &str = "\
Exit status:
  0  the dead letters moved (or would move), also when there was nothing to move
  1  the mirror is damaged (the file is left as it is)
  2  usage error, or a seq that is not a dead letter or is named twice
  3  a file cannot be read or written
  5  the daemon holds the mirror's lock (nothing was changed)
  6  no mirror exists at the path (nothing was created)";

/// `parkline discard --help`'s exit statuses.
pub const EXIT_DISCARD: &str = "\
Exit status:
  0  the dead letters were discarded (or would be), also when there were none
  1  the mirror is damaged (the file is left as it is)
  2  usage error (not one of --seq, --all, --older-than; a bad duration), or a seq that is not
     a dead letter or is named twice
  3  a file cannot be read or written
  5  the daemon holds the mirror's lock (nothing was changed)
  6  no mirror exists at the path (nothing was created)";

/// `parkline remove --help`'s exit statuses.
pub const EXIT_REMOVE: &str = "\
Exit status:
  0  the mirror and its lock file were removed
  1  the mirror is damaged (the file is left as it is)
  2  usage error (an unknown flag, a bad value)
  3  a file cannot be read or removed
  4  the mirror holds parked, in-flight or dead lines and --force was not given
  5  the daemon holds the mirror's lock (nothing was removed)
  6  no mirror exists at the path (nothing was created)";

/// `parkline workload --help`'s exit statuses.
pub const EXIT_WORKLOAD: &str = "\
Exit status:
  0  the trace was replayed and the report printed
  1  the trace is invalid
  2  usage error (an unknown flag, a bad value)
  3  the trace cannot be read, or the output cannot be written";
