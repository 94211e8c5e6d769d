//! Search quality: ooda's builtin knob search against Optuna's TPE sampler
//! and random search, at equal wall time and at equal benchmark runs.
//!
//! Run it with `benches/search/run.sh` (it installs Optuna from PyPI into
//! `target/search-venv`, then runs `cargo bench --bench search_sim --
//! --python target/search-venv/bin/python`); `--only NAME` runs the
//! objectives whose name starts with NAME, `--sweep N` sets ooda's sweep
//! allowance (by default `defaults.sweep`'s, 100).
//!
//! ooda's night is the real one, in process: the A/A calibration, the
//! builtin driver's `plan` (its sweep included), `Orientation::of`, the
//! screen, `eval::decide_series`, the red lights and the stall rule. A
//! night is bounded by its hours, as a Brief's `budget.wall` bounds it
//! (or ends earlier, stalled or exhausted):
//! [`NIGHT_RUNS`] runs' time at the start (a screened point costs one run
//! where a decision costs 6 to 48, so a count of iterations would not be
//! the same night for both kinds). Every objective's runs take time that
//! moves with its knobs (`Objective::seconds`), and ooda's night is charged
//! its runs, its overhead around each run and each iteration (measured by
//! `benches/run_overhead.rs`) and its plans' CPU time. Its final choice is
//! the last kept point. Each peer then samples from the same default point,
//! one run per trial, each charged its run, a plain process start and the
//! sampler's CPU time, and its final choice is the trial with the best
//! single noisy value (what a user of such a loop reads in the morning):
//! after as many trials as ooda's night had runs (equal runs), and after
//! the trials that ended within ooda's night's seconds (equal time). A
//! guard failure costs one run for everyone.
//!
//! The objectives are known functions, so each final choice is scored by
//! its *true* value, as a share of the best value the objective has (100%
//! is the optimum): four synthetic landscapes at 3% and 15% noise per run
//! (lognormal), and two real programs through grids measured on this
//! machine by `benches/search/grid.py` (`zstd-grid.json`,
//! `quickstart-grid.json`: the median of every point's runs is its true
//! value, and runs are drawn around it with the spread those runs had; the
//! quickstart's TILE was measured at 47 of its values and is interpolated
//! in log TILE between them).
//!
//! Targets, checked at the end (exit status 1 if one fails): on every
//! objective ooda's final choice is not worse than TPE's at equal wall time
//! (the 95% interval of the mean per-seed difference in quality does not
//! lie below zero), and ooda's final choice is never worse than the start.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

#[path = "common/parallel.rs"]
mod parallel;

use ooda::testing::brief::points::{self, Point};
use ooda::testing::brief::{Brief, Direction, Knob, KnobSpec, KnobValue};
use ooda::testing::driver::builtin;
use ooda::testing::eval;
use ooda::testing::eval::redlight;
use ooda::testing::model::Orientation;
use ooda::testing::model::{DiscardKind, GuardResult, IterationRecord, Prediction, Verdict};
use ooda::testing::model::{Pair, RunSeconds};
use ooda::testing::stats::{self, SplitMix64};

const SEEDS: usize = 20;
/// The plateau's nights vary most (a night finds the well or does not):
/// at 20 seeds the interval of ooda − TPE reached zero where 60 showed
/// ooda worse, so the verdict there rests on 60.
const PLATEAU_SEEDS: usize = 60;

fn seeds_for(o: &Objective) -> usize {
    if o.name.starts_with("plateau") {
        PLATEAU_SEEDS
    } else {
        SEEDS
    }
}
/// A night's benchmark runs (the start of the next decision must fit).
const NIGHT_RUNS: u64 = 400;
const MAX_PAIRS: u32 = 24;
const CALIBRATION_PAIRS: usize = 10;
const ALPHA: f64 = 0.05;
const STALL_AFTER: usize = 10;

type Truth = Box<dyn Fn(&Point) -> Option<f64> + Sync>;
/// A program's run seconds from the value a run measured.
type RunTime = fn(f64) -> f64;

struct Objective {
    name: String,
    brief: Brief,
    start: Point,
    /// The true value of a point; `None` when its guard fails.
    truth: Truth,
    /// The best true value the objective has.
    optimum: f64,
    /// Standard deviation of one run's log value.
    noise: f64,
    /// The wall-clock seconds of a run that measured this value: every
    /// objective here is a workload whose run time moves with its knobs.
    seconds: RunTime,
}

