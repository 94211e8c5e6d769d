//! What ended a measurement's Slurm job, and whose doing it was.
//!
//! Three kinds of outcome are kept apart for anything measured on Slurm:
//! the command's own result (a value, a failure, a timeout: the phase
//! decides on it), a fault of the cluster (a failed node, a preemption, the
//! job's time limit, a cancel by someone else: retried or parked, never a
//! verdict), and unknown (the controller did not answer within
//! `slurm.controller_wait`: parked, never taken for the job's end). The
//! two last are a [`JobEnded`]; a cancel or a memory end while one of the
//! candidate's commands ran may be the candidate's own doing, and counts
//! towards `state::LOST_JOBS_MAX` (phases/mod.rs decides that, knowing
//! which worktree the step ran in).

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::model::ClusterJob;

/// A fault of the cluster, or no answer from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    Cluster,
    Unknown,
}

impl Fault {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Fault::Cluster => "cluster",
            Fault::Unknown => "unknown",
        }
    }
}

/// A measurement's job ended (or could not be followed) under it: never
/// the command's own result.
#[derive(Debug, Clone)]
pub(crate) struct JobEnded {
    pub message: String,
    /// Whether measuring the phase again at once, in a new allocation, can
    /// go otherwise: after a preemption, a cancel, a lost node or a time
    /// limit (the pairs measured so far are kept, so the next allocation
    /// goes further) yes; a memory limit would be hit again, and a
    /// controller that did not answer or a job pending past
    /// `slurm.pending_limit` is left to the next tick (parked).
    pub retry: bool,
    /// Whether the measured command may have caused it: any end while a
    /// step ran (a command can `scancel` its own job, shorten its time
    /// limit with `scontrol update`, signal the placeholder), but those
    /// only the cluster causes: a preemption, a failed node, no answer.
    pub by_command: bool,
    /// The directory of the step it ended under (`None`: between steps, or
    /// before any).
    pub during: Option<PathBuf>,
    /// Pairs the series completed in this allocation before it ended (set
    /// by the eval-runner as the error passes it): a time limit reached
    /// between steps with none is no progress, and counts as the
    /// candidate's when its series is the one measured.
    pub new_pairs: Option<u32>,
    pub fault: Fault,
    /// The job, with the state it ended in: the iteration file lists it.
    pub job: ClusterJob,
}

impl JobEnded {
    /// Job `job` ended in `state` (`during` a step in that directory, or
    /// before any ran), said as `message`.
    pub(super) fn new(
        job: &ClusterJob,
        state: &str,
        message: String,
        during: Option<&Path>,
    ) -> JobEnded {
        let ran = during.is_some();
        let fault = if state == UNANSWERED {
            Fault::Unknown
        } else {
            Fault::Cluster
        };
        JobEnded {
            retry: match state {
                "PREEMPTED" | "NODE_FAIL" | "BOOT_FAIL" | "TIMEOUT" | "DEADLINE" | GONE => true,
                // A pending job a human cancelled stays cancelled.
                "CANCELLED" => ran,
                _ => false,
            },
            by_command: ran
                && !matches!(
                    state,
                    "PREEMPTED" | "NODE_FAIL" | "BOOT_FAIL" | UNANSWERED | PENDING
                ),
            during: during.map(Path::to_path_buf),
            new_pairs: None,
            fault,
            job: ClusterJob {
                lost: Some(state.to_string()),
                fault: Some(fault.as_str().to_string()),
                message: Some(message.clone()),
                ..job.clone()
            },
            message,
        }
    }
}

impl std::fmt::Display for JobEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobEnded {}

/// The [`JobEnded`] behind `e`, when a lost allocation is what failed.
pub(crate) fn job_ended(e: &Error) -> Option<&JobEnded> {
    match e {
        Error::Io { source, .. } => source.get_ref()?.downcast_ref::<JobEnded>(),
        _ => None,
    }
}

/// Notes on a lost allocation's error how many pairs its series completed
/// in it (nothing for any other error).
pub(crate) fn note_new_pairs(e: &mut Error, pairs: u32) {
    if let Error::Io { source, .. } = e
        && let Some(j) = source
            .get_mut()
            .and_then(|inner| inner.downcast_mut::<JobEnded>())
    {
        j.new_pairs = Some(pairs);
    }
}

