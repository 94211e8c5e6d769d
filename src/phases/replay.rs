//! `ooda replay`: one iteration's PLAN again, with today's prompts,
//! templates, agent profile and configuration, beside the run.
//!
//! "Would today's prompt do better?" has an answer only if the same case is
//! run again with the one thing changed. A replay starts from exactly what
//! the iteration started from — its base commit, in a scratch worktree of
//! its own, and the archive as it stood before it (the earlier iteration
//! files, copied where the agent is told to read them) — and runs the
//! Brief's driver as it is configured now. With `--full` the change is also
//! made and measured against the base by the same sequential test.
//!
//! Nothing of the run is touched: not its state, archive, worktrees or
//! branch. Everything a replay writes is under
//! `iterations/<brief>/replays/iter-NNN-<time>/`: its own `events.jsonl`
//! (so `ooda trace` and `ooda compare` read it like the run's),
//! `replay.json`, and the prompts and outputs of its agent calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::brief::Brief;
use crate::driver::{MainAgent, Proposal, Step};
use crate::error::{Error, Result};
use crate::eval::{self, Evaluator, RunFailure, Side, Worktree, sequential};
use crate::events::{Event, Print, Progress, Span};
use crate::model;
use crate::model::{AgentCall, IterationRecord, Phase, Usage, Verdict};
use crate::project::Project;
use crate::run::executor::{Local, Purpose};

/// Version of `replay.json`.
pub(crate) const REPLAY_SCHEMA: u32 = 1;

/// What a plan said, then or now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlanSummary {
    pub hypothesis: String,
    pub change: String,
    pub predicted_effect: Option<f64>,
    pub predicted_sd: Option<f64>,
    pub knobs: crate::model::Point,
}

/// The measured outcome of a `--full` replay, or of the original.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub verdict: String,
    pub reason: String,
    pub effect: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub pairs: Option<usize>,
}

impl PlanSummary {
    /// What an archived iteration planned.
    pub(crate) fn of(rec: &IterationRecord) -> PlanSummary {
        PlanSummary {
            hypothesis: rec.hypothesis.clone(),
            change: rec.change.clone(),
            predicted_effect: rec.predicted.as_ref().map(|p| p.effect),
            predicted_sd: rec.predicted.as_ref().map(|p| p.sd),
            knobs: rec.knobs.clone(),
        }
    }
}

impl Outcome {
    /// How an archived iteration was judged.
    pub(crate) fn of(rec: &IterationRecord) -> Outcome {
        Outcome {
            verdict: rec.verdict_text(),
            reason: rec.reason.clone(),
            effect: rec.measured.as_ref().map(|m| m.effect),
            ci: rec.measured.as_ref().map(|m| m.ci),
            pairs: rec.measured.as_ref().map(|m| m.pairs.len()),
        }
    }
}

/// `replay.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReplayRecord {
    pub schema: u32,
    pub brief: String,
    pub iteration: u32,
    /// The folder's name: `iter-NNN-<time>`.
    pub id: String,
    pub at: DateTime<Utc>,
    /// The iteration's base commit, where the replay started.
    pub base: String,
    /// The driver as configured today (`builtin`, `command:claude`, `llm:…`).
    pub driver: String,
    pub full: bool,
    /// Today's plan, when the driver gave one.
    pub plan: Option<PlanSummary>,
    /// Why there is no usable plan (refused by the validator, a failed call).
    pub problem: Option<String>,
    /// With `--full`: what measuring today's change said.
    pub outcome: Option<Outcome>,
    pub original_plan: PlanSummary,
    pub original_outcome: Outcome,
    pub usage: Usage,
    pub calls: Vec<AgentCall>,
}

/// Where a Brief's replays are.
pub(crate) fn replays_dir(iterations_dir: &Path) -> PathBuf {
    crate::archive::layout::Layout::of(iterations_dir).replays()
}

