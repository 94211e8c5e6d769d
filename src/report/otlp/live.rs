//! Spans sent to a collector while the loop runs (OTLP/HTTP).
//!
//! Set `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) and every
//! iteration is sent when it ends, the run's own span when the run stops.
//! A span is only complete when its work ends, so this exporter does not
//! stream events: at an iteration's end it rebuilds that iteration from
//! `events.jsonl` (redacted, and whole even when the iteration was resumed
//! by a later tick) and posts it.
//!
//! A collector must never slow or stop the loop: the sink only hands a
//! job to a thread of its own; the thread posts with a timeout, warns on
//! stderr once when the collector fails, and drops what it could not send.
//! At exit, what is queued gets a few seconds to go out.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::Result;
use crate::events::{Event, Record, Sink};

/// What the thread is asked to send.
enum Job {
    Iteration { run_id: String, iteration: u32 },
    Run { run_id: String },
}

/// Where and how to send, from the standard OTLP exporter variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub json: bool,
    pub timeout: Duration,
    /// A protocol ooda does not speak (`grpc`): said once, at the start.
    pub warning: Option<String>,
}

impl Endpoint {
    /// `None` when no endpoint is set. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// is used as it is; `OTEL_EXPORTER_OTLP_ENDPOINT` gets `/v1/traces`.
    pub(crate) fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Endpoint> {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(u) => u.trim().to_string(),
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?
                    .trim()
                    .trim_end_matches('/')
            ),
        };
        let headers = set("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| set("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|h| parse_headers(&h))
            .unwrap_or_default();
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_default();
        let timeout = set("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| set("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(10));
        let protocol = protocol.trim();
        let warning = match protocol {
            "" | "http/protobuf" | "http/json" => None,
            other => Some(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={other}: ooda exports over OTLP/HTTP only (http/protobuf or http/json); posting protobuf to {url} (a collector's HTTP port is usually 4318, its gRPC port 4317)"
            )),
        };
        Some(Endpoint {
            url,
            headers,
            json: protocol == "http/json",
            timeout,
            warning,
        })
    }
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

/// The sink that feeds the exporter thread.
pub(crate) struct Live {
    tx: Mutex<Option<Sender<Job>>>,
    /// What ended but may still log (the synthesizer writes its notes
    /// after the verdict, and after the stop on the last iteration): sent
    /// when the next iteration starts or the process ends.
    ended: Mutex<Vec<Job>>,
    done: Mutex<Option<(Receiver<()>, JoinHandle<()>)>>,
}

impl Live {
    /// An exporter for the Brief whose log is `dir/events.jsonl`, when the
    /// environment names a collector.
    pub(crate) fn from_env(dir: &Path) -> Option<Live> {
        let endpoint = Endpoint::from_env(|k| std::env::var(k).ok())?;
        if let Some(w) = &endpoint.warning {
            eprintln!("warning: {w}");
        }
        Some(Live::start(dir.to_path_buf(), endpoint))
    }

    pub(crate) fn start(dir: PathBuf, endpoint: Endpoint) -> Live {
        let (tx, rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            let mut sender = Exporter::new(endpoint);
            for job in rx {
                sender.send(&dir, job);
            }
            let _ = done_tx.send(());
        });
        Live {
            tx: Mutex::new(Some(tx)),
            ended: Mutex::new(Vec::new()),
            done: Mutex::new(Some((done_rx, handle))),
        }
    }
}

impl Live {
    fn queue(&self, job: Job) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = tx.send(job);
        }
    }

    fn flush_ended(&self) {
        let ended = std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()));
        for job in ended {
            self.queue(job);
        }
    }

    fn ended(&self, job: Job) {
        self.ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(job);
    }
}

