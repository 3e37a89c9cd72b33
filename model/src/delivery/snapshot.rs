//! The model's own snapshot of a mirror (spec/mirror.md M12), written and read back without the
//! crate: the records a compaction writes, in format 3's order (every live item and dead letter
//! in seq order, then the in-flight batch named by its seqs, then the counters), or in format 2's
//! (the in-flight batch as a prefix of the parked list), which the known-bad
//! [`Variant::PrefixSnapshot`](super::Variant::PrefixSnapshot) writes. The remembered window
//! (issue 42) follows as one record per entry, oldest first, before the counters; the known-bad
//! [`Variant::ForgetAtCompaction`](super::Variant::ForgetAtCompaction) leaves it out. Reading
//! applies the records under the file's rules (M3, M6) and fails where a reader must refuse.

use super::reference::{Mirror, RefBatch, RefItem, RefRemembered};

/// One record of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Record {
    Park(RefItem),
    Dead(RefItem),
    /// Format 3: the named parked items go in flight, counts as they are.
    Flight {
        id: u64,
        attempt: u32,
        seqs: Vec<u64>,
        remaining: usize,
    },
    /// Format 2: the first `seqs.len()` parked items go in flight, each counting `attempt` more.
    Batch {
        id: u64,
        attempt: u32,
        seqs: Vec<u64>,
        remaining: usize,
    },
    /// An entry of the remembered window, appended to it.
    Remembered(RefRemembered),
    Next {
        seq: u64,
        batch: u64,
        cap: Option<u64>,
    },
}

/// The snapshot of `mirror`, in format 2's order when `format_2` is set, with its remembered
/// window unless `forget_window` is set.
fn records(mirror: &Mirror, format_2: bool, forget_window: bool) -> Vec<Record> {
    let mut items: Vec<Record> = mirror.dead.iter().cloned().map(Record::Dead).collect();
    let (before, after): (&[RefItem], &[RefItem]) = match (&mirror.in_flight, format_2) {
        (Some(batch), true) => mirror
            .parked
            .split_at(batch.remaining.min(mirror.parked.len())),
        _ => (&mirror.parked, &[]),
    };
    items.extend(before.iter().cloned().map(Record::Park));
    if let Some(batch) = &mirror.in_flight {
        let before_batch = |item: &RefItem| RefItem {
            handed: item.handed - u64::from(batch.attempt),
            ..item.clone()
        };
        let live = batch.items.iter();
        items.extend(live.map(|item| match format_2 {
            true => Record::Park(before_batch(item)),
            false => Record::Park(item.clone()),
        }));
    }
    let seq = |record: &Record| match record {
        Record::Park(item) | Record::Dead(item) => item.seq,
        _ => 0,
    };
    items.sort_by_key(seq);
    if let Some(batch) = &mirror.in_flight {
        let (id, attempt, remaining) = (batch.id, batch.attempt, batch.remaining);
        let seqs = batch.items.iter().map(|item| item.seq).collect();
        items.push(match format_2 {
            true => Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            },
            false => Record::Flight {
                id,
                attempt,
                seqs,
                remaining,
            },
        });
    }
    items.extend(after.iter().cloned().map(Record::Park));
    if !forget_window {
        items.extend(mirror.remembered.iter().copied().map(Record::Remembered));
    }
    items.push(Record::Next {
        seq: mirror.next_seq,
        batch: mirror.next_batch,
        cap: mirror.cap,
    });
    items
}

/// The mirror `records` rebuild from the empty one, or `None` where a reader refuses them: a
/// seq not above the ones before it (M6), a batch that is not a prefix of the parked list, a
/// flight naming a seq that is not parked.
fn read(records: Vec<Record>) -> Option<Mirror> {
    let mut mirror = Mirror {
        next_seq: 1,
        next_batch: 1,
        parked: Vec::new(),
        in_flight: None,
        dead: Vec::new(),
        cap: None,
        remembered: Vec::new(),
    };
    for record in records {
        match record {
            Record::Park(item) | Record::Dead(item) if item.seq < mirror.next_seq => return None,
            Record::Park(item) => {
                mirror.next_seq = item.seq + 1;
                mirror.parked.push(item);
            }
            Record::Dead(item) => {
                mirror.next_seq = item.seq + 1;
                mirror.dead.push(item);
            }
            Record::Flight {
                id,
                attempt,
                seqs,
                remaining,
            } => {
                let (items, parked): (Vec<RefItem>, Vec<RefItem>) =
                    std::mem::take(&mut mirror.parked)
                        .into_iter()
                        .partition(|item| seqs.contains(&item.seq));
                if items.len() != seqs.len() {
                    return None;
                }
                mirror.parked = parked;
                let seen = items
                    .iter()
                    .filter(|i| i.handed > u64::from(attempt))
                    .count();
                mirror.in_flight = Some(RefBatch {
                    id,
                    attempt,
                    items,
                    remaining,
                    seen,
                });
                mirror.next_batch = id + 1;
            }
            Record::Batch {
                id,
                attempt,
                seqs,
                remaining,
            } => {
                let prefix = mirror.parked.iter().take(seqs.len()).map(|item| item.seq);
                if mirror.parked.len() < seqs.len() || !prefix.eq(seqs.iter().copied()) {
                    return None;
                }
                let mut items: Vec<RefItem> = mirror.parked.drain(..seqs.len()).collect();
                let seen = items.iter().filter(|item| item.handed > 0).count();
                for item in &mut items {
                    item.handed += u64::from(attempt);
                }
                mirror.in_flight = Some(RefBatch {
                    id,
                    attempt,
                    items,
                    remaining,
                    seen,
                });
                mirror.next_batch = id + 1;
            }
            Record::Remembered(entry) => mirror.remembered.push(entry),
            Record::Next { seq, batch, cap } => {
                mirror.next_seq = seq;
                mirror.next_batch = batch;
                mirror.cap = cap;
            }
        }
    }
    Some(mirror)
}

/// M12: whether a compaction of `mirror` (its snapshot written and read back, in format 2's order
/// when `format_2` is set) gives `mirror` again.
pub fn snapshot_keeps(mirror: &Mirror, format_2: bool) -> bool {
    compacted(mirror, format_2, false).as_ref() == Some(mirror)
}

/// M12: the mirror a compaction of `mirror` leaves, its snapshot written (in format 2's order
/// when `format_2` is set, without the remembered window when `forget_window` is set) and read
/// back; `None` where the next open would refuse the snapshot.
pub fn compacted(mirror: &Mirror, format_2: bool, forget_window: bool) -> Option<Mirror> {
    read(records(mirror, format_2, forget_window))
}
