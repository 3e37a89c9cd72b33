//! A step of an ops path told in the spec's words ([`OpsModel::narrate`]), which `parkline check`
//! prints for every step of a counterexample.

use std::fmt::Display;

use super::model::{
    Change, OperatorPhase, OpsAction, OpsModel, OpsState, Record, RequestId, Submitted,
};
use super::variants::OpsVariant;

fn list<T: Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|item| item.to_string()).collect();
    if items.is_empty() {
        "nothing".into()
    } else {
        items.join(", ")
    }
}

/// A record as the mirror shows it: its id, the change when it is not the first, and a refusal.
fn record(r: &Record) -> String {
    let mut text = match r.id {
        Some(id) => format!("{id}"),
        None => format!("(change of {}, no id)", r.change_of),
    };
    if r.change != Change(0) {
        text.push_str(&format!(" (change {})", r.change));
    }
    if !r.made {
        text.push_str(&format!(" (refused: {})", r.named));
    }
    text
}

fn mirror(state: &OpsState) -> String {
    let durable: Vec<String> = state.durable.iter().map(record).collect();
    let volatile: Vec<String> = state.volatile.iter().map(record).collect();
    format!(
        "mirror durable [{}], volatile [{}]",
        durable.join(", "),
        volatile.join(", ")
    )
}

/// What a command's look read, after it.
fn looked(after: &OpsState, id: RequestId) -> String {
    match &after.operator(id).look {
        Some(look) => format!(
            "it reads the mirror lock-free: {}, window {}{}",
            look.life,
            list(look.window.iter()),
            if look.window.is_empty() {
                ""
            } else {
                ", which it fsyncs"
            }
        ),
        None => "it reads the mirror lock-free".into(),
    }
}

