//! The sans-I/O engine: the core's state and the records a call makes of it, the index of the
//! requests it holds, and group commit's planning. No file, no clock, no thread.

pub(crate) mod by_request;
pub(crate) mod core;
pub(crate) mod group;
