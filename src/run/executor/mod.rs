//! Where commands run: the [`Executor`] seam.
//!
//! Every command ooda starts (setup, guards, the metric, an agent step,
//! `check --measure`) goes through a [`Lease`] taken from the project's
//! executor. A lease is a place to run commands for one purpose, held while
//! that purpose lasts: the measurements of one EVALUATE run under one lease,
//! so an executor that moves them elsewhere (a cluster allocation) keeps
//! base and candidate in the same conditions, and one that must serialize
//! measurements across Briefs (a quiet machine) has the place to do it.
//! Running a command itself (process group, timeout, cancellation, output
//! caps) is `exec.rs`, which every executor ends in.

mod in_job;
mod local;
mod slurm;

use std::io;
use std::sync::atomic::AtomicBool;

use crate::error::Result;
use crate::run::exec::{CommandOutput, CommandSpec};

pub(crate) use local::Local;
pub(crate) use slurm::{
    CONTROLLER_WAIT, PENDING_LIMIT, SUBMITTED_ENV, Slurm, Submitted, Waiting, cancel_next_tick,
    job_ended, next_tick, no_answer, note_new_pairs, submit_tick,
};
pub use slurm::{available as slurm_available, job_prefix};

/// Why commands are run, so an executor can place them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Setup, guards and paired measurements of one phase (EVALUATE, the
    /// baseline, a confirmation test): base and candidate together.
    Measure(Job),
    /// One agent step (PLAN, EXECUTE, LEARN): it stays where ooda runs,
    /// because it may need to reach a model API.
    Agent,
    /// `ooda check --measure`.
    Check,
}

/// Which measurement a [`Purpose::Measure`] lease is for: it names the
/// cluster job that holds it, so a restarted tick finds its job again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    pub iteration: u32,
    /// `baseline`, `evaluate`, `simplify`, `confirm`, `analyze`, `replay`.
    pub phase: &'static str,
}

/// A place to run commands, for as long as the lease is held.
pub trait Lease {
    /// Runs one command to completion, timeout or cancellation. `Err` only
    /// when it could not be started or waited for: what the command itself
    /// does is an `Ok` with an outcome.
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput>;

    /// Whether the lease holds the host's measurement lock already: an
    /// executor whose allocation's time runs from its start takes the lock
    /// before it, so that a wait for the lock is not spent out of it.
    fn holds_measurements(&self) -> bool {
        false
    }

    /// Before each pair of a series: whether there is time for one that
    /// takes `needs` (the longest of the series here so far). An executor
    /// whose place ends at a set time gives it up now instead, with the
    /// error a lost place is.
    fn before_pair(&self, _needs: std::time::Duration) -> io::Result<()> {
        Ok(())
    }
}

/// Hands out leases.
pub(crate) trait Executor: Send + Sync {
    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>>;

    /// The cluster jobs leases were held in since the last call, oldest
    /// first (none for an executor that runs commands here).
    fn take_jobs(&self) -> Vec<crate::model::ClusterJob> {
        Vec::new()
    }

    /// The Landlock ABI agent steps are confined with (`None`: they are
    /// not) and what they may write besides their worktree: what the fence
    /// knows an agent could have written (`run/fence/reach.rs`). Agent steps
    /// always run here, whatever the executor does with measurements.
    fn agent_confinement(&self) -> (Option<i32>, Vec<std::path::PathBuf>);
}

/// The executor `brief` asks for (`executor:`, else `defaults.executor`):
/// `here` itself, or Slurm allocations with `here` for agent steps and as
/// the sandbox commands get on the nodes; job output goes to `logs`.
/// `locked`: the caller holds the Brief's lock, so this Brief's other jobs
/// are leftovers of an earlier tick.
pub(crate) fn for_brief(
    here: Local,
    root: &std::path::Path,
    config: &crate::config::Config,
    brief: &crate::brief::Brief,
    logs: std::path::PathBuf,
    interrupt: &crate::run::interrupt::Interrupt,
    locked: bool,
) -> Box<dyn Executor> {
    // A tick `ooda submit` started is already in an allocation: its
    // measurements run where it runs.
    let submitted = std::env::var_os(SUBMITTED_ENV).is_some();
    if submitted {
        return match in_job::InJob::from_env(here) {
            Ok(in_job) => Box::new(in_job),
            Err(here) => Box::new(here),
        };
    }
    match config.placement_for(brief) {
        crate::model::Placement::Local => Box::new(here),
        crate::model::Placement::Slurm => {
            let slurm = Slurm::new(
                here,
                config.slurm_for(brief),
                root,
                &brief.name,
                logs,
                interrupt.clone(),
            );
            let slurm = slurm.exclusive(config.defaults.measure_exclusive);
            Box::new(if locked { slurm } else { slurm.without_sweep() })
        }
    }
}
