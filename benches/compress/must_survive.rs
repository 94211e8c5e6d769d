//! What of a command's output compression must keep: the judge of the
//! compression corpus (`benches/compress/corpus/`), shared by its benchmark
//! (`benches/compress_bench.rs`) and by the corpus tests in
//! `src/text/compress/mod.rs`.
//!
//! Written, and committed, before the corpus was made and before the
//! compressor was tuned on it, so that the rule is not fitted to either.
//! It knows no tool by name where a general shape will do: it is meant to
//! hold on outputs that are not in the corpus.
//!
//! Each output line is read as a terminal shows it (ANSI escapes removed,
//! a line redrawn with carriage returns read as its last state, surrounding
//! blanks trimmed). Two kinds of item must survive:
//!
//! - **Lines**, which must appear inside some line of the compressed output,
//!   compared with volatile tokens masked and runs of blanks as one:
//!   1. *problems*: a word starting with error, warn, fail, panic, fatal,
//!      exception, traceback or assert (any case), or a name ending in
//!      Error, Warning, Exception or Failure (`ValueError`,
//!      `DeprecationWarning`); a test runner's failure
//!      marker (`FAILED`, `ERROR`, `not ok`, `✖`, `✕`, `×`, `●`); a lint
//!      diagnostic `path:line:col: CODE…`; an HTTP 4xx/5xx a server logged;
//!      a JSON log record at level error or above (`"level":50`, `"level":
//!      "error"`); but not the boilerplate under a warning (a lint's level,
//!      `implied by`, `on by default`, a documentation link such as `for
//!      further information visit …` or `-- Docs: …`);
//!   2. *locations* of problems: `--> path:line[:col]` (rustc, clippy,
//!      ruff), `File "path", line N` (Python tracebacks), `path:line: in
//!      name` (pytest's short tracebacks), `path:line: …` of a Go test, a
//!      stack frame `at … (path:line:col)` outside `node:` internals and
//!      `node_modules`, node's `location: '…:line:col'`, and a bare path
//!      line heading a group of `line:col  error|warning` lines (eslint);
//!   3. *details* of a failure: `left:`/`right:`, `expected:`/`actual:`/
//!      `received:` (any case), pytest's `E   ` lines;
//!   4. *summaries*: a test or build tool's closing counts (`test result:`,
//!      `Finished`, pytest's `=== … in Ns ===` or `N passed in Ns`,
//!      `Ran N tests`, `OK`, `Tests:`/`Test Suites:`, `# tests N`, `ℹ tests
//!      N`, nextest's `Summary [`, `ok  pkg`, `PASS`), a package manager's
//!      result (`added N packages`, `Successfully installed`, `N upgraded, N
//!      newly installed`, `Done in`, `Packages: +N`), a configure/build
//!      tool's end (`Build files have been written`, `[100%]`, `Configuring
//!      done`), git's `On branch`/`Your branch`/`nothing to commit`, a
//!      download's `saved [`;
//!   5. *final states of progress displays*: the last state of every line
//!      redrawn with carriage returns, and a line at `100%` or ending in
//!      `done.`;
//!   6. *files a change touched*: git status's `modified:`/`deleted:`/`new
//!      file:`/`renamed:` lines and untracked paths, `diff --git` headers.
//! - **Identifiers**, which must appear anywhere in the compressed output,
//!   verbatim (never masked): commit hashes (`commit H`, a `git log
//!   --oneline` or `git blame` line's leading hash; the first seven
//!   characters are the id), and the names of failed tests a runner prints
//!   in a header of their own (`---- name stdout ----`, `___ name ___`).
//!
//! No line of a test that passed or is starting counts (`x PASSED`, `test x
//! ... ok`, unittest's `docstring ... ok`, `ok 3 - x`, `✓ x`, `--- PASS: X`, `=== RUN X`), whatever its
//! name says. No line of code counts, whatever words it holds: a snippet's gutter
//! lines and suggested fixes under a diagnostic, a diff's lines inside a
//! hunk (its `diff --git` header and `@@` lines count as above).
//!
//! Lines that differ only in volatile tokens are one item, listed once in
//! first-seen order: timestamps, UUIDs, hex ids (eight or more digits with a
//! letter among them, or twelve or more), a port after a host, durations,
//! process ids, and temporary paths. Plain numbers are not masked: a count
//! such as `3 failed` matters.

