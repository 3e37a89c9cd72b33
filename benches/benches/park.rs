//! Durable park on a real file: parkline against the write + fsync floor, today's whole-JSON
//! mirror rewrite, and SQLite (WAL, `synchronous=FULL`), with 1, 13, 100 and 1,000 lines already
//! parked.
//!
//! Before the criterion measurements, the four contenders take turns, one park each per round
//! ([`parkline_benches::interleave`]), and the medians and ratios are printed: on a shared disk
//! those are the ratios to report.
//!
//! Each queue is kept between N and N + SLACK parked lines: when a fixture reaches N + SLACK it is
//! rebuilt (untimed), so "N already parked" holds throughout the measurement.
//!
//! Profile (2026-12-03, `profile park` and `profile park-floors` of `benches/benches/profile.rs`):
//! a park is one `write` of its 272-278-byte record and one `fsync`, nothing else (strace), and
//! 7,800 instructions (about 3 us, three quarters of it serde_json encoding the record), the same
//! at 1 and at 1,000 parked. Interleaved with the floor alone (300 rounds, 1 and 1,000 parked)
//! parkline was 1.01-1.03x the floor, and equal to a floor writing as many bytes as its record.
//! So the 1.07-1.13x this bench printed comes from the bench's conditions, not from parkline's
//! work. A suspect, not yet confirmed: the rebuild in `one_park` drops the old fixture (a 275 KB
//! mirror at 1,000) after the new one is built and synced, and nothing syncs that deletion, so
//! the next timed fsync commits it; each contender pays for its own rebuild, but the bytes and
//! directory entries freed differ from one contender to the next.

#[path = "support/sqlite.rs"]
mod sqlite;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use parkline::RequestId;
use parkline_benches::counting::Counts;
use parkline_benches::fixture::{self, CountedQueue, bench_dir, completion_line, mirror_line};
use parkline_benches::floor::AppendFloor;
use parkline_benches::interleave;
use parkline_benches::json_mirror::JsonMirror;
use tempfile::TempDir;

use sqlite::SqliteQueue;

const PARKED: [u64; 4] = [1, 13, 100, 1_000];
const SLACK: u64 = 16;

struct ParklineFixture {
    _dir: TempDir,
    queue: CountedQueue,
    counts: Counts,
}

fn parkline_fixture(n: u64) -> ParklineFixture {
    let dir = bench_dir().expect("temporary directory");
    let (queue, counts) =
        fixture::parked_queue(&dir.path().join("s966.mirror"), n).expect("fixture");
    ParklineFixture {
        _dir: dir,
        queue,
        counts,
    }
}

struct FloorFixture {
    _dir: TempDir,
    floor: AppendFloor,
    lines: u64,
}

fn floor_fixture(n: u64) -> FloorFixture {
    let dir = bench_dir().expect("temporary directory");
    let mut floor = AppendFloor::create(&dir.path().join("floor.log")).expect("floor file");
    for i in 0..n {
        floor.append(&completion_line(i)).expect("append");
    }
    floor.sync().expect("fsync");
    FloorFixture {
        _dir: dir,
        floor,
        lines: n,
    }
}

struct JsonFixture {
    _dir: TempDir,
    mirror: JsonMirror,
}

fn json_fixture(n: u64) -> JsonFixture {
    let dir = bench_dir().expect("temporary directory");
    let mut mirror = JsonMirror::new(dir.path());
    mirror.extend((0..n).map(mirror_line));
    mirror.persist().expect("write");
    JsonFixture { _dir: dir, mirror }
}

struct SqliteFixture {
    _dir: TempDir,
    queue: SqliteQueue,
}

fn sqlite_fixture(n: u64) -> SqliteFixture {
    let dir = bench_dir().expect("temporary directory");
    let mut queue = SqliteQueue::open(&dir.path().join("parked.sqlite")).expect("sqlite");
    queue
        .park_many((0..n).map(|i| (i, completion_line(i))))
        .expect("fixture");
    SqliteFixture { _dir: dir, queue }
}

/// Times `iters` parks, rebuilding the fixture (untimed) whenever it holds N + SLACK lines.
fn timed_parks<F>(
    iters: u64,
    n: u64,
    build: impl Fn(u64) -> F,
    len: impl Fn(&F) -> u64,
    mut park: impl FnMut(&mut F, u64, &str),
) -> Duration {
    let mut fixture = build(n);
    let mut total = Duration::ZERO;
    for k in 0..iters {
        if len(&fixture) >= n + SLACK {
            fixture = build(n);
        }
        let request = 1_000_000 + k;
        let line = completion_line(request);
        let start = Instant::now();
        park(&mut fixture, request, black_box(&line));
        total += start.elapsed();
    }
    total
}

