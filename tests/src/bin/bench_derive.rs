//! The derived-wheel benchmark's driver; `scripts/bench-derive` builds and runs it. Usage:
//! `bench_derive [--mb 2048] [--runs 3]`.
//!
//! Two wheels of the same size behind the proxy, on 127.0.0.1: one on a plain index (served as
//! the upstream's file) and one on a per-build page (served derived: its METADATA gains a torch
//! pin, `crate::derive`). Each run starts a proxy with an empty cache and downloads each wheel
//! cold (first request: ranged reads to plan, then the upstream download streamed through the
//! splice) and warm. Prints the times and the cold ratio derived/plain (target: at most 1.2).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wheelgate_e2e::find_links::FindLinks;
use wheelgate_e2e::proxy::{Proxy, source};
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::{BuiltWheel, WheelSpec, sha256_hex};

struct Args {
    mb: usize,
    runs: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args { mb: 2048, runs: 3 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--mb" => args.mb = value.parse()?,
            "--runs" => args.runs = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    Ok(args)
}

/// A wheel of `name` and `version` carrying `mb` MiB of incompressible bytes, stored.
fn big_wheel(name: &str, version: &str, tags: &str, mb: usize) -> BuiltWheel {
    use std::io::Write as _;
    let module = name.replace('-', "_");
    let dist_info = format!("{module}-{version}.dist-info");
    let metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    let mut out = std::io::Cursor::new(Vec::with_capacity(mb * 1024 * 1024 + 4096));
    let mut zip = zip::ZipWriter::new(&mut out);
    let stored = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(false);
    zip.start_file(format!("{module}/blob.bin"), stored)
        .expect("zip entry");
    // xorshift: fast, incompressible enough, the same every run.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunk = vec![0u8; 1024 * 1024];
    for _ in 0..mb {
        for word in chunk.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        zip.write_all(&chunk).expect("zip write");
    }
    for (member, content) in [
        ("METADATA", metadata.as_str()),
        ("WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"),
        ("RECORD", ""),
    ] {
        zip.start_file(format!("{dist_info}/{member}"), stored)
            .expect("zip entry");
        zip.write_all(content.as_bytes()).expect("zip write");
    }
    zip.finish().expect("zip finish");
    let bytes = out.into_inner();
    BuiltWheel {
        filename: format!("{module}-{version}-{tags}.whl"),
        sha256: sha256_hex(&bytes),
        metadata_sha256: sha256_hex(metadata.as_bytes()),
        metadata: metadata.into_bytes(),
        bytes,
    }
}

/// The link the proxy's page gives for `project`'s only file.
async fn link(client: &reqwest::Client, base: &str, project: &str) -> anyhow::Result<String> {
    let page = client
        .get(format!("{base}/simple/{project}/"))
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await?
        .text()
        .await?;
    let page: serde_json::Value = serde_json::from_str(&page)?;
    let url = page["files"][0]["url"]
        .as_str()
        .with_context(|| format!("no file on {project}'s page: {page}"))?;
    Ok(format!("{base}{url}"))
}

/// Downloads `url` whole; its time and length.
async fn download(client: &reqwest::Client, url: &str) -> anyhow::Result<(Duration, u64)> {
    let started = Instant::now();
    let mut response = client.get(url).send().await?.error_for_status()?;
    let mut len = 0u64;
    while let Some(chunk) = response.chunk().await? {
        len += chunk.len() as u64;
    }
    Ok((started.elapsed(), len))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    eprintln!("bench-derive: building two wheels of {} MiB", args.mb);
    let plain = big_wheel("bigplain", "1.0", "py3-none-any", args.mb);
    let bound = big_wheel("bigbound", "1.0+pt29cpu", "py3-none-linux_x86_64", args.mb);
    let torch = WheelSpec::new("torch", "2.9.0+cpu", "py3-none-manylinux_2_28_x86_64").build();
    let upstreams = Upstreams::start().await;
    let pytorch = SimpleIndex::start(vec![torch]).await;
    let internal = SimpleIndex::start(vec![plain.clone()]).await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = FindLinks::start(vec![("torch-2.9.0+cpu.html".to_string(), vec![bound])]).await;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let mut cold = [Vec::new(), Vec::new()];
    let mut warm = [Vec::new(), Vec::new()];
    for run in 0..args.runs {
        let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
        let sources = vec![
            source("internal", &internal.url(), &["bigplain"]),
            source("pyg", &pyg.template(), &["bigbound"]),
        ];
        let proxy = Proxy::start_with(&upstreams, move |config| {
            config.machine = Some(serde_json::from_str(r#"{"platform":"linux-x86_64"}"#).unwrap());
            config.pytorch_url = pytorch_url;
            config.pypi_url = pypi_url;
            config.sources = sources;
            config.cache_max_bytes = 64 * 1024 * 1024 * 1024;
        })
        .await;
        let base = proxy.base();
        // Alternate which goes first, so neither always meets a cold page cache of the disk.
        let order: [usize; 2] = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for case in order {
            let project = ["bigplain", "bigbound"][case];
            let url = link(&client, &base, project).await?;
            let (first, len) = download(&client, &url).await?;
            let (again, _) = download(&client, &url).await?;
            eprintln!(
                "bench-derive: run {} {project}: cold {:.2} s, warm {:.2} s, {len} bytes",
                run + 1,
                first.as_secs_f64(),
                again.as_secs_f64()
            );
            cold[case].push(first.as_secs_f64());
            warm[case].push(again.as_secs_f64());
        }
    }
    let mb = f64::from(u32::try_from(args.mb)?);
    println!(
        "| wheel ({} MiB, {} runs) | cold median s | cold MiB/s | warm median s |",
        args.mb, args.runs
    );
    println!("|---|---:|---:|---:|");
    for (case, name) in ["plain (upstream's file)", "derived (torch pin added)"]
        .iter()
        .enumerate()
    {
        let cold_median = median(cold[case].clone());
        println!(
            "| {name} | {cold_median:.2} | {:.0} | {:.2} |",
            mb / cold_median,
            median(warm[case].clone())
        );
    }
    println!(
        "\ncold derived / cold plain: {:.2} (target <= 1.20)",
        median(cold[1].clone()) / median(cold[0].clone())
    );
    Ok(())
}
