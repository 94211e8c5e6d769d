//! `ooda status`: one line per Brief, read-only.
//!
//! Status never takes a lock and never repairs anything, so it is safe to run
//! while a tick is measuring; a missing state is rebuilt in memory only.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::archive::history::{self, IterationRecord, Verdict};
use crate::archive::state::{self, Loaded, State};
use crate::brief::Brief;
use crate::error::Result;
use crate::project::Project;
use crate::report::summary;
use crate::text::clip;

#[derive(Debug, Clone, Default, Serialize)]
pub struct BriefStatus {
    pub brief: String,
    pub status: String,
    pub stop_reason: Option<String>,
    pub detail: Option<String>,
    /// The YELLOW warning in force: its kind and evidence.
    pub warning: Option<String>,
    pub iterations: usize,
    pub keeps: usize,
    pub in_flight: Option<String>,
    pub metric: String,
    pub baseline: Option<f64>,
    pub best: Option<f64>,
    pub improvement: Option<f64>,
    /// The latest confirmed cumulative gain (start of run vs best).
    pub confirmed_gain: Option<f64>,
    pub budget_iterations: Option<u32>,
    pub last_event: Option<DateTime<Utc>>,
    /// Disk taken by `iterations/<brief>/` and by its worktrees.
    pub archive_bytes: u64,
    pub worktree_bytes: u64,
    pub error: Option<String>,
}

pub(crate) fn collect(project: &Project, only: Option<&str>) -> Result<Vec<BriefStatus>> {
    collect_with(project, only, history::load)
}

/// How an archive is read: [`history::load`] (through the index), or
/// [`history::load_files`] for the overhead benchmark's old path.
pub type Loader = fn(&std::path::Path) -> Result<Vec<IterationRecord>>;

/// [`collect`] with the archive read by `load`.
pub fn collect_with(
    project: &Project,
    only: Option<&str>,
    load: Loader,
) -> Result<Vec<BriefStatus>> {
    let paths = match only {
        Some(b) => match project.brief_path(b) {
            Ok(p) => vec![p],
            Err(e) => match project.run_name(b) {
                Ok(name) => return Ok(vec![orphan(project, &name)]),
                Err(_) => return Err(e),
            },
        },
        None => project.brief_paths()?,
    };
    let mut rows: Vec<BriefStatus> = paths.iter().map(|p| one(project, p, load)).collect();
    if only.is_none() {
        rows.extend(orphans(project, &rows));
    }
    Ok(rows)
}

