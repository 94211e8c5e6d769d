//! Reading what an agent CLI printed: its final text, its token
//! usage and cost, the error it reported, and the `ooda` result block.
//!
//! Each supported tool prints a different shape in headless mode (samples in
//! `tests/fixtures/agent-outputs/`), so the format is named by the profile
//! rather than sniffed: a script that happens to print JSON must not be
//! mistaken for Claude. Parsing is total: every input, including output cut off
//! mid-line by a timeout or an output cap, gives a [`Parsed`] whose `problem`
//! says what was wrong. Nothing here can fail the runner; a bad answer is data
//! about the iteration, not an error of ooda.
//!
//! The result itself is JSON that the agent either writes to
//! `OODA_OUTPUT_FILE` or puts in the last fenced code block tagged `ooda` of
//! its final text. The last block wins because agents often quote the
//! requested shape (with placeholders) before giving their real answer.

use serde_json::Value;

use crate::config::AgentFormat;

pub(crate) use crate::model::Usage;

/// What an agent's stdout says, per its format.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    /// The agent's final message, where the format has one.
    pub text: Option<String>,
    pub usage: Usage,
    /// The model that answered, when the format names it.
    pub model: Option<String>,
    /// An error the tool reported, or why its output could not be read.
    pub problem: Option<String>,
    /// `problem` is an error the tool itself reported (claude `is_error`,
    /// codex `turn.failed`, gemini `error`), not merely unreadable output.
    pub error_reported: bool,
    /// The tool could not reach its model (HTTP 429/5xx/529, or an API
    /// timeout, after its own retries): what it said. An outage is worth
    /// waiting out; it says nothing about the agent or the change.
    pub unavailable: Option<String>,
    /// What the tool reported without failing (a permission it was denied,
    /// a degraded model), for the record of the call.
    pub warnings: Vec<String>,
}

/// An HTTP status that means "the service is not there right now".
fn outage_status(code: u64) -> bool {
    code == 408 || code == 429 || (500..=599).contains(&code)
}

/// The HTTP status an error message names (`529`, `status 503`, `429 Too
/// Many Requests`), if it names one that means an outage.
fn outage_in(message: &str) -> Option<u64> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(?:\b|status |error: )(408|429|5\d\d)\b")
            .expect("static regex is valid")
    });
    let code = RE
        .captures(message)
        .and_then(|c| c[1].parse().ok())
        .filter(|c| outage_status(*c));
    let lower = message.to_lowercase();
    code.or_else(|| {
        [
            "overloaded",
            "rate limit",
            "service unavailable",
            "timed out",
            "timeout",
        ]
        .iter()
        .any(|w| lower.contains(w))
        .then_some(0)
    })
}

/// `agent unavailable: HTTP 529 (…what the tool said…)`.
fn unavailable_label(code: u64, tool: &str, said: &str) -> String {
    let status = if code > 0 {
        format!("HTTP {code}")
    } else {
        "the API did not answer".to_string()
    };
    format!("{status} ({tool}: {})", first_line(said))
}

/// How long the tool kept trying before it gave up, when it says so: the
/// difference between a blip and an outage for whoever reads the reason.
fn after(label: String, tried: Option<String>) -> String {
    match tried {
        Some(t) => match label.split_once(" (") {
            Some((status, rest)) => format!("{status} {t} ({rest}"),
            None => format!("{label} {t}"),
        },
        None => label,
    }
}

/// Parses `stdout` as `format` prints it.
pub(crate) fn parse(format: AgentFormat, stdout: &str) -> Parsed {
    let mut p = match format {
        AgentFormat::ClaudeJson => claude_json(stdout),
        AgentFormat::ClaudeStreamJson => claude_stream(stdout),
        AgentFormat::CodexJsonl => codex(stdout),
        AgentFormat::GeminiJson => gemini(stdout),
        AgentFormat::Aider => aider(stdout),
        AgentFormat::Text => text(stdout),
    };
    p.problem = p.problem.map(|t| crate::text::compress::strip_ansi(&t));
    p.unavailable = p.unavailable.map(|t| crate::text::compress::strip_ansi(&t));
    p.warnings = p
        .warnings
        .iter()
        .map(|t| crate::text::compress::strip_ansi(t))
        .collect();
    p
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The JSON objects in `stdout`, one per line; lines that do not parse (a
/// banner, a warning, a line cut off by a timeout) are counted, not fatal.
fn json_lines(stdout: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => out.push(v),
            _ => bad += 1,
        }
    }
    (out, bad)
}

