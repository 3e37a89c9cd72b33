//! The fenced blocks of `spec/*.md` (spec/README.md "Fenced blocks"): every block is marked as an
//! example, a grammar or an illustration, and every example is exactly the crate's output for its
//! case, checked here or by the test [`REGISTRY`] names. The way doc tests keep rustdoc honest: a
//! changed format fails the build until its spec example is updated.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;
use std::process::Command;

use parkline::{
    Attempt, Batch, BatchId, Budget, Config, Item, MemStorage, Notified, Queue, RequestId, Seq,
    frame, mirror,
};

/// How an example block is checked.
enum Check {
    /// Here, by [`every_example_is_checked`]: the crate's output for the case.
    Here(fn() -> String),
    /// By this test of the binary (full name), which finds the block by its marker ([`example`]).
    Test(&'static str),
}

const READ_EXAMPLES: &str = "read::examples::r14_the_spec_examples_are_the_crates_answers";

/// Every example name of `spec/*.md` with what checks it.
const REGISTRY: &[(&str, Check)] = &[
    ("delivery-framing", Check::Here(delivery_framing)),
    ("delivery-batch", Check::Here(delivery_batch)),
    ("delivery-split", Check::Here(delivery_split)),
    ("delivery-repeat", Check::Here(delivery_repeat)),
    ("mirror-record", Check::Here(mirror_record)),
    (
        "drive-serve",
        Check::Test("kill::drive_md_example_is_what_serve_writes"),
    ),
    ("read-whole", Check::Test(READ_EXAMPLES)),
    ("read-oversized", Check::Test(READ_EXAMPLES)),
    ("read-continue", Check::Test(READ_EXAMPLES)),
    ("read-nothing-new", Check::Test(READ_EXAMPLES)),
    ("read-grown", Check::Test(READ_EXAMPLES)),
    ("read-replaced", Check::Test(READ_EXAMPLES)),
    ("read-rest", Check::Test(READ_EXAMPLES)),
    ("read-latest", Check::Test(READ_EXAMPLES)),
    ("read-too-small", Check::Test(READ_EXAMPLES)),
];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Marker {
    Example(String),
    Grammar,
    Illustration,
}

/// A fenced block of a spec file.
#[derive(Debug)]
struct Block {
    /// `file:line` of the opening fence.
    at: String,
    marker: Option<Marker>,
    /// The lines between the fences, each with its `\n`.
    text: String,
    /// Where `text` is in the file.
    range: Range<usize>,
}

/// The marker a line is, `None` when it is not an HTML comment, or what is wrong with it.
fn marker(line: &str) -> Option<Result<Marker, String>> {
    let inner = line.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    Some(match inner {
        "grammar" => Ok(Marker::Grammar),
        "illustration" => Ok(Marker::Illustration),
        _ => match inner.strip_prefix("example: ") {
            Some(name)
                if !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
            {
                Ok(Marker::Example(name.to_owned()))
            }
            _ => Err(format!("unknown marker `{line}`")),
        },
    })
}

/// The blocks of one spec file, and what is wrong with its markers, each naming `file:line`.
fn parse(file: &str, spec: &str) -> (Vec<Block>, Vec<String>) {
    let (mut blocks, mut problems) = (Vec::new(), Vec::new());
    // The opening fence's `file:line`, its marker and where the block's text starts.
    let mut open: Option<(String, Option<Marker>, usize)> = None;
    let (mut offset, mut previous) = (0, "");
    for (index, line) in spec.split_inclusive('\n').enumerate() {
        let at = format!("{file}:{}", index + 1);
        let bare = line.trim_end_matches('\n');
        let fence = bare.starts_with("```");
        if let Some((opened, marker, start)) = open.take() {
            if fence && bare.trim_matches('`').trim().is_empty() {
                let text = spec[start..offset].to_owned();
                let range = start..offset;
                blocks.push(Block {
                    at: opened,
                    marker,
                    text,
                    range,
                });
            } else {
                open = Some((opened, marker, start));
            }
        } else if fence {
            let marker = match marker(previous) {
                Some(Ok(marker)) => Some(marker),
                Some(Err(problem)) => {
                    problems.push(format!("{at}: {problem}"));
                    None
                }
                None => {
                    problems.push(format!("{at}: a block without a marker on the line before"));
                    None
                }
            };
            open = Some((at, marker, offset + line.len()));
        } else if matches!(marker(previous), Some(Ok(_))) {
            problems.push(format!("{at}: a marker not followed by a block"));
        }
        offset += line.len();
        previous = bare;
    }
    if let Some((opened, ..)) = open {
        problems.push(format!("{opened}: a block never closed"));
    }
    (blocks, problems)
}

fn spec_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/spec"))
}

