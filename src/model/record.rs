use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    AgentCall, Alarm, Axis, Calibration, Comparison, Confirmation, DiscardKind, GuardResult,
    Pattern, Point, Stop, SubagentReport, Verdict,
};
use crate::text::compress;
use crate::text::redact;

/// A plan's predicted effect and its stated uncertainty.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prediction {
    pub effect: f64,
    pub sd: f64,
}

/// Everything an `iter-NNN.md` states, as its YAML front matter holds it.
/// The front matter is the source of truth: `state.json` can be rebuilt from
/// these records plus git.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IterationRecord {
    pub iteration: u32,
    pub brief: String,
    pub brief_hash: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub started: DateTime<Utc>,
    pub finished: DateTime<Utc>,
    pub driver: String,
    pub verdict: Verdict,
    /// For a measured discard: worse, futile (both falsified) or
    /// inconclusive (may be tried again). Absent in older archives, where
    /// [`IterationRecord::discard_kind`] derives it from the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<DiscardKind>,
    pub reason: String,
    #[serde(default)]
    pub hypothesis: String,
    #[serde(default)]
    pub change: String,
    #[serde(default)]
    pub axes: Vec<Axis>,
    #[serde(default)]
    pub knobs: Point,
    #[serde(default)]
    pub predicted: Option<Prediction>,
    #[serde(default)]
    pub measured: Option<Comparison>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    #[serde(default)]
    pub guards: Vec<GuardResult>,
    /// The commit the candidate was compared against.
    pub base: String,
    /// The kept commit (keeps only).
    #[serde(default)]
    pub commit: Option<String>,
    /// The candidate's tree hash, for exact-cycle detection.
    #[serde(default)]
    pub tree: Option<String>,
    #[serde(default)]
    pub changed_paths: Vec<String>,
    #[serde(default)]
    pub cites: Vec<u32>,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// Every command-agent call of the iteration, with its usage (empty for builtin).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_calls: Vec<AgentCall>,
    /// The cluster jobs its measurements ran in (`executor: slurm`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<super::ClusterJob>,
    #[serde(default)]
    pub patterns: Vec<Pattern>,
    #[serde(default)]
    pub falsified: Option<String>,
    #[serde(default)]
    pub next: Option<String>,
    /// The discarded diff, relative to the iterations folder.
    #[serde(default)]
    pub artifact: Option<String>,
    /// Compressed output of whatever failed (guard, setup, crash), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_output: Option<String>,
    /// What the timed runs wrote in their worktrees (ignored folders too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_writes: Option<super::RunWrites>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrative: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<String>,
    /// A confirmation test run after this iteration (start of run vs best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Why a confirmation test due after this iteration could not be
    /// measured (the metric failed on the start or the best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_failed: Option<String>,
    /// Red lights and YELLOW warnings raised by this iteration's CHECK.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<Alarm>,
    /// The pipeline-analyzer's report, when CHECK ran it after this
    /// iteration; the next PLAN reads the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
    /// The simplifier's version of this keep, its test and its review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simplification: Option<super::Simplified>,
    /// What each subagent dispatched in this iteration did (reviewers'
    /// verdicts and findings), with a link to its archived report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentReport>,
    /// A divergence rollback moved the base back to this commit here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_to: Option<String>,
    /// The base, not the candidate, failed to build or measure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub base_failed: bool,
    /// The plan asked for a screen before the full test (a point of the
    /// builtin search's sweep).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screen: bool,
    /// Set on the last iteration of a run: why the loop stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
}

impl IterationRecord {
    /// The direction it tried, from its first axis (`TILE up`), or "no axis
    /// named": what the falsified list groups and shows.
    pub fn axis_label(&self) -> String {
        self.axes
            .first()
            .map_or_else(|| "no axis named".into(), ToString::to_string)
    }

    /// A record of `iteration` with nothing in it yet: placeholder names, a
    /// fixed timestamp, no data. The baseline and tests fill in the rest.
    pub fn new(iteration: u32, verdict: Verdict) -> IterationRecord {
        let t = DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        IterationRecord {
            iteration,
            brief: "test".into(),
            brief_hash: "0".into(),
            run_id: "run".into(),
            seed: None,
            started: t,
            finished: t,
            driver: "builtin".into(),
            verdict,
            discard: None,
            reason: String::new(),
            hypothesis: String::new(),
            change: String::new(),
            axes: Vec::new(),
            knobs: Point::new(),
            predicted: None,
            measured: None,
            calibration: None,
            guards: Vec::new(),
            base: "0".repeat(40),
            commit: None,
            tree: None,
            changed_paths: Vec::new(),
            cites: Vec::new(),
            tokens: 0,
            cost_usd: 0.0,
            agent_calls: Vec::new(),
            jobs: Vec::new(),
            patterns: Vec::new(),
            falsified: None,
            next: None,
            artifact: None,
            failure_output: None,
            run_writes: None,
            narrative: None,
            acknowledged: None,
            confirmation: None,
            confirmation_failed: None,
            alarms: Vec::new(),
            analysis: None,
            subagents: Vec::new(),
            simplification: None,
            rollback_to: None,
            base_failed: false,
            screen: false,
            stop: None,
        }
    }

