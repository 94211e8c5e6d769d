//! Red lights: the loop knows when to stop.
//!
//! Every detector is a pure function over the archive, so each can be tested
//! on synthetic histories and benchmarked for false alarms without running a
//! single command. The runner calls them in CHECK after every iteration; a
//! RED alarm stops the run until a human runs `ooda ack`, a YELLOW one is
//! written down and shown but does not stop. Thresholds live in
//! [`Thresholds`] (defaults chosen so that a 100-iteration night of
//! legitimate work raises a false alarm at most ~5% of the time; see
//! `benches/redlight_sim.rs`).

use crate::archive::history::View;
use crate::archive::history::fact::{Fact, flag};
use crate::model::{Direction, IterationRecord, Verdict};
use crate::stats;

pub(crate) use crate::model::{Alarm, AlarmKind, Thresholds};

/// The iterations after the baseline and after the last human acknowledgement:
/// an `ooda ack` accepts the evidence so far; only new evidence may stop again.
pub fn window(history: &[IterationRecord]) -> &[IterationRecord] {
    let since = history
        .iter()
        .rposition(|r| r.acknowledged.is_some())
        .unwrap_or(1)
        .max(1);
    history.get(since..).unwrap_or(&[])
}

/// (a) Exact cycle: the newest keep restores a tree that was already kept
/// (or the start of the run): the loop is undoing its own work.
pub fn exact_cycle(history: &[IterationRecord]) -> Option<Alarm> {
    let last = history.last()?;
    if last.verdict != Verdict::Keep {
        return None;
    }
    let tree = last.tree.as_deref()?;
    let earlier = history[..history.len() - 1].iter().rev().find(|r| {
        (r.verdict == Verdict::Keep || r.verdict == Verdict::Baseline)
            && r.tree.as_deref() == Some(tree)
    })?;
    Some(Alarm::red(
        AlarmKind::ExactCycle,
        format!(
            "iteration {} kept tree {} which iteration {} already had: the loop is going in a circle",
            last.iteration,
            short(tree),
            earlier.iteration
        ),
    ))
}

/// The earlier discarded candidate with exactly this tree, when its verdict
/// settles it. Only a discard is reused: re-keeping an earlier kept tree
/// unmeasured would commit a revert nobody measured (it is measured, and the
/// exact-cycle red light judges it). A falsified discard is reused; an
/// inconclusive one is measured once more, and after a second inconclusive
/// measurement it is settled too.
pub fn identical_candidate<'a>(
    history: &'a [IterationRecord],
    tree: &str,
) -> Option<&'a IterationRecord> {
    let same: Vec<&IterationRecord> = history
        .iter()
        .filter(|r| r.tree.as_deref() == Some(tree) && r.verdict == Verdict::Discard)
        // One screening run settles nothing.
        .filter(|r| !r.screened())
        .collect();
    same.iter()
        .rev()
        .find(|r| r.falsifies())
        .or_else(|| {
            (same.len() >= MAX_INCONCLUSIVE)
                .then(|| same.last())
                .flatten()
        })
        .copied()
}

/// [`identical_candidate`] over the archive's rows (trees by hash).
pub fn identical_candidate_in<'a>(facts: &'a [Fact], tree: &str) -> Option<&'a Fact> {
    let h = crate::archive::history::fact::hash(tree.as_bytes());
    let same: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.tree == h && f.is(Verdict::Discard))
        // One screening run settles nothing.
        .filter(|f| !f.screened())
        .collect();
    same.iter()
        .rev()
        .find(|f| f.falsifies())
        .or_else(|| {
            (same.len() >= MAX_INCONCLUSIVE)
                .then(|| same.last())
                .flatten()
        })
        .copied()
}

/// Inconclusive measurements of one candidate after which it counts as
/// falsified: trying it again and again would spend the night and inflate
/// the false-keep rate of that one change.
pub const MAX_INCONCLUSIVE: usize = 2;

