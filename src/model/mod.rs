//! The data the iteration machine passes around: leaf types only.
//!
//! Every phase produces and consumes values of these types, and the archive
//! (`iter-NNN.md`, `state.json`) is their serialized form. They live apart
//! from the code that computes them so that any module may name them without
//! importing that code: every folder above it depends on `model`, and
//! `model` depends only on the ground floor: `text` (the redaction its
//! records need), `stats` and `validate`. The layout test
//! (`tests/integration/layout.rs`) fails on an import up a layer or in a
//! loop, so none can start here.
//!
//! One type per file, named after it; the few helpers beside a type are the
//! ones that only read it. Where a type is computed by a folder above
//! (`Orientation` and `NoiseHistory` by `eval/`, the sandbox settings'
//! meaning by `run/sandbox/`), its constructors are that folder's `impl`
//! block: the data is here so the checkpoint can hold it, the computation
//! stays with the rule it implements.

mod agent_call;
mod alarm;
mod analysis;
mod anomaly;
mod budget;
mod calibration;
mod change;
mod cluster_job;
mod command_outcome;
mod comparison;
mod confirmation;
mod cut;
mod direction;
mod discard_kind;
mod eval_outcome;
mod grade;
mod guard;
mod judgement;
mod knob_value;
mod logged_anomaly;
mod noise_history;
mod orientation;
mod phase;
mod placement;
mod plan;
mod record;
mod review;
mod role;
mod run_seconds;
mod run_writes;
mod sandbox;
mod stop;
mod subagent_report;
mod tamper;
mod task_state;
mod thresholds;
mod usage;
mod verdict;
mod watch;

pub use agent_call::CallOutcome;
pub(crate) use agent_call::{AgentCall, sign};
pub use alarm::AlarmKind;
pub(crate) use alarm::{Alarm, Level};
pub(crate) use analysis::{Analysis, AnalyzerReport};
pub(crate) use anomaly::AnomalyKind;
pub use budget::Budget;
pub(crate) use calibration::Calibration;
pub(crate) use change::{Change, FileChange, FileStatus};
pub(crate) use cluster_job::ClusterJob;
pub(crate) use command_outcome::CommandOutcome;
pub(crate) use comparison::Comparison;
pub use comparison::Pair;
pub(crate) use confirmation::Confirmation;
pub(crate) use cut::Cut;
pub use direction::Direction;
pub use discard_kind::DiscardKind;
pub(crate) use eval_outcome::EvalOutcome;
pub(crate) use grade::Grade;
pub use guard::GuardResult;
pub(crate) use judgement::{JudgedIteration, Judgement};
pub use knob_value::{KnobValue, Point};
pub(crate) use logged_anomaly::LoggedAnomaly;
pub use noise_history::NoiseHistory;
pub use orientation::Orientation;
pub use phase::Phase;
pub(crate) use placement::{Placement, SlurmSettings};
pub use plan::{Axis, Plan};
pub(crate) use plan::{LearnResult, Pattern};
pub use record::{IterationRecord, Prediction};
pub(crate) use review::{NonInferiority, Review, Simplification, Simplified, SimplifyStage};
pub(crate) use role::Role;
pub use run_seconds::RunSeconds;
pub use run_writes::RunWrites;
pub(crate) use sandbox::{SandboxMode, SandboxSettings};
pub(crate) use stop::{Status, Stop, StopReason};
pub(crate) use subagent_report::{Finding, SubagentReport};
pub use subagent_report::{ReviewVerdict, SubagentOutcome};
pub(crate) use tamper::Tamper;
pub(crate) use task_state::TaskState;
pub use thresholds::Thresholds;
pub(crate) use thresholds::WINDOW;
pub(crate) use usage::{Usage, is_zero};
pub use verdict::Verdict;
pub(crate) use watch::{STOPPING_RULES, Watch};

/// A text as equality checks compare it: whitespace collapsed, lower case
/// (a repeated hypothesis is the same idea however it is spaced).
pub(crate) fn normalize_text(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
