//! Index pages shared through the object store, against the real S3 server of
//! `object_store.rs` (`s3s-fs`, `scripts/s3-setup`) and an upstream serving the captured
//! download.pytorch.org torch page with an `ETag` (and 304s). Replicas of one fleet share the
//! upstream URL and the bucket, each with its own cache directory: a cold replica serves what
//! another published even with the upstream gone, honours the TTL, adopts a fresher copy instead
//! of asking the upstream, and a bucket that fails or holds garbage changes nothing for clients.
//! A project the upstream no longer has leaves the bucket; offline, the bucket is read only.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use wheelgate_config::{ObjectStoreConfig, ServeConfig};
use wheelgate_files::cache::BucketHealth;
use wheelgate_server::serve::build_state;
use wheelgate_server::{AppState, app};

use super::fake_upstream::sha256;
use super::object_store::{BUCKET, Logs, PREFIX, S3Server, SECRET_KEY};

const H100: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
/// The TTL of the fleet tests: long enough that a copy one replica just published (its fetch
/// time kept in whole seconds) is still fresh when the other looks, on a loaded machine too.
const FLEET_TTL: Duration = Duration::from_secs(4);
/// A release the older copy of the page does not list yet.
const NEW_RELEASE: &str = "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl";

/// The captured download.pytorch.org page of torch's cu130 builds (2.9.0 to 2.11.0), read in
/// place from the shared fixtures.
fn full_page() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("fixture `{path}`: {e}"))
}

/// The same page before 2.11.0 was released.
fn older_page() -> String {
    let mut page = String::new();
    for line in full_page()
        .lines()
        .filter(|line| !line.contains(">torch-2.11.0"))
    {
        page.push_str(line);
        page.push('\n');
    }
    page
}

/// The torch page (`/whl/torch/`) with an `ETag`; a matching `If-None-Match` gets a 304.
#[derive(Clone, Default)]
struct PageState {
    /// `(etag, body)`.
    page: Arc<Mutex<(String, String)>>,
    hits: Arc<AtomicUsize>,
    not_modified: Arc<AtomicUsize>,
    /// Answer 404: the project is gone.
    gone: Arc<AtomicBool>,
}

/// The upstream; shut down on drop (new connections are refused from then on).
struct Upstream {
    addr: SocketAddr,
    state: PageState,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    async fn start(etag: &str, body: String) -> Upstream {
        let state = PageState::default();
        *state.page.lock().unwrap() = (format!("\"{etag}\""), body);
        let router = Router::new()
            .route("/whl/torch/", axum::routing::get(torch_page))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Upstream { addr, state, task }
    }

    fn set(&self, etag: &str, body: String) {
        *self.state.page.lock().unwrap() = (format!("\"{etag}\""), body);
    }

    fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    fn not_modified(&self) -> usize {
        self.state.not_modified.load(Ordering::SeqCst)
    }

    /// The URL replicas fetch and key the page by.
    fn page_url(&self) -> String {
        format!("http://{}/whl/torch/", self.addr)
    }
}

async fn torch_page(State(state): State<PageState>, headers: HeaderMap) -> Response {
    state.hits.fetch_add(1, Ordering::SeqCst);
    if state.gone.load(Ordering::SeqCst) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let (etag, body) = state.page.lock().unwrap().clone();
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        state.not_modified.fetch_add(1, Ordering::SeqCst);
        return StatusCode::NOT_MODIFIED.into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "text/html".to_string()),
            (header::ETAG, etag),
        ],
        body,
    )
        .into_response()
}

