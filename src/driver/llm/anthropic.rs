//! Anthropic Messages: `POST {base_url}/messages`.
//!
//! Tool results are `tool_result` blocks of a user message, and the API
//! wants user and assistant turns to alternate, so consecutive tool results
//! (and any user text after them) are merged into one user message.

use serde_json::{Value, json};

use super::wire::{Completion, Request, Speaker, Tokens, ToolCall};

pub(crate) const PATH: &str = "/messages";
pub(crate) const VERSION: &str = "2023-06-01";

pub(crate) fn body(model: &str, req: &Request) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in &super::wire::with_text_calls_as_text(req.messages) {
        let (role, blocks) = match m.speaker {
            Speaker::User => ("user", vec![json!({"type": "text", "text": m.text})]),
            Speaker::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.call_id,
                    "content": m.text,
                    "is_error": m.is_error,
                })],
            ),
            Speaker::Assistant => {
                let mut b = Vec::new();
                if !m.text.is_empty() {
                    b.push(json!({"type": "text", "text": m.text}));
                }
                for c in &m.calls {
                    b.push(json!({"type": "tool_use", "id": c.id, "name": c.name,
                        "input": match &c.arguments { Value::Object(_) => c.arguments.clone(), _ => json!({}) }}));
                }
                if b.is_empty() {
                    b.push(json!({"type": "text", "text": "(no text)"}));
                }
                ("assistant", b)
            }
        };
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(a) = last["content"].as_array_mut() {
                    a.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_output,
        "system": req.system,
        "messages": messages,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(
                |t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}),
            )
            .collect();
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    body
}

pub(crate) fn parse(v: &Value) -> Result<Completion, String> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err("an error object where a message was expected".into());
    }
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array in the response")?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(
                    block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                );
            }
            Some("tool_use") => calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block without an id")?
                    .to_string(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block without a name")?
                    .to_string(),
                arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            // Thinking blocks and the like are the model's own.
            _ => {}
        }
    }
    let n = |k: &str| {
        v.get("usage")
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (read, written) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    Ok(Completion {
        text,
        calls,
        finish: v
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        tokens: Tokens {
            // Anthropic counts cached and cache-written tokens apart from
            // `input_tokens`; every one of them was read.
            input: n("input_tokens") + read + written,
            output: n("output_tokens"),
            cached: read,
            reasoning: 0,
            cache_write: written,
        },
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        speeds: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::llm::wire::Message;

    #[test]
    fn tool_results_merge_into_one_user_turn() {
        let msgs = vec![
            Message::user("go"),
            Message::assistant(
                "reading",
                vec![
                    ToolCall {
                        id: "t1".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "a"}),
                    },
                    ToolCall {
                        id: "t2".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "b"}),
                    },
                ],
            ),
            Message::tool("t1", "A", false),
            Message::tool("t2", "no such file", true),
        ];
        let b = body(
            "claude-x",
            &Request {
                system: "s",
                messages: &msgs,
                tools: &[],
                max_output: 64,
                temperature: None,
            },
        );
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][1]["type"], json!("tool_use"));
        assert_eq!(m[2]["role"], json!("user"));
        assert_eq!(m[2]["content"][1]["tool_use_id"], json!("t2"));
        assert_eq!(m[2]["content"][1]["is_error"], json!(true));
        assert_eq!(b["system"], json!("s"));
    }

    #[test]
    fn stop_reason_tool_use_and_cache_usage_are_read() {
        let v = json!({"type": "message", "model": "claude-x", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "let me look"},
                        {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"dir": "src"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 3}});
        let c = parse(&v).unwrap();
        assert_eq!(c.finish, "tool_use");
        assert_eq!(c.calls[0].name, "list_files");
        assert_eq!(c.tokens.input, 103);
        assert_eq!(c.tokens.cached, 90);
        assert_eq!(c.text, "let me look");
    }
}
