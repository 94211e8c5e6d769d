//! Who plays the main agent (DESIGN.md §7).
//!
//! A Brief names an agent; this module resolves it to a driver before
//! anything runs, so a Brief naming an unknown profile is refused up front with
//! a message, never half-run. The builtin driver is deterministic Rust and
//! needs no network; the command driver runs any agent CLI or script through a
//! profile of `ooda.yaml` (or a built-in preset). The llm driver plugs in here
//! later.

pub mod agent_steps;
pub mod builtin;
pub mod command;

use crate::brief::Brief;
use crate::config::Config;
use crate::error::{Error, Result};

pub use command::CommandAgent;

#[derive(Debug, Clone, PartialEq)]
pub enum MainAgent {
    Builtin,
    Command(Box<CommandAgent>),
}

impl MainAgent {
    pub fn for_brief(brief: &Brief, config: &Config) -> Result<MainAgent> {
        if brief.uses_builtin() {
            return Ok(MainAgent::Builtin);
        }
        let name = brief.agent.as_deref().unwrap_or_default();
        match config.agents.get(name) {
            Some(profile) => Ok(MainAgent::Command(Box::new(CommandAgent {
                name: name.to_string(),
                profile: profile.clone(),
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

    /// How iteration files and reports name the driver: `builtin` or
    /// `command:<profile>`.
    pub fn name(&self) -> String {
        match self {
            MainAgent::Builtin => "builtin".into(),
            MainAgent::Command(a) => format!("command:{}", a.name),
        }
    }
}
