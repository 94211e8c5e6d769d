//! Running subagents: each in its own thread and span, with its timeout,
//! its failure turned into data by its `on_error`, its report archived.
//!
//! A phase hands [`run_all`] one [`Job`] per triggered definition; jobs
//! run at the same time (they are independent by construction: each has
//! its own context and writes only its own files), and the phase gets the
//! reports back in the order it gave the jobs. Each subagent's
//! `subagent_started` event is the parent of everything it does, so the
//! trace reads phase → subagent → model call.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use super::definition::{Definition, OnError};
use crate::driver::agent::named_files::NamedFiles;
use crate::driver::agent::{Invocation, Reply};
use crate::driver::{Breach, Caller, MainAgent, Step};
use crate::error::{Error, Result};
use crate::events::{Event, Span};
use crate::model::{
    AgentCall, CallOutcome, Finding, Phase, ReviewVerdict, Role, SubagentOutcome, SubagentReport,
    TaskState,
};

/// What a subagent's work returned, before `on_error` and archiving.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub outcome: Option<SubagentOutcome>,
    pub problem: Option<String>,
    pub verdict: Option<ReviewVerdict>,
    pub findings: Vec<Finding>,
    pub suspicious: bool,
    /// The report's body for the archive (a builtin's data, an agent's JSON).
    pub body: Value,
    pub calls: Vec<AgentCall>,
    pub breach: Option<Breach>,
    /// A synthesizer's narrative, kept in its report.
    pub narrative: Option<String>,
}

impl Answer {
    /// A command subagent with no command to run: no `agent:` of its own,
    /// and a builtin main agent.
    pub(crate) fn no_profile(def: &Definition) -> Answer {
        Answer::failed(
            SubagentOutcome::Skipped,
            format!(
                "`driver: command` needs a command profile, and the Brief's agent is builtin: set `agent: <profile>` in {}",
                def.path.display()
            ),
        )
    }

    pub(crate) fn failed(outcome: SubagentOutcome, problem: String) -> Answer {
        Answer {
            outcome: Some(outcome),
            problem: Some(problem),
            ..Answer::default()
        }
    }
}

/// A subagent's work, run in its own thread with its span.
pub(crate) type Work<'a> = Box<dyn FnOnce(&Span) -> Result<Answer> + Send + 'a>;

/// One finished subagent: its report, its model calls, its breach, its answer.
pub(crate) type Finished = (SubagentReport, Vec<AgentCall>, Option<Breach>, Value);

/// One subagent to run.
pub(crate) struct Job<'a> {
    pub def: &'a Definition,
    /// How reports name its driver (`builtin`, `command:claude`).
    pub driver: String,
    pub work: Work<'a>,
}

/// The reports, the model calls made, and what a command subagent changed
/// outside the candidate worktree.
#[derive(Debug, Default)]
pub(crate) struct Dispatched {
    pub reports: Vec<SubagentReport>,
    /// Each report's answer (a builtin's data, an agent's JSON), in order.
    pub answers: Vec<Value>,
    pub calls: Vec<AgentCall>,
    pub breaches: Vec<Breach>,
}

/// Runs `jobs` in parallel under `span` (the phase's), archives each
/// report as `artifacts/iter-NNN/<name>.<role>.json` in `dir`.
pub(crate) fn run_all(
    span: &Span,
    dir: &Path,
    iteration: u32,
    jobs: Vec<Job>,
    tag: Option<&str>,
) -> Result<Dispatched> {
    if jobs.is_empty() {
        return Ok(Dispatched::default());
    }
    let names: Vec<&str> = jobs.iter().map(|j| j.def.name.as_str()).collect();
    span.wait_for(format!("waiting for {}", names.join(", ")))?;
    // Every delegation is opened (pending) before any starts, so the log
    // shows all the phase asked for even if one finishes at once.
    let mut opened = Vec::new();
    for job in jobs {
        let started = begin(span, job.def, &job.driver)?;
        opened.push((started, job));
    }
    let results: Vec<Result<Finished>> = std::thread::scope(|s| {
        let handles: Vec<_> = opened
            .into_iter()
            .map(|(started, job)| s.spawn(move || run_one(started, dir, iteration, job, tag)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Internal("a subagent's thread panicked".into())))
            })
            .collect()
    });
    span.done_waiting()?;
    let mut out = Dispatched::default();
    for r in results {
        let (report, calls, breach, answer) = r?;
        out.reports.push(report);
        out.answers.push(answer);
        out.calls.extend(calls);
        out.breaches.extend(breach);
    }
    Ok(out)
}