/// One proxy replica on a free port with its own cache directory; shut down on drop.
struct Replica {
    addr: SocketAddr,
    state: AppState,
    task: tokio::task::JoinHandle<()>,
    cache: tempfile::TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Replica {
    async fn start(
        upstream: SocketAddr,
        object_store: ObjectStoreConfig,
        edit: impl FnOnce(&mut ServeConfig),
    ) -> Replica {
        let cache = tempfile::tempdir().unwrap();
        let mut config = ServeConfig {
            pytorch_url: format!("http://{upstream}/whl"),
            pypi_url: format!("http://{upstream}/simple"),
            cache_dir: cache.path().to_path_buf(),
            machine: Some(serde_json::from_str(H100).unwrap()),
            object_store: Some(object_store),
            ..ServeConfig::default()
        };
        edit(&mut config);
        let state = build_state(config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = app(state.clone());
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Replica {
            addr,
            state,
            task,
            cache,
        }
    }

    /// `GET /simple/torch/`: status and body.
    async fn torch(&self) -> (StatusCode, String) {
        let response = reqwest::get(format!("http://{}/simple/torch/", self.addr))
            .await
            .unwrap();
        let status = response.status();
        (status, response.text().await.unwrap())
    }

    async fn metrics(&self) -> String {
        reqwest::get(format!("http://{}/metrics", self.addr))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    fn health(&self) -> BucketHealth {
        self.state
            .files
            .object_store_health()
            .expect("a bucket is configured")
    }

    /// Waits until `done` pages were published (or failed to be).
    async fn pages_settled(&self, done: u64) -> BucketHealth {
        until("pages published", || {
            let health = self.health();
            health.pages_published + health.page_publishes_failed >= done
        })
        .await;
        self.health()
    }

    /// Waits until no page refresh runs.
    async fn refreshes_done(&self) {
        until("refreshes done", || {
            self.state.index.refreshes_in_flight() == 0
        })
        .await;
    }

    /// Whether the cached copy of `url` lists [`NEW_RELEASE`].
    async fn lists_new_release(&self, url: &str) -> bool {
        let page = self.state.index.peek(url).await.expect("a cached page");
        page.find(NEW_RELEASE).is_some()
    }
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The object the page at `url` is shared as.
fn page_object(url: &str) -> Path {
    Path::from(format!("{PREFIX}/index/{}.json", sha256(url.as_bytes())))
}

/// The bucket's copy of the page at `url`: its header line, with the body that follows it
/// under `body`.
async fn stored_page(s3: &S3Server, url: &str) -> serde_json::Value {
    let bytes = s3
        .client()
        .get(&page_object(url))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .expect("a header line");
    let mut stored: serde_json::Value = serde_json::from_slice(&bytes[..end]).unwrap();
    let body = std::str::from_utf8(&bytes[end + 1..]).unwrap();
    assert_eq!(stored["body_bytes"].as_u64(), Some(body.len() as u64));
    stored["body"] = body.into();
    stored
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_cold_replica_serves_what_another_published_with_the_upstream_gone() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", full_page()).await;
    let url = upstream.page_url();
    let first = Replica::start(upstream.addr, s3.config(SECRET_KEY), |_| {}).await;
    let (status, served) = first.torch().await;
    assert_eq!(status, StatusCode::OK);
    assert!(served.contains("torch-2.11.0"), "{served}");
    let health = first.pages_settled(1).await;
    assert_eq!(
        (health.pages_published, health.page_publishes_failed),
        (1, 0)
    );
    let stored = stored_page(&s3, &url).await;
    assert_eq!(stored["url"], url.as_str());
    assert_eq!(stored["etag"], "\"v1\"");
    assert_eq!(stored["body"], full_page().as_str());
    assert!(
        first
            .metrics()
            .await
            .contains("wheelgate_index_pages_published_total 1")
    );

    let addr = upstream.addr;
    drop(upstream);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    let second = Replica::start(addr, s3.config(SECRET_KEY), |_| {}).await;
    let (status, body) = second.torch().await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, served, "the second replica served another page");
    assert_eq!(second.health().page_hits, 1);
    assert!(
        second
            .metrics()
            .await
            .contains("wheelgate_index_cache_requests_total{result=\"bucket\"} 1")
    );
    // Kept on its local disk too: it needs neither bucket nor upstream again.
    let local = second
        .cache
        .path()
        .join(format!("index/{}.json", sha256(url.as_bytes())));
    assert!(local.is_file(), "no local copy at {}", local.display());
    // Fresh: served again without asking anyone, and never republished.
    let (_, again) = second.torch().await;
    assert_eq!(again, served);
    assert_eq!(second.health().page_hits, 1);
    assert_eq!(second.health().pages_published, 0);
}

#[tokio::test]
async fn an_expired_bucket_copy_is_served_at_once_and_refreshed_in_the_background() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v2", full_page()).await;
    let url = upstream.page_url();
    // Another replica published the older page an hour ago.
    let hour_ago = now_secs() - 3600;
    let old = serde_json::json!({
        "url": url,
        "content_type": "text/html",
        "body": older_page(),
        "etag": "\"v1\"",
        "last_modified": null,
        "fetched_at_secs": hour_ago,
    });
    s3.client()
        .put(&page_object(&url), serde_json::to_vec(&old).unwrap().into())
        .await
        .unwrap();
    let replica = Replica::start(upstream.addr, s3.config(SECRET_KEY), |config| {
        config.index_ttl_secs = 600;
    })
    .await;

    let (status, body) = replica.torch().await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("torch-2.10.0"), "{body}");
    assert!(
        !body.contains("torch-2.11.0"),
        "the expired copy is answered at once, not after the upstream"
    );
    assert_eq!(replica.health().page_hits, 1);

    // The background refresh asks the upstream (the copy is past the TTL) and publishes.
    replica.pages_settled(1).await;
    replica.refreshes_done().await;
    assert_eq!(upstream.hits(), 1);
    assert_eq!(upstream.not_modified(), 0, "sent the old copy's `ETag`");
    let (_, body) = replica.torch().await;
    assert!(body.contains("torch-2.11.0"), "{body}");
    let stored = stored_page(&s3, &url).await;
    assert_eq!(stored["etag"], "\"v2\"");
    assert!(stored["fetched_at_secs"].as_u64().unwrap() >= now_secs() - 60);
    assert_eq!(upstream.hits(), 1);
}

#[tokio::test]
async fn a_fleet_asks_the_upstream_once_per_ttl() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", full_page()).await;
    let url = upstream.page_url();
    let ttl = |config: &mut ServeConfig| config.index_ttl_secs = FLEET_TTL.as_secs();
    let first = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;
    let second = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;

