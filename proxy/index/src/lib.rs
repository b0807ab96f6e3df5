//! wheelgate's index side: reading package index pages from the upstreams a company names, and
//! the plumbing every later crate of the server shares.
//!
//! - [`upstream`]: the HTTP client, its breakers and each source's access settings;
//! - [`sources`]: the upstream indexes, which names each owns, and a project's pages from all
//!   its owners;
//! - [`cache`]: index pages (TTL, revalidation, stale on failure), the object-store bucket both
//!   caches share, and the cache directory one server holds at a time;
//! - [`metrics`]: request, cache and upstream counters (Prometheus);
//! - [`cpu_pool`]: threads for CPU-heavy work kept off the connections' threads (page parsing);
//! - [`sync`]: locking shared by the server's maps, counters and queues;
//! - [`error_chain`] and [`units`]: small text helpers.

pub mod cache;
pub mod cpu_pool;
pub mod error_chain;
pub mod metrics;
pub mod sources;
pub mod sync;
pub mod units;
pub mod upstream;
