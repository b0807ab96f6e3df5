//! Operations: `/metrics` counters move with requests, `/healthz` and `/readyz`, graceful
//! shutdown that lets a download in flight finish within `shutdown_grace_secs` and no longer,
//! client authentication (`[auth]`), upstream credentials that reach the upstream and never a
//! log line, an error or a page.

// Counters are whole numbers, exact in an f64: comparing them exactly is right.
#![allow(clippy::float_cmp)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;
use wheelgate_config::{AuthConfig, ServeConfig};
use wheelgate_server::serve::{build_state, serve_until};

pub const WHEEL: &str = "demo-1.0-py3-none-any.whl";
const CHUNK: usize = 16 * 1024;

/// A fake general upstream serving `/simple/demo/` and its wheel; the wheel can be slow or
/// stall, and the whole upstream can require credentials.
#[derive(Clone, Default)]
pub struct FakeState {
    pub wheel: Bytes,
    /// Pause between chunks of the wheel.
    pub delay: Arc<Mutex<Option<Duration>>>,
    /// Stop sending after this many chunks (keeping the connection open).
    pub stall_after: Arc<Mutex<Option<usize>>>,
    /// The `Authorization` value every request must carry.
    pub required: Option<String>,
    pub seen_authorization: Arc<Mutex<Vec<String>>>,
}

pub struct Fake {
    pub addr: SocketAddr,
    pub state: FakeState,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    pub async fn start(wheel_len: usize, required: Option<&str>) -> Fake {
        let state = FakeState {
            wheel: Bytes::from(
                (0..wheel_len)
                    .map(|i| u8::try_from(i % 251).unwrap())
                    .collect::<Vec<u8>>(),
            ),
            required: required.map(str::to_string),
            ..FakeState::default()
        };
        let router = Router::new().fallback(fake).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Fake { addr, state, task }
    }
}

