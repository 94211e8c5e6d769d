//! The builtin main agent: a deterministic knob search.
//!
//! It reads the whole history, fits a small surrogate (kernel regression of
//! log-metric over normalized knob space) and proposes the unevaluated point
//! with the best optimistic predicted improvement. Candidates are steps
//! around the current best whose size halves as non-keeps accumulate
//! (convergence), plus a seeded chance of a random far point (exploration).
//! The surrogate also supplies every plan's predicted effect and uncertainty,
//! so builtin plans are held to the same "make a falsifiable prediction"
//! rule as an LLM's.

use std::collections::BTreeSet;

use crate::brief::{Brief, Direction, Knob, KnobSpec, KnobValue};
use crate::driver::{Driver, Execution, Lesson, Proposal, Turn};
use crate::error::Result;
use crate::eval::gain;
use crate::events::Event;
use crate::history::{IterationRecord, Verdict};
use crate::knobs::{self, Point};
use crate::model::Cut;
use crate::plan::{Axis, LearnResult, Pattern, Plan};
use crate::stats::{self, SplitMix64};

/// Probability of proposing a random unevaluated point instead of a local step.
const EXPLORE: f64 = 0.1;
/// Kernel bandwidth in unit knob space.
const BANDWIDTH: f64 = 0.12;
/// Weight of the prior (the mean of all observations) in the surrogate.
const PRIOR_WEIGHT: f64 = 0.3;
/// Optimism: how much predicted uncertainty counts toward a candidate's score.
const KAPPA: f64 = 0.5;
const FIRST_STEP: f64 = 0.25;
/// The least log-scale spread assumed for the landscape: knob changes
/// routinely move a metric by tens of percent, even when the points measured
/// so far happen to agree, and a prediction must not claim more certainty
/// than the search has.
const PRIOR_SPREAD: f64 = 0.5;
const STEP_LEVELS: i32 = 7;

struct Obs {
    point: Point,
    y: f64,
    iteration: u32,
}

/// Lower y is better whatever the Brief's direction.
fn y_of(dir: Direction, value: f64) -> f64 {
    match dir {
        Direction::Minimize => value.ln(),
        Direction::Maximize => -value.ln(),
    }
}

/// The knob point each iteration was compared against: the baseline's, then
/// each kept candidate's in turn.
pub fn base_points(history: &[IterationRecord]) -> Vec<Point> {
    let mut current = history.first().map(|r| r.knobs.clone()).unwrap_or_default();
    history
        .iter()
        .map(|r| {
            let base = current.clone();
            if r.verdict == Verdict::Keep {
                current = r.knobs.clone();
            }
            base
        })
        .collect()
}

fn observations(brief: &Brief, history: &[IterationRecord]) -> Vec<Obs> {
    let dir = brief.metric.direction;
    let bases = base_points(history);
    let mut out = Vec::new();
    for (r, base) in history.iter().zip(bases) {
        if let Some(c) = &r.calibration {
            out.push(Obs {
                point: r.knobs.clone(),
                y: y_of(dir, c.median),
                iteration: r.iteration,
            });
        }
        if let Some(m) = &r.measured {
            out.push(Obs {
                point: base,
                y: y_of(dir, m.base_median),
                iteration: r.iteration,
            });
            out.push(Obs {
                point: r.knobs.clone(),
                y: y_of(dir, m.cand_median),
                iteration: r.iteration,
            });
        }
    }
    out
}

fn distance(knobs: &[Knob], a: &Point, b: &Point) -> f64 {
    let mut d2 = 0.0;
    for k in knobs {
        let (va, vb) = (a.get(&k.name), b.get(&k.name));
        let part = match (&k.spec, va, vb) {
            (_, None, None) => 0.0,
            (KnobSpec::Choice(_), Some(x), Some(y)) => {
                // Other choices are neither near nor unrelated: a loop order
                // measured at one tile size says something about another.
                if x == y { 0.0 } else { 0.25 }
            }
            (spec, Some(x), Some(y)) => match (knobs::to_unit(spec, x), knobs::to_unit(spec, y)) {
                (Some(u), Some(v)) => u - v,
                _ => 0.5,
            },
            _ => 0.5,
        };
        d2 += part * part;
    }
    d2.sqrt()
}

