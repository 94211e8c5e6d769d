//! One iteration's record reduced to the facts the runner reads on every
//! tick, in a fixed-width row.
//!
//! A tick needs the newest iterations in full (the PLAN prompt shows a few,
//! `summary.md` a hundred) but of the older ones only what adds up:
//! counts by verdict, spent tokens, the pooled noise, which hypotheses and
//! knob points were falsified, the chart's points. Decoding 10,000 full
//! records to learn that was most of a tick at 10,000 iterations; a row of
//! numbers and hashes per iteration needs no parsing and no allocation
//! but its label. The row is a pure function of the record ([`Fact::of`]), so
//! it can always be recomputed from the iteration file, which stays the
//! source of truth (`facts.rs` keeps the table in step with the files).
//!
//! Texts are hashed (FNV-1a, 64 bits): "was this hypothesis falsified
//! before" needs equality, not the words; the few records whose words are
//! shown are read in full through the index.

use crate::model::{DiscardKind, IterationRecord, Verdict};

pub(crate) use super::axis::{AXIS_BYTES, Axis};

/// Where an iteration file was when its row was taken, and where its record
/// is in `index.jsonl`: what the table is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Source {
    pub size: u64,
    pub mtime_ns: u64,
    /// When the row was taken (a file modified within the racy window of
    /// this moment is hashed before it is trusted).
    pub taken_ns: u64,
    /// FNV-1a of the file's bytes.
    pub hash: u64,
    /// The byte offset and length of the record's line in `index.jsonl`
    /// (`u64::MAX` when the record has no line: the file is parsed).
    pub line_at: u64,
    pub line_len: u32,
}

/// An iteration's facts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fact {
    pub iteration: u32,
    pub verdict: Option<Verdict>,
    /// [`IterationRecord::discard_kind`], resolved.
    pub discard: Option<DiscardKind>,
    pub flags: u32,
    pub tokens: u64,
    pub cost_usd: f64,
    /// The measured comparison (NaN when not measured).
    pub cand_median: f64,
    pub base_median: f64,
    pub effect: f64,
    pub ci: (f64, f64),
    pub pairs: u32,
    /// The A/A calibration's median and run spread (the baseline's).
    pub calibration_median: f64,
    pub calibration_sd: f64,
    /// The predicted effect (NaN when none).
    pub predicted: f64,
    /// This iteration's share of the pooled noise: the sum of squared
    /// deviations of its winsorized pair log ratios, and its degrees of
    /// freedom (`NoiseHistory::from_shares` adds them up).
    pub noise_ss: f64,
    pub noise_df: f64,
    /// Hashes (0: none): the normalized hypothesis, the normalized LEARN
    /// falsified statement, the falsified list's key (what
    /// `prompt::falsified_entries` groups by), the knob point, the tree,
    /// the kept commit, the commit a rollback returned to.
    pub hypothesis: u64,
    pub falsified: u64,
    pub entry: u64,
    pub knobs: u64,
    pub tree: u64,
    pub commit: u64,
    pub rollback_to: u64,
    /// The first axis's label, clipped to [`AXIS_BYTES`].
    pub axis: Axis,
    /// Start and end, seconds since the epoch.
    pub started: i64,
    pub finished: i64,
    pub source: Source,
}

/// Bits of [`Fact::flags`].
pub(crate) mod flag {
    pub(crate) const SCREEN: u32 = 1;
    pub(crate) const SCREENED: u32 = 1 << 1;
    pub(crate) const BASE_FAILED: u32 = 1 << 2;
    pub(crate) const FALSIFIES: u32 = 1 << 3;
    pub(crate) const BLOCKED_FOR_FINDINGS: u32 = 1 << 4;
    pub(crate) const GUARD_FAILED: u32 = 1 << 5;
    pub(crate) const ACKNOWLEDGED: u32 = 1 << 6;
    pub(crate) const CONFIRMATION: u32 = 1 << 7;
    pub(crate) const CONFIRMATION_FAILED: u32 = 1 << 8;
    /// An analyzer report (`IterationRecord::analysis_report`).
    pub(crate) const ANALYSIS: u32 = 1 << 9;
    pub(crate) const ALARMS: u32 = 1 << 10;
    pub(crate) const STOP: u32 = 1 << 11;
    pub(crate) const CUT_BY_OUTAGE: u32 = 1 << 12;
    pub(crate) const FAILURE: u32 = 1 << 13;
    pub(crate) const MEASURED: u32 = 1 << 14;
    pub(crate) const CALIBRATION: u32 = 1 << 15;
    pub(crate) const BUILTIN: u32 = 1 << 16;
    pub(crate) const PATTERNS: u32 = 1 << 17;
    /// A subagent report the Review section of `summary.md` lists.
    pub(crate) const REVIEWED: u32 = 1 << 18;
    /// A falsified-list entry (a falsifying discard with words to show).
    pub(crate) const ENTRY: u32 = 1 << 19;
    pub(crate) const ROLLBACK: u32 = 1 << 20;
    /// A falsified statement that counts (`IterationRecord::falsified_text`).
    pub(crate) const FALSIFIED_TEXT: u32 = 1 << 21;
    /// A Slurm job lost under one of its measurements (a cluster fault, no
    /// answer from the controller, or the candidate's own cancel).
    pub(crate) const LOST_JOBS: u32 = 1 << 22;
}

