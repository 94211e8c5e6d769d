//! Seeing a night from outside: spans sent to a collector while the loop
//! runs, and a collector that fails without the loop noticing.

use std::collections::BTreeSet;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::test::{LANDSCAPE, Test, bench_after, knob_brief, runtime};

fn night() -> Test {
    let t = Test::new();
    t.brief("b", &knob_brief("budget: { iterations: 2 }\n"));
    t.commit("a Brief");
    t
}

#[test]
fn with_an_otlp_endpoint_each_iteration_reaches_the_collector_as_it_ends() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/traces"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server),
    );
    let t = night();
    // The collector and its credentials are ooda's: a benchmark (or an
    // agent) that is handed them fails the night here.
    t.script(
        "bench.sh",
        &bench_after(
            "env | grep -q '^OTEL_EXPORTER_OTLP_' && { echo 'handed the collector' >&2; exit 7; }\n",
            LANDSCAPE,
            0.01,
        ),
    );
    t.commit("a benchmark that checks its environment");
    t.ooda_env(
        &["run", "b"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &server.uri()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=night%20shift"),
        ],
    )
    .expect(4);
    assert_eq!(t.iterations("b"), vec![0, 1, 2]);
    let received = rt.block_on(server.received_requests()).unwrap();
    // The baseline, iterations 1 and 2, then the run's span at the stop.
    assert_eq!(received.len(), 4, "{received:?}");
    let mut spans: Vec<Span> = Vec::new();
    for r in &received {
        assert_eq!(
            r.headers.get("content-type").unwrap(),
            "application/x-protobuf"
        );
        assert_eq!(r.headers.get("x-team").unwrap(), "night shift");
        let req = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("OTLP protobuf");
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "iteration 0",
        "iteration 1",
        "iteration 2",
        "invoke_workflow b",
    ] {
        assert_eq!(
            names.iter().filter(|n| **n == want).count(),
            1,
            "{want} in {names:?}"
        );
    }
    // The run's span goes last, at the stop, with what the run holds
    // outside its iterations (the synthesizer's notes at the stop).
    let last = ExportTraceServiceRequest::decode(received[3].body.as_slice()).unwrap();
    assert_eq!(
        last.resource_spans[0].scope_spans[0].spans[0].name,
        "invoke_workflow b"
    );
    let traces: BTreeSet<&Vec<u8>> = spans.iter().map(|s| &s.trace_id).collect();
    assert_eq!(traces.len(), 1);
    let ids: BTreeSet<&Vec<u8>> = spans.iter().map(|s| &s.span_id).collect();
    assert_eq!(ids.len(), spans.len(), "no span was sent twice");
    for s in &spans {
        assert!(
            s.parent_span_id.is_empty() || ids.contains(&s.parent_span_id),
            "{}",
            s.name
        );
    }
    // What went live is what the file export holds, span for span.
    let file = t.ooda(&["export", "b", "--otlp", "-"]).expect(0).stdout;
    let mut exported = BTreeSet::new();
    for line in file.lines() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        for s in &req.resource_spans[0].scope_spans[0].spans {
            assert!(ids.contains(&s.span_id), "{} was not sent", s.name);
            exported.insert(s.span_id.clone());
        }
    }
    assert_eq!(exported.len(), ids.len());
}

/// A collector that takes OTLP protobuf and nothing else, as Phoenix does:
/// JSON gets 415, a body that does not decode gets 400.
struct ProtobufOnly;

impl wiremock::Respond for ProtobufOnly {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        if req.headers.get("content-type").map(|v| v.as_bytes()) != Some(b"application/x-protobuf")
        {
            return ResponseTemplate::new(415);
        }
        match ExportTraceServiceRequest::decode(body_of(req).as_slice()) {
            Ok(_) => ResponseTemplate::new(200),
            Err(_) => ResponseTemplate::new(400),
        }
    }
}

/// `server` forgets what it received and was told, then takes OTLP
/// protobuf at /v1/traces, as Phoenix does.
fn take_protobuf(rt: &tokio::runtime::Runtime, server: &MockServer) {
    rt.block_on(async {
        server.reset().await;
        Mock::given(method("POST"))
            .and(path("/v1/traces"))
            .respond_with(ProtobufOnly)
            .mount(server)
            .await;
    });
}

