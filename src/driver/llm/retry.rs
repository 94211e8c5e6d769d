//! When a failed request is tried again, and after how long: as the
//! official OpenAI and Anthropic SDKs do.
//!
//! Retried: 408, 409, 429, every 5xx (529 is Anthropic's "overloaded"),
//! a connection failure or timeout, and whatever the server marks
//! `x-should-retry: true`. Never retried, whatever the header says: 400,
//! 401, 403, 404, 422 (the request itself is wrong) and a 429 whose body
//! says the quota is exhausted (`insufficient_quota`: waiting does not
//! refill it). The wait is the server's (`retry-after-ms`, then
//! `retry-after` in seconds or as an HTTP date) when it asks for at most
//! 60 s, else 0.5 s·2ⁿ with ±25% jitter, capped at 8 s. The delay travels in
//! the error value, so the loop that sleeps and the record that reports it
//! agree. Retries exhausted, a failure that says the server is away or busy
//! (no connection, 408, 409, 429, 502, 503, 504, 529) is an outage, waited
//! out by the step's caller as a CLI's is (`ApiError::outage`); any other is
//! the agent's call failing, and five such iterations in a row stop the
//! night.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The longest wait a server may ask for and be obeyed.
pub(crate) const MAX_SERVER_WAIT: Duration = Duration::from_secs(60);
const INITIAL: f64 = 0.5;
const CAP: f64 = 8.0;

/// One failed request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ApiError {
    /// The HTTP status; `None` when no response came (connection, timeout).
    pub status: Option<u16>,
    /// The API's error type or code (`overloaded_error`, `rate_limit_exceeded`,
    /// `insufficient_quota`), or what went wrong on the wire.
    pub kind: String,
    /// The API's message, clipped.
    pub message: String,
    /// Whether trying again may help.
    pub retryable: bool,
    /// How long the server asked to wait, when it asked (≤ 60 s).
    pub retry_after: Option<Duration>,
    /// Requests made in all, once retries are spent.
    pub tries: u32,
}

impl ApiError {
    /// A failure before any response: refused connection, timeout, reset.
    pub(crate) fn transport(what: impl Into<String>) -> ApiError {
        ApiError {
            status: None,
            kind: "connection".into(),
            message: what.into(),
            retryable: true,
            retry_after: None,
            tries: 1,
        }
    }

    /// No whole answer within the try's limit (`client.rs` says which).
    pub(crate) fn timed_out() -> ApiError {
        ApiError {
            kind: "timeout".into(),
            ..ApiError::transport("the request timed out")
        }
    }

    /// A response that is not what the API documents (a proxy's HTML page,
    /// a truncated body): not retried, the same server would send it again.
    pub(crate) fn garbage(status: u16, what: impl Into<String>) -> ApiError {
        ApiError {
            status: Some(status),
            kind: "unreadable_response".into(),
            message: what.into(),
            retryable: false,
            retry_after: None,
            tries: 1,
        }
    }

    /// An error response, classified.
    pub(crate) fn from_response(
        status: u16,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> ApiError {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let (kind, message) = error_body(body);
        let quota = kind == "insufficient_quota" || body.contains("\"insufficient_quota\"");
        let never = matches!(status, 400 | 401 | 403 | 404 | 422) || (status == 429 && quota);
        let retryable = !never
            && match header("x-should-retry") {
                Some("true") => true,
                Some("false") => false,
                _ => matches!(status, 408 | 409 | 429) || status >= 500,
            };
        let retry_after = server_wait(header("retry-after-ms"), header("retry-after"), Utc::now());
        ApiError {
            status: Some(status),
            kind: if kind.is_empty() {
                reason(status).to_string()
            } else {
                kind
            },
            message: crate::text::clip::clip(&message, 300),
            retryable,
            retry_after,
            tries: 1,
        }
    }

    /// Whether the failure says the server is away or busy (no connection,
    /// 408, 409, 429, 502, 503, 504, 529 and other 5xx) rather than that
    /// the request is wrong: retries spent, it is an outage to wait out,
    /// not the agent's failure. Not one: a request that timed out (the
    /// server is up and too slow for the tier's limits, which waiting does
    /// not change), and a 500, 501 or 505, which a server gives the same
    /// request every time (llama.cpp answers 500 to tools when it was
    /// started without `--jinja`): waiting them out would wait all night.
    pub(crate) fn outage(&self) -> bool {
        self.retryable
            && !matches!(self.kind.as_str(), "timeout" | "step_timeout")
            && !matches!(self.status, Some(500 | 501 | 505))
    }

    /// The wait before retry number `n` (0 for the first retry); `jitter`
    /// is uniform in [0, 1).
    pub(crate) fn delay(&self, n: u32, jitter: f64) -> Duration {
        if let Some(d) = self.retry_after {
            return d;
        }
        let base = (INITIAL * 2f64.powi(n.min(16) as i32)).min(CAP);
        // ±25%, and the cap holds after the jitter too.
        Duration::from_secs_f64((base * (0.75 + 0.5 * jitter.clamp(0.0, 1.0))).min(CAP))
    }

    /// The one line an iteration file keeps: "model API: HTTP 529
    /// overloaded_error after 5 tries (Overloaded)".
    pub(crate) fn describe(&self) -> String {
        let what = match self.status {
            Some(s) => format!("HTTP {s} {}", self.kind),
            None => self.kind.clone(),
        };
        let tries = if self.tries > 1 {
            format!(" after {} tries", self.tries)
        } else {
            String::new()
        };
        let message = if self.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.message)
        };
        format!("model API: {what}{tries}{message}")
    }
}

