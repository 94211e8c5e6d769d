//! What `ooda check` says of a Brief without running anything: the Brief as
//! the runner reads it, the problems that stop a night (each with its fix),
//! the warnings, and the same as JSON. `--preflight` (`preflight.rs`) and
//! `--measure` (`measure.rs`) run the agent and the commands.

use std::fmt::Write as _;

use crate::brief::points;
use crate::brief::{Brief, Parse};
use crate::driver::MainAgent;
use crate::project::Project;
use crate::text::clip::fmt_num;

pub(crate) fn describe(brief: &Brief, project: &Project) -> String {
    let mut s = String::new();
    let m = &brief.metric;
    let _ = writeln!(s, "{}: valid", brief.path.display());
    let _ = writeln!(
        s,
        "  metric      {} ({}) from `{}`",
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
    let _ = writeln!(
        s,
        "  measured    as by hand: {}; {}",
        if m.env.is_empty() {
            "none of ooda's OODA_* variables".to_string()
        } else {
            format!("ooda's variables {} only (metric.env)", m.env.join(", "))
        },
        if m.fresh_outputs {
            "what each timed run creates is removed after it (metric.fresh_outputs)"
        } else {
            "what the timed runs write is recorded, a cache between runs flagged"
        }
    );
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
            points::describe(&k.spec),
            k.default
                .as_ref()
                .map(|d| format!(", default {d}"))
                .unwrap_or_default()
        );
    }
    match MainAgent::for_brief(brief, &project.config) {
        Ok(MainAgent::Command(a)) => describe_agent(&mut s, &a),
        Ok(MainAgent::Llm(a)) => describe_llm(&mut s, &a),
        Ok(a) => {
            let _ = writeln!(s, "  agent       {}", a.name());
        }
        Err(e) => {
            let _ = writeln!(s, "  agent       NOT RUNNABLE: {e}");
        }
    }
    let _ = writeln!(s, "  sandbox     {}", sandbox_line(brief, project));
    let _ = writeln!(
        s,
        "  privileges  {}",
        crate::run::sandbox::describe_capabilities()
    );
    let confined = project
        .config
        .sandbox
        .in_force(agent_name(brief, project).as_deref())
        .is_ok_and(|f| f.abi.is_some());
    let _ = writeln!(
        s,
        "  servers     {}",
        if !confined {
            "not hidden: this Brief's commands are not confined (the builtin driver runs your own code; `sandbox: on` in ooda.yaml confines them, and hides your tmux, D-Bus, X, screen and ssh-agent sockets from them)"
        } else if crate::run::sandbox::can_hide_sockets() {
            "hidden: each command gets a mount namespace in which the folders of your tmux, D-Bus, X, screen and ssh-agent sockets are empty"
        } else {
            "NOT hidden: this machine allows no mount namespace (neither root nor unprivileged user namespaces), so a confined command can ask your tmux or D-Bus server to run something unconfined; see docs/sandbox.md"
        }
    );
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
            .map(crate::validate::units::format_usd)
            .unwrap_or_else(|| "none".into())
    );
    if let Some(sch) = &brief.schedule {
        let zone = crate::validate::cron::Zone::from_env();
        match crate::validate::cron::describe(sch, chrono::Utc::now(), &zone) {
            Ok(text) => s.push_str(&text),
            Err(e) => {
                let _ = writeln!(s, "  schedule    {sch}: {e}");
            }
        }
    }
    if let Ok(roster) = crate::subagents::Roster::load(&project.root, &project.config) {
        let main = agent_name(brief, project);
        for d in &roster.definitions {
            let model = match d.driver {
                crate::subagents::definition::SubDriver::Builtin => String::new(),
                _ => format!(", model {}", d.model.describe(&project.config)),
            };
            let _ = writeln!(
                s,
                "  subagent    {} ({}): {}, {}{model}, on {}, sees {}",
                d.name,
                if d.built_in {
                    "built-in".to_string()
                } else {
                    d.path.display().to_string()
                },
                d.role
                    .map(|r| r.as_str())
                    .unwrap_or("no role, never dispatched"),
                d.driver_name(main.as_deref()),
                d.triggers_text(),
                d.sees_text(),
            );
        }
    }
    if project.config.placement_for(brief) == crate::model::Placement::Slurm {
        let settings = project.config.slurm_for(brief);
        let args = settings.sbatch_args();
        let _ = writeln!(
            s,
            "  executor    slurm: each phase's measurements in one allocation (sbatch {})",
            if args.is_empty() {
                "with the cluster's defaults".to_string()
            } else {
                args.join(" ")
            }
        );
        let fmt = crate::validate::units::format_duration;
        let _ = writeln!(
            s,
            "              a silent controller is waited for up to {} (slurm.controller_wait), a pending job up to {} (slurm.pending_limit); then the phase is parked, never decided",
            fmt(settings
                .controller_wait
                .unwrap_or(crate::run::executor::CONTROLLER_WAIT)),
            fmt(settings
                .pending_limit
                .unwrap_or(crate::run::executor::PENDING_LIMIT)),
        );
    }
    for w in warnings(brief, project) {
        let _ = writeln!(s, "  warning     {w}");
    }
    for p in problems(brief, project) {
        let _ = writeln!(s, "  PROBLEM     {p}");
    }
    s
}

