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

pub use crate::model::Usage;

/// What an agent's stdout says, per its format.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
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
}

/// Parses `stdout` as `format` prints it.
pub fn parse(format: AgentFormat, stdout: &str) -> Parsed {
    match format {
        AgentFormat::ClaudeJson => claude_json(stdout),
        AgentFormat::ClaudeStreamJson => claude_stream(stdout),
        AgentFormat::CodexJsonl => codex(stdout),
        AgentFormat::GeminiJson => gemini(stdout),
        AgentFormat::Text => text(stdout),
    }
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

/// One JSON object for the whole output. Tools sometimes print a warning
/// line before it, so when the whole text does not parse the last line that
/// does is taken.
fn whole_json(stdout: &str) -> Result<Value, String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Err("the agent printed nothing".into());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("the agent's output is JSON but not an object".into()),
        Err(e) => json_lines(stdout)
            .0
            .pop()
            .ok_or_else(|| format!("the agent's output is not valid JSON ({e}); was it cut off?")),
    }
}

fn claude_usage(v: &Value) -> Usage {
    let usage = v.get("usage").cloned().unwrap_or(Value::Null);
    Usage {
        input: u(&usage, "input_tokens")
            + u(&usage, "cache_creation_input_tokens")
            + u(&usage, "cache_read_input_tokens"),
        cached: u(&usage, "cache_read_input_tokens"),
        output: u(&usage, "output_tokens"),
        cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
    }
}

fn claude_model(v: &Value) -> Option<String> {
    v.get("modelUsage")
        .and_then(Value::as_object)
        .and_then(|m| m.keys().next().cloned())
}

/// `{"type":"result", "result": ..., "is_error": ..., "usage": ..., "total_cost_usd": ...}`.
fn claude_result(v: &Value) -> Parsed {
    let mut p = Parsed {
        text: s(v, "result"),
        usage: claude_usage(v),
        model: claude_model(v),
        problem: None,
        error_reported: false,
    };
    let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let subtype = s(v, "subtype").unwrap_or_default();
    if is_error || subtype.starts_with("error") {
        p.error_reported = true;
        p.problem = Some(format!(
            "claude reported an error ({}){}",
            if subtype.is_empty() {
                "is_error"
            } else {
                &subtype
            },
            p.text
                .as_deref()
                .map(|t| format!(": {}", first_line(t)))
                .unwrap_or_default()
        ));
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
                usage: Usage::default(),
                model,
                error_reported: false,
                problem: Some(if lines.is_empty() {
                    "the agent printed no stream-json events".into()
                } else {
                    "the stream ended without a `result` event (cut off?)".into()
                }),
            }
        }
    }
}

fn codex(stdout: &str) -> Parsed {
    let (lines, _) = json_lines(stdout);
    let mut p = Parsed::default();
    let mut errors = Vec::new();
    for v in &lines {
        match v.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                if v.pointer("/item/type").and_then(Value::as_str) == Some("agent_message")
                    && let Some(t) = v.pointer("/item/text").and_then(Value::as_str)
                {
                    p.text = Some(t.to_string());
                }
            }
            Some("turn.completed") => {
                let usage = v.get("usage").cloned().unwrap_or(Value::Null);
                p.usage.add(&Usage {
                    input: u(&usage, "input_tokens"),
                    cached: u(&usage, "cached_input_tokens"),
                    output: u(&usage, "output_tokens") + u(&usage, "reasoning_output_tokens"),
                    cost_usd: None,
                });
            }
            Some("turn.failed") => errors.push(
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed")
                    .to_string(),
            ),
            Some("error") => errors.push(s(v, "message").unwrap_or_else(|| "error".into())),
            _ => {}
        }
    }
    if let Some(e) = errors.last() {
        p.error_reported = true;
        p.problem = Some(format!("codex reported an error: {}", first_line(e)));
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
                cost_usd: None,
            });
            p.model.get_or_insert_with(|| name.clone());
        }
    }
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let msg = s(err, "message").unwrap_or_else(|| err.to_string());
        p.error_reported = true;
        p.problem = Some(format!("gemini reported an error: {}", first_line(&msg)));
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
        model: None,
        problem: t.is_empty().then(|| "the agent printed nothing".into()),
        error_reported: false,
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

/// The body of the last fenced code block tagged `ooda` (```` ```ooda ```` or
/// `~~~ooda`, any fence length), or `None`. An unclosed last block counts
/// up to the end of the text: an answer cut off after its JSON is still read.
pub fn last_ooda_block(text: &str) -> Option<String> {
    struct Open<'a> {
        fence: char,
        len: usize,
        /// Blocks in other languages are skipped whole, so an `ooda` fence
        /// quoted inside one is not taken for the answer.
        ours: bool,
        body: Vec<&'a str>,
    }
    let fence_len = |line: &str, ch: char| line.chars().take_while(|c| *c == ch).count();
    let mut last = None;
    let mut open: Option<Open> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(o) = open.as_mut() {
            let n = fence_len(trimmed, o.fence);
            if n >= o.len && trimmed[n..].trim().is_empty() {
                if o.ours {
                    last = Some(o.body.join("\n"));
                }
                open = None;
            } else {
                o.body.push(line);
            }
            continue;
        }
        for fence in ['`', '~'] {
            let n = fence_len(trimmed, fence);
            if n >= 3 {
                let tag = trimmed[n..].split_whitespace().next().unwrap_or("");
                open = Some(Open {
                    fence,
                    len: n,
                    ours: tag.eq_ignore_ascii_case("ooda"),
                    body: Vec::new(),
                });
                break;
            }
        }
    }
    if let Some(o) = open
        && o.ours
        && !o.body.is_empty()
    {
        last = Some(o.body.join("\n"));
    }
    last
}

