//! parkline-conformance: the `parkline` command's subcommands and the conformance harness that
//! checks the production crate (`parkline`) against the reference model (`parkline-model`).

pub mod check;
pub mod inspect;
pub mod replay;

pub use parkline_harness::{drive, harness, read_harness, simdisk};
