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

use crate::brief::{Brief, Direction};
use crate::driver::agent_steps::{self, Step};
use crate::driver::{MainAgent, builtin};
use crate::error::{Error, Result};
use crate::eval::sequential::{self, NoiseHistory};
use crate::eval::{self, EvalOutcome, Evaluator, Side, Worktree};
use crate::events::{Event, EventLog};
use crate::history::{self, IterationRecord, Prediction, RenderContext, Verdict};
use crate::interrupt::Interrupt;
use crate::knobs::{self, Point};
use crate::lock::BriefLock;
use crate::plan;
use crate::project::Project;
use crate::redlight;
use crate::state::{self, CheckOutcome, InFlight, Loaded, State, Stop, StopReason};
use crate::stats::SplitMix64;
use crate::summary;
use crate::workspace::Workspace;

pub use crate::model::Phase;

/// A confirmation test runs after every this many keeps (and at the end).
const CONFIRM_EVERY: usize = 10;
/// Pairs of a confirmation test, and the most it may extend to.
const CONFIRM_PAIRS: usize = 12;
const CONFIRM_MAX_PAIRS: usize = 20;

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
    /// Who plays PLAN, EXECUTE and LEARN (re-resolved when the Brief changes).
    agent: MainAgent,
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
        let agent = MainAgent::for_brief(&brief, &project.config)?;
        let dir = project.iterations_dir(&brief.name);
        crate::atomic::create_dir_all(&dir)?;
        let lock = BriefLock::acquire(&dir)?;
        let hash = brief_hash(&brief.path)?;
        let ws = Workspace::open(
            &project.root,
            &project.worktrees_dir(&brief.name),
            &brief.name,
        )?
        .with_owned_file(&brief.knobs_file);
        let history = history::load(&dir)?;
        let mut warnings = Vec::new();
        let loaded = state::load(&dir)?;
        let state = match loaded {
            // A state behind the archive (restored from a backup, or killed
            // between writing iter-000.md and saving) is rebuilt from it; a
            // state ahead of it means archived files were deleted.
            Loaded::Ok(s) if history.len() > archived_by(&s) + usize::from(s.current.is_some()) => {
                warnings.push(format!(
                    "{} was behind the archive ({} iteration files); rebuilt it from {}",
                    State::path(&dir).display(),
                    history.len(),
                    dir.display()
                ));
                State::rebuild(&brief.name, &hash, &history, |c| ws.commit_exists(c)).ok_or_else(
                    || Error::Internal("rebuilding from a non-empty archive failed".into()),
                )?
            }
            Loaded::Ok(s) if history.len() < archived_by(&s) => {
                return Err(Error::Corrupt {
                    path: history::path_of(&dir, history.len() as u32),
                    message: format!(
                        "missing: state.json records {} archived iteration(s) but only {} file(s) are in {}. Restore the missing iteration files (e.g. `git checkout -- {}`), or delete state.json to continue from the files that remain",
                        archived_by(&s),
                        history.len(),
                        dir.display(),
                        dir.display()
                    ),
                });
            }
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
            agent,
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
        (self.progress)(&tagged(&self.brief.name, msg));
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
        self.agent = MainAgent::for_brief(&brief, &self.project.config)?;
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
            commit: None,
            agent_calls: Vec::new(),
            check: None,
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
            // The best commit, not the iteration's base: after COMMIT they
            // differ, and the branch must not move back to before a keep.
            self.ws.ensure(oid(&self.state.best_commit)?)?;
            if matches!(done, Phase::Execute | Phase::Evaluate | Phase::Review) {
                self.current_mut()?.done = Phase::Plan;
            }
        }
        let mut done = self.current()?.done;
        while done != Phase::Check {
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
                Phase::Execute => {
                    self.cut_if_over_budget(next)?;
                    self.phase(next, |r, id| r.do_execute(id))?
                }
                Phase::Evaluate => {
                    self.cut_if_over_budget(next)?;
                    self.phase(next, |r, id| r.do_evaluate(id))?
                }
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

    /// The pooled noise of all measured log ratios in the archive: the A/A
    /// calibration plus every iteration's within-iteration spread.
    fn noise_history(&self) -> Option<NoiseHistory> {
        let samples: Vec<Vec<f64>> = self
            .history
            .iter()
            .filter_map(|r| {
                let pairs = r
                    .calibration
                    .as_ref()
                    .map(|c| &c.pairs)
                    .or(r.measured.as_ref().map(|m| &m.pairs))?;
                Some(pairs.iter().map(|p| p.d).collect())
            })
            .collect();
        NoiseHistory::pool(samples.iter().map(Vec::as_slice))
    }

    fn noise_sd(&self) -> f64 {
        self.noise_history().map(|h| h.s_h).unwrap_or(0.02)
    }

    /// The decision rule for the next comparison, from the archive and config.
    fn rule(&self) -> sequential::Rule {
        let noise = self.noise_history();
        let floor = self.brief.metric.noise_floor;
        let theta1 = sequential::theta1(floor, noise.map(|h| h.s_h).unwrap_or(0.0));
        let alpha_look = self
            .history
            .first()
            .and_then(|r| r.calibration.as_ref())
            .and_then(|c| c.alpha_look)
            .unwrap_or_else(|| sequential::alphas_for(self.project.config.defaults.alpha)[0]);
        sequential::Rule {
            alphas: [alpha_look; 4],
            delta0: (1.0 + floor).ln(),
            theta1_log: (1.0 + theta1).ln(),
            noise,
        }
    }

    /// The knob point of a worktree: its knobs file, defaults filling gaps.
    fn point_of(&self, dir: &std::path::Path) -> Result<Point> {
        let file = knobs::read_env(&dir.join(&self.brief.knobs_file), &self.brief.knobs)?;
        Ok(knobs::initial_point(&file, &self.brief.knobs))
    }

    /// The command agent's view of the runner for one step, or `None` when
    /// the builtin driver plays the main agent.
    fn agent_step<'s>(&'s mut self, phase_id: &'s str) -> Option<Step<'s>> {
        let iteration = self.state.current.as_ref()?.iteration;
        let MainAgent::Command(agent) = &self.agent else {
            return None;
        };
        let (progress, name) = (&self.progress, self.brief.name.clone());
        Some(Step {
            agent,
            root: &self.project.root,
            config: &self.project.config,
            brief: &self.brief,
            dir: &self.dir,
            cand_dir: &self.ws.cand_dir,
            history: &self.history,
            iteration,
            run_started: self.state.created_at,
            events: &mut self.events,
            parent: phase_id,
            cancel: self.interrupt.flag(),
            say: Box::new(move |m: &str| progress(&format!("[{name}] {m}"))),
        })
    }

    fn do_plan(&mut self, phase_id: &str) -> Result<Option<Stop>> {
        let iteration = self.current()?.iteration;
        let best = self.point_of(&self.ws.base_dir.clone())?;
        let out = match self.agent_step(phase_id) {
            Some(mut step) => Some(agent_steps::plan(&mut step, &best)?),
            None => None,
        };
        if let Some(out) = out {
            if out.rejected.is_none() {
                self.events.emit(
                    Some(iteration),
                    Some(phase_id),
                    Event::Plan {
                        hypothesis: out.plan.hypothesis.clone(),
                        predicted_effect: out.plan.predicted_effect,
                        predicted_sd: out.plan.predicted_sd,
                        cites: out.plan.cites.clone(),
                    },
                )?;
                self.say(&format!("plan: {}", first_line(&out.plan.hypothesis)));
            }
            let c = self.current_mut()?;
            c.blocked = out.rejected;
            c.plan = Some(out.plan);
            c.agent_calls.extend(out.calls);
            return Ok(None);
        }
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

    fn do_execute(&mut self, phase_id: &str) -> Result<()> {
        let cur = self.current()?.clone();
        if cur.blocked.is_some() {
            return Ok(());
        }
        let base = oid(&cur.base_commit)?;
        self.ws.sync(base)?;
        let mut plan = cur.plan.clone().unwrap_or_default();
        let mut agent_failure = None;
        let mut breach = None;
        let fence = match self.agent {
            MainAgent::Command(_) => Some(agent_steps::Fence::new(
                &self.project.root,
                &self.ws.base_dir,
                &self.dir,
            )?),
            MainAgent::Builtin => None,
        };
        let out = match self.agent_step(phase_id) {
            Some(mut step) => Some(agent_steps::execute(&mut step, &plan)?),
            None => None,
        };
        if let Some(fence) = fence
            && let Some(b) = fence.breached()?
        {
            self.events.emit(
                Some(cur.iteration),
                Some(phase_id),
                Event::Anomaly {
                    kind: "scope_violation".into(),
                    message: b.clone(),
                },
            )?;
            breach = Some(b);
        }
        if let Some(out) = out {
            if let Some(change) = out.change {
                plan.change = change;
            }
            agent_failure = out.failure;
            self.current_mut()?.agent_calls.extend(out.calls);
            if let Some(note) =
                agent_steps::undo_agent_commits(&self.ws.cand_dir, &self.ws.branch, base)?
            {
                self.say(&note);
                self.events.emit(
                    Some(cur.iteration),
                    Some(phase_id),
                    Event::Anomaly {
                        kind: "agent_commit".into(),
                        message: note,
                    },
                )?;
            }
        }
        if !plan.knobs.is_empty() {
            let path = self.ws.cand_dir.join(&self.brief.knobs_file);
            crate::atomic::write_atomic(&path, knobs::render_env(&plan.knobs).as_bytes())?;
        }
        let changed = self.ws.changed_paths()?;
        let violation = scope_violation(&self.brief, changed.iter().map(|c| c.path.as_str()));
        if changed.is_empty() && agent_failure.is_none() && self.agent != MainAgent::Builtin {
            agent_failure = Some(format!(
                "{}: the agent changed nothing, so there is nothing to measure",
                agent_steps::EXECUTE_FAILED
            ));
        }
        let tree = self.ws.candidate_tree()?.to_string();
        let c = self.current_mut()?;
        c.changed_paths = changed.into_iter().map(|c| c.path).collect();
        c.tree = Some(tree);
        // A scope violation outweighs an agent failure: it counts toward the red light.
        c.blocked = breach.or(violation).or(agent_failure);
        c.plan = Some(plan);
        Ok(())
    }

    fn do_evaluate(&mut self, phase_id: &str) -> Result<()> {
        let cur = self.current()?.clone();
        let outcome = if let Some(reason) = &cur.blocked {
            let verdict = if agent_steps::is_invalid(reason) {
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
                base_failed: false,
                alarms: Vec::new(),
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
            Side::Anchor => self.ws.dir.join("anchor"),
        };
        let env = self
            .point_of(&dir)?
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        Ok(Worktree { side, dir, env })
    }

    fn evaluate_candidate(&mut self, phase_id: &str, cur: &InFlight) -> Result<EvalOutcome> {
        // An exact repeat of an earlier candidate: its verdict stands, and
        // measuring it again would only spend the night.
        if let Some(tree) = &cur.tree
            && let Some(earlier) = redlight::identical_candidate(&self.history, tree)
        {
            let reason = format!(
                "identical to the candidate of iteration {} (tree {}): its verdict ({}) is reused without measuring",
                earlier.iteration,
                history::short(tree),
                earlier.verdict.as_str()
            );
            return Ok(EvalOutcome {
                verdict: earlier.verdict,
                reason: reason.clone(),
                guards: Vec::new(),
                comparison: None,
                failure_output: None,
                base_failed: false,
                alarms: vec![redlight::Alarm::yellow(
                    redlight::AlarmKind::IdenticalCandidate,
                    reason,
                )],
            });
        }
        let (base, cand) = (self.worktree(Side::Base)?, self.worktree(Side::Cand)?);
        let setup_key = self.base_setup_key(&cur.base_commit)?;
        let skip_base_setup = self.ws.base_setup_done(&setup_key);
        let max_pairs = self.project.config.defaults.pairs;
        let alpha = self.project.config.defaults.alpha;
        let rule = self.rule();
        let looks = eval::looks_for(max_pairs);
        let mut rng = SplitMix64::new(
            self.state.seed ^ u64::from(cur.iteration).wrapping_mul(0xD1B5_4A32_D192_ED03),
        );
        let brief = self.brief.clone();
        let (say, name) = (&self.progress, self.brief.name.clone());
        let progress = move |m: &str| say(&tagged(&name, m));
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
            base_failed: false,
            alarms: Vec::new(),
        };
        let mut base_setup_done = false;
        if !skip_base_setup {
            if let Some(eval::RunFailure::Failed { reason, output }) = ev.setup(&base)? {
                let mut c = crash(
                    format!("the base failed to build: {reason}"),
                    output,
                    Vec::new(),
                );
                c.base_failed = true;
                return Ok(c);
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
                base_failed: false,
                alarms: Vec::new(),
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
                base_failed: false,
                alarms: Vec::new(),
            });
        }
        if base_setup_done {
            self.ws.record_base_setup(&setup_key)?;
        }
        let mut last_look = None;
        let mut taken = 0;
        let max = looks.last().copied().unwrap_or(sequential::LOOKS[0]);
        let measured = ev.measure_pairs(&base, &cand, max, &mut rng, |p| {
            match eval::look_now(p, &rule, &looks) {
                Some(l) => {
                    taken += 1;
                    last_look = Some(l);
                    l.decision != sequential::Decision::Continue
                }
                None => false,
            }
        })?;
        let pairs = match measured {
            Err((side, eval::RunFailure::Failed { reason, output })) => {
                let reason = if side == Side::Base {
                    format!("the base failed while measuring: {reason}")
                } else {
                    reason
                };
                return Ok(crash(reason, output, guards));
            }
            Ok(pairs) => pairs,
        };
        let last = last_look
            .ok_or_else(|| Error::Internal("the sequential test ended without a look".into()))?;
        if last.noise_changed {
            self.events.emit(
                Some(cur.iteration),
                Some(phase_id),
                Event::Anomaly {
                    kind: "noise_changed".into(),
                    message: format!(
                        "pair spread at {} pairs is far above the noise history",
                        last.n
                    ),
                },
            )?;
        }
        let (keep, comparison, reason) =
            eval::report(brief.metric.direction, pairs, &last, &rule, alpha, taken);
        Ok(EvalOutcome {
            verdict: if keep {
                Verdict::Keep
            } else {
                Verdict::Discard
            },
            reason,
            guards,
            comparison: Some(comparison),
            failure_output: None,
            base_failed: false,
            alarms: Vec::new(),
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
            driver: self.agent.name(),
            verdict: outcome.verdict,
            reason: outcome.reason.clone(),
            hypothesis: plan.hypothesis.clone(),
            change: plan.change.clone(),
            axes: plan.axes.clone(),
            knobs: plan.knobs.clone(),
            // An iteration whose plan was never accepted predicted nothing.
            predicted: (!plan.hypothesis.is_empty()).then_some(Prediction {
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
            agent_calls: cur.agent_calls.clone(),
            patterns: Vec::new(),
            falsified: None,
            next: None,
            artifact: None,
            failure_output: outcome.failure_output.clone(),
            narrative: None,
            acknowledged: self.state.pending_ack.clone(),
            confirmation: None,
            alarms: Vec::new(),
            analysis: None,
            rollback_to: None,
            base_failed: outcome.base_failed,
            stop: None,
        };
        if outcome.verdict == Verdict::Keep {
            let msg = format!(
                "ooda {} iteration {}: {}\n\n{}\n",
                self.brief.name,
                cur.iteration,
                first_line(&plan.hypothesis),
                outcome.reason
            );
            // The commit is built from the tree recorded after EXECUTE (what
            // was measured), never from the worktree as it is now.
            let (commit, tree) = match &cur.tree {
                Some(t) => (self.ws.commit_tree(base, oid(t)?, &msg)?, oid(t)?),
                None => self.ws.prepare_commit(base, &msg)?,
            };
            rec.commit = Some(commit.to_string());
            rec.tree = Some(tree.to_string());
            self.current_mut()?.commit = Some(commit.to_string());
        } else if !cur.changed_paths.is_empty() {
            let diff = match &cur.tree {
                Some(t) => self.ws.diff_to_tree(base, oid(t)?)?,
                None => self.ws.diff()?,
            };
            let diff = crate::compress::redact(&diff);
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
            rec.artifact = Some(rel);
        }
        let command = self.agent != MainAgent::Builtin;
        // The agent runs after the commit is prepared and the diff saved, so
        // nothing it edits now can reach them (COMMIT resets the worktree).
        // A candidate that never reached EVALUATE (plan rejected, EXECUTE
        // failed, scope broken) has no outcome to learn from: the runner's
        // reason is the whole lesson, and an agent call would only cost.
        let said = match self.agent_step(phase_id) {
            Some(mut step) if cur.blocked.is_none() => Some(agent_steps::learn(&mut step, &rec)?),
            _ => None,
        };
        if said.is_some() && cur.tree.is_some() {
            let now = self.ws.candidate_tree()?.to_string();
            if Some(&now) != cur.tree.as_ref() {
                let note = "the agent edited files during LEARN; the edits are not part of this iteration and are discarded".to_string();
                self.say(&note);
                self.events.emit(
                    Some(cur.iteration),
                    Some(phase_id),
                    Event::Anomaly {
                        kind: "agent_edit_in_learn".into(),
                        message: note,
                    },
                )?;
            }
        }
        let learned = if command {
            let (said, calls) = said.unwrap_or_default();
            rec.agent_calls.extend(calls);
            agent_steps::merge_learn(agent_steps::runner_learn(&rec), said)
        } else {
            let effect = outcome.comparison.as_ref().map(|c| (c.effect, c.ci));
            builtin::learn(&plan, outcome.verdict, &rec.effect_text(), effect)
        };
        rec.tokens = rec.agent_calls.iter().map(|c| c.usage.total()).sum();
        // A fold from +0.0: an empty f64 sum is -0.0, which would read oddly.
        rec.cost_usd = rec
            .agent_calls
            .iter()
            .filter_map(|c| c.usage.cost_usd)
            .fold(0.0, |a, c| a + c);
        rec.patterns = learned.patterns.clone();
        rec.falsified = learned.falsified.clone();
        rec.next = learned.next.clone();
        rec.narrative = learned.narrative.clone();
        let rec = history::write(&self.dir, &rec, &self.render_context())?;
        let path = history::path_of(&self.dir, rec.iteration);
        self.events.emit(
            Some(cur.iteration),
            Some(phase_id),
            Event::LearnArchived {
                path: path.display().to_string(),
            },
        )?;
        self.state.pending_ack = None;
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

    /// CHECK decides first and acts second. The decision (alarms, stop,
    /// rollback, confirmation) may measure, so it is saved in the state
    /// before any of it is applied; a CHECK killed while applying re-applies
    /// the same decision instead of deciding again on a half-changed world.
    fn do_check(&mut self) -> Result<StepOutcome> {
        let cur = self.current()?.clone();
        let verdict = cur
            .eval
            .as_ref()
            .map(|e| e.verdict)
            .unwrap_or(Verdict::Invalid);
        let parent = cur.event_id.clone();
        let outcome = match cur.check.clone() {
            Some(o) => o,
            None => {
                let o = self.decide_check(&cur, verdict, &parent)?;
                self.current_mut()?.check = Some(o.clone());
                self.state.save(&self.dir)?;
                o
            }
        };
        if let Some((old_tip, target)) = &outcome.rollback {
            self.ws.keep_ref(
                &format!("refs/ooda/{}/diverged-{}", self.brief.name, cur.iteration),
                oid(old_tip)?,
            )?;
            self.ws.ensure(oid(target)?)?;
            self.state.best_commit = target.clone();
        }
        let o = outcome.clone();
        self.amend_last(move |r| {
            r.alarms = o.alarms;
            if o.confirmation.is_some() {
                r.confirmation = o.confirmation;
            }
            r.rollback_to = o.rollback.map(|(_, target)| target);
        })?;
        self.state.yellow = outcome
            .alarms
            .iter()
            .rev()
            .find(|a| a.level == redlight::Level::Yellow)
            .map(|a| format!("{}: {}", a.kind, a.evidence));
        // The verdict event marks the iteration's end; emitted once the
        // decision is applied, right before the state says so.
        self.events.emit(
            Some(cur.iteration),
            Some(&parent),
            Event::Verdict {
                verdict: verdict.as_str().into(),
            },
        )?;
        self.state.current = None;
        self.state.next_iteration = cur.iteration + 1;
        match outcome.stop {
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

    /// The decision of CHECK: measurements and events only, no other effect.
    fn decide_check(
        &mut self,
        cur: &InFlight,
        verdict: Verdict,
        parent: &str,
    ) -> Result<CheckOutcome> {
        let th = self.thresholds();
        let mut out = CheckOutcome {
            alarms: cur
                .eval
                .as_ref()
                .map(|e| e.alarms.clone())
                .unwrap_or_default(),
            stop: self.stop_condition(),
            ..CheckOutcome::default()
        };
        if let Some(s) = &out.stop
            && let Some(kind) = redlight::AlarmKind::for_stop(s.reason)
        {
            out.alarms
                .push(redlight::Alarm::red(kind, s.detail.clone()));
        }
        if out.stop.is_none() {
            self.check_divergence(parent, cur.iteration, &mut out)?;
        }
        let plateau = redlight::plateau_length(redlight::window(&self.history));
        if out.stop.is_none() && plateau == th.plateau {
            out.alarms.push(redlight::Alarm::yellow(
                redlight::AlarmKind::Plateau,
                format!("{plateau} iterations without a keep; {}", self.analysis()),
            ));
        }
        for a in &out.alarms {
            let ev = match a.level {
                redlight::Level::Red => Event::RedLight {
                    reason: a.kind.to_string(),
                    evidence: a.evidence.clone(),
                },
                redlight::Level::Yellow => Event::Anomaly {
                    kind: a.kind.to_string(),
                    message: a.evidence.clone(),
                },
            };
            self.events.emit(Some(cur.iteration), Some(parent), ev)?;
        }
        let stop_is_red = out.stop.as_ref().is_some_and(|s| s.reason.is_red());
        if out.stop.is_none() {
            out.stop = self.budget_stop();
        }
        // Winner's curse: a kept candidate's own runs overstate it. The gain
        // the morning report states, and a reached goal, come from a fresh
        // comparison of the start of the run with the current best.
        let keeps = self
            .history
            .iter()
            .filter(|r| r.verdict == Verdict::Keep)
            .count();
        let target_hit =
            verdict == Verdict::Keep && !stop_is_red && self.meets_target(self.best_value());
        let every_ten = verdict == Verdict::Keep && keeps % CONFIRM_EVERY == 0;
        let end_of_run = out.stop.is_some() && !stop_is_red;
        if keeps > 0
            && out.confirmation.is_none()
            && out.rollback.is_none()
            && (target_hit || every_ten || end_of_run)
            && let Some(conf) = self.confirm(parent, cur.iteration)?
        {
            if target_hit && self.meets_target(conf.best_median) {
                out.stop = Some(Stop {
                    reason: StopReason::GoalReached,
                    detail: format!(
                        "{} = {} meets the target {} in the confirmation test ({})",
                        self.brief.metric.name,
                        history::fmt_num(conf.best_median),
                        history::fmt_num(self.brief.metric.target.unwrap_or_default()),
                        conf.why
                    ),
                    at: Utc::now(),
                    iteration: cur.iteration,
                });
            } else if target_hit {
                self.events.emit(
                    Some(cur.iteration),
                    Some(parent),
                    Event::Anomaly {
                        kind: "target_not_confirmed".into(),
                        message: format!(
                            "the kept candidate met the target, but the confirmation measured {}",
                            history::fmt_num(conf.best_median)
                        ),
                    },
                )?;
            }
            out.confirmation = Some(conf);
        }
        Ok(out)
    }

    fn meets_target(&self, value: f64) -> bool {
        match (self.brief.metric.target, self.brief.metric.direction) {
            (Some(t), Direction::Minimize) => value <= t,
            (Some(t), Direction::Maximize) => value >= t,
            (None, _) => false,
        }
    }

    fn base_setup_key(&self, base_commit: &str) -> Result<String> {
        Ok(format!(
            "{}|{}|{}",
            base_commit,
            knobs::key(&self.point_of(&self.ws.base_dir)?),
            self.brief.metric.setup.clone().unwrap_or_default()
        ))
    }

    /// The confirmation test: the start-of-run commit (in its own scratch
    /// worktree) against the current best, 12 pairs, 20 when the first 12
    /// leave the sign of the gain open. A failure to measure is recorded as
    /// an anomaly, not a verdict: the iteration itself is already decided.
    fn confirm(&mut self, parent: &str, iteration: u32) -> Result<Option<eval::Confirmation>> {
        if self.state.best_commit == self.state.start_commit {
            return Ok(None);
        }
        self.say("confirmation: start of run vs current best");
        let anchor_dir = self.ws.scratch("anchor", oid(&self.state.start_commit)?)?;
        let env = self
            .point_of(&anchor_dir)?
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        let anchor = Worktree {
            side: Side::Anchor,
            dir: anchor_dir,
            env,
        };
        let best = self.worktree(Side::Base)?;
        let setup_key = self.base_setup_key(&self.state.best_commit.clone())?;
        let skip_base_setup = self.ws.base_setup_done(&setup_key);
        let brief = self.brief.clone();
        let (say, name) = (&self.progress, self.brief.name.clone());
        let progress = move |m: &str| say(&tagged(&name, m));
        let mut rng = SplitMix64::new(
            self.state.seed ^ u64::from(iteration).wrapping_mul(0xA076_1D64_78BD_642F),
        );
        let mut ev = Evaluator {
            brief: &brief,
            output_cap: self.project.config.defaults.output_cap as usize,
            cancel: self.interrupt.flag(),
            events: &mut self.events,
            iteration,
            parent: parent.to_string(),
            progress: &progress,
            verbose: self.verbose,
        };
        let mut failure = ev.setup(&anchor)?;
        if failure.is_none() && !skip_base_setup {
            failure = ev.setup(&best)?;
        }
        let measured = match failure {
            Some(f) => Err(f),
            None => ev
                .measure_pairs(&anchor, &best, CONFIRM_MAX_PAIRS, &mut rng, |p| {
                    // Two looks only (12, then 20), the first at 97.5% so the
                    // pair of them keeps the 95% claim honest.
                    p.len() == CONFIRM_PAIRS && {
                        let d: Vec<f64> = p.iter().map(|x| x.d).collect();
                        let (m, se) = (
                            crate::stats::mean(&d),
                            crate::stats::sd(&d) / (d.len() as f64).sqrt(),
                        );
                        let half = crate::stats::t_quantile(0.9875, (d.len() - 1) as f64) * se;
                        !(half.is_finite()) || m - half > 0.0 || m + half < 0.0
                    }
                })?
                .map_err(|(_, f)| f),
        };
        match measured {
            Ok(pairs) => {
                if !skip_base_setup {
                    self.ws.record_base_setup(&setup_key)?;
                }
                let conf = eval::confirm(
                    brief.metric.direction,
                    &self.state.start_commit,
                    &self.state.best_commit,
                    pairs,
                );
                self.say(&conf.why);
                Ok(Some(conf))
            }
            Err(eval::RunFailure::Failed { reason, .. }) => {
                self.events.emit(
                    Some(iteration),
                    Some(parent),
                    Event::Anomaly {
                        kind: "confirmation_failed".into(),
                        message: reason.clone(),
                    },
                )?;
                self.say(&format!("confirmation failed: {reason}"));
                Ok(None)
            }
        }
    }

    /// Stop conditions decided by the history alone: red lights (DESIGN.md
    /// §6, see `redlight.rs`) and a stall.
    fn stop_condition(&self) -> Option<Stop> {
        let last = self.history.last()?;
        let mk = |reason, detail: String| {
            Some(Stop {
                reason,
                detail,
                at: Utc::now(),
                iteration: last.iteration,
            })
        };
        // Every red detector's kind names its stop; a kind without one
        // (unknown to this version) stops nothing.
        if let Some((reason, alarm)) = redlight::red_alarms(
            &self.history,
            self.brief.metric.direction,
            &self.thresholds(),
        )
        .into_iter()
        .find_map(|a| a.stop_reason().map(|r| (r, a)))
        {
            return mk(reason, alarm.evidence);
        }
        let non_keeps = redlight::plateau_length(redlight::window(&self.history));
        if non_keeps >= self.project.config.defaults.stall_after as usize {
            return mk(
                StopReason::Stalled,
                format!("{non_keeps} iterations in a row without a keep"),
            );
        }
        None
    }

    /// The builtin pipeline-analyzer's report over the archive.
    fn analysis(&self) -> String {
        let theta1 = (self.rule().theta1_log).exp_m1();
        crate::subagents::analyze(&self.history, theta1)
    }

    fn thresholds(&self) -> redlight::Thresholds {
        self.project.config.defaults.red_lights
    }

    /// Rewrites the last iteration file with an amendment made in CHECK
    /// (alarms, a confirmation, the stop): the archive stays the history.
    fn amend_last(&mut self, amend: impl FnOnce(&mut IterationRecord)) -> Result<()> {
        let Some(mut rec) = self.history.last().cloned() else {
            return Ok(());
        };
        amend(&mut rec);
        // Most CHECKs add nothing: the file LEARN wrote is already right.
        if self.history.last() == Some(&rec) {
            return Ok(());
        }
        let written = history::write(&self.dir, &rec, &self.render_context())?;
        if let Some(last) = self.history.last_mut() {
            *last = written;
        }
        Ok(())
    }

    /// Divergence (DESIGN.md §6): when the re-measured base trends worse, the
    /// anchor test (start of run vs current best) tells a slower machine
    /// (YELLOW) from kept changes that made things worse (RED, and the base
    /// rolls back to the last confirmed commit). Decides only; `do_check` acts.
    fn check_divergence(
        &mut self,
        parent: &str,
        iteration: u32,
        out: &mut CheckOutcome,
    ) -> Result<()> {
        let th = self.thresholds();
        let run_sd = self.noise_sd() / std::f64::consts::SQRT_2;
        let window = redlight::window(&self.history);
        let Some(trend) = redlight::base_trend(window, self.brief.metric.direction, run_sd, &th)
        else {
            return Ok(());
        };
        // One anchor test per episode: not again while the last one is recent
        // (this iteration's own record does not count).
        let earlier = &window[..window.len().saturating_sub(1)];
        let recent = earlier.iter().rev().take(th.trend_window).any(|r| {
            r.alarms.iter().any(|a| {
                matches!(
                    a.kind,
                    redlight::AlarmKind::MachineDrift | redlight::AlarmKind::Divergence
                )
            })
        });
        if recent {
            return Ok(());
        }
        if self.state.best_commit == self.state.start_commit {
            // Nothing was kept: the base is still the start commit, so only
            // the machine can have changed.
            out.alarms.push(redlight::Alarm::yellow(
                redlight::AlarmKind::MachineDrift,
                format!("{trend}; no change has been kept, so the base is the start commit itself: the machine got slower"),
            ));
            return Ok(());
        }
        let conf = self.confirm(parent, iteration)?;
        if let Some(c) = &conf
            && c.ci.0 > 0.0
        {
            out.alarms.push(redlight::Alarm::yellow(
                redlight::AlarmKind::MachineDrift,
                format!("{trend}; but the anchor test still finds the best better than the start ({}): the machine got slower, the changes are real", c.why),
            ));
            out.confirmation = conf;
            return Ok(());
        }
        let target = summary::last_confirmed_commit(&self.history)
            .unwrap_or_else(|| self.state.start_commit.clone());
        let old_tip = self.state.best_commit.clone();
        let anchor = match &conf {
            Some(c) => format!("the anchor test finds no gain over the start ({})", c.why),
            None => "the anchor test could not be measured".into(),
        };
        let evidence = format!(
            "{trend}; {anchor}. The base was rolled back from {} to {} (the old tip is kept as refs/ooda/{}/diverged-{iteration})",
            history::short(&old_tip),
            history::short(&target),
            self.brief.name
        );
        if target != old_tip {
            out.rollback = Some((old_tip, target));
        }
        out.confirmation = conf;
        out.alarms.push(redlight::Alarm::red(
            redlight::AlarmKind::Divergence,
            evidence.clone(),
        ));
        out.stop = Some(Stop {
            reason: StopReason::RedDivergence,
            detail: evidence,
            at: Utc::now(),
            iteration,
        });
        Ok(())
    }

    /// The best known value of the metric: the last keep's candidate median,
    /// else the baseline median.
    pub fn best_value(&self) -> f64 {
        summary::best_value(&self.history)
    }

    /// Budgets are enforced before each phase that spends (DESIGN.md §6):
    /// when wall clock, tokens or cost ran out during this iteration, its
    /// remaining work is skipped and the iteration goes straight to LEARN as
    /// `invalid`, so it is still archived before the run stops.
    fn cut_if_over_budget(&mut self, phase: Phase) -> Result<()> {
        if self.current()?.blocked.is_some() {
            return Ok(());
        }
        let Some(stop) = self
            .budget_stop()
            .filter(|s| s.reason != StopReason::BudgetIterations)
        else {
            return Ok(());
        };
        let reason = format!(
            "{} {}: {} ({}); the candidate was not measured",
            agent_steps::BUDGET_CUT,
            phase.as_str().to_uppercase(),
            stop.reason.as_str(),
            stop.detail
        );
        self.say(&reason);
        self.current_mut()?.blocked = Some(reason);
        Ok(())
    }

    fn budget_stop(&self) -> Option<Stop> {
        let budget = self.project.config.budget_for(&self.brief);
        // Agent calls of an iteration not yet archived count too.
        let in_flight = self
            .state
            .current
            .as_ref()
            .filter(|c| !c.done.archived())
            .map(|c| {
                c.agent_calls
                    .iter()
                    .fold(crate::agent_output::Usage::default(), |mut u, call| {
                        u.add(&call.usage);
                        u
                    })
            })
            .unwrap_or_default();
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
        let tokens: u64 = self.history.iter().map(|r| r.tokens).sum::<u64>() + in_flight.total();
        if let Some(t) = budget.tokens
            && tokens >= t
        {
            return mk(
                StopReason::BudgetTokens,
                format!("{tokens} of {t} tokens used"),
            );
        }
        let cost: f64 = self.history.iter().map(|r| r.cost_usd).sum::<f64>()
            + in_flight.cost_usd.unwrap_or(0.0);
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
    ///
    /// The archive and the summary are written before the state: a kill in
    /// between leaves the state before CHECK, which simply runs again.
    fn finish(&mut self, stop: Stop) -> Result<()> {
        // Every run that ends (not on a red light) states a confirmed gain,
        // also when it ends at the start of a tick or in PLAN.
        let last_keep = self
            .history
            .iter()
            .rposition(|r| r.verdict == Verdict::Keep);
        let last_confirmed = self.history.iter().rposition(|r| r.confirmation.is_some());
        if !stop.reason.is_red()
            && let Some(k) = last_keep
            && last_confirmed.is_none_or(|c| c < k)
        {
            let parent = self.run_event.clone();
            let iteration = self.history.last().map(|r| r.iteration).unwrap_or(0);
            if let Some(conf) = self.confirm(&parent, iteration)? {
                self.amend_last(|r| r.confirmation = Some(conf))?;
            }
        }
        self.state.stop = Some(stop.clone());
        if let Some(mut rec) = self.history.last().cloned()
            && rec.iteration > 0
        {
            rec.stop = Some(stop.clone());
            let written = history::write(&self.dir, &rec, &self.render_context())?;
            if let Some(last) = self.history.last_mut() {
                *last = written;
            }
        }
        self.write_summary()?;
        self.state.save(&self.dir)?;
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
        Ok(())
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
            &self.project.config.budget_for(&self.brief),
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
        let progress = move |m: &str| say(&tagged(&name, m));
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
                "{}: the starting commit cannot be measured: {what}: {reason}\n{output}\nooda measures the committed HEAD in a fresh worktree (uncommitted edits are not there). Fix the Brief's commands (try `ooda check {} --measure 3`), then tick again.",
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
        let pairs = match ev.measure_pairs(
            &base,
            &cand,
            defaults.calibration_pairs as usize,
            &mut rng,
            |_| false,
        )? {
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
            tree: Some(self.ws.tree_of(start)?.to_string()),
            changed_paths: Vec::new(),
            cites: Vec::new(),
            tokens: 0,
            cost_usd: 0.0,
            agent_calls: Vec::new(),
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
            confirmation: None,
            alarms: Vec::new(),
            analysis: None,
            rollback_to: None,
            base_failed: false,
            stop: None,
        };
        let rec = history::write(&self.dir, &rec, &self.render_context())?;
        failpoint("before-checkpoint", Phase::Check);
        let path = history::path_of(&self.dir, 0);
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
        yellow: None,
        pending_ack: None,
        current: None,
    })
}

/// How many iteration files a state implies exist: every finished iteration,
/// plus the one in flight once its LEARN has archived it. (An in-flight
/// iteration killed after writing its file but before the LEARN checkpoint
/// has one more file; LEARN simply runs again and rewrites it.)
fn archived_by(s: &State) -> usize {
    s.next_iteration as usize + usize::from(s.current.as_ref().is_some_and(|c| c.done.archived()))
}

fn oid(s: &str) -> Result<git2::Oid> {
    git2::Oid::from_str(s).map_err(|e| Error::Corrupt {
        path: PathBuf::from("state.json"),
        message: format!("`{s}` is not a commit hash: {e}"),
    })
}

/// Prefixes a progress line with the Brief's name, keeping a live line live.
fn tagged(name: &str, msg: &str) -> String {
    match msg.strip_prefix('\r') {
        Some(rest) => format!("\r[{name}] {rest}"),
        None => format!("[{name}] {msg}"),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Scope rules for a candidate's changed paths; the knobs file is ooda's own.
pub fn scope_violation<'p>(brief: &Brief, paths: impl Iterator<Item = &'p str>) -> Option<String> {
    let mut protected = Vec::new();
    let mut outside = Vec::new();
    for p in paths {
        if p == brief.knobs_file.trim_start_matches("./") {
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
