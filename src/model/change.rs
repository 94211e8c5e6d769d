use serde::{Deserialize, Serialize};

/// How a file changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileStatus {
    Added,
    Deleted,
    Modified,
}

/// One file of a change, line by line: what reviewers' rules read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct FileChange {
    pub path: String,
    /// Where a renamed file was: the rules see both paths (a protected file
    /// moved away is a protected file changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
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
pub(crate) struct Change {
    pub files: Vec<FileChange>,
    pub patch: String,
}

impl FileChange {
    /// The paths this change touches: the file's, and where it was moved from.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.old_path.as_deref())
    }
}

impl Change {
    /// Lines added plus lines removed.
    pub(crate) fn changed_lines(&self) -> usize {
        self.files
            .iter()
            .map(|f| f.added.len() + f.removed.len())
            .sum()
    }
}
