use serde::{Deserialize, Serialize};

use super::Grade;

/// A judge subagent's verdict on the run, as it logged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The judge's name (its definition file's).
    pub judge: String,
    pub grade: Grade,
    pub why: String,
    #[serde(default)]
    pub iterations: Vec<JudgedIteration>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedIteration {
    pub iteration: u32,
    pub grade: Grade,
    pub why: String,
}
