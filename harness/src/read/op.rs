//! The read [`ReadOp`] vocabulary: what a scenario does to a child's transcript and how it reads
//! it, with its `arbitrary::Arbitrary` decoding and its proptest strategy.

use arbitrary::Arbitrary;
use parkline::read::RequestHistory;
use parkline_model::read::RefHistory;
use proptest::prelude::*;

/// The child every scenario reads.
pub const CHILD: &str = "s61947-8";

/// Another child, whose cursors the reads of [`CHILD`] must refuse.
pub const OTHER_CHILD: &str = "s978-5";

/// Another child whose id has the same CRC-32 as [`CHILD`]'s (`b91ca91f`): the child tag of the
/// retired v1 cursor could not tell them apart, so a generator that only used [`OTHER_CHILD`]
/// could never find that its cursor reads this child's turns (R7).
pub const COLLIDING_CHILD: &str = "s590020-12";

/// The characters the partial turn grows with: multi-byte ones (budgets count characters, not
/// bytes), a newline, and the brackets of the framing.
pub const ALPHABET: [char; 8] = ['a', 'b', 'é', '😀', '\n', ' ', '[', ']'];

/// Characters one [`ReadOp::Grow`] adds at most.
pub const GROW_CHARS_MAX: usize = 60;

/// The largest `chars_max` the ops use. Small enough that turns are excerpted and omitted often.
pub const BUDGET_MAX: usize = 520;

