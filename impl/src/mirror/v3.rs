//! Version 3's spelling of the records (spec/mirror.md M3), the version this build writes: seq
//! lists as runs, the in-flight batch of a snapshot as one `flight` record. Serde's derived code
//! reads and writes it; [`RecordV3::of`] spells a record, [`RecordV3::resolve`] reads one back
//! against the state its runs index.

use serde::{Deserialize, Serialize};

use super::record::{GroupItem, Record};
use super::state::MirrorState;
use crate::line::Line;
use crate::runs;
use crate::types::{Attempt, BatchId, RequestId, Seq};

//= spec/mirror.md#m3-records-and-the-state-transition
//# Every record after the header is a JSON object with a `"type"` field and exactly the fields
//# below (a reader MUST reject unknown types and unknown fields).
/// One record as version 3 spells it: seq lists as runs (`runs.rs`), the in-flight batch of a
/// snapshot whole. Read by serde's derived code (the `park` and `dead` lines parkline writes by
/// `json.rs`'s fast path first), then resolved against the state (`RecordV3::resolve`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(super) enum RecordV3 {
    Park(ItemFields),
    Dead(ItemFields),
    Parks {
        seq: Seq,
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
    },
    Redrive {
        seqs: Vec<[u64; 2]>,
    },
    Discard {
        seqs: Vec<[u64; 2]>,
    },
    Close {
        batch: BatchId,
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
    },
}

/// An item with its counts, as `park` and `dead` records name it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ItemFields {
    seq: Seq,
    request: RequestId,
    line: Line,
    failures: u32,
    handed: u64,
}

impl ItemFields {
    /// The fields of a `park` or `dead` record, its line cloned.
    fn of(seq: Seq, request: RequestId, line: &Line, failures: u32, handed: u64) -> ItemFields {
        ItemFields {
            seq,
            request,
            line: line.clone(),
            failures,
            handed,
        }
    }
}

impl RecordV3 {
    /// The spelling of `record`.
    pub(super) fn of(record: &Record) -> RecordV3 {
        let runs = |seqs: &[Seq]| runs::runs_of(seqs);
        let item = ItemFields::of;
        match record {
            Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
            } => RecordV3::Park(item(*seq, *request, line, *failures, *handed)),
            Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
            } => RecordV3::Dead(item(*seq, *request, line, *failures, *handed)),
            Record::Parks { seq, items } => RecordV3::Parks {
                seq: *seq,
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
            } => RecordV3::Settle {
                batch: *batch,
                delivered: runs(delivered),
                failed: runs(failed),
                dead: runs(dead),
            },
            Record::Redrive { seqs } => RecordV3::Redrive { seqs: runs(seqs) },
            Record::Discard { seqs } => RecordV3::Discard { seqs: runs(seqs) },
            Record::Close { batch } => RecordV3::Close { batch: *batch },
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
            Record::Next { seq, batch, cap } => RecordV3::Next {
                seq: *seq,
                batch: *batch,
                cap: *cap,
            },
        }
    }

    /// The record, its runs turned into seqs: at most one more than the list they name holds
    /// in `state` (the in-flight batch for a settle, the parked list for a batch, the dead
    /// letters for a redrive or discard), so a file cannot make the reader build a longer list,
    /// and a record naming a seq the list lacks reaches the check, which says which.
    pub(super) fn resolve(self, state: &MirrorState) -> Result<Record, String> {
        let in_flight = state.in_flight.as_ref();
        let batch_len = in_flight.map_or(0, |batch| batch.items.len()) + 1;
        let dead_len = state.dead_letters.len() + 1;
        let parked_len = state.parked.len() + 1;
        Ok(match self {
            RecordV3::Park(item) => Record::Park {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
            },
            RecordV3::Dead(item) => Record::Dead {
                seq: item.seq,
                request: item.request,
                line: item.line,
                failures: item.failures,
                handed: item.handed,
            },
            RecordV3::Parks { seq, items } => Record::Parks { seq, items },
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
            } => Record::Settle {
                batch,
                delivered: runs::seqs_of(&delivered, batch_len)?,
                failed: runs::seqs_of(&failed, batch_len)?,
                dead: runs::seqs_of(&dead, batch_len)?,
            },
            RecordV3::Redrive { seqs } => Record::Redrive {
                seqs: runs::seqs_of(&seqs, dead_len)?,
            },
            RecordV3::Discard { seqs } => Record::Discard {
                seqs: runs::seqs_of(&seqs, dead_len)?,
            },
            RecordV3::Close { batch } => Record::Close { batch },
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
            RecordV3::Next { seq, batch, cap } => Record::Next { seq, batch, cap },
        })
    }
}