/// What stops a night before its first measurement: a program named by a
/// path that is missing, not executable or not committed (the worktrees are
/// checkouts of the committed history), an agent program that cannot start.
/// `ooda check` exits 2 when there is any.
pub(crate) fn problems(brief: &Brief, project: &Project) -> Vec<String> {
    let m = &brief.metric;
    // A metric or guard program may be what `setup` builds (the quickstart's
    // is): with a setup, one that does not exist yet is left to `--measure`
    // (which runs the setup first); one that exists is checked as ever
    // (committed, executable).
    let built = m.setup.is_some();
    let mut out: Vec<String> = std::iter::once(("the metric command", &m.command))
        .chain(m.setup.iter().map(|c| ("setup", c)))
        .chain(brief.guards.iter().map(|g| ("a guard", g)))
        .filter(|(what, cmd)| !(built && *what != "setup" && not_there(&project.root, cmd)))
        .filter_map(|(what, cmd)| command_problem(&project.root, cmd, what))
        .collect();
    match MainAgent::for_brief(brief, &project.config) {
        Ok(MainAgent::Command(a)) => out.extend(a.program_problem(&project.root)),
        Ok(_) => {}
        Err(e) => out.push(e.to_string()),
    }
    match crate::subagents::Roster::load(&project.root, &project.config) {
        Err(e) => out.extend(e.problems.iter().map(|p| p.to_string())),
        Ok(roster) => {
            let main = agent_name(brief, project);
            for d in unrunnable_reviewers(&roster, main.as_deref())
                .filter(|d| d.on_error == crate::subagents::definition::OnError::Block)
            {
                out.push(format!(
                    "{}: a `driver: command` reviewer with the Brief's builtin agent has no command to run, and being `on_error: block` it would block every keep: set `agent: <profile>` in it",
                    d.path.display()
                ));
            }
        }
    }
    if git2::Repository::open(&project.root).is_ok_and(|r| {
        r.head()
            .is_err_and(|e| e.code() == git2::ErrorCode::UnbornBranch)
    }) {
        out.push(crate::workspace::no_commit_yet());
    }
    out.extend(committed(brief, project).problems);
    out.extend(knob_problems(brief, project));
    if let Some(e) = crate::archive::leftover_branch_at(
        &project.root,
        &project.iterations_dir(&brief.name),
        &brief.name,
    ) {
        out.push(e.to_string());
    }
    if let Err(e) = project
        .config
        .sandbox
        .in_force(agent_name(brief, project).as_deref())
        .and_then(|s| s.refuse_wide(&project.root))
    {
        out.push(format!("{}: {e}", crate::config::FILE_NAME));
    }
    out
}

/// What the committed tree a tick will run says (`committed.rs`), with the
/// command agent's program among the commands.
fn committed(brief: &Brief, project: &Project) -> super::committed::Findings {
    let agent = match MainAgent::for_brief(brief, &project.config) {
        Ok(MainAgent::Command(a)) => a.profile.command.first().cloned(),
        _ => None,
    };
    super::committed::differences(brief, &project.root, agent.as_deref())
}