struct Surrogate<'a> {
    knobs: &'a [Knob],
    obs: Vec<Obs>,
    prior: f64,
    spread: f64,
    noise: f64,
}

impl Surrogate<'_> {
    /// (mean, sd) of y at a point, plus the weights of each observation.
    fn predict(&self, x: &Point) -> (f64, f64, Vec<f64>) {
        let weights: Vec<f64> = self
            .obs
            .iter()
            .map(|o| {
                let d = distance(self.knobs, x, &o.point);
                (-(d * d) / (2.0 * BANDWIDTH * BANDWIDTH)).exp()
            })
            .collect();
        let w: f64 = weights.iter().sum();
        let num: f64 = self.obs.iter().zip(&weights).map(|(o, wi)| o.y * wi).sum();
        let mean = (PRIOR_WEIGHT * self.prior + num) / (PRIOR_WEIGHT + w);
        let var = self.spread.powi(2) * PRIOR_WEIGHT / (PRIOR_WEIGHT + w)
            + self.noise.powi(2) / (PRIOR_WEIGHT + w);
        (mean, var.sqrt(), weights)
    }
}

/// The builtin main agent: the knob search below, and lessons stated from
/// the numbers.
pub struct Builtin;

impl Driver for Builtin {
    fn name(&self) -> String {
        "builtin".into()
    }

    fn plan(&self, t: &Turn, best: &Point) -> Result<Proposal> {
        let proposal = plan(
            t.brief,
            t.history,
            best,
            t.seed,
            t.iteration,
            t.orientation.noise_sd(),
        );
        let Some(plan) = proposal else {
            return Ok(Proposal::Exhausted {
                detail: format!(
                    "every point of the knob space is settled (kept, falsified, failing or inconclusive twice) ({} iterations); the best is iteration {}",
                    t.history.len().saturating_sub(1),
                    best_iteration(t.history)
                ),
            });
        };
        // The search never proposes what the validator refuses; if it ever
        // did, the iteration says so instead of measuring it.
        let rejected = match crate::plan::validate(&plan, t.history, t.iteration) {
            Ok(()) => None,
            Err(rej) => {
                t.span.emit(Event::PlanRejected {
                    rule: rej.rule.into(),
                    message: rej.message.clone(),
                })?;
                Some(Cut::PlanRejected {
                    rule: rej.rule.into(),
                    message: rej.message,
                    attempts: None,
                })
            }
        };
        Ok(Proposal::Plan {
            plan,
            rejected,
            calls: Vec::new(),
        })
    }

    fn execute(&self, _: &Turn, _: &Plan) -> Result<Execution> {
        Ok(Execution::default())
    }

    fn learn(&self, _: &Turn, plan: &Plan, rec: &IterationRecord, _: bool) -> Result<Lesson> {
        Ok(Lesson {
            learned: learn(plan, rec),
            calls: Vec::new(),
        })
    }

    fn edits_files(&self) -> bool {
        false
    }
}

