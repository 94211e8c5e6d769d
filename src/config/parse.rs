//! Parsing `ooda.yaml`: checked by hand over its positioned tree, every problem at
//! once, with its line, dotted key, what was expected, an example, and a
//! "did you mean" for a misspelt key.

use super::presets::profile;
use super::*;
use crate::brief::{check_budget, is_env_name, parse_duration};
use crate::validate::units::parse_bytes;
use crate::validate::yaml::{Checker, Entry, Node, join, parse_float, parse_int};

const TOP_KEYS: &[&str] = &[
    "defaults",
    "agents",
    "models",
    "sandbox",
    "review",
    "anomalies",
    "notify",
    "slurm",
];
const ANOMALY_KEYS: &[&str] = &[
    "repeated_failure",
    "budget_used",
    "empty_responses",
    "compactions",
    "tool_error_rate",
    "token_spike",
    "stop_on",
];
const REVIEW_KEYS: &[&str] = &["rules", "max_diff_lines"];
const SANDBOX_KEYS: &[&str] = &["mode", "writable"];
const AGENT_SANDBOX_KEYS: &[&str] = &["writable", "args_inside", "args_outside"];
const DEFAULTS_KEYS: &[&str] = &[
    "budget",
    "pairs",
    "calibration_pairs",
    "alpha",
    "prompt_budget",
    "notes_dir",
    "output_cap",
    "stall_after",
    "sweep",
    "red_lights",
    "agent_outage",
    "measure_exclusive",
    "events_segment",
    "keep_artifacts",
    "executor",
];
const RED_LIGHT_KEYS: &[&str] = &[
    "flip_window",
    "flip_min",
    "trend_window",
    "trend_z",
    "mismatch_window",
    "mismatch_chi2",
    "mismatch_bias",
    "failure_streak",
    "agent_ineffective",
    "scope_violations",
    "plateau",
    "regressions",
];
const AGENT_KEYS: &[&str] = &[
    "command",
    "prompt",
    "format",
    "timeout",
    "env",
    "result_file",
    "args_by_phase",
    "file_arg",
    "read_arg",
    "change_note",
    "compress_commands",
    "index",
    "sandbox",
];
const MODEL_KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "price_in",
    "price_out",
    "context_window",
    "max_output",
    "max_retries",
    "timeout",
    "tools",
];

pub(super) fn check_config(ck: &mut Checker, root: &Node, cfg: &mut Config) {
    let Some(fields) = ck.map(root, "", TOP_KEYS, "defaults: {pairs: 12}") else {
        return;
    };
    if let Some(e) = fields.get("defaults") {
        check_defaults(ck, &e.value, &mut cfg.defaults);
    }
    if let Some(e) = fields.get("agents") {
        let example = "agents: {mine: {command: [./agent.sh], prompt: stdin, format: text}}";
        if let Some(agents) = ck.map_any(&e.value, "agents", example) {
            for entry in agents {
                if let Some((name, p)) = check_agent(ck, entry, cfg.agents.get(&entry.key)) {
                    cfg.agents.insert(name, p);
                }
            }
        }
    }
    if let Some(e) = fields.get("sandbox") {
        check_sandbox(ck, &e.value, &mut cfg.sandbox);
    }
    if let Some(e) = fields.get("review") {
        check_review(ck, &e.value, &mut cfg.review);
    }
    if let Some(e) = fields.get("slurm") {
        cfg.slurm = crate::brief::check_slurm(ck, &e.value, "slurm");
    }
    if let Some(e) = fields.get("anomalies") {
        check_anomalies(ck, &e.value, &mut cfg.watch);
    }
    if let Some(e) = fields.get("notify")
        && let Some(cmd) = ck.string(
            &e.value,
            "notify",
            "a shell command",
            "notify: 'curl -s -d \"$OODA_BRIEF: $OODA_STOP_REASON\" ntfy.sh/my-topic'",
        )
    {
        cfg.watch.notify = Some(cmd);
    }
    if let Some(e) = fields.get("models") {
        let example = "models: {light: {provider: openai, model: gpt-4o-mini}}";
        if let Some(models) = ck.map(&e.value, "models", TIERS, example) {
            for entry in models.entries {
                if entry.value.is_null() {
                    continue;
                }
                if let Some(tier) = check_model(ck, entry) {
                    cfg.models.insert(entry.key.clone(), tier);
                }
            }
        }
    }
}

