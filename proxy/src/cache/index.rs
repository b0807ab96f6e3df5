//! The index-page cache: upstream pages are fresh for a TTL, then revalidated with their
//! `ETag`/`Last-Modified`; when the upstream fails a stale copy is served; offline, only what is
//! cached. Pages are kept in memory and written to disk (atomically) so that an offline or
//! restarted server still has them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, RwLock};
use tracing::{debug, warn};
use wheelgate_resolver::index::{
    IndexParseError, ProjectPage, parse_project_html, parse_project_json,
};

use crate::metrics::IndexOutcome;
use crate::upstream::{PageResponse, UpstreamClient, UpstreamError, Validators, redact};

/// What an index request asks upstreams for: JSON where the upstream speaks it, else HTML.
pub const UPSTREAM_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

/// One cached upstream page, parsed.
#[derive(Debug)]
pub struct CachedPage {
    /// The URL the page was fetched from; relative links resolve against it.
    pub url: String,
    pub page: ProjectPage,
    /// Changes whenever the page's content changes, so derived responses can be cached by it.
    pub generation: u64,
    fetched_at: SystemTime,
    validators: Validators,
}

/// A page request that failed with nothing cached to fall back on.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the upstream index failed and no cached copy of `{url}` exists")]
    Upstream {
        url: String,
        #[source]
        source: UpstreamError,
    },
    #[error("the upstream page `{url}` could not be parsed")]
    Parse {
        url: String,
        #[source]
        source: IndexParseError,
    },
}

/// The on-disk form of a cached page.
#[derive(Serialize, Deserialize)]
struct StoredPage {
    url: String,
    content_type: String,
    body: String,
    etag: Option<String>,
    last_modified: Option<String>,
    fetched_at_secs: u64,
}

/// Cached upstream index pages.
pub struct IndexCache {
    dir: PathBuf,
    ttl: Duration,
    offline: bool,
    pages: RwLock<HashMap<String, Arc<CachedPage>>>,
    /// One refresh per URL at a time, so a burst of clients makes one upstream request.
    refreshing: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    generations: AtomicU64,
}

impl IndexCache {
    /// A cache keeping its pages under `root/index/`.
    pub fn new(
        root: &std::path::Path,
        ttl: Duration,
        offline: bool,
    ) -> std::io::Result<IndexCache> {
        let dir = root.join("index");
        std::fs::create_dir_all(&dir)?;
        Ok(IndexCache {
            dir,
            ttl,
            offline,
            pages: RwLock::new(HashMap::new()),
            refreshing: Mutex::new(HashMap::new()),
            generations: AtomicU64::new(1),
        })
    }

    /// The page at `url`, from cache while fresh, else from the upstream. `Ok(None)` when the
    /// upstream has no such project (or, offline, nothing is cached).
    pub async fn get(
        &self,
        client: &UpstreamClient,
        url: &str,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        if let Some(page) = self.cached(url).await
            && (self.offline || self.is_fresh(&page))
        {
            client.metrics().index_lookup(IndexOutcome::Hit);
            return Ok(Some(page));
        }
        if self.offline {
            return Ok(None);
        }
        let lock = {
            let mut refreshing = self.refreshing.lock().await;
            refreshing.entry(url.to_string()).or_default().clone()
        };
        let _guard = lock.lock().await;
        // Another request may have refreshed it while this one waited.
        let cached = self.cached(url).await;
        if let Some(page) = &cached
            && self.is_fresh(page)
        {
            client.metrics().index_lookup(IndexOutcome::Hit);
            return Ok(Some(page.clone()));
        }
        let validators = cached.as_ref().map(|p| p.validators.clone());
        match client
            .get_page(url, UPSTREAM_ACCEPT, validators.as_ref())
            .await
        {
            Ok(PageResponse::Fresh {
                body,
                content_type,
                validators,
            }) => {
                let stored = StoredPage {
                    url: url.to_string(),
                    content_type,
                    body,
                    etag: validators.etag,
                    last_modified: validators.last_modified,
                    fetched_at_secs: now_secs(),
                };
                client.metrics().index_lookup(IndexOutcome::Miss);
                let page = self.install(stored, true).await?;
                Ok(Some(page))
            }
            Ok(PageResponse::NotModified) => {
                let Some(old) = cached else { return Ok(None) };
                debug!(url = %redact(url), "index page revalidated");
                client.metrics().index_lookup(IndexOutcome::Revalidated);
                let page = Arc::new(CachedPage {
                    url: old.url.clone(),
                    page: old.page.clone(),
                    generation: old.generation,
                    fetched_at: SystemTime::now(),
                    validators: old.validators.clone(),
                });
                self.pages
                    .write()
                    .await
                    .insert(url.to_string(), page.clone());
                Ok(Some(page))
            }
            Ok(PageResponse::NotFound) => Ok(None),
            Err(source) => match cached {
                Some(stale) => {
                    warn!(url = %redact(url), error = %source, "upstream failed; serving the stale cached page");
                    client.metrics().index_lookup(IndexOutcome::Stale);
                    Ok(Some(stale))
                }
                None => Err(IndexError::Upstream {
                    url: redact(url),
                    source,
                }),
            },
        }
    }