/// One JSON object for the whole output. Tools sometimes print warning
/// lines before it (Gemini CLI: "Warning: 256-color support not detected",
/// then the object over many lines), so when the whole text does not parse,
/// the object that starts on a line of its own and runs to the end is
/// taken, and failing that the last line that parses.
fn whole_json(stdout: &str) -> Result<Value, String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Err("the agent printed nothing".into());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("the agent's output is JSON but not an object".into()),
        Err(e) => {
            let mut offset = 0;
            for line in stdout.split_inclusive('\n') {
                if line.starts_with('{')
                    && let Ok(v) = serde_json::from_str::<Value>(stdout[offset..].trim())
                    && v.is_object()
                {
                    return Ok(v);
                }
                offset += line.len();
            }
            json_lines(stdout).0.pop().ok_or_else(|| {
                format!("the agent's output is not valid JSON ({e}); was it cut off?")
            })
        }
    }
}

/// Tokens from `modelUsage` (every model the call used, side requests such
/// as the session title on a small model included, as `total_cost_usd`
/// counts them), else from the top-level `usage` (main turns only).
fn claude_usage(v: &Value) -> Usage {
    let cost = v.get("total_cost_usd").and_then(Value::as_f64);
    if let Some(models) = v.get("modelUsage").and_then(Value::as_object)
        && !models.is_empty()
    {
        let mut usage = Usage {
            cost_usd: cost,
            ..Usage::default()
        };
        for m in models.values() {
            usage.input += u(m, "inputTokens")
                + u(m, "cacheReadInputTokens")
                + u(m, "cacheCreationInputTokens");
            usage.cached += u(m, "cacheReadInputTokens");
            usage.cache_write += u(m, "cacheCreationInputTokens");
            usage.output += u(m, "outputTokens");
        }
        return usage;
    }
    let usage = v.get("usage").cloned().unwrap_or(Value::Null);
    Usage {
        input: u(&usage, "input_tokens")
            + u(&usage, "cache_creation_input_tokens")
            + u(&usage, "cache_read_input_tokens"),
        cached: u(&usage, "cache_read_input_tokens"),
        output: u(&usage, "output_tokens"),
        cache_write: u(&usage, "cache_creation_input_tokens"),
        reasoning: 0,
        cost_usd: cost,
    }
}

/// The model that did the work: the one with the most output tokens (the
/// keys are alphabetical, and a small model titles the session).
fn claude_model(v: &Value) -> Option<String> {
    v.get("modelUsage")
        .and_then(Value::as_object)?
        .iter()
        .max_by_key(|(_, m)| u(m, "outputTokens"))
        .map(|(name, _)| name.clone())
}

/// Tool uses Claude's permission mode refused, as one warning.
fn claude_denials(v: &Value) -> Option<String> {
    let denials = v.get("permission_denials").and_then(Value::as_array)?;
    if denials.is_empty() {
        return None;
    }
    let names: Vec<String> = denials
        .iter()
        .map(|d| {
            let tool = d
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("a tool");
            match d
                .pointer("/tool_input/file_path")
                .or_else(|| d.pointer("/tool_input/command"))
                .and_then(Value::as_str)
            {
                Some(arg) => format!("{tool}({})", first_line(arg)),
                None => tool.to_string(),
            }
        })
        .collect();
    Some(format!(
        "claude was denied {} tool use(s): {}",
        names.len(),
        names.join(", ")
    ))
}

