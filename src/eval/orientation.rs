//! ORIENT's output: the statistics the next decision will use.
//!
//! The noise history, θ₁ and α′ are computed once per iteration from the
//! archive and checkpointed with it. EVALUATE decides with them, and the PLAN
//! prompt and `summary.md` state them, so what a reader is told is smaller
//! than θ₁ is exactly what the decision could not see. (They used to be read
//! in three places: the prompt and the summary took iteration 0's A/A
//! calibration while decisions used the pooled history, and after a few
//! noisy iterations the two differed by a factor of two.)

use super::sequential::{self, Rule};
use crate::archive::history::View;
use crate::model::{IterationRecord, NoiseHistory, Orientation};

/// The noise in force, when nothing was measured yet (the builtin search's
/// prior and the divergence light need some number).
const UNMEASURED_NOISE: f64 = 0.02;

impl Orientation {
    /// The statistics of `history` for a Brief with this noise floor, under
    /// an overall one-sided false-keep rate `alpha`.
    /// `max_pairs` is the cap in force (`defaults.pairs`): the looks EVALUATE
    /// will use.
    pub fn of(
        history: &[IterationRecord],
        noise_floor: f64,
        alpha: f64,
        max_pairs: u32,
    ) -> Orientation {
        let shares = history.iter().map(IterationRecord::noise_share);
        Self::from_shares(shares, history.first(), noise_floor, alpha, max_pairs)
    }

    /// [`Orientation::of`] the archive a runner holds: the noise pooled
    /// from the rows' shares, α′ from the baseline.
    pub fn of_view(v: View, noise_floor: f64, alpha: f64, max_pairs: u32) -> Orientation {
        let shares = v.facts().iter().map(|f| (f.noise_ss, f.noise_df));
        Self::from_shares(shares, v.baseline(), noise_floor, alpha, max_pairs)
    }

    fn from_shares(
        shares: impl Iterator<Item = (f64, f64)>,
        first: Option<&IterationRecord>,
        noise_floor: f64,
        alpha: f64,
        max_pairs: u32,
    ) -> Orientation {
        let noise = NoiseHistory::from_shares(shares);
        // α′ was simulated once, at the baseline, for the whole run and the
        // looks then in force. Looks changed since (an archive from before
        // the extension, or `pairs` edited) would spend more α than it was
        // simulated for: then the smaller of it and the current design's.
        let in_force = || sequential::alphas_for(alpha, max_pairs)[0];
        let alpha_look = match first.and_then(|r| r.calibration.as_ref()) {
            Some(c) => match c.alpha_look {
                Some(a)
                    if sequential::looks_for(c.pairs_per_decision)
                        == sequential::looks_for(max_pairs) =>
                {
                    a
                }
                Some(a) => a.min(in_force()),
                None => in_force(),
            },
            None => in_force(),
        };
        Orientation {
            noise,
            theta1: sequential::theta1(noise_floor, noise.map(|h| h.s_h).unwrap_or(0.0)),
            alpha_look,
            delta0: noise_floor.ln_1p(),
            analysis: None,
        }
    }

    /// The decision rule EVALUATE applies.
    pub fn rule(&self) -> Rule {
        Rule {
            alphas: [self.alpha_look; sequential::N_LOOKS],
            delta0: self.delta0,
            theta1_log: self.theta1.ln_1p(),
            noise: self.noise,
        }
    }

    /// The standard deviation of one pair's log ratio.
    pub fn noise_sd(&self) -> f64 {
        self.noise.map(|h| h.s_h).unwrap_or(UNMEASURED_NOISE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Calibration, Comparison, Pair, Verdict};

    fn pairs(ds: &[f64]) -> Vec<Pair> {
        ds.iter()
            .map(|&d| Pair {
                base: 100.0,
                cand: 100.0 * (-d).exp(),
                cand_first: false,
                d,
            })
            .collect()
    }

    /// A quiet baseline calibrated for 12 pairs with α′ 0.0169.
    fn baseline(ds: &[f64]) -> IterationRecord {
        let mut base = IterationRecord::new(0, Verdict::Baseline);
        base.calibration = Some(Calibration {
            pairs: pairs(ds),
            median: 100.0,
            run_sd: 0.001,
            noise_sd: 0.0015,
            mean_d: 0.0,
            pairs_per_decision: 12,
            theta1: 0.0011,
            alpha_look: Some(0.0169),
            advice: None,
        });
        base
    }

    #[test]
    fn an_alpha_simulated_for_fewer_looks_is_not_spent_on_more() {
        let base = baseline(&[0.001, -0.001, 0.002]);
        let h = std::slice::from_ref(&base);
        // The run's own design: its α′.
        assert_eq!(Orientation::of(h, 0.0, 0.05, 12).alpha_look, 0.0169);
        // An archive from before the extension, run with 24 pairs: the
        // extended design's smaller α′.
        let extended = sequential::alphas_for(0.05, 24)[0];
        assert!(extended < 0.0169);
        assert_eq!(Orientation::of(h, 0.0, 0.05, 24).alpha_look, extended);
        // Fewer looks than simulated for: the stored value is conservative.
        assert_eq!(Orientation::of(h, 0.0, 0.05, 5).alpha_look, 0.0169);
    }

    #[test]
    fn the_pooled_noise_is_what_is_in_force_not_iteration_zeros() {
        let base = baseline(&[
            0.001, -0.001, 0.002, -0.002, 0.0, 0.001, -0.001, 0.0, 0.002, -0.002,
        ]);
        let at_start = Orientation::of(std::slice::from_ref(&base), 0.0, 0.05, 12);
        let mut noisy = IterationRecord::new(1, Verdict::Discard);
        let loud = [
            0.1, -0.1, 0.08, -0.12, 0.05, -0.03, 0.09, -0.11, 0.1, -0.06, 0.02, -0.04,
        ];
        noisy.measured = Some(Comparison {
            pairs: pairs(&loud),
            base_median: 100.0,
            cand_median: 100.0,
            effect: 0.0,
            ci: (-0.05, 0.05),
            p: 0.5,
            looks: 4,
            theta1: at_start.theta1,
            alpha: 0.05,
            delta0: 0.0,
            rule: String::new(),
            alpha_look: 0.0169,
            s_h: 0.0015,
            noise_changed: true,
            d_mean: 0.0,
            d_ci: (-0.05, 0.05),
            direction: None,
            seconds: None,
        });
        let later = Orientation::of(&[base, noisy], 0.0, 0.05, 12);
        assert!(
            later.theta1 > 5.0 * at_start.theta1,
            "{later:?} vs {at_start:?}"
        );
        assert_eq!(later.rule().theta1_log, later.theta1.ln_1p());
        assert_eq!(later.alpha_look, 0.0169);
        assert!(Orientation::of(&[], 0.01, 0.05, 24).theta1 >= 0.01);
        assert_eq!(
            Orientation::of(&[], 0.0, 0.05, 24).noise_sd(),
            UNMEASURED_NOISE
        );
    }
}
