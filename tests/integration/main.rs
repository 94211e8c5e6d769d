//! Integration tests: the real binary against real git repositories.

mod agents;
mod attacks;
mod commands;
mod compress;
mod decisions;
mod environment;
mod errors;
mod growth;
mod hostile;
mod layout;
mod llm;
mod loop_runs;
mod mcp;
mod migration;
mod observe;
mod presets;
mod redlights;
mod resume;
mod safety;
mod schedule;
mod self_contained;
mod slurm;
mod subagents;
mod test;
