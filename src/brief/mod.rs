//! The Brief: what to optimize, how to measure it, what must not break.
//!
//! A Brief is markdown: YAML front matter that the runner enforces, and level-1 sections
//! (`# Goal`, `# Success`, `# Must not break`, `# Context`) that are given to agents.
//!
//! Validation is strict and reports *every* problem at once, each with file, line, dotted
//! key, what was expected and an example, because a Brief is written once before a night
//! of unattended work and `ooda check` is the only conversation the user gets. That is why
//! the front matter is not deserialized into serde structs (serde stops at the first
//! error): it is parsed into a positioned tree ([`crate::validate::yaml`]) and walked by hand, with
//! each check reporting into a [`crate::validate::yaml::Checker`] and carrying on. The [`Brief`] is
//! only assembled when nothing was reported, so every field in it has been checked.
//!
//! Markdown structure comes from pulldown-cmark (front matter as a YAML-style metadata
//! block, sections split at top-level `#` headings), so what counts as a heading is what
//! any markdown viewer shows as one: a `# ...` line inside a code fence is not a section.

pub mod points;

mod knob;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use pulldown_cmark::{Event, HeadingLevel, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::validate::yaml::{
    self, Checker, Entry, Fields, Node, join, line_of, parse_float, parse_int,
};

pub use crate::model::{Budget, Direction, KnobValue};
pub(crate) use crate::validate::problem::BriefError;
pub(crate) use crate::validate::units::{
    format_duration, parse_count, parse_duration, parse_percent,
};
pub(crate) use knob::is_env_name;
pub use knob::{Knob, KnobSpec};

/// The knobs file written into the worktree when a Brief does not name one.
pub(crate) const DEFAULT_KNOBS_FILE: &str = "ooda.knobs.env";
/// Per-measurement timeout when `metric.timeout` is not given.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Clone, Debug)]
pub struct Brief {
    /// The file stem, e.g. `quickstart`; names the branch, the iterations folder, the lock.
    pub name: String,
    pub path: PathBuf,
    pub metric: Metric,
    /// Shell commands that must all exit 0 in the candidate before it is measured.
    pub guards: Vec<String>,
    pub scope: Scope,
    /// In file order, so prompts and reports list them as the user wrote them.
    pub knobs: Vec<Knob>,
    pub knobs_file: String,
    /// An agent profile from `ooda.yaml`, `builtin`, or `None` (the builtin knob search).
    pub agent: Option<String>,
    pub budget: Budget,
    /// A cron expression or interval, validated with [`crate::validate::cron::Schedule::parse`].
    pub schedule: Option<String>,
    pub seed: Option<u64>,
    /// `analyze:`: a profiling command whose compressed output the
    /// pipeline-analyzer reads.
    pub analyze: Option<Analyze>,
    /// `model:` for `agent: llm`: a tier of `ooda.yaml`'s `models` or a
    /// model id (served by the `heavy` tier's endpoint); `heavy` when unset.
    pub model: Option<String>,
    /// `tools: {allow: [...]}`: commands the llm driver's agent may run
    /// besides the guards and the metric's command.
    pub tools_allow: Vec<String>,
    /// `executor:`: where measurements run; `None` takes `defaults.executor`.
    pub executor: Option<crate::model::Placement>,
    /// `slurm:`: this Brief's allocation settings over `ooda.yaml`'s.
    pub slurm: crate::model::SlurmSettings,
    pub goal: String,
    pub success: String,
    pub must_not_break: String,
    pub context: Option<String>,
}

/// `analyze: {command: "perf stat ./bench.sh", timeout: 5m}`: what the
/// pipeline-analyzer runs (in the base worktree, the best so far, under the
/// measurement lock) to see where the time goes.
#[derive(Clone, Debug)]
pub struct Analyze {
    pub command: String,
    pub timeout: Duration,
}

#[derive(Clone, Debug)]
pub struct Metric {
    pub name: String,
    pub command: String,
    pub setup: Option<String>,
    pub parse: Parse,
    pub direction: Direction,
    pub target: Option<f64>,
    /// The practical minimum effect as a fraction: `1%` is 0.01.
    pub noise_floor: f64,
    pub timeout: Duration,
    /// Remove what each timed run created before the next one
    /// (`metric.fresh_outputs`), so no run reads what another left.
    pub fresh_outputs: bool,
    /// ooda's own variables (`OODA_SIDE`, `OODA_ITERATION`, …) the setup,
    /// guards and metric are given (`metric.env`). None by default: each
    /// one lets the candidate's code tell that it is being measured.
    pub env: Vec<String>,
}

/// How the metric is read from the command's output.
#[derive(Clone, Debug)]
pub enum Parse {
    /// Lines `METRIC <name>=<number>`; the one named `metric.name` is read.
    MetricLine,
    /// A regex with exactly one capture group around the number.
    Regex(regex::Regex),
    /// A JSON pointer (`/a/b`) into the command's stdout parsed as JSON.
    Json(String),
}

impl fmt::Display for Parse {
    /// The Brief's own spelling, so it can be shown back to the user.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Parse::MetricLine => f.write_str("metric-line"),
            Parse::Regex(re) => write!(f, "regex:{}", re.as_str()),
            Parse::Json(pointer) => write!(f, "json:{pointer}"),
        }
    }
}

/// Which paths the agent may change (`allow`) and which it must never touch (`protect`).
///
/// Globs use `/` as a separator that `*` does not cross (`**` does), and a pattern also
/// covers everything below it, so `tests` and `tests/` protect the whole folder.
#[derive(Clone, Debug)]
pub struct Scope {
    pub allow: Vec<String>,
    pub protect: Vec<String>,
    /// A new or grown file above this many bytes is `blocked` before it is
    /// hashed into the repository (`scope.max_file_size`, default 10 MiB).
    pub max_file_size: u64,
    allow_set: GlobSet,
    protect_set: GlobSet,
}

