//! REVIEW: an independent look at a kept change before it is committed.
//!
//! Every definition with `role: review` whose trigger the keep fires runs,
//! in parallel: the builtin code-reviewer applies its rules to the typed
//! change; a command reviewer gets only the diff and the rule files (read
//! from the base commit) under its definition's prompt, never the plan, the
//! hypothesis or the agent's output. One block is enough: the machine turns
//! the keep into a discard of kind `blocked_by_review`. A reviewer's
//! `suspicious` flag is shown in `summary.md` even when it approved.

use super::oid;
use crate::driver::{MainAgent, Turn};
use crate::error::{Error, Result};
use crate::model::{Review, Role, Verdict};
use crate::state::InFlight;
use crate::subagents::context::{self, Parts};
use crate::subagents::definition::{Sees, SubDriver};
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
) -> Result<Option<(Review, Dispatched)>> {
    let Some(eval) = &cur.eval else {
        return Ok(None);
    };
    if eval.verdict != Verdict::Keep || cur.cut.is_some() {
        return Ok(None);
    }
    let tree = cur
        .tree
        .as_deref()
        .ok_or_else(|| Error::Internal("a keep without a measured tree".into()))?;
    let base = oid(&cur.base_commit)?;
    let change = ws.change(base, oid(tree)?)?;
    let lines = change.changed_lines();
    let defs: Vec<_> = roster
        .with_role(Role::Review)
        .filter(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(lines)))
        .collect();
    if defs.is_empty() {
        return Ok(Some((Review::default(), Dispatched::default())));
    }
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
        parts.add(
            Sees::Rules,
            context::rules(
                ws,
                base,
                &t.config.review.rules,
                &t.brief.must_not_break,
                budget / 3,
            )?,
        );
    }
    let main_profile = match agent {
        MainAgent::Command(c) => Some(c.as_ref()),
        MainAgent::Builtin => None,
    };
    let rules_cx = reviewer::Context {
        brief: t.brief,
        guards: &eval.guards,
        base_dir: t.base_dir,
        max_diff_lines: t.config.review.max_diff_lines,
    };
    let (change, parts, rules_cx) = (&change, &parts, &rules_cx);
    let jobs: Vec<Job> = defs
        .into_iter()
        .map(|def| {
            let brief_agent = main_profile.map(|c| c.name.as_str());
            let driver = def.driver_name(brief_agent);
            let work: dispatch::Work =
                match def.driver {
                    SubDriver::Builtin => Box::new(move |_| {
                        let (findings, suspicious) = reviewer::review(change, rules_cx);
                        Ok(Answer {
                            verdict: Some(if findings.is_empty() {
                                crate::model::ReviewVerdict::Approve
                            } else {
                                crate::model::ReviewVerdict::Block
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
                        let profile = def
                            .agent
                            .as_deref()
                            .and_then(|a| t.config.agents.get(a).map(|p| (a, p)));
                        let agent = match (profile, main_profile) {
                            (Some((name, p)), _) => Some(crate::driver::CommandAgent {
                                name: name.to_string(),
                                profile: p.clone(),
                                sandboxed: t.config.sandbox.abi().is_some(),
                            }),
                            (None, Some(c)) => Some(c.clone()),
                            (None, None) => None,
                        };
                        Box::new(move |span| match agent {
                            None => Ok(Answer::failed(
                                crate::model::SubagentOutcome::Skipped,
                                format!(
                                    "`driver: command` needs a command profile, and the Brief's agent is builtin: set `agent: <profile>` in {}",
                                    def.path.display()
                                ),
                            )),
                            Some(agent) => {
                                let prompt = context::prompt(
                                    def,
                                    &parts.for_definition(def),
                                    dispatch::REVIEW_ANSWER,
                                );
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
    let done = dispatch::run_all(t.span, t.dir, t.iteration, jobs)?;
    let review = Review {
        reports: done.reports.clone(),
        simplified: None,
    };
    Ok(Some((review, done)))
}
