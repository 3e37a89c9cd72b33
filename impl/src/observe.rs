//! The `tracing` events and spans an operator reads in the daemon's log, one function each.
//!
//! Every function takes what its event names by reference or by copy (the mirror as its storage
//! and name, its path built only for an event; every event and span of a mirror carries its path
//! and its session's name) and, without the `tracing` feature, does nothing
//! with it, so the protocol code calls the same functions either way and
//! compiles to the same thing: the feature adds events, never a branch of the protocol. Events
//! carry fields, and those that ask for an operator (a dead letter, a closed batch, a poisoning)
//! a message in words too; the event's name is its first word (`parkline::opened`), its target
//! `parkline`.

use std::path::{Path, PathBuf};

use crate::mirror::MirrorState;
use crate::types::Batch;

/// What knows the path of a file by its name: the mirror's storage, whose path an event builds
/// only when it is emitted.
pub(crate) trait Paths {
    /// The path of the file `name`.
    #[cfg_attr(
        not(feature = "tracing"),
        expect(dead_code, reason = "only an emitted event builds a path")
    )]
    fn path(&self, name: &str) -> PathBuf;
}

/// The file name suffix of a store session's mirror: session `s966` is `s966.mirror` (M16).
pub(crate) const SESSION_SUFFIX: &str = ".mirror";

/// The name of the session whose mirror is `name`: a store session's name, or the mirror's file
/// name less its `.mirror`.
#[cfg(feature = "tracing")]
fn session_of(name: &str) -> &str {
    name.strip_suffix(SESSION_SUFFIX).unwrap_or(name)
}

/// Where a line became a dead letter.
#[cfg(feature = "tracing")]
#[derive(Clone, Copy, Debug)]
pub(crate) enum DeadBy {
    /// Its failure count reached `failures_max` at a settle (D8).
    Failures,
    /// The repeat bound closed its batch, which held it alone (D10).
    Repeats,
}

/// A mirror opened: what it holds (and, for an existing one, recovered), at info.
pub(crate) fn opened<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    created: bool,
    version: u64,
    state: &MirrorState,
    bytes: u64,
) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        name: "parkline::opened",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        created,
        version,
        parked = state.parked.len(),
        in_flight = state.in_flight.as_ref().map_or(0, |batch| batch.items.len()),
        dead_letters = state.dead_letters.len(),
        bytes,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, created, version, state, bytes);
}

/// A torn final append cut at `offset` (M7), at warn: a write was cut short by a crash.
pub(crate) fn torn_tail_cut<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    offset: u64,
    torn_bytes: u64,
) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        name: "parkline::torn_tail_cut",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        offset,
        torn_bytes,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, offset, torn_bytes);
}

/// A mirror of an older version rewritten as the current one (M14), at info.
pub(crate) fn upgraded<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    from_version: u64,
    to_version: u64,
) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        name: "parkline::upgraded",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        from_version,
        to_version,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, from_version, to_version);
}

/// A compaction (M12): the log of `bytes_before` rewritten as a snapshot of `bytes_after`, at
/// info.
pub(crate) fn compacted<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    bytes_before: u64,
    bytes_after: u64,
) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        name: "parkline::compacted",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        bytes_before,
        bytes_after,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, bytes_before, bytes_after);
}

/// A compaction abandoned for want of space (M10), the record appended instead, at warn: the
/// disk or the descriptor table is full.
pub(crate) fn compaction_deferred<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    operation: &str,
    cause: &std::io::Error,
) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        name: "parkline::compaction_deferred",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        operation,
        cause = %cause,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, operation, cause);
}

/// The handle poisoned (M10): the `operation` that failed and why, at error.
pub(crate) fn poisoned<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    operation: &str,
    cause: &dyn std::fmt::Display,
) {
    #[cfg(feature = "tracing")]
    tracing::error!(
        name: "parkline::poisoned",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        operation,
        cause = %cause,
        "the session's {operation} failed: it refuses every call until it is reopened, which \
         reads what the mirror kept",
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, operation, cause);
}

/// What a batch the repeat bound is about to close holds: read before its `close` record is
/// applied, told once the record is durable (`closed`). Empty without the feature.
#[derive(Debug)]
pub(crate) struct Closing {
    #[cfg(feature = "tracing")]
    batch: Option<(Batch, u32)>,
}

impl Closing {
    /// The in-flight `batch` of a queue whose repeat bound is `repeats_max`.
    pub(crate) fn of(batch: Option<&Batch>, repeats_max: u32) -> Closing {
        #[cfg(not(feature = "tracing"))]
        let _ = (batch, repeats_max);
        Closing {
            #[cfg(feature = "tracing")]
            batch: batch.map(|batch| (batch.clone(), repeats_max)),
        }
    }

