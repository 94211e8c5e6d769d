//! `ooda run BRIEF [--every D | --cron E] [--max-iterations N]`.

use super::Globals;
use super::output::{err_line, open_machine, report_step};
use crate::error::{Error, Result};
use crate::events::log::Log;
use crate::exit::Exit;
use crate::phases::StepOutcome;
use crate::project::Project;
use crate::run::interrupt::Interrupt;
use crate::validate::cron::{Schedule, Zone};

pub(crate) fn run(
    g: &Globals,
    brief: &str,
    max_iterations: Option<u32>,
    every: Option<String>,
    cron: Option<String>,
    go_on: bool,
) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    if go_on {
        let done = super::ack::accept(&project, brief, None, true)?;
        err_line(g.quiet, &done.message);
    }
    let schedule = match (every, cron) {
        (Some(d), _) => {
            Some(Schedule::every(&d).map_err(|e| Error::Input(format!("--every: {e}")))?)
        }
        (_, Some(e)) => Some(Schedule::cron(&e).map_err(|e| Error::Input(format!("--cron: {e}")))?),
        (None, None) => None,
    };
    if let Some(schedule) = schedule {
        let log = Log::new(Zone::from_env(), g.quiet).json(g.json);
        let report = |p: &Project, name: &str, o: &StepOutcome| {
            report_step(p, name, o, false, g.json, g.quiet)
        };
        return crate::schedule::ticker::run(
            project,
            brief,
            schedule,
            max_iterations,
            log,
            g.verbose,
            &report,
        );
    }
    let interrupt = Interrupt::install();
    let mut machine = open_machine(g, &project, brief, &interrupt)?;
    let mut done = 0u32;
    let mut lost = 0usize;
    loop {
        if max_iterations.is_some_and(|m| done >= m) {
            err_line(
                g.quiet,
                &format!("[{}] --max-iterations {done} reached", machine.brief().name),
            );
            super::output::report_result(&project, &machine.brief().name, g.json, g.quiet)?;
            return Ok(Exit::Ok);
        }
        if interrupt.is_set() {
            return Err(Error::Interrupted);
        }
        let outcome = match machine.step() {
            Ok(outcome) => {
                lost = 0;
                outcome
            }
            // A measurement whose cluster job was preempted, cancelled or
            // lost with its node decided nothing: a night goes on in a new
            // allocation instead of ending at the first preemption, for at
            // most LOST_JOBS_MAX retries in a row. A candidate that cancels
            // its own jobs is recorded as failed sooner or later (EVALUATE
            // counts them in the checkpoint, across ticks).
            Err(e)
                if lost < crate::archive::state::LOST_JOBS_MAX
                    && crate::run::executor::job_ended(&e).is_some_and(|j| j.retry) =>
            {
                // An allocation that completed pairs before it was lost
                // moved the series on (they are kept): only losses without
                // progress count towards the bound.
                if crate::run::executor::job_ended(&e)
                    .and_then(|j| j.new_pairs)
                    .is_some_and(|n| n > 0)
                {
                    lost = 0;
                }
                lost += 1;
                Log::new(Zone::from_env(), g.quiet).info(
                    Some(&machine.brief().name),
                    &format!(
                        "{e}\nmeasuring again in a new allocation (retry {lost} of {})",
                        crate::archive::state::LOST_JOBS_MAX
                    ),
                );
                drop(machine);
                machine = open_machine(g, &project, brief, &interrupt)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let exit = report_step(
            &project,
            &machine.brief().name,
            &outcome,
            false,
            g.json,
            g.quiet,
        )?;
        match outcome {
            StepOutcome::Baseline => {}
            StepOutcome::Iteration { .. } => done += 1,
            StepOutcome::Stopped(..) | StepOutcome::Finished(_) => return Ok(exit),
        }
        // A long run seals its event log between iterations as ticks do
        // (opening the archive again is where that happens).
        let dir = project.iterations_dir(&machine.brief().name);
        let log = crate::archive::layout::Layout::of(&dir).events();
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > project.config.defaults.events_segment) {
            drop(machine);
            machine = open_machine(g, &project, brief, &interrupt)?;
        }
    }
}