impl Default for Scope {
    fn default() -> Scope {
        Scope {
            allow: Vec::new(),
            protect: Vec::new(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            allow_set: GlobSet::empty(),
            protect_set: GlobSet::empty(),
        }
    }
}

impl Scope {
    /// Compiles the globs; the error names the first bad pattern.
    pub fn new(allow: Vec<String>, protect: Vec<String>) -> Result<Scope, String> {
        let compile = |patterns: &[String]| {
            let mut builder = GlobSetBuilder::new();
            for p in patterns {
                for glob in glob_variants(p).map_err(|e| format!("`{p}`: {e}"))? {
                    builder.add(glob);
                }
            }
            builder.build().map_err(|e| e.to_string())
        };
        Ok(Scope {
            allow_set: compile(&allow)?,
            protect_set: compile(&protect)?,
            allow,
            protect,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        })
    }

    /// Whether the agent may change `rel_path` (relative to the worktree root). An empty
    /// allow list allows everything.
    pub fn allows(&self, rel_path: &str) -> bool {
        self.allow.is_empty() || self.allow_set.is_match(normalize(rel_path))
    }

    pub fn protects(&self, rel_path: &str) -> bool {
        self.protect_set.is_match(normalize(rel_path))
    }

    /// Whether `rel_path` is one of ooda's own files ([`OODA_OWN`]) that an
    /// allow pattern names by its literal first component (`templates/**`,
    /// `ooda.yaml`): only such a pattern opens it, never `**` or `*.md`.
    pub fn names_own(&self, rel_path: &str) -> bool {
        let Some(own) = own_root(rel_path) else {
            return false;
        };
        self.allows(rel_path)
            && self.allow.iter().any(|a| {
                let a = normalize(a);
                a.split('/').next() == Some(own)
            })
    }
}

/// ooda's own files, as the project root holds them: what configures a
/// night (`ooda.yaml`, the Briefs, the subagent definitions, the prompt
/// templates) and what records it (`.ooda/`, `iterations/`). A kept change
/// to one is merged by a human who trusts the branch, and would disarm the
/// next night (`sandbox: off`, `protect: []`, a reviewer that approves
/// everything), so no scope reaches them unless it names them.
pub(crate) const OODA_OWN: &[&str] = &[
    "ooda.yaml",
    "briefs",
    "subagents",
    "templates",
    ".ooda",
    "iterations",
];

/// The entry of [`OODA_OWN`] that `rel_path` is or lies beneath.
pub(crate) fn own_root(rel_path: &str) -> Option<&'static str> {
    let p = normalize(rel_path);
    let first = p.split('/').next()?;
    OODA_OWN.iter().copied().find(|o| *o == first)
}

fn normalize(rel_path: &str) -> String {
    let mut p = rel_path.replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    p
}

/// `p` itself and `p/**`: a folder name means the folder's contents.
fn glob_variants(pattern: &str) -> Result<Vec<Glob>, String> {
    if pattern.starts_with('/') {
        return Err("scope globs are relative to the repository root; drop the leading `/`".into());
    }
    let base = pattern.trim_end_matches('/');
    let build = |p: &str| {
        GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| e.kind().to_string())
    };
    Ok(vec![build(base)?, build(&format!("{base}/**"))?])
}

const TOP_KEYS: &[&str] = &[
    "metric",
    "guards",
    "scope",
    "knobs",
    "knobs_file",
    "agent",
    "budget",
    "schedule",
    "seed",
    "analyze",
    "model",
    "tools",
    "executor",
    "slurm",
];
const TOOLS_KEYS: &[&str] = &["allow"];
const ANALYZE_KEYS: &[&str] = &["command", "timeout"];
const METRIC_KEYS: &[&str] = &[
    "name",
    "command",
    "setup",
    "parse",
    "direction",
    "target",
    "noise_floor",
    "timeout",
    "env",
    "fresh_outputs",
];
const SCOPE_KEYS: &[&str] = &["allow", "protect", "max_file_size"];

/// `scope.max_file_size` when a Brief leaves it out.
pub(crate) const DEFAULT_MAX_FILE_SIZE: u64 = 10 << 20;
const BUDGET_KEYS: &[&str] = &["iterations", "wall", "cost_usd", "tokens"];

const METRIC_EXAMPLE: &str = "metric: {name: p95_ms, command: ./bench.sh, direction: minimize}";
const SECTIONS: &[&str] = &["Goal", "Success", "Must not break", "Context"];

impl Brief {
    /// Reads and validates a Brief file.
    pub fn load(path: &Path) -> Result<Brief, BriefError> {
        let text = std::fs::read_to_string(path).map_err(|e| BriefError::io(path, &e))?;
        Brief::parse(path, &text)
    }

    /// Reads and validates a Brief file of a project whose agent profiles
    /// are `agents`: an `agent:` naming none of them is one more problem of
    /// the same report, with its line.
    pub fn load_in(path: &Path, agents: &[&str]) -> Result<Brief, BriefError> {
        let text = std::fs::read_to_string(path).map_err(|e| BriefError::io(path, &e))?;
        Brief::parse_in(path, &text, Some(agents))
    }

    /// Validates `text` as the Brief at `path` (the path names the Brief and the
    /// problems; it is not read).
    pub fn parse(path: &Path, text: &str) -> Result<Brief, BriefError> {
        Brief::parse_in(path, text, None)
    }

    /// [`Brief::parse`], checking `agent:` against the known profiles too.
    pub fn parse_in(path: &Path, text: &str, agents: Option<&[&str]>) -> Result<Brief, BriefError> {
        let mut ck = Checker::new(path);
        let name = check_file_name(&mut ck, path);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let doc = split_markdown(&mut ck, text);

        let settings = doc.front.as_ref().and_then(|(yaml_text, first_line)| {
            match yaml::parse(yaml_text, *first_line) {
                Ok(node) => Some(node),
                Err(e) => {
                    yaml::report_syntax(&mut ck, &e, "the front matter is not valid YAML");
                    None
                }
            }
        });
        let mut draft = Draft::default();
        if let Some(node) = &settings {
            check_settings(&mut ck, node, &mut draft);
        }

        let sections = check_sections(&mut ck, text, &doc);
        if draft.is_map {
            check_agent_or_knobs(&mut ck, &draft);
            if let (Some(known), Some(agent)) = (agents, draft.agent.as_deref()) {
                check_agent_known(&mut ck, &draft, agent, known);
            }
        }

        BriefError::check(ck.problems)?;
        Ok(Brief {
            name,
            path: path.to_path_buf(),
            metric: draft.metric.unwrap_or_else(placeholder_metric),
            guards: draft.guards,
            scope: draft.scope,
            knobs: draft.knobs,
            knobs_file: draft
                .knobs_file
                .unwrap_or_else(|| DEFAULT_KNOBS_FILE.to_string()),
            agent: draft.agent,
            budget: draft.budget,
            schedule: draft.schedule,
            seed: draft.seed,
            analyze: draft.analyze,
            model: draft.model,
            tools_allow: draft.tools_allow,
            executor: draft.executor,
            slurm: draft.slurm,
            goal: sections.goal,
            success: sections.success,
            must_not_break: sections.must_not_break,
            context: sections.context,
        })
    }

