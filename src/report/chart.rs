//! `progress.svg`: a chart of what was decided, agreeing with the headline.
//!
//! Why not absolute medians per iteration (what it drew before): medians
//! taken hours apart on a machine whose speed drifts put a step of +15%
//! that the paired test measured where a reader sees a 3× drop, and put
//! discards below the "best" line while their verdicts said no gain, so a
//! reader concluded good candidates were thrown away. So every mark is a
//! paired comparison placed on the scale of the headline (the gain over
//! the start of the run, up is better whatever the metric's direction, on
//! a log-ratio axis so gains chain by adding):
//!
//! - the **kept changes** chained from their paired estimates (a step
//!   line, with the 95% band of the sum): the same number as the headline
//!   before a confirmation;
//! - each **candidate** at its own base's level plus its own measured
//!   effect, with its own 95% interval: a discard sits on the better side
//!   of the line only when its measured effect put it there;
//! - **confirmations** (the start against the best in fresh pairs) as
//!   points with their interval;
//! - the **base's own re-measurements** against iteration 0's median, a
//!   thin line: where it leaves the step line, the machine drifted.
//!
//! Every mark is in the legend, the legend and every label sit outside the
//! plot area (so no label can cover data), and the y ticks are chosen
//! among round gains so there are always several. The series are computed
//! first ([`Series::of_facts`]) and drawn second; the pixel test renders
//! the SVG and checks the geometry a reader sees.
//!
//! Drawn with plotters' SVG backend without its font features: the SVG
//! names a font family and the viewer renders the text.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::archive::history::fact::{Fact, flag};
use crate::brief::Brief;
use crate::model::{Confirmation, Direction, DiscardKind, Verdict};
use crate::report::headline::{Paired, log_ratio};

/// How a measured candidate was decided: one legend entry and one color
/// each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    Keep,
    Worse,
    Futile,
    Inconclusive,
    Neutral,
    Screened,
    /// Measured as a keep, refused by a reviewer.
    BlockedByReview,
}

impl Mark {
    const ALL: [Mark; 7] = [
        Mark::Keep,
        Mark::BlockedByReview,
        Mark::Worse,
        Mark::Futile,
        Mark::Inconclusive,
        Mark::Neutral,
        Mark::Screened,
    ];

    fn of(f: &Fact) -> Mark {
        if f.is(Verdict::Keep) {
            return Mark::Keep;
        }
        match f.discard {
            Some(DiscardKind::Worse) => Mark::Worse,
            Some(DiscardKind::Futile) => Mark::Futile,
            Some(DiscardKind::Neutral) => Mark::Neutral,
            Some(DiscardKind::Screened) => Mark::Screened,
            Some(DiscardKind::BlockedByReview) => Mark::BlockedByReview,
            Some(DiscardKind::Inconclusive) | None => Mark::Inconclusive,
        }
    }

    pub(crate) fn color(self) -> RGBColor {
        match self {
            Mark::Keep => RGBColor(0x1f, 0x5f, 0xbf),
            Mark::BlockedByReview => RGBColor(0x8e, 0x2c, 0xc4),
            Mark::Worse => RGBColor(0xd6, 0x27, 0x28),
            Mark::Futile => RGBColor(0xe0, 0x7b, 0x00),
            Mark::Inconclusive => RGBColor(0x70, 0x70, 0x70),
            Mark::Neutral => RGBColor(0x17, 0xa2, 0xb8),
            Mark::Screened => RGBColor(0xb5, 0x8b, 0x00),
        }
    }

    fn filled(self) -> bool {
        matches!(self, Mark::Keep | Mark::BlockedByReview)
    }

    fn label(self) -> &'static str {
        match self {
            Mark::Keep => "kept: its own paired effect",
            Mark::BlockedByReview => "blocked by review (measured, refused)",
            Mark::Worse => "discarded: worse",
            Mark::Futile => "discarded: cannot reach θ₁",
            Mark::Inconclusive => "discarded: inconclusive",
            Mark::Neutral => "discarded: neutral (null by design)",
            Mark::Screened => "screened out (one or two runs)",
        }
    }
}

/// Why an iteration has no measurement: one legend entry each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Crash,
    Invalid,
    Blocked,
}

