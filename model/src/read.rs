//! The read side of parkline: budgeted `agent_read` windows over a child's growing transcript,
//! and a caller that follows `since:<cursor>` reads under a small budget.
//!
//! Source: Defect 2 of the seed (`shared/seed/000_5885aa2fe1498771.txt`, "agent_read re-sends
//! turns the caller already holds") as specified in `spec/read.md` (requirements R1..R14).
//!
//! The file reads top to bottom:
//!
//! 1. the plain reference: [`RefTranscript`], [`cursor_text`], [`parse_cursor`] and [`read`], the
//!    answer to one read written the naive way (render every candidate answer in full and count
//!    its characters). It does no I/O; the differential check of the production crate
//!    (`parkline::read`) uses it as its oracle;
//! 2. [`ReadModel`], a stateright [`Model`]: the child works (its in-flight part grows, turns
//!    complete, a request opens and terminates) while a caller reads with its cursor under one
//!    of a few small budgets, with ghost fields recording what the caller was given;
//! 3. the properties, each named by the spec id it checks (`"R5 no skip"`, ...);
//! 4. the known-bad [`ReadVariant`]s, each changing only the step it breaks, which the tests
//!    show are caught for the right property.

use std::collections::BTreeSet;

use stateright::{Model, Property};

// ---------------------------------------------------------------------------------------------
// 1. The plain reference
// ---------------------------------------------------------------------------------------------

/// One completed turn.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefTurn {
    /// The turn id.
    pub id: String,
    /// The turn's sequence number (strictly increasing, at least 1).
    pub seq: u64,
    /// The turn's text.
    pub text: String,
}

/// One request of the child, with its short record.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefRequest {
    /// The request id.
    pub id: u64,
    /// Open (true) or terminated (false).
    pub open: bool,
    /// The short record.
    pub record: String,
}

/// A child's transcript: completed turns in seq order, the in-flight part, the requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefTranscript {
    /// The child id.
    pub child: String,
    /// Completed turns, in seq order.
    pub turns: Vec<RefTurn>,
    /// The in-flight partial turn.
    pub in_flight: Option<String>,
    /// The requests, in any order (reads order them by id).
    pub requests: Vec<RefRequest>,
}

/// The selector of a read. The cursor is given as text, exactly as the caller hands it back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RefSelector {
    /// `n:<k>`.
    Latest(usize),
    /// `since:<cursor>`.
    Since(String),
    /// `since:turn:<id>`: `since` from just after that turn.
    SinceTurn(String),
    /// `turn:<id>` from a character offset.
    Turn {
        /// The turn id.
        id: String,
        /// The offset in characters.
        offset: usize,
    },
}

/// Which requests a read attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefHistory {
    /// Open ones only.
    Open,
    /// Open, then terminated.
    All,
    /// None.
    None,
}

/// One read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefReadRequest {
    /// The selector.
    pub selector: RefSelector,
    /// The one overall budget, in characters of the whole response text.
    pub max_chars: usize,
    /// The request history attached.
    pub history: RefHistory,
}

/// What a window holds of the in-flight part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefInFlight {
    /// No in-flight part (or a `turn:` read).
    Absent,
    /// All of it.
    Whole(usize),
    /// The last `shown` of `total` characters.
    Cut {
        /// Shown.
        shown: usize,
        /// Total.
        total: usize,
    },
    /// Not even its marker fitted; its total characters.
    Omitted(usize),
    /// Characters `from..total` of a part that only grew since `seen` were given (R15).
    New {
        /// First shown.
        from: usize,
        /// Given before, by the cursor.
        seen: usize,
        /// Total.
        total: usize,
    },
    /// A part replaced since the cursor's read: its last `shown` of `total` (R15).
    Replaced {
        /// Shown.
        shown: usize,
        /// Total.
        total: usize,
    },
}

/// The excerpt of a window: turn seq and characters `from..to` of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RefExcerpt {
    /// The turn's seq.
    pub seq: u64,
    /// First character shown.
    pub from: usize,
    /// One past the last character shown.
    pub to: usize,
    /// Characters of the turn.
    pub total: usize,
}

/// The answer to one read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefWindow {
    /// The response text.
    pub text: String,
    /// Seqs of the turns returned whole, ascending.
    pub whole: Vec<u64>,
    /// The excerpt, if any.
    pub excerpt: Option<RefExcerpt>,
    /// Seqs of the selected turns that did not fit, ascending.
    pub omitted: Vec<u64>,
    /// The in-flight part.
    pub in_flight: RefInFlight,
    /// Requests attached.
    pub requests_shown: usize,
    /// Requests asked for that did not fit.
    pub requests_omitted: usize,
    /// The seq of the next cursor (`None` for a `turn:` read).
    pub next: Option<u64>,
    /// What the next cursor records of the in-flight part (R15).
    pub next_seen: Option<RefSeen>,
    /// Characters of `text`.
    pub chars: usize,
}

/// Why a read fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefReadError {
    /// The cursor text is not a cursor.
    CursorDamaged,
    /// The cursor is of the retired v1 form.
    CursorRetired,
    /// The cursor belongs to another child.
    CursorOtherChild,
    /// The cursor is past the latest completed turn.
    CursorAhead,
    /// No turn has the id.
    UnknownTurn,
    /// The offset is past the turn's end.
    OffsetOutOfRange,
    /// Not even the framing fits; the smallest budget at which the read succeeds.
    BudgetTooSmall {
        /// The smallest working `max_chars`.
        needed: usize,
    },
}

/// CRC-32 (IEEE, reflected, the zlib one), bit by bit: slow, obvious, independent of the crate's.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// What a cursor records of the in-flight part (R15): its first `chars` characters, whose UTF-8
/// has CRC-32 `prefix`, were given while the latest turn was `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefSeen {
    /// The latest turn's seq when they were given.
    pub after: u64,
    /// Characters given (at least 1).
    pub chars: usize,
    /// CRC-32 of their UTF-8 bytes.
    pub prefix: u32,
}

/// A parsed cursor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefCursor {
    /// The child id, as written in the cursor.
    pub child: String,
    /// The seq of the last turn given.
    pub seq: u64,
    /// What was seen of the in-flight part.
    pub seen: Option<RefSeen>,
}

