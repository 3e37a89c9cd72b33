//! `parkline check` and `parkline explore`: model-check parkline's stateright models (delivery,
//! read, and operator requests) and print one table row per model, with each property's verdict;
//! serve stateright's Explorer.
//!
//! Each model goes through [`check_model`], which runs the checker with progress on stderr and
//! returns a [`Row`]; a violated property gets the *shortest* counterexample, found by
//! [`parkline_model::search::shortest_path`] (stateright 0.31's own path is not minimal when a
//! model has several properties), told step by step in the spec's words through [`Narrate`].
//! Adding a model is a [`Narrate`] impl and one `rows.push(check_model(...))` line in [`main`].

use std::fmt::Debug;
use std::hash::Hash;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use parkline_model::delivery::{self, Bounds, DeliveryModel, Variant};
use parkline_model::ops::{self, OpsBounds, OpsModel, OpsVariant};
use parkline_model::read::{ReadBounds, ReadModel, ReadVariant};
use parkline_model::search::shortest_path;
use stateright::report::{ReportData, ReportDiscovery, Reporter};
use stateright::{Checker, Expectation, Model};

/// The search order of a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Search {
    /// Breadth first.
    Bfs,
    /// Depth first.
    Dfs,
}

/// How to run the checker.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    /// The search order.
    pub search: Search,
    /// Checker threads.
    pub threads: usize,
    /// Print progress on stderr while checking.
    pub progress: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            search: Search::Dfs,
            threads: 1,
            progress: true,
        }
    }
}

/// A property's verdict after a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// An `always`/`eventually` property with no counterexample in the whole state space.
    Holds,
    /// A `sometimes` property with an example.
    Discovered,
    /// An `always`/`eventually` property with a counterexample.
    Violated,
    /// A `sometimes` property never reached: the check would be vacuous there.
    NotReached,
}

impl Verdict {
    /// True for the verdicts that make `parkline check` fail.
    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Violated | Verdict::NotReached)
    }

    fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Discovered => "discovered",
            Verdict::Violated => "VIOLATED",
            Verdict::NotReached => "NOT REACHED",
        }
    }
}

/// One property's line in the table.
#[derive(Clone, Debug)]
pub struct PropertyRow {
    /// The property's name (a spec id for `always`/`eventually`).
    pub name: &'static str,
    /// `always`, `eventually` or `sometimes`.
    pub kind: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// For a violation: the shortest counterexample, one sentence per step.
    pub counterexample: Vec<String>,
}

/// One model's result.
#[derive(Clone, Debug)]
pub struct Row {
    /// The model's name.
    pub model: String,
    /// The bounds, as text.
    pub bounds: String,
    /// States generated, repeats included.
    pub states: usize,
    /// Unique states.
    pub unique: usize,
    /// Maximum depth explored.
    pub depth: usize,
    /// Wall-clock time of the check.
    pub elapsed: Duration,
    /// Every property, in the model's order.
    pub properties: Vec<PropertyRow>,
    /// A failed regression alarm (unique states differ from the pinned count), if any.
    pub alarm: Option<String>,
}

impl Row {
    /// True when no property is violated, every `sometimes` property was reached and no
    /// regression alarm went off.
    pub fn passed(&self) -> bool {
        self.alarm.is_none() && !self.properties.iter().any(|p| p.verdict.is_failure())
    }

    /// Set off the regression alarm unless the unique state count is `pinned`.
    pub fn pin(&mut self, pinned: usize) {
        if self.unique != pinned {
            self.alarm = Some(format!(
                "{}: {} unique states, pinned {pinned}: the model or its bounds changed",
                self.model, self.unique
            ));
        }
    }
}

/// A model whose steps can be told in the spec's words.
pub trait Narrate: Model {
    /// What `action` did from `before` to `after`, as one sentence.
    fn narrate_step(
        &self,
        before: &Self::State,
        action: &Self::Action,
        after: &Self::State,
    ) -> String;
}

impl Narrate for DeliveryModel {
    fn narrate_step(
        &self,
        before: &Self::State,
        action: &Self::Action,
        after: &Self::State,
    ) -> String {
        self.narrate(before, action, after)
    }
}

impl Narrate for OpsModel {
    fn narrate_step(
        &self,
        before: &Self::State,
        action: &Self::Action,
        after: &Self::State,
    ) -> String {
        self.narrate(before, action, after)
    }
}

impl Narrate for ReadModel {
    fn narrate_step(
        &self,
        before: &Self::State,
        action: &Self::Action,
        after: &Self::State,
    ) -> String {
        self.narrate(before, action, after)
    }
}

/// Progress on stderr, once a second.
struct Progress {
    name: String,
    enabled: bool,
    done_after: Option<Duration>,
}

impl<M: Model> Reporter<M> for Progress {
    fn report_checking(&mut self, data: ReportData) {
        if data.done {
            self.done_after = Some(data.duration);
        }
        if !self.enabled {
            return;
        }
        let secs = data.duration.as_secs_f64();
        eprintln!(
            "{}: {} {} states, {} unique, depth {}, {:.1}s",
            self.name,
            if data.done { "done:" } else { "checking:" },
            data.total_states,
            data.unique_states,
            data.max_depth,
            secs
        );
    }

