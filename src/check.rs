//! `parkline check` (not written yet).

use std::process::ExitCode;

/// Entry point of `parkline check`.
pub fn main(_args: &[String]) -> ExitCode {
    eprintln!("parkline check: not implemented yet");
    ExitCode::from(2)
}

/// Entry point of `parkline explore`.
pub fn explore_main(_args: &[String]) -> ExitCode {
    eprintln!("parkline explore: not implemented yet");
    ExitCode::from(2)
}
