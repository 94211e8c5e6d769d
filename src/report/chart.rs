//! `progress.svg`: the night at a glance, agreeing with `summary.md`.
//!
//! The series are computed first ([`Series::of`]) and drawn second, so the
//! tests check the numbers a reader sees, not pixels. The base line is the
//! value the loop compared against after each iteration, the same number
//! `summary.md` calls "best" (the last keep's candidate median, or the
//! baseline): an earlier chart drew a running minimum instead, which sat
//! below kept points whenever a later keep measured a little slower than an
//! earlier candidate. Every iteration gets exactly one marker: a measured
//! one at its candidate median with its 95% interval, one that was never
//! measured (crash, invalid, blocked, a reused verdict) on the x axis.
//!
//! Drawn with plotters' SVG backend without its font features: the SVG
//! names a font family and the viewer renders the text, so no system font
//! library is needed.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::archive::history::fact::{Fact, flag};
use crate::brief::Brief;
use crate::model::{Direction, Verdict};
use crate::text::clip::fmt_num;

/// A measured iteration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    pub iteration: u32,
    /// The candidate's median (the baseline's median for iteration 0).
    pub value: f64,
    /// The candidate's value implied by the 95% interval of its paired gain
    /// over its base (the baseline: its own spread).
    pub low: f64,
    pub high: f64,
    pub kept: bool,
}

/// An iteration that was not measured, drawn on the axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unmeasured {
    pub iteration: u32,
    pub verdict: Verdict,
}

/// What the chart shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub points: Vec<Point>,
    pub unmeasured: Vec<Unmeasured>,
    /// The base's value after each iteration (a step line).
    pub base: Vec<(u32, f64)>,
    /// The confirmed gain of the current best, as text, and where it was
    /// measured (iteration, best median).
    pub confirmed: Option<(String, u32, f64)>,
    /// A y range wider than 10× is drawn on a log scale.
    pub log_scale: bool,
    /// When the history is too long to draw every marker: 1 in this many
    /// of the iterations not kept are drawn, and the caption says so.
    pub thinned: Option<usize>,
}

/// Markers beyond which the chart thins (a 760-pixel plot cannot show
/// more; a 10,000-iteration SVG would be megabytes of overlapping dots).
pub(crate) const MAX_MARKERS: usize = 600;

impl Series {
    /// [`Series::of_facts`] of records held in memory (the tests' way in).
    #[cfg(test)]
    pub(crate) fn of(
        history: &[crate::model::IterationRecord],
        dir: Direction,
        best_commit: &str,
    ) -> Series {
        let facts = crate::archive::history::fact::Fact::all_of(history);
        let confirmed = crate::archive::history::confirmation_of(history, best_commit)
            .map(|(it, c)| (it, c.clone()));
        Self::of_facts(
            &facts,
            dir,
            crate::archive::history::baseline_value(history),
            confirmed,
        )
    }

    /// The series of an archive's rows (history/fact.rs), its baseline
    /// value and the latest confirmation of the current best.
    pub(crate) fn of_facts(
        facts: &[Fact],
        dir: Direction,
        baseline: Option<f64>,
        confirmed: Option<(u32, crate::model::Confirmation)>,
    ) -> Series {
        let mut points = Vec::new();
        let mut unmeasured = Vec::new();
        let mut base = Vec::new();
        let mut current: Option<f64> = None;
        for r in facts {
            if r.has(flag::CALIBRATION) {
                let spread = (1.96 * r.calibration_sd).exp();
                points.push(Point {
                    iteration: r.iteration,
                    value: r.calibration_median,
                    low: r.calibration_median / spread,
                    high: r.calibration_median * spread,
                    kept: true,
                });
                current = Some(r.calibration_median);
            } else if let Some(m) = r.measured() {
                let (a, b) = value_interval(dir, m.base_median, m.ci);
                let kept = r.is(Verdict::Keep);
                points.push(Point {
                    iteration: r.iteration,
                    value: m.cand_median,
                    low: a.min(b),
                    high: a.max(b),
                    kept,
                });
                if kept {
                    current = Some(m.cand_median);
                }
            } else {
                unmeasured.push(Unmeasured {
                    iteration: r.iteration,
                    verdict: r.verdict.unwrap_or(Verdict::Invalid),
                });
            }
            // A divergence rollback moves the base back to an earlier
            // commit: its value is that commit's when it was kept.
            if r.has(flag::ROLLBACK) {
                current = facts
                    .iter()
                    .find(|k| k.commit != 0 && k.commit == r.rollback_to)
                    .and_then(|k| k.measured().map(|m| m.cand_median))
                    .or(baseline);
            }
            if let Some(v) = current {
                base.push((r.iteration, v));
            }
        }
        let confirmed = confirmed.map(|(it, c)| {
            (
                format!(
                    "confirmed gain {:+.1}% [{:+.1}, {:+.1}] after iteration {it}",
                    c.effect * 100.0,
                    c.ci.0 * 100.0,
                    c.ci.1 * 100.0
                ),
                it,
                c.best_median,
            )
        });
        let (lo, hi) = bounds(&points);
        Series {
            log_scale: lo > 0.0 && hi / lo > 10.0,
            points,
            unmeasured,
            base,
            confirmed,
            thinned: None,
        }
    }

