//! The group-sequential keep/discard rule.
//!
//! Pairs are measured one at a time and the evidence is examined at 3, 5, 8
//! and 12 pairs. A clear gain is kept early, a change that cannot plausibly
//! beat the minimum detectable gain θ₁ is discarded early, and only the
//! ambiguous ones pay for all 12 pairs. A candidate still unsettled at 12
//! is *promising* when its estimate is at least half of θ₁ and its own
//! one-sided p is at most 0.10: rather than being discarded, it goes on to
//! 16, 20 and 24 pairs (when `defaults.pairs` allows), as long as it stays
//! promising. At 12 pairs an estimate of θ₁ is already about what the keep
//! test needs, so requiring "at least θ₁" would extend almost nothing (it
//! raised P(keep | θ₁) from 58.8% to 61.0% in `benches/decision_sim.rs`,
//! measured once with that rule in place of this one);
//! half of θ₁ raises it to 74.9% for 3.3 more runs per decision at θ₁.
//! The p condition, on the candidate's own variance, bounds how often a
//! candidate noisier than the calibration extends by noise alone. The keep test's mean and spread are
//! this iteration's pairs alone (no borrowing of strength that could bias a
//! keep); the history's noise only sets how far a wild pair is clamped
//! before it, and stands in for a spread too small to be believed: when
//! the pairs' own variance is below the 1% quantile of what the history
//! predicts for their number (three pairs that happen to agree), the keep
//! test uses the history's spread at the pairs' own df, which can only
//! make a keep harder. The discard bound borrows the pooled noise history, because
//! being wrong there only costs a missed small gain.
//!
//! Because there are several chances to keep, each look tests at a reduced
//! level α′ chosen so that the overall false-keep rate is α. α′ is computed
//! by a seeded simulation of the exact procedure in force (its looks, the
//! extension included) under "no effect" (about 0.017 for α = 0.05), with
//! the union-bound levels as the fallback.
//! Everything here is pure: no I/O, deterministic for a seed.

use serde::{Deserialize, Serialize};

use crate::model::NoiseHistory;
use crate::stats::{self, SplitMix64};

/// Pair counts at which the evidence is examined: the ordinary design up
/// to 12, then the extension for promising candidates.
pub const LOOKS: [usize; N_LOOKS] = [3, 5, 8, 12, 16, 20, 24];
pub const N_LOOKS: usize = 7;
/// Looks of the ordinary design (3, 5, 8, 12); from the last of them on, a
/// candidate continues only while it is promising.
pub const ORDINARY_LOOKS: usize = 4;
/// A candidate is promising at 12 pairs (and stays so at 16 and 20) while
/// its estimate is at least this share of θ₁ ...
pub const PROMISING_SHARE: f64 = 0.5;
/// ... and its one-sided p is at most this: judged on its own variance,
/// so a candidate noisier than the calibration cannot extend by noise
/// alone more often than this under "no effect".
pub const PROMISING_P: f64 = 0.10;
/// Degrees of freedom the noise history may contribute at most.
pub const MAX_HISTORY_DF: f64 = 30.0;
/// θ₁ = 0.72 · s_h: the gain a single fixed test of 12 pairs at 5% detects
/// with 80% power. The four-look rule spends α over its looks, so it keeps a
/// gain of exactly θ₁ less often than that (about 6 times in 10, 1.5·θ₁
/// about 9 in 10: `benches/decision_sim.rs`, docs/statistics.md).
pub const THETA1_FACTOR: f64 = 0.72;

