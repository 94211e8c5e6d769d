//! The screen: one run of an exploratory candidate (two after a near miss)
//! before any paired test.
//!
//! A knob search that has run out of ideas its model believes in must still
//! look at the parts of the space it has not measured: a narrow win (one
//! setting of a choice knob in one small region) is invisible to a smooth
//! model until a point lands in it. Measuring each such point with the full
//! sequential test costs 6 to 48 runs, so a night sees a dozen of them and
//! stops; a one-run screen sees thirty for the same runs. The screen runs
//! the candidate once and compares it with the median of the base's most
//! recent runs from the archive; only a run past `SCREEN_Z` standard
//! deviations of one run (or, after a near miss, two runs whose mean is
//! past `SCREEN_Z` standard deviations of a mean of two) goes on to the
//! paired test, which starts afresh (the screening runs are not among its
//! pairs, so selecting on them cannot bias a keep: the false-keep rate of
//! each test stays α; the sweep adds tests, about one in eleven of its
//! points on flat ground, each at α).
//!
//! The reference is older base runs on record, not a fresh pair, which
//! makes a screen one run instead of two: in a prototype of the search
//! benchmark the plateau at 15% noise reached 69.0% of the optimum with a
//! one-pair screen against 74.6% with this one. Drift of the machine since those runs shifts every
//! screen of a sweep alike, which can hide a gain or send flat points to
//! the full test; neither can make a keep, which only the paired test
//! decides.
//!
//! A screened-out point is not falsified: one unpaired run against older
//! base runs says nothing reliable about a small gain, so it is archived as
//! `discard` of kind `screened`, may be proposed again, and counts neither
//! towards a stall nor towards a red light.

use crate::model::{Comparison, Direction, IterationRecord, Pair, Verdict};
use crate::stats;

/// How many standard deviations of one run the screening run must beat the
/// base's median by. Chosen in a prototype of the search benchmark
/// (plateau, 20 seeds, 40 sweep points; not kept as a command): at 15%
/// noise 1.0 reached 71.0% of the optimum, 1.5 74.6%, 2.0 69.9%; at 3%
/// the three were within 1.5 points. 1.0 lets about a sixth of flat
/// points (a normal tail) on to a full test of up to 48 runs.
pub const SCREEN_Z: f64 = 1.5;
/// A first run past this many standard deviations of one run, short of
/// [`SCREEN_Z`], is a near miss: a second run decides, the two runs' mean
/// held to [`SCREEN_Z`] standard deviations of a mean of two.
///
/// Why: one run passes a point whose true gain is at the bar only half the
/// time, and a screened-out point's neighbourhood counts as explored, so
/// the sweep does not come back to it. On the search benchmark's plateau at
/// 15% noise, 22 of the 74 runs that landed in the well (gain 15% to 35%)
/// were screened out, and most of those nights never found it again. On
/// flat ground a second run is taken after about one screen in six, and
/// about one in forty more passes (to a full test at α: no keep is made by
/// a screen).
pub const NEAR_MISS_Z: f64 = 0.75;
/// The most recent base runs the screening run is compared with.
pub const SCREEN_REFERENCE: usize = 12;
/// Fewer base runs than this on record: no screen, the full test.
pub const SCREEN_MIN_REFERENCE: usize = 3;

/// What a screen found.
#[derive(Debug, Clone, PartialEq)]
pub struct Screened {
    /// The run beat the bar: measure in full.
    pub passed: bool,
    /// The screening runs as a comparison of one pair each (base: the
    /// reference's median), for the archive and the surrogate.
    pub comparison: Comparison,
    pub reason: String,
}

/// The base's most recent runs on record, newest first, at most
/// [`SCREEN_REFERENCE`]: the base sides of its decisions since it became
/// the base, then the runs that made it the base (the candidate side of
/// the keep, or the baseline's calibration). Screens add nothing (their
/// base is this median already).
pub fn base_reference(history: &[IterationRecord], base: &str, brief_hash: &str) -> Vec<f64> {
    let mut runs = Vec::new();
    for r in history.iter().rev() {
        if runs.len() >= SCREEN_REFERENCE {
            break;
        }
        // Runs of an earlier version of the Brief may be of another metric
        // command: none of them, nor anything older.
        if r.brief_hash != brief_hash {
            break;
        }
        if r.verdict == Verdict::Baseline {
            if r.base == base
                && let Some(c) = &r.calibration
            {
                runs.extend(c.pairs.iter().rev().flat_map(|p| [p.cand, p.base]));
            }
            break;
        }
        if r.verdict == Verdict::Keep && r.commit.as_deref() == Some(base) {
            // A simplified version was committed instead of what was measured.
            if r.simplification.is_none()
                && let Some(m) = &r.measured
            {
                runs.extend(m.pairs.iter().rev().map(|p| p.cand));
            }
            break;
        }
        if r.base == base
            && !r.screened()
            && let Some(m) = &r.measured
        {
            runs.extend(m.pairs.iter().rev().map(|p| p.base));
        }
    }
    runs.truncate(SCREEN_REFERENCE);
    runs
}

