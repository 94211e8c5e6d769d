//! What the command line prints, and how.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};

use serde_json::json;

use crate::error::{Error, Result};
use crate::events::Shown;
use crate::events::log::Log;
use crate::exit::Exit;
use crate::model::Verdict;
use crate::phases::{Machine, Print, StepOutcome};
use crate::project::Project;
use crate::run::interrupt::Interrupt;
use crate::validate::cron::Zone;

use super::Globals;

/// Whether [`out`] printed anything: a command that failed after printing
/// its own JSON (`ooda check --json` on an invalid Brief) gets no second
/// document from `main`.
static PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether anything was printed to stdout through [`out`].
pub fn printed() -> bool {
    PRINTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes to stdout. A closed pipe (`ooda status | head -1`) is
/// [`Error::BrokenPipe`], which `main` turns into a quiet exit 0; any other
/// failure to print is not the command's failure and is ignored.
pub(crate) fn out(text: &str) -> Result<()> {
    PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Error::BrokenPipe),
        _ => Ok(()),
    }
}

/// A diagnostic on stderr, unless `-q`.
pub(crate) fn err_line(quiet: bool, text: &str) {
    if !quiet {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

/// Progress on stderr, each line with the time (as the daemon's log has
/// it). On a terminal a measurement's pairs move a progress bar (the
/// running estimate beside it); elsewhere each pair is a line.
pub(crate) fn progress_printer(quiet: bool) -> Print {
    let log = Log::new(Zone::from_env(), quiet);
    let tty = std::io::stderr().is_terminal();
    let bar: Mutex<Option<ProgressBar>> = Mutex::new(None);
    Box::new(move |s: &Shown| {
        if quiet {
            return;
        }
        let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
        match s {
            Shown::Pair { pair, of, text } if tty => {
                let pb = bar.get_or_insert_with(|| {
                    let pb = ProgressBar::new(u64::from(*of));
                    if let Ok(style) =
                        ProgressStyle::with_template("{bar:24.cyan/blue} {pos}/{len} {msg}")
                    {
                        pb.set_style(style.progress_chars("=> "));
                    }
                    pb
                });
                pb.set_length(u64::from(*of));
                pb.set_position(u64::from(*pair));
                pb.set_message(text.to_string());
            }
            Shown::Pair { text, .. } => log.line(text),
            Shown::Line(text) => {
                if let Some(pb) = bar.take() {
                    pb.finish_and_clear();
                }
                log.line(text);
            }
        }
    })
}

/// Prints what a step did and returns the exit it implies, also when nobody
/// reads stdout any more: a red light is exit 3 whoever listens.
pub(crate) fn report_step(
    name: &str,
    outcome: &StepOutcome,
    json: bool,
    quiet: bool,
) -> Result<Exit> {
    let iteration = |iteration: u32, verdict: Verdict| {
        (
            format!("{name}: iteration {iteration} {}", verdict.as_str()),
            json!({"brief": name, "outcome": "iteration", "iteration": iteration, "verdict": verdict.as_str()}),
        )
    };
    let mut lines = Vec::new();
    match outcome {
        StepOutcome::Baseline => lines.push((
            format!("{name}: baseline archived in iter-000.md"),
            json!({"brief": name, "outcome": "baseline", "iteration": 0}),
        )),
        StepOutcome::Iteration {
            iteration: i,
            verdict,
        } => lines.push(iteration(*i, *verdict)),
        StepOutcome::Stopped(stop, _) | StepOutcome::Finished(stop) => {
            // The iteration that ended the run is reported like any other.
            if let StepOutcome::Stopped(_, Some((i, v))) = outcome {
                lines.push(iteration(*i, *v));
            }
            let finished = matches!(outcome, StepOutcome::Finished(_));
            let text = if finished {
                // A stall's detail says what to raise already.
                let go_on = if stop.detail.contains("to go on") {
                    String::new()
                } else {
                    format!(" To go on anyway: `ooda run {name} --continue`.")
                };
                format!(
                    "{name}: nothing to do: the run ended ({}: {}).{go_on} To start a new run: `ooda reset {name}`.",
                    stop.reason.as_str(),
                    stop.detail
                )
            } else {
                format!(
                    "{name}: stopped: {} — {}",
                    stop.reason.as_str(),
                    stop.detail
                )
            };
            lines.push((
                text,
                json!({"brief": name, "outcome": if finished {"finished"} else {"stopped"}, "reason": stop.reason.as_str(), "detail": stop.detail, "iteration": stop.iteration}),
            ));
        }
    }
    let mut printed = Ok(());
    for (text, value) in lines {
        if printed.is_err() {
            break;
        }
        printed = if json {
            out(&format!("{value}\n"))
        } else if !quiet {
            out(&format!("{text}\n"))
        } else {
            Ok(())
        };
    }
    match printed {
        Ok(()) | Err(Error::BrokenPipe) => Ok(Exit::of_step(outcome)),
        Err(e) => Err(e),
    }
}

/// The machine of one Brief, showing its progress on stderr.
pub(crate) fn open_machine<'a>(
    g: &Globals,
    project: &'a Project,
    brief: &str,
    interrupt: &'a Interrupt,
) -> Result<Machine<'a>> {
    Machine::open(
        project,
        brief,
        interrupt,
        progress_printer(g.quiet),
        g.verbose,
    )
}
