//! The deliberately broken protocols the checkers must catch, built outside the crate: one
//! registry of their names ([`KnownBad`]) and the seams that build each one around the public
//! API, so `parkline` itself holds the protocol only.
//!
//! Three seams on the delivery side, each where its broken behaviour is decided:
//!
//! - a faulty [`Storage`] under the queue, for a fault of the file's writes: `no-dir-sync`
//!   ([`SkipDirSync`]) returns `Ok` from `sync_dir` without syncing, so a create or rename is
//!   lost in a power loss although the queue acknowledged what followed it (D16, M5);
//!   `compact-at-redrive` ([`CompactAtRedrive`]) rewrites the mirror as its snapshot after every
//!   `redrive` record, a batch in flight or not, as the queue did before M12 forbade it (the
//!   next open refuses that file as `Corrupt` when a redriven line's seq is below the batch's);
//!   `no-discard-sync` ([`SkipDiscardSync`]) returns `Ok` from the fsync after a `discard`
//!   record without syncing, so a power loss after an acknowledged discard brings the
//!   discarded dead letters back (D8);
//! - a broken [`Driver`] around the public [`Queue`], for a fault of the protocol's decisions:
//!   `pop-front` asks every boundary with `Budget(0)` (the split takes one item, D1);
//!   `clear-before-hand-over` settles a new batch as all delivered inside `boundary`, before
//!   handing it over, and answers the caller's later settle itself (a crash after the boundary
//!   loses the batch, D9); `no-attempt-counter` hands a recovered batch over with the attempt it
//!   had before (attempt - 1, so the first repeat has no repeat mark, D10);
//! - the crate's [`Config`](parkline::Config) as a check sets it up
//!   ([`Setup::config`](crate::delivery::Setup::config)), for a fault of a policy the config
//!   decides: `never-compact-at-rest` opens the crate with no limit at rest, while the check keeps
//!   its rest slack (M12).
//!
//! On the read side, a wrapper around `Transcript::read` ([`read_as`]), which the read harness
//! calls instead of the bare read: `excerpt-without-reference` presents a cut turn as whole,
//! without the reference to its rest (R5); `advance-before-build` moves a forward read's next
//! cursor past the turns it omitted, with the public `Cursor::after` (R5); `turns-only-budget`
//! asks the crate with the largest budget whose answer holds at most `chars_max` characters of
//! turn text, so framing, partial turn and requests come on top (R1).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Barrier, mpsc};

use parkline::mirror;
use parkline::read::{Cursor, ReadRequest, Selector, Transcript, TurnSeq, Window};
use parkline::{
    Attempt, Batch, BatchId, Budget, ErrorKind, Identity, Outcome, Parked, Queue, RequestId, Seq,
    Settlement, SharedQueue, Storage,
};

/// A deliberately broken behaviour, by its kebab-case name (the same spelling in tests, the fuzz
/// targets' `PARKLINE_KNOWN_BAD` and the kill -9 child's `PARKLINE_DRIVE_KNOWN_BAD`).
///
/// # Example
///
/// ```
/// use parkline_harness::known_bad::KnownBad;
/// assert_eq!(KnownBad::from_name("pop-front"), Some(KnownBad::PopFront));
/// assert_eq!(KnownBad::PopFront.name(), "pop-front");
/// assert!(KnownBad::ALL.iter().all(|bad| KnownBad::from_name(bad.name()) == Some(*bad)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KnownBad {
    /// A boundary hands over one line, however many are parked (breaks D1). Driver seam.
    PopFront,
    /// A new batch is cleared as delivered before it is handed over (breaks D9). Driver seam.
    ClearBeforeHandOver,
    /// A recovered batch is handed over with its previous attempt, the first repeat unmarked
    /// (breaks D10). Driver seam.
    NoAttemptCounter,
    /// The directory fsync after a create or rename is skipped (breaks D16, M5). Storage seam.
    NoDirSync,
    /// A redrive compacts the mirror even while a batch is in flight (breaks M12). Storage seam.
    CompactAtRedrive,
    /// A discard returns before its record is durable: the fsync after a `discard` record is
    /// skipped, so a power loss brings the discarded dead letters back (breaks D8). Storage
    /// seam.
    NoDiscardSync,
    /// A group is parked as one `park` per line, so a crash during it keeps a prefix (breaks
    /// D22). Driver seam.
    TornGroupKeepsPrefix,
    /// Hand-overs are counted only when settled: a batch reports each item's count as it was
    /// at the last settle plus one, so a hand-over cut by a crash is not counted (breaks D19).
    /// Driver seam.
    CountAtSettle,
    /// A read's excerpt loses the reference to its rest (breaks R5). Read wrapper.
    ExcerptWithoutReference,
    /// A read's next cursor moves past turns that did not fit (breaks R5). Read wrapper.
    AdvanceBeforeBuild,
    /// A read budgets the turns only, the framing and partial turn on top (breaks R1). Read
    /// wrapper.
    TurnsOnlyBudget,
    /// A write is acknowledged without asking whether the mirror's name still leads to the
    /// file written: `Storage::identity` answers "same" whatever happened to the name, as the
    /// trait's provided method once did (breaks M8). Storage seam.
    NameBlind,
    /// A read trusts its cursor's seq alone, as a v2 cursor did: a cursor refused with
    /// `CursorDiverged` reads on from the turn now at its seq, so a transcript rebuilt shorter and
    /// grown back skips the turns that replaced the caller's (breaks R5). Read wrapper.
    TrustSeq,
    /// An idle call never compacts a drained queue, so a drained mirror keeps up to twice its
    /// snapshot plus the slack of dead records (breaks M12's bound at rest). Config seam: the
    /// crate opened with no rest slack's limit.
    NeverCompactAtRest,
    /// Every reopen empties the remembered window, so a retry after delivery across a restart
    /// delivers its line again (breaks D3). Config seam: each reopen opens the mirror once with
    /// no window first.
    ForgetAtReopen,
    /// Parks and deaths are stamped with a clock stuck at 0, not the queue's (breaks D24). Clock
    /// seam.
    FrozenClock,
}

