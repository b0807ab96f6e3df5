//! Explicit beats guessed (issue 42, item 2): a `/m/<token>/` machine, a `/b/<backend>/`
//! prefix's and a `[[networks]]` rule's are never moved by the client's User-Agent, whose
//! platform is its host's even when it resolves for another (`uv pip compile
//! --python-platform`). Only the server's own machine under `/simple/`, for a client no rule
//! holds, is still refined, and with every platform's build on every page (issue 42, item 1)
//! that moves only which platform is its own: what `/explain/` leads with, and on Linux the
//! glibc its wheels are judged against. Pages and explanations through the real accept loop, against a
//! fake PyTorch index whose builds differ by platform, as PyTorch's do.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use wheelgate_resolver::select::plain_aliases::labelled_upstream_name;

use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::Fake;

/// The server: an H100 under driver 580, on Linux x86_64.
const H100: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
/// A GH200 (Linux aarch64, compute capability 9.0) under driver 580: `cu130` would be its
/// build, but the fake page has none for aarch64, so `cu128`.
const GH200: &str = r#"{"platform":"linux-aarch64","glibc":"2.39","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
const GH200_RULE: &str = r#"machine = { platform = "linux-aarch64", glibc = "2.39", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }"#;

/// pip on an x86_64 Linux host, as it writes its User-Agent.
const X86_64_PIP: &str = r#"pip/25.0 {"ci":null,"cpu":"x86_64","distro":{"id":"bookworm","libc":{"lib":"glibc","version":"2.36"}},"implementation":{"name":"CPython","version":"3.12.1"},"installer":{"name":"pip","version":"25.0"},"python":"3.12.1","system":{"name":"Linux","release":"6.1.0"}}"#;
/// uv on an x86_64 Linux host (the one `uv pip compile --python-platform aarch64-...` sends).
const X86_64_UV: &str = r#"uv/0.13.9 {"installer":{"name":"uv","version":"0.13.9","subcommand":["pip","compile"]},"python":"3.12.1","implementation":{"name":"CPython","version":"3.12.1"},"distro":{"name":"Ubuntu","version":"24.04","id":"noble","libc":{"lib":"glibc","version":"2.39"}},"system":{"name":"Linux","release":"6.8.0"},"cpu":"x86_64","ci":null}"#;
/// uv on an aarch64 Linux host.
const AARCH64_UV: &str = r#"uv/0.13.9 {"installer":{"name":"uv","version":"0.13.9","subcommand":["pip","install"]},"python":"3.11.7","implementation":{"name":"CPython","version":"3.11.7"},"distro":{"name":"Ubuntu","version":"24.04","id":"noble","libc":{"lib":"glibc","version":"2.39"}},"system":{"name":"Linux","release":"6.8.0"},"cpu":"aarch64","ci":null}"#;
/// pip on a Mac.
const MAC_PIP: &str = r#"pip/25.0 {"cpu":"arm64","implementation":{"name":"CPython","version":"3.12.1"},"installer":{"name":"pip","version":"25.0"},"python":"3.12.1","system":{"name":"Darwin","release":"24.1.0"}}"#;

const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json";
const CU128_AARCH64: &str = "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_aarch64.whl";

/// A torch 2.9.0 page whose builds differ by platform: `cu130` for Linux x86_64 and Windows
/// only, `cu128` and `cpu` for Linux x86_64, Linux aarch64 and Windows, and PyPI's unlabelled
/// macOS wheel.
fn torch_page(backends: &[&str]) -> String {
    let mut html = String::from("<!DOCTYPE html>\n<html><body><h1>Links for torch</h1>\n");
    for backend in backends {
        let platforms: &[&str] = if *backend == "cu130" {
            &["manylinux_2_28_x86_64", "win_amd64"]
        } else {
            &[
                "manylinux_2_28_x86_64",
                "manylinux_2_28_aarch64",
                "win_amd64",
            ]
        };
        for platform in platforms {
            let name = format!("torch-2.9.0+{backend}-cp312-cp312-{platform}.whl");
            let _ = writeln!(
                html,
                "<a href=\"/whl/{backend}/{}#sha256={}\">{name}</a><br/>",
                name.replace('+', "%2B"),
                "0".repeat(64)
            );
        }
    }
    if backends.contains(&"cpu") {
        let _ = writeln!(
            html,
            "<a href=\"/whl/cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl#sha256={}\">torch-2.9.0-cp312-none-macosx_11_0_arm64.whl</a><br/>",
            "1".repeat(64)
        );
    }
    html.push_str("</body></html>\n");
    html
}

