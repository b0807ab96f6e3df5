//! A wheelgate server for fault tests: the real state and the real accept loop
//! (`serve_until`, with `[limits]` in force), in front of a [`Rogue`] upstream, with tight
//! limits so faults show in seconds.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use wheelgate_config::ServeConfig;
use wheelgate_server::AppState;
use wheelgate_server::serve::{build_state, serve_until};

use super::rogue_upstream::Rogue;

pub const CPU_MACHINE: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;

pub struct Proxy {
    pub addr: SocketAddr,
    pub state: AppState,
    pub cache: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Proxy {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// The configuration fault tests start from: the rogue upstream as both upstreams, a CPU
/// machine, a 1 s TTL, an expired page's revalidation awaited 300 ms at most, and upstream
/// limits of 1 s per attempt and 2 s in all.
pub fn config(rogue: &Rogue, cache: &std::path::Path) -> ServeConfig {
    let mut config = ServeConfig {
        pytorch_url: rogue.url("/whl"),
        pypi_url: rogue.url("/simple"),
        cache_dir: cache.to_path_buf(),
        machine: Some(serde_json::from_str(CPU_MACHINE).unwrap()),
        index_ttl_secs: 1,
        shutdown_grace_secs: 1,
        ..ServeConfig::default()
    };
    config.limits.upstream_attempt_secs = 1;
    config.limits.upstream_deadline_secs = 2;
    config.limits.revalidate_wait_ms = 300;
    config
}

pub async fn start(rogue: &Rogue, edit: impl FnOnce(&mut ServeConfig)) -> Proxy {
    let cache = tempfile::tempdir().unwrap();
    let mut config = config(rogue, cache.path());
    edit(&mut config);
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_until(listener, state.clone(), async move {
        let _ = stopped.await;
    }));
    Proxy {
        addr,
        state,
        cache,
        stop: Some(stop),
    }
}

/// One client for the test (building one loads the TLS roots, tens of milliseconds): a
/// generous timeout (the tests measure the time themselves), no redirects followed.
pub fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .timeout(Duration::from_mins(1))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap()
        })
        .clone()
}

/// GETs `url`: status, body and how long it took.
pub async fn get(url: &str) -> (u16, Vec<u8>, Duration) {
    let started = Instant::now();
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    (status, body, started.elapsed())
}

pub fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// The value of one series in `/metrics`, `0` when absent.
pub async fn metric(proxy: &Proxy, series: &str) -> u64 {
    let (_, body, _) = get(&proxy.url("/metrics")).await;
    text(&body)
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

/// The server's log lines, shown for failing tests.
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("wheelgate=debug")
        .try_init();
}
