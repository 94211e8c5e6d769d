//! Did it actually succeed? A grade — pass, warn or fail, with the reasons —
//! for each iteration and for the run.
//!
//! A verdict says what the measurement decided; it does not say whether the
//! step that led to it went well. An iteration can be a "discard" because
//! the agent never answered, or a "keep" reached after three failed model
//! calls and a tool failing every other time; a run can end on its budget
//! while it was still improving. These heuristics read the archive and the
//! trace for exactly those signs, so a morning reader knows which verdicts
//! to trust and where to look. A judge subagent (`role: judge`) may add a
//! qualitative verdict of its own at the end of a run; it is shown beside
//! these, never instead of them.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::archive::history::fact::Fact;
use crate::model::{
    Budget, CallOutcome, IterationRecord, LoggedAnomaly as Logged, Phase, Stop, StopReason, Verdict,
};
pub(crate) use crate::model::{Grade, JudgedIteration, Judgement};
use crate::report::trace::{Kind, Node, Status};

/// One check that did not pass: which, how bad, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Finding {
    /// `final_answer`, `anomaly`, `model_calls`, `agent_calls`,
    /// `time_limit`, `tool_errors`, `verdict`, `stop`, `confirmation`,
    /// `iterations`, `progress`.
    pub check: &'static str,
    pub grade: Grade,
    pub reason: String,
}

/// The grade of an iteration (or of the run, `iteration` None).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Graded {
    pub iteration: Option<u32>,
    pub grade: Grade,
    /// The checks that warned or failed; none for a pass.
    pub findings: Vec<Finding>,
}

impl Graded {
    fn of(iteration: Option<u32>, findings: Vec<Finding>) -> Graded {
        Graded {
            iteration,
            grade: findings
                .iter()
                .map(|f| f.grade)
                .max()
                .unwrap_or(Grade::Pass),
            findings,
        }
    }

    /// "warn: 2 of 3 model requests failed; …", or "pass".
    pub(crate) fn text(&self) -> String {
        if self.findings.is_empty() {
            return self.grade.as_str().to_string();
        }
        let why: Vec<&str> = self.findings.iter().map(|f| f.reason.as_str()).collect();
        format!("{}: {}", self.grade.as_str(), why.join("; "))
    }
}

/// The run's grade, every iteration's, and the judge's verdict if one ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Evaluation {
    pub run: Graded,
    pub iterations: Vec<Graded>,
    pub judge: Option<Judgement>,
    /// Why a judge that ran gave no verdict (it failed, timed out, answered
    /// in no known shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_failed: Option<String>,
}

/// What the checks read.
pub(crate) struct Inputs<'a> {
    /// The iterations graded one by one: the baseline first, then the
    /// newest the runner holds in full (every one in a short archive).
    pub graded: Vec<&'a IterationRecord>,
    /// A row per iteration, for the checks of the run as a whole.
    pub facts: &'a [Fact],
    /// The latest confirmation attempt (measured or not), with its record.
    pub attempt: Option<&'a IterationRecord>,
    /// The latest run's trace, if the log has it.
    pub run: Option<&'a Node>,
    pub anomalies: &'a [Logged],
    pub budget: &'a Budget,
    pub stop: Option<&'a Stop>,
    /// When the run started: how far into a wall-clock budget a keep came.
    pub started: Option<DateTime<Utc>>,
}

/// A tool failing this often is failing the agent, not being explored.
const TOOL_ERROR_RATE: f64 = 0.3;
/// Below this many tool calls, a rate says little.
const MIN_TOOL_CALLS: usize = 3;
/// Of the iterations, the share that failing fails the run.
const FAILED_SHARE: f64 = 0.5;
/// The last share of an iteration budget a keep in which means the search
/// was still improving when the budget ended it.
const STILL_IMPROVING: f64 = 0.2;

