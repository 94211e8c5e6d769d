//! The OTLP protobuf encoding (`http/protobuf`, the protocol collectors
//! must accept and the only one some accept, Phoenix among them).
//!
//! Only encoding, and only the fields ooda writes, so a few functions over
//! the wire format do what a code generator and a protobuf runtime would;
//! the tests decode the bytes with the official generated types.

use super::data::{Attr, Batch, KeyValue, Span, SpanEvent};

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    tag(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn int(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, VARINT);
    varint(out, v);
}

fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    bytes(out, field, &inner);
}

/// `AnyValue`: string 1, bool 2, int 3, double 4, array 5.
fn any(out: &mut Vec<u8>, a: &Attr) {
    match a {
        Attr::Str(s) => bytes(out, 1, s.as_bytes()),
        Attr::Bool(b) => int(out, 2, u64::from(*b)),
        // int64 is a varint of the two's complement.
        Attr::Int(i) => int(out, 3, *i as u64),
        Attr::Double(d) => fixed64(out, 4, d.to_bits()),
        Attr::Array(items) => message(out, 5, |arr| {
            for item in items {
                message(arr, 1, |v| any(v, item));
            }
        }),
    }
}

/// Repeated `KeyValue` (key 1, value 2) as field `field`.
fn kvs(out: &mut Vec<u8>, field: u32, list: &[KeyValue]) {
    for (k, v) in list {
        message(out, field, |kv| {
            bytes(kv, 1, k.as_bytes());
            message(kv, 2, |a| any(a, v));
        });
    }
}

fn event(out: &mut Vec<u8>, e: &SpanEvent) {
    fixed64(out, 1, e.time_unix_nano);
    bytes(out, 2, e.name.as_bytes());
    kvs(out, 3, &e.attributes);
}

fn span(out: &mut Vec<u8>, s: &Span) {
    bytes(out, 1, &s.trace_id);
    bytes(out, 2, &s.span_id);
    if let Some(p) = &s.parent_span_id {
        bytes(out, 4, p);
    }
    bytes(out, 5, s.name.as_bytes());
    int(out, 6, s.kind as u64);
    fixed64(out, 7, s.start_time_unix_nano);
    fixed64(out, 8, s.end_time_unix_nano);
    kvs(out, 9, &s.attributes);
    for e in &s.events {
        message(out, 11, |m| event(m, e));
    }
    if let Some(m) = &s.error {
        // Status: message 2, code 3 (2 = error).
        message(out, 15, |st| {
            bytes(st, 2, m.as_bytes());
            int(st, 3, 2);
        });
    }
}

/// An `ExportTraceServiceRequest`.
pub(super) fn encode(b: &Batch) -> Vec<u8> {
    let mut out = Vec::new();
    // resource_spans 1 → resource 1 (attributes 1), scope_spans 2 →
    // scope 1 (name 1, version 2), spans 2.
    message(&mut out, 1, |rs| {
        message(rs, 1, |r| kvs(r, 1, &b.resource));
        message(rs, 2, |ss| {
            message(ss, 1, |sc| {
                bytes(sc, 1, b.scope_name.as_bytes());
                bytes(sc, 2, b.scope_version.as_bytes());
            });
            for s in &b.spans {
                message(ss, 2, |m| span(m, s));
            }
        });
    });
    out
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::report::otlp::data::SpanKind;

    #[test]
    fn the_official_types_decode_what_we_encode() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        let b = Batch {
            resource: vec![("service.name".into(), Attr::Str("ooda".into()))],
            scope_name: "ooda".into(),
            scope_version: "0.1.0".into(),
            spans: vec![Span {
                trace_id: [7; 16],
                span_id: [1, 2, 3, 4, 5, 6, 7, 8],
                parent_span_id: Some([9; 8]),
                name: "chat gpt-x".into(),
                kind: SpanKind::Client,
                start_time_unix_nano: 1_796_196_248_179_165_626,
                end_time_unix_nano: 1_796_196_249_000_000_000,
                attributes: vec![
                    ("n".into(), Attr::Int(-3)),
                    ("big".into(), Attr::Int(1 << 40)),
                    ("ok".into(), Attr::Bool(true)),
                    ("x".into(), Attr::Double(0.25)),
                    ("why".into(), Attr::Array(vec![Attr::Str("stop".into())])),
                ],
                events: vec![SpanEvent {
                    time_unix_nano: 5,
                    name: "anomaly".into(),
                    attributes: vec![("ooda.text".into(), Attr::Str("ü".into()))],
                }],
                error: Some("HTTP 500".into()),
            }],
        };
        let req = ExportTraceServiceRequest::decode(encode(&b).as_slice()).unwrap();
        let rs = &req.resource_spans[0];
        assert_eq!(
            rs.resource.as_ref().unwrap().attributes[0].key,
            "service.name"
        );
        let ss = &rs.scope_spans[0];
        assert_eq!(ss.scope.as_ref().unwrap().version, "0.1.0");
        let s = &ss.spans[0];
        assert_eq!(s.trace_id, vec![7; 16]);
        assert_eq!(s.span_id, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(s.parent_span_id, vec![9; 8]);
        assert_eq!(s.name, "chat gpt-x");
        assert_eq!(s.kind, 3);
        assert_eq!(s.start_time_unix_nano, 1_796_196_248_179_165_626);
        let v = |i: usize| s.attributes[i].value.clone().unwrap().value.unwrap();
        assert_eq!(v(0), Value::IntValue(-3));
        assert_eq!(v(1), Value::IntValue(1 << 40));
        assert_eq!(v(2), Value::BoolValue(true));
        assert_eq!(v(3), Value::DoubleValue(0.25));
        match v(4) {
            Value::ArrayValue(a) => assert_eq!(a.values.len(), 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.events[0].name, "anomaly");
        let st = s.status.as_ref().unwrap();
        assert_eq!((st.code, st.message.as_str()), (2, "HTTP 500"));
    }
}
