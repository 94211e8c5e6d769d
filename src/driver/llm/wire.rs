//! The conversation as both APIs see it, before either's spelling.
//!
//! `openai.rs` and `anthropic.rs` translate these to and from their
//! request and response bodies; everything else speaks only these types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who says a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    User,
    Assistant,
    /// A tool's result, answering one call of the assistant's.
    Tool,
}

/// One call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them (an object when they parse;
    /// the raw text as a string when they do not, which the tool refuses).
    pub arguments: Value,
}

/// One message of the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub speaker: Speaker,
    #[serde(default)]
    pub text: String,
    /// The assistant's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// A tool message reporting a failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            speaker: Speaker::User,
            text: text.into(),
            calls: Vec::new(),
            call_id: None,
            is_error: false,
        }
    }

    pub fn assistant(text: impl Into<String>, calls: Vec<ToolCall>) -> Message {
        Message {
            speaker: Speaker::Assistant,
            text: text.into(),
            calls,
            call_id: None,
            is_error: false,
        }
    }

    pub fn tool(call_id: &str, text: impl Into<String>, is_error: bool) -> Message {
        Message {
            speaker: Speaker::Tool,
            text: text.into(),
            calls: Vec::new(),
            call_id: Some(call_id.to_string()),
            is_error,
        }
    }

    /// Characters this message puts in a prompt (its calls' arguments too).
    pub fn chars(&self) -> usize {
        self.text.chars().count()
            + self
                .calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().chars().count())
                .sum::<usize>()
    }
}

/// A tool as the model is told about it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// A JSON Schema for the arguments object.
    pub schema: Value,
}

/// One request, provider-neutral.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_output: u64,
    pub temperature: Option<f64>,
}

/// Tokens one request used, as the API reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Every prompt token read, cached ones included.
    pub input: u64,
    pub output: u64,
    /// The part of `input` read from the provider's cache.
    pub cached: u64,
    /// The part of `output` spent reasoning.
    pub reasoning: u64,
    /// Prompt tokens written to the cache (Anthropic).
    pub cache_write: u64,
}

/// What the model answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub text: String,
    pub calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length` (OpenAI) or `end_turn`, `tool_use`,
    /// `max_tokens` (Anthropic), as the API said it.
    pub finish: String,
    pub tokens: Tokens,
    /// The model that answered, as the API names it.
    pub model: String,
    /// Tokens per second written and read, when the server reports them
    /// (llama.cpp's `timings`).
    pub speeds: Option<(f64, f64)>,
}

impl Completion {
    /// Whether the answer stopped at `max_output` (`length` in OpenAI's
    /// spelling, `max_tokens` in Anthropic's).
    pub fn cut_off(&self) -> bool {
        matches!(self.finish.as_str(), "length" | "max_tokens")
    }

    /// What came back, as one message of the transcript.
    pub fn message(&self) -> Message {
        Message::assistant(self.text.clone(), self.calls.clone())
    }
}

/// Ids given to calls the model wrote as text (`text_calls.rs`).
pub const TEXT_CALL_PREFIX: &str = "text_";

/// The transcript as a model that wrote its calls as text must see it: its
/// own answers as it wrote them, and each result as a user message naming
/// the tool (a `tool` role answering a call the API never made is refused
/// by some servers and dropped by chat templates without tools).
/// Consecutive user messages are joined: some templates require turns to
/// alternate.
pub fn with_text_calls_as_text(messages: &[Message]) -> Vec<Message> {
    let text_call = |id: &str| id.starts_with(TEXT_CALL_PREFIX);
    let mut names = std::collections::HashMap::new();
    let mut out: Vec<Message> = Vec::new();
    for m in messages {
        let m = match m.speaker {
            Speaker::Assistant => {
                for c in &m.calls {
                    names.insert(c.id.clone(), c.name.clone());
                }
                let mut a = m.clone();
                a.calls.retain(|c| !text_call(&c.id));
                a
            }
            Speaker::Tool if m.call_id.as_deref().is_some_and(text_call) => {
                let id = m.call_id.as_deref().unwrap_or_default();
                let name = names.get(id).map(String::as_str).unwrap_or("tool");
                let what = if m.is_error {
                    "error from"
                } else {
                    "result of"
                };
                Message::user(format!("[{what} your `{name}` call]\n{}", m.text))
            }
            _ => m.clone(),
        };
        match out.last_mut() {
            Some(last) if last.speaker == Speaker::User && m.speaker == Speaker::User => {
                last.text.push_str("\n\n");
                last.text.push_str(&m.text);
            }
            _ => out.push(m),
        }
    }
    out
}

/// The arguments as an object, whatever the model sent.
pub fn arguments(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        Ok(Value::Null) if raw.trim() == "null" => Value::Object(Default::default()),
        _ if raw.trim().is_empty() => Value::Object(Default::default()),
        _ => Value::String(raw.to_string()),
    }
}
