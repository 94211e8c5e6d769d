//! The builtin code-reviewer: rules over the change, no model.
//!
//! Each rule reads the typed change (base to the candidate as measured) and
//! what the Brief says; each finding names its file, line and rule. The
//! rules are the ways a keep can win the benchmark without improving the
//! program that need no judgement to see: a weakened or skipped test, an
//! edit to what measures it, a secret, a debug print, a protected file, a
//! change too big to review. They run on every keep, whatever else reviews.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::brief::Brief;
use crate::model::{Change, FileChange, FileStatus, Finding, GuardResult};

/// What the builtin rules read besides the change.
pub struct Context<'a> {
    pub brief: &'a Brief,
    pub guards: &'a [GuardResult],
    /// The base worktree: the metric's scripts are read there (as they were
    /// before the change).
    pub base_dir: &'a Path,
    pub max_diff_lines: usize,
}

/// The builtin review: findings (any one blocks) and whether the change
/// looks like it games the benchmark.
pub fn review(change: &Change, cx: &Context) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    for g in cx.guards.iter().filter(|g| !g.ok) {
        out.push(finding(
            "",
            None,
            "guards",
            format!("the guard `{}` did not pass", g.command),
        ));
    }
    let lines = change.changed_lines();
    if lines > cx.max_diff_lines {
        out.push(finding(
            "",
            None,
            "diff-size",
            format!(
                "{lines} changed lines, above the limit of {} (review.max_diff_lines): a change this big cannot be reviewed as one surgical step",
                cx.max_diff_lines
            ),
        ));
    }
    let measuring = measurement_files(cx.brief, cx.base_dir);
    let knobs_file = cx.brief.knobs_file.as_str();
    for f in &change.files {
        let p = f.path.as_str();
        if cx.brief.scope.protects(p) {
            out.push(finding(
                p,
                None,
                "protected",
                "a protected file changed (scope.protect)".into(),
            ));
        } else if !cx.brief.scope.allows(p) && p != knobs_file {
            out.push(finding(
                p,
                None,
                "scope",
                "changed outside scope.allow".into(),
            ));
        }
        if measuring.contains(p) {
            out.push(finding(
                p,
                None,
                "measurement",
                "this file is run or read by the metric, setup or a guard: a change to it changes the measurement, not the program".into(),
            ));
        }
        if f.binary {
            continue;
        }
        added_line_rules(f, &mut out);
        test_rules(f, &mut out);
    }
    let suspicious = out.iter().any(|f| {
        matches!(
            f.rule.as_str(),
            "measurement" | "protected" | "test-deleted" | "test-skipped" | "test-weakened"
        )
    });
    (out, suspicious)
}

fn finding(file: &str, line: Option<u32>, rule: &str, why: String) -> Finding {
    Finding {
        file: file.to_string(),
        line,
        rule: rule.to_string(),
        why,
    }
}

static TODO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(TODO|FIXME|XXX|HACK)\b").expect("valid"));

/// A print whose text says it is for debugging, in any language.
static DEBUG_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(print|println!?|eprintln!|printf|fprintf|puts|echo|console\.\w+|log\.\w+)\s*\(?\s*(stderr\s*,\s*)?["'`]\s*\[?(debug|dbg|xxx)\b"#)
        .expect("valid")
});

/// Debug statements per language, by file extension.
fn debug_patterns(ext: &str) -> &'static [&'static str] {
    match ext {
        "rs" => &["dbg!("],
        "py" => &[
            "breakpoint()",
            "pdb.set_trace(",
            "import pdb",
            "import ipdb",
            "ipdb.set_trace(",
        ],
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "vue" | "svelte" => {
            &["console.log(", "console.debug(", "debugger;"]
        }
        "go" => &["spew.Dump(", "pp.Println("],
        "rb" => &["binding.pry", "byebug", "binding.irb"],
        "java" | "kt" => &["System.out.println(", "printStackTrace()"],
        "php" => &["var_dump(", "dd(", "print_r("],
        "sh" | "bash" => &["set -x"],
        _ => &[],
    }
}

