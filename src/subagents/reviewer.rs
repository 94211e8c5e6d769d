//! The code-reviewer: an independent look at a kept change before it is
//! committed (REVIEW dispatches every reviewer the keep triggers, in
//! parallel; `phases/review.rs`).
//!
//! A command or llm reviewer gets only the diff and the rule files under its
//! definition's prompt, never the plan, the hypothesis or the agent's
//! output, and answers approve or block with findings. The builtin
//! reviewer is rules over the change, no model. Each rule reads the typed change (base to the candidate as measured) and
//! what the Brief says; each finding names its file, line and rule. The
//! rules are the ways a keep can win the benchmark without improving the
//! program that need no judgement to see: a weakened or skipped test, an
//! edit to what measures it, a secret, a debug print, a protected file, a
//! change too big to review. They run on every keep, whatever else reviews.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::Definition;
use super::definition::SubDriver;
use super::dispatch::{self, Answer, Job};
use super::sees::{self, Parts};
use crate::brief::Brief;
use crate::driver::{MainAgent, Step};
use crate::error::{Error, Result};
use crate::model::{Change, FileChange, FileStatus, Finding, GuardResult, ReviewVerdict};
use crate::workspace::Workspace;

/// The reviewers a keep of `lines` changed lines triggers, and the builtin
/// rules (`floor`) when none of them is builtin: they run on every keep.
pub(crate) fn due<'r>(
    roster: &'r super::Roster,
    floor: Option<&'r Definition>,
    lines: usize,
) -> Vec<&'r Definition> {
    let mut defs: Vec<_> = roster
        .with_role(crate::model::Role::Review)
        .filter(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(lines)))
        .collect();
    if !defs.iter().any(|d| d.driver == SubDriver::Builtin)
        && let Some(f) = floor
    {
        defs.push(f);
    }
    defs
}

/// What the reviewers `defs` may be shown: the diff, and the rule files as
/// the run's start commit has them when an agent reviewer sees `rules`.
pub(crate) fn context(
    t: &Step,
    ws: &Workspace,
    start: git2::Oid,
    defs: &[&Definition],
    change: &Change,
) -> Result<Parts> {
    use super::definition::Sees;
    let budget = t.config.defaults.prompt_budget;
    let mut parts = Parts::default();
    parts.add(Sees::Diff, sees::clip_patch(&change.patch, budget * 2 / 3));
    if defs
        .iter()
        .any(|d| d.driver != SubDriver::Builtin && d.sees.contains(&Sees::Rules))
    {
        let rules = sees::rules(
            ws,
            start,
            &t.config.review.rules,
            &t.brief.must_not_break,
            budget / 3,
        )?;
        parts.add(Sees::Rules, rules);
    }
    Ok(parts)
}

/// The reviewer `def` as a job of REVIEW: the builtin rules over `change`,
/// or an agent reading `dir` (the candidate, or the simplifier's copy) with
/// what its `sees` names of `parts`.
pub(crate) fn job<'a>(
    def: &'a Definition,
    t: &'a Step,
    main: &MainAgent,
    change: &'a Change,
    rules: &'a Context,
    parts: &'a Parts,
    dir: &'a Path,
) -> Job<'a> {
    let driver = def.driver_name(main.agent_name().as_deref());
    let work: dispatch::Work = match def.driver {
        SubDriver::Builtin => Box::new(move |_| {
            let (findings, suspicious) = review(change, rules);
            let blocks = findings.iter().any(|f| !f.advisory);
            Ok(Answer {
                verdict: Some(if blocks {
                    ReviewVerdict::Block
                } else {
                    ReviewVerdict::Approve
                }),
                body: serde_json::json!({
                    "changed_lines": change.changed_lines(),
                    "files": change.files.iter().map(|f| &f.path).collect::<Vec<_>>(),
                    "findings": &findings,
                }),
                findings,
                suspicious,
                ..Answer::default()
            })
        }),
        SubDriver::Command | SubDriver::Llm => {
            let prompt = sees::prompt(def, &parts.for_definition(def), dispatch::REVIEW_ANSWER);
            dispatch::agent_work(t, def, main, prompt, dir, dispatch::read_review)
        }
    };
    Job { def, driver, work }
}

