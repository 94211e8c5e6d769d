//! What the command line prints, and how.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::interrupt::Interrupt;
use crate::phases::{Machine, Print, StepOutcome};
use crate::project::Project;

use super::Globals;

/// Writes to stdout. A closed pipe (`ooda status | head -1`) is
/// [`Error::BrokenPipe`], which `main` turns into a quiet exit 0; any other
/// failure to print is not the command's failure and is ignored.
pub fn out(text: &str) -> Result<()> {
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

/// Progress on stderr. Lines starting with '\r' are live updates (pairs
/// measured, running estimate): a terminal redraws them in place, anything
/// else gets them as plain lines.
pub(crate) fn progress_printer(quiet: bool) -> Print {
    let tty = std::io::stderr().is_terminal();
    let live = AtomicBool::new(false);
    Box::new(move |m: &str| {
        if quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        match m.strip_prefix('\r') {
            Some(rest) if tty => {
                let _ = write!(err, "\r\x1b[K{rest}");
                live.store(true, Ordering::Relaxed);
            }
            Some(rest) => {
                let _ = writeln!(err, "{rest}");
            }
            None => {
                if live.swap(false, Ordering::Relaxed) {
                    let _ = writeln!(err);
                }
                let _ = writeln!(err, "{m}");
            }
        }
        let _ = err.flush();
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
    let (text, value) = match outcome {
        StepOutcome::Baseline => (
            format!("{name}: baseline archived in iter-000.md"),
            json!({"brief": name, "outcome": "baseline", "iteration": 0}),
        ),
        StepOutcome::Iteration { iteration, verdict } => (
            format!("{name}: iteration {iteration} {}", verdict.as_str()),
            json!({"brief": name, "outcome": "iteration", "iteration": iteration, "verdict": verdict.as_str()}),
        ),
        StepOutcome::Stopped(stop) | StepOutcome::Finished(stop) => {
            let finished = matches!(outcome, StepOutcome::Finished(_));
            let text = if finished {
                format!(
                    "{name}: nothing to do: the run ended ({}: {}). To start a new run, move iterations/{name}/ aside and delete branch ooda/{name}.",
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
            (
                text,
                json!({"brief": name, "outcome": if finished {"finished"} else {"stopped"}, "reason": stop.reason.as_str(), "detail": stop.detail, "iteration": stop.iteration}),
            )
        }
    };
    let printed = if json {
        out(&format!("{value}\n"))
    } else if !quiet {
        out(&format!("{text}\n"))
    } else {
        Ok(())
    };
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
