//! Every row of the performance table (docs/performance.md) in one run, each beside its same-run
//! baseline, printed as a Markdown table to paste (with the date):
//!
//! ```text
//! nice -n 5 cargo bench -p parkline-benches --bench table
//! ```
//!
//! No criterion: each row is a set of interleaved rounds ([`parkline_benches::interleave`]), the
//! contenders taking turns one operation each, and the ratio reported is the median of the
//! per-round ratios with its quartiles. A ratio of two medians taken from different rounds
//! swings by several percent from one pass to the next on this disk (the park bench's header
//! has the measurement); the per-round ratio does not. `PARKLINE_BENCH_ROUNDS` overrides every
//! row's rounds. `PARKLINE_TABLE_ONLY_THREADS` stops after the rows of many threads parking
//! (and their chart); `PARKLINE_TABLE_ONLY_STEADY` runs the two steady-state boundary rows
//! alone. Under a minute on the shared 2-core VM (23 s on 2026-12-03 with fewer rounds).
//!
//! The rows:
//! - durable park / floor (one `write` + `fsync` of the line), 0 and 1,000 already parked;
//! - recovery of 100,000 parked lines (13 in flight) / loading today's whole-JSON mirror of the
//!   same lines, and / reading the mirror file and CRC-ing all its bytes (the floor of any
//!   checksummed recovery, whatever the record layout);
//! - recovery's heap peak / the line bytes it holds, measured in a fresh child process (this
//!   binary, re-executed) with the counting allocator, and its resident-set growth beside it;
//! - boundary (batch, hand-over, settle) / floor (2 x (write + fsync)), at 1, 1,000 and 10,000,
//!   each on a fresh queue, with the daemon's turn buffer kept from one boundary to the next;
//!   beside them, in the same rounds, a third contender that appends as many bytes as parkline's
//!   two records (batch, settle) with two fsyncs, so that the part of the ratio the format's
//!   record sizes impose (that floor / the floor) is told apart from parkline's own (parkline /
//!   that floor); and at 1,000 and 10,000 in steady state (one queue for every round, so the
//!   compactions the 4 MiB slack spreads over many boundaries are counted), as the ratio of the
//!   totals;
//! - with `--features tokio`: 200 tasks released at once, one park each through an `AsyncQueue`
//!   / 200 threads through a `SharedQueue`, the same burst in the same rounds (the async
//!   facade's bound: 1.2x);
//! - a group of N lines parked by one `park_all` / by N `park` calls, and / the floor (one
//!   `write` + `fsync` of the N lines), at N = 13 and 100 (D22);
//! - a drained session's idle call after a boundary of 1,000 lines (the compaction to rest) /
//!   the floor of a whole-file write of the snapshot's bytes (write, fsync, rename, directory
//!   fsync);
//! - start-up: `Store::open_all` of 1,000 idle sessions (two lines parked in each) / the floor
//!   of opening, reading and fsyncing the same 1,000 files plus one directory fsync, and
//!   1,000 `Queue::open` calls (each fsyncing its mirror and the directory) / the same floor.
//!   `PARKLINE_TABLE_ONLY_STARTUP=1` runs these rows alone.
//!
//! Only the public API is used (`Queue`, `Storage` through the fixtures), so the bench keeps
//! compiling while the mirror format changes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parkline::{Budget, ErrorKind, Queue, RequestId, SharedQueue, Store};
use parkline_benches::boundary;
use parkline_benches::contention::{self, Sharing};
use parkline_benches::fixture::{self, CountedQueue, bench_dir, completion_line, mirror_line};
use parkline_benches::floor::{self, AppendFloor};
use parkline_benches::interleave::{self, Quartiles};
use parkline_benches::json_mirror::JsonMirror;
use parkline_benches::memory::{self, Heap};
use parkline_benches::plot::{self, Labels, Series};
use tempfile::TempDir;

#[global_allocator]
static HEAP: Heap = memory::heap();

const MIRROR: &str = "s966.mirror";
const CHILD_ENV: &str = "PARKLINE_TABLE_RECOVERY_CHILD";
const RECOVERY_LINES: u64 = 100_000;
const IN_FLIGHT: u64 = 13;
/// A park fixture is rebuilt when it holds N + SLACK lines, so "N already parked" holds.
const SLACK: u64 = 16;

/// One row of the table.
#[derive(Clone)]
struct Row {
    what: String,
    parkline: String,
    baseline: String,
    ratio: Quartiles,
    rounds: usize,
}

impl Row {
    fn timed(what: String, baseline: &str, rounds: usize, p: &[Duration], b: &[Duration]) -> Row {
        let (qp, qb) = (Quartiles::of_durations(p), Quartiles::of_durations(b));
        Row {
            what,
            parkline: time(qp.median),
            baseline: format!("{baseline} {}", time(qb.median)),
            ratio: Quartiles::of_ratios(p, b),
            rounds,
        }
    }
}

fn time(us: f64) -> String {
    if us >= 1_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{us:.0} µs")
    }
}

// ---- durable park ----

struct ParkQueue {
    dir: Option<TempDir>,
    queue: Option<CountedQueue>,
    n: u64,
    request: u64,
}

impl ParkQueue {
    fn rebuild(&mut self) {
        self.queue = None;
        if let Some(dir) = self.dir.take() {
            fixture::discard(dir).expect("sync the deletion");
        }
        let dir = bench_dir().expect("temporary directory");
        let (queue, _) = fixture::parked_queue(&dir.path().join(MIRROR), self.n).expect("fixture");
        (self.dir, self.queue) = (Some(dir), Some(queue));
    }

    fn park_once(&mut self) -> Duration {
        if self
            .queue
            .as_ref()
            .is_none_or(|q| q.parked().len() as u64 >= self.n + SLACK)
        {
            self.rebuild();
        }
        self.request += 1;
        let line = completion_line(self.request);
        let queue = self.queue.as_mut().expect("built above");
        let start = Instant::now();
        queue.park(RequestId(self.request), &line).expect("park");
        start.elapsed()
    }
}

struct ParkFloor {
    dir: Option<TempDir>,
    floor: Option<AppendFloor>,
    lines: u64,
    n: u64,
    request: u64,
}