/// The files the Brief's commands run or read ([`measurement_files`]), as
/// the run's start commit has them.
pub(crate) fn measurement_files_at(
    ws: &Workspace,
    start: git2::Oid,
    brief: &Brief,
) -> Result<Measuring> {
    let repo = ws.base_repo()?;
    let tree = repo
        .find_commit(start)
        .and_then(|c| c.tree())
        .map_err(|e| Error::git("reading the run's start commit", e))?;
    let read = |p: &str| -> Option<String> {
        let entry = tree.get_path(Path::new(p)).ok()?;
        let blob = repo.find_blob(entry.id()).ok()?;
        String::from_utf8(blob.content().to_vec()).ok()
    };
    Ok(measurement_files(brief, &read))
}

/// What the builtin rules read besides the change.
pub(crate) struct Context<'a> {
    pub brief: &'a Brief,
    pub guards: &'a [GuardResult],
    /// The files the metric, setup and guards run or read
    /// ([`measurement_files`], found as the run started: a keep earlier in
    /// the night cannot change what counts as part of the measurement).
    pub measuring: &'a Measuring,
    pub max_diff_lines: usize,
    /// Files a timed run of the candidate left for a later one, which no
    /// base run wrote ([`crate::model::RunWrites::carried`]).
    pub carried: &'a [String],
}

/// Lock files: generated, so they do not count toward the diff's size.
const LOCK_FILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "Gemfile.lock",
    "go.sum",
    "composer.lock",
];

/// Changed bytes beyond which a keep is too big to review, whatever its lines.
const MAX_DIFF_BYTES: usize = 256 * 1024;

/// An added line longer than this is generated or minified content.
const LONG_LINE: usize = 2000;

/// The builtin review: findings (any that is not advisory blocks) and
/// whether the change looks like it games the benchmark.
pub(crate) fn review(change: &Change, cx: &Context) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    for g in cx.guards.iter().filter(|g| !g.ok) {
        out.push(finding(
            "",
            None,
            "guards",
            format!("the guard `{}` did not pass", g.command),
        ));
    }
    let knobs_file = cx.brief.knobs_file.trim_start_matches("./");
    let counted = || {
        change.files.iter().filter(|f| {
            f.path != knobs_file
                && !LOCK_FILES.contains(
                    &Path::new(&f.path)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or(""),
                )
        })
    };
    let lines: usize = counted().map(|f| f.added.len() + f.removed.len()).sum();
    let bytes: usize = counted()
        .map(|f| {
            f.added
                .iter()
                .chain(&f.removed)
                .map(|(_, t)| t.len() + 1)
                .sum::<usize>()
        })
        .sum();
    if lines > cx.max_diff_lines || bytes > MAX_DIFF_BYTES {
        out.push(finding(
            "",
            None,
            "diff-size",
            format!(
                "{lines} changed lines ({} KiB), above the limit of {} lines (review.max_diff_lines) or {} KiB: a change this big cannot be reviewed as one surgical step",
                bytes / 1024,
                cx.max_diff_lines,
                MAX_DIFF_BYTES / 1024
            ),
        ));
    }
    let measuring = cx.measuring;
    let scope = &cx.brief.scope;
    for f in &change.files {
        // The knobs file is the runner's own: it writes it for every point.
        if f.path == knobs_file && f.old_path.is_none() {
            continue;
        }
        for p in f.paths() {
            path_rules(p, scope, measuring, &mut out);
        }
        let p = f.path.as_str();
        if is_test_config(p) {
            let mut c = finding(
                p,
                None,
                "test-config",
                "changes how the tests are collected or run".into(),
            );
            c.advisory = true;
            out.push(c);
        }
        if f.binary {
            let mut b = finding(p, None, "binary", "a binary file changed: no rule can read it (a precomputed answer would look like this)".into());
            b.advisory = true;
            out.push(b);
            continue;
        }
        if let Some((n, _)) = f.added.iter().find(|(_, t)| t.chars().count() > LONG_LINE) {
            let mut l = finding(
                p,
                Some(*n),
                "long-line",
                format!(
                    "adds a line of more than {LONG_LINE} characters (generated or minified content)"
                ),
            );
            l.advisory = true;
            out.push(l);
        }
        added_line_rules(f, &mut out);
        test_rules(f, &mut out);
    }
    for p in cx.carried {
        out.push(finding(
            p,
            None,
            "cache-between-runs",
            "a timed run of the candidate wrote this file and a later run of it found it in place, which no run of the base did: a result kept between runs measures the cache, not the program (`metric.fresh_outputs: true` removes what each run creates)".into(),
        ));
    }
    let suspicious = out.iter().any(|f| {
        matches!(
            f.rule.as_str(),
            "cache-between-runs"
                | "measurement"
                | "protected"
                | "test-deleted"
                | "test-skipped"
                | "test-weakened"
                | "test-config"
                | "binary"
                | "long-line"
        )
    });
    (out, suspicious)
}

