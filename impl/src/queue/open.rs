//! Opening a queue: the mirror read piece by piece and recovered, a leftover temp file
//! promoted or removed (M5), the first requests applied; and the decoding the store's listing
//! shares.

use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::engine::core::Core;
use crate::error::{Error, ErrorKind, Result};
use crate::io::storage::{Entry, Storage};
use crate::mirror::{self, Decoded, LogDecoder, MirrorState};
use crate::observe;
use crate::ops::request as ops;
use crate::types::Life;

use super::{Queue, Stats, Watch};

impl<S: Storage> Queue<S> {
    /// [`Queue::with_storage`]; `sync_dir` false leaves the directory fsync of a recovery to
    /// the caller, who makes one for many opens before it hands any queue out (M10).
    pub(crate) fn open_storage(
        mut storage: S,
        name: &str,
        config: Config,
        sync_dir: bool,
    ) -> Result<Self> {
        config.validate()?;
        crate::io::storage::check_mirror_name(name).map_err(|e| e.with_path(storage.path(name)))?;
        let tmp = format!("{name}.tmp");
        let tmp_path = storage.path(&tmp);
        //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
        //# A leftover `<name>.tmp` that is neither a regular file nor a symbolic link MUST fail
        //# the open with `InvalidPath` naming it, touching nothing.
        let leftover = match storage.entry(&tmp) {
            Ok(Some(kind @ (Entry::File | Entry::Link))) => Some(kind),
            Ok(None) => None,
            Ok(Some(_)) => {
                return Err(Error::new(
                    ErrorKind::InvalidPath,
                    "the temp file's name is taken by something that is neither a file nor a \
                     link; move it away",
                )
                .with_path(&tmp_path));
            }
            Err(e) => {
                return Err(
                    Error::io("cannot inspect the leftover temp file", e).with_path(&tmp_path)
                );
            }
        };
        let Some(decoded) = read_mirror(&mut storage, name)? else {
            if let Some(kind) = leftover
                && let Some(took) = promote_leftover(&mut storage, name, &tmp, kind)?
            {
                let mut queue = Queue::open_storage(storage, name, config, sync_dir)?;
                // The promotion's directory fsync came before the open's own: counted, but not
                // the last.
                queue.stats.dir_fsyncs += 1;
                queue.stats.fsync_max = queue.stats.fsync_max.max(took);
                return Ok(queue);
            }
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# **A request names its session's life.** A mirror MUST be created with a fresh life
            //# (`Life::fresh`: 64 random bits), written in its header (M2) and kept by every
            //# compaction.
            let state = MirrorState {
                memory: config.delivered_memory,
                life: Some(Life::fresh()),
                ..MirrorState::default()
            };
            // M17: a request file beside no mirror is left by a session that ended; its seqs
            // are not this one's.
            let stale = format!("{name}{}", ops::SUFFIX);
            match storage.remove(&stale) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    let path = storage.path(&stale);
                    return Err(Error::io("cannot remove a stale request file", e).with_path(&path));
                }
                _ => {}
            }
            let mut queue = Queue::unopened(storage, name, state, 0, config);
            // M5: the mirror appears whole (header and counters) or not at all.
            let bytes = mirror::encode(&queue.core.state);
            //= spec/mirror.md#m16-a-store-of-sessions
            //# `Store::start` MUST create each session the daemon expects that the directory does not
            //# hold under the same one directory fsync, and no created session's own.
            if let Err(e) = queue.replace_durable(&bytes, sync_dir) {
                return Err(queue.not_opened("cannot create the mirror", e));
            }
            let (state, bytes) = (&queue.core.state, queue.log_bytes);
            observe::opened(&queue.storage, name, true, mirror::VERSION, state, bytes);
            return Ok(queue);
        };
        if leftover.is_some() {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed
            //# (followed by a directory fsync) — but only after the mirror itself decoded
            //# without error (M11).
            // M5: the temp file never reached its rename, so the mirror is authoritative.
            storage.remove(&tmp).map_err(|e| {
                Error::io("cannot remove the leftover temp file", e).with_path(&tmp_path)
            })?;
        }
        Queue::recover(storage, name, decoded, config, sync_dir)
    }

    /// A handle on `state` that has written nothing yet.
    pub(super) fn unopened(
        storage: S,
        name: &str,
        state: MirrorState,
        log_bytes: u64,
        config: Config,
    ) -> Self {
        Queue {
            storage,
            name: name.to_owned(),
            tmp: format!("{name}.tmp"),
            core: Core::new(state, config),
            log_bytes,
            poisoned: None,
            stats: Stats::default(),
            clock: crate::clock::system(),
            requests: Watch::default(),
            figures: None,
        }
    }

    /// The handle on a mirror that decoded: its torn tail cut (M7), what it read made durable
    /// (M10), an older version rewritten as the current one (M14).
    pub(super) fn recover(
        storage: S,
        name: &str,
        decoded: Decoded,
        config: Config,
        sync_dir: bool,
    ) -> Result<Self> {
        let path = storage.path(name);
        let io_error = |what: &str, e: io::Error| Error::io(what, e).with_path(&path);
        let version = decoded.version;
        let mut queue = Queue::unopened(storage, name, decoded.state, decoded.valid_len, config);
        if decoded.torn_len > 0 {
            //= spec/mirror.md#m7-torn-final-record
            //# On open, a final segment that does not end in `\n` (after at least a
            //# complete header) is a **torn append**: the reader MUST report it
            //# (`Decoded::torn_len`), and the queue MUST cut the file to the end of the
            //# last complete record and fsync it before writing anything else.
            // M7: the torn tail was never acknowledged; cut it before appending after it.
            queue
                .storage
                .truncate(name, decoded.valid_len)
                .map_err(|e| io_error("cannot cut the torn final record", e))?;
            observe::torn_tail_cut(&queue.storage, name, decoded.valid_len, decoded.torn_len);
        }
        //= spec/mirror.md#m10-fail-stop
        //# `open` of an existing mirror MUST fsync the mirror and then its directory before it
        //# returns, whether or not it changed anything, so that what it read is durable before
        //# the first acknowledgement built on it (an upgrade, M14, does both
        //# through M5).
        // A rename or create whose directory fsync failed before this open, in the same power
        // cycle, is visible here but not yet durable (M10's failure model).
        // An upgrade (below) writes the whole mirror through M5, which makes it durable.
        // Through `timed`, so that `Stats` counts them.
        let rewrite = version < mirror::VERSION;
        if !rewrite {
            queue
                .timed(|storage| storage.sync(name), false)
                .map_err(|e| io_error("cannot fsync the mirror", e))?;
            if sync_dir {
                queue
                    .timed(|storage| storage.sync_dir(), true)
                    .map_err(|e| io_error("cannot fsync the directory", e))?;
            }
        }
        if rewrite {
            //= spec/mirror.md#m2-header-and-version
            //# A writer MUST NOT append records of another version to a file.
            //= spec/mirror.md#m14-upgrade-from-older-versions
            //# `open` of a version 1, 2 or 3 mirror that decodes without error MUST, before it
            //# appends anything, write the current version's snapshot of that state through M5
            //# (temp file, fsync, rename, directory fsync).
            // M14: an older version is rewritten whole as the current one before any
            // record is appended (M2: never a record of another version in one file).
            let mut state = queue.core.state.clone();
            state.memory = queue.core.config.delivered_memory;
            //= spec/mirror.md#m17-operator-requests-to-a-live-session
            //# The open that rewrites a mirror of a version before 4 (M14) MUST give it a fresh
            //# life.
            state.life = Some(Life::fresh());
            queue.core = Core::new(state, queue.core.config.clone());
            let bytes = mirror::encode(&queue.core.state);
            if let Err(e) = queue.replace_durable(&bytes, true) {
                let doing = format!("cannot upgrade the version {version} mirror");
                return Err(queue.not_opened(&doing, e));
            }
            observe::upgraded(&queue.storage, name, version, mirror::VERSION);
        }
        queue.resize_window()?;
        queue.take_requests(true)?;
        let (state, bytes) = (&queue.core.state, queue.log_bytes);
        observe::opened(&queue.storage, name, false, decoded.version, state, bytes);
        Ok(queue)
    }

    /// A failure of `open` after its handle existed, reworded: the write poisoned a handle that
    /// is never returned, so no queue is there to refuse further work, as the poisoning's
    /// wording would say.
    pub(super) fn not_opened(&self, doing: &str, e: Error) -> Error {
        let step = self.poisoned.as_deref().unwrap_or("write");
        e.with_context(format!(
            "{doing}: its {step} failed; the mirror was not opened, open it again once the cause \
             is fixed"
        ))
    }
}

