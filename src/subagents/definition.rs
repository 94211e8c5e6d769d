//! A subagent definition: one `subagents/<name>.md` file.
//!
//! The format is Claude Code's agent file, so a user's own Claude Code
//! agents load unchanged: YAML front matter with `name` (the file stem),
//! `description`, `tools` (`Read, Grep, Bash` as Claude Code writes it, or a
//! list) and `model` (`haiku`/`sonnet`/`opus`/`inherit` as Claude Code writes
//! it, a tier `light`/`medium`/`heavy`, or a model id); the body is the
//! system prompt. ooda's own keys say how the runner uses it: `role`,
//! `driver`, `agent`, `trigger`, `sees`, `timeout`, `on_error`. Keys ooda
//! does not know are warned about, never fatal: a Claude Code file may carry
//! keys of its own (`color` is one it writes, and is accepted silently).
//!
//! What a subagent sees is a closed list ([`Sees`]): no variant names the
//! plan, the hypothesis or the main agent's output, so a reviewer cannot be
//! configured into sharing the main agent's reasoning ("re-evaluating with
//! the same context only reproduces the same bias").

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::Role;
use crate::validate::problem::{BriefError, Problem};
use crate::validate::yaml::{self, Checker, Node};

/// Keys of the front matter, Claude Code's first.
const KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "model",
    "color",
    "role",
    "driver",
    "agent",
    "trigger",
    "sees",
    "timeout",
    "on_error",
];

const EXAMPLE: &str = "---\nname: code-reviewer\ndescription: Reviews every kept diff.\ntools: Read, Grep\nmodel: sonnet\nrole: review\ndriver: command\n---\nYou are a skeptical senior reviewer.";

/// Who runs a subagent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubDriver {
    /// Plain Rust in ooda: rules and data, no model.
    Builtin,
    /// An agent CLI or script: a command profile of `ooda.yaml` (or a
    /// preset), with the main agent's invocation contract.
    Command,
    /// ooda's own model loop (not in this version).
    Llm,
}

impl SubDriver {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SubDriver::Builtin => "builtin",
            SubDriver::Command => "command",
            SubDriver::Llm => "llm",
        }
    }
}

/// What a failed or timed-out subagent means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnError {
    /// Block the keep: a reviewer that could not look has not approved.
    Block,
    /// Go on as if it had not run: for advisory subagents.
    Pass,
}

impl OnError {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OnError::Block => "block",
            OnError::Pass => "pass",
        }
    }
}

/// When the runner dispatches a subagent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Every keep.
    Keep,
    /// A keep whose diff changes more than this many lines.
    KeepDiffOver(u32),
    /// The end of a run.
    RunEnd,
    /// Iteration 1.
    FirstIteration,
    /// A plateau (iterations without a keep).
    Plateau,
    /// An anomaly in the iteration.
    Anomaly,
    /// The noise estimate changed.
    NoiseChanged,
    /// After every EXECUTE (the eval-runner).
    AfterExecute,
}

impl Trigger {
    fn parse(s: &str) -> Option<Trigger> {
        Some(match s {
            "keep" => Trigger::Keep,
            "run-end" => Trigger::RunEnd,
            "iteration-1" => Trigger::FirstIteration,
            "plateau" => Trigger::Plateau,
            "anomaly" => Trigger::Anomaly,
            "noise-changed" => Trigger::NoiseChanged,
            "after-execute" => Trigger::AfterExecute,
            _ => {
                let n = s
                    .strip_prefix("keep-diff-over-")?
                    .strip_suffix("-lines")?
                    .parse()
                    .ok()?;
                Trigger::KeepDiffOver(n)
            }
        })
    }

    pub(crate) fn text(self) -> String {
        match self {
            Trigger::Keep => "keep".into(),
            Trigger::KeepDiffOver(n) => format!("keep-diff-over-{n}-lines"),
            Trigger::RunEnd => "run-end".into(),
            Trigger::FirstIteration => "iteration-1".into(),
            Trigger::Plateau => "plateau".into(),
            Trigger::Anomaly => "anomaly".into(),
            Trigger::NoiseChanged => "noise-changed".into(),
            Trigger::AfterExecute => "after-execute".into(),
        }
    }

