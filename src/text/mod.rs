//! Text: what every layer does to a string before a person or a model reads
//! it. Compression of command output, secret redaction, clipping and the
//! short forms of commits and numbers.
//!
//! It is the ground floor under `model/`: a record redacts its own fields
//! before it is archived, so redaction cannot live above the types it
//! protects.

pub mod clip;
pub mod compress;
pub(crate) mod json_scan;
pub(crate) mod number;
pub(crate) mod redact;
