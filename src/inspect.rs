//! `parkline inspect <mirror> [--json]`: what a mirror holds, for an operator or a script.
//!
//! Prints the parked lines, the batch in flight (with its attempt) and the dead letters as tables,
//! with each line's age and each dead letter's time since it died (D24), and the size of the
//! remembered window (D3); or all of it as one JSON object with `--json`. It never modifies the
//! file: it reads the bytes once with `std::fs::read` and decodes them with
//! `parkline::mirror::decode_log`, the decoder `open` uses. Ages are measured from the system
//! clock as inspect reads the file ([`run_at`] takes that time from its caller).
//!
//! M13: it takes no lock, on purpose. The exclusive lock (spec/mirror.md M8) protects writers from each
//! other; a reader needs no protection from the writer, because the writer only appends whole
//! records and replaces the file by an atomic rename (M5), so one `read` sees a consistent prefix:
//! every complete record it sees is valid, and an append in progress shows as a torn final record
//! that is reported, not treated as damage. Taking the exclusive lock would make inspect fail
//! (`Locked`) on every live session, exactly when an operator needs it; a shared lock would need
//! the lock file to exist or be created (a write) and `flock` would still refuse it while the
//! daemon holds the exclusive one. What inspect prints is the mirror as of the moment it read it.
//!
//! Exit status: 0 success, 1 the mirror is damaged, 2 usage (clap's), 3 the file cannot be read
//! or the output cannot be written.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use parkline::mirror::{self, Decoded, MirrorState};
use parkline::ops::{Answer, Applied};
use parkline::{Clock, Ended, Error, ErrorKind, Item, Remembered, SystemClock};

/// The arguments of `parkline inspect`.
#[derive(Clone, Debug, clap::Parser)]
pub struct InspectArgs {
    /// The mirror file
    pub mirror: std::path::PathBuf,
    /// One JSON object on stdout instead of tables
    #[arg(long)]
    pub json: bool,
}

/// The longest line shown in a table cell, in characters; `--json` shows lines whole.
const CELL_CHARS_MAX: usize = 72;

/// Entry point of `parkline inspect`.
pub fn main(args: &InspectArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    ExitCode::from(run(args, &mut stdout.lock(), &mut stderr.lock()))
}

/// Runs `parkline inspect` with `args`, writing to `out` and `err`; returns the exit status.
/// Ages are measured from the system clock.
pub fn run(args: &InspectArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    run_at(args, SystemClock.now_ms(), out, err)
}

/// [`run`], with ages measured from `now_ms` (milliseconds since the Unix epoch) instead of the
/// system clock.
pub fn run_at(args: &InspectArgs, now_ms: u64, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    //= spec/mirror.md#m13-inspection-is-read-only-and-lock-free
    //# `parkline inspect <mirror>` MUST NOT write to the mirror's directory (no truncation of a
    //# torn tail, no removal of a temp file, no lock file created) and MUST NOT take the lock.
    let json = args.json;
    let path = args.mirror.as_path();
    // As input: a FIFO or device at the path is refused, never waited on.
    let bytes = match parkline::ops::read_input(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = writeln!(err, "parkline inspect: cannot read {}: {e}", path.display());
            return 3;
        }
    };
    match mirror::decode_log(&bytes) {
        Ok(decoded) => {
            let written = if json {
                serde_json::to_writer(&mut *out, &json_report(path, bytes.len(), &decoded, now_ms))
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
            } else {
                write!(out, "{}", table_report(path, bytes.len(), &decoded, now_ms))
            };
            if written.is_err() {
                return 3;
            }
            0
        }
        Err(e) => {
            // decode_log sees bytes, not a file: name the file the way `open` does.
            let e = e.with_path(path);
            if json {
                let _ = writeln!(out, "{}", json_error(&e));
            }
            let _ = writeln!(err, "parkline inspect: {e}");
            let _ = writeln!(err, "{}", advice(&e));
            1
        }
    }
}

