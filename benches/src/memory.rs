//! Memory of an operation, two ways.
//!
//! - Peak resident set, read from Linux's `/proc/self/status`. The recovery bench runs each
//!   measured open in a fresh child process (the bench binary re-executing itself) and reports the
//!   growth of the peak resident set (`VmHWM`) over the resident set before the open (`VmRSS`). A
//!   fresh process keeps one measurement's freed memory from hiding the next one's.
//! - Live heap bytes, counted by [`Heap`], a global allocator a bench target installs. It counts
//!   the bytes asked of the allocator (capacity, touched or not), which the resident set does not
//!   see: a `Vec` that doubled to twice what it holds has untouched pages that are not resident
//!   but are still the program's memory. The counting allocator is the `cap` crate's, so no bench
//!   needs `unsafe` (the workspace forbids it).

use std::alloc::System;
use std::io;

/// A counting global allocator (the system allocator underneath).
///
/// A bench target installs it once:
///
/// ```ignore
/// #[global_allocator]
/// static HEAP: parkline_benches::memory::Heap = parkline_benches::memory::heap();
/// ```
pub type Heap = cap::Cap<System>;

/// The [`Heap`] to install: the system allocator, counted, without a limit.
pub const fn heap() -> Heap {
    cap::Cap::new(System, usize::MAX)
}

/// Builds a value and returns it with the heap bytes it holds: the live heap after `build`
/// minus the live heap before it. Whatever `build` freed before returning is not counted, so
/// this is the value's own footprint (for a value that owns all it allocated).
pub fn live_bytes_of<T>(heap: &Heap, build: impl FnOnce() -> T) -> (T, usize) {
    let before = heap.allocated();
    let value = build();
    let after = heap.allocated();
    (value, after.saturating_sub(before))
}

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