    /// Whether a keep with a diff of `changed_lines` fires it.
    pub(crate) fn fires_on_keep(self, changed_lines: usize) -> bool {
        match self {
            Trigger::Keep => true,
            Trigger::KeepDiffOver(n) => changed_lines > n as usize,
            _ => false,
        }
    }
}

/// One part of the context a subagent may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sees {
    /// The change as `git diff` shows it (base to candidate).
    Diff,
    /// The rule files (`review.rules` in `ooda.yaml`) and the Brief's
    /// "Must not break" section.
    Rules,
    /// Statistics over the archive (axes tried, keeps, noise, plateau).
    HistoryStats,
    /// The compressed output of the Brief's `analyze.command`.
    ProfileOutput,
    /// The iteration's own data (verdict, measurement, lessons).
    IterationData,
    /// The Brief's setup, guard and metric commands.
    Commands,
    /// The paired measurements.
    Measurements,
}

impl Sees {
    const ALL: [Sees; 7] = [
        Sees::Diff,
        Sees::Rules,
        Sees::HistoryStats,
        Sees::ProfileOutput,
        Sees::IterationData,
        Sees::Commands,
        Sees::Measurements,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Sees::Diff => "diff",
            Sees::Rules => "rules",
            Sees::HistoryStats => "history-stats",
            Sees::ProfileOutput => "profile-output",
            Sees::IterationData => "iteration-data",
            Sees::Commands => "commands",
            Sees::Measurements => "measurements",
        }
    }
}

/// A tier of `ooda.yaml`'s `models`, Claude Code's alias for one, or a model id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelChoice {
    /// `light`, `medium` or `heavy` (`haiku`, `sonnet`, `opus`).
    Tier(&'static str),
    /// The main agent's model.
    Inherit,
    /// A concrete model id.
    Id(String),
}

impl ModelChoice {
    fn parse(s: &str) -> ModelChoice {
        match s.trim() {
            "haiku" | "light" => ModelChoice::Tier("light"),
            "sonnet" | "medium" => ModelChoice::Tier("medium"),
            "opus" | "heavy" => ModelChoice::Tier("heavy"),
            "inherit" => ModelChoice::Inherit,
            id => ModelChoice::Id(id.to_string()),
        }
    }

    /// The model id to hand a command subagent (`OODA_MODEL`), when one is
    /// known: a tier resolves through `ooda.yaml`'s `models`.
    pub(crate) fn resolve(&self, config: &crate::config::Config) -> Option<String> {
        match self {
            ModelChoice::Tier(t) => config.models.get(*t).map(|m| m.model.clone()),
            ModelChoice::Inherit => None,
            ModelChoice::Id(id) => Some(id.clone()),
        }
    }

    /// What the llm driver is asked for: a tier or a model id; `inherit`
    /// takes the main agent's (`main`, when it is the llm driver), else
    /// `heavy`.
    pub(crate) fn for_llm(&self, main: Option<&str>) -> Option<String> {
        match self {
            ModelChoice::Tier(t) => Some(t.to_string()),
            ModelChoice::Id(id) => Some(id.clone()),
            ModelChoice::Inherit => main.map(str::to_string),
        }
    }

    /// For `ooda check`: the choice and what it resolves to.
    pub(crate) fn describe(&self, config: &crate::config::Config) -> String {
        match self {
            ModelChoice::Tier(t) => match config.models.get(*t) {
                Some(m) => format!("{t} ({})", m.model),
                None => format!("{t} (not set in ooda.yaml's models: the profile's own model)"),
            },
            ModelChoice::Inherit => "inherit (the main agent's)".into(),
            ModelChoice::Id(id) => id.clone(),
        }
    }
}

