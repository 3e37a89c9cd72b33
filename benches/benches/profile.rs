//! A driver for profilers, not a criterion bench: each mode runs one operation of the other
//! benches once (or a fixed number of times) and prints what it cost in heap bytes, so that
//! `valgrind --tool=callgrind` (instructions, calls of `malloc`/`memcpy`), `strace -c` (syscalls)
//! and the counting allocator all look at the same work. Built by
//! `cargo bench -p parkline-benches --bench profile --no-run`; run the binary it names with a mode:
//!
//! ```text
//! profile build-recovery DIR N   # the recovery bench's fixture: N parked, 13 of them in flight
//! profile recover DIR            # Queue::open of DIR/s966.mirror, once
//! profile json-load DIR N        # writes, then loads, today's whole-JSON mirror of N lines
//! profile read-crc DIR           # the floor of a recovery: read the mirror, CRC every record
//! profile boundary N             # one boundary + text + notified + settle of N parked lines
//! profile boundary-phases N R    # R rounds: each phase of a boundary of N lines timed apart,
//!                                # beside the floor and a floor writing the records' bytes;
//!                                # PARKLINE_PROFILE_NO_SYNC=1 skips the queue's fsyncs, so
//!                                # each phase shows its CPU alone
//! profile steady N R             # R rounds on one queue: N parked (not timed), then one
//!                                # boundary timed by phase, the rounds that compact apart
//! profile park N REPS            # REPS parks (fsynced) into a queue of N parked lines
//! profile park-floors N ROUNDS   # interleaved: park, floor (line bytes), floor (record bytes)
//! ```
//!
//! Heap figures come from the counting allocator with cap's `stats` feature: `peak` is the most
//! heap held at once since the process started (each mode runs in its own process, and the
//! modes measure right after start, so it is the operation's peak; `json-load` builds its file
//! first, so its peak is the larger of the two and it prints the fixture's), `total` every byte
//! asked of the allocator (freed or not), `held` the live heap after the operation.
//!
//! What it found (2026-12-03) is written where each figure is measured: the headers of
//! `recovery.rs`, `boundary.rs` and `park.rs`.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use parkline::{Budget, Outcome, Queue, RequestId};
use parkline_benches::fixture::{self, bench_dir, completion_line, mirror_line};
use parkline_benches::floor::AppendFloor;
use parkline_benches::interleave;
use parkline_benches::json_mirror::JsonMirror;
use parkline_benches::memory::{self, Heap};

#[global_allocator]
static HEAP: Heap = memory::heap();

const MIRROR: &str = "s966.mirror";
const IN_FLIGHT: u64 = 13;

fn heap_line(what: &str, before_held: usize, before_total: usize) {
    println!(
        "{what}: heap peak {} bytes, total asked {} bytes, held after {} bytes",
        HEAP.max_allocated().saturating_sub(before_held),
        HEAP.total_allocated() - before_total,
        HEAP.allocated().saturating_sub(before_held),
    );
}

fn line_bytes(n: u64) -> u64 {
    (0..n).map(|i| completion_line(i).len() as u64).sum()
}

fn build_recovery(dir: &Path, n: u64) {
    let (mut queue, _counts) = fixture::parked_queue(&dir.join(MIRROR), n).expect("fixture");
    let budget = (0..IN_FLIGHT)
        .map(|i| completion_line(i).chars().count() + 1)
        .sum();
    queue.boundary(Budget(budget)).expect("boundary");
    drop(queue);
    fixture::sync_dir_tree(dir).expect("fsync");
    let bytes = std::fs::metadata(dir.join(MIRROR)).expect("mirror").len();
    println!(
        "built {n} lines: mirror {bytes} bytes, line bytes {}",
        line_bytes(n)
    );
}

fn recover(dir: &Path) {
    let (held, total) = (HEAP.allocated(), HEAP.total_allocated());
    let start = Instant::now();
    let queue = Queue::open(dir.join(MIRROR)).expect("open");
    let elapsed = start.elapsed();
    let items = queue
        .parked()
        .iter()
        .chain(queue.in_flight().into_iter().flat_map(|b| &b.items));
    let (lines, bytes) = items.fold((0, 0), |(n, b), item| (n + 1, b + item.line.len()));
    heap_line("recover", held, total);
    println!(
        "recover: {lines} lines, line bytes {bytes}, {:.1} ms",
        elapsed.as_secs_f64() * 1e3
    );
    black_box(queue);
}

