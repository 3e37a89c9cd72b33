//! The bounds of an ops check (operators, crashes of the daemon and of each operator, session
//! ends, second commands under an id), the default bounds of the tests and of `parkline check`,
//! and the unique state counts pinned at them as a regression alarm.

/// The bounds of one check.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpsBounds {
    /// Operators, each with one request of its own id (at most [`OpsBounds::OPERATORS_MAX`]).
    pub operators: u8,
    /// Daemon crashes at most, each either a killed process (its volatile records kept in the
    /// page cache) or a power loss (its volatile records dropped).
    pub daemon_crashes: u8,
    /// Crashes of each operator at most, each before it answers and followed by a retry.
    pub operator_crashes: u8,
    /// Session ends at most: the holder removes the session (request file, then mirror) and a
    /// new session of the same name begins with a new life.
    pub session_ends: u8,
    /// Operators that reuse their id: each of the first `id_reuses` operators, once its command
    /// answered or crashed, may run a second command under the same id with another change.
    pub id_reuses: u8,
}

impl OpsBounds {
    /// Operators at most: request ids are one byte, and more than a few is far past what an
    /// exhaustive check can cover.
    pub const OPERATORS_MAX: u8 = 8;

    /// One line of text naming the bounds, for the check table.
    pub fn summary(&self) -> String {
        format!(
            "operators={} daemon_crashes={} operator_crashes={} session_ends={} id_reuses={}",
            self.operators,
            self.daemon_crashes,
            self.operator_crashes,
            self.session_ends,
            self.id_reuses
        )
    }
}

impl Default for OpsBounds {
    /// The default bounds of `parkline check`: two operators (two requests in one file, one
    /// submitted while the daemon reads the other), two daemon crashes (a killed process and a
    /// power loss on one path), one crash of each operator, one session end (a command's look
    /// before it and its submit after) and one second command under an id (of another change).
    /// The `sometimes` properties show the interesting paths are reached.
    fn default() -> Self {
        OpsBounds {
            operators: 2,
            daemon_crashes: 2,
            operator_crashes: 1,
            session_ends: 1,
            id_reuses: 1,
        }
    }
}

/// Unique states of [`OpsModel::default`](super::OpsModel::default) (a regression alarm: a
/// change to the model or its bounds that changes the reachable state space must update this
/// number on purpose; a cut search would report fewer).
pub const OPS_UNIQUE_STATES: usize = 189_999;

impl OpsBounds {
    /// The ops model of the `deep` bound set of `parkline check`: a third operator (three
    /// requests in one file) and the rest as the default bounds.
    pub fn deep() -> Self {
        OpsBounds {
            operators: 3,
            ..OpsBounds::default()
        }
    }
}

/// Unique states of the ops model at [`OpsBounds::deep`] (regression alarm).
pub const OPS_DEEP_UNIQUE_STATES: usize = 25_736_287;
