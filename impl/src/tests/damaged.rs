//! Damaged mirrors (M1-M3, M6, M7, M11): every kind of damage opens to `Corrupt`, naming the file,
//! the record and its byte offset with the reason, and leaves the file (and a leftover temp file)
//! byte for byte as it was. One table of cases, checked by one function.

use super::*;

/// One damaged file and the error opening it must give.
struct Damaged {
    /// Names the case in a failure.
    name: &'static str,
    bytes: Vec<u8>,
    kind: ErrorKind,
    /// The record the error names, counted from 1 (the header is record 1).
    record: u64,
    /// The byte offset of that record's first byte.
    offset: u64,
    /// What the error's context must contain.
    reason: &'static str,
}

fn corrupt(
    name: &'static str,
    bytes: impl Into<Vec<u8>>,
    record: u64,
    offset: u64,
    reason: &'static str,
) -> Damaged {
    Damaged {
        name,
        bytes: bytes.into(),
        kind: ErrorKind::Corrupt,
        record,
        offset,
        reason,
    }
}

/// Where record `record` starts in `bytes`: the length of the lines before it.
fn record_start(bytes: &[u8], record: u64) -> u64 {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .take(record.saturating_sub(1) as usize)
        .map(<[u8]>::len)
        .sum::<usize>() as u64
}

