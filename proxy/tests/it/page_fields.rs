//! Page fields kept (fidelity): a PyPI page through the proxy keeps every field it had, in JSON
//! and in HTML: `meta._last-serial` (mirroring tools read it), PEP 708's `tracks` and
//! `alternate-locations`, and `versions` as written (fileless versions included, `0.6c1` not
//! re-spelled `0.6rc1`).

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

const PAGE: &str = r#"{"meta":{"_last-serial":31234567,"api-version":"1.4"},"name":"demo","tracks":["https://pypi.example/simple/demo/"],"alternate-locations":["https://mirror.example/simple/demo/"],"versions":["0.5","0.6c1","1.0"],"files":[{"filename":"demo-0.6c1.tar.gz","url":"https://files.example/demo-0.6c1.tar.gz","hashes":{"sha256":"aa"},"size":10,"upload-time":"2010-01-01T00:00:00Z","yanked":false},{"filename":"demo-1.0-py3-none-any.whl","url":"https://files.example/demo-1.0-py3-none-any.whl","hashes":{"sha256":"bb"},"size":20,"upload-time":"2025-01-01T00:00:00Z","yanked":false}]}"#;

async fn start() -> (std::net::SocketAddr, tempfile::TempDir) {
    let upstream = Router::new().route(
        "/simple/demo/",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
                PAGE,
            )
                .into_response()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, upstream).await.unwrap() });
    let cache = tempfile::tempdir().unwrap();
    let config = ServeConfig {
        pytorch_url: format!("http://{upstream_addr}/whl"),
        pypi_url: format!("http://{upstream_addr}/simple"),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_until(listener, state, std::future::pending()));
    (addr, cache)
}

#[tokio::test]
async fn a_pypi_page_keeps_its_fields_in_json_and_html() {
    let (proxy, _cache) = start().await;
    let client = reqwest::Client::new();
    let json: serde_json::Value = serde_json::from_str(
        &client
            .get(format!("http://{proxy}/simple/demo/"))
            .header("Accept", "application/vnd.pypi.simple.v1+json")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let upstream: serde_json::Value = serde_json::from_str(PAGE).unwrap();
    assert_eq!(json["meta"], upstream["meta"], "{json}");
    for key in ["tracks", "alternate-locations", "versions", "name"] {
        assert_eq!(json[key], upstream[key], "{key}: {json}");
    }
    for (ours, theirs) in json["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(upstream["files"].as_array().unwrap())
    {
        for key in ["filename", "hashes", "size", "upload-time", "yanked"] {
            assert_eq!(ours[key], theirs[key], "{key}");
        }
    }
    let html = client
        .get(format!("http://{proxy}/simple/demo/"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(r#"<meta name="pypi:tracks" content="https://pypi.example/simple/demo/">"#),
        "{html}"
    );
    assert!(
        html.contains(
            r#"<meta name="pypi:alternate-locations" content="https://mirror.example/simple/demo/">"#
        ),
        "{html}"
    );
}
