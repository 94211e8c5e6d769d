//! REVIEW: an independent look at a kept change before it is committed.
//!
//! Every definition with `role: review` whose trigger the keep fires runs,
//! in parallel, and the builtin rules run on every keep whatever else does
//! (as `builtin-rules` when no builtin reviewer is defined): the builtin
//! code-reviewer applies its rules to the typed change; a command reviewer
//! gets only the diff and the rule files under its definition's prompt,
//! never the plan, the hypothesis or the agent's output. The rules and the
//! files the measurement uses are read as the run started, so a keep cannot
//! rewrite what a later keep is judged by. One block is enough: the machine
//! turns the keep into a discard of kind `blocked_by_review`. A reviewer's
//! `suspicious` flag is shown in `summary.md` even when it approved.

use std::collections::BTreeSet;

use super::oid;
use crate::driver::{MainAgent, Turn};
use crate::error::{Error, Result};
use crate::model::{Review, ReviewVerdict, Role, SubagentOutcome, Verdict};
use crate::state::InFlight;
use crate::subagents::context::{self, Parts};
use crate::subagents::definition::{OnError, Sees, SubDriver};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};
use crate::subagents::{Roster, reviewer};
use crate::workspace::Workspace;

/// REVIEW's output: the review (none for an iteration that is not a keep)
/// and what the reviewers' runs cost and touched.
pub(crate) fn run(
    t: &Turn,
    ws: &Workspace,
    roster: &Roster,
    agent: &MainAgent,
    cur: &InFlight,
    start_commit: &str,
) -> Result<Option<(Review, Dispatched)>> {
    let Some(eval) = &cur.eval else {
        return Ok(None);
    };
    if eval.verdict != Verdict::Keep || cur.cut.is_some() {
        return Ok(None);
    }
    let tree = oid(cur
        .tree
        .as_deref()
        .ok_or_else(|| Error::Internal("a keep without a measured tree".into()))?)?;
    let change = ws.change(oid(&cur.base_commit)?, tree)?;
    let lines = change.changed_lines();
    let floor = Roster::builtin_rules();
    let mut defs: Vec<_> = roster
        .with_role(Role::Review)
        .filter(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(lines)))
        .collect();
    if !defs.iter().any(|d| d.driver == SubDriver::Builtin)
        && let Some(f) = floor.as_ref()
    {
        defs.push(f);
    }
    let start = oid(start_commit)?;
    let budget = t.config.defaults.prompt_budget;
    let mut parts = Parts::default();
    parts.add(
        Sees::Diff,
        context::clip_patch(&change.patch, budget * 2 / 3),
    );
    if defs
        .iter()
        .any(|d| d.driver != SubDriver::Builtin && d.sees.contains(&Sees::Rules))
    {
        let rules = context::rules(
            ws,
            start,
            &t.config.review.rules,
            &t.brief.must_not_break,
            budget / 3,
        )?;
        parts.add(Sees::Rules, rules);
    }
    let measuring = measurement_files(ws, start, t)?;
    let main_profile = match agent {
        MainAgent::Command(c) => Some(c.as_ref()),
        MainAgent::Builtin => None,
    };
    let rules_cx = reviewer::Context {
        brief: t.brief,
        guards: &eval.guards,
        measuring: &measuring,
        max_diff_lines: t.config.review.max_diff_lines,
    };
    let (change, parts, rules_cx) = (&change, &parts, &rules_cx);
    let jobs: Vec<Job> = defs
        .iter()
        .map(|def| {
            let def = *def;
            let driver = def.driver_name(main_profile.map(|c| c.name.as_str()));
            let work: dispatch::Work = match def.driver {
                SubDriver::Builtin => Box::new(move |_| {
                    let (findings, suspicious) = reviewer::review(change, rules_cx);
                    let blocks = findings.iter().any(|f| !f.advisory);
                    Ok(Answer {
                        verdict: Some(if blocks {
                            ReviewVerdict::Block
                        } else {
                            ReviewVerdict::Approve
                        }),
                        body: serde_json::json!({
                            "changed_lines": change.changed_lines(),
                            "files": change.files.iter().map(|f| &f.path).collect::<Vec<_>>(),
                            "findings": &findings,
                        }),
                        findings,
                        suspicious,
                        ..Answer::default()
                    })
                }),
                SubDriver::Command | SubDriver::Llm => {
                    let agent = command_agent(t, def, main_profile);
                    Box::new(move |span| match agent {
                        None => Ok(Answer::failed(
                            SubagentOutcome::Skipped,
                            format!(
                                "`driver: command` needs a command profile, and the Brief's agent is builtin: set `agent: <profile>` in {}",
                                def.path.display()
                            ),
                        )),
                        Some(agent) => {
                            let prompt =
                                context::prompt(def, &parts.for_definition(def), dispatch::REVIEW_ANSWER);
                            dispatch::run_command(
                                t,
                                &agent,
                                def,
                                crate::model::Phase::Review,
                                &prompt,
                                span,
                                dispatch::read_review,
                            )
                        }
                    })
                }
            };
            Job { def, driver, work }
        })
        .collect();
    let before = ws.file_stats()?;
    let mut done = dispatch::run_all(t.span, t.dir, t.iteration, jobs)?;
    // A reviewer looks; it does not edit. The commit is built from the
    // measured tree whatever happened, but a reviewer that changed the
    // candidate has not reviewed what is committed: its on_error decides,
    // and what git ignores (a build output) is removed before it can reach
    // the next measurement.
    ws.remove_new_ignored(&before)?;
    if !ws.still_is(tree)? {
        t.span.emit(crate::events::Event::Anomaly {
            kind: crate::model::AnomalyKind::AgentEditInLearn,
            message: "a reviewer edited the candidate's files; the commit is the measured tree, and the reviewers that ran a command are counted as failed".into(),
        })?;
        for r in done
            .reports
            .iter_mut()
            .filter(|r| r.driver.starts_with("command"))
        {
            let on_error = defs
                .iter()
                .find(|d| d.name == r.name)
                .map_or(OnError::Block, |d| d.on_error);
            r.outcome = SubagentOutcome::Failed;
            r.findings.clear();
            r.verdict = (on_error == OnError::Block).then_some(ReviewVerdict::Block);
            r.problem = Some(format!(
                "the candidate's files changed while it reviewed (on_error: {})",
                on_error.as_str()
            ));
        }
    }
    let review = Review {
        reports: done.reports.clone(),
        simplified: None,
    };
    Ok(Some((review, done)))
}