/// Every replay of the Brief, oldest first.
pub(crate) fn list(iterations_dir: &Path) -> Vec<(PathBuf, ReplayRecord)> {
    let mut out: Vec<(PathBuf, ReplayRecord)> = std::fs::read_dir(replays_dir(iterations_dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let text = crate::atomic::read_string(dir.join("replay.json")).ok()?;
            Some((dir, serde_json::from_str(&text).ok()?))
        })
        .collect();
    out.sort_by(|a, b| a.1.at.cmp(&b.1.at).then(a.1.id.cmp(&b.1.id)));
    out
}

/// Replays iteration `n` of `brief`; returns the folder and its record.
pub(crate) fn run(
    project: &Project,
    brief: &Brief,
    n: u32,
    full: bool,
    cancel: &AtomicBool,
    print: Print,
) -> Result<(PathBuf, ReplayRecord)> {
    let iterations = project.iterations_dir(&brief.name);
    let history = crate::archive::history::load(&iterations)?;
    let Some(rec) = history.get(n as usize).filter(|r| r.iteration == n) else {
        return Err(Error::Input(format!(
            "{}: there is no iteration {n} to replay (the archive has {}); `ooda trace {}` lists them",
            iterations.display(),
            match history.len() {
                0 => "none yet".to_string(),
                k => format!("0–{}", k - 1),
            },
            brief.name
        )));
    };
    if n == 0 {
        return Err(Error::Input(format!(
            "iteration 0 of {} is the baseline: it measured the start and planned nothing, so there is no PLAN to replay; replay an iteration from 1 on",
            brief.name
        )));
    }
    // A tick of the same Brief moves its refs and resets its worktrees; the
    // fence around the replayed agent would put them back under it. One at
    // a time, like the loop itself.
    let _lock = crate::archive::lock::BriefLock::acquire(&iterations).map_err(|e| match e {
        Error::Busy(who) => Error::Busy(format!(
            "{who}: a run of {} is under way; replay once it stops (`ooda status {}` shows it)",
            brief.name, brief.name
        )),
        other => other,
    })?;
    let base = git2::Oid::from_str(&rec.base).map_err(|e| Error::Corrupt {
        path: crate::archive::history::path_of(&iterations, n),
        message: format!(
            "its `base` `{}` is not a commit hash ({e}), so there is nothing to replay from",
            rec.base
        ),
    })?;
    let agent = MainAgent::for_brief(brief, &project.config)?;
    let driver = agent.driver();
    let agent_name = agent.agent_name();
    let sandbox = crate::run::sandbox::for_project(project, agent_name.as_deref())?;
    let executor = Local::sandboxed(&sandbox);
    let ws = crate::workspace::Workspace::open(
        &project.root,
        &project.worktrees_dir(&brief.name),
        &brief.name,
    )?
    .with_owned_file(&brief.knobs_file);
    let cand = ws.scratch("replay", base)?;
    // What the agent must leave alone (the fence watches it), and the base
    // side of a --full measurement.
    let base_dir = ws.scratch("replay-base", base)?;

    let at = Utc::now();
    let id = format!("iter-{n:03}-{}", at.format("%Y%m%dT%H%M%S%.3f"));
    let dir = replays_dir(&iterations).join(&id);
    crate::atomic::create_dir_all(&dir)?;
    // The archive as the iteration found it: the agent reads the earlier
    // iteration files where its prompt says they are, and nothing later.
    let before = &history[..n as usize];
    for r in before {
        let name = crate::archive::history::file_name(r.iteration);
        if let Ok(text) = crate::atomic::read_file(iterations.join(&name)) {
            crate::atomic::write_atomic(&dir.join(&name), &text)?;
        }
    }
    // And its complete falsified list, which the prompt may point to.
    crate::archive::falsified::write_falsified(&dir, &brief.name, before)?;
    let held = crate::archive::history::History::of(before.to_vec());
    let orientation = crate::phases::orientation_of(held.view(), brief, &project.config)?;
    let progress = Progress::new(&brief.name, false, print);
    let run_id = format!("replay-{id}");
    let root = Span::open(&dir, &run_id, vec![Arc::new(progress)])?;
    let run = root.child(Event::RunStarted {
        brief: brief.name.clone(),
        start_commit: rec.base.clone(),
        seed: brief.seed.unwrap_or(0),
    })?;
    let it = run.with_iteration(Some(n)).child(Event::IterationStarted {
        brief_hash: crate::phases::brief_hash(&brief.path)?,
    })?;
    let best = crate::brief::points::point_in(&cand, brief)?;
    let seed = rec.seed.or(brief.seed).unwrap_or(0);
    let mut calls: Vec<AgentCall> = Vec::new();

    // PLAN.
    let started = std::time::Instant::now();
    let phase = it.child(Event::PhaseStarted { phase: Phase::Plan })?;
    let t = Step {
        brief,
        config: &project.config,
        root: &project.root,
        dir: &dir,
        worktrees: &ws.dir,
        cand_dir: &cand,
        base_dir: &base_dir,
        history: held.view(),
        orientation: &orientation,
        iteration: n,
        seed,
        run_started: as_then(rec, before),
        span: &phase,
        cancel,
        stop: None,
        executor: &executor,
    };
    let proposal = driver.plan(&t, &best)?;
    let (plan, problem) = match proposal {
        Proposal::Plan {
            plan,
            rejected,
            calls: c,
            breach,
        } => {
            calls.extend(c);
            phase.emit(Event::Plan {
                hypothesis: plan.hypothesis.clone(),
                change: plan.change.clone(),
                predicted_effect: plan.predicted_effect,
                predicted_sd: plan.predicted_sd,
                cites: plan.cites.clone(),
            })?;
            let problem = breach
                .map(|b| {
                    format!(
                        "the agent changed files it must not touch while planning: {}",
                        b.message
                    )
                })
                .or(rejected.map(|c| c.reason()));
            (Some(plan), problem)
        }
        Proposal::Exhausted { detail } => (None, Some(format!("nothing left to try: {detail}"))),
    };
    phase.emit(Event::PhaseFinished {
        phase: Phase::Plan,
        seconds: started.elapsed().as_secs_f64(),
    })?;

    let mut outcome = None;
    let mut problem = problem;
    if full
        && problem.is_none()
        && let Some(plan) = &plan
    {
        match measure(
            project,
            brief,
            &ws,
            &cand,
            plan,
            &it,
            &t,
            driver,
            &orientation,
            seed,
            n,
            &mut calls,
        )? {
            Ok(o) => outcome = Some(o),
            Err(why) => problem = Some(why),
        }
    }
    if let Some(o) = &outcome {
        it.emit(Event::Verdict {
            verdict: match o.verdict.split(' ').next() {
                Some("keep") => Verdict::Keep,
                Some("discard") => Verdict::Discard,
                _ => Verdict::Crash,
            },
        })?;
    }
    it.emit(Event::ReplayFinished {
        full,
        problem: problem.clone(),
    })?;
    let record = ReplayRecord {
        schema: REPLAY_SCHEMA,
        brief: brief.name.clone(),
        iteration: n,
        id,
        at,
        base: rec.base.clone(),
        driver: agent.name(),
        full,
        plan: plan.as_ref().map(|p| PlanSummary {
            hypothesis: p.hypothesis.clone(),
            change: p.change.clone(),
            predicted_effect: Some(p.predicted_effect),
            predicted_sd: Some(p.predicted_sd),
            knobs: p.knobs.clone(),
        }),
        problem,
        outcome,
        original_plan: PlanSummary::of(rec),
        original_outcome: Outcome::of(rec),
        usage: Usage::sum(calls.iter().map(|c| &c.usage)),
        calls,
    };
    let mut value = serde_json::to_value(&record)
        .map_err(|e| Error::Internal(format!("serializing replay.json: {e}")))?;
    crate::text::redact::redact_json(&mut value);
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    crate::atomic::write_atomic(&dir.join("replay.json"), (text + "\n").as_bytes())?;
    root.sync()?;
    Ok((dir, record))
}