impl Failure {
    const ALL: [Failure; 3] = [Failure::Crash, Failure::Invalid, Failure::Blocked];

    pub(crate) fn color(self) -> RGBColor {
        match self {
            Failure::Crash => RGBColor(0xa0, 0x00, 0x00),
            Failure::Invalid => RGBColor(0xff, 0x8c, 0x69),
            Failure::Blocked => RGBColor(0x20, 0x20, 0x20),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Failure::Crash => "crash (not measured)",
            Failure::Invalid => "invalid (not measured)",
            Failure::Blocked => "blocked (not measured)",
        }
    }
}

const STEP: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const BAND: RGBColor = RGBColor(0xc8, 0xe8, 0xc8);
const CONFIRM: RGBColor = RGBColor(0x00, 0x66, 0x33);
const DRIFT: RGBColor = RGBColor(0xa8, 0xa8, 0xd8);
const ZERO: RGBColor = RGBColor(0x60, 0x60, 0x60);

/// A measured candidate, on the log-ratio scale (up = better): its base's
/// level plus its own effect, and its own 95% interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    pub iteration: u32,
    pub mark: Mark,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
    /// Its base's level (the step line's value before it).
    pub base: f64,
}

/// An iteration that was not measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unmeasured {
    pub iteration: u32,
    pub failure: Failure,
}

/// A confirmation test: the start against the best, after `iteration`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Confirmed {
    pub iteration: u32,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

/// What the chart shows, on the log-ratio scale of the gain over the start
/// (positive = better).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub direction: Direction,
    /// The kept changes chained, after each iteration: the level and the
    /// half-width of its 95% band (NaN when a keep had no interval).
    pub level: Vec<(u32, f64, f64)>,
    pub candidates: Vec<Candidate>,
    pub unmeasured: Vec<Unmeasured>,
    pub confirmations: Vec<Confirmed>,
    /// The base's median in each measured iteration against iteration 0's.
    pub drift: Vec<(u32, f64)>,
    /// When the history is too long to draw every marker: 1 in this many
    /// of the iterations not kept are drawn, and the caption says so.
    pub thinned: Option<usize>,
}

/// Markers beyond which the chart thins (a 700-pixel plot cannot show
/// more; a 10,000-iteration SVG would be megabytes of overlapping dots).
pub(crate) const MAX_MARKERS: usize = 600;

impl Series {
    /// [`Series::of_facts`] of records held in memory (the tests' way in).
    #[cfg(test)]
    pub(crate) fn of(history: &[crate::model::IterationRecord], dir: Direction) -> Series {
        let facts = Fact::all_of(history);
        let confirmations: Vec<(u32, Confirmation)> = history
            .iter()
            .filter_map(|r| r.confirmation.clone().map(|c| (r.iteration, c)))
            .collect();
        Self::of_facts(&facts, dir, &confirmations)
    }

