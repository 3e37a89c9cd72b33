//! Group commit (D1, D3, D16, D22, M10): a `SharedQueue`'s callers share one append and one
//! fsync, each with its own answer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::ThreadId;
use std::time::Duration;

use super::*;
use crate::SharedQueue;

/// A `MemStorage` whose file fsyncs wait at a gate the test opens, so a group forms behind a
/// leader deterministically; it can fail or panic the fsync of one group, and shows the test the
/// threads that wrote and the files as fsynced.
pub(super) type Gated = Seam<MemStorage, Arc<Gate>>;

/// An empty `MemStorage` behind `gate`.
pub(super) fn gated(gate: &Arc<Gate>) -> Gated {
    Seam::new(MemStorage::new(), Arc::clone(gate))
}

#[derive(Debug, Default)]
pub(super) struct Gate {
    /// Fsyncs wait while this is set.
    pub(super) closed: AtomicBool,
    /// Set once an fsync waits at the closed gate.
    pub(super) waiting: AtomicBool,
    /// The number of the file fsync (1-based, counted from `syncs`' reset) that fails.
    pub(super) fail_at: AtomicU64,
    /// The number of the file fsync that panics.
    pub(super) panic_at: AtomicU64,
    pub(super) syncs: AtomicU64,
    /// The threads that appended or fsynced (counted, never listed).
    pub(super) writers: Mutex<HashSet<ThreadId>>,
    /// Each file as its last successful fsync left it.
    pub(super) durable: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl Gate {
    fn wrote(&self) {
        let mut writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        writers.insert(std::thread::current().id());
    }

    /// The mirror as a power loss now would leave it, opened.
    #[cfg(feature = "tokio")]
    pub(super) fn durable_image(&self) -> crate::Result<Queue<MemStorage>> {
        let mut image = MemStorage::new();
        for (name, bytes) in self
            .durable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            image.set_file(name, bytes.clone());
        }
        Queue::with_storage(image, "m", Config::default())
    }
}

impl Hooks<MemStorage> for Arc<Gate> {
    fn append(&mut self, inner: &mut MemStorage, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.wrote();
        inner.append(name, bytes)
    }
    fn sync(&mut self, inner: &mut MemStorage, name: &str) -> io::Result<()> {
        self.wrote();
        while self.closed.load(Ordering::SeqCst) {
            self.waiting.store(true, Ordering::SeqCst);
            std::thread::yield_now();
        }
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_at.load(Ordering::SeqCst) == n {
            return Err(io::Error::other("injected fsync failure"));
        }
        assert_ne!(
            self.panic_at.load(Ordering::SeqCst),
            n,
            "injected panic in fsync {n}"
        );
        let bytes = inner.file(name).unwrap_or_default().to_vec();
        let mut durable = self.durable.lock().unwrap_or_else(|e| e.into_inner());
        durable.insert(name.to_owned(), bytes);
        inner.sync(name)
    }
}

