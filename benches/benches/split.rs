//! The split function alone, per line: `parkline::split` over 13, 1,000 and 100,000 parked lines
//! with a budget that takes them all (the worst case: every item is costed). Baseline in the same
//! run: counting the characters of the same lines, which any char-budgeted split must do.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use parkline::{Budget, Item, RequestId, Seq, split};
use parkline_benches::fixture::completion_line;

const LINES: [u64; 3] = [13, 1_000, 100_000];

fn items(n: u64) -> Vec<Item> {
    (0..n)
        .map(|i| Item::new(Seq(i + 1), RequestId(i), completion_line(i)))
        .collect()
}

fn bench_split(c: &mut Criterion) {
    let mut group = c.benchmark_group("split");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in LINES {
        let items = items(n);
        let budget = Budget(items.iter().map(|item| item.line.chars().count() + 1).sum());
        assert_eq!(
            split(&items, budget),
            items.len(),
            "the budget takes every line"
        );
        group.throughput(Throughput::Elements(n));
        group.bench_function(BenchmarkId::new("parkline_split", n), |b| {
            b.iter(|| split(black_box(&items), black_box(budget)))
        });
        group.bench_function(BenchmarkId::new("count_chars", n), |b| {
            b.iter(|| {
                black_box(&items)
                    .iter()
                    .map(|item| item.line.chars().count() + 1)
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_split);
criterion::criterion_main!(benches);
