//! Documents that say what the code no longer does: README.md, ARCHITECTURE.md, spec/*.md and
//! docs/*.md may name only `parkline` commands the binary has, requirement ids (D.., M.., R..)
//! the specs define, and repository files (a path in backticks, with a `/` and an extension)
//! that exist. Each check is a plain function of the text, shown to fail on a made-up document.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Paths the documents name that are not this repository's: the daemon's files (the seed's
/// report is about them), the seed itself, which lives beside the repository, and duvet's HTML
/// report, which `duvet report` writes and git ignores (CI runs duvet after the tests).
const EXTERNAL_PATHS: [&str; 5] = [
    "docs/orchestration.md",
    "claude_stream_json/mod.rs",
    "chat/<sid>/turns.jsonl",
    "../shared/seed/000_5885aa2fe1498771.txt",
    "spec/duvet/report.html",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents checked, with their text, by path from the repository's root.
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_owned(), "ARCHITECTURE.md".to_owned()];
    for dir in ["spec", "docs"] {
        let entries = std::fs::read_dir(root().join(dir)).expect("list the documents");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") {
                names.push(format!("{dir}/{name}"));
            }
        }
    }
    names.sort();
    let read = |name: String| {
        let text = std::fs::read_to_string(root().join(&name)).expect("read a document");
        (name, text)
    };
    names.into_iter().map(read).collect()
}

/// The commands `parkline --help` lists (clap's `help` left out).
fn commands() -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_parkline"))
        .arg("--help")
        .output()
        .expect("run parkline --help");
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .map(str::to_owned)
        .collect()
}

/// A document split into its prose paragraphs (lines joined, so a code span wrapped across
/// lines is whole) and the lines of its fenced blocks.
fn split(text: &str) -> (Vec<String>, Vec<&str>) {
    let (mut prose, mut fenced) = (Vec::new(), Vec::new());
    let mut paragraph = String::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            prose.push(std::mem::take(&mut paragraph));
        } else if in_fence {
            fenced.push(line);
        } else if line.trim().is_empty() {
            prose.push(std::mem::take(&mut paragraph));
        } else {
            paragraph.push_str(line);
            paragraph.push(' ');
        }
    }
    prose.push(paragraph);
    prose.retain(|p| !p.is_empty());
    (prose, fenced)
}

/// The inline code spans of a paragraph (between single backticks).
fn code_spans(paragraph: &str) -> Vec<&str> {
    paragraph.split('`').skip(1).step_by(2).collect()
}

/// The `parkline` commands a document names: the word after `parkline ` at the start of a code
/// span or of a fenced line (after an optional `$ `).
fn named_commands(text: &str) -> Vec<String> {
    let (prose, fenced) = split(text);
    let spans = prose.iter().flat_map(|p| code_spans(p));
    let lines = fenced
        .iter()
        .map(|line| line.trim_start().trim_start_matches("$ "));
    spans
        .chain(lines)
        .filter_map(|text| text.strip_prefix("parkline "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|word| word.chars().all(|c| c.is_ascii_lowercase()))
        .map(str::to_owned)
        .collect()
}

/// Every requirement id a text names: `D`, `M` or `R`, digits, an optional lower-case letter
/// (`D4a`), standing alone (not inside a word or a hex number).
fn named_ids(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut ids = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if !matches!(c, 'D' | 'M' | 'R') || (i > 0 && word(chars[i - 1])) {
            continue;
        }
        let digits = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let mut end = i + 1 + digits;
        if chars.get(end).is_some_and(|c| c.is_ascii_lowercase()) {
            end += 1;
        }
        if digits > 0 && !chars.get(end).is_some_and(|&c| word(c)) {
            ids.push(chars[i..end].iter().collect());
        }
    }
    ids
}

/// The ids the specs define: each `### <id> <title>` heading of spec/*.md.
fn defined_ids(documents: &[(String, String)]) -> BTreeSet<String> {
    let headings = documents
        .iter()
        .filter(|(name, _)| name.starts_with("spec/"))
        .flat_map(|(_, text)| text.lines())
        .filter_map(|line| line.strip_prefix("### "));
    headings
        .filter_map(|title| title.split_whitespace().next())
        .filter(|id| named_ids(id) == [*id])
        .map(str::to_owned)
        .collect()
}

