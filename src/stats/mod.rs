//! Statistics for the keep/discard decision: descriptive statistics, the
//! paired and Welch t-tests, the minimum detectable effect, and a seeded PRNG.
//!
//! Design choices:
//! - Pure functions over `&[f64]`, no I/O, no panics on any input. Descriptive statistics
//!   return `NaN` when they are undefined (empty input, or fewer than two values for a
//!   variance) so callers can compose them freely; the tests return `None` instead, because
//!   a decision must never be taken on an undefined statistic.
//! - The t statistics are written by hand (a few lines each) and only the Student-t
//!   distribution comes from `statrs`; every number is pinned in the tests against
//!   scipy, computed independently.
//! - A zero-variance sample is legitimate (instruction counts, binary sizes): identical
//!   differences must decide at the first look without a division by zero, so
//!   [`paired_t`] handles `sd == 0` explicitly, and detects "all values identical"
//!   exactly rather than trusting a variance that rounding left at 1e-34.
//! - `statrs`' quantile function asserts its argument lies in `[0, 1]` and its CDF
//!   panics on `NaN`; the wrappers [`t_quantile`] and [`t_sf`] screen inputs first.
//! - [`SplitMix64`] is here rather than in a crate because simulations and the
//!   randomized pair order must be reproducible from a seed recorded in the state, on
//!   every platform and every version of every dependency.

mod descriptive;
mod rng;
mod t;
mod trend;

pub use descriptive::*;
pub use rng::*;
pub use t::*;
pub use trend::*;

#[cfg(test)]
mod tests;
