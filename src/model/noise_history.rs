use serde::{Deserialize, Serialize};

/// The pooled, winsorized noise of log ratios over the archive.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct NoiseHistory {
    /// Standard deviation of one pair's log ratio.
    pub s_h: f64,
    /// Degrees of freedom behind `s_h`.
    pub nu_h: f64,
}
