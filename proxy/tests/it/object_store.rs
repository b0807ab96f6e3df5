//! The shared object-store cache against a real S3-compatible server: `s3s-fs` (crates.io),
//! installed by `scripts/s3-setup` and started per test on 127.0.0.1 with its own data directory
//! and credentials. Two or more proxy replicas (each with its own local cache) share one bucket,
//! in front of a fake upstream that counts requests: a file one replica cached is served by the
//! others without an upstream request; a bucket that refuses writes, a server that goes away, a
//! missing bucket and an upstream that lies change nothing for clients and leave nothing partial
//! in the bucket.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::ObjectStore;
use object_store::ObjectStoreExt;
use object_store::aws::AmazonS3Builder;
use wheelgate_config::{ObjectStoreConfig, ServeConfig, StaticCredentials};
use wheelgate_files::cache::BucketHealth;
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};
use wheelgate_server::serve::build_state;
use wheelgate_server::{AppState, app};

use super::fake_upstream::{Behaviour, Fake, sha256};

const WHEEL: &str = "demo-1.0-py3-none-any.whl";
pub(super) const BUCKET: &str = "wheels";
pub(super) const PREFIX: &str = "it";
pub(super) const ACCESS_KEY: &str = "AKIDWHEELGATETEST";
pub(super) const SECRET_KEY: &str = "wheelgate-test-secret-Zq8x";

/// An `s3s-fs` process on a free loopback port; killed on drop.
pub(super) struct S3Server {
    child: Option<Child>,
    addr: SocketAddr,
    _data: tempfile::TempDir,
}