    /// At most about `max` markers: every kept point (and the baseline)
    /// stays, 1 in k of the others is drawn, and the base line keeps only
    /// its steps, which loses nothing of a step line.
    pub(crate) fn thinned(mut self, max: usize) -> Series {
        let total = self.points.len() + self.unmeasured.len();
        if total <= max {
            return self;
        }
        let k = total.div_ceil(max);
        // The newest iteration always stays: it ends the x axis.
        let last_p = self.points.len();
        let mut n = 0;
        self.points.retain(|p| {
            n += 1;
            p.kept || p.iteration == 0 || n % k == 0 || n == last_p
        });
        let last_u = self.unmeasured.len();
        let mut n = 0;
        self.unmeasured.retain(|_| {
            n += 1;
            n % k == 0 || n == last_u
        });
        let last = self.base.last().copied();
        let mut prev: Option<f64> = None;
        self.base.retain(|&(_, v)| {
            let step = prev != Some(v);
            prev = Some(v);
            step
        });
        if let Some(l) = last
            && self.base.last() != Some(&l)
        {
            self.base.push(l);
        }
        self.thinned = Some(k);
        self
    }
}

/// The candidate value at both ends of a gain interval, relative to its
/// base median (gains are in the Brief's direction).
fn value_interval(dir: Direction, base: f64, ci: (f64, f64)) -> (f64, f64) {
    match dir {
        Direction::Minimize => (base * (1.0 - ci.0), base * (1.0 - ci.1)),
        Direction::Maximize => (base * (1.0 + ci.0), base * (1.0 + ci.1)),
    }
}