struct Proxy {
    addr: SocketAddr,
    _upstream: Fake,
    _cache: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Proxy {
    /// A proxy for the H100 server on the real accept loop (requests carry their peer), with
    /// `networks_toml` (`trusted_proxies`, `[[networks]]`) read as the configuration file is.
    async fn start(networks_toml: &str) -> Proxy {
        let upstream = Fake::start().await;
        upstream.add_page("/whl/torch/", torch_page(&["cpu", "cu128", "cu130"]));
        upstream.add_page("/whl/cu128/torch/", torch_page(&["cu128"]));
        upstream.add_page("/whl/cpu/torch/", torch_page(&["cpu"]));
        let cache = tempfile::tempdir().unwrap();
        let mut config: ServeConfig = toml::from_str(networks_toml).unwrap();
        config.pytorch_url = upstream.url("/whl");
        config.pypi_url = upstream.url("/simple");
        config.cache_dir = cache.path().to_path_buf();
        config.machine = Some(serde_json::from_str(H100).unwrap());
        let state = build_state(config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_until(listener, state, async move {
            let _ = stopped.await;
        }));
        Proxy {
            addr,
            _upstream: upstream,
            _cache: cache,
            stop: Some(stop),
        }
    }

    /// The builds `<prefix>/simple/torch/` lists with `headers`, by their upstream filenames (a
    /// build listed under the plain version too, `/p/<label>/`, is read with its label), and
    /// its `Vary`.
    async fn files(&self, prefix: &str, headers: &[(&str, &str)]) -> (BTreeSet<String>, String) {
        let mut all = vec![("accept", PIP_ACCEPT)];
        all.extend_from_slice(headers);
        let url = format!("http://{}{prefix}/simple/torch/", self.addr);
        let (status, response, body) = get(&url, &all).await;
        assert_eq!(status, StatusCode::OK, "{url} {headers:?}: {body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        let names = page["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let name = f["filename"].as_str().unwrap();
                match f["url"].as_str().unwrap().split_once("/p/") {
                    Some((_, rest)) => {
                        labelled_upstream_name(name, rest.split('/').next().unwrap())
                            .unwrap_or_else(|| panic!("{name} under {rest}"))
                    }
                    None => name.to_string(),
                }
            })
            .collect();
        (names, vary(&response))
    }

