//! Brief validation tests. Malformed Briefs assert the exact key and file line of each
//! problem, because "file:line: key" is what the user acts on.

use super::*;
use crate::config::Config;
use crate::validate::problem::Problem;

const DESIGN_EXAMPLE: &str = r#"---
metric:
  name: p95_ms                  # the metric to read
  command: ./bench.sh           # run once per measurement, in the worktree
  setup: cargo build --release  # optional: once per worktree per iteration, not timed
  parse: metric-line            # metric-line (default) | regex:<re with one group> | json:<pointer>
  direction: minimize           # minimize | maximize
  target: 1.5                   # optional: reaching it (confirmed) ends the run as done
  noise_floor: 1%               # optional practical minimum effect (delta_0), default 0
  timeout: 5m                   # per measurement run
guards:                         # must all exit 0 in the candidate before it is measured
  - cargo test --quiet
scope:
  allow: ["src/**"]             # the agent may change only these paths
  protect: ["bench.sh", "tests/**"]  # never changed: the evaluator stays read-only
knobs:                          # optional parameters (the builtin driver searches these)
  TILE: { int: [8, 512], log: true }
  ALGO: { choice: [naive, blocked] }
agent: claude                   # a profile from ooda.yaml; `builtin` searches knobs without AI
budget: { iterations: 40, wall: 8h, cost_usd: 15, tokens: 3M }
schedule: "*/20 * * * *"        # optional: used by `ooda daemon`
---
# Goal
What to optimize, and why.
# Success
How to tell it worked.
# Must not break
What must stay true.
# Context
Optional: hints, files to look at, ideas already ruled out.
"#;

const MINIMAL_FRONT: &str =
    "metric: {name: t, command: ./b.sh, direction: minimize}\nagent: claude\n";
const SECTIONS_TEXT: &str = "# Goal\nG\n# Success\nS\n# Must not break\nM\n";

fn path() -> &'static Path {
    Path::new("briefs/x.md")
}

/// A Brief with the given front matter (which starts on file line 2) and valid sections.
fn with_front(front: &str) -> String {
    format!("---\n{front}---\n{SECTIONS_TEXT}")
}

fn problems(text: &str) -> Vec<Problem> {
    match Brief::parse(path(), text) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    }
}

/// The single problem `text` has; fails (showing all of them) otherwise.
fn only(text: &str) -> Problem {
    let mut ps = problems(text);
    assert_eq!(ps.len(), 1, "expected exactly one problem, got {ps:#?}");
    ps.remove(0)
}

fn assert_problem(p: &Problem, line: Option<usize>, key: Option<&str>, fragment: &str) {
    assert_eq!(p.line, line, "line of {p}");
    assert_eq!(p.key.as_deref(), key, "key of {p}");
    assert!(
        p.to_string().contains(fragment),
        "`{fragment}` not in `{p}`"
    );
    assert_eq!(p.file, PathBuf::from("briefs/x.md"));
}

fn ok(text: &str) -> Brief {
    match Brief::parse(path(), text) {
        Ok(b) => b,
        Err(e) => panic!("expected a valid Brief, got:\n{e}"),
    }
}

// ---- valid Briefs ----

#[test]
fn design_example_parses() {
    let b = ok(DESIGN_EXAMPLE);
    assert_eq!(b.name, "x");
    assert_eq!(b.metric.name, "p95_ms");
    assert_eq!(b.metric.command, "./bench.sh");
    assert_eq!(b.metric.setup.as_deref(), Some("cargo build --release"));
    assert!(matches!(b.metric.parse, Parse::MetricLine));
    assert_eq!(b.metric.direction, Direction::Minimize);
    assert_eq!(b.metric.target, Some(1.5));
    assert_eq!(b.metric.noise_floor, 0.01);
    assert_eq!(b.metric.timeout, Duration::from_secs(300));
    assert_eq!(b.guards, ["cargo test --quiet"]);
    assert_eq!(b.scope.allow, ["src/**"]);
    assert_eq!(b.scope.protect, ["bench.sh", "tests/**"]);
    assert_eq!(b.knobs.len(), 2);
    assert_eq!(b.knobs[0].name, "TILE");
    assert_eq!(
        b.knobs[0].spec,
        KnobSpec::Int {
            lo: 8,
            hi: 512,
            log: true
        }
    );
    assert_eq!(b.knobs[1].name, "ALGO");
    assert_eq!(
        b.knobs[1].spec,
        KnobSpec::Choice(vec!["naive".into(), "blocked".into()])
    );
    assert_eq!(b.knobs_file, "ooda.knobs.env");
    assert_eq!(b.agent.as_deref(), Some("claude"));
    assert!(!b.uses_builtin());
    assert_eq!(
        b.budget,
        Budget {
            iterations: Some(40),
            wall: Some(Duration::from_secs(8 * 3600)),
            cost_usd: Some(15.0),
            tokens: Some(3_000_000),
        }
    );
    assert_eq!(b.schedule.as_deref(), Some("*/20 * * * *"));
    assert_eq!(b.seed, None);
    assert_eq!(b.goal, "What to optimize, and why.");
    assert_eq!(b.success, "How to tell it worked.");
    assert_eq!(b.must_not_break, "What must stay true.");
    assert_eq!(
        b.context.as_deref(),
        Some("Optional: hints, files to look at, ideas already ruled out.")
    );
}