/// The mirror `name` decoded piece by piece as it is read, never held whole; `None` when there
/// is no mirror. The first damaged record stops the reading.
pub(super) fn read_mirror<S: Storage>(storage: &mut S, name: &str) -> Result<Option<Decoded>> {
    let path = storage.path(name);
    decode_read(&path, |each| storage.read_chunks(name, each))
}

/// Decodes the mirror at `path` as `read` hands it over, piece by piece, to the callback it is
/// given (the file never held whole): `Ok(None)` when `read` found no file. `Queue::open` reads
/// through its storage, a store's listing through a descriptor of its own.
pub(crate) fn decode_read(
    path: &Path,
    read: impl FnOnce(&mut dyn FnMut(&[u8]) -> ControlFlow<()>) -> io::Result<bool>,
) -> Result<Option<Decoded>> {
    let mut decoder = LogDecoder::new();
    let mut damage = None;
    let exists = read(&mut |piece| match decoder.feed(piece) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            damage = Some(e);
            ControlFlow::Break(())
        }
    })
    .map_err(|e| Error::io("cannot read the mirror", e).with_path(path))?;
    if !exists {
        return Ok(None);
    }
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# Anything in the file other than a torn final append (M7) — an empty file, a
    //# missing or torn header, an unknown format or version (M2), a bad checksum (M1),
    //# a JSON error, an unknown record type or field, an impossible record (M3, M6) —
    //# MUST make opening fail with a `Corrupt` error naming the file, the byte offset
    //# and the 1-based number of the bad record (the header is record 1), and the
    //# reason.
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //# In that case the queue MUST NOT modify the mirror or its temp file: no
    //# truncation, no "repair", no removal of the temp file; both stay byte for byte as
    //# they were.
    // M11: decode first; a damaged file gets an error and no write at all.
    let decoded = match damage {
        Some(e) => Err(e),
        None => decoder.finish(),
    };
    decoded.map(Some).map_err(|e| e.with_path(path))
}

