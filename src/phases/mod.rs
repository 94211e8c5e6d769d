//! The iteration machine: OBSERVE, ORIENT, PLAN, EXECUTE,
//! EVALUATE, REVIEW, LEARN, COMMIT, CHECK.
//!
//! The machine is small on purpose. It locks the Brief's archive, then loops:
//! ask [`next`] (a pure function of the checkpoint and a few facts) what to
//! do, run that phase, store its output in `state.json`, checkpoint.
//! Each phase lives in its own file, gets the read-only [`Step`] (what a
//! driver and a subagent get too) and whatever of the machine it reads,
//! and returns a typed output that applies itself to the iteration in
//! flight (`apply`), so `Machine::run` is one short arm per phase. The
//! phases whose work is the machine's own writes keep them in their files:
//! CHECK applies its saved decision (`check.rs`), the end of a run records
//! its stop (`finish.rs`), iteration 0 archives the baseline
//! (`baseline.rs`), each in its crash-safe order. The iteration file and
//! `summary.md` are projections of the stored outputs, written after LEARN,
//! COMMIT and CHECK and when a run stops.
//!
//! A tick resumes after the last checkpoint, so a process killed at any
//! instant repeats at most the phase it was in (measurements may be re-run;
//! nothing archived is redone or lost) and iteration numbers never skip or
//! repeat. LEARN is the gate: an iteration ends only after its `iter-NNN.md`
//! is written and read back (`summary.md` follows at CHECK). `failpoint.rs` names
//! every point where the tests kill the process to prove it.

pub(crate) mod replay;

mod baseline;
mod budget;
mod check;
mod commit;
mod confirm;
mod evaluate;
mod execute;
pub mod failpoint;
mod finish;
mod learn;
mod next;
mod observe;
mod orient;
mod plan;
mod review;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::archive::state::InFlight;
use crate::archive::{self, Archive};
use crate::brief::Brief;
use crate::config::Config;
use crate::driver::{MainAgent, Step};
use crate::error::{Error, Result};
use crate::events::{Event, Progress, Sink, Span};
use crate::model::Orientation;
use crate::model::{Cut, Stop, StopReason, TaskState, Verdict};
use crate::project::Project;
use crate::report::summary;
use crate::run::executor::{Executor, Local};
use crate::run::interrupt::Interrupt;
use crate::workspace::Workspace;

pub(crate) use crate::model::Phase;
pub(crate) use next::{Beside, Facts, Next, next};

/// What one step of the machine did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepOutcome {
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

pub(crate) use crate::events::Print;

