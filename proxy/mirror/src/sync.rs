//! Running a sync: plan, download every planned file through the file cache (verified, committed
//! atomically, single flight), check the store as an offline server will read it, and only then
//! write `mirror-complete.json`. The marker is removed first thing, so a store whose sync failed
//! or was interrupted is never presented as complete; a rerun resumes: committed files are
//! skipped, and an interrupted file restarts cleanly (the file cache drops leftover `*.part`
//! files when it opens).

pub use super::failure::Failure;
use super::failure::{disk_hint, error_chain};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
pub use wheelgate_index::units::human_bytes;

use futures_util::{StreamExt, TryStreamExt, stream};
use serde::Serialize;
use tracing::{debug, info};

use super::config::MirrorConfig;
use super::derived::derive_wheels;
use super::lock::{LOCKS_DIR, LockError, write_locks};
use super::plan::{FileKind, Plan, PlanError, PlannedFile, PlannedPage, make_plan};
use wheelgate_config::DEFAULT_CACHE_MAX_BYTES;
use wheelgate_files::cache::{FileCache, FileCacheError};
use wheelgate_index::cache::index::IndexCache;
use wheelgate_index::metrics::upstream_label;
use wheelgate_index::upstream::{
    AccessError, ClientSettings, UpstreamClient, UpstreamError, redact, resolve_sources,
};

/// The file written at the root of a store when, and only when, a sync completed.
pub const MARKER: &str = "mirror-complete.json";
/// Files downloaded at once.
pub const DEFAULT_JOBS: usize = 4;
/// Version of the marker's format (2: with each environment's resolution).
const MARKER_FORMAT: u32 = 2;

/// Where and how to sync.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The store: a cache directory as `wheelgate serve --cache-dir` reads it.
    pub store: PathBuf,
    /// Files downloaded at once (at least 1).
    pub jobs: usize,
}

/// Hooks for progress display; every method does nothing by default.
pub trait SyncProgress: Send + Sync {
    /// The plan is made: these files will be fetched or skipped.
    fn planned(&self, _plan: &Plan) {}
    /// A download started; `len` when known.
    fn started(&self, _file: &PlannedFile, _len: Option<u64>) {}
    /// `bytes` more bytes of `file` are on disk.
    fn advanced(&self, _file: &PlannedFile, _bytes: u64) {}
    /// `file` is done.
    fn finished(&self, _file: &PlannedFile, _outcome: &FileOutcome) {}
}

/// No progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl SyncProgress for NoProgress {}

/// What happened to one planned file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Downloaded, verified and committed.
    Downloaded { bytes: u64 },
    /// Already committed by an earlier sync.
    Skipped { bytes: u64 },
    /// Not in the store; the message says why.
    Failed(String),
}

/// The outcome of a sync.
#[derive(Debug, Clone)]
pub struct SyncReport {
    pub store: PathBuf,
    pub plan: Plan,
    pub downloaded: usize,
    pub downloaded_bytes: u64,
    pub skipped: usize,
    pub skipped_bytes: u64,
    pub failures: Vec<Failure>,
    /// The marker written, when everything succeeded.
    pub marker: Option<PathBuf>,
    /// The size of every file in the store.
    pub store_bytes: u64,
    pub pytorch_url: String,
    pub pypi_url: String,
    /// The offline server's configuration written into the store (`serve.toml`), when the
    /// mirror has `[[sources]]`, which no flag can say.
    pub serve_config: Option<PathBuf>,
}

impl SyncReport {
    /// Whether the store now holds everything the configuration declares.
    pub fn is_complete(&self) -> bool {
        self.failures.is_empty() && self.marker.is_some()
    }

    /// `files 12 (340.5 MiB), skipped 3 (1.2 GiB), failed 0`
    pub fn summary(&self) -> String {
        format!(
            "files {} ({}), skipped {} ({}), failed {}",
            self.downloaded,
            human_bytes(self.downloaded_bytes),
            self.skipped,
            human_bytes(self.skipped_bytes),
            self.failures.len()
        )
    }

