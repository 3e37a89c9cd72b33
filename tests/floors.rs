//! The floors of the crate (ARCHITECTURE.md, "Floors"): every path a file of `impl/src` names,
//! with `crate::`, `super::` or `self::`, in a `use` line, inline or in a doc link, leads to a
//! file on its own floor or one below, and no file reaches itself through others. The floors are
//! read from ARCHITECTURE.md's `floors:` line, so the document and the check cannot disagree;
//! the check is a plain function of the files' text, shown to fail on planted imports. Beside
//! it, the one storage base: every `Storage` of the workspace is a real storage or `Seam`, the
//! forwarding base the wrappers build on with their hooks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The files of `impl/src`, by path below it (`io/storage.rs`), with their text.
type Tree = BTreeMap<String, String>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn crate_tree() -> Tree {
    fn walk(dir: &Path, prefix: &str, tree: &mut Tree) {
        for entry in std::fs::read_dir(dir).expect("list impl/src").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &format!("{prefix}{name}/"), tree);
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("read a source file");
                tree.insert(format!("{prefix}{name}"), text);
            }
        }
    }
    let mut tree = Tree::new();
    walk(&root().join("impl/src"), "", &mut tree);
    tree
}

/// The floors, lowest first, from the line of `architecture` that starts with `floors:`: entries
/// separated by spaces, floors by ` < `. An entry ending in `/` is a folder, any other a module
/// (`ops/request` is `ops/request.rs`, `mirror` would be `mirror.rs` or `mirror/mod.rs`).
fn floors_of(architecture: &str) -> Vec<Vec<String>> {
    let line = architecture
        .lines()
        .map(|line| line.trim().trim_matches('`'))
        .find_map(|line| line.strip_prefix("floors: "))
        .expect("ARCHITECTURE.md has a `floors:` line");
    line.split(" < ")
        .map(|floor| floor.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// A module's key: its path below the crate root, `""` for `lib.rs`, `io/storage` for
/// `io/storage.rs`, `mirror` for `mirror/mod.rs`.
fn key_of(file: &str) -> String {
    let stem = file.strip_suffix(".rs").expect("a .rs file");
    match stem {
        "lib" => String::new(),
        _ => stem.strip_suffix("/mod").unwrap_or(stem).to_owned(),
    }
}

/// The floor of the module `key`: the index of the one floor with an entry that names it.
fn floor_of(floors: &[Vec<String>], key: &str) -> Result<usize, String> {
    let named = |entry: &String| match entry.strip_suffix('/') {
        Some(folder) => key == folder || key.starts_with(entry.as_str()),
        None => key == entry || (entry == "lib" && key.is_empty()),
    };
    let found: Vec<usize> = (0..floors.len())
        .filter(|&floor| floors[floor].iter().any(named))
        .collect();
    match found[..] {
        [floor] => Ok(floor),
        [] => Err(format!("the module `{key}` is on no floor")),
        _ => Err(format!("the module `{key}` is on floors {found:?}")),
    }
}

/// True when `module` (segments below the crate root) is a file of `tree`.
fn is_module(tree: &Tree, module: &[String]) -> bool {
    let key = module.join("/");
    module.is_empty()
        || tree.contains_key(&format!("{key}.rs"))
        || tree.contains_key(&format!("{key}/mod.rs"))
}

/// The file a path names: from the module `start`, the longest run of its segments that are
/// modules of `tree`, then the file that holds the module it reached (an inline module is in
/// its file).
fn resolve(tree: &Tree, start: &[String], segments: &[String]) -> String {
    let mut module = start.to_vec();
    for segment in segments {
        module.push(segment.clone());
        if !is_module(tree, &module) {
            module.pop();
            break;
        }
    }
    while !is_module(tree, &module) {
        module.pop();
    }
    module.join("/")
}

/// Where the text of a file is code, and the inline modules (`mod tests { .. }`) by their span.
struct Lexed {
    /// `(start, end, name)` of every inline module, in bytes.
    inline: Vec<(usize, usize, String)>,
}

/// The inline modules of `text`: braces counted in code only, skipping strings, characters and
/// comments, so a `{` in a format string or a doc comment moves nothing.
fn lex(text: &str) -> Lexed {
    let bytes = text.as_bytes();
    let mut inline = Vec::new();
    let mut open: Vec<(usize, Option<String>)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &text[at..];
        if rest.starts_with("//") {
            at += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            at += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if let Some(skip) = string_at(text, at) {
            at = skip;
        } else if let Some(skip) = char_at(bytes, at) {
            at = skip;
        } else {
            match bytes[at] {
                b'{' => open.push((at, inline_mod_before(&text[..at]))),
                b'}' => {
                    if let Some((start, Some(name))) = open.pop() {
                        inline.push((start, at, name));
                    }
                }
                _ => {}
            }
            at += 1;
        }
    }
    Lexed { inline }
}

/// The end of a string literal starting at `at` (plain, byte or raw), if one starts there.
fn string_at(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    let ident_before = at > 0 && is_ident(text.as_bytes()[at - 1]);
    let body = rest.strip_prefix('b').unwrap_or(rest);
    if let Some(raw) = body.strip_prefix('r').filter(|_| !ident_before) {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let open = &raw[hashes..];
        if !open.starts_with('"') {
            return None;
        }
        let close = format!("\"{}", "#".repeat(hashes));
        let end = open[1..].find(&close)? + 1 + close.len();
        return Some(at + (rest.len() - open.len()) + end);
    }
    if !body.starts_with('"') || (ident_before && body.len() == rest.len()) {
        return None;
    }
    let start = at + (rest.len() - body.len()) + 1;
    let bytes = text.as_bytes();
    let mut end = start;
    while end < bytes.len() && bytes[end] != b'"' {
        end += if bytes[end] == b'\\' { 2 } else { 1 };
    }
    Some(end + 1)
}

/// The end of a character literal at `at` (`'{'`, `'\''`, `b'}'`), if one starts there; a
/// lifetime (`'a`) is not one.
fn char_at(bytes: &[u8], at: usize) -> Option<usize> {
    let quote = if bytes[at] == b'b' && bytes.get(at + 1) == Some(&b'\'') {
        at + 1
    } else {
        at
    };
    if bytes[quote] != b'\'' || (quote == at && at > 0 && is_ident(bytes[at - 1])) {
        return None;
    }
    if bytes.get(quote + 1) == Some(&b'\\') {
        let end = bytes[quote + 2..].iter().position(|&b| b == b'\'')?;
        return Some(quote + 2 + end + 1);
    }
    let width = bytes.get(quote + 1).map(|&b| utf8_width(b))?;
    (bytes.get(quote + 1 + width) == Some(&b'\'')).then_some(quote + 2 + width)
}

fn utf8_width(first: u8) -> usize {
    match first {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The name of the module a `{` opens, when the code before it ends in `mod <name>`.
fn inline_mod_before(code: &str) -> Option<String> {
    let before = code.trim_end();
    let name_start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_'))? + 1;
    let name = &before[name_start..];
    let keyword = before[..name_start].trim_end();
    let is_mod = keyword.ends_with("mod")
        && !keyword[..keyword.len() - 3]
            .bytes()
            .next_back()
            .is_some_and(is_ident);
    (is_mod && !name.is_empty()).then(|| name.to_owned())
}

/// Every path of `text` that starts with `crate::`, `super::` or `self::`, as segments after the
/// keyword, each with the byte it starts at; a `use` group (`crate::{a, b::{c, d}}`) is one
/// path per leaf.
fn paths_of(text: &str) -> Vec<(usize, &'static str, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for keyword in ["crate", "super", "self"] {
        let needle = format!("{keyword}::");
        let mut from = 0;
        while let Some(offset) = text[from..].find(&needle) {
            let at = from + offset;
            from = at + needle.len();
            if at > 0 && (is_ident(bytes[at - 1]) || bytes[at - 1] == b':' || bytes[at - 1] == b'$')
            {
                continue;
            }
            let mut leaves = Vec::new();
            use_tree(text, from, Vec::new(), &mut leaves);
            let keyword: &'static str = match keyword {
                "crate" => "crate",
                "super" => "super",
                _ => "self",
            };
            found.extend(leaves.into_iter().map(|leaf| (at, keyword, leaf)));
        }
    }
    found
}

/// The leaves of the use tree that starts at `at`, after a `::`: `a::b`, `{a, b::c}`, `*`.
fn use_tree(text: &str, mut at: usize, prefix: Vec<String>, leaves: &mut Vec<Vec<String>>) {
    let bytes = text.as_bytes();
    let mut path = prefix;
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if bytes.get(at) == Some(&b'{') {
            for branch in group_branches(text, at) {
                use_tree(text, branch, path.clone(), leaves);
            }
            return;
        }
        let end = at + bytes[at..].iter().take_while(|&&b| is_ident(b)).count();
        if end > at {
            path.push(text[at..end].to_owned());
        }
        if text[end..].starts_with("::") {
            at = end + 2;
        } else {
            leaves.push(path);
            return;
        }
    }
}

/// The start of each branch of the group whose `{` is at `open`.
fn group_branches(text: &str, open: usize) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut branches = vec![open + 1];
    let mut depth = 0;
    for (at, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' if depth == 1 => break,
            b'}' => depth -= 1,
            b',' if depth == 1 => branches.push(at + 1),
            _ => {}
        }
    }
    branches
}