/// One loaded definition.
#[derive(Debug, Clone)]
pub(crate) struct Definition {
    pub name: String,
    /// The file it was read from, or the built-in copy's name.
    pub path: PathBuf,
    /// Read from the copy built into ooda (the project has no such file).
    pub built_in: bool,
    pub description: String,
    pub tools: Vec<String>,
    pub model: ModelChoice,
    /// `None`: the file says no role (a plain Claude Code agent); it is
    /// listed but not dispatched.
    pub role: Option<Role>,
    pub driver: SubDriver,
    /// The command profile a `driver: command` subagent runs (default: the
    /// Brief's agent).
    pub agent: Option<String>,
    pub triggers: Vec<Trigger>,
    pub sees: Vec<Sees>,
    pub timeout: Duration,
    pub on_error: OnError,
    /// The body: the subagent's system prompt.
    pub prompt: String,
}

/// The role a default definition plays when its file does not say (a
/// user's own Claude Code `code-reviewer.md` is the reviewer).
fn role_by_name(name: &str) -> Option<Role> {
    Some(match name {
        "code-reviewer" => Role::Review,
        "code-simplifier" => Role::Simplify,
        "pipeline-analyzer" => Role::Analyze,
        "obsidian-synthesizer" => Role::Synthesize,
        "eval-runner" => Role::Evaluate,
        _ => return None,
    })
}

fn default_triggers(role: Role) -> Vec<Trigger> {
    match role {
        Role::Review => vec![Trigger::Keep],
        Role::Simplify => vec![Trigger::KeepDiffOver(40)],
        Role::Analyze => vec![
            Trigger::FirstIteration,
            Trigger::Plateau,
            Trigger::Anomaly,
            Trigger::NoiseChanged,
        ],
        Role::Synthesize => vec![Trigger::Keep, Trigger::RunEnd],
        Role::Evaluate => vec![Trigger::AfterExecute],
        Role::Judge => vec![Trigger::RunEnd],
    }
}

fn allowed_triggers(role: Role, t: Trigger) -> bool {
    match role {
        Role::Review | Role::Simplify => matches!(t, Trigger::Keep | Trigger::KeepDiffOver(_)),
        Role::Analyze => matches!(
            t,
            Trigger::FirstIteration | Trigger::Plateau | Trigger::Anomaly | Trigger::NoiseChanged
        ),
        Role::Synthesize => matches!(t, Trigger::Keep | Trigger::RunEnd),
        Role::Evaluate => t == Trigger::AfterExecute,
        Role::Judge => t == Trigger::RunEnd,
    }
}

fn default_sees(role: Role) -> Vec<Sees> {
    match role {
        Role::Review => vec![Sees::Diff, Sees::Rules],
        Role::Simplify => vec![Sees::Diff],
        Role::Analyze => vec![Sees::HistoryStats, Sees::ProfileOutput],
        Role::Synthesize => vec![Sees::IterationData],
        Role::Evaluate => vec![Sees::Commands, Sees::Measurements],
        Role::Judge => vec![Sees::IterationData, Sees::HistoryStats],
    }
}

/// What each role may be given. A reviewer sees the change and the rules,
/// nothing of how the change came about.
fn allowed_sees(role: Role) -> &'static [Sees] {
    match role {
        Role::Review | Role::Simplify => &[Sees::Diff, Sees::Rules],
        Role::Analyze => &[Sees::HistoryStats, Sees::ProfileOutput, Sees::Measurements],
        Role::Synthesize => &[Sees::IterationData, Sees::HistoryStats],
        Role::Evaluate => &[Sees::Commands, Sees::Measurements],
        Role::Judge => &[Sees::IterationData, Sees::HistoryStats],
    }
}

