//! A step of an ops path told in the spec's words ([`OpsModel::narrate`]), which `parkline check`
//! prints for every step of a counterexample.

use super::model::{OpsAction, OpsModel, OpsState, Record, RequestId};
use super::variants::OpsVariant;

fn list(ids: impl IntoIterator<Item = RequestId>) -> String {
    let ids: Vec<String> = ids.into_iter().map(|id| id.to_string()).collect();
    if ids.is_empty() {
        "nothing".into()
    } else {
        ids.join(", ")
    }
}

fn mirror(state: &OpsState) -> String {
    let show = |r: &Record| match r.id {
        Some(id) => format!("{id}"),
        None => format!("(change of {}, no id)", r.change_of),
    };
    let durable: Vec<String> = state.durable.iter().map(show).collect();
    let volatile: Vec<String> = state.volatile.iter().map(show).collect();
    format!(
        "mirror durable [{}], volatile [{}]",
        durable.join(", "),
        volatile.join(", ")
    )
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
                list(after.daemon.read.iter().copied())
            ),
            OpsAction::Apply => match after.daemon.unsynced {
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
                list(after.daemon.view.iter().copied()),
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
                list(after.daemon.view.iter().copied())
            ),
            OpsAction::Submit(id) => format!(
                "operator {id} adds request {id} to the request file: {}",
                list(after.file.iter().copied())
            ),
            OpsAction::Poll(id) if self.variant == OpsVariant::AnswerBeforeDurable => format!(
                "operator {id} reads the mirror lock-free, finds {id} and answers without an \
                 fsync; {}",
                mirror(after)
            ),
            OpsAction::Poll(id) => format!(
                "operator {id} reads the mirror lock-free, finds {id}, fsyncs the mirror and \
                 answers; {}",
                mirror(after)
            ),
            OpsAction::Prune(id) => {
                let how = if before.durable_window().contains(id) {
                    "its record is durable"
                } else {
                    "its record is only volatile"
                };
                format!(
                    "operator {id} removes {id} from the request file ({how}): {}",
                    list(after.file.iter().copied())
                )
            }
            OpsAction::OperatorCrash(id) => format!("operator {id} crashes before answering"),
            OpsAction::Retry(id) => {
                if before.visible().contains(id) {
                    format!("operator {id} runs again with {id}: the mirror holds it, the answer")
                } else if before.file.contains(id) {
                    format!("operator {id} runs again with {id}: the file holds it, it waits")
                } else {
                    format!(
                        "operator {id} runs again with {id}: neither the mirror nor the file holds \
                         it, it adds it again: {}",
                        list(after.file.iter().copied())
                    )
                }
            }
        }
    }
}