impl ParkFloor {
    fn park_once(&mut self) -> Duration {
        if self.floor.is_none() || self.lines >= self.n + SLACK {
            self.floor = None;
            if let Some(dir) = self.dir.take() {
                fixture::discard(dir).expect("sync the deletion");
            }
            let dir = bench_dir().expect("temporary directory");
            let mut floor = AppendFloor::create(&dir.path().join("floor.log")).expect("floor");
            for i in 0..self.n {
                floor.append(&completion_line(i)).expect("append");
            }
            floor.sync().expect("fsync");
            (self.dir, self.floor, self.lines) = (Some(dir), Some(floor), self.n);
        }
        self.request += 1;
        let line = completion_line(self.request);
        let floor = self.floor.as_mut().expect("built above");
        let start = Instant::now();
        floor.append_durable(&line).expect("write + fsync");
        let elapsed = start.elapsed();
        self.lines += 1;
        elapsed
    }
}

// ---- group park ----

/// A fresh mirror per group size, rebuilt once it holds a few thousand lines.
struct GroupQueue {
    dir: Option<TempDir>,
    queue: Option<CountedQueue>,
    request: u64,
}

impl GroupQueue {
    fn queue(&mut self) -> &mut CountedQueue {
        if self
            .queue
            .as_ref()
            .is_none_or(|q| q.parked().len() >= 4_000)
        {
            self.queue = None;
            if let Some(dir) = self.dir.take() {
                fixture::discard(dir).expect("sync the deletion");
            }
            let dir = bench_dir().expect("temporary directory");
            let (queue, _) = fixture::parked_queue(&dir.path().join(MIRROR), 0).expect("fixture");
            (self.dir, self.queue) = (Some(dir), Some(queue));
        }
        self.queue.as_mut().expect("built above")
    }

    fn lines(&mut self, n: u64) -> Vec<(RequestId, String)> {
        (0..n)
            .map(|_| {
                self.request += 1;
                (RequestId(self.request), completion_line(self.request))
            })
            .collect()
    }

    fn park_all_once(&mut self, n: u64) -> Duration {
        let lines = self.lines(n);
        let group: Vec<(RequestId, &str)> = lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
        let queue = self.queue();
        let start = Instant::now();
        queue.park_all(&group).expect("park_all");
        start.elapsed()
    }

    fn park_each_once(&mut self, n: u64) -> Duration {
        let lines = self.lines(n);
        let queue = self.queue();
        let start = Instant::now();
        for (request, line) in &lines {
            queue.park(*request, line).expect("park");
        }
        start.elapsed()
    }

    fn discard(&mut self) {
        self.queue = None;
        if let Some(dir) = self.dir.take() {
            fixture::discard(dir).expect("sync the deletion");
        }
    }
}

fn group_rows(n: u64) -> Vec<Row> {
    let rounds = interleave::rounds(60);
    let mut all = GroupQueue {
        dir: None,
        queue: None,
        request: 0,
    };
    let mut each = GroupQueue {
        dir: None,
        queue: None,
        request: 0,
    };
    let mut floor = ParkFloor {
        dir: None,
        floor: None,
        lines: 0,
        n: 0,
        request: 0,
    };
    let mut floor_group = || {
        let text: String = (0..n).map(|i| completion_line(i) + "\n").collect();
        if floor.floor.is_none() {
            floor.park_once();
        }
        let f = floor.floor.as_mut().expect("built above");
        let start = Instant::now();
        f.append_durable(text.trim_end_matches('\n'))
            .expect("write + fsync");
        start.elapsed()
    };
    let t = interleave::samples(
        rounds,
        &mut [
            &mut || all.park_all_once(n),
            &mut || each.park_each_once(n),
            &mut floor_group,
        ],
    );
    all.discard();
    each.discard();
    let group = thousands(n);
    vec![
        Row::timed(
            format!("group park of {group} lines, `park_all` / {group} x `park`"),
            &format!("{group} x park"),
            rounds,
            &t[0],
            &t[1],
        ),
        Row::timed(
            format!("group park of {group} lines, `park_all` / floor (one write + fsync)"),
            "floor",
            rounds,
            &t[0],
            &t[2],
        ),
    ]
}

fn park_row(n: u64) -> Row {
    let rounds = interleave::rounds(300);
    let mut p = ParkQueue {
        dir: None,
        queue: None,
        n,
        request: 1_000_000,
    };
    let mut f = ParkFloor {
        dir: None,
        floor: None,
        lines: 0,
        n,
        request: 1_000_000,
    };
    let t = interleave::samples(rounds, &mut [&mut || p.park_once(), &mut || f.park_once()]);
    p.queue = None;
    for dir in [p.dir.take(), f.dir.take()].into_iter().flatten() {
        fixture::discard(dir).expect("sync the deletion");
    }
    Row::timed(
        format!(
            "durable park, {} parked / floor (write + fsync)",
            thousands(n)
        ),
        "floor",
        rounds,
        &t[0],
        &t[1],
    )
}

// ---- many threads, one session ----

/// The uncontended park through a `SharedQueue` (a group of one) / the floor.
fn shared_park_row() -> Row {
    let rounds = interleave::rounds(300);
    let mut dir = None;
    let mut queue: Option<SharedQueue> = None;
    let mut parked = 0u64;
    let mut request = 2_000_000u64;
    let mut shared = || {
        if queue.is_none() || parked >= SLACK {
            queue = None;
            if let Some(old) = dir.take() {
                fixture::discard(old).expect("sync the deletion");
            }
            let fresh = bench_dir().expect("temporary directory");
            queue = Some(SharedQueue::open(fresh.path().join(MIRROR)).expect("open"));
            (dir, parked) = (Some(fresh), 0);
        }
        request += 1;
        parked += 1;
        let line = completion_line(request);
        let queue = queue.as_ref().expect("built above");
        let start = Instant::now();
        queue.park(RequestId(request), &line).expect("park");
        start.elapsed()
    };
    let mut f = ParkFloor {
        dir: None,
        floor: None,
        lines: 0,
        n: 0,
        request: 2_000_000,
    };
    let t = interleave::samples(rounds, &mut [&mut shared, &mut || f.park_once()]);
    drop(queue.take());
    for old in [dir.take(), f.dir.take()].into_iter().flatten() {
        fixture::discard(old).expect("sync the deletion");
    }
    Row::timed(
        "uncontended park through a `SharedQueue` / floor (write + fsync)".to_owned(),
        "floor",
        rounds,
        &t[0],
        &t[1],
    )
}