/// A request's body, gunzipped when it says it is gzip.
fn body_of(req: &wiremock::Request) -> Vec<u8> {
    let gz = req
        .headers
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() == b"gzip");
    if !gz {
        return req.body.clone();
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(req.body.as_slice()),
        &mut out,
    )
    .expect("a gzip body");
    out
}

/// The spans a collector took: every 2xx request, decoded.
fn spans_taken(rt: &tokio::runtime::Runtime, server: &MockServer, ok: &[usize]) -> Vec<Span> {
    let received = rt.block_on(server.received_requests()).unwrap();
    let mut spans = Vec::new();
    for (i, r) in received.iter().enumerate() {
        if !ok.contains(&i) {
            continue;
        }
        let req = ExportTraceServiceRequest::decode(body_of(r).as_slice()).unwrap();
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    spans
}

/// The span ids of the file export, one per span.
fn file_export_ids(t: &Test) -> Vec<Vec<u8>> {
    let file = t.ooda(&["export", "b", "--otlp", "-"]).expect(0).stdout;
    let mut ids = Vec::new();
    for line in file.lines() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                ids.extend(ss.spans.into_iter().map(|s| s.span_id));
            }
        }
    }
    ids
}

#[test]
fn a_stored_night_sent_to_a_protobuf_only_collector_arrives_whole() {
    let t = night();
    t.ooda(&["run", "b"]).expect(4);
    let want = file_export_ids(&t);
    assert!(want.len() > 20, "{}", want.len());
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    take_protobuf(&rt, &server);
    // JSON is refused, and the error says what to change.
    let r = t
        .ooda_env(
            &["export", "b", "--otlp-endpoint", &server.uri()],
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
        )
        .expect(1);
    assert!(r.stderr.contains("HTTP 415"), "{}", r.stderr);
    assert!(
        r.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{}",
        r.stderr
    );
    take_protobuf(&rt, &server);
    // A base address gets /v1/traces; gzip when asked.
    let r = t
        .ooda(&[
            "export",
            "b",
            "--otlp-endpoint",
            &server.uri(),
            "--gzip",
            "--json",
        ])
        .expect(0);
    let doc: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(doc["spans"], want.len(), "{doc}");
    let received = rt.block_on(server.received_requests()).unwrap();
    // The run's span, the baseline, iterations 1 and 2: one request each.
    assert_eq!(received.len(), 4);
    assert!(
        received
            .iter()
            .all(|r| r.headers.get("content-encoding").unwrap() == "gzip")
    );
    let got: Vec<Vec<u8>> = spans_taken(&rt, &server, &[0, 1, 2, 3])
        .into_iter()
        .map(|s| s.span_id)
        .collect();
    let (mut a, mut b) = (got.clone(), want.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b, "the same spans as the file export, each once");
    // Sent again: the same ids, so a collector keeps one copy.
    t.ooda(&["export", "b", "--otlp-endpoint", &server.uri()])
        .expect(0);
    let again = rt.block_on(server.received_requests()).unwrap();
    let mut c: Vec<Vec<u8>> = spans_taken(&rt, &server, &[4, 5, 6, 7])
        .into_iter()
        .map(|s| s.span_id)
        .collect();
    c.sort();
    assert_eq!(again.len(), 8);
    assert_eq!(c, b);
}

