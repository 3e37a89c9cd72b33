//! Budgeted reads of a child session's transcript: the `agent_read` side of parkline
//! (`spec/read.md`, requirements R1..R14).
//!
//! The daemon keeps one [`Transcript`] per child: its completed turns (id, seq, text), at most
//! one in-flight partial turn, and its requests (open or terminated, each with a short record).
//! [`Transcript::read`] answers a [`ReadRequest`] with a [`Window`]: the exact response text, what
//! it holds, what did not fit, and the next [`Cursor`].
//!
//! Three selectors, three meanings:
//!
//! - [`Selector::Since`] (`since:<cursor>`) is the read for following a child: it returns only
//!   the completed turns after the cursor, plus the in-flight part, and a next cursor. Following
//!   the cursors never skips a completed turn and never returns one twice (R4, R5).
//! - [`Selector::Latest`] (`n:<k>`) is the "latest, may repeat" read: the latest `k` completed
//!   turns, whether or not the caller has them already (R11). Peeking with `n:1` at a working
//!   child re-sends the same finished turn each time; that is Defect 2 of the seed.
//! - [`Selector::Turn`] (`turn:<id>` with an offset) is exact location: it reads one turn, or the
//!   rest of it from an offset, and does not by itself avoid repeats (R12).
//!
//! Reads take `&self`: they have no side effects and the daemon keeps no "collected" state (R9).
//!
//! # Example
//!
//! ```
//! use parkline::read::{ChildId, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
//!
//! let mut child = Transcript::new(ChildId::new("s980-1")?);
//! child.push_turn(TurnId::new("t1")?, TurnSeq(1), "first answer")?;
//! child.set_in_flight(Some("working on".to_string()));
//!
//! // The first read starts at the beginning of the transcript.
//! let first = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 1000))?;
//! assert_eq!(first.whole.len(), 1);
//!
//! child.push_turn(TurnId::new("t2")?, TurnSeq(2), "second answer")?;
//! child.set_in_flight(None);
//!
//! // Following the cursor returns only what is new: t2, not t1 again.
//! let cursor = first.next.expect("since reads always return a next cursor");
//! let second = child.read(&ReadRequest::new(Selector::Since(cursor), 1000))?;
//! assert_eq!(second.whole.len(), 1);
//! assert_eq!(second.whole[0].id.as_str(), "t2");
//! assert!(second.text.contains("second answer"));
//! assert!(!second.text.contains("first answer"));
//! # Ok::<(), parkline::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::{Error, ErrorKind, RequestId};

mod store;
pub use store::{TurnView, Turns, TurnsIter};

/// The longest child id or turn id, in characters.
pub const ID_CHARS_MAX: usize = 128;

/// The most characters of a caller's input (a cursor text, an id) that an error message echoes:
/// enough to recognise it, bounded so that a 100,000-char cursor does not make a 100,000-char
/// error that lands in the caller's context.
pub const ECHO_CHARS_MAX: usize = 64;

/// The longest message of a read-side error, in characters: the echo (at most
/// [`ECHO_CHARS_MAX`] characters, each escaped to at most 10), two ids and two cursors of at most
/// 200 characters, and the advice.
pub const ERROR_CHARS_MAX: usize = 1600;

/// `text` quoted for an error message, cut to its first [`ECHO_CHARS_MAX`] characters.
fn echo(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_CHARS_MAX).collect();
    if chars.next().is_none() {
        format!("{head:?}")
    } else {
        format!("{head:?}... ({} chars)", text.chars().count())
    }
}

/// What to do when a cursor is refused: the reads that resume following without repeats.
const RESUME: &str = "resume with since:turn:<id> of the last turn you hold, or with the start \
                      cursor if you hold none; n:1 reads the latest turn and gives a cursor there";

fn valid_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= ID_CHARS_MAX
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The id of a child session (the daemon's session id, for example `s980-1`).
///
/// 1 to [`ID_CHARS_MAX`] characters, each an ASCII letter, digit, `-`, `_` or `.`, so that it can
/// stand in the response text without quoting.
///
/// # Example
///
/// ```
/// use parkline::read::ChildId;
/// assert_eq!(ChildId::new("s980-1")?.as_str(), "s980-1");
/// assert!(ChildId::new("two words").is_err());
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChildId(String);

impl ChildId {
    /// Checks and wraps a child id.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidId`] when `id` is empty, too long or has a character other than an
    /// ASCII letter, digit, `-`, `_` or `.`.
    ///
    /// # Example
    ///
    /// ```
    /// let child = parkline::read::ChildId::new("s978-5")?;
    /// assert_eq!(child.to_string(), "s978-5");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, Error> {
        let id = id.into();
        if valid_id(&id) {
            Ok(ChildId(id))
        } else {
            Err(Error::new(
                ErrorKind::InvalidId,
                format!("child id {}", echo(&id)),
            ))
        }
    }

    /// The id as text.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::read::ChildId::new("c")?.as_str(), "c");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of a completed turn (the daemon's turn id, for example `sj-18d3164fbb9ba765-7`); the
/// `<id>` of a `turn:<id>` read.
///
/// Same character rules as [`ChildId`].
///
/// # Example
///
/// ```
/// use parkline::read::TurnId;
/// assert_eq!(TurnId::new("sj-18d3164fbb9ba765-7")?.as_str(), "sj-18d3164fbb9ba765-7");
/// assert!(TurnId::new("").is_err());
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnId(String);

impl TurnId {
    /// Checks and wraps a turn id.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidId`] when `id` breaks the rules of [`ChildId::new`].
    ///
    /// # Example
    ///
    /// ```
    /// let turn = parkline::read::TurnId::new("t7")?;
    /// assert_eq!(turn.to_string(), "t7");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, Error> {
        let id = id.into();
        if valid_id(&id) {
            Ok(TurnId(id))
        } else {
            Err(Error::new(
                ErrorKind::InvalidId,
                format!("turn id {}", echo(&id)),
            ))
        }
    }

    /// The id as text.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(parkline::read::TurnId::new("t1")?.as_str(), "t1");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The sequence number of a completed turn in its child's transcript: strictly increasing, at
/// least 1. (Not the [`Seq`](crate::Seq) of a parked line.)
///
/// # Example
///
/// ```
/// assert!(parkline::read::TurnSeq(1) < parkline::read::TurnSeq(2));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnSeq(pub u64);

impl fmt::Display for TurnSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// One completed turn of a child, owned. The transcript stores its turns compactly and hands out
/// [`TurnView`]s; [`TurnView::to_turn`] makes one of these.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Transcript, Turn, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "done")?;
/// let turn: Turn = child.turns().get(0).expect("one turn").to_turn();
/// assert_eq!(turn.text, "done");
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The turn's id.
    pub id: TurnId,
    /// The turn's sequence number.
    pub seq: TurnSeq,
    /// The turn's text, verbatim.
    pub text: String,
}

/// A turn named in a [`Window`]: its id and sequence number.
///
/// # Example
///
/// ```
/// use parkline::read::{TurnId, TurnRef, TurnSeq};
/// let turn = TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) };
/// assert_eq!(turn.seq, TurnSeq(1));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TurnRef {
    /// The turn's id.
    pub id: TurnId,
    /// The turn's sequence number.
    pub seq: TurnSeq,
}

