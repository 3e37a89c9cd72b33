//! What a caller asks of one `agent_read`: the [`Selector`] (which completed turns), the one
//! overall budget and the request history to attach, together a [`ReadRequest`].

use std::fmt;

use super::cursor::Cursor;
use super::ids::TurnId;

/// Which completed turns a read asks for.
///
/// # Example
///
/// ```
/// use parkline::read::{Selector, TurnId};
/// assert_eq!(Selector::Latest { n: 1 }.to_string(), "n:1");
/// let exact = Selector::Turn { id: TurnId::new("t3")?, offset: 2000 };
/// assert_eq!(exact.to_string(), "turn:t3 offset 2000");
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Selector {
    /// `n:<k>`: the latest `n` completed turns, plus the partial turn. The "latest, may repeat"
    /// read: it returns the same turns again until newer ones complete (R11).
    Latest {
        /// How many of the latest completed turns.
        n: usize,
    },
    /// `since:<cursor>`: only the completed turns after the cursor, plus the partial turn
    /// (R4). The read for following a child without repeats.
    Since(Cursor),
    /// `since:turn:<id>`: the same read as `since` with the cursor just after turn `id`
    /// (`Transcript::cursor_after`): how a caller that holds
    /// turns up to a known one resumes following without a cursor (a lost or refused one, R16).
    SinceTurn(TurnId),
    /// `turn:<id>` from a character offset: one exact turn, or its rest. Exact location; it does
    /// not by itself avoid repeats (R12).
    Turn {
        /// The turn.
        id: TurnId,
        /// Where to start, in characters (Unicode scalar values) of the turn's text.
        offset: usize,
    },
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Latest { n } => write!(f, "n:{n}"),
            Selector::Since(cursor) => write!(f, "since:{cursor}"),
            Selector::SinceTurn(id) => write!(f, "since:turn:{id}"),
            Selector::Turn { id, offset } => write!(f, "turn:{id} offset {offset}"),
        }
    }
}

/// Which requests a read attaches (R13).
///
/// # Example
///
/// ```
/// use parkline::read::RequestHistory;
/// assert_eq!(RequestHistory::default(), RequestHistory::Open);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestHistory {
    /// Only the open requests (the default).
    #[default]
    Open,
    /// The open requests, then the terminated ones (history on demand).
    All,
    /// No requests.
    None,
}

/// One `agent_read` call: the selector, the one overall budget, and the request history to
/// attach.
///
/// # Example
///
/// ```
/// use parkline::read::{ReadRequest, RequestHistory, Selector};
/// let request = ReadRequest::new(Selector::Latest { n: 1 }, 4000);
/// assert_eq!(request.requests, RequestHistory::Open);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ReadRequest {
    /// Which completed turns.
    pub selector: Selector,
    /// The most characters (Unicode scalar values) of the whole response text: framing, turns,
    /// partial turn and requests together (R1).
    pub chars_max: usize,
    /// Which requests to attach.
    pub requests: RequestHistory,
}

impl ReadRequest {
    /// A read of `selector` within `chars_max`, attaching the open requests.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ReadRequest, Selector};
    /// assert_eq!(ReadRequest::new(Selector::Latest { n: 2 }, 500).chars_max, 500);
    /// ```
    pub fn new(selector: Selector, chars_max: usize) -> Self {
        ReadRequest {
            selector,
            chars_max,
            //= spec/read.md#r13-request-history-on-demand
            //# By default a read MUST attach only the open requests.
            requests: RequestHistory::Open,
        }
    }

    /// The same read, attaching `requests`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ReadRequest, RequestHistory, Selector};
    /// let request = ReadRequest::new(Selector::Latest { n: 1 }, 500).with_requests(RequestHistory::All);
    /// assert_eq!(request.requests, RequestHistory::All);
    /// ```
    #[must_use]
    pub fn with_requests(mut self, requests: RequestHistory) -> Self {
        self.requests = requests;
        self
    }

    /// The same read within `chars_max`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ReadRequest, Selector};
    /// assert_eq!(ReadRequest::new(Selector::Latest { n: 1 }, 500).with_chars_max(90).chars_max, 90);
    /// ```
    #[must_use]
    pub fn with_chars_max(mut self, chars_max: usize) -> Self {
        self.chars_max = chars_max;
        self
    }
}