#[test]
fn every_field_round_trips() {
    let text = r#"---
metric:
  name: throughput
  command: python3 bench.py --json
  setup: make
  parse: json:/results/throughput
  direction: maximize
  target: 1200
  noise_floor: 0.02
  timeout: 1h30m
guards: ["make test", "./lint.sh"]
scope:
  allow: [src/, "include/*.h"]
  protect: [bench.py]
knobs:
  BATCH: {int: [1, 64], log: true, default: 16}
  RATE: {float: [0.001, 0.5], log: true, default: 0.01}
  MODE: {choice: [fast, safe, 3], default: safe}
  WIDTH: {float: [0, 1]}
knobs_file: config/knobs.env
agent: builtin
budget:
  iterations: 100
  wall: 2d
  cost_usd: 0
  tokens: 250k
schedule: "@hourly"
seed: 42
---
# goal
Make it **fast**.

## Details
Sub-headings stay inside their section.

```sh
# Success (a comment in a code block, not a section)
```
# SUCCESS
Higher throughput.
# Must Not Break
The tests.

# Context

See `src/hot.rs`.
"#;
    let b = ok(text);
    let m = &b.metric;
    assert_eq!(m.name, "throughput");
    assert_eq!(m.command, "python3 bench.py --json");
    assert_eq!(m.setup.as_deref(), Some("make"));
    assert!(matches!(&m.parse, Parse::Json(p) if p == "/results/throughput"));
    assert_eq!(m.parse.to_string(), "json:/results/throughput");
    assert_eq!(m.direction, Direction::Maximize);
    assert_eq!(m.target, Some(1200.0));
    assert_eq!(m.noise_floor, 0.02);
    assert_eq!(m.timeout, Duration::from_secs(5400));
    assert_eq!(b.guards, ["make test", "./lint.sh"]);
    assert_eq!(b.scope.allow, ["src/", "include/*.h"]);
    assert_eq!(b.scope.protect, ["bench.py"]);
    let names: Vec<&str> = b.knobs.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["BATCH", "RATE", "MODE", "WIDTH"]);
    assert_eq!(b.knobs[0].default, Some(KnobValue::Int(16)));
    assert_eq!(
        b.knobs[1].spec,
        KnobSpec::Float {
            lo: 0.001,
            hi: 0.5,
            log: true
        }
    );
    assert_eq!(b.knobs[1].default, Some(KnobValue::Float(0.01)));
    assert_eq!(
        b.knobs[2].spec,
        KnobSpec::Choice(vec!["fast".into(), "safe".into(), "3".into()])
    );
    assert_eq!(b.knobs[2].default, Some(KnobValue::Str("safe".into())));
    assert_eq!(
        b.knobs[3].spec,
        KnobSpec::Float {
            lo: 0.0,
            hi: 1.0,
            log: false
        }
    );
    assert_eq!(b.knobs[3].default, None);
    assert_eq!(b.knobs_file, "config/knobs.env");
    assert!(b.uses_builtin());
    assert_eq!(b.budget.iterations, Some(100));
    assert_eq!(b.budget.wall, Some(Duration::from_secs(2 * 86400)));
    assert_eq!(b.budget.cost_usd, Some(0.0));
    assert_eq!(b.budget.tokens, Some(250_000));
    assert_eq!(b.schedule.as_deref(), Some("@hourly"));
    assert_eq!(b.seed, Some(42));
    assert!(b.goal.starts_with("Make it **fast**."));
    assert!(b.goal.contains("## Details"));
    assert!(b.goal.ends_with("```"), "{}", b.goal);
    assert_eq!(b.success, "Higher throughput.");
    assert_eq!(b.must_not_break, "The tests.");
    assert_eq!(b.context.as_deref(), Some("See `src/hot.rs`."));
}