    /// The same record with secrets removed from every free-text field.
    /// Redaction works on fields, never on the rendered file, so the YAML
    /// front matter stays well-formed whatever a secret pattern matches.
    pub fn redacted(&self) -> IterationRecord {
        let r = |s: &str| redact::redact(s);
        let ro = |s: &Option<String>| s.as_deref().map(redact::redact);
        let mut out = self.clone();
        // A reason is read by people: a tool's colour codes are not kept.
        out.reason = r(&compress::strip_ansi(&self.reason));
        out.hypothesis = r(&self.hypothesis);
        out.change = r(&self.change);
        out.failure_output = ro(&self.failure_output);
        if let Some(w) = &mut out.run_writes {
            for list in [&mut w.base, &mut w.cand, &mut w.carried] {
                for p in list.iter_mut() {
                    *p = r(p);
                }
            }
        }
        out.falsified = ro(&self.falsified);
        out.next = ro(&self.next);
        out.narrative = ro(&self.narrative);
        out.acknowledged = ro(&self.acknowledged);
        out.analysis = ro(&self.analysis);
        for g in &mut out.guards {
            g.command = r(&g.command);
        }
        for p in &mut out.patterns {
            p.name = r(&p.name);
            p.lesson = r(&p.lesson);
        }
        for s in &mut out.subagents {
            s.problem = ro(&s.problem);
            s.narrative = ro(&s.narrative);
            for f in &mut s.findings {
                f.file = r(&f.file);
                f.rule = r(&f.rule);
                f.why = r(&f.why);
            }
        }
        out
    }

    /// Whether the iteration failed because the agent's API stayed
    /// unavailable in PLAN or EXECUTE (the call that ended it found it so):
    /// an outage, which says nothing about the agent or the change. An
    /// outage in LEARN cuts nothing; the verdict was decided before it.
    pub fn cut_by_outage(&self) -> bool {
        self.verdict == Verdict::Invalid
            && self
                .agent_calls
                .iter()
                .rfind(|c| c.phase != super::Phase::Learn)
                .is_some_and(|c| c.outcome == super::CallOutcome::Unavailable)
    }

    /// Whether a budget ran out before the iteration could be measured.
    pub fn cut_by_budget(&self) -> bool {
        self.verdict == Verdict::Invalid
            && matches!(
                super::Cut::from_reason(&self.reason),
                super::Cut::Budget { .. }
            )
    }

    /// Why a discard was not kept: as recorded, or, in an archive written
    /// before the kinds, from its interval against θ₁ (a discard without a
    /// measurement of its own reused an earlier verdict and falsifies).
    pub fn discard_kind(&self) -> Option<DiscardKind> {
        if self.verdict != Verdict::Discard {
            return None;
        }
        Some(self.discard.unwrap_or_else(|| match &self.measured {
            // The 95% upper bound stands in for the 90% one, which older
            // archives did not record: it can only call fewer discards futile.
            Some(m) => DiscardKind::of(m.ci, m.ci.1 < m.theta1),
            None => DiscardKind::Worse,
        }))
    }

    /// The verdict as people read it: `discard (inconclusive)` beside `keep`.
    pub fn verdict_text(&self) -> String {
        match self.discard_kind() {
            Some(k) => format!("{} ({})", self.verdict.as_str(), k.as_str()),
            None => self.verdict.as_str().to_string(),
        }
    }

    /// This iteration's LEARN statement, if it counts as falsified: only a
    /// worse or futile discard falsifies, whatever an older release wrote
    /// on an inconclusive discard, a keep or a crash.
    pub fn falsified_text(&self) -> Option<&str> {
        self.falsified.as_deref().filter(|_| self.falsifies())
    }

    /// Failed on its own account: a crash, an invalid or blocked change, or
    /// a keep a reviewer refused. Five in a row stop the night.
    pub fn is_failure(&self) -> bool {
        self.verdict.is_failure() || self.discard_kind() == Some(DiscardKind::BlockedByReview)
    }