use std::sync::LazyLock;

use regex::Regex;

/// One thing the compressed output must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Must {
    /// A line, as read (unmasked); compared by its shape.
    Line(String),
    /// An identifier, compared verbatim.
    Id(String),
}

impl Must {
    /// As `must.txt` lists it: `line<TAB>…` or `id<TAB>…`.
    pub(crate) fn listed(&self) -> String {
        match self {
            Must::Line(l) => format!("line\t{l}"),
            Must::Id(i) => format!("id\t{i}"),
        }
    }

    /// The least characters an output must spend to hold this item (its
    /// text with runs of blanks as one, and a newline for a line).
    pub(crate) fn cost(&self) -> usize {
        match self {
            Must::Line(l) => {
                l.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .count()
                    + 1
            }
            Must::Id(i) => i.chars().count() + 1,
        }
    }
}

fn re(s: &str) -> Regex {
    Regex::new(s).expect("a valid pattern")
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[()*+][0-9A-Za-z]|\x1b[@-_]",
    )
});

static PROBLEM: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(error|warn|fail|panic|fatal|exception|traceback|assert)\w*",
        r"|(?-i:[a-z](Error|Warning|Exception|Failure)\b)",
        r"|\bFAILED\b|\bERROR\b|^not ok\b|^\s*[✖✕×●]\s",
        r"|^[^\s:]+:\d+:\d+:? [A-Z]{1,4}\d{2,5}\b",
        r"|\bcode [45]\d\d\b|[\x22'] [45]\d\d\b|\bstatus[\x22']?[:=] ?[45]\d\d\b",
        r#"|"level": ?(50|60)\b"#,
    ))
});

/// A lint's level and where to read about it (`= note: `#[warn(x)]` on by
/// default`, `implied by`, `for further information visit …`): boilerplate
/// under a warning, not a problem of its own, whatever word it contains.
static BOILERPLATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"#\[(warn|deny|allow|forbid|expect)\(|\bimplied by\b|\bon by default\b|for further information|requested on the command line|^-- Docs: https?://",
    )
});

/// Source code shown in a diagnostic: a snippet's gutter line (`12 | code`,
/// `   |`), a suggested fix (`12 + code`, `-    code`). Code, not a report,
/// whatever words it holds (`assert`, `warnings.warn(`); so too a diff's
/// lines inside a hunk.
static CODE: LazyLock<Regex> = LazyLock::new(|| re(r"^\d*\s*\|(\s|$)|^\d+\s*[-+~]\s|^[-+~]\s{2,}"));

/// A test that passed or is starting: routine, whatever its name says
/// (`TestErrorIs PASSED`, `=== RUN TestFailover`).
static PASSING: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^\S+::\S+ PASSED\b|^\S.* \.\.\. ok$|^ok \d+ - |^[✓✔√] |^--- PASS: ",
        r"|^PASS \[|^=== (RUN|PAUSE|CONT) |^PASSED \S+::",
    ))
});

static HUNK: LazyLock<Regex> = LazyLock::new(|| re(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@"));

static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^-->\s*\S+:\d+",
        r#"|^File "[^"]+", line \d+"#,
        r"|^\S+:\d+: in \S+",
        r"|^[\w./-]+\.go:\d+:",
        r"|^at .*[\w./@-]+\.[cm]?[jt]sx?:\d+:\d+\)?$",
        r"|^location: '[^']+:\d+:\d+'",
    ))
});

