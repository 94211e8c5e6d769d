//! `ooda submit BRIEF [--every D]`: whole ticks of a Brief as Slurm jobs,
//! for Briefs whose agent works from the nodes (builtin, or an endpoint the
//! nodes reach), so that many Briefs spread over a cluster's nodes.
//!
//! Each job runs `ooda tick BRIEF` on its node, holding the Brief's lock on
//! the shared filesystem as any tick does; with `--every`, the job queues
//! the next tick when it starts (`--begin=now+D`, after this job however it
//! ends: a `scancel`, its time limit or a lost node does not break the
//! chain), checks again when it ends, and cancels the queued one when the
//! run has stopped. The job's name is the Brief's
//! (`ooda-<brief>-<hash>-tick`), so a second submit while one is queued is
//! answered with that job, never a second one. The chain is recorded
//! (`chain.json` beside the jobs' output) so `ooda status` can say when it
//! is broken.

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
    let logs = project.slurm_dir(&b.name);
    // A tick queues the next only while the run goes on; once it has
    // stopped, the tick queued already is cancelled.
    if chained
        && let Ok(Loaded::Ok(s)) = state::peek(&project.iterations_dir(&b.name))
        && let Some(stop) = &s.stop
    {
        let cancelled =
            crate::run::executor::cancel_next_tick(&project.root, &b.name).unwrap_or_default();
        Chain::remove(&logs);
        if !g.quiet {
            eprintln!(
                "{}: the run stopped ({}): no further tick is submitted{} (raise the budget, or `ooda ack` a RED light, then `ooda submit {} --every {}` starts again)",
                b.name,
                stop.reason.as_str(),
                if cancelled.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and the queued one ({}) is cancelled",
                        cancelled.join(", ")
                    )
                },
                b.name,
                every.as_deref().unwrap_or("…")
            );
        }
        return Ok(Exit::Ok);
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding ooda's own binary for the job", e))?;
    let settings = project.config.slurm_for(&b);
    let submit = || {
        submit_tick(
            &settings,
            &project.root,
            &b.name,
            &logs,
            &exe,
            every.as_deref(),
            interval.filter(|_| chained),
        )
    };
    // A tick keeping its chain waits out a controller that does not
    // answer (`slurm.controller_wait`): a chain lost to an outage would
    // end the night.
    let mut outage = crate::run::outage::Outage::new(if chained {
        settings
            .controller_wait
            .unwrap_or(crate::run::executor::CONTROLLER_WAIT)
    } else {
        std::time::Duration::ZERO
    });
    let submitted = loop {
        match submit() {
            Err(e) if crate::run::executor::no_answer(&e) => match outage.next_wait() {
                Some(wait) => std::thread::sleep(wait),
                None => return Err(e),
            },
            r => break r?,
        }
    };
    if let Some(every) = &every {
        Chain {
            every: every.clone(),
        }
        .save(&logs)?;
    }
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

/// A chain of ticks `ooda submit --every` keeps queued, as `ooda status`
/// reads it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Chain {
    pub every: String,
}

impl Chain {
    fn path(logs: &std::path::Path) -> std::path::PathBuf {
        logs.join("chain.json")
    }

    fn save(&self, logs: &std::path::Path) -> Result<()> {
        std::fs::create_dir_all(logs)
            .map_err(|e| Error::io(format!("creating {}", logs.display()), e))?;
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Internal(format!("the chain of ticks: {e}")))?;
        crate::atomic::write_atomic(&Chain::path(logs), &bytes)
    }

    pub(crate) fn load(logs: &std::path::Path) -> Option<Chain> {
        serde_json::from_slice(&std::fs::read(Chain::path(logs)).ok()?).ok()
    }

    fn remove(logs: &std::path::Path) {
        let _ = std::fs::remove_file(Chain::path(logs));
    }
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
