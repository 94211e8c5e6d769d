use serde::{Deserialize, Serialize};

use super::{Phase, Usage};

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

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
    /// The tool could not reach its model (an outage, a rate limit).
    Unavailable,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Failed => "failed",
            CallOutcome::TimedOut => "timed_out",
            CallOutcome::NoResult => "no_result",
            CallOutcome::Rejected => "rejected",
            CallOutcome::Unavailable => "unavailable",
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
    /// What the tool reported without failing (a denied permission).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Seconds the runner waited after this call before trying again,
    /// because the tool's API was unavailable.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waited: f64,
    /// The compressed output, relative to the iterations folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Every file the call left (prompt, result, output, transcript),
    /// relative to the iterations folder: what `ooda trace` names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl AgentCall {
    /// A call with nothing measured yet: no usage, problem or output.
    pub fn new(phase: Phase, attempt: u32, outcome: CallOutcome) -> AgentCall {
        AgentCall {
            phase,
            attempt,
            outcome,
            exit_code: None,
            seconds: 0.0,
            usage: Usage::default(),
            model: None,
            problem: None,
            warnings: Vec::new(),
            waited: 0.0,
            output: None,
            files: Vec::new(),
        }
    }
}
/// The phrases an agent call's warnings and problems carry that the red
/// light and the morning report count: one spelling, written where the
/// warning is made and matched where it is read (an archived call keeps
/// only its text).
pub(crate) mod sign {
    pub(crate) const NO_TOOL_CALLS: &str = "made no tool calls";
    pub(crate) const CALLS_AS_TEXT: &str = "they were run as calls";
    pub(crate) const CUT_OFF: &str = "cut off at max_output";
    pub(crate) const NOT_VALIDATED: &str = "did not validate";
    pub(crate) const BLOCKS_FAILED: &str = "search/replace blocks did not apply";
    pub(crate) const EXAMPLE_PREDICTION: &str = "is the example in templates/plan.md";
}
