//! Reading what a human wrote: YAML with line numbers, the problems found in
//! it, and the small value syntaxes (units, durations, cron expressions) that
//! Briefs, `ooda.yaml` and the command line share.
//!
//! Every message a user sees about a file they wrote is built here, naming
//! the file, the line and the key, so each front end reports mistakes the
//! same way.

pub(crate) mod cron;
pub(crate) mod problem;
pub(crate) mod units;
pub(crate) mod yaml;
