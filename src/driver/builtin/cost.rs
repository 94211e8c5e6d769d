//! What measuring a point costs, predicted from the run times on record.
//!
//! Why: a night is hours, not a count of runs. Far corners of a knob space
//! are often several times slower to run than the best (SQLite's were 1.1
//! to 2.8 s a run against 0.4 s near its best), and a search that ranks
//! points by expected improvement alone spends its hours there: the sweep
//! screened 81 to 89 far points a night, most of them slow. Ranking by
//! expected improvement *per second* (the standard cost-aware acquisition)
//! asks the same question of every point: what does it promise for the
//! time it takes to find out?
//!
//! Run times are modelled as the effect is: a Gaussian process
//! ([`Surrogate`]) over the differences of log seconds between each
//! decision's candidate and its base (a screen's one run against the
//! base's own runs on record). Each decision's runs are timed anyway
//! (`Comparison::seconds`), so the model costs nothing to feed; where
//! nothing was timed (an archive from before it was kept), or run times do
//! not differ enough to matter ([`MATERIAL_SECONDS`], [`MATERIAL_RATIO`]),
//! every point costs the same and the search ranks as it did without it.

use std::collections::BTreeMap;

use crate::archive::history::IterationRecord;
use crate::brief::Knob;
use crate::brief::points::{self, Point};
use crate::driver::builtin::surrogate::{Anchor, Observation, Surrogate};

/// The spread of one run's log seconds that a median of `n` is given:
/// run times vary less than most metrics, but a time metric's own noise
/// is in them.
const RUN_SD: f64 = 0.1;
/// The newest timed decisions the model is fitted to. Run times need far
/// fewer than effects do (they vary smoothly and little between runs), and
/// a fit's time is cubic in them: at the effect model's 400 a plan would
/// cost twice its time, at this many a small share of it.
const OBSERVATIONS: usize = 100;
/// Run times are planned with only when they matter: some timed run took
/// this long at least (median of a decision's runs, or a screen's run)...
const MATERIAL_SECONDS: f64 = 1.0;
/// ...and this many times as long as another. Below either, what runs take
/// is a small part of an iteration's cost (70 ms beyond its runs, 6 ms
/// around each) and their measured differences are mostly the machine's
/// jitter, or a scheduler's start-up (`srun`): planning around them would
/// make the search's choices depend on that jitter, and two nights of one
/// Brief, or a night run locally and through Slurm, would differ.
const MATERIAL_RATIO: f64 = 2.0;
/// The most a prediction may say one point costs beside another: a model
/// fitted to a few runs is not trusted past this.
const MAX_RATIO: f64 = 20.0;

/// The run-time model of one plan: predictions against the best point.
pub struct Cost<'a> {
    fit: Option<(Surrogate<'a>, Anchor)>,
}