fn run_one(
    started: Started,
    dir: &Path,
    iteration: u32,
    job: Job,
    tag: Option<&str>,
) -> Result<Finished> {
    started.span.task_state(TaskState::Running, None)?;
    let a = (job.work)(&started.span)?;
    end(started, dir, iteration, job.def, job.driver, a, tag)
}

/// A subagent's delegation: its span (the parent of all it does) and when
/// it began.
pub(crate) struct Started {
    pub span: Span,
    id: String,
    role: Role,
    at: Instant,
    /// The phase's span when this delegation runs alone in the caller's
    /// thread ([`begin_alone`]): its end hands the iteration back.
    alone: Option<Span>,
    ended: bool,
}

impl Drop for Started {
    /// A delegation whose work returned an error (an interrupt, a broken
    /// disk) has no report: its task still ends, so no state says it runs.
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.span.task_state(
                TaskState::Cancelled,
                Some(
                    "stopped before it reported (interrupted, or its phase ended with an error)"
                        .into(),
                ),
            );
            if let Some(phase) = self.alone.take() {
                let _ = phase.done_waiting();
            }
        }
    }
}

/// Opens a subagent's delegation under `span`: its `subagent_started`.
/// For work that runs in the caller's thread (the eval-runner, whose
/// commands need the phase's worktrees); [`run_all`] does this itself.
pub(crate) fn begin(span: &Span, def: &Definition, driver: &str) -> Result<Started> {
    let role = def.role.ok_or_else(|| {
        Error::Internal(format!(
            "subagent {} has no role but was dispatched",
            def.name
        ))
    })?;
    let id = span.new_id();
    let me = span.child_with_id(
        &id,
        Event::SubagentStarted {
            name: def.name.clone(),
            role,
            driver: driver.to_string(),
            delegation: id.clone(),
            sees: def.sees.iter().map(|s| s.as_str().to_string()).collect(),
        },
    )?;
    me.task_state(TaskState::Pending, None)?;
    Ok(Started {
        span: me,
        id,
        role,
        at: Instant::now(),
        alone: None,
        ended: false,
    })
}

/// [`begin`] for one delegation the caller runs in its own thread (the
/// eval-runner): the iteration waits for it, and it is running at once.
pub(crate) fn begin_alone(span: &Span, def: &Definition, driver: &str) -> Result<Started> {
    span.wait_for(format!("waiting for {}", def.name))?;
    let mut started = begin(span, def, driver)?;
    started.span.task_state(TaskState::Running, None)?;
    started.alone = Some(span.clone());
    Ok(started)
}

