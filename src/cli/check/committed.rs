//! What the next tick will run: the committed tree, not the working copy.
//!
//! A night works in worktrees checked out from a commit, so the Brief's
//! scripts it runs are the committed ones, with their committed modes.
//! Judged on the disk, `check` passes a `bench.sh` that is `+x` only in the
//! working copy (every tick then fails with exit 126) and stays silent on an
//! uncommitted edit of a committed script (the night measures the old one).
//! So the files the Brief's commands name, and its protected files, are
//! compared between `HEAD` and the disk, and every difference that would
//! change the run is a problem with its fix.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Status, StatusOptions};

use crate::brief::Brief;

/// The differences between `HEAD` and the working copy that change what a
/// tick runs, each with its fix. None when there is no repository or no
/// commit (other checks say so).
pub(super) fn differences(brief: &Brief, root: &Path) -> Vec<String> {
    let Ok(repo) = Repository::discover(root) else {
        return Vec::new();
    };
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Vec::new();
    };
    let Ok(head) = repo.head().and_then(|h| h.peel_to_tree()) else {
        return Vec::new();
    };
    let head_id = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .map(|o| crate::text::clip::short(&o.to_string()).to_string())
        .unwrap_or_default();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    // The repository-relative path of a path relative to the project.
    let rel = |p: &Path| -> Option<PathBuf> {
        let full = normalize(&root.join(p));
        full.strip_prefix(&workdir).ok().map(Path::to_path_buf)
    };
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let commands = std::iter::once(("the metric command", &brief.metric.command))
        .chain(brief.metric.setup.iter().map(|c| ("setup", c)))
        .chain(brief.guards.iter().map(|g| ("a guard", g)));
    for (what, command) in commands {
        for (i, word) in words(command).into_iter().enumerate() {
            let Some(r) = rel(Path::new(&word)) else {
                continue;
            };
            let program = i == 0 && word.contains('/');
            // Only files: a word that names nothing on disk or in HEAD
            // (an argument, or what setup builds) says nothing here.
            if !seen.insert(r.clone()) {
                continue;
            }
            out.extend(compare(
                &repo,
                &head,
                &workdir,
                &r,
                &head_id,
                program,
                &format!("named by {what} `{command}`"),
            ));
        }
    }
    out.extend(protected(&repo, &head, &workdir, brief, &head_id, &seen));
    out
}

/// One file of the commands: its committed mode and content against the disk.
fn compare(
    repo: &Repository,
    head: &git2::Tree,
    workdir: &Path,
    rel: &Path,
    head_id: &str,
    program: bool,
    named: &str,
) -> Option<String> {
    let path = workdir.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok();
    let entry = head.get_path(rel).ok();
    let shown = rel.display();
    match (entry, meta) {
        (None, None) => None,
        // A directory, or a word that only looks like a path.
        (None, Some(m)) if !m.is_file() => None,
        (None, Some(_)) => {
            // Ignored files are what the commands build or fetch; the
            // program itself is `describe.rs`'s to report.
            if program || repo.status_should_ignore(rel).unwrap_or(false) {
                return None;
            }
            Some(format!(
                "`{shown}` ({named}) is not committed: a night checks out the commit it starts at, where it is missing; commit it (`git add {shown}` and `git commit`)"
            ))
        }
        (Some(e), None) => (e.kind() == Some(ObjectType::Blob)).then(|| {
            format!(
                "`{shown}` ({named}) is deleted in your working copy but committed at {head_id}: a night runs the committed one; commit the deletion or restore it (`git checkout -- {shown}`)"
            )
        }),
        (Some(e), Some(m)) => {
            if e.kind() != Some(ObjectType::Blob) {
                return None;
            }
            let committed_exec = e.filemode() == 0o100755;
            let disk_exec = std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0;
            let content = if m.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .ok()
                    .and_then(|t| Oid::hash_object(ObjectType::Blob, t.as_os_str().as_encoded_bytes()).ok())
            } else {
                Oid::hash_file(ObjectType::Blob, &path).ok()
            };
            let mut said = Vec::new();
            if content != Some(e.id()) {
                said.push(format!(
                    "`{shown}` ({named}) has uncommitted changes: a night runs the version committed at {head_id}, not the one on disk; commit them (`git commit {shown}`) or drop them (`git checkout -- {shown}`)"
                ));
            }
            // Not executable on disk either is `describe.rs`'s to report.
            if program && !committed_exec && disk_exec && e.filemode() != 0o120000 {
                said.push(format!(
                    "`{shown}` ({named}) is executable only in your working copy: it is committed without +x (mode {:o}), so every tick fails to start it (exit 126); record the mode (`git add --chmod=+x {shown}`) and commit",
                    e.filemode()
                ));
            } else if committed_exec && !disk_exec && !m.file_type().is_symlink() {
                said.push(format!(
                    "`{shown}` ({named}) is executable as committed but not in your working copy: a night uses the committed mode; commit the change of mode or restore it (`chmod +x {shown}`)"
                ));
            }
            (!said.is_empty()).then(|| said.join("; "))
        }
    }
}

