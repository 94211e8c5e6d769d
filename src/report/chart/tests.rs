use super::*;
use crate::model::{Calibration, IterationRecord};

fn brief(direction: &str) -> Brief {
    let text = format!(
        "---\nmetric:\n  name: time_ms\n  command: ./b\n  direction: {direction}\nagent: script\n---\n# Goal\ng\n# Success\ns\n# Must not break\nm\n"
    );
    Brief::parse(std::path::Path::new("briefs/t.md"), &text).unwrap()
}

/// A measured iteration: medians `base` → `cand` (a minimized metric),
/// its paired log ratio `d` with a 95% interval of ±`h`, over 12 pairs.
fn measured(i: u32, verdict: Verdict, base: f64, cand: f64, d: f64, h: f64) -> IterationRecord {
    crate::eval::measured_for_test(i, verdict, Direction::Minimize, (base, cand), d, h, 12)
}

fn baseline(median: f64) -> IterationRecord {
    let mut r = IterationRecord::new(0, Verdict::Baseline);
    r.calibration = Some(Calibration {
        pairs: Vec::new(),
        median,
        run_sd: 0.01,
        noise_sd: 0.014,
        mean_d: 0.0,
        pairs_per_decision: 12,
        theta1: 0.01,
        alpha_look: None,
        advice: None,
    });
    r
}

/// The issue's night in small: the machine got 2.7× faster halfway, so
/// late discards measured far below the early medians while their paired
/// effects said no gain.
fn drifting_night() -> Vec<IterationRecord> {
    let mut h = vec![
        baseline(1000.0),
        measured(1, Verdict::Keep, 1000.0, 800.0, 0.22, 0.05),
        measured(2, Verdict::Discard, 800.0, 900.0, -0.12, 0.05),
        IterationRecord::new(3, Verdict::Crash),
        // The machine speeds up: the base now measures 300.
        measured(4, Verdict::Discard, 300.0, 310.0, -0.03, 0.04),
        measured(5, Verdict::Keep, 300.0, 260.0, 0.14, 0.04),
        IterationRecord::new(6, Verdict::Invalid),
        measured(7, Verdict::Discard, 260.0, 250.0, 0.04, 0.06),
        IterationRecord::new(8, Verdict::Blocked),
    ];
    h[7].discard = Some(DiscardKind::Inconclusive);
    h[2].discard = Some(DiscardKind::Worse);
    h[4].discard = Some(DiscardKind::Futile);
    let mut review = measured(9, Verdict::Discard, 260.0, 230.0, 0.12, 0.03);
    review.discard = Some(DiscardKind::BlockedByReview);
    h.push(review);
    let mut last = measured(10, Verdict::Discard, 260.0, 262.0, -0.01, 0.03);
    last.discard = Some(DiscardKind::Neutral);
    last.confirmation = Some(Confirmation {
        start: "s".into(),
        best: format!("{:040}", 5),
        pairs: Vec::new(),
        best_median: 255.0,
        start_median: 690.0,
        effect: crate::eval::gain(Direction::Minimize, 0.35),
        ci: (
            crate::eval::gain(Direction::Minimize, 0.31),
            crate::eval::gain(Direction::Minimize, 0.39),
        ),
        p: 0.001,
        why: String::new(),
    });
    h.push(last);
    h
}

