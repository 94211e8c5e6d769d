//! The command line: argument parsing, and one file per
//! command.
//!
//! Commands return an [`Exit`] or a library error; `main.rs` turns either
//! into the process's exit code (`exit.rs` owns the policy). Data goes to
//! stdout (plain or `--json`), progress and diagnostics to stderr, so
//! `ooda status --json | jq` works while a human still sees what a long tick
//! is doing.

mod ack;
mod check;
mod compare;
mod compress;
mod daemon;
mod export;
mod gc;
mod init;
mod mcp;
mod new;
mod output;
mod replay;
mod report;
mod reset;
mod run;
mod scaffold;
pub(crate) mod status;
mod submit;
mod tick;
mod trace;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::Result;
use crate::exit::Exit;

pub(crate) use output::out;
pub use output::printed;

#[derive(Debug, Parser)]
#[command(
    name = "ooda",
    version = concat!(
        env!("CARGO_PKG_VERSION"),
        " (",
        env!("OODA_COMMIT"),
        " ",
        env!("OODA_COMMIT_DATE"),
        ")"
    ),
    about = "Write a Brief before you leave; read summary.md in the morning."
)]
pub struct Cli {
    /// Project root (default: nearest ancestor with ooda.yaml, else the git root)
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        help_heading = "Global options"
    )]
    pub root: Option<PathBuf>,
    /// Print what the command prints as JSON (the logs of `run --every` and
    /// `daemon`: one JSON object a line on stderr)
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// Print only errors
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Global options"
    )]
    pub quiet: bool,
    /// Print more detail
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub verbose: bool,
    /// Colour: auto (when stdout is a terminal), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, help_heading = "Global options")]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scaffold ooda.yaml, briefs/, subagents/, templates/ and .gitignore lines
    /// (again in an existing project: adds only what is missing)
    #[command(after_help = "Examples:\n  ooda init\n  ooda init ../service")]
    Init {
        /// The repository to set up (default: the current directory)
        dir: Option<PathBuf>,
    },
    /// Create briefs/NAME.md from the Brief template
    #[command(after_help = "Examples:\n  ooda new latency\n  $EDITOR briefs/latency.md")]
    New {
        /// The Brief's name: lowercase letters, digits and `-` (it names the
        /// branch ooda/NAME and the folder iterations/NAME)
        name: String,
    },
    /// Validate a Brief and whether it can run; --measure N runs the metric N times at HEAD, --preflight makes one real PLAN call
    #[command(
        after_help = "Examples:\n  ooda check latency\n  ooda check latency --measure 5\n  ooda check latency --preflight"
    )]
    Check {
        /// The Brief: a name (`latency` for briefs/latency.md) or a path
        brief: String,
        /// Run setup and guards once, then the metric N times, in a scratch
        /// worktree at the committed HEAD; report the spread and θ₁
        #[arg(long, value_name = "N")]
        measure: Option<u32>,
        /// Run one real PLAN call with the Brief's agent (nothing archived):
        /// does it start, answer, and answer in a form ooda reads?
        #[arg(long)]
        preflight: bool,
    },
    /// Run exactly one iteration (or finish an interrupted one) and exit
    #[command(
        after_help = "Examples:\n  ooda tick latency\n  */20 * * * * cd ~/service && ooda tick latency -q   # crontab"
    )]
    Tick {
        /// The Brief: a name (`latency` for briefs/latency.md) or a path
        brief: String,
    },
    /// Run one tick of the Brief as a Slurm job on the cluster (with --every, one tick per
    /// interval until the run stops); the job holds the Brief's lock on the shared filesystem
    #[command(after_help = "Examples:\n  ooda submit latency\n  ooda submit latency --every 30m")]
    Submit {
        /// The Brief: a name (`latency` for briefs/latency.md) or a path
        brief: String,
        /// After each tick, queue the next one this much later (e.g. 20m, 1h)
        #[arg(long, value_name = "INTERVAL")]
        every: Option<String>,
        /// Set by the job itself: queue the next tick, unless the run stopped
        #[arg(long, hide = true)]
        chained: bool,
    },
    /// Run iterations back to back until a stop, or one per fire time with --every/--cron
    #[command(
        after_help = "Examples:\n  ooda run latency\n  ooda run briefs/quickstart.md\n  ooda run latency --every 20m"
    )]
    Run {
        /// The Brief: a name (`latency` for briefs/latency.md) or a path
        brief: String,
        /// Stop after N iterations in this invocation (the baseline not counted)
        #[arg(long, value_name = "N")]
        max_iterations: Option<u32>,
        /// One iteration per interval, the first at once (e.g. 20m, 1h30m)
        #[arg(long, value_name = "D", conflicts_with = "cron")]
        every: Option<String>,
        /// One iteration per fire time of a cron expression (local time, or TZ)
        #[arg(long, value_name = "E")]
        cron: Option<String>,
        /// Go on past a final stop you accept (stalled, the goal reached):
        /// the next iteration file records it, and the stall count and red
        /// lights start over after it (a red light needs `ooda ack`)
        #[arg(long = "continue")]
        go_on: bool,
    },
    /// Run every Brief in briefs/ on its own `schedule`, picking up new, edited and deleted Briefs
    #[command(
        after_help = "Examples:\n  ooda daemon\n  ooda daemon --briefs nightly/ --json 2>> ooda.log"
    )]
    Daemon {
        /// The folder of Briefs to watch (default: briefs/ of the project)
        #[arg(long, value_name = "DIR")]
        briefs: Option<PathBuf>,
    },
    /// Show each Brief's status (one line each; --json for scripts)
    #[command(
        after_help = "Examples:\n  ooda status\n  ooda status latency --tasks\n  ooda status --json"
    )]
    Status {
        /// Only this Brief (a name or a path); default: every Brief in briefs/
        brief: Option<String>,
        /// Each iteration and subagent delegation with its state (pending, planning,
        /// running, waiting_child, succeeded, failed, cancelled) and since when
        #[arg(long)]
        tasks: bool,
    },
    /// Acknowledge a red light so the loop may run again
    #[command(
        after_help = "Examples:\n  ooda ack latency --note \"the benchmark host was rebooted\""
    )]
    Ack {
        /// The Brief: a name or a path
        brief: String,
        /// Why it is fine to go on; written into the next iteration file
        #[arg(long)]
        note: Option<String>,
    },
    /// Print a Brief's summary.md (with --json: summary.json)
    #[command(
        after_help = "Examples:\n  ooda report latency\n  ooda report latency --json\n  ooda report latency --tsv"
    )]
    Report {
        /// The Brief: a name or a path
        brief: String,
        /// One tab-separated row per iteration (iteration, commit, verdict,
        /// effect, ci_low, ci_high, description), as autoresearch's
        /// results.tsv
        #[arg(long)]
        tsv: bool,
    },
    /// Draw the call tree of a Brief's run from events.jsonl (with ITER: one
    /// iteration down to each command, model request and tool call)
    #[command(
        after_help = "Examples:\n  ooda trace latency\n  ooda trace latency 7\n  ooda trace latency 7 --json"
    )]
    Trace {
        /// The Brief: a name or a path
        brief: String,
        /// The iteration to draw in full (0 is the baseline), or a replay of it
        /// (`7r`, `7r2`, or its folder name)
        iteration: Option<String>,
    },
    /// Run an iteration's PLAN again with today's prompts, agent and config, from its base
    /// commit, beside the run (with --full also EXECUTE and EVALUATE)
    #[command(after_help = "Examples:\n  ooda replay latency 7\n  ooda replay latency 7 --full")]
    Replay {
        /// The Brief: a name or a path
        brief: String,
        /// The iteration to replay (1 or later)
        iteration: u32,
        /// Also make the change and measure it against the base
        #[arg(long)]
        full: bool,
    },
    /// Two iterations, or an iteration and a replay, side by side: plans,
    /// verdicts and the two trees aligned
    #[command(after_help = "Examples:\n  ooda compare latency 7 7r\n  ooda compare latency 3 7")]
    Compare {
        /// The Brief: a name or a path
        brief: String,
        /// An iteration (`7`), its latest replay (`7r`), its k-th replay (`7r2`) or a replay folder
        a: String,
        /// The same forms
        b: String,
    },
    /// Write the run as OpenTelemetry spans to a file (OTLP/JSON lines), or
    /// send it to a collector (OTLP/HTTP) for Jaeger, Phoenix, Langfuse
    #[command(
        after_help = "Examples:\n  ooda export latency --otlp night.otlp.jsonl\n  ooda export latency --otlp-endpoint http://127.0.0.1:6006\n  ooda export latency --otlp-endpoint http://collector:4318 --iterations 12.. --gzip"
    )]
    Export {
        /// The Brief: a name or a path
        brief: String,
        /// The file to write (`-`: stdout), in the OTLP File Exporter format
        #[arg(long, value_name = "FILE", conflicts_with = "otlp_endpoint")]
        otlp: Option<PathBuf>,
        /// Send the spans to this collector over OTLP/HTTP (protobuf); /v1/traces
        /// is added unless the URL ends with it. Headers, protocol, compression
        /// and timeout come from the OTEL_EXPORTER_OTLP_* variables; without
        /// --otlp or this, OTEL_EXPORTER_OTLP_ENDPOINT alone names the
        /// collector. Sending again is safe: span ids come from the log
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
        /// Only these iterations: 3, 2..5 (both included), 4.., ..5 (the run's
        /// own span, with what it holds outside its iterations, is always sent)
        #[arg(long, value_name = "RANGE")]
        iterations: Option<String>,
        /// All spans in one line (one JSON document), for Jaeger's UI upload
        #[arg(long, conflicts_with = "otlp_endpoint")]
        one_line: bool,
        /// Gzip each request (as OTEL_EXPORTER_OTLP_COMPRESSION=gzip does)
        #[arg(long, conflicts_with = "otlp")]
        gzip: bool,
    },
    /// Start a Brief over: remove its worktrees and branch, move its archive aside
    #[command(
        after_help = "Examples:\n  ooda reset latency\n  ooda reset latency --yes --discard-archive"
    )]
    Reset {
        /// The Brief: a name or a path
        brief: String,
        /// Do not ask for confirmation (for scripts)
        #[arg(long)]
        yes: bool,
        /// Delete the iteration folder instead of moving it aside
        #[arg(long)]
        discard_archive: bool,
    },
    /// Run a command (or read stdin) and print its output compressed for a
    /// model: problems with their locations, summaries and identifiers kept,
    /// routine lines folded with counts; exits with the command's exit code
    #[command(
        after_help = "Examples:\n  ooda compress -- cargo test\n  ooda compress --budget 4000 --raw-to raw.log -- pytest -q\n  make 2>&1 | ooda compress --json"
    )]
    Compress {
        /// Shorten to at most N characters, keeping errors with their
        /// locations first, then failures' details, warnings, summaries
        #[arg(long, value_name = "N")]
        budget: Option<usize>,
        /// Also write the exact output, uncompressed, to FILE
        #[arg(long, value_name = "FILE")]
        raw_to: Option<PathBuf>,
        /// Answer an agent CLI's pre-tool hook (claude, gemini) on stdin
        /// instead (what `compress_commands: true` installs)
        #[arg(long, value_name = "TOOL", conflicts_with_all = ["budget", "raw_to", "command"])]
        hook: Option<String>,
        /// The command and its arguments (after `--`); none: read stdin
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Serve the code index's tools (explore, find_symbol, symbol, callers,
    /// callees, impact) to an agent CLI over MCP (stdio)
    #[command(
        after_help = "Examples:\n  ooda mcp --root .\n  claude mcp add ooda-index -- ooda mcp --root \"$PWD\""
    )]
    Mcp {
        /// The worktree to index (the current folder by default)
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Where the index is kept (`.ooda/index/` of the repository by default)
        #[arg(long, value_name = "DIR")]
        index_dir: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(
        after_help = "Examples:\n  source <(ooda completions bash)\n  ooda completions zsh > ~/.zfunc/_ooda\n  ooda completions fish > ~/.config/fish/completions/ooda.fish"
    )]
    Completions {
        /// The shell to complete in
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `ooda man | man -l -`
    #[command(
        after_help = "Examples:\n  ooda man | man -l -\n  ooda man > /usr/local/share/man/man1/ooda.1"
    )]
    Man,
    /// Free disk: worktree build outputs, artifacts of discarded iterations beyond
    /// `defaults.keep_artifacts`, older replays; says how much it freed
    #[command(after_help = "Examples:\n  ooda gc latency --dry-run\n  ooda gc latency")]
    Gc {
        /// The Brief: a name or a path
        brief: String,
        /// Say what would be freed, remove nothing
        #[arg(long)]
        dry_run: bool,
    },
}

