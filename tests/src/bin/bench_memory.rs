//! The long mixed run for memory (issue 21, item 6); `scripts/bench-memory` builds and runs it.
//! Usage: `bench_memory --wheelgate PATH [--pages 90] [--files 256] [--file-mib 8] [--secs 60]`.
//!
//! A fake general index on 127.0.0.1 in PyPI's JSON format serves `pages` distinct projects,
//! each a page of about 2 MB (3,100 files with every PEP 691/658/700/740 field PyPI sends), and
//! `files` distinct wheels of `file-mib` MiB (deterministic bytes) listed on them. The release
//! `wheelgate serve`, as its own process with a cache limit of half the files, is asked:
//!
//! 1. every page, as JSON (pip) and as HTML (old pips), 4 at a time;
//! 2. every file, whole, 8 at a time, each body checked against its sha256;
//! 3. for `secs`, 8 clients at random: a page in either form, a whole file, or a range of one;
//! 4. nothing, for 5 s.
//!
//! Prints wheelgate's RSS after each phase and its peak (target: under 150 MB after any amount
//! of traffic), and fails on a body that does not match its hash.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use sha2::{Digest, Sha256};
use wheelgate_e2e::served::{Served, range_of};

/// Files listed on each page: about 2 MB of JSON, as boto3's or botocore's pages on PyPI.
const FILES_PER_PAGE: usize = 3100;
/// What pip sends for a page.
const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";

struct Args {
    wheelgate: String,
    pages: usize,
    files: usize,
    file_mib: usize,
    secs: u64,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        wheelgate: String::new(),
        pages: 90,
        files: 256,
        file_mib: 8,
        secs: 60,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--wheelgate" => args.wheelgate = value,
            "--pages" => args.pages = value.parse()?,
            "--files" => args.files = value.parse()?,
            "--file-mib" => args.file_mib = value.parse()?,
            "--secs" => args.secs = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    if args.wheelgate.is_empty() {
        bail!("usage: bench_memory --wheelgate PATH [--pages 90] [--files 256] [--secs 60]");
    }
    Ok(args)
}

/// A real wheel's bytes: deterministic and incompressible, as the soak's.
fn file_bytes(n: usize, len: usize) -> Vec<u8> {
    wheelgate_e2e::soak::corpus::bytes(n as u64 + 1, len)
}

/// The upstream: pages by project number, and the real files' hashes by file number.
struct Upstream {
    addr: std::net::SocketAddr,
    pages: usize,
    /// sha256 of each real file, which page `n % pages` lists first among its files.
    hashes: Vec<String>,
    file_len: usize,
}

impl Upstream {
    /// Page `p` in PEP 691 JSON: its real files first, then the listed-only ones.
    fn page(&self, p: usize) -> String {
        let name = format!("big{p:03}");
        let mut files = String::new();
        let mut versions = String::new();
        let real: Vec<usize> = (p..self.hashes.len()).step_by(self.pages).collect();
        for i in 0..FILES_PER_PAGE {
            let version = format!("1.{}.{}", i / 2 / 100, i / 2 % 100);
            if i % 2 == 0 {
                let _ = write!(versions, "{}\"{version}\"", if i == 0 { "" } else { "," });
            }
            let (filename, sha256, size) = match real.get(i) {
                Some(&n) => (
                    format!("{name}-0.{n}-py3-none-any.whl"),
                    self.hashes[n].clone(),
                    self.file_len,
                ),
                None if i % 2 == 0 => (
                    format!("{name}-{version}-py3-none-any.whl"),
                    hex::encode(Sha256::digest(format!("{p}/{i}"))),
                    100_000 + i,
                ),
                None => (
                    format!("{name}-{version}.tar.gz"),
                    hex::encode(Sha256::digest(format!("{p}/{i}"))),
                    90_000 + i,
                ),
            };
            let meta = hex::encode(Sha256::digest(format!("m{p}/{i}")));
            let _ = write!(
                files,
                "{}{{\"core-metadata\":{{\"sha256\":\"{meta}\"}},\"data-dist-info-metadata\":{{\"sha256\":\"{meta}\"}},\"filename\":\"{filename}\",\"hashes\":{{\"sha256\":\"{sha256}\"}},\"provenance\":\"http://{addr}/integrity/{name}/{version}/{filename}/provenance\",\"requires-python\":\">=3.9\",\"size\":{size},\"upload-time\":\"2025-06-0{}T19:21:51.471478Z\",\"url\":\"http://{addr}/packages/{}/{}/{}/{filename}\",\"yanked\":false}}",
                if i == 0 { "" } else { "," },
                1 + i % 9,
                &sha256[..2],
                &sha256[2..4],
                &sha256[4..60],
                addr = self.addr,
            );
        }
        for n in &real {
            let _ = write!(versions, ",\"0.{n}\"");
        }
        format!(
            "{{\"meta\":{{\"_last-serial\":{},\"api-version\":\"1.4\"}},\"name\":\"{name}\",\"files\":[{files}],\"versions\":[{versions}]}}",
            30_000_000 + p
        )
    }

