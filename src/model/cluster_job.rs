//! A cluster job a phase's measurements ran in (`executor: slurm`).

use serde::{Deserialize, Serialize};

/// One allocation: what `squeue` called it and where it ran, so an
/// iteration file says which node measured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterJob {
    pub id: String,
    pub name: String,
    pub node: String,
    /// Found in the queue under its name (left by an earlier tick) rather
    /// than submitted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    /// The state it ended in under a measurement (PREEMPTED, CANCELLED,
    /// …): nothing of it was decided, and the phase was measured again in
    /// the next job listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// Whose the loss was: `cluster` (a failed node, a preemption, a time
    /// limit, a cancel by someone else), `unknown` (the controller did not
    /// answer), or `command` (a cancel or a memory end while the
    /// candidate's command ran, which it may have caused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// What ooda said about it, for the morning report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