pub(crate) fn evaluate(x: &Inputs) -> Evaluation {
    let iterations: Vec<Graded> = x
        .graded
        .iter()
        .map(|rec| {
            let node = x
                .run
                .and_then(|r| crate::report::trace::iteration(r, rec.iteration));
            iteration(rec, node, x.anomalies)
        })
        .collect();
    let run = run(x, &iterations);
    Evaluation {
        run,
        iterations,
        judge: None,
        judge_failed: None,
    }
}

fn finding(check: &'static str, grade: Grade, reason: String) -> Finding {
    Finding {
        check,
        grade,
        reason,
    }
}

fn iteration(rec: &IterationRecord, node: Option<&Node>, anomalies: &[Logged]) -> Graded {
    let mut f = Vec::new();
    // The main agent's steps, as archived.
    let main: Vec<_> = rec
        .agent_calls
        .iter()
        .filter(|c| matches!(c.phase, Phase::Plan | Phase::Execute))
        .collect();
    for phase in [Phase::Plan, Phase::Execute] {
        let calls: Vec<_> = main.iter().filter(|c| c.phase == phase).collect();
        let Some(last) = calls.last() else { continue };
        match last.outcome {
            CallOutcome::Ok | CallOutcome::Rejected => {}
            CallOutcome::TimedOut => f.push(finding(
                "time_limit",
                Grade::Fail,
                format!(
                    "{}'s agent hit its time limit ({:.0} s)",
                    phase.as_str().to_uppercase(),
                    last.seconds
                ),
            )),
            CallOutcome::Unavailable => {}
            other => f.push(finding(
                "final_answer",
                Grade::Fail,
                format!(
                    "no final answer: {}'s agent ended {}{}",
                    phase.as_str().to_uppercase(),
                    outcome_word(other),
                    last.problem
                        .as_deref()
                        .map(|p| format!(" ({})", crate::text::clip::clip(p, 120)))
                        .unwrap_or_default()
                ),
            )),
        }
        if calls.len() > 1 && last.outcome == CallOutcome::Ok {
            f.push(finding(
                "agent_calls",
                Grade::Warn,
                format!(
                    "{} needed {} attempts",
                    phase.as_str().to_uppercase(),
                    calls.len()
                ),
            ));
        }
    }
    let outage = rec.cut_by_outage();
    match rec.verdict {
        // An outage says nothing about the agent or the change.
        Verdict::Invalid if outage => f.push(finding(
            "model_calls",
            Grade::Warn,
            "cut by an outage of the agent's model API".into(),
        )),
        // The budget ran out before it could be measured: the run's end,
        // not a failure of this iteration.
        Verdict::Invalid if rec.cut_by_budget() => f.push(finding(
            "time_limit",
            Grade::Warn,
            format!(
                "not measured: {}",
                crate::text::clip::clip(&rec.reason, 160)
            ),
        )),
        Verdict::Blocked => f.push(finding(
            "verdict",
            Grade::Warn,
            format!("blocked: {}", crate::text::clip::clip(&rec.reason, 160)),
        )),
        Verdict::Invalid => f.push(finding(
            "verdict",
            Grade::Fail,
            format!("invalid: {}", crate::text::clip::clip(&rec.reason, 160)),
        )),
        Verdict::Crash => f.push(finding(
            "verdict",
            Grade::Warn,
            format!(
                "the change crashed a command: {}",
                crate::text::clip::clip(&rec.reason, 160)
            ),
        )),
        _ => {}
    }
    // A budget running out is the run's end, not this iteration's fault:
    // the run's own checks weigh it. A change of the environment is
    // nobody's in the iteration (run/fence/reach.rs).
    for a in anomalies.iter().filter(|a| {
        a.iteration == Some(rec.iteration)
            && !matches!(
                a.rule.as_str(),
                "budget_near" | "budget_cut" | "environment_change"
            )
    }) {
        let grade = if a.severity == "high" {
            Grade::Fail
        } else {
            Grade::Warn
        };
        f.push(finding(
            "anomaly",
            grade,
            format!(
                "{} anomaly {}: {}",
                if grade == Grade::Fail { "high" } else { "an" },
                a.rule,
                crate::text::clip::clip(&a.evidence, 160)
            ),
        ));
    }
    if let Some(n) = node {
        let walk = n.walk();
        let requests: Vec<&&Node> = walk
            .iter()
            .filter(|c| c.kind == Kind::ModelRequest)
            .collect();
        let failed = requests
            .iter()
            .filter(|c| c.status == Status::Failed)
            .count();
        if failed > 0 && !outage {
            let grade = if failed == requests.len() {
                Grade::Fail
            } else {
                Grade::Warn
            };
            f.push(finding(
                "model_calls",
                grade,
                format!("{failed} of {} model request(s) failed", requests.len()),
            ));
        }
        let tools: Vec<&&Node> = walk.iter().filter(|c| c.kind == Kind::ToolCall).collect();
        let errors = tools.iter().filter(|c| c.status == Status::Failed).count();
        if tools.len() >= MIN_TOOL_CALLS && errors as f64 / tools.len() as f64 > TOOL_ERROR_RATE {
            f.push(finding(
                "tool_errors",
                Grade::Warn,
                format!(
                    "{errors} of {} tool call(s) failed ({:.0}%)",
                    tools.len(),
                    100.0 * errors as f64 / tools.len() as f64
                ),
            ));
        }
    }
    Graded::of(Some(rec.iteration), f)
}