    /// A reviewer blocked this keep for what it found in the change (not
    /// because it failed to answer): the point is settled.
    pub fn blocked_for_findings(&self) -> bool {
        self.discard_kind() == Some(DiscardKind::BlockedByReview)
            && self
                .subagents
                .iter()
                .any(|s| s.blocks() && s.findings.iter().any(|f| !f.advisory))
    }

    /// An exploratory point screened out after one run, or two after a
    /// near miss (not a decision).
    pub fn screened(&self) -> bool {
        self.discard == Some(DiscardKind::Screened)
    }

    /// A measured "no": this hypothesis and this point must not be retried.
    pub fn falsifies(&self) -> bool {
        self.discard_kind().is_some_and(DiscardKind::falsifies)
    }

    /// The pipeline-analyzer's report archived with this iteration. Archives
    /// written before the report had its own field carry it in the plateau
    /// alarm's evidence, after "N iterations without a keep; ".
    pub fn analysis_report(&self) -> Option<String> {
        if let Some(a) = &self.analysis {
            return Some(a.clone());
        }
        self.alarms
            .iter()
            .find(|a| a.kind == super::AlarmKind::Plateau)
            .map(|a| match a.evidence.split_once("; ") {
                Some((_, report)) => report.to_string(),
                None => a.evidence.clone(),
            })
    }

    /// Adds subagents' reports and model calls to a record about to be
    /// archived: their spend counts, and a newer report replaces the older
    /// one of the same subagent (a stop archived after the iteration's own
    /// CHECK synthesized again), keeping the narrative it was asked for once.
    pub fn attach(&mut self, reports: Vec<super::SubagentReport>, calls: Vec<super::AgentCall>) {
        self.tokens += calls.iter().map(|c| c.usage.total()).sum::<u64>();
        self.cost_usd += calls.iter().filter_map(|c| c.usage.cost_usd).sum::<f64>();
        // A stop archived after the iteration's own CHECK synthesized again:
        // the newer report replaces the older one of the same subagent.
        let mut reports = reports;
        for n in &mut reports {
            if let Some(old) = self
                .subagents
                .iter()
                .find(|o| o.name == n.name && o.role == n.role)
                && n.narrative.is_none()
            {
                // The narrative was asked for once, when the iteration was kept.
                n.narrative.clone_from(&old.narrative);
            }
        }
        self.subagents.retain(|old| {
            !reports
                .iter()
                .any(|n| n.name == old.name && n.role == old.role)
        });
        self.subagents.extend(reports);
        self.agent_calls.extend(calls);
    }

    /// This iteration's share of the pooled noise (`NoiseHistory::pool`):
    /// of its calibration pairs, else of its measured pairs. A screened-out
    /// point has none: its runs are the candidate's alone against one
    /// earlier median, not pairs, and were chosen by how they came out
    /// (a near miss's two), so their spread is no pair's.
    pub fn noise_share(&self) -> (f64, f64) {
        if self.screened() {
            return (0.0, 0.0);
        }
        self.calibration
            .as_ref()
            .map(|c| c.pairs.as_slice())
            .or(self.measured.as_ref().map(|m| m.pairs.as_slice()))
            .map(|p| {
                let d: Vec<f64> = p.iter().map(|p| p.d).collect();
                crate::stats::noise_share(&d)
            })
            .unwrap_or((0.0, 0.0))
    }

    /// One line for digests and summaries: signed effect in percent, if measured.
    pub fn effect_text(&self) -> String {
        match &self.measured {
            Some(m) => match m.direction {
                Some(d) => crate::text::number::effect_ci_in(d.sense(), m.effect, m.ci),
                None => crate::text::number::effect_ci(m.effect, m.ci),
            },
            None => "—".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AgentCall, CallOutcome, Phase};

    fn call(phase: Phase, outcome: CallOutcome) -> AgentCall {
        AgentCall::new(phase, 1, outcome)
    }

    #[test]
    fn only_an_outage_in_plan_or_execute_cuts_an_iteration() {
        let mut r = IterationRecord::new(3, Verdict::Invalid);
        r.agent_calls = vec![call(Phase::Plan, CallOutcome::Unavailable)];
        assert!(r.cut_by_outage());
        // A guard failed after EXECUTE; LEARN then found the API down: the
        // iteration failed on its own account.
        r.agent_calls = vec![
            call(Phase::Plan, CallOutcome::Ok),
            call(Phase::Execute, CallOutcome::Ok),
            call(Phase::Learn, CallOutcome::Unavailable),
        ];
        assert!(!r.cut_by_outage());
        r.agent_calls[1].outcome = CallOutcome::Unavailable;
        assert!(r.cut_by_outage());
        r.verdict = Verdict::Discard;
        assert!(!r.cut_by_outage());
    }
}