/// Whether a first screening run `first` is a near miss that earns a
/// second: past [`NEAR_MISS_Z`] standard deviations of one run, short of
/// [`SCREEN_Z`].
pub fn near_miss(dir: Direction, reference: &[f64], first: f64, noise_sd: f64) -> bool {
    let d = crate::eval::oriented_log_ratio(dir, stats::median(reference), first);
    let run_sd = noise_sd / std::f64::consts::SQRT_2;
    d >= NEAR_MISS_Z * run_sd && d < SCREEN_Z * run_sd
}

/// Judges the screening runs `runs` (one, or two after a [`near_miss`])
/// against the base's `reference` runs: their mean log ratio must beat
/// [`SCREEN_Z`] standard deviations of their mean. `noise_sd` is the
/// pooled sd of one pair's log ratio (a run's is that over √2), `theta1`
/// the minimum detectable gain in force.
pub fn screen(
    dir: Direction,
    reference: &[f64],
    runs: &[f64],
    noise_sd: f64,
    theta1: f64,
    alpha: f64,
) -> Screened {
    let base = stats::median(reference);
    let ds: Vec<f64> = runs
        .iter()
        .map(|&c| crate::eval::oriented_log_ratio(dir, base, c))
        .collect();
    let n = ds.len().max(1) as f64;
    let d = ds.iter().sum::<f64>() / n;
    let run_sd = noise_sd / std::f64::consts::SQRT_2;
    let bar = SCREEN_Z * run_sd / n.sqrt();
    let passed = d >= bar;
    // The runs' mean against the median of m: the mean's spread and the
    // median's.
    let se = run_sd * (1.0 / n + 1.0 / reference.len().max(1) as f64).sqrt();
    let d_ci = (d - 1.96 * se, d + 1.96 * se);
    let gain = |x| crate::eval::gain(dir, x);
    let effect = gain(d);
    let ci = (gain(d_ci.0), gain(d_ci.1));
    let p = if se > 0.0 {
        stats::t_sf(d / se, f64::INFINITY)
    } else {
        0.5
    };
    let (what, of) = if runs.len() == 1 {
        ("one run".to_string(), "one run")
    } else {
        (
            format!("{} runs (the first a near miss)", runs.len()),
            "their mean",
        )
    };
    let reason = if passed {
        format!(
            "screen passed: {what} {} against the median of the base's last {} runs, past the bar of {}: measured in full",
            pct(effect),
            reference.len(),
            pct(gain(bar))
        )
    } else {
        format!(
            "screened: {what} {} against the median of the base's last {} runs, short of the bar of {} ({SCREEN_Z} sd of {of}) that sends a point to the full test; not falsified, it may be tried again",
            pct(effect),
            reference.len(),
            pct(gain(bar)),
        )
    };
    let cand_median = stats::median(runs);
    Screened {
        passed,
        comparison: Comparison {
            pairs: runs
                .iter()
                .zip(&ds)
                .map(|(&cand, &d)| Pair {
                    base,
                    cand,
                    cand_first: true,
                    d,
                })
                .collect(),
            base_median: base,
            cand_median,
            effect,
            ci,
            p,
            looks: 0,
            theta1,
            alpha,
            delta0: 0.0,
            rule: format!(
                "screen: one run against the median of the base's last {} runs, measured in full past {SCREEN_Z} sd of one run, or a second run past {NEAR_MISS_Z} sd and then past {SCREEN_Z} sd of the two runs' mean",
                reference.len()
            ),
            alpha_look: 0.0,
            s_h: noise_sd,
            noise_changed: false,
            d_mean: d,
            d_ci,
            direction: Some(dir),
            seconds: None,
        },
        reason,
    }
}