/// Closes a delegation: `on_error`, the archived report, `subagent_finished`.
///
/// `tag` names a second report of the same subagent in one iteration (the
/// reviewers' and the eval-runner's pass over a simplified candidate), so
/// it does not overwrite the first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn end(
    mut started: Started,
    dir: &Path,
    iteration: u32,
    def: &Definition,
    driver: String,
    mut a: Answer,
    tag: Option<&str>,
) -> Result<Finished> {
    // `alone` stays in `started` until the end: an error on the way leaves
    // it to `Drop`, which hands the iteration back.
    let (me, id, role) = (started.span.clone(), started.id.clone(), started.role);
    let seconds = (started.at.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let outcome = a.outcome.unwrap_or(SubagentOutcome::Done);
    if let Some(b) = &a.breach {
        a.problem = Some(format!("it changed files it must not touch: {}", b.message));
    }
    let failed = outcome != SubagentOutcome::Done || a.breach.is_some();
    let outcome = if a.breach.is_some() {
        SubagentOutcome::Failed
    } else {
        outcome
    };
    if failed && role == Role::Review {
        // A reviewer that could not look has not approved (`block`), or is
        // advisory and is left out (`pass`).
        a.verdict = match def.on_error {
            OnError::Block => Some(ReviewVerdict::Block),
            OnError::Pass => None,
        };
        a.findings.clear();
        a.problem = Some(format!(
            "{} (on_error: {})",
            a.problem.as_deref().unwrap_or("it failed"),
            def.on_error.as_str()
        ));
    }
    let rel = crate::archive::layout::Layout::report(iteration, &def.name, role.as_str(), tag);
    let report = SubagentReport {
        name: def.name.clone(),
        role,
        driver,
        delegation: id.clone(),
        outcome,
        seconds,
        problem: a.problem.map(|p| crate::text::redact::redact(&p)),
        verdict: a.verdict,
        findings: a.findings,
        suspicious: a.suspicious,
        narrative: a.narrative.clone(),
        report: Some(rel.clone()),
    };
    let archived = json!({
        "subagent": &report,
        "definition": def.path.display().to_string(),
        "built_in_copy": def.built_in,
        "timeout_seconds": def.timeout.as_secs_f64(),
        "on_error": def.on_error.as_str(),
        "answer": &a.body,
        "calls": &a.calls,
    });
    let text = serde_json::to_string_pretty(&archived)
        .map_err(|e| Error::Internal(format!("serializing a subagent report: {e}")))?;
    let path = dir.join(&rel);
    if let Some(parent) = path.parent() {
        crate::atomic::create_dir_all(parent)?;
    }
    crate::atomic::write_atomic(&path, crate::text::redact::redact(&text).as_bytes())?;
    me.emit(Event::SubagentFinished {
        name: report.name.clone(),
        role,
        delegation: id,
        outcome,
        seconds,
        verdict: report.verdict,
        findings: report.findings.len(),
        problem: report.problem.clone(),
    })?;
    let ended = match outcome {
        SubagentOutcome::Done | SubagentOutcome::Skipped => TaskState::Succeeded,
        SubagentOutcome::Failed | SubagentOutcome::TimedOut => TaskState::Failed,
    };
    me.task_state(
        ended,
        Some(match &report.problem {
            Some(p) => format!("{}: {}", outcome.as_str(), crate::text::clip::clip(p, 160)),
            None => outcome.as_str().to_string(),
        }),
    )?;
    started.ended = true;
    if let Some(phase) = started.alone.take() {
        phase.done_waiting()?;
    }
    Ok((report, a.calls, a.breach, a.body))
}

/// The agent a subagent runs: for `driver: llm`, ooda's own loop on the
/// definition's model; for `driver: command`, its own `agent` profile, else
/// the Brief's agent. `Err` says why it cannot run (the subagent is skipped).
pub(crate) fn caller(
    t: &Step,
    def: &Definition,
    main: &MainAgent,
) -> std::result::Result<Box<dyn crate::driver::Caller>, String> {
    use crate::subagents::definition::SubDriver;
    if def.driver == SubDriver::Llm {
        let main_choice = match main {
            MainAgent::Llm(l) => Some(l.setup.choice.as_str()),
            _ => None,
        };
        let model = def.model.for_llm(main_choice);
        return crate::driver::llm::LlmSetup::resolve(t.config, t.brief, model.as_deref())
            .map(|setup| {
                Box::new(crate::driver::LlmAgent::new(setup)) as Box<dyn crate::driver::Caller>
            })
            .map_err(|why| format!("{}: driver: llm: {why}", def.path.display()));
    }
    let no_profile = || Answer::no_profile(def).problem.unwrap_or_default();
    match def.agent.as_deref() {
        Some(a) => t
            .config
            .agents
            .get(a)
            .map(|p| {
                Box::new(crate::driver::CommandAgent {
                    name: a.to_string(),
                    profile: p.clone(),
                    sandboxed: t.executor.agent_confinement().0.is_some(),
                }) as Box<dyn crate::driver::Caller>
            })
            .ok_or_else(no_profile),
        None => main.caller().map(|c| c.clone_box()).ok_or_else(no_profile),
    }
}

/// A command or llm subagent's work in REVIEW: `prompt` run by its agent
/// in `dir` (the candidate, or the simplifier's copy), its answer's JSON
/// given to `read`; skipped, saying why, when it has no agent to run.
pub(crate) fn agent_work<'a>(
    t: &'a Step,
    def: &'a Definition,
    main: &MainAgent,
    prompt: String,
    dir: &'a Path,
    read: impl FnOnce(&Value, &mut Answer) -> std::result::Result<(), String> + Send + 'a,
) -> Work<'a> {
    let agent = caller(t, def, main);
    Box::new(move |span| match agent {
        Err(why) => Ok(Answer::failed(SubagentOutcome::Skipped, why)),
        Ok(agent) => run_command(
            t,
            agent.as_ref(),
            def,
            Phase::Review,
            &prompt,
            dir,
            span,
            read,
        ),
    })
}

