//! One model request over HTTP, retried as `retry.rs` says.
//!
//! The runner is synchronous; each client owns a current-thread tokio
//! runtime and blocks on one request at a time, checking the cancellation
//! flag while it waits, so Ctrl-C ends a slow request at once. Nothing here
//! may run inside another runtime (a test's HTTP server runs on its own).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::retry::ApiError;
use super::wire::{Completion, Request};
use super::{anthropic, openai};
use crate::config::{ModelTier, Provider};
use crate::error::{Error, Result};

pub(crate) struct Client {
    tier: ModelTier,
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

/// A response body larger than this is not read (a hostile or broken
/// endpoint must not exhaust memory).
const MAX_BODY: usize = 32 << 20;

/// One request's answer and how long it took (the successful try only).
#[derive(Debug)]
pub(crate) struct Answered {
    pub completion: Completion,
    pub latency: Duration,
    /// Requests made, retries included.
    pub tries: u32,
    /// The `max_output` of the try that answered: lower than asked when
    /// an earlier try timed out.
    pub max_output: u64,
}

/// The least `max_output` a timed-out request is retried with.
const MIN_OUTPUT: u64 = 256;

impl Client {
    pub(crate) fn new(tier: &ModelTier) -> Result<Client> {
        // reqwest is built without a TLS provider of its own (no OpenSSL,
        // no C build of aws-lc): ring is installed once for the process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| Error::Input(format!("cannot start an HTTP client: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("starting the llm driver's runtime".to_string(), e))?;
        Ok(Client {
            tier: tier.clone(),
            http,
            rt,
        })
    }

    pub(crate) fn tier(&self) -> &ModelTier {
        &self.tier
    }

    /// The endpoint requests go to.
    pub(crate) fn url(&self) -> String {
        let path = match self.tier.provider {
            Provider::Openai => openai::PATH,
            Provider::Anthropic => anthropic::PATH,
        };
        format!("{}{path}", self.tier.base_url())
    }

    /// Sends `req`, retrying what may be retried, until `deadline` (each
    /// try gets the tier's `timeout` or what is left, and no wait runs
    /// past it). `waiting` hears of each wait before it starts (the error
    /// and the delay). `Err` is only an interruption; a request that failed
    /// for good is `Ok(Err(..))`, data.
    pub(crate) fn complete(
        &self,
        req: &Request,
        request: u32,
        cancel: &AtomicBool,
        deadline: Instant,
        mut waiting: impl FnMut(&ApiError, Duration),
    ) -> Result<std::result::Result<Answered, ApiError>> {
        let mut max_output = req.max_output;
        let mut tries = 0;
        loop {
            let req = Request {
                max_output,
                ..req.clone()
            };
            let body = match self.tier.provider {
                Provider::Openai => openai::body(&self.tier.model, self.tier.base_url(), &req),
                Provider::Anthropic => anthropic::body(&self.tier.model, &req),
            };
            tries += 1;
            let started = Instant::now();
            let left = deadline.saturating_duration_since(started);
            // A try with under a second left would only time out.
            if left < Duration::from_secs(1) {
                let mut e =
                    ApiError::transport("the step's time ran out before the request was sent");
                e.retryable = false;
                e.kind = "step_timeout".into();
                return Ok(Err(ApiError { tries, ..e }));
            }
            let limit = self.tier.timeout.min(left);
            let error = match self.once(&body, request, cancel, limit)? {
                Ok(completion) => {
                    return Ok(Ok(Answered {
                        completion,
                        latency: started.elapsed(),
                        tries,
                        max_output,
                    }));
                }
                Err(e) if e.kind == "timeout" => {
                    let by = if limit < self.tier.timeout {
                        "the step's remaining time".to_string()
                    } else {
                        format!(
                            "the `timeout` of {}",
                            crate::brief::format_duration(self.tier.timeout)
                        )
                    };
                    let e = ApiError {
                        message: format!(
                            "no answer within {by}, with max_output {max_output} tokens: raise `timeout` or lower `max_output` for {} in ooda.yaml's `models`",
                            self.tier.model
                        ),
                        ..e
                    };
                    // The same request would time out the same way: the
                    // retry asks for half the answer.
                    max_output = (max_output / 2).max(MIN_OUTPUT.min(max_output));
                    e
                }
                Err(e) => e,
            };
            let retry = tries - 1;
            if !error.retryable || retry >= self.tier.max_retries {
                return Ok(Err(ApiError { tries, ..error }));
            }
            let wait = error.delay(retry, jitter());
            if Instant::now() + wait >= deadline {
                // The step's time, not the API, ends it: a timeout.
                return Ok(Err(ApiError {
                    tries,
                    kind: "step_timeout".into(),
                    retryable: false,
                    message: format!("{}; no time left in the step to retry", error.describe()),
                    ..error
                }));
            }
            waiting(&error, wait);
            crate::run::interrupt::sleep_unless(wait, cancel)?;
        }
    }

