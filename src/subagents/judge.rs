//! The judge: a subagent (`role: judge`, `driver: command` or `llm`) that
//! reads the finished run and gives it a qualitative verdict.
//!
//! ooda's own checks (`report/grade/`) grade what can be counted; whether a
//! night's keeps make sense together, or its hypotheses went in circles, is
//! a judgement. It runs once, at the end of a run, after the summary is
//! written (it is shown what the morning reader will be), and what it says
//! is logged as a `judged` event and shown in summary.md beside the checks,
//! never instead of them. It is opt-in: no judge is installed by default.

use std::fmt::Write as _;

use crate::driver::{MainAgent, Step};
use crate::error::Result;
use crate::events::Event;
use crate::model::{IterationRecord, Phase, Stop};
use crate::report::grade::Evaluation;
use crate::subagents::Definition;
use crate::subagents::definition::Sees;
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};

const JUDGE_ANSWER: &str = "Answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"verdict\": \"pass|warn|fail\", \"why\": \"two or three sentences on whether the night did what the Brief asked\", \"iterations\": [{\"iteration\": 3, \"verdict\": \"warn\", \"why\": \"…\"}]}\n```\n\nList only the iterations you have something to say about. Judge the work, not the numbers: ooda's statistics already decided each keep.";

/// The judges of the roster that judge this run's end: none past a
/// spending limit the user set, or after an agent broke out of its fence
/// (no further agent is run then).
pub(crate) fn due<'r>(roster: &'r crate::subagents::Roster, stop: &Stop) -> Vec<&'r Definition> {
    use crate::model::StopReason;
    use crate::subagents::definition::Trigger;
    let refused = matches!(
        stop.reason,
        StopReason::BudgetCost
            | StopReason::BudgetTokens
            | StopReason::RedTamper
            | StopReason::RedScope
            | StopReason::RedAnomaly
    );
    if refused {
        return Vec::new();
    }
    roster
        .with_role(crate::model::Role::Judge)
        .filter(|d| d.triggers.contains(&Trigger::RunEnd))
        .collect()
}

/// The judges `defs` over the finished run (`history`, which `t` sees
/// whole, graded by ooda's checks as `evaluation`): the last iteration's
/// record with their reports on it. Their spend stays out of that
/// iteration's tokens (the judge ran after it, and the spike rule and the
/// grades read them): it is in Metrics, per subagent, and in its report.
pub(crate) fn judged(
    t: &Step,
    defs: &[&Definition],
    agent: &MainAgent,
    history: &[IterationRecord],
    stop: &Stop,
    evaluation: &Evaluation,
) -> Result<Option<IterationRecord>> {
    let done = run(t, defs, agent, history, stop, evaluation)?;
    for b in &done.breaches {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::JudgeFailed,
            message: format!("the judge changed files it must not touch: {}", b.message),
        })?;
    }
    Ok(t.history.last().cloned().map(|mut r| {
        r.attach(done.reports, Vec::new());
        r
    }))
}

/// Runs the judges `defs` over the finished run.
pub(crate) fn run(
    t: &Step,
    defs: &[&Definition],
    agent: &MainAgent,
    history: &[IterationRecord],
    stop: &Stop,
    evaluation: &Evaluation,
) -> Result<Dispatched> {
    let main_name = agent.agent_name();
    let iteration = history.last().map(|r| r.iteration).unwrap_or(0);
    let jobs: Vec<Job> = defs
        .iter()
        .map(|def| {
            let def = *def;
            let driver = def.driver_name(main_name.as_deref());
            let agent = dispatch::caller(t, def, agent);
            let work: dispatch::Work = Box::new(move |span| {
                let agent = match agent {
                    Ok(a) => a,
                    Err(why) => {
                        return Ok(Answer::failed(
                            crate::model::SubagentOutcome::Skipped,
                            format!("{why}; the run was not judged"),
                        ));
                    }
                };
                let parts = parts(def, t, history, stop, evaluation);
                let parts: Vec<(Sees, &str)> =
                    parts.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let prompt = crate::subagents::sees::prompt(def, &parts, JUDGE_ANSWER);
                let a = dispatch::run_command(
                    t,
                    agent.as_ref(),
                    def,
                    Phase::Check,
                    &prompt,
                    t.cand_dir,
                    span,
                    |v, a| {
                        let mut j = crate::report::grade::judgement_of(&def.name, v)?;
                        // Words on an iteration the run does not have would
                        // link to no file.
                        j.iterations
                            .retain(|i| history.iter().any(|r| r.iteration == i.iteration));
                        a.body = serde_json::to_value(&j).unwrap_or_default();
                        Ok(())
                    },
                )?;
                // A judge that broke its fence gave no verdict to trust.
                if a.breach.is_none()
                    && let Ok(judgement) = serde_json::from_value(a.body.clone())
                {
                    span.emit(Event::Judged { judgement })?;
                }
                Ok(a)
            });
            Job { def, driver, work }
        })
        .collect();
    dispatch::run_all(t.span, t.dir, iteration, jobs, Some("run"))
}

/// What a judge is shown, as its `sees` allows: every iteration with its
/// verdict and grade, and the run's statistics with its stop and grade.
fn parts(
    def: &Definition,
    t: &Step,
    history: &[IterationRecord],
    stop: &Stop,
    evaluation: &Evaluation,
) -> Vec<(Sees, String)> {
    let mut out = Vec::new();
    for s in &def.sees {
        let text = match s {
            Sees::IterationData => {
                let mut x = String::new();
                let _ = writeln!(
                    x,
                    "Brief {}: {} ({}).\n\nGoal: {}\n\nSuccess: {}\n\nMust not break: {}\n",
                    t.brief.name,
                    t.brief.metric.name,
                    t.brief.metric.direction.better_word(),
                    t.brief.goal.trim(),
                    t.brief.success.trim(),
                    t.brief.must_not_break.trim()
                );
                // The number to trust, as the morning reader gets it.
                let _ = writeln!(
                    x,
                    "Confirmed gain (start of run against the best, in fresh pairs): {}\n",
                    match crate::archive::history::latest_confirmation(history) {
                        Some((it, c)) => format!(
                            "{} (97.5% CI), {}, after iteration {it}",
                            crate::text::number::effect_ci(c.effect, c.ci),
                            c.p_text()
                        ),
                        None => "none measured".to_string(),
                    }
                );
                for r in history {
                    let grade = evaluation
                        .iterations
                        .iter()
                        .find(|g| g.iteration == Some(r.iteration))
                        .map(|g| g.text())
                        .unwrap_or_else(|| "pass".into());
                    let _ = writeln!(
                        x,
                        "- Iteration {}: {} — {}\n  hypothesis: {}\n  effect: {}\n  checks: {}",
                        r.iteration,
                        r.verdict_text(),
                        crate::text::clip::clip(&r.reason, 300),
                        crate::text::clip::clip(&r.hypothesis, 300),
                        r.effect_text(),
                        grade
                    );
                }
                x
            }
            Sees::HistoryStats => {
                let mut x = crate::subagents::analyze(history, t.orientation.theta1);
                let _ = writeln!(
                    x,
                    "\nThe run stopped: {} — {}\nooda's checks grade the run: {}",
                    stop.reason.as_str(),
                    crate::text::clip::clip(&stop.detail, 300),
                    evaluation.run.text()
                );
                x
            }
            _ => continue,
        };
        out.push((*s, text));
    }
    out
}