/// `{"type":"result", "result": ..., "is_error": ..., "usage": ..., "total_cost_usd": ...}`.
fn claude_result(v: &Value) -> Parsed {
    let mut p = Parsed {
        text: s(v, "result"),
        usage: claude_usage(v),
        model: claude_model(v),
        warnings: claude_denials(v).into_iter().collect(),
        ..Parsed::default()
    };
    let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let subtype = s(v, "subtype").unwrap_or_default();
    if is_error || subtype.starts_with("error") {
        p.error_reported = true;
        let said = p.text.clone().unwrap_or_default();
        let status = v.get("api_error_status").and_then(Value::as_u64);
        p.problem = Some(match status {
            Some(code) => format!("claude: API error {code}: {}", first_line(&said)),
            None => format!(
                "claude reported an error ({}){}",
                if subtype.is_empty() {
                    "is_error"
                } else {
                    &subtype
                },
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {}", first_line(&said))
                }
            ),
        });
        let outage = match status {
            Some(code) => outage_status(code).then_some(code),
            None => outage_in(&said).filter(|_| said.starts_with("API Error")),
        };
        if let Some(code) = outage {
            // Claude retries on its own; its duration is the time it spent.
            let tried = v
                .get("duration_ms")
                .and_then(Value::as_f64)
                .filter(|ms| *ms >= 1_000.0)
                .map(|ms| format!("after {:.0}s of retries", ms / 1_000.0));
            p.unavailable = Some(after(unavailable_label(code, "claude", &said), tried));
        }
        // A call that failed and used nothing reported no cost either.
        if p.usage.total() == 0 && p.usage.cost_usd == Some(0.0) {
            p.usage.cost_usd = None;
        }
    } else if p.text.is_none() {
        p.problem = Some("claude's result has no `result` text".into());
    }
    p
}

fn claude_json(stdout: &str) -> Parsed {
    match whole_json(stdout) {
        Ok(v) => claude_result(&v),
        Err(problem) => Parsed {
            problem: Some(problem),
            ..Parsed::default()
        },
    }
}

fn claude_stream(stdout: &str) -> Parsed {
    let (lines, _) = json_lines(stdout);
    let model = lines
        .iter()
        .find(|v| v.get("type").and_then(Value::as_str) == Some("system"))
        .and_then(|v| s(v, "model"));
    match lines
        .iter()
        .rev()
        .find(|v| v.get("type").and_then(Value::as_str) == Some("result"))
    {
        Some(v) => {
            let mut p = claude_result(v);
            p.model = p.model.or(model);
            p
        }
        None => {
            // Cut off before the result line: the last assistant text is the
            // best there is, but the call did not finish.
            let text = lines
                .iter()
                .rev()
                .filter(|v| v.get("type").and_then(Value::as_str) == Some("assistant"))
                .find_map(|v| {
                    let parts = v.pointer("/message/content")?.as_array()?;
                    let t: Vec<&str> = parts
                        .iter()
                        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|c| c.get("text").and_then(Value::as_str))
                        .collect();
                    (!t.is_empty()).then(|| t.join("\n"))
                });
            Parsed {
                text,
                model,
                problem: Some(if lines.is_empty() {
                    "the agent printed no stream-json events".into()
                } else {
                    "the stream ended without a `result` event (cut off?)".into()
                }),
                ..Parsed::default()
            }
        }
    }
}

