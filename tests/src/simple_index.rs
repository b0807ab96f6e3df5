//! A plain PEP 503 index on `127.0.0.1` (a company's internal index, PyPI with only the files a
//! test needs): `/simple/<project>/` lists the wheels given to it, with `#sha256=` and PEP 658
//! `data-core-metadata`; files at `/files/<filename>` and their `.metadata`. It can be taken
//! down (every request answered with a status, or the port closed) and counts requests.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::upstream::percent_decode;
use crate::wheels::BuiltWheel;

/// A running index; stops when dropped.
pub struct SimpleIndex {
    pub addr: SocketAddr,
    state: Arc<IndexState>,
    task: JoinHandle<()>,
}

struct IndexState {
    wheels: Mutex<Vec<BuiltWheel>>,
    failing: Mutex<Option<StatusCode>>,
    requests: Mutex<Vec<String>>,
}

impl SimpleIndex {
    /// Serves `wheels` on a fresh loopback port.
    pub async fn start(wheels: Vec<BuiltWheel>) -> SimpleIndex {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(IndexState {
            wheels: Mutex::new(wheels),
            failing: Mutex::default(),
            requests: Mutex::default(),
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("fake index");
        });
        SimpleIndex { addr, state, task }
    }

    /// A port nothing listens on: an index that cannot be reached.
    pub async fn unreachable_url() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        drop(listener);
        format!("http://{addr}/simple")
    }

    /// The index URL: `http://127.0.0.1:<port>/simple`.
    pub fn url(&self) -> String {
        format!("http://{}/simple", self.addr)
    }

    /// Publishes `wheel`: listed and served from now on, as a release appears upstream.
    pub fn publish(&self, wheel: BuiltWheel) {
        self.state.wheels.lock().unwrap().push(wheel);
    }

    /// Answers every request with `status` from now on (`None`: serve again).
    pub fn set_failing(&self, status: Option<StatusCode>) {
        *self.state.failing.lock().unwrap() = status;
    }

    /// The decoded paths requested so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}

impl Drop for SimpleIndex {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(state): State<Arc<IndexState>>, method: Method, uri: Uri) -> Response {
    let path = percent_decode(uri.path());
    state.requests.lock().unwrap().push(path.clone());
    if let Some(status) = *state.failing.lock().unwrap() {
        return status.into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    if let Some(name) = path.strip_prefix("/files/") {
        let (name, metadata) = match name.strip_suffix(".metadata") {
            Some(wheel) => (wheel, true),
            None => (name, false),
        };
        let wheels = state.wheels.lock().unwrap().clone();
        return match wheels.iter().find(|w| w.filename == name) {
            Some(wheel) if metadata => bytes(wheel.metadata.clone(), "text/plain"),
            Some(wheel) => bytes(wheel.bytes.clone(), "application/octet-stream"),
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    let Some(project) = path
        .strip_prefix("/simple/")
        .and_then(|rest| rest.strip_suffix('/'))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let wheels = state.wheels.lock().unwrap().clone();
    let files: Vec<&BuiltWheel> = wheels
        .iter()
        .filter(|w| project_of(&w.filename) == project)
        .collect();
    if files.is_empty() {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    }
    let mut html = format!(
        "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Links for {project}</title></head><body>\n"
    );
    for wheel in files {
        let metadata = crate::wheels::sha256_hex(&wheel.metadata);
        let _ = writeln!(
            html,
            "<a href=\"/files/{}#sha256={}\" data-core-metadata=\"sha256={metadata}\">{}</a><br/>",
            wheel.filename.replace('+', "%2B"),
            wheel.sha256,
            wheel.filename
        );
    }
    html.push_str("</body></html>\n");
    let mut response = html.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/vnd.pypi.simple.v1+html"),
    );
    response
}

/// The normalized project of a wheel filename (`acme_utils-1.0-...` → `acme-utils`).
fn project_of(filename: &str) -> String {
    filename
        .split('-')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .replace(['_', '.'], "-")
}

fn bytes(body: Vec<u8>, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
