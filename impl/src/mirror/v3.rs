//! The spelling of versions 3 and 4 of the records (spec/mirror.md M3); this build writes 4:
//! seq lists as runs, the in-flight batch of a snapshot as one `flight` record. Version 4 adds
//! optional fields (times, D24; the remembered window's size) and the `done` record (D3), which
//! a version 3 file must not hold (`Record::is_version_4`). Serde's derived code
//! reads and writes it; [`RecordV3::of`] spells a record, [`RecordV3::resolve`] reads one back
//! against the state its runs index.

use serde::{Deserialize, Serialize};

use super::record::{GroupItem, Record};
use super::state::MirrorState;
use crate::line::Line;
use crate::ops::request::{OpId, Verb};
use crate::runs;
use crate::types::{Attempt, BatchId, Ended, RequestId, Seq};

//= spec/mirror.md#m3-records-and-the-state-transition
//# Every record after the header is a JSON object with a `"type"` field and exactly the fields
//# below (a reader MUST reject unknown types and unknown fields).
/// One record as version 3 spells it: seq lists as runs (`runs.rs`), the in-flight batch of a
/// snapshot whole. Read by serde's derived code (the `park` and `dead` lines parkline writes by
/// `json.rs`'s fast path first), then resolved against the state (`RecordV3::resolve`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum RecordV3 {
    Park(ItemFields),
    Dead(ItemFields),
    Parks {
        seq: Seq,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
        items: Vec<GroupItem>,
    },
    Batch {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<[u64; 2]>,
        remaining: usize,
    },
    Attempt {
        batch: BatchId,
        attempt: Attempt,
    },
    Settle {
        batch: BatchId,
        delivered: Vec<[u64; 2]>,
        failed: Vec<[u64; 2]>,
        dead: Vec<[u64; 2]>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    Redrive {
        seqs: Vec<[u64; 2]>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<OpId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
    },
    Discard {
        seqs: Vec<[u64; 2]>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<OpId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
    },
    Op {
        op: OpId,
        verb: Verb,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        moved: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    Close {
        batch: BatchId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    Flight {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<[u64; 2]>,
        remaining: usize,
    },
    Next {
        seq: Seq,
        batch: BatchId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory: Option<u64>,
    },
    Done {
        request: RequestId,
        crc: u64,
        seq: Seq,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        batch: Option<BatchId>,
        end: Ended,
    },
}

/// An item with its counts, as `park` and `dead` records name it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ItemFields {
    seq: Seq,
    request: RequestId,
    line: Line,
    failures: u32,
    handed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    died: Option<u64>,
}

impl RecordV3 {
    /// The spelling of `record`.
    pub(super) fn of(record: &Record) -> RecordV3 {
        let runs = |seqs: &[Seq]| runs::runs_of(seqs);
        match record {
            Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
                at,
            } => RecordV3::Park(ItemFields {
                seq: *seq,
                request: *request,
                line: line.clone(),
                failures: *failures,
                handed: *handed,
                at: *at,
                died: None,
            }),
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
                at,
                died,
            } => RecordV3::Dead(ItemFields {
                seq: *seq,
                request: *request,
                line: line.clone(),
                failures: *failures,
                handed: *handed,
                at: *at,
                died: *died,
            }),
            Record::Parks { seq, at, items } => RecordV3::Parks {
                seq: *seq,
                at: *at,
                items: items.clone(),
            },
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => RecordV3::Batch {
                id: *id,
                attempt: *attempt,
                seqs: runs(seqs),
                remaining: *remaining,
            },
            Record::Attempt { batch, attempt } => RecordV3::Attempt {
                batch: *batch,
                attempt: *attempt,
            },
            Record::Settle {
                batch,
                delivered,
                failed,
                dead,
                at,
            } => RecordV3::Settle {
                batch: *batch,
                delivered: runs(delivered),
                failed: runs(failed),
                dead: runs(dead),
                at: *at,
            },
            Record::Redrive { seqs, op, change } => RecordV3::Redrive {
                seqs: runs(seqs),
                op: op.clone(),
                change: *change,
            },
            Record::Discard { seqs, op, change } => RecordV3::Discard {
                seqs: runs(seqs),
                op: op.clone(),
                change: *change,
            },
            Record::Op {
                op,
                verb,
                change,
                moved,
                refused,
            } => RecordV3::Op {
                op: op.clone(),
                verb: *verb,
                change: *change,
                moved: *moved,
                refused: refused.clone(),
            },
            Record::Close { batch, at } => RecordV3::Close {
                batch: *batch,
                at: *at,
            },
            Record::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => RecordV3::Flight {
                id: *id,
                attempt: *attempt,
                seqs: runs(seqs),
                remaining: *remaining,
            },
            Record::Next {
                seq,
                batch,
                cap,
                memory,
            } => RecordV3::Next {
                seq: *seq,
                batch: *batch,
                cap: *cap,
                memory: *memory,
            },
            Record::Done {
                request,
                crc,
                seq,
                batch,
                end,
            } => RecordV3::Done {
                request: *request,
                crc: *crc,
                seq: *seq,
                batch: *batch,
                end: *end,
            },
        }
    }

    /// The record, its runs turned into seqs: at most one more than the list they name holds
    /// in `state` (the in-flight batch for a settle, the parked list for a batch, the dead
    /// letters for a redrive or discard), so a file cannot make the reader build a longer list,
    /// and a record naming a seq the list lacks reaches the check, which says which.
    pub(crate) fn resolve(self, state: &MirrorState) -> Result<Record, String> {
        let in_flight = state.in_flight.as_ref();
        let batch_len = in_flight.map_or(0, |batch| batch.items.len()) + 1;
        let dead_len = state.dead_letters.len() + 1;
        let parked_len = state.parked.len() + 1;
        Ok(match self {
            RecordV3::Park(item) if item.died.is_some() => {
                return Err(format!("parked seq {} has a time of death", item.seq));
            }
            RecordV3::Park(item) => Record::Park {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
                at: item.at,
            },
            RecordV3::Dead(item) => Record::Dead {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
                at: item.at,
                died: item.died,
            },
            RecordV3::Parks { seq, at, items } => Record::Parks { seq, at, items },
            RecordV3::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Batch {
                id,
                attempt,
                seqs: runs::seqs_of(&seqs, parked_len)?,
                remaining,
            },
            RecordV3::Attempt { batch, attempt } => Record::Attempt { batch, attempt },
            RecordV3::Settle {
                batch,
                delivered,
                failed,
                dead,
                at,
            } => Record::Settle {
                batch,
                delivered: runs::seqs_of(&delivered, batch_len)?,
                failed: runs::seqs_of(&failed, batch_len)?,
                dead: runs::seqs_of(&dead, batch_len)?,
                at,
            },
            RecordV3::Redrive { seqs, op, change } => Record::Redrive {
                seqs: runs::seqs_of(&seqs, dead_len)?,
                op,
                change,
            },
            RecordV3::Discard { seqs, op, change } => Record::Discard {
                seqs: runs::seqs_of(&seqs, dead_len)?,
                op,
                change,
            },
            RecordV3::Op {
                op,
                verb,
                change,
                moved,
                refused,
            } => Record::Op {
                op,
                verb,
                change,
                moved,
                refused,
            },
            RecordV3::Close { batch, at } => Record::Close { batch, at },
            RecordV3::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Flight {
                id,
                attempt,
                seqs: runs::seqs_of(&seqs, parked_len)?,
                remaining,
            },
            RecordV3::Next {
                seq,
                batch,
                cap,
                memory,
            } => Record::Next {
                seq,
                batch,
                cap,
                memory,
            },
            RecordV3::Done {
                request,
                crc,
                seq,
                batch,
                end,
            } => Record::Done {
                request,
                crc,
                seq,
                batch,
                end,
            },
        })
    }
}
