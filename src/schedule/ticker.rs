//! One Brief ticking at fire times: `ooda run --every/--cron`, and the
//! building blocks each Brief's loop in `ooda daemon` is made of.
//!
//! A scheduled loop behaves like a crontab line calling `ooda tick`, minus
//! the overlaps:
//!
//! - Each tick opens the Brief afresh (taking its lock) and releases it when
//!   the step ends, so between ticks `ooda ack`, `ooda status` or a manual
//!   `ooda tick` work, and edits to the Brief or its state are seen. A fire
//!   time that finds the lock taken (a crontab tick still running) is skipped
//!   with a log line and a `scheduled_tick_skipped` event.
//! - A tick that overruns its slot delays the next one instead of
//!   overlapping it: when it ends after one or more fire times have passed,
//!   one tick starts at once for all of them, and the schedule resumes after
//!   it. Fire times missed while no ooda ran are not replayed either: a loop
//!   starts at the next fire time. Nothing bursts after a long tick or a
//!   reboot.
//! - Waiting re-reads the wall clock at least every 30 s instead of sleeping
//!   until the fire time, so a suspended machine or a stepped clock delays a
//!   tick by at most that much.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::log::Log;
use crate::events::{Event, Span};
use crate::exit::Exit;
use crate::phases::{Machine, StepOutcome};
use crate::project::Project;
use crate::run::interrupt::{Interrupt, Signal};
use crate::validate::cron::{Schedule, Zone};

/// The longest a waiting loop sleeps before looking at the clock again.
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// Counting passed fire times stops here (an every-second schedule after a long tick).
const MISSED_CAP: u32 = 100_000;

/// Why a waiting loop woke up before its fire time.
#[derive(Debug)]
pub(crate) enum Wake {
    /// SIGINT/SIGTERM: end the loop.
    Stop,
    /// SIGHUP (for `run`): re-read `ooda.yaml`.
    Reload,
    /// The daemon saw the Brief file change or disappear: look at it again.
    Changed,
    /// The daemon re-read `ooda.yaml`: use this configuration from now on.
    Config(Box<Config>),
}

impl From<Signal> for Wake {
    fn from(s: Signal) -> Wake {
        match s {
            Signal::Stop | Signal::Cancel => Wake::Stop,
            Signal::Reload => Wake::Reload,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Waited {
    Due,
    Woken(Wake),
}

/// Sleeps until `at`, a message, or a stop request, whichever comes first.
pub(crate) fn wait_until(at: DateTime<Utc>, rx: &Receiver<Wake>, interrupt: &Interrupt) -> Waited {
    loop {
        if interrupt.is_set() {
            return Waited::Woken(Wake::Stop);
        }
        let left = match (at - Utc::now()).to_std() {
            Ok(d) if !d.is_zero() => d,
            _ => return Waited::Due,
        };
        match rx.recv_timeout(left.min(MAX_SLEEP)) {
            Ok(w) => return Waited::Woken(w),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(left.min(MAX_SLEEP)),
        }
    }
}

/// When the tick after one that was due at `due` and ended at `now` starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Next {
    /// `None` when the schedule has no later fire time.
    pub at: Option<DateTime<Utc>>,
    /// Fire times that passed while the tick ran; one tick now stands for all.
    pub missed: u32,
}

pub(crate) fn plan_next(
    schedule: &Schedule,
    zone: &Zone,
    due: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Next {
    let Some(next) = schedule.next_after(due, zone) else {
        return Next {
            at: None,
            missed: 0,
        };
    };
    if next > now {
        return Next {
            at: Some(next),
            missed: 0,
        };
    }
    let mut missed = 0;
    let mut t = Some(next);
    while let Some(x) = t
        && x <= now
        && missed < MISSED_CAP
    {
        missed += 1;
        t = schedule.next_after(x, zone);
    }
    Next {
        at: Some(now),
        missed,
    }
}

/// What a tick needs besides its timing.
pub(crate) struct TickContext<'a> {
    pub project: &'a Project,
    /// As given to `Machine::open`: a path or a name.
    pub brief_arg: &'a str,
    pub name: &'a str,
    pub interrupt: &'a Interrupt,
    pub log: &'a Log,
    pub verbose: bool,
}

/// Where a tick stands in the schedule, for its events and log line.
pub(crate) struct Slot<'a> {
    /// `every 20m`, the cron expression, or `back to back`.
    pub schedule: &'a str,
    pub due: DateTime<Utc>,
    pub missed: u32,
}

/// One tick: open the Brief (taking its lock), record the tick, step once,
/// record how it ended. The step's result is returned unchanged.
pub(crate) fn tick(cx: &TickContext, slot: &Slot) -> Result<StepOutcome> {
    let mut machine = match Machine::open(
        cx.project,
        cx.brief_arg,
        cx.interrupt,
        cx.log.progress(),
        cx.verbose,
    ) {
        Ok(m) => m,
        Err(Error::Busy(m)) => {
            record_skip(cx, slot, "busy");
            return Err(Error::Busy(m));
        }
        Err(e) => return Err(e),
    };
    let late = (Utc::now() - slot.due).num_milliseconds().max(0) as f64 / 1000.0;
    let span = machine
        .run_span()
        .with_iteration(Some(machine.iteration()))
        .child(Event::ScheduledTick {
            schedule: slot.schedule.to_string(),
            due: slot.due,
            late_seconds: late,
            missed: slot.missed,
        })?;
    let started = Instant::now();
    let result = machine.step();
    let outcome = match &result {
        Ok(StepOutcome::Baseline) => "baseline",
        Ok(StepOutcome::Iteration { .. }) => "iteration",
        Ok(StepOutcome::Stopped(..)) => "stopped",
        Ok(StepOutcome::Finished(_)) => "finished",
        Err(Error::Red(_)) => "red",
        Err(Error::Budget(_)) => "budget",
        Err(Error::Interrupted) => "interrupted",
        Err(_) => "error",
    };
    // Recording the end must not hide the step's own result.
    let _ = span.emit(Event::ScheduledTickFinished {
        outcome: outcome.to_string(),
        seconds: started.elapsed().as_secs_f64(),
    });
    result
}

/// A skipped fire time is recorded without the lock: events are appended
/// with one write per line, so the lock holder's lines stay whole. Only the
/// run id is read from `state.json` (the holder may be rewriting it; a
/// failed read just means no event).
fn record_skip(cx: &TickContext, slot: &Slot, reason: &str) {
    let dir = cx.project.iterations_dir(cx.name);
    let run_id = std::fs::read_to_string(crate::archive::layout::Layout::of(&dir).state())
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["run_id"].as_str().map(str::to_string));
    if let Some(run_id) = run_id
        && let Ok(root) = Span::open(&dir, &run_id, Vec::new())
    {
        let _ = root.emit(Event::ScheduledTickSkipped {
            schedule: slot.schedule.to_string(),
            due: slot.due,
            reason: reason.to_string(),
        });
    }
}

