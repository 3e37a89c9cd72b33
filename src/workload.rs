//! `parkline workload [TRACE]`: runs a planner workload through today's policy and parkline's,
//! both computed by the `parkline` crate's real code, and prints what the parent pays under each.
//!
//! The trace format is `spec/workload.md`: JSON lines, a header then one event per line (the
//! parent's turns starting and ending, child turns completing, a child's partial turn growing,
//! completion lines arriving, `agent_read` calls). With no argument the shipped trace
//! `src/traces/s966.jsonl` is run; it is reconstructed from the published figures of the
//! seed's planner session s966, not recorded.
//!
//! The two policies:
//!
//! - **today**: every completion line is parked on a [`parkline::Queue`] over
//!   [`parkline::MemStorage`]; at a boundary the lines are handed over one per wake-up turn
//!   (pop-front: a boundary with [`Budget`]`(0)`, which the split turns into a batch of exactly one
//!   line), each turn carrying the bare line; reads are `n:1` peeks
//!   ([`Selector::Latest`]), as recorded.
//! - **parkline**: the same queue hands every line parked at the boundary as one batch turn, split
//!   under the trace's budget (a batch that does not fit leaves the rest to the following
//!   wake-up turns); each read is a `since:<cursor>` read ([`Selector::Since`]) following the
//!   cursor the previous read of that child returned.
//!
//! Both policies read the same [`Transcript`]s through [`Transcript::read`], with the same
//! `max_chars` and no request records attached, so the difference in characters is the
//! selector's alone.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::process::ExitCode;

use parkline::read::{
    ChildId, Cursor, Partial, ReadRequest, RequestHistory, Selector, Transcript, TurnId, TurnSeq,
    Window,
};
use parkline::{Budget, MemStorage, Outcome, Queue, RequestId};
use serde::Deserialize;

/// The shipped trace, `src/traces/s966.jsonl`: planner session s966 reconstructed from the
/// seed's published figures (not recorded). `parkline workload` with no argument runs it.
pub const S966: &str = include_str!("traces/s966.jsonl");

/// The `trace` value of a header this version understands.
pub const FORMAT: &str = "parkline-replay/1";

/// An invalid trace: the 1-based line number and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The line of the trace (1-based; the header is line 1).
    pub line: usize,
    /// What is wrong, lowercase, no trailing period.
    pub message: String,
}

impl TraceError {
    fn new(line: usize, message: impl Into<String>) -> Self {
        TraceError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trace line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceError {}

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The format, [`FORMAT`].
    pub trace: String,
    /// The parent session the trace is of.
    pub session: String,
    /// Whether the trace was recorded from a real session (`false`: reconstructed).
    pub recorded: bool,
    /// Where the trace comes from.
    pub source: String,
    /// parkline's batch budget, in characters of item bodies (see `ARCHITECTURE.md`).
    pub budget: usize,
    /// The `max_chars` of a read that does not give its own.
    pub max_chars: usize,
}

/// One event of a trace (every line after the header).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// The parent starts a turn of its own.
    TurnStart {
        /// The parent's turn id.
        turn: String,
        /// When, for the reader; not used by the run.
        #[serde(default)]
        at: Option<String>,
    },
    /// The parent's turn ends: a boundary.
    TurnEnd {
        /// The turn that ends; must be the one in progress.
        turn: String,
        /// When, for the reader; not used by the run.
        #[serde(default)]
        at: Option<String>,
    },
    /// A child completes a turn of `chars` characters; its partial turn is gone.
    ChildTurn {
        /// The child session.
        child: String,
        /// The child's turn id, unique within the child.
        turn: String,
        /// The turn's size in characters.
        chars: usize,
    },
    /// The child's partial turn now has `chars` characters (0: the child is not working).
    ChildProgress {
        /// The child session.
        child: String,
        /// The partial turn's size in characters.
        chars: usize,
    },
    /// A completion line arrives for the parent (parked while the parent is mid-turn).
    Completion {
        /// The delegation request the line answers.
        request: u64,
        /// The child that answered; for the reader.
        #[serde(default)]
        child: Option<String>,
        /// The line, verbatim.
        line: String,
    },
    /// The parent calls `agent_read` on a child with `n:<n>` (today's recorded call).
    Read {
        /// The child read.
        child: String,
        /// The `n` of the recorded `n:<n>` read.
        n: usize,
        /// The read's `max_chars`; the header's when absent.
        #[serde(default)]
        max_chars: Option<usize>,
    },
}

