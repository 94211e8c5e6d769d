//! An agent that answers in text: PLAN, EXECUTE and LEARN as a conversation,
//! whoever answers.
//!
//! Two drivers answer in text: the command driver runs an agent CLI or a
//! script as a process (`driver/command/`), the llm driver runs ooda's own
//! tool loop over HTTP (`driver/llm/`). Everything around one call is the
//! same for both, and lives here once: the prompts (`prompt.rs`), the
//! validation of what comes back (`answers.rs`), the retries of a rejected
//! plan, the outage wait, the fence around the step (`steps.rs`). What
//! differs is how one call is made, and that is the [`Caller`] seam: a
//! driver that implements it is a [`Driver`](super::Driver).

pub(crate) mod answers;
pub(crate) mod named_files;
pub(crate) mod prompt;
pub(crate) mod reply;
pub(crate) mod steps;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::error::Result;
use crate::model::{IterationRecord, Phase, Plan, Point};
use crate::run::executor::Lease;

use super::{Driver, Execution, Lesson, Proposal, Step};
pub(crate) use named_files::NamedFiles;
pub(crate) use reply::{Invocation, Reply};

/// How one call of an agent that answers in text is made.
pub(crate) trait Caller: std::fmt::Debug + Send + Sync {
    /// How iteration files and reports name the driver:
    /// `command:<profile>` or `llm:<model>`.
    fn driver_name(&self) -> String;

    /// Who answers, as a call's events name it (their `profile` field): the
    /// profile's name, or `llm:<model>`.
    fn who(&self) -> String;

    /// What runs for `phase`, as `ooda check` prints it and a call's event
    /// records it (`files`: what EXECUTE's plan names, for profiles that
    /// pass files).
    fn command_line_for(&self, phase: Phase, files: &NamedFiles) -> String;

    /// What it may write outside its worktree when sandboxed, besides
    /// `sandbox.writable`: its tool's state directory. A change the fence
    /// finds beneath one of these may be its.
    fn grants(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// Whether it can write its answer to `OODA_OUTPUT_FILE` (outside the
    /// worktree) besides ending its reply with it.
    fn result_file(&self) -> bool;

    /// Whether EXECUTE's answer says what changed (the prompt asks for it).
    fn change_note(&self) -> bool;

    /// Whether EXECUTE passes the files the plan names on its command line
    /// (`file_arg`, `read_arg`): they are then found before the call.
    fn passes_files(&self) -> bool;

    /// The same agent as a subagent runs it: its own timeout, and the model
    /// its definition resolves to, for an agent CLI to read as `OODA_MODEL`
    /// (the llm driver's model is its setup's).
    fn for_subagent(&self, timeout: Duration, model: Option<String>) -> Box<dyn Caller>;

    /// The same agent, as it is.
    fn clone_box(&self) -> Box<dyn Caller>;

    /// Makes one call. Everything the agent does is data in the [`Reply`];
    /// only what ooda itself cannot do is an `Err`.
    fn call(&self, inv: &Invocation, lease: &dyn Lease, cancel: &AtomicBool) -> Result<Reply>;
}

impl<C: Caller> Driver for C {
    fn name(&self) -> String {
        self.driver_name()
    }

    fn plan(&self, t: &Step, best: &Point) -> Result<Proposal> {
        steps::plan(self, t, best)
    }

    fn execute(&self, t: &Step, plan: &Plan) -> Result<Execution> {
        steps::execute(self, t, plan)
    }

    fn learn(&self, t: &Step, _: &Plan, rec: &IterationRecord, measured: bool) -> Result<Lesson> {
        steps::learn(self, t, rec, measured)
    }

    fn edits_files(&self) -> bool {
        true
    }
}