fn outcome_word(o: CallOutcome) -> &'static str {
    match o {
        CallOutcome::Ok => "ok",
        CallOutcome::Failed => "failed",
        CallOutcome::TimedOut => "timed out",
        CallOutcome::NoResult => "without a readable result",
        CallOutcome::Rejected => "with a rejected plan",
        CallOutcome::Unavailable => "unable to reach its model",
    }
}

fn run(x: &Inputs, iterations: &[Graded]) -> Graded {
    let mut f = Vec::new();
    if let Some(stop) = x.stop {
        if stop.reason.is_red() {
            f.push(finding(
                "stop",
                Grade::Fail,
                format!(
                    "stopped RED: {} — {}",
                    stop.reason.as_str(),
                    crate::text::clip::clip(&stop.detail, 160)
                ),
            ));
        }
        // Ended by its iteration budget with a keep in its last stretch:
        // the search was still finding gains.
        let decided = x.facts.len().saturating_sub(1);
        if stop.reason == StopReason::BudgetIterations
            && let Some(limit) = x.budget.iterations.filter(|&l| l >= 5)
        {
            let late = ((limit as f64) * (1.0 - STILL_IMPROVING)).floor() as u32;
            if let Some(k) = x
                .facts
                .iter()
                .rev()
                .find(|r| r.is(Verdict::Keep) && r.iteration > late)
            {
                f.push(finding(
                    "progress",
                    Grade::Warn,
                    format!(
                        "still improving when the iteration budget ended it: iteration {} of {decided} was kept; a larger budget may find more",
                        k.iteration
                    ),
                ));
            }
        }
        // The same for a wall-clock budget: a keep in its last fifth.
        if stop.reason == StopReason::BudgetWall
            && let (Some(wall), Some(started)) = (x.budget.wall, x.started)
        {
            let late = started
                + chrono::Duration::from_std(wall.mul_f64(1.0 - STILL_IMPROVING))
                    .unwrap_or_default();
            if let Some(k) = x
                .facts
                .iter()
                .rev()
                .find(|r| r.is(Verdict::Keep) && r.finished > late.timestamp())
            {
                f.push(finding(
                    "progress",
                    Grade::Warn,
                    format!(
                        "still improving when the time budget ended it: iteration {} was kept in its last fifth; a longer night may find more",
                        k.iteration
                    ),
                ));
            }
        }
    }
    // The latest attempt only: a later confirmation that measured
    // supersedes one that could not.
    if let Some(r) = x.attempt {
        match (&r.confirmation, &r.confirmation_failed) {
            (_, Some(why)) => f.push(finding(
                "confirmation",
                Grade::Fail,
                format!(
                    "the confirmation test after iteration {} could not be measured: {}",
                    r.iteration,
                    crate::text::clip::clip(why, 160)
                ),
            )),
            (Some(c), None) if c.ci.0 <= 0.0 => f.push(finding(
                "confirmation",
                Grade::Warn,
                format!(
                    "the confirmation test after iteration {} does not exclude no gain ({} (97.5% CI))",
                    r.iteration,
                    crate::text::number::effect_ci(c.effect, c.ci)
                ),
            )),
            _ => {}
        }
    }
    // A budget nearly or wholly spent is how most runs end.
    for a in x.anomalies.iter().filter(|a| {
        a.iteration.is_none() && !matches!(a.rule.as_str(), "budget_near" | "environment_change")
    }) {
        if a.severity == "high" {
            f.push(finding(
                "anomaly",
                Grade::Fail,
                format!(
                    "high anomaly {}: {}",
                    a.rule,
                    crate::text::clip::clip(&a.evidence, 160)
                ),
            ));
        }
    }
    let decided: Vec<&Graded> = iterations
        .iter()
        .filter(|g| g.iteration.is_some_and(|i| i > 0))
        .collect();
    let failed: Vec<String> = decided
        .iter()
        .filter(|g| g.grade == Grade::Fail)
        .filter_map(|g| g.iteration.map(|i| i.to_string()))
        .collect();
    if !failed.is_empty() {
        let share = failed.len() as f64 / decided.len() as f64;
        f.push(finding(
            "iterations",
            if share >= FAILED_SHARE && failed.len() >= 2 {
                Grade::Fail
            } else {
                Grade::Warn
            },
            format!(
                "{} of {} iteration(s) failed their checks ({})",
                failed.len(),
                decided.len(),
                failed.join(", ")
            ),
        ));
    }
    if let Some(base) = iterations.first().filter(|g| g.grade == Grade::Fail) {
        f.push(finding(
            "iterations",
            Grade::Fail,
            format!("the baseline failed its checks: {}", base.text()),
        ));
    }
    if decided.len() >= 3 && !x.facts.iter().any(|r| r.is(Verdict::Keep)) {
        f.push(finding(
            "progress",
            Grade::Warn,
            format!("no change was kept in {} iterations", decided.len()),
        ));
    }
    Graded::of(None, f)
}

