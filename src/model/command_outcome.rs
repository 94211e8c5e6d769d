/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOutcome {
    /// Exit code 0.
    Success,
    /// A non-zero exit code.
    Failed,
    /// Killed by us after `timeout`.
    #[serde(alias = "timedout")]
    TimedOut,
    /// Died from a signal we did not send (OOM killer, `kill -INT`, a crash).
    Killed,
    /// Stopped by us because `cancel` was set.
    Interrupted,
}