impl KnownBad {
    /// Every known-bad behaviour.
    pub const ALL: [KnownBad; 16] = [
        KnownBad::PopFront,
        KnownBad::ClearBeforeHandOver,
        KnownBad::NoAttemptCounter,
        KnownBad::NoDirSync,
        KnownBad::CompactAtRedrive,
        KnownBad::NoDiscardSync,
        KnownBad::TornGroupKeepsPrefix,
        KnownBad::CountAtSettle,
        KnownBad::NameBlind,
        KnownBad::ExcerptWithoutReference,
        KnownBad::AdvanceBeforeBuild,
        KnownBad::TurnsOnlyBudget,
        KnownBad::TrustSeq,
        KnownBad::NeverCompactAtRest,
        KnownBad::ForgetAtReopen,
        KnownBad::FrozenClock,
    ];

    /// The delivery side's: what `delivery::check_with` and the drive loop run.
    pub const DELIVERY: [KnownBad; 8] = [
        KnownBad::PopFront,
        KnownBad::ClearBeforeHandOver,
        KnownBad::NoAttemptCounter,
        KnownBad::NoDirSync,
        KnownBad::TornGroupKeepsPrefix,
        KnownBad::CountAtSettle,
        KnownBad::CompactAtRedrive,
        KnownBad::NoDiscardSync,
    ];

    /// The file's: delivery behaviours that only a fault of the mirror's name shows
    /// (`Op::NameLost`), which the delivery model, having no files, never takes. The differential
    /// and the fuzz target run them as they run [`KnownBad::DELIVERY`].
    pub const FILE: [KnownBad; 1] = [KnownBad::NameBlind];

    /// The mirror's size: delivery behaviours that change no line and no durable state, only how
    /// long the file is, which the delivery model (having no file) and the crash checks cannot
    /// see; the differential's file-size checks catch them.
    pub const SIZE: [KnownBad; 1] = [KnownBad::NeverCompactAtRest];

    /// Format 4's: delivery behaviours of the remembered window (D3) and the times (D24); the
    /// differential and the fuzz target run them as they run [`KnownBad::DELIVERY`].
    pub const FORMAT_4: [KnownBad; 2] = [KnownBad::ForgetAtReopen, KnownBad::FrozenClock];

    /// The read side's: what `read::check_with` runs.
    pub const READ: [KnownBad; 4] = [
        KnownBad::ExcerptWithoutReference,
        KnownBad::AdvanceBeforeBuild,
        KnownBad::TurnsOnlyBudget,
        KnownBad::TrustSeq,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            KnownBad::PopFront => "pop-front",
            KnownBad::ClearBeforeHandOver => "clear-before-hand-over",
            KnownBad::NoAttemptCounter => "no-attempt-counter",
            KnownBad::NoDirSync => "no-dir-sync",
            KnownBad::CompactAtRedrive => "compact-at-redrive",
            KnownBad::NoDiscardSync => "no-discard-sync",
            KnownBad::TornGroupKeepsPrefix => "torn-group-keeps-prefix",
            KnownBad::CountAtSettle => "count-at-settle",
            KnownBad::NameBlind => "name-blind",
            KnownBad::ExcerptWithoutReference => "excerpt-without-reference",
            KnownBad::AdvanceBeforeBuild => "advance-before-build",
            KnownBad::TurnsOnlyBudget => "turns-only-budget",
            KnownBad::TrustSeq => "trust-seq",
            KnownBad::NeverCompactAtRest => "never-compact-at-rest",
            KnownBad::ForgetAtReopen => "forget-at-reopen",
            KnownBad::FrozenClock => "frozen-clock",
        }
    }

    /// The behaviour named `name` (kebab-case, as [`KnownBad::name`]).
    pub fn from_name(name: &str) -> Option<KnownBad> {
        KnownBad::ALL.into_iter().find(|bad| bad.name() == name)
    }

    /// The requirement it breaks (the id the model's variant of the same name breaks too;
    /// `compact-at-redrive`, `no-discard-sync` and `never-compact-at-rest` have none: the model
    /// has no file, so no compaction's rewrite, no fsync and no size; its discard's known bad is
    /// `discard-parked`).
    pub fn breaks(self) -> &'static str {
        match self {
            KnownBad::PopFront => "D1",
            KnownBad::ClearBeforeHandOver => "D9",
            KnownBad::NoAttemptCounter => "D10",
            KnownBad::NoDirSync => "D16",
            KnownBad::CompactAtRedrive => "M12",
            KnownBad::NoDiscardSync => "D8",
            KnownBad::TornGroupKeepsPrefix => "D22",
            KnownBad::CountAtSettle => "D19",
            KnownBad::NameBlind => "M8",
            KnownBad::NeverCompactAtRest => "M12",
            KnownBad::ForgetAtReopen => "D3",
            KnownBad::FrozenClock => "D24",
            KnownBad::ExcerptWithoutReference
            | KnownBad::AdvanceBeforeBuild
            | KnownBad::TrustSeq => "R5",
            KnownBad::TurnsOnlyBudget => "R1",
        }
    }

    /// True for the read side's behaviours.
    pub fn is_read(self) -> bool {
        KnownBad::READ.contains(&self)
    }

    /// Every name, for error messages.
    pub fn names() -> Vec<&'static str> {
        KnownBad::ALL.iter().map(|bad| bad.name()).collect()
    }

    /// The behaviour named by the environment variable `var`: `None` when it is unset or empty.
    ///
    /// # Errors
    ///
    /// The variable names no known-bad behaviour.
    pub fn from_env(var: &str) -> Result<Option<KnownBad>, String> {
        match std::env::var(var) {
            Ok(name) if !name.is_empty() => KnownBad::from_name(&name)
                .map(Some)
                .ok_or_else(|| format!("{var}={name}: not one of {:?}", KnownBad::names())),
            _ => Ok(None),
        }
    }
}

impl fmt::Display for KnownBad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ------------------------------------------------------------------------- the storage seam

/// The storage seams build on the crate's one forwarding base: a seam is [`Seam`] with the
/// [`Hooks`] of its fault.
pub use parkline::{Hooks, Seam};

/// `no-dir-sync`: `sync_dir` returns `Ok` without syncing.
#[derive(Clone, Copy, Debug, Default)]
pub struct SkipDirSync;

impl<S: Storage> Hooks<S> for SkipDirSync {
    fn sync_dir(&mut self, _inner: &mut S) -> io::Result<()> {
        Ok(())
    }
}

