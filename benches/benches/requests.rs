//! What a live operator costs a daemon (spec/mirror.md M17): every `boundary` looks at the
//! session's request file with one `stat` (`Storage::stamp`) before it plans the batch, and reads
//! the file only when the stamp changed or a second passed. Measured against the same run's
//! boundary that hands over and settles one line (two appends, two fsyncs), and a bare `stat` of
//! an absent file.
//!
//! Contenders, each on its own mirror in a temporary directory:
//! - `stat of an absent file`: `std::fs::symlink_metadata`, the floor of the look;
//! - `empty boundary, no request file`: a boundary with nothing parked (the look, then no batch);
//! - `empty boundary, request file unchanged`: the same beside a request file whose one request
//!   the mirror applied, its stamp unchanged since the last read;
//! - `boundary + settle of 1 line`: a park, then the boundary and settle that deliver it, the
//!   park untimed.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use parkline::ops::{self, OpId, Request, Verb, Which};
use parkline::{Budget, Outcome, Queue, RequestId};

fn bench_requests(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("request file look (M17)");
    let absent = dir.path().join("nothing.mirror.ops");
    group.bench_function("stat of an absent file", |b| {
        b.iter(|| std::fs::symlink_metadata(&absent).is_err());
    });
    let mut bare = Queue::open(dir.path().join("bare.mirror")).expect("open");
    group.bench_function("empty boundary, no request file", |b| {
        b.iter(|| bare.boundary(Budget(4096)).expect("boundary"));
    });
    let with_file = dir.path().join("asked.mirror");
    drop(Queue::open(&with_file).expect("create"));
    let window = ops::durable_window(&with_file).expect("the window");
    let request = Request {
        id: OpId::new("bench").expect("an id"),
        verb: Verb::Redrive,
        which: Which::All,
        life: window.life,
    };
    ops::submit(&with_file, &request, &window).expect("submit");
    let mut asked = Queue::open(&with_file).expect("open applies the request");
    assert_eq!(asked.applied_requests().len(), 1);
    group.bench_function("empty boundary, request file unchanged", |b| {
        b.iter(|| asked.boundary(Budget(4096)).expect("boundary"));
    });
    let mut delivering = Queue::open(dir.path().join("deliver.mirror")).expect("open");
    let mut request = 0;
    group.bench_function("boundary + settle of 1 line", |b| {
        b.iter_custom(|iters| {
            let mut took = Duration::ZERO;
            for _ in 0..iters {
                request += 1;
                let line = "[delegation] outcome ok";
                delivering.park(RequestId(request), line).expect("park");
                let start = Instant::now();
                let batch = delivering.boundary(Budget(4096)).expect("boundary");
                let batch = batch.expect("one line");
                delivering
                    .settle(batch.id, &[Outcome::Delivered])
                    .expect("settle");
                took += start.elapsed();
            }
            took
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_requests
}
criterion_main!(benches);