impl Fact {
    /// The facts of `rec`, taken from its file as `source` says.
    pub fn of(rec: &IterationRecord, source: Source) -> Fact {
        let mut flags = 0;
        let mut set = |on: bool, bit: u32| {
            if on {
                flags |= bit;
            }
        };
        set(rec.screen, flag::SCREEN);
        set(rec.screened(), flag::SCREENED);
        set(rec.base_failed, flag::BASE_FAILED);
        set(rec.falsifies(), flag::FALSIFIES);
        set(rec.blocked_for_findings(), flag::BLOCKED_FOR_FINDINGS);
        set(rec.guards.iter().any(|g| !g.ok), flag::GUARD_FAILED);
        set(rec.acknowledged.is_some(), flag::ACKNOWLEDGED);
        set(rec.confirmation.is_some(), flag::CONFIRMATION);
        set(rec.confirmation_failed.is_some(), flag::CONFIRMATION_FAILED);
        set(rec.analysis_report().is_some(), flag::ANALYSIS);
        set(!rec.alarms.is_empty(), flag::ALARMS);
        set(rec.stop.is_some(), flag::STOP);
        set(rec.cut_by_outage(), flag::CUT_BY_OUTAGE);
        set(rec.is_failure(), flag::FAILURE);
        set(rec.measured.is_some(), flag::MEASURED);
        set(rec.calibration.is_some(), flag::CALIBRATION);
        set(rec.driver == "builtin", flag::BUILTIN);
        set(!rec.patterns.is_empty(), flag::PATTERNS);
        set(reviewed(rec), flag::REVIEWED);
        set(rec.rollback_to.is_some(), flag::ROLLBACK);
        set(rec.falsified_text().is_some(), flag::FALSIFIED_TEXT);
        set(rec.jobs.iter().any(|j| j.lost.is_some()), flag::LOST_JOBS);
        let entry = entry_text(rec);
        set(entry.is_some(), flag::ENTRY);
        let m = rec.measured.as_ref();
        let nan = f64::NAN;
        let (noise_ss, noise_df) = rec.noise_share();
        let text_hash = |s: &str| if s.is_empty() { 0 } else { hash(s.as_bytes()) };
        Fact {
            iteration: rec.iteration,
            verdict: Some(rec.verdict),
            discard: rec.discard_kind(),
            flags,
            tokens: rec.tokens,
            cost_usd: rec.cost_usd,
            cand_median: m.map_or(nan, |m| m.cand_median),
            base_median: m.map_or(nan, |m| m.base_median),
            effect: m.map_or(nan, |m| m.effect),
            ci: m.map_or((nan, nan), |m| m.ci),
            pairs: m.map_or(0, |m| m.pairs.len() as u32),
            calibration_median: rec.calibration.as_ref().map_or(nan, |c| c.median),
            calibration_sd: rec.calibration.as_ref().map_or(nan, |c| c.run_sd),
            predicted: rec.predicted.as_ref().map_or(nan, |p| p.effect),
            noise_ss,
            noise_df,
            hypothesis: text_hash(&crate::model::normalize_text(&rec.hypothesis)),
            falsified: rec
                .falsified
                .as_deref()
                .map_or(0, |f| text_hash(&crate::model::normalize_text(f))),
            entry: entry.map_or(0, |e| hash(e.to_lowercase().as_bytes())),
            knobs: if rec.knobs.is_empty() {
                0
            } else {
                hash(crate::brief::points::key(&rec.knobs).as_bytes())
            },
            tree: rec.tree.as_deref().map_or(0, |t| hash(t.as_bytes())),
            commit: rec.commit.as_deref().map_or(0, |t| hash(t.as_bytes())),
            rollback_to: rec.rollback_to.as_deref().map_or(0, |t| hash(t.as_bytes())),
            axis: Axis::new(&rec.axis_label()),
            started: rec.started.timestamp(),
            finished: rec.finished.timestamp(),
            source,
        }
    }