fn pct(g: f64) -> String {
    crate::text::number::effect(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Calibration, DiscardKind};

    fn pairs(base: f64, cand: f64, n: usize) -> Vec<Pair> {
        (0..n)
            .map(|i| Pair {
                base: base + i as f64,
                cand: cand + i as f64,
                cand_first: false,
                d: (base / cand).ln(),
            })
            .collect()
    }

    fn comparison(pairs: Vec<Pair>) -> Comparison {
        let mut c = screen(Direction::Minimize, &[1.0], &[1.0], 0.1, 0.05, 0.05).comparison;
        c.pairs = pairs;
        c
    }

    /// The Brief's hash on every record [`IterationRecord::new`] makes.
    const H: &str = "0";

    fn baseline() -> IterationRecord {
        let mut r = IterationRecord::new(0, Verdict::Baseline);
        r.base = "start".into();
        r.calibration = Some(Calibration {
            pairs: pairs(100.0, 200.0, 10),
            ..Calibration::default()
        });
        r
    }

    #[test]
    fn the_reference_is_the_current_base_s_newest_runs() {
        let mut h = vec![baseline()];
        // From the calibration alone: its newest runs, both sides.
        let r = base_reference(&h, "start", H);
        assert_eq!(r.len(), SCREEN_REFERENCE);
        assert_eq!(&r[..4], &[209.0, 109.0, 208.0, 108.0]);
        // A discard against the start adds its base runs in front.
        let mut d = IterationRecord::new(1, Verdict::Discard);
        d.base = "start".into();
        d.measured = Some(comparison(pairs(50.0, 60.0, 3)));
        h.push(d);
        assert_eq!(
            &base_reference(&h, "start", H)[..4],
            &[52.0, 51.0, 50.0, 209.0]
        );
        // A keep makes a new base: its candidate runs, nothing older.
        let mut k = IterationRecord::new(2, Verdict::Keep);
        k.base = "start".into();
        k.commit = Some("k2".into());
        k.measured = Some(comparison(pairs(40.0, 30.0, 5)));
        h.push(k);
        assert_eq!(
            base_reference(&h, "k2", H),
            vec![34.0, 33.0, 32.0, 31.0, 30.0]
        );
        // A screen against it adds nothing.
        let mut s = IterationRecord::new(3, Verdict::Discard);
        s.base = "k2".into();
        s.discard = Some(DiscardKind::Screened);
        s.measured = Some(comparison(pairs(7.0, 8.0, 1)));
        h.push(s);
        assert_eq!(base_reference(&h, "k2", H).len(), 5);
        // A base nothing on record measured: empty.
        assert!(base_reference(&h, "elsewhere", H).is_empty());
        // After an edit of the Brief, nothing from before it.
        assert!(base_reference(&h, "k2", "edited").is_empty());
    }

    #[test]
    fn only_a_run_past_the_bar_goes_to_the_full_test() {
        // Pair noise 0.1: one run's sd is 0.0707, the bar 1.5 of that.
        let reference = [100.0; 12];
        let bar = SCREEN_Z * 0.1 / std::f64::consts::SQRT_2;
        let at = |d: f64| 100.0 * (-d).exp();
        let s = screen(
            Direction::Minimize,
            &reference,
            &[at(bar + 0.001)],
            0.1,
            0.07,
            0.05,
        );
        assert!(s.passed, "{}", s.reason);
        let s = screen(
            Direction::Minimize,
            &reference,
            &[at(bar - 0.001)],
            0.1,
            0.07,
            0.05,
        );
        assert!(!s.passed);
        assert!(s.reason.starts_with("screened: one run +"), "{}", s.reason);
        assert!(s.reason.contains("not falsified"), "{}", s.reason);
        // The record carries the run as a one-pair comparison.
        assert_eq!(s.comparison.pairs.len(), 1);
        assert!((s.comparison.d_mean - (bar - 0.001)).abs() < 1e-9);
        assert!(s.comparison.ci.0 < s.comparison.effect && s.comparison.effect < s.comparison.ci.1);
        // Maximize: a higher run is the gain.
        let s = screen(Direction::Maximize, &reference, &[200.0], 0.1, 0.07, 0.05);
        assert!(s.passed && s.comparison.effect > 0.9);
        let s = screen(Direction::Maximize, &reference, &[50.0], 0.1, 0.07, 0.05);
        assert!(!s.passed && s.comparison.effect < 0.0);
    }

    #[test]
    fn a_near_miss_earns_a_second_run_and_the_two_runs_mean_decides() {
        let reference = [100.0; 12];
        let sd = 0.1 / std::f64::consts::SQRT_2;
        let at = |d: f64| 100.0 * (-d).exp();
        let near = |d: f64| near_miss(Direction::Minimize, &reference, at(d * sd), 0.1);
        // Short of half the bar, or past the bar: one run is enough.
        assert!(!near(0.7));
        assert!(!near(1.6));
        assert!(!near(-2.0));
        assert!(near(0.8) && near(1.4));
        // Two runs: their mean against the bar for a mean of two, 1.06 sd.
        let two = |a: f64, b: f64| {
            screen(
                Direction::Minimize,
                &reference,
                &[at(a * sd), at(b * sd)],
                0.1,
                0.07,
                0.05,
            )
        };
        let s = two(1.2, 1.0);
        assert!(s.passed, "{}", s.reason);
        assert!(
            s.reason.contains("2 runs (the first a near miss)"),
            "{}",
            s.reason
        );
        assert_eq!(s.comparison.pairs.len(), 2);
        let s = two(1.2, 0.8);
        assert!(!s.passed, "{}", s.reason);
        assert!(s.reason.contains("sd of their mean"), "{}", s.reason);
        // Maximize: the same rule the other way up.
        assert!(near_miss(
            Direction::Maximize,
            &reference,
            100.0 * (sd).exp(),
            0.1
        ));
        assert!(!near_miss(
            Direction::Maximize,
            &reference,
            100.0 * (-sd).exp(),
            0.1
        ));
    }
}
