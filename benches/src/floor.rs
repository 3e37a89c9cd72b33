//! The physical floor of a durable park: append the line's bytes to an open file and fsync it.
//!
//! Nothing that makes a line durable on a single file can do less than this: one `write` and one
//! `fsync`. parkline's park is measured against it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// An append-only file of lines, each made durable by one `write` and one `fsync`.
#[derive(Debug)]
pub struct AppendFloor {
    file: File,
    buffer: Vec<u8>,
}

impl AppendFloor {
    /// Creates (or opens for appending) the file at `path` and makes its directory entry durable.
    ///
    /// # Errors
    ///
    /// Any I/O error of opening the file or syncing its directory.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        file.sync_all()?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(AppendFloor {
            file,
            buffer: Vec::new(),
        })
    }

    /// Appends `line` and a newline in one `write`, then fsyncs the file.
    ///
    /// # Errors
    ///
    /// Any I/O error of the write or the fsync.
    pub fn append_durable(&mut self, line: &str) -> io::Result<()> {
        self.buffer.clear();
        self.buffer.extend_from_slice(line.as_bytes());
        self.buffer.push(b'\n');
        self.file.write_all(&self.buffer)?;
        self.file.sync_all()
    }

    /// Appends `line` and a newline without an fsync (fixture building).
    ///
    /// # Errors
    ///
    /// Any I/O error of the write.
    pub fn append(&mut self, line: &str) -> io::Result<()> {
        self.file.write_all(line.as_bytes())?;
        self.file.write_all(b"\n")
    }

    /// Fsyncs the file.
    ///
    /// # Errors
    ///
    /// Any I/O error of the fsync.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }
}

/// The floor of any whole-file write (M5): `bytes` written to a new file at `new`, fsynced,
/// renamed over `old`, and the directory fsynced.
///
/// # Errors
///
/// Any I/O error of the steps.
pub fn replace_durable(new: &Path, old: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().create_new(true).write(true).open(new)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(new, old)?;
    match old.parent() {
        Some(dir) => File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

/// The floor of a recovery: read the whole file at `path` into memory and CRC every byte of it
/// (`crc32fast`, the checksum the mirror's records carry). Returns the bytes read and the CRC.
///
/// Whatever the mirror's record layout, recovering it reads each byte and checks it, so this
/// holds however the format changes; it does not split records, which a recovery must also do.
///
/// # Errors
///
/// Any I/O error of the read.
pub fn read_crc(path: &Path) -> io::Result<(usize, u32)> {
    let bytes = std::fs::read(path)?;
    Ok((bytes.len(), crc32fast::hash(&bytes)))
}
