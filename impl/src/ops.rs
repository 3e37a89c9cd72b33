//! Operator requests to a live session (spec/mirror.md M17): the request file `<name>.ops` that
//! an operator command writes beside a mirror whose lock the daemon holds, the requests in it,
//! and the mirror's window of the requests it applied, which is each request's answer.
//!
//! The daemon's side is in the queue: at open and at each boundary it applies the requests its
//! window does not hold, each as one record that makes the change and names the request. The
//! command's side is here: [`submit`] adds a request under the request file's own lock, and
//! [`answer`] finds a request's answer in the mirror, made durable before it is returned.

use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::crc64::crc64;
use crate::error::{Error, ErrorKind, Result};
use crate::input;
pub use crate::input::read_whole as read_input;
use crate::lock::{MirrorLock, Mode, Refused};
use crate::types::{Life, Seq};

/// The request file's schema version (`{"schema":1,...}`), apart from the mirror's format.
pub const SCHEMA: u32 = 1;

/// The most requests a request file holds that the mirror has not applied (M17): a command adds
/// none beyond it.
pub const PENDING_MAX: usize = 64;

/// The most bytes of a request file the queue reads (M17): a longer file is unreadable, and a
/// command adds no request that would make the file longer.
pub const REQUEST_FILE_BYTES_MAX: usize = 256 * 1024;

/// How many applied requests the mirror remembers (M17's window): at least [`PENDING_MAX`], so
/// the window outlives every request left in the file.
pub const APPLIED_MEMORY: usize = 64;

/// The suffix of a mirror's request file.
pub const SUFFIX: &str = ".ops";

/// How long the queue trusts an unchanged stamp of the request file before it reads it again
/// (M17): a stat cannot tell two rewrites apart that reuse an inode within one timestamp tick.
pub(crate) const REREAD_MS: u64 = 1_000;

/// A request's id: 1 to 64 characters of `[0-9a-z-]`, unique in its request file.
///
/// # Example
///
/// ```
/// use parkline::ops::OpId;
/// assert!(OpId::new("r-7f3a").is_ok());
/// assert!(OpId::new("").is_err() && OpId::new("A").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OpId(String);

impl OpId {
    /// `text` as an id.
    ///
    /// # Errors
    ///
    /// A text that is empty, longer than 64 bytes, or holds a character outside `[0-9a-z-]`.
    pub fn new(text: &str) -> std::result::Result<OpId, String> {
        let allowed = |b: u8| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-';
        if text.is_empty() || text.len() > 64 || !text.bytes().all(allowed) {
            return Err(format!(
                "a request id is 1 to 64 characters of 0-9, a-z and '-', not {text:?}"
            ));
        }
        Ok(OpId(text.to_owned()))
    }

    /// A fresh id: 32 hex digits from the process id, the time and the standard library's
    /// randomly keyed hasher, unique across commands without a shared counter.
    pub fn fresh() -> OpId {
        use std::hash::{BuildHasher, Hasher};
        let half = |salt: u64| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(salt);
            hasher.write_u32(std::process::id());
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
            hasher.finish()
        };
        OpId(format!("{:016x}{:016x}", half(1), half(2)))
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for OpId {
    type Error = String;
    fn try_from(text: String) -> std::result::Result<OpId, String> {
        OpId::new(&text)
    }
}

impl From<OpId> for String {
    fn from(id: OpId) -> String {
        id.0
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a request does to the dead letters it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Back to the parked list (D21).
    Redrive,
    /// Out of the mirror for good (D8).
    Discard,
}

impl Verb {
    /// The verb as the request file and the mirror spell it.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Redrive => "redrive",
            Verb::Discard => "discard",
        }
    }
}

/// The dead letters a request names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Which {
    /// These seqs; each must be a dead letter, named once.
    Seqs(Vec<Seq>),
    /// Every dead letter.
    All,
    /// The dead letters that died before this time, in milliseconds since the Unix epoch
    /// (D24); one without a time of death is never named (discard only).
    DiedBefore(u64),
}

/// One request of the request file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// Its id.
    pub id: OpId,
    /// What it does.
    pub verb: Verb,
    /// To which dead letters.
    pub which: Which,
    /// The life of the mirror the command read (M17): a mirror of another life refuses the
    /// request.
    pub life: Option<Life>,
}

impl Request {
    /// Whether `other` asks for the same change (another run of the same command).
    pub fn same_change(&self, other: &Request) -> bool {
        self.verb == other.verb && self.which == other.which
    }

