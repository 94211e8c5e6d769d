use serde::{Deserialize, Serialize};

/// What a subagent is for. The runner dispatches definitions by role (and
/// trigger), never by name, so a user's own `subagents/security-review.md`
/// with `role: review` is run, and may block, like the default reviewer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Approves or blocks a keep (code-reviewer).
    Review,
    /// Proposes a simpler equivalent of a large keep (code-simplifier).
    Simplify,
    /// Reports a bottleneck to the next PLAN (pipeline-analyzer).
    Analyze,
    /// Writes notes where people read them (obsidian-synthesizer).
    Synthesize,
    /// Measures and decides (eval-runner): plain code, never a model.
    Evaluate,
    /// Gives the run a qualitative verdict at its end (opt-in: a model's).
    Judge,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Review,
        Role::Simplify,
        Role::Analyze,
        Role::Synthesize,
        Role::Evaluate,
        Role::Judge,
    ];

    /// As definitions spell it, and as `OODA_PHASE` tells a command subagent.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Review => "review",
            Role::Simplify => "simplify",
            Role::Analyze => "analyze",
            Role::Synthesize => "synthesize",
            Role::Evaluate => "evaluate",
            Role::Judge => "judge",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
