//! `summary.md`: the morning report, regenerated after every iteration.
//!
//! It is rendered from the archive and the state only, never by a model, so
//! every number in it can be traced to an `iter-NNN.md` file. It ends with
//! the exact git command that shows what the run would merge.

use std::fmt::Write as _;
use std::path::Path;

use chrono::Utc;

use crate::archive::Archive;
use crate::archive::history::fact::{Fact, flag};
use crate::archive::history::{self, IterationRecord, Verdict, View};
use crate::archive::layout::Layout;
use crate::archive::state::State;
use crate::atomic::write_atomic;
use crate::brief::{Brief, Budget, Direction};
use crate::config::Config;
use crate::error::Result;
use crate::model::Orientation;
use crate::model::{LoggedAnomaly as Logged, Phase};
use crate::text::clip;
use crate::text::clip::fmt_num;

pub(crate) use crate::archive::history::baseline_value;

pub(crate) fn status_line(state: &State) -> String {
    let word = state.status().word();
    match (&state.stop, &state.yellow) {
        (Some(stop), _) => format!("{word} — {}: {}", stop.reason.as_str(), stop.detail),
        (None, Some(w)) => format!("{word} — running; {}: {}", w.kind, w.evidence),
        (None, None) => format!("{word} — running"),
    }
}

/// How many of the newest entries the lists of `summary.md` and
/// `summary.json` that grow with the history (falsified statements,
/// alarms, failures, review notes, named patterns) show; each says how
/// many older ones the iteration files (and `falsified.md`) hold. A
/// hundred is a night's worth.
const LIST_NEWEST: usize = 100;

