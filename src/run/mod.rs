//! Running commands: a process with a timeout, an interrupt and a capped
//! output (`exec`), the places a command can run (`executor`), what it may
//! write (`sandbox`), what an agent must not have touched (`fence`), and the
//! host's one-measurement-at-a-time lock, and the growing waits that sit out
//! an outage of a service ooda does not run (an agent's API, a Slurm
//! controller).
//!
//! Everything that starts a child process goes through here, so the sandbox,
//! the signals and the limits are the same for a benchmark, a guard, an
//! agent CLI and a subagent.

pub(crate) mod exec;
pub(crate) mod executor;
pub(crate) mod fence;
pub(crate) mod interrupt;
pub(crate) mod measure_lock;
pub(crate) mod outage;
pub(crate) mod sandbox;
