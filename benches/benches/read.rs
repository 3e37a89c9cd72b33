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
//!
//! One long turn: 2,000 characters of a 40,000,000-character turn of mixed-width text (1 to 4
//! bytes a character, so the byte offset of a character cannot be computed), read by `turn:<id>
//! offset <k>` at offset 0 and at its last 2,000 characters (and, beside them, at the offset
//! late in the turn where the char index scans the most), interleaved; each ratio against offset
//! 0 is the median of the per-round ratios (as the table bench's rows). Following a long turn's
//! `rest at` references reads each such window once, so a read whose cost grows with the offset
//! makes the whole turn quadratic (R2). Goal: within 1.2x.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use parkline::read::{
    ChildId, Cursor, ReadRequest, RequestHistory, Selector, Transcript, TurnId, TurnSeq,
};
use parkline_benches::interleave::{self, Quartiles};
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

/// The characters of the long turn, and of the window read from it.
const LONG_TURN_CHARS: usize = 40_000_000;
const WINDOW_CHARS: usize = 2_000;

/// A transcript of one turn `long` of [`LONG_TURN_CHARS`] characters of mixed width.
fn long_turn_fixture() -> Transcript {
    let pattern = "parkline reads é and ü, 日本語の文, and 🦀 crabs; ";
    let text: String = pattern.chars().cycle().take(LONG_TURN_CHARS).collect();
    assert!(
        text.len() > LONG_TURN_CHARS,
        "not ASCII: the char index is used"
    );
    let mut transcript = Transcript::new(ChildId::new("s980").expect("child id"));
    let id = TurnId::new("long").expect("turn id");
    transcript.push_turn(id, TurnSeq(1), text).expect("push");
    transcript
}

/// The `turn:long offset <offset>` read whose excerpt holds exactly [`WINDOW_CHARS`]
/// characters: the budget is the framing of that read plus the window.
fn long_turn_request(transcript: &Transcript, offset: usize) -> ReadRequest {
    let selector = Selector::Turn {
        id: TurnId::new("long").expect("turn id"),
        offset,
    };
    let probe = transcript
        .read(&request(selector.clone()).with_chars_max(WINDOW_CHARS + 200))
        .expect("read");
    let shown = probe.excerpt.as_ref().map_or(0, |e| e.to - e.from);
    let exact = request(selector).with_chars_max(probe.chars - shown + WINDOW_CHARS);
    let window = transcript.read(&exact).expect("read");
    let excerpt = window.excerpt.expect("an excerpt of the long turn");
    assert_eq!((excerpt.from, excerpt.to), (offset, offset + WINDOW_CHARS));
    exact
}

/// The long turn read at offset 0, at its end and where the index scans the most, interleaved
/// (each against offset 0, per round), then by criterion.
fn bench_long_turn(c: &mut Criterion) {
    let transcript = &long_turn_fixture();
    // The end (the row's goal), and one character before a multiple of 4,096 (so of the
    // index's stride), late in the turn: the longest scan, and a window cut by the budget as
    // offset 0's is (a window that runs to the turn's end skips the search for where to cut).
    let offsets = [0, LONG_TURN_CHARS - WINDOW_CHARS, 9_764 * 4_096 - 1];
    let requests = offsets.map(|offset| long_turn_request(transcript, offset));
    let rounds = interleave::rounds(2_000);
    let mut reads = requests.each_ref().map(|request| {
        move || {
            let start = Instant::now();
            black_box(transcript.read(black_box(request)).expect("read"));
            start.elapsed()
        }
    });
    let [start, end, worst] = &mut reads;
    let times = interleave::samples(rounds, &mut [start, end, worst]);
    for (offset, at) in offsets.iter().zip(&times).skip(1) {
        let ratio = Quartiles::of_ratios(at, &times[0]);
        println!(
            "read long turn: {WINDOW_CHARS} of {LONG_TURN_CHARS} chars, {rounds} rounds, offset \
             {offset} {:.2} us / offset 0 {:.2} us = {:.2}x ({:.2}-{:.2}x)",
            Quartiles::of_durations(at).median,
            Quartiles::of_durations(&times[0]).median,
            ratio.median,
            ratio.q1,
            ratio.q3
        );
    }
    let mut group = c.benchmark_group("read_long_turn");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (offset, request) in offsets.iter().zip(&requests) {
        group.bench_function(BenchmarkId::new("2000_chars_at", offset), |b| {
            b.iter(|| transcript.read(black_box(request)).expect("read"))
        });
    }
    group.finish();
}

criterion::criterion_group!(benches, bench_read, bench_long_turn);
criterion::criterion_main!(benches);
