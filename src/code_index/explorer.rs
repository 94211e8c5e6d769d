//! The index's tools: what an agent asks instead of grepping, and the text
//! each answer is.
//!
//! One definition serves the llm driver (as tools of its loop) and `ooda
//! mcp` (as MCP tools), so both answer alike. Answers are plain text made
//! for a model: one line per definition or edge, `path:line` first (what
//! the agent reads next), every edge marked `[resolved]` or
//! `[name-matched, 1 of N]`, every list capped with the count it left out.
//! A `file` argument is confined like the file tools' paths: relative,
//! inside the worktree, never through a symlink out of it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};

use super::graph::{Certainty, DefId, Graph};
use super::lang::Kind;
use super::{Index, Limits};

pub(crate) const FIND: &str = "find_symbol";
pub(crate) const SYMBOL: &str = "symbol";
pub(crate) const CALLERS: &str = "callers";
pub(crate) const CALLEES: &str = "callees";
pub(crate) const IMPACT: &str = "impact";
pub(crate) const EXPLORE: &str = "explore";

/// Every tool of the index, by name.
pub(crate) const NAMES: &[&str] = &[FIND, SYMBOL, CALLERS, CALLEES, IMPACT, EXPLORE];

/// Lines of one list at most.
const LIST_MAX: usize = 40;
/// Source lines of one definition `symbol` shows at most.
const SOURCE_LINES: usize = 150;
/// Characters `explore` returns by default, and at most.
const EXPLORE_CHARS: usize = 6_000;
const EXPLORE_MAX: usize = 20_000;
/// Definitions `impact` follows further at each level at most.
const DEPENDENTS_FRONTIER: usize = 60;
/// Characters of any other answer at most.
const ANSWER_MAX: usize = 16_000;

/// A tool as a model sees it: name, when to use it, its arguments.
pub(crate) struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: Value,
}

fn target_props(extra: Value) -> Value {
    let mut props = json!({
        "name": {"type": "string", "description": "The symbol's name as written in the code (`parse`), or with its type or class (`Version.parse`, `Version::parse`)."},
        "file": {"type": "string", "description": "The file that defines it, relative to the root, when several definitions share the name."}
    });
    if let (Some(p), Value::Object(e)) = (props.as_object_mut(), extra) {
        p.extend(e);
    }
    props
}

/// The tools' specifications.
pub(crate) fn specs() -> Vec<Spec> {
    let depth = json!({"depth": {"type": "integer", "minimum": 1, "maximum": 3, "description": "How many levels to follow (1 by default)."}});
    vec![
        Spec {
            name: EXPLORE,
            description: "Show a symbol in context in one call: its source with line numbers, who calls it, what it calls, and the tests that reference it, within a character budget. Use it first when you need to understand or change a function, method or type; it replaces a search plus several file reads.",
            schema: json!({"type": "object", "properties": target_props(json!({
                "budget": {"type": "integer", "minimum": 1000, "maximum": EXPLORE_MAX, "description": "Characters to return at most (6000 by default)."}
            })), "required": ["name"], "additionalProperties": false}),
        },
        Spec {
            name: FIND,
            description: "Find definitions (functions, methods, classes, types, macros) by exact name, `Type.name`, or a regular expression; optionally only of one kind or in one file. Returns `path:line-end kind name — signature`. Use it to locate code by name instead of searching text.",
            schema: json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "A name (`parse`), a qualified name (`Version.parse`), or a regex (`^parse_`)."},
                "kind": {"type": "string", "enum": ["function", "method", "class", "type", "const", "macro", "module", "prototype", "test"], "description": "Only definitions of this kind."},
                "file": {"type": "string", "description": "Only definitions in this file or folder."}
            }, "required": ["query"], "additionalProperties": false}),
        },
        Spec {
            name: SYMBOL,
            description: "The source of one definition with line numbers, its signature and the comment above it. Use it to read a function without reading its whole file.",
            schema: json!({"type": "object", "properties": target_props(json!({})), "required": ["name"], "additionalProperties": false}),
        },
        Spec {
            name: CALLERS,
            description: "Who calls a function or method (and who calls those, to `depth`): the calling definitions with file, line and whether the edge is resolved or only name-matched.",
            schema: json!({"type": "object", "properties": target_props(depth.clone()), "required": ["name"], "additionalProperties": false}),
        },
        Spec {
            name: CALLEES,
            description: "What a function or method calls (to `depth`): each callee with where it is defined, or that it is not in the index (a library or builtin).",
            schema: json!({"type": "object", "properties": target_props(depth), "required": ["name"], "additionalProperties": false}),
        },
        Spec {
            name: IMPACT,
            description: "What depends on a symbol, ranked: direct callers and users first, then indirect ones up to three levels, the tests that reach it and the files involved. Use it before changing a signature.",
            schema: json!({"type": "object", "properties": target_props(json!({})), "required": ["name"], "additionalProperties": false}),
        },
    ]
}