/// The file each path of `file` leads to, with the path as written: the paths that start with
/// `crate::`, `super::` or `self::`, and a `use` of a child module by its bare name.
fn edges_of(tree: &Tree, file: &str) -> Vec<(String, String)> {
    let text = &tree[file];
    let key = key_of(file);
    let own: Vec<String> = key
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let lexed = lex(text);
    let mut found = paths_of(text);
    found.extend(child_uses(tree, &own, text));
    let mut edges = Vec::new();
    for (at, keyword, segments) in found {
        let mut module = own.clone();
        module.extend(
            lexed
                .inline
                .iter()
                .filter(|(start, end, _)| (*start..*end).contains(&at))
                .map(|(_, _, name)| name.clone()),
        );
        match keyword {
            "crate" => module.clear(),
            "super" => drop(module.pop()),
            _ => {}
        }
        let ups = segments.iter().take_while(|s| *s == "super").count();
        module.truncate(module.len().saturating_sub(ups));
        let target = resolve(tree, &module, &segments[ups..]);
        edges.push((target, format!("{keyword}::{}", segments.join("::"))));
    }
    edges
}

/// The `use` lines of `text` whose path starts with a child module of `own` by its bare name
/// (`pub use decode::decode_log;` in `mirror/mod.rs`), as paths from `self`.
fn child_uses(tree: &Tree, own: &[String], text: &str) -> Vec<(usize, &'static str, Vec<String>)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let code = line.trim_start();
        let path = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|prefix| code.strip_prefix(prefix));
        if let Some(path) = path {
            let first: String = path
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_')
                .collect();
            let mut child = own.to_vec();
            child.push(first.clone());
            if !first.is_empty() && is_module(tree, &child) {
                let at = offset + (line.len() - code.len());
                let start = line.len() - path.len();
                let mut leaves = Vec::new();
                use_tree(text, offset + start, Vec::new(), &mut leaves);
                found.extend(leaves.into_iter().map(|leaf| (at, "self", leaf)));
            }
        }
        offset += line.len();
    }
    found
}

