//! The pipeline-analyzer beside EVALUATE: a bottleneck report for the next
//! PLAN, made while the candidate is measured.
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

use std::sync::mpsc::Receiver;

use serde_json::{Value, json};

use crate::driver::{MainAgent, Step};
use crate::error::Result;
use crate::eval::{Evaluator, Side, Worktree};
use crate::model::{IterationRecord, Phase};
use crate::subagents::Definition;
use crate::subagents::definition::{Sees, SubDriver, Trigger};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};

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
) -> Result<(Option<String>, Dispatched)> {
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
            let command = super::review::command_agent(t, def, agent);
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
    let texts: Vec<String> = done
        .reports
        .iter()
        .zip(&done.answers)
        .filter_map(|(r, body)| {
            let text = body["report"].as_str()?;
            Some(if r.driver == "builtin" {
                text.to_string()
            } else {
                format!("{} ({}): {text}", r.name, r.driver)
            })
        })
        .collect();
    Ok(((!texts.is_empty()).then(|| texts.join("\n")), done))
}

/// Runs the profiler in the base worktree and compresses what it printed.
fn take_profile(t: &Step, command: &str, timeout: std::time::Duration) -> Result<String> {
    let lease = t.executor.lease(crate::run::executor::Purpose::Measure(
        crate::run::executor::Job {
            iteration: t.iteration,
            phase: "analyze",
        },
    ))?;
    let mut ev = Evaluator {
        brief: t.brief,
        output_cap: usize::try_from(t.config.defaults.output_cap).unwrap_or(usize::MAX),
        cancel: t.cancel,
        stop: None,
        span: t.span,
        lease: lease.as_ref(),
        exclusive: t.config.defaults.measure_exclusive,
    };
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