#[test]
fn an_export_cut_short_by_the_collector_resumes_where_it_stopped() {
    let t = night();
    t.ooda(&["run", "b"]).expect(4);
    let want = file_export_ids(&t);
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    // Busy once (tried again after a second), then two batches taken, then
    // a refusal that no retry mends.
    rt.block_on(async {
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ProtobufOnly)
            .up_to_n_times(2)
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(400).set_body_string("no more today"))
            .with_priority(3)
            .mount(&server)
            .await;
    });
    let r = t
        .ooda(&["export", "b", "--otlp-endpoint", &server.uri()])
        .expect(1);
    assert!(r.stderr.contains("trying again"), "{}", r.stderr);
    assert!(r.stderr.contains("no more today"), "{}", r.stderr);
    // The run's span and the baseline went; iteration 1 did not.
    let resume = format!(
        "ooda export b --otlp-endpoint {}/v1/traces --iterations 1..",
        server.uri()
    );
    assert!(r.stderr.contains(&resume), "{}", r.stderr);
    let first: Vec<Vec<u8>> = spans_taken(&rt, &server, &[1, 2])
        .into_iter()
        .map(|s| s.span_id)
        .collect();
    take_protobuf(&rt, &server);
    let args: Vec<&str> = resume.split(' ').skip(1).collect();
    t.ooda(&args).expect(0);
    let received = rt.block_on(server.received_requests()).unwrap();
    // The run's span again (a parent must be there), then iterations 1, 2.
    assert_eq!(received.len(), 3);
    let mut got: Vec<Vec<u8>> = first;
    got.extend(
        spans_taken(&rt, &server, &[0, 1, 2])
            .into_iter()
            .map(|s| s.span_id),
    );
    let got: BTreeSet<Vec<u8>> = got.into_iter().collect();
    let want: BTreeSet<Vec<u8>> = want.into_iter().collect();
    assert_eq!(got, want, "together, the two exports sent the whole night");
    // A range the log does not hold sends the run's span alone, and says
    // so; a bad one is refused before anything is sent.
    take_protobuf(&rt, &server);
    let none = t
        .ooda(&[
            "export",
            "b",
            "--otlp-endpoint",
            &server.uri(),
            "--iterations",
            "7..",
        ])
        .expect(0);
    assert!(
        none.stderr.contains("none is in the range"),
        "{}",
        none.stderr
    );
    // The command that goes on keeps the range's end and the compression.
    let refusing = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(400))
            .mount(&refusing),
    );
    let r = t
        .ooda(&[
            "export",
            "b",
            "--otlp-endpoint",
            &format!("{}/v1/traces?team=a&x=1", refusing.uri()),
            "--iterations",
            "1..2",
            "--gzip",
        ])
        .expect(1);
    assert!(r.stderr.contains("Nothing was sent"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "ooda export b --otlp-endpoint '{}/v1/traces?team=a&x=1' --iterations 1..2 --gzip",
            refusing.uri()
        )),
        "{}",
        r.stderr
    );
    let only = spans_taken(&rt, &server, &[0]);
    assert!(
        only.iter().all(|s| !s.name.starts_with("iteration")),
        "{:?}",
        only.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let bad = t
        .ooda(&[
            "export",
            "b",
            "--otlp-endpoint",
            &server.uri(),
            "--iterations",
            "5..2",
        ])
        .expect(2);
    assert!(bad.stderr.contains("--iterations 5..2"), "{}", bad.stderr);
}

#[test]
fn a_collector_that_fails_never_stops_the_night() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server),
    );
    let t = night();
    let r = t
        .ooda_env(
            &["run", "b"],
            &[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    &format!("{}/otel", server.uri()),
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ],
        )
        .expect(4);
    assert_eq!(t.iterations("b"), vec![0, 1, 2]);
    assert_eq!(
        r.stderr.matches("could not send spans").count(),
        1,
        "warned once: {}",
        r.stderr
    );
    assert!(r.stderr.contains("HTTP 503"), "{}", r.stderr);
    let received = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(received.len(), 4);
    let body: serde_json::Value = serde_json::from_slice(&received[0].body).unwrap();
    assert!(body["resourceSpans"].is_array(), "{body}");
    // Nothing listens here at all: the same.
    let t = night();
    t.ooda_env(
        &["run", "b"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")],
    )
    .expect(4);
    assert_eq!(t.iterations("b"), vec![0, 1, 2]);
}

/// A script agent that says in its plan which PLAN template it was given.
const TEMPLATE_AGENT: &str = r#"#!/bin/sh
prompt=$(cat)
i=$OODA_ITERATION
case "$prompt" in *TODAY-MARKER*) tpl=new ;; *) tpl=old ;; esac
case "$OODA_PHASE" in
  plan)
    x=$((10 + 7 * i))
    printf '```ooda\n{"hypothesis": "X=%s (template %s)", "change": "X to %s", "cites": [%s], "predicted_effect": 0.05, "predicted_sd": 0.05, "knobs": {"X": %s}}\n```\n' "$x" "$tpl" "$x" "$((i - 1))" "$x"
    ;;
  execute) echo "iteration $i" >> src/lib.txt ;;
  learn) printf '{"next": "go on"}' > "$OODA_OUTPUT_FILE" ;;