/// `codex exec --json`. An `error` event is fatal only if no completed turn
/// follows it: codex prints "Reconnecting... n/5" errors while it retries a
/// stream and then goes on; `turn.failed` is always fatal.
fn codex(stdout: &str) -> Parsed {
    let (lines, _) = json_lines(stdout);
    let mut p = Parsed::default();
    let mut failed: Option<String> = None;
    let mut pending: Option<String> = None;
    for v in &lines {
        match v.get("type").and_then(Value::as_str) {
            Some("item.completed") => match v.pointer("/item/type").and_then(Value::as_str) {
                Some("agent_message") => {
                    if let Some(t) = v.pointer("/item/text").and_then(Value::as_str) {
                        p.text = Some(t.to_string());
                    }
                }
                Some("error") => {
                    if let Some(m) = v.pointer("/item/message").and_then(Value::as_str) {
                        p.warnings.push(format!("codex: {}", first_line(m)));
                    }
                }
                _ => {}
            },
            Some("turn.completed") => {
                let usage = v.get("usage").cloned().unwrap_or(Value::Null);
                // `output_tokens` already counts the reasoning tokens; cache
                // writes are reported beside `input_tokens`.
                p.usage.add(&Usage {
                    input: u(&usage, "input_tokens") + u(&usage, "cache_write_input_tokens"),
                    cached: u(&usage, "cached_input_tokens"),
                    output: u(&usage, "output_tokens"),
                    cache_write: u(&usage, "cache_write_input_tokens"),
                    reasoning: u(&usage, "reasoning_output_tokens"),
                    cost_usd: None,
                });
                pending = None;
            }
            Some("turn.failed") => {
                failed = Some(
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("turn failed")
                        .to_string(),
                )
            }
            Some("error") => pending = Some(s(v, "message").unwrap_or_else(|| "error".into())),
            _ => {}
        }
    }
    if let Some(e) = failed.or(pending) {
        p.error_reported = true;
        p.problem = Some(format!("codex reported an error: {}", first_line(&e)));
        if let Some(code) = outage_in(&e) {
            p.unavailable = Some(unavailable_label(code, "codex", &e));
        }
    } else if lines.is_empty() {
        p.problem = Some("the agent printed no codex JSON events".into());
    } else if p.text.is_none() {
        p.problem = Some("codex printed no `agent_message`".into());
    }
    p
}

fn gemini(stdout: &str) -> Parsed {
    let v = match whole_json(stdout) {
        Ok(v) => v,
        Err(problem) => {
            return Parsed {
                problem: Some(problem),
                ..Parsed::default()
            };
        }
    };
    let mut p = Parsed {
        text: s(&v, "response"),
        ..Parsed::default()
    };
    if let Some(models) = v.pointer("/stats/models").and_then(Value::as_object) {
        for (name, m) in models {
            let t = m.get("tokens").cloned().unwrap_or(Value::Null);
            let input = u(&t, "prompt");
            let parts = u(&t, "candidates") + u(&t, "thoughts") + u(&t, "tool");
            // `total` is authoritative when present: it is what the tool bills.
            let output = match t.get("total").and_then(Value::as_u64) {
                Some(total) if total >= input => total - input,
                _ => parts,
            };
            p.usage.add(&Usage {
                input,
                cached: u(&t, "cached"),
                output,
                cache_write: 0,
                reasoning: u(&t, "thoughts"),
                cost_usd: None,
            });
            p.model.get_or_insert_with(|| name.clone());
        }
    }
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let msg = s(err, "message").unwrap_or_else(|| err.to_string());
        p.error_reported = true;
        p.problem = Some(format!("gemini reported an error: {}", first_line(&msg)));
        let outage = err
            .get("code")
            .and_then(Value::as_u64)
            .filter(|c| outage_status(*c))
            .or_else(|| outage_in(&msg));
        if let Some(code) = outage {
            p.unavailable = Some(unavailable_label(code, "gemini", &msg));
        }
    } else if p.text.is_none() {
        p.problem = Some("gemini's output has no `response`".into());
    }
    p
}

fn text(stdout: &str) -> Parsed {
    let t = stdout.trim();
    Parsed {
        text: (!t.is_empty()).then(|| stdout.to_string()),
        usage: aider_usage(stdout),
        problem: t.is_empty().then(|| "the agent printed nothing".into()),
        ..Parsed::default()
    }
}