/// What an operator can do about a damaged mirror (spec/mirror.md section 6).
fn advice(e: &Error) -> String {
    let offset = e.offset().unwrap_or(0);
    let record = e.record().unwrap_or(0);
    if e.kind() != ErrorKind::Corrupt {
        return "the file was not changed".to_owned();
    }
    if record <= 1 {
        // No intact prefix: a cut at byte 0 would leave an empty file, which is damaged too.
        return "the file was not changed, and the queue will not open it (spec/mirror.md M11). What you can do:\n\
                - keep a copy of the file first;\n\
                - the header itself is damaged, so no record is usable as it stands; if this is not a parkline\n\
                \x20 mirror (for instance the daemon's old deferred-input.json), point the daemon elsewhere;\n\
                - otherwise move the file aside (the daemon then starts a new mirror) and recover its lines by hand"
            .to_owned();
    }
    format!(
        "the file was not changed, and the queue will not open it (spec/mirror.md M11). What you can do:\n\
         - keep a copy of the file first;\n\
         - records 1..{before} (bytes 0..{offset}) are intact; if record {record} is the last one and you accept\n\
         \x20 losing it, `truncate -s {offset} <mirror>` and reopen;\n\
         - otherwise move the file aside (the daemon then starts a new mirror) and recover the lines of the\n\
         \x20 intact records by hand: `head -c {offset} <mirror> > intact && parkline inspect intact`",
        before = record - 1,
    )
}

fn json_error(e: &Error) -> serde_json::Value {
    serde_json::json!({
        "error": {
            "kind": format!("{:?}", e.kind()),
            "path": e.path().map(|p| p.display().to_string()),
            "record": e.record(),
            "offset": e.offset(),
            "reason": e.context(),
            "message": e.to_string(),
        }
    })
}

/// The version of `inspect --json`'s schema (M13), which changes apart from the file format.
/// Schema 2 added the times (D24) and the remembered window (D3).
pub const JSON_SCHEMA: u64 = 2;

/// `inspect --json`'s object, schema [`JSON_SCHEMA`] (M13): its own types, so that a change of
/// the file format's in-memory state does not change what a script reads.
#[derive(serde::Serialize)]
struct JsonReport {
    schema: u64,
    path: String,
    format_version: u64,
    /// The mirror's life (M17): 16 hexadecimal digits, `null` in a file without one.
    life: Option<String>,
    bytes: usize,
    records: u64,
    torn_bytes: u64,
    /// The time the ages are measured from: the system clock as inspect read the file.
    now_ms: u64,
    next_seq: u64,
    next_batch: u64,
    /// The most items a new batch may hold (D11), `null` when no cap is set.
    cap: Option<u64>,
    parked: Vec<JsonItem>,
    in_flight: Option<JsonBatch>,
    dead_letters: Vec<JsonItem>,
    /// How many requests the remembered window keeps (D3; 0 in a file before format 4).
    delivered_memory: u64,
    /// The remembered window, oldest first.
    remembered: Vec<JsonRemembered>,
    /// The operator requests the mirror applied, oldest first (M17).
    requests_applied: Vec<JsonApplied>,
}

#[derive(serde::Serialize)]
struct JsonApplied {
    id: String,
    /// `"redrive"` or `"discard"`.
    verb: &'static str,
    /// How many dead letters it moved; `null` when it was refused.
    moved: Option<u64>,
    /// Why it was refused; `null` when it was applied.
    refused: Option<String>,
}

fn json_applied(applied: &Applied) -> JsonApplied {
    let (moved, refused) = match &applied.answer {
        Answer::Moved(moved) => (Some(*moved), None),
        Answer::Refused(why) => (None, Some(why.clone())),
    };
    JsonApplied {
        id: applied.id.to_string(),
        verb: applied.verb.name(),
        moved,
        refused,
    }
}

#[derive(serde::Serialize)]
struct JsonItem {
    seq: u64,
    request: u64,
    line: String,
    failures: u32,
    handed: u64,
    /// When the line was parked (ms since the Unix epoch); `null` before format 4.
    parked_at: Option<u64>,
    /// `now_ms` minus `parked_at`, never below 0; `null` when `parked_at` is.
    age_ms: Option<u64>,
    /// A dead letter's time of death; absent from parked and in-flight items.
    #[serde(flatten)]
    death: Option<JsonDeath>,
}

#[derive(serde::Serialize)]
struct JsonDeath {
    /// When the line became a dead letter (ms since the Unix epoch); `null` before format 4.
    died_at: Option<u64>,
    /// `now_ms` minus `died_at`, never below 0; `null` when `died_at` is.
    dead_for_ms: Option<u64>,
}

#[derive(serde::Serialize)]
struct JsonBatch {
    id: u64,
    attempt: u32,
    remaining: usize,
    seen: usize,
    items: Vec<JsonItem>,
}

#[derive(serde::Serialize)]
struct JsonRemembered {
    request: u64,
    crc: u64,
    seq: u64,
    /// The batch that delivered the line; `null` for a discarded one.
    batch: Option<u64>,
    /// `"delivered"` or `"discarded"`.
    end: String,
}

/// How long before `now_ms` the time `at` was, in milliseconds: 0 for a time ahead of it (a
/// clock that went back, D24), `None` when the time is unknown.
fn since(now_ms: u64, at: Option<u64>) -> Option<u64> {
    at.map(|at| now_ms.saturating_sub(at))
}

