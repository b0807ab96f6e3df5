//! Fake upstreams on `127.0.0.1:0`, started in-process and shut down on drop:
//!
//! - a PyTorch index serving pages in download.pytorch.org's exact format (`/whl/`,
//!   `/whl/<backend>/`, `/whl/<backend>/<project>/`, the aggregated `/whl/<project>/`), the
//!   wheels and their `.metadata` files, and `403` for anything it does not have;
//! - a second host standing in for download-r2.pytorch.org, which serves the same files and
//!   which some links point at absolutely;
//! - a PyPI serving PEP 691 JSON and PEP 503 HTML by content negotiation, with its files on an
//!   absolute "file host" path, like files.pythonhosted.org.
//!
//! Every server records each request (method, decoded path, `Accept`) for assertions such as
//! "exactly one upstream request for this wheel" or "PyPI was never asked for `torch`".

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse as _, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::catalog::{Catalog, LinkForm, PypiFile, PytorchFile, backends};

/// The `<!--TIMESTAMP n-->` every fake PyTorch page ends with.
const TIMESTAMP: u64 = 1_774_772_182;

/// One request a fake server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// Percent-decoded path (`/whl/cu130/torch-2.9.0+cu130-...whl`).
    pub path: String,
    pub accept: Option<String>,
    pub user_agent: Option<String>,
}

/// The requests a fake server received, in order.
#[derive(Debug, Default)]
pub struct RequestLog {
    requests: Mutex<Vec<Request>>,
}

impl RequestLog {
    fn push(&self, request: Request) {
        self.requests.lock().unwrap().push(request);
    }

    /// Every request so far.
    pub fn all(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests had exactly this (decoded) path, any method.
    pub fn count(&self, path: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .count()
    }

    /// How many `GET` requests had exactly this (decoded) path.
    pub fn count_get(&self, path: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path && r.method == Method::GET)
            .count()
    }

    /// How many requests had a path starting with `prefix`.
    pub fn count_prefix(&self, prefix: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path.starts_with(prefix))
            .count()
    }

    /// The distinct paths requested, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.path.clone())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// A running fake server; stops when dropped.
pub struct FakeServer {
    pub addr: SocketAddr,
    pub log: Arc<RequestLog>,
    /// When set, every request is answered with this status (an upstream that is down).
    failing: Arc<Mutex<Option<StatusCode>>>,
    task: JoinHandle<()>,
}

