use std::fmt;

use serde::{Deserialize, Serialize};

/// What the pipeline-analyzers found for the next PLAN: each analyzer's
/// report beside EVALUATE, or the builtin one's when CHECK saw a plateau.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Analysis {
    pub reports: Vec<AnalyzerReport>,
}

/// One analyzer's report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct AnalyzerReport {
    pub name: String,
    /// `builtin`, `command:<profile>`, `llm:<model>`.
    pub driver: String,
    pub text: String,
}

impl Analysis {
    /// The builtin analyzer's report alone (CHECK's plateau report).
    pub(crate) fn builtin(text: String) -> Analysis {
        Analysis {
            reports: vec![AnalyzerReport {
                name: "pipeline-analyzer".into(),
                driver: "builtin".into(),
                text,
            }],
        }
    }
}

/// As the archive and the PLAN prompt read it: one line per report, an
/// agent analyzer's named (the builtin one states ooda's own numbers).
impl fmt::Display for Analysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.reports.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            match r.driver.as_str() {
                "builtin" => f.write_str(&r.text)?,
                _ => write!(f, "{} ({}): {}", r.name, r.driver, r.text)?,
            }
        }
        Ok(())
    }
}
