//! `parkline workload [TRACE] [--json]`: runs a planner workload through today's policy and
//! parkline's, both computed by the `parkline` crate's real code, and prints what the parent pays
//! under each: in characters, and, when the trace carries the parent's context size, calls and
//! cards, in the seed's units (estimated cache-read tokens of wake-up turns, parent calls per
//! card, replay turns per boundary, per-card context delta).
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
//!
//! The trace's context sizes are today's (it records today's daemon); parkline's context is
//! today's less what parkline did not hand the parent ([`context_at`]), so its wake-up turns read
//! the context it would really have had. The text table and `--json` come from one [`Report`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write;
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

/// The `trace` value of a header of the current format: the first one's fields, plus the
/// parent's context size, the parent's calls and the cards, all optional.
pub const FORMAT: &str = "parkline-workload/2";

/// The `trace` value of the first format, still read: it has no context, calls or card fields,
/// so the rows that need them say "not in the trace".
pub const FORMAT_REPLAY_1: &str = "parkline-replay/1";

/// The `report` value of `parkline workload --json`'s object; a field is only ever added to it.
pub const REPORT_FORMAT: &str = "parkline-workload-report/1";

/// Characters per token the estimate assumes when the header gives no `chars_per_token`.
pub const CHARS_PER_TOKEN_DEFAULT: usize = 4;

/// Calls per wake-up turn the estimate assumes when the header gives no `wake_up_calls`.
pub const WAKE_UP_CALLS_DEFAULT: usize = 1;

/// The format of a trace, from its header's `trace` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Format {
    /// [`FORMAT_REPLAY_1`]: sizes and events only.
    #[serde(rename = "parkline-replay/1")]
    Replay1,
    /// [`FORMAT`]: with the optional context, calls and card fields.
    #[serde(rename = "parkline-workload/2")]
    Workload2,
}

impl Format {
    /// The header's `trace` value.
    pub fn id(self) -> &'static str {
        match self {
            Format::Replay1 => FORMAT_REPLAY_1,
            Format::Workload2 => FORMAT,
        }
    }
}

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
    /// [`FORMAT`] only: which figures are reconstructed (the key: `context_tokens`, `calls`,
    /// `cards`, `events`, `sizes`, ...) and from what (the value). Required, not empty, when
    /// `recorded` is false.
    #[serde(default)]
    pub reconstructed: BTreeMap<String, String>,
    /// [`FORMAT`] only: characters per token, for turning characters handed into context
    /// tokens ([`CHARS_PER_TOKEN_DEFAULT`] when absent).
    #[serde(default)]
    pub chars_per_token: Option<usize>,
    /// [`FORMAT`] only: the parent's calls per wake-up turn, each reading its whole context
    /// ([`WAKE_UP_CALLS_DEFAULT`] when absent).
    #[serde(default)]
    pub wake_up_calls: Option<usize>,
}

impl Header {
    /// The characters per token of the estimate.
    pub fn chars_per_token(&self) -> usize {
        self.chars_per_token.unwrap_or(CHARS_PER_TOKEN_DEFAULT)
    }

    /// The calls per wake-up turn of the estimate.
    pub fn wake_up_calls(&self) -> usize {
        self.wake_up_calls.unwrap_or(WAKE_UP_CALLS_DEFAULT)
    }
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
        /// [`FORMAT`] only: the parent's context in tokens when the turn starts.
        #[serde(default)]
        context_tokens: Option<u64>,
    },
    /// The parent's turn ends: a boundary.
    TurnEnd {
        /// The turn that ends; must be the one in progress.
        turn: String,
        /// When, for the reader; not used by the run.
        #[serde(default)]
        at: Option<String>,
        /// [`FORMAT`] only: the parent's context in tokens when the turn ends, before any
        /// wake-up turn of this boundary.
        #[serde(default)]
        context_tokens: Option<u64>,
        /// [`FORMAT`] only: the model calls the parent's turn made (every `turn_end` or none).
        #[serde(default)]
        calls: Option<u64>,
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
        /// [`FORMAT`] only: the card (the hired child's task) the request was for; every
        /// `completion` or none.
        #[serde(default)]
        card: Option<String>,
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
    /// The header's format.
    pub format: Format,
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
    let (format, header) = parse_header(first)?;
    let mut events = Vec::new();
    for (number, line) in lines {
        if line.trim().is_empty() {
            return Err(TraceError::new(number, "empty line: expected an event"));
        }
        let event: Event = serde_json::from_str(line)
            .map_err(|e| TraceError::new(number, format!("invalid event: {e}")))?;
        if format == Format::Replay1
            && let Some(field) = format_2_field(&event)
        {
            return Err(TraceError::new(
                number,
                format!(
                    "field `{field}` needs format {FORMAT:?}, the header says {FORMAT_REPLAY_1:?}"
                ),
            ));
        }
        events.push((number, event));
    }
    Ok(Trace {
        format,
        header,
        events,
    })
}