/// `compact-at-redrive`: once the `redrive` record the queue appended is fsynced, the mirror is
/// rewritten as a snapshot of the state it now holds in format 2's order ([`format_2_order`]:
/// the in-flight batch's items as `park` records among the others, then a `batch` record),
/// through M5's temp file, fsync, rename and directory fsync. Format 2's snapshot could not say a
/// line redriven while a batch is in flight with a seq below the batch's, so format 2 forbade
/// that compaction (M12); format 3's `flight` record says it, and the queue compacts there. The
/// queue above it goes on appending to the rewritten file; a file its rules cannot decode is left
/// as it is.
#[derive(Clone, Debug, Default)]
pub struct CompactAtRedrive {
    /// The mirror a `redrive` record was appended to and not yet fsynced.
    appended: Option<String>,
}

/// True when `bytes` (whole record lines) hold a record of type `kind`: its type key and value
/// can only be spelled unescaped outside a line's text, where every quote is escaped.
fn holds_record(bytes: &[u8], kind: &str) -> bool {
    let key = format!(r#""type":"{kind}""#);
    bytes
        .windows(key.len())
        .any(|window| window == key.as_bytes())
}

/// A version 3 mirror file of `state` in format 2's snapshot order: the dead letters, the
/// in-flight batch's items (each with its count before the batch) and the items parked before its
/// boundary as `dead`/`park` records in seq order, the `batch` record at the stored attempt, the
/// items parked after the boundary, then `next`. The order is impossible when a parked item's seq
/// is below the batch's; otherwise it decodes to `state`.
pub fn format_2_order(state: &mirror::MirrorState) -> Vec<u8> {
    let line = |json: String| {
        let crc = parkline_model::read::crc32(json.as_bytes());
        format!("{crc:08x} {json}\n")
    };
    let item = |kind: &str, item: &parkline::Item, handed: u64| {
        let text = serde_json::to_string(item.line.as_str()).unwrap_or_default();
        format!(
            r#"{{"type":"{kind}","seq":{},"request":{},"line":{text},"failures":{},"handed":{handed}}}"#,
            item.seq, item.request, item.failures
        )
    };
    let mut records: Vec<(Seq, String)> = Vec::new();
    records.extend(
        state
            .dead_letters
            .iter()
            .map(|i| (i.seq, item("dead", i, i.handed))),
    );
    let (before, after) = match &state.in_flight {
        Some(batch) => state
            .parked
            .split_at(batch.remaining.min(state.parked.len())),
        None => (&state.parked[..], &[][..]),
    };
    if let Some(batch) = &state.in_flight {
        let attempt = u64::from(batch.attempt.0);
        let items = batch.items.iter();
        records.extend(items.map(|i| (i.seq, item("park", i, i.handed.saturating_sub(attempt)))));
    }
    records.extend(before.iter().map(|i| (i.seq, item("park", i, i.handed))));
    records.sort_by_key(|(seq, _)| *seq);
    let mut json: Vec<String> = records.into_iter().map(|(_, json)| json).collect();
    if let Some(batch) = &state.in_flight {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for seq in batch.items.iter().map(|i| i.seq.0) {
            match runs.last_mut() {
                Some(run) if run.1 + 1 == seq => run.1 = seq,
                _ => runs.push((seq, seq)),
            }
        }
        let runs: Vec<String> = runs.iter().map(|(a, b)| format!("[{a},{b}]")).collect();
        json.push(format!(
            r#"{{"type":"batch","id":{},"attempt":{},"seqs":[{}],"remaining":{}}}"#,
            batch.id,
            batch.attempt,
            runs.join(","),
            batch.remaining
        ));
    }
    json.extend(after.iter().map(|i| item("park", i, i.handed)));
    let cap = state
        .cap
        .map_or(String::new(), |cap| format!(r#","cap":{cap}"#));
    json.push(format!(
        r#"{{"type":"next","seq":{},"batch":{}{cap}}}"#,
        state.next_seq, state.next_batch
    ));
    let mut bytes = line(format!(
        r#"{{"format":"parkline-mirror","version":{}}}"#,
        mirror::VERSION
    ))
    .into_bytes();
    for record in json {
        bytes.extend_from_slice(line(record).as_bytes());
    }
    bytes
}

impl CompactAtRedrive {
    fn compact<S: Storage>(inner: &mut S, name: &str) -> io::Result<()> {
        let Some(bytes) = inner.read(name)? else {
            return Ok(());
        };
        let Ok(state) = mirror::decode(&bytes) else {
            return Ok(());
        };
        let tmp = format!("{name}.tmp");
        inner.append(&tmp, &format_2_order(&state))?;
        inner.sync(&tmp)?;
        inner.rename(&tmp, name)?;
        inner.sync_dir()
    }
}

impl<S: Storage> Hooks<S> for CompactAtRedrive {
    fn append(&mut self, inner: &mut S, name: &str, bytes: &[u8]) -> io::Result<()> {
        inner.append(name, bytes)?;
        if holds_record(bytes, "redrive") {
            self.appended = Some(name.to_owned());
        }
        Ok(())
    }
    fn sync(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        inner.sync(name)?;
        if self.appended.as_deref() == Some(name) {
            self.appended = None;
            CompactAtRedrive::compact(inner, name)?;
        }
        Ok(())
    }
}

/// `no-discard-sync`: the fsync of a mirror whose last append held a `discard` record returns
/// `Ok` without syncing, so the queue acknowledges a discard that is not durable. A later fsync
/// of the file (the next op's) makes the record durable after all, so only a power loss before it
/// shows the fault: the discarded dead letters come back. A discard that compacts writes no
/// `discard` record and is synced as usual.
#[derive(Clone, Debug, Default)]
pub struct SkipDiscardSync {
    /// The mirror a `discard` record was last appended to, its fsync not yet skipped.
    appended: Option<String>,
}

impl<S: Storage> Hooks<S> for SkipDiscardSync {
    fn append(&mut self, inner: &mut S, name: &str, bytes: &[u8]) -> io::Result<()> {
        inner.append(name, bytes)?;
        self.appended = holds_record(bytes, "discard").then(|| name.to_owned());
        Ok(())
    }
    fn sync(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        if self.appended.as_deref() == Some(name) {
            self.appended = None;
            return Ok(());
        }
        inner.sync(name)
    }
}

/// The hooks of a known-bad behaviour's storage seam, or none (the sound storage).
#[derive(Clone, Debug, Default)]
pub enum StorageHooks {
    /// No change: every call passed on.
    #[default]
    Sound,
    /// `no-dir-sync`.
    SkipDirSync(SkipDirSync),
    /// `compact-at-redrive`.
    CompactAtRedrive(CompactAtRedrive),
    /// `no-discard-sync`.
    SkipDiscardSync(SkipDiscardSync),
    /// `name-blind`.
    NameBlind(NameBlind),
}

impl<S: Storage> Hooks<S> for StorageHooks {
    fn append(&mut self, inner: &mut S, name: &str, bytes: &[u8]) -> io::Result<()> {
        match self {
            StorageHooks::CompactAtRedrive(hooks) => hooks.append(inner, name, bytes),
            StorageHooks::SkipDiscardSync(hooks) => hooks.append(inner, name, bytes),
            _ => inner.append(name, bytes),
        }
    }
    fn sync(&mut self, inner: &mut S, name: &str) -> io::Result<()> {
        match self {
            StorageHooks::CompactAtRedrive(hooks) => hooks.sync(inner, name),
            StorageHooks::SkipDiscardSync(hooks) => hooks.sync(inner, name),
            _ => inner.sync(name),
        }
    }
    fn sync_dir(&mut self, inner: &mut S) -> io::Result<()> {
        match self {
            StorageHooks::SkipDirSync(hooks) => Hooks::<S>::sync_dir(hooks, inner),
            _ => inner.sync_dir(),
        }
    }
    fn identity(&mut self, inner: &mut S, name: &str) -> io::Result<Identity> {
        match self {
            StorageHooks::NameBlind(hooks) => Hooks::<S>::identity(hooks, inner, name),
            _ => inner.identity(name),
        }
    }
}

/// `name-blind`: [`Storage::identity`] answers [`Identity::Same`] whatever the name leads to, as
/// the trait's old provided method did; every other call is passed on. Answering the check
/// itself is its fault.
#[derive(Clone, Copy, Debug, Default)]
pub struct NameBlind;

impl<S: Storage> Hooks<S> for NameBlind {
    fn identity(&mut self, _inner: &mut S, _name: &str) -> io::Result<Identity> {
        Ok(Identity::Same)
    }
}

/// The storage a check runs the queue on: `S` behind the storage seam of the known-bad
/// behaviour, or behind the sound one (one type for both, so the harness holds one kind of
/// queue).
pub type Seamed<S> = Seam<S, StorageHooks>;

/// `storage` behind the storage seam of `bad`, if it has one.
pub fn seamed<S: Storage>(storage: S, bad: Option<KnownBad>) -> Seamed<S> {
    let hooks = match bad {
        Some(KnownBad::NameBlind) => StorageHooks::NameBlind(NameBlind),
        Some(KnownBad::NoDirSync) => StorageHooks::SkipDirSync(SkipDirSync),
        Some(KnownBad::CompactAtRedrive) => {
            StorageHooks::CompactAtRedrive(CompactAtRedrive::default())
        }
        Some(KnownBad::NoDiscardSync) => StorageHooks::SkipDiscardSync(SkipDiscardSync::default()),
        _ => StorageHooks::Sound,
    };
    Seam::new(storage, hooks)
}

// -------------------------------------------------------------------------- the driver seam

/// An error of a [`Driver`] call: the crate's, or one the broken driver gives itself where the
/// old in-crate switch refused (a boundary or settle while its early-cleared batch is out).
#[derive(Debug)]
pub struct DriverError {
    kind: ErrorKind,
    message: String,
}

impl DriverError {
    /// The kind, as the crate's `ErrorKind`.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for DriverError {}

impl From<parkline::Error> for DriverError {
    fn from(e: parkline::Error) -> Self {
        DriverError {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Why a driver always holds its queue: [`Driver::park_concurrently`] takes it for its threads
/// and puts it back before it returns (its threads' panics are its own).
const HELD: &str = "a driver holds its queue between calls";

/// What the daemon calls instead of the bare [`Queue`] in a check: the queue's own answers, or,
/// under a driver-seam behaviour, the broken protocol that behaviour names. Storage-seam and
/// read behaviours pass through.
#[derive(Debug)]
pub struct Driver<S: Storage> {
    /// `None` only inside [`Driver::park_concurrently`], which shares it for its threads.
    queue: Option<Queue<S>>,
    bad: Option<KnownBad>,
    /// `clear-before-hand-over`: the batch handed over although the mirror already forgot it.
    cleared_early: Option<Batch>,
}

impl<S: Storage> Driver<S> {
    /// Drives `queue`, broken as `bad` says.
    pub fn new(queue: Queue<S>, bad: Option<KnownBad>) -> Self {
        Driver {
            queue: Some(queue),
            bad,
            cleared_early: None,
        }
    }

    /// The queue driven (its state, file and poison are what the checks look at).
    pub fn queue(&self) -> &Queue<S> {
        self.queue.as_ref().expect(HELD)
    }

    /// Gives the queue back.
    pub fn into_queue(self) -> Queue<S> {
        self.queue.expect(HELD)
    }

    fn queue_mut(&mut self) -> &mut Queue<S> {
        self.queue.as_mut().expect(HELD)
    }

    /// `Queue::park`, unchanged by every behaviour.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn park(&mut self, request: RequestId, line: &str) -> Result<Parked, DriverError> {
        Ok(self.queue_mut().park(request, line)?)
    }

    /// `SharedQueue::park` from one thread per line, all through one `SharedQueue` made of this
    /// queue, released together by a barrier so that they tend to share a group (D16). `each`
    /// sees every answer on this thread as its park returns (in the order they return, with
    /// the line's index); then every answer comes back in the order of `lines`. The queue is
    /// this driver's again when it returns, and every behaviour leaves these parks as the crate
    /// gives them.
    ///
    /// # Panics
    ///
    /// When a parker panicked (the crate's bug, or the storage's).
    pub fn park_concurrently(
        &mut self,
        lines: &[(RequestId, &str)],
        mut each: impl FnMut(usize, &Result<Parked, DriverError>),
    ) -> Vec<Result<Parked, DriverError>>
    where
        S: Send,
    {
        let shared = SharedQueue::new(self.queue.take().expect(HELD));
        let barrier = Barrier::new(lines.len());
        let (answered, answers) = mpsc::channel();
        let mut got: Vec<Option<Result<Parked, DriverError>>> =
            lines.iter().map(|_| None).collect();
        std::thread::scope(|scope| {
            let parkers: Vec<_> = lines
                .iter()
                .enumerate()
                .map(|(member, &(request, line))| {
                    let (shared, barrier, answered) = (&shared, &barrier, answered.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        let answer = shared.park(request, line).map_err(DriverError::from);
                        // The receiver outlives every parker.
                        let _ = answered.send((member, answer));
                    })
                })
                .collect();
            drop(answered);
            for (member, answer) in answers {
                each(member, &answer);
                got[member] = Some(answer);
            }
            for parker in parkers {
                if let Err(panic) = parker.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        // Every parker returned, so no call holds the queue and this is the last handle.
        self.queue = Some(shared.into_queue().expect(HELD));
        got.into_iter()
            .map(|answer| answer.expect("every parker answered"))
            .collect()
    }

    /// `Queue::park_all`, or, for `torn-group-keeps-prefix`, one `park` per line (each durable
    /// on its own, so a crash between them keeps a prefix of the group).
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn park_all(&mut self, lines: &[(RequestId, &str)]) -> Result<Vec<Parked>, DriverError> {
        if self.bad != Some(KnownBad::TornGroupKeepsPrefix) {
            return Ok(self.queue_mut().park_all(lines)?);
        }
        // Refuse a bad line up front as the crate does, so only the crash path differs.
        if let Some((i, _)) = lines
            .iter()
            .enumerate()
            .find(|(_, (_, line))| line.contains('\n'))
        {
            return Err(DriverError {
                kind: ErrorKind::InvalidLine,
                message: format!("line {i} of the group contains a newline"),
            });
        }
        let mut seqs = Vec::with_capacity(lines.len());
        for (request, line) in lines {
            seqs.push(self.queue_mut().park(*request, line)?);
        }
        Ok(seqs)
    }

    /// `Queue::redrive`.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn redrive(&mut self, seqs: &[Seq]) -> Result<Vec<Seq>, DriverError> {
        Ok(self.queue_mut().redrive(seqs)?)
    }

    /// `Queue::redrive_all`.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn redrive_all(&mut self) -> Result<Vec<Seq>, DriverError> {
        Ok(self.queue_mut().redrive_all()?)
    }

    /// `Queue::discard`.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn discard(&mut self, seqs: &[Seq]) -> Result<Vec<Seq>, DriverError> {
        Ok(self.queue_mut().discard(seqs)?)
    }

    /// `Queue::discard_all`.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn discard_all(&mut self) -> Result<Vec<Seq>, DriverError> {
        Ok(self.queue_mut().discard_all()?)
    }

    /// `Queue::idle`.
    ///
    /// # Errors
    ///
    /// The queue's.
    pub fn idle(&mut self) -> Result<(), DriverError> {
        Ok(self.queue_mut().idle()?)
    }

    /// `Queue::boundary`, or its broken form.
    ///
    /// # Errors
    ///
    /// The queue's, and `BatchInFlight` while an early-cleared batch is unsettled.
    pub fn boundary(&mut self, budget: Budget) -> Result<Option<Batch>, DriverError> {
        if let Some(batch) = &self.cleared_early
            && !self.queue().is_poisoned()
        {
            return Err(DriverError {
                kind: ErrorKind::BatchInFlight,
                message: format!("batch {} was handed over and is not settled yet", batch.id),
            });
        }
        let recovered = self.queue().in_flight().is_some();
        match self.bad {
            Some(KnownBad::PopFront) => Ok(self.queue_mut().boundary(Budget(0))?),
            Some(KnownBad::NoAttemptCounter) => {
                let mut batch = self.queue_mut().boundary(budget)?;
                if recovered && let Some(batch) = &mut batch {
                    batch.attempt = Attempt(batch.attempt.0.saturating_sub(1).max(1));
                }
                Ok(batch)
            }
            Some(KnownBad::CountAtSettle) => {
                let mut batch = self.queue_mut().boundary(budget)?;
                // The hand-overs of an unsettled batch are not counted: a repeat shows the
                // count of its first hand-over, as if the crash had cut nothing.
                if let Some(batch) = &mut batch {
                    let uncounted = u64::from(batch.attempt.0.saturating_sub(1));
                    for item in &mut batch.items {
                        item.handed = item.handed.saturating_sub(uncounted);
                    }
                }
                Ok(batch)
            }
            Some(KnownBad::ClearBeforeHandOver) => {
                let batch = self.queue_mut().boundary(budget)?;
                if !recovered && let Some(batch) = &batch {
                    self.queue_mut()
                        .settle(batch.id, &vec![Outcome::Delivered; batch.items.len()])?;
                    self.cleared_early = Some(batch.clone());
                }
                Ok(batch)
            }
            _ => Ok(self.queue_mut().boundary(budget)?),
        }
    }

    /// `Queue::settle`, or, for an early-cleared batch, the driver's own answer: every item
    /// delivered (the mirror already dropped them).
    ///
    /// # Errors
    ///
    /// The queue's, and for an early-cleared batch `UnknownBatch` or `OutcomeCount` as the
    /// queue would give them.
    pub fn settle(&mut self, id: BatchId, outcomes: &[Outcome]) -> Result<Settlement, DriverError> {
        let Some(batch) = self
            .cleared_early
            .as_ref()
            .filter(|_| !self.queue().is_poisoned())
        else {
            return Ok(self.queue_mut().settle(id, outcomes)?);
        };
        if batch.id != id {
            return Err(DriverError {
                kind: ErrorKind::UnknownBatch,
                message: format!("batch {id} is not the batch in flight"),
            });
        }
        if outcomes.len() != batch.items.len() {
            return Err(DriverError {
                kind: ErrorKind::OutcomeCount,
                message: format!(
                    "batch {id} has {} items but settle got {} outcomes",
                    batch.items.len(),
                    outcomes.len()
                ),
            });
        }
        let delivered = batch.items.iter().map(|item| item.seq).collect();
        self.cleared_early = None;
        Ok(Settlement::new(delivered, Vec::new(), Vec::new()))
    }
}

// ------------------------------------------------------------------------ the read wrappers

/// `Transcript::read`, or its broken form under a read behaviour (`bad` of [`KnownBad::READ`];
/// any other passes through). The wrappers post-process the crate's window, or the request it
/// is asked, the way the old in-crate switches broke it.
///
/// # Errors
///
/// The crate's error for the request it was asked.
///
/// # Example
///
/// ```
/// use parkline::read::{ChildId, ReadRequest, Selector, Transcript, TurnId, TurnSeq};
/// use parkline_harness::known_bad::{KnownBad, read_as};
/// let mut child = Transcript::new(ChildId::new("c")?);
/// child.push_turn(TurnId::new("t1")?, TurnSeq(1), "z".repeat(1000))?;
/// let request = ReadRequest::new(Selector::Since(child.start_cursor()), 300);
/// let sound = read_as(&child, None, &request)?;
/// assert!(sound.text.contains("rest at turn:t1"));
/// let broken = read_as(&child, Some(KnownBad::ExcerptWithoutReference), &request)?;
/// assert!(broken.excerpt.is_none() && !broken.text.contains("rest at turn:t1"));
/// # Ok::<(), parkline::Error>(())
/// ```
pub fn read_as(
    transcript: &Transcript,
    bad: Option<KnownBad>,
    request: &ReadRequest,
) -> parkline::Result<Window> {
    match bad {
        Some(KnownBad::ExcerptWithoutReference) => {
            transcript.read(request).map(excerpt_without_reference)
        }
        Some(KnownBad::AdvanceBeforeBuild) => {
            let window = transcript.read(request)?;
            Ok(advance_before_build(transcript, request, window))
        }
        Some(KnownBad::TurnsOnlyBudget) => turns_only_budget(transcript, request),
        Some(KnownBad::TrustSeq) => trust_seq(transcript, request),
        _ => transcript.read(request),
    }
}

/// `trust-seq` (R5): a cursor refused as diverged is read as the cursor after the turn the
/// transcript now has at its seq, which is what a cursor naming only its seq reads.
fn trust_seq(transcript: &Transcript, request: &ReadRequest) -> parkline::Result<Window> {
    let refused = match transcript.read(request) {
        Err(error) if error.kind() == ErrorKind::CursorDiverged => error,
        answer => return answer,
    };
    let Selector::Since(cursor) = &request.selector else {
        return Err(refused);
    };
    let Some(turn) = transcript
        .turns()
        .iter()
        .find(|turn| turn.seq == cursor.seq())
    else {
        return Err(refused);
    };
    let turn = parkline::read::TurnRef {
        id: parkline::read::TurnId::new(turn.id)?,
        seq: turn.seq,
    };
    let trusted = Cursor::after(transcript.child(), &turn);
    let mut asked = request.clone();
    asked.selector = Selector::Since(trusted.clone());
    let mut window = transcript.read(&asked)?;
    window.text =
        window
            .text
            .replacen(&format!("since:{trusted}]"), &format!("since:{cursor}]"), 1);
    Ok(window)
}

/// `excerpt-without-reference` (R5): the cut turn is presented as whole, without the
/// `rest at turn:<id> offset <n>` reference to its rest and without the excerpt in the window,
/// while the cursor still moves past it, so the rest can never be asked for.
fn excerpt_without_reference(mut window: Window) -> Window {
    let Some(excerpt) = window.excerpt.take() else {
        return window;
    };
    let (id, seq) = (&excerpt.turn.id, excerpt.turn.seq);
    let rest = if excerpt.to < excerpt.total {
        format!(", rest at turn:{id} offset {}", excerpt.to)
    } else {
        String::new()
    };
    let header = format!(
        "[turn {id} seq {seq}: excerpt chars {}..{} of {}{rest}]\n",
        excerpt.from, excerpt.to, excerpt.total
    );
    let as_whole = format!(
        "[turn {id} seq {seq}: {} chars]\n",
        excerpt.to - excerpt.from
    );
    let whole = window.whole.len();
    let counts = format!("{whole} whole, 1 excerpt,");
    let as_counts = format!("{} whole, 0 excerpt,", whole + 1);
    window.text = window
        .text
        .replacen(&header, &as_whole, 1)
        .replacen(&counts, &as_counts, 1);
    let at = window.whole.partition_point(|turn| turn.seq < seq);
    window.whole.insert(at, excerpt.turn);
    window.chars = window.text.chars().count();
    window
}

/// `advance-before-build` (R5): a forward read's next cursor is set at the last selected turn,
/// as if the answer had held every one, so the turns it omitted are skipped.
fn advance_before_build(
    transcript: &Transcript,
    request: &ReadRequest,
    mut window: Window,
) -> Window {
    let forward = matches!(
        request.selector,
        Selector::Since(_) | Selector::SinceTurn(_)
    );
    let (Some(next), Some(last)) = (&window.next, &window.omitted.last) else {
        return window;
    };
    if !forward || last.seq <= next.seq() {
        return window;
    }
    let advanced = Cursor::after(transcript.child(), last);
    window.text = window.text.replacen(
        &format!("; next since:{next}]"),
        &format!("; next since:{advanced}]"),
        1,
    );
    window.next = Some(advanced);
    window.chars = window.text.chars().count();
    window
}

/// `turns-only-budget` (R1): `chars_max` bounds the completed turns' text only, the framing, the
/// partial turn and the request records coming on top: the crate is asked with the largest
/// budget whose answer holds at most `chars_max` characters of turn text.
fn turns_only_budget(transcript: &Transcript, request: &ReadRequest) -> parkline::Result<Window> {
    let chars: BTreeMap<TurnSeq, usize> = transcript
        .turns()
        .iter()
        .map(|turn| (turn.seq, turn.text.chars().count()))
        .collect();
    let turn_text = |window: &Window| -> usize {
        let whole: usize = window
            .whole
            .iter()
            .map(|turn| chars.get(&turn.seq).copied().unwrap_or(0))
            .sum();
        whole + window.excerpt.as_ref().map_or(0, |e| e.to - e.from)
    };
    let asked = |chars_max: usize| transcript.read(&request.clone().with_chars_max(chars_max));
    // No budget above the whole answer's length admits more.
    let whole_answer = match asked(usize::MAX) {
        Ok(window) => window.chars,
        Err(_) => return asked(request.chars_max),
    };
    let fits = |window: &parkline::Result<Window>| match window {
        Ok(window) => turn_text(window) <= request.chars_max,
        Err(_) => true,
    };
    // Binary search for the largest budget that still fits: the turn text a budget admits only
    // grows with the budget.
    let (mut low, mut high) = (
        request.chars_max,
        request.chars_max.saturating_add(whole_answer),
    );
    if fits(&asked(high)) {
        low = high;
    }
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if fits(&asked(mid)) {
            low = mid;
        } else {
            high = mid;
        }
    }
    match asked(low) {
        Ok(window) => Ok(window),
        // No larger budget answers: the crate's own refusal at the caller's budget.
        Err(_) => asked(request.chars_max),
    }
}

#[cfg(test)]
mod tests {
    //! Each seam is the broken protocol its name says, shown on the crate's own answers through
    //! the seam (the requirement it breaks, not only a divergence from the reference), next to
    //! the same scenario passing without it.

    use parkline::{Config, MemStorage};

    use super::*;
    use crate::simdisk::SimDisk;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const MIRROR: &str = "m";

    fn open(disk: &SimDisk, bad: Option<KnownBad>) -> Result<Driver<Seamed<SimDisk>>, DriverError> {
        let storage = seamed(disk.clone(), bad);
        let queue = Queue::with_storage(storage, MIRROR, Config::default())?;
        Ok(Driver::new(queue, bad))
    }

    /// Acceptance 2 through the driver: five lines, a boundary, a power loss before the settle;
    /// the first batch and the next life's first boundary.
    fn crash_between_batch_written_and_mirror_cleared(
        bad: Option<KnownBad>,
    ) -> Result<(Batch, Option<Batch>), DriverError> {
        let disk = SimDisk::new();
        let mut driver = open(&disk, bad)?;
        for n in 1..=5 {
            driver.park(RequestId(n), &format!("r-{n} done"))?;
        }
        let first = driver
            .boundary(Budget(1 << 20))?
            .unwrap_or_else(|| unreachable!("five lines parked"));
        drop(driver);
        let mut driver = open(&disk.crash(), bad)?;
        let second = driver.boundary(Budget(1 << 20))?;
        Ok((first, second))
    }

    #[test]
    fn names_are_kebab_case_and_round_trip() {
        for bad in KnownBad::ALL {
            assert_eq!(KnownBad::from_name(bad.name()), Some(bad));
            assert!(
                bad.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-')
            );
        }
        assert_eq!(KnownBad::from_name("PopFront"), None);
        assert_eq!(
            KnownBad::DELIVERY.len()
                + KnownBad::FILE.len()
                + KnownBad::SIZE.len()
                + KnownBad::FORMAT_4.len()
                + KnownBad::READ.len(),
            KnownBad::ALL.len()
        );
        assert!(KnownBad::READ.iter().all(|bad| bad.is_read()));
        assert!(!KnownBad::DELIVERY.iter().any(|bad| bad.is_read()));
    }

    /// Every harness behaviour is the model's variant of the same name, breaking the same
    /// requirement, so `parkline check --variant <name>` and the crate-side checks agree.
    #[test]
    fn each_behaviour_breaks_what_the_model_variant_of_its_name_breaks() {
        use parkline_model::delivery::Variant;
        use parkline_model::read::ReadVariant;
        for bad in KnownBad::ALL {
            let model_breaks = if bad.is_read() {
                ReadVariant::from_name(bad.name()).and_then(ReadVariant::breaks)
            } else {
                Variant::from_name(bad.name()).and_then(Variant::breaks)
            };
            match (bad, model_breaks) {
                // The model has no disk: no-dir-sync has no model variant (D16 is the crate's).
                (KnownBad::NoDirSync, None) => {}
                // compact-at-redrive is the storage seam of the model's prefix-snapshot.
                (KnownBad::CompactAtRedrive, None) => {}
                // The model has no disk: no-discard-sync, a skipped fsync, is the crate's (D8).
                (KnownBad::NoDiscardSync, None) => {}
                // The model has no file names: name-blind is the crate's (M8).
                (KnownBad::NameBlind, None) => {}
                // The model has no file: never-compact-at-rest, a file's size, is the crate's.
                (KnownBad::NeverCompactAtRest, None) => {}
                // The model has no clock: frozen-clock, a time recorded, is the crate's (D24).
                (KnownBad::FrozenClock, None) => {}
                (_, Some(property)) => {
                    let id = property.split(' ').next().unwrap_or_default();
                    assert_eq!(
                        id,
                        bad.breaks(),
                        "{bad}: the model variant breaks {property}"
                    );
                }
                (_, None) => panic!("{bad}: no model variant of that name"),
            }
        }
    }

    /// M12: a line dies, a later one goes in flight, the dead one is redriven (its seq below the
    /// batch's): the sound queue appends and its file reopens; behind `compact-at-redrive` the
    /// redrive rewrites the file as a snapshot the next open refuses as `Corrupt`.
    #[test]
    fn compact_at_redrive_writes_a_file_the_next_open_refuses() -> TestResult {
        for bad in [None, Some(KnownBad::CompactAtRedrive)] {
            let disk = SimDisk::new();
            let mut config = Config::default();
            config.failures_max = 1;
            let storage = seamed(disk.clone(), bad);
            let mut queue = Queue::with_storage(storage, MIRROR, config.clone())?;
            queue.park(RequestId(1), "a")?;
            let batch = queue.boundary(Budget(100))?.ok_or("a batch")?;
            queue.settle(batch.id, &[Outcome::Failed])?;
            queue.park(RequestId(2), "b")?;
            queue.boundary(Budget(100))?.ok_or("a second batch")?;
            assert_eq!(queue.redrive_all()?, vec![Seq(1)]);
            drop(queue);
            let reopened = Queue::with_storage(disk, MIRROR, config);
            match bad {
                None => assert_eq!(reopened?.parked().len(), 1),
                Some(_) => assert_eq!(
                    reopened.map(|_| ()).map_err(|e| e.kind()),
                    Err(ErrorKind::Corrupt)
                ),
            }
        }
        Ok(())
    }

    /// D8: a dead letter discarded, then a power loss: the sound queue's discard is durable;
    /// behind `no-discard-sync` the dead letter is back, while a clean reopen (the page cache
    /// kept) shows it gone on both, so only durability is broken.
    #[test]
    fn no_discard_sync_brings_a_discarded_dead_letter_back_after_a_power_loss() -> TestResult {
        for (bad, back) in [(None, 0), (Some(KnownBad::NoDiscardSync), 1)] {
            let disk = SimDisk::new();
            let mut config = Config::default();
            config.failures_max = 1;
            let storage = seamed(disk.clone(), bad);
            let mut queue = Queue::with_storage(storage, MIRROR, config.clone())?;
            queue.park(RequestId(1), "a")?;
            let batch = queue.boundary(Budget(100))?.ok_or("a batch")?;
            queue.settle(batch.id, &[Outcome::Failed])?;
            assert_eq!(queue.discard(&[Seq(1)])?, vec![Seq(1)]);
            drop(queue);
            let crashed = Queue::with_storage(disk.crash(), MIRROR, config.clone())?;
            assert_eq!(crashed.dead_letters().len(), back, "{bad:?}");
            let reopened = Queue::with_storage(disk, MIRROR, config)?;
            assert!(reopened.dead_letters().is_empty(), "{bad:?}");
        }
        Ok(())
    }

    fn seqs(batch: &Batch) -> Vec<Seq> {
        batch.items.iter().map(|item| item.seq).collect()
    }

    /// The sound driver passes acceptance 2: the batch comes back as a repeat.
    #[test]
    fn acceptance_2_passes_without_a_seam() -> TestResult {
        let (first, second) = crash_between_batch_written_and_mirror_cleared(None)?;
        let second = second.ok_or("the batch must come back")?;
        assert_eq!((second.id, seqs(&second)), (first.id, seqs(&first)));
        assert_eq!(second.attempt, Attempt(2));
        assert!(second.is_repeat());
        Ok(())
    }

    /// D9: `clear-before-hand-over` loses the batch in a crash after the boundary.
    #[test]
    fn clear_before_hand_over_loses_the_batch_in_acceptance_2() -> TestResult {
        let bad = Some(KnownBad::ClearBeforeHandOver);
        let (first, second) = crash_between_batch_written_and_mirror_cleared(bad)?;
        assert_eq!(first.items.len(), 5);
        assert_eq!(
            second, None,
            "the five lines were never settled, yet they are gone"
        );
        Ok(())
    }

    /// D10: `no-attempt-counter` hands the recovered batch with attempt 1, no repeat mark.
    #[test]
    fn no_attempt_counter_hands_the_repeat_unmarked_in_acceptance_2() -> TestResult {
        let bad = Some(KnownBad::NoAttemptCounter);
        let (first, second) = crash_between_batch_written_and_mirror_cleared(bad)?;
        let second = second.ok_or("still there")?;
        assert_eq!((second.id, seqs(&second)), (first.id, seqs(&first)));
        assert_eq!(second.attempt, Attempt(1));
        assert!(!second.is_repeat());
        assert!(second.notified().iter().all(|n| !n.repeat));
        Ok(())
    }

    /// D1: `pop-front` hands one of thirteen parked lines over (acceptance 1 wants all 13).
    #[test]
    fn pop_front_hands_one_line_of_thirteen() -> TestResult {
        for (bad, expected) in [(None, (13, 0)), (Some(KnownBad::PopFront), (1, 12))] {
            let mut driver = open(&SimDisk::new(), bad)?;
            for n in 1..=13 {
                driver.park(RequestId(n), &format!("[delegation r-{n} done] ok"))?;
            }
            let batch = driver.boundary(Budget(1 << 20))?.ok_or("parked")?;
            assert_eq!((batch.items.len(), batch.remaining), expected, "{bad:?}");
        }
        Ok(())
    }

    /// D16, M5: `no-dir-sync` makes no directory fsync, so the mirror created and the park
    /// acknowledged on it are gone after a power loss; without the seam the park survives.
    #[test]
    fn no_dir_sync_loses_an_acknowledged_park_in_a_power_loss() -> TestResult {
        let storage = seamed(MemStorage::new(), Some(KnownBad::NoDirSync));
        let queue = Queue::with_storage(storage, MIRROR, Config::default())?;
        assert_eq!(queue.into_storage().inner.dir_syncs(), 0);
        let queue = Queue::with_storage(MemStorage::new(), MIRROR, Config::default())?;
        assert_eq!(queue.into_storage().dir_syncs(), 1);
        for (bad, parked) in [(None, 1), (Some(KnownBad::NoDirSync), 0)] {
            let disk = SimDisk::new();
            let mut driver = open(&disk, bad)?;
            driver.park(RequestId(1), "acknowledged")?;
            drop(driver);
            let driver = open(&disk.crash(), bad)?;
            assert_eq!(driver.queue().parked().len(), parked, "{bad:?}");
        }
        Ok(())
    }

    /// `clear-before-hand-over` stays drivable for the checkers that are to catch it: its
    /// settle reports every item delivered (the mirror already dropped them), a boundary before
    /// it is refused as the crate refuses one, and the next boundary works.
    #[test]
    fn clear_before_hand_over_settles_and_goes_on() -> TestResult {
        let mut driver = open(&SimDisk::new(), Some(KnownBad::ClearBeforeHandOver))?;
        driver.park(RequestId(1), "a")?;
        driver.park(RequestId(2), "b")?;
        let batch = driver.boundary(Budget(100))?.ok_or("parked")?;
        assert!(driver.queue().in_flight().is_none() && driver.queue().parked().is_empty());
        let refused = driver.boundary(Budget(100)).map_err(|e| e.kind());
        assert_eq!(refused.err(), Some(ErrorKind::BatchInFlight));
        let wrong = driver.settle(BatchId(9), &[Outcome::Delivered; 2]);
        assert_eq!(
            wrong.map_err(|e| e.kind()).err(),
            Some(ErrorKind::UnknownBatch)
        );
        let short = driver.settle(batch.id, &[Outcome::Delivered]);
        assert_eq!(
            short.map_err(|e| e.kind()).err(),
            Some(ErrorKind::OutcomeCount)
        );
        let settlement = driver.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
        assert_eq!(settlement.delivered, vec![Seq(1), Seq(2)]);
        driver.park(RequestId(3), "c")?;
        let next = driver.boundary(Budget(100))?.ok_or("parked")?;
        assert_eq!(next.items.len(), 1);
        Ok(())
    }
}
