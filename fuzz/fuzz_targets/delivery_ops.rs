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
