//! The pipeline-analyzer: a bottleneck report for the next PLAN, made
//! beside EVALUATE while the candidate is measured, and by CHECK when the
//! loop plateaus.
//!
//! The builtin one looks only at statistics of the archive (its isolated
//! context is "history stats") and writes a short report that is archived
//! with the iteration (its `analysis`) and handed to the next PLAN through
//! ORIENT. Being plain code, it states facts, not guesses.
//!
//! Its triggers are read from the archive before the iteration (iteration
//! 1, a plateau or an anomaly the last CHECK found, noise far above the
//! history's), so a resumed iteration dispatches the same analyzers. The
//! Brief's `analyze.command` (a profiler, `perf stat`, a trace) runs in the
//! base worktree, the best so far, once EVALUATE's pairs are measured and
//! under the measurement lock: a profiler loads the machine and must never
//! run while pairs are timed. Its compressed output is what the analyzers
//! see as `profile-output`. The builtin analyzer states what each axis
//! yielded (and the profile, when there is one); a command analyzer answers
//! `{"bottleneck", "evidence", "hypotheses"}`: hypotheses for the next PLAN
//! to test, never a decision.

use crate::archive::history::{IterationRecord, Verdict, View};
use crate::driver::{MainAgent, Step};
use crate::error::Result;
use crate::eval::{Evaluator, Side, Worktree};
use crate::model::Phase;
use crate::model::{AlarmKind, Analysis, AnalyzerReport};
use crate::subagents::Definition;
use crate::subagents::definition::{Sees, SubDriver, Trigger};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};
use serde_json::{Value, json};
use std::sync::mpsc::Receiver;

/// The latest pipeline-analyzer report in the archive, with the iteration
/// whose CHECK wrote it: the newest row with a report is read in full.
pub(crate) fn latest_report_in(history: View) -> Result<Option<(u32, String)>> {
    let Some(r) = history
        .flagged(crate::archive::history::fact::flag::ANALYSIS)
        .next()
        .transpose()?
    else {
        return Ok(None);
    };
    Ok(r.analysis_report().map(|t| (r.iteration, t)))
}

