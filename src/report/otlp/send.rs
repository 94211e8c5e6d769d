//! Posting batches to a collector over OTLP/HTTP: one place for what the
//! live exporter (a night as it runs) and `ooda export --otlp-endpoint` (a
//! stored night, sent again) both do.
//!
//! The endpoint and its headers, protocol, compression and timeout come
//! from the standard `OTEL_EXPORTER_OTLP_*` variables, so a collector set
//! up for any OpenTelemetry SDK works unchanged. Protobuf is the default:
//! every collector must accept it, and some (Phoenix) accept nothing else.
//!
//! A failed post says whether trying again can help and how long the
//! collector asked to be left alone (`Retry-After`), so each caller picks
//! its own policy: the live exporter never waits (the loop must not), the
//! export command retries a few times and then says where to resume.

use std::io::Write;
use std::time::Duration;

use super::data::Batch;

/// Where and how to send, from the standard OTLP exporter variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub json: bool,
    /// `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`: bodies are gzipped.
    pub gzip: bool,
    pub timeout: Duration,
    /// A protocol or compression ooda does not speak: said once, at the start.
    pub warning: Option<String>,
}

impl Endpoint {
    /// `None` when no endpoint is set. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// is used as it is; `OTEL_EXPORTER_OTLP_ENDPOINT` gets `/v1/traces`.
    pub(crate) fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Endpoint> {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(u) => u.trim().to_string(),
            None => traces_url(&set("OTEL_EXPORTER_OTLP_ENDPOINT")?),
        };
        Some(Endpoint::at(url, var))
    }

    /// An endpoint named on the command line: `/v1/traces` is added to its
    /// path unless the path already ends with it, so a collector's base
    /// address (`http://host:4318`, Langfuse's `…/api/public/otel`) and its
    /// full traces URL both work. A query string stays at the end.
    /// Headers, protocol, compression and timeout still come from the
    /// variables. An address without `http://` or `https://` is refused,
    /// as the user wrote it.
    pub(crate) fn from_url(
        url: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> std::result::Result<Endpoint, String> {
        let given = url.trim();
        let lower = given.to_ascii_lowercase();
        let Some(scheme) = ["http://", "https://"]
            .into_iter()
            .find(|s| lower.starts_with(s))
        else {
            return Err(format!(
                "--otlp-endpoint {given}: not an http:// or https:// URL (e.g. http://127.0.0.1:4318)"
            ));
        };
        let rest = &given[scheme.len()..];
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (host, path) = match rest.split_once('/') {
            Some((h, p)) => (h, format!("/{p}")),
            None => (rest, String::new()),
        };
        if host.is_empty() {
            return Err(format!("--otlp-endpoint {given}: no host in the URL"));
        }
        let path = path.trim_end_matches('/');
        let path = match path.ends_with("/v1/traces") {
            true => path.to_string(),
            false => format!("{path}/v1/traces"),
        };
        let mut url = format!("{scheme}{host}{path}");
        if let Some(q) = query {
            url.push('?');
            url.push_str(q);
        }
        Ok(Endpoint::at(url, var))
    }

    fn at(url: String, var: impl Fn(&str) -> Option<String>) -> Endpoint {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let either = |name: &str| {
            set(&format!("OTEL_EXPORTER_OTLP_TRACES_{name}"))
                .or_else(|| set(&format!("OTEL_EXPORTER_OTLP_{name}")))
        };
        let headers = either("HEADERS")
            .map(|h| parse_headers(&h))
            .unwrap_or_default();
        let protocol = either("PROTOCOL").unwrap_or_default();
        let compression = either("COMPRESSION").unwrap_or_default();
        let timeout = either("TIMEOUT")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(10));
        let mut warnings = Vec::new();
        let protocol = protocol.trim();
        if !matches!(protocol, "" | "http/protobuf" | "http/json") {
            warnings.push(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: ooda exports over OTLP/HTTP only (http/protobuf or http/json); posting protobuf to {url} (a collector's HTTP port is usually 4318, its gRPC port 4317)"
            ));
        }
        let compression = compression.trim();
        if !matches!(compression, "" | "none" | "gzip") {
            warnings.push(format!(
                "OTEL_EXPORTER_OTLP_COMPRESSION={compression}: ooda compresses with gzip or not at all; sending uncompressed"
            ));
        }
        Endpoint {
            url,
            headers,
            json: protocol == "http/json",
            gzip: compression == "gzip",
            timeout,
            warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
        }
    }

    /// The body and content type of one batch, as this endpoint takes it.
    fn body(&self, batch: &Batch) -> (Vec<u8>, &'static str) {
        if self.json {
            (super::json::encode(batch).into_bytes(), "application/json")
        } else {
            (super::proto::encode(batch), "application/x-protobuf")
        }
    }
}

fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim().trim_end_matches('/'))
}

/// `k1=v1,k2=v2`, values percent-decoded (the spec's W3C baggage form).
fn parse_headers(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), percent_decode(v.trim())))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
        if b[i] == b'%'
            && let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why a post failed, and whether the same post may succeed later.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PostError {
    pub message: String,
    /// The collector was busy or unreachable (the spec's retryable codes
    /// 429, 502, 503, 504, or no answer): the same batch may go later.
    pub retryable: bool,
    /// What the collector asked for in `Retry-After`, when it did.
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A collector took the batch but said some spans were not kept (OTLP's
/// `partial_success`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Accepted {
    pub rejected_spans: u64,
    pub message: String,
}

/// An HTTP client on a runtime of its own, for a thread that is not async.
pub(crate) struct Poster {
    pub endpoint: Endpoint,
    client: Option<(reqwest::Client, tokio::runtime::Runtime)>,
}

impl Poster {
    pub(crate) fn new(endpoint: Endpoint) -> Poster {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .and_then(|rt| {
                // The client's timers belong to this runtime.
                let _in = rt.enter();
                // Posts are minutes apart in a live night: a pooled
                // connection would sit idle past the collector's keep-alive
                // and fail on reuse.
                let http = reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .connect_timeout(Duration::from_secs(5))
                    .timeout(endpoint.timeout)
                    .build()
                    .ok()?;
                drop(_in);
                Some((http, rt))
            });
        Poster { endpoint, client }
    }

    /// Posts one batch once.
    pub(crate) fn post(&self, batch: &Batch) -> Result<Accepted, PostError> {
        let fail = |message: String, retryable: bool| PostError {
            message,
            retryable,
            retry_after: None,
        };
        let Some((client, rt)) = &self.client else {
            return Err(fail("no HTTP client could be built".into(), false));
        };
        let (body, content_type) = self.endpoint.body(batch);
        let body = match self.endpoint.gzip {
            true => gzip(&body).map_err(|e| fail(format!("gzip: {e}"), false))?,
            false => body,
        };
        let mut req = client
            .post(&self.endpoint.url)
            .header("content-type", content_type)
            .body(body);
        if self.endpoint.gzip {
            req = req.header("content-encoding", "gzip");
        }
        for (k, v) in &self.endpoint.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        // `send` starts the timeout's timer: it must run inside the runtime.
        let answer = rt.block_on(async {
            let resp = req.send().await?;
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let protobuf = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("protobuf"));
            let body = resp.bytes().await?;
            Ok::<_, reqwest::Error>((status, retry_after, protobuf, body))
        });
        let (status, retry_after, protobuf, body) = match answer {
            Ok(a) => a,
            Err(e) => {
                // A request that could not be built (a bad header value)
                // fails the same way every time; refused, reset or timed
                // out, the collector may be back later.
                let hint = match e.is_connect() || e.is_timeout() {
                    true => {
                        " (is the collector running, and is this its OTLP/HTTP port? usually 4318; Phoenix: 6006)"
                    }
                    false => "",
                };
                return Err(fail(format!("{}{hint}", causes(&e)), !e.is_builder()));
            }
        };
        if !(200..300).contains(&status) {
            let detail = String::from_utf8_lossy(&body[..body.len().min(200)])
                .trim()
                .to_string();
            let why = match status {
                415 => {
                    " (the collector does not take this encoding; unset OTEL_EXPORTER_OTLP_PROTOCOL to send protobuf)"
                }
                404 => {
                    " (no OTLP receiver at this path: a collector's traces path is usually /v1/traces)"
                }
                _ => "",
            };
            return Err(PostError {
                message: match detail.is_empty() {
                    true => format!("HTTP {status}{why}"),
                    false => format!("HTTP {status}{why}: {detail}"),
                },
                retryable: matches!(status, 429 | 502 | 503 | 504),
                retry_after,
            });
        }
        Ok(match protobuf {
            true => partial_success(&body).unwrap_or_default(),
            false => json_partial_success(&body).unwrap_or_default(),
        })
    }
}

/// An error with what caused it: reqwest's own message says only that the
/// request failed, its sources say why (connection refused, a DNS name not
/// found, a certificate not trusted).
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes)?;
    enc.finish()
}

/// Reads a protobuf varint at `*at`.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A field's value, of the two wire types a response's fields use.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

type Field<'a> = (u64, Wire<'a>);

