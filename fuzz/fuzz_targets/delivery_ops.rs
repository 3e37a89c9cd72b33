//! A scenario of delivery ops with crash and I/O-error injection, applied to the crate and the
//! reference by `delivery::check_with`; any divergence is a crash of the target. The same `Op`
//! as the proptest, so the target also builds multi-megabyte batches (`ParkMany`, the
//! whole-queue budget) that make compaction due at the default slack, starts over from crafted
//! mirrors at the counters' limits (`Craft`), and checks the M12 file-size bound after every op
//! (and the bound at rest after every settle, redrive or discard that drains the queue).
//!
//! `PARKLINE_KNOWN_BAD=<name>` in the environment fuzzes a deliberately broken protocol instead:
//! any delivery name of `parkline_harness::known_bad::KnownBad` (`KnownBad::DELIVERY`; the
//! harness's driver and storage seams around the crate), to show a campaign finds it.
//!
//! The snapshot of the state is checked to decode to the state where format 2 had none (after a
//! redrive beside an in-flight batch), not after every op as the differential does: that check
//! after every op cost the smoke most of its executions. What an exec costs, and where, is in
//! docs/performance.md ("Fuzz throughput").
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
