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
    /// The baseline's median and when it was measured.
    pub baseline: Option<f64>,
    pub baseline_at: Option<DateTime<Utc>>,
    /// The current best's median (of its own runs), its iteration and when
    /// it was measured: never compared with the baseline's (the machine may
    /// have drifted in between); the headline is.
    pub best: Option<f64>,
    pub best_iteration: Option<u32>,
    pub best_at: Option<DateTime<Utc>>,
    /// What the run achieved, from paired comparisons only
    /// (report/headline.rs): `summary.json`'s `headline`.
    pub headline: Option<serde_json::Value>,
    /// The same, in words: `confirmed +80.1% [+71.9, +85.9]`.
    pub result: Option<String>,
    /// The same, in a sentence saying how it was measured.
    #[serde(skip)]
    pub result_sentence: Option<String>,
    /// The keeps the result is made of (a rollback takes some out).
    #[serde(skip)]
    pub result_keeps: Option<usize>,
    pub budget_iterations: Option<u32>,
    pub last_event: Option<DateTime<Utc>>,
    /// Disk taken by `iterations/<brief>/` and by its worktrees, as last
    /// measured (at the end of a tick, or by `ooda gc`), and when.
    pub archive_bytes: u64,
    pub worktree_bytes: u64,
    pub disk_measured_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    /// What Slurm is doing for this Brief: a measurement's job waiting to
    /// start, the next tick of a `submit --every` chain, the jobs lost
    /// under measurements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slurm: Vec<String>,
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
    // As the last tick or `ooda gc` measured it: a walk here would cost a
    // file's metadata per entry of every worktree's build tree.
    if let Some(u) = crate::archive::disk::Usage::last(project, &name) {
        out.archive_bytes = u.archive_bytes;
        out.worktree_bytes = u.worktree_bytes;
        out.disk_measured_at = Some(u.at);
    }
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
    let at = |i: u32| history.get(i as usize).map(|r| r.finished);
    out.baseline = summary::baseline_value(&history);
    let best_commit = state.as_ref().map(|s| s.best_commit.as_str()).unwrap_or("");
    if out.baseline.is_some() {
        out.baseline_at = at(0);
        let (best_it, best) = crate::archive::history::best_of(&history, best_commit);
        out.best = Some(best);
        out.best_iteration = best_it;
        out.best_at = best_it.and_then(at);
        let h = crate::report::headline::Headline::of_records(
            &history,
            brief.metric.direction,
            best_commit,
        );
        out.headline = Some(h.json());
        out.result = Some(h.short());
        out.result_sentence = Some(h.sentence());
        out.result_keeps = Some(h.keeps());
    }
    out.last_event = crate::events::last_timestamp(&dir);
    slurm(project, &name, state.as_ref(), &history, &mut out);
    out
}

/// What Slurm is doing for Brief `name`: a lease waiting for its job to
/// start (read from the file it keeps, no call), the chain of submitted
/// ticks (one `squeue`, only for a Brief with a chain), and the jobs lost
/// under measurements.
fn slurm(
    project: &Project,
    name: &str,
    state: Option<&State>,
    history: &[IterationRecord],
    out: &mut BriefStatus,
) {
    let logs = project.slurm_dir(name);
    for w in crate::run::executor::Waiting::under(&logs) {
        let said = w.describe();
        out.in_flight = Some(match out.in_flight.take() {
            Some(f) => format!("{f}; {said}"),
            None => said.clone(),
        });
        out.slurm.push(said);
    }
    let open = state.is_some_and(|s| s.stop.is_none());
    if let Some(chain) = crate::cli::submit::Chain::load(&logs)
        && open
    {
        match crate::run::executor::next_tick(
            &project.root,
            name,
            std::time::Duration::from_secs(10),
        ) {
            Ok(jobs) if !jobs.is_empty() => out.slurm.push(format!(
                "next tick: job {} ({}), `ooda submit --every {}`",
                jobs[0].id,
                jobs[0].state.to_lowercase(),
                chain.every
            )),
            Ok(_) => {
                out.status = "ERROR".into();
                out.error = Some(format!(
                    "no tick job is queued for the `ooda submit {name} --every {}` chain while the run is open: `ooda submit {name} --every {}` queues one again (or delete {} if the chain was stopped on purpose)",
                    chain.every,
                    chain.every,
                    logs.join("chain.json").display()
                ));
            }
            Err(e) => out.slurm.push(format!(
                "next tick: unknown, the controller did not answer ({e})"
            )),
        }
    }
    let lost = |at: String, j: &crate::model::ClusterJob| {
        format!(
            "{at}: job {} {} ({}){}",
            j.id,
            j.lost.as_deref().unwrap_or(""),
            j.fault.as_deref().unwrap_or("cluster"),
            j.message
                .as_deref()
                .map(|m| format!(": {}", clip::clip(m, 160)))
                .unwrap_or_default()
        )
    };
    if let Some(c) = state.and_then(|s| s.current.as_ref()) {
        for j in c.jobs.iter().filter(|j| j.lost.is_some()) {
            out.slurm.push(lost(
                format!("lost in iteration {} (in flight)", c.iteration),
                j,
            ));
        }
    }
    for r in history.iter().rev().take(10).rev() {
        for j in r.jobs.iter().filter(|j| j.lost.is_some()) {
            out.slurm
                .push(lost(format!("lost in iteration {}", r.iteration), j));
        }
    }
}

