//! A settings file of a worktree changed for one agent call and put back
//! byte for byte after it.
//!
//! The agent CLIs read per-project settings from the worktree they run in
//! (`.claude/settings.local.json`, `.gemini/settings.json`); that is where
//! ooda adds what it gives a tool for one step (a compression hook, the
//! code index's MCP server). The change must not outlive the call: it is
//! undone before anything reads what the agent changed, on the error path
//! too (on drop), and one left by an ooda killed mid-call is recognised
//! and cleaned the next time.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::{Error, Result};

/// A change to a settings file of a worktree for one call; [`Patch::remove`]
/// (or dropping it) puts the file back as it was.
#[must_use = "the change stays in the worktree until removed"]
pub(crate) struct Patch {
    file: PathBuf,
    /// The settings file's bytes before, if it existed.
    before: Option<Vec<u8>>,
    /// The directory ooda created for it, if it did.
    created_dir: Option<PathBuf>,
    removed: bool,
}

impl Patch {
    /// Changes the JSON settings file `file` with `add`, after `clean` took
    /// out what an earlier, killed ooda left of the same change (it says
    /// whether there was any: that is not the project's, so it is not
    /// restored). `what` names the change in the error for a file that is
    /// not JSON.
    pub(crate) fn apply(
        file: &Path,
        what: &str,
        clean: fn(&mut Value) -> bool,
        add: impl FnOnce(&mut Value),
    ) -> Result<Patch> {
        let file = file.to_path_buf();
        let dir = file
            .parent()
            .expect("a settings file is in a directory")
            .to_path_buf();
        let created_dir = (!dir.exists()).then(|| dir.clone());
        let before = match std::fs::read(&file) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(format!("reading {}", file.display()), e)),
        };
        let mut value: Value = match &before {
            Some(b) => serde_json::from_slice(b).map_err(|e| {
                Error::Input(format!(
                    "{} is not JSON ({e}): ooda cannot add {what} to it",
                    file.display()
                ))
            })?,
            None => json!({}),
        };
        // Ours, left by an ooda that was killed mid-call, is not the
        // project's: it goes, and a file that held only it was none.
        let stale = clean(&mut value);
        let before = match before {
            Some(_) if stale && value == json!({}) => None,
            Some(_) if stale => Some(serde_json::to_vec_pretty(&value).unwrap_or_default()),
            b => b,
        };
        if !value.is_object() {
            value = json!({});
        }
        add(&mut value);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        std::fs::write(&file, text)
            .map_err(|e| Error::io(format!("writing {}", file.display()), e))?;
        Ok(Patch {
            file,
            before,
            created_dir,
            removed: false,
        })
    }

    /// Puts the settings back: the file as it was, or gone with the
    /// directory ooda made for it.
    pub(crate) fn remove(mut self) -> Result<()> {
        self.removed = true;
        self.restore()
    }

    fn restore(&self) -> Result<()> {
        let io = |what: &str, e| Error::io(format!("{what} {}", self.file.display()), e);
        match &self.before {
            Some(b) => std::fs::write(&self.file, b).map_err(|e| io("restoring", e))?,
            None => match std::fs::remove_file(&self.file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("removing", e));
                }
                _ => {}
            },
        }
        if let Some(dir) = &self.created_dir {
            // Only if empty: the agent may have put something of its own there.
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }
}

impl Drop for Patch {
    fn drop(&mut self) {
        // On an error path the call never returned normally: the settings
        // are put back all the same.
        if !self.removed {
            let _ = self.restore();
        }
    }
}
