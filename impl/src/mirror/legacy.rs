//! The readers of the format's older versions (spec/mirror.md M14): a version 1 or 2 file is
//! read once, at the open that upgrades it, so serde's derived code reads each of its records
//! (all but the `park` and `dead` lines, which the fast path of `json.rs` reads in every
//! version), and each record becomes the one [`Record`] the state transition applies.

use serde::Deserialize;

use super::record::{GroupItem, Record};
use crate::line::Line;
use crate::types::{Attempt, BatchId, RequestId, Seq};

/// A record of a version 1 file (M14): as version 2 without the hand-over count, the group park
/// and the redrive. Read only, never written.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum RecordV1 {
    Park {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
    },
    Dead {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
    },
    Batch {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<Seq>,
        remaining: usize,
    },
    Attempt {
        batch: BatchId,
        attempt: Attempt,
    },
    Settle {
        batch: BatchId,
        delivered: Vec<Seq>,
        failed: Vec<Seq>,
        dead: Vec<Seq>,
    },
    Next {
        seq: Seq,
        batch: BatchId,
    },
}

/// A record of a version 2 file (M14): version 3's records with seq lists as plain arrays, no
/// `close`, `discard` or `flight` record and no cap. Read only, by serde's derived code: a file is
/// read in this version once, at its upgrade, and nearly all its lines are `park` lines, which
/// `json.rs`'s fast path reads in every version.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum RecordV2 {
    Park {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
        handed: u64,
    },
    Dead {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
        handed: u64,
    },
    Parks {
        seq: Seq,
        items: Vec<GroupItem>,
    },
    Batch {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<Seq>,
        remaining: usize,
    },
    Attempt {
        batch: BatchId,
        attempt: Attempt,
    },
    Settle {
        batch: BatchId,
        delivered: Vec<Seq>,
        failed: Vec<Seq>,
        dead: Vec<Seq>,
    },
    Redrive {
        seqs: Vec<Seq>,
    },
    Next {
        seq: Seq,
        batch: BatchId,
    },
}

impl From<RecordV2> for Record {
    fn from(record: RecordV2) -> Record {
        match record {
            RecordV2::Park {
                seq,
                request,
                line,
                failures,
                handed,
            } => Record::Park {
                seq,
                request,
                line,
                failures,
                handed,
                at: None,
            },
            RecordV2::Dead {
                seq,
                request,
                line,
                failures,
                handed,
            } => Record::Dead {
                seq,
                request,
                line,
                failures,
                handed,
                at: None,
                died: None,
            },
            RecordV2::Parks { seq, items } => Record::Parks {
                seq,
                at: None,
                items,
            },
            RecordV2::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            },
            RecordV2::Attempt { batch, attempt } => Record::Attempt { batch, attempt },
            RecordV2::Settle {
                batch,
                delivered,
                failed,
                dead,
            } => Record::Settle {
                batch,
                delivered,
                failed,
                dead,
                at: None,
            },
            RecordV2::Redrive { seqs } => Record::Redrive {
                seqs,
                op: None,
                change: None,
            },
            RecordV2::Next { seq, batch } => Record::Next {
                seq,
                batch,
                cap: None,
                memory: None,
            },
        }
    }
}

//= spec/mirror.md#m14-upgrade-from-older-versions
//# A reader MUST read a version 1 file (this document's format without `handed`, `parks` and
//# `redrive`: version 1 `park` and `dead` records have exactly `seq, request, line, failures`) with
//# the same transition, each `park` and `dead` item with handed equal to its failure count, so the
//# `batch` and `attempt` records count the hand-overs the file still shows on top of those.
impl From<RecordV1> for Record {
    /// Version 1 recorded no hand-over count: a line that failed `f` times was handed over at
    /// least `f` times (D19's safe direction, an upper side never below the truth), and the
    /// batch and attempt records then count the hand-overs the file still shows on top.
    fn from(record: RecordV1) -> Record {
        match record {
            RecordV1::Park {
                seq,
                request,
                line,
                failures,
            } => Record::Park {
                seq,
                request,
                line,
                failures,
                handed: u64::from(failures),
                at: None,
            },
            RecordV1::Dead {
                seq,
                request,
                line,
                failures,
            } => Record::Dead {
                seq,
                request,
                line,
                failures,
                handed: u64::from(failures),
                at: None,
                died: None,
            },
            RecordV1::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            },
            RecordV1::Attempt { batch, attempt } => Record::Attempt { batch, attempt },
            RecordV1::Settle {
                batch,
                delivered,
                failed,
                dead,
            } => Record::Settle {
                batch,
                delivered,
                failed,
                dead,
                at: None,
            },
            RecordV1::Next { seq, batch } => Record::Next {
                seq,
                batch,
                cap: None,
                memory: None,
            },
        }
    }
}