/// The rules about where a change is: protected, outside the scope, part
/// of the measurement.
fn path_rules(p: &str, scope: &crate::brief::Scope, measuring: &Measuring, out: &mut Vec<Finding>) {
    if let Some(own) = crate::brief::own_root(p) {
        // Reached only when scope.allow names it: still never kept unseen.
        out.push(finding(
            p,
            None,
            "ooda-config",
            format!(
                "changes ooda's own {own}: merged, it changes how the next night is run and judged; a human must make this change, not a kept iteration"
            ),
        ));
        return;
    }
    if scope.protects(p) {
        out.push(finding(
            p,
            None,
            "protected",
            "a protected file changed (scope.protect)".into(),
        ));
        return;
    }
    if !scope.allows(p) {
        out.push(finding(
            p,
            None,
            "scope",
            "changed outside scope.allow".into(),
        ));
    }
    if measuring.data.contains(p) {
        // Sourced or given as data: the workload, not the program. Only an
        // allow pattern that is this very path opens it.
        let named = scope.allow.iter().any(|a| a.trim_start_matches("./") == p);
        if !named {
            out.push(finding(
                p,
                None,
                "measurement",
                "the metric, setup or a guard reads this file (sourced, or given to it as data) rather than running it as the program under test: a change to it changes the measurement, not the program".into(),
            ));
        }
    } else if measuring.contains(p) {
        // A file the Brief's allow list names is the program under test
        // (`python3 solve.py`); with no allow list it is only flagged.
        let explicitly_allowed = !scope.allow.is_empty() && scope.allows(p);
        if !explicitly_allowed {
            let mut f = finding(
                p,
                None,
                "measurement",
                "this file is run or read by the metric, setup or a guard: a change to it can change the measurement rather than the program".into(),
            );
            f.advisory = scope.allow.is_empty();
            out.push(f);
        }
    }
}

fn finding(file: &str, line: Option<u32>, rule: &str, why: String) -> Finding {
    Finding {
        file: file.to_string(),
        line,
        rule: rule.to_string(),
        why,
        advisory: false,
    }
}

static TODO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(TODO|FIXME|XXX|HACK)\b").expect("valid"));

/// A print whose text says it is for debugging, in any language.
static DEBUG_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(print|println!?|eprintln!|printf|fprintf|puts|echo|console\.\w+|log\.\w+)\s*\(?\s*(stderr\s*,\s*)?["'`]\s*\[?(debug|dbg|xxx)\s*[:\]=]"#)
        .expect("valid")
});

static SET_X: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*set\s+-x\s*$").expect("valid"));

/// Debug statements per language: (pattern, blocks). Those that can be a
/// program's real output (`console.log` in a CLI) are advisory.
fn debug_patterns(ext: &str) -> &'static [(&'static str, bool)] {
    match ext {
        "rs" => &[("dbg!(", true)],
        "py" => &[
            ("breakpoint()", true),
            ("pdb.set_trace(", true),
            ("import pdb", true),
            ("import ipdb", true),
            ("ipdb.set_trace(", true),
        ],
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "vue" | "svelte" => &[
            ("debugger;", true),
            ("console.log(", false),
            ("console.debug(", false),
        ],
        "go" => &[("spew.Dump(", true), ("pp.Println(", true)],
        "rb" => &[
            ("binding.pry", true),
            ("byebug", true),
            ("binding.irb", true),
        ],
        "java" | "kt" => &[("printStackTrace()", false), ("System.out.println(", false)],
        "php" => &[("var_dump(", true), ("dd(", true), ("print_r(", false)],
        _ => &[],
    }
}

/// Where `pattern` occurs in `text` as a name of its own (not the tail of
/// another identifier: `dd(` is not in `$this->add(`).
fn has_call(text: &str, pattern: &str) -> bool {
    text.match_indices(pattern).any(|(i, _)| {
        !pattern.starts_with(|c: char| c.is_alphanumeric() || c == '_')
            || !text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
    })
}

/// The code of a line: without a leading `/* … */` and empty when the line
/// is a comment.
fn code_of(line: &str) -> &str {
    let mut t = line.trim_start();
    while let Some(rest) = t.strip_prefix("/*") {
        match rest.find("*/") {
            Some(end) => t = rest[end + 2..].trim_start(),
            None => return "",
        }
    }
    let comment = t.starts_with("//")
        || t.starts_with("--")
        || t == "*"
        || t.starts_with("* ")
        || t.starts_with("*/")
        || (t.starts_with('#')
            && !t.starts_with("#[")
            && !t.starts_with("#!")
            && !t.starts_with("#include"));
    if comment { "" } else { t }
}

