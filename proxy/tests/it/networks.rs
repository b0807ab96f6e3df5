//! Client networks (`[[networks]]`, `trusted_proxies`) through the real accept loop, which
//! records each connection's peer: a loopback client and its rule, forwarded headers from a
//! trusted and from an untrusted peer, what `/explain/` and the status page say, rendered pages
//! never shared between networks, and the start refused on a bad rule.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::Command;

use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;
use wheelgate_config::ServeConfig;
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::Fake;

const CPU_ONLY: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;
/// H100 (compute capability 9.0), driver 580: `cu130` of the backends on the fake page.
const H100_RULE: &str = r#"machine = { platform = "linux-x86_64", glibc = "2.36", nvidia = { driver_version = "580.65.06", gpus = [{ name = "NVIDIA H100", compute_capability = "9.0" }] } }"#;
/// V100 (compute capability 7.0), driver 580: `cu130` has no code for it, so `cu128`.
const V100_TOKEN: &str = "1-lx-g2.36-n580.65.06-s7.0";
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json";

fn torch_page(backends: &[&str]) -> String {
    let mut html = String::from("<!DOCTYPE html>\n<html><body><h1>Links for torch</h1>\n");
    for backend in backends {
        let name = format!("torch-2.9.0+{backend}-cp312-cp312-manylinux_2_28_x86_64.whl");
        let _ = writeln!(
            html,
            "<a href=\"/whl/{backend}/{}#sha256={}\">{name}</a><br/>",
            name.replace('+', "%2B"),
            "0".repeat(64)
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

/// The configuration: a CPU-only server machine, the fake upstream, and `networks_toml`
/// (`trusted_proxies` and `[[networks]]`) read as the configuration file reads them.
async fn config(networks_toml: &str) -> (ServeConfig, Fake, tempfile::TempDir) {
    let upstream = Fake::start().await;
    upstream.add_page(
        "/whl/torch/",
        torch_page(&["cpu", "cu126", "cu128", "cu130"]),
    );
    upstream.add_page("/whl/cpu/torch/", torch_page(&["cpu"]));
    upstream.add_page("/whl/cu126/torch/", torch_page(&["cu126"]));
    let cache = tempfile::tempdir().unwrap();
    let mut config: ServeConfig = toml::from_str(networks_toml).unwrap();
    config.pytorch_url = upstream.url("/whl");
    config.pypi_url = upstream.url("/simple");
    config.cache_dir = cache.path().to_path_buf();
    config.machine = Some(serde_json::from_str(CPU_ONLY).unwrap());
    (config, upstream, cache)
}

/// A proxy on the real accept loop (`serve_until`), so requests carry their peer address.
async fn start(networks_toml: &str) -> Proxy {
    let (config, upstream, cache) = config(networks_toml).await;
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

/// The backends of the files `/simple/torch/` (under `prefix`) serves with `headers`.
async fn backends(proxy: &Proxy, prefix: &str, headers: &[(&str, &str)]) -> Vec<String> {
    let mut all = vec![("accept", PIP_ACCEPT)];
    all.extend_from_slice(headers);
    let url = format!("http://{}{prefix}/simple/torch/", proxy.addr);
    let (status, _, body) = get(&url, &all).await;
    assert_eq!(status, StatusCode::OK, "{url} {headers:?}: {body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["filename"].as_str().unwrap();
            name.split('+')
                .nth(1)
                .unwrap()
                .split('-')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

async fn explain_client(proxy: &Proxy, headers: &[(&str, &str)]) -> Value {
    let mut all = vec![("accept", "application/json")];
    all.extend_from_slice(headers);
    let url = format!("http://{}/explain/torch/", proxy.addr);
    let (status, _, body) = get(&url, &all).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let explanation: Value = serde_json::from_str(&body).unwrap();
    explanation["client"].clone()
}

#[tokio::test]
async fn a_loopback_client_gets_its_networks_machine_and_a_forged_header_changes_nothing() {
    let proxy = start(&format!(
        "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\n{H100_RULE}\n\
         [[networks]]\nname = \"local\"\ncidr = [\"127.0.0.0/8\"]\ntoken = \"{V100_TOKEN}\"\n"
    ))
    .await;
    assert_eq!(backends(&proxy, "", &[]).await, ["cu128"]);
    // No proxy is trusted: a client naming the GPU network gets nothing from it.
    for forged in [
        ("x-forwarded-for", "10.1.2.3"),
        ("forwarded", "for=10.1.2.3"),
    ] {
        assert_eq!(
            backends(&proxy, "", &[forged]).await,
            ["cu128"],
            "{forged:?}"
        );
        let client = explain_client(&proxy, &[forged]).await;
        assert_eq!(client["rule"], "local", "{client}");
        assert_eq!(client["address"], "127.0.0.1");
        assert!(
            client["refused"]
                .as_str()
                .unwrap()
                .contains("from `127.0.0.1`, which is not in `trusted_proxies`"),
            "{client}"
        );
    }
    let client = explain_client(&proxy, &[]).await;
    assert_eq!(client["network"], "127.0.0.0/8");
    assert_eq!(client["refused"], Value::Null);
    assert!(
        client["summary"]
            .as_str()
            .unwrap()
            .contains("is in `127.0.0.0/8` of the [[networks]] rule `local`"),
        "{client}"
    );
    // A page that depends on the client's network is not for shared caches.
    let (_, headers, _) = get(&format!("http://{}/simple/torch/", proxy.addr), &[]).await;
    assert_eq!(headers[header::CACHE_CONTROL], "max-age=10, private");
    // `/m/` and `/b/` still decide for themselves.
    let h100 = "1-lx-g2.36-n580.65.06-s9.0";
    assert_eq!(
        backends(&proxy, &format!("/m/{h100}"), &[]).await,
        ["cu130"]
    );
    assert_eq!(backends(&proxy, "/b/cpu", &[]).await, ["cpu"]);
    let url = format!("http://{}/m/{h100}/explain/torch/?format=json", proxy.addr);
    let (_, _, body) = get(&url, &[]).await;
    let explanation: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        explanation["client"],
        Value::Null,
        "the URL decides: {body}"
    );
}

/// 127.0.0.1 (the tests' client) trusted as a proxy; a GPU network, a V100 network, and one
/// that pins `cu126` on the server's (CPU-only) machine.
fn three_networks() -> String {
    format!(
        "trusted_proxies = [\"127.0.0.1\"]\n\
         [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\", \"fd00:1::/64\"]\n{H100_RULE}\n\
         [[networks]]\nname = \"v100\"\ncidr = [\"10.2.0.0/16\"]\ntoken = \"{V100_TOKEN}\"\n\
         [[networks]]\nname = \"pinned\"\ncidr = [\"10.3.0.0/16\"]\nbackend = \"cu126\"\n"
    )
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_forwarded_client_picks_the_rule() {
    let proxy = start(&three_networks()).await;
    for (headers, expected) in [
        (vec![("x-forwarded-for", "10.1.2.3")], "cu130"),
        (vec![("x-forwarded-for", "10.2.0.9")], "cu128"),
        (vec![("x-forwarded-for", "192.0.2.1")], "cpu"),
        // The rule's pin, as `/b/cu126/` pins it: the page of that backend's directory.
        (vec![("x-forwarded-for", "10.3.4.5")], "cu126"),
        (vec![], "cpu"),
        // A client writing its own header: the proxy appends the real address on the right.
        (vec![("x-forwarded-for", "10.1.2.3, 10.2.0.9")], "cu128"),
        (
            vec![("forwarded", "for=\"[fd00:1::5]:443\";proto=http")],
            "cu130",
        ),
        (
            vec![
                ("x-forwarded-for", "10.1.2.3"),
                ("forwarded", "for=10.1.2.3"),
            ],
            "cu130",
        ),
    ] {
        assert_eq!(
            backends(&proxy, "", &headers).await,
            [expected],
            "{headers:?}"
        );
    }
    // Headers of the trusted proxy that cannot be read fail closed: a 400 naming the refusal,
    // never the proxy's own rule or the server's machine (a laptop behind the balancer adding
    // `Forwarded: for=_hidden` once got the balancer's rule).
    for headers in [
        vec![("x-forwarded-for", "10.1.2.3, unknown")],
        vec![("x-forwarded-for", "not an address")],
        vec![
            ("x-forwarded-for", "10.1.2.3"),
            ("forwarded", "for=_hidden"),
        ],
        vec![
            ("x-forwarded-for", "10.1.2.3"),
            ("forwarded", "for=10.2.0.9"),
        ],
    ] {
        let url = format!("http://{}/simple/torch/", proxy.addr);
        let (status, _, body) = get(&url, &headers).await;
        assert_eq!(status, 400, "{headers:?}: {body}");
        assert!(body.contains("trusted proxy `127.0.0.1`"), "{body}");
    }
    let client = explain_client(&proxy, &[("x-forwarded-for", "10.2.0.9")]).await;
    assert_eq!(client["rule"], "v100");
    assert_eq!(client["address"], "10.2.0.9");
    assert!(
        client["summary"]
            .as_str()
            .unwrap()
            .contains("(from `X-Forwarded-For` of the trusted proxy `127.0.0.1`)"),
        "{client}"
    );
    let url = format!("http://{}/explain/torch/?format=json", proxy.addr);
    let (status, _, body) = get(&url, &[("x-forwarded-for", "10.1.2.3, unknown")]).await;
    assert_eq!(status, 400);
    assert!(
        body.contains(
            "refused `X-Forwarded-For` from the trusted proxy `127.0.0.1`: a hop is `unknown`"
        ),
        "{body}"
    );
    let url = format!("http://{}/explain/torch/", proxy.addr);
    let (_, _, html) = get(&url, &[("x-forwarded-for", "10.1.2.3")]).await;
    assert!(
        html.contains("of the [[networks]] rule <code>gpu</code>"),
        "{html}"
    );
    assert!(
        html.contains("NVIDIA H100"),
        "rewritten for the rule's machine: {html}"
    );
}

#[tokio::test]
async fn the_status_page_lists_the_rules_and_marks_the_askers() {
    let proxy = start(&three_networks()).await;
    let status = format!("http://{}/", proxy.addr);
    let (code, _, html) = get(&status, &[("x-forwarded-for", "10.1.2.3")]).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        html.contains("<h2 id=\"networks\">Client networks</h2>"),
        "{html}"
    );
    assert!(
        html.contains("<td>gpu <span class=\"chosen\">this client</span></td>"),
        "{html}"
    );
    assert!(
        html.contains("<code>10.1.0.0/16, fd00:1::/64</code>"),
        "{html}"
    );
    assert!(
        html.contains("resolves for this client (rule <code>gpu</code>)"),
        "{html}"
    );
    // Without `[auth]` anyone may read the page: other rules and the trusted proxies would map
    // the company's networks and hardware, so a client sees its own rule only.
    assert!(!html.contains("<td>v100</td>"), "{html}");
    assert!(!html.contains("10.2.0.0/16"), "{html}");
    assert!(!html.contains("backend pinned to cu126"), "{html}");
    assert!(!html.contains("<code>127.0.0.1/32</code>"), "{html}");
    assert!(html.contains("shown only when this server asks for credentials"));
    let (_, _, html) = get(&status, &[]).await;
    assert!(!html.contains("this client</span>"), "{html}");
    assert!(!html.contains("<td>gpu"), "{html}");
    assert!(html.contains("is in no [[networks]] rule"), "{html}");
}

#[tokio::test]
async fn with_auth_the_status_page_lists_every_rule() {
    let config = format!("{}\n[auth]\nbearer = [\"t0ken\"]\n", three_networks());
    let proxy = start(&config).await;
    let status = format!("http://{}/", proxy.addr);
    let (code, _, html) = get(
        &status,
        &[
            ("x-forwarded-for", "10.1.2.3"),
            ("authorization", "Bearer t0ken"),
        ],
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{html}");
    assert!(html.contains("<td>v100</td>"), "{html}");
    assert!(
        html.contains("<td>the server&#39;s; backend pinned to cu126</td>"),
        "{html}"
    );
    assert!(
        html.contains("<code>127.0.0.1/32</code>"),
        "trusted proxies shown: {html}"
    );
}

#[tokio::test]
async fn two_networks_never_share_a_rendered_page() {
    let proxy = start(&three_networks()).await;
    let url = format!("http://{}/simple/torch/", proxy.addr);
    let mut seen = Vec::new();
    // Alternating, so each network's request comes right after the other's rendering is cached.
    for round in 0..3 {
        for (client, expected, gpu) in [
            ("10.1.2.3", "cu130", "compute capability 9.0"),
            ("10.2.0.9", "cu128", "compute capability 7.0"),
            ("192.0.2.1", "cpu", "no GPU"),
        ] {
            // The plain form only: its tag is the rendering's (the gzip form has its own).
            let (status, headers, html) = get(
                &url,
                &[("x-forwarded-for", client), ("accept-encoding", "identity")],
            )
            .await;
            assert_eq!(status, StatusCode::OK);
            assert!(
                html.contains(&format!("torch-2.9.0%2B{expected}-")),
                "round {round}, {client}: {html}"
            );
            let comment = html.lines().nth(1).unwrap_or_default();
            assert!(comment.contains(gpu), "round {round}, {client}: {comment}");
            for other in ["cu130", "cu128", "cpu"].iter().filter(|b| **b != expected) {
                assert!(
                    !html.contains(&format!("torch-2.9.0%2B{other}-")),
                    "round {round}, {client} got {other}: {html}"
                );
            }
            seen.push((client, headers[header::ETAG].clone()));
        }
    }
    // One ETag per network, stable across rounds: a 304 for one never validates another's copy.
    for (client, etag) in &seen {
        for (other, other_etag) in &seen {
            assert_eq!(client == other, etag == other_etag, "{client} {other}");
        }
    }
    let gpu_etag = seen[0].1.to_str().unwrap();
    let (status, _, _) = get(
        &url,
        &[("x-forwarded-for", "10.2.0.9"), ("if-none-match", gpu_etag)],
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the GPU network's ETag is not the V100 network's"
    );
}

#[tokio::test]
async fn a_bad_rule_stops_the_start_with_the_rule_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gpu.token");
    for (rules, message) in [
        (
            format!(
                "[[networks]]\nname = \"all\"\ncidr = [\"10.0.0.0/8\"]\ntoken = \"{V100_TOKEN}\"\n\
                 [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\n{H100_RULE}\n"
            ),
            "`10.1.0.0/16` of the [[networks]] rule `gpu` lies inside `10.0.0.0/8` of the rule `all`"
                .to_string(),
        ),
        (
            format!(
                "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\ntoken_file = {:?}\n",
                missing.display().to_string()
            ),
            format!(
                "cannot read the `token_file` `{}` of the [[networks]] rule `gpu`",
                missing.display()
            ),
        ),
        (
            "trusted_proxies = [\"10.0.0.0/8\", \"lb\"]\n".to_string(),
            "`trusted_proxies` has `lb`".to_string(),
        ),
    ] {
        let (config, _upstream, _cache) = config(&rules).await;
        let Err(err) = build_state(config).await else {
            panic!("started with {rules}")
        };
        assert!(err.to_string().contains(&message), "{err}");
    }
}

/// A `wheelgate serve` child process, killed on drop.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_names_the_rules_after_the_servers_machine() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wheelgate.toml");
    std::fs::write(
        &path,
        format!(
            "trusted_proxies = [\"10.0.0.5\"]\noffline = true\n\
             machine = {{ platform = \"linux-x86_64\" }}\n\
             [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\", \"fd00:1::/64\"]\n{H100_RULE}\n\
             [[networks]]\ncidr = [\"10.2.0.0/16\"]\ntoken = \"1-lx-g2.39\"\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wheelgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(3)
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        lines[1],
        "machine for /simple/ (from the configuration): linux-x86_64; no GPU"
    );
    assert_eq!(
        lines[2],
        "but for clients in a [[networks]] rule, first match wins: gpu 10.1.0.0/16 fd00:1::/64, #2 10.2.0.0/16 (their machines on the status page); trusted proxies: 10.0.0.5/32"
    );
}

#[test]
fn config_show_prints_the_rules_and_serve_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wheelgate.toml");
    std::fs::write(
        &path,
        format!(
            "trusted_proxies = [\"10.0.0.5\"]\n\
             [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\n{H100_RULE}\n\
             [[networks]]\nname = \"laptops\"\ncidr = [\"10.2.0.0/16\"]\ntoken = \"1-lx-g2.39\"\nbackend = \"cpu\"\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wheelgate"))
            .args(args)
            .args(["--config", path.to_str().unwrap(), "--cache-dir"])
            .arg(dir.path())
            .env("WHEELGATE_PROBE_LIBRARIES", "0")
            .env("WHEELGATE_PROBE_COMMANDS", "0")
            .output()
            .unwrap()
    };
    let output = run(&["config", "show"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for line in [
        "#   gpu: 10.1.0.0/16 -> linux-x86_64, glibc 2.36; NVIDIA driver 580.65.06: GPU 0 NVIDIA H100 (compute capability 9.0)",
        "#   laptops: 10.2.0.0/16 -> linux-x86_64, glibc 2.39; no GPU (from its token); backend pinned to cpu",
        "# trusted_proxies: 10.0.0.5/32",
        "token = \"1-lx-g2.39\"  # file",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in\n{stdout}");
    }

    std::fs::write(
        &path,
        "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\nbackend = \"cu1280\"\n",
    )
    .unwrap();
    let output = run(&["serve", "--listen", "127.0.0.1:0"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "the [[networks]] rule `gpu` pins `cu1280`, which no torch release in the catalog has"
        ),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "nothing served: {}",
        String::from_utf8_lossy(&output.stdout)
    );
}
