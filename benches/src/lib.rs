//! Shared pieces of the parkline benchmarks: the baselines parkline is measured against, a
//! [`Storage`](parkline::Storage) wrapper that counts fsyncs, fixture builders and a peak-memory
//! probe.
//!
//! Every bench in `benches/benches/` measures parkline and at least one baseline in the same run,
//! so that the ratio between them holds on a noisy shared machine even when the absolute times
//! do not. The baselines:
//!
//! - [`floor::AppendFloor`]: one `write` + `fsync` of the line's bytes, the physical floor of any
//!   durable park;
//! - [`json_mirror::JsonMirror`]: today's `deferred-input.json`, the whole queue rewritten per
//!   change (write a temporary file, fsync it, rename it over the mirror, fsync the directory);
//! - SQLite in WAL mode with `synchronous=FULL` lives in the bench targets themselves
//!   (`benches/benches/support/sqlite.rs`), because `rusqlite` is a dev-dependency kept out of
//!   `cargo test`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod boundary;
pub mod contention;
pub mod counting;
pub mod fixture;
pub mod floor;
pub mod interleave;
pub mod json_mirror;
pub mod memory;
pub mod plot;
