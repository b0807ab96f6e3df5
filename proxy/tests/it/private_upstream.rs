//! A private general upstream as companies run one (Artifactory, Nexus): HTTPS with a company
//! CA, a bearer token and an `X-JFrog-Art-Api` header required on every request, PEP 691 JSON
//! pages (and an older PEP 503 HTML one) whose files are partly on the same host (relative
//! links), partly on a CDN (absolute links to another origin), and a download redirected to
//! that CDN. The proxy must trust the CA
//! for that upstream, send the credentials there and nowhere else, stop at start when a secret
//! or the CA bundle cannot be read, and honour `HTTP_PROXY` and `HTTPS_PROXY` (a `CONNECT`
//! tunnel to the private upstream, its certificate checked against the CA bundle).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use wheelgate_config::{SecretSource, ServeConfig};
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::sha256;
use super::tls_upstream::{TestCa, TlsServer};

const TOKEN: &str = "tok-7f3a9c-private";
const API_KEY: &str = "AKCp8k-api-key";
const PAGE: &str = "/artifactory/api/pypi/pypi-remote/simple/demo/";
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
/// The private upstream's name when reached through an `HTTPS_PROXY` (`.invalid` never
/// resolves, RFC 2606: only the proxy can connect to it).
const ARTIFACTORY_HOST: &str = "artifactory.wheelgate-test.invalid";
const CPU_MACHINE: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;

/// One request as a server saw it: path, and the credentials it carried.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    api_key: Option<String>,
}

#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The private upstream's page (it names the CDN's port).
    page: Arc<Mutex<String>>,
    /// Where the private upstream redirects `demo-1.2`.
    redirect_to: Arc<Mutex<String>>,
    /// An older Artifactory's PEP 503 HTML page, its file on the CDN.
    html_page: Arc<Mutex<String>>,
    /// The `Authorization` the private upstream requires (none set: `Bearer TOKEN`).
    authorization: Arc<Mutex<Option<String>>>,
}

