//! `[[sources]]` in the server: a PyTorch index, a PyPI and an internal index on 127.0.0.1 (one
//! fake each), and what the server says about them: the merged torch page and each build once,
//! `/explain/` naming every file's source and a failed one, `/metrics`, the status page,
//! access settings sent to their own source only, and bad configurations refused at start.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get as route_get;
use wheelgate_config::{SecretSource, ServeConfig, SourceConfig};
use wheelgate_server::serve::{build_state, serve_until};

const CPU_ONLY_DRIVER_570: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"compute_capability":"9.0"}]}}"#;
const PLATFORM: &str = "manylinux_2_28_x86_64";

/// One fake index: `pages` by project, each a list of (filename, sha256); `down` answers 503;
/// the `Authorization` header of every request is recorded.
#[derive(Clone, Default)]
struct Index {
    pages: Arc<HashMap<&'static str, Vec<String>>>,
    down: Arc<AtomicBool>,
    /// Answer a JSON page cut off in the middle.
    garbage: Arc<AtomicBool>,
    authorization: Arc<Mutex<Vec<Option<String>>>>,
}

async fn page(
    State(index): State<Index>,
    Path(project): Path<String>,
    headers: HeaderMap,
) -> Response {
    index.authorization.lock().unwrap().push(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    );
    if index.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if index.garbage.load(Ordering::SeqCst) {
        return (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            "{\"files\": [{\"filename\": 7",
        )
            .into_response();
    }
    let Some(files) = index.pages.get(project.as_str()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut html = String::from("<!DOCTYPE html><html><body>\n");
    for name in files {
        let _ = writeln!(
            html,
            "<a href=\"/files/{}#sha256={}\">{name}</a><br/>",
            name.replace('+', "%2B"),
            "0".repeat(64)
        );
    }
    html.push_str("</body></html>");
    ([(header::CONTENT_TYPE, "text/html")], html).into_response()
}

async fn start(pages: HashMap<&'static str, Vec<String>>) -> (Index, String) {
    let index = Index {
        pages: Arc::new(pages),
        ..Index::default()
    };
    let router = Router::new()
        .route("/simple/{project}/", route_get(page))
        .with_state(index.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (index, format!("http://{addr}/simple"))
}

fn wheel(version: &str) -> String {
    format!("torch-{version}-cp312-cp312-{PLATFORM}.whl")
}

struct Company {
    pytorch: Index,
    pypi: Index,
    internal: Index,
    proxy: SocketAddr,
    _cache: tempfile::TempDir,
}

/// torch 2.9.0 as both publish it (labelled builds on the PyTorch index, the default cu128
/// build unlabelled on PyPI) and 2.10.0 only on PyPI; `acme-utils` on the internal index and
/// squatted on PyPI.
async fn company(edit: impl FnOnce(&mut ServeConfig)) -> Company {
    let (pytorch, pytorch_url) = start(HashMap::from([(
        "torch",
        vec![
            wheel("2.9.0+cu128"),
            wheel("2.9.0+cu130"),
            wheel("2.9.0+cpu"),
        ],
    )]))
    .await;
    let (pypi, pypi_url) = start(HashMap::from([
        ("torch", vec![wheel("2.9.0"), wheel("2.10.0")]),
        (
            "acme-utils",
            vec!["acme_utils-99.0-py3-none-any.whl".to_string()],
        ),
    ]))
    .await;
    let (internal, internal_url) = start(HashMap::from([(
        "acme-utils",
        vec!["acme_utils-1.0-py3-none-any.whl".to_string()],
    )]))
    .await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = ServeConfig {
        pytorch_url,
        pypi_url,
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(CPU_ONLY_DRIVER_570).unwrap()),
        sources: vec![source("internal", &internal_url, &["acme-*"])],
        ..ServeConfig::default()
    };
    edit(&mut config);
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    tokio::spawn(serve_until(listener, state, std::future::pending()));
    Company {
        pytorch,
        pypi,
        internal,
        proxy,
        _cache: cache,
    }
}

fn source(name: &str, url: &str, projects: &[&str]) -> SourceConfig {
    SourceConfig {
        name: name.to_string(),
        url: url.to_string(),
        projects: projects.iter().map(ToString::to_string).collect(),
        token: None,
        basic: None,
        headers: std::collections::BTreeMap::new(),
        ca_bundle: None,
        extra_origins: Vec::new(),
    }
}

async fn get(url: &str) -> (StatusCode, String) {
    let response = reqwest::get(url).await.unwrap();
    (response.status(), response.text().await.unwrap())
}

/// `/explain/torch/` as JSON.
async fn explain_torch(proxy: SocketAddr) -> serde_json::Value {
    let (_, text) = get(&format!("http://{proxy}/explain/torch/?format=json")).await;
    serde_json::from_str(&text).unwrap()
}

fn filenames(json: &str) -> Vec<String> {
    let page: serde_json::Value = serde_json::from_str(json).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_string())
        .collect()
}

