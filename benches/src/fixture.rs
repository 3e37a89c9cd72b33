//! Fixture builders: realistic completion lines, and directories made durable in one go.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use parkline::{Config, FsStorage, Queue, RequestId};
use tempfile::TempDir;

use crate::counting::{Counting, Counts, counting};
use crate::json_mirror::MirrorLine;

/// Characters of a typical completion line (the seed's lines carry a request id, the answering
/// turn, the outcome, a short summary and an `agent_read{turn:...}` reference).
pub const LINE_CHARS: usize = 200;

/// The `i`-th completion line of a fixture: [`LINE_CHARS`] characters, deterministic, no `\n`.
pub fn completion_line(i: u64) -> String {
    let child = 967 + i % 19;
    let turn = 1 + i % 7;
    let mut line = format!(
        "[delegation req-{i} s{child} turn s{child}-{turn} outcome=completed] \
         read it with agent_read{{sid:\"s{child}\", turn:\"s{child}-{turn}\"}}; summary: "
    );
    let filler = "the child finished its card and wrote its result to the task file. ";
    while line.chars().count() < LINE_CHARS {
        line.push_str(filler);
    }
    let cut = line
        .char_indices()
        .nth(LINE_CHARS)
        .map_or(line.len(), |(at, _)| at);
    line.truncate(cut);
    line
}

/// Fsyncs every regular file directly inside `dir`, then `dir` itself.
///
/// Fixtures are built with syncs switched off (see [`crate::counting::Counts::set_skip_syncs`]);
/// this makes them durable before the measurement starts, so the first measured fsync flushes
/// only what the measured operation wrote.
///
/// # Errors
///
/// Any I/O error of listing the directory or syncing an entry.
pub fn sync_dir_tree(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            File::open(entry.path())?.sync_all()?;
        }
    }
    File::open(dir)?.sync_all()
}

/// A parkline queue on a real directory, behind a [`Counting`] storage.
pub type CountedQueue = Queue<Counting<FsStorage>>;

/// Opens (creating or recovering) the mirror at `mirror` with a counting storage.
///
/// # Errors
///
/// The queue's open errors (lock held, damaged mirror, I/O), as [`io::Error`].
pub fn open_counted(mirror: &Path, config: Config) -> io::Result<(CountedQueue, Counts)> {
    let storage = FsStorage::open(mirror).map_err(io::Error::other)?;
    let name = storage.mirror_name().to_owned();
    let (storage, counts) = counting(storage);
    let queue = Queue::with_storage(storage, &name, config).map_err(io::Error::other)?;
    Ok((queue, counts))
}

/// Creates a fresh mirror at `mirror` holding `n` parked lines ([`completion_line`] `0..n`,
/// request ids `0..n`), durable on return.
///
/// The lines are parked with syncs switched off, then the directory is made durable at once
/// ([`sync_dir_tree`]); the returned counters start at zero with syncs switched on.
///
/// # Errors
///
/// The queue's errors, as [`io::Error`].
pub fn parked_queue(mirror: &Path, n: u64) -> io::Result<(CountedQueue, Counts)> {
    let (mut queue, counts) = open_counted(mirror, Config::default())?;
    counts.set_skip_syncs(true);
    for i in 0..n {
        queue
            .park(RequestId(i), &completion_line(i))
            .map_err(io::Error::other)?;
    }
    counts.set_skip_syncs(false);
    if let Some(dir) = mirror.parent() {
        sync_dir_tree(dir)?;
    }
    Ok((queue, counts))
}

/// A fresh temporary directory for one fixture, under [`bench_base`].
///
/// # Errors
///
/// Any I/O error of creating the directory.
pub fn bench_dir() -> io::Result<TempDir> {
    tempfile::tempdir_in(bench_base())
}

/// Where fixtures live: `$PARKLINE_BENCH_DIR` when set (to measure a particular disk), else the
/// system's temporary directory.
pub fn bench_base() -> PathBuf {
    std::env::var_os("PARKLINE_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from)
}

/// Drops `fixture` (deleting its directory) and fsyncs [`bench_base`], untimed.
///
/// A deleted fixture is metadata the file system has not committed yet (freed blocks, removed
/// directory entries). Left alone, it is committed by the next fsync of anyone on the same file
/// system, which is a timed one: on ext4 every fsync commits the whole running journal
/// transaction. The park bench measured what that costs (its header); every bench that replaces
/// a fixture between timed operations goes through here.
///
/// # Errors
///
/// Any I/O error of syncing the directory.
pub fn discard<F>(fixture: F) -> io::Result<()> {
    drop(fixture);
    File::open(bench_base())?.sync_all()
}

/// The `i`-th fixture line as today's JSON mirror stores it (request `i`, [`completion_line`]).
pub fn mirror_line(i: u64) -> MirrorLine {
    MirrorLine {
        request: i,
        line: completion_line(i),
    }
}
