//! The hostile-variants benchmark's driver (issue 20, item 3); `scripts/bench-hostile` builds
//! and runs it. Usage: `bench_hostile --wheelgate PATH [--pages 512] [--concurrency 8]`.
//!
//! A fake wheel-variant index on 127.0.0.1 lists torch 2.10.0 in 16 variants whose
//! `*-variants.json` is as large as a variants file may be (16 variants × 1,024 `sm_arch`
//! values, in a static namespace the machine cannot narrow, and the file's property priorities
//! listing them all backwards), and torch 2.11.0 with one past the caps (70,000 values in one
//! list, the size that once cost 6.8 s per rendering). The release `wheelgate serve`, as its own
//! process, renders the torch page for `pages` distinct machines (each `/m/<token>/` a fresh
//! rendering, as tokens cost an attacker nothing), `concurrency` at a time, while a prober asks
//! `/healthz` every 10 ms. Prints the rendering times and the `/healthz` latencies (target:
//! under 100 ms). Then a dripping variants file: torchvision 0.25.0's `*-variants.json` sends a
//! byte every 2 s (0.24.0's is read once first); 20 machines' torchvision pages in turn, each
//! timed (target: every one under 2 s; once they all hung until the client gave up).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use bytes::Bytes;
use futures_util::StreamExt;
use wheelgate_e2e::served::Served;

const TAGS: &str = "py3-none-manylinux_2_28_x86_64";
/// The variants of the file at the caps, and the values in each one's `sm_arch` list.
const VARIANTS: usize = 16;
const VALUES: usize = 1024;
/// The length of the list in the file past the caps.
const HOSTILE_VALUES: usize = 70_000;

struct Args {
    wheelgate: String,
    pages: usize,
    concurrency: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        wheelgate: String::new(),
        pages: 512,
        concurrency: 8,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--wheelgate" => args.wheelgate = value,
            "--pages" => args.pages = value.parse()?,
            "--concurrency" => args.concurrency = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    if args.wheelgate.is_empty() {
        bail!("usage: bench_hostile --wheelgate PATH [--pages 512] [--concurrency 8]");
    }
    Ok(args)
}

/// A variants file with `variants` variants listing `values` `sm_arch` values each, in the
/// static namespace `fixed`, which the file's priorities list backwards.
fn variants_file(variants: usize, values: usize) -> String {
    variants_file_shaped(variants, values, true)
}

/// [`variants_file`]; without `priorities`, the lists appear in the variants only (so a long
/// one stays under the 1 MiB a variants file may weigh, and only the cap on entries refuses it).
fn variants_file_shaped(variants: usize, values: usize, priorities: bool) -> String {
    let list = |reverse: bool| {
        let mut items: Vec<String> = (0..values).map(|i| format!("\"{i}_real\"")).collect();
        if reverse {
            items.reverse();
        }
        items.join(",")
    };
    let mut body = String::new();
    for n in 0..variants {
        let _ = write!(
            body,
            "{}\"cuda13.{n}\": {{\"fixed\": {{\"sm_arch\": [{}]}}}}",
            if n == 0 { "" } else { "," },
            list(false)
        );
    }
    if !priorities {
        return format!(
            "{{\"default-priorities\": {{\"namespace\": [\"fixed\"]}}, \"static-properties\": {{\"fixed\": {{\"sm_arch\": [\"0_real\"]}}}}, \"variants\": {{{body}}}}}"
        );
    }
    format!(
        "{{\"default-priorities\": {{\"namespace\": [\"fixed\"], \"property\": {{\"fixed\": {{\"sm_arch\": [{}]}}}}}}, \"static-properties\": {{\"fixed\": {{\"sm_arch\": [{}]}}}}, \"variants\": {{{body}}}}}",
        list(true),
        list(false)
    )
}

