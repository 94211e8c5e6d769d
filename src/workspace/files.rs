//! The files of a worktree a tool may see, and the one rule for a path
//! named by an agent: relative, inside the worktree after every symlink is
//! followed, never into `.git`.
//!
//! The llm driver's file tools and the code index (and through it `ooda
//! mcp`) answer from the same files under the same rule, so a path one of
//! them refuses the other refuses too.

use std::path::{Component, Path, PathBuf};

/// The files of a worktree, sorted, and the symlinks that were not
/// followed (they may lead anywhere).
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub files: Vec<PathBuf>,
    pub symlinks: Vec<PathBuf>,
}

/// The files under `base`, sorted: in a git worktree, the tracked ones
/// and the untracked ones git does not ignore (a build's `target/`
/// would drown the rest); elsewhere, every file but `.git`.
pub(crate) fn files_under(root: &Path, base: &Path) -> Vec<PathBuf> {
    collect(root, base).files
}

/// Every file of the worktree at `root` a tool may see (see
/// [`files_under`]), and the symlinks it skipped.
pub(crate) fn listing(root: &Path) -> Listing {
    let root = canonical_root(root).unwrap_or_else(|_| root.to_path_buf());
    collect(&root, &root)
}

fn collect(root: &Path, base: &Path) -> Listing {
    let root = canonical_root(root).unwrap_or_else(|_| root.to_path_buf());
    // The repository the folder is in (it may be a subfolder of one), unless
    // git ignores the folder itself: then git would list nothing of it.
    let repo = git2::Repository::discover(&root).ok().and_then(|r| {
        let work = r.workdir()?.canonicalize().ok()?;
        let rel = root.strip_prefix(&work).ok()?.to_path_buf();
        let ignored = !rel.as_os_str().is_empty() && r.is_path_ignored(&rel).unwrap_or(false);
        (!ignored).then_some((r, work, rel))
    });
    let mut out = Listing::default();
    let walked = |out: &mut Listing| {
        walk_all(base, &mut |p, link| {
            if link {
                out.symlinks.push(p.to_path_buf());
            } else {
                out.files.push(p.to_path_buf());
            }
        })
    };
    match (repo, base.starts_with(&root)) {
        (Some((repo, work, rel)), true) => {
            let mut opts = git2::StatusOptions::new();
            opts.include_untracked(true)
                .recurse_untracked_dirs(true)
                .include_ignored(false)
                .include_unmodified(true)
                .exclude_submodules(true);
            if !rel.as_os_str().is_empty() {
                opts.pathspec(rel.join("*").to_string_lossy().as_ref())
                    .disable_pathspec_match(false);
            }
            match repo.statuses(Some(&mut opts)) {
                Ok(statuses) => {
                    for e in statuses.iter() {
                        let Ok(path) = e.path() else { continue };
                        let full = work.join(path);
                        if !full.starts_with(base) {
                            continue;
                        }
                        // Not through a symlink: it may lead outside.
                        match std::fs::symlink_metadata(&full) {
                            Ok(m) if m.is_file() => out.files.push(full),
                            Ok(m) if m.file_type().is_symlink() => out.symlinks.push(full),
                            _ => {}
                        }
                    }
                }
                Err(_) => walked(&mut out),
            }
        }
        _ => walked(&mut out),
    }
    out.files.sort();
    out.symlinks.sort();
    out
}

pub(crate) fn canonical_root(root: &Path) -> Result<PathBuf, String> {
    root.canonicalize()
        .map_err(|e| format!("the worktree is gone: {e}"))
}

/// `rel` inside `root`, or why not. `creating`: the file may not exist
/// yet (its deepest existing folder is checked instead).
pub(crate) fn resolve(root: &Path, rel: &str, creating: bool) -> Result<PathBuf, String> {
    let rule = "(rule: paths are relative to the worktree root and stay inside it)";
    let p = Path::new(rel.trim());
    if rel.trim().is_empty() {
        return Err(format!("the path is empty {rule}"));
    }
    if p.is_absolute() {
        return Err(format!(
            "`{rel}` is an absolute path {rule}; write it relative to the root, e.g. src/lib.rs"
        ));
    }
    for c in p.components() {
        match c {
            Component::ParentDir => return Err(format!("`{rel}` uses `..` {rule}")),
            Component::Normal(n) if n == ".git" => {
                return Err(format!("`{rel}` is inside .git, which no tool touches"));
            }
            _ => {}
        }
    }
    let root = canonical_root(root)?;
    let joined = root.join(p);
    // Follow every symlink of the part that exists, then re-check.
    let mut existing = joined.clone();
    let mut rest = Vec::new();
    while !existing.exists() && std::fs::symlink_metadata(&existing).is_err() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    if !rest.is_empty() && !creating {
        return Err(format!(
            "`{rel}` does not exist in the worktree; list its folder to see what does"
        ));
    }
    let real = existing
        .canonicalize()
        .map_err(|_| format!("`{rel}` is a symlink to nothing {rule}"))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "`{rel}` leads outside the worktree (through a symlink) {rule}"
        ));
    }
    if real.components().any(|c| c.as_os_str() == ".git")
        && !root.components().any(|c| c.as_os_str() == ".git")
    {
        return Err(format!("`{rel}` leads into .git, which no tool touches"));
    }
    let mut out = real;
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    Ok(out)
}

/// Every file and symlink under `dir` (`true` for a symlink), not `.git`.
fn walk_all(dir: &Path, f: &mut dyn FnMut(&Path, bool)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_name() == ".git" {
            continue;
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            walk_all(&e.path(), f);
        } else if kind.is_file() {
            f(&e.path(), false);
        } else if kind.is_symlink() {
            f(&e.path(), true);
        }
    }
}
