//! No client ever receives an upstream URL: every page the proxy serves, in HTML and in JSON,
//! on every route, links only to the proxy, and every link (file and `.metadata`) it serves
//! works and matches its advertised hash. Attributes survive the rewrite (PEP 700
//! `upload-time` from `data-upload-time`), and a per-machine page lists one backend per version.

use std::collections::BTreeSet;

use sha2::{Digest as _, Sha256};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

const JSON: &str = "application/vnd.pypi.simple.v1+json";
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
const HTML_ACCEPTS: [&str; 2] = ["text/html", "application/vnd.pypi.simple.v1+html"];
/// Host names of the real upstreams, which must not appear either.
const UPSTREAM_NAMES: [&str; 4] = [
    "download.pytorch.org",
    "download-r2",
    "pythonhosted",
    "pypi.org",
];

fn assert_no_upstream(body: &str, upstreams: &Upstreams, url: &str) {
    for host in upstreams
        .hosts()
        .iter()
        .map(String::as_str)
        .chain(UPSTREAM_NAMES)
    {
        assert!(
            !body.contains(host),
            "{url} leaks the upstream `{host}`:\n{body}"
        );
    }
}

/// Neither a header (`Location`, `Link`, ...) nor a redirect points a client upstream.
fn assert_headers_clean(response: &reqwest::Response, upstreams: &Upstreams, url: &str) {
    assert!(
        !response.status().is_redirection(),
        "{url} redirects: {:?}",
        response.headers()
    );
    for (name, value) in response.headers() {
        assert_no_upstream(
            &String::from_utf8_lossy(value.as_bytes()),
            upstreams,
            &format!("{url} header `{name}`"),
        );
    }
}

/// A client that shows redirects instead of following them.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Every `href="..."` of an HTML page.
fn hrefs(body: &str) -> Vec<String> {
    body.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|h| h.replace("&amp;", "&"))
        .collect()
}

/// A page as PEP 691 JSON; `None` when it is a 404.
async fn get_json(client: &reqwest::Client, url: &str) -> Option<serde_json::Value> {
    let response = client.get(url).header("accept", JSON).send().await.unwrap();
    if response.status() == 404 {
        return None;
    }
    let body = response.text().await.unwrap();
    Some(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}\n{body}")))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Every file of a project's JSON page downloads and matches its hashes and size; so does its
/// `.metadata` where advertised (PEP 658: pip treats a missing one as an error). Returns how
/// many files were checked.
async fn check_files(
    client: &reqwest::Client,
    upstreams: &Upstreams,
    url: &str,
    project: &str,
) -> usize {
    let Some(json) = get_json(client, url).await else {
        assert_eq!(project, "pytorch-triton/", "{url} is 404");
        return 0;
    };
    let files = json["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{url}: no files: {json}"));
    // (Whether a pinned backend lists the unlabelled pytorch-triton is `install`'s test.)
    assert!(
        !files.is_empty() || project == "pytorch-triton/",
        "{url} lists no files"
    );
    for file in files {
        let link = reqwest::Url::parse(url)
            .unwrap()
            .join(file["url"].as_str().unwrap())
            .unwrap();
        let bytes = client.get(link.clone()).send().await.unwrap();
        assert_headers_clean(&bytes, upstreams, link.as_str());
        assert_eq!(bytes.status(), 200, "{link}");
        let bytes = bytes.bytes().await.unwrap();
        match file["hashes"]["sha256"].as_str() {
            Some(sha256) => assert_eq!(sha256_hex(&bytes), sha256, "{link}"),
            // Only a derived wheel is listed without a hash, until a download here has
            // computed it: a build under the plain version (`server/plain_version.rs`).
            None => assert!(link.path().contains("/p/"), "{link} has no sha256"),
        }
        if let Some(size) = file.get("size").and_then(serde_json::Value::as_u64) {
            assert_eq!(size, bytes.len() as u64, "{link}");
        }
        if let Some(metadata) = file
            .get("core-metadata")
            .and_then(|m| m.get("sha256"))
            .and_then(|h| h.as_str())
        {
            let metadata_url = format!("{link}.metadata");
            let response = client.get(&metadata_url).send().await.unwrap();
            assert_headers_clean(&response, upstreams, &metadata_url);
            assert_eq!(response.status(), 200, "{metadata_url}");
            assert_eq!(
                sha256_hex(&response.bytes().await.unwrap()),
                metadata,
                "{metadata_url}"
            );
        }
        assert!(
            file.get("dist-info-metadata").is_none(),
            "{url}: the JSON key `dist-info-metadata` breaks old pips"
        );
    }
    files.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_ever_receives_an_upstream_url() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let client = client();
    let base = reqwest::Url::parse(&proxy.base()).unwrap();
    let prefixes = [
        proxy.simple_url(),
        proxy.backend_url("cu128"),
        proxy.backend_url("cpu"),
        proxy.machine_url(&machines::RTX_5090.machine()),
        proxy.machine_url(&machines::MI300X.machine()),
    ];
    let mut files_checked = 0;
    for prefix in &prefixes {
        for project in ["", "torch/", "torchvision/", "pytorch-triton/", "filelock/"] {
            let url = format!("{prefix}{project}");
            for accept in HTML_ACCEPTS.iter().chain([&JSON, &PIP_ACCEPT]) {
                let response = client
                    .get(&url)
                    .header("accept", *accept)
                    .send()
                    .await
                    .unwrap();
                assert_headers_clean(&response, &upstreams, &url);
                let status = response.status();
                let page_url = response.url().clone();
                let body = response.text().await.unwrap();
                assert_no_upstream(&body, &upstreams, &url);
                // pytorch-triton is published for CUDA only: its page for a CPU or ROCm
                // machine may be a 404; every other page exists.
                if status == 404 && project == "pytorch-triton/" {
                    continue;
                }
                assert_eq!(status, 200, "{url} ({accept})");
                let links: Vec<String> = if body.trim_start().starts_with('{') {
                    let json: serde_json::Value = serde_json::from_str(&body)
                        .unwrap_or_else(|e| panic!("{url}: {e}\n{body}"));
                    json["files"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| f["url"].as_str().unwrap().to_string())
                        .collect()
                } else {
                    hrefs(&body)
                };
                for link in links {
                    let resolved = page_url
                        .join(&link)
                        .unwrap_or_else(|e| panic!("{url}: bad link `{link}`: {e}"));
                    assert_eq!(
                        resolved.origin(),
                        base.origin(),
                        "{url} links outside the proxy: `{link}`"
                    );
                }
            }
            if !project.is_empty() {
                files_checked += check_files(&client, &upstreams, &url, project).await;
            }
        }
    }
    assert!(files_checked > 20, "only {files_checked} files checked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_machine_pages_list_one_backend_per_version_and_keep_attributes() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let client = client();
    let url = format!("{}torch/", proxy.simple_url());
    let json = get_json(&client, &url).await.expect("the torch page");
    let files = json["files"].as_array().unwrap();
    let labels = |prefix: &str| -> BTreeSet<String> {
        files
            .iter()
            .filter_map(|f| f["filename"].as_str())
            .filter_map(|name| name.strip_prefix(prefix))
            .map(|rest| rest.split('-').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        labels("torch-2.9.0+"),
        BTreeSet::from(["cu130".to_string()]),
        "{json:#}"
    );
    // 2.6.0 has no CUDA build for aarch64: the CPU build there, cu126 on the others.
    assert_eq!(
        labels("torch-2.6.0+"),
        BTreeSet::from(["cpu".to_string(), "cu126".to_string()]),
        "{json:#}"
    );
    assert!(
        files
            .iter()
            .filter_map(|f| f["filename"].as_str())
            .filter(|name| name.starts_with("torch-2.6.0+cpu-"))
            .all(|name| name.ends_with("_aarch64.whl")),
        "{json:#}"
    );
    let linux = files
        .iter()
        .find(|f| f["filename"] == "torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl")
        .unwrap_or_else(|| panic!("{json:#}"));
    let upstream = upstreams
        .catalog
        .torch_wheel("2.9.0", "cu130", wheelgate_e2e::catalog::LINUX_X86_64)
        .unwrap();
    assert_eq!(linux["hashes"]["sha256"], upstream.wheel.sha256);
    assert_eq!(
        linux["core-metadata"]["sha256"],
        upstream.wheel.metadata_sha256
    );
    // PEP 700: download.pytorch.org's `data-upload-time` becomes `upload-time`.
    assert_eq!(linux["upload-time"], "2026-04-05T10:11:12Z", "{linux:#}");

    // The same page as HTML keeps the hash fragment and the metadata attribute.
    let html = client
        .get(&url)
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(&format!("#sha256={}", upstream.wheel.sha256)),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "data-core-metadata=\"sha256={}\"",
            upstream.wheel.metadata_sha256
        )),
        "{html}"
    );
    assert!(
        !html.contains("+cu128-") && !html.contains("%2Bcu128-"),
        "{html}"
    );
}

