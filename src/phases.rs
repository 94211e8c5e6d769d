//! The iteration machine (DESIGN.md §4): OBSERVE, ORIENT, PLAN, EXECUTE,
//! EVALUATE, REVIEW, LEARN, COMMIT, CHECK.
//!
//! Each phase ends with a checkpoint in `state.json` that records the phase
//! and its output. A tick resumes after the last checkpoint, so a process
//! killed at any instant repeats at most the phase it was in (measurements
//! may be re-run; nothing archived is redone or lost) and iteration numbers
//! never skip or repeat. LEARN is the gate: an iteration ends only after its
//! `iter-NNN.md` is written, read back, and `summary.md` regenerated.
//!
//! Testing hook: `OODA_FAILPOINT=after:<phase>` makes the process SIGKILL
//! itself right after that phase's checkpoint, and
//! `OODA_FAILPOINT=before-checkpoint:<phase>` right before it (after the
//! phase's side effects). Integration tests use it to prove resumption.

use std::path::PathBuf;
use std::time::Instant;

use chrono::Utc;
use serde::{Deserialize, Serialize};

use crate::brief::{Brief, Direction};
use crate::driver::{MainAgent, builtin};
use crate::error::{Error, Result};
use crate::eval::{self, EvalOutcome, Evaluator, Side, Worktree};
use crate::events::{Event, EventLog};
use crate::history::{self, IterationRecord, Prediction, RenderContext, Verdict};
use crate::interrupt::Interrupt;
use crate::knobs::{self, Point};
use crate::lock::BriefLock;
use crate::plan;
use crate::project::Project;
use crate::state::{self, InFlight, Loaded, State, Stop, StopReason};
use crate::stats::SplitMix64;
use crate::summary;
use crate::workspace::Workspace;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Observe,
    Orient,
    Plan,
    Execute,
    Evaluate,
    Review,
    Learn,
    Commit,
    Check,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Observe => "observe",
            Phase::Orient => "orient",
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Evaluate => "evaluate",
            Phase::Review => "review",
            Phase::Learn => "learn",
            Phase::Commit => "commit",
            Phase::Check => "check",
        }
    }
}

/// Consecutive failed iterations that stop the run (red light).
const FAILURE_STREAK: usize = 5;
/// Scope violations in one run that stop it (red light).
const SCOPE_VIOLATIONS: usize = 3;
/// Consecutive non-keeps after which the run is `stalled`.
const STALL_AFTER: usize = 10;

/// What one step of the machine did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    Baseline,
    Iteration {
        iteration: u32,
        verdict: Verdict,
    },
    /// The run ended in this step; the stop is recorded everywhere.
    Stopped(Stop),
    /// The run had already ended (done or stalled): nothing to do.
    Finished(Stop),
}

pub struct Runner<'a> {
    project: &'a Project,
    brief_arg: String,
    pub brief: Brief,
    brief_text_hash: String,
    pub dir: PathBuf,
    ws: Workspace,
    pub state: State,
    pub history: Vec<IterationRecord>,
    events: EventLog,
    interrupt: &'a Interrupt,
    progress: Box<dyn Fn(&str) + 'a>,
    run_event: String,
    /// Report every command (`-v`).
    pub verbose: bool,
    _lock: BriefLock,
}

fn brief_hash(path: &std::path::Path) -> Result<String> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    git2::Oid::hash_object(git2::ObjectType::Blob, &bytes)
        .map(|o| o.to_string())
        .map_err(|e| Error::git("hashing the Brief", e))
}