    /// Scope rules for a candidate's changed paths; the knobs file is ooda's own.
    pub fn scope_violation<'p>(&self, paths: impl Iterator<Item = &'p str>) -> Option<String> {
        let mut protected = Vec::new();
        let mut outside = Vec::new();
        let mut own = Vec::new();
        for p in paths {
            if p == self.knobs_file.trim_start_matches("./") {
                continue;
            }
            if own_root(p).is_some() && !self.scope.names_own(p) {
                own.push(p.to_string());
            } else if self.scope.protects(p) {
                protected.push(p.to_string());
            } else if !self.scope.allows(p) {
                outside.push(p.to_string());
            }
        }
        if !own.is_empty() {
            return Some(format!(
                "changed ooda's own configuration or archive: {} (ooda.yaml, briefs/, subagents/, templates/, .ooda/ and iterations/ are out of every scope unless scope.allow names them, e.g. `templates/**`); a kept change to them would change how the next night is run and judged",
                own.join(", ")
            ));
        }
        if !protected.is_empty() {
            return Some(format!(
                "changed protected path(s) {} (scope.protect: {}); protected paths must stay as they are, so that the measurement stays honest",
                protected.join(", "),
                self.scope.protect.join(", ")
            ));
        }
        if !outside.is_empty() {
            return Some(format!(
                "changed path(s) outside scope.allow: {} (allowed: {})",
                outside.join(", "),
                self.scope.allow.join(", ")
            ));
        }
        None
    }

    /// Whether the main agent is the deterministic knob search.
    pub fn uses_builtin(&self) -> bool {
        self.agent.as_deref().is_none_or(|a| a == "builtin")
    }
}

/// Only reached when a required metric key was missing, which is always reported, so
/// this value is never returned to a caller; it exists to avoid unwrapping.
fn placeholder_metric() -> Metric {
    Metric {
        name: String::new(),
        command: String::new(),
        setup: None,
        parse: Parse::MetricLine,
        direction: Direction::Minimize,
        target: None,
        noise_floor: 0.0,
        timeout: DEFAULT_TIMEOUT,
        fresh_outputs: false,
        env: Vec::new(),
    }
}

/// The settings as far as they validated.
#[derive(Default)]
struct Draft {
    metric: Option<Metric>,
    guards: Vec<String>,
    scope: Scope,
    knobs: Vec<Knob>,
    /// `knobs` was given and non-empty (even if some knob was invalid), so "needs an
    /// agent or knobs" is not piled on top of the knob's own problem.
    knobs_given: bool,
    knobs_file: Option<String>,
    agent: Option<String>,
    agent_line: usize,
    /// The front matter was a mapping, so cross-key rules are worth checking.
    is_map: bool,
    budget: Budget,
    schedule: Option<String>,
    seed: Option<u64>,
    analyze: Option<Analyze>,
    model: Option<String>,
    tools_allow: Vec<String>,
    executor: Option<crate::model::Placement>,
    slurm: crate::model::SlurmSettings,
}

const SLURM_KEYS: &[&str] = &[
    "partition",
    "account",
    "gres",
    "constraint",
    "time",
    "cpus",
    "controller_wait",
    "pending_limit",
    "args",
];

/// sbatch options ooda sets itself: the job's name finds it again after a
/// restart, one task on one node keeps a phase's pairs together, and the
/// script is ooda's placeholder.
const SLURM_OWN_ARGS: &[&str] = &[
    "-J",
    "--job-name",
    "--wrap",
    "-o",
    "--output",
    "-N",
    "--nodes",
    "-n",
    "--ntasks",
    "--parsable",
    "--requeue",
    "--export",
    "--begin",
    "-c",
    "--cpus-per-task",
    "-t",
    "--time",
];

/// `executor: local` or `executor: slurm`.
pub(crate) fn check_placement(
    ck: &mut Checker,
    node: &Node,
    key: &str,
) -> Option<crate::model::Placement> {
    ck.expect(
        node,
        key,
        "`local` (this machine) or `slurm` (measurements in a Slurm allocation)",
        "executor: slurm",
        |n| crate::model::Placement::parse(n.scalar()?),
    )
}