#[test]
fn every_candidate_sits_at_its_base_plus_its_own_effect_whatever_the_medians() {
    let s = Series::of(&drifting_night(), Direction::Minimize);
    let level_at = |i: u32| s.level.iter().find(|l| l.0 == i).unwrap().1;
    assert!((level_at(0)).abs() < 1e-12);
    assert!((level_at(1) - 0.22).abs() < 1e-12);
    assert!((level_at(4) - 0.22).abs() < 1e-12);
    assert!((level_at(5) - 0.36).abs() < 1e-12);
    assert!((level_at(10) - 0.36).abs() < 1e-12);
    for c in &s.candidates {
        // A discard is on the better side of its base only if its own
        // effect is: iteration 4 measured at 310 against an early 800
        // is still below the line.
        assert!(
            (c.y - c.base - measured_d(c.iteration)).abs() < 1e-9,
            "{c:?}"
        );
        assert!(c.lo <= c.y && c.y <= c.hi, "{c:?}");
    }
    // The base's medians drifted 2.7×: the thin line says so, the
    // chain does not move.
    let drift_at = |i: u32| s.drift.iter().find(|d| d.0 == i).unwrap().1;
    assert!((drift_at(4) - (1000.0f64 / 300.0).ln()).abs() < 1e-9);
    assert_eq!(
        s.unmeasured.iter().map(|u| u.failure).collect::<Vec<_>>(),
        [Failure::Crash, Failure::Invalid, Failure::Blocked]
    );
    assert_eq!(s.confirmations.len(), 1);
    assert!((s.confirmations[0].y - 0.35).abs() < 1e-9);
    let marks: Vec<Mark> = s.candidates.iter().map(|c| c.mark).collect();
    assert_eq!(
        marks,
        [
            Mark::Keep,
            Mark::Worse,
            Mark::Futile,
            Mark::Keep,
            Mark::Inconclusive,
            Mark::BlockedByReview,
            Mark::Neutral
        ]
    );
}

fn measured_d(i: u32) -> f64 {
    match i {
        1 => 0.22,
        2 => -0.12,
        4 => -0.03,
        5 => 0.14,
        7 => 0.04,
        9 => 0.12,
        10 => -0.01,
        _ => unreachable!("{i}"),
    }
}

#[test]
fn the_step_line_has_a_corner_only_where_the_level_moves() {
    let level: Vec<(u32, f64, f64)> = (0..10_000)
        .map(|i| (i, if i < 40 { 0.0 } else { 0.2 }, 0.01))
        .collect();
    assert_eq!(
        steps(&level),
        [
            (0.0, 0.0, 0.01),
            (40.0, 0.0, 0.01),
            (40.0, 0.2, 0.01),
            (9999.5, 0.2, 0.01)
        ]
    );
    assert!(steps(&[]).is_empty());
}

#[test]
fn ten_thousand_iterations_are_thinned_with_every_keep_and_the_same_steps() {
    let h = crate::archive::history::synthetic::synthetic_history(10_000, 7);
    let full = Series::of(&h, Direction::Minimize);
    let thin = full.clone().thinned(MAX_MARKERS);
    let k = thin.thinned.expect("thinned, and it says so");
    let keeps = full
        .candidates
        .iter()
        .filter(|c| c.mark == Mark::Keep)
        .count();
    let markers = thin.candidates.len() + thin.unmeasured.len();
    assert!(markers <= MAX_MARKERS + keeps, "{markers}");
    for c in full.candidates.iter().filter(|c| c.mark == Mark::Keep) {
        assert!(thin.candidates.contains(c), "keep {} dropped", c.iteration);
    }
    let xy =
        |s: &Series| -> Vec<(f64, f64)> { steps(&s.level).iter().map(|s| (s.0, s.1)).collect() };
    assert_eq!(xy(&thin), xy(&full));
    assert!(k >= 5);
    let short = Series::of(&h[..50], Direction::Minimize);
    let same = short.clone().thinned(MAX_MARKERS);
    assert_eq!(same.thinned, None);
    assert_eq!(same.candidates, short.candidates);
    assert_eq!(same.level.len(), short.level.len());
}

#[test]
fn ticks_are_round_gains_and_there_are_enough_of_them() {
    for dir in [Direction::Minimize, Direction::Maximize] {
        for (lo, hi) in [
            (-0.05, 0.05),
            (-0.3, 1.8),
            (-2.2, 1.7),
            (-0.01, 0.2),
            (0.0, 4.0),
        ] {
            let t = ticks(dir, lo, hi);
            assert!((4..=9).contains(&t.len()), "{dir:?} {lo}..{hi}: {t:?}");
            assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
            assert!(t.contains(&0.0) || lo > 0.0, "{t:?}");
            for y in t {
                let label = tick_label(dir, y);
                assert!(!label.contains(".0%"), "{label}");
            }
        }
    }
    assert_eq!(tick_label(Direction::Minimize, 2f64.ln()), "+50%");
    assert_eq!(tick_label(Direction::Minimize, -2f64.ln()), "2× worse");
    assert_eq!(tick_label(Direction::Maximize, 2f64.ln()), "2× better");
    assert_eq!(tick_label(Direction::Minimize, 0.0), "0 (the start)");
}

