//! A per-build find-links host on `127.0.0.1`, in PyG's shape: one HTML page per torch release
//! and build (`/whl/torch-2.9.0+cu130.html`) listing the wheels built against it with relative
//! links and `#sha256=` fragments, no PEP 658 metadata; wheels at `/whl/<filename>`, answering
//! `Range` requests (suffix and closed ranges) as S3 behind a CDN does. Counts requests.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::upstream::percent_decode;
use crate::wheels::BuiltWheel;

/// A running host; stops when dropped.
pub struct FindLinks {
    pub addr: SocketAddr,
    state: Arc<HostState>,
    task: JoinHandle<()>,
}

struct HostState {
    /// Page name (`torch-2.9.0+cu130.html`) and the wheels it lists.
    pages: Vec<(String, Vec<BuiltWheel>)>,
    requests: Mutex<Vec<String>>,
    /// Bytes of wheel bodies sent.
    wheel_bytes: Mutex<u64>,
}

impl FindLinks {
    /// Serves `pages` (name, wheels) on a fresh loopback port.
    pub async fn start(pages: Vec<(String, Vec<BuiltWheel>)>) -> FindLinks {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(HostState {
            pages,
            requests: Mutex::default(),
            wheel_bytes: Mutex::default(),
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .await
                .expect("fake find-links host");
        });
        FindLinks { addr, state, task }
    }

    /// The template a `[[sources]]` entry gives for this host.
    pub fn template(&self) -> String {
        format!("http://{}/whl/torch-{{torch}}+{{backend}}.html", self.addr)
    }

    /// The decoded paths requested so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Bytes of wheels sent so far (ranges included).
    pub fn wheel_bytes(&self) -> u64 {
        *self.state.wheel_bytes.lock().unwrap()
    }
}

impl Drop for FindLinks {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(state): State<Arc<HostState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let path = percent_decode(uri.path());
    state.requests.lock().unwrap().push(path.clone());
    if method != Method::GET && method != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Some(name) = path.strip_prefix("/whl/") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some((_, wheels)) = state.pages.iter().find(|(page, _)| page == name) {
        let mut html = String::from("<html><head><title>Links</title></head><body>\n");
        for wheel in wheels {
            let _ = writeln!(
                html,
                "<a href=\"{}#sha256={}\">{}</a><br>",
                wheel.filename.replace('+', "%2B"),
                wheel.sha256,
                wheel.filename
            );
        }
        html.push_str("</body></html>\n");
        let mut response = html.into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        return response;
    }
    let wheel = state
        .pages
        .iter()
        .flat_map(|(_, wheels)| wheels)
        .find(|wheel| wheel.filename == name);
    let Some(wheel) = wheel else {
        // S3 behind a CDN answers a missing object with 403 or 404; PyG's answers 404.
        return StatusCode::NOT_FOUND.into_response();
    };
    let len = wheel.bytes.len();
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_range(v, len));
    let (status, body, content_range) = match range {
        Some((start, end)) => (
            StatusCode::PARTIAL_CONTENT,
            wheel.bytes[start..end].to_vec(),
            Some(format!("bytes {start}-{}/{len}", end - 1)),
        ),
        None => (StatusCode::OK, wheel.bytes.clone(), None),
    };
    if method == Method::GET {
        *state.wheel_bytes.lock().unwrap() += body.len() as u64;
    }
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CONTENT_LENGTH, body.len());
    if let Some(content_range) = content_range {
        response = response.header(header::CONTENT_RANGE, content_range);
    }
    let body = if method == Method::HEAD {
        axum::body::Body::empty()
    } else {
        axum::body::Body::from(body)
    };
    response.body(body).expect("valid response")
}

/// `bytes=-N` or `bytes=A-B` (or `A-`) within a file of `len` bytes, as `start..end`.
fn parse_range(value: &str, len: usize) -> Option<(usize, usize)> {
    let spec = value.strip_prefix("bytes=")?;
    let (from, to) = spec.split_once('-')?;
    if from.is_empty() {
        let n: usize = to.parse().ok()?;
        return Some((len.saturating_sub(n), len));
    }
    let start: usize = from.parse().ok()?;
    let end = if to.is_empty() {
        len
    } else {
        to.parse::<usize>().ok()?.saturating_add(1).min(len)
    };
    (start < end).then_some((start, end))
}
