//! The eval-runner: guards, paired measurements and the keep/discard decision.
//!
//! Measuring and deciding are plain code (DESIGN.md §1): the agent never sees
//! a number before the runner has decided. Base and candidate are measured
//! in pairs, back to back, in a random order per pair, so slow drift of the
//! machine hits both sides alike and cancels in the log ratio.
//!
//! This is the first version of the decision rule: a fixed number of pairs
//! (default 5) and a one-sided paired t-test on log ratios at α = 0.05. It is
//! honest (a no-op is kept about 5% of the time) but not yet the sequential
//! procedure of §5.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::brief::{Brief, Direction, Parse};
use crate::compress;
use crate::error::{Error, Result};
use crate::events::{Event, EventLog};
use crate::exec::{self, CommandSpec, Outcome};
use crate::metric::{self, MetricParse};
use crate::stats::{self, SplitMix64};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pair {
    pub base: f64,
    pub cand: f64,
    pub cand_first: bool,
    /// Log ratio oriented so that positive means the candidate is better.
    pub d: f64,
}

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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub pairs: Vec<Pair>,
    pub median: f64,
    /// Standard deviation of ln(value) over all runs.
    pub run_sd: f64,
    /// Standard deviation of the A/A log ratios: the noise a decision faces.
    pub noise_sd: f64,
    pub mean_d: f64,
    pub pairs_per_decision: u32,
    pub theta1: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuardResult {
    pub command: String,
    pub ok: bool,
    #[serde(default)]
    pub exit_code: Option<i32>,
    pub seconds: f64,
}

/// What a comparison ended in, before REVIEW and COMMIT act on it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvalOutcome {
    pub verdict: crate::history::Verdict,
    pub reason: String,
    pub guards: Vec<GuardResult>,
    pub comparison: Option<Comparison>,
    pub failure_output: Option<String>,
}

/// Which worktree a command runs in; also exported as `OODA_SIDE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Base,
    Cand,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Cand => "cand",
        }
    }
}

pub struct Worktree {
    pub side: Side,
    pub dir: std::path::PathBuf,
    pub env: Vec<(String, String)>,
}

/// Failures of one command, as data: the caller decides what verdict they mean.
#[derive(Debug)]
pub enum RunFailure {
    Failed { reason: String, output: String },
}

pub struct Evaluator<'a> {
    pub brief: &'a Brief,
    pub output_cap: usize,
    pub cancel: &'a AtomicBool,
    pub events: &'a mut EventLog,
    pub iteration: u32,
    pub parent: String,
    pub progress: &'a dyn Fn(&str),
    /// Also report every command and its outcome (`-v`).
    pub verbose: bool,
}

const FAILURE_OUTPUT_CHARS: usize = 4000;

