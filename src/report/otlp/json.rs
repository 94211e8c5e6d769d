//! The OTLP/JSON encoding: protobuf's JSON mapping with OTLP's exceptions
//! (ids as hex, not base64; enums as integers; 64-bit integers as strings).

use serde_json::{Value, json};

use super::data::{Attr, Batch, KeyValue, Span};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn any(a: &Attr) -> Value {
    match a {
        Attr::Str(s) => json!({"stringValue": s}),
        Attr::Bool(b) => json!({"boolValue": b}),
        Attr::Int(i) => json!({"intValue": i.to_string()}),
        Attr::Double(d) => json!({"doubleValue": d}),
        Attr::Array(items) => {
            json!({"arrayValue": {"values": items.iter().map(any).collect::<Vec<_>>()}})
        }
    }
}

fn kvs(list: &[KeyValue]) -> Vec<Value> {
    list.iter()
        .map(|(k, v)| json!({"key": k, "value": any(v)}))
        .collect()
}

fn span(s: &Span) -> Value {
    let mut v = json!({
        "traceId": hex(&s.trace_id),
        "spanId": hex(&s.span_id),
        "name": s.name,
        "kind": s.kind as i32,
        "startTimeUnixNano": s.start_time_unix_nano.to_string(),
        "endTimeUnixNano": s.end_time_unix_nano.to_string(),
        "attributes": kvs(&s.attributes),
        "events": s.events.iter().map(|e| json!({
            "timeUnixNano": e.time_unix_nano.to_string(),
            "name": e.name,
            "attributes": kvs(&e.attributes),
        })).collect::<Vec<_>>(),
        "status": match &s.error {
            Some(m) => json!({"code": 2, "message": m}),
            None => json!({}),
        },
    });
    if let Some(p) = s.parent_span_id {
        v["parentSpanId"] = hex(&p).into();
    }
    v
}

/// One line of the OTLP File Exporter format.
pub(super) fn encode(b: &Batch) -> String {
    json!({
        "resourceSpans": [{
            "resource": {"attributes": kvs(&b.resource)},
            "scopeSpans": [{
                "scope": {"name": b.scope_name, "version": b.scope_version},
                "spans": b.spans.iter().map(span).collect::<Vec<_>>(),
            }],
        }],
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_strings_and_arrays_nest() {
        assert_eq!(any(&Attr::Int(3)), json!({"intValue": "3"}));
        assert_eq!(any(&Attr::Double(0.5)), json!({"doubleValue": 0.5}));
        assert_eq!(
            any(&Attr::Array(vec![Attr::Str("stop".into())])),
            json!({"arrayValue": {"values": [{"stringValue": "stop"}]}})
        );
        assert_eq!(hex(&[0x0a, 0xff]), "0aff");
    }
}