/// A knobs file the Brief's knobs no longer admit: the run's best's (where
/// a run goes on), else your HEAD's (where one starts), e.g. after a range
/// was narrowed mid-run. Every tick would fail on it.
fn knob_problems(brief: &Brief, project: &Project) -> Vec<String> {
    if brief.knobs.is_empty() {
        return Vec::new();
    }
    let Ok(repo) = git2::Repository::open(&project.root) else {
        return Vec::new();
    };
    // A run goes on from its best; a new one starts from your HEAD.
    let branch = format!("refs/heads/ooda/{}", brief.name);
    let (what, commit) = match repo.refname_to_id(&branch) {
        Ok(c) => ("the run's best", c),
        Err(_) => match repo.refname_to_id("HEAD") {
            Ok(c) => ("your HEAD", c),
            Err(_) => return Vec::new(),
        },
    };
    match points::point_at(&repo, commit, brief) {
        Ok(_) => Vec::new(),
        Err(e) => vec![format!("{what}: {e}. {}", points::unreadable_advice(brief))],
    }
}

pub(super) fn agent_name(brief: &Brief, project: &Project) -> Option<String> {
    MainAgent::for_brief(brief, &project.config)
        .ok()
        .and_then(|a| a.agent_name())
}

/// The sandbox a tick of this Brief would run its commands in, and the
/// Landlock ABI this kernel offers.
fn sandbox_line(brief: &Brief, project: &Project) -> String {
    let found = match crate::run::sandbox::landlock_abi() {
        Some(abi) => format!("Landlock ABI {abi} found"),
        None => "no Landlock on this kernel".to_string(),
    };
    let settings = &project.config.sandbox;
    match settings.in_force(agent_name(brief, project).as_deref()) {
        Ok(f) => match f.abi {
            Some(abi) => {
                let mut line = format!(
                    "Landlock ABI {abi}: commands write only their worktree, a private TMPDIR{}{}",
                    if settings.writable.is_empty() {
                        ""
                    } else {
                        " and "
                    },
                    settings.writable.join(", ")
                );
                for gap in crate::run::sandbox::abi_gaps(abi) {
                    line.push_str(&format!("\n              not contained at this ABI: {gap}"));
                }
                line
            }
            None => match f.warning {
                Some(w) => format!("none ({found}): {w}"),
                None => format!(
                    "contained, not confined ({found}): the builtin driver runs your own code; `sandbox: on` in ooda.yaml confines it too"
                ),
            },
        },
        Err(e) => format!("REFUSED: {e}"),
    }
}

/// ooda's variables the Brief's commands or their scripts read but no
/// longer get (measured commands get none unless `metric.env` names them):
/// a benchmark that branches on `$OODA_SIDE` would silently stop doing so.
fn withheld_variables(brief: &Brief, project: &Project) -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(project.root.join(p)).ok();
    let measuring = crate::subagents::reviewer::measurement_files(brief, &read);
    let m = &brief.metric;
    let mut texts: Vec<(String, String)> = std::iter::once(m.command.clone())
        .chain(m.setup.clone())
        .chain(brief.guards.iter().cloned())
        .map(|c| (format!("`{c}`"), c))
        .collect();
    texts.extend(
        measuring
            .all
            .iter()
            .filter_map(|p| read(p).map(|t| (p.clone(), t))),
    );
    let mut out = Vec::new();
    for var in ["OODA_SIDE", "OODA_ITERATION", "OODA_BRIEF"] {
        if m.env.iter().any(|e| e == var) {
            continue;
        }
        if let Some((who, _)) = texts.iter().find(|(_, t)| t.contains(var)) {
            out.push(format!(
                "{who} reads ${var}, which measured commands no longer get: add `env: [{var}]` under `metric:` in {} if it must (each such variable lets the candidate's code tell it is measured)",
                brief.path.display()
            ));
        }
    }
    out
}

