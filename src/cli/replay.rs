//! `ooda replay BRIEF ITER [--full] [--json]`.

use std::fmt::Write as _;

use super::output::progress_printer;
use super::{Globals, out};
use crate::error::Result;
use crate::exit::Exit;
use crate::phases::replay::{Outcome, PlanSummary};
use crate::project::Project;
use crate::run::interrupt::Interrupt;

pub(crate) fn run(g: &Globals, brief: &str, iteration: u32, full: bool) -> Result<Exit> {
    let project = Project::discover(g.root.as_deref())?;
    let b = project.load_brief(brief)?;
    let interrupt = Interrupt::install();
    let (dir, rec) = crate::phases::replay::run(
        &project,
        &b,
        iteration,
        full,
        interrupt.flag(),
        progress_printer(g.quiet),
    )?;
    // A project set up before replays existed does not ignore their logs
    // and prompts: say how to, rather than leave them in `git status`.
    let log = crate::archive::layout::Layout::of(&dir).events();
    if !project.unignored(std::slice::from_ref(&log)).is_empty() && !g.quiet {
        eprintln!(
            "note: {} is not ignored by git; `ooda init` adds the .gitignore lines for replays (it keeps replay.json)",
            log.display()
        );
    }
    if g.json {
        out(&format!(
            "{}\n",
            crate::atomic::read_string(dir.join("replay.json")).unwrap_or_default()
        ))?;
        return Ok(Exit::Ok);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "replay of iteration {} of {} ({}), from its base {}, with today's {} driver",
        rec.iteration,
        rec.brief,
        rec.id,
        crate::text::clip::short(&rec.base),
        rec.driver
    );
    if rec.driver == "builtin" {
        // The builtin driver plans from the archive with no prompt: a
        // replay shows what today's code and configuration propose.
        let _ = writeln!(
            s,
            "  (the builtin driver reads no prompt: today's templates play no part; its search, knobs and configuration do)"
        );
    }
    let _ = writeln!(s, "  then  {}", plan_line(Some(&rec.original_plan)));
    let _ = writeln!(s, "  now   {}", plan_line(rec.plan.as_ref()));
    if let Some(p) = &rec.problem {
        let _ = writeln!(s, "  problem  {p}");
    }
    let _ = writeln!(s, "  then  {}", outcome_line(&rec.original_outcome));
    match &rec.outcome {
        Some(o) => {
            let _ = writeln!(s, "  now   {}", outcome_line(o));
        }
        None if !rec.full => {
            let _ = writeln!(
                s,
                "  now   not measured (`--full` also makes the change and measures it)"
            );
        }
        None => {}
    }
    if !rec.usage.is_empty() {
        let _ = writeln!(
            s,
            "  usage {} tokens in, {} out{}",
            rec.usage.input,
            rec.usage.output,
            rec.usage
                .cost_usd
                .map(|c| format!(", {}", crate::validate::units::format_usd(c)))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        s,
        "recorded in {}\ncompare the two trees: ooda compare {} {} {}",
        dir.display(),
        rec.brief,
        rec.iteration,
        rec.id
    );
    out(&s)?;
    Ok(Exit::Ok)
}

fn plan_line(p: Option<&PlanSummary>) -> String {
    match p {
        None => "no plan".into(),
        Some(p) => format!(
            "{}{}",
            crate::text::clip::clip(&p.hypothesis, 100),
            match (p.predicted_effect, p.predicted_sd) {
                (Some(e), Some(sd)) =>
                    format!(" (predicted {})", crate::text::number::predicted(e, sd)),
                _ => String::new(),
            }
        ),
    }
}

pub(super) fn outcome_line(o: &Outcome) -> String {
    format!("{}: {}", o.verdict, crate::text::clip::clip(&o.reason, 140))
}
