//! The names a read uses: [`ChildId`], [`TurnId`] and [`TurnSeq`], checked once when made so
//! that they stand in the response text unquoted, and the turns they name ([`Turn`],
//! [`TurnRef`]).

use std::fmt;

use super::error_text::echo;
use crate::error::{Error, ErrorKind};

/// The longest child id or turn id, in characters.
pub const ID_CHARS_MAX: usize = 128;

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
pub struct TurnId(pub(super) String);

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
/// least 1. (Not the [`Seq`](crate::ids::Seq) of a parked line.)
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
/// `TurnView`s; `TurnView::to_turn` makes one of
/// these.
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
// Exhaustive on purpose: a turn is its id, its seq and its text, nothing more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The turn's id.
    pub id: TurnId,
    /// The turn's sequence number.
    pub seq: TurnSeq,
    /// The turn's text, verbatim.
    pub text: String,
}

/// A turn named in a `Window`: its id and sequence number.
///
/// # Example
///
/// ```
/// use parkline::read::{TurnId, TurnRef, TurnSeq};
/// let turn = TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) };
/// assert_eq!(turn.seq, TurnSeq(1));
/// # Ok::<(), parkline::Error>(())
/// ```
// Exhaustive on purpose: a turn is named by its id and seq, nothing more.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TurnRef {
    /// The turn's id.
    pub id: TurnId,
    /// The turn's sequence number.
    pub seq: TurnSeq,
}

/// What a refused read carries: the child its cursor named.
impl Error {
    /// For [`ErrorKind::CursorOtherChild`]: the child the refused cursor names, whole (the
    /// message echoes at most `ECHO_CHARS_MAX` characters of it).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, Cursor, ReadRequest, Selector, Transcript};
    /// let child = Transcript::new(ChildId::new("a")?);
    /// let other = Cursor::start(&ChildId::new("b")?);
    /// let err = child.read(&ReadRequest::new(Selector::Since(other), 1000)).unwrap_err();
    /// assert_eq!(err.cursor_child().map(ChildId::as_str), Some("b"));
    /// assert_eq!(err.resume_cursor(), Some(&child.start_cursor()));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn cursor_child(&self) -> Option<&ChildId> {
        self.child_detail()
    }
}
