//! The builtin main agent: a deterministic knob search.
//!
//! It reads the whole history, fits a Gaussian process to every timed run
//! (`surrogate.rs`) and proposes the untried point with the largest
//! expected improvement over the best beyond half of θ₁ (a gain smaller
//! than that cannot be kept, so measuring it buys nothing) per second of
//! measuring it: a second Gaussian process predicts each point's run time
//! from the runs timed so far (`cost.rs`), since a night is hours, not a
//! count of runs. Expected
//! improvement weighs predicted gain against uncertainty: far, unmeasured
//! regions are explored while the model is unsure about them, and a point
//! predicted much worse than the best with a tight interval is never
//! proposed: when no untried point has a real chance
//! ([`MIN_CHANCE`]) of a gain of θ₁/2, the search says it is exhausted
//! instead of spending the night on points it expects to lose.
//! The first decisions are ranked only near the start, in a region that
//! doubles with each decision measured ([`region`]): with nothing measured,
//! expected improvement alone would bet the first decision on the far
//! corner.
//! Before it says so it **sweeps**: a smooth model cannot see a narrow win
//! (one setting of a choice knob in a small region) until a point lands in
//! it, so up to [`SWEEP`] times since the last keep it proposes the untried
//! point farthest from everything measured (per second of its run), marked for the runner's
//! one-run screen (`eval::screen`); only a clear gain there is tested in
//! full. On the search benchmark's plateau this took ooda's nights from 65%
//! of the optimum (never finding the well) to 90% at 3% noise.
//! The surrogate also supplies every plan's predicted effect and
//! uncertainty, so builtin plans are held to the same "make a falsifiable
//! prediction" rule as an LLM's.

pub mod cost;
pub mod surrogate;

use std::collections::BTreeSet;

use crate::archive::history::{IterationRecord, Verdict};
use crate::brief::points::{self, Point};
use crate::brief::{Brief, Direction, Knob, KnobSpec, KnobValue};
use crate::driver::agent::answers::{Axis, LearnResult, Pattern, Plan};
use crate::driver::builtin::cost::Cost;
use crate::driver::builtin::surrogate::Surrogate;
use crate::driver::{Driver, Execution, Lesson, Proposal, Step};
use crate::error::Result;
use crate::eval::gain;
use crate::events::Event;
use crate::model::Cut;
use crate::stats::SplitMix64;

/// The least chance of a gain of θ₁/2 a point needs to be measured.
pub const MIN_CHANCE: f64 = 0.02;
/// Sweep points the search may propose since the last keep once its model
/// sees nothing worth a full test (stalled or exhausted) before it stops
/// (the default of `defaults.sweep`): one run each when screened out, so
/// about the runs of four to eight full decisions. Measured with the search
/// benchmark's plateau (`benches/search/run.sh --only plateau`, 60 seeds,
/// nights of at most 400 runs): with 40 ooda's nights reached 81.0% of the
/// optimum at 3% noise and 70.2% at 15%, below Optuna's TPE at the same
/// runs (88.3%, 80.5%), since most nights stopped with a third of their
/// runs unspent; with 100, 90.0% and 76.9% against TPE's 89.5% and 81.4%
/// at the longer nights (not worse: the intervals of the difference span
/// zero). More sweep points cost runs only in a night whose model has run
/// out of ideas.
pub const SWEEP: usize = 100;
/// Spaces with at most this many points are searched exhaustively by the
/// acquisition rule; larger ones through a seeded sample of them.
const ENUMERATE: usize = 6000;
/// Random points in the sample of a large space.
const SAMPLED: usize = 1500;
/// Values per knob on the lines through the best in the sample.
const LINE_VALUES: usize = 33;
const FIRST_STEP: f64 = 0.25;
const STEP_LEVELS: i32 = 7;

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

/// The knob point after the last iteration: the last keep's, else the
/// baseline's.
pub fn current_point(history: &[IterationRecord]) -> Point {
    history
        .iter()
        .rev()
        .find(|r| r.verdict == Verdict::Keep || r.verdict == Verdict::Baseline)
        .map(|r| r.knobs.clone())
        .unwrap_or_default()
}

/// Every decision of the archive as an observation of f(cand) − f(base),
/// f the log metric oriented so that lower is better: the mean paired log
/// ratio, with the variance of that mean under the pooled noise of a pair.
fn observations(history: &[IterationRecord], noise_sd: f64) -> Vec<surrogate::Observation> {
    let pair_var = noise_sd.max(0.004).powi(2);
    history
        .iter()
        .zip(base_points(history))
        .filter_map(|(r, base)| {
            let m = r.measured.as_ref()?;
            let n = m.pairs.len().max(1) as f64;
            // `Pair::d` is positive when the candidate is better.
            let d = if m.pairs.is_empty() {
                -m.d_mean
            } else {
                -m.pairs.iter().map(|p| p.d).sum::<f64>() / n
            };
            d.is_finite().then(|| surrogate::Observation {
                cand: r.knobs.clone(),
                base,
                d,
                var: pair_var / n,
                iteration: r.iteration,
            })
        })
        .collect()
}

/// The builtin main agent: the knob search below, and lessons stated from
/// the numbers.
pub struct Builtin;

impl Driver for Builtin {
    fn name(&self) -> String {
        "builtin".into()
    }

    fn plan(&self, t: &Step, best: &Point) -> Result<Proposal> {
        // The search fits its surrogate to the newest decisions and keeps
        // every settled point out: it reads the whole archive.
        let history = t.history.all()?;
        let proposal = plan(
            t.brief,
            history,
            best,
            t.seed,
            t.iteration,
            t.orientation.noise_sd(),
            t.orientation.theta1,
            t.config.defaults.stall_after,
            t.config.defaults.sweep as usize,
        );
        let plan = match proposal {
            Ok(plan) => plan,
            Err(why) => {
                let what = match why {
                    Exhausted::Settled => "every point of the knob space is settled (kept, falsified, failing or inconclusive twice)".to_string(),
                    Exhausted::NothingLikely { untried, best_chance } => format!(
                        "no untried point is worth measuring: the surrogate gives none of the {untried} untried points it ranked a {:.0}% chance of beating the best by θ₁/2 ({:.1}%; the likeliest has {:.1}%)",
                        MIN_CHANCE * 100.0,
                        50.0 * t.orientation.theta1,
                        best_chance * 100.0
                    ),
                };
                let allowance = t.config.defaults.sweep as usize;
                let swept = if allowance > 0 && sweeps_left(history, allowance) == 0 {
                    format!(
                        ", and the {allowance} points its sweep proposed since the last keep were none of them kept"
                    )
                } else {
                    String::new()
                };
                return Ok(Proposal::Exhausted {
                    detail: format!(
                        "{what}{swept} ({} iterations); the best is iteration {}",
                        history.len().saturating_sub(1),
                        best_iteration(history)
                    ),
                });
            }
        };
        // The search never proposes what the validator refuses; if it ever
        // did, the iteration says so instead of measuring it.
        let rejected =
            match crate::driver::agent::answers::validate(&plan, t.history.facts(), t.iteration) {
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
            breach: None,
        })
    }

    fn execute(&self, _: &Step, _: &Plan) -> Result<Execution> {
        Ok(Execution::default())
    }

    fn learn(&self, _: &Step, plan: &Plan, rec: &IterationRecord, _: bool) -> Result<Lesson> {
        Ok(Lesson {
            learned: learn(plan, rec),
            calls: Vec::new(),
            breach: None,
        })
    }

    fn edits_files(&self) -> bool {
        false
    }
}