/// Every `spec/*.md`: (file name, text), by name.
fn spec_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(spec_dir())
        .expect("spec/")
        .map(|entry| entry.expect("spec/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(&path).expect("readable"))
        })
        .collect();
    files.sort();
    files
}

/// The problems of every file's markers, the example names used more than once and those that do
/// not start with their file's name.
fn marker_problems(files: &[(String, String)]) -> (Vec<Block>, Vec<String>) {
    let (mut all, mut problems) = (Vec::new(), Vec::new());
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for (file, spec) in files {
        let (blocks, found) = parse(file, spec);
        problems.extend(found);
        let prefix = format!("{}-", file.trim_end_matches(".md"));
        for block in &blocks {
            let Some(Marker::Example(name)) = &block.marker else {
                continue;
            };
            if !name.starts_with(&prefix) {
                problems.push(format!(
                    "{}: example {name} does not start {prefix}",
                    block.at
                ));
            }
            if let Some(first) = names.insert(name.clone(), block.at.clone()) {
                problems.push(format!("{}: example {name} is also at {first}", block.at));
            }
        }
        all.extend(blocks);
    }
    (all, problems)
}

/// The text of the block marked `<!-- example: {name} -->` in `spec/{file}`.
pub(crate) fn example(file: &str, name: &str) -> String {
    let spec = std::fs::read_to_string(spec_dir().join(file)).expect("spec file");
    example_in(file, &spec, name)
}

/// The text of example `name` in `spec`, the text of `spec/{file}`.
pub(crate) fn example_in(file: &str, spec: &str, name: &str) -> String {
    spec[example_range(file, spec, name)].to_owned()
}

/// `spec` (the text of `spec/{file}`) with the block of example `name` replaced by `text`.
pub(crate) fn with_example(file: &str, spec: &str, name: &str, text: &str) -> String {
    let range = example_range(file, spec, name);
    format!("{}{text}{}", &spec[..range.start], &spec[range.end..])
}

fn example_range(file: &str, spec: &str, name: &str) -> Range<usize> {
    let wanted = Some(Marker::Example(name.to_owned()));
    parse(file, spec)
        .0
        .into_iter()
        .find(|block| block.marker == wanted)
        .unwrap_or_else(|| panic!("spec/{file} has no block marked `<!-- example: {name} -->`"))
        .range
}

