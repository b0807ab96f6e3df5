//! A misbehaving upstream on 127.0.0.1, written on raw sockets so it can do what a well-behaved
//! HTTP server never would: accept and never answer, drip a page a byte at a time, announce more
//! bytes than it sends, send random bytes with a 200, close mid-body with no length. Each path
//! answers as told, and every request is counted.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How one path answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `200` with this HTML page and its exact length.
    Html(String),
    /// `200` with this body as PEP 691 JSON.
    Json(String),
    /// `200` with these bytes as a file and their exact length.
    File(Vec<u8>),
    /// Reads the request and never answers, holding the connection open.
    Stall,
    /// Headers with the page's length, then one byte every `every`.
    Drip { body: String, every: Duration },
    /// Announces `claimed` bytes, sends `body` (shorter), then closes.
    LyingLength { body: String, claimed: usize },
    /// `200` with no `Content-Length`: sends the first `cut_at` bytes, then closes, which for
    /// a response without a length is how it ends.
    FileWithoutLength { body: Vec<u8>, cut_at: usize },
    /// Sends the file's length and its bytes in chunks of `chunk`, waiting `every` between them.
    SlowFile {
        body: Vec<u8>,
        chunk: usize,
        every: Duration,
    },
    /// This status with an empty body.
    Status(u16),
    /// `301` to this location (as written: relative or absolute).
    MovedTo(String),
    /// Closes the connection without a word.
    Close,
    /// `200` to every request, `Range` or not: `len` bytes made as they are sent (never held
    /// here), announced with `Content-Length` when `announce`; `sent` counts the bytes the
    /// connection took before the client hung up.
    IgnoresRange {
        len: u64,
        announce: bool,
        sent: Arc<std::sync::atomic::AtomicU64>,
    },
}

#[derive(Default)]
struct State {
    answers: HashMap<String, Answer>,
    hits: HashMap<String, usize>,
}

/// The rogue upstream; stops accepting when dropped.
pub struct Rogue {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Rogue {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Rogue {
    pub async fn start() -> Rogue {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, Arc::clone(&shared)));
            }
        });
        Rogue { addr, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// From now on, `path` answers this way.
    pub fn set(&self, path: &str, answer: Answer) {
        self.state
            .lock()
            .unwrap()
            .answers
            .insert(path.to_string(), answer);
    }

    pub fn hits(&self, path: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .hits
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

async fn answer(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let Some(path) = read_request_path(&mut stream).await else {
        return;
    };
    let answer = {
        let mut state = state.lock().unwrap();
        *state.hits.entry(path.clone()).or_default() += 1;
        state
            .answers
            .get(&path)
            .cloned()
            .unwrap_or(Answer::Status(404))
    };
    let _ = respond(&mut stream, answer).await;
}

async fn respond(stream: &mut TcpStream, answer: Answer) -> std::io::Result<()> {
    let head = |status: &str, content_type: &str, length: Option<usize>| {
        let length = length.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{length}Connection: close\r\n\r\n"
        )
    };
    match answer {
        Answer::Html(body) => {
            let text = head("200 OK", "text/html", Some(body.len())) + &body;
            stream.write_all(text.as_bytes()).await?;
        }
        Answer::Json(body) => {
            let text = head(
                "200 OK",
                "application/vnd.pypi.simple.v1+json",
                Some(body.len()),
            ) + &body;
            stream.write_all(text.as_bytes()).await?;
        }
        Answer::File(body) => {
            let text = head("200 OK", "application/octet-stream", Some(body.len()));
            stream.write_all(text.as_bytes()).await?;
            stream.write_all(&body).await?;
        }
        Answer::Stall => {
            // Holds the connection until the client gives up.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
        }
        Answer::Drip { body, every } => {
            let text = head("200 OK", "text/html", Some(body.len()));
            stream.write_all(text.as_bytes()).await?;
            for byte in body.bytes() {
                stream.write_all(&[byte]).await?;
                stream.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
        Answer::LyingLength { body, claimed } => {
            let text = head("200 OK", "text/html", Some(claimed)) + &body;
            stream.write_all(text.as_bytes()).await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Answer::FileWithoutLength { body, cut_at } => {
            let text = head("200 OK", "application/octet-stream", None);
            stream.write_all(text.as_bytes()).await?;
            stream.write_all(&body[..cut_at]).await?;
            stream.flush().await?;
        }
        Answer::SlowFile { body, chunk, every } => {
            let text = head("200 OK", "application/octet-stream", Some(body.len()));
            stream.write_all(text.as_bytes()).await?;
            for part in body.chunks(chunk) {
                stream.write_all(part).await?;
                stream.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
        Answer::Status(code) => {
            let text = head(&format!("{code} Whatever"), "text/plain", Some(0));
            stream.write_all(text.as_bytes()).await?;
        }
        Answer::MovedTo(location) => {
            let text = format!(
                "HTTP/1.1 301 Moved Permanently\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(text.as_bytes()).await?;
        }
        Answer::Close => {}
        Answer::IgnoresRange {
            len,
            announce,
            sent,
        } => {
            let length = usize::try_from(len).unwrap();
            let text = head(
                "200 OK",
                "application/octet-stream",
                announce.then_some(length),
            );
            stream.write_all(text.as_bytes()).await?;
            let chunk = vec![b'x'; 64 * 1024];
            let mut left = len;
            while left > 0 {
                let n = usize::try_from(left.min(chunk.len() as u64)).unwrap();
                stream.write_all(&chunk[..n]).await?;
                sent.fetch_add(n as u64, std::sync::atomic::Ordering::SeqCst);
                left -= n as u64;
            }
        }
    }
    stream.shutdown().await
}

/// Reads a request head and returns its path (without the query).
async fn read_request_path(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.lines().next()?.split(' ').nth(1)?;
    Some(target.split('?').next()?.to_string())
}

/// A project page in PEP 503 HTML linking `files` (name, bytes) stored under `/f/`.
pub fn page(files: &[(&str, &[u8])]) -> String {
    let mut links = String::new();
    for (name, bytes) in files {
        let _ = writeln!(
            links,
            "<a href=\"/f/{name}#sha256={}\">{name}</a><br/>",
            sha256(bytes)
        );
    }
    format!("<!DOCTYPE html>\n<html><body>\n<h1>Links for demo</h1>\n{links}</body></html>\n")
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
