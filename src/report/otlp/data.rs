//! The OTLP data model ooda writes: the part of `trace/v1` it uses.

/// An attribute value (`AnyValue`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attr {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    Array(Vec<Attr>),
}

impl Attr {
    /// From a trace attribute; `None` for null (left out) and objects.
    pub(crate) fn from_json(v: &serde_json::Value) -> Option<Attr> {
        use serde_json::Value;
        Some(match v {
            Value::String(s) => Attr::Str(s.clone()),
            Value::Bool(b) => Attr::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Attr::Int(i),
                None => Attr::Double(n.as_f64()?),
            },
            Value::Array(items) => Attr::Array(items.iter().filter_map(Attr::from_json).collect()),
            Value::Null | Value::Object(_) => return None,
        })
    }
}

pub(crate) type KeyValue = (String, Attr);

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanEvent {
    pub time_unix_nano: u64,
    pub name: String,
    pub attributes: Vec<KeyValue>,
}

/// `SPAN_KIND_INTERNAL` and `SPAN_KIND_CLIENT`, the two ooda uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SpanKind {
    Internal = 1,
    Client = 3,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub name: String,
    pub kind: SpanKind,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
    pub attributes: Vec<KeyValue>,
    pub events: Vec<SpanEvent>,
    /// `STATUS_CODE_ERROR` with this message; `None` is unset.
    pub error: Option<String>,
}

/// One `ExportTraceServiceRequest`: a resource, one scope, its spans.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    pub resource: Vec<KeyValue>,
    pub scope_name: String,
    pub scope_version: String,
    pub spans: Vec<Span>,
}
