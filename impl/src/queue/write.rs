//! The queue's writes, fail-stop (M10): a record checked, appended and fsynced, or the log
//! compacted through the temp file (M5, M12); the identity of the mirror checked after each.

use std::io;
use std::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::io::storage::{Identity, Storage};
use crate::mirror::{self, MirrorState, Record};
use crate::observe;
use crate::types::Batch;

use super::{Queue, REMOVED};

impl<S: Storage> Queue<S> {
    pub(super) fn check_poison(&self) -> Result<()> {
        //= spec/mirror.md#m10-fail-stop
        //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
        //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed
        //# fsync.
        match &self.poisoned {
            None => Ok(()),
            Some(what) if what == REMOVED => Err(Error::new(
                ErrorKind::Poisoned,
                "the mirror was removed by this handle; reopen to start a new one",
            )
            .with_path(self.path())),
            Some(what) => Err(Error::new(
                ErrorKind::Poisoned,
                format!("an earlier {what} failed; reopen the queue to learn what the mirror kept"),
            )
            .with_path(self.path())),
        }
    }

    /// M10: the first failed write poisons the handle; the fsync is never retried.
    pub(super) fn poison(&mut self, what: &str, name: &str, e: io::Error) -> Error {
        //= spec/delivery.md#d16-durable-park
        //# After a failed write or fsync the handle MUST refuse further work until reopened
        //# (`Poisoned`; see `mirror.md`).
        //= spec/mirror.md#m10-fail-stop
        //# After any failed append, fsync, rename or directory fsync, the handle MUST refuse every
        //# further call with `Poisoned` until the mirror is reopened; it MUST NOT retry a failed
        //# fsync.
        if crate::io::storage::is_reopen_failure(&e) {
            //= spec/mirror.md#m16-a-store-of-sessions
            //# A session whose mirror cannot be opened again after its descriptor was closed
            //# MUST fail the call with `Reopen`, having written nothing, and stay usable.
            return Error::new(
                ErrorKind::Reopen,
                format!("{what} not started: the session's mirror could not be opened again"),
            )
            .with_source(e)
            .with_path(self.storage.path(name));
        }
        observe::poisoned(&self.storage, name, what, &e);
        self.poisoned = Some(what.to_owned());
        self.publish();
        Error::io(
            format!("{what} failed; the queue refuses further work until reopened"),
            e,
        )
        .with_path(self.storage.path(name))
    }

    /// The write path of every planned record: checked against the current state, then appended
    /// and fsynced (M4), then applied. The check comes first so that a planning bug is an error
    /// that writes nothing, not a durable record the next open would report as `Corrupt`.
    pub(crate) fn append_checked(&mut self, record: Option<&Record>) -> Result<()> {
        let Some(record) = record else {
            return Ok(());
        };
        self.check_planned(record)?;
        self.append_durable(&mirror::encode_record(record))?;
        self.core.commit(record);
        self.publish();
        Ok(())
    }

    /// The write path of a settle, a redrive or a discard (M12): checked, then appended, or,
    /// when a compaction is due ([`Queue::snapshot_due`]), the snapshot of the state after it
    /// written whole instead (M5); then applied. These records have no counterpart in the
    /// snapshot and may shrink it, so each decides.
    pub(super) fn append_or_compact(&mut self, record: &Record) -> Result<()> {
        self.check_planned(record)?;
        // Encoded once: its length decides, and the same bytes are appended when it does not
        // compact (a 10,000-line settle names 10,000 seqs).
        let encoded = mirror::encode_record(record);
        let grown = self.log_bytes + encoded.len() as u64;
        let floor = self.core.snapshot_bytes_floor_after(record);
        match self.snapshot_due(record, grown, floor) {
            Some(bytes) => self.compact_or_defer(&bytes, &encoded)?,
            None => self.append_durable(&encoded)?,
        }
        self.core.commit_with_floor(record, floor);
        self.publish();
        Ok(())
    }

