//! EXECUTE: the change is applied in the candidate worktree, then the runner
//! checks what changed.
//!
//! The driver makes the change; the runner then undoes any commits it made
//! (their edits kept, so the scope check sees them), writes the knob values,
//! and checks every changed path, read from the files themselves (see
//! `workspace/contents.rs`), against the Brief's scope, its size limit and
//! where symlinks lead. What breaks a
//! rule becomes a [`Cut`]: `blocked` for scope (it counts toward the scope
//! red light), `invalid` for an agent that failed or changed nothing.

use super::oid;
use crate::archive::state::InFlight;
use crate::driver::{Driver, Step};
use crate::error::Result;
use crate::events::Event;
use crate::model::{AgentCall, Cut, Plan};
use crate::workspace::Workspace;

/// EXECUTE's output.
pub(crate) struct Executed {
    plan: Plan,
    cut: Option<Cut>,
    changed_paths: Vec<String>,
    /// `None` when the change was blocked before its tree was written.
    tree: Option<String>,
    tamper: Option<crate::model::Tamper>,
    calls: Vec<AgentCall>,
}

impl Executed {
    pub(super) fn apply(self, c: &mut InFlight) {
        c.plan = Some(self.plan);
        c.cut = self.cut;
        c.changed_paths = self.changed_paths;
        c.tree = self.tree;
        // A new change: nothing decided about an earlier one (an EXECUTE run
        // again after its worktree was lost) may stand for it.
        c.eval = None;
        c.review = None;
        c.subagents = Vec::new();
        c.analysis = None;
        c.commit = None;
        // A tamper found in PLAN stands.
        if c.tamper.is_none() {
            c.tamper = self.tamper;
        }
        c.agent_calls.extend(self.calls);
    }
}

/// `None` when the iteration was already cut short: nothing is changed.
pub(crate) fn run(
    t: &Step,
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
    let (out, _) = dropping_ignored(t, ws, driver, || driver.execute(t, &plan))?;
    if let Some(b) = &out.breach {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::ScopeViolation,
            message: b.message.clone(),
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
    // The knobs file is ooda's: the benchmark sources it, so an agent's
    // edit to it is shell in the measurement. It is checked before ooda
    // writes it (from the plan's knobs, else it stays the base's).
    let knobs_edit = ws.owned_edit(&ws.cand_dir, &t.brief.knobs_file)?.map(|what| {
        format!(
            "the agent changed the knobs file ({what}); ooda writes {} itself from the plan's knobs, and the benchmark reads it, so an edit to it is never measured or kept: propose knob values in the plan instead",
            t.brief.knobs_file
        )
    });
    if knobs_edit.is_none() && !plan.knobs.is_empty() {
        Workspace::write_owned(
            &ws.cand_dir,
            &t.brief.knobs_file,
            crate::brief::points::render_env(&plan.knobs).as_bytes(),
        )?;
    }
    let candidate = ws.candidate(t.brief.scope.max_file_size)?;
    let changed = candidate.changed;
    let odd = &candidate.contents.odd_changed;
    let long = &candidate.contents.too_long;
    let mut violation = if knobs_edit.is_some() {
        knobs_edit
    } else if !long.is_empty() {
        Some(format!(
            "path(s) longer than the system's limit of {} bytes, which ooda can neither read nor store: {} (clipped); keep paths short",
            libc::PATH_MAX,
            crate::text::clip::clip(&long.join(", "), 300)
        ))
    } else if odd.is_empty() {
        crate::workspace::content_violation(t.brief, &changed)
    } else {
        Some(format!(
            "path(s) whose name is not UTF-8 changed, which ooda cannot check against the scope: {} (shown lossily); rename them to UTF-8 names",
            crate::text::clip::clip(&odd.join(", "), 600)
        ))
    };
    if violation.is_none() {
        let secrets = ws.secrets_added(&changed)?;
        if !secrets.is_empty() {
            violation = Some(format!(
                "the change adds what looks like a secret (masked here): {}; secrets must not be committed: read them from the environment instead",
                crate::text::clip::clip(&secrets.join("; "), 600)
            ));
        }
    }
    let mut failure = out.failure;
    if changed.is_empty() && failure.is_none() && out.unavailable.is_none() && driver.edits_files()
    {
        failure = Some("the agent changed nothing, so there is nothing to measure".into());
    }
    let tamper = out
        .breach
        .as_ref()
        .and_then(|b| b.tamper(crate::model::Phase::Execute));
    // A scope violation outweighs an agent failure: it counts toward the red light.
    let cut = out
        .breach
        .map(|b| b.message)
        .or(violation)
        .map(|message| Cut::Scope { message })
        .or(out.unavailable)
        .or(failure.map(|message| Cut::ExecuteFailed { message }));
    // The tree (and the blobs in it) is written only for a change that
    // passed its checks: a blocked one never reaches the object store.
    let tree = match &cut {
        Some(Cut::Scope { .. }) => None,
        _ => Some(ws.write_tree(&candidate.contents)?.to_string()),
    };
    Ok(Some(Executed {
        plan,
        cut,
        changed_paths: changed.into_iter().map(|c| c.path).collect(),
        tree,
        tamper,
        calls: out.calls,
    }))
}

/// Runs an agent step, then removes the git-ignored files it wrote (see
/// `Workspace::remove_new_ignored`): they would be measured but never
/// committed (a prebuilt library the benchmark loads). Every step of a
/// driver that edits files goes through here, PLAN and LEARN too (a file
/// planted then would be measured by the next EVALUATE); one that does not
/// costs no walk of the worktree. Also says whether the step wrote any
/// other file (for LEARN, which must not).
pub(crate) fn dropping_ignored<T>(
    t: &Step,
    ws: &Workspace,
    driver: &dyn Driver,
    step: impl FnOnce() -> Result<T>,
) -> Result<(T, bool)> {
    if !driver.edits_files() {
        return Ok((step()?, false));
    }
    let before = ws.file_stats()?;
    let out = step()?;
    let (removed, edited) = ws.remove_new_ignored(&before)?;
    if !removed.is_empty() {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::AgentIgnoredFiles,
            message: format!(
                "removed before measuring, because git ignores them or they are a tool's cache (__pycache__, .pytest_cache, …), and they would never be committed: {}",
                crate::text::clip::clip(&removed.join(", "), 600)
            ),
        })?;
    }
    Ok((out, edited))
}
