//! What a person reads about a run: the morning report (`summary.md`,
//! `summary.json`, `progress.svg`), the call tree rebuilt from the event log
//! (`trace`), its comparison, export (`otlp`), the numbers summed over it
//! (`metrics`), the grade, the anomalies, the tasks, and the notifications
//! sent when a run stops.
//!
//! Everything here is a reader of the archive and the event log; none of it
//! decides keep or discard.

pub mod anomalies;
pub mod chart;
pub mod compare;
pub mod grade;
pub mod metrics;
pub mod notify;
pub mod otlp;
pub mod summary;
pub mod tasks;
pub mod trace;
