//! Recovery: opening a mirror after a crash, for mirrors of 13 to 100,000 parked lines, with a
//! batch of 13 persisted but not settled (the crash between "batch written" and "mirror
//! cleared"). Baselines in the same run: reading and parsing today's whole-JSON mirror of the same
//! lines, and opening SQLite (WAL) and reading every parked row.
//!
//! Peak memory: each kind and size is opened once more in a fresh child process (this binary,
//! re-executed with `PARKLINE_BENCH_RECOVERY_CHILD` set), which reports the growth of its peak
//! resident set over its resident set before the open. Printed beside the line bytes it holds.
//!
//! Profile (2026-12-03, `profile recover` of `benches/benches/profile.rs` under callgrind, 100,000
//! parked lines of 200 bytes, 13 in flight, a 29,077,980-byte mirror). Before the decoder
//! rewrite `Queue::open` was 1,057 M instructions, all of it `mirror::decode_log`: 741 M (70 %)
//! the JSON decode of each record into the internally tagged `Record` enum
//! (`#[serde(tag = "type")]`), 609 M of it (58 %) serde buffering every record into its generic
//! `Content` tree before building the variant; then the byte-at-a-time newline search, `apply`
//! (the `line.clone()`) and `check`; heap peak 56.4 MB (2.82x the 20 MB of line bytes: the whole
//! file read into one `Vec` while the state was built beside it), 221 MB asked of the allocator
//! (each line allocated three times).
//!
//! Now (`record_json.rs`: a park line as parkline writes it is read in one pass by a fast path,
//! any other record by a hand-written `Deserialize` without the intermediate tree; the file is
//! decoded as `Storage::read_chunks` reads it, 64 KiB at a time) `Queue::open` is 270 M
//! instructions against 253 M for the JSON baseline's whole load. What dominates: the fast path,
//! 191 M (71 %): the line's string scanned 16 bytes at a time and stopped at each escape (the
//! fixture's lines each hold four `\"`), the integers and the fixed keys, about 130 M; the one
//! allocation of each line 30 M (malloc and the counting allocator), its UTF-8 validation 20 M,
//! its copy 9 M. Then `apply` 32 M (25 M of it `check`'s newline test of each line), the CRC
//! 24 M (9 %), and the line loop (the checksum's hex, the end of each line) 23 M. Heap: a peak
//! of 27.4 MB (1.37x the line bytes): the lines, each allocated once at its exact length
//! (20.0 MB), the parked `Vec`'s 131,072 slots of 48-byte `Item`s from its doubling (6.3 MB) and
//! the 64 KiB read buffer; 34.8 MB asked in all. In time (`--bench table`) recovery is still
//! 1.3x the JSON load although the instructions are 1.07x: `perf record` of the table's rounds
//! puts 15 % of its samples in the bench's counting allocator (10 % for the JSON load, which
//! makes as many allocations), nearly all on the instructions after its `lock`-prefixed
//! counters, which wait for the stores before them to drain; which of those stores miss the
//! cache, this profile does not say.

#[path = "support/sqlite.rs"]
mod sqlite;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use parkline::{Budget, ErrorKind, Queue};
use parkline_benches::fixture::{self, bench_dir, completion_line, mirror_line, sync_dir_tree};
use parkline_benches::json_mirror::JsonMirror;
use parkline_benches::memory;
use tempfile::TempDir;

use sqlite::SqliteQueue;

const LINES: [u64; 5] = [13, 100, 1_000, 10_000, 100_000];
const IN_FLIGHT: usize = 13;
const CHILD_ENV: &str = "PARKLINE_BENCH_RECOVERY_CHILD";
const MIRROR: &str = "s966.mirror";
const SQLITE: &str = "parked.sqlite";