    /// The 64-bit check of the change the request asks (M17): the CRC-64 of its verb and the dead
    /// letters it names, spelled `redrive seqs 1,2`, `discard all` or `discard died_before T`.
    /// Two requests of one id are the same change when their checks are equal.
    ///
    /// # Example
    ///
    /// ```
    /// use parkline::{Seq, ops::{OpId, Request, Verb, Which}};
    /// let ask = |verb, which| Request { id: OpId::new("a").unwrap(), verb, which, life: None };
    /// let one = ask(Verb::Discard, Which::Seqs(vec![Seq(1)]));
    /// assert_eq!(one.change(), ask(Verb::Discard, Which::Seqs(vec![Seq(1)])).change());
    /// assert_ne!(one.change(), ask(Verb::Redrive, Which::Seqs(vec![Seq(1)])).change());
    /// assert_ne!(one.change(), ask(Verb::Discard, Which::Seqs(vec![Seq(2)])).change());
    /// ```
    pub fn change(&self) -> u64 {
        let which = match &self.which {
            Which::Seqs(seqs) => {
                let seqs: Vec<String> = seqs.iter().map(ToString::to_string).collect();
                format!("seqs {}", seqs.join(","))
            }
            Which::All => "all".to_owned(),
            Which::DiedBefore(time) => format!("died_before {time}"),
        };
        crc64(format!("{} {which}", self.verb.name()).as_bytes())
    }
}

/// A request as the request file spells it: exactly one of `seqs`, `all`, `died_before`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spelled {
    id: OpId,
    verb: Verb,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    life: Option<Life>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seqs: Option<Vec<Seq>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    all: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    died_before: Option<u64>,
}

impl Spelled {
    fn of(request: &Request) -> Spelled {
        let (mut seqs, mut all, mut died_before) = (None, None, None);
        match &request.which {
            Which::Seqs(named) => seqs = Some(named.clone()),
            Which::All => all = Some(true),
            Which::DiedBefore(time) => died_before = Some(*time),
        }
        Spelled {
            id: request.id.clone(),
            verb: request.verb,
            life: request.life,
            seqs,
            all,
            died_before,
        }
    }

    fn request(self) -> std::result::Result<Request, String> {
        let which = match (self.seqs, self.all, self.died_before) {
            (Some(seqs), None, None) => Which::Seqs(seqs),
            (None, Some(true), None) => Which::All,
            (None, None, Some(time)) if self.verb == Verb::Discard => Which::DiedBefore(time),
            (None, None, Some(_)) => return Err("died_before is for a discard only".to_owned()),
            _ => return Err("a request names exactly one of seqs, all: true, died_before".into()),
        };
        Ok(Request {
            id: self.id,
            verb: self.verb,
            which,
            life: self.life,
        })
    }
}

/// The request file: its schema and requests, each kept as JSON until it is read alone, so one
/// malformed request is refused by itself.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpelled {
    schema: u32,
    requests: Vec<serde_json::Value>,
}

/// One entry of a request file as read: a request, or why it is not one (with its id when it
/// has a valid one, so the refusal can be answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A well-formed request.
    Request(Request),
    /// A malformed request: its id if it has a valid one, and what is wrong.
    Malformed {
        /// The id, if the entry has a valid one.
        id: Option<OpId>,
        /// What is wrong with it.
        why: String,
    },
}

impl Entry {
    /// The entry's id, when it has a valid one.
    pub fn id(&self) -> Option<&OpId> {
        match self {
            Entry::Request(request) => Some(&request.id),
            Entry::Malformed { id, .. } => id.as_ref(),
        }
    }
}

/// The entries of a request file's bytes, in file order.
///
/// # Errors
///
/// Bytes that are not one JSON object of schema 1 with a list of requests, or that name an id
/// twice.
///
/// # Example
///
/// ```
/// use parkline::ops::{parse, Entry, Verb, Which};
/// let entries = parse(br#"{"schema":1,"requests":[{"id":"a","verb":"redrive","all":true}]}"#)?;
/// let Entry::Request(request) = &entries[0] else { panic!("a request") };
/// assert_eq!((request.verb, &request.which), (Verb::Redrive, &Which::All));
/// # Ok::<(), String>(())
/// ```
pub fn parse(bytes: &[u8]) -> std::result::Result<Vec<Entry>, String> {
    let file: FileSpelled = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if file.schema != SCHEMA {
        return Err(format!(
            "request file schema {} is not {SCHEMA}",
            file.schema
        ));
    }
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# A request file longer than `REQUEST_FILE_BYTES_MAX` (256 KiB) or holding more than 64
    //# requests MUST be treated as one that cannot be read: none of it is applied.
    if file.requests.len() > PENDING_MAX {
        return Err(format!(
            "the request file holds {} requests, more than the {PENDING_MAX} a command writes",
            file.requests.len()
        ));
    }
    let entries: Vec<Entry> = file.requests.into_iter().map(entry_of).collect();
    let mut ids: Vec<&OpId> = entries.iter().filter_map(Entry::id).collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format!("request id {} is named twice", pair[0]));
    }
    Ok(entries)
}

