//! The bounds of a delivery check (which lines arrive, the budget, how many crashes, failures and
//! collections), the default bounds of the tests and of `parkline check`, and the unique state
//! counts pinned at those bounds as a regression alarm.

/// The bounds of one check: which lines arrive (in this order), the budget, and how many crashes,
/// failures and agent_read collections may happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// `(request, line)` in arrival order.
    pub lines: Vec<(u64, String)>,
    /// The budget passed to every boundary.
    pub budget: usize,
    /// Crashes allowed in one run.
    pub crashes: u32,
    /// Item failures allowed in one run (a failed hand-over counts once).
    pub failures: u32,
    /// The queue's dead-letter threshold.
    pub failures_max: u32,
    /// agent_read collections allowed in one run.
    pub collects: u32,
    /// The line at this index and the next arrive together as one group park (one record, all
    /// or none); `None`, or an index without a next line, parks every line alone.
    pub group_at: Option<usize>,
    /// Redrives of all dead letters allowed in one run.
    pub redrives: u32,
    /// Discards of all dead letters allowed in one run (D8, the operator's `parkline discard
    /// --all`).
    pub discards: u32,
    /// Parks whose record reached the mirror while the daemon crashed before it learnt so, each
    /// retried after the restart (D3); each is also a crash. 0 in the named bound sets.
    pub lost_parks: u32,
    /// Parks in progress at once on a shared handle (group commit, D16): each park joins the
    /// pending group, a leader writes the group as one record, a sync makes it durable, and then
    /// each caller takes its own answer; one more caller parks [`Bounds::INVALID_LINE`], refused
    /// alone. 0 in the named bound sets but `group`: every park is then the one step `Park` (or
    /// the group park of `group_at`, which these bounds replace).
    pub group_parkers: u32,
    /// The queue's repeat bound (D10): a recovered batch at this attempt is closed. 2 in the
    /// generated bounds, so two crashes close a batch (a crash loop of three lives).
    pub repeats_max: u32,
    /// The queue's remembered window (issue 42, `delivered_memory`): how many requests settled as
    /// delivered or discarded the mirror remembers, so that a park of one again is answered from
    /// the window instead of parking its line anew. 0 in the named bound sets but `remember`:
    /// no window, and a park whose answer was lost is retried first thing after the restart, as
    /// today. Above 0 the parent's turns go on while that retry waits (boundaries, hand-overs,
    /// outcomes, settles, compactions, crashes; no other park), so the line can be delivered and
    /// settled before the retry, which the window then answers. The model follows a line by its
    /// seq, so bounds with a window must not let a line be forgotten before its retry (a retry
    /// past the window is a new line, which the model does not follow): without failures or a
    /// redrive, the line whose answer was lost is the last one remembered before its retry.
    pub delivered_memory: u32,
}

impl Bounds {
    /// The line sizes (characters) the generated lines cycle through. With budget 6 (costs 2, 3,
    /// 8): the first two share a batch, the third is larger than the budget and goes alone.
    pub const LINE_CHARS: [usize; 3] = [1, 2, 7];

    /// The third generated line, whatever its size: it imitates a trailer (of the batch that
    /// carries it in the default bounds, with a plausible CRC), so the framing property checks
    /// that a reader never takes a line for framing. Larger than any budget of the tests: alone.
    pub const FORGED_LINE: &'static str =
        "[parkline batch 2 end: 0 parked lines still undelivered, crc32 00000000]";

    /// The line the invalid caller parks beside the others when `group_parkers` is set: it holds
    /// a `\n`, so its park is refused (D3) and parks nothing, whatever group it joins.
    pub const INVALID_LINE: &'static str = "holds a\nnewline";

    /// `lines` generated lines (request `i + 1`, sizes from [`Bounds::LINE_CHARS`], with a
    /// multi-byte character so bytes and characters differ) and the other bounds as given.
    pub fn generated(lines: usize, budget: usize, crashes: u32, failures: u32) -> Bounds {
        Bounds::with_sizes(lines, &Self::LINE_CHARS, budget, crashes, failures)
    }