/// What may go wrong but does not stop the night: a project template from an
/// older release that offers `OODA_OUTPUT_FILE` to a tool that cannot write
/// it (the fenced block still works; the wasted attempts do not).
pub(crate) fn warnings(brief: &Brief, project: &Project) -> Vec<String> {
    let mut out = subagent_warnings(brief, project);
    out.extend(withheld_variables(brief, project));
    out.extend(committed(brief, project).warnings);
    out.extend(unignored_state(brief, project));
    if project.config.placement_for(brief) == crate::model::Placement::Slurm {
        let missing: Vec<&str> = ["sbatch", "srun", "squeue", "scancel", "scontrol"]
            .into_iter()
            .filter(|p| !crate::run::exec::on_path(p))
            .collect();
        if !missing.is_empty() {
            out.push(format!(
                "`executor: slurm` needs the Slurm client commands, and {} not on PATH: install Slurm's client (Debian: slurm-client) on this machine, or set `executor: local`",
                match missing.as_slice() {
                    [one] => format!("`{one}` is"),
                    many => format!("{} are", many.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")),
                }
            ));
        }
    }
    let Ok(main) = MainAgent::for_brief(brief, &project.config) else {
        return out;
    };
    let Some(a) = main.caller() else {
        return out;
    };
    if a.result_file() {
        return out;
    }
    out.extend(["plan.md", "learn.md"]
        .iter()
        .filter(|name| {
            std::fs::read_to_string(project.root.join("templates").join(name))
                .is_ok_and(|t| t.contains("OODA_OUTPUT_FILE"))
        })
        .map(|name| {
            format!(
                "templates/{name} offers OODA_OUTPUT_FILE, which `{}` cannot write (its sandbox keeps writes in the worktree): replace that sentence with {{{{result_file}}}}, or delete the file and run `ooda init` for the current one",
                a.who()
            )
        }));
    out
}

/// The machine state ooda keeps beside the archive that git would not
/// ignore (a `.gitignore` older than it, e.g. before sealed event logs went
/// to `events/`): it would show in `git status` and could be committed.
fn unignored_state(brief: &Brief, project: &Project) -> Option<String> {
    let dir = project.iterations_dir(&brief.name);
    let archive = crate::archive::layout::Layout::of(&dir);
    let state = [
        archive.state(),
        archive.events(),
        archive.segments().join("events-000001.jsonl"),
        archive.index(),
        dir.join(crate::archive::layout::Layout::diff(1)),
        archive.lock(),
        project.worktrees_dir(&brief.name),
    ];
    let missing = project.unignored(&state);
    if missing.is_empty() {
        return None;
    }
    let names: Vec<String> = missing
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&project.root)
                .unwrap_or(p)
                .display()
                .to_string();
            // A folder's name for what is kept in it.
            match p.file_name().and_then(|n| n.to_str()) {
                Some(n) if n.starts_with("events-") || n.starts_with("iter-") => {
                    format!(
                        "{}/",
                        std::path::Path::new(&rel)
                            .parent()
                            .map_or(rel.clone(), |d| d.display().to_string())
                    )
                }
                _ => rel,
            }
        })
        .collect();
    Some(format!(
        "git does not ignore {} (ooda's machine state, not for commits): run `ooda init`, which adds the missing lines to .gitignore (it leaves existing files as they are)",
        names.join(", ")
    ))
}

/// Command reviewers that have no command for this Brief: no profile of
/// their own, and a builtin main agent.
fn unrunnable_reviewers<'r>(
    roster: &'r crate::subagents::Roster,
    main: Option<&str>,
) -> impl Iterator<Item = &'r crate::subagents::Definition> {
    let no_main = main.is_none();
    roster
        .with_role(crate::model::Role::Review)
        .filter(move |d| {
            d.driver == crate::subagents::definition::SubDriver::Command
                && d.agent.is_none()
                && no_main
        })
}

/// Keys of subagent files ooda ignores, and advisory command reviewers
/// that cannot run for this Brief.
fn subagent_warnings(brief: &Brief, project: &Project) -> Vec<String> {
    let Ok(roster) = crate::subagents::Roster::load(&project.root, &project.config) else {
        return Vec::new();
    };
    let mut out: Vec<String> = roster.warnings.iter().map(|w| w.to_string()).collect();
    let main = agent_name(brief, project);
    for d in unrunnable_reviewers(&roster, main.as_deref())
        .filter(|d| d.on_error == crate::subagents::definition::OnError::Pass)
    {
        out.push(format!(
            "{}: a `driver: command` reviewer with the Brief's builtin agent has no command to run, so it is skipped; set `agent: <profile>` in it",
            d.path.display()
        ));
    }
    let main_llm =
        (brief.agent.as_deref() == Some("llm")).then(|| brief.model.as_deref().unwrap_or("heavy"));
    for d in roster
        .definitions
        .iter()
        .filter(|d| d.role.is_some() && d.driver == crate::subagents::definition::SubDriver::Llm)
    {
        if let Err(why) = crate::driver::llm::LlmSetup::resolve(
            &project.config,
            brief,
            d.model.for_llm(main_llm).as_deref(),
        ) {
            out.push(format!(
                "{}: driver: llm: {why}; the subagent is skipped until then",
                d.path.display()
            ));
        }
    }
    out
}

