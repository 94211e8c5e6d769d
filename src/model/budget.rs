use std::time::Duration;

/// Limits of a run; any may be absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    pub iterations: Option<u32>,
    pub wall: Option<Duration>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl Budget {
    /// This budget with every limit it leaves out taken from `defaults`.
    pub fn or(&self, defaults: &Budget) -> Budget {
        Budget {
            iterations: self.iterations.or(defaults.iterations),
            wall: self.wall.or(defaults.wall),
            cost_usd: self.cost_usd.or(defaults.cost_usd),
            tokens: self.tokens.or(defaults.tokens),
        }
    }
}
