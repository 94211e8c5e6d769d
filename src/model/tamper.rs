use std::fmt;

use serde::{Deserialize, Serialize};

use super::Phase;

/// What an agent changed, without the sandbox, that it must not touch (the
/// git directory, a Brief, `ooda.yaml`, files outside its worktree): CHECK
/// stops the run `red_tamper` on it, since nothing kept the agent from
/// weakening the next night, until a human has looked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Tamper {
    /// The step it happened in: the main agent's PLAN, EXECUTE or LEARN,
    /// an analyzer beside EVALUATE, a reviewer in REVIEW.
    pub phase: Phase,
    /// The paths that changed, in the fence's words.
    pub what: String,
}

impl Tamper {
    /// What the agent was doing in `phase`, as a message says it (EXECUTE's
    /// own messages say it already).
    pub(crate) fn doing(phase: Phase) -> Option<&'static str> {
        match phase {
            Phase::Plan => Some("planning"),
            Phase::Learn => Some("learning"),
            Phase::Evaluate => Some("analyzing"),
            Phase::Review => Some("reviewing"),
            _ => None,
        }
    }

    /// A tamper as an earlier release stated it, in one line: the phase is
    /// read back from the words that name it.
    pub(crate) fn from_text(text: &str) -> Tamper {
        for phase in [Phase::Plan, Phase::Learn, Phase::Evaluate, Phase::Review] {
            let prefix = format!("while {}, ", Tamper::doing(phase).unwrap_or_default());
            if let Some(what) = text.strip_prefix(&prefix) {
                return Tamper {
                    phase,
                    what: what.to_string(),
                };
            }
        }
        Tamper {
            phase: Phase::Execute,
            what: text.to_string(),
        }
    }
}

impl fmt::Display for Tamper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Tamper::doing(self.phase) {
            Some(doing) => write!(f, "while {doing}, {}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tamper_reads_as_it_was_written() {
        for (phase, text) in [
            (Phase::Plan, "while planning, the agent changed briefs/b.md"),
            (
                Phase::Learn,
                "while learning, the agent changed .git/hooks/pre-commit",
            ),
            (
                Phase::Evaluate,
                "while analyzing, the agent changed ooda.yaml",
            ),
            (
                Phase::Review,
                "while reviewing, the agent changed ooda.yaml",
            ),
            (
                Phase::Execute,
                "the agent changed files outside the candidate worktree: x",
            ),
        ] {
            let t = Tamper::from_text(text);
            assert_eq!(t.phase, phase, "{text}");
            assert_eq!(t.to_string(), text);
        }
    }
}
