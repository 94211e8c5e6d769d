//! Who plays the main agent (DESIGN.md §7).
//!
//! A Brief names an agent; this module resolves it to a driver. The builtin
//! driver is deterministic Rust and needs no network. Command and llm drivers
//! plug in here; until they exist a Brief naming one is refused up front with
//! a message, never half-run.

pub mod builtin;

use crate::brief::Brief;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainAgent {
    Builtin,
}

impl MainAgent {
    pub fn for_brief(brief: &Brief) -> Result<MainAgent> {
        if brief.uses_builtin() {
            return Ok(MainAgent::Builtin);
        }
        Err(Error::Input(format!(
            "{}: agent `{}`: this version of ooda drives only `agent: builtin` (a knob search); command agents such as claude, codex and gemini are not implemented yet. Use `agent: builtin` and declare knobs.",
            brief.path.display(),
            brief.agent.as_deref().unwrap_or_default()
        )))
    }

    pub fn name(self) -> &'static str {
        match self {
            MainAgent::Builtin => "builtin",
        }
    }
}
