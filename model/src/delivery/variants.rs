//! The known-bad delivery protocols: each [`Variant`] changes only the step it breaks, and names
//! the property (by spec id) that its test asserts catches it. The reference and the model branch
//! on the variant at that one step; the split functions a variant swaps in live here, beside it.

use std::collections::BTreeSet;

use super::bounds::Bounds;

use super::properties::{
    D1, D3, D3_REMEMBERED, D5, D6, D8, D9, D10, D11, D12, D13, D14, D17, D18, DISCARD, FRAMING,
    GROUP_ACK, GROUP_PARK, GROUP_REFUSAL, HANDOVER_COUNT, REDRIVE, REPEAT_BOUND, SEEN, SNAPSHOT,
};
use super::reference::{ParsedTurn, RefItem, TurnError, read_header, split};

/// A protocol step that a known-bad variant gets wrong; `Correct` is the protocol of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// The protocol as specified.
    Correct,
    /// Boundary delivers one line per turn (the old queue). Breaks D1.
    PopFront,
    /// Boundary writes the batch already cleared, before the hand-over. Breaks D9.
    ClearBeforeHandOver,
    /// A replay keeps the stored attempt and no repeat mark. Breaks D10.
    NoAttemptCounter,
    /// A replay re-splits what is parked at replay time. Breaks D2, D10, D11.
    ArrivalTimedSplit,
    /// The split takes lines in hash order of their text. Breaks D11.
    HashOrderSplit,
    /// A failed item is dropped instead of parked again. Breaks D6, D9.
    DropFailed,
    /// agent_read collecting a line removes it from the queue. Breaks D14, D9.
    DropCollected,
    /// The split admits the item that crosses the budget. Breaks D12.
    SplitOvershoot,
    /// A line larger than the budget is cut to fit. Breaks D3.
    CutOversizedLine,
    /// The trailer counts the batch's own lines too. Breaks D13.
    TrailerCountsAll,
    /// A failed item is parked again at the back, behind later lines. Breaks D17.
    FailedToBack,
    /// One item's failure fails every item of its batch. Breaks D6.
    FailWholeBatch,
    /// One notified event per batch instead of one per request. Breaks D5.
    NotifiedPerBatch,
    /// A dead letter is deleted instead of kept. Breaks D8.
    DeleteDeadLetter,
    /// A delivered item is not cleared and is offered again. Breaks D18.
    KeepDelivered,
    /// The hand-over count is raised at settle, not by the batch or attempt record: the
    /// durable count misses the hand-over until settle, and a crash loses it. Breaks the
    /// hand-over count.
    CountAtSettle,
    /// A redrive resets the hand-over count, so the line is offered again as if never seen.
    /// Breaks redrive.
    RedriveResetsHanded,
    /// A torn group-park record keeps its first line (a prefix). Breaks group park.
    TornGroupKeepsPrefix,
    /// The turn is read by searching for the trailer text, not by the header's byte count: a
    /// line that imitates a trailer ends the body. Breaks framing.
    FramingSearchesTrailer,
    /// A repeat recomputes `seen` from the counts at the repeat (which its own first attempt
    /// raised). Breaks seen.
    SeenRecomputedAtRepeat,
    /// The trailer counts the lines of the next turn only (the split of what is left), not
    /// every line still parked. Breaks D13, but only when two or more lines are left after a
    /// batch, which takes a fourth line: the `deep` bounds of `parkline check` (see
    /// [`Variant::caught_at`]).
    TrailerCountsNextTurn,
    /// A park for a request the mirror holds appends a second line instead of returning the
    /// seq it has, so a park retried after a crash that lost its answer is delivered twice.
    /// Breaks D3 (needs a lost park answer: [`Bounds::with_lost_park`]).
    NoParkDedup,
    /// A recovered batch is handed over again whatever its attempt, as before the repeat bound:
    /// a batch that crashes the daemon at every life holds the lines behind it for good.
    /// Breaks the repeat bound (D10).
    NoRepeatBound,
    /// A compaction writes format 2's snapshot: the in-flight batch as a prefix of the parked
    /// list, which cannot say a line redriven below the batch's seqs. Breaks the snapshot
    /// property (D9 through M12).
    PrefixSnapshot,
    /// A discard of the dead letters also deletes every parked line: lines that were never
    /// dead leave the queue undelivered. Breaks the discard property (D8), and D9.
    DiscardParked,
    /// Group commit posts every caller's answer when the group's record is written, before its
    /// fsync: a caller returns `Ok` for a line a crash can still lose. Breaks D16 (no park
    /// acknowledged before its fsync); needs group parkers ([`Bounds::group`]).
    AckBeforeSync,
    /// Group commit's record holds the leader's line only: a follower is answered with the seq
    /// planned for it, but its line was never written. Breaks D9 (the acknowledged line is
    /// lost); needs group parkers ([`Bounds::group`]).
    GroupDropsFollower,
    /// One refused caller fails its whole group: every caller is refused and nothing is
    /// written. Breaks D16 (a refusal fails its caller only); needs group parkers
    /// ([`Bounds::group`]).
    RefusalFailsGroup,
    /// A compaction's snapshot leaves the remembered window out, so the compacted mirror forgets
    /// every delivered request: a park retried after its line was delivered and the mirror
    /// compacted is parked anew and delivered twice. Breaks the remembered window (D3); needs a
    /// window, a lost park answer and a retry after the delivery ([`Bounds::remember`]). The
    /// snapshot property (D9 through M12) refuses the snapshot too.
    ForgetAtCompaction,
    /// A reopen does not read the remembered window back: a park retried after its line was
    /// delivered and the daemon restarted is parked anew and delivered twice. Breaks the
    /// remembered window (D3); needs a window, a lost park answer, a crash after the delivery
    /// and the retry after it ([`Bounds::remember`]).
    ForgetAtReopen,
}