static LOCKED_RETRIES: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Debug)]
enum Kind {
    Parkline,
    JsonMirror,
    Sqlite,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Parkline, Kind::JsonMirror, Kind::Sqlite];

    fn name(self) -> &'static str {
        match self {
            Kind::Parkline => "parkline",
            Kind::JsonMirror => "json_mirror_load",
            Kind::Sqlite => "sqlite_wal_load",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// Opens what a crash left in `dir`, as the daemon does when it starts; returns the lines held.
fn recover(kind: Kind, dir: &Path) -> usize {
    match kind {
        Kind::Parkline => {
            let queue = match Queue::open(dir.join(MIRROR)) {
                Ok(queue) => queue,
                // Seen once in a tight open/drop loop on the shared machine: the lock of the
                // previous open, already dropped, still held. Counted and reported, not hidden.
                Err(e) if e.kind() == ErrorKind::Locked => {
                    LOCKED_RETRIES.fetch_add(1, Ordering::Relaxed);
                    Queue::open(dir.join(MIRROR)).expect("recover after a locked retry")
                }
                Err(e) => panic!("recover: {e}"),
            };
            let in_flight = queue.in_flight().map_or(0, |batch| batch.items.len());
            queue.parked().len() + in_flight
        }
        Kind::JsonMirror => JsonMirror::load(dir).expect("load").lines().len(),
        Kind::Sqlite => SqliteQueue::open(&dir.join(SQLITE))
            .expect("open")
            .load()
            .expect("load")
            .len(),
    }
}

/// Builds the mirror of `n` lines for `kind` in a fresh directory, durable, as a crash left it.
fn build(kind: Kind, n: u64) -> TempDir {
    let dir = bench_dir().expect("temporary directory");
    match kind {
        Kind::Parkline => {
            let (mut queue, counts) =
                fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
            let budget = (0..IN_FLIGHT as u64)
                .map(|i| completion_line(i).chars().count() + 1)
                .sum();
            let batch = queue.boundary(Budget(budget)).expect("boundary");
            let held = batch.map_or(0, |batch| batch.items.len());
            assert_eq!(held, IN_FLIGHT.min(n as usize), "the in-flight batch");
            assert!(counts.snapshot().syncs >= 1, "the batch was persisted");
            drop(queue); // the crash: no settle
        }
        Kind::JsonMirror => {
            let mut mirror = JsonMirror::new(dir.path());
            mirror.extend((0..n).map(mirror_line));
            mirror.persist().expect("write");
        }
        Kind::Sqlite => {
            let mut queue = SqliteQueue::open(&dir.path().join(SQLITE)).expect("sqlite");
            queue
                .park_many((0..n).map(|i| (i, completion_line(i))))
                .expect("fixture");
        }
    }
    sync_dir_tree(dir.path()).expect("fsync");
    dir
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| meta.len())
        .sum()
}

/// Runs in the child: opens once and prints `<VmRSS before KiB> <VmHWM after KiB> <lines>`.
fn child(spec: &str) {
    let (kind, dir) = spec.split_once(':').expect("kind:dir");
    let kind = Kind::from_name(kind).expect("known kind");
    let before = memory::status_kib("VmRSS").expect("VmRSS");
    memory::reset_peak().ok();
    let lines = recover(kind, Path::new(dir));
    let peak = memory::status_kib("VmHWM").expect("VmHWM");
    println!("{before} {peak} {lines}");
}

fn peak_growth_kib(kind: Kind, dir: &Path) -> (u64, u64) {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(CHILD_ENV, format!("{}:{}", kind.name(), dir.display()))
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    let [before, peak, lines] = fields[..] else {
        panic!(
            "child said {text:?}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    (peak.saturating_sub(before), lines)
}

fn bench_recovery(c: &mut Criterion) {
    let fixtures: Vec<(Kind, u64, TempDir)> = LINES
        .iter()
        .flat_map(|&n| Kind::ALL.map(|kind| (kind, n, build(kind, n))))
        .collect();
    for (kind, n, dir) in &fixtures {
        let line_bytes: u64 = (0..*n).map(|i| completion_line(i).len() as u64).sum();
        let (growth_kib, lines) = peak_growth_kib(*kind, dir.path());
        assert_eq!(lines, *n, "{} recovered every line", kind.name());
        println!(
            "recovery memory: {} {n} lines: {:.2} MiB on disk, {:.2} MiB of line bytes, \
             peak RSS growth {:.2} MiB ({:.1}x the line bytes)",
            kind.name(),
            dir_bytes(dir.path()) as f64 / 1048576.0,
            line_bytes as f64 / 1048576.0,
            growth_kib as f64 / 1024.0,
            (growth_kib * 1024) as f64 / line_bytes as f64,
        );
    }

    let mut group = c.benchmark_group("recovery");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (kind, n, dir) in &fixtures {
        let path: PathBuf = dir.path().to_path_buf();
        group.throughput(Throughput::Elements(*n));
        group.bench_function(BenchmarkId::new(kind.name(), n), |b| {
            b.iter(|| black_box(recover(*kind, &path)))
        });
    }
    group.finish();
    println!(
        "recovery: {} reopen(s) refused as locked after the previous handle was dropped",
        LOCKED_RETRIES.load(Ordering::Relaxed)
    );
}

criterion::criterion_group!(benches, bench_recovery);

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
