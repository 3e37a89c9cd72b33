//! The pieces every read-side error message shares: the bounded echo of a caller's input and
//! the advice on how to resume after a refused cursor, so that no error grows with its input and
//! each says what to do next.

/// The most characters of a caller's input (a cursor text, an id) that an error message echoes:
/// enough to recognise it, bounded so that a 100,000-char cursor does not make a 100,000-char
/// error that lands in the caller's context.
pub const ECHO_CHARS_MAX: usize = 64;

/// The longest message of a read-side error, in characters: the echo (at most
/// [`ECHO_CHARS_MAX`] characters, each escaped to at most 10), two ids and two cursors of at most
/// 200 characters, and the advice.
pub const ERROR_CHARS_MAX: usize = 1600;

/// `text` quoted for an error message, cut to its first [`ECHO_CHARS_MAX`] characters.
pub(super) fn echo(text: &str) -> String {
    //= spec/read.md#r7-opaque-cursor-typed-errors
    //# Every cursor error MUST say which read resumes following without repeats (section 6), and
    //# MUST NOT echo more than `ECHO_CHARS_MAX` chars of the caller's input.
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_CHARS_MAX).collect();
    if chars.next().is_none() {
        format!("{head:?}")
    } else {
        format!("{head:?}... ({} chars)", text.chars().count())
    }
}

/// What to do when a cursor is refused: the reads that resume following without repeats.
//= spec/read.md#r7-opaque-cursor-typed-errors
//# Every cursor error MUST say which read resumes following without repeats (section 6), and MUST
//# NOT echo more than `ECHO_CHARS_MAX` chars of the caller's input.
pub(super) const RESUME: &str = "resume with since:turn:<id> of the last turn you hold, or with \
                                 the start cursor if you hold none; n:1 reads the latest turn and \
                                 gives a cursor there";