    /// The snapshot of the state after `record` when M12 makes a compaction due, the log with the
    /// record being `grown` bytes and the new state's lines `floor` bytes; `None` when the record
    /// is to be appended.
    pub(super) fn snapshot_due(&self, record: &Record, grown: u64, floor: u64) -> Option<Vec<u8>> {
        //= spec/mirror.md#m12-compaction
        //# A `settle`, `redrive` or `discard` MUST NOT compact for this rule: the turn boundary
        //# pays only for the rule above.
        let slack = self.core.config.compact_slack_bytes;
        // The floor of the state after the record never exceeds its snapshot, so this skips
        // only records the exact rule below would not compact either, without encoding the
        // state every time. It must be the state after: the state before a settle still holds
        // the batch, whose delivered lines are exactly what makes compaction due.
        //= spec/mirror.md#m12-compaction
        //# (An implementation MAY skip computing the exact snapshot when a lower bound of the new
        //# snapshot's length already shows no compaction is due; parkline uses the bytes of the
        //# lines the new state holds.)
        if grown <= floor.saturating_mul(2).saturating_add(slack) {
            return None;
        }
        //= spec/mirror.md#m12-compaction
        //# The decision MUST be made on the new state: the state before the settle still holds
        //# the batch, and the batch's delivered lines are exactly what makes compaction due.
        let mut next = state_to_apply(&self.core.state, record);
        next.apply_checked(record);
        let bytes = mirror::encode(&next);
        //= spec/mirror.md#m12-compaction
        //# At a `settle` (and a `redrive`, below), when the log with the new record would be
        //# longer than twice the snapshot of the **new state** (the state after the settle)
        //# plus the slack (`Config::compact_slack_bytes`, default `COMPACT_SLACK_BYTES`, 4
        //# MiB), the queue MUST write that snapshot instead of appending the settle record,
        //# through M5 (temp file, fsync, rename, directory fsync).
        let due = grown > (bytes.len() as u64).saturating_mul(2).saturating_add(slack);
        due.then_some(bytes)
    }

    /// M12 at rest: when the state is drained and the log is longer than its snapshot plus the
    /// rest slack, the snapshot written through M5; a full disk defers it (M10). Writes nothing
    /// otherwise.
    pub(super) fn compact_at_rest(&mut self) -> Result<()> {
        let rest_slack = self.core.config.rest_slack_bytes;
        // A snapshot is never empty, so a log within the rest slack needs no encoding.
        if !self.core.state.is_drained() || self.log_bytes <= rest_slack {
            return Ok(());
        }
        let bytes = mirror::encode(&self.core.state);
        //= spec/mirror.md#m12-compaction
        //# At an idle call (`Queue::idle`) that finds the state drained, when the log is longer
        //# than the snapshot of the state plus the rest slack (`Config::rest_slack_bytes`,
        //# default `REST_SLACK_BYTES`, 64 KiB), the queue MUST write that snapshot through M5.
        let over = self.log_bytes > (bytes.len() as u64).saturating_add(rest_slack);
        if over && self.compact(&bytes)? {
            debug_assert_eq!(self.log_bytes, bytes.len() as u64);
        }
        Ok(())
    }

    /// Writes the snapshot `bytes` through M5, or, when the temp file cannot be written or
    /// fsynced (a full disk), abandons the compaction and appends the record `encoded` instead.
    pub(super) fn compact_or_defer(&mut self, bytes: &[u8], encoded: &[u8]) -> Result<()> {
        if self.compact(bytes)? {
            return Ok(());
        }
        //= spec/mirror.md#m10-fail-stop
        //# A compaction whose temp file cannot be written or fsynced MUST be abandoned without
        //# poisoning the handle: the temp file removed (a failed removal poisons), then the
        //# record appended to the mirror as if no compaction were due.
        let len_before = self.log_bytes;
        self.append_durable(encoded)?;
        debug_assert_eq!(self.log_bytes, len_before + encoded.len() as u64);
        Ok(())
    }

