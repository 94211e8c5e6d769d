//! What `ooda check --preflight` learns about a model before a night: can
//! it call tools (natively, as text, or not at all), how large is its
//! window, how fast does it write.
//!
//! A small model on a CPU server can answer a plan and still never do any
//! work: its chat template has no tools and the server drops them without a
//! word, or it writes the call as text. One request that can only be
//! answered by a tool call tells which, and the answer is recorded
//! (`.ooda/preflight/tools.json`) so a tier that leaves `tools` out gets the
//! mode that works. The window and the speed are what the server says
//! (llama.cpp's `/props`, vLLM's and llama.cpp's `/models`) and what the
//! request took, so a `context_window` or a `max_output` the server cannot
//! honour is found by day.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::Client;
use super::text_calls;
use super::tools;
use super::wire::{Message, Request};
use crate::config::{ModelTier, ToolsMode};
use crate::error::Result;

/// What the probe found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Probe {
    /// How the model called the tool it was asked to call; `None` when the
    /// request failed.
    pub tools: Option<ToolsMode>,
    /// What happened, in a line.
    pub detail: String,
    /// The server's context window and where it said so.
    pub window: Option<(u64, String)>,
    /// Tokens per second written and read, when the server's numbers or
    /// the request's time say.
    pub out_per_s: Option<f64>,
    pub in_per_s: Option<f64>,
    /// What a night would trip over, each with its fix.
    pub problems: Vec<String>,
}

/// Asks the tier's model for one `list_files` call, and the server for its
/// window.
pub(crate) fn probe(tier: &ModelTier, cancel: &AtomicBool) -> Result<Probe> {
    let client = Client::new(tier)?;
    let specs = tools::specs(false, false);
    let ask = [Message::user(
        "Call the list_files tool with dir set to \".\" now. Do not answer in prose.",
    )];
    let req = Request {
        system: "You are a coding agent. You work only through the tools you are given.",
        messages: &ask,
        tools: &specs,
        max_output: tier.max_output.min(512),
        temperature: Some(0.0),
    };
    let started = Instant::now();
    let deadline = started + tier.timeout.min(Duration::from_secs(600));
    let mut problems = Vec::new();
    let (tools, detail, out_per_s, in_per_s) =
        match client.complete(&req, 1, cancel, deadline, |_, _| {})? {
            Err(e) => {
                problems.push(format!("the probe request failed: {}", e.describe()));
                (None, "the request failed".to_string(), None, None)
            }
            Ok(a) => {
                let c = &a.completion;
                let (mode, detail) = if !c.calls.is_empty() {
                    (
                        ToolsMode::Native,
                        format!("the model returned a structured `{}` call", c.calls[0].name),
                    )
                } else {
                    let found = text_calls::read(&c.text, &specs, 1, "");
                    match found.calls.first() {
                        Some((call, form)) => (
                            ToolsMode::Text,
                            format!(
                                "the model wrote its `{}` call as {}",
                                call.name,
                                form.as_str()
                            ),
                        ),
                        None => (
                            ToolsMode::None,
                            format!(
                                "the model answered without a tool call: {}",
                                crate::text::clip::clip(c.text.trim(), 100)
                            ),
                        ),
                    }
                };
                // The server's own numbers when it gives them (the
                // request's time includes reading the prompt).
                let secs = a.latency.as_secs_f64().max(1e-3);
                let (out, read) = match c.speeds {
                    Some((o, i)) => (Some(o), (i > 0.0).then_some(i)),
                    None => (
                        (c.tokens.output > 0).then(|| c.tokens.output as f64 / secs),
                        None,
                    ),
                };
                (Some(mode), detail, out, read)
            }
        };
    let window = window(&client);
    if let Some((n, said)) = &window
        && *n < tier.context_window
    {
        problems.push(format!(
            "the server's context window is {n} tokens ({said}) and ooda.yaml says context_window: {}: set `context_window: {n}` for {} so compaction starts in time",
            tier.context_window, tier.model
        ));
    }
    if let Some(rate) = out_per_s
        && rate > 0.0
    {
        let full = tier.max_output as f64 / rate;
        if full > tier.timeout.as_secs_f64() {
            problems.push(format!(
                "at {rate:.1} tokens/s an answer of max_output {} tokens takes {}, longer than the request timeout of {}: lower `max_output` (e.g. {}) or raise `timeout` for {}",
                tier.max_output,
                crate::brief::format_duration(Duration::from_secs_f64(full)),
                crate::brief::format_duration(tier.timeout),
                ((rate * tier.timeout.as_secs_f64() * 0.5) as u64).max(256),
                tier.model
            ));
        }
    }
    Ok(Probe {
        tools,
        detail,
        window,
        out_per_s,
        in_per_s,
        problems,
    })
}

/// The window, as the server says it: llama.cpp's `/props`
/// (`default_generation_settings.n_ctx`), else `/models` (vLLM's
/// `max_model_len`, llama.cpp's `meta.n_ctx_train`, `context_length`).
fn window(client: &Client) -> Option<(u64, String)> {
    let base = client.tier().base_url();
    let root = server_root(base);
    if let Some(v) = client.get_json(&format!("{root}/props"))
        && let Some(n) = v
            .pointer("/default_generation_settings/n_ctx")
            .or_else(|| v.get("n_ctx"))
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    {
        return Some((n, "the server's /props n_ctx".into()));
    }
    let v = client.get_json(&format!("{base}/models"))?;
    let model = &client.tier().model;
    let entries = v.get("data").and_then(Value::as_array)?;
    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model.as_str()))
        .or(entries.first())?;
    for (path, said) in [
        ("/max_model_len", "max_model_len"),
        ("/context_length", "context_length"),
        ("/meta/n_ctx", "meta.n_ctx"),
        ("/meta/n_ctx_train", "meta.n_ctx_train"),
    ] {
        if let Some(n) = entry
            .pointer(path)
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
        {
            return Some((n, format!("the server's /models {said}")));
        }
    }
    None
}

/// `http://host:8080` for `http://host:8080/v1`.
fn server_root(base: &str) -> &str {
    base.strip_suffix("/v1").unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_root_drops_the_api_version() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://h/api"), "http://h/api");
    }
}
