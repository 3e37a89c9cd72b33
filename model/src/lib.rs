//! Reference models of parkline: stateright models of the delivery and read protocols, each with
//! a plain transition function usable as the oracle in differential tests and fuzz targets.
//! This crate does no I/O.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod delivery;
pub mod read;
pub mod search;
