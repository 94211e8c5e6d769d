//! `state.json`: the checkpoint of the phase machine.
//!
//! The state holds only what is needed to resume: where the run started,
//! the current best, which phase of which iteration last completed and that
//! phase's output. Everything else is derived from the archive
//! (`iter-*.md`) and git, which is why a deleted or corrupt state is rebuilt
//! rather than fatal. Writes are atomic (see `atomic.rs`).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::error::{Error, Result};
use crate::model::{
    AgentCall, Alarm, Confirmation, EvalOutcome, IterationRecord, Phase, Plan, Verdict,
};

pub use crate::model::{Status, Stop, StopReason};

pub const STATE_VERSION: u32 = 1;

/// The iteration in progress and the outputs of its completed phases.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InFlight {
    pub iteration: u32,
    pub started_at: DateTime<Utc>,
    pub event_id: String,
    pub brief_hash: String,
    /// The last phase whose checkpoint was written.
    pub done: Phase,
    #[serde(default)]
    pub base_commit: String,
    #[serde(default)]
    pub plan: Option<Plan>,
    #[serde(default)]
    pub blocked: Option<String>,
    #[serde(default)]
    pub changed_paths: Vec<String>,
    #[serde(default)]
    pub tree: Option<String>,
    #[serde(default)]
    pub eval: Option<EvalOutcome>,
    #[serde(default)]
    pub commit: Option<String>,
    /// CHECK's decision, saved before it is applied (see `phases::do_check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckOutcome>,
    /// Command-agent calls so far (PLAN, EXECUTE), kept across checkpoints so
    /// the iteration file records every call and its cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_calls: Vec<AgentCall>,
}

/// What CHECK decided for an iteration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CheckOutcome {
    #[serde(default)]
    pub alarms: Vec<Alarm>,
    #[serde(default)]
    pub stop: Option<Stop>,
    /// A divergence rollback: (old tip, the commit the base goes back to).
    #[serde(default)]
    pub rollback: Option<(String, String)>,
    #[serde(default)]
    pub confirmation: Option<Confirmation>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct State {
    pub version: u32,
    pub brief: String,
    pub run_id: String,
    pub seed: u64,
    pub created_at: DateTime<Utc>,
    pub start_commit: String,
    pub best_commit: String,
    pub brief_hash: String,
    /// The number the next iteration will get (0 until the baseline is archived).
    pub next_iteration: u32,
    #[serde(default)]
    pub stop: Option<Stop>,
    /// The latest YELLOW warning, shown as the status until an iteration passes without one.
    #[serde(default)]
    pub yellow: Option<String>,
    /// A human's acknowledgement, to be written into the next iteration file.
    #[serde(default)]
    pub pending_ack: Option<String>,
    #[serde(default)]
    pub current: Option<InFlight>,
}

impl State {
    pub fn status(&self) -> Status {
        match &self.stop {
            None if self.yellow.is_some() => Status::Yellow,
            None => Status::Green,
            Some(s) if s.reason.is_red() => Status::Red,
            Some(s) if s.reason.is_budget() => Status::Stopped,
            Some(_) => Status::Done,
        }
    }

    pub fn path(dir: &Path) -> PathBuf {
        dir.join("state.json")
    }

    pub fn save(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Internal(format!("serializing state: {e}")))?;
        write_atomic(&State::path(dir), text.as_bytes())
    }

    /// Rebuilds the state from the archive alone (after `state.json` was
    /// deleted or found corrupt). An iteration that was in flight and not yet
    /// archived is lost, and its number is reused: numbers never skip.
    pub fn rebuild(
        brief: &str,
        brief_hash: &str,
        history: &[IterationRecord],
        commit_exists: impl Fn(&str) -> bool,
    ) -> Option<State> {
        let first = history.first()?;
        // Replay the archive: keeps advance the best, a divergence rollback
        // moves it back.
        let mut best = first.base.clone();
        for r in history {
            if r.verdict == Verdict::Keep
                && let Some(c) = r.commit.as_ref().filter(|c| commit_exists(c))
            {
                best = c.clone();
            }
            if let Some(t) = r.rollback_to.as_ref().filter(|t| commit_exists(t)) {
                best = t.clone();
            }
        }
        let stop = history.last().and_then(|r| r.stop.clone());
        Some(State {
            version: STATE_VERSION,
            brief: brief.to_string(),
            run_id: first.run_id.clone(),
            seed: first.seed.unwrap_or(0),
            created_at: first.started,
            start_commit: first.base.clone(),
            best_commit: best,
            brief_hash: brief_hash.to_string(),
            next_iteration: history.len() as u32,
            stop,
            yellow: None,
            pending_ack: None,
            current: None,
        })
    }
}