fn bounds(points: &[Point]) -> (f64, f64) {
    let lo = points
        .iter()
        .map(|p| p.low.min(p.value))
        .fold(f64::INFINITY, f64::min);
    let hi = points
        .iter()
        .map(|p| p.high.max(p.value))
        .fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// 1, 2, 5, 10, 20, … within `lo..hi`: round labels for a log axis.
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

const BLUE_: RGBColor = RGBColor(0x22, 0x66, 0xaa);
const GREEN_: RGBColor = RGBColor(0x22, 0xaa, 0x77);
const RED_: RGBColor = RGBColor(0xcc, 0x33, 0x33);
const GREY: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// The chart of the archive a runner holds.
pub(crate) fn progress_svg_of(
    brief: &Brief,
    history: crate::archive::history::View,
    best_commit: &str,
) -> crate::error::Result<String> {
    let series = Series::of_facts(
        history.facts(),
        brief.metric.direction,
        history.baseline_value(),
        history.confirmation_of(best_commit)?,
    );
    Ok(svg_of(brief, series.thinned(MAX_MARKERS)))
}

/// [`progress_svg_of`] of records held in memory (the tests' way in).
#[cfg(test)]
pub(crate) fn progress_svg(
    brief: &Brief,
    history: &[crate::model::IterationRecord],
    best_commit: &str,
) -> String {
    let series = Series::of(history, brief.metric.direction, best_commit).thinned(MAX_MARKERS);
    svg_of(brief, series)
}

fn svg_of(brief: &Brief, series: Series) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        if draw(&root, brief, &series).is_err() {
            // Drawing into a string cannot fail for I/O; should plotters
            // refuse the ranges, the page keeps a readable placeholder.
            let _ = root.fill(&WHITE);
            let _ = root.draw(&Text::new(
                "chart unavailable",
                (20, 20),
                ("sans-serif", 14).into_font(),
            ));
        }
        let _ = root.present();
    }
    svg
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(root: &DrawingArea<SVGBackend, Shift>, brief: &Brief, s: &Series) -> DrawResult {
    root.fill(&WHITE)?;
    let dir = match brief.metric.direction {
        Direction::Minimize => "lower is better",
        Direction::Maximize => "higher is better",
    };
    let caption = format!(
        "{} per iteration: filled = kept, hollow = discarded, red on the axis = not measured{}",
        brief.metric.name,
        s.thinned
            .map(|k| format!(" (every keep; 1 in {k} of the rest)"))
            .unwrap_or_default()
    );
    let y_desc = format!("{} ({dir})", brief.metric.name);
    let max_i = s
        .points
        .iter()
        .map(|p| p.iteration)
        .chain(s.unmeasured.iter().map(|u| u.iteration))
        .max()
        .unwrap_or(0)
        .max(1);
    let x = -0.5f64..(f64::from(max_i) + 0.5);
    let (mut lo, mut hi) = bounds(&s.points);
    if !lo.is_finite() || !hi.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if hi <= lo {
        let d = hi.abs().max(1.0) * 0.05;
        (lo, hi) = (lo - d, hi + d);
    }
    if s.log_scale {
        // plotters' log axis labels only powers of ten unless told where:
        // 1-2-5 steps within the range.
        let y = (lo * 0.9..hi * 1.1)
            .log_scale()
            .with_key_points(one_two_five(lo * 0.9, hi * 1.1));
        draw_in(root, s, &caption, &y_desc, x, y, lo * 0.9)
    } else {
        let pad = (hi - lo) * 0.08;
        draw_in(root, s, &caption, &y_desc, x, lo - pad..hi + pad, lo - pad)
    }
}

