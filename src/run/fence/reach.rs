//! Whose a change outside the worktree is: attribution by what was
//! possible, not by what changed.
//!
//! The fence sees every file that differs after an agent step, but the
//! agent is one writer among several: the user appends to a notes file, a
//! cron line's `>> ooda.log` grows with ooda's own progress lines, another
//! program writes its output. Blaming all of it on the agent blocks honest
//! iterations and stops nights RED for nothing. So a change is the agent's
//! only where the agent could have made it: anywhere when it ran without
//! the sandbox, and beneath its grants when Landlock confined it (plus, on
//! a kernel whose Landlock predates ABI 3, `truncate(2)` of any file it can
//! read). Everything else is the environment's, recorded as such.

use std::path::{Path, PathBuf};

/// What the agent could write outside its worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Landlock confined its writes to its worktree, a private `TMPDIR` and
    /// these grants (`sandbox.writable`, its profile's state directory).
    Confined { abi: i32, grants: Vec<PathBuf> },
    /// Nothing kept it from writing anywhere its user can.
    Unconfined,
}

impl Reach {
    pub(crate) fn confined(&self) -> bool {
        matches!(self, Reach::Confined { .. })
    }

    /// Whether the agent could have made a change to `path`; `existed`: the
    /// file was there before the step and is there after it (the only
    /// change `truncate(2)` can make, which Landlock before ABI 3 allows).
    pub(crate) fn could_write(&self, path: &Path, existed: bool) -> bool {
        match self {
            Reach::Unconfined => true,
            Reach::Confined { abi, grants } => {
                (*abi < 3 && existed) || grants.iter().any(|g| beneath(path, g))
            }
        }
    }
}

/// `path` is `dir` or lies beneath it, the folders on the way resolved.
/// Where the file is, not where it points: a file the agent replaced with a
/// symlink to somewhere outside its grants was written beneath them.
fn beneath(path: &Path, dir: &Path) -> bool {
    let located = match (
        path.parent().and_then(|d| d.canonicalize().ok()),
        path.file_name(),
    ) {
        (Some(d), Some(n)) => d.join(n),
        _ => path.to_path_buf(),
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    located.starts_with(dir)
}

/// The files ooda's own stdout and stderr go to, when they are files: a
/// cron line's `>> ooda.log 2>&1` and `nohup`'s `nohup.out` are written by
/// ooda itself while the agent runs, in whatever folder the line was run.
pub(crate) fn own_outputs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [1, 2]
        .iter()
        .filter_map(|fd| {
            let link = format!("/proc/self/fd/{fd}");
            // Through the link: the open file itself, wherever it is.
            std::fs::metadata(&link).ok().filter(|m| m.is_file())?;
            std::fs::read_link(&link).ok()?.canonicalize().ok()
        })
        .collect();
    out.dedup();
    out
}

/// `paths` (canonical, from [`own_outputs`]) as they are named beneath
/// `root`: the fence names files from the root it was given, which may
/// reach them through a symlink.
pub(crate) fn as_under(root: &Path, paths: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(real) = root.canonicalize() else {
        return Vec::new();
    };
    paths
        .iter()
        .filter_map(|p| p.strip_prefix(&real).ok().map(|rel| root.join(rel)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confined_agent_writes_beneath_its_grants_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("cache/x")).unwrap();
        std::fs::write(d.join("notes.md"), "n\n").unwrap();
        let reach = Reach::Confined {
            abi: 6,
            grants: vec![d.join("cache")],
        };
        assert!(reach.could_write(&d.join("cache/x/y"), false));
        assert!(!reach.could_write(&d.join("notes.md"), true));
        assert!(!reach.could_write(&d.join("cachet"), false));
        // A removed file is placed by its folder; a file made a symlink
        // to somewhere else, by where it is.
        assert!(reach.could_write(&d.join("cache/gone"), false));
        std::os::unix::fs::symlink("/etc/hostname", d.join("cache/x/link")).unwrap();
        assert!(reach.could_write(&d.join("cache/x/link"), false));
        // Before ABI 3 it can truncate what exists, not create or remove.
        let old = Reach::Confined {
            abi: 2,
            grants: Vec::new(),
        };
        assert!(old.could_write(&d.join("notes.md"), true));
        assert!(!old.could_write(&d.join("new.md"), false));
        assert!(Reach::Unconfined.could_write(&d.join("notes.md"), false));
    }
}
