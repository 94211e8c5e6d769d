//! A synthetic archive: a plausible night of any length, for the
//! benchmarks that measure the archive and the PLAN prompt at 10,000
//! iterations, and for the tests that need a long history.

use crate::model::{IterationRecord, Verdict};

/// A synthetic history for the prompt-size benchmark and its test: `n`
/// iterations of a plausible night (mostly discards, some keeps and
/// failures), every discard with its own falsified statement and a pattern
/// name every few iterations.
pub fn synthetic_history(n: u32, seed: u64) -> Vec<IterationRecord> {
    use crate::model::{Axis, Calibration, Comparison, Pattern, Prediction};
    let mut rng = crate::stats::SplitMix64::new(seed);
    let mut base = IterationRecord::new(0, Verdict::Baseline);
    base.hypothesis = "baseline".into();
    // Built through serde so that fields the eval-runner adds (with their
    // defaults, as archived files need) do not break the benchmark.
    base.calibration = serde_json::from_value::<Calibration>(serde_json::json!({
        "pairs": [], "median": 120.0, "run_sd": 0.012, "noise_sd": 0.015,
        "mean_d": 0.0, "theta1": 0.0108, "pairs_per_decision": 5
    }))
    .ok();
    let areas = [
        "tokenizer",
        "parser",
        "allocator",
        "hash table",
        "I/O buffer",
        "scheduler",
        "cache",
        "serializer",
        "regex engine",
        "string interner",
    ];
    let moves = [
        "pre-size",
        "inline",
        "batch",
        "unroll",
        "memoize",
        "vectorize",
        "pool",
        "prefetch",
        "shrink",
        "reorder",
    ];
    let mut out = vec![base];
    for i in 1..=n {
        let roll = rng.next_f64();
        let verdict = if roll < 0.12 {
            Verdict::Keep
        } else if roll < 0.80 {
            Verdict::Discard
        } else if roll < 0.92 {
            Verdict::Invalid
        } else if roll < 0.97 {
            Verdict::Crash
        } else {
            Verdict::Blocked
        };
        let area = areas[(rng.next_u64() % areas.len() as u64) as usize];
        let mv = moves[(rng.next_u64() % moves.len() as u64) as usize];
        let mut r = IterationRecord::new(i, verdict);
        r.hypothesis = format!(
            "{mv} the {area} hot path (variant {i}) to cut time spent in {area} by avoiding repeated work per call"
        );
        r.change = format!("src/{}.rs: {mv} the inner loop", area.replace(' ', "_"));
        r.cites = vec![i - 1, i / 2];
        r.axes = vec![Axis {
            name: area.into(),
            direction: if i % 2 == 0 { "up" } else { "down" }.into(),
            step: None,
        }];
        r.predicted = Some(Prediction {
            effect: 0.03,
            sd: 0.02,
        });
        r.reason = match verdict {
            Verdict::Keep => "kept: p = 0.004 ≤ α′".into(),
            Verdict::Discard => "discarded: no gain beyond θ₁".into(),
            Verdict::Invalid => "guard `cargo test` failed".into(),
            Verdict::Crash => "the benchmark exited with code 101".into(),
            _ => "changed protected path bench.sh".into(),
        };
        if matches!(verdict, Verdict::Keep | Verdict::Discard) {
            let effect = if verdict == Verdict::Keep {
                0.04
            } else {
                -0.005
            };
            r.measured = serde_json::from_value::<Comparison>(serde_json::json!({
                "pairs": [], "base_median": 100.0, "cand_median": 100.0 * (1.0 - effect),
                "effect": effect, "ci": [effect - 0.02, effect + 0.02],
                "p": if verdict == Verdict::Keep { 0.004 } else { 0.6 },
                "looks": 1, "theta1": 0.0108, "alpha": 0.05, "delta0": 0.0, "rule": "paired t"
            }))
            .ok();
        }
        if verdict == Verdict::Discard {
            r.discard = Some(crate::model::DiscardKind::Futile);
            r.falsified = Some(format!(
                "{mv} on the {area} (variant {i}) does not help: the {area} is not the bottleneck at this size"
            ));
        }
        if i % 7 == 0 {
            r.patterns = vec![Pattern {
                name: format!("{mv}-{area}-{}", i % 50),
                lesson: format!("{mv} on the {area} pays off only when the working set exceeds L2"),
            }];
        }
        r.next = Some("try the next hot spot in the profile".into());
        out.push(r);
    }
    out
}
