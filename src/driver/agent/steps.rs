//! PLAN, EXECUTE and LEARN played by an agent that answers in text, a
//! process or ooda's tool loop alike (the [`Caller`]).
//!
//! This is the text-answering drivers' side of the [`Driver`](crate::driver::Driver) seam. The phase
//! machine (`phases/`) owns checkpoints and verdicts; this module owns the
//! conversation with the agent inside one phase: which prompt it gets, how
//! its answer is read and validated, when it gets another try, and how what
//! it said is merged into the runner's record. Everything the agent returns
//! is treated as untrusted input:
//!
//! - a plan is validated by code (`answers.rs`); a rejected or unreadable plan is
//!   sent back with the validator's message, at most twice, and then the
//!   iteration ends `invalid` with that message as its reason;
//! - a timed-out or failed call is not retried (the next iteration is the
//!   retry, and five failures in a row stop the run): it is recorded;
//! - agent prose is bounded and cannot fake the runner's sections of an
//!   iteration file; Data and Decision are never the agent's;
//! - what it changes outside the candidate worktree in any step is found by
//!   the fence (`run/fence/`); commits it makes there are undone by EXECUTE
//!   (its edits kept), so the scope check sees every change it made.

use serde_json::Value;

use super::answers::{self, Axis, LearnResult, Pattern, Plan};
use super::named_files::{NamedFiles, named_files};
use super::prompt::{self, PlanView};
use super::{Caller, Invocation, Reply};
use crate::archive::history::{IterationRecord, Verdict};
use crate::brief::points::Point;
use crate::driver::{Breach, Execution, Lesson, Proposal, Step};
use crate::error::Result;
use crate::events::Event;
use crate::model::{AgentCall, CallOutcome, Cut, Phase};
use crate::run::fence::{Fence, Reach};
use crate::text::clip;
use crate::text::clip::clip;
use crate::text::compress::bound;

/// One try plus two retries for an invalid plan.
pub(crate) const PLAN_ATTEMPTS: u32 = 3;

/// PLAN: a plan, validated (see [`plan_once`]'s retries), with whatever the
/// agent changed outside the candidate while it planned.
pub(crate) fn plan(agent: &dyn Caller, t: &Step, best: &Point) -> Result<Proposal> {
    let (mut proposal, found) = fenced(
        agent,
        t,
        || plan_once(&Talk::new(agent, t), best),
        |e| Proposal::Plan {
            plan: Plan::default(),
            rejected: Some(Cut::PlanRejected {
                rule: "agent".into(),
                message: e.to_string(),
                attempts: None,
            }),
            calls: Vec::new(),
            breach: None,
        },
    )?;
    // An agent never runs out of ideas (only the builtin driver says
    // `Exhausted`): its answer is always a plan, which carries the breach.
    if let Proposal::Plan { breach, .. } = &mut proposal {
        *breach = found;
    }
    Ok(proposal)
}

/// EXECUTE: the agent applies `plan` in the candidate worktree.
pub(crate) fn execute(agent: &dyn Caller, t: &Step, plan: &Plan) -> Result<Execution> {
    let (mut out, breach) = fenced(
        agent,
        t,
        || execute_once(&mut Talk::new(agent, t), plan),
        |e| Execution {
            failure: Some(e.to_string()),
            ..Execution::default()
        },
    )?;
    out.breach = breach;
    Ok(out)
}

/// LEARN: what the outcome teaches, the agent's words merged with the
/// runner's own lessons.
pub(crate) fn learn(
    agent: &dyn Caller,
    t: &Step,
    rec: &IterationRecord,
    measured: bool,
) -> Result<Lesson> {
    // A candidate that never reached EVALUATE (plan rejected, EXECUTE
    // failed, scope broken) has no outcome to learn from: the runner's
    // reason is the whole lesson, and an agent call would only cost.
    if !measured {
        return Ok(Lesson {
            learned: runner_learn(rec),
            calls: Vec::new(),
            breach: None,
        });
    }
    let ((said, calls), breach) = fenced(
        agent,
        t,
        || learn_once(&Talk::new(agent, t), rec),
        |_| (None, Vec::new()),
    )?;
    Ok(Lesson {
        learned: merge_learn(runner_learn(rec), said, rec),
        calls,
        breach,
    })
}