/// `slurm: {partition: gpu, gres: "gpu:1", time: 30m, args: ["--qos=low"]}`,
/// in `ooda.yaml` or a Brief.
pub(crate) fn check_slurm(
    ck: &mut Checker,
    node: &Node,
    path: &str,
) -> crate::model::SlurmSettings {
    let example = "slurm: {partition: gpu, gres: \"gpu:1\", time: 30m}";
    let mut s = crate::model::SlurmSettings::default();
    let Some(fields) = ck.map(node, path, SLURM_KEYS, example) else {
        return s;
    };
    for (name, slot) in [
        ("partition", &mut s.partition),
        ("account", &mut s.account),
        ("gres", &mut s.gres),
        ("constraint", &mut s.constraint),
    ] {
        if let Some(e) = fields.get(name) {
            *slot = ck.expect(
                &e.value,
                &format!("{path}.{name}"),
                "one word, as sbatch takes it",
                example,
                |n| {
                    let v = n.scalar()?;
                    (!v.is_empty() && !v.chars().any(char::is_whitespace)).then(|| v.to_string())
                },
            );
        }
    }
    if let Some(e) = fields.get("time") {
        s.time = ck.expect(
            &e.value,
            &format!("{path}.time"),
            "a duration like `30m` or `2h` (one phase's allocation)",
            "time: 30m",
            |n| parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
        );
    }
    for (key, slot, what, eg) in [
        (
            "controller_wait",
            &mut s.controller_wait,
            "how long a controller that does not answer is waited for",
            "controller_wait: 5m",
        ),
        (
            "pending_limit",
            &mut s.pending_limit,
            "how long a measurement's job may wait in the queue",
            "pending_limit: 1h",
        ),
    ] {
        if let Some(e) = fields.get(key) {
            *slot = ck.expect(
                &e.value,
                &format!("{path}.{key}"),
                &format!(
                    "a duration like `{}` ({what})",
                    eg.split(": ").nth(1).unwrap_or("")
                ),
                eg,
                |n| parse_duration(n.scalar()?),
            );
        }
    }
    if let Some(e) = fields.get("cpus") {
        s.cpus = ck.expect(
            &e.value,
            &format!("{path}.cpus"),
            "a number of CPUs, at least 1",
            "cpus: 4",
            |n| {
                parse_int(n.scalar()?)
                    .and_then(|v| u32::try_from(v).ok())
                    .filter(|v| *v >= 1)
            },
        );
    }
    if let Some(e) = fields.get("args") {
        s.args = ck
            .strings(
                &e.value,
                &format!("{path}.args"),
                "a list of sbatch arguments",
                "an argument like `--qos=low`",
                "args: [\"--qos=low\"]",
            )
            .unwrap_or_default();
        let own = s.args.iter().find(|a| {
            let flag = a.split('=').next().unwrap_or(a);
            SLURM_OWN_ARGS.contains(&flag)
        });
        if let Some(a) = own {
            ck.report(
                Some(e.value.line),
                Some(&format!("{path}.args")),
                format!(
                    "`{a}` is set by ooda itself (job name, script, one task on one node); use the keys `time` and `cpus` for those, and leave the rest to ooda"
                ),
            )
            .example("args: [\"--qos=low\", \"--mem=8G\"]");
        }
    }
    s
}

/// Whether `name` may name a Brief: lowercase letters, digits, `-` and
/// `_`, starting with a letter or digit (it names a branch and a folder).
pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn check_file_name(ck: &mut Checker, path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_name(&stem) {
        let fixed: String = stem
            .to_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_matches('-')
            .to_string();
        let fixed = if fixed.is_empty() {
            "my-brief".into()
        } else {
            fixed
        };
        ck.report(
            None,
            None,
            format!(
                "the Brief's name `{stem}` (its file name) must be lowercase letters, digits, `-` and `_`, starting with a letter or digit: it names a git branch and a folder; rename the file"
            ),
        )
        .expected("a file name like `p95-latency.md`")
        .example(format!("{fixed}.md"));
    }
    stem
}

struct Markdown {
    /// The YAML text and the file line it starts on.
    front: Option<(String, usize)>,
    /// Top-level `#` headings: title, byte range of the heading.
    headings: Vec<(String, Range<usize>)>,
    /// Where the prose starts (after the front matter).
    body_start: usize,
    /// The front matter was there but broken; text before the first section is then not
    /// blamed on the user a second time.
    front_broken: bool,
}

fn split_markdown(ck: &mut Checker, text: &str) -> Markdown {
    let mut front: Option<(String, usize)> = None;
    let mut front_range: Option<Range<usize>> = None;
    let mut late_front: Option<usize> = None;
    let mut headings = Vec::new();
    let mut heading: Option<(String, Range<usize>)> = None;
    let mut depth = 0usize;

    let parser = Parser::new_ext(text, Options::ENABLE_YAML_STYLE_METADATA_BLOCKS);
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) => {
                if range.start == 0 {
                    let block = &text[range.clone()];
                    // The YAML lies between the opening and the closing fence lines.
                    let start = block.find('\n').map_or(block.len(), |i| i + 1);
                    let end = block.rfind('\n').map_or(start, |i| i + 1).max(start);
                    front = Some((block[start..end].to_string(), line_of(text, start)));
                    front_range = Some(range.clone());
                } else if headings.is_empty() && late_front.is_none() {
                    late_front = Some(range.start);
                }
                depth += 1;
            }
            Event::Start(Tag::Heading {
                level: HeadingLevel::H1,
                ..
            }) if depth == 0 => {
                heading = Some((String::new(), range));
                depth += 1;
            }
            Event::Start(_) => depth += 1,
            Event::End(TagEnd::Heading(HeadingLevel::H1)) if depth == 1 => {
                if let Some(h) = heading.take() {
                    headings.push((h.0.split_whitespace().collect::<Vec<_>>().join(" "), h.1));
                }
                depth = 0;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.0.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(h) = heading.as_mut() {
                    h.0.push(' ');
                }
            }
            _ => {}
        }
    }

    let mut front_broken = false;
    if front.is_none() {
        front_broken = diagnose_front_matter(ck, text, late_front);
        if front_broken {
            // Lines of a broken front matter can look like headings (`# comment`).
            let fence_end = closing_fence(text).unwrap_or(0);
            headings.retain(|(_, r)| r.start >= fence_end);
        }
    }
    Markdown {
        front,
        headings,
        body_start: front_range.map_or(0, |r| r.end),
        front_broken,
    }
}

/// The byte offset just after a `---`/`...` line that closes a front matter opened on
/// line 1, if any.
fn closing_fence(text: &str) -> Option<usize> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        offset += line.len();
        let l = line.trim_end();
        if i > 0 && (l == "---" || l == "...") {
            return Some(offset);
        }
    }
    None
}

