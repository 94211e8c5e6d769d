//! The llm driver: ooda's own tool loop over HTTP.
//!
//! A command agent is a vendor CLI that owns its context; here ooda owns it.
//! One agent step (PLAN, EXECUTE, LEARN, or a subagent's turn) is a
//! conversation with a model behind an OpenAI-compatible Chat Completions
//! endpoint or Anthropic's Messages API, in which the model calls ooda's
//! tools (`tools.rs`) until it calls `finish` with the step's JSON answer.
//! The step then looks to the rest of ooda exactly like a command agent's
//! call (a `Reply`), so plan validation, retries of a rejected plan, the
//! fence and the outage wait are the same code for every agent.
//!
//! The context is built anew for every request (`context.rs`), with the
//! four layers applied in the order bloat happens: large tool results are
//! stored by reference (L1, `store.rs`), the largest are condensed by the
//! `light` tier (L2), old turns are folded into a structured handover (L3),
//! and refs the next step depends on are fetched back within a budget (L4).
//! One piece of data appears in a prompt in one form only: the builder
//! refuses a prompt that would show a ref twice.
//!
//! Requests retry as the official SDKs do (`retry.rs`); a final failure is
//! data in the iteration, never a panic. The API key is read from the
//! environment variable the tier names, at the moment a request is sent, and
//! is never written anywhere.

pub(crate) mod anthropic;
pub(crate) mod client;
pub mod context;
pub(crate) mod decision;
pub(crate) mod edit_blocks;
pub(crate) mod openai;
pub(crate) mod probe;
#[cfg(test)]
mod real_answers;
pub(crate) mod retry;
pub mod store;
pub(crate) mod text_calls;
pub(crate) mod tool_loop;
pub mod tools;
pub mod wire;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::config::DEFAULT_AGENT_TIMEOUT;
use crate::driver::agent::{Caller, Invocation, NamedFiles, Reply};
use crate::error::Result;
use crate::model::Phase;
use crate::run::executor::Lease;

pub(crate) use tool_loop::LlmSetup;

/// `agent: llm` (or a subagent's `driver: llm`), resolved: which model and
/// tools, and how long one step may take.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LlmAgent {
    pub setup: LlmSetup,
    pub timeout: Duration,
}

impl LlmAgent {
    pub(crate) fn new(setup: LlmSetup) -> LlmAgent {
        LlmAgent {
            setup,
            timeout: DEFAULT_AGENT_TIMEOUT,
        }
    }

    /// What `ooda check` prints and the events record as what runs.
    pub(crate) fn command_line(&self) -> String {
        format!("llm: {}", self.setup.describe())
    }
}

impl Caller for LlmAgent {
    fn driver_name(&self) -> String {
        self.setup.name()
    }

    fn who(&self) -> String {
        self.setup.name()
    }

    fn command_line_for(&self, _: Phase, _: &NamedFiles) -> String {
        self.command_line()
    }

    /// Its answer is the `finish` tool's argument.
    fn result_file(&self) -> bool {
        false
    }

    fn change_note(&self) -> bool {
        true
    }

    /// Without native tools, EXECUTE's prompt shows the model the files
    /// the plan names (in `none` mode it cannot read them at all).
    fn passes_files(&self) -> bool {
        self.setup.tools != crate::config::ToolsMode::Native
    }

    /// A `driver: llm` definition gets a setup of its own model
    /// (`subagents::dispatch::caller`); a `driver: command` definition
    /// without an `agent:` that the Brief's llm agent plays keeps the
    /// Brief's model (it has no `OODA_MODEL` to read).
    fn for_subagent(&self, timeout: Duration, _: Option<String>) -> Box<dyn Caller> {
        Box::new(LlmAgent {
            timeout,
            ..self.clone()
        })
    }

    fn clone_box(&self) -> Box<dyn Caller> {
        Box::new(self.clone())
    }

    fn call(&self, inv: &Invocation, lease: &dyn Lease, cancel: &AtomicBool) -> Result<Reply> {
        self.setup.run(inv, lease, cancel, self.timeout)
    }
}