/// The repository paths a text names: code spans with a `/` and a file extension, no spaces,
/// no placeholder or glob, not absolute, not a URL; a `#anchor` is cut off.
fn named_paths(text: &str) -> Vec<String> {
    let (prose, _) = split(text);
    let mut paths = Vec::new();
    for span in prose.iter().flat_map(|p| code_spans(p)) {
        let path = span.split('#').next().unwrap_or_default();
        let file = path.rsplit('/').next().unwrap_or_default();
        let extension = file.rsplit_once('.');
        let has_extension = extension.is_some_and(|(stem, ext)| {
            !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
        });
        let placeholder = path.contains(['*', '{', '$', ' ', '<']) || path.contains("://");
        if path.contains('/') && has_extension && !placeholder && !path.starts_with('/') {
            paths.push(path.to_owned());
        }
    }
    paths
}

/// Every file of the repository, by path from its root (build output and `.git` left out).
fn repository_files() -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, files: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), ".git" | "target") {
                continue;
            }
            let path = format!("{prefix}{name}");
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => walk(&entry.path(), &format!("{path}/"), files),
                Ok(_) => files.push(path),
                Err(_) => {}
            }
        }
    }
    let mut files = Vec::new();
    walk(&root(), "", &mut files);
    files
}

/// Whether `path`, named in the document `doc`, is a file of the repository: from the root,
/// from the document's directory, or as the tail of a file's path (the code map names files
/// from their crate's `src/`).
fn exists(files: &[String], doc: &str, path: &str) -> bool {
    let dir = Path::new(doc).parent().unwrap_or(Path::new(""));
    let tail = format!("/{}", path.trim_start_matches("./"));
    root().join(path).exists()
        || root().join(dir).join(path).exists()
        || files.iter().any(|file| file.ends_with(&tail))
}

