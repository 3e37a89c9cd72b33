//! parkline-cli: the subcommands of the `parkline` operator command (check, explore, inspect,
//! redrive, remove, workload). The command line itself, parsed with clap, is `src/main.rs`; the conformance harness
//! is the separate `parkline-harness` crate, which this one does not link.

pub mod check;
pub mod inspect;
pub mod redrive;
pub mod remove;
pub mod workload;

/// The exit statuses every `parkline` command uses, as `--help` shows them.
pub const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  a finding: a property violated or never reached, or a pinned state count changed (check);
     the mirror is damaged (inspect, redrive, discard); the trace is invalid (workload)
  2  usage error (an unknown command or flag, a bad value; redrive, discard: a seq not a dead
     letter)
  3  a file cannot be read, or the output cannot be written; redrive, discard, remove: the daemon holds
     the lock
  4  remove: the mirror still holds lines";

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
  3  the daemon holds the mirror's lock, the mirror does not exist, or a file cannot be read
     or written";

/// `parkline discard --help`'s exit statuses.
pub const EXIT_DISCARD: &str = "\
Exit status:
  0  the dead letters were discarded (or would be), also when there were none
  1  the mirror is damaged (the file is left as it is)
  2  usage error (neither --seq nor --all), or a seq that is not a dead letter or is named twice
  3  the daemon holds the mirror's lock, the mirror does not exist, or a file cannot be read
     or written";

/// `parkline remove --help`'s exit statuses.
pub const EXIT_REMOVE: &str = "\
Exit status:
  0  the mirror and its lock file were removed
  1  the mirror is damaged (the file is left as it is)
  2  usage error (an unknown flag, a bad value)
  3  the daemon holds the mirror's lock, the mirror does not exist, or a file cannot be read
     or removed
  4  the mirror holds parked, in-flight or dead lines and --force was not given";

/// `parkline workload --help`'s exit statuses.
pub const EXIT_WORKLOAD: &str = "\
Exit status:
  0  the trace was replayed and the report printed
  1  the trace is invalid
  2  usage error (an unknown flag, a bad value)
  3  the trace cannot be read, or the output cannot be written";
