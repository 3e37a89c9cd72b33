//! What an operator request is (spec/mirror.md M17): its id, verb and dead letters, the request
//! file's schema and bounds, and the mirror's window of the requests it applied. The vocabulary
//! the mirror's records carry; the command's side, which writes the file, is `client.rs`.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::crc64::crc64;
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
    pub fn new(text: &str) -> Result<OpId, String> {
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
    fn try_from(text: String) -> Result<OpId, String> {
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

    fn request(self) -> Result<Request, String> {
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
pub fn parse(bytes: &[u8]) -> Result<Vec<Entry>, String> {
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
