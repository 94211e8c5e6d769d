//! Knob points: the parameters the builtin driver searches.
//!
//! A point reaches commands in two ways that must agree: as environment
//! variables, and as `ooda.knobs.env` in the worktree (committed on keep, so
//! the winning setting is part of the branch a human merges). The env file is
//! the source of truth for a worktree: base and candidate each export what
//! their own file says, which makes "what was measured" recoverable from git.

use std::path::Path;

use crate::brief::{Knob, KnobSpec, KnobValue};
use crate::error::{Error, Result};

pub use crate::model::Point;

/// The knob point of a worktree: its knobs file, the Brief's defaults
/// filling the gaps.
pub fn point_in(dir: &Path, brief: &crate::brief::Brief) -> Result<Point> {
    point_in_candidate(dir, brief).map_err(|e| match e {
        Error::Input(m) => Error::Input(format!("{m}. {}", unreadable_advice(brief))),
        e => e,
    })
}

/// [`point_in`] for a candidate's worktree, whose knobs file the plan
/// wrote (and an agent may have edited): its error names the file only.
pub fn point_in_candidate(dir: &Path, brief: &crate::brief::Brief) -> Result<Point> {
    let file = read_env(&dir.join(&brief.knobs_file), &brief.knobs)?;
    Ok(initial_point(&file, &brief.knobs))
}

/// What to do about a knobs file the Brief's knobs do not admit: the file
/// is committed with the tree ooda measures, so it is the Brief (a range
/// narrowed mid-run) or a hand edit that changed.
pub fn unreadable_advice(brief: &crate::brief::Brief) -> String {
    format!(
        "That file is committed with the tree ooda measures (your HEAD's at the start of a run, the run's best on the branch ooda/{b} after it): make the knobs in briefs/{b}.md admit it again (widen the range), or run `ooda reset {b}` to start over from your HEAD. If {k} is not a knobs file at all (ooda writes it, one `NAME=value` line per knob), point `knobs_file` in briefs/{b}.md at a path of its own",
        b = brief.name,
        k = brief.knobs_file
    )
}

/// The knob point committed in `commit`'s knobs file (none when it has
/// none), read as [`read_env`] reads a worktree's: what a run starting or
/// going on from that commit would measure.
pub fn point_at(
    repo: &git2::Repository,
    commit: git2::Oid,
    brief: &crate::brief::Brief,
) -> Result<Point> {
    let blob = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .ok()
        // The Brief accepts `./ooda.knobs.env`; a tree path has no `./`.
        .and_then(|t| {
            t.get_path(Path::new(brief.knobs_file.trim_start_matches("./")))
                .ok()
        })
        .and_then(|e| repo.find_blob(e.id()).ok());
    match blob {
        Some(b) => parse_env(
            &String::from_utf8_lossy(b.content()),
            // The commit as the archive shortens it (text::clip::short).
            &format!(
                "{}:{}",
                crate::text::clip::short(&commit.to_string()),
                brief.knobs_file
            ),
            &brief.knobs,
        ),
        None => Ok(Point::new()),
    }
}

/// The longest knobs file ooda reads: one short line per knob fits many
/// times over.
pub(crate) const MAX_KNOBS_FILE: u64 = 64 * 1024;

/// A stable text key for "has this point been evaluated before?".
pub fn key(point: &Point) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn render_env(point: &Point) -> String {
    let mut out = String::from("# Written by ooda: the knob values this tree is measured with.\n");
    for (k, v) in point {
        out.push_str(&format!("{k}={v}\n"));
    }
    out
}

/// Reads the knobs file of a worktree; only declared knobs are taken, and a
/// value outside its spec is an error naming the line (a human may edit it).
pub fn read_env(path: &Path, knobs: &[Knob]) -> Result<Point> {
    let text = match crate::atomic::read_capped(path, MAX_KNOBS_FILE) {
        Ok((_, true)) => {
            return Err(Error::Input(format!(
                "{} is longer than {MAX_KNOBS_FILE} bytes: a knobs file holds one `NAME=value` line per knob",
                path.display()
            )));
        }
        Ok((bytes, false)) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Point::new()),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    parse_env(&text, &path.display().to_string(), knobs)
}

/// A knobs file's text; `origin` names it in errors (a path, or
/// `commit:path`).
fn parse_env(text: &str, origin: &str, knobs: &[Knob]) -> Result<Point> {
    let mut point = Point::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(Error::Input(format!(
                "{origin}:{}: expected `NAME=value`, found `{line}`",
                i + 1
            )));
        };
        let (k, v) = (k.trim(), v.trim());
        let Some(knob) = knobs.iter().find(|kn| kn.name == k) else {
            continue;
        };
        let value = knob.spec.parse_value(v).ok_or_else(|| {
            Error::Input(format!(
                "{origin}:{}: `{v}` is not a valid value for knob {k} ({})",
                i + 1,
                describe(&knob.spec)
            ))
        })?;
        point.insert(k.to_string(), value);
    }
    Ok(point)
}

