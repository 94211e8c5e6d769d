use serde::{Deserialize, Serialize};

/// One guard command's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuardResult {
    pub command: String,
    pub ok: bool,
    #[serde(default)]
    pub exit_code: Option<i32>,
    pub seconds: f64,
}
