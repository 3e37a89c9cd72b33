//! Exhaustive: every reachable state of the read model, every read, crate against reference, and
//! every known-bad read protocol caught by the same replay.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use parkline_harness::known_bad::KnownBad;
use parkline_harness::read as read_harness;

/// Every transcript the read model reaches at its default bounds, searched once for every test
/// of this file (the search was most of each known-bad switch's replay).
fn model_transcripts() -> &'static [parkline_model::read::RefTranscript] {
    static TRANSCRIPTS: OnceLock<Vec<parkline_model::read::RefTranscript>> = OnceLock::new();
    TRANSCRIPTS.get_or_init(search_transcripts)
}

fn search_transcripts() -> Vec<parkline_model::read::RefTranscript> {
    use parkline_model::read::ReadModel;
    use stateright::Model;

    let model = ReadModel::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut transcripts = Vec::new();
    let mut queue: std::collections::VecDeque<_> = model.init_states().into();
    let mut states = BTreeSet::new();
    while let Some(state) = queue.pop_front() {
        if !states.insert(format!("{state:?}")) {
            continue;
        }
        if seen.insert(format!("{:?}", state.transcript)) {
            transcripts.push(state.transcript.clone());
        }
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        for action in actions {
            if let Some(next) = model.next_state(&state, action) {
                queue.push_back(next);
            }
        }
    }
    assert_eq!(states.len(), parkline_model::read::DEFAULT_UNIQUE_STATES);
    transcripts
}

/// Every read of every model transcript on the crate (with `known_bad`), compared with the
/// reference: (transcripts, reads, reads answered), or the first divergence.
fn exhaustive(known_bad: Option<KnownBad>) -> Result<(usize, usize, usize), String> {
    use parkline_model::read::{RefHistory, RefReadRequest, RefSelector, cursor_text};

    let full = std::env::var("PARKLINE_READ_EXHAUSTIVE").is_ok_and(|v| v == "full");
    let budgets: Vec<usize> = if full {
        (100..=400).step_by(10).collect()
    } else {
        vec![0, 180, 240, 270, 310]
    };
    let transcripts = model_transcripts();
    let (mut reads, mut answered) = (0, 0);
    for t in transcripts {
        let transcript = read_harness::transcript_of(t)?;
        let latest = t.turns.last().map_or(0, |turn| turn.seq);
        let mut selectors: Vec<RefSelector> = (0..=latest + 1)
            .map(|seq| {
                let turn = t.turns.iter().find(|turn| turn.seq == seq);
                let turn = turn.map_or(format!("t{seq}"), |turn| turn.id.clone());
                RefSelector::Since(cursor_text(&t.child, seq, Some(&turn)))
            })
            .collect();
        // Section 5.2: a cursor after another turn at the same seq, as after a rebuild.
        selectors.extend(
            (1..=latest).map(|seq| RefSelector::Since(cursor_text(&t.child, seq, Some("rebuilt")))),
        );
        selectors.push(RefSelector::Since(cursor_text("other", 0, None)));
        selectors.extend((0..=3).map(RefSelector::Latest));
        for turn in &t.turns {
            for offset in [0, 1, turn.text.chars().count()] {
                selectors.push(RefSelector::Turn {
                    id: turn.id.clone(),
                    offset,
                });
            }
        }
        for selector in &selectors {
            for &chars_max in &budgets {
                for history in [RefHistory::Open, RefHistory::All, RefHistory::None] {
                    let request = RefReadRequest {
                        selector: selector.clone(),
                        chars_max,
                        history,
                    };
                    let window =
                        read_harness::compare_read_with(&transcript, known_bad, t, &request)
                            .map_err(|d| format!("{t:?}\n{request:?}\n{d}"))?;
                    reads += 1;
                    answered += usize::from(window.is_some());
                }
            }
        }
    }
    Ok((transcripts.len(), reads, answered))
}

/// Every transcript the read model reaches at its default bounds (`DEFAULT_UNIQUE_STATES`), rebuilt in the
/// crate, answers every read exactly as the reference: each cursor from the start to past the
/// end, a foreign cursor, `n:0..=3`, `turn:` of each turn at offsets 0, 1 and its end, each
/// request history, over budgets around the framing (every 10 chars from 100 to 400 with
/// `PARKLINE_READ_EXHAUSTIVE=full`).
#[test]
fn exhaustive_every_model_transcript_every_read_matches_the_reference() {
    let (transcripts, reads, answered) = exhaustive(None).unwrap_or_else(|d| panic!("{d}"));
    println!("{transcripts} transcripts, {reads} reads, {answered} answered");
    assert!(transcripts > 50, "{transcripts}");
    assert!(answered * 3 > reads, "{answered} of {reads}");
}

/// The same exhaustive replay catches each known-bad read switch.
#[test]
fn exhaustive_replay_catches_every_known_bad_read_switch() {
    for bad in KnownBad::READ {
        assert!(exhaustive(Some(bad)).is_err(), "{bad} not caught");
    }
}