    fn report_discoveries(
        &mut self,
        _: &M,
        _: std::collections::BTreeMap<&'static str, ReportDiscovery<M>>,
    ) where
        M::Action: Debug + PartialEq,
        M::State: Debug + Hash + PartialEq,
    {
        // The table prints the verdicts; violations get the shortest path of our own.
    }
}

/// Model-check `model` exhaustively and return its row: counts, time and verdicts, with the
/// shortest counterexample of each violated property.
pub fn check_model<M>(name: &str, bounds: &str, model: M, opts: &Opts) -> Row
where
    M: Model + Narrate + Clone + Send + Sync + 'static,
    M::State: Clone + Debug + Eq + Hash + Send + Sync,
    M::Action: Clone + Debug + PartialEq + Send + Sync,
{
    let mut progress = Progress {
        name: name.to_owned(),
        enabled: opts.progress,
        done_after: None,
    };
    let start = Instant::now();
    let builder = model.clone().checker().threads(opts.threads.max(1));
    let (states, unique, depth, found) = match opts.search {
        Search::Bfs => summarize(builder.spawn_bfs().join_and_report(&mut progress)),
        Search::Dfs => summarize(builder.spawn_dfs().join_and_report(&mut progress)),
    };
    // The reporter's own last sleep is not part of the check.
    let elapsed = progress.done_after.unwrap_or_else(|| start.elapsed());
    let properties = model
        .properties()
        .into_iter()
        .map(|p| {
            let discovered = found.contains(&p.name);
            let (kind, verdict) = match p.expectation {
                Expectation::Always => ("always", discovered),
                Expectation::Eventually => ("eventually", discovered),
                Expectation::Sometimes => ("sometimes", discovered),
            };
            let verdict = match (p.expectation.discovery_is_failure(), verdict) {
                (true, true) => Verdict::Violated,
                (true, false) => Verdict::Holds,
                (false, true) => Verdict::Discovered,
                (false, false) => Verdict::NotReached,
            };
            let counterexample = if verdict == Verdict::Violated {
                shortest_path(&model, &p)
                    .map(|path| {
                        path.windows(2)
                            .filter_map(|w| {
                                let action = w[1].1.as_ref()?;
                                Some(model.narrate_step(&w[0].0, action, &w[1].0))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            PropertyRow {
                name: p.name,
                kind,
                verdict,
                counterexample,
            }
        })
        .collect();
    Row {
        model: name.to_owned(),
        bounds: bounds.to_owned(),
        states,
        unique,
        depth,
        elapsed,
        properties,
        alarm: None,
    }
}

fn summarize<M, C>(checker: C) -> (usize, usize, usize, Vec<&'static str>)
where
    M: Model,
    M::State: Clone + PartialEq,
    M::Action: Clone + PartialEq,
    C: Checker<M>,
{
    let mut found: Vec<&'static str> = checker.discoveries().into_keys().collect();
    found.sort_unstable();
    (
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        found,
    )
}

/// The table of rows, then each violation's counterexample, as printed by `parkline check`.
pub fn render(rows: &[Row]) -> String {
    let w = rows.iter().map(|r| r.model.len()).max().unwrap_or(0).max(5);
    let mut out = String::new();
    out.push_str(&format!(
        "{:<w$} {:>12} {:>12} {:>6} {:>9} {:>10}  bounds\n",
        "model", "states", "unique", "depth", "seconds", "states/s"
    ));
    for row in rows {
        let secs = row.elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            (row.states as f64 / secs) as u64
        } else {
            0
        };
        out.push_str(&format!(
            "{:<w$} {:>12} {:>12} {:>6} {:>9.2} {:>10}  {}\n",
            row.model, row.states, row.unique, row.depth, secs, rate, row.bounds
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "{:<w$} {:<10} {:<11} property\n",
        "model", "kind", "verdict"
    ));
    for row in rows {
        for p in &row.properties {
            out.push_str(&format!(
                "{:<w$} {:<10} {:<11} {}\n",
                row.model,
                p.kind,
                p.verdict.word(),
                p.name
            ));
        }
    }
    for alarm in rows.iter().filter_map(|row| row.alarm.as_ref()) {
        out.push_str(&format!("\nREGRESSION ALARM {alarm}\n"));
    }
    for row in rows {
        for p in row
            .properties
            .iter()
            .filter(|p| !p.counterexample.is_empty())
        {
            out.push_str(&format!(
                "\n{} VIOLATED: {:?}, shortest counterexample ({} steps):\n",
                row.model,
                p.name,
                p.counterexample.len()
            ));
            for (i, step) in p.counterexample.iter().enumerate() {
                out.push_str(&format!("  {}. {step}\n", i + 1));
            }
        }
    }
    out
}

/// Which models `parkline check` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Models {
    /// The delivery model (spec/delivery.md).
    Delivery,
    /// The read model (spec/read.md).
    Read,
    /// The operator requests model (spec/mirror.md, M17).
    Ops,
    /// Every model.
    All,
}

impl Models {
    /// Whether the delivery, read and ops models are selected.
    fn selected(self) -> (bool, bool, bool) {
        match self {
            Models::Delivery => (true, false, false),
            Models::Read => (false, true, false),
            Models::Ops => (false, false, true),
            Models::All => (true, true, true),
        }
    }
}

/// The model `parkline explore` serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExploreModel {
    /// The delivery model (spec/delivery.md).
    Delivery,
    /// The read model (spec/read.md).
    Read,
    /// The operator requests model (spec/mirror.md, M17).
    Ops,
}

/// A bound set's long help: what each set bounds and reaches, and its pinned state counts (time
/// and memory are measured in docs/verification.md, not promised here).
const BOUNDS_HELP: &str = "The bound set to check: ci, deep, crash, group, remember, or a JSON file\n\n\
- ci: the default and CI's. Delivery: 3 lines, budget 6, 2 crashes, 2 failures (dead at 2), \
1 collection, 1 redrive, 1 discard, lines 2 and 3 as one group park, repeat bound 2 (two crashes close a \
batch): 2,704,651 unique states. \
Read: 2 turns, a rebuild of the transcript, 111,690 unique states. \
Ops: 2 operators, 2 daemon crashes, 1 crash of each operator, 1 session end, 1 operator reusing \
its id, 189,999 unique states (every set but deep).\n\
- deep: ci with a fourth line (a batch leaves two lines behind it) and a third read turn: \
42,623,401 delivery states; read 2,286,164 states; ops with a third operator, 25,736,287 \
states. Reaches \
'a batch leaves two lines for later turns'; catches the known-bad trailer-counts-next-turn, \
which holds at ci.\n\
- crash: ci with a third crash, a failure budget of 3 (dead at 3) and the crate's repeat bound \
(3): 107,811,693 delivery states; read as ci. \
Reaches 'a batch is closed by the repeat bound' after three hand-overs.\n\
- group: group commit, three callers parking at once (two lines, and an invalid one refused \
alone): each park joins the pending group, a leader writes it as one record, the fsync returns, \
each caller takes its answer, with a crash at every step between; 2 lines (budget 2: a split, \
and a line over the budget), 1 crash, no failure, collection, redrive or discard: 17,769 \
delivery states; read as ci. Catches ack-before-fsync, group-drops-follower and \
refusal-fails-group, which the other sets cannot reach.\n\
- remember: the remembered window (issue 42): the mirror remembers the last request settled as \
delivered or discarded (delivered_memory 1), so a park of it again is answered from there; one park's \
answer lost to a crash, the parent's turns going on while the daemon's retry waits; 2 lines \
(budget 2), 2 crashes, no failure, collection, redrive or discard: 1,880 delivery states; read as \
ci. Reaches 'a retried park is answered as delivered'; catches forget-at-compaction and \
forget-at-reopen, which the other sets (no window) cannot.\n\
- FILE: a JSON object {\"delivery\": {...}, \"read\": {...}, \"ops\": {...}}, every key optional and \
defaulting to ci: delivery keys lines, sizes, budget, crashes, failures, failures_max, \
collects, redrives, discards, group (the first line of the group park, 1-based; 0 for none), lost_parks \
(parks whose answer a crash loses, each retried; no-park-dedup needs 1), group_parkers (parks in \
progress at once through group commit, replacing the group park), repeats_max, delivered_memory \
(the remembered window's requests; 0 for none); read keys \
turns, grow_chars, grows, budgets, requests, rebuilds; ops keys operators, daemon_crashes, \
operator_crashes, session_ends (a session removed and made again with a new life), id_reuses \
(a second command under an id, for another change). A file's counts are not pinned.\n\n\
The flags below change the set's delivery bounds; a named set's unique state count is pinned \
(a regression alarm) only when no flag changes it.";

/// The named bound sets of `parkline check --bounds`.
pub const BOUND_SETS: [&str; 5] = ["ci", "deep", "crash", "group", "remember"];

/// A bound set: the delivery and read bounds of one check, and their pinned unique state counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundSet {
    /// The set's name (or the file it was read from).
    pub name: String,
    /// The delivery model's bounds.
    pub delivery: Bounds,
    /// The line sizes the delivery lines cycle through (see [`Bounds::with_sizes`]).
    pub sizes: Vec<usize>,
    /// The read model's bounds.
    pub read: ReadBounds,
    /// The delivery model's pinned unique state count, for a named set.
    pub delivery_pin: Option<usize>,
    /// The read model's pinned unique state count, for a named set.
    pub read_pin: Option<usize>,
    /// The ops model's bounds.
    pub ops: OpsBounds,
    /// The ops model's pinned unique state count, for a named set.
    pub ops_pin: Option<usize>,
}

impl BoundSet {
    /// The named set, or `None` for a name that is not one.
    pub fn named(name: &str) -> Option<BoundSet> {
        let (delivery, read, delivery_pin, read_pin) = match name {
            "ci" => (
                Bounds::check(),
                ReadBounds::default(),
                delivery::CHECK_UNIQUE_STATES,
                parkline_model::read::DEFAULT_UNIQUE_STATES,
            ),
            "deep" => (
                Bounds::deep(),
                ReadBounds::deep(),
                delivery::DEEP_UNIQUE_STATES,
                parkline_model::read::DEEP_UNIQUE_STATES,
            ),
            "crash" => (
                Bounds::crash(),
                ReadBounds::default(),
                delivery::CRASH_UNIQUE_STATES,
                parkline_model::read::DEFAULT_UNIQUE_STATES,
            ),
            "group" => (
                Bounds::group(),
                ReadBounds::default(),
                delivery::GROUP_UNIQUE_STATES,
                parkline_model::read::DEFAULT_UNIQUE_STATES,
            ),
            "remember" => (
                Bounds::remember(),
                ReadBounds::default(),
                delivery::REMEMBER_UNIQUE_STATES,
                parkline_model::read::DEFAULT_UNIQUE_STATES,
            ),
            _ => return None,
        };
        let (ops, ops_pin) = if name == "deep" {
            (OpsBounds::deep(), ops::OPS_DEEP_UNIQUE_STATES)
        } else {
            (OpsBounds::default(), ops::OPS_UNIQUE_STATES)
        };
        Some(BoundSet {
            name: name.to_owned(),
            delivery,
            sizes: Bounds::LINE_CHARS.to_vec(),
            read,
            delivery_pin: Some(delivery_pin),
            read_pin: Some(read_pin),
            ops,
            ops_pin: Some(ops_pin),
        })
    }

    /// A named set, or the bound set in the JSON file `arg` names.
    ///
    /// # Errors
    ///
    /// A message naming the file, for an unreadable file or one that is not a bound set.
    pub fn resolve(arg: &str) -> Result<BoundSet, String> {
        if let Some(set) = BoundSet::named(arg) {
            return Ok(set);
        }
        let text = std::fs::read_to_string(arg).map_err(|e| {
            format!(
                "--bounds: {arg:?} is neither a bound set ({}) nor a readable file: {e}",
                BOUND_SETS.join(", ")
            )
        })?;
        BoundSet::from_json(arg, &text).map_err(|e| format!("--bounds: {arg}: {e}"))
    }

    /// The bound set a JSON text describes (see `parkline check --help`); `name` names it.
    ///
    /// # Errors
    ///
    /// The JSON error, an unknown key included.
    pub fn from_json(name: &str, text: &str) -> Result<BoundSet, String> {
        let file: BoundsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let ci = Bounds::check();
        let d = file.delivery.unwrap_or_default();
        let budget = d.budget.unwrap_or(ci.budget);
        let sizes = d.sizes.unwrap_or_else(|| Bounds::LINE_CHARS.to_vec());
        let lines = d.lines.unwrap_or(ci.lines.len());
        let mut delivery = Bounds::with_sizes(lines, &sizes, budget, 0, 0);
        delivery.crashes = d.crashes.unwrap_or(ci.crashes);
        delivery.failures = d.failures.unwrap_or(ci.failures);
        delivery.failures_max = d.failures_max.unwrap_or(ci.failures_max);
        delivery.collects = d.collects.unwrap_or(ci.collects);
        delivery.redrives = d.redrives.unwrap_or(ci.redrives);
        delivery.discards = d.discards.unwrap_or(ci.discards);
        delivery.lost_parks = d.lost_parks.unwrap_or(ci.lost_parks);
        delivery.group_parkers = d.group_parkers.unwrap_or(ci.group_parkers);
        delivery.repeats_max = d.repeats_max.unwrap_or(ci.repeats_max).max(1);
        delivery.delivered_memory = d.delivered_memory.unwrap_or(ci.delivered_memory);
        if let Some(group) = d.group {
            delivery.group_at = group.checked_sub(1);
        }
        let r = file.read.unwrap_or_default();
        let ci = ReadBounds::default();
        let read = ReadBounds {
            turns: r.turns.unwrap_or(ci.turns),
            grow_chars: r.grow_chars.unwrap_or(ci.grow_chars),
            grows: r.grows.unwrap_or(ci.grows),
            budgets: r.budgets.unwrap_or(ci.budgets),
            requests: r.requests.unwrap_or(ci.requests),
            rebuilds: r.rebuilds.unwrap_or(ci.rebuilds),
        };
        let o = file.ops.unwrap_or_default();
        let ci = OpsBounds::default();
        let ops = OpsBounds {
            operators: o.operators.unwrap_or(ci.operators),
            daemon_crashes: o.daemon_crashes.unwrap_or(ci.daemon_crashes),
            operator_crashes: o.operator_crashes.unwrap_or(ci.operator_crashes),
            session_ends: o.session_ends.unwrap_or(ci.session_ends),
            id_reuses: o.id_reuses.unwrap_or(ci.id_reuses),
        };
        if ops.operators > OpsBounds::OPERATORS_MAX {
            return Err(format!(
                "ops.operators: at most {}",
                OpsBounds::OPERATORS_MAX
            ));
        }
        Ok(BoundSet {
            name: name.to_owned(),
            delivery,
            sizes,
            read,
            delivery_pin: None,
            read_pin: None,
            ops,
            ops_pin: None,
        })
    }
}

/// A bound set file: every key optional, defaulting to the `ci` set.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundsFile {
    delivery: Option<DeliveryFile>,
    read: Option<ReadFile>,
    ops: Option<OpsFile>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsFile {
    operators: Option<u8>,
    daemon_crashes: Option<u8>,
    operator_crashes: Option<u8>,
    session_ends: Option<u8>,
    id_reuses: Option<u8>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryFile {
    lines: Option<usize>,
    sizes: Option<Vec<usize>>,
    budget: Option<usize>,
    crashes: Option<u32>,
    failures: Option<u32>,
    failures_max: Option<u32>,
    collects: Option<u32>,
    redrives: Option<u32>,
    discards: Option<u32>,
    group: Option<usize>,
    lost_parks: Option<u32>,
    group_parkers: Option<u32>,
    repeats_max: Option<u32>,
    delivered_memory: Option<u32>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFile {
    turns: Option<usize>,
    grow_chars: Option<usize>,
    grows: Option<usize>,
    budgets: Option<Vec<usize>>,
    requests: Option<usize>,
    rebuilds: Option<usize>,
}

/// The bounds of `check` and `explore`: a bound set, and flags that change its delivery
/// bounds.
#[derive(Clone, Debug, clap::Args)]
pub struct BoundsArgs {
    #[arg(long, value_name = "SET|FILE", default_value = "ci", long_help = BOUNDS_HELP)]
    pub bounds: String,
    /// Delivery: lines that arrive [default: from the set; ci 3]
    #[arg(long, value_name = "N")]
    pub lines: Option<usize>,
    /// Delivery: line sizes in characters, cycled (the third line imitates a trailer, whatever
    /// its size) [default: 1,2,7]
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Delivery: the budget of every boundary [default: from the set; ci 6]
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Delivery: crashes allowed [default: from the set; ci 2]
    #[arg(long, value_name = "N")]
    pub crashes: Option<u32>,
    /// Delivery: item failures allowed [default: from the set; ci 2]
    #[arg(long, value_name = "N")]
    pub failures: Option<u32>,
    /// Delivery: failures that make a dead letter [default: from the set; ci 2]
    #[arg(long, value_name = "N")]
    pub failures_max: Option<u32>,
    /// Delivery: agent_read collections allowed [default: from the set; ci 1]
    #[arg(long, value_name = "N")]
    pub collects: Option<u32>,
    /// Check a known-bad variant (shows its counterexample): a delivery variant of
    /// parkline_model::delivery::Variant, a read variant of parkline_model::read::ReadVariant
    /// or an ops variant of parkline_model::ops::OpsVariant
    #[arg(long, value_name = "NAME", value_parser = variant_names())]
    pub variant: Option<String>,
}

/// The flags of `parkline check`.
#[derive(Clone, Debug, clap::Parser)]
pub struct CheckArgs {
    /// Which models to check
    #[arg(long, value_enum, default_value_t = Models::All)]
    pub model: Models,
    #[command(flatten)]
    pub bounds: BoundsArgs,
    /// Search order (dfs: the same states, less memory)
    #[arg(long, value_enum, default_value_t = Search::Dfs)]
    pub search: Search,
    /// Checker threads
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
}

/// The flags of `parkline explore`.
#[derive(Clone, Debug, clap::Parser)]
pub struct ExploreArgs {
    /// Which model to serve
    #[arg(long, value_enum, default_value_t = ExploreModel::Delivery)]
    pub model: ExploreModel,
    /// The address the Explorer listens on
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:3000")]
    pub addr: String,
    #[command(flatten)]
    pub bounds: BoundsArgs,
}

/// Every variant name `--variant` accepts, delivery then read then ops, each once.
fn variant_names() -> clap::builder::PossibleValuesParser {
    let mut names: Vec<&'static str> = Variant::ALL.iter().map(|v| v.name()).collect();
    let others = ReadVariant::ALL
        .iter()
        .map(|v| v.name())
        .chain(OpsVariant::ALL.iter().map(|v| v.name()));
    for name in others {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    clap::builder::PossibleValuesParser::new(names)
}

/// What the command line asked for.
#[derive(Clone, Debug)]
struct Args {
    delivery: bool,
    read: bool,
    ops: bool,
    set: BoundSet,
    delivery_variant: Variant,
    read_variant: ReadVariant,
    ops_variant: OpsVariant,
}

/// The models, bounds and variants `models` and `flags` select; an error for a `--variant` of
/// no selected model or a `--bounds` that is no set. A known-bad variant narrows the check to
/// its model (the first selected of delivery, read, ops that has that name); `correct` keeps
/// every selected model.
fn resolve(models: Models, flags: &BoundsArgs) -> Result<Args, String> {
    let (delivery, read, ops) = models.selected();
    let mut set = BoundSet::resolve(&flags.bounds)?;
    let before = set.delivery.clone();
    let bounds = &mut set.delivery;
    if flags.lines.is_some() || flags.sizes.is_some() || flags.budget.is_some() {
        let sizes = flags.sizes.as_ref().unwrap_or(&set.sizes);
        let lines = flags.lines.unwrap_or(bounds.lines.len());
        let budget = flags.budget.unwrap_or(bounds.budget);
        bounds.lines = Bounds::with_sizes(lines, sizes, budget, 0, 0).lines;
        bounds.budget = budget;
    }
    bounds.crashes = flags.crashes.unwrap_or(bounds.crashes);
    bounds.failures = flags.failures.unwrap_or(bounds.failures);
    bounds.failures_max = flags.failures_max.unwrap_or(bounds.failures_max);
    bounds.collects = flags.collects.unwrap_or(bounds.collects);
    if set.delivery != before {
        set.delivery_pin = None;
    }
    let mut parsed = Args {
        delivery,
        read,
        ops,
        set,
        delivery_variant: Variant::Correct,
        read_variant: ReadVariant::Correct,
        ops_variant: OpsVariant::Correct,
    };
    let Some(name) = flags.variant.as_deref().filter(|name| *name != "correct") else {
        return Ok(parsed);
    };
    let only = |parsed: &mut Args, (delivery, read, ops)| {
        (parsed.delivery, parsed.read, parsed.ops) = (delivery, read, ops);
    };
    if let Some(v) = Variant::from_name(name).filter(|_| parsed.delivery) {
        parsed.delivery_variant = v;
        only(&mut parsed, (true, false, false));
    } else if let Some(v) = ReadVariant::from_name(name).filter(|_| parsed.read) {
        parsed.read_variant = v;
        only(&mut parsed, (false, true, false));
    } else if let Some(v) = OpsVariant::from_name(name).filter(|_| parsed.ops) {
        parsed.ops_variant = v;
        only(&mut parsed, (false, false, true));
    } else {
        let selected: Vec<&str> = [(delivery, "delivery"), (read, "read"), (ops, "ops")]
            .into_iter()
            .filter_map(|(on, model)| on.then_some(model))
            .collect();
        return Err(format!(
            "--variant: {name:?} is not a variant of the {} model",
            selected.join(" or ")
        ));
    }
    Ok(parsed)
}

/// A usage error found after parsing, reported the way clap reports its own (exit 2).
fn usage_error(command: &str, message: &str) -> ExitCode {
    eprintln!("error: {message}\n\nFor more information, try 'parkline {command} --help'.");
    ExitCode::from(2)
}

fn model_name(base: &str, variant: &str) -> String {
    if variant == "correct" {
        base.to_owned()
    } else {
        format!("{base}[{variant}]")
    }
}

/// Entry point of `parkline check`: exit 0 when every property holds or is discovered, 1 when
/// one is violated or never reached or a pinned state count differs.
pub fn main(flags: &CheckArgs) -> ExitCode {
    let args = match resolve(flags.model, &flags.bounds) {
        Ok(args) => args,
        Err(message) => return usage_error("check", &message),
    };
    let opts = Opts {
        search: flags.search,
        threads: flags.threads.max(1),
        progress: true,
    };
    let mut rows = Vec::new();
    let set = &args.set;
    eprintln!("parkline check: bound set {}", set.name);
    if args.delivery {
        let model = DeliveryModel::new(set.delivery.clone(), args.delivery_variant);
        let name = model_name("delivery", args.delivery_variant.name());
        let mut row = check_model(&name, &set.delivery.summary(), model, &opts);
        if args.delivery_variant == Variant::Correct {
            let pin = set.delivery_pin.or_else(|| {
                (set.delivery == Bounds::default()).then_some(delivery::DEFAULT_UNIQUE_STATES)
            });
            if let Some(pin) = pin {
                row.pin(pin);
            }
        }
        rows.push(row);
    }
    if args.read {
        let model = ReadModel::new(set.read.clone(), args.read_variant);
        let name = model_name("read", args.read_variant.name());
        let bounds = model.bounds.summary();
        let mut row = check_model(&name, &bounds, model, &opts);
        if let (ReadVariant::Correct, Some(pin)) = (args.read_variant, set.read_pin) {
            row.pin(pin);
        }
        rows.push(row);
    }
    if args.ops {
        let model = OpsModel::new(set.ops.clone(), args.ops_variant);
        let name = model_name("ops", args.ops_variant.name());
        let bounds = model.bounds.summary();
        let mut row = check_model(&name, &bounds, model, &opts);
        if let (OpsVariant::Correct, Some(pin)) = (args.ops_variant, set.ops_pin) {
            row.pin(pin);
        }
        rows.push(row);
    }
    print!("{}", render(&rows));
    let _ = std::io::stdout().flush();
    if rows.iter().all(Row::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Entry point of `parkline explore`: serves until killed.
pub fn explore_main(flags: &ExploreArgs) -> ExitCode {
    let models = match flags.model {
        ExploreModel::Delivery => Models::Delivery,
        ExploreModel::Read => Models::Read,
        ExploreModel::Ops => Models::Ops,
    };
    let args = match resolve(models, &flags.bounds) {
        Ok(args) => args,
        Err(message) => return usage_error("explore", &message),
    };
    let addr = flags.addr.as_str();
    eprintln!("parkline explore: serving the Explorer on http://{}", addr);
    if args.read {
        ReadModel::new(args.set.read, args.read_variant)
            .checker()
            .serve(addr);
    } else if args.ops {
        OpsModel::new(args.set.ops, args.ops_variant)
            .checker()
            .serve(addr);
    } else {
        DeliveryModel::new(args.set.delivery, args.delivery_variant)
            .checker()
            .serve(addr);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> Opts {
        Opts {
            progress: false,
            ..Opts::default()
        }
    }

    #[test]
    fn a_known_bad_variant_is_violated_with_a_narrated_shortest_counterexample() {
        let model = DeliveryModel::new(Bounds::generated(2, 6, 0, 0), Variant::PopFront);
        let row = check_model("delivery", "small", model, &quiet());
        assert!(!row.passed());
        let d1 = row
            .properties
            .iter()
            .find(|p| p.name == delivery::D1)
            .expect("D1 is a property");
        assert_eq!(d1.verdict, Verdict::Violated);
        assert_eq!(d1.counterexample.len(), 3, "{:?}", d1.counterexample);
        let text = render(&[row]);
        assert!(text.contains("VIOLATED"));
        assert!(text.contains("1. a line of request 1 arrives and is parked as seq 1"));
    }

    #[test]
    fn unreached_sometimes_properties_fail_the_check() {
        let model = DeliveryModel::new(Bounds::generated(2, 6, 1, 1), Variant::Correct);
        let row = check_model("delivery", "small", model, &quiet());
        let failed: Vec<_> = row
            .properties
            .iter()
            .filter(|p| p.verdict.is_failure())
            .map(|p| p.name)
            .collect();
        // Two lines that fit one batch, one failure: no split, no line over the budget, no
        // dead letter (it needs failures_max = 2 failures), so no redrive or discard, and no
        // group park (it is lines 2 and 3): these are reported, never hidden.
        assert_eq!(
            failed,
            [
                delivery::SOMETIMES_SPLIT,
                delivery::SOMETIMES_DEAD,
                delivery::SOMETIMES_OVERSIZED,
                delivery::SOMETIMES_REDRIVEN_HANDED,
                delivery::SOMETIMES_DISCARD,
                delivery::SOMETIMES_TORN_GROUP,
            ]
        );
        assert!(row.unique > 0 && row.states >= row.unique);
    }

    #[test]
    fn bound_sets_are_named_or_read_from_a_file() -> Result<(), clap::Error> {
        use clap::Parser as _;
        for name in BOUND_SETS {
            let set = BoundSet::named(name).expect("a named set");
            assert!(set.delivery_pin.is_some() && set.read_pin.is_some());
            let ops_pin = if name == "deep" {
                ops::OPS_DEEP_UNIQUE_STATES
            } else {
                ops::OPS_UNIQUE_STATES
            };
            assert_eq!(set.ops_pin, Some(ops_pin));
        }
        let deep = BoundSet::named("deep").expect("deep");
        assert_eq!(deep.delivery, Bounds::deep());
        assert_eq!(deep.read.turns, 3);
        let crash = BoundSet::named("crash").expect("crash");
        assert_eq!(
            (crash.delivery.crashes, crash.delivery.failures_max),
            (3, 3)
        );
        let group = BoundSet::named("group").expect("group");
        assert_eq!(group.delivery, Bounds::group());
        assert_eq!(group.delivery_pin, Some(delivery::GROUP_UNIQUE_STATES));
        // The group commit variants are command-line names like the others.
        let flags = CheckArgs::try_parse_from([
            "check",
            "--bounds",
            "group",
            "--variant",
            "ack-before-fsync",
        ])?;
        let parsed = resolve(Models::Delivery, &flags.bounds).expect("group");
        assert_eq!(parsed.delivery_variant, Variant::AckBeforeSync);
        let parkers = BoundSet::from_json("parkers", r#"{"delivery": {"group_parkers": 2}}"#)
            .expect("a group_parkers key");
        assert_eq!(parkers.delivery.group_parkers, 2);
        // The remembered window's set, and its variants by name.
        let remember = BoundSet::named("remember").expect("remember");
        assert_eq!(remember.delivery, Bounds::remember());
        assert_eq!(
            remember.delivery_pin,
            Some(delivery::REMEMBER_UNIQUE_STATES)
        );
        for (name, variant) in [
            ("forget-at-compaction", Variant::ForgetAtCompaction),
            ("forget-at-reopen", Variant::ForgetAtReopen),
        ] {
            let flags =
                CheckArgs::try_parse_from(["check", "--bounds", "remember", "--variant", name])?;
            let parsed = resolve(Models::Delivery, &flags.bounds).expect("remember");
            assert_eq!(parsed.delivery_variant, variant);
        }
        let window = BoundSet::from_json("window", r#"{"delivery": {"delivered_memory": 3}}"#)
            .expect("a delivered_memory key");
        assert_eq!(window.delivery.delivered_memory, 3);
        // A flag on top of a named set keeps the rest of the set and drops the pin.
        let flags = CheckArgs::try_parse_from(["check", "--bounds", "deep", "--crashes", "1"])?;
        let parsed = resolve(Models::All, &flags.bounds).expect("deep");
        assert_eq!(parsed.set.delivery.lines.len(), 4);
        assert_eq!(parsed.set.delivery.crashes, 1);
        assert_eq!(parsed.set.delivery_pin, None);
        assert_eq!(
            parsed.set.read_pin,
            Some(parkline_model::read::DEEP_UNIQUE_STATES)
        );
        // A file: keys default to ci, unknown keys are refused, a missing file is named.
        let dir = std::env::temp_dir().join(format!("parkline-bounds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("set.json");
        std::fs::write(
            &file,
            r#"{"delivery": {"lines": 2, "crashes": 0, "group": 0}, "read": {"turns": 1}}"#,
        )
        .expect("write");
        let set = BoundSet::resolve(file.to_str().expect("utf-8")).expect("a file");
        assert_eq!(set.delivery.lines.len(), 2);
        assert_eq!(set.delivery.crashes, 0);
        assert_eq!(set.delivery.group_at, None);
        assert_eq!(set.delivery.budget, Bounds::check().budget);
        assert_eq!(set.read.turns, 1);
        assert_eq!((set.delivery_pin, set.read_pin), (None, None));
        assert_eq!((set.ops, set.ops_pin), (OpsBounds::default(), None));
        let three = BoundSet::from_json("three", r#"{"ops": {"operators": 3}}"#).expect("ops");
        assert_eq!(three.ops, OpsBounds::deep());
        let err = BoundSet::from_json("many", r#"{"ops": {"operators": 9}}"#).unwrap_err();
        assert!(err.contains("at most 8"), "{err}");
        let empty = BoundSet::from_json("empty", "{}").expect("all defaults");
        assert_eq!(empty.delivery, Bounds::check());
        assert_eq!(empty.read, ReadBounds::default());
        let err = BoundSet::from_json("bad", r#"{"delivery": {"line": 2}}"#).unwrap_err();
        assert!(err.contains("unknown field `line`"), "{err}");
        let err = BoundSet::resolve("no-such-set").unwrap_err();
        assert!(err.contains("ci, deep, crash"), "{err}");
        std::fs::remove_dir_all(&dir).expect("clean up");
        Ok(())
    }

    #[test]
    fn flags_parse_into_bounds_and_variants() -> Result<(), clap::Error> {
        use clap::Parser as _;
        let flags = CheckArgs::try_parse_from([
            "check",
            "--lines",
            "4",
            "--sizes",
            "3,1",
            "--budget",
            "9",
            "--variant",
            "pop-front",
            "--search",
            "bfs",
        ])?;
        assert_eq!(flags.search, Search::Bfs);
        let parsed = resolve(Models::All, &flags.bounds).expect("a delivery variant");
        assert_eq!(parsed.set.delivery.lines.len(), 4);
        let chars: Vec<usize> = parsed
            .set
            .delivery
            .lines
            .iter()
            .map(|(_, l)| l.chars().count())
            .collect();
        let forged = Bounds::FORGED_LINE.chars().count();
        assert_eq!(chars, [3, 1, forged, 1]);
        assert_eq!(parsed.set.delivery.budget, 9);
        assert_eq!(
            parsed.set.delivery_pin, None,
            "changed bounds are not pinned"
        );
        assert_eq!(parsed.delivery_variant, Variant::PopFront);
        assert!(parsed.delivery && !parsed.read);
        // The defaults are the pinned bounds.
        let defaults = CheckArgs::try_parse_from(["check"])?;
        let parsed = resolve(Models::All, &defaults.bounds).expect("no variant");
        assert_eq!(parsed.set.delivery, Bounds::check());
        assert_eq!(parsed.set.read, ReadBounds::default());
        assert_eq!(parsed.set.delivery_pin, Some(delivery::CHECK_UNIQUE_STATES));
        assert_eq!((defaults.search, defaults.threads), (Search::Dfs, 1));
        assert!(CheckArgs::try_parse_from(["check", "--bogus", "1"]).is_err());
        assert!(CheckArgs::try_parse_from(["check", "--variant", "nope"]).is_err());
        // A read variant with only the delivery model selected is refused, not ignored.
        let read_only = ReadVariant::ALL
            .into_iter()
            .find(|v| Variant::from_name(v.name()).is_none())
            .expect("a read-only variant name");
        let flags = CheckArgs::try_parse_from(["check", "--variant", read_only.name()])?;
        assert!(resolve(Models::Delivery, &flags.bounds).is_err());
        assert_eq!(
            resolve(Models::Read, &flags.bounds).map(|a| a.read_variant),
            Ok(read_only)
        );
        Ok(())
    }

    #[test]
    fn ops_variants_are_selected_by_name_and_caught_with_their_story() -> Result<(), clap::Error> {
        use clap::Parser as _;
        let flags = CheckArgs::try_parse_from(["check", "--variant", "answer-before-durable"])?;
        let parsed = resolve(Models::All, &flags.bounds).expect("an ops variant");
        assert_eq!(parsed.ops_variant, OpsVariant::AnswerBeforeDurable);
        assert_eq!(
            (parsed.delivery, parsed.read, parsed.ops),
            (false, false, true)
        );
        let err = resolve(Models::Delivery, &flags.bounds)
            .map(|_| ())
            .unwrap_err();
        assert!(err.contains("not a variant of the delivery model"), "{err}");
        // `correct` keeps every selected model.
        let flags = CheckArgs::try_parse_from(["check", "--variant", "correct"])?;
        let parsed = resolve(Models::All, &flags.bounds).expect("correct");
        assert_eq!(
            (parsed.delivery, parsed.read, parsed.ops),
            (true, true, true)
        );
        // The correct model holds at its pinned count; each variant is violated for the property
        // it names, with its shortest path told step by step.
        let mut row = check_model("ops", "ci", OpsModel::default(), &quiet());
        row.pin(ops::OPS_UNIQUE_STATES);
        assert!(row.passed(), "{}", render(&[row]));
        for variant in OpsVariant::ALL.into_iter().skip(1) {
            let model = OpsModel::new(OpsBounds::default(), variant);
            let row = check_model(&model_name("ops", variant.name()), "ci", model, &quiet());
            let broken = variant.breaks().expect("a known-bad variant");
            let p = row
                .properties
                .iter()
                .find(|p| p.name == broken)
                .expect("a property");
            assert_eq!(p.verdict, Verdict::Violated, "{variant:?}");
            assert!(!p.counterexample.is_empty());
        }
        let model = OpsModel::new(OpsBounds::default(), OpsVariant::AnswerBeforeDurable);
        let text = render(&[check_model(
            "ops[answer-before-durable]",
            "ci",
            model,
            &quiet(),
        )]);
        assert!(
            text.contains(
                "6. operator r1 reads the mirror lock-free, finds r1 and answers without an fsync"
            ),
            "{text}"
        );
        Ok(())
    }
}
