//! A run as OpenTelemetry spans, in the OTLP/JSON encoding.
//!
//! The tools people already read agent runs with (Jaeger, Langfuse, Phoenix)
//! read OpenTelemetry traces, so `ooda export --otlp` turns the trace tree
//! (`report/trace/`) into spans rather than inventing a format. The names and
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

mod content;
#[cfg(test)]
mod conventions;
mod data;
mod json;
mod live;
mod proto;
mod send;

pub(crate) use content::Detail;
pub(crate) use data::{Attr, Batch, KeyValue, Span, SpanEvent, SpanKind};
pub(crate) use live::Live;
pub(crate) use send::{Accepted, Endpoint, PostError, Poster};

use serde_json::Value;

use crate::model::{Grade, Judgement};
use crate::report::trace::{Kind, Node, Status};

/// One batch as a line of the OTLP File Exporter format (OTLP/JSON).
pub(crate) fn encode_json(b: &Batch) -> String {
    json::encode(b)
}

/// The trace id of the run `run` is the root of.
fn trace_of(run: &Node) -> [u8; 16] {
    trace_id(run.attribute("run_id").unwrap_or(&run.id))
}

/// What every span of a run is made with: the run's trace id, its
/// judges' verdicts (on the run's span and on each iteration's), and what
/// the export adds.
struct Ctx<'a> {
    trace: [u8; 16],
    judgements: Vec<Judgement>,
    detail: &'a Detail,
}

