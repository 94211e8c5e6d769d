//! The iteration machine: OBSERVE, ORIENT, PLAN, EXECUTE,
//! EVALUATE, REVIEW, LEARN, COMMIT, CHECK.
//!
//! The machine is small on purpose. It locks the Brief's archive, then loops:
//! ask [`next`] (a pure function of the checkpoint and a few facts) what to
//! do, run that phase, save its typed output in `state.json`, checkpoint.
//! Each phase lives in its own file and gets only what it needs: the read-only
//! environment of the step ([`Cx`], or a driver's [`Turn`]) and the outputs
//! of the phases before it; it returns its own output, which the machine
//! stores. The iteration file and `summary.md` are projections of those
//! outputs, written by `Archive::sync` after LEARN, COMMIT and CHECK and when
//! a run stops. What the machine itself does is store each phase's output
//! and make the writes that end a step, in their crash-safe order: applying
//! CHECK's saved decision, recording a stop, archiving the baseline.
//!
//! A tick resumes after the last checkpoint, so a process killed at any
//! instant repeats at most the phase it was in (measurements may be re-run;
//! nothing archived is redone or lost) and iteration numbers never skip or
//! repeat. LEARN is the gate: an iteration ends only after its `iter-NNN.md`
//! is written, read back, and `summary.md` regenerated. `failpoint.rs` names
//! every point where the tests kill the process to prove it.

pub mod replay;

mod analyze;
mod baseline;
mod budget;
mod check;
mod commit;
mod confirm;
mod evaluate;
mod execute;
pub mod failpoint;
mod judge;
mod learn;
mod next;
mod observe;
mod orient;
mod plan;
mod review;
mod synthesize;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use chrono::Utc;

use crate::archive::state::InFlight;
use crate::archive::{self, Archive};
use crate::brief::Brief;
use crate::config::Config;
use crate::driver::{MainAgent, Proposal, Turn};
use crate::error::{Error, Result};
use crate::eval::{Evaluator, Side, Worktree};
use crate::events::{Event, Progress, Sink, Span};
use crate::model::Orientation;
use crate::model::{Cut, Stop, StopReason, TaskState, Verdict};
use crate::project::Project;
use crate::report::summary;
use crate::run::executor::{Executor, Lease, Local, Purpose};
use crate::run::interrupt::Interrupt;
use crate::workspace::Workspace;

pub use crate::model::Phase;
pub(crate) use execute::content_violation;
pub use next::{Beside, Facts, Next, next};

/// The scratch worktree where the simplifier edits a copy of a keep.
pub(crate) const SIMPLIFY_DIR: &str = "simplify";

/// What one step of the machine did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    Baseline,
    Iteration {
        iteration: u32,
        verdict: Verdict,
    },
    /// The run ended in this step; the stop is recorded everywhere. When the
    /// step also finished an iteration (CHECK stopped the run), its number
    /// and verdict.
    Stopped(Stop, Option<(u32, Verdict)>),
    /// The run had already ended (done or stalled): nothing to do.
    Finished(Stop),
}

pub use crate::events::Print;

/// What a phase may read: the environment of this step.
pub(crate) struct Cx<'a> {
    pub brief: &'a Brief,
    pub config: &'a Config,
    pub ws: &'a Workspace,
    /// The phase's span.
    pub span: &'a Span,
    pub cancel: &'a AtomicBool,
    /// See [`Evaluator::stop`].
    pub stop: &'a AtomicBool,
    pub executor: &'a dyn Executor,
}

impl Cx<'_> {
    /// The eval-runner, logging under this phase and running its commands
    /// under `lease`.
    pub fn evaluator<'l>(&'l self, lease: &'l dyn Lease) -> Evaluator<'l> {
        Evaluator {
            brief: self.brief,
            output_cap: self.config.defaults.output_cap as usize,
            cancel: self.cancel,
            stop: Some(self.stop),
            span: self.span,
            lease,
            exclusive: self.config.defaults.measure_exclusive,
        }
    }

    /// A lease for the measurements of `phase` in `iteration`.
    pub fn measuring(&self, iteration: u32, phase: &'static str) -> Result<Box<dyn Lease + '_>> {
        self.executor
            .lease(Purpose::Measure(crate::run::executor::Job {
                iteration,
                phase,
            }))
    }

    pub fn worktree(&self, side: Side) -> Result<Worktree> {
        let dir = match side {
            Side::Base => self.ws.base_dir.clone(),
            Side::Cand => self.ws.cand_dir.clone(),
            Side::Anchor => self.ws.dir.join("anchor"),
            Side::Check => self.ws.dir.join("check"),
            Side::Simplified => self.ws.dir.join(SIMPLIFY_DIR),
        };
        Worktree::new(side, dir, self.brief)
    }

    /// Identifies a base worktree's setup: its commit, knobs and command.
    pub fn base_setup_key(&self, base_commit: &str) -> Result<String> {
        Ok(format!(
            "{}|{}|{}",
            base_commit,
            crate::brief::points::key(&crate::brief::points::point_in(
                &self.ws.base_dir,
                self.brief
            )?),
            self.brief.metric.setup.clone().unwrap_or_default()
        ))
    }
}

/// One Brief's iteration machine, holding its lock while it lives.
pub struct Machine<'a> {
    project: &'a Project,
    brief_arg: String,
    brief: Brief,
    brief_hash: String,
    agent: MainAgent,
    ws: Workspace,
    archive: Archive,
    executor: Box<dyn Executor>,
    interrupt: &'a Interrupt,
    /// `subagents/*.md` and the built-in copies, read again every step.
    roster: crate::subagents::Roster,
    /// The state last logged for the iteration in flight by this process
    /// (a resumed iteration logs its state again).
    task: Option<TaskState>,
}