impl NoiseHistory {
    /// Pools the within-sample variance of each sample of log ratios, each
    /// winsorized around its own median so one wild run cannot inflate it.
    pub fn pool<'a>(samples: impl IntoIterator<Item = &'a [f64]>) -> Option<NoiseHistory> {
        Self::from_shares(samples.into_iter().map(stats::noise_share))
    }

    /// The pool of shares made by [`crate::stats::noise_share`] (one per
    /// sample, `IterationRecord::noise_share`): the same as
    /// [`NoiseHistory::pool`] of their samples.
    pub fn from_shares(shares: impl IntoIterator<Item = (f64, f64)>) -> Option<NoiseHistory> {
        let (ss, df) = shares
            .into_iter()
            .fold((0.0, 0.0), |(a, b), (s, d)| (a + s, b + d));
        (df > 0.0).then(|| NoiseHistory {
            s_h: (ss / df).sqrt(),
            nu_h: df,
        })
    }

    pub fn nu0(&self) -> f64 {
        self.nu_h.min(MAX_HISTORY_DF)
    }
}

/// θ₁ as a relative gain: max(noise floor, 0.72·s_h) (in log units, mapped back).
pub fn theta1(noise_floor: f64, s_h: f64) -> f64 {
    noise_floor.max((THETA1_FACTOR * s_h).exp() - 1.0)
}

/// θ₁ above which a setup is called too noisy even without a `noise_floor`:
/// most optimizations worth a night gain less than 10%.
pub const NOISY_THETA1: f64 = 0.10;

/// What to tell a user whose noise hides the gains they care about: when
/// the θ₁ the noise alone allows (`noise` per pair) is above the Brief's
/// `noise_floor` (if it states one) or above [`NOISY_THETA1`]. `None` when
/// the setup can see them.
pub fn noise_advice(noise: f64, noise_floor: f64) -> Option<String> {
    let by_noise = theta1(0.0, noise);
    let why = if noise_floor > 0.0 && by_noise > noise_floor {
        format!(
            "above the Brief's noise_floor {:.1}%: gains between the two will mostly be discarded",
            noise_floor * 100.0
        )
    } else if by_noise > NOISY_THETA1 {
        format!(
            "above {:.0}%: most real gains will be discarded as noise",
            NOISY_THETA1 * 100.0
        )
    } else {
        return None;
    };
    Some(format!(
        "The noise is too high to see the gains you care about: θ₁ {:.1}% (noise {:.1}% per pair) is {why}. \
         To lower it: run fewer jobs at once where it is measured (other benchmarks, builds, `make -j`; \
         `ooda daemon` already measures one Brief at a time unless `measure_exclusive: false`; \
         under `executor: slurm`, a node of its own: `slurm.args: [\"--exclusive\"]`), \
         pin the benchmark to a core (`taskset -c 2 ./bench.sh`), make one run longer (more work per run, \
         or the median of several repetitions inside the benchmark), or, if gains that small do not matter, \
         raise the Brief's `noise_floor`.",
        by_noise * 100.0,
        noise * 100.0
    ))
}

pub use crate::stats::winsorize_robust as winsorize;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub alphas: [f64; N_LOOKS],
    /// ln(1 + noise_floor): the keep test is d̄ > δ₀.
    pub delta0: f64,
    /// ln(1 + θ₁): the early-discard threshold.
    pub theta1_log: f64,
    pub noise: Option<NoiseHistory>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Keep,
    Discard,
    Continue,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub n: usize,
    pub index: usize,
    pub decision: Decision,
    pub mean: f64,
    pub p: f64,
    pub ci95: (f64, f64),
    /// The 90% upper bound used for early discard (NaN when not computed).
    pub upper90: f64,
    pub noise_changed: bool,
    /// Why, in words (without the numbers the caller adds).
    pub why: &'static str,
}

/// Share of the history's predicted spread below which a few pairs' own
/// spread is implausibly small: the lower 1% quantile of s²/s_h² when the
/// pairs' noise is the history's (F with n − 1 and ν₀ df).
pub const TIGHT_SPREAD_QUANTILE: f64 = 0.01;

/// Examines the evidence after `d.len()` pairs (which must be one of LOOKS).
pub fn look(d: &[f64], rule: &Rule) -> Look {
    look_with(d, rule, true)
}

