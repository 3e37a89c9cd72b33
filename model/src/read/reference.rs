//! The plain reference read: [`read`] (and [`read_variant`], the same for a known-bad
//! [`ReadVariant`]) answers one read the naive way: try candidate answers one element at a time,
//! in order, and keep each that fits. A candidate's size is counted from the lengths of its parts
//! (`Reader::length`), not by rendering it, so that a read costs time in proportion to its
//! candidates rather than to candidates times answer; the answer is rendered once.
//! [`read_checking_fit`] renders every candidate as well and reports the first whose counted
//! length differs from its rendered one, which is how the tests show that the counted fit is the
//! rendered fit. It does no I/O; the differential check of the production crate
//! (`parkline::read`) uses it as its oracle, and the model calls it for every read.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;

use super::cursor::{
    RefCursor, RefSeen, crc32, crc64, cursor_text_len, cursor_text_of, parse_cursor,
};
use super::types::{
    RefExcerpt, RefHistory, RefPartial, RefReadError, RefReadRequest, RefRequest, RefSelector,
    RefTranscript, RefTurn, RefWindow,
};
use super::variants::ReadVariant;

/// How one selected turn is in the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shown {
    Whole,
    Excerpt { from: usize, to: usize },
}

/// One candidate answer: which turns (by index into `turns`), how much of the partial turn,
/// how many requests.
#[derive(Clone, Debug, Default)]
pub(super) struct Answer {
    pub(super) turns: Vec<(usize, Shown)>,
    pub(super) partial: Option<usize>,
    pub(super) requests: usize,
}

/// How `fits` sizes a candidate.
#[derive(Clone, Copy)]
pub(super) enum Measure {
    /// Count the lengths of its parts.
    Length,
    /// Render it and count the characters (the rule itself), and record the first candidate
    /// whose size by this counting function differs.
    Checked(fn(&Reader<'_>, &Answer) -> usize),
}

pub(super) struct Reader<'a> {
    t: &'a RefTranscript,
    req: &'a RefReadRequest,
    variant: ReadVariant,
    /// Selected turn indices in allocation order.
    selected: Vec<usize>,
    requests: Vec<&'a RefRequest>,
    since: u64,
    view: View,
    /// The cursor's partial-turn record.
    cursor_seen: Option<RefSeen>,
    latest: u64,
    measure: Measure,
    /// The first candidate whose counted length differed from its rendered one.
    mismatch: RefCell<Option<String>>,
    /// Characters of the header line, of each turn's text, of each listed request's line and
    /// of the partial turn: counted once per read, not once per candidate.
    header_chars: usize,
    turn_chars: Vec<usize>,
    request_chars: Vec<usize>,
    partial_chars: usize,
    /// CRC-64 of the whole partial turn, computed only when a rendered cursor needs it.
    partial_crc: OnceCell<u64>,
    /// The cursor is of the v2 form past seq 0: its turn is not checked (section 5.3).
    unchecked: bool,
}

/// What the next cursor records of the partial turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextSeen {
    Nothing,
    /// All of it as it is now.
    Now,
    /// The cursor's record, kept.
    Kept(RefSeen),
}

fn decimal(n: impl Into<u64>) -> usize {
    n.into().to_string().len()
}

/// The partial turn against the cursor's record of it (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    /// New to the caller.
    Fresh,
    /// Only grew since its first `n` characters were given.
    Grown(usize),
    /// Changed otherwise since the cursor's read.
    Replaced,
}

pub(super) fn chars(s: &str) -> usize {
    s.chars().count()
}

fn slice(s: &str, from: usize, to: usize) -> String {
    s.chars().skip(from).take(to - from).collect()
}