fn added_line_rules(f: &FileChange, out: &mut Vec<Finding>) {
    let ext = Path::new(&f.path)
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let patterns = debug_patterns(&ext);
    // A line that was there before (moved, re-indented) is not new.
    let removed: std::collections::HashSet<&str> =
        f.removed.iter().map(|(_, t)| t.trim()).collect();
    let mut secret_reported = false;
    for (n, text) in &f.added {
        if removed.contains(text.trim()) {
            continue;
        }
        let line = Some(*n);
        if let Some(m) = TODO.find(text) {
            out.push(finding(
                &f.path,
                line,
                "todo",
                format!("adds a `{}` note", m.as_str()),
            ));
        }
        let code = code_of(text);
        if let Some((p, blocks)) = patterns.iter().find(|(p, _)| has_call(code, p)) {
            let mut d = finding(
                &f.path,
                line,
                "debug-print",
                format!("adds a debug statement `{p}`"),
            );
            d.advisory = !blocks;
            out.push(d);
        } else if matches!(ext.as_str(), "sh" | "bash") && SET_X.is_match(code) {
            out.push(finding(
                &f.path,
                line,
                "debug-print",
                "adds `set -x` (traces every command)".into(),
            ));
        } else if !code.is_empty() && DEBUG_TEXT.is_match(code) {
            let mut d = finding(
                &f.path,
                line,
                "debug-print",
                "adds a print labelled as debugging".into(),
            );
            d.advisory = true;
            out.push(d);
        }
        if !secret_reported && crate::text::redact::adds_secret(text) {
            secret_reported = true;
            out.push(finding(
                &f.path,
                line,
                "secret",
                "adds what looks like a secret (a key, a token, a password)".into(),
            ));
        }
    }
}

/// A test file by its path, in the conventions of the common test runners.
fn is_test_file(path: &str) -> bool {
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_test_dir = p.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("tests" | "test" | "spec" | "__tests__" | "testing")
        )
    });
    let stem = name.split('.').next().unwrap_or("");
    in_test_dir
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Files that decide which tests run and how.
fn is_test_config(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    matches!(
        name,
        "pytest.ini"
            | "conftest.py"
            | "tox.ini"
            | "setup.cfg"
            | ".mocharc.json"
            | ".mocharc.yml"
            | "karma.conf.js"
            | "phpunit.xml"
            | ".nycrc"
    ) || name.starts_with("jest.config.")
        || name.starts_with("vitest.config.")
}

/// An assertion: not `.expect(` (a Rust method), not the word "should".
static ASSERTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\bassert\w*!?|(^|[^.\w])expect\s*\(|\brequire\.\w+\s*\(|\bt\.(Error|Errorf|Fatal|Fatalf|Fail)\b|\bself\.assert\w*)")
        .expect("valid")
});

/// An assertion that can no longer fail.
static VACUOUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\bassert\s*\(?\s*True\s*\)?\s*$|\bassert!\s*\(\s*true\s*\)|\bexpect\s*\(\s*true\s*\)\s*\.\s*toBe\s*\(\s*true\s*\)|\bassertTrue\s*\(\s*true\s*\))")
        .expect("valid")
});

static SKIP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(#\[ignore\b|#\[cfg\(any\(\)\)\]|@pytest\.mark\.(skip|xfail)|@unittest\.skip|pytest\.skip\(|\b(it|describe|test)\.skip\(|\bx(it|describe|test)\(|\bt\.Skip(Now|f)?\(|@Disabled\b|@Ignore\b)")
        .expect("valid")
});

static TEST_ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(#\[(tokio::)?test\b|^\s*def test_\w*|^\s*func Test\w*|\b(it|test)\s*\(\s*['`])")
        .expect("valid")
});

