//! The builtin search's model of the landscape: Gaussian processes over
//! the knob space, fitted to every decision the archive holds.
//!
//! Why a Gaussian process and not the kernel average it replaced: the
//! average gave every unmeasured point the same optimistic spread, so far
//! points predicted 40–90% worse were still proposed and measured, and
//! their (predicted) losses ended a night on a false red light. A Gaussian
//! process says how sure it is at each point: far from everything measured
//! it is unsure, near measurements it is as sure as the measurements are,
//! and the acquisition rule (expected improvement) weighs both.
//!
//! The model is fitted to what the decisions measured: each iteration's
//! mean paired log ratio, candidate against base, with the variance of
//! that mean. f is the log metric oriented so that lower is better, and an
//! observation is f(candidate) − f(base) plus noise. Fitting differences
//! rather than every run as a sample of its point keeps what the pairing
//! bought: a machine 5% slower during one iteration slows both sides of
//! its pairs and moves no observation, where pooled absolute runs would
//! have read it as a 5% loss of that iteration's candidate (the base,
//! measured in every iteration, averages its slow minutes away). Only
//! differences are ever predicted, against the best, so the unknown level
//! of f never matters.
//!
//! The kernel is a squared exponential over the distance [`distance`]
//! defines. No single length scale (nor distance between two choices of a
//! choice knob) is trusted: the predictions average the models of a small
//! grid of both, each weighted by its marginal likelihood.

use crate::brief::points::{self, Point};
use crate::brief::{Knob, KnobSpec};

/// Length scales tried (unit knob space).
const LENGTH_SCALES: [f64; 5] = [0.08, 0.15, 0.25, 0.4, 0.7];
/// Distances between two different choices of a choice knob tried.
const CHOICE_DISTANCES: [f64; 3] = [0.25, 0.5, 1.0];
/// The least prior spread of f: knob changes routinely move a metric by
/// tens of percent, even when the differences measured so far are small.
const MIN_SIGNAL_SD: f64 = 0.2;
/// Models with less posterior weight than this are left out of the average.
const MIN_WEIGHT: f64 = 1e-3;
/// The most decisions a fit uses: the newest. A fit costs time cubic and
/// memory quadratic in its observations, for each of the grid's models: a
/// plan over a 3-knob space took 14 ms at 50 observations, 0.7 s at 400
/// and 3.4 s at 800 before the cap (`benches/plan_cost.rs`), and a Brief
/// run for months reaches thousands (at 10,000, the grid's 15 Cholesky
/// factors, all held while the fit weighs them, would take 15 × 10,000² ×
/// 8 bytes, 12 GB).
/// A night of the search benchmark (400 benchmark runs, one at least per
/// decision) never reaches it, so its results are the same with the cap.
/// Beyond it the model forgets the oldest decisions, not what they
/// settled: settled points are never proposed again, and a sweep measures
/// its distance from every point tried.
pub const MAX_OBSERVATIONS: usize = 400;

/// One decision: f(cand) − f(base) was measured as `d` with variance `var`.
#[derive(Debug, Clone)]
pub struct Observation {
    pub cand: Point,
    pub base: Point,
    pub d: f64,
    pub var: f64,
    pub iteration: u32,
}

/// Distance in unit knob space; two different choices are `choice` apart.
pub fn distance(knobs: &[Knob], a: &Point, b: &Point, choice: f64) -> f64 {
    let mut d2 = 0.0;
    for k in knobs {
        let (va, vb) = (a.get(&k.name), b.get(&k.name));
        let part = match (&k.spec, va, vb) {
            (_, None, None) => 0.0,
            (KnobSpec::Choice(_), Some(x), Some(y)) => {
                if x == y {
                    0.0
                } else {
                    choice
                }
            }
            (spec, Some(x), Some(y)) => {
                match (points::to_unit(spec, x), points::to_unit(spec, y)) {
                    (Some(u), Some(v)) => u - v,
                    _ => 0.5,
                }
            }
            _ => 0.5,
        };
        d2 += part * part;
    }
    d2.sqrt()
}

/// A predicted difference f(x) − f(base): negative is a gain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub mean: f64,
    pub sd: f64,
}

