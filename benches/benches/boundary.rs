//! A boundary on a real file: batch, hand-over (turn text and notified events), settle, for 1,
//! 13, 100, 1,000 and 10,000 parked lines. Time per line, and fsyncs per boundary counted by a
//! [`Counting`](parkline_benches::counting::Counting) storage around `parkline::FsStorage`.
//!
//! Baselines in the same run: the floor (the two durability points a crash-safe boundary needs,
//! batch written before the hand-over and cleared after: two small writes, two fsyncs), and today's
//! pop-front `deferred-input.json` (one whole-file rewrite per delivered line; up to 100 lines,
//! beyond which one boundary takes seconds). Before the criterion measurements, parkline and the
//! floor (and today's pop-front up to 13 lines) take turns, one boundary each per round, and the
//! medians and ratios are printed ([`parkline_benches::interleave`]).
//!
//! Profile (2026-12-03, `profile boundary N` of `benches/benches/profile.rs`, strace and callgrind):
//! at 1 and 13 lines a boundary is 2 appends (145 / 201 bytes) and 2 file fsyncs, like the floor,
//! and 14,000 instructions of CPU (a few microseconds): the 2.16x once reported at 1 line is the
//! disk, not parkline (this bench's interleaved pass gave 1.05x at 1 line and 0.81x at 13 the
//! same day, with fsync latencies from 0.35 to 4 ms between rows). From about 240 lines on, the
//! settle compacts (M12: the delivered lines exceed the 64 KiB slack): a temp file is created,
//! written, fsynced, renamed over the mirror, and the directory fsynced, so the boundary costs 3
//! fsyncs, a create and a rename against the floor's 2 fsyncs; that is most of 2.2-3x at 1,000
//! lines (725,000 instructions for the boundary, 1.46 M for the settle). At 10,000 lines CPU
//! shows too: 23 M instructions and an 8 MB heap peak. `Core::boundary` clones every line into
//! the returned batch (2.8 M) and counts each line's characters again for the split (2.3 M);
//! the settle clones the whole state to size the compaction snapshot (3.0 M), builds a
//! `BTreeSet` of the delivered seqs twice (3.5 M and again in `commit`, 5.9 M with the apply),
//! and serialises 10,000 seqs in the batch and settle records (0.85 M each).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput};
use parkline::{Budget, Outcome};
use parkline_benches::counting::Counts;
use parkline_benches::fixture::{self, CountedQueue, bench_dir, mirror_line};
use parkline_benches::floor::AppendFloor;
use parkline_benches::interleave;
use parkline_benches::json_mirror::JsonMirror;
use tempfile::TempDir;

const LINES: [u64; 5] = [1, 13, 100, 1_000, 10_000];
const JSON_LINES_MAX: u64 = 100;
/// Large enough for every fixture's batch to be delivered whole.
const BUDGET: Budget = Budget(usize::MAX);

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

/// One boundary as the daemon runs it: batch, turn text and notified events, settle all
/// delivered. Returns the number of lines delivered.
fn boundary(queue: &mut CountedQueue) -> usize {
    let batch = queue.boundary(BUDGET).expect("boundary").expect("a batch");
    let text = batch.text();
    let notified = batch.notified();
    black_box((&text, &notified));
    let outcomes = vec![Outcome::Delivered; batch.items.len()];
    queue.settle(batch.id, &outcomes).expect("settle");
    batch.items.len()
}

fn report_fsyncs() {
    for n in LINES {
        let mut f = fixture(n);
        let before = f.counts.snapshot();
        let delivered = boundary(&mut f.queue);
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

fn floor_boundary(floor: &mut AppendFloor, n: u64) {
    floor
        .append_durable(&format!("batch 1: seqs 1..={n}"))
        .expect("write + fsync");
    floor
        .append_durable("batch 1: settled, all delivered")
        .expect("write + fsync");
}

/// parkline's boundary and its floor (and today's pop-front up to 13 lines) taking turns, one
/// boundary each per round: the ratios the README reports.
fn report_interleaved() {
    for n in LINES {
        let rounds = interleave::rounds(if n >= 10_000 { 20 } else { 60 });
        let mut parkline = || {
            let mut f = fixture(n);
            let start = Instant::now();
            boundary(&mut f.queue);
            start.elapsed()
        };
        let mut floor = || {
            let (_dir, mut floor) = floor_fixture();
            let start = Instant::now();
            floor_boundary(&mut floor, n);
            start.elapsed()
        };
        let mut json = || {
            let (_dir, mut mirror) = json_fixture(n);
            let start = Instant::now();
            while let Some(line) = mirror.pop_front().expect("rewrite") {
                black_box(line);
            }
            start.elapsed()
        };
        let m = if n <= 13 {
            interleave::medians(rounds, &mut [&mut parkline, &mut floor, &mut json])
        } else {
            interleave::medians(rounds, &mut [&mut parkline, &mut floor])
        };
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let json = m
            .get(2)
            .map(|&j| {
                format!(
                    ", json pop-front {:.1} us ({:.2}x parkline)",
                    us(j),
                    us(j) / us(m[0])
                )
            })
            .unwrap_or_default();
        println!(
            "boundary interleaved: {n} lines, {rounds} rounds, medians: parkline {:.1} us ({:.2} us per line), floor {:.1} us; parkline/floor {:.2}x{json}",
            us(m[0]),
            us(m[0]) / n as f64,
            us(m[1]),
            us(m[0]) / us(m[1]),
        );
    }
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
    for n in LINES {
        group.throughput(Throughput::Elements(n));
        group.bench_function(BenchmarkId::new("parkline", n), |b| {
            b.iter_batched_ref(
                || fixture(n),
                |f| boundary(&mut f.queue),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(BenchmarkId::new("floor_two_fsyncs", n), |b| {
            // The two durability points a crash-safe boundary needs: the batch is durable before
            // it is handed over, its clearing after. Each is one small record and one fsync.
            let written = format!("batch 1: seqs 1..={n}");
            let cleared = "batch 1: settled, all delivered".to_owned();
            b.iter_batched_ref(
                || {
                    let dir = bench_dir().expect("temporary directory");
                    let floor = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
                    (dir, floor)
                },
                |(_, floor)| {
                    floor
                        .append_durable(black_box(&written))
                        .expect("write + fsync");
                    floor
                        .append_durable(black_box(&cleared))
                        .expect("write + fsync");
                },
                BatchSize::PerIteration,
            )
        });
        if n <= JSON_LINES_MAX {
            group.bench_function(BenchmarkId::new("json_mirror_pop_front", n), |b| {
                b.iter_batched_ref(
                    || {
                        let dir = bench_dir().expect("temporary directory");
                        let mut mirror = JsonMirror::new(dir.path());
                        mirror.extend((0..n).map(mirror_line));
                        mirror.persist().expect("write");
                        (dir, mirror)
                    },
                    |(_, mirror)| {
                        while let Some(line) = mirror.pop_front().expect("rewrite") {
                            black_box(line);
                        }
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_boundary);
criterion::criterion_main!(benches);