/// `anomalies: {repeated_failure: 3, budget_used: 0.8, …, stop_on: [token_spike]}`.
fn check_anomalies(ck: &mut Checker, node: &Node, w: &mut crate::model::Watch) {
    let example = "anomalies: {budget_used: 0.9, token_spike: 4, stop_on: [budget_near]}";
    let Some(fields) = ck.map(node, "anomalies", ANOMALY_KEYS, example) else {
        return;
    };
    let counts: [(&str, &mut usize); 3] = [
        ("repeated_failure", &mut w.repeated_failure),
        ("empty_responses", &mut w.empty_responses),
        ("compactions", &mut w.compactions),
    ];
    for (name, slot) in counts {
        let key = format!("anomalies.{name}");
        if let Some(v) = fields
            .get(name)
            .and_then(|e| positive(ck, e, &key, 1, example))
        {
            *slot = usize::try_from(v).unwrap_or(usize::MAX);
        }
    }
    type Share<'a> = (&'a str, &'a mut f64, &'a str, fn(f64) -> bool);
    let shares: [Share; 3] = [
        (
            "budget_used",
            &mut w.budget_used,
            "a share above 0 and at most 1 (0.8 = 80%)",
            |v| v > 0.0 && v <= 1.0,
        ),
        (
            "tool_error_rate",
            &mut w.tool_error_rate,
            "a share from 0 to 1 (0.3 = 30%)",
            |v| (0.0..=1.0).contains(&v),
        ),
        (
            "token_spike",
            &mut w.token_spike,
            "a multiple of the median above 1 (3 = three times)",
            |v| v > 1.0,
        ),
    ];
    for (name, slot, expected, ok) in shares {
        if let Some(e) = fields.get(name)
            && let Some(v) = ck.expect(
                &e.value,
                &format!("anomalies.{name}"),
                expected,
                example,
                |n| parse_float(n.scalar()?).filter(|v| ok(*v)),
            )
        {
            *slot = v;
        }
    }
    if let Some(e) = fields.get("stop_on")
        && let Some(rules) = ck.strings(
            &e.value,
            "anomalies.stop_on",
            "a list of anomaly rules",
            "a rule name",
            example,
        )
    {
        let bad: Vec<&String> = rules
            .iter()
            .filter(|r| !crate::model::STOPPING_RULES.contains(&r.as_str()))
            .collect();
        match bad.first() {
            Some(b) => {
                ck.report(
                    Some(e.value.line),
                    Some("anomalies.stop_on"),
                    format!(
                        "`{b}` cannot stop the run: only the spending rules can ({}); the others are shown in summary.md",
                        crate::model::STOPPING_RULES.join(", ")
                    ),
                )
                .example(example);
            }
            None => w.stop_on = rules,
        }
    }
}

