//! Decision-quality benchmark: how often each keep/discard rule keeps a change
//! of a known true effect, and what that does to a night of 100 iterations.
//!
//! ```sh
//! cargo bench --bench decision_sim
//! ```
//!
//! Four rules are scored on the **same simulated data**:
//!
//! - **naive 1+1**: one base run, one candidate run; keep if the candidate is
//!   better. It uses the first pair of the series.
//! - **Welch 5+5**: the first 5 pairs' base and candidate runs as two
//!   independent samples; keep if the one-sided Welch t-test on ln(value)
//!   gives p ≤ 0.05.
//! - **ooda, 12 pairs** and **ooda, 24 (extended)**: the series goes through
//!   [`ooda::testing::eval::decide_series`], the code path the runner uses, with a
//!   [`Rule`] built as the runner builds it (`model::Orientation::rule`): the noise history pooled from a
//!   10-pair A/A calibration drawn from the same noise model (in a night, plus
//!   every later iteration's pairs), θ₁ = [`sequential::theta1`]`(0, s_h)`,
//!   α′ = [`sequential::alphas_for`]`(0.05, max_pairs)` (simulated for each
//!   design), δ₀ = 0, at most 12 pairs (`defaults.pairs: 12`, looks at
//!   3/5/8/12) or 24 (the default: then 16/20/24 while the candidate is
//!   promising). Its cost is the pairs it used before deciding (2 runs each).
//!   The tables "P(keep) at multiples of θ₁" (3%, 10% and 20% noise) show
//!   what the extension costs in runs and buys in power.
//!
//! A trial is one series of 24 interleaved pairs (the 12-pair rules use
//! the first 12): per pair a fair coin picks
//! which side runs first (as the runner does), and the runs happen in that
//! time order, which matters for the drifting machine. The metric is a time
//! to minimize; the candidate's true value is base·(1 − θ), θ being its true
//! relative improvement. Every run is
//! `ln y = ln μ_side + drift(t) + σ_side·z + ln(1 + slowdown)`, so the noise
//! models are:
//!
//! | model | per-run noise |
//! |---|---|
//! | Gaussian 3% | σ = 3% on both sides |
//! | heavy-tailed | σ = 3%, and 10% of runs slowed by ×(1 + E), E exponential with mean 12% |
//! | AR(1) drift | a machine drift shared by both sides, x(t+1) = 0.9·x(t) + e with stationary sd 3%, plus σ = 1% per run |
//! | cand 2× noisier | σ = 3% for the base, 6% for the candidate (the A/A calibration sees base vs base) |
//! | Gaussian 8% | σ = 8% on both sides |
//! | Gaussian 10% | σ = 10% on both sides |
//! | Gaussian 20% | σ = 20% on both sides |
//!
//! **Seeds and determinism.** Everything comes from [`SplitMix64`]. Trial `i`
//! of model `m` draws its calibration and its noise from its own generator
//! seeded by (`CELL_SEED`, m, i), and that noise is reused for every θ
//! (common random numbers): the five P(keep | θ) of a row differ only by the
//! true effect, and the three rules of a column see the very same runs.
//! Night `k` of model `m` likewise has its own generator seeded by
//! (`NIGHT_SEED`, m, k) for its candidates, its calibration and one 24-pair
//! block of noise per iteration (the drift carries on across the night); a
//! rule that decides sooner simply uses a shorter prefix of the block.
//! Work is spread over threads in fixed chunks and reduced in trial order,
//! so the output is the same bit for bit on any number of cores.
//!
//! **The night.** 100 iterations; each candidate is a regression (50%, θ
//! uniform in [−10%, −1%]), a no-op (30%, θ = 0) or a gain (20%, θ uniform in
//! [+1%, +10%]). A keep makes the candidate the new base, so true effects
//! compound: true gain = 1 − Π(1 − θ) over the keeps; believed gain = 1 −
//! Π(1 − θ̂) with θ̂ the effect the rule measured when it kept. ooda's runs
//! include its 20 calibration runs.
//!
//! The program ends with PASS/FAIL lines for the targets the rule is held to and exits
//! with status 1 if any target fails.

