//! What a person reads about a run: the morning report (`summary.md`,
//! `summary.json`, `progress.svg`, and the headline they share), the call tree rebuilt from the event log
//! (`trace`), its comparison, export (`otlp`), the numbers summed over it
//! (`metrics`), the grade, the anomalies, the tasks, and the notifications
//! sent when a run stops.
//!
//! Everything here is a reader of the archive and the event log; none of it
//! decides keep or discard.

pub(crate) mod anomalies;
pub(crate) mod chart;
pub(crate) mod compare;
pub(crate) mod grade;
pub(crate) mod headline;
pub(crate) mod metrics;
pub(crate) mod notify;
pub(crate) mod otlp;
pub(crate) mod summary;
pub(crate) mod tasks;
pub(crate) mod trace;
