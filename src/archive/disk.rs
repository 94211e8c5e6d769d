//! The disk a Brief takes (its archive and its worktrees), measured when a
//! tick ends and when `ooda gc` runs, and read by `ooda status`.
//!
//! Why not measured by `status` itself: a worktree may hold a build tree of
//! a hundred thousand files, and a walk of it on every `ooda status` made
//! the one command a user runs most often the slowest. The figure is shown
//! with its age instead, and `ooda gc` measures it afresh.
//!
//! The file lives in `.ooda/disk/`, ooda's own folder beside the worktrees:
//! it is derived, never archived, and losing it only hides the figure until
//! the next tick.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::project::Project;

/// A measurement of a Brief's disk use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Usage {
    pub archive_bytes: u64,
    pub worktree_bytes: u64,
    /// When it was measured.
    pub at: DateTime<Utc>,
}

impl Usage {
    /// Walks the archive and the worktrees of `brief` now.
    pub(crate) fn measure(project: &Project, brief: &str) -> Usage {
        Usage {
            archive_bytes: super::gc::disk_bytes(&project.iterations_dir(brief)),
            worktree_bytes: super::gc::disk_bytes(&project.worktrees_dir(brief)),
            at: Utc::now(),
        }
    }

    /// Measures and records it; a failure to record is not the tick's
    /// failure (the figure is a convenience).
    pub(crate) fn refresh(project: &Project, brief: &str) -> Usage {
        let u = Usage::measure(project, brief);
        u.record(project, brief);
        u
    }

    /// The last recorded measurement of `brief`, if any.
    pub(crate) fn last(project: &Project, brief: &str) -> Option<Usage> {
        let bytes = crate::atomic::read_file(path(&project.root, brief)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Forgets the recorded measurement (a reset Brief's was its old run's).
    pub(crate) fn forget(project: &Project, brief: &str) {
        let _ = std::fs::remove_file(path(&project.root, brief));
    }

    fn record(&self, project: &Project, brief: &str) {
        let p = path(&project.root, brief);
        if let Some(dir) = p.parent()
            && std::fs::create_dir_all(dir).is_ok()
            && let Ok(text) = serde_json::to_vec(self)
        {
            let _ = crate::atomic::write_atomic(&p, &text);
        }
    }
}

fn path(root: &Path, brief: &str) -> PathBuf {
    root.join(".ooda")
        .join("disk")
        .join(format!("{brief}.json"))
}
