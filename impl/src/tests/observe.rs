//! The `tracing` feature: one event for each thing an operator wants in the log, with its
//! fields, seen by a subscriber that records them (`Recorder`), and the spans of `boundary` and
//! `settle`.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::fail_stop::TempFull;
use super::*;
use crate::{FsStorage, Settlement, SharedQueue};

/// An event or a new span as the recorder saw it: its name, level and fields as text.
#[derive(Clone, Debug)]
struct Seen {
    name: String,
    level: Level,
    fields: Vec<(String, String)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A subscriber that keeps every event and every new span, in order.
#[derive(Clone, Debug, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
    next_id: Arc<AtomicU64>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Recorder {
    fn keep(&self, metadata: &Metadata<'_>, fields: Vec<(String, String)>) {
        let seen = Seen {
            name: metadata.name().to_owned(),
            level: *metadata.level(),
            fields,
        };
        self.seen.lock().map(|mut all| all.push(seen)).ok();
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Vec::new();
        span.record(&mut Fields(&mut fields));
        self.keep(span.metadata(), fields);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.keep(event.metadata(), fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// What `run` did, with the recorder as this thread's subscriber: every event and span.
fn record<T>(run: impl FnOnce() -> T) -> (T, Vec<Seen>) {
    let recorder = Recorder::default();
    let seen = Arc::clone(&recorder.seen);
    let value = tracing::subscriber::with_default(recorder, run);
    let seen = seen.lock().map(|seen| seen.clone()).unwrap_or_default();
    (value, seen)
}

/// The one event or span named `name` in `seen`, failing when there is none or several.
fn one<'a>(seen: &'a [Seen], name: &str) -> Result<&'a Seen, String> {
    match seen.iter().filter(|s| s.name == name).collect::<Vec<_>>()[..] {
        [only] => Ok(only),
        ref many => Err(format!("{} `{name}` in {seen:#?}", many.len())),
    }
}

fn fields_of(seen: &Seen, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|name| seen.field(name).unwrap_or("<absent>").to_owned())
        .collect()
}

#[test]
fn opening_a_mirror_tells_what_it_holds_at_info() -> TestResult {
    let (queue, seen) = record(|| Queue::with_storage(MemStorage::new(), "m", Config::default()));
    let mut queue = queue?;
    let created = one(&seen, "parkline::opened")?;
    assert_eq!(created.level, Level::INFO);
    assert_eq!(
        fields_of(created, &["path", "created", "version", "parked"]),
        ["m", "true", "4", "0"]
    );
    queue.park(RequestId(1), "one")?;
    queue.park(RequestId(2), "two")?;
    queue.boundary(Budget(3))?;
    let bytes = queue.stats().mirror_bytes;
    let storage = queue.into_storage();
    let (_, seen) = record(|| Queue::with_storage(storage, "m", Config::default()));
    let opened = one(&seen, "parkline::opened")?;
    let names = [
        "created",
        "version",
        "parked",
        "in_flight",
        "dead_letters",
        "bytes",
    ];
    assert_eq!(
        fields_of(opened, &names),
        ["false", "4", "1", "1", "0", &bytes.to_string()]
    );
    Ok(())
}

#[test]
fn a_torn_tail_cut_at_open_is_a_warning_with_its_offset() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "one")?;
    let offset = queue.stats().mirror_bytes;
    let mut storage = queue.into_storage();
    storage.append("m", b"0123abcd {\"type\":\"pa")?;
    let (queue, seen) = record(|| Queue::with_storage(storage, "m", Config::default()));
    assert_eq!(queue?.parked().len(), 1);
    let cut = one(&seen, "parkline::torn_tail_cut")?;
    assert_eq!(cut.level, Level::WARN);
    assert_eq!(
        fields_of(cut, &["offset", "torn_bytes"]),
        [offset.to_string(), "20".to_owned()]
    );
    Ok(())
}

#[test]
fn an_upgrade_names_the_version_it_came_from() -> TestResult {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2/compacted.mirror");
    let bytes = fs::read(fixture)?;
    let (queue, seen) = record(|| open_bytes(&bytes, no_window()));
    queue?;
    let upgraded = one(&seen, "parkline::upgraded")?;
    assert_eq!(upgraded.level, Level::INFO);
    assert_eq!(
        fields_of(upgraded, &["from_version", "to_version"]),
        ["2", "4"]
    );
    assert_eq!(one(&seen, "parkline::opened")?.field("version"), Some("2"));
    Ok(())
}

