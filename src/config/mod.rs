//! `ooda.yaml`, the project configuration.
//!
//! The file is optional and every key has a default, so a fresh project runs the builtin
//! driver with no configuration at all, and the agent presets (`claude`, `codex`,
//! `gemini`, `aider`, `script`) work without being written out. A profile in the file
//! with a preset's name starts from the preset and overrides only the keys it gives.
//!
//! Validation works like the Brief's (see [`crate::brief`] and [`crate::validate::yaml`]): the file
//! is parsed into a positioned tree and checked by hand, so every problem is reported at
//! once with its line, dotted key, and a "did you mean" for misspelt keys.

mod parse;
mod presets;

pub(crate) use presets::presets;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::brief::{BriefError, Budget};
use crate::model::Phase;
use crate::validate::yaml::{self, Checker};

/// The configuration file, relative to the project root.
pub(crate) const FILE_NAME: &str = "ooda.yaml";

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub defaults: Defaults,
    /// The presets plus the file's profiles, by name.
    pub agents: BTreeMap<String, AgentProfile>,
    /// Only `light`, `medium` and `heavy`.
    pub models: BTreeMap<String, ModelTier>,
    /// `sandbox:`: whether commands are confined, and what every command
    /// may write besides its worktree.
    pub sandbox: crate::model::SandboxSettings,
    /// `review:`: what reviewers read and the size a keep may have.
    pub review: Review,
    /// `anomalies:` and `notify:`: the anomaly thresholds, which of them
    /// stop the run, and the command run on a stop.
    pub watch: crate::model::Watch,
    /// `slurm:`: what a phase's allocation asks for when a Brief's
    /// measurements run on Slurm.
    pub slurm: crate::model::SlurmSettings,
}

/// `review:` in `ooda.yaml`.
#[derive(Clone, Debug, PartialEq)]
pub struct Review {
    /// Globs, relative to the repository root, of the rule files a
    /// reviewer reads (from the base commit, so a change cannot edit the
    /// rules it is judged by).
    pub rules: Vec<String>,
    /// A keep changing more lines than this is blocked by the builtin reviewer.
    pub max_diff_lines: usize,
}

impl Default for Review {
    fn default() -> Review {
        Review {
            rules: vec!["docs/rules/*.md".into()],
            max_diff_lines: 400,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    /// Limits for Briefs that leave them out (see `Config::budget_for`).
    pub budget: Budget,
    /// The most pairs one decision may use: the sequential test looks at
    /// those of 3, 5, 8 and 12 pairs that fit under it, then, for a
    /// promising candidate only, at 16, 20 and 24 (the last look allowed is
    /// final); values above 24 change nothing, 12 turns the extension off.
    pub pairs: u32,
    /// A/A pairs of the iteration-0 noise calibration.
    pub calibration_pairs: u32,
    /// Overall one-sided false-keep rate of the eval-runner.
    pub alpha: f64,
    /// Maximum characters of a PLAN prompt.
    pub prompt_budget: usize,
    /// Where the obsidian-synthesizer writes notes (relative to the root, or absolute).
    pub notes_dir: String,
    /// Bytes of each command's output that are kept.
    pub output_cap: u64,
    /// Consecutive iterations without a keep after which a run is `stalled`.
    pub stall_after: u32,
    /// Sweep points the builtin search may propose since the last keep
    /// before it stops (0: no sweep, it stops at the stall).
    pub sweep: u32,
    /// Thresholds of the red-light detectors.
    pub red_lights: crate::model::Thresholds,
    /// How long one agent step may wait out its API being unavailable
    /// (HTTP 429/5xx after the tool's own retries), retrying with backoff,
    /// before the iteration is given up as `agent unavailable`. Zero: never wait.
    pub agent_outage: Duration,
    /// Whether this Brief's timed runs take the host-wide measurement lock,
    /// so two Briefs (or two projects) never benchmark on top of each other.
    pub measure_exclusive: bool,
    /// Bytes of `events.jsonl` above which a tick seals it into
    /// `events/NNNNNN.jsonl.gz`.
    pub events_segment: u64,
    /// Discarded iterations whose artifacts are kept, counted back from the
    /// latest (None: all of them).
    pub keep_artifacts: Option<u32>,
    /// Where measurements run for Briefs that do not say (`executor:`).
    pub executor: crate::model::Placement,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            budget: Budget::default(),
            pairs: 24,
            calibration_pairs: 10,
            alpha: 0.05,
            prompt_budget: 24_000,
            notes_dir: "notes".into(),
            output_cap: 1_048_576,
            stall_after: 10,
            sweep: 100,
            red_lights: crate::model::Thresholds::default(),
            agent_outage: Duration::from_secs(30 * 60),
            measure_exclusive: true,
            events_segment: 64 << 20,
            keep_artifacts: Some(1000),
            executor: crate::model::Placement::Local,
        }
    }
}