/// A run start that makes the prompt's "time used" what it was when the
/// iteration began (its start less the first start of the same run), not
/// the days since.
fn as_then(rec: &IterationRecord, before: &[IterationRecord]) -> DateTime<Utc> {
    let run_start = before
        .iter()
        .filter(|r| r.run_id == rec.run_id)
        .map(|r| r.started)
        .min()
        .unwrap_or(rec.started);
    Utc::now() - (rec.started - run_start)
}

/// `--full`: EXECUTE in the scratch worktree, then setup, guards and the
/// sequential pairs against a scratch copy of the base. `Err` is why the
/// change could not be measured (the agent failed, the scope refused it).
#[allow(clippy::too_many_arguments)]
fn measure(
    project: &Project,
    brief: &Brief,
    ws: &crate::workspace::Workspace,
    cand: &Path,
    plan: &crate::model::Plan,
    it: &Span,
    plan_turn: &Step,
    driver: &dyn crate::driver::Driver,
    orientation: &model::Orientation,
    seed: u64,
    n: u32,
    calls: &mut Vec<AgentCall>,
) -> Result<std::result::Result<Outcome, String>> {
    let started = std::time::Instant::now();
    let phase = it.child(Event::PhaseStarted {
        phase: Phase::Execute,
    })?;
    let t = Step {
        span: &phase,
        ..*plan_turn
    };
    let start = ws.scratch_head(cand)?;
    let out = driver.execute(&t, plan)?;
    calls.extend(out.calls);
    // A commit the agent made hides nothing from the checks below.
    ws.rewind_scratch(cand, start)?;
    // As in the run: the knobs file is ooda's, never the agent's.
    let knobs_edit = ws.owned_edit(cand, &brief.knobs_file)?;
    if knobs_edit.is_none() && !plan.knobs.is_empty() {
        crate::workspace::Workspace::write_owned(
            cand,
            &brief.knobs_file,
            crate::brief::points::render_env(&plan.knobs).as_bytes(),
        )?;
    }
    phase.emit(Event::PhaseFinished {
        phase: Phase::Execute,
        seconds: started.elapsed().as_secs_f64(),
    })?;
    if let Some(what) = knobs_edit {
        return Ok(Err(format!(
            "the agent changed the knobs file, which ooda writes itself: {what}"
        )));
    }
    if let Some(b) = out.breach {
        return Ok(Err(format!(
            "the agent changed files it must not touch: {}",
            b.message
        )));
    }
    if let Some(f) = out.failure {
        return Ok(Err(format!("EXECUTE failed: {f}")));
    }
    if let Some(c) = out.unavailable {
        return Ok(Err(format!("EXECUTE: {}", c.reason())));
    }
    let changed = ws.scratch_changes(cand, brief.scope.max_file_size)?.changed;
    if changed.is_empty() && driver.edits_files() {
        return Ok(Err(
            "the agent changed nothing, so there is nothing to measure".into(),
        ));
    }
    if let Some(v) = crate::workspace::content_violation(brief, &changed) {
        return Ok(Err(format!("the change breaks the Brief's scope: {v}")));
    }

    let started = std::time::Instant::now();
    let phase = it.child(Event::PhaseStarted {
        phase: Phase::Evaluate,
    })?;
    // Under an eval-runner node, as in the run, so the trees align.
    let delegation = phase.new_id();
    let runner = phase.child_with_id(
        &delegation,
        Event::SubagentStarted {
            name: "eval-runner".into(),
            role: crate::model::Role::Evaluate,
            driver: "builtin".into(),
            delegation: delegation.clone(),
            sees: Vec::new(),
        },
    )?;
    let measured = evaluate(
        project,
        brief,
        cand,
        plan,
        &runner,
        plan_turn,
        orientation,
        seed,
        n,
    )?;
    let (verdict, reason) = match &measured {
        Ok(o) => (o.verdict.clone(), o.reason.clone()),
        Err(why) => ("crash".to_string(), why.clone()),
    };
    runner.emit(Event::Decision {
        verdict: match verdict.split(' ').next() {
            Some("keep") => Verdict::Keep,
            Some("discard") => Verdict::Discard,
            _ => Verdict::Crash,
        },
        reason,
    })?;
    runner.emit(Event::SubagentFinished {
        name: "eval-runner".into(),
        role: crate::model::Role::Evaluate,
        delegation,
        outcome: crate::model::SubagentOutcome::Done,
        seconds: started.elapsed().as_secs_f64(),
        verdict: None,
        findings: 0,
        problem: None,
    })?;
    phase.emit(Event::PhaseFinished {
        phase: Phase::Evaluate,
        seconds: started.elapsed().as_secs_f64(),
    })?;
    Ok(Ok(match measured {
        Ok(o) => o,
        Err(why) => Outcome {
            verdict: "crash".into(),
            reason: why,
            effect: None,
            ci: None,
            pairs: None,
        },
    }))
}