fn seen_text(seen: Option<RefSeen>) -> String {
    match seen {
        None => "0".to_string(),
        Some(s) => format!("{:x}-{:x}-{:08x}", s.chars, s.after, s.prefix),
    }
}

/// The text of a cursor: `v2.<seq hex>.<seen>.<check 8 hex>.<child>`, `<seen>` being `0` or
/// `<chars hex>-<after hex>-<prefix 8 hex>`, check = crc32 of
/// `parkline-cursor-v2 <seq hex> <seen> <child>`.
pub fn cursor_text_of(cursor: &RefCursor) -> String {
    let seen = seen_text(cursor.seen);
    let check = crc32(
        format!(
            "parkline-cursor-v2 {:x} {seen} {}",
            cursor.seq, cursor.child
        )
        .as_bytes(),
    );
    format!("v2.{:x}.{seen}.{check:08x}.{}", cursor.seq, cursor.child)
}

/// The text of the cursor at `seq` of `child` with nothing seen of the in-flight part.
pub fn cursor_text(child: &str, seq: u64) -> String {
    cursor_text_of(&RefCursor {
        child: child.to_string(),
        seq,
        seen: None,
    })
}

/// The text of a cursor of the retired v1 form (`v1.<seq hex>.<crc32(child)>.<check>`), which
/// reads refuse with [`RefReadError::CursorRetired`].
pub fn v1_cursor_text(child: &str, seq: u64) -> String {
    v1_text(seq, crc32(child.as_bytes()))
}

fn v1_text(seq: u64, tag: u32) -> String {
    let check = crc32(format!("parkline-cursor-v1 {seq:x} {tag:08x}").as_bytes());
    format!("v1.{seq:x}.{tag:08x}.{check:08x}")
}

/// Whether `id` is a valid child or turn id: 1 to 128 ASCII letters, digits, `-`, `_`, `.`.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Parses a cursor text. Only the canonical text of some cursor parses.
///
/// # Errors
///
/// [`RefReadError::CursorRetired`] for a v1 cursor, [`RefReadError::CursorDamaged`] for anything
/// else that is not a cursor.
pub fn parse_cursor(text: &str) -> Result<RefCursor, RefReadError> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() == 4
        && parts[0] == "v1"
        && let (Ok(seq), Ok(tag)) = (
            u64::from_str_radix(parts[1], 16),
            u32::from_str_radix(parts[2], 16),
        )
        && text == v1_text(seq, tag)
    {
        return Err(RefReadError::CursorRetired);
    }
    if parts.len() < 5 || parts[0] != "v2" {
        return Err(RefReadError::CursorDamaged);
    }
    let child = parts[4..].join(".");
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let seq = if hex(parts[1]) {
        u64::from_str_radix(parts[1], 16).map_err(|_| RefReadError::CursorDamaged)?
    } else {
        return Err(RefReadError::CursorDamaged);
    };
    let seen = if parts[2] == "0" {
        None
    } else {
        let fields: Vec<&str> = parts[2].split('-').collect();
        if fields.len() != 3 || !fields.iter().all(|f| hex(f)) {
            return Err(RefReadError::CursorDamaged);
        }
        let number = |f: &str| u64::from_str_radix(f, 16).map_err(|_| RefReadError::CursorDamaged);
        Some(RefSeen {
            chars: usize::try_from(number(fields[0])?).map_err(|_| RefReadError::CursorDamaged)?,
            after: number(fields[1])?,
            prefix: u32::try_from(number(fields[2])?).map_err(|_| RefReadError::CursorDamaged)?,
        })
    };
    if !valid_id(&child) {
        return Err(RefReadError::CursorDamaged);
    }
    let cursor = RefCursor { child, seq, seen };
    if cursor_text_of(&cursor) != text {
        return Err(RefReadError::CursorDamaged);
    }
    Ok(cursor)
}

/// How one selected turn is in the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    Whole,
    Excerpt { from: usize, to: usize },
}

/// One candidate answer: which turns (by index into `turns`), how much of the in-flight part,
/// how many requests.
#[derive(Clone, Debug, Default)]
struct Answer {
    turns: Vec<(usize, Shown)>,
    in_flight: Option<usize>,
    requests: usize,
}

struct Reader<'a> {
    t: &'a RefTranscript,
    req: &'a RefReadRequest,
    variant: ReadVariant,
    /// Selected turn indices in allocation order.
    selected: Vec<usize>,
    requests: Vec<&'a RefRequest>,
    since: u64,
    view: View,
    /// The cursor's in-flight record.
    cursor_seen: Option<RefSeen>,
    latest: u64,
}

/// The in-flight part against the cursor's record of it (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    /// New to the caller.
    Fresh,
    /// Only grew since its first `n` characters were given.
    Grown(usize),
    /// Changed otherwise since the cursor's read.
    Replaced,
}

