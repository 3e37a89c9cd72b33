//! Unit tests of the crate, on real temporary directories wherever files matter, one file per
//! concern. Each test names the requirement ids (spec/delivery.md D.., spec/mirror.md M..) it
//! covers; a test written to kill a mutant `cargo mutants` found alive says which. This file
//! holds the helpers they share: items, temporary mirrors, and record lines for building files.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::mirror;
use crate::{
    Attempt, Batch, BatchId, Budget, Config, ErrorKind, Hooks, Item, Line, MemStorage, Outcome,
    Parked, Queue, RequestId, Seam, Seq, Storage, split,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The time [`fixed`]'s clock reads, in milliseconds since the epoch.
const NOW: u64 = 1_800_000_000_000;

/// A clock that reads what it is set to (D24).
#[derive(Debug)]
struct Fixed(std::sync::atomic::AtomicU64);

impl crate::Clock for Fixed {
    fn now_ms(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A clock at [`NOW`], for tests that compare the bytes a queue writes with records they build.
fn fixed() -> std::sync::Arc<Fixed> {
    std::sync::Arc::new(Fixed(std::sync::atomic::AtomicU64::new(NOW)))
}

/// The M12 slack the compaction tests run with: the rule does not depend on its value, and at
/// 64 KiB (the default until 2026-12-03) a test reaches it in a few hundred small records, where
/// the 4 MiB default would take thousands.
const SMALL_SLACK: u64 = 64 * 1024;

/// `Config::default()` without the remembered window: the config the files the tests build by
/// hand were written with (their counters record says no window), so an open appends nothing.
fn no_window() -> Config {
    Config {
        delivered_memory: 0,
        ..Config::default()
    }
}

/// `Config::default()` with [`SMALL_SLACK`], and no remembered window: the compaction tests
/// compute the snapshots they expect from the lines held (the window's own tests are in
/// `remembered.rs`).
fn small_slack() -> Config {
    Config {
        compact_slack_bytes: SMALL_SLACK,
        delivered_memory: 0,
        ..Config::default()
    }
}

fn item(seq: u64, line: &str) -> Item {
    Item {
        seq: Seq(seq),
        request: RequestId(seq + 100),
        line: line.into(),
        failures: 0,
        handed: 0,
        parked_at: None,
        died_at: None,
    }
}

/// The names in `dir` besides the directory's lock file, which a single-path open leaves for
/// its directory's other handles (M16), sorted.
fn names_besides_dir_lock(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != crate::io::storage::DIR_LOCK {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn temp_mirror() -> io::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("s1.mirror");
    Ok((dir, path))
}

/// A line in the format of the seed's deferred queue: request id, answering turn, outcome and
/// the agent_read reference, which must all survive verbatim.
fn seed_line(n: u64) -> String {
    format!(
        "[delegation r-{n:03} answered turn sj-18d3164fbb9ba765-{n:02}] outcome: ok; agent_read{{turn:\"s980-{n:02}\"}} \u{2014} done"
    )
}

/// One complete record line with a correct checksum, for building damaged files.
fn rec(json: &str) -> String {
    format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
}

fn header() -> String {
    rec(r#"{"format":"parkline-mirror","version":4}"#)
}

/// The header a queue writes for a mirror of `life` (M2, M17).
fn header_of(life: Option<crate::Life>) -> String {
    match life {
        Some(life) => rec(&format!(
            r#"{{"format":"parkline-mirror","version":4,"life":"{life}"}}"#
        )),
        None => header(),
    }
}

/// A mirror's bytes after its header: what two queues that wrote the same records share,
/// whatever their lives (M17).
fn after_header(bytes: &[u8]) -> Vec<u8> {
    let start = bytes
        .iter()
        .position(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    bytes[start..].to_vec()
}

/// `state` without its life (M17), to compare two queues that did the same work.
fn lifeless(state: &mirror::MirrorState) -> mirror::MirrorState {
    mirror::MirrorState {
        life: None,
        ..state.clone()
    }
}

fn park_json(seq: u64) -> String {
    format!(
        r#"{{"type":"park","seq":{seq},"request":{seq},"line":"l{seq}","failures":0,"handed":0}}"#
    )
}

fn file_of(records: &[String]) -> Vec<u8> {
    let mut text = header();
    for json in records {
        text.push_str(&rec(json));
    }
    text.into_bytes()
}

/// Opens `bytes` in memory; the storage shows afterwards what was written.
fn open_bytes(bytes: &[u8], config: Config) -> crate::Result<Queue<MemStorage>> {
    let mut storage = MemStorage::new();
    storage.set_file("m", bytes.to_vec());
    Queue::with_storage(storage, "m", config)
}

/// `state` without what format 4 added (times, D24; the remembered window, D3): what a mirror
/// of an older version can be compared with.
fn before_format_4(state: &mirror::MirrorState) -> mirror::MirrorState {
    let strip = |items: &[Item]| -> Vec<Item> {
        items
            .iter()
            .map(|item| Item {
                parked_at: None,
                died_at: None,
                ..item.clone()
            })
            .collect()
    };
    let mut old = lifeless(state);
    old.parked = strip(&state.parked);
    old.dead_letters = strip(&state.dead_letters);
    if let Some(batch) = old.in_flight.as_mut() {
        batch.items = strip(&batch.items);
    }
    old.remembered.clear();
    old.memory = 0;
    old
}

fn file(queue: &Queue<MemStorage>) -> Vec<u8> {
    queue
        .storage()
        .file("m")
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

mod acceptance;
mod api;
#[cfg(feature = "tokio")]
mod async_queue;
mod batch_split;
mod check_before_write;
mod compaction;
mod contract;
mod crash;
mod damaged;
mod fail_stop;
mod failed_open;
mod format;
mod frame;
mod histogram;
mod identity;
mod input;
#[cfg(shuttle)]
mod interleavings;
mod limits;
mod lock;
#[cfg(feature = "tracing")]
mod observe;
mod ops;
mod record_json;
mod remembered;
mod repeat_bound;
#[cfg(feature = "serde")]
mod serde_impls;
mod settle;
mod shared;
mod store;
mod v2;
mod v3;

/// A park planned on `core` as the queue plans it, a group of one unit: the record and the
/// answer, not yet committed.
fn park_step(
    core: &crate::engine::core::Core,
    request: RequestId,
    line: &str,
    now: u64,
) -> crate::Result<crate::engine::core::Step<Parked>> {
    let unit = crate::engine::group::Unit::one(request, line);
    let (mut answers, record) = crate::engine::group::plan(core, &[unit], now);
    let value = answers.pop().expect("one answer per unit")?;
    Ok(crate::engine::core::Step {
        record,
        value: value[0],
    })
}

/// A `park_all` planned on `core` as the queue plans it, a group of one unit.
fn park_all_step(
    core: &crate::engine::core::Core,
    lines: &[(RequestId, &str)],
    now: u64,
) -> crate::Result<crate::engine::core::Step<Vec<Parked>>> {
    let unit = crate::engine::group::Unit::whole(lines);
    let (mut answers, record) = crate::engine::group::plan(core, &[unit], now);
    let value = answers.pop().expect("one answer per unit")?;
    Ok(crate::engine::core::Step { record, value })
}
