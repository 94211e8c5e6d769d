//! The house: which folder may import which, that no files of the crate
//! import each other in a loop, and that a name leads to one concept.
//!
//! The layout is the map a newcomer reads (`docs/architecture.md`): a folder
//! per concept, stacked in layers, each importing only from the layers below
//! it. These tests read that map from the source the way a reader sees it,
//! every `crate::`, `super::` and `self::` path outside comments and test
//! code, in `use` lines and inline alike, resolved to the file that defines
//! the module it names, and fail with the file and line of an import that
//! breaks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A folder (or a file at the root of `src/`) may
/// import from its own layer and those before it, never from one after it.
const LAYERS: &[&str] = &[
    // The ground: reading what a human wrote, the error type, statistics,
    // crash-safe files and text. None of them knows what a Brief is.
    "validate",
    "error",
    "stats",
    "atomic",
    "text",
    // The data the machine passes around, and the event log.
    "model",
    "events",
    // What the user wrote, and where it lives.
    "brief",
    "config",
    "project",
    // The mechanics: git worktrees, the archive, running commands.
    "workspace",
    // The code index of a worktree, for agents that would otherwise grep.
    "code_index",
    "archive",
    "run",
    // Judging: the eval-runner, statistics of the archive, red lights.
    "eval",
    // What a person reads: summary, trace, metrics, export.
    "report",
    // Who plays the agents, and the machine that drives them.
    "driver",
    "subagents",
    "phases",
    // The front: exit codes, long-running modes, the command line.
    "exit",
    "schedule",
    "cli",
];

/// The files the root of `src/` may hold; everything else is a folder.
const ROOT_FILES: &[&str] = &["main", "lib", "error", "exit", "project", "atomic"];

/// Folders whose files are named after something else than a concept of
/// their own: `cli/` after the commands, `model/` after the types the other
/// folders compute. Everywhere else, one stem names one thing.
const NAMED_AFTER_OTHERS: &[&str] = &["cli", "model"];

/// A module path (`["archive", "history", "view"]`) → its file.
type Modules = BTreeMap<Vec<String>, PathBuf>;

/// One import: the path as written, its line, the file it resolves to.
#[derive(Debug, Clone)]
struct Import {
    path: String,
    line: usize,
    to: PathBuf,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `src/archive/history/view.rs` → `archive::history::view`, a `mod.rs`
/// its folder; the crate root and test files → `None`.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.last().map(String::as_str) {
        Some("tests") => return None,
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    (parts != ["lib"] && parts != ["main"]).then_some(parts)
}

/// The source a build without tests compiles, line for line: comments and
/// `#[cfg(test)]` items blanked (an inline `mod tests { … }` block to its
/// closing brace, a `mod tests;` declaration as one line), so line numbers
/// stay those of the file.
fn code_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            out.push(String::new());
            let Some(item) = lines.next() else { break };
            out.push(String::new());
            if item.trim_end().ends_with(';') {
                continue;
            }
            // Skip the item's block by counting braces.
            let mut depth = 0i32;
            let mut opened = false;
            let mut count = |l: &str| {
                for c in l.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                opened && depth <= 0
            };
            if !count(item) {
                for l in lines.by_ref() {
                    out.push(String::new());
                    if count(l) {
                        break;
                    }
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        out.push(code.to_string());
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a piece of code names from `root` (`crate`, `super`, `self`),
/// each as its segments, a `use` group expanded to one path per item:
/// `use crate::{a::B, c::{self, D}}` names `a::B`, `c` and `c::D`.
fn paths_from(code: &str, root: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let pat = format!("{root}::");
    let mut rest = code;
    while let Some(i) = rest.find(&pat) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + pat.len()..];
        if before.is_some_and(|c| ident_char(c) || c == ':' || c == '$') {
            continue;
        }
        let mut prefix = Vec::new();
        if root == "super" {
            // `super::super::x`
            prefix.push("super".to_string());
            while let Some(r) = rest.strip_prefix("super::") {
                prefix.push("super".to_string());
                rest = r;
            }
        }
        expand(&mut rest, prefix, &mut out);
    }
    out
}

/// Reads one path (or group) at the start of `rest`, after `prefix`.
fn expand(rest: &mut &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        let s = rest.trim_start();
        if let Some(group) = s.strip_prefix('{') {
            *rest = group;
            loop {
                let s = rest.trim_start();
                if let Some(r) = s.strip_prefix('}') {
                    *rest = r;
                    return;
                }
                if s.is_empty() {
                    *rest = s;
                    return;
                }
                *rest = s;
                let before = rest.len();
                expand(rest, path.clone(), out);
                let s = rest.trim_start();
                *rest = s.strip_prefix(',').unwrap_or(s);
                if rest.len() == before {
                    // Not a path (`*`, `as` trailing): skip a character.
                    *rest = &rest[rest.chars().next().map_or(0, char::len_utf8)..];
                }
            }
        }
        let ident: String = s.chars().take_while(|c| ident_char(*c)).collect();
        if ident.is_empty() {
            *rest = s;
            if path.iter().any(|p| p != "super") {
                out.push(path);
            }
            return;
        }
        let after = &s[ident.len()..];
        if ident == "self" {
            *rest = after;
            out.push(path);
            return;
        }
        path.push(ident);
        match after.strip_prefix("::") {
            Some(r) => *rest = r,
            None => {
                *rest = after;
                out.push(path);
                return;
            }
        }
    }
}