fn chars(s: &str) -> usize {
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

    /// R15: the next cursor records the whole in-flight part when the window holds any of it,
    /// keeps the cursor's record when it leaves out a part that only grew, else records none.
    fn next_seen(&self, answer: &Answer) -> Option<RefSeen> {
        let partial = match (&self.req.selector, &self.t.in_flight) {
            (RefSelector::Turn { .. }, _) | (_, None) => return None,
            (_, Some(partial)) => partial,
        };
        match answer.in_flight {
            Some(_) if !partial.is_empty() => Some(RefSeen {
                after: self.latest,
                chars: chars(partial),
                prefix: crc32(partial.as_bytes()),
            }),
            Some(_) => None,
            None => match self.view {
                View::Grown(_) => self.cursor_seen,
                View::Fresh | View::Replaced => None,
            },
        }
    }

    fn request_line(r: &RefRequest) -> String {
        let state = if r.open { "open" } else { "terminated" };
        format!("[request {} {state}] {}\n", r.id, r.record)
    }

    /// The full response text of a candidate answer, exactly as `spec/read.md` section 5 says.
    fn render(&self, answer: &Answer) -> String {
        let mut text = format!(
            "[parkline read {} {}]\n",
            self.t.child,
            self.selector_text()
        );
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
        let in_flight = if self.is_turn_read() {
            None
        } else {
            self.t.in_flight.as_ref()
        };
        if let (Some(partial), Some(shown)) = (in_flight, answer.in_flight) {
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
        if in_flight.is_some() && answer.in_flight.is_none() {
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
                let cursor = RefCursor {
                    child: self.t.child.clone(),
                    seq,
                    seen: self.next_seen(answer),
                };
                text += &format!("; next since:{}]\n", cursor_text_of(&cursor));
            }
            None => text += "; next none]\n",
        }
        text
    }

    fn fits(&self, answer: &Answer) -> bool {
        if self.variant == ReadVariant::TurnsOnlyBudget {
            let turn_chars: usize = answer
                .turns
                .iter()
                .map(|(i, shown)| match shown {
                    Shown::Whole => chars(&self.t.turns[*i].text),
                    Shown::Excerpt { from, to } => to - from,
                })
                .sum();
            return turn_chars <= self.req.max_chars;
        }
        chars(&self.render(answer)) <= self.req.max_chars
    }

    fn size(&self, answer: &Answer) -> usize {
        chars(&self.render(answer))
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
    let latest = t.turns.last().map_or(0, |turn| turn.seq);
    let mut since = 0;
    let mut from = 0;
    let mut cursor_seen = None;
    let selected: Vec<usize> = match &req.selector {
        RefSelector::Latest(n) => (0..t.turns.len()).rev().take(*n).collect(),
        RefSelector::Since(cursor) => {
            let RefCursor { child, seq, seen } = parse_cursor(cursor)?;
            cursor_seen = seen;
            if child != t.child {
                return Err(RefReadError::CursorOtherChild);
            }
            if seq > latest {
                return Err(RefReadError::CursorAhead);
            }
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
    // R15: has the in-flight part only grown since the cursor's caller was given some of it?
    let view = match (cursor_seen, &t.in_flight) {
        (Some(seen), Some(partial))
            if seen.after == latest && variant != ReadVariant::ResendInFlight =>
        {
            let grown = seen.chars <= chars(partial)
                && crc32(slice(partial, 0, seen.chars).as_bytes()) == seen.prefix;
            if grown {
                View::Grown(seen.chars)
            } else {
                View::Replaced
            }
        }
        _ => View::Fresh,
    };
    let reader = Reader {
        t,
        req,
        variant,
        selected,
        requests,
        since,
        view,
        cursor_seen,
        latest,
    };

    // Step 1: the empty answer must fit, and so must the first selected turn in some form.
    let mut answer = Answer::default();
    let empty = reader.size(&answer);
    let total_of = |i: usize| chars(&t.turns[i].text);
    let too_small = |reader: &Reader<'_>| {
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
        RefReadError::BudgetTooSmall { needed }
    };
    if !reader.fits(&answer) {
        return Err(too_small(&reader));
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
            None => return Err(too_small(&reader)),
        }
        break;
    }

    // Step 3: the in-flight part, whole, else its newest characters that fit, else omitted.
    let in_flight_total = match (&req.selector, &t.in_flight) {
        (RefSelector::Turn { .. }, _) | (_, None) => None,
        (_, Some(partial)) => Some(chars(partial)),
    };
    if let Some(total) = in_flight_total {
        // R15: of a part that only grew, only the characters not given before.
        let limit = match view {
            View::Grown(seen) => total - seen,
            View::Fresh | View::Replaced => total,
        };
        answer.in_flight = Some(limit);
        if !reader.fits(&answer) {
            // The size grows with the characters shown: scan up to the first that does not fit.
            answer.in_flight = None;
            for shown in 0..limit {
                let candidate = Answer {
                    in_flight: Some(shown),
                    ..answer.clone()
                };
                if !reader.fits(&candidate) {
                    break;
                }
                answer.in_flight = Some(shown);
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
    let in_flight = match (in_flight_total, answer.in_flight, view) {
        (None, _, _) => RefInFlight::Absent,
        (Some(total), None, _) => RefInFlight::Omitted(total),
        (Some(total), Some(shown), View::Fresh) if shown == total => RefInFlight::Whole(total),
        (Some(total), Some(shown), View::Fresh) => RefInFlight::Cut { shown, total },
        (Some(total), Some(shown), View::Replaced) => RefInFlight::Replaced { shown, total },
        (Some(total), Some(shown), View::Grown(seen)) => RefInFlight::New {
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
        in_flight,
        requests_shown: answer.requests,
        requests_omitted: reader.requests.len() - answer.requests,
        next: reader.next(&answer),
        next_seen: reader.next_seen(&answer),
    })
}

// ---------------------------------------------------------------------------------------------
// 2. The stateright model
// ---------------------------------------------------------------------------------------------

/// A read step that a known-bad variant gets wrong; `Correct` is the protocol of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadVariant {
    /// The read as specified.
    Correct,
    /// A turn larger than the budget is cut silently, presented as whole, without its
    /// `turn:<id>` reference; the cursor moves past it. Breaks R5.
    ExcerptWithoutReference,
    /// The next cursor is set to the last selected turn before the answer is built. Breaks R5.
    AdvanceBeforeBuild,
    /// `max_chars` bounds the turns' text only, as before parkline. Breaks R1.
    TurnsOnlyBudget,
    /// The caller peeks with `n:1`, the "latest, may repeat" read, as in the seed. Breaks R6.
    PeekLatest,
    /// An excerpt of no character counts as an answer, and `needed_chars` names the budget of
    /// that empty excerpt, as before: a caller retrying at `needed_chars` is handed the same
    /// read again. Breaks R8.
    EmptyExcerpt,
    /// `since:turn:<id>` reads from the turn itself, not after it, so a resumed caller is given
    /// the turn it holds again. Breaks R16.
    ResumeIncludesTurn,
    /// The in-flight part is sent whole on every read, as before parkline's cursor held it.
    /// Breaks R15.
    ResendInFlight,
}

impl ReadVariant {
    /// Every variant, `Correct` first.
    pub const ALL: [ReadVariant; 8] = [
        ReadVariant::Correct,
        ReadVariant::ExcerptWithoutReference,
        ReadVariant::AdvanceBeforeBuild,
        ReadVariant::TurnsOnlyBudget,
        ReadVariant::PeekLatest,
        ReadVariant::EmptyExcerpt,
        ReadVariant::ResumeIncludesTurn,
        ReadVariant::ResendInFlight,
    ];

    /// The name used on the command line (`--variant advance-before-build`).
    pub fn name(self) -> &'static str {
        match self {
            ReadVariant::Correct => "correct",
            ReadVariant::ExcerptWithoutReference => "excerpt-without-reference",
            ReadVariant::AdvanceBeforeBuild => "advance-before-build",
            ReadVariant::TurnsOnlyBudget => "turns-only-budget",
            ReadVariant::PeekLatest => "peek-latest",
            ReadVariant::EmptyExcerpt => "empty-excerpt",
            ReadVariant::ResumeIncludesTurn => "resume-includes-turn",
            ReadVariant::ResendInFlight => "resend-in-flight",
        }
    }

    /// The variant with that command-line name.
    pub fn from_name(name: &str) -> Option<ReadVariant> {
        ReadVariant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The property the variant is built to break (the one its test asserts), `None` for
    /// `Correct`.
    pub fn breaks(self) -> Option<&'static str> {
        Some(match self {
            ReadVariant::Correct => return None,
            ReadVariant::ExcerptWithoutReference | ReadVariant::AdvanceBeforeBuild => R5,
            ReadVariant::TurnsOnlyBudget => R1,
            ReadVariant::PeekLatest => R6,
            ReadVariant::EmptyExcerpt => R8,
            ReadVariant::ResumeIncludesTurn => R16,
            ReadVariant::ResendInFlight => R15,
        })
    }
}

/// The bounds of one check.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadBounds {
    /// Completed turns at most.
    pub turns: usize,
    /// Characters one step of work adds to the in-flight part.
    pub grow_chars: usize,
    /// Steps of work per turn at most (a turn has `grow_chars` to `grows * grow_chars` chars).
    pub grows: usize,
    /// The budgets (`max_chars`) a read may use.
    pub budgets: Vec<usize>,
    /// Requests the child may open (each can then terminate).
    pub requests: usize,
}

impl ReadBounds {
    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        let budgets: Vec<String> = self.budgets.iter().map(|b| b.to_string()).collect();
        format!(
            "turns={} grow_chars={} grows={} budgets={} requests={}",
            self.turns,
            self.grow_chars,
            self.grows,
            budgets.join(","),
            self.requests
        )
    }
}