impl Evaluator<'_> {
    fn run_command(
        &mut self,
        role: &str,
        wt: &Worktree,
        command: &str,
        timeout: Duration,
    ) -> Result<exec::CommandOutput> {
        let parent = self.events.emit(
            Some(self.iteration),
            Some(&self.parent),
            Event::CommandStarted {
                role: role.into(),
                worktree: wt.side.as_str().into(),
                command: compress::redact(command),
            },
        )?;
        let mut env = wt.env.clone();
        env.push(("OODA_SIDE".into(), wt.side.as_str().into()));
        env.push(("OODA_ITERATION".into(), self.iteration.to_string()));
        env.push(("OODA_BRIEF".into(), self.brief.name.clone()));
        let spec = CommandSpec {
            command,
            cwd: &wt.dir,
            env,
            timeout,
            output_cap: self.output_cap,
            stdin: None,
        };
        if self.verbose {
            (self.progress)(&format!(
                "$ {} (in {})",
                compress::redact(command),
                wt.side.as_str()
            ));
        }
        let out = exec::run(&spec, self.cancel)
            .map_err(|e| Error::io(format!("starting `{command}` in {}", wt.dir.display()), e))?;
        if self.verbose {
            (self.progress)(&format!(
                "  {:?}, exit {:?}, {:.2}s",
                out.status,
                out.exit_code,
                out.elapsed.as_secs_f64()
            ));
        }
        self.events.emit(
            Some(self.iteration),
            Some(&parent),
            Event::CommandFinished {
                role: role.into(),
                outcome: format!("{:?}", out.status).to_lowercase(),
                exit_code: out.exit_code,
                seconds: out.elapsed.as_secs_f64(),
                truncated_bytes: out.truncated_bytes,
            },
        )?;
        if matches!(out.status, Outcome::Interrupted) {
            return Err(Error::Interrupted);
        }
        Ok(out)
    }

    /// Runs `setup` in a worktree; failure is returned as data.
    pub fn setup(&mut self, wt: &Worktree) -> Result<Option<RunFailure>> {
        let Some(setup) = self.brief.metric.setup.clone() else {
            return Ok(None);
        };
        (self.progress)(&format!("setup in {}", wt.side.as_str()));
        // Builds can be slow; give setup a generous multiple of the run timeout.
        let timeout = self.brief.metric.timeout.max(Duration::from_secs(60)) * 4;
        let out = self.run_command("setup", wt, &setup, timeout)?;
        Ok(failure_of(&out, &format!("setup `{setup}`")))
    }

    /// Runs every guard; stops at the first failure (its output is kept).
    pub fn guards(&mut self, wt: &Worktree) -> Result<(Vec<GuardResult>, Option<RunFailure>)> {
        let mut results = Vec::new();
        for g in self.brief.guards.clone() {
            (self.progress)(&format!("guard `{g}`"));
            let timeout = self.brief.metric.timeout.max(Duration::from_secs(60)) * 4;
            let out = self.run_command("guard", wt, &g, timeout)?;
            let failure = failure_of(&out, &format!("guard `{g}`"));
            results.push(GuardResult {
                command: g.clone(),
                ok: failure.is_none(),
                exit_code: out.exit_code,
                seconds: out.elapsed.as_secs_f64(),
            });
            if failure.is_some() {
                return Ok((results, failure));
            }
        }
        Ok((results, None))
    }

    /// One measurement: the metric command once, its value parsed.
    pub fn measure(
        &mut self,
        wt: &Worktree,
        pair: u32,
    ) -> Result<std::result::Result<f64, RunFailure>> {
        let cmd = self.brief.metric.command.clone();
        let out = self.run_command("metric", wt, &cmd, self.brief.metric.timeout)?;
        if let Some(f) = failure_of(&out, &format!("metric command `{cmd}`")) {
            return Ok(Err(f));
        }
        let how = match &self.brief.metric.parse {
            Parse::MetricLine => MetricParse::MetricLine {
                name: &self.brief.metric.name,
            },
            Parse::Regex(re) => MetricParse::Regex(re),
            Parse::Json(p) => MetricParse::Json(p),
        };
        let value = match metric::parse_metric(&out.stdout, &how) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(RunFailure::Failed {
                    reason: format!("unparsable metric from `{cmd}`: {e}"),
                    output: compress::compress(&out.output, FAILURE_OUTPUT_CHARS),
                }));
            }
        };
        if value <= 0.0 {
            return Ok(Err(RunFailure::Failed {
                reason: format!(
                    "metric {} = {value}: ooda compares ratios, so the metric must be positive (report e.g. a time, a rate or a count)",
                    self.brief.metric.name
                ),
                output: compress::compress(&out.output, FAILURE_OUTPUT_CHARS),
            }));
        }
        self.events.emit(
            Some(self.iteration),
            Some(&self.parent),
            Event::Measurement {
                pair,
                side: wt.side.as_str().into(),
                value,
            },
        )?;
        Ok(Ok(value))
    }

    /// `n` interleaved pairs in a seeded random order. Stops at the first
    /// failure, returning it with the side that failed.
    pub fn pairs(
        &mut self,
        base: &Worktree,
        cand: &Worktree,
        n: u32,
        rng: &mut SplitMix64,
    ) -> Result<std::result::Result<Vec<Pair>, (Side, RunFailure)>> {
        let mut pairs = Vec::new();
        for i in 1..=n {
            let cand_first = rng.below(2) == 1;
            let order: [&Worktree; 2] = if cand_first {
                [cand, base]
            } else {
                [base, cand]
            };
            let mut vals = [0.0; 2];
            for (slot, wt) in order.iter().enumerate() {
                match self.measure(wt, i)? {
                    Ok(v) => vals[slot] = v,
                    Err(f) => return Ok(Err((wt.side, f))),
                }
            }
            let (b, c) = if cand_first {
                (vals[1], vals[0])
            } else {
                (vals[0], vals[1])
            };
            let d = oriented_log_ratio(self.brief.metric.direction, b, c);
            pairs.push(Pair {
                base: b,
                cand: c,
                cand_first,
                d,
            });
            let est = stats::mean(&pairs.iter().map(|p| p.d).collect::<Vec<_>>());
            (self.progress)(&format!(
                "pair {i}/{n}: base {} cand {} (running effect {:+.1}%)",
                crate::history::fmt_num(b),
                crate::history::fmt_num(c),
                gain(self.brief.metric.direction, est) * 100.0
            ));
        }
        Ok(Ok(pairs))
    }
}