/// Reads a judge's answer: `{"verdict": "pass|warn|fail", "why": "…",
/// "iterations": [{"iteration": 3, "verdict": "fail", "why": "…"}]}`.
pub(crate) fn judgement_of(judge: &str, v: &serde_json::Value) -> Result<Judgement, String> {
    let grade = |v: &serde_json::Value, at: &str| {
        v.get("verdict")
            .and_then(serde_json::Value::as_str)
            .and_then(Grade::parse)
            .ok_or_else(|| format!("{at}`verdict` must be \"pass\", \"warn\" or \"fail\""))
    };
    let why = |v: &serde_json::Value| {
        v.get("why")
            .and_then(serde_json::Value::as_str)
            .map(|s| crate::text::clip::clip(&crate::text::redact::redact(s.trim()), 1500))
            .unwrap_or_default()
    };
    let run = grade(v, "")?;
    let mut iterations = Vec::new();
    for (k, it) in v
        .get("iterations")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let n = it
            .get("iteration")
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("iterations[{k}]: `iteration` must be an iteration number"))?;
        iterations.push(JudgedIteration {
            iteration: n,
            grade: grade(it, &format!("iterations[{k}]: "))?,
            why: why(it),
        });
    }
    Ok(Judgement {
        judge: judge.to_string(),
        grade: run,
        why: why(v),
        iterations,
    })
}

#[cfg(test)]
mod tests;