fn json_load(dir: &Path, n: u64) {
    let mut mirror = JsonMirror::new(dir);
    mirror.extend((0..n).map(mirror_line));
    mirror.persist().expect("write");
    drop(mirror);
    let (held, total) = (HEAP.allocated(), HEAP.total_allocated());
    // The peak of building the fixture above is already in `max_allocated`; report it, so the
    // load's peak is read as the larger of the two only when it exceeds it.
    let fixture_peak = HEAP.max_allocated();
    let start = Instant::now();
    let loaded = JsonMirror::load(dir).expect("load");
    let elapsed = start.elapsed();
    heap_line("json-load", held, total);
    println!(
        "json-load: {} lines, {:.1} ms (fixture peak {fixture_peak} bytes)",
        loaded.lines().len(),
        elapsed.as_secs_f64() * 1e3
    );
    black_box(loaded);
}

fn read_crc(dir: &Path) {
    let (held, total) = (HEAP.allocated(), HEAP.total_allocated());
    let start = Instant::now();
    let bytes = std::fs::read(dir.join(MIRROR)).expect("read");
    let mut records = 0u64;
    let mut bad = 0u64;
    for line in bytes.split(|&b| b == b'\n').filter(|l| l.len() > 9) {
        let stored = std::str::from_utf8(&line[..8])
            .ok()
            .and_then(|hex| u32::from_str_radix(hex, 16).ok());
        records += 1;
        if stored != Some(crc32fast::hash(&line[9..])) {
            bad += 1;
        }
    }
    let elapsed = start.elapsed();
    heap_line("read-crc", held, total);
    println!(
        "read-crc: {records} records, {bad} bad, {} bytes, {:.1} ms",
        bytes.len(),
        elapsed.as_secs_f64() * 1e3
    );
}

fn boundary(n: u64) {
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, counts) = fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
    let before = counts.snapshot();
    let (held, total) = (HEAP.allocated(), HEAP.total_allocated());
    let start = Instant::now();
    let batch = queue
        .boundary(Budget(usize::MAX))
        .expect("boundary")
        .expect("a batch");
    let text = batch.text();
    let notified = batch.notified();
    black_box((&text, &notified));
    let outcomes = vec![Outcome::Delivered; batch.items.len()];
    queue.settle(batch.id, &outcomes).expect("settle");
    let elapsed = start.elapsed();
    let cost = counts.snapshot().since(before);
    heap_line("boundary", held, total);
    println!(
        "boundary: {n} lines, {} appends, {} appended bytes, {} file fsyncs, {} directory fsyncs, \
         turn text {} bytes, line bytes {}, {:.0} us",
        cost.appends,
        cost.appended_bytes,
        cost.syncs,
        cost.dir_syncs,
        text.len(),
        batch
            .items
            .iter()
            .map(|item| item.line.len())
            .sum::<usize>(),
        elapsed.as_secs_f64() * 1e6
    );
}

/// Where a boundary's time goes: `rounds` fresh fixtures of `n` parked lines; in each round
/// every phase of the daemon's boundary is timed apart (the batch record's encode, write and
/// fsync; the turn text; the notified events; the settle record's; dropping the batch and its
/// text), and, interleaved with them, the floor of the table bench (two small records, two
/// fsyncs) and a floor that appends as many bytes as parkline's two records did (so what
/// parkline pays for its records' size is told apart from what it pays in CPU). Medians.
fn boundary_phases(n: u64, rounds: usize) {
    use std::time::Duration;
    let floors = bench_dir().expect("temporary directory");
    let mut floor = AppendFloor::create(&floors.path().join("floor.log")).expect("file");
    let mut sized = AppendFloor::create(&floors.path().join("sized.log")).expect("file");
    let mut phases: [Vec<Duration>; 9] = Default::default();
    let mut turn = String::new();
    let names = [
        "boundary (batch record: plan, encode, write, fsync)",
        "turn text, fresh (Batch::text)",
        "notified events",
        "settle (settle record: plan, encode, write, fsync, apply)",
        "drop (batch, text, events)",
        "whole boundary",
        "floor (2 small records, 2 fsyncs)",
        "floor with parkline's record bytes (2 appends, 2 fsyncs)",
        "turn text into a kept buffer (Batch::write_text)",
    ];
    let mut record_bytes = (0, 0);
    let mut faults = [0; 4];
    for _ in 0..rounds {
        let dir = bench_dir().expect("temporary directory");
        let (mut queue, counts) =
            fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
        let before = counts.snapshot();
        counts.set_skip_syncs(std::env::var_os("PARKLINE_PROFILE_NO_SYNC").is_some());
        let f0 = minor_faults();
        let t0 = Instant::now();
        let batch = queue
            .boundary(Budget(usize::MAX))
            .expect("boundary")
            .expect("a batch");
        let t1 = Instant::now();
        let f1 = minor_faults();
        let batch_bytes = counts.snapshot().since(before).appended_bytes;
        let text = batch.text();
        let t2 = Instant::now();
        let f2 = minor_faults();
        let notified = batch.notified();
        let t3 = Instant::now();
        let f3 = minor_faults();
        let outcomes = vec![Outcome::Delivered; batch.items.len()];
        queue.settle(batch.id, &outcomes).expect("settle");
        let t4 = Instant::now();
        let f4 = minor_faults();
        faults = [f1 - f0, f2 - f1, f3 - f2, f4 - f3];
        turn.clear();
        batch.write_text(&mut turn);
        let kept = t4.elapsed();
        black_box((&text, &turn, &notified));
        let t5 = Instant::now();
        drop((batch, text, notified));
        let t6 = Instant::now();
        let all_bytes = counts.snapshot().since(before).appended_bytes;
        record_bytes = (batch_bytes, all_bytes - batch_bytes);
        let parts = [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t6 - t5];
        let whole = parts.iter().sum();
        for (k, d) in parts.into_iter().chain([whole]).enumerate() {
            phases[k].push(d);
        }
        phases[8].push(kept);
        let start = Instant::now();
        parkline_benches::boundary::floor(&mut floor, n);
        phases[6].push(start.elapsed());
        let (a, b) = record_bytes;
        let (first, second) = ("x".repeat(a as usize - 1), "y".repeat(b as usize - 1));
        let start = Instant::now();
        sized.append_durable(&first).expect("write + fsync");
        sized.append_durable(&second).expect("write + fsync");
        phases[7].push(start.elapsed());
        drop(queue);
        fixture::discard(dir).expect("discard");
    }
    println!(
        "boundary-phases: {n} lines, {rounds} rounds, records {} + {} bytes; medians:",
        record_bytes.0, record_bytes.1
    );
    for (k, (name, times)) in names.iter().zip(&phases).enumerate() {
        let median = interleave::Quartiles::of_durations(times).median_duration();
        let faults = faults.get(k).map_or(String::new(), |f| {
            format!(" ({f} page faults in the last round)")
        });
        println!("  {:>9.1} us  {name}{faults}", median.as_secs_f64() * 1e6);
    }
}