    assert_eq!(first.torch().await.0, StatusCode::OK);
    first.pages_settled(1).await;
    assert_eq!(second.torch().await.0, StatusCode::OK);
    assert_eq!(second.health().page_hits, 1);
    assert_eq!(upstream.hits(), 1);

    tokio::time::sleep(FLEET_TTL + Duration::from_millis(500)).await;
    // Both copies expired. The first replica's refresh finds nothing fresher in the bucket (its
    // own copy is as old as its own), revalidates upstream (304) and publishes the new fetch
    // time.
    assert_eq!(first.torch().await.0, StatusCode::OK);
    first.refreshes_done().await;
    first.pages_settled(2).await;
    assert_eq!((upstream.hits(), upstream.not_modified()), (2, 1));
    let stored = stored_page(&s3, &url).await;
    assert!(stored["fetched_at_secs"].as_u64().unwrap() >= now_secs() - FLEET_TTL.as_secs());

    // The second replica's refresh adopts that copy instead of asking the upstream.
    assert_eq!(second.torch().await.0, StatusCode::OK);
    second.refreshes_done().await;
    assert_eq!(second.health().page_hits, 2);
    assert_eq!(upstream.hits(), 2, "the second replica asked the upstream");
    let page = second.state.index.peek(&url).await.unwrap();
    assert!(page.fetched_at().elapsed().unwrap() < FLEET_TTL);
    // Fresh now: no one is asked.
    assert_eq!(second.torch().await.0, StatusCode::OK);
    assert_eq!(second.health().page_hits, 2);
    assert_eq!(upstream.hits(), 2);
    assert_eq!(second.health().pages_published, 0);
}

