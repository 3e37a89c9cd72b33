//! A scenario of read ops (the child's transcript grows, turns complete, the parent reads with
//! budgets, cursors and selectors), applied to the crate and the read reference by
//! `read_harness::check`; any divergence is a crash of the target.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parkline_harness::read_harness::{ReadOp, check};

fuzz_target!(|ops: Vec<ReadOp>| {
    if let Err(divergence) = check(&ops) {
        panic!("{divergence}");
    }
});