#[test]
fn regex_parse_and_defaults() {
    let b = ok(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize, parse: 'regex:time=(\\d+\\.\\d+)'}\nknobs: {N: {int: [1, 4]}}\n",
    ));
    match &b.metric.parse {
        Parse::Regex(re) => {
            let caps = re.captures("time=12.5 ms").map(|c| c[1].to_string());
            assert_eq!(caps.as_deref(), Some("12.5"));
        }
        other => panic!("expected a regex, got {other:?}"),
    }
    assert_eq!(b.metric.parse.to_string(), "regex:time=(\\d+\\.\\d+)");
    assert_eq!(b.metric.timeout, DEFAULT_TIMEOUT);
    assert_eq!(b.metric.noise_floor, 0.0);
    assert_eq!(b.agent, None);
    assert!(b.uses_builtin());
    assert!(b.guards.is_empty());
    assert!(b.scope.allows("anything/at/all.rs"));
    assert_eq!(b.budget, Budget::default());
    assert_eq!(b.context, None);
}

#[test]
fn scope_matching() {
    let b = ok(&with_front(&format!(
        "{MINIMAL_FRONT}scope: {{allow: [\"src/**\", \"*.toml\", docs/], protect: [tests, \"src/gen/*.rs\"]}}\n"
    )));
    let s = &b.scope;
    assert!(s.allows("src/a/b.rs"));
    assert!(s.allows("./src/main.rs"));
    assert!(s.allows("Cargo.toml"));
    assert!(!s.allows("sub/Cargo.toml"), "`*` does not cross `/`");
    assert!(
        s.allows("docs/guide/intro.md"),
        "a folder covers its contents"
    );
    assert!(!s.allows("bench.sh"));
    assert!(s.protects("tests/it.rs"));
    assert!(s.protects("tests"));
    assert!(s.protects("src/gen/x.rs"));
    assert!(!s.protects("src/gen/deep/x.rs"));
    assert!(!s.protects("src/main.rs"));
    assert!(Scope::new(vec!["[".into()], vec![]).is_err());
}

#[test]
fn effective_budget_falls_back_to_config() {
    let b = ok(&with_front(&format!(
        "{MINIMAL_FRONT}budget: {{iterations: 5}}\n"
    )));
    let mut cfg = Config::default();
    cfg.defaults.budget = Budget {
        iterations: Some(100),
        wall: Some(Duration::from_secs(3600)),
        cost_usd: None,
        tokens: Some(10),
    };
    let eff = cfg.budget_for(&b);
    assert_eq!(eff.iterations, Some(5));
    assert_eq!(eff.wall, Some(Duration::from_secs(3600)));
    assert_eq!(eff.cost_usd, None);
    assert_eq!(eff.tokens, Some(10));
    // 0 lifts a default limit instead of allowing nothing.
    let lifted = ok(&with_front(&format!(
        "{MINIMAL_FRONT}budget: {{tokens: 0, cost_usd: 0}}\n"
    )));
    cfg.defaults.budget.cost_usd = Some(5.0);
    let eff = cfg.budget_for(&lifted);
    assert_eq!(eff.tokens, None);
    assert_eq!(eff.cost_usd, None);
}

#[test]
fn crlf_bom_and_null_optionals_are_fine() {
    let text = with_front(&format!("{MINIMAL_FRONT}guards: ~\nschedule:\n")).replace('\n', "\r\n");
    let b = ok(&format!("\u{feff}{text}"));
    assert_eq!(b.goal, "G");
    assert!(b.guards.is_empty());
    assert_eq!(b.schedule, None);
}

#[test]
fn html_comment_before_first_section_is_allowed() {
    let text = format!("---\n{MINIMAL_FRONT}---\n<!-- written by ooda new -->\n\n{SECTIONS_TEXT}");
    ok(&text);
}

#[test]
fn load_reads_the_file_and_reports_io_errors() {
    let dir = std::env::temp_dir().join(format!("ooda-brief-test-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("quickstart.md");
    let _ = std::fs::write(&file, with_front(MINIMAL_FRONT));
    let b = Brief::load(&file);
    assert_eq!(b.as_ref().map(|b| b.name.as_str()).ok(), Some("quickstart"));
    assert_eq!(b.map(|b| b.path).ok(), Some(file.clone()));

    let missing = dir.join("missing.md");
    let err = Brief::load(&missing)
        .err()
        .map(|e| e.problems)
        .unwrap_or_default();
    assert_eq!(err.len(), 1);
    assert_eq!(err[0].file, missing);
    assert_eq!(err[0].line, None);
    assert!(err[0].message.contains("cannot read"), "{}", err[0].message);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- malformed Briefs: one problem each ----

#[test]
fn unknown_top_level_key_suggests() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}gaurds: [make test]\n"
    )));
    assert_problem(
        &p,
        Some(4),
        Some("gaurds"),
        "unknown key `gaurds`; did you mean `guards`?",
    );
}