/// The items as JSON; `dead` adds each one's time of death.
fn json_items(items: &[Item], now_ms: u64, dead: bool) -> Vec<JsonItem> {
    items
        .iter()
        .map(|item| JsonItem {
            seq: item.seq.0,
            request: item.request.0,
            line: item.line.to_string(),
            failures: item.failures,
            handed: item.handed,
            parked_at: item.parked_at(),
            age_ms: since(now_ms, item.parked_at()),
            death: dead.then(|| JsonDeath {
                died_at: item.died_at(),
                dead_for_ms: since(now_ms, item.died_at()),
            }),
        })
        .collect()
}

fn json_remembered(entry: &Remembered) -> JsonRemembered {
    let end = match entry.end {
        Ended::Delivered => "delivered".to_owned(),
        Ended::Discarded => "discarded".to_owned(),
        // `Ended` is non-exhaustive: a way of ending added later is shown by its name.
        other => format!("{other:?}").to_lowercase(),
    };
    JsonRemembered {
        request: entry.request.0,
        crc: entry.crc,
        seq: entry.seq.0,
        batch: entry.batch.map(|batch| batch.0),
        end,
    }
}

fn json_report(path: &Path, bytes: usize, decoded: &Decoded, now_ms: u64) -> JsonReport {
    let state: &MirrorState = &decoded.state;
    JsonReport {
        schema: JSON_SCHEMA,
        path: path.display().to_string(),
        format_version: decoded.version,
        life: state.life.map(|life| life.to_string()),
        bytes,
        records: decoded.records,
        torn_bytes: decoded.torn_len,
        now_ms,
        next_seq: state.next_seq.0,
        next_batch: state.next_batch.0,
        cap: state.cap,
        parked: json_items(&state.parked, now_ms, false),
        in_flight: state.in_flight.as_ref().map(|batch| JsonBatch {
            id: batch.id.0,
            attempt: batch.attempt.0,
            remaining: batch.remaining,
            seen: batch.seen,
            items: json_items(&batch.items, now_ms, false),
        }),
        dead_letters: json_items(&state.dead_letters, now_ms, true),
        delivered_memory: state.memory,
        remembered: state.remembered.iter().map(json_remembered).collect(),
        requests_applied: state.ops.iter().map(json_applied).collect(),
    }
}

fn table_report(path: &Path, bytes: usize, decoded: &Decoded, now_ms: u64) -> String {
    let state = &decoded.state;
    let mut text = format!(
        "mirror {}: format version {}{}, {} records, {bytes} bytes; next seq {}, next batch {}\n",
        path.display(),
        decoded.version,
        state
            .life
            .map_or_else(String::new, |life| format!(", life {life}")),
        decoded.records,
        state.next_seq,
        state.next_batch,
    );
    if decoded.torn_len > 0 {
        text.push_str(&format!(
            "note: the last {} bytes are a record without its newline: an append in progress, or one a crash\n\
             interrupted (never acknowledged); opening the queue cuts it (spec/mirror.md M7)\n",
            decoded.torn_len
        ));
    }
    if let Some(cap) = state.cap {
        text.push_str(&format!(
            "batch cap {cap}: a batch handed over repeats_max times without a settle was closed, so \
             the next batches hold at most {cap} lines until settles lift it (spec/delivery.md D10, \
             D11)\n"
        ));
    }
    text.push_str(&format!("\nparked: {}\n", state.parked.len()));
    text.push_str(&items_table(&state.parked, Since::Parked, now_ms));
    match &state.in_flight {
        None => text.push_str("\nin flight: none\n"),
        Some(batch) => {
            text.push_str(&format!(
                "\nin flight: batch {} attempt {}, {} items, {} parked behind it at its boundary\n\
                 (persisted, not settled: the next boundary hands it over again as attempt {}, a repeat,\n\
                 or closes it when that passes the repeat bound, spec/delivery.md D10)\n",
                batch.id,
                batch.attempt,
                batch.items.len(),
                batch.remaining,
                batch.attempt.0.saturating_add(1),
            ));
            text.push_str(&items_table(&batch.items, Since::Parked, now_ms));
        }
    }
    //= spec/delivery.md#d8-dead-letter
    //# MUST be listable (`Queue::dead_letters`, `parkline inspect`),
    text.push_str(&format!("\ndead letters: {}\n", state.dead_letters.len()));
    text.push_str(&items_table(&state.dead_letters, Since::Died, now_ms));
    text.push_str(&format!(
        "\nremembered: {} of {} delivered or discarded requests (a park of one again answers how \
         it ended)\n",
        state.remembered.len(),
        state.memory,
    ));
    text.push_str(&format!(
        "operator requests applied: {} (spec/mirror.md M17)\n",
        state.ops.len()
    ));
    for applied in &state.ops {
        let answer = match &applied.answer {
            Answer::Moved(moved) => format!("moved {moved}"),
            Answer::Refused(why) => format!("refused: {why}"),
        };
        text.push_str(&format!(
            "  {} {}: {answer}\n",
            applied.id,
            applied.verb.name()
        ));
    }
    text
}