/// The file a path names: the longest prefix of it that is a module.
fn resolve(modules: &Modules, path: &[String]) -> Option<PathBuf> {
    (1..=path.len())
        .rev()
        .find_map(|k| modules.get(&path[..k]).cloned())
}

/// Every file of `src` with the imports its code makes, each resolved to a
/// file of the crate. A folder's `mod.rs` naming its own parts (`child::f`,
/// `mod child;`) is the module tree, not an import, and is left out.
fn imports(src: &Path) -> BTreeMap<PathBuf, Vec<Import>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: Modules = files
        .iter()
        .filter_map(|f| Some((module_of(src, f)?, f.clone())))
        .collect();
    let mut out = BTreeMap::new();
    for f in &files {
        let Some(me) = module_of(src, f) else {
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let mut found = Vec::new();
        for (n, line) in code_of(&text).iter().enumerate() {
            let mut named: Vec<(String, Vec<String>)> = Vec::new();
            for p in paths_from(line, "crate") {
                named.push((format!("crate::{}", p.join("::")), p));
            }
            for p in paths_from(line, "super") {
                let ups = p.iter().take_while(|s| *s == "super").count();
                let Some(base) = me.len().checked_sub(ups) else {
                    continue;
                };
                let mut abs = me[..base].to_vec();
                abs.extend(p[ups..].iter().cloned());
                named.push((p.join("::"), abs));
            }
            for p in paths_from(line, "self") {
                let mut abs = me.clone();
                abs.extend(p.iter().cloned());
                named.push((format!("self::{}", p.join("::")), abs));
            }
            for (written, abs) in named {
                if abs.len() > me.len() && abs[..me.len()] == me[..] {
                    continue; // a module naming its own parts
                }
                if let Some(to) = resolve(&modules, &abs)
                    && &to != f
                {
                    found.push(Import {
                        path: written,
                        line: n + 1,
                        to,
                    });
                }
            }
        }
        out.insert(f.clone(), found);
    }
    out
}

/// The layer entry a file belongs to: its folder under `src/`, or its stem
/// at the root.
fn entry_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_string()
}

/// Imports that go up a layer, one line each: where, what, and the layers.
fn upward(src: &Path, imports: &BTreeMap<PathBuf, Vec<Import>>) -> Vec<String> {
    let layer = |e: &str| LAYERS.iter().position(|l| *l == e);
    let mut out = Vec::new();
    for (file, list) in imports {
        let from = entry_of(src, file);
        let Some(lf) = layer(&from) else { continue };
        for i in list {
            let to = entry_of(src, &i.to);
            let Some(lt) = layer(&to) else { continue };
            if lt > lf {
                out.push(format!(
                    "{}:{}: `{}` imports {} from `{to}/`, a layer above `{from}`",
                    file.strip_prefix(src.parent().unwrap_or(src))
                        .unwrap_or(file)
                        .display(),
                    i.line,
                    i.path,
                    i.to.strip_prefix(src).unwrap_or(&i.to).display(),
                ));
            }
        }
    }
    out
}

type Graph = BTreeMap<String, BTreeSet<String>>;

