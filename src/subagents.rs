//! Builtin subagents (DESIGN.md §8) that need no model.
//!
//! The pipeline-analyzer runs when the loop plateaus: it looks only at
//! statistics of the archive (its isolated context is "history stats") and
//! writes a short report that is archived with the iteration and handed to
//! the next PLAN. Being plain code, it states facts, not guesses.

use std::collections::BTreeMap;

use crate::history::{IterationRecord, Verdict};

/// The builtin pipeline-analyzer's report: what each axis has yielded.
pub fn analyze(history: &[IterationRecord], theta1: f64) -> String {
    #[derive(Default)]
    struct Axis {
        tries: usize,
        keeps: usize,
        worse: usize,
        effects: Vec<f64>,
    }
    let mut axes: BTreeMap<String, Axis> = BTreeMap::new();
    for r in history.iter().filter(|r| r.verdict != Verdict::Baseline) {
        for a in &r.axes {
            let e = axes
                .entry(format!("{} {}", a.name, a.direction))
                .or_default();
            e.tries += 1;
            e.keeps += usize::from(r.verdict == Verdict::Keep);
            if let Some(m) = &r.measured {
                e.effects.push(m.effect);
                e.worse += usize::from(m.ci.1 < 0.0);
            }
        }
    }
    let mut lines: Vec<String> = axes
        .iter()
        .map(|(name, a)| {
            let mean = if a.effects.is_empty() {
                0.0
            } else {
                a.effects.iter().sum::<f64>() / a.effects.len() as f64
            };
            format!(
                "{name}: {} tried, {} kept, {} significantly worse, mean effect {:+.1}%",
                a.tries,
                a.keeps,
                a.worse,
                mean * 100.0
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push("no axis has been declared yet".into());
    }
    let failures = history.iter().filter(|r| r.verdict.is_failure()).count();
    format!(
        "pipeline-analyzer (builtin): gains below θ₁ = {:.1}% cannot be seen; {failures} failed iteration(s); by axis — {}. Directions whose tries were all discarded are exhausted at their current step size: try a new axis or a smaller step.",
        theta1 * 100.0,
        lines.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Axis;

    #[test]
    fn reports_each_axis() {
        let mut r = IterationRecord::new_for_test(1, Verdict::Discard);
        r.axes = vec![Axis {
            name: "TILE".into(),
            direction: "up".into(),
            step: Some(0.25),
        }];
        let text = analyze(
            &[IterationRecord::new_for_test(0, Verdict::Baseline), r],
            0.02,
        );
        assert!(text.contains("TILE up: 1 tried, 0 kept"), "{text}");
        assert!(text.contains("θ₁ = 2.0%"));
    }
}