impl Reader<'_> {
    fn selector_text(&self) -> String {
        match &self.req.selector {
            RefSelector::Latest(n) => format!("n:{n}"),
            RefSelector::Since(cursor) => format!("since:{cursor}"),
            RefSelector::SinceTurn(id) => format!("since:turn:{id}"),
            RefSelector::Turn { id, offset } => format!("turn:{id} offset {offset}"),
        }
    }

    /// The header line; a v2 cursor past seq 0 is marked unchecked (section 5.3).
    fn header(&self) -> String {
        let unchecked = if self.unchecked {
            " (v2 cursor: turn unchecked)"
        } else {
            ""
        };
        format!(
            "[parkline read {} {}{unchecked}]\n",
            self.t.child,
            self.selector_text()
        )
    }

    fn is_turn_read(&self) -> bool {
        matches!(self.req.selector, RefSelector::Turn { .. })
    }

    fn omitted(&self, answer: &Answer) -> Vec<u64> {
        let taken: BTreeSet<usize> = answer.turns.iter().map(|(i, _)| *i).collect();
        let mut seqs: Vec<u64> = self
            .selected
            .iter()
            .filter(|i| !taken.contains(i))
            .map(|&i| self.t.turns[i].seq)
            .collect();
        seqs.sort_unstable();
        seqs
    }

    fn next(&self, answer: &Answer) -> Option<u64> {
        match self.req.selector {
            RefSelector::Turn { .. } => None,
            RefSelector::Latest(_) => Some(self.t.turns.last().map_or(0, |t| t.seq)),
            RefSelector::Since(_) | RefSelector::SinceTurn(_) => {
                if self.variant == ReadVariant::AdvanceBeforeBuild {
                    return Some(
                        self.selected
                            .last()
                            .map_or(self.since, |&i| self.t.turns[i].seq),
                    );
                }
                Some(
                    answer
                        .turns
                        .iter()
                        .map(|(i, _)| self.t.turns[*i].seq)
                        .max()
                        .unwrap_or(self.since),
                )
            }
        }
    }

    /// R15: the next cursor records the whole partial turn when the window holds any of it,
    /// keeps the cursor's record when it leaves out a part that only grew, else records none.
    fn next_seen_kind(&self, answer: &Answer) -> NextSeen {
        let partial = match (&self.req.selector, &self.t.partial) {
            (RefSelector::Turn { .. }, _) | (_, None) => return NextSeen::Nothing,
            (_, Some(partial)) => partial,
        };
        match answer.partial {
            Some(_) if !partial.is_empty() => NextSeen::Now,
            Some(_) => NextSeen::Nothing,
            None => match (self.view, self.cursor_seen) {
                (View::Grown(_), Some(seen)) => NextSeen::Kept(seen),
                _ => NextSeen::Nothing,
            },
        }
    }

    fn next_seen(&self, answer: &Answer) -> Option<RefSeen> {
        match self.next_seen_kind(answer) {
            NextSeen::Nothing => None,
            NextSeen::Now => Some(RefSeen {
                after: self.latest,
                chars: self.partial_chars,
                prefix: *self
                    .partial_crc
                    .get_or_init(|| crc64(self.t.partial.as_deref().unwrap_or("").as_bytes())),
            }),
            NextSeen::Kept(seen) => Some(seen),
        }
    }

    fn request_line(r: &RefRequest) -> String {
        let state = if r.open { "open" } else { "terminated" };
        format!("[request {} {state}] {}\n", r.id, r.record)
    }

    /// The full response text of a candidate answer, exactly as `spec/read.md` section 5 says.
    fn render(&self, answer: &Answer) -> String {
        let mut text = self.header();
        let mut turns = answer.turns.clone();
        turns.sort_by_key(|(i, _)| *i);
        let mut excerpts = 0;
        for (i, shown) in &turns {
            let turn = &self.t.turns[*i];
            let total = chars(&turn.text);
            match *shown {
                Shown::Whole => {
                    text += &format!(
                        "[turn {} seq {}: {total} chars]\n{}\n",
                        turn.id, turn.seq, turn.text
                    )
                }
                Shown::Excerpt { from, to } => {
                    let part = slice(&turn.text, from, to);
                    if self.variant == ReadVariant::ExcerptWithoutReference {
                        text += &format!(
                            "[turn {} seq {}: {} chars]\n{part}\n",
                            turn.id,
                            turn.seq,
                            to - from
                        );
                        continue;
                    }
                    excerpts += 1;
                    let rest = if to < total {
                        format!(", rest at turn:{} offset {to}", turn.id)
                    } else {
                        String::new()
                    };
                    text += &format!(
                        "[turn {} seq {}: excerpt chars {from}..{to} of {total}{rest}]\n{part}\n",
                        turn.id, turn.seq
                    );
                }
            }
        }
        let partial = if self.is_turn_read() {
            None
        } else {
            self.t.partial.as_ref()
        };
        if let (Some(partial), Some(shown)) = (partial, answer.partial) {
            let total = chars(partial);
            let tail = slice(partial, total - shown, total);
            text += &match self.view {
                View::Fresh if shown == total => format!("[in-flight: {total} chars]\n{partial}\n"),
                View::Fresh => format!("[in-flight: last {shown} of {total} chars]\n{tail}\n"),
                View::Replaced if shown == total => {
                    format!("[in-flight, replaced: {total} chars]\n{partial}\n")
                }
                View::Replaced => {
                    format!("[in-flight, replaced: last {shown} of {total} chars]\n{tail}\n")
                }
                View::Grown(_) => format!(
                    "[in-flight: chars {}..{total} of {total}]\n{tail}\n",
                    total - shown
                ),
            };
        }
        for r in &self.requests[..answer.requests] {
            text += &Self::request_line(r);
        }
        let omitted = self.omitted(answer);
        text += &format!(
            "[parkline read end: {} whole, {excerpts} excerpt, {} omitted",
            answer.turns.len() - excerpts,
            omitted.len()
        );
        if let (Some(first), Some(last)) = (omitted.first(), omitted.last()) {
            let id = |seq: &u64| {
                &self
                    .t
                    .turns
                    .iter()
                    .find(|t| t.seq == *seq)
                    .expect("omitted turns exist")
                    .id
            };
            text += &format!(" (turn:{} to turn:{})", id(first), id(last));
        }
        if partial.is_some() && answer.partial.is_none() {
            text += ", in-flight omitted";
        }
        if answer.requests < self.requests.len() {
            text += &format!(
                ", {} requests omitted",
                self.requests.len() - answer.requests
            );
        }
        match self.next(answer) {
            Some(seq) => {
                let turn = self.t.turns.iter().find(|turn| turn.seq == seq);
                let cursor = RefCursor::new(
                    &self.t.child,
                    seq,
                    turn.map(|turn| turn.id.as_str()),
                    self.next_seen(answer),
                );
                text += &format!("; next since:{}]\n", cursor_text_of(&cursor));
            }
            None => text += "; next none]\n",
        }
        text
    }

    /// The characters of `render(answer)`, counted from the lengths of its parts without
    /// building it. It spells the format of `render` part by part, so the two change together;
    /// [`read_checking_fit`] shows they agree on every candidate a read tries.
    pub(super) fn length(&self, answer: &Answer) -> usize {
        let mut n = self.header_chars;
        let mut excerpts = 0;
        for &(i, shown) in &answer.turns {
            let turn = &self.t.turns[i];
            let total = self.turn_chars[i];
            // "[turn {id} seq {seq}: "
            n += "[turn ".len() + chars(&turn.id) + " seq ".len() + decimal(turn.seq) + ": ".len();
            n += match shown {
                // "{total} chars]\n{text}\n"
                Shown::Whole => decimal(total as u64) + " chars]\n".len() + total + 1,
                Shown::Excerpt { from, to }
                    if self.variant == ReadVariant::ExcerptWithoutReference =>
                {
                    decimal((to - from) as u64) + " chars]\n".len() + (to - from) + 1
                }
                // "excerpt chars {from}..{to} of {total}{rest}]\n{part}\n"
                Shown::Excerpt { from, to } => {
                    excerpts += 1;
                    let rest = if to < total {
                        ", rest at turn:".len()
                            + chars(&turn.id)
                            + " offset ".len()
                            + decimal(to as u64)
                    } else {
                        0
                    };
                    "excerpt chars ".len()
                        + decimal(from as u64)
                        + "..".len()
                        + decimal(to as u64)
                        + " of ".len()
                        + decimal(total as u64)
                        + rest
                        + "]\n".len()
                        + (to - from)
                        + 1
                }
            };
        }
        let partial = !self.is_turn_read() && self.t.partial.is_some();
        if let (true, Some(shown)) = (partial, answer.partial) {
            let total = self.partial_chars;
            let head = match self.view {
                View::Fresh if shown == total => {
                    "[in-flight: ".len() + decimal(total as u64) + " chars]\n".len()
                }
                View::Fresh => {
                    "[in-flight: last ".len()
                        + decimal(shown as u64)
                        + " of ".len()
                        + decimal(total as u64)
                        + " chars]\n".len()
                }
                View::Replaced if shown == total => {
                    "[in-flight, replaced: ".len() + decimal(total as u64) + " chars]\n".len()
                }
                View::Replaced => {
                    "[in-flight, replaced: last ".len()
                        + decimal(shown as u64)
                        + " of ".len()
                        + decimal(total as u64)
                        + " chars]\n".len()
                }
                View::Grown(_) => {
                    "[in-flight: chars ".len()
                        + decimal((total - shown) as u64)
                        + "..".len()
                        + decimal(total as u64)
                        + " of ".len()
                        + decimal(total as u64)
                        + "]\n".len()
                }
            };
            n += head + shown + 1;
        }
        n += self.request_chars[..answer.requests].iter().sum::<usize>();
        // The omitted selected turns: how many, and the ids of the first and last by seq.
        let mut omitted = 0;
        let mut first: Option<&RefTurn> = None;
        let mut last: Option<&RefTurn> = None;
        for &i in &self.selected {
            if answer.turns.iter().any(|(taken, _)| *taken == i) {
                continue;
            }
            let turn = &self.t.turns[i];
            omitted += 1;
            if first.is_none_or(|f| turn.seq < f.seq) {
                first = Some(turn);
            }
            if last.is_none_or(|l| turn.seq > l.seq) {
                last = Some(turn);
            }
        }
        // "[parkline read end: {whole} whole, {excerpts} excerpt, {omitted} omitted"
        n += "[parkline read end: ".len()
            + decimal((answer.turns.len() - excerpts) as u64)
            + " whole, ".len()
            + decimal(excerpts as u64)
            + " excerpt, ".len()
            + decimal(omitted as u64)
            + " omitted".len();
        if let (Some(first), Some(last)) = (first, last) {
            // " (turn:{first} to turn:{last})"
            n += " (turn:".len()
                + chars(&first.id)
                + " to turn:".len()
                + chars(&last.id)
                + ")".len();
        }
        if partial && answer.partial.is_none() {
            n += ", in-flight omitted".len();
        }
        if answer.requests < self.requests.len() {
            // ", {k} requests omitted"
            n += ", ".len()
                + decimal((self.requests.len() - answer.requests) as u64)
                + " requests omitted".len();
        }
        n + match self.next(answer) {
            Some(seq) => {
                let seen = match self.next_seen_kind(answer) {
                    NextSeen::Nothing => None,
                    NextSeen::Now => Some((self.partial_chars, self.latest)),
                    NextSeen::Kept(seen) => Some((seen.chars, seen.after)),
                };
                "; next since:".len() + cursor_text_len(&self.t.child, seq, seen) + "]\n".len()
            }
            None => "; next none]\n".len(),
        }
    }

    fn size(&self, answer: &Answer) -> usize {
        match self.measure {
            Measure::Length => self.length(answer),
            Measure::Checked(length) => {
                let rendered = chars(&self.render(answer));
                let counted = length(self, answer);
                let mut mismatch = self.mismatch.borrow_mut();
                if counted != rendered && mismatch.is_none() {
                    *mismatch = Some(format!(
                        "R1: a candidate of {rendered} chars is counted as {counted}: {answer:?}"
                    ));
                }
                rendered
            }
        }
    }

    fn fits(&self, answer: &Answer) -> bool {
        if self.variant == ReadVariant::TurnsOnlyBudget {
            let turn_chars: usize = answer
                .turns
                .iter()
                .map(|(i, shown)| match shown {
                    Shown::Whole => self.turn_chars[*i],
                    Shown::Excerpt { from, to } => to - from,
                })
                .sum();
            return turn_chars <= self.req.chars_max;
        }
        self.size(answer) <= self.req.chars_max
    }
}