/// One Brief's iteration machine, holding its lock while it lives.
pub(crate) struct Machine<'a> {
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
    pub(crate) fn open(
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
        // The model tiers' keys are for ooda's own requests: no command of
        // the Brief's gets them (a candidate's benchmark would print them).
        crate::run::exec::withhold(
            project
                .config
                .models
                .values()
                .filter_map(|t| t.api_key_env.clone()),
        );
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
            project.slurm_dir(&brief.name),
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

    pub(crate) fn brief(&self) -> &Brief {
        &self.brief
    }

    /// What the run achieved so far: the headline every report leads with.
    pub(crate) fn headline(&self) -> Result<crate::report::headline::Headline> {
        let view = self.archive.history.view();
        let confirmed = view.confirmation_of(&self.archive.state.best_commit)?;
        Ok(crate::report::headline::Headline::of(
            view.facts(),
            self.brief.metric.direction,
            confirmed.as_ref(),
        ))
    }

    /// The run's span, for callers that log around the machine (the scheduler).
    pub(crate) fn run_span(&self) -> &Span {
        &self.archive.run
    }

    /// The iteration the next step works on.
    pub(crate) fn iteration(&self) -> u32 {
        let s = &self.archive.state;
        s.current
            .as_ref()
            .map(|c| c.iteration)
            .unwrap_or(s.next_iteration)
    }

    /// One step: the baseline, or one iteration (or the rest of an interrupted one).
    pub(crate) fn step(&mut self) -> Result<StepOutcome> {
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
        // What `ooda status` shows as the Brief's disk use, as of this
        // step: measured here once, whoever drove the step (tick, run,
        // a schedule, the daemon).
        crate::archive::disk::Usage::refresh(self.project, &self.brief.name);
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
            let facts = self.facts()?;
            match next(self.archive.state.current.as_ref(), &facts) {
                Next::Red => return Err(self.refuse_red()),
                Next::OverBudget => return Err(self.refuse_budget()),
                Next::Unstop => {
                    // The human raised the budget, or what decided a stall
                    // or a red light: the run continues, and says why.
                    if let Some(stop) = self.archive.state.stop.take()
                        && !stop.reason.is_budget()
                    {
                        self.archive.run.emit(Event::StopLifted {
                            reason: stop.reason,
                            detail: format!(
                                "{} no longer stops the run: decided again with ooda.yaml as it is now (`{}`), it does not hold",
                                stop.reason.as_str(),
                                stop.setting.as_deref().unwrap_or_default()
                            ),
                        })?;
                    }
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
                    // again; an end the candidate's command may have caused
                    // (its own scancel, while one of its steps ran) only a
                    // bounded number of times. The iteration file lists the
                    // lost job with whose fault it was, so the morning
                    // shows the cluster got in the way.
                    if let Err(e) = &ran
                        && let Some(lost) = crate::run::executor::job_ended(e)
                    {
                        let candidates = [
                            self.ws.cand_dir.clone(),
                            self.ws.dir.join(crate::driver::step::SIMPLIFY_DIR),
                        ];
                        let by_candidate =
                            phase == Phase::Evaluate && lost.by_candidate(&candidates);
                        let mut job = lost.job.clone();
                        if by_candidate {
                            job.fault = Some("command".into());
                        }
                        self.archive.run.emit(Event::ClusterFault {
                            kind: job.fault.clone().unwrap_or_default(),
                            job: job.id.clone(),
                            state: job.lost.clone().unwrap_or_default(),
                            message: lost.message.clone(),
                        })?;
                        if let Some(c) = self.archive.state.current.as_mut() {
                            c.jobs.push(job);
                            if by_candidate {
                                c.lost_jobs.push(lost.message.clone());
                            }
                            self.archive.save_state()?;
                        }
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
        let raise = StopReason::parse(reason)
            .and_then(|r| check::what_to_raise(r, &self.project.config))
            .map(|r| {
                format!(
                    " (or {r} in ooda.yaml if it is too strict: the run then goes on by itself)"
                )
            })
            .unwrap_or_default();
        Error::Red(format!(
            "{} is RED since iteration {iteration}: {reason} — {detail}. Inspect {}, then run `ooda ack {}` to continue{raise}.",
            self.brief.name,
            crate::archive::layout::Layout::of(&self.archive.dir)
                .summary()
                .display(),
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

    fn facts(&self) -> Result<Facts> {
        let s = &self.archive.state;
        let budget = self.budget_stop();
        let stop_lifted = match &s.stop {
            Some(stop) => check::lifted(
                stop,
                self.archive.history.view(),
                &self.brief,
                &self.project.config,
            )?,
            None => false,
        };
        Ok(Facts {
            stop: s.stop.as_ref().map(|st| st.reason),
            stop_lifted,
            baseline: s.next_iteration > 0,
            budget_out: budget.is_some(),
            spend_out: budget.is_some_and(|b| b.reason != StopReason::BudgetIterations),
            worktrees: self.ws.cand_dir.join(".git").exists()
                && self.ws.base_dir.join(".git").exists(),
            analyzer_due: !self.analyzers_due().is_empty(),
        })
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
            .into_task())
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

    /// The step of `iteration`, logging under `span`, that sees `history`
    /// and `orientation`.
    fn step_at<'s>(
        &'s self,
        span: &'s Span,
        orientation: &'s Orientation,
        history: crate::archive::history::View<'s>,
        iteration: u32,
    ) -> Step<'s> {
        Step {
            brief: &self.brief,
            config: &self.project.config,
            root: &self.project.root,
            dir: &self.archive.dir,
            worktrees: &self.ws.dir,
            cand_dir: &self.ws.cand_dir,
            base_dir: &self.ws.base_dir,
            history,
            orientation,
            iteration,
            seed: self.archive.state.seed,
            run_started: self.archive.state.created_at,
            span,
            cancel: self.interrupt.flag(),
            stop: Some(self.interrupt.stop_flag()),
            executor: self.executor.as_ref(),
        }
    }

    /// The step of the iteration in flight: it sees the iterations before
    /// it (once LEARN wrote it, the in-flight iteration is in the archive).
    fn step_in<'s>(&'s self, span: &'s Span, orientation: &'s Orientation) -> Result<Step<'s>> {
        let c = self.current()?;
        let before = self.archive.history.view().before(c.iteration as usize);
        Ok(self.step_at(span, orientation, before, c.iteration))
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

    /// Runs one phase and stores its output (each phase's output applies
    /// itself); the outcome when the phase ended the step (PLAN found
    /// nothing to try, CHECK finished the iteration).
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
                let oriented = self.in_phase(phase, |m, _| {
                    let before = m
                        .archive
                        .history
                        .view()
                        .before(m.current()?.iteration as usize);
                    orient::run(before, &m.brief, &m.project.config).map(orient::Oriented)
                })?;
                oriented.apply(self.current_mut()?);
            }
            Phase::Plan => {
                let planned = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    plan::run(&m.step_in(span, &o)?, &m.ws, m.agent.driver())
                })?;
                if let Some(detail) = planned.apply(self.current_mut()?) {
                    return self.stalled(detail).map(Some);
                }
            }
            Phase::Execute => {
                let executed = self.in_phase(phase, |m, span| {
                    let o = m.orientation()?;
                    execute::run(&m.step_in(span, &o)?, m.agent.driver(), &m.ws, m.current()?)
                })?;
                if let Some(out) = executed {
                    out.apply(self.current_mut()?);
                }
            }
            Phase::Evaluate => {
                let evaluated = self.in_phase(phase, |m, span| {
                    let (o, cur) = (m.orientation()?, m.current()?);
                    let step = m.step_in(span, &o)?;
                    evaluate::phase(&step, &m.ws, &m.roster, &m.agent, cur, beside)
                })?;
                evaluated.apply(self.current_mut()?);
            }
            Phase::Review => {
                let reviewed = self.in_phase(phase, |m, span| {
                    let (o, start) = (m.orientation()?, &m.archive.state.start_commit);
                    let step = m.step_in(span, &o)?;
                    review::run(&step, &m.ws, &m.roster, &m.agent, m.current()?, start)
                })?;
                if let Some(r) = reviewed {
                    r.apply(self.current_mut()?);
                }
            }
            Phase::Learn => {
                let learnt = self.in_phase(phase, |m, span| {
                    let (o, state) = (m.orientation()?, &m.archive.state);
                    let step = m.step_in(span, &o)?;
                    learn::run(&step, m.agent.driver(), &m.ws, state, m.current()?)
                })?;
                learnt.apply(self.current_mut()?);
                self.archive_learned()?;
            }
            Phase::Commit => {
                let committed = self.in_phase(phase, |m, _| commit::run(&m.ws, m.current()?))?;
                committed.apply(&mut self.archive.state);
                self.archive_current()?;
            }
            Phase::Check => return self.in_phase(phase, |m, span| m.check(span)).map(Some),
        }
        Ok(None)
    }

    /// LEARN's gate: the iteration file is written (with the human's
    /// acknowledgement, which it now carries) before the iteration may end.
    fn archive_learned(&mut self) -> Result<()> {
        self.archive.state.pending_ack = None;
        self.archive_current()?;
        failpoint::after(failpoint::Point::LearnArchived);
        let path = crate::archive::history::path_of(&self.archive.dir, self.current()?.iteration);
        self.iteration_span()?.emit(Event::LearnArchived {
            path: path.display().to_string(),
        })?;
        Ok(())
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

    /// The analyzers the iteration in flight triggers (none before it has
    /// one, or when it was cut: a cut iteration measures nothing).
    fn analyzers_due(&self) -> Vec<&crate::subagents::Definition> {
        match &self.archive.state.current {
            Some(cur) => crate::subagents::analyzer::due_for(
                &self.roster,
                self.archive.history.view(),
                cur,
                &self.brief,
            ),
            None => Vec::new(),
        }
    }

    /// The archive's statistics as they stand now (after the iteration
    /// CHECK ends), as CHECK decides with them.
    fn orientation_now(&self) -> Orientation {
        Orientation::of_view(
            self.archive.history.view(),
            self.brief.metric.noise_floor,
            self.project.config.defaults.alpha,
            self.project.config.defaults.pairs,
        )
    }

    /// The synthesizers the moment triggers (a keep, the end of the run),
    /// for the iteration `rec` about to be archived: their reports and
    /// model calls. They see the archive before `rec`.
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
        let defs = crate::subagents::synthesizer::due(&self.roster, rec, stop);
        if defs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let i = (rec.iteration as usize).min(self.archive.history.len());
        let before = self.archive.history.view().before(i);
        let o = orient::run(before, &self.brief, &self.project.config)?;
        let step = self.step_at(span, &o, before, rec.iteration);
        let state = &self.archive.state;
        let done =
            crate::subagents::synthesizer::run(&step, &defs, &self.agent, state, rec, stop, fresh)?;
        Ok((done.reports, done.calls))
    }

    /// The judges (`role: judge`) over the finished run, which they see
    /// whole: the last iteration's record with their reports, for the
    /// summary written after them.
    fn judge(&self, span: &Span, stop: &Stop) -> Result<Option<crate::model::IterationRecord>> {
        let defs = crate::subagents::judge::due(&self.roster, stop);
        if defs.is_empty() {
            return Ok(None);
        }
        let view = self.archive.history.view();
        let history = view.all()?;
        let observed = summary::Observed::of(
            &self.archive.dir,
            view,
            &self.project.config.budget_for(&self.brief),
            Some(stop),
            Some(self.archive.state.created_at),
        )?;
        // The judges are shown ooda's own grades: none, no judging.
        let Some(evaluation) = observed.evaluation else {
            return Ok(None);
        };
        let o = orient::run(view, &self.brief, &self.project.config)?;
        let iteration = history.last().map_or(0, |r| r.iteration);
        let step = self.step_at(span, &o, view, iteration);
        crate::subagents::judge::judged(&step, &defs, &self.agent, history, stop, &evaluation)
    }

    fn budget_stop(&self) -> Option<Stop> {
        budget::stop(
            &self.project.config.budget_for(&self.brief),
            &self.archive.state,
            self.archive.history.view(),
        )
    }
}

/// ORIENT's output for a Brief with this archive, as the next PLAN gets it.
pub(crate) fn orientation_of(
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
        path: std::path::PathBuf::from(crate::archive::layout::Layout::STATE),
        message: format!("`{s}` is not a commit hash: {e}"),
    })
}
