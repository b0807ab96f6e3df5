//! Caps on upstream downloads in flight, in total and per upstream origin (scheme, host and
//! port), so a flood of requests for distinct uncached files cannot open an unbounded number of
//! downloads (each up to gigabytes on PyTorch's index). A download beyond a cap waits for a slot
//! up to a deadline, then is refused as busy (503 with `Retry-After`, which pip and uv retry);
//! requests for a file already downloading join it and need no slot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use wheelgate_config::limits::SlotLimits;

/// The slots of one file cache.
#[derive(Debug)]
pub struct DownloadSlots {
    limits: SlotLimits,
    total: Arc<Semaphore>,
    per_origin: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A download's hold on its slots, released when the download ends (dropped).
#[derive(Debug)]
pub struct Slot {
    _total: OwnedSemaphorePermit,
    _origin: OwnedSemaphorePermit,
}

/// Why no slot was had: every one stayed taken for the whole wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// The cap that was full: `total` or `per_upstream`.
    pub cap: &'static str,
    pub limit: usize,
    pub waited: Duration,
}

impl DownloadSlots {
    pub fn new(limits: SlotLimits) -> DownloadSlots {
        DownloadSlots {
            limits,
            total: Arc::new(Semaphore::new(limits.total.max(1))),
            per_origin: Mutex::default(),
        }
    }

    /// A slot for a download from `url`, waiting at most the configured time for one.
    pub async fn acquire(&self, url: &str) -> Result<Slot, Busy> {
        let origin = Arc::clone(
            self.per_origin
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(origin_of(url))
                .or_insert_with(|| Arc::new(Semaphore::new(self.limits.per_upstream.max(1)))),
        );
        let wait = self.limits.wait;
        let deadline = tokio::time::Instant::now() + wait;
        let busy = |cap, limit| Busy {
            cap,
            limit,
            waited: wait,
        };
        // The origin's slot first: a flood on one upstream queues there, leaving the total's
        // slots to the other upstreams.
        let origin = tokio::time::timeout_at(deadline, origin.acquire_owned())
            .await
            .map_err(|_| busy("per_upstream", self.limits.per_upstream))?
            .expect("never closed");
        let total = tokio::time::timeout_at(deadline, Arc::clone(&self.total).acquire_owned())
            .await
            .map_err(|_| busy("total", self.limits.total))?
            .expect("never closed");
        Ok(Slot {
            _total: total,
            _origin: origin,
        })
    }

    /// Downloads holding a slot now.
    pub fn in_use(&self) -> usize {
        self.limits.total.max(1) - self.total.available_permits()
    }
}

impl Default for DownloadSlots {
    fn default() -> Self {
        DownloadSlots::new(SlotLimits::default())
    }
}

/// `scheme://host:port` of `url` (the URL itself when it does not parse).
fn origin_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default(),
            parsed.port_or_known_default().unwrap_or_default()
        ),
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_download_past_a_cap_waits_for_a_slot_then_is_busy() {
        let slots = DownloadSlots::new(SlotLimits {
            total: 3,
            per_upstream: 2,
            wait: Duration::from_millis(300),
        });
        let a1 = slots.acquire("https://a.test/x.whl").await.unwrap();
        let _a2 = slots.acquire("https://a.test:443/y.whl").await.unwrap();
        // The third from the same origin waits; another origin does not.
        let _b1 = slots.acquire("https://b.test/z.whl").await.unwrap();
        assert_eq!(slots.in_use(), 3);
        let err = slots.acquire("https://a.test/w.whl").await.unwrap_err();
        assert_eq!((err.cap, err.limit), ("per_upstream", 2));
        // A slot freed while it waits is taken.
        let waiting = tokio::spawn(async move {
            let slot = slots.acquire("https://a.test/w.whl").await;
            (slot, slots)
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(a1);
        let (slot, slots) = waiting.await.unwrap();
        let _held = slot.unwrap();
        // Every total slot taken (two of `a`, one of `b`): another origin waits on the total.
        let err = slots.acquire("https://c.test/v.whl").await.unwrap_err();
        assert_eq!((err.cap, err.limit), ("total", 3));
    }
}
