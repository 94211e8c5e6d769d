//! The command line (DESIGN.md §13): argument parsing and dispatch.
//!
//! Commands return an exit code or a library error; `main.rs` owns the
//! mapping of errors to codes. Data goes to stdout (plain or `--json`),
//! progress and diagnostics to stderr, so `ooda status --json | jq` works
//! while a human still sees what a long tick is doing.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::log::Log;
use crate::phases::{Runner, StepOutcome};
use crate::project::Project;
use crate::schedule::{Schedule, Zone};

#[derive(Debug, Parser)]
#[command(
    name = "ooda",
    version,
    about = "Write a Brief before you leave; read summary.md in the morning."
)]
pub struct Cli {
    /// Project root (default: nearest ancestor with ooda.yaml, else the git root)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print data as JSON where a command prints data
    #[arg(long, global = true)]
    pub json: bool,
    /// Print only errors
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Colour: auto (when stdout is a terminal), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scaffold ooda.yaml, briefs/, subagents/, templates/ and .gitignore lines
    Init { dir: Option<PathBuf> },
    /// Create briefs/NAME.md from the Brief template
    New { name: String },
    /// Validate a Brief; with --measure N, run setup, guards and the metric N times at HEAD
    Check {
        brief: String,
        #[arg(long, value_name = "N")]
        measure: Option<u32>,
    },
    /// Run exactly one iteration (or finish an interrupted one) and exit
    Tick { brief: String },
    /// Run iterations back to back until a stop, or one per fire time with --every/--cron
    Run {
        brief: String,
        /// Stop after N iterations in this invocation (the baseline not counted)
        #[arg(long, value_name = "N")]
        max_iterations: Option<u32>,
        /// One iteration per interval, the first at once (e.g. 20m, 1h30m)
        #[arg(long, value_name = "D", conflicts_with = "cron")]
        every: Option<String>,
        /// One iteration per fire time of a cron expression (local time, or TZ)
        #[arg(long, value_name = "E")]
        cron: Option<String>,
    },
    /// Run every Brief in briefs/ on its own `schedule`, picking up new, edited and deleted Briefs
    Daemon {
        /// The folder of Briefs to watch (default: briefs/ of the project)
        #[arg(long, value_name = "DIR")]
        briefs: Option<PathBuf>,
    },
    /// Show each Brief's status
    Status { brief: Option<String> },
    /// Acknowledge a red light so the loop may run again
    Ack {
        brief: String,
        #[arg(long)]
        note: Option<String>,
    },
    /// Print a Brief's summary.md
    Report { brief: String },
}

/// Writes to stdout; a closed pipe (`ooda status | head -1`) ends the process quietly.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

