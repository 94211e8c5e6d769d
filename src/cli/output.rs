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
use crate::report::headline::Saved;
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
        clear_live();
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

/// Progress on stderr, each line with the time (as the daemon's log has
/// it). On a terminal one live line says what the loop is doing (the
/// phase, or pair k of n with the running estimate and its interval) and
/// for how long; elsewhere only what must be read is a line (events/
/// progress.rs decides which, and `-v` makes everything a line).
pub(crate) fn progress_printer(quiet: bool) -> Print {
    let log = Log::new(Zone::from_env(), quiet);
    let tty = std::io::stderr().is_terminal();
    // One line, cut to the terminal's width: a wrapped line is redrawn as
    // several and scrolls.
    let spinner = ProgressStyle::with_template("{spinner} {elapsed:>4} {wide_msg}").ok();
    let pairs = ProgressStyle::with_template("{bar:16.cyan/blue} {elapsed:>4} {wide_msg}")
        .ok()
        .map(|s| s.progress_chars("=> "));
    Box::new(move |s: &Shown| {
        if quiet {
            return;
        }
        let mut bar = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        let live = |bar: &mut Option<ProgressBar>| -> ProgressBar {
            bar.get_or_insert_with(|| {
                let pb = ProgressBar::new_spinner();
                pb.enable_steady_tick(std::time::Duration::from_millis(250));
                pb
            })
            .clone()
        };
        match s {
            Shown::Live(text) if tty => {
                let pb = live(&mut bar);
                if let Some(st) = &spinner {
                    pb.set_style(st.clone());
                }
                pb.reset_elapsed();
                pb.set_message(text.to_string());
            }
            Shown::Live(_) => {}
            Shown::Pair { pair, of, text, .. } if tty => {
                let pb = live(&mut bar);
                if let Some(st) = &pairs {
                    pb.set_style(st.clone());
                }
                pb.set_length(u64::from(*of));
                pb.set_position(u64::from(*pair));
                pb.set_message(text.to_string());
            }
            Shown::Pair { live: true, .. } => {}
            Shown::Pair { text, .. } => log.line(text),
            Shown::Line(text) => match bar.as_ref() {
                Some(pb) => pb.suspend(|| log.line(text)),
                None => log.line(text),
            },
        }
    })
}

/// The live line on a terminal, shared so that what `run` and `tick` print
/// on stdout never lands on it.
static LIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Clears the live line, if one is drawn: before a line on stdout.
fn clear_live() {
    if let Some(pb) = LIVE.lock().unwrap_or_else(|p| p.into_inner()).take() {
        pb.finish_and_clear();
    }
}

/// Prints what a step did and returns the exit it implies, also when nobody
/// reads stdout any more: a red light is exit 3 whoever listens. The last
/// line is the result (the headline and where the report is): after every
/// step when `each` (a tick is one step), else only when the run stops.
pub(crate) fn report_step(
    project: &Project,
    name: &str,
    outcome: &StepOutcome,
    each: bool,
    json: bool,
    quiet: bool,
) -> Result<Exit> {
    let read = Saved::load(project, name);
    let iteration = |iteration: u32, verdict: Verdict| {
        let rec = read
            .as_ref()
            .and_then(|r| r.history.get(iteration as usize));
        // What was measured; for what failed, why (a log shows nothing
        // else of it).
        let effect = rec.and_then(|r| match &r.measured {
            // Measured, then refused: the refusal is the news, not the gain.
            Some(_) if r.discard_kind() == Some(crate::model::DiscardKind::BlockedByReview) => {
                Some(format!(
                    "{} — {}",
                    r.effect_text(),
                    crate::text::clip::clip(&r.reason, 160)
                ))
            }
            Some(_) => Some(r.effect_text()),
            None if verdict.is_failure() => {
                Some(format!("— {}", crate::text::clip::clip(&r.reason, 160)))
            }
            None => None,
        });
        (
            format!(
                "{name}: iteration {iteration} {}{}",
                verdict.as_str(),
                effect.as_ref().map(|e| format!(" {e}")).unwrap_or_default()
            ),
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
    // The last line is the result, whatever came before it.
    let stopped = matches!(outcome, StepOutcome::Stopped(..) | StepOutcome::Finished(_));
    if (stopped || (each && !matches!(outcome, StepOutcome::Baseline)))
        && let Some(r) = &read
    {
        lines.push(result(r, name));
    }
    clear_live();
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

/// The result line, in words and as JSON.
fn result(saved: &Saved, name: &str) -> (String, serde_json::Value) {
    let h = saved.headline();
    (
        format!("{name}: {}", h.result_line(name)),
        json!({"brief": name, "outcome": "result", "headline": h.json(), "summary": format!("iterations/{name}/summary.md")}),
    )
}

/// The result line alone, as the last line of a `run` that ends for
/// another reason than a stop (`--max-iterations`).
pub(crate) fn report_result(project: &Project, name: &str, json: bool, quiet: bool) -> Result<()> {
    let Some(r) = Saved::load(project, name) else {
        return Ok(());
    };
    clear_live();
    let (text, value) = result(&r, name);
    match if json {
        out(&format!("{value}\n"))
    } else if !quiet {
        out(&format!("{text}\n"))
    } else {
        Ok(())
    } {
        Ok(()) | Err(Error::BrokenPipe) => Ok(()),
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
