//! The simple-index routes against a fake PyTorch upstream and a fake PyPI on 127.0.0.1:
//! selection per machine, negotiation, 404 never 403, redirects, ETag/304, stale pages when the
//! upstream fails, offline mode, User-Agent refinement, pinned and token routes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

const H100: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";

/// A fake download.pytorch.org and PyPI in one server; `down` makes every answer a 500.
#[derive(Clone, Default)]
struct Fake {
    hits: Arc<Mutex<HashMap<String, usize>>>,
    down: Arc<AtomicBool>,
    /// Answer garbage instead of the page.
    garbage: Arc<AtomicBool>,
    /// Conditional requests answered 304.
    not_modified: Arc<Mutex<usize>>,
}

fn torch_page(backends: &[&str]) -> String {
    let mut html =
        String::from("<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n");
    for backend in backends {
        for platform in ["manylinux_2_28_x86_64", "win_amd64"] {
            let name = format!("torch-2.9.0+{backend}-cp312-cp312-{platform}.whl");
            let _ = writeln!(
                html,
                "    <a href=\"/whl/{backend}/{}#sha256={}\" data-dist-info-metadata=\"sha256=ab\" data-core-metadata=\"sha256=ab\">{name}</a><br/>",
                name.replace('+', "%2B"),
                "0".repeat(64)
            );
        }
    }
    html.push_str("    <a href=\"/whl/cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl#sha256=11\">torch-2.9.0-cp312-none-macosx_11_0_arm64.whl</a><br/>\n");
    html.push_str("  </body>\n</html>\n<!--TIMESTAMP 1774772182-->");
    html
}

async fn pytorch(
    State(fake): State<Fake>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    *fake.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    if fake.down.load(Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    if path == "torch/"
        && headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| v == "\"page-v1\"")
    {
        *fake.not_modified.lock().unwrap() += 1;
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let backends: &[&str] = match path.as_str() {
        "torch/" => &["cpu", "cu126", "cu128", "cu130"],
        "cu128/torch/" => &["cu128"],
        // download.pytorch.org answers 403 for a project it does not have.
        _ => return StatusCode::FORBIDDEN.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, "text/html"),
            (header::ETAG, "\"page-v1\""),
        ],
        torch_page(backends),
    )
        .into_response()
}