fn err_line(quiet: bool, text: &str) {
    if !quiet {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

/// Progress on stderr. Lines starting with '\r' are live updates (pairs
/// measured, running estimate): a terminal redraws them in place, anything
/// else gets them as plain lines.
fn progress_printer(quiet: bool) -> impl Fn(&str) {
    let tty = std::io::stderr().is_terminal();
    let live = std::cell::Cell::new(false);
    move |m: &str| {
        if quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        match m.strip_prefix('\r') {
            Some(rest) if tty => {
                let _ = write!(err, "\r\x1b[K{rest}");
                live.set(true);
            }
            Some(rest) => {
                let _ = writeln!(err, "{rest}");
            }
            None => {
                if live.replace(false) {
                    let _ = writeln!(err);
                }
                let _ = writeln!(err, "{m}");
            }
        }
        let _ = err.flush();
    }
}

pub fn run(cli: Cli) -> Result<i32> {
    let quiet = cli.quiet;
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let progress = progress_printer(quiet);
    match cli.command {
        Command::Init { dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from("."));
            let report = crate::scaffold::init(&dir)?;
            if cli.json {
                out(&format!(
                    "{}\n",
                    json!({"created": report.created, "kept": report.kept, "gitignore_added": report.gitignore_added})
                ));
            } else {
                for p in &report.created {
                    out(&format!("created {}\n", p.display()));
                }
                for p in &report.kept {
                    out(&format!("kept    {} (exists)\n", p.display()));
                }
                if !report.gitignore_added.is_empty() {
                    out(&format!(
                        "added to .gitignore: {}\n",
                        report.gitignore_added.join(" ")
                    ));
                }
                out("next: `ooda new NAME` to write a Brief, then `ooda check NAME --measure 5`\n");
            }
            Ok(0)
        }
        Command::New { name } => {
            let project = Project::discover(cli.root.as_deref())?;
            let path = crate::scaffold::new_brief(&project.root, &name)?;
            out(&format!(
                "created {}: edit it, then `ooda check {name} --measure 5`\n",
                path.display()
            ));
            Ok(0)
        }
        Command::Check { brief, measure } => {
            let project = Project::discover(cli.root.as_deref())?;
            let b = project.load_brief(&brief)?;
            out(&crate::check::describe(&b, &project));
            if let Some(n) = measure {
                if n == 0 {
                    return Err(Error::Input("--measure needs at least 1 run".into()));
                }
                let interrupt = Interrupt::install();
                out(&crate::check::measure(
                    &project,
                    &b,
                    n,
                    interrupt.flag(),
                    &progress,
                )?);
            }
            Ok(0)
        }
        Command::Tick { brief } => {
            let project = Project::discover(cli.root.as_deref())?;
            let interrupt = Interrupt::install();
            let mut runner = Runner::open(&project, &brief, &interrupt, Box::new(progress))?;
            runner.verbose = cli.verbose;
            let outcome = runner.step()?;
            let code = report_step(&runner.brief.name, &outcome, cli.json, quiet);
            // A signal during the last checkpoint: the work is saved, but the
            // caller asked us to stop and must learn that we were interrupted.
            if interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            Ok(code)
        }
        Command::Run {
            brief,
            max_iterations,
            every,
            cron,
        } => {
            let project = Project::discover(cli.root.as_deref())?;
            let schedule = match (every, cron) {
                (Some(d), _) => {
                    Some(Schedule::every(&d).map_err(|e| Error::Input(format!("--every: {e}")))?)
                }
                (_, Some(e)) => {
                    Some(Schedule::cron(&e).map_err(|e| Error::Input(format!("--cron: {e}")))?)
                }
                (None, None) => None,
            };
            if let Some(schedule) = schedule {
                let log = Log::new(Zone::from_env(), quiet);
                let report = |name: &str, o: &StepOutcome| report_step(name, o, cli.json, quiet);
                return crate::ticker::run(
                    project,
                    &brief,
                    schedule,
                    max_iterations,
                    log,
                    cli.verbose,
                    &report,
                );
            }
            let interrupt = Interrupt::install();
            let mut runner = Runner::open(&project, &brief, &interrupt, Box::new(progress))?;
            runner.verbose = cli.verbose;
            let mut done = 0u32;
            loop {
                if max_iterations.is_some_and(|m| done >= m) {
                    err_line(
                        quiet,
                        &format!("[{}] --max-iterations {done} reached", runner.brief.name),
                    );
                    return Ok(0);
                }
                if interrupt.is_set() {
                    return Err(Error::Interrupted);
                }
                let outcome = runner.step()?;
                let code = report_step(&runner.brief.name, &outcome, cli.json, quiet);
                match outcome {
                    StepOutcome::Baseline => {}
                    StepOutcome::Iteration { .. } => done += 1,
                    StepOutcome::Stopped(_) | StepOutcome::Finished(_) => return Ok(code),
                }
            }
        }
        Command::Daemon { briefs } => {
            let project = Project::discover(cli.root.as_deref())?;
            let log = Log::new(Zone::from_env(), quiet);
            crate::daemon::run(project, briefs, log, cli.verbose)
        }
        Command::Status { brief } => {
            let project = Project::discover(cli.root.as_deref())?;
            let rows = crate::status::collect(&project, brief.as_deref())?;
            if cli.json {
                out(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                ));
            } else {
                out(&crate::status::render(&rows, color));
            }
            Ok(0)
        }
        Command::Ack { brief, note } => {
            let project = Project::discover(cli.root.as_deref())?;
            let interrupt = Interrupt::none();
            out(&format!(
                "{}\n",
                crate::phases::ack(&project, &brief, note.as_deref(), &interrupt)?
            ));
            Ok(0)
        }
        Command::Report { brief } => {
            let project = Project::discover(cli.root.as_deref())?;
            let b = project.load_brief(&brief)?;
            let path = project.iterations_dir(&b.name).join("summary.md");
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::Input(format!(
                    "{}: {e} (no run yet? start one with `ooda tick {}`)",
                    path.display(),
                    b.name
                ))
            })?;
            out(&text);
            Ok(0)
        }
    }
}

/// Prints what a step did and returns the exit code it implies.
fn report_step(name: &str, outcome: &StepOutcome, json: bool, quiet: bool) -> i32 {
    let (code, text, value) = match outcome {
        StepOutcome::Baseline => (
            0,
            format!("{name}: baseline archived in iter-000.md"),
            json!({"brief": name, "outcome": "baseline", "iteration": 0}),
        ),
        StepOutcome::Iteration { iteration, verdict } => (
            0,
            format!("{name}: iteration {iteration} {}", verdict.as_str()),
            json!({"brief": name, "outcome": "iteration", "iteration": iteration, "verdict": verdict.as_str()}),
        ),
        StepOutcome::Stopped(stop) | StepOutcome::Finished(stop) => {
            let code = if stop.reason.is_red() {
                3
            } else if stop.reason.is_budget() {
                4
            } else {
                0
            };
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
                code,
                text,
                json!({"brief": name, "outcome": if finished {"finished"} else {"stopped"}, "reason": stop.reason.as_str(), "detail": stop.detail, "iteration": stop.iteration}),
            )
        }
    };
    if json {
        out(&format!("{value}\n"));
    } else if !quiet {
        out(&format!("{text}\n"));
    }
    code
}
