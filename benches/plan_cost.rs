//! What one plan of the builtin search costs as a Brief's history grows.
//!
//! `cargo bench --bench plan_cost -- 50 400 800 1600`
//!
//! For each length n: a history of n discards at seeded points of a
//! 3-knob space (two 101-value ints and a choice), each measured by one
//! run as the screen measures one, then one `builtin::plan` timed (a
//! stalled search: the model's fit, the run-time model's (each run is
//! timed) and the sweep). The model is fitted to
//! at most `surrogate::MAX_OBSERVATIONS` decisions, so past that the time
//! is flat; this program run against the code before the cap (167c7e0,
//! with its `Comparison` written out) printed 14 ms at 50, 0.7 s at 400,
//! 3.4 s at 800.

use ooda::testing::brief::Brief;
use ooda::testing::brief::Direction;
use ooda::testing::brief::points::{self, Point};
use ooda::testing::driver::builtin;
use ooda::testing::eval::screen;
use ooda::testing::model::{IterationRecord, RunSeconds, Verdict};
use ooda::testing::stats::SplitMix64;
use std::path::Path;
use std::time::Instant;

fn main() {
    // The same night for every n: seeded points, a small noise.
    let text = "---\nmetric:\n  name: m\n  command: ./bench\n  direction: minimize\nknobs:\n  X: { int: [0, 100], default: 50 }\n  Y: { int: [0, 100], default: 50 }\n  MODE: { choice: [off, on], default: off }\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
    let b = Brief::parse(Path::new("briefs/x.md"), text).expect("the benchmark's Brief parses");
    let start = points::initial_point(&Point::new(), &b.knobs);
    let mut sizes: Vec<u32> = std::env::args()
        .skip(1)
        // What `cargo bench` passes to a benchmark without a harness.
        .filter(|a| a != "--bench")
        .map(|a| a.parse().expect("history lengths are whole numbers"))
        .collect();
    if sizes.is_empty() {
        sizes = vec![50, 400, 800, 1600];
    }
    for n in sizes {
        let mut rng = SplitMix64::new(n as u64);
        let mut base = IterationRecord::new(0, Verdict::Baseline);
        base.knobs = start.clone();
        let mut h = vec![base];
        for i in 1..=n {
            let mut r = IterationRecord::new(i, Verdict::Discard);
            let mut p = Point::new();
            p.insert(
                "X".into(),
                ooda::testing::brief::KnobValue::Int((rng.next_u64() % 101) as i64),
            );
            p.insert(
                "Y".into(),
                ooda::testing::brief::KnobValue::Int((rng.next_u64() % 101) as i64),
            );
            p.insert(
                "MODE".into(),
                ooda::testing::brief::KnobValue::Str(
                    if rng.next_u64().is_multiple_of(2) {
                        "on"
                    } else {
                        "off"
                    }
                    .into(),
                ),
            );
            r.knobs = p;
            // A screened sweep point's one run, against a base of 100.
            let run = 100.0 * (0.01 * rng.normal()).exp();
            let mut m = screen::screen(Direction::Minimize, &[100.0; 12], &[run], 0.01, 0.01, 0.05)
                .comparison;
            // Timed as the runner times it (a run takes its value in
            // milliseconds), so the run-time model is fitted too; the
            // first decision times a base run as well.
            m.seconds = Some(RunSeconds {
                base: (i == 1).then_some(0.1),
                cand: run / 1000.0,
            });
            r.measured = Some(m);
            h.push(r);
        }
        let t = Instant::now();
        let _ = builtin::plan(&b, &h, &start, 1, n + 1, 0.01, 0.01, 10, 100);
        println!(
            "{n} observations: plan {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
}
