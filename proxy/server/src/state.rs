//! The server's shared state: [`Shared`] behind one `Arc`. Axum clones the state for every
//! extractor, middleware and handler of every request; a struct of a dozen `Arc`s made those
//! clones and drops an eighth of a warm page request's CPU, one `Arc` makes them one atomic
//! increment each.

use std::sync::Arc;

use wheelgate_resolver::{Catalog, Machine};

use wheelgate_config::{ClientNetworks, ServeConfig};
use wheelgate_files::cache::FileCache;
use wheelgate_index::cache::index::IndexCache;
use wheelgate_index::upstream::UpstreamClient;

/// Everything a request handler needs: [`Shared`], cheap to clone; its fields are reached
/// through `Deref` (`state.config`, `state.index`).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl From<Shared> for AppState {
    fn from(shared: Shared) -> Self {
        AppState(Arc::new(shared))
    }
}

impl AppState {
    /// The contents, to change before the state is shared with a server (tests give the state
    /// another upstream client); `None` once it is.
    pub fn shared_mut(&mut self) -> Option<&mut Shared> {
        Arc::get_mut(&mut self.0)
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Shared {
    /// The catalog in force now (a reload swaps it; a request that read it keeps its copy).
    pub fn catalog(&self) -> &'static Catalog {
        self.catalog_cell.get()
    }
}

/// The state's contents.
pub struct Shared {
    pub config: Arc<ServeConfig>,
    pub client: UpstreamClient,
    /// The build facts, swapped whole by a reload (`SIGHUP`): read through
    /// [`Shared::catalog`].
    pub catalog_cell: Arc<wheelgate_config::catalog::CatalogCell>,
    /// The upstream indexes and the names each owns.
    pub sources: Arc<wheelgate_index::sources::Sources>,
    /// Torch pins read from files' metadata, by sha256 (`server/binding/`).
    pub pins: Arc<super::binding::pins::PinMemo>,
    /// Derived wheels planned, by upstream file and change (`wheelgate_files::derive`).
    pub derivations: Arc<wheelgate_files::derive::Derivations>,
    /// How each source's pages came back (`/metrics`).
    pub source_counters: Arc<wheelgate_index::sources::counters::SourceCounters>,
    /// Cached upstream index pages.
    pub index: Arc<IndexCache>,
    /// Cached files (wheels, sdists, `.metadata`).
    pub files: Arc<FileCache>,
    /// `.metadata` read from verified wheels whose upstream offers none
    /// (`cache/derived_metadata.rs`).
    pub derived_metadata: Arc<wheelgate_files::derived_metadata::MetadataStore>,
    /// Ranges read from the upstream by range, shared and capped.
    pub ranges: Arc<super::ranges::UpstreamRanges>,
    /// The machine `/simple/` resolves for when no `[[networks]]` rule holds the client.
    pub default_machine: Arc<Machine>,
    /// `[[networks]]` and `trusted_proxies`, checked at start.
    pub networks: Arc<ClientNetworks>,
    /// Rewritten pages, reused while their upstream page is unchanged.
    pub rendered: super::rendered::SharedRendered,
    /// What each route target and User-Agent resolves for.
    pub targets: super::targets::TargetMemo,
    /// Request, cache and upstream counters (`/metrics`, the status page).
    pub metrics: Arc<wheelgate_index::metrics::Metrics>,
    /// This server's hold on its cache directory, for as long as any handler may use it.
    pub cache_lock: Arc<wheelgate_index::cache::lock::CacheDirLock>,
}