/// The point to try next, or `None` when every point of the space was tried.
pub fn plan(
    brief: &Brief,
    history: &[IterationRecord],
    best: &Point,
    seed: u64,
    iteration: u32,
    noise_sd: f64,
) -> Option<Plan> {
    let knobs = &brief.knobs;
    let obs = observations(brief, history);
    let ys: Vec<f64> = obs.iter().map(|o| o.y).collect();
    let noise = (noise_sd / std::f64::consts::SQRT_2).max(0.005);
    let surrogate = Surrogate {
        knobs,
        prior: if ys.is_empty() { 0.0 } else { stats::mean(&ys) },
        spread: stats::sd(&ys).max(noise).max(PRIOR_SPREAD),
        noise,
        obs,
    };
    // Settled points are never proposed again; an inconclusive one may be,
    // once (the validator's rule, so a builtin plan is never refused).
    let evaluated: BTreeSet<String> = history
        .iter()
        .map(|r| knobs::key(&r.knobs))
        .filter(|k| crate::plan::settled_point(history, k).is_some())
        .chain(std::iter::once(knobs::key(best)))
        .collect();
    let mut rng = SplitMix64::new(seed ^ u64::from(iteration).wrapping_mul(0x9E37_79B9_7F4A_7C15));

    let non_keeps = history
        .iter()
        .rev()
        .take_while(|r| r.verdict != Verdict::Keep && r.verdict != Verdict::Baseline)
        .count();
    let moves_per_level = local_moves(knobs, best, 0).len().max(1);
    let min_level = (non_keeps / moves_per_level) as i32;

    // Pattern search: the first step size (from the current one down) that
    // still has untried moves; the surrogate only ranks moves of that size.
    let mut local: Vec<Point> = Vec::new();
    for level in min_level.min(STEP_LEVELS - 1)..STEP_LEVELS {
        local = local_moves(knobs, best, level)
            .into_iter()
            .filter(|p| !evaluated.contains(&knobs::key(p)))
            .collect();
        local.dedup();
        if !local.is_empty() {
            break;
        }
    }
    let explore = local.is_empty() || rng.next_f64() < EXPLORE;
    let chosen = if explore {
        random_unevaluated(knobs, best, &evaluated, &mut rng).map(|p| (p, true))
    } else {
        None
    }
    .or_else(|| {
        let (y_best, _, _) = surrogate.predict(best);
        local
            .iter()
            .map(|p| {
                let (m, s, _) = surrogate.predict(p);
                (p.clone(), (y_best - m) + KAPPA * s)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(p, _)| (p, false))
    })?;
    let (point, explored) = chosen;
    Some(describe(brief, history, &surrogate, best, point, explored))
}

/// Moves of one step along each axis (and each other choice of a choice knob).
fn local_moves(knobs: &[Knob], best: &Point, level: i32) -> Vec<Point> {
    let step = FIRST_STEP * 0.5f64.powi(level);
    let mut out = Vec::new();
    for k in knobs {
        match &k.spec {
            KnobSpec::Choice(choices) => {
                if level > 0 {
                    continue;
                }
                for c in choices {
                    let v = KnobValue::Str(c.clone());
                    if best.get(&k.name) != Some(&v) {
                        let mut p = best.clone();
                        p.insert(k.name.clone(), v);
                        out.push(p);
                    }
                }
            }
            spec => {
                let u = best
                    .get(&k.name)
                    .and_then(|v| knobs::to_unit(spec, v))
                    .unwrap_or(0.5);
                for sign in [1.0, -1.0] {
                    let target = u + sign * step;
                    if !(0.0..=1.0).contains(&target) {
                        continue;
                    }
                    if let Some(v) = knobs::from_unit(spec, target)
                        && best.get(&k.name) != Some(&v)
                    {
                        let mut p = best.clone();
                        p.insert(k.name.clone(), v);
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

fn random_point(knobs: &[Knob], rng: &mut SplitMix64) -> Point {
    let mut p = Point::new();
    for k in knobs {
        let v = match &k.spec {
            KnobSpec::Choice(c) => KnobValue::Str(c[rng.below(c.len() as u64) as usize].clone()),
            spec => match knobs::from_unit(spec, rng.next_f64()) {
                Some(v) => v,
                None => continue,
            },
        };
        p.insert(k.name.clone(), v);
    }
    p
}

fn random_unevaluated(
    knobs: &[Knob],
    best: &Point,
    evaluated: &BTreeSet<String>,
    rng: &mut SplitMix64,
) -> Option<Point> {
    if knobs.is_empty() {
        return None;
    }
    for _ in 0..500 {
        let p = random_point(knobs, rng);
        if &p != best && !evaluated.contains(&knobs::key(&p)) {
            return Some(p);
        }
    }
    None
}

fn describe(
    brief: &Brief,
    history: &[IterationRecord],
    s: &Surrogate,
    best: &Point,
    point: Point,
    explored: bool,
) -> Plan {
    let dir = brief.metric.direction;
    let (y_best, _, _) = s.predict(best);
    let (m, sd, weights) = s.predict(&point);
    let effect = gain(dir, y_best - m);
    // Honest uncertainty: never claim to be more precise than the surrogate
    // has actually been. The typical past miss (log scale) is a floor, which
    // keeps the builtin's predictions calibrated for the mismatch red light.
    let misses: Vec<f64> = history
        .iter()
        .filter_map(|r| crate::redlight::prediction_parts(r, dir))
        .map(|(meas, _, pred, _)| (meas - pred).powi(2))
        .collect();
    let floor = if misses.is_empty() {
        0.0
    } else {
        (misses.iter().sum::<f64>() / misses.len() as f64).sqrt()
    };
    let sd_log = sd.max(floor);
    // Plans state uncertainty as a relative gain; map the log-scale sd by the
    // slope of the gain at the predicted point (delta method).
    let sd = sd_log
        * match dir {
            Direction::Minimize => 1.0 - effect,
            Direction::Maximize => 1.0 + effect,
        }
        .abs();
    let mut axes = Vec::new();
    let mut moves = Vec::new();
    for k in &brief.knobs {
        let (from, to) = (best.get(&k.name), point.get(&k.name));
        if from == to {
            continue;
        }
        let from_text = from
            .map(ToString::to_string)
            .unwrap_or_else(|| "unset".into());
        let to_text = to
            .map(ToString::to_string)
            .unwrap_or_else(|| "unset".into());
        moves.push(format!("{} {from_text} → {to_text}", k.name));
        let (direction, step) = match (&k.spec, from, to) {
            (KnobSpec::Choice(_), _, Some(v)) => (v.to_string(), None),
            (spec, Some(a), Some(b)) => match (knobs::to_unit(spec, a), knobs::to_unit(spec, b)) {
                (Some(u), Some(v)) => (
                    if v > u { "up" } else { "down" }.to_string(),
                    Some(((v - u).abs() * 1e4).round() / 1e4),
                ),
                _ => ("set".into(), None),
            },
            _ => ("set".into(), None),
        };
        axes.push(Axis {
            name: k.name.clone(),
            direction,
            step,
        });
    }
    let near = weights.iter().filter(|w| **w > 0.1).count();
    let mut cites: Vec<(f64, u32)> = s
        .obs
        .iter()
        .zip(&weights)
        .map(|(o, w)| (*w, o.iteration))
        .filter(|(w, _)| *w > 0.05)
        .collect();
    cites.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut cited: BTreeSet<u32> = cites.into_iter().take(3).map(|(_, i)| i).collect();
    cited.insert(best_iteration(history));
    // The hypothesis says what is tried; the surrogate's guess is the plan's
    // prediction (predicted_effect, predicted_sd), stated beside it, not in it.
    // The knobs left as they are complete the point, so that no two points
    // read the same (a falsified hypothesis must not bar another point).
    let kept: Vec<String> = brief
        .knobs
        .iter()
        .filter(|k| best.get(&k.name) == point.get(&k.name))
        .filter_map(|k| point.get(&k.name).map(|v| format!("{}={v}", k.name)))
        .collect();
    let tried = if kept.is_empty() {
        moves.join(", ")
    } else {
        format!("{} with {}", moves.join(", "), kept.join(", "))
    };
    let hypothesis = if explored {
        format!("Exploration: {tried}")
    } else {
        tried
    };
    let basis = if explored {
        "a point far from everything measured".to_string()
    } else {
        format!(
            "a step from the best; the surrogate fits {} measurement(s), {near} nearby",
            s.obs.len()
        )
    };
    Plan {
        hypothesis,
        change: format!("set {} in {} ({basis})", moves.join(", "), brief.knobs_file),
        cites: cited.into_iter().collect(),
        axes,
        predicted_effect: effect,
        predicted_sd: sd,
        knobs: point,
    }
}

/// The iteration whose point is the current best (0 for the baseline).
pub fn best_iteration(history: &[IterationRecord]) -> u32 {
    history
        .iter()
        .rev()
        .find(|r| r.verdict == Verdict::Keep)
        .map(|r| r.iteration)
        .unwrap_or(0)
}

/// LEARN for the builtin driver: lessons are stated from the numbers only.
/// A pattern is named after the knobs a move touched, so a later move on the
/// same knobs replaces its lesson instead of contradicting it ("TILE up
/// helps" beside "TILE down helps" said nothing).
pub fn learn(plan: &Plan, rec: &IterationRecord) -> LearnResult {
    let knobs_moved: Vec<&str> = plan.axes.iter().map(|a| a.name.as_str()).collect();
    let name = if knobs_moved.is_empty() {
        "this change".to_string()
    } else {
        knobs_moved.join(" + ")
    };
    let moves = plan
        .hypothesis
        .strip_prefix("Exploration: ")
        .unwrap_or(&plan.hypothesis);
    let moves = moves.split(" with ").next().unwrap_or(moves);
    let point = knobs::key(&plan.knobs);
    let measured = rec.effect_text();
    let mut out = LearnResult::default();
    match rec.verdict {
        Verdict::Keep => {
            out.patterns.push(Pattern {
                name,
                lesson: format!("{moves} helped: measured {measured}"),
            });
            out.next = Some(format!("Refine around {point} with smaller steps."));
        }
        Verdict::Discard => match rec.discard_kind() {
            Some(crate::model::DiscardKind::Inconclusive) => {
                out.next = Some(format!(
                    "{point} was inconclusive ({measured}): it may be measured once more."
                ));
            }
            kind => {
                let why = if kind == Some(crate::model::DiscardKind::Futile) {
                    "cannot reach the smallest gain this setup sees"
                } else {
                    "is worse than the best so far"
                };
                out.falsified = Some(format!("{point} {why} ({measured})"));
                if kind == Some(crate::model::DiscardKind::Worse) {
                    out.patterns.push(Pattern {
                        name,
                        lesson: format!("{moves} hurt: measured {measured}"),
                    });
                }
                out.next = Some("Try another direction, or smaller steps around the best.".into());
            }
        },
        Verdict::Crash | Verdict::Invalid => {
            // Say what failed: a guard, the build, the measurement.
            let what = match rec.guards.iter().find(|g| !g.ok) {
                Some(g) => format!("the guard `{}` fails", g.command),
                None if rec.verdict == Verdict::Crash => "the measurement fails".to_string(),
                None => "the candidate is invalid".to_string(),
            };
            out.patterns.push(Pattern {
                name: format!("{point} fails"),
                lesson: format!("at {point} {what}: {}", rec.reason),
            });
            out.next = Some("Avoid this region of the knob space.".into());
        }
        Verdict::Blocked | Verdict::Baseline => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{Comparison, Pair};
    use crate::history::IterationRecord;

    fn brief() -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  TILE: { int: [1, 256], log: true, default: 4 }\n  ORDER: { choice: [ijk, ikj] }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap()
    }

    /// A synthetic landscape: best at TILE=32 with ORDER=ikj.
    fn landscape(p: &Point) -> f64 {
        let tile = match p.get("TILE") {
            Some(KnobValue::Int(t)) => *t as f64,
            _ => 4.0,
        };
        let order = if p.get("ORDER") == Some(&KnobValue::Str("ikj".into())) {
            0.7
        } else {
            1.0
        };
        100.0 * order * (1.0 + 0.3 * ((tile / 32.0).ln()).powi(2))
    }

    fn simulate(seed: u64, iterations: u32) -> (Vec<IterationRecord>, Point) {
        let b = brief();
        let mut best: Point = Point::new();
        best.insert("TILE".into(), KnobValue::Int(4));
        let mut base = IterationRecord::new(0, Verdict::Baseline);
        base.knobs = best.clone();
        base.calibration = Some(crate::eval::Calibration {
            pairs: vec![],
            median: landscape(&best),
            run_sd: 0.01,
            noise_sd: 0.01,
            mean_d: 0.0,
            pairs_per_decision: 5,
            theta1: 0.01,
            alpha_look: None,
            advice: None,
        });
        let mut history = vec![base];
        for i in 1..=iterations {
            let Some(plan) = plan(&b, &history, &best, seed, i, 0.01) else {
                break;
            };
            assert!(
                crate::plan::validate(&plan, &history, i).is_ok(),
                "{plan:?}"
            );
            let (vb, vc) = (landscape(&best), landscape(&plan.knobs));
            let d = vb.ln() - vc.ln();
            let keep = d > 0.01;
            let mut r = IterationRecord::new(
                i,
                if keep {
                    Verdict::Keep
                } else {
                    Verdict::Discard
                },
            );
            r.knobs = plan.knobs.clone();
            r.hypothesis = plan.hypothesis.clone();
            r.measured = Some(Comparison {
                pairs: vec![Pair {
                    base: vb,
                    cand: vc,
                    cand_first: false,
                    d,
                }],
                base_median: vb,
                cand_median: vc,
                effect: gain(Direction::Minimize, d),
                ci: (0.0, 0.0),
                p: 0.5,
                looks: 1,
                theta1: 0.01,
                alpha: 0.05,
                delta0: 0.0,
                rule: String::new(),
                alpha_look: 0.018,
                s_h: 0.01,
                noise_changed: false,
                d_mean: d,
                d_ci: (d, d),
            });
            if keep {
                best = plan.knobs.clone();
            }
            history.push(r);
        }
        (history, best)
    }

    #[test]
    fn never_repeats_a_point_and_converges() {
        let (history, best) = simulate(7, 20);
        let keys: Vec<String> = history.iter().map(|r| knobs::key(&r.knobs)).collect();
        let unique: BTreeSet<&String> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "repeated a point: {keys:?}");
        let start = landscape(&history[0].knobs);
        assert!(
            landscape(&best) < 0.8 * start,
            "best {best:?} = {}",
            landscape(&best)
        );
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a: Vec<String> = simulate(3, 10)
            .0
            .iter()
            .map(|r| knobs::key(&r.knobs))
            .collect();
        let b: Vec<String> = simulate(3, 10)
            .0
            .iter()
            .map(|r| knobs::key(&r.knobs))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn exhausts_a_tiny_space() {
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  A: { choice: [x, y] }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let mut best = Point::new();
        best.insert("A".into(), KnobValue::Str("x".into()));
        let mut h0 = IterationRecord::new(0, Verdict::Baseline);
        h0.knobs = best.clone();
        let p = plan(&b, &[h0.clone()], &best, 1, 1, 0.01).unwrap();
        assert_eq!(p.knobs.get("A"), Some(&KnobValue::Str("y".into())));
        let mut h1 = IterationRecord::new(1, Verdict::Discard);
        h1.knobs = p.knobs;
        assert!(plan(&b, &[h0, h1], &best, 1, 2, 0.01).is_none());
    }

    #[test]
    fn hypotheses_say_what_is_tried_and_lessons_do_not_contradict() {
        let (history, _) = simulate(5, 12);
        for r in &history[1..] {
            // The point tried, never the surrogate's guess.
            assert!(!r.hypothesis.contains("predict"), "{}", r.hypothesis);
            assert!(!r.hypothesis.contains('%'), "{}", r.hypothesis);
            assert!(r.hypothesis.contains("TILE") || r.hypothesis.contains("ORDER"));
        }
        // A move on TILE is named "TILE" whether it helped or hurt, so the later
        // lesson replaces the earlier one instead of contradicting it.
        let b = brief();
        let mut best = Point::new();
        best.insert("TILE".into(), KnobValue::Int(4));
        best.insert("ORDER".into(), KnobValue::Str("ijk".into()));
        let mut h0 = IterationRecord::new(0, Verdict::Baseline);
        h0.knobs = best.clone();
        let plan = plan(&b, &[h0], &best, 1, 1, 0.01).unwrap();
        let moved: Vec<&str> = plan.axes.iter().map(|a| a.name.as_str()).collect();
        assert!(plan.hypothesis.contains(" with "), "{}", plan.hypothesis);
        let mut kept = history[1].clone();
        kept.verdict = Verdict::Keep;
        let mut hurt = kept.clone();
        hurt.verdict = Verdict::Discard;
        if let Some(m) = hurt.measured.as_mut() {
            m.effect = -0.2;
            m.ci = (-0.3, -0.1);
        }
        let a = learn(&plan, &kept);
        let z = learn(&plan, &hurt);
        assert_eq!(a.patterns[0].name, moved.join(" + "));
        assert_eq!(z.patterns[0].name, a.patterns[0].name);
        assert!(a.patterns[0].lesson.contains("helped"), "{:?}", a.patterns);
        assert!(z.patterns[0].lesson.contains("hurt"), "{:?}", z.patterns);
        // A failed guard is named as the guard failing.
        let mut failed = IterationRecord::new(3, Verdict::Invalid);
        failed.reason = "guard failed".into();
        failed.guards = vec![crate::model::GuardResult {
            command: "./test.sh".into(),
            ok: false,
            exit_code: Some(1),
            seconds: 0.1,
        }];
        let l = learn(&plan, &failed);
        assert!(
            l.patterns[0].lesson.contains("the guard `./test.sh` fails"),
            "{:?}",
            l.patterns
        );
    }
}
