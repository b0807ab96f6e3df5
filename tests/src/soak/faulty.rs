//! The soak's upstream, on raw sockets: a schedule of phases, each answering page and file
//! requests its own way. Every phase is something a real upstream (or the network to it) does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::corpus::SoakFile;

/// What the upstream does during a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Healthy,
    /// Page requests are accepted and never answered; files are served.
    StallPages,
    /// Pages arrive one byte every 200 ms; files are served.
    DripPages,
    /// Every connection is closed without an answer.
    Reset,
    /// Every request is answered `503`.
    Unavailable,
    /// Pages come back empty or as garbage with a `200`; files are served.
    BadPages,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Healthy => "healthy",
            Phase::StallPages => "stall",
            Phase::DripPages => "drip",
            Phase::Reset => "reset",
            Phase::Unavailable => "503",
            Phase::BadPages => "bad pages",
        }
    }

    /// Whether page requests get no usable answer in this phase.
    pub fn pages_broken(self) -> bool {
        self != Phase::Healthy
    }
}

/// The cycle, 60 s long, repeated: half of it faulty.
pub const SCHEDULE: [(Phase, u64); 8] = [
    (Phase::Healthy, 10),
    (Phase::StallPages, 8),
    (Phase::Healthy, 6),
    (Phase::Reset, 6),
    (Phase::Healthy, 6),
    (Phase::BadPages, 8),
    (Phase::Unavailable, 6),
    (Phase::DripPages, 10),
];

/// The phase at `elapsed` since the start.
pub fn phase_at(elapsed: Duration) -> Phase {
    let cycle: u64 = SCHEDULE.iter().map(|(_, secs)| secs).sum();
    let mut at = elapsed.as_secs() % cycle;
    for (phase, secs) in SCHEDULE {
        if at < secs {
            return phase;
        }
        at -= secs;
    }
    Phase::Healthy
}

struct Shared {
    pages: HashMap<String, String>,
    files: HashMap<String, SoakFile>,
    started: Instant,
    /// Before `warm_until` the upstream is healthy, so the clients can warm the cache.
    warm_until: Duration,
}

/// Starts the upstream; returns its address. Runs until the process ends.
pub async fn start(files: &[SoakFile], warm_until: Duration) -> SocketAddr {
    let mut pages = HashMap::new();
    for file in files {
        pages
            .entry(format!("/simple/{}/", file.project))
            .or_insert_with(|| super::corpus::page(files, &file.project));
    }
    let shared = Arc::new(Shared {
        pages,
        files: files
            .iter()
            .map(|f| (format!("/f/{}", f.filename), f.clone()))
            .collect(),
        started: Instant::now(),
        warm_until,
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            tokio::spawn(serve(stream, Arc::clone(&shared)));
        }
    });
    addr
}

impl Shared {
    fn phase(&self) -> Phase {
        let elapsed = self.started.elapsed();
        if elapsed < self.warm_until {
            Phase::Healthy
        } else {
            phase_at(elapsed.saturating_sub(self.warm_until))
        }
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some(path) = read_path(&mut stream).await else {
        return;
    };
    let phase = shared.phase();
    let is_page = path.starts_with("/simple/");
    let _ = match phase {
        Phase::Reset => Ok(()),
        Phase::Unavailable => {
            write(&mut stream, "503 Service Unavailable", "text/plain", b"").await
        }
        Phase::StallPages if is_page => {
            tokio::time::sleep(Duration::from_mins(2)).await;
            Ok(())
        }
        Phase::BadPages if is_page => {
            let body: &[u8] = if path.len() % 2 == 0 {
                b""
            } else {
                b"\x00\xff<<garbage>> <a href="
            };
            write(&mut stream, "200 OK", "text/html", body).await
        }
        Phase::DripPages if is_page => match shared.pages.get(&path) {
            Some(page) => drip(&mut stream, page.as_bytes()).await,
            None => write(&mut stream, "404 Not Found", "text/plain", b"").await,
        },
        _ => answer(&mut stream, &shared, &path).await,
    };
    let _ = stream.shutdown().await;
}

async fn answer(stream: &mut TcpStream, shared: &Shared, path: &str) -> std::io::Result<()> {
    if let Some(page) = shared.pages.get(path) {
        return write(stream, "200 OK", "text/html", page.as_bytes()).await;
    }
    if let Some(name) = path.strip_suffix(".metadata")
        && let Some(file) = shared.files.get(name)
    {
        return write(stream, "200 OK", "text/plain", file.metadata.as_bytes()).await;
    }
    if let Some(file) = shared.files.get(path) {
        return write(stream, "200 OK", "application/octet-stream", &file.bytes()).await;
    }
    write(stream, "404 Not Found", "text/plain", b"").await
}

async fn write(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await
}

async fn drip(stream: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    for byte in body {
        stream.write_all(&[*byte]).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

async fn read_path(stream: &mut TcpStream) -> Option<String> {
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
