use serde::{Deserialize, Serialize};

/// A phase of one iteration (OBSERVE … CHECK). The order in which phases run
/// is decided by `phases::next`, never by comparing phases: there is no
/// `PartialOrd`, because REVIEW may send a simplified candidate back to
/// EVALUATE and an analyzer may run beside it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Observe,
    Orient,
    Plan,
    Execute,
    Evaluate,
    Review,
    Learn,
    Commit,
    Check,
}

impl Phase {
    pub const ALL: [Phase; 9] = [
        Phase::Observe,
        Phase::Orient,
        Phase::Plan,
        Phase::Execute,
        Phase::Evaluate,
        Phase::Review,
        Phase::Learn,
        Phase::Commit,
        Phase::Check,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Observe => "observe",
            Phase::Orient => "orient",
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Evaluate => "evaluate",
            Phase::Review => "review",
            Phase::Learn => "learn",
            Phase::Commit => "commit",
            Phase::Check => "check",
        }
    }

    /// Whether an iteration whose last checkpoint is this phase has its
    /// `iter-NNN.md` on disk (LEARN wrote it).
    pub fn archived(self) -> bool {
        matches!(self, Phase::Learn | Phase::Commit | Phase::Check)
    }
}