/// What `summary.md` and `summary.json` both show that is read from
/// iteration files, read once per sync: the lists (each the newest records
/// with a flag and how many older ones have it; the named patterns whose
/// latest lessons are the newest, by name, and how many others there are)
/// and the confirmation tests of the best (which may read every
/// confirmation of a long history).
pub(crate) struct Lists<'a> {
    falsified: (Vec<std::borrow::Cow<'a, IterationRecord>>, usize),
    alarmed: (Vec<std::borrow::Cow<'a, IterationRecord>>, usize),
    /// The newest iterations that lost a Slurm job under a measurement,
    /// and how many older ones did.
    lost_jobs: (Vec<std::borrow::Cow<'a, IterationRecord>>, usize),
    patterns: Vec<crate::archive::history::ledger::NamedPattern>,
    patterns_older: usize,
    /// The latest confirmation of the current best, and after which
    /// iteration.
    confirmed: Option<(u32, crate::model::Confirmation)>,
    /// A confirmation test that failed after the last keep, and why.
    confirmation_failed: Option<(u32, String)>,
    /// What the run achieved, from paired comparisons only.
    pub(crate) headline: crate::report::headline::Headline,
}

impl<'a> Lists<'a> {
    pub(crate) fn of(history: View<'a>, dir: Direction, best_commit: &str) -> Result<Lists<'a>> {
        // Newest lesson first (the ledger's order).
        let mut patterns = history.patterns()?;
        let patterns_older = patterns.len().saturating_sub(LIST_NEWEST);
        patterns.truncate(LIST_NEWEST);
        patterns.sort_by(|a, b| a.name.cmp(&b.name));
        let confirmed = history.confirmation_of(best_commit)?;
        Ok(Lists {
            headline: crate::report::headline::Headline::of(
                history.facts(),
                dir,
                confirmed.as_ref(),
            ),
            falsified: newest_flagged(history, flag::FALSIFIED_TEXT)?,
            alarmed: newest_flagged(history, flag::ALARMS)?,
            lost_jobs: newest_flagged(history, flag::LOST_JOBS)?,
            patterns,
            patterns_older,
            confirmed,
            confirmation_failed: confirmation_failure(history)?,
        })
    }
}

/// The lost Slurm jobs of the newest iterations that had one, and of the
/// iteration in flight: each with whose fault it was (the cluster's, no
/// answer from the controller, or the candidate's own cancel) and what
/// ooda said. None of them is a verdict; each says why the night went
/// slower than it might.
fn lost_jobs_lines(
    state: &State,
    lost: &(Vec<std::borrow::Cow<'_, IterationRecord>>, usize),
) -> Vec<String> {
    let line = |at: String, j: &crate::model::ClusterJob| {
        let what = match j.fault.as_deref() {
            Some("unknown") => "Slurm controller did not answer",
            Some("command") => "Slurm job ended under the candidate's command",
            _ => "Slurm cluster fault",
        };
        format!(
            "- {at}**{what}** — job {} ({}) {}: {}",
            j.id,
            j.name,
            j.lost.as_deref().unwrap_or(""),
            truncate(
                j.message
                    .as_deref()
                    .unwrap_or("no verdict was taken from it"),
                300
            )
        )
    };
    let mut out = Vec::new();
    if lost.1 > 0 {
        out.push(format!(
            "- {} earlier iterations lost Slurm jobs too (their files list them).",
            lost.1
        ));
    }
    for r in &lost.0 {
        for j in r.jobs.iter().filter(|j| j.lost.is_some()) {
            out.push(line(
                format!("[{}]({}) ", r.iteration, history::file_name(r.iteration)),
                j,
            ));
        }
    }
    if let Some(c) = &state.current {
        for j in c.jobs.iter().filter(|j| j.lost.is_some()) {
            out.push(line(format!("iteration {} (in flight) ", c.iteration), j));
        }
    }
    out
}

/// The records of the newest `LIST_NEWEST` rows of `history` with `bit`
/// set, oldest first, and how many older rows have it.
fn newest_flagged(
    history: View<'_>,
    bit: u32,
) -> Result<(Vec<std::borrow::Cow<'_, IterationRecord>>, usize)> {
    let rows: Vec<u32> = history
        .facts()
        .iter()
        .filter(|f| f.has(bit))
        .map(|f| f.iteration)
        .collect();
    let older = rows.len().saturating_sub(LIST_NEWEST);
    Ok((history.records(&rows[older..])?, older))
}

/// The morning report. `orientation` is what the next decision will use
/// (the noise in force and θ₁), the same numbers the next PLAN is told.
pub(crate) fn render(
    brief: &Brief,
    state: &State,
    history: View,
    budget: &Budget,
    orientation: &Orientation,
    observed: &Observed,
    lists: &Lists,
) -> Result<String> {
    let mut s = String::new();
    let metric = &brief.metric.name;
    let facts = history.facts();
    let _ = writeln!(s, "# {} — ooda summary\n", brief.name);
    let _ = writeln!(s, "**Result:** {}.\n", lists.headline.sentence());
    let _ = writeln!(s, "**Status:** {}\n", status_line(state));
    let _ = writeln!(
        s,
        "_Regenerated {} after iteration {}._\n",
        Utc::now().format("%Y-%m-%d %H:%M UTC"),
        facts.last().map(|r| r.iteration).unwrap_or(0)
    );
    let _ = writeln!(s, "## Goal\n\n{}\n", brief.goal.trim());
    let dir_word = match brief.metric.direction {
        Direction::Minimize => "lower is better",
        Direction::Maximize => "higher is better",
    };
    let _ = writeln!(s, "## Result\n");
    let keeps = facts.iter().filter(|r| r.is(Verdict::Keep)).count();
    match history.baseline_value() {
        Some(base) => {
            let (best_at, best) = history.best_of(&state.best_commit);
            let measured_at = |i: u32| {
                facts
                    .iter()
                    .find(|f| f.iteration == i)
                    .and_then(|f| chrono::DateTime::from_timestamp(f.finished, 0))
                    .map(|t| format!(", measured {}", t.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default()
            };
            let _ = writeln!(s, "| | {metric} ({dir_word}) |\n|---|---|");
            let _ = writeln!(
                s,
                "| baseline (iteration 0) | {} (median{}) |",
                fmt_num(base),
                measured_at(0)
            );
            let _ = writeln!(
                s,
                "| best ({}) | {} (median of its own runs{}) |",
                best_at
                    .map(|i| format!("iteration {i}"))
                    .unwrap_or_else(|| "the baseline".into()),
                fmt_num(best),
                best_at.map(measured_at).unwrap_or_default()
            );
            match &lists.confirmed {
                Some((it, c)) => {
                    let _ = writeln!(
                        s,
                        "| **{}** (start vs best, after iteration {it}) | **{}** (97.5% CI), {}, {} pairs |",
                        if c.ci.0 > 0.0 {
                            "confirmed gain"
                        } else {
                            "not confirmed"
                        },
                        crate::text::number::effect_ci_in(
                            brief.metric.direction.sense(),
                            c.effect,
                            c.ci
                        ),
                        c.p_text(),
                        c.pairs.len()
                    );
                }
                None if keeps > 0 => {
                    let _ = writeln!(
                        s,
                        "| confirmed gain | {} |",
                        unconfirmed_text(history, state, lists)?
                    );
                }
                None => {}
            }
            if let Some(noise) = orientation.noise {
                let _ = writeln!(s, "| noise per pair | {:.2}% |", noise.s_h * 100.0);
                let _ = writeln!(
                    s,
                    "| minimum detectable gain θ₁ | {:.2}% |",
                    orientation.theta1 * 100.0
                );
            }
            let _ = writeln!(
                s,
                "| keeps | {} of {} iterations |",
                keeps,
                history.len().saturating_sub(1)
            );
            let _ = writeln!(
                s,
                "\nThe two medians were measured at different times, on a machine whose speed may have drifted in between: they are not compared with each other. The result above is made of paired comparisons only, each measured side by side; the confirmed gain re-measures the start of the run against the current best in fresh pairs and is the number to trust.\n"
            );
            if history.len() > 1 {
                let _ = writeln!(s, "![progress](progress.svg)\n");
            }
        }
        None => {
            let _ = writeln!(s, "No baseline yet.\n");
        }
    }
    let _ = writeln!(s, "## Iterations\n");
    let _ = writeln!(
        s,
        "| # | verdict | hypothesis | effect (95% CI) | predicted |\n|---|---|---|---|---|"
    );
    let (folded, shown) = fold_point(history);
    for row in folded_rows(&facts[..folded]) {
        let _ = writeln!(s, "{row}");
    }
    for r in shown {
        let hyp = if r.verdict == Verdict::Baseline {
            r.reason.clone()
        } else {
            truncate(&r.hypothesis, 90)
        };
        let predicted = r
            .predicted
            .as_ref()
            .map(|p| crate::text::number::effect(p.effect))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "| [{}]({}) | {} | {} | {} | {} |",
            r.iteration,
            history::file_name(r.iteration),
            r.verdict_text(),
            hyp.replace('|', "\\|"),
            r.effect_text(),
            predicted
        );
    }
    s.push('\n');
    let (falsified, older) = (&lists.falsified.0, lists.falsified.1);
    let _ = writeln!(s, "## Falsified directions\n");
    if falsified.is_empty() {
        let _ = writeln!(s, "None yet.\n");
    } else {
        if older > 0 {
            let _ = writeln!(
                s,
                "{older} earlier falsified hypotheses are listed in full in [falsified.md](falsified.md); the newest {}:\n",
                falsified.len()
            );
        }
        for r in falsified {
            let _ = writeln!(
                s,
                "- [{}]({}): {}",
                r.iteration,
                history::file_name(r.iteration),
                r.falsified_text().unwrap_or_default()
            );
        }
        s.push('\n');
    }
    s.push_str(&review_section(history)?);
    let _ = writeln!(s, "## Named patterns\n");
    if lists.patterns.is_empty() {
        let _ = writeln!(s, "None yet.\n");
    } else {
        if lists.patterns_older > 0 {
            let _ = writeln!(
                s,
                "{} more patterns were last taught longer ago (each one's latest lesson is in the iteration file of that lesson); the {} taught most recently:\n",
                lists.patterns_older,
                lists.patterns.len()
            );
        }
        for p in &lists.patterns {
            let _ = writeln!(
                s,
                "- **{}** — {} ([{}]({}))",
                p.name,
                p.lesson,
                p.newest,
                history::file_name(p.newest)
            );
        }
        s.push('\n');
    }
    let (alarmed, older) = (&lists.alarmed.0, lists.alarmed.1);
    let _ = writeln!(s, "## Red lights and warnings\n");
    if let Some(w) = &state.unconfined {
        let _ = writeln!(s, "- **Unsandboxed** — {w}.");
    }
    let lost = lost_jobs_lines(state, &lists.lost_jobs);
    for l in &lost {
        let _ = writeln!(s, "{l}");
    }
    if alarmed.is_empty() && (state.unconfined.is_some() || !lost.is_empty()) {
        s.push('\n');
    } else if alarmed.is_empty() {
        let _ = writeln!(s, "None.\n");
    } else {
        if older > 0 {
            let _ = writeln!(
                s,
                "{older} earlier iterations raised alarms too (their files say which); the newest {}:\n",
                alarmed.len()
            );
        }
        for r in alarmed {
            for a in &r.alarms {
                let level = match a.level {
                    crate::model::Level::Red => "RED",
                    crate::model::Level::Yellow => "YELLOW",
                };
                let _ = writeln!(
                    s,
                    "- [{}]({}) **{level} {}** — {}",
                    r.iteration,
                    history::file_name(r.iteration),
                    a.kind,
                    a.evidence
                );
            }
        }
        s.push('\n');
    }
    let failed: Vec<u32> = facts
        .iter()
        .filter(|r| r.verdict.is_some_and(Verdict::is_failure))
        .map(|r| r.iteration)
        .collect();
    if !failed.is_empty() {
        let older = failed.len().saturating_sub(LIST_NEWEST);
        let _ = writeln!(s, "## Failures\n");
        if older > 0 {
            let _ = writeln!(
                s,
                "{older} earlier failures are in their iteration files; the newest {LIST_NEWEST}:\n"
            );
        }
        for r in history.records(&failed[older..])? {
            let _ = writeln!(
                s,
                "- [{}]({}) {}: {}",
                r.iteration,
                history::file_name(r.iteration),
                r.verdict.as_str(),
                truncate(&r.reason, 200)
            );
        }
        s.push('\n');
    }
    s.push_str(&observed.evaluation_section());
    s.push_str(&usage_section(history)?);
    s.push_str(&observed.section(&brief.name));
    s.push_str(&crate::report::metrics::section(&observed.metrics));
    let _ = writeln!(s, "## Budget\n");
    let used_iters = history.len().saturating_sub(1);
    let elapsed = (Utc::now() - state.created_at).to_std().unwrap_or_default();
    let _ = writeln!(s, "| | used | budget |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| iterations | {used_iters} | {} |",
        budget
            .iterations
            .map(|n| n.to_string())
            .unwrap_or_else(|| "—".into())
    );
    let _ = writeln!(
        s,
        "| wall clock since start | {} | {} |",
        crate::brief::format_duration(elapsed),
        budget
            .wall
            .map(crate::brief::format_duration)
            .unwrap_or_else(|| "—".into())
    );
    let (tokens, cost) = history.spent();
    let _ = writeln!(
        s,
        "| tokens | {tokens} | {} |",
        budget
            .tokens
            .map(|n| n.to_string())
            .unwrap_or_else(|| "—".into())
    );
    let _ = writeln!(
        s,
        "| cost | {} | {} |\n",
        crate::validate::units::format_usd(cost),
        budget
            .cost_usd
            .map(crate::validate::units::format_usd)
            .unwrap_or_else(|| "—".into())
    );
    let _ = writeln!(s, "## Review and merge\n");
    let branch = format!("ooda/{}", brief.name);
    let start = clip::short(&state.start_commit);
    let _ = writeln!(
        s,
        "The kept changes are commits on branch `{branch}`, started from `{start}`. Review them with:\n"
    );
    let _ = writeln!(
        s,
        "```sh\ngit log --oneline {start}..{branch}\ngit diff {start}...{branch}\n```\n"
    );
    let _ = writeln!(
        s,
        "Merge what you accept with `git merge {branch}` (or cherry-pick single commits). Discarded attempts are in `artifacts/` next to this file, linked from their iteration, for the latest `defaults.keep_artifacts` iterations (1000 unless set; `ooda gc` and each tick prune older ones, and the iteration file still says what was tried and why).\n\nIf your own branch moved while ooda ran, merge as usual (`git merge {branch}` brings the kept commits on top of your work), or, for a straight history, copy them onto your branch with `git cherry-pick {start}..{branch}` (never rebase `{branch}` itself: ooda's worktrees have it checked out). The knobs file (`{}`) is ooda's: in a conflict there, keep the `{branch}` side, which holds the setting that was measured. The measurements were made on `{start}`, not on your new commits: after merging, run `ooda check {} --measure 5` and compare its median with the best above.",
        brief.knobs_file, brief.name
    );
    Ok(s)
}

/// The "Agent usage" section of `summary.md`: tokens, cost, failures and
/// time per phase, empty when no agent ran.
pub(crate) fn usage_section(history: View) -> Result<String> {
    let ledger = history.ledger()?;
    let all = ledger.all_usage();
    if all.calls == 0 {
        return Ok(String::new());
    }
    let mut s = String::from(
        "## Agent usage\n\n| phase | calls | not ok | tokens in | tokens out | cost | seconds |\n|---|---|---|---|---|---|---|\n",
    );
    let mut row = |name: &str, u: &crate::archive::history::ledger::PhaseUsage| {
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} | {:.0} |",
            u.calls,
            u.not_ok,
            u.usage.input,
            u.usage.output,
            u.usage
                .cost_usd
                .map(crate::validate::units::format_usd)
                .unwrap_or_else(|| "not reported".into()),
            u.seconds
        );
    };
    // Every phase that called an agent, subagents' phases included, so the
    // rows add up to "all".
    for phase in Phase::ALL {
        let u = ledger.phase_usage(phase);
        if u.calls > 0 {
            let name = match phase {
                Phase::Plan | Phase::Execute | Phase::Learn => phase.as_str().to_string(),
                _ => format!("{} (subagents)", phase.as_str()),
            };
            row(&name, &u);
        }
    }
    row("all", &all);
    s.push('\n');
    s.push_str(&ways_of_working(history.recent()));
    let (outages, waited) = ledger.outages();
    if outages > 0 {
        let cut = history
            .facts()
            .iter()
            .filter(|r| r.has(flag::CUT_BY_OUTAGE))
            .count();
        let _ = writeln!(
            s,
            "The agent's API was unavailable {} time(s); ooda waited {} in all for it to come back{}. Iterations cut short by an outage do not count toward the failure streak.\n",
            outages,
            crate::brief::format_duration(std::time::Duration::from_secs_f64(waited.max(0.0))),
            if cut > 0 {
                format!(", and gave up on {cut} iteration(s)")
            } else {
                String::new()
            }
        );
    }
    Ok(s)
}

/// How the agent worked, from its calls' warnings over the iterations the
/// runner holds: a model that never called a tool, wrote its calls as
/// text, was cut off or copied the prompt's example is said here in words,
/// not only in each iteration's call table.
fn ways_of_working(recent: &[IterationRecord]) -> String {
    use crate::model::sign;
    let kinds: [(&str, &str); 6] = [
        (sign::NO_TOOL_CALLS, "the model made no tool calls"),
        (
            sign::CALLS_AS_TEXT,
            "the model wrote its tool calls as text (they were run)",
        ),
        (sign::CUT_OFF, "answers were cut off at max_output"),
        (sign::BLOCKS_FAILED, "search/replace blocks did not apply"),
        (
            sign::NOT_VALIDATED,
            "tool calls written as text did not validate",
        ),
        (
            sign::EXAMPLE_PREDICTION,
            "the plan's prediction was the prompt's example",
        ),
    ];
    let mut lines = Vec::new();
    for (needle, words) in kinds {
        let its: Vec<String> = recent
            .iter()
            .filter(|r| {
                r.agent_calls
                    .iter()
                    .any(|c| c.warnings.iter().any(|w| w.contains(needle)))
            })
            .map(|r| r.iteration.to_string())
            .collect();
        if !its.is_empty() {
            let shown: Vec<&str> = its
                .iter()
                .rev()
                .take(12)
                .rev()
                .map(String::as_str)
                .collect();
            lines.push(format!(
                "- {words}: {} iteration(s) ({}{})",
                its.len(),
                if its.len() > shown.len() { "…, " } else { "" },
                shown.join(", ")
            ));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("How the agent worked:\n\n{}\n\n", lines.join("\n"))
}

/// What the event log adds to the archive: the run's metrics (and, from
/// the log, what went wrong beside the verdicts).
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub metrics: crate::report::metrics::Metrics,
    /// Every anomaly the log holds: the rules' findings and the runner's own.
    pub anomalies: Vec<Logged>,
    /// The grades of the run and its iterations, and the judge's verdict.
    pub evaluation: Option<crate::report::grade::Evaluation>,
}

impl Observed {
    /// From `dir/events.jsonl`; an unreadable log gives none (the archive is
    /// the source of truth, the log an addition).
    pub(crate) fn of(
        dir: &Path,
        history: View,
        budget: &Budget,
        stop: Option<&crate::model::Stop>,
        started: Option<chrono::DateTime<Utc>>,
    ) -> Result<Observed> {
        use crate::events::Event;
        // The live log: a tick reads what it appends to, never the sealed
        // segments of earlier months.
        let records = crate::events::read_live(dir).unwrap_or_default();
        let sealed = crate::events::segments::sealed(dir).is_ok_and(|s| !s.is_empty());
        let runs = crate::report::trace::build(&records);
        // The judge's verdict on the latest stop of the latest run: a run
        // started over keeps one log, and a run that went on after a stop
        // (a raised budget, an ack) was judged before it went on.
        let latest = records.last().map(|r| r.run_id.clone());
        let (mut judge, mut judge_failed) = (None, None);
        for r in records
            .iter()
            .filter(|r| Some(&r.run_id) == latest.as_ref())
        {
            match &r.event {
                // A verdict belongs to the stop it followed: the next stop,
                // or the run going on, leaves it behind.
                Event::RunFinished { .. }
                | Event::IterationStarted { .. }
                | Event::IterationResumed { .. } => (judge, judge_failed) = (None, None),
                Event::Judged { judgement } => judge = Some(judgement.clone()),
                Event::SubagentFinished {
                    name,
                    role: crate::model::Role::Judge,
                    outcome,
                    problem,
                    ..
                } if *outcome != crate::model::SubagentOutcome::Done => {
                    judge_failed = Some(format!(
                        "{name} {}: {}",
                        outcome.as_str(),
                        problem.as_deref().unwrap_or("no reason given")
                    ));
                }
                Event::Anomaly {
                    kind: crate::model::AnomalyKind::JudgeFailed,
                    message,
                } => judge_failed = Some(message.clone()),
                _ => {}
            }
        }
        let judge = judge.filter(|_| stop.is_some());
        let judge_failed = judge_failed.filter(|_| stop.is_some() && judge.is_none());
        // The anomalies of the sealed parts first (kept beside them), so
        // the list is the whole run's.
        let sealed_anomalies = crate::events::segments::sealed_anomalies(dir);
        let anomalies: Vec<Logged> = sealed_anomalies
            .iter()
            .chain(records.iter())
            .filter_map(|r| match &r.event {
                Event::AnomalyFound {
                    rule,
                    severity,
                    evidence,
                    node,
                    ..
                } => Some(Logged {
                    iteration: r.iteration,
                    rule: rule.clone(),
                    severity: severity.clone(),
                    evidence: evidence.clone(),
                    node: node.clone(),
                }),
                Event::Anomaly { kind, message } => Some(Logged {
                    iteration: r.iteration,
                    rule: kind.as_str().to_string(),
                    severity: "warn".into(),
                    evidence: message.clone(),
                    node: r.parent_id.clone(),
                }),
                Event::EnvironmentChange { paths, reason } => Some(Logged {
                    iteration: r.iteration,
                    rule: "environment_change".into(),
                    severity: "info".into(),
                    evidence: format!("{} {reason}", paths.join(", ")),
                    node: r.parent_id.clone(),
                }),
                _ => None,
            })
            .collect();
        // A budget nearly used is said again when the budget changes
        // (its node names the limit): only the newest of each kind of
        // budget is still true.
        let mut anomalies = anomalies;
        let budget_kind = |a: &Logged| {
            (a.rule == "budget_near")
                .then(|| {
                    a.node
                        .as_deref()
                        .and_then(|n| n.rsplit_once(':'))
                        .map(|(k, _)| k.to_string())
                })
                .flatten()
        };
        let newest: Vec<(usize, String)> = anomalies
            .iter()
            .enumerate()
            .filter_map(|(i, a)| budget_kind(a).map(|k| (i, k)))
            .collect();
        let mut i = 0;
        anomalies.retain(|a| {
            let keep = match budget_kind(a) {
                Some(k) => {
                    newest
                        .iter()
                        .rev()
                        .find(|(_, nk)| *nk == k)
                        .map(|(j, _)| *j)
                        == Some(i)
                }
                None => true,
            };
            i += 1;
            keep
        });
        // Graded one by one: the baseline and the iterations held in full.
        let mut graded: Vec<&IterationRecord> = Vec::new();
        if !history.whole() {
            graded.extend(history.baseline());
        }
        graded.extend(history.recent());
        let attempt = history
            .flagged(flag::CONFIRMATION | flag::CONFIRMATION_FAILED)
            .next()
            .transpose()?;
        let mut evaluation = crate::report::grade::evaluate(&crate::report::grade::Inputs {
            graded,
            facts: history.facts(),
            attempt: attempt.as_deref(),
            run: runs.last(),
            anomalies: &anomalies,
            budget,
            stop,
            started,
        });
        evaluation.judge = judge;
        evaluation.judge_failed = judge_failed;
        let mut metrics = crate::report::metrics::of(&runs, history.facts());
        metrics.since = records.first().map(|r| r.ts).filter(|_| sealed);
        Ok(Observed {
            metrics,
            anomalies,
            evaluation: Some(evaluation),
        })
    }

    /// The "Evaluation" section of `summary.md`: the run's grade, every
    /// iteration that did not pass and why, and the judge's verdict.
    pub(crate) fn evaluation_section(&self) -> String {
        let Some(e) = &self.evaluation else {
            return String::new();
        };
        let mut s = format!("## Evaluation\n\nRun: **{}**", e.run.grade.as_str());
        if e.run.findings.is_empty() {
            s.push_str(" — no check of the run as a whole warned.\n");
        } else {
            s.push('\n');
            for f in &e.run.findings {
                let _ = write!(s, "\n- {} ({}): {}", f.grade.as_str(), f.check, f.reason);
            }
            s.push('\n');
        }
        let flagged: Vec<&crate::report::grade::Graded> = e
            .iterations
            .iter()
            .filter(|g| g.grade != crate::report::grade::Grade::Pass)
            .collect();
        if !flagged.is_empty() {
            s.push_str("\n| iteration | grade | why |\n|---|---|---|\n");
            for g in flagged.iter().rev().take(30) {
                let n = g.iteration.unwrap_or(0);
                let why: Vec<&str> = g.findings.iter().map(|f| f.reason.as_str()).collect();
                let _ = writeln!(
                    s,
                    "| [{n}]({}) | {} | {} |",
                    history::file_name(n),
                    g.grade.as_str(),
                    truncate(&why.join("; ").replace('|', "\\|"), 300)
                );
            }
        }
        let _ = writeln!(
            s,
            "\n{} of {} iteration(s) pass every check (no final answer, anomalies, failed model calls, time limits, tool errors).",
            e.iterations.len() - flagged.len(),
            e.iterations.len()
        );
        if let Some(why) = &e.judge_failed {
            let _ = writeln!(s, "\nJudge: **could not judge** — {}", truncate(why, 600));
        }
        if let Some(j) = &e.judge {
            let _ = writeln!(
                s,
                "\nJudge ({}): **{}** — {}",
                j.judge,
                j.grade.as_str(),
                truncate(&j.why, 600)
            );
            for it in &j.iterations {
                let _ = writeln!(
                    s,
                    "- [{}]({}) {}: {}",
                    it.iteration,
                    history::file_name(it.iteration),
                    it.grade.as_str(),
                    truncate(&it.why, 300)
                );
            }
        }
        s.push('\n');
        s
    }

    /// The "Anomalies" section of `summary.md` (empty when there are none).
    pub(crate) fn section(&self, brief: &str) -> String {
        if self.anomalies.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "## Anomalies\n\n| iteration | anomaly | severity | evidence |\n|---|---|---|---|\n",
        );
        // The most recent first, at most 30: the log has them all.
        for a in self.anomalies.iter().rev().take(30) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                a.iteration
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| "run".into()),
                a.rule,
                a.severity,
                truncate(&a.evidence.replace('|', "\\|").replace('\n', " "), 240)
            );
        }
        let _ = writeln!(
            s,
            "\n{} in all; `ooda trace {brief} N` shows each on the node it points to.\n",
            self.anomalies.len()
        );
        s
    }
}