/// The full names of this binary's tests.
fn binary_tests() -> BTreeSet<String> {
    let exe = std::env::current_exe().expect("this test binary");
    let out = Command::new(exe).arg("--list").output().expect("--list");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// What is wrong between the example blocks and `registry`: an example nobody checks, a
/// registered name with no block or a test this binary does not have, and every example checked
/// here that is not the crate's output.
fn example_problems(
    blocks: &[Block],
    registry: &[(&str, Check)],
    tests: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for block in blocks {
        let Some(Marker::Example(name)) = &block.marker else {
            continue;
        };
        seen.insert(name.as_str());
        match registry.iter().find(|(known, _)| known == name) {
            None => problems.push(format!(
                "{}: example {name} is checked by no test (register it in tests/spec_blocks.rs)",
                block.at
            )),
            Some((_, Check::Here(crate_output))) => {
                let output = crate_output();
                if output != block.text {
                    problems.push(format!(
                        "{}: example {name} is not the crate's output, which is:\n{output}",
                        block.at
                    ));
                }
            }
            Some((_, Check::Test(test))) if !tests.contains(*test) => problems.push(format!(
                "{}: example {name} is registered to {test}, which is no test of this binary",
                block.at
            )),
            Some(_) => {}
        }
    }
    for (name, _) in registry {
        if !seen.contains(name) {
            problems.push(format!("registered example {name} has no block in spec/"));
        }
    }
    problems
}

#[test]
fn every_fenced_block_in_spec_is_marked() {
    let (blocks, problems) = marker_problems(&spec_files());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(blocks.len() >= REGISTRY.len(), "spec/ has its blocks");
}

#[test]
fn every_example_is_checked() {
    let (blocks, _) = marker_problems(&spec_files());
    let problems = example_problems(&blocks, REGISTRY, &binary_tests());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Known-bad markers: an unmarked block, an unknown marker, a stray marker, an unclosed block, a
/// name used twice and a name without its file's prefix are each refused, naming `file:line`.
#[test]
fn bad_markers_are_refused() {
    let bad = [
        "a",
        "",
        "```",
        "x",
        "```",
        "<!-- exampel: a -->",
        "```",
        "```",
        "<!-- example: bad-a -->",
        "```",
        "```",
        "<!-- example: bad-a -->",
        "```text",
        "```",
        "<!-- example: a -->",
        "```",
        "```",
        "<!-- grammar -->",
        "text",
        "```",
    ];
    let bad = format!("{}\n", bad.join("\n"));
    let (_, problems) = marker_problems(&[("bad.md".to_owned(), bad)]);
    assert_eq!(
        problems,
        [
            "bad.md:3: a block without a marker on the line before",
            "bad.md:7: unknown marker `<!-- exampel: a -->`",
            "bad.md:19: a marker not followed by a block",
            "bad.md:20: a block without a marker on the line before",
            "bad.md:20: a block never closed",
            "bad.md:13: example bad-a is also at bad.md:10",
            "bad.md:16: example a does not start bad-",
        ]
    );
}

/// Known-bad examples: a changed example text, a registered test that does not exist and an
/// unregistered example are each refused; the unchanged text passes.
#[test]
fn a_changed_or_unchecked_example_is_refused() {
    let delivery = delivery_batch();
    let changed = delivery.replacen("247 bytes", "248 bytes", 1);
    let file = |text: &str| format!("<!-- example: delivery-batch -->\n```\n{text}```\n");
    let registry = [("delivery-batch", Check::Here(delivery_batch))];
    let (blocks, _) = parse("d.md", &file(&changed));
    let problems = example_problems(&blocks, &registry, &BTreeSet::new());
    assert!(problems[0].starts_with("d.md:2: example delivery-batch is not the crate's output"));
    assert_eq!(problems.len(), 1);
    let (blocks, _) = parse("d.md", &file(&delivery));
    assert!(example_problems(&blocks, &registry, &BTreeSet::new()).is_empty());
    let missing = [("delivery-batch", Check::Test("no::such_test"))];
    assert_eq!(
        example_problems(&blocks, &missing, &BTreeSet::new()),
        [
            "d.md:2: example delivery-batch is registered to no::such_test, which is no test of this binary"
        ]
    );
    assert_eq!(
        example_problems(&blocks, &[], &BTreeSet::new()),
        [
            "d.md:2: example delivery-batch is checked by no test (register it in tests/spec_blocks.rs)"
        ]
    );
}

/// The five lines of spec/delivery.md section 4, requests 4101..4105.
const LINES: [&str; 5] = [
    r#"[delegation r-4101 done] turn sj-7a1c-2 outcome ok; agent_read{turn:"sj-7a1c-2"}"#,
    r#"[delegation r-4102 done] turn sj-90be-1 outcome failed; agent_read{turn:"sj-90be-1"}"#,
    r#"[delegation r-4103 done] turn sj-33f0-4 outcome ok; agent_read{turn:"sj-33f0-4"}"#,
    r#"[delegation r-4104 done] turn sj-5d21-1 outcome ok; agent_read{turn:"sj-5d21-1"}"#,
    r#"[delegation r-4105 done] turn sj-c4e8-3 outcome cancelled; agent_read{turn:"sj-c4e8-3"}"#,
];

/// A queue whose next seq is 40 and next batch `next_batch`, holding the first `parked` of
/// [`LINES`] (seqs 40..).
fn section_4_queue(next_batch: u64, parked: usize) -> Queue<MemStorage> {
    let state = mirror::MirrorState {
        next_seq: Seq(40),
        next_batch: BatchId(next_batch),
        ..mirror::MirrorState::default()
    };
    let mut storage = MemStorage::new();
    storage.set_file("m", mirror::encode(&state));
    let mut queue = Queue::with_storage(storage, "m", Config::default()).expect("opens");
    for (line, request) in LINES.iter().take(parked).zip(4101..) {
        queue.park(RequestId(request), line).expect("parks");
    }
    queue
}

fn notified(batch: &Batch) -> Vec<(u64, u64, u64, u32, bool, u64)> {
    let tuple = |n: Notified| {
        (
            n.request.0,
            n.seq.0,
            n.batch.0,
            n.attempt.0,
            n.repeat,
            n.handed,
        )
    };
    batch.notified().into_iter().map(tuple).collect()
}

/// D4's example: batch 7, first attempt, two lines, one handed over before, 3 more parked.
fn delivery_framing() -> String {
    let text = frame::render(BatchId(7), Attempt(1), 1, 3, ["r1 ok", "r2 x"]);
    let items = vec![
        Item::new(Seq(1), RequestId(1), "r1 ok").with_handed(2),
        Item::new(Seq(2), RequestId(2), "r2 x").with_handed(1),
    ];
    let batch = Batch::new(BatchId(7), Attempt(1), items, 3).with_seen(1);
    assert_eq!(
        batch.text(),
        text,
        "Batch::text is frame::render of the batch"
    );
    text
}

/// Section 4's 3-line batch: seqs 40..42 parked, budget 4000, next batch id 12.
fn delivery_batch() -> String {
    let mut queue = section_4_queue(12, 3);
    let batch = queue
        .boundary(Budget(4000))
        .expect("boundary")
        .expect("a batch");
    let events = [
        (4101, 40, 12, 1, false, 1),
        (4102, 41, 12, 1, false, 1),
        (4103, 42, 12, 1, false, 1),
    ];
    assert_eq!(notified(&batch), events, "the example's notified events");
    batch.text()
}

/// Section 4's split batch: seqs 40..44 parked, budget 200, next batch id 13.
fn delivery_split() -> String {
    let mut queue = section_4_queue(13, 5);
    let batch = queue
        .boundary(Budget(200))
        .expect("boundary")
        .expect("a batch");
    assert_eq!((batch.items.len(), batch.remaining), (2, 3), "k = 2");
    batch.text()
}

/// Section 4's repeat: the split batch handed over, seq 45 parked, a crash before `settle`; the
/// next life's first boundary, whatever its budget.
fn delivery_repeat() -> String {
    let mut queue = section_4_queue(13, 5);
    queue
        .boundary(Budget(200))
        .expect("boundary")
        .expect("a batch");
    queue
        .park(RequestId(4106), "[delegation r-4106 done]")
        .expect("parks");
    let storage = queue.into_storage();
    let mut queue = Queue::with_storage(storage, "m", Config::default()).expect("recovers");
    let repeat = queue
        .boundary(Budget(4000))
        .expect("boundary")
        .expect("the repeat");
    let events = [(4101, 40, 13, 2, true, 2), (4102, 41, 13, 2, true, 2)];
    assert_eq!(notified(&repeat), events, "the example's notified events");
    let parked: Vec<u64> = queue.parked().iter().map(|item| item.seq.0).collect();
    assert_eq!(parked, [42, 43, 44, 45], "seqs 42..45 stay parked");
    repeat.text()
}

/// M1's record: what a park of request 7 with the line `hi "you"` appends to a new mirror,
/// read back by a reopen.
/// The example's clock: 2026-12-07 00:00:00 UTC, in milliseconds since the epoch (D24).
#[derive(Debug)]
struct ExampleClock;

impl parkline::Clock for ExampleClock {
    fn now_ms(&self) -> u64 {
        1_796_601_600_000
    }
}

fn mirror_record() -> String {
    let queue = Queue::with_storage(MemStorage::new(), "m", Config::default()).expect("opens");
    let mut queue = queue.with_clock(std::sync::Arc::new(ExampleClock));
    let before = queue.storage().file("m").expect("the mirror").len();
    queue.park(RequestId(7), r#"hi "you""#).expect("parks");
    let storage = queue.into_storage();
    let appended = storage.file("m").expect("the mirror")[before..].to_vec();
    let reopened = Queue::with_storage(storage, "m", Config::default()).expect("reopens");
    let item = reopened.parked().first().expect("one parked line");
    assert_eq!((item.seq, item.request), (Seq(1), RequestId(7)));
    assert_eq!(item.line, r#"hi "you""#);
    String::from_utf8(appended).expect("utf-8")
}
