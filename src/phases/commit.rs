//! Committing a keep, in two named steps.
//!
//! 1. [`prepare`] (in LEARN, before the agent's LEARN runs): the commit
//!    object, built from the tree that was measured, on no branch yet.
//!    Nothing an agent edits afterwards can reach it.
//! 2. [`advance`] (in COMMIT, after LEARN archived the commit's hash): the
//!    branch `ooda/<brief>` and the base worktree move to it.
//!
//! The order is what makes a kill harmless: before step 2 the branch is
//! where the archive says the best is, and after it the archive already
//! names the commit, so a resumed run finds the keep either way.

use super::failpoint;
use super::oid;
use crate::archive::state::{InFlight, State};
use crate::brief::Brief;
use crate::error::Result;
use crate::model::Verdict;
use crate::workspace::Workspace;

/// The kept candidate's commit object, parented on the iteration's base.
pub(crate) fn prepare(ws: &Workspace, brief: &Brief, cur: &InFlight) -> Result<String> {
    let plan = cur.plan.clone().unwrap_or_default();
    let reason = cur.eval.as_ref().map(|e| e.reason.as_str()).unwrap_or("");
    // The hypothesis is the agent's text: redacted like everything archived,
    // since a commit message is on disk (and pushed) for good.
    let msg = crate::text::redact::redact(&format!(
        "ooda {} iteration {}: {}\n\n{reason}\n",
        brief.name,
        cur.iteration,
        plan.hypothesis.lines().next().unwrap_or("")
    ));
    let base = oid(&cur.base_commit)?;
    // The commit is built from the tree recorded after EXECUTE (what was
    // measured), never from the worktree as it is now.
    let commit = match &cur.tree {
        Some(t) => ws.commit_tree(base, oid(t)?, &msg)?,
        None => ws.prepare_commit(base, &msg)?.0,
    };
    Ok(commit.to_string())
}

/// Moves the branch and the base worktree to a prepared commit.
pub(crate) fn advance(ws: &Workspace, commit: &str) -> Result<()> {
    ws.advance(oid(commit)?)
}

/// COMMIT: a keep advances the branch (the new best is returned); anything
/// else resets the candidate to the base.
/// COMMIT's output: the new best commit, for a keep.
pub(crate) struct Committed(Option<String>);

impl Committed {
    /// The branch has moved: the state's best follows it.
    pub(super) fn apply(self, state: &mut State) {
        if let Some(best) = self.0 {
            state.best_commit = best;
            failpoint::after(failpoint::Point::BranchAdvanced);
        }
    }
}

pub(crate) fn run(ws: &Workspace, cur: &InFlight) -> Result<Committed> {
    let keep = cur.eval.as_ref().map(|e| e.verdict) == Some(Verdict::Keep);
    match (&cur.commit, keep) {
        (Some(c), true) => {
            advance(ws, c)?;
            Ok(Committed(Some(c.clone())))
        }
        _ => {
            ws.sync(oid(&cur.base_commit)?)?;
            Ok(Committed(None))
        }
    }
}