/// aider's stdout: plain text with `Tokens: …` lines. When its model
/// endpoint fails, aider prints `litellm.…Error` lines and its own retries,
/// and after the last one exits 0 having done nothing: an error with no
/// exchange after it is an outage.
fn aider(stdout: &str) -> Parsed {
    let mut p = text(stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // aider exits 0 after these, so they are the only sign its edit was lost.
    let nonconforming = lines
        .iter()
        .filter(|l| l.contains("did not conform to the edit format"))
        .count();
    if nonconforming > 0 {
        p.warnings.push(format!(
            "aider: the model's reply did not conform to the edit format ({nonconforming} time(s)); its edits may be lost"
        ));
    }
    if let Some(l) = lines
        .iter()
        .find(|l| l.starts_with("Only ") && l.contains("reflections allowed"))
    {
        p.warnings.push(format!("aider: {}", l.trim()));
    }
    let last_error = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("litellm.") && l.contains("Error"));
    if let Some(i) = last_error
        && !lines[i..].iter().any(|l| l.contains("Tokens: "))
    {
        let said = lines[i].trim();
        let code = lines[i + 1..]
            .iter()
            .take(2)
            .find_map(|l| l.trim().parse::<u64>().ok())
            .filter(|c| outage_status(*c))
            .or_else(|| outage_in(said))
            .or_else(|| litellm_status(said))
            .unwrap_or(0);
        p.error_reported = true;
        p.problem = Some(format!("aider: {}", first_line(said)));
        let retries = lines
            .iter()
            .filter(|l| l.starts_with("Retrying in "))
            .count();
        let tried = (retries > 0).then(|| format!("after {retries} retries"));
        p.unavailable = Some(after(unavailable_label(code, "aider", said), tried));
    }
    p
}

/// The HTTP status a litellm exception class stands for (aider prints the
/// class, and the status only when the provider put it in its message).
fn litellm_status(line: &str) -> Option<u64> {
    let kind = line.trim().strip_prefix("litellm.")?.split(':').next()?;
    match kind {
        "RateLimitError" => Some(429),
        "InternalServerError" => Some(500),
        "BadGatewayError" => Some(502),
        "ServiceUnavailableError" => Some(503),
        "Timeout" => Some(408),
        _ => None,
    }
}

/// aider prints `Tokens: 12k sent, 1.1k received. Cost: $0.05 message, $0.09 session.`
/// after each exchange; summing the per-message figures gives the call's usage.
fn aider_usage(stdout: &str) -> Usage {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"Tokens: ([0-9.]+)(k?) sent(?:, ([0-9.]+)(k?) cache \w+)*, ([0-9.]+)(k?) received\.(?: Cost: \$([0-9.]+) message)?",
        )
        .expect("static regex is valid")
    });
    let num = |n: Option<regex::Match>, k: Option<regex::Match>| -> u64 {
        let v: f64 = n.and_then(|m| m.as_str().parse().ok()).unwrap_or(0.0);
        let mult = if k.is_some_and(|k| k.as_str() == "k") {
            1000.0
        } else {
            1.0
        };
        (v * mult).round() as u64
    };
    let mut usage = Usage::default();
    for c in RE.captures_iter(stdout) {
        usage.add(&Usage {
            input: num(c.get(1), c.get(2)),
            cached: 0,
            output: num(c.get(5), c.get(6)),
            cost_usd: c.get(7).and_then(|m| m.as_str().parse().ok()),
            ..Usage::default()
        });
    }
    usage
}

fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > 300 {
        format!("{}…", line.chars().take(300).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::agent::reply::result_json;

    const CLAUDE: &str = include_str!("../../../tests/fixtures/agent-outputs/claude-json.json");
    const STREAM: &str =
        include_str!("../../../tests/fixtures/agent-outputs/claude-stream-json.jsonl");
    const CODEX: &str = include_str!("../../../tests/fixtures/agent-outputs/codex-exec.jsonl");
    const GEMINI: &str = include_str!("../../../tests/fixtures/agent-outputs/gemini-json.json");

    fn plan_of(p: &Parsed) -> Value {
        result_json(None, p.text.as_deref(), "").unwrap().0
    }

    #[test]
    fn claude_json_fixture() {
        let p = parse(AgentFormat::ClaudeJson, CLAUDE);
        assert_eq!(p.problem, None);
        assert_eq!(
            p.usage,
            Usage {
                input: 18 + 9312 + 61840,
                cached: 61840,
                output: 2117,
                cache_write: 9312,
                reasoning: 0,
                cost_usd: Some(0.21837),
            }
        );
        assert_eq!(p.usage.total(), 73287);
        assert_eq!(p.model.as_deref(), Some("claude-sonnet-4-5"));
        let v = plan_of(&p);
        assert_eq!(v["cites"], serde_json::json!([3, 5]));
        assert_eq!(v["predicted_effect"], 0.04);
    }

    #[test]
    fn claude_stream_fixture_reads_the_result_line() {
        let p = parse(AgentFormat::ClaudeStreamJson, STREAM);
        assert_eq!(p.problem, None);
        assert_eq!(p.usage.total(), 10 + 9312 + 9312 + 137);
        assert_eq!(p.usage.cost_usd, Some(0.04121));
        assert_eq!(p.model.as_deref(), Some("claude-sonnet-4-5"));
        let v = plan_of(&p);
        assert_eq!(v["patterns"][0]["name"], "presize-hot-tables");
        // Cut off before the result line: the text is kept, the call is a problem.
        let cut: String = STREAM.lines().take(4).collect::<Vec<_>>().join("\n");
        let p = parse(AgentFormat::ClaudeStreamJson, &cut);
        assert!(p.problem.unwrap().contains("without a `result`"));
        assert!(p.text.unwrap().contains("presize-hot-tables"));
    }

    #[test]
    fn codex_fixture_takes_the_last_agent_message_and_sums_turns() {
        let p = parse(AgentFormat::CodexJsonl, CODEX);
        assert_eq!(p.problem, None);
        assert_eq!(p.usage.input, 24611);
        assert_eq!(p.usage.cached, 19456);
        assert_eq!(p.usage.output, 1532);
        assert_eq!(p.usage.cost_usd, None);
        assert_eq!(plan_of(&p)["cites"], serde_json::json!([3]));
        // Two turns are summed; a later failure is reported.
        let two = format!(
            "{CODEX}\n{}\n{}",
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10}}"#,
            r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#
        );
        let p = parse(AgentFormat::CodexJsonl, &two);
        assert_eq!(p.usage.total(), 24611 + 1532 + 110);
        assert!(p.problem.unwrap().contains("stream disconnected"));
    }

    #[test]
    fn gemini_fixture() {
        let p = parse(AgentFormat::GeminiJson, GEMINI);
        assert_eq!(p.problem, None);
        assert_eq!(p.usage.input, 30211);
        assert_eq!(p.usage.cached, 12288);
        assert_eq!(p.usage.total(), 33519);
        assert_eq!(p.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(plan_of(&p)["predicted_effect"], 0.03);
    }

    #[test]
    fn error_shapes_are_problems_not_panics() {
        let claude = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"total_cost_usd":0.5,"usage":{"input_tokens":5,"output_tokens":7}}"#;
        let p = parse(AgentFormat::ClaudeJson, claude);
        assert!(p.problem.unwrap().contains("error_max_turns"));
        assert_eq!(p.usage.total(), 12);
        assert_eq!(p.usage.cost_usd, Some(0.5));

        let gemini = r#"{"error":{"type":"ApiError","message":"quota exceeded","code":429}}"#;
        let p = parse(AgentFormat::GeminiJson, gemini);
        assert!(p.problem.unwrap().contains("quota exceeded"));

        let codex = r#"{"type":"turn.failed","error":{"message":"401 Unauthorized"}}"#;
        assert!(
            parse(AgentFormat::CodexJsonl, codex)
                .problem
                .unwrap()
                .contains("401")
        );

        // Cut off mid-line, empty, garbage.
        for f in [
            AgentFormat::ClaudeJson,
            AgentFormat::ClaudeStreamJson,
            AgentFormat::CodexJsonl,
            AgentFormat::GeminiJson,
            AgentFormat::Text,
        ] {
            for out in [&CLAUDE[..200], "", "\u{0}\u{1}garbage{{{", "[1,2]"] {
                let p = parse(f, out);
                assert!(
                    p.problem.is_some() || f == AgentFormat::Text,
                    "{f:?} {out:?}"
                );
            }
        }
        // A warning line before the JSON object is tolerated.
        let p = parse(
            AgentFormat::ClaudeJson,
            &format!("Warning: update\n{CLAUDE}"),
        );
        assert_eq!(p.problem, None);
    }

    /// Output captured from the real tools (tests/fixtures/agent-outputs/real-cli/).
    fn real(name: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/agent-outputs/real-cli")
                .join(name),
        )
        .unwrap()
    }

    #[test]
    fn claude_counts_every_model_and_names_the_one_that_worked() {
        let p = parse(AgentFormat::ClaudeJson, &real("claude-2.1.197-plan.json"));
        assert_eq!(p.problem, None);
        // modelUsage (2003 + 600 + 400 in, 103 out) counts the side request
        // that `usage` (1002 + 300 + 200, 52) leaves out, as the cost does.
        assert_eq!(
            p.usage,
            Usage {
                input: 2003 + 600 + 400,
                cached: 600,
                output: 103,
                cache_write: 400,
                reasoning: 0,
                cost_usd: Some(0.015390000000000001),
            }
        );
        assert_eq!(p.model.as_deref(), Some("claude-opus-4-8[1m]"));
        let two = r#"{"type":"result","is_error":false,"result":"x","modelUsage":{"claude-a-small":{"inputTokens":900,"outputTokens":12},"claude-b-big":{"inputTokens":100,"outputTokens":400}},"permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"/x/out.json"}}]}"#;
        let p = parse(AgentFormat::ClaudeJson, two);
        assert_eq!(p.model.as_deref(), Some("claude-b-big"));
        assert_eq!(p.usage.total(), 900 + 12 + 100 + 400);
        assert_eq!(
            p.warnings,
            ["claude was denied 1 tool use(s): Write(/x/out.json)"]
        );
    }

    #[test]
    fn claude_overloaded_is_an_outage_with_no_cost() {
        let p = parse(
            AgentFormat::ClaudeJson,
            &real("claude-2.1.197-overloaded-529.json"),
        );
        assert!(p.error_reported);
        assert_eq!(
            p.problem.as_deref(),
            Some(
                "claude: API error 529: API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:8765)."
            )
        );
        assert!(
            p.unavailable
                .unwrap()
                .starts_with("HTTP 529 after 179s of retries (claude: API Error: 529 Overloaded")
        );
        assert_eq!(
            p.usage.cost_usd, None,
            "nothing was spent, and nothing reported"
        );
        let denied = parse(
            AgentFormat::ClaudeJson,
            &real("claude-2.1.197-execute.json"),
        );
        assert_eq!(denied.unavailable, None);
        assert!(denied.warnings.is_empty());
    }

    #[test]
    fn codex_goes_on_after_reconnecting_and_counts_output_once() {
        let p = parse(
            AgentFormat::CodexJsonl,
            &real("codex-0.171.0-reconnect-then-success.jsonl"),
        );
        assert_eq!(p.problem, None, "the turn completed after the reconnects");
        assert!(!p.error_reported);
        assert_eq!(p.unavailable, None);
        assert_eq!(
            p.usage,
            Usage {
                input: 4030,
                cached: 1000,
                output: 190,
                cache_write: 0,
                reasoning: 20,
                cost_usd: None
            }
        );
        assert_eq!(
            plan_of(&p)["change"].as_str().map(|c| &c[..11]),
            Some("Incremented")
        );
        assert!(
            p.warnings[0].starts_with("codex: Model metadata"),
            "{:?}",
            p.warnings
        );
        // The same reconnects with no completed turn after them: an outage.
        let cut: String = real("codex-0.171.0-reconnect-then-success.jsonl")
            .lines()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n");
        let p = parse(AgentFormat::CodexJsonl, &cut);
        assert!(p.error_reported);
        assert!(
            p.unavailable
                .unwrap()
                .starts_with("HTTP 529 (codex: Reconnecting...")
        );
        let plan = parse(AgentFormat::CodexJsonl, &real("codex-0.171.0-plan.jsonl"));
        assert_eq!((plan.usage.input, plan.usage.output), (2025, 105));
    }

    #[test]
    fn gemini_after_its_warning_lines() {
        let p = parse(AgentFormat::GeminiJson, &real("gemini-0.61.0-execute.json"));
        assert_eq!(p.problem, None);
        assert_eq!(p.usage.input, 9012);
        assert_eq!(p.usage.total(), 9204);
        assert_eq!(p.usage.cached, 300);
        assert_eq!(p.model.as_deref(), Some("gemini-2.5-pro"));
        let busy =
            r#"{"error":{"type":"ApiError","message":"Resource has been exhausted","code":429}}"#;
        assert!(
            parse(AgentFormat::GeminiJson, busy)
                .unavailable
                .unwrap()
                .starts_with("HTTP 429")
        );
    }

    #[test]
    fn aider_usage_and_outage() {
        let p = parse(AgentFormat::Aider, &real("aider-0.86.2-plan.txt"));
        assert_eq!(p.problem, None);
        assert_eq!((p.usage.input, p.usage.output), (3200, 98));
        assert_eq!(p.usage.cost_usd, Some(0.00054));
        assert_eq!(plan_of(&p)["predicted_effect"], 0.3);
        let down = parse(
            AgentFormat::Aider,
            &real("aider-0.86.2-plan.persistent-500.stdout.txt"),
        );
        assert!(down.error_reported);
        assert_eq!(
            down.problem.as_deref(),
            Some(
                "aider: litellm.InternalServerError: InternalServerError: OpenAIException - mock fault"
            )
        );
        assert!(
            down.unavailable
                .unwrap()
                .starts_with("HTTP 500 after 8 retries (aider: litellm.InternalServerError")
        );
        assert!(down.warnings.is_empty(), "{:?}", down.warnings);
        // Without a status line, the exception class names it.
        let no_status =
            real("aider-0.86.2-plan.persistent-500.stdout.txt").replace("\n500\n", "\n");
        let down = parse(AgentFormat::Aider, &no_status);
        assert!(
            down.unavailable
                .as_deref()
                .unwrap()
                .starts_with("HTTP 500 after 8 retries (aider: litellm.InternalServerError"),
            "{:?}",
            down.unavailable
        );
        let rate = parse(
            AgentFormat::Aider,
            "litellm.RateLimitError: RateLimitError: OpenAIException - slow down\n",
        );
        assert!(rate.unavailable.unwrap().starts_with("HTTP 429"));
        // The "whole" edit format: aider exits 0, the call carries why.
        let dropped = parse(
            AgentFormat::Aider,
            &real("aider-0.86.2-execute.whole-format-failed.stdout.txt"),
        );
        assert!(
            dropped.warnings[0].contains("did not conform to the edit format"),
            "{:?}",
            dropped.warnings
        );
        let reflected = parse(
            AgentFormat::Aider,
            &real("aider-0.86.2-plan.whole-format-reflections.stdout.txt"),
        );
        assert_eq!(
            reflected.warnings,
            [
                "aider: the model's reply did not conform to the edit format (4 time(s)); its edits may be lost",
                "aider: Only 3 reflections allowed, stopping."
            ]
        );
        assert_eq!(plan_of(&reflected)["predicted_effect"], 0.3);
        // A plain script that happens to print such a line is just text.
        let text = parse(
            AgentFormat::Text,
            &real("aider-0.86.2-plan.persistent-500.stdout.txt"),
        );
        assert_eq!(text.unavailable, None);
    }

    #[test]
    fn aider_token_lines() {
        let out = "Applied edit to src/a.rs\nTokens: 12k sent, 1.1k received. Cost: $0.05 message, $0.09 session.\nTokens: 2,000 sent\nTokens: 300 sent, 20 received.\n";
        let u = parse(AgentFormat::Text, out).usage;
        assert_eq!((u.input, u.output), (12_300, 1_120));
        assert_eq!(u.cost_usd, Some(0.05));
    }
}
