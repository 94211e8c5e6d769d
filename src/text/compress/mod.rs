//! Output compression for command output that reaches a report or a prompt
//! (and, through `ooda compress`, an agent CLI).
//!
//! Design choices:
//! - A pipeline of small, deterministic passes, no model, knowing kinds of
//!   line rather than tools: clean (ANSI escapes, carriage-return progress
//!   to its last state, control characters); focus (routine lines, passing
//!   tests, a warning's snippet, notes, suggested fixes and lint
//!   boilerplate, a test failure's code frame, a diff's context, what a
//!   second view of a change repeats: dropped and counted by kind in one
//!   closing marker); collapse identical runs (`line (×N)`); count lines
//!   that differ only in timestamps, UUIDs and hex ids by their shape;
//!   mine routine lines into templates wherever they are ([`template`]);
//!   fold runs of alike lines or blocks; point repeated blocks at their
//!   first showing, wherever they repeat; strip layout padding; then fit the
//!   budget by rank ([`rank`]). Each pass removes only what a reader would
//!   skim past, and says how much it removed. The passes run again on their
//!   own output until nothing changes: compressing twice is compressing once.
//! - What a line is — a problem, its location, a failure's detail, a
//!   summary, an identifier — is [`keep`]'s to say; no pass drops such a line
//!   or folds it into a different one, and an identifier is never masked.
//!   The problem words are deliberately loose (`0 failed` matches): a false
//!   positive costs a line, a false negative loses the cause of a crash.
//! - Measured against RTK on 52 real outputs of 28 tools on third-party code
//!   (`benches/compress/`), with what must survive fixed by a rule written
//!   before these passes were tuned (`benches/compress/must_survive.rs`,
//!   whose corpus tests are below).
//! - The budget is in characters (tokens are counted as chars/4) and is a
//!   hard bound: lines are kept by rank, gaps say how many lines they stand
//!   for, a closing marker says which kinds were cut, and a final clamp
//!   covers budgets too small for any marker.
//! - Redaction (`redact.rs`) is separate and not applied by `compress`:
//!   callers redact before output is stored or sent anywhere, whether or not
//!   it is compressed ([`excerpt`] does both, in that order).

use crate::text::clip::chars;
use crate::text::redact::redact;
use std::sync::LazyLock;

use regex::Regex;

mod keep;
mod rank;
mod template;

use keep::Keep;

/// What of a command's output may reach a report, a prompt or a file:
/// redacted first, then compressed, since shortening a long line could cut
/// a secret to a prefix no rule recognises any more.
pub fn excerpt(text: &str, budget_chars: usize) -> String {
    excerpt_accounted(text, budget_chars).0
}

/// [`excerpt`], with what it left out by kind (`ooda compress --json`).
pub fn excerpt_accounted(text: &str, budget_chars: usize) -> (String, Accounting) {
    // Colour codes and control characters go first: a secret split by
    // them would pass redaction and be joined again by the cleaning.
    let shown: String = strip_ansi(text)
        .chars()
        .filter(|c| matches!(c, '\n' | '\r' | '\t') || !c.is_control())
        .collect();
    // And once more at the end, for what the passes changed inside a line
    // (padding, masks, a cut): line by line, since a rule that spans lines
    // (`token:` and the value on the next) would otherwise take two lines
    // the passes only made neighbours. The budget stays a hard bound.
    let (out, accounting) = compress_accounted(&redact(&shown), budget_chars);
    let again: Vec<String> = out.split('\n').map(redact).collect();
    (clamp_chars(again.join("\n"), budget_chars), accounting)
}

/// `text` cut to `budget_chars` the way [`compress`] fits its budget, but
/// without its log passes: for text ooda wrote itself (a prompt), whose
/// hashes, blank lines and diffs are meant as they are.
pub fn shorten(text: &str, budget_chars: usize) -> String {
    rank::fit(collapse_repeats(&clean_lines(text)), budget_chars)
}

/// Compresses `text` to at most `budget_chars` characters (Unicode scalar values).
pub fn compress(text: &str, budget_chars: usize) -> String {
    compress_accounted(text, budget_chars).0
}

/// [`compress`], with what it left out by kind.
fn compress_accounted(text: &str, budget_chars: usize) -> (String, Accounting) {
    let (mut entries, mut dropped) = passes(text);
    // A pass can leave what a second would fold or drop (lines a fold made
    // neighbours, a diagnostic whose separating note went into a
    // template): run again until nothing changes, so that compressing
    // twice changes nothing. Two or three runs suffice.
    for _ in 0..3 {
        let once = join(&entries);
        let (again, mut more) = passes(&once);
        if join(&again) == once {
            break;
        }
        entries = again;
        // What this run read in the marker is the runs' before it.
        more.earlier = 0;
        dropped.add(&more);
    }
    let out = rank::fit(entries, budget_chars);
    let accounting = Accounting {
        dropped: dropped.by_kind(),
        cut: cut_by_kind(&out),
    };
    (out, accounting)
}

/// What a compressed output left out: the lines the structural passes
/// dropped and the lines a budget cut, each by kind.
#[derive(Debug, Default, PartialEq)]
pub struct Accounting {
    pub dropped: std::collections::BTreeMap<String, usize>,
    pub cut: std::collections::BTreeMap<String, usize>,
}

/// The budget's cuts by kind, as its marker (`[cut to fit: …]`) says them.
fn cut_by_kind(output: &str) -> std::collections::BTreeMap<String, usize> {
    let mut cut = std::collections::BTreeMap::new();
    for line in output.lines() {
        let Some(list) = line
            .strip_prefix("[cut to fit: ")
            .and_then(|l| l.strip_suffix(']'))
        else {
            continue;
        };
        for (n, kind) in counts(list).unwrap_or_default() {
            *cut.entry(kind.to_string()).or_default() += n;
        }
    }
    cut
}

/// One run of the structural passes, before any budget, and what it
/// dropped (with, as `earlier`, what the text's own marker said an earlier
/// run had).
fn passes(text: &str) -> (Vec<Entry>, Dropped) {
    let mut lines = clean_lines(text);
    // What an earlier run dropped is counted on with this run's.
    let earlier = lines.last().and_then(|l| Dropped::parse(l)).inspect(|_| {
        lines.pop();
    });
    let (lines, mut dropped) = focus(lines);
    if let Some(earlier) = earlier {
        dropped.add(&earlier);
    }
    let lines: Vec<String> = drop_echoes(lines, &mut dropped)
        .into_iter()
        .map(|l| {
            // Most lines have no run of blanks to squeeze: asked first,
            // before the dearer question of what the line is.
            if !l.trim_start().contains("  ") || keeps_blanks(&l) {
                l
            } else {
                squeeze_blanks(&l)
            }
        })
        .collect();
    let mut entries = merge_adjacent(fold_templates(count_volatile(collapse_repeats(&lines))));
    // Folding again until nothing folds: what one pass leaves (a block
    // whose first lines are themselves alike) must not fold on a second
    // call, or compressing twice would change the output.
    loop {
        let n = entries.len();
        entries = group_blocks(entries);
        if entries.len() == n {
            break;
        }
    }
    entries = fold_repeated_blocks(entries);
    if let Some(text) = dropped.marker() {
        entries.push(Entry::marker(text, dropped.total()));
    }
    for e in &mut entries {
        e.text = without_layout(&e.text);
    }
    (entries, dropped)
}

/// `line` without the blanks that only lay it out: its indentation, tabs
/// and runs of alignment padding. A reader of one line at a time loses nothing
/// by them, and a column of a linter's rows or a test report is a tenth
/// padding. Code keeps its blanks: a diff's changed lines, a snippet's.
fn without_layout(line: &str) -> String {
    if keeps_blanks(line) {
        return line.to_string();
    }
    // Two blanks may be meant (`'  '` in a line of source); three or more,
    // or a tab, align.
    let line = line.trim().replace('\t', " ");
    PADDING.replace_all(&line, " ").into_owned()
}

/// Whether every blank of `line` is its content. pytest's `E` lines align
/// a diff's markers under what they mark; a porcelain status's first
/// column may be a blank; a failure's detail (`left: "a    b"`) says what
/// its blanks are; code and a diff's lines keep their indentation.
fn keeps_blanks(line: &str) -> bool {
    line.starts_with(['+', '-'])
        || is_code(line)
        || E_LINE.is_match(line)
        || PORCELAIN.is_match(line)
        || keep::is_detail(line)
}

/// `line` with each run of blanks after its indentation and outside a
/// quoted literal as one blank:
/// a linter's columns are often two blanks apart (`1:1  error  msg  rule`),
/// which is alignment too, but `'  '` or `"a  b"` is a value. A quote
/// that opens after a letter (`can't`) is an apostrophe, and a literal
/// left open keeps its blanks to the end of the line.
fn squeeze_blanks(line: &str) -> String {
    let body = line.trim_start();
    let mut out = line[..line.len() - body.len()].to_string();
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    let mut escaped = false;
    for c in body.chars() {
        // A tab aligns as blanks do.
        let c = if c == '\t' && quote.is_none() { ' ' } else { c };
        match quote {
            // `"a \"  b\""`: an escaped quote does not close the literal.
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '`' || (c == '\'' && !previous.is_alphanumeric()) => {
                quote = Some(c);
            }
            None if c == ' ' && previous == ' ' => continue,
            None => {}
        }
        out.push(c);
        previous = c;
    }
    out
}

/// Lines that only say again what a kept problem line says (vitest's `→
/// expected 1 to be 2` above its `AssertionError: expected 1 to be 2`, a
/// runner's list of failures before their details): dropped as repeated.
/// Only a line that is nothing a reader needs goes ([`is_important`] false,
/// no code, no identifier), only when a problem line holds all of its text
/// but the glyph it starts with, and only for text long enough to be a
/// message (a short one would be found in a long line by chance).
fn drop_echoes(lines: Vec<String>, dropped: &mut Dropped) -> Vec<String> {
    /// The shortest text taken as a message said again.
    const MESSAGE: usize = 20;
    /// How many problem lines are searched: past it, a log of thousands of
    /// problems is left as it is rather than searched line by line.
    const SEARCHED: usize = 2000;
    /// And how many characters of them: the search is each candidate line
    /// against all of them.
    const SEARCHED_CHARS: usize = 256 * 1024;
    // Problem lines by their words alone: the lines that may hold an echo.
    // The full test of what a reader needs ([`is_important`]) is dearer,
    // and run only on the few lines found in them.
    let problem: Vec<bool> = lines.iter().map(|l| IMPORTANT.is_match(l)).collect();
    let count = problem.iter().filter(|&&p| p).count();
    if count == 0 || count > SEARCHED {
        return lines;
    }
    // One text to search: a line's text holds no newline, so it is found
    // in it only inside one problem line.
    let problems = lines
        .iter()
        .zip(&problem)
        .filter(|(_, p)| **p)
        .map(|(l, _)| l.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if problems.len() > SEARCHED_CHARS {
        return lines;
    }
    let echo = |line: &str| {
        let text = line.trim_start_matches(|c: char| !c.is_alphanumeric());
        text.chars().count() >= MESSAGE
            && !line.trim_start().starts_with(['+', '-', '['])
            // Not a failing test's name the runner's list holds after
            // its file (`FAILED t.py::test_x[a b] - …`): a header.
            && problems
                .match_indices(text)
                .any(|(at, _)| !problems[..at].ends_with("::"))
            // Not a problem line (known), nor any other kind a reader needs.
            && Keep::of(line).is_none()
            && !is_code(line)
            && !keep::holds_id(line)
            // A failing test's name heading its report is found in the
            // runner's list of failures, and is what ties the details
            // under it to the test.
            && !keep::is_name(line)
            && !keep::mentions_location(line)
            // A line with a timestamp or an id in it: the problem line that
            // holds it may be counted into another of its shape, and the
            // id would be gone.
            && shape(line) == line.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let mut out = Vec::with_capacity(lines.len());
    for (line, problem) in lines.into_iter().zip(problem) {
        if problem || !echo(&line) {
            out.push(line);
        } else {
            dropped.repeated += 1;
        }
    }
    out
}

/// What failure focus dropped, by kind: the closing marker says what was
/// cut, so a reader knows whether anything of the kind they need went.
#[derive(Default)]
struct Dropped {
    /// Progress, passing tests, headers, hints ([`ROUTINE_DROP`]), and the
    /// details of a passing TAP test.
    routine: usize,
    /// Source shown around a failing line or under a warning, a failing
    /// test's locals.
    source: usize,
    /// What a second view of the same change says again ([`Listed`]).
    repeated: usize,
    /// A diff's context lines, redundant headers and unsampled hunk
    /// positions.
    diff: usize,
    /// Notes on how a lint is configured and where it is documented.
    boilerplate: usize,
    /// What an earlier compression of this text said it dropped (its
    /// marker gives the count, not the kinds).
    earlier: usize,
}

impl Dropped {
    /// Each kind as its marker names it, with its count.
    fn kinds(&self) -> [(&'static str, usize); 6] {
        [
            ("routine", self.routine),
            ("source", self.source),
            ("repeated", self.repeated),
            ("diff context", self.diff),
            ("boilerplate", self.boilerplate),
            ("earlier", self.earlier),
        ]
    }

    fn slot(&mut self, kind: &str) -> Option<&mut usize> {
        Some(match kind {
            "routine" => &mut self.routine,
            "source" => &mut self.source,
            "repeated" => &mut self.repeated,
            "diff context" => &mut self.diff,
            "boilerplate" => &mut self.boilerplate,
            "earlier" => &mut self.earlier,
            _ => return None,
        })
    }

    fn total(&self) -> usize {
        self.kinds().iter().map(|(_, n)| n).sum()
    }

    /// What [`Dropped::marker`] wrote, read back: its count, as lines an
    /// earlier compression dropped.
    fn parse(line: &str) -> Option<Dropped> {
        let n = line.strip_prefix("[… ")?;
        let n = n
            .strip_suffix(" lines dropped]")
            .or_else(|| n.strip_suffix(" line dropped]"))?;
        // The marker of ooda before 2026-12-07 listed kinds: `5 routine, 4
        // source` (a text compressed then is read back the same).
        let earlier = match n.parse() {
            Ok(n) => n,
            Err(_) => counts(n)?.iter().map(|(n, _)| n).sum(),
        };
        Some(Dropped {
            earlier,
            ..Dropped::default()
        })
    }

    fn add(&mut self, other: &Dropped) {
        for (kind, n) in other.kinds() {
            *self.slot(kind).expect("a kind of its own") += n;
        }
    }

    /// `[… 9 lines dropped]`: how many, so a reader knows the output is not
    /// all there was. Not by kind: the marker closes every compressed
    /// output an agent reads, and where a runner's report is all failures
    /// (pytest's) a list of kinds was most of what ooda added to them.
    /// `ooda compress --json` gives the kinds ([`compress_accounted`]).
    fn marker(&self) -> Option<String> {
        let total = self.total();
        match total {
            0 => None,
            1 => Some("[… 1 line dropped]".to_string()),
            n => Some(format!("[… {n} lines dropped]")),
        }
    }

    /// The kinds with a count, by name.
    fn by_kind(&self) -> std::collections::BTreeMap<String, usize> {
        self.kinds()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| ((*k).to_string(), *n))
            .collect()
    }
}

/// A marker's list read back: `5 routine, 4 source` as (count, kind).
fn counts(list: &str) -> Option<Vec<(usize, &str)>> {
    list.split(", ")
        .map(|part| {
            let (n, kind) = part.split_once(' ')?;
            Some((n.parse().ok()?, kind))
        })
        .collect()
}

/// Lines a reader skips in any log of these tools: build progress, passing
/// and skipped tests, the structure between test binaries, git's hints, a
/// download's connection chatter, pytest's session header. Dropped and
/// counted (one marker at the end says how many), never when they look
/// important (a skip whose reason names an error stays).
///
/// A skipped test is as routine as a passing one: it says nothing about
/// the change under test, and a suite with many skips (`pytest -v` on a
/// machine without an optional dependency) printed one line per skip that
/// survived compression. The runners' own words for it: pytest's
/// `SKIPPED` (per test and in `-rs`'s summary), cargo's `... ignored`,
/// unittest's `... skipped`, go's `--- SKIP:`, jest's `○`, vitest's `↓`,
/// node's `﹣ … # SKIP` (TAP's `ok N - … # SKIP` is an `ok` line already).
/// The counts (`1 skipped`) are in the runner's summary, which stays. A
/// test expected to fail (`XFAIL`, `expected failure`) is left alone: its
/// words read as a failure's, and the line is kept as one.
static ROUTINE_DROP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(Compiling|Checking|Downloading|Downloaded|Fresh|Locking|Adding|Updating|Installing|Collecting) \S",
        r"|^test \S.* \.\.\. ok$|^\S+::\S+ PASSED\b|^ok \d+ - |^# Subtest: ",
        r"|^\s*Running (unittests |tests/|benches/)|^running \d+ tests?$|^\s*Doc-tests \S+$",
        r#"|^\s*\(use "git .*\)$|^no changes added to commit"#,
        r"|^Resolving \S|^Connecting to \S|^HTTP request sent|^Length: |^Saving to: ",
        r"|^\s*RUN\s+v\d\S* |^\s*Start at |^platform \S+ -- Python|^rootdir: |^configfile: |^testpaths: |^cachedir: |^plugins: |^collected \d+ items?$|^=+ test session starts =+$",
        r"|^(_ )+_$|^(\S+\.py )?[.FEsxX]+\s*\[\s*\d+%\]$|^=+ short test summary info =+$|^collecting \.\.\. collected \d+ items?$",
        r"|^--\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}--  \S|\d+%\[[=> ]*\]",
        r"|^\S+::\S+ SKIPPED\b|^SKIPPED \[\d+\] \S|^test \S.* \.\.\. ignored\b|^\S.* \.\.\. skipped\b",
        r"|^\s*--- SKIP: |^\s*[○↓] \S|^\s*﹣ .*# SKIP\b",
    ))
    .expect("static regex is valid")
});

