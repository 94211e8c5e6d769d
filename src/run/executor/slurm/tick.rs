//! `ooda submit`: a whole tick of a Brief as a Slurm job, and the chain
//! of ticks `--every` keeps queued.
//!
//! Why the next tick is queued when a tick starts, not when it ends: a tick
//! job can end in ways its own last command never sees (a `scancel`, its
//! time limit, a preemption, its node lost), and a chain queued by that
//! last command stopped there, silently. Queued at the start with
//! `--dependency=afterany:<this job>`, the next tick waits for this one to
//! end however it ends; when the run stops, the tick that stopped it
//! cancels the one it queued.

use std::path::Path;
use std::time::Duration;

use super::controller::{ALIVE, Queued, squeue};
use super::sbatch;
use crate::error::Result;
use crate::model::SlurmSettings;
use crate::run::exec::shell_quote;

/// Set in the environment of a tick that `ooda submit` runs as a job: its
/// measurements run where the job runs, in the job's own allocation.
pub(crate) const SUBMITTED_ENV: &str = "OODA_SUBMITTED";

/// What `ooda submit` did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Submitted {
    pub job: String,
    pub name: String,
    /// The job was already queued under its name (its state): nothing was
    /// submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_queued: Option<String>,
    /// Seconds from now the job may start (`--begin`), for a chained tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub begins_in: Option<u64>,
}

/// A whole tick of Brief `brief` as a job (`ooda submit`): `exe tick`, and
/// with `every` (its text) the chain: the job queues the next tick when it
/// starts (`ooda submit --chained`, which waits for this job's end however
/// it ends) and again when it ends (nothing if one is queued; the one
/// queued cancelled if the run stopped). `begin_in` delays this job's
/// start; from within a job, the new one also waits for that job's end. A
/// job of that name already queued (other than the one calling) is the
/// answer.
pub(crate) fn submit_tick(
    settings: &SlurmSettings,
    root: &Path,
    brief: &str,
    logs: &Path,
    exe: &Path,
    every: Option<&str>,
    begin_in: Option<Duration>,
) -> Result<Submitted> {
    let name = format!("{}-tick", job_prefix(root, brief));
    let me = std::env::var("SLURM_JOB_ID").ok();
    if let Some(j) = squeue()?.into_iter().find(|j| {
        j.name == name && ALIVE.contains(&j.state.as_str()) && me.as_deref() != Some(&j.id)
    }) {
        return Ok(Submitted {
            job: j.id,
            name,
            already_queued: Some(j.state),
            begins_in: None,
        });
    }
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let ooda = format!("{} --root {}", q(exe), q(root));
    let chained = every.map(|every| {
        format!(
            "{ooda} submit {} --every {} --chained",
            shell_quote(brief),
            shell_quote(every)
        )
    });
    let mut script = String::new();
    if let Some(c) = &chained {
        script.push_str(&format!("{c}; "));
    }
    script.push_str(&format!("{ooda} tick {}; rc=$?", shell_quote(brief)));
    if let Some(c) = &chained {
        script.push_str(&format!("; {c}"));
    }
    // A run that stopped on its budget, or a tick that found another
    // holding the Brief's lock, ended as it should: the job is COMPLETED,
    // not FAILED (mail on failure, accounting). A RED light stays a failure.
    script.push_str(
        "; case $rc in 4|5) echo \"ooda tick exited $rc (stopped, or busy): the job is done\"; rc=0 ;; esac; exit $rc",
    );
    let mut extra = vec![format!("--export=ALL,{SUBMITTED_ENV}=1")];
    if let Some(d) = begin_in {
        extra.push(format!("--begin=now+{}", d.as_secs().max(1)));
    }
    // Two ticks of a Brief never wait for each other's lock: the next
    // starts once this job has ended, whatever ended it.
    if let Some(me) = &me {
        extra.push(format!("--dependency=afterany:{me}"));
    }
    let job = sbatch(&name, logs, settings, &extra, &script)?;
    Ok(Submitted {
        job,
        name,
        already_queued: None,
        begins_in: begin_in.map(|d| d.as_secs()),
    })
}

/// This Brief's tick jobs still queued or running, but the caller's own
/// (waiting at most `timeout` for the controller).
pub(crate) fn next_tick(root: &Path, brief: &str, timeout: Duration) -> Result<Vec<Queued>> {
    let name = format!("{}-tick", job_prefix(root, brief));
    let me = std::env::var("SLURM_JOB_ID").ok();
    Ok(super::controller::squeue_within(timeout)?
        .into_iter()
        .filter(|j| {
            j.name == name && ALIVE.contains(&j.state.as_str()) && me.as_deref() != Some(&j.id)
        })
        .collect())
}

/// Cancels this Brief's queued tick jobs (but the caller's own): the run
/// stopped. The ids cancelled.
pub(crate) fn cancel_next_tick(root: &Path, brief: &str) -> Result<Vec<String>> {
    let jobs = next_tick(root, brief, Duration::from_secs(60))?;
    for j in &jobs {
        super::controller::scancel(&j.id);
    }
    Ok(jobs.into_iter().map(|j| j.id).collect())
}

/// `ooda-<brief>-<6 hex digits of the project's path>`: two checkouts with
/// a Brief of the same name never adopt each other's jobs.
pub fn job_prefix(root: &Path, brief: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in root.as_os_str().as_encoded_bytes() {
        h = (h ^ u32::from(*b)).wrapping_mul(0x0100_0193);
    }
    format!("ooda-{brief}-{:06x}", h & 0xff_ffff)
}
