//! `ooda init` and `ooda new`: the files a project starts from.
//!
//! The default subagent definitions and templates are compiled into the
//! binary from this repository's own `subagents/` and `templates/`, so what
//! `init` copies is exactly what ooda falls back to when a user deletes them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::atomic::{create_dir_all, write_atomic};
use crate::error::{Error, Result};
use crate::project::{SUBAGENTS, TEMPLATES};

pub(super) const GITIGNORE_LINES: &[&str] = &[
    ".ooda/",
    "iterations/*/state.json",
    "iterations/*/state.json.corrupt-*",
    "iterations/*/events.jsonl",
    "iterations/*/events/",
    // A cache of the iteration files (history/index.rs), rebuilt from them.
    "iterations/*/index.jsonl",
    // Its facts table and the ledger of older iterations (history/view.rs),
    // rebuilt from the files too.
    "iterations/*/facts.bin",
    "iterations/*/ledger.json",
    "iterations/*/artifacts/",
    "iterations/*/.lock",
    // A replay's record is worth keeping; its log, prompts and copies of
    // earlier iteration files are machine state like the run's.
    "iterations/*/replays/*/*",
    "!iterations/*/replays/*/replay.json",
    // aider's own files (chat history, tags cache) in a worktree.
    ".aider*",
];

const OODA_YAML: &str = "# ooda project configuration. Every key is optional.\ndefaults:\n  pairs: 24               # most paired runs per decision (looks at 3, 5, 8, 12; 16, 20, 24 if promising)\n  calibration_pairs: 10   # A/A pairs in iteration 0\n  alpha: 0.05             # one-sided false-keep rate per decision\n";

/// What `init` did, for the report.
#[derive(Debug, Default)]
pub(super) struct InitReport {
    pub created: Vec<PathBuf>,
    pub kept: Vec<PathBuf>,
    pub gitignore_added: Vec<String>,
}

pub(super) fn init(dir: &Path) -> Result<InitReport> {
    if git2::Repository::discover(dir).is_err() {
        return Err(Error::Input(format!(
            "{} is not inside a git repository: ooda keeps its work on a branch. Run `git init` and commit first.",
            dir.display()
        )));
    }
    crate::project::at_git_top(dir)?;
    let mut report = InitReport::default();
    let mut put = |rel: &str, content: &str| -> Result<()> {
        let path = dir.join(rel);
        if path.exists() {
            report.kept.push(path);
            return Ok(());
        }
        if let Some(parent) = path.parent() {
            create_dir_all(parent)?;
        }
        write_atomic(&path, content.as_bytes())?;
        report.created.push(path);
        Ok(())
    };
    put("ooda.yaml", OODA_YAML)?;
    for (name, text) in SUBAGENTS {
        put(&format!("subagents/{name}"), text)?;
    }
    for (name, text) in TEMPLATES {
        put(&format!("templates/{name}"), text)?;
    }
    create_dir_all(&dir.join("briefs"))?;
    create_dir_all(&dir.join("iterations"))?;
    create_dir_all(&dir.join("notes"))?;
    report.gitignore_added = ensure_gitignore(&dir.join(".gitignore"))?;
    Ok(report)
}

/// Appends the missing ooda lines to `.gitignore`, leaving the rest alone.
pub(super) fn ensure_gitignore(path: &Path) -> Result<Vec<String>> {
    let existing = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    // Each rule as written, without its anchoring `/`.
    let have: Vec<&str> = existing
        .lines()
        .map(|l| l.trim().trim_start_matches('/'))
        .collect();
    // A line the file covers already (itself, or a rule ignoring its whole
    // top folder, as `/iterations/*` does) is not added: lines that change
    // nothing are noise in the user's file. Only this file is read: rules
    // kept elsewhere (`.git/info/exclude`, a global excludes file) are
    // personal, and other clones would not have them.
    let covered = |l: &str| {
        let top = l.split('/').next().unwrap_or(l);
        have.contains(&l)
            || (l.contains('/')
                && [
                    top.to_string(),
                    format!("{top}/"),
                    format!("{top}/*"),
                    format!("{top}/**"),
                ]
                .iter()
                .any(|w| have.contains(&w.as_str())))
    };
    let positive: Vec<&str> = GITIGNORE_LINES
        .iter()
        .copied()
        .filter(|l| !l.starts_with('!') && !covered(l))
        .collect();
    // A re-inclusion undoes the line just before it, and only that: it is
    // added with that line, and never under a rule of the user's that
    // ignores the whole folder (git cannot re-include a file there).
    let missing: Vec<String> = GITIGNORE_LINES
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            positive.contains(l)
                || (l.starts_with('!')
                    && !have.contains(l)
                    && i.checked_sub(1)
                        .is_some_and(|p| positive.contains(&GITIGNORE_LINES[p])))
        })
        .map(|(_, l)| l.to_string())
        .collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# ooda: worktrees and machine state\n");
    for l in &missing {
        text.push_str(l);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())?;
    Ok(missing)
}

pub(super) fn new_brief(root: &Path, name: &str) -> Result<PathBuf> {
    if !crate::brief::is_name(name) {
        return Err(Error::Input(format!(
            "`{name}` is not a valid Brief name: use lowercase letters, digits, `-` and `_`, starting with a letter or digit (e.g. `parse-latency`)"
        )));
    }
    let path = root.join("briefs").join(format!("{name}.md"));
    if path.exists() {
        return Err(Error::Input(format!(
            "{} already exists; edit it, or pick another name",
            path.display()
        )));
    }
    create_dir_all(&root.join("briefs"))?;
    let text = crate::project::template(root, "brief.md").unwrap_or_default();
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_lines_are_added_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".gitignore");
        fs::write(&p, "target").unwrap();
        assert_eq!(ensure_gitignore(&p).unwrap().len(), GITIGNORE_LINES.len());
        assert!(ensure_gitignore(&p).unwrap().is_empty());
        let text = fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("target\n"));
    }

    #[test]
    fn init_on_this_repository_adds_nothing_to_its_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".gitignore");
        fs::write(&p, include_str!("../../.gitignore")).unwrap();
        assert_eq!(ensure_gitignore(&p).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn lines_the_projects_rules_cover_already_are_not_added() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".gitignore");
        fs::write(&p, "/iterations/*\n.ooda\n.aider*\n").unwrap();
        assert_eq!(ensure_gitignore(&p).unwrap(), Vec::<String>::new());
        // The whole folder is ignored: a re-inclusion inside it would be
        // a line git never applies.
        fs::write(&p, "/iterations/*\n").unwrap();
        assert_eq!(ensure_gitignore(&p).unwrap(), vec![".ooda/", ".aider*"]);
    }

    #[test]
    fn the_brief_template_is_a_valid_brief() {
        let (_, text) = TEMPLATES.iter().find(|(n, _)| *n == "brief.md").unwrap();
        crate::brief::Brief::parse(Path::new("briefs/x.md"), text).unwrap();
    }

    #[test]
    fn rejects_bad_names() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            crate::exit::Exit::from(&new_brief(dir.path(), "Bad Name").unwrap_err()).code(),
            2
        );
        new_brief(dir.path(), "ok-name").unwrap();
        assert_eq!(
            crate::exit::Exit::from(&new_brief(dir.path(), "ok-name").unwrap_err()).code(),
            2
        );
    }
}
