//! The one error type of the crate.

use std::any::Any;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A specialised `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, for callers that branch on it.
///
/// # Example
///
/// ```
/// use parkline::ErrorKind;
/// assert_eq!(ErrorKind::Locked.to_string(), "mirror locked");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The storage failed (read, write, fsync, rename, remove, directory fsync).
    Io,
    /// Another handle or process holds the mirror's lock.
    Locked,
    /// The mirror is damaged or in an impossible state; it was left exactly as it was.
    Corrupt,
    /// An earlier write or fsync of this handle failed; reopen the queue (fail-stop, M10).
    Poisoned,
    /// The line contains `\n` or is longer than `line_bytes_max`; nothing was written.
    InvalidLine,
    /// The `Config` is unusable (for example `failures_max == 0`).
    InvalidConfig,
    /// A `park_all` group's lines hold more than `Config::group_bytes_max` bytes together (D22):
    /// nothing was written.
    GroupTooLarge,
    /// `boundary` was called while a batch of this life is still unsettled.
    BatchInFlight,
    /// `settle` named a batch that is not the one handed over in this life.
    UnknownBatch,
    /// `settle` got a number of outcomes different from the batch's number of items.
    OutcomeCount,
    /// A counter of the mirror is at the largest value its type holds: `park` when the next seq
    /// is `u64::MAX`, `boundary` when a new batch would need batch id `u64::MAX` or a repeat
    /// would need an attempt above `u32::MAX`. Nothing was written and the handle stays usable;
    /// only a mirror crafted or damaged outside parkline gets there (M6, D10).
    Exhausted,
    /// A bug in parkline itself: a write the queue planned is one its own mirror rules reject
    /// (the check every record passes before it is written, the same one recovery runs on every
    /// record read back). Nothing was written and the handle is poisoned, so the mirror keeps
    /// what the last good write left and reopens without error.
    Internal,
    /// `redrive` named a seq that is not a dead letter (or named it twice); nothing was
    /// written (D21).
    NotDead,
    // The read side (`parkline::read`, spec/read.md).
    /// A read's cursor text is not a cursor: changed, cut or made up (R7).
    CursorDamaged,
    /// A read's cursor is of the retired v1 form, whose child tag could collide (R7).
    CursorRetired,
    /// A read's cursor belongs to another child (R7).
    CursorOtherChild,
    /// A read's cursor is past the child's latest completed turn (R7).
    CursorAhead,
    /// A read's cursor follows a turn that the child no longer has at its seq: the transcript
    /// was rebuilt (section 5.2 of `spec/read.md`); see [`Error::resume_cursor`].
    CursorDiverged,
    /// No turn has the id of a `turn:` read.
    UnknownTurn,
    /// The offset of a `turn:` read is past the turn's end.
    OffsetOutOfRange,
    /// A read's `chars_max` cannot hold even its framing; see [`Error::needed_chars`] (R1).
    CharsMaxTooSmall,
    /// A child id or turn id breaks the character rules of `parkline::read`.
    InvalidId,
    /// A pushed turn's seq is 0 or not above the latest turn's.
    SeqNotIncreasing,
    /// A pushed turn's id is taken.
    DuplicateTurn,
    /// A transcript holds as many turns as it can (`u32::MAX`) and refuses another.
    TranscriptFull,
    /// An opened request is already known.
    DuplicateRequest,
    /// A terminated request is not open.
    UnknownRequest,
    /// The mirror path is refused (M8): a symbolic link, not a regular file, a file with more
    /// than one name, or a name parkline keeps for its own files (`.tmp`, `.lock`). Nothing was
    /// touched.
    InvalidPath,
    /// `Queue::remove` found lines parked, in flight or dead, and was not forced (M15).
    NotEmpty,
    /// A park for a request whose other line the mirror holds, or a group that names a request
    /// twice or mixes held and new requests (D3, D22). Nothing was written.
    RequestConflict,
    /// A park for a request whose line is a dead letter: redrive it instead (D3). Nothing was
    /// written.
    RequestDead,
    /// `Budget::for_turn_chars` got a limit that cannot hold a turn's header and trailer (D12);
    /// see [`Error::needed_chars`].
    BudgetTooSmall,
    /// A request's record holds a newline (R14): a record is one line of the window.
    InvalidRecord,
    /// A `Store` session's mirror could not be opened again after the store
    /// closed its idle descriptor (M16): the source says why (a full descriptor table, say).
    /// Nothing was written and the handle stays usable; the call may be made again.
    Reopen,
    /// An operator request file (`<name>.ops`, spec/mirror.md M17) that a command cannot read or
    /// parse: not a regular file, longer than
    /// `REQUEST_FILE_BYTES_MAX`, or not a request file. It
    /// was left as it is.
    RequestFileDamaged,
    /// An operator request's id names a waiting or answered request of another change (M17).
    /// Nothing was asked.
    OpIdReused,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Io => "i/o error",
            ErrorKind::Locked => "mirror locked",
            ErrorKind::Corrupt => "corrupt mirror",
            ErrorKind::Poisoned => "queue poisoned by an earlier i/o error",
            ErrorKind::InvalidLine => "invalid line",
            ErrorKind::InvalidConfig => "invalid config",
            ErrorKind::GroupTooLarge => "group too large",
            ErrorKind::BatchInFlight => "batch in flight",
            ErrorKind::UnknownBatch => "unknown batch",
            ErrorKind::OutcomeCount => "wrong number of outcomes",
            ErrorKind::Exhausted => "counter exhausted",
            ErrorKind::Internal => "internal error",
            ErrorKind::NotDead => "not a dead letter",
            ErrorKind::CursorDamaged => "damaged cursor",
            ErrorKind::CursorRetired => "retired cursor",
            ErrorKind::CursorOtherChild => "cursor of another child",
            ErrorKind::CursorAhead => "cursor ahead of the transcript",
            ErrorKind::CursorDiverged => "cursor of a rebuilt transcript",
            ErrorKind::UnknownTurn => "unknown turn",
            ErrorKind::OffsetOutOfRange => "offset out of range",
            ErrorKind::CharsMaxTooSmall => "chars_max too small",
            ErrorKind::InvalidId => "invalid id",
            ErrorKind::SeqNotIncreasing => "turn seq not increasing",
            ErrorKind::DuplicateTurn => "duplicate turn",
            ErrorKind::TranscriptFull => "transcript full",
            ErrorKind::DuplicateRequest => "duplicate request",
            ErrorKind::UnknownRequest => "unknown request",
            ErrorKind::InvalidPath => "invalid mirror path",
            ErrorKind::NotEmpty => "mirror not empty",
            ErrorKind::RequestConflict => "request conflict",
            ErrorKind::RequestDead => "request's line is dead",
            ErrorKind::BudgetTooSmall => "budget too small",
            ErrorKind::InvalidRecord => "invalid request record",
            ErrorKind::Reopen => "cannot reopen the session's mirror",
            ErrorKind::RequestFileDamaged => "damaged request file",
            ErrorKind::OpIdReused => "request id names another change",
        })
    }
}

