//! The records of a mirror (spec/mirror.md M3) as the state transition applies them, whatever
//! version of the format spelled them: the one vocabulary the state, the writer and every reader
//! share, so it imports none of them.

use serde::{Deserialize, Serialize};

use crate::line::Line;
use crate::ops::request::{OpId, Verb};
use crate::types::{Attempt, BatchId, Ended, RequestId, Seq};

//= spec/mirror.md#m3-records-and-the-state-transition
//# Every record after the header is a JSON object with a `"type"` field and exactly the fields
//# below (a reader MUST reject unknown types and unknown fields).
/// One record after the header (M3), as the state transition applies it. Written in version 3's
/// spelling (`RecordV3`, and the `park`, `dead` and `parks` records by hand, byte for byte as
/// serde writes them); read by the `park`/`dead` fast path or by the derived enum of the file's
/// version. Its own derived `Serialize` is the oracle the tests hold the hand-written writer to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum Record {
    /// A parked line (written by `park`, and by snapshots with its counts), and when it was
    /// parked (version 4; D24).
    Park {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
        handed: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    /// A dead letter (written only by snapshots; settles move items there themselves), with when
    /// it was parked and when it died (version 4; D24).
    Dead {
        seq: Seq,
        request: RequestId,
        line: Line,
        failures: u32,
        handed: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        died: Option<u64>,
    },
    /// A group of lines parked together (`park_all`): seqs `seq`, `seq + 1`, ... in order. One
    /// record, so a torn append keeps none of them and a complete one all (D22).
    //= spec/delivery.md#d22-group-park
    //# A crash during the append MUST leave all of the group's lines parked or none of them.
    Parks {
        seq: Seq,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
        items: Vec<GroupItem>,
    },
    /// A batch persisted at a boundary: the first `seqs.len()` parked items move in flight, and
    /// each counts `attempt` more hand-overs (D19).
    Batch {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<Seq>,
        remaining: usize,
    },
    /// A recovered batch handed over again: its attempt and each item's hand-over count go up
    /// by one.
    Attempt { batch: BatchId, attempt: Attempt },
    /// The outcomes of the in-flight batch: each of its seqs in exactly one list; the delivered
    /// ones join the remembered window (D3), the dead ones died `at` (version 4; D24).
    Settle {
        batch: BatchId,
        delivered: Vec<Seq>,
        failed: Vec<Seq>,
        dead: Vec<Seq>,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    /// Dead letters moved back to the parked list at their seq's place, failures 0 (D21); with
    /// `op`, the operator request it applies (version 4; M17).
    Redrive {
        seqs: Vec<Seq>,
        #[serde(skip_serializing_if = "Option::is_none")]
        op: Option<OpId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
    },
    /// The counters (written by snapshots, so seqs and batch ids are never reused, M6), the
    /// batch cap (D11), and the size of the remembered window (version 4; D3).
    Next {
        seq: Seq,
        batch: BatchId,
        #[serde(skip_serializing_if = "Option::is_none")]
        cap: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        memory: Option<u64>,
    },
    /// The recovered batch is closed instead of handed over again (D10's repeat bound): its
    /// items go back to the parked list, or a single item to the dead letters (D8), and the cap
    /// becomes half its size (D11).
    Close {
        batch: BatchId,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    /// Dead letters removed from the mirror for good (D8, `Queue::discard`); they join the
    /// remembered window (D3); with `op`, the operator request it applies (version 4; M17).
    Discard {
        seqs: Vec<Seq>,
        #[serde(skip_serializing_if = "Option::is_none")]
        op: Option<OpId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
    },
    /// An operator request applied without a `redrive` or `discard` record (it moved nothing, or
    /// it was refused), or, in a snapshot, one entry of the applied window, oldest first: exactly
    /// one of `moved` and `refused` (version 4; M17).
    Op {
        op: OpId,
        verb: Verb,
        #[serde(skip_serializing_if = "Option::is_none")]
        change: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        moved: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// One entry of the remembered window (D3; version 4, written only by snapshots, oldest
    /// first).
    Done {
        request: RequestId,
        crc: u64,
        seq: Seq,
        #[serde(skip_serializing_if = "Option::is_none")]
        batch: Option<BatchId>,
        end: Ended,
    },
    /// The in-flight batch of a snapshot (M12): the parked items it names move in flight with
    /// their counts as they are. It names its items rather than taking a prefix of the parked
    /// list, so a snapshot expresses every state whatever the seqs around the batch.
    Flight {
        id: BatchId,
        attempt: Attempt,
        seqs: Vec<Seq>,
        remaining: usize,
    },
}

/// One line of a [`Record::Parks`] group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupItem {
    pub(crate) request: RequestId,
    pub(crate) line: Line,
}

impl Record {
    /// Whether the record uses a field or type version 4 added: a file of an older version
    /// holding one was not written by parkline (M2).
    pub(crate) fn is_version_4(&self) -> bool {
        match self {
            Record::Park { at, .. } | Record::Parks { at, .. } | Record::Close { at, .. } => {
                at.is_some()
            }
            Record::Dead { at, died, .. } => at.is_some() || died.is_some(),
            Record::Settle { at, .. } => at.is_some(),
            Record::Next { memory, .. } => memory.is_some(),
            Record::Redrive { op, .. } | Record::Discard { op, .. } => op.is_some(),
            Record::Done { .. } | Record::Op { .. } => true,
            _ => false,
        }
    }
}