impl Objective {
    fn dir(&self) -> Direction {
        self.brief.metric.direction
    }

    /// The true value as a share of the optimum (1 is the optimum).
    fn quality(&self, p: &Point) -> f64 {
        let v = (self.truth)(p).expect("a final choice passes its guard");
        match self.dir() {
            Direction::Minimize => self.optimum / v,
            Direction::Maximize => v / self.optimum,
        }
    }

    fn run(&self, p: &Point, rng: &mut SplitMix64) -> Option<f64> {
        (self.truth)(p).map(|v| v * (self.noise * rng.normal()).exp())
    }

    /// What a run at `p` costs the night: its seconds, or for a point
    /// whose guard fails, a run at the start's (the guard's own run).
    fn cost(&self, p: &Point, value: Option<f64>) -> f64 {
        let v = value
            .or_else(|| (self.truth)(p))
            .unwrap_or_else(|| (self.truth)(&self.start).expect("the start passes its guard"));
        (self.seconds)(v)
    }

    /// What a run at `p` costs ooda's night: the run, a plain start and
    /// ooda's overhead around it.
    fn ooda_run(&self, p: &Point, value: Option<f64>) -> f64 {
        self.cost(p, value) + PLAIN_START + OODA_PER_RUN
    }

    /// A night's seconds: [`NIGHT_RUNS`] runs at the start's median.
    fn night(&self) -> f64 {
        NIGHT_RUNS as f64 * self.cost(&self.start, None)
    }
}

fn brief(direction: &str, knobs: &str) -> Brief {
    let text = format!(
        "---\nmetric:\n  name: m\n  command: ./bench\n  direction: {direction}\nknobs:\n{knobs}---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n"
    );
    Brief::parse(Path::new("briefs/search.md"), &text).expect("the benchmark's Briefs parse")
}

fn int(p: &Point, k: &str) -> f64 {
    match p.get(k) {
        Some(KnobValue::Int(v)) => *v as f64,
        Some(KnobValue::Float(v)) => *v,
        _ => f64::NAN,
    }
}

fn text<'a>(p: &'a Point, k: &str) -> &'a str {
    match p.get(k) {
        Some(KnobValue::Str(s)) => s,
        _ => "",
    }
}

fn unit(brief: &Brief, p: &Point, k: &str) -> f64 {
    let knob = brief.knobs.iter().find(|x| x.name == k).expect("a knob");
    p.get(k)
        .and_then(|v| points::to_unit(&knob.spec, v))
        .unwrap_or(f64::NAN)
}

