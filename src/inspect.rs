//! `parkline inspect <mirror> [--json]`: what a mirror holds, for an operator or a script.
//!
//! Prints the parked lines, the batch in flight (with its attempt) and the dead letters as tables,
//! or as one JSON object with `--json`. It never modifies the file: it reads the bytes once with
//! `std::fs::read` and decodes them with `parkline::mirror::decode_log`, the decoder `open` uses.
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
use parkline::{Error, ErrorKind, Item};

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
pub fn run(args: &InspectArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    //= spec/mirror.md#m13-inspection-is-read-only-and-lock-free
    //# `parkline inspect <mirror>` MUST NOT write to the mirror's directory (no truncation of a
    //# torn tail, no removal of a temp file, no lock file created) and MUST NOT take the lock.
    let json = args.json;
    let path = args.mirror.as_path();
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = writeln!(err, "parkline inspect: cannot read {}: {e}", path.display());
            return 3;
        }
    };
    match mirror::decode_log(&bytes) {
        Ok(decoded) => {
            let written = if json {
                serde_json::to_writer(&mut *out, &json_report(path, bytes.len(), &decoded))
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
            } else {
                write!(out, "{}", table_report(path, bytes.len(), &decoded))
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
pub const JSON_SCHEMA: u64 = 1;

/// `inspect --json`'s object, schema [`JSON_SCHEMA`] (M13): its own types, so that a change of
/// the file format's in-memory state does not change what a script reads.
#[derive(serde::Serialize)]
struct JsonReport {
    schema: u64,
    path: String,
    format_version: u64,
    bytes: usize,
    records: u64,
    torn_bytes: u64,
    next_seq: u64,
    next_batch: u64,
    /// The most items a new batch may hold (D11), `null` when no cap is set.
    cap: Option<u64>,
    parked: Vec<JsonItem>,
    in_flight: Option<JsonBatch>,
    dead_letters: Vec<JsonItem>,
}

#[derive(serde::Serialize)]
struct JsonItem {
    seq: u64,
    request: u64,
    line: String,
    failures: u32,
    handed: u64,
}

#[derive(serde::Serialize)]
struct JsonBatch {
    id: u64,
    attempt: u32,
    remaining: usize,
    seen: usize,
    items: Vec<JsonItem>,
}

fn json_items(items: &[Item]) -> Vec<JsonItem> {
    items
        .iter()
        .map(|item| JsonItem {
            seq: item.seq.0,
            request: item.request.0,
            line: item.line.to_string(),
            failures: item.failures,
            handed: item.handed,
        })
        .collect()
}

fn json_report(path: &Path, bytes: usize, decoded: &Decoded) -> JsonReport {
    let state: &MirrorState = &decoded.state;
    JsonReport {
        schema: JSON_SCHEMA,
        path: path.display().to_string(),
        format_version: decoded.version,
        bytes,
        records: decoded.records,
        torn_bytes: decoded.torn_len,
        next_seq: state.next_seq.0,
        next_batch: state.next_batch.0,
        cap: state.cap,
        parked: json_items(&state.parked),
        in_flight: state.in_flight.as_ref().map(|batch| JsonBatch {
            id: batch.id.0,
            attempt: batch.attempt.0,
            remaining: batch.remaining,
            seen: batch.seen,
            items: json_items(&batch.items),
        }),
        dead_letters: json_items(&state.dead_letters),
    }
}

fn table_report(path: &Path, bytes: usize, decoded: &Decoded) -> String {
    let state = &decoded.state;
    let mut text = format!(
        "mirror {}: format version {}, {} records, {bytes} bytes; next seq {}, next batch {}\n",
        path.display(),
        decoded.version,
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
    text.push_str(&items_table(&state.parked));
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
            text.push_str(&items_table(&batch.items));
        }
    }
    //= spec/delivery.md#d8-dead-letter
    //# MUST be listable (`Queue::dead_letters`, `parkline inspect`),
    text.push_str(&format!("\ndead letters: {}\n", state.dead_letters.len()));
    text.push_str(&items_table(&state.dead_letters));
    text
}

fn items_table(items: &[Item]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut rows = vec![[
        "seq".to_owned(),
        "request".to_owned(),
        "failures".to_owned(),
        "handed".to_owned(),
        "chars".to_owned(),
        "line".to_owned(),
    ]];
    for item in items {
        rows.push([
            item.seq.to_string(),
            item.request.to_string(),
            item.failures.to_string(),
            item.handed.to_string(),
            item.line.chars().count().to_string(),
            cell(&item.line),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        text.push_str("  ");
        for (c, width) in widths.iter().enumerate() {
            text.push_str(&format!("{:>width$}  ", row[c]));
        }
        text.push_str(&row[5]);
        text.push('\n');
    }
    text
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
    use parkline::{Budget, Outcome, Queue, RequestId};

    /// `parkline inspect <args>`: clap's exit status for a usage error, else `run`'s.
    fn run_on(args: &[&str]) -> (u8, String, String) {
        use clap::Parser as _;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = match InspectArgs::try_parse_from(std::iter::once(&"inspect").chain(args)) {
            Ok(args) => run(&args, &mut out, &mut err),
            Err(e) => u8::try_from(e.exit_code()).unwrap_or(u8::MAX),
        };
        (
            status,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    /// A mirror with one parked line, a batch in flight and a dead letter; returns its path.
    fn sample(dir: &Path) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
        let path = dir.join("s1.mirror");
        let mut config = parkline::Config::default();
        config.failures_max = 1;
        let mut queue = Queue::open_with(&path, config)?;
        queue.park(RequestId(7), "doomed")?;
        let batch = queue.boundary(Budget(100))?.ok_or("parked")?;
        queue.settle(batch.id, &[Outcome::Failed])?;
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
        let header = ["seq", "request", "failures", "handed", "chars", "line"];
        assert_eq!(row(" line"), header);
        assert_eq!(row(" doomed"), ["1", "7", "1", "1", "6", "doomed"]);
        assert_eq!(row(" late"), ["4", "10", "0", "0", "4", "late"]);
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
        // M13: schema 1, its own keys, whatever the file format's in-memory state holds.
        assert_eq!(value["schema"], JSON_SCHEMA);
        assert_eq!(value["format_version"], decoded.version);
        let keys: Vec<&str> = value
            .as_object()
            .ok_or("an object")?
            .keys()
            .map(String::as_str)
            .collect();
        let mut schema_1 = [
            "schema",
            "path",
            "format_version",
            "bytes",
            "records",
            "torn_bytes",
            "next_seq",
            "next_batch",
            "cap",
            "parked",
            "in_flight",
            "dead_letters",
        ];
        schema_1.sort_unstable();
        assert_eq!(keys, schema_1);
        let item_keys: Vec<&str> = value["parked"][0]
            .as_object()
            .ok_or("an item")?
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(item_keys, ["failures", "handed", "line", "request", "seq"]);
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
        let (status, out, _) = run_on(&[fixture]);
        assert_eq!(status, 0);
        assert!(out.contains("format version 1,"), "{out}");
        assert_eq!(std::fs::read(fixture)?, before);
        Ok(())
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