/// With no mirror, what becomes of a leftover temp file of the kind `with_storage` found (M5):
/// the time its directory fsync took
/// once a complete snapshot that holds something was renamed into the mirror's place and the
/// directory fsynced; `None` once a link, or a file that holds at most the initial state, was
/// removed. A file that holds more but is not a complete snapshot is refused as `Corrupt`,
/// naming both paths and touching nothing.
pub(super) fn promote_leftover<S: Storage>(
    storage: &mut S,
    name: &str,
    tmp: &str,
    kind: Entry,
) -> Result<Option<Duration>> {
    let tmp_path = storage.path(tmp);
    let io_error = |what: &str, e: io::Error| Error::io(what, e).with_path(&tmp_path);
    let bytes = match kind {
        Entry::File => storage
            .read(tmp)
            .map_err(|e| io_error("cannot read the leftover temp file", e))?,
        _ => None,
    };
    match bytes.as_deref().map(leftover_holds) {
        Some(Leftover::Snapshot) => {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# With no `<name>`, a `<name>.tmp` that is a complete snapshot (the current
            //# version's encoding of the state its records build) of a state other than the
            //# initial one MUST be renamed into the mirror's place and the directory fsynced.
            let promoted = storage.rename(tmp, name).and_then(|()| {
                let start = Instant::now();
                storage.sync_dir().map(|()| start.elapsed())
            });
            return promoted
                .map(Some)
                .map_err(|e| io_error("cannot promote the leftover snapshot", e));
        }
        Some(Leftover::Damaged(reason)) => {
            //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
            //# A `<name>.tmp` beside no `<name>` that holds more than the initial state but is not
            //# a complete snapshot MUST fail the open with `Corrupt` naming both paths, touching
            //# nothing.
            return Err(Error::new(
                ErrorKind::Corrupt,
                format!(
                    "no mirror at {}, and its temp file holds lines but is not a complete \
                     snapshot ({reason}); move it away to start an empty mirror, or keep it to \
                     recover the lines by hand",
                    storage.path(name).display()
                ),
            )
            .with_path(&tmp_path));
        }
        Some(Leftover::Initial) | None => {}
    }
    // M5: an unfinished create (no park was acknowledged before it completed), or a link (never
    // its target). The create that follows fsyncs the directory.
    storage
        .remove(tmp)
        .map_err(|e| io_error("cannot remove the leftover temp file", e))?;
    Ok(None)
}

/// What a leftover temp file beside no mirror holds.
pub(super) enum Leftover {
    /// At most the initial state: an unfinished create, or a torn header.
    Initial,
    /// A complete snapshot of a state other than the initial one.
    Snapshot,
    /// More than the initial state, but not a complete snapshot: why.
    Damaged(String),
}

pub(super) fn leftover_holds(bytes: &[u8]) -> Leftover {
    if !bytes.contains(&b'\n') {
        // Not even a whole header: a create cut short.
        return Leftover::Initial;
    }
    match mirror::decode_log(bytes) {
        Err(e) => Leftover::Damaged(e.to_string()),
        Ok(decoded) if decoded.state == MirrorState::default() => Leftover::Initial,
        Ok(decoded) if decoded.torn_len == 0 && mirror::encode(&decoded.state) == bytes => {
            Leftover::Snapshot
        }
        Ok(_) => Leftover::Damaged("its records are not the whole snapshot of their state".into()),
    }
}
