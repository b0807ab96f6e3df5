//! Index pages in the shared bucket, beside the files: `<prefix>/index/<key>.json`, where the
//! key is the sha256 of the page's URL and the object is the JSON the disk cache writes (URL,
//! content type, body, validators, fetch time). This layer moves bytes only; what a copy means
//! (fresher than ours? does it parse?) is decided by the index cache (`cache/index/shared.rs`).
//!
//! The same rules as for files: a bucket that fails is logged with its name, recorded in the
//! health, and rested for [`RETRY_AFTER`](super::RETRY_AFTER); the page request goes on from
//! local disk or the upstream. A page is written with one `PUT`, so another replica sees the
//! whole object or none.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use tracing::{debug, info, warn};

use super::Bucket;

/// A page lookup gives up after this long (the bucket then rests): a page request must not wait
/// on a bucket that stopped answering longer than it would on the upstream.
const PAGE_READ_TIMEOUT: Duration = Duration::from_secs(10);

impl Bucket {
    /// The object page `key` is stored as: `<prefix>/index/<key>.json`.
    fn page_path(&self, key: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(format!("index/{key}.json"))
        } else {
            Path::from(format!("{}/index/{key}.json", self.prefix))
        }
    }

    /// When the bucket's copy of page `key` was written, if it holds one. `None` when it does
    /// not, or when the bucket fails (logged, recorded) or was failing moments ago.
    pub async fn page_written_at(&self, key: &str) -> Option<SystemTime> {
        if self.resting() {
            return None;
        }
        let path = self.page_path(key);
        match tokio::time::timeout(PAGE_READ_TIMEOUT, self.store.head(&path)).await {
            Ok(Ok(meta)) => {
                self.record_ok();
                let secs = u64::try_from(meta.last_modified.timestamp()).unwrap_or(0);
                Some(UNIX_EPOCH + Duration::from_secs(secs))
            }
            Ok(Err(object_store::Error::NotFound { .. })) => {
                self.record_ok();
                None
            }
            Ok(Err(err)) => {
                let err = self.request_error("look up the page", key, &err);
                self.page_read_failed(key, &err);
                None
            }
            Err(_) => {
                let err = self.request_error_text(
                    "look up the page",
                    key,
                    format!("no answer within {PAGE_READ_TIMEOUT:?}"),
                );
                self.page_read_failed(key, &err);
                None
            }
        }
    }

    /// The bucket's copy of page `key`, whole. `None` when it holds none, or when the bucket
    /// fails (logged, recorded) or was failing moments ago.
    pub async fn get_page(&self, key: &str) -> Option<Bytes> {
        if self.resting() {
            return None;
        }
        let path = self.page_path(key);
        let read = async {
            let result = self.store.get(&path).await?;
            result.bytes().await
        };
        match tokio::time::timeout(PAGE_READ_TIMEOUT, read).await {
            Ok(Ok(bytes)) => {
                self.record_ok();
                Some(bytes)
            }
            Ok(Err(object_store::Error::NotFound { .. })) => {
                self.record_ok();
                None
            }
            Ok(Err(err)) => {
                let err = self.request_error("read the page", key, &err);
                self.page_read_failed(key, &err);
                None
            }
            Err(_) => {
                let err = self.request_error_text(
                    "read the page",
                    key,
                    format!("no answer within {PAGE_READ_TIMEOUT:?}"),
                );
                self.page_read_failed(key, &err);
                None
            }
        }
    }

    /// Counts a page served from the bucket's copy.
    pub fn count_page_hit(&self) {
        self.page_hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Publishes page `key` (one `PUT`, replacing any older copy). Logs the outcome and returns
    /// whether it was written; never fails the caller.
    pub async fn put_page(self: Arc<Self>, key: String, body: Bytes) -> bool {
        let size = body.len();
        match self.store.put(&self.page_path(&key), body.into()).await {
            Ok(_) => {
                self.pages_published.fetch_add(1, Ordering::Relaxed);
                debug!(bucket = %self.name, key, size, "index page published to the object store");
                true
            }
            Err(err) => {
                let err = self.request_error("publish the page", &key, &err);
                self.page_publishes_failed.fetch_add(1, Ordering::Relaxed);
                warn!(bucket = %self.name, key, error = %err, "cannot publish an index page to the object store; other replicas fetch it themselves");
                self.record_failure(&err, false);
                false
            }
        }
    }

    /// Removes page `key` (the upstream no longer has the project), so no cold replica serves
    /// it again. Logs a failure; never fails the caller.
    pub async fn remove_page(self: Arc<Self>, key: String) {
        match self.store.delete(&self.page_path(&key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                info!(bucket = %self.name, key, "removed an index page the upstream no longer has from the object store");
            }
            Err(err) => {
                let err = self.request_error("remove the page", &key, &err);
                warn!(bucket = %self.name, key, error = %err, "cannot remove an index page from the object store");
                self.record_failure(&err, false);
            }
        }
    }

    fn page_read_failed(&self, key: &str, err: &super::BucketError) {
        warn!(bucket = %self.name, key, error = %err, "object store page lookup failed; using the local copy or the upstream");
        self.record_failure(err, true);
    }
}

#[cfg(test)]
mod tests {
    use wheelgate_config::ObjectStoreConfig;

    use super::Bucket;

    #[test]
    fn pages_live_under_the_prefix_beside_the_files() {
        let mut config = ObjectStoreConfig::new("b");
        config.endpoint = Some("http://127.0.0.1:1".into());
        config.allow_http = true;
        config.prefix = "/team/cache/".into();
        let bucket = Bucket::connect(&config).unwrap();
        let key = "ab".repeat(32);
        assert_eq!(
            bucket.page_path(&key).as_ref(),
            format!("team/cache/index/{key}.json")
        );
        config.prefix = String::new();
        let bucket = Bucket::connect(&config).unwrap();
        assert_eq!(bucket.page_path(&key).as_ref(), format!("index/{key}.json"));
    }
}