/// Runs one agent step inside the fence. A script can write anywhere the
/// user can, and every step (PLAN and LEARN too) runs the agent: what it
/// changed outside the candidate worktree is found by content afterwards.
/// `sandboxed`: ooda's sandbox confined the step; otherwise the git
/// directory, the Briefs and `ooda.yaml` are watched too.
///
/// A step that fails (an I/O error, an interruption the agent itself may
/// have caused) is still checked: a breach must not vanish with the
/// error, since the next tick's fence would take the changed files as
/// its starting point. With a breach, the failure becomes the step's
/// outcome (`failed` builds it) so the breach is archived; without one,
/// the error goes on as it was.
pub(crate) fn fenced<T>(
    agent: &dyn Caller,
    t: &Step,
    step: impl FnOnce() -> Result<T>,
    failed: impl FnOnce(&crate::error::Error) -> T,
) -> Result<(T, Option<Breach>)> {
    let reach = reach(agent, t);
    let unconfined = !reach.confined();
    // The obsidian-synthesizer writes this Brief's notes only.
    let notes = t
        .root
        .join(&t.config.defaults.notes_dir)
        .join(&t.brief.name);
    let mut fence = Fence::new(t.root, t.base_dir, t.dir, reach, &[notes])?;
    if unconfined {
        // Nothing kept the git directory, the Briefs or ooda.yaml
        // read-only: what changed there is found afterwards.
        fence = fence.with_git(t.root, &t.brief.name)?;
    }
    let out = step();
    let checked = fence.check()?;
    if let Some(note) = checked.committed {
        t.span.emit(crate::events::Event::Anomaly {
            kind: crate::model::AnomalyKind::AgentCommit,
            message: note,
        })?;
    }
    if let Some(env) = checked.environment {
        t.span.emit(crate::events::Event::EnvironmentChange {
            paths: env.paths,
            reason: env.reason,
        })?;
    }
    let breach = checked.breach.map(|message| Breach {
        message,
        unconfined,
    });
    match (out, breach) {
        (Ok(out), breach) => Ok((out, breach)),
        (Err(e), None) => Err(e),
        (Err(e), Some(b)) => Ok((failed(&e), Some(b))),
    }
}

/// What `agent` could write outside its worktree: what the executor its
/// steps run through confines them to (the sandbox actually in force, not
/// the one configured: a command subagent under the builtin main agent
/// runs unconfined), plus its profile's grants; or anywhere.
pub(crate) fn reach(agent: &dyn Caller, t: &Step) -> Reach {
    match t.executor.agent_confinement() {
        (Some(abi), mut grants) => {
            grants.extend(agent.grants());
            Reach::Confined { abi, grants }
        }
        (None, _) => Reach::Unconfined,
    }
}

/// One step of the conversation: the agent and what it may see.
struct Talk<'a> {
    agent: &'a dyn Caller,
    t: &'a Step<'a>,
    /// The files this step is about (EXECUTE), for profiles that pass them.
    files: NamedFiles,
    /// EXECUTE's plan sets knob values (ooda writes them after the step).
    sets_knobs: std::cell::Cell<bool>,
    /// The span of the latest call: its `model_result` goes under it, so a
    /// trace pairs a call with its end by parent id, not by position.
    last_call: std::cell::RefCell<Option<crate::events::Span>>,
}