/// A test that passed (`name PASSED`, `test x ... ok`, unittest's `test_x
/// (mod.Class.test_x) ... ok`, `ok 3 - x`, `✓ x`,
/// `--- PASS: X`, `PASS [0.1s] x`), or one starting (`=== RUN X`, a bare
/// `file::test` id before its result).
static PASSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\S+::\S+ PASSED\b|^\S.* \.\.\. ok$|^ok \d+ - |^\s*[✓✔√] |^\s*--- PASS: ",
        r"|^\s*PASS \[|^=== (RUN|PAUSE|CONT) |^\S+\.py::\S+$|^PASSED \S+::",
    ))
    .expect("static regex is valid")
});

/// A line that only draws: rules, separators, a counter between them
/// (`⎯⎯⎯[1/3]⎯`). Not a progress bar (it has a `%`), nor pytest's dots.
static DECORATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[\s\p{S}\p{Pd}_=*#~|/\\-]*(\[\d+/\d+\])?[\s\p{S}\p{Pd}_=*#~|/\\-]*$")
        .expect("static regex is valid")
});

/// A compiler's error, whose source snippet is kept: rustc's `error[E…]:`,
/// gcc's and clang's `file:line:col: error:`, tsc's `error TS…`.
static COMPILER_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^error(\[\w+\])?:|:\d+(:\d+)?: (fatal )?error:|\berror TS\d+")
        .expect("static regex is valid")
});

/// A section's title between rules of `=` (pytest's `=== PASSES ===`,
/// `=== warnings summary ===`): words only, so that a closing count
/// (`=== 3 passed in 0.1s ===`) is none. One with another title right
/// under it heads nothing (`-rA`'s `PASSES` when no passing test printed
/// anything) and goes, unless it is important (`FAILURES`) or a verdict
/// ([`VERDICT`]); the last line is never one (nothing follows it).
static SECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^={3,} [A-Za-z][A-Za-z ]*[A-Za-z] ={3,}\s*$").expect("static regex is valid")
});

/// A title that says how things went (`=== ALL TESTS PASSED ===`, `===
/// Done ===`, `=== BUILD SUCCESSFUL ===`): a verdict, kept wherever it is.
static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(pass|passed|success|successful|succeeded|done|ok|complete|completed",
        r"|finished|fail|failed|failure|error|errors|abort|aborted)\b"
    ))
    .expect("static regex is valid")
});

/// The header of one failing test in pytest's report: `___ test_x ___`.
static PYTEST_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^_{3,} (\S.*?) _{3,}$").expect("static regex is valid"));

/// A diff's file header lines that repeat what `diff --git` says.
static DIFF_NOISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(index [0-9a-f]+\.\.[0-9a-f]+|--- (a/|/dev/null)|\+\+\+ (b/|/dev/null))")
        .expect("static regex is valid")
});

/// How many changed lines of one file a diff keeps beside the important
/// ones: enough to see what kind of change it is; the count of the rest is
/// given.
const DIFF_LINES_PER_FILE: usize = 1;

/// How many such sample lines a whole diff shows (the first files'); every
/// file keeps its header, its important lines and its count.
const DIFF_SAMPLES: usize = 8;

/// Failure focus, before anything is grouped: routine lines go (see
/// [`ROUTINE_DROP`]), so do blank lines, the indented details of a passing
/// TAP test, the source snippets under a compiler *warning* (an error keeps
/// its snippet), a diff's body past [`DIFF_LINES_PER_FILE`] changed
/// lines per file (`diff --git` headers and hunk positions stay), what a
/// second view of the same change says again ([`Listed`]), and what pytest
/// prints twice ([`Failures`], [`tighten_details`]). Returns the lines kept
/// and how many went.
fn focus(lines: Vec<String>) -> (Vec<String>, Dropped) {
    #[derive(PartialEq)]
    enum In {
        Plain,
        /// Under a passing TAP test: its indented YAML goes too.
        PassedTest,
        /// Under a compiler warning, until a blank line.
        Warning,
        /// In one file of a diff: changed lines shown and hidden, and the
        /// old and new lines left in the current hunk (from its `@@`).
        Diff {
            shown: usize,
            hidden: usize,
            old: usize,
            new: usize,
        },
        /// In one failing test of a pytest report: the failing line (`>`),
        /// the assertion (`E`) and the locations stay, the source around
        /// them goes (what `--tb=short` would have left out).
        PytestFailure,
    }
    let listed = Listed::of(&lines);
    let mut out = Vec::with_capacity(lines.len());
    let mut dropped = Dropped::default();
    let mut state = In::Plain;
    let mut samples = DIFF_SAMPLES;
    let mut pytest = Failures::default();
    // The line before was a problem, its location or its code frame.
    let mut near_problem = false;
    // The last problem named was a compiler's error (its snippet stays).
    let mut compiler_error = false;
    // The header of the warning being read, until another line is kept.
    let mut last_warning: Option<String> = None;
    // A file's diff ends: the count of its changed lines not shown.
    let end_of_file = |state: &In, out: &mut Vec<String>| {
        if let In::Diff { hidden, .. } = state
            && *hidden > 0
        {
            out.push(format!("… (+{hidden} changed lines)"));
        }
    };
    // A diagnostic's header, whatever its words: the line its `-->`
    // location follows (a linter's `E501 Line too long`).
    // (Not a fold's own line: `… (5 lines as above, …)`.)
    let headers: std::collections::HashSet<usize> = (1..lines.len())
        .filter(|&i| {
            lines[i].trim_start().starts_with("--> ") && !lines[i - 1].starts_with(['…', '['])
        })
        .map(|i| i - 1)
        .collect();
    // Section titles ([`SECTION`]) with another title next: their section
    // is empty.
    let empty_sections: std::collections::HashSet<usize> = (0..lines.len())
        .filter(|&i| {
            SECTION.is_match(&lines[i])
                && !VERDICT.is_match(&lines[i])
                && lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|next| SECTION.is_match(next) || next.starts_with("==="))
        })
        .collect();
    for (at, line) in lines.into_iter().enumerate() {
        if empty_sections.contains(&at) && !is_important(&line) {
            dropped.routine += 1;
            continue;
        }
        if keep::BOILERPLATE.is_match(line.trim()) {
            dropped.boilerplate += 1;
            continue;
        }
        // A test that passed, or one starting, is routine whatever its
        // name says (`test_parse_error PASSED`).
        if PASSING.is_match(&line) {
            dropped.routine += 1;
            continue;
        }
        let important = is_important(&line);
        if line.starts_with("diff --git ") {
            end_of_file(&state, &mut out);
            state = In::Diff {
                shown: 0,
                hidden: 0,
                old: 0,
                new: 0,
            };
            out.push(line);
            continue;
        }
        if let In::Diff {
            shown,
            hidden,
            old,
            new,
        } = &mut state
        {
            match diff_line(&line, old, new) {
                None => {
                    // Not a diff's line: the diff is over, and this line is
                    // read like any other.
                    end_of_file(&state, &mut out);
                    state = In::Plain;
                }
                Some(kind) => {
                    let sample = *shown < DIFF_LINES_PER_FILE && samples > 0;
                    // A diff is code: a type or function named after an
                    // error (`ParseError`, `syntax_errors`) is no problem
                    // report, a problem word standing as a word may be.
                    let important = important && PROBLEM_WORD.is_match(&line);
                    match kind {
                        _ if important => out.push(line),
                        DiffLine::Header if DIFF_NOISE.is_match(&line) => dropped.diff += 1,
                        DiffLine::Header => out.push(line),
                        DiffLine::Context => dropped.diff += 1,
                        // Where the hunk is; the function it is in is a
                        // long echo. Only shown with a sample under it.
                        DiffLine::Hunk if sample => out.push(match line[2..].find("@@") {
                            Some(end) => line[..end + 4].to_string(),
                            None => line,
                        }),
                        DiffLine::Hunk => dropped.diff += 1,
                        DiffLine::Change if sample => {
                            *shown += 1;
                            samples -= 1;
                            out.push(line);
                        }
                        DiffLine::Change => *hidden += 1,
                    }
                    continue;
                }
            }
        }
        // Read outside a diff's hunks only: there such a line is context.
        if listed.again(&line) && !important {
            dropped.repeated += 1;
            continue;
        }
        if PYTEST_TEST.is_match(&line) {
            if state == In::PytestFailure {
                pytest.close(&mut out);
            }
            state = In::PytestFailure;
            pytest.open(&line, &mut out);
            continue;
        }
        if state == In::PytestFailure {
            if line.starts_with("===") {
                pytest.close(&mut out);
                state = In::Plain;
            } else if line.trim().is_empty() {
                continue;
            } else if let Some(at) = pytest.frame(&line) {
                out.push(at);
                continue;
            } else if std::mem::take(&mut pytest.after_frame) && !ROUTINE_DROP.is_match(&line) {
                // `--tb=short`'s one source line under a frame: the line
                // that raised or called, kept like long form's `>` line
                // (and read so again once its indentation is gone).
                out.push(tidy(line.trim_start(), important));
                continue;
            } else if !important
                && (line.starts_with(' ')
                    || PYTEST_LOCAL.is_match(&line)
                    || ROUTINE_DROP.is_match(&line))
            {
                // The source around the failing line, the test's locals,
                // the separators between frames.
                if ROUTINE_DROP.is_match(&line) {
                    dropped.routine += 1;
                } else {
                    dropped.source += 1;
                }
                continue;
            } else {
                // A source line kept stands alone: its indentation no
                // longer shows a block.
                out.push(tidy(line.trim_start(), important));
                continue;
            }
        }
        let indented = line.starts_with(' ');
        // Blank lines are layout, not lines anyone misses: not counted. One
        // ends a compiler warning's snippet.
        if line.trim().is_empty() {
            if state == In::Warning {
                state = In::Plain;
            }
            near_problem = false;
            continue;
        }
        let routine = ROUTINE_DROP.is_match(&line) || DECORATION.is_match(&line);
        let kind = Keep::of(&line);
        // Set by a problem's header only: its location and notes that
        // follow leave it as it is.
        if !indented && matches!(kind, Some(Keep::Error | Keep::Warning)) && !is_code(&line) {
            compiler_error = COMPILER_ERROR.is_match(&line);
        }
        // A failing test's or a runtime error's code frame: the location
        // says where, the file is at hand. A compiler's error keeps its
        // snippet: the span it marks is the error.
        if is_snippet(&line) && near_problem && !compiler_error && state != In::Warning {
            dropped.source += 1;
            continue;
        }
        // Whether a code frame here would be the one of a problem: right
        // under a problem, its location or its frame, no blank between.
        // (A row of a table after a row naming a failure is no frame: only
        // a location opens one.)
        near_problem = keep::mentions_location(&line) || (near_problem && is_snippet(&line));
        // A warning's header: a reader needs what and where, and the tool
        // says more with `--explain` or its documentation.
        let warning = !indented
            && !is_code(&line)
            && (kind == Some(Keep::Warning) || (headers.contains(&at) && kind.is_none()));
        let error_header = !indented && !is_code(&line) && COMPILER_ERROR.is_match(&line);
        if (warning || error_header) && last_warning.as_deref() == Some(line.as_str()) {
            // The same diagnostic again, right after: its location is
            // listed under the first, its source not shown again.
            dropped.repeated += 1;
            state = In::Warning;
            continue;
        }
        // The details of a passing test, or what a warning shows beside
        // its location: source, notes, suggested fixes.
        let under = (state == In::PassedTest && indented)
            || (state == In::Warning && !warning && under_warning(&line));
        // Code shown under a warning is code, whatever words it holds
        // (`assert x`, `warnings.warn(`).
        let code = state == In::Warning && !warning && is_code(&line);
        let drop = (!important && (routine || under)) || code;
        if line.starts_with("ok ") && routine {
            state = In::PassedTest;
        } else if warning {
            state = In::Warning;
            last_warning = Some(line.clone());
        } else if error_header {
            state = In::Plain;
            last_warning = Some(line.clone());
        } else if last_warning.is_some()
            && state == In::Plain
            && (kind == Some(Keep::Location) || is_code(&line) || under_warning(&line))
        {
            // A compiler error's location, source, notes and help: the
            // error goes on.
        } else if !(under || state == In::Warning && kind == Some(Keep::Location)) {
            state = In::Plain;
            last_warning = None;
        }
        if drop && !routine && state == In::Warning {
            // A warning's snippet; a passing TAP test's details are routine.
            dropped.source += 1;
        } else if drop {
            dropped.routine += 1;
        } else {
            out.push(tidy(&line, important));
        }
    }
    end_of_file(&state, &mut out);
    if state == In::PytestFailure {
        pytest.close(&mut out);
    }
    tighten_details(&mut out);
    (out, dropped)
}

