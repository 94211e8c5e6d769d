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

/// The most characters one attribute carries, as serialized; a backend
/// refuses or cuts attributes far shorter than a whole transcript.
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
    /// Resource attributes from `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES` (a backend files traces by them: a
    /// Phoenix project, a Langfuse environment).
    pub resource: Vec<(String, String)>,
    /// The last transcript read, by its path: a step's requests are
    /// exported one after another, and each reads the same file.
    pub(super) transcript: std::cell::RefCell<Option<(String, Vec<Value>)>>,
}

impl Detail {
    /// From the environment, for the Brief whose archive is `dir`.
    pub(crate) fn from_env(dir: &Path) -> Detail {
        let on = std::env::var(CAPTURE)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"));
        let mut resource: Vec<(String, String)> = std::env::var("OTEL_RESOURCE_ATTRIBUTES")
            .unwrap_or_default()
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                let k = k.trim();
                (!k.is_empty()).then(|| (k.to_string(), v.trim().to_string()))
            })
            .collect();
        if let Some(name) = std::env::var("OTEL_SERVICE_NAME")
            .ok()
            .filter(|n| !n.trim().is_empty())
        {
            resource.retain(|(k, _)| k != "service.name");
            resource.push(("service.name".into(), name.trim().to_string()));
        }
        Detail {
            content: on,
            dir: Some(dir.to_path_buf()),
            resource,
            ..Detail::default()
        }
    }

    /// A file of the archive by its path in the log: relative, inside the
    /// archive, not a link (the log is ooda's, but a file beside it may
    /// have been replaced).
    fn file(&self, relative: &str) -> Option<String> {
        let rel = Path::new(relative);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return None;
        }
        let path = self.dir.as_ref()?.join(rel);
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            return None;
        }
        std::fs::read_to_string(path).ok()
    }

    /// A file of the archive, redacted and cut to the cap.
    fn read(&self, relative: &str) -> Option<String> {
        Some(cut(&crate::text::redact::redact(&self.file(relative)?)))
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
            .and_then(|t| fit(vec![text_message("user", &t)]));
        let output = Self::file_of(files, ".result.json")
            .or_else(|| Self::file_of(files, ".output.txt"))
            .and_then(|f| self.read(f))
            .and_then(|t| fit(vec![text_message("assistant", &t)]));
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
        let Some(path) = Self::file_of(files, ".transcript.jsonl") else {
            return (None, None);
        };
        let mut cache = self.transcript.borrow_mut();
        if cache.as_ref().is_none_or(|(p, _)| p != path) {
            let lines = self
                .file(path)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            *cache = Some((path.to_string(), lines));
        }
        let Some((_, lines)) = cache.as_ref() else {
            return (None, None);
        };
        let Some(at) = lines
            .iter()
            .position(|m| m.get("request").and_then(Value::as_u64) == Some(request))
        else {
            return (None, None);
        };
        let input = lines[..at].iter().map(message).collect();
        (fit(input), fit(vec![message(&lines[at])]))
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

/// Messages as one attribute of at most [`CAP`] characters: the oldest
/// dropped first (the newest led to the answer), then every long text in
/// what is left cut; `None` when even that does not fit.
fn fit(mut messages: Vec<Value>) -> Option<Value> {
    let size = |m: &[Value]| Value::Array(m.to_vec()).to_string().chars().count();
    while messages.len() > 1 && size(&messages) > CAP {
        messages.remove(0);
    }
    let mut limit = CAP / 2;
    while size(&messages) > CAP && limit >= 64 {
        for m in &mut messages {
            shorten(m, limit);
        }
        limit /= 2;
    }
    (size(&messages) <= CAP).then_some(Value::Array(messages))
}

/// Every string in `v` cut to `limit` characters.
fn shorten(v: &mut Value, limit: usize) {
    match v {
        Value::String(s) if s.chars().count() > limit => {
            *s = crate::text::clip::clip(s, limit);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| shorten(i, limit)),
        Value::Object(map) => map.values_mut().for_each(|i| shorten(i, limit)),
        _ => {}
    }
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
            ..Detail::default()
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
    fn every_attribute_fits_the_cap_and_no_file_outside_the_archive_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let huge = "x".repeat(5 * CAP);
        let call = format!(
            r#"{{"speaker":"assistant","text":"{huge}","calls":[{{"id":"c","name":"write_file","arguments":{{"content":"{huge}"}}}}],"request":1}}"#
        );
        let lines = [
            format!(r#"{{"speaker":"user","text":"{huge}"}}"#),
            format!(r#"{{"speaker":"user","text":"{huge}"}}"#),
            call,
        ];
        std::fs::write(dir.path().join("s.transcript.jsonl"), lines.join("\n")).unwrap();
        std::fs::write(dir.path().join("s.prompt.md"), &huge).unwrap();
        let d = Detail {
            content: true,
            dir: Some(dir.path().into()),
            ..Detail::default()
        };
        let (i, o) = d.request_messages("s.transcript.jsonl", 1);
        for v in [i.unwrap(), o.unwrap()] {
            assert!(
                v.to_string().chars().count() <= CAP,
                "{}",
                v.to_string().len()
            );
        }
        let (p, _) = d.agent_messages("s.prompt.md");
        assert!(p.unwrap().to_string().chars().count() <= CAP);
        assert!(d.arguments(Some(&huge)).unwrap().chars().count() <= CAP);
        // Paths that leave the archive, or a link, are not followed.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.prompt.md"), "no").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.prompt.md"),
            dir.path().join("l.prompt.md"),
        )
        .unwrap();
        let abs = outside
            .path()
            .join("secret.prompt.md")
            .display()
            .to_string();
        for f in [abs.as_str(), "../x.prompt.md", "l.prompt.md"] {
            assert_eq!(d.agent_messages(f), (None, None), "{f}");
        }
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
            ..Detail::default()
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