use std::time::Instant;

#[path = "common/parallel.rs"]
mod parallel;

use ooda::testing::brief::Direction;
use ooda::testing::eval;
use ooda::testing::eval::sequential::{self, Rule};
use ooda::testing::model::NoiseHistory;
use ooda::testing::model::Pair;
use ooda::testing::stats::{self, SplitMix64};

const CELL_SEED: u64 = 0x0DA5_EED0_CE11_0001;
const NIGHT_SEED: u64 = 0x0DA5_EED0_0016_0002;
/// Trials per (noise model, θ) cell: SE of P(keep | 0) ≈ 0.0015 at 0.05.
const TRIALS: usize = 20_000;
const NIGHTS: usize = 2_000;
const ITERATIONS: usize = 100;
/// The ordinary design's last look, and the extended design's.
const ORDINARY_PAIRS: usize = 12;
const MAX_PAIRS: usize = 24;
const CALIBRATION_PAIRS: usize = 10;
const ALPHA: f64 = 0.05;
const WELCH_N: usize = 5;
const THETAS: [f64; 5] = [-0.02, 0.0, 0.02, 0.05, 0.10];
const RULES: [&str; 4] = [
    "naive 1+1",
    "Welch 5+5",
    "ooda, 12 pairs",
    "ooda, 24 (extended)",
];
/// Indices of the two ooda designs in [`RULES`].
const OODA12: usize = 2;
const OODA24: usize = 3;
/// Each ooda design with its own α′ (simulated for its looks).
#[derive(Clone, Copy)]
struct Alphas {
    ordinary: [f64; sequential::N_LOOKS],
    extended: [f64; sequential::N_LOOKS],
}
const DIR: Direction = Direction::Minimize;
const CHUNK: usize = 250;

#[derive(Debug, Clone, Copy)]
struct NoiseModel {
    name: &'static str,
    base_sd: f64,
    cand_sd: f64,
    /// Share of runs slowed down, and the mean of the exponential slowdown.
    slow_p: f64,
    slow_mean: f64,
    /// AR(1) machine drift: coefficient per run and stationary sd (0 = none).
    phi: f64,
    drift_sd: f64,
}

const fn gaussian(name: &'static str, sd: f64) -> NoiseModel {
    NoiseModel {
        name,
        base_sd: sd,
        cand_sd: sd,
        slow_p: 0.0,
        slow_mean: 0.0,
        phi: 0.0,
        drift_sd: 0.0,
    }
}

const MODELS: [NoiseModel; 7] = [
    gaussian("Gaussian 3%", 0.03),
    NoiseModel {
        slow_p: 0.10,
        slow_mean: 0.12,
        ..gaussian("heavy-tailed", 0.03)
    },
    NoiseModel {
        phi: 0.9,
        drift_sd: 0.03,
        ..gaussian("AR(1) drift", 0.01)
    },
    NoiseModel {
        cand_sd: 0.06,
        ..gaussian("cand 2× noisier", 0.03)
    },
    gaussian("Gaussian 8%", 0.08),
    gaussian("Gaussian 10%", 0.10),
    gaussian("Gaussian 20%", 0.20),
];

/// A generator for one trial, mixed from a seed and the trial's coordinates.
fn rng_for(seed: u64, model: usize, index: usize) -> SplitMix64 {
    let mut r = SplitMix64::new(seed);
    let a = r.next_u64() ^ model as u64;
    let mut r = SplitMix64::new(a);
    let b = r.next_u64() ^ index as u64;
    let mut r = SplitMix64::new(b);
    r.next_u64();
    r
}

