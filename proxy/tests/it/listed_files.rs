//! Every file a page lists is downloadable through its link, verified by its hash: older
//! releases' `.zip` and `.tar.bz2` sdists, `.egg` and `.exe` files, not only wheels and `.tar.gz`
//! sdists; a file whose bytes disagree with the page is refused, and a name the page does not
//! list is a 404, never an upstream request.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

/// (filename, bytes, the sha256 the page gives).
type Listed = Vec<(String, Vec<u8>, String)>;

#[derive(Clone)]
struct Upstream {
    files: Arc<Listed>,
    requests: Arc<Mutex<Vec<String>>>,
}

async fn page(State(upstream): State<Upstream>, Path(project): Path<String>) -> Response {
    if project != "demo" {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut html = String::from("<!DOCTYPE html><html><body>\n");
    for (name, _, sha256) in upstream.files.iter() {
        let _ = writeln!(
            html,
            "<a href=\"/packages/{name}#sha256={sha256}\">{name}</a><br/>"
        );
    }
    ([(header::CONTENT_TYPE, "text/html")], html).into_response()
}

async fn file(State(upstream): State<Upstream>, Path(name): Path<String>) -> Response {
    upstream.requests.lock().unwrap().push(name.clone());
    match upstream.files.iter().find(|(n, _, _)| *n == name) {
        Some((_, bytes, _)) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[tokio::test]
async fn every_listed_file_downloads_verified() {
    let mut files: Listed = [
        "demo-0.6c1.zip",
        "demo-1.0.tar.bz2",
        "demo-0.4-py2.7.egg",
        "demo-1.0.win32.exe",
        "demo-2.0.tar.gz",
    ]
    .iter()
    .map(|name| {
        let bytes = format!("the bytes of {name}").into_bytes();
        let sha256 = hex(&bytes);
        ((*name).to_string(), bytes, sha256)
    })
    .collect();
    // Listed with a sha256 its bytes do not have.
    files.push((
        "demo-0.5.zip".to_string(),
        b"tampered".to_vec(),
        hex(b"what the page promised"),
    ));
    let upstream = Upstream {
        files: Arc::new(files),
        requests: Arc::default(),
    };
    let router = Router::new()
        .route("/simple/{project}/", get(page))
        .route("/packages/{name}", get(file))
        .with_state(upstream.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let cache = tempfile::tempdir().unwrap();
    let config = ServeConfig {
        pypi_url: format!("http://{addr}/simple"),
        pytorch_url: format!("http://{addr}/whl"),
        cache_dir: cache.path().to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap()),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    tokio::spawn(serve_until(listener, state, std::future::pending()));

    let page = reqwest::get(format!("http://{proxy}/simple/demo/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (name, bytes, _) in upstream
        .files
        .iter()
        .filter(|(n, _, _)| n != "demo-0.5.zip")
    {
        let link = format!("/files/demo/{name}");
        assert!(page.contains(&link), "{link} not on {page}");
        let response = reqwest::get(format!("http://{proxy}{link}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert_eq!(
            response.bytes().await.unwrap().as_ref(),
            bytes.as_slice(),
            "{name}"
        );
    }
    // Bytes that disagree with the page: the status is sent before they are verified, and the
    // transfer breaks, so the client never holds a complete-looking file.
    let tampered = reqwest::get(format!("http://{proxy}/files/demo/demo-0.5.zip"))
        .await
        .unwrap();
    assert!(
        tampered.status().is_server_error() || tampered.bytes().await.is_err(),
        "a file whose bytes disagree with its page was served"
    );
    // A name the page does not list: 404, and the upstream's file host is never asked.
    let before = upstream.requests.lock().unwrap().len();
    for name in ["demo-9.9.zip", "passwd"] {
        let response = reqwest::get(format!("http://{proxy}/files/demo/{name}"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{name}");
    }
    assert_eq!(upstream.requests.lock().unwrap().len(), before);
}