fn failure_of(out: &exec::CommandOutput, what: &str) -> Option<RunFailure> {
    let reason = match out.status {
        Outcome::Success => return None,
        Outcome::Failed => format!("{what} exited with code {}", out.exit_code.unwrap_or(-1)),
        Outcome::TimedOut => format!(
            "{what} timed out after {:.0}s (its process group was killed)",
            out.elapsed.as_secs_f64()
        ),
        Outcome::Killed => format!("{what} was killed by a signal"),
        Outcome::Interrupted => format!("{what} was interrupted"),
    };
    Some(RunFailure::Failed {
        reason,
        output: compress::compress(&out.output, FAILURE_OUTPUT_CHARS),
    })
}

/// ln(base/cand) for minimize, ln(cand/base) for maximize: positive = better.
pub fn oriented_log_ratio(dir: Direction, base: f64, cand: f64) -> f64 {
    match dir {
        Direction::Minimize => base.ln() - cand.ln(),
        Direction::Maximize => cand.ln() - base.ln(),
    }
}

/// A mean log ratio as a relative gain in the Brief's direction.
pub fn gain(dir: Direction, d: f64) -> f64 {
    match dir {
        Direction::Minimize => 1.0 - (-d).exp(),
        Direction::Maximize => d.exp() - 1.0,
    }
}

/// The fixed-sample rule: one-sided paired t-test of mean(d) > δ₀.
pub fn decide(
    dir: Direction,
    pairs: Vec<Pair>,
    alpha: f64,
    noise_floor: f64,
    theta1: f64,
) -> (bool, Comparison, String) {
    let d: Vec<f64> = pairs.iter().map(|p| p.d).collect();
    let delta0 = (1.0 + noise_floor).ln();
    let test = stats::paired_t(&d, delta0);
    let mean = stats::mean(&d);
    let (p, ci) = match &test {
        Some(t) => (t.p_one_sided, t.ci95),
        None => (1.0, (mean, mean)),
    };
    let base_median = stats::median(&pairs.iter().map(|p| p.base).collect::<Vec<_>>());
    let cand_median = stats::median(&pairs.iter().map(|p| p.cand).collect::<Vec<_>>());
    let effect = gain(dir, mean);
    let ci = (gain(dir, ci.0), gain(dir, ci.1));
    let keep = p <= alpha;
    let n = pairs.len();
    let reason = format!(
        "{}: {:+.1}% [{:+.1}, {:+.1}], p={:.3} at {n} pairs{}",
        if keep { "kept" } else { "discarded" },
        effect * 100.0,
        ci.0 * 100.0,
        ci.1 * 100.0,
        p,
        if keep {
            String::new()
        } else if effect < 0.0 && ci.1 < 0.0 {
            " (significantly worse)".into()
        } else {
            format!(" (not shown better than {:.1}%)", noise_floor * 100.0)
        }
    );
    let comparison = Comparison {
        pairs,
        base_median,
        cand_median,
        effect,
        ci,
        p,
        looks: 1,
        theta1,
        alpha,
        delta0,
        rule: format!("fixed {n} pairs, one-sided paired t-test on log ratios, α = {alpha}"),
    };
    (keep, comparison, reason)
}