/// Global options every command reads.
pub(crate) struct Globals {
    pub root: Option<PathBuf>,
    pub json: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// Whether stdout gets colour.
    pub color: bool,
}

pub fn run(cli: Cli) -> Result<Exit> {
    let g = Globals {
        root: cli.root,
        json: cli.json,
        quiet: cli.quiet,
        verbose: cli.verbose,
        color: match cli.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            // A terminal that says it is dumb gets no escape codes.
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none()
                    && std::env::var("TERM").map_or(true, |t| t != "dumb")
            }
        },
    };
    match cli.command {
        Command::Init { dir } => init::run(&g, dir),
        Command::New { name } => new::run(&g, &name),
        Command::Check {
            brief,
            measure,
            preflight,
        } => check::run(&g, &brief, measure, preflight),
        Command::Tick { brief } => tick::run(&g, &brief),
        Command::Submit {
            brief,
            every,
            chained,
        } => submit::run(&g, &brief, every, chained),
        Command::Run {
            brief,
            max_iterations,
            every,
            cron,
            go_on,
        } => run::run(&g, &brief, max_iterations, every, cron, go_on),
        Command::Daemon { briefs } => daemon::run(&g, briefs),
        Command::Status { brief, tasks } => match tasks {
            true => status::tasks(&g, brief.as_deref()),
            false => status::run(&g, brief.as_deref()),
        },
        Command::Ack { brief, note } => ack::run(&g, &brief, note.as_deref()),
        Command::Report { brief, tsv: true } if g.json => Err(crate::error::Error::Input(format!(
            "ooda report {brief}: --tsv and --json ask for two formats; pick one"
        ))),
        Command::Report { brief, tsv } => match tsv {
            true => report::tsv(&g, &brief),
            false => report::run(&g, &brief),
        },
        Command::Trace { brief, iteration } => trace::run(&g, &brief, iteration.as_deref()),
        Command::Replay {
            brief,
            iteration,
            full,
        } => replay::run(&g, &brief, iteration, full),
        Command::Compare { brief, a, b } => compare::run(&g, &brief, &a, &b),
        Command::Export {
            brief,
            otlp,
            otlp_endpoint,
            iterations,
            one_line,
            gzip,
        } => {
            let range = match iterations.as_deref() {
                Some(r) => export::Range::parse(r).map_err(crate::error::Error::Input)?,
                None => export::Range::default(),
            };
            let target = match &otlp {
                Some(path) => export::Target::File { path, one_line },
                None => export::Target::Collector {
                    url: otlp_endpoint.as_deref(),
                    gzip,
                },
            };
            export::run(&g, &brief, target, range)
        }
        Command::Reset {
            brief,
            yes,
            discard_archive,
        } => reset::run(&g, &brief, yes, discard_archive),
        Command::Gc { brief, dry_run } => gc::run(&g, &brief, dry_run),
        Command::Compress {
            budget,
            raw_to,
            hook,
            command,
        } => compress::run(&g, budget, raw_to.as_deref(), hook.as_deref(), &command),
        Command::Mcp { root, index_dir } => mcp::run(root.as_deref(), index_dir.as_deref()),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "ooda", &mut out);
            match g.json {
                true => json_text(
                    serde_json::json!({"shell": shell.to_string()}),
                    "script",
                    &out,
                ),
                false => print_bytes(&out),
            }
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).map_err(|e| {
                crate::error::Error::Internal(format!("cannot render the manual: {e}"))
            })?;
            match g.json {
                true => json_text(serde_json::json!({"format": "roff"}), "page", &out),
                false => print_bytes(&out),
            }
        }
    }
}

/// A generated text under `--json`: `doc` with the text under `key`.
fn json_text(mut doc: serde_json::Value, key: &str, text: &[u8]) -> Result<Exit> {
    doc[key] = String::from_utf8_lossy(text).into_owned().into();
    print_bytes(format!("{doc}\n").as_bytes())
}

/// Writes what a command generated to stdout (a closed pipe is not an
/// error: `ooda man | head`).
fn print_bytes(bytes: &[u8]) -> Result<Exit> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(Exit::Ok),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(crate::error::Error::BrokenPipe)
        }
        Err(e) => Err(crate::error::Error::io("writing to stdout".to_string(), e)),
    }
}
