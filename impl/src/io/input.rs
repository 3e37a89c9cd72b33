//! Files another process can write, opened as input (spec/mirror.md M8): never blocking (a FIFO
//! opened for reading waits for a writer), never through a symbolic link, refused unless the
//! descriptor is a regular file, and read up to a bound. The mirror, its temp and lock files, the
//! directory's lock file and the request file with its temp and lock files are all opened here.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` with `options`, adding `O_NONBLOCK` and `O_NOFOLLOW`, then refuses the
/// descriptor unless `fstat` says it is a regular file.
///
/// # Errors
///
/// The open's error, or [`io::ErrorKind::InvalidInput`] naming what the path is instead.
pub(crate) fn open(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    open_with_metadata(path, options).map(|(file, _)| file)
}

/// [`open`], with the `fstat` it made: for a caller that needs the file's identity too, at no
/// second system call.
///
/// # Errors
///
/// As [`open`].
pub(crate) fn open_with_metadata(
    path: &Path,
    options: &mut OpenOptions,
) -> io::Result<(File, Metadata)> {
    //= spec/mirror.md#m8-one-handle-per-mirror-the-lock
    //# Every file parkline opens that another process can write MUST be opened without blocking
    //# and without following a symbolic link, and refused unless the opened descriptor is a
    //# regular file.
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = options.custom_flags(flags.bits() as i32).open(path)?;
    let metadata = file.metadata()?;
    check_regular(&metadata)?;
    Ok((file, metadata))
}

/// Opens `path` for reading as input ([`open`]).
///
/// # Errors
///
/// As [`open`].
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    open(path, OpenOptions::new().read(true))
}

/// Refuses a file whose `fstat` said `metadata` unless it is a regular file.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] naming the file's type.
fn check_regular(metadata: &Metadata) -> io::Result<()> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(not_regular(what))
}

/// The error of an input that is not a regular file: `what` it is instead.
pub(crate) fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file; parkline reads only regular files"),
    )
}

/// The whole of `file`, which must hold at most `max` bytes.
///
/// # Errors
///
/// [`io::ErrorKind::FileTooLarge`] when it holds more (no more than `max + 1` bytes are read);
/// any error of the read.
pub(crate) fn read_bounded(file: &File, max: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut buffer = vec![0; (max + 1).min(64 * 1024)];
    loop {
        let want = (max + 1 - bytes.len()).min(buffer.len());
        match file.read_at(&mut buffer[..want], bytes.len() as u64) {
            Ok(0) => return Ok(bytes),
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if bytes.len() > max {
            return Err(too_large(max));
        }
    }
}

/// The error of an input longer than its bound of `max` bytes.
pub(crate) fn too_large(max: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("longer than the {max} bytes parkline reads of it"),
    )
}

/// The whole of the regular file at `path`, opened as input: how a command reads a mirror it does
/// not hold (`parkline inspect`, the answer to an operator request), never blocking on a FIFO.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] for a path that is not a regular file (a FIFO, a device, a
/// directory), the open's error (a symbolic link fails it), and any error of the read.
///
/// # Example
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("f"), b"x")?;
/// assert_eq!(parkline::ops::read_input(&dir.path().join("f"))?, b"x");
/// assert!(parkline::ops::read_input(dir.path()).is_err());
/// # Ok(()) }
/// ```
pub fn read_whole(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_read(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}