impl Default for ReadBounds {
    /// The default bounds of `parkline check`: 3 turns of 4 to 12 characters, one request, and
    /// two budgets: 150 (the framing and one 4-character turn fit; an 8-character turn is an
    /// excerpt; in-flight parts are cut) and 185 (two short turns fit, or one with some
    /// in-flight part).
    fn default() -> Self {
        ReadBounds {
            turns: 2,
            grow_chars: 20,
            grows: 3,
            budgets: vec![260, 300],
            requests: 1,
        }
    }
}

/// What the caller's last read gave, for the `sometimes` properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LastRead {
    /// The window held an excerpt of a turn larger than the budget.
    pub excerpt: bool,
    /// The in-flight part was cut or omitted.
    pub in_flight_cut: bool,
    /// Selected turns did not fit.
    pub omitted: bool,
    /// The window held no completed turn.
    pub nothing_new: bool,
    /// The window held only the new characters of a grown in-flight part.
    pub in_flight_new: bool,
    /// The window held an in-flight part marked replaced.
    pub in_flight_replaced: bool,
}

/// The state: the child's transcript, the caller's cursor, and ghost history.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadState {
    /// The child's transcript.
    pub transcript: RefTranscript,
    /// Steps of work in the in-flight part.
    pub grown: usize,
    /// The caller's cursor (the seq it encodes).
    pub cursor: u64,
    /// Ghost: seqs the caller was given whole, or as a marked excerpt naming the rest.
    pub given: BTreeSet<u64>,
    /// Ghost: a read gave a completed turn the caller had already been given (R6).
    pub repeated: bool,
    /// Ghost: a window was longer than its `max_chars` (R1).
    pub over_budget: bool,
    /// Ghost: a read with the caller's own cursor failed (R7).
    pub refused: bool,
    /// Ghost: a read with unread turns did not move the cursor (R8).
    pub stalled: bool,
    /// Ghost: a `since:turn:` resume did not continue right after the turn (R16).
    pub resume_wrong: bool,
    /// What the caller's cursor records of the in-flight part.
    pub seen: Option<RefSeen>,
    /// Ghost: the in-flight part as the caller can rebuild it from what it was given.
    pub held: Option<String>,
    /// Ghost: a read re-sent in-flight characters the caller holds, or sent a replaced part as
    /// grown (R15).
    pub in_flight_wrong: bool,
    /// The child rewrote its in-flight part in this turn.
    pub rewritten: bool,
    /// Ghost: what the last read gave.
    pub last: Option<LastRead>,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReadAction {
    /// The child works: its in-flight part grows by `grow_chars`.
    Grow,
    /// The in-flight turn completes.
    Complete,
    /// The child rewrites its in-flight part (same length, other text): replaced, not grown.
    Rewrite,
    /// The child opens its next request.
    OpenRequest,
    /// The open request with this id terminates.
    TerminateRequest(u64),
    /// The caller reads with its cursor (`n:1` for [`ReadVariant::PeekLatest`]) under this budget.
    Read(usize),
    /// The caller reads with no budget, then again at the budget the `BudgetTooSmall` error
    /// names, and follows an excerpt's rest the same way (R8).
    ReadAtNeeded,
    /// The caller lost its cursor and resumes with `since:turn:<id>` of the last turn it holds,
    /// under this budget (R16).
    Resume(usize),
}

/// The read model: a growing transcript and a caller following cursors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadModel {
    /// The bounds.
    pub bounds: ReadBounds,
    /// Which protocol the model follows.
    pub variant: ReadVariant,
}

