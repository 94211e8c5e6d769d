//! What `ooda.yaml` says about anomalies and alerts (`anomalies:`, `notify:`).

/// `anomalies:` in `ooda.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// The same normalized failure this many times.
    pub repeated_failure: usize,
    /// A budget used to this share.
    pub budget_used: f64,
    /// This many empty agent answers in a row.
    pub empty_responses: usize,
    /// This many compactions in one agent step.
    pub compactions: usize,
    /// A tool failing more often than this (with at least 5 calls).
    pub tool_error_rate: f64,
    /// An iteration's tokens above this multiple of the run's median.
    pub token_spike: f64,
    /// Rules that stop the run RED (`red_anomaly`): only `budget_near` and
    /// `token_spike`, the ones about spending.
    pub stop_on: Vec<String>,
    /// A command run on every stop and every RED (`notify:`).
    pub notify: Option<String>,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            repeated_failure: 3,
            budget_used: 0.8,
            empty_responses: 2,
            compactions: 3,
            tool_error_rate: 0.3,
            token_spike: 3.0,
            stop_on: Vec::new(),
            notify: None,
        }
    }
}

/// The rules `stop_on` may name.
pub(crate) const STOPPING_RULES: &[&str] = &["budget_near", "token_spike"];
