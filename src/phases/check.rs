//! CHECK's decision: red lights, stops, a divergence rollback, confirmation.
//!
//! CHECK decides first and acts second. The decision ([`decide`], then the
//! anomaly rules of [`watch`]) may measure, for the confirmation and anchor
//! tests, so the machine saves it in the state before any of it is applied
//! (`Machine::check`, below); a CHECK killed halfway re-applies the same
//! decision instead of deciding again on a half-changed world. The
//! detectors themselves are pure functions of the archive (`eval/redlight.rs`).

use chrono::Utc;

use super::confirm;
use super::{Machine, Step, StepOutcome, failpoint, oid};
use crate::archive;
use crate::archive::history::View;
use crate::archive::state::{CheckOutcome, InFlight, State};
use crate::brief::Brief;
use crate::config::Config;
use crate::error::Result;
use crate::eval::redlight;
use crate::events::Event;
use crate::events::Span;
use crate::model::Orientation;
use crate::model::{Alarm, AlarmKind, Direction, Level, Stop, StopReason, Verdict};
use crate::model::{Cut, TaskState};
use crate::report::summary;
use crate::text::clip::fmt_num;
use crate::text::clip::short;
use crate::workspace::Workspace;

/// A confirmation test runs after every this many keeps (and at the end).
const CONFIRM_EVERY: usize = 10;

