//! `ooda report BRIEF [--json | --tsv]`: print `summary.md` (or
//! `summary.json`, or one row per iteration).

use super::{Globals, out};
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::project::Project;

pub(crate) fn run(g: &Globals, brief: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let layout = crate::archive::layout::Layout::of(&dir);
    let path = if g.json {
        layout.summary_json()
    } else {
        layout.summary()
    };
    let text = crate::atomic::read_string(&path).map_err(|e| {
        Error::Input(format!(
            "{}: {e} (no run yet? start one with `ooda tick {}`)",
            path.display(),
            name
        ))
    })?;
    out(&text)?;
    Ok(Exit::Ok)
}

/// `ooda report BRIEF --tsv`: one tab-separated row per iteration, read
/// from the archive, for a spreadsheet or a script. A reader of
/// autoresearch expects its `results.tsv`; the columns are ours: the
/// effect and its 95% interval are relative gains in the Brief's direction
/// (`0.123` = 12.3% better), empty when the iteration was not measured; the
/// commit is the kept commit (empty for what was not kept).
pub(crate) fn tsv(g: &Globals, brief: &str) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let name = project.run_name(brief)?;
    let dir = project.iterations_dir(&name);
    let history = crate::archive::history::load(&dir)?;
    if history.is_empty() {
        return Err(Error::Input(format!(
            "{}: no iterations yet (start a run with `ooda tick {name}`)",
            dir.display()
        )));
    }
    out(&rows(&history))?;
    Ok(Exit::Ok)
}

fn rows(history: &[crate::model::IterationRecord]) -> String {
    use crate::model::Verdict;
    let cell = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('\t', " ")
    };
    let num = |x: f64| {
        if x.is_finite() {
            format!("{x:.6}")
        } else {
            String::new()
        }
    };
    let mut s = String::from("iteration\tcommit\tverdict\teffect\tci_low\tci_high\tdescription\n");
    for r in history {
        let (e, lo, hi) = r
            .measured
            .as_ref()
            .map(|m| {
                (
                    num(m.effect),
                    num(m.ci.0.min(m.ci.1)),
                    num(m.ci.0.max(m.ci.1)),
                )
            })
            .unwrap_or_default();
        let verdict = match r.discard_kind() {
            Some(k) if r.verdict == Verdict::Discard => format!("discard ({})", k.as_str()),
            _ => r.verdict.as_str().to_string(),
        };
        let what = if r.verdict == Verdict::Baseline || r.hypothesis.is_empty() {
            &r.reason
        } else {
            &r.hypothesis
        };
        s.push_str(&format!(
            "{}\t{}\t{verdict}\t{e}\t{lo}\t{hi}\t{}\n",
            r.iteration,
            r.commit
                .as_deref()
                .filter(|_| r.verdict == Verdict::Keep)
                .map(crate::text::clip::short)
                .unwrap_or_default(),
            cell(what)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IterationRecord, Verdict};

    #[test]
    fn one_row_per_iteration_with_seven_tab_separated_columns() {
        let h = crate::archive::history::synthetic::synthetic_history(30, 3);
        let text = rows(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 31 + 1);
        assert_eq!(
            lines[0],
            "iteration\tcommit\tverdict\teffect\tci_low\tci_high\tdescription"
        );
        for (i, l) in lines[1..].iter().enumerate() {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 7, "{l}");
            assert_eq!(cols[0], i.to_string());
            let r = &h[i];
            assert_eq!(
                cols[1].is_empty(),
                r.verdict != Verdict::Keep || r.commit.is_none(),
                "{l}"
            );
            assert_eq!(cols[3].is_empty(), r.measured.is_none(), "{l}");
            if let Some(m) = &r.measured {
                let (lo, hi): (f64, f64) = (cols[4].parse().unwrap(), cols[5].parse().unwrap());
                assert!(lo <= hi && (cols[3].parse::<f64>().unwrap() - m.effect).abs() < 1e-6);
            }
        }
        let mut r = IterationRecord::new(1, Verdict::Discard);
        r.hypothesis = "two\tlines\nhere".into();
        let text = rows(&[r]);
        assert!(text.ends_with("\t\t\t\ttwo lines here\n"), "{text:?}");
    }
}
