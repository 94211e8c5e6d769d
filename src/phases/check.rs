//! CHECK's decision: red lights, stops, a divergence rollback, confirmation.
//!
//! This file decides only (it may measure, for the confirmation and anchor
//! tests); the machine saves the decision in the state and then applies it
//! (`mod.rs`), so a CHECK killed halfway re-applies the same decision. The
//! detectors themselves are pure functions of the archive (`eval/redlight.rs`).

use chrono::Utc;

use super::Cx;
use super::confirm;
use crate::archive::history::View;
use crate::archive::state::{CheckOutcome, InFlight, State};
use crate::error::Result;
use crate::eval::redlight;
use crate::events::Event;
use crate::model::Orientation;
use crate::model::{Alarm, AlarmKind, Direction, Level, Stop, StopReason, Verdict};
use crate::text::clip::fmt_num;
use crate::text::clip::short;

/// A confirmation test runs after every this many keeps (and at the end).
const CONFIRM_EVERY: usize = 10;

/// What CHECK decides after `cur`, whose record is the last of `history`.
/// `budget` is the budget stop, if a budget is used up.
pub(crate) fn decide(
    cx: &Cx,
    history: View,
    state: &State,
    cur: &InFlight,
    budget: Option<Stop>,
) -> Result<CheckOutcome> {
    let th = cx.config.defaults.red_lights;
    let verdict = cur
        .eval
        .as_ref()
        .map(|e| e.verdict)
        .unwrap_or(Verdict::Invalid);
    // The statistics as they stand after this iteration.
    let orientation = Orientation::of_view(
        history,
        cx.brief.metric.noise_floor,
        cx.config.defaults.alpha,
        cx.config.defaults.pairs,
    );
    let mut out = CheckOutcome {
        alarms: cur
            .eval
            .as_ref()
            .map(|e| e.alarms.clone())
            .unwrap_or_default(),
        stop: stop_condition(
            history,
            cx.brief.metric.direction,
            &th,
            cx.config.defaults.stall_after,
            cx.brief.uses_builtin()
                && crate::driver::builtin::can_sweep(
                    cx.brief,
                    history.all()?,
                    cx.config.defaults.sweep as usize,
                ),
        ),
        ..CheckOutcome::default()
    };
    // Unconfined, the agent changed what it must not touch: nothing of the
    // night can be trusted until a human has looked (`ooda ack`).
    if let Some(t) = &cur.tamper {
        out.stop = Some(Stop {
            reason: crate::model::StopReason::RedTamper,
            detail: format!(
                "without the sandbox, iteration {}'s agent changed what it must not touch: {t}; look at the named paths, undo what you did not do, then `ooda ack`",
                cur.iteration
            ),
            at: Utc::now(),
            iteration: cur.iteration,
        });
    }
    if let Some(s) = &out.stop
        && let Some(kind) = AlarmKind::for_stop(s.reason)
    {
        out.alarms.push(Alarm::red(kind, s.detail.clone()));
    }
    if out.stop.is_none() {
        divergence(cx, history, state, cur.iteration, &orientation, &mut out)?;
    }
    let (plateau, _) = redlight::plateau_in(history.facts());
    if out.stop.is_none() && plateau == th.plateau {
        let report = crate::subagents::analyzer::analyze_in(history, orientation.theta1)?;
        out.alarms.push(Alarm::yellow(
            AlarmKind::Plateau,
            format!("{plateau} iterations without a keep; {report}"),
        ));
        out.analysis = Some(report);
    }
    for a in &out.alarms {
        cx.span.emit(match a.level {
            Level::Red => Event::RedLight {
                reason: a.kind.to_string(),
                evidence: a.evidence.clone(),
            },
            Level::Yellow => Event::Anomaly {
                kind: crate::model::AnomalyKind::Alarm(a.kind.clone()),
                message: a.evidence.clone(),
            },
        })?;
    }
    let stop_is_red = out.stop.as_ref().is_some_and(|s| s.reason.is_red());
    if out.stop.is_none() {
        out.stop = budget;
    }
    // Winner's curse: a kept candidate's own runs overstate it. The gain
    // the morning report states, and a reached goal, come from a fresh
    // comparison of the start of the run with the current best.
    let keeps = history
        .facts()
        .iter()
        .filter(|f| f.is(Verdict::Keep))
        .count();
    let target_hit =
        verdict == Verdict::Keep && !stop_is_red && meets_target(cx, history.best_value());
    let every_ten = verdict == Verdict::Keep && keeps % CONFIRM_EVERY == 0;
    // Every stop confirms, a RED one included (its morning needs the
    // number most) and one past the wall budget (bounded at 20 pairs),
    // unless the best was confirmed already and nothing was kept since.
    let end_of_run = out.stop.is_some() && history.confirmation_of(&state.best_commit)?.is_none();
    if keeps > 0
        && out.confirmation.is_none()
        && out.rollback.is_none()
        && (target_hit || every_ten || end_of_run)
        && let Some(conf) = {
            let (conf, failed) = confirm::run(cx, state, cur.iteration)?.into_parts();
            out.confirmation_failed = failed;
            conf
        }
    {
        if target_hit && meets_target(cx, conf.best_median) {
            out.stop = Some(Stop {
                reason: StopReason::GoalReached,
                detail: format!(
                    "{} = {} meets the target {} in the confirmation test ({})",
                    cx.brief.metric.name,
                    fmt_num(conf.best_median),
                    fmt_num(cx.brief.metric.target.unwrap_or_default()),
                    conf.why
                ),
                at: Utc::now(),
                iteration: cur.iteration,
            });
        } else if target_hit {
            cx.span.emit(Event::Anomaly {
                kind: crate::model::AnomalyKind::TargetNotConfirmed,
                message: format!(
                    "the kept candidate met the target, but the confirmation measured {}",
                    fmt_num(conf.best_median)
                ),
            })?;
        }
        out.confirmation = Some(conf);
    }
    Ok(out)
}