impl FakeServer {
    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:<port>`, as it would appear in a leaked URL.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Answers every request with `status` from now on (`None`: serve normally again).
    pub fn set_failing(&self, status: Option<StatusCode>) {
        *self.failing.lock().unwrap() = status;
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    (listener, addr)
}

fn spawn(
    listener: TcpListener,
    addr: SocketAddr,
    log: Arc<RequestLog>,
    failing: Arc<Mutex<Option<StatusCode>>>,
    router: Router,
) -> FakeServer {
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.expect("fake upstream");
    });
    FakeServer {
        addr,
        log,
        failing,
        task,
    }
}

/// The three fake upstreams together.
pub struct Upstreams {
    /// download.pytorch.org
    pub pytorch: FakeServer,
    /// download-r2.pytorch.org
    pub r2: FakeServer,
    /// PyPI (index and file host on one server).
    pub pypi: FakeServer,
    pub catalog: &'static Catalog,
}

impl Upstreams {
    /// Starts all three on fresh loopback ports, publishing [`Catalog::get`].
    pub async fn start() -> Upstreams {
        Upstreams::start_with(Catalog::get()).await
    }

    /// Starts all three on fresh loopback ports, publishing `catalog`.
    pub async fn start_with(catalog: &'static Catalog) -> Upstreams {
        let (pt_listener, pt_addr) = bind().await;
        let (r2_listener, r2_addr) = bind().await;
        let (pypi_listener, pypi_addr) = bind().await;
        let primary_base = format!("http://{pt_addr}");
        let r2_base = format!("http://{r2_addr}");

        let mut servers = Vec::new();
        for (listener, addr, role) in [
            (pt_listener, pt_addr, Role::Primary),
            (r2_listener, r2_addr, Role::R2),
        ] {
            let state = Arc::new(PytorchState {
                catalog,
                role,
                primary_base: primary_base.clone(),
                r2_base: r2_base.clone(),
                log: Arc::default(),
                failing: Arc::default(),
            });
            let (log, failing) = (state.log.clone(), state.failing.clone());
            let router = Router::new().fallback(pytorch_handler).with_state(state);
            servers.push(spawn(listener, addr, log, failing, router));
        }
        let r2 = servers.pop().unwrap();
        let pytorch = servers.pop().unwrap();

        let state = Arc::new(PypiState {
            catalog,
            base: format!("http://{pypi_addr}"),
            log: Arc::default(),
            failing: Arc::default(),
        });
        let (log, failing) = (state.log.clone(), state.failing.clone());
        let router = Router::new().fallback(pypi_handler).with_state(state);
        let pypi = spawn(pypi_listener, pypi_addr, log, failing, router);
        Upstreams {
            pytorch,
            r2,
            pypi,
            catalog,
        }
    }

    /// The proxy's `pytorch_url`: `http://127.0.0.1:<port>/whl`.
    pub fn pytorch_url(&self) -> String {
        format!("{}/whl", self.pytorch.base())
    }

    /// The proxy's `pypi_url`: `http://127.0.0.1:<port>/simple`.
    pub fn pypi_url(&self) -> String {
        format!("{}/simple", self.pypi.base())
    }

    /// `host:port` of every upstream: none may ever appear in what the proxy sends a client.
    pub fn hosts(&self) -> Vec<String> {
        vec![self.pytorch.host(), self.r2.host(), self.pypi.host()]
    }

    /// Requests for one file path (decoded, `/whl/cu130/torch-2.9.0+cu130-...whl`) on either
    /// PyTorch host.
    pub fn pytorch_file_requests(&self, path: &str) -> usize {
        self.pytorch.log.count_get(path) + self.r2.log.count_get(path)
    }
}

fn record(log: &RequestLog, method: &Method, uri: &Uri, headers: &HeaderMap) -> String {
    let path = percent_decode(uri.path());
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    log.push(Request {
        method: method.clone(),
        path: path.clone(),
        accept: text(header::ACCEPT),
        user_agent: text(header::USER_AGENT),
    });
    path
}

// ---------------------------------------------------------------------------------------------
// download.pytorch.org

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Primary,
    R2,
}

struct PytorchState {
    catalog: &'static Catalog,
    role: Role,
    primary_base: String,
    r2_base: String,
    log: Arc<RequestLog>,
    failing: Arc<Mutex<Option<StatusCode>>>,
}

