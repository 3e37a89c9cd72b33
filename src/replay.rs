//! `parkline replay` (not written yet).

use std::process::ExitCode;

/// Entry point of `parkline replay`.
pub fn main(_args: &[String]) -> ExitCode {
    eprintln!("parkline replay: not implemented yet");
    ExitCode::from(2)
}
