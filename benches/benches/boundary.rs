//! A boundary on a real file: batch, hand-over (turn text and notified events), settle, for 1,
//! 10, 100, 1,000 and 10,000 parked lines. Time per line, and fsyncs per boundary counted by a
//! [`Counting`](parkline_benches::counting::Counting) storage around `parkline::FsStorage`.
//!
//! Baselines in the same run: the floor (the two durability points a crash-safe boundary needs,
//! batch written before the hand-over and cleared after: two small writes, two fsyncs), SQLite
//! (WAL, `synchronous=FULL`: one transaction marks and reads the batch, one delete clears it),
//! and today's pop-front `deferred-input.json` (one whole-file rewrite per delivered line; up to
//! 100 lines, beyond which one boundary takes seconds). Before the criterion measurements the
//! contenders take turns, one boundary each per round ([`parkline_benches::interleave`]; 150
//! rounds at 1 and 10 lines, 60 at 100, 40 at 1,000, 20 at 10,000), and for each size the bench
//! prints the medians, the quartiles, and the median and quartiles of the per-round ratios. It
//! writes the chart `benches/boundary-per-line.svg` (time per line against lines, log-log, every
//! contender, quartile bars) from the same rounds. Every fixture is built untimed and discarded
//! with its deletion synced ([`parkline_benches::fixture::discard`]), so no timed fsync commits
//! another contender's leftovers. `cargo bench -p parkline-benches --bench boundary --
//! interleaved-only` runs the interleaved pass and the chart alone (about a minute).
//!
//! Measured 2026-12-03 (that command, shared 2-core VM, ext4), parkline / floor, median of the
//! per-round ratios (quartiles): 1 line 0.95x (0.89-1.00), 10 lines 0.99x (0.95-1.03), 100 lines
//! 1.07x (0.99-1.13), 1,000 lines 3.13x (2.98-3.34), 10,000 lines 18.8x (8.6-21.1). SQLite is
//! 1.28-1.9x parkline at every size; today's pop-front 1.45x at 1 line, 14x at 10 and 136x at 100.
//!
//! Why 1 line was once reported at 2.16x: the disk. At 1 line parkline does what the floor does,
//! 2 appends (145 bytes) and 2 file fsyncs, with about 14,000 instructions of CPU (profile
//! driver, callgrind), and the quartiles above straddle 1 (parkline's boundary 394-472 us, the
//! floor's 420-505 us). The 2.16x was a ratio of medians from sequential criterion runs, each
//! landing in a different minute of a disk whose fsync ranged from 0.35 to 4 ms that day.
//!
//! What the ratio measures from about 240 lines on is the crate (profile driver, strace and
//! callgrind): the settle compacts (M12: the delivered lines exceed the 64 KiB slack), so a temp
//! file is created, written, fsynced, renamed over the mirror, and the directory fsynced: 3
//! fsyncs, a create and a rename against the floor's 2 fsyncs (2.2-3x at 1,000 lines). At 10,000
//! lines CPU shows too: 23 M instructions and an 8 MB heap peak. `Core::boundary` clones every
//! line into the returned batch (2.8 M) and counts each line's characters again for the split
//! (2.3 M); the settle clones the whole state to size the compaction snapshot (3.0 M), builds a
//! `BTreeSet` of the delivered seqs twice (3.5 M and again in `commit`, 5.9 M with the apply),
//! and serialises 10,000 seqs in the batch and settle records (0.85 M each). The 10,000-line
//! quartiles are wide (8.6-21x) because the floor's own fsyncs there ranged 350-800 us.
//!
//! Since then the settle copies only what the compaction decision applies itself to (the lines
//! it delivers are left out of the copy) and finds the delivered lines by one merge walk
//! instead of a `BTreeSet` (`profile boundary 10000` under callgrind: `Queue::settle` 16.4 M ->
//! 4.6 M instructions, boundary + text + settle 24.8 M -> 13.0 M, heap peak 8.3 -> 5.9 MB).
//! What is left at 10,000 lines: `Core::boundary` (5.6 M: each line cloned into the returned
//! batch, 2.8 M, and its characters counted for the split, 2.3 M), the turn text (1.5 M, one
//! pass and its CRC), the settle's apply dropping 10,000 lines, and the third fsync of the
//! compaction, which the floor never pays.
//!
//! Then the default slack went from 64 KiB to 4 MiB (`COMPACT_SLACK_BYTES`, spec M12 "Why 4
//! MiB"), so no fixture here compacts any more (10,000 completion lines are about 2.8 MB of
//! log). The compaction did not go away: a daemon pays it once per 4 MiB of records. The table
//! bench's steady-state rows count it (one queue for every round, n lines parked before each
//! boundary, ratio of the totals). Measured 2026-12-03 20:30 UTC, `--bench table`, 120 rounds
//! each, 1,000 lines: with slack 64 KiB 3.11x the floor (120 compactions), 4 MiB 2.29x (8), no
//! compaction at all 1.87x; so one compaction of an emptied 4 MiB log costs about 1.25 ms (the
//! temp file's fsync, the rename over the old file, whose blocks are freed, and the directory
//! fsync). A fresh queue's 1,000-line boundary is 1.45x; why the steady queue's rounds that do
//! not compact cost more (1.77-1.92x) is not known (same records, same fsyncs; the file is
//! larger and the parks just before are flushed by the fixture's sync).
//!
//! 2026-12-04 (this command 18:31 UTC, machine idle): parkline / floor 0.91x at 1 line, 0.92x at
//! 10, 1.08x at 100, 1.33x at 1,000, 4.85x at 10,000; SQLite / parkline 1.71x to 12.19x, the
//! pop-front rewrite / parkline 1.67x at 1 line, 16.75x at 10 and 150x at 100. Where the rest goes
//! (the profile driver's `boundary-phases` mode, and the table bench's third contender, a floor
//! that appends as many bytes as parkline's two records): format 2's records name every seq
//! (3,961 + 3,966 bytes at 1,000 lines, 48,962 + 48,967 at 10,000), and appending that many bytes
//! with the same two fsyncs is already 1.11x the floor at 1,000 lines and 1.49x at 10,000; the
//! rest is CPU, which at 10,000 lines is memory more than instructions (about 5.4 M instructions
//! in about 1.2 ms: the 2 MB turn text copied from 10,000 separate allocations, the batch's and
//! the events' 10,000-entry vectors, 10,000 lines freed after the settle). A fresh 2 MB `String`
//! per turn text cost about 1 ms of page faults in some processes here (minor faults, about 2 us
//! each on this VM) against 0.1-0.3 ms of render, so the boundary above writes the text into a
//! buffer kept from one boundary to the next (`Batch::write_text`), as a daemon would.