/// Why the search has nothing to propose.
#[derive(Debug, Clone, PartialEq)]
pub enum Exhausted {
    /// Every point of the space is settled.
    Settled,
    /// Untried points remain, but none of those ranked (the whole space when
    /// it is small, else the sample [`candidates`] draws) has a
    /// [`MIN_CHANCE`] of a gain of θ₁/2.
    NothingLikely { untried: usize, best_chance: f64 },
}

// The search's whole input, each a plain value the benchmark and tests set.
#[allow(clippy::too_many_arguments)]
/// The point to try next, or why there is none. `noise_sd` is the noise of
/// one pair's log ratio, `theta1` the minimum detectable gain in force;
/// after `stall_after` decisions without a keep, or when no point is worth
/// a full test, the search sweeps (screened points) before it gives up.
pub fn plan(
    brief: &Brief,
    history: &[IterationRecord],
    best: &Point,
    seed: u64,
    iteration: u32,
    noise_sd: f64,
    theta1: f64,
    stall_after: u32,
    sweep_allowance: usize,
) -> std::result::Result<Plan, Exhausted> {
    let knobs = &brief.knobs;
    let surrogate = Surrogate::fit(knobs, observations(history, noise_sd));
    let cost = Cost::of(knobs, history, best);
    let may_sweep = sweeps_left(history, sweep_allowance) > 0;
    let stalled = crate::eval::redlight::plateau_length(crate::eval::redlight::window(history))
        >= stall_after as usize;
    // Before a stall is swept or stops the search: each knob's best
    // measured value around the best, together (they may interact).
    if stalled && let Some(p) = refine(brief, history, &surrogate, best) {
        return Ok(p);
    }
    if may_sweep && stalled {
        // Stalled: a sweep point if one is left, else the model's own pick.
        return match sweep(brief, history, &surrogate, &cost, best, seed, iteration) {
            Some(p) => Ok(p),
            None => acquire(
                brief, history, &surrogate, &cost, best, seed, iteration, theta1,
            ),
        };
    }
    match acquire(
        brief, history, &surrogate, &cost, best, seed, iteration, theta1,
    ) {
        Err(why) => match refine(brief, history, &surrogate, best) {
            Some(p) => Ok(p),
            None if may_sweep => {
                sweep(brief, history, &surrogate, &cost, best, seed, iteration).ok_or(why)
            }
            None => Err(why),
        },
        other => other,
    }
}

/// Coordinate refinement: the best point with each knob at the value whose
/// own one-knob move from it measured best (when that beat staying by a
/// quarter of θ₁ at least), if
/// two knobs or more have one and that point was never tried, with the
/// knobs it moves.
///
/// Why: one-knob moves that each measured a little better but too little to
/// keep say nothing of the two together, and the surrogate, which adds
/// knobs' effects, does not expect more of them either. SQLite's WAL
/// journal and `synchronous=normal` each measured a small gain and were
/// never tried together; together they were a further +20%. Trying the
/// combination once before the search stalls measures such an interaction.
pub fn refinement(
    brief: &Brief,
    history: &[IterationRecord],
    best: &Point,
) -> Option<(Point, Vec<String>)> {
    let bases = base_points(history);
    let mut point = best.clone();
    let mut moved = Vec::new();
    for knob in &brief.knobs {
        let mut top: Option<(f64, &KnobValue)> = None;
        for (r, base) in history.iter().zip(&bases) {
            let Some(m) = &r.measured else { continue };
            // Measured against this best, in full pairs, one knob apart.
            if base != best || r.screened() || r.knobs.is_empty() {
                continue;
            }
            let mut apart = brief
                .knobs
                .iter()
                .filter(|k| r.knobs.get(&k.name) != best.get(&k.name));
            let (Some(only), None) = (apart.next(), apart.next()) else {
                continue;
            };
            // Better than staying by a quarter of θ₁ at least: noise alone
            // rarely measures that much, and a move's own gain below θ₁
            // (futile alone) says nothing of it with another knob.
            if only.name == knob.name
                && m.effect >= m.theta1 / 4.0
                && m.effect > 0.0
                && top.is_none_or(|(e, _)| m.effect > e)
                && let Some(v) = r.knobs.get(&knob.name)
            {
                top = Some((m.effect, v));
            }
        }
        if let Some((_, v)) = top {
            point.insert(knob.name.clone(), v.clone());
            moved.push(knob.name.clone());
        }
    }
    let key = points::key(&point);
    let tried = history
        .iter()
        .any(|r| !r.knobs.is_empty() && points::key(&r.knobs) == key);
    (moved.len() >= 2 && !tried).then_some((point, moved))
}

/// [`refinement`] as a plan.
fn refine(
    brief: &Brief,
    history: &[IterationRecord],
    surrogate: &Surrogate,
    best: &Point,
) -> Option<Plan> {
    let (point, moved) = refinement(brief, history, best)?;
    Some(labelled(
        describe_at(brief, history, surrogate, best, point),
        "Coordinate refinement",
        &format!(
            "{} each measured better alone from the best, too little to keep, and were never measured together: knobs can interact",
            moved.join(" and ")
        ),
    ))
}

/// [`describe`] of `point`, with the surrogate's prediction of it against
/// the best.
fn describe_at(
    brief: &Brief,
    history: &[IterationRecord],
    surrogate: &Surrogate,
    best: &Point,
    point: Point,
) -> Plan {
    let d = surrogate.difference(&point, &surrogate.anchor(best));
    describe(brief, history, surrogate, best, point, d)
}

