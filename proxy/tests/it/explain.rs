//! `/explain/<project>/` under every prefix, and the comment on rewritten pages, over the
//! real-size generated `/whl/torch/` page (wheelgate-testdata) from a fake upstream.

use std::collections::BTreeMap;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing;
use serde_json::Value;
use wheelgate_config::ServeConfig;
use wheelgate_resolver::Machine;
use wheelgate_server::app;
use wheelgate_server::serve::build_state;

const H100: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100","compute_capability":"9.0"}]}}"#;
const CPU_ONLY: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;
const MI300X: &str =
    r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"gpus":[{"gfx":"gfx942"}]}}"#;
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";

async fn pytorch(Path(path): Path<String>) -> Response {
    let files = wheelgate_testdata::torch_files();
    let html = match path.as_str() {
        "torch/" => wheelgate_testdata::page_html(&files),
        "cu128/torch/" => {
            let cu128: Vec<_> = files
                .into_iter()
                .filter(|f| f.path.starts_with("/whl/cu128/"))
                .collect();
            wheelgate_testdata::page_html(&cu128)
        }
        _ => return StatusCode::FORBIDDEN.into_response(),
    };
    ([(header::CONTENT_TYPE, "text/html")], html).into_response()
}

async fn pypi(Path(project): Path<String>) -> Response {
    if project != "filelock" {
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
        r#"{"meta":{"api-version":"1.1"},"name":"filelock","versions":["3.20.0"],"files":[{"filename":"filelock-3.20.0-py3-none-any.whl","url":"https://files.example/packages/filelock-3.20.0-py3-none-any.whl","hashes":{"sha256":"aa"}}]}"#,
    )
        .into_response()
}

/// The fake upstreams and a proxy resolving `/simple/` for `machine`; the proxy's address.
async fn start(machine: &str, cache: &std::path::Path) -> SocketAddr {
    let router = Router::new()
        .route("/whl/{*path}", routing::get(pytorch))
        .route("/simple/{project}/", routing::get(pypi));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let config = ServeConfig {
        pytorch_url: format!("http://{upstream}/whl"),
        pypi_url: format!("http://{upstream}/simple"),
        cache_dir: cache.to_path_buf(),
        machine: Some(serde_json::from_str(machine).unwrap()),
        ..ServeConfig::default()
    };
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(state)).await.unwrap() });
    addr
}

async fn get(url: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, String) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = client.get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

async fn explain_json(url: &str) -> Value {
    let (status, headers, body) = get(url, &[("accept", "application/json")]).await;
    assert_eq!(status, StatusCode::OK, "{url}: {body}");
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    serde_json::from_str(&body).unwrap()
}

