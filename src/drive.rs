//! `parkline drive` (not written yet).

use std::process::ExitCode;

/// Entry point of `parkline drive`.
pub fn main(_args: &[String]) -> ExitCode {
    eprintln!("parkline drive: not implemented yet");
    ExitCode::from(2)
}
