//! PLAN, EXECUTE and LEARN played by a command agent (DESIGN.md §4, §7).
//!
//! The phase machine (`phases.rs`) owns checkpoints and verdicts; this module
//! owns the conversation with the agent inside one phase: which prompt it
//! gets, how its answer is read and validated, when it gets another try, and
//! how what it said is merged into the runner's record. Everything the agent
//! returns is treated as untrusted input:
//!
//! - a plan is validated by code (`plan.rs`); a rejected or unreadable plan is
//!   sent back with the validator's message, at most twice, and then the
//!   iteration ends `invalid` with that message as its reason;
//! - a timed-out or failed call is not retried (the next iteration is the
//!   retry, and five failures in a row stop the run): it is recorded;
//! - agent prose is bounded and cannot fake the runner's sections of an
//!   iteration file; Data and Decision are never the agent's;
//! - an agent that commits in the candidate worktree is undone (its edits
//!   kept), so the scope check sees every change it made.

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::brief::Brief;
use crate::config::Config;
use crate::driver::command::{AgentCall, CallOutcome, CommandAgent, Invocation, Reply};
use crate::error::{IoContext, Result};
use crate::events::{Event, EventLog};
use crate::history::{IterationRecord, Verdict};
use crate::knobs::Point;
use crate::plan::{self, Axis, LearnResult, Pattern, Plan};
use crate::prompt::{self, PlanView, bound, clip};

/// One try plus the two retries DESIGN.md §7 allows an invalid plan.
pub const PLAN_ATTEMPTS: u32 = 3;

/// The reason prefix of an iteration whose EXECUTE step failed; like
/// "plan rejected", it ends the iteration `invalid`.
pub const EXECUTE_FAILED: &str = "execute failed";

/// Whether a reason for not measuring means `invalid` (rather than `blocked`,
/// which is kept for scope violations).
pub fn is_invalid(reason: &str) -> bool {
    reason.starts_with("plan rejected")
        || reason.starts_with(EXECUTE_FAILED)
        || reason.starts_with(BUDGET_CUT)
}

/// The reason prefix of an iteration cut short because a budget ran out
/// before a phase that spends (its candidate is never measured).
pub const BUDGET_CUT: &str = "budget reached before";

/// What a step needs from the runner.
pub struct Step<'a> {
    pub agent: &'a CommandAgent,
    pub root: &'a Path,
    pub config: &'a Config,
    pub brief: &'a Brief,
    /// `iterations/<brief>`.
    pub dir: &'a Path,
    /// The candidate worktree: the agent's working directory.
    pub cand_dir: &'a Path,
    pub history: &'a [IterationRecord],
    pub iteration: u32,
    pub run_started: DateTime<Utc>,
    pub events: &'a mut EventLog,
    /// The phase's event id.
    pub parent: &'a str,
    pub cancel: &'a AtomicBool,
    pub say: Box<dyn Fn(&str) + 'a>,
}

impl Step<'_> {
    fn template(&self, name: &str) -> String {
        crate::scaffold::template(self.root, name).unwrap_or_default()
    }

    /// Runs the agent once, with events around the call.
    fn call(&mut self, phase: &str, attempt: u32, prompt: &str) -> Result<Reply> {
        let files = Invocation::files_dir_for(self.dir, self.iteration);
        self.events.emit(
            Some(self.iteration),
            Some(self.parent),
            Event::ModelCall {
                phase: phase.into(),
                profile: self.agent.name.clone(),
                attempt,
                command: self.agent.command_line(),
                prompt_chars: prompt::chars(prompt),
            },
        )?;
        let retry = if attempt > 1 {
            format!(" (attempt {attempt} of {PLAN_ATTEMPTS})")
        } else {
            String::new()
        };
        (self.say)(&format!(
            "{phase}: running agent `{}`{retry}",
            self.agent.name
        ));
        let inv = Invocation {
            phase,
            attempt,
            brief_path: &self.brief.path,
            brief_name: &self.brief.name,
            iteration: self.iteration,
            cwd: self.cand_dir,
            iterations_dir: self.dir,
            files_dir: &files,
            prompt,
            output_cap: usize::try_from(self.config.defaults.output_cap).unwrap_or(usize::MAX),
        };
        self.agent.run(&inv, self.cancel)
    }

    /// Records how a call ended, once its outcome is final.
    fn finished(&mut self, call: &AgentCall) -> Result<()> {
        self.events.emit(
            Some(self.iteration),
            Some(self.parent),
            Event::ModelResult {
                phase: call.phase.clone(),
                attempt: call.attempt,
                outcome: call.outcome.as_str().into(),
                exit_code: call.exit_code,
                seconds: call.seconds,
                tokens_in: call.usage.input,
                tokens_out: call.usage.output,
                cached: call.usage.cached,
                cost_usd: call.usage.cost_usd,
                model: call.model.clone(),
                problem: call.problem.clone(),
            },
        )?;
        if let Some(p) = &call.problem {
            (self.say)(&format!(
                "{}: agent {}: {}",
                call.phase,
                call.outcome.as_str(),
                clip(p, 200)
            ));
        }
        Ok(())
    }
}