/// Version of the `summary.json` document (docs/files.md describes it).
pub(crate) const SUMMARY_SCHEMA: u32 = 2;

/// `summary.json`: the facts of `summary.md` as data, for scripts and agents.
/// One row of `summary.json`'s `iterations`.
#[derive(serde::Serialize)]
struct Row {
    iteration: u32,
    verdict: &'static str,
    discard: Option<&'static str>,
    reason: String,
    hypothesis: String,
    effect: Option<f64>,
    ci: Option<[f64; 2]>,
    pairs: Option<usize>,
    predicted: Option<f64>,
    commit: Option<String>,
    tokens: u64,
    cost_usd: f64,
    file: String,
}

/// A range of `summary.json`'s `folded`: what `summary.md` folds into one
/// row ([`folded_rows`] renders it).
#[derive(serde::Serialize)]
struct FoldedRow {
    first: u32,
    last: u32,
    count: usize,
    keep: usize,
    discard: usize,
    falsified: usize,
    failed: usize,
    keeps: Vec<u32>,
    best_kept_effect: Option<f64>,
}

#[derive(serde::Serialize)]
struct FalsifiedRow {
    iteration: u32,
    text: String,
}

/// `summary.json`: the run's facts (small) and its per-iteration lists,
/// bounded as `summary.md` bounds them.
#[derive(serde::Serialize)]
pub(crate) struct Doc<'a> {
    #[serde(flatten)]
    head: serde_json::Value,
    iterations: Vec<Row>,
    folded: Vec<FoldedRow>,
    falsified: Vec<FalsifiedRow>,
    falsified_older: usize,
    metrics: &'a crate::report::metrics::Metrics,
    anomalies: &'a [Logged],
    evaluation: &'a Option<crate::report::grade::Evaluation>,
}