fn failpoint(when: &str, phase: Phase) {
    if let Ok(fp) = std::env::var("OODA_FAILPOINT")
        && fp == format!("{when}:{}", phase.as_str())
    {
        // SIGKILL, not exit: the test must see exactly what kill -9 leaves.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

impl<'a> Runner<'a> {
    /// Locks the Brief and loads (or rebuilds, or starts) its state.
    pub fn open(
        project: &'a Project,
        brief_arg: &str,
        interrupt: &'a Interrupt,
        progress: Box<dyn Fn(&str) + 'a>,
    ) -> Result<Runner<'a>> {
        let brief = project.load_brief(brief_arg)?;
        MainAgent::for_brief(&brief)?;
        let dir = project.iterations_dir(&brief.name);
        crate::atomic::create_dir_all(&dir)?;
        let lock = BriefLock::acquire(&dir)?;
        let hash = brief_hash(&brief.path)?;
        let ws = Workspace::open(
            &project.root,
            &project.worktrees_dir(&brief.name),
            &brief.name,
        )?;
        let history = history::load(&dir)?;
        let mut warnings = Vec::new();
        let loaded = state::load(&dir)?;
        let state = match loaded {
            Loaded::Ok(s) => *s,
            other => {
                if let Loaded::Corrupt { moved_to, message } = &other {
                    warnings.push(format!(
                        "{} was unreadable ({message}); moved it to {} and rebuilt the state from {}",
                        State::path(&dir).display(),
                        moved_to.display(),
                        dir.display()
                    ));
                }
                match State::rebuild(&brief.name, &hash, &history, |c| ws.commit_exists(c)) {
                    Some(s) => s,
                    None => new_state(&brief, &hash, &ws)?,
                }
            }
        };
        let mut events = EventLog::open(&dir, &state.run_id)?;
        let run_event = format!("run-{}", state.run_id);
        for w in &warnings {
            progress(w);
            events.emit(
                None,
                Some(&run_event),
                Event::Anomaly {
                    kind: "state_rebuilt".into(),
                    message: w.clone(),
                },
            )?;
        }
        let mut runner = Runner {
            project,
            brief_arg: brief_arg.to_string(),
            brief,
            brief_text_hash: hash,
            dir,
            ws,
            state,
            history,
            events,
            interrupt,
            progress,
            run_event,
            verbose: false,
            _lock: lock,
        };
        if runner.state.next_iteration == 0
            && runner.history.is_empty()
            && runner.state.current.is_none()
        {
            let s = &runner.state;
            let ev = Event::RunStarted {
                brief: s.brief.clone(),
                start_commit: s.start_commit.clone(),
                seed: s.seed,
            };
            let id = runner.run_event.clone();
            runner.events.emit_with_id(&id, None, None, ev)?;
        }
        runner.state.save(&runner.dir)?;
        Ok(runner)
    }

    /// Appends an event under `parent` (default: the run), for callers that
    /// drive the machine, such as the scheduler recording its ticks.
    pub fn emit_event(
        &mut self,
        iteration: Option<u32>,
        parent: Option<&str>,
        event: Event,
    ) -> Result<String> {
        let parent = parent.unwrap_or(&self.run_event).to_string();
        self.events.emit(iteration, Some(&parent), event)
    }

    fn say(&self, msg: &str) {
        (self.progress)(&format!("[{}] {msg}", self.brief.name));
    }

    fn checkpoint(&mut self, phase: Phase) -> Result<()> {
        failpoint("before-checkpoint", phase);
        if let Some(c) = self.state.current.as_mut() {
            c.done = phase;
        }
        self.state.save(&self.dir)?;
        let (iteration, parent) = match &self.state.current {
            Some(c) => (Some(c.iteration), c.event_id.clone()),
            None => (Some(self.state.next_iteration), self.run_event.clone()),
        };
        self.events
            .emit(iteration, Some(&parent), Event::Checkpoint { phase })?;
        self.events.sync()?;
        failpoint("after", phase);
        if self.interrupt.is_set() {
            self.events.emit(
                iteration,
                Some(&parent),
                Event::Interrupted { phase: Some(phase) },
            )?;
            return Err(Error::Interrupted);
        }
        Ok(())
    }

    fn iteration_event(&self) -> String {
        self.state
            .current
            .as_ref()
            .map(|c| c.event_id.clone())
            .unwrap_or_else(|| self.run_event.clone())
    }

    /// Runs a phase body between phase_started / phase_finished events.
    fn phase<T>(
        &mut self,
        phase: Phase,
        body: impl FnOnce(&mut Self, &str) -> Result<T>,
    ) -> Result<T> {
        let iteration = self
            .state
            .current
            .as_ref()
            .map(|c| c.iteration)
            .unwrap_or(self.state.next_iteration);
        let parent = self.iteration_event();
        let id = self.events.emit(
            Some(iteration),
            Some(&parent),
            Event::PhaseStarted { phase },
        )?;
        self.say(&format!(
            "iteration {iteration}: {}",
            phase.as_str().to_uppercase()
        ));
        let t = Instant::now();
        let out = body(self, &id)?;
        self.events.emit(
            Some(iteration),
            Some(&id),
            Event::PhaseFinished {
                phase,
                seconds: t.elapsed().as_secs_f64(),
            },
        )?;
        Ok(out)
    }

    /// One step: the baseline, or one iteration (or the rest of an interrupted one).
    pub fn step(&mut self) -> Result<StepOutcome> {
        self.observe_brief()?;
        if let Some(stop) = self.state.stop.clone() {
            if stop.reason.is_red() {
                return Err(Error::Red(format!(
                    "{} is RED since iteration {}: {} — {}. Inspect {}, then run `ooda ack {}` to continue.",
                    self.brief.name,
                    stop.iteration,
                    stop.reason.as_str(),
                    stop.detail,
                    self.dir.join("summary.md").display(),
                    self.brief.name
                )));
            }
            if stop.reason.is_budget() {
                match self.budget_stop() {
                    Some(s) => {
                        return Err(Error::Budget(format!(
                            "{} is stopped: {} — {}. Raise `budget` in {} to continue.",
                            self.brief.name,
                            s.reason.as_str(),
                            s.detail,
                            self.brief.path.display()
                        )));
                    }
                    None => {
                        // The human raised the budget: the run continues.
                        self.state.stop = None;
                        self.state.save(&self.dir)?;
                    }
                }
            } else {
                return Ok(StepOutcome::Finished(stop));
            }
        }
        if self.state.next_iteration == 0 {
            self.baseline()?;
            return Ok(StepOutcome::Baseline);
        }
        if self.state.current.is_none() {
            if let Some(stop) = self.budget_stop() {
                self.finish(stop.clone())?;
                return Ok(StepOutcome::Stopped(stop));
            }
            self.begin_iteration()?;
        } else {
            let c = self
                .state
                .current
                .as_ref()
                .map(|c| (c.iteration, c.done))
                .unwrap_or((0, Phase::Observe));
            self.say(&format!(
                "resuming iteration {} after {}",
                c.0,
                c.1.as_str().to_uppercase()
            ));
            let parent = self.iteration_event();
            self.events.emit(
                Some(c.0),
                Some(&parent),
                Event::IterationResumed { after_phase: c.1 },
            )?;
        }
        self.resume()
    }

    /// Re-reads the Brief: edits take effect at the next iteration.
    fn observe_brief(&mut self) -> Result<()> {
        let brief = self.project.load_brief(&self.brief_arg)?;
        MainAgent::for_brief(&brief)?;
        let hash = brief_hash(&brief.path)?;
        if hash != self.state.brief_hash {
            let ev = Event::BriefChanged {
                old_hash: self.state.brief_hash.clone(),
                new_hash: hash.clone(),
            };
            let parent = self.run_event.clone();
            self.events.emit(None, Some(&parent), ev)?;
            self.state.brief_hash = hash.clone();
        }
        self.brief = brief;
        self.brief_text_hash = hash;
        Ok(())
    }

    fn begin_iteration(&mut self) -> Result<()> {
        let iteration = self.state.next_iteration;
        let id = self.events.new_id();
        let parent = self.run_event.clone();
        self.events.emit_with_id(
            &id,
            Some(iteration),
            Some(&parent),
            Event::IterationStarted {
                brief_hash: self.brief_text_hash.clone(),
            },
        )?;
        self.state.current = Some(InFlight {
            iteration,
            started_at: Utc::now(),
            event_id: id,
            brief_hash: self.brief_text_hash.clone(),
            done: Phase::Observe,
            base_commit: self.state.best_commit.clone(),
            plan: None,
            blocked: None,
            changed_paths: Vec::new(),
            tree: None,
            eval: None,
            learn: None,
            commit: None,
            artifact: None,
        });
        self.phase(Phase::Observe, |r, _| {
            let best = oid(&r.state.best_commit)?;
            r.ws.ensure(best)
        })?;
        self.checkpoint(Phase::Observe)
    }

    fn current(&self) -> Result<&InFlight> {
        self.state
            .current
            .as_ref()
            .ok_or_else(|| Error::Internal("no iteration in flight".into()))
    }

    fn current_mut(&mut self) -> Result<&mut InFlight> {
        self.state
            .current
            .as_mut()
            .ok_or_else(|| Error::Internal("no iteration in flight".into()))
    }

    fn resume(&mut self) -> Result<StepOutcome> {
        // Worktrees may have been deleted while no tick ran; an iteration past
        // EXECUTE whose candidate is gone must redo EXECUTE.
        let done = self.current()?.done;
        if !self.ws.cand_dir.join(".git").exists() || !self.ws.base_dir.join(".git").exists() {
            self.ws.ensure(oid(&self.current()?.base_commit)?)?;
            if (Phase::Execute..Phase::Learn).contains(&done) {
                self.current_mut()?.done = Phase::Plan;
            }
        }
        let mut done = self.current()?.done;
        while done < Phase::Check {
            let next = match done {
                Phase::Observe => Phase::Orient,
                Phase::Orient => Phase::Plan,
                Phase::Plan => Phase::Execute,
                Phase::Execute => Phase::Evaluate,
                Phase::Evaluate => Phase::Review,
                Phase::Review => Phase::Learn,
                Phase::Learn => Phase::Commit,
                Phase::Commit => Phase::Check,
                Phase::Check => break,
            };
            match next {
                Phase::Orient => self.phase(next, |_, _| Ok(()))?,
                Phase::Plan => {
                    if let Some(stop) = self.phase(next, |r, id| r.do_plan(id))? {
                        // Nothing left to try: the iteration never started its work.
                        self.state.current = None;
                        self.finish(stop.clone())?;
                        return Ok(StepOutcome::Stopped(stop));
                    }
                }
                Phase::Execute => self.phase(next, |r, _| r.do_execute())?,
                Phase::Evaluate => self.phase(next, |r, id| r.do_evaluate(id))?,
                Phase::Review => self.phase(next, |_, _| Ok(()))?,
                Phase::Learn => self.phase(next, |r, id| r.do_learn(id))?,
                Phase::Commit => self.phase(next, |r, _| r.do_commit())?,
                Phase::Check => return self.phase(next, |r, _| r.do_check()),
                Phase::Observe => {}
            }
            self.checkpoint(next)?;
            done = next;
        }
        Err(Error::Internal(
            "the phase machine ended without CHECK".into(),
        ))
    }

    fn noise_sd(&self) -> f64 {
        self.history
            .first()
            .and_then(|r| r.calibration.as_ref())
            .map(|c| c.noise_sd)
            .unwrap_or(0.02)
    }

    fn theta1(&self) -> f64 {
        self.history
            .first()
            .and_then(|r| r.calibration.as_ref())
            .map(|c| c.theta1)
            .unwrap_or(0.0)
    }

    /// The knob point of a worktree: its knobs file, defaults filling gaps.
    fn point_of(&self, dir: &std::path::Path) -> Result<Point> {
        let file = knobs::read_env(&dir.join(&self.brief.knobs_file), &self.brief.knobs)?;
        Ok(knobs::initial_point(&file, &self.brief.knobs))
    }

    fn do_plan(&mut self, phase_id: &str) -> Result<Option<Stop>> {
        let iteration = self.current()?.iteration;
        let best = self.point_of(&self.ws.base_dir.clone())?;
        let proposal = builtin::plan(
            &self.brief,
            &self.history,
            &best,
            self.state.seed,
            iteration,
            self.noise_sd(),
        );
        let Some(plan) = proposal else {
            return Ok(Some(Stop {
                reason: StopReason::Stalled,
                detail: format!(
                    "every point of the knob space has been evaluated ({} iterations); the best is iteration {}",
                    self.history.len() - 1,
                    builtin::best_iteration(&self.history)
                ),
                at: Utc::now(),
                iteration: iteration.saturating_sub(1),
            }));
        };
        if let Err(rej) = plan::validate(&plan, &self.history, iteration) {
            self.events.emit(
                Some(iteration),
                Some(phase_id),
                Event::PlanRejected {
                    rule: rej.rule.into(),
                    message: rej.message.clone(),
                },
            )?;
            self.current_mut()?.blocked =
                Some(format!("plan rejected ({}): {}", rej.rule, rej.message));
        }
        self.events.emit(
            Some(iteration),
            Some(phase_id),
            Event::Plan {
                hypothesis: plan.hypothesis.clone(),
                predicted_effect: plan.predicted_effect,
                predicted_sd: plan.predicted_sd,
                cites: plan.cites.clone(),
            },
        )?;
        self.say(&format!("plan: {}", plan.hypothesis));
        self.current_mut()?.plan = Some(plan);
        Ok(None)
    }

    fn do_execute(&mut self) -> Result<()> {
        let cur = self.current()?.clone();
        if cur.blocked.is_some() {
            return Ok(());
        }
        let base = oid(&cur.base_commit)?;
        self.ws.sync(base)?;
        let plan = cur.plan.clone().unwrap_or_default();
        if !plan.knobs.is_empty() {
            let path = self.ws.cand_dir.join(&self.brief.knobs_file);
            crate::atomic::write_atomic(&path, knobs::render_env(&plan.knobs).as_bytes())?;
        }
        let changed = self.ws.changed_paths()?;
        let violation = scope_violation(&self.brief, changed.iter().map(|c| c.path.as_str()));
        let tree = self.ws.candidate_tree()?.to_string();
        let c = self.current_mut()?;
        c.changed_paths = changed.into_iter().map(|c| c.path).collect();
        c.tree = Some(tree);
        c.blocked = violation;
        Ok(())
    }

    fn do_evaluate(&mut self, phase_id: &str) -> Result<()> {
        let cur = self.current()?.clone();
        let outcome = if let Some(reason) = &cur.blocked {
            let verdict = if reason.starts_with("plan rejected") {
                Verdict::Invalid
            } else {
                Verdict::Blocked
            };
            EvalOutcome {
                verdict,
                reason: reason.clone(),
                guards: Vec::new(),
                comparison: None,
                failure_output: None,
            }
        } else {
            self.evaluate_candidate(phase_id, &cur)?
        };
        self.events.emit(
            Some(cur.iteration),
            Some(phase_id),
            Event::Decision {
                verdict: outcome.verdict.as_str().into(),
                reason: outcome.reason.clone(),
            },
        )?;
        self.say(&format!("{}: {}", outcome.verdict.as_str(), outcome.reason));
        self.current_mut()?.eval = Some(outcome);
        Ok(())
    }

    /// A worktree with the environment its own knobs file implies.
    fn worktree(&self, side: Side) -> Result<Worktree> {
        let dir = match side {
            Side::Base => self.ws.base_dir.clone(),
            Side::Cand => self.ws.cand_dir.clone(),
        };
        let env = self
            .point_of(&dir)?
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        Ok(Worktree { side, dir, env })
    }

    fn evaluate_candidate(&mut self, phase_id: &str, cur: &InFlight) -> Result<EvalOutcome> {
        let (base, cand) = (self.worktree(Side::Base)?, self.worktree(Side::Cand)?);
        let setup_key = format!(
            "{}|{}|{}",
            cur.base_commit,
            knobs::key(&self.point_of(&base.dir)?),
            self.brief.metric.setup.clone().unwrap_or_default()
        );
        let skip_base_setup = self.state.base_setup_key.as_deref() == Some(setup_key.as_str());
        let pairs = self.project.config.defaults.pairs;
        let alpha = self.project.config.defaults.alpha;
        let theta1 = self.theta1();
        let mut rng = SplitMix64::new(
            self.state.seed ^ u64::from(cur.iteration).wrapping_mul(0xD1B5_4A32_D192_ED03),
        );
        let brief = self.brief.clone();
        let (say, name) = (&self.progress, self.brief.name.clone());
        let progress = move |m: &str| say(&format!("[{name}] {m}"));
        let mut ev = Evaluator {
            brief: &brief,
            output_cap: self.project.config.defaults.output_cap as usize,
            cancel: self.interrupt.flag(),
            events: &mut self.events,
            iteration: cur.iteration,
            parent: phase_id.to_string(),
            progress: &progress,
            verbose: self.verbose,
        };
        let crash = |reason: String, output: String, guards| EvalOutcome {
            verdict: Verdict::Crash,
            reason,
            guards,
            comparison: None,
            failure_output: Some(output),
        };
        let mut base_setup_done = false;
        if !skip_base_setup {
            if let Some(eval::RunFailure::Failed { reason, output }) = ev.setup(&base)? {
                return Ok(crash(
                    format!("the base failed to build: {reason}"),
                    output,
                    Vec::new(),
                ));
            }
            base_setup_done = true;
        }
        if let Some(eval::RunFailure::Failed { reason, output }) = ev.setup(&cand)? {
            return Ok(crash(reason, output, Vec::new()));
        }
        let (guards, failed) = ev.guards(&cand)?;
        if let Some(eval::RunFailure::Failed { reason, output }) = failed {
            return Ok(EvalOutcome {
                verdict: Verdict::Invalid,
                reason,
                guards,
                comparison: None,
                failure_output: Some(output),
            });
        }
        // Protected files are checked again after setup and guards, right
        // before measuring: a build step must not rewrite the evaluator either.
        let changed = self.ws.changed_paths()?;
        if let Some(v) = scope_violation(&brief, changed.iter().map(|c| c.path.as_str())) {
            return Ok(EvalOutcome {
                verdict: Verdict::Blocked,
                reason: format!("after setup and guards: {v}"),
                guards,
                comparison: None,
                failure_output: None,
            });
        }
        if base_setup_done {
            self.state.base_setup_key = Some(setup_key);
        }
        let measured = ev.pairs(&base, &cand, pairs, &mut rng)?;
        Ok(match measured {
            Err((side, eval::RunFailure::Failed { reason, output })) => {
                let reason = if side == Side::Base {
                    format!("the base failed while measuring: {reason}")
                } else {
                    reason
                };
                crash(reason, output, guards)
            }
            Ok(pairs) => {
                let (keep, comparison, reason) = eval::decide(
                    brief.metric.direction,
                    pairs,
                    alpha,
                    brief.metric.noise_floor,
                    theta1,
                );
                EvalOutcome {
                    verdict: if keep {
                        Verdict::Keep
                    } else {
                        Verdict::Discard
                    },
                    reason,
                    guards,
                    comparison: Some(comparison),
                    failure_output: None,
                }
            }
        })
    }

    fn do_learn(&mut self, phase_id: &str) -> Result<()> {
        let cur = self.current()?.clone();
        let outcome = cur
            .eval
            .clone()
            .ok_or_else(|| Error::Internal("LEARN without EVALUATE".into()))?;
        let plan = cur.plan.clone().unwrap_or_default();
        let base = oid(&cur.base_commit)?;
        let mut rec = IterationRecord {
            iteration: cur.iteration,
            brief: self.brief.name.clone(),
            brief_hash: cur.brief_hash.clone(),
            run_id: self.state.run_id.clone(),
            seed: None,
            started: cur.started_at,
            finished: Utc::now(),
            driver: MainAgent::Builtin.name().into(),
            verdict: outcome.verdict,
            reason: outcome.reason.clone(),
            hypothesis: plan.hypothesis.clone(),
            change: plan.change.clone(),
            axes: plan.axes.clone(),
            knobs: plan.knobs.clone(),
            predicted: Some(Prediction {
                effect: plan.predicted_effect,
                sd: plan.predicted_sd,
            }),
            measured: outcome.comparison.clone(),
            calibration: None,
            guards: outcome.guards.clone(),
            base: cur.base_commit.clone(),
            commit: None,
            tree: cur.tree.clone(),
            changed_paths: cur.changed_paths.clone(),
            cites: plan.cites.clone(),
            tokens: 0,
            cost_usd: 0.0,
            patterns: Vec::new(),
            falsified: None,
            next: None,
            artifact: None,
            failure_output: outcome.failure_output.clone(),
            narrative: None,
            acknowledged: self.state.pending_ack.clone(),
            stop: None,
        };
        let effect = outcome.comparison.as_ref().map(|c| (c.effect, c.ci));
        let learned = builtin::learn(&plan, outcome.verdict, &rec.effect_text(), effect);
        rec.patterns = learned.patterns.clone();
        rec.falsified = learned.falsified.clone();
        rec.next = learned.next.clone();
        if outcome.verdict == Verdict::Keep {
            let msg = format!(
                "ooda {} iteration {}: {}\n\n{}\n",
                self.brief.name,
                cur.iteration,
                first_line(&plan.hypothesis),
                outcome.reason
            );
            let (commit, tree) = match &cur.commit {
                Some(c) if self.ws.commit_exists(c) => {
                    (c.clone(), cur.tree.clone().unwrap_or_default())
                }
                _ => {
                    let (c, t) = self.ws.prepare_commit(base, &msg)?;
                    (c.to_string(), t.to_string())
                }
            };
            rec.commit = Some(commit.clone());
            rec.tree = Some(tree);
            self.current_mut()?.commit = Some(commit);
        } else if !cur.changed_paths.is_empty() {
            let diff = crate::compress::redact(&self.ws.diff()?);
            let rel = format!("artifacts/iter-{:03}.diff", cur.iteration);
            let path = self.dir.join(&rel);
            crate::atomic::create_dir_all(&self.dir.join("artifacts"))?;
            crate::atomic::write_atomic(&path, diff.as_bytes())?;
            self.events.emit(
                Some(cur.iteration),
                Some(phase_id),
                Event::ArtifactStored {
                    reference: format!("iter-{:03}.diff", cur.iteration),
                    path: rel.clone(),
                    bytes: diff.len() as u64,
                },
            )?;
            rec.artifact = Some(rel.clone());
            self.current_mut()?.artifact = Some(rel);
        }
        let path = history::write(&self.dir, &rec, &self.render_context())?;
        self.events.emit(
            Some(cur.iteration),
            Some(phase_id),
            Event::LearnArchived {
                path: path.display().to_string(),
            },
        )?;
        self.state.pending_ack = None;
        self.current_mut()?.learn = Some(learned);
        // The archive is the history: keep the in-memory copy in step with it.
        self.history.truncate(cur.iteration as usize);
        self.history.push(rec);
        self.write_summary()
    }

    fn do_commit(&mut self) -> Result<()> {
        let cur = self.current()?.clone();
        let keep = cur.eval.as_ref().map(|e| e.verdict) == Some(Verdict::Keep);
        match (&cur.commit, keep) {
            (Some(c), true) => {
                self.ws.advance(oid(c)?)?;
                self.state.best_commit = c.clone();
            }
            _ => self.ws.sync(oid(&cur.base_commit)?)?,
        }
        Ok(())
    }

    fn do_check(&mut self) -> Result<StepOutcome> {
        let cur = self.current()?.clone();
        let verdict = cur
            .eval
            .as_ref()
            .map(|e| e.verdict)
            .unwrap_or(Verdict::Invalid);
        let parent = cur.event_id.clone();
        self.events.emit(
            Some(cur.iteration),
            Some(&parent),
            Event::Verdict {
                verdict: verdict.as_str().into(),
            },
        )?;
        self.state.current = None;
        self.state.next_iteration = cur.iteration + 1;
        let stop = self.stop_condition().or_else(|| self.budget_stop());
        match stop {
            Some(stop) => {
                self.finish(stop.clone())?;
                Ok(StepOutcome::Stopped(stop))
            }
            None => {
                self.state.save(&self.dir)?;
                self.write_summary()?;
                Ok(StepOutcome::Iteration {
                    iteration: cur.iteration,
                    verdict,
                })
            }
        }
    }

    /// Stop conditions decided by the history (red lights and plain stops).
    fn stop_condition(&self) -> Option<Stop> {
        let last = self.history.last()?;
        // Red lights count from the last human acknowledgement: an `ooda ack`
        // accepts the evidence so far, and only new evidence may stop again.
        let since = self
            .history
            .iter()
            .rposition(|r| r.acknowledged.is_some())
            .unwrap_or(1)
            .max(1);
        let run: Vec<&IterationRecord> = self.history.iter().skip(since).collect();
        let mk = |reason, detail: String| {
            Some(Stop {
                reason,
                detail,
                at: Utc::now(),
                iteration: last.iteration,
            })
        };
        if let Some(target) = self.brief.metric.target {
            let best = self.best_value();
            let met = match self.brief.metric.direction {
                Direction::Minimize => best <= target,
                Direction::Maximize => best >= target,
            };
            if met && last.verdict == Verdict::Keep {
                return mk(
                    StopReason::GoalReached,
                    format!(
                        "{} = {} meets the target {} (median of the kept candidate's runs in iteration {})",
                        self.brief.metric.name,
                        history::fmt_num(best),
                        history::fmt_num(target),
                        last.iteration
                    ),
                );
            }
        }
        let tail: Vec<&&IterationRecord> = run.iter().rev().take(FAILURE_STREAK).collect();
        if tail.len() == FAILURE_STREAK && tail.iter().all(|r| r.verdict.is_failure()) {
            let ids: Vec<String> = tail
                .iter()
                .rev()
                .map(|r| format!("{} ({})", r.iteration, r.verdict.as_str()))
                .collect();
            return mk(
                StopReason::RedFailureStreak,
                format!(
                    "{FAILURE_STREAK} failed iterations in a row: {}; the last said: {}",
                    ids.join(", "),
                    last.reason
                ),
            );
        }
        let blocked: Vec<u32> = run
            .iter()
            .filter(|r| r.verdict == Verdict::Blocked)
            .map(|r| r.iteration)
            .collect();
        if blocked.len() >= SCOPE_VIOLATIONS {
            return mk(
                StopReason::RedScope,
                format!(
                    "{} changes were blocked for touching paths outside scope or protected paths (iterations {:?})",
                    blocked.len(),
                    blocked
                ),
            );
        }
        let non_keeps = run
            .iter()
            .rev()
            .take_while(|r| r.verdict != Verdict::Keep)
            .count();
        if non_keeps >= STALL_AFTER {
            return mk(
                StopReason::Stalled,
                format!("{non_keeps} iterations in a row without a keep"),
            );
        }
        None
    }

    /// The best known value of the metric: the last keep's candidate median,
    /// else the baseline median.
    pub fn best_value(&self) -> f64 {
        summary::best_value(&self.history)
    }

    fn budget_stop(&self) -> Option<Stop> {
        let budget = self.brief.effective_budget(&self.project.config);
        let done = self.history.len().saturating_sub(1) as u32;
        let last = self.history.last().map(|r| r.iteration).unwrap_or(0);
        let mk = |reason, detail: String| {
            Some(Stop {
                reason,
                detail,
                at: Utc::now(),
                iteration: last,
            })
        };
        if let Some(n) = budget.iterations
            && done >= n
        {
            return mk(
                StopReason::BudgetIterations,
                format!("{done} of {n} iterations used"),
            );
        }
        if let Some(w) = budget.wall {
            let elapsed = (Utc::now() - self.state.created_at)
                .to_std()
                .unwrap_or_default();
            if elapsed >= w {
                return mk(
                    StopReason::BudgetWall,
                    format!(
                        "{} of {} wall-clock time used",
                        crate::brief::format_duration(elapsed),
                        crate::brief::format_duration(w)
                    ),
                );
            }
        }
        let tokens: u64 = self.history.iter().map(|r| r.tokens).sum();
        if let Some(t) = budget.tokens
            && tokens >= t
        {
            return mk(
                StopReason::BudgetTokens,
                format!("{tokens} of {t} tokens used"),
            );
        }
        let cost: f64 = self.history.iter().map(|r| r.cost_usd).sum();
        if let Some(c) = budget.cost_usd
            && c > 0.0
            && cost >= c
        {
            return mk(
                StopReason::BudgetCost,
                format!("${cost:.2} of ${c:.2} used"),
            );
        }
        None
    }

    /// Records a stop in state, in the last iteration file, in events and in the summary.
    fn finish(&mut self, stop: Stop) -> Result<()> {
        self.state.stop = Some(stop.clone());
        self.state.save(&self.dir)?;
        if let Some(last) = self.history.last_mut()
            && last.iteration > 0
        {
            last.stop = Some(stop.clone());
            let rec = last.clone();
            history::write(&self.dir, &rec, &self.render_context())?;
        }
        let parent = self.run_event.clone();
        if stop.reason.is_red() {
            self.events.emit(
                Some(stop.iteration),
                Some(&parent),
                Event::RedLight {
                    reason: stop.reason.as_str().into(),
                    evidence: stop.detail.clone(),
                },
            )?;
        }
        self.events.emit(
            Some(stop.iteration),
            Some(&parent),
            Event::RunFinished {
                reason: stop.reason.as_str().into(),
                detail: stop.detail.clone(),
            },
        )?;
        self.say(&format!(
            "run stopped: {} — {}",
            stop.reason.as_str(),
            stop.detail
        ));
        self.write_summary()
    }

    fn render_context(&self) -> RenderContext<'_> {
        RenderContext {
            goal: &self.brief.goal,
            metric: &self.brief.metric.name,
            direction_word: match self.brief.metric.direction {
                Direction::Minimize => "lower is better",
                Direction::Maximize => "higher is better",
            },
        }
    }

    pub fn write_summary(&self) -> Result<()> {
        summary::write(
            &self.dir,
            &self.brief,
            &self.state,
            &self.history,
            &self.project.root,
        )
    }

    /// Iteration 0: measure the starting commit and calibrate the noise.
    fn baseline(&mut self) -> Result<()> {
        let start = oid(&self.state.start_commit)?;
        let id = self.events.new_id();
        let parent = self.run_event.clone();
        self.events.emit_with_id(
            &id,
            Some(0),
            Some(&parent),
            Event::IterationStarted {
                brief_hash: self.brief_text_hash.clone(),
            },
        )?;
        let started = Utc::now();
        self.say("iteration 0: measuring the baseline and calibrating noise (A/A pairs)");
        self.ws.ensure(start)?;
        let (base, cand) = (self.worktree(Side::Base)?, self.worktree(Side::Cand)?);
        let point = self.point_of(&base.dir)?;
        let brief = self.brief.clone();
        let defaults = self.project.config.defaults.clone();
        let mut rng = SplitMix64::new(self.state.seed);
        let (say, name) = (&self.progress, self.brief.name.clone());
        let progress = move |m: &str| say(&format!("[{name}] {m}"));
        let mut ev = Evaluator {
            brief: &brief,
            output_cap: defaults.output_cap as usize,
            cancel: self.interrupt.flag(),
            events: &mut self.events,
            iteration: 0,
            parent: id.clone(),
            progress: &progress,
            verbose: self.verbose,
        };
        let fail = |what: &str, reason: String, output: String| {
            Error::Input(format!(
                "{}: the starting commit cannot be measured: {what}: {reason}\n{output}\nFix the Brief's commands (try `ooda check {} --measure 3`), then tick again.",
                brief.path.display(),
                brief.name
            ))
        };
        for wt in [&base, &cand] {
            if let Some(eval::RunFailure::Failed { reason, output }) = ev.setup(wt)? {
                return Err(fail("setup", reason, output));
            }
        }
        let (guards, failed) = ev.guards(&base)?;
        if let Some(eval::RunFailure::Failed { reason, output }) = failed {
            return Err(fail("a guard fails", reason, output));
        }
        let pairs = match ev.pairs(&base, &cand, defaults.calibration_pairs, &mut rng)? {
            Ok(p) => p,
            Err((_, eval::RunFailure::Failed { reason, output })) => {
                return Err(fail("measuring", reason, output));
            }
        };
        let cal = eval::calibrate(
            pairs,
            defaults.pairs,
            defaults.alpha,
            brief.metric.noise_floor,
        );
        let rec = IterationRecord {
            iteration: 0,
            brief: brief.name.clone(),
            brief_hash: self.brief_text_hash.clone(),
            run_id: self.state.run_id.clone(),
            seed: Some(self.state.seed),
            started,
            finished: Utc::now(),
            driver: "runner".into(),
            verdict: Verdict::Baseline,
            reason: format!(
                "baseline {} = {}; noise {:.2}% per pair; θ₁ = {:.2}%",
                brief.metric.name,
                history::fmt_num(cal.median),
                cal.noise_sd * 100.0,
                cal.theta1 * 100.0
            ),
            hypothesis: "baseline".into(),
            change: String::new(),
            axes: Vec::new(),
            knobs: point,
            predicted: None,
            measured: None,
            calibration: Some(cal),
            guards,
            base: self.state.start_commit.clone(),
            commit: None,
            tree: None,
            changed_paths: Vec::new(),
            cites: Vec::new(),
            tokens: 0,
            cost_usd: 0.0,
            patterns: Vec::new(),
            falsified: None,
            next: Some(if brief.knobs.is_empty() {
                "Start proposing changes.".into()
            } else {
                "Start the knob search around the baseline point.".into()
            }),
            artifact: None,
            failure_output: None,
            narrative: None,
            acknowledged: None,
            stop: None,
        };
        let path = history::write(&self.dir, &rec, &self.render_context())?;
        self.events.emit(
            Some(0),
            Some(&id),
            Event::LearnArchived {
                path: path.display().to_string(),
            },
        )?;
        self.say(&rec.reason);
        self.history = vec![rec];
        self.state.next_iteration = 1;
        self.state.save(&self.dir)?;
        self.write_summary()?;
        self.events.emit(
            Some(0),
            Some(&id),
            Event::Checkpoint {
                phase: Phase::Check,
            },
        )?;
        if self.interrupt.is_set() {
            return Err(Error::Interrupted);
        }
        Ok(())
    }
}