/// The PLAN step's result.
#[derive(Debug)]
pub struct PlanOutcome {
    /// The accepted plan, or the last one the agent proposed (for the record)
    /// when none was accepted.
    pub plan: Plan,
    /// Set when no plan was accepted: the reason the iteration is `invalid`.
    pub rejected: Option<String>,
    pub calls: Vec<AgentCall>,
}

/// Asks the agent for a plan, validating each answer and sending the
/// validator's message back for up to two more tries.
pub fn plan(step: &mut Step, best: &Point) -> Result<PlanOutcome> {
    let template = step.template("plan.md");
    let iterations_dir = step.dir.display().to_string();
    let limits = step.config.budget_for(step.brief);
    let mut calls = Vec::new();
    let mut retry: Option<String> = None;
    let mut proposed: Option<Plan> = None;
    let mut last_rejection = String::new();
    let analysis = analysis(step.history);
    for attempt in 1..=PLAN_ATTEMPTS {
        let (text, _) = prompt::plan(&PlanView {
            template: &template,
            brief: step.brief,
            history: step.history,
            iteration: step.iteration,
            limits: limits.clone(),
            run_started: step.run_started,
            now: Utc::now(),
            iterations_dir: &iterations_dir,
            best_point: best,
            analysis: analysis.as_deref(),
            retry: retry.as_deref(),
            max_chars: step.config.defaults.prompt_budget,
        });
        let mut reply = step.call("plan", attempt, &text)?;
        if !reply.finished() {
            let problem = reply.call.problem.clone().unwrap_or_default();
            step.finished(&reply.call)?;
            calls.push(reply.call);
            return Ok(PlanOutcome {
                plan: proposed.unwrap_or_default(),
                rejected: Some(format!("plan rejected (agent): {problem}")),
                calls,
            });
        }
        match read_plan(step, &reply, best) {
            Ok(plan) => {
                reply.call.problem = None;
                step.finished(&reply.call)?;
                calls.push(reply.call);
                return Ok(PlanOutcome {
                    plan,
                    rejected: None,
                    calls,
                });
            }
            Err((rule, message, plan)) => {
                reply.call.outcome = if rule == "format" {
                    CallOutcome::NoResult
                } else {
                    CallOutcome::Rejected
                };
                reply.call.problem = Some(format!("({rule}) {message}"));
                step.events.emit(
                    Some(step.iteration),
                    Some(step.parent),
                    Event::PlanRejected {
                        rule: rule.into(),
                        message: message.clone(),
                    },
                )?;
                step.finished(&reply.call)?;
                calls.push(reply.call);
                if let Some(p) = plan {
                    proposed = Some(*p);
                }
                last_rejection = format!("({rule}) after {PLAN_ATTEMPTS} attempts: {message}");
                retry = Some(format!(
                    "Attempt {attempt} of {PLAN_ATTEMPTS} was rejected by rule `{rule}`: {message}"
                ));
            }
        }
    }
    Ok(PlanOutcome {
        plan: proposed.unwrap_or_default(),
        rejected: Some(format!("plan rejected {last_rejection}")),
        calls,
    })
}