/// A line as kept: a routine line loses its alignment and banner padding
/// ([`undecorated`]); an important one stays as printed (a reader searches
/// for it as it is, and in a diff its blanks are the code's indentation),
/// but for the gap after pytest's `>` marker, which becomes one blank. `E`
/// lines are left to [`tighten_details`], which sees their whole block.
fn tidy(line: &str, important: bool) -> String {
    if E_LINE.is_match(line) {
        return line.to_string();
    }
    if let Some(rest) = line.strip_prefix('>')
        && rest.starts_with(char::is_whitespace)
    {
        let rest = rest.trim_start();
        return if important {
            format!("> {rest}")
        } else {
            format!("> {}", undecorated(rest))
        };
    }
    if !important {
        undecorated(line)
    } else if PYTEST_RESULT.is_match(line) {
        // `-v`'s column of percentages is alignment, not the result.
        PADDING.replace_all(line, " ").into_owned()
    } else {
        line.to_string()
    }
}

/// A test's result in pytest's `-v` run: `t.py::test_x FAILED   [ 48%]`.
static PYTEST_RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\S+::\S+ (?:FAILED|ERROR|XPASS|XFAIL|SKIPPED)\s+\[\s*\d+%\]$")
        .expect("static regex is valid")
});

/// A pytest detail line: `E` and the gap its report aligns with.
static E_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^E(?:[ \t]+\S|$)").expect("static regex is valid"));

/// pytest's `E` lines, block by block: the gap every line of a block shares
/// becomes one blank (what stays of it is the detail's own indentation, a
/// diff's nesting), and an `E` with nothing after it, the blank line of a
/// message, goes. A fold's marker between two lines of one block does not
/// end it, so a second pass reads the same blocks.
fn tighten_details(lines: &mut Vec<String>) {
    // Blanks are ASCII here (see E_LINE): the cut below is at a character.
    let gap = |l: &str| l[1..].len() - l[1..].trim_start_matches([' ', '\t']).len();
    let mut i = 0;
    while i < lines.len() {
        if !E_LINE.is_match(&lines[i]) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < lines.len() && (E_LINE.is_match(&lines[end]) || lines[end].starts_with("… (×"))
        {
            end += 1;
        }
        let block = &lines[i..end];
        let shared = block
            .iter()
            .filter(|l| l.len() > 1 && E_LINE.is_match(l))
            .map(|l| gap(l))
            .min();
        let Some(shared) = shared else {
            // Only bare `E` lines: nothing to tell them from another tool's.
            i = end;
            continue;
        };
        let mut kept = Vec::with_capacity(end - i);
        for l in block {
            if l == "E" {
                continue;
            }
            if E_LINE.is_match(l) && shared > 1 {
                kept.push(format!("E {}", &l[1 + shared..]));
            } else {
                kept.push(l.clone());
            }
        }
        let n = kept.len();
        lines.splice(i..end, kept);
        i += n;
    }
}

/// A problem word standing as a word (its start not inside a longer name).
static PROBLEM_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(error|warn|panic|fail|fatal|exception|traceback|assert)")
        .expect("static regex is valid")
});

/// What two views of one change list twice: the files a diff's `--stat`
/// counts that the diff itself shows (with its own counts), the entries of
/// `git status --porcelain` that the long `git status` names, and its
/// `## branch` line after `On branch`.
#[derive(Default)]
struct Listed {
    /// Files with a `diff --git` header.
    diffed: std::collections::HashSet<String>,
    /// Files git status's long form lists.
    status: std::collections::HashSet<String>,
    /// The branch of `On branch`.
    branch: Option<String>,
}

impl Listed {
    fn of(lines: &[String]) -> Listed {
        let mut l = Listed::default();
        for line in lines {
            if let Some(rest) = line.strip_prefix("diff --git ") {
                if let Some((_, b)) = rest.split_once(" b/") {
                    l.diffed.insert(b.to_string());
                }
            } else if let Some(c) = STATUS_ENTRY.captures(line) {
                l.status.insert(c[1].to_string());
            } else if let Some(b) = line.strip_prefix("On branch ") {
                l.branch = Some(b.trim().to_string());
            }
        }
        l
    }

    /// Whether `line` says again what another line of the input says.
    fn again(&self, line: &str) -> bool {
        if let Some(c) = STAT_LINE.captures(line) {
            return self.diffed.contains(c[1].trim_end());
        }
        if let Some(c) = PORCELAIN.captures(line) {
            return self.status.contains(&c[1]);
        }
        line.strip_prefix("## ").is_some_and(|b| {
            self.branch
                .as_deref()
                .is_some_and(|ours| b.split("...").next() == Some(ours))
        })
    }
}

/// A file of git status's long form: `\tmodified:   path` or, untracked,
/// `\tpath`.
static STATUS_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\t(?:(?:modified|deleted|new file|typechange):\s+)?(\S[^\t]*)$")
        .expect("static regex is valid")
});

/// One file of `git diff --stat`: ` path | 12 +-`.
static STAT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ (\S.*?)\s+\|\s+(?:\d+(?: [+-]+)?|Bin .*)$").expect("static regex is valid")
});

/// One entry of `git status --porcelain`: two status letters and a path.
static PORCELAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[MTADRCU?!][ MTADRCU?!]|[ MTADRCU?!][MTADRCU?!]) (\S.*)$")
        .expect("static regex is valid")
});

/// pytest's failures, as its report goes: each test's header names it (the
/// short summary's line says it again, in another spelling); a failure
/// whose frames are those of the failure before it (a parametrised test
/// failing on one line for several cases) shows its `E` lines and says so,
/// not the frames again.
#[derive(Default)]
struct Failures {
    /// Where the open failure's lines start in the output.
    open: Option<usize>,
    /// The previous failure's frames: its lines but the `E` lines.
    previous: Vec<String>,
    /// The line before was a `--tb=short` frame's location.
    after_frame: bool,
}

impl Failures {
    /// The header goes as the test's name alone (`___ test_x ___` becomes
    /// `test_x`): under `FAILURES` a name on a line of its own opens a
    /// failure well enough, and its rules were most of what a compressed
    /// report held beyond the failures themselves.
    fn open(&mut self, header: &str, out: &mut Vec<String>) {
        let name = PYTEST_TEST
            .captures(header)
            .map_or(header, |c| c.get(1).map_or(header, |m| m.as_str()));
        out.push(name.to_string());
        self.open = Some(out.len());
        self.after_frame = false;
    }

    /// A frame's location with its source line under it (`--tb=short`'s
    /// `tests/t.py:9: in test_x`, or a long form's `tests/t.py:9:` between
    /// frames), kept as printed: it is where the failure went through.
    fn frame(&mut self, line: &str) -> Option<String> {
        SHORT_FRAME.is_match(line).then(|| {
            self.after_frame = true;
            line.to_string()
        })
    }

    fn close(&mut self, out: &mut Vec<String>) {
        let Some(start) = self.open.take() else {
            return;
        };
        let frames: Vec<String> = out[start..]
            .iter()
            .filter(|l| !E_LINE.is_match(l))
            .cloned()
            .collect();
        if !frames.is_empty() && frames == self.previous {
            let details: Vec<String> = out.drain(start..).filter(|l| E_LINE.is_match(l)).collect();
            out.push(SAME_FRAMES.to_string());
            out.extend(details);
        } else {
            self.previous = frames;
        }
    }
}

/// A frame's location in `--tb=short`'s traceback: `tests/t.py:9: in f`.
static SHORT_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+:\d+):(?: in (\S+))?$").expect("static regex is valid"));

/// What replaces a failure's frames when they are the previous failure's.
const SAME_FRAMES: &str = "… (traceback as above)";

/// `line` with the padding of a banner shortened: `=== title ===` for a
/// line of eighty `=` around a title (`=`, `_`, `-`, `═`, `─`).
/// Runs of three or more blanks inside the line (alignment padding) become
/// one; the indentation stays.
fn undecorated(line: &str) -> String {
    let line = match BANNER.captures(line) {
        Some(c) => {
            let pad: String = c[1].chars().take(3).collect();
            format!("{pad} {} {pad}", &c[2])
        }
        None => line.to_string(),
    };
    let body = line.trim_start();
    // Cargo right-aligns its status word in a column of twelve
    // (`    Finished`): a column, not a block's indentation.
    let indent = &line[..line.len() - body.len()];
    if CARGO_STATUS.is_match(body) && indent.len() + body.find(' ').unwrap_or(body.len()) == 12 {
        return PADDING.replace_all(body, " ").into_owned();
    }
    if body.contains("   ") {
        format!("{indent}{}", PADDING.replace_all(body, " "))
    } else {
        line
    }
}

/// Cargo's status verbs (right-aligned in a column of twelve).
static CARGO_STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(Adding|Archiving|Blocking|Building|Checking|Compiling|Doc-tests|Documenting",
        r"|Downloaded|Downloading|Executable|Finished|Fresh|Generated|Installed|Installing",
        r"|Locking|Packaging|Removed|Replacing|Running|Summary|Updating|Uploading|Verifying|Waiting) \S",
    ))
    .expect("static regex is valid")
});

static PADDING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r" {3,}").expect("static regex is valid"));

static BANNER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:={4,})|(?:_{4,})|(?:-{4,})|(?:═{4,})|(?:─{4,})) (.+?) [=_\-═─]{4,}$")
        .expect("static regex is valid")
});

/// A title between rules, as printed or as [`undecorated`] left it
/// (`--- Captured stdout call ---`, `=== PASSES ===`).
static TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:={3,}|_{3,}|-{3,}|═{3,}|─{3,}|\*{3,}|~{3,}) \S.*? [=_\-═─*~]{3,}$")
        .expect("static regex is valid")
});

/// A test's local variable in pytest's report (`n = 31337`).
static PYTEST_LOCAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_]\w* = ").expect("static regex is valid"));

/// What a line of a diff is, after its `diff --git` header.
enum DiffLine {
    /// `index`, `---`/`+++`, mode, rename and similarity lines.
    Header,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    /// An unchanged line inside a hunk (or `\ No newline at end of file`).
    Context,
    /// An added or removed line inside a hunk.
    Change,
}

/// Reads one line of a file's diff, counting down the hunk's `old` and
/// `new` lines; `None` for a line no diff has here (the diff is over).
fn diff_line(line: &str, old: &mut usize, new: &mut usize) -> Option<DiffLine> {
    if *old > 0 || *new > 0 {
        return match line.as_bytes().first() {
            Some(b'+') => {
                *new = new.saturating_sub(1);
                Some(DiffLine::Change)
            }
            Some(b'-') => {
                *old = old.saturating_sub(1);
                Some(DiffLine::Change)
            }
            // A blank context line has lost its one space to trimming.
            Some(b' ') | None => {
                *old = old.saturating_sub(1);
                *new = new.saturating_sub(1);
                Some(DiffLine::Context)
            }
            Some(b'\\') => Some(DiffLine::Context),
            _ => None,
        };
    }
    if let Some(c) = HUNK.captures(line) {
        let count = |i: usize| c.get(i).map_or(1, |m| m.as_str().parse().unwrap_or(1));
        *old = count(1);
        *new = count(2);
        return Some(DiffLine::Hunk);
    }
    if line.starts_with('\\') {
        return Some(DiffLine::Context);
    }
    DIFF_HEADER.is_match(line).then_some(DiffLine::Header)
}