/// The SVG rendered to pixels, with the system's fonts.
fn render(svg: &str) -> resvg::tiny_skia::Pixmap {
    let mut opt = resvg::usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb's generic sans-serif is Arial: the first sans face installed
    // stands in (CI installs DejaVu).
    let sans = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
        .find(|n| n.contains("Sans") && !n.contains("Mono"));
    if let Some(sans) = sans {
        db.set_sans_serif_family(sans);
    }
    let tree = resvg::usvg::Tree::from_str(svg, &opt).expect("a valid SVG");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
}

fn has_sans_font() -> bool {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    db.faces()
        .flat_map(|f| f.families.iter())
        .any(|(n, _)| n.contains("Sans") && !n.contains("Mono"))
}

fn pixel(p: &resvg::tiny_skia::Pixmap, x: i32, y: i32) -> Option<(u8, u8, u8)> {
    if x < 0 || y < 0 || x >= p.width() as i32 || y >= p.height() as i32 {
        return None;
    }
    let c = p.pixel(x as u32, y as u32)?.demultiply();
    Some((c.red(), c.green(), c.blue()))
}

fn near(a: (u8, u8, u8), b: RGBColor) -> bool {
    let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).abs();
    d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2) < 40
}

/// The rendering agrees with the geometry a reader needs: text only
/// outside the plot area (so no label covers a mark), every marker drawn
/// where it was placed, and every discard on the side of the step line its
/// own effect says. The chart is also written to `target/` as a PNG for a
/// person to look at.
fn check_pixels(name: &str, brief: &Brief, s: &Series, headline: &str) -> (usize, usize) {
    let (mut checked, mut nonkeeps) = (0, 0);
    let (svg, g) = svg_of(brief, s, headline);
    let full = render(&svg);
    let bare = render(
        &regex::Regex::new(r"(?s)<text[^>]*>.*?</text>")
            .unwrap()
            .replace_all(&svg, ""),
    );
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&out);
    let _ = full.save_png(out.join(format!("chart-{name}.png")));
    let _ = std::fs::write(out.join(format!("chart-{name}.svg")), &svg);
    let (l, t, r, b) = g.plot;
    assert!(l < r && t < b, "{:?}", g.plot);
    let mut text_pixels = 0;
    for y in 0..full.height() as i32 {
        for x in 0..full.width() as i32 {
            if pixel(&full, x, y) != pixel(&bare, x, y) {
                text_pixels += 1;
                let inside = x > l + 1 && x < r - 1 && y > t + 1 && y < b - 1;
                assert!(!inside, "{name}: text drawn over the plot at ({x}, {y})");
            }
        }
    }
    if has_sans_font() {
        assert!(
            text_pixels > 2000,
            "{name}: the labels were not rendered: {text_pixels} pixels"
        );
    } else {
        // A machine without fonts draws no text: nothing to overlap, and
        // nothing checked (CI installs one: .ci/run).
        eprintln!(
            "{name}: no sans-serif font is installed (apt-get install fonts-dejavu-core): the labels' check is skipped"
        );
    }
    for (k, &(mark, it, effect, (px, py))) in g.candidates.iter().enumerate() {
        assert!(
            px >= l && px <= r && py >= t && py <= b,
            "{name}: iteration {it} at ({px}, {py}) outside the plot {:?}",
            g.plot
        );
        // The marker's own pixels around where it was placed.
        let mine: Vec<(i32, i32)> = (py - 7..=py + 7)
            .flat_map(|y| (px - 7..=px + 7).map(move |x| (x, y)))
            .filter(|&(x, y)| pixel(&full, x, y).is_some_and(|c| near(c, mark.color())))
            .collect();
        // A mark drawn later within reach may cover it (a long night's
        // markers touch): then there is nothing of it to check.
        let covered = g.candidates[k + 1..]
            .iter()
            .map(|c| c.3)
            .chain(g.others.iter().copied())
            .any(|(x, y)| (x - px).abs() <= 12 && (y - py).abs() <= 12);
        if covered {
            continue;
        }
        assert!(
            !mine.is_empty(),
            "{name}: iteration {it}'s marker not drawn"
        );
        let cy = mine.iter().map(|p| p.1).sum::<i32>() as f64 / mine.len() as f64;
        if mark == Mark::Keep {
            continue;
        }
        nonkeeps += 1;
        // The step line beside the marker (its own interval bar covers the
        // line in its column): a column a little left or right of it where
        // the line is one horizontal run (a keep's step is vertical).
        let line = [-9, 9, -12, 12].iter().find_map(|dx| {
            let ys: Vec<i32> = (t..b)
                .filter(|&y| pixel(&full, px + dx, y).is_some_and(|c| near(c, STEP)))
                .collect();
            let (&first, &last) = (ys.first()?, ys.last()?);
            (last - first <= 6).then(|| ys.iter().sum::<i32>() as f64 / ys.len() as f64)
        });
        let Some(ly) = line else { continue };
        if (cy - ly).abs() > 3.0 {
            checked += 1;
            assert_eq!(
                cy < ly,
                effect > 0.0,
                "{name}: iteration {it} ({mark:?}, effect {effect:+.3}) drawn at y {cy:.0} against the line at {ly:.0}"
            );
        } else {
            // On the line: then its effect is too small to be a side.
            checked += 1;
            assert!(
                effect.abs() < 0.05,
                "{name}: iteration {it} on the line with {effect:+.3}"
            );
        }
    }
    (checked, nonkeeps)
}

