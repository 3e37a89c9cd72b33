//! Today's mirror: the whole queue as one JSON document, rewritten on every change.
//!
//! This is what a `deferred-input.json` does: serialize every parked line, write a temporary
//! file, fsync it, rename it over the mirror and fsync the directory. A park therefore costs
//! O(size of the queue) bytes and two fsyncs, and a pop-front boundary of N lines costs N such
//! rewrites.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One parked line as the JSON mirror stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorLine {
    /// The request the line answers.
    pub request: u64,
    /// The line, verbatim.
    pub line: String,
}

/// A queue mirrored to `<dir>/deferred-input.json` by whole-file rewrites.
#[derive(Debug)]
pub struct JsonMirror {
    dir: PathBuf,
    lines: Vec<MirrorLine>,
    durable: bool,
}

impl JsonMirror {
    /// The mirror's file name inside its directory.
    pub const FILE: &'static str = "deferred-input.json";
    const TMP: &'static str = "deferred-input.json.tmp";

    /// An empty mirror in `dir` (the file is written at the first change).
    pub fn new(dir: &Path) -> Self {
        JsonMirror {
            dir: dir.to_path_buf(),
            lines: Vec::new(),
            durable: true,
        }
    }

    /// Reads and parses the mirror in `dir`, as a daemon does when it starts after a crash.
    ///
    /// # Errors
    ///
    /// Any I/O error, or invalid JSON as [`io::ErrorKind::InvalidData`].
    pub fn load(dir: &Path) -> io::Result<Self> {
        let bytes = fs::read(dir.join(Self::FILE))?;
        let lines: Vec<MirrorLine> = serde_json::from_slice(&bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(JsonMirror {
            dir: dir.to_path_buf(),
            lines,
            durable: true,
        })
    }

    /// The parked lines, oldest first.
    pub fn lines(&self) -> &[MirrorLine] {
        &self.lines
    }

    /// While `false`, rewrites skip both fsyncs (fixture building); [`JsonMirror::persist`]
    /// with `durable` back on makes the file durable.
    pub fn set_durable(&mut self, durable: bool) {
        self.durable = durable;
    }

    /// Parks `line`: appends it and rewrites the whole mirror.
    ///
    /// # Errors
    ///
    /// Any I/O error of the rewrite.
    pub fn park(&mut self, request: u64, line: &str) -> io::Result<()> {
        self.lines.push(MirrorLine {
            request,
            line: line.to_owned(),
        });
        self.persist()
    }

    /// Appends `lines` in memory only; [`JsonMirror::persist`] writes them (fixture building).
    pub fn extend(&mut self, lines: impl IntoIterator<Item = MirrorLine>) {
        self.lines.extend(lines);
    }

    /// Pops the oldest line, as today's pop-front boundary does, and rewrites the mirror.
    ///
    /// # Errors
    ///
    /// Any I/O error of the rewrite.
    pub fn pop_front(&mut self) -> io::Result<Option<MirrorLine>> {
        if self.lines.is_empty() {
            return Ok(None);
        }
        let first = self.lines.remove(0);
        self.persist()?;
        Ok(Some(first))
    }

    /// Rewrites the whole mirror: temporary file, fsync, rename, directory fsync.
    ///
    /// # Errors
    ///
    /// Any I/O error of the rewrite.
    pub fn persist(&mut self) -> io::Result<()> {
        let bytes = serde_json::to_vec(&self.lines)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let tmp = self.dir.join(Self::TMP);
        let mut file = File::create(&tmp)?;
        file.write_all(&bytes)?;
        if self.durable {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&tmp, self.dir.join(Self::FILE))?;
        if self.durable {
            File::open(&self.dir)?.sync_all()?;
        }
        Ok(())
    }
}