/// Where a caller is in a child's transcript: the child, the sequence number of the last
/// completed turn it has been given, and how much of the in-flight part it has seen.
///
/// Opaque to the caller (R7): it is handed back as text, `v2.<seq hex>.<seen>.<check>.<child id>`
/// (`spec/read.md` section 5), and parsed back with [`Cursor::parse`] (or `str::parse`). The
/// child id itself is in the text, so a cursor of another child is told from this child's for
/// every pair of ids, not only with high probability; the check is a CRC-32 over everything
/// else, so a damaged cursor is told from another child's. It carries no daemon-side state and
/// names positions by turn seq, so a cursor stays valid across a restart that rebuilds the
/// transcript from the same turns, and can be kept by the daemon (text, or serde as a string).
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Cursor};
/// let child = ChildId::new("s980-1")?;
/// let start = Cursor::start(&child);
/// let text = start.to_string();
/// assert_eq!(text.parse::<Cursor>()?, start);
/// assert_eq!(start.child(), &child);
/// assert!(Cursor::parse("v2.0.0.00000000.s980-1").is_err()); // wrong check
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cursor {
    child: ChildId,
    seq: TurnSeq,
    seen: Option<Seen>,
}

/// What a cursor holds of the in-flight part: the caller was given (as far as it knows) its first
/// `chars` characters, whose UTF-8 bytes have CRC-32 `prefix`, while the child's latest turn was
/// `after`. A later in-flight part that starts with the same characters after the same turn has
/// only grown; any other has been replaced (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Seen {
    after: TurnSeq,
    chars: usize,
    prefix: u32,
}

const CURSOR_VERSION: &str = "v2";

fn cursor_check(seq: TurnSeq, seen: &str, child: &ChildId) -> u32 {
    crc32fast::hash(
        format!(
            "parkline-cursor-{CURSOR_VERSION} {:x} {seen} {child}",
            seq.0
        )
        .as_bytes(),
    )
}

/// The retired v1 form, `v1.<seq hex>.<crc32 of the child id>.<check>`: still recognised so that
/// a caller holding one is told what to do instead of being told it is damaged.
fn is_v1_cursor(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    let [version, seq, tag, check] = parts[..] else {
        return false;
    };
    let (Ok(seq), Ok(tag), Ok(check)) = (
        u64::from_str_radix(seq, 16),
        u32::from_str_radix(tag, 16),
        u32::from_str_radix(check, 16),
    ) else {
        return false;
    };
    let expected = crc32fast::hash(format!("parkline-cursor-v1 {seq:x} {tag:08x}").as_bytes());
    version == "v1" && check == expected && text == format!("v1.{seq:x}.{tag:08x}.{check:08x}")
}

impl Seen {
    fn encode(seen: Option<Seen>) -> String {
        match seen {
            None => "0".to_string(),
            Some(Seen {
                after,
                chars,
                prefix,
            }) => format!("{chars:x}-{:x}-{prefix:08x}", after.0),
        }
    }

    fn parse(text: &str) -> Option<Option<Seen>> {
        if text == "0" {
            return Some(None);
        }
        let mut parts = text.split('-');
        let (Some(chars), Some(after), Some(prefix), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        Some(Some(Seen {
            chars: usize::from_str_radix(chars, 16).ok()?,
            after: TurnSeq(u64::from_str_radix(after, 16).ok()?),
            prefix: u32::from_str_radix(prefix, 16).ok()?,
        }))
    }
}

impl Cursor {
    fn at(child: &ChildId, seq: TurnSeq) -> Self {
        Cursor {
            child: child.clone(),
            seq,
            seen: None,
        }
    }

    /// The cursor before the first turn of `child`: a `since` read with it returns the
    /// transcript from its beginning.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, TurnSeq};
    /// let start = Cursor::start(&ChildId::new("c")?);
    /// assert_eq!(start.seq(), TurnSeq(0));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn start(child: &ChildId) -> Self {
        Cursor::at(child, TurnSeq(0))
    }

    /// Parses a cursor handed back by a caller.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CursorDamaged`] when `text` is not exactly the text of a cursor (any
    /// changed, added or removed character; the check catches every single-character change).
    /// [`ErrorKind::CursorRetired`] for a cursor of the retired v1 form. A cursor of another
    /// child parses; [`Transcript::read`] rejects it.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Cursor};
    /// let text = Cursor::start(&ChildId::new("c")?).to_string();
    /// let damaged = text.replacen("v2.0", "v2.1", 1);
    /// assert_eq!(Cursor::parse(&damaged).unwrap_err().kind(), ErrorKind::CursorDamaged);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, Error> {
        let damaged = || {
            Error::new(
                ErrorKind::CursorDamaged,
                format!(
                    "cursor {} is not a cursor; pass the next cursor of a read back unchanged, or \
                     {RESUME}",
                    echo(text)
                ),
            )
        };
        if is_v1_cursor(text) {
            return Err(Error::new(
                ErrorKind::CursorRetired,
                format!(
                    "cursor {} has the retired v1 form, whose child tag can collide; {RESUME}",
                    echo(text)
                ),
            ));
        }
        // The child id comes last: it may itself contain `.`.
        let mut parts = text.splitn(5, '.');
        let (Some(version), Some(seq), Some(seen), Some(_check), Some(child)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(damaged());
        };
        if version != CURSOR_VERSION {
            return Err(damaged());
        }
        let seq = u64::from_str_radix(seq, 16).map_err(|_| damaged())?;
        let seen = Seen::parse(seen).ok_or_else(damaged)?;
        let child = ChildId::new(child).map_err(|_| damaged())?;
        let cursor = Cursor {
            child,
            seq: TurnSeq(seq),
            seen,
        };
        // Only the canonical spelling with the right check is a cursor: this rejects a changed
        // check, `+`, upper case and padding in one comparison.
        if cursor.encode() != text {
            return Err(damaged());
        }
        Ok(cursor)
    }

    /// The cursor as text, the form handed to the caller. Same as `to_string()`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor};
    /// let start = Cursor::start(&ChildId::new("c")?);
    /// assert!(start.encode().starts_with("v2.0.0."));
    /// assert!(start.encode().ends_with(".c"));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn encode(&self) -> String {
        let seen = Seen::encode(self.seen);
        format!(
            "{CURSOR_VERSION}.{:x}.{seen}.{:08x}.{}",
            self.seq.0,
            cursor_check(self.seq, &seen, &self.child),
            self.child
        )
    }

    /// The cursor of `child` just after the turn of seq `seq`: a `since` read with it returns
    /// the turns with a greater seq. For a daemon that knows which turn the caller holds last
    /// (see also [`Transcript::cursor_after`] and [`Selector::SinceTurn`]).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "one")?;
    /// child.push_turn(TurnId::new("t2")?, TurnSeq(2), "two")?;
    /// let after = Cursor::after(child.child(), TurnSeq(1));
    /// let window = child.read(&ReadRequest::new(Selector::Since(after), 1000))?;
    /// assert_eq!(window.whole.len(), 1);
    /// assert_eq!(window.whole[0].id.as_str(), "t2");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn after(child: &ChildId, seq: TurnSeq) -> Self {
        Cursor::at(child, seq)
    }

    /// The sequence number of the last turn this cursor has passed (0: none). For the daemon's
    /// logs and tests; callers treat the cursor as opaque.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, TurnSeq};
    /// assert_eq!(Cursor::start(&ChildId::new("c")?).seq(), TurnSeq(0));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn seq(&self) -> TurnSeq {
        self.seq
    }

    /// How many characters of the in-flight part this cursor records as given (R15), if any.
    /// For the daemon's logs and tests; callers treat the cursor as opaque.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.start_cursor().in_flight_seen(), None);
    /// child.set_in_flight(Some("half".to_string()));
    /// let window = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 500))?;
    /// assert_eq!(window.next.and_then(|c| c.in_flight_seen()), Some(4));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn in_flight_seen(&self) -> Option<usize> {
        self.seen.map(|seen| seen.chars)
    }

    /// The child this cursor is a position of.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor};
    /// let child = ChildId::new("s61947-8")?;
    /// assert_eq!(Cursor::start(&child).child(), &child);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn child(&self) -> &ChildId {
        &self.child
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl FromStr for Cursor {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        Cursor::parse(text)
    }
}