/// A parsed trace: the header and each event with its line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The header.
    pub header: Header,
    /// The events, each with its 1-based line number.
    pub events: Vec<(usize, Event)>,
}

/// Parses a trace (`spec/workload.md`).
///
/// # Errors
///
/// A [`TraceError`] naming the first line that is not valid JSON, not a known header or event,
/// has a missing, unknown or mistyped field, or is empty.
///
/// # Example
///
/// ```
/// let trace = parkline_cli::workload::parse(parkline_cli::workload::S966)?;
/// assert_eq!(trace.header.session, "s966");
/// assert!(!trace.header.recorded);
/// let bad = parkline_cli::workload::parse("{\"trace\":\"parkline-replay/9\"}").unwrap_err();
/// assert_eq!(bad.line, 1);
/// # Ok::<(), parkline_cli::workload::TraceError>(())
/// ```
pub fn parse(text: &str) -> Result<Trace, TraceError> {
    let mut lines = text.lines().enumerate().map(|(i, line)| (i + 1, line));
    let Some((_, first)) = lines.next() else {
        return Err(TraceError::new(1, "empty trace: expected a header line"));
    };
    let header = parse_header(first)?;
    let mut events = Vec::new();
    for (number, line) in lines {
        if line.trim().is_empty() {
            return Err(TraceError::new(number, "empty line: expected an event"));
        }
        let event: Event = serde_json::from_str(line)
            .map_err(|e| TraceError::new(number, format!("invalid event: {e}")))?;
        events.push((number, event));
    }
    Ok(Trace { header, events })
}

fn parse_header(line: &str) -> Result<Header, TraceError> {
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| TraceError::new(1, format!("invalid header: {e}")))?;
    match value.get("trace").and_then(serde_json::Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(TraceError::new(
                1,
                format!("unknown trace format {other:?}, expected {FORMAT:?}"),
            ));
        }
        None => {
            return Err(TraceError::new(
                1,
                format!("the first line must be a header with \"trace\":{FORMAT:?}"),
            ));
        }
    }
    let header: Header = serde_json::from_value(value)
        .map_err(|e| TraceError::new(1, format!("invalid header: {e}")))?;
    if header.budget == 0 {
        return Err(TraceError::new(1, "budget must be at least 1"));
    }
    if header.max_chars == 0 {
        return Err(TraceError::new(1, "max_chars must be at least 1"));
    }
    Ok(header)
}

/// What one policy cost the parent over the whole trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Wake-up turns handed to the parent to deliver parked lines.
    pub wake_up_turns: usize,
    /// Characters of those turns.
    pub delivered_chars: usize,
    /// `agent_read` calls answered.
    pub reads: usize,
    /// Answers that held a partial turn (the daemon's `partial:true`).
    pub partial_reads: usize,
    /// Characters of the `agent_read` answers.
    pub read_chars: usize,
    /// Characters of completed child turns the parent had already been handed by an earlier read.
    pub repeated_chars: usize,
    /// Completed child turns handed again after an earlier read had handed them.
    pub repeated_turns: usize,
    /// Characters of partial turns in the `agent_read` answers.
    pub partial_chars: usize,
    /// Of those, characters of a partial turn the parent had already been handed by an
    /// earlier read of the same part (the part only grew in between).
    pub partial_repeated_chars: usize,
}

impl Figures {
    /// Characters handed to the parent: wake-up turns and read answers.
    pub fn handed_chars(&self) -> usize {
        self.delivered_chars + self.read_chars
    }

    /// Repeated characters as a share of the characters handed, in percent.
    pub fn repeated_percent(&self) -> f64 {
        percent(self.repeated_chars, self.handed_chars())
    }

    /// Repeated characters as a share of the `agent_read` answers, in percent (the seed's
    /// "about 40 % of 111 k chars").
    pub fn repeated_read_percent(&self) -> f64 {
        percent(self.repeated_chars, self.read_chars)
    }

    /// Repeated characters with the partial turn counted: completed turns and partial-turn
    /// characters handed again.
    pub fn repeated_with_partial(&self) -> usize {
        self.repeated_chars + self.partial_repeated_chars
    }

