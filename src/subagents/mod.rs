//! Subagents: work split off the main agent by depth of reasoning, each with
//! a context of its own that never reaches the main agent's.
//!
//! Definitions are `subagents/*.md` files in Claude Code's agent format
//! ([`definition`]), loaded with the built-in copies of the defaults the
//! project has no file for ([`roster`]). Each role has one file here: when
//! its definitions run (by `role` and `trigger`, never by name), what each
//! is shown (from its `sees` only, [`sees`]), and its builtin body:
//! [`eval_runner`] (EVALUATE's decision), [`reviewer`] and [`simplifier`]
//! (REVIEW), [`analyzer`] (beside EVALUATE, and CHECK's plateau report),
//! [`synthesizer`] (a keep, the end of a run) and [`judge`] (the end of a
//! run). The phase of the moment dispatches them in parallel
//! ([`dispatch`]): builtin ones are plain Rust, command and llm ones run an
//! agent (`dispatch::caller`) under the main agent's invocation contract
//! with `OODA_PHASE` set to their role. Every report is archived as JSON
//! under `artifacts/` and linked from the iteration file; a subagent that
//! fails or times out is data, and its `on_error` says what that means.

pub(crate) mod analyzer;
pub(crate) mod definition;
pub(crate) mod dispatch;
pub(crate) mod eval_runner;
pub(crate) mod judge;
pub(crate) mod reviewer;
pub(crate) mod roster;
pub(crate) mod sees;
pub(crate) mod simplifier;
pub(crate) mod synthesizer;

pub(crate) use analyzer::analyze;
pub use analyzer::notes_for_plan;
pub(crate) use definition::Definition;
pub(crate) use roster::Roster;
