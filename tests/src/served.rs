//! The release `wheelgate serve` as its own process, for the benchmarks that measure what it
//! costs (its RSS, its latency on another runtime than the clients'): started on a free port
//! with a configuration file, stopped when dropped; and the `Range` header their fake upstreams
//! answer.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::http::{HeaderMap, header};

/// A running `wheelgate serve`; killed when dropped.
pub struct Served {
    child: Child,
    pub port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `wheelgate` with `config` (the `listen` and `cache_dir` keys added: a free port on
    /// 127.0.0.1, `dir/cache`; and no read of the sources at start, so a benchmark's first
    /// request finds nothing cached and no connection open), and waits until `/healthz` answers.
    pub async fn start(wheelgate: &str, config: &str, dir: &Path) -> anyhow::Result<Served> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let path = dir.join("wheelgate.toml");
        std::fs::write(
            &path,
            format!(
                "listen = \"127.0.0.1:{port}\"\ncache_dir = \"{}\"\nread_sources_at_start = false\n{config}",
                dir.join("cache").display()
            ),
        )?;
        let child = Command::new(wheelgate)
            .args(["serve", "--config"])
            .arg(&path)
            .env("RUST_LOG", "wheelgate=error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start `{wheelgate}`"))?;
        let served = Served { child, port };
        let client = reqwest::Client::builder().no_proxy().build()?;
        let started = Instant::now();
        while client.get(served.url("/healthz")).send().await.is_err() {
            if started.elapsed() > Duration::from_secs(20) {
                bail!("wheelgate did not start");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(served)
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The server's resident memory now and at its peak, in bytes (`/proc/<pid>/status`).
    pub fn rss(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| kib * 1024)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }
}

/// `bytes=a-b` or `bytes=-n` of a file `len` long, as `start..end`.
pub fn range_of(headers: &HeaderMap, len: usize) -> Option<(usize, usize)> {
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