/// What the runner's analysis says to the next PLAN: the latest analyzer
/// report and the alarms raised after the last iteration.
pub fn notes_for_plan(history: View) -> Result<Option<String>> {
    let mut parts = Vec::new();
    if let Some((at, report)) = latest_report_in(history)? {
        parts.push(format!(
            "Pipeline-analyzer report (after iteration {at}): {report}"
        ));
    }
    if let Some(last) = history.last() {
        for a in last.alarms.iter().filter(|a| a.kind != AlarmKind::Plateau) {
            parts.push(format!(
                "Alarm after iteration {}: {} — {}",
                last.iteration, a.kind, a.evidence
            ));
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n")))
}

/// What fires the analyzer for the iteration after `history`: iteration 1,
/// a plateau or an anomaly found by the last CHECK, or the noise of the
/// last measurement far above the history's.
pub(crate) fn triggers(
    history: &[IterationRecord],
    iteration: u32,
) -> Vec<crate::subagents::definition::Trigger> {
    use crate::subagents::definition::Trigger;
    let mut out = Vec::new();
    if iteration == 1 {
        out.push(Trigger::FirstIteration);
    }
    if let Some(last) = history.last().filter(|r| r.iteration > 0) {
        if last.alarms.iter().any(|a| a.kind == AlarmKind::Plateau) {
            out.push(Trigger::Plateau);
        }
        if last.alarms.iter().any(|a| a.kind != AlarmKind::Plateau) {
            out.push(Trigger::Anomaly);
        }
        if last.measured.as_ref().is_some_and(|m| m.noise_changed) {
            out.push(Trigger::NoiseChanged);
        }
    }
    out
}

/// The builtin pipeline-analyzer's report: what each axis has yielded.
pub(crate) fn analyze(history: &[IterationRecord], theta1: f64) -> String {
    let mut ledger = crate::archive::history::ledger::Ledger::default();
    for r in history {
        ledger.fold(r);
    }
    let failures = history.iter().filter(|r| r.verdict.is_failure()).count();
    report(&ledger, failures, theta1)
}

/// [`analyze`] of the archive a runner holds: the directions from its
/// ledger, the failures from its rows.
pub(crate) fn analyze_in(history: View, theta1: f64) -> Result<String> {
    analyze_with(history, None, theta1)
}

/// [`analyze_in`] with `also`, an iteration not archived yet, counted on.
pub(crate) fn analyze_with(
    history: View,
    also: Option<&IterationRecord>,
    theta1: f64,
) -> Result<String> {
    let mut ledger = history.ledger()?;
    let mut failures = history
        .facts()
        .iter()
        .filter(|f| f.verdict.is_some_and(Verdict::is_failure))
        .count();
    if let Some(r) = also {
        ledger.to_mut().fold(r);
        failures += usize::from(r.verdict.is_failure());
    }
    Ok(report(&ledger, failures, theta1))
}

fn report(
    ledger: &crate::archive::history::ledger::Ledger,
    failures: usize,
    theta1: f64,
) -> String {
    let mut lines: Vec<String> = ledger
        .axes()
        .iter()
        .map(|(name, a)| {
            let mean = if a.measured == 0 {
                0.0
            } else {
                a.effect_sum / a.measured as f64
            };
            format!(
                "{name}: {} tried, {} kept, {} significantly worse, mean effect {}",
                a.tries,
                a.keeps,
                a.worse,
                crate::text::number::effect(mean)
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push("no axis has been declared yet".into());
    }
    format!(
        "pipeline-analyzer (builtin): gains below θ₁ = {:.1}% cannot be seen; {failures} failed iteration(s); by axis — {}. Directions whose tries were all discarded are exhausted at their current step size: try a new axis or a smaller step.",
        theta1 * 100.0,
        lines.join("; ")
    )
}

/// Characters of the profile's output an analyzer is shown.
const PROFILE_CHARS: usize = 6_000;

const ANSWER: &str = "Answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"bottleneck\": \"where the time goes\", \"evidence\": \"what in the data shows it\", \"hypotheses\": [\"a change worth measuring\"]}\n```\n\nName hypotheses to test, not decisions: the next PLAN chooses, and the eval-runner measures.";

/// The analyzers of the roster that the iteration in flight triggers (none
/// when it was cut: a cut iteration measures nothing).
pub(crate) fn due_for<'r>(
    roster: &'r crate::subagents::Roster,
    history: crate::archive::history::View,
    cur: &crate::archive::state::InFlight,
    brief: &crate::brief::Brief,
) -> Vec<&'r Definition> {
    if cur.cut.is_some() {
        return Vec::new();
    }
    due(
        roster.with_role(crate::model::Role::Analyze),
        history.before(cur.iteration as usize).recent(),
        cur.iteration,
        brief.analyze.is_some(),
    )
}

/// The analyzers `defs` whose triggers fire for this iteration. The builtin
/// one answers the first iteration and a plateau only when there is a
/// profile to add: CHECK's plateau alarm already carries its report.
pub(crate) fn due<'r>(
    defs: impl Iterator<Item = &'r Definition>,
    history: &[IterationRecord],
    iteration: u32,
    profile: bool,
) -> Vec<&'r Definition> {
    let fired = crate::subagents::analyzer::triggers(history, iteration);
    defs.filter(|d| {
        d.triggers.iter().any(|t| {
            fired.contains(t)
                && (d.driver != SubDriver::Builtin
                    || profile
                    || matches!(t, Trigger::Anomaly | Trigger::NoiseChanged))
        })
    })
    .collect()
}