    /// Writes the snapshot `bytes` through M5: `true` once the mirror is `bytes`, `false` when
    /// the compaction was abandoned for want of space (the temp file removed, nothing else
    /// touched).
    fn compact(&mut self, bytes: &[u8]) -> Result<bool> {
        let Err((what, e)) = self.write_temp(bytes) else {
            let bytes_before = self.log_bytes;
            self.rename_temp(bytes, true)?;
            self.stats.compactions += 1;
            observe::compacted(&self.storage, &self.name, bytes_before, self.log_bytes);
            self.publish();
            return Ok(true);
        };
        let tmp = self.tmp.clone();
        //= spec/mirror.md#m10-fail-stop
        //# Only a full disk (`ENOSPC`, `EDQUOT`) or a full descriptor table (`EMFILE`, `ENFILE`)
        //# defers a compaction; any other failure to write or fsync the temp file MUST poison
        //# the handle.
        if !for_want_of_space(&e) {
            return Err(self.poison(what, &tmp, e));
        }
        // The temp file may hold part of the snapshot; the next compaction must not append to it.
        if let Err(removal) = self.storage.remove(&tmp)
            && removal.kind() != io::ErrorKind::NotFound
        {
            return Err(self.poison(what, &tmp, e));
        }
        self.stats.compactions_deferred += 1;
        observe::compaction_deferred(&self.storage, &self.name, what, &e);
        self.publish();
        Ok(false)
    }

    /// A planned record the mirror rules reject poisons the handle: the plan came from a state
    /// this handle can no longer trust, while the file still holds only good records.
    pub(super) fn check_planned(&mut self, record: &Record) -> Result<()> {
        //= spec/mirror.md#m3-records-and-the-state-transition
        //# The writer MUST check every record it planned against its current state BEFORE appending
        //# it: a record the check rejects is a bug in the planning, which fails the call with
        //# `ErrorKind::Internal`, poisons the handle and writes nothing, so the file never holds a
        //# record the next open would reject as `Corrupt`.
        let Err(reason) = self.core.state.check(record) else {
            return Ok(());
        };
        let what = "check of a planned record";
        observe::poisoned(&self.storage, &self.name, what, &reason);
        self.poisoned = Some(what.to_owned());
        Err(Error::new(
            ErrorKind::Internal,
            format!("planned record rejected by the mirror rules, nothing written: {reason}"),
        )
        .with_path(self.path()))
    }