impl Variant {
    /// Every variant, `Correct` first.
    pub const ALL: [Variant; 31] = [
        Variant::Correct,
        Variant::PopFront,
        Variant::ClearBeforeHandOver,
        Variant::NoAttemptCounter,
        Variant::ArrivalTimedSplit,
        Variant::HashOrderSplit,
        Variant::DropFailed,
        Variant::DropCollected,
        Variant::SplitOvershoot,
        Variant::CutOversizedLine,
        Variant::TrailerCountsAll,
        Variant::FailedToBack,
        Variant::FailWholeBatch,
        Variant::NotifiedPerBatch,
        Variant::DeleteDeadLetter,
        Variant::KeepDelivered,
        Variant::CountAtSettle,
        Variant::RedriveResetsHanded,
        Variant::TornGroupKeepsPrefix,
        Variant::FramingSearchesTrailer,
        Variant::SeenRecomputedAtRepeat,
        Variant::TrailerCountsNextTurn,
        Variant::NoParkDedup,
        Variant::NoRepeatBound,
        Variant::PrefixSnapshot,
        Variant::DiscardParked,
        Variant::AckBeforeSync,
        Variant::GroupDropsFollower,
        Variant::RefusalFailsGroup,
        Variant::ForgetAtCompaction,
        Variant::ForgetAtReopen,
    ];

    /// The name used on the command line (`--variant pop-front`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::PopFront => "pop-front",
            Variant::ClearBeforeHandOver => "clear-before-hand-over",
            Variant::NoAttemptCounter => "no-attempt-counter",
            Variant::ArrivalTimedSplit => "arrival-timed-split",
            Variant::HashOrderSplit => "hash-order-split",
            Variant::DropFailed => "drop-failed",
            Variant::DropCollected => "drop-collected",
            Variant::SplitOvershoot => "split-overshoot",
            Variant::CutOversizedLine => "cut-oversized-line",
            Variant::TrailerCountsAll => "trailer-counts-all",
            Variant::FailedToBack => "failed-to-back",
            Variant::FailWholeBatch => "fail-whole-batch",
            Variant::NotifiedPerBatch => "notified-per-batch",
            Variant::DeleteDeadLetter => "delete-dead-letter",
            Variant::KeepDelivered => "keep-delivered",
            Variant::CountAtSettle => "count-at-settle",
            Variant::RedriveResetsHanded => "redrive-resets-handed",
            Variant::TornGroupKeepsPrefix => "torn-group-keeps-prefix",
            Variant::FramingSearchesTrailer => "framing-searches-trailer",
            Variant::SeenRecomputedAtRepeat => "seen-recomputed-at-repeat",
            Variant::TrailerCountsNextTurn => "trailer-counts-next-turn",
            Variant::NoParkDedup => "no-park-dedup",
            Variant::NoRepeatBound => "no-repeat-bound",
            Variant::PrefixSnapshot => "prefix-snapshot",
            Variant::DiscardParked => "discard-parked",
            Variant::AckBeforeSync => "ack-before-fsync",
            Variant::GroupDropsFollower => "group-drops-follower",
            Variant::RefusalFailsGroup => "refusal-fails-group",
            Variant::ForgetAtCompaction => "forget-at-compaction",
            Variant::ForgetAtReopen => "forget-at-reopen",
        }
    }

    /// The variant with that command-line name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The property the variant is built to break (the one its test asserts), `None` for
    /// `Correct`.
    pub fn breaks(self) -> Option<&'static str> {
        Some(match self {
            Variant::Correct => return None,
            Variant::PopFront => D1,
            Variant::ClearBeforeHandOver | Variant::DropFailed | Variant::GroupDropsFollower => D9,
            Variant::NoAttemptCounter => D10,
            Variant::ArrivalTimedSplit | Variant::HashOrderSplit => D11,
            Variant::DropCollected => D14,
            Variant::SplitOvershoot => D12,
            Variant::CutOversizedLine | Variant::NoParkDedup => D3,
            Variant::TrailerCountsAll | Variant::TrailerCountsNextTurn => D13,
            Variant::FailedToBack => D17,
            Variant::FailWholeBatch => D6,
            Variant::NotifiedPerBatch => D5,
            Variant::DeleteDeadLetter => D8,
            Variant::KeepDelivered => D18,
            Variant::CountAtSettle => HANDOVER_COUNT,
            Variant::RedriveResetsHanded => REDRIVE,
            Variant::TornGroupKeepsPrefix => GROUP_PARK,
            Variant::FramingSearchesTrailer => FRAMING,
            Variant::SeenRecomputedAtRepeat => SEEN,
            Variant::NoRepeatBound => REPEAT_BOUND,
            Variant::PrefixSnapshot => SNAPSHOT,
            Variant::DiscardParked => DISCARD,
            Variant::AckBeforeSync => GROUP_ACK,
            Variant::RefusalFailsGroup => GROUP_REFUSAL,
            Variant::ForgetAtCompaction | Variant::ForgetAtReopen => D3_REMEMBERED,
        })
    }
}

