//! parkline-harness: what checks the production crate (`parkline`) against the reference model
//! (`parkline-model`), shared by the conformance tests in `tests/` and the fuzz targets in `fuzz/`.
//! It is never linked into the operator binary: it switches on `parkline`'s `known-bad` feature
//! and brings proptest and arbitrary with it.

pub mod delivery;
pub mod drive;
pub mod known_bad;
pub mod read;
pub mod simdisk;
