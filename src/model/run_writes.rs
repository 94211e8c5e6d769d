use serde::{Deserialize, Serialize};

/// What the timed runs wrote in their worktrees, ignored folders included
/// (`eval/writes.rs`): shown in the iteration file, and what the reviewer's
/// `cache-between-runs` rule reads.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunWrites {
    /// Files a timed run of the base wrote (at most [`RunWrites::SHOWN`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base: Vec<String>,
    /// Files a timed run of the candidate wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cand: Vec<String>,
    /// Of the candidate's, those a later run of the candidate found in
    /// place and no run of the base wrote: what a result cached between
    /// runs looks like.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<String>,
    /// What each run created was removed after it (`metric.fresh_outputs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// A worktree held more files than are watched: nothing is known.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unwatched: bool,
}

impl RunWrites {
    /// Paths kept per list: a build's thousands say no more than fifty.
    pub const SHOWN: usize = 50;
}