/// The answer to `req` on `t`, as the spec says, by the naive method.
///
/// # Errors
///
/// The [`RefReadError`] the spec gives for the read.
pub fn read(t: &RefTranscript, req: &RefReadRequest) -> Result<RefWindow, RefReadError> {
    read_variant(t, req, ReadVariant::Correct)
}

/// [`read`] as the known-bad `variant` does it.
///
/// # Errors
///
/// As [`read`].
pub fn read_variant(
    t: &RefTranscript,
    req: &RefReadRequest,
    variant: ReadVariant,
) -> Result<RefWindow, RefReadError> {
    read_measured(t, req, variant, Measure::Length).0
}

/// [`read`] deciding every fit by rendering the candidate in full and counting its characters
/// (the rule as `spec/read.md` states it), with the answer it gives, and the first candidate
/// whose size counted from its parts (what [`read`] decides by) differs from its rendered size.
/// No such candidate and the same answer as [`read`]'s on every input is what shows that
/// counting is the rule.
pub fn read_checking_fit(
    t: &RefTranscript,
    req: &RefReadRequest,
) -> (Result<RefWindow, RefReadError>, Option<String>) {
    read_measured(
        t,
        req,
        ReadVariant::Correct,
        Measure::Checked(|reader, answer| reader.length(answer)),
    )
}