    fn is_fresh(&self, page: &CachedPage) -> bool {
        page.fetched_at.elapsed().is_ok_and(|age| age < self.ttl)
    }

    async fn cached(&self, url: &str) -> Option<Arc<CachedPage>> {
        if let Some(page) = self.pages.read().await.get(url) {
            return Some(page.clone());
        }
        // Not in memory: a copy written by an earlier run (or a mirror sync) may be on disk.
        let text = tokio::fs::read_to_string(self.path_for(url)).await.ok()?;
        let stored: StoredPage = serde_json::from_str(&text).ok()?;
        if stored.url != url {
            return None;
        }
        self.install(stored, false).await.ok()
    }

    async fn install(
        &self,
        stored: StoredPage,
        write: bool,
    ) -> Result<Arc<CachedPage>, IndexError> {
        // The disk copy is written to a temporary file on a blocking thread while this one
        // parses (a real-size page is 0.7 MB: its write and its parse each took milliseconds of
        // a cold request), then renamed into place only if the page parsed, so a page is never
        // served before it is stored and a bad page never replaces a good copy.
        let stored = Arc::new(stored);
        let path = self.path_for(&stored.url);
        let writing = write.then(|| {
            let path = path.clone();
            let stored = Arc::clone(&stored);
            tokio::task::spawn_blocking(move || write_temp(&path, &stored))
        });
        let parsed = if stored.content_type.contains("json") {
            parse_project_json(&stored.body)
        } else {
            parse_project_html(&stored.body)
        }
        .map_err(|source| IndexError::Parse {
            url: redact(&stored.url),
            source,
        });
        if let Some(writing) = writing {
            let written = match writing.await {
                Ok(Ok(temp)) if parsed.is_ok() => tokio::fs::rename(&temp, &path).await,
                Ok(Ok(temp)) => tokio::fs::remove_file(&temp).await,
                Ok(Err(err)) => Err(err),
                Err(err) => Err(std::io::Error::other(err)),
            };
            if let Err(err) = written {
                warn!(url = %redact(&stored.url), error = %err, "could not write the index page to the cache directory");
            }
        }
        let page = Arc::new(CachedPage {
            url: stored.url.clone(),
            page: parsed?,
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
            fetched_at: UNIX_EPOCH + Duration::from_secs(stored.fetched_at_secs),
            validators: Validators {
                etag: stored.etag.clone(),
                last_modified: stored.last_modified.clone(),
            },
        });
        let replaced = self
            .pages
            .write()
            .await
            .insert(stored.url.clone(), page.clone());
        // Freeing the previous copy of a real-size page (thousands of files, each with its own
        // allocations) took a millisecond of the request that refreshed it: free it elsewhere.
        if let Some(old) = replaced {
            tokio::task::spawn_blocking(move || drop(old));
        }
        Ok(page)
    }

    fn path_for(&self, url: &str) -> PathBuf {
        self.dir.join(format!(
            "{}.json",
            hex::encode(Sha256::digest(url.as_bytes()))
        ))
    }
}

/// Writes a page to a temporary file beside `path` (named per process and write, so two
/// writes of one page never share it) and returns its name; the caller renames it into place.
fn write_temp(path: &std::path::Path, stored: &StoredPage) -> std::io::Result<PathBuf> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let temp = path.with_extension(format!(
        "tmp{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let text = serde_json::to_vec(stored).map_err(std::io::Error::other)?;
    std::fs::write(&temp, text)?;
    Ok(temp)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