pub fn describe(spec: &KnobSpec) -> String {
    match spec {
        KnobSpec::Int { lo, hi, log } => {
            format!(
                "an integer in [{lo}, {hi}]{}",
                if *log { ", log scale" } else { "" }
            )
        }
        KnobSpec::Float { lo, hi, log } => {
            format!(
                "a number in [{lo}, {hi}]{}",
                if *log { ", log scale" } else { "" }
            )
        }
        KnobSpec::Choice(c) => format!("one of {}", c.join(", ")),
    }
}

/// The starting point: the start commit's knobs file, else each knob's default.
/// Knobs with neither stay unset (the program's own default applies).
pub fn initial_point(file_point: &Point, knobs: &[Knob]) -> Point {
    let mut p = Point::new();
    for k in knobs {
        if let Some(v) = file_point.get(&k.name).or(k.default.as_ref()) {
            p.insert(k.name.clone(), v.clone());
        }
    }
    p
}

/// Position of a numeric value in [0, 1] (log scale when the spec says so).
pub fn to_unit(spec: &KnobSpec, v: &KnobValue) -> Option<f64> {
    let x = match v {
        KnobValue::Int(i) => *i as f64,
        KnobValue::Float(f) => *f,
        KnobValue::Str(_) => return None,
    };
    let (lo, hi, log) = match spec {
        KnobSpec::Int { lo, hi, log } => (*lo as f64, *hi as f64, *log),
        KnobSpec::Float { lo, hi, log } => (*lo, *hi, *log),
        KnobSpec::Choice(_) => return None,
    };
    let u = if log {
        (x.ln() - lo.ln()) / (hi.ln() - lo.ln())
    } else {
        (x - lo) / (hi - lo)
    };
    Some(u.clamp(0.0, 1.0))
}

/// Inverse of [`to_unit`], rounded to the knob's grid (integers; floats to
/// three significant digits so "never re-propose a point" is meaningful).
pub fn from_unit(spec: &KnobSpec, u: f64) -> Option<KnobValue> {
    let u = u.clamp(0.0, 1.0);
    match spec {
        KnobSpec::Int { lo, hi, log } => {
            let (l, h) = (*lo as f64, *hi as f64);
            let x = if *log {
                (l.ln() + u * (h.ln() - l.ln())).exp()
            } else {
                l + u * (h - l)
            };
            Some(KnobValue::Int((x.round() as i64).clamp(*lo, *hi)))
        }
        KnobSpec::Float { lo, hi, log } => {
            let x = if *log {
                (lo.ln() + u * (hi.ln() - lo.ln())).exp()
            } else {
                lo + u * (hi - lo)
            };
            Some(KnobValue::Float(round_sig(x, 3).clamp(*lo, *hi)))
        }
        KnobSpec::Choice(_) => None,
    }
}

fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits - 1 - mag);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile() -> Knob {
        Knob {
            name: "TILE".into(),
            spec: KnobSpec::Int {
                lo: 4,
                hi: 256,
                log: true,
            },
            default: None,
        }
    }

    #[test]
    fn unit_round_trip_on_log_int() {
        let spec = tile().spec;
        for v in [4, 8, 16, 64, 256] {
            let u = to_unit(&spec, &KnobValue::Int(v)).unwrap();
            assert_eq!(from_unit(&spec, u), Some(KnobValue::Int(v)));
        }
        assert!((to_unit(&spec, &KnobValue::Int(16)).unwrap() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn env_file_round_trip_and_bad_value_names_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ooda.knobs.env");
        let mut point = Point::new();
        point.insert("TILE".into(), KnobValue::Int(32));
        std::fs::write(&p, render_env(&point)).unwrap();
        assert_eq!(read_env(&p, &[tile()]).unwrap(), point);
        std::fs::write(&p, "TILE=1000\n").unwrap();
        let err = read_env(&p, &[tile()]).unwrap_err().to_string();
        assert!(err.contains(":1:") && err.contains("TILE"), "{err}");
    }

    #[test]
    fn float_rounding_keeps_three_digits() {
        assert_eq!(round_sig(0.123456, 3), 0.123);
        assert_eq!(round_sig(1234.5, 3), 1230.0);
    }
}
