//! ooda: an unattended optimization loop runner.
//!
//! A human writes a Brief (what to optimize, how to measure it, what must not
//! break); ooda runs an OODA loop over it, one iteration per tick, and leaves
//! behind a branch of verified improvements plus an archive of everything it
//! tried. Each module below is one concept of that contract:
//! the file named after a concept is where to look for it.

pub mod agent_output;
pub mod anomalies;
pub mod archive;
pub mod atomic;
pub mod brief;
pub mod chart;
pub mod check;
pub mod cli;
pub mod compare;
pub mod compress;
pub mod config;
pub mod daemon;
pub mod driver;
pub mod error;
pub mod eval;
pub mod evaluation;
pub mod events;
pub mod exec;
pub mod executor;
pub mod exit;
pub mod fence;
pub mod gc;
pub mod history;
pub mod interrupt;
pub mod knobs;
pub mod lock;
pub mod log;
pub mod measure_lock;
pub mod metric;
pub mod metrics;
pub mod model;
#[cfg(test)]
mod module_graph;
pub mod notify;
pub mod otlp;
pub mod phases;
pub mod plan;
pub mod problem;
pub mod project;
pub mod prompt;
pub mod redlight;
pub mod replay;
pub mod sandbox;
pub mod scaffold;
pub mod schedule;
pub mod state;
pub mod stats;
pub mod status;
pub mod subagents;
pub mod summary;
pub mod tasks;
pub mod ticker;
pub mod trace;
pub mod units;
pub mod workspace;
pub mod yaml;

pub use error::{Error, Result};
