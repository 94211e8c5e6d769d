//! The export checked against the GenAI semantic conventions: a night's
//! log of every kind of span is exported, the protobuf is decoded with the
//! official generated types, and each span is held to the conventions'
//! table for its operation (span kind, required and conditional
//! attributes, opt-in attributes off by default) and every `gen_ai.*`
//! attribute to the registry's type for it.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span as Proto;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind as ProtoKind;
use prost::Message;

use super::{Detail, iteration_batch, proto, run_batch};
use crate::events::{Event, Span as Log, read_all};
use crate::model::{CallOutcome, Grade, JudgedIteration, Judgement, Phase, Verdict};
use crate::report::trace::build;

/// The registry's type of each `gen_ai.*` attribute ooda writes (the
/// attribute registry of the GenAI conventions).
const REGISTRY: &[(&str, &str)] = &[
    ("gen_ai.operation.name", "string"),
    ("gen_ai.provider.name", "string"),
    ("gen_ai.agent.name", "string"),
    ("gen_ai.workflow.name", "string"),
    ("gen_ai.request.model", "string"),
    ("gen_ai.response.model", "string"),
    ("gen_ai.response.finish_reasons", "string[]"),
    ("gen_ai.usage.input_tokens", "int"),
    ("gen_ai.usage.output_tokens", "int"),
    ("gen_ai.usage.cache_read.input_tokens", "int"),
    ("gen_ai.usage.cache_creation.input_tokens", "int"),
    ("gen_ai.usage.reasoning.output_tokens", "int"),
    ("gen_ai.tool.name", "string"),
    ("gen_ai.tool.call.id", "string"),
    ("gen_ai.tool.type", "string"),
    // `any` in the registry; a JSON string on the wire, as OTLP backends
    // read structured content from attributes.
    ("gen_ai.tool.call.arguments", "string"),
    ("gen_ai.input.messages", "string"),
    ("gen_ai.output.messages", "string"),
    ("gen_ai.evaluation.name", "string"),
    ("gen_ai.evaluation.score.label", "string"),
    ("gen_ai.evaluation.score.value", "double"),
    ("gen_ai.evaluation.explanation", "string"),
];

/// One row of a span table: the operation, the span kind the conventions
/// say, the attributes a span of it must carry here, and the opt-in ones
/// that must be absent unless content capture is on.
struct Row {
    span: &'static str,
    operation: Option<&'static str>,
    kind: ProtoKind,
    required: &'static [&'static str],
    opt_in: &'static [&'static str],
}

const MESSAGES: &[&str] = &["gen_ai.input.messages", "gen_ai.output.messages"];

const TABLE: &[Row] = &[
    // Invoke workflow: INTERNAL, named by the workflow.
    Row {
        span: "invoke_workflow latency",
        operation: Some("invoke_workflow"),
        kind: ProtoKind::Internal,
        required: &["gen_ai.workflow.name"],
        opt_in: &[],
    },
    // Plan: INTERNAL, operation `plan`.
    Row {
        span: "plan",
        operation: Some("plan"),
        kind: ProtoKind::Internal,
        required: &[],
        opt_in: &[],
    },
    // Invoke agent over a remote service (an agent CLI): CLIENT, provider
    // required, request model when available, usage recommended.
    Row {
        span: "invoke_agent claude",
        operation: Some("invoke_agent"),
        kind: ProtoKind::Client,
        required: &[
            "gen_ai.provider.name",
            "gen_ai.agent.name",
            "gen_ai.request.model",
            "gen_ai.response.model",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.reasoning.output_tokens",
        ],
        opt_in: MESSAGES,
    },
    // The llm driver's conversation runs in ooda: INTERNAL; its requests
    // are the client spans.
    Row {
        span: "invoke_agent llm",
        operation: Some("invoke_agent"),
        kind: ProtoKind::Internal,
        required: &["gen_ai.agent.name", "gen_ai.request.model"],
        opt_in: MESSAGES,
    },
    // Inference: CLIENT, provider and request model.
    Row {
        span: "chat gpt-4o-mini",
        operation: Some("chat"),
        kind: ProtoKind::Client,
        required: &[
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "gen_ai.response.model",
            "gen_ai.response.finish_reasons",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.reasoning.output_tokens",
        ],
        opt_in: MESSAGES,
    },
    // Execute tool: INTERNAL, the tool's name; arguments opt-in.
    Row {
        span: "execute_tool read_file",
        operation: Some("execute_tool"),
        kind: ProtoKind::Internal,
        required: &[
            "gen_ai.tool.name",
            "gen_ai.tool.call.id",
            "gen_ai.tool.type",
        ],
        opt_in: &["gen_ai.tool.call.arguments"],
    },
];

