//! ORIENT: the statistics of the archive that the rest of the iteration uses.
//!
//! One value (`eval::Orientation`) carries the noise in force, θ₁, α′ and
//! the analysis notes for PLAN. It is checkpointed, so EVALUATE decides with
//! exactly what PLAN was told, and `summary.md` computes it the same way.

use crate::archive::history::View;
use crate::archive::state::InFlight;
use crate::brief::Brief;
use crate::config::Config;
use crate::error::Result;
use crate::model::Orientation;

/// ORIENT over the archive as it stands before the iteration.
pub(crate) fn run(history: View, brief: &Brief, config: &Config) -> Result<Orientation> {
    let mut o = Orientation::of_view(
        history,
        brief.metric.noise_floor,
        config.defaults.alpha,
        config.defaults.pairs,
    );
    o.analysis = crate::subagents::notes_for_plan(history)?;
    Ok(o)
}

/// ORIENT's output, for the iteration in flight.
pub(crate) struct Oriented(pub Orientation);

impl Oriented {
    pub(super) fn apply(self, c: &mut InFlight) {
        c.orientation = Some(self.0);
    }
}
