//! How old the build facts are and whether answers rest on inference, on `/metrics` and the
//! status page: a torch page listing a release the catalog lacks (2.16) makes the answers
//! inferred, a page of known releases does not.

use std::fmt::Write as _;
use std::net::SocketAddr;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing;
use wheelgate_config::ServeConfig;
use wheelgate_server::app;
use wheelgate_server::serve::build_state;

async fn pytorch(Path(path): Path<String>) -> Response {
    let versions: &[&str] = match path.as_str() {
        "torch/" => &["2.16.0+cu134", "2.9.0+cpu"],
        "torchvision/" => &["0.24.0+cpu"],
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let name = path.trim_end_matches('/');
    let mut html = String::from("<!DOCTYPE html><html><body>\n");
    for version in versions {
        let file = format!("{name}-{version}-cp312-cp312-manylinux_2_28_x86_64.whl");
        let _ = writeln!(html, "<a href=\"/whl/{file}#sha256=00\">{file}</a><br/>");
    }
    ([(header::CONTENT_TYPE, "text/html")], html).into_response()
}

async fn start(cache: &std::path::Path) -> SocketAddr {
    let router = Router::new().route("/whl/{*path}", routing::get(pytorch));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let config = ServeConfig {
        pytorch_url: format!("http://{upstream}/whl"),
        pypi_url: format!("http://{upstream}/simple"),
        cache_dir: cache.to_path_buf(),
        machine: Some(serde_json::from_str(r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#).unwrap()),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(state)).await.unwrap() });
    addr
}

async fn text(url: String) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

fn metric(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_resting_on_inference_and_the_catalogs_age_are_shown() {
    let cache = tempfile::tempdir().unwrap();
    let addr = start(cache.path()).await;
    let base = format!("http://{addr}");
    let metrics = text(format!("{base}/metrics")).await;
    assert_eq!(metric(&metrics, "wheelgate_inferred_answers_total "), 0);
    let updated = wheelgate_resolver::Catalog::embedded().updated().unwrap().1 * 86_400;
    assert_eq!(
        metric(&metrics, "wheelgate_catalog_updated_timestamp_seconds "),
        updated
    );
    let status = text(format!("{base}/")).await;
    assert!(
        status.contains("Inferred facts used in the last hour</th><td>no, not since the start"),
        "{status}"
    );
    assert!(status.contains("Facts as of</th><td>2026-"), "{status}");

    // torchvision 0.24 is of 2.9, a release the catalog describes: nothing inferred.
    assert!(
        reqwest::get(format!("{base}/simple/torchvision/"))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    assert_eq!(
        metric(
            &text(format!("{base}/metrics")).await,
            "wheelgate_inferred_answers_total "
        ),
        0
    );
    // torch 2.16 is not in the catalog: its answer rests on the rules of 2.15.
    for _ in 0..2 {
        assert!(
            reqwest::get(format!("{base}/simple/torch/"))
                .await
                .unwrap()
                .status()
                .is_success()
        );
    }
    let metrics = text(format!("{base}/metrics")).await;
    assert_eq!(
        metric(&metrics, "wheelgate_inferred_answers_total "),
        2,
        "every page served counts, cached or not"
    );
    assert!(
        metric(
            &metrics,
            "wheelgate_inferred_answer_last_timestamp_seconds "
        ) > 0
    );
    let status = text(format!("{base}/")).await;
    assert!(
        status.contains("Inferred facts used in the last hour</th><td>yes"),
        "{status}"
    );
}
