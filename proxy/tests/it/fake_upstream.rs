//! A fake upstream on 127.0.0.1 for the file-cache tests: files and index pages by path, every
//! request counted, and file answers that can be slow, stall, truncate, lie or refuse.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use wheelgate_files::cache::FileSpec;

pub const CHUNK: usize = 64 * 1024;

/// How the fake upstream answers file requests.
#[derive(Debug, Clone, Copy, Default)]
pub enum Behaviour {
    #[default]
    Serve,
    /// Sleeps this long between chunks.
    Slow(Duration),
    /// Sends this many bytes, then nothing, keeping the connection open.
    StallAfter(usize),
    /// Announces the full length, sends this many bytes and breaks the connection a moment
    /// later (so the headers and bytes reach the client before the cut).
    TruncateAfter(usize),
    /// The right length, one byte flipped.
    WrongBytes,
    Status(u16),
}

#[derive(Clone, Default)]
pub struct FakeState {
    files: Arc<Mutex<HashMap<String, Bytes>>>,
    pages: Arc<Mutex<HashMap<String, String>>>,
    behaviour: Arc<Mutex<Behaviour>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    /// Bytes of file bodies sent, ranges and whole files.
    range_bytes: Arc<Mutex<u64>>,
}

/// A fake upstream: file bytes by path, index pages by path; shut down on drop.
pub struct Fake {
    pub addr: SocketAddr,
    state: FakeState,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    pub async fn start() -> Fake {
        let state = FakeState::default();
        let router = Router::new()
            .fallback(fake_handler)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Fake { addr, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Serves `bytes` at `path`; returns a spec with their sha256, listed on a page of this
    /// upstream (so it carries this upstream's access, if any).
    pub fn add_file(&self, path: &str, bytes: &[u8]) -> FileSpec {
        self.state
            .files
            .lock()
            .unwrap()
            .insert(path.to_string(), Bytes::copy_from_slice(bytes));
        FileSpec {
            url: self.url(path),
            sha256: Some(sha256(bytes)),
            size: None,
            splice: None,
            listed_on: Some(self.url("/simple/").into()),
        }
    }

    pub fn add_page(&self, path: &str, html: String) {
        self.state
            .pages
            .lock()
            .unwrap()
            .insert(path.to_string(), html);
    }

    pub fn set(&self, behaviour: Behaviour) {
        *self.state.behaviour.lock().unwrap() = behaviour;
    }

    /// Requests for every path under `prefix`.
    pub fn hits_under(&self, prefix: &str) -> usize {
        let hits = self.state.hits.lock().unwrap();
        hits.iter()
            .filter(|(path, _)| path.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }

    /// Bytes of file bodies sent so far, ranges and whole files.
    pub fn file_bytes_sent(&self) -> u64 {
        *self.state.range_bytes.lock().unwrap()
    }

    pub fn hits(&self, path: &str) -> usize {
        self.state
            .hits
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

async fn fake_handler(
    State(state): State<FakeState>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let path = uri.path().to_string();
    *state.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    if let Some(page) = state.pages.lock().unwrap().get(&path) {
        // A page given as JSON is served as PEP 691 JSON, as PyPI serves it.
        let content_type = if page.starts_with('{') {
            "application/vnd.pypi.simple.v1+json"
        } else {
            "text/html"
        };
        return ([(header::CONTENT_TYPE, content_type)], page.clone()).into_response();
    }
    let Some(bytes) = state.files.lock().unwrap().get(&path).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let behaviour = *state.behaviour.lock().unwrap();
    let len = bytes.len();
    // `bytes=a-b` and `bytes=-n`, as static file servers and object stores answer them.
    if let Some((start, last)) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok()?.strip_prefix("bytes=")?.split_once('-'))
        .and_then(|(a, b)| match a {
            "" => {
                let n = b.parse::<usize>().ok()?.min(len);
                Some((len - n, len - 1))
            }
            a => Some((
                a.parse::<usize>().ok()?,
                b.parse::<usize>().ok()?.min(len - 1),
            )),
        })
        && matches!(behaviour, Behaviour::Serve | Behaviour::Slow(_))
    {
        *state.range_bytes.lock().unwrap() += (last + 1 - start) as u64;
        return Response::builder()
            .status(StatusCode::PARTIAL_CONTENT)
            .header(header::CONTENT_RANGE, format!("bytes {start}-{last}/{len}"))
            .body(Body::from(bytes.slice(start..=last)))
            .unwrap();
    }
    let (bytes, delay) = match behaviour {
        Behaviour::Serve => (bytes, None),
        Behaviour::Slow(delay) => (bytes, Some(delay)),
        Behaviour::StallAfter(n) | Behaviour::TruncateAfter(n) => (bytes.slice(..n), None),
        Behaviour::WrongBytes => {
            let mut wrong = bytes.to_vec();
            wrong[len / 2] ^= 0xff;
            (Bytes::from(wrong), None)
        }
        Behaviour::Status(code) => return StatusCode::from_u16(code).unwrap().into_response(),
    };
    if method != axum::http::Method::HEAD {
        *state.range_bytes.lock().unwrap() += bytes.len() as u64;
    }
    let chunks: Vec<Bytes> = (0..bytes.len())
        .step_by(CHUNK)
        .map(|at| bytes.slice(at..(at + CHUNK).min(bytes.len())))
        .collect();
    let body = futures_util::stream::iter(chunks).then(move |chunk| async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Ok::<_, std::io::Error>(chunk)
    });
    let body = match behaviour {
        Behaviour::StallAfter(_) => Body::from_stream(body.chain(futures_util::stream::pending())),
        Behaviour::TruncateAfter(_) => {
            Body::from_stream(body.chain(futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(std::io::Error::other("cut"))
            })))
        }
        _ => Body::from_stream(body),
    };
    Response::builder()
        .header(header::CONTENT_LENGTH, len)
        .body(body)
        .unwrap()
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