#[test]
fn unknown_nested_key_suggests_and_missing_key_is_reported_too() {
    let ps = problems(&with_front(
        "metric:\n  nmae: t\n  command: ./b.sh\n  direction: minimize\nagent: claude\n",
    ));
    assert_eq!(ps.len(), 2, "{ps:#?}");
    assert_problem(
        &ps[0],
        Some(2),
        Some("metric.name"),
        "missing required key `name`",
    );
    assert_problem(&ps[1], Some(3), Some("metric.nmae"), "did you mean `name`?");
}

#[test]
fn unknown_key_without_a_close_match_lists_known_keys() {
    let p = only(&with_front(&format!("{MINIMAL_FRONT}color: blue\n")));
    assert_problem(
        &p,
        Some(4),
        Some("color"),
        "known keys here: `metric`, `guards`",
    );
}

#[test]
fn missing_section() {
    let text = format!("---\n{MINIMAL_FRONT}---\n# Goal\nG\n# Success\nS\n");
    let p = only(&text);
    assert_problem(
        &p,
        None,
        None,
        "missing required section `# Must not break`",
    );
    assert_eq!(p.example.as_deref(), Some("# Must not break"));
}

#[test]
fn empty_section() {
    let text = format!("---\n{MINIMAL_FRONT}---\n# Goal\n\n# Success\nS\n# Must not break\nM\n");
    let p = only(&text);
    assert_problem(&p, Some(5), None, "section `# Goal` is empty");
}

#[test]
fn unknown_section_suggests() {
    let text = format!("---\n{MINIMAL_FRONT}---\n{SECTIONS_TEXT}# Contxt\nmore\n");
    let p = only(&text);
    assert_problem(&p, Some(11), None, "unknown section `# Contxt`");
    assert!(p.message.contains("did you mean `# Context`?"));
}

#[test]
fn duplicate_section() {
    let text = format!("---\n{MINIMAL_FRONT}---\n{SECTIONS_TEXT}# goal\nagain\n");
    let p = only(&text);
    assert_problem(
        &p,
        Some(11),
        None,
        "section `# Goal` appears twice (first on line 5)",
    );
}

#[test]
fn missing_metric_command() {
    let p = only(&with_front(
        "agent: claude\nmetric:\n  name: t\n  direction: minimize\n",
    ));
    assert_problem(
        &p,
        Some(3),
        Some("metric.command"),
        "missing required key `command`",
    );
    assert_eq!(p.example.as_deref(), Some("command: ./bench.sh"));
}

#[test]
fn missing_metric() {
    let p = only(&with_front("agent: claude\n"));
    assert_problem(&p, Some(1), Some("metric"), "missing required key `metric`");
}

#[test]
fn metric_without_value() {
    let p = only(&with_front("metric:\nagent: claude\n"));
    assert_problem(&p, Some(2), Some("metric"), "found nothing");
}

#[test]
fn bad_direction_display() {
    let p = only(&with_front(
        "agent: claude\nmetric:\n  name: t\n  command: ./b.sh\n  direction: fastest\n",
    ));
    assert_eq!(
        p.to_string(),
        "briefs/x.md:6: metric.direction: expected `minimize` or `maximize`, found `fastest` (example: `direction: minimize`)"
    );
    assert_eq!(p.expected.as_deref(), Some("`minimize` or `maximize`"));
}

#[test]
fn bad_duration() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize, timeout: 5 minutes}\nagent: claude\n",
    ));
    assert_problem(
        &p,
        Some(2),
        Some("metric.timeout"),
        "expected a duration like `90s`, `5m` or `1h30m`, found `5 minutes`",
    );
}

#[test]
fn bad_percent() {
    let p = only(&with_front(
        "agent: claude\nmetric:\n  name: t\n  command: ./b.sh\n  direction: minimize\n  noise_floor: a little\n",
    ));
    assert_problem(
        &p,
        Some(7),
        Some("metric.noise_floor"),
        "expected a percentage like `1%`",
    );
}

#[test]
fn bare_percent_number_is_a_fraction() {
    let p = only(&with_front(
        "agent: claude\nmetric:\n  name: t\n  command: ./b.sh\n  direction: minimize\n  noise_floor: 2\n",
    ));
    assert_problem(
        &p,
        Some(7),
        Some("metric.noise_floor"),
        "write the percent sign",
    );
    assert_eq!(p.example.as_deref(), Some("noise_floor: 2%"));
}

#[test]
fn bad_regex() {
    let p = only(&with_front(
        "agent: claude\nmetric: {name: t, command: ./b.sh, direction: minimize, parse: 'regex:p95=(\\d+'}\n",
    ));
    assert_problem(&p, Some(3), Some("metric.parse"), "does not compile");
}