    /// [`Figures::repeated_with_partial`] as a share of the characters handed, in percent.
    pub fn repeated_with_partial_percent(&self) -> f64 {
        percent(self.repeated_with_partial(), self.handed_chars())
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// One boundary at which lines were parked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// The trace line of the event that made the boundary (a turn end, or a completion reaching
    /// an idle parent).
    pub line: usize,
    /// Lines parked at the boundary.
    pub parked: usize,
    /// Wake-up turns today's policy handed for them.
    pub today_turns: usize,
    /// Wake-up turns parkline handed for them.
    pub parkline_turns: usize,
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadRun {
    /// The trace's header.
    pub header: Header,
    /// Today's policy: pop-front, `n:1` peeks.
    pub today: Figures,
    /// parkline's policy: one batch per boundary, `since:<cursor>` reads.
    pub parkline: Figures,
    /// Every boundary at which lines were parked, in trace order.
    pub boundaries: Vec<Boundary>,
}

/// One policy's state: its queue, what the parent has been handed, its cursors.
struct Policy {
    queue: Queue<MemStorage>,
    figures: Figures,
    /// (child, turn) pairs handed whole or in part by an earlier read.
    handed: BTreeSet<(String, String)>,
    /// Per child, the prefix of its current partial turn that the parent holds from earlier
    /// reads (forgotten when the part completes as a turn: the next part is another one).
    partial_held: BTreeMap<String, String>,
    cursors: BTreeMap<String, Cursor>,
}

impl Policy {
    fn new(line: usize) -> Result<Self, TraceError> {
        let queue = Queue::with_storage(
            MemStorage::new(),
            "workload.mirror",
            parkline::Config::default(),
        )
        .map_err(|e| TraceError::new(line, format!("cannot create the queue: {e}")))?;
        Ok(Policy {
            queue,
            figures: Figures::default(),
            handed: BTreeSet::new(),
            partial_held: BTreeMap::new(),
            cursors: BTreeMap::new(),
        })
    }

    /// Hands over everything parked, one wake-up turn per batch; returns the turns handed.
    /// `pop_front` hands each line as its own turn (today), otherwise one batch per turn.
    fn deliver(
        &mut self,
        line: usize,
        budget: Budget,
        pop_front: bool,
    ) -> Result<usize, TraceError> {
        let fail = |e: parkline::Error| TraceError::new(line, format!("queue: {e}"));
        let budget = if pop_front { Budget(0) } else { budget };
        let mut turns = 0;
        while let Some(batch) = self.queue.boundary(budget).map_err(fail)? {
            turns += 1;
            self.figures.delivered_chars += if pop_front {
                // Today's daemon hands the bare line as the turn: no batch framing.
                batch
                    .items
                    .iter()
                    .map(|item| item.line.chars().count() + 1)
                    .sum()
            } else {
                batch.text().chars().count()
            };
            let outcomes = vec![Outcome::Delivered; batch.items.len()];
            self.queue.settle(batch.id, &outcomes).map_err(fail)?;
        }
        self.figures.wake_up_turns += turns;
        Ok(turns)
    }

    /// The partial-turn characters an answer hands, and those of them the parent already holds.
    fn account_partial(&mut self, child: &str, transcript: &Transcript, window: &Window) {
        let Some(text) = transcript.partial() else {
            return;
        };
        let (from, to) = match window.partial {
            Partial::Whole { chars } => (0, chars),
            Partial::Cut { shown, total } | Partial::Replaced { shown, total } => {
                (total - shown, total)
            }
            Partial::New { from, total, .. } => (from, total),
            Partial::Absent | Partial::Omitted { .. } => return,
        };
        let held = self.partial_held.entry(child.to_owned()).or_default();
        // The held prefix still valid for this text.
        let common = held
            .chars()
            .zip(text.chars())
            .take_while(|(a, b)| a == b)
            .count();
        self.figures.partial_chars += to - from;
        self.figures.partial_repeated_chars += common.min(to).saturating_sub(from);
        // The parent now holds a prefix from 0 only if what it was handed joins what it held.
        let now = if from <= common {
            common.max(to)
        } else {
            common
        };
        *held = text.chars().take(now).collect();
    }

    /// The child's partial turn completed as a turn: what the parent held of it is a turn now.
    fn partial_completed(&mut self, child: &str) {
        self.partial_held.remove(child);
    }

    /// Accounts one read's answer: its characters and the completed turns it repeats.
    fn account(&mut self, child: &str, transcript: &Transcript, window: &Window) {
        self.figures.reads += 1;
        self.figures.read_chars += window.chars;
        if window.partial != Partial::Absent {
            self.figures.partial_reads += 1;
        }
        self.account_partial(child, transcript, window);
        let chars_of = |id: &TurnId| {
            transcript
                .turns()
                .iter()
                .find(|turn| turn.id == id)
                .map_or(0, |turn| turn.text.chars().count())
        };
        for turn in &window.whole {
            let key = (child.to_owned(), turn.id.as_str().to_owned());
            if !self.handed.insert(key) {
                self.figures.repeated_turns += 1;
                self.figures.repeated_chars += chars_of(&turn.id);
            }
        }
        if let Some(excerpt) = &window.excerpt {
            let key = (child.to_owned(), excerpt.turn.id.as_str().to_owned());
            if !self.handed.insert(key) {
                self.figures.repeated_turns += 1;
                self.figures.repeated_chars += excerpt.to - excerpt.from;
            }
        }
    }
}

/// A child as the run knows it.
struct Child {
    transcript: Transcript,
    next_seq: u64,
}

/// Deterministic filler text of `chars` characters, standing for a turn's text.
fn filler(label: &str, chars: usize) -> String {
    let unit = format!("{label} ");
    unit.chars().cycle().take(chars).collect()
}

/// Replays a parsed trace through both policies.
///
/// # Errors
///
/// A [`TraceError`] naming the line of the first event that is impossible in sequence: a turn
/// started inside a turn, a turn end that does not match, a child or turn id the read side
/// rejects, a duplicate child turn, a read of a child with no earlier event, a completion line
/// the queue rejects; or the last line when the trace ends inside a turn.
///
/// # Example
///
/// ```
/// use parkline_cli::workload;
/// let result = workload::run(&workload::parse(workload::S966)?)?;
/// assert_eq!(result.today.reads, 61);
/// assert!(result.parkline.wake_up_turns < result.today.wake_up_turns);
/// assert_eq!(result.parkline.repeated_chars, 0);
/// # Ok::<(), workload::TraceError>(())
/// ```
pub fn run(trace: &Trace) -> Result<WorkloadRun, TraceError> {
    let budget = Budget(trace.header.budget);
    let mut today = Policy::new(1)?;
    let mut parkline = Policy::new(1)?;
    let mut children: BTreeMap<String, Child> = BTreeMap::new();
    let mut in_turn: Option<(usize, String)> = None;
    let mut boundaries = Vec::new();
    let mut last_line = 1;

    for (line, event) in &trace.events {
        let line = *line;
        last_line = line;
        match event {
            Event::TurnStart { turn, .. } => {
                if let Some((started, current)) = &in_turn {
                    return Err(TraceError::new(
                        line,
                        format!(
                            "turn_start of {turn:?} inside turn {current:?} (started at line {started})"
                        ),
                    ));
                }
                in_turn = Some((line, turn.clone()));
            }
            Event::TurnEnd { turn, .. } => {
                match &in_turn {
                    Some((_, current)) if current == turn => {}
                    Some((_, current)) => {
                        return Err(TraceError::new(
                            line,
                            format!("turn_end of {turn:?} but turn {current:?} is in progress"),
                        ));
                    }
                    None => {
                        return Err(TraceError::new(
                            line,
                            format!("turn_end of {turn:?} but no turn is in progress"),
                        ));
                    }
                }
                in_turn = None;
                boundary(line, budget, &mut today, &mut parkline, &mut boundaries)?;
            }
            Event::ChildTurn { child, turn, chars } => {
                let entry = child_entry(&mut children, child, line)?;
                let id = TurnId::new(turn.as_str())
                    .map_err(|e| TraceError::new(line, format!("turn id: {e}")))?;
                entry.next_seq += 1;
                entry
                    .transcript
                    .push_turn(id, TurnSeq(entry.next_seq), filler(turn, *chars))
                    .map_err(|e| TraceError::new(line, format!("child turn: {e}")))?;
                entry.transcript.set_partial(None);
                today.partial_completed(child);
                parkline.partial_completed(child);
            }
            Event::ChildProgress { child, chars } => {
                let entry = child_entry(&mut children, child, line)?;
                let partial = (*chars > 0).then(|| filler("partial", *chars));
                entry.transcript.set_partial(partial);
            }
            Event::Completion {
                request,
                line: text,
                ..
            } => {
                for policy in [&mut today, &mut parkline] {
                    policy
                        .queue
                        .park(RequestId(*request), text)
                        .map_err(|e| TraceError::new(line, format!("completion line: {e}")))?;
                }
                if in_turn.is_none() {
                    // A line reaching an idle parent wakes it at once: a boundary of its own.
                    boundary(line, budget, &mut today, &mut parkline, &mut boundaries)?;
                }
            }
            Event::Read {
                child,
                n,
                max_chars,
            } => {
                let Some(entry) = children.get(child) else {
                    return Err(TraceError::new(
                        line,
                        format!(
                            "read of child {child:?} before any child_turn or child_progress of it"
                        ),
                    ));
                };
                let max_chars = max_chars.unwrap_or(trace.header.max_chars);
                let transcript = &entry.transcript;
                let read = |selector: Selector| {
                    let mut request = ReadRequest::new(selector, max_chars);
                    request.requests = RequestHistory::None;
                    transcript
                        .read(&request)
                        .map_err(|e| TraceError::new(line, format!("read of {child}: {e}")))
                };
                let latest = read(Selector::Latest { n: *n })?;
                today.account(child, transcript, &latest);
                let cursor = parkline
                    .cursors
                    .get(child)
                    .cloned()
                    .unwrap_or_else(|| transcript.start_cursor());
                let since = read(Selector::Since(cursor))?;
                parkline.account(child, transcript, &since);
                if let Some(next) = since.next {
                    parkline.cursors.insert(child.clone(), next);
                }
            }
        }
    }
    if let Some((started, turn)) = in_turn {
        return Err(TraceError::new(
            last_line,
            format!(
                "the trace ends inside turn {turn:?} (started at line {started}); its parked lines \
                 would never be delivered"
            ),
        ));
    }
    Ok(WorkloadRun {
        header: trace.header.clone(),
        today: today.figures,
        parkline: parkline.figures,
        boundaries,
    })
}

fn child_entry<'a>(
    children: &'a mut BTreeMap<String, Child>,
    child: &str,
    line: usize,
) -> Result<&'a mut Child, TraceError> {
    if !children.contains_key(child) {
        let id =
            ChildId::new(child).map_err(|e| TraceError::new(line, format!("child id: {e}")))?;
        children.insert(
            child.to_owned(),
            Child {
                transcript: Transcript::new(id),
                next_seq: 0,
            },
        );
    }
    children
        .get_mut(child)
        .ok_or_else(|| TraceError::new(line, "child vanished"))
}