impl S3Server {
    fn binary() -> PathBuf {
        if let Some(path) = std::env::var_os("WHEELGATE_S3_SERVER") {
            return PathBuf::from(path);
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tools/bin/s3s-fs")
    }

    /// Starts the server with bucket [`BUCKET`] (a directory of its data root, which is how
    /// s3s-fs stores buckets).
    pub(super) async fn start() -> S3Server {
        let binary = S3Server::binary();
        assert!(
            binary.is_file(),
            "the S3-compatible test server `{}` is not installed: run scripts/s3-setup (or set WHEELGATE_S3_SERVER)",
            binary.display()
        );
        let data = tempfile::tempdir().unwrap();
        std::fs::create_dir(data.path().join(BUCKET)).unwrap();
        // A port that was free a moment ago; s3s-fs takes a port number, not a listener.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(data.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start `{}`: {err}", binary.display()));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let server = S3Server {
            child: Some(child),
            addr,
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(Instant::now() < deadline, "s3s-fs did not start listening");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server
    }

    pub(super) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(super) fn config(&self, secret: &str) -> ObjectStoreConfig {
        let mut config = ObjectStoreConfig::new(BUCKET);
        config.prefix = PREFIX.into();
        config.endpoint = Some(self.endpoint());
        config.region = Some("us-east-1".into());
        config.allow_http = true;
        config.credentials = Some(StaticCredentials {
            access_key_id: ACCESS_KEY.into(),
            secret_access_key: secret.into(),
            session_token: None,
        });
        config
    }

    /// A client of the bucket of its own, to look at what the proxies left there.
    pub(super) fn client(&self) -> impl ObjectStore {
        AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_endpoint(self.endpoint())
            .with_region("us-east-1")
            .with_allow_http(true)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .build()
            .unwrap()
    }

    /// Every object in the bucket with its size.
    pub(super) async fn objects(&self) -> Vec<(String, u64)> {
        let mut objects: Vec<(String, u64)> = self
            .client()
            .list(None)
            .map_ok(|meta| (meta.location.to_string(), meta.size))
            .try_collect()
            .await
            .unwrap();
        objects.sort();
        objects
    }

    /// The file objects (`<prefix>/files/`) with their sizes, pages left out.
    pub(super) async fn files(&self) -> Vec<(String, u64)> {
        let files = format!("{PREFIX}/files/");
        let mut objects = self.objects().await;
        objects.retain(|(name, _)| name.starts_with(&files));
        objects
    }

    pub(super) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The fake upstream with project `demo`: one wheel (with its sha256 on the page) and its
/// `.metadata`; counts requests by path; shut down on drop.
async fn demo_upstream(wheel: &[u8], metadata: &[u8]) -> Fake {
    let fake = Fake::start().await;
    fake.add_file(&format!("/packages/{WHEEL}"), wheel);
    fake.add_file(&format!("/packages/{WHEEL}.metadata"), metadata);
    fake.add_page(
        "/simple/demo/",
        format!(
            "<!DOCTYPE html>\n<html><body><h1>Links for demo</h1>\n\
             <a href=\"/packages/{WHEEL}#sha256={}\" data-core-metadata=\"sha256={}\">{WHEEL}</a><br/>\n\
             </body></html>\n",
            sha256(wheel),
            sha256(metadata)
        ),
    );
    fake
}

/// Upstream requests for the wheel itself.
fn file_hits(fake: &Fake) -> usize {
    fake.hits(&format!("/packages/{WHEEL}"))
}

/// One proxy replica on a free port; shut down on drop.
struct Replica {
    addr: SocketAddr,
    state: AppState,
    task: tokio::task::JoinHandle<()>,
    _cache: tempfile::TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Replica {
    async fn start(upstream: SocketAddr, object_store: ObjectStoreConfig) -> Replica {
        let cache = tempfile::tempdir().unwrap();
        let config = ServeConfig {
            pytorch_url: format!("http://{upstream}/whl"),
            pypi_url: format!("http://{upstream}/simple"),
            cache_dir: cache.path().to_path_buf(),
            machine: Some(
                serde_json::from_str(r#"{"platform":"linux-x86_64","glibc":"2.36"}"#).unwrap(),
            ),
            object_store: Some(object_store),
            ..ServeConfig::default()
        };
        let mut state = build_state(config).await.unwrap();
        state.shared_mut().expect("not shared yet").client = UpstreamClient::new(&ClientSettings {
            read_timeout: Duration::from_secs(5),
            retries: 0,
            ..ClientSettings::default()
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = app(state.clone());
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Replica {
            addr,
            state,
            task,
            _cache: cache,
        }
    }

    fn health(&self) -> BucketHealth {
        self.state
            .files
            .object_store_health()
            .expect("a bucket is configured")
    }

    /// `GET /files/demo/<name>` with optional `Range`: status, `Content-Range`, body (an error
    /// when the transfer broke off).
    async fn get(
        &self,
        name: &str,
        range: Option<&str>,
    ) -> (StatusCode, String, Result<Bytes, reqwest::Error>) {
        let mut request =
            reqwest::Client::new().get(format!("http://{}/files/demo/{name}", self.addr));
        if let Some(range) = range {
            request = request.header(header::RANGE, range);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let content_range = response
            .headers()
            .get(header::CONTENT_RANGE)
            .map_or(String::new(), |v| v.to_str().unwrap().to_string());
        (status, content_range, response.bytes().await)
    }

    /// Waits until `done` index pages were published or failed to be.
    async fn pages_settled(&self, done: u64) -> BucketHealth {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let health = self.health();
            if health.pages_published + health.page_publishes_failed >= done {
                return health;
            }
            assert!(Instant::now() < deadline, "pages not published: {health:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until no upload runs and `done` uploads have ended (completed or failed).
    async fn uploads_settled(&self, done: u64) -> BucketHealth {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let health = self.health();
            if health.uploads_in_flight == 0
                && health.uploads_completed + health.uploads_failed >= done
            {
                return health;
            }
            assert!(
                Instant::now() < deadline,
                "uploads did not settle: {health:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Deterministic bytes that are not all alike, so a misplaced part shows.
fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap())
        .collect()
}

fn object_name(bytes: &[u8]) -> String {
    format!("{PREFIX}/files/sha256-{}", sha256(bytes))
}

/// Log lines of the code running on this thread (the tests below use the current-thread
/// runtime, so every task of the proxy logs here).
#[derive(Clone, Default)]
pub(super) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub(super) fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_ansi(false)
            .with_env_filter("wheelgate=debug")
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        // Shown with the output of a failing test.
        print!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// Larger than one `PUT` (8 MiB, `SINGLE_PUT_MAX`): uploaded in parts.
const LARGE: usize = 9 * 1024 * 1024 + 123;

#[tokio::test]
async fn a_file_one_replica_cached_is_served_by_the_others_without_the_upstream() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let s3 = S3Server::start().await;
    let wheel = content(LARGE, 1);
    let metadata = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n".to_vec();
    let fake = demo_upstream(&wheel, &metadata).await;
    let first = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;
    assert!(first.health().available, "{:?}", first.health());

    let (status, _, body) = first.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    let (status, _, body) = first.get(&format!("{WHEEL}.metadata"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.unwrap(), metadata);
    let health = first.uploads_settled(2).await;
    assert_eq!((health.uploads_completed, health.uploads_failed), (2, 0));
    // The wheel in parts, the metadata in one PUT; nothing else (no parts, no temporary names).
    let mut expected = vec![
        (object_name(&wheel), u64::try_from(wheel.len()).unwrap()),
        (
            object_name(&metadata),
            u64::try_from(metadata.len()).unwrap(),
        ),
    ];
    expected.sort();
    // And the page, under the sha256 of its URL (`object_store_pages.rs` tests pages).
    first.pages_settled(1).await;
    let mut objects = s3.objects().await;
    let page = objects.pop().expect("the page's object");
    let page_url = format!("http://{}/simple/demo/", fake.addr);
    assert_eq!(
        page.0,
        format!("{PREFIX}/index/{}.json", sha256(page_url.as_bytes()))
    );
    assert_eq!(objects, expected);
    assert_eq!(file_hits(&fake), 1);

    // A second replica with an empty local cache: the bytes come from the bucket.
    let second = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;
    let (status, _, body) = second.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.unwrap() == wheel,
        "the second replica served other bytes"
    );
    let (_, _, body) = second.get(&format!("{WHEEL}.metadata"), None).await;
    assert_eq!(body.unwrap(), metadata);
    assert_eq!(
        file_hits(&fake),
        1,
        "the second replica asked the upstream for the file"
    );
    assert_eq!(fake.hits(&format!("/packages/{WHEEL}.metadata")), 1);
    assert_eq!(second.health().hits, 2);
    // It uploads nothing: the bucket already has both.
    let health = second.uploads_settled(0).await;
    assert_eq!(health.uploads_completed, 0);
    // The page too came from the bucket (`object_store_pages.rs` tests pages in depth).
    assert_eq!(fake.hits("/simple/demo/"), 1);
    assert_eq!(second.health().page_hits, 1);

    // Ranges from the second replica, now from its local copy.
    let (status, content_range, body) = second.get(WHEEL, Some("bytes=100-199")).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(content_range, format!("bytes 100-199/{LARGE}"));
    assert_eq!(body.unwrap(), wheel[100..200]);

    // A third replica's first request is uv's read of the wheel's end (its central directory):
    // far ahead of the copy from the bucket it starts, so it is answered by a ranged GET on the
    // bucket (or from the copy, if that is quicker); never from the upstream.
    let third = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;
    let (status, content_range, body) = third.get(WHEEL, Some("bytes=-22")).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        content_range,
        format!("bytes {}-{}/{LARGE}", LARGE - 22, LARGE - 1)
    );
    assert_eq!(body.unwrap(), wheel[LARGE - 22..]);
    let (status, _, body) = third.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    assert_eq!(
        file_hits(&fake),
        1,
        "no replica but the first asked the upstream"
    );

    let logs = logs.text();
    assert!(logs.contains("range answered from the object store"));
    assert!(!logs.contains(SECRET_KEY) && !logs.contains(ACCESS_KEY));
}

#[tokio::test]
async fn a_bucket_that_refuses_writes_changes_nothing_for_clients() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let s3 = S3Server::start().await;
    let wheel = content(LARGE, 2);
    let fake = demo_upstream(&wheel, b"m").await;
    // The server refuses every request signed with a wrong secret: reads and writes.
    let replica = Replica::start(fake.addr, s3.config("not-the-secret")).await;
    assert!(!replica.health().available);

    let (status, _, body) = replica.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    let health = replica.uploads_settled(1).await;
    assert_eq!((health.uploads_completed, health.uploads_failed), (0, 1));
    let error = health.last_error.unwrap();
    assert!(error.contains(&format!("`{BUCKET}`")), "{error}");
    assert!(s3.objects().await.is_empty(), "{:?}", s3.objects().await);

    // Later requests are served from local disk.
    for _ in 0..3 {
        let (status, _, body) = replica.get(WHEEL, None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.unwrap() == wheel);
    }
    assert_eq!(file_hits(&fake), 1);

    let logs = logs.text();
    assert!(
        logs.lines().any(|line| line.contains("WARN")
            && line.contains("cannot upload a file to the object store")
            && line.contains(BUCKET)),
        "no warning naming the bucket:\n{logs}"
    );
    assert!(
        !logs.contains("not-the-secret") && !logs.contains(ACCESS_KEY),
        "credentials in the log:\n{logs}"
    );
}

#[tokio::test]
async fn replicas_keep_serving_when_the_s3_server_goes_away() {
    let s3 = S3Server::start().await;
    let mut s3 = s3;
    let wheel = content(300 * 1024, 3);
    let fake = demo_upstream(&wheel, b"m").await;
    let first = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;
    let second = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;
    let (_, _, body) = first.get(WHEEL, None).await;
    assert!(body.unwrap() == wheel);
    first.uploads_settled(1).await;

    s3.kill();
    let started = Instant::now();
    // What a replica has locally needs no bucket.
    let (status, _, body) = first.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    // One without it goes to the upstream, promptly.
    let (status, _, body) = second.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    assert_eq!(file_hits(&fake), 2);
    let health = second.uploads_settled(1).await;
    assert!(!health.available, "{health:?}");
    assert_eq!(health.uploads_failed, 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    // And serves it again from local disk.
    let (status, _, body) = second.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    assert_eq!(file_hits(&fake), 2);
}

#[tokio::test]
async fn nothing_reaches_the_bucket_from_a_download_that_does_not_verify() {
    let s3 = S3Server::start().await;
    let wheel = content(LARGE, 4);
    let fake = demo_upstream(&wheel, b"m").await;
    let replica = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;

    fake.set(Behaviour::WrongBytes);
    let (_, _, body) = replica.get(WHEEL, None).await;
    assert!(body.is_err(), "a corrupt download must end in an error");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let health = replica.uploads_settled(0).await;
    assert_eq!(health.uploads_completed + health.uploads_failed, 0);
    assert!(s3.files().await.is_empty());

    fake.set(Behaviour::Serve);
    let (status, _, body) = replica.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    replica.uploads_settled(1).await;
    let objects = s3.files().await;
    assert_eq!(
        objects,
        vec![(object_name(&wheel), u64::try_from(LARGE).unwrap())]
    );
    let stored = s3
        .client()
        .get(&object_store::path::Path::from(object_name(&wheel)))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(sha256(&stored), sha256(&wheel));
}

#[tokio::test]
async fn a_corrupt_object_in_the_bucket_is_never_served_and_is_removed() {
    let s3 = S3Server::start().await;
    let wheel = content(200 * 1024, 5);
    let fake = demo_upstream(&wheel, b"m").await;
    let mut corrupt = wheel.clone();
    corrupt[1000] ^= 1;
    let name = object_store::path::Path::from(object_name(&wheel));
    s3.client().put(&name, corrupt.into()).await.unwrap();
    let replica = Replica::start(fake.addr, s3.config(SECRET_KEY)).await;

    let (_, _, body) = replica.get(WHEEL, None).await;
    assert!(
        body.is_err(),
        "bytes that do not verify must end in an error"
    );
    assert!(s3.files().await.is_empty(), "the corrupt object is removed");
    // The next request downloads it from the upstream and puts it right.
    let (status, _, body) = replica.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
    replica.uploads_settled(1).await;
    assert_eq!(
        s3.files().await,
        vec![(object_name(&wheel), u64::try_from(wheel.len()).unwrap())]
    );
}

#[tokio::test]
async fn a_missing_bucket_starts_degraded_and_serves_from_the_upstream() {
    let s3 = S3Server::start().await;
    let wheel = content(100 * 1024, 6);
    let fake = demo_upstream(&wheel, b"m").await;
    let mut config = s3.config(SECRET_KEY);
    config.bucket = "no-such-bucket".into();
    let replica = Replica::start(fake.addr, config).await;
    let health = replica.health();
    assert!(!health.available);
    let error = health.last_error.unwrap();
    assert!(error.contains("`no-such-bucket` does not exist"), "{error}");

    let (status, _, body) = replica.get(WHEEL, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
}

#[tokio::test]
async fn an_invalid_object_store_section_stops_the_start() {
    let mut config = ObjectStoreConfig::new(BUCKET);
    config.endpoint = Some("not a url".into());
    let cache = tempfile::tempdir().unwrap();
    let err = build_state(ServeConfig {
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        object_store: Some(config),
        ..ServeConfig::default()
    })
    .await
    .err()
    .expect("an endpoint that is not a URL is refused");
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        chain.contains("[object_store]") && chain.contains("`not a url` is not a URL"),
        "{chain}"
    );
}
