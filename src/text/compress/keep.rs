//! What a line is to a reader of a command's output, for the passes that
//! drop, fold and rank: the kinds of line no pass may lose, and the
//! boilerplate any pass may.
//!
//! The kinds are general shapes, not tools: a problem is named by a word
//! (error, warning, failed, panic, ...), its location by a `path:line`
//! in one of the few ways compilers, linters, test runners and runtimes
//! print one, and an identifier is never masked. A line can be more than
//! one kind; [`Keep::of`] gives the one that ranks highest when a budget
//! binds.

use std::sync::LazyLock;

use regex::Regex;

/// A kind of line that must reach the reader, in the order a binding
/// budget keeps them (first kept first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Keep {
    /// An error or failure: what broke.
    Error,
    /// Where a problem is: `--> src/a.rs:3:5`, `File "a.py", line 3`.
    Location,
    /// What a failure found: `left:`/`right:`, `expected`/`actual`, `E`.
    Detail,
    /// A warning.
    Warning,
    /// A tool's closing count or result, a progress display's last state.
    Summary,
    /// What names a thing: a commit, a failed test, a file a change touched.
    Id,
}

impl Keep {
    pub(crate) fn of(line: &str) -> Option<Keep> {
        let t = line.trim();
        if t.is_empty() || BOILERPLATE.is_match(t) {
            return None;
        }
        if PROBLEM.is_match(t) {
            // A problem named by a status or a lint code alone (`404`,
            // `E501`) ranks with warnings: an error says so.
            return Some(if ERROR.is_match(t) {
                Keep::Error
            } else {
                Keep::Warning
            });
        }
        if is_location(t) {
            return Some(Keep::Location);
        }
        if DETAIL.is_match(t) {
            return Some(Keep::Detail);
        }
        if SUMMARY.is_match(t) || PROGRESS_END.is_match(t) {
            return Some(Keep::Summary);
        }
        if ID.is_match(t) || FILE.is_match(line) {
            return Some(Keep::Id);
        }
        None
    }

    /// Whether `line` is a tool's closing count or result.
    pub(crate) fn is_summary(line: &str) -> bool {
        SUMMARY.is_match(line.trim())
    }
}

/// Whether `line` details a failure (`left:`, `expected:`, pytest's `E`).
pub(crate) fn is_detail(line: &str) -> bool {
    DETAIL.is_match(line.trim())
}

/// Whether a (trimmed) line says where a problem is.
pub(crate) fn is_location(t: &str) -> bool {
    LOCATION.is_match(t) && !(t.starts_with("at ") && RUNTIME_FRAME.is_match(t))
}

/// Whether `line` names a place in a file anywhere (`a.rs:3`, `(x.js:3:9)`,
/// `❯ t.mjs:10:114`): such lines are read one by one, never as a template.
pub(crate) fn mentions_location(line: &str) -> bool {
    MENTIONS_LOCATION.is_match(line)
}

static MENTIONS_LOCATION: LazyLock<Regex> =
    LazyLock::new(|| re(r"(^|[\s(\x22'])[\w./@+~-]*\.[A-Za-z]\w*[:(]\d+"));

/// Whether `line` holds an identifier no mask may hide: a commit hash at
/// its start (`commit H`, a `git log --oneline` or `git blame` line).
pub(crate) fn holds_id(line: &str) -> bool {
    ID.is_match(line.trim_start())
}

/// Whether `line` is a name standing alone: one word of name characters
/// with a letter and the punctuation identifiers have (`test_sq[1]`,
/// `TestCalc.test_add`, `pkg/mod_1.py`, `tests::parse`): a failing test's
/// name heading its report, a file of a listing. It is what a reader looks
/// for, so it is alike to no other line, however few characters tell it
/// from the next (`test_sq[1]`, `test_sq[2]`). A plain word (`OK`, `done`),
/// code alone on a line (`break;`, `}`), a word ending a sentence
/// (`Downloading...`) and a lone timestamp (it starts with a digit) are no
/// names: they fold as any line does.
pub(crate) fn is_name(line: &str) -> bool {
    let word = line.trim();
    word.chars().any(char::is_alphabetic)
        && word.chars().all(|c| {
            c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':' | '[' | ']' | '@' | '+')
        })
        && word.contains(['_', '.', ':', '[', '/'])
        && !word.ends_with(['.', ':'])
        && !word.starts_with(|c: char| c == '[' || c.is_ascii_digit())
}

/// Whether `line` is an identifier no pass may fold into another line:
/// one held at its start ([`holds_id`]) or a name alone ([`is_name`]).
pub(crate) fn identifies(line: &str) -> bool {
    holds_id(line) || is_name(line)
}