async fn json_page(proxy: SocketAddr, project: &str) -> (StatusCode, String) {
    let response = reqwest::Client::new()
        .get(format!("http://{proxy}/simple/{project}/"))
        .header(header::ACCEPT, "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

#[tokio::test]
async fn torch_is_merged_from_both_indexes_each_build_once() {
    let company = company(|_| {}).await;
    let (status, body) = json_page(company.proxy, "torch").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Driver 570: cu128 for 2.9.0, the PyTorch index's file (PyPI's plain wheel is the same
    // build); 2.10.0, only on PyPI, its default build (cu128 per the catalog).
    assert_eq!(
        filenames(&body),
        [wheel("2.9.0+cu128"), wheel("2.10.0")],
        "{body}"
    );
    let explain = explain_torch(company.proxy).await;
    assert_eq!(explain["file_sources"][wheel("2.9.0+cu128")], "pytorch");
    assert_eq!(explain["file_sources"][wheel("2.10.0")], "pypi");
    let sources: Vec<&str> = explain["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["pytorch", "pypi"]);
    let dropped = explain["dropped"].to_string();
    assert!(
        dropped.contains(&wheel("2.9.0"))
            && dropped.contains("the same build is served from the source `pytorch`"),
        "{dropped}"
    );
    // The internal index is never asked for torch.
    assert!(company.internal.authorization.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_source_is_named_and_the_others_still_serve() {
    let company = company(|_| {}).await;
    company.pytorch.down.store(true, Ordering::SeqCst);
    let (status, body) = json_page(company.proxy, "torch").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        filenames(&body),
        [wheel("2.9.0"), wheel("2.10.0")],
        "{body}"
    );
    let explain = explain_torch(company.proxy).await;
    let error = explain["sources"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("503") && error.contains("missing"),
        "{explain}"
    );
    let (_, metrics) = get(&format!("http://{}/metrics", company.proxy)).await;
    assert!(
        metrics.contains("wheelgate_source_pages_total{source=\"pytorch\",result=\"failed\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("wheelgate_source_pages_total{source=\"pypi\",result=\"page\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_file_of_a_failed_source_is_its_failure_never_a_404() {
    let company = company(|_| {}).await;
    company.pytorch.down.store(true, Ordering::SeqCst);
    // Only the PyTorch index lists this build; it is down and nothing is cached.
    let response = reqwest::get(format!(
        "http://{}/files/torch/{}",
        company.proxy,
        wheel("2.9.0+cu130").replace('+', "%2B")
    ))
    .await
    .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_server_error(), "{status}: {body}");
    assert!(body.contains("`pytorch`"), "{body}");
}

#[tokio::test]
async fn an_owned_name_never_reaches_the_general_index() {
    let company = company(|_| {}).await;
    let (status, body) = json_page(company.proxy, "acme-utils").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), ["acme_utils-1.0-py3-none-any.whl"]);
    company.internal.down.store(true, Ordering::SeqCst);
    // A name the cache never saw: the owner's failure, naming it.
    let (status, body) = json_page(company.proxy, "acme-other").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(
        body.contains("`acme-other` is served only from the source `internal`")
            && body.contains("503"),
        "{body}"
    );
    assert!(
        company.pypi.authorization.lock().unwrap().len() <= 1,
        "PyPI was asked for an internal name"
    );
    let (_, status_page) = get(&format!("http://{}/", company.proxy)).await;
    assert!(
        status_page.contains("internal (serves acme-*)"),
        "{status_page}"
    );
}

#[tokio::test]
async fn a_source_answering_garbage_is_refused_never_replaced_by_another() {
    let company = company(|_| {}).await;
    company.internal.garbage.store(true, Ordering::SeqCst);
    let (status, body) = json_page(company.proxy, "acme-utils").await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(
        body.contains("served only from the source `internal`") && body.contains("cannot be read"),
        "{body}"
    );
    assert!(
        company.pypi.authorization.lock().unwrap().is_empty(),
        "PyPI was asked in its place"
    );
    // Once it answers properly, its page is served.
    company.internal.garbage.store(false, Ordering::SeqCst);
    let (status, body) = json_page(company.proxy, "acme-utils").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(filenames(&body), ["acme_utils-1.0-py3-none-any.whl"]);
}

#[tokio::test]
async fn a_sources_token_goes_to_its_own_index_only() {
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "tok-internal\n").unwrap();
    let company = company(|config| {
        config.sources[0].token = Some(SecretSource::File(token));
    })
    .await;
    let (status, _) = json_page(company.proxy, "acme-utils").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = json_page(company.proxy, "torch").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        *company.internal.authorization.lock().unwrap(),
        [Some("Bearer tok-internal".to_string())]
    );
    for other in [&company.pypi, &company.pytorch] {
        assert!(
            other
                .authorization
                .lock()
                .unwrap()
                .iter()
                .all(Option::is_none),
            "the token went to another index"
        );
    }
}

#[tokio::test]
async fn bad_sources_stop_the_start_with_what_to_do() {
    let cache = tempfile::tempdir().unwrap();
    let cases = [
        (
            source("amd", "https://amd.example/whl", &["torch*"]),
            "PyTorch project",
        ),
        (
            source("internal", "ftp://x.example/simple", &["a"]),
            "not an http(s) URL",
        ),
        (
            source("Internal", "https://x.example/simple", &["a"]),
            "is not valid",
        ),
        (
            source("internal", "https://x.example/simple", &["Acme_Utils"]),
            "`acme-utils`",
        ),
    ];
    for (bad, expected) in cases {
        let config = ServeConfig {
            cache_dir: cache.path().to_path_buf(),
            machine: Some(serde_json::from_str(CPU_ONLY_DRIVER_570).unwrap()),
            sources: vec![bad],
            ..ServeConfig::default()
        };
        let Err(err) = build_state(config).await else {
            panic!("a bad source was accepted: {expected}");
        };
        let chain = format!(
            "{err}: {}",
            wheelgate_index::error_chain::source_chain(&err)
        );
        assert!(chain.contains(expected), "{chain}");
    }
}
