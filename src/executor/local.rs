//! The local executor: commands run on this machine, now.

use std::io;
use std::sync::atomic::AtomicBool;

use super::{Executor, Lease, Purpose};
use crate::error::Result;
use crate::exec::{self, CommandOutput, CommandSpec};

/// Runs every command here, as a child process group of ooda.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

struct Here;

impl Lease for Here {
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput> {
        exec::run(spec, cancel)
    }
}

impl Executor for Local {
    fn lease(&self, _: Purpose) -> Result<Box<dyn Lease + '_>> {
        Ok(Box::new(Here))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Outcome;

    #[test]
    fn a_local_lease_runs_the_command_here() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Local.lease(Purpose::Measure).unwrap();
        let out = lease
            .run(
                &CommandSpec {
                    command: "echo \"$X\" > seen; pwd",
                    cwd: dir.path(),
                    env: vec![("X".into(), "42".into())],
                    timeout: std::time::Duration::from_secs(10),
                    output_cap: 1 << 16,
                    stdin: None,
                },
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(out.status, Outcome::Success);
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
