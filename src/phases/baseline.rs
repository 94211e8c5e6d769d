//! Iteration 0: measure the starting commit and calibrate the noise.
//!
//! Base and candidate worktrees both hold the starting commit, so the A/A
//! pairs measure nothing but noise: their spread is the first noise history
//! and θ₁, and their median is the baseline. A starting commit that cannot
//! be built, guarded or measured is the Brief's problem, not an iteration's:
//! the error says how to try the commands (`ooda check --measure`).

use chrono::Utc;

use super::{Machine, Step, failpoint, oid};
use crate::archive::state::State;
use crate::error::{Error, Result};
use crate::eval::{self, RunFailure, Side};
use crate::events::Event;
use crate::model::{IterationRecord, Verdict};
use crate::model::{Phase, TaskState};
use crate::report::summary;
use crate::stats::SplitMix64;
use crate::text::clip::fmt_num;
use crate::workspace::Workspace;

pub(crate) fn run(
    step: &Step,
    ws: &Workspace,
    state: &State,
    brief_hash: &str,
) -> Result<IterationRecord> {
    let brief = step.brief;
    let defaults = &step.config.defaults;
    let start = oid(&state.start_commit)?;
    let started = Utc::now();
    ws.ensure(start)?;
    let (base, cand) = (step.worktree(Side::Base)?, step.worktree(Side::Cand)?);
    let point = crate::brief::points::point_in(&base.dir, brief)?;
    let mut rng = SplitMix64::new(state.seed);
    let lease = step.measuring(0, "baseline")?;
    let mut ev = step.evaluator(lease.as_ref());
    ev.journal = Some(step.journal(
        0,
        "baseline",
        &format!("{}|{}|{brief_hash}", state.run_id, state.start_commit),
    ));
    let fail = |what: &str, reason: String, output: String| {
        Error::Input(format!(
            "{}: the starting commit cannot be measured: {what}: {reason}\n{output}\nooda measures the committed HEAD in a fresh worktree (uncommitted edits are not there). Fix the Brief's commands (try `ooda check {} --measure 3`), then tick again.",
            brief.path.display(),
            brief.name
        ))
    };
    // A command that rewrites a tracked file would block every iteration
    // of the night (what is measured must be what is committed): said now,
    // before any agent works, with the command and the fix.
    let tree = ws.tree_of(start)?;
    let max_new = brief.scope.max_file_size;
    let rewrote = |by: &str| -> Result<()> {
        // Both sides run the user's own commit: only a changed committed
        // file counts, whatever they create.
        let mut files = ws.since(tree, max_new)?.1.changed;
        files.extend(ws.base_since(tree, max_new)?.changed);
        files.sort();
        files.dedup();
        if files.is_empty() {
            return Ok(());
        }
        Err(Error::Input(format!(
            "{}: the starting commit cannot be measured: {}, so every iteration would be blocked. Try the commands with `ooda check {} --measure 3`, then tick again",
            brief.path.display(),
            eval::rewrites::message(by, &files, "baseline", &brief.knobs_file),
            brief.name
        )))
    };
    for wt in [&base, &cand] {
        if let Some(RunFailure::Failed { reason, output }) = ev.setup(wt)? {
            return Err(fail("setup", reason, output));
        }
    }
    if let Some(setup) = &brief.metric.setup {
        rewrote(&format!("the setup command `{setup}`"))?;
    }
    let (guards, failed) = ev.guards(&base)?;
    if let Some(RunFailure::Failed { reason, output }) = failed {
        return Err(fail("a guard fails", reason, output));
    }
    if !brief.guards.is_empty() {
        rewrote("the guards")?;
    }
    let pairs = match ev.measure_pairs(
        &base,
        &cand,
        defaults.calibration_pairs as usize,
        &mut rng,
        |_| false,
        // Both sides are the user's own commit: nothing agent-written runs.
        || false,
    )? {
        Ok(p) => p,
        Err((_, RunFailure::Failed { reason, output })) => {
            return Err(fail("measuring", reason, output));
        }
    };
    rewrote(&format!("the metric command `{}`", brief.metric.command))?;
    let cal = eval::calibrate(
        pairs,
        defaults.pairs,
        defaults.alpha,
        brief.metric.noise_floor,
    );
    let mut rec = IterationRecord::new(0, Verdict::Baseline);
    rec.brief = brief.name.clone();
    rec.brief_hash = brief_hash.to_string();
    rec.run_id = state.run_id.clone();
    rec.seed = Some(state.seed);
    rec.started = started;
    rec.finished = Utc::now();
    rec.driver = "runner".into();
    rec.reason = format!(
        "baseline {} = {}; noise {:.2}% per pair; θ₁ = {:.2}%",
        brief.metric.name,
        fmt_num(cal.median),
        cal.noise_sd * 100.0,
        cal.theta1 * 100.0
    );
    if cal.advice.is_some() {
        rec.reason.push_str(
            " — too noisy to see the gains you care about: see the advice in iter-000.md",
        );
    }
    rec.hypothesis = "baseline".into();
    rec.knobs = point;
    rec.calibration = Some(cal);
    rec.guards = guards;
    rec.base = state.start_commit.clone();
    rec.tree = Some(ws.tree_of(start)?.to_string());
    rec.next = Some(if brief.knobs.is_empty() {
        "Start proposing changes.".into()
    } else {
        "Start the knob search around the baseline point.".into()
    });
    Ok(rec)
}

impl Machine<'_> {
    /// Iteration 0: measure the starting commit and calibrate the noise.
    pub(super) fn baseline(&mut self) -> Result<()> {
        let span = self.archive.run.with_iteration(Some(0));
        let id = span.new_id();
        let span = span.child_with_id(
            &id,
            Event::IterationStarted {
                brief_hash: self.brief_hash.clone(),
            },
        )?;
        span.task_state(TaskState::Running, Some("measuring the start".into()))?;
        let o = self.orientation_now();
        let step = self.step_at(&span, &o, self.archive.history.view(), 0);
        let rec = match run(&step, &self.ws, &self.archive.state, &self.brief_hash) {
            Ok(mut rec) => {
                rec.jobs = self.executor.take_jobs();
                rec
            }
            Err(e) => {
                // The next tick measures the start again, as a new task.
                let state = match e {
                    Error::Interrupted => TaskState::Cancelled,
                    _ => TaskState::Failed,
                };
                let _ = span.task_state(state, Some(crate::text::clip::clip(&e.to_string(), 200)));
                return Err(e);
            }
        };
        span.emit(Event::Decision {
            verdict: Verdict::Baseline,
            reason: rec.reason.clone(),
        })?;
        summary::sync(
            &mut self.archive,
            Some(rec),
            &self.brief,
            &self.project.config,
        )?;
        failpoint::after(failpoint::Point::BaselineArchived);
        let path = crate::archive::history::path_of(&self.archive.dir, 0);
        span.emit(Event::LearnArchived {
            path: path.display().to_string(),
        })?;
        span.task_state(TaskState::Succeeded, Some("baseline measured".into()))?;
        self.archive.state.next_iteration = 1;
        self.archive.save_state()?;
        // The summary was written before the state knew of iteration 0.
        summary::sync(&mut self.archive, None, &self.brief, &self.project.config)?;
        span.emit(Event::Checkpoint {
            phase: Phase::Check,
        })?;
        if self.interrupt.is_set() {
            return Err(Error::Interrupted);
        }
        Ok(())
    }
}