    fn once(
        &self,
        body: &Value,
        number: u32,
        cancel: &AtomicBool,
        timeout: Duration,
    ) -> Result<std::result::Result<Completion, ApiError>> {
        let mut request = self
            .http
            .post(self.url())
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body.to_string());
        match (self.key(), self.tier.provider) {
            (Err(e), _) => return Ok(Err(e)),
            (Ok(None), _) => {}
            (Ok(Some(key)), Provider::Openai) => request = request.bearer_auth(key),
            (Ok(Some(key)), Provider::Anthropic) => request = request.header("x-api-key", key),
        }
        if self.tier.provider == Provider::Anthropic {
            request = request.header("anthropic-version", anthropic::VERSION);
        }
        let provider = self.tier.provider;
        let send = async move {
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) if e.is_timeout() => return Err(ApiError::timed_out()),
                Err(e) => return Err(ApiError::transport(transport_words(&e))),
            };
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let mut response = response;
            let mut bytes = Vec::new();
            loop {
                match response.chunk().await {
                    Ok(Some(c)) => {
                        bytes.extend_from_slice(&c);
                        if bytes.len() > MAX_BODY {
                            return Err(ApiError::garbage(
                                status,
                                format!("the response body is over {} MB", MAX_BODY >> 20),
                            ));
                        }
                    }
                    Ok(None) => break,
                    Err(e) if e.is_timeout() => return Err(ApiError::timed_out()),
                    Err(e) => return Err(ApiError::transport(transport_words(&e))),
                }
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if !(200..300).contains(&status) {
                return Err(ApiError::from_response(status, &headers, &text));
            }
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                ApiError::garbage(
                    status,
                    format!(
                        "the body is not JSON ({e}): {}",
                        crate::text::clip::clip(text.trim(), 120)
                    ),
                )
            })?;
            let parsed = match provider {
                Provider::Openai => openai::parse(&value, number),
                Provider::Anthropic => anthropic::parse(&value),
            };
            parsed.map_err(|why| ApiError::garbage(status, why))
        };
        let watch = async {
            while !cancel.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        self.rt.block_on(async {
            tokio::select! {
                r = send => Ok(r),
                () = watch => Err(Error::Interrupted),
            }
        })
    }

    /// A GET of the server's own JSON (`/props`, `/models`) within 10 s;
    /// `None` for anything but a JSON 200.
    pub(crate) fn get_json(&self, url: &str) -> Option<Value> {
        let mut request = self.http.get(url).timeout(Duration::from_secs(10));
        if let Ok(Some(key)) = self.key() {
            request = match self.tier.provider {
                Provider::Openai => request.bearer_auth(key),
                Provider::Anthropic => request
                    .header("x-api-key", key)
                    .header("anthropic-version", anthropic::VERSION),
            };
        }
        self.rt.block_on(async move {
            let r = request.send().await.ok()?;
            if !r.status().is_success() {
                return None;
            }
            let bytes = r.bytes().await.ok()?;
            if bytes.len() > MAX_BODY {
                return None;
            }
            serde_json::from_slice(&bytes).ok()
        })
    }

    /// The key, from the variable the tier names, read when it is needed
    /// and kept nowhere. A tier without `api_key_env` sends none (a local
    /// server).
    fn key(&self) -> std::result::Result<Option<String>, ApiError> {
        let Some(var) = &self.tier.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_string())),
            _ => Err(ApiError {
                status: None,
                kind: "missing_api_key".into(),
                message: format!("the environment variable {var} (models: api_key_env) is not set"),
                retryable: false,
                retry_after: None,
                tries: 1,
            }),
        }
    }
}

/// What went wrong on the wire, without the URL's query (reqwest's
/// messages name the URL; a key never travels in one here, but a proxy's
/// might).
fn transport_words(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "the request timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the response body was cut off"
    } else {
        "the request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {detail}")
    }
}

