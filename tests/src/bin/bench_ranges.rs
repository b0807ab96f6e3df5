//! The non-reading range clients benchmark's driver (issue 20, item 4); `scripts/bench-ranges`
//! builds and runs it. Usage: `bench_ranges --wheelgate PATH [--clients 300]`.
//!
//! A fake upstream on 127.0.0.1 serves a 64 MiB wheel: whole, slowly (64 KiB every 20 ms), and
//! by `Range`, at once. The release `wheelgate serve`, as its own process, starts downloading it
//! for one client; then `clients` raw connections each ask a range far ahead of the download
//! (half the same 64 KiB tail, as uv reads a central directory; half distinct ranges from 16 MiB
//! to the end), all at once, and
//! never read the body. Prints the upstream range requests, wheelgate's RSS meanwhile (target:
//! under 150 MB) and that the download still completed and verified. Then a `HEAD` flood: one
//! `HEAD` for each of `heads` more 64 MiB wheels, none cached, against a 100 MiB cache limit
//! (once 27 `HEAD`s pulled 849 MB and grew the cache to 7.5 times its limit): prints the
//! upstream bytes it cost and the cache directory's peak size (targets: no more than one file,
//! the cache never above its limit).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wheelgate_e2e::served::{Served, range_of};
use wheelgate_e2e::wheels::sha256_hex;

const FILE: &str = "demo-1.0-py3-none-any.whl";
const SIZE: usize = 64 * 1024 * 1024;
/// The server's cache limit: room for one of the wheels, not two.
const CACHE_LIMIT: u64 = 100 * 1024 * 1024;

struct Args {
    wheelgate: String,
    clients: usize,
    heads: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        wheelgate: String::new(),
        clients: 300,
        heads: 30,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--wheelgate" => args.wheelgate = value,
            "--clients" => args.clients = value.parse()?,
            "--heads" => args.heads = value.parse()?,
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
    /// Bytes of file bodies handed to the server, ranges and whole files.
    sent: Arc<AtomicUsize>,
}

fn serve(upstream: &Upstream, method: &Method, uri: &Uri, headers: &HeaderMap) -> Response {
    match uri.path() {
        "/simple/demo/" => upstream.page.clone().into_response(),
        // Every `/f/` name is the same 64 MiB wheel.
        path if path.starts_with("/f/") => {
            let len = upstream.file.len();
            if method == Method::HEAD {
                return Response::builder()
                    .header(header::CONTENT_LENGTH, len)
                    .body(Body::empty())
                    .expect("valid response");
            }
            if let Some((start, end)) = range_of(headers, len) {
                upstream.ranges.fetch_add(1, Ordering::Relaxed);
                upstream.sent.fetch_add(end - start, Ordering::Relaxed);
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
            let (file, sent) = (upstream.file.clone(), Arc::clone(&upstream.sent));
            let chunks = futures_util::stream::unfold(0usize, move |at| {
                let (file, sent) = (file.clone(), Arc::clone(&sent));
                async move {
                    if at >= file.len() {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let end = (at + 64 * 1024).min(file.len());
                    sent.fetch_add(end - at, Ordering::Relaxed);
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
    // The wheel, and `heads` more names for the HEAD flood (listed without a hash: each its
    // own cache entry, as distinct wheels would be).
    let mut links = format!("<a href=\"/f/{FILE}#sha256={sha256}\">{FILE}</a>");
    for n in 0..args.heads {
        let name = format!("demo-{}.0-py3-none-any.whl", n + 2);
        let _ = write!(links, "<a href=\"/f/{name}\">{name}</a>");
    }
    let upstream = Upstream {
        page: format!("<!DOCTYPE html><html><body>{links}</body></html>"),
        file,
        ranges: Arc::default(),
        wholes: Arc::default(),
        sent: Arc::default(),
    };
    let counters = upstream.clone();
    let router = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap| {
        let response = serve(&upstream, &method, &uri, &headers);
        async move { response }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let dir = tempfile::tempdir()?;
    let config = format!(
        "pytorch_url = \"http://{addr}/whl\"\npypi_url = \"http://{addr}/simple\"\ncache_max_bytes = {CACHE_LIMIT}\n\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n"
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
    // All at once: half the same tail, half distinct ranges from 16 MiB on to the end.
    let asks = (0..args.clients).map(|n| {
        let range = if n % 2 == 0 {
            "bytes=-65536".to_string()
        } else {
            format!("bytes={}-", 16 * 1024 * 1024 + n * 4096)
        };
        let path = path.clone();
        async move { ask(server.port, &path, &range).await }
    });
    let held: Vec<tokio::net::TcpStream> = futures_util::future::join_all(asks)
        .await
        .into_iter()
        .collect::<anyhow::Result<_>>()?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (during, peak) = server.rss().context("wheelgate's RSS")?;
    let ranges = counters.ranges.load(Ordering::Relaxed);
    drop(held);
    let verified = whole.await?? == sha256;
    println!(
        "{} clients asking ranges far ahead of a 64 MiB download at once and not reading (half one 64 KiB tail, half distinct ranges from 16 MiB to the end):\n",
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
    head_flood(&server, &counters, args.heads, dir.path()).await
}

/// `heads` `HEAD`s of uncached 64 MiB wheels at once; what they cost upstream and on disk.
async fn head_flood(
    server: &Served,
    upstream: &Upstream,
    heads: usize,
    dir: &std::path::Path,
) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().no_proxy().build()?;
    let before = upstream.sent.load(Ordering::Relaxed);
    let cache = dir.join("cache").join("files");
    let size_of = |dir: &std::path::Path| -> u64 {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
    };
    let flood = futures_util::future::join_all((0..heads).map(|n| {
        let url = server.url(&format!("/files/demo/demo-{}.0-py3-none-any.whl", n + 2));
        let client = client.clone();
        async move { client.head(url).send().await.map(|r| r.status()) }
    }));
    let watch = async {
        let mut peak = 0;
        for _ in 0..30 {
            peak = peak.max(size_of(&cache));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        peak
    };
    let (answers, peak) = tokio::join!(flood, watch);
    let ok = answers
        .iter()
        .filter(|a| a.as_ref().is_ok_and(reqwest::StatusCode::is_success))
        .count();
    let sent = upstream.sent.load(Ordering::Relaxed) - before;
    println!(
        "\n{heads} HEADs of uncached 64 MiB wheels at once, cache limit {} MiB:\n",
        mib(CACHE_LIMIT)
    );
    println!("| measure | figure |");
    println!("|---|---:|");
    println!("| answered 200 | {ok} |");
    println!("| upstream bytes they cost | {sent} |");
    println!("| cache directory's peak size | {} MiB |", mib(peak));
    println!(
        "\nupstream bytes {sent} (target: at most one file, {SIZE}); cache peak {} MiB (target: at most {} MiB)",
        mib(peak),
        mib(CACHE_LIMIT)
    );
    Ok(())
}