/// One step of a read scenario, in the words of `spec/read.md`. Small integers pick among the
/// things that exist; each is reduced modulo what is there, so every op sequence is valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum ReadOp {
    /// The child works: its partial turn grows by `len % (GROW_CHARS_MAX + 1)` characters of
    /// [`ALPHABET`] starting at `letter`.
    Grow {
        /// How many characters.
        len: u8,
        /// Which character first.
        letter: u8,
    },
    /// The partial turn (empty if none) completes as a turn; its seq is the latest plus
    /// `1 + gap % 3` (seqs need not be consecutive).
    Complete {
        /// Seq gap.
        gap: u8,
    },
    /// The child opens a request with a record of `len % 40` characters.
    OpenRequest {
        /// Record length.
        len: u8,
    },
    /// The open request picked by `pick` terminates.
    TerminateRequest {
        /// Which open request.
        pick: u8,
    },
    /// The caller follows its cursor: `since:<cursor>`, and keeps the next cursor.
    ReadSince {
        /// `chars_max` = `budget % (BUDGET_MAX + 1)`.
        budget: u16,
        /// Request history: 0 open, 1 all, 2 none.
        history: u8,
    },
    /// A `since` read with a cursor handed out earlier (stale), picked by `pick`.
    ReadStale {
        /// Which earlier cursor.
        pick: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// `n:<k>` with `k = n % 4`.
    ReadLatest {
        /// How many.
        n: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
        /// Request history, as for `ReadSince`.
        history: u8,
    },
    /// `turn:<id>` of the turn picked by `pick` (or an unknown id when there is none), from
    /// offset `offset % (chars + 2)` (one past the end is out of range).
    ReadTurn {
        /// Which turn.
        pick: u8,
        /// Offset.
        offset: u16,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// A `since` read with the followed cursor's text changed at one character, then `pad`
    /// characters appended (`pad` up to 4,095: an error must not echo all of a long input).
    ReadDamaged {
        /// Which character.
        position: u8,
        /// Its replacement, from `0-9a-f.v`.
        replacement: u8,
        /// Characters appended, `pad % 4096` of them.
        pad: u16,
    },
    /// A `since` read with a cursor that is not this child's: `child % 3` picks a cursor of
    /// [`OTHER_CHILD`], of [`COLLIDING_CHILD`], or this child's cursor in the retired v1 form.
    ReadForeign {
        /// The foreign cursor's seq.
        seq: u8,
        /// Which foreign cursor.
        child: u8,
    },
    /// A `since` read with a cursor of this child ahead of its latest turn.
    ReadAhead {
        /// How far ahead (at least 1).
        by: u8,
    },
    /// `since:turn:<id>`. With an even `pick`, the caller resumes from the last turn it was given
    /// along its cursor chain (as after losing the cursor) and keeps following: the chain must
    /// still skip and repeat nothing (R16). With an odd `pick`, a read after the turn
    /// picked by `pick / 2` (or an unknown id when there is none), compared only.
    ReadSinceTurn {
        /// Which turn, and whether to resume.
        pick: u8,
        /// Budget, as for `ReadSince`.
        budget: u16,
    },
    /// The caller follows its cursor the way a client that trusts `needed_chars` does: it reads
    /// with `chars_max` 0, retries at the budget the `CharsMaxTooSmall` error names, and reads an
    /// excerpt's rest the same way until the turn ends (R8: every answer makes progress, so this
    /// ends within a read per character). Random budgets almost never land on that one budget,
    /// so without this op the generator could not reach an answer that makes no progress.
    ReadAtNeeded {
        /// Request history, as for `ReadSince`.
        history: u8,
    },
    /// The child rewrites its partial turn: `len % (GROW_CHARS_MAX + 1)` characters of
    /// [`ALPHABET`] starting at `letter` replace it (a replaced part, unless it happens to start
    /// with the old one). Without it the partial turn only ever grew, so no generated read
    /// could meet a replaced part (R15).
    Rewrite {
        /// How many characters.
        len: u8,
        /// Which character first.
        letter: u8,
    },
    /// The daemon restarts and rebuilds the transcript from its first `keep % (turns + 1)`
    /// turns, without the partial turn; later turns get new ids (`t<seq>r<n>`), so a transcript
    /// that grows back past the follower's cursor has other turns at its seqs (section 5.2).
    /// Without it every transcript only grew, and no generated read could meet a cursor of a
    /// rebuilt transcript.
    Rebuild {
        /// Turns kept.
        keep: u8,
    },
    /// A `since` read with a cursor of this child whose fields are forged and whose check is
    /// computed over them, so only the field rules of section 5 can refuse it: `kind % 8` picks
    /// a v3 cursor after the turn at `seq` naming another turn, a v3 cursor past seq 0 naming no
    /// turn, one at seq 0 naming a turn, a partial-turn record of 0 chars, a v2 cursor at `seq`
    /// (which reads, unchecked), a v2 cursor with a partial-turn record, or a v2 (6) or v3 (7)
    /// cursor whose partial-turn record's check has `1 + kind / 8` hex digits (1 to 32: only 8,
    /// and 16 in v3, are a cursor; section 5.3).
    ReadForged {
        /// Which turn's seq.
        seq: u8,
        /// Which forgery.
        kind: u8,
    },
}

pub(super) fn budget(value: u16) -> usize {
    usize::from(value) % (BUDGET_MAX + 1)
}

pub(super) fn history(value: u8) -> (RequestHistory, RefHistory) {
    match value % 3 {
        0 => (RequestHistory::Open, RefHistory::Open),
        1 => (RequestHistory::All, RefHistory::All),
        _ => (RequestHistory::None, RefHistory::None),
    }
}

/// A proptest strategy for one [`ReadOp`], weighted towards the child working and the caller
/// following its cursor.
pub fn read_op_strategy() -> impl Strategy<Value = ReadOp> {
    let budget = any::<u16>();
    prop_oneof![
        4 => (any::<u8>(), any::<u8>()).prop_map(|(len, letter)| ReadOp::Grow { len, letter }),
        3 => any::<u8>().prop_map(|gap| ReadOp::Complete { gap }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(len, letter)| ReadOp::Rewrite { len, letter }),
        1 => any::<u8>().prop_map(|len| ReadOp::OpenRequest { len }),
        1 => any::<u8>().prop_map(|pick| ReadOp::TerminateRequest { pick }),
        5 => (budget, any::<u8>()).prop_map(|(budget, history)| ReadOp::ReadSince { budget, history }),
        1 => (any::<u8>(), budget).prop_map(|(pick, budget)| ReadOp::ReadStale { pick, budget }),
        2 => (any::<u8>(), budget, any::<u8>())
            .prop_map(|(n, budget, history)| ReadOp::ReadLatest { n, budget, history }),
        2 => (any::<u8>(), any::<u16>(), budget)
            .prop_map(|(pick, offset, budget)| ReadOp::ReadTurn { pick, offset, budget }),
        1 => (any::<u8>(), any::<u8>(), prop_oneof![Just(0u16), any::<u16>()])
            .prop_map(|(position, replacement, pad)| ReadOp::ReadDamaged { position, replacement, pad }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(seq, child)| ReadOp::ReadForeign { seq, child }),
        1 => any::<u8>().prop_map(|by| ReadOp::ReadAhead { by }),
        2 => any::<u8>().prop_map(|history| ReadOp::ReadAtNeeded { history }),
        1 => (any::<u8>(), budget).prop_map(|(pick, budget)| ReadOp::ReadSinceTurn { pick, budget }),
        1 => any::<u8>().prop_map(|keep| ReadOp::Rebuild { keep }),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(seq, kind)| ReadOp::ReadForged { seq, kind }),
    ]
}

/// A proptest strategy for a scenario of up to `len_max` ops.
pub fn read_ops_strategy(len_max: usize) -> impl Strategy<Value = Vec<ReadOp>> {
    proptest::collection::vec(read_op_strategy(), 0..=len_max)
}
