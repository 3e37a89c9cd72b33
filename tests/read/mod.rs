//! Read-side conformance tests, a module per concern: seed acceptance 4, one test per requirement
//! of `spec/read.md` (R1..R16), the differential proptest of the crate (`parkline::read`) against
//! the reference (`parkline_model::read`) through `parkline_harness::read::check`, and the
//! known-bad read protocols (the harness's wrappers around `Transcript::read`) each caught by that
//! same check.

mod acceptance;
mod corpus;
mod differential;
mod examples;
mod exhaustive;
mod known_bad;
mod r1_to_r8;
mod r9_to_r16;
mod rebuild;

use parkline::RequestId;
use parkline::read::{ChildId, Cursor, ReadRequest, Selector, Transcript, TurnId, TurnSeq, Window};

use crate::env_usize;

/// Differential cases: `PARKLINE_READ_CASES` (each case runs up to 60 ops, every read on both
/// sides; the reference renders every candidate answer, so a case costs far more than a
/// delivery case).
fn cases() -> u32 {
    u32::try_from(env_usize("PARKLINE_READ_CASES", 1000)).unwrap_or(u32::MAX)
}

fn child(name: &str) -> Transcript {
    Transcript::new(ChildId::new(name).expect("valid child id"))
}

fn turn_id(id: &str) -> TurnId {
    TurnId::new(id).expect("valid turn id")
}

fn push(transcript: &mut Transcript, seq: u64, text: &str) {
    transcript
        .push_turn(turn_id(&format!("t{seq}")), TurnSeq(seq), text)
        .expect("seqs increase");
}

fn read(transcript: &Transcript, selector: Selector, chars_max: usize) -> Window {
    transcript
        .read(&ReadRequest::new(selector, chars_max))
        .expect("the read fits")
}

fn since(transcript: &Transcript, cursor: &Cursor, chars_max: usize) -> Window {
    read(transcript, Selector::Since(cursor.clone()), chars_max)
}

fn seqs(window: &Window) -> Vec<u64> {
    window.whole.iter().map(|turn| turn.seq.0).collect()
}

fn busy_child() -> Transcript {
    let mut c = child("c");
    for seq in 1..=3 {
        push(&mut c, seq, &format!("turn {seq} text ").repeat(4));
    }
    c.set_partial(Some("partial output ".repeat(5)));
    c.open_request(RequestId(1), "build the model")
        .expect("new");
    c.open_request(RequestId(2), "write the spec").expect("new");
    c.terminate_request(RequestId(2), "write the spec: done")
        .expect("open");
    c
}