/// A cursor serialises as its text, so a daemon can keep it on the parent's behalf (in its own
/// state file, across restarts) in the form the caller would hand back.
impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Cursor::parse(&text).map_err(serde::de::Error::custom)
    }
}

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
pub enum Selector {
    /// `n:<k>`: the latest `n` completed turns, plus the in-flight part. The "latest, may repeat"
    /// read: it returns the same turns again until newer ones complete (R11).
    Latest {
        /// How many of the latest completed turns.
        n: usize,
    },
    /// `since:<cursor>`: only the completed turns after the cursor, plus the in-flight part
    /// (R4). The read for following a child without repeats.
    Since(Cursor),
    /// `since:turn:<id>`: the same read as `since` with the cursor just after turn `id`
    /// ([`Transcript::cursor_after`]): how a caller that holds turns up to a known one resumes
    /// following without a cursor (a lost or refused one, R16).
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
pub struct ReadRequest {
    /// Which completed turns.
    pub selector: Selector,
    /// The most characters (Unicode scalar values) of the whole response text: framing, turns,
    /// in-flight part and requests together (R1).
    pub max_chars: usize,
    /// Which requests to attach.
    pub requests: RequestHistory,
}

impl ReadRequest {
    /// A read of `selector` within `max_chars`, attaching the open requests.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ReadRequest, Selector};
    /// assert_eq!(ReadRequest::new(Selector::Latest { n: 2 }, 500).max_chars, 500);
    /// ```
    pub fn new(selector: Selector, max_chars: usize) -> Self {
        ReadRequest {
            selector,
            max_chars,
            requests: RequestHistory::Open,
        }
    }
}

/// Part of one turn in a [`Window`]: characters `from..to` of `total`.
///
/// # Example
///
/// ```
/// use parkline::read::{Excerpt, Selector, TurnId, TurnRef, TurnSeq};
/// let excerpt = Excerpt {
///     turn: TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) },
///     from: 0,
///     to: 100,
///     total: 250,
/// };
/// assert_eq!(excerpt.rest(), Some(Selector::Turn { id: TurnId::new("t1")?, offset: 100 }));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Excerpt {
    /// The turn.
    pub turn: TurnRef,
    /// The first character shown.
    pub from: usize,
    /// One past the last character shown.
    pub to: usize,
    /// The characters of the whole turn.
    pub total: usize,
}

impl Excerpt {
    /// The read that continues this excerpt, when the turn goes on after it.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{Excerpt, TurnId, TurnRef, TurnSeq};
    /// let turn = TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) };
    /// let last_part = Excerpt { turn, from: 200, to: 250, total: 250 };
    /// assert_eq!(last_part.rest(), None);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn rest(&self) -> Option<Selector> {
        (self.to < self.total).then(|| Selector::Turn {
            id: self.turn.id.clone(),
            offset: self.to,
        })
    }
}

/// The selected turns that did not fit (R3): how many, and the first and last of them in seq
/// order (they are always consecutive among the selected turns).
///
/// # Example
///
/// ```
/// let none = parkline::read::Omitted::default();
/// assert_eq!(none.count, 0);
/// assert!(none.first.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Omitted {
    /// How many selected turns are not in the window.
    pub count: usize,
    /// The earliest of them.
    pub first: Option<TurnRef>,
    /// The latest of them.
    pub last: Option<TurnRef>,
}

/// What a [`Window`] holds of the in-flight part.
///
/// # Example
///
/// ```
/// use parkline::read::InFlight;
/// let cut = InFlight::Cut { shown: 10, total: 400 };
/// assert_ne!(cut, InFlight::Whole { chars: 400 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InFlight {
    /// No in-flight part: the child is not working, or the read was a `turn:` read.
    Absent,
    /// The whole in-flight part.
    Whole {
        /// Its characters.
        chars: usize,
    },
    /// The newest `shown` of `total` characters of the in-flight part (R10).
    Cut {
        /// Characters shown (the last ones).
        shown: usize,
        /// Characters of the in-flight part.
        total: usize,
    },
    /// The child has an in-flight part but not even its marker fitted.
    Omitted {
        /// Characters of the in-flight part.
        total: usize,
    },
    /// Characters `from..total` of an in-flight part that only grew since the cursor's caller
    /// was given its first `seen` characters (R15). `from == seen` when all the new characters
    /// fit; `from > seen` when only the newest did.
    New {
        /// The first character shown.
        from: usize,
        /// The characters the cursor says the caller was given before.
        seen: usize,
        /// Characters of the in-flight part.
        total: usize,
    },
    /// The in-flight part was replaced (not grown) since the cursor's read: its newest `shown` of
    /// `total` characters, all of them when `shown == total`, marked replaced (R15).
    Replaced {
        /// Characters shown (the last ones).
        shown: usize,
        /// Characters of the in-flight part.
        total: usize,
    },
}

/// The answer to one read: the response text and what it holds.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, InFlight, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "hello")?;
/// let window = child.read(&ReadRequest::new(Selector::Latest { n: 1 }, 500))?;
/// assert_eq!(window.in_flight, InFlight::Absent);
/// assert_eq!(window.chars, window.text.chars().count());
/// assert!(window.chars <= 500);
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The response text, exactly as specified in `spec/read.md` (R14).
    pub text: String,
    /// The turns returned whole, in seq order.
    pub whole: Vec<TurnRef>,
    /// The turn returned as a marked excerpt, if any (R8).
    pub excerpt: Option<Excerpt>,
    /// The selected turns that did not fit (R3).
    pub omitted: Omitted,
    /// What the window holds of the in-flight part.
    pub in_flight: InFlight,
    /// Requests attached.
    pub requests_shown: usize,
    /// Requests asked for that did not fit.
    pub requests_omitted: usize,
    /// The cursor to continue with (`None` for a `turn:` read, which is not a progress read).
    pub next: Option<Cursor>,
    /// Characters of `text`: the budget used, never more than `max_chars` (R1).
    pub chars: usize,
}

/// Whether a request is still open.
///
/// # Example
///
/// ```
/// assert_eq!(parkline::read::RequestState::Open.to_string(), "open");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestState {
    /// Still running.
    Open,
    /// Finished; its record is history, attached only with [`RequestHistory::All`].
    Terminated,
}

impl fmt::Display for RequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RequestState::Open => "open",
            RequestState::Terminated => "terminated",
        })
    }
}