/// The index of one worktree, kept fresh, answering the tools.
pub struct Explorer {
    root: PathBuf,
    /// Where the index is saved (`None`: memory only).
    dir: Option<PathBuf>,
    limits: Limits,
    index: Index,
}

impl Explorer {
    /// The index of `root`, loaded from `dir` or built (and saved there
    /// when `dir` is writable).
    pub fn open(root: &Path, dir: Option<&Path>, limits: Limits) -> Explorer {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let index = match dir {
            Some(d) => Index::open(&root, d, limits, true).0,
            None => Index::build(&root, limits, &AtomicBool::new(false)),
        };
        Explorer {
            root,
            dir: dir.map(Path::to_path_buf),
            limits,
            index,
        }
    }

    /// Answers one tool call: its text, or an error for the model.
    pub fn call(&mut self, name: &str, args: &Value) -> Result<String, String> {
        if !NAMES.contains(&name) {
            return Err(format!(
                "there is no index tool `{name}`; they are {}",
                NAMES.join(", ")
            ));
        }
        let Value::Object(_) = args else {
            return Err(format!(
                "the arguments of {name} are not a JSON object; send an object with the fields of its schema"
            ));
        };
        // The step may have changed files since the last call.
        let r = self.index.refresh(self.limits, &AtomicBool::new(false));
        if r.changed()
            && let Some(d) = &self.dir
        {
            let _ = self.index.save(d, &super::base_key(&self.root));
        }
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let n = |k: &str| args.get(k).and_then(Value::as_u64);
        let file = match s("file") {
            Some(f) => Some(self.confined(f)?),
            None => None,
        };
        let g = Graph::new(&self.index);
        let a = Answer {
            g: &g,
            root: &self.root,
            skipped: &self.index.skipped,
        };
        let need = |k: &str| match args.get(k) {
            Some(Value::String(v)) => Ok(v.as_str()),
            Some(other) => Err(format!("`{k}` of {name} must be a string, not {other}")),
            None => Err(format!("{name} needs `{k}`")),
        };
        let depth = n("depth").unwrap_or(1).clamp(1, 3) as usize;
        let body = match name {
            FIND => a.find(need("query")?, s("kind"), file.as_deref())?,
            SYMBOL => a.symbol(need("name")?, file.as_deref())?,
            CALLERS => a.callers(need("name")?, file.as_deref(), depth)?,
            CALLEES => a.callees(need("name")?, file.as_deref(), depth)?,
            IMPACT => a.impact(need("name")?, file.as_deref())?,
            _ => {
                let budget = n("budget").map_or(EXPLORE_CHARS, |b| b as usize);
                let budget = budget.clamp(1000, EXPLORE_MAX);
                return a
                    .explore(need("name")?, file.as_deref(), budget)
                    .map(|t| self.with_coverage(t, budget));
            }
        };
        Ok(self.with_coverage(body, ANSWER_MAX))
    }

    fn with_coverage(&self, body: String, max: usize) -> String {
        let body = match self.index.coverage() {
            Some(c) => format!("{c}\n{body}"),
            None => body,
        };
        fit(body, max)
    }

    /// A `file` argument as a path relative to the root, or why not.
    fn confined(&self, f: &str) -> Result<String, String> {
        let p = crate::workspace::files::resolve(&self.root, f, false)?;
        Ok(p.strip_prefix(&self.root)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default())
    }
}

