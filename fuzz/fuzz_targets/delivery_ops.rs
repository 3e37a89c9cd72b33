//! A scenario of delivery ops with crash and I/O-error injection, applied to the crate and the
//! reference by `delivery::check_with`; any divergence is a crash of the target. The same `Op`
//! as the proptest, so the target also builds multi-megabyte batches (`ParkMany`, the
//! whole-queue budget) that make compaction due at the default slack, starts over from crafted
//! mirrors at the counters' limits (`Craft`), and checks the M12 file-size bound after every op.
//!
//! `PARKLINE_KNOWN_BAD=<name>` in the environment fuzzes a deliberately broken protocol instead
//! (`pop-front`, `clear-before-hand-over`, `no-attempt-counter`, `no-dir-sync`: the harness's
//! driver and storage seams around the crate, `parkline_harness::known_bad`), to show a campaign
//! finds it.
//!
//! Where an exec goes (issue 13, measured 2026-12-04 with `valgrind --tool=callgrind` on this
//! binary replaying the committed corpus of 714 inputs with `-runs=0`, and `perf` on 20 s runs):
//! 4.50 G instructions before this round's harness changes, 2.89 G after. Before, the simulated
//! disk's `sync` copied the whole mirror at every park (18 % of the time under `perf`), the
//! reference's state was converted to the crate's types after every op (a copy of every line,
//! 17 % of the instructions), and every line was compared byte for byte with the reference's and
//! the ghost's after every op (`memcmp`, 14 % of the time). Now a sync records a length, the
//! comparison goes field by field and reads a line's bytes once per life of the queue
//! (`view::SameLines`), and the D3/D9 walk is a sorted `Vec`. What is left is the crate:
//! reopening after each crash or restart (`LogDecoder::feed`, 40 %) and the parks (32 %:
//! encoding each record 17 %, checking the planned record 12 %); libFuzzer's bookkeeping is
//! 10 %, and the other 18 % hold the harness's own work (comparing the states 2 %, the
//! invariants 4 %, the reference 3 %, ...) and the crate's other ops. Half of all instructions
//! (50 %) are one libFuzzer callback, `__sanitizer_cov_trace_const_cmp8`, which cargo-fuzz's
//! trace-compares instrumentation calls at every 16-byte step of the crate's word-at-a-time
//! scans (`record_json::newline_position`, `special_position`) over the multi-MB lines: built
//! with `--no-trace-compares` the same corpus replays in 0.08 s of CPU against 0.20 s.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use parkline_harness::delivery::{Op, Setup, check_with, setup_from_env};

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| setup_from_env().unwrap_or_else(|message| panic!("{message}")))
}

fuzz_target!(|ops: Vec<Op>| {
    if let Err(divergence) = check_with(&ops, setup()) {
        panic!("{divergence}");
    }
});