static FRAME_ELSEWHERE: LazyLock<Regex> = LazyLock::new(|| re(r"node:|node_modules"));

static PATH_ONLY: LazyLock<Regex> = LazyLock::new(|| re(r"^/?[\w.@+-]+(/[\w.@+-]+)*\.\w+$"));

static ESLINT_ROW: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+:\d+\s+(?i:error|warning)\b"));

static DETAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(left|right):|^E\s|(?i)^(expected|actual|received)\s*:"));

static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^test result:|^Finished\b|^=+ .* in [\d.]+m?s.* =+$|^\d+ (passed|failed)\b.* in [\d.]+m?s",
        r"|^Ran \d+ tests? in |^OK\b|^(Tests|Test Suites|Snapshots):|^# (tests|pass|fail) \d+",
        r"|^ℹ (tests|suites|pass|fail) \d+|^Summary \[|^ok\s+\S+\s+([\d.]+s|\(cached\))$|^PASS$",
        r"|^(added|removed|changed) \d+ packages?|^up to date\b|^Successfully installed",
        r"|^\d+ upgraded, \d+ newly installed|\bDone in\b|^Packages: [+-]\d+",
        r"|Build files have been written|^\[100%\]|^-- Configuring done",
        r"|^On branch |^Your branch |^nothing to commit|saved \[",
    ))
});

static PROGRESS_END: LazyLock<Regex> = LazyLock::new(|| re(r"\b100%|done\.$"));

static FILES: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(modified|deleted|new file|renamed):|^diff --git "));

static COMMIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"^commit ([0-9a-f]{7,40})\b|^\^?([0-9a-f]{7,40}) "));

static TEST_HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^---- (\S+) stdout ----$|^_{3,} (\S.*\S) _{3,}$"));