fn call(log: &Log, profile: &str, command: &str) -> Log {
    log.child(Event::ModelCall {
        phase: Phase::Plan,
        profile: profile.into(),
        attempt: 1,
        attempts: 3,
        command: command.into(),
        prompt_chars: 10,
        model: None,
    })
    .unwrap()
}

fn result(tokens: (u64, u64, u64, u64, u64), model: Option<&str>, files: &[&str]) -> Event {
    Event::ModelResult {
        phase: Phase::Plan,
        attempt: 1,
        outcome: CallOutcome::Ok,
        exit_code: Some(0),
        seconds: 2.0,
        tokens_in: tokens.0,
        tokens_out: tokens.1,
        cached: tokens.2,
        cache_write: tokens.3,
        reasoning: tokens.4,
        cost_usd: None,
        model: model.map(str::to_string),
        problem: None,
        files: files.iter().map(|f| f.to_string()).collect(),
    }
}

/// A night with every kind of span, in `dir`; its prompt and transcript
/// files beside the log.
fn night(dir: &std::path::Path) -> Vec<crate::report::trace::Node> {
    let root = Log::open(dir, "r1", Vec::new()).unwrap();
    let run = root
        .child(Event::RunStarted {
            brief: "latency".into(),
            start_commit: "abc".into(),
            seed: 1,
        })
        .unwrap();
    let it = run
        .with_iteration(Some(1))
        .child(Event::IterationStarted {
            brief_hash: "h".into(),
        })
        .unwrap();
    let plan = it
        .child(Event::PhaseStarted { phase: Phase::Plan })
        .unwrap();
    // An agent CLI asked for one model, answered by a dated one.
    let c = call(
        &plan,
        "claude",
        "claude -p --model claude-sonnet-4-5 --output-format json",
    );
    c.emit(result(
        (1000, 50, 300, 200, 20),
        Some("claude-sonnet-4-5-20250929"),
        &["artifacts/iter-001/plan.prompt.md"],
    ))
    .unwrap();
    // An agent CLI that reports no usage: no usage attribute at all.
    let quiet = call(&plan, "codex", "codex exec -m gpt-5");
    quiet.emit(result((0, 0, 0, 0, 0), None, &[])).unwrap();
    // The llm driver: a request, a tool call, the answer.
    let l = call(&plan, "llm", "llm: light (gpt-4o-mini)");
    l.emit(Event::ModelRequest {
        request: 1,
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
        messages: 1,
        prompt_chars: 40,
        prompt_tokens_estimate: 10,
    })
    .unwrap();
    l.emit(Event::ModelResponse {
        request: 1,
        model: "gpt-4o-mini-2024-07-18".into(),
        tokens_in: 100,
        tokens_out: 30,
        cached: 0,
        reasoning: 12,
        cache_write: 0,
        latency_seconds: 0.5,
        cost_usd: None,
        finish_reason: "tool_calls".into(),
        tries: 1,
        error: None,
    })
    .unwrap();
    let t = l
        .child(Event::ToolCall {
            tool_call_id: "c1".into(),
            tool: "read_file".into(),
            arguments: r#"{"path":"src/parse.rs"}"#.into(),
            written_as: None,
        })
        .unwrap();
    t.emit(Event::ToolResult {
        tool_call_id: "c1".into(),
        tool: "read_file".into(),
        ok: true,
        chars: 10,
        stored: None,
        error: None,
    })
    .unwrap();
    l.emit(result(
        (100, 30, 0, 0, 12),
        None,
        &[
            "artifacts/iter-001/llm.prompt.md",
            "artifacts/iter-001/llm.transcript.jsonl",
        ],
    ))
    .unwrap();
    plan.emit(Event::PhaseFinished {
        phase: Phase::Plan,
        seconds: 3.0,
    })
    .unwrap();
    let exec = it
        .child(Event::PhaseStarted {
            phase: Phase::Execute,
        })
        .unwrap();
    exec.emit(Event::PhaseFinished {
        phase: Phase::Execute,
        seconds: 1.0,
    })
    .unwrap();
    it.emit(Event::Verdict {
        verdict: Verdict::Keep,
    })
    .unwrap();
    run.emit(Event::Judged {
        judgement: Judgement {
            judge: "skeptic".into(),
            grade: Grade::Warn,
            why: "one keep rests on four pairs".into(),
            iterations: vec![JudgedIteration {
                iteration: 1,
                grade: Grade::Pass,
                why: "the gain was measured".into(),
            }],
        },
    })
    .unwrap();
    let files = dir.join("artifacts/iter-001");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("plan.prompt.md"), "Make p95 lower.").unwrap();
    std::fs::write(files.join("llm.prompt.md"), "Plan.").unwrap();
    std::fs::write(
        files.join("llm.transcript.jsonl"),
        concat!(
            r#"{"speaker":"user","text":"Plan."}"#,
            "\n",
            r#"{"speaker":"assistant","text":"","calls":[{"id":"c1","name":"read_file","arguments":{"path":"src/parse.rs"}}],"request":1}"#,
            "\n"
        ),
    )
    .unwrap();
    build(&read_all(dir).unwrap())
}

