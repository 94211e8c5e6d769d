//! Seeing a night from outside: spans sent to a collector while the loop
//! runs, and a collector that fails without the loop noticing.

use std::collections::BTreeSet;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::test::{Test, knob_brief, runtime};

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
    t.ooda_env(
        &["run", "b"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &server.uri()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=night%20shift"),
        ],
    )
    .expect(4);
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
        "invoke_workflow ooda",
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
        "invoke_workflow ooda"
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
