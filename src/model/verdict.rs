use serde::{Deserialize, Serialize};

/// How an iteration ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Baseline,
    Keep,
    Discard,
    Crash,
    Invalid,
    Blocked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Keep => "keep",
            Verdict::Discard => "discard",
            Verdict::Crash => "crash",
            Verdict::Invalid => "invalid",
            Verdict::Blocked => "blocked",
        }
    }

    /// The point was tried (measured or failed trying); re-proposing it wastes a night.
    pub fn was_measured(self) -> bool {
        !matches!(self, Verdict::Blocked)
    }

    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Crash | Verdict::Invalid | Verdict::Blocked)
    }
}
