//! parkline-harness: what checks the production crate (`parkline`) against the reference model
//! (`parkline-model`), shared by the conformance tests in `tests/` and the fuzz targets in `fuzz/`.
//! It is never linked into the operator binary: it brings proptest and arbitrary, and the
//! deliberately broken protocols (`known_bad`), built as seams around the crate, which has no
//! switch for them.

pub mod delivery;
pub mod drive;
pub mod frame;
pub mod known_bad;
pub mod read;
pub mod simdisk;
