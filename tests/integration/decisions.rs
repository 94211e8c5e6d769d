//! The eval-runner end to end: what is kept is really better.

use crate::test::{Test, bench, knob_brief};
use ooda::history::Verdict;

/// The full sequential procedure (looks at 3/5/8/12) and a 10-pair calibration.
const FULL_CONFIG: &str = "defaults:\n  pairs: 12\n  calibration_pairs: 10\n  stall_after: 1000\n";

/// A metric that ignores every knob: seeded uniform ±2% noise around 100.
fn noop_bench() -> String {
    bench("100", 0.04)
}

/// 20% faster for any X other than the default 10, uniform ±1% noise.
fn gain_bench() -> String {
    bench("(x == 10) ? 100 : 80", 0.02)
}

#[test]
fn no_op_candidates_are_rarely_kept() {
    let t = Test::new();
    t.write("ooda.yaml", FULL_CONFIG);
    t.script("bench.sh", &noop_bench());
    t.brief("noop", &knob_brief("budget: { iterations: 40 }\n"));
    t.commit("noop");
    t.ooda(&["run", "noop"]).expect(4);
    let records: Vec<_> = (1..=40).map(|i| t.record("noop", i)).collect();
    let kept = records
        .iter()
        .filter(|r| r.verdict == Verdict::Keep)
        .count();
    // α = 0.05 per decision: about 2 expected; 7 or more has probability
    // about 1.4% under a correct rule (binomial), so this bound is a real test.
    assert!(kept <= 6, "{kept} of 40 no-op candidates kept");
    // Early discards save runs: the average decision uses fewer than 12 pairs.
    let pairs: usize = records
        .iter()
        .map(|r| r.measured.as_ref().unwrap().pairs.len())
        .sum();
    assert!(pairs < 40 * 12, "{pairs} pairs for 40 decisions");
    for r in &records {
        let m = r.measured.as_ref().unwrap();
        assert!(
            [3, 5, 8, 12].contains(&m.pairs.len()),
            "decisions happen at looks only: {}",
            m.pairs.len()
        );
        assert!(
            m.alpha_look > 0.01 && m.alpha_look < 0.03,
            "α′ = {}",
            m.alpha_look
        );
    }
}

#[test]
fn a_twenty_percent_gain_is_kept_early_and_confirmed() {
    let t = Test::new();
    t.write("ooda.yaml", FULL_CONFIG);
    t.script("bench.sh", &gain_bench());
    t.brief("gain", &knob_brief("budget: { iterations: 1 }\n"));
    t.commit("gain");
    t.ooda(&["run", "gain"]).expect(4);
    let r = t.record("gain", 1);
    assert_eq!(r.verdict, Verdict::Keep, "{}", r.reason);
    let m = r.measured.unwrap();
    assert_eq!(
        m.pairs.len(),
        3,
        "a 20% gain in 1% noise is clear at the first look"
    );
    assert!((m.effect - 0.2).abs() < 0.02, "{}", m.effect);
    assert!(r.reason.starts_with("kept: +"), "{}", r.reason);
    // The end of the run confirms the cumulative gain in fresh pairs.
    let c = r
        .confirmation
        .expect("a confirmation at the end of the run");
    assert!(c.pairs.len() >= 12);
    assert!(c.ci.0 > 0.1, "{:?}", c.ci);
    let summary = t.read("iterations/gain/summary.md");
    assert!(summary.contains("**confirmed gain**"), "{summary}");
    assert!(
        t.read("iterations/gain/iter-001.md")
            .contains("## Confirmation")
    );
}

#[test]
fn the_goal_is_reached_only_through_the_confirmation() {
    let t = Test::new();
    t.write("ooda.yaml", FULL_CONFIG);
    t.script("bench.sh", &gain_bench());
    t.brief(
        "goal",
        &knob_brief("budget: { iterations: 10 }\n")
            .replace("  timeout: 20s\n", "  timeout: 20s\n  target: 85\n"),
    );
    t.commit("goal");
    let r = t.ooda(&["run", "goal"]).expect(0);
    assert!(r.stdout.contains("goal_reached"), "{}", r.stdout);
    let last = t.record("goal", 1);
    let stop = last.stop.unwrap();
    assert!(stop.detail.contains("confirmation test"), "{}", stop.detail);
    assert!(last.confirmation.unwrap().best_median <= 85.0);
    assert_eq!(t.iterations("goal"), vec![0, 1]);
}