/// Volatile tokens, in the order they are masked: whole timestamps before
/// the hex ids that a time's digits could look like.
static VOLATILE: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    vec![
        (
            re(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
            "<T>",
        ),
        (
            re(r"\d{2}/[A-Z][a-z]{2}/\d{4}[ :]\d{2}:\d{2}:\d{2}( [+-]\d{4})?"),
            "<T>",
        ),
        (re(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<T>"),
        (re(r#""time": ?\d{10,}"#), "\"time\":<T>"),
        (
            re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
            "<U>",
        ),
        (re(r"\b[0-9a-fA-F]{8,}\b"), "<H>"),
        (
            re(r"\b(\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-f:]+\]):\d{2,5}\b"),
            "$1:<P>",
        ),
        (
            re(r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds|m|min)\b"),
            "<D>",
        ),
        (re(r#"(?i)\b(pid[\x22']?[:= ] ?)\d+"#), "${1}<N>"),
        (re(r"/tmp/[^\s:'\x22)]+"), "<TMP>"),
    ]
});

/// `line` with its volatile tokens masked and runs of blanks as one.
pub(crate) fn shape(line: &str) -> String {
    let mut out = line.to_string();
    for (pattern, token) in VOLATILE.iter() {
        if !pattern.is_match(&out) {
            continue;
        }
        out = if *token == "<H>" {
            // A plain number (a count, a date as 20240101) is no id.
            pattern
                .replace_all(&out, |c: &regex::Captures| {
                    if c[0].len() >= 12 || c[0].bytes().any(|b| b.is_ascii_alphabetic()) {
                        "<H>".to_string()
                    } else {
                        c[0].to_string()
                    }
                })
                .into_owned()
        } else {
            pattern.replace_all(&out, *token).into_owned()
        };
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each line as a terminal shows it, trimmed, and whether it was redrawn
/// (a carriage return before its last state).
fn shown(text: &str) -> Vec<(String, bool)> {
    ANSI.replace_all(text, "")
        .split('\n')
        .map(|raw| {
            let segments: Vec<&str> = raw.split('\r').filter(|s| !s.trim().is_empty()).collect();
            let last = segments.last().copied().unwrap_or("");
            let plain: String = last
                .chars()
                .filter(|c| *c == '\t' || !c.is_control())
                .collect();
            (plain.trim().to_string(), segments.len() > 1)
        })
        .collect()
}

/// The first character of each line as printed (ANSI removed, last
/// redraw), before trimming.
fn first_chars(text: &str) -> Vec<Option<char>> {
    ANSI.replace_all(text, "")
        .split('\n')
        .map(|raw| {
            raw.split('\r')
                .rfind(|s| !s.trim().is_empty())
                .unwrap_or("")
                .chars()
                .next()
        })
        .collect()
}

/// The items of `text` that compression must keep, each once, in
/// first-seen order.
pub(crate) fn must_survive(text: &str) -> Vec<Must> {
    let lines = shown(text);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut untracked = false;
    let mut in_hunk = false;
    let firsts = first_chars(text);
    for (i, (line, redrawn)) in lines.iter().enumerate() {
        // A hunk goes on while its lines are context, added or removed
        // (read untrimmed: context starts with a blank).
        let raw_first = firsts.get(i).copied().flatten();
        if HUNK.is_match(line) {
            in_hunk = true;
        } else if in_hunk && !matches!(raw_first, Some(' ' | '+' | '-' | '\\') | None) {
            in_hunk = false;
        }
        if (in_hunk && !HUNK.is_match(line)) || CODE.is_match(line) || PASSING.is_match(line) {
            continue;
        }
        if line.starts_with("Untracked files:") {
            untracked = true;
            continue;
        }
        if untracked && line.is_empty() {
            untracked = false;
        }
        if line.is_empty() {
            continue;
        }
        let heads_lint_group = PATH_ONLY.is_match(line)
            && lines
                .get(i + 1)
                .is_some_and(|(next, _)| ESLINT_ROW.is_match(next));
        let location = (LOCATION.is_match(line)
            && !(line.starts_with("at ") && FRAME_ELSEWHERE.is_match(line)))
            || heads_lint_group;
        let keep = !BOILERPLATE.is_match(line)
            && (PROBLEM.is_match(line)
                || location
                || DETAIL.is_match(line)
                || SUMMARY.is_match(line)
                || *redrawn
                || PROGRESS_END.is_match(line)
                || FILES.is_match(line)
                || (untracked && !line.starts_with('(')));
        if keep && seen.insert(format!("line\t{}", shape(line))) {
            out.push(Must::Line(line.clone()));
        }
        let ids = COMMIT
            .captures(line)
            .and_then(|c| c.get(1).or_else(|| c.get(2)))
            .map(|m| m.as_str()[..7].to_string())
            .into_iter()
            .chain(
                TEST_HEADER
                    .captures(line)
                    .and_then(|c| c.get(1).or_else(|| c.get(2)))
                    .map(|m| m.as_str().to_string()),
            );
        for id in ids {
            if seen.insert(format!("id\t{id}")) {
                out.push(Must::Id(id));
            }
        }
    }
    out
}

/// How many of `must` `output` holds, and the least characters the missing
/// ones would add.
pub(crate) fn survival(output: &str, must: &[Must]) -> (usize, usize) {
    let lines: Vec<String> = shown(output).iter().map(|(l, _)| shape(l)).collect();
    let plain = ANSI.replace_all(output, "");
    let (mut kept, mut missing) = (0, 0);
    for m in must {
        let held = match m {
            Must::Line(l) => {
                let wanted = shape(l);
                lines.iter().any(|o| o.contains(&wanted))
            }
            Must::Id(i) => plain.contains(i.as_str()),
        };
        if held {
            kept += 1;
        } else {
            missing += m.cost();
        }
    }
    (kept, missing)
}

/// The items `output` lacks.
pub(crate) fn dropped<'m>(output: &str, must: &'m [Must]) -> Vec<&'m Must> {
    must.iter()
        .filter(|m| survival(output, std::slice::from_ref(m)).0 == 0)
        .collect()
}

static ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(error|fail|panic|fatal|exception|traceback)\w*|^\s*[✖✕×●]\s|^not ok\b|(?-i:[a-z](Error|Exception|Failure)\b)",
    )
});

/// For the budget's check: the items that are errors (problems other than
/// warnings), each followed by its location when that is an item of its
/// own (the first location item after it, before the next problem), as
/// `(item, is_location)`.
pub(crate) fn errors_and_locations(must: &[Must]) -> Vec<(Must, bool)> {
    let mut out = Vec::new();
    let mut wants_location = false;
    for m in must {
        let Must::Line(line) = m else { continue };
        let location = LOCATION.is_match(line) || PATH_ONLY.is_match(line);
        if location && !PROBLEM.is_match(line) {
            if wants_location {
                out.push((m.clone(), true));
                wants_location = false;
            }
        } else if PROBLEM.is_match(line) {
            wants_location = ERROR.is_match(line) && !line.to_lowercase().contains("warn");
            if wants_location {
                out.push((m.clone(), false));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The benchmark compiles this module in test mode without a harness.
    #[allow(dead_code)]
    fn lines(text: &str) -> Vec<String> {
        must_survive(text).iter().map(Must::listed).collect()
    }

    #[test]
    fn a_warning_keeps_its_location_and_not_its_boilerplate() {
        let text = "warning: unused import\n  --> src/lib.rs:3:5\n   |\n3  | use std::io;\n   = note: `#[warn(unused_imports)]` on by default\n   = help: for further information visit https://rust-lang.github.io/x\n";
        let got = lines(text);
        assert!(got.contains(&"line\twarning: unused import".to_string()));
        assert!(got.contains(&"line\t--> src/lib.rs:3:5".to_string()));
        assert!(!got.iter().any(|l| l.contains("further information")));
    }

    #[test]
    fn volatile_tokens_make_one_item_but_ids_are_verbatim() {
        let text = "INFO: 127.0.0.1:56740 - \"GET /x HTTP/1.1\" 404 Not Found\nINFO: 127.0.0.1:56741 - \"GET /x HTTP/1.1\" 404 Not Found\ncommit 0123456789abcdef0123456789abcdef01234567\ncommit 89abcdef0123456789abcdef0123456789abcdef\n";
        let got = must_survive(text);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.contains(&Must::Id("0123456".into())));
        assert!(got.contains(&Must::Id("89abcde".into())));
        // A fold keeping the first line holds the item; a masked hash does not.
        assert_eq!(dropped("", &got).len(), 3);
        assert_eq!(survival("INFO: 127.0.0.1:56740 - \"GET /x HTTP/1.1\" 404 Not Found (×2)\ncommit <H> (×2 similar)", &got).0, 1);
    }

    #[test]
    fn progress_keeps_its_last_state_and_eslint_its_file() {
        let text = "Receiving objects:  50% (5/10)\rReceiving objects: 100% (10/10), done.\n/src/a.js\n  3:7  error  'x' is assigned a value but never used  no-unused-vars\n";
        let got = lines(text);
        assert_eq!(
            got,
            [
                "line\tReceiving objects: 100% (10/10), done.",
                "line\t/src/a.js",
                "line\t3:7  error  'x' is assigned a value but never used  no-unused-vars",
            ]
        );
    }

    #[test]
    fn frames_of_the_runtime_are_not_locations() {
        let text = "    at Object.<anonymous> (/w/test/a.test.js:4:9)\n    at Module._compile (node:internal/modules/cjs/loader:1364:14)\n    at run (/w/node_modules/jest-circus/build/run.js:3:3)\n";
        assert_eq!(
            lines(text),
            ["line\tat Object.<anonymous> (/w/test/a.test.js:4:9)"]
        );
    }
}
