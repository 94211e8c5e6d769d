//! The pairs of a measurement so far, on disk.
//!
//! Why: a series of pairs can be cut short by something that says nothing
//! about either side — its Slurm job reached its time limit between two
//! steps, the controller went away, ooda itself was killed — and measuring
//! it again from the first pair would spend the night twice and, worse,
//! make a long series impossible under a short `slurm.time`. Each pair is a
//! paired comparison on its own (both halves ran back to back in one
//! place), so the pairs already measured stay valid and the series goes on
//! from them.
//!
//! A journal belongs to one comparison (the key: iteration, phase and what
//! the two sides are) and is only read back for the same one; the order of
//! the pairs comes from the seeded generator, whose draws for the journaled
//! pairs must match what they recorded, or the journal is not used. It is
//! removed when the series ends (decided, or failed on a run), so only a
//! series cut short leaves one.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::Pair;
use crate::stats::SplitMix64;

pub(crate) struct Journal {
    path: PathBuf,
    key: String,
}

#[derive(Serialize, Deserialize)]
struct Saved {
    key: String,
    pairs: Vec<Pair>,
}

impl Journal {
    pub(crate) fn new(path: PathBuf, key: String) -> Journal {
        Journal { path, key }
    }

    /// The pairs journaled for this comparison, with `rng` advanced past
    /// their draws; none (and `rng` untouched) when there is no journal,
    /// it is another comparison's, its order does not match the draws, or
    /// a pair fails `valid` (the caller's own arithmetic on its values).
    pub(crate) fn resume(&self, rng: &mut SplitMix64, valid: impl Fn(&Pair) -> bool) -> Vec<Pair> {
        let Some(saved) = std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Saved>(&b).ok())
            .filter(|s| s.key == self.key)
        else {
            return Vec::new();
        };
        let mut probe = rng.clone();
        if saved
            .pairs
            .iter()
            .all(|p| (probe.below(2) == 1) == p.cand_first && valid(p))
        {
            *rng = probe;
            saved.pairs
        } else {
            Vec::new()
        }
    }

    /// Records the pairs so far (written whole, atomically: a kill leaves
    /// the previous list or this one).
    pub(crate) fn save(&self, pairs: &[Pair]) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| crate::error::Error::io(format!("creating {}", dir.display()), e))?;
        }
        let saved = Saved {
            key: self.key.clone(),
            pairs: pairs.to_vec(),
        };
        let bytes = serde_json::to_vec(&saved)
            .map_err(|e| crate::error::Error::Internal(format!("journal of pairs: {e}")))?;
        crate::atomic::write_atomic(&self.path, &bytes)
    }

    /// The series ended: nothing to go on from.
    pub(crate) fn clear(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(cand_first: bool, d: f64) -> Pair {
        Pair {
            base: 1.0,
            cand: 1.0,
            cand_first,
            d,
        }
    }

    #[test]
    fn pairs_come_back_for_the_same_comparison_with_the_draws_they_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.json");
        let mut rng = SplitMix64::new(7);
        let mut draws = rng.clone();
        let first: Vec<Pair> = (0..3)
            .map(|i| pair(draws.below(2) == 1, f64::from(i)))
            .collect();
        let j = Journal::new(path.clone(), "1|evaluate|a|b".into());
        j.save(&first).unwrap();
        assert_eq!(j.resume(&mut rng, |_| true), first);
        // Past the journaled draws: the next pair's order is the one an
        // uninterrupted series would have drawn.
        assert_eq!(rng.below(2), draws.below(2));
        // Another comparison's journal is not this one's.
        let mut fresh = SplitMix64::new(7);
        let other = Journal::new(path.clone(), "2|evaluate|a|b".into());
        assert!(other.resume(&mut fresh, |_| true).is_empty());
        assert_eq!(fresh, SplitMix64::new(7), "untouched");
        // Pairs whose order the draws do not give are not used.
        let mut wrong = first.clone();
        wrong[1].cand_first = !wrong[1].cand_first;
        j.save(&wrong).unwrap();
        let mut again = SplitMix64::new(7);
        assert!(j.resume(&mut again, |_| true).is_empty());
        assert_eq!(again, SplitMix64::new(7));
        // Pairs whose values the caller does not recognise are not used.
        j.save(&first).unwrap();
        let mut checked = SplitMix64::new(7);
        assert!(j.resume(&mut checked, |p| p.d < 1.5).is_empty());
        j.clear();
        assert!(!path.exists());
        // A file that is not a journal is none.
        std::fs::write(&path, "{").unwrap();
        assert!(j.resume(&mut again, |_| true).is_empty());
    }
}