/// The default timeout of a subagent run.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The YAML of a front matter that opens on line 1, the line it starts on,
/// and the body after its closing `---`.
fn split(text: &str) -> Option<(&str, usize, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "---" || l == "..." {
            return Some((&rest[..offset], 2, &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

impl Definition {
    /// Validates `text` as the definition file at `path`: every problem at
    /// once (file, line, key, expected, example), or the definition and the
    /// warnings about keys ooda does not know.
    pub(crate) fn parse(
        path: &Path,
        text: &str,
        built_in: bool,
    ) -> Result<(Definition, Vec<Problem>), BriefError> {
        let mut ck = Checker::new(path);
        let mut warn = Checker::new(path);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((front, first_line, body)) = split(text) else {
            ck.report(
                Some(1),
                None,
                "no front matter: a subagent file starts with a `---` line, the settings in YAML, and a closing `---` line, then its system prompt",
            )
            .expected("YAML front matter between `---` lines at the top")
            .example(EXAMPLE);
            return Err(BriefError {
                problems: ck.problems,
            });
        };
        let root = match yaml::parse(front, first_line) {
            Ok(r) => r,
            Err(e) => {
                yaml::report_syntax(&mut ck, &e, "not valid YAML");
                return Err(BriefError {
                    problems: ck.problems,
                });
            }
        };
        let mut d = Definition {
            name: stem.clone(),
            path: path.to_path_buf(),
            built_in,
            description: String::new(),
            tools: Vec::new(),
            model: ModelChoice::Inherit,
            role: None,
            driver: SubDriver::Command,
            agent: None,
            triggers: Vec::new(),
            sees: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            on_error: OnError::Pass,
            prompt: body.trim().to_string(),
        };
        // Unknown keys are warnings: check the mapping against every key,
        // then move the "unknown key" reports to the warnings.
        let Some(fields) = ck.map(&root, "", KEYS, EXAMPLE) else {
            return Err(BriefError {
                problems: ck.problems,
            });
        };
        let (unknown, problems): (Vec<Problem>, Vec<Problem>) = ck
            .problems
            .drain(..)
            .partition(|p| p.message.starts_with("unknown key"));
        ck.problems = problems;
        warn.problems = unknown
            .into_iter()
            .map(|mut p| {
                p.message = format!("{} (ignored)", p.message);
                p
            })
            .collect();

        match fields.get("name") {
            None => {
                ck.missing(root.line, "name", &format!("name: {stem}"));
            }
            Some(e) => {
                if let Some(name) = ck.string(&e.value, "name", "a name", "name: code-reviewer") {
                    let kebab = !name.is_empty()
                        && name.split('-').all(|w| {
                            !w.is_empty()
                                && w.chars()
                                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                        });
                    if !kebab {
                        ck.report(
                            Some(e.line),
                            Some("name"),
                            format!("`{name}` is not kebab-case: use lowercase letters, digits and hyphens"),
                        )
                        .example(format!("name: {stem}"));
                    } else if name != stem {
                        ck.report(
                            Some(e.line),
                            Some("name"),
                            format!(
                                "`{name}` differs from the file name `{stem}.md`: rename one so they match"
                            ),
                        )
                        .example(format!("name: {stem}"));
                    }
                }
            }
        }
        match fields.get("description") {
            None => ck.missing(
                root.line,
                "description",
                "description: Reviews every kept diff.",
            ),
            Some(e) => {
                if let Some(s) = ck.string(
                    &e.value,
                    "description",
                    "a sentence",
                    "description: Reviews every kept diff.",
                ) {
                    d.description = s;
                }
            }
        }
        if let Some(e) = fields.get("tools") {
            let example = "tools: Read, Grep, Bash";
            d.tools = match &e.value.value {
                yaml::Value::Seq(_) => ck
                    .strings(&e.value, "tools", "a list of tools", "a tool name", example)
                    .unwrap_or_default(),
                _ => ck
                    .string(&e.value, "tools", "tool names separated by commas", example)
                    .map(|s| {
                        s.split(',')
                            .map(|t| t.trim().to_string())
                            .filter(|t| !t.is_empty())
                            .collect()
                    })
                    .unwrap_or_default(),
            };
        }
        if let Some(e) = fields.get("model")
            && let Some(s) = ck.string(
                &e.value,
                "model",
                "`haiku`, `sonnet`, `opus`, `inherit`, a tier (`light`, `medium`, `heavy`) or a model id",
                "model: sonnet",
            )
        {
            d.model = ModelChoice::parse(&s);
        }
        d.role = match fields.get("role") {
            Some(e) => ck.expect(
                &e.value,
                "role",
                &format!("one of {}", names(&Role::ALL, |r| r.as_str())),
                "role: review",
                |n| {
                    Role::ALL
                        .iter()
                        .copied()
                        .find(|r| Some(r.as_str()) == n.scalar())
                },
            ),
            None => {
                let r = role_by_name(&stem);
                if r.is_none() {
                    warn.report(
                        Some(root.line),
                        Some("role"),
                        "no `role`: the subagent is listed but never dispatched; add `role: review` (or simplify, analyze, synthesize) to use it",
                    )
                    .example("role: review");
                }
                r
            }
        };
        let driver_line = fields.get("driver").map(|e| e.line);
        if let Some(e) = fields.get("driver") {
            let all = [SubDriver::Builtin, SubDriver::Command, SubDriver::Llm];
            if let Some(v) = ck.expect(
                &e.value,
                "driver",
                "`builtin`, `command` or `llm`",
                "driver: command",
                |n| all.iter().copied().find(|v| Some(v.as_str()) == n.scalar()),
            ) {
                d.driver = v;
            }
        } else if d.role == Some(Role::Evaluate) {
            d.driver = SubDriver::Builtin;
        }
        if let Some(e) = fields.get("agent") {
            d.agent = ck.string(&e.value, "agent", "a profile of ooda.yaml", "agent: claude");
        }
        if let Some(e) = fields.get("timeout")
            && let Some(t) = ck.expect(
                &e.value,
                "timeout",
                "a duration such as `10m`",
                "timeout: 10m",
                |n| crate::validate::units::parse_duration(n.scalar()?).filter(|d| !d.is_zero()),
            )
        {
            d.timeout = t;
        }
        let role_list = |ck: &mut Checker, node: &Node, key: &str| -> Vec<String> {
            match &node.value {
                yaml::Value::Seq(_) => ck
                    .strings(node, key, "a list", "a name", &format!("{key}: [keep]"))
                    .unwrap_or_default(),
                _ => ck
                    .string(node, key, "a name or a list", &format!("{key}: keep"))
                    .map(|s| vec![s])
                    .unwrap_or_default(),
            }
        };
        if let Some(role) = d.role {
            d.triggers = default_triggers(role);
            d.sees = default_sees(role);
            d.on_error = if role == Role::Review && d.driver != SubDriver::Builtin {
                OnError::Block
            } else {
                OnError::Pass
            };
            if let Some(e) = fields.get("trigger") {
                let mut out = Vec::new();
                for s in role_list(&mut ck, &e.value, "trigger") {
                    match Trigger::parse(&s) {
                        Some(t) if allowed_triggers(role, t) => out.push(t),
                        Some(_) => {
                            let ok: Vec<String> =
                                default_triggers(role).iter().map(|t| t.text()).collect();
                            ck.report(
                                Some(e.line),
                                Some("trigger"),
                                format!("`{s}` does not apply to role `{role}`"),
                            )
                            .expected(ok.join(", "))
                            .example(format!("trigger: {}", ok[0]));
                        }
                        None => {
                            ck.report(
                                Some(e.line),
                                Some("trigger"),
                                format!("unknown trigger `{s}`"),
                            )
                            .expected("keep, keep-diff-over-<N>-lines, run-end, iteration-1, plateau, anomaly, noise-changed or after-execute")
                            .example("trigger: keep");
                        }
                    }
                }
                d.triggers = out;
            }
            if let Some(e) = fields.get("sees") {
                let mut out = Vec::new();
                for s in role_list(&mut ck, &e.value, "sees") {
                    let allowed = allowed_sees(role);
                    match Sees::ALL.iter().copied().find(|v| v.as_str() == s) {
                        Some(v) if allowed.contains(&v) => out.push(v),
                        found => {
                            let ok = names(allowed, |v| v.as_str());
                            let message = match (found, role) {
                                (Some(_), Role::Review) => format!(
                                    "a reviewer sees only the change and the rules, never how it came about: `{s}` is not for role `review`"
                                ),
                                (Some(_), _) => format!("`{s}` is not for role `{role}`"),
                                (None, _) => format!("unknown context `{s}`"),
                            };
                            ck.report(Some(e.line), Some("sees"), message)
                                .expected(ok)
                                .example(format!("sees: [{}]", allowed[0].as_str()));
                        }
                    }
                }
                out.sort();
                out.dedup();
                d.sees = out;
            }
            if let Some(e) = fields.get("on_error") {
                let all = [OnError::Block, OnError::Pass];
                if let Some(v) = ck.expect(
                    &e.value,
                    "on_error",
                    "`block` or `pass`",
                    "on_error: block",
                    |n| all.iter().copied().find(|v| Some(v.as_str()) == n.scalar()),
                ) {
                    d.on_error = v;
                }
            }
            let line = driver_line.unwrap_or(root.line);
            match (role, d.driver) {
                (Role::Simplify, SubDriver::Builtin) => {
                    ck.report(
                        Some(line),
                        Some("driver"),
                        "there is no builtin simplifier (a simpler change needs a model): use `driver: command` or `driver: llm`",
                    )
                    .example("driver: command");
                }
                (Role::Judge, SubDriver::Builtin) => {
                    ck.report(
                        Some(line),
                        Some("driver"),
                        "a judge gives a model's qualitative verdict, and ooda's own checks already grade every iteration: use `driver: command` or `driver: llm`",
                    )
                    .example("driver: command");
                }
                (Role::Evaluate, SubDriver::Command | SubDriver::Llm) => {
                    ck.report(
                        Some(line),
                        Some("driver"),
                        "the eval-runner is plain code (its statistics never go to a model): use `driver: builtin`",
                    )
                    .example("driver: builtin");
                }
                _ => {}
            }
        }
        if d.driver == SubDriver::Builtin
            && let Some(e) = fields.get("agent")
        {
            warn.report(
                Some(e.line),
                Some("agent"),
                "`agent` is for `driver: command`; a builtin subagent runs no agent (ignored)",
            );
        }
        BriefError::check(ck.problems)?;
        Ok((d, warn.problems))
    }

    /// The driver as reports name it: `builtin` or `command:<profile>`.
    pub(crate) fn driver_name(&self, brief_agent: Option<&str>) -> String {
        match self.driver {
            SubDriver::Command => match self.agent.as_deref().or(brief_agent) {
                // The Brief's agent is the llm driver: it plays this one too.
                Some(a) if self.agent.is_none() && a.starts_with("llm:") => {
                    format!("{a} (the Brief's llm driver)")
                }
                Some(a) => format!("command:{a}"),
                None => "command (no profile)".into(),
            },
            d => d.as_str().into(),
        }
    }

    /// When it runs, in words.
    pub(crate) fn triggers_text(&self) -> String {
        let t: Vec<String> = self.triggers.iter().map(|t| t.text()).collect();
        if t.is_empty() {
            "never".into()
        } else {
            t.join(", ")
        }
    }

    pub(crate) fn sees_text(&self) -> String {
        names(&self.sees, |s| s.as_str()).replace('`', "")
    }
}

fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter()
        .map(|v| format!("`{}`", name(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<(Definition, Vec<Problem>), BriefError> {
        Definition::parse(&PathBuf::from(format!("subagents/{name}.md")), text, false)
    }

    #[test]
    fn a_claude_code_agent_file_loads_unchanged() {
        let text = "---\nname: code-reviewer\ndescription: Expert code review specialist. Use after writing code.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\ncolor: blue\n---\n\nYou are a senior code reviewer.\n";
        let (d, warnings) = parse("code-reviewer", text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(d.tools, ["Read", "Grep", "Glob", "Bash"]);
        assert_eq!(d.model, ModelChoice::Tier("medium"));
        // The default name gives the role; a prompt in the body means a model.
        assert_eq!(d.role, Some(Role::Review));
        assert_eq!(d.driver, SubDriver::Command);
        assert_eq!(
            d.on_error,
            OnError::Block,
            "a model reviewer that fails blocks"
        );
        assert_eq!(d.triggers, [Trigger::Keep]);
        assert_eq!(d.sees, [Sees::Diff, Sees::Rules]);
        assert_eq!(d.prompt, "You are a senior code reviewer.");
        for (alias, want) in [
            ("haiku", ModelChoice::Tier("light")),
            ("opus", ModelChoice::Tier("heavy")),
            ("inherit", ModelChoice::Inherit),
            (
                "claude-sonnet-4-5",
                ModelChoice::Id("claude-sonnet-4-5".into()),
            ),
        ] {
            assert_eq!(ModelChoice::parse(alias), want);
        }
    }

    #[test]
    fn every_shipped_default_is_valid() {
        for (file, text) in crate::project::SUBAGENTS {
            let stem = file.trim_end_matches(".md");
            let (d, warnings) = parse(stem, text).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(warnings.is_empty(), "{file}: {warnings:?}");
            assert!(d.role.is_some(), "{file}");
            assert!(!d.prompt.is_empty(), "{file}");
        }
    }

    #[test]
    fn problems_name_the_line_the_key_and_the_fix() {
        let text = "---\nname: Reviewer\ndescription: x\nrole: reveiw\ntrigger: sometimes\ntimeout: soon\n---\nbody\n";
        let e = parse("reviewer", text).unwrap_err().to_string();
        assert!(
            e.contains("subagents/reviewer.md:2: name: `Reviewer` is not kebab-case"),
            "{e}"
        );
        assert!(
            e.contains("subagents/reviewer.md:4: role: expected one of `review`"),
            "{e}"
        );
        assert!(e.contains(":6: timeout: expected a duration"), "{e}");
        let e = parse("x", "---\nname: y\ndescription: d\nrole: review\n---\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("differs from the file name `x.md`"), "{e}");
        let e = parse("x", "no front matter\n").unwrap_err().to_string();
        assert!(e.contains("subagents/x.md:1: no front matter"), "{e}");
        let e = parse("x", "---\nname: x\nrole: review\n---\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing required key `description`"), "{e}");
    }

    #[test]
    fn a_reviewer_cannot_be_shown_the_agents_reasoning() {
        let text =
            "---\nname: x\ndescription: d\nrole: review\nsees: [diff, iteration-data]\n---\n";
        let e = parse("x", text).unwrap_err().to_string();
        assert!(
            e.contains("a reviewer sees only the change and the rules"),
            "{e}"
        );
        let text = "---\nname: x\ndescription: d\nrole: review\nsees: [diff, plan]\n---\n";
        assert!(
            parse("x", text)
                .unwrap_err()
                .to_string()
                .contains("unknown context `plan`")
        );
    }

    #[test]
    fn unknown_keys_warn_and_drivers_fit_their_role() {
        let text =
            "---\nname: x\ndescription: d\nrole: review\ndriver: builtin\nflavour: mild\n---\n";
        let (d, w) = parse("x", text).unwrap();
        assert_eq!(
            d.on_error,
            OnError::Pass,
            "a builtin reviewer cannot fail to look"
        );
        assert_eq!(w.len(), 1);
        assert!(
            w[0].to_string()
                .contains(":6: flavour: unknown key `flavour`"),
            "{}",
            w[0]
        );
        let (d, w) = parse("my-agent", "---\nname: my-agent\ndescription: d\n---\nHi\n").unwrap();
        assert_eq!(d.role, None);
        assert!(w[0].message.contains("never dispatched"), "{w:?}");
        let text = "---\nname: x\ndescription: d\nrole: simplify\ndriver: llm\n---\n";
        let (d, w) = parse("x", text).unwrap();
        assert_eq!(d.driver, SubDriver::Llm);
        assert!(w.is_empty(), "the llm driver runs subagents: {w:?}");
        for (role, driver, says) in [
            ("simplify", "builtin", "no builtin simplifier"),
            ("evaluate", "command", "plain code"),
        ] {
            let text =
                format!("---\nname: x\ndescription: d\nrole: {role}\ndriver: {driver}\n---\n");
            let e = parse("x", &text).unwrap_err().to_string();
            assert!(e.contains(says), "{role}/{driver}: {e}");
        }
        let text =
            "---\nname: x\ndescription: d\nrole: simplify\ntrigger: keep-diff-over-25-lines\n---\n";
        let (d, _) = parse("x", text).unwrap();
        assert_eq!(d.triggers, [Trigger::KeepDiffOver(25)]);
        assert!(!d.triggers[0].fires_on_keep(25) && d.triggers[0].fires_on_keep(26));
        let text = "---\nname: x\ndescription: d\nrole: review\ntrigger: run-end\n---\n";
        assert!(
            parse("x", text)
                .unwrap_err()
                .to_string()
                .contains("does not apply to role `review`")
        );
    }
}
