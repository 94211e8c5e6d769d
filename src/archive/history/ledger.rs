//! `iterations/<brief>/ledger.json`: what the iterations older than the
//! window add up to that the facts table cannot say.
//!
//! The named patterns are words (a name and its lesson), and the agents'
//! usage is a table per phase: the PLAN prompt, LEARN and the summary list
//! every pattern with its newest lesson and sum every call. Folding the
//! records that leave the window into this small file keeps both without
//! reading them again; the window's own records are folded on top when
//! asked. The file records which iterations it covers and a digest of their
//! files' hashes, so an edited file (or a table rebuilt since) makes it
//! recomputed.

use crate::archive::layout::Layout;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::fact::Fact;
use std::collections::BTreeMap;

use crate::model::{CallOutcome, IterationRecord, Phase, Usage};

pub(crate) const FILE: &str = crate::archive::layout::Layout::LEDGER;

/// A named pattern: the newest lesson under that name and where it was seen.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedPattern {
    pub name: String,
    pub lesson: String,
    /// The newest iteration that named it.
    pub newest: u32,
    /// How many times it was named.
    pub seen: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Entry {
    name: String,
    lesson: String,
    newest: u32,
    /// Its place among the patterns of its newest iteration.
    pos: usize,
    seen: usize,
}

/// The agents' calls of one phase, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseUsage {
    pub calls: usize,
    /// Calls whose outcome was not `ok`.
    pub not_ok: usize,
    pub usage: Usage,
    pub seconds: f64,
}

/// The ledger's meaning: a file of another version is recomputed (2: a
/// multi-axis move is its own entry of `axes`, not charged to each axis).
const VERSION: u32 = 2;

/// What iterations `0..covers` add up to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    #[serde(default)]
    version: u32,
    covers: usize,
    digest: u64,
    /// By name, lower-cased: a fold looks one up per pattern.
    entries: BTreeMap<String, Entry>,
    /// Agent calls by phase (`Phase::as_str`).
    #[serde(default)]
    usage: BTreeMap<String, PhaseUsage>,
    /// Calls that found the agent's API unavailable, and the seconds
    /// waited for it.
    #[serde(default)]
    outages: (usize, f64),
    /// What each direction (`TILE up`) has yielded, for the analyzer.
    #[serde(default)]
    axes: BTreeMap<String, AxisStats>,
}

/// The tries of one direction: what the pipeline-analyzer reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AxisStats {
    pub tries: usize,
    pub keeps: usize,
    /// Measured significantly worse (the 95% interval below zero).
    pub worse: usize,
    /// The measured effects' sum and count.
    pub effect_sum: f64,
    pub measured: usize,
}

impl Ledger {
    /// The patterns of `records` (iterations `0..records.len()`), whose
    /// rows are `facts`.
    pub fn of(records: &[IterationRecord], facts: &[Fact]) -> Ledger {
        let mut p = Ledger::default();
        for r in records {
            p.fold(r);
        }
        p.seal(facts);
        p
    }