/// Reports why there is no usable front matter; returns whether one was attempted.
fn diagnose_front_matter(ck: &mut Checker, text: &str, late: Option<usize>) -> bool {
    let mut lines = text.lines();
    let opened = lines.next().is_some_and(|l| l.trim_end() == "---");
    if !opened {
        let message = match late {
            Some(offset) => format!(
                "the front matter must start on line 1, but it starts on line {}; move it to the top",
                line_of(text, offset)
            ),
            None => "no front matter: the file must start with a `---` line, then the settings in YAML, then a closing `---` line".into(),
        };
        ck.report(Some(1), None, message)
            .expected("YAML front matter between `---` lines at the top")
            .example(METRIC_EXAMPLE);
        return late.is_some();
    }
    let second = lines.next();
    let message = if closing_fence(text).is_none() {
        "the front matter opened by `---` on line 1 is never closed; add a `---` line after the settings"
    } else if second.is_some_and(|l| l.trim() == "---" || l.trim() == "...") {
        "the front matter is empty; it needs at least `metric`"
    } else if second.is_some_and(|l| l.trim().is_empty()) {
        "the line after the opening `---` must not be blank (markdown tools would not read the block as front matter)"
    } else {
        "the front matter could not be read; it must be `---`, YAML settings, `---` at the top of the file"
    };
    ck.report(Some(1), None, message)
        .expected("YAML front matter between `---` lines at the top")
        .example(METRIC_EXAMPLE);
    true
}

#[derive(Default)]
struct Sections {
    goal: String,
    success: String,
    must_not_break: String,
    context: Option<String>,
}

fn check_sections(ck: &mut Checker, text: &str, doc: &Markdown) -> Sections {
    let mut found: [Option<(String, usize)>; 4] = Default::default();
    for (i, (title, range)) in doc.headings.iter().enumerate() {
        let line = line_of(text, range.start);
        let body_end = doc.headings.get(i + 1).map_or(text.len(), |(_, r)| r.start);
        let body = text
            .get(range.end..body_end)
            .unwrap_or("")
            .trim()
            .to_string();
        let known = SECTIONS
            .iter()
            .position(|s| s.eq_ignore_ascii_case(title.trim_end_matches(':').trim()));
        match known {
            Some(k) => {
                if let Some((_, first)) = &found[k] {
                    ck.report(
                        Some(line),
                        None,
                        format!(
                            "section `# {}` appears twice (first on line {first}); merge them",
                            SECTIONS[k]
                        ),
                    );
                } else {
                    found[k] = Some((body, line));
                }
            }
            None => {
                let suggested = yaml::suggest(title, SECTIONS);
                let hint = match suggested {
                    Some(s) => format!("did you mean `# {s}`?"),
                    None => "use `##` for a sub-heading inside a section".into(),
                };
                ck.report(
                    Some(line),
                    None,
                    format!(
                        "unknown section `# {title}`: sections are `# Goal`, `# Success`, `# Must not break` and `# Context`; {hint}"
                    ),
                )
                .expected("`# Goal`, `# Success`, `# Must not break` or `# Context`")
                .example(match suggested {
                    Some(s) => format!("# {s}"),
                    None => format!("## {title}"),
                });
            }
        }
    }

    if !doc.front_broken {
        let first = doc.headings.first().map_or(text.len(), |(_, r)| r.start);
        let before = text.get(doc.body_start..first).unwrap_or("");
        if let Some(offset) = first_prose(before) {
            ck.report(
                Some(line_of(text, doc.body_start + offset)),
                None,
                "text before the first section is not given to agents; put it under a section",
            )
            .example("# Context");
        }
    }

    let mut take = |k: usize, required: bool| -> Option<String> {
        match found[k].take() {
            Some((body, _)) if !body.is_empty() => Some(body),
            Some((_, line)) => {
                if required {
                    ck.report(
                        Some(line),
                        None,
                        format!(
                            "section `# {}` is empty; write it for the agent",
                            SECTIONS[k]
                        ),
                    )
                    .example(format!("# {}", SECTIONS[k]));
                }
                None
            }
            None => {
                if required {
                    ck.report(
                        None,
                        None,
                        format!("missing required section `# {}`", SECTIONS[k]),
                    )
                    .example(format!("# {}", SECTIONS[k]));
                }
                None
            }
        }
    };
    Sections {
        goal: take(0, true).unwrap_or_default(),
        success: take(1, true).unwrap_or_default(),
        must_not_break: take(2, true).unwrap_or_default(),
        // An empty optional section is harmless: it is just left out.
        context: take(3, false),
    }
}

/// Offset of the first non-blank text outside HTML comments, if any.
fn first_prose(text: &str) -> Option<usize> {
    let mut offset = 0;
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        offset += rest.len() - trimmed.len();
        if trimmed.is_empty() {
            return None;
        }
        match trimmed.strip_prefix("<!--").and_then(|c| c.find("-->")) {
            Some(end) => {
                let skip = 4 + end + 3;
                offset += skip;
                rest = &trimmed[skip..];
            }
            None => return Some(offset),
        }
    }
}