impl OpsModel {
    /// One step of a path in the spec's words: what `action` did from `before` to `after`.
    pub fn narrate(&self, before: &OpsState, action: &OpsAction, after: &OpsState) -> String {
        match action {
            OpsAction::Stat if self.variant == OpsVariant::StampAfterRead => {
                "the daemon takes the request file's stat stamp after reading it".into()
            }
            OpsAction::Stat => {
                "the daemon's stat of the request file differs from its stamp: it keeps the new stamp"
                    .into()
            }
            OpsAction::Read => format!(
                "the daemon reads the request file: {}",
                list(after.daemon.read.iter())
            ),
            OpsAction::Apply => match after.daemon.unsynced {
                Some(r @ Record { id: Some(id), .. }) if !r.made => format!(
                    "the daemon refuses {id}: it names {}, not the mirror's {}; one record names \
                     {id} and changes nothing (volatile)",
                    r.named, after.life
                ),
                Some(r @ Record { id: Some(id), .. }) if r.named != after.life => format!(
                    "the daemon applies {id}, which names {}, to the mirror of {}: one record \
                     makes the change and names {id} (volatile)",
                    r.named, after.life
                ),
                Some(Record { id: Some(id), .. }) => format!(
                    "the daemon applies {id}: one record makes the change and names {id} (volatile)"
                ),
                Some(Record { change_of, .. }) => format!(
                    "the daemon applies {change_of}: its record makes the change but names no id, \
                     {change_of} is kept in memory (volatile)"
                ),
                None => "the daemon applies a request".into(),
            },
            OpsAction::Sync => format!(
                "the daemon fsyncs the mirror and takes its record into its view ({}); {}",
                list(after.daemon.view.iter()),
                mirror(after)
            ),
            OpsAction::Crash { power_loss: false } => format!(
                "the daemon is killed: its memory is lost, the page cache keeps {} volatile \
                 record(s)",
                after.volatile.len()
            ),
            OpsAction::Crash { power_loss: true } => format!(
                "the machine loses power: the daemon's memory and {} volatile record(s) are lost; {}",
                before.volatile.len(),
                mirror(after)
            ),
            OpsAction::Open => format!(
                "the daemon opens the mirror: it fsyncs it and decodes its view: {}",
                list(after.daemon.view.iter())
            ),
            OpsAction::EndSession => {
                let waiting: Vec<String> = (0..after.operators.len())
                    .map(|n| RequestId(n as u8))
                    .filter(|&id| matches!(before.operator(id).phase, OperatorPhase::Waiting { .. }))
                    .map(|id| id.to_string())
                    .collect();
                let waits = match waiting.is_empty() {
                    true => String::new(),
                    false => format!(
                        "; the operators of {} wait for an answer of the ended session",
                        waiting.join(", ")
                    ),
                };
                format!(
                    "the session ends: the holder removes the request file, then the mirror; a new \
                     session of the name creates its mirror, with {}{waits}",
                    after.life
                )
            }
            OpsAction::Look(id) => {
                let operator = before.operator(*id);
                let who = match operator.phase {
                    OperatorPhase::Down => format!("operator {id} runs its command again"),
                    _ => format!("operator {id} starts a command"),
                };
                format!(
                    "{who} (id {id}, change {}): {}",
                    operator.change,
                    looked(after, *id)
                )
            }
            OpsAction::Reuse(id) => format!(
                "operator {id} runs a second command under id {id}, asking change {}: {}",
                after.operator(*id).change,
                looked(after, *id)
            ),
            OpsAction::Submit(id) => self.narrate_submit(before, *id, after),
            OpsAction::Poll(id) if self.poll_refuses(before, *id) => format!(
                "operator {id} reads the mirror lock-free and finds {id} answered for change {}, \
                 not the change {} it asked: it fsyncs the mirror and refuses (the id names \
                 another change); {}",
                before.record_of(*id).map_or(Change(0), |r| r.change),
                before.operator(*id).change,
                mirror(after)
            ),
            OpsAction::Poll(id) if self.variant == OpsVariant::AnswerBeforeDurable => format!(
                "operator {id} reads the mirror lock-free, finds {id} and answers without an \
                 fsync; {}",
                mirror(after)
            ),
            OpsAction::Poll(id) => {
                let asked = before.operator(*id).change;
                let found = before.record_of(*id).map_or(asked, |r| r.change);
                let which = match found == asked {
                    true => String::new(),
                    false => format!(" (answered for change {found}, it asked {asked})"),
                };
                format!(
                    "operator {id} reads the mirror lock-free, finds {id}{which}, fsyncs the \
                     mirror and answers; {}",
                    mirror(after)
                )
            }
            OpsAction::Prune(id) => {
                let how = if before.durable_window().contains(id) {
                    "its record is durable"
                } else {
                    "its record is only volatile"
                };
                format!(
                    "operator {id} removes {id} from the request file ({how}): {}",
                    list(after.file.iter())
                )
            }
            OpsAction::OperatorCrash(id) => format!("operator {id} crashes before answering"),
        }
    }

    fn narrate_submit(&self, before: &OpsState, id: RequestId, after: &OpsState) -> String {
        let change = before.operator(id).change;
        let Some(submitted) = self.submitted(before, id) else {
            return format!("operator {id} submits");
        };
        let look = before.operator(id).look.as_ref();
        let named = look.map(|l| l.life);
        let drops = look.is_some_and(|l| self.dropped(&before.file, l).len() < before.file.len());
        let dropped = match drops {
            true => ", dropping the requests its window answers",
            false => "",
        };
        match submitted {
            Submitted::Answered(found) if found == change => format!(
                "operator {id}'s command finds {id} answered for change {change} in the window it \
                 read: it reports that answer"
            ),
            Submitted::Answered(found) => format!(
                "operator {id}'s command finds {id} answered for change {found} in the window it \
                 read and reports that answer for change {change}"
            ),
            Submitted::Refused { answered } => format!(
                "operator {id}'s command asks change {change}, but {id} names {} request of \
                 another change: refused (the id names another change), nothing written",
                if answered { "an answered" } else { "a waiting" }
            ),
            Submitted::Pending => format!(
                "operator {id}'s command finds {id} waiting in the request file{dropped}: it waits \
                 for that one; the file: {}",
                list(after.file.iter())
            ),
            Submitted::Added => format!(
                "operator {id} adds {id} (change {change}, {}) to the request file{dropped}: {}",
                named.map_or_else(String::new, |l| l.to_string()),
                list(after.file.iter())
            ),
        }
    }
}