/// Cuts an answer to `max` characters at a line, saying so.
fn fit(mut s: String, max: usize) -> String {
    if s.chars().count() <= max {
        return s;
    }
    let mut cut = s
        .char_indices()
        .nth(max.saturating_sub(80))
        .map_or(s.len(), |(i, _)| i);
    if let Some(nl) = s[..cut].rfind('\n') {
        cut = nl;
    }
    let left = s[cut..].lines().count();
    s.truncate(cut);
    let _ = write!(
        s,
        "\n[… {left} more lines cut to fit {max} characters: ask a narrower question]"
    );
    s
}

/// A definition that uses another (none: top-level code of `file`), the
/// lines it does so on, and how sure the edge is.
type UserRow = (Option<DefId>, u32, Vec<u32>, Certainty);
/// A [`UserRow`] with how many calls away it is (1: a direct user).
type Dependent = (usize, Option<DefId>, u32, Vec<u32>, Certainty);

struct Answer<'g, 'a> {
    g: &'g Graph<'a>,
    root: &'g Path,
    skipped: &'g super::Skipped,
}

impl Answer<'_, '_> {
    /// `path:line-end kind Container.name`.
    fn head(&self, id: DefId) -> String {
        let d = self.g.def(id);
        let name = match &d.container {
            Some(c) => format!("{c}.{}", d.name),
            None => d.name.clone(),
        };
        let test = if self.g.is_test(id) && d.kind != Kind::Test {
            " (test code)"
        } else {
            ""
        };
        format!(
            "{}:{}-{} {} {name}{test}",
            self.g.path(id),
            d.line,
            d.end,
            d.kind.name()
        )
    }

    fn line(&self, id: DefId) -> String {
        let d = self.g.def(id);
        if d.sig.is_empty() || d.kind == Kind::Test {
            self.head(id)
        } else {
            format!("{} — {}", self.head(id), d.sig)
        }
    }

    /// The definitions a `name` (and `file`) means; those with a body
    /// before prototypes. An error names close names when none matches.
    fn targets(&self, name: &str, file: Option<&str>) -> Result<Vec<DefId>, String> {
        let name = name.trim();
        let (container, bare) = match name.rsplit_once("::").or_else(|| name.rsplit_once('.')) {
            Some((c, b)) if !c.is_empty() && !b.is_empty() => {
                (Some(c.rsplit(['.', ':']).next().unwrap_or(c)), b)
            }
            _ => (None, name),
        };
        let mut v: Vec<DefId> = self
            .g
            .named(bare)
            .iter()
            .copied()
            .filter(|id| container.is_none_or(|c| self.g.def(*id).container.as_deref() == Some(c)))
            .filter(|id| file.is_none_or(|f| in_file(self.g.path(*id), f)))
            .collect();
        if v.is_empty() {
            let lower = bare.to_lowercase();
            let close: BTreeSet<&str> = self
                .g
                .all()
                .map(|id| self.g.def(id).name.as_str())
                .filter(|n| n.to_lowercase().contains(&lower))
                .take(12)
                .collect();
            let scope = file.map_or(String::new(), |f| format!(" in {f}"));
            let skipped = file
                .and_then(|f| self.skipped_why(f))
                .map_or(String::new(), |why| {
                    format!(" ({f} was skipped: {why})", f = file.unwrap_or(""))
                });
            return Err(if close.is_empty() {
                format!(
                    "no definition named `{name}`{scope} in the index{skipped}; it may be a library's, or in a language the index does not parse (a text search finds it)"
                )
            } else {
                format!(
                    "no definition named `{name}`{scope} in the index{skipped}; close names: {}",
                    close.into_iter().collect::<Vec<_>>().join(", ")
                )
            });
        }
        v.sort_by_key(|id| {
            let d = self.g.def(*id);
            (d.kind == Kind::Prototype, self.g.is_test(*id), *id)
        });
        Ok(v)
    }