/// Deliberately broken read behaviours (cargo feature `known-bad` only), each violating one
/// requirement, so tests can show the differential check catches it.
///
/// # Example
///
/// ```
/// # #[cfg(feature = "known-bad")] {
/// use parkline::read::{ChildId, ReadKnownBad, Transcript};
/// let mut child = Transcript::new(ChildId::new("c").unwrap());
/// child.set_known_bad(Some(ReadKnownBad::TurnsOnlyBudget));
/// # }
/// ```
#[cfg(feature = "known-bad")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadKnownBad {
    /// A turn larger than the budget is cut silently, presented as whole, with no `turn:<id>`
    /// reference, and the cursor moves past it (violates R5, R8).
    ExcerptWithoutReference,
    /// A `since` read's next cursor is the last selected turn, set before the answer is built,
    /// so turns that did not fit are skipped (violates R5, R6).
    AdvanceBeforeBuild,
    /// `max_chars` bounds the turns' text only, as before parkline (violates R1).
    TurnsOnlyBudget,
}

/// A child's transcript as the daemon knows it, indexed for reads.
///
/// Turns are kept in seq order with their character counts and an id index, so a read costs
/// time in proportion to what it returns, not to the child's history (R2).
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, RequestHistory, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
/// use parkline::RequestId;
///
/// let mut child = Transcript::new(ChildId::new("s972-1")?);
/// child.open_request(RequestId(1), "review the split")?;
/// child.open_request(RequestId(2), "measure fsync")?;
/// child.terminate_request(RequestId(1), "review the split: done")?;
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "split reviewed")?;
///
/// let default = child.read(&ReadRequest::new(Selector::Latest { n: 1 }, 1000))?;
/// assert!(default.text.contains("[request 2 open] measure fsync"));
/// assert!(!default.text.contains("request 1"));
///
/// let mut all = ReadRequest::new(Selector::Latest { n: 1 }, 1000);
/// all.requests = RequestHistory::All;
/// let history = child.read(&all)?;
/// assert!(history.text.contains("[request 1 terminated] review the split: done"));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transcript {
    child: ChildId,
    turns: Turns,
    in_flight: Option<(String, usize)>,
    open: BTreeMap<RequestId, String>,
    terminated: BTreeMap<RequestId, String>,
    #[cfg(feature = "known-bad")]
    known_bad: Option<ReadKnownBad>,
}

