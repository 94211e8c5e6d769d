//! The main agent's answers (PLAN and LEARN, DESIGN.md §7) and the runner's
//! validation of them.
//!
//! Plans are checked by code, not trusted: a plan must make a falsifiable
//! prediction, cite real history, and not repeat what was already falsified or
//! measured. The rejection message names the rule and the fix because the
//! reader may be an agent that gets one more try.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::history::IterationRecord;
use crate::knobs::{self, Point};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Axis {
    pub name: String,
    pub direction: String,
    /// The size of the move on this axis, when known (knob steps), so the
    /// oscillation detector can tell bisection from flip-flopping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Plan {
    pub hypothesis: String,
    #[serde(default)]
    pub change: String,
    #[serde(default)]
    pub cites: Vec<u32>,
    #[serde(default)]
    pub axes: Vec<Axis>,
    pub predicted_effect: f64,
    pub predicted_sd: f64,
    #[serde(default)]
    pub knobs: Point,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Pattern {
    pub name: String,
    pub lesson: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LearnResult {
    #[serde(default)]
    pub patterns: Vec<Pattern>,
    #[serde(default)]
    pub falsified: Option<String>,
    #[serde(default)]
    pub next: Option<String>,
    #[serde(default)]
    pub narrative: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub rule: &'static str,
    pub message: String,
}

/// Checks a plan against the rules of DESIGN.md §7.
pub fn validate(
    plan: &Plan,
    history: &[IterationRecord],
    next_iteration: u32,
) -> Result<(), Rejection> {
    if plan.hypothesis.trim().is_empty() {
        return Err(Rejection {
            rule: "hypothesis",
            message: "the plan has no hypothesis: state what you expect to change and why, e.g. \"hypothesis\": \"a 64-wide tile fits L1 and cuts cache misses\"".into(),
        });
    }
    if !plan.predicted_effect.is_finite()
        || !plan.predicted_sd.is_finite()
        || plan.predicted_sd < 0.0
    {
        return Err(Rejection {
            rule: "prediction",
            message: format!(
                "the plan needs a finite predicted_effect and a non-negative predicted_sd (fractions: 0.05 = 5% better); got {} and {}",
                plan.predicted_effect, plan.predicted_sd
            ),
        });
    }
    let known: BTreeSet<u32> = history.iter().map(|r| r.iteration).collect();
    if !known.is_empty() && plan.cites.is_empty() {
        return Err(Rejection {
            rule: "cites",
            message: format!(
                "the plan cites no iteration although history exists: cite the iterations your hypothesis builds on (known: {})",
                summarize_ids(&known)
            ),
        });
    }
    let missing: Vec<u32> = plan
        .cites
        .iter()
        .copied()
        .filter(|c| !known.contains(c) || *c >= next_iteration)
        .collect();
    if !missing.is_empty() {
        return Err(Rejection {
            rule: "cites",
            message: format!(
                "the plan cites iterations that do not exist: {:?}; cite only archived iterations ({})",
                missing,
                summarize_ids(&known)
            ),
        });
    }
    let hyp = normalize(&plan.hypothesis);
    if let Some(r) = history.iter().find(|r| {
        r.falsified.as_deref().map(normalize).as_deref() == Some(hyp.as_str())
            || (r.verdict.is_falsifying() && normalize(&r.hypothesis) == hyp)
    }) {
        return Err(Rejection {
            rule: "falsified",
            message: format!(
                "this hypothesis was already falsified in iteration {}: propose a different change, or a new angle with a different hypothesis",
                r.iteration
            ),
        });
    }
    if !plan.knobs.is_empty() {
        let k = knobs::key(&plan.knobs);
        if let Some(r) = history.iter().find(|r| {
            !r.knobs.is_empty()
                && knobs::key(&r.knobs) == k
                && r.verdict.was_measured()
                && !r.base_failed
        }) {
            return Err(Rejection {
                rule: "repeat",
                message: format!(
                    "the knob point {k} was already evaluated in iteration {}: choose an unevaluated point",
                    r.iteration
                ),
            });
        }
    }
    Ok(())
}

fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn summarize_ids(ids: &BTreeSet<u32>) -> String {
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}..{b}"),
        (Some(a), _) => a.to_string(),
        _ => "none".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brief::KnobValue;
    use crate::history::{IterationRecord, Verdict};

    fn rec(i: u32, verdict: Verdict, hyp: &str, tile: Option<i64>) -> IterationRecord {
        let mut r = IterationRecord::new_for_test(i, verdict);
        r.hypothesis = hyp.into();
        if let Some(t) = tile {
            r.knobs.insert("TILE".into(), KnobValue::Int(t));
        }
        r
    }

    fn plan(hyp: &str, cites: Vec<u32>, tile: i64) -> Plan {
        let mut knobs = Point::new();
        knobs.insert("TILE".into(), KnobValue::Int(tile));
        Plan {
            hypothesis: hyp.into(),
            cites,
            predicted_effect: 0.05,
            predicted_sd: 0.02,
            knobs,
            ..Plan::default()
        }
    }

    #[test]
    fn accepts_a_good_plan() {
        let h = vec![rec(0, Verdict::Baseline, "baseline", Some(16))];
        assert_eq!(validate(&plan("bigger tile", vec![0], 32), &h, 1), Ok(()));
    }

    #[test]
    fn rejects_each_rule() {
        let h = vec![
            rec(0, Verdict::Baseline, "baseline", Some(16)),
            rec(1, Verdict::Discard, "tile 64 helps", Some(64)),
        ];
        let rule = |p: Plan| validate(&p, &h, 2).unwrap_err().rule;
        assert_eq!(rule(plan("", vec![0], 32)), "hypothesis");
        assert_eq!(rule(plan("x", vec![], 32)), "cites");
        assert_eq!(rule(plan("x", vec![7], 32)), "cites");
        assert_eq!(rule(plan("Tile  64 helps", vec![1], 32)), "falsified");
        assert_eq!(rule(plan("y", vec![1], 64)), "repeat");
        let mut p = plan("z", vec![0], 32);
        p.predicted_effect = f64::NAN;
        assert_eq!(rule(p), "prediction");
    }
}