impl Variant {
    /// The smallest bounds of the test suite at which the variant is caught for the property it
    /// breaks: [`Bounds::default`] for every variant but [`Variant::TrailerCountsNextTurn`],
    /// which needs two lines left behind a batch, so a fourth line (4 lines, no crash, no
    /// failure: a small space). `parkline check --bounds deep` reaches it too. The group commit
    /// variants change only steps that group parkers take: [`Bounds::group`]; the remembered
    /// window's, only a queue with a window: [`Bounds::remember`].
    pub fn caught_at(self) -> Bounds {
        match self {
            Variant::ForgetAtCompaction | Variant::ForgetAtReopen => Bounds::remember(),
            Variant::AckBeforeSync | Variant::GroupDropsFollower | Variant::RefusalFailsGroup => {
                Bounds::group()
            }
            Variant::TrailerCountsNextTurn => Bounds::generated(4, 6, 0, 0),
            Variant::NoParkDedup => Bounds::with_lost_park(),
            Variant::NoRepeatBound => Bounds::crash_loop(),
            _ => Bounds::default(),
        }
    }
}

/// Known bad (SplitOvershoot): keeps taking items while the total *before* an item fits, so the
/// item that crosses the budget joins the batch.
pub(super) fn split_overshoot(items: &[RefItem], budget: usize) -> usize {
    let mut total = 0usize;
    let mut k = 0usize;
    for item in items {
        if total > budget {
            break;
        }
        total += item.cost();
        k += 1;
    }
    k
}

/// Known bad (HashOrderSplit): splits the parked lines in the order of a hash of their text,
/// then hands the chosen ones over in seq order.
pub(super) fn take_in_hash_order(parked: &mut Vec<RefItem>, budget: usize) -> Vec<RefItem> {
    let fnv = |line: &str| {
        line.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let mut by_hash = parked.clone();
    by_hash.sort_by_key(|item| (fnv(&item.line), item.seq));
    let k = split(&by_hash, budget);
    let chosen: BTreeSet<u64> = by_hash[..k].iter().map(|item| item.seq).collect();
    let (taken, kept) = std::mem::take(parked)
        .into_iter()
        .partition(|item| chosen.contains(&item.seq));
    *parked = kept;
    taken
}

/// Known bad (FramingSearchesTrailer): the body is every line after the header up to the first
/// line that looks like a trailer; the header's byte count and the CRC are not used.
pub(super) fn parse_turn_searching_trailer(text: &str) -> Result<ParsedTurn, TurnError> {
    let mut lines = text.split('\n');
    let header = lines
        .next()
        .and_then(read_header)
        .ok_or(TurnError::Header)?;
    let mut body = Vec::new();
    for line in lines.by_ref() {
        if line.starts_with("[parkline batch ") && line.contains(" end: ") {
            return Ok(ParsedTurn {
                id: header.id,
                attempt: header.attempt,
                repeat: header.repeat,
                k: header.k,
                n: header.n,
                seen: header.seen,
                remaining: header.n.saturating_sub(header.k),
                lines: body,
            });
        }
        body.push(line.to_owned());
    }
    Err(TurnError::Trailer)
}