fn folded_json(older: &[Fact]) -> Vec<FoldedRow> {
    let older = older.get(1..).unwrap_or_default();
    if older.is_empty() {
        return Vec::new();
    }
    let width = older
        .len()
        .div_ceil(MAX_FOLDED_ROWS)
        .next_multiple_of(10)
        .max(10);
    older
        .chunks(width)
        .map(|chunk| {
            let count = |f: &dyn Fn(&Fact) -> bool| chunk.iter().filter(|r| f(r)).count();
            let keeps: Vec<&Fact> = chunk.iter().filter(|r| r.is(Verdict::Keep)).collect();
            FoldedRow {
                first: chunk[0].iteration,
                last: chunk[chunk.len() - 1].iteration,
                count: chunk.len(),
                keep: keeps.len(),
                discard: count(&|r| r.is(Verdict::Discard)),
                falsified: count(&|r| r.falsifies()),
                failed: count(&|r| r.verdict.is_some_and(Verdict::is_failure)),
                keeps: keeps.iter().map(|r| r.iteration).collect(),
                best_kept_effect: keeps
                    .iter()
                    .filter_map(|r| r.measured().map(|m| m.effect))
                    .max_by(f64::total_cmp),
            }
        })
        .collect()
}

pub(crate) fn json<'a>(
    brief: &Brief,
    state: &State,
    history: View,
    budget: &Budget,
    orientation: &Orientation,
    observed: &'a Observed,
    lists: &Lists,
) -> Result<Doc<'a>> {
    use serde_json::json;
    let facts = history.facts();
    let keeps = facts.iter().filter(|r| r.is(Verdict::Keep)).count();
    let base = history.baseline_value();
    let (best_at, best_v) = history.best_of(&state.best_commit);
    let best = base.map(|_| best_v);
    let (folded, shown) = fold_point(history);
    let iterations: Vec<Row> = shown
        .iter()
        .map(|r| Row {
            iteration: r.iteration,
            verdict: r.verdict.as_str(),
            discard: r.discard_kind().map(|k| k.as_str()),
            reason: r.reason.clone(),
            hypothesis: r.hypothesis.clone(),
            effect: r.measured.as_ref().map(|m| m.effect),
            ci: r.measured.as_ref().map(|m| [m.ci.0, m.ci.1]),
            pairs: r.measured.as_ref().map(|m| m.pairs.len()),
            predicted: r.predicted.as_ref().map(|p| p.effect),
            commit: r.commit.clone(),
            tokens: r.tokens,
            cost_usd: r.cost_usd,
            file: history::file_name(r.iteration),
        })
        .collect();
    let patterns = &lists.patterns;
    let (alarmed, alarms_older) = (&lists.alarmed.0, lists.alarmed.1);
    let (falsified, falsified_older) = (&lists.falsified.0, lists.falsified.1);
    let (tokens, cost) = history.spent();
    let elapsed = (Utc::now() - state.created_at).to_std().unwrap_or_default();
    let head = json!({
        "schema": SUMMARY_SCHEMA,
        "brief": brief.name,
        "status": state.status().word(),
        "stop": state.stop,
        "warning": state.yellow,
        "metric": {"name": brief.metric.name, "direction": brief.metric.direction},
        "baseline": base,
        "best": best.map(|v| json!({
            "value": v,
            "iteration": best_at.unwrap_or(0),
        })),
        "headline": lists.headline.json(),
        "confirmation_failed": lists.confirmation_failed.as_ref().map(|(it, why)| json!({
            "after_iteration": it,
            "why": why,
        })),
        "confirmed": lists.confirmed.as_ref().map(|(it, c)| json!({
            "effect": c.effect,
            "ci": [c.ci.0, c.ci.1],
            "p": c.p,
            "pairs": c.pairs.len(),
            "after_iteration": it,
        })),
        "noise_per_pair": orientation.noise.map(|n| n.s_h),
        "theta1": orientation.theta1,
        "done": history.len().saturating_sub(1),
        "keeps": keeps,
        "patterns": patterns
            .iter()
            .map(|p| json!({"name": p.name, "lesson": p.lesson, "iteration": p.newest}))
            .collect::<Vec<_>>(),
        "patterns_older": lists.patterns_older,
        "alarms": alarmed
            .iter()
            .flat_map(|r| r.alarms.iter().map(move |a| json!({
                "iteration": r.iteration,
                "level": a.level.word(),
                "kind": a.kind.as_str(),
                "evidence": a.evidence,
            })))
            .collect::<Vec<_>>(),
        "alarms_older": alarms_older,
        "budget": {
            "iterations": {"used": history.len().saturating_sub(1), "limit": budget.iterations},
            "wall_seconds": {"used": elapsed.as_secs_f64(), "limit": budget.wall.map(|w| w.as_secs_f64())},
            "tokens": {"used": tokens, "limit": budget.tokens},
            "cost_usd": {"used": cost, "limit": budget.cost_usd},
        },
        "review": {
            "branch": format!("ooda/{}", brief.name),
            "start_commit": state.start_commit,
            "log": format!("git log --oneline {}..ooda/{}", clip::short(&state.start_commit), brief.name),
            "diff": format!("git diff {}...ooda/{}", clip::short(&state.start_commit), brief.name),
        },
    });
    Ok(Doc {
        head,
        iterations,
        folded: folded_json(&facts[..folded]),
        falsified: falsified
            .iter()
            .filter_map(|r| {
                r.falsified_text().map(|text| FalsifiedRow {
                    iteration: r.iteration,
                    text: text.to_string(),
                })
            })
            .collect(),
        falsified_older,
        metrics: &observed.metrics,
        anomalies: &observed.anomalies,
        evaluation: &observed.evaluation,
    })
}