    /// The series of an archive's rows (history/fact.rs) and its
    /// confirmations.
    pub(crate) fn of_facts(
        facts: &[Fact],
        dir: Direction,
        confirmations: &[(u32, Confirmation)],
    ) -> Series {
        let mut s = Series {
            direction: dir,
            level: Vec::new(),
            candidates: Vec::new(),
            unmeasured: Vec::new(),
            confirmations: Vec::new(),
            drift: Vec::new(),
            thinned: None,
        };
        let start = facts
            .iter()
            .find(|f| f.has(flag::CALIBRATION))
            .map(|f| f.calibration_median)
            .filter(|m| *m > 0.0);
        // The keeps the base is made of: (commit, d, squared half-width),
        // chained as the headline chains them.
        let mut chain: Vec<(u64, f64, f64)> = Vec::new();
        let sum = |chain: &[(u64, f64, f64)]| {
            let d: f64 = chain.iter().map(|l| l.1).sum();
            let h2: f64 = chain.iter().map(|l| l.2).sum();
            (d, h2.sqrt())
        };
        for f in facts {
            let (base, _) = sum(&chain);
            if f.has(flag::CALIBRATION) {
                s.drift.push((f.iteration, 0.0));
            } else if let Some(p) = Paired::of(f, dir) {
                let mark = Mark::of(f);
                s.candidates.push(Candidate {
                    iteration: f.iteration,
                    mark,
                    y: base + p.d,
                    lo: base + p.lo,
                    hi: base + p.hi,
                    base,
                });
                if let Some(m0) = start
                    && f.base_median > 0.0
                {
                    s.drift
                        .push((f.iteration, oriented(dir, m0, f.base_median)));
                }
                if mark == Mark::Keep {
                    chain.push((f.commit, p.d, p.half * p.half));
                }
            } else if f.iteration > 0 {
                s.unmeasured.push(Unmeasured {
                    iteration: f.iteration,
                    failure: match f.verdict {
                        Some(Verdict::Crash) => Failure::Crash,
                        Some(Verdict::Blocked) => Failure::Blocked,
                        _ => Failure::Invalid,
                    },
                });
            }
            if f.has(flag::ROLLBACK) {
                let at = chain.iter().rposition(|l| l.0 != 0 && l.0 == f.rollback_to);
                chain.truncate(at.map_or(0, |i| i + 1));
            }
            let (level, half) = sum(&chain);
            s.level.push((f.iteration, level, half));
        }
        let mut confirmations: Vec<&(u32, Confirmation)> = confirmations.iter().collect();
        confirmations.sort_by_key(|(it, _)| *it);
        for (it, c) in confirmations {
            let (a, b) = (log_ratio(dir, c.ci.0), log_ratio(dir, c.ci.1));
            s.confirmations.push(Confirmed {
                iteration: *it,
                y: log_ratio(dir, c.effect),
                lo: a.min(b),
                hi: a.max(b),
            });
        }
        s
    }

    /// At most about `max` markers: every keep (and every blocked-by-review
    /// and confirmation) stays, 1 in k of the others is drawn, and the
    /// step line keeps only its steps, which loses nothing of a step line.
    pub(crate) fn thinned(mut self, max: usize) -> Series {
        let total = self.candidates.len() + self.unmeasured.len();
        if total <= max {
            return self;
        }
        let k = total.div_ceil(max);
        let last = self.candidates.last().map(|c| c.iteration);
        let mut n = 0;
        self.candidates.retain(|c| {
            n += 1;
            c.mark == Mark::Keep
                || c.mark == Mark::BlockedByReview
                || n % k == 0
                || Some(c.iteration) == last
        });
        let mut n = 0;
        self.unmeasured.retain(|_| {
            n += 1;
            n % k == 0
        });
        let mut n = 0;
        self.drift.retain(|_| {
            n += 1;
            n % k == 1
        });
        let end = self.level.last().copied();
        let mut prev: Option<f64> = None;
        self.level.retain(|&(_, v, _)| {
            let step = prev != Some(v);
            prev = Some(v);
            step
        });
        if let Some(e) = end
            && self.level.last() != Some(&e)
        {
            self.level.push(e);
        }
        self.thinned = Some(k);
        self
    }

    fn last_iteration(&self) -> u32 {
        self.level.last().map(|l| l.0).unwrap_or(0).max(1)
    }

    /// The y range every mark fits in, with zero (the start) in it.
    fn range(&self) -> (f64, f64) {
        let finite = |x: &f64| x.is_finite();
        let ys = self
            .candidates
            .iter()
            .flat_map(|c| [c.y, c.lo, c.hi])
            .chain(self.confirmations.iter().flat_map(|c| [c.y, c.lo, c.hi]))
            .chain(self.level.iter().flat_map(|l| {
                let h = if l.2.is_finite() { l.2 } else { 0.0 };
                [l.1 - h, l.1 + h]
            }))
            .chain(self.drift.iter().map(|d| d.1))
            .chain([0.0])
            .filter(finite);
        let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
        let span = (hi - lo).max(0.02);
        (lo - 0.08 * span, hi + 0.08 * span)
    }
}

/// ln of the value ratio, oriented so positive is better.
fn oriented(dir: Direction, start: f64, value: f64) -> f64 {
    match dir {
        Direction::Minimize => start.ln() - value.ln(),
        Direction::Maximize => value.ln() - start.ln(),
    }
}