#[path = "support/sqlite.rs"]
mod sqlite;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use parkline_benches::boundary;
use parkline_benches::counting::Counts;
use parkline_benches::fixture::{self, CountedQueue, bench_dir, completion_line, mirror_line};
use parkline_benches::floor::AppendFloor;
use parkline_benches::interleave::{self, Quartiles};
use parkline_benches::json_mirror::JsonMirror;
use parkline_benches::plot::{self, Labels, Series};
use tempfile::TempDir;

use sqlite::SqliteQueue;

const LINES: [u64; 5] = [1, 10, 100, 1_000, 10_000];
const JSON_LINES_MAX: u64 = 100;
/// Where the chart of the interleaved pass is written (committed; docs/performance.md links it).
const CHART: &str = "boundary-per-line.svg";

struct Fixture {
    _dir: TempDir,
    queue: CountedQueue,
    counts: Counts,
}

fn fixture(n: u64) -> Fixture {
    let dir = bench_dir().expect("temporary directory");
    let (queue, counts) =
        fixture::parked_queue(&dir.path().join("s966.mirror"), n).expect("fixture");
    Fixture {
        _dir: dir,
        queue,
        counts,
    }
}

fn report_fsyncs() {
    for n in LINES {
        let mut f = fixture(n);
        let before = f.counts.snapshot();
        let delivered = boundary::parkline(&mut f.queue, &mut String::new());
        let cost = f.counts.snapshot().since(before);
        assert_eq!(delivered as u64, n, "the whole fixture fits the budget");
        assert!(f.queue.parked().is_empty(), "a settled boundary clears");
        println!(
            "boundary fsyncs: {n} lines: {} fsyncs per boundary ({} file, {} directory), {} bytes appended",
            cost.fsyncs(),
            cost.syncs,
            cost.dir_syncs,
            cost.appended_bytes
        );
        fixture::discard(f).expect("sync the deletion");
    }
}

