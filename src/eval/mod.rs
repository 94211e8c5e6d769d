//! The eval-runner: guards, paired measurements and the keep/discard decision.
//!
//! Measuring and deciding are plain code: the agent never sees
//! a number before the runner has decided. Base and candidate are measured
//! in pairs, back to back, in a random order per pair, so slow drift of the
//! machine hits both sides alike and cancels in the log ratio.
//!
//! The decision itself is the group-sequential rule in `sequential.rs`
//! (looks at 3/5/8/12 pairs, then 16/20/24 while promising); the confirmation test re-measures the start of
//! the run against the current best so the morning report states a gain that
//! is not inflated by the winner's curse.

pub(crate) mod journal;
pub(crate) mod metric;
mod neutral;
pub(crate) mod rewrites;
pub(crate) mod writes;
pub(crate) use neutral::neutral;
pub mod redlight;

use crate::model::CommandOutcome;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub(crate) mod orientation;
pub mod screen;
pub mod sequential;

use crate::brief::{Brief, Parse};
use crate::error::{Error, Result};
use crate::eval::metric::MetricParse;
use crate::events::{Event, Span};
use crate::model::{Direction, DiscardKind, RunSeconds};
use crate::run::exec::{self, CommandSpec};
use crate::run::executor::Lease;
use crate::run::measure_lock::{self, MeasureLock};
use crate::text::compress;
use crate::text::redact;

pub(crate) use crate::model::{Calibration, Comparison, Confirmation, GuardResult, Pair};
use crate::stats::{self, SplitMix64};

/// Which worktree a command runs in; also exported as `OODA_SIDE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Base,
    Cand,
    /// The start-of-run commit, in the confirmation test.
    Anchor,
    /// `ooda check --measure`'s scratch worktree at HEAD.
    Check,
    /// The simplifier's version of a kept candidate, measured against it.
    Simplified,
}

impl Side {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Cand => "cand",
            Side::Anchor => "anchor",
            Side::Check => "check",
            Side::Simplified => "simplified",
        }
    }
}

pub(crate) struct Worktree {
    pub side: Side,
    pub dir: std::path::PathBuf,
    pub env: Vec<(String, String)>,
}

impl Worktree {
    /// A worktree with the environment its own knobs file implies.
    pub(crate) fn new(side: Side, dir: std::path::PathBuf, brief: &Brief) -> Result<Worktree> {
        // The candidate's knobs file is the plan's (or what the agent made
        // of it): the advice about a committed best's file is not its fix.
        let read = if side == Side::Cand {
            crate::brief::points::point_in_candidate
        } else {
            crate::brief::points::point_in
        };
        let env = read(&dir, brief)?
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        Ok(Worktree { side, dir, env })
    }
}

/// Failures of one command, as data: the caller decides what verdict they mean.
#[derive(Debug)]
pub(crate) enum RunFailure {
    Failed { reason: String, output: String },
}

pub(crate) struct Evaluator<'a> {
    pub brief: &'a Brief,
    pub output_cap: usize,
    pub cancel: &'a AtomicBool,
    /// A long-running loop's "stop at the next checkpoint" (a daemon's
    /// first SIGTERM): a wait for the measurement lock ends on it, since
    /// the measurement has not begun.
    pub stop: Option<&'a AtomicBool>,
    /// Where the commands are logged (the phase, or the confirmation test);
    /// its iteration is the one commands see as `OODA_ITERATION`.
    pub span: &'a Span,
    /// Where the commands run: one lease for the whole measurement.
    pub lease: &'a dyn Lease,
    /// Whether timed runs wait for the host-wide measurement lock
    /// (`defaults.measure_exclusive`).
    pub exclusive: bool,
    /// What the timed runs wrote in their worktrees (`writes.rs`).
    pub writes: writes::Writes,
    /// Where the pairs of the series are kept as they are measured, so a
    /// series its cluster job cut short goes on from them (`journal.rs`).
    pub journal: Option<journal::Journal>,
    /// The wall-clock seconds of each successful metric run since the last
    /// [`Evaluator::take_seconds`], by side: what the search's cost model
    /// learns from.
    pub timed: Vec<(Side, f64)>,
}

const FAILURE_OUTPUT_CHARS: usize = 4000;

