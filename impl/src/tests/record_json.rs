//! `mirror/json.rs`'s fast path and the streaming decoder (M1-M3, M7, M14) against their oracles:
//! serde's derived code for the file's version (`RecordV2`, `RecordV1`), and a decoding loop over
//! the whole file. On every record and file tried, the fast path takes a subset of what the
//! oracle accepts with the same record, and the streaming decoder gives the same state, torn tail
//! and error position.

use super::*;
use crate::mirror::json::park_or_dead;
use crate::mirror::legacy::{RecordV1, RecordV2};
use crate::mirror::v3::RecordV3;
use crate::mirror::{GroupItem, MirrorState, Record};

/// Serde's derived reading of `json`: version 2's, or, for a record only version 4 spells (its
/// times), versions 3 and 4's.
fn oracle_record(json: &[u8]) -> Option<Record> {
    let current = || {
        serde_json::from_slice::<RecordV3>(json)
            .ok()
            .and_then(|record| record.resolve(&MirrorState::default()).ok())
            .filter(Record::is_version_4)
    };
    serde_json::from_slice::<RecordV2>(json)
        .ok()
        .map(Record::from)
        .or_else(current)
}

/// The fast path against the oracle, version 2's derived enum, on one record's JSON. Returns
/// whether the oracle accepts it.
fn check_record(json: &[u8]) -> Result<bool, String> {
    let oracle = oracle_record(json);
    let shown = String::from_utf8_lossy(json);
    if let Some(fast) = park_or_dead(json)
        && oracle.as_ref() != Some(&fast)
    {
        return Err(format!(
            "fast path differs on {shown}: oracle {oracle:?}, fast {fast:?}"
        ));
    }
    Ok(oracle.is_some())
}

/// The decoding loop before streaming, over the oracle's records: the reference for
/// `decode_log`.
fn oracle_decode_log(bytes: &[u8]) -> crate::Result<mirror::Decoded> {
    if bytes.is_empty() {
        return Err(crate::Error::corrupt(0, 1, "empty file: no header"));
    }
    let mut state = MirrorState::default();
    let (mut offset, mut number, mut version) = (0usize, 0u64, mirror::VERSION);
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            if number == 0 {
                return Err(crate::Error::corrupt(0, 1, "header without its newline"));
            }
            return Ok(mirror::Decoded {
                state,
                records: number,
                valid_len: offset as u64,
                torn_len: rest.len() as u64,
                version,
            });
        };
        number += 1;
        let at = |reason: String| crate::Error::corrupt(offset as u64, number, reason);
        let json = mirror::decode::checked_json(&rest[..end]).map_err(at)?;
        if number == 1 {
            (version, state.life) = mirror::header::check_header(json).map_err(at)?;
        } else {
            let record: Record = if version == mirror::VERSION_OLDEST {
                serde_json::from_slice::<RecordV1>(json)
                    .map(Record::from)
                    .map_err(|e| at(format!("json error: {e}")))?
            } else {
                serde_json::from_slice::<RecordV2>(json)
                    .map(Record::from)
                    .map_err(|e| at(format!("json error: {e}")))?
            };
            state.check(&record).map_err(at)?;
            state.apply_checked(&record);
        }
        offset += end + 1;
    }
    Ok(mirror::Decoded {
        state,
        records: number,
        valid_len: offset as u64,
        torn_len: 0,
        version,
    })
}

/// What a decoding says, reduced to what must not change: the decoded value, or the error's
/// kind, record and offset (the reason's words may differ where serde's do).
fn outcome(decoded: crate::Result<mirror::Decoded>) -> Result<mirror::Decoded, String> {
    decoded.map_err(|e| format!("{:?} record {:?} at {:?}", e.kind(), e.record(), e.offset()))
}