fn report_parkline_costs() {
    let mut fixture = parkline_fixture(13);
    let before = fixture.counts.snapshot();
    fixture
        .queue
        .park(RequestId(99), &completion_line(99))
        .expect("park");
    let park = fixture.counts.snapshot().since(before);
    assert!(
        park.syncs >= 1,
        "a durable park must fsync the mirror; measured {park:?}"
    );
    println!(
        "park costs: parkline {} fsyncs ({} file, {} directory), {} bytes appended for a {}-byte line",
        park.fsyncs(),
        park.syncs,
        park.dir_syncs,
        park.appended_bytes,
        completion_line(99).len() + 1
    );
}

/// One timed park on `fixture`, rebuilding it first (untimed) when it holds N + SLACK lines.
fn one_park<F>(
    fixture: &mut F,
    n: u64,
    request: &mut u64,
    build: &impl Fn(u64) -> F,
    len: &impl Fn(&F) -> u64,
    park: &mut impl FnMut(&mut F, u64, &str),
) -> Duration {
    if len(fixture) >= n + SLACK {
        *fixture = build(n);
    }
    *request += 1;
    let line = completion_line(*request);
    let start = Instant::now();
    park(fixture, *request, black_box(&line));
    start.elapsed()
}

/// The same four parks taking turns, one each per round: the ratios the README reports.
fn report_interleaved() {
    let rounds = interleave::rounds(150);
    for n in PARKED {
        let (mut p, mut f, mut j, mut s) = (
            parkline_fixture(n),
            floor_fixture(n),
            json_fixture(n),
            sqlite_fixture(n),
        );
        let first: u64 = 2_000_000;
        let (mut rp, mut rf, mut rj, mut rs) = (first, first, first, first);
        let mut parkline = || {
            one_park(
                &mut p,
                n,
                &mut rp,
                &parkline_fixture,
                &|f: &ParklineFixture| f.queue.parked().len() as u64,
                &mut |f: &mut ParklineFixture, r, line| {
                    f.queue.park(RequestId(r), line).expect("park");
                },
            )
        };
        let mut floor = || {
            one_park(
                &mut f,
                n,
                &mut rf,
                &floor_fixture,
                &|f: &FloorFixture| f.lines,
                &mut |f: &mut FloorFixture, _, line| {
                    f.floor.append_durable(line).expect("write + fsync");
                    f.lines += 1;
                },
            )
        };
        let mut json = || {
            one_park(
                &mut j,
                n,
                &mut rj,
                &json_fixture,
                &|f: &JsonFixture| f.mirror.lines().len() as u64,
                &mut |f: &mut JsonFixture, r, line| f.mirror.park(r, line).expect("rewrite"),
            )
        };
        let mut sqlite = || {
            one_park(
                &mut s,
                n,
                &mut rs,
                &sqlite_fixture,
                &|f: &SqliteFixture| f.queue.len().expect("count"),
                &mut |f: &mut SqliteFixture, r, line| f.queue.park(r, line).expect("insert"),
            )
        };
        let m = interleave::medians(
            rounds,
            &mut [&mut parkline, &mut floor, &mut json, &mut sqlite],
        );
        println!(
            "park interleaved: {n} parked, {rounds} rounds, medians: parkline {:.1} us, floor {:.1} us, json {:.1} us, sqlite {:.1} us; parkline/floor {:.2}x, json/parkline {:.2}x, sqlite/parkline {:.2}x",
            us(m[0]),
            us(m[1]),
            us(m[2]),
            us(m[3]),
            us(m[0]) / us(m[1]),
            us(m[2]) / us(m[0]),
            us(m[3]) / us(m[0]),
        );
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn bench_park(c: &mut Criterion) {
    report_parkline_costs();
    report_interleaved();
    let mut group = c.benchmark_group("park");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in PARKED {
        group.bench_function(BenchmarkId::new("parkline", n), |b| {
            b.iter_custom(|iters| {
                timed_parks(
                    iters,
                    n,
                    parkline_fixture,
                    |f| f.queue.parked().len() as u64,
                    |f, request, line| {
                        f.queue.park(RequestId(request), line).expect("park");
                    },
                )
            })
        });
        group.bench_function(BenchmarkId::new("floor_write_fsync", n), |b| {
            b.iter_custom(|iters| {
                timed_parks(
                    iters,
                    n,
                    floor_fixture,
                    |f| f.lines,
                    |f, _, line| {
                        f.floor.append_durable(line).expect("write + fsync");
                        f.lines += 1;
                    },
                )
            })
        });
        group.bench_function(BenchmarkId::new("json_mirror_rewrite", n), |b| {
            b.iter_custom(|iters| {
                timed_parks(
                    iters,
                    n,
                    json_fixture,
                    |f| f.mirror.lines().len() as u64,
                    |f, request, line| f.mirror.park(request, line).expect("rewrite"),
                )
            })
        });
        group.bench_function(BenchmarkId::new("sqlite_wal_full", n), |b| {
            b.iter_custom(|iters| {
                timed_parks(
                    iters,
                    n,
                    sqlite_fixture,
                    |f| f.queue.len().expect("count"),
                    |f, request, line| f.queue.park(request, line).expect("insert"),
                )
            })
        });
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_park);
criterion::criterion_main!(benches);