/// The machine: its drift state persists from run to run.
struct Machine {
    model: NoiseModel,
    drift: f64,
}

impl Machine {
    fn new(model: NoiseModel, rng: &mut SplitMix64) -> Machine {
        // Start in the stationary distribution.
        let drift = model.drift_sd * rng.normal();
        Machine { model, drift }
    }

    /// The log noise of the next run on one side.
    fn run(&mut self, rng: &mut SplitMix64, cand: bool) -> f64 {
        let m = self.model;
        if m.drift_sd > 0.0 {
            let innovation = m.drift_sd * (1.0 - m.phi * m.phi).sqrt();
            self.drift = m.phi * self.drift + innovation * rng.normal();
        }
        let sd = if cand { m.cand_sd } else { m.base_sd };
        let mut e = self.drift + sd * rng.normal();
        if m.slow_p > 0.0 && rng.next_f64() < m.slow_p {
            let slow = -m.slow_mean * (1.0 - rng.next_f64()).ln();
            e += slow.ln_1p();
        }
        e
    }

    /// `n` interleaved pairs of log noise, each in a random order.
    /// `aa`: an A/A calibration, where both sides run the base tree.
    fn block(&mut self, rng: &mut SplitMix64, n: usize, aa: bool) -> Vec<Noise> {
        (0..n)
            .map(|_| {
                let cand_first = rng.below(2) == 1;
                let (first, second) = (
                    self.run(rng, cand_first && !aa),
                    self.run(rng, !cand_first && !aa),
                );
                let (base, cand) = if cand_first {
                    (second, first)
                } else {
                    (first, second)
                };
                Noise {
                    base,
                    cand,
                    cand_first,
                }
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
struct Noise {
    base: f64,
    cand: f64,
    cand_first: bool,
}

/// The measured pairs for a candidate of true gain θ on a base of 100.
fn pairs(noise: &[Noise], theta: f64) -> Vec<Pair> {
    noise
        .iter()
        .map(|n| {
            let base = 100.0 * n.base.exp();
            let cand = 100.0 * (1.0 - theta) * n.cand.exp();
            Pair {
                base,
                cand,
                cand_first: n.cand_first,
                d: eval::oriented_log_ratio(DIR, base, cand),
            }
        })
        .collect()
}

/// One decision: keep or not, the effect the rule measured, runs spent.
#[derive(Debug, Clone, Copy, Default)]
struct Verdict {
    keep: bool,
    effect: f64,
    runs: u32,
}

fn naive(p: &[Pair]) -> Verdict {
    Verdict {
        keep: p[0].d > 0.0,
        effect: eval::gain(DIR, p[0].d),
        runs: 2,
    }
}

fn welch(p: &[Pair]) -> Verdict {
    let lb: Vec<f64> = p[..WELCH_N].iter().map(|x| x.base.ln()).collect();
    let lc: Vec<f64> = p[..WELCH_N].iter().map(|x| x.cand.ln()).collect();
    // H1: mean(ln base) > mean(ln cand), i.e. the candidate is faster.
    let t = stats::welch_t(&lb, &lc).expect("finite samples of 5");
    Verdict {
        keep: t.p_one_sided <= ALPHA,
        effect: eval::gain(DIR, t.mean),
        runs: 2 * WELCH_N as u32,
    }
}

fn ooda_rule(p: &[Pair], rule: &Rule, max_pairs: usize) -> Verdict {
    let d = eval::decide_series(DIR, p, rule, ALPHA, max_pairs as u32)
        .expect("max_pairs pairs always reach a decision");
    Verdict {
        keep: d.keep,
        effect: d.comparison.effect,
        runs: 2 * d.comparison.pairs.len() as u32,
    }
}

/// The rule as the runner builds it (`model::Orientation::rule`) from a noise history.
fn rule_from(noise: Option<NoiseHistory>, alphas: [f64; sequential::N_LOOKS]) -> Rule {
    let theta1 = sequential::theta1(0.0, noise.map(|h| h.s_h).unwrap_or(0.0));
    Rule {
        alphas,
        delta0: 0.0,
        theta1_log: theta1.ln_1p(),
        noise,
    }
}

/// Per trial: for each θ and rule, the verdict; plus the calibration's θ₁.
struct CellTrial {
    v: [[Verdict; RULES.len()]; THETAS.len()],
    theta1: f64,
}

fn cell_trial(mi: usize, i: usize, alphas: Alphas) -> CellTrial {
    let model = MODELS[mi];
    let mut rng = rng_for(CELL_SEED, mi, i);
    let calibration = Machine::new(model, &mut rng).block(&mut rng, CALIBRATION_PAIRS, true);
    let cal_d: Vec<f64> = pairs(&calibration, 0.0).iter().map(|p| p.d).collect();
    let noise_h = NoiseHistory::pool([cal_d.as_slice()]);
    let rule = rule_from(noise_h, alphas.ordinary);
    let rule24 = rule_from(noise_h, alphas.extended);
    let noise = Machine::new(model, &mut rng).block(&mut rng, MAX_PAIRS, false);
    let mut v = [[Verdict::default(); RULES.len()]; THETAS.len()];
    for (ti, &theta) in THETAS.iter().enumerate() {
        let p = pairs(&noise, theta);
        v[ti] = [
            naive(&p),
            welch(&p),
            ooda_rule(&p, &rule, ORDINARY_PAIRS),
            ooda_rule(&p, &rule24, MAX_PAIRS),
        ];
    }
    CellTrial {
        v,
        theta1: rule.theta1_log.exp_m1(),
    }
}

/// Results of one rule over one night.
#[derive(Debug, Clone, Copy, Default)]
struct NightRule {
    /// Π(1 − θ) over keeps: the true time of the final base relative to the start.
    true_factor: f64,
    believed_factor: f64,
    harmful: u32,
    noop: u32,
    good: u32,
    runs: u32,
}

fn night(mi: usize, k: usize, alphas: Alphas) -> [NightRule; RULES.len()] {
    let model = MODELS[mi];
    let mut rng = rng_for(NIGHT_SEED, mi, k);
    let mut machine = Machine::new(model, &mut rng);
    let calibration = machine.block(&mut rng, CALIBRATION_PAIRS, true);
    let cal: Vec<f64> = pairs(&calibration, 0.0).iter().map(|p| p.d).collect();
    // Each ooda design pools its own measured pairs, as its runner would.
    let mut history: [Vec<Vec<f64>>; 2] = [vec![cal.clone()], vec![cal]];
    let mut out = [NightRule {
        true_factor: 1.0,
        believed_factor: 1.0,
        ..NightRule::default()
    }; RULES.len()];
    out[OODA12].runs = 2 * CALIBRATION_PAIRS as u32;
    out[OODA24].runs = 2 * CALIBRATION_PAIRS as u32;
    for _ in 0..ITERATIONS {
        let u = rng.next_f64();
        let theta = if u < 0.5 {
            -0.01 - 0.09 * rng.next_f64()
        } else if u < 0.8 {
            0.0
        } else {
            0.01 + 0.09 * rng.next_f64()
        };
        let noise = machine.block(&mut rng, MAX_PAIRS, false);
        let p = pairs(&noise, theta);
        let rule = rule_from(
            NoiseHistory::pool(history[0].iter().map(Vec::as_slice)),
            alphas.ordinary,
        );
        let rule24 = rule_from(
            NoiseHistory::pool(history[1].iter().map(Vec::as_slice)),
            alphas.extended,
        );
        let verdicts = [
            naive(&p),
            welch(&p),
            ooda_rule(&p, &rule, ORDINARY_PAIRS),
            ooda_rule(&p, &rule24, MAX_PAIRS),
        ];
        // The runner adds every iteration's measured pairs to the history.
        for (h, r) in history.iter_mut().zip([OODA12, OODA24]) {
            let used = verdicts[r].runs as usize / 2;
            h.push(p[..used].iter().map(|x| x.d).collect());
        }
        for (r, v) in out.iter_mut().zip(verdicts) {
            r.runs += v.runs;
            if v.keep {
                r.true_factor *= 1.0 - theta;
                r.believed_factor *= 1.0 - v.effect;
                match theta.partial_cmp(&0.0) {
                    Some(std::cmp::Ordering::Less) => r.harmful += 1,
                    Some(std::cmp::Ordering::Equal) => r.noop += 1,
                    _ => r.good += 1,
                }
            }
        }
    }
    out
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// A θ of the grid: "-2%", "0", "+10%".
fn theta_label(t: f64) -> String {
    if t == 0.0 {
        "0".into()
    } else {
        format!("{:+.0}%", 100.0 * t)
    }
}

/// Multiples of θ₁ for the power table.
const THETA1_MULTIPLES: [f64; 5] = [0.0, 0.5, 1.0, 1.5, 2.0];
const POWER_SEED: u64 = 0x0DA5_EED0_0001_0003;

/// How often each ooda design keeps a change of true gain k·θ₁ when the
/// noise is well known (the history's s_h is the true pair sd, ν = 30), and
/// what it spends: what θ₁ means in practice, and what the extension buys,
/// at the noise levels where it matters.
fn power_in_theta1(alphas: Alphas) {
    for mi in [0, 5, 6] {
        let model = MODELS[mi];
        let s_h = (model.base_sd.powi(2) + model.cand_sd.powi(2)).sqrt();
        let noise_h = Some(NoiseHistory { s_h, nu_h: 30.0 });
        let rules = [
            (rule_from(noise_h, alphas.ordinary), ORDINARY_PAIRS),
            (rule_from(noise_h, alphas.extended), MAX_PAIRS),
        ];
        let theta1 = rules[0].0.theta1_log.exp_m1();
        let trials = parallel::run(TRIALS, CHUNK, |i| {
            let mut rng = rng_for(POWER_SEED, mi, i);
            let noise = Machine::new(model, &mut rng).block(&mut rng, MAX_PAIRS, false);
            THETA1_MULTIPLES.map(|k| {
                // θ such that the true log ratio is k·ln(1 + θ₁).
                let theta = 1.0 - (-k * theta1.ln_1p()).exp();
                let p = pairs(&noise, theta);
                rules.map(|(r, max)| ooda_rule(&p, &r, max))
            })
        });
        println!(
            "### P(keep) at multiples of θ₁ ({}, noise known: s_h = {:.2}%, ν = 30, θ₁ = {:.2}%)\n",
            model.name,
            100.0 * s_h,
            100.0 * theta1
        );
        let header: Vec<String> = THETA1_MULTIPLES.iter().map(|k| format!("{k}·θ₁")).collect();
        println!("| | {} |", header.join(" | "));
        println!("|---|{}", "---:|".repeat(THETA1_MULTIPLES.len()));
        for (r, name) in ["ordinary (12)", "extended (24)"].iter().enumerate() {
            let cells: Vec<String> = (0..THETA1_MULTIPLES.len())
                .map(|j| {
                    let n = trials.iter().filter(|t| t[j][r].keep).count();
                    format!("{:.1}%", 100.0 * n as f64 / TRIALS as f64)
                })
                .collect();
            println!("| P(keep), {name} | {} |", cells.join(" | "));
        }
        for (r, name) in ["ordinary (12)", "extended (24)"].iter().enumerate() {
            let cells: Vec<String> = (0..THETA1_MULTIPLES.len())
                .map(|j| {
                    let n: u64 = trials.iter().map(|t| u64::from(t[j][r].runs)).sum();
                    format!("{:.1}", n as f64 / TRIALS as f64)
                })
                .collect();
            println!("| runs per decision, {name} | {} |", cells.join(" | "));
        }
        println!();
        let power =
            |r: usize| trials.iter().filter(|t| t[2][r].keep).count() as f64 / TRIALS as f64;
        POWER_AT_THETA1.with(|p| p.borrow_mut().push((model.name, power(0), power(1))));
    }
}

const NI_SEED: u64 = 0x0DA5_EED0_5111_0004;

/// The simplifier's non-inferiority test (`sequential::non_inferiority`):
/// a simplified candidate is measured against the kept one, and accepted
/// when it is not worse by the margin (θ₁ here, the runner's
/// max(θ₁, noise floor) with no floor). How often one that is truly worse
/// by exactly the margin is accepted (the error the test bounds), and how
/// often a truly equivalent one is (what the simplifier gets through), on
/// every noise model, noise known (s_h the true pair sd, ν = 30).
fn non_inferiority(alphas: Alphas) {
    // The keep rule gives θ₁; the test's own levels are its share of α
    // (`sequential::non_inferiority`), for the design it runs in: 12 pairs,
    // and the runner's default 24. The runner's margin is max(θ₁, noise
    // floor) capped at half the kept gain, so θ₁/2 is measured too.
    println!("### Non-inferiority of a simplification (noise known; margin θ₁ or θ₁/2)\n");
    println!(
        "| noise model | θ₁ | design | margin | P(accept \\| worse by the margin) | P(accept \\| equal) | runs per test (equal) |"
    );
    println!("|---|---:|---|---|---:|---:|---:|");
    for (mi, model) in MODELS.iter().enumerate() {
        let s_h = (model.base_sd.powi(2) + model.cand_sd.powi(2)).sqrt();
        for (design, keep_alphas, max) in [
            ("12 pairs", alphas.ordinary, ORDINARY_PAIRS),
            ("24 pairs", alphas.extended, MAX_PAIRS),
        ] {
            let rule = rule_from(Some(NoiseHistory { s_h, nu_h: 30.0 }), keep_alphas);
            for share in [1.0, 0.5] {
                let margin_log = share * rule.theta1_log;
                let ni = sequential::non_inferiority(&rule, margin_log, ALPHA, max as u32);
                let trials = parallel::run(TRIALS, CHUNK, |i| {
                    let mut rng = rng_for(NI_SEED, mi, i);
                    let noise = Machine::new(*model, &mut rng).block(&mut rng, MAX_PAIRS, false);
                    // Worse by the margin: (1 + margin)× the time.
                    let worse = ooda_rule(&pairs(&noise, 1.0 - margin_log.exp()), &ni, max);
                    let equal = ooda_rule(&pairs(&noise, 0.0), &ni, max);
                    (worse.keep, equal.keep, equal.runs)
                });
                let share_of = |f: &dyn Fn(&(bool, bool, u32)) -> bool| {
                    trials.iter().filter(|t| f(t)).count() as f64 / TRIALS as f64
                };
                let (worse, equal) = (share_of(&|t| t.0), share_of(&|t| t.1));
                let runs = trials.iter().map(|t| f64::from(t.2)).sum::<f64>() / TRIALS as f64;
                let margin = if share == 1.0 { "θ₁" } else { "θ₁/2" };
                println!(
                    "| {} | {:.2}% | {design} | {margin} | {:.2}% | {:.1}% | {runs:.1} |",
                    model.name,
                    100.0 * rule.theta1_log.exp_m1(),
                    100.0 * worse,
                    100.0 * equal
                );
                NI_ACCEPT.with(|p| p.borrow_mut().push((model.name, design, margin, worse)));
            }
        }
    }
    println!();
}

thread_local! {
    /// P(accept | worse by the margin) per model, for the targets.
    #[allow(clippy::type_complexity)]
    static NI_ACCEPT: std::cell::RefCell<Vec<(&'static str, &'static str, &'static str, f64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// P(keep | θ₁) per model for the targets: (model, ordinary, extended).
    static POWER_AT_THETA1: std::cell::RefCell<Vec<(&'static str, f64, f64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn main() {
    let started = Instant::now();
    let alphas = Alphas {
        ordinary: sequential::alphas_for(ALPHA, ORDINARY_PAIRS as u32),
        extended: sequential::alphas_for(ALPHA, MAX_PAIRS as u32),
    };
    println!("## Decision quality (cargo bench --bench decision_sim)\n");
    println!(
        "{TRIALS} trials per noise model; each trial's {MAX_PAIRS} interleaved pairs are shared by the four rules and the five θ \
         (the 12-pair rules use the first 12). \
         ooda, 12 pairs: α′ = {:.4} per look, looks at {:?}; ooda, 24 (extended): α′ = {:.4}, looks at {:?}, \
         16 to 24 only while promising: estimate ≥ θ₁/2 and own p ≤ 0.10 (each α′ simulated for its own design). \
         δ₀ = 0, θ₁ = theta1(0, s_h) with s_h from a {CALIBRATION_PAIRS}-pair A/A calibration \
         (in a night, pooled with every iteration's pairs).\n",
        alphas.ordinary[0],
        sequential::looks_for(ORDINARY_PAIRS as u32),
        alphas.extended[0],
        sequential::looks_for(MAX_PAIRS as u32),
    );

    // P(keep | θ) and runs per decision.
    let mut keep = vec![[[0usize; THETAS.len()]; RULES.len()]; MODELS.len()];
    let mut runs = vec![[[0u64; THETAS.len()]; RULES.len()]; MODELS.len()];
    let mut theta1 = vec![0.0; MODELS.len()];
    for mi in 0..MODELS.len() {
        let trials = parallel::run(TRIALS, CHUNK, |i| cell_trial(mi, i, alphas));
        for t in &trials {
            for ti in 0..THETAS.len() {
                for r in 0..RULES.len() {
                    keep[mi][r][ti] += usize::from(t.v[ti][r].keep);
                    runs[mi][r][ti] += u64::from(t.v[ti][r].runs);
                }
            }
            theta1[mi] += t.theta1;
        }
        theta1[mi] /= TRIALS as f64;
    }
    let p_keep = |mi: usize, r: usize, ti: usize| keep[mi][r][ti] as f64 / TRIALS as f64;
    let mean_runs = |mi: usize, r: usize, ti: usize| runs[mi][r][ti] as f64 / TRIALS as f64;
    let header = THETAS
        .iter()
        .map(|t| format!("θ = {}", theta_label(*t)))
        .collect::<Vec<_>>();

    println!("### P(keep | θ)\n");
    println!("| noise | rule | {} |", header.join(" | "));
    println!("|---|---|{}", "---:|".repeat(THETAS.len()));
    for (mi, m) in MODELS.iter().enumerate() {
        for (r, name) in RULES.iter().enumerate() {
            let cells: Vec<String> = (0..THETAS.len())
                .map(|ti| format!("{:.3}", p_keep(mi, r, ti)))
                .collect();
            println!("| {} | {name} | {} |", m.name, cells.join(" | "));
        }
    }
    let se0 = (0.05f64 * 0.95 / TRIALS as f64).sqrt();
    println!("\nStandard error of a P(keep) near 0.05: {se0:.4}.\n");

    println!("### Mean runs per decision (both sides)\n");
    println!("| noise | rule | {} | ooda's mean θ₁ |", header.join(" | "));
    println!("|---|---|{}---:|", "---:|".repeat(THETAS.len()));
    for (mi, m) in MODELS.iter().enumerate() {
        for (r, name) in RULES.iter().enumerate() {
            let cells: Vec<String> = (0..THETAS.len())
                .map(|ti| format!("{:.1}", mean_runs(mi, r, ti)))
                .collect();
            let t1 = if r == OODA12 {
                format!("{:.1}%", 100.0 * theta1[mi])
            } else {
                String::new()
            };
            println!("| {} | {name} | {} | {t1} |", m.name, cells.join(" | "));
        }
    }

    power_in_theta1(alphas);
    non_inferiority(alphas);

    // The nights.
    println!(
        "\n### A night of {ITERATIONS} iterations (mean over {NIGHTS} nights)\n\n\
         50% regressions (θ ~ U[−10%, −1%]), 30% no-ops, 20% gains (θ ~ U[+1%, +10%]); keeps compound. \
         Runs are per night, both sides; ooda's include its 20 calibration runs.\n"
    );
    println!(
        "| noise | rule | true gain | believed gain | harmful keeps | no-op keeps | good keeps | runs |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (mi, m) in MODELS.iter().enumerate() {
        let nights = parallel::run(NIGHTS, CHUNK, |k| night(mi, k, alphas));
        for (r, name) in RULES.iter().enumerate() {
            let n = NIGHTS as f64;
            let mean =
                |f: &dyn Fn(&NightRule) -> f64| nights.iter().map(|x| f(&x[r])).sum::<f64>() / n;
            println!(
                "| {} | {name} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} |",
                m.name,
                pct(mean(&|x| 1.0 - x.true_factor)),
                pct(mean(&|x| 1.0 - x.believed_factor)),
                mean(&|x| f64::from(x.harmful)),
                mean(&|x| f64::from(x.noop)),
                mean(&|x| f64::from(x.good)),
                mean(&|x| f64::from(x.runs)),
            );
        }
    }

    // The targets ooda's rule is held to.
    println!("\n### Targets for ooda's rule\n");
    let ti0 = THETAS.iter().position(|&t| t == 0.0).unwrap();
    let ti5 = THETAS.iter().position(|&t| t == 0.05).unwrap();
    let mut failed = 0;
    let mut check = |ok: bool, what: String| {
        println!("- {}: {what}", if ok { "PASS" } else { "FAIL" });
        failed += usize::from(!ok);
    };
    for (mi, m) in MODELS.iter().enumerate() {
        for r in [OODA12, OODA24] {
            let p = p_keep(mi, r, ti0);
            check(
                p <= 0.055,
                format!("P(keep | 0) = {p:.4} ≤ 0.055 ({}, {})", m.name, RULES[r]),
            );
        }
    }
    for r in [OODA12, OODA24] {
        let p = p_keep(0, r, ti5);
        check(
            p >= 0.93,
            format!(
                "P(keep | +5%) = {p:.4} ≥ 0.93 ({}, {})",
                MODELS[0].name, RULES[r]
            ),
        );
        let n = mean_runs(0, r, ti5);
        check(
            n <= 15.0,
            format!(
                "{n:.1} runs per decision at +5% ≤ 15 ({}, {})",
                MODELS[0].name, RULES[r]
            ),
        );
    }
    for (name, ordinary, extended) in POWER_AT_THETA1.with(|p| p.borrow().clone()) {
        check(
            extended >= ordinary,
            format!(
                "the extension keeps a gain of θ₁ at least as often: {:.1}% ≥ {:.1}% ({name})",
                100.0 * extended,
                100.0 * ordinary
            ),
        );
    }
    for (name, design, margin, p) in NI_ACCEPT.with(|p| p.borrow().clone()) {
        check(
            p <= 0.05,
            format!(
                "a simplification worse by the margin ({margin}) is accepted {p:.4} ≤ 0.05 of the time ({name}, {design})"
            ),
        );
    }
    eprintln!("\n(ran in {:.1} s)", started.elapsed().as_secs_f64());
    if failed > 0 {
        println!("\n{failed} target(s) failed.");
        std::process::exit(1);
    }
    println!("\nAll targets hold.");
}
