//! pip-like clients: pages (pip's `Accept`), metadata, cached files, cold files and ranges, each
//! timed and checked byte for byte against the corpus.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::corpus::{SoakFile, bytes};
use super::faulty::Phase;

pub const PIP_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
const PIP_USER_AGENT: &str = r#"pip/25.2 {"installer":{"name":"pip","version":"25.2"},"python":"3.12.3","implementation":{"name":"CPython","version":"3.12.3"},"distro":{"name":"Ubuntu","version":"24.04"},"system":{"name":"Linux","release":"6.8.0"},"cpu":"x86_64"}"#;

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Page,
    Metadata,
    CachedFile,
    Range,
    ColdFile,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Page => "page (cached)",
            Kind::Metadata => "metadata (cached)",
            Kind::CachedFile => "file (cached)",
            Kind::Range => "range (cached)",
            Kind::ColdFile => "file (cold)",
        }
    }

    /// Whether the proxy holds what this asks for, so an upstream fault must not show.
    pub fn is_cached(self) -> bool {
        self != Kind::ColdFile
    }
}

/// Everything the clients saw.
#[derive(Default)]
pub struct Record {
    pub latencies: BTreeMap<Kind, Vec<Duration>>,
    /// `(kind, what)` → count: statuses and transport errors.
    pub errors: BTreeMap<(Kind, String), u64>,
    /// Longest wait for something cached while the upstream was faulty.
    pub worst_cached_during_faults: Duration,
    pub corrupt: Vec<String>,
    pub bytes_checked: u64,
}

/// The clients' shared view of the corpus and where they are in it.
pub struct Workload {
    pub proxy: String,
    pub warm: Vec<SoakFile>,
    pub cold: Vec<SoakFile>,
    pub next_cold: AtomicUsize,
    pub record: Mutex<Record>,
    pub phase: Box<dyn Fn() -> Phase + Send + Sync>,
}

impl Workload {
    fn note(&self, kind: Kind, took: Duration, faulty: bool, outcome: Outcome) {
        let mut record = self.record.lock().expect("record");
        record.latencies.entry(kind).or_default().push(took);
        if kind.is_cached() && faulty {
            record.worst_cached_during_faults = record.worst_cached_during_faults.max(took);
        }
        match outcome {
            Outcome::Ok(checked) => record.bytes_checked += checked,
            Outcome::Failed(what) => *record.errors.entry((kind, what)).or_default() += 1,
            Outcome::Corrupt(what) => record.corrupt.push(what),
        }
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(PIP_USER_AGENT)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Runs one client until `until`.
pub async fn run(workload: Arc<Workload>, seed: u64, until: Instant) {
    let client = client();
    let mut state = seed | 1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % n as u64).unwrap_or(0)
    };
    while Instant::now() < until {
        let roll = next(100);
        let file = &workload.warm[next(workload.warm.len())];
        // Cold files 1 % of the time, so the supply lasts the run and cold downloads meet
        // every fault phase.
        let kind = match roll {
            0..36 => Kind::Page,
            36..52 => Kind::Metadata,
            52..84 => Kind::CachedFile,
            84..99 => Kind::Range,
            _ => Kind::ColdFile,
        };
        let started = Instant::now();
        let phase = (workload.phase)();
        let outcome = match kind {
            Kind::Page => page(&client, &workload.proxy, &file.project).await,
            Kind::Metadata => metadata(&client, &workload.proxy, file).await,
            Kind::CachedFile => whole(&client, &workload.proxy, file).await,
            Kind::Range => range(&client, &workload.proxy, file, next(16 * 1024)).await,
            Kind::ColdFile => {
                let index = workload.next_cold.fetch_add(1, Ordering::Relaxed);
                match workload.cold.get(index) {
                    Some(cold) => whole(&client, &workload.proxy, cold).await,
                    None => whole(&client, &workload.proxy, file).await,
                }
            }
        };
        let took = started.elapsed();
        let faulty = phase.pages_broken() || (workload.phase)().pages_broken();
        workload.note(kind, took, faulty, outcome);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

enum Outcome {
    /// Bytes checked.
    Ok(u64),
    Failed(String),
    Corrupt(String),
}

async fn fetch(request: reqwest::RequestBuilder, expect: u16) -> Result<Vec<u8>, String> {
    let response = request.send().await.map_err(|err| {
        if err.is_timeout() {
            "timeout".to_string()
        } else {
            "connection error".to_string()
        }
    })?;
    let status = response.status().as_u16();
    if status != expect {
        return Err(format!("status {status}"));
    }
    response
        .bytes()
        .await
        .map(|b| b.to_vec())
        .map_err(|_| "body broke off".to_string())
}

async fn page(client: &reqwest::Client, proxy: &str, project: &str) -> Outcome {
    let request = client
        .get(format!("{proxy}/simple/{project}/"))
        .header("accept", PIP_ACCEPT);
    match fetch(request, 200).await {
        Ok(body) if String::from_utf8_lossy(&body).contains(".whl") => {
            Outcome::Ok(body.len() as u64)
        }
        Ok(_) => Outcome::Corrupt(format!("the page of `{project}` lists no wheel")),
        Err(what) => Outcome::Failed(what),
    }
}

async fn metadata(client: &reqwest::Client, proxy: &str, file: &SoakFile) -> Outcome {
    let url = format!("{proxy}/files/{}/{}.metadata", file.project, file.filename);
    match fetch(client.get(url), 200).await {
        Ok(body) if body == file.metadata.as_bytes() => Outcome::Ok(body.len() as u64),
        Ok(_) => Outcome::Corrupt(format!("metadata of `{}`", file.filename)),
        Err(what) => Outcome::Failed(what),
    }
}

async fn whole(client: &reqwest::Client, proxy: &str, file: &SoakFile) -> Outcome {
    let url = format!("{proxy}/files/{}/{}", file.project, file.filename);
    match fetch(client.get(url), 200).await {
        Ok(body) if hex::encode(Sha256::digest(&body)) == file.sha256 => {
            Outcome::Ok(body.len() as u64)
        }
        Ok(body) => Outcome::Corrupt(format!(
            "`{}`: {} bytes whose sha256 is not the page's",
            file.filename,
            body.len()
        )),
        Err(what) => Outcome::Failed(what),
    }
}

async fn range(client: &reqwest::Client, proxy: &str, file: &SoakFile, start: usize) -> Outcome {
    let end = (start + 4096).min(file.len) - 1;
    let url = format!("{proxy}/files/{}/{}", file.project, file.filename);
    let request = client
        .get(url)
        .header("range", format!("bytes={start}-{end}"));
    match fetch(request, 206).await {
        Ok(body) if body == bytes(file.seed, end + 1)[start..] => Outcome::Ok(body.len() as u64),
        Ok(_) => Outcome::Corrupt(format!("range {start}-{end} of `{}`", file.filename)),
        Err(what) => Outcome::Failed(what),
    }
}