fn test_rules(f: &FileChange, out: &mut Vec<Finding>) {
    let test_file = is_test_file(&f.path);
    // Rust keeps unit tests beside the code: a `.rs` file's tests count,
    // but only a test file's assertions (an `assert!` in a hot loop is not
    // a test).
    if !test_file && !f.path.ends_with(".rs") {
        return;
    }
    if test_file && f.status == FileStatus::Deleted {
        out.push(finding(
            &f.path,
            None,
            "test-deleted",
            "a test file was deleted".into(),
        ));
        return;
    }
    for (n, text) in &f.added {
        let code = code_of(text);
        if SKIP.is_match(code) {
            out.push(finding(
                &f.path,
                Some(*n),
                "test-skipped",
                "marks a test as skipped or expected to fail".into(),
            ));
        }
        if test_file && VACUOUS.is_match(code) {
            out.push(finding(
                &f.path,
                Some(*n),
                "test-weakened",
                "adds an assertion that cannot fail".into(),
            ));
        }
    }
    let count = |lines: &[(u32, String)], re: &Regex| {
        lines
            .iter()
            .filter(|(_, t)| re.is_match(code_of(t)))
            .count()
    };
    let (tests_removed, tests_added) = (count(&f.removed, &TEST_ATTR), count(&f.added, &TEST_ATTR));
    if tests_removed > tests_added {
        let at = f
            .removed
            .iter()
            .find(|(_, t)| TEST_ATTR.is_match(t))
            .map(|(n, _)| *n);
        out.push(finding(
            &f.path,
            at,
            "test-deleted",
            format!("removes {} test(s)", tests_removed - tests_added),
        ));
        return;
    }
    if !test_file {
        return;
    }
    let (asserts_removed, asserts_added) =
        (count(&f.removed, &ASSERTION), count(&f.added, &ASSERTION));
    if asserts_removed > asserts_added {
        let at = f
            .removed
            .iter()
            .find(|(_, t)| ASSERTION.is_match(t))
            .map(|(n, _)| *n);
        out.push(finding(
            &f.path,
            at,
            "test-weakened",
            format!(
                "removes {} assertion(s) more than it adds: the tests check less than before",
                asserts_removed - asserts_added
            ),
        ));
    }
}

/// The repository files the metric, setup and guard commands run or read,
/// where that is known: each word of a command that names a file of the
/// repository as the run started, and the words of that file (one level: a
/// `bench.sh` that runs `bench/run.py` on `data/input.txt` names all three).
/// Found without running anything.
pub(crate) struct Measuring {
    /// Every such file.
    pub all: BTreeSet<String>,
    /// Those only read, never run as a program: sourced (`. params.sh`),
    /// given as an argument (`python3 run.py data/input.txt`), redirected
    /// in. Not the code under test, whatever glob allows them.
    pub data: BTreeSet<String>,
}

impl Measuring {
    pub(crate) fn contains(&self, p: &str) -> bool {
        self.all.contains(p)
    }
}

pub(crate) fn measurement_files(brief: &Brief, read: &dyn Fn(&str) -> Option<String>) -> Measuring {
    let m = &brief.metric;
    let commands: Vec<&str> = std::iter::once(m.command.as_str())
        .chain(m.setup.as_deref())
        .chain(brief.guards.iter().map(String::as_str))
        .collect();
    let mut all = BTreeSet::new();
    let mut runs = BTreeSet::new();
    let mut data = BTreeSet::new();
    // An argument is data unless it is code (by its extension, or a
    // script with a `#!` line): `timeout 60 python3 solve.py`, `g++ x.cpp`.
    let mut note = |w: &str, how: Use, text: &str| {
        let is_data = match how {
            Use::Run => false,
            Use::Read => true,
            Use::Argument => !is_code(w) && !text.starts_with("#!"),
        };
        if is_data {
            data.insert(w.to_string());
        } else {
            runs.insert(w.to_string());
        }
    };
    for c in commands {
        for (w, how) in uses(c) {
            let Some(text) = read(&w) else { continue };
            note(&w, how, &text);
            if all.insert(w) && text.len() <= 256 * 1024 {
                for inner in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
                    for (w2, how2) in uses(inner) {
                        if let Some(t2) = read(&w2) {
                            note(&w2, how2, &t2);
                            all.insert(w2);
                        }
                    }
                }
            }
        }
    }
    // Run anywhere: the program under test, even where it is also read.
    data.retain(|d| !runs.contains(d));
    Measuring { all, data }
}

/// How a shell line uses a path it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// In command position, or the script after an interpreter.
    Run,
    /// After `.`/`source`, or redirected in (`< input`).
    Read,
    /// Any other argument: data, or a source file a compiler or a wrapper
    /// (`timeout 60 python3 x.py`, `g++ x.cpp`) takes; told apart by what
    /// the file is ([`measurement_files`]).
    Argument,
}