/// What CHECK decides after `cur`, whose record is the last of `history`.
/// `budget` is the budget stop, if a budget is used up.
/// The step's history and orientation are the archive's as they stand
/// after this iteration.
pub(crate) fn decide(
    step: &Step,
    ws: &Workspace,
    state: &State,
    cur: &InFlight,
    budget: Option<Stop>,
) -> Result<CheckOutcome> {
    let th = step.config.defaults.red_lights;
    let verdict = cur
        .eval
        .as_ref()
        .map(|e| e.verdict)
        .unwrap_or(Verdict::Invalid);
    let (history, orientation) = (step.history, step.orientation);
    let mut out = CheckOutcome {
        alarms: cur
            .eval
            .as_ref()
            .map(|e| e.alarms.clone())
            .unwrap_or_default(),
        stop: stop_condition(history, step.brief, step.config)?,
        ..CheckOutcome::default()
    };
    // Unconfined, the agent changed what it must not touch: nothing of the
    // night can be trusted until a human has looked (`ooda ack`).
    if let Some(t) = &cur.tamper {
        out.stop = Some(Stop {
            reason: crate::model::StopReason::RedTamper,
            detail: format!(
                "without the sandbox, what an agent must not touch changed while iteration {}'s agent ran: {t}; look at the named paths, undo what you did not do, then `ooda ack`",
                cur.iteration
            ),
            at: Utc::now(),
            iteration: cur.iteration,
            setting: None,
        });
    }
    if let Some(s) = &out.stop
        && let Some(kind) = AlarmKind::for_stop(s.reason)
    {
        out.alarms.push(Alarm::red(kind, s.detail.clone()));
    }
    if out.stop.is_none() {
        divergence(
            step,
            ws,
            history,
            state,
            cur.iteration,
            orientation,
            &mut out,
        )?;
    }
    let (plateau, _) = redlight::plateau_in(history.facts());
    if out.stop.is_none() && plateau == th.plateau {
        let report = crate::subagents::analyzer::analyze_in(history, orientation.theta1)?;
        out.alarms.push(Alarm::yellow(
            AlarmKind::Plateau,
            format!("{plateau} iterations without a keep; {report}"),
        ));
        out.analysis = Some(crate::model::Analysis::builtin(report));
    }
    for a in &out.alarms {
        step.span.emit(match a.level {
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
        verdict == Verdict::Keep && !stop_is_red && meets_target(step, history.best_value());
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
            let (conf, failed) = confirm::run(step, ws, state, cur.iteration)?.into_parts();
            out.confirmation_failed = failed;
            conf
        }
    {
        if target_hit && meets_target(step, conf.best_median) {
            out.stop = Some(Stop {
                reason: StopReason::GoalReached,
                detail: format!(
                    "{} = {} meets the target {} in the confirmation test ({})",
                    step.brief.metric.name,
                    fmt_num(conf.best_median),
                    fmt_num(step.brief.metric.target.unwrap_or_default()),
                    conf.why
                ),
                at: Utc::now(),
                iteration: cur.iteration,
                setting: None,
            });
        } else if target_hit {
            step.span.emit(Event::Anomaly {
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

fn meets_target(step: &Step, value: f64) -> bool {
    match (step.brief.metric.target, step.brief.metric.direction) {
        (Some(t), Direction::Minimize) => value <= t,
        (Some(t), Direction::Maximize) => value >= t,
        (None, _) => false,
    }
}

/// Stop conditions decided by the history alone: red lights and a stall.
fn stop_condition(history: View, brief: &Brief, config: &Config) -> Result<Option<Stop>> {
    let (th, stall_after) = (&config.defaults.red_lights, config.defaults.stall_after);
    // The builtin search still has sweep screens to spend, or a
    // combination of knobs to refine: a stall is its cue to try them, not
    // to stop (it stops itself when they are spent).
    let sweeping = brief.uses_builtin() && {
        let all = history.all()?;
        crate::driver::builtin::can_sweep(brief, all, config.defaults.sweep as usize)
            || crate::driver::builtin::refinement(
                brief,
                all,
                &crate::driver::builtin::current_point(all),
            )
            .is_some()
    };
    Ok(stop_when(history, brief, config, th, stall_after, sweeping))
}

/// [`stop_condition`]'s rules, given whether the search is sweeping.
fn stop_when(
    history: View,
    brief: &Brief,
    config: &Config,
    th: &redlight::Thresholds,
    stall_after: u32,
    sweeping: bool,
) -> Option<Stop> {
    let dir = brief.metric.direction;
    let last = history.last()?;
    let mk = |reason, detail: String| {
        Some(Stop {
            reason,
            detail,
            at: Utc::now(),
            iteration: last.iteration,
            setting: setting_for(reason).map(str::to_string),
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
            format!(
                "{non_keeps} iterations in a row without a keep{also}; {}",
                to_go_on(StopReason::Stalled, config, &brief.name)
            ),
        );
    }
    None
}

/// The setting of `ooda.yaml` that decides `reason`, if one does: its key,
/// for the stop to record (`Stop::setting`).
pub(crate) fn setting_for(reason: StopReason) -> Option<&'static str> {
    Some(match reason {
        StopReason::Stalled => "defaults.stall_after",
        StopReason::RedFailureStreak => "defaults.red_lights.failure_streak",
        StopReason::RedAgentIneffective => "defaults.red_lights.agent_ineffective",
        StopReason::RedScope => "defaults.red_lights.scope_violations",
        StopReason::RedOscillation => "defaults.red_lights.flip_min",
        StopReason::RedModelMismatch => "defaults.red_lights.mismatch_chi2",
        StopReason::RedAnomaly => "anomalies.stop_on",
        _ => return None,
    })
}

/// What to change in `ooda.yaml` for it to decide `reason` no more, with
/// the value in force, as an instruction (`raise … (now 10)`); `None` for a
/// stop no setting decides.
pub(crate) fn what_to_raise(reason: StopReason, config: &Config) -> Option<String> {
    let th = &config.defaults.red_lights;
    Some(match reason {
        StopReason::Stalled => format!(
            "raise `defaults.stall_after` (now {})",
            config.defaults.stall_after
        ),
        StopReason::RedFailureStreak => format!(
            "raise `defaults.red_lights.failure_streak` (now {})",
            th.failure_streak
        ),
        StopReason::RedAgentIneffective => format!(
            "raise `defaults.red_lights.agent_ineffective` (now {})",
            th.agent_ineffective
        ),
        StopReason::RedScope => format!(
            "raise `defaults.red_lights.scope_violations` (now {})",
            th.scope_violations
        ),
        StopReason::RedOscillation => format!(
            "raise `defaults.red_lights.flip_min` (now {}; an exact cycle has no threshold)",
            th.flip_min
        ),
        StopReason::RedModelMismatch => format!(
            "raise `defaults.red_lights.mismatch_chi2` (now {}) or `mismatch_bias` (now {})",
            th.mismatch_chi2, th.mismatch_bias
        ),
        StopReason::RedAnomaly => "take the rule out of `anomalies.stop_on`".into(),
        _ => return None,
    })
}

/// How a stop is undone, said where it is reported: change what decided it
/// (the run then goes on by itself), or accept it.
pub(crate) fn to_go_on(reason: StopReason, config: &Config, brief: &str) -> String {
    let accept = if reason.is_red() {
        format!("`ooda ack {brief}`")
    } else {
        format!("`ooda run {brief} --continue`")
    };
    match what_to_raise(reason, config) {
        Some(change) => format!("to go on, {change} in ooda.yaml, or {accept}"),
        None => format!("to go on, {accept}"),
    }
}

/// A stop the configuration decided (a stall, a red light's threshold, an
/// anomaly rule `stop_on` names) that it decides no more: raised since, the
/// run goes on, as after a raised budget. Judged on the history the stop
/// was decided on (its iteration is the newest); a stop it cannot re-decide
/// (divergence, which took a measurement; tamper; a human's) stands.
pub(crate) fn lifted(stop: &Stop, history: View, brief: &Brief, config: &Config) -> Result<bool> {
    // Only a stop a setting decided (not the builtin search's "nothing
    // left to try", which is also `stalled`), on the history it was
    // decided on (its iteration is the newest).
    if stop.setting.is_none() || history.last().map(|r| r.iteration) != Some(stop.iteration) {
        return Ok(false);
    }
    Ok(match stop.reason {
        StopReason::Stalled
        | StopReason::RedOscillation
        | StopReason::RedModelMismatch
        | StopReason::RedFailureStreak
        | StopReason::RedAgentIneffective
        | StopReason::RedScope => stop_condition(history, brief, config)?.is_none(),
        StopReason::RedAnomaly => stop
            .detail
            .split(':')
            .next()
            .is_some_and(|rule| !config.watch.stop_on.iter().any(|r| r == rule)),
        _ => false,
    })
}

/// Divergence: when the re-measured base trends worse, the
/// anchor test (start of run vs current best) tells a slower machine
/// (YELLOW) from kept changes that made things worse (RED, and the base
/// rolls back to the last confirmed commit).
fn divergence(
    step: &Step,
    ws: &Workspace,
    history: View,
    state: &State,
    iteration: u32,
    orientation: &Orientation,
    out: &mut CheckOutcome,
) -> Result<()> {
    let th = step.config.defaults.red_lights;
    let run_sd = orientation.noise_sd() / std::f64::consts::SQRT_2;
    let window = redlight::window_in(history);
    let Some(trend) = redlight::base_trend(window, step.brief.metric.direction, run_sd, &th) else {
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
    let (conf, failed) = confirm::run(step, ws, state, iteration)?.into_parts();
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
        step.brief.name
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
        setting: None,
    });
    Ok(())
}

impl Machine<'_> {
    /// CHECK decides first and acts second. The decision (alarms, stop,
    /// rollback, confirmation) may measure, so it is saved in the state
    /// before any of it is applied; a CHECK killed while applying re-applies
    /// the same decision instead of deciding again on a half-changed world.
    pub(super) fn check(&mut self, span: &Span) -> Result<StepOutcome> {
        let cur = self.current()?.clone();
        let verdict = cur
            .eval
            .as_ref()
            .map(|e| e.verdict)
            .unwrap_or(Verdict::Invalid);
        let decision = match cur.check.clone() {
            Some(d) => d,
            None => {
                let d = {
                    let view = self.archive.history.view();
                    let o = self.orientation_now();
                    let step = self.step_at(span, &o, view, cur.iteration);
                    let d = decide(
                        &step,
                        &self.ws,
                        &self.archive.state,
                        &cur,
                        self.budget_stop(),
                    )?;
                    watch(&step, d)?
                };
                // The confirmation's job, in the record written below.
                let jobs = self.executor.take_jobs();
                let c = self.current_mut()?;
                c.check = Some(d.clone());
                for j in jobs {
                    if !c.jobs.contains(&j) {
                        c.jobs.push(j);
                    }
                }
                self.archive.save_state()?;
                failpoint::after(failpoint::Point::CheckDecided);
                d
            }
        };
        if let Some((old_tip, target)) = &decision.rollback {
            self.ws.keep_ref(
                &format!("refs/ooda/{}/diverged-{}", self.brief.name, cur.iteration),
                oid(old_tip)?,
            )?;
            self.ws.ensure(oid(target)?)?;
            self.archive.state.best_commit = target.clone();
        }
        self.archive.state.yellow = decision
            .alarms
            .iter()
            .rev()
            .find(|a| a.level == crate::model::Level::Yellow)
            .cloned();
        // The verdict marks the iteration's end. Its id is the iteration's,
        // so a CHECK run again after a kill does not record a second one.
        self.iteration_span()?.emit_once(
            &format!("{}-verdict", cur.event_id),
            Event::Verdict { verdict },
        )?;
        let mut done = self.current()?.clone();
        done.check = Some(decision.clone());
        let mut rec = archive::record_of(&done, &self.archive.state);
        if decision.stop.is_none()
            && let Some(r) = rec.as_mut()
            && r.verdict == Verdict::Keep
        {
            let (reports, calls) = self.synthesize(span, r, None, true)?;
            r.attach(reports, calls);
        }
        // After the keep's synthesizers, which the iteration waits for:
        // nothing moves it out of its final state.
        let ended = match (verdict, &cur.cut) {
            // The budget ended it before it could be measured.
            (_, Some(Cut::Budget { .. })) => TaskState::Cancelled,
            (Verdict::Crash | Verdict::Invalid, _) => TaskState::Failed,
            _ => TaskState::Succeeded,
        };
        self.iteration_span()?.task_state(
            ended,
            Some(match (&cur.cut, cur.eval.as_ref()) {
                (Some(c), _) => format!(
                    "{}: {}",
                    verdict.as_str(),
                    crate::text::clip::clip(&c.reason(), 160)
                ),
                (None, Some(e)) => format!(
                    "{}: {}",
                    verdict.as_str(),
                    crate::text::clip::clip(&e.reason, 160)
                ),
                (None, None) => verdict.as_str().to_string(),
            }),
        )?;
        self.archive.state.current = None;
        self.archive.state.next_iteration = cur.iteration + 1;
        match decision.stop {
            Some(stop) => {
                self.finish(stop.clone(), rec, true)?;
                Ok(StepOutcome::Stopped(stop, Some((cur.iteration, verdict))))
            }
            None => {
                summary::sync(&mut self.archive, rec, &self.brief, &self.project.config)?;
                failpoint::after(failpoint::Point::CheckArchived);
                self.archive.save_state()?;
                Ok(StepOutcome::Iteration {
                    iteration: cur.iteration,
                    verdict,
                })
            }
        }
    }
}

/// The anomaly rules over the trace as it stands after this iteration:
/// what is new is logged (once per rule and node), and a rule
/// `anomalies.stop_on` names stops the run RED.
fn watch(step: &Step, mut d: CheckOutcome) -> Result<CheckOutcome> {
    let (span, iteration) = (step.span, step.iteration);
    let w = &step.config.watch;
    // The live log only (bounded by its seal, `events/segments.rs`): a
    // finding about a node in a sealed segment is not found again, since
    // the node is not read either.
    let records = crate::events::read_live(step.dir)?;
    let runs = crate::report::trace::build(&records);
    // What the rules found before a seal stays found: they look at
    // the whole history, and an acknowledged finding must not return.
    let mut logged = crate::report::anomalies::logged(&records);
    logged.extend(crate::report::anomalies::logged(
        &crate::events::segments::sealed_anomalies(step.dir),
    ));
    let history = step.history;
    let (tokens, cost_usd) = history.spent();
    let spent = crate::report::anomalies::Spent {
        iterations: history.len().saturating_sub(1) as u32,
        wall_seconds: (chrono::Utc::now() - step.run_started)
            .num_milliseconds()
            .max(0) as f64
            / 1000.0,
        tokens,
        cost_usd,
    };
    let budget = step.config.budget_for(step.brief);
    for f in crate::report::anomalies::detect(&runs, history.facts(), &budget, spent, w) {
        let key = f.key();
        if logged.contains(&key) {
            continue;
        }
        // Tagged with the iteration it is about (a spike seen later, a
        // run-wide rate: none), logged where it was found.
        span.with_iteration(f.iteration).emit(Event::AnomalyFound {
            rule: f.rule.to_string(),
            severity: f.severity.to_string(),
            evidence: f.evidence.clone(),
            node: f.node.clone(),
            fingerprint: key,
        })?;
        if w.stop_on.iter().any(|r| r == f.rule)
            && d.stop.as_ref().is_none_or(|s| !s.reason.is_red())
        {
            d.stop = Some(Stop {
                reason: crate::model::StopReason::RedAnomaly,
                detail: format!(
                    "{}: {} (ooda.yaml's anomalies.stop_on names `{}`: look at it with `ooda trace {}`, then `ooda ack`, or take it out of `anomalies.stop_on` and the run goes on by itself)",
                    f.rule, f.evidence, f.rule, step.brief.name
                ),
                at: chrono::Utc::now(),
                iteration,
                setting: setting_for(crate::model::StopReason::RedAnomaly).map(str::to_string),
            });
        }
    }
    Ok(d)
}