async fn pypi(State(fake): State<Fake>, Path(project): Path<String>) -> Response {
    *fake
        .hits
        .lock()
        .unwrap()
        .entry(format!("pypi/{project}"))
        .or_default() += 1;
    if fake.down.load(Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    if fake.garbage.load(Ordering::SeqCst) {
        return (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            "{\"files\": [{\"filename\": 7",
        )
            .into_response();
    }
    match project.as_str() {
        "filelock" => (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            r#"{"meta":{"api-version":"1.1"},"name":"filelock","versions":["3.20.0"],"files":[{"filename":"filelock-3.20.0-py3-none-any.whl","url":"https://files.example/packages/filelock-3.20.0-py3-none-any.whl","hashes":{"sha256":"aa"},"requires-python":">=3.9","size":16000,"upload-time":"2025-10-08T18:03:12.000000Z","yanked":false}]}"#,
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start_fake() -> (Fake, SocketAddr) {
    let fake = Fake::default();
    let router = Router::new()
        .route("/whl/{*path}", get(pytorch))
        .route("/simple/{project}/", get(pypi))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (fake, addr)
}

async fn start_proxy(
    upstream: SocketAddr,
    cache: &std::path::Path,
    edit: impl FnOnce(&mut ServeConfig),
) -> SocketAddr {
    let mut config = ServeConfig {
        pytorch_url: format!("http://{upstream}/whl"),
        pypi_url: format!("http://{upstream}/simple"),
        cache_dir: cache.to_path_buf(),
        machine: Some(serde_json::from_str(H100).unwrap()),
        ..ServeConfig::default()
    };
    edit(&mut config);
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // As the server serves: through its listener, where the request limits are checked.
    tokio::spawn(serve_until(listener, state, std::future::pending()));
    addr
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn get_with(url: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, String) {
    let mut request = client().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn filenames(json: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    value["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn serves_one_backend_per_version_with_proxy_links() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let (status, headers, body) = get_with(
        &format!("http://{proxy}/simple/torch/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/vnd.pypi.simple.v1+json"
    );
    assert_eq!(headers[header::VARY], "Accept, User-Agent, Accept-Encoding");
    // The proxy's freshness window: a client asks again (a 304) as soon as the proxy would.
    assert_eq!(headers[header::CACHE_CONTROL], "max-age=10, public");
    let names = filenames(&body);
    // One build per platform: cu130 where it runs, and macOS's only build.
    assert_eq!(
        names,
        [
            "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu130-cp312-cp312-win_amd64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl"
        ]
    );
    assert!(
        body.contains(
            "\"url\":\"/files/torch/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl\""
        ),
        "{body}"
    );
    assert!(
        body.contains("\"core-metadata\":{\"sha256\":\"ab\"}"),
        "{body}"
    );
    assert!(
        !body.contains(&upstream.to_string()),
        "an upstream address leaked: {body}"
    );
    assert!(!body.contains("dist-info-metadata"), "{body}");

    let (status, headers, html) = get_with(&format!("http://{proxy}/simple/torch/"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        html.contains(
            "href=\"/files/torch/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256="
        ),
        "{html}"
    );
    assert!(!html.contains(&upstream.to_string()));
}

#[tokio::test]
async fn general_upstream_pages_are_passed_through_rewritten() {
    let (fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let (status, _, body) = get_with(
        &format!("http://{proxy}/simple/filelock/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), ["filelock-3.20.0-py3-none-any.whl"]);
    assert!(
        body.contains("\"url\":\"/files/filelock/filelock-3.20.0-py3-none-any.whl\""),
        "{body}"
    );
    assert!(
        body.contains("\"requires-python\":\">=3.9\"") && body.contains("\"size\":16000"),
        "{body}"
    );
    assert!(!body.contains("files.example"));
    // Its content does not depend on the User-Agent: a shared cache keeps one copy.
    let (_, headers, _) = get_with(
        &format!("http://{proxy}/simple/filelock/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(headers[header::VARY], "Accept, Accept-Encoding");
    let (_, headers, _) = get_with(&format!("http://{proxy}/simple/torch/"), &[]).await;
    assert_eq!(headers[header::VARY], "Accept, User-Agent, Accept-Encoding");
    // pytorch-triton, a name only the PyTorch index publishes, is never asked of the general
    // upstream (torch, which PyTorch publishes on PyPI too, is: `sources.rs`).
    let _ = get_with(&format!("http://{proxy}/simple/pytorch-triton/"), &[]).await;
    assert_eq!(fake.hits.lock().unwrap().get("pypi/pytorch-triton"), None);
}

#[tokio::test]
async fn status_codes_negotiation_and_redirects() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let base = format!("http://{proxy}");
    // PyTorch's 403 for a missing project becomes 404: uv tolerates 403 only from PyTorch's host.
    assert_eq!(
        get_with(&format!("{base}/simple/torchnothing/"), &[])
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get_with(&format!("{base}/simple/torchaudio/"), &[]).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get_with(&format!("{base}/simple/nonexistent-project/"), &[])
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    // PyPI answers types outside the simple API (`application/json`) with HTML, not 406.
    for accept in ["application/xml", "application/json"] {
        let (status, headers, body) =
            get_with(&format!("{base}/simple/torch/"), &[("accept", accept)]).await;
        assert_eq!(status, StatusCode::OK, "{accept}: {body}");
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{accept}"
        );
    }
    let (status, _, body) = get_with(&format!("{base}/simple/torch/?format=nonsense"), &[]).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE, "{body}");
    let (status, headers, _) = get_with(&format!("{base}/simple/Torch_Vision/"), &[]).await;
    assert!(status.is_redirection());
    assert_eq!(headers[header::LOCATION], "/simple/torch-vision/");
    let (status, headers, _) = get_with(&format!("{base}/simple/torch"), &[]).await;
    assert!(status.is_redirection());
    assert_eq!(headers[header::LOCATION], "/simple/torch/");
    let (status, _, body) = get_with(&format!("{base}/m/not-a-token!/simple/torch/"), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("wheelgate detect --token"), "{body}");
    assert_eq!(
        get_with(&format!("{base}/b/cu999x/simple/torch/"), &[])
            .await
            .0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn etag_answers_304() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let url = format!("http://{proxy}/simple/torch/");
    let (_, headers, _) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    let (status, headers, body) = get_with(
        &url,
        &[
            ("accept", PIP_ACCEPT),
            ("if-none-match", &etag),
            ("cache-control", "max-age=0"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(headers[header::ETAG].to_str().unwrap(), etag);
    // Another format is another representation with its own tag.
    let (status, _, _) = get_with(&url, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
}

/// A client that shows the bytes as sent (reqwest would otherwise ask for gzip itself and
/// decompress without a trace).
async fn get_raw(url: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = reqwest::Client::builder()
        .no_gzip()
        .build()
        .unwrap()
        .get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn pages_are_sent_gzip_compressed_to_clients_that_ask() {
    use std::io::Read as _;
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let url = format!("http://{proxy}/simple/torch/");
    // pip's (requests') header.
    let gzip = ("accept-encoding", "gzip, deflate");
    let (status, plain_headers, plain) = get_raw(&url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(plain_headers.get(header::CONTENT_ENCODING).is_none());
    // Compressed in the background after the first rendering: soon every request gets it.
    let mut compressed = None;
    for _ in 0..100 {
        let (status, headers, body) = get_raw(&url, &[gzip]).await;
        assert_eq!(status, StatusCode::OK);
        if headers.get(header::CONTENT_ENCODING).is_some() {
            compressed = Some((headers, body));
            break;
        }
        assert_eq!(body, plain, "until then, the page as it is");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (headers, body) = compressed.expect("a gzip body within 2 s");
    assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
    assert_eq!(headers[header::VARY], "Accept, User-Agent, Accept-Encoding");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain, "the same page");
    assert!(body.len() < plain.len());
    // Its own tag: a 304 for it, and a client without gzip never gets the compressed body.
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    assert_ne!(etag, plain_headers[header::ETAG].to_str().unwrap());
    let (status, _, _) = get_raw(&url, &[gzip, ("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    let (status, headers, body) = get_raw(&url, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(body, plain);
    // A client that cached the plain form while the gzip one was made still holds the page.
    let plain_etag = plain_headers[header::ETAG].to_str().unwrap();
    let (status, headers, _) = get_raw(&url, &[gzip, ("if-none-match", plain_etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(headers[header::ETAG], plain_etag);
    let (_, headers, _) = get_raw(&url, &[("accept-encoding", "gzip;q=0, br")]).await;
    assert!(headers.get(header::CONTENT_ENCODING).is_none());
}

#[tokio::test]
async fn stale_page_when_the_upstream_fails_and_offline_serves_the_cache() {
    let (fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |c| c.index_ttl_secs = 0).await;
    let url = format!("http://{proxy}/simple/torch/");
    let (_, _, fresh) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    fake.down.store(true, Ordering::SeqCst);
    let (status, _, stale) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stale, fresh);
    assert!(
        fake.hits.lock().unwrap()["torch/"] >= 2,
        "the expired page was revalidated upstream"
    );
    // A project never cached: the failing upstream is a 502 naming the problem.
    let (status, _, body) = get_with(&format!("http://{proxy}/simple/filelock/"), &[]).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");

    // An offline server on a copy of the cache directory (one server per directory: the first
    // holds its lock): the page comes from disk.
    // The server answers before its disk copy of a page lands: wait for it.
    for _ in 0..200 {
        let written = std::fs::read_dir(cache.path().join("index"))
            .unwrap()
            .flatten()
            .any(|entry| entry.path().extension().is_some_and(|e| e == "json"));
        if written {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let copy = tempfile::tempdir().unwrap();
    copy_tree(cache.path(), copy.path());
    let offline = start_proxy(upstream, copy.path(), |c| c.offline = true).await;
    let before = fake.hits.lock().unwrap().values().sum::<usize>();
    let (status, _, body) = get_with(
        &format!("http://{offline}/simple/torch/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // From disk, but offering only what the store holds: no file was ever downloaded.
    assert!(fresh.contains("\"filename\":\"torch-2.9.0"), "{fresh}");
    assert!(body.contains("\"name\":\"torch\""), "{body}");
    assert!(body.contains("\"files\":[]"), "{body}");
    // The explanation says why: each left-out file, not mirrored.
    let (status, _, explained) = get_with(
        &format!("http://{offline}/explain/torch/"),
        &[("accept", "application/json")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{explained}");
    let explained: serde_json::Value = serde_json::from_str(&explained).unwrap();
    let left_out: Vec<&serde_json::Value> = explained["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["reason"] == wheelgate_server::offline::NOT_MIRRORED)
        .collect();
    assert!(
        left_out
            .iter()
            .any(|d| d["filename"].as_str().unwrap().starts_with("torch-2.9.0")),
        "{explained}"
    );
    assert!(
        explained["versions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["kept"].as_array().unwrap().is_empty()),
        "nothing kept offline that the store lacks: {explained}"
    );
    assert_eq!(
        get_with(&format!("http://{offline}/simple/filelock/"), &[])
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        fake.hits.lock().unwrap().values().sum::<usize>(),
        before,
        "offline never contacts an upstream"
    );
}

/// Copies the files of a cache directory (its lock file too, unlocked in the copy).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn user_agent_pinned_and_token_routes_change_the_machine() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let base = format!("http://{proxy}");
    let mac_pip =
        r#"pip/25.0 {"cpu":"arm64","system":{"name":"Darwin","release":"24.0"},"python":"3.12.1"}"#;
    let (_, _, body) = get_with(
        &format!("{base}/simple/torch/"),
        &[("accept", PIP_ACCEPT), ("user-agent", mac_pip)],
    )
    .await;
    // The Mac gets its CPU build, and the page keeps every other platform's build for this
    // server's H100, as a universal lock needs.
    assert_eq!(
        filenames(&body),
        [
            "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu130-cp312-cp312-win_amd64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl"
        ]
    );

    let (_, _, body) = get_with(
        &format!("{base}/b/cu128/simple/torch/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(
        filenames(&body),
        [
            "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu128-cp312-cp312-win_amd64.whl"
        ]
    );

    let rtx5090: wheelgate_resolver::Machine = serde_json::from_str(r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"12.0"}]}}"#).unwrap();
    let token = wheelgate_resolver::token::encode(&rtx5090);
    let (status, _, body) = get_with(
        &format!("{base}/m/{token}/simple/torch/"),
        &[("accept", PIP_ACCEPT)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        filenames(&body)
            .iter()
            .all(|n| n.contains("+cu128") || n.contains("-none-macosx_")),
        "{body}"
    );
}

#[tokio::test]
async fn expired_pages_are_revalidated_conditionally() {
    let (fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |c| c.index_ttl_secs = 0).await;
    let url = format!("http://{proxy}/simple/torch/");
    let (_, _, first) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    let (status, _, second) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first, second);
    assert_eq!(
        *fake.not_modified.lock().unwrap(),
        1,
        "the second request revalidated with If-None-Match"
    );
}

#[tokio::test]
async fn a_revalidated_page_is_fresh_again_for_its_ttl() {
    // The 304 moves the copy's fetch time forward (in place, the page not copied): the next
    // requests within the TTL ask the upstream nothing.
    let (fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |c| c.index_ttl_secs = 1).await;
    let url = format!("http://{proxy}/simple/torch/");
    let (_, _, first) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, _, second) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!((status, &first), (StatusCode::OK, &second));
    assert_eq!(
        *fake.not_modified.lock().unwrap(),
        1,
        "expired: revalidated"
    );
    let asked = fake.hits.lock().unwrap()["torch/"];
    for _ in 0..3 {
        let (status, _, again) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
        assert_eq!((status, &again), (StatusCode::OK, &first));
    }
    assert_eq!(
        fake.hits.lock().unwrap()["torch/"],
        asked,
        "fresh after the 304: not asked again within the TTL"
    );
}

#[tokio::test]
async fn a_malformed_upstream_page_is_a_502_and_the_next_request_after_healing_succeeds() {
    let (fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |c| c.index_ttl_secs = 0).await;
    let url = format!("http://{proxy}/simple/filelock/");
    fake.garbage.store(true, Ordering::SeqCst);
    let (status, _, body) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("cannot be read"), "{body}");
    assert!(
        body.contains(&format!("`{upstream}`")) && !body.contains("http://"),
        "the client is told which upstream, never its URL: {body}"
    );
    fake.garbage.store(false, Ordering::SeqCst);
    let (status, _, body) = get_with(&url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), ["filelock-3.20.0-py3-none-any.whl"]);
}

#[tokio::test]
async fn headers_over_the_limit_are_a_431_naming_it_before_any_route() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    // Over 32 KiB in all, well under what hyper itself refuses.
    let response = client()
        .get(format!("http://{proxy}/simple/torch/"))
        .header("x-padding", "x".repeat(40_000))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 431);
    let body = response.text().await.unwrap();
    assert!(body.contains("over the limit of 32768"), "{body}");
    // Just under the limit is served.
    let response = client()
        .get(format!("http://{proxy}/healthz"))
        .header("x-padding", "x".repeat(30_000))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
}

#[tokio::test]
async fn oversized_headers_and_invalid_names_are_refused_and_the_server_goes_on() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    let huge = "x".repeat(200_000);
    let response = client()
        .get(format!("http://{proxy}/simple/torch/"))
        .header("x-padding", huge)
        .send()
        .await;
    match response {
        Ok(response) => assert_eq!(response.status().as_u16(), 431),
        // hyper may close the connection instead of answering; either way nothing is served.
        Err(err) => assert!(
            err.is_request() || err.is_connect() || err.is_body(),
            "{err}"
        ),
    }
    // `/simple/%2e%2e/` cannot be sent from here: the client resolves it to `/` before sending;
    // raw-socket traversal attempts are in files.rs.
    for path in [
        "/simple/a%2Fb/",
        "/simple/torch%00/",
        "/simple/-/",
        "/simple/caf%C3%A9/",
    ] {
        let (status, _, body) = get_with(&format!("http://{proxy}{path}"), &[]).await;
        assert!(
            status == StatusCode::NOT_FOUND || status.is_redirection(),
            "{path}: {status} {body}"
        );
    }
    assert_eq!(
        get_with(&format!("http://{proxy}/simple/torch/"), &[])
            .await
            .0,
        StatusCode::OK
    );
}

/// A CR/LF (or any byte outside a project name) in a project name is a 404 naming the name
/// escaped, on every route that redirects a non-normalized name: never a `Location` header
/// made of it, never a 500.
#[tokio::test]
async fn a_crlf_in_a_project_name_is_a_404() {
    let (_fake, upstream) = start_fake().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstream, cache.path(), |_| {}).await;
    for path in [
        "/simple/Foo%0D%0ASet-Cookie:%20x/",
        "/explain/Foo%0D%0ASet-Cookie:%20x/",
        "/m/1-lx-g2.36/simple/a%0Ab/",
    ] {
        let (status, headers, body) = get_with(&format!("http://{proxy}{path}"), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!headers.contains_key("set-cookie"), "{path}");
        assert!(
            body.contains("is not a valid project name"),
            "{path}: {body}"
        );
    }
    // A valid name that is not normalized is still redirected.
    let (status, headers, _) = get_with(&format!("http://{proxy}/simple/Torch/"), &[]).await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers[header::LOCATION], "/simple/torch/");
}