fn draw_in<Y>(
    root: &DrawingArea<SVGBackend, Shift>,
    s: &Series,
    caption: &str,
    y_desc: &str,
    x: std::ops::Range<f64>,
    y: Y,
    axis: f64,
) -> DrawResult
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    let max_i = s.base.last().map(|b| b.0).unwrap_or(1).max(1);
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc(y_desc)
        .x_labels((max_i as usize + 1).min(13))
        .y_labels(8)
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 && *v >= 0.0 {
                format!("{}", v.round() as i64)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| fmt_num(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let steps = steps(&s.base);
    chart.draw_series(LineSeries::new(steps, GREEN_.stroke_width(2)))?;
    // Each candidate's 95% interval, a bar with caps (plotters' ErrorBar
    // would add a second dot at the value).
    chart.draw_series(s.points.iter().flat_map(|p| {
        let x = f64::from(p.iteration);
        let cap = 0.12;
        [
            vec![(x, p.low), (x, p.high)],
            vec![(x - cap, p.low), (x + cap, p.low)],
            vec![(x - cap, p.high), (x + cap, p.high)],
        ]
        .map(|line| PathElement::new(line, GREY.stroke_width(1)))
    }))?;
    chart.draw_series(s.points.iter().map(|p| {
        let style = if p.kept {
            BLUE_.filled()
        } else {
            BLUE_.stroke_width(2)
        };
        Circle::new((f64::from(p.iteration), p.value), 4, style)
    }))?;
    chart.draw_series(
        s.unmeasured
            .iter()
            .map(|u| Circle::new((f64::from(u.iteration), axis), 4, RED_.filled())),
    )?;
    if let Some((text, it, value)) = &s.confirmed {
        chart.draw_series(std::iter::once(TriangleMarker::new(
            (f64::from(*it), *value),
            6,
            GREEN_.filled(),
        )))?;
        // Right-aligned above the marker: the test of the best is usually
        // the last iteration, at the right edge.
        let font = ("sans-serif", 15)
            .into_font()
            .color(&GREEN_)
            .pos(Pos::new(HPos::Right, VPos::Bottom));
        chart.draw_series(std::iter::once(
            EmptyElement::at((f64::from(*it), *value)) + Text::new(text.clone(), (-4, -8), font),
        ))?;
    }
    Ok(())
}

/// The step line of `base`: the base after each iteration, held until the
/// next one. A base that holds extends its step: it changes only at keeps,
/// and ten thousand collinear points were most of the chart's bytes.
fn steps(base: &[(u32, f64)]) -> Vec<(f64, f64)> {
    let mut steps: Vec<(f64, f64)> = Vec::new();
    for (k, &(i, v)) in base.iter().enumerate() {
        let next = base
            .get(k + 1)
            .map(|n| f64::from(n.0))
            .unwrap_or(f64::from(i) + 0.5);
        match steps.last_mut() {
            Some(end) if end.1 == v => end.0 = next,
            _ => {
                steps.push((f64::from(i), v));
                steps.push((next, v));
            }
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IterationRecord;
    use crate::model::{Calibration, Comparison, Confirmation, Pair};

    #[test]
    fn the_step_line_has_a_corner_only_where_the_base_moves() {
        let base: Vec<(u32, f64)> = (0..10_000)
            .map(|i| (i, if i < 40 { 9.0 } else { 7.5 }))
            .collect();
        assert_eq!(
            steps(&base),
            [(0.0, 9.0), (40.0, 9.0), (40.0, 7.5), (9999.5, 7.5)]
        );
        assert!(steps(&[]).is_empty());
    }

    /// The step line's value at iteration `i`.
    fn base_at(base: &[(u32, f64)], i: u32) -> Option<f64> {
        base.iter().rev().find(|b| b.0 <= i).map(|b| b.1)
    }

    #[test]
    fn ten_thousand_iterations_are_thinned_with_every_keep_and_the_same_base_line() {
        let h = crate::archive::history::synthetic::synthetic_history(10_000, 7);
        let full = Series::of(&h, Direction::Minimize, "none");
        assert_eq!(full.points.len() + full.unmeasured.len(), 10_001);
        let thin = full.clone().thinned(MAX_MARKERS);
        let k = thin.thinned.expect("thinned, and it says so");
        let markers = thin.points.len() + thin.unmeasured.len();
        let keeps = full.points.iter().filter(|p| p.kept).count();
        assert!(markers <= MAX_MARKERS + keeps, "{markers}");
        assert!(markers < 10_001 / 2);
        for p in full.points.iter().filter(|p| p.kept) {
            assert!(thin.points.contains(p), "keep {} was dropped", p.iteration);
        }
        for i in 0..=10_000 {
            assert_eq!(
                base_at(&thin.base, i),
                base_at(&full.base, i),
                "iteration {i}"
            );
        }
        assert_eq!(thin.base.last(), full.base.last());
        let newest = |s: &Series| {
            s.points
                .iter()
                .map(|p| p.iteration)
                .chain(s.unmeasured.iter().map(|u| u.iteration))
                .max()
        };
        assert_eq!(newest(&thin), Some(10_000));
        assert!(k >= 5);
        // Short histories are drawn whole.
        let short = Series::of(&h[..50], Direction::Minimize, "none");
        assert_eq!(short.clone().thinned(MAX_MARKERS), short);
    }

    fn measured(i: u32, verdict: Verdict, base: f64, cand: f64) -> IterationRecord {
        let mut r = IterationRecord::new(i, verdict);
        let effect = 1.0 - cand / base;
        r.measured = Some(Comparison {
            pairs: vec![Pair {
                base,
                cand,
                cand_first: false,
                d: 0.0,
            }],
            base_median: base,
            cand_median: cand,
            effect,
            ci: (effect - 0.03, effect + 0.03),
            p: 0.5,
            looks: 1,
            theta1: 0.02,
            alpha: 0.05,
            delta0: 0.0,
            rule: String::new(),
            alpha_look: 0.017,
            s_h: 0.02,
            noise_changed: false,
            d_mean: 0.0,
            d_ci: (0.0, 0.0),
        });
        if verdict == Verdict::Keep {
            r.commit = Some(format!("{i:040}"));
        }
        r
    }

    /// The night: a later keep measured slower (82) than an earlier
    /// kept candidate (80), because its own base had drifted; crashes and
    /// invalid iterations in between.
    fn night() -> Vec<IterationRecord> {
        let mut base = IterationRecord::new(0, Verdict::Baseline);
        base.calibration = Some(Calibration {
            pairs: Vec::new(),
            median: 100.0,
            run_sd: 0.01,
            noise_sd: 0.014,
            mean_d: 0.0,
            pairs_per_decision: 12,
            theta1: 0.01,
            alpha_look: None,
            advice: None,
        });
        let mut last = measured(5, Verdict::Keep, 90.0, 82.0);
        last.confirmation = Some(Confirmation {
            start: "s".into(),
            best: format!("{:040}", 5),
            pairs: Vec::new(),
            best_median: 81.0,
            start_median: 100.0,
            effect: 0.19,
            ci: (0.17, 0.21),
            p: 0.001,
            why: String::new(),
        });
        vec![
            base,
            measured(1, Verdict::Keep, 100.0, 80.0),
            measured(2, Verdict::Discard, 80.0, 85.0),
            IterationRecord::new(3, Verdict::Crash),
            IterationRecord::new(4, Verdict::Invalid),
            last,
            IterationRecord::new(6, Verdict::Blocked),
        ]
    }

    #[test]
    fn the_base_line_is_the_value_each_keep_set_and_every_iteration_has_one_marker() {
        let h = night();
        let s = Series::of(&h, Direction::Minimize, &format!("{:040}", 5));
        assert_eq!(
            s.base,
            vec![
                (0, 100.0),
                (1, 80.0),
                (2, 80.0),
                (3, 80.0),
                (4, 80.0),
                (5, 82.0),
                (6, 82.0)
            ]
        );
        // Never on the wrong side of a kept point: the step after a keep
        // is that keep's own value (a running best would say 80 at 5).
        for p in s.points.iter().filter(|p| p.kept) {
            let at = s.base.iter().find(|b| b.0 == p.iteration).unwrap();
            assert_eq!(at.1, p.value, "iteration {}", p.iteration);
        }
        let mut marked: Vec<u32> = s
            .points
            .iter()
            .map(|p| p.iteration)
            .chain(s.unmeasured.iter().map(|u| u.iteration))
            .collect();
        marked.sort_unstable();
        assert_eq!(marked, (0..=6).collect::<Vec<_>>());
        assert_eq!(
            s.unmeasured.iter().map(|u| u.verdict).collect::<Vec<_>>(),
            vec![Verdict::Crash, Verdict::Invalid, Verdict::Blocked]
        );
        // A 3% interval of the gain on a base of 90: 82 ± 2.7.
        let p5 = s.points.iter().find(|p| p.iteration == 5).unwrap();
        assert!(
            (p5.low - 79.3).abs() < 1e-9 && (p5.high - 84.7).abs() < 1e-9,
            "{p5:?}"
        );
        let (text, it, v) = s.confirmed.clone().unwrap();
        assert_eq!((it, v), (5, 81.0));
        assert!(text.contains("+19.0% [+17.0, +21.0]"), "{text}");
        assert!(!s.log_scale);
        // A confirmation of an earlier best is not this best's.
        assert_eq!(Series::of(&h, Direction::Minimize, "other").confirmed, None);
    }

    #[test]
    fn log_axis_labels_are_round() {
        assert_eq!(one_two_five(18.0, 340.0), vec![20.0, 50.0, 100.0, 200.0]);
        assert_eq!(one_two_five(0.9, 12.0), vec![1.0, 2.0, 5.0, 10.0]);
    }

    #[test]
    fn a_range_over_ten_times_is_log_scaled() {
        let mut h = night();
        h.truncate(2);
        h[1] = measured(1, Verdict::Keep, 100.0, 5.0);
        assert!(Series::of(&h, Direction::Minimize, "x").log_scale);
    }

    #[test]
    fn the_svg_has_one_marker_per_iteration_axis_labels_and_the_confirmed_gain() {
        let text = "---\nmetric:\n  name: time_ms\n  command: ./b\n  direction: minimize\nagent: script\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n";
        let brief = Brief::parse(std::path::Path::new("briefs/t.md"), text).unwrap();
        let svg = progress_svg(&brief, &night(), &format!("{:040}", 5));
        assert!(svg.starts_with("<svg"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 7, "{svg}");
        assert!(svg.contains("\niteration\n</text>"), "{svg}");
        assert!(
            svg.contains("\ntime_ms (lower is better)\n</text>"),
            "{svg}"
        );
        assert!(svg.contains("confirmed gain +19.0%"), "{svg}");
        assert_eq!(
            svg.matches("<polygon").count(),
            1,
            "the confirmation marker"
        );
        // Ticks: several numbered labels on each axis.
        assert!(svg.matches("<text").count() > 10, "{svg}");
    }
}