/// Every damaged file the crate must refuse. Offsets: the header line is 50 bytes, a park
/// record of a one-digit seq 70.
fn damaged_cases() -> Vec<Damaged> {
    let batch_1_of_2 = r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,1]],"remaining":1}"#;
    let settle_1 = r#"{"type":"settle","batch":1,"delivered":[[1,1]],"failed":[],"dead":[]}"#;
    let header = header();
    vec![
        // M2: an empty file has no header.
        corrupt("empty file", "", 1, 0, "empty file"),
        // M2, M7: a header without its newline is damage, not a torn append.
        corrupt(
            "torn header",
            &header.as_bytes()[..header.len() - 1],
            1,
            0,
            "header without its newline",
        ),
        // M1: a complete record whose checksum differs.
        corrupt(
            "bad checksum",
            {
                let mut line = rec(&park_json(1));
                line.replace_range(0..1, if line.starts_with('0') { "1" } else { "0" });
                header.clone() + &line
            },
            2,
            50,
            "checksum mismatch",
        ),
        // M1: one changed byte in a record's JSON.
        corrupt(
            "flipped byte in json",
            header.clone() + &rec(&park_json(1)).replace("\"l1\"", "\"l2\"") + &rec(&park_json(2)),
            2,
            50,
            "checksum mismatch",
        ),
        // M11: damage in the middle of a file is found even when later records are fine.
        corrupt(
            "record in the middle",
            {
                let mut bytes = header.clone()
                    + &rec(&park_json(1))
                    + &rec(&park_json(2))
                    + &rec(&park_json(3));
                let at = bytes.find("\"l2\"").expect("the record of seq 2");
                bytes.replace_range(at + 1..at + 2, "m");
                bytes
            },
            3,
            131,
            "checksum mismatch",
        ),
        // M1: a checksum that is not 8 lowercase hex digits.
        corrupt(
            "checksum not hex",
            header.clone() + "ZZZZZZZZ {}\n",
            2,
            50,
            "8 lowercase hex",
        ),
        // M1: a record without its checksum.
        corrupt(
            "line without checksum",
            header.clone() + "{}\n",
            2,
            50,
            "not a record",
        ),
        // M1: the shortest well-framed line (8 hex digits, space, one byte of JSON) passes the
        // framing and checksum checks and is the JSON error it is. Kills `< with <=` in
        // `checked_json`'s length check (which would call it "not a record").
        corrupt(
            "one-byte json record",
            header.clone() + &rec("7"),
            2,
            50,
            "json error",
        ),
        // M3: the JSON of a record is not an object, or its type not a string: serde's type
        // error says what was expected (the record, the type's name).
        corrupt(
            "record not an object",
            header.clone() + &rec("true"),
            2,
            50,
            "expected internally tagged enum Record",
        ),
        corrupt(
            "record type not a string",
            header.clone() + &rec(r#"{"type":5,"seq":1}"#),
            2,
            50,
            "expected variant identifier",
        ),
        // M3: a record whose JSON does not parse.
        corrupt(
            "json error",
            header.clone() + &rec(r#"{"type":"park","seq":1"#),
            2,
            50,
            "json error",
        ),
        // M3: a record of an unknown type.
        corrupt(
            "unknown record type",
            header.clone() + &rec(r#"{"type":"merge","seq":1}"#),
            2,
            50,
            "json error",
        ),
        // M3: a record with an unknown field.
        corrupt(
            "unknown field",
            header.clone()
                + &rec(r#"{"type":"park","seq":1,"request":1,"line":"x","failures":0,"extra":1}"#),
            2,
            50,
            "json error",
        ),
        // M2: a header of an unknown version.
        corrupt(
            "unknown version",
            rec(r#"{"format":"parkline-mirror","version":5}"#) + &rec(&park_json(1)),
            1,
            0,
            "unknown mirror version 5",
        ),
        // M2: the daemon's old deferred-input.json is not a mirror.
        corrupt(
            "old deferred-input.json",
            "{\"deferred\":[]}\n",
            1,
            0,
            "not a record",
        ),
        // M2: a well-framed header of another format.
        corrupt(
            "foreign format",
            rec(r#"{"format":"something-else","version":1}"#),
            1,
            0,
            "not a parkline mirror",
        ),
        // M2: records without a header.
        corrupt(
            "missing header",
            rec(&park_json(1)),
            1,
            0,
            "not a parkline mirror",
        ),
        // M6: a seq used twice.
        corrupt(
            "duplicate seq",
            header.clone() + &rec(&park_json(1)) + &rec(&park_json(1)),
            3,
            131,
            "seq 1 reused",
        ),
        // M6: a batch id used twice.
        corrupt(
            "duplicate batch id",
            header.clone()
                + &rec(&park_json(1))
                + &rec(&park_json(2))
                + &rec(batch_1_of_2)
                + &rec(settle_1)
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[2,2]],"remaining":0}"#),
            6,
            365,
            "batch id 1 reused",
        ),
        // M3: a second batch while one is in flight.
        corrupt(
            "two batches in flight",
            header.clone()
                + &rec(&park_json(1))
                + &rec(&park_json(2))
                + &rec(batch_1_of_2)
                + &rec(r#"{"type":"batch","id":2,"attempt":1,"seqs":[[2,2]],"remaining":0}"#),
            5,
            286,
            "still in flight",
        ),
        // M3: a batch naming a seq that is not parked.
        corrupt(
            "batch naming unknown seqs",
            header.clone()
                + &rec(&park_json(1))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,1],[9,9]],"remaining":0}"#),
            3,
            131,
            "names seqs [1,9]",
        ),
        // M3, D17: a batch that is not the front of the parked list.
        corrupt(
            "batch not a prefix",
            header.clone()
                + &rec(&park_json(1))
                + &rec(&park_json(2))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[2,2]],"remaining":1}"#),
            4,
            212,
            "first parked seqs are [1]",
        ),
        // M3, D13: a batch whose remaining is not the lines parked behind it.
        corrupt(
            "batch with wrong remaining",
            header.clone()
                + &rec(&park_json(1))
                + &rec(&park_json(2))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,1]],"remaining":0}"#),
            4,
            212,
            "says 0 remaining",
        ),
        // M3: a batch without items.
        corrupt(
            "empty batch",
            header.clone() + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[],"remaining":0}"#),
            2,
            50,
            "no items",
        ),
        // M3: a settle of a batch that is not in flight.
        corrupt(
            "settle of unknown batch",
            header.clone() + &rec(&park_json(1)) + &rec(settle_1),
            3,
            131,
            "not in flight",
        ),
        // M3, D6: a settle that does not name every item exactly once.
        corrupt(
            "settle with wrong seqs",
            header.clone()
                + &rec(&park_json(1))
                + &rec(&park_json(2))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,2]],"remaining":0}"#)
                + &rec(
                    r#"{"type":"settle","batch":1,"delivered":[[1,1]],"failed":[[1,1]],"dead":[]}"#,
                ),
            5,
            286,
            "names seqs [1,1]",
        ),
        // M3, D10: an attempt that does not follow the stored one.
        corrupt(
            "attempt not increasing",
            header.clone()
                + &rec(&park_json(1))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,1]],"remaining":0}"#)
                + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#)
                + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#),
            5,
            255,
            "does not follow attempt 2",
        ),
        // M3: an attempt for a batch that is not in flight.
        corrupt(
            "attempt for unknown batch",
            header.clone() + &rec(r#"{"type":"attempt","batch":1,"attempt":2}"#),
            2,
            50,
            "not in flight",
        ),
        // M6: counters that go back.
        corrupt(
            "counters going back",
            header.clone() + &rec(&park_json(5)) + &rec(r#"{"type":"next","seq":3,"batch":1}"#),
            3,
            131,
            "go back",
        ),
        // M3, D3: a parked line that contains a newline.
        corrupt(
            "line with newline escape",
            header.clone()
                + &rec(
                    r#"{"type":"park","seq":1,"request":1,"line":"a\nb","failures":0,"handed":0}"#,
                ),
            2,
            50,
            "contains a newline",
        ),
        // M2, M3: a version 2 park must carry its hand-over count (D19).
        corrupt(
            "version 2 park without handed",
            header.clone() + &rec(r#"{"type":"park","seq":1,"request":1,"line":"x","failures":0}"#),
            2,
            50,
            "missing field `handed`",
        ),
        // M13: a version 1 file holds only version 1 records; damaged, it is left as it is.
        corrupt(
            "version 1 file with a version 2 field",
            rec(r#"{"format":"parkline-mirror","version":1}"#)
                + &rec(r#"{"type":"park","seq":1,"request":1,"line":"x","failures":0,"handed":0}"#),
            2,
            50,
            "unknown field",
        ),
        corrupt(
            "version 1 file with a group park",
            rec(r#"{"format":"parkline-mirror","version":1}"#)
                + &rec(r#"{"type":"parks","seq":1,"items":[{"request":1,"line":"x"}]}"#),
            2,
            50,
            "json error",
        ),
        // D22: a group park holds at least one line, each without a newline, at fresh seqs.
        corrupt(
            "empty group park",
            header.clone() + &rec(r#"{"type":"parks","seq":1,"items":[]}"#),
            2,
            50,
            "has no lines",
        ),
        corrupt(
            "group park with a newline",
            header.clone()
                + &rec(r#"{"type":"parks","seq":1,"items":[{"request":1,"line":"a\nb"}]}"#),
            2,
            50,
            "contains a newline",
        ),
        corrupt(
            "group park reusing seqs",
            header.clone()
                + &rec(&park_json(5))
                + &rec(r#"{"type":"parks","seq":3,"items":[{"request":1,"line":"x"}]}"#),
            3,
            131,
            "reuses seqs",
        ),
        corrupt(
            "group park past the last seq",
            header.clone()
                + &rec(&format!(
                    r#"{{"type":"parks","seq":{},"items":[{{"request":1,"line":"x"}},{{"request":2,"line":"y"}}]}}"#,
                    u64::MAX - 1
                )),
            2,
            50,
            "leaves no next seq",
        ),
        // D21: a redrive names dead letters only, at least one, in increasing order.
        corrupt(
            "redrive of a parked line",
            header.clone() + &rec(&park_json(1)) + &rec(r#"{"type":"redrive","seqs":[[1,1]]}"#),
            3,
            131,
            "not a dead letter",
        ),
        corrupt(
            "empty redrive",
            header.clone() + &rec(r#"{"type":"redrive","seqs":[]}"#),
            2,
            50,
            "names no seqs",
        ),
        // D19, M6: a hand-over count is never wrapped.
        corrupt(
            "hand-over count past u64::MAX",
            header.clone()
                + &rec(&format!(
                    r#"{{"type":"park","seq":1,"request":1,"line":"l1","failures":0,"handed":{}}}"#,
                    u64::MAX
                ))
                + &rec(r#"{"type":"batch","id":1,"attempt":1,"seqs":[[1,1]],"remaining":0}"#),
            3,
            150,
            "hand-overs",
        ),
    ]
}

/// Opens a queue on a file holding the case's bytes beside a leftover temp file, and checks the
/// error against the case and that neither file was touched (M11). A mismatch is an `Err`
/// naming the case.
fn check_damaged(case: &Damaged) -> Result<(), String> {
    let name = case.name;
    let fail = |what: String| Err(format!("{name:?}: {what}"));
    let io = |e: io::Error| format!("{name:?}: setup: {e}");
    // The row itself: its offset must be where its record starts, so a typo in the table is
    // reported as one, not as a bug of the crate.
    let start = record_start(&case.bytes, case.record);
    if case.offset != start {
        return fail(format!(
            "the row's offset {} is not where record {} starts ({start})",
            case.offset, case.record
        ));
    }
    let (dir, path) = temp_mirror().map_err(io)?;
    fs::write(&path, &case.bytes).map_err(io)?;
    let tmp = dir.path().join("s1.mirror.tmp");
    fs::write(&tmp, b"partial snapshot").map_err(io)?;
    let Err(err) = Queue::open(&path).map(|_| ()) else {
        return fail("the damaged file opened".to_string());
    };
    if err.kind() != case.kind {
        return fail(format!(
            "kind {:?}, expected {:?}: {err}",
            err.kind(),
            case.kind
        ));
    }
    if err.path() != Some(path.as_path()) {
        return fail(format!("path {:?}: {err}", err.path()));
    }
    if err.record() != Some(case.record) {
        return fail(format!(
            "record {:?}, expected {}: {err}",
            err.record(),
            case.record
        ));
    }
    if err.offset() != Some(case.offset) {
        return fail(format!(
            "offset {:?}, expected {}: {err}",
            err.offset(),
            case.offset
        ));
    }
    if !err.context().contains(case.reason) {
        return fail(format!("{err} lacks {:?}", case.reason));
    }
    if !err.to_string().starts_with("corrupt mirror: ") {
        return fail(format!(
            "message {err:?} does not start with \"corrupt mirror: \""
        ));
    }
    if fs::read(&path).map_err(io)? != case.bytes {
        return fail("the damaged file was modified".to_string());
    }
    if fs::read(&tmp).map_err(io)? != b"partial snapshot" {
        return fail("the temp file was touched".to_string());
    }
    Ok(())
}

/// M1-M3, M6, M7, M11: every damaged file of the table is refused as the row says and left as
/// it was. Every failing row is reported, each by its name.
#[test]
fn damaged_files_are_corrupt_and_left_as_they_were() {
    //= spec/mirror.md#m1-record-lines
    //= type=test
    //# A reader MUST reject a complete line (one ending in `\n`) whose checksum is missing, not 8
    //# lowercase hex digits, or different from the JSON's.
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# The first record MUST be the header `{"format":"parkline-mirror","version":4}`, with the
    //# mirror's life (M17) as a third field `"life"` of 16 lowercase hexadecimal digits.
    //= spec/mirror.md#m2-header-and-version
    //= type=test
    //# A reader MUST reject a file whose first record is not a header with format
    //# `parkline-mirror`, and a file whose version it does not know (this document is version 4;
    //# this build also reads versions 1, 2 and 3, M14), with the version in the error.
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# Every record after the header is a JSON object with a `"type"` field and exactly the fields
    //# below (a reader MUST reject unknown types and unknown fields).
    //= spec/mirror.md#m3-records-and-the-state-transition
    //= type=test
    //# Applying the records in order to the empty state (no items, no batch, counters 1) MUST give
    //# the file's state; a record that is impossible in the state built so far MUST be rejected
    //# (M11).
    //= spec/mirror.md#m5-whole-file-writes-temp-file-fsync-rename-directory-fsync
    //= type=test
    //# On open, a leftover `<name>.tmp` MUST be ignored as content and removed (followed by a
    //# directory fsync) — but only after the mirror itself decoded without error (M11).
    //= spec/mirror.md#m6-seqs-and-batch-ids-are-never-reused
    //= type=test
    //# Seqs and batch ids MUST strictly increase along the file; a reader MUST reject a
    //# `park`/`dead` record whose seq, or a `batch` record whose id, is below the current counter.
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //= type=test
    //# Anything in the file other than a torn final append (M7) — an empty file, a missing or torn
    //# header, an unknown format or version (M2), a bad checksum (M1), a JSON error, an unknown
    //# record type or field, an impossible record (M3, M6) — MUST make opening fail with a
    //# `Corrupt` error naming the file, the byte offset and the 1-based number of the bad record
    //# (the header is record 1), and the reason.
    //= spec/mirror.md#m11-damaged-files-are-reported-never-written
    //= type=test
    //# In that case the queue MUST NOT modify the mirror or its temp file: no truncation, no
    //# "repair", no removal of the temp file; both stay byte for byte as they were.
    let cases = damaged_cases();
    assert_eq!(cases.len(), 40, "a damaged case was added or lost");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| check_damaged(case).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} damaged cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The table's check can fail: a row expecting another kind, record, offset or reason, or a
/// file that is not damaged, is reported, naming the row and what differs.
#[test]
fn damaged_check_names_a_wrong_row() -> TestResult {
    let good = || {
        corrupt(
            "duplicate seq",
            header() + &rec(&park_json(1)) + &rec(&park_json(1)),
            3,
            131,
            "seq 1 reused",
        )
    };
    check_damaged(&good())?;
    let wrong_kind = Damaged {
        kind: ErrorKind::Io,
        ..good()
    };
    let wrong_record = Damaged {
        record: 2,
        offset: 50,
        ..good()
    };
    let wrong_offset = Damaged {
        offset: 130,
        ..good()
    };
    let wrong_reason = Damaged {
        reason: "seq 2 reused",
        ..good()
    };
    let not_damaged = Damaged {
        bytes: (header() + &rec(&park_json(1))).into_bytes(),
        ..good()
    };
    for (case, expected) in [
        (wrong_kind, "kind Corrupt, expected Io"),
        (wrong_record, "record Some(3), expected 2"),
        (
            wrong_offset,
            "the row's offset 130 is not where record 3 starts (131)",
        ),
        (wrong_reason, "lacks \"seq 2 reused\""),
        (not_damaged, "the damaged file opened"),
    ] {
        let message = check_damaged(&case).err().ok_or(expected)?;
        assert!(
            message.starts_with("\"duplicate seq\": ") && message.contains(expected),
            "{message:?} should name the row and say {expected:?}"
        );
    }
    Ok(())
}

/// A damaged file built elsewhere (the limits tests): `Corrupt` at `record`, which starts where
/// the lines before it end, with `reason`, the files untouched.
pub(super) fn assert_corrupt(bytes: &[u8], record: u64, reason: &'static str) -> TestResult {
    let case = corrupt(reason, bytes, record, record_start(bytes, record), reason);
    Ok(check_damaged(&case)?)
}

/// M11: a mirror that exists but cannot be read is an error at open, never taken for an absent
/// mirror that open would create afresh over it. A directory or a symbolic link in its place is
/// refused by the path check (M8); a name that becomes a symbolic link to itself after the
/// storage was opened reaches the read, whose open fails (kills the match guard
/// `e.kind() == NotFound` replaced with true in `FsStorage::read_chunks`).
#[test]
fn unreadable_mirror_is_an_error_not_a_new_mirror() -> TestResult {
    let (dir, path) = temp_mirror()?;
    fs::create_dir(&path)?;
    let err = Queue::open(&path)
        .err()
        .ok_or("a directory must not open as a mirror")?;
    assert_eq!(err.kind(), ErrorKind::InvalidPath);
    assert!(path.is_dir());
    assert!(!dir.path().join("s1.mirror.tmp").exists());

    let (dir, path) = temp_mirror()?;
    let storage = crate::FsStorage::open(&path)?;
    std::os::unix::fs::symlink(&path, &path)?;
    let err = Queue::with_storage(storage, "s1.mirror", Config::default())
        .err()
        .ok_or("a mirror that cannot be opened must not open")?;
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.context().contains("cannot read the mirror"), "{err}");
    assert_eq!(fs::read_link(&path)?, path);
    assert!(!dir.path().join("s1.mirror.tmp").exists());
    Ok(())
}

/// The bytes of every row of the table, for the streaming decoder's tests (`record_json.rs`).
pub(super) fn damaged_bytes() -> Vec<Vec<u8>> {
    damaged_cases().into_iter().map(|case| case.bytes).collect()
}

/// M2: a checksum digit must be a lowercase hex digit. `:` follows `9` in ASCII and has the low
/// nibble of `a` (10), so a reader that took the digits' range one too wide would read `:` as
/// `a` and accept the record: it must be `Corrupt`, and the file left as it was. Kills `< with
/// <=` in `hex_checksum`'s digit test (mutants, 2026-12-03).
#[test]
fn m2_a_checksum_digit_outside_hex_is_corrupt() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    let mut n = 0u64;
    let (bytes, at) = loop {
        n += 1;
        queue.park(RequestId(n), &format!("r-{n} done"))?;
        let file = queue.storage().file("m").ok_or("mirror")?.to_vec();
        let start = file[..file.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if let Some(i) = file[start..start + 8].iter().position(|&b| b == b'a') {
            break (file, start + i);
        }
    };
    let mut damaged = bytes.clone();
    damaged[at] = b':';
    let mut storage = MemStorage::new();
    storage.set_file("m", damaged.clone());
    let err = Queue::with_storage(storage.clone(), "m", Config::default())
        .expect_err("a ':' in a checksum");
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(storage.file("m"), Some(damaged.as_slice()));
    Ok(())
}