fn entry_of(value: serde_json::Value) -> Entry {
    let id = value
        .get("id")
        .and_then(serde_json::Value::as_str)
        .and_then(|text| OpId::new(text).ok());
    let spelled = serde_json::from_value::<Spelled>(value).map_err(|e| e.to_string());
    match spelled.and_then(Spelled::request) {
        Ok(request) => Entry::Request(request),
        Err(why) => Entry::Malformed { id, why },
    }
}

/// The bytes of a request file holding `requests`, in order.
pub fn encode(requests: &[Request]) -> Vec<u8> {
    let spelled: Vec<Spelled> = requests.iter().map(Spelled::of).collect();
    let file = serde_json::json!({ "schema": SCHEMA, "requests": spelled });
    let mut bytes = serde_json::to_vec(&file).unwrap_or_else(|_| unreachable!("plain JSON"));
    bytes.push(b'\n');
    bytes
}

/// How the mirror answered a request it applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// Applied: this many dead letters moved (0 when none matched).
    Moved(u64),
    /// Refused, for this reason; nothing changed.
    Refused(String),
}

/// One entry of the mirror's window of applied requests (M17).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Applied {
    /// The request's id.
    pub id: OpId,
    /// What it asked.
    pub verb: Verb,
    /// The check of the change it asked ([`Request::change`]); `None` for a malformed request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<u64>,
    /// What became of it.
    pub answer: Answer,
}

/// The window's entry for `id`, if it holds one.
pub fn applied<'a>(window: &'a VecDeque<Applied>, id: &OpId) -> Option<&'a Applied> {
    window.iter().find(|applied| &applied.id == id)
}

/// The request file of the mirror at `mirror`, and its lock file and temp file.
fn paths(mirror: &Path) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let Some(name) = mirror.file_name().and_then(|name| name.to_str()) else {
        return Err(
            Error::new(ErrorKind::InvalidPath, "the mirror path has no file name")
                .with_path(mirror),
        );
    };
    let ops = mirror.with_file_name(format!("{name}{SUFFIX}"));
    let lock = mirror.with_file_name(format!("{name}{SUFFIX}.lock"));
    let tmp = mirror.with_file_name(format!("{name}{SUFFIX}.tmp"));
    Ok((ops, lock, tmp))
}

/// What [`submit`] did with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// Added to the request file under this id.
    Added(OpId),
    /// The file already held a request of this id or of the same change: that one stands.
    Pending(OpId),
    /// The mirror's window already answers the request of this id and of the same change.
    Answered(OpId),
}

impl Submitted {
    /// The id of the request that stands.
    pub fn id(&self) -> &OpId {
        match self {
            Submitted::Added(id) | Submitted::Pending(id) | Submitted::Answered(id) => id,
        }
    }
}

/// How long [`submit`] waits for another command's hold of the request file's lock (a test's
/// holder waits less).
const LOCK_WAIT: Duration = if cfg!(test) {
    Duration::from_millis(200)
} else {
    Duration::from_secs(5)
};

