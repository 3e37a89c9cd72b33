//! The `parkline` command: model check, explore, inspect a mirror, replay a workload.

use std::process::ExitCode;

const USAGE: &str = "\
usage: parkline <command> [args]

commands:
  check     model-check the delivery and read models at the given bounds (the main job)
  explore   serve stateright's Explorer for a model on 127.0.0.1
  inspect   print what a mirror file holds, without modifying it
  replay    replay a planner workload trace through today's policy and parkline's

run `parkline <command> --help` for the command's flags";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "check" => parkline_conformance::check::main(&rest),
        "explore" => parkline_conformance::check::explore_main(&rest),
        "inspect" => parkline_conformance::inspect::main(&rest),
        "replay" => parkline_conformance::replay::main(&rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("parkline: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
