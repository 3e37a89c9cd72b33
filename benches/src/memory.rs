//! Peak memory of an operation, read from Linux's `/proc/self/status`.
//!
//! The recovery bench runs each measured open in a fresh child process (the bench binary
//! re-executing itself) and reports the growth of the peak resident set (`VmHWM`) over the
//! resident set before the open (`VmRSS`). A fresh process keeps one measurement's freed memory
//! from hiding the next one's, and needs no global allocator (the workspace forbids `unsafe`).

use std::io;

/// The value of a `kB` field of `/proc/self/status` (for example `"VmHWM"` or `"VmRSS"`), in KiB.
///
/// # Errors
///
/// [`io::ErrorKind::NotFound`] where the file or the field does not exist (not Linux), or
/// [`io::ErrorKind::InvalidData`] where the value does not parse.
pub fn status_kib(field: &str) -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_status_kib(&status, field).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no {field} in /proc/self/status"),
        )
    })
}

fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// Resets the process's peak resident set (`VmHWM`) to its current resident set, by writing `5`
/// to `/proc/self/clear_refs` (Linux 4.0 and later).
///
/// # Errors
///
/// Any I/O error of the write (not Linux, or not permitted).
pub fn reset_peak() -> io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}
