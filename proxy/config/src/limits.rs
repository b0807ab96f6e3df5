//! `[limits]`: how long the server waits for upstreams and clients, and how much it takes from
//! either, so that one misbehaving peer can cost a bounded amount of time, memory and sockets.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The real aggregated `download.pytorch.org/whl/torch/` page is about 760 KB; 32 MiB leaves
/// room for forty times that and still fits a 256 MiB pod.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;
/// Well under the 1,024 descriptors a default shell gives a process: the server also needs
/// descriptors for cached files and upstream sockets. Lowered at start when the process's own
/// descriptor limit is smaller.
pub const DEFAULT_MAX_CONNECTIONS: usize = 2048;
/// Room for about eight of PyPI's largest pages (2 MB of JSON each) parsed and a few of their
/// renderings, or a dozen real-size torch pages and a hundred of their renderings, within the
/// 150 MB a server is budgeted (`scripts/bench-memory`).
pub const DEFAULT_PAGE_MEMORY_BYTES: u64 = 48 * 1024 * 1024;

/// `[limits]` of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest upstream index page accepted, in bytes; larger pages are refused (a cached copy
    /// keeps being served).
    pub max_page_bytes: u64,
    /// Seconds one upstream page request may take, connection and whole body included.
    pub upstream_attempt_secs: u64,
    /// Seconds a page fetch may take over all its attempts (retries included). Below pip's 15 s
    /// read timeout, so a client waiting on a cold page hears an error before it gives up.
    pub upstream_deadline_secs: u64,
    /// Consecutive failed requests to one upstream that open its circuit breaker.
    pub breaker_failures: u32,
    /// Seconds an open breaker fails requests to its upstream at once before one request is let
    /// through to probe it.
    pub breaker_open_secs: u64,
    /// Seconds a client may take to send a request's headers. The clock runs whenever a
    /// connection waits for a request, so it also closes silent and idle keep-alive
    /// connections.
    pub header_read_timeout_secs: u64,
    /// Client connections open at once; more wait in the kernel's queue until one closes.
    pub max_connections: usize,
    /// Milliseconds a request waits for an expired page's revalidation before the cached copy
    /// is answered (the revalidation goes on in the background).
    pub revalidate_wait_ms: u64,
    /// Upstream file downloads in flight at once, all upstreams together; a download past it
    /// waits for one to end (see `download_wait_secs`). Requests for a file already
    /// downloading join that download and count once.
    pub max_downloads: usize,
    /// Upstream file downloads in flight at once from one upstream (scheme, host and port).
    pub max_downloads_per_upstream: usize,
    /// Seconds a download waits for a free slot before its request is answered 503 with
    /// `Retry-After` (pip and uv retry it).
    pub download_wait_secs: u64,
    /// Free bytes the cache directory's filesystem must have for `/readyz` to answer ready.
    pub min_free_bytes: u64,
    /// Memory for the index pages held between requests (estimated bytes): the parsed
    /// upstream pages and the pages rendered from them, which a request answers from without
    /// reading the disk or rendering again. Past it the least recently used go; they cost a
    /// read and a parse, or a rendering, when asked for again.
    pub page_memory_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_page_bytes: DEFAULT_MAX_PAGE_BYTES,
            upstream_attempt_secs: 10,
            upstream_deadline_secs: 14,
            breaker_failures: 3,
            breaker_open_secs: 15,
            header_read_timeout_secs: 10,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            revalidate_wait_ms: 1500,
            max_downloads: SlotLimits::default().total,
            max_downloads_per_upstream: SlotLimits::default().per_upstream,
            download_wait_secs: SlotLimits::default().wait.as_secs(),
            min_free_bytes: 64 * 1024 * 1024,
            page_memory_bytes: DEFAULT_PAGE_MEMORY_BYTES,
        }
    }
}

impl LimitsConfig {
    pub fn upstream_attempt(&self) -> Duration {
        Duration::from_secs(self.upstream_attempt_secs.max(1))
    }

    pub fn upstream_deadline(&self) -> Duration {
        Duration::from_secs(self.upstream_deadline_secs.max(1))
    }

    pub fn breaker_open(&self) -> Duration {
        Duration::from_secs(self.breaker_open_secs)
    }

    pub fn revalidate_wait(&self) -> Duration {
        Duration::from_millis(self.revalidate_wait_ms)
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs.max(1))
    }

    /// The caps on upstream downloads in flight.
    /// The share of [`LimitsConfig::page_memory_bytes`] for parsed upstream pages: five
    /// eighths, since a parsed page outweighs its renderings and costs more to make again.
    pub fn parsed_page_memory(&self) -> usize {
        usize::try_from(self.page_memory_bytes / 8 * 5).unwrap_or(usize::MAX)
    }

    /// The rest, for rendered pages.
    pub fn rendered_page_memory(&self) -> usize {
        usize::try_from(self.page_memory_bytes - self.page_memory_bytes / 8 * 5)
            .unwrap_or(usize::MAX)
    }

    pub fn download_slots(&self) -> SlotLimits {
        SlotLimits {
            total: self.max_downloads.max(1),
            per_upstream: self.max_downloads_per_upstream.max(1),
            wait: Duration::from_secs(self.download_wait_secs),
        }
    }
}

/// The file cache's caps on downloads in flight, as `[limits]` sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    /// Downloads in flight from all upstreams together.
    pub total: usize,
    /// Downloads in flight from one upstream origin.
    pub per_upstream: usize,
    /// How long a download waits for a slot before it is refused as busy.
    pub wait: Duration,
}

impl Default for SlotLimits {
    fn default() -> Self {
        SlotLimits {
            total: 64,
            per_upstream: 32,
            // Below pip's 15 s read timeout: the client hears "busy, retry" before it gives up.
            wait: Duration::from_secs(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_memory_is_split_whole_between_parsed_and_rendered_pages() {
        for total in [0, 1, 7, 8, 64 * 1024 * 1024, 1_000_000_007] {
            let limits = LimitsConfig {
                page_memory_bytes: total,
                ..LimitsConfig::default()
            };
            let (parsed, rendered) = (limits.parsed_page_memory(), limits.rendered_page_memory());
            assert_eq!((parsed + rendered) as u64, total);
            assert!(
                parsed >= rendered || total < 8,
                "{total}: {parsed} < {rendered}"
            );
        }
    }
}
