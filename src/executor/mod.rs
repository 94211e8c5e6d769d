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

mod local;

use std::io;
use std::sync::atomic::AtomicBool;

use crate::error::Result;
use crate::exec::{CommandOutput, CommandSpec};

pub use local::Local;

/// Why commands are run, so an executor can place them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Setup, guards and paired measurements of one phase (EVALUATE, the
    /// baseline, a confirmation test): base and candidate together.
    Measure,
    /// One agent step (PLAN, EXECUTE, LEARN): it stays where ooda runs,
    /// because it may need to reach a model API.
    Agent,
    /// `ooda check --measure`.
    Check,
}

/// A place to run commands, for as long as the lease is held.
pub trait Lease {
    /// Runs one command to completion, timeout or cancellation. `Err` only
    /// when it could not be started or waited for: what the command itself
    /// does is an `Ok` with an outcome.
    fn run(&self, spec: &CommandSpec, cancel: &AtomicBool) -> io::Result<CommandOutput>;
}

/// Hands out leases.
pub trait Executor: Send + Sync {
    fn lease(&self, purpose: Purpose) -> Result<Box<dyn Lease + '_>>;
}