pub(super) fn read_measured(
    t: &RefTranscript,
    req: &RefReadRequest,
    variant: ReadVariant,
    measure: Measure,
) -> (Result<RefWindow, RefReadError>, Option<String>) {
    let mut mismatch = None;
    let result = read_with(t, req, variant, measure, &mut mismatch);
    (result, mismatch)
}

fn read_with(
    t: &RefTranscript,
    req: &RefReadRequest,
    variant: ReadVariant,
    measure: Measure,
    mismatch: &mut Option<String>,
) -> Result<RefWindow, RefReadError> {
    let latest = t.turns.last().map_or(0, |turn| turn.seq);
    let mut since = 0;
    let mut from = 0;
    let mut cursor_seen = None;
    let (mut unchecked, mut v2_seen) = (false, false);
    let selected: Vec<usize> = match &req.selector {
        RefSelector::Latest(n) => (0..t.turns.len()).rev().take(*n).collect(),
        RefSelector::Since(cursor) => {
            let cursor = parse_cursor(cursor)?;
            if cursor.child != t.child {
                return Err(RefReadError::CursorOtherChild);
            }
            if cursor.seq > latest {
                return Err(RefReadError::CursorAhead);
            }
            check_turn(t, &cursor, variant)?;
            let seq = cursor.seq;
            unchecked = cursor.v2 && seq > 0;
            cursor_seen = cursor.seen;
            v2_seen = cursor.v2;
            since = seq;
            (0..t.turns.len())
                .filter(|&i| t.turns[i].seq > seq)
                .collect()
        }
        RefSelector::SinceTurn(id) => {
            let i = t
                .turns
                .iter()
                .position(|turn| &turn.id == id)
                .ok_or(RefReadError::UnknownTurn)?;
            since = t.turns[i].seq;
            let from = if variant == ReadVariant::ResumeIncludesTurn {
                since - 1
            } else {
                since
            };
            (0..t.turns.len())
                .filter(|&k| t.turns[k].seq > from)
                .collect()
        }
        RefSelector::Turn { id, offset } => {
            let i = t
                .turns
                .iter()
                .position(|turn| &turn.id == id)
                .ok_or(RefReadError::UnknownTurn)?;
            if *offset > chars(&t.turns[i].text) {
                return Err(RefReadError::OffsetOutOfRange);
            }
            from = *offset;
            vec![i]
        }
    };
    let mut requests: Vec<&RefRequest> = Vec::new();
    let by_id = |open: bool| {
        let mut list: Vec<&RefRequest> = t.requests.iter().filter(|r| r.open == open).collect();
        list.sort_by_key(|r| r.id);
        list
    };
    if req.history != RefHistory::None {
        requests.extend(by_id(true));
    }
    if req.history == RefHistory::All {
        requests.extend(by_id(false));
    }
    // R15: has the partial turn only grown since the cursor's caller was given some of it?
    let view = match (cursor_seen, &t.partial) {
        (Some(seen), Some(partial))
            if seen.after == latest && variant != ReadVariant::ResendPartial =>
        {
            let prefix = slice(partial, 0, seen.chars);
            // Section 5.3: a v2 record checks with CRC-32; the next cursor keeps it as CRC-64.
            let check = if v2_seen {
                u64::from(crc32(prefix.as_bytes()))
            } else {
                crc64(prefix.as_bytes())
            };
            let grown = seen.chars <= chars(partial) && check == seen.prefix;
            if grown {
                cursor_seen = Some(RefSeen {
                    prefix: crc64(prefix.as_bytes()),
                    ..seen
                });
                View::Grown(seen.chars)
            } else {
                View::Replaced
            }
        }
        _ => View::Fresh,
    };
    let request_chars = requests
        .iter()
        .map(|r| chars(&Reader::request_line(r)))
        .collect();
    let mut reader = Reader {
        t,
        req,
        variant,
        selected,
        requests,
        since,
        view,
        cursor_seen,
        latest,
        measure,
        mismatch: RefCell::new(None),
        header_chars: 0,
        turn_chars: t.turns.iter().map(|turn| chars(&turn.text)).collect(),
        request_chars,
        partial_chars: t.partial.as_deref().map_or(0, chars),
        partial_crc: OnceCell::new(),
        unchecked,
    };
    reader.header_chars = chars(&reader.header());
    let result = answer_with(&reader, from, partial_total_of(t, req));
    *mismatch = reader.mismatch.take();
    result
}