/// The widest line `ooda status` prints per Brief: a terminal's width,
/// with the details one `ooda status BRIEF` away.
pub(crate) const LINE_CHARS: usize = 120;

fn paint(text: &str, color: bool) -> String {
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
}

/// The Brief's name as the line shows it: a long one is cut.
fn name(r: &BriefStatus) -> String {
    clip::clip(&r.brief, 24)
}

fn ago(t: DateTime<Utc>) -> String {
    format!(
        "{} ago",
        crate::report::tasks::age((Utc::now() - t).num_seconds().max(0))
    )
}

/// One line per Brief, at most [`LINE_CHARS`] characters: the status, the
/// iterations, the result, what stops or warns, and the last event's age.
pub(crate) fn render(rows: &[BriefStatus], color: bool) -> String {
    if rows.is_empty() {
        return "no Briefs in briefs/ (create one with `ooda new NAME`)\n".into();
    }
    let width = rows
        .iter()
        .map(|r| r.brief.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let mut s = String::new();
    for r in rows {
        let mut parts: Vec<String> = Vec::new();
        if let Some(e) = &r.error {
            // Its start names the trouble; the fix is one command away.
            let e = e.lines().next().unwrap_or("");
            let more = format!(" (`ooda status {}` says how to fix it)", r.brief);
            let room = LINE_CHARS.saturating_sub(width + 9);
            if clip::collapsed_chars(e) <= room {
                parts.push(e.to_string());
            } else {
                let keep = room.saturating_sub(more.chars().count());
                parts.push(format!("{}{more}", clip::clip(e, keep)));
            }
        } else {
            parts.push(format!(
                "{}{} iteration{}, {}",
                r.iterations,
                r.budget_iterations
                    .map(|b| format!(" of {b}"))
                    .unwrap_or_default(),
                if r.iterations == 1 && r.budget_iterations.is_none() {
                    ""
                } else {
                    "s"
                },
                // The keeps the result is made of (a rollback takes some
                // out), as the report and the last line of a run count them.
                match (&r.result, r.result_keeps.unwrap_or(r.keeps)) {
                    (Some(res), k) if k > 0 => {
                        format!("{k} keep{}, {res}", if k == 1 { "" } else { "s" })
                    }
                    (Some(res), _) => res.clone(),
                    (None, _) => "no baseline yet".into(),
                }
            ));
            // What stops or warns takes the room the rest leaves (the
            // whole of it is in `ooda status BRIEF`).
            let middle = match (&r.stop_reason, &r.warning, &r.in_flight) {
                // The status word already says it stopped.
                (Some(reason), _, _) => Some(reason.clone()),
                (None, Some(w), _) => Some(format!("warning: {w}")),
                (None, None, Some(f)) => Some(f.clone()),
                _ => None,
            };
            let tail = r.last_event.map(ago);
            let head = format!("{:<width$} {:<7} ", name(r), r.status)
                .chars()
                .count();
            let used = head
                + parts[0].chars().count()
                + tail.as_ref().map_or(0, |t| t.chars().count() + 2);
            if let Some(m) = middle {
                let room = LINE_CHARS.saturating_sub(used + 2);
                if room >= 16 {
                    parts.push(clip::clip(&m, room));
                }
            }
            parts.extend(tail);
        }
        let head = format!("{:<width$} {:<7} ", name(r), r.status);
        let room = LINE_CHARS.saturating_sub(head.chars().count());
        let line = clip::clip(&parts.join("; "), room);
        s.push_str(&format!(
            "{:<width$} {}{} {line}\n",
            name(r),
            paint(&r.status, color),
            " ".repeat(7usize.saturating_sub(r.status.chars().count()))
        ));
    }
    s
}

/// `ooda status BRIEF`: everything the line leaves out, a field a line.
pub(crate) fn render_detail(r: &BriefStatus, color: bool) -> String {
    let mut s = format!("{} {}\n", r.brief, paint(&r.status, color));
    let mut field = |name: &str, value: String| {
        s.push_str(&format!("  {name:<11} {value}\n"));
    };
    if let Some(e) = &r.error {
        field("error", e.clone());
        return s;
    }
    field(
        "result",
        r.result_sentence
            .clone()
            .unwrap_or_else(|| "no baseline yet".into()),
    );
    field(
        "iterations",
        format!(
            "{}{}, {} keep{}",
            r.iterations,
            r.budget_iterations
                .map(|b| format!(" of {b}"))
                .unwrap_or_default(),
            r.keeps,
            if r.keeps == 1 { "" } else { "s" }
        ),
    );
    if let Some(f) = &r.in_flight {
        field("in flight", f.clone());
    }
    if let Some(reason) = &r.stop_reason {
        field(
            "stopped",
            format!("{reason} — {}", r.detail.as_deref().unwrap_or("")),
        );
    }
    if let Some(w) = &r.warning {
        field("warning", w.clone());
    }
    for l in &r.slurm {
        field("slurm", l.clone());
    }
    if let Some(b) = r.baseline {
        let when = |t: Option<DateTime<Utc>>| {
            t.map(|t| format!(", measured {}", t.format("%Y-%m-%d %H:%M UTC")))
                .unwrap_or_default()
        };
        field(
            "medians",
            format!(
                "{} baseline {}{}; best {}{}{} (measured apart: compare them only through the result)",
                r.metric,
                clip::fmt_num(b),
                when(r.baseline_at),
                r.best.map(clip::fmt_num).unwrap_or_default(),
                r.best_iteration
                    .map(|i| format!(", iteration {i}"))
                    .unwrap_or_else(|| " (the baseline)".into()),
                when(r.best_at)
            ),
        );
    }
    if let Some(t) = r.last_event {
        field(
            "last event",
            format!("{} ({})", t.format("%Y-%m-%d %H:%M:%S UTC"), ago(t)),
        );
    }
    match r.disk_measured_at {
        Some(at) => field(
            "disk",
            format!(
                "{} (archive {}, worktrees {}), measured {} (`ooda gc {}` measures it now)",
                crate::archive::gc::human(r.archive_bytes + r.worktree_bytes),
                crate::archive::gc::human(r.archive_bytes),
                crate::archive::gc::human(r.worktree_bytes),
                ago(at),
                r.brief
            ),
        ),
        None => field(
            "disk",
            format!(
                "not measured yet (the next tick or `ooda gc {}` measures it)",
                r.brief
            ),
        ),
    }
    if r.baseline.is_some() {
        field("report", format!("iterations/{}/summary.md", r.brief));
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
            metric: "t".into(),
            budget_iterations: Some(30),
            ..BriefStatus::default()
        }
    }

    #[test]
    fn the_disk_is_shown_with_its_age_in_the_detail_only() {
        let mut r = row("GREEN");
        assert!(render_detail(&r, false).contains("disk        not measured yet"));
        r.archive_bytes = 2_500_000;
        r.worktree_bytes = 1_200_000_000;
        r.disk_measured_at = Some(Utc::now() - chrono::Duration::hours(2));
        assert!(!render(std::slice::from_ref(&r), false).contains("disk"));
        let detail = render_detail(&r, false);
        assert!(
            detail.contains(
                "disk        1.2 GB (archive 2.5 MB, worktrees 1.2 GB), measured 2h 00m ago"
            ),
            "{detail}"
        );
    }

    #[test]
    fn the_line_is_at_most_120_characters_whatever_it_holds() {
        let line = render(&[row("NEW")], false);
        assert!(
            line.contains("0 of 30 iterations, no baseline yet"),
            "{line}"
        );
        let mut y = row("YELLOW");
        y.brief = "night".into();
        y.iterations = 6;
        y.baseline = Some(10.0);
        y.keeps = 3;
        y.result = Some("estimated +45.0% [+30.1, +57.2]".into());
        y.warning = Some(format!(
            "plateau: {}",
            "4 iterations without a keep ".repeat(20)
        ));
        y.in_flight = Some("iteration 7 after plan".into());
        y.last_event = Some(Utc::now() - chrono::Duration::minutes(3));
        let line = render(std::slice::from_ref(&y), true);
        assert!(line.contains("\x1b[33mYELLOW\x1b[0m"), "{line}");
        let plain = render(std::slice::from_ref(&y), false);
        assert!(plain.trim_end().chars().count() <= LINE_CHARS, "{plain}");
        assert!(
            plain.contains("6 of 30 iterations, 3 keeps, estimated +45.0% [+30.1, +57.2]"),
            "{plain}"
        );
        assert!(
            plain.contains("; warning: plateau: 4 iterations"),
            "{plain}"
        );
        assert!(plain.trim_end().ends_with("; 3m 00s ago"), "{plain}");
        // A long name leaves no room for the warning: the line stays short.
        let mut long = y.clone();
        long.brief = "a-brief-with-a-long-name".into();
        let plain = render(&[long], false);
        assert!(plain.trim_end().chars().count() <= LINE_CHARS, "{plain}");
        let mut e = row("ERROR");
        e.error = Some(format!("{}\nsecond line", "x".repeat(300)));
        let plain = render(&[e], false);
        assert_eq!(plain.lines().count(), 1);
        assert!(plain.trim_end().chars().count() <= LINE_CHARS, "{plain}");
    }
}