#[test]
fn regex_without_exactly_one_group() {
    let none = only(&with_front(
        "agent: claude\nmetric: {name: t, command: ./b.sh, direction: minimize, parse: 'regex:p95=\\d+'}\n",
    ));
    assert_problem(
        &none,
        Some(3),
        Some("metric.parse"),
        "exactly one capture group (around the number), found 0",
    );
    let two = only(&with_front(
        "agent: claude\nmetric: {name: t, command: ./b.sh, direction: minimize, parse: 'regex:(p\\d+)=(\\d+)'}\n",
    ));
    assert_problem(&two, Some(3), Some("metric.parse"), "found 2");
}

#[test]
fn json_pointer_needs_slash() {
    let p = only(&with_front(
        "agent: claude\nmetric: {name: t, command: ./b.sh, direction: minimize, parse: json:results.p95}\n",
    ));
    assert_problem(
        &p,
        Some(3),
        Some("metric.parse"),
        "expected a JSON pointer starting with `/`, found `results.p95`",
    );
}

#[test]
fn unknown_parse_mode_suggests() {
    let p = only(&with_front(
        "agent: claude\nmetric: {name: t, command: ./b.sh, direction: minimize, parse: metricline}\n",
    ));
    assert_problem(
        &p,
        Some(3),
        Some("metric.parse"),
        "did you mean `metric-line`?",
    );
}