impl<'a> Evaluator<'a> {
    /// An eval-runner for `brief` under `defaults` (its output cap and
    /// whether timed runs take the measurement lock), logging under `span`
    /// and running its commands under `lease`; no journal.
    pub(crate) fn new(
        brief: &'a Brief,
        defaults: &crate::config::Defaults,
        cancel: &'a AtomicBool,
        stop: Option<&'a AtomicBool>,
        span: &'a Span,
        lease: &'a dyn Lease,
    ) -> Evaluator<'a> {
        Evaluator {
            brief,
            output_cap: usize::try_from(defaults.output_cap).unwrap_or(usize::MAX),
            cancel,
            stop,
            span,
            lease,
            exclusive: defaults.measure_exclusive,
            writes: Default::default(),
            journal: None,
            timed: Vec::new(),
        }
    }
}

impl Evaluator<'_> {
    fn run_command(
        &mut self,
        role: &str,
        wt: &Worktree,
        command: &str,
        timeout: Duration,
    ) -> Result<exec::CommandOutput> {
        if role != "metric" {
            self.writes.forget(wt.side.as_str());
        }
        let span = self.span.child(Event::CommandStarted {
            role: role.into(),
            worktree: wt.side.as_str().into(),
            command: redact::redact(command),
        })?;
        // ooda's own variables only where the Brief asks for them
        // (`metric.env`): each one tells the candidate's code it is measured.
        let mut env = wt.env.clone();
        for name in &self.brief.metric.env {
            let value = match name.as_str() {
                "OODA_SIDE" => Some(wt.side.as_str().to_string()),
                "OODA_ITERATION" => self.span.iteration().map(|i| i.to_string()),
                "OODA_BRIEF" => Some(self.brief.name.clone()),
                other => std::env::var(other).ok(),
            };
            if let Some(v) = value {
                env.push((name.clone(), v));
            }
        }
        let spec = CommandSpec {
            command,
            cwd: &wt.dir,
            env,
            timeout,
            output_cap: self.output_cap,
            stdin: None,
            landlock: None,
            writable: Vec::new(),
            measured: true,
        };
        let out = self
            .lease
            .run(&spec, self.cancel)
            .map_err(|e| Error::io(format!("running `{command}` in {}", wt.dir.display()), e))?;
        span.emit(Event::CommandFinished {
            role: role.into(),
            outcome: out.status,
            exit_code: out.exit_code,
            seconds: out.elapsed.as_secs_f64(),
            truncated_bytes: out.truncated_bytes,
        })?;
        if matches!(out.status, CommandOutcome::Interrupted) {
            return Err(Error::Interrupted);
        }
        Ok(out)
    }

    /// The Brief's `analyze.command` once in a worktree, under the
    /// measurement lock: a profiler loads the machine like a timed run, so
    /// it never runs while another decision's pairs are measured. Its
    /// output, and why it failed if it did.
    pub(crate) fn profile(
        &mut self,
        wt: &Worktree,
        command: &str,
        timeout: Duration,
    ) -> Result<(String, Option<RunFailure>)> {
        let _lock = self.hold_measurements()?;
        let out = self.run_command("analyze", wt, command, timeout)?;
        let failure = failure_of(&out, &format!("analyze `{command}`"));
        Ok((out.output, failure))
    }

    /// Runs `setup` in a worktree; failure is returned as data.
    pub(crate) fn setup(&mut self, wt: &Worktree) -> Result<Option<RunFailure>> {
        let Some(setup) = self.brief.metric.setup.clone() else {
            return Ok(None);
        };
        let out = self.run_command("setup", wt, &setup, long_timeout(self.brief))?;
        Ok(failure_of(&out, &format!("setup `{setup}`")))
    }

    /// Runs every guard; stops at the first failure (its output is kept).
    pub(crate) fn guards(
        &mut self,
        wt: &Worktree,
    ) -> Result<(Vec<GuardResult>, Option<RunFailure>)> {
        let mut results = Vec::new();
        for g in self.brief.guards.clone() {
            let timeout = long_timeout(self.brief);
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

    /// The metric command once, its value parsed (any sign).
    pub(crate) fn metric(
        &mut self,
        wt: &Worktree,
    ) -> Result<std::result::Result<(f64, String), RunFailure>> {
        let cmd = self.brief.metric.command.clone();
        let out = self.run_command("metric", wt, &cmd, self.brief.metric.timeout)?;
        if let Some(f) = failure_of(&out, &format!("metric command `{cmd}`")) {
            return Ok(Err(f));
        }
        let how = metric_parse(self.brief);
        Ok(match metric::parse_metric(&out.stdout, &how) {
            Ok(v) => {
                self.timed.push((wt.side, out.elapsed.as_secs_f64()));
                Ok((v, out.output))
            }
            Err(e) => Err(RunFailure::Failed {
                reason: format!("unparsable metric from `{cmd}`: {e}"),
                output: compress::excerpt(&out.output, FAILURE_OUTPUT_CHARS),
            }),
        })
    }

    /// The median seconds of a run on each side since the last call, which
    /// forgets them; `None` when no candidate run was timed.
    pub(crate) fn take_seconds(&mut self) -> Option<RunSeconds> {
        let timed = std::mem::take(&mut self.timed);
        let side = |s: Side| -> Vec<f64> {
            timed
                .iter()
                .filter(|(t, secs)| *t == s && secs.is_finite())
                .map(|&(_, secs)| secs)
                .collect()
        };
        let (base, cand) = (side(Side::Base), side(Side::Cand));
        (!cand.is_empty()).then(|| RunSeconds {
            base: (!base.is_empty()).then(|| stats::median(&base)),
            cand: stats::median(&cand),
        })
    }

    /// One measurement: the metric once, which must be positive (ooda
    /// compares ratios).
    pub(crate) fn measure(
        &mut self,
        wt: &Worktree,
        pair: u32,
    ) -> Result<std::result::Result<f64, RunFailure>> {
        let side = wt.side.as_str();
        let before = self.writes.before(side, &wt.dir);
        let ran = self.metric(wt)?;
        self.writes
            .after(side, &wt.dir, before, self.brief.metric.fresh_outputs)
            .map_err(|e| {
                Error::io(
                    format!("removing what a run wrote in {}", wt.dir.display()),
                    e,
                )
            })?;
        let (value, output) = match ran {
            Ok(v) => v,
            Err(f) => return Ok(Err(f)),
        };
        if value <= 0.0 {
            return Ok(Err(RunFailure::Failed {
                reason: format!(
                    "metric {} = {value}: ooda compares ratios, so the metric must be positive (report e.g. a time, a rate or a count)",
                    self.brief.metric.name
                ),
                output: compress::excerpt(&output, FAILURE_OUTPUT_CHARS),
            }));
        }
        self.span.emit(Event::Measurement {
            pair,
            side: wt.side.as_str().into(),
            value,
        })?;
        Ok(Ok(value))
    }

    /// The host-wide measurement lock, for the timed runs that follow (held
    /// until the value is dropped); `None` when the Brief opted out. A wait
    /// is logged.
    pub(crate) fn hold_measurements(&self) -> Result<Option<MeasureLock>> {
        // An executor that took it before its allocation (so that a wait
        // for it is not spent out of the allocation's time) holds it still.
        if !self.exclusive || self.lease.holds_measurements() {
            return Ok(None);
        }
        let path = measure_lock::path();
        let who = match std::env::current_dir() {
            Ok(d) => format!("brief {} in {}", self.brief.name, d.display()),
            Err(_) => format!("brief {}", self.brief.name),
        };
        let lock = MeasureLock::acquire(&path, &who, self.cancel, self.stop, |holder, waited| {
            self.span
                .emit(Event::MeasureLockWaiting {
                    path: path.display().to_string(),
                    holder: holder.to_string(),
                    waited_seconds: waited.as_secs_f64(),
                })
                .map(drop)
        })?;
        if lock.waited > Duration::from_millis(200) {
            self.span.emit(Event::MeasureLockAcquired {
                waited_seconds: lock.waited.as_secs_f64(),
            })?;
        }
        Ok(Some(lock))
    }

    /// Interleaved pairs in a seeded random order, until `enough` says so
    /// or `max` pairs. Stops at the first failure, returning it with the side
    /// that failed, and before any run for which `halt` says so (the pairs
    /// complete so far are returned; the caller knows why it halted).
    pub(crate) fn measure_pairs(
        &mut self,
        base: &Worktree,
        cand: &Worktree,
        max: usize,
        rng: &mut SplitMix64,
        mut enough: impl FnMut(&[Pair]) -> bool,
        mut halt: impl FnMut() -> bool,
    ) -> Result<std::result::Result<Vec<Pair>, (Side, RunFailure)>> {
        // Held for the whole series: a decision's pairs must all see the
        // same quiet machine.
        let _lock = self.hold_measurements()?;
        let dir = self.brief.metric.direction;
        let mut pairs: Vec<Pair> = match &self.journal {
            // Each pair as this series would have computed it.
            Some(j) => j.resume(rng, |p| {
                p.base > 0.0
                    && p.cand > 0.0
                    && (p.d - oriented_log_ratio(dir, p.base, p.cand)).abs() <= 1e-12
            }),
            None => Vec::new(),
        };
        if !pairs.is_empty() {
            self.span.emit(Event::PairsResumed {
                pairs: pairs.len() as u32,
            })?;
            if pairs.len() >= max || enough(&pairs) {
                return Ok(Ok(self.ended(pairs)));
            }
        }
        let resumed = pairs.len();
        // The longest pair of this series here: an allocation with less
        // time left than a pair takes is given up before the pair, judged
        // by the pairs before it. Cut inside the pair instead, a long pair
        // would be dropped (and measured again) more often than a short
        // one, and the kept pairs would lean towards the short ones.
        let mut longest = std::time::Duration::ZERO;
        let progress = |e: Error, pairs: &[Pair]| {
            let mut e = e;
            crate::run::executor::note_new_pairs(&mut e, (pairs.len() - resumed) as u32);
            e
        };
        while pairs.len() < max {
            let i = pairs.len() as u32 + 1;
            if let Err(e) = self.lease.before_pair(longest) {
                return Err(progress(Error::io(format!("before pair {i}"), e), &pairs));
            }
            let began = std::time::Instant::now();
            let cand_first = rng.below(2) == 1;
            let order: [&Worktree; 2] = if cand_first {
                [cand, base]
            } else {
                [base, cand]
            };
            let mut vals = [0.0; 2];
            for (slot, wt) in order.iter().enumerate() {
                if halt() {
                    return Ok(Ok(self.ended(pairs)));
                }
                match self.measure(wt, i).map_err(|e| progress(e, &pairs))? {
                    Ok(v) => vals[slot] = v,
                    Err(f) => {
                        self.ended(Vec::new());
                        return Ok(Err((wt.side, f)));
                    }
                }
            }
            longest = longest.max(began.elapsed());
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
            if let Some(j) = &self.journal {
                j.save(&pairs)?;
            }
            let ds: Vec<f64> = pairs.iter().map(|p| p.d).collect();
            let half_width =
                (ds.len() > 1).then(|| 1.96 * stats::sd(&ds) / (ds.len() as f64).sqrt());
            let m = stats::mean(&ds);
            self.span.emit(Event::PairMeasured {
                pair: i,
                max_pairs: max as u32,
                base: b,
                cand: c,
                d,
                running_effect: gain(dir, m),
                half_width,
                running_ci: half_width.map(|h| (gain(dir, m - h), gain(dir, m + h))),
            })?;
            if enough(&pairs) {
                break;
            }
        }
        Ok(Ok(self.ended(pairs)))
    }

    /// A series that ended (decided, or failed on a run) leaves nothing
    /// to go on from.
    fn ended(&self, pairs: Vec<Pair>) -> Vec<Pair> {
        if let Some(j) = &self.journal {
            j.clear();
        }
        pairs
    }
}

/// Pairs measured until the sequential `rule` decides at one of `looks`
/// (or the last look is reached), and the look that ended them: `None`
/// when the series stopped before any look (a failure, or `halt`).
pub(crate) type Sequential = (
    std::result::Result<Vec<Pair>, (Side, RunFailure)>,
    Option<sequential::Look>,
);

impl Evaluator<'_> {
    /// [`Evaluator::measure_pairs`] under a sequential rule: what EVALUATE,
    /// the simplifier's non-inferiority test and a replay all measure.
    pub(crate) fn measure_sequential(
        &mut self,
        base: &Worktree,
        cand: &Worktree,
        rule: &sequential::Rule,
        looks: &[usize],
        rng: &mut SplitMix64,
        halt: impl FnMut() -> bool,
    ) -> Result<Sequential> {
        let mut last = None;
        let max = looks.last().copied().unwrap_or(sequential::LOOKS[0]);
        let measured = self.measure_pairs(
            base,
            cand,
            max,
            rng,
            |p| match look_now(p, rule, looks) {
                Some(l) => {
                    last = Some(l);
                    l.decision != sequential::Decision::Continue
                }
                None => false,
            },
            halt,
        )?;
        Ok((measured, last))
    }
}