fn boundary(
    line: usize,
    budget: Budget,
    today: &mut Policy,
    parkline: &mut Policy,
    boundaries: &mut Vec<Boundary>,
) -> Result<(), TraceError> {
    let parked = parkline.queue.parked().len();
    if parked == 0 {
        return Ok(());
    }
    let today_turns = today.deliver(line, budget, true)?;
    let parkline_turns = parkline.deliver(line, budget, false)?;
    boundaries.push(Boundary {
        line,
        parked,
        today_turns,
        parkline_turns,
    });
    Ok(())
}

/// The run's table, as `parkline workload` prints it.
///
/// # Example
///
/// ```
/// use parkline_cli::workload;
/// let table = workload::render(&workload::run(&workload::parse(workload::S966)?)?);
/// assert!(table.contains("wake-up turns"));
/// # Ok::<(), workload::TraceError>(())
/// ```
pub fn render(result: &WorkloadRun) -> String {
    let (t, p) = (&result.today, &result.parkline);
    let header = &result.header;
    let kind = if header.recorded {
        "recorded"
    } else {
        "reconstructed, not recorded"
    };
    let largest = result
        .boundaries
        .iter()
        .max_by_key(|b| (b.parked, std::cmp::Reverse(b.line)));
    let mut out = format!(
        "parkline workload: session {} ({kind}); batch budget {} chars, read max_chars {}\n\n",
        header.session, header.budget, header.max_chars
    );
    let rows: Vec<(String, String, String)> = vec![
        (
            "boundaries with parked lines".into(),
            result.boundaries.len().to_string(),
            result.boundaries.len().to_string(),
        ),
        (
            "wake-up turns".into(),
            t.wake_up_turns.to_string(),
            p.wake_up_turns.to_string(),
        ),
        (
            "wake-up turns per boundary (mean)".into(),
            per_boundary(t.wake_up_turns, result.boundaries.len()),
            per_boundary(p.wake_up_turns, result.boundaries.len()),
        ),
        match largest {
            Some(b) => (
                format!("wake-up turns at the largest boundary ({} lines)", b.parked),
                b.today_turns.to_string(),
                b.parkline_turns.to_string(),
            ),
            None => (
                "wake-up turns at the largest boundary".into(),
                "-".into(),
                "-".into(),
            ),
        },
        (
            "agent_read calls (partial)".into(),
            format!("{} ({})", t.reads, t.partial_reads),
            format!("{} ({})", p.reads, p.partial_reads),
        ),
        (
            "characters handed to the parent".into(),
            t.handed_chars().to_string(),
            p.handed_chars().to_string(),
        ),
        (
            "  in wake-up turns".into(),
            t.delivered_chars.to_string(),
            p.delivered_chars.to_string(),
        ),
        (
            "  in agent_read answers".into(),
            t.read_chars.to_string(),
            p.read_chars.to_string(),
        ),
        (
            "characters repeated".into(),
            t.repeated_chars.to_string(),
            p.repeated_chars.to_string(),
        ),
        (
            "completed turns handed again".into(),
            t.repeated_turns.to_string(),
            p.repeated_turns.to_string(),
        ),
        (
            "partial-turn characters in answers".into(),
            t.partial_chars.to_string(),
            p.partial_chars.to_string(),
        ),
        (
            "  of them repeated".into(),
            t.partial_repeated_chars.to_string(),
            p.partial_repeated_chars.to_string(),
        ),
        (
            "characters repeated, partial turns counted".into(),
            t.repeated_with_partial().to_string(),
            p.repeated_with_partial().to_string(),
        ),
        (
            "share repeated, partial turns counted".into(),
            format!("{:.1} %", t.repeated_with_partial_percent()),
            format!("{:.1} %", p.repeated_with_partial_percent()),
        ),
        (
            "share repeated".into(),
            format!("{:.1} %", t.repeated_percent()),
            format!("{:.1} %", p.repeated_percent()),
        ),
        (
            "  of agent_read answers".into(),
            format!("{:.1} %", t.repeated_read_percent()),
            format!("{:.1} %", p.repeated_read_percent()),
        ),
    ];
    let columns = (
        "".to_owned(),
        "today (pop-front, n:1)".to_owned(),
        "parkline (batch, since:<cursor>)".to_owned(),
    );
    let width = rows
        .iter()
        .chain(std::iter::once(&columns))
        .map(|row| row.0.chars().count())
        .max()
        .unwrap_or(0);
    let width_today = rows
        .iter()
        .chain(std::iter::once(&columns))
        .map(|row| row.1.chars().count())
        .max()
        .unwrap_or(0);
    for (label, today, parkline) in std::iter::once(&columns).chain(rows.iter()) {
        out.push_str(&format!(
            "{label:<width$}  {today:>width_today$}  {parkline}\n"
        ));
    }
    out.push_str("\nboundaries (trace line: lines parked -> wake-up turns today / parkline)\n");
    for b in &result.boundaries {
        out.push_str(&format!(
            "  line {}: {} parked -> {} / {}\n",
            b.line, b.parked, b.today_turns, b.parkline_turns
        ));
    }
    out
}