fn check_settings(ck: &mut Checker, root: &Node, draft: &mut Draft) {
    let Some(fields) = ck.map(root, "", TOP_KEYS, METRIC_EXAMPLE) else {
        return;
    };
    draft.is_map = true;
    match fields.get("metric") {
        Some(e) => draft.metric = check_metric(ck, &e.value, e.line),
        None => match fields.entry("metric") {
            Some(e) => ck.wrong(
                &e.value,
                "metric",
                "a mapping with `name`, `command` and `direction`",
                METRIC_EXAMPLE,
            ),
            None => ck.missing(1, "metric", METRIC_EXAMPLE),
        },
    }
    if let Some(e) = fields.get("guards") {
        draft.guards = ck
            .strings(
                &e.value,
                "guards",
                "a list of shell commands",
                "a shell command",
                "guards: [\"cargo test --quiet\"]",
            )
            .unwrap_or_default();
    }
    if let Some(e) = fields.get("scope") {
        draft.scope = check_scope(ck, &e.value);
    }
    if let Some(e) = fields.get("knobs") {
        check_knobs(ck, &e.value, draft);
    }
    if let Some(e) = fields.get("knobs_file") {
        draft.knobs_file = ck.expect(
            &e.value,
            "knobs_file",
            "a relative path of a file inside the repository (no `..`, no trailing `/`), in no `.git` folder and none of ooda's own files (ooda.yaml, briefs/, subagents/, templates/, iterations/, .ooda/)",
            "knobs_file: ooda.knobs.env",
            |n| {
                let p = n.scalar()?.trim();
                let path = Path::new(p);
                let inside = path.is_relative()
                    && !path
                        .components()
                        .any(|c| matches!(c, std::path::Component::ParentDir));
                // ooda writes this file: in git's folder it would be a hook,
                // in ooda's own folders a Brief or a template.
                let ours = p.split('/').any(|c| c == ".git") || own_root(p).is_some();
                (!p.is_empty() && inside && !ours && !p.ends_with('/')).then(|| p.to_string())
            },
        );
    }
    if let Some(e) = fields.get("agent") {
        draft.agent_line = e.line;
        draft.agent = ck.string(
            &e.value,
            "agent",
            "the name of an agent profile from ooda.yaml, or `builtin`",
            "agent: claude",
        );
    }
    if let Some(e) = fields.get("budget") {
        draft.budget = check_budget(ck, &e.value, "budget");
    }
    if let Some(e) = fields.get("executor") {
        draft.executor = check_placement(ck, &e.value, "executor");
    }
    if let Some(e) = fields.get("slurm") {
        draft.slurm = check_slurm(ck, &e.value, "slurm");
    }
    if let Some(e) = fields.get("schedule") {
        const EXPECTED: &str = "a cron expression or an interval";
        const EXAMPLE: &str = "schedule: \"*/20 * * * *\"";
        draft.schedule = ck.string(&e.value, "schedule", EXPECTED, EXAMPLE);
        if let Some(text) = &draft.schedule
            && let Err(why) = crate::validate::cron::Schedule::parse(text)
        {
            ck.report(Some(e.value.line), Some("schedule"), why)
                .expected(EXPECTED)
                .example(EXAMPLE);
        }
    }
    if let Some(e) = fields.get("analyze") {
        draft.analyze = check_analyze(ck, &e.value);
    }
    if let Some(e) = fields.get("model") {
        draft.model = ck.string(
            &e.value,
            "model",
            "a tier of ooda.yaml's `models` (light, medium, heavy) or a model id",
            "model: heavy",
        );
    }
    if let Some(e) = fields.get("tools") {
        const EXAMPLE: &str = "tools: {allow: [\"cargo build\", \"./profile.sh\"]}";
        if let Some(tools) = ck.map(&e.value, "tools", TOOLS_KEYS, EXAMPLE)
            && let Some(allow) = tools.get("allow")
        {
            draft.tools_allow = ck
                .strings(
                    &allow.value,
                    "tools.allow",
                    "a list of shell commands the llm agent may run",
                    "a shell command",
                    EXAMPLE,
                )
                .unwrap_or_default();
        }
    }
    if let Some(e) = fields.get("seed") {
        draft.seed = ck.expect(
            &e.value,
            "seed",
            "a non-negative integer",
            "seed: 42",
            |n| n.scalar()?.trim().parse::<u64>().ok(),
        );
    }
}

/// `analyze: "perf stat ./bench.sh"` or `analyze: {command: …, timeout: 5m}`.
fn check_analyze(ck: &mut Checker, node: &Node) -> Option<Analyze> {
    const EXAMPLE: &str = "analyze: {command: \"perf stat -e task-clock ./bench.sh\", timeout: 5m}";
    let default = Duration::from_secs(300);
    if let yaml::Value::Scalar { .. } = node.value {
        let command = ck.string(node, "analyze", "a shell command", EXAMPLE)?;
        return Some(Analyze {
            command,
            timeout: default,
        });
    }
    let fields = ck.map(node, "analyze", ANALYZE_KEYS, EXAMPLE)?;
    let command = match fields.get("command") {
        Some(e) => ck.string(&e.value, "analyze.command", "a shell command", EXAMPLE),
        None => {
            ck.missing(node.line, "analyze.command", EXAMPLE);
            None
        }
    };
    let timeout = match fields.get("timeout") {
        Some(e) => ck.expect(
            &e.value,
            "analyze.timeout",
            "a duration such as `5m`",
            EXAMPLE,
            |n| parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
        )?,
        None => default,
    };
    Some(Analyze {
        command: command?,
        timeout,
    })
}

