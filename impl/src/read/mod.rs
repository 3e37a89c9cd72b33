//! Budgeted reads of a child session's transcript: the `agent_read` side of parkline
//! (`spec/read.md`, requirements R1..R16).
//!
//! The daemon keeps one [`Transcript`] per child: its completed turns (id, seq, text), at most
//! one partial turn, and its requests (open or terminated, each with a short record).
//! [`Transcript::read`] answers a [`ReadRequest`] with a [`Window`]: the exact response text, what
//! it holds, what did not fit, and the next [`Cursor`].
//!
//! Three selectors, three meanings:
//!
//! - [`Selector::Since`] (`since:<cursor>`) is the read for following a child: it returns only
//!   the completed turns after the cursor, plus the partial turn, and a next cursor. Following
//!   the cursors never skips a completed turn and never returns one twice (R4, R5).
//! - [`Selector::Latest`] (`n:<k>`) is the "latest, may repeat" read: the latest `k` completed
//!   turns, whether or not the caller has them already (R11). Peeking with `n:1` at a working
//!   child re-sends the same finished turn each time (one planner's peeks were 40 % repeats,
//!   the cost `since` reads exist to remove). For repeated reads use [`Selector::Since`].
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
//! child.set_partial(Some("working on".to_string()));
//!
//! // The first read starts at the beginning of the transcript.
//! let first = child.read(&ReadRequest::new(Selector::Since(child.start_cursor()), 1000))?;
//! assert_eq!(first.whole.len(), 1);
//!
//! child.push_turn(TurnId::new("t2")?, TurnSeq(2), "second answer")?;
//! child.set_partial(None);
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

//= spec/read.md#r11-n-k-keeps-today-s-meaning-the-latest-may-repeat-read
//# The documentation MUST call it the "latest, may repeat" read and recommend `since` for repeated
//# reads.
//= spec/read.md#r12-turn-id-is-exact-location
//# the documentation MUST say so.
// A read runs top to bottom through these files: `transcript` resolves the selector, `plan`
// decides what fits in the one budget before any text exists, `text` sizes and renders it. The
// public types live each in the file of the idea they belong to and are re-exported here, so
// the paths are `parkline::read::X` whatever file holds X.
mod cursor;
mod error_text;
mod ids;
mod plan;
mod request;
mod resolve;
mod store;
mod text;
mod transcript;
mod window;

pub use cursor::Cursor;
pub use error_text::{ECHO_CHARS_MAX, ERROR_CHARS_MAX};
pub use ids::{ChildId, ID_CHARS_MAX, Turn, TurnId, TurnRef, TurnSeq};
pub use request::{ReadRequest, RequestHistory, Selector};
pub use store::{TurnView, Turns, TurnsIter};
pub use transcript::Transcript;
pub use window::{Excerpt, Omitted, Partial, RequestState, Window};