/// (b) Direction flips: on one axis, the recent changes keep reversing
/// with steps of about the same size (bisection shrinks and is fine; a
/// widening search grows and is fine too).
pub fn direction_flips(history: &[IterationRecord], th: &Thresholds) -> Option<Alarm> {
    let mut names: Vec<&str> = history
        .iter()
        .flat_map(|r| r.axes.iter().map(|a| a.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let changes: Vec<(u32, &str, Option<f64>)> = history
            .iter()
            .filter(|r| r.verdict.was_measured() && r.verdict != Verdict::Baseline)
            // A sweep jumps to wherever is least explored: no direction.
            .filter(|r| !r.screen)
            .filter_map(|r| {
                r.axes
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| (r.iteration, a.direction.as_str(), a.step))
            })
            .collect();
        if changes.len() < th.flip_window {
            continue;
        }
        let recent = &changes[changes.len() - th.flip_window..];
        let flips = recent.windows(2).filter(|w| w[0].1 != w[1].1).count();
        if flips < th.flip_min {
            continue;
        }
        let steps: Vec<Option<f64>> = recent.iter().map(|c| c.2).collect();
        // The first and last quarter (4 of the default 16) of the window.
        let q = (steps.len() / 4).max(1);
        let changing = match (
            median_step(&steps[..q]),
            median_step(&steps[steps.len() - q..]),
        ) {
            // Steps that shrink (bisection) or grow (a widening search) are
            // not the constant back-and-forth of an oscillation.
            (Some(first), Some(last)) => last < 0.5 * first || last > 2.0 * first,
            _ => false,
        };
        if !changing {
            return Some(Alarm::red(
                AlarmKind::DirectionFlips,
                format!(
                    "axis {name} changed direction {flips} times in its last {} changes (iterations {}–{}) with steps of about the same size",
                    th.flip_window,
                    recent[0].0,
                    recent[recent.len() - 1].0
                ),
            ));
        }
    }
    None
}

fn median_step(steps: &[Option<f64>]) -> Option<f64> {
    let v: Vec<f64> = steps
        .iter()
        .map(|s| s.map(f64::abs))
        .collect::<Option<Vec<f64>>>()?;
    Some(stats::median(&v))
}

