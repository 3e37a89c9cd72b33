//! One read compared: the crate's transcript built from the reference's, and the crate's answer
//! (window or typed error) against the reference's, field by field.

use parkline::read::{
    ChildId, Cursor, ERROR_CHARS_MAX, Partial, ReadRequest, RequestHistory, Selector, Transcript,
    TurnId, TurnSeq, Window,
};
use parkline::{Error, ErrorKind, RequestId};
use parkline_model::read::{
    RefCursor, RefHistory, RefPartial, RefReadError, RefReadRequest, RefSelector, RefTranscript,
    RefWindow, cursor_text_of, read,
};

use crate::known_bad::{KnownBad, read_as};

/// The crate's transcript holding what `model` holds (turns, partial turn, requests with
/// their current records).
///
/// # Errors
///
/// The crate refused to build it (an id or seq the crate does not accept).
pub fn transcript_of(model: &RefTranscript) -> Result<Transcript, String> {
    let child = ChildId::new(model.child.as_str()).map_err(|e| e.to_string())?;
    let mut transcript = Transcript::new(child);
    for turn in &model.turns {
        transcript
            .push_turn(id(&turn.id)?, TurnSeq(turn.seq), turn.text.clone())
            .map_err(|e| format!("push_turn: {e}"))?;
    }
    transcript.set_partial(model.partial.clone());
    for request in &model.requests {
        transcript
            .open_request(RequestId(request.id), request.record.clone())
            .map_err(|e| format!("open_request: {e}"))?;
        if !request.open {
            transcript
                .terminate_request(RequestId(request.id), request.record.clone())
                .map_err(|e| format!("terminate_request: {e}"))?;
        }
    }
    Ok(transcript)
}

/// One read on the crate's `transcript` and on the reference's `model` (which must hold the
/// same), compared as [`check`](super::check) compares them: the crate's window when both
/// answered, `None` when both refused alike.
///
/// # Errors
///
/// What differed, with the requirement id.
pub fn compare_read(
    transcript: &Transcript,
    model: &RefTranscript,
    request: &RefReadRequest,
) -> Result<Option<Window>, String> {
    compare_read_with(transcript, None, model, request)
}

/// [`compare_read`] with the crate's read broken as `known_bad` says ([`read_as`]).
///
/// # Errors
///
/// What differed, with the requirement id.
pub fn compare_read_with(
    transcript: &Transcript,
    known_bad: Option<KnownBad>,
    model: &RefTranscript,
    request: &RefReadRequest,
) -> Result<Option<Window>, String> {
    Ok(compare_answer(transcript, known_bad, model, request)?
        .ok()
        .map(|(window, _)| window))
}

/// What a read compared by [`compare_answer`] gave on the crate's side: when both sides answered
/// alike, the crate's window and the text of its next cursor (which the comparison wrote; the
/// caller needs it too, and each writing is a CRC); when both refused alike, the crate's error
/// (its `needed_chars` is what the caller asks of a budget error; reading again to get it gave
/// the same error).
pub(super) type Compared = Result<(Window, Option<String>), Error>;

/// [`compare_read_with`], keeping what the crate answered.
pub(super) fn compare_answer(
    transcript: &Transcript,
    known_bad: Option<KnownBad>,
    model: &RefTranscript,
    request: &RefReadRequest,
) -> Result<Compared, String> {
    let expected = read(model, request);
    let crate_history = match request.history {
        RefHistory::Open => RequestHistory::Open,
        RefHistory::All => RequestHistory::All,
        RefHistory::None => RequestHistory::None,
    };
    let chars_max = request.chars_max;
    let answer = crate_selector(&request.selector)?.and_then(|selector| {
        let request = ReadRequest::new(selector, chars_max).with_requests(crate_history);
        read_as(transcript, known_bad, &request)
    });
    match (answer, expected) {
        (Ok(window), Ok(expected)) => {
            let next = same_window(&window, &expected, model)?;
            if window.chars > chars_max || window.text.chars().count() > chars_max {
                return Err(format!(
                    //= spec/read.md#r1-one-overall-budget
                    //= type=test
                    //# The response text of a window MUST be at most `chars_max` chars: framing,
                    //# turns, the partial turn and requests **together**.
                    "R1: {} chars for chars_max {chars_max}",
                    window.text.chars().count()
                ));
            }
            Ok(Ok((window, next)))
        }
        (Err(error), Err(expected)) => {
            same_error(&error, expected)?;
            Ok(Err(error))
        }
        (Ok(window), Err(expected)) => Err(format!(
            "the crate answered but the reference refuses ({expected:?}); crate text:\n{}",
            window.text
        )),
        (Err(error), Ok(expected)) => Err(format!(
            "the crate refuses ({error}) but the reference answers:\n{}",
            expected.text
        )),
    }
}

/// The crate's selector for the reference's: `Err` for an id the crate refuses, `Ok(Err)` for a
/// cursor text the crate does not parse (a read error, compared like any other).
pub(super) fn crate_selector(selector: &RefSelector) -> Result<Result<Selector, Error>, String> {
    Ok(match selector {
        RefSelector::Latest(n) => Ok(Selector::Latest { n: *n }),
        RefSelector::Since(text) => Cursor::parse(text).map(Selector::Since),
        RefSelector::SinceTurn(turn) => Ok(Selector::SinceTurn(id(turn)?)),
        RefSelector::Turn { id: turn, offset } => Ok(Selector::Turn {
            id: id(turn)?,
            offset: *offset,
        }),
    })
}