/// The process's minor page faults so far (`/proc/self/stat`, field 10): each is a fresh page
/// of memory the kernel maps on first touch, about 2 us apiece on the 2-core VM.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    after
        .split(' ')
        .nth(7)
        .and_then(|field| field.parse().ok())
        .expect("minflt")
}

fn park(n: u64, reps: u64) {
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, counts) = fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
    let lines: Vec<String> = (n..n + reps).map(completion_line).collect();
    let before = counts.snapshot();
    let (held, total) = (HEAP.allocated(), HEAP.total_allocated());
    let start = Instant::now();
    for (i, line) in (n..).zip(&lines) {
        queue.park(RequestId(i), line).expect("park");
    }
    let elapsed = start.elapsed();
    let cost = counts.snapshot().since(before);
    heap_line("park", held, total);
    println!(
        "park: {reps} parks at {n} parked, {} appended bytes, {} fsyncs, {:.0} us per park",
        cost.appended_bytes,
        cost.fsyncs(),
        elapsed.as_secs_f64() * 1e6 / reps as f64
    );
}

/// parkline's park against two floors, one park each per round: the floor writing the line's
/// bytes (what `park.rs` compares with) and the floor writing as many bytes as parkline's record.
/// If parkline matches the second floor, what it pays over the first is its record's bytes.
fn park_floors(n: u64, rounds: usize) {
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, _counts) = fixture::parked_queue(&dir.path().join(MIRROR), n).expect("fixture");
    let floors = bench_dir().expect("temporary directory");
    let mut line_floor = AppendFloor::create(&floors.path().join("line.log")).expect("file");
    let mut record_floor = AppendFloor::create(&floors.path().join("record.log")).expect("file");
    for i in 0..n {
        line_floor.append(&completion_line(i)).expect("append");
        record_floor.append(&completion_line(i)).expect("append");
    }
    line_floor.sync().expect("fsync");
    record_floor.sync().expect("fsync");
    let record_bytes = {
        let before = std::fs::metadata(dir.path().join(MIRROR))
            .expect("mirror")
            .len();
        queue.park(RequestId(n), &completion_line(n)).expect("park");
        std::fs::metadata(dir.path().join(MIRROR))
            .expect("mirror")
            .len()
            - before
    };
    // `append_durable` adds the newline, as parkline's record ends with one.
    let padded = "x".repeat(record_bytes as usize - 1);
    let next = std::cell::Cell::new(n + 1);
    let mut park = || {
        let k = next.get();
        next.set(k + 1);
        let line = completion_line(k);
        let start = Instant::now();
        queue.park(RequestId(k), &line).expect("park");
        start.elapsed()
    };
    let mut floor_line = || {
        let line = completion_line(next.get());
        let start = Instant::now();
        line_floor.append_durable(&line).expect("write + fsync");
        start.elapsed()
    };
    let mut floor_record = || {
        let start = Instant::now();
        record_floor.append_durable(&padded).expect("write + fsync");
        start.elapsed()
    };
    let m = interleave::medians(rounds, &mut [&mut park, &mut floor_line, &mut floor_record]);
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    println!(
        "park-floors: {n} parked, {rounds} rounds, record {record_bytes} bytes, line {} bytes; \
         medians: park {:.1} us, floor of the line {:.1} us ({:.3}x), floor of the record's \
         bytes {:.1} us ({:.3}x)",
        completion_line(n).len() + 1,
        us(m[0]),
        us(m[1]),
        us(m[0]) / us(m[1]),
        us(m[2]),
        us(m[0]) / us(m[2]),
    );
}