#[test]
fn bad_glob_names_the_item() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}scope:\n  allow:\n    - src/**\n    - \"src/[ab\"\n"
    )));
    assert_problem(
        &p,
        Some(7),
        Some("scope.allow[1]"),
        "`src/[ab` is not a valid glob",
    );
}

#[test]
fn absolute_glob_is_refused() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}scope: {{protect: [/etc/passwd]}}\n"
    )));
    assert_problem(
        &p,
        Some(4),
        Some("scope.protect[0]"),
        "drop the leading `/`",
    );
}

#[test]
fn knob_lo_not_below_hi() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  TILE: {int: [512, 8]}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.TILE.int"),
        "expected `[lo, hi]` with lo < hi, found `[512, 8]`",
    );
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  R: {float: [0.5, 0.5]}\n",
    ));
    assert_problem(&p, Some(4), Some("knobs.R.float"), "lo < hi");
}

#[test]
fn knob_range_of_wrong_shape() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  TILE: {int: [8, 16, 32]}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.TILE.int"),
        "expected `[lo, hi]`, two integers, found a list",
    );
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  TILE: {int: 8}\n",
    ));
    assert_problem(&p, Some(4), Some("knobs.TILE.int"), "found `8`");
}

#[test]
fn log_knob_needs_positive_lo() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  TILE:\n    int: [0, 512]\n    log: true\n",
    ));
    assert_problem(
        &p,
        Some(6),
        Some("knobs.TILE.log"),
        "a log-scale knob needs lo > 0, found lo = 0",
    );
}

#[test]
fn knob_default_out_of_range() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  TILE: {int: [8, 512], default: 1024}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.TILE.default"),
        "expected an integer in [8, 512], found `1024`",
    );
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  ALGO: {choice: [a, b], default: c}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.ALGO.default"),
        "expected one of `a`, `b`, found `c`",
    );
}

#[test]
fn empty_choice() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  ALGO: {choice: []}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.ALGO.choice"),
        "expected at least one value, found an empty list",
    );
}

#[test]
fn duplicate_choice() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  ALGO:\n    choice:\n      - a\n      - b\n      - a\n",
    ));
    assert_problem(
        &p,
        Some(8),
        Some("knobs.ALGO.choice[2]"),
        "duplicate value `a`",
    );
}

#[test]
fn log_on_choice_knob() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  ALGO: {choice: [a], log: true}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.ALGO.log"),
        "`log` applies only to `int` and `float` knobs",
    );
}

#[test]
fn knob_with_two_types_or_none() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  X:\n    int: [1, 2]\n    choice: [a]\n",
    ));
    assert_problem(
        &p,
        Some(6),
        Some("knobs.X.choice"),
        "both `int` and `choice`",
    );
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  X: {default: 3}\n",
    ));
    assert_problem(&p, Some(4), Some("knobs.X"), "missing the knob's type");
}

#[test]
fn unknown_knob_key_suggests() {
    let front = "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n";
    let p = only(&with_front(&format!(
        "{front}  X: {{int: [1, 2], defualt: 1}}\n"
    )));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.X.defualt"),
        "did you mean `default`?",
    );
    // A misspelt type also leaves the knob without a type; both are said.
    let ps = problems(&with_front(&format!("{front}  X: {{integer: [1, 2]}}\n")));
    assert_eq!(ps.len(), 2, "{ps:#?}");
    assert_problem(
        &ps[0],
        Some(4),
        Some("knobs.X.integer"),
        "did you mean `int`?",
    );
    assert_problem(&ps[1], Some(4), Some("knobs.X"), "missing the knob's type");
}

#[test]
fn bad_knob_name() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  tile-size: {int: [1, 2]}\n",
    ));
    assert_problem(
        &p,
        Some(4),
        Some("knobs.tile-size"),
        "cannot be an environment variable name",
    );
    assert_eq!(p.example.as_deref(), Some("TILE_SIZE: {int: [8, 512]}"));
}

#[test]
fn reserved_knob_name() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs:\n  OODA_PHASE: {int: [1, 2]}\n",
    ));
    assert_problem(&p, Some(4), Some("knobs.OODA_PHASE"), "is reserved");
}

#[test]
fn knobs_file_inside_knobs_gets_a_hint() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}knobs:\n  file: my.env\n"
    )));
    assert_problem(
        &p,
        Some(5),
        Some("knobs.file"),
        "top-level key `knobs_file`",
    );
}

#[test]
fn knobs_file_must_stay_inside() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}knobs_file: ../outside.env\n"
    )));
    assert_problem(
        &p,
        Some(4),
        Some("knobs_file"),
        "expected a relative path of a file inside the repository",
    );
    // Never where a write of ooda's would be a hook or a Brief.
    for bad in [
        ".git/hooks/pre-commit",
        "vendor/lib/.git/knobs.env",
        "briefs/x.env",
        "ooda.yaml",
        "templates/plan.md",
    ] {
        let p = only(&with_front(&format!("{MINIMAL_FRONT}knobs_file: {bad}\n")));
        assert_problem(&p, Some(4), Some("knobs_file"), "in no `.git` folder");
    }
}

#[test]
fn metric_env_names_only_oodas_variables() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize, env: [HOME]}\nagent: claude\n",
    ));
    assert_problem(
        &p,
        Some(2),
        Some("metric.env"),
        "not one of ooda's variables",
    );
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize, env: [OODA_SID]}\nagent: claude\n",
    ));
    assert_problem(&p, Some(2), Some("metric.env"), "did you mean OODA_SIDE?");
}

#[test]
fn guards_not_a_list() {
    let p = only(&with_front(&format!("{MINIMAL_FRONT}guards: cargo test\n")));
    assert_problem(
        &p,
        Some(4),
        Some("guards"),
        "expected a list of shell commands, found `cargo test`",
    );
    assert_eq!(
        p.example.as_deref(),
        Some("guards: [\"cargo test --quiet\"]")
    );
}

#[test]
fn guard_item_of_wrong_type() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}guards:\n  - make test\n  - {{run: x}}\n"
    )));
    assert_problem(&p, Some(6), Some("guards[1]"), "found a mapping");
}

#[test]
fn no_agent_and_no_knobs() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\n",
    ));
    assert_problem(&p, Some(1), Some("agent"), "needs an agent or knobs");
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nknobs: {}\n",
    ));
    assert_problem(&p, Some(1), Some("agent"), "needs an agent or knobs");
}

#[test]
fn builtin_agent_without_knobs() {
    let p = only(&with_front(
        "metric: {name: t, command: ./b.sh, direction: minimize}\nagent: builtin\n",
    ));
    assert_problem(
        &p,
        Some(3),
        Some("knobs"),
        "`agent: builtin` only searches knobs",
    );
}

#[test]
fn no_front_matter() {
    let p = only(SECTIONS_TEXT);
    assert_problem(&p, Some(1), None, "no front matter");
    assert!(p.example.is_some());
}

#[test]
fn front_matter_not_on_line_one() {
    let p = only(&format!("\n\n---\n{MINIMAL_FRONT}---\n{SECTIONS_TEXT}"));
    assert_problem(
        &p,
        Some(1),
        None,
        "must start on line 1, but it starts on line 3",
    );
}

#[test]
fn front_matter_never_closed() {
    let p = only(&format!("---\n{MINIMAL_FRONT}\n{SECTIONS_TEXT}"));
    assert_problem(&p, Some(1), None, "never closed");
}

#[test]
fn blank_line_after_opening_fence() {
    let p = only(&format!("---\n\n{MINIMAL_FRONT}---\n{SECTIONS_TEXT}"));
    assert_problem(&p, Some(1), None, "must not be blank");
}

#[test]
fn yaml_syntax_error_has_file_line() {
    let p = only(&with_front(
        "agent: claude\nmetric:\n  name: t\n  command: ./b.sh\n  parse: regex: (\\d+)\n  direction: minimize\n",
    ));
    assert_problem(
        &p,
        Some(6),
        None,
        "not valid YAML: mapping values are not allowed",
    );
    assert!(p.message.ends_with("must be quoted"), "{}", p.message);
}

#[test]
fn wrong_type_for_budget_iterations() {
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}budget:\n  iterations: forty\n"
    )));
    assert_problem(
        &p,
        Some(5),
        Some("budget.iterations"),
        "expected a positive integer, found `forty`",
    );
    let p = only(&with_front(&format!(
        "{MINIMAL_FRONT}budget: {{iterations: 0}}\n"
    )));
    assert_problem(&p, Some(4), Some("budget.iterations"), "found `0`");
}

#[test]
fn bad_budget_tokens_and_cost() {
    let ps = problems(&with_front(&format!(
        "{MINIMAL_FRONT}budget: {{tokens: lots, cost_usd: -3, wall: 0s}}\n"
    )));
    let keys: Vec<Option<&str>> = ps.iter().map(|p| p.key.as_deref()).collect();
    assert_eq!(
        keys,
        [
            Some("budget.wall"),
            Some("budget.cost_usd"),
            Some("budget.tokens")
        ],
        "{ps:#?}"
    );
}

#[test]
fn bad_file_name() {
    let err = Brief::parse(Path::new("briefs/My Brief.md"), &with_front(MINIMAL_FRONT));
    let ps = err.err().map(|e| e.problems).unwrap_or_default();
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!((ps[0].line, ps[0].key.as_deref()), (None, None));
    assert!(ps[0].message.contains("`My Brief`"), "{}", ps[0].message);
    assert_eq!(ps[0].example.as_deref(), Some("my-brief.md"));
    assert!(ps[0].to_string().starts_with("briefs/My Brief.md: "));
    assert!(Brief::parse(Path::new("briefs/-x.md"), &with_front(MINIMAL_FRONT)).is_err());
    assert!(Brief::parse(Path::new("briefs/p95_ms-2.md"), &with_front(MINIMAL_FRONT)).is_ok());
}

#[test]
fn duplicate_key() {
    let p = only(&with_front(&format!("{MINIMAL_FRONT}agent: codex\n")));
    assert_problem(
        &p,
        Some(4),
        Some("agent"),
        "duplicate key `agent` (first given on line 3)",
    );
}

#[test]
fn negative_seed() {
    let p = only(&with_front(&format!("{MINIMAL_FRONT}seed: -1\n")));
    assert_problem(
        &p,
        Some(4),
        Some("seed"),
        "expected a non-negative integer, found `-1`",
    );
}

#[test]
fn metric_name_with_spaces() {
    let p = only(&with_front(
        "agent: claude\nmetric: {name: p95 ms, command: ./b.sh, direction: minimize}\n",
    ));
    assert_problem(&p, Some(3), Some("metric.name"), "without spaces");
}

#[test]
fn text_before_first_section() {
    let p = only(&format!(
        "---\n{MINIMAL_FRONT}---\nA stray title line\n\n{SECTIONS_TEXT}"
    ));
    assert_problem(&p, Some(5), None, "text before the first section");
}

#[test]
fn front_matter_that_is_not_a_mapping() {
    let p = only(&with_front("- metric\n- agent\n"));
    assert_problem(
        &p,
        Some(2),
        None,
        "expected a mapping of keys, found a list",
    );
}

// ---- many problems at once ----

#[test]
fn several_problems_reported_together_in_line_order() {
    let text = "\
---
metric:
  name: t
  direction: fastest
  timeout: soon
  noise_floor: 1%
guards: make test
scope:
  allow: [\"src/[\"]
knobs:
  TILE: {int: [9, 3]}
  bad-name: {choice: []}
budget: {iterations: many, wall: 8h}
shedule: hourly
---
# Goal
Go.
# Success
";
    let err = match Brief::parse(Path::new("briefs/Bad.md"), text) {
        Err(e) => e,
        Ok(_) => panic!("should fail"),
    };
    let got: Vec<(Option<usize>, Option<&str>)> = err
        .problems
        .iter()
        .map(|p| (p.line, p.key.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (None, None),                      // file name
            (None, None),                      // missing `# Must not break`
            (Some(2), Some("metric.command")), // missing, at the `metric:` line
            (Some(4), Some("metric.direction")),
            (Some(5), Some("metric.timeout")),
            (Some(7), Some("guards")),
            (Some(9), Some("scope.allow[0]")),
            (Some(11), Some("knobs.TILE.int")),
            (Some(12), Some("knobs.bad-name")),
            (Some(12), Some("knobs.bad-name.choice")),
            (Some(13), Some("budget.iterations")),
            (Some(14), Some("shedule")),
            (Some(18), None), // empty `# Success`
        ],
        "{err}"
    );
    let shown = err.to_string();
    assert_eq!(shown.lines().count(), err.problems.len());
    assert!(
        shown
            .contains("briefs/Bad.md:14: shedule: unknown key `shedule`; did you mean `schedule`?"),
        "{shown}"
    );
}

// ---- robustness ----

#[test]
fn never_panics_on_any_prefix_or_mangling() {
    let texts = [DESIGN_EXAMPLE.to_string(), with_front(MINIMAL_FRONT)];
    for text in &texts {
        for (i, _) in text.char_indices() {
            let _ = Brief::parse(path(), &text[..i]);
            let _ = Brief::parse(path(), &text[i..]);
        }
        let mangled: String = text
            .chars()
            .map(|c| if c == ':' { '\t' } else { c })
            .collect();
        let _ = Brief::parse(path(), &mangled);
    }
    for weird in [
        "",
        "---",
        "---\n",
        "---\n---\n",
        "---\n...\n",
        "---\n: :\n---\n",
        "---\n[\n---\n",
        "---\n&a [*a]\n---\n",
        "---\n? {a: b}\n: c\n---\n",
        "---\nmetric: !!binary aGVsbG8=\n---\n",
        "---\nknobs: {X: {int: [-9223372036854775808, 9223372036854775807], default: 99999999999999999999}}\n---\n",
        "---\nknobs: {X: {float: [1e308, 1e309]}}\n---\n",
        "---\nbudget: {wall: 999999999999999999999d, tokens: 1e30T}\n---\n",
        "\u{feff}",
        "#\n#\n#",
        "---\nmetric: {name: \"\u{0}\"}\n---\n# Goal\n\u{0}",
    ] {
        let _ = Brief::parse(path(), weird);
        let _ = Config::parse(Path::new("ooda.yaml"), weird);
    }
}

#[test]
fn problem_display_without_line_or_key() {
    let p = Problem {
        file: PathBuf::from("briefs/x.md"),
        line: None,
        key: None,
        message: "m".into(),
        expected: None,
        example: None,
    };
    assert_eq!(p.to_string(), "briefs/x.md: m");
}

#[test]
fn analyze_is_a_command_or_a_command_with_its_timeout() {
    let min = "metric: {name: t, command: ./b.sh, direction: minimize}\nagent: claude\n";
    let b = ok(&with_front(&format!("{min}analyze: perf stat ./b.sh\n")));
    let a = b.analyze.unwrap();
    assert_eq!(
        (a.command.as_str(), a.timeout),
        ("perf stat ./b.sh", Duration::from_secs(300))
    );
    let b = ok(&with_front(&format!(
        "{min}analyze: {{command: ./p.sh, timeout: 1m}}\n"
    )));
    assert_eq!(b.analyze.unwrap().timeout, Duration::from_secs(60));
    let p = only(&with_front(&format!("{min}analyze: {{timeout: 1m}}\n")));
    assert_problem(
        &p,
        Some(4),
        Some("analyze.command"),
        "missing required key `command`",
    );
    let p = only(&with_front(&format!(
        "{min}analyze: {{command: ./p.sh, timeout: soon}}\n"
    )));
    assert_problem(&p, Some(4), Some("analyze.timeout"), "expected a duration");
}

#[test]
fn the_llm_driver_takes_a_model_and_an_allow_list() {
    let min = "metric: {name: t, command: ./b.sh, direction: minimize}\nagent: llm\n";
    let b = ok(&with_front(&format!(
        "{min}model: light\ntools: {{allow: [\"cargo build\", ./profile.sh]}}\n"
    )));
    assert_eq!(b.agent.as_deref(), Some("llm"));
    assert_eq!(b.model.as_deref(), Some("light"));
    assert_eq!(b.tools_allow, ["cargo build", "./profile.sh"]);
    let p = only(&with_front(&format!("{min}tools: {{deny: [x]}}\n")));
    assert_eq!(p.key.as_deref(), Some("tools.deny"));
    let p = only(&with_front(&format!("{min}tools: {{allow: [\"\"]}}\n")));
    assert_eq!(p.key.as_deref(), Some("tools.allow[0]"));
}

#[test]
fn executor_and_slurm_are_read_and_checked() {
    let metric = MINIMAL_FRONT;
    let b = ok(&with_front(&format!(
        "{metric}executor: slurm\nslurm: {{partition: gpu, gres: \"gpu:1\"}}\n"
    )));
    assert_eq!(b.executor, Some(crate::model::Placement::Slurm));
    assert_eq!(b.slurm.partition.as_deref(), Some("gpu"));
    assert_eq!(ok(&with_front(metric)).executor, None);
    let p = only(&with_front(&format!("{metric}executor: gpu\n")));
    assert_problem(&p, Some(4), Some("executor"), "`slurm`");
    let p = only(&with_front(&format!("{metric}slurm: {{time: 0s}}\n")));
    assert_problem(&p, Some(4), Some("slurm.time"), "duration");
}