impl<'a> Machine<'a> {
    /// Locks the Brief and loads (or rebuilds, or starts) its state.
    /// Progress lines go to `print` (with every command when `verbose`).
    pub fn open(
        project: &'a Project,
        brief_arg: &str,
        interrupt: &'a Interrupt,
        print: Print,
        verbose: bool,
    ) -> Result<Machine<'a>> {
        let brief = project.load_brief(brief_arg)?;
        let agent = MainAgent::for_brief(&brief, &project.config)?;
        let roster = crate::subagents::Roster::load(&project.root, &project.config)?;
        let agent_name = agent.agent_name();
        let sandbox = crate::run::sandbox::for_project(project, agent_name.as_deref())?;
        let hash = brief_hash(&brief.path)?;
        let ws = Workspace::open(
            &project.root,
            &project.worktrees_dir(&brief.name),
            &brief.name,
        )?
        .with_owned_file(&brief.knobs_file);
        let progress: Arc<dyn Sink> = Arc::new(Progress::new(&brief.name, verbose, print));
        let mut watchers = vec![progress];
        // With OTEL_EXPORTER_OTLP_ENDPOINT set, each iteration goes to the
        // collector as it ends.
        if let Some(live) =
            crate::report::otlp::Live::from_env(&project.iterations_dir(&brief.name))
        {
            watchers.push(Arc::new(live));
        }
        let mut archive = Archive::open(
            &project.iterations_dir(&brief.name),
            &brief,
            &hash,
            &ws,
            watchers,
            project.config.defaults.events_segment,
        )?;
        // What a tick killed together with its helpers left running dies
        // now, before anything of this tick starts (the Brief's lock makes
        // the earlier tick a dead one).
        if let Some(old) = archive.state.tick_mark.take() {
            crate::run::sandbox::kill_marked(&old);
        }
        let mark = crate::run::sandbox::new_mark();
        archive.state.tick_mark = Some(mark.clone());
        archive.state.unconfined = sandbox.warning.clone();
        archive.save_state()?;
        // A state written before ORIENT's output was kept in it: the same
        // statistics, from the archive as it was when the iteration began.
        if let Some(cur) = archive.state.current.as_mut()
            && cur.done != Phase::Observe
            && cur.orientation.is_none()
        {
            archive.history.settle()?;
            let before = archive.history.view().before(cur.iteration as usize);
            cur.orientation = Some(orient::run(before, &brief, &project.config)?);
            archive.save_state()?;
        }
        let executor = crate::run::executor::for_brief(
            Local::sandboxed(&sandbox).marked(mark),
            &project.root,
            &project.config,
            &brief,
            ws.dir.join("slurm"),
            interrupt,
            true,
        );
        Ok(Machine {
            project,
            brief_arg: brief_arg.to_string(),
            brief,
            brief_hash: hash,
            agent,
            ws,
            archive,
            executor,
            interrupt,
            roster,
            task: None,
        })
    }

    pub fn brief(&self) -> &Brief {
        &self.brief
    }

    /// The run's span, for callers that log around the machine (the scheduler).
    pub fn run_span(&self) -> &Span {
        &self.archive.run
    }

    /// The iteration the next step works on.
    pub fn iteration(&self) -> u32 {
        let s = &self.archive.state;
        s.current
            .as_ref()
            .map(|c| c.iteration)
            .unwrap_or(s.next_iteration)
    }

    /// One step: the baseline, or one iteration (or the rest of an interrupted one).
    pub fn step(&mut self) -> Result<StepOutcome> {
        let out = self.step_on();
        // Only an iteration this tick worked on (a tick that fails before it
        // touches one, every minute from the daemon, logs nothing).
        if let Err(e) = &out
            && self.task.is_some()
            && self.archive.state.current.is_some()
            && let Ok(span) = self.iteration_span()
        {
            // Whatever stopped this tick, the iteration in flight waits for
            // the next one; what the log says matters more than this error.
            let _ = span.task_state(
                TaskState::Pending,
                Some(format!(
                    "stopped ({}); it resumes from its last checkpoint",
                    crate::text::clip::clip(&e.to_string(), 200)
                )),
            );
        }
        self.task = None;
        self.note_failure(out.as_ref().err());
        out
    }

    /// Keeps `State::failing` up to date: a tick that ended with an error
    /// counts (a refusal on a red light or a budget is a stop, which the
    /// state says already; an interrupt is the user's), one that did not
    /// clears it. Best effort: the tick's own result matters more.
    fn note_failure(&mut self, error: Option<&Error>) {
        match error {
            Some(Error::Interrupted | Error::Red(_) | Error::Budget(_)) => {}
            Some(e) => {
                // Status names the Brief already: its path goes.
                let text = e.to_string();
                let prefix = format!("{}: ", self.brief.path.display());
                let failing = crate::archive::state::Failing::after(
                    self.archive.state.failing.as_ref(),
                    text.strip_prefix(&prefix).unwrap_or(&text).to_string(),
                    chrono::Utc::now(),
                );
                self.archive.state.failing = Some(failing.clone());
                // Into the last checkpoint, not this tick's state: a phase
                // that failed may have changed it halfway.
                let dir = &self.archive.dir;
                if let Ok(crate::archive::state::Loaded::Ok(mut saved)) =
                    crate::archive::state::peek(dir)
                {
                    saved.failing = Some(failing);
                    let _ = saved.save(dir);
                }
            }
            None if self.archive.state.failing.is_some() => {
                self.archive.state.failing = None;
                let _ = self.archive.save_state();
            }
            None => {}
        }
    }

    fn step_on(&mut self) -> Result<StepOutcome> {
        self.observe_brief()?;
        if let Some(c) = &self.archive.state.current {
            self.archive
                .run
                .at(&c.event_id, Some(c.iteration))
                .emit(Event::IterationResumed {
                    after_phase: c.done,
                })?;
        }
        loop {
            let facts = self.facts();
            match next(self.archive.state.current.as_ref(), &facts) {
                Next::Red => return Err(self.refuse_red()),
                Next::OverBudget => return Err(self.refuse_budget()),
                Next::Unstop => {
                    // The human raised the budget: the run continues.
                    self.archive.state.stop = None;
                    self.archive.save_state()?;
                }
                Next::Finished => {
                    let stop = self.archive.state.stop.clone().ok_or_else(|| {
                        Error::Internal("the run is finished but records no stop".into())
                    })?;
                    return Ok(StepOutcome::Finished(stop));
                }
                Next::Baseline => {
                    self.baseline()?;
                    return Ok(StepOutcome::Baseline);
                }
                Next::Stop => {
                    let stop = self.budget_stop().ok_or_else(|| {
                        Error::Internal("a budget stop without a used-up budget".into())
                    })?;
                    let rec = self.archive.stopped_last(&stop);
                    self.finish(stop.clone(), rec, false)?;
                    return Ok(StepOutcome::Stopped(stop, None));
                }
                Next::Begin => self.begin()?,
                Next::Rebuild { done } => {
                    // The best commit, not the iteration's base: after COMMIT
                    // they differ, and the branch must not move back.
                    self.ws.ensure(oid(&self.archive.state.best_commit)?)?;
                    self.current_mut()?.done = done;
                }
                Next::Cut(phase) => self.cut_for_budget(phase)?,
                Next::Run { phase, beside } => {
                    let ran = self.run(phase, beside);
                    // A measurement that lost its cluster job is measured
                    // again; an end the measured command may have caused
                    // (its own scancel) only a bounded number of times.
                    // The iteration file lists the lost job, so the morning
                    // shows the cluster got in the way.
                    if let Err(e) = &ran
                        && let Some(lost) = crate::run::executor::job_ended(e)
                        && let Some(c) = self.archive.state.current.as_mut()
                    {
                        c.jobs.push(lost.job.clone());
                        if phase == Phase::Evaluate && lost.by_command {
                            c.lost_jobs.push(lost.message.clone());
                        }
                        self.archive.save_state()?;
                    }
                    if let Some(outcome) = ran? {
                        return Ok(outcome);
                    }
                    self.checkpoint(phase)?;
                }
            }
        }
    }

    fn refuse_red(&self) -> Error {
        let stop = self.archive.state.stop.clone();
        let (iteration, reason, detail) = stop
            .map(|s| (s.iteration, s.reason.as_str(), s.detail))
            .unwrap_or_default();
        Error::Red(format!(
            "{} is RED since iteration {iteration}: {reason} — {detail}. Inspect {}, then run `ooda ack {}` to continue.",
            self.brief.name,
            self.archive.dir.join("summary.md").display(),
            self.brief.name
        ))
    }

    fn refuse_budget(&self) -> Error {
        let (reason, detail) = self
            .budget_stop()
            .map(|s| (s.reason.as_str(), s.detail))
            .unwrap_or_default();
        Error::Budget(format!(
            "{} is stopped: {reason} — {detail}. Raise `budget` in {} to continue.",
            self.brief.name,
            self.brief.path.display()
        ))
    }

    fn facts(&self) -> Facts {
        let s = &self.archive.state;
        let budget = self.budget_stop();
        Facts {
            stop: s.stop.as_ref().map(|st| st.reason),
            baseline: s.next_iteration > 0,
            budget_out: budget.is_some(),
            spend_out: budget.is_some_and(|b| b.reason != StopReason::BudgetIterations),
            worktrees: self.ws.cand_dir.join(".git").exists()
                && self.ws.base_dir.join(".git").exists(),
            analyzer_due: !self.analyzers_due().is_empty(),
        }
    }

    /// Re-reads the Brief: edits take effect at the next iteration.
    fn observe_brief(&mut self) -> Result<()> {
        let brief = self.project.load_brief(&self.brief_arg)?;
        self.agent = MainAgent::for_brief(&brief, &self.project.config)?;
        self.roster = crate::subagents::Roster::load(&self.project.root, &self.project.config)?;
        let hash = brief_hash(&brief.path)?;
        if hash != self.archive.state.brief_hash {
            self.archive.run.emit(Event::BriefChanged {
                old_hash: self.archive.state.brief_hash.clone(),
                new_hash: hash.clone(),
            })?;
            self.archive.state.brief_hash = hash.clone();
        }
        self.brief = brief;
        self.brief_hash = hash;
        Ok(())
    }

    fn current(&self) -> Result<&InFlight> {
        self.archive
            .state
            .current
            .as_ref()
            .ok_or_else(|| Error::Internal("no iteration in flight".into()))
    }

    fn current_mut(&mut self) -> Result<&mut InFlight> {
        self.archive
            .state
            .current
            .as_mut()
            .ok_or_else(|| Error::Internal("no iteration in flight".into()))
    }

    /// The span of the iteration in flight.
    fn iteration_span(&self) -> Result<Span> {
        let c = self.current()?;
        Ok(self
            .archive
            .run
            .at(&c.event_id, Some(c.iteration))
            .as_task())
    }

    /// Logs the iteration's task state when it changed: pending until PLAN,
    /// planning in it, running from EXECUTE on.
    fn task_in(&mut self, phase: Phase) -> Result<()> {
        let state = match phase {
            Phase::Observe | Phase::Orient => TaskState::Pending,
            Phase::Plan => TaskState::Planning,
            _ => TaskState::Running,
        };
        if self.task != Some(state) {
            self.iteration_span()?
                .task_state(state, Some(format!("in {}", phase.as_str())))?;
            self.task = Some(state);
        }
        Ok(())
    }

    /// Starts the next iteration and runs its OBSERVE (which has nothing to
    /// save: it makes the worktrees match the best commit).
    fn begin(&mut self) -> Result<()> {
        let s = &self.archive.state;
        let iteration = s.next_iteration;
        let span = self.archive.run.with_iteration(Some(iteration));
        let id = span.new_id();
        span.emit_with_id(
            &id,
            Event::IterationStarted {
                brief_hash: self.brief_hash.clone(),
            },
        )?;
        self.archive.state.current = Some(InFlight::new(
            iteration,
            id,
            &self.brief_hash,
            &self.archive.state.best_commit,
        ));
        let best = self.archive.state.best_commit.clone();
        self.in_phase(Phase::Observe, |m, _| observe::run(&m.ws, &best))?;
        self.checkpoint(Phase::Observe)
    }

    /// Runs `body` between phase_started and phase_finished events.
    fn in_phase<T>(
        &mut self,
        phase: Phase,
        body: impl FnOnce(&mut Self, &Span) -> Result<T>,
    ) -> Result<T> {
        self.task_in(phase)?;
        let span = self
            .iteration_span()?
            .child(Event::PhaseStarted { phase })?;
        let t = Instant::now();
        let out = body(self, &span)?;
        span.emit(Event::PhaseFinished {
            phase,
            seconds: t.elapsed().as_secs_f64(),
        })?;
        Ok(out)
    }

    fn cx<'s>(&'s self, span: &'s Span) -> Cx<'s> {
        Cx {
            brief: &self.brief,
            config: &self.project.config,
            ws: &self.ws,
            span,
            cancel: self.interrupt.flag(),
            stop: self.interrupt.stop_flag(),
            executor: self.executor.as_ref(),
        }
    }

    fn turn<'s>(&'s self, span: &'s Span, orientation: &'s Orientation) -> Result<Turn<'s>> {
        let c = self.current()?;
        // The in-flight iteration is in the archive once LEARN wrote it;
        // a driver sees only the iterations before it.
        let before = self.archive.history.view().before(c.iteration as usize);
        Ok(self.turn_at(span, orientation, before, c.iteration))
    }

    /// A turn of `iteration` that sees `history`.
    fn turn_at<'s>(
        &'s self,
        span: &'s Span,
        orientation: &'s Orientation,
        history: crate::archive::history::View<'s>,
        iteration: u32,
    ) -> Turn<'s> {
        Turn {
            brief: &self.brief,
            config: &self.project.config,
            root: &self.project.root,
            dir: &self.archive.dir,
            cand_dir: &self.ws.cand_dir,
            base_dir: &self.ws.base_dir,
            history,
            orientation,
            iteration,
            seed: self.archive.state.seed,
            run_started: self.archive.state.created_at,
            span,
            cancel: self.interrupt.flag(),
            executor: self.executor.as_ref(),
        }
    }

    /// ORIENT's output for the iteration in flight (computed from the archive
    /// when a state from before ORIENT kept one is resumed).
    fn orientation(&self) -> Result<Orientation> {
        let c = self.current()?;
        Ok(match &c.orientation {
            Some(o) => o.clone(),
            None => orient::run(
                self.archive.history.view().before(c.iteration as usize),
                &self.brief,
                &self.project.config,
            )?,
        })
    }

    /// Runs one phase and stores its output in the in-flight iteration; the
    /// outcome when the phase ended the step (PLAN found nothing to try,
    /// CHECK finished the iteration).
    fn run(&mut self, phase: Phase, beside: Option<Beside>) -> Result<Option<StepOutcome>> {
        // The check of the files older than the window runs beside the
        // first phases (the agent's PLAN and EXECUTE calls hide it): from
        // EVALUATE on, whatever reads the history has it (history/view.rs).
        if !matches!(
            phase,
            Phase::Observe | Phase::Orient | Phase::Plan | Phase::Execute
        ) {
            self.archive.history.settle()?;
        }
        match phase {
            Phase::Observe => {
                let best = self.archive.state.best_commit.clone();
                self.in_phase(phase, |m, _| observe::run(&m.ws, &best))?;
            }
            Phase::Orient => {
                let o = self.in_phase(phase, |m, _| {
                    let c = m.current()?;
                    orient::run(
                        m.archive.history.view().before(c.iteration as usize),
                        &m.brief,
                        &m.project.config,
                    )
                })?;
                self.current_mut()?.orientation = Some(o);
            }
            Phase::Plan => {
                let proposal = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    let turn = m.turn(span, &o)?;
                    let driver = m.agent.driver();
                    execute::dropping_ignored(&turn, &m.ws, driver, || plan::run(&turn, driver))
                        .map(|(proposal, _)| proposal)
                })?;
                match proposal {
                    Proposal::Plan {
                        plan,
                        rejected,
                        calls,
                        breach,
                    } => {
                        let c = self.current_mut()?;
                        c.cut = rejected;
                        c.tamper = breach.and_then(|b| b.tamper());
                        c.plan = Some(plan);
                        c.agent_calls.extend(calls);
                    }
                    Proposal::Exhausted { detail } => {
                        // Nothing left to try: the iteration never started its work.
                        let iteration = self.current()?.iteration;
                        self.iteration_span()?
                            .task_state(TaskState::Cancelled, Some(detail.clone()))?;
                        let stop = Stop {
                            reason: StopReason::Stalled,
                            detail,
                            at: Utc::now(),
                            iteration: iteration.saturating_sub(1),
                        };
                        self.archive.state.current = None;
                        let rec = self.archive.stopped_last(&stop);
                        self.finish(stop.clone(), rec, false)?;
                        return Ok(Some(StepOutcome::Stopped(stop, None)));
                    }
                }
            }
            Phase::Execute => {
                let out = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    let turn = m.turn(span, &o)?;
                    execute::run(&turn, m.agent.driver(), &m.ws, m.current()?)
                })?;
                if let Some(out) = out {
                    out.apply(self.current_mut()?);
                }
            }
            Phase::Evaluate => {
                // The second EVALUATE of a keep: the simplifier's version
                // against it. The keep's own decision stands either way.
                if self
                    .current()?
                    .review
                    .as_ref()
                    .and_then(|r| r.simplified.as_ref())
                    .is_some_and(|s| !s.measured)
                {
                    let test = self.in_phase(phase, |m, span| {
                        let o = m.orientation()?;
                        let seed = m.archive.state.seed;
                        let cur = m.current()?;
                        let s = cur
                            .review
                            .as_ref()
                            .and_then(|r| r.simplified.as_ref())
                            .ok_or_else(|| Error::Internal("no simplification to test".into()))?;
                        // The eval-runner measures it, as the subagent it is.
                        let def = m.roster.with_role(crate::model::Role::Evaluate).next();
                        let Some(def) = def else {
                            return evaluate::simplified(&m.cx(span), cur, s, &o, seed);
                        };
                        let started =
                            crate::subagents::dispatch::begin_alone(span, def, "builtin")?;
                        let test = evaluate::simplified(&m.cx(&started.span), cur, s, &o, seed)?;
                        let answer = crate::subagents::dispatch::Answer {
                            body: serde_json::json!({"non_inferiority": &test}),
                            ..Default::default()
                        };
                        crate::subagents::dispatch::end(
                            started,
                            &m.archive.dir,
                            cur.iteration,
                            def,
                            "builtin".into(),
                            answer,
                            Some("simplified"),
                        )?;
                        Ok(test)
                    })?;
                    let c = self.current_mut()?;
                    if let Some(s) = c.review.as_mut().and_then(|r| r.simplified.as_mut()) {
                        s.measured = true;
                        s.reason = format!("{}; {}", s.reason, test.reason);
                        if !test.non_inferior {
                            // Nothing left to review: the kept change stands.
                            s.reviewed = true;
                        }
                        s.test = Some(test);
                    }
                    return Ok(None);
                }
                let outcome = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    match beside {
                        None => Ok((m.evaluated(span, &o)?, None)),
                        // The analyzers run in their own threads while
                        // EVALUATE measures (a profiler waits for the pairs),
                        // and their report is archived with the iteration
                        // for the next PLAN.
                        Some(Beside::Analyzer) => {
                            let defs = m.analyzers_due();
                            let turn = m.turn(span, &o)?;
                            let (tx, rx) = std::sync::mpsc::channel();
                            std::thread::scope(|s| {
                                let analyzer = s.spawn(|| analyze::run(&turn, &defs, &m.agent, rx));
                                let outcome = m.evaluated(span, &o);
                                if outcome.is_ok() {
                                    let _ = tx.send(());
                                }
                                drop(tx);
                                let analysis = analyzer.join().map_err(|_| {
                                    Error::Internal("the pipeline-analyzer panicked".into())
                                })?;
                                Ok((outcome?, Some(analysis?)))
                            })
                        }
                    }
                })?;
                let c = self.current_mut()?;
                let ((eval, runner), analyzed) = outcome;
                c.eval = Some(eval);
                // The simplified version's jobs are counted on their own.
                c.lost_jobs.clear();
                c.subagents = runner.into_iter().collect();
                if let Some((analysis, done)) = analyzed {
                    if analysis.is_some() {
                        c.analysis = analysis;
                    }
                    c.agent_calls.extend(done.calls);
                    if let Some(b) = done.breaches.iter().find(|b| b.unconfined)
                        && c.tamper.is_none()
                    {
                        c.tamper = Some(format!("while analyzing, {}", b.message));
                    }
                    c.subagents.extend(done.reports);
                }
            }
            Phase::Review => {
                let out = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    let turn = m.turn(span, &o)?;
                    let start = m.archive.state.start_commit.clone();
                    let out = review::run(&turn, &m.ws, &m.roster, &m.agent, m.current()?, &start)?;
                    if let Some((r, _)) = &out
                        && let Some(findings) = r.blocked()
                    {
                        span.emit(Event::Decision {
                            verdict: Verdict::Discard,
                            reason: format!("blocked by review: {findings}"),
                        })?;
                    }
                    Ok(out)
                })?;
                if let Some((review, done)) = out {
                    let c = self.current_mut()?;
                    c.agent_calls.extend(done.calls);
                    if let Some(b) = done.breaches.iter().find(|b| b.unconfined)
                        && c.tamper.is_none()
                    {
                        c.tamper = Some(format!("while reviewing, {}", b.message));
                    }
                    if let Some(findings) = review.blocked()
                        && let Some(e) = c.eval.as_mut()
                    {
                        e.verdict = Verdict::Discard;
                        e.discard = Some(crate::model::DiscardKind::BlockedByReview);
                        e.reason =
                            format!("blocked by review: {findings} (measured: {})", e.reason);
                    }
                    // A simplification that passed its test and its review
                    // is what gets committed.
                    if let Some(s) = review.simplified.as_ref().filter(|s| s.accepted)
                        && c.tree.as_deref() != Some(s.tree.as_str())
                    {
                        c.tree = Some(s.tree.clone());
                        c.changed_paths = s.changed_paths.clone();
                        if let Some(e) = c.eval.as_mut() {
                            e.reason = format!("{}; {}", e.reason, s.reason);
                        }
                    }
                    c.review = Some(review);
                }
            }
            Phase::Learn => {
                let out = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    let turn = m.turn(span, &o)?;
                    let driver = m.agent.driver();
                    learn::run(&turn, driver, &m.ws, &m.archive.state, m.current()?)
                })?;
                let c = self.current_mut()?;
                c.learned = Some(out.learned);
                c.commit = out.commit;
                if c.tamper.is_none() {
                    c.tamper = out.tamper;
                }
                c.agent_calls.extend(out.calls);
                self.archive.state.pending_ack = None;
                self.archive_current()?;
                failpoint::after(failpoint::Step::LearnArchived);
                let path =
                    crate::archive::history::path_of(&self.archive.dir, self.current()?.iteration);
                self.iteration_span()?.emit(Event::LearnArchived {
                    path: path.display().to_string(),
                })?;
            }
            Phase::Commit => {
                let best = self.in_phase(phase, |m, _| commit::run(&m.ws, m.current()?))?;
                if let Some(best) = best {
                    self.archive.state.best_commit = best;
                    failpoint::after(failpoint::Step::BranchAdvanced);
                }
                self.archive_current()?;
            }
            Phase::Check => {
                let outcome = self.in_phase(phase, |m, span| m.check(span))?;
                return Ok(Some(outcome));
            }
        }
        Ok(None)
    }

    /// Writes the iteration file of the iteration in flight (the
    /// projections follow at CHECK: `report::summary::sync`).
    fn archive_current(&mut self) -> Result<()> {
        let rec = archive::record_of(self.current()?, &self.archive.state);
        self.archive.write_record(rec, &self.brief)
    }

    /// A budget ran out before `phase` could spend: the iteration is cut
    /// and goes on, unmeasured, to be archived before the run stops.
    fn cut_for_budget(&mut self, phase: Phase) -> Result<()> {
        let stop = self
            .budget_stop()
            .ok_or_else(|| Error::Internal("a budget cut without a used-up budget".into()))?;
        let cut = Cut::Budget {
            phase,
            reason: stop.reason,
            detail: stop.detail,
        };
        self.iteration_span()?.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::BudgetCut,
            message: cut.reason(),
        })?;
        self.current_mut()?.cut = Some(cut);
        Ok(())
    }

    fn checkpoint(&mut self, phase: Phase) -> Result<()> {
        failpoint::before_checkpoint(phase);
        let jobs = self.executor.take_jobs();
        if let Some(c) = self.archive.state.current.as_mut() {
            c.done = phase;
            // A submitted tick's one job measures every phase: listed once.
            for j in jobs {
                if !c.jobs.contains(&j) {
                    c.jobs.push(j);
                }
            }
        }
        self.archive.save_state()?;
        let span = match &self.archive.state.current {
            Some(c) => self.archive.run.at(&c.event_id, Some(c.iteration)),
            None => self
                .archive
                .run
                .with_iteration(Some(self.archive.state.next_iteration)),
        };
        span.emit(Event::Checkpoint { phase })?;
        span.sync()?;
        failpoint::after_checkpoint(phase);
        if self.interrupt.is_set() {
            // LEARN and COMMIT archive the iteration file only; a run
            // interrupted there still leaves a summary that lists it.
            if matches!(phase, Phase::Learn | Phase::Commit) {
                summary::sync(&mut self.archive, None, &self.brief, &self.project.config)?;
            }
            span.emit(Event::Interrupted { phase: Some(phase) })?;
            return Err(Error::Interrupted);
        }
        Ok(())
    }

    /// CHECK decides first and acts second. The decision (alarms, stop,
    /// rollback, confirmation) may measure, so it is saved in the state
    /// before any of it is applied; a CHECK killed while applying re-applies
    /// the same decision instead of deciding again on a half-changed world.
    fn check(&mut self, span: &Span) -> Result<StepOutcome> {
        let cur = self.current()?.clone();
        let verdict = cur
            .eval
            .as_ref()
            .map(|e| e.verdict)
            .unwrap_or(Verdict::Invalid);
        let decision = match cur.check.clone() {
            Some(d) => d,
            None => {
                let d = check::decide(
                    &self.cx(span),
                    self.archive.history.view(),
                    &self.archive.state,
                    &cur,
                    self.budget_stop(),
                )?;
                let d = self.watch(span, cur.iteration, d)?;
                // The confirmation's job, in the record written below.
                let jobs = self.executor.take_jobs();
                let c = self.current_mut()?;
                c.check = Some(d.clone());
                for j in jobs {
                    if !c.jobs.contains(&j) {
                        c.jobs.push(j);
                    }
                }
                self.archive.save_state()?;
                failpoint::after(failpoint::Step::CheckDecided);
                d
            }
        };
        if let Some((old_tip, target)) = &decision.rollback {
            self.ws.keep_ref(
                &format!("refs/ooda/{}/diverged-{}", self.brief.name, cur.iteration),
                oid(old_tip)?,
            )?;
            self.ws.ensure(oid(target)?)?;
            self.archive.state.best_commit = target.clone();
        }
        self.archive.state.yellow = decision
            .alarms
            .iter()
            .rev()
            .find(|a| a.level == crate::model::Level::Yellow)
            .cloned();
        // The verdict marks the iteration's end. Its id is the iteration's,
        // so a CHECK run again after a kill does not record a second one.
        self.iteration_span()?.emit_once(
            &format!("{}-verdict", cur.event_id),
            Event::Verdict { verdict },
        )?;
        let mut done = self.current()?.clone();
        done.check = Some(decision.clone());
        let mut rec = archive::record_of(&done, &self.archive.state);
        if decision.stop.is_none()
            && let Some(r) = rec.as_mut()
            && r.verdict == Verdict::Keep
        {
            let (reports, calls) = self.synthesize(span, r, None, true)?;
            attach(r, reports, calls);
        }
        // After the keep's synthesizers, which the iteration waits for:
        // nothing moves it out of its final state.
        let ended = match (verdict, &cur.cut) {
            // The budget ended it before it could be measured.
            (_, Some(Cut::Budget { .. })) => TaskState::Cancelled,
            (Verdict::Crash | Verdict::Invalid, _) => TaskState::Failed,
            _ => TaskState::Succeeded,
        };
        self.iteration_span()?.task_state(
            ended,
            Some(match (&cur.cut, cur.eval.as_ref()) {
                (Some(c), _) => format!(
                    "{}: {}",
                    verdict.as_str(),
                    crate::text::clip::clip(&c.reason(), 160)
                ),
                (None, Some(e)) => format!(
                    "{}: {}",
                    verdict.as_str(),
                    crate::text::clip::clip(&e.reason, 160)
                ),
                (None, None) => verdict.as_str().to_string(),
            }),
        )?;
        self.archive.state.current = None;
        self.archive.state.next_iteration = cur.iteration + 1;
        match decision.stop {
            Some(stop) => {
                self.finish(stop.clone(), rec, true)?;
                Ok(StepOutcome::Stopped(stop, Some((cur.iteration, verdict))))
            }
            None => {
                summary::sync(&mut self.archive, rec, &self.brief, &self.project.config)?;
                failpoint::after(failpoint::Step::CheckArchived);
                self.archive.save_state()?;
                Ok(StepOutcome::Iteration {
                    iteration: cur.iteration,
                    verdict,
                })
            }
        }
    }

    /// Records a stop in the last iteration file (`rec`), the summary, the
    /// state and the events, in that order: a kill after the archive is
    /// written leaves the state as it was, and the stop is decided again.
    ///
    /// `fresh`: `rec` is the iteration CHECK just ended (not the last one
    /// archived, with the stop written in): only then may a command
    /// synthesizer be asked for its narrative, which it gave once already.
    fn finish(
        &mut self,
        stop: Stop,
        mut rec: Option<crate::model::IterationRecord>,
        fresh: bool,
    ) -> Result<()> {
        // Every run that ends states a confirmed gain, a RED one included,
        // also when it ends at the start of a tick or in PLAN.
        if self.best_unconfirmed(rec.as_ref()) {
            let iteration = rec
                .as_ref()
                .map(|r| r.iteration)
                .or_else(|| self.archive.history.last().map(|r| r.iteration))
                .unwrap_or(0);
            let span = self.archive.run.with_iteration(Some(iteration));
            // A kept commit can end its own job as a candidate can: the
            // confirmation then says so rather than being tried forever.
            let conf = match confirm::run(&self.cx(&span), &self.archive.state, iteration) {
                Err(e) if crate::run::executor::job_ended(&e).is_some_and(|j| j.by_command) => {
                    confirm::Confirmed::Failed(format!(
                        "its Slurm job ended under it: {}",
                        crate::run::executor::job_ended(&e).map_or("", |j| j.message.as_str())
                    ))
                }
                r => r?,
            };
            if let Some(r) = rec.as_mut() {
                (r.confirmation, r.confirmation_failed) = conf.into_parts();
                r.jobs.extend(self.executor.take_jobs());
            }
        }
        // The run's notes, with the stop and the confirmation in them.
        let iteration = rec.as_ref().map(|r| r.iteration).unwrap_or(stop.iteration);
        let span = self.archive.run.with_iteration(Some(iteration));
        let mut last = rec.clone().or_else(|| {
            self.archive
                .history
                .last()
                .filter(|r| r.iteration > 0)
                .cloned()
        });
        if let Some(r) = last.as_mut() {
            let (reports, calls) = self.synthesize(&span, r, Some(&stop), fresh)?;
            if let Some(rec) = rec.as_mut() {
                attach(rec, reports, calls);
            }
        }
        self.archive.state.stop = Some(stop.clone());
        summary::sync(&mut self.archive, rec, &self.brief, &self.project.config)?;
        failpoint::after(failpoint::Step::StopArchived);
        self.archive.save_state()?;
        let run = self.archive.run.with_iteration(Some(stop.iteration));
        if stop.reason.is_red() {
            run.emit(Event::RedLight {
                reason: stop.reason.as_str().into(),
                evidence: stop.detail.clone(),
            })?;
        }
        run.emit(Event::RunFinished {
            reason: stop.reason.as_str().into(),
            detail: stop.detail.clone(),
        })?;
        if let Some(cmd) = &self.project.config.watch.notify {
            // A failing notify is the run's trouble, not the last iteration's.
            crate::report::notify::send(
                cmd,
                &self.brief.name,
                &stop,
                &self.archive.dir.join("summary.md"),
                &self.archive.run.with_iteration(None),
            );
        }
        // Last: the stop is recorded and announced whatever the judge does
        // (it may take its timeout, be interrupted, or fail). It works at
        // the run's level, not in the last iteration, and the summary is
        // written again after it whatever it did.
        let at_run = self.archive.run.with_iteration(None);
        let judged = match self.judge(&at_run, &stop) {
            Ok(rec) => rec,
            Err(e) => {
                let _ = at_run.emit(Event::Anomaly {
                    kind: crate::model::AnomalyKind::JudgeFailed,
                    message: format!("the judge could not judge the run: {e}"),
                });
                None
            }
        };
        summary::sync(&mut self.archive, judged, &self.brief, &self.project.config)
    }

    /// Whether the current best still lacks a confirmation test: none in
    /// the archive before `rec` (the iteration about to be written), and
    /// none measured or tried and failed in `rec` itself (CHECK's test of
    /// this iteration is not run a second time). CHECK asks the same.
    fn best_unconfirmed(&self, rec: Option<&crate::model::IterationRecord>) -> bool {
        let state = &self.archive.state;
        if state.best_commit == state.start_commit {
            return false;
        }
        let h = self.archive.history.view();
        let earlier = h.before(rec.map_or(h.len(), |r| r.iteration as usize));
        let in_rec = rec.is_some_and(|r| {
            r.confirmation_failed.is_some()
                || r.confirmation
                    .as_ref()
                    .is_some_and(|c| c.best == state.best_commit)
        });
        // An unreadable archive cannot show a confirmation: ask for one.
        !in_rec
            && earlier
                .confirmation_of(&state.best_commit)
                .map_or(true, |c| c.is_none())
    }

    /// EVALUATE's decision, made by the eval-runner as the subagent it is:
    /// its commands hang under its delegation in the trace, and its
    /// comparison report is archived like any subagent's. A cut iteration
    /// measures nothing: the runner is not dispatched.
    fn evaluated(
        &self,
        span: &Span,
        o: &Orientation,
    ) -> Result<(
        crate::model::EvalOutcome,
        Option<crate::model::SubagentReport>,
    )> {
        let cur = self.current()?;
        let (seed, history) = (self.archive.state.seed, self.archive.history.view());
        let runner = self
            .roster
            .with_role(crate::model::Role::Evaluate)
            .next()
            .filter(|_| cur.cut.is_none());
        let Some(def) = runner else {
            return Ok((evaluate::run(&self.cx(span), history, cur, o, seed)?, None));
        };
        let started = crate::subagents::dispatch::begin_alone(span, def, "builtin")?;
        let outcome = evaluate::run(&self.cx(&started.span), history, cur, o, seed)?;
        let answer = crate::subagents::dispatch::Answer {
            body: serde_json::json!({
                "verdict": outcome.verdict,
                "discard": outcome.discard,
                "reason": outcome.reason,
                "guards": outcome.guards,
                "comparison": outcome.comparison,
            }),
            ..Default::default()
        };
        let (report, ..) = crate::subagents::dispatch::end(
            started,
            &self.archive.dir,
            cur.iteration,
            def,
            "builtin".into(),
            answer,
            None,
        )?;
        Ok((outcome, Some(report)))
    }

    /// The analyzers the iteration in flight triggers (none before it has
    /// one, or when it was cut: a cut iteration measures nothing).
    fn analyzers_due(&self) -> Vec<&crate::subagents::Definition> {
        let Some(cur) = &self.archive.state.current else {
            return Vec::new();
        };
        if cur.cut.is_some() {
            return Vec::new();
        }
        let h = self.archive.history.view();
        analyze::due(
            self.roster.with_role(crate::model::Role::Analyze),
            h.before(cur.iteration as usize).recent(),
            cur.iteration,
            self.brief.analyze.is_some(),
        )
    }

    /// Dispatches the synthesizers the moment triggers (a keep, the end of
    /// the run) for the iteration `rec` about to be archived; returns their
    /// reports and model calls.
    fn synthesize(
        &self,
        span: &Span,
        rec: &crate::model::IterationRecord,
        stop: Option<&Stop>,
        fresh: bool,
    ) -> Result<(
        Vec<crate::model::SubagentReport>,
        Vec<crate::model::AgentCall>,
    )> {
        use crate::subagents::definition::Trigger;
        let keep = rec.verdict == Verdict::Keep;
        let defs: Vec<_> = self
            .roster
            .with_role(crate::model::Role::Synthesize)
            .filter(|d| {
                d.triggers.iter().any(|t| {
                    (keep && *t == Trigger::Keep) || (stop.is_some() && *t == Trigger::RunEnd)
                })
            })
            .collect();
        if defs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let i = (rec.iteration as usize).min(self.archive.history.len());
        let before = self.archive.history.view().before(i);
        let o = orient::run(before, &self.brief, &self.project.config)?;
        let turn = self.turn_at(span, &o, before, rec.iteration);
        let done = synthesize::run(
            &turn,
            &defs,
            &self.agent,
            &self.archive.state,
            rec,
            stop,
            fresh,
        )?;
        Ok((done.reports, done.calls))
    }

    /// The judges (`role: judge`) over the finished run, then the summary
    /// again with their verdict in it.
    fn judge(&mut self, span: &Span, stop: &Stop) -> Result<Option<crate::model::IterationRecord>> {
        use crate::subagents::definition::Trigger;
        let defs: Vec<_> = self
            .roster
            .with_role(crate::model::Role::Judge)
            .filter(|d| d.triggers.contains(&Trigger::RunEnd))
            .collect();
        // Past a spending limit the user set, or after an agent broke out
        // of its fence, no further agent is run.
        let refused = matches!(
            stop.reason,
            StopReason::BudgetCost
                | StopReason::BudgetTokens
                | StopReason::RedTamper
                | StopReason::RedScope
                | StopReason::RedAnomaly
        );
        if defs.is_empty() || refused {
            return Ok(None);
        }
        let view = self.archive.history.view();
        let history = view.all()?;
        let budget = self.project.config.budget_for(&self.brief);
        let observed = crate::report::summary::Observed::of(
            &self.archive.dir,
            view,
            &budget,
            Some(stop),
            Some(self.archive.state.created_at),
        )?;
        let Some(evaluation) = observed.evaluation else {
            return Ok(None);
        };
        let o = orient::run(view, &self.brief, &self.project.config)?;
        let iteration = history.last().map(|r| r.iteration).unwrap_or(0);
        let turn = self.turn_at(span, &o, view, iteration);
        let done = judge::run(&turn, &defs, &self.agent, history, stop, &evaluation)?;
        for b in &done.breaches {
            span.emit(Event::Anomaly {
                kind: crate::model::AnomalyKind::JudgeFailed,
                message: format!("the judge changed files it must not touch: {}", b.message),
            })?;
        }
        // The judge's report goes on the last iteration's file; its spend
        // stays out of that iteration's tokens (the judge ran after it,
        // and the spike rule and the grades read them): it is in Metrics,
        // per subagent, and in its report.
        Ok(self.archive.history.last().cloned().map(|mut r| {
            attach(&mut r, done.reports, Vec::new());
            r
        }))
    }

    /// The anomaly rules over the trace as it stands after this iteration:
    /// what is new is logged (once per rule and node), and a rule
    /// `anomalies.stop_on` names stops the run RED.
    fn watch(
        &self,
        span: &Span,
        iteration: u32,
        mut d: crate::archive::state::CheckOutcome,
    ) -> Result<crate::archive::state::CheckOutcome> {
        let w = &self.project.config.watch;
        // The live log only (bounded by its seal, `events/segments.rs`): a
        // finding about a node in a sealed segment is not found again, since
        // the node is not read either.
        let records = crate::events::read_live(&self.archive.dir)?;
        let runs = crate::report::trace::build(&records);
        // What the rules found before a seal stays found: they look at
        // the whole history, and an acknowledged finding must not return.
        let mut logged = crate::report::anomalies::logged(&records);
        logged.extend(crate::report::anomalies::logged(
            &crate::events::segments::sealed_anomalies(&self.archive.dir),
        ));
        let history = self.archive.history.view();
        let (tokens, cost_usd) = history.spent();
        let spent = crate::report::anomalies::Spent {
            iterations: history.len().saturating_sub(1) as u32,
            wall_seconds: (chrono::Utc::now() - self.archive.state.created_at)
                .num_milliseconds()
                .max(0) as f64
                / 1000.0,
            tokens,
            cost_usd,
        };
        let budget = self.project.config.budget_for(&self.brief);
        for f in crate::report::anomalies::detect(&runs, history.facts(), &budget, spent, w) {
            let key = f.key();
            if logged.contains(&key) {
                continue;
            }
            // Tagged with the iteration it is about (a spike seen later, a
            // run-wide rate: none), logged where it was found.
            span.with_iteration(f.iteration).emit(Event::AnomalyFound {
                rule: f.rule.to_string(),
                severity: f.severity.to_string(),
                evidence: f.evidence.clone(),
                node: f.node.clone(),
                fingerprint: key,
            })?;
            if w.stop_on.iter().any(|r| r == f.rule)
                && d.stop.as_ref().is_none_or(|s| !s.reason.is_red())
            {
                d.stop = Some(Stop {
                    reason: crate::model::StopReason::RedAnomaly,
                    detail: format!(
                        "{}: {} (ooda.yaml's anomalies.stop_on names `{}`: look at it with `ooda trace {}`, then raise the threshold or `ooda ack`)",
                        f.rule, f.evidence, f.rule, self.brief.name
                    ),
                    at: chrono::Utc::now(),
                    iteration,
                });
            }
        }
        Ok(d)
    }

    fn budget_stop(&self) -> Option<Stop> {
        budget::stop(
            &self.project.config.budget_for(&self.brief),
            &self.archive.state,
            self.archive.history.view(),
        )
    }

    /// Iteration 0: measure the starting commit and calibrate the noise.
    fn baseline(&mut self) -> Result<()> {
        let span = self.archive.run.with_iteration(Some(0));
        let id = span.new_id();
        let span = span.child_with_id(
            &id,
            Event::IterationStarted {
                brief_hash: self.brief_hash.clone(),
            },
        )?;
        span.task_state(TaskState::Running, Some("measuring the start".into()))?;
        let rec = match baseline::run(&self.cx(&span), &self.archive.state, &self.brief_hash) {
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
        failpoint::after(failpoint::Step::BaselineArchived);
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

/// Adds subagents' reports and calls to a record about to be archived.
fn attach(
    r: &mut crate::model::IterationRecord,
    reports: Vec<crate::model::SubagentReport>,
    calls: Vec<crate::model::AgentCall>,
) {
    r.tokens += calls.iter().map(|c| c.usage.total()).sum::<u64>();
    r.cost_usd += calls.iter().filter_map(|c| c.usage.cost_usd).sum::<f64>();
    // A stop archived after the iteration's own CHECK synthesized again:
    // the newer report replaces the older one of the same subagent.
    let mut reports = reports;
    for n in &mut reports {
        if let Some(old) = r
            .subagents
            .iter()
            .find(|o| o.name == n.name && o.role == n.role)
            && n.narrative.is_none()
        {
            // The narrative was asked for once, when the iteration was kept.
            n.narrative.clone_from(&old.narrative);
        }
    }
    r.subagents.retain(|old| {
        !reports
            .iter()
            .any(|n| n.name == old.name && n.role == old.role)
    });
    r.subagents.extend(reports);
    r.agent_calls.extend(calls);
}

/// ORIENT's output for a Brief with this archive, as the next PLAN gets it.
pub fn orientation_of(
    history: crate::archive::history::View,
    brief: &Brief,
    config: &Config,
) -> Result<Orientation> {
    orient::run(history, brief, config)
}

/// The Brief file's git blob hash: recorded in every iteration, and how an
/// edit is noticed.
pub(crate) fn brief_hash(path: &Path) -> Result<String> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    git2::Oid::hash_object(git2::ObjectType::Blob, &bytes)
        .map(|o| o.to_string())
        .map_err(|e| Error::git("hashing the Brief", e))
}

/// A commit hash read from the state.
pub(crate) fn oid(s: &str) -> Result<git2::Oid> {
    git2::Oid::from_str(s).map_err(|e| Error::Corrupt {
        path: std::path::PathBuf::from("state.json"),
        message: format!("`{s}` is not a commit hash: {e}"),
    })
}