/// Section 5.2: the cursor's seq must be a turn's seq, and a v3 cursor's turn check that turn's
/// id; `TrustSeq` skips the id check.
fn check_turn(
    t: &RefTranscript,
    cursor: &RefCursor,
    variant: ReadVariant,
) -> Result<(), RefReadError> {
    if cursor.seq == 0 {
        return Ok(());
    }
    let turn = t
        .turns
        .iter()
        .find(|turn| turn.seq == cursor.seq)
        .ok_or(RefReadError::CursorDiverged)?;
    match cursor.turn {
        Some(check) if variant != ReadVariant::TrustSeq && check != crc64(turn.id.as_bytes()) => {
            Err(RefReadError::CursorDiverged)
        }
        _ => Ok(()),
    }
}

fn partial_total_of(t: &RefTranscript, req: &RefReadRequest) -> Option<usize> {
    match (&req.selector, &t.partial) {
        (RefSelector::Turn { .. }, _) | (_, None) => None,
        (_, Some(partial)) => Some(chars(partial)),
    }
}

/// Steps 1 to 4 of the allocation, then the answer rendered once.
fn answer_with(
    reader: &Reader<'_>,
    from: usize,
    partial_total: Option<usize>,
) -> Result<RefWindow, RefReadError> {
    let (t, variant, view) = (reader.t, reader.variant, reader.view);

    // Step 1: the empty answer must fit, and so must the first selected turn in some form.
    let mut answer = Answer::default();
    let empty = reader.size(&answer);
    let total_of = |i: usize| chars(&t.turns[i].text);
    let too_small = || {
        let mut needed = empty;
        if let Some(&first) = reader.selected.first() {
            // R8: the smallest answer that makes progress on the first selected turn.
            let total = total_of(first);
            let one = |shown: Shown| Answer {
                turns: vec![(first, shown)],
                ..Answer::default()
            };
            let mut forms = vec![if from == 0 {
                one(Shown::Whole)
            } else {
                one(Shown::Excerpt { from, to: total })
            }];
            let shortest = if variant == ReadVariant::EmptyExcerpt {
                from
            } else {
                from + 1
            };
            if shortest < total {
                forms.push(one(Shown::Excerpt { from, to: shortest }));
            }
            let smallest = forms.iter().map(|a| reader.size(a)).min().unwrap_or(empty);
            needed = needed.max(smallest);
        }
        if variant == ReadVariant::NeededOneShort {
            needed -= 1;
        }
        RefReadError::CharsMaxTooSmall { needed }
    };
    if !reader.fits(&answer) {
        return Err(too_small());
    }

    // Step 2: turns in allocation order; the first one that does not fit whole is excerpted if
    // nothing came before it, else it and everything after it are omitted.
    for (position, &i) in reader.selected.iter().enumerate() {
        if !(position == 0 && from > 0) {
            answer.turns.push((i, Shown::Whole));
            if reader.fits(&answer) {
                continue;
            }
            answer.turns.pop();
        }
        if position > 0 {
            break;
        }
        let total = chars(&t.turns[i].text);
        // The rest of the turn from the offset, if it fits (it carries no "rest at" reference,
        // so it can fit where shorter excerpts do not) ...
        answer.turns.push((i, Shown::Excerpt { from, to: total }));
        if from > 0 && reader.fits(&answer) {
            break;
        }
        answer.turns.pop();
        // ... else the longest excerpt with a reference that fits. Its size grows with its
        // length: scan up to the first one that does not fit.
        let mut best = None;
        // R8: at least one character (the known-bad variant allows none).
        let shortest = if variant == ReadVariant::EmptyExcerpt {
            from
        } else {
            from + 1
        };
        for to in shortest..total {
            answer.turns.push((i, Shown::Excerpt { from, to }));
            let fits = reader.fits(&answer);
            answer.turns.pop();
            if !fits {
                break;
            }
            best = Some(to);
        }
        match best {
            Some(to) => answer.turns.push((i, Shown::Excerpt { from, to })),
            None => return Err(too_small()),
        }
        break;
    }

    // Step 3: the partial turn, whole, else its newest characters that fit, else omitted.
    if let Some(total) = partial_total {
        // R15: of a part that only grew, only the characters not given before.
        let limit = match view {
            View::Grown(seen) => total - seen,
            View::Fresh | View::Replaced => total,
        };
        answer.partial = Some(limit);
        if !reader.fits(&answer) {
            // The size grows with the characters shown: scan up to the first that does not fit.
            answer.partial = None;
            for shown in 0..limit {
                let candidate = Answer {
                    partial: Some(shown),
                    ..answer.clone()
                };
                if !reader.fits(&candidate) {
                    break;
                }
                answer.partial = Some(shown);
            }
        }
    }

    // Step 4: requests in order, each whole, until one does not fit.
    while answer.requests < reader.requests.len() {
        answer.requests += 1;
        if !reader.fits(&answer) {
            answer.requests -= 1;
            break;
        }
    }

    let text = reader.render(&answer);
    let mut whole: Vec<u64> = Vec::new();
    let mut excerpt = None;
    for &(i, shown) in &answer.turns {
        let turn = &t.turns[i];
        match shown {
            Shown::Whole => whole.push(turn.seq),
            Shown::Excerpt { .. } if variant == ReadVariant::ExcerptWithoutReference => {
                whole.push(turn.seq)
            }
            Shown::Excerpt { from, to } => {
                excerpt = Some(RefExcerpt {
                    seq: turn.seq,
                    from,
                    to,
                    total: chars(&turn.text),
                })
            }
        }
    }
    whole.sort_unstable();
    let partial = match (partial_total, answer.partial, view) {
        (None, _, _) => RefPartial::Absent,
        (Some(total), None, _) => RefPartial::Omitted(total),
        (Some(total), Some(shown), View::Fresh) if shown == total => RefPartial::Whole(total),
        (Some(total), Some(shown), View::Fresh) => RefPartial::Cut { shown, total },
        (Some(total), Some(shown), View::Replaced) => RefPartial::Replaced { shown, total },
        (Some(total), Some(shown), View::Grown(seen)) => RefPartial::New {
            from: total - shown,
            seen,
            total,
        },
    };
    Ok(RefWindow {
        chars: chars(&text),
        text,
        whole,
        excerpt,
        omitted: reader.omitted(&answer),
        partial,
        requests_shown: answer.requests,
        requests_omitted: reader.requests.len() - answer.requests,
        next: reader.next(&answer),
        next_seen: reader.next_seen(&answer),
    })
}
