//! parkline-cli: the subcommands of the `parkline` operator command (check, explore, inspect,
//! redrive, discard, remove, workload). The command line itself, parsed with clap, is
//! `src/main.rs`; the conformance harness is the separate `parkline-harness` crate, which this one
//! does not link.

pub mod ask;
#[cfg(feature = "model")]
pub mod check;
pub mod inspect;
pub mod redrive;
pub mod remove;
pub mod workload;

/// The exit statuses of `parkline`, by name: what a runbook branches on (README's status table,
/// spec/delivery.md D21). A status keeps its meaning once given; [`QUEUED`](status::QUEUED) and
/// [`REFUSED`](status::REFUSED) are the answers of a live daemon asked to make the change
/// (spec/mirror.md M17).
pub mod status {
    //= spec/delivery.md#d21-dead-letter-redrive
    //# The operator commands that change a mirror (`parkline redrive`, `parkline discard`, `parkline
    //# remove`) MUST exit with a status of its own for each cause a runbook branches on: 0 applied, 1
    //# the mirror is damaged, 2 a usage error or a seq that is not a dead letter, 3 a file that cannot
    //# be read or written, 4 (`remove`) lines still held without `--force`, 5 locked (`remove`: the
    //# daemon holds the session), 6 no such session (no mirror at the path), 7 queued for the daemon, 8
    //# refused by the daemon (`redrive`, `discard`: M17).

    /// Success; for a command that changes a mirror, the change was applied.
    pub const APPLIED: u8 = 0;
    /// A finding: a property violated or never reached, a pinned state count changed, a damaged
    /// mirror, an invalid trace.
    pub const FINDING: u8 = 1;
    /// A usage error: an unknown command or flag, a bad value, a seq that is not a dead letter,
    /// a request id that names another change.
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
    /// The change waits in the session's request file for the live daemon, which applies it at
    /// the session's next boundary (or its next open); nothing is changed yet.
    pub const QUEUED: u8 = 7;
    /// The live daemon refused the change (a seq that is not a dead letter, a malformed
    /// request, a request for another session of the name), or too many requests wait for it;
    /// nothing was changed.
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
  5  remove: locked, the daemon holds the session; redrive, discard: another parkline holds the
     request file
  6  redrive, discard, remove: no such session, no mirror at the path
  7  redrive, discard: queued, the daemon applies the change at the session's next boundary
  8  redrive, discard: refused by the daemon, nothing was changed";

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
  0  the dead letters moved (or would move), also when there was nothing to move; by the
     daemon, when it holds the session and answered within --wait
  1  the mirror or the request file is damaged (the file is left as it is)
  2  usage error, a seq that is not a dead letter or is named twice, or an --id that names a
     request of another change
  3  a file cannot be read or written
  5  another parkline holds the request file's lock (nothing was asked)
  6  no mirror exists at the path (nothing was created)
  7  queued: the daemon holds the session and applies the request at its next boundary
  8  the daemon refused the request (a seq that is not a dead letter, another session of the
     name), or 64 requests wait";

/// `parkline discard --help`'s exit statuses.
pub const EXIT_DISCARD: &str = "\
Exit status:
  0  the dead letters were discarded (or would be), also when there were none; by the daemon,
     when it holds the session and answered within --wait
  1  the mirror or the request file is damaged (the file is left as it is)
  2  usage error (not one of --seq, --all, --older-than; a bad duration), a seq that is not a
     dead letter or is named twice, or an --id that names a request of another change
  3  a file cannot be read or written
  5  another parkline holds the request file's lock (nothing was asked)
  6  no mirror exists at the path (nothing was created)
  7  queued: the daemon holds the session and applies the request at its next boundary
  8  the daemon refused the request (a seq that is not a dead letter, another session of the
     name), or 64 requests wait";

/// `parkline remove --help`'s exit statuses.
pub const EXIT_REMOVE: &str = "\
Exit status:
  0  the mirror and its lock file were removed
  1  the mirror is damaged (the file is left as it is)
  2  usage error (an unknown flag, a bad value)
  3  a file cannot be read or removed
  4  the mirror holds parked, in-flight or dead lines and --force was not given
  5  the daemon holds the session: its end is the daemon's to decide (nothing was removed)
  6  no mirror exists at the path (nothing was created)";

/// `parkline workload --help`'s exit statuses.
pub const EXIT_WORKLOAD: &str = "\
Exit status:
  0  the trace was replayed and the report printed
  1  the trace is invalid
  2  usage error (an unknown flag, a bad value)
  3  the trace cannot be read, or the output cannot be written";
