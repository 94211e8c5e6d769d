//! One node of a trace: a span of work with its children and what it logged.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{TaskState, Usage};

/// What kind of work a node is; the levels of the tree, outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Run,
    Iteration,
    Phase,
    /// A subagent's delegation (its id is the `delegation` id).
    Subagent,
    /// One step of an agent: a command agent's process, or the llm driver's
    /// conversation for that step.
    AgentCall,
    /// One request of the llm driver to its model API.
    ModelRequest,
    ToolCall,
    /// A setup, guard or metric command.
    Command,
    /// The confirmation test of the current best.
    Confirmation,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Iteration => "iteration",
            Kind::Phase => "phase",
            Kind::Subagent => "subagent",
            Kind::AgentCall => "agent_call",
            Kind::ModelRequest => "model_request",
            Kind::ToolCall => "tool_call",
            Kind::Command => "command",
            Kind::Confirmation => "confirmation",
        }
    }
}

/// Whether the work ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Ok,
    Failed,
    /// Ended by Ctrl-C, a signal or a stop.
    Cancelled,
    /// No end was recorded: still running, or killed before it could say.
    Unfinished,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Unfinished => "unfinished",
        }
    }
}

/// Something a node logged that is not a child span: a plan, a decision,
/// an anomaly, a retry. `kind` is the event's `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Note {
    pub at: DateTime<Utc>,
    pub kind: String,
    /// One line for a human.
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Node {
    /// The id of the event that opened it in `events.jsonl`.
    pub id: String,
    pub kind: Kind,
    /// `iteration 7`, `plan`, `code-reviewer`, `chat gpt-4o`, `read_file`, `metric`.
    pub name: String,
    pub iteration: Option<u32>,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
    /// The duration the work reported, else `end - start`.
    pub seconds: Option<f64>,
    pub status: Status,
    /// The node's own usage (agent calls, model requests), then, once the
    /// tree is built, the sum over the agent calls below it.
    pub usage: Usage,
    /// keep, discard, … (iterations); approve, block (reviewers); the
    /// command's or call's outcome word otherwise.
    pub verdict: Option<String>,
    pub error: Option<String>,
    /// What the opening and closing events said, by key (role, command,
    /// profile, model, tool_call_id, finish_reason, …).
    pub attributes: Map<String, Value>,
    pub notes: Vec<Note>,
    /// A task's states (an iteration, a delegation), oldest first; the last
    /// is where it stands.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<Transition>,
    pub children: Vec<Node>,
}

/// A task entering a state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Transition {
    pub at: DateTime<Utc>,
    pub state: TaskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Node {
    pub(crate) fn new(
        id: &str,
        kind: Kind,
        name: String,
        iteration: Option<u32>,
        start: DateTime<Utc>,
    ) -> Node {
        Node {
            id: id.to_string(),
            kind,
            name,
            iteration,
            start,
            end: None,
            seconds: None,
            status: Status::Unfinished,
            usage: Usage::default(),
            verdict: None,
            error: None,
            attributes: Map::new(),
            notes: Vec::new(),
            states: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Seconds from the node's start to `end` (none before it).
    pub(crate) fn seconds_until(&self, end: DateTime<Utc>) -> f64 {
        (end - self.start).num_milliseconds().max(0) as f64 / 1000.0
    }

    /// Where the task stands (its last state), if it is one.
    pub(crate) fn state(&self) -> Option<TaskState> {
        self.states.last().map(|t| t.state)
    }

    pub(crate) fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.attributes.insert(key.to_string(), value.into());
    }

    pub(crate) fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// Every node below this one, depth first, this one first.
    pub(crate) fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    #[cfg(test)]
    /// Whether this node or one below it failed.
    pub(crate) fn has_failure(&self) -> bool {
        self.status == Status::Failed || self.children.iter().any(Node::has_failure)
    }
}