    /// Appends one checked record, encoded (`bytes`), and fsyncs the mirror (M4).
    pub(super) fn append_durable(&mut self, bytes: &[u8]) -> Result<()> {
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# The queue MUST consider a write durable only after an `fsync` of the file
        //# (`Storage::sync`),
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# The number of fsyncs of an operation MUST NOT depend on the number of items: a boundary
        //# costs a bounded number of fsyncs whatever the batch size, because fsyncs dominate the
        //# cost and a large backlog is exactly when batching must stay cheap.
        let name = self.name.clone();
        if let Err(e) = self.storage.append(&name, bytes) {
            return Err(self.poison("append", &name, e));
        }
        if let Err(e) = self.timed(|storage| storage.sync(&name), false) {
            return Err(self.poison("fsync", &name, e));
        }
        self.stats.appends += 1;
        self.check_identity()?;
        self.log_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Fails with `Io` and poisons unless the mirror's name still leads to the file this handle
    /// wrote (M8): one `stat` before each acknowledgement.
    pub(super) fn check_identity(&mut self) -> Result<()> {
        //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
        //# Before it acknowledges a write, the queue MUST check that the mirror's name still
        //# leads to the file it wrote (device and inode, `Storage::identity`), and otherwise fail
        //# with `Io` and poison the handle (M10).
        let name = self.name.clone();
        let lost = match self.storage.identity(&name) {
            Ok(Identity::Same) => return Ok(()),
            Ok(Identity::Gone) => io::Error::new(
                io::ErrorKind::NotFound,
                "the mirror was unlinked or renamed away (or its directory was) while this handle \
                 had it open",
            ),
            Ok(_) => io::Error::other(
                "the mirror's name leads to another file than the one this handle wrote",
            ),
            Err(e) => e,
        };
        Err(self.poison("identity check", &name, lost))
    }

    /// Runs one fsync (`dir`: of the directory) and counts it and its duration in the stats.
    pub(super) fn timed(
        &mut self,
        sync: impl FnOnce(&mut S) -> io::Result<()>,
        dir: bool,
    ) -> io::Result<()> {
        let start = Instant::now();
        let result = sync(&mut self.storage);
        let took = start.elapsed();
        if dir {
            self.stats.dir_fsyncs += 1;
        } else {
            self.stats.fsyncs += 1;
        }
        self.stats.fsync_last = took;
        self.stats.fsync_max = self.stats.fsync_max.max(took);
        self.stats.fsync_durations.record(took);
        result
    }

    /// Replaces the mirror by `bytes`: temp file, fsync, rename, directory fsync (M5); without
    /// the directory fsync when `sync_dir` is false, for a caller that makes one for many
    /// creates before it hands any queue out (`Store::start`, M16).
    pub(super) fn replace_durable(&mut self, bytes: &[u8], sync_dir: bool) -> Result<()> {
        //= spec/delivery.md#d16-durable-park
        //# and the directory fsynced whenever a file was created, renamed or removed on the way.
        //= spec/mirror.md#m4-durability-only-through-fsync-one-fsync-per-operation
        //# and a create, rename or remove durable only after an `fsync` of the directory
        //# (`Storage::sync_dir`);
        //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
        //# Whenever the queue writes a whole mirror (creating a new one, or compacting, M12) it
        //# MUST: write the complete content to `<name>.tmp` (created with mode 0600), fsync it,
        //# rename it over `<name>`, and fsync the directory; only then is the new file durable.
        if let Err((what, e)) = self.write_temp(bytes) {
            let tmp = self.tmp.clone();
            return Err(self.poison(what, &tmp, e));
        }
        self.rename_temp(bytes, sync_dir)
    }

    /// Writes `bytes` to the temp file and fsyncs it: the half of M5 that touches nothing the
    /// mirror holds.
    pub(super) fn write_temp(
        &mut self,
        bytes: &[u8],
    ) -> std::result::Result<(), (&'static str, io::Error)> {
        let tmp = self.tmp.clone();
        self.storage
            .append(&tmp, bytes)
            .map_err(|e| ("temp file write", e))?;
        self.timed(|storage| storage.sync(&tmp), false)
            .map_err(|e| ("temp file fsync", e))
    }

    /// Renames the written temp file over the mirror and fsyncs the directory: the half of M5
    /// after which the mirror is `bytes`.
    pub(super) fn rename_temp(&mut self, bytes: &[u8], sync_dir: bool) -> Result<()> {
        let (name, tmp) = (self.name.clone(), self.tmp.clone());
        if let Err(e) = self.storage.rename(&tmp, &name) {
            return Err(self.poison("rename", &name, e));
        }
        if sync_dir && let Err(e) = self.timed(|storage| storage.sync_dir(), true) {
            return Err(self.poison("directory fsync", &name, e));
        }
        self.check_identity()?;
        self.log_bytes = bytes.len() as u64;
        Ok(())
    }
}

/// Whether `e` says the disk or the descriptor table is full: the failures a compaction waits
/// out (M10), where anything else (a directory renamed away, a planted temp file) is a fault.
pub(super) fn for_want_of_space(e: &io::Error) -> bool {
    use rustix::io::Errno;
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) || [Errno::MFILE, Errno::NFILE]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

/// A copy of `state` that `record` can be applied to, giving the same state as applying it to
/// `state` itself. For a settle, the in-flight lines it delivers are left out of the copy, since
/// applying the settle drops them anyway: the compaction decision of a 10,000-line boundary no
/// longer clones 10,000 lines it is about to discard.
pub(crate) fn state_to_apply(state: &MirrorState, record: &Record) -> MirrorState {
    // D3: a settle's delivered lines join the remembered window, which needs them.
    let Record::Settle { delivered, .. } = record else {
        return state.clone();
    };
    if state.memory > 0 {
        return state.clone();
    }
    let in_flight = state.in_flight.as_ref().map(|batch| {
        // A planned settle lists its seqs in item order (D17): one merge walk.
        let items = crate::engine::core::named_in_order(&batch.items, delivered)
            .filter(|(_, named)| !named)
            .map(|(item, _)| item.clone())
            .collect();
        Batch {
            id: batch.id,
            attempt: batch.attempt,
            items,
            remaining: batch.remaining,
            seen: batch.seen,
        }
    });
    MirrorState {
        parked: state.parked.clone(),
        in_flight,
        dead_letters: state.dead_letters.clone(),
        next_seq: state.next_seq,
        next_batch: state.next_batch,
        cap: state.cap,
        remembered: state.remembered.clone(),
        memory: state.memory,
        ops: state.ops.clone(),
        life: state.life,
    }
}
