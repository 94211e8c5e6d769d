use serde::Serialize;

/// One anomaly as the log recorded it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoggedAnomaly {
    pub iteration: Option<u32>,
    pub rule: String,
    pub severity: String,
    pub evidence: String,
    /// The trace node it points to (an event id), when it has one.
    pub node: Option<String>,
}