/// The error of every fallible call: a kind, the file it concerns (if any), where in the file
/// (for [`ErrorKind::Corrupt`]), a lowercase context without trailing period, and the underlying
/// I/O error (if any) as its [`source`](std::error::Error::source).
///
/// `Display` prints the kind, the file, the place in it and the context, and not the source (a
/// report that walks [`source`](std::error::Error::source), as anyhow, eyre and `Debug` do,
/// prints the I/O error once), except that a full descriptor table or disk is named
/// (`too many open files in the process (EMFILE)`): what an operator must fix. The queue's errors and the read side's share this one type and one [`ErrorKind`] on
/// purpose: a daemon that serves both handles one error, and values such as
/// [`Error::needed_chars`] are carried by the kinds they belong to (spec/read.md section 6).
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("s1.mirror");
/// let _held = parkline::Queue::open(&path)?;
/// let err = parkline::Queue::open(&path).unwrap_err();
/// assert_eq!(err.kind(), parkline::ErrorKind::Locked);
/// assert!(err.to_string().starts_with("mirror locked: "));
/// # Ok(()) }
/// ```
pub struct Error {
    // Boxed, so that a `Result` of a small value stays small (two words for `Result<Seq>`).
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    path: Option<PathBuf>,
    offset: Option<u64>,
    record: Option<u64>,
    context: String,
    source: Option<io::Error>,
    needed_chars: Option<usize>,
    line_index: Option<usize>,
    resume_cursor: Option<Box<dyn Detail>>,
    cursor_child: Option<Box<dyn Detail>>,
}