/// The first field of `event` that the first format does not have.
fn format_2_field(event: &Event) -> Option<&'static str> {
    match event {
        Event::TurnStart {
            context_tokens: Some(_),
            ..
        }
        | Event::TurnEnd {
            context_tokens: Some(_),
            ..
        } => Some("context_tokens"),
        Event::TurnEnd { calls: Some(_), .. } => Some("calls"),
        Event::Completion { card: Some(_), .. } => Some("card"),
        _ => None,
    }
}

fn parse_header(line: &str) -> Result<(Format, Header), TraceError> {
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| TraceError::new(1, format!("invalid header: {e}")))?;
    let format = match value.get("trace").and_then(serde_json::Value::as_str) {
        Some(FORMAT) => Format::Workload2,
        Some(FORMAT_REPLAY_1) => Format::Replay1,
        Some(other) => {
            return Err(TraceError::new(
                1,
                format!(
                    "unknown trace format {other:?}, expected {FORMAT:?} (or the older {FORMAT_REPLAY_1:?})"
                ),
            ));
        }
        None => {
            return Err(TraceError::new(
                1,
                format!("the first line must be a header with \"trace\":{FORMAT:?}"),
            ));
        }
    };
    let header: Header = serde_json::from_value(value)
        .map_err(|e| TraceError::new(1, format!("invalid header: {e}")))?;
    if header.budget == 0 {
        return Err(TraceError::new(1, "budget must be at least 1"));
    }
    if header.max_chars == 0 {
        return Err(TraceError::new(1, "max_chars must be at least 1"));
    }
    if format == Format::Replay1 {
        let extra = [
            ("reconstructed", !header.reconstructed.is_empty()),
            ("chars_per_token", header.chars_per_token.is_some()),
            ("wake_up_calls", header.wake_up_calls.is_some()),
        ];
        if let Some((field, _)) = extra.iter().find(|(_, present)| *present) {
            return Err(TraceError::new(
                1,
                format!(
                    "field `{field}` needs format {FORMAT:?}, the header says {FORMAT_REPLAY_1:?}"
                ),
            ));
        }
        return Ok((format, header));
    }
    if header.chars_per_token == Some(0) {
        return Err(TraceError::new(1, "chars_per_token must be at least 1"));
    }
    if header.wake_up_calls == Some(0) {
        return Err(TraceError::new(1, "wake_up_calls must be at least 1"));
    }
    // A reconstructed trace must say what is reconstructed, so no invented figure passes for a
    // measured one.
    if !header.recorded && header.reconstructed.is_empty() {
        return Err(TraceError::new(
            1,
            "a trace with recorded false must say in `reconstructed` which figures are \
             reconstructed and from what",
        ));
    }
    if let Some((figure, _)) = header
        .reconstructed
        .iter()
        .find(|(_, from)| from.trim().is_empty())
    {
        return Err(TraceError::new(
            1,
            format!("reconstructed figure {figure:?} must say what it is reconstructed from"),
        ));
    }
    Ok((format, header))
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
    /// Estimated cache-read tokens of the wake-up turns: each of a turn's `wake_up_calls` calls
    /// reads the parent's context at that point ([`context_at`]). `None`: the trace gives no
    /// `context_tokens`.
    pub cache_read_tokens: Option<u64>,
    /// The parent's model calls: its own turns' `calls` plus `wake_up_calls` per wake-up turn.
    /// `None`: the trace gives no `calls`.
    pub calls: Option<u64>,
    /// The parent's estimated context at the trace's first `context_tokens`, under this policy.
    pub context_first_tokens: Option<u64>,
    /// The parent's estimated context after the trace's last event, under this policy.
    pub context_last_tokens: Option<u64>,
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
    /// The parent's context in tokens at the boundary, before its first wake-up turn, as the
    /// trace gives it (today's); `None` when the trace gives no `context_tokens`.
    pub context_tokens: Option<u64>,
    /// Estimated cache-read tokens of today's wake-up turns at this boundary.
    pub today_cache_read_tokens: Option<u64>,
    /// Estimated cache-read tokens of parkline's wake-up turns at this boundary.
    pub parkline_cache_read_tokens: Option<u64>,
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadRun {
    /// The trace's format.
    pub format: Format,
    /// The trace's header.
    pub header: Header,
    /// Distinct `card` values of the completions; `None` when the trace names no card.
    pub cards: Option<usize>,
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

    /// Hands over everything parked, one wake-up turn per batch; returns each turn's characters.
    /// `pop_front` hands each line as its own turn (today), otherwise one batch per turn.
    fn deliver(
        &mut self,
        line: usize,
        budget: Budget,
        pop_front: bool,
    ) -> Result<Vec<usize>, TraceError> {
        let fail = |e: parkline::Error| TraceError::new(line, format!("queue: {e}"));
        let budget = if pop_front { Budget(0) } else { budget };
        let mut turns = Vec::new();
        while let Some(batch) = self.queue.boundary(budget).map_err(fail)? {
            let chars = if pop_front {
                // Today's daemon hands the bare line as the turn: no batch framing.
                batch
                    .items
                    .iter()
                    .map(|item| item.line.chars().count() + 1)
                    .sum()
            } else {
                batch.text().chars().count()
            };
            self.figures.delivered_chars += chars;
            turns.push(chars);
            let outcomes = vec![Outcome::Delivered; batch.items.len()];
            self.queue.settle(batch.id, &outcomes).map_err(fail)?;
        }
        self.figures.wake_up_turns += turns.len();
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
            // A partial form added later hands no characters this accounting knows of.
            Partial::Absent | Partial::Omitted { .. } | _ => return,
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
    let mut cost = Cost {
        chars_per_token: trace.header.chars_per_token(),
        wake_up_calls: trace.header.wake_up_calls() as u64,
        has_context: trace.events.iter().any(|(_, event)| {
            matches!(
                event,
                Event::TurnStart {
                    context_tokens: Some(_),
                    ..
                } | Event::TurnEnd {
                    context_tokens: Some(_),
                    ..
                }
            )
        }),
        figure: None,
    };
    if cost.has_context {
        today.figures.cache_read_tokens = Some(0);
        parkline.figures.cache_read_tokens = Some(0);
    }
    // Set by the first turn_end (calls) and the first completion (card): whether the trace
    // carries the field, so a trace that carries it on some events only is caught.
    let mut own_calls: Option<(usize, Option<u64>)> = None;
    let mut cards: Option<(usize, Option<BTreeSet<String>>)> = None;

    for (line, event) in &trace.events {
        let line = *line;
        last_line = line;
        match event {
            Event::TurnStart {
                turn,
                context_tokens,
                ..
            } => {
                if let Some(tokens) = context_tokens {
                    cost.record(*tokens, &mut today, &mut parkline);
                }
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
            Event::TurnEnd {
                turn,
                context_tokens,
                calls,
                ..
            } => {
                if let Some(tokens) = context_tokens {
                    cost.record(*tokens, &mut today, &mut parkline);
                }
                match &mut own_calls {
                    None => own_calls = Some((line, *calls)),
                    Some((first, sum)) => match (sum.as_mut(), calls) {
                        (Some(sum), Some(calls)) => *sum += calls,
                        (None, None) => {}
                        (Some(_), None) | (None, Some(_)) => {
                            return Err(TraceError::new(
                                line,
                                format!(
                                    "every turn_end gives `calls` or none does; this one {} it \
                                     and the first (line {first}) {}",
                                    if calls.is_some() { "gives" } else { "lacks" },
                                    if calls.is_some() { "lacks" } else { "gives" },
                                ),
                            ));
                        }
                    },
                }
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
                boundary(
                    line,
                    budget,
                    &cost,
                    &mut today,
                    &mut parkline,
                    &mut boundaries,
                )?;
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
                card,
                ..
            } => {
                match &mut cards {
                    None => {
                        cards = Some((line, card.as_ref().map(|c| BTreeSet::from([c.clone()]))));
                    }
                    Some((first, set)) => match (set.as_mut(), card) {
                        (Some(set), Some(card)) => {
                            set.insert(card.clone());
                        }
                        (None, None) => {}
                        (Some(_), None) | (None, Some(_)) => {
                            return Err(TraceError::new(
                                line,
                                format!(
                                    "every completion gives `card` or none does; this one {} it \
                                     and the first (line {first}) {}",
                                    if card.is_some() { "gives" } else { "lacks" },
                                    if card.is_some() { "lacks" } else { "gives" },
                                ),
                            ));
                        }
                    },
                }
                for policy in [&mut today, &mut parkline] {
                    policy
                        .queue
                        .park(RequestId(*request), text)
                        .map_err(|e| TraceError::new(line, format!("completion line: {e}")))?;
                }
                if in_turn.is_none() {
                    // A line reaching an idle parent wakes it at once: a boundary of its own.
                    boundary(
                        line,
                        budget,
                        &cost,
                        &mut today,
                        &mut parkline,
                        &mut boundaries,
                    )?;
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
    if let Some((tokens, handed_at)) = cost.figure {
        for policy in [&mut today, &mut parkline] {
            policy.figures.context_last_tokens = Some(context_at(
                tokens,
                handed_at,
                policy.figures.handed_chars(),
                cost.chars_per_token,
            ));
        }
    }
    if let Some((_, Some(own))) = own_calls {
        for policy in [&mut today, &mut parkline] {
            policy.figures.calls =
                Some(own + cost.wake_up_calls * policy.figures.wake_up_turns as u64);
        }
    }
    Ok(WorkloadRun {
        format: trace.format,
        header: trace.header.clone(),
        cards: cards.and_then(|(_, set)| set).map(|set| set.len()),
        today: today.figures,
        parkline: parkline.figures,
        boundaries,
    })
}

/// The parent's estimated context in tokens under a policy that has handed the parent
/// `handed_now` characters in all, given the trace's last figure: `figure_tokens` when today's
/// policy had handed `handed_at_figure`. What was handed since is added at `chars_per_token`;
/// for parkline, which hands less, the difference comes off (the trace records today's
/// context). Never below 0.
///
/// # Example
///
/// ```
/// use parkline_cli::workload::context_at;
/// // 1,000 tokens recorded; 400 more characters handed since, at 4 per token.
/// assert_eq!(context_at(1_000, 100, 500, 4), 1_100);
/// // A policy that handed 800 characters fewer than today by then.
/// assert_eq!(context_at(1_000, 900, 100, 4), 800);
/// ```
pub fn context_at(
    figure_tokens: u64,
    handed_at_figure: usize,
    handed_now: usize,
    chars_per_token: usize,
) -> u64 {
    let since = handed_now as i128 - handed_at_figure as i128;
    let tokens = i128::from(figure_tokens) + since.div_euclid(chars_per_token.max(1) as i128);
    u64::try_from(tokens.max(0)).unwrap_or(u64::MAX)
}

/// What the token estimate needs while the run goes.
struct Cost {
    chars_per_token: usize,
    wake_up_calls: u64,
    /// Whether any event gives `context_tokens`; if so every boundary with parked lines needs
    /// one before it.
    has_context: bool,
    /// The last `context_tokens` and today's characters handed at that moment.
    figure: Option<(u64, usize)>,
}

impl Cost {
    fn record(&mut self, tokens: u64, today: &mut Policy, parkline: &mut Policy) {
        let handed_at = today.figures.handed_chars();
        self.figure = Some((tokens, handed_at));
        for policy in [today, parkline] {
            if policy.figures.context_first_tokens.is_none() {
                policy.figures.context_first_tokens = Some(context_at(
                    tokens,
                    handed_at,
                    policy.figures.handed_chars(),
                    self.chars_per_token,
                ));
            }
        }
    }

    /// Cache-read tokens of wake-up turns of `turns` characters each, handed in order after the
    /// policy had handed `handed_before` characters: each turn's calls read the context as it is
    /// before that turn (the earlier wake-up turns of the boundary included).
    fn wake_up_tokens(&self, figure: (u64, usize), handed_before: usize, turns: &[usize]) -> u64 {
        let mut handed = handed_before;
        let mut tokens = 0;
        for chars in turns {
            tokens +=
                self.wake_up_calls * context_at(figure.0, figure.1, handed, self.chars_per_token);
            handed += chars;
        }
        tokens
    }
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
    cost: &Cost,
    today: &mut Policy,
    parkline: &mut Policy,
    boundaries: &mut Vec<Boundary>,
) -> Result<(), TraceError> {
    let parked = parkline.queue.parked().len();
    if parked == 0 {
        return Ok(());
    }
    if cost.has_context && cost.figure.is_none() {
        return Err(TraceError::new(
            line,
            "a boundary with parked lines before any context_tokens: the parent's context at \
             its wake-up turns is unknown",
        ));
    }
    let (today_before, parkline_before) = (
        today.figures.handed_chars(),
        parkline.figures.handed_chars(),
    );
    let today_chars = today.deliver(line, budget, true)?;
    let parkline_chars = parkline.deliver(line, budget, false)?;
    let mut tokens = [None, None];
    if let Some(figure) = cost.figure {
        for (slot, (policy, before, chars)) in tokens.iter_mut().zip([
            (&mut *today, today_before, &today_chars),
            (&mut *parkline, parkline_before, &parkline_chars),
        ]) {
            let spent = cost.wake_up_tokens(figure, before, chars);
            *slot = Some(spent);
            policy.figures.cache_read_tokens =
                Some(policy.figures.cache_read_tokens.unwrap_or(0) + spent);
        }
    }
    boundaries.push(Boundary {
        line,
        parked,
        today_turns: today_chars.len(),
        parkline_turns: parkline_chars.len(),
        context_tokens: cost
            .figure
            .map(|(tokens, at)| context_at(tokens, at, today_before, cost.chars_per_token)),
        today_cache_read_tokens: tokens[0],
        parkline_cache_read_tokens: tokens[1],
    });
    Ok(())
}

/// `parkline workload`'s report: what the text table and `--json` both show, computed once so
/// the two cannot disagree. Field names are stable (`spec/workload.md`, "The report"); floats are
/// rounded to the digits the table prints.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Report {
    /// [`REPORT_FORMAT`].
    pub report: &'static str,
    /// The trace's format.
    pub trace: Format,
    /// The header's session.
    pub session: String,
    /// The header's `recorded`.
    pub recorded: bool,
    /// The header's `source`.
    pub source: String,
    /// The header's `reconstructed`: figure -> what it is reconstructed from.
    pub reconstructed: BTreeMap<String, String>,
    /// parkline's batch budget, characters.
    pub budget: usize,
    /// The reads' default `max_chars`.
    pub max_chars: usize,
    /// What the token estimate assumes.
    pub estimate: Estimate,
    /// Boundaries at which lines were parked.
    pub boundaries_with_parked_lines: usize,
    /// The boundary with the most parked lines (the earliest of equals): its trace line.
    pub largest_boundary_line: Option<usize>,
    /// Lines parked at that boundary.
    pub largest_boundary_parked: Option<usize>,
    /// Distinct cards of the completions; `None`: not in the trace.
    pub cards: Option<usize>,
    /// Today's policy.
    pub today: PolicyReport,
    /// parkline's policy.
    pub parkline: PolicyReport,
    /// Every boundary at which lines were parked, in trace order.
    pub boundaries: Vec<Boundary>,
}

/// The assumptions of the token estimate.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Characters per token for characters handed to the parent.
    pub chars_per_token: usize,
    /// The parent's calls per wake-up turn, each reading its whole context.
    pub wake_up_calls: usize,
    /// The assumptions in words.
    pub assumes: String,
}

/// One policy's column of the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PolicyReport {
    /// The policy in words.
    pub policy: &'static str,
    /// Wake-up turns handed to deliver parked lines.
    pub wake_up_turns: usize,
    /// Wake-up turns per boundary with parked lines, mean, 2 decimals.
    pub replay_turns_per_boundary: Option<f64>,
    /// Wake-up turns at the largest boundary.
    pub replay_turns_at_largest_boundary: Option<usize>,
    /// `agent_read` calls.
    pub reads: usize,
    /// Of them, answers holding a partial turn.
    pub partial_reads: usize,
    /// Characters of wake-up turns and read answers.
    pub handed_chars: usize,
    /// Characters of wake-up turns.
    pub delivered_chars: usize,
    /// Characters of read answers.
    pub read_chars: usize,
    /// Characters of completed turns handed again.
    pub repeated_chars: usize,
    /// Completed turns handed again.
    pub repeated_turns: usize,
    /// Partial-turn characters in answers.
    pub partial_chars: usize,
    /// Of them, characters the parent already held.
    pub partial_repeated_chars: usize,
    /// `repeated_chars + partial_repeated_chars`.
    pub repeated_with_partial_chars: usize,
    /// Share repeated of the characters handed, percent, 1 decimal.
    pub repeated_percent: f64,
    /// Share repeated with partial turns counted, percent, 1 decimal.
    pub repeated_with_partial_percent: f64,
    /// Share repeated of the read answers, percent, 1 decimal.
    pub repeated_read_percent: f64,
    /// Estimated cache-read tokens of the wake-up turns; `None`: not in the trace.
    pub cache_read_tokens: Option<u64>,
    /// Of them, at the largest boundary.
    pub cache_read_tokens_at_largest_boundary: Option<u64>,
    /// The parent's model calls; `None`: not in the trace.
    pub calls: Option<u64>,
    /// `calls / cards`, 2 decimals.
    pub calls_per_card: Option<f64>,
    /// Estimated growth of the parent's context per card, tokens, 1 decimal: (context after the
    /// last event - context at the first figure) / cards.
    pub context_delta_per_card_tokens: Option<f64>,
}

fn rounded(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The report of a run (what [`render`] prints and `--json` writes).
///
/// # Example
///
/// ```
/// use parkline_cli::workload;
/// let report = workload::report(&workload::run(&workload::parse(workload::S966)?)?);
/// assert_eq!(report.largest_boundary_parked, Some(13));
/// assert_eq!(report.today.replay_turns_at_largest_boundary, Some(13));
/// assert_eq!(report.parkline.replay_turns_at_largest_boundary, Some(1));
/// # Ok::<(), workload::TraceError>(())
/// ```
pub fn report(result: &WorkloadRun) -> Report {
    let header = &result.header;
    let largest = result
        .boundaries
        .iter()
        .max_by_key(|b| (b.parked, std::cmp::Reverse(b.line)));
    let count = result.boundaries.len();
    let column = |policy: &'static str, f: &Figures, today: bool| {
        let calls_per_card = match (f.calls, result.cards) {
            (Some(calls), Some(cards)) if cards > 0 => {
                Some(rounded(calls as f64 / cards as f64, 2))
            }
            _ => None,
        };
        let delta = match (f.context_first_tokens, f.context_last_tokens, result.cards) {
            (Some(first), Some(last), Some(cards)) if cards > 0 => {
                Some(rounded((last as f64 - first as f64) / cards as f64, 1))
            }
            _ => None,
        };
        PolicyReport {
            policy,
            wake_up_turns: f.wake_up_turns,
            replay_turns_per_boundary: (count > 0)
                .then(|| rounded(f.wake_up_turns as f64 / count as f64, 2)),
            replay_turns_at_largest_boundary: largest.map(|b| {
                if today {
                    b.today_turns
                } else {
                    b.parkline_turns
                }
            }),
            reads: f.reads,
            partial_reads: f.partial_reads,
            handed_chars: f.handed_chars(),
            delivered_chars: f.delivered_chars,
            read_chars: f.read_chars,
            repeated_chars: f.repeated_chars,
            repeated_turns: f.repeated_turns,
            partial_chars: f.partial_chars,
            partial_repeated_chars: f.partial_repeated_chars,
            repeated_with_partial_chars: f.repeated_with_partial(),
            repeated_percent: rounded(f.repeated_percent(), 1),
            repeated_with_partial_percent: rounded(f.repeated_with_partial_percent(), 1),
            repeated_read_percent: rounded(f.repeated_read_percent(), 1),
            cache_read_tokens: f.cache_read_tokens,
            cache_read_tokens_at_largest_boundary: largest.and_then(|b| {
                if today {
                    b.today_cache_read_tokens
                } else {
                    b.parkline_cache_read_tokens
                }
            }),
            calls: f.calls,
            calls_per_card,
            context_delta_per_card_tokens: delta,
        }
    };
    let (chars_per_token, wake_up_calls) = (header.chars_per_token(), header.wake_up_calls());
    let calls = if wake_up_calls == 1 { "call" } else { "calls" };
    Report {
        report: REPORT_FORMAT,
        trace: result.format,
        session: header.session.clone(),
        recorded: header.recorded,
        source: header.source.clone(),
        reconstructed: header.reconstructed.clone(),
        budget: header.budget,
        max_chars: header.max_chars,
        estimate: Estimate {
            chars_per_token,
            wake_up_calls,
            assumes: format!(
                "each wake-up turn makes {wake_up_calls} {calls}, each reading the parent's whole \
                 context from cache; the context at a wake-up turn is the trace's last \
                 context_tokens plus the characters the policy handed the parent since (read \
                 answers and the earlier wake-up turns), at {chars_per_token} characters per \
                 token; for parkline, less what it did not hand compared with today (the trace \
                 records today's context); the parent's own output is not counted"
            ),
        },
        boundaries_with_parked_lines: count,
        largest_boundary_line: largest.map(|b| b.line),
        largest_boundary_parked: largest.map(|b| b.parked),
        cards: result.cards,
        today: column("today (pop-front, n:1)", &result.today, true),
        parkline: column("parkline (batch, since:<cursor>)", &result.parkline, false),
        boundaries: result.boundaries.clone(),
    }
}

/// `parkline workload --json`: the [`report`] as one JSON object on one line.
///
/// # Example
///
/// ```
/// use parkline_cli::workload;
/// let json = workload::json(&workload::run(&workload::parse(workload::S966)?)?);
/// let value: serde_json::Value = serde_json::from_str(&json).expect("one JSON object");
/// assert_eq!(value["report"], workload::REPORT_FORMAT);
/// assert_eq!(value["today"]["replay_turns_at_largest_boundary"], 13);
/// # Ok::<(), workload::TraceError>(())
/// ```
pub fn json(result: &WorkloadRun) -> String {
    // The report holds strings, integers, finite floats and maps with string keys only, which
    // serde_json always serializes.
    serde_json::to_string(&report(result))
        .unwrap_or_else(|e| unreachable!("the report always serializes: {e}"))
}

const NOT_IN_TRACE: &str = "not in the trace";

fn or_absent<T: fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| NOT_IN_TRACE.to_owned(), |v| v.to_string())
}

/// The run's table, as `parkline workload` prints it.
///
/// # Example
///
/// ```
/// use parkline_cli::workload;
/// let table = workload::render(&workload::run(&workload::parse(workload::S966)?)?);
/// assert!(table.contains("wake-up turns"));
/// assert!(table.contains("cache-read tokens on wake-up turns (estimate)"));
/// # Ok::<(), workload::TraceError>(())
/// ```
pub fn render(result: &WorkloadRun) -> String {
    let r = report(result);
    let (t, p) = (&r.today, &r.parkline);
    let kind = if r.recorded {
        "recorded"
    } else {
        "reconstructed, not recorded"
    };
    let mut out = format!(
        "parkline workload: session {} ({kind}, format {}); batch budget {} chars, read \
         max_chars {}\n\n",
        r.session,
        r.trace.id(),
        r.budget,
        r.max_chars
    );
    let largest = match r.largest_boundary_parked {
        Some(parked) => format!(" ({parked} lines)"),
        None => String::new(),
    };
    let two = |x: Option<f64>| x.map(|x| format!("{x:.2}"));
    let one = |x: Option<f64>| x.map(|x| format!("{x:.1}"));
    let cards = match r.cards {
        Some(cards) => format!(" ({cards} cards)"),
        None => String::new(),
    };
    let row = |label: String, today: String, parkline: String| (label, today, parkline);
    let rows: Vec<(String, String, String)> = vec![
        row(
            "boundaries with parked lines".into(),
            r.boundaries_with_parked_lines.to_string(),
            r.boundaries_with_parked_lines.to_string(),
        ),
        row(
            "wake-up turns".into(),
            t.wake_up_turns.to_string(),
            p.wake_up_turns.to_string(),
        ),
        row(
            "replay turns per boundary (mean)".into(),
            two(t.replay_turns_per_boundary).unwrap_or_else(|| "-".into()),
            two(p.replay_turns_per_boundary).unwrap_or_else(|| "-".into()),
        ),
        row(
            format!("replay turns at the largest boundary{largest}"),
            t.replay_turns_at_largest_boundary
                .map_or_else(|| "-".into(), |n| n.to_string()),
            p.replay_turns_at_largest_boundary
                .map_or_else(|| "-".into(), |n| n.to_string()),
        ),
        row(
            "agent_read calls (partial)".into(),
            format!("{} ({})", t.reads, t.partial_reads),
            format!("{} ({})", p.reads, p.partial_reads),
        ),
        row(
            "characters handed to the parent".into(),
            t.handed_chars.to_string(),
            p.handed_chars.to_string(),
        ),
        row(
            "  in wake-up turns".into(),
            t.delivered_chars.to_string(),
            p.delivered_chars.to_string(),
        ),
        row(
            "  in agent_read answers".into(),
            t.read_chars.to_string(),
            p.read_chars.to_string(),
        ),
        row(
            "characters repeated".into(),
            t.repeated_chars.to_string(),
            p.repeated_chars.to_string(),
        ),
        row(
            "completed turns handed again".into(),
            t.repeated_turns.to_string(),
            p.repeated_turns.to_string(),
        ),
        row(
            "partial-turn characters in answers".into(),
            t.partial_chars.to_string(),
            p.partial_chars.to_string(),
        ),
        row(
            "  of them repeated".into(),
            t.partial_repeated_chars.to_string(),
            p.partial_repeated_chars.to_string(),
        ),
        row(
            "characters repeated, partial turns counted".into(),
            t.repeated_with_partial_chars.to_string(),
            p.repeated_with_partial_chars.to_string(),
        ),
        row(
            "share repeated, partial turns counted".into(),
            format!("{:.1} %", t.repeated_with_partial_percent),
            format!("{:.1} %", p.repeated_with_partial_percent),
        ),
        row(
            "share repeated".into(),
            format!("{:.1} %", t.repeated_percent),
            format!("{:.1} %", p.repeated_percent),
        ),
        row(
            "  of agent_read answers".into(),
            format!("{:.1} %", t.repeated_read_percent),
            format!("{:.1} %", p.repeated_read_percent),
        ),
        row(
            "cache-read tokens on wake-up turns (estimate)".into(),
            or_absent(t.cache_read_tokens),
            or_absent(p.cache_read_tokens),
        ),
        row(
            format!("  at the largest boundary{largest}"),
            or_absent(t.cache_read_tokens_at_largest_boundary),
            or_absent(p.cache_read_tokens_at_largest_boundary),
        ),
        row(
            "parent calls".into(),
            or_absent(t.calls),
            or_absent(p.calls),
        ),
        row(
            format!("parent calls per card{cards}"),
            or_absent(two(t.calls_per_card)),
            or_absent(two(p.calls_per_card)),
        ),
        row(
            "per-card context delta, tokens (estimate)".into(),
            or_absent(one(t.context_delta_per_card_tokens)),
            or_absent(one(p.context_delta_per_card_tokens)),
        ),
    ];
    let columns = ("".to_owned(), t.policy.to_owned(), p.policy.to_owned());
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
    out.push_str(&format!("\nestimate: {}\n", r.estimate.assumes));
    if r.trace == Format::Replay1 {
        out.push_str(&format!(
            "format {} carries no context_tokens, calls or card: those rows are not in the trace\n",
            FORMAT_REPLAY_1
        ));
    }
    for (figure, from) in &r.reconstructed {
        out.push_str(&format!("reconstructed {figure}: {from}\n"));
    }
    out.push_str(
        "\nboundaries (trace line: lines parked -> wake-up turns today / parkline; parent \
         context; cache-read tokens today / parkline)\n",
    );
    for b in &r.boundaries {
        out.push_str(&format!(
            "  line {}: {} parked -> {} / {}",
            b.line, b.parked, b.today_turns, b.parkline_turns
        ));
        if let (Some(context), Some(today), Some(parkline)) = (
            b.context_tokens,
            b.today_cache_read_tokens,
            b.parkline_cache_read_tokens,
        ) {
            out.push_str(&format!(
                "; context {context} tokens; {today} / {parkline} tokens"
            ));
        }
        out.push('\n');
    }
    out
}

/// The arguments of `parkline workload`.
#[derive(Clone, Debug, clap::Parser)]
pub struct WorkloadArgs {
    /// The trace (JSON lines, spec/workload.md); without it, the shipped trace of planner session
    /// s966, reconstructed from the published figures (not recorded)
    pub trace: Option<std::path::PathBuf>,
    /// Print the report as one JSON object (stable field names, spec/workload.md) instead of
    /// the table
    #[arg(long)]
    pub json: bool,
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
            let text = if args.json {
                format!("{}\n", json(&result))
            } else {
                render(&result)
            };
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("parkline workload: cannot write the report: {e}");
                    ExitCode::from(3)
                }
            }
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