/// Where an agent's result JSON came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    OutputFile,
    FencedBlock,
    /// The whole final text was one JSON object (no fence).
    BareJson,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::OutputFile => "OODA_OUTPUT_FILE",
            Source::FencedBlock => "```ooda block",
            Source::BareJson => "bare JSON",
        }
    }
}

/// The result JSON: `OODA_OUTPUT_FILE` if the agent wrote it, else the last
/// `ooda` block of the final text. The message of an `Err` is written for the
/// agent, which may get another try.
pub fn result_json(
    output_file: Option<&str>,
    final_text: Option<&str>,
) -> Result<(Value, Source), String> {
    if let Some(file) = output_file.map(str::trim).filter(|t| !t.is_empty()) {
        // A file holding a fenced block (a copy of the final text) is accepted too.
        let body = last_ooda_block(file).unwrap_or_else(|| file.to_string());
        return object(&body)
            .map(|v| (v, Source::OutputFile))
            .map_err(|e| format!("OODA_OUTPUT_FILE does not hold a JSON object: {e}"));
    }
    let Some(text) = final_text.filter(|t| !t.trim().is_empty()) else {
        return Err("the agent gave no final text and did not write OODA_OUTPUT_FILE".into());
    };
    if let Some(body) = last_ooda_block(text) {
        return object(&body)
            .map(|v| (v, Source::FencedBlock))
            .map_err(|e| format!("the last ```ooda block is not a JSON object: {e}"));
    }
    if let Ok(v) = object(text) {
        return Ok((v, Source::BareJson));
    }
    Err("the final text has no fenced code block tagged `ooda`: end your answer with ```ooda, the JSON, and ```".into())
}

fn object(text: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("expected a JSON object `{...}`".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: &str = include_str!("../tests/fixtures/agent-outputs/claude-json.json");
    const STREAM: &str = include_str!("../tests/fixtures/agent-outputs/claude-stream-json.jsonl");
    const CODEX: &str = include_str!("../tests/fixtures/agent-outputs/codex-exec.jsonl");
    const GEMINI: &str = include_str!("../tests/fixtures/agent-outputs/gemini-json.json");

    fn plan_of(p: &Parsed) -> Value {
        result_json(None, p.text.as_deref()).unwrap().0
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

    #[test]
    fn fenced_blocks() {
        let text = "Shape:\n```ooda\n{\"hypothesis\": \"...\"}\n```\nAnswer:\n```ooda\n{\"hypothesis\": \"real\"}\n```\n";
        assert_eq!(
            last_ooda_block(text).as_deref(),
            Some("{\"hypothesis\": \"real\"}")
        );
        // Other blocks are not taken, even when they quote an ooda fence.
        let text = "```ooda\n{\"a\":1}\n```\n````markdown\n```ooda\n{\"a\":2}\n```\n````\nafter\n";
        assert_eq!(last_ooda_block(text).as_deref(), Some("{\"a\":1}"));
        assert_eq!(last_ooda_block("```json\n{}\n```"), None);
        // Tildes, a longer fence, indentation, an unclosed last block.
        assert_eq!(
            last_ooda_block("  ~~~~ooda\n{\"b\":1}\n  ~~~~\n").as_deref(),
            Some("{\"b\":1}")
        );
        assert_eq!(
            last_ooda_block("x\n```ooda\n{\"c\":1}").as_deref(),
            Some("{\"c\":1}")
        );
    }

    #[test]
    fn result_sources_in_order() {
        let text = Some("```ooda\n{\"from\":\"text\"}\n```");
        let (v, src) = result_json(Some("{\"from\":\"file\"}\n"), text).unwrap();
        assert_eq!(
            (v["from"].as_str(), src),
            (Some("file"), Source::OutputFile)
        );
        let (v, src) = result_json(Some("  "), text).unwrap();
        assert_eq!(
            (v["from"].as_str(), src),
            (Some("text"), Source::FencedBlock)
        );
        let (_, src) = result_json(None, Some(" {\"a\": 1} ")).unwrap();
        assert_eq!(src, Source::BareJson);
        assert!(
            result_json(None, Some("no block here"))
                .unwrap_err()
                .contains("tagged `ooda`")
        );
        assert!(
            result_json(None, None)
                .unwrap_err()
                .contains("no final text")
        );
        assert!(
            result_json(None, Some("```ooda\n{oops\n```"))
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            result_json(Some("[1]"), None)
                .unwrap_err()
                .contains("OODA_OUTPUT_FILE")
        );
    }

    #[test]
    fn aider_token_lines() {
        let out = "Applied edit to src/a.rs\nTokens: 12k sent, 1.1k received. Cost: $0.05 message, $0.09 session.\nTokens: 2,000 sent\nTokens: 300 sent, 20 received.\n";
        let u = parse(AgentFormat::Text, out).usage;
        assert_eq!((u.input, u.output), (12_300, 1_120));
        assert_eq!(u.cost_usd, Some(0.05));
    }
}
