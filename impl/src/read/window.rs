//! What a read answers: the [`Window`] (the response text and an account of what it holds) and
//! the parts it names ([`Excerpt`], [`Omitted`], [`Partial`], [`RequestState`]).

use std::fmt;

use super::cursor::Cursor;
use super::ids::TurnRef;
use super::request::Selector;

/// Part of one turn in a [`Window`]: characters `from..to` of `total`.
///
/// # Example
///
/// ```
/// use parkline::read::{Excerpt, Selector, TurnId, TurnRef, TurnSeq};
/// let excerpt = Excerpt::new(TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) }, 0, 100, 250);
/// assert_eq!(excerpt.rest(), Some(Selector::Turn { id: TurnId::new("t1")?, offset: 100 }));
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    /// Characters `from..to` of `turn`, whose text has `total` characters.
    ///
    /// # Panics
    ///
    /// When `from > to` or `to > total`.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{Excerpt, TurnId, TurnRef, TurnSeq};
    /// let excerpt = Excerpt::new(TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) }, 0, 10, 20);
    /// assert_eq!(excerpt.to - excerpt.from, 10);
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn new(turn: TurnRef, from: usize, to: usize, total: usize) -> Excerpt {
        assert!(from <= to && to <= total, "an excerpt lies inside its turn");
        Excerpt {
            turn,
            from,
            to,
            total,
        }
    }

    /// The read that continues this excerpt, when the turn goes on after it.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{Excerpt, TurnId, TurnRef, TurnSeq};
    /// let turn = TurnRef { id: TurnId::new("t1")?, seq: TurnSeq(1) };
    /// let last_part = Excerpt::new(turn, 200, 250, 250);
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
#[non_exhaustive]
pub struct Omitted {
    /// How many selected turns are not in the window.
    pub count: usize,
    /// The earliest of them.
    pub first: Option<TurnRef>,
    /// The latest of them.
    pub last: Option<TurnRef>,
}

/// What a [`Window`] holds of the partial turn.
///
/// # Example
///
/// ```
/// use parkline::read::Partial;
/// let cut = Partial::Cut { shown: 10, total: 400 };
/// assert_ne!(cut, Partial::Whole { chars: 400 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Partial {
    /// No partial turn: the child is not working, or the read was a `turn:` read.
    Absent,
    /// The whole partial turn.
    Whole {
        /// Its characters.
        chars: usize,
    },
    /// The newest `shown` of `total` characters of the partial turn (R10).
    Cut {
        /// Characters shown (the last ones).
        shown: usize,
        /// Characters of the partial turn.
        total: usize,
    },
    /// The child has a partial turn but not even its marker fitted.
    Omitted {
        /// Characters of the partial turn.
        total: usize,
    },
    /// Characters `from..total` of a partial turn that only grew since the cursor's caller
    /// was given its first `seen` characters (R15). `from == seen` when all the new characters
    /// fit; `from > seen` when only the newest did.
    New {
        /// The first character shown.
        from: usize,
        /// The characters the cursor says the caller was given before.
        seen: usize,
        /// Characters of the partial turn.
        total: usize,
    },
    /// The partial turn was replaced (not grown) since the cursor's read: its newest `shown` of
    /// `total` characters, all of them when `shown == total`, marked replaced (R15).
    Replaced {
        /// Characters shown (the last ones).
        shown: usize,
        /// Characters of the partial turn.
        total: usize,
    },
}

/// The answer to one read: the response text and what it holds.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, Partial, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "hello")?;
/// let window = child.read(&ReadRequest::new(Selector::Latest { n: 1 }, 500))?;
/// assert_eq!(window.partial, Partial::Absent);
/// assert_eq!(window.chars, window.text.chars().count());
/// assert!(window.chars <= 500);
/// # Ok::<(), parkline::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Window {
    /// The response text, exactly as specified in `spec/read.md` (R14).
    pub text: String,
    /// The turns returned whole, in seq order.
    pub whole: Vec<TurnRef>,
    /// The turn returned as a marked excerpt, if any (R8).
    pub excerpt: Option<Excerpt>,
    /// The selected turns that did not fit (R3).
    pub omitted: Omitted,
    /// What the window holds of the partial turn.
    pub partial: Partial,
    /// Requests attached.
    pub requests_shown: usize,
    /// Requests asked for that did not fit.
    pub requests_omitted: usize,
    //= spec/read.md#r12-turn-id-is-exact-location
    //# the documentation MUST say so.
    /// The cursor to continue with (`None` for a `turn:` read, which is not a progress read).
    pub next: Option<Cursor>,
    /// Characters of `text`: the budget used, never more than `chars_max` (R1).
    pub chars: usize,
    /// The read's cursor was of the older v2 form past seq 0, which names no turn: the read
    /// trusted its seq, and the header says so (`spec/read.md` section 5.3).
    pub cursor_unchecked: bool,
}

/// Whether a request is still open.
///
/// # Example
///
/// ```
/// assert_eq!(parkline::read::RequestState::Open.to_string(), "open");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestState {
    /// Still running.
    Open,
    /// Finished; its record is history, attached only with
    /// [`RequestHistory::All`](super::request::RequestHistory::All).
    Terminated,
}

impl RequestState {
    pub(super) fn word(self) -> &'static str {
        match self {
            RequestState::Open => "open",
            RequestState::Terminated => "terminated",
        }
    }
}

impl fmt::Display for RequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}