/// Setup, guards and the sequential pairs of the replayed change against a
/// scratch copy of the base; `Err` is why it crashed.
#[allow(clippy::too_many_arguments)]
fn evaluate(
    project: &Project,
    brief: &Brief,
    cand: &Path,
    plan: &crate::model::Plan,
    phase: &Span,
    plan_turn: &Step,
    orientation: &model::Orientation,
    seed: u64,
    n: u32,
) -> Result<std::result::Result<Outcome, String>> {
    let (bw, cw) = (
        Worktree::new(Side::Base, plan_turn.base_dir.to_path_buf(), brief)?,
        Worktree::new(Side::Cand, cand.to_path_buf(), brief)?,
    );
    let lease = plan_turn
        .executor
        .lease(Purpose::Measure(crate::run::executor::Job {
            iteration: plan_turn.iteration,
            phase: "replay",
        }))?;
    let mut ev = Evaluator::new(
        brief,
        &project.config.defaults,
        plan_turn.cancel,
        None,
        phase,
        lease.as_ref(),
    );
    for wt in [&bw, &cw] {
        if let Some(RunFailure::Failed { reason, .. }) = ev.setup(wt)? {
            return Ok(Err(format!("{} setup failed: {reason}", wt.side.as_str())));
        }
    }
    let (_, guard) = ev.guards(&cw)?;
    if let Some(RunFailure::Failed { reason, .. }) = guard {
        return Ok(Err(format!("a guard failed: {reason}")));
    }
    let rule = orientation.rule();
    let looks = sequential::looks_for(project.config.defaults.pairs);
    let mut rng =
        crate::stats::SplitMix64::new(seed ^ u64::from(n).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let (measured, last) = ev.measure_sequential(&bw, &cw, &rule, &looks, &mut rng, || false)?;
    let pairs = match measured {
        Ok(p) => p,
        Err((side, RunFailure::Failed { reason, .. })) => {
            return Ok(Err(format!(
                "the {} failed while measuring: {reason}",
                side.as_str()
            )));
        }
    };
    let Some(last) = last else {
        return Ok(Err("the sequential test ended without a look".into()));
    };
    let mut d = eval::report(
        brief.metric.direction,
        pairs,
        &last,
        &rule,
        project.config.defaults.alpha,
        &looks,
    );
    eval::neutral(&mut d.discard, &mut d.reason, plan, orientation.theta1);
    let verdict = match (d.keep, d.discard) {
        (true, _) => "keep".to_string(),
        (false, Some(k)) => format!("discard ({})", k.as_str()),
        (false, None) => "discard".to_string(),
    };
    Ok(Ok(Outcome {
        verdict,
        reason: d.reason,
        effect: Some(d.comparison.effect),
        ci: Some(d.comparison.ci),
        pairs: Some(d.comparison.pairs.len()),
    }))
}
