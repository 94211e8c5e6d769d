//! The progress display: the same events, as the lines a human watches.
//!
//! Interactive runs show the phase, each pair measured with the running
//! estimate, and what an agent is doing; a daemon's log gets the same lines
//! with timestamps. Being a sink of the event stream rather than a second
//! channel means the display can only show what the trajectory records.
//! Lines starting with `\r` are live updates a terminal redraws in place.
//!
//! Quiet by default: what the loop is doing now (the phase, the plan, the
//! pairs, an agent at work) is a live line a terminal redraws in place and
//! a log does not get; what a person must act on or know (an anomaly, the
//! environment, a wait, an outage, a subagent that failed) is a line
//! everywhere. The iteration's result is `run`'s and `tick`'s own stdout
//! line. `-v` makes every live line a line again, with the commands.

use super::{Event, Record, Sink};
use crate::error::Result;
use crate::model::{AnomalyKind, ReviewVerdict, Verdict};
use crate::text::clip::clip;

/// What the display is asked to show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Shown<'a> {
    /// A line, already tagged `[brief] …`: shown everywhere.
    Line(&'a str),
    /// What the loop is doing now: a terminal shows it in its live line, a
    /// log leaves it out.
    Live(&'a str),
    /// The live state of a measurement: pair `pair` of at most `of`, and
    /// the line that says it (a terminal redraws it in place; a log gets it
    /// as a line only when `live` is false, with `-v`).
    Pair {
        pair: u32,
        of: u32,
        text: &'a str,
        live: bool,
    },
}

impl Shown<'_> {
    pub(crate) fn text(&self) -> &str {
        match self {
            Shown::Line(t) | Shown::Live(t) | Shown::Pair { text: t, .. } => t,
        }
    }
}

/// Whether an event's line is a line everywhere or only live.
fn is_notice(e: &Event) -> bool {
    match e {
        Event::Anomaly { .. }
        // A tick that picks up where a killed one stopped: worth a line.
        | Event::IterationResumed { .. }
        | Event::StopLifted { .. }
        | Event::EnvironmentChange { .. }
        | Event::MeasureLockWaiting { .. }
        // How long the wait announced above took.
        | Event::MeasureLockAcquired { .. }
        | Event::PairsResumed { .. }
        | Event::ClusterFault { .. }
        | Event::AgentUnavailable { .. }
        | Event::ModelResult { .. } => true,
        // Information (a budget nearly used, as every run that uses its
        // budget does) is not a notice.
        Event::AnomalyFound { severity, .. } => severity != "info",
        Event::SubagentFinished {
            outcome, verdict, ..
        } => {
            *outcome != crate::model::SubagentOutcome::Done
                || *verdict == Some(ReviewVerdict::Block)
        }
        _ => false,
    }
}

/// Shows what the progress display is given (a terminal, a daemon's log).
pub(crate) type Print = Box<dyn Fn(&Shown) + Send + Sync>;

/// Renders events as `[brief] …` lines for `print`.
pub(crate) struct Progress {
    brief: String,
    /// Also show every command and how it ended (`-v`).
    verbose: bool,
    print: Print,
}

impl Progress {
    pub(crate) fn new(brief: &str, verbose: bool, print: Print) -> Progress {
        Progress {
            brief: brief.to_string(),
            verbose,
            print,
        }
    }

