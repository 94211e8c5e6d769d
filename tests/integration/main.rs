//! Integration tests: the real binary against real git repositories.

mod agents;
mod commands;
mod decisions;
mod errors;
mod loop_runs;
mod migration;
mod redlights;
mod resume;
mod safety;
mod schedule;
mod test;