/// Noise calibration from A/A pairs: both sides run the same tree.
pub fn calibrate(
    pairs: Vec<Pair>,
    pairs_per_decision: u32,
    alpha: f64,
    noise_floor: f64,
) -> Calibration {
    let d: Vec<f64> = pairs.iter().map(|p| p.d).collect();
    let mut logs: Vec<f64> = pairs.iter().map(|p| p.base.ln()).collect();
    logs.extend(pairs.iter().map(|p| p.cand.ln()));
    let mut values: Vec<f64> = pairs.iter().map(|p| p.base).collect();
    values.extend(pairs.iter().map(|p| p.cand));
    let noise_sd = stats::sd(&d);
    let mde = stats::min_detectable_effect(noise_sd, pairs_per_decision as usize, alpha, 0.8);
    Calibration {
        median: stats::median(&values),
        run_sd: stats::sd(&logs),
        noise_sd,
        mean_d: stats::mean(&d),
        pairs_per_decision,
        theta1: noise_floor.max(1.0 - (-mde).exp()),
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(ds: &[(f64, f64)]) -> Vec<Pair> {
        ds.iter()
            .map(|&(b, c)| Pair {
                base: b,
                cand: c,
                cand_first: false,
                d: oriented_log_ratio(Direction::Minimize, b, c),
            })
            .collect()
    }

    #[test]
    fn clear_gain_is_kept_and_noop_is_not() {
        let gainful = pairs(&[
            (100.0, 80.0),
            (101.0, 81.0),
            (99.0, 79.5),
            (100.5, 80.2),
            (100.2, 79.9),
        ]);
        let (keep, cmp, reason) = decide(Direction::Minimize, gainful, 0.05, 0.0, 0.02);
        assert!(keep, "{reason}");
        assert!((cmp.effect - 0.2).abs() < 0.01, "{}", cmp.effect);
        assert!(reason.starts_with("kept: +20"), "{reason}");
        let noop = pairs(&[
            (100.0, 101.0),
            (101.0, 100.0),
            (99.0, 99.5),
            (100.5, 100.0),
            (100.2, 100.9),
        ]);
        let (keep, _, reason) = decide(Direction::Minimize, noop, 0.05, 0.0, 0.02);
        assert!(!keep, "{reason}");
    }

    #[test]
    fn maximize_flips_the_sign() {
        assert!(oriented_log_ratio(Direction::Maximize, 100.0, 120.0) > 0.0);
        assert!(oriented_log_ratio(Direction::Minimize, 100.0, 120.0) < 0.0);
        assert!((gain(Direction::Maximize, (1.2f64).ln()) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn identical_differences_decide_without_dividing_by_zero() {
        let p = pairs(&[(100.0, 90.0); 5]);
        let (keep, cmp, _) = decide(Direction::Minimize, p, 0.05, 0.0, 0.02);
        assert!(keep);
        assert!(cmp.p.is_finite());
    }

    #[test]
    fn noise_floor_raises_the_bar() {
        let small = pairs(&[
            (100.0, 98.0),
            (100.0, 98.1),
            (100.0, 97.9),
            (100.0, 98.0),
            (100.0, 98.05),
        ]);
        assert!(decide(Direction::Minimize, small.clone(), 0.05, 0.0, 0.0).0);
        assert!(!decide(Direction::Minimize, small, 0.05, 0.05, 0.0).0);
    }
}