/// 200 threads released at once, one park each through a `SharedQueue` / one `park_all` of the
/// same lines, and / handing the lines to one thread that calls `park_all` (the scheduling
/// floor); the fsyncs the 200 parks took.
fn burst_rows(n: usize) -> Vec<Row> {
    let rounds = interleave::rounds(20);
    let mut fsyncs = Vec::new();
    let t = interleave::samples(
        rounds,
        &mut [
            &mut || {
                let (took, synced) = contention::burst_shared(n).expect("burst");
                fsyncs.push(synced);
                took
            },
            &mut || contention::burst_park_all(n).expect("park_all"),
            &mut || contention::burst_handoff(n).expect("hand-off"),
        ],
    );
    fsyncs.sort_unstable();
    let (median, most) = (fsyncs[fsyncs.len() / 2], fsyncs[fsyncs.len() - 1]);
    let what = |baseline: &str| {
        format!(
            "{n} threads, one park each, released at once ({median} fsyncs, at most {most}) / {baseline}"
        )
    };
    vec![
        Row::timed(
            what("one `park_all` of the same lines"),
            "park_all",
            rounds,
            &t[0],
            &t[1],
        ),
        Row::timed(
            what("the lines handed to one thread that calls `park_all`"),
            "hand-off",
            rounds,
            &t[0],
            &t[2],
        ),
    ]
}

