//! Kill points: where a test makes the process SIGKILL itself, to prove
//! that every write the machine makes can be interrupted and resumed.
//!
//! `OODA_FAILPOINT=<name>` names one of [`all`]: `before-checkpoint:<phase>`
//! (after a phase's effects, before its checkpoint), `after:<phase>` (right
//! after it), and `after:<point>` for the points inside a phase whose order is
//! what makes it crash-safe (the commit is prepared before the agent's
//! LEARN runs; the archive is written before the branch moves; CHECK's
//! decision is saved before it is applied; the archive before the state).
//! The resume tests kill at every name this list returns, so a new point
//! added here is tested without anyone remembering to.

use crate::model::Phase;

/// A point inside a phase whose write is durable before the next starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Iteration 0's file is written; the state does not know yet.
    BaselineArchived,
    /// LEARN: a keep's commit object exists, not yet on any branch.
    CommitPrepared,
    /// LEARN: a discarded candidate's diff is saved under `artifacts/`.
    DiffSaved,
    /// LEARN: the iteration file is written; LEARN's checkpoint is not.
    LearnArchived,
    /// COMMIT: the branch (and base worktree) moved to the kept commit.
    BranchAdvanced,
    /// CHECK: its decision is in the state, none of it applied.
    CheckDecided,
    /// CHECK: the iteration file and summary hold the decision; the state
    /// still has the iteration in flight.
    CheckArchived,
    /// A stop is in the last iteration file and the summary, not the state.
    StopArchived,
}

impl Point {
    pub const ALL: [Point; 8] = [
        Point::BaselineArchived,
        Point::CommitPrepared,
        Point::DiffSaved,
        Point::LearnArchived,
        Point::BranchAdvanced,
        Point::CheckDecided,
        Point::CheckArchived,
        Point::StopArchived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Point::BaselineArchived => "baseline-archived",
            Point::CommitPrepared => "commit-prepared",
            Point::DiffSaved => "diff-saved",
            Point::LearnArchived => "learn-archived",
            Point::BranchAdvanced => "branch-advanced",
            Point::CheckDecided => "check-decided",
            Point::CheckArchived => "check-archived",
            Point::StopArchived => "stop-archived",
        }
    }
}

/// Every failpoint name the machine checks.
pub fn all() -> Vec<String> {
    let mut out = Vec::new();
    // CHECK has no checkpoint of its own: it ends the iteration.
    for p in Phase::ALL.into_iter().filter(|p| *p != Phase::Check) {
        out.push(format!("before-checkpoint:{}", p.as_str()));
        out.push(format!("after:{}", p.as_str()));
    }
    out.extend(Point::ALL.iter().map(|s| format!("after:{}", s.as_str())));
    out
}

/// `name`, or `name#N` for its N-th hit in this process (a phase that
/// runs twice in one iteration: the simplifier's EVALUATE and REVIEW).
fn hit(name: &str) {
    use std::sync::Mutex;
    static HITS: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());
    let Ok(fp) = std::env::var("OODA_FAILPOINT") else {
        return;
    };
    let (want, nth) = match fp.split_once('#') {
        Some((w, n)) => (w.to_string(), n.parse().unwrap_or(1)),
        None => (fp.clone(), 1),
    };
    if want != name {
        return;
    }
    let count = HITS
        .lock()
        .map_or(1, |mut h| match h.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                h.push((name.to_string(), 1));
                1
            }
        });
    if count == nth {
        // SIGKILL, not exit: the test must see exactly what kill -9 leaves.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

pub(crate) fn before_checkpoint(phase: Phase) {
    hit(&format!("before-checkpoint:{}", phase.as_str()));
}

pub(crate) fn after_checkpoint(phase: Phase) {
    hit(&format!("after:{}", phase.as_str()));
}

pub(crate) fn after(point: Point) {
    hit(&format!("after:{}", point.as_str()));
}