fn synthetic(kind: &str, noise: f64) -> Objective {
    let (brief, truth, optimum): (Brief, Truth, f64) = match kind {
        // A smooth bowl over three knobs with a correlated valley; the
        // default is 1.9x the optimum.
        "smooth" => {
            let b = brief(
                "minimize",
                "  A: { int: [1, 256], log: true, default: 4 }\n  B: { float: [0, 1], default: 0.2 }\n  C: { int: [1, 16], default: 1 }\n",
            );
            let bb = b.clone();
            let f = move |p: &Point| {
                let a = unit(&bb, p, "A") - 0.7;
                let b = int(p, "B") - 0.65;
                let c = (int(p, "C") - 6.0) / 15.0;
                Some(100.0 * (1.2 * a * a + b * b + 0.8 * c * c + 0.6 * a * b).exp())
            };
            (b, Box::new(f), 100.0)
        }
        // A choice knob whose best setting needs a different block size:
        // changing one knob at a time from the default finds `d` (0.90) and
        // misses `b` at BLOCK 4 (0.62).
        "categorical" => {
            let b = brief(
                "minimize",
                "  ORDER: { choice: [a, b, c, d], default: a }\n  BLOCK: { int: [1, 256], log: true, default: 256 }\n",
            );
            let bb = b.clone();
            let f = move |p: &Point| {
                let (factor, best) = match text(p, "ORDER") {
                    "a" => (1.0, 0.9),
                    "b" => (0.62, 0.25),
                    "c" => (0.80, 0.55),
                    _ => (0.90, 1.0),
                };
                let u = unit(&bb, p, "BLOCK") - best;
                Some(100.0 * factor * (2.0 * u * u).exp())
            };
            (b, Box::new(f), 62.0)
        }
        // The optimum near the default (11% better), every far corner
        // slow (up to 19 times the optimum): a first decision bet on a
        // corner is wasted here, and slow to run.
        "near" => {
            let b = brief(
                "minimize",
                "  P: { int: [1, 64], log: true, default: 8 }\n  Q: { float: [0, 1], default: 0.5 }\n  R: { int: [1, 16], default: 4 }\n  S: { choice: [x, y, z], default: x }\n",
            );
            let bb = b.clone();
            let f = move |p: &Point| {
                let (u, q, r) = (
                    unit(&bb, p, "P") - 0.6,
                    unit(&bb, p, "Q") - 0.4,
                    unit(&bb, p, "R") - 1.0 / 3.0,
                );
                let factor = match text(p, "S") {
                    "y" => 0.97,
                    "z" => 1.25,
                    _ => 1.0,
                };
                Some(100.0 * factor * (3.0 * u * u + 2.0 * q * q + 2.0 * r * r).exp())
            };
            (b, Box::new(f), 97.0)
        }
        // Flat everywhere but one narrow well (2% of the space gains more
        // than 5%), and only with MODE on.
        _ => {
            let b = brief(
                "minimize",
                "  X: { int: [0, 100], default: 50 }\n  Y: { int: [0, 100], default: 50 }\n  MODE: { choice: [off, on], default: off }\n",
            );
            let f = move |p: &Point| {
                let (x, y) = (int(p, "X") / 100.0 - 0.8, int(p, "Y") / 100.0 - 0.15);
                let well = if text(p, "MODE") == "on" {
                    0.35 * (-(x * x + y * y) / (2.0 * 0.06 * 0.06)).exp()
                } else {
                    0.0
                };
                Some(100.0 * (1.0 - well))
            };
            (b, Box::new(f), 65.0)
        }
    };
    let start = points::initial_point(&Point::new(), &brief.knobs);
    Objective {
        name: format!("{kind}, {:.0}% noise", noise * 100.0),
        brief,
        start,
        truth,
        optimum,
        noise,
        // A time metric: half a second a run at 100.
        seconds: |v| v / 200.0,
    }
}

/// A grid measured on this machine: `{"knobs": [...], "values": {key: [runs]}}`
/// with keys as `points::key` writes them, and `"invalid"` keys whose guard fails.
#[derive(serde::Deserialize)]
struct Grid {
    direction: String,
    knobs: String,
    values: std::collections::BTreeMap<String, Vec<f64>>,
    #[serde(default)]
    invalid: Vec<String>,
    /// An int knob measured at some of its values only: between two
    /// measured values the true value is interpolated in log space.
    #[serde(default)]
    interpolate: Option<String>,
}

/// `path`'s grid, with `seconds` the wall-clock time of a run that measured
/// a value.
fn measured(name: &str, path: &Path, seconds: RunTime) -> Objective {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (measured by benches/search/grid.py)",
            path.display()
        )
    });
    let grid: Grid =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let brief = brief(&grid.direction, &grid.knobs);
    let medians: std::collections::BTreeMap<String, f64> = grid
        .values
        .iter()
        .map(|(k, v)| (k.clone(), stats::median(v)))
        .collect();
    // The spread of one run around its point's median, pooled.
    let logs: Vec<Vec<f64>> = grid
        .values
        .values()
        .map(|v| v.iter().map(|x| x.ln()).collect())
        .collect();
    let (var, _) = stats::pooled_variance(logs.iter().map(Vec::as_slice)).expect("repeated runs");
    let invalid: std::collections::BTreeSet<String> = grid.invalid.into_iter().collect();
    let dir = brief.metric.direction;
    let optimum = medians
        .iter()
        .filter(|(k, _)| !invalid.contains(*k))
        .map(|(_, v)| *v)
        .fold(None, |acc: Option<f64>, v| {
            Some(match (acc, dir) {
                (None, _) => v,
                (Some(a), Direction::Minimize) => a.min(v),
                (Some(a), Direction::Maximize) => a.max(v),
            })
        })
        .expect("a valid point");
    let along = grid.interpolate.clone();
    let truth = move |p: &Point| {
        let k = points::key(p);
        if invalid.contains(&k) {
            return None;
        }
        if let Some(v) = medians.get(&k) {
            return Some(*v);
        }
        // Between the two nearest measured values of the interpolated knob.
        let name = along
            .as_deref()
            .unwrap_or_else(|| panic!("{k} is not in the measured grid"));
        let x = int(p, name);
        let at = |v: i64| {
            let mut q = p.clone();
            q.insert(name.to_string(), KnobValue::Int(v));
            medians.get(&points::key(&q)).map(|m| (v as f64, *m))
        };
        let below = (1..=x as i64).rev().find_map(at);
        let above = (x as i64..=x as i64 * 4).find_map(at);
        match (below, above) {
            (Some((x0, y0)), Some((x1, y1))) => {
                let t = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
                Some((y0.ln() + t * (y1.ln() - y0.ln())).exp())
            }
            _ => panic!("{k} is outside the measured grid"),
        }
    };
    let start = points::initial_point(&Point::new(), &brief.knobs);
    Objective {
        name: format!("{name} (measured, {:.1}% noise)", var.sqrt() * 100.0),
        brief,
        start,
        truth: Box::new(truth),
        optimum,
        noise: var.sqrt(),
        seconds,
    }
}