static HUNK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@").expect("static regex is valid")
});

static DIFF_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(index |old mode |new mode |deleted file mode |new file mode |similarity index |dissimilarity index |rename from |rename to |copy from |copy to |Binary files |--- |\+\+\+ )")
        .expect("static regex is valid")
});

/// A line of what a compiler or linter prints under a warning beside its
/// location: its source snippet, notes and help (`= note:`, `help:`,
/// `note:`), a suggested fix (`12 + code`, `12 ~ code`), and anything
/// indented.
fn under_warning(line: &str) -> bool {
    let t = line.trim_start();
    is_snippet(line)
        || line.starts_with(' ')
        || t.starts_with("= ")
        || t.starts_with("help:")
        || t.starts_with("note:")
        || SUGGESTION.is_match(t)
}

/// Source shown in a diagnostic: a snippet's gutter line, a suggested
/// fix's numbered or bare `-`/`+`/`~` line.
fn is_code(line: &str) -> bool {
    let t = line.trim_start();
    is_snippet(line) || SUGGESTION.is_match(t) || BARE_SUGGESTION.is_match(t)
}

/// An unnumbered line of a suggested fix: `-    old`, `+    new`.
static BARE_SUGGESTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[-+~]\s{2,}").expect("static regex is valid"));

/// A line of a suggested fix: `12 + new`, `12 - old`, `12 ~ changed`.
static SUGGESTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+ [-+~] ").expect("static regex is valid"));

/// A line of rustc's source snippet: a gutter `  |` or `12 |` line (its
/// `  --> file:line` is the warning's location, and stays).
fn is_snippet(line: &str) -> bool {
    let t = line.trim_start();
    // A gutter is indented: `| col | val |` at the margin is a table.
    (t.starts_with('|') && t.len() < line.len()) || {
        let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
        digits.len() < t.len() && digits.trim_start().starts_with('|')
    }
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    // CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) ended by
    // BEL or ST (or cut off at the line's end), charset selections (`tput sgr0` emits
    // ESC ( B), then any other two-byte escape.
    Regex::new(
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[()*+][0-9A-Za-z]|\x1b[@-_]",
    )
        .expect("static regex is valid")
});

/// A line no pass drops or folds into a different one: a problem word
/// anywhere in it (loosely: `ValueError`, `0 failed` too), or a kind of line
/// a reader needs ([`Keep`]: a location, a failure's detail, a summary, an
/// identifier).
fn is_important(line: &str) -> bool {
    IMPORTANT.is_match(line) || Keep::of(line).is_some()
}

static IMPORTANT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)error|warn|panic|fail|fatal|exception|traceback|assert|^\s*not ok\b|\bcode [45]\d\d\b|" [45]\d\d |\bcannot\b|\bcan't\b|\bunable to\b|\bdenied\b|\bnot found\b|\bno such file\b|\bundefined reference\b|\bsegmentation fault\b|\bkilled\b|\brefused\b|\btimed out\b|\bcore dumped\b"#,
    )
        .expect("static regex is valid")
});

static DIGITS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[0-9]+").expect("static regex is valid"));

/// Tokens that differ on every line of a log and say nothing about what
/// happened: timestamps, UUIDs, hex ids of eight or more characters (trace
/// ids, commit hashes). Timestamps and UUIDs go first: both contain what
/// would otherwise read as hex.
static VOLATILE: LazyLock<[(Regex, &'static str); 5]> = LazyLock::new(|| {
    let re = |r: &str| Regex::new(r).expect("static regex is valid");
    [
        (
            re(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
            "<T>",
        ),
        (re(r"\d{2}/[A-Z][a-z]{2}/\d{4}[ :]\d{2}:\d{2}:\d{2}"), "<T>"),
        (re(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<T>"),
        (
            re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
            "<U>",
        ),
        // Eight or more hex digits; only with a letter among them, or
        // twelve or more (see `shape`): a plain number (a count, a date as
        // 20240101) is no id, a 16-digit trace id of digits only is.
        (re(r"\b[0-9a-fA-F]{8,}\b"), "<H>"),
    ]
});

/// `line` with its volatile tokens replaced (`<T>`, `<U>`, `<H>`) and runs
/// of blanks as one: lines of one shape differ only in when and which id.
/// Plain numbers stay: a count such as `3 failed` matters.
fn shape(line: &str) -> String {
    let mut out = line.to_string();
    for (re, token) in VOLATILE.iter() {
        if !re.is_match(&out) {
            continue;
        }
        out = if *token == "<H>" {
            re.replace_all(&out, |c: &regex::Captures| {
                // With a letter among the digits only: `123456789012` in an
                // assertion is a value, not an id.
                if c[0].bytes().any(|b| b.is_ascii_alphabetic()) {
                    "<H>".to_string()
                } else {
                    c[0].to_string()
                }
            })
            .into_owned()
        } else {
            re.replace_all(&out, *token).into_owned()
        };
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without ANSI escapes (colours, cursor moves): what a terminal
/// shows, and what a reason in an iteration file must hold.
pub fn strip_ansi(text: &str) -> String {
    ANSI.replace_all(text, "").into_owned()
}

/// ANSI stripped, progress redraws resolved to their final state, control characters and
/// trailing whitespace removed.
fn clean_lines(text: &str) -> Vec<String> {
    let text = ANSI.replace_all(text, "");
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            // A progress bar redraws with \r: what the terminal finally showed is the
            // last non-empty segment (a trailing \r before \n leaves an empty one).
            let shown = line
                .rsplit('\r')
                .find(|segment| !segment.is_empty())
                .unwrap_or("");
            shown
                .chars()
                .filter(|c| *c == '\t' || !c.is_control())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// One output line, standing for `lines` lines of the input.
#[derive(Debug, Clone)]
struct Entry {
    text: String,
    /// What makes two entries alike: for an important line (or one naming
    /// a file) its shape (only volatile tokens may differ), for any other
    /// its shape with digit runs as `#`.
    key: String,
    important: bool,
    /// The line's [`shape`] when it holds volatile tokens (a log line).
    volatile: Option<String>,
    lines: usize,
}

impl Entry {
    fn marker(text: String, lines: usize) -> Entry {
        Entry {
            // Alike only to the same marker.
            key: format!("<marker>{text}"),
            text,
            important: false,
            volatile: None,
            lines,
        }
    }

    /// `line`, repeated `run` times; `summary`: under a summary's heading
    /// ([`summary_blocks`]), important whatever it says.
    fn of(line: &str, run: usize, summary: bool) -> Entry {
        // A marker an earlier run wrote, read back: still a marker.
        if MARKER_LINE.is_match(line) {
            return Entry::marker(line.to_string(), run);
        }
        let important = summary || is_important(line);
        let shaped = shape(line);
        // An identifier (a commit's hash) is never masked into a count.
        let volatile = (!keep::holds_id(line)
            && shaped != line.split_whitespace().collect::<Vec<_>>().join(" "))
        .then(|| shaped.clone());
        // A file a change touched is named, not folded into "similar".
        let key = if keep::identifies(line) {
            // Alike to no other: an identifier is what it is.
            line.to_string()
        } else if important || keep::mentions_location(line) {
            shaped
        } else {
            DIGITS.replace_all(&shaped, "#").into_owned()
        };
        let text = if run > 1 && !line.is_empty() {
            format!("{line} (×{run})")
        } else {
            // A run of blank lines becomes one blank line.
            line.to_string()
        };
        Entry {
            text,
            key,
            important,
            volatile,
            lines: run,
        }
    }
}

fn collapse_repeats(lines: &[String]) -> Vec<Entry> {
    let summary = summary_blocks(lines);
    let mut entries: Vec<Entry> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let run = lines[i..].iter().take_while(|l| *l == line).count();
        entries.push(Entry::of(line, run, summary[i]));
        i += run;
    }
    entries
}

/// The most lines a summary's heading keeps from folding: a longer block
/// is a report, read as any other lines.
const SUMMARY_BLOCK: usize = 24;

/// Which lines are a summary: a heading that names one (`LEAK SUMMARY:`,
/// `[INFO] Reactor Summary:`, `=== Summary ===`) and the lines under it, up
/// to the first with nothing after the heading's own prefix (`==4711==`)
/// or the next such heading, when there are at most [`SUMMARY_BLOCK`].
///
/// Why: a summary's lines are one template with different values
/// (`definitely lost: 8 bytes`, `indirectly lost: 44 bytes`, …), so the
/// template pass would fold them into the first line's `(×4 similar)` and
/// lose every category but one; what a heading calls a summary is what a
/// reader came for.
fn summary_blocks(lines: &[String]) -> Vec<bool> {
    let mut marked = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let Some(prefix) = summary_heading(&lines[i]) else {
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < lines.len() {
            let rest = lines[end].trim();
            let rest = rest.strip_prefix(prefix).unwrap_or(rest).trim();
            if rest.is_empty() || summary_heading(&lines[end]).is_some() {
                break;
            }
            end += 1;
        }
        if end - i - 1 <= SUMMARY_BLOCK {
            marked[i..end].fill(true);
        }
        i = end;
    }
    marked
}

/// A heading that names a summary, with the prefix its block's lines share
/// (its first word when that holds digits and no letter, valgrind's
/// `==4711==`, or is bracketed, Maven's `[INFO]`).
fn summary_heading(line: &str) -> Option<&str> {
    // Most lines never say it: asked first, before any regex.
    if !line
        .as_bytes()
        .windows(7)
        .any(|w| w.eq_ignore_ascii_case(b"summary"))
    {
        return None;
    }
    let t = line.trim();
    let first = t.split_whitespace().next()?;
    let prefix = if first.len() < t.len()
        && (is_mark(first) || (first.starts_with('[') && first.ends_with(']')))
    {
        first
    } else {
        ""
    };
    let rest = t[prefix.len()..].trim();
    SUMMARY_HEADING.is_match(rest).then_some(prefix)
}

/// A few words naming a summary, as a heading: ending in a colon
/// (`Reactor Summary:`), between rules (`=== short test summary info ===`),
/// or in capitals (`SUMMARY`).
static SUMMARY_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:(?:[A-Za-z]+ ){0,3}(?i:summary)(?: [A-Za-z]+){0,2}:",
        r"|[=\-#*]{2,} ?(?:[A-Za-z]+ ){0,3}(?i:summary)(?: [A-Za-z]+){0,2} ?[=\-#*]{2,}",
        r"|(?:[A-Z]+ ){0,3}SUMMARY(?: [A-Z]+){0,2})$",
    ))
    .expect("static regex is valid")
});

/// Log lines of one shape (they differ only in timestamps and ids) are
/// counted wherever they are: the first stays, marked `(×N similar)` with N
/// the lines of that shape, the others go. A server log interleaves its
/// routine requests with its errors, so runs alone would not find them.
fn count_volatile(entries: Vec<Entry>) -> Vec<Entry> {
    let mut first: std::collections::HashMap<String, usize> = Default::default();
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    // Whether each entry heads a record: a traceback or a stack follows it.
    let heads: Vec<bool> = (0..entries.len())
        .map(|i| {
            entries
                .get(i + 1)
                .is_some_and(|next| opens_trace(&next.text))
        })
        .collect();
    for (e, heads) in entries.into_iter().zip(heads) {
        // A commit's header starts a record of its own: its `Date:` is not
        // the one before it again.
        if keep::holds_id(&e.text) {
            first.clear();
        }
        // A line over a traceback (`ERROR query failed` at 09:00 and again
        // at 09:01) says what that traceback is of: counted into the first,
        // the second traceback read as the line's above it.
        if heads {
            out.push(e);
            continue;
        }
        let Some(shaped) = &e.volatile else {
            out.push(e);
            continue;
        };
        let key = format!("{}\u{0}{shaped}", e.important);
        match first.get(&key) {
            Some(&i) => out[i].lines += e.lines,
            None => {
                first.insert(key, out.len());
                out.push(e);
            }
        }
    }
    // The first line stands for its shape as printed (its time, its ids),
    // with the count of the lines alike but for those.
    for e in &mut out {
        if e.volatile.is_some() && e.lines > 1 {
            let base = COUNT_SUFFIX.replace(e.text.trim_end(), "").into_owned();
            e.text = format!("{base} (×{} similar)", e.lines);
        }
    }
    out
}

/// An exception as a traceback ends in: its name, a colon, its message
/// (`KeyError: 'amount'`, `decimal.DivisionByZero: […]`,
/// `java.lang.IllegalStateException: closed`). A name qualified by its
/// module, or one a builtin's ending says is one: a log's or a header's
/// `Author: x`, `Note: y` is none.
static RAISED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:(?:[a-z_]\w*\.)+[A-Z]\w*|[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration|Fault))(?::(?: |$)|$)",
    )
    .expect("static regex is valid")
});

/// Whether `line` opens a traceback or a stack under the line before it:
/// `Traceback (most recent call last):`, an indented frame, a fold
/// standing for one (`… (7 lines as above, …)`).
fn opens_trace(line: &str) -> bool {
    let frame = line.trim_start();
    line.starts_with("Traceback (")
        || line.starts_with("… (") && line.contains(" lines as above")
        // Indented as printed, or not once compressed (a second pass): a
        // Java or JavaScript frame starts with `at`.
        || ((line.starts_with([' ', '\t']) || frame.starts_with("at "))
            && keep::mentions_location(line))
}

