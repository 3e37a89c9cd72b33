//! A `since:<cursor>` read returning the 10 newest turns from histories of 100, 10,000 and
//! 1,000,000 completed turns (its cost must not grow with the history), beside an `n:1` read of
//! the same transcript and, as the baseline that does grow, a linear scan of the history for the
//! turns after the cursor.
//!
//! Memory: before the timings, the live heap of transcripts of 100, 10,000 and 1,000,000 turns
//! is counted (the counting allocator of `parkline_benches::memory`) and printed against the
//! bytes they hold (ids + texts), in the same run, for short turns (25 bytes of id and text) and
//! for the 80-character turns the timings read. Then the `since` reads of the three histories
//! are timed interleaved (`parkline_benches::interleave`) and their medians printed as ratios
//! against the 100-turn history, before criterion's sequential timings.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use parkline::read::{
    ChildId, Cursor, ReadRequest, RequestHistory, Selector, Transcript, TurnId, TurnSeq,
};
use parkline_benches::interleave;
use parkline_benches::memory::{self, Heap};

#[global_allocator]
static HEAP: Heap = memory::heap();

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
    transcript.set_partial(Some("working on the next card".into()));
    (transcript, cursor)
}

fn request(selector: Selector) -> ReadRequest {
    let mut request = ReadRequest::new(selector, MAX_CHARS);
    request.requests = RequestHistory::None;
    request
}

/// Makes the id and text of turn `i`.
type MakeTurn = fn(u64) -> (String, String);

/// A short turn: `t{i}` and an 18-byte text, 25 bytes together on average at 10^6 turns.
fn short_turn(i: u64) -> (String, String) {
    (format!("t{i}"), format!("result {i:011}"))
}

/// The turns the timings read: `t{i}` and [`TURN_CHARS`] characters of text.
fn long_turn(i: u64) -> (String, String) {
    (format!("t{i}"), turn_text(i))
}

/// Counts the live heap of a transcript of `turns` turns made by `make`; returns the bytes it
/// holds (ids + texts), its live heap and the time it took to build (making the ids and texts
/// included).
fn heap_of(turns: u64, make: MakeTurn) -> (usize, usize, Duration) {
    let mut held = 0;
    let start = Instant::now();
    let (transcript, live) = memory::live_bytes_of(&HEAP, || {
        let mut transcript = Transcript::new(ChildId::new("s980").expect("child id"));
        for i in 1..=turns {
            let (id, text) = make(i);
            held += id.len() + text.len();
            let id = TurnId::new(id).expect("turn id");
            transcript.push_turn(id, TurnSeq(i), text).expect("push");
        }
        transcript
    });
    let built = start.elapsed();
    assert_eq!(transcript.turns().len() as u64, turns, "every turn is held");
    drop(transcript);
    (held, live, built)
}

/// Prints live heap against the bytes held, same run, one row per fixture and size.
fn report_memory() {
    println!("read/memory: live heap of a transcript against the bytes it holds (ids + texts)");
    println!(
        "{:>8} {:>10} {:>14} {:>14} {:>10} {:>12} {:>10}",
        "turns", "turn", "held bytes", "live heap", "per turn", "heap / held", "build ms"
    );
    let fixtures: [(&str, MakeTurn); 2] = [("25 bytes", short_turn), ("80 chars", long_turn)];
    for (name, make) in fixtures {
        for turns in HISTORIES {
            let (held, live, built) = heap_of(turns, make);
            println!(
                "{turns:>8} {name:>10} {held:>14} {live:>14} {:>10.1} {:>11.2}x {:>10.1}",
                live as f64 / turns as f64,
                live as f64 / held as f64,
                built.as_secs_f64() * 1e3
            );
            // The goal this table shows; a regression stops the bench here.
            assert!(
                live < 2 * held,
                "{turns} turns of {name}: live heap {live} is not under 2x the {held} held"
            );
        }
    }
}

/// The `since` read of each history, interleaved (one read of each per round, the first of a
/// round rotating), so the ratio of the medians compares histories, not minutes of a shared
/// machine.
fn report_interleaved(fixtures: &[(u64, Transcript, Cursor)]) {
    let rounds = interleave::rounds(20_000);
    let mut contenders: Vec<Box<dyn FnMut() -> Duration + '_>> = fixtures
        .iter()
        .map(|(_, transcript, cursor)| {
            let since = request(Selector::Since(cursor.clone()));
            Box::new(move || {
                let start = Instant::now();
                black_box(transcript.read(black_box(&since)).expect("read"));
                start.elapsed()
            }) as Box<dyn FnMut() -> Duration>
        })
        .collect();
    let mut refs: Vec<&mut dyn FnMut() -> Duration> = contenders
        .iter_mut()
        .map(|contender| contender.as_mut() as &mut dyn FnMut() -> Duration)
        .collect();
    let medians = interleave::medians(rounds, &mut refs);
    let base = medians[0].as_secs_f64();
    let figures: Vec<String> = fixtures
        .iter()
        .zip(&medians)
        .map(|((history, _, _), median)| {
            format!(
                "{history} turns {:.2} us ({:.2}x)",
                median.as_secs_f64() * 1e6,
                median.as_secs_f64() / base
            )
        })
        .collect();
    println!(
        "read interleaved: since of {NEW_TURNS} turns, {rounds} rounds, medians against {} turns: {}",
        fixtures[0].0,
        figures.join(", ")
    );
}

fn bench_read(c: &mut Criterion) {
    report_memory();
    let fixtures: Vec<(u64, Transcript, Cursor)> = HISTORIES
        .into_iter()
        .map(|history| {
            let (transcript, cursor) = fixture(history);
            (history, transcript, cursor)
        })
        .collect();
    report_interleaved(&fixtures);
    let mut group = c.benchmark_group("read");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (history, transcript, cursor) in &fixtures {
        let history = *history;
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