/// Re-reads `ooda.yaml` (SIGHUP); a broken file keeps the old configuration.
pub(crate) fn reload_config(project: &Project, log: &Log) -> Option<Config> {
    match Config::load(&project.root) {
        Ok(c) => {
            log.info(
                None,
                "SIGHUP: re-read ooda.yaml; the next tick of each Brief uses it",
            );
            Some(c)
        }
        Err(e) => {
            log.error(
                None,
                &format!("SIGHUP: ooda.yaml not reloaded, the previous configuration stays:\n{e}"),
            );
            None
        }
    }
}

/// The log line for a tick that overran its slot.
pub(crate) fn overrun_message(missed: u32) -> String {
    if missed == 1 {
        "the tick overran its slot: the next fire time passed while it ran, so the next tick starts now (late, never overlapping)".into()
    } else {
        format!(
            "the tick overran its slot: {missed} fire times passed while it ran; one tick starts now for all of them (no burst)"
        )
    }
}

/// `ooda run BRIEF --every D | --cron E`. `report` prints a step's result
/// and returns the exit code it implies, as for `ooda run`.
pub(crate) fn run(
    project: Project,
    brief_arg: &str,
    schedule: Schedule,
    max_iterations: Option<u32>,
    log: Log,
    verbose: bool,
    report: &dyn Fn(&Project, &str, &StepOutcome) -> Result<Exit>,
) -> Result<Exit> {
    let mut project = project;
    // A broken Brief fails now, with exit 2, not at the first fire time.
    let name = project.load_brief(brief_arg)?.name;
    let (tx, rx) = std::sync::mpsc::channel();
    let signal_log = log.clone();
    let interrupt = Interrupt::watch(move |sig| {
        match sig {
            Signal::Stop => signal_log.info(
                None,
                "stopping at the next checkpoint (send the signal again to stop running commands now)",
            ),
            Signal::Cancel => signal_log.info(None, "stopping now: running commands are cancelled"),
            Signal::Reload => {}
        }
        let _ = tx.send(Wake::from(sig));
    })?;
    let zone = log.zone().clone();
    let label = schedule.to_string();
    let Some(mut due) = schedule.first(Utc::now(), &zone) else {
        return Err(Error::Input(format!("`{label}` never fires again")));
    };
    log.info(
        Some(&name),
        &format!(
            "ticking on `{label}` (times in {}); first tick {}",
            zone.name(),
            zone.format(due)
        ),
    );
    let mut missed = 0;
    let mut done = 0u32;
    loop {
        if max_iterations.is_some_and(|m| done >= m) {
            log.info(Some(&name), &format!("--max-iterations {done} reached"));
            return Ok(Exit::Ok);
        }
        match wait_until(due, &rx, &interrupt) {
            Waited::Due => {}
            Waited::Woken(Wake::Stop) => return Err(Error::Interrupted),
            Waited::Woken(Wake::Reload) => {
                if let Some(c) = reload_config(&project, &log) {
                    project.config = c;
                }
                continue;
            }
            Waited::Woken(Wake::Config(c)) => {
                project.config = *c;
                continue;
            }
            Waited::Woken(Wake::Changed) => continue,
        }
        let cx = TickContext {
            project: &project,
            brief_arg,
            name: &name,
            interrupt: &interrupt,
            log: &log,
            verbose,
        };
        let slot = Slot {
            schedule: &label,
            due,
            missed,
        };
        log.info(Some(&name), &format!("tick due {}", zone.format(due)));
        match tick(&cx, &slot) {
            Ok(outcome) => {
                let exit = report(&project, &name, &outcome)?;
                match outcome {
                    StepOutcome::Baseline => {}
                    StepOutcome::Iteration { .. } => done += 1,
                    StepOutcome::Stopped(..) | StepOutcome::Finished(_) => return Ok(exit),
                }
            }
            Err(Error::Busy(m)) => {
                log.info(
                    Some(&name),
                    &format!("busy ({m}): this fire time is skipped"),
                );
            }
            Err(e) => return Err(e),
        }
        if max_iterations.is_some_and(|m| done >= m) {
            continue;
        }
        let next = plan_next(&schedule, &zone, due, Utc::now());
        let Some(at) = next.at else {
            log.info(Some(&name), &format!("`{label}` has no later fire time"));
            return Ok(Exit::Ok);
        };
        if next.missed > 0 {
            log.info(Some(&name), &overrun_message(next.missed));
        } else {
            log.info(Some(&name), &format!("next tick {}", zone.format(at)));
        }
        due = at;
        missed = next.missed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    const UTC: Zone = Zone::Named(chrono_tz::Tz::UTC);

    #[test]
    fn a_tick_within_its_slot_waits_for_the_next_fire_time() {
        let s = Schedule::cron("*/20 * * * *").unwrap();
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:00:00Z"),
            utc("2024-01-01T00:07:00Z"),
        );
        assert_eq!(
            n,
            Next {
                at: Some(utc("2024-01-01T00:20:00Z")),
                missed: 0
            }
        );
    }

    #[test]
    fn an_overrun_delays_the_next_tick_and_never_bursts() {
        let s = Schedule::cron("*/20 * * * *").unwrap();
        // 25 minutes: the 00:20 tick starts late, at 00:25.
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:00:00Z"),
            utc("2024-01-01T00:25:00Z"),
        );
        assert_eq!(
            n,
            Next {
                at: Some(utc("2024-01-01T00:25:00Z")),
                missed: 1
            }
        );
        // After the late tick, the schedule resumes at its own fire times.
        let after = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:25:00Z"),
            utc("2024-01-01T00:30:00Z"),
        );
        assert_eq!(after.at, Some(utc("2024-01-01T00:40:00Z")));
        // 65 minutes: three fire times passed, one tick stands in for all.
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:00:00Z"),
            utc("2024-01-01T01:05:00Z"),
        );
        assert_eq!(
            n,
            Next {
                at: Some(utc("2024-01-01T01:05:00Z")),
                missed: 3
            }
        );
    }

    #[test]
    fn an_interval_counts_from_the_previous_tick_and_an_overrun_restarts_it() {
        let s = Schedule::every("20m").unwrap();
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:00:00Z"),
            utc("2024-01-01T00:05:00Z"),
        );
        assert_eq!(n.at, Some(utc("2024-01-01T00:20:00Z")));
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:00:00Z"),
            utc("2024-01-01T00:50:00Z"),
        );
        assert_eq!(
            n,
            Next {
                at: Some(utc("2024-01-01T00:50:00Z")),
                missed: 2
            }
        );
        let n = plan_next(
            &s,
            &UTC,
            utc("2024-01-01T00:50:00Z"),
            utc("2024-01-01T00:51:00Z"),
        );
        assert_eq!(n.at, Some(utc("2024-01-01T01:10:00Z")));
    }

    #[test]
    fn waiting_ends_at_the_fire_time_or_on_a_message() {
        let (tx, rx) = std::sync::mpsc::channel();
        let i = Interrupt::none();
        assert!(matches!(
            wait_until(Utc::now() - chrono::Duration::seconds(1), &rx, &i),
            Waited::Due
        ));
        tx.send(Wake::Changed).unwrap();
        assert!(matches!(
            wait_until(Utc::now() + chrono::Duration::hours(1), &rx, &i),
            Waited::Woken(Wake::Changed)
        ));
        i.request_stop();
        assert!(matches!(
            wait_until(Utc::now() + chrono::Duration::hours(1), &rx, &i),
            Waited::Woken(Wake::Stop)
        ));
    }
}
