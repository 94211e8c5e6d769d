//! `ooda ack BRIEF [--note TEXT]`: a human accepts a red light; `ooda run
//! BRIEF --continue`: a human accepts a final stop (a stall, the goal
//! reached) and goes on. Neither undoes a budget stop (raising the budget
//! does), and `--continue` never clears a red light: a wrapper that always
//! passes it must not acknowledge a tamper unseen.
//!
//! The acceptance is data: it clears the stop, is logged, and is written
//! into the next iteration file, and the red-light detectors and the stall
//! count only look at evidence after it (`redlight::window`, `plateau_in`).

use chrono::Utc;

use super::{Globals, out};
use crate::archive::Archive;
use crate::error::Result;
use crate::events::Event;
use crate::exit::Exit;
use crate::project::Project;
use crate::workspace::Workspace;

pub(crate) fn run(g: &Globals, brief: &str, note: Option<&str>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let done = ack(&project, brief, note)?;
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::json!({
                "brief": done.brief,
                "acknowledged": done.acknowledged,
                "message": done.message,
            })
        ))?;
    } else {
        out(&format!("{}\n", done.message))?;
    }
    Ok(Exit::Ok)
}

/// What `ack` did.
pub(crate) struct Acked {
    pub brief: String,
    /// Whether there was a RED stop to clear.
    pub acknowledged: bool,
    pub message: String,
}

/// Clears a RED stop so the loop may run again; says what was done.
pub(crate) fn ack(project: &Project, brief_arg: &str, note: Option<&str>) -> Result<Acked> {
    accept(project, brief_arg, note, false)
}

/// [`ack`] (a red stop), or with `final_stop` a stop that is neither red
/// nor a budget's: `ooda run --continue`.
pub(crate) fn accept(
    project: &Project,
    brief_arg: &str,
    note: Option<&str>,
    final_stop: bool,
) -> Result<Acked> {
    let brief = project.load_brief(brief_arg)?;
    let ws = Workspace::open(
        &project.root,
        &project.worktrees_dir(&brief.name),
        &brief.name,
    )?;
    let hash = crate::phases::brief_hash(&brief.path)?;
    let mut archive = Archive::open(
        &project.iterations_dir(&brief.name),
        &brief,
        &hash,
        &ws,
        Vec::new(),
        project.config.defaults.events_segment,
    )?;
    let Some(stop) = archive.state.stop.clone().filter(|s| match final_stop {
        true => !s.reason.is_red() && !s.reason.is_budget(),
        false => s.reason.is_red(),
    }) else {
        let message = match (&archive.state.stop, final_stop) {
            (Some(s), true) if s.reason.is_red() => format!(
                "{} is RED ({}): --continue does not clear a red light; look at it, then `ooda ack {}`",
                brief.name,
                s.reason.as_str(),
                brief.name
            ),
            (Some(s), true) => format!(
                "{} stopped on {}: raise `budget` in {} to go on",
                brief.name,
                s.reason.as_str(),
                brief.path.display()
            ),
            (None, true) => format!("{} has not stopped: nothing to continue", brief.name),
            (_, false) => format!("{} is not RED: nothing to acknowledge", brief.name),
        };
        return Ok(Acked {
            message,
            brief: brief.name,
            acknowledged: false,
        });
    };
    let who = who_acknowledges(&project.root);
    let text = format!(
        "{} by {who} at {} after {} — {}{}",
        if stop.reason.is_red() {
            "Acknowledged"
        } else {
            "Continued"
        },
        Utc::now().format("%Y-%m-%d %H:%M UTC"),
        stop.reason.as_str(),
        // The stop's advice on how to go on is done with.
        stop.detail
            .split_once("; to go on,")
            .map_or(stop.detail.as_str(), |(what, _)| what),
        note.map(|n| format!(". Note: {n}")).unwrap_or_default()
    );
    archive.state.stop = None;
    archive.state.pending_ack = Some(text.clone());
    archive.save_state()?;
    archive.run.emit(Event::Acknowledged {
        by: who,
        note: note.map(str::to_string),
    })?;
    crate::report::summary::sync(&mut archive, None, &brief, &project.config)?;
    Ok(Acked {
        message: format!(
            "{}: {text}. {}",
            brief.name,
            if final_stop {
                "Going on."
            } else {
                "The next tick continues."
            }
        ),
        brief: brief.name,
        acknowledged: true,
    })
}

/// Who is acknowledging: `$USER`, else git's `user.name`, else the name of
/// the process's uid, else the uid.
fn who_acknowledges(root: &std::path::Path) -> String {
    if let Ok(user) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"))
        && !user.trim().is_empty()
    {
        return user;
    }
    if let Some(name) = git2::Repository::discover(root)
        .ok()
        .and_then(|r| r.config().ok())
        .and_then(|c| c.get_string("user.name").ok())
        .filter(|n| !n.trim().is_empty())
    {
        return name;
    }
    // SAFETY: getpwuid returns a pointer into static storage or null; it is
    // read at once, on this thread, before any other call could reuse it.
    unsafe {
        let uid = libc::getuid();
        let pw = libc::getpwuid(uid);
        if !pw.is_null() && !(*pw).pw_name.is_null() {
            return std::ffi::CStr::from_ptr((*pw).pw_name)
                .to_string_lossy()
                .into_owned();
        }
        format!("uid {uid}")
    }
}
