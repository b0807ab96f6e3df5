//! The non-reading range clients benchmark's driver (issue 20, item 4); `scripts/bench-ranges`
//! builds and runs it. Usage: `bench_ranges --wheelgate PATH [--clients 300]`.
//!
//! A fake upstream on 127.0.0.1 serves a 64 MiB wheel: whole, slowly (64 KiB every 20 ms), and
//! by `Range`, at once. The release `wheelgate serve`, as its own process, starts downloading it
//! for one client; then `clients` raw connections each ask a range far ahead of the download
//! (half the same 64 KiB tail, as uv reads a central directory; half distinct 2 MiB ranges) and
//! never read the body. Prints the upstream range requests, wheelgate's RSS meanwhile (target:
//! under 150 MB) and that the download still completed and verified.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wheelgate_e2e::served::Served;
use wheelgate_e2e::wheels::sha256_hex;

const FILE: &str = "demo-1.0-py3-none-any.whl";
const SIZE: usize = 64 * 1024 * 1024;

struct Args {
    wheelgate: String,
    clients: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        wheelgate: String::new(),
        clients: 300,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--wheelgate" => args.wheelgate = value,
            "--clients" => args.clients = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    if args.wheelgate.is_empty() {
        bail!("usage: bench_ranges --wheelgate PATH [--clients 300]");
    }
    Ok(args)
}

#[derive(Clone)]
struct Upstream {
    file: Bytes,
    page: String,
    ranges: Arc<AtomicUsize>,
    wholes: Arc<AtomicUsize>,
}

/// `bytes=a-b` or `bytes=-n` of a file `len` long, as `start..end`.
fn range_of(headers: &HeaderMap, len: usize) -> Option<(usize, usize)> {
    let value = headers
        .get(header::RANGE)?
        .to_str()
        .ok()?
        .strip_prefix("bytes=")?;
    let (a, b) = value.split_once('-')?;
    if a.is_empty() {
        let n: usize = b.parse().ok()?;
        return Some((len.saturating_sub(n), len));
    }
    let start: usize = a.parse().ok()?;
    let end = if b.is_empty() {
        len
    } else {
        b.parse::<usize>().ok()? + 1
    };
    (start < end && end <= len).then_some((start, end))
}

fn serve(upstream: &Upstream, uri: &Uri, headers: &HeaderMap) -> Response {
    match uri.path() {
        "/simple/demo/" => upstream.page.clone().into_response(),
        path if path == format!("/f/{FILE}") => {
            let len = upstream.file.len();
            if let Some((start, end)) = range_of(headers, len) {
                upstream.ranges.fetch_add(1, Ordering::Relaxed);
                return Response::builder()
                    .status(StatusCode::PARTIAL_CONTENT)
                    .header(
                        header::CONTENT_RANGE,
                        format!("bytes {start}-{}/{len}", end - 1),
                    )
                    .header(header::CONTENT_LENGTH, end - start)
                    .body(Body::from(upstream.file.slice(start..end)))
                    .expect("valid response");
            }
            upstream.wholes.fetch_add(1, Ordering::Relaxed);
            let file = upstream.file.clone();
            let chunks = futures_util::stream::unfold(0usize, move |at| {
                let file = file.clone();
                async move {
                    if at >= file.len() {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let end = (at + 64 * 1024).min(file.len());
                    Some((Ok::<_, std::io::Error>(file.slice(at..end)), end))
                }
            });
            Response::builder()
                .header(header::CONTENT_LENGTH, len)
                .body(Body::from_stream(chunks))
                .expect("valid response")
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Asks `range` of `path` on 127.0.0.1:`port`, reads the status line, and never reads further.
async fn ask(port: u16, path: &str, range: &str) -> anyhow::Result<tokio::net::TcpStream> {
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: bench\r\nRange: {range}\r\n\r\n");
    socket.write_all(request.as_bytes()).await?;
    let mut head = [0u8; 12];
    socket.read_exact(&mut head).await?;
    if &head != b"HTTP/1.1 206" {
        bail!("{range}: {}", String::from_utf8_lossy(&head));
    }
    Ok(socket)
}

/// Bytes in MiB with one decimal, as text.
fn mib(bytes: u64) -> String {
    let tenths = bytes * 10 / (1024 * 1024);
    format!("{}.{}", tenths / 10, tenths % 10)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let file: Bytes = (0..SIZE)
        .map(|i| u8::try_from((i * 31 + i / 4093) % 251).expect("below 251"))
        .collect::<Vec<u8>>()
        .into();
    let sha256 = sha256_hex(&file);
    let upstream = Upstream {
        page: format!(
            "<!DOCTYPE html><html><body><a href=\"/f/{FILE}#sha256={sha256}\">{FILE}</a></body></html>"
        ),
        file,
        ranges: Arc::default(),
        wholes: Arc::default(),
    };
    let counters = upstream.clone();
    let router = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let response = serve(&upstream, &uri, &headers);
        async move { response }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let dir = tempfile::tempdir()?;
    let config = format!(
        "pytorch_url = \"http://{addr}/whl\"\npypi_url = \"http://{addr}/simple\"\n\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n"
    );
    let server = Served::start(&args.wheelgate, &config, dir.path()).await?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    client
        .get(server.url("/simple/demo/"))
        .send()
        .await?
        .error_for_status()?;
    let (idle, _) = server.rss().context("wheelgate's RSS")?;
    let path = format!("/files/demo/{FILE}");
    // One client downloads the whole file (about 20 s upstream), reading it as it comes.
    let whole = {
        let (client, url) = (client.clone(), server.url(&path));
        tokio::spawn(async move {
            let body = client
                .get(url)
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
            Ok::<_, reqwest::Error>(sha256_hex(&body))
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut held = Vec::with_capacity(args.clients);
    for n in 0..args.clients {
        let range = if n % 2 == 0 {
            "bytes=-65536".to_string()
        } else {
            let start = 32 * 1024 * 1024 + (n % 16) * 2 * 1024 * 1024 + n;
            format!("bytes={start}-{}", start + 2 * 1024 * 1024 - 1)
        };
        held.push(ask(server.port, &path, &range).await?);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (during, peak) = server.rss().context("wheelgate's RSS")?;
    let ranges = counters.ranges.load(Ordering::Relaxed);
    drop(held);
    let verified = whole.await?? == sha256;
    println!(
        "{} clients asking ranges far ahead of a 64 MiB download and not reading (half one 64 KiB tail, half distinct 2 MiB ranges):\n",
        args.clients
    );
    println!("| measure | figure |");
    println!("|---|---:|");
    println!("| upstream range requests | {ranges} |");
    println!(
        "| upstream whole downloads | {} |",
        counters.wholes.load(Ordering::Relaxed)
    );
    println!("| wheelgate RSS before | {} MiB |", mib(idle));
    println!(
        "| wheelgate RSS with the clients held | {} MiB |",
        mib(during)
    );
    println!("| wheelgate peak RSS | {} MiB |", mib(peak));
    println!("| the download completed, sha256 verified | {verified} |");
    println!("\npeak RSS {} MiB (target < 150 MB)", mib(peak));
    if !verified {
        bail!("the download did not verify");
    }
    Ok(())
}