#[test]
fn a_compaction_is_told_at_info_with_the_sizes_before_and_after() -> TestResult {
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    queue.park(RequestId(1), "one")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let before = queue.stats().mirror_bytes;
    let (settled, seen) = record(|| queue.settle(batch.id, &[Outcome::Delivered]));
    settled?;
    assert_eq!(queue.stats().compactions, 1);
    let compacted = one(&seen, "parkline::compacted")?;
    assert_eq!(compacted.level, Level::INFO);
    let after = queue.stats().mirror_bytes;
    assert_eq!(
        fields_of(compacted, &["bytes_before", "bytes_after"]),
        [before.to_string(), after.to_string()]
    );
    Ok(())
}

#[test]
fn a_deferred_compaction_is_a_warning_with_its_cause() -> TestResult {
    let config = Config {
        compact_slack_bytes: 0,
        delivered_memory: 0,
        ..Config::default()
    };
    let full = std::rc::Rc::new(std::cell::Cell::new(false));
    let storage = Seam::new(
        MemStorage::new(),
        TempFull {
            full: std::rc::Rc::clone(&full),
        },
    );
    let mut queue = Queue::with_storage(storage, "m", config)?;
    queue.park(RequestId(1), "one")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    full.set(true);
    let (settled, seen) = record(|| queue.settle(batch.id, &[Outcome::Delivered]));
    settled?;
    let deferred = one(&seen, "parkline::compaction_deferred")?;
    assert_eq!(deferred.level, Level::WARN);
    assert_eq!(
        fields_of(deferred, &["operation", "cause"]),
        ["temp file write", "no space left"]
    );
    assert!(one(&seen, "parkline::compacted").is_err());
    Ok(())
}

#[test]
fn a_poisoning_is_an_error_with_the_failed_operation_and_its_cause() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let mut queue = Queue::open(&path)?;
    fs::remove_file(&path)?;
    let (parked, seen) = record(|| queue.park(RequestId(1), "one"));
    assert_eq!(parked.map_err(|e| e.kind()), Err(ErrorKind::Io));
    let poisoned = one(&seen, "parkline::poisoned")?;
    assert_eq!(poisoned.level, Level::ERROR);
    assert_eq!(poisoned.field("operation"), Some("identity check"));
    assert!(
        poisoned
            .field("message")
            .is_some_and(|m| m.contains("refuses every call until it is reopened")),
        "{poisoned:?}"
    );
    assert!(
        poisoned
            .field("cause")
            .is_some_and(|c| c.contains("unlinked")),
        "{poisoned:?}"
    );
    Ok(())
}

#[test]
fn a_batch_closed_by_the_repeat_bound_and_its_line_dead_lettered_are_warnings() -> TestResult {
    let config = Config {
        repeats_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    queue.park(RequestId(7), "crashes the daemon")?;
    queue.boundary(Budget(100))?.ok_or("parked")?;
    // A crash after the hand-over: the next life finds the batch at the repeat bound.
    let mut queue = Queue::with_storage(queue.into_storage(), "m", config)?;
    let (boundary, seen) = record(|| queue.boundary(Budget(100)));
    assert_eq!(boundary?, None);
    let closed = one(&seen, "parkline::batch_closed")?;
    assert_eq!(closed.level, Level::WARN);
    assert_eq!(
        fields_of(closed, &["batch", "attempt", "repeats_max", "items"]),
        ["1", "1", "1", "1"]
    );
    let dead = one(&seen, "parkline::dead_lettered")?;
    assert_eq!(dead.level, Level::WARN);
    assert_eq!(
        fields_of(dead, &["seq", "request", "failures", "by"]),
        ["1", "7", "0", "Repeats"]
    );
    Ok(())
}

#[test]
fn a_line_dead_lettered_at_a_settle_names_its_seq_request_and_failures() -> TestResult {
    let config = Config {
        failures_max: 1,
        ..Config::default()
    };
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config)?;
    queue.park(RequestId(7), "fails")?;
    queue.park(RequestId(8), "delivered")?;
    let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
    let outcomes = [Outcome::Failed, Outcome::Delivered];
    let (settled, seen) = record(|| queue.settle(batch.id, &outcomes));
    assert_eq!(settled?.dead, [Seq(1)]);
    let dead = one(&seen, "parkline::dead_lettered")?;
    assert_eq!(
        fields_of(dead, &["seq", "request", "failures", "by"]),
        ["1", "7", "1", "Failures"]
    );
    Ok(())
}

