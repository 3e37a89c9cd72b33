//! A step of a delivery path told in the spec's words ([`DeliveryModel::narrate`]), which
//! `parkline check` prints for every step of a counterexample.

use super::model::{Action, DeliveryModel, DeliveryState, Member, Phase};
use super::reference::{RefBatch, RefEnded, RefItem, turn_text};

impl DeliveryModel {
    /// One step of a path in the spec's words: what `action` did from `before` to `after`.
    pub fn narrate(
        &self,
        before: &DeliveryState,
        action: &Action,
        after: &DeliveryState,
    ) -> String {
        let seqs = |b: &RefBatch| format!("{:?}", b.seqs());
        match action {
            Action::Park(index) => {
                let (request, line) = self.bounds.lines.get(*index).cloned().unwrap_or_default();
                if after.remembered_answers.len() > before.remembered_answers.len()
                    && let Some(entry) = after.remembered_answers.last()
                {
                    let ended = match entry.ended {
                        RefEnded::Delivered { batch } => format!("delivered in batch {batch}"),
                        RefEnded::Discarded => "discarded".into(),
                    };
                    return format!(
                        "a line of request {request} is parked again (a retry): the mirror remembers it {ended} as seq {}, and nothing is written",
                        entry.seq
                    );
                }
                // The seq the park returned: the highest the mirror holds for the request.
                let seq = after
                    .queue
                    .mirror()
                    .parked
                    .iter()
                    .filter(|item| item.request == request)
                    .map(|item| item.seq)
                    .max()
                    .unwrap_or(after.arrived as u64);
                let again = if before.retry_pending {
                    ", a retry"
                } else {
                    ""
                };
                format!(
                    "a line of request {request} arrives and is parked as seq {seq} ({line:?}, cost {}{again})",
                    line.chars().count() + 1
                )
            }
            Action::ParkAnswerLost(index) => {
                let (request, _) = self.bounds.lines.get(*index).cloned().unwrap_or_default();
                format!(
                    "a line of request {request} is parked and its record reaches the mirror, then the daemon crashes before the park returns ({}); parked now {:?}",
                    phase_words(&before.phase),
                    parked_seqs(after)
                )
            }
            Action::ParkGroup(index) => {
                let seqs: Vec<u64> = (before.arrived + 1..=after.arrived)
                    .map(|seq| seq as u64)
                    .collect();
                format!(
                    "lines {} and {} arrive together and are parked as one group (one record): seqs {seqs:?}",
                    index,
                    index + 1
                )
            }
            Action::TornGroup(index) => format!(
                "the daemon crashes while the group park of lines {index} and {} is appended ({}); parked now {:?}",
                index + 1,
                phase_words(&before.phase),
                parked_seqs(after)
            ),
            Action::Compact => match after.snapshot_broken {
                true if after.queue.remembered().len() < before.queue.remembered().len() => {
                    "a settle or redrive compacts the mirror: its snapshot leaves the remembered \
                     window out, and the compacted mirror forgets every request it remembered"
                        .into()
                }
                false => {
                    "a settle or redrive compacts the mirror: its snapshot reads back as it".into()
                }
                true => {
                    "a settle or redrive compacts the mirror: its snapshot does not read back as \
                         it (the next open refuses it, or finds another state)"
                        .into()
                }
            },
            Action::Redrive => match after.redrives.last() {
                Some(r) => format!(
                    "the operator redrives the dead letters {:?}: parked again with failures 0, hand-over counts kept ({:?})",
                    r.seqs,
                    after
                        .queue
                        .parked()
                        .iter()
                        .map(|i| (i.seq, i.handed))
                        .collect::<Vec<_>>()
                ),
                None => "the operator redrives the dead letters".into(),
            },
            Action::Discard => match after.discards.last() {
                Some(d) => format!(
                    "the operator discards the dead letters {:?}: the queue no longer holds {:?}; parked now {:?}",
                    d.dead_before,
                    d.removed.iter().map(|&(seq, _)| seq).collect::<Vec<_>>(),
                    parked_seqs(after)
                ),
                None => "the operator discards the dead letters".into(),
            },
            Action::Boundary => match after.boundaries.last() {
                Some(r) => format!(
                    "the parent's turn ends (boundary): batch {} attempt {}{} is written with seqs {} of parked {:?}, remaining {}, seen {}, handed {:?}",
                    r.batch.id,
                    r.batch.attempt,
                    if r.batch.is_repeat() { " (repeat)" } else { "" },
                    seqs(&r.batch),
                    r.parked.iter().map(|i| i.seq).collect::<Vec<_>>(),
                    r.batch.remaining,
                    r.batch.seen,
                    r.batch.items.iter().map(|i| i.handed).collect::<Vec<_>>()
                ),
                None => "the parent's turn ends (boundary)".into(),
            },
            Action::HandOver => match after.handed.last() {
                Some(b) => format!(
                    "the daemon hands batch {} attempt {} over to the parent: {:?}",
                    b.id,
                    b.attempt,
                    turn_text(b)
                ),
                None => "the daemon hands the batch over".into(),
            },
            Action::HandOverFails => format!(
                "the hand-over fails: every item fails ({})",
                settle_words(after)
            ),
            Action::Notify => match next_item(before) {
                Some(item) if after.notified.len() > before.notified.len() => format!(
                    "delegation_notified is recorded for seq {} (request {})",
                    item.seq, item.request
                ),
                Some(item) => format!(
                    "seq {} (request {}) counts as delivered, but no delegation_notified is recorded for it",
                    item.seq, item.request
                ),
                None => "delegation_notified is recorded".into(),
            },
            Action::ItemFails => match next_item(before) {
                Some(item) => format!(
                    "the notified event of seq {} cannot be recorded: the item fails",
                    item.seq
                ),
                None => "an item fails".into(),
            },
            Action::Settle => format!("settle (mirror cleared): {}", settle_words(after)),
            Action::Crash => format!("the daemon crashes ({})", phase_words(&before.phase)),
            Action::Recover => match after.queue.in_flight() {
                Some(b) => format!(
                    "the daemon restarts; batch {} attempt {} is recovered from the mirror",
                    b.id, b.attempt
                ),
                None => "the daemon restarts and recovers the mirror".into(),
            },
            Action::Collected(seq) => format!("agent_read collects the line of seq {seq}"),
            Action::JoinGroup(member) => format!(
                "{} starts its park and joins the pending group {:?}",
                member_words(*member),
                after.pending
            ),
            Action::WriteGroup => match (&after.writing[..], &before.pending[..]) {
                ([], group) => format!(
                    "a leader takes the group {group:?}: no new line, nothing is written, every caller is answered ({:?})",
                    after.answered
                ),
                (written, _) => format!(
                    "a leader writes the group as one record, not yet synced: answers planned {written:?}{}",
                    if after.answered.len() > before.answered.len() {
                        " and posted already"
                    } else {
                        ""
                    }
                ),
            },
            Action::SyncGroup => format!(
                "the group's fsync returns: parked now {:?}, answers posted {:?}",
                parked_seqs(after),
                after.answered
            ),
            Action::AckPark(member) => match after.acks.last() {
                Some(ack) => match ack.answer {
                    Some(seq) => format!("{}'s park returns seq {seq}", member_words(*member)),
                    None => format!("{}'s park returns a refusal", member_words(*member)),
                },
                None => format!("{}'s park returns", member_words(*member)),
            },
        }
    }
}