impl Default for ReadModel {
    fn default() -> Self {
        ReadModel {
            bounds: ReadBounds::default(),
            variant: ReadVariant::Correct,
        }
    }
}

/// The child id of the model.
pub const MODEL_CHILD: &str = "c";

fn letter(seq: u64) -> char {
    char::from(b'a' + (seq % 26) as u8)
}

impl ReadModel {
    /// The model of `variant` at `bounds`.
    pub fn new(bounds: ReadBounds, variant: ReadVariant) -> Self {
        ReadModel { bounds, variant }
    }

    /// The read the caller makes with `cursor` under `max_chars`.
    pub fn caller_read(&self, state: &ReadState, max_chars: usize) -> RefReadRequest {
        let selector = if self.variant == ReadVariant::PeekLatest {
            RefSelector::Latest(1)
        } else {
            RefSelector::Since(cursor_text_of(&RefCursor {
                child: MODEL_CHILD.to_string(),
                seq: state.cursor,
                seen: state.seen,
            }))
        };
        RefReadRequest {
            selector,
            max_chars,
            history: RefHistory::Open,
        }
    }

    /// The caller reads with its cursor under `max_chars` and keeps the next cursor; the ghost
    /// fields record what it was given. Returns the window's excerpt, if any.
    fn caller_reads(
        &self,
        state: &ReadState,
        next: &mut ReadState,
        request: RefReadRequest,
    ) -> Option<RefExcerpt> {
        let max_chars = request.max_chars;
        let window = match read_variant(&state.transcript, &request, self.variant) {
            Ok(window) => window,
            Err(_) => {
                next.refused = true;
                next.last = None;
                return None;
            }
        };
        let turn = |seq: u64| state.transcript.turns.iter().find(|turn| turn.seq == seq);
        for &seq in &window.whole {
            next.repeated |= state.given.contains(&seq);
            // Given only if the text really holds the whole turn under its own marker.
            if let Some(turn) = turn(seq) {
                let whole = format!(
                    "[turn {} seq {}: {} chars]\n{}\n",
                    turn.id,
                    turn.seq,
                    chars(&turn.text),
                    turn.text
                );
                if window.text.contains(&whole) {
                    next.given.insert(seq);
                }
            }
        }
        if let Some(excerpt) = window.excerpt {
            next.repeated |= state.given.contains(&excerpt.seq);
            if let Some(turn) = turn(excerpt.seq) {
                let rest = format!("rest at turn:{} offset {}", turn.id, excerpt.to);
                if excerpt.to == excerpt.total || window.text.contains(&rest) {
                    next.given.insert(excerpt.seq);
                }
            }
        }
        next.over_budget |= window.chars > max_chars;
        let latest = state.transcript.turns.last().map_or(0, |turn| turn.seq);
        let new_cursor = window.next.unwrap_or(state.cursor);
        next.stalled |= self.variant != ReadVariant::PeekLatest
            && latest > state.cursor
            && new_cursor <= state.cursor;
        // R8: an answer with unread turns gives at least one character of the first of them.
        let progress = !window.whole.is_empty() || window.excerpt.is_some_and(|e| e.to > e.from);
        next.stalled |=
            self.variant != ReadVariant::PeekLatest && latest > state.cursor && !progress;
        next.cursor = new_cursor;
        next.seen = window.next_seen;
        // R15: a caller holding the in-flight part as its cursor records it is sent only the
        // characters added since, or the part marked replaced when it changed otherwise.
        let partial = state.transcript.in_flight.as_deref();
        if let (Some(held), Some(partial)) = (state.held.as_deref(), partial) {
            let grown = partial.starts_with(held);
            next.in_flight_wrong |= match window.in_flight {
                RefInFlight::New { seen, .. } => !grown || seen != chars(held),
                RefInFlight::Replaced { .. } => grown,
                RefInFlight::Omitted(_) => false,
                RefInFlight::Whole(_) | RefInFlight::Cut { .. } | RefInFlight::Absent => true,
            };
        }
        // What the caller can now rebuild of the in-flight part: all of it, unless it was cut.
        next.held = match (window.in_flight, partial) {
            (RefInFlight::Whole(_), Some(p)) => Some(p.to_string()),
            (RefInFlight::Replaced { shown, total }, Some(p)) if shown == total => {
                Some(p.to_string())
            }
            (RefInFlight::New { from, seen, .. }, Some(p)) if from == seen => Some(p.to_string()),
            (RefInFlight::Omitted(_), _) => state.held.clone(),
            _ => None,
        };
        if next.seen.is_none() || next.held.as_deref() == Some("") {
            next.held = None;
        }
        next.last = Some(LastRead {
            in_flight_new: matches!(window.in_flight, RefInFlight::New { .. }),
            in_flight_replaced: matches!(window.in_flight, RefInFlight::Replaced { .. }),
            excerpt: window.excerpt.is_some(),
            in_flight_cut: matches!(
                window.in_flight,
                RefInFlight::Cut { .. } | RefInFlight::Omitted(_)
            ),
            omitted: !window.omitted.is_empty(),
            nothing_new: window.whole.is_empty() && window.excerpt.is_none(),
        });
        window.excerpt
    }

    /// R8: the rest of `excerpt`, followed by `turn:` reads each at the budget that its
    /// `BudgetTooSmall` names, ends in a bounded number of reads, each giving a character.
    fn rest_chain_ends(&self, state: &ReadState, excerpt: Option<RefExcerpt>) -> bool {
        let Some(mut part) = excerpt else {
            return true;
        };
        let Some(turn) = state.transcript.turns.iter().find(|t| t.seq == part.seq) else {
            return true;
        };
        // Every read gives at least one character, so `total` reads are enough.
        for _ in 0..=part.total {
            if part.to >= part.total {
                return true;
            }
            let read_at = |max_chars| {
                let request = RefReadRequest {
                    selector: RefSelector::Turn {
                        id: turn.id.clone(),
                        offset: part.to,
                    },
                    max_chars,
                    history: RefHistory::Open,
                };
                read_variant(&state.transcript, &request, self.variant)
            };
            let needed = match read_at(0) {
                Err(RefReadError::BudgetTooSmall { needed }) => needed,
                _ => 0,
            };
            let Some(rest) = read_at(needed).ok().and_then(|window| window.excerpt) else {
                return false;
            };
            if rest.to <= part.to {
                return false;
            }
            part = rest;
        }
        false
    }

