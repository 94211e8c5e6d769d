//! LEARN: what the iteration teaches, archived before it may end.
//!
//! The runner goes first: a keep's commit object is prepared from the tree
//! that was measured, a discard's diff is saved (redacted) under
//! `artifacts/`. Only then does the driver say what it learned, so nothing
//! an agent edits now can reach the commit or the diff (COMMIT resets the
//! worktree). The machine then writes the iteration file: the LEARN gate.

use chrono::Utc;

use super::failpoint;
use super::{commit, oid};
use crate::archive;
use crate::archive::layout::Layout;
use crate::archive::state::{InFlight, Learned, State};
use crate::driver::{Driver, Step};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{AgentCall, Verdict};
use crate::workspace::Workspace;

/// LEARN's output.
pub(crate) struct Learnt {
    pub learned: Learned,
    /// A keep's prepared commit.
    pub commit: Option<String>,
    pub calls: Vec<AgentCall>,
    /// What the agent changed without the sandbox that it must not touch:
    /// the run stops `red_tamper` after this iteration.
    pub tamper: Option<crate::model::Tamper>,
}

impl Learnt {
    pub(super) fn apply(self, c: &mut InFlight) {
        c.learned = Some(self.learned);
        c.commit = self.commit;
        if c.tamper.is_none() {
            c.tamper = self.tamper;
        }
        c.agent_calls.extend(self.calls);
    }
}

pub(crate) fn run(
    t: &Step,
    driver: &dyn Driver,
    ws: &Workspace,
    state: &State,
    cur: &InFlight,
) -> Result<Learnt> {
    let outcome = cur
        .eval
        .as_ref()
        .ok_or_else(|| Error::Internal("LEARN without EVALUATE".into()))?;
    let mut commit = None;
    let mut artifact = None;
    if outcome.verdict == Verdict::Keep {
        commit = Some(commit::prepare(ws, t.brief, cur)?);
        failpoint::after(failpoint::Point::CommitPrepared);
    } else if !cur.changed_paths.is_empty() {
        let base = oid(&cur.base_commit)?;
        let diff = match &cur.tree {
            Some(tree) => ws.diff_to_tree(base, oid(tree)?)?,
            None => ws.diff()?,
        };
        let diff = crate::text::redact::redact(&diff);
        let rel = Layout::diff(cur.iteration);
        let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
        crate::atomic::create_dir_all(&Layout::of(t.dir).artifacts())?;
        crate::atomic::write_atomic(&t.dir.join(&rel), diff.as_bytes())?;
        t.span.emit(Event::ArtifactStored {
            reference: name,
            path: rel.clone(),
            bytes: diff.len() as u64,
        })?;
        artifact = Some(rel);
        failpoint::after(failpoint::Point::DiffSaved);
    }
    let mut learned = Learned {
        lessons: Default::default(),
        finished: Utc::now(),
        driver: driver.name(),
        artifact,
        acknowledged: state.pending_ack.clone(),
    };
    // What the driver learns from is the record as it will be archived.
    let mut view = cur.clone();
    view.learned = Some(learned.clone());
    view.commit = commit.clone();
    let rec = archive::record_of(&view, state)
        .ok_or_else(|| Error::Internal("LEARN could not project its record".into()))?;
    let plan = cur.plan.clone().unwrap_or_default();
    // Only what changed during the agent's step is blamed on it (a
    // reviewer's edit, named in REVIEW, is still on disk, since the commit
    // is built from the measured tree).
    let (lesson, edited) = super::execute::dropping_ignored(t, ws, driver, || {
        driver.learn(t, &plan, &rec, cur.cut.is_none())
    })?;
    if !lesson.calls.is_empty() && edited {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::AgentEditInLearn,
            message: "the agent edited files during LEARN; the edits are not part of this iteration and are discarded".into(),
        })?;
    }
    // The verdict was measured before LEARN and stands; what the agent
    // touched is named, and without the sandbox it stops the night.
    let breach = lesson.breach.map(|b| b.during(crate::model::Phase::Learn));
    if let Some(b) = &breach {
        t.span.emit(Event::Anomaly {
            kind: crate::model::AnomalyKind::ScopeViolation,
            message: b.message.clone(),
        })?;
    }
    learned.lessons = lesson.learned;
    Ok(Learnt {
        learned,
        commit,
        calls: lesson.calls,
        tamper: breach.and_then(|b| b.tamper(crate::model::Phase::Learn)),
    })
}
