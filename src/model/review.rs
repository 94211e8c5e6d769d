use serde::{Deserialize, Serialize};

/// What REVIEW decided about a kept candidate. REVIEW passes every keep
/// through today (`None` in the state); the subagents that make it real
/// (reviewer, simplifier) produce these, and `phases::next` already routes
/// them: a block goes on to LEARN (where the keep becomes a discard, see
/// `Cut::Review`), a simplified candidate goes back to EVALUATE for a
/// non-inferiority test before LEARN. No EVALUATE of a simplified candidate
/// exists yet: it refuses such a state rather than guess.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Review {
    Approved,
    Blocked {
        findings: String,
    },
    /// A simpler equivalent change, as a tree, and whether EVALUATE has
    /// measured it against the kept candidate yet.
    Simplified {
        tree: String,
        measured: bool,
    },
}
