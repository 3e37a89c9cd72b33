//! `parkline inspect` (not written yet).

use std::process::ExitCode;

/// Entry point of `parkline inspect`.
pub fn main(_args: &[String]) -> ExitCode {
    eprintln!("parkline inspect: not implemented yet");
    ExitCode::from(2)
}
