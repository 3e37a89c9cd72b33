//! parkline's integration tests, one binary with a module per concern.

mod cli;
mod delivery;
mod drift;
mod floors;
mod kill;
mod live_operator;
mod read;
mod spec_blocks;
mod workload;

/// `name` from the environment as a number, or `default` (the slow tests' scale).
fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