/// Writes every projection of the archive, `rec` (when given) included: its
/// iteration file when it differs from what is archived, then `summary.md`,
/// `summary.json` and `progress.svg`, then the archive's own (`falsified.md`,
/// retention). Idempotent: a second call with the same record rewrites only
/// the summary (whose "regenerated" line moves).
pub(crate) fn sync(
    archive: &mut Archive,
    rec: Option<IterationRecord>,
    brief: &Brief,
    config: &Config,
) -> Result<()> {
    archive.write_record(rec, brief)?;
    archive.settle()?;
    let view = archive.history.view();
    let orientation = Orientation::of_view(
        view,
        brief.metric.noise_floor,
        config.defaults.alpha,
        config.defaults.pairs,
    );
    write(
        &archive.dir,
        brief,
        &archive.state,
        view,
        &config.budget_for(brief),
        &orientation,
    )?;
    archive.write_own_projections(brief, config.defaults.keep_artifacts)
}

pub(crate) fn write(
    dir: &Path,
    brief: &Brief,
    state: &State,
    history: View,
    budget: &Budget,
    orientation: &Orientation,
) -> Result<()> {
    let observed = Observed::of(
        dir,
        history,
        budget,
        state.stop.as_ref(),
        Some(state.created_at),
    )?;
    let lists = Lists::of(history, brief.metric.direction, &state.best_commit)?;
    write_atomic(
        &Layout::of(dir).summary(),
        render(
            brief,
            state,
            history,
            budget,
            orientation,
            &observed,
            &lists,
        )?
        .as_bytes(),
    )?;
    let data = serde_json::to_string_pretty(&json(
        brief,
        state,
        history,
        budget,
        orientation,
        &observed,
        &lists,
    )?)
    .map_err(|e| crate::error::Error::Internal(format!("serializing summary.json: {e}")))?;
    write_atomic(&Layout::of(dir).summary_json(), (data + "\n").as_bytes())?;
    write_atomic(
        &Layout::of(dir).chart(),
        crate::report::chart::progress_svg_of(brief, history, &lists.headline.short())?.as_bytes(),
    )
}