/// Runs `defs`; `measured` says when EVALUATE's pairs are done (dropped
/// unsent when EVALUATE failed: then no profile is taken). Returns the
/// combined report for the next PLAN and the dispatch.
pub(crate) fn run(
    t: &Step,
    defs: &[&Definition],
    agent: &MainAgent,
    measured: Receiver<()>,
) -> Result<(Option<Analysis>, Dispatched)> {
    let history = t.history;
    // A command analyzer, like the profiler, waits for the pairs: an agent
    // CLI in the worktrees loads the machine (and is fenced against the
    // very files the measurement is writing). Only the builtin, which
    // reads the archive, runs while pairs are timed. When EVALUATE failed,
    // nothing that waited runs.
    let waits = defs.iter().any(|d| d.driver != SubDriver::Builtin)
        || (t.brief.analyze.is_some()
            && defs.iter().any(|d| d.sees.contains(&Sees::ProfileOutput)));
    let measured = !waits || measured.recv().is_ok();
    let defs: Vec<&Definition> = defs
        .iter()
        .copied()
        .filter(|d| measured || d.driver == SubDriver::Builtin)
        .collect();
    let profile = match &t.brief.analyze {
        Some(a) if measured && defs.iter().any(|d| d.sees.contains(&Sees::ProfileOutput)) => {
            Some(take_profile(t, &a.command, a.timeout)?)
        }
        _ => None,
    };
    let stats = crate::subagents::analyzer::analyze_in(history, t.orientation.theta1)?;
    let main_name = agent.agent_name();
    let (stats, profile) = (&stats, &profile);
    let jobs: Vec<Job> = defs
        .iter()
        .map(|def| {
            let def = *def;
            let driver = def.driver_name(main_name.as_deref());
            let command = dispatch::caller(t, def, agent);
            let work: dispatch::Work = match def.driver {
                SubDriver::Builtin => Box::new(move |_| {
                    let mut text = stats.clone();
                    if let Some(p) = profile
                        .as_ref()
                        .filter(|_| def.sees.contains(&Sees::ProfileOutput))
                    {
                        text.push_str(&format!(
                            " Profile of the best so far (`{}`, compressed): {}",
                            t.brief
                                .analyze
                                .as_ref()
                                .map(|a| a.command.as_str())
                                .unwrap_or(""),
                            crate::text::clip::clip(p, 1500)
                        ));
                    }
                    Ok(Answer {
                        body: json!({"report": text}),
                        ..Answer::default()
                    })
                }),
                SubDriver::Command | SubDriver::Llm => Box::new(move |span| {
                    let agent = match command {
                        Ok(agent) => agent,
                        Err(why) => {
                            return Ok(Answer::failed(crate::model::SubagentOutcome::Skipped, why));
                        }
                    };
                    let mut parts = Vec::new();
                    if def.sees.contains(&Sees::HistoryStats) {
                        parts.push((Sees::HistoryStats, stats.as_str()));
                    }
                    if let Some(p) = profile
                        .as_deref()
                        .filter(|_| def.sees.contains(&Sees::ProfileOutput))
                    {
                        parts.push((Sees::ProfileOutput, p));
                    }
                    let prompt = crate::subagents::sees::prompt(def, &parts, ANSWER);
                    dispatch::run_command(
                        t,
                        agent.as_ref(),
                        def,
                        Phase::Evaluate,
                        &prompt,
                        t.cand_dir,
                        span,
                        read_report,
                    )
                }),
            };
            Job { def, driver, work }
        })
        .collect();
    let done = dispatch::run_all(t.span, t.dir, t.iteration, jobs, None)?;
    let reports: Vec<AnalyzerReport> = done
        .reports
        .iter()
        .zip(&done.answers)
        .filter_map(|(r, body)| {
            Some(AnalyzerReport {
                name: r.name.clone(),
                driver: r.driver.clone(),
                text: body["report"].as_str()?.to_string(),
            })
        })
        .collect();
    Ok(((!reports.is_empty()).then_some(Analysis { reports }), done))
}

/// Runs the profiler in the base worktree and compresses what it printed.
fn take_profile(t: &Step, command: &str, timeout: std::time::Duration) -> Result<String> {
    let lease = t.executor.lease(crate::run::executor::Purpose::Measure(
        crate::run::executor::Job {
            iteration: t.iteration,
            phase: "analyze",
        },
    ))?;
    let mut ev = Evaluator::new(
        t.brief,
        &t.config.defaults,
        t.cancel,
        None,
        t.span,
        lease.as_ref(),
    );
    let base = Worktree::new(Side::Base, t.base_dir.to_path_buf(), t.brief)?;
    let (output, failure) = ev.profile(&base, command, timeout)?;
    let text = crate::text::compress::excerpt(&output, PROFILE_CHARS);
    Ok(match failure {
        Some(crate::eval::RunFailure::Failed { reason, .. }) => {
            format!("[the analyze command failed: {reason}]\n{text}")
        }
        None => text,
    })
}

