//! Message content and tool arguments on spans: opt-in, redacted, bounded.
//!
//! The GenAI conventions make `gen_ai.input.messages`,
//! `gen_ai.output.messages` and `gen_ai.tool.call.arguments` opt-in: they
//! hold the prompts, the code and whatever a tool read, and a trace often
//! goes to a service the code's owner did not choose. So they are left out
//! unless `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (the
//! variable OpenTelemetry's GenAI instrumentations read) is set where the
//! export or the night runs. When on, the text is read from the files the
//! archive already keeps (the prompt and result of each agent call, the
//! llm driver's transcript), which were redacted when written, and is
//! redacted again here, since a rule added since may catch more.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The longest text one attribute carries; a backend refuses or cuts
/// attributes far shorter than a whole transcript.
const CAP: usize = 32 * 1024;

/// The standard switch for message content.
const CAPTURE: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// What an export adds beyond what every export carries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Detail {
    /// Message content and tool arguments.
    pub content: bool,
    /// The Brief's iterations folder, which the calls' files are relative to.
    pub dir: Option<PathBuf>,
}

impl Detail {
    /// From the environment, for the Brief whose archive is `dir`.
    pub(crate) fn from_env(dir: &Path) -> Detail {
        let on = std::env::var(CAPTURE)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"));
        Detail {
            content: on,
            dir: Some(dir.to_path_buf()),
        }
    }

    /// A file of the archive, redacted and cut to the cap.
    fn read(&self, relative: &str) -> Option<String> {
        let path = self.dir.as_ref()?.join(relative);
        let text = std::fs::read_to_string(path).ok()?;
        Some(cut(&crate::text::redact::redact(&text)))
    }

    /// The call's files (`files` on an agent call), by what they hold.
    fn file_of<'a>(files: &'a str, suffix: &str) -> Option<&'a str> {
        files.split(", ").find(|f| f.ends_with(suffix))
    }

    /// `gen_ai.input.messages` and `gen_ai.output.messages` of an agent
    /// call: the prompt it was given and the result it returned.
    pub(crate) fn agent_messages(&self, files: &str) -> (Option<Value>, Option<Value>) {
        if !self.content {
            return (None, None);
        }
        let input = Self::file_of(files, ".prompt.md")
            .and_then(|f| self.read(f))
            .map(|t| json!([text_message("user", &t)]));
        let output = Self::file_of(files, ".result.json")
            .or_else(|| Self::file_of(files, ".output.txt"))
            .and_then(|f| self.read(f))
            .map(|t| json!([text_message("assistant", &t)]));
        (input, output)
    }

    /// The messages of one request of the llm driver: what the transcript
    /// held before the answer to request `request`, and that answer.
    pub(crate) fn request_messages(
        &self,
        files: &str,
        request: u64,
    ) -> (Option<Value>, Option<Value>) {
        if !self.content {
            return (None, None);
        }
        let Some(text) = Self::file_of(files, ".transcript.jsonl").and_then(|f| {
            let path = self.dir.as_ref()?.join(f);
            std::fs::read_to_string(path).ok()
        }) else {
            return (None, None);
        };
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let Some(at) = lines
            .iter()
            .position(|m| m.get("request").and_then(Value::as_u64) == Some(request))
        else {
            return (None, None);
        };
        // The newest messages first until the cap: the history that led to
        // this answer, as much of it as an attribute can hold.
        let mut input = Vec::new();
        let mut size = 0;
        for m in lines[..at].iter().rev() {
            let msg = message(m);
            size += msg.to_string().len();
            if size > CAP && !input.is_empty() {
                break;
            }
            input.push(msg);
        }
        input.reverse();
        (
            Some(Value::Array(input)),
            Some(json!([message(&lines[at])])),
        )
    }

    /// A tool call's arguments, when content is on.
    pub(crate) fn arguments(&self, arguments: Option<&str>) -> Option<String> {
        self.content
            .then(|| arguments.map(|a| cut(&crate::text::redact::redact(a))))
            .flatten()
    }
}

fn cut(text: &str) -> String {
    crate::text::clip::clip(text, CAP)
}

fn text_message(role: &str, text: &str) -> Value {
    json!({"role": role, "parts": [{"type": "text", "content": text}]})
}

/// A transcript line as a message of the conventions: role and parts.
fn message(m: &Value) -> Value {
    let role = m.get("speaker").and_then(Value::as_str).unwrap_or("user");
    let text = m.get("text").and_then(Value::as_str).unwrap_or_default();
    let text = cut(&crate::text::redact::redact(text));
    let mut parts = Vec::new();
    match (role, m.get("call_id").and_then(Value::as_str)) {
        ("tool", Some(id)) => {
            parts.push(json!({"type": "tool_call_response", "id": id, "result": text}))
        }
        _ if !text.is_empty() => parts.push(json!({"type": "text", "content": text})),
        _ => {}
    }
    for c in m
        .get("calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut args = c.get("arguments").cloned().unwrap_or(Value::Null);
        crate::text::redact::redact_json(&mut args);
        parts.push(json!({
            "type": "tool_call",
            "id": c.get("id").cloned().unwrap_or(Value::Null),
            "name": c.get("name").cloned().unwrap_or(Value::Null),
            "arguments": args,
        }));
    }
    json!({"role": role, "parts": parts})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_off_unless_asked_and_redacted_when_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.prompt.md"),
            "make it faster\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("p.result.json"), r#"{"hypothesis":"h"}"#).unwrap();
        let files = "p.prompt.md, p.result.json";
        let off = Detail {
            content: false,
            dir: Some(dir.path().into()),
        };
        assert_eq!(off.agent_messages(files), (None, None));
        assert_eq!(off.arguments(Some("{}")), None);
        let on = Detail {
            content: true,
            ..off
        };
        let (i, o) = on.agent_messages(files);
        let i = i.unwrap().to_string();
        assert!(i.contains("make it faster"), "{i}");
        assert!(!i.contains("wJalrXUtnFEMI"), "{i}");
        assert!(o.unwrap().to_string().contains("hypothesis"));
    }

    #[test]
    fn a_request_gets_the_history_before_its_answer_and_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"speaker":"user","text":"plan"}"#,
            r#"{"speaker":"assistant","text":"","calls":[{"id":"c1","name":"read_file","arguments":{"path":"a.rs"}}],"request":1}"#,
            r#"{"speaker":"tool","text":"fn a() {}","call_id":"c1"}"#,
            r#"{"speaker":"assistant","text":"done","request":2}"#,
        ];
        std::fs::write(dir.path().join("s.transcript.jsonl"), lines.join("\n")).unwrap();
        let d = Detail {
            content: true,
            dir: Some(dir.path().into()),
        };
        let (i, o) = d.request_messages("s.prompt.md, s.transcript.jsonl", 2);
        let i = i.unwrap();
        assert_eq!(i.as_array().unwrap().len(), 3);
        assert_eq!(i[1]["parts"][0]["type"], "tool_call");
        assert_eq!(i[1]["parts"][0]["arguments"]["path"], "a.rs");
        assert_eq!(i[2]["parts"][0]["type"], "tool_call_response");
        assert_eq!(o.unwrap()[0]["parts"][0]["content"], "done");
        // A request whose answer the transcript does not hold: nothing.
        assert_eq!(d.request_messages("s.transcript.jsonl", 7), (None, None));
    }
}
