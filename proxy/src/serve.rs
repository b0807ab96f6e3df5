//! Starting the server: build the state from a configuration, then serve until a signal.

use std::sync::Arc;
use std::time::Duration;

use tracing::info;
use wheelgate_resolver::{Catalog, Machine, Policy};

use crate::cache::files::{FileCache, FileCacheError};
use crate::cache::index::IndexCache;
use crate::config::ServeConfig;
use crate::server::{AppState, app};
use crate::upstream::{ClientSettings, UpstreamClient, UpstreamError};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the cache directory `{path}`; choose another with --cache-dir")]
    CacheDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the file cache")]
    FileCache(#[from] FileCacheError),
    #[error(transparent)]
    Client(#[from] UpstreamError),
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
}

/// The machine and policy the server resolves `/simple/` for: the configured machine, else this
/// host's (probed, with its `WHEELGATE_*` overrides); a `WHEELGATE_BACKEND` pin joins the policy.
pub fn default_machine(config: &ServeConfig) -> Result<(Machine, Policy), StartError> {
    let mut policy = config.policy.clone();
    if let Some(machine) = &config.machine {
        return Ok((machine.clone(), policy));
    }
    let ctx = wheelgate_selectors::ProbeContext::from_process()
        .map_err(wheelgate_selectors::DetectError::from)?;
    let detection = wheelgate_selectors::detect(&ctx)?;
    if policy.pinned.is_none() {
        policy.pinned = detection.backend_pin;
    }
    Ok((detection.machine, policy))
}

/// Builds the server's state: caches opened, client built, machine known.
pub async fn build_state(config: ServeConfig) -> Result<AppState, StartError> {
    tokio::fs::create_dir_all(&config.cache_dir)
        .await
        .map_err(|source| StartError::CacheDir {
            path: config.cache_dir.clone(),
            source,
        })?;
    let (machine, policy) = default_machine(&config)?;
    let mut config = config;
    config.policy = policy;
    let index = IndexCache::new(
        &config.cache_dir,
        Duration::from_secs(config.index_ttl_secs),
        config.offline,
    )
    .map_err(|source| StartError::CacheDir {
        path: config.cache_dir.clone(),
        source,
    })?;
    let files = FileCache::open(config.cache_dir.clone(), config.cache_max_bytes)?;
    let client = UpstreamClient::new(&ClientSettings::default())?;
    Ok(AppState {
        config: Arc::new(config),
        client,
        catalog: Catalog::embedded(),
        index: Arc::new(index),
        files: Arc::new(files),
        default_machine: Arc::new(machine),
        rendered: Arc::default(),
    })
}

/// Serves until Ctrl-C or SIGTERM.
pub async fn run(config: ServeConfig) -> Result<(), StartError> {
    let addr = config.listen;
    let state = build_state(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    info!(
        listen = %local,
        pytorch = %crate::upstream::redact(&state.config.pytorch_url),
        pypi = %crate::upstream::redact(&state.config.pypi_url),
        cache_dir = %state.config.cache_dir.display(),
        offline = state.config.offline,
        machine = %serde_json::to_string(&*state.default_machine).unwrap_or_default(),
        "wheelgate serving; point pip at http://{local}/simple/"
    );
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(StartError::Serve)
}

async fn shutdown_signal() {
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