/// What breaks the floors in `tree`: a file on no floor, a path up a floor, an import circle.
fn check(tree: &Tree, floors: &[Vec<String>]) -> Vec<String> {
    let mut findings = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in tree.keys() {
        let key = key_of(file);
        let floor = match floor_of(floors, &key) {
            Ok(floor) => floor,
            Err(e) => {
                findings.push(e);
                continue;
            }
        };
        for (target, written) in edges_of(tree, file) {
            if target == key {
                continue;
            }
            match floor_of(floors, &target) {
                Ok(up) if up > floor => findings.push(format!(
                    "impl/src/{file} names `{written}`, on floor {up} ({}), above its own floor {floor}",
                    floors[up].join(" ")
                )),
                Ok(_) => {}
                Err(e) => findings.push(e),
            }
            graph.entry(key.clone()).or_default().insert(target);
        }
    }
    findings.extend(circles(&graph));
    findings
}

/// Every import circle of `graph`, one finding each, found by depth-first search.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_owned());
            found.push(format!(
                "an import circle: {}",
                circle
                    .iter()
                    .map(|n| if n.is_empty() { "lib" } else { n.as_str() })
                    .collect::<Vec<_>>()
                    .join(" -> ")
            ));
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn architecture_floors() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    floors_of(&text)
}