impl<'a> Ctx<'a> {
    fn of(run: &Node, detail: &'a Detail) -> Ctx<'a> {
        let judgements = run
            .attributes
            .get("judgements")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect();
        Ctx {
            trace: trace_of(run),
            judgements,
            detail,
        }
    }
}

/// One iteration's spans (and everything below), parented to the run.
pub(crate) fn iteration_batch(run: &Node, iteration: &Node, detail: &Detail) -> Batch {
    let ctx = Ctx::of(run, detail);
    let mut spans = Vec::new();
    collect(&ctx, iteration, None, span_id(&run.id), &mut spans);
    batch(run, spans, detail)
}

/// The run's own span, with what it holds outside any iteration (the
/// synthesizer's notes at the stop, a confirmation after a resume).
pub(crate) fn run_batch(run: &Node, detail: &Detail) -> Batch {
    let ctx = Ctx::of(run, detail);
    let mut spans = vec![span(&ctx, run, None, None)];
    for c in run.children.iter().filter(|c| c.kind != Kind::Iteration) {
        collect(&ctx, c, None, span_id(&run.id), &mut spans);
    }
    batch(run, spans, detail)
}

/// `n` and everything below it; `call` is the agent call above, whose
/// files hold the content of its requests.
fn collect(ctx: &Ctx, n: &Node, call: Option<&Node>, parent: [u8; 8], out: &mut Vec<Span>) {
    out.push(span(ctx, n, call, Some(parent)));
    let me = span_id(&n.id);
    let call = if n.kind == Kind::AgentCall {
        Some(n)
    } else {
        call
    };
    for c in &n.children {
        collect(ctx, c, call, me, out);
    }
}

fn batch(run: &Node, spans: Vec<Span>, detail: &Detail) -> Batch {
    let mut resource = vec![
        ("service.name".to_string(), Attr::Str("ooda".into())),
        (
            "service.version".to_string(),
            Attr::Str(env!("CARGO_PKG_VERSION").into()),
        ),
    ];
    if let Some(b) = run.attribute("brief") {
        resource.push(("ooda.brief".to_string(), Attr::Str(b.into())));
    }
    // The user's own (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) win.
    for (k, v) in &detail.resource {
        resource.retain(|(have, _)| have != k);
        resource.push((k.clone(), Attr::Str(v.clone())));
    }
    Batch {
        resource,
        scope_name: "ooda".into(),
        scope_version: env!("CARGO_PKG_VERSION").into(),
        spans,
    }
}

fn nanos(t: chrono::DateTime<chrono::Utc>) -> u64 {
    t.timestamp_nanos_opt().unwrap_or_default().max(0) as u64
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

/// The model an agent CLI was asked for, from its command line, for logs
/// whose call does not say: `--model X` or `--model=X`, and `-m X` only for
/// the CLIs where `-m` is the model (Codex, Gemini CLI; aider's `-m` is a
/// message, Python's a module). A value ooda did not see (`"$OODA_MODEL"`,
/// set by the shell) is no model.
fn requested_model(command: &str, profile: &str) -> Option<String> {
    let words: Vec<&str> = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .collect();
    let short = matches!(profile, "codex" | "gemini");
    words
        .iter()
        .enumerate()
        .find_map(|(i, w)| {
            if let Some(m) = w.strip_prefix("--model=") {
                return Some(m);
            }
            (*w == "--model" || (short && *w == "-m"))
                .then(|| words.get(i + 1).copied())
                .flatten()
        })
        .filter(|m| !m.is_empty() && !m.starts_with('-') && !m.contains('$'))
        .map(str::to_string)
}

/// A judge's grade as a score: pass 1, warn 0.5, fail 0.
fn score(g: Grade) -> f64 {
    match g {
        Grade::Pass => 1.0,
        Grade::Warn => 0.5,
        Grade::Fail => 0.0,
    }
}

/// `gen_ai.evaluation.result`: one judge's verdict on the span's work.
fn evaluation(at: u64, judge: &str, grade: Grade, why: &str) -> SpanEvent {
    SpanEvent {
        time_unix_nano: at,
        name: "gen_ai.evaluation.result".into(),
        attributes: vec![
            ("gen_ai.evaluation.name".into(), Attr::Str(judge.into())),
            (
                "gen_ai.evaluation.score.label".into(),
                Attr::Str(grade.as_str().into()),
            ),
            (
                "gen_ai.evaluation.score.value".into(),
                Attr::Double(score(grade)),
            ),
            (
                "gen_ai.evaluation.explanation".into(),
                Attr::Str(why.into()),
            ),
        ],
    }
}

fn span(ctx: &Ctx, n: &Node, call: Option<&Node>, parent: Option<[u8; 8]>) -> Span {
    let mut attrs: Vec<KeyValue> = Vec::new();
    let mut put = |k: &str, v: Value| {
        if let Some(a) = Attr::from_json(&v) {
            attrs.push((k.to_string(), a));
        }
    };
    let a = |k: &str| n.attributes.get(k).cloned().unwrap_or(Value::Null);
    let json_text = |v: Option<Value>| {
        v.map(|v| Value::String(v.to_string()))
            .unwrap_or(Value::Null)
    };
    let (name, kind) = match n.kind {
        Kind::Run => {
            let brief = n.attribute("brief").unwrap_or("ooda").to_string();
            put("gen_ai.operation.name", "invoke_workflow".into());
            // The Brief names the workflow: a backend's list of runs tells
            // one Brief's nights from another's. The conventions' newer
            // releases name a workflow by `gen_ai.agent.name`.
            put("gen_ai.workflow.name", brief.clone().into());
            put("gen_ai.agent.name", brief.clone().into());
            put("ooda.run_id", a("run_id"));
            put("ooda.start_commit", a("start_commit"));
            put("ooda.seed", a("seed"));
            put("ooda.stop_reason", n.verdict.clone().into());
            // The headline the run stopped with (report/headline.rs).
            put("ooda.result", a("result"));
            put("ooda.result.kind", a("result_kind"));
            put("ooda.result.gain", a("gain"));
            put("ooda.result.gain_ci_low", a("gain_ci_low"));
            put("ooda.result.gain_ci_high", a("gain_ci_high"));
            (format!("invoke_workflow {brief}"), SpanKind::Internal)
        }
        Kind::Iteration => {
            put("ooda.iteration", n.iteration.into());
            put("ooda.verdict", n.verdict.clone().into());
            put("ooda.hypothesis", a("hypothesis"));
            put("ooda.change", a("change"));
            put("ooda.predicted_effect", a("predicted_effect"));
            put("ooda.reason", a("reason"));
            (n.name.clone(), SpanKind::Internal)
        }
        Kind::Phase => {
            // PLAN is the agent's planning step: the conventions' `plan`.
            if n.name == "plan" {
                put("gen_ai.operation.name", "plan".into());
            }
            put("ooda.phase", n.name.clone().into());
            (n.name.clone(), SpanKind::Internal)
        }
        Kind::Subagent => {
            put("gen_ai.operation.name", "invoke_agent".into());
            put("gen_ai.agent.name", n.name.clone().into());
            put("ooda.subagent.role", a("role"));
            put("ooda.subagent.driver", a("driver"));
            put("ooda.subagent.delegation", a("delegation"));
            put("ooda.verdict", n.verdict.clone().into());
            put("ooda.findings", a("findings"));
            (format!("invoke_agent {}", n.name), SpanKind::Internal)
        }
        Kind::AgentCall => {
            let requests: Vec<&Node> = n
                .children
                .iter()
                .filter(|c| c.kind == Kind::ModelRequest)
                .collect();
            let provider = requests
                .iter()
                .find_map(|c| c.attribute("provider").filter(|p| !p.is_empty()))
                .or_else(|| provider_of(&n.name));
            // An agent CLI is another process, talking to its model: a
            // client call. The llm driver's conversation runs in ooda, its
            // requests are the client spans (even a call that failed
            // before its first request: its command line says `llm`).
            let cli = requests.is_empty()
                && !n
                    .attribute("command")
                    .is_some_and(|c| c.starts_with("llm: "));
            let requested = n
                .attribute("requested_model")
                .map(str::to_string)
                .or_else(|| {
                    requests
                        .iter()
                        .find_map(|c| c.attribute("model"))
                        .map(str::to_string)
                })
                .or_else(|| {
                    cli.then(|| requested_model(n.attribute("command")?, &n.name))
                        .flatten()
                });
            put("gen_ai.operation.name", "invoke_agent".into());
            put("gen_ai.agent.name", n.name.clone().into());
            put("gen_ai.provider.name", provider.into());
            put("gen_ai.request.model", requested.into());
            put("gen_ai.response.model", a("model"));
            put("ooda.phase", a("phase"));
            put("ooda.attempt", a("attempt"));
            put("ooda.command", a("command"));
            put("ooda.outcome", n.verdict.clone().into());
            let (input, output) = ctx
                .detail
                .agent_messages(n.attribute("files").unwrap_or_default());
            put("gen_ai.input.messages", json_text(input));
            put("gen_ai.output.messages", json_text(output));
            let kind = match cli {
                true => SpanKind::Client,
                false => SpanKind::Internal,
            };
            (format!("invoke_agent {}", n.name), kind)
        }
        Kind::ModelRequest => {
            put("gen_ai.operation.name", "chat".into());
            put("gen_ai.provider.name", a("provider"));
            put("gen_ai.request.model", a("model"));
            put("gen_ai.response.model", a("response_model"));
            if let Some(f) = n.attribute("finish_reason").filter(|f| !f.is_empty()) {
                put("gen_ai.response.finish_reasons", serde_json::json!([f]));
            }
            put("ooda.request", a("request"));
            put("ooda.tries", a("tries"));
            if let (Some(call), Some(request)) = (call, a("request").as_u64()) {
                let (input, output) = ctx
                    .detail
                    .request_messages(call.attribute("files").unwrap_or_default(), request);
                put("gen_ai.input.messages", json_text(input));
                put("gen_ai.output.messages", json_text(output));
            }
            (n.name.clone(), SpanKind::Client)
        }
        Kind::ToolCall => {
            put("gen_ai.operation.name", "execute_tool".into());
            put("gen_ai.tool.name", n.name.clone().into());
            put("gen_ai.tool.call.id", a("tool_call_id"));
            put("gen_ai.tool.type", "function".into());
            // Opt-in: arguments hold code and paths.
            put(
                "gen_ai.tool.call.arguments",
                ctx.detail.arguments(n.attribute("arguments")).into(),
            );
            put("ooda.stored", a("stored"));
            (format!("execute_tool {}", n.name), SpanKind::Internal)
        }
        Kind::Command => {
            put("ooda.command.role", n.name.clone().into());
            put("ooda.command", a("command"));
            put("ooda.worktree", a("worktree"));
            put("ooda.outcome", n.verdict.clone().into());
            put("process.exit.code", a("exit_code"));
            (format!("command {}", n.name), SpanKind::Internal)
        }
        Kind::Confirmation => {
            put("ooda.effect", a("effect"));
            put("ooda.ci", a("ci"));
            put("ooda.pairs", a("pairs"));
            (n.name.clone(), SpanKind::Internal)
        }
    };
    // `gen_ai.usage.*` only where the tokens were spent — a model request,
    // or an agent call ooda saw no requests of (a CLI) — so a backend that
    // sums them over a trace counts each token once; what a phase or an
    // iteration spent in all is under `ooda.usage.*`. Only what the tool
    // reported: a call that reported nothing has no usage attribute (not
    // a zero), and the cache and reasoning parts only when counted.
    let spent_here = match n.kind {
        Kind::ModelRequest => true,
        Kind::AgentCall => !n.children.iter().any(|c| c.kind == Kind::ModelRequest),
        _ => false,
    };
    let u = &n.usage;
    let some = |x: u64| (x > 0).then_some(x);
    if spent_here && !u.is_empty() {
        put("gen_ai.usage.input_tokens", u.input.into());
        put("gen_ai.usage.output_tokens", u.output.into());
        put(
            "gen_ai.usage.cache_read.input_tokens",
            some(u.cached).into(),
        );
        put(
            "gen_ai.usage.cache_creation.input_tokens",
            some(u.cache_write).into(),
        );
        put(
            "gen_ai.usage.reasoning.output_tokens",
            some(u.reasoning).into(),
        );
        put("ooda.cost_usd", u.cost_usd.into());
    } else if !spent_here && !u.is_empty() {
        put("ooda.usage.input_tokens", u.input.into());
        put("ooda.usage.output_tokens", u.output.into());
        put("ooda.usage.cache_read.input_tokens", u.cached.into());
        put("ooda.usage.cost_usd", u.cost_usd.into());
    }
    let error = match n.status {
        Status::Failed => {
            put(
                "error.type",
                n.verdict.clone().unwrap_or_else(|| "failed".into()).into(),
            );
            Some(n.error.clone().unwrap_or_default())
        }
        Status::Cancelled => {
            put("error.type", "cancelled".into());
            Some("interrupted".to_string())
        }
        Status::Ok | Status::Unfinished => None,
    };
    if n.status == Status::Unfinished {
        put("ooda.unfinished", true.into());
    }
    let start = nanos(n.start);
    let end = nanos(n.end.unwrap_or(n.start)).max(start);
    let mut events: Vec<SpanEvent> = n
        .notes
        .iter()
        .map(|note| SpanEvent {
            time_unix_nano: nanos(note.at),
            name: note.kind.clone(),
            attributes: vec![("ooda.text".to_string(), Attr::Str(note.text.clone()))],
        })
        .collect();
    // The judges' verdicts on what this span did: the run as a whole, or
    // one iteration.
    for j in &ctx.judgements {
        match n.kind {
            Kind::Run => events.push(evaluation(end, &j.judge, j.grade, &j.why)),
            Kind::Iteration => {
                for it in j
                    .iterations
                    .iter()
                    .filter(|i| Some(i.iteration) == n.iteration)
                {
                    events.push(evaluation(end, &j.judge, it.grade, &it.why));
                }
            }
            _ => {}
        }
    }
    Span {
        trace_id: ctx.trace,
        span_id: span_id(&n.id),
        parent_span_id: parent,
        name,
        kind,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: attrs,
        events,
        error,
    }
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

/// The run's trace id: 16 bytes derived from its run id.
pub(crate) fn trace_id(run_id: &str) -> [u8; 16] {
    let mut id = [0; 16];
    id[..8].copy_from_slice(&fnv(run_id.as_bytes(), 0x7472_6163).to_be_bytes());
    id[8..].copy_from_slice(&fnv(run_id.as_bytes(), 0x6f6f_6461).to_be_bytes());
    id
}

/// A span id: 8 bytes derived from the event id that opened the node.
pub(crate) fn span_id(event_id: &str) -> [u8; 8] {
    fnv(event_id.as_bytes(), 0).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requested_model_is_read_only_where_the_flag_means_a_model() {
        let r = |c: &str, p: &str| requested_model(c, p);
        assert_eq!(
            r("claude -p --model claude-sonnet-4-5", "claude").as_deref(),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            r("codex exec -m gpt-5 --json", "codex").as_deref(),
            Some("gpt-5")
        );
        assert_eq!(r("aider --model=o3 --yes", "aider").as_deref(), Some("o3"));
        // What the shell fills in, aider's message, Python's module: none.
        assert_eq!(r("claude --model \"$OODA_MODEL\"", "claude"), None);
        assert_eq!(r("aider -m 'fix it' --yes", "aider"), None);
        assert_eq!(r("python -m tool", "tool"), None);
        assert_eq!(r("claude -p", "claude"), None);
    }

    #[test]
    fn ids_are_stable_distinct_and_never_zero() {
        let t = trace_id("20261202T072408-00000007");
        assert_eq!(t, trace_id("20261202T072408-00000007"));
        assert_ne!(t, trace_id("20261202T072408-00000008"));
        assert_ne!(span_id("a-1"), span_id("a-2"));
        assert_ne!(span_id("a-1"), [0; 8]);
        // Fixed values: a release that changed them would split a run's
        // spans across two traces in a collector that saw both exports.
        assert_eq!(span_id(""), 0xcbf2_9ce4_8422_2325_u64.to_be_bytes());
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
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::trace::v1::Span as ProtoSpan;
        // The ids of the span in opentelemetry-proto's examples/trace.json:
        // hex, not base64 as protobuf's generic JSON mapping would have it.
        let spec: ProtoSpan = serde_json::from_str(
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
        // Ours, written the same way, read back as the bytes we meant.
        let b = Batch {
            resource: vec![],
            scope_name: "ooda".into(),
            scope_version: "1".into(),
            spans: vec![Span {
                trace_id: trace_id("run"),
                span_id: span_id("e-1"),
                parent_span_id: Some(span_id("e-0")),
                name: "x".into(),
                kind: SpanKind::Internal,
                start_time_unix_nano: 1,
                end_time_unix_nano: 2,
                attributes: vec![("n".into(), Attr::Int(1 << 40))],
                events: vec![],
                error: None,
            }],
        };
        let line = json::encode(&b);
        let req: ExportTraceServiceRequest = serde_json::from_str(&line).unwrap();
        let s = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.trace_id, trace_id("run"));
        assert_eq!(s.span_id, span_id("e-1"));
        assert_eq!(s.parent_span_id, span_id("e-0"));
        let hex: String = trace_id("run").iter().map(|b| format!("{b:02x}")).collect();
        assert!(line.contains(&format!("\"traceId\":\"{hex}\"")), "{line}");
    }
}