/// What drifted in `documents`, one line each.
fn drift(
    documents: &[(String, String)],
    commands: &BTreeSet<String>,
    files: &[String],
) -> Vec<String> {
    let ids = defined_ids(documents);
    let mut found = Vec::new();
    for (name, text) in documents {
        for command in named_commands(text) {
            if !commands.contains(&command) {
                found.push(format!("{name}: `parkline {command}` is not a command"));
            }
        }
        let (prose, fenced) = split(text);
        let prose = prose.join("\n") + &fenced.join("\n");
        for id in named_ids(&prose) {
            if !ids.contains(&id) {
                found.push(format!("{name}: {id} is no requirement of the specs"));
            }
        }
        for path in named_paths(text) {
            if !EXTERNAL_PATHS.contains(&path.as_str()) && !exists(files, name, &path) {
                found.push(format!("{name}: `{path}` is no file of the repository"));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The documents name only commands, ids and files that exist.
#[test]
fn drift_documents_name_only_what_exists() {
    let found = drift(&documents(), &commands(), &repository_files());
    assert!(
        found.is_empty(),
        "{} drifted:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The check fails on a document that names a removed command, an undefined id and a missing
/// file, and passes the same names when they exist.
#[test]
fn drift_a_made_up_document_is_caught() {
    let spec = (
        "spec/x.md".to_owned(),
        "### D1 One\n\n### D4a Two\n".to_owned(),
    );
    let doc = (
        "README.md".to_owned(),
        "Run `parkline drive` or\n\n```\nparkline check --bounds ci\n$ parkline frobnicate\n```\n\n\
         D1, D4a and D99 (R7's `impl/src/nope.rs`, `impl/src/lib.rs#x`, `lib.rs`, \
         `docs/orchestration.md`, `fuzz/corpus/<target>/x.rs`, `/tmp/a.mirror`); d3339b7d, \
         MD5, `[parkline batch 1 attempt 1: ...]`.\n"
            .to_owned(),
    );
    let commands: BTreeSet<String> = ["check".to_owned()].into();
    let files = vec!["impl/src/lib.rs".to_owned()];
    let found = drift(&[spec, doc], &commands, &files);
    assert_eq!(
        found,
        [
            "README.md: R7 is no requirement of the specs",
            "README.md: `impl/src/nope.rs` is no file of the repository",
            "README.md: `parkline drive` is not a command",
            "README.md: `parkline frobnicate` is not a command",
            "README.md: D99 is no requirement of the specs",
        ]
        .map(str::to_owned)
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
}

/// The bench's results file, which the table bench writes (`PARKLINE_TABLE_RESULTS`).
const RESULTS: &str = "benches/table-results.json";

/// The cells of a Markdown table row, trimmed; `None` for a line that is not one.
fn cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split(" | ").map(str::trim).collect())
}

/// The cells of the Markdown table row of `text` whose first cell is `label`, after it.
fn table_row<'a>(text: &'a str, label: &str) -> Option<Vec<&'a str>> {
    text.lines()
        .filter_map(cells)
        .find(|cells| cells.first() == Some(&label))
        .map(|cells| cells[1..].to_vec())
}

/// What in README's performance section is not the bench's results: a row the results give a
/// label that README does not show with the same figures, or a ratio README shows for a label
/// the results do not have.
fn figures_drift(readme: &str, results: &serde_json::Value) -> Vec<String> {
    let performance = readme
        .split("\n## ")
        .find(|section| section.starts_with("Performance"))
        .unwrap_or_default();
    let rows = results["rows"].as_array().map_or(&[][..], Vec::as_slice);
    let mut found = Vec::new();
    let mut labels = BTreeSet::new();
    for row in rows {
        let Some(label) = row["readme"].as_str() else {
            continue;
        };
        labels.insert(label.to_owned());
        let expected: Vec<&str> = ["parkline", "baseline", "ratio"]
            .iter()
            .map(|field| row[*field].as_str().unwrap_or_default())
            .collect();
        match table_row(performance, label) {
            Some(cells) if cells.starts_with(&expected) => {}
            Some(cells) => found.push(format!(
                "README.md: `{label}` shows {cells:?}, the bench's results {expected:?}"
            )),
            None => found.push(format!(
                "README.md: no row `{label}` of the bench's results"
            )),
        }
    }
    for cells in performance.lines().filter_map(cells) {
        let ratio = cells.last().is_some_and(|cell| cell.contains("x ("));
        if let Some(label) = cells
            .first()
            .filter(|label| ratio && !labels.contains(**label))
        {
            found.push(format!(
                "README.md: `{label}` is no row of the bench's results"
            ));
        }
    }
    found
}

/// README's performance figures are the bench's: every row of `benches/table-results.json`
/// that README shows, with the same times and ratios, and no ratio of its own.
#[test]
fn drift_readme_figures_are_the_bench_results() {
    let text = std::fs::read_to_string(root().join(RESULTS)).expect("the results file");
    let results: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(results["runs"].as_u64().is_some_and(|runs| runs >= 5));
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let found = figures_drift(&readme, &results);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The figures check fails on a changed ratio, a missing row and a row of README's own.
#[test]
fn drift_a_made_up_figure_is_caught() {
    let results = serde_json::json!({"runs": 5, "rows": [
        {"readme": "park", "parkline": "1 µs", "baseline": "2 µs", "ratio": "0.50x (0.40-0.60x)"},
        {"readme": "boundary", "parkline": "3 µs", "baseline": "2 µs", "ratio": "1.50x (1.40-1.60x)"},
        {"readme": null, "parkline": "9 µs", "baseline": "1 µs", "ratio": "9.00x (8.00-9.00x)"},
    ]});
    let sound = "# x\n\n## Performance\n\n| op | p | b | r |\n| --- | --- | --- | --- |\n\
                 | park | 1 µs | 2 µs | 0.50x (0.40-0.60x) |\n\
                 | boundary | 3 µs | 2 µs | 1.50x (1.40-1.60x) |\n\n## License\n";
    assert_eq!(figures_drift(sound, &results), Vec::<String>::new());
    let changed = sound.replace("0.50x (0.40", "0.45x (0.40");
    let missing = sound.replace("| boundary | 3 µs | 2 µs | 1.50x (1.40-1.60x) |\n", "");
    let own = sound.replace(
        "## License",
        "| mine | 1 µs | 1 µs | 1.00x (1.00-1.00x) |\n## License",
    );
    assert_eq!(figures_drift(&changed, &results).len(), 1);
    assert_eq!(
        figures_drift(&missing, &results),
        ["README.md: no row `boundary` of the bench's results"]
    );
    assert_eq!(
        figures_drift(&own, &results),
        ["README.md: `mine` is no row of the bench's results"]
    );
}
