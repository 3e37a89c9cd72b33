//! A scenario of read ops (the child's transcript grows, turns complete, the parent reads with
//! budgets, cursors and selectors), applied to the crate and the read reference by
//! `read::check_with`; any divergence is a crash of the target.
//!
//! `PARKLINE_KNOWN_BAD=<name>` in the environment fuzzes a deliberately broken read instead
//! (`excerpt-without-reference`, `advance-before-build`, `turns-only-budget`: the harness's
//! wrappers around `Transcript::read`), to show a campaign finds it.
//!
//! Where an exec goes (issue 13, measured 2026-12-04 with `valgrind --tool=callgrind` on this
//! binary replaying the committed corpus of 656 inputs with `-runs=0`): 0.97 G instructions,
//! 1.02 G before the harness wrote each window's next cursor once instead of three times and
//! took `needed_chars` from the comparison's error instead of reading again. Inside the target
//! (75 %): the reference's read 27 %, the crate's read 16 %, the crate parsing the cursors it is
//! given 12 % (a CRC each), writing cursors 9 %, `format!` in both sides' texts 14 %; the
//! harness's own bookkeeping is a few percent. libFuzzer's own work per exec is the other 25 %
//! (collecting the coverage features 13 %, its corpus weights 9 %). The trace-compares
//! callbacks (`__sanitizer_cov_trace_*cmp*`) are about 40 % of all instructions, spread over
//! both sides' code: built with `--no-trace-compares` the corpus replays in 0.05 s of CPU
//! against 0.08 s. Ten times the execs would need an exec of about 30 µs, less than libFuzzer's
//! own per-exec work here.
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
