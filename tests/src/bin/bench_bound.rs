//! The bound-by-metadata page benchmark's driver; `scripts/bench-bound` builds and runs it.
//! Usage: `bench_bound [--versions 25] [--runs 5]`.
//!
//! A PyTorch index on 127.0.0.1 with torch (four releases, four CUDA builds each) and an
//! xformers page of `versions` versions × four builds × two platforms, every wheel pinning its
//! torch release in its metadata (PEP 658 files served). Each run starts a proxy with an empty
//! cache for an H100 under driver 570 and times the xformers page: straight from the upstream,
//! through the proxy cold (torch's page fetched and one metadata file read per build to bind
//! it, `server/binding/`) and warm. Prints the medians and the cold cost over a direct fetch
//! (target: at most 50 ms).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

const H100_DRIVER_570: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
const BACKENDS: [&str; 4] = ["cu126", "cu128", "cu129", "cu130"];
const TORCH: [&str; 4] = ["2.6.0", "2.7.0", "2.8.0", "2.9.0"];
const PLATFORMS: [&str; 2] = [
    "cp312-cp312-manylinux_2_28_x86_64",
    "cp312-cp312-manylinux_2_28_aarch64",
];

struct Args {
    versions: usize,
    runs: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        versions: 25,
        runs: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--versions" => args.versions = value.parse()?,
            "--runs" => args.runs = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    Ok(args)
}

/// The wheels: torch's releases and builds, and xformers' versions, each pinning one torch.
fn wheels(versions: usize) -> Vec<wheelgate_e2e::wheels::BuiltWheel> {
    let mut wheels = Vec::new();
    for torch in TORCH {
        for backend in BACKENDS {
            for platform in PLATFORMS {
                wheels
                    .push(WheelSpec::new("torch", &format!("{torch}+{backend}"), platform).build());
            }
        }
    }
    for n in 0..versions {
        let torch = TORCH[n % TORCH.len()];
        for backend in BACKENDS {
            for platform in PLATFORMS {
                wheels.push(
                    WheelSpec::new("xformers", &format!("0.0.{}+{backend}", 10 + n), platform)
                        .requires(&format!("torch=={torch}"))
                        .build(),
                );
            }
        }
    }
    wheels
}

/// Fetches `url` as PEP 691 JSON; its time and length.
async fn fetch(client: &reqwest::Client, url: &str) -> anyhow::Result<(Duration, usize)> {
    let started = Instant::now();
    let body = client
        .get(url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    Ok((started.elapsed(), body.len()))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let upstreams = Upstreams::start().await;
    let pytorch = SimpleIndex::start(wheels(args.versions)).await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let direct_url = format!("{}/xformers/", pytorch.url());
    // Warm the upstream's own rendering and the connection once.
    fetch(&client, &direct_url).await?;
    let (mut direct, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let mut files = 0;
    for run in 0..args.runs {
        let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
        let proxy = Proxy::start_with(&upstreams, move |config| {
            config.machine = Some(serde_json::from_str(H100_DRIVER_570).unwrap());
            config.pytorch_url = pytorch_url;
            config.pypi_url = pypi_url;
        })
        .await;
        let page = format!("{}/simple/xformers/", proxy.base());
        let (straight, _) = fetch(&client, &direct_url).await?;
        let (first, len) = fetch(&client, &page).await?;
        let (again, _) = fetch(&client, &page).await?;
        let body: serde_json::Value = serde_json::from_slice(
            &client
                .get(&page)
                .header("Accept", "application/vnd.pypi.simple.v1+json")
                .send()
                .await?
                .bytes()
                .await?,
        )?;
        files = body["files"].as_array().map_or(0, Vec::len);
        eprintln!(
            "bench-bound: run {}: direct {:.1} ms, cold {:.1} ms, warm {:.1} ms, {len} bytes, {files} files kept",
            run + 1,
            ms(straight),
            ms(first),
            ms(again)
        );
        direct.push(ms(straight));
        cold.push(ms(first));
        warm.push(ms(again));
    }
    let listed = args.versions * BACKENDS.len() * PLATFORMS.len();
    println!(
        "| xformers page ({listed} files, {} builds to bind, {} runs) | median ms | min | max |",
        args.versions * BACKENDS.len(),
        args.runs
    );
    println!("|---|---:|---:|---:|");
    for (name, values) in [
        ("direct from the upstream", &direct),
        ("through the proxy, cold", &cold),
        ("through the proxy, warm", &warm),
    ] {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(0.0, f64::max);
        println!(
            "| {name} | {:.1} | {min:.1} | {max:.1} |",
            median(values.clone())
        );
    }
    println!(
        "\ncold over direct: {:.1} ms (target <= 50 ms); {files} files kept for the machine",
        median(cold.clone()) - median(direct.clone())
    );
    Ok(())
}
