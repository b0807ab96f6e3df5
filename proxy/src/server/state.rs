//! The server's shared state: one `Clone` struct of `Arc`s.

use std::sync::Arc;

use wheelgate_resolver::{Catalog, Machine};

use crate::cache::files::FileCache;
use crate::cache::index::IndexCache;
use crate::config::{ClientNetworks, ServeConfig};
use crate::upstream::UpstreamClient;

/// Everything a request handler needs.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<ServeConfig>,
    pub client: UpstreamClient,
    pub catalog: &'static Catalog,
    /// Cached upstream index pages.
    pub index: Arc<IndexCache>,
    /// Cached files (wheels, sdists, `.metadata`).
    pub files: Arc<FileCache>,
    /// The machine `/simple/` resolves for when no `[[networks]]` rule holds the client.
    pub default_machine: Arc<Machine>,
    /// `[[networks]]` and `trusted_proxies`, checked at start.
    pub networks: Arc<ClientNetworks>,
    /// Rewritten pages, reused while their upstream page is unchanged.
    pub rendered: super::simple::SharedRendered,
    /// Request, cache and upstream counters (`/metrics`, the status page).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// This server's hold on its cache directory, for as long as any handler may use it.
    pub cache_lock: Arc<crate::cache::lock::CacheDirLock>,
}
