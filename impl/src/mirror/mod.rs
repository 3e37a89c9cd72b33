//! The mirror file format (spec/mirror.md): an append-only log of checksummed JSON lines.
//!
//! **Not part of the stable API**: these types change with the file format, in any release. The
//! conformance harness, the fuzz targets and the operator command use them; a daemon uses
//! `Queue`.
//!
//! Every line is `<crc32 of the JSON as 8 lowercase hex digits> <JSON>\n` (M1). The first record
//! is the header `{"format":"parkline-mirror","version":3}` (M2; version 1 and 2 files are read
//! and upgraded, M14); the others change the state as
//! [`MirrorState`] describes. The same check (`MirrorState::check`, private) runs on every record
//! read back and on every record the queue is about to write, and the same change
//! (`MirrorState::apply_checked`) rebuilds the state when the file is decoded and advances it when
//! the queue writes, so what the queue holds in memory is by construction what the file decodes
//! to, and a record the decoder would reject is never written.
//!
//! One file for each part, each importing only those listed before it: `header.rs` (the
//! format's name and versions), `record.rs` (the records as the transition applies them),
//! `json.rs` (the fast reader of `park` and `dead` lines), `state.rs` (the state, the check and the
//! change), `legacy.rs` (the version 1 and 2 readers), `v3.rs` (version 3's spelling), `encode.rs`
//! (the writer) and `decode.rs` (the reader, torn tail included). This file holds the re-exports,
//! so the paths are `parkline::mirror::X`.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod header;
pub(crate) mod json;
pub(crate) mod legacy;
mod record;
mod state;
pub(crate) mod v3;

pub(crate) use decode::LogDecoder;
pub use decode::{Decoded, decode, decode_log};
pub use encode::encode;
pub(crate) use encode::encode_record;
pub use header::{FORMAT, VERSION, VERSION_OLDEST};
pub(crate) use record::{GroupItem, Record};
pub use state::MirrorState;