async fn simple_filenames(url: &str) -> BTreeSet<String> {
    let (status, _, body) = get(url, &[("accept", PIP_ACCEPT)]).await;
    assert_eq!(status, StatusCode::OK, "{url}: {body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_string())
        .collect()
}

/// The chosen backend of each version, from an explanation.
fn chosen(explanation: &Value) -> HashMap<String, Option<String>> {
    explanation["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_str().unwrap().to_string(),
                v["chosen"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// The files an explanation says the page lists: those kept, and those also listed under the
/// plain version.
fn kept(explanation: &Value) -> BTreeSet<String> {
    explanation["versions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| {
            let aliases = v.get("plain_aliases").and_then(Value::as_array);
            v["kept"]
                .as_array()
                .unwrap()
                .iter()
                .chain(aliases.into_iter().flatten())
        })
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

fn version<'a>(explanation: &'a Value, wanted: &str) -> &'a Value {
    explanation["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == wanted)
        .unwrap_or_else(|| panic!("version {wanted} not explained"))
}

#[tokio::test]
async fn explains_every_version_of_the_real_size_page_as_the_rewritten_page_keeps_it() {
    let cache = tempfile::tempdir().unwrap();
    let addr = start(H100, cache.path()).await;
    let base = format!("http://{addr}");

    let explanation = explain_json(&format!("{base}/explain/torch/")).await;
    assert_eq!(explanation["project"], "torch");
    assert_eq!(explanation["selected"], true);
    assert_eq!(explanation["simple_url"], "/simple/torch/");
    assert!(
        explanation["machine"]
            .as_str()
            .unwrap()
            .contains("GPU 0 NVIDIA H100 (compute capability 9.0)")
    );
    // Every version of the page, newest first, from 2.11.0 down to the oldest.
    let versions = explanation["versions"].as_array().unwrap();
    assert_eq!(versions.first().unwrap()["version"], "2.11.0");
    let published: usize = wheelgate_testdata::releases::RELEASES
        .iter()
        .map(|r| r.versions.len())
        .sum();
    assert_eq!(versions.len(), published);
    // What the explanation says is kept is exactly what the rewritten page serves.
    let served = simple_filenames(&format!("{base}/simple/torch/")).await;
    assert_eq!(kept(&explanation), served);

    let choices = chosen(&explanation);
    assert_eq!(choices["2.11.0"].as_deref(), Some("cu130"));
    assert_eq!(choices["2.9.0"].as_deref(), Some("cu130"));
    assert_eq!(choices["2.5.1"].as_deref(), Some("cu124"));
    assert_eq!(choices["1.13.1"].as_deref(), Some("cu117"));

    // Every other build of 2.11.0 is accounted for, with a reason.
    let v211 = version(&explanation, "2.11.0");
    let builds = v211["builds"].as_array().unwrap();
    let verdict = |backend: &str| {
        builds
            .iter()
            .find(|b| b["backend"] == backend)
            .unwrap_or_else(|| panic!("{backend} not listed: {builds:?}"))
    };
    assert_eq!(builds[0]["backend"], "cu130");
    assert_eq!(builds[0]["verdict"], "chosen");
    assert!(builds[0]["reason"].is_null());
    for backend in [
        "cpu", "cu126", "cu128", "cu129", "rocm7.1", "rocm7.2", "xpu",
    ] {
        assert!(
            verdict(backend)["reason"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{backend}"
        );
    }
    assert_eq!(verdict("cpu")["verdict"], "usable");
    assert_eq!(verdict("rocm7.2")["verdict"], "rejected");
    assert_eq!(verdict("rocm7.2")["reason"], "no AMD GPU on this machine");
    platforms_and_counts(&explanation, served.len());

    // HTML for people: the same facts, escaped, one section per version.
    let (status, headers, html) = get(&format!("{base}/explain/torch/"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert!(html.contains(
        "<h2 id=\"v2.11.0\">torch 2.11.0: <span class=\"chosen\">cu130</span> on linux-x86_64"
    ));
    assert!(html.contains("<tr><th>on windows-x86_64</th><td><span class=\"chosen\">cu130</span>"));
    assert!(html.contains("The upstream page lists "));
    assert!(html.contains("no AMD GPU on this machine"));
    assert!(html.contains("href=\"/simple/torch/\""));

    // The status page links to it.
    let (_, _, status_page) = get(&format!("{base}/"), &[]).await;
    assert!(status_page.contains("<a href=\"/explain/torch/\">"));
}

/// The real-size page's 2.11.0 on every platform for the H100, and counts that add up to the
/// page: each file served, another build of its platform, or left off for a reason.
fn platforms_and_counts(explanation: &Value, served: usize) {
    let v211 = version(explanation, "2.11.0");
    // On each platform the build that runs best there for the H100: cu130 on Linux and
    // Windows, the CPU build on s390x and macOS, where no CUDA build is published.
    let elsewhere: BTreeMap<&str, &str> = v211["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["platform"].as_str().unwrap(),
                p["chosen"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        elsewhere,
        BTreeMap::from([
            ("linux-aarch64", "cu130"),
            ("linux-s390x", "cpu"),
            ("macos-arm64", "cpu"),
            ("windows-x86_64", "cu130"),
        ])
    );
    assert!(
        v211["kept"].as_array().unwrap().iter().all(|f| {
            let f = f.as_str().unwrap();
            f.starts_with("torch-2.11.0+cu130-")
                || (f.starts_with("torch-2.11.0+cpu-") && f.ends_with("_s390x.whl"))
                || f.contains("-none-macosx_")
        }),
        "{v211}"
    );
    // The counts add up: every listed file is served, another build, or left off for a reason.
    let counts = &explanation["counts"];
    let other_builds: u64 = counts["other_builds"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        counts["kept"].as_u64().unwrap() + other_builds + counts["other_reasons"].as_u64().unwrap(),
        counts["listed"].as_u64().unwrap(),
        "{counts}"
    );
    assert_eq!(
        counts["kept"].as_u64().unwrap() + counts["plain_aliases"].as_u64().unwrap(),
        served as u64,
        "{counts}"
    );
}

#[tokio::test]
async fn explains_under_the_pinned_and_token_prefixes() {
    let cache = tempfile::tempdir().unwrap();
    let addr = start(H100, cache.path()).await;
    let base = format!("http://{addr}");

    let pinned = explain_json(&format!("{base}/b/cu128/explain/torch/")).await;
    assert_eq!(pinned["policy"]["pinned"], "cu128");
    assert_eq!(pinned["simple_url"], "/b/cu128/simple/torch/");
    let choices = chosen(&pinned);
    assert_eq!(choices["2.11.0"].as_deref(), Some("cu128"));
    assert!(choices.values().all(|c| c.as_deref() == Some("cu128")));
    assert_eq!(
        kept(&pinned),
        simple_filenames(&format!("{base}/b/cu128/simple/torch/")).await
    );

    for (machine, expected) in [(CPU_ONLY, "cpu"), (MI300X, "rocm7.2")] {
        let machine: Machine = serde_json::from_str(machine).unwrap();
        let token = wheelgate_resolver::token::encode(&machine);
        let explanation = explain_json(&format!("{base}/m/{token}/explain/torch/")).await;
        assert_eq!(
            explanation["simple_url"],
            format!("/m/{token}/simple/torch/")
        );
        assert_eq!(chosen(&explanation)["2.11.0"].as_deref(), Some(expected));
        assert_eq!(
            kept(&explanation),
            simple_filenames(&format!("{base}/m/{token}/simple/torch/")).await
        );
    }

    // A pip client on a Mac gets the explanation of the page it gets: the macOS wheels.
    let mac_pip = r#"pip/25.0 {"cpu":"arm64","implementation":{"name":"CPython","version":"3.12.1"},"installer":{"name":"pip","version":"25.0"},"system":{"name":"Darwin","release":"24.1.0"}}"#;
    let (status, _, body) = get(
        &format!("{base}/explain/torch/"),
        &[("accept", "application/json"), ("user-agent", mac_pip)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mac: Value = serde_json::from_str(&body).unwrap();
    assert!(mac["machine"].as_str().unwrap().starts_with("macos-arm64"));
    // Its own choice is the CPU build, whose macOS wheels pip takes; the page still holds
    // every other platform's build for the H100, the same files as for any other client.
    let v211 = version(&mac, "2.11.0");
    assert_eq!(v211["chosen"], "cpu");
    let kept: Vec<&str> = v211["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(kept.contains(&"torch-2.11.0-cp312-none-macosx_11_0_arm64.whl"));
    assert!(
        kept.iter()
            .filter(|f| f.contains("macosx_"))
            .all(|f| f.contains("-none-macosx_")),
        "{kept:?}"
    );
    let linux = explain_json(&format!("{base}/explain/torch/")).await;
    assert_eq!(v211["kept"], version(&linux, "2.11.0")["kept"]);
}

#[tokio::test]
async fn rewritten_html_pages_name_their_machine_and_explain_url() {
    let cache = tempfile::tempdir().unwrap();
    let addr = start(H100, cache.path()).await;
    let base = format!("http://{addr}");
    let cpu: Machine = serde_json::from_str(CPU_ONLY).unwrap();
    let token = wheelgate_resolver::token::encode(&cpu);
    for (prefix, explain, machine) in [
        ("/simple", "/explain/torch/", "GPU 0 NVIDIA H100"),
        (
            "/b/cu128/simple",
            "/b/cu128/explain/torch/",
            "backend pinned to cu128",
        ),
        (
            &format!("/m/{token}/simple") as &str,
            &format!("/m/{token}/explain/torch/") as &str,
            "linux-x86_64, glibc 2.36; no GPU",
        ),
    ] {
        let (status, _, html) = get(
            &format!("{base}{prefix}/torch/"),
            &[("accept", "text/html")],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let mut lines = html.lines();
        assert_eq!(lines.next(), Some("<!DOCTYPE html>"));
        let comment = lines.next().unwrap();
        assert!(
            comment.starts_with("<!-- wheelgate: ") && comment.ends_with(" -->"),
            "{comment}"
        );
        assert!(comment.contains(machine), "{comment}");
        assert!(
            comment.ends_with(&format!(
                "Why each build was kept or dropped: {explain} -->"
            )),
            "{comment}"
        );
        // The page is still a page pip reads: the comment does not hide a single link.
        assert!(html.contains("<a href=\"/files/torch/torch-2.11.0"));
    }
    // JSON pages carry no comment and stay valid JSON.
    let (_, _, json) = get(&format!("{base}/simple/torch/"), &[("accept", PIP_ACCEPT)]).await;
    serde_json::from_str::<Value>(&json).unwrap();
    // Pages of the general upstream are not rewritten per machine: no comment.
    let (_, _, html) = get(
        &format!("{base}/simple/filelock/"),
        &[("accept", "text/html")],
    )
    .await;
    assert!(!html.contains("<!-- wheelgate"), "{html}");
}

#[tokio::test]
async fn bad_explain_requests_get_clear_answers() {
    let cache = tempfile::tempdir().unwrap();
    let addr = start(H100, cache.path()).await;
    let base = format!("http://{addr}");

    let (status, headers, _) = get(&format!("{base}/explain/Torch/"), &[]).await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers[header::LOCATION], "/explain/torch/");
    let (status, headers, _) = get(&format!("{base}/b/cu128/explain/Torch/"), &[]).await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers[header::LOCATION], "/b/cu128/explain/torch/");

    let (status, _, body) = get(&format!("{base}/explain/torch!/"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body.contains("`torch!` is not a valid project name"),
        "{body}"
    );
    let (status, _, body) = get(&format!("{base}/m/not-a-token/explain/torch/"), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("invalid machine token"), "{body}");
    let (status, _, _) = get(&format!("{base}/b/cu/explain/torch/"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, body) = get(&format!("{base}/explain/torch/?format=xml"), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("`xml`"), "{body}");
    let (status, _, body) = get(&format!("{base}/explain/no-such-project/"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // A project of the general upstream: explained as passed through, nothing selected.
    let filelock = explain_json(&format!("{base}/explain/filelock/")).await;
    assert_eq!(filelock["selected"], false);
    assert_eq!(filelock["versions"], serde_json::json!([]));
}