/// The night's spans, through the protobuf encoding and back.
fn exported(dir: &std::path::Path, content: bool) -> Vec<Proto> {
    let runs = night(dir);
    let run = &runs[0];
    let detail = Detail {
        content,
        dir: Some(dir.to_path_buf()),
        ..Detail::default()
    };
    let mut batches = vec![run_batch(run, &detail)];
    for it in run.children.iter().filter(|c| c.iteration.is_some()) {
        batches.push(iteration_batch(run, it, &detail));
    }
    let mut spans = Vec::new();
    for b in batches {
        let req = ExportTraceServiceRequest::decode(proto::encode(&b).as_slice()).unwrap();
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    spans
}

fn kvs(list: &[KeyValue]) -> BTreeMap<String, Any> {
    list.iter()
        .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?.value?)))
        .collect()
}

fn attrs(s: &Proto) -> BTreeMap<String, Any> {
    kvs(&s.attributes)
}

fn type_of(v: &Any) -> &'static str {
    match v {
        Any::StringValue(_) => "string",
        Any::IntValue(_) => "int",
        Any::DoubleValue(_) => "double",
        Any::BoolValue(_) => "boolean",
        Any::ArrayValue(a) => match a.values.first().and_then(|v| v.value.as_ref()) {
            Some(Any::StringValue(_)) | None => "string[]",
            Some(_) => "array",
        },
        _ => "other",
    }
}