/// The error's type and message from either API's error body:
/// `{"error": {"type"|"code", "message"}}` (OpenAI; Anthropic nests the
/// same under `"type": "error"`).
fn error_body(body: &str) -> (String, String) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return (String::new(), body.trim().chars().take(300).collect());
    };
    let e = v.get("error").unwrap_or(&v);
    let text = |k: &str| e.get(k).and_then(|x| x.as_str()).unwrap_or_default();
    let kind = match text("code") {
        "" => text("type"),
        code => code,
    };
    let message = match e {
        serde_json::Value::String(s) => s.as_str(),
        _ => text("message"),
    };
    (kind.to_string(), message.to_string())
}

fn reason(status: u16) -> &'static str {
    match status {
        408 => "request_timeout",
        409 => "conflict",
        429 => "rate_limited",
        500 => "internal_server_error",
        502 => "bad_gateway",
        503 => "service_unavailable",
        504 => "gateway_timeout",
        529 => "overloaded",
        s if s >= 500 => "server_error",
        _ => "error",
    }
}

/// The wait a server asked for, when it is positive and at most 60 s.
pub(crate) fn server_wait(
    ms: Option<&str>,
    after: Option<&str>,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let ok = |secs: f64| {
        (secs.is_finite() && secs > 0.0 && secs <= MAX_SERVER_WAIT.as_secs_f64())
            .then(|| Duration::from_secs_f64(secs))
    };
    if let Some(d) = ms
        .and_then(|m| m.trim().parse::<f64>().ok())
        .and_then(|m| ok(m / 1000.0))
    {
        return Some(d);
    }
    let after = after?.trim();
    if let Ok(secs) = after.parse::<f64>() {
        return ok(secs);
    }
    let at = DateTime::parse_from_rfc2822(after).ok()?;
    ok((at.with_timezone(&Utc) - now).num_milliseconds() as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn err(status: u16, headers: &[(&'static str, &str)], body: &str) -> ApiError {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        ApiError::from_response(status, &h, body)
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(err(s, &[], "").retryable, "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!err(s, &[], "").retryable, "{s}");
            // The request is wrong: a server's header cannot make it right.
            assert!(!err(s, &[("x-should-retry", "true")], "").retryable, "{s}");
        }
        assert!(err(418, &[("x-should-retry", "true")], "").retryable);
        assert!(!err(503, &[("x-should-retry", "false")], "").retryable);
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let e = err(429, &[], quota);
        assert!(!e.retryable);
        assert_eq!(e.kind, "insufficient_quota");
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let e = err(529, &[], overloaded);
        assert!(e.retryable);
        assert_eq!(
            ApiError { tries: 5, ..e }.describe(),
            "model API: HTTP 529 overloaded_error after 5 tries (Overloaded)"
        );
    }

    #[test]
    fn the_server_s_wait_is_obeyed_up_to_a_minute() {
        let now = Utc::now();
        assert_eq!(
            server_wait(Some("1500"), Some("9"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            server_wait(None, Some("2"), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(server_wait(None, Some("61"), now), None);
        assert_eq!(server_wait(None, Some("0"), now), None);
        assert_eq!(
            server_wait(Some("junk"), Some("3"), now),
            Some(Duration::from_secs(3))
        );
        let date = (now + chrono::Duration::seconds(30)).to_rfc2822();
        let d = server_wait(None, Some(&date), now).unwrap();
        assert!(
            d > Duration::from_secs(28) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        let past = (now - chrono::Duration::seconds(30)).to_rfc2822();
        assert_eq!(server_wait(None, Some(&past), now), None);
        let e = err(429, &[("retry-after", "7")], "");
        assert_eq!(e.delay(3, 0.9), Duration::from_secs(7));
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_eight_with_a_quarter_of_jitter() {
        let e = err(500, &[], "");
        let mid: Vec<f64> = (0..7).map(|n| e.delay(n, 0.5).as_secs_f64()).collect();
        assert_eq!(mid, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(e.delay(0, 0.0).as_secs_f64(), 0.375);
        assert_eq!(
            e.delay(4, 0.999_999).as_secs_f64(),
            8.0,
            "capped after the jitter"
        );
        assert!((e.delay(2, 0.999_999).as_secs_f64() - 2.5).abs() < 1e-3);
    }

    #[test]
    fn a_server_away_or_busy_is_an_outage_and_a_request_it_refuses_is_not() {
        for s in [408, 409, 429, 502, 503, 504, 529] {
            assert!(err(s, &[], "").outage(), "{s}");
        }
        assert!(ApiError::transport("cannot connect").outage());
        // The same request gets the same 500 every time (llama.cpp without
        // --jinja refuses tools so): waiting would wait all night.
        let jinja = r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#;
        for s in [400, 401, 404, 422, 500, 501] {
            assert!(!err(s, &[], jinja).outage(), "{s}");
        }
        assert!(!ApiError::timed_out().outage());
        let quota = r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(!err(429, &[], quota).outage());
    }

    #[test]
    fn an_unreadable_error_body_is_kept_as_its_text() {
        let e = err(502, &[], "<html>Bad Gateway</html>");
        assert_eq!(e.kind, "bad_gateway");
        assert_eq!(e.message, "<html>Bad Gateway</html>");
        assert!(e.retryable);
    }
}
