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

/// What `check` says about the committed tree: problems (exit 2) and
/// warnings (a file the commands name that is not committed may be one
/// they write, which `check` cannot tell from one they read).
#[derive(Debug, Default)]
pub(super) struct Findings {
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

/// The differences between `HEAD` and the working copy that change what a
/// tick runs, each with its fix. None when there is no repository or no
/// commit (other checks say so). `agent`: the command agent's program,
/// which runs in the candidate's worktree too (`./ooda-agent.sh`).
pub(super) fn differences(brief: &Brief, root: &Path, agent: Option<&str>) -> Findings {
    let mut out = Findings::default();
    let Ok(repo) = Repository::discover(root) else {
        return out;
    };
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return out;
    };
    let Ok(head) = repo.head().and_then(|h| h.peel_to_tree()) else {
        return out;
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
    let mut seen = BTreeSet::new();
    let agent = agent.map(str::to_string);
    let commands = std::iter::once(("the metric command", &brief.metric.command))
        .chain(brief.metric.setup.iter().map(|c| ("setup", c)))
        .chain(brief.guards.iter().map(|g| ("a guard", g)))
        .chain(agent.iter().map(|a| ("the agent's profile", a)));
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
            let named = format!("named by {what} `{command}`");
            match compare(&repo, &head, &workdir, &r, &head_id, program, &named) {
                Some(Said::Problem(p)) => out.problems.push(p),
                Some(Said::Warning(w)) => out.warnings.push(w),
                None => {}
            }
        }
    }
    for said in protected(&repo, &head, &workdir, brief, &head_id, &seen) {
        match said {
            Said::Problem(p) => out.problems.push(p),
            Said::Warning(w) => out.warnings.push(w),
        }
    }
    out
}

/// One finding of [`compare`].
enum Said {
    Problem(String),
    Warning(String),
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
) -> Option<Said> {
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
            // It may be what the command writes (`--out results.json`):
            // said, not held against the Brief.
            Some(Said::Warning(format!(
                "`{shown}` ({named}) is not committed: if the command reads it, a night (which checks out the commit it starts at) will not find it, so commit it (`git add {shown}` and `git commit`); if the command writes it, have git ignore it"
            )))
        }
        (Some(e), None) => (e.kind() == Some(ObjectType::Blob)).then(|| {
            Said::Problem(format!(
                "`{shown}` ({named}) is deleted in your working copy but committed at {head_id}: a night runs the committed one; commit the deletion or restore it (`git checkout -- {shown}`)"
            ))
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
            // Git's own view first: a file its filters rewrite on checkout
            // (line endings, LFS) hashes differently on disk and is still
            // unmodified for git.
            let modified = repo.status_file(rel).is_ok_and(|st| {
                st.intersects(
                    Status::WT_MODIFIED
                        | Status::WT_TYPECHANGE
                        | Status::INDEX_MODIFIED
                        | Status::INDEX_TYPECHANGE,
                )
            });
            let mut said = Vec::new();
            if modified && content != Some(e.id()) {
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
            (!said.is_empty()).then(|| Said::Problem(said.join("; ")))
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
) -> Vec<Said> {
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
/// removed; options, variables, leading `NAME=value` assignments, file
/// descriptors (`2>&1`) and what a `>` redirects to (an output the run
/// writes) dropped. The first word is the program.
fn words(command: &str) -> Vec<String> {
    // Words and the operators between them, in order.
    let mut tokens: Vec<Result<String, char>> = Vec::new();
    let mut word = String::new();
    for c in command.chars() {
        if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>') {
            if !word.is_empty() {
                tokens.push(Ok(std::mem::take(&mut word)));
            }
            if !c.is_whitespace() {
                tokens.push(Err(c));
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        tokens.push(Ok(word));
    }
    let mut out = Vec::new();
    let mut target = false;
    for (i, t) in tokens.iter().enumerate() {
        let w = match t {
            Err('>') => {
                target = true;
                continue;
            }
            // `>&1`: a descriptor follows, not a file.
            Err('&') if target => continue,
            Err(_) => {
                target = false;
                continue;
            }
            Ok(w) => w.trim_matches(|c| c == '\'' || c == '"'),
        };
        let fd = w.chars().all(|c| c.is_ascii_digit())
            && (target || matches!(tokens.get(i + 1), Some(Err('>'))));
        if std::mem::take(&mut target) || fd || w.is_empty() {
            continue;
        }
        if !w.starts_with('-') && !w.starts_with('$') {
            out.push(w.to_string());
        }
    }
    // Leading assignments are the environment, not the program.
    let first = out
        .iter()
        .position(|w| !is_assignment(w))
        .unwrap_or(out.len());
    out.split_off(first)
}

/// `NAME=value`, the shell's form of an environment assignment.
pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
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
        assert_eq!(
            words("FOO=1 PYTHONPATH=./src ./bench.sh --fast data/in.csv > out.log 2>&1"),
            ["./bench.sh", "data/in.csv"]
        );
        assert_eq!(words("./run >>log.txt 2> err.txt"), ["./run"]);
        assert_eq!(
            words("python3 'bench.py' -n 3 < in.txt"),
            ["python3", "bench.py", "3", "in.txt"]
        );
        assert_eq!(words("sh -c \"make && ./run\""), ["sh", "make", "./run"]);
        assert!(is_assignment("OUT_DIR=/tmp/o") && !is_assignment("./a=b") && !is_assignment("=x"));
    }
}