    /// Adds the next iteration's patterns and calls.
    pub fn fold(&mut self, r: &IterationRecord) {
        // A move of one axis isolates it: its effect is that axis's. A move
        // of several is counted as the move it was, under their names
        // together, never charged to each (a -485% of four knobs at once
        // said nothing of any one of them).
        let key = match r.axes.as_slice() {
            [] => None,
            [one] => Some(one.to_string()),
            many => Some(format!(
                "{} (together)",
                many.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" + ")
            )),
        };
        if r.verdict != crate::model::Verdict::Baseline
            && let Some(key) = key
        {
            let e = self.axes.entry(key).or_default();
            e.tries += 1;
            e.keeps += usize::from(r.verdict == crate::model::Verdict::Keep);
            if let Some(m) = &r.measured {
                e.effect_sum += m.effect;
                e.measured += 1;
                e.worse += usize::from(m.ci.1 < 0.0);
            }
        }
        for c in &r.agent_calls {
            let u = self.usage.entry(c.phase.as_str().to_string()).or_default();
            u.calls += 1;
            u.not_ok += usize::from(c.outcome != CallOutcome::Ok);
            u.usage.add(&c.usage);
            u.seconds += c.seconds;
            if c.outcome == CallOutcome::Unavailable {
                self.outages.0 += 1;
                self.outages.1 += c.waited;
            }
        }
        for (pos, pat) in r.patterns.iter().enumerate() {
            let key = pat.name.trim().to_lowercase();
            if key.is_empty() {
                continue;
            }
            let entry = self.entries.entry(key).or_default();
            entry.seen += 1;
            // Named twice in one iteration: its first lesson there stands.
            if entry.seen > 1 && entry.newest == r.iteration {
                continue;
            }
            entry.name = crate::text::clip::clip(&pat.name, 80);
            entry.lesson.clone_from(&pat.lesson);
            entry.newest = r.iteration;
            entry.pos = pos;
        }
        self.covers = r.iteration as usize + 1;
    }

    /// Whether this fold covers exactly `facts` (the rows of the iterations
    /// before the window).
    pub fn matches(&self, facts: &[Fact]) -> bool {
        self.covers == facts.len() && self.digest == digest(facts)
    }

    /// Moves the digest to the rows now covered.
    pub fn seal(&mut self, facts: &[Fact]) {
        self.digest = digest(&facts[..self.covers.min(facts.len())]);
    }

    pub fn covers(&self) -> usize {
        self.covers
    }

    /// The calls of `phase` (none: an empty row).
    pub fn phase_usage(&self, phase: Phase) -> PhaseUsage {
        self.usage.get(phase.as_str()).cloned().unwrap_or_default()
    }

    /// Every call, summed.
    pub fn all_usage(&self) -> PhaseUsage {
        self.usage.values().fold(PhaseUsage::default(), |mut a, u| {
            a.calls += u.calls;
            a.not_ok += u.not_ok;
            a.usage.add(&u.usage);
            a.seconds += u.seconds;
            a
        })
    }

    /// Calls that found the API unavailable, and the seconds waited.
    pub fn outages(&self) -> (usize, f64) {
        self.outages
    }

    /// Every direction tried, by name.
    pub fn axes(&self) -> &BTreeMap<String, AxisStats> {
        &self.axes
    }

    /// Every pattern, newest first, one per name (case-insensitive).
    pub fn entries(&self) -> Vec<NamedPattern> {
        let mut e: Vec<&Entry> = self.entries.values().collect();
        e.sort_by(|a, b| b.newest.cmp(&a.newest).then(a.pos.cmp(&b.pos)));
        e.into_iter()
            .map(|e| NamedPattern {
                name: e.name.clone(),
                lesson: e.lesson.clone(),
                newest: e.newest,
                seen: e.seen,
            })
            .collect()
    }

    pub fn read(dir: &Path) -> Option<Ledger> {
        let l: Ledger =
            serde_json::from_slice(&crate::atomic::read_file(Layout::of(dir).ledger()).ok()?)
                .ok()?;
        (l.version == VERSION).then_some(l)
    }

    /// Writes the file (a failure costs the next tick a recomputation).
    pub fn write(&self, dir: &Path) {
        let stamped = Ledger {
            version: VERSION,
            ..self.clone()
        };
        if let Ok(text) = serde_json::to_vec(&stamped) {
            let _ = crate::atomic::write_atomic(&Layout::of(dir).ledger(), &text);
        }
    }
}

/// What the covered files were: their hashes, folded.
fn digest(facts: &[Fact]) -> u64 {
    facts.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, f| {
        (h ^ f.source.hash ^ u64::from(f.iteration)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pattern, Verdict};

    fn rec(i: u32, names: &[(&str, &str)]) -> IterationRecord {
        let mut r = IterationRecord::new(i, Verdict::Discard);
        r.patterns = names
            .iter()
            .map(|(n, l)| Pattern {
                name: n.to_string(),
                lesson: l.to_string(),
            })
            .collect();
        r
    }

    #[test]
    fn newest_lesson_per_name_newest_first() {
        let records = vec![
            rec(0, &[]),
            rec(1, &[("Cache", "old"), ("Tile", "t1")]),
            rec(2, &[("cache ", "new"), ("", "skipped")]),
            rec(3, &[("Vector", "v"), ("Tile", "t2"), ("vector", "later")]),
        ];
        let facts: Vec<Fact> = records
            .iter()
            .map(|r| Fact::of(r, Default::default()))
            .collect();
        let p = Ledger::of(&records, &facts);
        let e = p.entries();
        let names: Vec<(&str, &str, u32, usize)> = e
            .iter()
            .map(|e| (e.name.as_str(), e.lesson.as_str(), e.newest, e.seen))
            .collect();
        assert_eq!(
            names,
            [
                ("Vector", "v", 3, 2),
                ("Tile", "t2", 3, 2),
                ("cache", "new", 2, 2)
            ]
        );
        assert!(p.matches(&facts));
        assert!(!p.matches(&facts[..3]));
    }
}