/// `decode_log` whole, and fed to the streaming decoder in pieces of `piece` bytes, against the
/// oracle.
fn check_file(bytes: &[u8], pieces: &[usize]) -> Result<(), String> {
    let whole = outcome(mirror::decode_log(bytes));
    // Versions 3 and 4 are read by serde's derived code itself: the file decoded whole is the oracle
    // of the file decoded in pieces. Older versions have the derived enums as their oracle.
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let names = |text: &[u8]| first_line.windows(text.len()).any(|window| window == text);
    let version_3 = names(br#""version":3"#) || names(br#""version":4"#);
    let oracle = if version_3 {
        whole.clone()
    } else {
        outcome(oracle_decode_log(bytes))
    };
    if whole != oracle {
        return Err(format!(
            "decode_log differs on {:?}: oracle {oracle:?}, new {whole:?}",
            String::from_utf8_lossy(bytes)
        ));
    }
    for &piece in pieces {
        let mut decoder = mirror::LogDecoder::new();
        let fed = bytes
            .chunks(piece)
            .try_for_each(|chunk| decoder.feed(chunk));
        let streamed = outcome(fed.and_then(|()| decoder.finish()));
        if streamed != oracle {
            return Err(format!(
                "pieces of {piece} differ on {:?}: oracle {oracle:?}, streamed {streamed:?}",
                String::from_utf8_lossy(bytes)
            ));
        }
    }
    Ok(())
}

/// A small deterministic generator (xorshift), as in `format.rs`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A record of every type, with lines that need escapes, as `encode_record` writes them.
fn canonical_records() -> Vec<String> {
    let lines = [
        "",
        "plain line",
        "quote \" backslash \\ slash / tab \t cr \r nul \0 bell \u{7} del \u{7f}",
        "unicode é \u{2014} \u{1F600}",
        "newline \n inside",
        // More escapes than the fast path keeps by position (16), and exactly as many.
        "\"1\" \"2\" \"3\" \"4\" \"5\" \"6\" \"7\" \"8\" \"9\" \\ \u{1b}[0m",
        "\"1\" \"2\" \"3\" \"4\" \"5\" \"6\" \"7\" \"8\"",
    ];
    let mut records = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let (seq, request) = (Seq(i as u64 + 1), RequestId(i as u64 * 1000));
        records.push(Record::Park {
            seq,
            request,
            line: (*line).into(),
            failures: i as u32,
            handed: i as u64 * 7,
            at: None,
        });
        records.push(Record::Dead {
            seq,
            request,
            line: (*line).into(),
            failures: u32::MAX,
            handed: u64::MAX,
            at: None,
            died: None,
        });
        records.push(Record::Parks {
            seq,
            items: vec![
                GroupItem {
                    request,
                    line: (*line).into(),
                },
                GroupItem {
                    request: RequestId(9),
                    line: "x".into(),
                },
            ],
            at: None,
        });
    }
    records.push(Record::Park {
        seq: Seq(u64::MAX),
        request: RequestId(u64::MAX),
        line: "max".into(),
        failures: u32::MAX,
        handed: u64::MAX,
        at: None,
    });
    records.push(Record::Batch {
        id: BatchId(3),
        attempt: Attempt(2),
        seqs: vec![Seq(1), Seq(2)],
        remaining: 4,
    });
    records.push(Record::Attempt {
        batch: BatchId(3),
        attempt: Attempt(3),
    });
    records.push(Record::Settle {
        batch: BatchId(3),
        delivered: vec![Seq(1)],
        failed: vec![Seq(2)],
        dead: vec![],
        at: None,
    });
    records.push(Record::Redrive {
        seqs: vec![Seq(5), Seq(6)],
        op: None,
        change: None,
    });
    records.push(Record::Next {
        seq: Seq(10),
        batch: BatchId(4),
        cap: None,
        memory: None,
    });
    // Version 2's spelling: the derived `Serialize` of `Record` (version 3 writes seq lists as
    // runs and is read by serde's derived code, not by this reader).
    records
        .iter()
        .map(|record| serde_json::to_string(record).unwrap_or_default())
        .collect()
}