impl JobEnded {
    /// Whether the candidate may have caused this end, when `candidate`
    /// names the directories its commands run in: an end (but the
    /// cluster's own) while one of them ran, or a time limit between steps
    /// with no pair completed in the allocation (a candidate too slow for
    /// `slurm.time`, or one that shortened it, would otherwise be measured
    /// again forever).
    pub(crate) fn by_candidate(&self, candidate: &[PathBuf]) -> bool {
        let state = self.job.lost.as_deref().unwrap_or("");
        (self.by_command && self.during.as_ref().is_some_and(|d| candidate.contains(d)))
            || (self.during.is_none()
                && matches!(state, "TIMEOUT" | "DEADLINE")
                && self.new_pairs == Some(0))
    }
}

/// `e` as the error a lease returns.
pub(super) fn into_io(e: JobEnded) -> std::io::Error {
    std::io::Error::other(e)
}

/// What a job no scheduler command knows any more is said to have ended in.
pub(super) const GONE: &str = "gone from the queue";

/// What a job whose controller did not answer is said to be in.
pub(super) const UNANSWERED: &str = "UNKNOWN";

/// What a job waiting past `slurm.pending_limit` is said to be in.
pub(super) const PENDING: &str = "PENDING";

/// What a job's end means for the user, by its state.
pub(super) fn hint(state: &str) -> &'static str {
    match state {
        "PREEMPTED" => {
            "it was preempted: nothing of the phase is decided, and measuring it again can go otherwise"
        }
        "TIMEOUT" | "DEADLINE" => {
            "it reached its time limit: raise `slurm.time` (the pairs measured so far are kept)"
        }
        "OUT_OF_MEMORY" => "it ran out of memory: ask for more with `slurm.args: [\"--mem=…\"]`",
        "NODE_FAIL" | "BOOT_FAIL" => {
            "its node failed: nothing of the phase is decided, and measuring it again can go otherwise"
        }
        "CANCELLED" => "it was cancelled (scancel): nothing of the phase is decided",
        GONE => {
            "the controller no longer knows it: nothing of the phase is decided, and it is measured again"
        }
        _ => "see `scontrol show job` and the job's output file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> ClusterJob {
        ClusterJob {
            id: "7".into(),
            name: "ooda-k-1-evaluate".into(),
            node: "vm".into(),
            adopted: false,
            lost: None,
            fault: None,
            message: None,
        }
    }

    #[test]
    fn only_the_clusters_own_ends_under_a_step_are_never_the_commands() {
        let under = Some(Path::new("/w/cand"));
        let e = |state: &str, during| JobEnded::new(&job(), state, state.into(), during);
        for state in ["CANCELLED", "OUT_OF_MEMORY", "TIMEOUT", "FAILED", GONE] {
            assert!(e(state, under).by_command, "{state}");
        }
        for state in ["PREEMPTED", "NODE_FAIL", "BOOT_FAIL", UNANSWERED, PENDING] {
            assert!(!e(state, under).by_command, "{state}");
        }
        // Under the candidate's step, not under the base's.
        let cand = [PathBuf::from("/w/cand")];
        assert!(e("CANCELLED", under).by_candidate(&cand));
        assert!(!e("CANCELLED", Some(Path::new("/w/base"))).by_candidate(&cand));
        // A time limit between steps: the candidate's only without progress.
        let mut between = e("TIMEOUT", None);
        between.new_pairs = Some(2);
        assert!(!between.by_candidate(&cand));
        between.new_pairs = Some(0);
        assert!(between.by_candidate(&cand));
        // Before any step ran, nothing the command did ended it.
        assert!(!e("CANCELLED", None).by_command);
        assert!(!e("CANCELLED", None).retry);
        // A time limit is measured again: the pairs so far are kept.
        assert!(e("TIMEOUT", under).retry);
        assert!(e("TIMEOUT", under).message.contains("TIMEOUT"));
        // No answer is parked, not retried at once, and not a job's end.
        let unknown = e(UNANSWERED, under);
        assert_eq!(unknown.fault, Fault::Unknown);
        assert!(!unknown.retry);
        assert_eq!(unknown.job.fault.as_deref(), Some("unknown"));
        assert!(!e(PENDING, None).retry);
        assert_eq!(e("PREEMPTED", under).fault, Fault::Cluster);
    }
}