    fn serve(&self, uri: &Uri, headers: &HeaderMap) -> Response {
        let path = uri.path();
        if let Some(project) = path
            .strip_prefix("/simple/big")
            .and_then(|rest| rest.strip_suffix('/'))
            && let Ok(p) = project.parse::<usize>()
            && p < self.pages
        {
            return Response::builder()
                .header(header::CONTENT_TYPE, "application/vnd.pypi.simple.v1+json")
                .body(Body::from(self.page(p)))
                .expect("valid response");
        }
        let Some(n) = path
            .rsplit('/')
            .next()
            .and_then(|name| name.split('-').nth(1))
            .and_then(|version| version.strip_prefix("0."))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| path.starts_with("/packages/") && *n < self.hashes.len())
        else {
            return StatusCode::NOT_FOUND.into_response();
        };
        let body = file_bytes(n, self.file_len);
        if let Some((start, end)) = range_of(headers, body.len()) {
            return Response::builder()
                .status(StatusCode::PARTIAL_CONTENT)
                .header(
                    header::CONTENT_RANGE,
                    format!("bytes {start}-{}/{}", end - 1, body.len()),
                )
                .body(Body::from(body[start..end].to_vec()))
                .expect("valid response");
        }
        Response::builder()
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body))
            .expect("valid response")
    }
}

/// Bytes in MiB with one decimal, as text.
fn mib(bytes: u64) -> String {
    let tenths = bytes * 10 / (1024 * 1024);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// What the clients ask for.
struct Clients {
    http: reqwest::Client,
    base: String,
    pages: usize,
    /// Each real file's link through wheelgate and its sha256, as the proxy's pages list them.
    files: Vec<(String, String)>,
    /// Each file's length.
    file_len: usize,
}

impl Clients {
    async fn page(&self, p: usize, json: bool) -> anyhow::Result<String> {
        let accept = if json { PIP_ACCEPT } else { "text/html" };
        let url = format!("{}/simple/big{p:03}/", self.base);
        let response = self
            .http
            .get(&url)
            .header(header::ACCEPT, accept)
            .header(header::ACCEPT_ENCODING, "gzip, deflate")
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("{url}: {status}");
        }
        Ok(body)
    }

    async fn file(&self, n: usize) -> anyhow::Result<()> {
        let (url, sha256) = &self.files[n];
        let mut response = self.http.get(url).send().await?.error_for_status()?;
        let mut hasher = Sha256::new();
        while let Some(chunk) = response.chunk().await? {
            hasher.update(&chunk);
        }
        if hex::encode(hasher.finalize()) != *sha256 {
            bail!("{url}: the body does not match its sha256");
        }
        Ok(())
    }

    async fn range(&self, n: usize, seed: usize) -> anyhow::Result<()> {
        let (url, _) = &self.files[n];
        // Within the file whatever its size (a range past its end would be answered short).
        let start = seed % (self.file_len - 65_536).clamp(1, 1024 * 1024);
        let response = self
            .http
            .get(url)
            .header(header::RANGE, format!("bytes={start}-{}", start + 65_535))
            .send()
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        if status != StatusCode::PARTIAL_CONTENT || body.len() != 65_536 {
            bail!("{url}: range answered {status} with {} bytes", body.len());
        }
        Ok(())
    }

    /// One random request of the mixed phase.
    async fn any(&self, seed: usize) -> anyhow::Result<()> {
        match seed % 8 {
            0..=3 => self
                .page(seed / 8 % self.pages, seed.is_multiple_of(2))
                .await
                .map(drop),
            4 | 5 => self.file(seed / 8 % self.files.len()).await,
            _ => self.range(seed / 8 % self.files.len(), seed).await,
        }
    }
}

/// Reads each real file's link and hash from the proxy's JSON pages.
fn links(page: &str, base: &str) -> anyhow::Result<Vec<(usize, String, String)>> {
    let json: serde_json::Value = serde_json::from_str(page)?;
    let mut out = Vec::new();
    for file in json["files"].as_array().context("no files")? {
        let filename = file["filename"].as_str().context("no filename")?;
        let Some(n) = filename
            .split('-')
            .nth(1)
            .and_then(|version| version.strip_prefix("0."))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let url = file["url"].as_str().context("no url")?;
        let url = if url.starts_with("http") {
            url.to_string()
        } else {
            reqwest::Url::parse(base)?.join(url)?.to_string()
        };
        let sha256 = file["hashes"]["sha256"].as_str().context("no sha256")?;
        out.push((n, url, sha256.to_string()));
    }
    Ok(out)
}