    /// One step of a path in the spec's words.
    pub fn narrate(&self, before: &ReadState, action: &ReadAction, after: &ReadState) -> String {
        match action {
            ReadAction::Grow => format!(
                "the child works: in-flight part {:?}",
                after.transcript.in_flight.as_deref().unwrap_or("")
            ),
            ReadAction::Complete => match after.transcript.turns.last() {
                Some(turn) => format!(
                    "turn {} completes (seq {}, {:?})",
                    turn.id, turn.seq, turn.text
                ),
                None => "a turn completes".into(),
            },
            ReadAction::Rewrite => format!(
                "the child rewrites its in-flight part: {:?}",
                after.transcript.in_flight.as_deref().unwrap_or("")
            ),
            ReadAction::OpenRequest => "the child opens a request".into(),
            ReadAction::TerminateRequest(id) => format!("request {id} terminates"),
            ReadAction::Read(max_chars) => {
                let request = self.caller_read(before, *max_chars);
                match read_variant(&before.transcript, &request, self.variant) {
                    Ok(window) => format!(
                        "the caller reads with cursor at seq {} and max_chars {max_chars}; window ({} chars, next cursor at seq {}):\n{}",
                        before.cursor,
                        window.chars,
                        window
                            .next
                            .map_or("none".to_string(), |seq| seq.to_string()),
                        window.text
                    ),
                    Err(error) => format!(
                        "the caller reads with cursor at seq {} and max_chars {max_chars}: {error:?}",
                        before.cursor
                    ),
                }
            }
            ReadAction::Resume(max_chars) => format!(
                "the caller lost its cursor and reads since:turn:t{} with max_chars {max_chars}",
                before.cursor
            ),
            ReadAction::ReadAtNeeded => {
                let probe = self.caller_read(before, 0);
                let needed = match read_variant(&before.transcript, &probe, self.variant) {
                    Err(RefReadError::BudgetTooSmall { needed }) => needed,
                    _ => 0,
                };
                let narrated = self.narrate(before, &ReadAction::Read(needed), after);
                format!(
                    "the caller reads with no budget and is told it needs {needed}; it retries: {narrated}"
                )
            }
        }
    }
}

impl Model for ReadModel {
    type State = ReadState;
    type Action = ReadAction;

    fn init_states(&self) -> Vec<ReadState> {
        vec![ReadState {
            transcript: RefTranscript {
                child: MODEL_CHILD.to_string(),
                ..RefTranscript::default()
            },
            grown: 0,
            cursor: 0,
            given: BTreeSet::new(),
            repeated: false,
            over_budget: false,
            refused: false,
            stalled: false,
            resume_wrong: false,
            seen: None,
            held: None,
            in_flight_wrong: false,
            rewritten: false,
            last: None,
        }]
    }

    fn actions(&self, state: &ReadState, actions: &mut Vec<ReadAction>) {
        let t = &state.transcript;
        if t.turns.len() < self.bounds.turns && state.grown < self.bounds.grows {
            actions.push(ReadAction::Grow);
        }
        if state.grown > 0 {
            actions.push(ReadAction::Complete);
            if !state.rewritten {
                actions.push(ReadAction::Rewrite);
            }
        }
        if t.requests.len() < self.bounds.requests {
            actions.push(ReadAction::OpenRequest);
        }
        for request in &t.requests {
            if request.open {
                actions.push(ReadAction::TerminateRequest(request.id));
            }
        }
        for &budget in &self.bounds.budgets {
            actions.push(ReadAction::Read(budget));
        }
        actions.push(ReadAction::ReadAtNeeded);
        if state.cursor > 0 && self.variant != ReadVariant::PeekLatest {
            actions.push(ReadAction::Resume(self.bounds.budgets[0]));
        }
    }

