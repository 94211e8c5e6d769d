//! `ooda check`: validate a Brief and, with `--measure N`, try its commands.
//!
//! Measuring happens in a scratch worktree at the current HEAD
//! (`.ooda/worktrees/<brief>/check`), never in the user's checkout, and tells
//! the user before the night whether the metric is usable: its values, their
//! spread, and the smallest gain the decision rule could detect. It runs the
//! commands exactly as a tick would (the eval-runner, the executor), so what
//! works here works at night.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::brief::{Brief, Parse};
use crate::driver::MainAgent;
use crate::error::{Error, Result};
use crate::eval::{Evaluator, RunFailure, Side, Worktree, gain};
use crate::events::{Progress, Span};
use crate::executor::{Executor, Local, Purpose};
use crate::history::fmt_num;
use crate::knobs;
use crate::phases::Print;
use crate::project::Project;
use crate::stats;

pub fn describe(brief: &Brief, project: &Project) -> String {
    let mut s = String::new();
    let m = &brief.metric;
    let _ = writeln!(s, "{}: valid", brief.path.display());
    let _ = writeln!(
        s,
        "  metric      {} ({:?}) from `{}`",
        m.name, m.direction, m.command
    );
    if let Some(setup) = &m.setup {
        let _ = writeln!(s, "  setup       `{setup}`");
    }
    let parse = match &m.parse {
        Parse::MetricLine => "metric-line".to_string(),
        Parse::Regex(r) => format!("regex:{}", r.as_str()),
        Parse::Json(p) => format!("json:{p}"),
    };
    let _ = writeln!(
        s,
        "  parse       {parse}; timeout {}; noise floor {:.1}%",
        crate::brief::format_duration(m.timeout),
        m.noise_floor * 100.0
    );
    if let Some(t) = m.target {
        let _ = writeln!(s, "  target      {}", fmt_num(t));
    }
    for g in &brief.guards {
        let _ = writeln!(s, "  guard       `{g}`");
    }
    let _ = writeln!(
        s,
        "  scope       allow {:?}, protect {:?}",
        brief.scope.allow, brief.scope.protect
    );
    for k in &brief.knobs {
        let _ = writeln!(
            s,
            "  knob        {} = {}{}",
            k.name,
            knobs::describe(&k.spec),
            k.default
                .as_ref()
                .map(|d| format!(", default {d}"))
                .unwrap_or_default()
        );
    }
    match MainAgent::for_brief(brief, &project.config) {
        Ok(MainAgent::Command(a)) => describe_agent(&mut s, &a, project),
        Ok(a) => {
            let _ = writeln!(s, "  agent       {}", a.name());
        }
        Err(e) => {
            let _ = writeln!(s, "  agent       NOT RUNNABLE: {e}");
        }
    }
    let b = project.config.budget_for(brief);
    let _ = writeln!(
        s,
        "  budget      iterations {}, wall {}, tokens {}, cost {}",
        b.iterations
            .map(|n| n.to_string())
            .unwrap_or_else(|| "none".into()),
        b.wall
            .map(crate::brief::format_duration)
            .unwrap_or_else(|| "none".into()),
        b.tokens
            .map(|n| n.to_string())
            .unwrap_or_else(|| "none".into()),
        b.cost_usd
            .map(|c| format!("${c:.2}"))
            .unwrap_or_else(|| "none".into())
    );
    if let Some(sch) = &brief.schedule {
        let zone = crate::schedule::Zone::from_env();
        match crate::schedule::describe(sch, chrono::Utc::now(), &zone) {
            Ok(text) => s.push_str(&text),
            Err(e) => {
                let _ = writeln!(s, "  schedule    {sch}: {e}");
            }
        }
    }
    s
}