/// What `describe` says, as data (`ooda check --json`).
pub(crate) fn describe_json(brief: &Brief, project: &Project) -> serde_json::Value {
    use serde_json::json;
    let m = &brief.metric;
    let problems = problems(brief, project);
    let agent = match MainAgent::for_brief(brief, &project.config) {
        Ok(MainAgent::Command(a)) => {
            json!({
                "name": a.name,
                "driver": "command",
                "command_line": a.command_line(),
                "format": a.profile.format.as_str(),
                "timeout_seconds": a.timeout().as_secs(),
            })
        }
        // Its answer is the finish tool's argument: text, as the command
        // driver's `text` format reads it.
        Ok(MainAgent::Llm(a)) => {
            json!({
                "name": a.setup.name(),
                "driver": "llm",
                "command_line": a.command_line(),
                "format": crate::config::AgentFormat::Text.as_str(),
                "timeout_seconds": a.timeout.as_secs(),
                "request_timeout_seconds": a.setup.tier.timeout.as_secs(),
                "tools": a.setup.tools.as_str(),
            })
        }
        Ok(a) => json!({"name": a.name(), "driver": "builtin"}),
        Err(e) => json!({"error": e.to_string()}),
    };
    let b = project.config.budget_for(brief);
    let zone = crate::validate::cron::Zone::from_env();
    let schedule = brief
        .schedule
        .as_ref()
        .map(|sch| match crate::validate::cron::Schedule::parse(sch) {
            Ok(parsed) => {
                let mut next = Vec::new();
                let mut at = chrono::Utc::now();
                for _ in 0..5 {
                    match parsed.next_after(at, &zone) {
                        Some(t) => {
                            next.push(t.to_rfc3339());
                            at = t;
                        }
                        None => break,
                    }
                }
                json!({"text": sch, "next": next})
            }
            Err(e) => json!({"text": sch, "error": e}),
        });
    json!({
        "brief": brief.name,
        "path": brief.path.display().to_string(),
        "valid": true,
        "metric": {
            "name": m.name,
            "command": m.command,
            "setup": m.setup,
            "parse": m.parse.to_string(),
            "direction": m.direction,
            "target": m.target,
            "noise_floor": m.noise_floor,
            "timeout_seconds": m.timeout.as_secs_f64(),
        },
        "guards": brief.guards,
        "scope": {"allow": brief.scope.allow, "protect": brief.scope.protect},
        "knobs": brief.knobs.iter().map(|k| json!({
            "name": k.name,
            "spec": points::describe(&k.spec),
            "default": k.default.as_ref().map(|d| d.to_string()),
        })).collect::<Vec<_>>(),
        "agent": agent,
        "budget": {
            "iterations": b.iterations,
            "wall_seconds": b.wall.map(|w| w.as_secs_f64()),
            "tokens": b.tokens,
            "cost_usd": b.cost_usd,
        },
        "schedule": schedule,
        "sandbox": {
            "mode": project.config.sandbox.mode.as_str(),
            "landlock_abi": crate::run::sandbox::landlock_abi(),
            "in_force": project
                .config
                .sandbox
                .in_force(agent_name(brief, project).as_deref())
                .ok()
                .and_then(|f| f.abi),
            "writable": project.config.sandbox.writable,
            "privileges": crate::run::sandbox::describe_capabilities(),
        },
        "subagents": crate::subagents::Roster::load(&project.root, &project.config)
            .map(|r| r.definitions.iter().map(|d| json!({
                "name": d.name,
                "path": d.path.display().to_string(),
                "built_in_copy": d.built_in,
                "role": d.role.map(|r| r.as_str()),
                "driver": d.driver_name(agent_name(brief, project).as_deref()),
                "model": d.model.describe(&project.config),
                "trigger": d.triggers.iter().map(|t| t.text()).collect::<Vec<_>>(),
                "sees": d.sees.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "timeout_seconds": d.timeout.as_secs_f64(),
                "on_error": d.on_error.as_str(),
            })).collect::<Vec<_>>())
            .unwrap_or_default(),
        "runnable": problems.is_empty(),
        "problems": problems,
        "warnings": warnings(brief, project),
    })
}