/// Routine lines of one template ([`template`]) are counted wherever they
/// are: the first stays, marked `(×N similar)`, the others go. Lines a
/// reader needs, a diff's or code's lines and markers are never in one,
/// nor is any line of a record that says where ([`in_located_records`]).
fn fold_templates(entries: Vec<Entry>) -> Vec<Entry> {
    let texts: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
    let located = in_located_records(&texts);
    let eligible: Vec<bool> = entries
        .iter()
        .zip(&located)
        .enumerate()
        .map(|(i, (e, &located))| {
            !e.important
                // A line over a traceback says what it is of.
                && !texts.get(i + 1).is_some_and(|next| opens_trace(next))
                && !located
                && !e.key.starts_with("<marker>")
                && !e.text.trim().is_empty()
                && !is_diff_like(&e.text)
                && !e.text.starts_with(['@', '…', '['])
                && !is_code(&e.text)
                && !keep::mentions_location(&e.text)
                && !keep::is_name(&e.text)
                // A title between rules names what follows (`--- Captured
                // stdout call ---`, `--- Captured log call ---`).
                && !TITLE.is_match(&e.text)
                // What is indented belongs to the line above it (a frame's
                // source, a detail): repeated, it is folded with its block.
                && !e.text.starts_with([' ', '\t'])
        })
        .collect();
    // A failing test's name starts its record as a commit's header does:
    // what one test printed is not folded into another's.
    let barrier: Vec<bool> = entries.iter().map(|e| keep::identifies(&e.text)).collect();
    let mut of = template::templates(&texts, &eligible, &barrier);
    // A count longer than what it stands for is not used.
    let mut saved: std::collections::HashMap<usize, (usize, usize)> = Default::default();
    for (e, id) in entries.iter().zip(&of) {
        if let Some(id) = id {
            let s = saved.entry(*id).or_insert((0, 0));
            s.1 += e.lines;
            if s.1 > e.lines {
                s.0 += char_len(&e.text) + 1;
            }
        }
    }
    for id in &mut of {
        if let Some((chars, lines)) = id.and_then(|i| saved.get(&i))
            && *chars <= format!(" (×{lines} similar)").chars().count()
        {
            *id = None;
        }
    }
    let mut first: std::collections::HashMap<usize, usize> = Default::default();
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut folded: Vec<Option<usize>> = Vec::with_capacity(entries.len());
    for (e, id) in entries.into_iter().zip(of) {
        match id.and_then(|id| first.get(&id).copied()) {
            Some(at) => out[at].lines += e.lines,
            None => {
                if let Some(id) = id {
                    first.insert(id, out.len());
                }
                folded.push(id);
                out.push(e);
            }
        }
    }
    for (e, id) in out.iter_mut().zip(folded) {
        if id.is_some() && e.lines > 1 {
            // A line counted already (by its shape) is counted again here.
            let base = COUNT_SUFFIX.replace(e.text.trim_end(), "").into_owned();
            e.text = format!("{base} (×{} similar)", e.lines);
            // Alike only to itself now: it stands for its template.
            e.key = format!("<template>{}", e.text);
        }
    }
    out
}

/// For each line of `entries`, whether it belongs to a record that names
/// a location, in a report whose lines carry a tool's mark (valgrind's
/// `==4711==`): there a line with nothing but the mark (the report's blank
/// line) ends a record, and is itself never folded: the report's layout
/// (blank lines, indentation) is behind the mark, where the other passes
/// do not see it, and the next pass must find the same records.
///
/// Why: valgrind's leak records (`100 bytes in 1 blocks are definitely
/// lost in loss record 3 of 4`, over its allocation's stack) are one
/// template; folded into the first, every other record's size was lost,
/// and the stacks left in place read as the first record's. A record's
/// lines are told apart by what they hold; only a repeated whole block
/// ([`fold_repeated_blocks`]) may stand for another.
fn in_located_records(texts: &[&str]) -> Vec<bool> {
    let mut out = vec![false; texts.len()];
    let Some(mark) = shared_mark(texts) else {
        return out;
    };
    let only_mark = |t: &str| COUNT_SUFFIX.replace(t.trim(), "").trim() == mark;
    // No line of the mark alone, no records: a log whose lines all begin
    // with the same date is one stream of lines, folded as any other.
    if !texts.iter().any(|t| only_mark(t)) {
        return out;
    }
    let mut start = 0;
    for end in 0..=texts.len() {
        let boundary = texts.get(end).is_none_or(|t| only_mark(t));
        if !boundary {
            continue;
        }
        if texts[start..end].iter().any(|t| keep::mentions_location(t)) {
            out[start..end].fill(true);
        }
        if end < texts.len() {
            out[end] = true;
        }
        start = end + 1;
    }
    out
}

/// The first word more than half of the lines of `texts` begin with, when
/// it is a mark ([`is_mark`]).
fn shared_mark<'t>(texts: &[&'t str]) -> Option<&'t str> {
    let mut counts: std::collections::HashMap<&str, usize> = Default::default();
    for t in texts {
        if let Some(first) = t.split_whitespace().next()
            && t.starts_with(first)
            && is_mark(first)
        {
            *counts.entry(first).or_default() += 1;
        }
    }
    // More than half: at most one word can be.
    counts
        .into_iter()
        .find(|(_, n)| 2 * n > texts.len())
        .map(|(p, _)| p)
}

/// A word with a digit and no letter: what a tool may stamp on each line
/// of its report (valgrind's `==4711==`, its process id).
fn is_mark(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit()) && !word.chars().any(char::is_alphabetic)
}

/// Lines a fold made neighbours that are the same line become one with a
/// count, as [`collapse_repeats`] would have made them had they been
/// neighbours from the start: compressing twice changes nothing.
fn merge_adjacent(entries: Vec<Entry>) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut runs: Vec<usize> = Vec::with_capacity(entries.len());
    for e in entries {
        if let Some(last) = out.last_mut()
            && last.text == e.text
            && !e.text.trim().is_empty()
            && !e.key.starts_with('<')
            && !COUNT_SUFFIX.is_match(&e.text)
        {
            last.lines += e.lines;
            *runs.last_mut().unwrap() += 1;
            continue;
        }
        out.push(e);
        runs.push(1);
    }
    for (e, run) in out.iter_mut().zip(runs) {
        if run > 1 {
            let (lines, important) = (e.lines, e.important);
            *e = Entry::of(&e.text.clone(), run, important);
            e.lines = lines;
        }
    }
    out
}

/// A diff's changed line as kept (`+code`, `-code`): read one by one. A
/// `-- ` (a configure step) or `- ` (a list) is not one.
fn is_diff_like(line: &str) -> bool {
    let mut c = line.chars();
    matches!(c.next(), Some('+' | '-')) && !matches!(c.next(), Some('-' | '+' | ' ') | None)
}

/// A line one of the passes wrote about lines it took out: `[… 3 routine
/// lines dropped]`, `… (12 lines as above, from "…")`, `… (×4 similar
/// blocks of 3 lines)`, `… (+7 changed lines)`.
static MARKER_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[… \d|^… \((\d+ lines as above|×\d+ similar|\+\d+ changed)")
        .expect("static regex is valid")
});

/// The count a fold put after a line: ` (×12 similar)`, ` (×3)`.
static COUNT_SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s+\(×\d+(?: similar)?\)$").expect("static regex is valid"));

/// The fewest lines a repeated block must have to be folded where it
/// repeats: fewer are cheaper to show than to point at.
const MIN_REPEAT: usize = 3;

/// A block of lines seen before, anywhere above (the same traceback a
/// server logs for every failing request, a second compile's errors),
/// becomes one line pointing at its first showing. Lines are alike only
/// when the same but for volatile tokens (times, ids), so no error stands
/// for a different one and no record for another.
fn fold_repeated_blocks(entries: Vec<Entry>) -> Vec<Entry> {
    // Alike only when the same but for volatile tokens: a count or a
    // version in a line that is not a problem is what tells two records
    // apart (`Release 1.0.3`, `Release 1.0.4`).
    let shapes: Vec<String> = entries
        .iter()
        .map(|e| {
            if e.key.starts_with('<') {
                e.key.clone()
            } else if keep::identifies(&e.text) {
                e.text.clone()
            } else {
                shape(&e.text)
            }
        })
        .collect();
    let keys: Vec<&str> = shapes.iter().map(String::as_str).collect();
    let mut seen: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut i = 0;
    while i < entries.len() {
        // The longest match with an earlier block that ends before `i`.
        let mut best = (0, 0);
        if !entries[i].key.starts_with("<marker>") {
            for &start in seen
                .get(keys[i])
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .rev()
                .take(16)
            {
                let len = (0..)
                    .take_while(|&k| {
                        start + k < i && i + k < keys.len() && keys[start + k] == keys[i + k]
                    })
                    .count();
                if len > best.0 {
                    best = (len, start);
                }
            }
        }
        let (len, start) = best;
        let block = &entries[i..i + len];
        if len >= MIN_REPEAT && block.iter().any(|e| !e.text.trim().is_empty()) {
            let lines: usize = block.iter().map(|e| e.lines).sum();
            let first: String = entries[start].text.trim().chars().take(60).collect();
            // The exception it ends in, which tells it from other
            // tracebacks: they all start alike.
            let raised = entries[start + 1..start + len]
                .iter()
                .rev()
                .find(|e| RAISED.is_match(e.text.trim()));
            let text = match raised {
                Some(e) => {
                    let raised: String = e.text.trim().chars().take(60).collect();
                    format!("… ({len} lines as above, from \"{first}\", \"{raised}\")")
                }
                None => format!("… ({len} lines as above, from \"{first}\")"),
            };
            out.push(Entry::marker(text, lines));
            for (k, key) in keys[i..i + len].iter().enumerate() {
                seen.entry(key).or_default().push(i + k);
            }
            i += len;
        } else {
            seen.entry(keys[i]).or_default().push(i);
            out.push(entries[i].clone());
            i += 1;
        }
    }
    out
}

/// The longest block a repeat is looked for in (a rustc diagnostic with its
/// source snippet, a TAP test with its YAML).
const MAX_BLOCK: usize = 8;

/// Runs of alike entries, or of alike blocks of up to [`MAX_BLOCK`]
/// entries, become their first entry or block and one line saying how many
/// followed: a single line repeated needs three in a row, a block two.
/// Important lines are alike only when they are the same line but for
/// volatile tokens, so no error is folded into a different one.
fn group_blocks(entries: Vec<Entry>) -> Vec<Entry> {
    let mut out = Vec::with_capacity(entries.len());
    let mut i = 0;
    while i < entries.len() {
        // The block length that folds away the most lines here.
        let mut best: Option<(usize, usize, usize)> = None; // (k, repeats, saved lines)
        for k in 1..=MAX_BLOCK.min(entries.len() - i) {
            let block = &entries[i..i + k];
            // A block of only blank lines, or a single important line, is
            // not folded: the first says nothing, the second is counted by
            // collapse_repeats when it repeats exactly.
            if block.iter().all(|e| e.text.is_empty()) || (k == 1 && block[0].important) {
                continue;
            }
            let mut reps = 1;
            while i + (reps + 1) * k <= entries.len()
                && entries[i + reps * k..i + (reps + 1) * k]
                    .iter()
                    .zip(block)
                    .all(|(a, b)| a.key == b.key)
            {
                reps += 1;
            }
            let needed = if k == 1 { 3 } else { 2 };
            if reps < needed {
                continue;
            }
            let folded = &entries[i + k..i + reps * k];
            let saved: usize = folded.iter().map(|e| e.lines).sum();
            // Only where the count is shorter than what it stands for.
            let chars: usize = folded.iter().map(|e| char_len(&e.text) + 1).sum();
            if chars <= char_len(&fold_marker(k, reps, saved + entries[i].lines)) + 1 {
                continue;
            }
            if best.is_none_or(|(_, _, s)| saved > s) {
                best = Some((k, reps, saved));
            }
        }
        match best {
            None => {
                out.push(entries[i].clone());
                i += 1;
            }
            Some((k, reps, saved)) => {
                out.extend(entries[i..i + k].iter().cloned());
                out.push(Entry::marker(
                    fold_marker(k, reps, saved + entries[i].lines),
                    saved,
                ));
                i += reps * k;
            }
        }
    }
    out
}