/// Round gains within `lo..hi` (log ratios), 4 to 9 of them: the y ticks.
/// Round in the metric's own terms, as the labels write them: percentages
/// up to twice the base's value, whole factors beyond (on the unbounded
/// side: a minimized metric getting worse, a maximized one better).
fn ticks(dir: Direction, lo: f64, hi: f64) -> Vec<f64> {
    const PERCENT: [f64; 23] = [
        0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7,
        0.75, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999,
    ];
    const FACTOR: [f64; 10] = [2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1e3, 1e4, 1e5];
    let mut all: Vec<f64> = vec![0.0];
    for p in PERCENT {
        all.push(log_ratio(dir, p));
        all.push(log_ratio(dir, -p));
    }
    for f in FACTOR {
        // A factor f on the unbounded side: the ratio cand/base is f.
        all.push(match dir {
            Direction::Minimize => -f.ln(),
            Direction::Maximize => f.ln(),
        });
    }
    all.retain(|y| y.is_finite() && *y >= lo && *y <= hi);
    all.sort_by(f64::total_cmp);
    all.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    if all.len() <= 9 {
        return all;
    }
    // Spread: zero first, then the roundest-near-zero at least a ninth of
    // the range apart.
    let gap = (hi - lo) / 9.0;
    let mut kept: Vec<f64> = vec![0.0];
    let mut by_distance = all.clone();
    by_distance.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    for y in by_distance {
        if kept.iter().all(|k| (k - y).abs() >= gap) {
            kept.push(y);
        }
    }
    kept.retain(|y| *y >= lo && *y <= hi);
    kept.sort_by(f64::total_cmp);
    kept
}