/// A problem with the program a shell line starts, when that program is
/// named by a path (`./bench.sh`, `tools/run`): a bare word may be a shell
/// builtin or on the worktree's own `PATH`, so it is not judged.
/// The program a command runs by path (`./bench.sh`, `tools/x`), past any
/// leading `VAR=value` assignments; None for a name looked up on PATH.
fn program_path(command: &str) -> Option<&str> {
    command
        .split_whitespace()
        .find(|w| !super::committed::is_assignment(w))
        .filter(|p| p.contains('/'))
}

/// Whether the program a command runs by path is absent from the checkout.
fn not_there(root: &std::path::Path, command: &str) -> bool {
    program_path(command).is_some_and(|p| !root.join(p).exists())
}

fn command_problem(root: &std::path::Path, command: &str, what: &str) -> Option<String> {
    crate::driver::command::program_problem(root, program_path(command)?, what)
}

/// The llm driver as it will run: the endpoint, the model's numbers, the
/// commands it may run.
fn describe_llm(s: &mut String, a: &crate::driver::LlmAgent) {
    let llm = &a.setup;
    let t = &llm.tier;
    let _ = writeln!(
        s,
        "  agent       llm driver: {} (model `{}`, {} tokens of context, {} out, {} retries, key {}, {} per request, {} per step)",
        llm.describe(),
        llm.choice,
        t.context_window,
        t.max_output,
        t.max_retries,
        t.api_key_env
            .as_deref()
            .map(|v| format!("from ${v}"))
            .unwrap_or_else(|| "none sent".into()),
        crate::brief::format_duration(t.timeout),
        crate::brief::format_duration(a.timeout)
    );
    let allowed: Vec<String> = llm.allowed.iter().map(|c| format!("`{c}`")).collect();
    let _ = writeln!(s, "  commands    the agent may run: {}", allowed.join(", "));
}

/// A command agent as it will run: its profile and the exact shell line.
fn describe_agent(s: &mut String, a: &crate::driver::CommandAgent) {
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
    let per_step = !p.args_by_phase.is_empty() || p.file_arg.is_some() || p.read_arg.is_some();
    if per_step {
        use crate::driver::agent::named_files::NamedFiles;
        use crate::model::Phase;
        // What EXECUTE adds depends on the plan: show the shape.
        let example = NamedFiles {
            edit: vec!["<file the plan names>".into()],
            read: vec!["<other file the prompt names>".into()],
            scoped: Vec::new(),
        };
        for (label, phase) in [
            ("plan", Phase::Plan),
            ("execute", Phase::Execute),
            ("learn", Phase::Learn),
        ] {
            let _ = writeln!(s, "  {label:<11} {}", a.command_line_for(phase, &example));
        }
    } else {
        let _ = writeln!(s, "  command     {}", a.command_line());
    }
    let _ = writeln!(
        s,
        "              in the candidate worktree, with OODA_PHASE, OODA_BRIEF, OODA_BRIEF_FILE, OODA_ITERATION, OODA_ATTEMPT,\n              OODA_PROMPT_FILE, OODA_OUTPUT_FILE and OODA_ITERATIONS_DIR set (docs/agents.md)"
    );
    for (k, v) in &p.env {
        let _ = writeln!(s, "  agent env   {k}={}", crate::text::redact::redact(v));
    }
    if p.index {
        let how = match p.format {
            crate::config::AgentFormat::GeminiJson => {
                "an mcpServers entry in the worktree's .gemini/settings.json"
            }
            crate::config::AgentFormat::CodexJsonl => {
                "-c mcp_servers.ooda-index.command=… -c mcp_servers.ooda-index.args=[…]"
            }
            _ => {
                "--mcp-config '{\"mcpServers\":{\"ooda-index\":…}}' --allowedTools mcp__ooda-index"
            }
        };
        let _ = writeln!(
            s,
            "  index       `ooda mcp --root <worktree>` registered for each step only ({how})"
        );
    }
}