/// A described plan proposed for another reason than the model's pick:
/// its hypothesis says which (`Sweep: …`), its change why.
fn labelled(mut plan: Plan, label: &str, why: &str) -> Plan {
    plan.hypothesis = format!(
        "{label}: {}",
        plan.hypothesis
            .strip_prefix("Exploration: ")
            .unwrap_or(&plan.hypothesis)
    );
    plan.change = format!("{}; {why}", plan.change);
    plan
}

/// Sweep points left before the search stops: the `allowance` less those
/// proposed since the last keep.
pub fn sweeps_left(history: &[IterationRecord], allowance: usize) -> usize {
    let swept = crate::eval::redlight::since_keep(history)
        .filter(|r| r.screen)
        .count();
    allowance.saturating_sub(swept)
}

/// Whether the search would sweep rather than stop: allowance left, and a
/// point not yet tried (a space small enough to enumerate can run out).
pub fn can_sweep(brief: &Brief, history: &[IterationRecord], allowance: usize) -> bool {
    sweeps_left(history, allowance) > 0
        && space_size(&brief.knobs).is_none_or(|n| {
            let tried: BTreeSet<String> = history
                .iter()
                .filter(|r| !r.knobs.is_empty())
                .map(|r| points::key(&r.knobs))
                .collect();
            tried.len() < n
        })
}

/// The untried point farthest from every point measured so far for the
/// time its run takes, to be screened: where a narrow win the model cannot
/// see is likeliest to hide.
fn sweep(
    brief: &Brief,
    history: &[IterationRecord],
    surrogate: &Surrogate,
    cost: &Cost,
    best: &Point,
    seed: u64,
    iteration: u32,
) -> Option<Plan> {
    let knobs = &brief.knobs;
    let tried: Vec<&Point> = history
        .iter()
        .filter(|r| !r.knobs.is_empty())
        .map(|r| &r.knobs)
        .chain(std::iter::once(best))
        .collect();
    let mut rng =
        SplitMix64::new(seed ^ u64::from(iteration).wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x5EE9);
    let mut far: Option<(f64, Point)> = None;
    for p in candidates(knobs, best, &mut rng) {
        // In unit knob space, another choice a whole range away.
        let nearest = tried
            .iter()
            .map(|t| surrogate::distance(knobs, &p, t, 1.0))
            .fold(f64::INFINITY, f64::min);
        // Per second of its one run: a far point twice as slow to run as
        // another must be twice as far from everything measured to be
        // screened first.
        let worth = nearest / cost.run(&p);
        if nearest > 0.0 && far.as_ref().is_none_or(|(w, _)| worth > *w) {
            far = Some((worth, p));
        }
    }
    let (_, point) = far?;
    let mut plan = labelled(
        describe_at(brief, history, surrogate, best, point),
        "Sweep",
        "the model sees no likely gain left, so the point farthest from every measured one is screened (one run) before the search stops",
    );
    plan.screen = true;
    Some(plan)
}