    /// Like [`Bounds::generated`], with line sizes (characters) cycling through `sizes`
    /// (`[1]` when empty); the third line is [`Bounds::FORGED_LINE`]. Lines 2 and 3 (indexes 1
    /// and 2) arrive as one group park; one redrive and one discard are allowed.
    pub fn with_sizes(
        lines: usize,
        sizes: &[usize],
        budget: usize,
        crashes: u32,
        failures: u32,
    ) -> Bounds {
        let sizes = if sizes.is_empty() { &[1][..] } else { sizes };
        let alphabet = ['a', 'é', 'c', 'd'];
        let lines = (0..lines)
            .map(|i| {
                let chars = sizes[i % sizes.len()];
                let c = alphabet[i % alphabet.len()];
                let line = match i {
                    2 => Self::FORGED_LINE.to_owned(),
                    _ => std::iter::repeat_n(c, chars).collect(),
                };
                (i as u64 + 1, line)
            })
            .collect();
        Bounds {
            lines,
            budget,
            crashes,
            failures,
            failures_max: 2,
            collects: 1,
            group_at: Some(1),
            redrives: 1,
            discards: 1,
            lost_parks: 0,
            group_parkers: 0,
            repeats_max: 2,
            delivered_memory: 0,
        }
    }

    /// Two lines parked alone, one crash, the first park's answer lost once: the smallest
    /// bounds where a park is retried (D3), where `no-park-dedup` is caught.
    pub fn with_lost_park() -> Bounds {
        Bounds {
            group_at: None,
            redrives: 0,
            discards: 0,
            collects: 0,
            lost_parks: 1,
            ..Bounds::generated(2, 6, 1, 0)
        }
    }

    /// Three callers parking at once through group commit: two lines, and a third caller whose
    /// line is invalid, so one group can hold both lines and the refused one; one crash, no
    /// failure, budget 2 (costs 2 and 3: the first batch takes one line and leaves the other,
    /// which goes alone over the budget). The `group` bound set of `parkline check`, where a
    /// group holds two callers' lines, or a refused line beside a parked one, and where
    /// `ack-before-fsync`, `group-drops-follower` and `refusal-fails-group` are caught.
    pub fn group() -> Bounds {
        Bounds {
            group_at: None,
            redrives: 0,
            discards: 0,
            collects: 0,
            group_parkers: 3,
            ..Bounds::generated(2, 2, 1, 0)
        }
    }

    /// The remembered window at its smallest: a window of one request, two lines (budget 2, so
    /// a split, and a line over the budget alone), two crashes, no failure, collection, redrive
    /// or discard, and one park whose answer a crash loses. The `remember` bound set of
    /// `parkline check`, where the line whose answer was lost is delivered and settled before
    /// the daemon's retry of its park, which the window answers "delivered", and where
    /// `forget-at-compaction` and `forget-at-reopen` are caught (the second crash is the reopen
    /// after the delivery).
    pub fn remember() -> Bounds {
        Bounds {
            group_at: None,
            redrives: 0,
            discards: 0,
            collects: 0,
            lost_parks: 1,
            delivered_memory: 1,
            ..Bounds::generated(2, 2, 2, 0)
        }
    }