/// `n` tasks released at once, one park each through an `AsyncQueue` / `n` threads through a
/// `SharedQueue`, the same burst (`burst_rows`' first contender) in the same rounds; the
/// runtime is a daemon's (multi-thread, default size), one for the row.
#[cfg(feature = "tokio")]
fn async_burst_row(n: usize) -> Row {
    let rounds = interleave::rounds(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .build()
        .expect("a runtime");
    let mut fsyncs = Vec::new();
    let t = interleave::samples(
        rounds,
        &mut [
            &mut || {
                let (took, synced) = contention::burst_async(&runtime, n).expect("async burst");
                fsyncs.push(synced);
                took
            },
            &mut || contention::burst_shared(n).expect("burst").0,
        ],
    );
    fsyncs.sort_unstable();
    let (median, most) = (fsyncs[fsyncs.len() / 2], fsyncs[fsyncs.len() - 1]);
    Row::timed(
        format!(
            "{n} tasks, one park each through an `AsyncQueue`, released at once ({median} fsyncs, at most {most}) / {n} threads through a `SharedQueue`"
        ),
        "threads",
        rounds,
        &t[0],
        &t[1],
    )
}

/// `threads` threads parking `each` lines in a loop through a `SharedQueue` / through
/// `Arc<Mutex<Queue>>`: a ratio of 0.25x is 4x the parks per second.
fn loop_row(threads: usize, each: usize) -> Row {
    let rounds = interleave::rounds(10);
    let mut fsyncs = Vec::new();
    let t = interleave::samples(
        rounds,
        &mut [
            &mut || {
                let (took, synced) =
                    contention::loop_parks(Sharing::Shared, threads, each).expect("loop");
                fsyncs.push(synced);
                took
            },
            &mut || {
                contention::loop_parks(Sharing::Mutex, threads, each)
                    .expect("loop")
                    .0
            },
        ],
    );
    fsyncs.sort_unstable();
    let parks = (threads * each) as f64;
    let per_fsync = parks / fsyncs[fsyncs.len() / 2].max(1) as f64;
    Row::timed(
        format!(
            "{threads} threads x {each} parks through a `SharedQueue` ({per_fsync:.1} parks per fsync) / through `Arc<Mutex<Queue>>`"
        ),
        "mutex",
        rounds,
        &t[0],
        &t[1],
    )
}

/// Parks per second against threads, `SharedQueue` and `Arc<Mutex<Queue>>`, as the chart
/// `benches/parks-per-second.svg`.
fn parks_per_second_chart() {
    const EACH: usize = 40;
    let threads = [1usize, 2, 4, 8, 16, 32];
    let rounds = interleave::rounds(5);
    let mut series = Vec::new();
    for (sharing, name, colour) in [
        (Sharing::Shared, "SharedQueue (group commit)", "#1f77b4"),
        (Sharing::Mutex, "Arc<Mutex<Queue>>", "#d62728"),
    ] {
        let points = threads
            .iter()
            .map(|&n| {
                let rates: Vec<f64> = (0..rounds)
                    .map(|_| {
                        let (took, _) = contention::loop_parks(sharing, n, EACH).expect("loop");
                        (n * EACH) as f64 / took.as_secs_f64().max(1e-9)
                    })
                    .collect();
                (n as f64, Quartiles::of(&rates))
            })
            .collect();
        series.push(Series {
            name: name.to_owned(),
            colour,
            points,
        });
    }
    let subtitle = format!(
        "{}, a shared 2-core VM (ext4); cargo bench -p parkline-benches --bench table",
        plot::utc_date_today()
    );
    let svg = plot::log_log(
        Labels {
            title: "Parks per second into one session",
            subtitle: &subtitle,
            x: "threads parking",
            y: "parks per second",
        },
        &series,
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("parks-per-second.svg");
    std::fs::write(&path, svg).expect("write the chart");
    eprintln!("table: chart {}", path.display());
}

// ---- recovery ----

fn line_bytes(n: u64) -> u64 {
    (0..n).map(|i| completion_line(i).len() as u64).sum()
}

/// The recovery bench's fixture: `n` parked, 13 of them in a persisted, unsettled batch.
fn recovery_fixture(n: u64) -> TempDir {
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, _) = fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
    let budget = (0..IN_FLIGHT)
        .map(|i| completion_line(i).chars().count() + 1)
        .sum();
    let batch = queue.boundary(Budget(budget)).expect("boundary");
    assert_eq!(batch.map_or(0, |b| b.items.len() as u64), IN_FLIGHT);
    drop(queue); // the crash: no settle
    fixture::sync_dir_tree(dir.path()).expect("fsync");
    dir
}

fn open(dir: &Path) -> Queue {
    match Queue::open(dir.join(MIRROR)) {
        Ok(queue) => queue,
        // Seen in tight open/drop loops on the shared machine: the previous handle's lock,
        // already dropped, still held. One retry, as the recovery bench does.
        Err(e) if e.kind() == ErrorKind::Locked => {
            Queue::open(dir.join(MIRROR)).expect("recover after a locked retry")
        }
        Err(e) => panic!("recover: {e}"),
    }
}

fn held(queue: &Queue) -> u64 {
    let in_flight = queue.in_flight().map_or(0, |b| b.items.len());
    (queue.parked().len() + in_flight) as u64
}

fn recovery_rows() -> Vec<Row> {
    let n = RECOVERY_LINES;
    let mirror = recovery_fixture(n);
    let json = bench_dir().expect("temporary directory");
    let mut j = JsonMirror::new(json.path());
    j.extend((0..n).map(mirror_line));
    j.persist().expect("write");
    drop(j);
    let rounds = interleave::rounds(21);
    let mut recover = || {
        let start = Instant::now();
        let queue = open(mirror.path());
        let elapsed = start.elapsed();
        assert_eq!(held(&queue), n, "recovered every line");
        elapsed
    };
    let mut load = || {
        let start = Instant::now();
        let loaded = JsonMirror::load(json.path()).expect("load");
        let elapsed = start.elapsed();
        assert_eq!(loaded.lines().len() as u64, n);
        elapsed
    };
    let mut read_crc = || {
        let start = Instant::now();
        let (bytes, crc) = floor::read_crc(&mirror.path().join(MIRROR)).expect("read");
        let elapsed = start.elapsed();
        std::hint::black_box((bytes, crc));
        elapsed
    };
    let t = interleave::samples(rounds, &mut [&mut recover, &mut load, &mut read_crc]);
    let what = |of: &str| format!("recovery of 100,000 parked / {of}");
    let mut rows = vec![
        Row::timed(what("JSON mirror load"), "JSON load", rounds, &t[0], &t[1]),
        Row::timed(
            what("read + CRC of the file"),
            "read + CRC",
            rounds,
            &t[0],
            &t[2],
        ),
    ];
    let runs = interleave::rounds(3);
    let peaks: Vec<(f64, f64)> = (0..runs).map(|_| child_peak(mirror.path())).collect();
    let bytes = line_bytes(n) as f64;
    let heap: Vec<f64> = peaks.iter().map(|(heap, _)| heap / bytes).collect();
    let rss = Quartiles::of(&peaks.iter().map(|(_, rss)| rss / bytes).collect::<Vec<_>>());
    let heap_q = Quartiles::of(&heap);
    rows.push(Row {
        what: "recovery of 100,000 parked: heap peak / line bytes".to_owned(),
        parkline: format!(
            "{:.1} MB (RSS growth {:.2}x)",
            heap_q.median * bytes / 1e6,
            rss.median
        ),
        baseline: format!("line bytes {:.1} MB", bytes / 1e6),
        ratio: heap_q,
        rounds: runs,
    });
    for dir in [mirror, json] {
        fixture::discard(dir).expect("sync the deletion");
    }
    rows
}

/// Opens `dir`'s mirror in a fresh process; returns its heap peak and resident-set growth, in
/// bytes.
fn child_peak(dir: &Path) -> (f64, f64) {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(CHILD_ENV, dir)
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<f64> = text
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    let [heap, rss, lines] = fields[..] else {
        panic!(
            "child said {text:?}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    assert_eq!(
        lines as u64, RECOVERY_LINES,
        "the child recovered every line"
    );
    (heap, rss)
}

/// In the child: one open; prints `<heap peak bytes> <RSS growth bytes> <lines>`. The heap peak
/// is cap's maximum since the process started, less what was held before the open: the child
/// does nothing else first, so it is the open's peak.
fn child(dir: &str) {
    let before_heap = HEAP.allocated();
    let before_rss = memory::status_kib("VmRSS").expect("VmRSS");
    memory::reset_peak().ok();
    let queue = open(Path::new(dir));
    let peak_rss = memory::status_kib("VmHWM").expect("VmHWM");
    let peak_heap = HEAP.max_allocated().saturating_sub(before_heap);
    println!(
        "{peak_heap} {} {}",
        peak_rss.saturating_sub(before_rss) * 1024,
        held(&queue)
    );
}

// ---- boundary ----

fn boundary_rows(n: u64) -> Vec<Row> {
    let rounds = interleave::rounds(match n {
        0..=10 => 150,
        11..=1_000 => 60,
        _ => 25,
    });
    // The bytes of parkline's two records (batch, settle) at n lines, from one untimed boundary:
    // the third contender appends as many, so the rows tell what the format's record sizes cost
    // (that floor against the floor) apart from what parkline's CPU costs (parkline against it).
    let record_bytes = {
        let dir = bench_dir().expect("temporary directory");
        let (mut queue, counts) =
            fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
        let before = counts.snapshot();
        let batch = queue.boundary(boundary::BUDGET).expect("boundary");
        let batch = batch.expect("a batch");
        let after_batch = counts.snapshot().since(before).appended_bytes;
        let outcomes = vec![parkline::Outcome::Delivered; batch.items.len()];
        queue.settle(batch.id, &outcomes).expect("settle");
        let after_settle = counts.snapshot().since(before).appended_bytes;
        drop(queue);
        fixture::discard(dir).expect("sync the deletion");
        (after_batch, after_settle - after_batch)
    };
    // `append_durable` adds the newline, as parkline's records end with one.
    let sized_records = (
        "b".repeat(record_bytes.0 as usize - 1),
        "s".repeat(record_bytes.1 as usize - 1),
    );
    // The daemon's turn buffer, kept across boundaries (`boundary::parkline`).
    let mut turn = String::new();
    let mut parkline = || {
        let dir = bench_dir().expect("temporary directory");
        let (mut queue, _) = fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
        let start = Instant::now();
        boundary::parkline(&mut queue, &mut turn);
        let elapsed = start.elapsed();
        drop(queue);
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let mut floor = || {
        let dir = bench_dir().expect("temporary directory");
        let mut floor = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
        let start = Instant::now();
        boundary::floor(&mut floor, n);
        let elapsed = start.elapsed();
        drop(floor);
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let mut sized = || {
        let dir = bench_dir().expect("temporary directory");
        let mut floor = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
        let start = Instant::now();
        floor
            .append_durable(&sized_records.0)
            .expect("write + fsync");
        floor
            .append_durable(&sized_records.1)
            .expect("write + fsync");
        let elapsed = start.elapsed();
        drop(floor);
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let t = interleave::samples(rounds, &mut [&mut parkline, &mut floor, &mut sized]);
    let mut row = Row::timed(
        format!("boundary of {} / floor (2 x (write + fsync))", thousands(n)),
        "floor",
        rounds,
        &t[0],
        &t[1],
    );
    let per_line = Quartiles::of_durations(&t[0]).median / n as f64;
    row.parkline = format!("{} ({} per line)", row.parkline, per_line_text(per_line));
    let sized_what = format!(
        "{} + {} bytes",
        thousands(record_bytes.0),
        thousands(record_bytes.1)
    );
    vec![
        row,
        Row::timed(
            format!(
                "boundary of {}: floor writing parkline's record bytes ({sized_what}) / floor",
                thousands(n)
            ),
            "floor",
            rounds,
            &t[2],
            &t[1],
        ),
        Row::timed(
            format!(
                "boundary of {} / floor writing parkline's record bytes",
                thousands(n)
            ),
            "that floor",
            rounds,
            &t[0],
            &t[2],
        ),
    ]
}

/// The boundary of `n` lines in a daemon's steady state, with the default 4 MiB slack: one queue
/// for every round, `n` fresh lines parked before each boundary (not timed, syncs off, then the
/// directory made durable), so the compactions M12 spreads over many boundaries fall inside the
/// timed rounds in their true proportion. The ratio is of the two totals: a median of per-round
/// ratios would hide the few rounds that compact. The quartiles beside it are the per-round ones.
fn steady_boundary_row(n: u64) -> Row {
    let rounds = interleave::rounds(120);
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, counts) =
        fixture::open_counted(&dir.path().join(MIRROR), parkline::Config::default())
            .expect("queue");
    let mut floor_file = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
    let mut request = 0u64;
    let mut turn = String::new();
    let park_counts = counts.clone();
    let mirror = dir.path().join(MIRROR);
    // The longest the mirror was right after a round's settle (every round drains the queue).
    let mut at_rest_max = 0u64;
    let mut parkline = || {
        park_counts.set_skip_syncs(true);
        for _ in 0..n {
            request += 1;
            queue
                .park(RequestId(request), &completion_line(request))
                .expect("park");
        }
        park_counts.set_skip_syncs(false);
        fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
        let start = Instant::now();
        boundary::parkline(&mut queue, &mut turn);
        let elapsed = start.elapsed();
        let at_rest = std::fs::metadata(&mirror).expect("the mirror").len();
        at_rest_max = at_rest_max.max(at_rest);
        elapsed
    };
    let mut floor = || {
        let start = Instant::now();
        boundary::floor(&mut floor_file, n);
        start.elapsed()
    };
    let before = counts.snapshot();
    let t = interleave::samples(rounds, &mut [&mut parkline, &mut floor]);
    let compactions = counts.snapshot().since(before).dir_syncs;
    let total = |times: &[Duration]| times.iter().sum::<Duration>().as_secs_f64() * 1e6;
    let (tp, tb) = (total(&t[0]), total(&t[1]));
    let per_round = Quartiles::of_ratios(&t[0], &t[1]);
    let ratio = tp / tb;
    drop(queue);
    eprintln!("table: the mirror after a round's settle: at most {at_rest_max} bytes");
    fixture::discard(dir).expect("sync the deletion");
    Row {
        what: format!(
            "boundary of {} in steady state (one queue, {compactions} compactions in {rounds} \
             rounds) / floor, ratio of the totals",
            thousands(n)
        ),
        parkline: format!("{} per round", time(tp / rounds as f64)),
        baseline: format!("floor {}", time(tb / rounds as f64)),
        ratio: Quartiles {
            q1: per_round.q1,
            median: ratio,
            q3: per_round.q3,
        },
        rounds,
    }
}

/// A drained session's idle call (M12 at rest): a fresh queue whose `n` lines were handed over
/// and delivered (untimed), then one `idle` that compacts its log to the snapshot / the floor of
/// any whole-file write of the same bytes: a new file written, fsynced, renamed over the old one
/// and the directory fsynced. The cost a settle paid when it compacted at rest, moved off the
/// turn boundary.
fn idle_row(n: u64) -> Row {
    let rounds = interleave::rounds(40);
    // The log before the idle call and the snapshot after it, in bytes: the floor writes as many.
    let sizes = std::cell::Cell::new((0u64, 0u64));
    let mut parkline = || {
        let dir = bench_dir().expect("temporary directory");
        let mirror = dir.path().join(MIRROR);
        let (mut queue, counts) = fixture::parked_queue(&mirror, n).expect("fixture");
        boundary::parkline(&mut queue, &mut String::new());
        fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
        let log_bytes = std::fs::metadata(&mirror).expect("the mirror").len();
        let before = counts.snapshot();
        let start = Instant::now();
        queue.idle().expect("idle");
        let elapsed = start.elapsed();
        assert_eq!(
            counts.snapshot().since(before).dir_syncs,
            1,
            "one compaction"
        );
        let snapshot_bytes = std::fs::metadata(&mirror).expect("the mirror").len();
        sizes.set((log_bytes, snapshot_bytes));
        drop(queue);
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let mut floor = || {
        let dir = bench_dir().expect("temporary directory");
        let (old, new) = (dir.path().join("old"), dir.path().join("new"));
        std::fs::write(&old, b"old").expect("old file");
        fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
        let bytes = vec![b'x'; sizes.get().1.max(1) as usize];
        let start = Instant::now();
        floor::replace_durable(&new, &old, &bytes).expect("write, fsync, rename, fsync");
        let elapsed = start.elapsed();
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let t = interleave::samples(rounds, &mut [&mut parkline, &mut floor]);
    let (log_bytes, snapshot_bytes) = sizes.get();
    Row::timed(
        format!(
            "idle call after a drained boundary of {} ({} → {} bytes) / floor (write, fsync, \
             rename, directory fsync of the snapshot's bytes)",
            thousands(n),
            thousands(log_bytes),
            thousands(snapshot_bytes)
        ),
        "floor",
        rounds,
        &t[0],
        &t[1],
    )
}

fn per_line_text(us: f64) -> String {
    if us >= 1.0 {
        time(us)
    } else {
        format!("{:.0} ns", us * 1_000.0)
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---- start-up of many sessions ----

/// The sessions of the start-up rows.
const SESSIONS: u64 = 1_000;

/// A store's directory of [`SESSIONS`] idle sessions, two lines parked in each.
fn sessions_fixture() -> TempDir {
    let dir = bench_dir().expect("temporary directory");
    let store = Store::open(dir.path()).expect("store");
    for s in 0..SESSIONS {
        let mut queue = store.session(&format!("s{s}")).expect("session");
        for r in 0..2 {
            let request = s * 2 + r;
            queue
                .park(RequestId(request), &completion_line(request))
                .expect("park");
        }
    }
    drop(store);
    fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
    dir
}

/// A store's directory of [`SESSIONS`] sessions as a daemon leaves them after traffic: each
/// delivered a full remembered window of requests (`DELIVERED_MEMORY`, 256) and was compacted to
/// rest by its idle call. Also the bytes one such mirror holds.
fn traffic_fixture() -> (TempDir, u64) {
    let dir = bench_dir().expect("temporary directory");
    let store = Store::open(dir.path()).expect("store");
    let window = parkline::DELIVERED_MEMORY;
    let sessions = store
        .start(
            (0..SESSIONS)
                .map(|s| format!("s{s}"))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
        .expect("start");
    for (s, session) in (0..).zip(sessions.values()) {
        let session = session.as_ref().expect("session");
        let lines: Vec<(RequestId, String)> = (0..window)
            .map(|r| {
                let request = s * window + r;
                (RequestId(request), completion_line(request))
            })
            .collect();
        let group: Vec<(RequestId, &str)> = lines.iter().map(|(r, l)| (*r, l.as_str())).collect();
        session.park_all(&group).expect("park_all");
        let batch = session
            .boundary(Budget(1 << 30))
            .expect("boundary")
            .expect("lines");
        let delivered = vec![parkline::Outcome::Delivered; batch.items.len()];
        session.settle(batch.id, &delivered).expect("settle");
    }
    assert!(store.idle().is_empty(), "every idle call");
    let bytes = std::fs::metadata(dir.path().join("s0.mirror"))
        .expect("a mirror")
        .len();
    drop(sessions);
    drop(store);
    fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
    (dir, bytes)
}

/// Start-up of [`SESSIONS`] sessions after traffic (a full remembered window each, at rest):
/// `Store::start` / the floor of opening, reading and fsyncing the same files.
fn traffic_startup_row() -> Row {
    let (dir, bytes) = traffic_fixture();
    let rounds = interleave::rounds(7);
    let mut start_all = || {
        let start = Instant::now();
        let store = Store::open(dir.path()).expect("store");
        let sessions = store.start([]).expect("start");
        let elapsed = start.elapsed();
        assert_eq!(
            sessions.values().filter(|q| q.is_ok()).count() as u64,
            SESSIONS
        );
        elapsed
    };
    let mut floor = || open_read_fsync_all(dir.path());
    let t = interleave::samples(rounds, &mut [&mut start_all, &mut floor]);
    fixture::discard(dir).expect("sync the deletion");
    Row::timed(
        format!(
            "start-up: Store::start of 1,000 sessions after traffic ({bytes} bytes each at rest) / the floor"
        ),
        "open + read + fsync of each, one directory fsync",
        rounds,
        &t[0],
        &t[1],
    )
}

/// Creating [`SESSIONS`] sessions: `Store::start` of 1,000 expected names in an empty
/// directory (one directory fsync) / the floor of creating, writing and fsyncing as many files
/// of a new mirror's size and fsyncing the directory once; and 1,000 `Store::session` calls (a
/// directory fsync each) / the same floor.
fn create_rows() -> Vec<Row> {
    let rounds = interleave::rounds(5);
    let names: Vec<String> = (0..SESSIONS).map(|s| format!("s{s}")).collect();
    let header = {
        let dir = bench_dir().expect("temporary directory");
        Store::open(dir.path())
            .expect("store")
            .session("probe")
            .expect("create");
        let bytes = std::fs::read(dir.path().join("probe.mirror")).expect("a mirror");
        fixture::discard(dir).expect("sync the deletion");
        bytes
    };
    let timed = |create: &dyn Fn(&Path)| {
        let dir = bench_dir().expect("temporary directory");
        let start = Instant::now();
        create(dir.path());
        let elapsed = start.elapsed();
        fixture::discard(dir).expect("sync the deletion");
        elapsed
    };
    let started = |dir: &Path| {
        let store = Store::open(dir).expect("store");
        let sessions = store
            .start(names.iter().map(String::as_str))
            .expect("start");
        assert_eq!(sessions.len() as u64, SESSIONS);
    };
    let one_by_one = |dir: &Path| {
        let store = Store::open(dir).expect("store");
        for name in &names {
            drop(store.session(name).expect("session"));
        }
    };
    let floor = |dir: &Path| {
        use std::io::Write;
        for name in &names {
            let path = dir.join(format!("{name}.mirror"));
            let mut file = std::fs::File::create_new(path).expect("create");
            file.write_all(&header).expect("write");
            file.sync_all().expect("fsync");
        }
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .expect("directory fsync");
    };
    let t = interleave::samples(
        rounds,
        &mut [
            &mut || timed(&started),
            &mut || timed(&one_by_one),
            &mut || timed(&floor),
        ],
    );
    let baseline = "create + write + fsync of each, one directory fsync";
    vec![
        Row::timed(
            "creating 1,000 sessions: Store::start / the floor".to_owned(),
            baseline,
            rounds,
            &t[0],
            &t[2],
        ),
        Row::timed(
            "creating 1,000 sessions: 1,000 Store::session / the floor".to_owned(),
            baseline,
            rounds,
            &t[1],
            &t[2],
        ),
    ]
}

/// The floor of opening many files durably: each file opened, read whole and fsynced, then
/// the directory fsynced once.
fn open_read_fsync_all(dir: &Path) -> Duration {
    use std::io::Read;
    let start = Instant::now();
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "mirror") {
            let mut file = std::fs::File::open(&path).expect("open");
            bytes.clear();
            file.read_to_end(&mut bytes).expect("read");
            file.sync_all().expect("fsync");
        }
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("directory fsync");
    start.elapsed()
}

// ---- a store under load ----

/// The sessions, producer threads and parks a round of the store row.
const LOAD_SESSIONS: usize = 300;
const LOAD_THREADS: usize = 50;
const LOAD_PARKS: usize = 6;

/// A store of [`LOAD_SESSIONS`] sessions, each a `SharedQueue`, for many threads to park into.
struct LoadedStore {
    dir: TempDir,
    sessions: Vec<SharedQueue>,
    store: Store,
    request: u64,
}

impl LoadedStore {
    fn new(max_open: usize) -> LoadedStore {
        let dir = bench_dir().expect("temporary directory");
        let mut options = parkline::StoreOptions::default();
        options.max_open = max_open;
        let store =
            Store::open_with(dir.path(), options, parkline::Config::default()).expect("store");
        let sessions = (0..LOAD_SESSIONS)
            .map(|s| SharedQueue::new(store.session(&format!("s{s}")).expect("session")))
            .collect();
        LoadedStore {
            dir,
            sessions,
            store,
            request: 0,
        }
    }

    /// One round: [`LOAD_THREADS`] threads released at once, each parking [`LOAD_PARKS`] lines
    /// into sessions spread over all of them.
    fn round(&mut self) -> Duration {
        let first = self.request;
        self.request += (LOAD_THREADS * LOAD_PARKS) as u64;
        let barrier = std::sync::Barrier::new(LOAD_THREADS + 1);
        let sessions = &self.sessions;
        std::thread::scope(|scope| {
            for t in 0..LOAD_THREADS {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    for k in 0..LOAD_PARKS {
                        let request = first + (t * LOAD_PARKS + k) as u64;
                        let session = &sessions[(t * 7 + k * 13 + first as usize) % LOAD_SESSIONS];
                        session
                            .park(RequestId(request), &completion_line(request))
                            .expect("park");
                    }
                });
            }
            barrier.wait();
            let start = Instant::now();
            // The scope joins every producer before it returns.
            start
        })
        .elapsed()
    }
}

/// 50 threads parking into 300 sessions through a store of `max_open` 32 / the same through a
/// store of `max_open` 320, where every session keeps its descriptor: what the bound on the
/// store's descriptors (M16) costs a busy daemon.
fn store_load_row() -> Row {
    let rounds = interleave::rounds(30);
    let mut bounded = LoadedStore::new(32);
    let mut roomy = LoadedStore::new(320);
    let t = interleave::samples(
        rounds,
        &mut [&mut || bounded.round(), &mut || roomy.round()],
    );
    let stats = bounded.store.stats();
    let row = Row::timed(
        format!(
            "{LOAD_THREADS} threads x {LOAD_PARKS} parks over {LOAD_SESSIONS} sessions, store of `max_open` 32 ({} waits, {} evictions) / `max_open` 320",
            stats.descriptor_waits, stats.evictions
        ),
        "max_open 320",
        rounds,
        &t[0],
        &t[1],
    );
    for loaded in [bounded, roomy] {
        drop(loaded.sessions);
        drop(loaded.store);
        fixture::discard(loaded.dir).expect("sync the deletion");
    }
    row
}

/// Start-up of [`SESSIONS`] idle sessions: `Store::open_all` and one `Queue::open` per session,
/// each against the floor of opening, reading and fsyncing the files plus one directory fsync.
fn startup_rows() -> Vec<Row> {
    let dir = sessions_fixture();
    let rounds = interleave::rounds(7);
    let mut store_open_all = || {
        let start = Instant::now();
        let store = Store::open(dir.path()).expect("store");
        let queues = store.open_all().expect("open all");
        let elapsed = start.elapsed();
        assert_eq!(
            queues.values().filter(|q| q.is_ok()).count() as u64,
            SESSIONS
        );
        elapsed
    };
    let mut one_by_one = || {
        let start = Instant::now();
        let queues: Vec<Queue> = (0..SESSIONS)
            .map(|s| Queue::open(dir.path().join(format!("s{s}.mirror"))).expect("open"))
            .collect();
        let elapsed = start.elapsed();
        assert_eq!(queues.len() as u64, SESSIONS);
        elapsed
    };
    let mut floor = || open_read_fsync_all(dir.path());
    let t = interleave::samples(
        rounds,
        &mut [&mut store_open_all, &mut one_by_one, &mut floor],
    );
    let baseline = "open + read + fsync of each, one directory fsync";
    let rows = vec![
        Row::timed(
            "start-up: Store::open_all of 1,000 idle sessions / the floor".to_owned(),
            baseline,
            rounds,
            &t[0],
            &t[2],
        ),
        Row::timed(
            "start-up: 1,000 Queue::open / the floor".to_owned(),
            baseline,
            rounds,
            &t[1],
            &t[2],
        ),
    ];
    fixture::discard(dir).expect("sync the deletion");
    rows
}

fn main() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
        return;
    }
    let start = Instant::now();
    let runs: usize = std::env::var("PARKLINE_TABLE_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(1)
        .max(1);
    let tables: Vec<Vec<Row>> = (1..=runs)
        .map(|run| {
            eprintln!("table: run {run} of {runs}");
            one_run()
        })
        .collect();
    let full = std::env::vars_os()
        .all(|(name, _)| !name.to_string_lossy().starts_with("PARKLINE_TABLE_ONLY_"));
    if full {
        parks_per_second_chart();
    }
    let summaries = summarize(&tables);
    print_rows(&summaries, runs, start);
    if let Some(path) = std::env::var_os("PARKLINE_TABLE_RESULTS") {
        write_results(Path::new(&path), &summaries, runs);
    }
}

/// One pass over every row (or the rows a `PARKLINE_TABLE_ONLY_*` variable selects).
fn one_run() -> Vec<Row> {
    let mut rows = Vec::new();
    if std::env::var_os("PARKLINE_TABLE_ONLY_STARTUP").is_some() {
        rows.extend(startup_rows());
        return rows;
    }
    if std::env::var_os("PARKLINE_TABLE_ONLY_STORE").is_some() {
        rows.push(store_load_row());
        rows.extend(create_rows());
        rows.push(traffic_startup_row());
        return rows;
    }
    if std::env::var_os("PARKLINE_TABLE_ONLY_STEADY").is_some() {
        for n in [1_000, 10_000] {
            rows.push(steady_boundary_row(n));
            eprintln!("table: {}", rows.last().map_or("", |r| r.what.as_str()));
        }
        return rows;
    }
    for n in [0, 1_000] {
        rows.push(park_row(n));
        eprintln!("table: {}", rows.last().map_or("", |r| r.what.as_str()));
    }
    rows.push(shared_park_row());
    rows.extend(burst_rows(200));
    #[cfg(feature = "tokio")]
    rows.push(async_burst_row(200));
    rows.push(loop_row(8, 50));
    eprintln!("table: many threads");
    if std::env::var_os("PARKLINE_TABLE_ONLY_THREADS").is_some() {
        return rows;
    }
    for n in [13, 100] {
        rows.extend(group_rows(n));
        eprintln!("table: group park of {n}");
    }
    rows.extend(recovery_rows());
    eprintln!("table: recovery");
    for n in [1, 1_000, 10_000] {
        rows.extend(boundary_rows(n));
        eprintln!("table: {}", rows.last().map_or("", |r| r.what.as_str()));
    }
    for n in [1_000, 10_000] {
        rows.push(steady_boundary_row(n));
        eprintln!("table: {}", rows.last().map_or("", |r| r.what.as_str()));
    }
    rows.push(idle_row(1_000));
    eprintln!("table: idle call");
    rows.extend(startup_rows());
    eprintln!("table: start-up");
    rows.push(store_load_row());
    eprintln!("table: a store under load");
    rows.extend(create_rows());
    eprintln!("table: creating sessions");
    rows.push(traffic_startup_row());
    eprintln!("table: start-up after traffic");
    rows
}

// ---- the runs summarized ----

/// A row over every run: the run whose ratio is the median's figures, and the range of the
/// runs' ratios.
struct Summary {
    row: Row,
    min: f64,
    max: f64,
}

impl Summary {
    /// The ratio as README shows it: the median of the runs, their range beside it.
    fn ratio_text(&self) -> String {
        format!(
            "{:.2}x ({:.2}-{:.2}x)",
            self.row.ratio.median, self.min, self.max
        )
    }
}

/// A row's name across runs: its text without the parenthesised figures a run measures
/// (fsyncs, compactions, bytes), which differ from run to run.
fn key_of(what: &str) -> String {
    let mut key = String::new();
    let mut depth = 0usize;
    for c in what.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => key.push(c),
            _ => {}
        }
    }
    key.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each row of the first run with the same row of every run: the median run's row (the lower
/// of the two middle ones for an even count) and the smallest and largest ratio.
fn summarize(tables: &[Vec<Row>]) -> Vec<Summary> {
    let Some((first, rest)) = tables.split_first() else {
        return Vec::new();
    };
    let mut summaries = Vec::new();
    for row in first {
        let key = key_of(&row.what);
        let mut same: Vec<&Row> = std::iter::once(row)
            .chain(
                rest.iter()
                    .filter_map(|run| run.iter().find(|r| key_of(&r.what) == key)),
            )
            .collect();
        assert_eq!(same.len(), tables.len(), "row {key} in every run");
        same.sort_by(|a, b| a.ratio.median.total_cmp(&b.ratio.median));
        let median = same[(same.len() - 1) / 2];
        summaries.push(Summary {
            row: median.clone(),
            min: same[0].ratio.median,
            max: same[same.len() - 1].ratio.median,
        });
    }
    summaries
}

/// The label README's performance table gives a row, for the rows it shows.
fn readme_label(key: &str) -> Option<&'static str> {
    Some(match key {
        "durable park, 0 parked / floor" => "durable park / one write + fsync",
        "group park of 100 lines, `park_all` / 100 x `park`" => {
            "group park of 100 lines (`park_all`) / 100 x `park`"
        }
        "boundary of 1 / floor" => "boundary of 1 line / two writes + fsyncs",
        "boundary of 1,000 / floor" => "boundary of 1,000 lines / two writes + fsyncs",
        "boundary of 10,000 / floor" => "boundary of 10,000 lines / two writes + fsyncs",
        "boundary of 1,000 in steady state / floor, ratio of the totals" => {
            "boundary of 1,000 lines, steady state / two writes + fsyncs"
        }
        "boundary of 10,000 in steady state / floor, ratio of the totals" => {
            "boundary of 10,000 lines, steady state / two writes + fsyncs"
        }
        "idle call after a drained boundary of 1,000 / floor" => {
            "idle call of a drained session, compacting to rest / one whole-file write"
        }
        "recovery of 100,000 parked / JSON mirror load" => {
            "recovery of 100,000 lines / serde_json loading the same lines"
        }
        "recovery of 100,000 parked: heap peak / line bytes" => {
            "recovery of 100,000 lines: heap peak / the lines' bytes"
        }
        "8 threads x 50 parks through a `SharedQueue` / through `Arc<Mutex<Queue>>`" => {
            "8 threads x 50 parks through a `SharedQueue` / through `Arc<Mutex<Queue>>`"
        }
        "200 threads, one park each, released at once / the lines handed to one thread that \
         calls `park_all`" => {
            "200 threads released at once, one park each / the lines handed to one thread's `park_all`"
        }
        "200 tasks, one park each through an `AsyncQueue`, released at once / 200 threads \
         through a `SharedQueue`" => {
            "200 tasks released at once, one park each through an `AsyncQueue` / 200 threads through a `SharedQueue`"
        }
        "start-up: Store::open_all of 1,000 idle sessions / the floor" => {
            "`Store::open_all` of 1,000 idle sessions / open, read and fsync each file"
        }
        "50 threads x 6 parks over 300 sessions, store of `max_open` 32 / `max_open` 320" => {
            "50 threads parking over 300 sessions, `max_open` 32 / `max_open` 320"
        }
        "creating 1,000 sessions: Store::start / the floor" => {
            "`Store::start` creating 1,000 sessions / create, write and fsync each file"
        }
        "start-up: Store::start of 1,000 sessions after traffic / the floor" => {
            "`Store::start` of 1,000 sessions after traffic / open, read and fsync each file"
        }
        _ => return None,
    })
}

/// Writes the summaries to `path` as JSON: what README's performance table shows, row by row
/// (`tests/drift.rs` compares the two).
fn write_results(path: &Path, summaries: &[Summary], runs: usize) {
    let rows: Vec<serde_json::Value> = summaries
        .iter()
        .map(|s| {
            serde_json::json!({
                "row": s.row.what,
                "readme": readme_label(&key_of(&s.row.what)),
                "parkline": s.row.parkline,
                "baseline": s.row.baseline,
                "ratio": s.ratio_text(),
                "median": s.row.ratio.median,
                "min": s.min,
                "max": s.max,
                "rounds": s.row.rounds,
            })
        })
        .collect();
    let results = serde_json::json!({
        "measured": plot::utc_date_today(),
        "command": if cfg!(feature = "tokio") {
            "PARKLINE_TABLE_RUNS=5 cargo bench -p parkline-benches --bench table --features tokio"
        } else {
            "PARKLINE_TABLE_RUNS=5 cargo bench -p parkline-benches --bench table"
        },
        "runs": runs,
        "rows": rows,
    });
    let text = serde_json::to_string_pretty(&results).expect("JSON") + "\n";
    std::fs::write(path, text).expect("write the results file");
    eprintln!("table: wrote {}", path.display());
}

fn print_rows(summaries: &[Summary], runs: usize, start: Instant) {
    println!(
        "\nMeasured {} (UTC), `cargo bench -p parkline-benches --bench table`, {runs} run(s), \
         {:.0} s; ratio = median of per-round ratios (interleaved rounds), the median of the runs \
         and their range beside it.\n",
        plot::utc_date_today(),
        start.elapsed().as_secs_f64()
    );
    println!("| row | parkline | same-run baseline | ratio (range of the runs) | rounds |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for s in summaries {
        println!(
            "| {} | {} | {} | **{}** | {} |",
            s.row.what,
            s.row.parkline,
            s.row.baseline,
            s.ratio_text(),
            s.row.rounds
        );
    }
}
