//! OpenAI Chat Completions, as OpenAI, vLLM, llama.cpp's server, Ollama and
//! OpenRouter speak it: `POST {base_url}/chat/completions`.

use serde_json::{Value, json};

use super::wire::{
    Completion, Request, Speaker, Tokens, ToolCall, arguments, with_text_calls_as_text,
};

pub(crate) const PATH: &str = "/chat/completions";

/// The request body.
pub(crate) fn body(model: &str, base_url: &str, req: &Request) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system})];
    for m in &with_text_calls_as_text(req.messages) {
        messages.push(match m.speaker {
            Speaker::User => json!({"role": "user", "content": m.text}),
            Speaker::Assistant if m.calls.is_empty() => {
                json!({"role": "assistant", "content": m.text})
            }
            Speaker::Assistant => json!({
                "role": "assistant",
                "content": if m.text.is_empty() { Value::Null } else { Value::String(m.text.clone()) },
                "tool_calls": m.calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": match &c.arguments {
                        Value::String(raw) => raw.clone(),
                        v => v.to_string(),
                    }},
                })).collect::<Vec<_>>(),
            }),
            Speaker::Tool => json!({
                "role": "tool",
                "tool_call_id": m.call_id,
                "content": m.text,
            }),
        });
    }
    let mut body = json!({"model": model, "messages": messages});
    // OpenAI's own API wants `max_completion_tokens` (its reasoning models
    // refuse `max_tokens`); the compatible servers (vLLM, llama.cpp,
    // Ollama) read `max_tokens`.
    let key = if base_url.contains("api.openai.com") {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[key] = json!(req.max_output);
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.schema,
                }})
            })
            .collect();
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// The answer, or what is wrong with the body. `request` numbers the ids
/// given to calls a server sent without one, so they stay unique in a step.
pub(crate) fn parse(v: &Value, request: u32) -> Result<Completion, String> {
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("no `choices[0]` in the response")?;
    let message = choice.get("message").ok_or("no `choices[0].message`")?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut calls = Vec::new();
    for (i, c) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = c.get("function").ok_or("a tool call without `function`")?;
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a tool call without a name")?;
        let raw = match f.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        calls.push(ToolCall {
            // Some local servers leave ids out: the pairing needs one.
            id: c
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{request}_{i}")),
            name: name.to_string(),
            arguments: arguments(&raw),
        });
    }
    let u = v.get("usage");
    let n = |path: &[&str]| {
        let mut x = u;
        for p in path {
            x = x.and_then(|y| y.get(*p));
        }
        x.and_then(Value::as_u64).unwrap_or(0)
    };
    Ok(Completion {
        text,
        calls,
        finish: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        tokens: Tokens {
            input: n(&["prompt_tokens"]),
            output: n(&["completion_tokens"]),
            cached: n(&["prompt_tokens_details", "cached_tokens"]),
            reasoning: n(&["completion_tokens_details", "reasoning_tokens"]),
            cache_write: 0,
        },
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        speeds: v.get("timings").and_then(|t| {
            let n = |k: &str| t.get(k).and_then(Value::as_f64);
            Some((
                n("predicted_per_second")?,
                n("prompt_per_second").unwrap_or(0.0),
            ))
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::llm::wire::{Message, ToolSpec};

    #[test]
    fn a_tool_round_trip_is_spelled_as_chat_completions_wants() {
        let msgs = vec![
            Message::user("go"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a.rs"}),
                }],
            ),
            Message::tool("c1", "fn main() {}", false),
        ];
        let tools = [ToolSpec {
            name: "read_file",
            description: "d",
            schema: json!({"type": "object"}),
        }];
        let b = body(
            "m",
            "http://127.0.0.1:8000/v1",
            &Request {
                system: "sys",
                messages: &msgs,
                tools: &tools,
                max_output: 100,
                temperature: Some(0.3),
            },
        );
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{\"path\":\"a.rs\"}")
        );
        assert_eq!(b["messages"][3]["tool_call_id"], json!("c1"));
        assert_eq!(b["tools"][0]["function"]["name"], json!("read_file"));
        assert_eq!(b["temperature"], json!(0.3));
    }

    #[test]
    fn usage_with_cached_and_reasoning_tokens_is_read() {
        let v = json!({
            "model": "gpt-x",
            "choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "list_files", "arguments": "{\"dir\":\".\"}"}},
                               {"type": "function", "function": {"name": "finish", "arguments": "not json"}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                      "prompt_tokens_details": {"cached_tokens": 100},
                      "completion_tokens_details": {"reasoning_tokens": 12}}
        });
        let c = parse(&v, 7).unwrap();
        assert_eq!(c.finish, "tool_calls");
        assert_eq!(c.calls[0].arguments, json!({"dir": "."}));
        assert_eq!(c.calls[1].id, "call_7_1");
        assert_eq!(c.calls[1].arguments, json!("not json"));
        assert_eq!(
            c.tokens,
            Tokens {
                input: 120,
                output: 30,
                cached: 100,
                reasoning: 12,
                cache_write: 0
            }
        );
        assert!(parse(&json!({"id": "x"}), 1).is_err());
    }
}