fn json_fixture(n: u64) -> (TempDir, JsonMirror) {
    let dir = bench_dir().expect("temporary directory");
    let mut mirror = JsonMirror::new(dir.path());
    mirror.extend((0..n).map(mirror_line));
    mirror.persist().expect("write");
    (dir, mirror)
}

fn floor_fixture() -> (TempDir, AppendFloor) {
    let dir = bench_dir().expect("temporary directory");
    let floor = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
    (dir, floor)
}

fn sqlite_fixture(n: u64) -> (TempDir, SqliteQueue) {
    let dir = bench_dir().expect("temporary directory");
    let mut queue = SqliteQueue::open(&dir.path().join("parked.sqlite")).expect("sqlite");
    queue
        .park_many((0..n).map(|i| (i, completion_line(i))))
        .expect("fixture");
    fixture::sync_dir_tree(dir.path()).expect("fsync");
    (dir, queue)
}

/// Builds a fixture (untimed), times `op` on it, and discards it with its deletion synced
/// (untimed), so no timed fsync commits another contender's leftovers.
fn timed<F>(build: impl FnOnce() -> F, op: impl FnOnce(&mut F)) -> Duration {
    let mut f = build();
    let start = Instant::now();
    op(&mut f);
    let elapsed = start.elapsed();
    fixture::discard(f).expect("sync the deletion");
    elapsed
}

fn parkline_once(n: u64, turn: &mut String) -> Duration {
    timed(
        || fixture(n),
        |f| {
            boundary::parkline(&mut f.queue, turn);
        },
    )
}

fn floor_once(n: u64) -> Duration {
    timed(floor_fixture, |(_, floor)| boundary::floor(floor, n))
}

fn sqlite_once(n: u64) -> Duration {
    timed(
        || sqlite_fixture(n),
        |(_, queue)| {
            let lines = queue.boundary(1).expect("batch");
            black_box(&lines);
            let cleared = queue.settle(1).expect("clear");
            assert_eq!(cleared as u64, n, "sqlite cleared the batch");
        },
    )
}

fn json_once(n: u64) -> Duration {
    timed(
        || json_fixture(n),
        |(_, mirror)| {
            while let Some(line) = mirror.pop_front().expect("rewrite") {
                black_box(line);
            }
        },
    )
}

/// Rounds per size: enough at the small sizes, where one fsync's noise is the whole figure, for
/// quartiles to mean something; fewer where one round takes long (today's pop-front rewrites
/// the mirror once per line, and a 10,000-line fixture takes a while to build).
fn rounds_for(n: u64) -> usize {
    interleave::rounds(match n {
        0..=10 => 150,
        11..=100 => 60,
        101..=1_000 => 40,
        _ => 20,
    })
}