#[test]
fn every_import_points_down_a_floor() {
    let findings = check(&crate_tree(), &architecture_floors());
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

#[test]
fn an_upward_import_is_found() {
    let floors = architecture_floors();
    let mut tree = crate_tree();
    let error = tree.get_mut("error.rs").expect("error.rs");
    error.push_str("\nuse crate::queue::Queue;\n");
    let findings = check(&tree, &floors);
    assert!(
        findings
            .iter()
            .any(|f| f.contains("impl/src/error.rs names `crate::queue::Queue`")),
        "{findings:?}"
    );
}

#[test]
fn a_path_through_the_crate_root_is_found() {
    let floors = architecture_floors();
    let mut tree = crate_tree();
    let line = tree.get_mut("line.rs").expect("line.rs");
    line.push_str("\n/// See [`Queue`](crate::Queue).\nconst _X: () = ();\n");
    let findings = check(&tree, &floors);
    assert!(
        findings
            .iter()
            .any(|f| f.contains("impl/src/line.rs names `crate::Queue`")),
        "{findings:?}"
    );
}

#[test]
fn an_import_circle_on_one_floor_is_found() {
    let floors = architecture_floors();
    let mut tree = crate_tree();
    let frame = tree.get_mut("frame.rs").expect("frame.rs");
    frame.push_str("\nuse crate::types::{Budget, Seq};\n");
    let types = tree.get_mut("types.rs").expect("types.rs");
    types.push_str("\nuse crate::frame::render;\n");
    let findings = check(&tree, &floors);
    assert!(
        findings.iter().any(|f| f.starts_with("an import circle")
            && f.contains("frame")
            && f.contains("types")),
        "{findings:?}"
    );
}

#[test]
fn a_file_on_no_floor_is_found() {
    let floors = architecture_floors();
    let mut tree = crate_tree();
    tree.insert("attic.rs".to_owned(), String::new());
    let findings = check(&tree, &floors);
    assert!(
        findings.contains(&"the module `attic` is on no floor".to_owned()),
        "{findings:?}"
    );
}

#[test]
fn an_inline_module_a_group_and_a_child_resolve() {
    let mut tree = Tree::new();
    for file in ["lib.rs", "a.rs", "b/mod.rs", "b/c.rs"] {
        tree.insert(file.to_owned(), String::new());
    }
    let text = "use crate::{a::X, b::{c::Y, Z}};\nfn f() { let _ = '{'; }\nmod tests {\n    use super::*;\n    use super::super::a;\n}\n";
    tree.insert("b/d.rs".to_owned(), text.to_owned());
    tree.insert("b/mod.rs".to_owned(), "mod c;\npub use c::Y;\n".to_owned());
    let targets = |file: &str| {
        let mut targets: Vec<String> = edges_of(&tree, file).into_iter().map(|(t, _)| t).collect();
        targets.sort();
        targets
    };
    assert_eq!(targets("b/d.rs"), ["a", "b", "b", "b/c", "b/d"]);
    assert_eq!(targets("b/mod.rs"), ["b/c"]);
}

/// The `Storage` implementations of the workspace: every `impl ... Storage for <type>` in the
/// `.rs` files under `dirs`, by type, with the file it is in.
fn storage_impls(files: &[(String, String)]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (path, text) in files {
        for line in text.lines() {
            let code = line.trim_start();
            if !code.starts_with("impl") {
                continue;
            }
            let Some((_, after)) = code.split_once("Storage for ") else {
                continue;
            };
            let ty: String = after
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_')
                .collect();
            found.push((ty, path.clone()));
        }
    }
    found
}

/// The workspace's `.rs` files outside `target/`, by path from the root, with their text.
fn workspace_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("list a folder").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() && name != "target" && !name.starts_with('.') {
                walk(&path, &format!("{prefix}{name}/"), out);
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("read a source file");
                out.push((format!("{prefix}{name}"), text));
            }
        }
    }
    let mut files = Vec::new();
    for dir in [
        "impl", "harness", "benches", "tests", "src", "fuzz", "model",
    ] {
        walk(&root().join(dir), &format!("{dir}/"), &mut files);
    }
    files
}

/// The storages that implement `Storage` themselves: the real ones and the one forwarding base
/// (`Seam`, in `impl/src/io/seam.rs`) that every wrapper builds on with its hooks.
const STORAGES: [&str; 4] = ["FsStorage", "MemStorage", "SimDisk", "Seam"];

/// The `Storage` implementations of `files` that are neither a real storage nor the base.
fn by_hand(files: &[(String, String)]) -> Vec<(String, String)> {
    storage_impls(files)
        .into_iter()
        .filter(|(ty, _)| !STORAGES.contains(&ty.as_str()))
        .collect()
}

#[test]
fn every_storage_wrapper_builds_on_the_one_base() {
    let others = by_hand(&workspace_files());
    assert!(others.is_empty(), "Storage implemented by hand: {others:?}");
    let impls = storage_impls(&workspace_files());
    let mut types: Vec<&str> = impls.iter().map(|(ty, _)| ty.as_str()).collect();
    types.sort_unstable();
    assert_eq!(types, ["FsStorage", "MemStorage", "Seam", "SimDisk"]);
}

#[test]
fn a_storage_forwarding_by_hand_is_found() {
    let mut files = workspace_files();
    files.push((
        "benches/src/planted.rs".to_owned(),
        "impl<S: Storage> Storage for Planted<S> {}\n".to_owned(),
    ));
    assert_eq!(
        by_hand(&files),
        [("Planted".to_owned(), "benches/src/planted.rs".to_owned())]
    );
}
