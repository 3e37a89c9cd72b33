//! A scenario of read ops (the child's transcript grows, turns complete, the parent reads with
//! budgets, cursors and selectors), applied to the crate and the read reference by
//! `read::check_with`; any divergence is a crash of the target.
//!
//! `PARKLINE_KNOWN_BAD=<name>` in the environment fuzzes a deliberately broken read instead
//! (`excerpt-without-reference`, `advance-before-build`, `turns-only-budget`: the harness's
//! wrappers around `Transcript::read`), to show a campaign finds it.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use parkline_harness::known_bad::KnownBad;
use parkline_harness::read::{ReadOp, check_with, known_bad_from_env};

fn known_bad() -> Option<KnownBad> {
    static KNOWN_BAD: OnceLock<Option<KnownBad>> = OnceLock::new();
    *KNOWN_BAD.get_or_init(|| known_bad_from_env().unwrap_or_else(|message| panic!("{message}")))
}

fuzz_target!(|ops: Vec<ReadOp>| {
    if let Err(divergence) = check_with(&ops, known_bad()) {
        panic!("{divergence}");
    }
});
