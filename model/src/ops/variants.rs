//! The known-bad ops protocols: each [`OpsVariant`] changes only the step it breaks, and names
//! the property (by spec id) that its test asserts catches it. The model branches on the variant
//! at that one step.

use super::properties::{
    M17_ANSWER_CHANGE, M17_ANSWERED_DURABLE, M17_AT_MOST_ONCE, M17_AT_REST, M17_ONE_LIFE,
};

/// A step that a known-bad variant gets wrong; `Correct` is the protocol of M17.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpsVariant {
    /// The protocol as specified.
    Correct,
    /// The daemon's record makes the change without naming the request's id; the daemon keeps
    /// the applied ids in memory instead, which a crash loses, so the request is applied again
    /// after the open. Breaks "applied at most once".
    ApplyWithoutId,
    /// The operator answers as soon as it sees its record, without fsyncing the mirror: a power
    /// loss then drops the record it answered. Breaks "answered is durable".
    AnswerBeforeDurable,
    /// The operator removes its request from the file as soon as it sees its record, durable or
    /// not: a power loss drops the record, and the file no longer asks for it. Breaks "at
    /// rest every request is applied and answered".
    PruneBeforeDurable,
    /// The daemon reads the request file and only then takes its stat stamp: a request
    /// submitted between the two is under a stamp the daemon holds as read, and waits for good.
    /// Breaks "at rest every request is applied and answered".
    StampAfterRead,
    /// The daemon applies a request whatever life it names: a command that read the mirror of a
    /// session that then ended submits into the new session's file, and its change is made
    /// there. Breaks "a request changes only the life it names".
    ApplyAnyLife,
    /// A command's submit adopts the waiting or answered request of its id whatever its change:
    /// a second command under an answered id reports the first one's answer. Breaks "an answer
    /// is for the change asked".
    AdoptReusedId,
    /// A command reports the answer it finds for its id whatever its change: a second command
    /// whose look came before the first request's record, and whose submit came after another
    /// command dropped that request from the file, adds its request, which the daemon skips, and
    /// reports the first one's answer. Breaks "an answer is for the change asked".
    AnswerAnyChange,
    /// A command's submit drops every request whose id the window it read holds, of any life: a
    /// command that read the mirror of a session that then ended drops a request of the new
    /// session whose id the old window held, and its operator waits for good. Breaks "at rest
    /// every request is applied and answered".
    DropAnyLife,
}

impl OpsVariant {
    /// Every variant, `Correct` first.
    pub const ALL: [OpsVariant; 9] = [
        OpsVariant::Correct,
        OpsVariant::ApplyWithoutId,
        OpsVariant::AnswerBeforeDurable,
        OpsVariant::PruneBeforeDurable,
        OpsVariant::StampAfterRead,
        OpsVariant::ApplyAnyLife,
        OpsVariant::AdoptReusedId,
        OpsVariant::AnswerAnyChange,
        OpsVariant::DropAnyLife,
    ];

    /// The name used on the command line (`--variant apply-without-id`).
    pub fn name(self) -> &'static str {
        match self {
            OpsVariant::Correct => "correct",
            OpsVariant::ApplyWithoutId => "apply-without-id",
            OpsVariant::AnswerBeforeDurable => "answer-before-durable",
            OpsVariant::PruneBeforeDurable => "prune-before-durable",
            OpsVariant::StampAfterRead => "stamp-after-read",
            OpsVariant::ApplyAnyLife => "apply-any-life",
            OpsVariant::AdoptReusedId => "adopt-reused-id",
            OpsVariant::AnswerAnyChange => "answer-any-change",
            OpsVariant::DropAnyLife => "drop-any-life",
        }
    }

    /// The variant with that command-line name.
    pub fn from_name(name: &str) -> Option<OpsVariant> {
        OpsVariant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The property the variant is built to break (the one its test asserts), `None` for
    /// `Correct`.
    pub fn breaks(self) -> Option<&'static str> {
        Some(match self {
            OpsVariant::Correct => return None,
            OpsVariant::ApplyWithoutId => M17_AT_MOST_ONCE,
            OpsVariant::AnswerBeforeDurable => M17_ANSWERED_DURABLE,
            OpsVariant::PruneBeforeDurable | OpsVariant::StampAfterRead => M17_AT_REST,
            OpsVariant::DropAnyLife => M17_AT_REST,
            OpsVariant::ApplyAnyLife => M17_ONE_LIFE,
            OpsVariant::AdoptReusedId | OpsVariant::AnswerAnyChange => M17_ANSWER_CHANGE,
        })
    }
}
