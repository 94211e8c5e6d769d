//! `ooda check --preflight`: one real PLAN call with the Brief's agent
//! before the night, so a wrong profile, key or flag is found while someone
//! is there to fix it.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::brief::Brief;
use crate::brief::points;
use crate::driver::MainAgent;
use crate::error::Result;
use crate::events::{Progress, Span};
use crate::phases::Print;
use crate::project::Project;
use crate::run::executor::Local;

/// `ooda check --preflight`: one real PLAN call with the Brief's agent, in
/// a scratch worktree at HEAD, nothing archived (the prompt and the output
/// stay in `.ooda/preflight/<brief>/` for reading). Says whether the agent
/// starts, answers, and answers in a form ooda reads; `Ok(false)` when not.
pub(crate) fn preflight(
    project: &Project,
    brief: &Brief,
    cancel: &AtomicBool,
    print: Print,
) -> Result<(String, bool, serde_json::Value)> {
    let main = MainAgent::for_brief(brief, &project.config)?;
    let Some(agent) = main.caller() else {
        return Ok((
            "preflight: the builtin driver runs no agent process (no network, no key): nothing to try\n".into(),
            true,
            serde_json::json!({"ok": true, "driver": "builtin"}),
        ));
    };
    let executor = Local::sandboxed(&crate::run::sandbox::for_project(
        project,
        Some(&agent.who()),
    )?);
    let ws = crate::workspace::Workspace::open(
        &project.root,
        &project.worktrees_dir(&brief.name),
        &brief.name,
    )?;
    let cand = ws.scratch("check", ws.user_head()?)?;
    let files = project
        .root
        .join(".ooda")
        .join("preflight")
        .join(&brief.name);
    crate::atomic::create_dir_all(&files)?;
    // The archive, if there is one, makes the prompt the next PLAN's.
    let history = crate::archive::history::History::of(
        crate::archive::history::load(&project.iterations_dir(&brief.name)).unwrap_or_default(),
    );
    let orientation = crate::phases::orientation_of(history.view(), brief, &project.config)?;
    let progress = Progress::new(&brief.name, false, print);
    let span = Span::new("preflight", vec![Arc::new(progress)]);
    let turn = crate::driver::Step {
        brief,
        config: &project.config,
        root: &project.root,
        dir: &files,
        worktrees: &ws.dir,
        cand_dir: &cand,
        base_dir: &cand,
        history: history.view(),
        orientation: &orientation,
        iteration: history.len().max(1) as u32,
        seed: brief.seed.unwrap_or(0),
        run_started: chrono::Utc::now(),
        span: &span,
        cancel,
        stop: None,
        executor: &executor,
    };
    let best = points::point_in(&cand, brief)?;
    let report = crate::driver::agent::steps::preflight(agent, &turn, &best)?;
    let c = &report.call;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "preflight: ran `{}` for PLAN: {} after {:.1}s{}",
        agent.command_line_for(
            crate::model::Phase::Plan,
            &crate::driver::agent::named_files::NamedFiles::default()
        ),
        c.outcome.as_str(),
        c.seconds,
        c.model
            .as_deref()
            .map(|m| format!(" (model {m})"))
            .unwrap_or_default()
    );
    if !c.usage.is_empty() {
        let _ = writeln!(
            s,
            "  usage       {} tokens in ({} cached), {} out{}",
            c.usage.input,
            c.usage.cached,
            c.usage.output,
            c.usage
                .cost_usd
                .map(|x| format!(", {}", crate::validate::units::format_usd(x)))
                .unwrap_or_default()
        );
    }
    for w in &c.warnings {
        let _ = writeln!(s, "  warning     {w}");
    }
    let ok = match &report.plan {
        Ok(plan) => {
            let _ = writeln!(
                s,
                "  plan        {} (predicted {})",
                crate::text::clip::clip(&plan.hypothesis, 100),
                crate::text::number::predicted(plan.predicted_effect, plan.predicted_sd)
            );
            true
        }
        Err(why) => {
            let _ = writeln!(s, "  problem     {why}");
            false
        }
    };
    let _ = writeln!(
        s,
        "  files       {} (the prompt, the output, the answer)",
        files.display()
    );
    let _ = writeln!(
        s,
        "{}",
        if ok {
            "preflight OK: the agent answered with a plan a night would accept"
        } else {
            "preflight FAILED: a night would not get a usable plan from this agent (above)"
        }
    );
    let data = serde_json::json!({
        "ok": ok,
        "call": c,
        "plan": report.plan.as_ref().ok(),
        "problem": report.plan.as_ref().err(),
        "files": files.display().to_string(),
    });
    Ok((s, ok, data))
}