/// A command analyzer's answer, as the report the next PLAN reads.
fn read_report(v: &Value, a: &mut Answer) -> std::result::Result<(), String> {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(|s| crate::text::clip::clip(&crate::text::redact::redact(s), 600))
            .filter(|s| !s.is_empty())
    };
    let bottleneck = s("bottleneck").ok_or("the answer has no `bottleneck`")?;
    let mut text = format!("bottleneck: {bottleneck}");
    if let Some(e) = s("evidence") {
        text.push_str(&format!("; evidence: {e}"));
    }
    let hypotheses: Vec<String> = v
        .get("hypotheses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|h| crate::text::clip::clip(&crate::text::redact::redact(h), 300))
        .collect();
    if !hypotheses.is_empty() {
        text.push_str(&format!("; hypotheses to test: {}", hypotheses.join("; ")));
    }
    a.body = json!({"report": text, "answer": v});
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::agent::answers::Axis;

    #[test]
    fn the_analyzer_fires_on_iteration_1_a_plateau_an_anomaly_and_changed_noise() {
        use crate::model::{Alarm, Comparison};
        use crate::subagents::definition::Trigger;
        let base = IterationRecord::new(0, Verdict::Baseline);
        assert_eq!(
            triggers(std::slice::from_ref(&base), 1),
            [Trigger::FirstIteration]
        );
        let mut last = IterationRecord::new(4, Verdict::Discard);
        assert!(triggers(&[base.clone(), last.clone()], 5).is_empty());
        last.alarms = vec![
            Alarm::yellow(AlarmKind::Plateau, "4 without a keep".into()),
            Alarm::yellow(AlarmKind::IdenticalCandidate, "same tree".into()),
        ];
        last.measured = Some(Comparison {
            pairs: Vec::new(),
            base_median: 1.0,
            cand_median: 1.0,
            effect: 0.0,
            ci: (0.0, 0.0),
            p: 0.5,
            looks: 1,
            theta1: 0.01,
            alpha: 0.05,
            delta0: 0.0,
            rule: String::new(),
            alpha_look: 0.05,
            s_h: 0.01,
            noise_changed: true,
            d_mean: 0.0,
            d_ci: (0.0, 0.0),
            direction: None,
            seconds: None,
        });
        assert_eq!(
            triggers(&[base, last], 5),
            [Trigger::Plateau, Trigger::Anomaly, Trigger::NoiseChanged]
        );
    }

    #[test]
    fn the_next_plan_gets_the_report_and_the_last_alarms() {
        use crate::model::Alarm;
        // The archive holds iterations 0.. in order: the rest are discards.
        let notes = |h: &[IterationRecord]| {
            let last = h.last().map_or(0, |r| r.iteration);
            let all: Vec<IterationRecord> = (0..=last)
                .filter(|_| !h.is_empty())
                .map(|i| {
                    h.iter()
                        .find(|r| r.iteration == i)
                        .cloned()
                        .unwrap_or_else(|| IterationRecord::new(i, Verdict::Discard))
                })
                .collect();
            notes_for_plan(crate::archive::history::History::of(all).view()).unwrap()
        };
        assert_eq!(notes(&[]), None);
        let mut a = IterationRecord::new(4, Verdict::Discard);
        a.alarms = vec![Alarm::yellow(
            AlarmKind::Plateau,
            "4 iterations without a keep; pipeline-analyzer (builtin): axis X up".into(),
        )];
        a.analysis = Some("pipeline-analyzer (builtin): axis X up".into());
        let mut b = IterationRecord::new(5, Verdict::Discard);
        b.alarms = vec![Alarm::yellow(AlarmKind::NoiseChanged, "s²/s_h² = 9".into())];
        let text = notes(&[a.clone(), b.clone()]).unwrap();
        assert!(
            text.contains("(after iteration 4): pipeline-analyzer (builtin): axis X up"),
            "{text}"
        );
        assert!(text.contains("Alarm after iteration 5: noise_changed — s²/s_h² = 9"));
        // An archive from before `analysis` existed: read from the alarm.
        a.analysis = None;
        let held: Vec<IterationRecord> = (0..4)
            .map(|i| IterationRecord::new(i, Verdict::Discard))
            .chain([a, b])
            .collect();
        assert_eq!(
            latest_report_in(crate::archive::history::History::of(held).view()).unwrap(),
            Some((4, "pipeline-analyzer (builtin): axis X up".into()))
        );
    }

    #[test]
    fn reports_each_axis() {
        let mut r = IterationRecord::new(1, Verdict::Discard);
        r.axes = vec![Axis {
            name: "TILE".into(),
            direction: "up".into(),
            step: Some(0.25),
        }];
        let text = analyze(&[IterationRecord::new(0, Verdict::Baseline), r], 0.02);
        assert!(text.contains("TILE up: 1 tried, 0 kept"), "{text}");
        assert!(text.contains("θ₁ = 2.0%"));
    }
}