/// The client's OS and CPU from its User-Agent refine the server's machine: a Mac client of an
/// H100 server gets the macOS build and no CUDA wheel; an aarch64 client gets a page with a torch
/// 2.9.0 wheel it can install.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_finds_its_platforms_build_on_one_page() {
    const MAC: &str = r#"pip/26.0 {"ci":null,"cpu":"arm64","implementation":{"name":"CPython","version":"3.12.4"},"installer":{"name":"pip","version":"26.0"},"python":"3.12.4","system":{"name":"Darwin","release":"24.5.0"}}"#;
    const AARCH64: &str = r#"uv/0.13.9 {"installer":{"name":"uv","version":"0.13.9","subcommand":["pip","install"]},"python":"3.11.7","implementation":{"name":"CPython","version":"3.11.7"},"distro":{"name":"Ubuntu","version":"24.04","id":"noble","libc":{"lib":"glibc","version":"2.39"}},"system":{"name":"Linux","release":"6.8.0"},"cpu":"aarch64","ci":null}"#;
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let client = client();
    let url = format!("{}torch/", proxy.simple_url());
    let torch_29 = |agent: &'static str| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let response = client
                .get(&url)
                .header("accept", JSON)
                .header("user-agent", agent)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{agent}");
            let json: serde_json::Value =
                serde_json::from_str(&response.text().await.unwrap()).unwrap();
            json["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["filename"].as_str())
                .filter(|n| n.starts_with("torch-2.9.0"))
                .map(str::to_string)
                .collect::<Vec<String>>()
        }
    };
    // The H100 server's page holds each platform's build, whoever asks: the Mac finds the
    // macOS wheel, the aarch64 client cu130's aarch64 wheel, and neither needs the User-Agent.
    let mac = torch_29(MAC).await;
    assert!(mac.iter().any(|n| n.contains("macosx")), "{mac:?}");
    let arm = torch_29(AARCH64).await;
    assert!(
        arm.contains(&"torch-2.9.0+cu130-py3-none-manylinux_2_28_aarch64.whl".to_string()),
        "no aarch64 wheel for an aarch64 client: {arm:?}"
    );
    assert_eq!(mac, arm);
}
