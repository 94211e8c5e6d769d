//! REVIEW: an independent look at a kept change before it is committed.
//!
//! Every definition with `role: review` whose trigger the keep fires runs,
//! in parallel, and the builtin rules run on every keep whatever else does
//! (as `builtin-rules` when no builtin reviewer is defined): the builtin
//! code-reviewer applies its rules to the typed change; a command reviewer
//! gets only the diff and the rule files under its definition's prompt,
//! never the plan, the hypothesis or the agent's output
//! (`subagents/reviewer.rs`). On the first pass of a big keep the
//! simplifier runs beside them (`subagents/simplifier.rs`); its version,
//! once EVALUATE measured it no worse, gets the same reviewers on a second
//! pass. The rules and the
//! files the measurement uses are read as the run started, so a keep cannot
//! rewrite what a later keep is judged by. One block is enough: the machine
//! turns the keep into a discard of kind `blocked_by_review`. A reviewer's
//! `suspicious` flag is shown in `summary.md` even when it approved.

use super::oid;
use crate::archive::state::InFlight;
use crate::driver::{MainAgent, Step};
use crate::error::{Error, Result};
use crate::model::{Review, ReviewVerdict, Role, SubagentOutcome, Verdict};
use crate::subagents::definition::OnError;
use crate::subagents::dispatch::{self, Dispatched, Job};
use crate::subagents::{Roster, reviewer, simplifier};
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
    pub(super) fn apply(self, c: &mut InFlight) {
        let Reviewed { review, done } = self;
        c.agent_calls.extend(done.calls);
        if let Some(b) = done.breaches.iter().find(|b| b.unconfined)
            && c.tamper.is_none()
        {
            c.tamper = Some(crate::model::Tamper {
                phase: crate::model::Phase::Review,
                what: b.message.clone(),
            });
        }
        if let Some(findings) = review.blocked()
            && let Some(e) = c.eval.as_mut()
        {
            e.verdict = Verdict::Discard;
            e.discard = Some(crate::model::DiscardKind::BlockedByReview);
            e.reason = format!("blocked by review: {findings} (measured: {})", e.reason);
        }
        if let Some(s) = review.simplified.as_ref().filter(|s| s.accepted())
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
        && r.simplified.as_ref().is_some_and(|s| s.stage.settled())
    {
        return Ok(Some((r.clone(), Dispatched::default())));
    }
    // The second pass: a simplified candidate that passed its test is
    // reviewed like a keep before it replaces the kept one.
    let pending = cur
        .review
        .as_ref()
        .and_then(|r| r.simplified.as_ref())
        .filter(|s| matches!(s.stage, crate::model::SimplifyStage::Measured(_)));
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
    let defs = reviewer::due(roster, floor.as_ref(), trigger_lines);
    // A reviewer reads the files of what it reviews: the simplified
    // candidate is in its scratch worktree.
    let review_dir = match pending {
        Some(_) => ws.dir.join(crate::driver::step::SIMPLIFY_DIR),
        None => t.cand_dir.to_path_buf(),
    };
    let review_dir = review_dir.as_path();
    let start = oid(start_commit)?;
    let parts = reviewer::context(t, ws, start, &defs, &change)?;
    let measuring = reviewer::measurement_files_at(ws, start, t.brief)?;
    let rules_cx = reviewer::Context {
        brief: t.brief,
        guards: &eval.guards,
        measuring: &measuring,
        max_diff_lines: t.config.review.max_diff_lines,
        carried: eval
            .run_writes
            .as_ref()
            .map_or(&[][..], |w| w.carried.as_slice()),
    };
    let (change, parts, rules_cx) = (&change, &parts, &rules_cx);
    // The simplifier, on the first pass of a big enough keep: one (the
    // first by name), in a scratch copy of the kept candidate.
    let simplifier = simplifier::due(roster, lines).filter(|_| pending.is_none());
    let scratch = match simplifier {
        Some(_) => {
            Some(ws.scratch_of_tree(crate::driver::step::SIMPLIFY_DIR, base, kept, false)?)
        }
        None => None,
    };
    let mut jobs: Vec<Job> = defs
        .iter()
        .map(|def| reviewer::job(def, t, agent, change, rules_cx, parts, review_dir))
        .collect();
    if let (Some(def), Some(dir)) = (simplifier, scratch.as_deref()) {
        jobs.push(simplifier::job(def, t, agent, parts, dir));
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
    // The measurement's own outputs (a benchmark's log, which the base's
    // runs wrote too) are in the worktree already; what counts is the files
    // that would be committed, and new ones nothing explains.
    if !ws.since(kept, t.brief.scope.max_file_size)?.1.clean() {
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
        Some(s) => review.simplified = Some(simplifier::reviewed(s, &done.reports)),
        None => {
            review.reports = done.reports.clone();
            let simplifier_ran = done.reports.iter().find(|r| r.role == Role::Simplify);
            review.simplified = match (simplifier_ran, scratch.as_deref()) {
                (Some(r), Some(dir))
                    if r.outcome == SubagentOutcome::Done && review.blocked().is_none() =>
                {
                    simplifier::proposal(ws, t, base, kept, dir, lines)?
                }
                _ => None,
            };
        }
    }
    Ok(Some((review, done)))
}