/// The index: torch's page and its two variants files.
async fn start_index() -> anyhow::Result<(std::net::SocketAddr, usize, usize)> {
    let at_caps = variants_file(VARIANTS, VALUES);
    let hostile = variants_file_shaped(1, HOSTILE_VALUES, false);
    let sizes = (at_caps.len(), hostile.len());
    let mut page = String::from("<!DOCTYPE html>\n<html><body>\n");
    for (version, count, file) in [("2.10.0", VARIANTS, &at_caps), ("2.11.0", 1, &hostile)] {
        for n in 0..count {
            let name = format!("torch-{version}-{TAGS}-cuda13.{n}.whl");
            let _ = writeln!(page, "<a href=\"/whl/variant/{name}\">{name}</a><br/>");
        }
        // As PyTorch's index lists them: with their sha256.
        let name = format!("torch-{version}-variants.json");
        let sha256 = wheelgate_e2e::wheels::sha256_hex(file.as_bytes());
        let _ = writeln!(
            page,
            "<a href=\"/whl/variant/{name}#sha256={sha256}\">{name}</a><br/>"
        );
    }
    page.push_str("</body></html>\n");
    // Two files with distinct contents (the cache keys files by their sha256).
    let (vision, dripping) = (variants_file(2, 4), variants_file(2, 5));
    let mut vision_page = String::from("<!DOCTYPE html>\n<html><body>\n");
    for (version, file) in [("0.24.0", &vision), ("0.25.0", &dripping)] {
        for n in 0..2 {
            let name = format!("torchvision-{version}-{TAGS}-cuda13.{n}.whl");
            let _ = writeln!(
                vision_page,
                "<a href=\"/whl/variant/{name}\">{name}</a><br/>"
            );
        }
        let name = format!("torchvision-{version}-variants.json");
        let sha256 = wheelgate_e2e::wheels::sha256_hex(file.as_bytes());
        let _ = writeln!(
            vision_page,
            "<a href=\"/whl/variant/{name}#sha256={sha256}\">{name}</a><br/>"
        );
    }
    vision_page.push_str("</body></html>\n");
    let dripping = Bytes::from(dripping);
    let files = Arc::new([
        ("/whl/variant/torchvision/".to_string(), vision_page),
        (
            "/whl/variant/torchvision-0.24.0-variants.json".to_string(),
            vision,
        ),
        ("/whl/variant/torch/".to_string(), page),
        (
            "/whl/variant/torch-2.10.0-variants.json".to_string(),
            at_caps,
        ),
        (
            "/whl/variant/torch-2.11.0-variants.json".to_string(),
            hostile,
        ),
    ]);
    let router = Router::new().fallback(move |uri: Uri| {
        let (files, dripping) = (Arc::clone(&files), dripping.clone());
        async move {
            if uri.path() == "/whl/variant/torchvision-0.25.0-variants.json" {
                return drip(dripping);
            }
            files
                .iter()
                .find(|(path, _)| path == uri.path())
                .map_or_else(
                    || StatusCode::FORBIDDEN.into_response(),
                    |(_, body)| body.clone().into_response(),
                )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((addr, sizes.0, sizes.1))
}

/// `body`, one byte every 2 s.
fn drip(body: Bytes) -> axum::response::Response {
    let len = body.len();
    let bytes = futures_util::stream::unfold(0usize, move |at| {
        let body = body.clone();
        async move {
            if at >= body.len() {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            Some((Ok::<_, std::io::Error>(body.slice(at..=at)), at + 1))
        }
    });
    axum::response::Response::builder()
        .header(axum::http::header::CONTENT_LENGTH, len)
        .body(axum::body::Body::from_stream(bytes))
        .expect("valid response")
}

/// 20 machines' torchvision pages in turn while 0.25.0's variants file drips; each one's time.
async fn dripping_phase(client: &reqwest::Client, base: &str) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for n in 1000..1020 {
        times.push(
            page(
                client,
                &format!("{base}/m/{}/simple/torchvision/", token(n)),
            )
            .await?,
        );
    }
    Ok(times)
}

/// The token of an H100 machine under driver `570.86.<n>`: a distinct machine per `n`.
fn token(n: usize) -> String {
    let machine: wheelgate_resolver::Machine = serde_json::from_str(&format!(
        r#"{{"platform":"linux-x86_64","glibc":"2.36","nvidia":{{"driver_version":"580.65.{n}","gpus":[{{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}}]}}}}"#
    ))
    .expect("a machine");
    wheelgate_resolver::token::encode(&machine)
}

/// The `p`th percentile (nearest rank below) of `sorted`, which is not empty.
fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() - 1) * p / 100]
}