impl<'a> Cost<'a> {
    /// The model of `history`'s timed runs, with predictions relative to a
    /// run of `best`.
    pub fn of(knobs: &'a [Knob], history: &[IterationRecord], best: &Point) -> Cost<'a> {
        if !material(history) {
            return Cost { fit: None };
        }
        let model = Surrogate::fit_newest(knobs, observations(history), OBSERVATIONS);
        let anchor = model.anchor(best);
        Cost {
            fit: Some((model, anchor)),
        }
    }

    /// A run of `p` in runs of the best (1 where nothing was timed).
    pub fn run(&self, p: &Point) -> f64 {
        match &self.fit {
            None => 1.0,
            Some((model, anchor)) => model
                .difference(p, anchor)
                .mean
                .exp()
                .clamp(1.0 / MAX_RATIO, MAX_RATIO),
        }
    }

    /// A pair measuring `p` (one run of it, one of the best) in pairs at
    /// the best.
    pub fn pair(&self, p: &Point) -> f64 {
        (1.0 + self.run(p)) / 2.0
    }
}

/// Whether the run times on record differ enough to plan with
/// ([`MATERIAL_SECONDS`], [`MATERIAL_RATIO`]).
fn material(history: &[IterationRecord]) -> bool {
    let timed = history
        .iter()
        .filter_map(|r| r.measured.as_ref()?.seconds)
        .flat_map(|s| [s.base, Some(s.cand)])
        .flatten()
        .filter(|t| *t > 0.0 && t.is_finite());
    let (lo, hi) = timed.fold((f64::INFINITY, 0.0f64), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    hi >= MATERIAL_SECONDS && hi >= MATERIAL_RATIO * lo
}

/// Every timed decision as an observation of ln(seconds of a candidate run)
/// − ln(seconds of a base run). A screen timed no base run: its base's
/// seconds are those last timed at that point, on either side, under the
/// same Brief (an edited Brief may time another metric command).
fn observations(history: &[IterationRecord]) -> Vec<Observation> {
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    let mut out = Vec::new();
    for (r, base) in history.iter().zip(super::base_points(history)) {
        let Some(m) = &r.measured else { continue };
        let Some(secs) = m.seconds else { continue };
        let key = |p: &Point| format!("{}\u{0}{}", r.brief_hash, points::key(p));
        let base_key = key(&base);
        let timed_base = secs.base.filter(|b| *b > 0.0 && b.is_finite());
        if let Some(b) = timed_base {
            last.insert(base_key.clone(), b);
        }
        let Some(&b) = last.get(&base_key) else {
            continue;
        };
        if r.knobs.is_empty() || !(secs.cand > 0.0 && secs.cand.is_finite()) {
            continue;
        }
        last.insert(key(&r.knobs), secs.cand);
        // A difference of two sides' medians: each side's spread counts. A
        // screen's base is one earlier median, read as one run's worth.
        let n = m.pairs.len().max(1) as f64;
        let n_base = if timed_base.is_some() { n } else { 1.0 };
        out.push(Observation {
            cand: r.knobs.clone(),
            base,
            d: secs.cand.ln() - b.ln(),
            var: RUN_SD * RUN_SD * (1.0 / n + 1.0 / n_base),
            iteration: r.iteration,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brief::{KnobSpec, KnobValue};
    use crate::model::{Comparison, RunSeconds, Verdict};

    fn knobs() -> Vec<Knob> {
        vec![Knob {
            name: "N".into(),
            spec: KnobSpec::Int {
                lo: 0,
                hi: 100,
                log: false,
            },
            default: Some(KnobValue::Int(0)),
        }]
    }

    fn at(n: i64) -> Point {
        Point::from([("N".to_string(), KnobValue::Int(n))])
    }

    /// A night where a run takes `1 + n/10` seconds at N = n.
    fn timed(i: u32, n: i64, screen: bool) -> IterationRecord {
        let mut r = crate::eval::measured_for_test(
            i,
            Verdict::Discard,
            crate::model::Direction::Minimize,
            (1.0, 1.0),
            0.0,
            0.1,
            if screen { 1 } else { 6 },
        );
        r.knobs = at(n);
        r.screen = screen;
        let m: &mut Comparison = r.measured.as_mut().expect("measured");
        m.seconds = Some(RunSeconds {
            base: (!screen).then_some(1.0),
            cand: 1.0 + n as f64 / 10.0,
        });
        r
    }

    fn baseline() -> IterationRecord {
        let mut r = IterationRecord::new(0, Verdict::Baseline);
        r.knobs = at(0);
        r
    }

    #[test]
    fn a_point_near_slow_runs_is_predicted_slow() {
        let k = knobs();
        let history = vec![baseline(), timed(1, 50, false), timed(2, 100, true)];
        let cost = Cost::of(&k, &history, &at(0));
        // 6 s and 11 s were timed at 50 and 100, against 1 s at the start.
        assert!(
            (cost.run(&at(50)) - 6.0).abs() < 1.0,
            "{}",
            cost.run(&at(50))
        );
        assert!(cost.run(&at(100)) > 8.0, "{}", cost.run(&at(100)));
        assert!(cost.run(&at(0)) < 1.2, "{}", cost.run(&at(0)));
        // A pair is one run of the point and one of the best: at the best
        // itself, one pair's worth; at N = 100, over half a slow run more.
        assert!(
            (cost.pair(&at(0)) - 1.0).abs() < 0.1,
            "{}",
            cost.pair(&at(0))
        );
        assert!(cost.pair(&at(100)) > 4.5, "{}", cost.pair(&at(100)));
    }

    #[test]
    fn run_times_alike_or_short_are_not_planned_with() {
        // Jitter of fast runs (a local test, a scheduler's start-up) must
        // not steer the search: under a second, or within twice each
        // other, every point costs the same.
        let k = knobs();
        for (base, cand) in [(0.01, 0.09), (1.0, 1.9)] {
            let mut r = timed(1, 100, false);
            r.measured.as_mut().expect("measured").seconds = Some(RunSeconds {
                base: Some(base),
                cand,
            });
            let cost = Cost::of(&k, &[baseline(), r], &at(0));
            assert_eq!(cost.run(&at(100)), 1.0, "{base} s against {cand} s");
        }
    }

    #[test]
    fn nothing_timed_costs_the_same_everywhere() {
        let k = knobs();
        let mut untimed = timed(1, 50, false);
        untimed.measured.as_mut().expect("measured").seconds = None;
        let cost = Cost::of(&k, &[baseline(), untimed], &at(0));
        assert_eq!(cost.run(&at(100)), 1.0);
        assert_eq!(cost.pair(&at(37)), 1.0);
    }

    #[test]
    fn a_screen_without_a_timed_base_before_it_is_not_read() {
        // A screen is compared with the base's runs on record; with no base
        // run timed yet there is nothing to compare its seconds with.
        let k = knobs();
        let cost = Cost::of(&k, &[baseline(), timed(1, 100, true)], &at(0));
        assert_eq!(cost.run(&at(100)), 1.0);
    }

    #[test]
    fn a_screen_is_not_read_against_a_base_timed_under_another_brief() {
        // The base at N = 0 was timed under the Brief before an edit (its
        // metric command may have been another): a screen after the edit
        // has no base run of its own Brief to compare with.
        let mut before = timed(1, 50, false);
        before.brief_hash = "before".into();
        let mut after = timed(2, 100, true);
        after.brief_hash = "after".into();
        assert_eq!(
            observations(&[baseline(), before.clone(), after.clone()]).len(),
            1
        );
        // Under one Brief, the screen is read against the base's last run.
        after.brief_hash = "before".into();
        assert_eq!(observations(&[baseline(), before, after]).len(), 2);
    }
}