    /// The lines one event shows (most show none).
    pub(crate) fn lines(&self, r: &Record) -> Vec<String> {
        let it = r.iteration.unwrap_or(0);
        let one = |s: String| vec![s];
        match &r.event {
            Event::IterationStarted { .. } if it == 0 => {
                one("iteration 0: measuring the baseline and calibrating noise (A/A pairs)".into())
            }
            Event::IterationResumed { after_phase } => one(format!(
                "resuming iteration {it} after {}",
                after_phase.as_str().to_uppercase()
            )),
            Event::PhaseStarted { phase } => {
                one(format!("iteration {it}: {}", phase.as_str().to_uppercase()))
            }
            Event::Plan { hypothesis, .. } => {
                one(format!("plan: {}", hypothesis.lines().next().unwrap_or("")))
            }
            Event::Decision {
                verdict: Verdict::Baseline,
                reason,
            } => one(reason.clone()),
            Event::Decision { verdict, reason } => one(format!("{}: {reason}", verdict.as_str())),
            Event::SubagentFinished {
                name,
                outcome,
                verdict,
                findings,
                problem,
                seconds,
                ..
            } => {
                let what = match (verdict, outcome) {
                    (Some(ReviewVerdict::Approve), _) => "approved".to_string(),
                    (Some(ReviewVerdict::Block), _) => format!("blocked ({findings} finding(s))"),
                    (None, o) => o.as_str().replace('_', " "),
                };
                let why = problem
                    .as_deref()
                    .map(|p| format!(": {}", clip(p, 160)))
                    .unwrap_or_default();
                one(format!("subagent {name}: {what} in {seconds:.1}s{why}"))
            }
            Event::RunFinished { reason, detail, .. } => {
                one(format!("run stopped: {reason} — {detail}"))
            }
            Event::Anomaly { kind, message } => match kind {
                AnomalyKind::StateRebuilt
                | AnomalyKind::AgentCommit
                | AnomalyKind::AgentEditInLearn
                | AnomalyKind::AgentIgnoredFiles
                | AnomalyKind::BudgetCut
                | AnomalyKind::JudgeFailed
                | AnomalyKind::RepeatedAnswer
                | AnomalyKind::ExamplePrediction
                | AnomalyKind::ContextDuplicate => one(message.clone()),
                AnomalyKind::ConfirmationFailed => one(format!("confirmation failed: {message}")),
                AnomalyKind::ScopeViolation
                | AnomalyKind::NoiseChanged
                | AnomalyKind::TargetNotConfirmed
                | AnomalyKind::NotifyFailed
                | AnomalyKind::Alarm(_) => Vec::new(),
            },
            Event::AnomalyFound { rule, evidence, .. } => {
                one(format!("anomaly {rule}: {evidence}"))
            }
            Event::StopLifted { detail, .. } => one(format!("run continues: {detail}")),
            Event::EnvironmentChange { paths, .. } => one(format!(
                "not the agent's: {} changed outside its worktree while it was confined",
                clip(&paths.join(", "), 200)
            )),
            Event::ConfirmationStarted { .. } => {
                one("confirmation: start of run vs current best".into())
            }
            Event::Confirmed { why, .. } => one(why.clone()),
            Event::CommandStarted {
                role,
                worktree,
                command,
            } => {
                let mut out = Vec::new();
                match role.as_str() {
                    "setup" => out.push(format!("setup in {worktree}")),
                    "guard" => out.push(format!("guard `{command}`")),
                    _ => {}
                }
                if self.verbose {
                    out.push(format!("$ {command} (in {worktree})"));
                }
                out
            }
            Event::CommandFinished {
                outcome,
                exit_code,
                seconds,
                ..
            } if self.verbose => one(format!("  {outcome:?}, exit {exit_code:?}, {seconds:.2}s")),
            Event::PairMeasured {
                pair,
                max_pairs,
                base,
                cand,
                running_effect,
                running_ci,
                ..
            } => one(format!(
                "\rpair {pair} (of at most {max_pairs}): base {} cand {}; running effect {}",
                crate::text::clip::fmt_num(*base),
                crate::text::clip::fmt_num(*cand),
                // As the verdict will say it, in one unit.
                match running_ci {
                    Some(ci) => format!(
                        "{} (95% interval, this series' noise)",
                        crate::text::number::effect_ci(*running_effect, *ci)
                    ),
                    None => crate::text::number::effect(*running_effect),
                }
            )),
            Event::ModelCall {
                phase,
                profile,
                attempt,
                attempts,
                ..
            } => one(format!(
                "{}: running agent `{profile}`{}",
                phase.as_str(),
                if *attempt > 1 {
                    format!(" (attempt {attempt} of {attempts})")
                } else {
                    String::new()
                }
            )),
            Event::MeasureLockWaiting {
                holder,
                waited_seconds,
                ..
            } => one(format!(
                "waiting to measure: {} holds the measurement lock ({} so far)",
                if self.verbose {
                    holder.clone()
                } else {
                    holder_name(holder)
                },
                secs(*waited_seconds)
            )),
            Event::MeasureLockAcquired { waited_seconds } => one(format!(
                "measurement lock taken after {}",
                secs(*waited_seconds)
            )),
            Event::PairsResumed { pairs } => one(format!(
                "going on from the {pairs} pair(s) measured before the series was cut short"
            )),
            Event::ClusterFault { kind, message, .. } => one(format!(
                "{} fault, no verdict: {message}",
                if kind == "unknown" {
                    "unknown"
                } else {
                    "cluster"
                }
            )),
            Event::AgentUnavailable {
                phase,
                reason,
                wait_seconds,
                waited_seconds,
                ..
            } => one(format!(
                "{}: {reason}; trying again in {} ({} waited so far)",
                phase.as_str(),
                secs(*wait_seconds),
                secs(*waited_seconds)
            )),
            Event::ModelResult {
                phase,
                outcome,
                problem: Some(p),
                ..
            } => one(format!(
                "{}: agent {}: {}",
                phase.as_str(),
                outcome.as_str(),
                clip(p, 200)
            )),
            _ => Vec::new(),
        }
    }
}

