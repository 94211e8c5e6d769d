//! ooda: an unattended optimization loop runner.
//!
//! A human writes a Brief (what to optimize, how to measure it, what must not
//! break); ooda runs an OODA loop over it, one iteration per tick, and leaves
//! behind a branch of verified improvements plus an archive of everything it
//! tried. Each folder below is one concept of that contract, and the folder
//! named after a concept is where to look for it.

pub mod archive;
pub mod atomic;
pub mod brief;
pub mod cli;
pub mod config;
pub mod driver;
pub mod error;
pub mod eval;
pub mod events;
pub mod exit;
pub mod model;
pub mod phases;
pub mod project;
pub mod report;
pub mod run;
pub mod schedule;
pub mod stats;
pub mod subagents;
pub mod text;
pub mod validate;
pub mod workspace;

pub use error::{Error, Result};
