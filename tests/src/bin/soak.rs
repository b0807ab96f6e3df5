//! The soak benchmark's driver; `scripts/soak` builds and runs it. Usage:
//! `soak --wheelgate target/release/wheelgate [--secs 600] [--clients 12] [--slowloris 1000]`.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wheelgate_e2e::soak::clients::{self, Record, Workload};
use wheelgate_e2e::soak::corpus::{FILES_PER_PROJECT, corpus};
use wheelgate_e2e::soak::faulty::{self, phase_at};
use wheelgate_e2e::soak::{report, slowloris};

/// Files per project fetched while warming up: the cached set.
const WARM_PER_PROJECT: usize = 12;
const WARMUP: Duration = Duration::from_secs(30);

struct Args {
    wheelgate: String,
    secs: u64,
    clients: usize,
    slowloris: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        wheelgate: "target/release/wheelgate".into(),
        secs: 600,
        clients: 12,
        slowloris: 1000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--wheelgate" => args.wheelgate = value,
            "--secs" => args.secs = value.parse()?,
            "--clients" => args.clients = value.parse()?,
            "--slowloris" => args.slowloris = value.parse()?,
            other => bail!("unknown flag `{other}`"),
        }
    }
    Ok(args)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let files = corpus();
    let upstream = faulty::start(&files, WARMUP).await;
    let dir = tempfile::tempdir()?;
    let (server, port) = start_server(&args.wheelgate, upstream, dir.path()).await?;
    let pid = server.0.id();
    let proxy = format!("http://127.0.0.1:{port}");
    let client = clients::client();
    let started = Instant::now();

    // Warm-up, upstream healthy: every page, and the cached set with its metadata.
    let (warm, cold): (Vec<_>, Vec<_>) = files
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % FILES_PER_PROJECT < WARM_PER_PROJECT);
    let warm: Vec<_> = warm.into_iter().map(|(_, f)| f).collect();
    let cold: Vec<_> = cold.into_iter().map(|(_, f)| f).collect();
    warm_up(&client, &proxy, &warm).await?;
    eprintln!(
        "soak: warmed {} files in {:.1} s ({} cold files left, {} per project in all); running {} s with {} clients and {} slowloris connections",
        warm.len(),
        started.elapsed().as_secs_f64(),
        cold.len(),
        FILES_PER_PROJECT,
        args.secs,
        args.clients,
        args.slowloris
    );
    let until_warm = WARMUP.saturating_sub(started.elapsed());
    tokio::time::sleep(until_warm).await;

    let run_started = Instant::now();
    let until = run_started + Duration::from_secs(args.secs);
    let workload = Arc::new(Workload {
        proxy: proxy.clone(),
        warm,
        cold,
        next_cold: AtomicUsize::new(0),
        record: Mutex::new(Record::default()),
        phase: Box::new(move || phase_at(run_started.elapsed())),
    });
    let slow = slowloris::start(format!("127.0.0.1:{port}").parse()?, args.slowloris, until);
    let sampling = tokio::spawn(async move {
        let mut samples = Vec::new();
        while Instant::now() < until {
            if let Some(sample) = report::sample(pid, run_started.elapsed()) {
                samples.push(sample);
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        samples
    });
    let workers: Vec<_> = (0..args.clients)
        .map(|i| {
            tokio::spawn(clients::run(
                Arc::clone(&workload),
                i as u64 * 7919 + 1,
                until,
            ))
        })
        .collect();
    for worker in workers {
        worker.await?;
    }
    let samples = sampling.await?;
    let mut record = std::mem::take(&mut *workload.record.lock().expect("record"));
    let table = report::render(
        &mut record,
        &samples,
        Duration::from_secs(args.secs),
        (
            slow.opened.load(Ordering::Relaxed),
            slow.closed_by_server.load(Ordering::Relaxed),
        ),
        args.slowloris,
    );
    println!("{table}");
    let cached_errors: u64 = record
        .errors
        .iter()
        .filter(|((kind, _), _)| kind.is_cached())
        .map(|(_, n)| n)
        .sum();
    drop(server);
    if !record.corrupt.is_empty() || cached_errors > 0 {
        bail!("corrupt bodies or failed requests for cached content; see above");
    }
    Ok(())
}

/// Starts `wheelgate serve` on a free port in front of `upstream`, caching under `dir`, and
/// waits until it answers.
async fn start_server(
    wheelgate: &str,
    upstream: std::net::SocketAddr,
    dir: &std::path::Path,
) -> anyhow::Result<(Server, u16)> {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        probe.local_addr()?.port()
    };
    let config = dir.join("wheelgate.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\npytorch_url = \"http://{upstream}/whl\"\npypi_url = \"http://{upstream}/simple\"\ncache_dir = \"{}\"\nindex_ttl_secs = 2\n\n[machine]\nplatform = \"linux-x86_64\"\nglibc = \"2.36\"\n",
            dir.join("cache").display()
        ),
    )?;
    let log = std::fs::File::create(dir.join("wheelgate.log"))?;
    let server = Server(
        Command::new(wheelgate)
            .args(["serve", "--config"])
            .arg(&config)
            .env("RUST_LOG", "wheelgate=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start `{wheelgate}`"))?,
    );
    let client = clients::client();
    let started = Instant::now();
    while client
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await
        .is_err()
    {
        if started.elapsed() > Duration::from_secs(20) {
            bail!(
                "wheelgate did not start; see {}",
                dir.join("wheelgate.log").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((server, port))
}

/// Fetches every page, file and metadata file of `warm` once, so they are cached.
async fn warm_up(
    client: &reqwest::Client,
    proxy: &str,
    warm: &[wheelgate_e2e::soak::corpus::SoakFile],
) -> anyhow::Result<()> {
    for file in warm {
        for url in [
            format!("{proxy}/simple/{}/", file.project),
            format!("{proxy}/files/{}/{}", file.project, file.filename),
            format!("{proxy}/files/{}/{}.metadata", file.project, file.filename),
        ] {
            let response = client
                .get(&url)
                .header("accept", clients::PIP_ACCEPT)
                .send()
                .await?;
            anyhow::ensure!(
                response.status().is_success(),
                "warm-up: {url}: {}",
                response.status()
            );
            response.bytes().await?;
        }
    }
    Ok(())
}
