use serde::{Deserialize, Serialize};

/// One base run and one candidate run, back to back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pair {
    pub base: f64,
    pub cand: f64,
    pub cand_first: bool,
    /// Log ratio oriented so that positive means the candidate is better.
    pub d: f64,
}

/// The eval-runner's report on one candidate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub pairs: Vec<Pair>,
    pub base_median: f64,
    pub cand_median: f64,
    /// Relative gain of the candidate in the Brief's direction (0.05 = 5% better).
    pub effect: f64,
    pub ci: (f64, f64),
    pub p: f64,
    pub looks: u32,
    pub theta1: f64,
    pub alpha: f64,
    pub delta0: f64,
    pub rule: String,
    /// The per-look level α′ the keep test used.
    #[serde(default)]
    pub alpha_look: f64,
    /// The pooled noise history (sd of one pair's log ratio) at decision time.
    #[serde(default)]
    pub s_h: f64,
    /// This iteration's spread was far above the history (F test at 99%).
    #[serde(default)]
    pub noise_changed: bool,
    /// The mean log ratio the test used (winsorized; positive = better) and
    /// its 95% CI: the symmetric scale that model checks compare on.
    #[serde(default)]
    pub d_mean: f64,
    #[serde(default)]
    pub d_ci: (f64, f64),
    /// The Brief's direction when it was measured, so that every text of
    /// the effect is written the one way (text/number.rs: past ten times
    /// better, a minimized metric's gain is a factor, a maximized one's
    /// +95% is not); none in records written before it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<super::Direction>,
    /// What a run took on each side (none in records written before it was
    /// kept, nor where nothing was timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<super::RunSeconds>,
}

impl Comparison {
    /// `p = 0.041 > α′ = 0.014`: the keep test's p with the per-look level
    /// it was compared with (older records without it: the p alone).
    pub fn p_text(&self) -> String {
        crate::text::number::p_value(self.p, self.alpha_look)
    }
}
