//! parkline-cli: the subcommands of the `parkline` operator command (check, explore, inspect,
//! workload). The command line itself, parsed with clap, is `src/main.rs`; the conformance harness
//! is the separate `parkline-harness` crate, which this one does not link.

pub mod check;
pub mod inspect;
pub mod redrive;
pub mod workload;

/// The exit statuses every `parkline` command uses, as `--help` shows them.
pub const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  a finding: a property violated or never reached, or a pinned state count changed (check);
     the mirror is damaged (inspect, redrive); the trace is invalid (workload)
  2  usage error (an unknown command or flag, a bad value; redrive: a seq not a dead letter)
  3  a file cannot be read, or the output cannot be written; redrive: the daemon holds the lock";