async fn pytorch_handler(
    State(state): State<Arc<PytorchState>>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let path = record(&state.log, &method, &uri, &headers);
    if let Some(status) = *state.failing.lock().unwrap() {
        return status.into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let catalog = state.catalog;
    if let Some(wheel_path) = path.strip_suffix(".metadata")
        && let Some(file) = catalog
            .pytorch
            .iter()
            .find(|f| f.has_metadata && f.path() == wheel_path)
    {
        return bytes_response(&method, file.wheel.metadata.clone());
    }
    if let Some(file) = catalog.pytorch.iter().find(|f| f.path() == path) {
        return bytes_response(&method, file.wheel.bytes.clone());
    }
    if state.role == Role::R2 {
        return access_denied();
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let known_backends = backends();
    let body = match segments.as_slice() {
        ["whl", ""] | ["whl"] => Some(listing(
            known_backends
                .iter()
                .copied()
                .chain(catalog.pytorch_projects(None))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter(),
        )),
        ["whl", backend, ""] if known_backends.contains(backend) => {
            Some(listing(catalog.pytorch_projects(Some(backend)).into_iter()))
        }
        ["whl", backend, project, ""] if known_backends.contains(backend) => {
            let files = catalog.pytorch_page(Some(backend), project);
            (!files.is_empty()).then(|| pytorch_page(&state, project, &files))
        }
        ["whl", project, ""] => {
            let files = catalog.pytorch_page(None, project);
            (!files.is_empty()).then(|| pytorch_page(&state, project, &files))
        }
        _ => None,
    };
    match body {
        Some(body) => {
            let mut response = body_response(&method, body.into_bytes());
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
            response
        }
        None => access_denied(),
    }
}

/// What download.pytorch.org (S3 behind `CloudFront`) answers for a missing project or file.
fn access_denied() -> Response {
    let mut response = (
        StatusCode::FORBIDDEN,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    response
}

// The real `/whl/` and `/whl/cu130/` pages:
// <!DOCTYPE html>
// <html>
//   <body>
//     <a href="certifi/">certifi</a><br/>
//     ...
//   </body>
// </html>
// <!--TIMESTAMP 1774765727-->
fn listing<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut html = String::from("<!DOCTYPE html>\n<html>\n  <body>\n");
    for name in names {
        let _ = writeln!(html, "    <a href=\"{name}/\">{name}</a><br/>");
    }
    let _ = write!(html, "  </body>\n</html>\n<!--TIMESTAMP {TIMESTAMP}-->");
    html
}

// The real `/whl/cu130/torch/` page (fixtures/pytorch-index/whl_cu130_torch.html):
// <!DOCTYPE html>
// <html>
//   <body>
//     <h1>Links for torch</h1>
//     <a href="/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-manylinux_2_28_aarch64.whl#sha256=adfb..." data-dist-info-metadata="sha256=b0d9..." data-core-metadata="sha256=b0d9...">torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl</a><br/>
//     ...
//     <a href="/whl/torch-2.0.1-cp39-cp39-manylinux2014_aarch64.whl#sha256=423e...">torch-2.0.1-cp39-cp39-manylinux2014_aarch64.whl</a><br/>
//   </body>
// </html>
// <!--TIMESTAMP 1774772182-->
fn pytorch_page(state: &PytorchState, project: &str, files: &[&PytorchFile]) -> String {
    let mut html = format!("<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for {project}</h1>\n");
    for file in files {
        let encoded = file.path().replace('+', "%2B");
        let href = match file.link {
            LinkForm::RootRelative => encoded,
            LinkForm::AbsolutePrimary => format!("{}{encoded}", state.primary_base),
            LinkForm::AbsoluteR2 => format!("{}{encoded}", state.r2_base),
        };
        let _ = write!(html, "    <a href=\"{href}#sha256={}\"", file.wheel.sha256);
        if file.has_metadata {
            let hash = &file.wheel.metadata_sha256;
            let _ = write!(
                html,
                " data-dist-info-metadata=\"sha256={hash}\" data-core-metadata=\"sha256={hash}\""
            );
        }
        if let Some(time) = file.upload_time {
            let _ = write!(html, " data-upload-time=\"{time}\"");
        }
        let _ = writeln!(html, ">{}</a><br/>", file.wheel.filename);
    }
    let _ = write!(html, "  </body>\n</html>\n<!--TIMESTAMP {TIMESTAMP}-->");
    html
}

fn body_response(method: &Method, bytes: Vec<u8>) -> Response {
    let length = bytes.len();
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    response
}

/// A file as S3 serves it: `binary/octet-stream`, with a length and an `ETag`.
fn bytes_response(method: &Method, bytes: Vec<u8>) -> Response {
    let etag = format!("\"{}\"", &crate::wheels::sha256_hex(&bytes)[..32]);
    let mut response = body_response(method, bytes);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("binary/octet-stream"),
    );
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).unwrap());
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    response
}