/// `review: {rules: [docs/rules/*.md, CONTRIBUTING.md], max_diff_lines: 400}`.
fn check_review(ck: &mut Checker, node: &Node, r: &mut Review) {
    let example = "review: {rules: [docs/rules/*.md], max_diff_lines: 400}";
    let Some(fields) = ck.map(node, "review", REVIEW_KEYS, example) else {
        return;
    };
    if let Some(e) = fields.get("rules")
        && let Some(v) = ck.strings(
            &e.value,
            "review.rules",
            "a list of globs",
            "a glob",
            example,
        )
    {
        let bad: Vec<&String> = v
            .iter()
            .filter(|g| g.starts_with('/') || globset::Glob::new(g).is_err())
            .collect();
        match bad.first() {
            Some(b) => {
                ck.report(
                    Some(e.value.line),
                    Some("review.rules"),
                    format!("`{b}` is not a glob relative to the repository root"),
                )
                .example(example);
            }
            None => r.rules = v,
        }
    }
    if let Some(v) = fields
        .get("max_diff_lines")
        .and_then(|e| positive(ck, e, "review.max_diff_lines", 1, "max_diff_lines: 400"))
    {
        r.max_diff_lines = usize::try_from(v).unwrap_or(usize::MAX);
    }
}

const MODES: [crate::model::SandboxMode; 3] = [
    crate::model::SandboxMode::Auto,
    crate::model::SandboxMode::On,
    crate::model::SandboxMode::Off,
];

/// `sandbox: off`, or `sandbox: {mode: on, writable: [~/.cargo]}`.
fn check_sandbox(ck: &mut Checker, node: &Node, s: &mut crate::model::SandboxSettings) {
    let example = "sandbox: {writable: [~/.cargo, ~/.cache/pip]}";
    let mode = |ck: &mut Checker, n: &Node, key: &str| {
        ck.expect(n, key, "`auto`, `on` or `off`", "sandbox: off", |n| {
            one_of(&MODES, n.scalar()?, crate::model::SandboxMode::as_str)
        })
    };
    if matches!(node.value, yaml::Value::Scalar { .. }) {
        if let Some(m) = mode(ck, node, "sandbox") {
            s.mode = m;
        }
        return;
    }
    let Some(fields) = ck.map(node, "sandbox", SANDBOX_KEYS, example) else {
        return;
    };
    if let Some(e) = fields.get("mode")
        && let Some(m) = mode(ck, &e.value, "sandbox.mode")
    {
        s.mode = m;
    }
    if let Some(e) = fields.get("writable")
        && let Some(v) = writable_list(ck, &e.value, "sandbox.writable", example)
    {
        s.writable = v;
    }
}

/// A list of paths to grant: absolute, or starting with `~` or `$VAR`
/// (a relative path would mean a different place for every worktree).
fn writable_list(ck: &mut Checker, node: &Node, key: &str, example: &str) -> Option<Vec<String>> {
    let v = ck.strings(node, key, "a list of paths", "a path", example)?;
    let bad: Vec<&String> = v
        .iter()
        .filter(|p| !(p.starts_with('/') || p.starts_with('~') || p.starts_with('$')))
        .collect();
    if let Some(b) = bad.first() {
        ck.report(
            Some(node.line),
            Some(key),
            format!(
                "`{b}` is relative: give an absolute path, or one starting with `~/` or `$VAR`"
            ),
        )
        .example(example);
        return None;
    }
    Some(v)
}

fn positive(ck: &mut Checker, e: &Entry, key: &str, min: i64, example: &str) -> Option<i64> {
    let expected = format!("an integer, at least {min}");
    ck.expect(&e.value, key, &expected, example, |n| {
        parse_int(n.scalar()?).filter(|v| *v >= min)
    })
}