/// Notes under a diagnostic that say how the lint is configured or where
/// its documentation is, the same under every warning of a kind.
pub(crate) static BOILERPLATE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(= )?(note|help): .*(#\[(warn|deny|allow|forbid|expect)\(|\bimplied by\b|\bon by default\b",
        r"|for further information|requested on the command line|https?://\S+$)|^-- Docs: https?://",
    ))
});

static PROBLEM: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(error|warn|fail|panic|fatal|exception|traceback|assert)\w*",
        r"|(?-i:[a-z](Error|Warning|Exception|Failure)\b)",
        r"|^not ok\b|^[✖✕×●]\s|\bcode [45]\d\d\b|[\x22'] [45]\d\d\b|\bstatus[\x22']?[:=] ?[45]\d\d\b",
        r"|^[^\s:]+:\d+:\d+:? [A-Z]{1,4}\d{2,5}\b|\x22level\x22: ?(50|60)\b",
    ))
});

static ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(error|fail|panic|fatal|exception|traceback|assert)|^not ok\b|^[✖✕×●]\s",
        r"|\x22level\x22: ?(50|60)\b|(?-i:[a-z](Error|Exception|Failure)\b)",
    ))
});

static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(-->|:::)\s*\S+:\d+",
        r#"|^File "[^"]+", line \d+"#,
        r"|^\S+:\d+: in \S+",
        r"|^[\w./-]+\.go:\d+:",
        r"|^at .*[\w./@-]+\.[cm]?[jt]sx?:\d+:\d+\)?$",
        r"|^location: '[^']+:\d+:\d+'",
        r"|^\S+\.\w+:\d+(:\d+)?:?$",
    ))
});

static RUNTIME_FRAME: LazyLock<Regex> = LazyLock::new(|| re(r"node:|node_modules"));

static DETAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(left|right):|^E\s|(?i)^(expected|actual|received)\b\s*:?"));

static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^test result:|^Finished\b|^=+ .* in [\d.]+m?s.* =+$|^\d+ (passed|failed)\b.* in [\d.]+m?s",
        r"|^Ran \d+ tests? in |^OK\b|^(Tests|Test Suites|Snapshots|Test Files|Duration):|^# (tests|pass|fail|suites|skipped|todo|cancelled|duration_ms) \d+",
        r"|^ℹ (tests|suites|pass|fail|skipped|todo|cancelled|duration_ms) \d+|^Summary \[|^ok\s+\S+\s+([\d.]+s|\(cached\))$|^PASS$",
        r"|^(added|removed|changed|updated) \d+ packages?|^up to date\b|^Successfully (installed|built)|audited \d+ packages",
        r"|^\d+ upgraded, \d+ newly installed|\bDone in\b|^Packages: [+-]\d+|^Progress: resolved",
        r"|Build files have been written|^\[100%\]|^-- (Configuring|Generating) done|^Built target",
        r"|^On branch |^Your branch |^nothing to commit|saved \[|^Success: no issues|^All checks passed|^Found \d+",
    ))
});

static PROGRESS_END: LazyLock<Regex> = LazyLock::new(|| re(r"\b100(\.0)?%|done\.$"));

static ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^commit [0-9a-f]{7,40}\b|^[*|/\\ ]*\^?[0-9a-f]{7,40} |^_{3,} \S.* _{3,}$|^---- \S+ stdout ----$",
    )
});

static FILE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^\t|^diff --git |^\s*(modified|deleted|new file|renamed|copied|typechange|both \w+):")
});

fn re(s: &str) -> Regex {
    Regex::new(s).expect("static regex is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_lines() {
        for (line, kind) in [
            ("error[E0308]: mismatched types", Some(Keep::Error)),
            ("warning: unused import: `std::io`", Some(Keep::Warning)),
            ("  --> src/lib.rs:3:5", Some(Keep::Location)),
            ("  File \"a.py\", line 3, in f", Some(Keep::Location)),
            (
                "    at Object.<anonymous> (/w/a.test.js:4:9)",
                Some(Keep::Location),
            ),
            (
                "    at Module._compile (node:internal/modules/cjs/loader:1364:14)",
                None,
            ),
            ("  left: 3", Some(Keep::Detail)),
            ("test result: ok. 3 passed; 0 failed", Some(Keep::Error)),
            (
                "Resolving deltas: 100% (154/154), done.",
                Some(Keep::Summary),
            ),
            (
                "commit 0123456789abcdef0123456789abcdef01234567",
                Some(Keep::Id),
            ),
            ("   = help: for further information visit https://x", None),
            (
                "   = note: `#[warn(clippy::pedantic)]` implied by `-W clippy::pedantic`",
                None,
            ),
            ("   Compiling semver v1.0.23", None),
        ] {
            assert_eq!(Keep::of(line), kind, "{line}");
        }
    }
}
