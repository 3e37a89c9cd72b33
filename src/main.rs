//! The `parkline` operator command: model-check the protocol, explore a model, inspect a mirror,
//! redrive or discard its dead letters, remove it, run a planner workload. Parsing is clap's
//! (help, typo suggestions, `--version`, usage errors exit 2); each subcommand's work is in the
//! library. `check` and `explore` are there with the `model` feature (on by default).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
#[cfg(feature = "model")]
use parkline_cli::{EXIT_CHECK, EXIT_EXPLORE, check};
use parkline_cli::{
    EXIT_DISCARD, EXIT_INSPECT, EXIT_REDRIVE, EXIT_REMOVE, EXIT_STATUS, EXIT_WORKLOAD, inspect,
    redrive, remove, workload,
};

/// The verified core of deferred delivery: model check, explore, inspect, redrive, discard, remove,
/// workload.
#[derive(Debug, Parser)]
#[command(name = "parkline", version, after_help = EXIT_STATUS, arg_required_else_help = true)]
#[cfg_attr(
    not(feature = "model"),
    command(
        about = "The operator commands of parkline: inspect, redrive, discard, remove, workload"
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Model-check the delivery and read models at the given bounds (the main job)
    ///
    /// Model-checks the delivery model (spec/delivery.md) and the read model (spec/read.md) at the
    /// given bounds, shows progress on stderr, and prints a table: states, unique states, depth,
    /// time and each property's verdict (holds / discovered / VIOLATED / NOT REACHED). A violated
    /// property gets its shortest counterexample as numbered steps.
    #[cfg(feature = "model")]
    #[command(after_help = EXIT_CHECK)]
    Check(check::CheckArgs),
    /// Serve stateright's Explorer for a model on 127.0.0.1
    ///
    /// Serves stateright's Explorer for the model at the address and blocks until killed.
    #[cfg(feature = "model")]
    #[command(after_help = EXIT_EXPLORE)]
    Explore(check::ExploreArgs),
    /// Print what a mirror file holds, without modifying it
    ///
    /// Prints what the mirror file holds: parked lines and the batch in flight (with its
    /// attempt), each line with its age; dead letters, each with the time since it died
    /// (spec/delivery.md D24; "-" for a line from a mirror before format 4); and how many
    /// delivered or discarded requests the mirror remembers (D3). `--json` prints the same as
    /// one object, with the times in milliseconds since the Unix epoch and the remembered
    /// requests listed. Never modifies the file and takes no lock, so it works on a live session.
    #[command(after_help = EXIT_INSPECT)]
    Inspect(inspect::InspectArgs),
    /// Move dead letters back to the parked list, or ask the daemon holding the session to
    ///
    /// Moves the dead letters named by `--seq` (all of them without it) back to the parked list,
    /// each at its seq's place with failures 0 and its hand-over count kept (spec/delivery.md
    /// D21): one record, one fsync. Takes the mirror's lock as the daemon does; never creates a
    /// mirror. While the daemon holds the lock, the command leaves the request in the session's
    /// request file (spec/mirror.md M17): the daemon applies it at the session's next boundary,
    /// exactly once, and the command waits up to `--wait` for the answer (applied, refused, or
    /// still queued). `--dry-run` reads the mirror lock-free, as inspect does, prints what would
    /// move and writes nothing.
    #[command(after_help = EXIT_REDRIVE)]
    Redrive(redrive::RedriveArgs),
    /// Remove dead letters from the mirror for good, or ask the daemon holding the session to
    ///
    /// Removes the dead letters named by `--seq`, every one with `--all`, or with `--older-than`
    /// those that died more than the duration ago (a dead letter without a time of death, from a
    /// mirror before format 4, is kept and counted), from the mirror (spec/delivery.md D8, D24):
    /// one record, one fsync. For dead letters an operator has read and does not want delivered;
    /// the mirror then remembers them as discarded (D3). Takes the mirror's lock as the daemon
    /// does; never creates a mirror. While the daemon holds the lock, the command asks it as
    /// `redrive` does (spec/mirror.md M17; `--older-than` counts back from the command's now).
    /// `--dry-run` reads the mirror lock-free, prints what would be removed and writes nothing.
    #[command(after_help = EXIT_DISCARD)]
    Discard(redrive::DiscardArgs),
    /// End a session: remove its mirror and lock file (takes the mirror's lock)
    ///
    /// Removes the mirror, then its lock file, then fsyncs the directory (spec/mirror.md M15).
    /// Refuses while the daemon holds the session (a session's end is the daemon's to decide),
    /// and while the mirror holds parked, in-flight or dead lines unless `--force`. Never creates
    /// a mirror.
    #[command(after_help = EXIT_REMOVE)]
    Remove(remove::RemoveArgs),
    /// Replay a planner workload trace through today's policy and parkline's
    ///
    /// Replays a planner workload trace (JSON lines, spec/workload.md) through today's policy
    /// (pop-front, one wake-up turn per parked line; `n:1` peeks) and parkline's (one batch turn
    /// per boundary; `since:<cursor>` reads), and prints replay turns per boundary, characters
    /// handed to the parent, characters repeated and the share repeated, and, when the trace
    /// carries them, estimated cache-read tokens of wake-up turns, parent calls per card and the
    /// per-card context delta. `--json` prints the same report as one JSON object.
    #[command(after_help = EXIT_WORKLOAD)]
    Workload(workload::WorkloadArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        #[cfg(feature = "model")]
        Command::Check(flags) => check::main(&flags),
        #[cfg(feature = "model")]
        Command::Explore(flags) => check::explore_main(&flags),
        Command::Inspect(flags) => inspect::main(&flags),
        Command::Redrive(flags) => redrive::main(&flags),
        Command::Discard(flags) => redrive::discard_main(&flags),
        Command::Remove(flags) => remove::main(&flags),
        Command::Workload(flags) => workload::main(&flags),
    }
}