#[test]
fn a_refused_lock_is_a_warning_naming_the_lock_file() -> TestResult {
    let (_dir, path) = temp_mirror()?;
    let _held = Queue::open(&path)?;
    let (second, seen) = record(|| FsStorage::open(&path).map(drop));
    assert_eq!(second.map_err(|e| e.kind()), Err(ErrorKind::Locked));
    let refused = one(&seen, "parkline::lock_refused")?;
    assert_eq!(refused.level, Level::WARN);
    let lock = format!("{}.lock", path.display());
    assert_eq!(refused.field("path"), Some(lock.as_str()));
    Ok(())
}

#[test]
fn a_group_commit_tells_its_size_at_debug() -> TestResult {
    let shared = SharedQueue::new(Queue::with_storage(
        MemStorage::new(),
        "m",
        Config::default(),
    )?);
    let lines = [(RequestId(1), "one"), (RequestId(2), "two")];
    let (parked, seen) = record(|| shared.park_all(&lines));
    assert_eq!(parked?, [Parked::Held(Seq(1)), Parked::Held(Seq(2))]);
    let group = one(&seen, "parkline::group_written")?;
    assert_eq!(group.level, Level::DEBUG);
    assert_eq!(fields_of(group, &["units", "lines"]), ["1", "2"]);
    Ok(())
}

#[test]
fn boundary_and_settle_run_in_spans_named_after_them() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "one")?;
    let (settled, seen) = record(|| -> crate::Result<Settlement> {
        let batch = queue.boundary(Budget(100))?.ok_or_else(internal)?;
        queue.settle(batch.id, &[Outcome::Delivered])
    });
    settled?;
    let boundary = one(&seen, "boundary")?;
    assert_eq!(
        (boundary.level, boundary.field("budget")),
        (Level::DEBUG, Some("100"))
    );
    let settle = one(&seen, "settle")?;
    assert_eq!(fields_of(settle, &["batch", "outcomes"]), ["1", "1"]);
    Ok(())
}

fn internal() -> crate::Error {
    crate::Error::new(ErrorKind::Internal, "nothing parked")
}

/// M16: every event and span of a store session's life (open, parks in a group, a boundary, a
/// settle that dead-letters a line, a compaction, a poisoning) names the session and the
/// mirror's path; the dead letter and the poisoning say in words what to do.
#[test]
fn every_event_and_span_of_a_store_session_names_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = Config {
        failures_max: 1,
        rest_slack_bytes: 0,
        ..Config::default()
    };
    let store = crate::Store::open_with(dir.path(), crate::StoreOptions::default(), config)?;
    let mirror = store.dir().join("s1.mirror");
    let (lived, seen) = record(|| -> TestResult {
        let sessions = store.start(["s1"])?;
        let session = sessions["s1"].as_ref().map_err(ToString::to_string)?;
        session.park_all(&[(RequestId(1), "one"), (RequestId(2), "two")])?;
        let batch = session.boundary(Budget(100))?.ok_or("parked")?;
        session.settle(batch.id, &[Outcome::Failed, Outcome::Delivered])?;
        session.discard_all()?;
        session.idle()?;
        fs::remove_file(&mirror)?;
        assert!(session.park(RequestId(3), "three").is_err());
        Ok(())
    });
    lived?;
    let names: BTreeSet<&str> = seen.iter().map(|s| s.name.as_str()).collect();
    for expected in [
        "parkline::opened",
        "parkline::group_written",
        "boundary",
        "settle",
        "parkline::dead_lettered",
        "parkline::compacted",
        "parkline::poisoned",
    ] {
        assert!(names.contains(expected), "{expected} in {names:?}");
    }
    let path = mirror.display().to_string();
    for each in &seen {
        assert_eq!(each.field("session"), Some("s1"), "{each:?}");
        assert_eq!(each.field("path"), Some(path.as_str()), "{each:?}");
    }
    let dead = one(&seen, "parkline::dead_lettered")?;
    assert!(
        dead.field("message")
            .is_some_and(|m| m.contains("session s1") && m.contains("parkline redrive")),
        "{dead:?}"
    );
    Ok(())
}