/// [`look`], with the floor under a too-tight spread on or off: the levels
/// α′ are simulated without it ([`simulate_alpha`]), so the floor can only
/// remove keeps (on the same pairs, at any look), and a whole series'
/// false-keep rate is at most the calibrated one.
fn look_with(d: &[f64], rule: &Rule, floor: bool) -> Look {
    let n = d.len();
    let index = LOOKS
        .iter()
        .position(|&l| l == n)
        .unwrap_or(LOOKS.len() - 1);
    let s_h = rule.noise.map(|h| h.s_h).unwrap_or(0.0);
    let w = winsorize(d, s_h);
    // Three pairs that happen to agree (sd 0.003 where the benchmark's
    // noise is 0.18) are no evidence of precision: when the pairs' own
    // variance is below what the history makes plausible, the keep test
    // uses the history's spread instead, at the pairs' own df (a larger
    // variance and fewer df than pooling: only more conservative).
    let s2 = if n >= 2 { stats::variance(&w) } else { 0.0 };
    let tight = floor
        && n >= 2
        && rule.noise.is_some_and(|h| {
            h.s_h > 0.0
                && h.nu0() > 0.0
                && s2
                    < h.s_h
                        * h.s_h
                        * stats::f_quantile(TIGHT_SPREAD_QUANTILE, (n - 1) as f64, h.nu0())
        });
    let test = if tight {
        stats::paired_t_with_sd(&w, rule.delta0, s_h)
    } else {
        stats::paired_t(&w, rule.delta0)
    };
    let mean = stats::mean(&w);
    let (p, ci95) = test
        .map(|t| (t.p_one_sided, t.ci95))
        .unwrap_or((1.0, (mean, mean)));
    let mut out = Look {
        n,
        index,
        decision: Decision::Continue,
        mean,
        p,
        ci95,
        upper90: f64::NAN,
        noise_changed: false,
        why: "",
    };
    if p <= rule.alphas[index] {
        out.decision = Decision::Keep;
        out.why = if tight {
            "significantly better, judged with the noise history's spread (the pairs' own was implausibly small)"
        } else {
            "significantly better"
        };
        return out;
    }
    let (s_p2, nu_p) = match rule.noise {
        Some(h) if h.nu0() > 0.0 => {
            let changed = if h.s_h > 0.0 {
                s2 / (h.s_h * h.s_h) > stats::f_quantile(0.99, (n - 1) as f64, h.nu0())
            } else {
                s2 > 0.0
            };
            out.noise_changed = changed;
            if changed {
                (s2, (n - 1) as f64)
            } else {
                let nu0 = h.nu0();
                (
                    (nu0 * h.s_h * h.s_h + (n - 1) as f64 * s2) / (nu0 + (n - 1) as f64),
                    nu0 + (n - 1) as f64,
                )
            }
        }
        _ => (s2, (n - 1) as f64),
    };
    if nu_p >= 1.0 {
        out.upper90 = mean + stats::t_quantile(0.90, nu_p) * (s_p2 / n as f64).sqrt();
    }
    if index + 1 >= ORDINARY_LOOKS {
        // From 12 pairs on: only a promising candidate goes on (the caller
        // ends the series at the last look the design allows).
        // Strictly above δ₀ too: with no noise θ₁ is 0, and no gain is
        // not promising.
        if mean < PROMISING_SHARE * rule.theta1_log || mean <= rule.delta0 || p > PROMISING_P {
            out.decision = Decision::Discard;
            out.why = final_why(n);
        } else {
            out.why = "promising (the estimate is at least half of θ₁, p ≤ 0.10): more pairs";
        }
        return out;
    }
    if out.upper90 < rule.theta1_log {
        out.decision = Decision::Discard;
        out.why = "cannot reach the minimum detectable gain";
    }
    out
}

