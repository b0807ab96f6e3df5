//! `wheelgate mirror sync`: resolve what users install for every target environment and copy
//! the union of the resolutions from the upstreams into a store that
//! `wheelgate serve --offline --cache-dir STORE` serves completely, on a machine with no
//! network; `wheelgate mirror lock` writes each environment's PEP 751 lock without downloading.
//!
//! The store is a cache directory written by the server's own caches, so there is one format:
//! index pages under `index/` by the [`IndexCache`](wheelgate_index::cache::index::IndexCache), files and
//! `.metadata` files under `files/` by the [`FileCache`](wheelgate_files::cache::FileCache) (sha256
//! verified, committed atomically), the locks under `locks/`. `mirror-complete.json` at its root
//! is written last, only when everything succeeded.
//!
//! - [`config`]: the TOML configuration (sample: `deploy/mirror.toml`), checked up front;
//! - [`environment`]: the target environments and their PEP 508 marker values;
//! - [`select`]: which files of a page an entry (or an environment) takes (pure);
//! - core metadata, from a PEP 658 file or a wheel by ranges: `wheelgate_files::metadata` and
//!   `wheelgate_files::wheel_metadata`;
//! - [`solver`]: `PubGrub` over what is known of one environment (pure);
//! - [`fetch`]: pages and metadata, each fetched once for all environments;
//! - [`candidates`]: the versions and files of a project in one environment (pure);
//! - [`bind`], [`by_page`]: projects built against torch, bound by metadata or by page;
//! - [`extras`]: AMD's device extras, required per declared machine;
//! - [`resolve`]: feeds the solver, every environment concurrently;
//! - [`plan`]: the pages to fetch and the files to download;
//! - [`lock`](mod@lock): PEP 751 locks;
//! - [`sync`](mod@sync): downloads, progress hooks, the completeness check and the marker; the dry run.

pub mod bind;
pub mod by_page;
pub mod candidates;
pub mod config;
pub mod derived;
pub mod environment;
pub mod extras;
pub mod failure;
pub mod fetch;
pub mod lock;
pub mod plan;
pub mod resolve;
pub mod select;
pub mod serve_config;
pub mod solver;
pub mod sync;
pub mod variants;

pub use config::{Constraint, MirrorConfig, MirrorConfigError, PackageEntry, PythonVersion};
pub use environment::{Build, Environment, environments};
pub use plan::{FileKind, Plan, PlanError, PlannedFile, PlannedPage, Unmatched};
pub use resolve::{Resolution, ResolveError, ResolvedPackage};
pub use sync::{
    DryRun, FileOutcome, MARKER, NoProgress, SyncError, SyncOptions, SyncProgress, SyncReport,
    dry_run, lock, sync,
};
