//! The import graph of the crate's top-level modules, read from the source,
//! and the tests that keep it free of cycles.
//!
//! A cycle between modules means neither can be understood, tested or
//! replaced without the other; the leaf types in `model/` exist so that the
//! core (Brief, config, statistics, the eval-runner, red lights, the
//! archive) depends downward only. The graph is read the way a reader sees
//! it: every `crate::<module>` path outside comments and test modules, in
//! `use` lines and inline alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules the phase machine is built on.
const CORE: &[&str] = &[
    "brief", "config", "model", "stats", "eval", "redlight", "history",
];

/// Top-level module → the modules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

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

/// `src/eval/sequential.rs` → `eval`; the crate root and test files → `None`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    let stem = file.file_stem()?.to_str()?;
    (!matches!(name, "lib" | "main") && stem != "tests").then(|| name.to_string())
}

/// The source a build without tests compiles: comments and `#[cfg(test)]`
/// items left out (an inline `mod tests { … }` block to its closing brace,
/// a `mod tests;` declaration as one line).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            let Some(item) = lines.next() else { break };
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
                    if count(l) {
                        break;
                    }
                }
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The modules one file's code names through `crate::`.
fn names(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::c, d::{e, f}}`: the first name of each item.
            let mut depth = 0;
            let mut item_start = true;
            let mut ident = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !ident.is_empty() {
                            out.insert(std::mem::take(&mut ident));
                        }
                        item_start = true;
                    }
                    c if item_start && (c.is_alphanumeric() || c == '_') => ident.push(c),
                    _ if item_start && !ident.is_empty() => {
                        out.insert(std::mem::take(&mut ident));
                        item_start = false;
                    }
                    _ => {}
                }
            }
            if !ident.is_empty() {
                out.insert(ident);
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !ident.is_empty() {
                out.insert(ident);
            }
        }
    }
    out
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut g: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for f in &files {
        let Some(m) = module_of(&src, f) else {
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for n in names(&code_of(&text)) {
            if n != m && modules.contains(&n) {
                g.entry(m.clone()).or_default().insert(n);
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan).
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

#[test]
fn the_reader_sees_imports_in_every_form() {
    let code = code_of(
        "use crate::a::X;\n#[cfg(test)]\nmod tests;\nuse crate::{b, c::{D, E}, d::F};\n// crate::commented\nfn f() { crate::e::g(); my_crate::h(); }\n#[cfg(test)]\nmod tests {\n    use crate::t;\n    fn g() { if x { y } }\n}\nfn after() { crate::z::w(); }\n",
    );
    let n: Vec<String> = names(&code).into_iter().collect();
    assert_eq!(n, ["a", "b", "c", "d", "e", "z"]);
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

#[test]
fn no_cycle_among_the_core_modules() {
    let g = graph();
    for m in CORE {
        assert!(g.contains_key(*m), "core module `{m}` not found in src/");
    }
    let bad: Vec<String> = cycles(&g)
        .iter()
        .filter(|scc| scc.iter().any(|m| CORE.contains(&m.as_str())))
        .map(|scc| describe(&g, scc))
        .collect();
    assert!(
        bad.is_empty(),
        "import cycles through core modules:\n{}",
        bad.join("\n")
    );
}

/// Beyond the core: today no module of the crate is in a cycle, and a new
/// one must not start one.
#[test]
fn no_cycle_anywhere() {
    let g = graph();
    let all: Vec<String> = cycles(&g).iter().map(|scc| describe(&g, scc)).collect();
    assert!(all.is_empty(), "import cycles:\n{}", all.join("\n"));
}