/// Divergence, first stage: is the re-measured base getting worse?
/// Returns the evidence when the Mann-Kendall trend over the window is
/// significant and large; the caller then runs the anchor test.
pub fn base_trend(
    history: &[IterationRecord],
    dir: Direction,
    run_sd: f64,
    th: &Thresholds,
) -> Option<String> {
    let series: Vec<(u32, f64)> = history
        .iter()
        // A screen's base is an older median of record, not a fresh run.
        .filter(|r| !r.screened())
        .filter_map(|r| r.measured.as_ref().map(|m| (r.iteration, m.base_median)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    if series.len() < th.trend_window {
        return None;
    }
    let recent = &series[series.len() - th.trend_window..];
    // Oriented so that upward means worse.
    let worse: Vec<f64> = recent
        .iter()
        .map(|(_, v)| match dir {
            Direction::Minimize => v.ln(),
            Direction::Maximize => -v.ln(),
        })
        .collect();
    let mk = stats::mann_kendall(&worse)?;
    let total = mk.sen_slope * (th.trend_window - 1) as f64;
    if mk.z > th.trend_z && total > th.trend_min.max(2.0 * run_sd) {
        Some(format!(
            "the re-measured base got worse over iterations {}–{}: Mann-Kendall Z = {:.2}, Sen slope {:+.2}% per iteration ({:+.1}% over the window)",
            recent[0].0,
            recent[recent.len() - 1].0,
            mk.z,
            mk.sen_slope * 100.0,
            total.exp_m1() * 100.0
        ))
    } else {
        None
    }
}

/// Divergence, second form: the candidates' measured effects trend down and
/// the last few were all significant regressions. Candidates predicted to
/// be worse do not count: a driver that explores a point it expects to be
/// worse, and finds it worse, is calibrated, not diverging. A prediction of
/// 0 ("no idea") counts, so an agent cannot escape the light by it.
pub fn regressions(history: &[IterationRecord], th: &Thresholds) -> Option<Alarm> {
    let measured: Vec<(u32, f64, f64)> = history
        .iter()
        .filter(|r| r.predicted.as_ref().is_none_or(|p| p.effect >= 0.0))
        // A sweep point was chosen for being unexplored, not predicted to
        // gain, and a screened-out one is a single unpaired run.
        .filter(|r| !r.screen)
        .filter_map(|r| r.measured.as_ref().map(|m| (r.iteration, m.effect, m.ci.1)))
        .collect();
    if measured.len() < th.trend_window.max(th.regressions) {
        return None;
    }
    let last = &measured[measured.len() - th.regressions..];
    if !last.iter().all(|(_, _, hi)| *hi < 0.0) {
        return None;
    }
    let recent = &measured[measured.len() - th.trend_window..];
    let effects: Vec<f64> = recent.iter().map(|m| m.1).collect();
    let mk = stats::mann_kendall(&effects)?;
    (mk.z < -th.regression_trend_z).then(|| {
        Alarm::red(
            AlarmKind::Regressions,
            format!(
                "the last {} candidates (iterations {}) were all significantly worse and the measured effects trend down (Mann-Kendall Z = {:.2})",
                th.regressions,
                last.iter().map(|m| m.0.to_string()).collect::<Vec<_>>().join(", "),
                mk.z
            ),
        )
    })
}

/// A relative gain in the Brief's direction as a log ratio (positive = better).
/// Gains are skewed (a 5× slowdown is −400%, a 5× speed-up only +80%); log
/// ratios are what was measured, symmetric, and comparable across sizes.
fn gain_to_log(dir: Direction, g: f64) -> Option<f64> {
    match dir {
        Direction::Minimize => (g < 1.0).then(|| -(1.0 - g).ln()),
        Direction::Maximize => (g > -1.0).then(|| (1.0 + g).ln()),
    }
}

/// One prediction's standardized error, on the log-ratio scale the runner
/// measures on: (measured − predicted) / √(se² + τ²), with τ the stated
/// uncertainty (default 0.5·|p| + 0.5%) mapped by the delta method.
pub fn prediction_z(r: &IterationRecord, dir: Direction) -> Option<f64> {
    let (d_meas, se, d_pred, tau) = prediction_parts(r, dir)?;
    let denom = (se * se + tau * tau).sqrt();
    (denom > 0.0 && denom.is_finite()).then(|| (d_meas - d_pred) / denom)
}

/// (measured log ratio, its standard error, predicted log ratio, τ in log units).
pub fn prediction_parts(r: &IterationRecord, dir: Direction) -> Option<(f64, f64, f64, f64)> {
    let p = r.predicted.as_ref()?;
    let m = r.measured.as_ref()?;
    // A 3-pair interval has 2 degrees of freedom and is sometimes far too
    // narrow; the pooled noise history bounds the standard error from below.
    let n = m.pairs.len().max(1) as f64;
    let se = ((m.d_ci.1 - m.d_ci.0) / (2.0 * 1.96)).max(m.s_h / n.sqrt());
    // Only the side where the log ratio is undefined is bounded: a predicted
    // 3× slowdown (−200% for minimize) is a legitimate prediction.
    let effect = match dir {
        Direction::Minimize => p.effect.min(0.99),
        Direction::Maximize => p.effect.max(-0.99),
    };
    let d_pred = gain_to_log(dir, effect)?;
    let tau_gain = if p.sd > 0.0 {
        p.sd
    } else {
        0.5 * p.effect.abs() + 0.005
    };
    // d(log ratio)/d(gain): 1/(1−g) for minimize, 1/(1+g) for maximize.
    let slope = match dir {
        Direction::Minimize => 1.0 / (1.0 - effect),
        Direction::Maximize => 1.0 / (1.0 + effect),
    };
    (se.is_finite() && m.d_mean.is_finite()).then_some((
        m.d_mean,
        se.max(0.0),
        d_pred,
        tau_gain * slope,
    ))
}

/// Model mismatch: are the agent's predictions consistent with what was
/// measured? Over the last window: Σz² (χ²-like, "unreliable") and Σz/√n
/// ("biased": optimistic when negative).
///
/// Only an agent's predictions count. The builtin knob search refits its
/// surrogate from the archive every iteration and proposes points by a fixed
/// schedule, so a poor surrogate guess misleads nothing; an agent's wrong
/// picture of the system, in contrast, steers every plan it makes.
pub fn model_mismatch(
    history: &[IterationRecord],
    dir: Direction,
    th: &Thresholds,
) -> Option<Alarm> {
    let zs: Vec<(u32, f64)> = history
        .iter()
        .filter(|r| r.driver != "builtin")
        .filter_map(|r| prediction_z(r, dir).map(|z| (r.iteration, z)))
        .collect();
    if zs.len() < th.mismatch_window {
        return None;
    }
    let recent = &zs[zs.len() - th.mismatch_window..];
    let n = recent.len() as f64;
    let sum_sq: f64 = recent.iter().map(|(_, z)| z * z).sum();
    let bias = recent.iter().map(|(_, z)| z).sum::<f64>() / n.sqrt();
    let span = format!("iterations {}–{}", recent[0].0, recent[recent.len() - 1].0);
    if bias.abs() > th.mismatch_bias {
        let way = if bias < 0.0 {
            "optimistic: measured effects fall short of predictions"
        } else {
            "pessimistic: measured effects beat predictions"
        };
        return Some(Alarm::red(
            AlarmKind::PredictionsBiased,
            format!("predictions are biased ({way}); Σz/√n = {bias:.2} over {span}"),
        ));
    }
    if sum_sq > th.mismatch_chi2 {
        return Some(Alarm::red(
            AlarmKind::PredictionsUnreliable,
            format!(
                "predictions miss by more than their stated uncertainty: Σz² = {sum_sq:.1} > {} over {span}",
                th.mismatch_chi2
            ),
        ));
    }
    None
}

/// Failed iterations in a row. An iteration cut short because the agent's
/// API stayed unavailable is skipped: an outage of the provider is neither
/// the agent's failure nor a success, and waiting it out must not end the
/// night.
pub fn failure_streak(history: &[IterationRecord], th: &Thresholds) -> Option<Alarm> {
    let tail: Vec<&IterationRecord> = history
        .iter()
        .rev()
        .filter(|r| !r.cut_by_outage())
        .take(th.failure_streak)
        .collect();
    if tail.len() < th.failure_streak || !tail.iter().all(|r| r.is_failure()) {
        return None;
    }
    let ids: Vec<String> = tail
        .iter()
        .rev()
        .map(|r| format!("{} ({})", r.iteration, r.verdict.as_str()))
        .collect();
    Some(Alarm::red(
        AlarmKind::FailureStreak,
        format!(
            "{} failed iterations in a row: {}; the last said: {}",
            th.failure_streak,
            ids.join(", "),
            tail[0].reason
        ),
    ))
}

/// Iterations in a row whose agent never produced a change to measure
/// (`invalid` without a measurement; outages skipped, as for the failure
/// streak), with what stopped them most often: a model too weak for its
/// task fails the same way every time, and the night should say how.
pub fn agent_ineffective(history: &[IterationRecord], th: &Thresholds) -> Option<Alarm> {
    let tail: Vec<&IterationRecord> = history
        .iter()
        .rev()
        .filter(|r| !r.cut_by_outage() && r.verdict != Verdict::Baseline)
        .take(th.agent_ineffective)
        .collect();
    if tail.len() < th.agent_ineffective || !tail.iter().all(|r| ineffective_cause(r).is_some()) {
        return None;
    }
    let mut causes: Vec<(&'static str, usize)> = Vec::new();
    for r in &tail {
        let c = ineffective_cause(r).unwrap_or("other");
        match causes.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => causes.push((c, 1)),
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.1));
    let ids: Vec<String> = tail.iter().rev().map(|r| r.iteration.to_string()).collect();
    let others: Vec<String> = causes[1..]
        .iter()
        .map(|(c, n)| format!("{c} ({n})"))
        .collect();
    Some(Alarm::red(
        AlarmKind::AgentIneffective,
        format!(
            "{} iterations in a row never reached EVALUATE ({}); the dominant cause: {} ({} of {}){}; the last said: {}",
            tail.len(),
            ids.join(", "),
            causes[0].0,
            causes[0].1,
            tail.len(),
            if others.is_empty() {
                String::new()
            } else {
                format!("; also {}", others.join(", "))
            },
            tail[0].reason
        ),
    ))
}

/// Why one iteration's agent ran and produced nothing to measure, in the
/// words the morning report uses; `None` when it did produce a change (a
/// guard then failed it), or did not run at all (its process or its API
/// failed: the failure streak's, not a weak model's).
pub(crate) fn ineffective_cause(r: &IterationRecord) -> Option<&'static str> {
    use crate::model::sign;
    let warned = |w: &str| {
        r.agent_calls
            .iter()
            .any(|c| c.warnings.iter().any(|x| x.contains(w)))
    };
    let reason = r.reason.as_str();
    // A call that failed outright (a CLI's exit code, a model API's error)
    // did not run the agent's work at all: that is the failure streak's.
    let ran = !r
        .agent_calls
        .iter()
        .any(|c| c.outcome == crate::model::CallOutcome::Failed)
        && !reason.contains("model API:")
        && !reason.contains("exited with code");
    if r.verdict != Verdict::Invalid || r.measured.is_some() || !r.changed_paths.is_empty() || !ran
    {
        return None;
    }
    Some(
        if reason.contains("already falsified") || reason.starts_with("plan rejected (falsified)") {
            "plans rejected as falsified"
        } else if reason.starts_with("plan rejected (repeat)") {
            "plans rejected as repeats"
        } else if warned(sign::BLOCKS_FAILED) || reason.contains(sign::BLOCKS_FAILED) {
            "edits did not apply"
        } else if warned(sign::NO_TOOL_CALLS) {
            "no tool calls"
        } else if reason.contains(sign::CUT_OFF) || warned(sign::CUT_OFF) {
            "answers cut off at max_output"
        } else if reason.contains(sign::NOT_VALIDATED) {
            "tool calls that did not validate"
        } else if reason.starts_with("plan rejected") {
            "plans rejected"
        } else if reason.contains("changed nothing") {
            "EXECUTE changed nothing"
        } else if reason.contains("timed out") {
            "steps timed out"
        } else {
            "other failures"
        },
    )
}

pub fn scope(history: &[IterationRecord], th: &Thresholds) -> Option<Alarm> {
    let blocked: Vec<u32> = history
        .iter()
        .filter(|r| r.verdict == Verdict::Blocked)
        .map(|r| r.iteration)
        .collect();
    scope_of(&blocked, th)
}

fn scope_of(blocked: &[u32], th: &Thresholds) -> Option<Alarm> {
    (blocked.len() >= th.scope_violations).then(|| {
        Alarm::red(
            AlarmKind::Scope,
            format!("{} changes were blocked for touching paths outside scope, protected paths or ooda's own files (the knobs file, ooda.yaml, briefs/…) (iterations {:?})", blocked.len(), blocked),
        )
    })
}

/// The iterations since the last keep (or the baseline), newest first.
pub fn since_keep(history: &[IterationRecord]) -> impl Iterator<Item = &IterationRecord> {
    history
        .iter()
        .rev()
        .take_while(|r| r.verdict != Verdict::Keep && r.verdict != Verdict::Baseline)
}

/// Non-keeps in a row at the end of the history.
pub fn plateau_length(history: &[IterationRecord]) -> usize {
    // A screened-out point was one run, not a decision: a sweep of them
    // must not read as the search stalling.
    since_keep(history).filter(|r| !r.screened()).count()
}

/// Every RED alarm the archive raises now, most specific first.
pub fn red_alarms(history: &[IterationRecord], dir: Direction, th: &Thresholds) -> Vec<Alarm> {
    let w = window(history);
    // A cycle may return to any earlier tree, the baseline's included; it is
    // evidence only if the new keep is after the last acknowledgement.
    let cycle = exact_cycle(history).filter(|_| {
        history
            .last()
            .is_some_and(|l| w.last().is_some_and(|x| x.iteration == l.iteration))
    });
    [
        cycle,
        direction_flips(w, th),
        regressions(w, th),
        model_mismatch(w, dir, th),
        agent_ineffective(w, th),
        failure_streak(w, th),
        scope(w, th),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The iterations the red lights judge in an archive held as a window
/// (history/view.rs): those after the last acknowledgement among the
/// newest [`crate::model::WINDOW`], all of them after the baseline
/// in a short archive. Each detector looks at its last few changes
/// (sixteen at most by default), which the window holds; what is counted
/// over the whole window since the acknowledgement (blocked changes, the
/// plateau, an exact cycle) is counted from the rows.
pub fn window_in(v: View<'_>) -> &'_ [IterationRecord] {
    let recent = v.recent();
    if v.whole() {
        return window(recent);
    }
    let since = recent
        .iter()
        .rposition(|r| r.acknowledged.is_some())
        .unwrap_or(0);
    &recent[since..]
}

/// The rows after the last acknowledgement (and after the baseline).
fn rows_since_ack(facts: &[Fact]) -> &[Fact] {
    let since = facts
        .iter()
        .rposition(|f| f.has(flag::ACKNOWLEDGED))
        .unwrap_or(1)
        .max(1);
    facts.get(since..).unwrap_or(&[])
}

/// [`plateau_length`] of [`window`], from the rows, and how many of the
/// iterations since the last keep were screened-out sweep points.
pub fn plateau_in(facts: &[Fact]) -> (usize, usize) {
    let since_keep = rows_since_ack(facts)
        .iter()
        .rev()
        .take_while(|f| !f.is(Verdict::Keep) && !f.is(Verdict::Baseline));
    since_keep.fold(
        (0, 0),
        |(n, s), f| {
            if f.screened() { (n, s + 1) } else { (n + 1, s) }
        },
    )
}

/// [`exact_cycle`] from the rows (trees compared by hash).
fn exact_cycle_in(facts: &[Fact], last: &IterationRecord) -> Option<Alarm> {
    let (newest, earlier) = facts.split_last()?;
    if !newest.is(Verdict::Keep) || newest.tree == 0 {
        return None;
    }
    let at = earlier
        .iter()
        .rev()
        .find(|f| (f.is(Verdict::Keep) || f.is(Verdict::Baseline)) && f.tree == newest.tree)?;
    Some(Alarm::red(
        AlarmKind::ExactCycle,
        format!(
            "iteration {} kept tree {} which iteration {} already had: the loop is going in a circle",
            newest.iteration,
            short(last.tree.as_deref().unwrap_or_default()),
            at.iteration
        ),
    ))
}

/// [`red_alarms`] of the archive a runner holds.
pub fn red_alarms_in(v: View<'_>, dir: Direction, th: &Thresholds) -> Vec<Alarm> {
    let Some(last) = v.last() else {
        return Vec::new();
    };
    let facts = v.facts();
    let since = rows_since_ack(facts);
    let cycle = exact_cycle_in(facts, last)
        .filter(|_| since.last().is_some_and(|f| f.iteration == last.iteration));
    let w = window_in(v);
    let blocked: Vec<u32> = since
        .iter()
        .filter(|f| f.is(Verdict::Blocked))
        .map(|f| f.iteration)
        .collect();
    [
        cycle,
        direction_flips(w, th),
        regressions(w, th),
        model_mismatch(w, dir, th),
        agent_ineffective(w, th),
        failure_streak(w, th),
        scope_of(&blocked, th),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn short(s: &str) -> &str {
    &s[..s.len().min(10)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::history::Prediction;
    use crate::driver::agent::answers::Axis;
    use crate::eval::{Comparison, Pair};
    use crate::model::StopReason;
    use crate::stats::SplitMix64;

    fn measured(i: u32, verdict: Verdict, base: f64, effect: f64, half_ci: f64) -> IterationRecord {
        let mut r = IterationRecord::new(i, verdict);
        r.measured = Some(Comparison {
            pairs: vec![Pair {
                base,
                cand: base * (1.0 - effect),
                cand_first: false,
                d: 0.0,
            }],
            base_median: base,
            cand_median: base * (1.0 - effect),
            effect,
            ci: (effect - half_ci, effect + half_ci),
            p: 0.5,
            looks: 1,
            theta1: 0.02,
            alpha: 0.05,
            delta0: 0.0,
            rule: String::new(),
            alpha_look: 0.017,
            s_h: 0.02,
            noise_changed: false,
            d_mean: -(1.0 - effect).ln(),
            d_ci: (
                -(1.0 - effect + half_ci).ln(),
                -(1.0 - effect - half_ci).ln(),
            ),
            direction: None,
            seconds: None,
        });
        r
    }

    fn with_axis(
        mut r: IterationRecord,
        name: &str,
        dir: &str,
        step: Option<f64>,
    ) -> IterationRecord {
        r.axes = vec![Axis {
            name: name.into(),
            direction: dir.into(),
            step,
        }];
        r
    }

    fn baseline() -> IterationRecord {
        IterationRecord::new(0, Verdict::Baseline)
    }

    #[test]
    fn an_outage_does_not_count_toward_the_failure_streak() {
        use crate::model::{AgentCall, CallOutcome, Phase};
        let th = Thresholds::default();
        let failed = |i: u32, outage: bool| {
            let mut r = IterationRecord::new(i, Verdict::Invalid);
            r.agent_calls = vec![AgentCall::new(
                Phase::Plan,
                1,
                if outage {
                    CallOutcome::Unavailable
                } else {
                    CallOutcome::Failed
                },
            )];
            r
        };
        let mut h = vec![IterationRecord::new(0, Verdict::Baseline)];
        h.extend((1..=8).map(|i| failed(i, true)));
        assert_eq!(failure_streak(&h, &th), None, "eight outages in a row");
        h.extend((9..=12).map(|i| failed(i, false)));
        assert_eq!(failure_streak(&h, &th), None, "four real failures");
        h.push(failed(13, false));
        assert!(failure_streak(&h, &th).is_some(), "the fifth real one");
    }

    #[test]
    fn exact_cycle_on_a_restored_tree_but_not_on_new_trees() {
        let mut h = vec![baseline()];
        h[0].tree = Some("t0".into());
        let mut k1 = measured(1, Verdict::Keep, 100.0, 0.1, 0.02);
        k1.tree = Some("t1".into());
        h.push(k1);
        let mut k2 = measured(2, Verdict::Keep, 90.0, 0.1, 0.02);
        k2.tree = Some("t2".into());
        h.push(k2);
        assert!(exact_cycle(&h).is_none());
        let mut back = measured(3, Verdict::Keep, 81.0, 0.05, 0.02);
        back.tree = Some("t1".into());
        h.push(back);
        let a = exact_cycle(&h).unwrap();
        assert_eq!(a.stop_reason(), Some(StopReason::RedOscillation));
        assert!(a.evidence.contains("iteration 1"), "{}", a.evidence);
    }

    #[test]
    fn a_keep_that_restores_the_baseline_tree_is_a_cycle() {
        let mut h = vec![baseline()];
        h[0].tree = Some("t0".into());
        let mut k1 = measured(1, Verdict::Keep, 100.0, 0.1, 0.02);
        k1.tree = Some("t1".into());
        let mut k2 = measured(2, Verdict::Keep, 90.0, 0.05, 0.02);
        k2.tree = Some("t0".into());
        h.push(k1);
        h.push(k2);
        let alarms = red_alarms(&h, Direction::Minimize, &Thresholds::default());
        assert_eq!(alarms[0].kind, AlarmKind::ExactCycle);
        // A kept tree is never reused unmeasured; a discarded one is.
        assert!(identical_candidate(&h, "t1").is_none());
        let mut d = measured(3, Verdict::Discard, 90.0, -0.05, 0.02);
        d.tree = Some("t3".into());
        h.push(d);
        assert_eq!(identical_candidate(&h, "t3").map(|r| r.iteration), Some(3));
    }

    #[test]
    fn flip_flopping_is_red_and_bisection_is_not() {
        let th = Thresholds::default();
        let mut flip = vec![baseline()];
        for i in 1..=16 {
            let dir = if i % 2 == 0 { "up" } else { "down" };
            flip.push(with_axis(
                measured(i, Verdict::Discard, 100.0, 0.0, 0.02),
                "TILE",
                dir,
                Some(0.25),
            ));
        }
        assert!(direction_flips(&flip, &th).is_some());
        let mut bisect = vec![baseline()];
        for i in 1..=16 {
            let dir = if i % 2 == 0 { "up" } else { "down" };
            let step = 0.25 * 0.8f64.powi(i as i32);
            bisect.push(with_axis(
                measured(i, Verdict::Discard, 100.0, 0.0, 0.02),
                "TILE",
                dir,
                Some(step),
            ));
        }
        assert!(direction_flips(&bisect, &th).is_none());
        // Without magnitudes, steps count as not shrinking.
        let mut declared = vec![baseline()];
        for i in 1..=16 {
            let dir = if i % 2 == 0 {
                "more caching"
            } else {
                "less caching"
            };
            declared.push(with_axis(
                measured(i, Verdict::Discard, 100.0, 0.0, 0.02),
                "cache",
                dir,
                None,
            ));
        }
        assert!(direction_flips(&declared, &th).is_some());
    }

    #[test]
    fn a_worsening_base_trends_and_a_noisy_plateau_does_not() {
        let th = Thresholds::default();
        let mut rng = SplitMix64::new(5);
        let worse: Vec<IterationRecord> = (1..=12)
            .map(|i| {
                measured(
                    i,
                    Verdict::Discard,
                    100.0 * (1.0 + 0.01 * i as f64) * (1.0 + 0.002 * rng.normal()),
                    0.0,
                    0.02,
                )
            })
            .collect();
        assert!(base_trend(&worse, Direction::Minimize, 0.005, &th).is_some());
        // For a maximized metric the same rising series is improving.
        assert!(base_trend(&worse, Direction::Maximize, 0.005, &th).is_none());
        let flat: Vec<IterationRecord> = (1..=12)
            .map(|i| {
                measured(
                    i,
                    Verdict::Discard,
                    100.0 * (1.0 + 0.02 * rng.normal()),
                    0.0,
                    0.02,
                )
            })
            .collect();
        assert!(base_trend(&flat, Direction::Minimize, 0.02, &th).is_none());
    }

    #[test]
    fn explorations_predicted_worse_are_not_divergence() {
        let th = Thresholds::default();
        let explored: Vec<IterationRecord> = (1..=12)
            .map(|i| {
                let mut r = measured(i, Verdict::Discard, 100.0, -0.05 * i as f64, 0.005);
                r.predicted = Some(crate::model::Prediction {
                    effect: -0.3,
                    sd: 0.2,
                });
                r
            })
            .collect();
        assert!(regressions(&explored, &th).is_none());
        // The same series predicted to help is divergence.
        let promised: Vec<IterationRecord> = explored
            .into_iter()
            .map(|mut r| {
                r.predicted = Some(crate::model::Prediction {
                    effect: 0.05,
                    sd: 0.2,
                });
                r
            })
            .collect();
        assert!(regressions(&promised, &th).is_some());
    }

    #[test]
    fn steady_regressions_are_red_and_a_mixed_series_is_not() {
        let th = Thresholds::default();
        let worse: Vec<IterationRecord> = (1..=12)
            .map(|i| measured(i, Verdict::Discard, 100.0, -0.01 * i as f64, 0.005))
            .collect();
        assert_eq!(
            regressions(&worse, &th).unwrap().stop_reason(),
            Some(StopReason::RedDivergence)
        );
        let mixed: Vec<IterationRecord> = (1..=12)
            .map(|i| {
                measured(
                    i,
                    Verdict::Discard,
                    100.0,
                    if i % 2 == 0 { 0.01 } else { -0.03 },
                    0.005,
                )
            })
            .collect();
        assert!(regressions(&mixed, &th).is_none());
    }

    #[test]
    fn optimistic_predictions_are_red_and_calibrated_ones_are_not() {
        let th = Thresholds::default();
        let mut rng = SplitMix64::new(11);
        let optimistic: Vec<IterationRecord> = (1..=10)
            .map(|i| {
                let mut r = measured(i, Verdict::Discard, 100.0, 0.002 * rng.normal(), 0.01);
                r.driver = "command:claude".into();
                r.predicted = Some(Prediction {
                    effect: 0.2,
                    sd: 0.05,
                });
                r
            })
            .collect();
        let a = model_mismatch(&optimistic, Direction::Minimize, &th).unwrap();
        // The builtin search's surrogate guesses do not count.
        let builtin: Vec<IterationRecord> = optimistic
            .iter()
            .cloned()
            .map(|mut r| {
                r.driver = "builtin".into();
                r
            })
            .collect();
        assert!(model_mismatch(&builtin, Direction::Minimize, &th).is_none());
        assert_eq!(a.kind, AlarmKind::PredictionsBiased);
        assert!(a.evidence.contains("optimistic"));
        let calibrated: Vec<IterationRecord> = (1..=10)
            .map(|i| {
                let truth = 0.03 * rng.normal();
                let mut r = measured(
                    i,
                    Verdict::Discard,
                    100.0,
                    truth + 0.005 * rng.normal(),
                    0.01,
                );
                r.predicted = Some(Prediction {
                    effect: truth + 0.02 * rng.normal(),
                    sd: 0.02,
                });
                r
            })
            .collect();
        assert!(model_mismatch(&calibrated, Direction::Minimize, &th).is_none());
    }

    #[test]
    fn an_agent_that_never_produces_a_change_is_red_with_its_dominant_cause() {
        let th = Thresholds::default();
        let weak = |i: u32, reason: &str, warning: Option<&str>| {
            let mut r = IterationRecord::new(i, Verdict::Invalid);
            r.reason = reason.into();
            if let Some(w) = warning {
                let mut c = crate::model::AgentCall::new(
                    crate::model::Phase::Execute,
                    1,
                    crate::model::CallOutcome::Ok,
                );
                c.warnings.push(w.into());
                r.agent_calls.push(c);
            }
            r
        };
        let nothing = "execute failed: the agent changed nothing, so there is nothing to measure";
        let mut h = vec![baseline()];
        for i in 1..=3 {
            h.push(weak(i, nothing, Some("the model made no tool calls")));
        }
        h.push(weak(4, "plan rejected (falsified) after 3 attempts: this hypothesis was already falsified in iteration 2", None));
        assert!(agent_ineffective(&h, &th).is_none(), "four is not five");
        h.push(weak(5, nothing, Some("the model made no tool calls")));
        let a = agent_ineffective(&h, &th).expect("five in a row");
        assert!(
            a.evidence.contains(
                "the dominant cause: no tool calls (4 of 5); also plans rejected as falsified (1)"
            ),
            "{}",
            a.evidence
        );
        // It is the more specific light: it stops the night before the
        // failure streak does.
        assert_eq!(
            red_alarms(&h, Direction::Minimize, &th)[0].kind,
            AlarmKind::AgentIneffective
        );
        // A change a guard failed, or an API that refused, is a failure,
        // not an ineffective agent.
        let mut guarded = weak(6, "guard failed", None);
        guarded.changed_paths.push("src/a.rs".into());
        let mut h2 = h.clone();
        h2.push(guarded);
        assert!(agent_ineffective(&h2, &th).is_none());
        h.push(weak(
            6,
            "plan rejected (format): model API: HTTP 400 invalid_request_error",
            None,
        ));
        assert!(agent_ineffective(&h, &th).is_none());
        assert!(failure_streak(&h, &th).is_some());
        // A model that never finishes a plan ran, and failed at PLAN.
        let mut cut = vec![baseline()];
        for i in 1..=5 {
            let mut r = weak(
                i,
                "plan rejected (agent): the model's answer was cut off at max_output (1024 tokens) and never finished",
                None,
            );
            r.agent_calls.push(crate::model::AgentCall::new(
                crate::model::Phase::Plan,
                1,
                crate::model::CallOutcome::NoResult,
            ));
            cut.push(r);
        }
        let a = agent_ineffective(&cut, &th).expect("five PLANs cut off");
        assert!(
            a.evidence
                .contains("answers cut off at max_output (5 of 5)"),
            "{}",
            a.evidence
        );
    }

    #[test]
    fn ack_resets_the_window() {
        let th = Thresholds::default();
        let mut h = vec![baseline()];
        for i in 1..=5 {
            h.push(IterationRecord::new(i, Verdict::Crash));
        }
        assert_eq!(
            red_alarms(&h, Direction::Minimize, &th)[0].kind,
            AlarmKind::FailureStreak
        );
        let mut acked = IterationRecord::new(6, Verdict::Crash);
        acked.acknowledged = Some("by me".into());
        h.push(acked);
        assert!(red_alarms(&h, Direction::Minimize, &th).is_empty());
    }

    #[test]
    fn plateau_counts_non_keeps_at_the_end() {
        let h = vec![
            baseline(),
            measured(1, Verdict::Keep, 100.0, 0.1, 0.01),
            measured(2, Verdict::Discard, 90.0, 0.0, 0.01),
            IterationRecord::new(3, Verdict::Crash),
        ];
        assert_eq!(plateau_length(&h), 2);
    }
}
