//! `ooda submit BRIEF [--every D]`: whole ticks of a Brief as Slurm jobs,
//! for Briefs whose agent works from the nodes (builtin, or an endpoint the
//! nodes reach), so that many Briefs spread over a cluster's nodes.
//!
//! Each job runs `ooda tick BRIEF` on its node, holding the Brief's lock on
//! the shared filesystem as any tick does; with `--every`, the job queues
//! the next tick when it ends (`--begin=now+D`), until the run stops. The
//! job's name is the Brief's (`ooda-<brief>-<hash>-tick`), so a second
//! submit while one is queued is answered with that job, never a second one.

use super::{Globals, out};
use crate::archive::state::{self, Loaded};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;
use crate::run::executor::{Submitted, submit_tick};

pub(crate) fn run(g: &Globals, brief: &str, every: Option<String>, chained: bool) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    let interval = every
        .as_deref()
        .map(crate::validate::cron::interval)
        .transpose()
        .map_err(|e| Error::Input(format!("--every: {e}")))?;
    if chained && interval.is_none() {
        return Err(Error::Input("--chained needs --every".into()));
    }
    // The tick that just ended queues the next only while the run goes on.
    if chained
        && let Ok(Loaded::Ok(s)) = state::peek(&project.iterations_dir(&b.name))
        && let Some(stop) = &s.stop
    {
        if !g.quiet {
            eprintln!(
                "{}: the run stopped ({}): no further tick is submitted (raise the budget, or `ooda ack` a RED light, then `ooda submit {}` starts again)",
                b.name,
                stop.reason.as_str(),
                b.name
            );
        }
        return Ok(Exit::Ok);
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding ooda's own binary for the job", e))?;
    let submitted = submit_tick(
        &project.config.slurm_for(&b),
        &project.root,
        &b.name,
        &project.worktrees_dir(&b.name).join("slurm"),
        &exe,
        every.as_deref(),
        interval.filter(|_| chained),
    )?;
    if g.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&submitted).unwrap_or_default()
        ))?;
    } else if !g.quiet {
        out(&render(&b.name, &submitted, every.as_deref()))?;
    }
    Ok(Exit::Ok)
}

fn render(brief: &str, s: &Submitted, every: Option<&str>) -> String {
    if let Some(state) = &s.already_queued {
        return format!(
            "{brief}: the Slurm job {} ({}) is already queued ({state}): nothing submitted\n",
            s.job, s.name
        );
    }
    let when = match (s.begins_in, every) {
        (Some(secs), _) => format!("starts in {secs}s at the earliest"),
        (None, Some(e)) => format!("then one tick every {e} until the run stops"),
        (None, None) => "one tick".into(),
    };
    format!(
        "{brief}: submitted the Slurm job {} ({}): {when}; `squeue -j {}` shows it\n",
        s.job, s.name, s.job
    )
}
