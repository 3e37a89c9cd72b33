//! The response text of a read (R14): the size of each element, computed without building it so
//! that the plan can ask "does this fit" cheaply, the trailer, and the rendering of the planned
//! window. The size functions and the rendering spell the same formats and must change together.

use std::fmt::Write as _;

use super::plan::{Plan, Progress};
use super::request::Selector;
use super::window::{Excerpt, Partial, RequestState, Window};
use crate::ids::RequestId;

impl Plan<'_> {
    pub(super) fn trailer(&self, progress: &Progress, text: &mut String) {
        let excerpt = usize::from(progress.excerpt.is_some());
        let whole = progress.taken - excerpt;
        let omitted = self.candidates.len() - progress.taken;
        // Writing to a `String` cannot fail.
        let _ = write!(
            text,
            "[parkline read end: {whole} whole, {excerpt} excerpt, {omitted} omitted"
        );
        if let Some((first, last)) = self.omitted_range(progress) {
            let _ = write!(
                text,
                " (turn:{} to turn:{})",
                self.turn(first).id,
                self.turn(last).id
            );
        }
        //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
        //# A partial turn that did not fit at all and requests that did not fit MUST be reported
        //# too.
        // R3: nothing is left out silently.
        if self.partial_omitted(progress) {
            text.push_str(", in-flight omitted");
        }
        let requests_omitted = self.requests_total() - progress.requests_shown;
        if requests_omitted > 0 {
            let _ = write!(text, ", {requests_omitted} requests omitted");
        }
        match self.next(progress) {
            Some(cursor) => {
                text.push_str("; next since:");
                text.push_str(&cursor.encode());
                text.push_str("]\n");
            }
            None => text.push_str("; next none]\n"),
        }
    }

    /// The characters of [`trailer`](Plan::trailer)'s text, counted without writing it: the fit
    /// test of every allocation step. Ids and cursors are ASCII, so bytes are characters.
    pub(super) fn trailer_chars(&self, progress: &Progress) -> usize {
        let excerpt = usize::from(progress.excerpt.is_some());
        let whole = progress.taken - excerpt;
        let omitted = self.candidates.len() - progress.taken;
        let mut n = "[parkline read end: ".len()
            + digits(whole)
            + " whole, ".len()
            + digits(excerpt)
            + " excerpt, ".len()
            + digits(omitted)
            + " omitted".len();
        if let Some((first, last)) = self.omitted_range(progress) {
            n += " (turn:".len()
                + self.turn(first).id.len()
                + " to turn:".len()
                + self.turn(last).id.len()
                + ")".len();
        }
        if self.partial_omitted(progress) {
            n += ", in-flight omitted".len();
        }
        let requests_omitted = self.requests_total() - progress.requests_shown;
        if requests_omitted > 0 {
            n += ", ".len() + digits(requests_omitted) + " requests omitted".len();
        }
        n + match self.next_chars(progress) {
            Some(cursor) => "; next since:".len() + cursor + "]\n".len(),
            None => "; next none]\n".len(),
        }
    }

    fn partial_omitted(&self, progress: &Progress) -> bool {
        self.partial_total().is_some()
            && matches!(progress.partial, None | Some(Partial::Omitted { .. }))
    }

    pub(super) fn whole_chars(&self, index: usize) -> usize {
        let turn = self.turn(index);
        let chars = self.transcript.turns.chars(index);
        // "[turn {id} seq {seq}: {chars} chars]\n{text}\n"
        "[turn ".len()
            + turn.id.len()
            + " seq ".len()
            + digits_u64(turn.seq.0)
            + ": ".len()
            + digits(chars)
            + " chars]\n".len()
            + chars
            + 1
    }

    pub(super) fn excerpt_chars(&self, index: usize, from: usize, to: usize) -> usize {
        let turn = self.turn(index);
        let total = self.transcript.turns.chars(index);
        // "[turn {id} seq {seq}: excerpt chars {from}..{to} of {total}{rest}]\n{text}\n"
        let rest = if to < total {
            // ", rest at turn:{id} offset {to}"
            ", rest at turn:".len() + turn.id.len() + " offset ".len() + digits(to)
        } else {
            0
        };
        "[turn ".len()
            + turn.id.len()
            + " seq ".len()
            + digits_u64(turn.seq.0)
            + ": excerpt chars ".len()
            + digits(from)
            + "..".len()
            + digits(to)
            + " of ".len()
            + digits(total)
            + rest
            + "]\n".len()
            + (to - from)
            + 1
    }

    pub(super) fn partial_element_chars(part: Partial) -> usize {
        match part {
            // "[in-flight: {total} chars]\n{text}\n"
            Partial::Whole { chars } => {
                "[in-flight: ".len() + digits(chars) + " chars]\n".len() + chars + 1
            }
            // "[in-flight: last {shown} of {total} chars]\n{text}\n"
            Partial::Cut { shown, total } => {
                "[in-flight: last ".len()
                    + digits(shown)
                    + " of ".len()
                    + digits(total)
                    + " chars]\n".len()
                    + shown
                    + 1
            }
            // "[in-flight, replaced: {total} chars]\n" or "... last {shown} of {total} chars]\n"
            Partial::Replaced { shown, total } if shown == total => {
                "[in-flight, replaced: ".len() + digits(total) + " chars]\n".len() + total + 1
            }
            Partial::Replaced { shown, total } => {
                "[in-flight, replaced: last ".len()
                    + digits(shown)
                    + " of ".len()
                    + digits(total)
                    + " chars]\n".len()
                    + shown
                    + 1
            }
            // "[in-flight: chars {from}..{total} of {total}]\n{text}\n"
            Partial::New { from, total, .. } => {
                "[in-flight: chars ".len()
                    + digits(from)
                    + "..".len()
                    + digits(total)
                    + " of ".len()
                    + digits(total)
                    + "]\n".len()
                    + (total - from)
                    + 1
            }
            Partial::Absent | Partial::Omitted { .. } => 0,
        }
    }

    fn push_request_line(text: &mut String, id: RequestId, state: RequestState, record: &str) {
        let _ = write!(text, "[request {id} ");
        text.push_str(state.word());
        text.push_str("] ");
        text.push_str(record);
        text.push('\n');
    }

    pub(super) fn request_line_chars(id: RequestId, state: RequestState, record: &str) -> usize {
        // "[request {id} {state}] {record}\n"
        "[request ".len()
            + digits_u64(id.0)
            + " ".len()
            + state.word().len()
            + "] ".len()
            + record.chars().count()
            + 1
    }

    pub(super) fn render(&self, header: String) -> Window {
        //= spec/read.md#r14-exact-response-text
        //# The response text MUST be exactly as section 4 specifies, so that the caller (a model
        //# reading the text) and the tests see the same thing, and every window's text says what it
        //# holds, what it left out and where to continue.
        let progress = &self.progress;
        let mut text = header;
        text.reserve(progress.body_chars + self.trailer_chars(progress));
        let mut whole = Vec::new();
        let mut excerpt = None;
        // Turns in seq order: allocation order for `since`, reversed for `n:k`.
        let mut indices: Vec<usize> = (0..progress.taken)
            .map(|i| self.candidates.get(i))
            .collect();
        indices.sort_unstable();
        // Writing to a `String` cannot fail: the results of `write!` below are ignored.
        for index in indices {
            let turn = self.turn(index);
            let _ = write!(text, "[turn {} seq {}: ", turn.id, turn.seq);
            match progress.excerpt {
                Some((excerpt_index, from, to)) if excerpt_index == index => {
                    let total = self.transcript.turns.chars(index);
                    let _ = write!(text, "excerpt chars {from}..{to} of {total}");
                    if to < total {
                        let _ = write!(text, ", rest at turn:{} offset {to}", turn.id);
                    }
                    text.push_str("]\n");
                    text.push_str(self.transcript.turns.text_chars(index, from, to));
                    text.push('\n');
                    excerpt = Some(Excerpt {
                        turn: self.turn_ref(index),
                        from,
                        to,
                        total,
                    });
                }
                _ => {
                    let _ = writeln!(text, "{} chars]", self.transcript.turns.chars(index));
                    text.push_str(turn.text);
                    text.push('\n');
                    whole.push(self.turn_ref(index));
                }
            }
        }
        let partial = match (progress.partial, &self.transcript.partial) {
            (Some(part), Some((partial, _))) => {
                let shown = match part {
                    Partial::Whole { chars } => {
                        let _ = writeln!(text, "[in-flight: {chars} chars]");
                        Some(partial.as_str())
                    }
                    Partial::Cut { shown, total } => {
                        let _ = writeln!(text, "[in-flight: last {shown} of {total} chars]");
                        Some(char_tail(partial, shown))
                    }
                    Partial::Replaced { shown, total } if shown == total => {
                        let _ = writeln!(text, "[in-flight, replaced: {total} chars]");
                        Some(partial.as_str())
                    }
                    Partial::Replaced { shown, total } => {
                        let _ =
                            writeln!(text, "[in-flight, replaced: last {shown} of {total} chars]");
                        Some(char_tail(partial, shown))
                    }
                    Partial::New { from, total, .. } => {
                        let _ = writeln!(text, "[in-flight: chars {from}..{total} of {total}]");
                        Some(char_tail(partial, total - from))
                    }
                    Partial::Absent | Partial::Omitted { .. } => None,
                };
                if let Some(shown) = shown {
                    text.push_str(shown);
                    text.push('\n');
                }
                part
            }
            _ => Partial::Absent,
        };
        for (id, state, record) in self.requests().take(progress.requests_shown) {
            Self::push_request_line(&mut text, id, state, record);
        }
        self.trailer(progress, &mut text);
        let chars = text.chars().count();
        Window {
            text,
            whole,
            excerpt,
            omitted: self.omitted(progress),
            partial,
            requests_shown: progress.requests_shown,
            requests_omitted: self.requests_total() - progress.requests_shown,
            next: self.next(progress),
            chars,
            cursor_unchecked: matches!(&self.request.selector, Selector::Since(c) if c.unchecked()),
        }
    }
}

fn digits(mut n: usize) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

fn digits_u64(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Characters `from..to` of `text`; costs time in proportion to `to`, not to the history.
pub(super) fn char_slice(text: &str, from: usize, to: usize) -> &str {
    let mut boundaries = text
        .char_indices()
        .map(|(byte, _)| byte)
        .chain(std::iter::once(text.len()));
    let start = boundaries.nth(from).unwrap_or(text.len());
    let end = if to > from {
        boundaries.nth(to - from - 1).unwrap_or(text.len())
    } else {
        start
    };
    &text[start..end]
}

/// The last `n` characters of `text`; costs time in proportion to `n` (R2).
fn char_tail(text: &str, n: usize) -> &str {
    let start = match n {
        0 => text.len(),
        n => text
            .char_indices()
            .rev()
            .nth(n - 1)
            .map_or(0, |(byte, _)| byte),
    };
    &text[start..]
}