/// What loading found on disk.
pub enum Loaded {
    Ok(Box<State>),
    Missing,
    /// Unreadable; the damaged file was moved aside to this path.
    Corrupt {
        moved_to: PathBuf,
        message: String,
    },
}

/// Reads the state without repairing anything (for `status`).
pub fn peek(dir: &Path) -> Result<Loaded> {
    let path = State::path(dir);
    match std::fs::read(&path) {
        Ok(t) => Ok(match serde_json::from_slice::<State>(&t) {
            Ok(s) => Loaded::Ok(Box::new(s)),
            Err(e) => Loaded::Corrupt {
                moved_to: path,
                message: e.to_string(),
            },
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::Missing),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

pub fn load(dir: &Path) -> Result<Loaded> {
    let path = State::path(dir);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    match serde_json::from_slice::<State>(&text) {
        Ok(s) if s.version == STATE_VERSION => Ok(Loaded::Ok(Box::new(s))),
        Ok(s) => Err(Error::Corrupt {
            path,
            message: format!(
                "state version {} is not {STATE_VERSION}: this ooda is older or newer than the one that wrote it; delete the file to rebuild it from iterations/",
                s.version
            ),
        }),
        Err(e) => {
            let moved_to = dir.join(format!(
                "state.json.corrupt-{}",
                Utc::now().format("%Y%m%dT%H%M%S")
            ));
            std::fs::rename(&path, &moved_to).map_err(|err| {
                Error::io(format!("moving the corrupt {} aside", path.display()), err)
            })?;
            Ok(Loaded::Corrupt {
                moved_to,
                message: e.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            version: STATE_VERSION,
            brief: "b".into(),
            run_id: "r".into(),
            seed: 7,
            created_at: Utc::now(),
            start_commit: "a".repeat(40),
            best_commit: "a".repeat(40),
            brief_hash: "h".into(),
            next_iteration: 3,
            stop: None,
            yellow: None,
            pending_ack: None,
            current: None,
        }
    }

    #[test]
    fn save_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let s = state();
        s.save(dir.path()).unwrap();
        match load(dir.path()).unwrap() {
            Loaded::Ok(back) => assert_eq!(*back, s),
            _ => panic!("expected a state"),
        }
    }

    #[test]
    fn truncated_state_is_moved_aside_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(State::path(dir.path()), "{\"version\": 1, \"bri").unwrap();
        match load(dir.path()).unwrap() {
            Loaded::Corrupt { moved_to, .. } => assert!(moved_to.exists()),
            _ => panic!("expected corrupt"),
        }
        assert!(matches!(load(dir.path()).unwrap(), Loaded::Missing));
    }

    #[test]
    fn rebuild_takes_last_existing_keep() {
        let mut h = vec![IterationRecord::new_for_test(0, Verdict::Baseline)];
        h[0].base = "s".repeat(40);
        h[0].seed = Some(9);
        let mut k = IterationRecord::new_for_test(1, Verdict::Keep);
        k.commit = Some("c".repeat(40));
        h.push(k);
        let mut gone = IterationRecord::new_for_test(2, Verdict::Keep);
        gone.commit = Some("d".repeat(40));
        h.push(gone);
        h.push(IterationRecord::new_for_test(3, Verdict::Discard));
        let s = State::rebuild("b", "h", &h, |c| c.starts_with('c')).unwrap();
        assert_eq!(s.best_commit, "c".repeat(40));
        assert_eq!(s.next_iteration, 4);
        assert_eq!(s.seed, 9);
        assert_eq!(s.start_commit, "s".repeat(40));
    }
}
