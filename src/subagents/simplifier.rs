//! The code-simplifier: a simpler equivalent of a big keep, committed in
//! its place only when it is measured no worse and reviewed like the keep.
//!
//! On the first REVIEW of a keep whose diff its trigger names, the first
//! simplifier by name edits a scratch copy of the kept candidate (the
//! worktree `simplify`, never the candidate itself). What it made is a
//! [`proposal`] when it is a different tree that changes fewer lines and
//! leaves the knob point alone; EVALUATE then measures it against the keep
//! for non-inferiority (`phases/evaluate.rs`), the reviewers judge its diff
//! on the second REVIEW ([`reviewed`]), and only then is its tree the one
//! committed. Out of budget, the keep stands untested against it.

use std::path::Path;

use super::Definition;
use super::dispatch::{self, Job};
use super::sees::{self, Parts};
use crate::driver::{MainAgent, Step};
use crate::error::Result;
use crate::model::{Simplification, SimplifyStage, SubagentReport};
use crate::workspace::Workspace;

/// The simplifier a keep of `lines` changed lines triggers: one, the first
/// by name.
pub(crate) fn due(roster: &super::Roster, lines: usize) -> Option<&Definition> {
    roster
        .with_role(crate::model::Role::Simplify)
        .find(|d| d.triggers.iter().any(|tr| tr.fires_on_keep(lines)))
}

/// The simplifier `def` as a job of REVIEW, editing `dir`.
pub(crate) fn job<'a>(
    def: &'a Definition,
    t: &'a Step,
    main: &MainAgent,
    parts: &'a Parts,
    dir: &'a Path,
) -> Job<'a> {
    let driver = def.driver_name(main.agent_name().as_deref());
    let prompt = sees::prompt(def, &parts.for_definition(def), SIMPLIFY_ANSWER);
    let work = dispatch::agent_work(t, def, main, prompt, dir, |v, a| {
        a.body = v.clone();
        Ok(())
    });
    Job { def, driver, work }
}

/// The simplified version after the reviewers' second pass over it
/// (measured no worse): approved, its tree is the keep; one block, and the
/// kept change stands.
pub(crate) fn reviewed(s: &Simplification, reports: &[SubagentReport]) -> Simplification {
    let mut s = s.clone();
    s.reports = reports.to_vec();
    let blocked = reports.iter().any(|r| r.blocks());
    s.stage = match (s.stage, blocked) {
        (SimplifyStage::Measured(test), false) => SimplifyStage::Accepted(test),
        (SimplifyStage::Measured(test), true) => SimplifyStage::Rejected(Some(test)),
        (stage, _) => stage,
    };
    s.reason = if blocked {
        format!(
            "{}; a reviewer blocked the simplified diff, so the kept change stands",
            s.reason
        )
    } else {
        format!("{}; approved: the simplified change is committed", s.reason)
    };
    s
}

const SIMPLIFY_ANSWER: &str = "Edit the files in the working directory (a copy of the kept candidate) into the simplest change with the same effect. Then answer with one JSON object, written to the file named by $OODA_OUTPUT_FILE or as the last code block tagged `ooda` in your reply:\n\n```ooda\n{\"change\": \"what you simplified, in one sentence\"}\n```";

/// The simplifier's version, if it is one worth measuring: a different
/// tree that changes fewer lines and leaves the knob point alone (a
/// different point would be a different experiment, not a simpler change).
pub(crate) fn proposal(
    ws: &Workspace,
    t: &Step,
    base: git2::Oid,
    kept: git2::Oid,
    dir: &std::path::Path,
    lines_before: usize,
) -> Result<Option<Simplification>> {
    let (tree, changed) = ws.tree_of_scratch(dir, t.brief.scope.max_file_size)?;
    if tree == kept {
        return Ok(None);
    }
    let mut s = Simplification::proposed(tree.to_string(), kept.to_string(), lines_before);
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
    let refused = if let Some(v) = crate::workspace::content_violation(t.brief, &changed) {
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
            s.stage = SimplifyStage::Rejected(None);
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