/// `ooda ack`: a human accepts a red light; the loop may run again.
pub fn ack(
    project: &Project,
    brief_arg: &str,
    note: Option<&str>,
    interrupt: &Interrupt,
) -> Result<String> {
    let mut r = Runner::open(project, brief_arg, interrupt, Box::new(|_| {}))?;
    let Some(stop) = r.state.stop.clone().filter(|s| s.reason.is_red()) else {
        return Ok(format!(
            "{} is not RED: nothing to acknowledge",
            r.brief.name
        ));
    };
    let who = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let text = format!(
        "Acknowledged by {who} at {} after {} — {}{}",
        Utc::now().format("%Y-%m-%d %H:%M UTC"),
        stop.reason.as_str(),
        stop.detail,
        note.map(|n| format!(". Note: {n}")).unwrap_or_default()
    );
    r.state.stop = None;
    r.state.pending_ack = Some(text.clone());
    r.state.save(&r.dir)?;
    let parent = r.run_event.clone();
    r.events.emit(
        None,
        Some(&parent),
        Event::Acknowledged {
            by: who,
            note: note.map(str::to_string),
        },
    )?;
    r.write_summary()?;
    Ok(format!(
        "{}: {text}. The next tick continues.",
        r.brief.name
    ))
}

fn new_state(brief: &Brief, hash: &str, ws: &Workspace) -> Result<State> {
    let head = ws.user_head()?;
    if let Some(tip) = ws.branch_tip()?
        && tip != head
    {
        return Err(Error::Input(format!(
            "branch {} already exists (at {}) but {} has no history: it is left from an earlier run. Review it, then delete it with `git branch -D {}` (and `git worktree prune`), or restore the earlier iterations/ folder.",
            ws.branch,
            history::short(&tip.to_string()),
            brief.name,
            ws.branch
        )));
    }
    let now = Utc::now();
    let seed = brief.seed.unwrap_or_else(|| {
        now.timestamp_nanos_opt().unwrap_or_default() as u64 ^ u64::from(std::process::id())
    });
    Ok(State {
        version: state::STATE_VERSION,
        brief: brief.name.clone(),
        run_id: format!(
            "{}-{}",
            now.format("%Y%m%dT%H%M%S"),
            &format!("{:08x}", seed as u32)
        ),
        seed,
        created_at: now,
        start_commit: head.to_string(),
        best_commit: head.to_string(),
        brief_hash: hash.to_string(),
        next_iteration: 0,
        stop: None,
        pending_ack: None,
        current: None,
        base_setup_key: None,
    })
}

fn oid(s: &str) -> Result<git2::Oid> {
    git2::Oid::from_str(s).map_err(|e| Error::Corrupt {
        path: PathBuf::from("state.json"),
        message: format!("`{s}` is not a commit hash: {e}"),
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Scope rules for a candidate's changed paths; the knobs file is ooda's own.
pub fn scope_violation<'p>(brief: &Brief, paths: impl Iterator<Item = &'p str>) -> Option<String> {
    let mut protected = Vec::new();
    let mut outside = Vec::new();
    for p in paths {
        if p == brief.knobs_file {
            continue;
        }
        if brief.scope.protects(p) {
            protected.push(p.to_string());
        } else if !brief.scope.allows(p) {
            outside.push(p.to_string());
        }
    }
    if !protected.is_empty() {
        return Some(format!(
            "changed protected path(s) {} (scope.protect: {}); the evaluator must stay read-only",
            protected.join(", "),
            brief.scope.protect.join(", ")
        ));
    }
    if !outside.is_empty() {
        return Some(format!(
            "changed path(s) outside scope.allow: {} (allowed: {})",
            outside.join(", "),
            brief.scope.allow.join(", ")
        ));
    }
    None
}
