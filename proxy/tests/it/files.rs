//! The file cache and the `/files/` routes against a fake upstream on 127.0.0.1 that can serve
//! slowly, stall, truncate, send wrong bytes, refuse, and counts every request: single flight,
//! verification, nothing corrupt kept, recovery after the upstream heals, client disconnects,
//! eviction, and the HTTP semantics pip and uv rely on (`HEAD`, `Range`, `If-Range`, `ETag`, `304`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, Method, StatusCode, header};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wheelgate_config::ServeConfig;
use wheelgate_files::cache::{CachedFile, FailureKind, FileCache, FileCacheError, FileSpec};
use wheelgate_index::upstream::{ClientSettings, UpstreamClient};
use wheelgate_server::app;
use wheelgate_server::serve::build_state;

use super::fake_upstream::{Behaviour, Fake, sha256};

/// Deterministic bytes that are not all alike, so a misplaced chunk shows.
fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap())
        .collect()
}

fn client(read_timeout: Duration) -> UpstreamClient {
    UpstreamClient::new(&ClientSettings {
        read_timeout,
        retries: 0,
        ..ClientSettings::default()
    })
    .unwrap()
}

async fn read_all(file: &CachedFile) -> std::io::Result<Vec<u8>> {
    let chunks: Vec<Bytes> = file.stream(0, None).try_collect().await?;
    Ok(chunks.concat())
}

/// Every name in the cache's file directory.
fn stored(cache: &FileCache) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The server's log lines, shown for failing tests.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("wheelgate=debug")
        .try_init();
}

async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_share_one_download_and_get_identical_bytes() {
    logs();
    share_one_download(3 * 1024 * 1024 + 17, Duration::from_millis(5)).await;
}

/// Past 16 MiB the download is written past the page cache (`O_DIRECT` on Linux), in aligned
/// blocks, the unaligned end last: readers following it must see the same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_of_a_file_written_past_the_page_cache_get_identical_bytes() {
    logs();
    share_one_download(24 * 1024 * 1024 + 17, Duration::from_micros(200)).await;
}

/// Twenty clients fetch one file of `len` bytes, sent a chunk every `delay`.
async fn share_one_download(len: usize, delay: Duration) {
    let fake = Fake::start().await;
    let bytes = content(len, 1);
    let spec = fake.add_file("/f/big-1.0-py3-none-any.whl", &bytes);
    // Slow enough that every client arrives while the download is running.
    fake.set(Behaviour::Slow(delay));
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = client(Duration::from_secs(10));

    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (cache, client, spec) = (cache.clone(), client.clone(), spec.clone());
        tasks.push(tokio::spawn(async move {
            let file = cache.fetch(&client, &spec, false).await.unwrap();
            assert_eq!(file.known_len(), Some(u64::try_from(len).unwrap()));
            read_all(&file).await.unwrap()
        }));
    }
    for task in tasks {
        let got = task.await.unwrap();
        assert!(
            got == bytes,
            "a client got different bytes ({} of {})",
            got.len(),
            bytes.len()
        );
    }
    assert_eq!(
        fake.hits("/f/big-1.0-py3-none-any.whl"),
        1,
        "exactly one upstream request"
    );
    assert!(cache.contains(&spec));
    assert_eq!(stored(&cache), vec![format!("sha256-{}", sha256(&bytes))]);

    // Later clients read the committed file.
    let file = cache.fetch(&client, &spec, false).await.unwrap();
    assert!(file.is_committed());
    assert!(read_all(&file).await.unwrap() == bytes);
    assert_eq!(fake.hits("/f/big-1.0-py3-none-any.whl"), 1);
}

/// Fetches `spec` while the upstream misbehaves: the client must see an error, nothing may be
/// kept, and once the upstream heals the next request must succeed.
async fn assert_failure_then_recovery(behaviour: Behaviour, read_timeout: Duration) {
    assert_failure_of_len_then_recovery(behaviour, read_timeout, 1024 * 1024).await;
}