    /// Why a file the agent named is not in the index, if it was skipped.
    fn skipped_why(&self, f: &str) -> Option<&'static str> {
        let s = self.skipped;
        let has = |v: &[String]| v.iter().any(|x| x == f);
        if has(&s.huge) {
            Some("over 1 MiB, taken for generated code")
        } else if has(&s.binary) {
            Some("a binary file")
        } else if has(&s.symlinks) {
            Some("a symlink, never followed")
        } else if has(&s.over_limit) {
            Some("past the index's limits on files and bytes")
        } else {
            None
        }
    }

    fn several(&self, v: &[DefId], name: &str) -> String {
        if v.len() > 1 {
            let shown = if v.len() > 3 {
                " (the answer below is for the first 3)"
            } else {
                ""
            };
            format!(
                "{} definitions named `{name}`{shown}; pass `file` to pick one:\n{}\n\n",
                v.len(),
                v.iter()
                    .take(LIST_MAX)
                    .map(|id| format!("  {}", self.head(*id)))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        } else {
            String::new()
        }
    }

    fn find(&self, query: &str, kind: Option<&str>, file: Option<&str>) -> Result<String, String> {
        let kind = match kind {
            Some(k) => Some(Kind::parse(k).ok_or_else(|| {
                format!("`{k}` is not a kind; use function, method, class, type, const, macro, module, prototype or test")
            })?),
            None => None,
        };
        // `test` is test code of any kind: a `#[test]`, a `test_x`, an
        // `it("…")`.
        let keep = |id: &DefId| {
            kind.is_none_or(|k| match k {
                Kind::Test => self.g.is_test(*id),
                k => self.g.def(*id).kind == k,
            }) && file.is_none_or(|f| in_file(self.g.path(*id), f))
        };
        // A regex by its metacharacters, or a `.` that names no
        // `Type.name` (`.`, `a.c`).
        let metachar = query.chars().any(|c| "^$*+?[](){}|\\".contains(c));
        let regex = metachar
            || (query.contains('.') && !query.contains("::") && self.targets(query, file).is_err());
        let mut partial = false;
        let mut v: Vec<DefId> = if regex {
            let re = regex::Regex::new(query)
                .map_err(|e| format!("`{query}` is not a valid regex: {e}"))?;
            self.g
                .all()
                .filter(|id| re.is_match(&self.g.def(*id).name))
                .filter(keep)
                .collect()
        } else {
            match self.targets(query, file) {
                Ok(v) => v.into_iter().filter(keep).collect(),
                Err(_) => {
                    // No exact name: the names that contain it, said so.
                    partial = true;
                    let lower = query.to_lowercase();
                    self.g
                        .all()
                        .filter(|id| self.g.def(*id).name.to_lowercase().contains(&lower))
                        .filter(keep)
                        .collect()
                }
            }
        };
        if v.is_empty() {
            return Err(format!(
                "no definition matches `{query}`; try a shorter part of the name or a regex"
            ));
        }
        v.sort_by_key(|id| (self.g.is_test(*id), self.g.path(*id), self.g.def(*id).line));
        let total = v.len();
        let mut out = if partial {
            format!("no definition is named `{query}`; {total} have names containing it:\n")
        } else {
            format!("{total} definitions match `{query}`:\n")
        };
        for id in v.iter().take(LIST_MAX) {
            let _ = writeln!(out, "{}", self.line(*id));
        }
        more(&mut out, total, LIST_MAX);
        Ok(out)
    }

    /// The lines of a file (as it is now).
    fn lines(&self, path: &str) -> Vec<String> {
        crate::atomic::read_capped(&self.root.join(path), 4 << 20)
            .map(|(b, _)| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The comment right above a definition (doc comments, `#` lines,
    /// a `/** */` block), as its documentation.
    fn doc(&self, lines: &[String], start: u32) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut i = start as usize - 1;
        while i > 0 {
            let l = lines.get(i - 1).map_or("", |s| s.trim_start());
            let comment = ["//", "#", "/*", "*", "--"]
                .iter()
                .any(|p| l.starts_with(p))
                && !l.starts_with("#include")
                && !l.starts_with("#define");
            if !comment || out.len() >= 30 {
                break;
            }
            out.push((i, lines[i - 1].clone()));
            i -= 1;
        }
        out.reverse();
        out
    }

    /// A definition's source with line numbers, its doc above it; at most
    /// `max_lines` lines.
    fn source(&self, id: DefId, max_lines: usize) -> String {
        let d = self.g.def(id);
        let path = self.g.path(id);
        let lines = self.lines(path);
        let mut out = String::new();
        for (n, l) in self.doc(&lines, d.line) {
            let _ = writeln!(out, "{n:>5}| {l}");
        }
        let last = (d.end as usize).min(lines.len());
        let shown = last.min(d.line as usize + max_lines - 1);
        for n in d.line as usize..=shown {
            let _ = writeln!(out, "{n:>5}| {}", lines[n - 1]);
        }
        if shown < last {
            let _ = writeln!(
                out,
                "  [… {} more lines: read {path} from line {}]",
                last - shown,
                shown + 1
            );
        }
        out
    }

    fn symbol(&self, name: &str, file: Option<&str>) -> Result<String, String> {
        let v = self.targets(name, file)?;
        let mut out = self.several(&v, name);
        for id in v.iter().take(3) {
            let _ = writeln!(
                out,
                "{}\n{}",
                self.line(*id),
                self.source(*id, SOURCE_LINES)
            );
        }
        Ok(out)
    }

    /// Who uses a definition: each using definition once, with its lines.
    fn users(&self, id: DefId, calls_only: bool) -> Vec<UserRow> {
        let mut by: BTreeMap<(u32, Option<u32>), (Vec<u32>, Certainty)> = BTreeMap::new();
        for u in self.g.uses_of(id) {
            if calls_only && !u.call {
                continue;
            }
            let e = by
                .entry((u.file, u.within))
                .or_insert((Vec::new(), u.certainty));
            e.0.push(u.line);
            if u.certainty == Certainty::Resolved {
                e.1 = Certainty::Resolved;
            }
        }
        by.into_iter()
            .map(|((file, within), (mut lines, c))| {
                lines.sort_unstable();
                lines.dedup();
                (within.map(|w| DefId { file, def: w }), file, lines, c)
            })
            .collect()
    }

    fn user_line(&self, who: Option<DefId>, file: u32, lines: &[u32], c: Certainty) -> String {
        let mut at = lines
            .iter()
            .take(6)
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        if lines.len() > 6 {
            let _ = write!(at, " and {} more", lines.len() - 6);
        }
        match who {
            Some(w) => format!("{} — at line {at} [{}]", self.head(w), c.label()),
            None => format!(
                "{}:{} top-level code [{}]",
                self.g.files[file as usize].0,
                at,
                c.label()
            ),
        }
    }

    fn callers(&self, name: &str, file: Option<&str>, depth: usize) -> Result<String, String> {
        let v = self.targets(name, file)?;
        let mut out = self.several(&v, name);
        let mut shown = 0;
        for id in v.iter().take(3) {
            let _ = writeln!(out, "Callers of {}:", self.head(*id));
            let mut seen = BTreeSet::from([*id]);
            self.callers_of(*id, 1, depth, &mut seen, &mut out, &mut shown);
        }
        Ok(out)
    }

    fn callers_of(
        &self,
        id: DefId,
        level: usize,
        depth: usize,
        seen: &mut BTreeSet<DefId>,
        out: &mut String,
        shown: &mut usize,
    ) {
        let users = self.users(id, true);
        if users.is_empty() && level == 1 {
            let _ = writeln!(out, "  none found in the index");
        }
        for (who, file, lines, c) in users {
            if *shown >= LIST_MAX * 2 {
                let _ = writeln!(out, "{}[… more callers cut]", "  ".repeat(level));
                return;
            }
            *shown += 1;
            let _ = writeln!(
                out,
                "{}{}",
                "  ".repeat(level),
                self.user_line(who, file, &lines, c)
            );
            if let Some(w) = who
                && level < depth
                && seen.insert(w)
            {
                self.callers_of(w, level + 1, depth, seen, out, shown);
            }
        }
    }

    fn callees(&self, name: &str, file: Option<&str>, depth: usize) -> Result<String, String> {
        let v = self.targets(name, file)?;
        let mut out = self.several(&v, name);
        for id in v.iter().take(3) {
            let _ = writeln!(out, "Calls made by {}:", self.head(*id));
            let mut seen = BTreeSet::from([*id]);
            self.callees_of(*id, 1, depth, &mut seen, &mut out);
        }
        Ok(out)
    }

    fn callees_of(
        &self,
        id: DefId,
        level: usize,
        depth: usize,
        seen: &mut BTreeSet<DefId>,
        out: &mut String,
    ) {
        let pad = "  ".repeat(level);
        let mut outside = BTreeSet::new();
        let mut done = BTreeSet::new();
        let calls = self.g.calls_of(id);
        if calls.is_empty() {
            let _ = writeln!(out, "{pad}no calls");
        }
        for (r, to, c) in calls {
            if to.is_empty() {
                outside.insert(r.name.as_str());
                continue;
            }
            if !done.insert(r.name.as_str()) {
                continue;
            }
            for t in to.iter().take(4) {
                let _ = writeln!(
                    out,
                    "{pad}{} (line {}) → {} [{}]",
                    r.name,
                    r.line,
                    self.head(*t),
                    c.label()
                );
                if level < depth && seen.insert(*t) {
                    self.callees_of(*t, level + 1, depth, seen, out);
                }
            }
            if to.len() > 4 {
                let _ = writeln!(out, "{pad}  [… {} more namesakes]", to.len() - 4);
            }
        }
        if !outside.is_empty() {
            let _ = writeln!(
                out,
                "{pad}not in the index (library or builtin): {}",
                outside.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }

    /// Everything that depends on a definition up to three levels, ranked
    /// by level, then resolved before name-matched, code before tests.
    fn dependents(&self, id: DefId) -> Vec<Dependent> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::from([id]);
        let mut frontier = vec![id];
        for level in 1..=3 {
            let mut next = Vec::new();
            // Bounded: a name used everywhere (`get`, `new`) would
            // otherwise make the walk the whole repository's.
            frontier.truncate(DEPENDENTS_FRONTIER);
            for f in &frontier {
                // Beyond the first level only calls carry the change on.
                for (who, file, lines, c) in self.users(*f, level > 1) {
                    if let Some(w) = who {
                        if !seen.insert(w) {
                            continue;
                        }
                        next.push(w);
                    }
                    out.push((level, who, file, lines, c));
                }
            }
            frontier = next;
        }
        out.sort_by_key(|(level, who, file, _, c)| {
            (
                *level,
                *c != Certainty::Resolved,
                who.is_some_and(|w| self.g.is_test(w)),
                *file,
            )
        });
        out
    }

    fn impact(&self, name: &str, file: Option<&str>) -> Result<String, String> {
        let v = self.targets(name, file)?;
        let mut out = self.several(&v, name);
        let id = v[0];
        let deps = self.dependents(id);
        let _ = writeln!(out, "Impact of changing {}:", self.head(id));
        let direct: Vec<_> = deps.iter().filter(|d| d.0 == 1).collect();
        let _ = writeln!(out, "Direct users ({}):", direct.len());
        for (_, who, file, lines, c) in direct.iter().take(LIST_MAX) {
            let _ = writeln!(out, "  {}", self.user_line(*who, *file, lines, *c));
        }
        more(&mut out, direct.len(), LIST_MAX);
        let indirect: Vec<_> = deps.iter().filter(|d| d.0 > 1).collect();
        if !indirect.is_empty() {
            let _ = writeln!(out, "Indirect, through calls ({}):", indirect.len());
            for (level, who, file, lines, c) in indirect.iter().take(LIST_MAX) {
                let _ = writeln!(
                    out,
                    "  level {level}: {}",
                    self.user_line(*who, *file, lines, *c)
                );
            }
            more(&mut out, indirect.len(), LIST_MAX);
        }
        let tests: BTreeSet<String> = deps
            .iter()
            .filter_map(|d| d.1)
            .filter(|w| self.g.is_test(*w))
            .map(|w| self.head(w))
            .collect();
        let _ = writeln!(out, "Tests that reach it ({}):", tests.len());
        for t in tests.iter().take(LIST_MAX) {
            let _ = writeln!(out, "  {t}");
        }
        more(&mut out, tests.len(), LIST_MAX);
        let mut files: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &deps {
            *files.entry(self.g.files[d.2 as usize].0).or_default() += 1;
        }
        let _ = writeln!(
            out,
            "Files ({}): {}",
            files.len(),
            files
                .iter()
                .map(|(f, n)| format!("{f} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(out)
    }

    fn explore(&self, name: &str, file: Option<&str>, budget: usize) -> Result<String, String> {
        let v = self.targets(name, file)?;
        let id = v[0];
        let d = self.g.def(id);
        let mut head = format!("{}\n", self.line(id));
        if v.len() > 1 {
            let _ = writeln!(
                head,
                "({} more definitions named `{}`: {}; pass `file` to pick another)",
                v.len() - 1,
                d.name,
                v[1..]
                    .iter()
                    .take(6)
                    .map(|i| format!("{}:{}", self.g.path(*i), self.g.def(*i).line))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        // Callers, callees and tests first: they are short and they are
        // what grep cannot give; the source takes what is left.
        let mut rel = String::new();
        let users = self.users(id, false);
        let calls: Vec<_> = users
            .iter()
            .filter(|u| u.0.is_none_or(|w| w != id))
            .collect();
        let code: Vec<_> = calls
            .iter()
            .filter(|u| !u.0.is_some_and(|w| self.g.is_test(w)))
            .collect();
        let _ = writeln!(
            rel,
            "\nUsed by ({}{}):",
            code.len(),
            match calls.len() - code.len() {
                0 => String::new(),
                n => format!(", and {n} tests below"),
            }
        );
        for (who, file, lines, c) in code.iter().take(15) {
            let _ = writeln!(rel, "  {}", self.user_line(*who, *file, lines, *c));
        }
        more(&mut rel, code.len(), 15);
        let mut callees = String::new();
        self.callees_of(id, 1, 1, &mut BTreeSet::from([id]), &mut callees);
        let _ = write!(rel, "\nCalls:\n{callees}");
        // Tests: those that use it, and those that use a direct user.
        let mut tests: BTreeMap<DefId, &str> = BTreeMap::new();
        for (who, ..) in users.iter().take(DEPENDENTS_FRONTIER) {
            if let Some(w) = who {
                if self.g.is_test(*w) {
                    tests.insert(*w, "directly");
                } else {
                    for (t, ..) in self.users(*w, true) {
                        if let Some(t) = t.filter(|t| self.g.is_test(*t)) {
                            tests.entry(t).or_insert("through a caller");
                        }
                    }
                }
            }
        }
        let _ = writeln!(rel, "\nTests ({}):", tests.len());
        let mut tests: Vec<_> = tests.into_iter().collect();
        tests.sort_by_key(|(t, how)| (*how != "directly", self.g.path(*t), self.g.def(*t).line));
        for (t, how) in tests.iter().take(15) {
            let _ = writeln!(rel, "  {} ({how})", self.head(*t));
        }
        let room = budget.saturating_sub(head.len() + rel.len() + 120);
        let lines = (room / 60).clamp(10, SOURCE_LINES);
        let mut src = self.source(id, lines);
        if src.len() > room {
            src = fit(src, room.max(400));
        }
        Ok(fit(format!("{head}{src}{rel}"), budget))
    }
}

fn in_file(path: &str, f: &str) -> bool {
    let f = f.trim_end_matches('/');
    f.is_empty() || f == "." || path == f || path.starts_with(&format!("{f}/"))
}

fn more(out: &mut String, total: usize, shown: usize) {
    if total > shown {
        let _ = writeln!(out, "  [… {} more]", total - shown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explorer(files: &[(&str, &str)]) -> (tempfile::TempDir, Explorer) {
        let d = crate::code_index::tree(files);
        let e = Explorer::open(d.path(), None, Limits::default());
        (d, e)
    }

    const LIB: &str = "/// A version.\npub struct Version { major: u64 }\n\nimpl Version {\n    /// Parses `s`.\n    pub fn parse(s: &str) -> Version {\n        let major = parse_major(s);\n        Version { major }\n    }\n}\n\nfn parse_major(s: &str) -> u64 {\n    s.len() as u64\n}\n";
    const TESTS: &str =
        "use crate::Version;\n#[test]\nfn parses_one() {\n    Version::parse(\"1\");\n}\n";

    #[test]
    fn each_tool_answers_with_locations_and_certainty() {
        let (_d, mut e) = explorer(&[("src/lib.rs", LIB), ("tests/parse.rs", TESTS)]);
        let f = e.call(FIND, &json!({"query": "parse"})).unwrap();
        assert!(
            f.contains("src/lib.rs:6-9 method Version.parse — pub fn parse(s: &str) -> Version"),
            "{f}"
        );
        let s = e.call(SYMBOL, &json!({"name": "Version::parse"})).unwrap();
        assert!(s.contains("    5|     /// Parses `s`."), "{s}");
        assert!(
            s.contains("    7|         let major = parse_major(s);"),
            "{s}"
        );
        let c = e
            .call(CALLERS, &json!({"name": "parse_major", "depth": 2}))
            .unwrap();
        assert!(
            c.contains("  src/lib.rs:6-9 method Version.parse — at line 7 [resolved]"),
            "{c}"
        );
        assert!(
            c.contains(
                "    tests/parse.rs:3-5 function parses_one (test code) — at line 4 [resolved]"
            ),
            "{c}"
        );
        let k = e.call(CALLEES, &json!({"name": "parse"})).unwrap();
        assert!(
            k.contains("parse_major (line 7) → src/lib.rs:12-14 function parse_major [resolved]"),
            "{k}"
        );
        let i = e.call(IMPACT, &json!({"name": "parse_major"})).unwrap();
        assert!(i.contains("Direct users (1):"), "{i}");
        assert!(
            i.contains("level 2: tests/parse.rs:3-5 function parses_one"),
            "{i}"
        );
        assert!(i.contains("Tests that reach it (1):"), "{i}");
        let x = e.call(EXPLORE, &json!({"name": "parse_major"})).unwrap();
        for want in [
            "src/lib.rs:12-14 function parse_major — fn parse_major(s: &str) -> u64",
            "   13|     s.len() as u64",
            "Used by (1):",
            "not in the index (library or builtin): len",
            "tests/parse.rs:3-5 function parses_one (test code) (through a caller)",
        ] {
            assert!(x.contains(want), "{want} in\n{x}");
        }
    }

    #[test]
    fn bad_arguments_and_paths_outside_are_refused_as_the_file_tools_refuse_them() {
        let (_d, mut e) = explorer(&[("src/lib.rs", LIB)]);
        let out = e.call(SYMBOL, &json!({"name": "parse", "file": "../etc/passwd"}));
        assert!(out.unwrap_err().contains("uses `..`"));
        let out = e.call(SYMBOL, &json!({"name": "parse", "file": "/etc/passwd"}));
        assert!(out.unwrap_err().contains("absolute path"));
        assert!(
            e.call(SYMBOL, &json!({}))
                .unwrap_err()
                .contains("needs `name`")
        );
        assert!(
            e.call("grep", &json!({}))
                .unwrap_err()
                .contains("no index tool")
        );
        let none = e.call(SYMBOL, &json!({"name": "Parse"})).unwrap_err();
        assert!(none.contains("close names: parse, parse_major"), "{none}");
        assert!(
            e.call(FIND, &json!({"query": "(("}))
                .unwrap_err()
                .contains("not a valid regex")
        );
    }

    #[test]
    fn the_step_s_edits_are_seen_by_the_next_call() {
        let (d, mut e) = explorer(&[("src/lib.rs", LIB)]);
        std::fs::write(
            d.path().join("src/extra.rs"),
            "fn again() { parse_major(\"x\"); }\n",
        )
        .unwrap();
        let c = e.call(CALLERS, &json!({"name": "parse_major"})).unwrap();
        assert!(c.contains("src/extra.rs:1-1 function again"), "{c}");
    }

    #[test]
    fn answers_fit_their_budget() {
        let long: String = (0..400).map(|i| format!("    let x{i} = {i};\n")).collect();
        let src = format!("fn big() {{\n{long}}}\nfn user() {{ big(); }}\n");
        let (_d, mut e) = explorer(&[("src/lib.rs", &src)]);
        let x = e
            .call(EXPLORE, &json!({"name": "big", "budget": 2000}))
            .unwrap();
        assert!(x.chars().count() <= 2000, "{}", x.len());
        assert!(x.contains("Used by (1):"), "{x}");
        let s = e.call(SYMBOL, &json!({"name": "big"})).unwrap();
        assert!(
            s.contains("more lines: read src/lib.rs from line 151"),
            "{s}"
        );
    }
}