/// The base of predicted differences, computed once for many candidates:
/// per model, its covariances with the observations.
pub struct Anchor {
    point: Point,
    per_model: Vec<Vec<f64>>,
}

/// One Gaussian process of the average: a length scale and a distance
/// between choices, with its posterior weight.
struct Model {
    length: f64,
    choice: f64,
    weight: f64,
    /// Lower Cholesky factor of the observations' covariance.
    chol: Vec<Vec<f64>>,
    /// That covariance's inverse times the observed differences.
    alpha: Vec<f64>,
}

/// Gaussian processes over the knob space, averaged by how well each
/// explains the observations (Bayesian model averaging over the length
/// scale and the choice distance). One best-fitting model is overconfident
/// when little is measured: a flat start picks the longest length scale,
/// which then calls every unmeasured point known, and the search stops
/// exploring; the average keeps the doubt of the shorter scales the data
/// cannot yet rule out.
pub struct Surrogate<'a> {
    knobs: &'a [Knob],
    pub obs: Vec<Observation>,
    signal_var: f64,
    models: Vec<Model>,
}

impl<'a> Surrogate<'a> {
    pub fn fit(knobs: &'a [Knob], obs: Vec<Observation>) -> Surrogate<'a> {
        Surrogate::fit_newest(knobs, obs, MAX_OBSERVATIONS)
    }

    /// [`Surrogate::fit`] to the newest `max` of `obs` (given oldest first).
    pub fn fit_newest(knobs: &'a [Knob], mut obs: Vec<Observation>, max: usize) -> Surrogate<'a> {
        if obs.len() > max {
            obs.drain(..obs.len() - max);
        }
        // Each difference spans two points: its spread is about √2 that of f.
        let spread = if obs.is_empty() {
            0.0
        } else {
            (obs.iter().map(|o| o.d * o.d).sum::<f64>() / (2.0 * obs.len() as f64)).sqrt()
        };
        let mut s = Surrogate {
            knobs,
            obs,
            signal_var: spread.max(MIN_SIGNAL_SD).powi(2),
            models: Vec::new(),
        };
        let mut fitted: Vec<(f64, Model)> = Vec::new();
        for &length in &LENGTH_SCALES {
            for &choice in &CHOICE_DISTANCES {
                if let Some(fit) = s.factor(length, choice) {
                    fitted.push(fit);
                }
            }
        }
        let top = fitted
            .iter()
            .map(|(ll, _)| *ll)
            .fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = fitted.iter().map(|(ll, _)| (ll - top).exp()).sum();
        s.models = fitted
            .into_iter()
            .map(|(ll, mut m)| {
                m.weight = (ll - top).exp() / total;
                m
            })
            .filter(|m| m.weight >= MIN_WEIGHT)
            .collect();
        let kept: f64 = s.models.iter().map(|m| m.weight).sum();
        for m in &mut s.models {
            m.weight /= kept;
        }
        s
    }

    fn k(&self, length: f64, choice: f64, a: &Point, b: &Point) -> f64 {
        let d = distance(self.knobs, a, b, choice);
        self.signal_var * (-(d * d) / (2.0 * length * length)).exp()
    }

    /// cov(f(x) − f(a), observation j), for every j.
    fn cross(&self, length: f64, choice: f64, x: &Point, a: &Point) -> Vec<f64> {
        self.obs
            .iter()
            .map(|o| {
                self.k(length, choice, x, &o.cand)
                    - self.k(length, choice, x, &o.base)
                    - self.k(length, choice, a, &o.cand)
                    + self.k(length, choice, a, &o.base)
            })
            .collect()
    }

    /// Factors the observations' covariance for one model; its log
    /// marginal likelihood.
    fn factor(&self, length: f64, choice: f64) -> Option<(f64, Model)> {
        let k: Vec<Vec<f64>> = self
            .obs
            .iter()
            .map(|oi| {
                let mut row = self.cross(length, choice, &oi.cand, &oi.base);
                row.iter_mut().zip(&self.obs).for_each(|(v, oj)| {
                    if std::ptr::eq(oi, oj) {
                        *v += oi.var;
                    }
                });
                row
            })
            .collect();
        // Decisions repeated on the same pair of points under a long length
        // scale make the covariance nearly singular: a little jitter before
        // giving the model up.
        let chol = [0.0, 1e-8, 1e-6].iter().find_map(|j| {
            let mut kj = k.clone();
            for (i, row) in kj.iter_mut().enumerate() {
                row[i] += j * self.signal_var;
            }
            cholesky(&kj)
        })?;
        let r: Vec<f64> = self.obs.iter().map(|o| o.d).collect();
        let z = forward(&chol, &r);
        let alpha = backward(&chol, &z);
        let fit: f64 = z.iter().map(|v| v * v).sum();
        let det: f64 = (0..chol.len()).map(|i| chol[i][i].ln()).sum();
        let model = Model {
            length,
            choice,
            weight: 0.0,
            chol,
            alpha,
        };
        Some((-0.5 * fit - det, model))
    }

    /// What [`Surrogate::difference`] needs of the point differences are
    /// taken against.
    pub fn anchor(&self, base: &Point) -> Anchor {
        Anchor {
            point: base.clone(),
            per_model: self
                .models
                .iter()
                .map(|m| {
                    self.obs
                        .iter()
                        .map(|o| {
                            self.k(m.length, m.choice, base, &o.base)
                                - self.k(m.length, m.choice, base, &o.cand)
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// The predicted difference f(x) − f(base) (negative: x is better) and
    /// its standard deviation, mixed over the models.
    pub fn difference(&self, x: &Point, base: &Anchor) -> Prediction {
        let prior = |length: f64, choice: f64| {
            2.0 * (self.signal_var - self.k(length, choice, x, &base.point))
        };
        if self.models.is_empty() {
            return Prediction {
                mean: 0.0,
                sd: prior(LENGTH_SCALES[2], CHOICE_DISTANCES[0])
                    .max(1e-12)
                    .sqrt(),
            };
        }
        let (mut mean, mut second) = (0.0, 0.0);
        for (m, from_base) in self.models.iter().zip(&base.per_model) {
            let cov: Vec<f64> = self
                .obs
                .iter()
                .zip(from_base)
                .map(|(o, b)| {
                    self.k(m.length, m.choice, x, &o.cand) - self.k(m.length, m.choice, x, &o.base)
                        + b
                })
                .collect();
            let mu = dot(&cov, &m.alpha);
            let v = forward(&m.chol, &cov);
            let var = (prior(m.length, m.choice) - dot(&v, &v)).max(0.0);
            mean += m.weight * mu;
            second += m.weight * (var + mu * mu);
        }
        Prediction {
            mean,
            sd: (second - mean * mean).max(1e-12).sqrt(),
        }
    }

    /// How much each observation's candidate resembles `x`: the kernel's
    /// correlation, averaged over the models.
    pub fn similarity(&self, x: &Point) -> Vec<f64> {
        let mut out = vec![0.0; self.obs.len()];
        for m in &self.models {
            for (s, o) in out.iter_mut().zip(&self.obs) {
                *s += m.weight * self.k(m.length, m.choice, x, &o.cand) / self.signal_var;
            }
        }
        out
    }
}

/// Expected improvement of a difference `d` (negative is better) beyond a
/// margin: E[max(0, −d − margin)].
pub fn expected_improvement(d: Prediction, margin: f64) -> f64 {
    let z = (-d.mean - margin) / d.sd;
    d.sd * (z * normal_cdf(z) + normal_pdf(z))
}

/// P(−d > margin).
pub fn chance_of_gain(d: Prediction, margin: f64) -> f64 {
    normal_cdf((-d.mean - margin) / d.sd)
}

fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn cholesky(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let v = a[i][i] - s;
                if v <= 0.0 {
                    return None;
                }
                l[i][j] = v.sqrt();
            } else {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    Some(l)
}

/// Solves L z = b.
fn forward(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; b.len()];
    for i in 0..b.len() {
        let s: f64 = (0..i).map(|k| l[i][k] * z[k]).sum();
        z[i] = (b[i] - s) / l[i][i];
    }
    z
}

/// Solves Lᵀ x = z.
fn backward(l: &[Vec<f64>], z: &[f64]) -> Vec<f64> {
    let n = z.len();
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k][i] * x[k]).sum();
        x[i] = (z[i] - s) / l[i][i];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brief::KnobValue;

    fn knobs() -> Vec<Knob> {
        vec![Knob {
            name: "X".into(),
            spec: KnobSpec::Int {
                lo: 0,
                hi: 100,
                log: false,
            },
            default: None,
        }]
    }

    fn at(x: i64) -> Point {
        let mut p = Point::new();
        p.insert("X".into(), KnobValue::Int(x));
        p
    }

    /// Decisions of each x in `xs` against `base`, measured without bias.
    fn fitted<'a>(
        knobs: &'a [Knob],
        f: impl Fn(i64) -> f64,
        base: i64,
        xs: &[i64],
    ) -> Surrogate<'a> {
        let obs = xs
            .iter()
            .enumerate()
            .map(|(i, &x)| Observation {
                cand: at(x),
                base: at(base),
                d: f(x) - f(base),
                var: 0.01f64.powi(2),
                iteration: i as u32 + 1,
            })
            .collect();
        Surrogate::fit(knobs, obs)
    }

    #[test]
    fn a_fit_uses_the_newest_observations_only() {
        let k = knobs();
        let obs: Vec<Observation> = (1..=8)
            .map(|i| Observation {
                cand: at(i * 10),
                base: at(0),
                d: 0.0,
                var: 0.01f64.powi(2),
                iteration: i as u32,
            })
            .collect();
        let s = Surrogate::fit_newest(&k, obs.clone(), 5);
        let kept: Vec<u32> = s.obs.iter().map(|o| o.iteration).collect();
        assert_eq!(kept, [4, 5, 6, 7, 8]);
        assert!(!s.models.is_empty());
        assert_eq!(Surrogate::fit(&k, obs).obs.len(), 8, "under the cap: all");
    }

    #[test]
    fn interpolates_what_it_measured_and_is_unsure_far_away() {
        let k = knobs();
        let f = |x: i64| (x as f64 / 100.0 - 0.3).powi(2);
        let s = fitted(&k, f, 0, &[20, 40, 60]);
        let base = s.anchor(&at(0));
        // Between measured points: near the truth, and sure of it.
        let near = s.difference(&at(30), &base);
        assert!((near.mean - (f(30) - f(0))).abs() < 0.02, "{near:?}");
        // A measured point: as sure as its measurement.
        let on = s.difference(&at(40), &base);
        assert!(
            (on.mean - (f(40) - f(0))).abs() < 0.01 && on.sd < 0.02,
            "{on:?}"
        );
        // Far from everything: unsure.
        let far = s.difference(&at(100), &base);
        assert!(far.sd > 3.0 * near.sd, "{far:?} vs {near:?}");
    }

    #[test]
    fn expected_improvement_prefers_a_likely_gain_and_ignores_a_sure_loss() {
        let sure_loss = Prediction {
            mean: 0.4,
            sd: 0.02,
        };
        let unsure = Prediction { mean: 0.1, sd: 0.3 };
        let likely = Prediction {
            mean: -0.1,
            sd: 0.05,
        };
        let ei = |d| expected_improvement(d, 0.01);
        assert!(ei(sure_loss) < 1e-12);
        assert!(ei(likely) > ei(unsure) && ei(unsure) > 0.01);
        assert!(chance_of_gain(sure_loss, 0.0) < 1e-9);
    }

    #[test]
    fn the_difference_to_the_base_itself_is_zero_and_sure() {
        let k = knobs();
        let s = fitted(&k, |x| x as f64 / 100.0, 10, &[50, 90]);
        let d = s.difference(&at(50), &s.anchor(&at(10)));
        assert!((d.mean - 0.4).abs() < 0.05, "{d:?}");
        assert!(d.sd < 0.05, "{d:?}");
        let same = s.difference(&at(10), &s.anchor(&at(10)));
        assert!(same.mean.abs() < 1e-9 && same.sd < 1e-5, "{same:?}");
        // Against another base, the difference chains through the base.
        let d = s.difference(&at(90), &s.anchor(&at(50)));
        assert!((d.mean - 0.4).abs() < 0.05, "{d:?}");
    }
}
