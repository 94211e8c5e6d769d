//! The executor of a tick `ooda submit` started: it is already in a Slurm
//! allocation, so its measurements run here, in that job, and the
//! iteration files name the job as a local tick's cannot.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{Executor, Lease, Local, Purpose};
use crate::error::Result;
use crate::model::ClusterJob;

pub(super) struct InJob {
    here: Local,
    job: ClusterJob,
    /// A measurement ran since the jobs were last taken.
    measured: AtomicBool,
}

impl InJob {
    /// The job this process runs in, by Slurm's environment; `None` when
    /// it is not in one.
    pub(super) fn from_env(here: Local) -> std::result::Result<InJob, Local> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match var("SLURM_JOB_ID") {
            Some(id) => Ok(InJob {
                job: ClusterJob {
                    id,
                    name: var("SLURM_JOB_NAME").unwrap_or_default(),
                    node: var("SLURMD_NODENAME").unwrap_or_default(),
                    adopted: false,
                    lost: None,
                    fault: None,
                    message: None,
                },
                here,
                measured: AtomicBool::new(false),
            }),
            None => Err(here),
        }
    }
}

impl Executor for InJob {
    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>> {
        if matches!(purpose, Purpose::Measure(_)) {
            self.measured.store(true, Ordering::Relaxed);
        }
        self.here.lease(purpose)
    }

    fn agent_confinement(&self) -> (Option<i32>, Vec<std::path::PathBuf>) {
        self.here.confinement()
    }

    fn take_jobs(&self) -> Vec<ClusterJob> {
        if self.measured.swap(false, Ordering::Relaxed) {
            vec![self.job.clone()]
        } else {
            Vec::new()
        }
    }
}