impl Transcript {
    /// An empty transcript of `child`: no turns, nothing in flight, no requests.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert!(child.turns().is_empty());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn new(child: ChildId) -> Self {
        Transcript {
            child,
            turns: Turns::default(),
            in_flight: None,
            open: BTreeMap::new(),
            terminated: BTreeMap::new(),
            #[cfg(feature = "known-bad")]
            known_bad: None,
        }
    }

    /// Selects a deliberately broken behaviour (feature `known-bad`; tests only).
    ///
    /// # Example
    ///
    /// ```
    /// # #[cfg(feature = "known-bad")] {
    /// use parkline::read::{ChildId, ReadKnownBad, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c").unwrap());
    /// child.set_known_bad(Some(ReadKnownBad::AdvanceBeforeBuild));
    /// # }
    /// ```
    #[cfg(feature = "known-bad")]
    pub fn set_known_bad(&mut self, bad: Option<ReadKnownBad>) {
        self.known_bad = bad;
    }

    fn is_bad(&self, _bad: KnownBadRead) -> bool {
        #[cfg(feature = "known-bad")]
        {
            self.known_bad == Some(_bad)
        }
        #[cfg(not(feature = "known-bad"))]
        {
            false
        }
    }

    /// The child this transcript belongs to.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.child().as_str(), "c");
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn child(&self) -> &ChildId {
        &self.child
    }

    /// The completed turns, in seq order.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a")?;
    /// assert_eq!(child.turns().len(), 1);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn turns(&self) -> &Turns {
        &self.turns
    }

    /// The in-flight partial turn, if the child is working.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.set_in_flight(Some("half".to_string()));
    /// assert_eq!(child.in_flight(), Some("half"));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn in_flight(&self) -> Option<&str> {
        self.in_flight.as_ref().map(|(text, _)| text.as_str())
    }

    /// The cursor before this child's first turn.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// assert_eq!(child.start_cursor(), Cursor::start(child.child()));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn start_cursor(&self) -> Cursor {
        Cursor::start(&self.child)
    }

    /// `CursorAhead`: the transcript ends before the cursor, either rebuilt shorter after a
    /// restart or never this long. The way on is the cursor at the transcript's last turn: what
    /// follows it now has not been given under this transcript (section 5.2 of the spec).
    fn ahead(&self, cursor: &Cursor) -> Error {
        let last = match self.turns.last() {
            Some(turn) => format!("turn {} seq {}", turn.id, turn.seq),
            None => "no turn".to_string(),
        };
        Error::new(
            ErrorKind::CursorAhead,
            format!(
                "cursor at seq {} is past the end of child {} ({last}): the transcript was rebuilt \
                 shorter or the cursor is not from it; resume with since:{}",
                cursor.seq,
                self.child,
                Cursor::at(&self.child, self.latest_seq())
            ),
        )
    }

    /// The cursor just after turn `id`: what `since:turn:<id>` reads from.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownTurn`] when no turn has the id.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t7")?, TurnSeq(7), "seven")?;
    /// assert_eq!(child.cursor_after(&TurnId::new("t7")?)?.seq(), TurnSeq(7));
    /// assert!(child.cursor_after(&TurnId::new("t8")?).is_err());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn cursor_after(&self, id: &TurnId) -> Result<Cursor, Error> {
        match self.candidates(&Selector::SinceTurn(id.clone()))? {
            (Candidates::Forward { since, .. }, _) => Ok(Cursor::at(&self.child, since)),
            _ => Err(Error::new(
                ErrorKind::UnknownTurn,
                format!("child {} has no turn {id}", self.child),
            )),
        }
    }

    fn latest_seq(&self) -> TurnSeq {
        self.turns.last().map_or(TurnSeq(0), |turn| turn.seq)
    }

    /// Appends a completed turn.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::SeqNotIncreasing`] when `seq` is 0 or not above the latest turn's seq;
    /// [`ErrorKind::DuplicateTurn`] when a turn with this id exists. Nothing changes then.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t2")?, TurnSeq(2), "b")?;
    /// let late = child.push_turn(TurnId::new("t1")?, TurnSeq(1), "a").unwrap_err();
    /// assert_eq!(late.kind(), ErrorKind::SeqNotIncreasing);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn push_turn(
        &mut self,
        id: TurnId,
        seq: TurnSeq,
        text: impl Into<String>,
    ) -> Result<(), Error> {
        if seq.0 == 0 || seq <= self.latest_seq() {
            return Err(Error::new(
                ErrorKind::SeqNotIncreasing,
                format!("turn {id} seq {seq} after seq {}", self.latest_seq()),
            ));
        }
        if self.turns.position(id.as_str()).is_some() {
            return Err(Error::new(ErrorKind::DuplicateTurn, format!("turn {id}")));
        }
        if self.turns.is_full() {
            return Err(Error::new(
                ErrorKind::TranscriptFull,
                format!("turn {id}: the transcript holds {} turns", self.turns.len()),
            ));
        }
        self.turns.push(id.as_str(), seq, &text.into());
        Ok(())
    }

    /// Replaces the in-flight partial turn (`None`: the child is not working).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.set_in_flight(Some("step 1".to_string()));
    /// child.set_in_flight(None);
    /// assert_eq!(child.in_flight(), None);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn set_in_flight(&mut self, partial: Option<String>) {
        self.in_flight = partial.map(|text| {
            let chars = text.chars().count();
            (text, chars)
        });
    }

    /// Records a new open request with its short record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::DuplicateRequest`] when the request is already known (open or
    /// terminated).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.open_request(parkline::RequestId(1), "build the model")?;
    /// assert!(child.open_request(parkline::RequestId(1), "again").is_err());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn open_request(
        &mut self,
        request: RequestId,
        record: impl Into<String>,
    ) -> Result<(), Error> {
        if self.open.contains_key(&request) || self.terminated.contains_key(&request) {
            return Err(Error::new(
                ErrorKind::DuplicateRequest,
                format!("request {request}"),
            ));
        }
        self.open.insert(request, record.into());
        Ok(())
    }

    /// Moves an open request to the terminated ones, with its final record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownRequest`] when the request is not open.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::ErrorKind;
    /// use parkline::read::{ChildId, Transcript};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// let err = child.terminate_request(parkline::RequestId(9), "done").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::UnknownRequest);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn terminate_request(
        &mut self,
        request: RequestId,
        record: impl Into<String>,
    ) -> Result<(), Error> {
        if self.open.remove(&request).is_none() {
            return Err(Error::new(
                ErrorKind::UnknownRequest,
                format!("request {request} is not open"),
            ));
        }
        self.terminated.insert(request, record.into());
        Ok(())
    }

    /// Answers one read. No side effects: the same read of the same transcript gives the same
    /// window (R9).
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::CursorOtherChild`]: the cursor belongs to another child (R7).
    /// - [`ErrorKind::CursorAhead`]: the cursor is past this child's latest turn (R7).
    /// - [`ErrorKind::UnknownTurn`]: no turn has the `turn:` id.
    /// - [`ErrorKind::OffsetOutOfRange`]: the `turn:` offset is past the turn's end.
    /// - [`ErrorKind::BudgetTooSmall`]: not even the framing (and, when a turn is selected,
    ///   a marker of its excerpt) fits in `max_chars`; [`Error::needed_chars`] says how much
    ///   would.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
    /// let mut child = Transcript::new(ChildId::new("c")?);
    /// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "x".repeat(5000))?;
    /// // A turn larger than the whole budget comes back as a marked excerpt ...
    /// let window = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 300))?;
    /// let excerpt = window.excerpt.clone().expect("the turn is too large for 300 chars");
    /// assert!(window.text.contains("rest at turn:t1 offset"));
    /// assert!(window.chars <= 300);
    /// // ... and the cursor moves past it, so following the cursor does not loop (R8).
    /// assert_eq!(window.next.map(|cursor| cursor.seq()), Some(TurnSeq(1)));
    /// // The rest is read by exact location.
    /// let rest = child.read(&ReadRequest::new(excerpt.rest().expect("more to read"), 300))?;
    /// assert_eq!(rest.excerpt.map(|part| part.from), Some(excerpt.to));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn read(&self, request: &ReadRequest) -> Result<Window, Error> {
        let (candidates, first_from) = self.candidates(&request.selector)?;
        let header = format!("[parkline read {} {}]\n", self.child, request.selector);
        let (view, kept, seen_now) = self.in_flight_view(&request.selector);
        let mut plan = Plan {
            transcript: self,
            request,
            candidates,
            header_chars: header.chars().count(),
            progress: Progress::default(),
            view,
            kept,
            seen_now,
        };
        if !plan.fits(&plan.progress) {
            return Err(plan.too_small());
        }
        plan.allocate_turns(first_from)?;
        if !matches!(request.selector, Selector::Turn { .. }) {
            plan.allocate_in_flight();
        }
        plan.allocate_requests();
        Ok(plan.render(header))
    }

    /// How a read sees the in-flight part (R15): against what the cursor says its caller was
    /// given, whether the part only grew, was replaced, or is new to the caller; the cursor's
    /// record when it still holds; and the record of the whole part as it is now. Checksumming
    /// costs time in proportion to the in-flight part, never to the history (R2).
    fn in_flight_view(&self, selector: &Selector) -> (View, Option<Seen>, Option<Seen>) {
        let Some((text, total)) = self.in_flight.as_ref() else {
            return (View::Fresh, None, None);
        };
        let latest = self.latest_seq();
        let seen_now = (*total > 0).then(|| Seen {
            after: latest,
            chars: *total,
            prefix: crc32fast::hash(text.as_bytes()),
        });
        let Selector::Since(Cursor {
            seen: Some(seen), ..
        }) = selector
        else {
            return (View::Fresh, None, seen_now);
        };
        // A part seen after another turn is a part of an earlier turn: this one is new.
        if seen.after != latest {
            return (View::Fresh, None, seen_now);
        }
        let prefix = (seen.chars <= *total)
            .then(|| crc32fast::hash(char_slice(text, 0, seen.chars).as_bytes()));
        if prefix == Some(seen.prefix) {
            (View::Grown { seen: seen.chars }, Some(*seen), seen_now)
        } else {
            (View::Replaced, None, seen_now)
        }
    }

    fn candidates(&self, selector: &Selector) -> Result<(Candidates, usize), Error> {
        match selector {
            Selector::Latest { n } => {
                let end = self.turns.len();
                let start = end - (*n).min(end);
                Ok((Candidates::Backward { start, end }, 0))
            }
            Selector::Since(cursor) => {
                // R7: the cursor names its child, so this holds for every pair of ids.
                if cursor.child != self.child {
                    return Err(Error::new(
                        ErrorKind::CursorOtherChild,
                        format!(
                            "cursor of child {} read on child {}; read child {} with it, and \
                             for child {} {RESUME} (since:{})",
                            cursor.child,
                            self.child,
                            cursor.child,
                            self.child,
                            self.start_cursor()
                        ),
                    ));
                }
                if cursor.seq > self.latest_seq() {
                    return Err(self.ahead(cursor));
                }
                // R2: binary search; the cost does not grow with the history before the cursor.
                // R4: exactly the turns after the cursor.
                let start = self.turns.partition_point(|turn| turn.seq <= cursor.seq);
                Ok((
                    Candidates::Forward {
                        start,
                        end: self.turns.len(),
                        since: cursor.seq,
                    },
                    0,
                ))
            }
            Selector::SinceTurn(id) => {
                let Some(index) = self.turns.position(id.as_str()) else {
                    return Err(Error::new(
                        ErrorKind::UnknownTurn,
                        format!(
                            "child {} has no turn {id}; resume with since:{} if you hold none \
                             of its turns",
                            self.child,
                            self.start_cursor()
                        ),
                    ));
                };
                Ok((
                    Candidates::Forward {
                        start: index + 1,
                        end: self.turns.len(),
                        since: self.turns.at(index).seq,
                    },
                    0,
                ))
            }
            Selector::Turn { id, offset } => {
                let Some(index) = self.turns.position(id.as_str()) else {
                    return Err(Error::new(
                        ErrorKind::UnknownTurn,
                        format!("child {} has no turn {id}", self.child),
                    ));
                };
                if *offset > self.turns.chars(index) {
                    return Err(Error::new(
                        ErrorKind::OffsetOutOfRange,
                        format!(
                            "offset {offset} is past the end of turn {id} ({} chars)",
                            self.turns.chars(index)
                        ),
                    ));
                }
                Ok((Candidates::Single { index }, *offset))
            }
        }
    }
}

#[cfg(feature = "known-bad")]
type KnownBadRead = ReadKnownBad;

/// Without the feature the switches still exist inside the crate, so the code that checks them
/// compiles the same way; nothing can select them.
#[cfg(not(feature = "known-bad"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KnownBadRead {
    ExcerptWithoutReference,
    AdvanceBeforeBuild,
    TurnsOnlyBudget,
}

/// The selected turns in allocation order, as a range of turn indices (never materialised, so
/// selecting costs nothing).
#[derive(Clone, Copy, Debug)]
enum Candidates {
    /// `since`: oldest first.
    Forward {
        start: usize,
        end: usize,
        since: TurnSeq,
    },
    /// `n:k`: newest first.
    Backward { start: usize, end: usize },
    /// `turn:`: one turn.
    Single { index: usize },
}

impl Candidates {
    fn len(&self) -> usize {
        match *self {
            Candidates::Forward { start, end, .. } | Candidates::Backward { start, end } => {
                end - start
            }
            Candidates::Single { .. } => 1,
        }
    }

    /// The turn index of the `i`-th candidate in allocation order.
    fn get(&self, i: usize) -> usize {
        match *self {
            Candidates::Forward { start, .. } => start + i,
            Candidates::Backward { end, .. } => end - 1 - i,
            Candidates::Single { index } => index,
        }
    }
}

/// How far the allocation has come; the trailer is a function of it.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    /// Candidates allocated, whole or as the excerpt.
    taken: usize,
    /// The excerpt: turn index, from, to.
    excerpt: Option<(usize, usize, usize)>,
    in_flight: Option<InFlight>,
    requests_shown: usize,
    /// Characters of the elements between header and trailer.
    body_chars: usize,
    /// Characters of turn text alone (what the pre-parkline budget counted).
    turn_text_chars: usize,
}

struct Plan<'a> {
    transcript: &'a Transcript,
    request: &'a ReadRequest,
    candidates: Candidates,
    header_chars: usize,
    progress: Progress,
    /// How the in-flight part compares with what the cursor's caller was given (R15).
    view: View,
    /// The cursor's in-flight record, when it still holds (the part only grew).
    kept: Option<Seen>,
    /// The record of the whole in-flight part as it is now.
    seen_now: Option<Seen>,
}

/// The in-flight part against the cursor's record of it (R15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    /// Nothing of it was given under this cursor: sent as before (R10).
    Fresh,
    /// It only grew since its first `seen` characters were given: only the rest is sent.
    Grown { seen: usize },
    /// It was replaced since the cursor's read: sent as before, marked replaced.
    Replaced,
}

fn digits(mut n: usize) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

impl Plan<'_> {
    fn turn(&self, index: usize) -> TurnView<'_> {
        self.transcript.turns.at(index)
    }

    fn turn_ref(&self, index: usize) -> TurnRef {
        let turn = self.turn(index);
        TurnRef {
            // Checked when the turn was pushed.
            id: TurnId(turn.id.to_owned()),
            seq: turn.seq,
        }
    }

    fn requests_total(&self) -> usize {
        match self.request.requests {
            RequestHistory::Open => self.transcript.open.len(),
            RequestHistory::All => self.transcript.open.len() + self.transcript.terminated.len(),
            RequestHistory::None => 0,
        }
    }

    fn in_flight_total(&self) -> Option<usize> {
        match self.request.selector {
            Selector::Turn { .. } => None,
            _ => self.transcript.in_flight.as_ref().map(|(_, chars)| *chars),
        }
    }

    /// The omitted candidates, first and last in seq order.
    fn omitted(&self, progress: &Progress) -> Omitted {
        let count = self.candidates.len() - progress.taken;
        if count == 0 {
            return Omitted::default();
        }
        let (earliest, latest) = match self.candidates {
            Candidates::Backward { .. } => (self.candidates.len() - 1, progress.taken),
            _ => (progress.taken, self.candidates.len() - 1),
        };
        Omitted {
            count,
            first: Some(self.turn_ref(self.candidates.get(earliest))),
            last: Some(self.turn_ref(self.candidates.get(latest))),
        }
    }

    /// What the next cursor records of the in-flight part (R15): all of it when the window
    /// holds it (whole, cut or its new characters), the cursor's record when the window leaves
    /// out a part that only grew, nothing otherwise.
    fn next_seen(&self, progress: &Progress) -> Option<Seen> {
        match progress.in_flight {
            Some(
                InFlight::Whole { .. }
                | InFlight::Cut { .. }
                | InFlight::New { .. }
                | InFlight::Replaced { .. },
            ) => self.seen_now,
            // Before the in-flight step the part counts as left out, as the trailer says.
            Some(InFlight::Omitted { .. }) | None => self.kept,
            Some(InFlight::Absent) => None,
        }
    }

    fn next(&self, progress: &Progress) -> Option<Cursor> {
        let next = self.next_cursor(progress)?;
        Some(Cursor {
            seen: self.next_seen(progress),
            ..next
        })
    }

    fn next_cursor(&self, progress: &Progress) -> Option<Cursor> {
        let child = &self.transcript.child;
        match self.candidates {
            // R5: the cursor advances only over the turns taken (whole or as the excerpt, R8).
            Candidates::Forward { since, .. } => {
                let taken = if self.transcript.is_bad(KnownBadRead::AdvanceBeforeBuild) {
                    self.candidates.len()
                } else {
                    progress.taken
                };
                let seq = match taken {
                    0 => since,
                    taken => self.turn(self.candidates.get(taken - 1)).seq,
                };
                Some(Cursor::at(child, seq))
            }
            // R11: n:k starts a since chain at the latest turn.
            Candidates::Backward { .. } => Some(Cursor::at(child, self.transcript.latest_seq())),
            // R12: exact location is not a progress read.
            Candidates::Single { .. } => None,
        }
    }

    fn trailer(&self, progress: &Progress) -> String {
        // The broken variant presents its cut turn as whole.
        let excerpt = usize::from(
            progress.excerpt.is_some()
                && !self
                    .transcript
                    .is_bad(KnownBadRead::ExcerptWithoutReference),
        );
        let whole = progress.taken - excerpt;
        let omitted = self.omitted(progress);
        let mut text = format!(
            "[parkline read end: {whole} whole, {excerpt} excerpt, {} omitted",
            omitted.count
        );
        if let (Some(first), Some(last)) = (&omitted.first, &omitted.last) {
            text.push_str(&format!(" (turn:{} to turn:{})", first.id, last.id));
        }
        // R3: nothing is left out silently.
        if self.in_flight_total().is_some()
            && matches!(progress.in_flight, None | Some(InFlight::Omitted { .. }))
        {
            text.push_str(", in-flight omitted");
        }
        let requests_omitted = self.requests_total() - progress.requests_shown;
        if requests_omitted > 0 {
            text.push_str(&format!(", {requests_omitted} requests omitted"));
        }
        match self.next(progress) {
            Some(cursor) => text.push_str(&format!("; next since:{cursor}]\n")),
            None => text.push_str("; next none]\n"),
        }
        text
    }

    /// R1: the whole text as it would read if the allocation stopped at `progress`.
    fn fits(&self, progress: &Progress) -> bool {
        if self.transcript.is_bad(KnownBadRead::TurnsOnlyBudget) {
            return progress.turn_text_chars <= self.request.max_chars;
        }
        self.header_chars + progress.body_chars + self.trailer(progress).chars().count()
            <= self.request.max_chars
    }

    fn too_small(&self) -> Error {
        // The empty answer must fit first (step 3 of the allocation), then the first selected
        // turn in the smallest form that makes progress (R8): whole, its rest from the offset,
        // or an excerpt of one character. An excerpt of no character is not progress: a caller
        // retrying at this budget would be handed the same read again.
        let mut needed = self.header_chars + self.trailer(&Progress::default()).chars().count();
        if self.candidates.len() > 0 {
            let index = self.candidates.get(0);
            let from = match self.request.selector {
                Selector::Turn { offset, .. } => offset,
                _ => 0,
            };
            let total = self.transcript.turns.chars(index);
            let mut options = Vec::new();
            if from == 0 {
                options.push(self.with_whole(&Progress::default(), index));
            } else {
                options.push(self.with_excerpt(&Progress::default(), index, from, total));
            }
            if from + 1 < total {
                options.push(self.with_excerpt(&Progress::default(), index, from, from + 1));
            }
            let first = options
                .iter()
                .map(|p| self.header_chars + p.body_chars + self.trailer(p).chars().count())
                .min()
                .unwrap_or(needed);
            needed = needed.max(first);
        }
        Error::new(
            ErrorKind::BudgetTooSmall,
            format!(
                "max_chars {} is below the {needed} this read needs",
                self.request.max_chars
            ),
        )
        .with_needed_chars(needed)
    }

    fn whole_chars(&self, index: usize) -> usize {
        let turn = self.turn(index);
        let chars = self.transcript.turns.chars(index);
        // "[turn {id} seq {seq}: {chars} chars]\n{text}\n"
        "[turn ".len()
            + turn.id.len()
            + " seq ".len()
            + digits_u64(turn.seq.0)
            + ": ".len()
            + digits(chars)
            + " chars]\n".len()
            + chars
            + 1
    }

    fn excerpt_chars(&self, index: usize, from: usize, to: usize) -> usize {
        let turn = self.turn(index);
        let total = self.transcript.turns.chars(index);
        if self
            .transcript
            .is_bad(KnownBadRead::ExcerptWithoutReference)
        {
            // Presented as if whole: "[turn {id} seq {seq}: {n} chars]\n{text}\n".
            return "[turn ".len()
                + turn.id.len()
                + " seq ".len()
                + digits_u64(turn.seq.0)
                + ": ".len()
                + digits(to - from)
                + " chars]\n".len()
                + (to - from)
                + 1;
        }
        // "[turn {id} seq {seq}: excerpt chars {from}..{to} of {total}{rest}]\n{text}\n"
        let rest = if to < total {
            // ", rest at turn:{id} offset {to}"
            ", rest at turn:".len() + turn.id.len() + " offset ".len() + digits(to)
        } else {
            0
        };
        "[turn ".len()
            + turn.id.len()
            + " seq ".len()
            + digits_u64(turn.seq.0)
            + ": excerpt chars ".len()
            + digits(from)
            + "..".len()
            + digits(to)
            + " of ".len()
            + digits(total)
            + rest
            + "]\n".len()
            + (to - from)
            + 1
    }

    fn with_whole(&self, progress: &Progress, index: usize) -> Progress {
        let mut next = *progress;
        next.taken += 1;
        next.body_chars += self.whole_chars(index);
        next.turn_text_chars += self.transcript.turns.chars(index);
        next
    }

    fn with_excerpt(&self, progress: &Progress, index: usize, from: usize, to: usize) -> Progress {
        let mut next = *progress;
        next.taken += 1;
        next.excerpt = Some((index, from, to));
        next.body_chars += self.excerpt_chars(index, from, to);
        next.turn_text_chars += to - from;
        next
    }

    /// Whole turns in allocation order; the first candidate that does not fit whole becomes the
    /// excerpt when nothing was taken before it, else it and all after it are omitted (R3, R8).
    fn allocate_turns(&mut self, first_from: usize) -> Result<(), Error> {
        while self.progress.taken < self.candidates.len() {
            let index = self.candidates.get(self.progress.taken);
            let first = self.progress.taken == 0;
            if !(first && first_from > 0) {
                let whole = self.with_whole(&self.progress, index);
                if self.fits(&whole) {
                    self.progress = whole;
                    continue;
                }
            }
            if !first {
                break;
            }
            let total = self.transcript.turns.chars(index);
            // The excerpt to the end of the turn (only possible from an offset) ...
            let to_end = self.with_excerpt(&self.progress, index, first_from, total);
            if first_from > 0 && self.fits(&to_end) {
                self.progress = to_end;
                break;
            }
            // ... else the longest excerpt that fits, of at least one character (R8: every
            // answer makes progress) and ending before the turn does; its size grows with its
            // length, so a binary search finds it.
            let (mut low, mut high) = (first_from + 1, total);
            if low >= high || !self.fits(&self.with_excerpt(&self.progress, index, first_from, low))
            {
                return Err(self.too_small());
            }
            while high - low > 1 {
                let middle = low + (high - low) / 2;
                if self.fits(&self.with_excerpt(&self.progress, index, first_from, middle)) {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            self.progress = self.with_excerpt(&self.progress, index, first_from, low);
            break;
        }
        Ok(())
    }

    fn in_flight_element_chars(part: InFlight) -> usize {
        match part {
            // "[in-flight: {total} chars]\n{text}\n"
            InFlight::Whole { chars } => {
                "[in-flight: ".len() + digits(chars) + " chars]\n".len() + chars + 1
            }
            // "[in-flight: last {shown} of {total} chars]\n{text}\n"
            InFlight::Cut { shown, total } => {
                "[in-flight: last ".len()
                    + digits(shown)
                    + " of ".len()
                    + digits(total)
                    + " chars]\n".len()
                    + shown
                    + 1
            }
            // "[in-flight, replaced: {total} chars]\n" or "... last {shown} of {total} chars]\n"
            InFlight::Replaced { shown, total } if shown == total => {
                "[in-flight, replaced: ".len() + digits(total) + " chars]\n".len() + total + 1
            }
            InFlight::Replaced { shown, total } => {
                "[in-flight, replaced: last ".len()
                    + digits(shown)
                    + " of ".len()
                    + digits(total)
                    + " chars]\n".len()
                    + shown
                    + 1
            }
            // "[in-flight: chars {from}..{total} of {total}]\n{text}\n"
            InFlight::New { from, total, .. } => {
                "[in-flight: chars ".len()
                    + digits(from)
                    + "..".len()
                    + digits(total)
                    + " of ".len()
                    + digits(total)
                    + "]\n".len()
                    + (total - from)
                    + 1
            }
            InFlight::Absent | InFlight::Omitted { .. } => 0,
        }
    }

    /// The element showing the newest `shown` characters of the in-flight part, in the form the
    /// view asks for.
    fn in_flight_part(&self, shown: usize, total: usize) -> InFlight {
        match self.view {
            View::Fresh if shown == total => InFlight::Whole { chars: total },
            View::Fresh => InFlight::Cut { shown, total },
            View::Replaced => InFlight::Replaced { shown, total },
            View::Grown { seen } => InFlight::New {
                from: total - shown,
                seen,
                total,
            },
        }
    }

    fn with_in_flight(&self, progress: &Progress, shown: usize, total: usize) -> Progress {
        let mut next = *progress;
        let part = self.in_flight_part(shown, total);
        next.in_flight = Some(part);
        next.body_chars += Self::in_flight_element_chars(part);
        next
    }

    /// The in-flight part, or of one that only grew the characters the caller was not given
    /// (R15); whole if it fits, else its newest characters that fit, else its omission (R10).
    fn allocate_in_flight(&mut self) {
        let Some(total) = self.in_flight_total() else {
            return;
        };
        let limit = match self.view {
            View::Grown { seen } => total - seen,
            View::Fresh | View::Replaced => total,
        };
        let all = self.with_in_flight(&self.progress, limit, total);
        if self.fits(&all) {
            self.progress = all;
            return;
        }
        if limit == 0 || !self.fits(&self.with_in_flight(&self.progress, 0, total)) {
            self.progress.in_flight = Some(InFlight::Omitted { total });
            return;
        }
        let (mut low, mut high) = (0, limit);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.fits(&self.with_in_flight(&self.progress, middle, total)) {
                low = middle;
            } else {
                high = middle;
            }
        }
        self.progress = self.with_in_flight(&self.progress, low, total);
    }

    fn requests(&self) -> impl Iterator<Item = (RequestId, RequestState, &str)> {
        let open = self
            .transcript
            .open
            .iter()
            .map(|(id, record)| (*id, RequestState::Open, record.as_str()));
        let terminated = self
            .transcript
            .terminated
            .iter()
            .map(|(id, record)| (*id, RequestState::Terminated, record.as_str()));
        // R13: terminated requests only on demand.
        let (open_count, terminated_count) = match self.request.requests {
            RequestHistory::Open => (usize::MAX, 0),
            RequestHistory::All => (usize::MAX, usize::MAX),
            RequestHistory::None => (0, 0),
        };
        open.take(open_count)
            .chain(terminated.take(terminated_count))
    }

    fn request_line(id: RequestId, state: RequestState, record: &str) -> String {
        format!("[request {id} {state}] {record}\n")
    }

    /// Requests in order (open by id, then terminated by id), each whole; the first that does
    /// not fit ends the allocation (R3, R13).
    fn allocate_requests(&mut self) {
        let mut progress = self.progress;
        for (id, state, record) in self.requests() {
            let mut next = progress;
            next.requests_shown += 1;
            next.body_chars += Self::request_line(id, state, record).chars().count();
            if !self.fits(&next) {
                break;
            }
            progress = next;
        }
        self.progress = progress;
    }

    fn render(&self, header: String) -> Window {
        let progress = &self.progress;
        let trailer = self.trailer(progress);
        let mut text = header;
        let mut whole = Vec::new();
        let mut excerpt = None;
        // Turns in seq order: allocation order for `since`, reversed for `n:k`.
        let mut indices: Vec<usize> = (0..progress.taken)
            .map(|i| self.candidates.get(i))
            .collect();
        indices.sort_unstable();
        for index in indices {
            let turn = self.turn(index);
            match progress.excerpt {
                Some((excerpt_index, from, to)) if excerpt_index == index => {
                    let total = self.transcript.turns.chars(index);
                    let part = char_slice(turn.text, from, to);
                    if self
                        .transcript
                        .is_bad(KnownBadRead::ExcerptWithoutReference)
                    {
                        text.push_str(&format!(
                            "[turn {} seq {}: {} chars]\n{part}\n",
                            turn.id,
                            turn.seq,
                            to - from
                        ));
                        whole.push(self.turn_ref(index));
                        continue;
                    }
                    let rest = if to < total {
                        format!(", rest at turn:{} offset {to}", turn.id)
                    } else {
                        String::new()
                    };
                    text.push_str(&format!(
                        "[turn {} seq {}: excerpt chars {from}..{to} of {total}{rest}]\n{part}\n",
                        turn.id, turn.seq
                    ));
                    excerpt = Some(Excerpt {
                        turn: self.turn_ref(index),
                        from,
                        to,
                        total,
                    });
                }
                _ => {
                    text.push_str(&format!(
                        "[turn {} seq {}: {} chars]\n{}\n",
                        turn.id,
                        turn.seq,
                        self.transcript.turns.chars(index),
                        turn.text
                    ));
                    whole.push(self.turn_ref(index));
                }
            }
        }
        let in_flight = match (progress.in_flight, &self.transcript.in_flight) {
            (Some(part), Some((partial, _))) => {
                match part {
                    InFlight::Whole { chars } => {
                        text.push_str(&format!("[in-flight: {chars} chars]\n{partial}\n"));
                    }
                    InFlight::Cut { shown, total } => text.push_str(&format!(
                        "[in-flight: last {shown} of {total} chars]\n{}\n",
                        char_tail(partial, shown)
                    )),
                    InFlight::Replaced { shown, total } if shown == total => text.push_str(
                        &format!("[in-flight, replaced: {total} chars]\n{partial}\n"),
                    ),
                    InFlight::Replaced { shown, total } => text.push_str(&format!(
                        "[in-flight, replaced: last {shown} of {total} chars]\n{}\n",
                        char_tail(partial, shown)
                    )),
                    InFlight::New { from, total, .. } => text.push_str(&format!(
                        "[in-flight: chars {from}..{total} of {total}]\n{}\n",
                        char_tail(partial, total - from)
                    )),
                    InFlight::Absent | InFlight::Omitted { .. } => {}
                }
                part
            }
            _ => InFlight::Absent,
        };
        for (id, state, record) in self.requests().take(progress.requests_shown) {
            text.push_str(&Self::request_line(id, state, record));
        }
        text.push_str(&trailer);
        let chars = text.chars().count();
        Window {
            text,
            whole,
            excerpt,
            omitted: self.omitted(progress),
            in_flight,
            requests_shown: progress.requests_shown,
            requests_omitted: self.requests_total() - progress.requests_shown,
            next: self.next(progress),
            chars,
        }
    }
}

fn digits_u64(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Characters `from..to` of `text`; costs time in proportion to `to`, not to the history.
fn char_slice(text: &str, from: usize, to: usize) -> &str {
    let mut boundaries = text
        .char_indices()
        .map(|(byte, _)| byte)
        .chain(std::iter::once(text.len()));
    let start = boundaries.nth(from).unwrap_or(text.len());
    let end = if to > from {
        boundaries.nth(to - from - 1).unwrap_or(text.len())
    } else {
        start
    };
    &text[start..end]
}

/// The last `n` characters of `text`; costs time in proportion to `n` (R2).
fn char_tail(text: &str, n: usize) -> &str {
    let start = match n {
        0 => text.len(),
        n => text
            .char_indices()
            .rev()
            .nth(n - 1)
            .map_or(0, |(byte, _)| byte),
    };
    &text[start..]
}