fn summary(name: &str, mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return format!("| {name} | 0 | | | |");
    }
    format!(
        "| {name} | {} | {:.1} | {:.1} | {:.1} |",
        values.len(),
        percentile(&values, 50),
        percentile(&values, 99),
        values.last().copied().unwrap_or(0.0)
    )
}

/// Fetches a page; its time in milliseconds.
async fn page(client: &reqwest::Client, url: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    let response = client.get(url).send().await?;
    let status = response.status();
    let body = response.text().await?;
    if !status.is_success() {
        bail!("{url}: {status}: {body}");
    }
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let (index, at_caps, hostile) = start_index().await?;
    let dir = tempfile::tempdir()?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let config = format!(
        "pytorch_url = \"http://{index}/whl/variant\"\npypi_url = \"http://{index}/simple\"\n\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n"
    );
    let server = Served::start(&args.wheelgate, &config, dir.path()).await?;
    let base = server.url("");
    // The variants files read once (a first page), so every rendering after is CPU only.
    page(&client, &format!("{base}/m/{}/simple/torch/", token(0))).await?;
    let explain = client
        .get(format!("{base}/explain/torch/"))
        .send()
        .await?
        .text()
        .await?;
    let refused = explain.contains("more than the");

    let stop = Arc::new(AtomicBool::new(false));
    let prober = {
        let (client, stop, url) = (client.clone(), Arc::clone(&stop), format!("{base}/healthz"));
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                if client.get(&url).send().await.is_ok() {
                    latencies.push(started.elapsed().as_secs_f64() * 1000.0);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            latencies
        })
    };
    let started = Instant::now();
    let renders: Vec<anyhow::Result<f64>> = futures_util::stream::iter(1..=args.pages)
        .map(|n| {
            let (client, url) = (
                client.clone(),
                format!("{base}/m/{}/simple/torch/", token(n)),
            );
            async move { page(&client, &url).await }
        })
        .buffer_unordered(args.concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let health = prober.await?;
    let mut times = Vec::new();
    for render in renders {
        times.push(render?);
    }
    println!(
        "variants files: one at the caps ({VARIANTS} variants x {VALUES} values, {at_caps} bytes), one past them ({HOSTILE_VALUES} values, {hostile} bytes; refused: {refused})"
    );
    println!(
        "{} distinct machines' torch pages, {} at a time, in {:.2} s\n",
        args.pages,
        args.concurrency,
        elapsed.as_secs_f64()
    );
    println!("| | requests | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    println!("{}", summary("torch page, fresh rendering", times));
    let worst = health.iter().copied().fold(0.0, f64::max);
    println!("{}", summary("/healthz meanwhile", health));
    println!("\n/healthz longest wait: {worst:.1} ms (target < 100 ms)");

    let times = dripping_phase(&client, &base).await?;
    let longest = times.iter().copied().fold(0.0, f64::max);
    let explain = client
        .get(format!("{base}/m/{}/explain/torchvision/", token(1000)))
        .send()
        .await?
        .text()
        .await?;
    let from_labels = explain.contains("not read within");
    println!(
        "\ntorchvision 0.25.0's variants file dripping a byte every 2 s: 20 machines' pages in turn\n"
    );
    println!("| | requests | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    println!("{}", summary("torchvision page", times));
    println!(
        "\nlongest wait for a page: {longest:.1} ms (target < 2000 ms); 0.25.0 chosen from its labels meanwhile, as /explain/ says: {from_labels}"
    );
    Ok(())
}
