//! A run as OpenTelemetry spans, in the OTLP/JSON encoding.
//!
//! The tools people already read agent runs with (Jaeger, Langfuse, Phoenix)
//! read OpenTelemetry traces, so `ooda export --otlp` turns the trace tree
//! (`trace.rs`) into spans rather than inventing a format. The names and
//! attributes follow the GenAI semantic conventions — `invoke_workflow`,
//! `invoke_agent`, `chat`, `execute_tool`, `gen_ai.*` — so those tools show
//! model calls as model calls; what only ooda knows (verdicts, effects,
//! commands) is under `ooda.*`.
//!
//! The file is what the OTLP File Exporter writes: JSON lines, each one
//! `ExportTraceServiceRequest` (`{"resourceSpans": …}`). One trace per run;
//! one line per iteration keeps a line's size bounded however long the
//! night, and the run's own span is on the first line. Ids are derived from
//! the run id and the event ids, so exporting the same log twice gives the
//! same spans and a collector that sees both keeps one.

use serde_json::{Value, json};

use crate::trace::{Kind, Node, Status};

/// The export of one run: one JSON document per line, or with `one_line`
/// all spans in one document (what older Jaeger UIs can upload: they read a
/// file as a single JSON document).
pub fn lines(run: &Node, one_line: bool) -> Vec<String> {
    let trace_id = trace_id(run.attribute("run_id").unwrap_or(&run.id));
    let mut first = vec![span(run, &trace_id, None)];
    let mut out = Vec::new();
    for child in &run.children {
        let mut spans = Vec::new();
        collect(child, &trace_id, &span_id(&run.id), &mut spans);
        if child.kind == Kind::Iteration {
            out.push(request(run, spans));
        } else {
            first.extend(spans);
        }
    }
    if one_line {
        for doc in out.drain(..) {
            if let Some(spans) = doc["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array() {
                first.extend(spans.iter().cloned());
            }
        }
    }
    out.insert(0, request(run, first));
    out.iter().map(Value::to_string).collect()
}

fn collect(n: &Node, trace_id: &str, parent: &str, out: &mut Vec<Value>) {
    out.push(span(n, trace_id, Some(parent)));
    let me = span_id(&n.id);
    for c in &n.children {
        collect(c, trace_id, &me, out);
    }
}