    /// The command that serves this store offline: the same upstream URLs (pages are stored
    /// under them) and a cache limit the store fits in (else the server would evict at start).
    pub fn serve_command(&self) -> String {
        serve_command(
            &self.store,
            (&self.pytorch_url, &self.pypi_url),
            self.serve_config.as_deref(),
            self.store_bytes,
        )
    }
}

/// What a dry run found.
#[derive(Debug, Clone)]
pub struct DryRun {
    pub plan: Plan,
    /// The size of each planned file: from its page, else a `HEAD` request's `Content-Length`.
    pub sizes: Vec<Option<u64>>,
    /// Whether each planned file is already committed in the store.
    pub present: Vec<bool>,
}

impl DryRun {
    /// The total of known sizes, and how many are unknown.
    pub fn total(&self) -> (u64, usize) {
        self.sizes
            .iter()
            .fold((0, 0), |(bytes, unknown), size| match size {
                Some(size) => (bytes + size, unknown),
                None => (bytes, unknown + 1),
            })
    }
}

/// Why a sync could not run at all (a failed file is a [`Failure`] in the report instead).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("cannot use the store directory `{path}`{}", disk_hint(.source))]
    Store {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot open the store's file cache")]
    FileCache(#[source] FileCacheError),
    #[error(transparent)]
    Client(#[from] UpstreamError),
    #[error("cannot use the mirror configuration's upstream access")]
    Access(#[from] AccessError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Another sync (or a server) holds the store: two writers would race on its files and
    /// both report success.
    #[error(transparent)]
    StoreInUse(wheelgate_index::cache::lock::LockError),
    #[error(
        "the derived wheel of `{file}` (the one the server answers a lock's URL with) {message}"
    )]
    Derive { file: String, message: String },
}

/// Creates the store and takes it, one writer per store until the sync ends: a second sync (or
/// a server) is told who holds it.
fn take_store(store: &Path) -> Result<wheelgate_index::cache::lock::CacheDirLock, SyncError> {
    wheelgate_index::cache::private::create_dir(store).map_err(|source| SyncError::Store {
        path: store.to_path_buf(),
        source,
    })?;
    wheelgate_index::cache::lock::CacheDirLock::acquire(store, "running `wheelgate mirror sync`")
        .map_err(SyncError::StoreInUse)
}

/// Syncs the store: see the module documentation.
pub async fn sync(
    config: &MirrorConfig,
    options: &SyncOptions,
    progress: &dyn SyncProgress,
) -> Result<SyncReport, SyncError> {
    // First: a missing token or CA bundle stops the sync before the store is touched.
    let client = upstream_client(config)?;
    let store = options.store.clone();
    let store_error = |source| SyncError::Store {
        path: store.clone(),
        source,
    };
    let _held = take_store(&store)?;
    // First: whatever happens next, the store is not complete until this sync says so.
    let marker = store.join(MARKER);
    match tokio::fs::remove_file(&marker).await {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(store_error(err)),
        _ => {}
    }
    // The locks name files too: none may stand until the files they name are verified.
    match tokio::fs::remove_dir_all(store.join(LOCKS_DIR)).await {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(store_error(err)),
        _ => {}
    }
    // TTL zero: every page is revalidated, so a rerun picks up new uploads.
    let index = IndexCache::new(&store, Duration::ZERO, false).map_err(store_error)?;
    // Never evicts: the store holds what was declared, however large. (Blocking, once, like the
    // server's own start.)
    let files = FileCache::open(store.clone(), u64::MAX).map_err(SyncError::FileCache)?;
    // Whole seconds: the index cache stores when a page was fetched to the second.
    let started = UNIX_EPOCH
        + Duration::from_secs(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
    let plan = make_plan(config, &client, &index, &files).await?;
    let unrefreshed = unrefreshed_pages(&index, &plan.pages, started).await;
    info!(environments = plan.resolutions.len(), pages = plan.pages.len(), files = plan.files.len(), store = %store.display(), "mirror plan made");
    progress.planned(&plan);

    let outcomes: Vec<FileOutcome> = stream::iter(plan.files.iter())
        .map(|file| fetch_one(&files, &client, file, progress))
        .buffered(options.jobs.max(1))
        .collect()
        .await;

    let mut report = SyncReport {
        store: store.clone(),
        plan: plan.clone(),
        downloaded: 0,
        downloaded_bytes: 0,
        skipped: 0,
        skipped_bytes: 0,
        failures: Vec::new(),
        marker: None,
        store_bytes: files.total_bytes(),
        pytorch_url: config.pytorch_url.clone(),
        pypi_url: config.pypi_url.clone(),
        serve_config: None,
    };
    let mut sizes = Vec::with_capacity(outcomes.len());
    for (file, outcome) in plan.files.iter().zip(&outcomes) {
        match outcome {
            FileOutcome::Downloaded { bytes } => {
                report.downloaded += 1;
                report.downloaded_bytes += bytes;
                sizes.push(*bytes);
            }
            FileOutcome::Skipped { bytes } => {
                report.skipped += 1;
                report.skipped_bytes += bytes;
                sizes.push(*bytes);
            }
            FileOutcome::Failed(message) => {
                report.failures.push(Failure {
                    what: file.filename.clone(),
                    message: message.clone(),
                });
                sizes.push(0);
            }
        }
    }
    report.failures.extend(unrefreshed);
    report
        .failures
        .extend(check_pages(&store, &plan.pages, &client).await);
    // From the upstream wheels just stored: the bytes the server answers the locks' URLs with.
    let (derived, failed) = derive_wheels(&plan, &files, &client).await;
    report.failures.extend(failed);
    report.store_bytes = files.total_bytes();
    if report.failures.is_empty()
        && let Err(err) = write_locks(
            &store.join(LOCKS_DIR),
            &plan.resolutions,
            &config.server_url,
            &derived,
        )
    {
        report.failures.push(Failure {
            what: LOCKS_DIR.to_string(),
            message: error_chain(&err),
        });
    }
    finish_store(&store, config, &plan, &sizes, &mut report).await;
    Ok(report)
}

/// What a complete store ends with: the offline server's configuration when the mirror has
/// `[[sources]]`, then the marker, each a failure of `report` when it cannot be written.
async fn finish_store(
    store: &Path,
    config: &MirrorConfig,
    plan: &Plan,
    sizes: &[u64],
    report: &mut SyncReport,
) {
    if report.failures.is_empty() && !config.sources.is_empty() {
        match super::serve_config::write(store, config) {
            Ok(path) => report.serve_config = Some(path),
            Err(err) => report.failures.push(Failure {
                what: super::serve_config::SERVE_CONFIG.to_string(),
                message: format!("cannot write it: {err}{}", disk_hint(&err)),
            }),
        }
    }
    if report.failures.is_empty() {
        match write_marker(store, config, plan, sizes, report).await {
            Ok(path) => report.marker = Some(path),
            Err(err) => report.failures.push(Failure {
                what: MARKER.to_string(),
                message: format!("cannot write it: {err}{}", disk_hint(&err)),
            }),
        }
    }
}

/// Plans without writing anything to the store (pages go to a temporary directory; the store's
/// file cache is not even opened, since opening it clears the `*.part` files of a sync that may
/// be running) and sizes every file.
pub async fn dry_run(
    config: &MirrorConfig,
    store: &Path,
    jobs: usize,
) -> Result<DryRun, SyncError> {
    let (client, _scratch, _files, plan) = scratch_plan(config).await?;
    let present = plan
        .files
        .iter()
        .map(|f| in_store(store, &f.spec))
        .collect();
    let sizes = stream::iter(plan.files.iter())
        .map(|file| async {
            match file.spec.size {
                Some(size) => Some(size),
                None => {
                    client
                        .head_length(&file.spec.url, file.spec.listed_on.as_deref())
                        .await
                }
            }
        })
        .buffered(jobs.max(1) * 2)
        .collect()
        .await;
    Ok(DryRun {
        plan,
        sizes,
        present,
    })
}

/// Whether `spec`'s file is committed in the store, without opening its file cache: the cache
/// keeps a committed file at `files/<key>`, its key what its `ETag` quotes (`sha256-` before a
/// bare hash).
fn in_store(store: &Path, spec: &wheelgate_files::cache::FileSpec) -> bool {
    let Ok(etag) = FileCache::etag(spec) else {
        return false;
    };
    let key = etag.trim_matches('"');
    let key = if key.starts_with("url-") {
        key.to_string()
    } else {
        format!("sha256-{key}")
    };
    store.join("files").join(key).is_file()
}

/// Resolves every environment and writes its PEP 751 lock into `out`, downloading nothing but
/// metadata (into a temporary directory), and the upstream wheels of the wheels served derived
/// (a variant wheel with `variant_label` markers), whose locked hash is that of the derived
/// bytes. Returns the plan and the locks written.
pub async fn lock(config: &MirrorConfig, out: &Path) -> Result<(Plan, Vec<PathBuf>), SyncError> {
    let (client, _scratch, files, plan) = scratch_plan(config).await?;
    // A derived wheel's hash is known only once it is built: its upstream wheel is downloaded
    // (into the scratch directory) for that.
    let (derived, failed) = derive_wheels(&plan, &files, &client).await;
    if let Some(failure) = failed.into_iter().next() {
        return Err(SyncError::Derive {
            file: failure.what,
            message: failure.message,
        });
    }
    let written = write_locks(out, &plan.resolutions, &config.server_url, &derived)?;
    Ok((plan, written))
}

/// A plan made with pages and metadata in a temporary directory, dropped with it.
async fn scratch_plan(
    config: &MirrorConfig,
) -> Result<(UpstreamClient, tempfile::TempDir, FileCache, Plan), SyncError> {
    let scratch = tempfile::tempdir().map_err(|source| SyncError::Store {
        path: std::env::temp_dir(),
        source,
    })?;
    let client = upstream_client(config)?;
    let index = IndexCache::new(scratch.path(), Duration::ZERO, false).map_err(|source| {
        SyncError::Store {
            path: scratch.path().to_path_buf(),
            source,
        }
    })?;
    let files =
        FileCache::open(scratch.path().to_path_buf(), u64::MAX).map_err(SyncError::FileCache)?;
    let plan = make_plan(config, &client, &index, &files).await?;
    Ok((client, scratch, files, plan))
}

/// The client of a sync, with the configuration's `[upstreams.*]` access read now (secrets from
/// the environment and files, CA bundles), as `wheelgate serve` builds its own: a missing token
/// stops the sync before anything is fetched.
fn upstream_client(config: &MirrorConfig) -> Result<UpstreamClient, SyncError> {
    let access = resolve_sources(config.sources().access_settings())?;
    for upstream in &access {
        // Header names only: their values are secrets.
        let headers: Vec<&str> = upstream
            .headers
            .keys()
            .map(reqwest::header::HeaderName::as_str)
            .collect();
        info!(section = %upstream.section, origins = %upstream.origins.join(", "), headers = %headers.join(", "), ca_certificates = upstream.roots.len(), "private upstream access configured");
    }
    Ok(UpstreamClient::new(&ClientSettings {
        access,
        ..ClientSettings::default()
    })?)
}

async fn fetch_one(
    files: &FileCache,
    client: &UpstreamClient,
    file: &PlannedFile,
    progress: &dyn SyncProgress,
) -> FileOutcome {
    let outcome = fetch_file(files, client, file, progress).await;
    if let FileOutcome::Failed(message) = &outcome {
        // The report lists it; the file cache has logged the details.
        debug!(file = %file.filename, error = %message, "mirror download failed");
    }
    progress.finished(file, &outcome);
    outcome
}

async fn fetch_file(
    files: &FileCache,
    client: &UpstreamClient,
    file: &PlannedFile,
    progress: &dyn SyncProgress,
) -> FileOutcome {
    if files.contains(&file.spec) {
        // Offline: only the committed copy, whose length is known.
        return match files.fetch(client, &file.spec, true).await {
            Ok(cached) => FileOutcome::Skipped {
                bytes: cached.known_len().unwrap_or(0),
            },
            Err(err) => FileOutcome::Failed(error_chain(&err)),
        };
    }
    let cached = match files.fetch(client, &file.spec, false).await {
        Ok(cached) => cached,
        Err(err) => return FileOutcome::Failed(error_chain(&err)),
    };
    progress.started(file, cached.known_len());
    // Reading to the end waits for the commit: the last byte only becomes readable once the
    // file is verified and renamed to its key, and a failed download ends the stream with an
    // error.
    let mut bytes = 0u64;
    let mut body = std::pin::pin!(cached.stream(0, None));
    loop {
        match body.try_next().await {
            Ok(Some(chunk)) => {
                bytes += chunk.len() as u64;
                progress.advanced(file, chunk.len() as u64);
            }
            Ok(None) => break,
            Err(err) => return FileOutcome::Failed(error_chain(&err)),
        }
    }
    if files.contains(&file.spec) {
        FileOutcome::Downloaded { bytes }
    } else {
        FileOutcome::Failed("the download ended but the file was not committed".to_string())
    }
}

/// Pages this sync could not refresh: the upstream failed and the index cache fell back on the
/// copy an earlier sync stored (it warns with the error). The store stays consistent, but it is
/// not what the upstream lists now, so it must not be marked complete: a rerun once the upstream
/// answers completes it. (Every page is revalidated, TTL zero: a page answered in this sync was
/// fetched at or after `started`.)
async fn unrefreshed_pages(
    index: &IndexCache,
    pages: &[PlannedPage],
    started: SystemTime,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    for page in pages {
        let Some(cached) = index.peek(&page.url).await else {
            continue;
        };
        if cached.fetched_at() < started {
            failures.push(Failure {
                what: redact(&page.url),
                message: format!(
                    "`{}` did not answer for the page of `{}`; the store holds the copy of an earlier sync, so it is not up to date: run the sync again when the upstream answers",
                    upstream_label(&page.url),
                    page.project
                ),
            });
        }
    }
    failures
}

/// Every page as the offline server will read it: a fresh offline index cache over the store
/// must find it on disk (the index cache only warns when it cannot write a page).
async fn check_pages(store: &Path, pages: &[PlannedPage], client: &UpstreamClient) -> Vec<Failure> {
    let offline = match IndexCache::new(store, Duration::ZERO, true) {
        Ok(index) => index,
        Err(err) => {
            return vec![Failure {
                what: store.join("index").display().to_string(),
                message: format!("cannot read the stored index pages: {err}"),
            }];
        }
    };
    let mut failures = Vec::new();
    for page in pages {
        match offline.get(client, &page.url).await {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => failures.push(Failure {
                what: redact(&page.url),
                message: "the index page was fetched but is not in the store (could it not be written? is the disk full?)".to_string(),
            }),
        }
    }
    failures
}

#[derive(Serialize)]
struct Marker<'a> {
    format: u32,
    completed_at: String,
    completed_at_unix: u64,
    pytorch_url: String,
    pypi_url: String,
    serve: String,
    total_bytes: u64,
    pages: Vec<MarkerPage<'a>>,
    files: Vec<MarkerFile<'a>>,
    /// Each environment's resolution (empty without resolution).
    environments: Vec<MarkerEnvironment<'a>>,
}

#[derive(Serialize)]
struct MarkerEnvironment<'a> {
    name: &'a str,
    python: String,
    platform: String,
    /// The lock file of this environment, relative to the store.
    lock: String,
    packages: Vec<MarkerPackage<'a>>,
}

