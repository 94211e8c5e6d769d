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
    let mut s = String::new();
    let mut problems = Vec::new();
    let mut probed = None;
    let mut main = MainAgent::for_brief(brief, &project.config)?;
    if let MainAgent::Llm(llm) = &main {
        let tier = &llm.setup.tier;
        let p = crate::driver::llm::probe::probe(tier, cancel)?;
        let chosen = match (tier.tools, p.tools) {
            (Some(set), _) => format!(" (the tier sets `tools: {}`)", set.as_str()),
            (None, Some(found)) => {
                record_tools(&project.root, tier, found)?;
                format!(
                    " (recorded: a night with this model runs in `tools: {}` mode)",
                    found.as_str()
                )
            }
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "preflight: probed {}",
            crate::driver::llm::tool_loop::endpoint(tier)
        );
        let _ = writeln!(
            s,
            "  tools       {}: {}{chosen}",
            p.tools.map_or("unknown", |m| m.describe()),
            p.detail
        );
        if let Some((n, said)) = &p.window {
            let _ = writeln!(s, "  window      {n} tokens ({said})");
        }
        if let Some(o) = p.out_per_s {
            let read = p
                .in_per_s
                .map(|i| format!(", {i:.0} tokens/s read"))
                .unwrap_or_default();
            let _ = writeln!(s, "  throughput  {o:.1} tokens/s written{read}");
        }
        problems.extend(p.problems.iter().cloned());
        probed = Some(p);
        // The PLAN call below runs in the mode just recorded.
        main = MainAgent::for_brief(brief, &project.config)?;
    }
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
            problems.extend(protected_in_plan(brief, &cand, plan)?);
            true
        }
        Err(why) => {
            let _ = writeln!(s, "  problem     {why}");
            false
        }
    };
    for p in &problems {
        let _ = writeln!(s, "  problem     {p}");
    }
    let ok = ok && problems.is_empty();
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
        } else if report.plan.is_ok() {
            "preflight FAILED: the plan was read, and a night would trip over the problems above"
        } else {
            "preflight FAILED: a night would not get a usable plan from this agent (above)"
        }
    );
    let data = serde_json::json!({
        "ok": ok,
        "call": c,
        "plan": report.plan.as_ref().ok(),
        "problem": report.plan.as_ref().err(),
        "problems": problems,
        "probe": probed,
        "files": files.display().to_string(),
    });
    Ok((s, ok, data))
}

/// The files the plan names that the Brief does not let the agent change:
/// a night would block the change, so the preflight is not "OK".
fn protected_in_plan(
    brief: &Brief,
    cand: &std::path::Path,
    plan: &crate::model::Plan,
) -> Result<Vec<String>> {
    // The change says what will be edited; a hypothesis may name the
    // benchmark only to say what it measures.
    let text = if plan.change.trim().is_empty() {
        &plan.hypothesis
    } else {
        &plan.change
    };
    let named = crate::driver::agent::named_files::named_files(brief, cand, text, "")?;
    Ok(named
        .read
        .iter()
        .filter(|f| !brief.scope.allows(f) || brief.scope.protects(f) || **f == brief.knobs_file)
        .map(|f| {
            format!(
                "the plan proposes changing {f}, which the Brief does not let the agent change (scope): a night would block that change; say in the Brief what may change, or protect less"
            )
        })
        .collect())
}

/// Keeps what the probe found for this model, for the nights that follow
/// (`LlmSetup::resolve` reads it when the tier leaves `tools` out).
fn record_tools(
    root: &std::path::Path,
    tier: &crate::config::ModelTier,
    mode: crate::config::ToolsMode,
) -> Result<()> {
    let path = crate::driver::llm::tool_loop::tools_record(root);
    let mut v: serde_json::Value = crate::atomic::read_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}));
    v[crate::driver::llm::tool_loop::endpoint(tier)] = serde_json::json!(mode);
    if let Some(dir) = path.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    crate::atomic::write_atomic(&path, v.to_string().as_bytes())
}