/// An agent CLI the command driver runs.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentProfile {
    /// argv; the prompt is added according to `prompt`.
    pub command: Vec<String>,
    pub prompt: PromptMode,
    /// How the agent's output is read (final text, usage, cost).
    pub format: AgentFormat,
    pub timeout: Option<Duration>,
    /// Extra environment for the agent process.
    pub env: BTreeMap<String, String>,
    /// Whether the agent can write `OODA_OUTPUT_FILE` (outside its working
    /// directory), so the prompt offers it. Tools whose sandbox or
    /// permission mode confines writes to the worktree cannot, and answer
    /// with the fenced `ooda` block only.
    pub result_file: bool,
    /// Arguments for one step only (aider's `--chat-mode ask` in PLAN and
    /// LEARN): an argv entry cannot expand `$OODA_PHASE`.
    pub args_by_phase: PhaseArgs,
    /// The flag that puts a file in the agent's editing context (aider's
    /// `--file`): in EXECUTE, each file in scope that the plan names.
    pub file_arg: Option<String>,
    /// The flag that shows a file read-only (aider's `--read`): in EXECUTE,
    /// every other committed file the prompt names, so a tool that adds the
    /// files it sees mentioned cannot add a protected one as editable.
    pub read_arg: Option<String>,
    /// Whether the EXECUTE prompt asks for the optional `{"change": …}`
    /// block (aider reads a fenced block in its reply as an edit).
    pub change_note: bool,
    /// `compress_commands`: the tool's own shell commands run through `ooda
    /// compress` (its pre-tool hook, installed in the candidate worktree
    /// for each call; Claude Code and Gemini CLI only).
    pub compress_commands: bool,
    /// `index`: the code index's MCP server (`ooda mcp`) registered with
    /// the tool for each step (Claude Code, Codex, Gemini CLI only).
    pub index: bool,
    /// `sandbox.writable`: where the tool keeps its own state (its
    /// configuration directory), writable for it besides the worktree when
    /// ooda's sandbox is in force. `~` and `$VAR` expand at run time.
    pub sandbox_writable: Vec<String>,
    /// `sandbox.args_inside` / `sandbox.args_outside`: arguments the tool
    /// gets when ooda's sandbox is (is not) in force. Codex's own sandbox
    /// cannot start inside a Landlock domain, so it is relaxed there.
    pub sandbox_args: SandboxArgs,
}

/// Arguments that depend on whether ooda's sandbox is in force.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SandboxArgs {
    pub inside: Vec<String>,
    pub outside: Vec<String>,
}

/// Per-step arguments of a profile (`args_by_phase` in `ooda.yaml`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseArgs {
    pub plan: Vec<String>,
    pub execute: Vec<String>,
    pub learn: Vec<String>,
}

impl PhaseArgs {
    pub fn of(&self, phase: Phase) -> &[String] {
        match phase {
            Phase::Plan => &self.plan,
            Phase::Execute => &self.execute,
            Phase::Learn => &self.learn,
            _ => &[],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.plan.is_empty() && self.execute.is_empty() && self.learn.is_empty()
    }
}

/// How the rendered prompt reaches the agent. `OODA_PROMPT_FILE` is set in every mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// Piped to stdin.
    Stdin,
    /// Appended to argv as the last argument (the prompt text).
    Arg,
    /// Appended to argv as the last argument (the prompt file's path).
    File,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentFormat {
    /// `claude -p --output-format json`
    ClaudeJson,
    /// `claude -p --output-format stream-json --verbose`
    ClaudeStreamJson,
    /// `codex exec --json`
    CodexJsonl,
    /// `gemini -p ... -o json`
    GeminiJson,
    /// aider's stdout: plain text, `Tokens: … Cost: …` lines, litellm errors.
    Aider,
    /// Raw stdout.
    Text,
}

impl AgentFormat {
    /// Whether the tool that prints this format takes MCP servers (the
    /// code index is offered to it as one: `index: true`).
    pub fn takes_mcp_servers(self) -> bool {
        matches!(
            self,
            AgentFormat::ClaudeJson
                | AgentFormat::ClaudeStreamJson
                | AgentFormat::CodexJsonl
                | AgentFormat::GeminiJson
        )
    }

    const ALL: [AgentFormat; 6] = [
        AgentFormat::ClaudeJson,
        AgentFormat::ClaudeStreamJson,
        AgentFormat::CodexJsonl,
        AgentFormat::GeminiJson,
        AgentFormat::Aider,
        AgentFormat::Text,
    ];