fn meets_target(cx: &Cx, value: f64) -> bool {
    match (cx.brief.metric.target, cx.brief.metric.direction) {
        (Some(t), Direction::Minimize) => value <= t,
        (Some(t), Direction::Maximize) => value >= t,
        (None, _) => false,
    }
}

/// Stop conditions decided by the history alone: red lights and a stall.
fn stop_condition(
    history: View,
    dir: Direction,
    th: &redlight::Thresholds,
    stall_after: u32,
    // The builtin search still has sweep screens to spend: a stall is its
    // cue to sweep, not to stop (it stops itself when they are spent).
    sweeping: bool,
) -> Option<Stop> {
    let last = history.last()?;
    let mk = |reason, detail: String| {
        Some(Stop {
            reason,
            detail,
            at: Utc::now(),
            iteration: last.iteration,
        })
    };
    // Every red detector's kind names its stop; a kind without one
    // (unknown to this version) stops nothing.
    if let Some((reason, alarm)) = redlight::red_alarms_in(history, dir, th)
        .into_iter()
        .find_map(|a| a.stop_reason().map(|r| (r, a)))
    {
        return mk(reason, alarm.evidence);
    }
    let (non_keeps, screened) = redlight::plateau_in(history.facts());
    if non_keeps >= stall_after as usize && !sweeping {
        let also = if screened > 0 {
            format!(" (and {screened} sweep points screened out)")
        } else {
            String::new()
        };
        return mk(
            StopReason::Stalled,
            format!("{non_keeps} iterations in a row without a keep{also}"),
        );
    }
    None
}

/// Divergence: when the re-measured base trends worse, the
/// anchor test (start of run vs current best) tells a slower machine
/// (YELLOW) from kept changes that made things worse (RED, and the base
/// rolls back to the last confirmed commit).
fn divergence(
    cx: &Cx,
    history: View,
    state: &State,
    iteration: u32,
    orientation: &Orientation,
    out: &mut CheckOutcome,
) -> Result<()> {
    let th = cx.config.defaults.red_lights;
    let run_sd = orientation.noise_sd() / std::f64::consts::SQRT_2;
    let window = redlight::window_in(history);
    let Some(trend) = redlight::base_trend(window, cx.brief.metric.direction, run_sd, &th) else {
        return Ok(());
    };
    // One anchor test per episode: not again while the last one is recent
    // (this iteration's own record does not count).
    let earlier = &window[..window.len().saturating_sub(1)];
    let recent = earlier.iter().rev().take(th.trend_window).any(|r| {
        r.alarms
            .iter()
            .any(|a| matches!(a.kind, AlarmKind::MachineDrift | AlarmKind::Divergence))
    });
    if recent {
        return Ok(());
    }
    if state.best_commit == state.start_commit {
        // Nothing was kept: the base is still the start commit, so only
        // the machine can have changed.
        out.alarms.push(Alarm::yellow(
            AlarmKind::MachineDrift,
            format!("{trend}; no change has been kept, so the base is the start commit itself: the machine got slower"),
        ));
        return Ok(());
    }
    let (conf, failed) = confirm::run(cx, state, iteration)?.into_parts();
    if let Some(c) = &conf
        && c.ci.0 > 0.0
    {
        out.alarms.push(Alarm::yellow(
            AlarmKind::MachineDrift,
            format!("{trend}; but the anchor test still finds the best better than the start ({}): the machine got slower, the changes are real", c.why),
        ));
        out.confirmation = conf;
        return Ok(());
    }
    let target = history
        .last_confirmed_commit()?
        .unwrap_or_else(|| state.start_commit.clone());
    let old_tip = state.best_commit.clone();
    let anchor = match &conf {
        Some(c) => format!("the anchor test finds no gain over the start ({})", c.why),
        None => match &failed {
            Some(why) => format!("the anchor test could not be measured ({why})"),
            None => "the anchor test could not be measured".into(),
        },
    };
    let evidence = format!(
        "{trend}; {anchor}. The base was rolled back from {} to {} (the old tip is kept as refs/ooda/{}/diverged-{iteration})",
        short(&old_tip),
        short(&target),
        cx.brief.name
    );
    if target != old_tip {
        out.rollback = Some((old_tip, target));
    }
    out.confirmation = conf;
    out.confirmation_failed = failed;
    out.alarms
        .push(Alarm::red(AlarmKind::Divergence, evidence.clone()));
    out.stop = Some(Stop {
        reason: StopReason::RedDivergence,
        detail: evidence,
        at: Utc::now(),
        iteration,
    });
    Ok(())
}
