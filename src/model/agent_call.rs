use serde::{Deserialize, Serialize};

use super::{Phase, Usage};

/// How one agent call ended, as recorded in the iteration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    Ok,
    /// A non-zero exit or a signal.
    Failed,
    TimedOut,
    /// It finished but gave no readable result, or the tool reported an error.
    NoResult,
    /// Its plan broke a rule of the validator.
    Rejected,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Failed => "failed",
            CallOutcome::TimedOut => "timed_out",
            CallOutcome::NoResult => "no_result",
            CallOutcome::Rejected => "rejected",
        }
    }
}

/// One agent call: the data an iteration file keeps about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCall {
    pub phase: Phase,
    pub attempt: u32,
    pub outcome: CallOutcome,
    #[serde(default)]
    pub exit_code: Option<i32>,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Usage::is_empty")]
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The compressed output, relative to the iterations folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}
