//! Integration tests: the real binary against real git repositories.

mod agents;
mod commands;
mod errors;
mod loop_runs;
mod resume;
mod test;
