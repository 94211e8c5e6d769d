//! Who plays the main agent: the [`Driver`] seam.
//!
//! PLAN, EXECUTE and LEARN ask a driver for their part and get typed values
//! back; the phases never ask which driver it is. One driver per kind:
//! the builtin driver is deterministic Rust and needs no network (a knob
//! search, `builtin/`); the command driver runs any agent CLI or script
//! through a profile of `ooda.yaml` or a built-in preset (`command/`); the
//! llm driver is ooda's own tool loop over HTTP (`llm/`). The last two
//! answer in text and share their steps (`agent/`): each implements the
//! [`Caller`] seam, how one call is made, and is a [`Driver`] through it.
//!
//! A Brief names its agent; [`MainAgent::for_brief`] resolves it before
//! anything runs, so a Brief naming an unknown profile is refused up front
//! with a message, never half-run.

pub(crate) mod agent;
pub mod builtin;
pub(crate) mod command;
pub(crate) mod compress_hook;
pub(crate) mod index_server;
pub(crate) mod llm;
pub(crate) mod step;
pub(crate) mod worktree_settings;

use crate::brief::Brief;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::{AgentCall, Cut, IterationRecord, LearnResult, Phase, Plan, Point, Tamper};

pub(crate) use agent::Caller;
pub(crate) use command::CommandAgent;
pub(crate) use llm::LlmAgent;
pub(crate) use step::Step;

/// PLAN's answer.
// One per iteration, moved once: the size of the plan variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Proposal {
    /// A plan, validated; `rejected` says why none was accepted (then `plan`
    /// is the last one proposed, for the record).
    Plan {
        plan: Plan,
        rejected: Option<Cut>,
        calls: Vec<AgentCall>,
        /// What the agent changed, while it planned, outside the candidate.
        breach: Option<Breach>,
    },
    /// Nothing is left to try: the run is done (`stalled`).
    Exhausted { detail: String },
}

/// EXECUTE's answer. The change itself is in the candidate worktree.
#[derive(Debug, Default)]
pub(crate) struct Execution {
    /// The agent's own description of what it changed, if it gave one.
    pub change: Option<String>,
    /// Set when the step failed: the iteration is `invalid`.
    pub failure: Option<String>,
    /// Set when files outside the candidate worktree changed: `blocked`.
    pub breach: Option<Breach>,
    /// Set when the agent's API stayed unavailable: `invalid`, not the
    /// agent's failure.
    pub unavailable: Option<Cut>,
    pub calls: Vec<AgentCall>,
}

/// LEARN's answer: lessons in words, beside the runner's data.
#[derive(Debug, Default)]
pub(crate) struct Lesson {
    pub learned: LearnResult,
    pub calls: Vec<AgentCall>,
    /// What the agent changed, while it learned, outside the candidate.
    pub breach: Option<Breach>,
}

/// What an agent step changed that it must not touch (see `run/fence/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Breach {
    /// The paths that differ, named.
    pub message: String,
    /// The step ran without the sandbox: the run stops RED (`red_tamper`)
    /// until a human has looked, since nothing kept it from weakening a
    /// Brief or planting a hook.
    pub unconfined: bool,
}

impl Breach {
    /// The same breach, said to have happened while the agent was doing
    /// what `phase` asks of it (`while planning, …`).
    pub(crate) fn during(self, phase: Phase) -> Breach {
        match Tamper::doing(phase) {
            Some(doing) => Breach {
                message: format!("while {doing}, {}", self.message),
                ..self
            },
            None => self,
        }
    }

    /// What stops the night `red_tamper`: a breach made without the sandbox
    /// in `phase` (its message said [`Breach::during`] it or not).
    pub(crate) fn tamper(&self, phase: Phase) -> Option<Tamper> {
        let what = Tamper::doing(phase)
            .and_then(|d| self.message.strip_prefix(&format!("while {d}, ")))
            .unwrap_or(&self.message);
        self.unconfined.then(|| Tamper {
            phase,
            what: what.to_string(),
        })
    }
}

/// The main agent.
pub(crate) trait Driver {
    /// How iteration files and reports name it: `builtin`,
    /// `command:<profile>` or `llm:<model>`.
    fn name(&self) -> String;

    /// Proposes the iteration's one change, starting from the best point.
    fn plan(&self, t: &Step, best: &Point) -> Result<Proposal>;

    /// Applies `plan` in the candidate worktree (knob values are written by
    /// the runner afterwards, whoever the driver is).
    fn execute(&self, t: &Step, plan: &Plan) -> Result<Execution>;

    /// Says what the outcome teaches. `measured` is false for an iteration
    /// cut short before EVALUATE (its reason is the whole lesson then).
    fn learn(&self, t: &Step, plan: &Plan, rec: &IterationRecord, measured: bool)
    -> Result<Lesson>;

    /// Whether EXECUTE is asked to edit files, so that changing nothing is a
    /// failure (a knob search changes only the knobs file, which the runner
    /// writes).
    fn edits_files(&self) -> bool;
}

/// A Brief's `agent:` resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MainAgent {
    Builtin,
    Command(Box<CommandAgent>),
    Llm(Box<LlmAgent>),
}

impl MainAgent {
    pub(crate) fn for_brief(brief: &Brief, config: &Config) -> Result<MainAgent> {
        if brief.uses_builtin() {
            return Ok(MainAgent::Builtin);
        }
        let name = brief.agent.as_deref().unwrap_or_default();
        if name == "llm" {
            let setup =
                crate::driver::llm::LlmSetup::resolve(config, brief, brief.model.as_deref())
                    .map_err(|why| {
                        Error::Input(format!("{}: agent: llm: {why}", brief.path.display()))
                    })?;
            return Ok(MainAgent::Llm(Box::new(LlmAgent::new(setup))));
        }
        match config.agents.get(name) {
            Some(profile) => Ok(MainAgent::Command(Box::new(CommandAgent {
                name: name.to_string(),
                profile: profile.clone(),
                sandboxed: config.sandbox.abi().is_some(),
            }))),
            None => {
                let known: Vec<&str> = std::iter::once("builtin")
                    .chain(config.agents.keys().map(String::as_str))
                    .collect();
                Err(Error::Input(format!(
                    "{}: agent `{name}` is not a profile; known: {}. Define it in ooda.yaml, e.g. `agents: {{{name}: {{command: [./agent.sh], prompt: stdin, format: text}}}}`.",
                    brief.path.display(),
                    known.join(", ")
                )))
            }
        }
    }

    /// How iteration files and reports name the driver.
    pub(crate) fn name(&self) -> String {
        self.driver().name()
    }

    /// The driver that plays this agent.
    pub(crate) fn driver(&self) -> &dyn Driver {
        match self {
            MainAgent::Builtin => &builtin::Builtin,
            MainAgent::Command(a) => a.as_ref(),
            MainAgent::Llm(a) => a.as_ref(),
        }
    }

    /// How one call is made, for an agent that answers in text (not the
    /// builtin driver): subagents that run the main agent's way use it.
    pub(crate) fn caller(&self) -> Option<&dyn Caller> {
        match self {
            MainAgent::Builtin => None,
            MainAgent::Command(a) => Some(a.as_ref()),
            MainAgent::Llm(a) => Some(a.as_ref()),
        }
    }

    /// The agent's name for the sandbox and `ooda check` (none for the
    /// builtin driver): its profile, or `llm:<model>`.
    pub(crate) fn agent_name(&self) -> Option<String> {
        self.caller().map(|c| c.who())
    }
}