/// The profile a command subagent runs: its own `agent`, else the Brief's.
pub(crate) fn command_agent(
    t: &Turn,
    def: &crate::subagents::Definition,
    main: Option<&crate::driver::CommandAgent>,
) -> Option<crate::driver::CommandAgent> {
    match def.agent.as_deref() {
        Some(a) => t.config.agents.get(a).map(|p| crate::driver::CommandAgent {
            name: a.to_string(),
            profile: p.clone(),
            sandboxed: t.config.sandbox.abi().is_some(),
        }),
        None => main.cloned(),
    }
}

/// The files the Brief's commands run or read, as the run's start commit
/// has them.
fn measurement_files(ws: &Workspace, start: git2::Oid, t: &Turn) -> Result<BTreeSet<String>> {
    let repo = ws.base_repo()?;
    let tree = repo
        .find_commit(start)
        .and_then(|c| c.tree())
        .map_err(|e| Error::git("reading the run's start commit", e))?;
    let read = |p: &str| -> Option<String> {
        let entry = tree.get_path(std::path::Path::new(p)).ok()?;
        let blob = repo.find_blob(entry.id()).ok()?;
        String::from_utf8(blob.content().to_vec()).ok()
    };
    Ok(reviewer::measurement_files(t.brief, &read))
}
