//! The bounds of a read check (turns, growth of the partial turn, budgets, requests), the
//! default bounds of the tests and of `parkline check`, and the unique state count pinned at
//! them as a regression alarm.

/// The bounds of one check.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadBounds {
    /// Completed turns at most.
    pub turns: usize,
    /// Characters one step of work adds to the partial turn.
    pub grow_chars: usize,
    /// Steps of work per turn at most (a turn has `grow_chars` to `grows * grow_chars` chars).
    pub grows: usize,
    /// The budgets (`chars_max`) a read may use.
    pub budgets: Vec<usize>,
    /// Requests the child may open (each can then terminate).
    pub requests: usize,
    /// Times the daemon may rebuild the transcript shorter (section 5.2).
    pub rebuilds: usize,
}

impl ReadBounds {
    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        let budgets: Vec<String> = self.budgets.iter().map(|b| b.to_string()).collect();
        format!(
            "turns={} grow_chars={} grows={} budgets={} requests={} rebuilds={}",
            self.turns,
            self.grow_chars,
            self.grows,
            budgets.join(","),
            self.requests,
            self.rebuilds
        )
    }
}

impl Default for ReadBounds {
    /// The default bounds of `parkline check`: 2 turns, grown in at most 3 steps of at most 20
    /// characters, one request, one rebuild of the transcript without its last turn (section
    /// 5.2), and two budgets, 260 and 300, close to the cost of the framing (the cursor carries
    /// the child id) so that whole turns, excerpts, cut and whole partial turns are all reached;
    /// the `sometimes` properties show they are. Three turns ([`ReadBounds::deep`], 2,286,164
    /// unique states, about 80 s in release) are left to `parkline check --bounds deep`.
    fn default() -> Self {
        ReadBounds {
            turns: 2,
            grow_chars: 20,
            grows: 3,
            budgets: vec![260, 300],
            requests: 1,
            rebuilds: 1,
        }
    }
}

/// Unique states of [`ReadModel::default`](super::ReadModel::default) (a regression alarm: a change to
/// the model or its bounds that changes the reachable state space must update this number on
/// purpose; a cut search would report fewer).
pub const DEFAULT_UNIQUE_STATES: usize = 111_690;

impl ReadBounds {
    /// The read model of the `deep` bound set of `parkline check`: a third turn, so a read can
    /// skip past a whole turn it already holds and a cursor outlives two completed turns.
    pub fn deep() -> Self {
        ReadBounds {
            turns: 3,
            ..ReadBounds::default()
        }
    }
}

/// Unique states of the read model at [`ReadBounds::deep`] (regression alarm).
pub const DEEP_UNIQUE_STATES: usize = 2_286_164;