/// Adds `request` to the request file of the mirror at `mirror` (M17), under the file's lock,
/// whole (temp file, fsync, rename, directory fsync). First it drops the requests of `window`'s
/// life that its applied window holds (`window` is the mirror's, made durable by the caller:
/// [`durable_window`]); a request of the same id and change, waiting or answered, or of the same
/// change, waiting, stands instead of a second one.
///
/// # Errors
///
/// `OpIdReused` when the id names a waiting or answered request of another change;
/// `Locked` when another command holds the file's lock for longer than a few seconds;
/// `RequestFileDamaged` for a request file that cannot be read or parsed (it is left as it is);
/// `Exhausted` when [`PENDING_MAX`] requests are waiting or the file would grow past
/// [`REQUEST_FILE_BYTES_MAX`]; `Io` when a file cannot be read or written.
pub fn submit(mirror: &Path, request: &Request, window: &Window) -> Result<Submitted> {
    if let Some(answered) = applied(&window.applied, &request.id) {
        return match answered.change == Some(request.change()) {
            true => Ok(Submitted::Answered(request.id.clone())),
            false => Err(reused(&request.id, "an answered", answered.verb)),
        };
    }
    let answered = |pending: &Request| {
        pending.life == window.life && applied(&window.applied, &pending.id).is_some()
    };
    rewrite(mirror, &answered, |requests| {
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command MUST refuse (`OpIdReused`, exit 2) a request whose id names a waiting or
        //# answered request of another change.
        if let Some(pending) = requests.iter().find(|pending| pending.id == request.id) {
            return match pending.same_change(request) {
                true => Ok(Submitted::Pending(pending.id.clone())),
                false => Err(reused(&request.id, "a waiting", pending.verb)),
            };
        }
        if let Some(pending) = requests.iter().find(|pending| pending.same_change(request)) {
            return Ok(Submitted::Pending(pending.id.clone()));
        }
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# A command MUST NOT add a request while the file holds 64 requests the mirror has not
        //# applied,
        if requests.len() >= PENDING_MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!(
                    "{PENDING_MAX} requests are waiting for the daemon; wait for its next boundary"
                ),
            ));
        }
        requests.push(request.clone());
        Ok(Submitted::Added(request.id.clone()))
    })
}

/// The refusal of a request whose `id` names `what` request of another change (`verb`).
fn reused(id: &OpId, what: &str, verb: Verb) -> Error {
    Error::new(
        ErrorKind::OpIdReused,
        format!(
            "request id {id} names {what} {} request of other dead letters; give a new id, or \
             the same command to wait for that one",
            verb.name()
        ),
    )
}

/// Drops from the request file of the mirror at `mirror` the requests `answered` picks: ones the
/// mirror applied, whose answers the caller made durable ([`answer`]), and that name the life of
/// the mirror it read; removes the file when none is left.
///
/// # Errors
///
/// As [`submit`], but never `Exhausted`.
pub fn prune(mirror: &Path, answered: &dyn Fn(&Request) -> bool) -> Result<()> {
    rewrite(mirror, answered, |_| Ok(()))
}

/// The request file of `mirror` read under its lock, the requests `answered` picks dropped,
/// changed by `change`, and written back whole if anything changed (removed when empty).
fn rewrite<T>(
    mirror: &Path,
    answered: &dyn Fn(&Request) -> bool,
    change: impl FnOnce(&mut Vec<Request>) -> Result<T>,
) -> Result<T> {
    let (ops, lock_path, tmp) = paths(mirror)?;
    let _lock = lock_request_file(&lock_path)?;
    let io = |what: &str, e: io::Error| Error::io(what, e).with_path(&ops);
    let read =
        input::open_read(&ops).and_then(|file| input::read_bounded(&file, REQUEST_FILE_BYTES_MAX));
    let (mut requests, existed) = match read {
        Ok(bytes) => (
            requests_of(&bytes).map_err(|why| damaged(&ops, &why))?,
            true,
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), false),
        Err(e) if is_not_input(&e) => return Err(damaged(&ops, &e.to_string())),
        Err(e) => return Err(io("cannot read the request file", e)),
    };
    let before = requests.clone();
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It removes only requests that name the window's life and whose id the window holds.
    requests.retain(|pending| !answered(pending));
    let value = change(&mut requests).map_err(|e| e.with_path(&ops))?;
    if requests == before {
        return Ok(value);
    }
    if requests.is_empty() && existed {
        std::fs::remove_file(&ops).map_err(|e| io("cannot remove the request file", e))?;
        sync_dir_of(&ops).map_err(|e| io("cannot fsync the directory", e))?;
    } else {
        let bytes = encode(&requests);
        //= spec/mirror.md#m17-operator-requests-to-a-live-session
        //# it adds no request that would make the file longer than `REQUEST_FILE_BYTES_MAX`.
        if bytes.len() > REQUEST_FILE_BYTES_MAX {
            return Err(Error::new(
                ErrorKind::Exhausted,
                format!(
                    "the request would make the request file longer than the \
                     {REQUEST_FILE_BYTES_MAX} bytes the daemon reads; name fewer dead letters"
                ),
            )
            .with_path(&ops));
        }
        write_whole(&ops, &tmp, &bytes).map_err(|e| io("cannot write", e))?;
    }
    Ok(value)
}

/// Whether `e` refuses a file as input: not a regular file, or longer than its bound.
fn is_not_input(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::FileTooLarge
    )
}