/// Keeps a reviewer blocked, and changes a reviewer flagged as gaming the
/// benchmark (approved or not): what a morning reader must look at first.
fn review_section(history: View) -> Result<String> {
    let mut lines = Vec::new();
    let (reviewed, older) = newest_flagged(history, flag::REVIEWED)?;
    if older > 0 {
        lines.push(format!(
            "- {older} earlier iterations have review notes too (their files hold them); the newest {}:",
            reviewed.len()
        ));
    }
    for r in &reviewed {
        let link = format!("[{}]({})", r.iteration, history::file_name(r.iteration));
        for rep in &r.subagents {
            let kept = r.verdict == Verdict::Keep;
            if rep.blocks() {
                let what: Vec<String> = rep.findings.iter().map(|f| f.text()).collect();
                let why = if what.is_empty() {
                    rep.problem.clone().unwrap_or_default()
                } else {
                    what.join("; ")
                };
                lines.push(format!(
                    "- {link} **blocked by {}**{}: {}",
                    rep.name,
                    if rep.suspicious { " (suspicious)" } else { "" },
                    truncate(&why, 300)
                ));
            } else if rep.role == crate::model::Role::Review
                && rep.outcome != crate::model::SubagentOutcome::Done
            {
                lines.push(format!(
                    "- {link} **{} did not review** ({}): {}",
                    rep.name,
                    rep.outcome.as_str().replace('_', " "),
                    truncate(rep.problem.as_deref().unwrap_or(""), 300)
                ));
            } else if rep.suspicious {
                lines.push(format!(
                    "- {link} **suspicious** — {} approved{} but suspects the change games the benchmark: review it before merging",
                    rep.name,
                    if kept { " it, and it is kept," } else { "" }
                ));
            }
        }
    }
    if lines.is_empty() {
        return Ok(String::new());
    }
    Ok(format!("## Review\n\n{}\n\n", lines.join("\n")))
}