    /// The arrival that starts at line `index`: how many lines it parks (2 for the group park,
    /// else 1; always 1 with group parkers, which replace the group park).
    pub fn arrival_len(&self, index: usize) -> usize {
        if self.group_parkers == 0 && self.group_at == Some(index) && index + 1 < self.lines.len() {
            2
        } else {
            1
        }
    }

    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        let sizes: Vec<String> = self
            .lines
            .iter()
            .map(|(_, line)| line.chars().count().to_string())
            .collect();
        let group = match self.group_at {
            Some(i) if i + 1 < self.lines.len() => format!("{},{}", i + 1, i + 2),
            _ => "none".into(),
        };
        let mut summary = format!(
            "lines={} (chars {}) group={group} budget={} crashes={} failures={} failures_max={} \
             collects={} redrives={} discards={} repeats_max={}",
            self.lines.len(),
            sizes.join(","),
            self.budget,
            self.crashes,
            self.failures,
            self.failures_max,
            self.collects,
            self.redrives,
            self.discards,
            self.repeats_max
        );
        // Shown only when set, so the named sets' summaries stay as they are.
        if self.lost_parks != 0 {
            summary = format!("{summary} lost_parks={}", self.lost_parks);
        }
        if self.group_parkers != 0 {
            summary = format!("{summary} group_parkers={}", self.group_parkers);
        }
        if self.delivered_memory != 0 {
            summary = format!("{summary} delivered_memory={}", self.delivered_memory);
        }
        summary
    }
}

impl Bounds {
    /// The bounds `parkline check` runs by default: [`Bounds::default`] with 2 crashes, so a
    /// repeat can itself crash and repeat again (attempt 3). About 12 s in release on an idle
    /// machine (one thread, DFS).
    pub fn check() -> Bounds {
        Bounds::generated(3, 6, 2, 2)
    }

    /// The `deep` bound set of `parkline check`: [`Bounds::check`] with a fourth line, so a
    /// batch can leave two lines behind it (three turns at one boundary) and a group park can
    /// land between other parks. About 3 minutes in release here (one thread, DFS).
    pub fn deep() -> Bounds {
        Bounds::generated(4, 6, 2, 2)
    }

    /// The `crash` bound set of `parkline check`: [`Bounds::check`] with a third crash, a
    /// larger failure budget (3 failures, dead at 3) and the crate's repeat bound (3), so a repeat
    /// of a repeat crashes again (attempt 3), the next boundary closes the batch, and a line
    /// fails three times before it is dead.
    pub fn crash() -> Bounds {
        let mut bounds = Bounds::generated(3, 6, 3, 3);
        bounds.failures_max = 3;
        bounds.repeats_max = 3;
        bounds
    }

    /// Two lines, two crashes and no failure: the smallest bounds where a batch is handed over
    /// `repeats_max` (2) times and closed, where `no-repeat-bound` is caught.
    pub fn crash_loop() -> Bounds {
        Bounds {
            group_at: None,
            redrives: 0,
            discards: 0,
            collects: 0,
            ..Bounds::generated(2, 6, 2, 0)
        }
    }
}

impl Default for Bounds {
    /// The default bounds of the test suite and the exhaustive conformance replay: 3 lines (a
    /// 2-line batch and a line over the budget, so splits happen; the last two parked as one
    /// group; the third imitates a trailer), budget 6, 1 crash, 2 failures (enough for a dead
    /// letter at `failures_max` 2), 1 agent_read collection, 1 redrive, 1 discard.
    fn default() -> Self {
        Bounds::generated(3, 6, 1, 2)
    }
}

/// Regression alarm: unique states of the correct model at [`Bounds::default`]; a change means
/// the model or the bounds changed.
pub const DEFAULT_UNIQUE_STATES: usize = 155_915;

/// Regression alarm: unique states of the correct model at [`Bounds::check`]; `parkline check`
/// fails when its count differs.
pub const CHECK_UNIQUE_STATES: usize = 2_704_651;

/// Regression alarm: unique states of the correct model at [`Bounds::deep`].
pub const DEEP_UNIQUE_STATES: usize = 42_623_401;

/// Regression alarm: unique states of the correct model at [`Bounds::with_lost_park`].
pub const LOST_PARK_UNIQUE_STATES: usize = 223;

/// Regression alarm: unique states of the correct model at [`Bounds::group`].
pub const GROUP_UNIQUE_STATES: usize = 17_769;

/// Regression alarm: unique states of the correct model at [`Bounds::crash`].
pub const CRASH_UNIQUE_STATES: usize = 107_811_693;

/// Regression alarm: unique states of the correct model at [`Bounds::remember`].
pub const REMEMBER_UNIQUE_STATES: usize = 1_880;
