use serde::{Deserialize, Serialize};

/// Where a task (an iteration, or a delegation to a subagent) stands.
///
/// A log says what happened; a state says what is happening, so a user
/// looking at a night that seems stuck sees which step holds it and since
/// when. An iteration goes pending → planning → running, and to
/// waiting_child while a subagent works for it; a delegation goes pending →
/// running. Both end succeeded, failed or cancelled. An iteration stopped by
/// an interrupt goes back to pending: the next tick resumes it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Pending,
    Planning,
    Running,
    WaitingChild,
    Succeeded,
    Failed,
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Planning => "planning",
            TaskState::Running => "running",
            TaskState::WaitingChild => "waiting_child",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Succeeded, failed or cancelled: nothing more happens to the task.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Succeeded | TaskState::Failed | TaskState::Cancelled
        )
    }
}
