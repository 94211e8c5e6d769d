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
use crate::archive::state::InFlight;
use crate::driver::{MainAgent, Step};
use crate::error::{Error, Result};
use crate::model::{Review, ReviewVerdict, Role, SubagentOutcome, Verdict};
use crate::subagents::definition::{OnError, Sees, SubDriver};
use crate::subagents::dispatch::{self, Answer, Dispatched, Job};
use crate::subagents::sees::{self, Parts};
use crate::subagents::{Roster, reviewer};
use crate::workspace::Workspace;

/// REVIEW's output: the review and what the reviewers' runs cost and
/// touched.
pub(crate) struct Reviewed {
    review: Review,
    done: Dispatched,
}

impl Reviewed {
    /// A block turns the keep into a discard (`blocked_by_review`), its
    /// measurement kept in the reason; a simplification that passed its test
    /// and its review replaces the kept tree.
    pub fn apply(self, c: &mut InFlight) {
        let Reviewed { review, done } = self;
        c.agent_calls.extend(done.calls);
        if let Some(b) = done.breaches.iter().find(|b| b.unconfined)
            && c.tamper.is_none()
        {
            c.tamper = Some(format!("while reviewing, {}", b.message));
        }
        if let Some(findings) = review.blocked()
            && let Some(e) = c.eval.as_mut()
        {
            e.verdict = Verdict::Discard;
            e.discard = Some(crate::model::DiscardKind::BlockedByReview);
            e.reason = format!("blocked by review: {findings} (measured: {})", e.reason);
        }
        if let Some(s) = review.simplified.as_ref().filter(|s| s.accepted)
            && c.tree.as_deref() != Some(s.tree.as_str())
        {
            c.tree = Some(s.tree.clone());
            c.changed_paths = s.changed_paths.clone();
            if let Some(e) = c.eval.as_mut() {
                e.reason = format!("{}; {}", e.reason, s.reason);
            }
        }
        c.review = Some(review);
    }
}

/// REVIEW: none for an iteration that is not a keep. A block is the
/// decision's last word, and is logged as one.
pub(crate) fn run(
    t: &Step,
    ws: &Workspace,
    roster: &Roster,
    agent: &MainAgent,
    cur: &InFlight,
    start_commit: &str,
) -> Result<Option<Reviewed>> {
    let out = review(t, ws, roster, agent, cur, start_commit)?;
    if let Some((r, _)) = &out
        && let Some(findings) = r.blocked()
    {
        t.span.emit(crate::events::Event::Decision {
            verdict: Verdict::Discard,
            reason: format!("blocked by review: {findings}"),
        })?;
    }
    Ok(out.map(|(review, done)| Reviewed { review, done }))
}

