//! REVIEW: an independent look at a kept change before it is committed.
//!
//! No reviewer runs yet: every keep passes (`None`). The reviewer and the
//! simplifier subagents produce a [`Review`]; a block turns the keep into a
//! discard, and a simplified candidate goes back to EVALUATE (`next.rs`
//! routes both).

use crate::model::Review;
use crate::state::InFlight;

pub(crate) fn run(_: &InFlight) -> Option<Review> {
    None
}