/// Runs whose Brief file is gone (renamed or deleted mid-run): their
/// archive and branch stay, and nothing else would show them.
fn orphans(project: &Project, rows: &[BriefStatus]) -> Vec<BriefStatus> {
    let mut names: Vec<String> = std::fs::read_dir(project.root.join("iterations"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let path = e.path();
                    let archive = crate::archive::layout::Layout::of(&path);
                    archive.iteration(0).is_file() || archive.state().is_file()
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    // A run's branch outlives an archive deleted by hand.
    if let Ok(repo) = git2::Repository::open(&project.root)
        && let Ok(branches) = repo.branches(Some(git2::BranchType::Local))
    {
        names.extend(branches.flatten().filter_map(|(b, _)| {
            b.name()
                .ok()
                .flatten()?
                .strip_prefix("ooda/")
                .map(str::to_string)
        }));
    }
    // `<name>.reset-<time>` folders are set aside, not runs.
    names.retain(|n| crate::brief::is_name(n) && !rows.iter().any(|r| &r.brief == n));
    names.sort();
    names.dedup();
    names.iter().map(|n| orphan(project, n)).collect()
}

fn orphan(project: &Project, name: &str) -> BriefStatus {
    let dir = project.iterations_dir(name);
    BriefStatus {
        brief: name.to_string(),
        status: "NO BRIEF".into(),
        iterations: history::load(&dir)
            .map(|h| h.len().saturating_sub(1))
            .unwrap_or(0),
        last_event: crate::events::last_timestamp(&dir),
        archive_bytes: crate::archive::gc::disk_bytes(&dir),
        worktree_bytes: crate::archive::gc::disk_bytes(&project.worktrees_dir(name)),
        error: Some(format!(
            "briefs/{name}.md is gone (renamed or deleted mid-run); its run stays {}: put the Brief back under that name to go on,{} or `ooda reset {name}` to set it aside",
            if dir.is_dir() {
                format!("in iterations/{name}/ and on the branch ooda/{name}")
            } else {
                format!("on the branch ooda/{name} (its archive iterations/{name}/ is gone)")
            },
            if crate::archive::layout::Layout::of(&dir).summary().is_file() {
                format!(" `ooda report {name}` to read it,")
            } else {
                String::new()
            }
        )),
        ..BriefStatus::default()
    }
}

fn one(project: &Project, path: &std::path::Path, load: Loader) -> BriefStatus {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = BriefStatus {
        brief: name.clone(),
        status: "NEW".into(),
        ..BriefStatus::default()
    };
    let brief = match Brief::load_in(path, &project.agent_names()) {
        Ok(b) => b,
        Err(e) => {
            out.status = "INVALID".into();
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.metric = brief.metric.name.clone();
    let dir = project.iterations_dir(&name);
    // A walk of both folders: a file of metadata per entry, so a worktree
    // holding a large build tree costs its walk (`ooda gc` frees it).
    out.archive_bytes = crate::archive::gc::disk_bytes(&dir);
    out.worktree_bytes = crate::archive::gc::disk_bytes(&project.worktrees_dir(&name));
    out.budget_iterations = project.config.budget_for(&brief).iterations;
    let history = match load(&dir) {
        Ok(h) => h,
        Err(e) => {
            out.status = "ERROR".into();
            out.error = Some(e.to_string());
            return out;
        }
    };
    // Ticks that fail before a run exists leave no state to say so: the
    // commonest, a branch left from an earlier run, is read here.
    if history.is_empty()
        && let Some(e) = crate::archive::leftover_branch_at(&project.root, &dir, &name)
    {
        out.status = "ERROR".into();
        out.error = Some(e.to_string());
        return out;
    }
    let state: Option<State> = match state::peek(&dir) {
        Ok(Loaded::Ok(s)) => Some(*s),
        Ok(_) => State::rebuild(&name, "", &history, |_| true),
        Err(e) => {
            out.error = Some(e.to_string());
            None
        }
    };
    if let Some(s) = &state {
        out.status = match s.status() {
            crate::archive::state::Status::Green if s.failing.is_some() => "YELLOW".into(),
            st => st.word().into(),
        };
        out.stop_reason = s.stop.as_ref().map(|st| st.reason.as_str().to_string());
        out.detail = s.stop.as_ref().map(|st| st.detail.clone());
        let alarm = s
            .yellow
            .as_ref()
            .map(|a| format!("{}: {}", a.kind.as_str(), a.evidence));
        // The failing ticks first: they are what stops the night now.
        out.warning = match (s.failing.as_ref().map(|f| f.describe()), alarm) {
            (Some(f), Some(a)) => Some(format!("{f}; {a}")),
            (f, a) => f.or(a),
        };
        out.in_flight = s
            .current
            .as_ref()
            .map(|c| format!("iteration {} after {}", c.iteration, c.done.as_str()));
    }
    out.iterations = history.len().saturating_sub(1);
    out.keeps = history
        .iter()
        .filter(|r| r.verdict == Verdict::Keep)
        .count();
    out.baseline = summary::baseline_value(&history);
    if out.baseline.is_some() {
        let best = match &state {
            Some(s) => crate::archive::history::best_of(&history, &s.best_commit).1,
            None => summary::best_value(&history),
        };
        out.best = Some(best);
        out.improvement = out
            .baseline
            .map(|b| summary::improvement(brief.metric.direction, b, best));
    }
    out.confirmed_gain = state
        .as_ref()
        .and_then(|s| crate::archive::history::confirmation_of(&history, &s.best_commit))
        .map(|(_, c)| c.effect);
    out.last_event = crate::events::last_timestamp(&dir);
    out
}

pub(crate) fn render(rows: &[BriefStatus], color: bool) -> String {
    if rows.is_empty() {
        return "no Briefs in briefs/ (create one with `ooda new NAME`)\n".into();
    }
    let mut s = String::new();
    for r in rows {
        let paint = |text: &str| -> String {
            if !color {
                return text.to_string();
            }
            let code = match text {
                "GREEN" | "DONE" => "32",
                "RED" | "INVALID" | "ERROR" => "31",
                "STOPPED" | "YELLOW" => "33",
                _ => "0",
            };
            format!("\x1b[{code}m{text}\x1b[0m")
        };
        s.push_str(&format!("{:<20} {:<8}", r.brief, paint(&r.status)));
        if let Some(e) = &r.error {
            s.push_str(&format!(" {}\n", e.lines().next().unwrap_or("")));
            continue;
        }
        s.push_str(&format!(
            " {} iteration(s){}, {} keep(s)",
            r.iterations,
            r.budget_iterations
                .map(|b| format!(" of {b}"))
                .unwrap_or_default(),
            r.keeps
        ));
        if let (Some(b), Some(best), Some(imp)) = (r.baseline, r.best, r.improvement) {
            s.push_str(&format!(
                ", {} {} → {} ({:+.1}%)",
                r.metric,
                clip::fmt_num(b),
                clip::fmt_num(best),
                imp * 100.0
            ));
        }
        if let Some(g) = r.confirmed_gain {
            s.push_str(&format!(", confirmed {:+.1}%", g * 100.0));
        }
        if r.iterations == 0 && r.baseline.is_none() {
            s.push_str(", no baseline yet");
        }
        if let Some(reason) = &r.stop_reason {
            s.push_str(&format!(", stopped: {reason}"));
        }
        if let Some(w) = &r.warning {
            // Long enough for a failing tick's fix, which ends its error.
            s.push_str(&format!(", warning {}", crate::text::clip::clip(w, 400)));
        }
        if let Some(f) = &r.in_flight {
            s.push_str(&format!(", in flight: {f}"));
        }
        if let Some(t) = r.last_event {
            s.push_str(&format!(
                ", last event {}",
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ));
        }
        if r.archive_bytes + r.worktree_bytes > 0 {
            s.push_str(&format!(
                ", disk {} (archive {}, worktrees {})",
                crate::archive::gc::human(r.archive_bytes + r.worktree_bytes),
                crate::archive::gc::human(r.archive_bytes),
                crate::archive::gc::human(r.worktree_bytes)
            ));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str) -> BriefStatus {
        BriefStatus {
            brief: "b".into(),
            status: status.into(),
            stop_reason: None,
            detail: None,
            warning: None,
            iterations: 0,
            keeps: 0,
            in_flight: None,
            metric: "t".into(),
            baseline: None,
            best: None,
            improvement: None,
            confirmed_gain: None,
            budget_iterations: Some(30),
            last_event: None,
            archive_bytes: 0,
            worktree_bytes: 0,
            error: None,
        }
    }

    #[test]
    fn the_line_says_the_disk_a_brief_takes_once_it_takes_any() {
        assert!(!render(&[row("NEW")], false).contains("disk"));
        let mut r = row("GREEN");
        r.archive_bytes = 2_500_000;
        r.worktree_bytes = 1_200_000_000;
        let line = render(&[r], false);
        assert!(
            line.contains(", disk 1.2 GB (archive 2.5 MB, worktrees 1.2 GB)"),
            "{line}"
        );
    }

    #[test]
    fn the_line_names_the_warning_and_a_missing_baseline() {
        let line = render(&[row("NEW")], false);
        assert!(
            line.contains("0 iteration(s) of 30, 0 keep(s), no baseline yet"),
            "{line}"
        );
        let mut y = row("YELLOW");
        y.iterations = 6;
        y.baseline = Some(10.0);
        y.warning = Some("plateau: 4 iterations without a keep".into());
        let line = render(&[y], false);
        assert!(line.contains("YELLOW"), "{line}");
        assert!(
            line.contains(", warning plateau: 4 iterations without a keep"),
            "{line}"
        );
        assert!(!line.contains("no baseline"), "{line}");
    }
}