/// The fields of a protobuf message; `None` when the bytes are not one.
fn fields(b: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(b, &mut at)?),
            2 => {
                let n = usize::try_from(varint(b, &mut at)?).ok()?;
                let v = b.get(at..at.checked_add(n)?)?;
                at += n;
                Wire::Bytes(v)
            }
            1 => {
                at += 8;
                continue;
            }
            5 => {
                at += 4;
                continue;
            }
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// `ExportTraceServiceResponse.partial_success` (field 1), whose
/// `rejected_spans` is field 1 and `error_message` field 2.
fn partial_success(body: &[u8]) -> Option<Accepted> {
    let inner = fields(body)?.into_iter().find_map(|(f, v)| match (f, v) {
        (1, Wire::Bytes(bytes)) => Some(bytes),
        _ => None,
    })?;
    let mut a = Accepted::default();
    for (f, v) in fields(inner)? {
        match (f, v) {
            (1, Wire::Varint(n)) => a.rejected_spans = n,
            (2, Wire::Bytes(text)) => a.message = String::from_utf8_lossy(text).into_owned(),
            _ => {}
        }
    }
    Some(a)
}

fn json_partial_success(body: &[u8]) -> Option<Accepted> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let p = v.get("partialSuccess")?;
    let rejected = p.get("rejectedSpans")?;
    Some(Accepted {
        rejected_spans: rejected
            .as_u64()
            .or_else(|| rejected.as_str()?.parse().ok())
            .unwrap_or(0),
        message: p
            .get("errorMessage")
            .and_then(|m| m.as_str())
            .unwrap_or_default()
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_standard_variables_name_the_endpoint() {
        assert_eq!(Endpoint::from_env(env(&[])), None);
        let e =
            Endpoint::from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318/")])).unwrap();
        assert_eq!(e.url, "http://h:4318/v1/traces");
        assert!(!e.json);
        assert!(!e.gzip);
        assert_eq!(e.timeout, Duration::from_secs(10));
        let e = Endpoint::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://t/api/otel/v1/traces",
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Basic%20abc=,x-team = a",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip"),
        ]))
        .unwrap();
        assert_eq!(e.url, "http://t/api/otel/v1/traces");
        assert_eq!(
            e.headers,
            [
                ("Authorization".to_string(), "Basic abc=".to_string()),
                ("x-team".to_string(), "a".to_string())
            ]
        );
        assert!(e.json);
        assert!(e.gzip);
        assert_eq!(e.timeout, Duration::from_millis(2500));
        assert_eq!(e.warning, None);
        let e = Endpoint::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
        ]))
        .unwrap();
        assert!(!e.json);
        assert!(!e.gzip);
        let w = e.warning.unwrap();
        assert!(w.contains("OTLP/HTTP only") && w.contains("zstd"), "{w}");
    }

    #[test]
    fn a_url_on_the_command_line_gets_the_traces_path_unless_it_ends_with_it() {
        let none = env(&[]);
        for (given, want) in [
            ("http://127.0.0.1:6006", "http://127.0.0.1:6006/v1/traces"),
            ("http://127.0.0.1:6006/", "http://127.0.0.1:6006/v1/traces"),
            ("http://h:4318/v1/traces", "http://h:4318/v1/traces"),
            ("HTTP://h:4318", "http://h:4318/v1/traces"),
            ("http://h:4318?token=x", "http://h:4318/v1/traces?token=x"),
            (
                "https://cloud.langfuse.com/api/public/otel",
                "https://cloud.langfuse.com/api/public/otel/v1/traces",
            ),
            (
                "https://cloud.langfuse.com/api/public/otel/v1/traces",
                "https://cloud.langfuse.com/api/public/otel/v1/traces",
            ),
        ] {
            assert_eq!(
                Endpoint::from_url(given, &none).unwrap().url,
                want,
                "{given}"
            );
        }
        for bad in ["127.0.0.1:6006", "ftp://h", "http://", "http:///v1/traces"] {
            let e = Endpoint::from_url(bad, &none).unwrap_err();
            assert!(e.contains(bad) && !e.contains(&format!("{bad}/v1")), "{e}");
        }
        let e = Endpoint::from_url(
            "http://h:4318",
            env(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")]),
        )
        .unwrap();
        assert!(e.gzip);
    }

    #[test]
    fn a_partial_success_is_read_from_either_encoding() {
        use opentelemetry_proto::tonic::collector::trace::v1::{
            ExportTracePartialSuccess, ExportTraceServiceResponse,
        };
        use prost::Message;
        let resp = ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: 3,
                error_message: "too old".into(),
            }),
        };
        assert_eq!(
            partial_success(&resp.encode_to_vec()),
            Some(Accepted {
                rejected_spans: 3,
                message: "too old".into()
            })
        );
        // An empty answer (what most collectors send) is a full success.
        assert_eq!(partial_success(&[]), None);
        assert_eq!(
            json_partial_success(br#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"x"}}"#),
            Some(Accepted {
                rejected_spans: 2,
                message: "x".into()
            })
        );
        assert_eq!(json_partial_success(b"{}"), None);
    }
}