    /// The batch closed (D10) in the mirror `name`, at warn, and its single line, if it held
    /// one, dead-lettered.
    pub(crate) fn closed<S: Paths + ?Sized>(self, storage: &S, name: &str) {
        #[cfg(feature = "tracing")]
        if let Some((batch, repeats_max)) = self.batch {
            tracing::warn!(
                name: "parkline::batch_closed",
                target: "parkline",
                path = %storage.path(name).display(),
                session = session_of(name),
                batch = batch.id.0,
                attempt = batch.attempt.0,
                repeats_max,
                items = batch.items.len(),
                "a batch was handed over {repeats_max} times without a settle: closed",
            );
            if let [item] = batch.items.as_slice() {
                dead_lettered(storage, name, item, DeadBy::Repeats);
            }
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (storage, name);
    }
}

/// Each of `seqs` that is a dead letter of `state` now, dead-lettered by a settle in the mirror
/// `name`.
pub(crate) fn dead_after_settle<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    state: &MirrorState,
    seqs: &[crate::types::Seq],
) {
    #[cfg(feature = "tracing")]
    for seq in seqs {
        let dead = &state.dead_letters;
        if let Ok(at) = dead.binary_search_by_key(seq, |item| item.seq) {
            dead_lettered(storage, name, &dead[at], DeadBy::Failures);
        }
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, state, seqs);
}

/// A line moved to the dead letters (D8), at warn: it needs an operator's redrive or discard.
#[cfg(feature = "tracing")]
fn dead_lettered<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    item: &crate::types::Item,
    by: DeadBy,
) {
    let session = session_of(name);
    tracing::warn!(
        name: "parkline::dead_lettered",
        target: "parkline",
        path = %storage.path(name).display(),
        session,
        seq = item.seq.0,
        request = item.request.0,
        failures = item.failures,
        handed = item.handed,
        by = ?by,
        "request {} of session {session} is a dead letter (seq {}); `parkline redrive` or \
         `parkline discard` it",
        item.request.0,
        item.seq.0,
    );
}

/// A second handle refused the mirror's lock (M8), at warn: two daemons on one session.
pub(crate) fn lock_refused(lock_path: &Path) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        name: "parkline::lock_refused",
        target: "parkline",
        path = %lock_path.display(),
    );
    #[cfg(not(feature = "tracing"))]
    let _ = lock_path;
}

/// A group commit's write (D22) to the mirror `name`: how many parks (`units`) and lines one
/// record held, at debug.
pub(crate) fn group_written<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    units: usize,
    lines: impl FnOnce() -> usize,
) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        name: "parkline::group_written",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        units,
        lines = lines(),
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, units, lines);
}

/// An entered span, left when dropped; empty without the feature.
#[derive(Debug)]
pub(crate) struct Entered {
    #[cfg(feature = "tracing")]
    _span: tracing::span::EnteredSpan,
}

/// The span of one `boundary` call on the mirror `name`, at debug.
pub(crate) fn boundary<S: Paths + ?Sized>(storage: &S, name: &str, budget: usize) -> Entered {
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, budget);
    Entered {
        #[cfg(feature = "tracing")]
        _span: tracing::debug_span!(
            target: "parkline",
            "boundary",
            path = %storage.path(name).display(),
            session = session_of(name),
            budget
        )
        .entered(),
    }
}

/// The span of one `settle` call on the mirror `name`, at debug.
pub(crate) fn settle<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    batch: u64,
    outcomes: usize,
) -> Entered {
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, batch, outcomes);
    Entered {
        #[cfg(feature = "tracing")]
        _span: tracing::debug_span!(
            target: "parkline",
            "settle",
            path = %storage.path(name).display(),
            session = session_of(name),
            batch,
            outcomes
        )
        .entered(),
    }
}

/// An operator request applied from the request file (M17), at info.
pub(crate) fn request_applied<S: Paths + ?Sized>(
    storage: &S,
    name: &str,
    applied: &crate::ops::request::Applied,
) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        name: "parkline::request_applied",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        id = %applied.id,
        verb = applied.verb.name(),
        answer = ?applied.answer,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, applied);
}

/// The request file could not be read or parsed (M17), at warn: none of it was applied.
pub(crate) fn requests_unreadable<S: Paths + ?Sized>(storage: &S, name: &str, reason: &str) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        name: "parkline::requests_unreadable",
        target: "parkline",
        path = %storage.path(name).display(),
        session = session_of(name),
        reason,
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (storage, name, reason);
}