/// Runs a command subagent once: the main agent's invocation contract, in
/// `cwd` (the candidate worktree, or the simplifier's scratch copy), with `OODA_PHASE` set to its role, its own
/// timeout, `OODA_MODEL` when its model resolves, and the fence around it.
/// The answer's JSON (or why there is none) goes to `read`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_command(
    t: &Step,
    agent: &dyn Caller,
    def: &Definition,
    phase: Phase,
    prompt: &str,
    cwd: &Path,
    span: &Span,
    read: impl FnOnce(&Value, &mut Answer) -> std::result::Result<(), String>,
) -> Result<Answer> {
    let role = def.role.unwrap_or(Role::Review);
    let model = def.model.resolve(t.config);
    let agent = agent.for_subagent(def.timeout, model.clone());
    // A subagent reads (review, analyze, synthesize) or edits a scratch
    // copy (simplify): it gets the profile's arguments for the step that
    // does the same, so an `ask` mode keeps a reviewer from editing.
    let like = if role == Role::Simplify {
        Phase::Execute
    } else {
        Phase::Plan
    };
    let files = NamedFiles::default();
    let call_span = span.child(Event::ModelCall {
        phase,
        profile: agent.who(),
        attempt: 1,
        attempts: 1,
        command: agent.command_line_for(like, &files),
        prompt_chars: crate::text::clip::chars(prompt),
        model,
    })?;
    // Beside the main agent's files, never in place of them (a subagent
    // named `plan` must not overwrite PLAN's prompt).
    let files_dir = crate::archive::layout::Layout::of(t.dir).subagent_files(t.iteration);
    let inv = Invocation {
        phase: like,
        attempt: 1,
        brief_path: &t.brief.path,
        brief_name: &t.brief.name,
        iteration: t.iteration,
        cwd,
        iterations_dir: t.dir,
        files_dir: &files_dir,
        prompt,
        output_cap: usize::try_from(t.config.defaults.output_cap).unwrap_or(usize::MAX),
        files: &files,
        subagent: Some((&def.name, role)),
        span: &call_span,
        sets_knobs: false,
    };
    // An outage of the provider is waited out as for the main agent (up to
    // `defaults.agent_outage`): it says nothing about the change.
    let mut outage = crate::run::outage::Outage::new(t.config.defaults.agent_outage);
    let mut earlier = Vec::new();
    let (reply, breach) = loop {
        let (reply, breach) = crate::driver::agent::steps::fenced(
            &*agent,
            t,
            || {
                let lease = t.executor.lease(crate::run::executor::Purpose::Agent)?;
                agent.call(&inv, lease.as_ref(), t.cancel).map(|mut r| {
                    r.call.files = inv.written();
                    Ok(r)
                })
            },
            |e| Err(e.to_string()),
        )?;
        let unavailable = match &reply {
            Ok(r) if r.call.outcome == CallOutcome::Unavailable && breach.is_none() => r,
            _ => break (reply, breach),
        };
        let Some(this) = outage.next_wait() else {
            break (reply, breach);
        };
        let mut call = unavailable.call.clone();
        call.phase = phase;
        call.waited = (this.as_secs_f64() * 10.0).round() / 10.0;
        call_span.emit(Event::model_result(&call))?;
        earlier.push(call);
        crate::run::interrupt::sleep_unless(this, t.cancel)?;
    };
    let mut a = Answer {
        breach,
        calls: earlier,
        ..Answer::default()
    };
    let reply: Reply = match reply {
        Ok(r) => r,
        Err(e) => {
            a.outcome = Some(SubagentOutcome::Failed);
            a.problem = Some(e);
            return Ok(a);
        }
    };
    let mut call = reply.call.clone();
    call.phase = phase;
    match (&reply.result, reply.finished()) {
        (_, false) => {
            a.outcome = Some(if call.outcome == CallOutcome::TimedOut {
                SubagentOutcome::TimedOut
            } else {
                SubagentOutcome::Failed
            });
            a.problem = call.problem.clone();
        }
        (Err(why), true) => {
            call.outcome = CallOutcome::NoResult;
            a.outcome = Some(SubagentOutcome::Failed);
            a.problem = Some(format!("no answer: {why}"));
        }
        (Ok((v, _)), true) => {
            a.body = v.clone();
            if let Err(why) = read(v, &mut a) {
                call.outcome = CallOutcome::NoResult;
                a.outcome = Some(SubagentOutcome::Failed);
                a.problem = Some(why);
            }
        }
    }
    if call.problem.is_none() {
        call.problem.clone_from(&a.problem);
    }
    call_span.emit(Event::model_result(&call))?;
    a.calls.push(call);
    Ok(a)
}