/// How many iterations (and falsified hypotheses) `summary.md` shows in
/// full; older ones are folded into ranges, so the morning report of a
/// 10,000-iteration history stays a page a person can read (every
/// iteration file is still linked from its range, and `summary.json`'s
/// `folded` holds the ranges as data).
const FULL_ROWS: usize = 100;

/// At most this many folded rows: the range width grows with the history.
const MAX_FOLDED_ROWS: usize = 50;

/// Where the rows shown in full begin: the baseline, and the newest
/// [`FULL_ROWS`] (which the runner holds in full: history/view.rs).
fn fold_point(history: View<'_>) -> (usize, Vec<&IterationRecord>) {
    let recent = history.recent();
    if history.len() <= FULL_ROWS + 1 && history.whole() {
        return (0, recent.iter().collect());
    }
    let from = history.len().saturating_sub(FULL_ROWS).max(1);
    let mut shown: Vec<&IterationRecord> = history.baseline().into_iter().collect();
    shown.extend(recent.iter().filter(|r| r.iteration as usize >= from));
    (from, shown)
}

/// Table rows for iterations `1..` of `older` (iteration 0 is shown in
/// full): the ranges of [`folded_json`], a row each with its counts and
/// its keeps.
fn folded_rows(older: &[Fact]) -> Vec<String> {
    folded_json(older)
        .iter()
        .map(|f| {
            let link = |i: u32| format!("[{i}]({})", history::file_name(i));
            let mut kept = f
                .keeps
                .iter()
                .take(5)
                .map(|&i| link(i))
                .collect::<Vec<_>>()
                .join(", ");
            if f.keeps.len() > 5 {
                let _ = write!(kept, " and {} more", f.keeps.len() - 5);
            }
            let best = f
                .best_kept_effect
                .map(|e| format!("best kept {}", crate::text::number::effect(e)))
                .unwrap_or_else(|| "—".into());
            format!(
                "| {}–{} | {} folded | {} keep{}, {} discard ({} falsified), {} invalid, crash or blocked | {best} | — |",
                link(f.first),
                link(f.last),
                f.count,
                f.keep,
                if kept.is_empty() { String::new() } else { format!(": {kept}") },
                f.discard,
                f.falsified,
                f.failed,
            )
        })
        .collect()
}