/// The non-inferiority test of a candidate against a reference (the
/// simplifier's version against the kept change). "Not worse by
/// `margin_log` or more" is "the mean log ratio is above −margin_log": the
/// keep test with δ₀ = −margin_log. Its acceptance side is the keep test
/// shifted by the margin (winsorizing is shift-equivariant), so levels
/// calibrated for α bound a candidate worse by exactly the margin near α.
/// Its stopping thresholds are not a shift of the keep design's: futility
/// is "the 90% upper bound below −margin_log" (clearly worse than the
/// margin allows), and the promising rule uses that threshold too. So the
/// levels are those of 0.8·α ([`NON_INFERIORITY_SHARE`]: at α itself the
/// simulated rate sat at α within its Monte Carlo error, and at 0.9·α it
/// reached 5.0% under drift at 24 pairs), and
/// `benches/decision_sim.rs` measures the rate they give (12 and 24
/// pairs, margins θ₁ and θ₁/2).
pub fn non_inferiority(rule: &Rule, margin_log: f64, alpha: f64, max_pairs: u32) -> Rule {
    Rule {
        alphas: alphas_for(alpha * NON_INFERIORITY_SHARE, max_pairs),
        delta0: -margin_log,
        theta1_log: -margin_log,
        ..*rule
    }
}

/// The share of α the non-inferiority test is calibrated for.
pub const NON_INFERIORITY_SHARE: f64 = 0.8;

/// Runs the whole procedure over a ready series (used by the simulation and
/// the benchmark; the runner measures pair by pair and calls [`look`]).
pub fn run(d: &[f64], rule: &Rule, looks: &[usize]) -> Option<Look> {
    let mut last = None;
    for &n in looks {
        if d.len() < n {
            break;
        }
        let mut l = look(&d[..n], rule);
        if l.decision == Decision::Continue && looks.last() == Some(&n) {
            l.decision = Decision::Discard;
            l.why = final_why(n);
        }
        if l.decision != Decision::Continue {
            return Some(l);
        }
        last = Some(l);
    }
    last
}

/// Why a series that reached the last look of its design without a keep
/// is discarded.
pub fn final_why(n: usize) -> &'static str {
    if n > LOOKS[ORDINARY_LOOKS - 1] {
        "not shown better after the extra pairs"
    } else {
        "not shown better after all pairs"
    }
}

/// The looks `max_pairs` allows (the last is final): those of [`LOOKS`] up
/// to it, at least the first.
pub fn looks_for(max_pairs: u32) -> Vec<usize> {
    let mut looks: Vec<usize> = LOOKS
        .iter()
        .copied()
        .filter(|&n| n <= max_pairs as usize)
        .collect();
    if looks.is_empty() {
        looks.push(LOOKS[0]);
    }
    looks
}

/// The per-look level α′ that makes the overall false-keep rate `alpha`,
/// from `trials` seeded simulations of the procedure under no effect.
///
/// The discard rule does not depend on α′, so each simulated series needs
/// only the smallest p-value among the looks it reaches; α′ is the `alpha`
/// quantile of those minima (its lower confidence bound, to err on the safe
/// side of the simulation's own noise). Noise is known (s_h = 1, ν₀ = 30), as it is
/// after calibration, with θ₁ = 0.72.
pub fn simulate_alpha(alpha: f64, trials: usize, seed: u64, looks: &[usize]) -> Option<f64> {
    if !(alpha > 0.0 && alpha < 0.5) || trials < 100 || looks.is_empty() {
        return None;
    }
    let rule = Rule {
        alphas: [0.0; N_LOOKS],
        delta0: 0.0,
        theta1_log: THETA1_FACTOR,
        noise: Some(NoiseHistory {
            s_h: 1.0,
            nu_h: MAX_HISTORY_DF,
        }),
    };
    let mut rng = SplitMix64::new(seed);
    let mut minima = Vec::with_capacity(trials);
    let max = looks.iter().copied().max().unwrap_or(LOOKS[0]);
    let mut d = vec![0.0; max];
    for _ in 0..trials {
        // Drawn lazily, one look's worth at a time: the same seed gives the
        // same first pairs whatever the design, so designs compare on
        // common random numbers.
        let mut drawn = 0;
        let mut min_p = 1.0f64;
        for &n in looks {
            while drawn < n {
                d[drawn] = rng.normal();
                drawn += 1;
            }
            let l = look_with(&d[..n], &rule, false);
            min_p = min_p.min(l.p);
            if l.decision == Decision::Discard {
                break;
            }
        }
        // Keep the stream aligned: every trial consumes `max` normals.
        while drawn < max {
            rng.normal();
            drawn += 1;
        }
        minima.push(min_p);
    }
    // The simulated quantile is itself noisy (±0.0002 at 20,000 trials); take
    // its one-sided 95% lower bound so the real false-keep rate errs below α.
    let margin = 1.645 * (alpha * (1.0 - alpha) / trials as f64).sqrt();
    let a = stats::quantile(&minima, (alpha - margin).max(alpha / 2.0));
    (a.is_finite() && a > 0.0).then_some(a)
}