// ---------------------------------------------------------------------------------------------
// PyPI

struct PypiState {
    catalog: &'static Catalog,
    base: String,
    log: Arc<RequestLog>,
    failing: Arc<Mutex<Option<StatusCode>>>,
}

/// The formats of PEP 691.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    HtmlV1,
    Html,
}

impl Format {
    fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/vnd.pypi.simple.v1+json",
            Format::HtmlV1 => "application/vnd.pypi.simple.v1+html",
            Format::Html => "text/html",
        }
    }
}

/// PEP 691 negotiation as PyPI does it: the acceptable type with the highest q-value (ties: the
/// first listed); no `Accept` means HTML; nothing acceptable means `None` (406).
pub fn negotiate(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Format::Html);
    };
    let mut best: Option<(Format, f32)> = None;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .find_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|v| v.trim().parse::<f32>().ok())
            })
            .unwrap_or(1.0);
        let format =
            match media.as_str() {
                "application/vnd.pypi.simple.v1+json"
                | "application/vnd.pypi.simple.latest+json" => Format::Json,
                "application/vnd.pypi.simple.v1+html"
                | "application/vnd.pypi.simple.latest+html" => Format::HtmlV1,
                "text/html" | "text/*" | "*/*" => Format::Html,
                _ => continue,
            };
        if q > 0.0 && best.is_none_or(|(_, best_q)| q > best_q) {
            best = Some((format, q));
        }
    }
    best.map(|(format, _)| format)
}

fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
        } else {
            if separator && !out.is_empty() {
                out.push('-');
            }
            separator = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

async fn pypi_handler(
    State(state): State<Arc<PypiState>>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let path = record(&state.log, &method, &uri, &headers);
    if let Some(status) = *state.failing.lock().unwrap() {
        return status.into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let catalog = state.catalog;
    // The file host: /packages/<sha256>/<filename> and PEP 658's <file URL>.metadata.
    if let Some(rest) = path.strip_prefix("/packages/") {
        let file = catalog.pypi.iter().find(|f| {
            rest == file_path(f) || rest.strip_suffix(".metadata") == Some(&file_path(f))
        });
        return match file {
            Some(file) if rest.ends_with(".metadata") => {
                bytes_response(&method, file.wheel.metadata.clone())
            }
            Some(file) => bytes_response(&method, file.wheel.bytes.clone()),
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let Some(format) = negotiate(accept) else {
        return StatusCode::NOT_ACCEPTABLE.into_response();
    };
    let body = match segments.as_slice() {
        ["simple", ""] => pypi_root(&catalog.pypi_projects(), format),
        ["simple", name, ""] => {
            let normalized = normalize(name);
            if normalized != *name {
                let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
                let location = format!("/simple/{normalized}/");
                response
                    .headers_mut()
                    .insert(header::LOCATION, HeaderValue::from_str(&location).unwrap());
                return response;
            }
            let files = catalog.pypi_project(name);
            if files.is_empty() {
                return (StatusCode::NOT_FOUND, "Not Found").into_response();
            }
            pypi_project(&state.base, name, &files, format)
        }
        _ => return (StatusCode::NOT_FOUND, "Not Found").into_response(),
    };
    let mut response = body_response(&method, body.into_bytes());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=600, public"),
    );
    response
}

fn file_path(file: &PypiFile) -> String {
    format!("{}/{}", file.wheel.sha256, file.wheel.filename)
}

fn pypi_root(projects: &[&str], format: Format) -> String {
    if format == Format::Json {
        let projects: Vec<serde_json::Value> = projects
            .iter()
            .map(|p| serde_json::json!({"name": p, "_last-serial": 1}))
            .collect();
        return serde_json::json!({"meta": {"api-version": "1.1", "_last-serial": 1}, "projects": projects}).to_string();
    }
    let mut html = String::from(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.1\">\n    <title>Simple index</title>\n  </head>\n  <body>\n",
    );
    for project in projects {
        let _ = writeln!(html, "    <a href=\"/simple/{project}/\">{project}</a>");
    }
    html.push_str("  </body>\n</html>");
    html
}

// A real PyPI project page (HTML form):
// <!DOCTYPE html>
// <html>
//   <head>
//     <meta name="pypi:repository-version" content="1.4">
//     <title>Links for filelock</title>
//   </head>
//   <body>
//     <h1>Links for filelock</h1>
//     <a href="https://files.pythonhosted.org/packages/.../filelock-3.20.0-py3-none-any.whl#sha256=..." data-requires-python="&gt;=3.10" data-dist-info-metadata="sha256=..." data-core-metadata="sha256=...">filelock-3.20.0-py3-none-any.whl</a><br />
//   </body>
// </html>
// <!--SERIAL 31662398-->
fn pypi_project(base: &str, name: &str, files: &[&PypiFile], format: Format) -> String {
    if format == Format::Json {
        let mut versions: Vec<&str> = files.iter().map(|f| f.version.as_str()).collect();
        versions.dedup();
        let files: Vec<serde_json::Value> = files
            .iter()
            .map(|f| {
                serde_json::json!({
                    "filename": f.wheel.filename,
                    "url": format!("{base}/packages/{}", file_path(f)),
                    "hashes": {"sha256": f.wheel.sha256},
                    "requires-python": f.requires_python,
                    "core-metadata": {"sha256": f.wheel.metadata_sha256},
                    "data-dist-info-metadata": {"sha256": f.wheel.metadata_sha256},
                    "size": f.wheel.bytes.len(),
                    "upload-time": f.upload_time,
                    "yanked": false,
                })
            })
            .collect();
        return serde_json::json!({
            "meta": {"api-version": "1.1", "_last-serial": 31_662_398},
            "name": name,
            "versions": versions,
            "files": files,
        })
        .to_string();
    }
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.1\">\n    <title>Links for {name}</title>\n  </head>\n  <body>\n    <h1>Links for {name}</h1>\n"
    );
    for file in files {
        let _ = write!(
            html,
            "    <a href=\"{base}/packages/{}#sha256={}\"",
            file_path(file),
            file.wheel.sha256
        );
        if let Some(python) = &file.requires_python {
            let _ = write!(
                html,
                " data-requires-python=\"{}\"",
                python.replace('>', "&gt;").replace('<', "&lt;")
            );
        }
        let hash = &file.wheel.metadata_sha256;
        let _ = writeln!(
            html,
            " data-dist-info-metadata=\"sha256={hash}\" data-core-metadata=\"sha256={hash}\">{}</a><br />",
            file.wheel.filename
        );
    }
    html.push_str("  </body>\n</html>\n<!--SERIAL 31662398-->");
    html
}

/// Decodes `%XX` escapes in a URL path (`%2B` → `+`); invalid escapes stay as they are.
pub fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(value) = u8::from_str_radix(hex, 16)
        {
            out.push(value);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_like_pypi() {
        let pip = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
        assert_eq!(negotiate(Some(pip)), Some(Format::Json));
        assert_eq!(negotiate(Some("text/html")), Some(Format::Html));
        assert_eq!(negotiate(None), Some(Format::Html));
        assert_eq!(negotiate(Some("application/json")), None);
    }

    #[test]
    fn decodes_and_normalizes() {
        assert_eq!(
            percent_decode("/whl/cu130/torch-2.9.0%2Bcu130-x.whl"),
            "/whl/cu130/torch-2.9.0+cu130-x.whl"
        );
        assert_eq!(percent_decode("/a%2"), "/a%2");
        assert_eq!(normalize("Pytorch_Triton"), "pytorch-triton");
        assert_eq!(normalize("a.-_b"), "a-b");
    }
}
