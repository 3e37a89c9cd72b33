//! parkline-conformance: the `parkline` command's subcommands and the conformance harness that
//! checks the production crate (`parkline`) against the reference model (`parkline-model`).

pub mod check;
pub mod drive;
pub mod harness;
pub mod inspect;
pub mod read_harness;
pub mod replay;
pub mod simdisk;
