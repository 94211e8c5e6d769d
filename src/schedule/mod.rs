//! Running a Brief unattended: at fire times in one process (`ticker`), and
//! every Brief of a folder at once (`daemon`).
//!
//! One tick is the unit everywhere: what a long-running mode adds is when to
//! start the next one and how to stop between them. Whole ticks as Slurm jobs
//! (`ooda submit`) are the Slurm executor's (`run/executor/slurm.rs`), and
//! the human log these modes write is `events/log.rs`.

pub(crate) mod daemon;
pub(crate) mod ticker;
