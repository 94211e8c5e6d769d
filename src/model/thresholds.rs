/// How many of the newest iterations the runner holds in full
/// (`archive/history/view.rs`): the PLAN prompt's recent iterations and the
/// red lights that look at the last few changes read them, so no such
/// window may be longer.
pub(crate) const WINDOW: usize = 128;

/// Thresholds of the red-light detectors (`eval/redlight.rs`, configurable under
/// `defaults.red_lights` in `ooda.yaml`). The defaults keep a 100-iteration night
/// of legitimate work under ~5% false alarms (see `benches/redlight_sim.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Direction flips: window of changes on one axis, and flips that alarm.
    pub flip_window: usize,
    pub flip_min: usize,
    /// Mann-Kendall over the re-measured base: window and the Z above which
    /// it alarms. One-sided: only a base getting worse is divergence.
    pub trend_window: usize,
    pub trend_z: f64,
    /// The trend must also amount to this much over the window (log units).
    pub trend_min: f64,
    /// Model mismatch: window, Σz² bound (χ²₁₀ at 0.0005) and bias |Σz/√n|.
    pub mismatch_window: usize,
    pub mismatch_chi2: f64,
    pub mismatch_bias: f64,
    pub failure_streak: usize,
    /// Iterations in a row whose agent never produced a change to measure
    /// (no tool calls, edits that did not apply, every plan rejected): the
    /// model is too weak for the task, whatever the threshold of failures.
    pub agent_ineffective: usize,
    pub scope_violations: usize,
    /// Non-keeps in a row that count as a plateau (the analyzer is called).
    pub plateau: usize,
    /// Consecutive regressions that, with a downward effect trend, are RED.
    pub regressions: usize,
    /// How significant that downward trend must be (one-sided 5%).
    pub regression_trend_z: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            flip_window: 16,
            flip_min: 14,
            trend_window: 12,
            trend_z: 3.09,
            trend_min: 0.02f64.ln_1p(),
            mismatch_window: 10,
            mismatch_chi2: 31.4,
            mismatch_bias: 3.48,
            failure_streak: 5,
            agent_ineffective: 5,
            scope_violations: 3,
            plateau: 4,
            regressions: 5,
            regression_trend_z: 1.645,
        }
    }
}