impl<'a> Talk<'a> {
    fn new(agent: &'a dyn Caller, t: &'a Step<'a>) -> Talk<'a> {
        Talk {
            agent,
            t,
            files: NamedFiles::default(),
            sets_knobs: std::cell::Cell::new(false),
            last_call: std::cell::RefCell::new(None),
        }
    }

    fn template(&self, name: &str) -> String {
        crate::project::template(self.t.root, name).unwrap_or_default()
    }

    /// Runs the agent, with events around each call. While the tool says its
    /// API is unavailable, the call is repeated after a growing wait, until
    /// `defaults.agent_outage` has been spent waiting: an outage of the
    /// provider is waited out, not blamed on the agent. Returns the last
    /// reply and the calls that found the API unavailable before it.
    fn call(&self, phase: Phase, attempt: u32, prompt: &str) -> Result<(Reply, Vec<AgentCall>)> {
        let mut outage = crate::run::outage::Outage::new(self.t.config.defaults.agent_outage);
        let mut earlier = Vec::new();
        loop {
            let reply = self.call_once(phase, attempt, prompt)?;
            if reply.call.outcome != CallOutcome::Unavailable {
                return Ok((reply, earlier));
            }
            let waited = outage.waited();
            let Some(this) = outage.next_wait() else {
                return Ok((reply, earlier));
            };
            let mut call = reply.call;
            call.waited = (this.as_secs_f64() * 10.0).round() / 10.0;
            self.finished(&call)?;
            self.t.span.emit(Event::AgentUnavailable {
                phase,
                attempt,
                reason: call.problem.clone().unwrap_or_default(),
                wait_seconds: this.as_secs_f64(),
                waited_seconds: waited.as_secs_f64(),
            })?;
            earlier.push(call);
            crate::run::interrupt::sleep_unless(this, self.t.cancel)?;
        }
    }

    /// Runs the agent once, with an event before the call.
    fn call_once(&self, phase: Phase, attempt: u32, prompt: &str) -> Result<Reply> {
        let t = self.t;
        let files = Invocation::files_dir_for(t.dir, t.iteration);
        let span = t.span.child(Event::ModelCall {
            phase,
            profile: self.agent.who(),
            attempt,
            attempts: if phase == Phase::Plan {
                PLAN_ATTEMPTS
            } else {
                1
            },
            command: self.agent.command_line_for(phase, &self.files),
            prompt_chars: clip::chars(prompt),
            // The main agent's model is in its profile's arguments.
            model: None,
        })?;
        let inv = Invocation {
            phase,
            attempt,
            brief_path: &t.brief.path,
            brief_name: &t.brief.name,
            iteration: t.iteration,
            cwd: t.cand_dir,
            iterations_dir: t.dir,
            files_dir: &files,
            prompt,
            output_cap: usize::try_from(t.config.defaults.output_cap).unwrap_or(usize::MAX),
            files: &self.files,
            subagent: None,
            span: &span,
            sets_knobs: phase == Phase::Execute && self.sets_knobs.get(),
        };
        let lease = t.executor.lease(crate::run::executor::Purpose::Agent)?;
        let reply = self
            .agent
            .call(&inv, lease.as_ref(), t.cancel)
            .map(|mut r| {
                r.call.files = inv.written();
                r
            });
        *self.last_call.borrow_mut() = Some(span);
        reply
    }

    /// The cut of an iteration whose agent stayed unavailable.
    fn unavailable(&self, phase: Phase, earlier: &[AgentCall], problem: &str) -> Cut {
        Cut::Unavailable {
            phase,
            waited_seconds: earlier.iter().map(|c| c.waited).sum(),
            message: problem
                .strip_prefix("agent unavailable: ")
                .unwrap_or(problem)
                .to_string(),
        }
    }

    /// Records how a call ended, once its outcome is final.
    fn finished(&self, call: &AgentCall) -> Result<()> {
        let last = self.last_call.borrow_mut().take();
        last.as_ref()
            .unwrap_or(self.t.span)
            .emit(Event::model_result(call))?;
        Ok(())
    }
}

/// Asks the agent for a plan, validating each answer and sending the
/// validator's message back for up to two more tries.
fn plan_once(step: &Talk, best: &Point) -> Result<Proposal> {
    let t = step.t;
    let template = step.template("plan.md");
    let iterations_dir = t.dir.display().to_string();
    let limits = t.config.budget_for(t.brief);
    let mut calls = Vec::new();
    let mut retry: Option<String> = None;
    let mut proposed: Option<Plan> = None;
    let mut last: Option<(&'static str, String)> = None;
    let mut previous: Option<serde_json::Value> = None;
    for attempt in 1..=PLAN_ATTEMPTS {
        let (text, _) = prompt::plan(&PlanView {
            template: &template,
            brief: t.brief,
            history: t.history,
            iteration: t.iteration,
            limits: limits.clone(),
            run_started: t.run_started,
            now: chrono::Utc::now(),
            iterations_dir: &iterations_dir,
            best_point: best,
            orientation: t.orientation,
            retry: retry.as_deref(),
            result_file: step.agent.result_file(),
            max_chars: t.config.defaults.prompt_budget,
        })?;
        let (mut reply, outage) = step.call(Phase::Plan, attempt, &text)?;
        calls.extend(outage);
        if !reply.finished() {
            let problem = reply.call.problem.clone().unwrap_or_default();
            let cut = match reply.call.outcome {
                CallOutcome::Unavailable => step.unavailable(Phase::Plan, &calls, &problem),
                _ => Cut::PlanRejected {
                    rule: "agent".into(),
                    message: problem,
                    attempts: None,
                },
            };
            step.finished(&reply.call)?;
            calls.push(reply.call);
            return Ok(Proposal::Plan {
                plan: proposed.unwrap_or_default(),
                rejected: Some(cut),
                calls,
                breach: None,
            });
        }
        if let Ok((v, _)) = &reply.result {
            if previous.as_ref() == Some(v) {
                t.span.emit(Event::Anomaly {
                    kind: crate::model::AnomalyKind::RepeatedAnswer,
                    message: format!(
                        "PLAN attempt {attempt} repeated the previous attempt's answer word for word, after being told why it was rejected"
                    ),
                })?;
            }
            previous = Some(v.clone());
        }
        match read_plan(t, &reply, best) {
            Ok(plan) => {
                if let Some(w) = example_prediction(&template, &plan) {
                    t.span.emit(Event::Anomaly {
                        kind: crate::model::AnomalyKind::ExamplePrediction,
                        message: w.clone(),
                    })?;
                    reply.call.warnings.push(w);
                }
                reply.call.problem = None;
                step.finished(&reply.call)?;
                calls.push(reply.call);
                return Ok(Proposal::Plan {
                    plan,
                    rejected: None,
                    calls,
                    breach: None,
                });
            }
            Err((rule, message, plan)) => {
                reply.call.outcome = if rule == "format" {
                    CallOutcome::NoResult
                } else {
                    CallOutcome::Rejected
                };
                reply.call.problem = Some(format!("({rule}) {message}"));
                t.span.emit(Event::PlanRejected {
                    rule: rule.into(),
                    message: message.clone(),
                })?;
                step.finished(&reply.call)?;
                calls.push(reply.call);
                if let Some(p) = plan {
                    proposed = Some(*p);
                }
                retry = Some(format!(
                    "Attempt {attempt} of {PLAN_ATTEMPTS} was rejected by rule `{rule}`: {message}"
                ));
                last = Some((rule, message));
            }
        }
    }
    let (rule, message) = last.unwrap_or(("format", String::new()));
    Ok(Proposal::Plan {
        plan: proposed.unwrap_or_default(),
        rejected: Some(Cut::PlanRejected {
            rule: rule.into(),
            message,
            attempts: Some(PLAN_ATTEMPTS),
        }),
        calls,
        breach: None,
    })
}

type PlanError = (&'static str, String, Option<Box<Plan>>);

/// The warning for a plan whose prediction is exactly the example the PLAN
/// template shows (`"predicted_effect": 0.05, "predicted_sd": 0.03`): a
/// model copying the example's numbers made no prediction, and the
/// mismatch light, which needs ten measured ones, would take all night to
/// say so.
fn example_prediction(template: &str, plan: &Plan) -> Option<String> {
    let number = |key: &str| {
        let at = template.find(&format!("\"{key}\":"))? + key.len() + 3;
        let rest = template[at..].trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .unwrap_or(rest.len());
        rest[..end].parse::<f64>().ok()
    };
    let (effect, sd) = (number("predicted_effect")?, number("predicted_sd")?);
    (plan.predicted_effect == effect && plan.predicted_sd == sd).then(|| {
        format!(
            "the plan's prediction ({effect} ± {sd}) {}, not an estimate: the model may be copying the prompt",
            crate::model::sign::EXAMPLE_PREDICTION
        )
    })
}

/// The reply as a validated plan, or the rule it broke, the message for the
/// agent, and the plan as proposed (when it parsed).
fn read_plan(t: &Step, reply: &Reply, best: &Point) -> Result<Plan, PlanError> {
    let plan = read_plan_shape(t, reply, best)?;
    if let Err(r) = answers::validate(&plan, t.history.facts(), t.iteration) {
        return Err((r.rule, r.message, Some(Box::new(plan))));
    }
    Ok(plan)
}

/// The reply as a plan with valid knobs, before the rules about history.
fn read_plan_shape(t: &Step, reply: &Reply, best: &Point) -> Result<Plan, PlanError> {
    let (value, source) = match &reply.result {
        Ok((v, source)) => (v.clone(), *source),
        Err(e) => {
            let why = reply.tool_error.clone().unwrap_or_else(|| e.clone());
            return Err(("format", why, None));
        }
    };
    let mut plan: Plan = serde_json::from_value(value.clone()).map_err(|e| {
        let why = answers::plan_field_problem(&value).unwrap_or_else(|| e.to_string());
        (
            "format",
            format!(
                "the answer (the {}) is not a valid plan: {why}; use exactly the fields of the JSON shown in the task",
                source.as_str()
            ),
            None,
        )
    })?;
    sanitize_plan(&mut plan);
    if let Err(r) = answers::validate_knobs(&mut plan, &t.brief.knobs, best) {
        return Err((r.rule, r.message, Some(Box::new(plan))));
    }
    Ok(plan)
}

/// What one PLAN call of `ooda check --preflight` showed.
pub(crate) struct Preflight {
    pub call: AgentCall,
    /// The plan the answer holds, or why it could not be read as one.
    pub plan: std::result::Result<Plan, String>,
}

/// One PLAN call, as iteration `t.iteration` would make it, with no retry
/// and no wait for an unavailable API: does the agent start, answer, and
/// answer with a plan the validator accepts? Before a first run the plan is
/// judged against the baseline iteration 0 that run will have.
pub(crate) fn preflight(agent: &dyn Caller, t: &Step, best: &Point) -> Result<Preflight> {
    let step = Talk::new(agent, t);
    let (text, _) = prompt::plan(&PlanView {
        template: &step.template("plan.md"),
        brief: t.brief,
        history: t.history,
        iteration: t.iteration,
        limits: t.config.budget_for(t.brief),
        run_started: t.run_started,
        now: chrono::Utc::now(),
        iterations_dir: &t.dir.display().to_string(),
        best_point: best,
        orientation: t.orientation,
        retry: None,
        result_file: agent.result_file(),
        max_chars: t.config.defaults.prompt_budget,
    })?;
    let reply = step.call_once(Phase::Plan, 1, &text)?;
    // Judged as a night's first PLAN would be: iteration 0 exists by then.
    let mut history = t.history.facts().to_vec();
    if history.is_empty() {
        let mut baseline = IterationRecord::new(0, Verdict::Baseline);
        baseline.knobs = best.clone();
        history.push(crate::archive::history::fact::Fact::of(
            &baseline,
            Default::default(),
        ));
    }
    let plan = if reply.finished() {
        read_plan_shape(t, &reply, best)
            .and_then(
                |plan| match answers::validate(&plan, &history, t.iteration) {
                    Ok(()) => Ok(plan),
                    Err(r) => Err((r.rule, r.message, None)),
                },
            )
            .map_err(|(rule, message, _)| format!("({rule}) {message}"))
    } else {
        Err(reply.call.problem.clone().unwrap_or_default())
    };
    step.finished(&reply.call)?;
    Ok(Preflight {
        call: reply.call,
        plan,
    })
}

fn sanitize_plan(p: &mut Plan) {
    // The one-run screen is the builtin sweep's, never an agent's: a
    // screened-out change counts towards no stall and no red light.
    p.screen = false;
    p.hypothesis = prose(&p.hypothesis, 1_000);
    p.change = prose(&p.change, 4_000);
    p.cites.sort_unstable();
    p.cites.dedup();
    p.cites.truncate(50);
    p.axes.truncate(10);
    for a in &mut p.axes {
        a.name = line(&a.name, 80);
        a.direction = line(&a.direction, 40);
    }
    p.axes.retain(|a: &Axis| !a.name.is_empty());
}

/// Agent prose as the runner stores it: bounded, and unable to fake the
/// runner's own sections of an iteration file (a line starting like a
/// heading or a front-matter fence is escaped).
pub(crate) fn prose(s: &str, max: usize) -> String {
    bound(s.trim(), max)
        .lines()
        .map(escape_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line of agent text, at most `max` characters, escaped like [`prose`].
pub(crate) fn line(s: &str, max: usize) -> String {
    escape_line(&clip(s, max))
}

fn escape_line(l: &str) -> String {
    let t = l.trim_start();
    if t.starts_with('#') || t.starts_with("---") || t.starts_with("===") {
        format!("\\{t}")
    } else {
        l.to_string()
    }
}

/// Asks the agent to apply `plan` in the candidate worktree.
fn execute_once(step: &mut Talk, plan: &Plan) -> Result<Execution> {
    let template = step.template("execute.md");
    let text = prompt::execute(&prompt::ExecuteView {
        template: &template,
        brief: step.t.brief,
        iteration: step.t.iteration,
        plan,
        change_note: step.agent.change_note(),
        max_chars: step.t.config.defaults.prompt_budget,
    });
    step.sets_knobs.set(!plan.knobs.is_empty());
    if step.agent.passes_files() {
        let plan_text = format!("{}\n{}", plan.hypothesis, plan.change);
        step.files = named_files(step.t.brief, step.t.cand_dir, &plan_text, &text)?;
    }
    let (mut reply, mut calls) = step.call(Phase::Execute, 1, &text)?;
    let mut failure = None;
    let mut unavailable = None;
    if reply.call.outcome == CallOutcome::Unavailable {
        let problem = reply.call.problem.clone().unwrap_or_default();
        unavailable = Some(step.unavailable(Phase::Execute, &calls, &problem));
    } else if !reply.finished() {
        failure = reply.call.problem.clone();
    } else if let Some(e) = reply.tool_error.clone() {
        reply.call.outcome = CallOutcome::NoResult;
        reply.call.problem = Some(e.clone());
        failure = Some(e);
    } else {
        // The answer is optional here: no result is not a problem.
        reply.call.problem = None;
    }
    let change = match &reply.result {
        Ok((v, _)) => v
            .get("change")
            .and_then(Value::as_str)
            .map(|c| prose(c, 4_000))
            .filter(|c| !c.is_empty()),
        Err(_) => None,
    };
    step.finished(&reply.call)?;
    calls.push(reply.call);
    Ok(Execution {
        failure,
        unavailable,
        change,
        breach: None,
        calls,
    })
}

/// Asks the agent what the measured outcome teaches. `None` when it gave
/// nothing usable (the iteration is archived anyway, with the runner's data).
fn learn_once(step: &Talk, rec: &IterationRecord) -> Result<(Option<LearnResult>, Vec<AgentCall>)> {
    let template = step.template("learn.md");
    let known = step.t.history.patterns()?;
    let text = prompt::learn(&prompt::LearnView {
        template: &template,
        brief: step.t.brief,
        record: rec,
        known_patterns: &known,
        result_file: step.agent.result_file(),
        max_chars: step.t.config.defaults.prompt_budget,
    });
    let (mut reply, mut calls) = step.call(Phase::Learn, 1, &text)?;
    let mut learned = None;
    if reply.finished() {
        match &reply.result {
            Ok((v, _)) => match read_learn(v) {
                Ok(l) => {
                    reply.call.problem = None;
                    learned = Some(l);
                }
                Err(e) => {
                    reply.call.outcome = CallOutcome::NoResult;
                    reply.call.problem = Some(e);
                }
            },
            Err(e) => {
                reply.call.outcome = CallOutcome::NoResult;
                reply.call.problem = Some(reply.tool_error.clone().unwrap_or_else(|| e.clone()));
            }
        }
    }
    step.finished(&reply.call)?;
    calls.push(reply.call);
    Ok((learned, calls))
}

/// Patterns an iteration may add (a long list is a sign of noise, not insight).
const MAX_PATTERNS_PER_ITERATION: usize = 8;

/// Reads a LEARN answer leniently: unknown keys and malformed entries are
/// dropped rather than failing the whole answer.
fn read_learn(v: &Value) -> std::result::Result<LearnResult, String> {
    // "none", "N/A", "-": a model's way of leaving a field empty, never a
    // falsified idea to archive (and keep every later plan away from).
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty() && !placeholder(s))
    };
    let mut out = LearnResult::default();
    if let Some(ps) = v.get("patterns").and_then(Value::as_array) {
        for p in ps.iter().take(MAX_PATTERNS_PER_ITERATION) {
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            let lesson = p.get("lesson").and_then(Value::as_str).unwrap_or("");
            if !name.trim().is_empty() {
                out.patterns.push(Pattern {
                    name: line(name, 80),
                    lesson: line(lesson, 400),
                });
            }
        }
    }
    out.falsified = text("falsified").map(|s| line(s, 400));
    out.next = text("next").map(|s| line(s, 400));
    out.narrative = text("narrative").map(|s| prose(s, 2_000));
    if out == LearnResult::default() {
        return Err(
            "the LEARN answer has none of `patterns`, `falsified`, `next`, `narrative`".into(),
        );
    }
    Ok(out)
}

/// A word that stands for nothing (`none`, `N/A`, `null`, `-`).
fn placeholder(s: &str) -> bool {
    let w = s
        .trim_matches(|c: char| c.is_whitespace() || ".()[]\"'`*_".contains(c))
        .to_ascii_lowercase();
    matches!(
        w.as_str(),
        "" | "none"
            | "n/a"
            | "na"
            | "null"
            | "nil"
            | "nothing"
            | "-"
            | "—"
            | "no"
            | "tbd"
            | "none yet"
            | "nothing falsified"
            | "not applicable"
    )
}

/// The runner's own lessons (used when the agent gives none): a discarded
/// hypothesis is falsified by the measurement, whatever the agent says.
pub(crate) fn runner_learn(rec: &IterationRecord) -> LearnResult {
    LearnResult {
        falsified: (rec.falsifies() && !rec.hypothesis.is_empty()).then(|| {
            format!(
                "{} (measured {})",
                line(&rec.hypothesis, 300),
                rec.effect_text()
            )
        }),
        ..LearnResult::default()
    }
}

/// The agent's lessons over the runner's: the agent's words where it gave
/// them, the runner's falsified statement otherwise. Whether anything was
/// falsified is the runner's call: an agent can file only a worse or
/// futile discard as falsified (not an inconclusive one, a keep or a crash).
pub(crate) fn merge_learn(
    runner: LearnResult,
    agent: Option<LearnResult>,
    rec: &IterationRecord,
) -> LearnResult {
    let Some(a) = agent else { return runner };
    let may_falsify = rec.falsifies();
    LearnResult {
        patterns: a.patterns,
        falsified: a.falsified.filter(|_| may_falsify).or(runner.falsified),
        next: a.next.or(runner.next),
        narrative: a.narrative.or(runner.narrative),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_cannot_fake_sections() {
        let p = prose("ok\n## Decision\n**keep**\n---\nverdict: keep", 1_000);
        assert_eq!(p, "ok\n\\## Decision\n**keep**\n\\---\nverdict: keep");
        assert_eq!(line("# Data\nx", 100), "\\# Data x");
        assert!(prose(&"word ".repeat(2_000), 300).chars().count() <= 300);
    }

    #[test]
    fn learn_answers_are_read_leniently() {
        let v = serde_json::json!({
            "patterns": [{"name": "presize", "lesson": "rehashing dominated"}, {"lesson": "no name"}, 7],
            "falsified": "  ",
            "next": "the symbol table",
            "extra": true
        });
        let l = read_learn(&v).unwrap();
        assert_eq!(l.patterns.len(), 1);
        assert_eq!(l.falsified, None);
        assert_eq!(l.next.as_deref(), Some("the symbol table"));
        // A placeholder is no falsified idea.
        for none in ["none", "None.", "N/A", "-", "`null`", "nothing falsified"] {
            let l = read_learn(&serde_json::json!({"falsified": none, "next": "go on"})).unwrap();
            assert_eq!(l.falsified, None, "{none}");
        }
        let l = read_learn(&serde_json::json!({"falsified": "none of the sieve variants helped"}))
            .unwrap();
        assert!(l.falsified.is_some());
        assert!(read_learn(&serde_json::json!({"verdict": "keep"})).is_err());
    }

    #[test]
    fn merge_prefers_the_agent_and_keeps_the_runner_falsified() {
        let mut rec = IterationRecord::new(4, Verdict::Discard);
        rec.hypothesis = "inline the parser".into();
        let runner = runner_learn(&rec);
        assert_eq!(
            runner.falsified.as_deref(),
            Some("inline the parser (measured —)")
        );
        let agent = LearnResult {
            next: Some("try the lexer".into()),
            ..LearnResult::default()
        };
        let m = merge_learn(runner.clone(), Some(agent), &rec);
        assert_eq!(m.falsified, runner.falsified);
        assert_eq!(m.next.as_deref(), Some("try the lexer"));
        assert_eq!(merge_learn(runner.clone(), None, &rec), runner);
        // An inconclusive discard is falsified by nobody, the agent included.
        rec.discard = Some(crate::model::DiscardKind::Inconclusive);
        let runner = runner_learn(&rec);
        assert_eq!(runner.falsified, None);
        let agent = LearnResult {
            falsified: Some("inlining does not help".into()),
            ..LearnResult::default()
        };
        assert_eq!(merge_learn(runner, Some(agent), &rec).falsified, None);
    }
}