/// A linear f64 axis whose ticks are the round gains of [`ticks`]
/// (plotters' own key points would be round log ratios, which are no round
/// gains; its `with_key_points` leaves an f64 axis without a formatter).
struct Ticked {
    inner: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// A tick's label: the gain, in the unit the effect formatter would write
/// it, with no decimals where it is round.
fn tick_label(dir: Direction, y: f64) -> String {
    if y.abs() < 1e-12 {
        return "0 (the start)".into();
    }
    let g = crate::eval::gain(dir, y);
    let text = crate::text::number::effect_in(dir.sense(), g);
    // `+50.0%` → `+50%`, `2.00× worse` → `2× worse`.
    text.replace(".00×", "×")
        .replace(".0×", "×")
        .replace(".0%", "%")
        .replace(".00%", "%")
}

/// The chart of the archive a runner holds.
pub(crate) fn progress_svg_of(
    brief: &Brief,
    history: crate::archive::history::View,
    headline: &str,
) -> crate::error::Result<String> {
    let mut confirmations = Vec::new();
    for r in history.flagged(flag::CONFIRMATION) {
        let r = r?;
        if let Some(c) = &r.confirmation {
            confirmations.push((r.iteration, c.clone()));
        }
    }
    let series = Series::of_facts(history.facts(), brief.metric.direction, &confirmations);
    Ok(svg_of(brief, &series.thinned(MAX_MARKERS), headline).0)
}

/// The canvas.
const WIDTH: u32 = 980;
const HEIGHT: u32 = 460;
/// The legend's column on the right.
const LEGEND: u32 = 290;

/// Where the marks were drawn, in pixels: what the pixel test checks the
/// rendering against.
#[derive(Debug, Clone, Default)]
pub(crate) struct Geometry {
    /// The plot area: (left, top, right, bottom).
    pub plot: (i32, i32, i32, i32),
    /// Each candidate drawn: its mark, iteration, measured effect (log
    /// ratio) and pixel.
    pub candidates: Vec<(Mark, u32, f64, (i32, i32))>,
    /// Each unmeasured iteration drawn, and each confirmation.
    pub others: Vec<(i32, i32)>,
}

fn svg_of(brief: &Brief, s: &Series, headline: &str) -> (String, Geometry) {
    let mut svg = String::new();
    let mut geometry = Geometry::default();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        if let Err(e) = draw(&root, brief, s, headline, &mut geometry) {
            // Drawing into a string cannot fail for I/O; should plotters
            // refuse the ranges, the page keeps a readable placeholder.
            let _ = root.fill(&WHITE);
            let _ = root.draw(&Text::new(
                format!("chart unavailable: {e}"),
                (20, 20),
                ("sans-serif", 14).into_font(),
            ));
        }
        let _ = root.present();
    }
    (svg, geometry)
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    brief: &Brief,
    s: &Series,
    headline: &str,
    geometry: &mut Geometry,
) -> DrawResult {
    root.fill(&WHITE)?;
    let dir = brief.metric.direction;
    let title = format!("{}: {headline}", brief.metric.name);
    let root = root.titled(&title, ("sans-serif", 17))?;
    let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND);
    let (lo, hi) = s.range();
    let max_i = s.last_iteration();
    let x = -0.5f64..(f64::from(max_i) + 0.5);
    let y_desc = format!(
        "gain over the start, up is better ({} {})",
        brief.metric.name,
        match dir {
            Direction::Minimize => "lower is better",
            Direction::Maximize => "higher is better",
        }
    );
    let ticks = ticks(dir, lo, hi);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .x_label_area_size(42)
        .y_label_area_size(96)
        .build_cartesian_2d(
            x,
            Ticked {
                inner: (lo..hi).into(),
                ticks,
            },
        )?;
    chart
        .configure_mesh()
        .x_desc(match s.thinned {
            Some(k) => format!("iteration (every keep; 1 in {k} of the rest)"),
            None => "iteration".into(),
        })
        .y_desc(y_desc)
        .x_labels((max_i as usize + 1).min(13))
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 && *v >= 0.0 {
                format!("{}", v.round() as i64)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| tick_label(dir, *v))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    let (left, top) = chart.backend_coord(&(-0.5, hi));
    let (right, bottom) = chart.backend_coord(&(f64::from(max_i) + 0.5, lo));
    geometry.plot = (left, top, right, bottom);
    // The start.
    chart.draw_series(LineSeries::new(
        [(-0.5, 0.0), (f64::from(max_i) + 0.5, 0.0)],
        ZERO.stroke_width(1),
    ))?;
    // The chained estimate's band, then its step line.
    let steps = steps(&s.level);
    let band: Vec<(f64, f64)> = steps
        .iter()
        .filter(|(_, _, h)| h.is_finite())
        .map(|&(x, y, h)| (x, y + h))
        .chain(
            steps
                .iter()
                .rev()
                .filter(|(_, _, h)| h.is_finite())
                .map(|&(x, y, h)| (x, y - h)),
        )
        .collect();
    if band.len() > 2 {
        chart.draw_series(std::iter::once(Polygon::new(band, BAND.filled())))?;
    }
    chart.draw_series(DashedLineSeries::new(
        s.drift.iter().map(|&(i, d)| (f64::from(i), d)),
        4,
        3,
        DRIFT.stroke_width(1),
    ))?;
    chart.draw_series(LineSeries::new(
        steps.iter().map(|&(x, y, _)| (x, y)),
        STEP.stroke_width(3),
    ))?;
    // Each candidate's own 95% interval, then its marker.
    chart.draw_series(s.candidates.iter().map(|c| {
        let x = f64::from(c.iteration);
        PathElement::new(
            vec![(x, c.lo), (x, c.hi)],
            c.mark.color().mix(0.45).stroke_width(1),
        )
    }))?;
    for c in &s.candidates {
        let at = (f64::from(c.iteration), c.y);
        let style = if c.mark.filled() {
            c.mark.color().filled()
        } else {
            c.mark.color().stroke_width(2)
        };
        chart.draw_series(std::iter::once(Circle::new(at, 5, style)))?;
        geometry
            .candidates
            .push((c.mark, c.iteration, c.y - c.base, chart.backend_coord(&at)));
    }
    // Not measured: a cross on the bottom edge of the plot.
    let floor = lo + (hi - lo) * 0.025;
    for u in &s.unmeasured {
        let at = (f64::from(u.iteration), floor);
        chart.draw_series(std::iter::once(Cross::new(
            at,
            5,
            u.failure.color().stroke_width(2),
        )))?;
        geometry.others.push(chart.backend_coord(&at));
    }
    for c in &s.confirmations {
        // Beside the iteration it followed, not over its marker.
        let x = f64::from(c.iteration) + 0.35;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, c.lo), (x, c.hi)],
            CONFIRM.stroke_width(2),
        )))?;
        chart.draw_series(std::iter::once(TriangleMarker::new(
            (x, c.y),
            7,
            CONFIRM.filled(),
        )))?;
        geometry.others.push(chart.backend_coord(&(x, c.y)));
    }
    legend(&legend_area, s)
}