    /// The `ooda.yaml` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentFormat::ClaudeJson => "claude-json",
            AgentFormat::ClaudeStreamJson => "claude-stream-json",
            AgentFormat::CodexJsonl => "codex-jsonl",
            AgentFormat::GeminiJson => "gemini-json",
            AgentFormat::Aider => "aider",
            AgentFormat::Text => "text",
        }
    }
}

impl PromptMode {
    const ALL: [PromptMode; 3] = [PromptMode::Stdin, PromptMode::Arg, PromptMode::File];

    pub fn as_str(self) -> &'static str {
        match self {
            PromptMode::Stdin => "stdin",
            PromptMode::Arg => "arg",
            PromptMode::File => "file",
        }
    }
}

/// A model for the llm driver. The API key is only ever read from the environment
/// variable named by `api_key_env`, never from this file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTier {
    pub provider: Provider,
    pub model: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// USD per million input tokens.
    pub price_in: Option<f64>,
    /// USD per million output tokens.
    pub price_out: Option<f64>,
    /// Tokens the model reads at most: compaction starts at 85% of it.
    pub context_window: u64,
    /// Tokens one answer may take (`max_tokens`).
    pub max_output: u64,
    /// Retries of one request after a retryable failure (429, 5xx, …).
    pub max_retries: u32,
    /// How long one request may take (a local server that hangs must not
    /// hold the step until its own timeout).
    pub timeout: Duration,
    /// How the model calls tools; `None` is auto: native, unless `ooda check
    /// --preflight` found this model cannot (`.ooda/preflight/tools.json`).
    pub tools: Option<ToolsMode>,
}

/// What a tier's window is taken to be when `ooda.yaml` does not say.
pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// What one answer may take when `ooda.yaml` does not say.
pub(crate) const DEFAULT_MAX_OUTPUT: u64 = 4_096;
/// As the official SDKs do.
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 4;
/// One request's limit when `ooda.yaml` does not say.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

impl ModelTier {
    /// The URL requests go to when `base_url` is not set.
    pub fn base_url(&self) -> &str {
        match (&self.base_url, self.provider) {
            (Some(u), _) => u.trim_end_matches('/'),
            (None, Provider::Openai) => "https://api.openai.com/v1",
            (None, Provider::Anthropic) => "https://api.anthropic.com/v1",
        }
    }

    /// USD for `input` and `output` tokens at the tier's prices (0 when unpriced).
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        let per = |tokens: u64, price: Option<f64>| tokens as f64 * price.unwrap_or(0.0) / 1e6;
        per(input, self.price_in) + per(output, self.price_out)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI-compatible Chat Completions (any base URL).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

/// How a model is offered its tools (`models.<tier>.tools`).
///
/// Small local models often have a chat template without tools (the server
/// drops them silently) or never use the ones they are given, while they
/// can still write a call, or an edit, as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsMode {
    /// The API's own tool calls (calls written as text are read too).
    Native,
    /// The tools described in the system prompt; the model writes each call
    /// as `<tool_call>{"name": …, "arguments": …}</tool_call>`.
    Text,
    /// No tools: EXECUTE answers with search/replace blocks ooda applies;
    /// the files the plan names are shown in the prompt.
    None,
}

impl ToolsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolsMode::Native => "native",
            ToolsMode::Text => "text",
            ToolsMode::None => "none",
        }
    }

    pub(crate) const ALL: [ToolsMode; 3] = [ToolsMode::Native, ToolsMode::Text, ToolsMode::None];

    /// How `ooda check` and the preflight say it.
    pub fn describe(self) -> &'static str {
        match self {
            ToolsMode::Native => "native tool calls",
            ToolsMode::Text => "tool calls as text",
            ToolsMode::None => "no tool calls (edit-format mode)",
        }
    }
}

pub(crate) const TIERS: &[&str] = &["light", "medium", "heavy"];
/// How long an agent call may run when its profile sets no `timeout`.
pub(crate) const DEFAULT_AGENT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

impl Default for Config {
    fn default() -> Config {
        Config {
            defaults: Defaults::default(),
            agents: presets(),
            models: BTreeMap::new(),
            sandbox: crate::model::SandboxSettings::default(),
            review: Review::default(),
            watch: crate::model::Watch::default(),
            slurm: crate::model::SlurmSettings::default(),
        }
    }
}

impl Config {
    /// A Brief's budget, each limit it leaves out taken from the defaults.
    /// A `tokens` or `cost_usd` of 0 in the Brief is "no limit": it lifts
    /// the default rather than allowing nothing.
    pub fn budget_for(&self, brief: &crate::brief::Brief) -> Budget {
        let mut b = brief.budget.or(&self.defaults.budget);
        b.tokens = b.tokens.filter(|t| *t > 0);
        b.cost_usd = b.cost_usd.filter(|c| *c > 0.0);
        b
    }