#[tokio::test]
async fn a_newer_page_one_replica_fetched_is_adopted_by_the_others() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", older_page()).await;
    let url = upstream.page_url();
    let ttl = |config: &mut ServeConfig| config.index_ttl_secs = FLEET_TTL.as_secs();
    let first = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;
    let second = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;
    assert_eq!(first.torch().await.0, StatusCode::OK);
    first.pages_settled(1).await;
    assert_eq!(second.torch().await.0, StatusCode::OK);
    assert_eq!(upstream.hits(), 1);
    let before = first.state.index.peek(&url).await.unwrap().generation;

    // 2.11.0 is released; the second replica is the first to refresh.
    upstream.set("v2", full_page());
    tokio::time::sleep(FLEET_TTL + Duration::from_millis(500)).await;
    // Expired: revalidated before it is answered, so the release is served at once.
    let (_, body) = second.torch().await;
    assert!(body.contains("torch-2.11.0"), "the new release");
    second.refreshes_done().await;
    let health = second.pages_settled(1).await;
    assert_eq!(health.pages_published, 1);
    assert!(second.lists_new_release(&url).await);
    assert_eq!(upstream.hits(), 2);

    // The first replica adopts it: a new page, no upstream request.
    let (_, body) = first.torch().await;
    assert!(
        body.contains("torch-2.11.0"),
        "adopted before it is answered"
    );
    first.refreshes_done().await;
    assert_eq!(first.health().page_hits, 1);
    assert!(first.lists_new_release(&url).await);
    assert_ne!(
        first.state.index.peek(&url).await.unwrap().generation,
        before
    );
    let (_, body) = first.torch().await;
    assert!(body.contains("torch-2.11.0"), "{body}");
    assert_eq!(upstream.hits(), 2);
    assert_eq!(
        first.health().pages_published,
        1,
        "republished the adopted copy"
    );
}

#[tokio::test]
async fn a_bucket_that_is_down_never_fails_a_page() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let mut s3 = S3Server::start().await;
    let config = s3.config(SECRET_KEY);
    let upstream = Upstream::start("v1", full_page()).await;
    // Healthy at start, gone before its first page: the lookup fails, the upstream answers.
    let first = Replica::start(upstream.addr, config.clone(), |_| {}).await;
    assert!(first.health().available);
    s3.kill();
    let started = Instant::now();
    let (status, body) = first.torch().await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("torch-2.11.0"));
    let health = first.pages_settled(1).await;
    assert!(!health.available, "{health:?}");
    assert_eq!(
        (health.pages_published, health.page_publishes_failed),
        (0, 1)
    );
    assert!(health.last_error.unwrap().contains(&format!("`{BUCKET}`")));
    // Started with the bucket down (degraded): lookups are skipped while it rests.
    let second = Replica::start(upstream.addr, config, |_| {}).await;
    assert!(!second.health().available);
    let (status, second_body) = second.torch().await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(second_body, body);
    assert_eq!(upstream.hits(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let logs = logs.text();
    for message in [
        "object store page lookup failed",
        "cannot publish an index page",
    ] {
        assert!(
            logs.lines().any(|line| line.contains("WARN")
                && line.contains(message)
                && line.contains(BUCKET)),
            "no warning `{message}` naming the bucket:\n{logs}"
        );
    }
    assert!(!logs.contains(SECRET_KEY), "credentials in the log");
}

#[tokio::test]
async fn a_corrupt_bucket_copy_is_ignored_and_replaced() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", full_page()).await;
    let url = upstream.page_url();
    let unparseable = serde_json::json!({
        "url": url,
        "content_type": "application/vnd.pypi.simple.v1+json",
        "body": "{\"files\": [{\"filename\": 7",
        "etag": null,
        "last_modified": null,
        "fetched_at_secs": now_secs(),
    });
    let another_url = serde_json::json!({
        "url": "http://elsewhere.invalid/whl/torch/",
        "content_type": "text/html",
        "body": older_page(),
        "etag": null,
        "last_modified": null,
        "fetched_at_secs": now_secs(),
    });
    let cases: [(&str, Vec<u8>); 3] = [
        ("not a stored page", b"\x00garbage{".to_vec()),
        ("does not parse", serde_json::to_vec(&unparseable).unwrap()),
        ("another URL's", serde_json::to_vec(&another_url).unwrap()),
    ];
    for (round, (what, bytes)) in cases.into_iter().enumerate() {
        s3.client()
            .put(&page_object(&url), bytes.into())
            .await
            .unwrap();
        let replica = Replica::start(upstream.addr, s3.config(SECRET_KEY), |_| {}).await;
        let (status, body) = replica.torch().await;
        assert_eq!(status, StatusCode::OK, "{what}");
        assert!(body.contains("torch-2.11.0"), "{what}: {body}");
        assert_eq!(
            upstream.hits(),
            round + 1,
            "{what}: the upstream was not asked"
        );
        assert_eq!(replica.health().page_hits, 0, "{what}");
        // The good copy replaces it.
        replica.pages_settled(1).await;
        let stored = stored_page(&s3, &url).await;
        assert_eq!(stored["body"], full_page().as_str(), "{what}");
    }
    let logs = logs.text();
    for reason in [
        "it is not a stored page",
        "it does not parse",
        "it is another URL's",
    ] {
        assert!(
            logs.contains(&format!(
                "ignoring the object store's copy of the page: {reason}"
            )),
            "no log line for `{reason}`:\n{logs}"
        );
    }
}