fn review(
    t: &Step,
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
    let kept = oid(cur
        .tree
        .as_deref()
        .ok_or_else(|| Error::Internal("a keep without a measured tree".into()))?)?;
    // After the second pass (or a failed test) there is nothing to do: a
    // REVIEW resumed there dispatches nothing again.
    if let Some(r) = &cur.review
        && r.simplified
            .as_ref()
            .is_some_and(|s| s.measured && s.reviewed)
    {
        return Ok(Some((r.clone(), Dispatched::default())));
    }
    // The second pass: a simplified candidate that passed its test is
    // reviewed like a keep before it replaces the kept one.
    let pending = cur
        .review
        .as_ref()
        .and_then(|r| r.simplified.as_ref())
        .filter(|s| s.measured && !s.reviewed);
    let tree = match pending {
        Some(s) => oid(&s.tree)?,
        None => kept,
    };
    let base = oid(&cur.base_commit)?;
    let change = ws.change(base, tree)?;
    let lines = change.changed_lines();
    // The same reviewers judge the simplified diff as judged the kept one.
    let trigger_lines = pending.map_or(lines, |s| s.lines_before);
    let floor = Roster::builtin_rules();
    let mut defs: Vec<_> = roster
        .with_role(Role::Review)
        .filter(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(trigger_lines)))
        .collect();
    // A reviewer reads the files of what it reviews: the simplified
    // candidate is in its scratch worktree.
    let review_dir = match pending {
        Some(_) => ws.dir.join(crate::driver::step::SIMPLIFY_DIR),
        None => t.cand_dir.to_path_buf(),
    };
    let review_dir = review_dir.as_path();
    if !defs.iter().any(|d| d.driver == SubDriver::Builtin)
        && let Some(f) = floor.as_ref()
    {
        defs.push(f);
    }
    let start = oid(start_commit)?;
    let budget = t.config.defaults.prompt_budget;
    let mut parts = Parts::default();
    parts.add(Sees::Diff, sees::clip_patch(&change.patch, budget * 2 / 3));
    if defs
        .iter()
        .any(|d| d.driver != SubDriver::Builtin && d.sees.contains(&Sees::Rules))
    {
        let rules = sees::rules(
            ws,
            start,
            &t.config.review.rules,
            &t.brief.must_not_break,
            budget / 3,
        )?;
        parts.add(Sees::Rules, rules);
    }
    let measuring = measurement_files(ws, start, t)?;
    let main_name = agent.agent_name();
    let rules_cx = reviewer::Context {
        brief: t.brief,
        guards: &eval.guards,
        measuring: &measuring,
        max_diff_lines: t.config.review.max_diff_lines,
    };
    let (change, parts, rules_cx) = (&change, &parts, &rules_cx);
    // The simplifier, on the first pass of a big enough keep: one (the
    // first by name), in a scratch copy of the kept candidate.
    let simplifier = roster
        .with_role(Role::Simplify)
        .find(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(lines)))
        .filter(|_| pending.is_none());
    let scratch = match simplifier {
        Some(_) => {
            Some(ws.scratch_of_tree(crate::driver::step::SIMPLIFY_DIR, base, kept, false)?)
        }
        None => None,
    };
    let mut jobs: Vec<Job> = defs
        .iter()
        .map(|def| {
            let def = *def;
            let driver = def.driver_name(main_name.as_deref());
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
                    let agent = command_agent(t, def, agent);
                    Box::new(move |span| match agent {
                        Err(why) => Ok(Answer::failed(SubagentOutcome::Skipped, why)),
                        Ok(agent) => {
                            let prompt = sees::prompt(
                                def,
                                &parts.for_definition(def),
                                dispatch::REVIEW_ANSWER,
                            );
                            dispatch::run_command(
                                t,
                                agent.as_ref(),
                                def,
                                crate::model::Phase::Review,
                                &prompt,
                                review_dir,
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
    if let (Some(def), Some(dir)) = (simplifier, scratch.as_deref()) {
        let agent = command_agent(t, def, agent);
        let driver = def.driver_name(main_name.as_deref());
        let work: dispatch::Work = Box::new(move |span| match agent {
            Err(why) => Ok(Answer::failed(SubagentOutcome::Skipped, why)),
            Ok(agent) => {
                let prompt = sees::prompt(def, &parts.for_definition(def), SIMPLIFY_ANSWER);
                dispatch::run_command(
                    t,
                    agent.as_ref(),
                    def,
                    crate::model::Phase::Review,
                    &prompt,
                    dir,
                    span,
                    |v, a| {
                        a.body = v.clone();
                        Ok(())
                    },
                )
            }
        });
        jobs.push(Job { def, driver, work });
    }
    let before = ws.file_stats()?;
    let tag = pending.is_some().then_some("simplified");
    let mut done = dispatch::run_all(t.span, t.dir, t.iteration, jobs, tag)?;
    // A reviewer looks; it does not edit. The commit is built from the
    // measured tree whatever happened, but a reviewer that changed the
    // candidate has not reviewed what is committed: its on_error decides,
    // and what git ignores (a build output) is removed before it can reach
    // the next measurement.
    ws.remove_new_ignored(&before)?;
    if !ws.still_is(kept)? {
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
    let mut review = cur.review.clone().unwrap_or_default();
    match pending {
        Some(s) => {
            // The second pass: approved, the simplified tree is the keep.
            let mut s = s.clone();
            s.reviewed = true;
            s.reports = done.reports.clone();
            let blocked = done.reports.iter().any(|r| r.blocks());
            s.accepted = !blocked;
            s.reason = if blocked {
                format!(
                    "{}; a reviewer blocked the simplified diff, so the kept change stands",
                    s.reason
                )
            } else {
                format!("{}; approved: the simplified change is committed", s.reason)
            };
            review.simplified = Some(s);
        }
        None => {
            review.reports = done.reports.clone();
            let simplifier_ran = done.reports.iter().find(|r| r.role == Role::Simplify);
            review.simplified = match (simplifier_ran, scratch.as_deref()) {
                (Some(r), Some(dir))
                    if r.outcome == SubagentOutcome::Done && review.blocked().is_none() =>
                {
                    simplified(ws, t, base, kept, dir, lines)?
                }
                _ => None,
            };
        }
    }
    Ok(Some((review, done)))
}

const SIMPLIFY_ANSWER: &str = "Edit the files in the working directory (a copy of the kept candidate) into the simplest change with the same effect. Then answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"change\": \"what you simplified, in one sentence\"}\n```";

/// The simplifier's version, if it is one worth measuring: a different
/// tree that changes fewer lines and leaves the knob point alone (a
/// different point would be a different experiment, not a simpler change).
fn simplified(
    ws: &Workspace,
    t: &Step,
    base: git2::Oid,
    kept: git2::Oid,
    dir: &std::path::Path,
    lines_before: usize,
) -> Result<Option<crate::model::Simplified>> {
    let (tree, changed) = ws.tree_of_scratch(dir, t.brief.scope.max_file_size)?;
    if tree == kept {
        return Ok(None);
    }
    let mut s = crate::model::Simplified {
        tree: tree.to_string(),
        kept_tree: kept.to_string(),
        lines_before,
        ..Default::default()
    };
    let change = ws.change(base, tree)?;
    s.lines_after = change.changed_lines();
    s.changed_paths = change
        .files
        .iter()
        .flat_map(|f| f.paths().map(str::to_string))
        .collect();
    s.changed_paths.sort();
    s.changed_paths.dedup();
    // The checks a candidate's change gets, on what the simplifier changed
    // (against the kept candidate): scope, protected paths, file sizes,
    // symlinks out of the worktree; and the knob point stays the kept one's.
    let knobs = t.brief.knobs_file.trim_start_matches("./");
    let touched_knobs = ws
        .change(
            ws.commit_tree(base, kept, "ooda: the kept candidate")?,
            tree,
        )?
        .files
        .iter()
        .any(|f| f.paths().any(|p| p == knobs));
    let refused = if let Some(v) = super::execute::content_violation(t.brief, &changed) {
        Some(v)
    } else if touched_knobs {
        Some("it changed the knobs file: a different point is a different experiment, not a simpler change".into())
    } else if s.lines_after >= s.lines_before {
        Some(format!(
            "it changes {} lines, not fewer than the kept change's {}",
            s.lines_after, s.lines_before
        ))
    } else {
        None
    };
    match refused {
        Some(why) => {
            // Settled without a test: the kept change stands.
            s.measured = true;
            s.reviewed = true;
            s.reason = format!("the simplifier's version was not measured: {why}");
        }
        None => {
            s.reason = format!(
                "simplified from {} to {} changed lines",
                s.lines_before, s.lines_after
            );
        }
    }
    Ok(Some(s))
}

/// The agent a subagent runs: for `driver: llm`, ooda's own loop on the
/// definition's model; for `driver: command`, its own `agent` profile, else
/// the Brief's agent. `Err` says why it cannot run (the subagent is skipped).
pub(crate) fn command_agent(
    t: &Step,
    def: &crate::subagents::Definition,
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
                Box::new(crate::driver::LlmAgent::new(setup, t.config))
                    as Box<dyn crate::driver::Caller>
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
                    sandboxed: t.config.sandbox.abi().is_some(),
                }) as Box<dyn crate::driver::Caller>
            })
            .ok_or_else(no_profile),
        None => main.caller().map(|c| c.clone_box()).ok_or_else(no_profile),
    }
}

/// The files the Brief's commands run or read, as the run's start commit
/// has them.
fn measurement_files(ws: &Workspace, start: git2::Oid, t: &Step) -> Result<BTreeSet<String>> {
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