/// The untried point with the largest expected improvement per second of
/// a pair measuring it, or why there is none worth a full test.
#[allow(clippy::too_many_arguments)]
fn acquire(
    brief: &Brief,
    history: &[IterationRecord],
    surrogate: &Surrogate,
    cost: &Cost,
    best: &Point,
    seed: u64,
    iteration: u32,
    theta1: f64,
) -> std::result::Result<Plan, Exhausted> {
    let knobs = &brief.knobs;
    // Settled points are never proposed again; an inconclusive one may be,
    // once (the validator's rule, so a builtin plan is never refused).
    let settled = crate::driver::agent::answers::settled_points(
        &crate::archive::history::fact::Fact::all_of(history),
    );
    let best_key = points::key(best);
    let mut rng = SplitMix64::new(seed ^ u64::from(iteration).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let untried: Vec<Point> = candidates(knobs, best, &mut rng)
        .into_iter()
        .filter(|p| {
            let k = points::key(p);
            k != best_key && !settled.contains(&crate::archive::history::fact::hash(k.as_bytes()))
        })
        .collect();
    if untried.is_empty() {
        return Err(Exhausted::Settled);
    }
    let margin = 0.5 * theta1.max(0.0).ln_1p();
    let mut chosen: Option<(f64, &Point, surrogate::Prediction)> = None;
    let mut best_chance: f64 = 0.0;
    let anchor = surrogate.anchor(best);
    // Points where the candidate itself crashed (out of memory, a build
    // that fails): they have no measurement for the model, but their
    // neighbours most likely crash the same way, so a point next to one is
    // worth little. Not a failed guard: a guard's edge (a compression
    // ratio floor) is where the best points often are, and the search
    // benchmark's zstd nights lost 9 points of the optimum when its
    // neighbours were avoided too.
    let failed: Vec<&Point> = history
        .iter()
        .filter(|r| r.verdict == Verdict::Crash && !r.base_failed && !r.knobs.is_empty())
        .map(|r| &r.knobs)
        .collect();
    // The first decisions stay near the start (see [`region`]); when
    // nothing in the region has a chance, the whole space is ranked.
    let radius = region(history);
    for near in [true, false] {
        if !near && (chosen.is_some() || radius >= 1.0) {
            break;
        }
        for p in &untried {
            if near && !within(knobs, p, best, radius) {
                continue;
            }
            let d = surrogate.difference(p, &anchor);
            let chance = surrogate::chance_of_gain(d, margin);
            best_chance = best_chance.max(chance);
            if chance < MIN_CHANCE {
                continue;
            }
            // Per second: a pair at `p` costs one run of it and one of the
            // best.
            let ei = surrogate::expected_improvement(d, margin)
                * away_from_failures(knobs, p, &failed)
                / cost.pair(p);
            if chosen.is_none_or(|(e, _, _)| ei > e) {
                chosen = Some((ei, p, d));
            }
        }
    }
    match chosen {
        Some((_, point, d)) => Ok(describe(brief, history, surrogate, best, point.clone(), d)),
        None => Err(Exhausted::NothingLikely {
            untried: untried.len(),
            best_chance,
        }),
    }
}

/// How far from the best, as a share of each numeric knob's range, the
/// acquisition looks first: [`FIRST_STEP`] before any candidate was
/// decided on its measurements (an early discard counts, a screen and a
/// crash do not), twice that after one, the whole space after two.
///
/// Why: with nothing measured but the start, the model is equally unsure
/// everywhere and expected improvement is largest where it is unsure
/// longest, the far corner: every knob at the other end of its range. That
/// bets the night's first decision (6 to 48 runs) on the corner, which is
/// wasted when the optimum is near the default (it usually is: defaults are
/// chosen) and slow when far corners are slow to run (SQLite's were 3 to 7
/// times slower than its best). A step of a quarter of the range around the
/// start is a real move, the model has a measured direction after it, and
/// two decisions later the whole space is open again.
fn region(history: &[IterationRecord]) -> f64 {
    let measured = history
        .iter()
        .filter(|r| r.iteration > 0 && r.measured.is_some() && !r.screened() && !r.knobs.is_empty())
        .count();
    (FIRST_STEP * 2f64.powi(measured.min(8) as i32)).min(1.0)
}

/// Whether every numeric knob of `p` is within `radius` (a share of its
/// range) of `best`'s. Choice knobs are not bounded: each of their values
/// is one step away.
fn within(knobs: &[Knob], p: &Point, best: &Point, radius: f64) -> bool {
    knobs.iter().all(|k| {
        if matches!(k.spec, KnobSpec::Choice(_)) {
            return true;
        }
        let unit = |q: &Point| q.get(&k.name).and_then(|v| points::to_unit(&k.spec, v));
        match (unit(p), unit(best)) {
            (Some(a), Some(b)) => (a - b).abs() <= radius + 1e-9,
            _ => true,
        }
    })
}

/// How far `p` is from the nearest point that crashed, as a weight in
/// [0, 1): 0 at a failed point, ½ at a seventh of a knob's range from it,
/// nearly 1 past a third (a different choice is a whole range away).
fn away_from_failures(knobs: &[Knob], p: &Point, failed: &[&Point]) -> f64 {
    const SCALE: f64 = 0.12;
    failed
        .iter()
        .map(|f| {
            let d = surrogate::distance(knobs, p, f, 1.0);
            1.0 - (-(d / SCALE).powi(2) / 2.0).exp()
        })
        .fold(1.0, f64::min)
}

/// How many points the space has, if it is finite and small enough to list.
fn space_size(knobs: &[Knob]) -> Option<usize> {
    knobs.iter().try_fold(1usize, |acc, k| {
        let n = match &k.spec {
            KnobSpec::Choice(c) => c.len(),
            KnobSpec::Int { lo, hi, .. } => {
                usize::try_from(i128::from(*hi) - i128::from(*lo) + 1).ok()?
            }
            KnobSpec::Float { .. } => return None,
        };
        acc.checked_mul(n).filter(|&t| t <= ENUMERATE)
    })
}

/// The points the acquisition rule ranks: the whole space when it is small,
/// else steps of every size around the best, lines through it along each
/// knob, and a seeded sample of the space.
fn candidates(knobs: &[Knob], best: &Point, rng: &mut SplitMix64) -> Vec<Point> {
    if space_size(knobs).is_some() {
        let mut all = vec![Point::new()];
        for k in knobs {
            let values: Vec<KnobValue> = match &k.spec {
                KnobSpec::Choice(c) => c.iter().cloned().map(KnobValue::Str).collect(),
                KnobSpec::Int { lo, hi, .. } => (*lo..=*hi).map(KnobValue::Int).collect(),
                KnobSpec::Float { .. } => unreachable!("space_size is None with a float knob"),
            };
            all = all
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.insert(k.name.clone(), v.clone());
                        q
                    })
                })
                .collect();
        }
        return all;
    }
    let mut out: Vec<Point> = (0..STEP_LEVELS)
        .flat_map(|level| local_moves(knobs, best, level))
        .collect();
    for k in knobs {
        if let KnobSpec::Choice(_) = k.spec {
            continue;
        }
        for i in 0..LINE_VALUES {
            let u = i as f64 / (LINE_VALUES - 1) as f64;
            if let Some(v) = points::from_unit(&k.spec, u) {
                let mut p = best.clone();
                p.insert(k.name.clone(), v);
                out.push(p);
            }
        }
    }
    out.extend((0..SAMPLED).map(|_| random_point(knobs, rng)));
    let mut seen = BTreeSet::new();
    out.retain(|p| seen.insert(points::key(p)));
    out
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
                    .and_then(|v| points::to_unit(spec, v))
                    .unwrap_or(0.5);
                for sign in [1.0, -1.0] {
                    let target = u + sign * step;
                    if !(0.0..=1.0).contains(&target) {
                        continue;
                    }
                    if let Some(v) = points::from_unit(spec, target)
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
            spec => match points::from_unit(spec, rng.next_f64()) {
                Some(v) => v,
                None => continue,
            },
        };
        p.insert(k.name.clone(), v);
    }
    p
}