/// A command agent as it will run: its profile and the exact shell line.
fn describe_agent(s: &mut String, a: &crate::driver::CommandAgent, project: &Project) {
    let p = &a.profile;
    let _ = writeln!(
        s,
        "  agent       {} (command driver: format {}, prompt on {}, timeout {})",
        a.name,
        p.format.as_str(),
        match p.prompt {
            crate::config::PromptMode::Stdin => "stdin",
            crate::config::PromptMode::Arg => "the command line",
            crate::config::PromptMode::File => "the command line as a file path",
        },
        crate::brief::format_duration(a.timeout())
    );
    let _ = writeln!(s, "  command     {}", a.command_line());
    let _ = writeln!(
        s,
        "              in the candidate worktree, with OODA_PHASE, OODA_BRIEF, OODA_ITERATION, OODA_PROMPT_FILE and OODA_OUTPUT_FILE set"
    );
    for (k, v) in &p.env {
        let _ = writeln!(s, "  agent env   {k}={}", crate::compress::redact(v));
    }
    if let Some(problem) = a.program_problem(&project.root) {
        let _ = writeln!(s, "  warning     {problem}");
    }
}

/// Runs setup and guards once, then the metric `n` times, in a scratch
/// worktree, through the same eval-runner and executor as a tick.
pub fn measure(
    project: &Project,
    brief: &Brief,
    n: u32,
    cancel: &AtomicBool,
    print: Print,
) -> Result<String> {
    let ws = crate::workspace::Workspace::open(
        &project.root,
        &project.worktrees_dir(&brief.name),
        &brief.name,
    )?;
    let head = ws.user_head()?;
    let wt = Worktree::new(Side::Check, ws.scratch("check", head)?, brief)?;
    let print: Arc<dyn Fn(&str) + Send + Sync> = Arc::from(print);
    let shown = print.clone();
    let progress = Progress::new(&brief.name, false, Box::new(move |l| shown(l)));
    // Nothing is archived: the events go to the display only.
    let span = Span::new("check", vec![Arc::new(progress)]);
    let lease = Local.lease(Purpose::Check)?;
    let mut ev = Evaluator {
        brief,
        output_cap: project.config.defaults.output_cap as usize,
        cancel,
        span: &span,
        lease: lease.as_ref(),
    };
    let fail = |f: RunFailure| {
        let RunFailure::Failed { reason, output } = f;
        Error::Input(format!("{reason}:\n{output}"))
    };
    if let Some(f) = ev.setup(&wt)? {
        return Err(fail(f));
    }
    if let (_, Some(f)) = ev.guards(&wt)? {
        return Err(fail(f));
    }
    let mut values = Vec::new();
    for i in 1..=n {
        let (v, _) = ev.metric(&wt)?.map_err(fail)?;
        print(&format!(
            "run {i}/{n}: {} = {}",
            brief.metric.name,
            fmt_num(v)
        ));
        values.push(v);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} over {n} run(s) at committed HEAD {}: {}",
        brief.metric.name,
        crate::history::short(&head.to_string()),
        values
            .iter()
            .map(|v| fmt_num(*v))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if values.iter().any(|v| *v <= 0.0) {
        let _ = writeln!(
            s,
            "warning: the metric must be positive: ooda compares ratios"
        );
        return Ok(s);
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let _ = writeln!(
        s,
        "median {}, min {}, max {}",
        fmt_num(stats::median(&values)),
        fmt_num(values.iter().copied().fold(f64::INFINITY, f64::min)),
        fmt_num(values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    );
    if n >= 2 {
        let sd = stats::sd(&logs);
        let pairs = project.config.defaults.pairs;
        let mde = stats::min_detectable_effect(
            sd * std::f64::consts::SQRT_2,
            pairs as usize,
            project.config.defaults.alpha,
            0.8,
        );
        let _ = writeln!(
            s,
            "spread: {:.2}% run to run (sd of log values)",
            sd * 100.0
        );
        let _ = writeln!(
            s,
            "minimum detectable gain: {:.2}% at {pairs} pairs (80% power, α = {}); smaller gains will be discarded as noise",
            gain(crate::brief::Direction::Minimize, mde) * 100.0,
            project.config.defaults.alpha
        );
    } else {
        let _ = writeln!(s, "measure at least 2 runs to see the spread (--measure 5)");
    }
    Ok(s)
}