impl Recorder {
    fn record(&self, uri: &Uri, headers: &HeaderMap) {
        let value = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        self.seen.lock().unwrap().push(Seen {
            path: uri.to_string(),
            authorization: value("authorization"),
            api_key: value("x-jfrog-art-api"),
        });
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn wheel(version: &str) -> Vec<u8> {
    format!("the bytes of demo {version}").into_bytes()
}

/// The private upstream: every request must carry the expected `Authorization` and the API key,
/// else 401.
async fn private(State(recorder): State<Recorder>, uri: Uri, headers: HeaderMap) -> Response {
    recorder.record(&uri, &headers);
    let expected = recorder
        .authorization
        .lock()
        .unwrap()
        .clone()
        .unwrap_or_else(|| format!("Bearer {TOKEN}"));
    let authorized = headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v == expected.as_str())
        && headers.get("x-jfrog-art-api").is_some_and(|v| v == API_KEY);
    if !authorized {
        return (StatusCode::UNAUTHORIZED, "credentials required").into_response();
    }
    match uri.path() {
        PAGE => (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            recorder.page.lock().unwrap().clone(),
        )
            .into_response(),
        "/artifactory/api/pypi/pypi-remote/simple/legacy/" => (
            [(header::CONTENT_TYPE, "text/html")],
            recorder.html_page.lock().unwrap().clone(),
        )
            .into_response(),
        "/artifactory/api/pypi/pypi-remote/packages/demo-1.0-py3-none-any.whl" => {
            wheel("1.0").into_response()
        }
        "/artifactory/api/pypi/pypi-remote/packages/demo-1.2-py3-none-any.whl" => (
            StatusCode::FOUND,
            [(
                header::LOCATION,
                recorder.redirect_to.lock().unwrap().clone(),
            )],
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The CDN: plain files, no credentials needed (and none should arrive).
async fn cdn(State(recorder): State<Recorder>, uri: Uri, headers: HeaderMap) -> Response {
    recorder.record(&uri, &headers);
    match uri.path() {
        "/cdn/demo-1.1-py3-none-any.whl" => wheel("1.1").into_response(),
        "/cdn/presigned/demo-1.2-py3-none-any.whl" => wheel("1.2").into_response(),
        "/cdn/legacy-2.0-py3-none-any.whl" => wheel("legacy 2.0").into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A PEP 691 page: 1.0 relative (same host), 1.1 absolute on the CDN, 1.2 relative but
/// redirected to the CDN.
fn page(cdn: SocketAddr) -> String {
    let file = |name: &str, url: &str, version: &str| {
        format!(
            r#"{{"filename":"{name}","url":"{url}","hashes":{{"sha256":"{}"}},"requires-python":">=3.9"}}"#,
            sha256(&wheel(version))
        )
    };
    format!(
        r#"{{"meta":{{"api-version":"1.1"}},"name":"demo","files":[{},{},{}]}}"#,
        file(
            "demo-1.0-py3-none-any.whl",
            "../../packages/demo-1.0-py3-none-any.whl",
            "1.0"
        ),
        file(
            "demo-1.1-py3-none-any.whl",
            &format!("http://{cdn}/cdn/demo-1.1-py3-none-any.whl"),
            "1.1"
        ),
        file(
            "demo-1.2-py3-none-any.whl",
            "../../packages/demo-1.2-py3-none-any.whl",
            "1.2"
        ),
    )
}

/// The private upstream over TLS and the CDN over plain HTTP, each recording what it saw.
struct Upstreams {
    private: TlsServer,
    private_seen: Recorder,
    cdn_addr: SocketAddr,
    cdn_seen: Recorder,
    _cdn: tokio::task::JoinHandle<()>,
    dir: tempfile::TempDir,
}

impl Upstreams {
    async fn start() -> Upstreams {
        let cdn_seen = Recorder::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cdn_addr = listener.local_addr().unwrap();
        let router = Router::new().fallback(cdn).with_state(cdn_seen.clone());
        let cdn_task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let ca = TestCa::new();
        let private_seen = Recorder::default();
        *private_seen.page.lock().unwrap() = page(cdn_addr);
        *private_seen.redirect_to.lock().unwrap() =
            format!("http://{cdn_addr}/cdn/presigned/demo-1.2-py3-none-any.whl");
        *private_seen.html_page.lock().unwrap() = format!(
            "<!DOCTYPE html>\n<html><body><h1>Links for legacy</h1>\n<a href=\"http://{cdn_addr}/cdn/legacy-2.0-py3-none-any.whl#sha256={}\" data-requires-python=\"&gt;=3.9\">legacy-2.0-py3-none-any.whl</a><br/>\n</body></html>\n",
            sha256(&wheel("legacy 2.0"))
        );
        let router = Router::new()
            .fallback(private)
            .with_state(private_seen.clone());
        let private = TlsServer::start(&ca, &[ARTIFACTORY_HOST], router).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), &ca.pem).unwrap();
        std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
        std::fs::write(dir.path().join("api-key"), format!("{API_KEY}\n")).unwrap();
        Upstreams {
            private,
            private_seen,
            cdn_addr,
            cdn_seen,
            _cdn: cdn_task,
            dir,
        }
    }

    fn file(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// A configuration with the private upstream as the general upstream, its CA bundle, token
    /// and API key (each from a file), and a CPU machine.
    fn config(&self, cache: &std::path::Path) -> ServeConfig {
        let mut config = ServeConfig {
            pypi_url: self.private.url("/artifactory/api/pypi/pypi-remote/simple"),
            pytorch_url: "http://127.0.0.1:9/whl".to_string(),
            cache_dir: cache.to_path_buf(),
            machine: Some(serde_json::from_str(CPU_MACHINE).unwrap()),
            shutdown_grace_secs: 1,
            ..ServeConfig::default()
        };
        config.limits.upstream_attempt_secs = 5;
        config.limits.upstream_deadline_secs = 8;
        let access = &mut config.upstreams.pypi;
        access.ca_bundle = Some(self.file("ca.pem"));
        access.token = Some(SecretSource::File(self.file("token")));
        access.headers.insert(
            "X-JFrog-Art-Api".into(),
            SecretSource::File(self.file("api-key")),
        );
        config
    }
}

/// The proxy in this process, serving until dropped.
struct Proxy {
    addr: SocketAddr,
    _cache: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start_proxy(config: ServeConfig, cache: tempfile::TempDir) -> Proxy {
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_until(listener, state, async move {
        let _ = stopped.await;
    }));
    Proxy {
        addr,
        _cache: cache,
        _stop: stop,
    }
}

async fn get(url: &str) -> (StatusCode, Vec<u8>) {
    let response = reqwest::Client::new()
        .get(url)
        .header(header::ACCEPT, PIP_ACCEPT)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.bytes().await.unwrap().to_vec())
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

#[tokio::test]
async fn installs_from_a_private_upstream_over_tls_sending_credentials_only_to_it() {
    let upstreams = Upstreams::start().await;
    let cache = tempfile::tempdir().unwrap();
    let proxy = start_proxy(upstreams.config(cache.path()), cache).await;
    let (status, body) = get(&format!("http://{}/simple/demo/", proxy.addr)).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let urls: Vec<&str> = page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "/files/demo/demo-1.0-py3-none-any.whl",
            "/files/demo/demo-1.1-py3-none-any.whl",
            "/files/demo/demo-1.2-py3-none-any.whl"
        ]
    );
    for version in ["1.0", "1.1", "1.2"] {
        let (status, body) = get(&format!(
            "http://{}/files/demo/demo-{version}-py3-none-any.whl",
            proxy.addr
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{version}: {}", text(&body));
        assert_eq!(body, wheel(version), "{version}");
    }
    // An HTML page (an older Artifactory) with an absolute link to the CDN.
    let (status, body) = get(&format!("http://{}/simple/legacy/", proxy.addr)).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert!(
        text(&body).contains("\"url\":\"/files/legacy/legacy-2.0-py3-none-any.whl\""),
        "{}",
        text(&body)
    );
    let (status, body) = get(&format!(
        "http://{}/files/legacy/legacy-2.0-py3-none-any.whl",
        proxy.addr
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(body, wheel("legacy 2.0"));
    // A file the page does not list is never fetched from anywhere.
    let (status, _) = get(&format!(
        "http://{}/files/demo/demo-9.9-py3-none-any.whl",
        proxy.addr
    ))
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let private = upstreams.private_seen.seen();
    let paths: Vec<&str> = private.iter().map(|s| s.path.as_str()).collect();
    assert!(paths.contains(&PAGE), "{private:?}");
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/packages/demo-1.0-py3-none-any.whl"))
            && paths
                .iter()
                .any(|p| p.ends_with("/packages/demo-1.2-py3-none-any.whl")),
        "{private:?}"
    );
    assert!(!paths.iter().any(|p| p.contains("9.9")), "{private:?}");
    for seen in &private {
        assert_eq!(
            seen.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str()),
            "{seen:?}"
        );
        assert_eq!(seen.api_key.as_deref(), Some(API_KEY), "{seen:?}");
    }
    // The CDN served the absolute link and the redirected download, and saw no credential.
    let cdn = upstreams.cdn_seen.seen();
    let cdn_paths: Vec<&str> = cdn.iter().map(|s| s.path.as_str()).collect();
    assert!(
        cdn_paths.contains(&"/cdn/demo-1.1-py3-none-any.whl")
            && cdn_paths.contains(&"/cdn/presigned/demo-1.2-py3-none-any.whl")
            && cdn_paths.contains(&"/cdn/legacy-2.0-py3-none-any.whl"),
        "{cdn:?}"
    );
    for seen in &cdn {
        assert_eq!(seen.authorization, None, "{seen:?}");
        assert_eq!(seen.api_key, None, "{seen:?}");
    }
    assert_eq!(upstreams.private.failed_handshakes(), 0);
}

#[tokio::test]
async fn without_the_ca_bundle_the_private_upstream_is_not_trusted() {
    let upstreams = Upstreams::start().await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = upstreams.config(cache.path());
    config.upstreams.pypi.ca_bundle = None;
    let proxy = start_proxy(config, cache).await;
    let (status, body) = get(&format!("http://{}/simple/demo/", proxy.addr)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{}", text(&body));
    assert!(
        text(&body).contains("could not be reached"),
        "{}",
        text(&body)
    );
    // The handshake failed, so not one HTTP request (and no credential) reached it. (The server
    // counts the failure when the client's alert arrives: allowed a moment.)
    for _ in 0..40 {
        if upstreams.private.failed_handshakes() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(upstreams.private.failed_handshakes() >= 1);
    assert!(upstreams.private_seen.seen().is_empty());
}

#[tokio::test]
async fn without_the_token_the_private_upstream_refuses_and_the_client_is_told() {
    let upstreams = Upstreams::start().await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = upstreams.config(cache.path());
    config.upstreams.pypi.token = None;
    let proxy = start_proxy(config, cache).await;
    let (status, body) = get(&format!("http://{}/simple/demo/", proxy.addr)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{}", text(&body));
    assert!(text(&body).contains("answered 401"), "{}", text(&body));
    let seen = upstreams.private_seen.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].authorization, None);
    assert_eq!(seen[0].api_key.as_deref(), Some(API_KEY));
}

#[tokio::test]
async fn extra_origins_get_the_credentials_too() {
    let upstreams = Upstreams::start().await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = upstreams.config(cache.path());
    config.upstreams.pypi.extra_origins = vec![format!("http://{}", upstreams.cdn_addr)];
    let proxy = start_proxy(config, cache).await;
    let (status, body) = get(&format!(
        "http://{}/files/demo/demo-1.1-py3-none-any.whl",
        proxy.addr
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let cdn = upstreams.cdn_seen.seen();
    assert_eq!(cdn.len(), 1, "{cdn:?}");
    assert_eq!(cdn[0].api_key.as_deref(), Some(API_KEY));
}

#[tokio::test]
async fn basic_credentials_from_a_file_reach_a_nexus_style_upstream() {
    let upstreams = Upstreams::start().await;
    // `ci:pa55 word` (RFC 7617: user, colon, password, base64).
    *upstreams.private_seen.authorization.lock().unwrap() =
        Some("Basic Y2k6cGE1NSB3b3Jk".to_string());
    std::fs::write(upstreams.file("password"), "pa55 word\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut config = upstreams.config(cache.path());
    config.upstreams.pypi.token = None;
    config.upstreams.pypi.basic = Some(wheelgate_config::upstreams::BasicCredentials {
        user: "ci".into(),
        password: SecretSource::File(upstreams.file("password")),
    });
    let proxy = start_proxy(config, cache).await;
    let (status, body) = get(&format!(
        "http://{}/files/demo/demo-1.0-py3-none-any.whl",
        proxy.addr
    ))
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}: {:?}",
        text(&body),
        upstreams.private_seen.seen()
    );
    assert_eq!(body, wheel("1.0"));
}

/// Kills a server the test started when the test ends, passed or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wheelgate(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
    command
        .args(args)
        .env("WHEELGATE_PLATFORM", "linux-x86_64")
        .env("WHEELGATE_PROBE_LIBRARIES", "0")
        .env("WHEELGATE_PROBE_COMMANDS", "0")
        .env_remove("RUST_LOG");
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        command.env_remove(var);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn write_config(dir: &std::path::Path, body: &str) -> String {
    let path = dir.join("wheelgate.toml");
    std::fs::write(
        &path,
        format!(
            "cache_dir = {}\n{body}\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n",
            toml::Value::String(dir.join("cache").display().to_string())
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_missing_ca_bundle_or_token_stops_the_start_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[upstreams.pypi]\nca_bundle = \"/run/secrets/absent-company-ca.pem\"",
            "cannot read the CA bundle `/run/secrets/absent-company-ca.pem`",
        ),
        (
            "[upstreams.pypi]\ntoken = { file = \"/run/secrets/absent-token\" }",
            "cannot read the file `/run/secrets/absent-token` ([upstreams.pypi] token)",
        ),
        (
            "[upstreams.pytorch]\nheaders = { \"X-JFrog-Art-Api\" = { env = \"WHEELGATE_TEST_UNSET_API_KEY\" } }",
            "the environment variable `WHEELGATE_TEST_UNSET_API_KEY` ([upstreams.pytorch] headers.X-JFrog-Art-Api) is not set",
        ),
        (
            "[upstreams.pypi]\ntoken = \"tok-in-plain-text\"",
            "a secret written in the configuration file is refused",
        ),
    ];
    for (section, expected) in cases {
        let config = write_config(dir.path(), section);
        let output = wheelgate(
            &["serve", "--config", &config, "--listen", "127.0.0.1:0"],
            &[],
        )
        .stdout(Stdio::null())
        .output()
        .unwrap();
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{section}: started");
        assert!(stderr.contains(expected), "{section}: {stderr}");
        assert!(!stderr.contains("tok-in-plain-text"), "{stderr}");
    }
}

#[test]
fn config_show_names_where_the_secret_comes_from_never_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "pypi_url = \"https://artifactory.example/api/pypi/remote/simple\"\n[upstreams.pypi]\ntoken = { env = \"ARTIFACTORY_TOKEN\" }",
    );
    let output = wheelgate(
        &["config", "show", "--config", &config],
        &[
            ("ARTIFACTORY_TOKEN", TOKEN),
            (
                "HTTPS_PROXY",
                "http://proxyuser:proxypass@proxy.example:3128",
            ),
            ("NO_PROXY", "localhost,.internal"),
        ],
    )
    .output()
    .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for line in [
        "Authorization: Bearer <from env ARTIFACTORY_TOKEN, set>",
        "#   HTTPS_PROXY = http://proxyuser:***@proxy.example:3128",
        "#   NO_PROXY = localhost,.internal",
        "#   HTTP_PROXY <unset>",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in\n{stdout}");
    }
    assert!(
        !stdout.contains(TOKEN) && !stdout.contains("proxypass"),
        "{stdout}"
    );
}

/// The address `wheelgate serve` says it listens on, from its first line of output.
async fn listening_address(stdout: std::process::ChildStdout) -> String {
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    first
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string()
}

/// A forward proxy: answers what `HTTP_PROXY` clients send it (absolute-form requests for hosts
/// that do not exist), recording each request's target.
async fn forward_proxy(State(recorder): State<Recorder>, uri: Uri, headers: HeaderMap) -> Response {
    recorder.record(&uri, &headers);
    match uri.path() {
        "/simple/demo/" => (
            [(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")],
            format!(
                r#"{{"meta":{{"api-version":"1.1"}},"name":"demo","files":[{{"filename":"demo-1.1-py3-none-any.whl","url":"http://files.wheelgate-test.invalid/demo-1.1-py3-none-any.whl","hashes":{{"sha256":"{}"}}}}]}}"#,
                sha256(&wheel("1.1"))
            ),
        )
            .into_response(),
        "/demo-1.1-py3-none-any.whl" => wheel("1.1").into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

#[tokio::test]
async fn http_proxy_from_the_environment_carries_every_upstream_request() {
    let recorder = Recorder::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    let router = Router::new()
        .fallback(forward_proxy)
        .with_state(recorder.clone());
    let _task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    // `.invalid` never resolves (RFC 2606): only the proxy can answer for these hosts.
    let config = write_config(
        dir.path(),
        // No read of the sources at start: the PyTorch index's default URL is https, which
        // `HTTP_PROXY` does not carry, and no test reaches the internet.
        "pypi_url = \"http://pypi.wheelgate-test.invalid/simple\"\nread_sources_at_start = false",
    );
    let mut child = wheelgate(
        &["serve", "--config", &config, "--listen", "127.0.0.1:0"],
        &[("HTTP_PROXY", &format!("http://{proxy_addr}"))],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let address = listening_address(stdout).await;
    let (status, body) = get(&format!("http://{address}/simple/demo/")).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let (status, body) = get(&format!(
        "http://{address}/files/demo/demo-1.1-py3-none-any.whl"
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(body, wheel("1.1"));
    let targets: Vec<String> = recorder.seen().into_iter().map(|s| s.path).collect();
    assert!(
        targets.contains(&"http://pypi.wheelgate-test.invalid/simple/demo/".to_string())
            && targets.contains(
                &"http://files.wheelgate-test.invalid/demo-1.1-py3-none-any.whl".to_string()
            ),
        "{targets:?}"
    );
}

/// An `HTTPS_PROXY` as companies run one: `CONNECT host:port`, then bytes both ways. Every
/// tunnel goes to `target` whatever host was asked for; the hosts asked for are recorded.
async fn connect_proxy(target: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let record = Arc::clone(&record);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let Some(authority) = head
                    .lines()
                    .next()
                    .and_then(|line| line.strip_prefix("CONNECT "))
                    .and_then(|rest| rest.split(' ').next())
                else {
                    let _ = client
                        .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                        .await;
                    return;
                };
                record.lock().unwrap().push(authority.to_string());
                let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                let _ = client
                    .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (addr, asked)
}

#[tokio::test]
async fn https_proxy_tunnels_to_a_private_upstream_trusted_by_its_ca_bundle() {
    let upstreams = Upstreams::start().await;
    let (proxy_addr, asked) = connect_proxy(upstreams.private.addr).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "pypi_url = \"https://{ARTIFACTORY_HOST}/artifactory/api/pypi/pypi-remote/simple\"\n\
             read_sources_at_start = false\n\
             [upstreams.pypi]\n\
             token = {{ file = {} }}\n\
             headers = {{ \"X-JFrog-Art-Api\" = {{ env = \"ARTIFACTORY_API_KEY\" }} }}\n\
             ca_bundle = {}\n",
            toml::Value::String(upstreams.file("token").display().to_string()),
            toml::Value::String(upstreams.file("ca.pem").display().to_string()),
        ),
    );
    let mut child = wheelgate(
        &["serve", "--config", &config, "--listen", "127.0.0.1:0"],
        &[
            ("HTTPS_PROXY", &format!("http://{proxy_addr}")),
            ("ARTIFACTORY_API_KEY", API_KEY),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let address = listening_address(stdout).await;
    let (status, body) = get(&format!("http://{address}/simple/demo/")).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let (status, body) = get(&format!(
        "http://{address}/files/demo/demo-1.0-py3-none-any.whl"
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(body, wheel("1.0"));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        vec![format!("{ARTIFACTORY_HOST}:443"); asked.len().max(1)],
        "every request, and at least one, went through the tunnel"
    );
    let seen = upstreams.private_seen.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.iter().all(|s| s.api_key.as_deref() == Some(API_KEY)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn the_status_page_summarizes_each_upstreams_access_without_values() {
    let upstreams = Upstreams::start().await;
    let cache = tempfile::tempdir().unwrap();
    let mut config = upstreams.config(cache.path());
    config.upstreams.pypi.extra_origins = vec![format!("http://{}", upstreams.cdn_addr)];
    let proxy = start_proxy(config, cache).await;
    let page = reqwest::get(format!("http://{}/", proxy.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let section = &page[page.find("id=\"upstreams\"").unwrap()..];
    let section = &section[..section.find("</table>").unwrap()];
    let rows: Vec<&str> = section.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 2, "{section}");
    // PyTorch: no section.
    assert!(rows[0].contains("public: no credentials"), "{}", rows[0]);
    // The private general upstream: section, both origins, header names, one CA certificate.
    let private = rows[1];
    for expected in [
        "[upstreams.pypi]",
        &format!("<code>https://{}</code>", upstreams.private.addr),
        &format!("<code>http://{}</code>", upstreams.cdn_addr),
        "headers: authorization, x-jfrog-art-api",
        "CA bundle: 1 certificate besides the system's",
    ] {
        assert!(private.contains(expected), "{expected}: {private}");
    }
    // Never a value.
    assert!(!page.contains(TOKEN) && !page.contains(API_KEY), "{page}");
}
