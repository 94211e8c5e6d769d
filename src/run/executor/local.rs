//! The local executor: commands run on this machine, now.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::{Executor, Lease, Purpose};
use crate::error::Result;
use crate::run::exec::{self, CommandOutput, CommandSpec};
use crate::run::sandbox::InForce;

/// Runs every command here, as a child process group of ooda, confined by
/// the run's sandbox (see `run/sandbox/`) when one is in force.
#[derive(Debug, Clone, Default)]
pub(crate) struct Local {
    /// The Landlock ABI to confine commands with; `None`: unconfined.
    abi: Option<i32>,
    /// Writable for every command besides its worktree (`sandbox.writable`).
    writable: Vec<PathBuf>,
    /// `OODA_STEP` for every command: this tick's mark.
    mark: Option<String>,
}

impl Local {
    /// An executor whose commands are confined as `sandbox` says.
    pub(crate) fn sandboxed(sandbox: &InForce) -> Local {
        Local {
            abi: sandbox.abi,
            writable: sandbox.writable.clone(),
            mark: None,
        }
    }

    /// The Landlock ABI and the grants its commands get besides their
    /// worktree, for an executor that confines them elsewhere.
    pub(crate) fn confinement(&self) -> (Option<i32>, Vec<PathBuf>) {
        (self.abi, self.writable.clone())
    }

    /// Marks every command with `mark` (see `sandbox::kill_marked`).
    pub(crate) fn marked(mut self, mark: String) -> Local {
        self.mark = Some(mark);
        self
    }
}

struct Here<'a>(&'a Local);

impl Lease for Here<'_> {
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput> {
        if self.0.abi.is_none() && self.0.mark.is_none() {
            return exec::run(spec, cancel);
        }
        let mut spec = spec.clone();
        if self.0.abi.is_some() {
            spec.landlock = self.0.abi;
            spec.writable.extend(self.0.writable.iter().cloned());
        }
        // A measured command carries the mark under a name that says
        // nothing of ooda (it gets none of ooda's OODA_* variables).
        if let Some(m) = &self.0.mark {
            let name = if spec.measured {
                crate::run::sandbox::MEASURED_MARK_ENV
            } else {
                crate::run::sandbox::MARK_ENV
            };
            spec.env.push((name.to_string(), m.clone()));
        }
        exec::run(&spec, cancel)
    }
}

impl Executor for Local {
    fn lease(&self, _: Purpose) -> Result<Box<dyn Lease + '_>> {
        Ok(Box::new(Here(self)))
    }

    fn agent_confinement(&self) -> (Option<i32>, Vec<PathBuf>) {
        self.confinement()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CommandOutcome;

    #[test]
    fn a_local_lease_runs_the_command_here() {
        let dir = tempfile::tempdir().unwrap();
        let local = Local::default();
        let lease = local
            .lease(Purpose::Measure(crate::run::executor::Job {
                iteration: 1,
                phase: "evaluate",
            }))
            .unwrap();
        let out = lease
            .run(
                &CommandSpec {
                    command: "echo \"$X\" > seen; pwd",
                    cwd: dir.path(),
                    env: vec![("X".into(), "42".into())],
                    timeout: std::time::Duration::from_secs(10),
                    output_cap: 1 << 16,
                    stdin: None,
                    landlock: None,
                    writable: Vec::new(),
                    measured: false,
                },
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(out.status, CommandOutcome::Success);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("seen")).unwrap(),
            "42\n"
        );
        assert!(
            out.stdout.trim_end().ends_with(
                dir.path()
                    .canonicalize()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
            )
        );
    }
}
