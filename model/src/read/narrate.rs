//! A step of a read path told in the spec's words ([`ReadModel::narrate`]), which
//! `parkline check` prints for every step of a counterexample.

use super::model::{ReadAction, ReadModel, ReadState};
use super::reference::read_variant;

impl ReadModel {
    /// One step of a path in the spec's words.
    pub fn narrate(&self, before: &ReadState, action: &ReadAction, after: &ReadState) -> String {
        match action {
            ReadAction::Grow => format!(
                "the child works: partial turn {:?}",
                after.transcript.partial.as_deref().unwrap_or("")
            ),
            ReadAction::Complete => match after.transcript.turns.last() {
                Some(turn) => format!(
                    "turn {} completes (seq {}, {:?})",
                    turn.id, turn.seq, turn.text
                ),
                None => "a turn completes".into(),
            },
            ReadAction::Rewrite => format!(
                "the child rewrites its partial turn: {:?}",
                after.transcript.partial.as_deref().unwrap_or("")
            ),
            ReadAction::OpenRequest => "the child opens a request".into(),
            ReadAction::TerminateRequest(id) => format!("request {id} terminates"),
            ReadAction::Read(chars_max) => {
                let request = self.caller_read(before, *chars_max);
                match read_variant(&before.transcript, &request, self.variant) {
                    Ok(window) => format!(
                        "the caller reads with cursor at seq {} and chars_max {chars_max}; window ({} chars, next cursor at seq {}):\n{}",
                        before.cursor,
                        window.chars,
                        window
                            .next
                            .map_or("none".to_string(), |seq| seq.to_string()),
                        window.text
                    ),
                    Err(error) => format!(
                        "the caller reads with cursor at seq {} and chars_max {chars_max}: \
                         {error:?}; then at seq {}",
                        before.cursor, after.cursor
                    ),
                }
            }
            ReadAction::Resume(chars_max) => format!(
                "the caller lost its cursor and reads since:turn:{} with chars_max {chars_max}",
                self.resume_point(before)
                    .map_or("(none)", |turn| turn.id.as_str())
            ),
            ReadAction::Rebuild => format!(
                "the daemon restarts and rebuilds the transcript without its last turn ({} turns \
                 left, no partial turn); the caller keeps its cursor at seq {}",
                after.transcript.turns.len(),
                after.cursor
            ),
            ReadAction::ReadAtNeeded => {
                let needed = self.needed_budget(before);
                let narrated = self.narrate(before, &ReadAction::Read(needed), after);
                format!(
                    "the caller reads with no budget and is told it needs {needed}; it retries: {narrated}"
                )
            }
        }
    }
}