fn check_metric(ck: &mut Checker, node: &Node, key_line: usize) -> Option<Metric> {
    let before = ck.problems.len();
    let fields = ck.map(node, "metric", METRIC_KEYS, METRIC_EXAMPLE)?;
    fn required<'n>(
        ck: &mut Checker,
        f: &Fields<'n>,
        line: usize,
        key: &str,
        example: &str,
    ) -> Option<&'n Entry> {
        let e = f.entry(key);
        if e.is_none() {
            ck.missing(line, &join("metric", key), example);
        }
        e
    }

    let name = required(ck, &fields, key_line, "name", "name: p95_ms").and_then(|e| {
        ck.expect(
            &e.value,
            "metric.name",
            "a metric name without spaces or `=` (as in `METRIC p95_ms=12.5`)",
            "name: p95_ms",
            |n| {
                let s = n.scalar()?.trim();
                (!s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '='))
                    .then(|| s.to_string())
            },
        )
    });
    let command = required(ck, &fields, key_line, "command", "command: ./bench.sh").and_then(|e| {
        ck.string(
            &e.value,
            "metric.command",
            "a shell command that prints the metric",
            "command: ./bench.sh",
        )
    });
    let setup = fields.get("setup").and_then(|e| {
        ck.string(
            &e.value,
            "metric.setup",
            "a shell command",
            "setup: cargo build --release",
        )
    });
    let parse = match fields.get("parse") {
        Some(e) => check_parse(ck, &e.value),
        None => Some(Parse::MetricLine),
    };
    let direction =
        required(ck, &fields, key_line, "direction", "direction: minimize").and_then(|e| {
            ck.expect(
                &e.value,
                "metric.direction",
                "`minimize` or `maximize`",
                "direction: minimize",
                |n| match n.scalar()?.trim() {
                    "minimize" => Some(Direction::Minimize),
                    "maximize" => Some(Direction::Maximize),
                    _ => None,
                },
            )
        });
    let target = fields.get("target").and_then(|e| {
        ck.expect(&e.value, "metric.target", "a number", "target: 1.5", |n| {
            parse_float(n.scalar()?)
        })
    });
    let noise_floor = match fields.get("noise_floor") {
        Some(e) => check_noise_floor(ck, &e.value),
        None => Some(0.0),
    };
    let timeout = match fields.get("timeout") {
        Some(e) => ck.expect(
            &e.value,
            "metric.timeout",
            "a duration like `90s`, `5m` or `1h30m`",
            "timeout: 5m",
            |n| parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
        ),
        None => Some(DEFAULT_TIMEOUT),
    };
    let fresh_outputs = match fields.get("fresh_outputs") {
        Some(e) => ck.boolean(&e.value, "metric.fresh_outputs", "fresh_outputs: true"),
        None => Some(false),
    };
    let env = match fields.get("env") {
        Some(e) => ck.strings(
            &e.value,
            "metric.env",
            "a list of ooda's environment variables (names starting with OODA_) the measured commands are given",
            "a variable name like OODA_SIDE",
            "env: [OODA_SIDE]",
        ),
        None => Some(Vec::new()),
    };
    if let (Some(e), Some(names)) = (fields.get("env"), &env) {
        for n in names {
            let ok = n.strip_prefix("OODA_").is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            });
            const OURS: [&str; 3] = ["OODA_SIDE", "OODA_ITERATION", "OODA_BRIEF"];
            let near = (!OURS.contains(&n.as_str()))
                .then(|| crate::validate::yaml::suggest(n, &OURS))
                .flatten();
            if !ok {
                ck.report(
                    Some(e.value.line),
                    Some("metric.env"),
                    format!("`{n}` is not one of ooda's variables: the measured commands get the rest of ooda's environment anyway, and only names starting with OODA_ are withheld"),
                )
                .expected("names like OODA_SIDE, OODA_ITERATION, OODA_BRIEF")
                .example("env: [OODA_SIDE]");
            } else if let Some(near) = near {
                ck.report(
                    Some(e.value.line),
                    Some("metric.env"),
                    format!("`{n}` is not a variable ooda sets: did you mean {near}?"),
                )
                .expected("OODA_SIDE, OODA_ITERATION, OODA_BRIEF, or an OODA_* variable of ooda's own environment")
                .example(format!("env: [{near}]"));
            }
        }
    }

    if ck.problems.len() > before {
        return None;
    }
    Some(Metric {
        name: name?,
        command: command?,
        setup,
        parse: parse?,
        direction: direction?,
        target,
        noise_floor: noise_floor?,
        timeout: timeout?,
        fresh_outputs: fresh_outputs?,
        env: env?,
    })
}

fn check_noise_floor(ck: &mut Checker, node: &Node) -> Option<f64> {
    let value = ck.expect(
        node,
        "metric.noise_floor",
        "a percentage like `1%` (or a fraction like `0.01`)",
        "noise_floor: 1%",
        |n| parse_percent(n.scalar()?),
    )?;
    let bare = node.scalar().is_some_and(|s| !s.trim().ends_with('%'));
    if bare && value >= 1.0 {
        ck.report(
            Some(node.line),
            Some("metric.noise_floor"),
            format!("a bare number is a fraction (0.01 = 1%), so `{value}` would be {}%; write the percent sign", value * 100.0),
        )
        .expected("a percentage below 100%")
        .example(format!("noise_floor: {value}%"));
        return None;
    }
    if !(0.0..1.0).contains(&value) {
        ck.report(
            Some(node.line),
            Some("metric.noise_floor"),
            format!(
                "expected a percentage from 0% to below 100%, found {}",
                node.describe()
            ),
        )
        .expected("a percentage from 0% to below 100%")
        .example("noise_floor: 1%");
        return None;
    }
    Some(value)
}

fn check_parse(ck: &mut Checker, node: &Node) -> Option<Parse> {
    const EXPECTED: &str = "`metric-line`, `regex:<pattern with one group>` or `json:<pointer>`";
    let key = "metric.parse";
    let Some(text) = node.scalar() else {
        ck.wrong(node, key, EXPECTED, "parse: metric-line");
        return None;
    };
    let text = text.trim();
    if text == "metric-line" {
        return Some(Parse::MetricLine);
    }
    if let Some(pattern) = text.strip_prefix("regex:") {
        let example = r"parse: 'regex:p95=(\d+\.?\d*)'";
        return match regex::Regex::new(pattern) {
            Err(e) => {
                let reason = e.to_string();
                let reason = reason.lines().last().unwrap_or("invalid").trim();
                ck.report(
                    Some(node.line),
                    Some(key),
                    format!("the regex `{pattern}` does not compile: {reason}"),
                )
                .expected("a valid regex with one capture group")
                .example(example);
                None
            }
            Ok(re) if re.captures_len() != 2 => {
                ck.report(
                    Some(node.line),
                    Some(key),
                    format!(
                        "the regex `{pattern}` must have exactly one capture group (around the number), found {}",
                        re.captures_len() - 1
                    ),
                )
                .expected("a regex with exactly one capture group")
                .example(example);
                None
            }
            Ok(re) => Some(Parse::Regex(re)),
        };
    }
    if let Some(pointer) = text.strip_prefix("json:") {
        let pointer = pointer.trim();
        if !pointer.starts_with('/') {
            ck.report(
                Some(node.line),
                Some(key),
                format!("expected a JSON pointer starting with `/`, found `{pointer}`"),
            )
            .expected("a JSON pointer like `/results/p95`")
            .example("parse: json:/results/p95");
            return None;
        }
        return Some(Parse::Json(pointer.to_string()));
    }
    let hint = match yaml::suggest(text, &["metric-line"]) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    };
    ck.report(
        Some(node.line),
        Some(key),
        format!("expected {EXPECTED}, found {}{hint}", node.describe()),
    )
    .expected(EXPECTED)
    .example("parse: metric-line");
    None
}