/// A request file a command does not rewrite: it reports it, and leaves it as it is.
fn damaged(path: &Path, why: &str) -> Error {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# and MUST NOT rewrite a file it cannot parse (it reports it as `RequestFileDamaged`, "the
    //# request file <path> is damaged", exit 1, and leaves it as it is);
    Error::new(ErrorKind::RequestFileDamaged, why.to_owned()).with_path(path)
}

/// The requests of a request file a command rewrites: a malformed entry makes the whole file
/// one it does not rewrite.
fn requests_of(bytes: &[u8]) -> std::result::Result<Vec<Request>, String> {
    parse(bytes)?
        .into_iter()
        .map(|entry| match entry {
            Entry::Request(request) => Ok(request),
            Entry::Malformed { why, .. } => Err(why),
        })
        .collect()
}

/// The request file's lock, waited for a few seconds: commands hold it only while they rewrite
/// the file.
fn lock_request_file(path: &Path) -> Result<MirrorLock> {
    let start = std::time::Instant::now();
    loop {
        match MirrorLock::acquire(path, Mode::Exclusive) {
            Ok(lock) => return Ok(lock),
            Err(Refused::Locked) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(refused) => return Err(crate::storage::lock_error(refused, path, "a command")),
        }
    }
}

/// Writes `bytes` as the whole of `path` through `tmp` (M5's sequence).
fn write_whole(path: &Path, tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    // A temp file left by a command that died holding the lock is no one's now.
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(tmp, path)?;
    sync_dir_of(path)
}

fn sync_dir_of(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// The mirror's answer to request `id`, read lock-free (M13): `None` while its window does not
/// hold it. An answer is made durable (the mirror and its directory fsynced) before it is
/// returned, so no answer is given that a power loss could take back.
///
/// # Errors
///
/// `Corrupt` for a damaged mirror, `Io` when it cannot be read (a path that is not a regular
/// file included: it is never opened blocking) or fsynced.
pub fn answer(mirror: &Path, id: &OpId) -> Result<Option<Applied>> {
    let decoded = read_mirror(mirror)?;
    let Some(found) = applied(&decoded.state.ops, id).cloned() else {
        return Ok(None);
    };
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# It MUST fsync the mirror before it reports that answer, and before it removes the request
    //# from the request file.
    make_durable(mirror).map_err(|e| Error::io("cannot fsync the mirror", e).with_path(mirror))?;
    Ok(Some(found))
}

/// `applied`, the answer the window holds under the id `request` stands on, as the answer to
/// `request`: refused unless it answers the same change. A command's request added after a
/// first request of its id was applied (a second command with another change, whose read of the
/// window came first) is skipped by the holder, and the first one's answer is not its own.
///
/// # Errors
///
/// `OpIdReused` when `applied` answers another change.
pub fn check_answer(applied: &Applied, request: &Request) -> Result<()> {
    //= spec/mirror.md#m17-operator-requests-to-a-live-session
    //# A command whose id the window answers for another change than its own (its request was
    //# added after the first was applied) MUST report `OpIdReused` (exit 2), never that answer.
    if applied.change == Some(request.change()) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::OpIdReused,
        format!(
            "request id {} was answered for another change (a {} of other dead letters); give a \
             new id",
            applied.id,
            applied.verb.name()
        ),
    ))
}

/// What a command reads of a mirror before it asks: its life and its applied window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The mirror's life, which the command's request names.
    pub life: Option<Life>,
    /// The requests the mirror applied, oldest first, with their answers.
    pub applied: VecDeque<Applied>,
}

/// The life and applied window of the mirror at `mirror`, made durable: what a command's request
/// names, and what it may drop from the request file.
///
/// # Errors
///
/// As [`answer`].
pub fn durable_window(mirror: &Path) -> Result<Window> {
    let decoded = read_mirror(mirror)?;
    if !decoded.state.ops.is_empty() {
        make_durable(mirror)
            .map_err(|e| Error::io("cannot fsync the mirror", e).with_path(mirror))?;
    }
    Ok(Window {
        life: decoded.state.life,
        applied: decoded.state.ops,
    })
}

/// The mirror at `path` read as input (never blocking on a FIFO) and decoded.
fn read_mirror(path: &Path) -> Result<crate::mirror::Decoded> {
    let bytes = input::read_whole(path)
        .map_err(|e| Error::io("cannot read the mirror", e).with_path(path))?;
    crate::mirror::decode_log(&bytes).map_err(|e| e.with_path(path))
}

/// fsyncs the file at `path` (read-only: a descriptor of either kind flushes the file's pages)
/// and its directory (a compaction's rename).
fn make_durable(path: &Path) -> io::Result<()> {
    input::open_read(path)?.sync_all()?;
    sync_dir_of(path)
}
