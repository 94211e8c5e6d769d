use serde::{Deserialize, Serialize};

/// Worst last: the grade of a set of checks is its maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Pass,
    Warn,
    Fail,
}

impl Grade {
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Warn => "warn",
            Grade::Fail => "fail",
        }
    }

    pub fn parse(s: &str) -> Option<Grade> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pass" => Some(Grade::Pass),
            "warn" => Some(Grade::Warn),
            "fail" => Some(Grade::Fail),
            _ => None,
        }
    }
}