async fn assert_failure_of_len_then_recovery(
    behaviour: Behaviour,
    read_timeout: Duration,
    len: usize,
) {
    let fake = Fake::start().await;
    let bytes = content(len, 2);
    let path = "/f/demo-1.0-py3-none-any.whl";
    let spec = fake.add_file(path, &bytes);
    fake.set(behaviour);
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = client(read_timeout);

    let started = Instant::now();
    let outcome = match cache.fetch(&client, &spec, false).await {
        Ok(file) => read_all(&file)
            .await
            .map(|got| got.len())
            .map_err(|err| err.to_string()),
        Err(err) => Err(err.to_string()),
    };
    assert!(
        outcome.is_err(),
        "{behaviour:?}: the client must see an error, got {outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{behaviour:?}: the failure took {:?}",
        started.elapsed()
    );
    assert!(
        !cache.contains(&spec),
        "{behaviour:?}: nothing is committed"
    );
    assert!(
        stored(&cache).is_empty(),
        "{behaviour:?}: nothing is kept on disk: {:?}",
        stored(&cache)
    );

    fake.set(Behaviour::Serve);
    let file = cache.fetch(&client, &spec, false).await.unwrap();
    assert!(
        read_all(&file).await.unwrap() == bytes,
        "{behaviour:?}: the retry gets the right bytes"
    );
    assert_eq!(
        fake.hits(path),
        2,
        "{behaviour:?}: the retry is a fresh download"
    );
    assert!(cache.contains(&spec));
}

#[tokio::test]
async fn hash_mismatch_is_an_error_and_nothing_is_kept() {
    logs();
    assert_failure_then_recovery(Behaviour::WrongBytes, Duration::from_secs(10)).await;
}

/// A file written past the page cache
/// ([`clients_of_a_file_written_past_the_page_cache_get_identical_bytes`]) is verified the same
/// way.
#[tokio::test]
async fn a_large_file_with_a_wrong_byte_or_cut_short_is_an_error_and_nothing_is_kept() {
    logs();
    let len = 20 * 1024 * 1024 + 5;
    assert_failure_of_len_then_recovery(Behaviour::WrongBytes, Duration::from_secs(10), len).await;
    assert_failure_of_len_then_recovery(
        Behaviour::TruncateAfter(len - 4097),
        Duration::from_secs(10),
        len,
    )
    .await;
}

#[tokio::test]
async fn truncated_body_is_an_error_and_nothing_is_kept() {
    logs();
    assert_failure_then_recovery(
        Behaviour::TruncateAfter(300 * 1024),
        Duration::from_secs(10),
    )
    .await;
}

#[tokio::test]
async fn stalled_upstream_times_out_and_nothing_is_kept() {
    logs();
    assert_failure_then_recovery(
        Behaviour::StallAfter(300 * 1024),
        Duration::from_millis(500),
    )
    .await;
}

#[tokio::test]
async fn upstream_refusals_are_not_found_and_server_errors_are_upstream_failures() {
    logs();
    for (code, kind) in [
        (403, FailureKind::NotFound),
        (404, FailureKind::NotFound),
        (500, FailureKind::Upstream),
    ] {
        assert_failure_then_recovery(Behaviour::Status(code), Duration::from_secs(10)).await;
        let fake = Fake::start().await;
        let spec = fake.add_file("/f/x-1.0.tar.gz", b"x");
        fake.set(Behaviour::Status(code));
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
        let err = cache
            .fetch(&client(Duration::from_secs(5)), &spec, false)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{code}: {err}");
    }
}

#[tokio::test]
async fn a_size_that_differs_from_the_page_is_an_error() {
    logs();
    let fake = Fake::start().await;
    let bytes = content(200 * 1024, 3);
    let mut spec = fake.add_file("/f/demo-1.0.tar.gz", &bytes);
    spec.size = Some(100);
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let err = cache
        .fetch(&client(Duration::from_secs(5)), &spec, false)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.root(),
            FileCacheError::SizeMismatch { expected: 100, .. }
        ),
        "{err}"
    );
    assert!(stored(&cache).is_empty());
}