/// Starts the upstream on 127.0.0.1; its address and the size of one page.
async fn start_upstream(args: &Args) -> anyhow::Result<(std::net::SocketAddr, usize)> {
    let file_len = args.file_mib * 1024 * 1024;
    let hashes: Vec<String> = (0..args.files)
        .map(|n| hex::encode(Sha256::digest(file_bytes(n, file_len))))
        .collect();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let upstream = Arc::new(Upstream {
        addr,
        pages: args.pages,
        hashes,
        file_len,
    });
    let sample = upstream.page(0).len();
    let router = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let upstream = Arc::clone(&upstream);
        async move {
            tokio::task::spawn_blocking(move || upstream.serve(&uri, &headers))
                .await
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((addr, sample))
}

/// Phase 1: every page in both forms; records each real file's link through the proxy.
async fn every_page(clients: &mut Clients) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<(String, String)>> =
        futures_util::stream::iter(0..clients.pages)
            .map(|p| {
                let clients = &*clients;
                async move { Ok((clients.page(p, true).await?, clients.page(p, false).await?)) }
            })
            .buffer_unordered(4)
            .collect()
            .await;
    let mut found = 0;
    for result in results {
        let (json, _) = result?;
        for (n, url, sha256) in links(&json, &clients.base)? {
            clients.files[n] = (url, sha256);
            found += 1;
        }
    }
    if found != clients.files.len() {
        bail!(
            "the pages list {found} of the {} files",
            clients.files.len()
        );
    }
    Ok(())
}

/// Phase 2: every file, whole.
async fn every_file(clients: &Arc<Clients>) -> anyhow::Result<()> {
    let downloads: Vec<anyhow::Result<()>> = futures_util::stream::iter(0..clients.files.len())
        .map(|n| {
            let clients = Arc::clone(clients);
            async move { clients.file(n).await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    downloads.into_iter().collect()
}

/// Phase 3: 8 clients asking at random for `secs`; how many requests they made.
async fn mixed(clients: &Arc<Clients>, secs: u64) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let requests = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for worker in 0..8usize {
        let (clients, requests) = (Arc::clone(clients), Arc::clone(&requests));
        workers.push(tokio::spawn(async move {
            let mut seed = worker.wrapping_mul(2_654_435_761) + 12_345;
            while Instant::now() < deadline {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                clients.any(seed).await?;
                requests.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(requests.load(Ordering::Relaxed))
}

/// Samples the server's RSS every 100 ms into `peak` until `stop`.
fn sample_peak(
    server: &Arc<Served>,
    peak: &Arc<AtomicU64>,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let (server, peak, stop) = (Arc::clone(server), Arc::clone(peak), Arc::clone(stop));
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            if let Some((rss, _)) = server.rss() {
                peak.fetch_max(rss, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let (addr, sample) = start_upstream(&args).await?;
    let dir = tempfile::tempdir()?;
    let cache_limit = (args.files * args.file_mib * 1024 * 1024 / 2).max(64 * 1024 * 1024);
    let config = format!(
        "pytorch_url = \"http://{addr}/whl\"\npypi_url = \"http://{addr}/simple\"\ncache_max_bytes = {cache_limit}\n\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n"
    );
    let server = Arc::new(Served::start(&args.wheelgate, &config, dir.path()).await?);
    let rss = || server.rss().map_or(0, |(rss, _)| rss);
    let (peak, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let sampler = sample_peak(&server, &peak, &stop);
    let mut report = vec![("started".to_string(), rss(), 0.0)];
    let mut clients = Clients {
        http: reqwest::Client::builder().no_proxy().gzip(true).build()?,
        base: server.url(""),
        pages: args.pages,
        files: vec![(String::new(), String::new()); args.files],
        file_len: args.file_mib * 1024 * 1024,
    };

    let started = Instant::now();
    every_page(&mut clients).await?;
    let phase = format!(
        "{} pages of {} KB, as JSON and HTML",
        args.pages,
        sample / 1000
    );
    report.push((phase, rss(), started.elapsed().as_secs_f64()));

    let started = Instant::now();
    let clients = Arc::new(clients);
    every_file(&clients).await?;
    let phase = format!(
        "{} files of {} MiB, whole ({} MiB cache)",
        args.files,
        args.file_mib,
        cache_limit / (1024 * 1024)
    );
    report.push((phase, rss(), started.elapsed().as_secs_f64()));

    let started = Instant::now();
    let requests = mixed(&clients, args.secs).await?;
    let phase = format!("mixed: {requests} pages, files and ranges at random");
    report.push((phase, rss(), started.elapsed().as_secs_f64()));
    tokio::time::sleep(Duration::from_secs(5)).await;
    report.push(("idle".to_string(), rss(), 5.0));
    stop.store(true, Ordering::Relaxed);
    sampler.await?;
    let peak = peak
        .load(Ordering::Relaxed)
        .max(server.rss().map_or(0, |(_, hwm)| hwm));

    println!("| phase | took | wheelgate RSS after |");
    println!("| --- | --- | --- |");
    for (phase, rss, secs) in &report {
        println!("| {phase} | {secs:.1} s | {} MiB |", mib(*rss));
    }
    let met = if peak < 150 * 1000 * 1000 {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "\npeak RSS {} MiB ({} kB; target under 150 MB: {met})",
        mib(peak),
        peak / 1000
    );
    Ok(())
}