    /// Where `brief`'s measurements run: its `executor:`, else the default.
    pub fn placement_for(&self, brief: &crate::brief::Brief) -> crate::model::Placement {
        brief.executor.unwrap_or(self.defaults.executor)
    }

    /// The Slurm settings for `brief`: its `slurm:` keys over this file's.
    pub fn slurm_for(&self, brief: &crate::brief::Brief) -> crate::model::SlurmSettings {
        self.slurm.overridden_by(&brief.slurm)
    }

    /// Reads `root/ooda.yaml`; a missing file is the default configuration.
    pub fn load(root: &Path) -> Result<Config, BriefError> {
        let path = root.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(BriefError::io(&path, &e)),
        }
    }

    /// Validates `text` as the config file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, BriefError> {
        let mut ck = Checker::new(path);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut cfg = Config::default();
        match yaml::parse(text, 1) {
            Err(e) => yaml::report_syntax(&mut ck, &e, "not valid YAML"),
            // An empty file (or only comments) is the default configuration.
            Ok(root) if root.is_null() => {}
            Ok(root) => parse::check_config(&mut ck, &root, &mut cfg),
        }
        BriefError::check(ck.problems)?;
        Ok(cfg)
    }
}

/// `~/rel` when `HOME` is known, else `~/rel` as written (expanded, or
/// left out, when a command starts).
fn home_dir(rel: &str) -> String {
    match std::env::var("HOME") {
        Ok(h) if !h.is_empty() => format!("{}/{rel}", h.trim_end_matches('/')),
        _ => format!("~/{rel}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::units::parse_bytes;
    use std::path::PathBuf;

    fn problems(text: &str) -> Vec<crate::validate::problem::Problem> {
        match Config::parse(Path::new("ooda.yaml"), text) {
            Ok(_) => Vec::new(),
            Err(e) => e.problems,
        }
    }

    fn only(text: &str) -> crate::validate::problem::Problem {
        let mut ps = problems(text);
        assert_eq!(ps.len(), 1, "{ps:#?}");
        ps.remove(0)
    }

    #[test]
    fn executor_and_slurm_are_read_and_checked() {
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "defaults:\n  executor: slurm\nslurm:\n  partition: gpu\n  time: 90s\n  args: [\"--qos=low\"]\n",
        )
        .unwrap();
        assert_eq!(cfg.defaults.executor, crate::model::Placement::Slurm);
        assert_eq!(
            cfg.slurm.sbatch_args(),
            ["--partition=gpu", "--time=2", "--qos=low"]
        );
        let p = only("defaults:\n  executor: cluster\n");
        assert_eq!(p.key.as_deref(), Some("defaults.executor"));
        assert!(p.message.contains("`local`"), "{}", p.message);
        let p = only("slurm:\n  partion: gpu\n");
        assert_eq!(p.key.as_deref(), Some("slurm.partion"));
        assert!(p.message.contains("partition"), "{}", p.message);
        let p = only("slurm:\n  gres: gpu 1\n");
        assert_eq!(p.key.as_deref(), Some("slurm.gres"));
        let p = only("slurm:\n  time: soon\n");
        assert_eq!((p.key.as_deref(), p.line), (Some("slurm.time"), Some(2)));
        let p = only("slurm:\n  args: [\"--qos=low\", \"--job-name=mine\"]\n");
        assert_eq!(p.key.as_deref(), Some("slurm.args"));
        assert!(
            p.message.contains("`--job-name=mine` is set by ooda"),
            "{}",
            p.message
        );
        let p = only("slurm:\n  cpus: 0\n");
        assert_eq!(p.key.as_deref(), Some("slurm.cpus"));
        let cfg = Config::parse(Path::new("ooda.yaml"), "slurm: {cpus: 4}\n").unwrap();
        assert_eq!(cfg.slurm.sbatch_args(), ["--cpus-per-task=4"]);
    }

    #[test]
    fn anomalies_and_notify_are_read_and_checked() {
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "anomalies:\n  budget_used: 0.9\n  token_spike: 4\n  repeated_failure: 5\n  stop_on: [budget_near, token_spike]\nnotify: ./alert.sh\n",
        )
        .unwrap();
        assert_eq!(cfg.watch.budget_used, 0.9);
        assert_eq!(cfg.watch.token_spike, 4.0);
        assert_eq!(cfg.watch.repeated_failure, 5);
        assert_eq!(cfg.watch.stop_on, ["budget_near", "token_spike"]);
        assert_eq!(cfg.watch.notify.as_deref(), Some("./alert.sh"));
        let p = only("anomalies:\n  stop_on: [repeated_failure]\n");
        assert_eq!(p.key.as_deref(), Some("anomalies.stop_on"));
        assert!(
            p.message.contains("only the spending rules"),
            "{}",
            p.message
        );
        let p = only("anomalies:\n  budget_used: 80\n");
        assert_eq!(p.key.as_deref(), Some("anomalies.budget_used"));
        let p = only("anomalies:\n  token_spik: 3\n");
        assert!(p.message.contains("token_spike"), "{}", p.message);
    }

    #[test]
    fn the_drivers_names_cannot_be_profiles() {
        for name in ["builtin", "llm"] {
            let p = only(&format!(
                "agents:\n  {name}: {{command: [./a.sh], prompt: stdin, format: text}}\n"
            ));
            assert_eq!(p.key.as_deref(), Some(format!("agents.{name}").as_str()));
            assert!(p.message.contains("cannot be redefined"), "{}", p.message);
        }
    }

    #[test]
    fn model_tiers_take_a_window_an_output_limit_and_retries() {
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "models:\n  heavy: {provider: openai, model: m, context_window: 200_000, max_output: 8192, max_retries: 0}\n  light: {provider: anthropic, model: h}\n",
        )
        .unwrap();
        let h = &cfg.models["heavy"];
        assert_eq!(
            (h.context_window, h.max_output, h.max_retries),
            (200_000, 8192, 0)
        );
        let l = &cfg.models["light"];
        assert_eq!(
            (l.context_window, l.max_output, l.max_retries),
            (128_000, 4_096, 4)
        );
        assert_eq!(l.base_url(), "https://api.anthropic.com/v1");
        let p = only("models:\n  heavy: {provider: openai, model: m, context_window: 10}\n");
        assert_eq!(p.key.as_deref(), Some("models.heavy.context_window"));
    }

    #[test]
    fn measure_exclusive_is_on_by_default_and_must_be_a_boolean() {
        let cfg = Config::parse(Path::new("ooda.yaml"), "# nothing\n").unwrap();
        assert!(cfg.defaults.measure_exclusive);
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "defaults:\n  measure_exclusive: false\n",
        )
        .unwrap();
        assert!(!cfg.defaults.measure_exclusive);
        let p = only("defaults:\n  measure_exclusive: sometimes\n");
        let text = p.to_string();
        assert!(text.contains("defaults.measure_exclusive"), "{text}");
        assert!(text.contains("ooda.yaml:2"), "{text}");
    }

    #[test]
    fn the_sandbox_is_a_mode_or_a_mapping_and_paths_must_be_absolute() {
        use crate::model::SandboxMode as Mode;
        let parse = |t: &str| Config::parse(Path::new("ooda.yaml"), t);
        assert_eq!(parse("# none\n").unwrap().sandbox.mode, Mode::Auto);
        assert_eq!(parse("sandbox: off\n").unwrap().sandbox.mode, Mode::Off);
        let cfg = parse("sandbox: {mode: on, writable: [~/.cargo, $GOCACHE, /opt/c]}\n").unwrap();
        assert_eq!(cfg.sandbox.mode, Mode::On);
        assert_eq!(cfg.sandbox.writable, ["~/.cargo", "$GOCACHE", "/opt/c"]);
        let e = parse("sandbox: maybe\n").unwrap_err().to_string();
        assert!(
            e.contains("ooda.yaml:1: sandbox: ") && e.contains("`auto`, `on` or `off`"),
            "{e}"
        );
        let e = parse("sandbox:\n  writable: [cache]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sandbox.writable: `cache` is relative"), "{e}");
        let e = parse("sandbox: {writeable: [/x]}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("writable"), "{e}");
        // A profile's state directory and its in/out arguments.
        let cfg = parse(
            "agents:\n  mine:\n    command: [t, \"-\"]\n    sandbox: {writable: [$HOME/.t], args_inside: [--no-own-sandbox], args_outside: [--own-sandbox]}\n",
        )
        .unwrap();
        let p = &cfg.agents["mine"];
        assert_eq!(p.sandbox_writable, ["$HOME/.t"]);
        assert_eq!(p.sandbox_args.inside, ["--no-own-sandbox"]);
        assert_eq!(p.sandbox_args.outside, ["--own-sandbox"]);
        let e = parse("agents:\n  claude: {sandbox: {writable: [.claude]}}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("agents.claude.sandbox.writable"), "{e}");
    }

    #[test]
    fn presets_keep_their_state_in_a_writable_directory() {
        let p = presets();
        assert_eq!(p["claude"].sandbox_writable, ["$CLAUDE_CONFIG_DIR"]);
        assert_eq!(p["codex"].sandbox_writable, ["$CODEX_HOME"]);
        assert_eq!(p["gemini"].sandbox_writable, ["~/.gemini"]);
        assert_eq!(p["aider"].sandbox_writable, ["~/.aider"]);
        assert!(p["script"].sandbox_writable.is_empty());
        if std::env::var_os("CLAUDE_CONFIG_DIR").is_none() {
            assert!(p["claude"].env["CLAUDE_CONFIG_DIR"].ends_with("/.claude"));
        }
    }

    #[test]
    fn per_step_arguments_and_file_flags() {
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "agents:\n  mine:\n    command: [tool, --message]\n    prompt: arg\n    args_by_phase: {plan: [--ask], learn: [--ask, --quiet]}\n    file_arg: --edit\n    change_note: false\n  aider: {read_arg: null}\n",
        )
        .expect("valid");
        let mine = &cfg.agents["mine"];
        assert_eq!(mine.args_by_phase.of(Phase::Plan), ["--ask"]);
        assert!(mine.args_by_phase.of(Phase::Execute).is_empty());
        assert_eq!(mine.args_by_phase.of(Phase::Learn), ["--ask", "--quiet"]);
        assert_eq!(mine.file_arg.as_deref(), Some("--edit"));
        assert_eq!(mine.read_arg, None);
        assert!(!mine.change_note);
        // Overriding one key of the aider preset keeps the rest of it.
        let aider = &cfg.agents["aider"];
        assert_eq!(aider.read_arg, None);
        assert_eq!(aider.file_arg.as_deref(), Some("--file"));
        assert_eq!(aider.args_by_phase.of(Phase::Plan), ["--chat-mode", "ask"]);
        let p = only("agents:\n  mine:\n    command: [t]\n    args_by_phase: {plann: [--ask]}\n");
        assert!(p.to_string().contains("did you mean `plan`"), "{p}");
        let p = only("agents:\n  mine:\n    command: [t]\n    file_arg: file\n");
        assert_eq!(p.key.as_deref(), Some("agents.mine.file_arg"));
    }

    #[test]
    fn red_light_thresholds_are_configurable_and_checked() {
        let cfg = Config::parse(
            Path::new("ooda.yaml"),
            "defaults:\n  red_lights:\n    failure_streak: 3\n    trend_z: 2.5\n",
        )
        .expect("valid");
        assert_eq!(cfg.defaults.red_lights.failure_streak, 3);
        // Unset, the ineffective-agent light follows the failure streak.
        assert_eq!(cfg.defaults.red_lights.agent_ineffective, 3);
        let own = Config::parse(
            Path::new("ooda.yaml"),
            "defaults:\n  red_lights:\n    failure_streak: 10\n    agent_ineffective: 4\n",
        )
        .expect("valid");
        assert_eq!(own.defaults.red_lights.agent_ineffective, 4);
        assert_eq!(cfg.defaults.red_lights.trend_z, 2.5);
        assert_eq!(
            cfg.defaults.red_lights.flip_window,
            crate::eval::redlight::Thresholds::default().flip_window
        );
        let p = only("defaults:\n  red_lights:\n    failure_streek: 3\n");
        assert_eq!(p.line, Some(3));
        assert!(p.to_string().contains("failure_streak"), "{p}");
        let p = only("defaults:\n  red_lights:\n    trend_z: -1\n");
        assert_eq!(p.key.as_deref(), Some("defaults.red_lights.trend_z"));
        let p = only("defaults:\n  red_lights:\n    flip_window: 10\n    flip_min: 12\n");
        assert_eq!(p.line, Some(4));
        assert!(p.to_string().contains("can never fire"), "{p}");
        // A window longer than the iterations held in full would never fill.
        let p = only("defaults:\n  red_lights:\n    trend_window: 200\n");
        assert_eq!(p.key.as_deref(), Some("defaults.red_lights.trend_window"));
        assert!(p.to_string().contains("from 8 to 128"), "{p}");
        let ok = Config::parse(
            Path::new("ooda.yaml"),
            "defaults:\n  red_lights:\n    trend_window: 128\n    plateau: 500\n",
        )
        .expect("valid");
        assert_eq!(ok.defaults.red_lights.plateau, 500);
    }

    #[test]
    fn empty_or_missing_file_is_default() {
        let cfg = Config::parse(Path::new("ooda.yaml"), "# nothing yet\n").expect("valid");
        assert_eq!(cfg, Config::default());
        assert_eq!(cfg.defaults.pairs, 24);
        assert_eq!(
            cfg.defaults.red_lights,
            crate::eval::redlight::Thresholds::default()
        );
        assert_eq!(cfg.defaults.calibration_pairs, 10);
        assert_eq!(cfg.defaults.alpha, 0.05);
        assert_eq!(cfg.defaults.prompt_budget, 24_000);
        assert_eq!(cfg.defaults.notes_dir, "notes");
        assert_eq!(cfg.defaults.output_cap, 1_048_576);
        assert!(cfg.models.is_empty());
        for name in ["claude", "codex", "gemini", "aider", "script"] {
            assert!(cfg.agents.contains_key(name), "{name}");
        }

        let dir = std::env::temp_dir().join(format!("ooda-config-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        assert_eq!(Config::load(&dir).ok(), Some(Config::default()));
        let _ = std::fs::write(dir.join(FILE_NAME), "defaults: {pairs: 7}\n");
        assert_eq!(Config::load(&dir).map(|c| c.defaults.pairs).ok(), Some(7));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_sweep_allowance_defaults_to_the_search_s_own_and_may_be_zero() {
        let parse = |t: &str| Config::parse(Path::new("ooda.yaml"), t);
        assert_eq!(
            Config::default().defaults.sweep as usize,
            crate::driver::builtin::SWEEP
        );
        assert_eq!(parse("defaults: {sweep: 0}\n").unwrap().defaults.sweep, 0);
        let e = parse("defaults:\n  sweep: -3\n").unwrap_err().to_string();
        assert!(
            e.contains("ooda.yaml:2") && e.contains("defaults.sweep"),
            "{e}"
        );
        assert!(e.contains("at least 0") && e.contains("sweep: 100"), "{e}");
    }

    #[test]
    fn retention_keys_take_all_or_a_count_and_name_the_key_when_wrong() {
        let parse = |t: &str| Config::parse(Path::new("ooda.yaml"), t);
        let d = Config::default().defaults;
        assert_eq!((d.events_segment, d.keep_artifacts), (64 << 20, Some(1000)));
        let all = parse("defaults: {keep_artifacts: all}\n").unwrap();
        assert_eq!(all.defaults.keep_artifacts, None);
        for bad in [
            "defaults: {keep_artifacts: 0}\n",
            "defaults: {keep_artifacts: some}\n",
            "defaults: {events_segment: 10KiB}\n",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            let key = if bad.contains("keep") {
                "defaults.keep_artifacts"
            } else {
                "defaults.events_segment"
            };
            assert!(e.contains(key) && e.contains("ooda.yaml:1:"), "{bad}: {e}");
        }
    }

    #[test]
    fn full_config() {
        let text = "\
defaults:
  budget: {iterations: 40, wall: 8h, cost_usd: 15, tokens: 3M}
  pairs: 6
  calibration_pairs: 12
  alpha: 0.01
  prompt_budget: 30000
  notes_dir: vault/ooda
  output_cap: 64KiB
  events_segment: 16MiB
  keep_artifacts: 200
agents:
  mine:
    command: [python3, agent.py, --fast]
    prompt: file
    format: codex-jsonl
    timeout: 30m
    env: {MODE: night, EMPTY: }
  claude:
    timeout: 45m
models:
  light: {provider: openai, model: gpt-4o-mini, base_url: 'http://localhost:8080/v1', api_key_env: LOCAL_KEY, price_in: 0.15, price_out: 0.6}
  heavy:
    provider: anthropic
    model: claude-opus-4
";
        let cfg = Config::parse(Path::new("ooda.yaml"), text).expect("valid config");
        let d = &cfg.defaults;
        assert_eq!(d.budget.iterations, Some(40));
        assert_eq!(d.budget.wall, Some(Duration::from_secs(8 * 3600)));
        assert_eq!(d.budget.cost_usd, Some(15.0));
        assert_eq!(d.budget.tokens, Some(3_000_000));
        assert_eq!((d.pairs, d.calibration_pairs, d.alpha), (6, 12, 0.01));
        assert_eq!(d.prompt_budget, 30_000);
        assert_eq!(d.notes_dir, "vault/ooda");
        assert_eq!(d.output_cap, 65_536);
        assert_eq!(d.events_segment, 16 << 20);
        assert_eq!(d.keep_artifacts, Some(200));

        let mine = &cfg.agents["mine"];
        assert_eq!(mine.command, ["python3", "agent.py", "--fast"]);
        assert_eq!(mine.prompt, PromptMode::File);
        assert_eq!(mine.format, AgentFormat::CodexJsonl);
        assert_eq!(mine.timeout, Some(Duration::from_secs(1800)));
        assert_eq!(mine.env.get("MODE").map(String::as_str), Some("night"));
        assert_eq!(mine.env.get("EMPTY").map(String::as_str), Some(""));

        // A preset overridden in part keeps the rest of the preset.
        let claude = &cfg.agents["claude"];
        assert_eq!(claude.timeout, Some(Duration::from_secs(2700)));
        assert_eq!(claude.command, presets()["claude"].command);
        assert_eq!(claude.format, AgentFormat::ClaudeJson);
        assert!(cfg.agents.contains_key("codex"));

        let light = &cfg.models["light"];
        assert_eq!(light.provider, Provider::Openai);
        assert_eq!(light.base_url.as_deref(), Some("http://localhost:8080/v1"));
        assert_eq!(light.api_key_env.as_deref(), Some("LOCAL_KEY"));
        assert_eq!((light.price_in, light.price_out), (Some(0.15), Some(0.6)));
        assert_eq!(cfg.models["heavy"].provider, Provider::Anthropic);
        assert!(!cfg.models.contains_key("medium"));
    }

    #[test]
    fn unknown_keys_get_suggestions() {
        let p = only("defaults:\n  pair: 5\n");
        assert_eq!((p.line, p.key.as_deref()), (Some(2), Some("defaults.pair")));
        assert!(p.message.contains("did you mean `pairs`?"), "{}", p.message);

        let p = only("agent:\n  x: {command: [a]}\n");
        assert_eq!((p.line, p.key.as_deref()), (Some(1), Some("agent")));
        assert!(p.message.contains("did you mean `agents`?"));

        let p = only("models:\n  large: {provider: openai, model: m}\n");
        assert_eq!(p.key.as_deref(), Some("models.large"));
        assert!(
            p.message
                .contains("known keys here: `light`, `medium`, `heavy`"),
            "{}",
            p.message
        );

        let p = only("agents:\n  mine:\n    command: [a]\n    fromat: text\n");
        assert_eq!(
            (p.line, p.key.as_deref()),
            (Some(4), Some("agents.mine.fromat"))
        );
        assert!(p.message.contains("did you mean `format`?"));
    }

    #[test]
    fn every_problem_is_reported() {
        let text = "\
defaults:
  pairs: 1
  alpha: 0.7
  output_cap: lots
  budget: {iterations: -1}
agents:
  builtin: {command: [x]}
  mine: {prompt: pipe, format: json, timeout: soon, env: {1BAD: x}}
  other: {command: []}
models:
  light: {provider: azure, model: m, base_url: localhost, api_key_env: sk-123, price_in: -1}
  heavy: {model: m}
";
        let ps = problems(text);
        let keys: Vec<(Option<usize>, Option<&str>)> =
            ps.iter().map(|p| (p.line, p.key.as_deref())).collect();
        assert_eq!(
            keys,
            vec![
                (Some(2), Some("defaults.pairs")),
                (Some(3), Some("defaults.alpha")),
                (Some(4), Some("defaults.output_cap")),
                (Some(5), Some("defaults.budget.iterations")),
                (Some(7), Some("agents.builtin")),
                (Some(8), Some("agents.mine.command")),
                (Some(8), Some("agents.mine.prompt")),
                (Some(8), Some("agents.mine.format")),
                (Some(8), Some("agents.mine.timeout")),
                (Some(8), Some("agents.mine.env.1BAD")),
                (Some(9), Some("agents.other.command")),
                (Some(11), Some("models.light.provider")),
                (Some(11), Some("models.light.base_url")),
                (Some(11), Some("models.light.api_key_env")),
                (Some(11), Some("models.light.price_in")),
                (Some(12), Some("models.heavy.provider")),
            ],
            "{ps:#?}"
        );
        let shown = ps
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(shown.contains(
            "ooda.yaml:8: agents.mine.prompt: expected `stdin`, `arg`, `file`, found `pipe` (example: `prompt: stdin`)"
        ), "{shown}");
        assert!(shown.contains("found `json`"));
    }

    #[test]
    fn syntax_error_and_wrong_root() {
        let p = only("defaults:\n  pairs: [5\nagents: {}\n");
        assert_eq!(p.key, None);
        assert_eq!(p.line, Some(3));
        assert!(p.message.starts_with("not valid YAML"), "{}", p.message);

        let p = only("- defaults\n");
        assert_eq!(p.line, Some(1));
        assert!(p.message.contains("expected a mapping"));
        assert_eq!(p.file, PathBuf::from("ooda.yaml"));
    }

    #[test]
    fn duplicate_profiles_are_reported() {
        let p = only("agents:\n  a: {command: [x]}\n  a: {command: [y]}\n");
        assert_eq!((p.line, p.key.as_deref()), (Some(3), Some("agents.a")));
        assert!(p.message.contains("duplicate key"));
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("1MiB"), Some(1_048_576));
        assert_eq!(parse_bytes("1M"), Some(1_000_000));
        assert_eq!(parse_bytes("2048"), Some(2048));
        assert_eq!(parse_bytes("1.5MiB"), None);
    }

    #[test]
    fn enum_spellings_match_serde() {
        for f in AgentFormat::ALL {
            let json = serde_json::to_string(&f).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", f.as_str()));
        }
        for m in PromptMode::ALL {
            let json = serde_json::to_string(&m).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
        assert_eq!(
            serde_json::to_string(&Provider::Openai).unwrap_or_default(),
            "\"openai\""
        );
    }
}