// ---------------------------------------------------------------- ooda

#[derive(Debug, Clone)]
struct Night {
    choice: Point,
    runs: u64,
    /// The night's wall-clock seconds: its runs, what ooda spends around
    /// each run and each iteration, and its plans' compute.
    seconds: f64,
    stop: &'static str,
    confirmed: bool,
}

/// A plain process start of the benchmark command (`subprocess.run`,
/// `std::process::Command`), charged to every run of every method
/// (`cargo bench --bench run_overhead`: 1.4 to 1.8 ms on an idle machine).
const PLAIN_START: f64 = 0.0016;
/// What ooda spends around each run beyond a plain start (the same
/// benchmark: 6.1 to 6.4 ms a run on an idle machine).
const OODA_PER_RUN: f64 = 0.0063;
/// What ooda spends on an iteration beyond its runs and its plan (the
/// worktree, the knobs file, git, the archive; the same benchmark: 68 to
/// 73 ms on 2026-12-07).
const OODA_PER_ITERATION: f64 = 0.07;

/// This thread's CPU seconds: what a plan computed, unmoved by other
/// threads of the benchmark sharing the cores.
fn thread_cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The night's seconds of `pairs` between `base` and `cand` (both
/// passing their guards), and their median run seconds on each side.
fn timed(o: &Objective, base: &Point, cand: &Point, pairs: &[Pair]) -> (f64, RunSeconds) {
    let b: Vec<f64> = pairs.iter().map(|p| o.cost(base, Some(p.base))).collect();
    let c: Vec<f64> = pairs.iter().map(|p| o.cost(cand, Some(p.cand))).collect();
    let spent = b
        .iter()
        .chain(&c)
        .map(|t| t + PLAIN_START + OODA_PER_RUN)
        .sum();
    (
        spent,
        RunSeconds {
            base: (!b.is_empty()).then(|| stats::median(&b)),
            cand: stats::median(&c),
        },
    )
}

fn pairs(o: &Objective, base: &Point, cand: &Point, n: usize, rng: &mut SplitMix64) -> Vec<Pair> {
    (0..n)
        .map(|i| {
            let b = o.run(base, rng).expect("the base passes its guard");
            let c = o
                .run(cand, rng)
                .expect("a measured candidate passes its guard");
            Pair {
                base: b,
                cand: c,
                cand_first: i % 2 == 1,
                d: eval::oriented_log_ratio(o.dir(), b, c),
            }
        })
        .collect()
}