fn check_scope(ck: &mut Checker, node: &Node) -> Scope {
    let example = "scope: {allow: [\"src/**\"], protect: [\"bench.sh\"]}";
    let Some(fields) = ck.map(node, "scope", SCOPE_KEYS, example) else {
        return Scope::default();
    };
    let mut lists = [Vec::new(), Vec::new()];
    let mut ok = true;
    let max_file_size = match fields.get("max_file_size") {
        None => DEFAULT_MAX_FILE_SIZE,
        Some(e) => ck
            .expect(
                &e.value,
                "scope.max_file_size",
                "a size like `10MiB` or `500KB`, above zero",
                "max_file_size: 50MiB",
                |n| crate::validate::units::parse_bytes(n.scalar()?).filter(|v| *v > 0),
            )
            .unwrap_or(DEFAULT_MAX_FILE_SIZE),
    };
    for (slot, name) in SCOPE_KEYS[..2].iter().enumerate() {
        let Some(e) = fields.get(name) else { continue };
        let key = join("scope", name);
        let item_example = format!("{name}: [\"src/**\"]");
        let Some(globs) = ck.strings(
            &e.value,
            &key,
            "a list of globs",
            "a glob like `src/**`",
            &item_example,
        ) else {
            ok = false;
            continue;
        };
        let items = e.value.seq().unwrap_or_default();
        for (i, glob) in globs.iter().enumerate() {
            if let Err(reason) = glob_variants(glob) {
                ck.report(
                    Some(items.get(i).map_or(e.line, |n| n.line)),
                    Some(&format!("{key}[{i}]")),
                    format!("`{glob}` is not a valid glob: {reason}"),
                )
                .expected("a glob like `src/**` or `tests/*.rs`")
                .example(item_example.clone());
                ok = false;
            }
        }
        lists[slot] = globs;
    }
    let [allow, protect] = lists;
    if !ok {
        return Scope::default();
    }
    // Every glob compiled above, so this cannot fail; the fallback keeps it panic-free.
    let mut scope = Scope::new(allow, protect).unwrap_or_default();
    scope.max_file_size = max_file_size;
    scope
}

fn check_knobs(ck: &mut Checker, node: &Node, draft: &mut Draft) {
    let Some(entries) = node.entries() else {
        ck.wrong(
            node,
            "knobs",
            "a mapping of knob names to specs",
            "knobs: {TILE: {int: [8, 512]}}",
        );
        draft.knobs_given = true;
        return;
    };
    draft.knobs_given = !entries.is_empty();
    let mut seen: Vec<&str> = Vec::new();
    for entry in entries {
        if seen.contains(&entry.key.as_str()) {
            ck.report(
                Some(entry.line),
                Some(&join("knobs", &entry.key)),
                format!("duplicate knob `{}`; keep one", entry.key),
            );
            continue;
        }
        seen.push(&entry.key);
        if let Some(k) = knob::check(ck, entry) {
            draft.knobs.push(k);
        }
    }
}

/// `budget` in a Brief and `defaults.budget` in `ooda.yaml`.
pub(crate) fn check_budget(ck: &mut Checker, node: &Node, path: &str) -> Budget {
    let example = "budget: {iterations: 40, wall: 8h, cost_usd: 15, tokens: 3M}";
    let Some(fields) = ck.map(node, path, BUDGET_KEYS, example) else {
        return Budget::default();
    };
    let key = |k: &str| join(path, k);
    Budget {
        iterations: fields.get("iterations").and_then(|e| {
            ck.expect(
                &e.value,
                &key("iterations"),
                "a positive integer",
                "iterations: 40",
                |n| {
                    parse_int(n.scalar()?)
                        .filter(|v| *v > 0)
                        .and_then(|v| u32::try_from(v).ok())
                },
            )
        }),
        wall: fields.get("wall").and_then(|e| {
            ck.expect(
                &e.value,
                &key("wall"),
                "a duration above zero, like `8h` or `1h30m`",
                "wall: 8h",
                |n| parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
            )
        }),
        cost_usd: fields.get("cost_usd").and_then(|e| {
            ck.expect(
                &e.value,
                &key("cost_usd"),
                "a number of US dollars, 0 or more",
                "cost_usd: 15",
                |n| {
                    let s = n.scalar()?.trim();
                    parse_float(s.strip_prefix('$').unwrap_or(s)).filter(|v| *v >= 0.0)
                },
            )
        }),
        tokens: fields.get("tokens").and_then(|e| {
            ck.expect(
                &e.value,
                &key("tokens"),
                "a token count like `3M` or `250k`",
                "tokens: 3M",
                |n| parse_count(n.scalar()?),
            )
        }),
    }
}

fn check_agent_known(ck: &mut Checker, draft: &Draft, agent: &str, known: &[&str]) {
    if agent == "builtin" || agent == "llm" || known.contains(&agent) {
        return;
    }
    let mut names: Vec<&str> = vec!["builtin", "llm"];
    names.extend(known.iter().copied());
    let suggestion = yaml::suggest(agent, &names);
    let p = ck.report(
        Some(draft.agent_line),
        Some("agent"),
        format!(
            "`{agent}` is not an agent profile{}; known: {}. A new one is defined in ooda.yaml under `agents:`",
            suggestion
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default(),
            names.join(", ")
        ),
    );
    p.expected("`builtin` or the name of an agent profile");
    p.example(format!("agent: {}", suggestion.unwrap_or("claude")));
}

fn check_agent_or_knobs(ck: &mut Checker, draft: &Draft) {
    if draft.knobs_given {
        return;
    }
    match draft.agent.as_deref() {
        None => {
            ck.report(
                Some(1),
                Some("agent"),
                "the Brief needs an agent or knobs: without an agent, the builtin driver searches knobs, and there are none",
            )
            .expected("`agent: <profile>` or a `knobs` mapping")
            .example("agent: claude");
        }
        Some("builtin") => {
            ck.report(
                Some(draft.agent_line),
                Some("knobs"),
                "the Brief needs an agent or knobs: `agent: builtin` only searches knobs, and there are none",
            )
            .expected("a `knobs` mapping, or an agent profile")
            .example("knobs: {TILE: {int: [8, 512], log: true}}");
        }
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests;