/// What a legend entry draws beside its words.
#[derive(Clone, Copy)]
enum Swatch {
    Line(RGBColor, u32),
    Band,
    Circle(RGBColor, bool),
    Whisker(RGBColor),
    Cross(RGBColor),
    Triangle,
}

impl Swatch {
    fn draw(self, a: &DrawingArea<SVGBackend, Shift>, (x, y): (i32, i32)) -> DrawResult {
        match self {
            Swatch::Line(c, w) => a.draw(&PathElement::new(
                vec![(x - 8, y), (x + 8, y)],
                c.stroke_width(w),
            )),
            Swatch::Band => a.draw(&Rectangle::new(
                [(x - 8, y - 5), (x + 8, y + 5)],
                BAND.filled(),
            )),
            Swatch::Circle(c, true) => a.draw(&Circle::new((x, y), 5, c.filled())),
            Swatch::Circle(c, false) => a.draw(&Circle::new((x, y), 5, c.stroke_width(2))),
            Swatch::Whisker(c) => a.draw(&PathElement::new(
                vec![(x, y - 8), (x, y + 8)],
                c.mix(0.45).stroke_width(1),
            )),
            Swatch::Cross(c) => a.draw(&Cross::new((x, y), 5, c.stroke_width(2))),
            Swatch::Triangle => a.draw(&TriangleMarker::new((x, y), 7, CONFIRM.filled())),
        }
    }
}

/// The legend, in its own column: an entry for every kind of mark drawn.
fn legend(area: &DrawingArea<SVGBackend, Shift>, s: &Series) -> DrawResult {
    let mut entries: Vec<(Swatch, &str)> = vec![
        (Swatch::Line(STEP, 3), "kept changes chained (paired)"),
        (Swatch::Band, "95% band of the chain"),
    ];
    for m in Mark::ALL {
        if s.candidates.iter().any(|c| c.mark == m) {
            entries.push((Swatch::Circle(m.color(), m.filled()), m.label()));
        }
    }
    if !s.candidates.is_empty() {
        entries.push((
            Swatch::Whisker(Mark::Inconclusive.color()),
            "a candidate's own 95% interval",
        ));
    }
    for f in Failure::ALL {
        if s.unmeasured.iter().any(|u| u.failure == f) {
            entries.push((Swatch::Cross(f.color()), f.label()));
        }
    }
    if !s.confirmations.is_empty() {
        entries.push((Swatch::Triangle, "confirmation: start vs best, fresh pairs"));
    }
    let drift = s.drift.len() > 1;
    if drift {
        entries.push((Swatch::Line(DRIFT, 1), "base's median vs iteration 0's"));
    }
    let font = ("sans-serif", 13).into_font();
    let x0 = 14;
    let mut y = 22;
    for (swatch, text) in entries {
        swatch.draw(area, (x0 + 8, y))?;
        area.draw(&Text::new(text.to_string(), (x0 + 24, y - 7), font.clone()))?;
        y += 21;
    }
    if drift {
        area.draw(&Text::new(
            "(where it leaves the chain, the machine's speed drifted)".to_string(),
            (x0 + 24, y - 9),
            ("sans-serif", 11).into_font(),
        ))?;
    }
    Ok(())
}

/// The step line of `level`: the level after each iteration, held until
/// the next one; a level that holds extends its step (it changes only at
/// keeps, and ten thousand collinear points were most of the bytes).
fn steps(level: &[(u32, f64, f64)]) -> Vec<(f64, f64, f64)> {
    let mut steps: Vec<(f64, f64, f64)> = Vec::new();
    for (k, &(i, v, h)) in level.iter().enumerate() {
        let next = level
            .get(k + 1)
            .map(|n| f64::from(n.0))
            .unwrap_or(f64::from(i) + 0.5);
        match steps.last_mut() {
            Some(end) if end.1 == v => end.0 = next,
            _ => {
                steps.push((f64::from(i), v, h));
                steps.push((next, v, h));
            }
        }
    }
    steps
}

#[cfg(test)]
mod tests;