/// Where the steady-state rows' time goes: the table bench's steady row (one queue for every
/// round, `n` lines parked before each boundary, not timed), with the batch and the settle timed
/// apart and the rounds whose settle compacted (M12) reported apart from those that did not,
/// beside the floor of two small records in the same rounds. Medians, and the totals' ratio.
fn steady(n: u64, rounds: usize) {
    use std::time::Duration;
    let dir = bench_dir().expect("temporary directory");
    let (mut queue, counts) =
        fixture::open_counted(&dir.path().join(MIRROR), parkline::Config::default())
            .expect("queue");
    let mut floor = AppendFloor::create(&dir.path().join("floor.log")).expect("file");
    let mut turn = String::new();
    let (mut plain, mut compacting) = (Vec::new(), Vec::new());
    let (mut floors, mut settles) = (Vec::new(), [Vec::new(), Vec::new()]);
    for round in 0..rounds as u64 {
        counts.set_skip_syncs(true);
        for i in 0..n {
            let request = round * n + i + 1;
            queue
                .park(RequestId(request), &completion_line(request))
                .expect("park");
        }
        counts.set_skip_syncs(false);
        fixture::sync_dir_tree(dir.path()).expect("sync the fixture");
        let before = counts.snapshot();
        let start = Instant::now();
        let batch = queue.boundary(Budget(usize::MAX)).expect("boundary");
        let batch = batch.expect("a batch");
        turn.clear();
        batch.write_text(&mut turn);
        black_box((&*turn, batch.notified()));
        let outcomes = vec![Outcome::Delivered; batch.items.len()];
        let settle = Instant::now();
        queue.settle(batch.id, &outcomes).expect("settle");
        let settled = settle.elapsed();
        drop(batch);
        let whole = start.elapsed();
        let compacted = counts.snapshot().since(before).dir_syncs > 0;
        settles[usize::from(compacted)].push(settled);
        if compacted {
            &mut compacting
        } else {
            &mut plain
        }
        .push(whole);
        let start = Instant::now();
        parkline_benches::boundary::floor(&mut floor, n);
        floors.push(start.elapsed());
    }
    let median = |times: &[Duration]| {
        if times.is_empty() {
            return 0.0;
        }
        interleave::Quartiles::of_durations(times).median
    };
    let total = |times: &[Duration]| times.iter().sum::<Duration>().as_secs_f64() * 1e6;
    let floor_median = median(&floors);
    println!("steady: {n} lines, {rounds} rounds; medians (us), ratio to the floor's median:");
    for (what, times, settle) in [
        ("rounds without a compaction", &plain, &settles[0]),
        ("rounds whose settle compacted", &compacting, &settles[1]),
    ] {
        println!(
            "  {what}: {} rounds, whole {:.0} ({:.2}x), of it the settle {:.0}",
            times.len(),
            median(times),
            median(times) / floor_median,
            median(settle)
        );
    }
    println!(
        "  floor {floor_median:.0}; totals' ratio {:.2}x",
        (total(&plain) + total(&compacting)) / total(&floors)
    );
    drop(queue);
    fixture::discard(dir).expect("discard");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let arg = |i: usize| -> &str { args.get(i).map_or("", String::as_str) };
    let num = |i: usize| -> u64 { arg(i).parse().expect("a number") };
    match arg(0) {
        "build-recovery" => build_recovery(Path::new(arg(1)), num(2)),
        "recover" => recover(Path::new(arg(1))),
        "json-load" => json_load(Path::new(arg(1)), num(2)),
        "read-crc" => read_crc(Path::new(arg(1))),
        "boundary" => boundary(num(1)),
        "boundary-phases" => boundary_phases(num(1), num(2) as usize),
        "steady" => steady(num(1), num(2) as usize),
        "park" => park(num(1), num(2)),
        "park-floors" => park_floors(num(1), num(2) as usize),
        // `cargo bench` runs every bench binary; this one has nothing to measure by itself.
        _ => println!("profile: pass a mode (see the header of benches/benches/profile.rs)"),
    }
}
