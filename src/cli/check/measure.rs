//! `ooda check --measure N`: the Brief's commands tried before the night.
//!
//! Measuring happens in a scratch worktree at the current HEAD
//! (`.ooda/worktrees/<brief>/check`), never in the user's checkout, and tells
//! the user before the night whether the metric is usable: its values, their
//! spread, and the smallest gain the decision rule could detect. It runs the
//! commands exactly as a tick would (the eval-runner, the executor), so what
//! works here works at night.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::describe::agent_name;
use crate::brief::Brief;
use crate::error::{Error, Result};
use crate::eval::{Evaluator, RunFailure, Side, Worktree};
use crate::events::{Progress, Shown, Span};
use crate::phases::Print;
use crate::project::Project;
use crate::run::executor::{Local, Purpose};
use crate::stats;
use crate::text::clip::fmt_num;

/// Runs setup and guards once, then the metric `n` times, in a scratch
/// worktree, through the same eval-runner and executor as a tick.
pub(crate) fn measure(
    project: &Project,
    brief: &Brief,
    n: u32,
    cancel: &AtomicBool,
    print: Print,
) -> Result<(String, serde_json::Value)> {
    let ws = crate::workspace::Workspace::open(
        &project.root,
        &project.worktrees_dir(&brief.name),
        &brief.name,
    )?;
    let head = ws.user_head()?;
    let dir = ws.scratch("check", head)?;
    let wt = Worktree::new(Side::Check, dir.clone(), brief)?;
    // Which commands rewrote tracked files, in the order they ran: a tick
    // blocks every iteration whose measurement does.
    let mut rewrites: Vec<(String, Vec<String>)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut rewrote = |by: String| -> Result<()> {
        let c = ws.scratch_changes(&dir, brief.scope.max_file_size)?;
        let new: Vec<String> = c
            .changed
            .into_iter()
            .filter(|p| p.kind != "added" && seen.insert(p.path.clone()))
            .map(|p| p.path)
            .collect();
        if !new.is_empty() {
            rewrites.push((by, new));
        }
        Ok(())
    };
    let print: Arc<dyn Fn(&Shown) + Send + Sync> = Arc::from(print);
    let shown = print.clone();
    let progress = Progress::new(&brief.name, false, Box::new(move |s: &Shown| shown(s)));
    // Nothing is archived: the events go to the display only.
    let span = Span::new("check", vec![Arc::new(progress)]);
    // The Brief's own sandbox: a setup that needs a grant fails here as it
    // would in a tick.
    let agent = agent_name(brief, project);
    let executor = crate::run::executor::for_brief(
        Local::sandboxed(&crate::run::sandbox::for_project(
            project,
            agent.as_deref(),
        )?),
        &project.root,
        &project.config,
        brief,
        project.slurm_dir(&brief.name),
        // Ctrl-C while the job waits in the queue cancels it.
        &crate::run::interrupt::Interrupt::install(),
        // check takes no Brief lock: a tick may hold jobs of this Brief.
        false,
    );
    let lease = executor.lease(Purpose::Check)?;
    let mut ev = Evaluator::new(
        brief,
        &project.config.defaults,
        cancel,
        None,
        &span,
        lease.as_ref(),
    );
    let fail = |f: RunFailure| {
        let RunFailure::Failed { reason, output } = f;
        Error::Input(format!("{reason}:\n{output}"))
    };
    if let Some(f) = ev.setup(&wt)? {
        return Err(fail(f));
    }
    if let Some(setup) = &brief.metric.setup {
        rewrote(format!("the setup command `{setup}`"))?;
    }
    if let (_, Some(f)) = ev.guards(&wt)? {
        return Err(fail(f));
    }
    if !brief.guards.is_empty() {
        rewrote("the guards".into())?;
    }
    let _lock = ev.hold_measurements()?;
    let mut values = Vec::new();
    for i in 1..=n {
        let (v, _) = ev.metric(&wt)?.map_err(fail)?;
        print(&Shown::Line(&format!(
            "[{}] run {i}/{n}: {} = {}",
            brief.name,
            brief.metric.name,
            fmt_num(v)
        )));
        values.push(v);
    }
    rewrote(format!("the metric command `{}`", brief.metric.command))?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} over {n} run(s) at committed HEAD {}: {}",
        brief.metric.name,
        crate::text::clip::short(&head.to_string()),
        values
            .iter()
            .map(|v| fmt_num(*v))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Last, after the statistics they would otherwise split.
    let warn = |s: &mut String| {
        for (by, paths) in &rewrites {
            let _ = writeln!(
                s,
                "{}",
                crate::eval::rewrites::message(
                    &format!("warning: {by}"),
                    paths,
                    "check",
                    &brief.knobs_file
                )
                .replacen(
                    "which would be committed:",
                    "which a tick would block as a change to committed files:",
                    1
                )
            );
        }
    };
    let rewrites_json: Vec<serde_json::Value> = rewrites
        .iter()
        .map(|(by, paths)| serde_json::json!({"by": by, "paths": paths}))
        .collect();
    if values.iter().any(|v| *v <= 0.0) {
        let _ = writeln!(
            s,
            "warning: the metric must be positive: ooda compares ratios"
        );
        let data = serde_json::json!({"head": head.to_string(), "values": values, "error": "the metric must be positive: ooda compares ratios", "rewrites_tracked": rewrites_json});
        warn(&mut s);
        return Ok((s, data));
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let _ = writeln!(
        s,
        "median {}, min {}, max {}",
        fmt_num(stats::median(&values)),
        fmt_num(values.iter().copied().fold(f64::INFINITY, f64::min)),
        fmt_num(values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    );
    let mut data = serde_json::json!({
        "head": head.to_string(),
        "values": values,
        "median": stats::median(&values),
        "rewrites_tracked": rewrites_json,
    });
    if n >= 2 {
        let sd = stats::sd(&logs);
        // A pair's log ratio has √2 times one run's spread; θ₁ is then what
        // the runner computes from its A/A calibration, floor included.
        let noise = sd * std::f64::consts::SQRT_2;
        let theta1 = crate::eval::sequential::theta1(brief.metric.noise_floor, noise);
        let by_noise = crate::eval::sequential::theta1(0.0, noise);
        data["run_sd"] = sd.into();
        data["noise_per_pair"] = noise.into();
        data["theta1"] = theta1.into();
        let _ = writeln!(
            s,
            "spread: {:.2}% run to run (sd of log values), {:.2}% per pair",
            sd * 100.0,
            noise * 100.0
        );
        let _ = writeln!(
            s,
            "minimum detectable gain θ₁: {:.2}%{}; smaller gains will be discarded as noise",
            theta1 * 100.0,
            if theta1 > by_noise {
                format!(
                    " (the Brief's noise floor; the noise alone allows {:.2}%)",
                    by_noise * 100.0
                )
            } else {
                String::new()
            }
        );
        if let Some(a) = crate::eval::sequential::noise_advice(noise, brief.metric.noise_floor) {
            let _ = writeln!(s, "advice: {a}");
            data["advice"] = a.into();
        }
    } else {
        let _ = writeln!(s, "measure at least 2 runs to see the spread (--measure 5)");
    }
    warn(&mut s);
    Ok((s, data))
}