/// The item of the batch handed over whose notified event is recorded next.
fn next_item(before: &DeliveryState) -> Option<&RefItem> {
    match &before.phase {
        Phase::HandedOver { batch, outcomes } => batch.items.get(outcomes.len()),
        _ => None,
    }
}

fn settle_words(after: &DeliveryState) -> String {
    match after.settles.last() {
        Some(r) => {
            let pick = |want: bool| {
                r.outcomes
                    .iter()
                    .filter(|(_, ok)| *ok == want)
                    .map(|(seq, _)| *seq)
                    .collect::<Vec<_>>()
            };
            format!(
                "batch {} attempt {}: delivered {:?}, failed {:?}; parked now {:?}, dead letters {:?}",
                r.batch,
                r.attempt,
                pick(true),
                pick(false),
                parked_seqs(after),
                after
                    .queue
                    .dead_letters()
                    .iter()
                    .map(|i| i.seq)
                    .collect::<Vec<_>>()
            )
        }
        None => String::new(),
    }
}

/// The seqs of the lines parked in `state`, for the steps that say what is parked now.
fn parked_seqs(state: &DeliveryState) -> Vec<u64> {
    state.queue.parked().iter().map(|i| i.seq).collect()
}

/// A caller of a group, in words.
fn member_words(member: Member) -> String {
    match member {
        Member::Line(index) => format!("the caller of line {index}"),
        Member::Invalid => "the caller of the invalid line".into(),
    }
}

fn phase_words(phase: &Phase) -> String {
    match phase {
        Phase::Idle => "idle".into(),
        Phase::Persisted(b) => format!("batch {} written, not handed over", b.id),
        Phase::HandedOver { batch, outcomes } => format!(
            "batch {} handed over, notified {} of {}",
            batch.id,
            outcomes.len(),
            batch.items.len()
        ),
        Phase::Down => "down".into(),
    }
}