fn request(run: &Node, spans: Vec<Value>) -> Value {
    let mut resource = vec![
        kv("service.name", "ooda".into()),
        kv("service.version", env!("CARGO_PKG_VERSION").into()),
    ];
    if let Some(b) = run.attribute("brief") {
        resource.push(kv("ooda.brief", b.into()));
    }
    json!({
        "resourceSpans": [{
            "resource": {"attributes": resource},
            "scopeSpans": [{
                "scope": {"name": "ooda", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// An attribute value in OTLP/JSON: 64-bit integers are strings.
fn any(v: &Value) -> Option<Value> {
    Some(match v {
        Value::String(s) => json!({"stringValue": s}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64()?}),
        Value::Array(items) => {
            json!({"arrayValue": {"values": items.iter().filter_map(any).collect::<Vec<_>>()}})
        }
        Value::Null | Value::Object(_) => return None,
    })
}

fn kv(key: &str, value: Value) -> Value {
    json!({"key": key, "value": any(&value).unwrap_or(json!({"stringValue": ""}))})
}

fn nanos(t: chrono::DateTime<chrono::Utc>) -> String {
    t.timestamp_nanos_opt()
        .unwrap_or_default()
        .max(0)
        .to_string()
}

/// The provider a command agent's profile talks to, when its name says.
fn provider_of(profile: &str) -> Option<&'static str> {
    match profile {
        "claude" => Some("anthropic"),
        "codex" => Some("openai"),
        "gemini" => Some("gcp.gemini"),
        _ => None,
    }
}

fn span(n: &Node, trace_id: &str, parent: Option<&str>) -> Value {
    let mut attrs: Vec<Value> = Vec::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            attrs.push(kv(k, v));
        }
    };
    let a = |k: &str| n.attributes.get(k).cloned().unwrap_or(Value::Null);
    let (name, kind) = match n.kind {
        Kind::Run => {
            put("gen_ai.operation.name", "invoke_workflow".into());
            put("ooda.run_id", a("run_id"));
            put("ooda.start_commit", a("start_commit"));
            put("ooda.seed", a("seed"));
            put("ooda.stop_reason", n.verdict.clone().into());
            ("invoke_workflow ooda".to_string(), 1)
        }
        Kind::Iteration => {
            put("ooda.iteration", n.iteration.into());
            put("ooda.verdict", n.verdict.clone().into());
            put("ooda.hypothesis", a("hypothesis"));
            put("ooda.predicted_effect", a("predicted_effect"));
            put("ooda.reason", a("reason"));
            (n.name.clone(), 1)
        }
        Kind::Phase => {
            put("ooda.phase", n.name.clone().into());
            (n.name.clone(), 1)
        }
        Kind::Subagent => {
            put("gen_ai.operation.name", "invoke_agent".into());
            put("gen_ai.agent.name", n.name.clone().into());
            put("ooda.subagent.role", a("role"));
            put("ooda.subagent.driver", a("driver"));
            put("ooda.subagent.delegation", a("delegation"));
            put("ooda.verdict", n.verdict.clone().into());
            put("ooda.findings", a("findings"));
            (format!("invoke_agent {}", n.name), 1)
        }
        Kind::AgentCall => {
            let provider = n
                .children
                .iter()
                .find_map(|c| c.attribute("provider"))
                .or_else(|| provider_of(&n.name));
            put("gen_ai.operation.name", "invoke_agent".into());
            put("gen_ai.agent.name", n.name.clone().into());
            put("gen_ai.provider.name", provider.into());
            put("gen_ai.request.model", a("model"));
            put("ooda.phase", a("phase"));
            put("ooda.attempt", a("attempt"));
            put("ooda.command", a("command"));
            put("ooda.outcome", n.verdict.clone().into());
            (format!("invoke_agent {}", n.name), 1)
        }
        Kind::ModelRequest => {
            put("gen_ai.operation.name", "chat".into());
            put("gen_ai.provider.name", a("provider"));
            put("gen_ai.request.model", a("model"));
            put("gen_ai.response.model", a("response_model"));
            if let Some(f) = n.attribute("finish_reason").filter(|f| !f.is_empty()) {
                put("gen_ai.response.finish_reasons", json!([f]));
            }
            put("ooda.request", a("request"));
            put("ooda.tries", a("tries"));
            (n.name.clone(), 3)
        }
        Kind::ToolCall => {
            put("gen_ai.operation.name", "execute_tool".into());
            put("gen_ai.tool.name", n.name.clone().into());
            put("gen_ai.tool.call.id", a("tool_call_id"));
            put("gen_ai.tool.type", "function".into());
            put("gen_ai.tool.call.arguments", a("arguments"));
            put("ooda.stored", a("stored"));
            (format!("execute_tool {}", n.name), 1)
        }
        Kind::Command => {
            put("ooda.command.role", n.name.clone().into());
            put("ooda.command", a("command"));
            put("ooda.worktree", a("worktree"));
            put("ooda.outcome", n.verdict.clone().into());
            put("process.exit.code", a("exit_code"));
            (format!("command {}", n.name), 1)
        }
        Kind::Confirmation => {
            put("ooda.effect", a("effect"));
            put("ooda.ci", a("ci"));
            put("ooda.pairs", a("pairs"));
            (n.name.clone(), 1)
        }
    };
    if matches!(n.kind, Kind::AgentCall | Kind::ModelRequest) || !n.usage.is_empty() {
        put("gen_ai.usage.input_tokens", n.usage.input.into());
        put("gen_ai.usage.output_tokens", n.usage.output.into());
        put(
            "gen_ai.usage.cache_read.input_tokens",
            n.usage.cached.into(),
        );
        put("ooda.cost_usd", n.usage.cost_usd.into());
    }
    let status = match n.status {
        Status::Failed => {
            let why = n.verdict.clone().unwrap_or_else(|| "failed".into());
            put("error.type", why.into());
            json!({"code": 2, "message": n.error.clone().unwrap_or_default()})
        }
        Status::Cancelled => {
            put("error.type", "cancelled".into());
            json!({"code": 2, "message": "interrupted"})
        }
        Status::Ok | Status::Unfinished => json!({}),
    };
    if n.status == Status::Unfinished {
        put("ooda.unfinished", true.into());
    }
    let events: Vec<Value> = n
        .notes
        .iter()
        .map(|note| {
            json!({
                "timeUnixNano": nanos(note.at),
                "name": note.kind,
                "attributes": [kv("ooda.text", note.text.clone().into())],
            })
        })
        .collect();
    let mut s = json!({
        "traceId": trace_id,
        "spanId": span_id(&n.id),
        "name": name,
        "kind": kind,
        "startTimeUnixNano": nanos(n.start),
        "endTimeUnixNano": nanos(n.end.unwrap_or(n.start).max(n.start)),
        "attributes": attrs,
        "events": events,
        "status": status,
    });
    if let Some(p) = parent {
        s["parentSpanId"] = p.into();
    }
    s
}

/// FNV-1a, 64 bits: stable across releases and platforms, unlike std's hasher.
fn fnv(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // An all-zero id is invalid in OTLP.
    h.max(1)
}

/// 16 bytes as 32 hex digits (the OTLP/JSON encoding of `trace_id`).
pub fn trace_id(run_id: &str) -> String {
    format!(
        "{:016x}{:016x}",
        fnv(run_id.as_bytes(), 0x7472_6163),
        fnv(run_id.as_bytes(), 0x6f6f_6461)
    )
}

/// 8 bytes as 16 hex digits.
pub fn span_id(event_id: &str) -> String {
    format!("{:016x}", fnv(event_id.as_bytes(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_the_right_length_stable_and_distinct() {
        let t = trace_id("20261202T072408-00000007");
        assert_eq!(t.len(), 32);
        assert!(t.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(t, trace_id("20261202T072408-00000007"));
        assert_ne!(t, trace_id("20261202T072408-00000008"));
        assert_eq!(span_id("a-1").len(), 16);
        assert_ne!(span_id("a-1"), span_id("a-2"));
        // Fixed values: a release that changed them would split a run's
        // spans across two traces in a collector that saw both exports.
        assert_eq!(span_id(""), "cbf29ce484222325");
    }

    /// Hex pairs read by hand, not by the library under test.
    fn bytes(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn ids_follow_the_otlp_json_hex_encoding_of_the_spec_example() {
        use opentelemetry_proto::tonic::trace::v1::Span;
        // The ids of the span in opentelemetry-proto's examples/trace.json:
        // hex, not base64 as protobuf's generic JSON mapping would have it.
        let spec: Span = serde_json::from_str(
            r#"{"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174",
                "parentSpanId": "EEE19B7EC3C1B173", "name": "I'm a server span",
                "startTimeUnixNano": "1544712660000000000", "endTimeUnixNano": "1544712661000000000",
                "kind": 2}"#,
        )
        .unwrap();
        assert_eq!(spec.trace_id, bytes("5B8EFFF798038103D269B633813FC60C"));
        assert_eq!(spec.trace_id.len(), 16);
        assert_eq!(spec.span_id, bytes("EEE19B7EC3C1B174"));
        assert_eq!(spec.start_time_unix_nano, 1_544_712_660_000_000_000);
        // Ours decode to the bytes we meant.
        let t = trace_id("run");
        let s = span_id("e-1");
        let ours: Span = serde_json::from_value(json!({
            "traceId": t, "spanId": s, "name": "x", "kind": 1,
            "startTimeUnixNano": "1", "endTimeUnixNano": "2",
        }))
        .unwrap();
        assert_eq!(ours.trace_id, bytes(&t));
        assert_eq!(ours.span_id, fnv(b"e-1", 0).to_be_bytes());
    }

    #[test]
    fn integers_are_strings_and_nulls_are_left_out() {
        assert_eq!(any(&json!(3)), Some(json!({"intValue": "3"})));
        assert_eq!(any(&json!(0.5)), Some(json!({"doubleValue": 0.5})));
        assert_eq!(any(&Value::Null), None);
        assert_eq!(
            any(&json!(["stop"])),
            Some(json!({"arrayValue": {"values": [{"stringValue": "stop"}]}}))
        );
    }
}