/// What a fold says: `… (×N similar)` for a run of N lines, `… (×R similar
/// blocks of K lines)` for R blocks (the first shown above it).
fn fold_marker(k: usize, reps: usize, lines: usize) -> String {
    if k == 1 {
        format!("… (×{lines} similar)")
    } else {
        format!("… (×{reps} similar blocks of {k} lines)")
    }
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

fn join(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hard bound, for budgets too small for the selection's markers.
fn clamp_chars(text: String, budget: usize) -> String {
    if char_len(&text) <= budget {
        return text;
    }
    if budget == 0 {
        return String::new();
    }
    text.chars().take(budget - 1).collect::<String>() + "…"
}

/// At most `n` characters of multi-line text, compressed
/// rather than cut when it is longer.
pub fn bound(s: &str, n: usize) -> String {
    if chars(s) <= n {
        s.to_string()
    } else {
        compress(s, n)
    }
}

#[cfg(test)]
#[path = "../../../benches/compress/must_survive.rs"]
mod must_survive;

#[cfg(test)]
mod tests {
    use super::must_survive;
    use super::*;
    use crate::stats::SplitMix64;
    use crate::text::redact::{adds_secret, redact_with, secret_values};

    #[test]
    fn strips_ansi_and_control() {
        let text = "\x1b[1;31merror\x1b[0m: bad\n\x1b]0;title\x07plain\x1b(B\nbell\x07 here\n";
        assert_eq!(compress(text, 1000), "error: bad\nplain\nbell here");
        // Layout goes: a tab and alignment padding read as one blank.
        assert_eq!(compress("tab\tkept   \n", 100), "tab kept");
    }

    #[test]
    fn carriage_return_progress_keeps_last_state() {
        let text = "fetching 10%\rfetching 55%\rfetching 100%\ndone\r\nnext\n";
        assert_eq!(compress(text, 1000), "fetching 100%\ndone\nnext");
        // A redraw that ends with \r keeps the last non-empty state.
        assert_eq!(compress("50%\r100%\r\nok", 1000), "100%\nok");
    }

    #[test]
    fn collapses_identical_lines() {
        let text = "start\nretrying\nretrying\nretrying\nend\n\n\n\nafter";
        // Blank lines are layout: they go, uncounted.
        assert_eq!(compress(text, 1000), "start\nretrying (×3)\nend\nafter");
    }

    #[test]
    fn groups_lines_differing_in_numbers() {
        let mut text = String::from("checking 5 items\n");
        for i in 1..=5 {
            text.push_str(&format!("item foo_{i} ... done\n"));
        }
        text.push_str("result: 5 done\n");
        assert_eq!(
            compress(&text, 1000),
            "checking 5 items\nitem foo_1 ... done (×5 similar)\nresult: 5 done"
        );
        // Two similar lines are cheaper shown than summarised.
        assert_eq!(compress("step 1\nstep 2\n", 1000), "step 1\nstep 2");
        // Runs of identical lines count with their repeats.
        assert_eq!(
            compress(
                "row number 1 of the table\nrow number 1 of the table\nrow number 2 of the table\nrow number 3 of the table\n",
                1000
            ),
            "row number 1 of the table (×2)\n… (×4 similar)"
        );
        // A count longer than what it stands for is not used.
        assert_eq!(
            compress("row 1\nrow 2\nrow 3\n", 1000),
            "row 1\nrow 2\nrow 3"
        );
        // A token holding a digit is a value: these are one template.
        assert_eq!(
            compress("item a_1 done\nitem a_2 done\nitem b_3 done\n", 1000),
            "item a_1 done (×3 similar)"
        );
        // Lines that agree on fewer than half their words are not.
        assert_eq!(
            compress(
                "item alpha done now\nitem beta ends later\nitem gamma stops soon\n",
                1000
            ),
            "item alpha done now\nitem beta ends later\nitem gamma stops soon"
        );
        // Passing tests are routine: dropped, and counted.
        assert_eq!(
            compress(
                "test a_1 ... ok\ntest b ... ok\ntest result: ok. 2 passed\n",
                1000
            ),
            "test result: ok. 2 passed\n[… 2 lines dropped]"
        );
        assert_eq!(
            dropped_kinds("test a_1 ... ok\ntest b ... ok\ntest result: ok. 2 passed\n"),
            "2 routine"
        );
        // So are skipped ones, in each runner's words; a skip whose reason
        // names an error is kept, and the runner's counts stay.
        let skips = [
            "tests/t.py::test_a SKIPPED (no numpy)                    [ 50%]",
            "SKIPPED [1] tests/t.py:12: strict=True missing on 3.9",
            "test io::slow ... ignored, needs a network",
            "test_c (t.T.test_c) ... skipped 'windows only'",
            "    --- SKIP: TestE (0.00s)",
            "  ○ skipped renders the chart",
            "   ↓ src/a.test.ts > parses [skipped]",
            "﹣ slow path (0.1ms) # SKIP",
        ];
        let text = format!(
            "{}\ntests/t.py::test_f SKIPPED (ImportError: no module named x)\n=== 1 passed, 10 skipped in 0.1s ===\n",
            skips.join("\n")
        );
        assert_eq!(
            compress(&text, 1000),
            "tests/t.py::test_f SKIPPED (ImportError: no module named x)\n=== 1 passed, 10 skipped in 0.1s ===\n[… 8 lines dropped]"
        );
        assert_eq!(dropped_kinds(&text), "8 routine");
        // Cargo's right-aligned status column goes (and stays gone when
        // compressed again); an indented line that is no status, or whose
        // verb does not end the column, keeps its indentation.
        let text = "    Finished `test` profile\n     Summary [   0.012s] 3 tests run\n  Building blocks\n  note: x\n";
        let once = compress(text, 1000);
        assert_eq!(
            once,
            "Finished `test` profile\nSummary [ 0.012s] 3 tests run\nBuilding blocks\nnote: x"
        );
        assert_eq!(compress(&once, 1000), once);
    }

    #[test]
    fn log_lines_are_counted_by_shape_wherever_they_are() {
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!(
                "2026-12-01T10:00:{:02}Z GET /item/{:08x}-0000-4000-8000-{:012x} 200\n",
                i % 60,
                i * 7919,
                i
            ));
            if i % 10 == 3 {
                text.push_str(&format!(
                    "2026-12-01T10:00:{:02}Z ERROR upstream timeout after 30s\n",
                    i
                ));
            }
        }
        assert_eq!(
            compress(&text, 10_000),
            "2026-12-01T10:00:00Z GET /item/00000000-0000-4000-8000-000000000000 200 (×50 similar)\n2026-12-01T10:00:03Z ERROR upstream timeout after 30s (×5 similar)"
        );
    }

    #[test]
    fn repeated_blocks_fold_and_their_counts_add_up() {
        // A cascade: one error and its snippet, a hundred times.
        let mut text = String::new();
        for i in 1..=100 {
            text.push_str(&format!(
                "error[E0425]: cannot find type `Settings` in this scope\n --> src/gen.rs:{i}:21\n{i} | pub fn f_{i}(c: &Settings) {{}}\n"
            ));
        }
        text.push_str("error: could not compile `calc` due to 100 previous errors\n");
        let out = compress(&text, 100_000);
        // The error once with its source; where it happens again, only
        // where: every location is one a reader may need.
        let mut want = String::from(
            "error[E0425]: cannot find type `Settings` in this scope\n--> src/gen.rs:1:21\n1 | pub fn f_1(c: &Settings) {}\n",
        );
        for i in 2..=100 {
            want.push_str(&format!("--> src/gen.rs:{i}:21\n"));
        }
        want.push_str(
            "error: could not compile `calc` due to 100 previous errors\n[… 198 lines dropped]",
        );
        assert_eq!(out, want);
        assert_eq!(dropped_kinds(&text), "99 repeated, 99 source");
        // Blocks alike but for numbers fold, and their counts add up.
        let mut text = String::new();
        for i in 1..=40 {
            text.push_str(&format!(
                "step {i} begins\nreading part {i}\nstep {i} ends\n"
            ));
        }
        let out = compress(&text, 100_000);
        // Every input line is accounted for by the output's counts.
        let counted = |out: &str| -> usize {
            out.lines()
                .map(|l| {
                    let n = l
                        .rsplit_once("(×")
                        .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next())
                        .and_then(|n| n.parse::<usize>().ok());
                    let k = l
                        .rsplit_once("blocks of ")
                        .and_then(|(_, r)| r.split(' ').next())
                        .and_then(|k| k.parse::<usize>().ok());
                    match (n, k) {
                        (Some(n), Some(k)) => (n - 1) * k,
                        (Some(n), None) if l.starts_with("… (×") => n - 1,
                        (Some(n), None) => n,
                        _ => 1,
                    }
                })
                .sum()
        };
        assert_eq!(counted(&out), text.lines().count(), "{out}");
        let repeats = "x\n".repeat(100);
        assert_eq!(compress(&repeats, 1000), "x (×100)");
    }

    #[test]
    fn a_diff_keeps_its_files_and_the_first_changes_of_each() {
        let mut text = String::from(
            "diff --git a/a.rs b/a.rs\nindex 1111111..2222222 100644\n--- a/a.rs\n+++ b/a.rs\n@@ -1,10 +1,11 @@\n",
        );
        for i in 0..9 {
            text.push_str(&format!("-let v{i} = 1;\n+let v{i} = 2;\n"));
        }
        text.push_str(" context\n+// returns an error when empty\ndiff --git a/b.rs b/b.rs\n@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(
            compress(&text, 10_000),
            "diff --git a/a.rs b/a.rs\n@@ -1,10 +1,11 @@\n-let v0 = 1;\n+// returns an error when empty\n… (+17 changed lines)\ndiff --git a/b.rs b/b.rs\n@@ -1 +1 @@\n-a\n… (+1 changed lines)\n[… 4 lines dropped]"
        );
    }

    /// `compress` once, checked to change nothing when run again.
    /// What `text`'s compression dropped, by kind: `2 routine, 1 source`.
    fn dropped_kinds(text: &str) -> String {
        let dropped = compress_accounted(text, usize::MAX).1.dropped;
        let kinds: Vec<String> = dropped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        kinds.join(", ")
    }

    fn once(text: &str) -> String {
        let out = compress(text, 100_000);
        assert_eq!(compress(&out, 100_000), out, "not idempotent");
        out
    }

    #[test]
    fn a_diff_reads_problem_words_as_words() {
        let mut text = String::from("diff --git a/a.rs b/a.rs\n@@ -1,4 +1,4 @@\n-fn a() {}\n");
        text.push_str(
            "-fn parse() -> Result<(), ParseError> {\n+fn parse() -> Outcome<(), ParseError> {\n",
        );
        text.push_str("+    return Err(error::bad());\n");
        let out = once(&text);
        // Code named after errors is code; `error` as a word is kept.
        assert!(!out.contains("ParseError"), "{out}");
        assert!(out.contains("+    return Err(error::bad());"), "{out}");
        assert!(out.contains("… (+2 changed lines)"), "{out}");
    }

    #[test]
    fn two_views_of_one_change_list_each_file_once() {
        // A diff and its --stat: the stat's line of a diffed file goes,
        // the totals and a file the diff does not show stay.
        let text = "diff --git a/a.rs b/a.rs\n@@ -1 +1 @@\n-a\n+b\n a.rs       |  2 +-\n c.rs       |  4 ++--\n 2 files changed, 3 insertions(+), 3 deletions(-)\n";
        let out = once(text);
        assert!(!out.contains("a.rs       |"), "{out}");
        assert!(out.contains("c.rs | 4 ++--"), "{out}");
        assert!(out.contains("2 files changed"), "{out}");
        // git status and its porcelain form: the porcelain entries the long
        // form names go, and its branch line; another entry stays, and one
        // that names a problem word is never dropped.
        let text = "On branch main\nChanges not staged for commit:\n\tmodified:   src/a.rs\n\tmodified:   src/error.rs\n\tdeleted:    src/b.rs\nUntracked files:\n\tnew/\n## main...origin/main\n M src/a.rs\n M src/error.rs\n D src/b.rs\n?? new/\n M src/other.rs\n";
        let out = once(text);
        assert!(!out.contains("## main"), "{out}");
        assert!(!out.contains(" M src/a.rs"), "{out}");
        assert!(!out.contains("D src/b.rs"), "{out}");
        assert!(!out.contains("?? new/"), "{out}");
        assert!(out.contains(" M src/error.rs"), "{out}");
        assert!(out.contains(" M src/other.rs"), "{out}");
        assert!(out.ends_with("[… 4 lines dropped]"), "{out}");
        assert_eq!(dropped_kinds(text), "4 repeated");
    }

    #[test]
    fn a_pytest_failure_keeps_its_tests_name_and_its_summary_line() {
        let text = "\
=================================== FAILURES ===================================
_______________________________ TestCalc.test_add[2] _______________________________

    def test_add(self, n):
>       assert add(n, 1) == 4
E       assert 3 == 4
E        +  where 3 = add(2, 1)

tests/test_calc.py:9: AssertionError
________________________ ERROR at setup of test_db _________________________
E       fixture 'db' not found
tests/test_calc.py:12
=========================== short test summary info ============================
FAILED tests/test_calc.py::TestCalc::test_add[2] - assert 3 == 4
ERROR tests/test_calc.py::test_db
FAILED tests/test_other.py::test_gone - no header for this one
================= 1 failed, 1 error in 0.12s =================
";
        let out = once(text);
        assert_eq!(
            out,
            "\
=================================== FAILURES ===================================
TestCalc.test_add[2]
> assert add(n, 1) == 4
E assert 3 == 4
E  +  where 3 = add(2, 1)
tests/test_calc.py:9: AssertionError
ERROR at setup of test_db
E fixture 'db' not found
tests/test_calc.py:12
FAILED tests/test_calc.py::TestCalc::test_add[2] - assert 3 == 4
ERROR tests/test_calc.py::test_db
FAILED tests/test_other.py::test_gone - no header for this one
================= 1 failed, 1 error in 0.12s =================
[… 2 lines dropped]"
        );
    }

    #[test]
    fn pytest_details_keep_their_own_indentation() {
        // The gap every E line of a block shares goes; a diff's nesting
        // inside the message stays, and its blank E line goes.
        let text = "E       AssertionError: assert {'a': 1} == {'a': 2}\nE         \nE         Full diff:\nE         - {'a': 2}\nE         ?       ^\nE         + {'a': 1}\n";
        assert_eq!(
            once(text),
            "E AssertionError: assert {'a': 1} == {'a': 2}\nE   Full diff:\nE   - {'a': 2}\nE   ?       ^\nE   + {'a': 1}"
        );
        // A lone E is no pytest detail, nor one beside other blanks.
        assert_eq!(once("E\nnext"), "E\nnext");
        assert_eq!(once("E   a\nE \u{3000}b"), "E a\nE \u{3000}b");
        assert_eq!(once(">       x = f(y)"), "> x = f(y)");
        assert_eq!(
            once("t.py::test_x[1] FAILED                   [ 48%]"),
            "t.py::test_x[1] FAILED [ 48%]"
        );
    }

    #[test]
    fn a_failure_repeating_the_frames_before_it_shows_its_details() {
        let block = |n: u32| {
            format!(
                "_____ test_sq[{n}] _____\n\n    def test_sq(n):\n        # blocked cases fail here\n>       assert n not in BLOCKED\nE       assert {n} not in (1, 2, 3)\n\ntests/t.py:9: AssertionError\n"
            )
        };
        let text = format!(
            "=== FAILURES ===\n{}{}{}=== 3 failed in 0.1s ===\n",
            block(1),
            block(2),
            block(3)
        );
        let out = once(&text);
        assert_eq!(
            out,
            "=== FAILURES ===\ntest_sq[1]\n# blocked cases fail here\n> assert n not in BLOCKED\nE assert 1 not in (1, 2, 3)\ntests/t.py:9: AssertionError\ntest_sq[2]\n… (traceback as above)\nE assert 2 not in (1, 2, 3)\ntest_sq[3]\n… (traceback as above)\nE assert 3 not in (1, 2, 3)\n=== 3 failed in 0.1s ===\n[… 3 lines dropped]"
        );
        // Different frames are all shown.
        let text = "___ test_a ___\n>       f(1)\nE       boom\n___ test_b ___\n>       f(2)\nE       boom\n";
        assert_eq!(once(text), "test_a\n> f(1)\nE boom\ntest_b\n> f(2)\nE boom");
    }

    #[test]
    fn a_section_left_empty_goes_and_a_name_alone_is_never_folded() {
        // `-rA`'s PASSES held only passing tests: its title goes with them.
        let text = "=== FAILURES ===\n___ test_a ___\nE   boom\n=== PASSES ===\n=== short test summary info ===\nPASSED t.py::test_b\nFAILED t.py::test_a - boom\n=== 1 failed, 1 passed in 0.1s ===\n";
        assert_eq!(
            once(text),
            "=== FAILURES ===\ntest_a\nE boom\nFAILED t.py::test_a - boom\n=== 1 failed, 1 passed in 0.1s ===\n[… 3 lines dropped]"
        );
        // A title with something under it stays, and so does a closing
        // count, last as it is.
        let text = "=== PASSES ===\n=== Summary ===\nbuilt 3 targets\n=== 2 passed in 0.1s ===\n";
        assert_eq!(
            once(text),
            "=== Summary ===\nbuilt 3 targets\n=== 2 passed in 0.1s ===\n[… 1 line dropped]"
        );
        // A verdict between rules stays, last or not.
        for verdict in ["ALL TESTS PASSED", "Done", "BUILD SUCCESSFUL"] {
            let text = format!(
                "running suite\n==== {verdict} ====\n=== Coverage ===\nlib.rs 93%\n==== {verdict} ====\n"
            );
            assert_eq!(once(&text).matches(verdict).count(), 2, "{verdict}");
        }
        // A test's name is its header's, whatever it holds (blanks, `*`, a
        // closing `_`), and stays over its details though the runner's
        // list names it again.
        let text = "=== FAILURES ===\n___ test_handles_input[6*9-42] ___\n>       assert 6*9 == 42\nE       assert 54 == 42\ntests/test_a.py:4: AssertionError\n___ test_parse_string[hello world] ___\nE       assert 1 == 2\n___ test_reserved_keyword_ ___\nE       assert 3 == 4\nFAILED tests/test_a.py::test_handles_input[6*9-42] - assert 54 == 42\nFAILED tests/test_a.py::test_parse_string[hello world] - assert 1 == 2\nFAILED tests/test_a.py::test_reserved_keyword_ - assert 3 == 4\n";
        let out = once(text);
        for name in [
            "test_handles_input[6*9-42]",
            "test_parse_string[hello world]",
            "test_reserved_keyword_",
        ] {
            assert!(out.contains(&format!("\n{name}\n")), "{name}:\n{out}");
        }
        // A marker an older ooda wrote (by kind) is read back as a count.
        assert_eq!(
            once("test result: ok. 2 passed\n[… 5 routine, 4 source lines dropped]"),
            "test result: ok. 2 passed\n[… 9 lines dropped]"
        );
        // Names standing alone are each kept, however alike: a listing of
        // files is not `pkg/mod_1.py (×12 similar)`.
        let list: String = (1..=12).map(|i| format!("pkg/mod_{i}.py\n")).collect();
        assert_eq!(once(&list), list.trim_end());
    }

    #[test]
    fn a_failing_tests_name_ties_what_it_printed_to_it() {
        // Found by a new user's pytest runs: a long name, found again in
        // the runner's list of failures, was dropped as said again; and
        // what each parametrised case printed was folded into the first
        // case's (`checking n=3 (×3 similar)`), under its titles folded
        // into one another (`Captured stdout` standing for `Captured log`).
        let case = |n: u32| {
            format!(
                "____ test_handles_empty_input[{n}] ____\n>       assert n == 0\nE       assert {n} == 0\ntests/t.py:4: AssertionError\n---- Captured stdout call ----\nchecking input with n={n}\n---- Captured log call ----\nWARNING t:t.py:9 about to take {n} items\n"
            )
        };
        let text = format!(
            "=== FAILURES ===\n{}{}{}=== short test summary info ===\n{}=== 3 failed in 0.1s ===\n",
            case(1),
            case(2),
            case(3),
            (1..=3)
                .map(|n| format!(
                    "FAILED tests/t.py::test_handles_empty_input[{n}] - assert {n} == 0\n"
                ))
                .collect::<String>()
        );
        let out = once(&text);
        let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s} missing:\n{out}"));
        for n in 1..=3 {
            let name = at(&format!("\ntest_handles_empty_input[{n}]\n"));
            assert!(name < at(&format!("checking input with n={n}")), "{out}");
            assert!(name < at(&format!("about to take {n} items")), "{out}");
        }
        assert!(!out.contains("similar"), "{out}");
        assert_eq!(out.matches("Captured log call").count(), 3, "{out}");
    }

    #[test]
    fn a_log_error_over_its_traceback_stays_where_it_was() {
        // Found by a new user on a server's log: the same error at two
        // times was one `(×2 similar)` line, and the second traceback then
        // read as the access line's above it; and every folded traceback
        // said only `from "Traceback (most recent call last):"`.
        let trace = |exc: &str| {
            format!(
                "Traceback (most recent call last):\n  File \"/srv/app.py\", line 36, in <module>\n    query(conn, i)\n  File \"/srv/app.py\", line 19, in query\n    return conn.execute(sql)\n{exc}\n"
            )
        };
        let text = format!(
            "2024-05-14 09:00:06,028 ERROR [db.pool] query failed on shard 0\n{}2024-05-14 09:00:07,100 INFO [http] GET /a 200\n2024-05-14 09:00:08,200 ERROR [jobs] job 7 failed\n{}2024-05-14 09:00:09,300 INFO [http] GET /b 200\n2024-05-14 09:01:02,609 ERROR [db.pool] query failed on shard 0\n{}",
            trace("sqlite3.OperationalError: no such table: orderz"),
            trace("KeyError: 'amount'"),
            trace("sqlite3.OperationalError: no such table: orderz"),
        );
        let out = once(&text);
        assert!(!out.contains("similar"), "{out}");
        // The second error is where it happened: the error and its
        // traceback again, named by the exception it ends in.
        let (before, last) = out.rsplit_once('\n').unwrap();
        assert!(before.ends_with("GET /b 200"), "{out}");
        assert!(
            last.starts_with("… (7 lines as above, from \"2024-05-14 09:00:06,028 ERROR")
                && last.ends_with("\"sqlite3.OperationalError: no such table: orderz\")"),
            "{out}"
        );
        let job = out.find("job 7 failed").unwrap();
        assert!(out[job..].contains("KeyError: 'amount'"), "{out}");
        // A Java stack under a log line: the same.
        let stack = |n: u32| {
            format!("\tat com.acme.Pool.get(Pool.java:{n})\n\tat com.acme.Main.run(Main.java:12)\n")
        };
        let text = format!(
            "2024-05-14 09:00:06,028 WARN [pool-1] retrying request to shard 0\n{}2024-05-14 09:00:07,100 INFO GET /a 200\n2024-05-14 09:00:08,100 INFO GET /c 200\n2024-05-14 09:01:02,609 WARN [pool-1] retrying request to shard 0\n{}",
            stack(88),
            stack(91)
        );
        let out = once(&text);
        assert!(
            out.contains("GET /c 200\n2024-05-14 09:01:02,609 WARN"),
            "{out}"
        );
        for raised in [
            "KeyError: 'amount'",
            "decimal.DivisionByZero: [<class 'decimal.DivisionByZero'>]",
            "java.lang.IllegalStateException: closed",
            "KeyboardInterrupt",
        ] {
            assert!(RAISED.is_match(raised), "{raised}");
        }
        for plain in [
            "Author: corpus <c@example.com>",
            "Note: x",
            "Date: Wed",
            "OK",
        ] {
            assert!(!RAISED.is_match(plain), "{plain}");
        }
    }

    #[test]
    fn a_short_traceback_keeps_each_frames_line() {
        let text = "\
..........F.F [100%]
___ test_blank ___
tests/t.py:35: in test_blank
    assert parse('  ') == 0
tests/t.py:8: in parse
    value = float(text)
E   ValueError: could not convert string to float: ''
";
        assert_eq!(
            once(text),
            "..........F.F [100%]\ntest_blank\ntests/t.py:35: in test_blank\nassert parse('  ') == 0\ntests/t.py:8: in parse\nvalue = float(text)\nE ValueError: could not convert string to float: ''"
        );
    }

    #[test]
    fn what_a_review_found_stays_fixed() {
        // Plain numbers are not ids: two different assertions stay two,
        // each under its test.
        let text = "___ test_a ___\nE       assert 20240101 == 20240102\n___ test_b ___\nE       assert 31337000 == 42000000\n";
        let out = compress(text, 10_000);
        assert!(out.contains("assert 20240101 == 20240102"), "{out}");
        assert!(out.contains("assert 31337000 == 42000000"), "{out}");
        assert!(
            out.find("test_b").unwrap() < out.find("31337000").unwrap(),
            "{out}"
        );
        // The files of a change are named, not folded into "similar".
        let status: String = (1..=6)
            .map(|i| format!("\tmodified:   src/gen_{i}.rs\n"))
            .collect();
        let out = compress(&status, 10_000);
        for i in 1..=6 {
            assert!(out.contains(&format!("src/gen_{i}.rs")), "{out}");
        }
        // A diff ends where its hunks end: test output after it is read as such.
        let text = "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n---- tests::it stdout ----\nthread 'it' panicked at src/x.rs:1:1:\nassertion `left == right` failed\n  left: 1\n right: 2\n";
        let out = compress(text, 10_000);
        assert!(out.contains("left: 1") && out.contains("right: 2"), "{out}");
        assert!(out.contains("tests::it stdout"), "{out}");
        // A failure inside a TAP subtest is a failure.
        let tap = "ok 1 - first\n    # Subtest: second\n    not ok 1 - inner thing\n    1..1\nnot ok 2 - second\n";
        assert!(compress(tap, 10_000).contains("not ok 1 - inner thing"));
        // Compressing twice changes nothing.
        let text = "apple number 1\napple number 2\napple number 3\nbanana\napple number 4\napple number 5\napple number 6\nbanana\n";
        let once = compress(text, 10_000);
        assert_eq!(compress(&once, 10_000), once);
        // A blank line ends a warning's snippet: a table after it stays.
        let text = "warning: unused\n  --> src/a.rs:1:1\n   |\n\n| col | val |\n";
        assert!(compress(text, 10_000).contains("| col | val |"));
        // A secret split by colour codes is joined and then redacted.
        let env = [(
            "DB_PASSWORD".to_string(),
            "correct-horse-battery".to_string(),
        )];
        let values = secret_values(env);
        let shown = strip_ansi("DB_\x1b[01;31mPASSWORD\x1b[m=correct-horse-battery");
        assert_eq!(redact_with(&shown, &values), "DB_PASSWORD=[REDACTED]");
        assert!(
            !excerpt(
                "aws_secret_access_key \x1b[32mwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\x1b[0m",
                1000
            )
            .contains("wJalr")
        );
        assert_eq!(
            redact("Authorization: Basic dXNlcjpodW50ZXIy"),
            "Authorization: Basic [REDACTED]"
        );
        // "basic" as a word is not a header.
        assert_eq!(
            redact("Running basic integration tests"),
            "Running basic integration tests"
        );
        assert!(!adds_secret("// Provides basic validation for inputs"));
        // The last pass does not join lines the passes made neighbours,
        // and the budget holds.
        let text = "auth token:\nline one\nline two\nline three\nline four\nline five\n";
        for budget in 20..60 {
            assert!(excerpt(text, budget).chars().count() <= budget, "{budget}");
        }
        let diff = "diff --git a/k.yml b/k.yml\n@@ -1,2 +1,3 @@\n env:\n+  secret:\n     name: db\ndiff --git a/src/main.rs b/src/main.rs\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(excerpt(diff, 10_000).contains("diff --git a/src/main.rs"));
    }

    fn corpus() -> Vec<std::path::PathBuf> {
        let corpus =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/compress/corpus");
        let mut cases: Vec<_> = std::fs::read_dir(&corpus)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|d| d.join("raw.log").is_file())
            .collect();
        cases.sort();
        cases
    }

    fn read(path: &std::path::Path) -> String {
        String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
    }

    /// The corpus of real outputs of real tools on third-party code
    /// (`benches/compress/`): every item its rule says must survive is in
    /// the compressed output, and compressing again changes nothing.
    #[test]
    fn every_must_survive_item_of_the_corpus_is_kept() {
        let (mut cases, mut tools) = (0, std::collections::BTreeSet::new());
        let mut lost = Vec::new();
        for dir in corpus() {
            cases += 1;
            tools.insert(read(&dir.join("tool")).trim().to_string());
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let input = read(&dir.join("raw.log"));
            let must = must_survive::must_survive(&input);
            let out = compress(&input, usize::MAX);
            for m in must_survive::dropped(&out, &must) {
                lost.push(format!("{name}: {}", m.listed()));
            }
            assert_eq!(compress(&out, usize::MAX), out, "{name}: not idempotent");
            assert!(compress(&input, 4000).chars().count() <= 4000, "{name}");
        }
        assert!(
            lost.is_empty(),
            "{} dropped:\n{}",
            lost.len(),
            lost.join("\n")
        );
        assert!(cases >= 40, "the corpus has {cases} cases");
        assert!(tools.len() >= 20, "the corpus has {} tools", tools.len());
    }

    /// ooda's output is no larger than what RTK printed (`rtk-out.txt`,
    /// kept by `compress_bench --save`) plus the items RTK dropped, in total
    /// and on at least 42 of the 52 cases (what it does today; the losses
    /// and why are in docs/benchmarks.md): RTK's size alone says nothing of
    /// what survived.
    #[test]
    fn no_larger_than_rtk_plus_what_it_dropped() {
        let (mut cases, mut no_larger, mut ours_total, mut bar_total) = (0, 0, 0, 0);
        let mut larger = Vec::new();
        for dir in corpus() {
            let Ok(rtk) = std::fs::read_to_string(dir.join("rtk-out.txt")) else {
                continue;
            };
            cases += 1;
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let raw = read(&dir.join("raw.log"));
            // RTK too is judged on what the user's command printed.
            let must = must_survive::must_survive(&raw);
            let bar = rtk.chars().count() + must_survive::survival(&rtk, &must).1;
            let ours = compress(&raw, usize::MAX).chars().count();
            if ours <= bar {
                no_larger += 1;
            } else {
                larger.push(format!("{name}: {ours} > {bar}"));
            }
            ours_total += ours;
            bar_total += bar;
        }
        assert!(cases >= 40, "{cases} cases with RTK's output");
        // The issue's bar: on at least 90% of the cases.
        assert!(
            no_larger * 10 >= cases * 9,
            "no larger on {no_larger} of {cases}; larger on:\n{}",
            larger.join("\n")
        );
        assert!(ours_total <= bar_total, "{ours_total} > {bar_total}");
    }

    /// At a failing guard's 4,000 characters, a case with at most 20
    /// errors keeps every error and its location (unless those lines alone
    /// are longer than that).
    #[test]
    fn the_budget_keeps_every_error_and_its_location() {
        let mut checked = 0;
        let mut lost = Vec::new();
        for dir in corpus() {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let raw = read(&dir.join("raw.log"));
            let must = must_survive::must_survive(&raw);
            let errors = must_survive::errors_and_locations(&must);
            let count = errors.iter().filter(|(_, location)| !location).count();
            let items: Vec<_> = errors.into_iter().map(|(m, _)| m).collect();
            // Errors that alone, with a gap's marker after each
            // (`[… 12 lines]`), are longer than the budget cannot all stay.
            let cost: usize = items.iter().map(|m| m.cost() + 16).sum();
            if count == 0 || count > 20 || cost > 4000 {
                continue;
            }
            checked += 1;
            let out = compress(&raw, 4000);
            for m in must_survive::dropped(&out, &items) {
                lost.push(format!("{name}: {}", m.listed()));
            }
        }
        assert!(checked >= 10, "{checked} cases with 1 to 20 errors");
        assert!(lost.is_empty(), "{}", lost.join("\n"));
    }

    #[test]
    fn blanks_that_align_go_and_blanks_in_a_value_stay() {
        assert_eq!(
            squeeze_blanks("12:5  error  'x' is not defined  no-undef"),
            "12:5 error 'x' is not defined no-undef"
        );
        for kept in [
            "expected '  ' to be ' '",
            "name \"a  b\" is taken",
            "use `a  b` here",
            // An apostrophe opens nothing; the literal after it still counts.
            "can't  split \"x  y\"",
        ] {
            let squeezed = squeeze_blanks(kept);
            for value in ["'  '", "\"a  b\"", "`a  b`", "\"x  y\""] {
                assert_eq!(kept.contains(value), squeezed.contains(value), "{kept}");
            }
        }
        assert_eq!(squeeze_blanks("can't  split"), "can't split");
        // A literal left open keeps its blanks.
        assert_eq!(squeeze_blanks("say \"a  b"), "say \"a  b");
        // An escaped quote does not close a literal; a tab aligns.
        assert_eq!(
            squeeze_blanks(r#"say "a \"  b\" c"  now"#),
            r#"say "a \"  b\" c" now"#
        );
        assert_eq!(squeeze_blanks("1:1\t\terror"), "1:1 error");
    }

    #[test]
    fn a_line_that_only_repeats_a_problem_line_goes() {
        let text = "\
 × compare > sorts after release 10ms
   → expected -1 to be 1 // Object.is equality
 FAIL  test/a.mjs > compare > sorts after release
AssertionError: expected -1 to be 1 // Object.is equality
 ❯ test/a.mjs:10:114
   → a note of its own that no problem line holds
";
        let out = compress(text, usize::MAX);
        assert!(!out.contains("→ expected -1"), "{out}");
        assert!(out.contains("AssertionError: expected -1 to be 1"), "{out}");
        assert!(out.contains("a note of its own"), "{out}");
        assert!(out.ends_with("[… 1 line dropped]"), "{out}");
        assert_eq!(dropped_kinds(text), "1 repeated");
        assert_eq!(compress(&out, usize::MAX), out);
        // Short text is no message said again, and a problem line is never
        // dropped for another that holds it.
        let text = "ok then\nerror: ok then, it failed\nerror: ok then, it failed twice";
        assert_eq!(compress(text, usize::MAX), text);
        // A line with an id stays: the problem line holding it may be
        // counted into another of its shape.
        let text = "order 8c1f2e3a9b7d: connection reset by peer\n\
2026-12-01T10:00:03Z ERROR order 8c1f2e3a9b7d: connection reset by peer\n\
2026-12-01T10:00:04Z ERROR order 77aa2e3a9b01: connection reset by peer";
        let out = compress(text, usize::MAX);
        assert!(out.starts_with("order 8c1f2e3a9b7d"), "{out}");
        // Nor does a diff's line under an assertion, indented or not.
        let text = "AssertionError: expected 'hello world again' to be 'x'\n    - hello world again\n    + x";
        assert!(compress(text, usize::MAX).contains("- hello world again"));
    }

    #[test]
    fn records_behind_a_tools_mark_keep_their_own_sizes_and_stacks() {
        // valgrind --leak-check=full on a program leaking three ways: each
        // loss record is one template with the others, but a record names
        // its size and sits over its own stack.
        let records = [
            (
                "18 bytes in 3 blocks",
                "malloc",
                ["dup_name (leak.c:3)", "lose_a (leak.c:5)"],
            ),
            (
                "100 bytes in 1 blocks",
                "malloc",
                ["lose_c (leak.c:7)", "main (leak.c:10)"],
            ),
            (
                "256 bytes in 1 blocks",
                "calloc",
                ["make_table (leak.c:4)", "lose_b (leak.c:6)"],
            ),
        ];
        let mut text = String::from("==20340== Memcheck, a memory error detector\n==20340== \n");
        for (i, (size, alloc, frames)) in records.iter().enumerate() {
            text.push_str(&format!(
                "==20340== {size} are definitely lost in loss record {} of 4\n",
                i + 2
            ));
            text.push_str(&format!(
                "==20340==    at 0x48417B4: {alloc} (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)\n"
            ));
            for (j, f) in frames.iter().enumerate() {
                text.push_str(&format!("==20340==    by 0x10918{j}: {f}\n"));
            }
            text.push_str("==20340== \n");
        }
        text.push_str("==20340== ERROR SUMMARY: 3 errors from 3 contexts\n");
        let out = compress(&text, 10_000);
        let lines: Vec<&str> = out.lines().collect();
        for (size, alloc, frames) in records {
            let head = lines
                .iter()
                .position(|l| l.contains(size))
                .unwrap_or_else(|| panic!("{size} kept:\n{out}"));
            // Its own allocation and frames follow it, in order.
            assert!(lines[head + 1].contains(alloc), "{out}");
            for (j, f) in frames.iter().enumerate() {
                assert!(lines[head + 2 + j].ends_with(f), "{out}");
            }
        }
        assert!(!out.contains("similar"), "{out}");
        assert_eq!(compress(&out, 10_000), out);
        // Lines that all begin with the same date have no records: a
        // stack frame's location among them leaves the routine lines
        // folded.
        let mut log = String::new();
        for i in 0..6 {
            log.push_str(&format!("2026-12-07 INFO worker {i} polled queue jobs\n"));
            log.push_str(&format!(
                "2026-12-07 DEBUG cache held {} entries\n",
                7 * i + 3
            ));
        }
        log.push_str("2026-12-07 ERROR job failed\n    at run (app.js:3:7)\n");
        assert!(
            compress(&log, 10_000).contains("(×6 similar)"),
            "{}",
            compress(&log, 10_000)
        );
    }

    #[test]
    fn a_summary_under_its_heading_keeps_every_line() {
        // valgrind's leak summary: one template, four categories.
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!("==4711== checked block {i} of 40\n"));
        }
        text.push_str(concat!(
            "==4711== LEAK SUMMARY:\n",
            "==4711==    definitely lost: 8,325 bytes in 30 blocks\n",
            "==4711==    indirectly lost: 44,060 bytes in 15 blocks\n",
            "==4711==      possibly lost: 135,202 bytes in 688 blocks\n",
            "==4711==    still reachable: 0 bytes in 0 blocks\n",
            "==4711== \n",
            "==4711== lost: 1 bytes in 1 blocks\n",
            "==4711== lost: 2 bytes in 2 blocks\n",
            "==4711== lost: 3 bytes in 3 blocks\n",
        ));
        let out = once(&text);
        for kept in [
            "definitely lost: 8,325 bytes in 30 blocks",
            "indirectly lost: 44,060 bytes in 15 blocks",
            "possibly lost: 135,202 bytes in 688 blocks",
            "still reachable: 0 bytes in 0 blocks",
        ] {
            assert!(out.contains(kept), "{kept}\n{out}");
        }
        // Routine lines, and lines past the block's end, still fold.
        assert!(out.contains("(×40 similar)"), "{out}");
        assert!(
            out.contains("lost: 1 bytes in 1 blocks (×3 similar)"),
            "{out}"
        );
        // Values under a heading are not folded two lines at a time either.
        let mut text = String::from("Benchmark summary:\n");
        for i in 1..=6 {
            text.push_str(&format!("run {i}: 1{i}.2 ms\nrss {i}: 4{i} MB\n"));
        }
        let out = once(&text);
        for i in 1..=6 {
            assert!(out.contains(&format!("run {i}: 1{i}.2 ms")), "{out}");
        }
        // A block longer than a summary is read as any other lines.
        let mut text = String::from("Summary:\n");
        for i in 1..=30 {
            text.push_str(&format!("item{i}: value {i}\n"));
        }
        assert!(once(&text).contains("(×30 similar)"), "{}", once(&text));
        // A heading is a few words naming a summary, with a colon, between
        // rules or in capitals; a line that says more, or prose, is not one.
        for (heading, prefix) in [
            ("LEAK SUMMARY:", ""),
            ("==4711== LEAK SUMMARY:", "==4711=="),
            ("[INFO] Reactor Summary:", "[INFO]"),
            ("=== Summary ===", ""),
            ("==== short test summary info ====", ""),
            ("SUMMARY", ""),
        ] {
            assert_eq!(summary_heading(heading), Some(prefix), "{heading}");
        }
        for line in [
            "ERROR SUMMARY: 231 errors from 231 contexts",
            "see the summary below for what failed in this run",
            "Summary",
            "No summary",
        ] {
            assert!(summary_heading(line).is_none(), "{line}");
        }
    }

    #[test]
    fn error_lines_are_never_grouped() {
        let text = "test t_1 ... FAILED\ntest t_2 ... FAILED\ntest t_3 ... FAILED\n";
        assert_eq!(compress(text, 1000), text.trim_end());
        for line in [
            "error[E0308]: mismatched types",
            "warning: unused variable",
            "thread 'main' panicked at src/x.rs:1:1",
            "test x ... FAIL",
            "Traceback (most recent call last):",
            "ValueError: bad",
            "assertion `left == right` failed",
        ] {
            assert!(IMPORTANT.is_match(line), "{line}");
        }
        assert!(!IMPORTANT.is_match("Compiling ooda v0.1.0"));
    }

    fn noisy_log(lines: usize, errors: &[usize]) -> String {
        // Lines of made-up words: no two share a template or a shape.
        let mut rng = SplitMix64::new(9);
        let word = |rng: &mut SplitMix64| -> String {
            let len = 3 + (rng.next_u64() % 6) as usize;
            (0..len)
                .map(|_| (b'a' + (rng.next_u64() % 26) as u8) as char)
                .collect()
        };
        (0..lines)
            .map(|i| {
                if errors.contains(&i) {
                    format!("error: boom number {i}")
                } else {
                    let n = 2 + (rng.next_u64() % 4) as usize;
                    (0..n).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" ")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn budget_keeps_head_tail_and_errors() {
        let text = noisy_log(5000, &[2500, 3100]);
        let out = compress(&text, 2000);
        assert!(out.chars().count() <= 2000, "{}", out.chars().count());
        assert!(out.starts_with(text.lines().next().unwrap()), "{out}");
        assert!(
            out.ends_with(text.lines().last().unwrap()),
            "{}",
            &out[out.len() - 300..]
        );
        assert!(out.contains("error: boom number 2500"));
        assert!(out.contains("error: boom number 3100"));
        assert!(out.contains(" lines]"));
        // The markers account for every input line.
        let marker_re = Regex::new(r"^\[… (\d+) lines\]$").unwrap();
        let (mut shown, mut omitted) = (0, 0);
        for line in out.lines() {
            match marker_re.captures(line) {
                Some(c) => omitted += c[1].parse::<usize>().unwrap(),
                None => shown += 1,
            }
        }
        assert_eq!(shown + omitted, 5000);
    }

    #[test]
    fn overlong_lines_are_shortened() {
        let text = format!(
            "first\n{}\nerror: {}\nlast",
            "x".repeat(50_000),
            "y".repeat(50_000)
        );
        let out = compress(&text, 1000);
        assert!(out.chars().count() <= 1000);
        assert!(out.starts_with("first\n"));
        assert!(out.ends_with("\nlast"));
        assert!(out.contains("error: yyy"));
        assert!(out.contains("chars]"));
    }

    #[test]
    fn always_within_budget_and_deterministic() {
        let mut rng = SplitMix64::new(11);
        let words = [
            "ok", "error", "§é", "\x1b[2K", "\r", "42", "  ", "warning", "\t",
        ];
        for _ in 0..200 {
            let n = rng.below(300) as usize;
            let text: String = (0..n)
                .map(|_| {
                    let w = words[rng.below(words.len() as u64) as usize];
                    if rng.below(4) == 0 {
                        format!("{w}\n")
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            for budget in [0, 1, 2, 7, 30, 100, 500, 5000] {
                let out = compress(&text, budget);
                assert!(out.chars().count() <= budget, "budget {budget}: {out:?}");
                assert_eq!(out, compress(&text, budget));
            }
        }
        assert_eq!(compress("", 10), "");
        assert_eq!(compress("anything at all", 0), "");
    }
}