/// ooda's night of `o`: at most [`Objective::night`] seconds (an iteration
/// starts while any are left, as under a Brief's `budget.wall`), with
/// `sweep` the sweep allowance.
fn ooda_night(o: &Objective, seed: u64, sweep: usize) -> Night {
    let mut rng = SplitMix64::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x00DA);
    let dir = o.dir();
    let mut runs = 0u64;
    let cal = pairs(o, &o.start, &o.start, CALIBRATION_PAIRS, &mut rng);
    runs += 2 * cal.len() as u64;
    let mut seconds = timed(o, &o.start, &o.start, &cal).0;
    let mut base = IterationRecord::new(0, Verdict::Baseline);
    base.base = points::key(&o.start);
    base.knobs = o.start.clone();
    base.tree = Some(points::key(&o.start));
    base.calibration = Some(eval::calibrate(cal, MAX_PAIRS, ALPHA, 0.0));
    let mut history = vec![base];
    let mut best = o.start.clone();
    let th = ooda::testing::model::Thresholds::default();
    let mut stop = "budget";
    for it in 1.. {
        if seconds >= o.night() {
            stop = "budget";
            break;
        }
        let orient = Orientation::of(&history, 0.0, ALPHA, MAX_PAIRS);
        let cpu = thread_cpu();
        let planned = builtin::plan(
            &o.brief,
            &history,
            &best,
            seed,
            it,
            orient.noise_sd(),
            orient.theta1,
            STALL_AFTER as u32,
            sweep,
        );
        seconds += OODA_PER_ITERATION + (thread_cpu() - cpu);
        let plan = match planned {
            Ok(p) => p,
            Err(_) => {
                stop = "exhausted";
                break;
            }
        };
        let mut r = IterationRecord::new(it, Verdict::Discard);
        r.base = points::key(&best);
        r.driver = "builtin".into();
        r.knobs = plan.knobs.clone();
        r.screen = plan.screen;
        r.axes = plan.axes.clone();
        r.hypothesis = plan.hypothesis.clone();
        r.tree = Some(points::key(&plan.knobs));
        r.predicted = Some(Prediction {
            effect: plan.predicted_effect,
            sd: plan.predicted_sd,
        });
        if (o.truth)(&plan.knobs).is_none() {
            runs += 1;
            seconds += o.ooda_run(&plan.knobs, None);
            r.verdict = Verdict::Invalid;
            r.guards = vec![GuardResult {
                command: "./guard".into(),
                ok: false,
                exit_code: Some(1),
                seconds: 0.0,
            }];
        } else if let Some((mut s, screening)) =
            screen(o, &history, &best, &plan, &orient, &mut rng)
                .inspect(|(_, screening)| {
                    runs += screening.len() as u64;
                    for &run in screening {
                        seconds += o.ooda_run(&plan.knobs, Some(run));
                    }
                })
                .filter(|(s, _)| !s.passed)
        {
            let each: Vec<f64> = screening
                .iter()
                .map(|&run| o.cost(&plan.knobs, Some(run)))
                .collect();
            s.comparison.seconds = Some(RunSeconds {
                base: None,
                cand: stats::median(&each),
            });
            r.discard = Some(DiscardKind::Screened);
            r.measured = Some(s.comparison);
        } else {
            let series = pairs(o, &best, &plan.knobs, MAX_PAIRS as usize, &mut rng);
            let mut d = eval::decide_series(dir, &series, &orient.rule(), ALPHA, MAX_PAIRS)
                .expect("the last look decides");
            runs += 2 * d.comparison.pairs.len() as u64;
            let (spent, secs) = timed(o, &best, &plan.knobs, &d.comparison.pairs);
            seconds += spent;
            d.comparison.seconds = Some(secs);
            r.verdict = if d.keep {
                Verdict::Keep
            } else {
                Verdict::Discard
            };
            r.discard = d.discard;
            r.measured = Some(d.comparison);
        }
        if std::env::var_os("SEARCH_TRACE").is_some() {
            eprintln!(
                "{} seed {seed} it {it}: {} -> {:?} {:?} pred {:+.3}±{:.3} runs {runs}",
                o.name,
                points::key(&r.knobs),
                r.verdict,
                r.discard,
                plan.predicted_effect,
                plan.predicted_sd
            );
        }
        if r.verdict == Verdict::Keep {
            best = r.knobs.clone();
            r.commit = Some(points::key(&best));
        }
        history.push(r);
        if let Some(a) = redlight::red_alarms(&history, dir, &th)
            .into_iter()
            .find(|a| a.stop_reason().is_some())
        {
            if std::env::var_os("SEARCH_TRACE").is_some() {
                eprintln!(
                    "{} seed {seed} RED at {it}: {:?} {}",
                    o.name, a.kind, a.evidence
                );
            }
            stop = "RED";
            break;
        }
        if redlight::plateau_length(redlight::window(&history)) >= STALL_AFTER
            && !builtin::can_sweep(&o.brief, &history, sweep)
        {
            stop = "stalled";
            break;
        }
    }
    // The confirmation on every stop: start against the final best.
    let mut confirmed = false;
    if best != o.start {
        let [first, last] = eval::CONFIRM_LOOKS;
        let series = pairs(o, &o.start, &best, last, &mut rng);
        let n = if eval::confirmation_settled(&series[..first]) {
            first
        } else {
            last
        };
        runs += 2 * n as u64;
        seconds += timed(o, &o.start, &best, &series[..n]).0;
        let c = eval::confirm(dir, "start", "best", series[..n].to_vec());
        confirmed = c.ci.0 > 0.0;
    }
    Night {
        choice: best,
        runs,
        seconds,
        stop,
        confirmed,
    }
}