/// Setup and guards (builds, test suites) get a generous multiple of the
/// per-measurement timeout, at least four minutes.
pub(crate) fn long_timeout(brief: &Brief) -> Duration {
    brief.metric.timeout.max(Duration::from_secs(60)) * 4
}

/// How the Brief says to read its metric, in the parser's terms.
pub(crate) fn metric_parse(brief: &Brief) -> MetricParse<'_> {
    match &brief.metric.parse {
        Parse::MetricLine => MetricParse::MetricLine {
            name: &brief.metric.name,
        },
        Parse::Regex(re) => MetricParse::Regex(re),
        Parse::Json(p) => MetricParse::Json(p),
    }
}

fn failure_of(out: &exec::CommandOutput, what: &str) -> Option<RunFailure> {
    let reason = match out.status {
        CommandOutcome::Success => return None,
        _ if out.ended_by.is_some() => {
            format!("{what} {}", out.ended_by.as_deref().unwrap_or_default())
        }
        CommandOutcome::Failed => {
            format!("{what} exited with code {}", out.exit_code.unwrap_or(-1))
        }
        CommandOutcome::TimedOut => format!(
            "{what} timed out after {:.0}s (its process group was killed)",
            out.elapsed.as_secs_f64()
        ),
        CommandOutcome::Killed => format!("{what} was killed by a signal"),
        CommandOutcome::Interrupted => format!("{what} was interrupted"),
    };
    Some(RunFailure::Failed {
        reason,
        output: compress::excerpt(&out.output, FAILURE_OUTPUT_CHARS),
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

/// A measured iteration as tests need one: `n` pairs of medians `base` →
/// `cand`, mean log ratio `d` with a symmetric 95% interval of ±`half`, in
/// `dir`; a keep gets a commit named after its number.
#[cfg(test)]
pub(crate) fn measured_for_test(
    i: u32,
    verdict: crate::model::Verdict,
    dir: Direction,
    (base, cand): (f64, f64),
    d: f64,
    half: f64,
    n: usize,
) -> crate::model::IterationRecord {
    let mut r = crate::model::IterationRecord::new(i, verdict);
    r.measured = Some(Comparison {
        pairs: vec![
            Pair {
                base,
                cand,
                cand_first: false,
                d,
            };
            n
        ],
        base_median: base,
        cand_median: cand,
        effect: gain(dir, d),
        ci: (gain(dir, d - half), gain(dir, d + half)),
        p: 0.5,
        looks: 1,
        theta1: 0.02,
        alpha: 0.05,
        delta0: 0.0,
        rule: String::new(),
        alpha_look: 0.017,
        s_h: 0.02,
        noise_changed: false,
        d_mean: d,
        d_ci: (d - half, d + half),
        direction: None,
        seconds: None,
    });
    if verdict == crate::model::Verdict::Keep {
        r.commit = Some(format!("{i:040}"));
    }
    r
}

/// Examines the pairs measured so far with the sequential rule, if a look is due.
pub(crate) fn look_now(
    pairs: &[Pair],
    rule: &sequential::Rule,
    looks: &[usize],
) -> Option<sequential::Look> {
    let n = pairs.len();
    if !looks.contains(&n) {
        return None;
    }
    let d: Vec<f64> = pairs.iter().map(|p| p.d).collect();
    let mut l = sequential::look(&d, rule);
    if looks.last() == Some(&n) && l.decision == sequential::Decision::Continue {
        l.decision = sequential::Decision::Discard;
        l.why = sequential::final_why(n);
    }
    Some(l)
}

/// A finished decision: keep or not, the comparison, the reason in words,
/// and for a discard its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub keep: bool,
    pub comparison: Comparison,
    pub reason: String,
    pub discard: Option<DiscardKind>,
}

/// The comparison report and the reason in words for a finished sequence.
pub(crate) fn report(
    dir: Direction,
    pairs: Vec<Pair>,
    last: &sequential::Look,
    rule: &sequential::Rule,
    alpha: f64,
    looks: &[usize],
) -> Decided {
    let looks_taken = looks
        .iter()
        .position(|&n| n == last.n)
        .map_or(looks.len(), |i| i + 1);
    let base_median = stats::median(&pairs.iter().map(|p| p.base).collect::<Vec<_>>());
    let cand_median = stats::median(&pairs.iter().map(|p| p.cand).collect::<Vec<_>>());
    let effect = gain(dir, last.mean);
    let ci = (gain(dir, last.ci95.0), gain(dir, last.ci95.1));
    let keep = last.decision == sequential::Decision::Keep;
    let n = pairs.len();
    let theta1 = rule.theta1_log.exp() - 1.0;
    let mut reason = format!(
        "{}: {} (95% CI), {} at {n} pairs",
        if keep { "kept" } else { "discarded" },
        crate::text::number::effect_ci_in(dir.sense(), effect, ci),
        crate::text::number::p_value(last.p, rule.alphas[last.index])
    );
    let upper90 = gain(dir, last.upper90);
    // Futility on the rule's own (log) scale: mapped to gains, the bound
    // and θ₁ would not compare the same for a minimized metric. And only
    // when the 95% interval the user reads excludes θ₁ as well: the bound
    // borrows the pooled noise, the interval does not, and a discard shown
    // as `[-45.5, +18.6]` with θ₁ 11% must not be filed as falsified.
    let futile = last.upper90 < rule.theta1_log && ci.1 < theta1;
    let discard = (!keep).then(|| DiscardKind::of(ci, futile));
    match discard {
        Some(DiscardKind::Worse) => reason.push_str(" (worse: significantly worse than the base)"),
        Some(DiscardKind::Futile) => reason.push_str(&format!(
            " (futile: cannot reach the minimum detectable gain: {} < θ₁ {:.1}%)",
            crate::text::number::upper_bound(
                90,
                upper90,
                rule.noise.is_some_and(|h| h.nu0() > 0.0) && !last.noise_changed
            ),
            theta1 * 100.0
        )),
        Some(DiscardKind::Inconclusive) if last.upper90 < rule.theta1_log => {
            reason.push_str(&format!(
                " (inconclusive: stopped early, the pooled noise says it cannot reach θ₁ {:.1}%, but its own 95% interval still does; it may be tried again)",
                theta1 * 100.0
            ));
        }
        Some(DiscardKind::Inconclusive) => reason.push_str(&format!(
            " (inconclusive: {}; it may be tried again)",
            last.why
        )),
        // REVIEW's and EVALUATE's kinds, never the rule's.
        Some(DiscardKind::BlockedByReview | DiscardKind::Screened | DiscardKind::Neutral)
        | None => {}
    }
    if last.noise_changed {
        reason.push_str("; noise changed: this iteration's spread is far above the history");
    }
    let comparison = Comparison {
        pairs,
        base_median,
        cand_median,
        effect,
        ci,
        p: last.p,
        looks: looks_taken as u32,
        theta1,
        alpha,
        delta0: rule.delta0,
        rule: format!(
            "sequential paired t-test on log ratios, looks at {} pairs",
            looks
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
        alpha_look: rule.alphas[last.index],
        s_h: rule.noise.map(|h| h.s_h).unwrap_or(0.0),
        noise_changed: last.noise_changed,
        d_mean: last.mean,
        d_ci: last.ci95,
        direction: Some(dir),
        seconds: None,
    };
    Decided {
        keep,
        comparison,
        reason,
        discard,
    }
}

/// Runs the sequential rule over an already measured series (the benchmark
/// and tests; the runner measures pair by pair with the same looks).
pub fn decide_series(
    dir: Direction,
    pairs: &[Pair],
    rule: &sequential::Rule,
    alpha: f64,
    max_pairs: u32,
) -> Option<Decided> {
    let looks = sequential::looks_for(max_pairs);
    for &n in &looks {
        if pairs.len() < n {
            return None;
        }
        let l = look_now(&pairs[..n], rule, &looks)?;
        if l.decision != sequential::Decision::Continue {
            return Some(report(dir, pairs[..n].to_vec(), &l, rule, alpha, &looks));
        }
    }
    None
}

/// The confirmation's looks: 12 pairs, then 20 when the first 12 leave the
/// sign of the gain open.
pub const CONFIRM_LOOKS: [usize; 2] = [12, 20];

/// Whether a confirmation may stop at its first look: the 97.5% interval of
/// the mean log ratio excludes zero (two looks, each at 97.5%, keep the 95%
/// claim honest), or the spread is degenerate.
pub fn confirmation_settled(pairs: &[Pair]) -> bool {
    let d: Vec<f64> = pairs.iter().map(|x| x.d).collect();
    let (m, se) = (stats::mean(&d), stats::sd(&d) / (d.len() as f64).sqrt());
    let half = stats::t_quantile(0.9875, (d.len() - 1) as f64) * se;
    !(half.is_finite()) || m - half > 0.0 || m + half < 0.0
}

/// Summarizes a confirmation test (start commit as "base", best as "cand").
/// Its interval is the 97.5% one at either look: two looks at that level
/// bound the chance of confirming no gain by 2 × 1.25% (the claim's
/// one-sided 2.5%, `Confirmation::ALPHA`), which a 95% interval at the
/// second look did not (3.2% in simulation).
pub fn confirm(dir: Direction, start: &str, best: &str, pairs: Vec<Pair>) -> Confirmation {
    let d: Vec<f64> = pairs.iter().map(|p| p.d).collect();
    let test = stats::paired_t(&d, 0.0);
    let mean = stats::mean(&d);
    let half = (d.len() > 1).then(|| {
        stats::t_quantile(0.9875, (d.len() - 1) as f64) * stats::sd(&d) / (d.len() as f64).sqrt()
    });
    let (p, ci) = match (test, half) {
        (Some(t), Some(h)) if h.is_finite() => (t.p_one_sided, (mean - h, mean + h)),
        (Some(t), _) => (t.p_one_sided, t.ci95),
        _ => (1.0, (mean, mean)),
    };
    let effect = gain(dir, mean);
    let ci = (gain(dir, ci.0), gain(dir, ci.1));
    let why = format!(
        "confirmed cumulative gain {} (97.5% CI) over the start of the run, {} at {} pairs",
        crate::text::number::effect_ci_in(dir.sense(), effect, ci),
        crate::text::number::p_value(p, Confirmation::ALPHA),
        pairs.len()
    );
    Confirmation {
        start: start.to_string(),
        best: best.to_string(),
        best_median: stats::median(&pairs.iter().map(|p| p.cand).collect::<Vec<_>>()),
        start_median: stats::median(&pairs.iter().map(|p| p.base).collect::<Vec<_>>()),
        pairs,
        effect,
        ci,
        p,
        why,
    }
}

/// Noise calibration from A/A pairs: both sides run the same tree.
pub fn calibrate(pairs: Vec<Pair>, max_pairs: u32, alpha: f64, noise_floor: f64) -> Calibration {
    let d: Vec<f64> = pairs.iter().map(|p| p.d).collect();
    let mut logs: Vec<f64> = pairs.iter().map(|p| p.base.ln()).collect();
    logs.extend(pairs.iter().map(|p| p.cand.ln()));
    let mut values: Vec<f64> = pairs.iter().map(|p| p.base).collect();
    values.extend(pairs.iter().map(|p| p.cand));
    let noise_sd = crate::model::NoiseHistory::pool([d.as_slice()])
        .map(|h| h.s_h)
        .unwrap_or(0.0);
    Calibration {
        median: stats::median(&values),
        run_sd: stats::sd(&logs),
        noise_sd,
        mean_d: stats::mean(&d),
        pairs_per_decision: max_pairs,
        theta1: sequential::theta1(noise_floor, noise_sd),
        alpha_look: Some(sequential::alphas_for(alpha, max_pairs)[0]),
        advice: sequential::noise_advice(noise_sd, noise_floor),
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

    fn rule(noise_floor: f64) -> sequential::Rule {
        sequential::Rule {
            alphas: [0.018; sequential::N_LOOKS],
            delta0: (1.0f64 + noise_floor).ln(),
            theta1_log: (1.0f64 + sequential::theta1(noise_floor, 0.01)).ln(),
            noise: Some(crate::model::NoiseHistory {
                s_h: 0.01,
                nu_h: 9.0,
            }),
        }
    }

    fn decide(p: &[Pair], noise_floor: f64) -> (bool, Comparison, String) {
        let d = decide_series(Direction::Minimize, p, &rule(noise_floor), 0.05, 12).unwrap();
        (d.keep, d.comparison, d.reason)
    }

    #[test]
    fn clear_gain_is_kept_at_three_pairs_and_noop_is_not() {
        let gainful = pairs(&[(100.0, 80.0), (101.0, 81.0), (99.0, 79.5)]);
        let (keep, cmp, reason) = decide(&gainful, 0.0);
        assert!(keep, "{reason}");
        assert_eq!(cmp.looks, 1);
        assert!((cmp.effect - 0.2).abs() < 0.01, "{}", cmp.effect);
        assert!(
            reason.starts_with("kept: +19.8%") && reason.contains("at 3 pairs"),
            "{reason}"
        );
        let noop = pairs(&[
            (100.0, 101.0),
            (101.0, 100.0),
            (99.0, 99.5),
            (100.5, 100.0),
            (100.2, 100.9),
            (100.0, 100.1),
            (99.0, 98.9),
            (100.0, 100.4),
            (100.0, 99.9),
            (101.0, 101.2),
            (99.5, 99.4),
            (100.0, 100.3),
        ]);
        let (keep, cmp, reason) = decide(&noop, 0.0);
        assert!(!keep, "{reason}");
        assert!(cmp.pairs.len() <= 12);
    }

    #[test]
    fn futile_needs_the_interval_the_user_reads_to_exclude_theta1_too() {
        let rule = sequential::Rule {
            alphas: [0.017; sequential::N_LOOKS],
            delta0: 0.0,
            theta1_log: 0.05f64.ln_1p(),
            noise: None,
        };
        let pairs: Vec<Pair> = (0..3)
            .map(|_| Pair {
                base: 100.0,
                cand: 100.0,
                cand_first: false,
                d: 0.0,
            })
            .collect();
        let look = |ci95: (f64, f64)| sequential::Look {
            n: 3,
            index: 0,
            decision: sequential::Decision::Discard,
            mean: 0.0,
            p: 0.5,
            ci95,
            upper90: 0.01,
            noise_changed: false,
            why: "cannot reach the minimum detectable gain",
        };
        let decided = |ci95| {
            report(
                Direction::Minimize,
                pairs.clone(),
                &look(ci95),
                &rule,
                0.05,
                &[3, 5],
            )
        };
        let wide = decided((-0.1, 0.2));
        assert_eq!(wide.discard, Some(DiscardKind::Inconclusive));
        assert!(
            wide.reason.contains("its own 95% interval still does"),
            "{}",
            wide.reason
        );
        let tight = decided((-0.1, 0.03));
        assert_eq!(tight.discard, Some(DiscardKind::Futile));
        assert!(tight.reason.contains("(futile: "), "{}", tight.reason);
    }

    #[test]
    fn a_looks_cap_makes_the_last_look_final() {
        let noop = pairs(&[(100.0, 100.5), (100.0, 99.8), (100.0, 100.1)]);
        let d = decide_series(Direction::Minimize, &noop, &rule(0.0), 0.05, 3).unwrap();
        assert!(!d.keep);
        assert_eq!(d.comparison.pairs.len(), 3);
    }

    #[test]
    fn maximize_flips_the_sign() {
        assert!(oriented_log_ratio(Direction::Maximize, 100.0, 120.0) > 0.0);
        assert!(oriented_log_ratio(Direction::Minimize, 100.0, 120.0) < 0.0);
        assert!((gain(Direction::Maximize, (1.2f64).ln()) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn identical_differences_decide_without_dividing_by_zero() {
        let p = pairs(&[(100.0, 90.0); 3]);
        let (keep, cmp, _) = decide(&p, 0.0);
        assert!(keep);
        assert!(cmp.p.is_finite());
    }

    #[test]
    fn noise_floor_raises_the_bar() {
        let small: Vec<Pair> = pairs(
            &[
                (100.0, 98.0),
                (100.0, 98.1),
                (100.0, 97.9),
                (100.0, 98.0),
                (100.0, 98.05),
            ]
            .repeat(3),
        );
        assert!(decide(&small, 0.0).0);
        assert!(!decide(&small, 0.05).0);
    }

    #[test]
    fn confirmation_reports_the_gain_of_best_over_start() {
        let p = pairs(&[(100.0, 80.0), (101.0, 80.5), (99.0, 79.0), (100.0, 80.2)]);
        let c = confirm(Direction::Minimize, "a", "b", p);
        assert!((c.effect - 0.2).abs() < 0.01);
        assert!((c.best_median - 80.1).abs() < 0.2);
        assert!(c.why.starts_with("confirmed cumulative gain +20"));
    }
}