fn added_line_rules(f: &FileChange, out: &mut Vec<Finding>) {
    let ext = Path::new(&f.path)
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let patterns = debug_patterns(&ext);
    let mut secret_reported = false;
    for (n, text) in &f.added {
        let line = Some(*n);
        if let Some(m) = TODO.find(text) {
            out.push(finding(
                &f.path,
                line,
                "todo",
                format!("adds a `{}` note", m.as_str()),
            ));
        }
        let trimmed = text.trim_start();
        // A pattern inside a comment is not a statement.
        let comment = ["//", "#", "--", "/*", "*"]
            .iter()
            .any(|c| trimmed.starts_with(c))
            && !trimmed.starts_with("#[")
            && !trimmed.starts_with("#!");
        if let Some(p) = patterns.iter().find(|p| !comment && text.contains(**p)) {
            out.push(finding(
                &f.path,
                line,
                "debug-print",
                format!("adds a debug statement `{p}`"),
            ));
        } else if !comment && DEBUG_TEXT.is_match(text) {
            out.push(finding(
                &f.path,
                line,
                "debug-print",
                "adds a print labelled as debugging".into(),
            ));
        }
        if !secret_reported && crate::compress::adds_secret(text) {
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

static ASSERTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(assert\w*!?|expect\s*\(|should\b|require\.\w+|t\.(Error|Errorf|Fatal|Fatalf|Fail)\b|self\.assert\w*|check\w*!)")
        .expect("valid")
});

static SKIP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(#\[ignore\b|@pytest\.mark\.(skip|xfail)|@unittest\.skip|pytest\.skip\(|\b(it|describe|test)\.skip\(|\bx(it|describe|test)\(|\bt\.Skip(Now|f)?\(|@Disabled\b|@Ignore\b|\bskip\s*\(|return\s*;?\s*//\s*skip)")
        .expect("valid")
});

static TEST_ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(#\[(tokio::)?test\b|^\s*def test_\w*|^\s*func Test\w*|\b(it|test)\s*\(\s*['`])")
        .expect("valid")
});

fn test_rules(f: &FileChange, out: &mut Vec<Finding>) {
    let test_file = is_test_file(&f.path);
    // Rust keeps unit tests beside the code: a `.rs` file's tests count too.
    let holds_tests = test_file || f.path.ends_with(".rs");
    if !holds_tests {
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
        if SKIP.is_match(text) {
            out.push(finding(
                &f.path,
                Some(*n),
                "test-skipped",
                "marks a test as skipped or expected to fail".into(),
            ));
        }
    }
    let count =
        |lines: &[(u32, String)], re: &Regex| lines.iter().filter(|(_, t)| re.is_match(t)).count();
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

/// Words of a shell line that could name a file of the repository.
fn path_words(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split(|c: char| c.is_whitespace() || ";&|()<>=,`$".contains(c))
        .map(|w| w.trim_matches(['"', '\'']))
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .map(|w| w.trim_start_matches("./").to_string())
}

/// The repository files the metric, setup and guard commands run or read,
/// where that is known: each word of a command that names a file of the
/// base worktree, and the words of that file (one level: a `bench.sh`
/// that runs `bench/run.py` on `data/input.txt` names all three).
pub fn measurement_files(brief: &Brief, base_dir: &Path) -> BTreeSet<String> {
    let m = &brief.metric;
    let commands: Vec<&str> = std::iter::once(m.command.as_str())
        .chain(m.setup.as_deref())
        .chain(brief.guards.iter().map(String::as_str))
        .collect();
    let is_file = |w: &str| {
        !w.is_empty()
            && !w.starts_with('/')
            && !w.contains("..")
            && base_dir
                .join(w)
                .symlink_metadata()
                .is_ok_and(|m| m.is_file())
    };
    let mut out = BTreeSet::new();
    for c in commands {
        for w in path_words(c).filter(|w| is_file(w)) {
            if out.insert(w.clone())
                && let Ok(text) = std::fs::read(base_dir.join(&w))
                && text.len() <= 256 * 1024
                && let Ok(text) = String::from_utf8(text)
            {
                for inner in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
                    for w2 in path_words(inner).filter(|w| is_file(w)) {
                        out.insert(w2);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brief(dir: &Path) -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./bench.sh\n  direction: minimize\nagent: script\nguards: [python3 -m pytest tests]\nscope:\n  allow: [src/**, tests/**, bench.sh, data/**]\n  protect: [data/golden.txt]\n---\n# Goal\nx\n\n# Success\ny\n\n# Must not break\nz\n";
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
            status,
            binary: false,
            added: lines(added),
            removed: lines(removed),
        }
    }

    fn rules_of(files: Vec<FileChange>) -> (Vec<String>, bool) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bench.sh"),
            "#!/bin/sh\npython3 src/run.py data/input.txt\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("src/run.py"), "").unwrap();
        std::fs::write(dir.path().join("data/input.txt"), "").unwrap();
        let b = brief(dir.path());
        let change = Change {
            files,
            patch: String::new(),
        };
        let cx = Context {
            brief: &b,
            guards: &[],
            base_dir: dir.path(),
            max_diff_lines: 50,
        };
        let (f, s) = review(&change, &cx);
        (f.iter().map(|f| f.rule.clone()).collect(), s)
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
            ];
            assert_eq!(suspicious, gaming.contains(&want), "{want}");
        }
    }

    #[test]
    fn a_comment_or_an_assertion_moved_is_not_a_finding() {
        let m = FileStatus::Modified;
        let (rules, _) = rules_of(vec![
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
            base_dir: dir.path(),
            max_diff_lines: 50,
        };
        let (f, _) = review(&Change::default(), &cx);
        assert_eq!(f[0].rule, "guards");
    }
}