/// The per-look level for `alpha` under the design `max_pairs` allows:
/// simulated, else the union bound (α split evenly over the looks).
/// Deterministic for its arguments, and a 20,000-trial simulation: kept
/// per process, because ORIENT asks for it on every tick.
pub fn alphas_for(alpha: f64, max_pairs: u32) -> [f64; N_LOOKS] {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    /// (α's bits, number of looks) → the levels.
    type Levels = HashMap<(u64, usize), [f64; N_LOOKS]>;
    static CACHE: OnceLock<Mutex<Levels>> = OnceLock::new();
    let looks = looks_for(max_pairs);
    let key = (alpha.to_bits(), looks.len());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(a) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return a;
    }
    let a = match simulate_alpha(alpha, 20_000, 0x00DA_5EED, &looks) {
        Some(a) => [a; N_LOOKS],
        None => [alpha / looks.len() as f64; N_LOOKS],
    };
    if let Ok(mut c) = cache.lock() {
        c.insert(key, a);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(noise_sd: f64) -> Rule {
        Rule {
            alphas: [0.0169; N_LOOKS],
            delta0: 0.0,
            theta1_log: THETA1_FACTOR * noise_sd,
            noise: Some(NoiseHistory {
                s_h: noise_sd,
                nu_h: 30.0,
            }),
        }
    }

    #[test]
    fn a_spread_too_tight_for_the_history_is_not_believed() {
        // Three pairs that agree to 0.3% where the benchmark's noise is 18%
        // (a false keep seen on a real night: +9.6%, p = 0.012).
        let mut r = rule(0.181);
        r.alphas = alphas_for(0.05, 24);
        let d = [0.094, 0.097, 0.100];
        let own = look_with(&d, &r, false);
        assert_eq!(own.decision, Decision::Keep, "{own:?}");
        let floored = look(&d, &r);
        assert_ne!(floored.decision, Decision::Keep, "{floored:?}");
        assert!(floored.p > own.p && floored.ci95.0 < own.ci95.0);
        // The same gain, clear of that noise, is still kept: with the
        // history's spread, three pairs at +70% are enough.
        let d = [0.69, 0.70, 0.71];
        let kept = look(&d, &r);
        assert_eq!(kept.decision, Decision::Keep, "{kept:?}");
        assert!(kept.why.contains("history's spread"), "{}", kept.why);
        // A spread the history makes plausible is the pairs' own, as before.
        let d = [0.05, -0.2, 0.3, 0.1, -0.05];
        assert_eq!(look(&d, &r), look_with(&d, &r, false));
    }

    #[test]
    fn the_floor_only_removes_keeps_at_every_look() {
        // Under no effect and under a real one, at every look: whatever
        // the floor keeps, the rule without it keeps too.
        let mut rng = SplitMix64::new(7);
        let r = Rule {
            alphas: alphas_for(0.05, 24),
            ..rule(1.0)
        };
        let (mut with, mut without) = ([0usize; N_LOOKS], [0usize; N_LOOKS]);
        for trial in 0..4000 {
            let effect = if trial % 2 == 0 { 0.0 } else { 0.8 };
            // Some series far tighter than the history, as a benchmark
            // whose noise fell would give.
            let scale = if trial % 5 == 0 { 0.05 } else { 1.0 };
            let d: Vec<f64> = (0..24).map(|_| effect + scale * rng.normal()).collect();
            for (i, &n) in LOOKS.iter().enumerate() {
                let a = look(&d[..n], &r).decision == Decision::Keep;
                let b = look_with(&d[..n], &r, false).decision == Decision::Keep;
                assert!(!a || b, "trial {trial}, {n} pairs");
                with[i] += usize::from(a);
                without[i] += usize::from(b);
            }
        }
        // And it does remove some: the tight series at no effect.
        assert!(with.iter().sum::<usize>() < without.iter().sum::<usize>());
    }

    #[test]
    fn non_inferiority_accepts_a_small_loss_and_refuses_one_beyond_the_margin() {
        let r = rule(0.01);
        let margin = 0.03f64.ln_1p();
        let ni = non_inferiority(&r, margin, 0.05, 12);
        assert!(ni.alphas[0] > 0.0 && ni.alphas[0] < 0.05 && ni.delta0 == -margin);
        let series = |mean: f64| -> Vec<f64> {
            (0..12)
                .map(|i| mean + 0.004 * if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect()
        };
        let a = run(&series(-0.01), &ni, &looks_for(12)).unwrap();
        assert_eq!(a.decision, Decision::Keep, "1% worse, margin 3%: {a:?}");
        let b = run(&series(-0.06), &ni, &looks_for(12)).unwrap();
        assert_eq!(b.decision, Decision::Discard, "6% worse, margin 3%: {b:?}");
        // The keep rule would have refused the first (it is not better).
        assert_ne!(
            run(&series(-0.01), &r, &looks_for(12)).unwrap().decision,
            Decision::Keep
        );
    }

    #[test]
    fn simulated_alpha_is_near_the_design_value() {
        let a = simulate_alpha(0.05, 20_000, 0x00DA_5EED, &looks_for(12)).unwrap();
        assert!((0.012..0.025).contains(&a), "α′ = {a}");
        // The extension adds chances to keep: its α′ is a little lower.
        let x = simulate_alpha(0.05, 20_000, 0x00DA_5EED, &looks_for(24)).unwrap();
        assert!(x <= a && x > 0.8 * a, "α′ = {x} extended, {a} ordinary");
    }

    #[test]
    fn a_clear_gain_is_kept_at_the_first_look() {
        let d = [0.1, 0.11, 0.09];
        let l = look(&d, &rule(0.03));
        assert_eq!(l.decision, Decision::Keep);
        assert_eq!(l.n, 3);
    }

    #[test]
    fn a_clear_regression_is_discarded_early() {
        let d = [-0.05, -0.06, -0.04];
        let l = look(&d, &rule(0.03));
        assert_eq!(l.decision, Decision::Discard);
        assert!(l.upper90 < 0.03 * THETA1_FACTOR);
    }

    #[test]
    fn an_ambiguous_series_continues_then_ends_at_twelve() {
        let d = [
            0.03, -0.02, 0.04, 0.0, 0.02, -0.03, 0.05, 0.01, -0.01, 0.03, 0.0, 0.02,
        ];
        let r = rule(0.03);
        assert_eq!(look(&d[..3], &r).decision, Decision::Continue);
        let last = run(&d, &r, &looks_for(12)).unwrap();
        assert!(last.n >= 5);
        assert_ne!(last.decision, Decision::Continue);
    }

    #[test]
    fn a_promising_candidate_gets_more_pairs_and_one_that_fades_is_discarded() {
        let r = rule(0.10);
        // Mean 0.10 (above θ₁ = 0.072) with sd about 0.17: not kept at 12.
        let mut d: Vec<f64> = [0.35, -0.15, 0.3, -0.1, 0.25, -0.05]
            .iter()
            .cycle()
            .take(24)
            .copied()
            .collect();
        let at12 = look(&d[..12], &r);
        assert_eq!(at12.decision, Decision::Continue, "{at12:?}");
        assert!(at12.why.starts_with("promising"));
        // With the ordinary design, 12 is final.
        let ordinary = run(&d[..12], &r, &looks_for(12)).unwrap();
        assert_eq!(ordinary.decision, Decision::Discard);
        assert_eq!(ordinary.why, "not shown better after all pairs");
        // Extended, the same gain is kept once the extra pairs show it.
        let kept = run(&d, &r, &looks_for(24)).unwrap();
        assert_eq!(kept.decision, Decision::Keep, "{kept:?}");
        assert!(kept.n > 12);
        // A candidate whose estimate falls below θ₁ in the extra pairs stops.
        for v in d.iter_mut().skip(12) {
            *v = -0.1;
        }
        let faded = run(&d, &r, &looks_for(24)).unwrap();
        assert_eq!(faded.decision, Decision::Discard);
        assert_eq!(
            (faded.n, faded.why),
            (16, "not shown better after the extra pairs")
        );
    }

    #[test]
    fn zero_variance_decides_without_dividing_by_zero() {
        let r = Rule {
            noise: Some(NoiseHistory {
                s_h: 0.0,
                nu_h: 9.0,
            }),
            theta1_log: 0.0,
            ..rule(0.0)
        };
        assert_eq!(look(&[0.01, 0.01, 0.01], &r).decision, Decision::Keep);
        assert_eq!(look(&[-0.01, -0.01, -0.01], &r).decision, Decision::Discard);
        assert_eq!(
            run(&[0.0; 12], &r, &looks_for(24)).unwrap().decision,
            Decision::Discard
        );
    }

    #[test]
    fn noise_change_is_flagged_and_history_ignored() {
        let d = [0.3, -0.3, 0.25];
        let l = look(&d, &rule(0.01));
        assert!(l.noise_changed);
    }

    #[test]
    fn winsorizing_tames_one_wild_pair() {
        let d = [0.01, 0.012, 0.011, 0.009, 0.5];
        let w = winsorize(&d, 0.0);
        assert!(w[4] < 0.1, "{w:?}");
    }

    #[test]
    fn pooled_noise_uses_within_sample_spread() {
        let h = NoiseHistory::pool([&[0.01, -0.01, 0.0][..], &[0.11, 0.09, 0.1][..]]).unwrap();
        assert!((h.s_h - 0.01).abs() < 1e-12, "{h:?}");
        assert_eq!(h.nu_h, 4.0);
    }

    #[test]
    fn theta1_respects_the_floor() {
        assert!((theta1(0.0, 0.03) - ((0.72f64 * 0.03).exp() - 1.0)).abs() < 1e-12);
        assert_eq!(theta1(0.05, 0.01), 0.05);
    }

    #[test]
    fn noise_advice_names_the_threshold_it_crossed() {
        // θ₁ ≈ 0.72 · noise: 3% noise sees 2.2%, 20% sees 15.5%.
        assert_eq!(noise_advice(0.03, 0.0), None);
        let loud = noise_advice(0.20, 0.0).unwrap();
        assert!(
            loud.contains("θ₁ 15.5%") && loud.contains("above 10%"),
            "{loud}"
        );
        let floor = noise_advice(0.05, 0.02).unwrap();
        assert!(floor.contains("noise_floor 2.0%"), "{floor}");
        assert!(floor.contains("taskset") && floor.contains("measure_exclusive"));
        assert_eq!(noise_advice(0.05, 0.05), None);
    }
}