fn truncate(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= n {
        line.to_string()
    } else {
        format!("{}…", line.chars().take(n).collect::<String>())
    }
}

/// Why no confirmed gain of the current best is shown.
fn unconfirmed_text(history: View, state: &State, lists: &Lists) -> Result<String> {
    if state.best_commit == state.start_commit {
        return Ok("none: the base was rolled back to the start of the run".into());
    }
    if let Some((it, why)) = &lists.confirmation_failed {
        return Ok(format!(
            "could not be measured after iteration {it}: {}",
            why.replace('|', "\\|")
        ));
    }
    Ok(match history.latest_confirmation()? {
        Some((it, c)) => format!(
            "not yet measured for the current best (the test after iteration {it} measured an earlier best: {} (97.5% CI))",
            crate::text::number::effect_ci(c.effect, c.ci)
        ),
        None => "not yet measured (after every 10 keeps and when the run stops)".into(),
    })
}

/// A confirmation test that failed after the last keep, with its reason.
fn confirmation_failure(history: View) -> Result<Option<(u32, String)>> {
    let facts = history.facts();
    let Some(last_keep) = facts.iter().rposition(|r| r.is(Verdict::Keep)) else {
        return Ok(None);
    };
    let Some(f) = facts[last_keep..]
        .iter()
        .rev()
        .take_while(|r| !r.has(flag::CONFIRMATION))
        .find(|r| r.has(flag::CONFIRMATION_FAILED))
    else {
        return Ok(None);
    };
    let r = history.record(f.iteration as usize)?;
    Ok(r.confirmation_failed.clone().map(|w| (r.iteration, w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_iterations_fold_into_ranges_that_cover_every_one() {
        let short = crate::archive::history::History::of(
            crate::archive::history::synthetic::synthetic_history(10, 7),
        );
        let (from, shown) = fold_point(short.view());
        assert_eq!((from, shown.len()), (0, 11));
        assert!(folded_rows(&short.facts()[..from]).is_empty());

        let records = crate::archive::history::synthetic::synthetic_history(10_000, 7);
        let held = crate::archive::history::History::of(records.clone());
        let (from, shown) = fold_point(held.view());
        assert_eq!(shown.len(), 1 + FULL_ROWS);
        assert_eq!(shown[0].iteration, 0);
        assert_eq!(shown[1].iteration as usize, from);
        assert_eq!(shown.last().unwrap().iteration, 10_000);
        let rows = folded_rows(&held.facts()[..from]);
        assert!(rows.len() <= MAX_FOLDED_ROWS, "{}", rows.len());
        // Contiguous ranges from 1 to the first row shown, whose counts add
        // up to what they fold.
        let range = regex::Regex::new(r"^\| \[(\d+)\]\(iter-\d+\.md\)–\[(\d+)\]\(iter-\d+\.md\) \| (\d+) folded \| (\d+) keep").unwrap();
        let mut next = 1;
        let (mut folded, mut keeps) = (0, 0);
        for row in &rows {
            let c = range.captures(row).unwrap_or_else(|| panic!("{row}"));
            let n = |i: usize| c[i].parse::<usize>().unwrap();
            assert_eq!(n(1), next, "{row}");
            assert_eq!(n(2) - n(1) + 1, n(3), "{row}");
            next = n(2) + 1;
            folded += n(3);
            keeps += n(4);
        }
        assert_eq!(next, from);
        assert_eq!(folded, from - 1);
        let real_keeps = records[1..from]
            .iter()
            .filter(|r| r.verdict == Verdict::Keep)
            .count();
        assert_eq!(keeps, real_keeps);

        // Named patterns: the hundred taught most recently, by name, and a
        // count of the others.
        let all = held.view().patterns().unwrap();
        assert!(all.len() > LIST_NEWEST, "{}", all.len());
        let lists = Lists::of(held.view(), Direction::Minimize, "").unwrap();
        assert_eq!(lists.patterns.len(), LIST_NEWEST);
        assert_eq!(lists.patterns_older, all.len() - LIST_NEWEST);
        let newest: std::collections::BTreeSet<&str> =
            all[..LIST_NEWEST].iter().map(|p| p.name.as_str()).collect();
        assert!(
            lists
                .patterns
                .iter()
                .all(|p| newest.contains(p.name.as_str()))
        );
        assert!(lists.patterns.windows(2).all(|w| w[0].name <= w[1].name));
    }

    #[test]
    fn call_table_and_usage_section() {
        use crate::model::{AgentCall, CallOutcome, Usage};
        let call = AgentCall {
            phase: Phase::Plan,
            attempt: 2,
            outcome: CallOutcome::Rejected,
            exit_code: Some(0),
            seconds: 1.5,
            usage: Usage {
                input: 100,
                cached: 40,
                output: 20,
                cost_usd: Some(0.01),
                ..Usage::default()
            },
            model: None,
            problem: Some("(cites) a | b".into()),
            warnings: Vec::new(),
            waited: 0.0,
            output: Some("artifacts/iter-001/plan-2.output.txt".into()),
            files: Vec::new(),
        };
        let t = history::render_calls(std::slice::from_ref(&call));
        assert!(t.contains("| [plan](artifacts/iter-001/plan-2.output.txt) | 2 | rejected | 0 | 1.5 | 100 / 20 (40) | $0.01 | (cites) a \\| b |"), "{t}");
        let mut rec = IterationRecord::new(1, Verdict::Invalid);
        let mut reviewer = call.clone();
        reviewer.phase = Phase::Review;
        rec.agent_calls = vec![call.clone(), call, reviewer];
        let held = crate::archive::history::History::of(vec![
            IterationRecord::new(0, Verdict::Baseline),
            rec,
        ]);
        let s = usage_section(held.view()).unwrap();
        assert!(s.contains("| plan | 2 | 2 | 200 | 40 | $0.02 | 3 |"), "{s}");
        // A subagent's call has its row too: the rows add up to "all".
        assert!(s.contains("| review (subagents) | 1 | 1 | 100 |"), "{s}");
        assert!(s.contains("| all | 3 |"));
        let none = crate::archive::history::History::of(Vec::new());
        assert_eq!(usage_section(none.view()).unwrap(), "");
    }
}
