use serde::{Deserialize, Serialize};

/// Tokens and cost of one agent call, as reported by the tool.
///
/// `input` counts every prompt token the model read (cached ones included,
/// since they count toward a token budget too); `cached` is the part of
/// `input` served from a cache. `output` includes reasoning ("thoughts").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub cached: u64,
    #[serde(default)]
    pub output: u64,
    /// Input tokens written to the provider's prompt cache (counted in
    /// `input` too), when the tool reports them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write: u64,
    /// Output tokens spent on reasoning (counted in `output` too), when the
    /// tool reports them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
    /// `None` when the format carries no cost (codex, gemini, plain text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// For `skip_serializing_if`: a count the tool did not report.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    /// Nothing reported (a plain-text agent, or a call that died early).
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }

    pub fn add(&mut self, other: &Usage) {
        self.input = self.input.saturating_add(other.input);
        self.cached = self.cached.saturating_add(other.cached);
        self.output = self.output.saturating_add(other.output);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// The sum of many.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Usage>) -> Usage {
        all.into_iter().fold(Usage::default(), |mut u, x| {
            u.add(x);
            u
        })
    }
}