    /// `<prefix>/explain/torch/` (JSON) with `headers`, and its `Vary`.
    async fn explain(&self, prefix: &str, headers: &[(&str, &str)]) -> (Value, String) {
        let mut all = vec![("accept", "application/json")];
        all.extend_from_slice(headers);
        let url = format!("http://{}{prefix}/explain/torch/", self.addr);
        let (status, response, body) = get(&url, &all).await;
        assert_eq!(status, StatusCode::OK, "{url} {headers:?}: {body}");
        (serde_json::from_str(&body).unwrap(), vary(&response))
    }
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

fn vary(headers: &HeaderMap) -> String {
    headers[header::VARY].to_str().unwrap().to_string()
}

/// The platform an explanation was made for: its machine line up to the first `,` or `;`
/// (`linux-aarch64, glibc 2.39; NVIDIA driver ...`, `macos-arm64; NVIDIA driver ...`).
fn platform(explanation: &Value) -> &str {
    let machine = explanation["machine"].as_str().unwrap();
    machine.split([',', ';']).next().unwrap()
}

fn chosen(explanation: &Value) -> &str {
    explanation["versions"][0]["chosen"]
        .as_str()
        .unwrap_or("none")
}

/// The backends of `files` (`cpu` for the unlabelled macOS wheel).
fn backends(files: &BTreeSet<String>) -> BTreeSet<&str> {
    files.iter().map(|name| backend(name)).collect()
}

fn backend(name: &str) -> &str {
    name.split_once('+')
        .map_or("cpu", |(_, rest)| rest.split('-').next().unwrap())
}

/// Each platform tag of `files` with the backend its wheels are of: one build per platform.
fn by_platform(files: &BTreeSet<String>) -> BTreeSet<(&str, &str)> {
    files
        .iter()
        .map(|name| {
            let tag = name.trim_end_matches(".whl").rsplit('-').next().unwrap();
            (tag, backend(name))
        })
        .collect()
}

/// What the H100 server's own machine gets, on every platform, whatever platform is its own:
/// `cu130` where it is published, `cu128` on aarch64, macOS's only build.
const H100_EVERYWHERE: [(&str, &str); 4] = [
    ("macosx_11_0_arm64", "cpu"),
    ("manylinux_2_28_aarch64", "cu128"),
    ("manylinux_2_28_x86_64", "cu130"),
    ("win_amd64", "cu130"),
];

fn gh200_token() -> String {
    let machine: wheelgate_resolver::Machine = serde_json::from_str(GH200).unwrap();
    wheelgate_resolver::token::encode(&machine)
}

#[tokio::test]
async fn an_aarch64_token_keeps_its_platform_whatever_the_user_agent_says() {
    let proxy = Proxy::start("").await;
    let prefix = format!("/m/{}", gh200_token());
    for agent in [X86_64_PIP, X86_64_UV, MAC_PIP, AARCH64_UV] {
        let headers = [("user-agent", agent)];
        let (files, vary) = proxy.files(&prefix, &headers).await;
        assert!(files.contains(CU128_AARCH64), "{agent}: {files:?}");
        // Every platform's build for the GH200's GPU, the same as the H100's.
        assert_eq!(
            by_platform(&files),
            BTreeSet::from(H100_EVERYWHERE),
            "{agent}"
        );
        // The same page for every client: a shared cache keeps one copy.
        assert_eq!(vary, "Accept, Accept-Encoding", "{agent}");
        let (explanation, vary) = proxy.explain(&prefix, &headers).await;
        assert_eq!(platform(&explanation), "linux-aarch64", "{agent}");
        assert_eq!(chosen(&explanation), "cu128", "{agent}: {explanation}");
        assert_eq!(vary, "Accept", "{agent}");
    }
}

#[tokio::test]
async fn the_servers_own_machine_serves_every_platform_and_the_user_agent_moves_only_its_own() {
    let proxy = Proxy::start("").await;
    // Every platform's build on one page, whichever host the client runs on: an aarch64 or a
    // Mac client no longer needs the User-Agent to get its build.
    for agent in [X86_64_PIP, AARCH64_UV, MAC_PIP] {
        let (files, vary) = proxy.files("", &[("user-agent", agent)]).await;
        assert_eq!(
            by_platform(&files),
            BTreeSet::from(H100_EVERYWHERE),
            "{agent}: {files:?}"
        );
        assert_eq!(vary, "Accept, User-Agent, Accept-Encoding");
    }
    // What the User-Agent still moves: which platform the explanation leads with.
    let (explanation, vary) = proxy.explain("", &[("user-agent", AARCH64_UV)]).await;
    assert_eq!(platform(&explanation), "linux-aarch64");
    assert_eq!(chosen(&explanation), "cu128");
    assert_eq!(vary, "Accept, User-Agent");
    let (explanation, _) = proxy.explain("", &[("user-agent", MAC_PIP)]).await;
    assert_eq!(platform(&explanation), "macos-arm64");
    assert_eq!(chosen(&explanation), "cpu");
}

#[tokio::test]
async fn a_pinned_backend_resolves_for_the_servers_platform_whatever_the_user_agent_says() {
    let proxy = Proxy::start("").await;
    for agent in [MAC_PIP, AARCH64_UV, X86_64_PIP] {
        let headers = [("user-agent", agent)];
        let (files, vary) = proxy.files("/b/cu128", &headers).await;
        // The pinned build's wheels for every platform it has, the aarch64 one included.
        assert!(files.contains(CU128_AARCH64), "{agent}: {files:?}");
        assert_eq!(backends(&files), BTreeSet::from(["cu128"]), "{agent}");
        assert_eq!(vary, "Accept, Accept-Encoding", "{agent}");
        let (explanation, vary) = proxy.explain("/b/cu128", &headers).await;
        assert_eq!(platform(&explanation), "linux-x86_64", "{agent}");
        assert_eq!(chosen(&explanation), "cu128", "{agent}: {explanation}");
        assert_eq!(vary, "Accept", "{agent}");
    }
}

#[tokio::test]
async fn a_network_rules_machine_and_pin_are_not_moved_by_the_user_agent() {
    // 127.0.0.1 (the tests' client) is trusted as a proxy, so `X-Forwarded-For` picks the rule.
    let proxy = Proxy::start(&format!(
        "trusted_proxies = [\"127.0.0.1\"]\n\
         [[networks]]\nname = \"arm\"\ncidr = [\"10.1.0.0/16\"]\n{GH200_RULE}\n\
         [[networks]]\nname = \"pinned\"\ncidr = [\"10.3.0.0/16\"]\nbackend = \"cu128\"\n"
    ))
    .await;
    // The aarch64 network's clients, whatever host their installer runs on.
    for agent in [X86_64_PIP, X86_64_UV, MAC_PIP] {
        let headers = [("user-agent", agent), ("x-forwarded-for", "10.1.2.3")];
        let (files, _) = proxy.files("", &headers).await;
        assert!(files.contains(CU128_AARCH64), "{agent}: {files:?}");
        assert_eq!(
            by_platform(&files),
            BTreeSet::from(H100_EVERYWHERE),
            "{agent}"
        );
        let (explanation, _) = proxy.explain("", &headers).await;
        assert_eq!(platform(&explanation), "linux-aarch64", "{agent}");
        assert_eq!(chosen(&explanation), "cu128", "{agent}");
        assert_eq!(explanation["client"]["rule"], "arm");
    }
    // A rule naming only a backend: the server's machine with that pin, as `/b/cu128/`.
    let headers = [("user-agent", MAC_PIP), ("x-forwarded-for", "10.3.0.9")];
    let (explanation, _) = proxy.explain("", &headers).await;
    assert_eq!(platform(&explanation), "linux-x86_64");
    assert_eq!(chosen(&explanation), "cu128", "{explanation}");
    // A client no rule holds still gets the server's machine moved to its platform.
    let headers = [("user-agent", MAC_PIP), ("x-forwarded-for", "192.0.2.1")];
    let (explanation, _) = proxy.explain("", &headers).await;
    assert_eq!(platform(&explanation), "macos-arm64");
}