fn file_graph(src: &Path, imports: &BTreeMap<PathBuf, Vec<Import>>) -> Graph {
    let name = |p: &Path| p.strip_prefix(src).unwrap_or(p).display().to_string();
    imports
        .iter()
        .map(|(f, list)| (name(f), list.iter().map(|i| name(&i.to)).collect()))
        .collect()
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut walk = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

/// One cycle in words, with the edges that make it, for the failure message.
fn describe(g: &Graph, scc: &[String]) -> String {
    let set: BTreeSet<&String> = scc.iter().collect();
    let edges: Vec<String> = scc
        .iter()
        .flat_map(|a| {
            g[a].iter()
                .filter(|b| set.contains(b))
                .map(move |b| format!("{a} -> {b}"))
        })
        .collect();
    format!("{{{}}}: {}", scc.join(", "), edges.join(", "))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A tree of files under a temporary `src/`, for the checks' own tests.
fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("src");
    for (path, text) in files {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    (dir, src)
}

#[test]
fn the_reader_sees_imports_in_every_form() {
    let code = code_of(
        "use crate::a::X;\n#[cfg(test)]\nmod tests;\nuse crate::{b, c::{D, self}, d::F};\n// crate::commented\nfn f() { crate::e::g(); my_crate::h(); }\n#[cfg(test)]\nmod tests {\n    use crate::t;\n    fn g() { if x { y } }\n}\nfn after() { crate::z::w(); }\n",
    )
    .join("\n");
    let mut n: Vec<String> = paths_from(&code, "crate")
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    n.sort();
    assert_eq!(n, ["a::X", "b", "c", "c::D", "d::F", "e::g", "z::w"]);
    let sup: Vec<String> = paths_from("use super::super::x::Y; super::z()", "super")
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(sup, ["super::super::x::Y", "super::z"]);
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g = Graph::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    assert_eq!(cycles(&g), vec![vec!["x", "y", "z"]]);
}

/// The checks themselves fail where they should: an import up a layer, by
/// `crate::` or `super::`, and two files naming each other; a folder naming
/// its own parts is not an import.
#[test]
fn the_checks_catch_an_import_up_a_layer_and_a_cycle() {
    let (_dir, src) = tree(&[
        ("lib.rs", "pub mod model;\npub mod eval;\npub mod cli;\n"),
        ("model/mod.rs", "mod a;\nuse crate::eval::Evaluator;\n"),
        ("model/a.rs", "use super::X;\n"),
        (
            "eval/mod.rs",
            "mod x;\nmod y;\npub use x::Evaluator;\nfn f() { y::g() }\n",
        ),
        ("eval/x.rs", "use super::y::g;\n"),
        ("eval/y.rs", "pub fn g() { super::x::h() }\n"),
        ("cli/mod.rs", "use crate::{eval::Evaluator, model};\n"),
    ]);
    let imports = imports(&src);
    let up = upward(&src, &imports);
    assert_eq!(up.len(), 1, "{up:#?}");
    assert!(
        up[0].starts_with("src/model/mod.rs:2: `crate::eval::Evaluator` imports eval/mod.rs"),
        "{}",
        up[0]
    );
    let g = file_graph(&src, &imports);
    let found = cycles(&g);
    assert_eq!(found, vec![vec!["eval/x.rs", "eval/y.rs"]], "{g:#?}");
}

#[test]
fn no_import_goes_up_a_layer() {
    let src = src();
    let up = upward(&src, &imports(&src));
    assert!(
        up.is_empty(),
        "imports that go up a layer (docs/architecture.md says which folder may import which):\n{}",
        up.join("\n")
    );
}

#[test]
fn no_cycle_anywhere() {
    let src = src();
    let g = file_graph(&src, &imports(&src));
    let all: Vec<String> = cycles(&g).iter().map(|scc| describe(&g, scc)).collect();
    assert!(all.is_empty(), "import cycles:\n{}", all.join("\n"));
}

/// The root of `src/` holds only the six files that belong to no concept,
/// and every folder is a concept with its place in the layers.
#[test]
fn the_root_holds_six_files_and_concept_folders() {
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for e in std::fs::read_dir(src()).expect("src/").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        match e.path().is_dir() {
            true => folders.push(name),
            false => files.push(name.trim_end_matches(".rs").to_string()),
        }
    }
    files.sort();
    let mut expected: Vec<String> = ROOT_FILES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(files, expected, "files at the root of src/");
    for f in &folders {
        assert!(
            LAYERS.contains(&f.as_str()),
            "src/{f}/ has no place in the layers: add it to LAYERS (tests/integration/layout.rs) and docs/architecture.md"
        );
    }
}

/// Outside `cli/` and `model/`, a stem names one thing: no two files, or a
/// file and a folder, share one (`mod` and `tests` aside).
#[test]
fn a_stem_names_one_thing() {
    let src = src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut note = |stem: &str, at: &Path| {
        let rel = at.strip_prefix(&src).unwrap_or(at);
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if NAMED_AFTER_OTHERS.contains(&top.as_str()) || matches!(stem, "mod" | "tests") {
            return;
        }
        seen.entry(stem.to_string())
            .or_default()
            .push(rel.display().to_string());
    };
    for f in &files {
        let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned());
        note(&stem.unwrap_or_default(), f);
        let mut dir = f.parent();
        while let Some(d) = dir.filter(|d| *d != src.as_path()) {
            // Each folder once, from its mod.rs.
            if f.file_name().is_some_and(|n| n == "mod.rs") && d == f.parent().unwrap_or(d) {
                let name = d.file_name().map(|s| s.to_string_lossy().into_owned());
                note(&name.unwrap_or_default(), d);
            }
            dir = d.parent();
        }
    }
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(stem, at)| format!("`{stem}`: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "stems naming more than one thing:\n{}",
        twice.join("\n")
    );
}