esac
"#;

/// Every file of the run's archive but its replays and lock, by content.
fn archive(t: &Test) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(
        dir: &std::path::Path,
        root: &std::path::Path,
        out: &mut std::collections::BTreeMap<String, Vec<u8>>,
    ) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            // The lock file says who holds the Brief (a replay takes it
            // too); it is not part of what was archived.
            if rel == "replays" || rel == ".lock" {
                continue;
            }
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let root = t.path().join("iterations/b");
    let mut out = std::collections::BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

#[test]
fn replay_runs_todays_prompt_beside_the_run_and_compare_lines_the_two_up() {
    let t = Test::new();
    t.script("ooda-agent.sh", TEMPLATE_AGENT);
    t.brief(
        "b",
        &knob_brief("budget: { iterations: 2 }\n").replace("agent: builtin", "agent: script"),
    );
    t.commit("a script agent");
    t.ooda(&["run", "b"]).expect(4);
    assert!(t.record("b", 2).hypothesis.contains("(template old)"));
    // Today's PLAN template differs from the night's.
    t.write(
        "templates/plan.md",
        "TODAY-MARKER plan iteration {{iteration}}.\n\n{{history}}\n",
    );
    let before = t.snapshot();
    let refs = t.ooda_refs();
    let archived = archive(&t);
    let r = t.ooda(&["replay", "b", "2"]).expect(0);
    assert!(
        r.stdout.contains("then  X=24 (template old)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("now   X=24 (template new)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("not measured"), "{}", r.stdout);
    // This project's .gitignore predates replays.
    assert!(
        r.stderr.contains("is not ignored by git; `ooda init` adds"),
        "{}",
        r.stderr
    );
    t.snapshot().assert_same(&before, "ooda replay");
    assert_eq!(t.ooda_refs(), refs, "the run's branch and refs");
    assert!(archive(&t) == archived, "the run's archive changed");
    // The replay is recorded beside the run, with its prompt and its events.
    let replays: Vec<_> = std::fs::read_dir(t.path().join("iterations/b/replays"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(replays.len(), 1);
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(replays[0].join("replay.json")).unwrap())
            .unwrap();
    assert_eq!(rec["iteration"], 2);
    assert_eq!(rec["base"], t.record("b", 2).base);
    assert_eq!(rec["driver"], "command:script");
    assert!(
        std::fs::read_to_string(replays[0].join("artifacts/iter-002/plan.prompt.md"))
            .unwrap()
            .contains("TODAY-MARKER")
    );
    // It saw the archive as iteration 2 did: iteration 1's file, not 2's.
    assert!(replays[0].join("iter-001.md").exists() && !replays[0].join("iter-002.md").exists());

    let c = t.ooda(&["compare", "b", "2", "2r"]).expect(0).stdout;
    assert!(
        c.contains("  A  X=24 (template old)") && c.contains("  B  X=24 (template new)"),
        "{c}"
    );
    // Compared through PLAN, the iteration itself is the same: neither
    // side's later phases, tokens or verdict are held against the other.
    assert!(c.contains("= iteration 2"), "{c}");
    assert!(c.contains("phase plan"), "{c}");
    assert!(
        !c.contains("phase review"),
        "compared through the replay's phases: {c}"
    );
    let j: serde_json::Value = serde_json::from_str(
        &t.ooda(&["compare", "b", "2", "2r", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    let call = j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "agent_call")
        .expect("the PLAN call on both sides");
    assert!(call["a"].is_object() && call["b"].is_object(), "{call}");

    // With --full the change is made and measured, still beside the run.
    let r = t.ooda(&["replay", "b", "2", "--full"]).expect(0);
    assert!(
        r.stdout.contains("now   keep") || r.stdout.contains("now   discard"),
        "{}",
        r.stdout
    );
    t.snapshot().assert_same(&before, "ooda replay --full");
    assert_eq!(t.ooda_refs(), refs);
    assert!(archive(&t) == archived, "the run's archive changed");
    let c = t.ooda(&["compare", "b", "2", "2r"]).expect(0).stdout;
    assert!(c.contains("command metric"), "{c}");
    assert!(c.contains("(command:script, full)"), "{c}");
    // The first replay is still there by its number.
    t.ooda(&["compare", "b", "2r1", "2r2"]).expect(0);
    let bad = t.ooda(&["compare", "b", "2", "1r"]).expect(2);
    assert!(
        bad.stderr
            .contains("iteration 1 of b has not been replayed; `ooda replay b 1` replays it"),
        "{}",
        bad.stderr
    );
    let bad = t.ooda(&["compare", "b", "2", "2r5"]).expect(2);
    assert!(bad.stderr.contains("has 2 replay(s)"), "{}", bad.stderr);
    let bad = t.ooda(&["compare", "b", "2", "latest"]).expect(2);
    assert!(
        bad.stderr.contains("`latest` names no iteration or replay"),
        "{}",
        bad.stderr
    );
    let tr = t.ooda(&["trace", "b", "2r1"]).expect(0).stdout;
    assert!(tr.contains("iteration 2") && tr.contains("plan"), "{tr}");
    assert!(!tr.contains("review"), "a replay runs PLAN only: {tr}");
    // A replay's folder name, as `ls iterations/b/replays` shows it.
    let first = replays[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    t.ooda(&["compare", "b", "2", &first]).expect(0);
    let base = t.ooda(&["replay", "b", "0"]).expect(2);
    assert!(base.stderr.contains("is the baseline"), "{}", base.stderr);
    // While a run of the Brief holds its lock, a replay waits its turn.
    let held = std::fs::File::open(t.path().join("iterations/b/.lock")).unwrap();
    held.lock().unwrap();
    let busy = t.ooda(&["replay", "b", "2"]).expect(5);
    assert!(
        busy.stderr.contains("replay once it stops"),
        "{}",
        busy.stderr
    );
    drop(held);
    // Starting over removes the replay's scratch worktrees with the loop's.
    assert!(t.git(&["worktree", "list"]).contains("replay"));
    t.ooda(&["reset", "b", "--yes"]).expect(0);
    let left = t.git(&["worktree", "list"]);
    assert!(!left.contains(".ooda/worktrees/b/"), "{left}");
}

/// An agent whose PLAN answers with nothing ooda can read, every time.
const MUTE_AGENT: &str = "#!/bin/sh\ncat > /dev/null\necho 'I have nothing to say.'\n";

#[test]
fn anomalies_are_found_on_the_trace_reported_and_can_stop_the_night_with_a_notification() {
    let t = Test::new();
    t.script("ooda-agent.sh", MUTE_AGENT);
    t.script(
        "alert.sh",
        "#!/bin/sh\nenv | grep '^OODA_' | sort > \"$OODA_SUMMARY.alert\"\n",
    );
    t.write(
        "ooda.yaml",
        &format!(
            "{}anomalies:\n  budget_used: 0.5\n  stop_on: [budget_near]\nnotify: ./alert.sh\n",
            crate::test::QUIET_CONFIG
        ),
    );
    t.brief(
        "b",
        &knob_brief("budget: { iterations: 4 }\n").replace("agent: builtin", "agent: script"),
    );
    t.commit("a mute agent");
    let r = t.ooda(&["run", "b"]).expect(3);
    assert!(r.stdout.contains("red_anomaly"), "{}{}", r.stdout, r.stderr);
    // Iteration 2 of 4 used half the budget: the stop came then.
    assert_eq!(t.iterations("b"), vec![0, 1, 2]);
    let ev = t.events("b");
    let found: Vec<&serde_json::Value> =
        ev.iter().filter(|e| e["type"] == "anomaly_found").collect();
    let rules: Vec<&str> = found.iter().map(|e| e["rule"].as_str().unwrap()).collect();
    for rule in ["empty_responses", "repeated_failure", "budget_near"] {
        assert!(rules.contains(&rule), "{rule} not in {rules:?}");
    }
    // Each is logged once, however many CHECKs saw it.
    let keys: std::collections::BTreeSet<&str> = found
        .iter()
        .map(|e| e["fingerprint"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), found.len(), "{rules:?} {keys:?}");
    // The repeated failure points at a node of the trace.
    let rf = found
        .iter()
        .find(|e| e["rule"] == "repeated_failure")
        .unwrap();
    let node = rf["node"].as_str().unwrap();
    assert!(
        ev.iter()
            .any(|e| e["id"] == node && e["type"] == "model_call"),
        "{rf}"
    );
    let summary = t.read("iterations/b/summary.md");
    assert!(
        summary.contains("## Anomalies") && summary.contains("| empty_responses | warn |"),
        "{summary}"
    );
    assert!(summary.contains("## Metrics"), "{summary}");
    // Graded: an agent that never answered fails its iterations' checks,
    // and the run with them.
    assert!(
        summary.contains("## Evaluation\n\nRun: **fail**"),
        "{summary}"
    );
    assert!(
        summary.contains("| fail | no final answer: PLAN's agent ended"),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&t.read("iterations/b/summary.json")).unwrap();
    assert!(
        json["anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["rule"] == "budget_near")
    );
    assert_eq!(
        json["metrics"]["by_phase"]["plan"]["failed"],
        json["metrics"]["by_phase"]["plan"]["calls"]
    );
    // The notify command ran with the facts in its environment.
    let alert = t.read("iterations/b/summary.md.alert");
    assert!(
        alert.contains("OODA_BRIEF=b\n") && alert.contains("OODA_STATUS=RED\n"),
        "{alert}"
    );
    assert!(alert.contains("OODA_STOP_REASON=red_anomaly\n"), "{alert}");
    // The trace shows it on the call.
    let it = rf["iteration"].as_u64().unwrap().to_string();
    let text = t.ooda(&["trace", "b", &it]).expect(0).stdout;
    assert!(text.contains("anomaly repeated_failure (warn)"), "{text}");
}

#[test]
fn a_failing_notify_command_is_logged_and_the_stop_stands() {
    let t = Test::new();
    t.write(
        "ooda.yaml",
        &format!(
            "{}notify: 'echo no route to the webhook >&2; exit 7'\n",
            crate::test::QUIET_CONFIG
        ),
    );
    t.brief("b", &knob_brief("budget: { iterations: 1 }\n"));
    t.commit("a broken notify");
    let r = t.ooda(&["run", "b"]).expect(4);
    assert!(
        r.stderr.contains("the notify command failed"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("no route to the webhook"), "{}", r.stderr);
    assert!(
        t.events("b")
            .iter()
            .any(|e| e["type"] == "anomaly" && e["kind"] == "notify_failed")
    );
}

#[test]
fn task_states_say_which_step_a_night_is_in_and_where_it_stopped() {
    let t = Test::new();
    t.brief("k", &knob_brief(""));
    t.commit("a Brief");
    t.ooda(&["tick", "k"]).expect(0);
    // Killed (SIGKILL) right after EVALUATE: nothing could log an end.
    let r = t.ooda_env(&["tick", "k"], &[("OODA_FAILPOINT", "after:evaluate")]);
    assert_eq!(r.code, -1, "{}", r.stderr);
    let s = t.ooda(&["status", "k", "--tasks"]).expect(0).stdout;
    let line = s
        .lines()
        .find(|l| l.trim_start().starts_with("iteration 1"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        line.contains("running") && line.contains("since") && line.contains("in evaluate"),
        "{s}"
    );
    assert!(s.contains("iteration 0") && s.contains("succeeded"), "{s}");
    assert!(s.contains("last event"), "{s}");
    let tr = t.ooda(&["trace", "k", "1"]).expect(0).stdout;
    assert!(
        tr.starts_with("… iteration 1") && tr.contains("[running]"),
        "{tr}"
    );
    // The next tick resumes it to its end.
    t.ooda(&["tick", "k"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(
        &t.ooda(&["status", "k", "--tasks", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    let tasks = j[0]["tasks"].as_array().unwrap();
    let it1 = tasks
        .iter()
        .find(|x| x["name"] == "iteration 1")
        .expect("iteration 1 is a task");
    assert_eq!(it1["state"], "succeeded", "{it1}");
    // Every delegation of the night ended, and waited-for children were
    // named on their iteration.
    assert!(
        tasks
            .iter()
            .filter(|x| x["kind"] == "delegation")
            .all(|x| x["state"] == "succeeded"),
        "{tasks:?}"
    );
    // The iteration's own states (logged under it, not its delegations'),
    // in order, ending final.
    let id = it1["id"].as_str().unwrap();
    let states: Vec<String> = t
        .events("k")
        .iter()
        .filter(|e| e["type"] == "task_state" && e["parent_id"] == id)
        .filter_map(|e| e["state"].as_str().map(str::to_string))
        .collect();
    for want in ["pending", "planning", "running", "waiting_child"] {
        assert!(states.iter().any(|s| s == want), "{want} in {states:?}");
    }
    assert_eq!(
        states.last().map(String::as_str),
        Some("succeeded"),
        "{states:?}"
    );
    // A keep's synthesizers run after its verdict: it still ends final,
    // like every other iteration of the night.
    for _ in 0..3 {
        t.ooda(&["tick", "k"]).expect(0);
    }
    assert!(
        (1..=4).any(|i| t.record("k", i).verdict == ooda::testing::archive::history::Verdict::Keep),
        "the night kept nothing to test with"
    );
    let j: serde_json::Value = serde_json::from_str(
        &t.ooda(&["status", "k", "--tasks", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    for task in j[0]["tasks"].as_array().unwrap() {
        assert!(
            ["succeeded", "failed", "cancelled"].contains(&task["state"].as_str().unwrap()),
            "{task}"
        );
    }
    // The trace carries the states on their nodes.
    let tr: serde_json::Value =
        serde_json::from_str(&t.ooda(&["trace", "k", "1", "--json"]).expect(0).stdout).unwrap();
    let last = tr["nodes"][0]["states"].as_array().unwrap().last().unwrap();
    assert_eq!(last["state"], "succeeded", "{last}");
}

/// A Claude-format agent (`claude -p --output-format json`'s result line)
/// that plans a new X every iteration, answering in $OODA_OUTPUT_FILE, and
/// reports 100 tokens a step, except 90,000 in iteration 6.
const SPENDING_AGENT: &str = r#"#!/bin/sh
cat > /dev/null
i=$OODA_ITERATION
tokens=100
[ "$i" = 6 ] && tokens=90000
case "$OODA_PHASE" in
  plan)
    x=$((10 + 9 * i))
    printf '{"hypothesis": "X=%s", "change": "X to %s", "cites": [%s], "predicted_effect": 0.05, "predicted_sd": 0.05, "knobs": {"X": %s}}' "$x" "$x" "$((i - 1))" "$x" > "$OODA_OUTPUT_FILE" ;;
  execute) echo "iteration $i" >> src/lib.txt ;;
  learn) printf '{"next": "go on"}' > "$OODA_OUTPUT_FILE" ;;
esac
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.001,"usage":{"input_tokens":%s,"output_tokens":1}}\n' "$tokens"
"#;

#[test]
fn a_step_far_above_the_run_s_median_in_tokens_is_a_token_spike() {
    let t = Test::new();
    t.script("spend.sh", SPENDING_AGENT);
    t.write(
        "ooda.yaml",
        &format!(
            "{}agents:\n  spender: {{command: [./spend.sh], prompt: stdin, format: claude-json, timeout: 20s}}\n",
            crate::test::QUIET_CONFIG
        ),
    );
    t.brief(
        "b",
        &knob_brief("budget: { iterations: 6 }\n").replace("agent: builtin", "agent: spender"),
    );
    t.commit("an agent that spends");
    t.ooda(&["run", "b"]).expect(4);
    assert!(t.record("b", 6).tokens > 10 * t.record("b", 5).tokens);
    let spike: Vec<serde_json::Value> = t
        .events("b")
        .into_iter()
        .filter(|e| e["type"] == "anomaly_found" && e["rule"] == "token_spike")
        .collect();
    assert_eq!(spike.len(), 1, "{spike:?}");
    // Tagged with the iteration it is about.
    assert_eq!(spike[0]["iteration"], 6, "{}", spike[0]);
    let json: serde_json::Value =
        serde_json::from_str(&t.read("iterations/b/summary.json")).unwrap();
    assert_eq!(json["evaluation"]["iterations"][6]["grade"], "fail");
}