    fn next_state(&self, state: &ReadState, action: ReadAction) -> Option<ReadState> {
        let mut next = state.clone();
        let t = &mut next.transcript;
        match action {
            ReadAction::Grow => {
                let seq = t.turns.len() as u64 + 1;
                let grow: String =
                    std::iter::repeat_n(letter(seq), self.bounds.grow_chars).collect();
                t.in_flight.get_or_insert_with(String::new).push_str(&grow);
                next.grown += 1;
            }
            ReadAction::Complete => {
                let seq = t.turns.len() as u64 + 1;
                let text = t.in_flight.take()?;
                t.turns.push(RefTurn {
                    id: format!("t{seq}"),
                    seq,
                    text,
                });
                next.grown = 0;
                next.rewritten = false;
                next.held = None;
            }
            ReadAction::Rewrite => {
                let partial = t.in_flight.as_mut()?;
                *partial = "X".repeat(chars(partial));
                next.rewritten = true;
            }
            ReadAction::OpenRequest => {
                let id = t.requests.len() as u64 + 1;
                t.requests.push(RefRequest {
                    id,
                    open: true,
                    record: format!("r{id}"),
                });
            }
            ReadAction::TerminateRequest(id) => {
                let request = t.requests.iter_mut().find(|r| r.id == id)?;
                request.open = false;
                request.record = format!("r{id} done");
            }
            ReadAction::Read(max_chars) => {
                self.caller_reads(state, &mut next, self.caller_read(state, max_chars));
            }
            ReadAction::Resume(max_chars) => {
                // The caller lost its cursor and resumes after the last turn it holds (R16).
                let request = RefReadRequest {
                    selector: RefSelector::SinceTurn(format!("t{}", state.cursor)),
                    max_chars,
                    history: RefHistory::Open,
                };
                let first_unread = state
                    .transcript
                    .turns
                    .iter()
                    .find(|turn| turn.seq > state.cursor)
                    .map(|turn| turn.seq);
                let before = next.given.len();
                // Without its cursor, the read cannot know what the caller has of the in-flight
                // part: it is sent as new (R15 holds for cursor reads).
                let lost = ReadState {
                    held: None,
                    seen: None,
                    ..state.clone()
                };
                self.caller_reads(&lost, &mut next, request);
                // The first turn given is the first one after the cursor: none skipped, none
                // given again.
                let first_given = next
                    .given
                    .iter()
                    .copied()
                    .filter(|seq| *seq > state.cursor)
                    .min();
                next.resume_wrong |= next.given.len() > before && first_given != first_unread;
                next.resume_wrong |= next.repeated && !state.repeated;
            }
            ReadAction::ReadAtNeeded => {
                // The caller asks with no budget, then retries at the budget the error names.
                let probe = self.caller_read(state, 0);
                let needed = match read_variant(&state.transcript, &probe, self.variant) {
                    Err(RefReadError::BudgetTooSmall { needed }) => needed,
                    _ => 0,
                };
                let excerpt = self.caller_reads(state, &mut next, self.caller_read(state, needed));
                next.stalled |= !self.rest_chain_ends(state, excerpt);
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(R1, |_, s: &ReadState| !s.over_budget),
            Property::always(R5, r5_no_skip),
            Property::always(R6, |_, s: &ReadState| !s.repeated),
            Property::always(R7, |_, s: &ReadState| !s.refused),
            Property::always(R8, |_, s: &ReadState| !s.stalled),
            Property::always(R16, |_, s: &ReadState| !s.resume_wrong),
            Property::always(R15, |_, s: &ReadState| !s.in_flight_wrong),
            Property::sometimes(SOMETIMES_IN_FLIGHT_NEW, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.in_flight_new)
            }),
            Property::sometimes(SOMETIMES_IN_FLIGHT_REPLACED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.in_flight_replaced)
            }),
            Property::sometimes(SOMETIMES_OVERSIZED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.excerpt)
            }),
            Property::sometimes(SOMETIMES_IN_FLIGHT_CUT, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.in_flight_cut)
            }),
            Property::sometimes(SOMETIMES_OMITTED, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.omitted)
            }),
            Property::sometimes(SOMETIMES_NOTHING_NEW, |_, s: &ReadState| {
                s.last.is_some_and(|last| last.nothing_new)
            }),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The properties
// ---------------------------------------------------------------------------------------------

/// R1: every window is at most its `max_chars`, framing, turns, in-flight part and requests
/// together.
pub const R1: &str = "R1 one overall budget";
/// R5: every completed turn up to the caller's cursor was given to it, whole or as a marked
/// excerpt naming the rest.
pub const R5: &str = "R5 no skip";
/// R6: no completed turn is given to the caller twice.
pub const R6: &str = "R6 no repeat";
/// R7: a cursor the crate handed out is accepted by the next read.
pub const R7: &str = "R7 cursor accepted";
/// R8: a read with unread turns moves the cursor (no read loops).
pub const R8: &str = "R8 no read loops";
/// R15: a caller holding the in-flight part is sent only what was added since; a replaced
/// part comes whole, marked replaced.
pub const R15: &str = "R15 in-flight part sent once";
/// Sometimes: a read sends only the new characters of a grown in-flight part.
pub const SOMETIMES_IN_FLIGHT_NEW: &str = "only new in-flight characters";
/// Sometimes: a read sends an in-flight part marked replaced.
pub const SOMETIMES_IN_FLIGHT_REPLACED: &str = "the in-flight part is replaced";
/// R16: resuming with `since:turn:<id>` of the last turn held continues right after it.
pub const R16: &str = "R16 resume from a known turn";
/// Sometimes: a turn larger than the budget comes back as an excerpt.
pub const SOMETIMES_OVERSIZED: &str = "a turn larger than the budget";
/// Sometimes: the in-flight part is cut.
pub const SOMETIMES_IN_FLIGHT_CUT: &str = "the in-flight part is cut";
/// Sometimes: selected turns did not fit and were reported omitted.
pub const SOMETIMES_OMITTED: &str = "turns are omitted";
/// Sometimes: a read returns no completed turn.
pub const SOMETIMES_NOTHING_NEW: &str = "a read returns nothing new";

/// Unique states of [`ReadModel::default`] (a regression alarm: a change to the model or its
/// bounds that changes the reachable state space must update this number on purpose; a cut
/// search would report fewer).
pub const DEFAULT_UNIQUE_STATES: usize = 18_057;

