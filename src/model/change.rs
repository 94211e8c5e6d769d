use serde::{Deserialize, Serialize};

/// How a file changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
}

/// One file of a change, line by line: what reviewers' rules read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub status: FileStatus,
    pub binary: bool,
    /// Added lines with their line number in the new file.
    pub added: Vec<(u32, String)>,
    /// Removed lines with their line number in the old file.
    pub removed: Vec<(u32, String)>,
}

/// A candidate's change against its base: the files, and the patch as
/// `git diff` prints it (what a command reviewer is shown).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Change {
    pub files: Vec<FileChange>,
    pub patch: String,
}

impl Change {
    /// Lines added plus lines removed.
    pub fn changed_lines(&self) -> usize {
        self.files
            .iter()
            .map(|f| f.added.len() + f.removed.len())
            .sum()
    }
}
