//! Starting the server: build the state from a configuration, then serve until a signal.

pub mod affinity;
pub mod allocator;
pub mod background;
pub mod per_core;

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};
use wheelgate_resolver::machine::ImplausibleMachine;
use wheelgate_resolver::{Catalog, Machine, Policy};

use crate::rendered::RenderedPages;
use crate::state::Shared;
use crate::{AppState, app};
use wheelgate_config::LoadedCatalog;
use wheelgate_config::ServeConfig;
use wheelgate_config::catalog::CatalogFileError;
use wheelgate_files::cache::{Bucket, BucketError, FileCache, FileCacheError};
use wheelgate_index::cache::index::IndexCache;
use wheelgate_index::cache::lock::{CacheDirLock, LockError};
use wheelgate_index::cpu_pool::CpuPool;
use wheelgate_index::upstream::{
    AccessError, ClientSettings, UpstreamClient, UpstreamError, resolve_sources,
};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the cache directory `{path}`; choose another with --cache-dir")]
    CacheDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Locked(#[from] LockError),
    #[error("cannot open the file cache")]
    FileCache(#[from] FileCacheError),
    #[error("cannot use the [object_store] section")]
    ObjectStore(#[from] Box<BucketError>),
    #[error(transparent)]
    Client(#[from] UpstreamError),
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error(transparent)]
    Sources(#[from] wheelgate_index::sources::SourcesError),
    #[error(transparent)]
    Networks(#[from] wheelgate_config::networks::NetworksError),
    #[error(transparent)]
    Catalog(#[from] wheelgate_config::catalog::CatalogFileError),
    #[error(
        "the configured `machine` cannot exist; fix it in the configuration file, or remove it to resolve for this host"
    )]
    Machine(#[source] ImplausibleMachine),
    #[error("cannot describe this machine")]
    Detect(#[from] wheelgate_selectors::DetectError),
    #[error(
        "cannot listen on `{addr}`; is another server running there? choose another with --listen"
    )]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped with an error")]
    Serve(#[source] std::io::Error),
    #[error("cannot start the threads that parse index pages; is the process out of threads?")]
    Parsers(#[source] std::io::Error),
    #[error(
        "cannot start the thread that writes index pages to disk; is the process out of threads?"
    )]
    PageWriter(#[source] std::io::Error),
    #[error(
        "cannot start the threads that write downloads to disk; is the process out of threads?"
    )]
    FileWriters(#[source] std::io::Error),
}

/// The machine and policy the server resolves `/simple/` for: the configured machine, else this
/// host's (probed, with its `WHEELGATE_*` overrides); a `WHEELGATE_BACKEND` pin joins the policy.
pub fn default_machine(
    config: &ServeConfig,
    catalog: &Catalog,
) -> Result<(Machine, Policy), StartError> {
    let mut policy = config.policy.clone();
    if let Some(machine) = &config.machine {
        // A configured machine that cannot exist would give every `/simple/` client CPU builds.
        let doubts = machine
            .check_plausible(catalog)
            .map_err(StartError::Machine)?;
        for doubt in doubts {
            warn!(source = "the configured `machine`", "{doubt}");
        }
        return Ok((machine.clone(), policy));
    }
    let ctx = wheelgate_selectors::ProbeContext::from_process()
        .map_err(wheelgate_selectors::DetectError::from)?;
    let detection = wheelgate_selectors::detect(&ctx)?;
    // A probed host exists, so nothing is refused; but `WHEELGATE_*` overrides can describe a
    // machine that cannot (an NVIDIA GPU on a Mac), which is said rather than served silently.
    let source = "this host's probes and WHEELGATE_* overrides";
    match detection.machine.check_plausible(catalog) {
        Err(impossible) => warn!(source, "{impossible}"),
        Ok(doubts) => {
            for doubt in doubts {
                warn!(source, "{doubt}");
            }
        }
    }
    if policy.pinned.is_none() {
        policy.pinned = detection.backend_pin;
    }
    Ok((detection.machine, policy))
}

/// Builds the server's state: caches opened, client built, machine known.
pub async fn build_state(config: ServeConfig) -> Result<AppState, StartError> {
    // First, so a missing token or CA bundle stops the start before anything else is done.
    // Offline, no upstream is asked: its secrets need not be there.
    let loaded = config.catalog.load()?;
    if let Some(overlay) = &loaded.overlay {
        info!(overlay = %overlay.display(), facts = loaded.facts.len(), "catalog overlay layered over the built-in catalog");
    }
    let catalog = loaded.catalog;
    let sources = wheelgate_index::sources::Sources::configured_with(&config, catalog)?;
    let access = if config.offline {
        Vec::new()
    } else {
        resolve_sources(sources.access_settings())?
    };
    for upstream in &access {
        // Header names only: their values are secrets.
        let headers: Vec<&str> = upstream
            .headers
            .keys()
            .map(reqwest::header::HeaderName::as_str)
            .collect();
        info!(
            section = %upstream.section,
            origins = %upstream.origins.join(", "),
            headers = %headers.join(", "),
            ca_certificates = upstream.roots.len(),
            "private upstream access configured"
        );
    }
    wheelgate_index::cache::private::create_dir(&config.cache_dir).map_err(|source| {
        StartError::CacheDir {
            path: config.cache_dir.clone(),
            source,
        }
    })?;
    // Before anything in the directory is touched: leftovers are cleaned only under the lock.
    let lock = CacheDirLock::acquire(&config.cache_dir, &config.listen.to_string())?;
    let (machine, policy) = default_machine(&config, catalog)?;
    let networks = wheelgate_config::ClientNetworks::resolve(
        &config.networks,
        &config.trusted_proxies,
        catalog,
        Some(machine.platform),
    )?;
    if networks.rules.is_empty() && !networks.trusted_proxies.is_empty() {
        // Forwarded headers only choose a [[networks]] rule; without one they change nothing.
        warn!(
            trusted_proxies = %config.trusted_proxies.join(", "),
            "`trusted_proxies` is set but no [[networks]] rule is: forwarded client addresses are not used; add a [[networks]] rule or remove `trusted_proxies`"
        );
    }
    for rule in &networks.rules {
        let cidrs: Vec<String> = rule.cidrs.iter().map(ToString::to_string).collect();
        info!(rule = %rule.label, cidr = %cidrs.join(", "), machine = %rule.machine.as_ref().map_or_else(|| "the server's".to_string(), crate::explain::describe_machine), pinned = ?rule.pinned.as_ref().map(ToString::to_string), "client network");
    }
    let mut config = config;
    config.policy = policy;
    // Before both caches: files and index pages share the one bucket (and its health).
    let bucket = match &config.object_store {
        Some(object_store) => Some(Arc::new(open_bucket(object_store).await?)),
        None => None,
    };
    let index = index_cache(&config, bucket.clone())?;
    let files = file_cache(&config, bucket)?;
    let derived_metadata = wheelgate_files::derived_metadata::MetadataStore::open(
        &config.cache_dir,
    )
    .map_err(|source| StartError::CacheDir {
        path: config.cache_dir.join("metadata"),
        source,
    })?;
    let metrics = Arc::new(wheelgate_index::metrics::Metrics::default());
    let settings = ClientSettings {
        access,
        ..ClientSettings::from_limits(&config.limits)
    };
    let client = UpstreamClient::new(&settings)?.with_metrics(Arc::clone(&metrics));
    Ok(AppState::from(Shared {
        // Before `config` moves into its field.
        rendered: Arc::new(RenderedPages::new(config.limits.rendered_page_memory())),
        config: Arc::new(config),
        client,
        catalog_cell: Arc::new(wheelgate_config::catalog::CatalogCell::new(catalog)),
        pins: Arc::default(),
        derivations: Arc::default(),
        source_counters: Arc::new(wheelgate_index::sources::counters::SourceCounters::new(
            &sources,
        )),
        sources: Arc::new(sources),
        index: Arc::new(index),
        files: Arc::new(files),
        derived_metadata: Arc::new(derived_metadata),
        ranges: Arc::default(),
        default_machine: Arc::new(machine),
        networks: Arc::new(networks),
        targets: crate::targets::TargetMemo::default(),
        metrics,
        cache_lock: Arc::new(lock),
    }))
}

/// The index page cache as the server runs it: revalidating stale pages within the configured
/// wait, parsing on its own threads, writing disk copies at the lowest priority.
fn index_cache(
    config: &ServeConfig,
    bucket: Option<Arc<Bucket>>,
) -> Result<IndexCache, StartError> {
    Ok(IndexCache::new(
        &config.cache_dir,
        Duration::from_secs(config.index_ttl_secs),
        config.offline,
    )
    .map_err(|source| StartError::CacheDir {
        path: config.cache_dir.clone(),
        source,
    })?
    .stale_while_revalidate(config.limits.revalidate_wait())
    .with_bucket(bucket)
    .with_memory(config.limits.parsed_page_memory())
    .with_parsers(start_parsers()?)
    .with_writer(background::start_page_writer().map_err(StartError::PageWriter)?))
}

/// The file cache, its downloads written on threads of their own below normal priority.
fn file_cache(config: &ServeConfig, bucket: Option<Arc<Bucket>>) -> Result<FileCache, StartError> {
    let writers = wheelgate_files::cache::writers::start(per_core::cores())
        .map_err(StartError::FileWriters)?;
    Ok(FileCache::open_with_bucket(
        config.cache_dir.clone(),
        config.cache_max_bytes,
        bucket,
        config.limits.download_slots(),
    )?
    .with_writers(writers))
}

/// One thread per core that parses upstream pages (`cpu_pool.rs`), each kept on a core of its
/// own (`serve/affinity.rs`) and with its share of the resident memory (`serve/allocator.rs`).
fn start_parsers() -> Result<CpuPool, StartError> {
    let cores = per_core::cores();
    let warm = allocator::warm_share(serving_threads(cores));
    let allowed = affinity::cpus_to_pin_to(cores);
    let next = std::sync::atomic::AtomicUsize::new(0);
    CpuPool::start("wheelgate-parse", cores, move || {
        let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(cpu) = affinity::cpu_for(&allowed, index) {
            affinity::pin_this_thread(cpu);
        }
        allocator::warm_this_thread(warm);
    })
    .map_err(StartError::Parsers)
}

/// The threads that serve, on `cores` cores: each core's connection thread and its page parser.
pub fn serving_threads(cores: usize) -> usize {
    2 * cores
}

/// The shared bucket. A configuration the client cannot be built from stops the start; a
/// bucket that is missing or unreachable does not: the proxy starts degraded (serving from local
/// disk and the upstream, the bucket's health saying why) and uses the bucket once it answers.
async fn open_bucket(config: &wheelgate_config::ObjectStoreConfig) -> Result<Bucket, StartError> {
    let bucket = Bucket::connect(config).map_err(Box::new)?;
    match bucket.check().await {
        Ok(()) => {
            let health = bucket.health();
            info!(bucket = %health.bucket, prefix = %health.prefix, endpoint = %health.endpoint, "sharing the file cache and index pages through an object store");
        }
        Err(err) => {
            tracing::error!(error = %err, "STARTING DEGRADED: the object store cannot be used; files and pages are cached on this replica only until it answers");
        }
    }
    Ok(bucket)
}

/// Serves until Ctrl-C or SIGTERM.
pub async fn run(config: ServeConfig) -> Result<(), StartError> {
    run_until(config, shutdown_signal()).await
}

/// Serves until `shutdown` completes (a signal in [`run`], anything in tests), then as
/// [`serve_until`] does.
pub async fn run_until(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let addr = config.listen;
    let state = build_state(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    info!(
        listen = %local,
        pytorch = %state
            .config
            .pytorch_index_url()
            .map_or_else(|| "none".to_string(), wheelgate_index::upstream::redact),
        pypi = %wheelgate_index::upstream::redact(&state.config.pypi_url),
        cache_dir = %state.config.cache_dir.display(),
        offline = state.config.offline,
        machine = %serde_json::to_string(&*state.default_machine).unwrap_or_default(),
        "wheelgate serving; point pip at http://{local}/simple/"
    );
    for (_, source) in state.sources.iter() {
        info!(source = %source.name, url = %wheelgate_index::upstream::redact(&source.url), owns = %source.owns.describe(), "source");
    }
    serve_until(listener, state, shutdown).await
}

/// Serves on `listener` until `shutdown` completes; then stops accepting, lets the responses in
/// flight (a wheel streaming to pip) finish for up to `shutdown_grace_secs`, and returns,
/// closing whatever is still open. Connections are bounded by `[limits]` (`server/listener.rs`).
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let grace = Duration::from_secs(state.config.shutdown_grace_secs);
    let metrics = Arc::clone(&state.metrics);
    let limits = state.config.limits.clone();
    let finished = crate::listener::serve(
        listener,
        app(state),
        &limits,
        Arc::clone(&metrics),
        grace,
        shutdown,
    )
    .await;
    if !finished {
        tracing::warn!(
            files = metrics.in_flight_now(wheelgate_index::metrics::Route::Files),
            grace_secs = grace.as_secs(),
            "shutdown grace elapsed; closing the responses still in flight"
        );
    }
    Ok(())
}

/// Reads the catalog overlay (`[catalog] extend`) again and puts it in force: later requests
/// select with it, renderings made with the previous facts are forgotten, connections and
/// requests in flight are untouched. An overlay that does not load leaves the catalog in force
/// as it was. (The sources' routing names stay those of the start.)
pub fn reload_catalog(state: &AppState) -> Result<LoadedCatalog, CatalogFileError> {
    let loaded = state.config.catalog.load()?;
    state.catalog_cell.set(loaded.catalog);
    state.rendered.clear();
    Ok(loaded)
}

/// Reloads the catalog on every `SIGHUP`, for as long as the process runs (nothing elsewhere).
pub async fn reload_on_hangup(state: AppState) {
    #[cfg(unix)]
    {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            warn!("cannot listen for SIGHUP: the catalog overlay is read at start only");
            return;
        };
        while hangups.recv().await.is_some() {
            match reload_catalog(&state) {
                Ok(loaded) => info!(
                    overlay = %loaded.overlay.as_ref().map_or_else(|| "none".to_string(), |p| p.display().to_string()),
                    facts = loaded.facts.len(),
                    newest = %loaded.catalog.newest_release().torch,
                    "SIGHUP: catalog reloaded"
                ),
                Err(err) => warn!(
                    error = %err,
                    cause = %wheelgate_index::error_chain::source_chain(&err),
                    "SIGHUP: the catalog overlay does not load; the catalog in force is kept"
                ),
            }
        }
    }
    #[cfg(not(unix))]
    drop(state);
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    info!("shutting down");
}
