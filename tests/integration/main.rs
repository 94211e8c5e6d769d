//! Integration tests: the real binary against real git repositories.

mod commands;
mod errors;
mod loop_runs;
mod resume;
mod schedule;
mod test;