/// The runner's screen of a sweep point: one run against the base's
/// recent runs on record (`None`: not screened, the full test).
fn screen(
    o: &Objective,
    history: &[IterationRecord],
    best: &Point,
    plan: &ooda::testing::model::Plan,
    orient: &Orientation,
    rng: &mut SplitMix64,
) -> Option<(eval::screen::Screened, Vec<f64>)> {
    let reference =
        eval::screen::base_reference(history, &points::key(best), &history[0].brief_hash);
    if !plan.screen || reference.len() < eval::screen::SCREEN_MIN_REFERENCE {
        return None;
    }
    let mut runs = vec![
        o.run(&plan.knobs, rng)
            .expect("a measured candidate passes its guard"),
    ];
    if eval::screen::near_miss(o.dir(), &reference, runs[0], orient.noise_sd()) {
        runs.extend(o.run(&plan.knobs, rng));
    }
    Some((
        eval::screen::screen(
            o.dir(),
            &reference,
            &runs,
            orient.noise_sd(),
            orient.theta1,
            ALPHA,
        ),
        runs,
    ))
}

// ---------------------------------------------------------------- peers

/// One Python process running Optuna (`benches/search/peers.py`).
struct Peers {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peers {
    fn start(python: &Path) -> Peers {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/search/peers.py");
        let mut child = Command::new(python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Peers {
            child,
            stdin,
            stdout,
        }
    }

    fn call(&mut self, req: serde_json::Value) -> serde_json::Value {
        writeln!(self.stdin, "{req}").expect("the peer process reads");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the peer process answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("peer answered {line:?}: {e}"))
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn knob_json(k: &Knob) -> serde_json::Value {
    match &k.spec {
        KnobSpec::Int { lo, hi, log } => {
            serde_json::json!({"name": k.name, "int": [lo, hi], "log": log})
        }
        KnobSpec::Float { lo, hi, log } => {
            serde_json::json!({"name": k.name, "float": [lo, hi], "log": log})
        }
        KnobSpec::Choice(c) => serde_json::json!({"name": k.name, "choice": c}),
    }
}

fn value_json(v: &KnobValue) -> serde_json::Value {
    match v {
        KnobValue::Int(i) => serde_json::json!(i),
        KnobValue::Float(f) => serde_json::json!(f),
        KnobValue::Str(s) => serde_json::json!(s),
    }
}

fn point_of(knobs: &[Knob], params: &serde_json::Value) -> Point {
    let mut p = Point::new();
    for k in knobs {
        let v = &params[&k.name];
        let value = match &k.spec {
            KnobSpec::Int { .. } => KnobValue::Int(v.as_i64().expect("an int")),
            KnobSpec::Float { .. } => KnobValue::Float(v.as_f64().expect("a float")),
            KnobSpec::Choice(_) => KnobValue::Str(v.as_str().expect("a choice").to_string()),
        };
        p.insert(k.name.clone(), value);
    }
    p
}

/// A peer's final choices in one night: after `runs` trials (equal runs
/// with ooda), and after its trials that ended within `seconds` (equal wall
/// time: each trial costs its run, a plain process start and the sampler's
/// CPU time). The best single noisy value wins, as in a morning's report.
struct PeerNight {
    at_runs: Point,
    at_seconds: Point,
    /// Trials that ended within `seconds`.
    trials_in_time: u64,
}

/// The most trials a peer runs for its equal-time choice.
const MAX_TRIALS: u64 = 4000;

fn peer_night(
    peers: &mut Peers,
    sampler: &str,
    o: &Objective,
    seed: u64,
    runs: u64,
    seconds: f64,
) -> PeerNight {
    let mut rng = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ sampler.len() as u64);
    let start: serde_json::Map<String, serde_json::Value> = o
        .start
        .iter()
        .map(|(k, v)| (k.clone(), value_json(v)))
        .collect();
    peers.call(serde_json::json!({
        "op": "study",
        "sampler": sampler,
        "seed": seed,
        "direction": match o.dir() { Direction::Minimize => "minimize", Direction::Maximize => "maximize" },
        "knobs": o.brief.knobs.iter().map(knob_json).collect::<Vec<_>>(),
        "start": start,
    }));
    let mut best: Option<(f64, Point)> = None;
    let choice = |best: &Option<(f64, Point)>| {
        best.as_ref()
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| o.start.clone())
    };
    let mut at_runs = None;
    let mut at_seconds = None;
    let (mut spent, mut trials) = (0.0, 0u64);
    while trials < MAX_TRIALS && (at_runs.is_none() || at_seconds.is_none()) {
        let asked = peers.call(serde_json::json!({"op": "ask"}));
        let p = point_of(&o.brief.knobs, &asked["params"]);
        let value = o.run(&p, &mut rng);
        let told = peers.call(serde_json::json!({"op": "tell", "value": value}));
        let cpu = asked["cpu"].as_f64().unwrap_or(0.0) + told["cpu"].as_f64().unwrap_or(0.0);
        let cost = o.cost(&p, value) + PLAIN_START + cpu;
        if at_seconds.is_none() && spent + cost > seconds {
            // This trial ends past the night: the choice is the one before.
            at_seconds = Some((choice(&best), trials));
        }
        spent += cost;
        trials += 1;
        if let Some(v) = value {
            let better = best.as_ref().is_none_or(|(b, _)| match o.dir() {
                Direction::Minimize => v < *b,
                Direction::Maximize => v > *b,
            });
            if better {
                best = Some((v, p));
            }
        }
        if trials == runs {
            at_runs = Some(choice(&best));
        }
    }
    let (at_seconds, trials_in_time) = at_seconds.unwrap_or_else(|| {
        eprintln!(
            "{} seed {seed}: {sampler} reached {MAX_TRIALS} trials within {seconds:.0} s; its equal-time choice is taken there",
            o.name
        );
        (choice(&best), trials)
    });
    PeerNight {
        at_runs: at_runs.unwrap_or_else(|| choice(&best)),
        at_seconds,
        trials_in_time,
    }
}

// ---------------------------------------------------------------- report

#[derive(Debug, Clone)]
struct SeedOut {
    night: Night,
    /// ooda; TPE at equal runs, at equal time; random at equal runs, at
    /// equal time.
    quality: [f64; 5],
    worse_than_start: [bool; 5],
    /// TPE's trials within ooda's seconds.
    tpe_trials: u64,
}

/// Mean and 95% t interval over seeds.
fn interval(x: &[f64]) -> (f64, f64, f64) {
    let t = stats::paired_t(x, 0.0).expect("at least two finite seeds");
    (t.mean, t.ci95.0, t.ci95.1)
}

/// The value after `name` on the command line.
fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

fn main() {
    let started = Instant::now();
    let python = flag("--python").map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let ok = Command::new(&python)
        .args(["-c", "import optuna"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "error: `{} -c 'import optuna'` fails: run benches/search/run.sh, which installs Optuna from PyPI into target/search-venv, or pass --python PATH",
            python.display()
        );
        std::process::exit(2);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/search");
    // `--only NAME` runs the objectives whose name starts with NAME.
    let only = flag("--only").unwrap_or_default();
    let mut objectives = Vec::new();
    for kind in ["smooth", "near", "categorical", "plateau"] {
        for noise in [0.03, 0.15] {
            objectives.push(synthetic(kind, noise));
        }
    }
    objectives.retain(|o| o.name.starts_with(only.as_str()));
    // What a run of each program took: the quickstart's `time_ms` and about
    // 0.1 s to start it and fill its matrices (grid.py: 0.25 s a run at
    // 150 ms); zstd reading and compressing its 26 MiB (27.3 MB) at the
    // measured MB/s.
    let programs: [(&str, &str, RunTime); 2] = [
        ("quickstart", "quickstart-grid.json", |ms| 0.1 + ms / 1000.0),
        ("zstd", "zstd-grid.json", |mbps| 0.01 + 27.3 / mbps),
    ];
    for (name, file, seconds) in programs {
        if name.starts_with(only.as_str()) {
            objectives.push(measured(name, &dir.join(file), seconds));
        }
    }

    // `--sweep N`: the sweep allowance (by default `defaults.sweep`'s).
    let sweep = flag("--sweep")
        .map(|n| n.parse::<usize>().expect("--sweep takes a count"))
        .unwrap_or(builtin::SWEEP);

    println!("## Search quality (benches/search/run.sh)\n");
    println!(
        "{SEEDS} seeds per objective ({PLATEAU_SEEDS} on the plateau). ooda: the builtin driver's night of {NIGHT_RUNS} runs' time at the start \
         (A/A calibration, sequential decisions up to {MAX_PAIRS} pairs, red lights, stall after {STALL_AFTER} \
         decisions without a keep, then the sweep (allowance {}), confirmation); each peer keeps the trial with the best single noisy value \
         after as many runs as ooda's night had (equal runs) and after the trials that ended within ooda's night's seconds (equal time). \
         Quality: the final choice's true value as a share of the optimum (100% = optimum), mean with 95% interval over seeds.\n",
        if sweep == usize::MAX {
            "the night's time".to_string()
        } else {
            format!("{sweep} points")
        }
    );
    println!(
        "| objective | ooda's night: runs, seconds | ooda (builtin) | TPE, equal runs | TPE, equal time (its runs) | random, equal runs | random, equal time | ooda − TPE, equal runs | ooda − TPE, equal time | worse than start (ooda / TPE / random) | ooda RED | ooda confirmed | ooda stops |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|");
    let mut failures = Vec::new();
    for o in &objectives {
        let outs: Vec<SeedOut> = parallel::run(seeds_for(o), 1, |s| {
            let seed = 1000 + s as u64;
            let night = ooda_night(o, seed, sweep);
            let mut peers = Peers::start(&python);
            let tpe = peer_night(&mut peers, "tpe", o, seed, night.runs, night.seconds);
            let random = peer_night(&mut peers, "random", o, seed, night.runs, night.seconds);
            let start = o.quality(&o.start);
            let quality = [
                o.quality(&night.choice),
                o.quality(&tpe.at_runs),
                o.quality(&tpe.at_seconds),
                o.quality(&random.at_runs),
                o.quality(&random.at_seconds),
            ];
            SeedOut {
                worse_than_start: quality.map(|q| q < start - 1e-12),
                night,
                quality,
                tpe_trials: tpe.trials_in_time,
            }
        });
        let q = |m: usize| outs.iter().map(|s| s.quality[m]).collect::<Vec<_>>();
        let pct = |(m, lo, hi): (f64, f64, f64)| {
            format!("{:.1}% [{:.1}, {:.1}]", m * 100.0, lo * 100.0, hi * 100.0)
        };
        let diff = |m: usize| {
            let d: Vec<f64> = outs.iter().map(|s| s.quality[0] - s.quality[m]).collect();
            interval(&d)
        };
        let signed = |(m, lo, hi): (f64, f64, f64)| {
            format!("{:+.1} [{:+.1}, {:+.1}]", m * 100.0, lo * 100.0, hi * 100.0)
        };
        let worse = |m: usize| outs.iter().filter(|s| s.worse_than_start[m]).count();
        let runs: Vec<f64> = outs.iter().map(|s| s.night.runs as f64).collect();
        let secs: Vec<f64> = outs.iter().map(|s| s.night.seconds).collect();
        let trials: Vec<f64> = outs.iter().map(|s| s.tpe_trials as f64).collect();
        let red = outs.iter().filter(|s| s.night.stop == "RED").count();
        let confirmed = outs.iter().filter(|s| s.night.confirmed).count();
        let stops = ["budget", "stalled", "exhausted", "RED"]
            .iter()
            .map(|r| (r, outs.iter().filter(|s| s.night.stop == *r).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let (at_runs, at_time) = (diff(1), diff(2));
        println!(
            "| {} | {:.0}, {:.0} s | {} | {} | {} ({:.0}) | {} | {} | {} | {} | {} / {} / {} | {red} | {confirmed} | {stops} |",
            o.name,
            stats::mean(&runs),
            stats::mean(&secs),
            pct(interval(&q(0))),
            pct(interval(&q(1))),
            pct(interval(&q(2))),
            stats::mean(&trials),
            pct(interval(&q(3))),
            pct(interval(&q(4))),
            signed(at_runs),
            signed(at_time),
            worse(0),
            worse(2),
            worse(4),
        );
        if at_time.2 < 0.0 {
            failures.push(format!(
                "{}: ooda's final choice is worse than TPE's at equal wall time",
                o.name
            ));
        }
        if worse(0) > 0 {
            failures.push(format!(
                "{}: ooda's final choice is worse than the start in {} night(s)",
                o.name,
                worse(0)
            ));
        }
    }
    println!();
    if failures.is_empty() {
        println!(
            "PASS: on every objective ooda's final choice is at least as good as TPE's at equal wall time, and never worse than the start"
        );
    }
    for f in &failures {
        println!("FAIL: {f}");
    }
    println!("\n({:.0} s)", started.elapsed().as_secs_f64());
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
