//! The vocabulary of a read, as the reference states it: a child's [`RefTranscript`] (turns,
//! partial turn, requests), one [`RefReadRequest`] (selector, budget, history), the
//! [`RefWindow`] that answers it and the [`RefReadError`] that refuses it. Plain data; the
//! reference's `read` (`reference.rs`) and the model (`model.rs`) work on it.

use super::cursor::RefSeen;

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

/// A child's transcript: completed turns in seq order, the partial turn, the requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefTranscript {
    /// The child id.
    pub child: String,
    /// Completed turns, in seq order.
    pub turns: Vec<RefTurn>,
    /// The partial turn.
    pub partial: Option<String>,
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
    pub chars_max: usize,
    /// The request history attached.
    pub history: RefHistory,
}

/// What a window holds of the partial turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefPartial {
    /// No partial turn (or a `turn:` read).
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
    /// The partial turn.
    pub partial: RefPartial,
    /// Requests attached.
    pub requests_shown: usize,
    /// Requests asked for that did not fit.
    pub requests_omitted: usize,
    /// The seq of the next cursor (`None` for a `turn:` read).
    pub next: Option<u64>,
    /// What the next cursor records of the partial turn (R15).
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
    /// The cursor follows a turn the transcript no longer has at its seq (section 5.2).
    CursorDiverged,
    /// No turn has the id.
    UnknownTurn,
    /// The offset is past the turn's end.
    OffsetOutOfRange,
    /// Not even the framing fits; the smallest budget at which the read succeeds.
    CharsMaxTooSmall {
        /// The smallest working `chars_max`.
        needed: usize,
    },
}