/// The path words of a shell line and how it uses each.
fn uses(line: &str) -> Vec<(String, Use)> {
    const INTERPRETERS: &[&str] = &[
        "sh", "bash", "dash", "zsh", "ksh", "python", "python2", "python3", "pypy", "pypy3",
        "node", "deno", "bun", "ruby", "perl", "php", "lua", "luajit", "julia", "Rscript", "tclsh",
        "awk", "gawk", "ts-node", "tsx",
    ];
    const PREFIXES: &[&str] = &[
        "then", "do", "else", "exec", "time", "nice", "env", "command", "nohup", "!",
    ];
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in line.chars() {
        if c.is_whitespace() || ";&|()<>`".contains(c) {
            if !cur.is_empty() {
                tokens.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let mut out = Vec::new();
    let (mut at_command, mut runs_next, mut reads_next) = (true, false, false);
    for t in &tokens {
        if matches!(t.as_str(), ";" | "&" | "|" | "(" | ")" | "`") {
            at_command = true;
            runs_next = false;
            reads_next = false;
            continue;
        }
        if t == "<" {
            reads_next = true;
            continue;
        }
        if t == ">" {
            continue;
        }
        let w = t.trim_matches(['"', '\'']);
        if reads_next {
            reads_next = false;
            if let Some(p) = path_word(w) {
                out.push((p, Use::Read));
            }
            continue;
        }
        if at_command {
            if PREFIXES.contains(&w) || (w.contains('=') && !w.starts_with('-')) {
                continue;
            }
            at_command = false;
            let name = w.rsplit('/').next().unwrap_or(w);
            if INTERPRETERS.contains(&name) || name.starts_with("python3.") {
                runs_next = true;
                continue;
            }
            if w == "." || w == "source" {
                reads_next = true;
                continue;
            }
            if let Some(p) = path_word(w) {
                out.push((p, Use::Run));
            }
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        if let Some(p) = path_word(w) {
            out.push((p, if runs_next { Use::Run } else { Use::Argument }));
            runs_next = false;
        }
    }
    out
}

/// Source code by its extension: what a wrapper or a compiler is given is
/// the program, not its data.
fn is_code(path: &str) -> bool {
    const CODE: &[&str] = &[
        "py", "pyx", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rb", "pl", "pm", "sh", "bash", "zsh",
        "c", "cc", "cpp", "cxx", "h", "hh", "hpp", "rs", "go", "java", "kt", "kts", "scala", "cs",
        "fs", "php", "lua", "jl", "r", "swift", "zig", "nim", "ml", "hs", "ex", "exs", "erl",
        "clj", "dart", "f90", "f", "m", "mm", "cu", "v",
    ];
    std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| CODE.contains(&e.to_ascii_lowercase().as_str()))
}

/// `w` as a path relative to the repository, when it can be one.
fn path_word(w: &str) -> Option<String> {
    let ok = !w.is_empty()
        && !w.starts_with('-')
        && !w.starts_with('/')
        && !w.contains("..")
        && !w.contains(['$', '=', ',', '*', '?']);
    ok.then(|| w.trim_start_matches("./").to_string())
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brief(dir: &Path) -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nagent: script\nguards: [python3 -m pytest tests]\nscope:\n  allow: [src/**, tests/**, web/**]\n  protect: [data/golden.txt]\n---\n# Goal\nx\n\n# Success\ny\n\n# Must not break\nz\n";
        let p = dir.join("b.md");
        std::fs::write(&p, text).unwrap();
        Brief::load_in(&p, &["script"]).unwrap()
    }

    fn file(path: &str, status: FileStatus, added: &[&str], removed: &[&str]) -> FileChange {
        let lines = |v: &[&str]| {
            v.iter()
                .enumerate()
                .map(|(i, t)| (i as u32 + 1, t.to_string()))
                .collect()
        };
        FileChange {
            path: path.into(),
            old_path: None,
            status,
            binary: false,
            added: lines(added),
            removed: lines(removed),
        }
    }

    /// The builtin review of `files` in a repository holding `disk`
    /// (path, text): its findings, whether it is suspicious, and what the
    /// Brief's commands were found to run and read there.
    fn review_in(disk: &[(&str, &str)], files: Vec<FileChange>) -> (Vec<Finding>, bool, Measuring) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in disk {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let b = brief(dir.path());
        let change = Change {
            files,
            patch: String::new(),
        };
        let root = dir.path().to_path_buf();
        let measuring =
            measurement_files(&b, &|p: &str| std::fs::read_to_string(root.join(p)).ok());
        let cx = Context {
            brief: &b,
            guards: &[],
            measuring: &measuring,
            max_diff_lines: 50,
            carried: &[],
        };
        let (f, s) = review(&change, &cx);
        (f, s, measuring)
    }

    fn rules_of(files: Vec<FileChange>) -> (Vec<String>, bool) {
        let disk = [
            ("bench.sh", "#!/bin/sh\npython3 src/run.py data/input.txt\n"),
            ("src/run.py", ""),
            ("data/input.txt", ""),
        ];
        let (f, s, _) = review_in(&disk, files);
        (f.iter().map(|f| f.rule.clone()).collect(), s)
    }

    #[test]
    fn what_the_benchmark_reads_is_told_from_what_it_runs() {
        let uses_of = |l: &str| uses(l);
        let s = |p: &str, u: Use| (p.to_string(), u);
        assert_eq!(
            uses_of("python3 src/run.py data/input.txt > out.txt"),
            [
                s("src/run.py", Use::Run),
                s("data/input.txt", Use::Argument),
                s("out.txt", Use::Argument)
            ]
        );
        assert_eq!(
            uses_of(". ./src/params.sh && ./bin/solve < src/case.txt"),
            [
                s("src/params.sh", Use::Read),
                s("bin/solve", Use::Run),
                s("src/case.txt", Use::Read)
            ]
        );
        assert_eq!(
            uses_of("N=3 exec node web/main.js --size \"$N\""),
            [s("web/main.js", Use::Run)]
        );
        // Wrappers and compilers: the source they are given is the program.
        for line in [
            "timeout 60 python3 src/solve.py",
            "g++ -O3 src/solve.cpp -o solve",
            "hyperfine 'python3 src/solve.py'",
            "uv run python src/solve.py",
        ] {
            assert!(
                uses_of(line)
                    .iter()
                    .any(|(p, u)| p.starts_with("src/solve.") && (*u == Use::Run || is_code(p))),
                "{line}"
            );
        }
        // A sourced workload inside a broad allow glob is still flagged.
        let disk = [
            (
                "bench.sh",
                "#!/bin/sh\n. src/params.sh\npython3 src/run.py\n",
            ),
            ("src/params.sh", "N=1000\n"),
            ("src/run.py", ""),
        ];
        let change = |path: &str| vec![file(path, FileStatus::Modified, &["N=1"], &["N=1000"])];
        let (f, _, measuring) = review_in(&disk, change("src/params.sh"));
        assert!(
            measuring.data.contains("src/params.sh"),
            "{:?}",
            measuring.data
        );
        assert!(!measuring.data.contains("src/run.py"));
        assert!(
            f.iter().any(|f| f.rule == "measurement" && !f.advisory),
            "{f:?}"
        );
        let (f, _, _) = review_in(&disk, change("src/run.py"));
        assert!(!f.iter().any(|f| f.rule == "measurement"), "{f:?}");
    }

    #[test]
    fn an_honest_change_passes() {
        let (rules, suspicious) = rules_of(vec![file(
            "src/parse.rs",
            FileStatus::Modified,
            &[
                "    let n = bytes.len();",
                "    assert!(n > 0);",
                "    // faster: one pass",
            ],
            &["    let n = bytes.iter().count();"],
        )]);
        assert!(rules.is_empty(), "{rules:?}");
        assert!(!suspicious);
    }

    #[test]
    fn each_rule_catches_its_change() {
        let m = FileStatus::Modified;
        let cases: Vec<(&str, FileChange)> = vec![
            (
                "todo",
                file("src/a.rs", m, &["    // TODO: handle empty input"], &[]),
            ),
            (
                "debug-print",
                file("src/a.rs", m, &["    dbg!(&state);"], &[]),
            ),
            (
                "debug-print",
                file("src/a.py", m, &["    breakpoint()"], &[]),
            ),
            (
                "debug-print",
                file("web/a.ts", m, &["  console.log(x);"], &[]),
            ),
            (
                "debug-print",
                file("src/a.rs", m, &["    eprintln!(\"DEBUG: {x}\");"], &[]),
            ),
            (
                "secret",
                file(
                    "src/a.py",
                    m,
                    &["KEY = \"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\""],
                    &[],
                ),
            ),
            ("protected", file("data/golden.txt", m, &["42"], &["41"])),
            ("scope", file("README.md", m, &["x"], &[])),
            (
                "measurement",
                file(
                    "bench.sh",
                    m,
                    &["python3 src/run.py data/small.txt"],
                    &["python3 src/run.py data/input.txt"],
                ),
            ),
            (
                "measurement",
                file("data/input.txt", m, &["1"], &["1", "2"]),
            ),
            (
                "test-deleted",
                file(
                    "tests/test_parse.py",
                    FileStatus::Deleted,
                    &[],
                    &["def test_x():", "    assert f() == 1"],
                ),
            ),
            (
                "test-deleted",
                file(
                    "src/a.rs",
                    m,
                    &[],
                    &[
                        "    #[test]",
                        "    fn parses() {",
                        "        assert_eq!(p(\"1\"), 1);",
                    ],
                ),
            ),
            (
                "test-skipped",
                file(
                    "tests/test_parse.py",
                    m,
                    &["@pytest.mark.skip(reason='slow')"],
                    &[],
                ),
            ),
            ("test-skipped", file("src/a.rs", m, &["    #[ignore]"], &[])),
            (
                "test-weakened",
                file(
                    "tests/test_parse.py",
                    m,
                    &["    f()"],
                    &["    assert f() == 1"],
                ),
            ),
            ("diff-size", file("src/big.rs", m, &["let x = 1;"; 60], &[])),
            (
                "test-weakened",
                file(
                    "tests/test_parse.py",
                    m,
                    &["    assert True"],
                    &["    assert f() == 1"],
                ),
            ),
            ("test-skipped", file("src/a.rs", m, &["#[cfg(any())]"], &[])),
            (
                "debug-print",
                file("src/a.rs", m, &["    /* */ dbg!(x);"], &[]),
            ),
        ];
        for (want, change) in cases {
            let path = change.path.clone();
            let (rules, suspicious) = rules_of(vec![change]);
            assert!(
                rules.iter().any(|r| r == want),
                "{want} on {path}: {rules:?}"
            );
            let gaming = [
                "measurement",
                "protected",
                "test-deleted",
                "test-skipped",
                "test-weakened",
                "test-config",
                "binary",
            ];
            assert_eq!(suspicious, gaming.contains(&want), "{want}");
        }
    }

    #[test]
    fn a_comment_or_an_assertion_moved_is_not_a_finding() {
        let m = FileStatus::Modified;
        let (rules, _) = rules_of(vec![
            file("src/a.php", m, &["$this->add($x);"], &[]),
            file("src/run.sh", m, &["set -xeuo pipefail"], &[]),
            file(
                "src/lib.rs",
                m,
                &["    let v = f()?;", "    // this should be fast"],
                &["    let v = f().expect(\"f\");", "    assert!(v > 0);"],
            ),
            file(
                "src/b.rs",
                m,
                &["        // TODO: later"],
                &["    // TODO: later"],
            ),
            file(
                "src/a.py",
                m,
                &["# the old code used breakpoint() here"],
                &[],
            ),
            file(
                "tests/test_a.py",
                m,
                &["    assert g() == 2", "    assert f() == 1"],
                &["    assert f() == 1"],
            ),
        ]);
        assert!(rules.is_empty(), "{rules:?}");
    }

    #[test]
    fn what_may_be_honest_is_advisory() {
        let m = FileStatus::Modified;
        let mut bin = file("src/answers.bin", m, &[], &[]);
        bin.binary = true;
        for (rule, change) in [
            (
                "debug-print",
                file("web/a.ts", m, &["  console.log(x);"], &[]),
            ),
            ("binary", bin),
            (
                "test-config",
                file(
                    "tests/conftest.py",
                    m,
                    &["collect_ignore = ['slow.py']"],
                    &[],
                ),
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let b = brief(dir.path());
            let change = Change {
                files: vec![change],
                patch: String::new(),
            };
            let cx = Context {
                brief: &b,
                guards: &[],
                measuring: &Measuring {
                    all: BTreeSet::new(),
                    data: BTreeSet::new(),
                },
                max_diff_lines: 50,
                carried: &[],
            };
            let (f, _) = review(&change, &cx);
            let hit = f
                .iter()
                .find(|f| f.rule == rule)
                .unwrap_or_else(|| panic!("{rule}: {f:?}"));
            assert!(hit.advisory, "{rule}");
        }
    }

    #[test]
    fn failed_guards_are_findings() {
        let dir = tempfile::tempdir().unwrap();
        let b = brief(dir.path());
        let guards = [GuardResult {
            command: "make test".into(),
            ok: false,
            exit_code: Some(1),
            seconds: 1.0,
        }];
        let cx = Context {
            brief: &b,
            guards: &guards,
            measuring: &Measuring {
                all: BTreeSet::new(),
                data: BTreeSet::new(),
            },
            max_diff_lines: 50,
            carried: &[],
        };
        let (f, _) = review(&Change::default(), &cx);
        assert_eq!(f[0].rule, "guards");
    }
}