/// Uniform in [0, 1), from the clock: jitter only has to differ between
/// clients that fail at the same moment.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(nanos) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    //! Against a scripted server on loopback. The server runs on a runtime
    //! of its own; the client blocks on the test's thread, outside it.
    use super::*;
    use crate::config::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT};
    use crate::driver::llm::wire::Message;
    use serde_json::json;
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    pub(crate) fn server() -> (tokio::runtime::Runtime, MockServer) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(MockServer::start());
        (rt, server)
    }

    fn tier(provider: Provider, url: &str) -> ModelTier {
        ModelTier {
            provider,
            model: "m".into(),
            base_url: Some(url.into()),
            api_key_env: None,
            price_in: Some(3.0),
            price_out: Some(15.0),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output: DEFAULT_MAX_OUTPUT,
            max_retries: 4,
            timeout: Duration::from_secs(10),
            tools: None,
        }
    }

    fn ask(client: &Client) -> (std::result::Result<Answered, ApiError>, Vec<Duration>) {
        let msgs = [Message::user("hi")];
        let req = Request {
            system: "s",
            messages: &msgs,
            tools: &[],
            max_output: 50,
            temperature: None,
        };
        let mut waits = Vec::new();
        let out = client
            .complete(
                &req,
                1,
                &AtomicBool::new(false),
                Instant::now() + Duration::from_secs(60),
                |_, w| waits.push(w),
            )
            .unwrap();
        (out, waits)
    }

    fn ok_body() -> serde_json::Value {
        json!({"model": "m-1", "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
    }

    #[test]
    fn a_429_with_retry_after_is_waited_out_then_answered() {
        let (rt, server) = server();
        rt.block_on(async {
            Mock::given(method("POST"))
                .and(path("/v1/chat/completions"))
                .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_string(
                    r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
                ))
                .up_to_n_times(1)
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(ok_body()))
                .mount(&server)
                .await;
        });
        let c = Client::new(&tier(Provider::Openai, &format!("{}/v1", server.uri()))).unwrap();
        let (out, waits) = ask(&c);
        let a = out.unwrap();
        assert_eq!(a.completion.text, "hello");
        assert_eq!(a.tries, 2);
        assert_eq!(waits, [Duration::from_secs(1)]);
    }

    #[test]
    fn anthropic_529_twice_then_success_backs_off_and_answers() {
        let (rt, server) = server();
        rt.block_on(async {
            Mock::given(method("POST"))
                .and(path("/messages"))
                .respond_with(ResponseTemplate::new(529).set_body_string(
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ))
                .up_to_n_times(2)
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .and(path("/messages"))
                .and(header("anthropic-version", anthropic::VERSION))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                    "type": "message", "model": "claude-x", "stop_reason": "end_turn",
                    "content": [{"type": "text", "text": "done"}],
                    "usage": {"input_tokens": 5, "output_tokens": 1}})))
                .mount(&server)
                .await;
        });
        let c = Client::new(&tier(Provider::Anthropic, &server.uri())).unwrap();
        let (out, waits) = ask(&c);
        assert_eq!(out.unwrap().completion.text, "done");
        assert_eq!(waits.len(), 2);
        assert!(
            waits[0] >= Duration::from_millis(375) && waits[0] <= Duration::from_millis(625),
            "{waits:?}"
        );
        assert!(
            waits[1] >= Duration::from_millis(750) && waits[1] <= Duration::from_millis(1250),
            "{waits:?}"
        );
    }

    #[test]
    fn a_500_forever_is_a_final_failure_as_data_after_five_tries() {
        let (rt, server) = server();
        rt.block_on(
            Mock::given(method("POST"))
                .respond_with(
                    ResponseTemplate::new(500)
                        .insert_header("retry-after-ms", "10")
                        .set_body_string("boom"),
                )
                .expect(5)
                .mount(&server),
        );
        let c = Client::new(&tier(Provider::Openai, &server.uri())).unwrap();
        let (out, waits) = ask(&c);
        let e = out.unwrap_err();
        assert_eq!(e.tries, 5);
        assert_eq!(waits.len(), 4);
        assert_eq!(
            e.describe(),
            "model API: HTTP 500 internal_server_error after 5 tries (boom)"
        );
        rt.block_on(server.verify());
    }

    #[test]
    fn a_garbage_body_or_a_refused_request_is_not_retried() {
        let (rt, server) = server();
        rt.block_on(async {
            Mock::given(path("/a/chat/completions"))
                .respond_with(ResponseTemplate::new(200).set_body_string("<html>proxy</html>"))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(path("/b/chat/completions"))
                .respond_with(ResponseTemplate::new(401).set_body_string(r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(path("/c/chat/completions"))
                .respond_with(ResponseTemplate::new(429).set_body_string(r#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#))
                .expect(1)
                .mount(&server)
                .await;
        });
        for (p, says) in [
            ("a", "not JSON"),
            ("b", "HTTP 401"),
            ("c", "insufficient_quota"),
        ] {
            let c = Client::new(&tier(Provider::Openai, &format!("{}/{p}", server.uri()))).unwrap();
            let (out, waits) = ask(&c);
            let e = out.unwrap_err();
            assert!(e.describe().contains(says), "{p}: {}", e.describe());
            assert!(waits.is_empty());
        }
        rt.block_on(server.verify());
    }

    #[test]
    fn a_missing_key_variable_is_named_and_a_set_one_is_sent() {
        // A variable every test process has, so nothing is set here (the
        // environment is shared by the test threads).
        let home = std::env::var("HOME").expect("HOME");
        let (rt, server) = server();
        rt.block_on(
            Mock::given(header("authorization", format!("Bearer {home}").as_str()))
                .respond_with(ResponseTemplate::new(200).set_body_json(ok_body()))
                .mount(&server),
        );
        let mut t = tier(Provider::Openai, &server.uri());
        t.api_key_env = Some("OODA_TEST_KEY_NEVER_SET_XYZ".into());
        let (out, _) = ask(&Client::new(&t).unwrap());
        assert!(
            out.unwrap_err()
                .describe()
                .contains("OODA_TEST_KEY_NEVER_SET_XYZ")
        );
        t.api_key_env = Some("HOME".into());
        let (out, _) = ask(&Client::new(&t).unwrap());
        assert_eq!(out.unwrap().completion.tokens.input, 10);
    }

    #[test]
    fn a_timed_out_request_is_retried_asking_for_less_and_says_which_keys_to_change() {
        // A CPU-served model: an answer of more than 512 tokens does not
        // come within the second the tier allows.
        let (rt, server) = server();
        rt.block_on(
            Mock::given(method("POST"))
                .respond_with(|req: &wiremock::Request| {
                    let body: serde_json::Value =
                        serde_json::from_slice(&req.body).unwrap_or_default();
                    let slow = body["max_tokens"].as_u64().unwrap_or(u64::MAX) > 512;
                    ResponseTemplate::new(200)
                        .set_body_json(ok_body())
                        .set_delay(Duration::from_secs(if slow { 5 } else { 0 }))
                })
                .mount(&server),
        );
        let mut t = tier(Provider::Openai, &server.uri());
        t.timeout = Duration::from_secs(1);
        let c = Client::new(&t).unwrap();
        let msgs = [Message::user("hi")];
        let req = Request {
            system: "s",
            messages: &msgs,
            tools: &[],
            max_output: 1024,
            temperature: None,
        };
        let mut waits = Vec::new();
        let a = c
            .complete(
                &req,
                1,
                &AtomicBool::new(false),
                Instant::now() + Duration::from_secs(60),
                |e, _| waits.push(e.clone()),
            )
            .unwrap()
            .unwrap();
        assert_eq!((a.tries, a.max_output), (2, 512));
        assert_eq!(waits[0].kind, "timeout");
        assert!(
            waits[0].describe().contains(
                "no answer within the `timeout` of 1s, with max_output 1024 tokens: raise `timeout` or lower `max_output` for m"
            ),
            "{}",
            waits[0].describe()
        );
        // Retries spent on timeouts are not an outage: the server is up.
        assert!(!waits[0].outage());
    }

    #[test]
    fn no_retry_waits_past_the_step_s_deadline() {
        let (rt, server) = server();
        rt.block_on(
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "30"))
                .expect(1)
                .mount(&server),
        );
        let c = Client::new(&tier(Provider::Openai, &server.uri())).unwrap();
        let msgs = [Message::user("hi")];
        let req = Request {
            system: "s",
            messages: &msgs,
            tools: &[],
            max_output: 5,
            temperature: None,
        };
        let started = Instant::now();
        let out = c
            .complete(
                &req,
                1,
                &AtomicBool::new(false),
                started + Duration::from_secs(5),
                |_, _| {},
            )
            .unwrap();
        let e = out.unwrap_err();
        assert_eq!((e.status, e.kind.as_str()), (Some(503), "step_timeout"));
        assert!(started.elapsed() < Duration::from_secs(5));
        rt.block_on(server.verify());
    }
}