/// What the runner's own analysis says for the next PLAN: the latest
/// pipeline-analyzer report (archived with the plateau alarm that triggered
/// it) and the alarms raised after the last iteration.
pub fn analysis(history: &[IterationRecord]) -> Option<String> {
    let mut parts = Vec::new();
    if let Some((at, report)) = history.iter().rev().find_map(|r| {
        r.alarms
            .iter()
            .find(|a| a.kind == crate::model::AlarmKind::Plateau)
            .map(|a| (r.iteration, &a.evidence))
    }) {
        parts.push(format!(
            "Pipeline-analyzer report (after iteration {at}): {report}"
        ));
    }
    if let Some(last) = history.last() {
        for a in last
            .alarms
            .iter()
            .filter(|a| a.kind != crate::model::AlarmKind::Plateau)
        {
            parts.push(format!(
                "Alarm after iteration {}: {} — {}",
                last.iteration, a.kind, a.evidence
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

type PlanError = (&'static str, String, Option<Box<Plan>>);

/// The reply as a validated plan, or the rule it broke, the message for the
/// agent, and the plan as proposed (when it parsed).
fn read_plan(step: &Step, reply: &Reply, best: &Point) -> Result<Plan, PlanError> {
    let value = match &reply.result {
        Ok((v, _)) => v.clone(),
        Err(e) => {
            let why = reply.tool_error.clone().unwrap_or_else(|| e.clone());
            return Err(("format", why, None));
        }
    };
    let mut plan: Plan = serde_json::from_value(value).map_err(|e| {
        (
            "format",
            format!("the ooda block is not a valid plan ({e}); use exactly the fields of the JSON shown in the task"),
            None,
        )
    })?;
    sanitize_plan(&mut plan);
    if let Err(r) = plan::validate_knobs(&mut plan, &step.brief.knobs, best) {
        return Err((r.rule, r.message, Some(Box::new(plan))));
    }
    if let Err(r) = plan::validate(&plan, step.history, step.iteration) {
        return Err((r.rule, r.message, Some(Box::new(plan))));
    }
    Ok(plan)
}

fn sanitize_plan(p: &mut Plan) {
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
pub fn prose(s: &str, max: usize) -> String {
    bound(s.trim(), max)
        .lines()
        .map(escape_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line of agent text, at most `max` characters, escaped like [`prose`].
pub fn line(s: &str, max: usize) -> String {
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

/// The EXECUTE step's result.
#[derive(Debug)]
pub struct ExecuteOutcome {
    /// Set when the agent failed: the reason the iteration is `invalid`.
    pub failure: Option<String>,
    /// The agent's own description of what it changed, if it gave one.
    pub change: Option<String>,
    pub calls: Vec<AgentCall>,
}

/// Asks the agent to apply `plan` in the candidate worktree.
pub fn execute(step: &mut Step, plan: &Plan) -> Result<ExecuteOutcome> {
    let template = step.template("execute.md");
    let text = prompt::execute(&prompt::ExecuteView {
        template: &template,
        brief: step.brief,
        iteration: step.iteration,
        plan,
        max_chars: step.config.defaults.prompt_budget,
    });
    let mut reply = step.call("execute", 1, &text)?;
    let mut failure = None;
    if !reply.finished() {
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
    Ok(ExecuteOutcome {
        failure: failure.map(|f| format!("{EXECUTE_FAILED}: {f}")),
        change,
        calls: vec![reply.call],
    })
}

/// Asks the agent what the measured outcome teaches. `None` when it gave
/// nothing usable (the iteration is archived anyway, with the runner's data).
pub fn learn(
    step: &mut Step,
    rec: &IterationRecord,
) -> Result<(Option<LearnResult>, Vec<AgentCall>)> {
    let template = step.template("learn.md");
    let known = prompt::pattern_entries(step.history);
    let text = prompt::learn(&prompt::LearnView {
        template: &template,
        brief: step.brief,
        record: rec,
        known_patterns: &known,
        max_chars: step.config.defaults.prompt_budget,
    });
    let mut reply = step.call("learn", 1, &text)?;
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
    Ok((learned, vec![reply.call]))
}

/// Patterns an iteration may add (a long list is a sign of noise, not insight).
const MAX_PATTERNS_PER_ITERATION: usize = 8;

/// Reads a LEARN answer leniently: unknown keys and malformed entries are
/// dropped rather than failing the whole answer.
fn read_learn(v: &Value) -> std::result::Result<LearnResult, String> {
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
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

/// The runner's own lessons (used when the agent gives none): a discarded
/// hypothesis is falsified by the measurement, whatever the agent says.
pub fn runner_learn(rec: &IterationRecord) -> LearnResult {
    LearnResult {
        falsified: (rec.verdict == Verdict::Discard && !rec.hypothesis.is_empty()).then(|| {
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
/// them, the runner's falsified statement otherwise.
pub fn merge_learn(runner: LearnResult, agent: Option<LearnResult>) -> LearnResult {
    let Some(a) = agent else { return runner };
    LearnResult {
        patterns: a.patterns,
        falsified: a.falsified.or(runner.falsified),
        next: a.next.or(runner.next),
        narrative: a.narrative.or(runner.narrative),
    }
}

/// Undoes commits the agent made in the candidate worktree, keeping their
/// changes as uncommitted edits: the runner owns the branch, and the scope
/// check compares the worktree with the base commit. Returns what was undone.
pub fn undo_agent_commits(
    cand_dir: &Path,
    branch: &str,
    base: git2::Oid,
) -> Result<Option<String>> {
    let repo =
        git2::Repository::open(cand_dir).ctx(|| format!("opening {}", cand_dir.display()))?;
    let head = repo.head().ok();
    let on_branch = head
        .as_ref()
        .and_then(|h| h.shorthand().ok().map(|s| s == branch))
        .unwrap_or(false);
    let at = head.as_ref().and_then(|h| h.target());
    if on_branch && at == Some(base) {
        return Ok(None);
    }
    if !on_branch {
        repo.set_head(&format!("refs/heads/{branch}"))
            .ctx(|| format!("moving the candidate back to {branch}"))?;
    }
    let obj = repo
        .find_object(base, None)
        .ctx(|| format!("finding {base}"))?;
    repo.reset(&obj, git2::ResetType::Mixed, None)
        .ctx(|| "undoing the agent's commits".into())?;
    Ok(Some(format!(
        "the agent moved the candidate's HEAD ({}); the runner reset it to the base commit {}, keeping the agent's edits uncommitted",
        at.map(|o| crate::history::short(&o.to_string()).to_string())
            .unwrap_or_else(|| "unborn".into()),
        crate::history::short(&base.to_string())
    )))
}

/// A snapshot of the work trees an agent must not touch while it runs in the
/// candidate: the user's checkout (ooda's own `iterations/` and `.ooda/`
/// aside) and the base worktree. Sandboxed CLIs cannot write there, but a
/// script can, and a changed base would corrupt the measurement while a
/// changed checkout breaks the promise that it is never modified.
pub struct Fence {
    trees: Vec<Watched>,
    /// The Brief's archive (`iter-*.md`, `summary.md`, `state.json`): an
    /// agent must not rewrite the history it is judged by. Hashed file by
    /// file, since git status sees neither ignored nor untracked-folder files.
    archive: PathBuf,
    archive_before: BTreeMap<PathBuf, String>,
}

/// One watched work tree: where, what to skip, whether to walk untracked
/// folders, and its dirty files when the agent started.
struct Watched {
    dir: PathBuf,
    skip: Vec<PathBuf>,
    recurse: bool,
    before: BTreeMap<PathBuf, String>,
}

impl Fence {
    pub fn new(root: &Path, base_dir: &Path, archive: &Path) -> Result<Fence> {
        // Briefs may be edited by a human at any time (DESIGN.md §3).
        let skip = vec![
            root.join("iterations"),
            root.join(".ooda"),
            root.join("briefs"),
        ];
        let mut trees = Vec::new();
        // The user's checkout is not walked into untracked folders (a
        // checkout without `.ooda/` ignored would hold the worktrees there);
        // the base worktree is ooda's own and small enough to walk whole.
        for (dir, skip, recurse) in [(root, skip, false), (base_dir, Vec::new(), true)] {
            let before = dirty(dir, &skip, recurse)?;
            trees.push(Watched {
                dir: dir.to_path_buf(),
                skip,
                recurse,
                before,
            });
        }
        Ok(Fence {
            trees,
            archive: archive.to_path_buf(),
            archive_before: archive_files(archive),
        })
    }

    /// Paths that changed since the snapshot, or `None`.
    pub fn breached(&self) -> Result<Option<String>> {
        let mut changed = Vec::new();
        for Watched {
            dir,
            skip,
            recurse,
            before,
        } in &self.trees
        {
            let after = dirty(dir, skip, *recurse)?;
            for (path, state) in &after {
                if before.get(path) != Some(state) {
                    changed.push(path.display().to_string());
                }
            }
            for path in before.keys().filter(|p| !after.contains_key(*p)) {
                changed.push(path.display().to_string());
            }
        }
        let after = archive_files(&self.archive);
        for (path, hash) in &after {
            if self.archive_before.get(path) != Some(hash) {
                changed.push(path.display().to_string());
            }
        }
        for path in self
            .archive_before
            .keys()
            .filter(|p| !after.contains_key(*p))
        {
            changed.push(path.display().to_string());
        }
        Ok((!changed.is_empty()).then(|| {
            changed.sort();
            format!(
                "the agent changed files outside the candidate worktree: {}",
                clip(&changed.join(", "), 600)
            )
        }))
    }
}

/// The archive's own files, hashed (artifacts and the event log, which ooda
/// writes while the agent runs, are not part of it).
fn archive_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = (name.starts_with("iter-") && name.ends_with(".md"))
            || name == "summary.md"
            || name == "state.json";
        if ours && let Ok(o) = git2::Oid::hash_file(git2::ObjectType::Blob, e.path()) {
            out.insert(e.path(), o.to_string());
        }
    }
    out
}

/// Changed and untracked files of the work tree containing `dir` (absolute
/// paths, with a content hash), ignored files and `skip` prefixes excluded.
fn dirty(dir: &Path, skip: &[PathBuf], recurse: bool) -> Result<BTreeMap<PathBuf, String>> {
    let repo = git2::Repository::discover(dir)
        .ctx(|| format!("opening the repository at {}", dir.display()))?;
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(BTreeMap::new());
    };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(recurse)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("reading the status of {}", workdir.display()))?;
    let mut out = BTreeMap::new();
    for st in statuses.iter() {
        let Ok(rel) = st.path() else { continue };
        let path = workdir.join(rel);
        if skip.iter().any(|p| path.starts_with(p)) || !path.starts_with(dir) {
            continue;
        }
        let hash = git2::Oid::hash_file(git2::ObjectType::Blob, &path)
            .map(|o| o.to_string())
            .unwrap_or_else(|_| "missing".into());
        out.insert(path, format!("{}:{hash}", st.status().bits()));
    }
    Ok(out)
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
        assert!(read_learn(&serde_json::json!({"verdict": "keep"})).is_err());
    }

    #[test]
    fn merge_prefers_the_agent_and_keeps_the_runner_falsified() {
        let mut rec = IterationRecord::new_for_test(4, Verdict::Discard);
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
        let m = merge_learn(runner.clone(), Some(agent));
        assert_eq!(m.falsified, runner.falsified);
        assert_eq!(m.next.as_deref(), Some("try the lexer"));
        assert_eq!(merge_learn(runner.clone(), None), runner);
    }

    #[test]
    fn analysis_hands_the_analyzer_report_to_the_next_plan() {
        use crate::redlight::Alarm;
        assert_eq!(analysis(&[]), None);
        let mut a = IterationRecord::new_for_test(4, Verdict::Discard);
        a.alarms = vec![Alarm::yellow(
            crate::model::AlarmKind::Plateau,
            "axis X up: 4 tries, 0 keeps".into(),
        )];
        let mut b = IterationRecord::new_for_test(5, Verdict::Discard);
        b.alarms = vec![Alarm::yellow(
            crate::model::AlarmKind::NoiseChanged,
            "s²/s_h² = 9".into(),
        )];
        let text = analysis(&[a, b]).unwrap();
        assert!(
            text.contains("(after iteration 4): axis X up: 4 tries, 0 keeps"),
            "{text}"
        );
        assert!(text.contains("Alarm after iteration 5: noise_changed — s²/s_h² = 9"));
    }

    #[test]
    fn invalid_reasons() {
        assert!(is_invalid("plan rejected (cites) after 3 attempts: x"));
        assert!(is_invalid("execute failed: the agent timed out"));
        assert!(!is_invalid("changed protected path(s) bench.sh"));
    }
}
