//! parkline: crash-safe parked completion lines, delivered as one batch turn per boundary, and
//! budgeted cursor reads for `agent_read`.
#![forbid(unsafe_code)]

pub mod read;
