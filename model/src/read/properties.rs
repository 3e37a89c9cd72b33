//! The read properties, each named by the spec id it checks (`"R5 no skip"`, ...), and the
//! predicates that are more than a ghost flag. The model lists them in `ReadModel::properties`,
//! with the `sometimes` properties that show the interesting paths are really reached.

use super::model::{ReadModel, ReadState};

/// R1: every window is at most its `chars_max`, framing, turns, partial turn and requests
/// together.
pub const R1: &str = "R1 one overall budget";
/// R5: every completed turn up to the caller's cursor was given to it, whole or as a marked
/// excerpt naming the rest.
pub const R5: &str = "R5 no skip";
/// R6: no completed turn is given to the caller twice.
pub const R6: &str = "R6 no repeat";
/// R7: a cursor the crate handed out is accepted by the next read.
pub const R7: &str = "R7 cursor accepted";
/// R8: a read with unread turns moves the cursor (no read loops).
pub const R8: &str = "R8 no read loops";
/// R15: a caller holding the partial turn is sent only what was added since; a replaced
/// part comes whole, marked replaced.
pub const R15: &str = "R15 partial turn sent once";
/// Sometimes: a read sends only the new characters of a grown partial turn.
pub const SOMETIMES_PARTIAL_NEW: &str = "only new partial-turn characters";
/// Sometimes: a read sends a partial turn marked replaced.
pub const SOMETIMES_PARTIAL_REPLACED: &str = "the partial turn is replaced";
/// R16: resuming with `since:turn:<id>` of the last turn held continues right after it.
pub const R16: &str = "R16 resume from a known turn";
/// Sometimes: a turn larger than the budget comes back as an excerpt.
pub const SOMETIMES_OVERSIZED: &str = "a turn larger than the budget";
/// Sometimes: the partial turn is cut.
pub const SOMETIMES_PARTIAL_CUT: &str = "the partial turn is cut";
/// Sometimes: selected turns did not fit and were reported omitted.
pub const SOMETIMES_OMITTED: &str = "turns are omitted";
/// Sometimes: a read returns no completed turn.
pub const SOMETIMES_NOTHING_NEW: &str = "a read returns nothing new";
/// Sometimes: a cursor is refused because the transcript was rebuilt and grew back past it,
/// and the caller resumes (section 5.2).
pub const SOMETIMES_DIVERGED: &str = "a cursor of a rebuilt transcript is refused";

pub(super) fn r5_no_skip(_: &ReadModel, s: &ReadState) -> bool {
    //= spec/read.md#r5-no-skip
    //# The next cursor of a `since` read MUST advance only over turns the window holds, whole or as
    //# the marked excerpt of R8: its seq is the seq of the last such turn, or the given cursor's
    //# when the window holds none.
    // A cursor whose turn a rebuild replaced names no position of this transcript: the next
    // read must refuse it (section 5.2), and a read that accepts it is judged by its answer.
    let follows = |turn: &super::types::RefTurn| Some(&turn.id) == s.cursor_turn.as_ref();
    let at_cursor = s.transcript.turns.iter().find(|turn| turn.seq == s.cursor);
    if s.cursor > 0 && !at_cursor.is_some_and(follows) {
        return true;
    }
    s.transcript
        .turns
        .iter()
        .filter(|turn| turn.seq <= s.cursor)
        .all(|turn| s.given.contains(&turn.seq))
}