#[test]
fn the_rendered_chart_puts_every_discard_on_its_side_and_no_label_on_data() {
    let h = drifting_night();
    let s = Series::of(&h, Direction::Minimize);
    let (checked, nonkeeps) = check_pixels(
        "drifting",
        &brief("minimize"),
        &s,
        "confirmed +29.5% [+26.7, +32.3]",
    );
    // Each discard's side was read off the pixels, not skipped.
    assert!(
        checked * 10 >= nonkeeps * 8,
        "{checked} of {nonkeeps} checked"
    );
    // Every kind of mark has a legend entry.
    let (svg, _) = svg_of(&brief("minimize"), &s, "x");
    for label in Mark::ALL
        .iter()
        .filter(|m| **m != Mark::Screened)
        .map(|m| m.label())
        .chain(Failure::ALL.iter().map(|f| f.label()))
        .chain([
            "kept changes chained (paired)",
            "95% band of the chain",
            "a candidate's own 95% interval",
            "confirmation: start vs best, fresh pairs",
            "base's median vs iteration 0's",
        ])
    {
        let escaped = label.replace('\'', "&apos;");
        assert!(
            svg.contains(label) || svg.contains(&escaped),
            "legend misses {label}"
        );
    }
    // A long night, thinned.
    let long = crate::archive::history::synthetic::synthetic_history(2_000, 5);
    let s = Series::of(&long, Direction::Minimize).thinned(MAX_MARKERS);
    check_pixels(
        "long",
        &brief("minimize"),
        &s,
        "estimated +12.0% [+10.0, +14.0]",
    );
}

#[test]
fn the_drift_fixture_a_real_night_renders_truthfully() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/drift-night/iterations/drift");
    let h = crate::archive::history::load_files(&dir).expect("the fixture's archive");
    let s = Series::of(&h, Direction::Minimize);
    assert!(
        s.candidates.iter().any(|c| c.mark != Mark::Keep),
        "the fixture has discards"
    );
    // Titled with its headline, as the night's own summary writes it.
    let best = h
        .iter()
        .rev()
        .find(|r| r.verdict == Verdict::Keep)
        .and_then(|r| r.commit.clone())
        .unwrap_or_default();
    let headline =
        crate::report::headline::Headline::of_records(&h, Direction::Minimize, &best).short();
    let (checked, nonkeeps) = check_pixels("drift-fixture", &brief("minimize"), &s, &headline);
    assert!(
        checked * 10 >= nonkeeps * 8,
        "{checked} of {nonkeeps} checked"
    );
}