#[tokio::test]
async fn an_offline_replica_serves_pages_from_the_bucket() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", full_page()).await;
    let first = Replica::start(upstream.addr, s3.config(SECRET_KEY), |_| {}).await;
    let (_, served) = first.torch().await;
    first.pages_settled(1).await;

    let offline = Replica::start(upstream.addr, s3.config(SECRET_KEY), |config| {
        config.offline = true;
    })
    .await;
    // Clients at once: one bucket read, which the others join (or, once done, find cached).
    let answers = futures_util::future::join_all((0..4).map(|_| offline.torch())).await;
    let (status, body) = answers[0].clone();
    assert!(answers.iter().all(|answer| *answer == answers[0]));
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("<h1>Links for torch</h1>"), "{body}");
    // Offline, a page offers only the files held locally (`server/offline.rs`), none here; the
    // page itself is the bucket's copy, every file listed.
    assert!(served.contains("torch-2.11.0"));
    assert_eq!(offline.health().page_hits, 1);
    assert!(offline.lists_new_release(&upstream.page_url()).await);
    assert_eq!(offline.health().pages_published, 0);
    assert_eq!(upstream.hits(), 1);
}

#[tokio::test]
async fn a_project_the_upstream_no_longer_has_leaves_the_bucket() {
    let s3 = S3Server::start().await;
    let upstream = Upstream::start("v1", full_page()).await;
    let url = upstream.page_url();
    let ttl = |config: &mut ServeConfig| config.index_ttl_secs = 1;
    let replica = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;
    assert_eq!(replica.torch().await.0, StatusCode::OK);
    replica.pages_settled(1).await;
    assert!(s3.client().head(&page_object(&url)).await.is_ok());

    upstream.state.gone.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The expired copy is revalidated before it is answered: the project is gone.
    assert_eq!(replica.torch().await.0, StatusCode::NOT_FOUND);
    replica.refreshes_done().await;
    until_removed(&s3, &url).await;
    // A cold replica finds nothing to serve.
    let cold = Replica::start(upstream.addr, s3.config(SECRET_KEY), ttl).await;
    assert_eq!(cold.torch().await.0, StatusCode::NOT_FOUND);
    assert_eq!(cold.health().page_hits, 0);
}

async fn until_removed(s3: &S3Server, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while s3.client().head(&page_object(url)).await.is_ok() {
        assert!(Instant::now() < deadline, "the page object was not removed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