#[derive(Serialize)]
struct MarkerPackage<'a> {
    name: &'a str,
    version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    backend: Option<&'a str>,
    files: Vec<&'a str>,
}

#[derive(Serialize)]
struct MarkerPage<'a> {
    project: &'a str,
    url: String,
}

#[derive(Serialize)]
struct MarkerFile<'a> {
    project: &'a str,
    filename: &'a str,
    kind: FileKind,
    sha256: Option<&'a str>,
    size: u64,
}

/// Writes the marker atomically: a temporary file, fsynced, renamed over the final name.
async fn write_marker(
    store: &Path,
    config: &MirrorConfig,
    plan: &Plan,
    sizes: &[u64],
    report: &SyncReport,
) -> io::Result<PathBuf> {
    let now = SystemTime::now();
    let marker = Marker {
        format: MARKER_FORMAT,
        completed_at: httpdate::fmt_http_date(now),
        completed_at_unix: now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        pytorch_url: redact(&config.pytorch_url),
        pypi_url: redact(&config.pypi_url),
        serve: report.serve_command(),
        total_bytes: sizes.iter().sum(),
        pages: plan
            .pages
            .iter()
            .map(|p| MarkerPage {
                project: &p.project,
                url: redact(&p.url),
            })
            .collect(),
        files: plan
            .files
            .iter()
            .zip(sizes)
            .map(|(f, size)| MarkerFile {
                project: &f.project,
                filename: &f.filename,
                kind: f.kind,
                sha256: f.spec.sha256.as_deref(),
                size: *size,
            })
            .collect(),
        environments: plan
            .resolutions
            .iter()
            .map(|resolution| MarkerEnvironment {
                name: &resolution.environment.name,
                python: resolution.environment.python.to_string(),
                platform: resolution.environment.platform.to_string(),
                lock: super::lock::lock_path(&resolution.environment),
                packages: resolution
                    .packages
                    .iter()
                    .map(|p| MarkerPackage {
                        name: &p.project,
                        version: &p.full_version,
                        backend: p.backend(),
                        files: p.index_files().map(|f| f.filename.as_str()).collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    let text = serde_json::to_vec_pretty(&marker).map_err(io::Error::other)?;
    let path = store.join(MARKER);
    let temp = store.join(format!(".{MARKER}.{}.tmp", std::process::id()));
    let result = async {
        let mut file = tokio::fs::File::create(&temp).await?;
        tokio::io::AsyncWriteExt::write_all(&mut file, &text).await?;
        file.sync_all().await?;
        drop(file);
        tokio::fs::rename(&temp, &path).await
    }
    .await;
    if let Err(err) = result {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(err);
    }
    Ok(path)
}

/// The command that serves `store` offline: its configuration file when the sync wrote one
/// (`[[sources]]`), else the flags that say the same upstream URLs.
fn serve_command(
    store: &Path,
    (pytorch_url, pypi_url): (&str, &str),
    serve_config: Option<&Path>,
    store_bytes: u64,
) -> String {
    let mut command = match serve_config {
        Some(path) => format!("wheelgate serve --config {}", path.display()),
        None => format!(
            "wheelgate serve --offline --cache-dir {} --pytorch-url {} --pypi-url {}",
            store.display(),
            redact(pytorch_url),
            redact(pypi_url)
        ),
    };
    if store_bytes > DEFAULT_CACHE_MAX_BYTES {
        // Room for the whole store: the server evicts down to its limit when it opens the cache.
        let limit = store_bytes.div_ceil(1 << 30) * (1 << 30);
        let _ = write!(command, " --cache-max-bytes {limit}");
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_says_so() {
        let full = io::Error::from(io::ErrorKind::StorageFull);
        let error = FileCacheError::Io {
            path: PathBuf::from("/store/files/x.part"),
            source: full,
        };
        let text = error_chain(&error);
        assert!(text.contains("/store/files/x.part"), "{text}");
        assert!(text.contains("the disk is full"), "{text}");
        let other = FileCacheError::NotCached { url: "u".into() };
        assert!(!error_chain(&other).contains("disk"));
    }

    #[test]
    fn the_serve_command_fits_the_store() {
        let small = serve_command(
            Path::new("/m"),
            ("http://a/whl", "http://b/simple"),
            None,
            10,
        );
        assert_eq!(
            small,
            "wheelgate serve --offline --cache-dir /m --pytorch-url http://a/whl --pypi-url http://b/simple"
        );
        let big = serve_command(
            Path::new("/m"),
            ("a", "b"),
            None,
            DEFAULT_CACHE_MAX_BYTES + 1,
        );
        assert!(
            big.ends_with(&format!(
                " --cache-max-bytes {}",
                DEFAULT_CACHE_MAX_BYTES + (1 << 30)
            )),
            "{big}"
        );
    }
}