/// What a caller of the group asks.
#[derive(Clone, Debug)]
pub(super) enum Ask {
    Park(u64, &'static str),
    All(Vec<(u64, &'static str)>),
}

pub(super) type Answer = Result<Vec<u64>, ErrorKind>;

pub(super) fn ask(queue: &SharedQueue<Gated>, what: &Ask) -> Answer {
    let answer = match what {
        Ask::Park(request, line) => queue.park(RequestId(*request), line).map(|seq| vec![seq]),
        Ask::All(lines) => {
            let lines: Vec<(RequestId, &str)> =
                lines.iter().map(|(r, l)| (RequestId(*r), *l)).collect();
            queue.park_all(&lines)
        }
    };
    answer
        .map(|answers| answers.iter().map(|parked| parked.seq().0).collect())
        .map_err(|e| e.kind())
}

/// Runs `first` as the leader of a group whose fsync waits at the gate, queues each of `rest`
/// behind it in order (each caller joins before the next starts), opens the gate, and returns
/// every answer in that order with the file fsyncs the parks took.
fn group_behind_a_leader(first: Ask, rest: Vec<Ask>, fail_at: u64) -> (Vec<Answer>, u64) {
    let (answers, fsyncs, _) = grouped(Config::default(), first, rest, fail_at);
    (answers, fsyncs)
}

/// [`group_behind_a_leader`] with `config`, also giving the queue back at the end.
fn grouped(
    config: Config,
    first: Ask,
    rest: Vec<Ask>,
    fail_at: u64,
) -> (Vec<Answer>, u64, Queue<Gated>) {
    let gate = Arc::new(Gate::default());
    let queue = Queue::with_storage(gated(&gate), "m", config).expect("create");
    let queue = SharedQueue::new(queue.with_clock(fixed()));
    let fsyncs_before = queue.stats().expect("stats").fsyncs;
    gate.syncs.store(0, Ordering::SeqCst);
    gate.fail_at.store(fail_at, Ordering::SeqCst);
    gate.closed.store(true, Ordering::SeqCst);
    let leader = {
        let queue = queue.clone();
        std::thread::spawn(move || ask(&queue, &first))
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let mut callers = vec![leader];
    for (i, what) in rest.into_iter().enumerate() {
        let caller = queue.clone();
        callers.push(std::thread::spawn(move || ask(&caller, &what)));
        while queue.pending() < i + 1 {
            std::thread::yield_now();
        }
    }
    gate.closed.store(false, Ordering::SeqCst);
    let answers = callers
        .into_iter()
        .map(|caller| caller.join().expect("a caller"))
        .collect();
    let fsyncs = queue.stats().map_or(u64::MAX, |s| s.fsyncs) - fsyncs_before;
    (
        answers,
        fsyncs,
        queue.into_queue().expect("the last handle"),
    )
}

/// The mirror's bytes in `queue`'s storage.
fn mirror(queue: &Queue<Gated>) -> Vec<u8> {
    after_header(queue.storage().inner.file("m").unwrap_or_default())
}

/// The mirror a plain `Queue` writes for `parks`, one call each.
fn parked_one_by_one(parks: &[(u64, &str)]) -> Vec<u8> {
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default()).expect("create");
    let mut queue = queue.with_clock(fixed());
    for (request, line) in parks {
        queue.park(RequestId(*request), line).expect("park");
    }
    after_header(queue.storage().file("m").unwrap_or_default())
}

/// How long a test waits for a call that must answer; far longer than any call here takes.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// `call`'s answer, run on a thread of its own; an error when it gives none within
/// [`ANSWER_WAIT`], so a caller left waiting for ever fails its test instead of hanging it.
pub(super) fn answered_within<T: Send + 'static>(
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (sender, answer) = mpsc::channel();
    std::thread::spawn(move || sender.send(call()));
    answer
        .recv_timeout(ANSWER_WAIT)
        .map_err(|e| format!("no answer within {ANSWER_WAIT:?} ({e})"))
}

/// D22: a leader takes queued parks into its group while their lines fit in `group_bytes_max`
/// together (at least one), and leaves the rest to the next group.
#[test]
fn d22_a_group_holds_at_most_group_bytes_max() {
    let config = Config {
        line_bytes_max: 8,
        group_bytes_max: 8,
        ..Config::default()
    };
    let rest = vec![
        Ask::Park(2, "bbbbbb"),
        Ask::Park(3, "cccccc"),
        Ask::Park(4, "dd"),
    ];
    let (answers, fsyncs, _) = grouped(config, Ask::Park(1, "aaaa"), rest, 0);
    assert_eq!(
        answers,
        vec![Ok(vec![1]), Ok(vec![2]), Ok(vec![3]), Ok(vec![4])]
    );
    assert_eq!(fsyncs, 3, "the leader's, b's alone, then c and d: 8 bytes");
}

/// D22, D16: a `park_all` whose lines alone hold more than `group_bytes_max` bytes is a group of
/// its own (a leader takes at least one unit) and is refused `GroupTooLarge`, writing nothing;
/// the handle goes on.
#[test]
fn d22_a_park_all_over_group_bytes_max_is_refused_in_a_group_of_its_own() -> TestResult {
    // Kills `take_group`'s `> with >=` on `taken` (shared.rs:557:18), with which a leader takes
    // no unit when the oldest is over the bound, and leads empty groups for ever.
    let config = Config {
        line_bytes_max: 8,
        group_bytes_max: 8,
        ..Config::default()
    };
    let shared = SharedQueue::new(Queue::with_storage(MemStorage::new(), "m", config)?);
    let refused = answered_within({
        let shared = shared.clone();
        move || {
            let lines = [(RequestId(1), "aaaaaa"), (RequestId(2), "bbbbbb")];
            shared.park_all(&lines).map_err(|e| e.kind())
        }
    })?;
    assert_eq!(refused, Err(ErrorKind::GroupTooLarge));
    assert_eq!(shared.park(RequestId(3), "c")?, Parked::Held(Seq(1)));
    assert_eq!(
        shared.stats()?.appends,
        1,
        "the refused group wrote nothing"
    );
    Ok(())
}

/// M4, D16: a group that gives no new line (retries, refusals) writes nothing, and a group of
/// one new line writes the `park` record `Queue::park` writes: the mirror is byte for byte the
/// one the same parks make one at a time.
#[test]
fn m4_a_group_writes_the_records_one_park_at_a_time_would() {
    let (answers, _, queue) = grouped(
        Config::default(),
        Ask::Park(1, "a"),
        vec![Ask::Park(1, "a"), Ask::Park(2, "bad\nline")],
        0,
    );
    assert_eq!(answers[..2], [Ok(vec![1]), Ok(vec![1])]);
    assert_eq!(
        mirror(&queue),
        parked_one_by_one(&[(1, "a")]),
        "nothing written"
    );
    assert!(
        !queue.is_poisoned(),
        "a group with nothing to write is no failure"
    );
    let (answers, _, queue) = grouped(
        Config::default(),
        Ask::Park(1, "a"),
        vec![Ask::Park(2, "b")],
        0,
    );
    assert_eq!(answers, vec![Ok(vec![1]), Ok(vec![2])]);
    assert_eq!(mirror(&queue), parked_one_by_one(&[(1, "a"), (2, "b")]));
}

/// D22, D3: a `park_all` naming a request another caller parks in the same group is answered
/// line by line: the same line gets that caller's seq, a new line beside it a seq of its own; with
/// another line the whole `park_all` is `RequestConflict` and writes neither of its lines.
#[test]
fn d22_a_group_park_beside_a_member_of_the_same_write_is_answered_line_by_line() {
    let rest = vec![
        Ask::Park(2, "b"),
        Ask::All(vec![(2, "b"), (8, "i")]),
        Ask::All(vec![(2, "other"), (7, "h")]),
        Ask::Park(9, "j"),
    ];
    let (answers, _) = group_behind_a_leader(Ask::Park(1, "a"), rest, 0);
    assert_eq!(
        answers,
        vec![
            Ok(vec![1]),
            Ok(vec![2]),
            Ok(vec![2, 3]),
            Err(ErrorKind::RequestConflict),
            Ok(vec![4])
        ]
    );
}

/// D3, D16, D22: parks queued behind a leader are written as one group, one fsync, each caller
/// with its own answer in join order: a bad line and a conflicting request fail alone, the same
/// request with the same line gets the one seq, a `park_all` is all or none among them.
#[test]
fn d16_d22_a_group_gives_each_caller_its_own_answer() {
    //= spec/delivery.md#d16-durable-park
    //= type=test
    //# **Group commit.** On a shared handle (`SharedQueue`), parks that arrive
    //# while another's write and fsync are in progress MUST be written
    //# together, in one append and one fsync, once that fsync returns, each caller with its own
    //# answer: a refused line or request fails its caller only.
    let rest = vec![
        Ask::Park(2, "b"),
        Ask::Park(3, "bad\nline"),
        Ask::Park(2, "b"),
        Ask::Park(2, "c"),
        Ask::All(vec![(4, "d"), (5, "e")]),
        Ask::All(vec![(6, "f"), (6, "g")]),
        Ask::Park(1, "a"),
        Ask::Park(1, "x"),
        Ask::Park(7, "h"),
    ];
    let (answers, fsyncs) = group_behind_a_leader(Ask::Park(1, "a"), rest, 0);
    let expected: Vec<Answer> = vec![
        Ok(vec![1]),
        Ok(vec![2]),
        Err(ErrorKind::InvalidLine),
        Ok(vec![2]),
        Err(ErrorKind::RequestConflict),
        Ok(vec![3, 4]),
        Err(ErrorKind::RequestConflict),
        Ok(vec![1]),
        Err(ErrorKind::RequestConflict),
        Ok(vec![5]),
    ];
    assert_eq!(answers, expected);
    assert_eq!(fsyncs, 2, "the leader's and the group's");
}

/// D16: 200 callers parking at once take two file fsyncs: the first caller's, and one for the
/// 199 queued behind it.
#[test]
fn d16_two_hundred_parks_at_once_share_two_fsyncs() {
    let lines: Vec<&'static str> = (0..200)
        .map(|i| &*Box::leak(format!("[r{i}] done").into_boxed_str()))
        .collect();
    let rest = (1..200)
        .map(|i| Ask::Park(i + 1, lines[i as usize]))
        .collect();
    let (answers, fsyncs) = group_behind_a_leader(Ask::Park(1, lines[0]), rest, 0);
    let seqs: Vec<u64> = answers
        .into_iter()
        .flat_map(|a| a.expect("parked"))
        .collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<u64>>());
    assert_eq!(fsyncs, 2);
}

/// M10, D16: a group whose fsync fails fails every caller whose line it held, and poisons;
/// a caller refused for its own line keeps its own answer, and a retry of a line written
/// before keeps its seq.
#[test]
fn m10_a_failed_group_fsync_fails_every_member_and_poisons() {
    let rest = vec![
        Ask::Park(2, "b"),
        Ask::Park(3, "bad\nline"),
        Ask::Park(1, "a"),
        Ask::All(vec![(4, "d"), (5, "e")]),
    ];
    let (answers, _) = group_behind_a_leader(Ask::Park(1, "a"), rest, 2);
    let expected: Vec<Answer> = vec![
        Ok(vec![1]),
        Err(ErrorKind::Io),
        Err(ErrorKind::InvalidLine),
        Ok(vec![1]),
        Err(ErrorKind::Io),
    ];
    assert_eq!(answers, expected);
}

/// D1, D16: parks from eight threads beside a loop of boundaries: every park acknowledged before
/// a boundary starts is in that boundary's batch or an earlier one, no seq is in two batches,
/// and every acknowledged line is delivered.
#[test]
fn d1_a_park_acknowledged_before_a_boundary_is_in_it_or_behind_it() -> TestResult {
    let queue = SharedQueue::new(Queue::with_storage(
        MemStorage::new(),
        "m",
        Config::default(),
    )?);
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let parkers: Vec<_> = (0..8u64)
        .map(|thread| {
            let (queue, acked) = (queue.clone(), acked.clone());
            std::thread::spawn(move || {
                for i in 0..200 {
                    let seq = queue.park(RequestId(thread * 1000 + i), "line")?;
                    acked.lock().map_err(|_| "acked")?.insert(seq.seq());
                }
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    let mut delivered = BTreeSet::new();
    let mut drain = |queue: &SharedQueue<MemStorage>| -> TestResult {
        let before: BTreeSet<Seq> = acked.lock().map_err(|_| "acked")?.clone();
        if let Some(batch) = queue.boundary(Budget::for_turn_chars(1 << 30)?)? {
            for item in &batch.items {
                assert!(delivered.insert(item.seq), "{:?} in two batches", item.seq);
            }
            queue.settle(batch.id, &vec![Outcome::Delivered; batch.items.len()])?;
        }
        assert!(
            before.is_subset(&delivered),
            "a park acknowledged before a boundary was left out"
        );
        Ok(())
    };
    while parkers.iter().any(|parker| !parker.is_finished()) {
        drain(&queue)?;
    }
    for parker in parkers {
        parker
            .join()
            .map_err(|_| "a parker panicked")?
            .map_err(|e| e.to_string())?;
    }
    drain(&queue)?;
    assert_eq!(delivered.len(), 1600);
    Ok(())
}

/// A shared queue gives its queue back once it is the last handle, with what its groups wrote
/// and its poison as they are; while another handle exists it gives none.
#[test]
fn into_queue_gives_the_queue_back_from_the_last_handle() -> TestResult {
    let gate = Arc::new(Gate::default());
    let shared = SharedQueue::new(Queue::with_storage(gated(&gate), "m", Config::default())?);
    let other = shared.clone();
    std::thread::scope(|scope| {
        for request in 1..=4 {
            let shared = &shared;
            scope.spawn(move || shared.park(RequestId(request), "done"));
        }
    });
    assert!(other.into_queue().is_none(), "another handle exists");
    let queue = shared.into_queue().ok_or("the last handle")?;
    let requests: BTreeSet<u64> = queue.parked().iter().map(|item| item.request.0).collect();
    assert_eq!(requests, (1..=4).collect());
    assert!(!queue.is_poisoned());
    // A failed fsync's poison comes back with the queue.
    gate.fail_at
        .store(gate.syncs.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
    let shared = SharedQueue::new(queue);
    assert_eq!(
        shared.park(RequestId(5), "x").map_err(|e| e.kind()),
        Err(ErrorKind::Io)
    );
    let queue = shared.into_queue().ok_or("the last handle")?;
    assert!(queue.is_poisoned());
    Ok(())
}

/// A `boundary` waiting while a group is written goes before the parks queued behind that
/// group: its batch holds the group written, and they come after (a stream of parks cannot
/// starve a boundary).
#[test]
fn a_boundary_waiting_for_a_group_goes_before_the_next() -> TestResult {
    let gate = Arc::new(Gate::default());
    let queue = SharedQueue::new(Queue::with_storage(gated(&gate), "m", Config::default())?);
    gate.closed.store(true, Ordering::SeqCst);
    let park = |request: u64| {
        let queue = queue.clone();
        std::thread::spawn(move || queue.park(RequestId(request), "line"))
    };
    let first = park(1);
    while !gate.waiting.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let behind = park(2);
    while queue.pending() < 1 {
        std::thread::yield_now();
    }
    let boundary = {
        let queue = queue.clone();
        std::thread::spawn(move || queue.boundary(Budget(1 << 20)))
    };
    while queue.exclusive_waiting() < 1 {
        std::thread::yield_now();
    }
    gate.closed.store(false, Ordering::SeqCst);
    let batch = boundary
        .join()
        .map_err(|_| "the boundary panicked")??
        .ok_or("the first park is parked")?;
    let seqs: Vec<Seq> = batch.items.iter().map(|item| item.seq).collect();
    assert_eq!(
        seqs,
        vec![Seq(1)],
        "the boundary went before the next group"
    );
    assert_eq!(
        first.join().map_err(|_| "a park panicked")??,
        Parked::Held(Seq(1))
    );
    assert_eq!(
        behind.join().map_err(|_| "a park panicked")??,
        Parked::Held(Seq(2))
    );
    Ok(())
}

/// Every call of a shared handle answers as the same call of its `Queue` does: the same steps
/// on a plain queue and on a shared one, each answer compared (dead letters redriven and
/// discarded one by one and all at once, the reads, a batch in flight).
#[test]
fn every_call_of_a_shared_handle_answers_as_its_queue_does() -> TestResult {
    // A rest slack of 0: the idle call after the last discard compacts.
    let config = Config {
        failures_max: 1,
        rest_slack_bytes: 0,
        ..Config::default()
    };
    // One clock for both: the times they record (D24) are compared too.
    let clock = fixed();
    let mut plain =
        Queue::with_storage(MemStorage::new(), "m", config.clone())?.with_clock(clock.clone());
    let shared = Queue::with_storage(MemStorage::new(), "m", config)?.with_clock(clock);
    let shared = SharedQueue::new(shared);
    let budget = Budget(1 << 20);
    let fail_all = |plain: &mut Queue<MemStorage>| -> TestResult {
        let batch = plain.boundary(budget)?.ok_or("a batch")?;
        assert_eq!(shared.boundary(budget)?, Some(batch.clone()));
        assert_eq!(shared.in_flight()?, plain.in_flight().cloned());
        let outcomes = vec![Outcome::Failed; batch.items.len()];
        assert_eq!(
            shared.settle(batch.id, &outcomes)?,
            plain.settle(batch.id, &outcomes)?
        );
        Ok(())
    };
    for request in 1..=6 {
        let line = format!("[r{request}] done");
        assert_eq!(
            shared.park(RequestId(request), &line)?,
            plain.park(RequestId(request), &line)?
        );
    }
    fail_all(&mut plain)?;
    let dead = plain.dead_letters().to_vec();
    assert_eq!(dead.len(), 6);
    assert_eq!(shared.dead_letters()?, dead);
    let one = [Seq(1)];
    assert_eq!(shared.redrive(&one)?, plain.redrive(&one)?);
    let two = [Seq(2)];
    assert_eq!(shared.discard(&two)?, plain.discard(&two)?);
    assert_eq!(shared.redrive_all()?, plain.redrive_all()?);
    assert_eq!(shared.parked()?.len(), 5);
    assert_eq!(shared.parked()?, plain.parked());
    let request = RequestId(3);
    assert!(plain.find(request).is_some());
    assert_eq!(shared.find(request)?, plain.find(request).cloned());
    fail_all(&mut plain)?;
    assert_eq!(shared.discard_all()?, plain.discard_all()?);
    shared.idle()?;
    plain.idle()?;
    assert_eq!(shared.stats()?.compactions, 1);
    assert_eq!(plain.stats().compactions, 1);
    assert_eq!(lifeless(&shared.state()?), lifeless(plain.state()));
    assert_eq!(shared.stats()?.appends, plain.stats().appends);
    assert_eq!(shared.stats()?.fsyncs, plain.stats().fsyncs);
    assert_eq!(shared.path()?, plain.path());
    assert!(!shared.is_poisoned()?);
    Ok(())
}

/// A shared handle says it is poisoned once a group's fsync failed, and its `reopen` makes it
/// usable again; `remove` ends the session on disk.
#[test]
fn a_shared_handle_reports_poison_reopens_and_removes() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let shared = SharedQueue::open(&path)?;
    shared.park(RequestId(1), "[r1] done")?;
    assert!(!shared.is_poisoned()?);
    shared.reopen()?;
    assert_eq!(
        shared.parked()?.len(),
        1,
        "a reopen of a healthy handle does nothing"
    );
    fs::rename(&path, path.with_extension("away"))?;
    assert!(shared.park(RequestId(2), "[r2] done").is_err());
    assert!(shared.is_poisoned()?);
    fs::rename(path.with_extension("away"), &path)?;
    shared.reopen()?;
    assert!(!shared.is_poisoned()?);
    assert_eq!(
        shared.park(RequestId(2), "[r2] done")?,
        Parked::Held(Seq(2))
    );
    shared.remove(true)?;
    assert!(!path.exists(), "the mirror is removed");
    Ok(())
}

/// A session's loop waits for work: `wait_parked` answers at once while a line is parked, wakes
/// at the park that gives it one (a thread here, a task through `AsyncQueue`), and times out
/// once the boundary took them all.
#[test]
fn a_waiting_session_wakes_at_a_park_and_times_out_without_one() -> TestResult {
    let queue = SharedQueue::new(Queue::with_storage(
        MemStorage::new(),
        "m",
        Config::default(),
    )?);
    assert!(!queue.wait_parked(Duration::from_millis(5))?);
    std::thread::scope(|scope| -> TestResult {
        let waiting = scope.spawn(|| queue.wait_parked(Duration::from_secs(600)));
        queue.park(RequestId(1), "done")?;
        assert!(waiting.join().map_err(|_| "the waiter panicked")??);
        Ok(())
    })?;
    assert!(queue.wait_parked(Duration::ZERO)?, "parked now");
    let batch = queue.boundary(Budget(1_000))?.ok_or("one line")?;
    assert!(!queue.wait_parked(Duration::from_millis(5))?);
    queue.settle(batch.id, &[Outcome::Delivered])?;
    #[cfg(feature = "tokio")]
    {
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let handle = crate::AsyncQueue::from(queue.clone());
        runtime.block_on(async {
            let waiting = tokio::spawn({
                let handle = handle.clone();
                async move { handle.wait_parked().await }
            });
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished(), "nothing parked yet");
            handle.park(RequestId(2), "two").await?;
            waiting.await??;
            Ok::<(), Box<dyn std::error::Error>>(())
        })?;
    }
    Ok(())
}