fn str_of(v: Option<&Any>) -> Option<&str> {
    match v {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

#[test]
fn every_span_follows_its_row_of_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let spans = exported(dir.path(), false);
    let by_name = |n: &str| {
        spans.iter().find(|s| s.name == n).unwrap_or_else(|| {
            panic!(
                "no span {n} in {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
    };
    for row in TABLE {
        let s = by_name(row.span);
        let a = attrs(s);
        assert_eq!(s.kind, row.kind as i32, "{}: span kind", row.span);
        assert_eq!(
            str_of(a.get("gen_ai.operation.name")),
            row.operation,
            "{}",
            row.span
        );
        for k in row.required {
            assert!(a.contains_key(*k), "{}: {k} missing from {a:?}", row.span);
        }
        for k in row.opt_in {
            assert!(!a.contains_key(*k), "{}: {k} is opt-in", row.span);
        }
    }
    // Every gen_ai attribute anywhere has the registry's name and type.
    for s in &spans {
        let events = s.events.iter().flat_map(|e| kvs(&e.attributes));
        for (k, v) in attrs(s).into_iter().chain(events) {
            if !k.starts_with("gen_ai.") {
                continue;
            }
            let want = REGISTRY
                .iter()
                .find(|(n, _)| *n == k)
                .unwrap_or_else(|| panic!("{}: {k} is not in the registry", s.name));
            assert_eq!(type_of(&v), want.1, "{}: {k}", s.name);
        }
    }
    let claude = attrs(by_name("invoke_agent claude"));
    // The model asked for, and the one that answered.
    assert_eq!(
        str_of(claude.get("gen_ai.request.model")),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(
        str_of(claude.get("gen_ai.response.model")),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        str_of(claude.get("gen_ai.provider.name")),
        Some("anthropic")
    );
    assert!(matches!(
        claude.get("gen_ai.usage.cache_creation.input_tokens"),
        Some(Any::IntValue(200))
    ));
    // A call that reported nothing carries no usage, not a zero.
    let codex = attrs(by_name("invoke_agent codex"));
    assert_eq!(str_of(codex.get("gen_ai.request.model")), Some("gpt-5"));
    assert!(!codex.keys().any(|k| k.contains("usage")), "{codex:?}");
    // EXECUTE is not a planning step.
    assert!(!attrs(by_name("execute")).contains_key("gen_ai.operation.name"));
    // The judge's verdicts: on the run, and on the iteration it graded.
    let eval = |s: &Proto| -> Vec<BTreeMap<String, Any>> {
        s.events
            .iter()
            .filter(|e| e.name == "gen_ai.evaluation.result")
            .map(|e| kvs(&e.attributes))
            .collect()
    };
    let run = eval(by_name("invoke_workflow latency"));
    assert_eq!(run.len(), 1);
    assert_eq!(
        str_of(run[0].get("gen_ai.evaluation.name")),
        Some("skeptic")
    );
    assert_eq!(
        str_of(run[0].get("gen_ai.evaluation.score.label")),
        Some("warn")
    );
    assert!(
        matches!(run[0].get("gen_ai.evaluation.score.value"), Some(Any::DoubleValue(v)) if *v == 0.5)
    );
    let it = eval(by_name("iteration 1"));
    assert_eq!(it.len(), 1);
    assert_eq!(
        str_of(it[0].get("gen_ai.evaluation.score.label")),
        Some("pass")
    );
}

#[test]
fn content_and_arguments_appear_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let spans = exported(dir.path(), true);
    let by_name = |n: &str| attrs(spans.iter().find(|s| s.name == n).unwrap());
    let claude = by_name("invoke_agent claude");
    let input: serde_json::Value =
        serde_json::from_str(str_of(claude.get("gen_ai.input.messages")).unwrap()).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["content"], "Make p95 lower.");
    let chat = by_name("chat gpt-4o-mini");
    let input: serde_json::Value =
        serde_json::from_str(str_of(chat.get("gen_ai.input.messages")).unwrap()).unwrap();
    assert_eq!(input[0]["parts"][0]["content"], "Plan.");
    let output: serde_json::Value =
        serde_json::from_str(str_of(chat.get("gen_ai.output.messages")).unwrap()).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["parts"][0]["type"], "tool_call");
    let tool = by_name("execute_tool read_file");
    assert_eq!(
        str_of(tool.get("gen_ai.tool.call.arguments")),
        Some(r#"{"path":"src/parse.rs"}"#)
    );
}
