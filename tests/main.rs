//! parkline's integration tests, one binary with a module per concern.

mod cli;
mod delivery;
mod kill;
mod read;
mod replay;