fn describe(
    brief: &Brief,
    history: &[IterationRecord],
    s: &Surrogate,
    best: &Point,
    point: Point,
    // The surrogate's prediction of f(point) − f(best), as ranked.
    d: surrogate::Prediction,
) -> Plan {
    let dir = brief.metric.direction;
    let effect = gain(dir, -d.mean);
    // Chosen for what the model does not know although it predicts a loss:
    // said so in the hypothesis, and not counted as a regression when it
    // comes back worse (`redlight::regressions`, where a prediction of 0
    // counts).
    let explored = d.mean > 0.0;
    // Honest uncertainty: never claim to be more precise than the surrogate
    // has actually been. The typical past miss (log scale) is a floor, which
    // keeps the builtin's predictions calibrated for the mismatch red light.
    let misses: Vec<f64> = history
        .iter()
        .filter_map(|r| crate::eval::redlight::prediction_parts(r, dir))
        .map(|(meas, _, pred, _)| (meas - pred).powi(2))
        .collect();
    let floor = if misses.is_empty() {
        0.0
    } else {
        (misses.iter().sum::<f64>() / misses.len() as f64).sqrt()
    };
    let sd_log = d.sd.max(floor);
    // Plans state uncertainty as a relative gain; map the log-scale sd by the
    // slope of the gain at the predicted point (delta method).
    let sd = sd_log
        * match dir {
            Direction::Minimize => 1.0 - effect,
            Direction::Maximize => 1.0 + effect,
        }
        .abs();
    let weights = s.similarity(&point);
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
            (spec, Some(a), Some(b)) => {
                match (points::to_unit(spec, a), points::to_unit(spec, b)) {
                    (Some(u), Some(v)) => (
                        if v > u { "up" } else { "down" }.to_string(),
                        Some(((v - u).abs() * 1e4).round() / 1e4),
                    ),
                    _ => ("set".into(), None),
                }
            }
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
        format!(
            "the surrogate is unsure here: it fits {} decision(s), {near} nearby",
            s.obs.len()
        )
    } else {
        format!(
            "the largest expected improvement; the surrogate fits {} decision(s), {near} nearby",
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
        screen: false,
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
/// helps" beside "TILE down helps" said nothing). A move of one knob
/// isolates it; a move of several is named and told as the move it was
/// (`A + B together`), never as a lesson about each of them.
pub fn learn(plan: &Plan, rec: &IterationRecord) -> LearnResult {
    let knobs_moved: Vec<&str> = plan.axes.iter().map(|a| a.name.as_str()).collect();
    let (name, whole) = match knobs_moved.as_slice() {
        [] => ("this change".to_string(), ""),
        [one] => (one.to_string(), ""),
        many => (
            format!("{} together", many.join(" + ")),
            " (the move as a whole: which of its knobs did it is not isolated)",
        ),
    };
    let moves = plan
        .hypothesis
        .strip_prefix("Exploration: ")
        .unwrap_or(&plan.hypothesis);
    let moves = moves.split(" with ").next().unwrap_or(moves);
    let point = points::key(&plan.knobs);
    let measured = rec.effect_text();
    let mut out = LearnResult::default();
    match rec.verdict {
        Verdict::Keep => {
            out.patterns.push(Pattern {
                name,
                lesson: format!("{moves} helped: measured {measured}{whole}"),
            });
            out.next = Some(format!("Refine around {point} with smaller steps."));
        }
        Verdict::Discard => match rec.discard_kind() {
            Some(crate::model::DiscardKind::Inconclusive) => {
                out.next = Some(format!(
                    "{point} was inconclusive ({measured}): it may be measured once more."
                ));
            }
            Some(crate::model::DiscardKind::BlockedByReview) => {
                // Measured, then refused for how it got there: nothing about
                // the point itself is falsified.
                out.next = Some(format!(
                    "{point} measured {measured} but was blocked by review: see its findings before trying it again."
                ));
            }
            Some(crate::model::DiscardKind::Screened) => {
                out.next = Some(format!(
                    "{point} showed no clear gain in its screening runs ({measured}): not falsified."
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
                        lesson: format!("{moves} hurt: measured {measured}{whole}"),
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
    use crate::archive::history::IterationRecord;
    use crate::eval::{Comparison, Pair};

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
        let mut start: Point = Point::new();
        start.insert("TILE".into(), KnobValue::Int(4));
        let (history, best, _) = night(&brief(), start, landscape, seed, iterations);
        (history, best)
    }

    /// The baseline record at `knobs`, measured at `median`.
    fn baseline(knobs: Point, median: f64) -> IterationRecord {
        let mut base = IterationRecord::new(0, Verdict::Baseline);
        base.knobs = knobs;
        base.calibration = Some(crate::eval::Calibration {
            pairs: vec![],
            median,
            run_sd: 0.01,
            noise_sd: 0.01,
            mean_d: 0.0,
            pairs_per_decision: 5,
            theta1: 0.01,
            alpha_look: None,
            advice: None,
        });
        base
    }

    /// `n` noiseless pairs of base `vb` against candidate `vc` (minimized),
    /// the interval the measured difference itself.
    fn measured(vb: f64, vc: f64, n: usize) -> Comparison {
        let d = vb.ln() - vc.ln();
        let effect = gain(Direction::Minimize, d);
        Comparison {
            pairs: vec![
                Pair {
                    base: vb,
                    cand: vc,
                    cand_first: false,
                    d,
                };
                n
            ],
            base_median: vb,
            cand_median: vc,
            effect,
            ci: (effect, effect),
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
            direction: None,
            seconds: None,
        }
    }

    /// The sweep allowance of a simulated night: shorter than [`SWEEP`] so
    /// that a night of a debug build stays short; the rule is the same.
    const NIGHT_SWEEP: usize = 40;

    /// A noiseless night on `f`: each decision keeps a gain above 1%, and
    /// the interval is the measured difference itself.
    fn night(
        b: &Brief,
        start: Point,
        f: impl Fn(&Point) -> f64,
        seed: u64,
        iterations: u32,
    ) -> (Vec<IterationRecord>, Point, Option<Exhausted>) {
        let mut best = start;
        let base = baseline(best.clone(), f(&best));
        let mut history = vec![base];
        for i in 1..=iterations {
            let plan = match plan(b, &history, &best, seed, i, 0.01, 0.01, 10, NIGHT_SWEEP) {
                Ok(p) => p,
                Err(why) => return (history, best, Some(why)),
            };
            assert!(
                crate::driver::agent::answers::validate(
                    &plan,
                    &crate::archive::history::fact::Fact::all_of(&history),
                    i
                )
                .is_ok(),
                "{plan:?}"
            );
            let (vb, vc) = (f(&best), f(&plan.knobs));
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
            r.screen = plan.screen;
            r.hypothesis = plan.hypothesis.clone();
            r.predicted = Some(crate::model::Prediction {
                effect: plan.predicted_effect,
                sd: plan.predicted_sd,
            });
            r.measured = Some(measured(vb, vc, 1));
            // The runner's screen: a sweep point without a gain is turned
            // away after one run (a gain passes and is kept here).
            if plan.screen && !keep {
                r.discard = Some(crate::model::DiscardKind::Screened);
            }
            if keep {
                best = plan.knobs.clone();
            }
            history.push(r);
        }
        (history, best, None)
    }

    #[test]
    fn a_point_predicted_much_worse_with_a_tight_interval_is_not_proposed() {
        // A sharp valley at X = 20, the start: every step away is worse, and
        // once the model has seen that, the far ends are sure losses.
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  X: { int: [0, 40], default: 20 }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let x = |p: &Point| match p.get("X") {
            Some(KnobValue::Int(v)) => *v as f64,
            _ => f64::NAN,
        };
        let valley = |p: &Point| 100.0 * (0.08 * (x(p) - 20.0).abs()).exp();
        let mut start = Point::new();
        start.insert("X".into(), KnobValue::Int(20));
        // With the valley's walls measured, the next point is inside them:
        // nothing past X = 10 or X = 30, where the model has seen the loss
        // grow, is worth a decision.
        let mut walls = vec![baseline(start.clone(), 100.0)];
        for (i, at) in [0i64, 10, 30, 40].into_iter().enumerate() {
            let mut p = start.clone();
            p.insert("X".into(), KnobValue::Int(at));
            let (vb, vc) = (100.0, valley(&p));
            let mut r = IterationRecord::new(i as u32 + 1, Verdict::Discard);
            r.knobs = p;
            r.measured = Some(measured(vb, vc, 3));
            walls.push(r);
        }
        let next = plan(&b, &walls, &start, 3, 5, 0.01, 0.01, 10, SWEEP).unwrap();
        assert!(
            (11.0..=29.0).contains(&x(&next.knobs)),
            "proposed {:?} predicted {:+.3} ± {:.3}",
            next.knobs,
            next.predicted_effect,
            next.predicted_sd
        );
        let (history, best, why) = night(&b, start, valley, 3, 80);
        assert_eq!(x(&best), 20.0, "the start is the valley's floor");
        // It stops by itself, having tested in full only a few points (the
        // sweep's screened points aside, one run each) ...
        let tried = history[1..].iter().filter(|r| !r.screen).count();
        // (In a space this small the sweep then screens every point left,
        // none of which its model thinks likely, screened or not.)
        match why {
            Some(Exhausted::NothingLikely { best_chance, .. }) => {
                assert!(best_chance < MIN_CHANCE, "{best_chance}");
            }
            other => panic!("{other:?} after {tried} full tests"),
        }
        assert!(history.iter().filter(|r| r.screened()).count() >= 20);
        assert!(tried < 15, "tested {tried} points in full");
        // ... and no plan it tested in full was a sure loss.
        for r in history[1..].iter().filter(|r| !r.screen) {
            let p = r.predicted.as_ref().unwrap();
            assert!(
                p.effect + 2.0 * p.sd > 0.0,
                "iteration {} predicted {:+.3} ± {:.3}",
                r.iteration,
                p.effect,
                p.sd
            );
        }
    }

    #[test]
    fn a_point_next_to_one_that_crashed_is_not_proposed() {
        // MODE=fast ran out of memory at the end of N's range. Without the
        // failure in the model, the next plan was its neighbour, N=99.
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  N: { int: [10, 100], default: 50 }\n  MODE: { choice: [slow, fast], default: slow }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let at = |n: i64, mode: &str| {
            let mut p = Point::new();
            p.insert("N".into(), KnobValue::Int(n));
            p.insert("MODE".into(), KnobValue::Str(mode.into()));
            p
        };
        let start = at(50, "slow");
        let mut history = vec![baseline(start.clone(), 100.0)];
        let mut crashed = IterationRecord::new(1, Verdict::Crash);
        crashed.knobs = at(100, "fast");
        history.push(crashed);
        let next = plan(&b, &history, &start, 1, 2, 0.01, 0.01, 10, SWEEP).unwrap();
        let n = match next.knobs.get("N") {
            Some(KnobValue::Int(v)) => *v,
            _ => unreachable!(),
        };
        let fast = next.knobs.get("MODE") == Some(&KnobValue::Str("fast".into()));
        assert!(
            !(fast && (80..=100).contains(&n)),
            "proposed {:?} beside the crash at N=100 MODE=fast",
            next.knobs
        );
    }

    #[test]
    fn never_repeats_a_point_and_converges() {
        let (history, best) = simulate(7, 20);
        let keys: Vec<String> = history.iter().map(|r| points::key(&r.knobs)).collect();
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
            .map(|r| points::key(&r.knobs))
            .collect();
        let b: Vec<String> = simulate(3, 10)
            .0
            .iter()
            .map(|r| points::key(&r.knobs))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn deterministic_for_a_seed_in_a_sampled_space() {
        // Float knobs: the candidates are a seeded sample, not the space.
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  A: { float: [0, 1], default: 0.5 }\n  B: { float: [0.01, 100], log: true, default: 1 }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let bowl = |p: &Point| {
            let f = |k: &str| match p.get(k) {
                Some(KnobValue::Float(v)) => *v,
                _ => f64::NAN,
            };
            100.0 * ((f("A") - 0.3).powi(2) + 0.1 * (f("B") / 5.0).ln().powi(2)).exp()
        };
        let start = points::initial_point(&Point::new(), &b.knobs);
        let keys = |seed| {
            night(&b, start.clone(), bowl, seed, 6)
                .0
                .iter()
                .map(|r| points::key(&r.knobs))
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(4), keys(4));
        assert_eq!(keys(4).len(), 7);
    }

    #[test]
    fn a_machine_slower_during_one_decision_changes_no_observation() {
        // The pairing cancels a slow iteration: both sides of its pairs are
        // 10% slower and the observed difference is the same.
        let (history, _) = simulate(7, 3);
        let mut slowed = history.clone();
        if let Some(m) = slowed[2].measured.as_mut() {
            for p in &mut m.pairs {
                p.base *= 1.1;
                p.cand *= 1.1;
            }
            m.base_median *= 1.1;
            m.cand_median *= 1.1;
        }
        let d = |h: &[IterationRecord]| {
            observations(h, 0.01)
                .iter()
                .map(|o| o.d)
                .collect::<Vec<_>>()
        };
        assert_eq!(d(&history), d(&slowed));
        assert_eq!(d(&history).len(), 3);
    }

    #[test]
    fn exhausts_a_tiny_space() {
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  A: { choice: [x, y] }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let mut best = Point::new();
        best.insert("A".into(), KnobValue::Str("x".into()));
        let mut h0 = IterationRecord::new(0, Verdict::Baseline);
        h0.knobs = best.clone();
        let p = plan(&b, &[h0.clone()], &best, 1, 1, 0.01, 0.01, 10, SWEEP).unwrap();
        assert_eq!(p.knobs.get("A"), Some(&KnobValue::Str("y".into())));
        let mut h1 = IterationRecord::new(1, Verdict::Discard);
        h1.knobs = p.knobs;
        assert_eq!(
            plan(&b, &[h0, h1], &best, 1, 2, 0.01, 0.01, 10, SWEEP),
            Err(Exhausted::Settled)
        );
    }

    /// Flat everywhere but a narrow well at X in 70..=72 with MODE=on: no
    /// smooth model sees it before a point lands in it.
    fn needle() -> (Brief, impl Fn(&Point) -> f64) {
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  X: { int: [0, 100], default: 10 }\n  MODE: { choice: [off, on], default: off }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let b = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let f = |p: &Point| {
            let x = match p.get("X") {
                Some(KnobValue::Int(v)) => *v,
                _ => 10,
            };
            let on = p.get("MODE") == Some(&KnobValue::Str("on".into()));
            if on && (70..=72).contains(&x) {
                60.0
            } else {
                100.0
            }
        };
        (b, f)
    }

    #[test]
    fn a_stalled_search_sweeps_the_space_it_has_not_measured_before_it_stops() {
        let (b, f) = needle();
        let start = crate::brief::points::initial_point(&Point::new(), &b.knobs);
        let (history, best, why) = night(&b, start, &f, 7, 150);
        let sweeps: Vec<&IterationRecord> = history.iter().filter(|r| r.screen).collect();
        assert!(!sweeps.is_empty());
        for r in &sweeps {
            assert!(r.hypothesis.starts_with("Sweep: "), "{}", r.hypothesis);
        }
        // Each sweep point is new, and the first lands far from everything
        // measured before it (X spans 0..100: a tenth of it at least).
        let keys: BTreeSet<String> = history.iter().map(|r| points::key(&r.knobs)).collect();
        assert_eq!(keys.len(), history.len(), "no point twice");
        let first = history.iter().position(|r| r.screen).unwrap();
        let nearest = history[..first]
            .iter()
            .map(|r| surrogate::distance(&b.knobs, &history[first].knobs, &r.knobs, 1.0))
            .fold(f64::INFINITY, f64::min);
        assert!(
            nearest >= 0.1,
            "the first sweep point is {nearest} from a measured one"
        );
        // The well is found (on this seed by the model's own pick once the
        // first decisions' region opened: its far end is where it is least
        // sure; on others by the sweep).
        assert_eq!(f(&best), 60.0, "best {best:?}");
        // Once the well is kept nothing beats it: the search stalls again,
        // sweeps at most its allowance of points more, and stops.
        let after = history
            .iter()
            .skip_while(|r| r.verdict != Verdict::Keep)
            .skip(1);
        assert!(after.filter(|r| r.screen).count() <= NIGHT_SWEEP);
        assert!(why.is_some(), "the search stops by itself");
    }

    #[test]
    fn sweeps_are_bounded_since_the_last_keep() {
        let mut h = vec![IterationRecord::new(0, Verdict::Baseline)];
        assert_eq!(sweeps_left(&h, SWEEP), SWEEP);
        for i in 1..=5 {
            let mut r = IterationRecord::new(i, Verdict::Discard);
            r.screen = i % 2 == 1;
            h.push(r);
        }
        assert_eq!(sweeps_left(&h, SWEEP), SWEEP - 3);
        assert_eq!(sweeps_left(&h, 2), 0);
        h.push(IterationRecord::new(6, Verdict::Keep));
        assert_eq!(sweeps_left(&h, SWEEP), SWEEP);
        assert_eq!(sweeps_left(&h, 0), 0, "defaults.sweep: 0 turns it off");
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
        let history0 = [h0];
        let s = Surrogate::fit(&b.knobs, observations(&history0, 0.01));
        let mut point = best.clone();
        point.insert("TILE".into(), KnobValue::Int(8));
        let d = s.difference(&point, &s.anchor(&best));
        let plan = describe(&b, &history0, &s, &best, point, d);
        let moved: Vec<&str> = plan.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(moved, ["TILE"]);
        // The knobs left as they are complete the point.
        assert!(
            plan.hypothesis.ends_with("TILE 4 → 8 with ORDER=ijk"),
            "{}",
            plan.hypothesis
        );
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

    /// A SQLite-like space of six knobs: the journal mode and the sync
    /// level each help a little alone (+0.4%, too little to keep) and a lot
    /// together (+20%); the cache and page sizes are bowls, the temp store
    /// and the locking mode small gains.
    fn sqlite() -> Brief {
        let text = "---\nmetric:\n  name: t\n  command: ./b\n  direction: minimize\nknobs:\n  JOURNAL: { choice: [delete, truncate, persist, memory, wal], default: delete }\n  SYNC: { choice: [full, extra, off, normal], default: full }\n  CACHE: { int: [100, 100000], log: true, default: 2000 }\n  TEMP: { choice: [default, file, memory], default: default }\n  PAGE: { int: [512, 65536], log: true, default: 1024 }\n  LOCKING: { choice: [normal, exclusive], default: normal }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap()
    }

    fn sqlite_time(p: &Point) -> f64 {
        let s = |k: &str| match p.get(k) {
            Some(KnobValue::Str(v)) => v.clone(),
            _ => String::new(),
        };
        let (j, y) = (s("JOURNAL"), s("SYNC"));
        let cache = match p.get("CACHE") {
            Some(KnobValue::Int(c)) => *c as f64,
            _ => 2000.0,
        };
        let mut t = 100.0;
        t *= match j.as_str() {
            "truncate" => 1.02,
            "persist" => 1.03,
            "memory" => 1.15,
            "wal" => 0.996,
            _ => 1.0,
        };
        t *= match y.as_str() {
            "extra" => 1.06,
            "off" => 1.12,
            "normal" => 0.996,
            _ => 1.0,
        };
        if j == "wal" && y == "normal" {
            t *= 0.8;
        }
        let page = match p.get("PAGE") {
            Some(KnobValue::Int(c)) => *c as f64,
            _ => 1024.0,
        };
        t *= match s("TEMP").as_str() {
            "memory" => 0.97,
            "file" => 1.01,
            _ => 1.0,
        };
        if s("LOCKING") == "exclusive" {
            t *= 0.99;
        }
        t * (1.0 + 0.02 * (cache / 5000.0).ln().powi(2))
            * (1.0 + 0.01 * (page / 4096.0).ln().powi(2))
    }

    fn sqlite_start() -> Point {
        let mut p = Point::new();
        p.insert("JOURNAL".into(), KnobValue::Str("delete".into()));
        p.insert("SYNC".into(), KnobValue::Str("full".into()));
        p.insert("CACHE".into(), KnobValue::Int(2000));
        p.insert("TEMP".into(), KnobValue::Str("default".into()));
        p.insert("PAGE".into(), KnobValue::Int(1024));
        p.insert("LOCKING".into(), KnobValue::Str("normal".into()));
        p
    }

    #[test]
    fn two_knobs_that_help_only_together_are_measured_together_before_a_stall() {
        let b = sqlite();
        let best = sqlite_start();
        let mut history = vec![baseline(best.clone(), sqlite_time(&best))];
        // One-knob moves from the best: two small gains, and losses.
        for (i, (k, v)) in [
            ("JOURNAL", "wal"),
            ("JOURNAL", "memory"),
            ("SYNC", "normal"),
            ("SYNC", "off"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut p = best.clone();
            p.insert(k.into(), KnobValue::Str(v.into()));
            let mut r = IterationRecord::new(i as u32 + 1, Verdict::Discard);
            r.measured = Some(measured(sqlite_time(&best), sqlite_time(&p), 5));
            r.knobs = p;
            history.push(r);
        }
        let (point, moved) = refinement(&b, &history, &best).expect("a refinement");
        assert_eq!(moved, ["JOURNAL", "SYNC"]);
        assert_eq!(point.get("JOURNAL"), Some(&KnobValue::Str("wal".into())));
        assert_eq!(point.get("SYNC"), Some(&KnobValue::Str("normal".into())));
        assert_eq!(point.get("CACHE"), Some(&KnobValue::Int(2000)));
        // Stalled (stall_after 2): the combination comes before any sweep.
        let p = plan(&b, &history, &best, 1, 5, 0.01, 0.01, 2, NIGHT_SWEEP).unwrap();
        assert!(
            p.hypothesis.starts_with("Coordinate refinement: "),
            "{}",
            p.hypothesis
        );
        assert_eq!(p.knobs, point);
        assert!(!p.screen);
        // Once measured, it is not proposed again.
        let mut r = IterationRecord::new(5, Verdict::Discard);
        r.measured = Some(measured(sqlite_time(&best), sqlite_time(&best), 5));
        r.knobs = point;
        history.push(r);
        assert_eq!(refinement(&b, &history, &best), None);
        // A move of two knobs at once isolates neither.
        let mut two = best.clone();
        two.insert("JOURNAL".into(), KnobValue::Str("wal".into()));
        two.insert("CACHE".into(), KnobValue::Int(4000));
        let mut r = IterationRecord::new(1, Verdict::Discard);
        r.measured = Some(measured(100.0, 99.0, 5));
        r.knobs = two;
        assert_eq!(refinement(&b, &[history[0].clone(), r], &best), None);
    }

    #[test]
    fn the_first_decisions_stay_near_the_start_then_the_space_opens() {
        // SQLite's six knobs with two landscapes: the optimum at the far
        // corner (both numeric knobs at the top of their range) and one
        // next to the start (a slightly larger cache, all else the
        // default). The first proposal moves no numeric knob more than a
        // quarter of its range on either, and both nights end at their
        // optimum.
        let b = sqlite();
        let start = sqlite_start();
        let unit = |p: &Point, name: &str| {
            let k = b.knobs.iter().find(|k| k.name == name).unwrap();
            points::to_unit(&k.spec, p.get(name).unwrap()).unwrap()
        };
        let corner =
            |p: &Point| 1.0 + (1.0 - unit(p, "CACHE")).powi(2) + (1.0 - unit(p, "PAGE")).powi(2);
        let cache_best = unit(&start, "CACHE") + 0.2;
        let near = |p: &Point| {
            let moved = ["JOURNAL", "SYNC", "TEMP", "LOCKING"]
                .iter()
                .filter(|k| p.get(**k) != start.get(**k))
                .count();
            1.0 + 2.0 * (unit(p, "CACHE") - cache_best).powi(2)
                + 2.0 * (unit(p, "PAGE") - unit(&start, "PAGE")).powi(2)
                + 0.1 * moved as f64
        };
        let far = |p: &Point| {
            ["CACHE", "PAGE"]
                .iter()
                .map(|k| (unit(p, k) - unit(&start, k)).abs())
                .fold(0.0, f64::max)
        };
        for seed in 1..=4 {
            for f in [&corner as &dyn Fn(&Point) -> f64, &near] {
                let history = vec![baseline(start.clone(), f(&start))];
                let first =
                    plan(&b, &history, &start, seed, 1, 0.01, 0.01, 10, NIGHT_SWEEP).unwrap();
                assert!(
                    far(&first.knobs) <= FIRST_STEP + 1e-9,
                    "seed {seed}: {first:?}"
                );
            }
            let (history, best, _) = night(&b, start.clone(), corner, seed, 40);
            assert!(
                corner(&best) < 1.02,
                "seed {seed}: corner night ended at {best:?} ({})",
                history.len() - 1
            );
            let (history, best, _) = night(&b, start.clone(), near, seed, 40);
            assert!(
                near(&best) < 1.02,
                "seed {seed}: near night ended at {best:?} ({})",
                history.len() - 1
            );
        }
        // After one measured decision the region doubles, after two it is
        // the whole space.
        let (history, _, _) = night(&b, start.clone(), corner, 1, 2);
        assert_eq!(region(&history[..1]), FIRST_STEP);
        assert_eq!(region(&history[..2]), 2.0 * FIRST_STEP);
        assert_eq!(region(&history), 1.0);
    }

    #[test]
    fn a_night_on_a_two_knob_interaction_finds_it() {
        let b = sqlite();
        for seed in 1..=8 {
            let (history, best, _) = night(&b, sqlite_start(), sqlite_time, seed, 60);
            let found = |p: &Point| {
                p.get("JOURNAL") == Some(&KnobValue::Str("wal".into()))
                    && p.get("SYNC") == Some(&KnobValue::Str("normal".into()))
            };
            assert!(
                found(&best),
                "seed {seed}: best {best:?} after {} iterations",
                history.len() - 1
            );
        }
    }

    #[test]
    fn of_two_points_as_promising_the_one_quicker_to_run_is_measured_first() {
        // One knob; moves down and up from the start measured the same
        // small gain, too small to keep. Untimed, the search's tie goes to
        // the first point it ranks (downwards). Timed, with a run five
        // times as long below the start, it goes upwards.
        let b = Brief::parse(
            std::path::Path::new("b.md"),
            "---\nmetric:\n  name: m\n  command: ./b\n  direction: minimize\nknobs:\n  N: { int: [0, 100], default: 50 }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n",
        )
        .unwrap();
        let at = |n: i64| Point::from([("N".to_string(), KnobValue::Int(n))]);
        let side = |timed: bool, seed: u64| {
            let mut history = vec![baseline(at(50), 1.0)];
            for (i, n, secs) in [(1, 30, 5.0), (2, 70, 1.0)] {
                let mut r = IterationRecord::new(i, Verdict::Discard);
                r.knobs = at(n);
                let mut m = measured(1.0, 0.995, 6);
                if timed {
                    m.seconds = Some(crate::model::RunSeconds {
                        base: Some(1.0),
                        cand: secs,
                    });
                }
                r.measured = Some(m);
                history.push(r);
            }
            let p = plan(&b, &history, &at(50), seed, 3, 0.01, 0.01, 10, NIGHT_SWEEP).unwrap();
            match p.knobs.get("N") {
                Some(KnobValue::Int(n)) => *n > 50,
                _ => unreachable!(),
            }
        };
        for seed in 1..=4 {
            assert!(!side(false, seed), "seed {seed}: untimed, it went up");
            assert!(side(true, seed), "seed {seed}: timed, it went down");
        }
    }
}
