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
        // Never through a symlink: the worktree's content is the agent's,
        // and ooda writes here outside the sandbox.
        for p in [&dir, &file] {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Error::Input(format!(
                    "{} is a symlink: ooda does not write {what} through one (make it a real file or folder)",
                    p.display()
                )));
            }
        }
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
        crate::atomic::write_atomic(&file, text.as_bytes())?;
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
        // The agent may have put a symlink where the folder or the file
        // was: it is removed, never written or deleted through (that would
        // reach outside the worktree from outside the sandbox).
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let link =
            |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        if link(dir) {
            std::fs::remove_file(dir)
                .map_err(|e| io("removing a symlink in place of the folder of", e))?;
        }
        if link(&self.file) {
            std::fs::remove_file(&self.file).map_err(|e| io("removing a symlink at", e))?;
        }
        match &self.before {
            Some(b) => {
                std::fs::create_dir_all(dir).map_err(|e| io("restoring the folder of", e))?;
                crate::atomic::write_atomic(&self.file, b)?
            }
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

/// Removes everything a killed ooda may have left in a settings file (its
/// compression hook, the code index's MCP server); whether there was any.
/// The first change a call makes to a file cleans with it; a second one on
/// the same file must not, or it would take the first one's entry for stale.
pub(crate) fn drop_stale(value: &mut Value) -> bool {
    let hooks = drop_hook(value);
    drop_server(value) || hooks
}

/// Removes hook entries that run `ooda compress --hook` (and the lists and
/// the `hooks` object they leave empty); whether there were any.
pub(crate) fn drop_hook(value: &mut Value) -> bool {
    let ours = |h: &Value| {
        h["hooks"].as_array().is_some_and(|hs| {
            hs.iter().any(|x| {
                x["command"]
                    .as_str()
                    .is_some_and(|c| c.contains(" compress --hook "))
            })
        })
    };
    let mut found = false;
    if let Some(hooks) = value.get_mut("hooks").and_then(Value::as_object_mut) {
        for list in hooks.values_mut() {
            if let Some(items) = list.as_array_mut() {
                let n = items.len();
                items.retain(|h| !ours(h));
                found |= items.len() != n;
            }
        }
        hooks.retain(|_, list| !list.as_array().is_some_and(Vec::is_empty));
        if hooks.is_empty()
            && let Some(obj) = value.as_object_mut()
        {
            obj.remove("hooks");
        }
    }
    found
}

/// Removes the code index's MCP server entry (and an `mcpServers` it
/// leaves empty); whether there was one.
pub(crate) fn drop_server(value: &mut Value) -> bool {
    let Some(servers) = value.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return false;
    };
    let found = servers.remove(SERVER).is_some();
    if servers.is_empty()
        && let Some(obj) = value.as_object_mut()
    {
        obj.remove("mcpServers");
    }
    found
}

/// The name the code index's MCP server is registered under.
pub(crate) const SERVER: &str = "ooda-index";

#[cfg(test)]
mod tests {
    use super::*;

    fn add(v: &mut Value) {
        v.as_object_mut()
            .expect("an object")
            .insert("ours".into(), json!(true));
    }

    #[test]
    fn a_symlink_the_agent_leaves_is_removed_and_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let wt = d.path().join("wt");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(wt.join(".gemini")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("settings.json"), "theirs").unwrap();
        std::fs::write(wt.join(".gemini/settings.json"), "{\"a\": 1}").unwrap();
        let file = wt.join(".gemini/settings.json");
        // The file becomes a symlink out during the call.
        let p = Patch::apply(&file, "a test entry", |_| false, add).unwrap();
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(outside.join("settings.json"), &file).unwrap();
        p.remove().unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json")).unwrap(),
            "theirs"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"a\": 1}");
        assert!(
            !std::fs::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // The folder becomes a symlink out, and there was no file before.
        std::fs::remove_dir_all(wt.join(".gemini")).unwrap();
        let p = Patch::apply(&file, "a test entry", |_| false, add).unwrap();
        std::fs::remove_dir_all(wt.join(".gemini")).unwrap();
        std::os::unix::fs::symlink(&outside, wt.join(".gemini")).unwrap();
        p.remove().unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json")).unwrap(),
            "theirs"
        );
        assert!(!wt.join(".gemini").exists());
        // A symlink there before the call: refused, nothing written.
        std::os::unix::fs::symlink(&outside, wt.join(".gemini")).unwrap();
        let e = Patch::apply(&file, "a test entry", |_| false, add)
            .err()
            .unwrap();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert_eq!(
            std::fs::read_to_string(outside.join("settings.json")).unwrap(),
            "theirs"
        );
    }
}