#[tokio::test]
async fn a_client_that_disconnects_does_not_stop_the_download() {
    logs();
    let fake = Fake::start().await;
    let bytes = content(2 * 1024 * 1024, 4);
    let path = "/f/demo-1.0-py3-none-any.whl";
    let spec = fake.add_file(path, &bytes);
    fake.set(Behaviour::Slow(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = client(Duration::from_secs(10));

    let file = cache.fetch(&client, &spec, false).await.unwrap();
    let mut stream = Box::pin(file.stream(0, None));
    let first = stream.next().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(stream);
    drop(file);

    eventually("the abandoned download is committed", || {
        cache.contains(&spec)
    })
    .await;
    fake.set(Behaviour::Serve);
    let file = cache.fetch(&client, &spec, false).await.unwrap();
    assert!(read_all(&file).await.unwrap() == bytes);
    assert_eq!(fake.hits(path), 1);
}

#[tokio::test]
async fn least_recently_used_files_are_evicted_past_the_limit() {
    logs();
    let fake = Fake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), 250 * 1024).unwrap();
    let client = client(Duration::from_secs(5));
    let specs: Vec<FileSpec> = (0..4u8)
        .map(|i| fake.add_file(&format!("/f/p{i}-1.0.tar.gz"), &content(100 * 1024, i)))
        .collect();

    for spec in &specs[..2] {
        read_all(&cache.fetch(&client, spec, false).await.unwrap())
            .await
            .unwrap();
    }
    // The first file is used again, so the second is the least recently used.
    read_all(&cache.fetch(&client, &specs[0], false).await.unwrap())
        .await
        .unwrap();
    read_all(&cache.fetch(&client, &specs[2], false).await.unwrap())
        .await
        .unwrap();
    assert!(cache.contains(&specs[0]));
    assert!(
        !cache.contains(&specs[1]),
        "the least recently used file is evicted"
    );
    assert!(cache.contains(&specs[2]));
    assert!(cache.total_bytes() <= 250 * 1024);
    assert_eq!(stored(&cache).len(), 2);

    read_all(&cache.fetch(&client, &specs[3], false).await.unwrap())
        .await
        .unwrap();
    assert!(!cache.contains(&specs[0]));
    assert!(cache.total_bytes() <= 250 * 1024);

    // The order survives a restart (modification times), and the limit is applied at open.
    drop(cache);
    let reopened = FileCache::open(dir.path().to_path_buf(), 150 * 1024).unwrap();
    assert_eq!(reopened.len(), 1);
    assert!(
        reopened.contains(&specs[3]),
        "the most recently used file survives"
    );
}

#[tokio::test]
async fn open_removes_leftover_partial_downloads_and_offline_serves_only_the_cache() {
    logs();
    let fake = Fake::start().await;
    let bytes = content(10_000, 5);
    let spec = fake.add_file("/f/demo-1.0.tar.gz", &bytes);
    let other = fake.add_file("/f/demo-2.0.tar.gz", b"other");
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    let client = client(Duration::from_secs(5));
    read_all(&cache.fetch(&client, &spec, false).await.unwrap())
        .await
        .unwrap();
    std::fs::write(
        cache
            .dir()
            .join(format!("sha256-{}.1.0.part", sha256(b"other"))),
        b"oth",
    )
    .unwrap();
    drop(cache);

    let cache = FileCache::open(dir.path().to_path_buf(), u64::MAX).unwrap();
    assert_eq!(stored(&cache), vec![format!("sha256-{}", sha256(&bytes))]);
    let file = cache.fetch(&client, &spec, true).await.unwrap();
    assert!(read_all(&file).await.unwrap() == bytes);
    let err = cache.fetch(&client, &other, true).await.unwrap_err();
    assert_eq!(err.kind(), FailureKind::NotFound);
    assert_eq!(
        fake.hits("/f/demo-2.0.tar.gz"),
        0,
        "offline never contacts the upstream"
    );
}