/// A value a refused read carries for its caller (the cursor to resume with, the child a cursor
/// named), held as the read side defines it: this file is on the floor below the read side,
/// which reads the value back by its type (`read/cursor.rs`, `read/ids.rs`).
pub(crate) trait Detail: Any + fmt::Debug + Send + Sync {
    /// A copy, for another caller of a group (`Error::for_member`).
    fn boxed(&self) -> Box<dyn Detail>;
}

impl<T: Any + fmt::Debug + Clone + Send + Sync> Detail for T {
    fn boxed(&self) -> Box<dyn Detail> {
        Box::new(self.clone())
    }
}

/// `{:?}` is what `fn main() -> Result<(), parkline::Error>` prints: the kind, the `Display`
/// text, then each [`source`](std::error::Error::source) on a `caused by:` line of its own, as
/// anyhow prints a chain. `{:#?}` shows the fields.
///
/// # Example
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("s1.mirror");
/// let _held = parkline::Queue::open(&path)?;
/// let err = parkline::Queue::open(&path).unwrap_err();
/// let debug = format!("{err:?}");
/// assert!(debug.starts_with("Locked: mirror locked: "), "{debug}");
/// assert!(!debug.contains("Inner"), "{debug}");
/// # Ok(()) }
/// ```
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return self.inner.fmt(f);
        }
        write!(f, "{:?}: {self}", self.inner.kind)?;
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            write!(f, "\ncaused by: {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, context: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                path: None,
                offset: None,
                record: None,
                context: context.into(),
                source: None,
                needed_chars: None,
                line_index: None,
                resume_cursor: None,
                cursor_child: None,
            }),
        }
    }

    pub(crate) fn with_needed_chars(mut self, needed: usize) -> Self {
        self.inner.needed_chars = Some(needed);
        self
    }

    /// For [`ErrorKind::CharsMaxTooSmall`]: the smallest `chars_max` at which the read succeeds;
    /// for [`ErrorKind::BudgetTooSmall`], the smallest limit `Budget::for_turn_chars` takes.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::read::{ChildId, ReadRequest, Selector, Transcript};
    /// let child = Transcript::new(ChildId::new("c")?);
    /// let err = child.read(&ReadRequest::new(Selector::Latest { n: 1 }, 0)).unwrap_err();
    /// let needed = err.needed_chars().expect("budget errors say what would do");
    /// assert!(child.read(&ReadRequest::new(Selector::Latest { n: 1 }, needed)).is_ok());
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn needed_chars(&self) -> Option<usize> {
        self.inner.needed_chars
    }

    pub(crate) fn with_line_index(mut self, index: usize) -> Self {
        self.inner.line_index = Some(index);
        self
    }

    /// For [`ErrorKind::InvalidLine`] from `Queue::park_all`: the index
    /// in the slice of the first bad line (D22).
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Config, MemStorage, Queue, RequestId};
    /// let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    /// let err = queue.park_all(&[(RequestId(1), "ok"), (RequestId(2), "a\nb")]).unwrap_err();
    /// assert_eq!(err.line_index(), Some(1));
    /// # Ok::<(), parkline::Error>(())
    /// ```
    pub fn line_index(&self) -> Option<usize> {
        self.inner.line_index
    }

    pub(crate) fn with_resume_cursor(mut self, cursor: impl Detail) -> Self {
        self.inner.resume_cursor = Some(Box::new(cursor));
        self
    }

    pub(crate) fn with_cursor_child(mut self, child: impl Detail) -> Self {
        self.inner.cursor_child = Some(Box::new(child));
        self
    }

    /// The resume cursor set by [`Error::with_resume_cursor`], if it is a `T`.
    pub(crate) fn resume_detail<T: Any>(&self) -> Option<&T> {
        let detail: &dyn Any = self.inner.resume_cursor.as_deref()?;
        detail.downcast_ref()
    }

    /// The child set by [`Error::with_cursor_child`], if it is a `T`.
    pub(crate) fn child_detail<T: Any>(&self) -> Option<&T> {
        let detail: &dyn Any = self.inner.cursor_child.as_deref()?;
        detail.downcast_ref()
    }

    /// The same error with another context: for a caller that knows better what failed.
    pub(crate) fn with_context(mut self, context: impl Into<String>) -> Self {
        self.inner.context = context.into();
        self
    }

    pub(crate) fn with_source(mut self, source: io::Error) -> Self {
        self.inner.source = Some(source);
        self
    }

    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        let mut error = Error::new(ErrorKind::Io, context);
        error.inner.source = Some(source);
        error
    }

    pub(crate) fn corrupt(offset: u64, record: u64, reason: impl Into<String>) -> Self {
        let mut error = Error::new(ErrorKind::Corrupt, reason);
        error.inner.offset = Some(offset);
        error.inner.record = Some(record);
        error
    }

    /// The same error, naming the file `path` (for callers that decode bytes they read
    /// themselves, such as `parkline inspect`).
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", b"nonsense\n".to_vec());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// let err = err.with_path("/tmp/x.mirror");
    /// assert!(err.to_string().starts_with("corrupt mirror: /tmp/x.mirror: record 1 at byte 0: "));
    /// ```
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.inner.path = Some(path.into());
        self
    }

    /// What went wrong.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", b"nonsense\n".to_vec());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// assert_eq!(err.kind(), parkline::ErrorKind::Corrupt);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The file the error concerns, when there is one.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", b"nonsense\n".to_vec());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// assert_eq!(err.path(), Some(std::path::Path::new("m")));
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// For [`ErrorKind::Corrupt`]: the byte offset of the bad record in the file.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", b"nonsense\n".to_vec());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// assert_eq!(err.offset(), Some(0));
    /// ```
    pub fn offset(&self) -> Option<u64> {
        self.inner.offset
    }

    /// For [`ErrorKind::Corrupt`]: the 1-based number of the bad record (the header is record 1).
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", b"nonsense\n".to_vec());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// assert_eq!(err.record(), Some(1));
    /// ```
    pub fn record(&self) -> Option<u64> {
        self.inner.record
    }

    /// What was being done, or for [`ErrorKind::Corrupt`] the reason the record was rejected.
    ///
    /// # Example
    ///
    /// ```
    /// let mut storage = parkline::MemStorage::new();
    /// storage.set_file("m", Vec::new());
    /// let err = parkline::Queue::with_storage(storage, "m", Default::default()).unwrap_err();
    /// assert_eq!(err.context(), "empty file: no header");
    /// ```
    pub fn context(&self) -> &str {
        &self.inner.context
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner.kind)?;
        if let Some(path) = &self.inner.path {
            write!(f, ": {}", path.display())?;
        }
        if let (Some(record), Some(offset)) = (self.inner.record, self.inner.offset) {
            write!(f, ": record {record} at byte {offset}")?;
        }
        // The I/O error is the `source`, not part of this text: a report that walks the chain
        // (anyhow, eyre) prints it once. A full disk or descriptor table is named all the same:
        // it is what an operator acts on, and a report that prints only this line would hide it.
        write!(f, ": {}", self.inner.context)?;
        match self.inner.source.as_ref().and_then(resource_exhausted) {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

/// The name of a full resource `e` reports: the ones an operator fixes outside the daemon (a
/// descriptor limit, disk space), named with their errno so a search finds the fix.
fn resource_exhausted(e: &io::Error) -> Option<&'static str> {
    use rustix::io::Errno;
    let code = e.raw_os_error()?;
    [
        (Errno::MFILE, "too many open files in the process (EMFILE)"),
        (Errno::NFILE, "too many open files in the system (ENFILE)"),
        (Errno::NOSPC, "no space left on the device (ENOSPC)"),
        (Errno::DQUOT, "disk quota exceeded (EDQUOT)"),
    ]
    .into_iter()
    .find(|(errno, _)| errno.raw_os_error() == code)
    .map(|(_, name)| name)
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

/// Group commit hands one failure to every caller of the group.
impl Error {
    /// The same error for another caller of a group: kind, context, path and offsets kept; the
    /// source's kind and text kept (an `io::Error` is not `Clone`).
    pub(crate) fn for_member(&self) -> Error {
        let inner = &self.inner;
        Error {
            inner: Box::new(Inner {
                kind: inner.kind,
                path: inner.path.clone(),
                offset: inner.offset,
                record: inner.record,
                context: inner.context.clone(),
                source: inner
                    .source
                    .as_ref()
                    .map(|source| io::Error::new(source.kind(), source.to_string())),
                needed_chars: inner.needed_chars,
                line_index: inner.line_index,
                resume_cursor: inner.resume_cursor.as_deref().map(Detail::boxed),
                cursor_child: inner.cursor_child.as_deref().map(Detail::boxed),
            }),
        }
    }
}
