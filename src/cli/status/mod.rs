//! `ooda status [BRIEF] [--tasks] [--json]`.

pub(crate) mod table;

use std::fmt::Write as _;

use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::model::TaskState;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: Option<&str>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let rows = crate::cli::status::table::collect(&project, brief)?;
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        ))?;
    } else if let (Some(_), [row]) = (brief, rows.as_slice()) {
        // One Brief asked for: the detail the line leaves out.
        out(&crate::cli::status::table::render_detail(row, g.color))?;
    } else {
        out(&crate::cli::status::table::render(&rows, g.color))?;
    }
    Ok(Exit::Ok)
}

/// `ooda status [BRIEF] --tasks`: the tasks of each Brief's latest run.
pub(crate) fn tasks(g: &Globals, brief: Option<&str>) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let paths = match brief {
        Some(b) => vec![project.brief_path(b)?],
        None => project.brief_paths()?,
    };
    let now = chrono::Utc::now();
    let mut doc = Vec::new();
    let mut text = String::new();
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The tasks of the latest run are in the live log (recent
        // iterations); sealed segments hold the older ones.
        let records = crate::events::read_live(&project.iterations_dir(&name))?;
        let runs = crate::report::trace::build(&records);
        let all = runs
            .last()
            .map(crate::report::tasks::of)
            .unwrap_or_default();
        let last_event = records.last().map(|r| r.ts);
        if g.json {
            doc.push(serde_json::json!({
                "brief": name,
                "last_event": last_event,
                "tasks": all,
            }));
            continue;
        }
        let _ = writeln!(text, "{name}");
        if all.is_empty() {
            let _ = writeln!(text, "  no tasks yet (`ooda tick {name}` starts the run)");
            continue;
        }
        let shown = crate::report::tasks::shown(&all, 3);
        let hidden = all.len() - shown.len();
        // Names (with a delegation's extra indent) in one column.
        let width = shown
            .iter()
            .map(|t| t.name.chars().count() + if t.parent.is_some() { 2 } else { 0 })
            .max()
            .unwrap_or(0)
            .max(14);
        for t in shown {
            let indent = if t.parent.is_some() { "    " } else { "  " };
            let state = t.state.as_str();
            let painted = match (g.color, t.state) {
                (false, _) => state.to_string(),
                (true, TaskState::Failed) => format!("\x1b[31m{state}\x1b[0m"),
                (true, s) if !s.is_final() => format!("\x1b[33m{state}\x1b[0m"),
                (true, _) => state.to_string(),
            };
            let pad = " ".repeat(13usize.saturating_sub(state.len()));
            let when = if t.state.is_final() {
                t.since.format("%H:%M:%S").to_string()
            } else {
                format!(
                    "since {} ({})",
                    t.since.format("%H:%M:%S"),
                    crate::report::tasks::age((now - t.since).num_seconds())
                )
            };
            let phase = match (t.kind, &t.phase, t.state.is_final()) {
                ("iteration", Some(p), false) => format!("  in {p}"),
                _ => String::new(),
            };
            let detail = t
                .detail
                .as_deref()
                // "in execute" is the phase it entered its state in; the
                // phase it is in now is shown instead.
                .filter(|d| !d.starts_with("in "))
                .map(|d| format!("  {}", crate::text::clip::clip(d, 100)))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "{indent}{:<width$} {painted}{pad} {when}{phase}{detail}",
                t.name,
                width = width + 2 - indent.len()
            );
        }
        if hidden > 0 {
            let _ = writeln!(
                text,
                "  … {hidden} finished task(s) more (`--json` lists every one)"
            );
        }
        if let Some(at) = last_event {
            let _ = writeln!(
                text,
                "  last event {} ago",
                crate::report::tasks::age((now - at).num_seconds())
            );
        }
    }
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ))?;
    } else {
        out(&text)?;
    }
    Ok(Exit::Ok)
}
