//! The fence around an agent: what it must not touch while it runs in the
//! candidate worktree, checked by content after each step.
//!
//! Sandboxed CLIs cannot write outside their worktree, but a script can, and
//! a changed base would corrupt the measurement while a changed checkout
//! breaks the promise that it is never modified. The fence snapshots the
//! user's checkout (ooda's own `iterations/` and `.ooda/` aside, and
//! `briefs/`, which humans may edit at any time), the base worktree, and the
//! Brief's archive, and names every path that differs afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::compress::clip;
use crate::error::{IoContext, Result};

/// A snapshot of the work trees an agent must not touch while it runs in the
/// candidate: the user's checkout (ooda's own `iterations/` and `.ooda/`
/// aside) and the base worktree. Sandboxed CLIs cannot write there, but a
/// script can, and a changed base would corrupt the measurement while a
/// changed checkout breaks the promise that it is never modified.
pub struct Fence {
    trees: Vec<Watched>,
    /// The Brief's archive (`iter-*.md`, `summary.md`, `state.json`): an
    /// agent must not rewrite the history it is judged by. Hashed file by
    /// file, since git status sees neither ignored nor untracked-folder files.
    archive: PathBuf,
    archive_before: BTreeMap<PathBuf, String>,
}

/// One watched work tree: where, what to skip, whether to walk untracked
/// folders, and its dirty files when the agent started.
struct Watched {
    dir: PathBuf,
    skip: Vec<PathBuf>,
    recurse: bool,
    before: BTreeMap<PathBuf, String>,
}

impl Fence {
    pub fn new(root: &Path, base_dir: &Path, archive: &Path) -> Result<Fence> {
        // Briefs may be edited by a human at any time.
        let skip = vec![
            root.join("iterations"),
            root.join(".ooda"),
            root.join("briefs"),
        ];
        let mut trees = Vec::new();
        // The user's checkout is not walked into untracked folders (a
        // checkout without `.ooda/` ignored would hold the worktrees there);
        // the base worktree is ooda's own and small enough to walk whole.
        for (dir, skip, recurse) in [(root, skip, false), (base_dir, Vec::new(), true)] {
            let before = dirty(dir, &skip, recurse)?;
            trees.push(Watched {
                dir: dir.to_path_buf(),
                skip,
                recurse,
                before,
            });
        }
        Ok(Fence {
            trees,
            archive: archive.to_path_buf(),
            archive_before: archive_files(archive),
        })
    }

    /// Paths that changed since the snapshot, or `None`.
    pub fn breached(&self) -> Result<Option<String>> {
        let mut changed = Vec::new();
        for Watched {
            dir,
            skip,
            recurse,
            before,
        } in &self.trees
        {
            let after = dirty(dir, skip, *recurse)?;
            for (path, state) in &after {
                if before.get(path) != Some(state) {
                    changed.push(path.display().to_string());
                }
            }
            for path in before.keys().filter(|p| !after.contains_key(*p)) {
                changed.push(path.display().to_string());
            }
        }
        let after = archive_files(&self.archive);
        for (path, hash) in &after {
            if self.archive_before.get(path) != Some(hash) {
                changed.push(path.display().to_string());
            }
        }
        for path in self
            .archive_before
            .keys()
            .filter(|p| !after.contains_key(*p))
        {
            changed.push(path.display().to_string());
        }
        Ok((!changed.is_empty()).then(|| {
            changed.sort();
            format!(
                "the agent changed files outside the candidate worktree: {}",
                clip(&changed.join(", "), 600)
            )
        }))
    }
}

/// The archive's own files, hashed (artifacts and the event log, which ooda
/// writes while the agent runs, are not part of it).
fn archive_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = (name.starts_with("iter-") && name.ends_with(".md"))
            || name == "summary.md"
            || name == "state.json";
        if ours && let Ok(o) = git2::Oid::hash_file(git2::ObjectType::Blob, e.path()) {
            out.insert(e.path(), o.to_string());
        }
    }
    out
}

/// Changed and untracked files of the work tree containing `dir` (absolute
/// paths, with a content hash), ignored files and `skip` prefixes excluded.
fn dirty(dir: &Path, skip: &[PathBuf], recurse: bool) -> Result<BTreeMap<PathBuf, String>> {
    let repo = git2::Repository::discover(dir)
        .ctx(|| format!("opening the repository at {}", dir.display()))?;
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(BTreeMap::new());
    };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(recurse)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("reading the status of {}", workdir.display()))?;
    let mut out = BTreeMap::new();
    for st in statuses.iter() {
        let Ok(rel) = st.path() else { continue };
        let path = workdir.join(rel);
        if skip.iter().any(|p| path.starts_with(p)) || !path.starts_with(dir) {
            continue;
        }
        let hash = git2::Oid::hash_file(git2::ObjectType::Blob, &path)
            .map(|o| o.to_string())
            .unwrap_or_else(|_| "missing".into());
        out.insert(path, format!("{}:{hash}", st.status().bits()));
    }
    Ok(out)
}