/// parkline's boundary, its floor, SQLite and today's pop-front (up to 100 lines) taking turns,
/// one boundary each per round: the ratios docs/performance.md reports, and the chart.
fn report_interleaved() {
    let names = ["parkline", "floor", "sqlite", "json pop-front"];
    let mut chart: Vec<Vec<(f64, Quartiles)>> = vec![Vec::new(); names.len()];
    // The daemon's turn buffer, kept across boundaries (`boundary::parkline`).
    let mut turn = String::new();
    for n in LINES {
        let rounds = rounds_for(n);
        let t = if n <= JSON_LINES_MAX {
            interleave::samples(
                rounds,
                &mut [
                    &mut || parkline_once(n, &mut turn),
                    &mut || floor_once(n),
                    &mut || sqlite_once(n),
                    &mut || json_once(n),
                ],
            )
        } else {
            interleave::samples(
                rounds,
                &mut [
                    &mut || parkline_once(n, &mut turn),
                    &mut || floor_once(n),
                    &mut || sqlite_once(n),
                ],
            )
        };
        let q: Vec<Quartiles> = t.iter().map(|t| Quartiles::of_durations(t)).collect();
        for (k, q) in q.iter().enumerate() {
            chart[k].push((n as f64, q.scaled(n as f64)));
        }
        let r = Quartiles::of_ratios(&t[0], &t[1]);
        let others: String = (2..t.len())
            .map(|k| {
                let r = Quartiles::of_ratios(&t[k], &t[0]);
                format!(
                    ", {} {:.1} us ({:.2}x parkline, per-round quartiles {:.2} {:.2} {:.2})",
                    names[k], q[k].median, r.median, r.q1, r.median, r.q3
                )
            })
            .collect();
        println!(
            "boundary interleaved: {n} lines, {rounds} rounds, medians: parkline {:.1} us ({:.2} us per line), floor {:.1} us; parkline/floor {:.2}x, per-round quartiles {:.2} {:.2} {:.2}; quartiles parkline {:.0} {:.0} {:.0} us, floor {:.0} {:.0} {:.0} us{others}",
            q[0].median,
            q[0].median / n as f64,
            q[1].median,
            r.median,
            r.q1,
            r.median,
            r.q3,
            q[0].q1,
            q[0].median,
            q[0].q3,
            q[1].q1,
            q[1].median,
            q[1].q3,
        );
    }
    let colours = ["#1f77b4", "#555555", "#2ca02c", "#d62728"];
    let labels = [
        "parkline",
        "floor: 2 x (write + fsync)",
        "SQLite WAL FULL",
        "JSON rewrite (pop-front)",
    ];
    let series: Vec<Series> = chart
        .into_iter()
        .zip(labels.iter().zip(colours))
        .map(|(points, (name, colour))| Series {
            name: (*name).to_owned(),
            colour,
            points,
        })
        .collect();
    let subtitle = format!(
        "{}, interleaved rounds on a shared 2-core VM (ext4); cargo bench -p parkline-benches --bench boundary",
        plot::utc_date_today()
    );
    let svg = plot::log_log(
        Labels {
            title: "Boundary cost per line (batch, hand-over, settle)",
            subtitle: &subtitle,
            x: "lines in the boundary",
            y: "time per line",
        },
        &series,
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CHART);
    std::fs::write(&path, svg).expect("write the chart");
    println!("boundary chart: {}", path.display());
}

fn bench_boundary(c: &mut Criterion) {
    report_fsyncs();
    report_interleaved();
    let mut group = c.benchmark_group("boundary");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let each = |iters: u64, once: &mut dyn FnMut() -> Duration| (0..iters).map(|_| once()).sum();
    let mut turn = String::new();
    for n in LINES {
        group.throughput(Throughput::Elements(n));
        group.bench_function(BenchmarkId::new("parkline", n), |b| {
            b.iter_custom(|iters| each(iters, &mut || parkline_once(n, &mut turn)))
        });
        group.bench_function(BenchmarkId::new("floor_two_fsyncs", n), |b| {
            b.iter_custom(|iters| each(iters, &mut || floor_once(n)))
        });
        group.bench_function(BenchmarkId::new("sqlite_wal_full", n), |b| {
            b.iter_custom(|iters| each(iters, &mut || sqlite_once(n)))
        });
        if n <= JSON_LINES_MAX {
            group.bench_function(BenchmarkId::new("json_mirror_pop_front", n), |b| {
                b.iter_custom(|iters| each(iters, &mut || json_once(n)))
            });
        }
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_boundary);
criterion::criterion_main!(benches);