async fn fake(State(state): State<FakeState>, uri: Uri, headers: HeaderMap) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(value) = &authorization {
        state.seen_authorization.lock().unwrap().push(value.clone());
    }
    if let Some(required) = &state.required
        && authorization.as_deref() != Some(required)
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match uri.path() {
        "/simple/demo/" => {
            let sha = hex::encode(Sha256::digest(&state.wheel));
            (
                [(header::CONTENT_TYPE, "text/html")],
                format!(
                    "<!DOCTYPE html><html><body>\
                     <a href=\"../../packages/{WHEEL}#sha256={sha}\">{WHEEL}</a></body></html>"
                ),
            )
                .into_response()
        }
        path if path == format!("/packages/{WHEEL}") => {
            let delay = *state.delay.lock().unwrap();
            let stall = *state.stall_after.lock().unwrap();
            let len = state.wheel.len();
            let chunks: Vec<Bytes> = (0..len)
                .step_by(CHUNK)
                .map(|at| state.wheel.slice(at..(at + CHUNK).min(len)))
                .take(stall.unwrap_or(usize::MAX))
                .collect();
            let body = futures_util::stream::iter(chunks).then(move |chunk| async move {
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                Ok::<_, std::io::Error>(chunk)
            });
            let body = if stall.is_some() {
                Body::from_stream(body.chain(futures_util::stream::pending()))
            } else {
                Body::from_stream(body)
            };
            Response::builder()
                .header(header::CONTENT_LENGTH, len)
                .body(body)
                .unwrap()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A running proxy stopped by sending on `stop`; `done` resolves when the server returned.
pub struct Proxy {
    pub addr: SocketAddr,
    pub stop: Option<oneshot::Sender<()>>,
    pub done: tokio::task::JoinHandle<Result<(), wheelgate_server::serve::StartError>>,
    pub cache: tempfile::TempDir,
}

impl Proxy {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn shutdown(&mut self) {
        let _ = self.stop.take().unwrap().send(());
    }
}

/// A proxy whose general upstream is `pypi_url`, with `configure` applied.
pub async fn start(pypi_url: String, configure: impl FnOnce(&mut ServeConfig)) -> Proxy {
    let cache = tempfile::tempdir().unwrap();
    let mut config = ServeConfig {
        pytorch_url: format!("{pypi_url}/whl"),
        pypi_url: format!("{pypi_url}/simple"),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(
            serde_json::from_str(
                r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver":"580.65.06","gpus":[{"name":"NVIDIA H100","compute_capability":"9.0"}]}}"#,
            )
            .unwrap(),
        ),
        ..ServeConfig::default()
    };
    configure(&mut config);
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(serve_until(listener, state, async move {
        let _ = stopped.await;
    }));
    Proxy {
        addr,
        stop: Some(stop),
        done,
        cache,
    }
}

/// `name{labels}` → value of every sample in a Prometheus text exposition.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

async fn scrape(proxy: &Proxy) -> BTreeMap<String, f64> {
    let response = reqwest::get(proxy.url("/metrics")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    parse_metrics(&response.text().await.unwrap())
}

fn value(metrics: &BTreeMap<String, f64>, series: &str) -> f64 {
    metrics.get(series).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_cache_results_and_upstream_latency() {
    let fake = Fake::start(100 * 1024, None).await;
    let proxy = start(format!("http://{}", fake.addr), |_| {}).await;
    let before = scrape(&proxy).await;
    assert_eq!(
        value(
            &before,
            "wheelgate_http_requests_total{route=\"simple\",status=\"200\"}"
        ),
        0.0
    );
    // Which build runs, as `wheelgate --version` says it.
    let build = format!(
        "wheelgate_build_info{{version=\"{}\",commit=\"{}\",build_date=\"{}\"}}",
        wheelgate_server::build_info::VERSION,
        wheelgate_server::build_info::COMMIT,
        wheelgate_server::build_info::BUILD_DATE
    );
    assert_eq!(value(&before, &build), 1.0, "{before:?}");

    let page = reqwest::get(proxy.url("/simple/demo/")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page_len = page.bytes().await.unwrap().len();
    for _ in 0..2 {
        let file = reqwest::get(proxy.url(&format!("/files/demo/{WHEEL}")))
            .await
            .unwrap();
        assert_eq!(file.status(), StatusCode::OK);
        assert_eq!(file.bytes().await.unwrap(), fake.state.wheel);
    }
    let missing = reqwest::get(proxy.url("/nothing-here")).await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    let after = scrape(&proxy).await;
    let upstream = fake.addr.to_string();
    for (series, expected) in [
        (
            "wheelgate_http_requests_total{route=\"simple\",status=\"200\"}",
            1.0,
        ),
        (
            "wheelgate_http_requests_total{route=\"files\",status=\"200\"}",
            2.0,
        ),
        (
            "wheelgate_http_requests_total{route=\"other\",status=\"404\"}",
            1.0,
        ),
        // The first scrape counted itself once it was answered.
        (
            "wheelgate_http_requests_total{route=\"ops\",status=\"200\"}",
            1.0,
        ),
        ("wheelgate_file_cache_requests_total{result=\"miss\"}", 1.0),
        ("wheelgate_file_cache_requests_total{result=\"hit\"}", 1.0),
        (
            "wheelgate_http_response_bytes_total{route=\"files\"}",
            2.0 * 100.0 * 1024.0,
        ),
        ("wheelgate_file_cache_files", 1.0),
        ("wheelgate_file_cache_bytes", 100.0 * 1024.0),
        ("wheelgate_downloads_in_flight{route=\"files\"}", 0.0),
        // The page once for the listing, then served from cache for both file lookups.
        ("wheelgate_index_cache_requests_total{result=\"miss\"}", 1.0),
        ("wheelgate_index_cache_requests_total{result=\"hit\"}", 2.0),
    ] {
        assert_eq!(value(&after, series), expected, "{series}");
    }
    #[allow(clippy::cast_precision_loss)]
    let page_len = page_len as f64;
    assert!(
        value(
            &after,
            "wheelgate_http_response_bytes_total{route=\"simple\"}"
        ) >= page_len
    );
    // One page request and one file download reached the upstream.
    assert_eq!(
        value(
            &after,
            &format!(
                "wheelgate_upstream_request_duration_seconds_count{{upstream=\"{upstream}\"}}"
            )
        ),
        2.0
    );
    assert_eq!(
        value(
            &after,
            &format!(
                "wheelgate_upstream_request_duration_seconds_bucket{{upstream=\"{upstream}\",le=\"+Inf\"}}"
            )
        ),
        2.0
    );
    assert_eq!(
        value(
            &after,
            &format!(
                "wheelgate_upstream_errors_total{{upstream=\"{upstream}\",kind=\"connection\"}}"
            )
        ),
        0.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_are_counted_by_upstream() {
    // A port nothing listens on: every attempt fails to connect.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let proxy = start(format!("http://{closed}"), |_| {}).await;
    let page = reqwest::get(proxy.url("/simple/demo/")).await.unwrap();
    assert_eq!(page.status(), StatusCode::BAD_GATEWAY);
    let metrics = scrape(&proxy).await;
    // The first attempt and two retries.
    assert_eq!(
        value(
            &metrics,
            &format!(
                "wheelgate_upstream_errors_total{{upstream=\"{closed}\",kind=\"connection\"}}"
            )
        ),
        3.0
    );
    assert_eq!(
        value(
            &metrics,
            "wheelgate_http_requests_total{route=\"simple\",status=\"502\"}"
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness() {
    let fake = Fake::start(10, None).await;
    let proxy = start(format!("http://{}", fake.addr), |_| {}).await;
    let health = reqwest::get(proxy.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let ready = reqwest::get(proxy.url("/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    // Readiness never depends on the upstream: a server with a cache serves stale pages.
    drop(fake);
    let ready = reqwest::get(proxy.url("/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}

/// A cache directory whose filesystem is (nearly) full still takes the two-byte probe, but
/// every download would break off (issue 20, item 8): not ready, saying why. No test here can
/// fill a disk, so the threshold is raised past any disk's free space instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_filesystem_without_room_is_not_ready() {
    let fake = Fake::start(10, None).await;
    let proxy = start(format!("http://{}", fake.addr), |c| {
        c.limits.min_free_bytes = u64::MAX;
    })
    .await;
    let health = reqwest::get(proxy.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let ready = reqwest::get(proxy.url("/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let text = ready.text().await.unwrap();
    assert!(
        text.contains("bytes free, under `[limits] min_free_bytes`"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_download_in_flight_finish() {
    let fake = Fake::start(512 * 1024, None).await;
    // 32 chunks × 50 ms: the download takes about 1.6 s.
    *fake.state.delay.lock().unwrap() = Some(Duration::from_millis(50));
    let mut proxy = start(format!("http://{}", fake.addr), |c| {
        c.shutdown_grace_secs = 20;
    })
    .await;
    let url = proxy.url(&format!("/files/demo/{WHEEL}"));
    let download = tokio::spawn(async move {
        let response = reqwest::get(url).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.bytes().await
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let asked = Instant::now();
    proxy.shutdown();
    // New connections are refused once the server stopped accepting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(reqwest::get(proxy.url("/healthz")).await.is_err());
    let body = download
        .await
        .unwrap()
        .expect("the download in flight completes");
    assert_eq!(body, fake.state.wheel);
    let result = tokio::time::timeout(Duration::from_secs(5), &mut proxy.done)
        .await
        .expect("the server returns once the download finished");
    result.unwrap().unwrap();
    assert!(asked.elapsed() < Duration::from_secs(10));
}

// The server runs on its own runtime, dropped when `serve_until` returns, as `wheelgate serve`
// does: that is what closes the connections still open after the grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_no_longer_than_the_grace() {
    let fake = Fake::start(512 * 1024, None).await;
    *fake.state.stall_after.lock().unwrap() = Some(2);
    let cache = tempfile::tempdir().unwrap();
    let config = ServeConfig {
        pypi_url: format!("http://{}/simple", fake.addr),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        shutdown_grace_secs: 1,
        ..ServeConfig::default()
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let (bound, addr) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let state = build_state(config).await.unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            bound.send(listener.local_addr().unwrap()).unwrap();
            serve_until(listener, state, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Instant::now()
    });
    let addr: SocketAddr = addr.recv().unwrap();
    let url = format!("http://{addr}/files/demo/{WHEEL}");
    let download = tokio::spawn(async move {
        let response = reqwest::get(url).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.bytes().await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = Instant::now();
    stop.send(()).unwrap();
    let returned = tokio::task::spawn_blocking(move || server.join().unwrap())
        .await
        .unwrap();
    let waited = returned - asked;
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    // The stalled response was cut, never completed with a short file.
    let outcome = tokio::time::timeout(Duration::from_secs(5), download)
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.is_err(), "a cut download must not look complete");
}

fn auth_config() -> AuthConfig {
    toml::from_str(
        r#"
        basic = [{ user = "ci", password = "s3cret" }]
        bearer = ["tok-123"]
        "#,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_guards_every_route_but_the_probes() {
    let fake = Fake::start(10 * 1024, None).await;
    let proxy = start(format!("http://{}", fake.addr), |c| c.auth = auth_config()).await;
    let client = reqwest::Client::new();
    for path in [
        "/",
        "/simple/",
        "/simple/demo/",
        &format!("/files/demo/{WHEEL}"),
        "/metrics",
    ] {
        let response = client.get(proxy.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Basic realm=\"wheelgate\""
        );
        let wrong = client
            .get(proxy.url(path))
            .basic_auth("ci", Some("wrong"))
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    for path in ["/healthz", "/readyz"] {
        let response = client.get(proxy.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
    let page = client
        .get(proxy.url("/simple/demo/"))
        .basic_auth("ci", Some("s3cret"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let file = client
        .get(proxy.url(&format!("/files/demo/{WHEEL}")))
        .bearer_auth("tok-123")
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(file.bytes().await.unwrap(), fake.state.wheel);
    let metrics = client
        .get(proxy.url("/metrics"))
        .bearer_auth("tok-123")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Refusals are counted like every other answer.
    assert!(
        metrics.contains("wheelgate_http_requests_total{route=\"simple\",status=\"401\"}"),
        "{metrics}"
    );

    let open_metrics = start(format!("http://{}", fake.addr), |c| {
        c.auth = auth_config();
        c.auth.public_metrics = true;
    })
    .await;
    let response = client
        .get(open_metrics.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = client
        .get(open_metrics.url("/simple/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

/// Collects every log line written while it is the thread's default subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// A current-thread runtime: the capturing subscriber is the default of this thread, where the
// proxy, its download tasks and the test all run.
#[tokio::test(flavor = "current_thread")]
async fn upstream_credentials_reach_the_upstream_and_nothing_else() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("wheelgate=trace")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // "mirror:hunter2-secret"
    let fake = Fake::start(10 * 1024, Some("Basic bWlycm9yOmh1bnRlcjItc2VjcmV0")).await;
    let proxy = start(
        format!("http://mirror:hunter2-secret@{}", fake.addr),
        |_| {},
    )
    .await;
    let page = reqwest::get(proxy.url("/simple/demo/")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    let file = reqwest::get(proxy.url(&format!("/files/demo/{WHEEL}")))
        .await
        .unwrap();
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(file.bytes().await.unwrap(), fake.state.wheel);
    assert!(
        fake.state.seen_authorization.lock().unwrap().len() >= 2,
        "the page and the file were both fetched with the credentials"
    );
    // No stored page holds them: pages are keyed by the URL without `user:password@`.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut stack = vec![proxy.cache.path().to_path_buf()];
    let mut stored = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                stored += 1;
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("hunter2"),
                    "{} holds the password",
                    path.display()
                );
            }
        }
    }
    assert!(stored > 0, "the page and the file were stored");

    // The upstream goes away: errors everywhere, and still no password.
    let failing_addr = fake.addr;
    drop(fake);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let failed = reqwest::get(proxy.url("/simple/other/")).await.unwrap();
    assert_eq!(failed.status(), StatusCode::BAD_GATEWAY);
    let failed = failed.text().await.unwrap();
    let metrics = reqwest::get(proxy.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let status = reqwest::get(proxy.url("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // And directly: the errors the client returns, with their whole chain of causes.
    let client = UpstreamClient::new(&ClientSettings {
        retries: 0,
        ..ClientSettings::default()
    })
    .unwrap();
    let error = client
        .get_page(
            &format!("http://mirror:hunter2-secret@{failing_addr}/simple/x/"),
            "text/html",
            None,
            None,
        )
        .await
        .unwrap_err();
    let mut chain = format!("{error} {error:?}");
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let _ = write!(chain, " {cause} {cause:?}");
        source = cause.source();
    }
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("upstream"), "the failure was logged: {logs}");
    for (what, text) in [
        ("page", &page),
        ("error response", &failed),
        ("metrics", &metrics),
        ("status page", &status),
        ("error chain", &chain),
        ("logs", &logs),
    ] {
        assert!(
            !text.contains("hunter2"),
            "{what} leaks the password: {text}"
        );
    }
}
