//! `ooda reset BRIEF [--yes] [--discard-archive]`: start the Brief over.
//!
//! A run's numbers must never be reused within one archive, and its branch
//! is checked out in a worktree (so `git branch -D` alone fails). Reset
//! removes the worktrees and the branch, and moves the iteration folder
//! aside (`iterations/<brief>.reset-<time>/`, its state removed so nothing
//! resumes from it), so the next tick starts a new run at iteration 0.

use std::io::{BufRead, IsTerminal, Write};

use chrono::Utc;

use super::{Globals, out};
use crate::archive::lock::BriefLock;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;
use crate::workspace::Workspace;

pub(crate) fn run(g: &Globals, brief: &str, yes: bool, discard: bool) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let ws = Workspace::open(&project.root, &project.worktrees_dir(&name), &name)?;
    let stamp = format!("reset-{}", Utc::now().format("%Y%m%dT%H%M%S"));
    let aside = dir.with_file_name(format!("{}.{stamp}", name));
    if !yes {
        let plan = format!(
            "This starts {} over: it removes its worktrees in {}, deletes branch {}{}, and {} {}.\n",
            name,
            ws.dir.display(),
            ws.branch,
            ws.branch_tip()?
                .map(|t| format!(" (at {})", crate::text::clip::short(&t.to_string())))
                .unwrap_or_default(),
            if discard { "deletes" } else { "moves aside" },
            if discard {
                dir.display().to_string()
            } else {
                format!("{} to {}", dir.display(), aside.display())
            }
        );
        if !std::io::stdin().is_terminal() {
            return Err(Error::Input(format!(
                "{plan}Nothing was done: pass --yes to reset without asking."
            )));
        }
        eprint!("{plan}Type the Brief's name ({}) to go on: ", name);
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| Error::io("reading the confirmation", e))?;
        if answer.trim() != name {
            return Err(Error::Input("not confirmed: nothing was done".into()));
        }
    }
    // No tick may be running while its archive moves.
    let lock = dir.exists().then(|| BriefLock::acquire(&dir)).transpose()?;
    let tip = ws.branch_tip()?;
    let mut done = ws.remove(&stamp)?;
    let _ = std::fs::remove_dir_all(project.root.join(".ooda/preflight").join(&name));
    // The disk figure `ooda status` shows was the old run's.
    crate::archive::disk::Usage::forget(&project, &name);
    let had_archive = dir.exists();
    // The vault's notes of this run name files the next run will reuse:
    // marked while the lock is held, and a note that cannot be written is
    // a warning, not an error for a reset that has happened.
    let mark = |deleted: bool| -> Vec<std::path::PathBuf> {
        let notes_dir = crate::config::Config::load(&project.root)
            .map(|c| c.defaults.notes_dir)
            .unwrap_or_else(|_| crate::config::Config::default().defaults.notes_dir);
        let aside_name = aside
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::subagents::synthesizer::mark_reset(
            &project.root,
            &notes_dir,
            &name,
            &aside_name,
            deleted,
            &Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            &ws.branch,
        )
        .unwrap_or_else(|e| {
            eprintln!("warning: {e}: the notes of the reset run were not all marked as reset");
            Vec::new()
        })
    };
    let mut marked = Vec::new();
    if had_archive {
        if discard {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::io(format!("removing {}", dir.display()), e))?;
            done.push(format!("deleted {}", dir.display()));
            marked = mark(true);
        } else {
            let archive = crate::archive::layout::Layout::of(&dir);
            let _ = std::fs::remove_file(archive.state());
            // The summary set aside tells its reader the branch it names is gone.
            let summary = archive.summary();
            if let Ok(text) = std::fs::read_to_string(&summary) {
                let note = format!(
                    "> This run was reset on {}: branch `{}` was deleted{}. The commands below name it as it was.\n\n",
                    Utc::now().format("%Y-%m-%d %H:%M UTC"),
                    ws.branch,
                    tip.map(|t| format!(" (restore it with `git branch {} {}`)", ws.branch, t))
                        .unwrap_or_default()
                );
                crate::atomic::write_atomic(&summary, format!("{note}{text}").as_bytes())?;
            }
            // Moved while still locked, so no tick starts in between.
            std::fs::rename(&dir, &aside).map_err(|e| {
                Error::io(
                    format!("moving {} to {}", dir.display(), aside.display()),
                    e,
                )
            })?;
            marked = mark(false);
            drop(lock);
            let _ = std::fs::remove_file(aside.join(".lock"));
            done.push(format!("moved {} to {}", dir.display(), aside.display()));
        }
    }
    if !marked.is_empty() {
        done.push(format!(
            "marked {} note(s) of the reset run as reset ({}), their paths pointing at the archive's new place",
            marked.len(),
            marked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if g.json {
        let doc = serde_json::json!({
            "brief": name,
            "done": done,
            "archive": match (had_archive, discard) {
                (false, _) => serde_json::Value::Null,
                (true, true) => "deleted".into(),
                (true, false) => aside
                    .strip_prefix(&project.root)
                    .unwrap_or(&aside)
                    .display()
                    .to_string()
                    .into(),
            },
            "notes_marked": marked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        });
        out(&format!("{doc}\n"))?;
    } else if !g.quiet {
        for line in &done {
            out(&format!("{}: {line}\n", name))?;
        }
        out(&format!(
            "{}: reset; the next tick starts a new run at iteration 0\n",
            name
        ))?;
    }
    Ok(Exit::Ok)
}