fn per_boundary(turns: usize, boundaries: usize) -> String {
    if boundaries == 0 {
        "-".into()
    } else {
        format!("{:.2}", turns as f64 / boundaries as f64)
    }
}

/// The arguments of `parkline workload`.
#[derive(Clone, Debug, clap::Parser)]
pub struct WorkloadArgs {
    /// The trace (JSON lines, spec/workload.md); without it, the shipped trace of planner session
    /// s966, reconstructed from the published figures (not recorded)
    pub trace: Option<std::path::PathBuf>,
}

/// Entry point of `parkline workload`: exit 0 with the table on stdout, 1 on an invalid trace, 3 on
/// an unreadable one (the error on stderr).
pub fn main(args: &WorkloadArgs) -> ExitCode {
    let text = match &args.trace {
        None => S966.to_owned(),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("parkline workload: cannot read {}: {e}", path.display());
                return ExitCode::from(3);
            }
        },
    };
    match parse(&text).and_then(|trace| run(&trace)) {
        Ok(result) => {
            print!("{}", render(&result));
            ExitCode::SUCCESS
        }
        Err(e) => {
            let name = args.trace.as_ref().map_or_else(
                || "the shipped trace s966".to_owned(),
                |path| path.display().to_string(),
            );
            eprintln!("parkline workload: {name}: {e}");
            ExitCode::from(1)
        }
    }
}
