use std::fmt;

/// Which way the metric should move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Minimize,
    Maximize,
}

impl Direction {
    /// How reports say it: "lower is better".
    pub fn better_word(self) -> &'static str {
        match self {
            Direction::Minimize => "lower is better",
            Direction::Maximize => "higher is better",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Minimize => "minimize",
            Direction::Maximize => "maximize",
        })
    }
}

impl Direction {
    /// The direction as the number formatter takes it (text/number.rs).
    pub(crate) fn sense(self) -> crate::text::number::Sense {
        match self {
            Direction::Minimize => crate::text::number::Sense::Minimize,
            Direction::Maximize => crate::text::number::Sense::Maximize,
        }
    }
}
