//! wheelgate, the server: a package index in front of download.pytorch.org and PyPI that serves
//! every machine the right PyTorch build through one index URL.
//!
//! - `wheelgate_config` (`proxy/config/`): the configuration and its defaults;
//! - [`sources`]: the upstream indexes, which names each owns, and a project's pages from all
//!   its owners;
//! - [`upstream`]: the HTTP client, its breakers and each source's access settings;
//! - [`cache`]: index pages (TTL, revalidation, stale on failure) and files (verified, streamed);
//! - [`server`]: the axum app: simple-index routes, files, operations;
//! - [`metrics`]: request, cache and upstream counters (Prometheus);
//! - [`serve`]: building the state and running the server;
//! - [`mirror`]: `wheelgate mirror sync`, a store an offline server serves completely;
//! - [`cli`]: the `wheelgate` command line (shared by the binary and the Python package);
//! - [`cpu_pool`]: threads for CPU-heavy work kept off the connections' threads (page parsing);
//! - [`sync`]: locking shared by the server's maps, counters and queues;
//! - [`error_chain`] and [`units`]: small text helpers shared by the above; [`build_info`]: the
//!   version, commit and build date of this binary.

pub mod build_info;
pub mod cache;
pub mod cli;
pub mod cpu_pool;
pub mod derive;
pub mod error_chain;
pub mod metrics;
pub mod mirror;
pub mod serve;
pub mod server;
pub mod sources;
pub mod sync;
pub mod units;
pub mod upstream;
