//! A `since:<cursor>` read returning the 10 newest turns from histories of 100, 10,000 and
//! 1,000,000 completed turns (its cost must not grow with the history), beside an `n:1` read of
//! the same transcript and, as the baseline that does grow, a linear scan of the history for the
//! turns after the cursor.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use parkline::read::{
    ChildId, Cursor, ReadRequest, RequestHistory, Selector, Transcript, TurnId, TurnSeq,
};

const HISTORIES: [u64; 3] = [100, 10_000, 1_000_000];
const NEW_TURNS: u64 = 10;
const TURN_CHARS: usize = 80;
const MAX_CHARS: usize = 24_000;

fn turn_text(i: u64) -> String {
    let mut text = format!("turn {i}: ");
    while text.len() < TURN_CHARS {
        text.push_str("finding. ");
    }
    text.truncate(TURN_CHARS);
    text
}

fn push(transcript: &mut Transcript, i: u64) {
    let id = TurnId::new(format!("t{i}")).expect("turn id");
    transcript
        .push_turn(id, TurnSeq(i), turn_text(i))
        .expect("push");
}

/// A transcript of `history` turns, and a cursor just before its newest [`NEW_TURNS`].
fn fixture(history: u64) -> (Transcript, Cursor) {
    let mut transcript = Transcript::new(ChildId::new("s980").expect("child id"));
    let old = history - NEW_TURNS;
    for i in 1..=old {
        push(&mut transcript, i);
    }
    let window = transcript
        .read(&request(Selector::Latest { n: 1 }))
        .expect("read");
    let cursor = window.next.expect("an n:1 read returns a next cursor");
    assert_eq!(
        cursor.seq(),
        TurnSeq(old),
        "the cursor is after the old turns"
    );
    for i in old + 1..=history {
        push(&mut transcript, i);
    }
    transcript.set_in_flight(Some("working on the next card".into()));
    (transcript, cursor)
}

fn request(selector: Selector) -> ReadRequest {
    let mut request = ReadRequest::new(selector, MAX_CHARS);
    request.requests = RequestHistory::None;
    request
}

fn bench_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for history in HISTORIES {
        let (transcript, cursor) = fixture(history);
        let since = request(Selector::Since(cursor.clone()));
        let latest = request(Selector::Latest { n: 1 });
        let window = transcript.read(&since).expect("since read");
        assert_eq!(
            window.whole.len(),
            NEW_TURNS as usize,
            "10 turns after the cursor"
        );
        group.bench_function(BenchmarkId::new("since_cursor_10_turns", history), |b| {
            b.iter(|| transcript.read(black_box(&since)).expect("read"))
        });
        group.bench_function(BenchmarkId::new("n1", history), |b| {
            b.iter(|| transcript.read(black_box(&latest)).expect("read"))
        });
        group.bench_function(BenchmarkId::new("linear_scan_since", history), |b| {
            b.iter(|| {
                let after = black_box(&cursor).seq();
                transcript
                    .turns()
                    .iter()
                    .filter(|turn| turn.seq > after)
                    .map(|turn| turn.text.len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_read);
criterion::criterion_main!(benches);