impl Sink for Live {
    fn record(&self, r: &Record) -> Result<()> {
        match (&r.event, r.iteration) {
            (Event::Verdict { .. }, Some(n))
            // The baseline ends with its archive, without a verdict event.
            | (Event::LearnArchived { .. }, Some(n @ 0)) => {
                self.flush_ended();
                self.ended(Job::Iteration {
                    run_id: r.run_id.clone(),
                    iteration: n,
                });
            }
            (Event::IterationStarted { .. }, _) => self.flush_ended(),
            (Event::RunFinished { .. }, _) => self.ended(Job::Run {
                run_id: r.run_id.clone(),
            }),
            _ => {}
        }
        Ok(())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.flush_ended();
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((done, handle)) = self.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // What is queued gets a few seconds; a dead collector does not
            // hold the process.
            if done.recv_timeout(Duration::from_secs(5)).is_ok() {
                let _ = handle.join();
            }
        }
    }
}

/// The exporter thread's state.
struct Exporter {
    endpoint: Endpoint,
    client: Option<(reqwest::Client, tokio::runtime::Runtime)>,
    warned: bool,
}

impl Exporter {
    fn new(endpoint: Endpoint) -> Exporter {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .and_then(|rt| {
                // The client's timers belong to this runtime.
                let _in = rt.enter();
                // One post per iteration: a pooled connection would sit idle
                // past the collector's keep-alive and fail on reuse.
                let http = reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .connect_timeout(Duration::from_secs(5))
                    .timeout(endpoint.timeout)
                    .build()
                    .ok()?;
                drop(_in);
                Some((http, rt))
            });
        Exporter {
            endpoint,
            client,
            warned: false,
        }
    }

    fn send(&mut self, dir: &Path, job: Job) {
        if let Err(why) = self.try_send(dir, job) {
            if !self.warned {
                eprintln!(
                    "ooda: could not send spans to {} ({why}); the loop goes on, and `ooda export --otlp` writes them from events.jsonl later",
                    self.endpoint.url
                );
            }
            self.warned = true;
        }
    }

    fn try_send(&self, dir: &Path, job: Job) -> std::result::Result<(), String> {
        // An iteration that just ended is in the live log (seals happen
        // between iterations); the whole run, at a stop, needs every part.
        let records = match &job {
            Job::Iteration { .. } => crate::events::read_live(dir),
            Job::Run { .. } => crate::events::read_all(dir),
        }
        .map_err(|e| e.to_string())?;
        let runs = crate::report::trace::build(&records);
        let (run_id, iteration) = match &job {
            Job::Iteration { run_id, iteration } => (run_id, Some(*iteration)),
            Job::Run { run_id } => (run_id, None),
        };
        let Some(run) = runs
            .iter()
            .rev()
            .find(|r| r.attribute("run_id") == Some(run_id.as_str()))
        else {
            return Ok(());
        };
        let batch = match iteration {
            Some(n) => match crate::report::trace::iteration(run, n) {
                Some(it) => super::iteration_batch(run, it),
                None => return Ok(()),
            },
            None => super::run_batch(run),
        };
        let (body, content_type) = if self.endpoint.json {
            (super::json::encode(&batch).into_bytes(), "application/json")
        } else {
            (super::proto::encode(&batch), "application/x-protobuf")
        };
        let Some((client, rt)) = &self.client else {
            return Err("no HTTP client could be built".into());
        };
        let mut req = client
            .post(&self.endpoint.url)
            .header("content-type", content_type)
            .body(body);
        for (k, v) in &self.endpoint.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        // `send` starts the timeout's timer: it must run inside the runtime.
        let resp = rt
            .block_on(async { req.send().await })
            .map_err(|e| format!("{e}"))?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status().as_u16()));
        }
        Ok(())
    }
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
        assert_eq!(e.timeout, Duration::from_millis(2500));
        assert_eq!(e.warning, None);
        let e = Endpoint::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]))
        .unwrap();
        assert!(!e.json);
        assert!(
            e.warning.as_deref().unwrap().contains("OTLP/HTTP only"),
            "{e:?}"
        );
    }
}