fn check_defaults(ck: &mut Checker, node: &Node, d: &mut Defaults) {
    let Some(fields) = ck.map(
        node,
        "defaults",
        DEFAULTS_KEYS,
        "defaults: {pairs: 12, alpha: 0.05}",
    ) else {
        return;
    };
    if let Some(e) = fields.get("budget") {
        d.budget = check_budget(ck, &e.value, "defaults.budget");
    }
    if let Some(v) = fields
        .get("stall_after")
        .and_then(|e| positive(ck, e, "defaults.stall_after", 1, "stall_after: 10"))
    {
        d.stall_after = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if let Some(v) = fields
        .get("sweep")
        .and_then(|e| positive(ck, e, "defaults.sweep", 0, "sweep: 100"))
    {
        d.sweep = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if let Some(e) = fields.get("red_lights") {
        check_red_lights(ck, &e.value, &mut d.red_lights);
    }
    // The first look of the sequential test is at 3 pairs.
    if let Some(v) = fields
        .get("pairs")
        .and_then(|e| positive(ck, e, "defaults.pairs", 3, "pairs: 12"))
    {
        d.pairs = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if let Some(v) = fields.get("calibration_pairs").and_then(|e| {
        positive(
            ck,
            e,
            "defaults.calibration_pairs",
            2,
            "calibration_pairs: 10",
        )
    }) {
        d.calibration_pairs = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if let Some(e) = fields.get("alpha")
        && let Some(v) = ck.expect(
            &e.value,
            "defaults.alpha",
            "a probability between 0 and 0.5",
            "alpha: 0.05",
            |n| parse_float(n.scalar()?).filter(|v| *v > 0.0 && *v < 0.5),
        )
    {
        d.alpha = v;
    }
    if let Some(v) = fields
        .get("prompt_budget")
        .and_then(|e| positive(ck, e, "defaults.prompt_budget", 1, "prompt_budget: 24000"))
    {
        d.prompt_budget = usize::try_from(v).unwrap_or(usize::MAX);
    }
    if let Some(e) = fields.get("notes_dir")
        && let Some(v) = ck.string(
            &e.value,
            "defaults.notes_dir",
            "a folder path",
            "notes_dir: notes",
        )
    {
        d.notes_dir = v;
    }
    if let Some(e) = fields.get("agent_outage")
        && let Some(v) = ck.expect(
            &e.value,
            "defaults.agent_outage",
            "a duration like `30m` (`0s`: never wait)",
            "agent_outage: 30m",
            |n| parse_duration(n.scalar()?),
        )
    {
        d.agent_outage = v;
    }
    if let Some(e) = fields.get("measure_exclusive")
        && let Some(v) = ck.boolean(
            &e.value,
            "defaults.measure_exclusive",
            "measure_exclusive: true",
        )
    {
        d.measure_exclusive = v;
    }
    if let Some(e) = fields.get("output_cap")
        && let Some(v) = ck.expect(
            &e.value,
            "defaults.output_cap",
            "a positive byte count like `1048576`, `1M` or `1MiB`",
            "output_cap: 1MiB",
            |n| parse_bytes(n.scalar()?).filter(|v| *v > 0),
        )
    {
        d.output_cap = v;
    }
    if let Some(e) = fields.get("events_segment")
        && let Some(v) = ck.expect(
            &e.value,
            "defaults.events_segment",
            "a byte count of at least 1MiB, like `64MiB`",
            "events_segment: 64MiB",
            |n| parse_bytes(n.scalar()?).filter(|v| *v >= 1 << 20),
        )
    {
        d.events_segment = v;
    }
    if let Some(e) = fields.get("executor")
        && let Some(v) = crate::brief::check_placement(ck, &e.value, "defaults.executor")
    {
        d.executor = v;
    }
    if let Some(e) = fields.get("keep_artifacts")
        && let Some(v) = ck.expect(
            &e.value,
            "defaults.keep_artifacts",
            "a number of iterations (1 or more), or `all`",
            "keep_artifacts: 1000",
            |n| match n.scalar()? {
                "all" => Some(None),
                s => parse_int(s)
                    .filter(|v| *v >= 1)
                    .map(|v| Some(u32::try_from(v).unwrap_or(u32::MAX))),
            },
        )
    {
        d.keep_artifacts = v;
    }
}

fn check_red_lights(ck: &mut Checker, node: &Node, th: &mut crate::model::Thresholds) {
    let example = "red_lights: {failure_streak: 5, mismatch_chi2: 31.4}";
    let Some(fields) = ck.map(node, "defaults.red_lights", RED_LIGHT_KEYS, example) else {
        return;
    };
    let counts: [(&str, &mut usize); 9] = [
        ("flip_window", &mut th.flip_window),
        ("flip_min", &mut th.flip_min),
        ("trend_window", &mut th.trend_window),
        ("mismatch_window", &mut th.mismatch_window),
        ("failure_streak", &mut th.failure_streak),
        ("agent_ineffective", &mut th.agent_ineffective),
        ("scope_violations", &mut th.scope_violations),
        ("plateau", &mut th.plateau),
        ("regressions", &mut th.regressions),
    ];
    for (name, slot) in counts {
        let key = format!("defaults.red_lights.{name}");
        // Windows need enough points for their statistics to mean anything.
        let min = match name {
            "flip_window" | "trend_window" => 8,
            "flip_min" | "mismatch_window" => 3,
            _ => 1,
        };
        // The detectors that look at the last few changes read them among
        // the newest iterations the runner holds in full: a longer window
        // would never fill, and its light never fire.
        let windowed = matches!(
            name,
            "flip_window"
                | "trend_window"
                | "mismatch_window"
                | "failure_streak"
                | "agent_ineffective"
                | "regressions"
        );
        let v = fields.get(name).and_then(|e| {
            if windowed {
                let max = crate::model::WINDOW as i64;
                let expected = format!(
                    "an integer from {min} to {max} (the runner holds the newest {max} iterations in full)"
                );
                ck.expect(&e.value, &key, &expected, example, |n| {
                    parse_int(n.scalar()?).filter(|v| (min..=max).contains(v))
                })
            } else {
                positive(ck, e, &key, min, example)
            }
        });
        if let Some(v) = v {
            *slot = usize::try_from(v).unwrap_or(usize::MAX);
        }
    }
    // A light that can never fire is a configuration mistake, not a setting.
    if th.flip_min >= th.flip_window {
        let line = fields
            .get("flip_min")
            .or_else(|| fields.get("flip_window"))
            .map(|e| e.value.line);
        ck.report(
            line,
            Some("defaults.red_lights.flip_min"),
            format!(
                "flip_min ({}) must be below flip_window ({}), or the oscillation light can never fire",
                th.flip_min, th.flip_window
            ),
        )
        .example("red_lights: {flip_window: 16, flip_min: 14}");
    }
    // Unset, it follows the failure streak: a night someone allowed ten
    // failures must not stop at five weak answers.
    if fields.get("agent_ineffective").is_none() {
        th.agent_ineffective = th.failure_streak;
    }
    let reals: [(&str, &mut f64); 3] = [
        ("trend_z", &mut th.trend_z),
        ("mismatch_chi2", &mut th.mismatch_chi2),
        ("mismatch_bias", &mut th.mismatch_bias),
    ];
    for (name, slot) in reals {
        if let Some(e) = fields.get(name)
            && let Some(v) = ck.expect(
                &e.value,
                &format!("defaults.red_lights.{name}"),
                "a positive number",
                example,
                |n| parse_float(n.scalar()?).filter(|v| *v > 0.0),
            )
        {
            *slot = v;
        }
    }
}

fn one_of<T: Copy>(all: &[T], text: &str, name: fn(T) -> &'static str) -> Option<T> {
    all.iter().copied().find(|v| name(*v) == text.trim())
}

fn spellings<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    let names: Vec<String> = all.iter().map(|v| format!("`{}`", name(*v))).collect();
    names.join(", ")
}

fn check_agent(
    ck: &mut Checker,
    entry: &Entry,
    preset: Option<&AgentProfile>,
) -> Option<(String, AgentProfile)> {
    let name = &entry.key;
    let path = join("agents", name);
    let before = ck.problems.len();
    let example = format!("{name}: {{command: [./agent.sh], prompt: stdin, format: text}}");
    let reserved = match name.as_str() {
        "builtin" => Some("`builtin` is ooda's own knob search"),
        "llm" => Some("`llm` is ooda's own llm driver (set its model under `models:`)"),
        _ => None,
    };
    if let Some(what) = reserved {
        ck.report(
            Some(entry.line),
            Some(&path),
            format!("{what} and cannot be redefined; pick another name"),
        )
        .example(example.replace(name.as_str(), "my-agent"));
        return None;
    }
    let fields = ck.map(&entry.value, &path, AGENT_KEYS, &example)?;
    let mut p = preset
        .cloned()
        .unwrap_or_else(|| profile(&[], PromptMode::Stdin, AgentFormat::Text));

    match fields.get("command") {
        Some(e) => {
            let key = join(&path, "command");
            if let Some(argv) = ck.strings(
                &e.value,
                &key,
                "an argv list",
                "an argument",
                "command: [claude, -p]",
            ) {
                if argv.is_empty() {
                    ck.report(
                        Some(e.line),
                        Some(&key),
                        "expected at least the program to run, found an empty list",
                    )
                    .example("command: [claude, -p]");
                }
                p.command = argv;
            }
        }
        None if preset.is_none() => {
            ck.missing(entry.line, &join(&path, "command"), "command: [./agent.sh]");
        }
        None => {}
    }
    if let Some(e) = fields.get("prompt") {
        let expected = spellings(&PromptMode::ALL, PromptMode::as_str);
        if let Some(v) = ck.expect(
            &e.value,
            &join(&path, "prompt"),
            &expected,
            "prompt: stdin",
            |n| one_of(&PromptMode::ALL, n.scalar()?, PromptMode::as_str),
        ) {
            p.prompt = v;
        }
    }
    if let Some(e) = fields.get("format") {
        let expected = spellings(&AgentFormat::ALL, AgentFormat::as_str);
        if let Some(v) = ck.expect(
            &e.value,
            &join(&path, "format"),
            &expected,
            "format: claude-json",
            |n| one_of(&AgentFormat::ALL, n.scalar()?, AgentFormat::as_str),
        ) {
            p.format = v;
        }
    }
    if let Some(e) = fields.get("timeout") {
        p.timeout = ck.expect(
            &e.value,
            &join(&path, "timeout"),
            "a duration like `30m`",
            "timeout: 30m",
            |n| parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
        );
    }
    for (key, slot) in [
        ("result_file", &mut p.result_file),
        ("change_note", &mut p.change_note),
        ("compress_commands", &mut p.compress_commands),
        ("index", &mut p.index),
    ] {
        if let Some(e) = fields.get(key)
            && let Some(v) = ck.expect(
                &e.value,
                &join(&path, key),
                "true or false",
                &format!("{key}: false"),
                |n| match n.scalar()? {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                },
            )
        {
            *slot = v;
        }
    }
    for (key, slot, example) in [
        ("file_arg", &mut p.file_arg, "file_arg: --file"),
        ("read_arg", &mut p.read_arg, "read_arg: --read"),
    ] {
        // `entry`, not `get`: here null means "none", turning a preset's flag off.
        if let Some(e) = fields.entry(key) {
            *slot = if e.value.is_null() {
                None
            } else {
                ck.expect(
                    &e.value,
                    &join(&path, key),
                    "a flag such as `--file`, or null for none",
                    example,
                    |n| Some(n.scalar()?.trim().to_string()).filter(|f| f.starts_with('-')),
                )
            };
        }
    }
    if let Some(e) = fields.get("args_by_phase") {
        let key = join(&path, "args_by_phase");
        let example = "args_by_phase: {plan: [--chat-mode, ask], learn: [--chat-mode, ask]}";
        if let Some(phases) = ck.map(&e.value, &key, &["plan", "execute", "learn"], example) {
            let mut args = PhaseArgs::default();
            for entry in phases.entries {
                let k = join(&key, &entry.key);
                if let Some(v) =
                    ck.strings(&entry.value, &k, "an argv list", "an argument", example)
                {
                    match entry.key.as_str() {
                        "plan" => args.plan = v,
                        "execute" => args.execute = v,
                        _ => args.learn = v,
                    }
                }
            }
            p.args_by_phase = args;
        }
    }
    if let Some(e) = fields.get("sandbox") {
        let key = join(&path, "sandbox");
        let example = "sandbox: {writable: [~/.config/my-agent]}";
        if let Some(f) = ck.map(&e.value, &key, AGENT_SANDBOX_KEYS, example) {
            if let Some(w) = f.get("writable")
                && let Some(v) = writable_list(ck, &w.value, &join(&key, "writable"), example)
            {
                p.sandbox_writable = v;
            }
            for (k, slot) in [
                ("args_inside", &mut p.sandbox_args.inside),
                ("args_outside", &mut p.sandbox_args.outside),
            ] {
                if let Some(a) = f.get(k)
                    && let Some(v) = ck.strings(
                        &a.value,
                        &join(&key, k),
                        "an argv list",
                        "an argument",
                        "args_inside: [--sandbox, danger-full-access]",
                    )
                {
                    *slot = v;
                }
            }
        }
    }
    if let Some(e) = fields.get("env") {
        let key = join(&path, "env");
        if let Some(vars) = ck.map_any(
            &e.value,
            &key,
            "env: {CLAUDE_CODE_MAX_OUTPUT_TOKENS: \"32000\"}",
        ) {
            for var in vars {
                let var_key = join(&key, &var.key);
                if !is_env_name(&var.key) {
                    ck.report(
                        Some(var.line),
                        Some(&var_key),
                        format!(
                            "`{}` is not an environment variable name (letters, digits, `_`)",
                            var.key
                        ),
                    )
                    .example("MY_VAR: value");
                    continue;
                }
                // An empty value is a legitimate way to set a variable to "".
                let value = match &var.value.value {
                    yaml::Value::Scalar { text, .. } if !var.value.is_null() => Some(text.clone()),
                    _ if var.value.is_null() => Some(String::new()),
                    _ => None,
                };
                match value {
                    Some(v) => {
                        p.env.insert(var.key.clone(), v);
                    }
                    None => ck.wrong(&var.value, &var_key, "a text value", "MY_VAR: value"),
                }
            }
        }
    }
    if p.compress_commands
        && !matches!(p.format, AgentFormat::ClaudeJson | AgentFormat::GeminiJson)
        && let Some(e) = fields.get("compress_commands")
    {
        ck.report(
            Some(e.value.line),
            Some(&join(&path, "compress_commands")),
            "only Claude Code and Gemini CLI have a hook that can route their own shell commands through `ooda compress` (format claude-json or gemini-json); this tool has none",
        )
        .example("compress_commands: false");
    }
    if p.index
        && !p.format.takes_mcp_servers()
        && let Some(e) = fields.get("index")
    {
        ck.report(
            Some(e.value.line),
            Some(&join(&path, "index")),
            "only Claude Code, Codex and Gemini CLI take MCP servers (format claude-json, claude-stream-json, codex-jsonl or gemini-json); this tool cannot be given the code index",
        )
        .example("index: false");
    }
    (ck.problems.len() == before).then(|| (name.clone(), p))
}

fn check_model(ck: &mut Checker, entry: &Entry) -> Option<ModelTier> {
    let path = join("models", &entry.key);
    let before = ck.problems.len();
    let example = format!(
        "{}: {{provider: anthropic, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}}",
        entry.key
    );
    let fields = ck.map(&entry.value, &path, MODEL_KEYS, &example)?;

    let provider = match fields.entry("provider") {
        None => {
            ck.missing(entry.line, &join(&path, "provider"), "provider: openai");
            None
        }
        Some(e) => ck.expect(
            &e.value,
            &join(&path, "provider"),
            "`openai` or `anthropic`",
            "provider: openai",
            |n| {
                one_of(
                    &[Provider::Openai, Provider::Anthropic],
                    n.scalar()?,
                    Provider::as_str,
                )
            },
        ),
    };
    let model = match fields.entry("model") {
        None => {
            ck.missing(entry.line, &join(&path, "model"), "model: gpt-4o-mini");
            None
        }
        Some(e) => ck.string(
            &e.value,
            &join(&path, "model"),
            "a model id",
            "model: gpt-4o-mini",
        ),
    };
    let base_url = fields.get("base_url").and_then(|e| {
        ck.expect(
            &e.value,
            &join(&path, "base_url"),
            "an http:// or https:// URL",
            "base_url: https://api.openai.com/v1",
            |n| {
                let s = n.scalar()?.trim();
                (s.starts_with("http://") || s.starts_with("https://")).then(|| s.to_string())
            },
        )
    });
    let api_key_env = fields.get("api_key_env").and_then(|e| {
        ck.expect(
            &e.value,
            &join(&path, "api_key_env"),
            "the name of the environment variable holding the key (never the key itself)",
            "api_key_env: OPENAI_API_KEY",
            |n| {
                n.scalar()
                    .map(str::trim)
                    .filter(|s| is_env_name(s))
                    .map(str::to_string)
            },
        )
    });
    let price = |ck: &mut Checker, k: &str| {
        fields.get(k).and_then(|e| {
            ck.expect(
                &e.value,
                &join(&path, k),
                "USD per million tokens, 0 or more",
                &format!("{k}: 3.0"),
                |n| parse_float(n.scalar()?).filter(|v| *v >= 0.0),
            )
        })
    };
    let price_in = price(ck, "price_in");
    let price_out = price(ck, "price_out");
    let count = |ck: &mut Checker, k: &str, min: u64, example: &str| {
        fields.get(k).and_then(|e| {
            ck.expect(
                &e.value,
                &join(&path, k),
                &format!("a whole number, at least {min}"),
                example,
                |n| {
                    n.scalar()?
                        .trim()
                        .replace('_', "")
                        .parse::<u64>()
                        .ok()
                        .filter(|v| *v >= min)
                },
            )
        })
    };
    let context_window = count(ck, "context_window", 1_000, "context_window: 200000");
    let max_output = count(ck, "max_output", 16, "max_output: 8192");
    let max_retries = count(ck, "max_retries", 0, "max_retries: 4");
    let timeout = fields.get("timeout").and_then(|e| {
        ck.expect(
            &e.value,
            &join(&path, "timeout"),
            "a duration above zero, for one request",
            "timeout: 5m",
            |n| crate::brief::parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
        )
    });
    let tools = fields.get("tools").and_then(|e| {
        ck.expect(
            &e.value,
            &join(&path, "tools"),
            &format!(
                "one of {} (leave it out for auto)",
                spellings(&ToolsMode::ALL, ToolsMode::as_str)
            ),
            "tools: text",
            |n| one_of(&ToolsMode::ALL, n.scalar()?, ToolsMode::as_str),
        )
    });

    if let (Some(w), Some(o)) = (context_window, max_output)
        && o >= w
    {
        ck.report(
            Some(entry.line),
            Some(&join(&path, "max_output")),
            format!("max_output ({o}) must be below context_window ({w}): the answer is part of the window"),
        )
        .example("max_output: 4096");
    }
    if ck.problems.len() > before {
        return None;
    }
    Some(ModelTier {
        provider: provider?,
        model: model?,
        base_url,
        api_key_env,
        price_in,
        price_out,
        context_window: context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
        max_output: max_output.unwrap_or(DEFAULT_MAX_OUTPUT),
        max_retries: max_retries
            .map(|r| u32::try_from(r.min(20)).unwrap_or(20))
            .unwrap_or(DEFAULT_MAX_RETRIES),
        timeout: timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
        tools,
    })
}