/// The protected files (the evaluator the Brief names) that differ from
/// `HEAD`, those of the commands aside: edited, deleted, or new and not
/// ignored.
fn protected(
    repo: &Repository,
    head: &git2::Tree,
    workdir: &Path,
    brief: &Brief,
    head_id: &str,
    seen: &BTreeSet<PathBuf>,
) -> Vec<String> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let Ok(statuses) = repo.statuses(Some(&mut opts)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in statuses.iter() {
        let Ok(p) = s.path() else { continue };
        let st = s.status();
        let worktree =
            Status::WT_NEW | Status::WT_MODIFIED | Status::WT_DELETED | Status::WT_TYPECHANGE;
        let staged = Status::INDEX_NEW
            | Status::INDEX_MODIFIED
            | Status::INDEX_DELETED
            | Status::INDEX_TYPECHANGE;
        if !st.intersects(worktree | staged)
            || !brief.scope.protects(p)
            || seen.contains(Path::new(p))
        {
            continue;
        }
        if let Some(said) = compare(
            repo,
            head,
            workdir,
            Path::new(p),
            head_id,
            false,
            "protected by the Brief",
        ) {
            out.push(said);
        }
    }
    out
}

/// The words of a shell line that may name files it runs or reads: quotes
/// removed, options, variables and leading `VAR=value` assignments
/// dropped, and what a `>` redirects to (an output, written by the run).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut redirected = false;
    let mut skip_next = false;
    let mut flush = |word: &mut String, skip_next: &mut bool| {
        let w = word.trim_matches(|c| c == '\'' || c == '"').to_string();
        word.clear();
        if w.is_empty() {
            return;
        }
        if std::mem::take(skip_next) {
            return;
        }
        if !w.starts_with('-') && !w.starts_with('$') && !w.starts_with('&') {
            out.push(w);
        }
    };
    for c in command.chars() {
        if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>') {
            flush(&mut word, &mut skip_next);
            if c == '>' {
                redirected = true;
            } else if redirected {
                // The operator ended; the next word is its target (but for
                // `>&1`, a descriptor).
                skip_next = c != '&';
                redirected = false;
            }
            continue;
        }
        if redirected {
            // `>file` without a space: this word is the target.
            skip_next = true;
            redirected = false;
        }
        word.push(c);
    }
    flush(&mut word, &mut skip_next);
    // Leading assignments are the environment, not the program.
    let first = out
        .iter()
        .position(|w| !(w.contains('=') && !w.starts_with('=') && !w.contains('/')))
        .unwrap_or(out.len());
    out.split_off(first)
}

/// `path` with `.` and `..` resolved by name (it may not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_that_may_name_files() {
        let w = words("FOO=1 ./bench.sh --fast data/in.csv > out.log 2>&1");
        assert_eq!(w[..2], ["./bench.sh", "data/in.csv"]);
        assert!(!w.contains(&"out.log".to_string()), "{w:?}");
        assert_eq!(words("./run >>log.txt"), ["./run"]);
        assert_eq!(
            words("python3 'bench.py' -n 3"),
            ["python3", "bench.py", "3"]
        );
        assert_eq!(words("sh -c \"make && ./run\""), ["sh", "make", "./run"]);
    }
}