/// Which time of an item a table's time column counts from.
#[derive(Clone, Copy)]
enum Since {
    /// Its park: the column `age`.
    Parked,
    /// Its death: the column `dead for`.
    Died,
}

fn items_table(items: &[Item], since_what: Since, now_ms: u64) -> String {
    if items.is_empty() {
        return String::new();
    }
    let (time_column, time_of): (&str, fn(&Item) -> Option<u64>) = match since_what {
        Since::Parked => ("age", Item::parked_at),
        Since::Died => ("dead for", Item::died_at),
    };
    let mut rows = vec![[
        "seq".to_owned(),
        "request".to_owned(),
        "failures".to_owned(),
        "handed".to_owned(),
        "chars".to_owned(),
        time_column.to_owned(),
        "line".to_owned(),
    ]];
    for item in items {
        rows.push([
            item.seq.to_string(),
            item.request.to_string(),
            item.failures.to_string(),
            item.handed.to_string(),
            item.line.chars().count().to_string(),
            since(now_ms, time_of(item)).map_or_else(|| "-".to_owned(), human_ms),
            cell(&item.line),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        text.push_str("  ");
        for (c, width) in widths.iter().enumerate() {
            text.push_str(&format!("{:>width$}  ", row[c]));
        }
        text.push_str(&row[6]);
        text.push('\n');
    }
    text
}

/// A span of milliseconds for a person, in its largest unit and, from hours on, the next one
/// when it is not 0: "45s", "12m", "3h 4m", "2d 5h"; under a second is "0s".
pub fn human_ms(ms: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    let s = ms / 1000;
    let (big, unit, small, small_unit) = match s {
        s if s < MINUTE => return format!("{s}s"),
        s if s < HOUR => return format!("{}m", s / MINUTE),
        s if s < DAY => (s / HOUR, "h", s % HOUR / MINUTE, "m"),
        s => (s / DAY, "d", s % DAY / HOUR, "h"),
    };
    if small == 0 {
        format!("{big}{unit}")
    } else {
        format!("{big}{unit} {small}{small_unit}")
    }
}

/// A line for a terminal: control characters escaped (a line is data, not terminal commands),
/// cut to `CELL_CHARS_MAX` characters with an ellipsis.
fn cell(line: &str) -> String {
    let mut shown = String::new();
    for (n, c) in line.chars().enumerate() {
        if n == CELL_CHARS_MAX {
            shown.push('\u{2026}');
            break;
        }
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use parkline::{Budget, Outcome, Queue, RequestId, Seq};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// 2026-01-01 00:00 UTC, in milliseconds since the Unix epoch: the test mirrors' times.
    const T0: u64 = 1_767_225_600_000;
    const MINUTE: u64 = 60_000;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    /// The time the tests inspect at: 2d 5h 12m after `T0`.
    const NOW: u64 = T0 + 2 * DAY + 5 * HOUR + 12 * MINUTE;

    /// A clock the test sets (D24).
    #[derive(Debug, Default)]
    struct TestClock(AtomicU64);

    impl TestClock {
        fn set(&self, ms: u64) {
            self.0.store(ms, Ordering::SeqCst);
        }
    }

    impl Clock for TestClock {
        fn now_ms(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// `parkline inspect <args>` at [`NOW`]: clap's exit status for a usage error, else
    /// `run_at`'s.
    fn run_on(args: &[&str]) -> (u8, String, String) {
        use clap::Parser as _;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = match InspectArgs::try_parse_from(std::iter::once(&"inspect").chain(args)) {
            Ok(args) => run_at(&args, NOW, &mut out, &mut err),
            Err(e) => u8::try_from(e.exit_code()).unwrap_or(u8::MAX),
        };
        (
            status,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    /// A mirror with one parked line, a batch in flight and a dead letter, every line parked at
    /// `T0` and the dead letter dead since `T0` + 1 h; returns its path.
    fn sample(dir: &Path) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
        let path = dir.join("s1.mirror");
        let mut config = parkline::Config::default();
        config.failures_max = 1;
        let clock = Arc::new(TestClock::default());
        clock.set(T0);
        let mut queue = Queue::open_with(&path, config)?.with_clock(clock.clone());
        queue.park(RequestId(7), "doomed")?;
        let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
        clock.set(T0 + HOUR);
        queue.settle(batch.id, &[Outcome::Failed])?;
        clock.set(T0);
        queue.park(RequestId(8), "in flight\x1b[31m")?;
        queue.park(RequestId(9), "parked behind")?;
        queue.boundary(Budget(5))?;
        queue.park(RequestId(10), "late")?;
        Ok(path)
    }

    /// M11, M8: inspect works while the queue holds the lock, prints the three sections, and
    /// leaves the file unchanged.
    #[test]
    fn inspect_prints_tables_without_modifying_or_locking() -> Result<(), Box<dyn std::error::Error>>
    {
        //= spec/delivery.md#d8-dead-letter
        //= type=test
        //# MUST be listable (`Queue::dead_letters`, `parkline inspect`),
        //= spec/mirror.md#m13-inspection-is-read-only-and-lock-free
        //= type=test
        //# `parkline inspect <mirror>` MUST NOT write to the mirror's directory (no truncation of a
        //# torn tail, no removal of a temp file, no lock file created) and MUST NOT take the lock.
        let dir = tempfile::tempdir()?;
        let path = sample(dir.path())?;
        let _live = Queue::open(&path)?; // a live daemon holds the lock
        let before = std::fs::read(&path)?;
        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("parked: 2\n"), "{out}");
        assert!(
            out.contains("in flight: batch 2 attempt 1, 1 items, 1 parked behind it"),
            "{out}"
        );
        assert!(out.contains("dead letters: 1\n"), "{out}");
        assert!(out.contains("doomed") && out.contains("late"), "{out}");
        assert!(
            out.contains("in flight\\u{1b}[31m"),
            "control characters escaped: {out}"
        );
        assert_eq!(std::fs::read(&path)?, before);
        Ok(())
    }

    /// D19: the table shows each item's hand-over count beside its failures: a dead letter
    /// handed over once and the line in flight (handed once) from a line never handed over.
    #[test]
    fn inspect_table_shows_each_items_hand_over_count() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = sample(dir.path())?;
        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?]);
        assert_eq!(status, 0, "{err}");
        let row = |line: &str| -> Vec<String> {
            out.lines()
                .find(|row| row.ends_with(line))
                .map(|row| row.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let header = [
            "seq", "request", "failures", "handed", "chars", "age", "line",
        ];
        assert_eq!(row(" age  line"), header);
        let header = [
            "seq", "request", "failures", "handed", "chars", "dead", "for", "line",
        ];
        assert_eq!(row(" dead for  line"), header);
        // The dead letter's column is its time since it died, "2d 4h"; the others' their age.
        let doomed = ["1", "7", "1", "1", "6", "2d", "4h", "doomed"];
        assert_eq!(row(" doomed"), doomed);
        assert_eq!(row(" late"), ["4", "10", "0", "0", "4", "2d", "5h", "late"]);
        assert_eq!(row(" parked behind")[..5], ["3", "9", "0", "0", "13"]);
        Ok(())
    }

    /// `--json` carries the whole state for machines.
    #[test]
    fn inspect_json_has_the_state() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = sample(dir.path())?;
        let (status, out, _) = run_on(&[path.to_str().ok_or("utf-8")?, "--json"]);
        assert_eq!(status, 0);
        let value: serde_json::Value = serde_json::from_str(&out)?;
        assert_eq!(value["in_flight"]["attempt"], 1);
        assert_eq!(value["in_flight"]["id"], 2);
        assert_eq!(value["in_flight"]["remaining"], 1);
        assert_eq!(value["in_flight"]["items"][0]["line"], "in flight\x1b[31m");
        assert_eq!(value["parked"].as_array().map(Vec::len), Some(2));
        assert_eq!(value["dead_letters"][0]["failures"], 1);
        assert_eq!(value["next_seq"], 5);
        assert_eq!(value["next_batch"], 3);
        assert_eq!(value["cap"], serde_json::Value::Null);
        let decoded = mirror::decode_log(&std::fs::read(&path)?)?;
        assert_eq!(value["records"], decoded.records);
        assert_eq!(value["torn_bytes"], 0);
        // M13: schema 2, its own keys, whatever the file format's in-memory state holds.
        assert_eq!(value["schema"], 2);
        assert_eq!(value["schema"], JSON_SCHEMA);
        assert_eq!(value["format_version"], decoded.version);
        let life = decoded.state.life.ok_or("a life")?.to_string();
        assert_eq!(value["life"], life.as_str());
        let keys: Vec<&str> = value
            .as_object()
            .ok_or("an object")?
            .keys()
            .map(String::as_str)
            .collect();
        let mut schema_2 = [
            "schema",
            "path",
            "format_version",
            "life",
            "bytes",
            "records",
            "torn_bytes",
            "now_ms",
            "next_seq",
            "next_batch",
            "cap",
            "parked",
            "in_flight",
            "dead_letters",
            "delivered_memory",
            "remembered",
            "requests_applied",
        ];
        schema_2.sort_unstable();
        assert_eq!(keys, schema_2);
        let keys_of = |item: &serde_json::Value| -> Vec<String> {
            item.as_object()
                .map(|item| item.keys().cloned().collect())
                .unwrap_or_default()
        };
        let item_keys = [
            "age_ms",
            "failures",
            "handed",
            "line",
            "parked_at",
            "request",
            "seq",
        ];
        assert_eq!(keys_of(&value["parked"][0]), item_keys);
        assert_eq!(keys_of(&value["in_flight"]["items"][0]), item_keys);
        let dead_keys = [
            "age_ms",
            "dead_for_ms",
            "died_at",
            "failures",
            "handed",
            "line",
            "parked_at",
            "request",
            "seq",
        ];
        assert_eq!(keys_of(&value["dead_letters"][0]), dead_keys);
        Ok(())
    }

    /// M13: the format version shown is the file's header's, not the build's: a version 1 file
    /// says 1, in the table and in the JSON.
    #[test]
    fn m13_inspect_shows_the_files_own_format_version() -> Result<(), Box<dyn std::error::Error>> {
        //= spec/mirror.md#m13-inspection-is-read-only-and-lock-free
        //= type=test
        //# `parkline inspect <mirror>` MUST NOT write to the mirror's directory (no truncation of a
        //# torn tail, no removal of a temp file, no lock file created) and MUST NOT take the lock.
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/impl/tests/fixtures/v1/mixed.mirror"
        );
        let before = std::fs::read(fixture)?;
        let (status, out, _) = run_on(&[fixture, "--json"]);
        assert_eq!(status, 0);
        let value: serde_json::Value = serde_json::from_str(&out)?;
        assert_eq!(value["format_version"], 1);
        // D24: a line of a mirror before format 4 has no time, and so no age.
        let null = serde_json::Value::Null;
        for item in [&value["parked"][0], &value["in_flight"]["items"][0]] {
            assert_eq!((&item["parked_at"], &item["age_ms"]), (&null, &null));
        }
        let dead = &value["dead_letters"][0];
        assert_eq!((&dead["died_at"], &dead["dead_for_ms"]), (&null, &null));
        assert_eq!(value["now_ms"], NOW);
        assert_eq!(value["delivered_memory"], 0);
        assert_eq!(value["remembered"], serde_json::json!([]));
        let (status, out, _) = run_on(&[fixture]);
        assert_eq!(status, 0);
        assert!(out.contains("format version 1,"), "{out}");
        let r16 = out
            .lines()
            .find(|row| row.ends_with(" r16 a"))
            .unwrap_or("");
        assert!(r16.ends_with("  -  r16 a"), "no age: {out}");
        assert!(
            out.contains("\nremembered: 0 of 0 delivered or discarded requests"),
            "{out}"
        );
        assert_eq!(std::fs::read(fixture)?, before);
        Ok(())
    }

    /// D24, D3: inspect shows each line's age and each dead letter's time since it died, measured
    /// from the time it reads the file (never below 0, for a line parked by a clock ahead of
    /// it), and the remembered window, oldest first.
    #[test]
    fn d24_inspect_shows_ages_and_the_remembered_window() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("s1.mirror");
        let mut config = parkline::Config::default();
        config.failures_max = 1;
        let clock = Arc::new(TestClock::default());
        clock.set(T0);
        let mut queue = Queue::open_with(&path, config)?.with_clock(clock.clone());
        queue.park(RequestId(1), "r1 delivered")?;
        queue.park(RequestId(2), "r2 dies")?;
        let batch = queue.boundary(Budget(1000))?.ok_or("parked")?;
        clock.set(T0 + HOUR);
        queue.settle(batch.id, &[Outcome::Delivered, Outcome::Failed])?;
        queue.park(RequestId(3), "r3 discarded")?;
        let batch = queue.boundary(Budget(1000))?.ok_or("parked")?;
        clock.set(T0 + 2 * HOUR);
        queue.settle(batch.id, &[Outcome::Failed])?;
        queue.discard(&[Seq(3)])?;
        clock.set(T0 + 2 * DAY);
        queue.park(RequestId(4), "r4 in flight")?;
        queue.boundary(Budget(1000))?.ok_or("parked")?;
        clock.set(NOW + MINUTE); // a clock ahead of inspect's
        queue.park(RequestId(5), "r5 parked")?;
        drop(queue);

        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?, "--json"]);
        assert_eq!(status, 0, "{err}");
        let value: serde_json::Value = serde_json::from_str(&out)?;
        assert_eq!(value["now_ms"], NOW);
        let parked = &value["parked"][0];
        assert_eq!(parked["parked_at"], NOW + MINUTE);
        assert_eq!(parked["age_ms"], 0, "an age is never below 0");
        let in_flight = &value["in_flight"]["items"][0];
        assert_eq!(in_flight["parked_at"], T0 + 2 * DAY);
        assert_eq!(in_flight["age_ms"], 5 * HOUR + 12 * MINUTE);
        let dead = &value["dead_letters"][0];
        assert_eq!(dead["request"], 2);
        assert_eq!(dead["parked_at"], T0);
        assert_eq!(dead["age_ms"], NOW - T0);
        assert_eq!(dead["died_at"], T0 + HOUR);
        assert_eq!(dead["dead_for_ms"], NOW - T0 - HOUR);
        assert_eq!(value["delivered_memory"], parkline::DELIVERED_MEMORY);
        let state = mirror::decode_log(&std::fs::read(&path)?)?.state;
        let crc = |at: usize| state.remembered.get(at).map(|entry| entry.crc);
        assert_eq!(
            value["remembered"],
            serde_json::json!([
                {"request": 1, "crc": crc(0), "seq": 1, "batch": 1, "end": "delivered"},
                {"request": 3, "crc": crc(1), "seq": 3, "batch": null, "end": "discarded"},
            ])
        );

        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?]);
        assert_eq!(status, 0, "{err}");
        let row = |line: &str| out.lines().find(|row| row.ends_with(line)).unwrap_or("");
        assert!(row(" r5 parked").ends_with("  0s  r5 parked"), "{out}");
        assert!(
            row(" r4 in flight").ends_with("  5h 12m  r4 in flight"),
            "{out}"
        );
        assert!(row(" r2 dies").ends_with("  2d 4h  r2 dies"), "{out}");
        assert!(
            out.contains(
                "\nremembered: 2 of 256 delivered or discarded requests (a park of one again \
                 answers how it ended)\n"
            ),
            "{out}"
        );
        Ok(())
    }

    /// Ages in short human units: the largest unit, and from hours on the next one unless 0.
    #[test]
    fn human_units_name_the_largest_unit_and_the_next() {
        let s = 1000;
        let shown: Vec<String> = [
            0,
            999,
            45 * s,
            59 * s + 999,
            60 * s,
            12 * MINUTE + 59 * s,
            HOUR,
            3 * HOUR + 4 * MINUTE + 30 * s,
            DAY - 1,
            DAY,
            2 * DAY + 5 * HOUR + 59 * MINUTE,
            400 * DAY,
            u64::MAX,
        ]
        .into_iter()
        .map(human_ms)
        .collect();
        assert_eq!(
            shown,
            [
                "0s",
                "0s",
                "45s",
                "59s",
                "1m",
                "12m",
                "1h",
                "3h 4m",
                "23h 59m",
                "1d",
                "2d 5h",
                "400d",
                "213503982334d 14h",
            ]
        );
    }

    /// M13, section 6: a damaged header gets no advice to cut the file at byte 0 (that leaves an
    /// empty file, which is damaged too); a later damaged record gets the cut at its offset.
    #[test]
    fn m13_the_advice_names_only_commands_that_work() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let header = dir.path().join("header.mirror");
        std::fs::write(&header, b"00000000 {\"format\":\"nonsense\"}\n")?;
        let (status, _, err) = run_on(&[header.to_str().ok_or("utf-8")?]);
        assert_eq!(status, 1);
        assert!(!err.contains("head -c 0"), "{err}");
        assert!(!err.contains("truncate -s 0"), "{err}");
        let path = sample(dir.path())?;
        let mut bytes = std::fs::read(&path)?;
        let at = bytes.len() - 3;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes)?;
        let (status, _, err) = run_on(&[path.to_str().ok_or("utf-8")?]);
        assert_eq!(status, 1);
        assert!(
            err.contains("head -c ") && err.contains("truncate -s "),
            "{err}"
        );
        Ok(())
    }

    /// M11: a damaged mirror exits 1 with the typed error and advice; the file is unchanged.
    #[test]
    fn inspect_reports_a_damaged_mirror() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = sample(dir.path())?;
        let mut bytes = std::fs::read(&path)?;
        let at = bytes
            .windows(6)
            .position(|w| w == b"doomed")
            .ok_or("present")?;
        bytes[at] = b'D';
        std::fs::write(&path, &bytes)?;
        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?, "--json"]);
        assert_eq!(status, 1);
        assert!(err.contains("corrupt mirror"), "{err}");
        assert!(err.contains("checksum mismatch"), "{err}");
        assert!(err.contains("truncate -s"), "{err}");
        let value: serde_json::Value = serde_json::from_str(&out)?;
        assert_eq!(value["error"]["kind"], "Corrupt");
        assert_eq!(value["error"]["record"], 3);
        assert_eq!(std::fs::read(&path)?, bytes);
        Ok(())
    }

    /// M13: inspect writes nothing in the mirror's directory: a torn final record is reported
    /// and left (no truncation), a leftover temp file stays, and no lock file is created.
    #[test]
    fn inspect_writes_nothing_beside_a_torn_mirror() -> Result<(), Box<dyn std::error::Error>> {
        //= spec/mirror.md#m13-inspection-is-read-only-and-lock-free
        //= type=test
        //# `parkline inspect <mirror>` MUST NOT write to the mirror's directory (no truncation of a
        //# torn tail, no removal of a temp file, no lock file created) and MUST NOT take the lock.
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("s1.mirror");
        let mut bytes = mirror::encode(&MirrorState::default());
        bytes.extend_from_slice(b"0123abcd {\"type\":\"pa");
        std::fs::write(&path, &bytes)?;
        std::fs::write(dir.path().join("s1.mirror.tmp"), b"unfinished")?;
        let listing = || -> std::io::Result<Vec<(std::ffi::OsString, Vec<u8>)>> {
            let mut entries = std::fs::read_dir(dir.path())?
                .map(|entry| {
                    let entry = entry?;
                    Ok((entry.file_name(), std::fs::read(entry.path())?))
                })
                .collect::<std::io::Result<Vec<_>>>()?;
            entries.sort();
            Ok(entries)
        };
        let before = listing()?;
        let (status, out, err) = run_on(&[path.to_str().ok_or("utf-8")?, "--json"]);
        assert_eq!(status, 0, "{err}");
        let value: serde_json::Value = serde_json::from_str(&out)?;
        assert_eq!(value["torn_bytes"], 20);
        assert_eq!(listing()?, before, "inspect changed the directory");
        assert!(!dir.path().join("s1.mirror.lock").exists());
        Ok(())
    }

    /// M13, M17: inspect lists the operator requests the mirror applied, with their answers.
    #[test]
    fn m17_inspect_shows_the_applied_requests() -> Result<(), Box<dyn std::error::Error>> {
        use parkline::ops::{self, OpId, Request, Verb, Which};
        let dir = tempfile::tempdir()?;
        let path = sample(dir.path())?;
        for (id, seq) in [("r1", 1), ("r2", 99)] {
            let which = Which::Seqs(vec![Seq(seq)]);
            let window = ops::durable_window(&path)?;
            let request = Request {
                id: OpId::new(id)?,
                verb: Verb::Discard,
                which,
                life: window.life,
            };
            ops::submit(&path, &request, &window)?;
        }
        drop(Queue::open(&path)?);
        let (status, out, _) = run_on(&[path.to_str().ok_or("utf-8")?, "--json"]);
        assert_eq!(status, 0);
        let value: serde_json::Value = serde_json::from_str(&out)?;
        let refused = "seq 99 is not a dead letter";
        let applied = &value["requests_applied"];
        assert_eq!(
            applied[0],
            serde_json::json!({"id": "r1", "verb": "discard", "moved": 1, "refused": null})
        );
        assert_eq!(applied[1]["moved"], serde_json::Value::Null);
        assert!(
            applied[1]["refused"]
                .as_str()
                .is_some_and(|why| why.contains(refused))
        );
        let (_, out, _) = run_on(&[path.to_str().ok_or("utf-8")?]);
        assert!(out.contains("operator requests applied: 2"), "{out}");
        assert!(out.contains("\n  r1 discard: moved 1\n"), "{out}");
        Ok(())
    }

    /// Usage errors and a missing file.
    #[test]
    fn inspect_usage_and_missing_file() {
        assert_eq!(run_on(&[]).0, 2);
        assert_eq!(run_on(&["--bogus"]).0, 2);
        assert_eq!(run_on(&["a", "b"]).0, 2);
        assert_eq!(run_on(&["--help"]).0, 0);
        assert_eq!(run_on(&["/nonexistent/parkline/x.mirror"]).0, 3);
    }
}
