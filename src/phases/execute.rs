//! EXECUTE: the change is applied in the candidate worktree, then the runner
//! checks what changed.
//!
//! The driver makes the change; the runner then undoes any commits it made
//! (their edits kept, so the scope check sees them), writes the knob values,
//! and checks every changed path against the Brief's scope. What breaks a
//! rule becomes a [`Cut`]: `blocked` for scope (it counts toward the scope
//! red light), `invalid` for an agent that failed or changed nothing.

use super::oid;
use crate::driver::{Driver, Turn};
use crate::error::Result;
use crate::events::Event;
use crate::model::{AgentCall, Cut, Plan};
use crate::state::InFlight;
use crate::workspace::Workspace;

/// EXECUTE's output.
pub(crate) struct Executed {
    plan: Plan,
    cut: Option<Cut>,
    changed_paths: Vec<String>,
    tree: String,
    calls: Vec<AgentCall>,
}

impl Executed {
    pub fn apply(self, c: &mut InFlight) {
        c.plan = Some(self.plan);
        c.cut = self.cut;
        c.changed_paths = self.changed_paths;
        c.tree = Some(self.tree);
        c.agent_calls.extend(self.calls);
    }
}

/// `None` when the iteration was already cut short: nothing is changed.
pub(crate) fn run(
    t: &Turn,
    driver: &dyn Driver,
    ws: &Workspace,
    cur: &InFlight,
) -> Result<Option<Executed>> {
    if cur.cut.is_some() {
        return Ok(None);
    }
    let base = oid(&cur.base_commit)?;
    ws.sync(base)?;
    let mut plan = cur.plan.clone().unwrap_or_default();
    let out = driver.execute(t, &plan)?;
    if let Some(b) = &out.breach {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::ScopeViolation,
            message: b.clone(),
        })?;
    }
    if let Some(change) = out.change {
        plan.change = change;
    }
    if let Some(note) = ws.undo_foreign_commits(base)? {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::AgentCommit,
            message: note,
        })?;
    }
    if !plan.knobs.is_empty() {
        let path = ws.cand_dir.join(&t.brief.knobs_file);
        crate::atomic::write_atomic(&path, crate::knobs::render_env(&plan.knobs).as_bytes())?;
    }
    let changed = ws.changed_paths()?;
    let violation = t
        .brief
        .scope_violation(changed.iter().map(|c| c.path.as_str()));
    let mut failure = out.failure;
    if changed.is_empty() && failure.is_none() && out.unavailable.is_none() && driver.edits_files()
    {
        failure = Some("the agent changed nothing, so there is nothing to measure".into());
    }
    // A scope violation outweighs an agent failure: it counts toward the red light.
    let cut = out
        .breach
        .or(violation)
        .map(|message| Cut::Scope { message })
        .or(out.unavailable)
        .or(failure.map(|message| Cut::ExecuteFailed { message }));
    Ok(Some(Executed {
        plan,
        cut,
        changed_paths: changed.into_iter().map(|c| c.path).collect(),
        tree: ws.candidate_tree()?.to_string(),
        calls: out.calls,
    }))
}
