//! The builtin pipeline-analyzer.
//!
//! It runs when the loop plateaus: it looks only at
//! statistics of the archive (its isolated context is "history stats") and
//! writes a short report that is archived with the iteration (its
//! `analysis`) and handed to the next PLAN through ORIENT. Being plain
//! code, it states facts, not guesses.

use crate::archive::history::{IterationRecord, Verdict, View};
use crate::error::Result;
use crate::model::AlarmKind;

/// The latest pipeline-analyzer report in the archive, with the iteration
/// whose CHECK wrote it: the newest row with a report is read in full.
pub fn latest_report_in(history: View) -> Result<Option<(u32, String)>> {
    let Some(r) = history
        .flagged(crate::archive::history::fact::flag::ANALYSIS)
        .next()
        .transpose()?
    else {
        return Ok(None);
    };
    Ok(r.analysis_report().map(|t| (r.iteration, t)))
}

/// What the runner's analysis says to the next PLAN: the latest analyzer
/// report and the alarms raised after the last iteration.
pub fn notes_for_plan(history: View) -> Result<Option<String>> {
    let mut parts = Vec::new();
    if let Some((at, report)) = latest_report_in(history)? {
        parts.push(format!(
            "Pipeline-analyzer report (after iteration {at}): {report}"
        ));
    }
    if let Some(last) = history.last() {
        for a in last.alarms.iter().filter(|a| a.kind != AlarmKind::Plateau) {
            parts.push(format!(
                "Alarm after iteration {}: {} — {}",
                last.iteration, a.kind, a.evidence
            ));
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n")))
}

/// What fires the analyzer for the iteration after `history`: iteration 1,
/// a plateau or an anomaly found by the last CHECK, or the noise of the
/// last measurement far above the history's.
pub fn triggers(
    history: &[IterationRecord],
    iteration: u32,
) -> Vec<crate::subagents::definition::Trigger> {
    use crate::subagents::definition::Trigger;
    let mut out = Vec::new();
    if iteration == 1 {
        out.push(Trigger::FirstIteration);
    }
    if let Some(last) = history.last().filter(|r| r.iteration > 0) {
        if last.alarms.iter().any(|a| a.kind == AlarmKind::Plateau) {
            out.push(Trigger::Plateau);
        }
        if last.alarms.iter().any(|a| a.kind != AlarmKind::Plateau) {
            out.push(Trigger::Anomaly);
        }
        if last.measured.as_ref().is_some_and(|m| m.noise_changed) {
            out.push(Trigger::NoiseChanged);
        }
    }
    out
}

/// The builtin pipeline-analyzer's report: what each axis has yielded.
pub fn analyze(history: &[IterationRecord], theta1: f64) -> String {
    let mut ledger = crate::archive::history::ledger::Ledger::default();
    for r in history {
        ledger.fold(r);
    }
    let failures = history.iter().filter(|r| r.verdict.is_failure()).count();
    report(&ledger, failures, theta1)
}

/// [`analyze`] of the archive a runner holds: the directions from its
/// ledger, the failures from its rows.
pub fn analyze_in(history: View, theta1: f64) -> Result<String> {
    analyze_with(history, None, theta1)
}

/// [`analyze_in`] with `also`, an iteration not archived yet, counted on.
pub fn analyze_with(history: View, also: Option<&IterationRecord>, theta1: f64) -> Result<String> {
    let mut ledger = history.ledger()?;
    let mut failures = history
        .facts()
        .iter()
        .filter(|f| f.verdict.is_some_and(Verdict::is_failure))
        .count();
    if let Some(r) = also {
        ledger.to_mut().fold(r);
        failures += usize::from(r.verdict.is_failure());
    }
    Ok(report(&ledger, failures, theta1))
}

fn report(
    ledger: &crate::archive::history::ledger::Ledger,
    failures: usize,
    theta1: f64,
) -> String {
    let mut lines: Vec<String> = ledger
        .axes()
        .iter()
        .map(|(name, a)| {
            let mean = if a.measured == 0 {
                0.0
            } else {
                a.effect_sum / a.measured as f64
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
    format!(
        "pipeline-analyzer (builtin): gains below θ₁ = {:.1}% cannot be seen; {failures} failed iteration(s); by axis — {}. Directions whose tries were all discarded are exhausted at their current step size: try a new axis or a smaller step.",
        theta1 * 100.0,
        lines.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::agent::answers::Axis;

    #[test]
    fn the_analyzer_fires_on_iteration_1_a_plateau_an_anomaly_and_changed_noise() {
        use crate::model::{Alarm, Comparison};
        use crate::subagents::definition::Trigger;
        let base = IterationRecord::new(0, Verdict::Baseline);
        assert_eq!(
            triggers(std::slice::from_ref(&base), 1),
            [Trigger::FirstIteration]
        );
        let mut last = IterationRecord::new(4, Verdict::Discard);
        assert!(triggers(&[base.clone(), last.clone()], 5).is_empty());
        last.alarms = vec![
            Alarm::yellow(AlarmKind::Plateau, "4 without a keep".into()),
            Alarm::yellow(AlarmKind::IdenticalCandidate, "same tree".into()),
        ];
        last.measured = Some(Comparison {
            pairs: Vec::new(),
            base_median: 1.0,
            cand_median: 1.0,
            effect: 0.0,
            ci: (0.0, 0.0),
            p: 0.5,
            looks: 1,
            theta1: 0.01,
            alpha: 0.05,
            delta0: 0.0,
            rule: String::new(),
            alpha_look: 0.05,
            s_h: 0.01,
            noise_changed: true,
            d_mean: 0.0,
            d_ci: (0.0, 0.0),
        });
        assert_eq!(
            triggers(&[base, last], 5),
            [Trigger::Plateau, Trigger::Anomaly, Trigger::NoiseChanged]
        );
    }

    #[test]
    fn the_next_plan_gets_the_report_and_the_last_alarms() {
        use crate::model::Alarm;
        // The archive holds iterations 0.. in order: the rest are discards.
        let notes = |h: &[IterationRecord]| {
            let last = h.last().map_or(0, |r| r.iteration);
            let all: Vec<IterationRecord> = (0..=last)
                .filter(|_| !h.is_empty())
                .map(|i| {
                    h.iter()
                        .find(|r| r.iteration == i)
                        .cloned()
                        .unwrap_or_else(|| IterationRecord::new(i, Verdict::Discard))
                })
                .collect();
            notes_for_plan(crate::archive::history::History::of(all).view()).unwrap()
        };
        assert_eq!(notes(&[]), None);
        let mut a = IterationRecord::new(4, Verdict::Discard);
        a.alarms = vec![Alarm::yellow(
            AlarmKind::Plateau,
            "4 iterations without a keep; pipeline-analyzer (builtin): axis X up".into(),
        )];
        a.analysis = Some("pipeline-analyzer (builtin): axis X up".into());
        let mut b = IterationRecord::new(5, Verdict::Discard);
        b.alarms = vec![Alarm::yellow(AlarmKind::NoiseChanged, "s²/s_h² = 9".into())];
        let text = notes(&[a.clone(), b.clone()]).unwrap();
        assert!(
            text.contains("(after iteration 4): pipeline-analyzer (builtin): axis X up"),
            "{text}"
        );
        assert!(text.contains("Alarm after iteration 5: noise_changed — s²/s_h² = 9"));
        // An archive from before `analysis` existed: read from the alarm.
        a.analysis = None;
        let held: Vec<IterationRecord> = (0..4)
            .map(|i| IterationRecord::new(i, Verdict::Discard))
            .chain([a, b])
            .collect();
        assert_eq!(
            latest_report_in(crate::archive::history::History::of(held).view()).unwrap(),
            Some((4, "pipeline-analyzer (builtin): axis X up".into()))
        );
    }

    #[test]
    fn reports_each_axis() {
        let mut r = IterationRecord::new(1, Verdict::Discard);
        r.axes = vec![Axis {
            name: "TILE".into(),
            direction: "up".into(),
            step: Some(0.25),
        }];
        let text = analyze(&[IterationRecord::new(0, Verdict::Baseline), r], 0.02);
        assert!(text.contains("TILE up: 1 tried, 0 kept"), "{text}");
        assert!(text.contains("θ₁ = 2.0%"));
    }
}