/// `brief NAME in DIR (pid N) since TIME`, as a reader needs it: the
/// Brief's name, and whether it is another project's (where and which
/// process, with -v).
fn holder_name(holder: &str) -> String {
    let Some((name, rest)) = holder.split_once(" in ") else {
        return holder.to_string();
    };
    let dir = rest.split(" (pid ").next().unwrap_or(rest);
    let ours = std::env::current_dir().is_ok_and(|d| d == std::path::Path::new(dir));
    if ours {
        name.to_string()
    } else {
        format!("{name} of another project")
    }
}

fn secs(s: f64) -> String {
    crate::validate::units::format_duration(std::time::Duration::from_secs_f64(s.max(0.0)))
}

impl Sink for Progress {
    fn record(&self, r: &Record) -> Result<()> {
        let notice = self.verbose || is_notice(&r.event);
        for line in self.lines(r) {
            match (line.strip_prefix('\r'), &r.event) {
                (
                    Some(rest),
                    Event::PairMeasured {
                        pair, max_pairs, ..
                    },
                ) => (self.print)(&Shown::Pair {
                    pair: *pair,
                    of: *max_pairs,
                    text: &format!("[{}] {rest}", self.brief),
                    live: !self.verbose,
                }),
                (rest, _) => {
                    let text = format!("[{}] {}", self.brief, rest.unwrap_or(&line));
                    (self.print)(&if notice {
                        Shown::Line(&text)
                    } else {
                        Shown::Live(&text)
                    })
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::events::Span;
    use crate::model::Phase;

    #[test]
    fn phases_pairs_and_agents_read_as_before() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let out = seen.clone();
        let p = Progress::new(
            "k",
            false,
            Box::new(move |s: &Shown| {
                out.lock().unwrap().push(match s {
                    Shown::Line(l) => l.to_string(),
                    Shown::Live(l) => format!("live {l}"),
                    Shown::Pair {
                        pair,
                        of,
                        text,
                        live,
                    } => format!("{pair}/{of}{} {text}", if *live { " live" } else { "" }),
                })
            }),
        );
        let root = Span::new("r", vec![Arc::new(p)]).with_iteration(Some(2));
        let phase = root
            .child(Event::PhaseStarted {
                phase: Phase::Evaluate,
            })
            .unwrap();
        phase
            .emit(Event::CommandStarted {
                role: "metric".into(),
                worktree: "base".into(),
                command: "./bench.sh".into(),
            })
            .unwrap();
        phase
            .emit(Event::PairMeasured {
                pair: 2,
                max_pairs: 12,
                base: 100.0,
                cand: 90.0,
                d: 0.105,
                running_effect: 0.1,
                half_width: Some(0.02),
                running_ci: Some((0.08, 0.12)),
            })
            .unwrap();
        phase
            .emit(Event::PairMeasured {
                pair: 3,
                max_pairs: 12,
                base: 100.0,
                cand: 650.0,
                d: -1.87,
                running_effect: -5.5,
                half_width: Some(1.2),
                running_ci: Some((-9.0, -2.0)),
            })
            .unwrap();
        phase
            .emit(Event::ModelCall {
                phase: crate::model::Phase::Plan,
                profile: "claude".into(),
                attempt: 2,
                attempts: 3,
                command: String::new(),
                prompt_chars: 10,
                model: None,
            })
            .unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                "live [k] iteration 2: EVALUATE",
                "2/12 live [k] pair 2 (of at most 12): base 100 cand 90; running effect +10.0% [+8.0, +12.0] (95% interval, this series' noise)",
                "3/12 live [k] pair 3 (of at most 12): base 100 cand 650; running effect 6.50× worse [3.00×, 10.0×] (95% interval, this series' noise)",
                "live [k] plan: running agent `claude` (attempt 2 of 3)",
            ]
        );
    }
}
