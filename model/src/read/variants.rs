//! The known-bad read protocols: each [`ReadVariant`] changes only the step it breaks, and names
//! the property (by spec id) that its test asserts catches it. The reference and the model
//! branch on the variant at that one step.

use super::properties::{R1, R5, R6, R7, R8, R15, R16};

/// A read step that a known-bad variant gets wrong; `Correct` is the protocol of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadVariant {
    /// The read as specified.
    Correct,
    /// A turn larger than the budget is cut silently, presented as whole, without its
    /// `turn:<id>` reference; the cursor moves past it. Breaks R5.
    ExcerptWithoutReference,
    /// The next cursor is set to the last selected turn before the answer is built. Breaks R5.
    AdvanceBeforeBuild,
    /// `chars_max` bounds the turns' text only, as before parkline. Breaks R1.
    TurnsOnlyBudget,
    /// The caller peeks with `n:1`, the "latest, may repeat" read, as in the seed. Breaks R6.
    PeekLatest,
    /// An excerpt of no character counts as an answer, and `needed_chars` names the budget of
    /// that empty excerpt, as before: a caller retrying at `needed_chars` is handed the same
    /// read again. Breaks R8.
    EmptyExcerpt,
    /// `since:turn:<id>` reads from the turn itself, not after it, so a resumed caller is given
    /// the turn it holds again. Breaks R16.
    ResumeIncludesTurn,
    /// The partial turn is sent whole on every read, as before parkline's cursor held it.
    /// Breaks R15.
    ResendPartial,
    /// `CharsMaxTooSmall` names one character less than the smallest budget that answers (a
    /// size counted without its last newline), so a caller retrying at it with the same cursor
    /// is refused again. Breaks R7.
    NeededOneShort,
    /// A cursor's seq is trusted alone, as in the v2 cursor: its turn check is not compared, so
    /// a transcript rebuilt shorter and grown back past the cursor hands the caller only what
    /// follows the seq. Breaks R5.
    TrustSeq,
}

impl ReadVariant {
    /// Every variant, `Correct` first.
    pub const ALL: [ReadVariant; 10] = [
        ReadVariant::Correct,
        ReadVariant::ExcerptWithoutReference,
        ReadVariant::AdvanceBeforeBuild,
        ReadVariant::TurnsOnlyBudget,
        ReadVariant::PeekLatest,
        ReadVariant::EmptyExcerpt,
        ReadVariant::ResumeIncludesTurn,
        ReadVariant::ResendPartial,
        ReadVariant::NeededOneShort,
        ReadVariant::TrustSeq,
    ];

    /// The name used on the command line (`--variant advance-before-build`).
    pub fn name(self) -> &'static str {
        match self {
            ReadVariant::Correct => "correct",
            ReadVariant::ExcerptWithoutReference => "excerpt-without-reference",
            ReadVariant::AdvanceBeforeBuild => "advance-before-build",
            ReadVariant::TurnsOnlyBudget => "turns-only-budget",
            ReadVariant::PeekLatest => "peek-latest",
            ReadVariant::EmptyExcerpt => "empty-excerpt",
            ReadVariant::ResumeIncludesTurn => "resume-includes-turn",
            ReadVariant::ResendPartial => "resend-partial",
            ReadVariant::NeededOneShort => "needed-one-short",
            ReadVariant::TrustSeq => "trust-seq",
        }
    }

    /// The variant with that command-line name.
    pub fn from_name(name: &str) -> Option<ReadVariant> {
        ReadVariant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The property the variant is built to break (the one its test asserts), `None` for
    /// `Correct`.
    pub fn breaks(self) -> Option<&'static str> {
        Some(match self {
            ReadVariant::Correct => return None,
            ReadVariant::ExcerptWithoutReference
            | ReadVariant::AdvanceBeforeBuild
            | ReadVariant::TrustSeq => R5,
            ReadVariant::TurnsOnlyBudget => R1,
            ReadVariant::PeekLatest => R6,
            ReadVariant::EmptyExcerpt => R8,
            ReadVariant::ResumeIncludesTurn => R16,
            ReadVariant::ResendPartial => R15,
            ReadVariant::NeededOneShort => R7,
        })
    }
}
