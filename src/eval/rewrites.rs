//! A measured command that rewrites a tracked file: one message for it,
//! wherever it is found (`ooda check --measure`, the baseline, EVALUATE).
//!
//! What is measured must be what is committed, so a setup, guard or metric
//! run that changes a file the commit holds cannot be let through: it is
//! how a benchmark is rigged. But a benchmark that rewrites its own results
//! file in the repository does it on every run, the agent's change or not,
//! and the user needs the file, the command and the fix, not a scope
//! violation.

/// `by` (the command, as a sentence's subject) changed the tracked `files`
/// in `side`'s worktree: what it did, why it matters, and the fix.
/// `knobs_file`: the Brief's, whose fix is not the others' (it must stay
/// tracked, and ooda's).
pub(crate) fn message(by: &str, files: &[String], side: &str, knobs_file: &str) -> String {
    let first = files.first().map(String::as_str).unwrap_or_default();
    if let Some(k) = knobs_in(files, knobs_file) {
        return knobs(by, k);
    }
    format!(
        "{by} changed {} in the {side}'s worktree, which would be committed: what is measured must be what is committed. A measured command may create and change files git does not track (results, logs, caches), not tracked ones: have it write `{first}` elsewhere (an untracked or git-ignored path, or $TMPDIR), or stop tracking it (`git rm --cached {first}`, a line in .gitignore, and commit)",
        crate::text::clip::clip(&files.join(", "), 300)
    )
}

/// The knobs file, when it is among `files`.
fn knobs_in<'f>(files: &'f [String], knobs_file: &str) -> Option<&'f str> {
    let k = knobs_file.trim_start_matches("./");
    files.iter().map(String::as_str).find(|f| *f == k)
}

/// A measured command wrote the knobs file.
fn knobs(by: &str, file: &str) -> String {
    format!(
        "{by} wrote the knobs file {file}, which ooda writes from the plan and the benchmark only reads: a run that rewrites it is measured with values no plan chose. Have the benchmark read it (`. ./{file}`, or its variables) and never write it"
    )
}

/// What to add when the base's own measurement rewrote the files too: the
/// benchmark does it by itself, and a run already started keeps them
/// tracked on its branch.
pub(crate) fn by_itself(brief: &str) -> String {
    format!(
        "; the base's own measurement rewrote them too, so the benchmark does it whatever the change: no iteration can be measured until it stops. A run already started keeps them tracked on its branch ooda/{brief}: after the fix, `ooda reset {brief}` starts over from your HEAD"
    )
}

/// `by` created the new `files` in the candidate's worktree, which the
/// base's runs did not: the change's code wrote them where the benchmark
/// may read them (a `time.py` that shadows the timer), so what is measured
/// is not what would be committed.
pub(crate) fn created(by: &str, files: &[String], knobs_file: &str) -> String {
    let first = files.first().map(String::as_str).unwrap_or_default();
    if let Some(k) = knobs_in(files, knobs_file) {
        return knobs(by, k);
    }
    format!(
        "{by} created {} in the candidate's worktree, which the base's runs did not: a file the change's code writes beside the code may be read by the next run (a module that shadows the benchmark's own), and it would not be committed. If it is an output, have it written to a git-ignored path (`/{first}` in .gitignore, committed)",
        crate::text::clip::clip(&files.join(", "), 300)
    )
}