    /// The rows of `records` held in memory (no file behind them): for
    /// tests and for readers that hold every record already.
    pub fn all_of(records: &[IterationRecord]) -> Vec<Fact> {
        records
            .iter()
            .map(|r| Fact::of(r, Source::default()))
            .collect()
    }

    pub fn has(&self, bit: u32) -> bool {
        self.flags & bit != 0
    }

    pub fn is(&self, v: Verdict) -> bool {
        self.verdict == Some(v)
    }

    pub fn falsifies(&self) -> bool {
        self.has(flag::FALSIFIES)
    }

    pub fn screened(&self) -> bool {
        self.has(flag::SCREENED)
    }

    pub fn is_failure(&self) -> bool {
        self.has(flag::FAILURE)
    }

    /// The measured comparison's numbers, when there is one.
    pub fn measured(&self) -> Option<Measured> {
        self.has(flag::MEASURED).then_some(Measured {
            cand_median: self.cand_median,
            base_median: self.base_median,
            effect: self.effect,
            ci: self.ci,
        })
    }
}

/// What a row keeps of a measured comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub cand_median: f64,
    pub base_median: f64,
    pub effect: f64,
    pub ci: (f64, f64),
}

/// The falsified list's text of `rec` (what `prompt::falsified_entries`
/// lists): the LEARN statement, else the hypothesis, of a falsifying
/// discard, clipped as the list clips it.
pub(crate) fn entry_text(rec: &IterationRecord) -> Option<String> {
    if !rec.falsifies() {
        return None;
    }
    // LEARN's statement, else the change that was measured (EXECUTE's own
    // account of it when it gave one), else the plan's hypothesis: what a
    // discard falsifies is what was measured, not what was hoped.
    let text = match &rec.falsified {
        Some(f) if !f.trim().is_empty() => f.as_str(),
        _ if !rec.change.trim().is_empty() => rec.change.as_str(),
        _ if !rec.hypothesis.trim().is_empty() => rec.hypothesis.as_str(),
        _ => return None,
    };
    Some(crate::text::clip::clip(text, 400))
}

/// The hash a plan's `change` is compared under with a falsified entry
/// ([`Fact::entry`]); 0 for no change text.
pub(crate) fn change_key(change: &str) -> u64 {
    if change.trim().is_empty() {
        return 0;
    }
    hash(
        crate::text::clip::clip(change, 400)
            .to_lowercase()
            .as_bytes(),
    )
}

/// Whether `summary.md`'s Review section lists a report of `rec`: a
/// blocking one, or a reviewer that did not finish.
pub(crate) fn reviewed(rec: &IterationRecord) -> bool {
    rec.subagents.iter().any(|rep| {
        rep.blocks()
            || (rep.role == crate::model::Role::Review
                && rep.outcome != crate::model::SubagentOutcome::Done)
            || rep.suspicious
    })
}

/// FNV-1a, 64 bits.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_says_what_the_record_says() {
        for rec in crate::archive::history::synthetic::synthetic_history(60, 7) {
            let f = Fact::of(&rec, Source::default());
            assert_eq!(f.iteration, rec.iteration);
            assert_eq!(f.verdict, Some(rec.verdict));
            assert_eq!(f.discard, rec.discard_kind());
            assert_eq!(f.falsifies(), rec.falsifies());
            assert_eq!(f.screened(), rec.screened());
            assert_eq!(f.is_failure(), rec.is_failure());
            assert_eq!(f.tokens, rec.tokens);
            assert_eq!(
                f.measured().map(|m| m.effect),
                rec.measured.as_ref().map(|m| m.effect)
            );
            assert_eq!(f.has(flag::ENTRY), entry_text(&rec).is_some());
        }
    }
}
