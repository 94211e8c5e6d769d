//! Waiting out a service that does not answer: an agent's API (HTTP
//! 429/5xx, an outage the tool reports; `defaults.agent_outage`) or a Slurm
//! controller (`slurm.controller_wait`). Growing waits, until the budget is
//! spent.
//!
//! One schedule for every such wait: an outage of a provider or of the
//! cluster says nothing about the agent or the change, so neither may be
//! blamed for it before the budget is gone.

use std::time::Duration;

/// The waits of one call's outage.
pub(crate) struct Outage {
    budget: Duration,
    wait: Duration,
    waited: Duration,
}

impl Outage {
    pub(crate) fn new(budget: Duration) -> Outage {
        Outage {
            budget,
            wait: (budget / 60).clamp(Duration::from_millis(100), Duration::from_secs(30)),
            waited: Duration::ZERO,
        }
    }

    /// Time already spent waiting.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }

    /// The next wait (counted as spent), or `None` when the budget is gone.
    pub(crate) fn next_wait(&mut self) -> Option<Duration> {
        if self.waited >= self.budget {
            return None;
        }
        let this = self.wait.min(self.budget - self.waited);
        self.waited += this;
        self.wait = (self.wait * 2).min(Duration::from_secs(300));
        Some(this)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_and_stop_at_the_budget() {
        let mut o = Outage::new(Duration::from_secs(60));
        let waits: Vec<Duration> = std::iter::from_fn(|| o.next_wait()).collect();
        assert_eq!(waits[0], Duration::from_secs(1));
        assert_eq!(waits[1], Duration::from_secs(2));
        assert_eq!(waits.iter().sum::<Duration>(), Duration::from_secs(60));
        assert_eq!(o.waited(), Duration::from_secs(60));
        assert_eq!(Outage::new(Duration::ZERO).next_wait(), None);
    }
}