/// Reads a reviewer's answer: `{"verdict": "approve"|"block", "findings":
/// [{"file", "line", "rule", "why"}], "suspicious": bool}`, leniently in
/// what a finding holds, strictly in the verdict.
pub(crate) fn read_review(v: &Value, a: &mut Answer) -> std::result::Result<(), String> {
    let verdict = match v.get("verdict").and_then(Value::as_str).map(str::trim) {
        Some(s) if s.eq_ignore_ascii_case("approve") => ReviewVerdict::Approve,
        Some(s) if s.eq_ignore_ascii_case("block") => ReviewVerdict::Block,
        other => {
            return Err(format!(
                "the answer is not a review: `verdict` must be \"approve\" or \"block\", found {}",
                other
                    .map(|s| format!("\"{s}\""))
                    .unwrap_or_else(|| "nothing".into())
            ));
        }
    };
    let text = |f: &Value, k: &str| {
        f.get(k)
            .map(|x| match x {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                x => x.to_string(),
            })
            .unwrap_or_default()
    };
    for f in v
        .get("findings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let finding = match f {
            Value::String(s) => Finding {
                file: String::new(),
                line: None,
                rule: "reviewer".into(),
                why: clean(s, 400),
                advisory: false,
            },
            f => Finding {
                file: clean(&text(f, "file"), 200),
                line: f
                    .get("line")
                    .and_then(|l| l.as_u64().or_else(|| l.as_str()?.trim().parse().ok()))
                    .and_then(|l| u32::try_from(l).ok()),
                rule: Some(clean(&text(f, "rule"), 80))
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "reviewer".into()),
                why: clean(&text(f, "why"), 400),
                advisory: false,
            },
        };
        a.findings.push(finding);
    }
    a.suspicious = v
        .get("suspicious")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    a.verdict = Some(verdict);
    Ok(())
}

/// A reviewer's text as the archive keeps it: one line, redacted (a
/// reviewer may quote the secret it found), clipped.
fn clean(s: &str, max: usize) -> String {
    crate::text::clip::clip(&crate::text::redact::redact(s), max)
}

/// The answer a reviewer is asked for.
pub(crate) const REVIEW_ANSWER: &str = "Answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"verdict\": \"approve\", \"findings\": [{\"file\": \"src/a.rs\", \"line\": 12, \"rule\": \"no-debug-prints\", \"why\": \"one sentence\"}], \"suspicious\": false}\n```\n\n`verdict` is \"approve\" or \"block\"; `findings` may be empty; `suspicious` is true when you think the change games the benchmark rather than improving the program.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_read_strictly_in_the_verdict_and_leniently_in_findings() {
        let mut a = Answer::default();
        let v = json!({"verdict": "Block", "findings": [
            {"file": "src/a.rs", "line": "12", "rule": "no-cache", "why": "caches across runs"},
            "a bare sentence",
            {"why": "no rule given", "line": 3}
        ], "suspicious": true});
        read_review(&v, &mut a).unwrap();
        assert_eq!(a.verdict, Some(ReviewVerdict::Block));
        assert!(a.suspicious);
        assert_eq!(
            a.findings[0].text(),
            "src/a.rs:12 [no-cache] caches across runs"
        );
        assert_eq!(a.findings[1].rule, "reviewer");
        assert_eq!(a.findings[2].line, Some(3));
        let e = read_review(&json!({"verdict": "lgtm"}), &mut Answer::default()).unwrap_err();
        assert!(e.contains("found \"lgtm\""), "{e}");
        assert!(read_review(&json!({}), &mut Answer::default()).is_err());
    }
}