pub(super) fn same_error(error: &Error, expected: RefReadError) -> Result<(), String> {
    let (kind, needed) = match expected {
        RefReadError::CursorDamaged => (ErrorKind::CursorDamaged, None),
        RefReadError::CursorRetired => (ErrorKind::CursorRetired, None),
        RefReadError::CursorOtherChild => (ErrorKind::CursorOtherChild, None),
        RefReadError::CursorAhead => (ErrorKind::CursorAhead, None),
        RefReadError::CursorDiverged => (ErrorKind::CursorDiverged, None),
        RefReadError::UnknownTurn => (ErrorKind::UnknownTurn, None),
        RefReadError::OffsetOutOfRange => (ErrorKind::OffsetOutOfRange, None),
        RefReadError::CharsMaxTooSmall { needed } => (ErrorKind::CharsMaxTooSmall, Some(needed)),
    };
    // R7: what an error echoes of the input is capped, whatever the input's length.
    let text = error.to_string();
    if text.chars().count() > ERROR_CHARS_MAX {
        return Err(format!(
            "R7: a {:?} error of {} chars (at most {ERROR_CHARS_MAX})",
            error.kind(),
            text.chars().count()
        ));
    }
    // R7: a refused cursor comes with the read that resumes following.
    let cursor_error = matches!(
        error.kind(),
        ErrorKind::CursorDamaged
            | ErrorKind::CursorRetired
            | ErrorKind::CursorOtherChild
            | ErrorKind::CursorAhead
            | ErrorKind::CursorDiverged
    );
    if cursor_error && !text.contains("resume with since:") {
        return Err(format!("R7: the error names no way to resume: {text}"));
    }
    if error.kind() != kind || error.needed_chars() != needed {
        return Err(format!(
            "R7: the crate refuses with {:?} (needed {:?}), the reference with {expected:?}",
            error.kind(),
            error.needed_chars()
        ));
    }
    Ok(())
}

/// The crate's window against the reference's, field by field; the text of the window's next
/// cursor, when equal.
pub(super) fn same_window(
    window: &Window,
    expected: &RefWindow,
    model: &RefTranscript,
) -> Result<Option<String>, String> {
    if window.text != expected.text {
        return Err(format!(
            //= spec/read.md#r14-exact-response-text
            //= type=test
            //# The response text MUST be exactly as section 4 specifies, so that the caller (a
            //# model reading the text) and the tests see the same thing, and every window's text
            //# says what it holds, what it left out and where to continue.
            "R14: response texts differ\n--- crate\n{}--- reference\n{}",
            window.text, expected.text
        ));
    }
    let whole: Vec<u64> = window.whole.iter().map(|turn| turn.seq.0).collect();
    if whole != expected.whole {
        return Err(format!(
            "R4: whole turns {whole:?}, reference {:?}",
            expected.whole
        ));
    }
    let excerpt = window
        .excerpt
        .as_ref()
        .map(|e| (e.turn.seq.0, e.from, e.to, e.total));
    let expected_excerpt = expected.excerpt.map(|e| (e.seq, e.from, e.to, e.total));
    if excerpt != expected_excerpt {
        return Err(format!(
            "R8: excerpt {excerpt:?}, reference {expected_excerpt:?}"
        ));
    }
    let omitted = (
        window.omitted.count,
        window.omitted.first.as_ref().map(|turn| turn.seq.0),
        window.omitted.last.as_ref().map(|turn| turn.seq.0),
    );
    let expected_omitted = (
        expected.omitted.len(),
        expected.omitted.first().copied(),
        expected.omitted.last().copied(),
    );
    if omitted != expected_omitted {
        return Err(format!(
            "R3: omitted {omitted:?}, reference {expected_omitted:?}"
        ));
    }
    let partial = match window.partial {
        Partial::Absent => RefPartial::Absent,
        Partial::Whole { chars } => RefPartial::Whole(chars),
        Partial::Cut { shown, total } => RefPartial::Cut { shown, total },
        Partial::Omitted { total } => RefPartial::Omitted(total),
        Partial::New { from, seen, total } => RefPartial::New { from, seen, total },
        Partial::Replaced { shown, total } => RefPartial::Replaced { shown, total },
        other => return Err(format!("a partial form the reference has not: {other:?}")),
    };
    if partial != expected.partial {
        return Err(format!(
            "R10: partial {partial:?}, reference {:?}",
            expected.partial
        ));
    }
    if (window.requests_shown, window.requests_omitted)
        != (expected.requests_shown, expected.requests_omitted)
    {
        return Err(format!(
            "R13: requests shown/omitted {}/{}, reference {}/{}",
            window.requests_shown,
            window.requests_omitted,
            expected.requests_shown,
            expected.requests_omitted
        ));
    }
    let next = window.next.as_ref().map(|cursor| cursor.to_string());
    let expected_next = expected.next.map(|seq| {
        let turn = model.turns.iter().find(|turn| turn.seq == seq);
        let turn = turn.map(|turn| turn.id.as_str());
        cursor_text_of(&RefCursor::new(&model.child, seq, turn, expected.next_seen))
    });
    // Section 5.3: the window says as a value what its header says of a v2 cursor.
    let marked = expected
        .text
        .lines()
        .next()
        .is_some_and(|header| header.ends_with(" (v2 cursor: turn unchecked)]"));
    if window.cursor_unchecked != marked {
        return Err(format!(
            "R7: cursor_unchecked {}, the header says {marked}",
            window.cursor_unchecked
        ));
    }
    if next != expected_next {
        return Err(format!(
            "R4: next cursor {next:?}, reference {expected_next:?}"
        ));
    }
    if window.chars != expected.chars {
        return Err(format!(
            "R1: chars {}, reference {}",
            window.chars, expected.chars
        ));
    }
    Ok(next)
}

pub(super) fn id(text: &str) -> Result<TurnId, String> {
    TurnId::new(text).map_err(|e| format!("turn id {text}: {e}"))
}