// ---- the routes, end to end ----

const WHEEL: &str = "demo-1.0-py3-none-any.whl";
const NIGHTLY: &str = "demo-2.0-py3-none-any.whl";

struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// A fake general upstream with project `demo`: one wheel with a hash and a metadata file, one
/// without either (like PyTorch's nightly pages).
fn demo_upstream(fake: &Fake, wheel: &[u8], metadata: &[u8], nightly: &[u8]) {
    fake.add_file(&format!("/packages/{WHEEL}"), wheel);
    fake.add_file(&format!("/packages/{WHEEL}.metadata"), metadata);
    fake.add_file(&format!("/packages/{NIGHTLY}"), nightly);
    fake.add_page(
        "/simple/demo/",
        format!(
            "<!DOCTYPE html>\n<html><body><h1>Links for demo</h1>\n\
             <a href=\"/packages/{WHEEL}#sha256={}\" data-core-metadata=\"sha256={}\">{WHEEL}</a><br/>\n\
             <a href=\"/packages/{NIGHTLY}\">{NIGHTLY}</a><br/>\n</body></html>\n",
            sha256(wheel),
            sha256(metadata)
        ),
    );
}

async fn start_proxy(upstream: SocketAddr, cache: &Path, offline: bool) -> Proxy {
    let config = ServeConfig {
        pytorch_url: format!("http://{upstream}/whl"),
        pypi_url: format!("http://{upstream}/simple"),
        cache_dir: cache.to_path_buf(),
        offline,
        machine: Some(
            serde_json::from_str(r#"{"platform":"linux-x86_64","glibc":"2.36"}"#).unwrap(),
        ),
        ..ServeConfig::default()
    };
    // A server started on a directory a previous one in this test used: that one's
    // connection tasks may still hold its lock for a moment after it was stopped.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut state = loop {
        match build_state(config.clone()).await {
            Err(wheelgate_server::serve::StartError::Locked(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => break other.unwrap(),
        }
    };
    state.shared_mut().expect("not shared yet").client = UpstreamClient::new(&ClientSettings {
        read_timeout: Duration::from_secs(2),
        ..ClientSettings::default()
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { axum::serve(listener, app(state)).await.unwrap() });
    Proxy { addr, task }
}

async fn request(
    method: Method,
    url: &str,
    headers: &[(header::HeaderName, &str)],
) -> (StatusCode, HeaderMap, Result<Bytes, reqwest::Error>) {
    let mut builder = reqwest::Client::new().request(method, url);
    for (name, value) in headers {
        builder = builder.header(name, *value);
    }
    let response = builder.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await)
}

fn header_of<'a>(headers: &'a HeaderMap, name: &header::HeaderName) -> &'a str {
    headers.get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn files_are_served_with_the_headers_installers_expect() {
    logs();
    let fake = Fake::start().await;
    let wheel = content(700 * 1024, 6);
    demo_upstream(
        &fake,
        &wheel,
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        b"nightly",
    );
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{WHEEL}"));
    let etag = format!("\"{}\"", sha256(&wheel));

    // 20 clients at once on the uncached file: one upstream request, the same bytes for all.
    fake.set(Behaviour::Slow(Duration::from_millis(5)));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            request(Method::GET, &url, &[]).await
        }));
    }
    for task in tasks {
        let (status, headers, body) = task.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header_of(&headers, &header::CONTENT_LENGTH),
            wheel.len().to_string()
        );
        assert!(body.unwrap() == wheel);
    }
    assert_eq!(fake.hits(&format!("/packages/{WHEEL}")), 1);
    fake.set(Behaviour::Serve);

    let (status, headers, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header_of(&headers, &header::ACCEPT_RANGES), "bytes");
    assert_eq!(header_of(&headers, &header::ETAG), etag);
    assert_eq!(
        header_of(&headers, &header::CACHE_CONTROL),
        "max-age=365000000, immutable"
    );
    assert_eq!(
        header_of(&headers, &header::CONTENT_TYPE),
        "application/octet-stream"
    );
    assert!(body.unwrap() == wheel);

    let (status, headers, _) = request(Method::GET, &url, &[(header::IF_NONE_MATCH, &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(header_of(&headers, &header::ETAG), etag);

    // PEP 658 metadata: served and verified when offered, 404 when not.
    let (status, _, body) = request(
        Method::GET,
        &proxy.url(&format!("/files/demo/{WHEEL}.metadata")),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        &body.unwrap()[..],
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
    );
    let (status, _, _) = request(
        Method::GET,
        &proxy.url(&format!("/files/demo/{NIGHTLY}.metadata")),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = request(
        Method::GET,
        &proxy.url("/files/demo/demo-3.0-py3-none-any.whl"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn head_then_ranges_work_on_an_uncached_wheel() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(300 * 1024 + 5, 7);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    let len = nightly.len();

    // What uv does when no metadata file is offered: HEAD, then ranges from the end.
    let (status, headers, body) = request(Method::HEAD, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header_of(&headers, &header::CONTENT_LENGTH),
        len.to_string()
    );
    assert_eq!(header_of(&headers, &header::ACCEPT_RANGES), "bytes");
    assert!(body.unwrap().is_empty());
    let etag = header_of(&headers, &header::ETAG).to_string();
    assert!(
        etag.trim_start_matches("W/").starts_with("\"url-"),
        "an ETag without a page hash (weak while the file is still downloading): {etag}"
    );

    for (range, start, end) in [
        ("bytes=-22", len - 22, len),
        ("bytes=0-9", 0, 10),
        ("bytes=1000-", 1000, len),
        ("bytes=10-99999999", 10, len),
    ] {
        let (status, headers, body) = request(Method::GET, &url, &[(header::RANGE, range)]).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(
            header_of(&headers, &header::CONTENT_RANGE),
            format!("bytes {start}-{}/{len}", end - 1),
            "{range}"
        );
        assert_eq!(
            header_of(&headers, &header::CONTENT_LENGTH),
            (end - start).to_string(),
            "{range}"
        );
        assert!(body.unwrap() == nightly[start..end], "{range}");
    }
    let (status, headers, _) = request(
        Method::GET,
        &url,
        &[(header::RANGE, &format!("bytes={len}-"))],
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        header_of(&headers, &header::CONTENT_RANGE),
        format!("bytes */{len}")
    );

    // The ranges were read from the upstream by range: nothing is cached until a client asks
    // for the whole file, which is then downloaded, verified and kept.
    let (_, headers, _) = request(Method::HEAD, &url, &[]).await;
    assert!(header_of(&headers, &header::ETAG).starts_with("W/"));
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);

    // pip's resume: If-Range with the ETag of the verified file it saw; a stale validator gets
    // the whole file.
    let (_, headers, _) = request(Method::HEAD, &url, &[]).await;
    let etag = header_of(&headers, &header::ETAG).to_string();
    assert!(
        etag.starts_with("\"url-"),
        "committed: a strong ETag, {etag}"
    );
    let (status, _, body) = request(
        Method::GET,
        &url,
        &[(header::RANGE, "bytes=100-"), (header::IF_RANGE, &etag)],
    )
    .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert!(body.unwrap() == nightly[100..]);
    let (status, headers, body) = request(
        Method::GET,
        &url,
        &[
            (header::RANGE, "bytes=100-"),
            (header::IF_RANGE, "\"other\""),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header_of(&headers, &header::CONTENT_LENGTH),
        len.to_string()
    );
    assert!(body.unwrap() == nightly);

    // HEAD of a cached file still answers its length.
    let (status, headers, _) = request(Method::HEAD, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header_of(&headers, &header::CONTENT_LENGTH),
        len.to_string()
    );
    // The first HEAD asked the upstream's HEAD (the page gives no size; its answer remembered
    // for the ranges), each range one ranged read, then one download; the unsatisfiable range
    // and the HEADs of the cached file asked nothing.
    assert_eq!(fake.hits(&format!("/packages/{NIGHTLY}")), 6);
}

#[tokio::test]
async fn a_head_flood_on_uncached_files_downloads_nothing() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(3 * 1024 * 1024, 11);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    for _ in 0..20 {
        let (status, headers, body) = request(Method::HEAD, &url, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header_of(&headers, &header::CONTENT_LENGTH),
            nightly.len().to_string()
        );
        assert!(header_of(&headers, &header::ETAG).starts_with("W/"));
        assert!(body.unwrap().is_empty());
    }
    // One upstream HEAD (the page gives no size; its answer remembered), and no download
    // started or kept.
    assert_eq!(fake.hits(&format!("/packages/{NIGHTLY}")), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kept: Vec<_> = std::fs::read_dir(dir.path().join("files"))
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(kept.is_empty(), "{kept:?}");
    // A GET still downloads and verifies as before.
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_range_far_ahead_of_the_download_is_fetched_from_the_upstream() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(8 * 1024 * 1024, 10);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    // 128 chunks of 64 KiB, 20 ms apart: the whole download takes over 2.5 s.
    fake.set(Behaviour::Slow(Duration::from_millis(20)));
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    let len = nightly.len();

    // One client downloads the whole file (slowly); another reads its end meanwhile.
    let whole = {
        let url = url.clone();
        tokio::spawn(async move { request(Method::GET, &url, &[]).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let (status, headers, body) = request(Method::GET, &url, &[(header::RANGE, "bytes=-22")]).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        header_of(&headers, &header::CONTENT_RANGE),
        format!("bytes {}-{}/{len}", len - 22, len - 1)
    );
    assert!(body.unwrap() == nightly[len - 22..]);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the range waited for the download: {:?}",
        started.elapsed()
    );
    assert_eq!(
        fake.hits(&format!("/packages/{NIGHTLY}")),
        2,
        "the download (its length known from the upstream's answer) and the range"
    );

    // The download goes on and is cached; a near range follows it.
    let (status, _, body) = request(Method::GET, &url, &[(header::RANGE, "bytes=0-99")]).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert!(body.unwrap() == nightly[..100]);
    let (status, _, body) = whole.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);
    assert_eq!(fake.hits(&format!("/packages/{NIGHTLY}")), 2);
}

/// Clients that ask a range far ahead of a download and then do not read (issue 20, item 4):
/// once 300 of them opened 301 upstream connections to one file and held 296 MB. Now clients
/// asking the same small range share one upstream read, and at most 16 upstream range reads run
/// at once (past that, a client follows the download, on disk).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_that_do_not_read_ranges_far_ahead_share_and_cap_the_upstream_reads() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(16 * 1024 * 1024, 12);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    // 64 KiB every 50 ms, ranges too: a download or a range of many MiB takes seconds, so the
    // range reads below are all still in flight when they are counted.
    fake.set(Behaviour::Slow(Duration::from_millis(50)));
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    let whole = {
        let url = url.clone();
        tokio::spawn(async move { request(Method::GET, &url, &[]).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let path = format!("/files/demo/{NIGHTLY}");
    // Each asks, reads the status line, and never reads further.
    let ask = |range: String| {
        let (addr, path) = (proxy.addr, path.clone());
        async move {
            let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nRange: {range}\r\n\r\n");
            socket.write_all(request.as_bytes()).await.unwrap();
            let mut head = [0u8; 12];
            socket.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"HTTP/1.1 206", "{range}");
            socket
        }
    };
    let same: Vec<_> = (0..100).map(|_| ask("bytes=-65536".to_string())).collect();
    let same = futures_util::future::join_all(same).await;
    assert_eq!(
        fake.hits(&format!("/packages/{NIGHTLY}")),
        2,
        "the download and one shared range read"
    );
    // Distinct large ranges far ahead (12 MiB each, more than the connections' buffers hold):
    // at most 16 upstream reads at once, the rest follow the download (their status comes at
    // once; their bytes as the download writes them).
    let distinct: Vec<_> = (0..40)
        .map(|i| ask(format!("bytes={}-", 4 * 1024 * 1024 + i * 1000)))
        .collect();
    let distinct = futures_util::future::join_all(distinct).await;
    let hits = fake.hits(&format!("/packages/{NIGHTLY}"));
    assert!(hits <= 2 + 16, "{hits} upstream requests for one file");
    drop((same, distinct));
    whole.abort();
}

#[tokio::test]
async fn ranges_of_an_uncached_file_cost_about_what_they_send() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(6 * 1024 * 1024, 12);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    let len = nightly.len();
    // What uv does where no `.metadata` is offered: the end of the zip, then a member.
    let mut served = 0;
    for (range, start, end) in [
        ("bytes=-65536", len - 65_536, len),
        ("bytes=1000-4999", 1000, 5000),
        ("bytes=10-99", 10, 100),
    ] {
        let (status, headers, body) = request(Method::GET, &url, &[(header::RANGE, range)]).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert!(
            header_of(&headers, &header::ETAG).starts_with("W/"),
            "unverified bytes"
        );
        let body = body.unwrap();
        assert!(body == nightly[start..end], "{range}");
        served += body.len() as u64;
    }
    let (status, headers, _) = request(
        Method::GET,
        &url,
        &[(header::RANGE, &format!("bytes={len}-"))],
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        header_of(&headers, &header::CONTENT_RANGE),
        format!("bytes */{len}")
    );
    let upstream = fake.file_bytes_sent();
    assert!(
        upstream <= 2 * served,
        "{upstream} bytes upstream for {served} served (a 6 MiB file)"
    );
    // Nothing was downloaded whole or kept; the whole file, when asked for, is.
    assert!(
        !dir.path().join("files").exists()
            || std::fs::read_dir(dir.path().join("files"))
                .unwrap()
                .next()
                .is_none()
    );
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);
}

#[tokio::test]
async fn upstream_faults_give_404_or_502_and_the_route_recovers() {
    logs();
    let fake = Fake::start().await;
    let wheel = content(400 * 1024, 8);
    demo_upstream(&fake, &wheel, b"meta", b"nightly");
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{WHEEL}"));
    let upstream = fake.addr.to_string();

    fake.set(Behaviour::Status(403));
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an upstream 403 is never passed on"
    );
    assert!(!String::from_utf8_lossy(&body.unwrap()).contains(&upstream));

    fake.set(Behaviour::Status(500));
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let text = String::from_utf8_lossy(&body.unwrap()).into_owned();
    assert!(text.contains("500") && text.contains(WHEEL), "{text}");
    assert!(
        !text.contains(&upstream),
        "no upstream URL reaches a client: {text}"
    );

    // Wrong bytes: the transfer breaks, the client never gets a complete-looking file.
    fake.set(Behaviour::WrongBytes);
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the status is sent before the bytes are verified"
    );
    assert!(
        body.is_err(),
        "the body must fail, got {} bytes",
        body.map(|b| b.len()).unwrap_or_default()
    );

    fake.set(Behaviour::TruncateAfter(100 * 1024));
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert!(
        body.is_err(),
        "{status} {:?}",
        body.map(|b| String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned())
    );
    assert!(
        std::fs::read_dir(dir.path().join("files"))
            .unwrap()
            .next()
            .is_none(),
        "nothing kept"
    );

    fake.set(Behaviour::Serve);
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == wheel);
}

#[tokio::test]
async fn offline_serves_cached_files_only() {
    logs();
    let fake = Fake::start().await;
    let wheel = content(50 * 1024, 9);
    demo_upstream(&fake, &wheel, b"meta", b"nightly");
    let dir = tempfile::tempdir().unwrap();
    {
        let online = start_proxy(fake.addr, dir.path(), false).await;
        let (status, _, _) = request(
            Method::GET,
            &online.url(&format!("/files/demo/{WHEEL}")),
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    let before = fake.hits(&format!("/packages/{NIGHTLY}"));
    let offline = start_proxy(fake.addr, dir.path(), true).await;
    let (status, _, body) = request(
        Method::GET,
        &offline.url(&format!("/files/demo/{WHEEL}")),
        &[],
    )
    .await;
    let body = body.unwrap();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(body == wheel);
    let (status, _, _) = request(
        Method::GET,
        &offline.url(&format!("/files/demo/{NIGHTLY}")),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(fake.hits(&format!("/packages/{NIGHTLY}")), before);
}

/// Sends `path` exactly as written (no client-side normalization) and returns the status.
async fn raw_status(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn path_traversal_and_bad_names_are_refused() {
    logs();
    let fake = Fake::start().await;
    demo_upstream(&fake, b"wheel", b"meta", b"nightly");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret"), "root:x:0:0").unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    for path in [
        "/files/torch/..%2F..%2Fetc%2Fpasswd",
        "/files/demo/..%2F..%2Fsecret",
        "/files/demo/..%2Fsecret",
        "/files/demo/%2E%2E%2Fsecret",
        "/files/../x",
        "/files/demo/..",
        "/files/..%2F..%2Fsecret/demo-1.0.tar.gz",
        "/files/demo/demo-1.0.tar.gz%00",
        "/files/demo/demo-1.0.tar.gz%00.whl",
        "/files/demo/%00",
        "/files/demo/..%5C..%5Csecret",
        "/files/Demo/demo-1.0-py3-none-any.whl",
        "/files/demo/passwd",
        "/files/demo/%FF%FE.whl",
    ] {
        let (status, text) = raw_status(proxy.addr, path).await;
        assert!(matches!(status, 400 | 404), "{path}: {status}\n{text}");
        assert!(
            !text.contains("root:x"),
            "{path} leaked a file outside the cache"
        );
    }
    assert_eq!(
        fake.hits_under("/packages/"),
        0,
        "no bad request reaches the upstream"
    );
}

/// A download every client walked away from is cancelled after a grace period (hardening,
/// issue 20): a `GET` dropped after its first bytes must not keep pulling the whole file
/// upstream into the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_download_nobody_reads_is_cancelled() {
    logs();
    let fake = Fake::start().await;
    let nightly = content(16 * 1024 * 1024, 13);
    demo_upstream(&fake, b"wheel", b"meta", &nightly);
    // 256 chunks of 64 KiB, 50 ms apart: the whole file would take 13 s.
    fake.set(Behaviour::Slow(Duration::from_millis(50)));
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(fake.addr, dir.path(), false).await;
    let url = proxy.url(&format!("/files/demo/{NIGHTLY}"));
    {
        let mut response = reqwest::get(&url).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let first = response.chunk().await.unwrap().unwrap();
        assert!(!first.is_empty());
        // Dropped here: the client went away.
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    let sent = fake.file_bytes_sent();
    // The fake counts a body when it starts sending it; what matters is what the proxy kept
    // and that nothing is left downloading.
    let kept: Vec<String> = std::fs::read_dir(dir.path().join("files"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        kept.is_empty(),
        "nothing kept, no part left: {kept:?} ({sent} bytes sent)"
    );
    // Asked again, it is downloaded afresh and verified.
    fake.set(Behaviour::Serve);
    let (status, _, body) = request(Method::GET, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.unwrap() == nightly);
}
