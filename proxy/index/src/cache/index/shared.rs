//! Index pages shared between replicas through the `[object_store]` bucket, so that a fleet
//! behind one load balancer behaves like one cache:
//!
//! - **A cold replica** (no copy in memory or on disk) takes the bucket's copy before asking
//!   the upstream, whatever its age; an expired one is served at once and refreshed in the
//!   background like any stale page, and during an upstream outage it is what the fleet saw.
//! - **A refresh** of an expired copy first asks whether the bucket holds one fetched after
//!   ours and still within the TTL (a `HEAD` for the object's write time, then the copy); if so
//!   it adopts it without asking the upstream, so the fleet asks the upstream about once per
//!   TTL rather than once per replica.
//! - **Publishing**: a copy fetched upstream and admitted (`admit.rs`), or revalidated by a
//!   304 (its new fetch time is news to the others), is written to the bucket in the
//!   background with one `PUT`. A copy `admit` refused is never published.
//!
//! A bucket copy is judged like an upstream answer: one that is not a stored page, names
//! another URL, or does not parse is ignored (logged), and one `admit` refuses against ours is
//! not adopted. The bucket failing never fails a page request: `Bucket` logs, records and rests.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tracing::{debug, info, warn};

use super::admit::{Verdict, admit};
use super::{CachedPage, Inner, StoredPage, page_key, parse, write_temp, younger_than};
use crate::metrics::IndexOutcome;
use crate::upstream::{UpstreamClient, redact};

impl Inner {
    /// The bucket's copy of `url`, made the cached copy when it may replace ours: any copy when
    /// nothing is cached (a cold replica); otherwise only one fetched after ours and still
    /// fresh, and only while ours is expired. `None`: no bucket, no such copy, the bucket
    /// failing, or a copy that may not replace ours.
    pub(super) async fn adopt_from_bucket(
        &self,
        client: &UpstreamClient,
        url: &str,
    ) -> Option<Arc<CachedPage>> {
        let bucket = self.bucket.as_ref()?;
        let cached = self.cached(url).await;
        let key = page_key(url);
        if let Some(old) = &cached {
            if self.is_fresh(old) {
                return None;
            }
            // The object's write time bounds the copy's fetch time from above: one written
            // before the TTL began holds nothing fresh, and a `HEAD` spares reading it.
            let written = bucket.page_written_at(&key).await?;
            if !younger_than(written, self.ttl) {
                return None;
            }
        }
        let bytes = bucket.get_page(&key).await?;
        let stored = self.stored_from_bucket(url, &bytes)?;
        let fetched_at = UNIX_EPOCH + Duration::from_secs(stored.fetched_at_secs);
        if let Some(old) = &cached
            && !(secs(fetched_at) > secs(old.fetched_at()) && younger_than(fetched_at, self.ttl))
        {
            debug!(url = %redact(url), bucket = bucket.name(), "the object store holds no fresher copy of the page");
            return None;
        }
        let page = match admit(parse(&stored), cached.as_deref()) {
            Verdict::Accept(page) => page,
            Verdict::Refuse { reason, detail } => {
                warn!(url = %redact(url), bucket = bucket.name(), reason = reason.as_str(), detail = %detail, "not adopting the object store's copy of the page; asking the upstream");
                return None;
            }
            Verdict::Unparseable(err) => {
                warn!(url = %redact(url), bucket = bucket.name(), error = %err, "ignoring the object store's copy of the page: it does not parse");
                return None;
            }
        };
        self.write_local(url, bytes).await;
        // Selection groups a page from the bucket itself.
        let page = self.install(url, cached.as_ref(), &stored, page, None);
        bucket.count_page_hit();
        client.metrics().index_lookup(IndexOutcome::Bucket);
        info!(
            url = %redact(url),
            bucket = bucket.name(),
            age_secs = fetched_at.elapsed().map_or(0, |age| age.as_secs()),
            "index page taken from the object store"
        );
        Some(page)
    }

    /// `bytes` as the stored copy of `url`, or `None` (logged) when it is not one.
    fn stored_from_bucket(&self, url: &str, bytes: &[u8]) -> Option<StoredPage> {
        let bucket = self.bucket.as_ref().map_or("", |bucket| bucket.name());
        match StoredPage::from_bytes(bytes) {
            Ok(stored) if stored.url == url => Some(stored),
            Ok(stored) => {
                warn!(url = %redact(url), bucket, stored_url = %redact(&stored.url), "ignoring the object store's copy of the page: it is another URL's");
                None
            }
            Err(err) => {
                warn!(url = %redact(url), bucket, error = %err, "ignoring the object store's copy of the page: it is not a stored page");
                None
            }
        }
    }

    /// Writes a copy taken from the bucket to the local cache directory (atomically, on a
    /// blocking thread), so a restart or the memory bound does not ask the bucket again.
    async fn write_local(&self, url: &str, bytes: Bytes) {
        let path = self.path_for(url);
        let written = tokio::task::spawn_blocking(move || {
            let temp = write_temp(&path, &[&bytes])?;
            std::fs::rename(&temp, &path).inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            })
        })
        .await
        .map_err(std::io::Error::other)
        .flatten();
        if let Err(err) = written {
            warn!(url = %redact(url), error = %err, "could not write the index page to the cache directory");
        }
    }

    /// Publishes `stored` (the copy of `url` just fetched and admitted) in the background.
    pub(super) fn publish(&self, client: &UpstreamClient, url: &str, stored: &Arc<StoredPage>) {
        let Some(bucket) = &self.bucket else { return };
        let (bucket, metrics) = (Arc::clone(bucket), Arc::clone(client.metrics()));
        let (key, stored) = (page_key(url), Arc::clone(stored));
        tokio::spawn(async move {
            let text = Bytes::from(stored.to_bytes());
            if bucket.put_page(key, text).await {
                metrics.page_published();
            }
        });
    }

    /// Publishes the copy a 304 just revalidated, with its new fetch time, in the background:
    /// the disk copy, provided it is the one revalidated (same URL and validators).
    pub(super) fn publish_revalidated(
        &self,
        client: &UpstreamClient,
        url: &str,
        page: &CachedPage,
    ) {
        let Some(bucket) = &self.bucket else { return };
        let (bucket, metrics) = (Arc::clone(bucket), Arc::clone(client.metrics()));
        let (path, url) = (self.path_for(url), url.to_string());
        let (validators, fetched_at_secs) = (page.validators.clone(), secs(page.fetched_at()));
        tokio::spawn(async move {
            let stored = tokio::fs::read(&path)
                .await
                .ok()
                .and_then(|text| StoredPage::from_bytes(&text).ok())
                .filter(|stored| {
                    stored.url == url
                        && stored.etag == validators.etag
                        && stored.last_modified == validators.last_modified
                });
            let Some(mut stored) = stored else {
                debug!(url = %redact(&url), "the disk copy is not the revalidated page; not publishing it");
                return;
            };
            stored.fetched_at_secs = fetched_at_secs;
            let text = Bytes::from(stored.to_bytes());
            if bucket.put_page(page_key(&url), text).await {
                metrics.page_published();
            }
        });
    }

    /// Removes the bucket's copy of `url` (the upstream no longer has the project), in the
    /// background, so no cold replica serves it again.
    pub(super) fn unpublish(&self, url: &str) {
        let Some(bucket) = &self.bucket else { return };
        tokio::spawn(Arc::clone(bucket).remove_page(page_key(url)));
    }
}

/// Whole seconds since the epoch: the resolution a stored page keeps its fetch time in.
fn secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