/// Records spelled in ways `encode_record` never writes, and near misses of them, each with
/// whether the oracle reads it: the language the reader must keep.
fn crafted_records() -> Vec<(bool, &'static str)> {
    vec![
        // Keys in another order, whitespace, escaped keys, type and line.
        (
            true,
            r#"{"seq":1,"request":2,"line":"x","failures":0,"handed":0,"type":"park"}"#,
        ),
        (
            true,
            r#" { "type" : "park" , "seq" : 1 , "request" : 2 , "line" : "x" , "failures" : 0 , "handed" : 0 } "#,
        ),
        (
            true,
            "{\"type\":\"park\",\"seq\":1,\"request\":2,\"line\":\"x\",\"failures\":0,\"handed\":0}\t\r",
        ),
        (
            true,
            r#"{"t\u0079pe":"p\u0061rk","s\u0065q":1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            true,
            r#"{"type":"park","seq":1,"request":2,"line":"\u0078\u00E9\ud83d\ude00","failures":0,"handed":0}"#,
        ),
        (
            true,
            "{\"type\":\"park\",\"seq\":1,\"request\":2,\"line\":\"c1 \u{80} \u{9f}\",\"failures\":0,\"handed\":0}",
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"\ud83d","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"\ude00\ud83d","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"\u00e","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"\x","failures":0,"handed":0}"#,
        ),
        (
            false,
            "{\"type\":\"park\",\"seq\":1,\"request\":2,\"line\":\"tab\there\",\"failures\":0,\"handed\":0}",
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x,"failures":0,"handed":0}"#,
        ),
        // Duplicates, unknown and foreign keys, missing keys, unknown types.
        (
            false,
            r#"{"type":"park","seq":1,"seq":1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","type":"park","seq":1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":0,"handed":0,"extra":1}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":0,"handed":0,"items":[]}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":0}"#,
        ),
        (
            false,
            r#"{"seq":1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (false, r#"{"type":"merge","seq":1}"#),
        (
            false,
            r#"{"type":"Park","seq":1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (false, r#"{"type":5,"seq":1}"#),
        (false, r#"{"type":null}"#),
        (false, r#"{}"#),
        // Numbers: only integers in range, written without a leading zero.
        (
            false,
            r#"{"type":"park","seq":01,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":-0,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":-1,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1.0,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1e0,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            true,
            r#"{"type":"park","seq":18446744073709551615,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":18446744073709551616,"request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            true,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":4294967295,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":4294967296,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":"1","request":2,"line":"x","failures":0,"handed":0}"#,
        ),
        (
            false,
            r#"{"type":"batch","id":1,"attempt":1,"seqs":[1],"remaining":-1}"#,
        ),
        // The array form the derived enum read: the tag, then the fields in declaration order.
        (true, r#"["park",1,2,"x",0,0]"#),
        (true, r#"["dead",1,2,"x",0,0]"#),
        (false, r#"["park",1,2,"x",0]"#),
        // Version 4 reads the seventh value as the time it was parked (D24).
        (true, r#"["park",1,2,"x",0,0,0]"#),
        (false, r#"["park",1,2,"x",0,0,0,0]"#),
        (true, r#"["parks",1,[{"request":1,"line":"x"}]]"#),
        (true, r#"["parks",1,[[1,"x"]]]"#),
        (true, r#"["batch",1,1,[1],0]"#),
        (true, r#"["attempt",1,2]"#),
        (true, r#"["settle",1,[1],[],[]]"#),
        (true, r#"["redrive",[1]]"#),
        (false, r#"["redrive",[1],2]"#),
        (true, r#"["next",1,1]"#),
        (false, r#"["next",1,1,]"#),
        (false, r#"[]"#),
        (false, r#"[1]"#),
        // Group items.
        (
            true,
            r#"{"type":"parks","seq":1,"items":[{"line":"x","request":1}]}"#,
        ),
        (
            false,
            r#"{"type":"parks","seq":1,"items":[{"request":1,"line":"x","extra":0}]}"#,
        ),
        (
            false,
            r#"{"type":"parks","seq":1,"items":[{"request":1,"line":"x","line":"y"}]}"#,
        ),
        // Not one record.
        (false, r#""park""#),
        (false, "7"),
        (false, "null"),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":0,"handed":0}}"#,
        ),
        (
            false,
            r#"{"type":"park","seq":1,"request":2,"line":"x","failures":0,"handed":0} x"#,
        ),
    ]
}

/// Every record the fast path must take is taken, and the oracle accepts exactly the crafted
/// records marked accepted.
#[test]
fn m3_the_reader_accepts_what_the_derived_enum_accepted() -> TestResult {
    let canonical = canonical_records();
    for json in &canonical {
        assert!(check_record(json.as_bytes())?, "canonical {json} must read");
        if json.contains(r#""type":"park""#) || json.contains(r#""type":"dead""#) {
            assert!(
                park_or_dead(json.as_bytes()).is_some(),
                "the fast path must take {json}"
            );
        }
    }
    for (accepted, json) in crafted_records() {
        assert_eq!(check_record(json.as_bytes())?, accepted, "{json}");
    }
    Ok(())
}

/// Random edits of every canonical and crafted record (a byte changed, inserted, removed, or a
/// piece of another record spliced in): the fast path agrees with the oracle.
#[test]
fn m3_the_reader_agrees_with_the_derived_enum_on_edited_records() -> TestResult {
    let mut seeds: Vec<Vec<u8>> = canonical_records()
        .into_iter()
        .map(String::into_bytes)
        .collect();
    seeds.extend(
        crafted_records()
            .into_iter()
            .map(|(_, json)| json.as_bytes().to_vec()),
    );
    let alphabet = b"{}[]\",:\\ 0123456789-.eEtrufalsnu\x01\x80\xff";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut tried, mut accepted) = (0usize, 0usize);
    for round in 0..4_000 {
        for seed in &seeds {
            let mut json = seed.clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(json.len() + 1);
                match rng.below(5) {
                    0 if at < json.len() => json[at] = alphabet[rng.below(alphabet.len())],
                    1 => json.insert(at, alphabet[rng.below(alphabet.len())]),
                    2 if at < json.len() => {
                        json.remove(at);
                    }
                    3 => {
                        let other = &seeds[(round + at) % seeds.len()];
                        let from = rng.below(other.len());
                        let to = from + rng.below(other.len() - from + 1);
                        json.splice(at..at, other[from..to].iter().copied());
                    }
                    _ => {
                        let to = at + rng.below(json.len() - at + 1);
                        json.drain(at..to);
                    }
                }
            }
            accepted += usize::from(check_record(&json)?);
            tried += 1;
        }
    }
    assert!(
        accepted * 50 > tried,
        "{accepted} of {tried} edited records accepted"
    );
    Ok(())
}

/// The committed corpus of the `mirror_decode` fuzz target, each file as it is and with every
/// checksum fixed: `decode_log`, and the streaming decoder fed in pieces of 1, 2, 7 and 64 bytes,
/// give the oracle's state, torn tail and error position; each record line's JSON reads as the
/// oracle reads it.
#[test]
fn m1_m7_decoding_agrees_with_the_whole_file_loop_on_the_fuzz_corpus() -> TestResult {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/mirror_decode");
    let mut files = 0;
    for entry in fs::read_dir(&dir)? {
        let bytes = fs::read(entry?.path())?;
        for bytes in [bytes.clone(), with_checksums_fixed(&bytes)] {
            check_file(&bytes, &[1, 2, 7, 64])?;
            for line in bytes.split(|&b| b == b'\n').filter(|line| line.len() > 9) {
                check_record(&line[9..])?;
            }
        }
        files += 1;
    }
    assert!(
        files > 100,
        "only {files} corpus files in {}",
        dir.display()
    );
    Ok(())
}

/// Files built here: every damaged row's bytes, the version 1 fixtures, a workload's mirror
/// and a torn one, fed to the streaming decoder in pieces of every length up to 80 bytes.
#[test]
fn m7_a_file_decodes_the_same_in_pieces_of_any_length() -> TestResult {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let mut files = vec![
        fs::read(fixtures.join("mixed.mirror"))?,
        fs::read(fixtures.join("compacted.mirror"))?,
    ];
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    for i in 0..20u64 {
        queue.park(RequestId(i), &seed_line(i))?;
    }
    if let Some(batch) = queue.boundary(Budget(400))? {
        let outcomes: Vec<Outcome> = (0..batch.items.len())
            .map(|i| {
                if i % 2 == 0 {
                    Outcome::Delivered
                } else {
                    Outcome::Failed
                }
            })
            .collect();
        queue.settle(batch.id, &outcomes)?;
    }
    queue.boundary(Budget(300))?;
    let bytes = file(&queue);
    files.push(bytes.clone());
    files.push([&bytes[..], b"0123abcd {\"type\""].concat());
    files.push(bytes[..bytes.len() - 1].to_vec());
    files.extend(damaged::damaged_bytes());
    let pieces: Vec<usize> = (1..=80).collect();
    for bytes in &files {
        check_file(bytes, &pieces)?;
    }
    Ok(())
}

/// `bytes` with the checksum of every `<8 hex> <json>` line recomputed, as the fuzz check does.
fn with_checksums_fixed(bytes: &[u8]) -> Vec<u8> {
    let lines: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .map(|line| {
            if line.len() >= 9 && line[8] == b' ' {
                let json = &line[9..];
                [format!("{:08x} ", crc32fast::hash(json)).as_bytes(), json].concat()
            } else {
                line.to_vec()
            }
        })
        .collect();
    lines.join(&b'\n')
}

/// The eight-bytes-at-a-time searches find the first byte a plain search finds, at every
/// alignment and with bytes above 127 around it (where a borrow could flag a byte falsely).
#[test]
fn the_word_searches_find_the_first_hit_as_a_plain_search() {
    use crate::mirror::json::{backslash_position, newline_position, special_position};
    let alphabet = [
        b'a', b'"', b'\\', b'\n', 0x1f, 0x20, 0x21, 0x7f, 0x80, 0x9f, 0xa0, 0xff, 0,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let len = rng.below(40);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(4) == 0 {
                    alphabet[rng.below(alphabet.len())]
                } else {
                    b'a' + rng.below(3) as u8 + if rng.below(2) == 0 { 0 } else { 0x80 }
                }
            })
            .collect();
        let plain = |hit: &dyn Fn(u8) -> bool| bytes.iter().position(|&b| hit(b));
        assert_eq!(
            newline_position(&bytes),
            plain(&|b| b == b'\n'),
            "{bytes:?}"
        );
        assert_eq!(
            backslash_position(&bytes),
            plain(&|b| b == b'\\'),
            "{bytes:?}"
        );
        assert_eq!(
            special_position(&bytes),
            plain(&|b| b == b'"' || b == b'\\' || b < 0x20),
            "{bytes:?}"
        );
    }
}

/// Lines of every length up to 80 bytes made of pieces the string reader treats apart (escapes
/// of every kind, a `\u` escape cut short or a lone surrogate, raw quotes, control and
/// non-ASCII bytes, invalid UTF-8), so that each lands on every offset of a 16-byte block and
/// across two: the fast path agrees with the oracle on the record, and a mirror of such lines
/// decodes as the whole-file loop decodes it.
#[test]
fn m3_the_string_reader_agrees_with_the_derived_enum_across_blocks() -> TestResult {
    let pieces: [&[u8]; 19] = [
        b"a",
        b"bcdefgh",
        br#"\""#,
        br"\\",
        br"\/",
        br"\n",
        br"\t",
        br"\b\f\r",
        br"\u00e9",
        br"\u00E9",
        br"\ud83d\ude00",
        br"\ud83d",
        br"\u12",
        br"\x",
        b"\"",
        b"\x01",
        "é\u{2014}".as_bytes(),
        b"\xff",
        b"\\",
    ];
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let (mut fast, mut accepted, mut kept, mut mirror) = (0, 0, 0, header().into_bytes());
    for round in 0..30_000 {
        let mut line = Vec::new();
        let target = rng.below(81);
        while line.len() < target {
            // Mostly plain bytes, so that the special ones fall at every offset.
            let piece = if rng.below(3) == 0 {
                pieces[rng.below(pieces.len())]
            } else {
                pieces[rng.below(2)]
            };
            line.extend_from_slice(piece);
        }
        let json = [
            &br#"{"type":"park","seq":"#[..],
            (round + 1).to_string().as_bytes(),
            br#","request":2,"line":""#,
            &line,
            br#"","failures":0,"handed":0}"#,
        ]
        .concat();
        let ok = check_record(&json)?;
        accepted += usize::from(ok);
        fast += usize::from(park_or_dead(&json).is_some());
        // A line with a newline is a record the state refuses (M3): kept out of the mirror.
        let keep =
            matches!(oracle_record(&json), Some(Record::Park { line, .. }) if !line.contains('\n'));
        if keep && kept < 3_000 {
            kept += 1;
            mirror.extend_from_slice(format!("{:08x} ", crc32fast::hash(&json)).as_bytes());
            mirror.extend_from_slice(&json);
            mirror.push(b'\n');
        }
    }
    // Both kinds are common, and the fast path takes most of what is accepted.
    assert!(accepted > 3_000 && accepted < 27_000, "{accepted} accepted");
    assert!(fast * 2 > accepted, "{fast} of {accepted} by the fast path");
    // A mirror of the first 3,000 accepted lines, decoded whole and in pieces, then with a line
    // the oracle refuses at its end.
    check_file(&mirror, &[1, 13, 4096])?;
    assert_eq!(mirror::decode(&mirror)?.parked.len(), 3_000);
    let bad = br#"{"type":"park","seq":99999,"request":2,"line":"\ud83d","failures":0,"handed":0}"#;
    mirror.extend_from_slice(format!("{:08x} ", crc32fast::hash(bad)).as_bytes());
    mirror.extend_from_slice(bad);
    mirror.push(b'\n');
    check_file(&mirror, &[1, 4096])?;
    assert_eq!(
        mirror::decode(&mirror).err().and_then(|e| e.record()),
        Some(3_002)
    );
    Ok(())
}

/// The hand-written writer of the records that carry lines writes what serde_json writes for the
/// derived `Serialize`, byte for byte: every character class (each escape serde_json spells by
/// letter, the ones it spells `\u00xx`, DEL and multi-byte characters, which it does not
/// escape) at every offset of the eight-byte words the writer scans, empty lines and groups,
/// and the integers' extremes. Every other record is left to serde.
#[test]
fn m3_the_line_writer_writes_what_serde_writes() {
    let pieces: [&str; 18] = [
        "a",
        "bcdefgh",
        "\"",
        "\\",
        "/",
        "\n",
        "\t",
        "\u{8}",
        "\u{c}",
        "\r",
        "\0",
        "\u{1}",
        "\u{1f}",
        "\u{7f}",
        "é",
        "\u{2014}",
        "\u{1f600}",
        " ",
    ];
    let integers = [
        0,
        1,
        9,
        10,
        99,
        100,
        12_345,
        u64::from(u32::MAX),
        u64::MAX - 1,
        u64::MAX,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut lines: Vec<String> = (0u8..0x80)
        .map(|byte| char::from(byte).to_string())
        .collect();
    for _ in 0..20_000 {
        let mut line = String::new();
        let target = rng.below(81);
        while line.len() < target {
            // Mostly plain bytes, so that the special ones fall at every offset.
            let piece = if rng.below(3) == 0 {
                rng.below(pieces.len())
            } else {
                rng.below(2)
            };
            line.push_str(pieces[piece]);
        }
        lines.push(line);
    }
    for (i, line) in lines.iter().enumerate() {
        let mut integer = || integers[rng.below(integers.len())];
        let (seq, request, handed) = (Seq(integer()), RequestId(integer()), integer());
        let failures = u32::try_from(integer() % (u64::from(u32::MAX) + 1)).expect("in range");
        let item = |line: &str| GroupItem {
            request,
            line: line.into(),
        };
        let records = [
            Record::Park {
                seq,
                request,
                line: line.as_str().into(),
                failures,
                handed,
                at: None,
            },
            Record::Dead {
                seq,
                request,
                line: line.as_str().into(),
                failures,
                handed,
                at: None,
                died: None,
            },
            Record::Parks {
                seq,
                items: vec![item(line), item(&lines[i / 2]), item("")],
                at: None,
            },
            Record::Parks {
                seq,
                items: Vec::new(),
                at: None,
            },
        ];
        for record in &records {
            let mut written = Vec::new();
            assert!(mirror::encode::write_lines_record(&mut written, record));
            let serde = serde_json::to_vec(record).expect("serialises");
            assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&serde),
                "{record:?}"
            );
            assert_eq!(written, serde);
        }
    }
    for record in [
        Record::Next {
            seq: Seq(1),
            batch: BatchId(1),
            cap: None,
            memory: None,
        },
        Record::Redrive {
            seqs: vec![Seq(3)],
            op: None,
            change: None,
        },
        Record::Attempt {
            batch: BatchId(1),
            attempt: Attempt(2),
        },
    ] {
        assert!(!mirror::encode::write_lines_record(
            &mut Vec::new(),
            &record
        ));
    }
}
