//! The turn text's one reading (spec/delivery.md D4, D4a) on arbitrary bytes, two ways
//! (`parkline_harness::frame`, which the corpus replay calls too):
//! - the bytes as a text: `parse` refuses it, or rendering what it read gives back the text
//!   exactly (no text has two readings);
//! - the bytes as a batch (id, attempt, seen, remaining, lines without `\n`, and optionally the
//!   batch's own trailer forged into a line): `parse(render(..))` gives back every field and line.
//!
//! The committed corpus holds rendered turns (forged lines included), so mutations start at texts
//! that parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parkline_harness::frame::check_frame_bytes;

fuzz_target!(|data: &[u8]| {
    if let Err(divergence) = check_frame_bytes(data) {
        panic!("{divergence}");
    }
});