fn r5_no_skip(_: &ReadModel, s: &ReadState) -> bool {
    s.transcript
        .turns
        .iter()
        .filter(|turn| turn.seq <= s.cursor)
        .all(|turn| s.given.contains(&turn.seq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Checker;

    const ALWAYS: [&str; 7] = [R1, R5, R6, R7, R8, R15, R16];
    const SOMETIMES: [&str; 6] = [
        SOMETIMES_OVERSIZED,
        SOMETIMES_IN_FLIGHT_CUT,
        SOMETIMES_OMITTED,
        SOMETIMES_NOTHING_NEW,
        SOMETIMES_IN_FLIGHT_NEW,
        SOMETIMES_IN_FLIGHT_REPLACED,
    ];

    #[test]
    fn correct_model_holds_every_property_at_default_bounds() {
        let bfs = ReadModel::default().checker().spawn_bfs().join();
        let dfs = ReadModel::default().checker().spawn_dfs().join();
        assert_eq!(bfs.unique_state_count(), DEFAULT_UNIQUE_STATES);
        assert_eq!(dfs.unique_state_count(), DEFAULT_UNIQUE_STATES);
        for name in ALWAYS {
            assert!(bfs.discovery(name).is_none(), "{name} fails");
        }
        // The interesting paths are really reached, so the always properties are not vacuous.
        for name in SOMETIMES {
            assert!(bfs.discovery(name).is_some(), "{name} never happens");
        }
    }

    #[test]
    fn every_known_bad_variant_is_caught_for_its_property() {
        for variant in ReadVariant::ALL {
            let checker = ReadModel::new(ReadBounds::default(), variant)
                .checker()
                .spawn_bfs()
                .join();
            match variant.breaks() {
                None => assert!(ALWAYS.iter().all(|n| checker.discovery(n).is_none())),
                Some(name) => assert!(
                    checker.discovery(name).is_some(),
                    "{variant:?}: no counterexample for {name:?}"
                ),
            }
        }
    }

    #[test]
    fn budget_applied_to_turns_only_is_caught_for_r1_and_nothing_else_of_r5_r6() {
        let checker = ReadModel::new(ReadBounds::default(), ReadVariant::TurnsOnlyBudget)
            .checker()
            .spawn_bfs()
            .join();
        assert!(checker.discovery(R1).is_some());
        assert!(checker.discovery(R5).is_none());
        assert!(checker.discovery(R6).is_none());
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn cursor_text_round_trips_and_rejects_every_single_character_change() {
        let text = cursor_text("s980-1", 0x2a);
        assert_eq!(
            parse_cursor(&text),
            Ok(RefCursor {
                child: "s980-1".into(),
                seq: 0x2a,
                seen: None
            })
        );
        for (i, c) in text.char_indices() {
            for replacement in ['0', '1', 'f', '.', 'x'] {
                if replacement == c {
                    continue;
                }
                let mut damaged = text.clone();
                damaged.replace_range(i..i + 1, &replacement.to_string());
                assert_eq!(
                    parse_cursor(&damaged),
                    Err(RefReadError::CursorDamaged),
                    "{damaged}"
                );
            }
        }
        assert_eq!(parse_cursor(&text[1..]), Err(RefReadError::CursorDamaged));
        assert_eq!(
            parse_cursor(&format!("{text}0")),
            Err(RefReadError::CursorDamaged)
        );
    }

    /// R7: two ids whose CRC-32 collide (the tag of the retired v1 cursor) are still told apart.
    #[test]
    fn r7_colliding_ids_other_child() {
        assert_eq!(crc32(b"s61947-8"), crc32(b"s590020-12"));
        let mut t = transcript(&["one"], None);
        t.child = "s590020-12".into();
        let request = RefReadRequest {
            selector: RefSelector::Since(cursor_text("s61947-8", 0)),
            max_chars: 1000,
            history: RefHistory::Open,
        };
        assert_eq!(read(&t, &request), Err(RefReadError::CursorOtherChild));
        let retired = RefReadRequest {
            selector: RefSelector::Since(v1_cursor_text("s590020-12", 0)),
            ..request
        };
        assert_eq!(read(&t, &retired), Err(RefReadError::CursorRetired));
    }

    fn transcript(turns: &[&str], in_flight: Option<&str>) -> RefTranscript {
        RefTranscript {
            child: "c".into(),
            turns: turns
                .iter()
                .enumerate()
                .map(|(i, text)| RefTurn {
                    id: format!("t{}", i + 1),
                    seq: i as u64 + 1,
                    text: (*text).into(),
                })
                .collect(),
            in_flight: in_flight.map(String::from),
            requests: Vec::new(),
        }
    }

    fn since(seq: u64, max_chars: usize) -> RefReadRequest {
        RefReadRequest {
            selector: RefSelector::Since(cursor_text("c", seq)),
            max_chars,
            history: RefHistory::Open,
        }
    }

    #[test]
    fn the_reference_answer_has_the_exact_text_of_the_spec() {
        let t = transcript(&["one", "two"], Some("wor"));
        let window = read(&t, &since(1, 1000)).expect("fits");
        let expected = format!(
            "[parkline read c since:{}]\n[turn t2 seq 2: 3 chars]\ntwo\n[in-flight: 3 chars]\nwor\n\
             [parkline read end: 1 whole, 0 excerpt, 0 omitted; next since:{}]\n",
            cursor_text("c", 1),
            cursor_text_of(&RefCursor {
                child: "c".into(),
                seq: 2,
                seen: Some(RefSeen {
                    after: 2,
                    chars: 3,
                    prefix: crc32(b"wor"),
                }),
            })
        );
        assert_eq!(window.text, expected);
        assert_eq!(window.next, Some(2));
    }

    /// R15: with the cursor that saw `wor`, a grown part sends only its new characters, a
    /// replaced one comes whole and marked, and one after another turn is new.
    #[test]
    fn r15_since_in_flight_suffix() {
        let t = transcript(&["one", "two"], Some("wor"));
        let first = read(&t, &since(1, 1000)).expect("fits");
        let cursor = RefCursor {
            child: "c".into(),
            seq: 2,
            seen: first.next_seen,
        };
        let again = |in_flight: &str| {
            let t = transcript(&["one", "two"], Some(in_flight));
            let request = RefReadRequest {
                selector: RefSelector::Since(cursor_text_of(&cursor)),
                max_chars: 1000,
                history: RefHistory::Open,
            };
            read(&t, &request).expect("fits")
        };
        let grown = again("working");
        assert_eq!(
            grown.in_flight,
            RefInFlight::New {
                from: 3,
                seen: 3,
                total: 7
            }
        );
        assert!(grown.text.contains("[in-flight: chars 3..7 of 7]\nking\n"));
        let replaced = again("done");
        assert_eq!(
            replaced.in_flight,
            RefInFlight::Replaced { shown: 4, total: 4 }
        );
        assert!(
            replaced
                .text
                .contains("[in-flight, replaced: 4 chars]\ndone\n")
        );
        let variant = read_variant(
            &transcript(&["one", "two"], Some("working")),
            &RefReadRequest {
                selector: RefSelector::Since(cursor_text_of(&cursor)),
                max_chars: 1000,
                history: RefHistory::Open,
            },
            ReadVariant::ResendInFlight,
        )
        .expect("fits");
        assert_eq!(variant.in_flight, RefInFlight::Whole(7));
    }

    #[test]
    fn the_reference_needed_budget_is_the_smallest_that_works() {
        let t = transcript(&[&"x".repeat(300)], Some("partial"));
        let Err(RefReadError::BudgetTooSmall { needed }) = read(&t, &since(0, 10)) else {
            panic!("10 chars cannot hold the framing");
        };
        assert!(read(&t, &since(0, needed)).is_ok());
        assert!(read(&t, &since(0, needed - 1)).is_err());
    }
}
