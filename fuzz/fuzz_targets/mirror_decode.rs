//! Any bytes given to the mirror decoder: a typed error or a valid state, never a panic; a decoded
//! state re-encodes to bytes that decode to an equal state (`delivery::check_mirror_bytes`). The
//! committed corpus includes mirrors whose records sit at the counters' limits (`crafted_*`,
//! written by `tests/delivery/` `write_seed_corpus`), so mutations start next to the M6 rules.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(message) = parkline_harness::delivery::check_mirror_bytes(data) {
        panic!("{message}");
    }
});
