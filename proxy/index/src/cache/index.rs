//! The index-page cache: upstream pages are fresh for a TTL, then revalidated with their
//! `ETag`/`Last-Modified`; offline, only what is cached. Pages are kept in memory (bounded, least
//! recently used out first) and written to disk (atomically) so that an offline or restarted
//! server still has them.
//!
//! Availability comes first, because every request (a page, or a cached file, whose upstream
//! URL and hash come from the page) needs a page:
//!
//! - **Stale while revalidate** (the server's mode): an expired page is answered from the cache
//!   at once and refreshed in the background. Only a page never seen waits for the upstream.
//! - **One refresh per URL**, in its own task, shared by every request that needs it; its entry
//!   is removed when it ends, so nothing grows with the number of names asked for.
//! - **A bad answer never replaces a good copy** (`index/admit.rs`): a page that does not parse, that
//!   lists no file where the cached one listed some, that is cut short or too large, is refused
//!   (logged, counted in `wheelgate_index_pages_rejected_total`) and the cached copy served,
//!   with the next try a little later. Files a new copy no longer lists stay known for a while
//!   (`CachedPage::retired`), so a download a client already started can finish.
//! - **Shared through the bucket** (with `[object_store]`, `index/shared.rs`): a cold replica
//!   takes the bucket's copy before asking the upstream, a refresh adopts a fresher copy another
//!   replica published, and a copy fetched or revalidated upstream is published for the others.

mod admit;
mod arriving;
mod memory;
mod shared;
mod stored;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tracing::{debug, info, warn};
use wheelgate_resolver::index::{
    IndexFile, IndexParseError, ProjectPage, parse_project_html, parse_project_json, resolve_url,
};

use wheelgate_resolver::select::FileGroups;

use crate::cache::bucket::Bucket;
use crate::cpu_pool::CpuPool;
use crate::metrics::{IndexOutcome, PageRejection, upstream_label};
use crate::sync::lock;
use crate::upstream::{PageBody, PageResponse, UpstreamClient, UpstreamError, Validators, redact};

use self::admit::{Verdict, admit};
use self::arriving::ArrivingPage;
use self::memory::PageMemory;
use self::stored::StoredPage;

/// What an index request asks upstreams for: JSON where the upstream speaks it, else HTML.
pub const UPSTREAM_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

/// Parsed pages kept in memory at most (estimated bytes) unless [`IndexCache::with_memory`]
/// says otherwise; older ones are read back from disk when asked for again.
const MEMORY_BUDGET: usize = 30 * 1024 * 1024;
/// Estimated memory of one file's entry in a page's `FileGroups` (its index, where its
/// platform lies in its name, a backend where its directory disagrees), for the budget.
const GROUPED_FILE_WEIGHT: usize = 48;
/// After a refresh that failed or was refused, the cached copy is served without asking the
/// upstream again for this long.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// How long a file a newer copy of its page dropped stays downloadable.
const RETIRED_FOR: Duration = Duration::from_hours(1);

/// How long a request waits for an expired page's revalidation (with stale-while-revalidate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revalidation {
    /// Up to the cache's wait: a page answered to a client shows a release published since.
    Wait,
    /// Not at all: the copy at once, its refresh in the background. For a file's lookup, which
    /// needs the page only to find a file the copy already lists (one it does not list waits
    /// for the refreshed page, `server/lookup.rs`), so a cached file is never held by its
    /// page's revalidation.
    Background,
}

/// One cached upstream page, parsed.
#[derive(Debug)]
pub struct CachedPage {
    /// The URL the page was fetched from; relative links resolve against it.
    pub url: String,
    pub page: ProjectPage,
    /// Changes whenever the page's content changes, so derived responses can be cached by it.
    pub generation: u64,
    /// When it was fetched or last revalidated, in milliseconds since the epoch: a 304 moves it
    /// forward in place, so revalidating a page never copies it.
    fetched_at_ms: AtomicU64,
    validators: Validators,
    /// Files an earlier copy of the page listed and this one does not, with when they were
    /// dropped: still downloadable for [`RETIRED_FOR`] (never shown on a page).
    retired: Vec<(IndexFile, SystemTime)>,
    /// Milliseconds since the epoch before which no refresh is tried (after a failed one).
    retry_at_ms: AtomicU64,
    /// Estimated memory, for the in-memory budget.
    weight: usize,
    /// The page's files grouped for selection (`FileGroups`), made while it was parsed when a
    /// selected project asked for it; `None` otherwise (selection then groups them itself).
    pub groups: Option<Arc<FileGroups>>,
}

impl CachedPage {
    /// The file named `filename`: listed on the page, or dropped by a recent refresh.
    pub fn find(&self, filename: &str) -> Option<&IndexFile> {
        self.page
            .files
            .iter()
            .find(|f| f.filename == filename)
            .or_else(|| {
                self.retired
                    .iter()
                    .find(|(f, at)| f.filename == filename && younger_than(*at, RETIRED_FOR))
                    .map(|(f, _)| f)
            })
    }

    /// When the page was last fetched or revalidated.
    pub fn fetched_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.fetched_at_ms.load(Ordering::Relaxed))
    }

    /// Marks the page revalidated now (a 304): fresh again, and any wait after a failed refresh
    /// over.
    fn revalidated_now(&self) {
        self.fetched_at_ms.store(now_ms(), Ordering::Relaxed);
        self.retry_at_ms.store(0, Ordering::Relaxed);
    }

    /// Several sources' pages merged into one (`sources::merge`, links absolute), known by the
    /// first page's `url`; never stored.
    pub fn merged(url: &str, page: ProjectPage, generation: u64) -> CachedPage {
        CachedPage {
            url: url.to_string(),
            page,
            generation,
            fetched_at_ms: AtomicU64::new(now_ms()),
            validators: Validators::default(),
            retired: Vec::new(),
            retry_at_ms: AtomicU64::new(0),
            weight: 0,
            groups: None,
        }
    }

    /// A page fetched now from `url`, outside any cache: for tests of what is built on pages.
    #[cfg(test)]
    pub fn for_tests(url: &str, page: ProjectPage) -> CachedPage {
        CachedPage::merged(url, page, 1)
    }
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
    /// A refresh shared by several requests failed.
    #[error(transparent)]
    Shared(Arc<IndexError>),
}

impl IndexError {
    /// The page's URL (credentials possible: label or redact before showing).
    pub fn url(&self) -> &str {
        match self.root() {
            IndexError::Upstream { url, .. } | IndexError::Parse { url, .. } => url,
            IndexError::Shared(_) => unreachable!("root() sees through shared errors"),
        }
    }

    /// The error itself, seen through a shared refresh.
    pub fn root(&self) -> &IndexError {
        match self {
            IndexError::Shared(inner) => inner.root(),
            other => other,
        }
    }
}

type RefreshResult = Result<Option<Arc<CachedPage>>, Arc<IndexError>>;

/// Cached upstream index pages; cheap to share (`Arc` inside).
pub struct IndexCache {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    ttl: Duration,
    offline: bool,
    /// Answer expired pages after at most `revalidate_wait` while they refresh (the server);
    /// without it, after the refresh (`mirror sync`).
    stale_while_revalidate: bool,
    revalidate_wait: Duration,
    /// The bucket pages are shared through, when `[object_store]` is configured.
    bucket: Option<Arc<Bucket>>,
    pages: Mutex<PageMemory>,
    /// Where pages are parsed (`cpu_pool.rs`); here, on the caller's thread, without one.
    parsers: Option<CpuPool>,
    /// Where fetched pages are written to disk (`serve/background.rs`); on the runtime's
    /// blocking threads without one.
    writer: Option<CpuPool>,
    /// The refresh in flight per URL; an entry lives only while its refresh runs.
    refreshing: Mutex<std::collections::HashMap<String, watch::Receiver<Option<RefreshResult>>>>,
    generations: AtomicU64,
}

impl IndexCache {
    /// A cache keeping its pages under `root/index/`. An expired page is refreshed before it
    /// is answered (what `mirror sync` needs); the server turns on
    /// [`IndexCache::stale_while_revalidate`]. Removes temporary files an interrupted write left.
    pub fn new(
        root: &std::path::Path,
        ttl: Duration,
        offline: bool,
    ) -> std::io::Result<IndexCache> {
        let dir = root.join("index");
        crate::cache::private::create_dir(&dir)?;
        remove_temporary_files(&dir);
        Ok(IndexCache {
            inner: Arc::new(Inner {
                dir,
                ttl,
                offline,
                stale_while_revalidate: false,
                revalidate_wait: Duration::ZERO,
                bucket: None,
                pages: Mutex::new(PageMemory::new(MEMORY_BUDGET)),
                parsers: None,
                writer: None,
                refreshing: Mutex::default(),
                generations: AtomicU64::new(1),
            }),
        })
    }

    /// This cache, revalidating an expired page before it is answered for at most `wait`, then
    /// answering the cached copy while the refresh goes on (one per URL): a release published
    /// upstream is served once the page's freshness ends, and a slow or failing upstream costs a
    /// request `wait` at most (a failing one, nothing: its error is answered by the copy).
    #[must_use]
    pub fn stale_while_revalidate(self, wait: Duration) -> IndexCache {
        self.configured(|inner| Inner {
            stale_while_revalidate: true,
            revalidate_wait: wait,
            ..inner
        })
    }

    /// This cache, holding parsed pages of at most `budget` estimated bytes in memory.
    #[must_use]
    pub fn with_memory(self, budget: usize) -> IndexCache {
        self.configured(|inner| Inner {
            pages: Mutex::new(PageMemory::new(budget)),
            ..inner
        })
    }

    /// This cache, parsing pages (and reading their disk copies) on `parsers`' threads.
    #[must_use]
    pub fn with_parsers(self, parsers: CpuPool) -> IndexCache {
        self.configured(|inner| Inner {
            parsers: Some(parsers),
            ..inner
        })
    }

    /// This cache, writing fetched pages to disk on `writer`'s threads.
    #[must_use]
    pub fn with_writer(self, writer: CpuPool) -> IndexCache {
        self.configured(|inner| Inner {
            writer: Some(writer),
            ..inner
        })
    }

    /// This cache, sharing its pages with other replicas through `bucket` (`index/shared.rs`).
    #[must_use]
    pub fn with_bucket(self, bucket: Option<Arc<Bucket>>) -> IndexCache {
        self.configured(|inner| Inner { bucket, ..inner })
    }

    /// This cache with `edit` applied to its settings: the builder methods run right after
    /// `new()`, before the cache is shared.
    fn configured(self, edit: impl FnOnce(Inner) -> Inner) -> IndexCache {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|_| {
            unreachable!("called right after new(), before the cache is shared")
        });
        IndexCache {
            inner: Arc::new(edit(inner)),
        }
    }

    /// The page at `url`: from cache while fresh; when expired, the cached copy at once with a
    /// background refresh (or, without stale-while-revalidate, after the refresh); a page never
    /// seen from the upstream. `Ok(None)` when the upstream has no such project (or, offline,
    /// nothing is cached).
    pub async fn get(
        &self,
        client: &UpstreamClient,
        url: &str,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        self.get_with(client, url, Revalidation::Wait, false).await
    }

    /// [`IndexCache::get`], waiting for an expired page's revalidation as `revalidation` says;
    /// a page fetched now is grouped for selection when `grouped` (see `index/arriving.rs`).
    pub async fn get_with(
        &self,
        client: &UpstreamClient,
        url: &str,
        revalidation: Revalidation,
        grouped: bool,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        let inner = &self.inner;
        let revalidate_wait = match revalidation {
            Revalidation::Wait => inner.revalidate_wait,
            Revalidation::Background => Duration::ZERO,
        };
        let cached = inner.cached(url).await;
        if let Some(page) = &cached {
            if inner.offline || inner.is_fresh(page) {
                client.metrics().index_lookup(IndexOutcome::Hit);
                return Ok(Some(Arc::clone(page)));
            }
            if inner.stale_while_revalidate && retry_due(page) {
                let refresh = Inner::refresh(inner, client, url, grouped);
                // The revalidation's answer when it comes in time; the copy otherwise (it goes
                // on in the background) and when the upstream fails (stale-if-error).
                if let Ok(Ok(answer)) =
                    tokio::time::timeout(revalidate_wait, Self::wait(refresh)).await
                {
                    return Ok(answer);
                }
                client.metrics().index_lookup(IndexOutcome::Stale);
                return Ok(Some(Arc::clone(page)));
            }
            if inner.stale_while_revalidate || !retry_due(page) {
                client.metrics().index_lookup(IndexOutcome::Stale);
                return Ok(Some(Arc::clone(page)));
            }
        } else if inner.offline && inner.bucket.is_none() {
            return Ok(None);
        }
        // Offline, the refresh asks only the bucket: like files, it is not an upstream.
        Self::wait(Inner::refresh(inner, client, url, grouped)).await
    }

    /// The page at `url` when a fresh copy of it is in memory (offline: any copy), counted as
    /// a hit; `None` otherwise, for [`IndexCache::get_with`] to find out. What nearly every page
    /// request finds, answered without a future.
    pub fn fresh_in_memory(&self, client: &UpstreamClient, url: &str) -> Option<Arc<CachedPage>> {
        let inner = &self.inner;
        let page = lock(&inner.pages).get(url)?;
        if !(inner.offline || inner.is_fresh(&page)) {
            return None;
        }
        client.metrics().index_lookup(IndexOutcome::Hit);
        Some(page)
    }

    /// The page at `url` as the upstream has it now: joins (or starts) a refresh and waits for
    /// it, falling back to the cached copy when the upstream fails. For a file the cached copy
    /// does not list, which a newer page may.
    pub async fn get_refreshed(
        &self,
        client: &UpstreamClient,
        url: &str,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        if self.inner.offline {
            return self.get(client, url).await;
        }
        if let Some(page) = self.inner.cached(url).await
            && !retry_due(&page)
        {
            // A refresh just failed: not again so soon.
            return Ok(Some(page));
        }
        Self::wait(Inner::refresh(&self.inner, client, url, false)).await
    }

    async fn wait(
        mut receiver: watch::Receiver<Option<RefreshResult>>,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        let waited = receiver
            .wait_for(Option::is_some)
            .await
            .map(|result| result.clone());
        // The refresh task ended without a word (a panic): its last value, if any.
        let result = waited.unwrap_or_else(|_| receiver.borrow().clone());
        match result {
            Some(Ok(page)) => Ok(page),
            Some(Err(err)) => Err(IndexError::Shared(err)),
            None => Ok(None),
        }
    }

    /// The cached copy of `url`, fresh or not, without contacting an upstream.
    pub async fn peek(&self, url: &str) -> Option<Arc<CachedPage>> {
        self.inner.cached(url).await
    }

    /// How many refreshes are running (for tests and the status page).
    pub fn refreshes_in_flight(&self) -> usize {
        lock(&self.inner.refreshing).len()
    }

    /// How many parsed pages are held in memory.
    pub fn pages_in_memory(&self) -> usize {
        lock(&self.inner.pages).len()
    }
}

impl Inner {
    fn is_fresh(&self, page: &CachedPage) -> bool {
        younger_than(page.fetched_at(), self.ttl)
    }

    /// Joins the refresh of `url` in flight, or starts one in its own task (so a client that
    /// goes away never cancels it).
    fn refresh(
        this: &Arc<Inner>,
        client: &UpstreamClient,
        url: &str,
        grouped: bool,
    ) -> watch::Receiver<Option<RefreshResult>> {
        let mut refreshing = lock(&this.refreshing);
        if let Some(receiver) = refreshing.get(url) {
            return receiver.clone();
        }
        let (sender, receiver) = watch::channel(None);
        refreshing.insert(url.to_string(), receiver.clone());
        drop(refreshing);
        let inner = Arc::clone(this);
        let client = client.clone();
        let url = url.to_string();
        tokio::spawn(async move {
            // Removes the entry however the task ends, so the map holds only live refreshes;
            // before the result is published, so whoever it wakes sees the refresh over.
            let entry = RefreshEntry {
                inner: &inner,
                url: &url,
            };
            let (result, expired) = match inner.adopt_from_bucket(&client, &url).await {
                Some(page) => {
                    let expired = !inner.is_fresh(&page);
                    (Ok(Some(page)), expired)
                }
                None if inner.offline => (Ok(None), false),
                None => (
                    inner.fetch(&client, &url, grouped).await.map_err(Arc::new),
                    false,
                ),
            };
            drop(entry);
            sender.send_replace(Some(result));
            // A cold replica took an expired copy from the bucket: it was served at once, and
            // is refreshed now like any stale page.
            if expired && inner.stale_while_revalidate && !inner.offline {
                drop(Inner::refresh(&inner, &client, &url, grouped));
            }
        });
        receiver
    }

    /// One refresh: asks the upstream, admits the answer (grouped for selection when
    /// `grouped`) or keeps the cached copy.
    async fn fetch(
        self: &Arc<Self>,
        client: &UpstreamClient,
        url: &str,
        grouped: bool,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        // Usually in memory by now (every refresh starts after a `cached` lookup); a cold page's
        // disk lookup is one `stat` (see `cached`).
        let cached = self.cached(url).await;
        let validators = cached.as_ref().map(|p| p.validators.clone());
        let mut arriving = ArrivingPage::new(self.parsers.clone(), grouped);
        let response = client
            .get_page(
                url,
                UPSTREAM_ACCEPT,
                validators.as_ref(),
                Some(&mut arriving),
            )
            .await;
        match response {
            Ok(PageResponse::Fresh {
                body,
                content_type,
                validators,
                moved_to,
            }) => {
                // Its body is put in once the reader gives it back (`arriving.rs`).
                let stored = StoredPage {
                    url: url.to_string(),
                    content_type,
                    body: String::new(),
                    etag: validators.etag,
                    last_modified: validators.last_modified,
                    fetched_at_secs: now_secs(),
                    moved_to,
                };
                self.take_fresh(client, url, cached, (stored, body), arriving)
                    .await
            }
            Ok(PageResponse::NotModified) => {
                let Some(old) = cached else { return Ok(None) };
                debug!(url = %redact(url), "index page revalidated");
                client.metrics().index_lookup(IndexOutcome::Revalidated);
                // The same copy, its fetch time moved: its generation (and so every rendering
                // made from it) stays valid, and nothing is copied, however large the page.
                old.revalidated_now();
                self.remember(url, &old);
                self.publish_revalidated(client, url, &old);
                Ok(Some(old))
            }
            Ok(PageResponse::NotFound) => {
                if cached.is_some() {
                    info!(url = %redact(url), "the upstream no longer has this project; dropping the cached page");
                    self.forget(url).await;
                    self.unpublish(url);
                }
                Ok(None)
            }
            Err(source) => {
                if let UpstreamError::PageTooLarge { .. } = source {
                    client.metrics().page_rejected(PageRejection::TooLarge);
                } else if let UpstreamError::Truncated { .. } = source {
                    client.metrics().page_rejected(PageRejection::Truncated);
                }
                match cached {
                    Some(stale) => {
                        warn!(url = %redact(url), error = %source, "upstream failed; serving the stale cached page");
                        client.metrics().index_lookup(IndexOutcome::Stale);
                        defer_retry(&stale);
                        Ok(Some(stale))
                    }
                    None => Err(IndexError::Upstream {
                        url: redact(url),
                        source,
                    }),
                }
            }
        }
    }

    /// A new copy from the upstream: stored and served if `admit` accepts it, else the
    /// cached copy stays.
    async fn take_fresh(
        self: &Arc<Self>,
        client: &UpstreamClient,
        url: &str,
        cached: Option<Arc<CachedPage>>,
        (stored, body): (StoredPage, PageBody),
        arriving: ArrivingPage,
    ) -> Result<Option<Arc<CachedPage>>, IndexError> {
        let (stored, parsing) = arriving.finish(stored, body).await;
        let (parsed, groups) = match parsing {
            Ok((page, groups)) => (Ok(rebased(page, url, stored.moved_to.as_deref())), groups),
            Err(err) => (Err(err), None),
        };
        let verdict = admit(parsed, cached.as_deref());
        let page = match verdict {
            Verdict::Accept(page) => page,
            Verdict::Refuse { reason, detail } => {
                let old = cached.expect("only a cached copy can be defended");
                return Ok(Some(defend_cached(client, url, old, reason, &detail)));
            }
            Verdict::Unparseable(source) => {
                // An answer that is not a page is the upstream failing, whatever its status
                // said: counted, and shown as failing on the status page.
                client.metrics().page_rejected(PageRejection::Unparseable);
                client.metrics().page_fetch(
                    url,
                    Some(format!(
                        "its pages cannot be read: {}",
                        crate::error_chain::with_causes(&source)
                    )),
                );
                return Err(IndexError::Parse {
                    url: redact(url),
                    source,
                });
            }
        };
        client.metrics().index_lookup(IndexOutcome::Miss);
        let page = self.install(url, cached.as_ref(), &stored, page, groups);
        let serving = self.stale_while_revalidate;
        let finishing = {
            let (inner, client, url) = (Arc::clone(self), client.clone(), url.to_string());
            let generation = page.generation;
            async move {
                if serving {
                    // The requests waiting for this page are answered first: they were woken
                    // on this runtime just before, and starting the write (a blocking thread,
                    // 0.7 MB of a real-size page) before them made a cold request wait for it.
                    tokio::task::yield_now().await;
                }
                let path = inner.path_for(&url);
                let write = {
                    let (path, stored) = (path.clone(), Arc::clone(&stored));
                    move || write_temp(&path, &[&stored.header(), stored.body.as_bytes()])
                };
                let written = match &inner.writer {
                    Some(writer) => writer.run(write).await,
                    None => tokio::task::spawn_blocking(write)
                        .await
                        .map_err(std::io::Error::other)
                        .flatten(),
                };
                match written {
                    Ok(temp) => inner.commit_write(&url, generation, &temp, &path).await,
                    Err(err) => {
                        warn!(url = %redact(&url), error = %err, "could not write the index page to the cache directory");
                        return;
                    }
                }
                // Only an admitted copy is shared.
                inner.publish(&client, &url, &stored);
            }
        };
        // The server answers as soon as the page is in memory; the disk copy (for a restart or
        // offline) lands moments later. `mirror sync` waits: its store must be complete when it
        // says so.
        if serving {
            tokio::spawn(finishing);
        } else {
            finishing.await;
        }
        Ok(Some(page))
    }

    /// Puts a written temporary copy of `url`'s page in place, unless a newer copy replaced it
    /// in memory meanwhile (its own write, started later, may have finished first).
    async fn commit_write(&self, url: &str, generation: u64, temp: &Path, path: &Path) {
        let current = lock(&self.pages).get(url).map(|page| page.generation);
        let result = if current.is_none_or(|current| current == generation) {
            tokio::fs::rename(temp, path).await
        } else {
            tokio::fs::remove_file(temp).await
        };
        if let Err(err) = result {
            warn!(url = %redact(url), error = %err, "could not write the index page to the cache directory");
        }
    }

    /// Makes `page` (parsed from `stored`) the cached copy in memory, replacing `cached`.
    fn install(
        &self,
        url: &str,
        cached: Option<&Arc<CachedPage>>,
        stored: &StoredPage,
        page: ProjectPage,
        groups: Option<FileGroups>,
    ) -> Arc<CachedPage> {
        let retired = retired_files(cached.map(AsRef::as_ref), &page);
        // The same content again (an upstream without validators): the same
        // generation, so pages rendered from it stay valid.
        let same = cached.filter(|old| old.page == page);
        let generation = same.map(|old| old.generation);
        let mut page = self.build(stored_parts(stored), page, retired);
        let built = Arc::get_mut(&mut page).expect("just built, not shared");
        if let Some(generation) = generation {
            built.generation = generation;
        }
        if let Some(groups) = groups.filter(|groups| groups.len() == built.page.files.len()) {
            built.weight += groups.len() * GROUPED_FILE_WEIGHT;
            built.groups = Some(Arc::new(groups));
        }
        self.remember(url, &page);
        page
    }

    async fn cached(&self, url: &str) -> Option<Arc<CachedPage>> {
        if let Some(page) = lock(&self.pages).get(url) {
            return Some(page);
        }
        // Not in memory: a copy written by an earlier run (or a mirror sync) may be on disk.
        let path = self.path_for(url);
        // The common answer for a cold page, "none", from one stat of the cache directory here
        // (microseconds): asking the parser threads cost a cold request a round trip per source
        // before its upstream requests could start. A copy that is there is read over there.
        if matches!(path.try_exists(), Ok(false)) {
            return None;
        }
        let read = {
            let url = url.to_string();
            move || read_stored(&path, &url)
        };
        let (stored, parsed) = match &self.parsers {
            Some(parsers) => parsers.run(read).await?,
            None => tokio::task::spawn_blocking(read).await.ok()??,
        };
        let page = self.build(stored_parts(&stored), parsed, Vec::new());
        self.remember(url, &page);
        Some(page)
    }

    fn build(
        &self,
        parts: StoredParts,
        page: ProjectPage,
        retired: Vec<(IndexFile, SystemTime)>,
    ) -> Arc<CachedPage> {
        Arc::new(CachedPage {
            url: parts.url,
            weight: parts.body_len * 2 + page.files.len() * 256,
            page,
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
            fetched_at_ms: AtomicU64::new(parts.fetched_at_secs.saturating_mul(1000)),
            validators: parts.validators,
            retired,
            retry_at_ms: AtomicU64::new(0),
            groups: None,
        })
    }

    fn remember(&self, url: &str, page: &Arc<CachedPage>) {
        let replaced = lock(&self.pages).insert(url.to_string(), Arc::clone(page), page.weight);
        // Freeing a real-size page (thousands of files, each with its own allocations) takes a
        // millisecond: not on the request that refreshed it.
        if !replaced.is_empty() {
            tokio::task::spawn_blocking(move || drop(replaced));
        }
    }

    async fn forget(&self, url: &str) {
        lock(&self.pages).remove(url);
        if let Err(err) = tokio::fs::remove_file(self.path_for(url)).await
            && err.kind() != std::io::ErrorKind::NotFound
        {
            warn!(url = %redact(url), error = %err, "cannot remove a cached page");
        }
    }

    fn path_for(&self, url: &str) -> PathBuf {
        self.dir.join(format!("{}.json", page_key(url)))
    }
}

/// What a client is told about an index failure: which upstream and what happened, never the
/// upstream URL (it may carry a private host's path; the log has it).
pub fn client_message(error: &IndexError) -> String {
    match error {
        IndexError::Parse { url, source } => format!(
            "the upstream `{}` sent a project page that cannot be read ({}), and no cached copy exists",
            upstream_label(url),
            crate::error_chain::with_causes(source)
        ),
        IndexError::Upstream { source, url } => {
            let upstream = source.upstream().unwrap_or_else(|| upstream_label(url));
            let what = match source {
                UpstreamError::CircuitOpen { retry_in_secs, .. } => {
                    format!("is failing; it is asked again in {retry_in_secs} s")
                }
                UpstreamError::Timeout { .. } => "did not answer in time".to_string(),
                UpstreamError::Status { status, .. } => format!("answered {status}"),
                UpstreamError::PageTooLarge { limit, .. } => {
                    format!("sent a page over the limit of {limit} bytes")
                }
                UpstreamError::Truncated { .. } => "sent a page cut short".to_string(),
                UpstreamError::Request { .. }
                | UpstreamError::Build(_)
                | UpstreamError::BuildScoped { .. } => "could not be reached".to_string(),
            };
            format!(
                "the upstream `{upstream}` {what}, and this server has no cached copy of the page; try again later"
            )
        }
        IndexError::Shared(inner) => client_message(inner),
    }
}

/// The name a page is kept under, on disk and in the bucket: the sha256 of its URL.
fn page_key(url: &str) -> String {
    hex::encode(Sha256::digest(url.as_bytes()))
}

/// The most one system call of a page's disk copy writes.
const WRITE_PIECE: usize = 64 * 1024;

/// Writes `parts` (a stored page, [`StoredPage`]) one after the other to a temporary file beside
/// `path` (the first half of an atomic write; the caller renames it into place or removes it).
fn write_temp(path: &std::path::Path, parts: &[&[u8]]) -> std::io::Result<PathBuf> {
    use std::io::Write as _;
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let temp = path.with_extension(format!(
        "tmp{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    // In pieces: the writer thread yields its core to a waking serving thread only between
    // system calls (`serve/background.rs`), and one call for a 0.7 MB page held it 0.15 ms.
    let written = crate::cache::private::file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .and_then(|mut file| {
            parts
                .iter()
                .flat_map(|part| part.chunks(WRITE_PIECE))
                .try_for_each(|piece| file.write_all(piece))
        });
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(err);
    }
    Ok(temp)
}

/// A fetched copy `admit` refused: the cached copy is served, and the upstream not asked
/// again for a while.
fn defend_cached(
    client: &UpstreamClient,
    url: &str,
    old: Arc<CachedPage>,
    reason: PageRejection,
    detail: &str,
) -> Arc<CachedPage> {
    client.metrics().page_rejected(reason);
    client.metrics().index_lookup(IndexOutcome::Stale);
    client.metrics().page_fetch(
        url,
        Some(format!(
            "its new copy of a page was refused ({}): {detail}; the cached copy is served",
            reason.as_str()
        )),
    );
    warn!(url = %redact(url), reason = reason.as_str(), detail = %detail, files = old.page.files.len(), "refused the upstream's new copy of the page; serving the cached one");
    defer_retry(&old);
    old
}

/// Removes the refresh's entry when its task ends, however it ends.
struct RefreshEntry<'a> {
    inner: &'a Inner,
    url: &'a str,
}

impl Drop for RefreshEntry<'_> {
    fn drop(&mut self) {
        lock(&self.inner.refreshing).remove(self.url);
    }
}

/// What a stored page contributes besides its parsed body.
struct StoredParts {
    url: String,
    body_len: usize,
    fetched_at_secs: u64,
    validators: Validators,
}

fn stored_parts(stored: &StoredPage) -> StoredParts {
    StoredParts {
        url: stored.url.clone(),
        body_len: stored.body.len(),
        fetched_at_secs: stored.fetched_at_secs,
        validators: Validators {
            etag: stored.etag.clone(),
            last_modified: stored.last_modified.clone(),
        },
    }
}

/// The copy of `url`'s page kept at `path`, parsed; `None` when there is none, or one that cannot
/// be read (said once here: the upstream's copy replaces it).
fn read_stored(path: &Path, url: &str) -> Option<(StoredPage, ProjectPage)> {
    let bytes = std::fs::read(path).ok()?;
    let stored = match StoredPage::from_bytes(&bytes) {
        Ok(stored) => stored,
        Err(err) => {
            warn!(url = %redact(url), error = %err, "ignoring a cached page that cannot be read");
            return None;
        }
    };
    if stored.url != url {
        return None;
    }
    let Ok(parsed) = parse(&stored) else {
        warn!(url = %redact(url), "ignoring a cached page that does not parse");
        return None;
    };
    let parsed = rebased(parsed, url, stored.moved_to.as_deref());
    Some((stored, parsed))
}

/// `page`, fetched from `url`, with its links made to resolve against where a redirect moved
/// it (`moved_to`): its `<base href>` resolved there, or that place itself as its base. Without
/// this a redirected page's relative links (devpi's `../../+f/...`) point nowhere.
fn rebased(mut page: ProjectPage, url: &str, moved_to: Option<&str>) -> ProjectPage {
    if let Some(moved_to) = moved_to {
        let answered_from = resolve_url(url, moved_to);
        page.base = Some(resolve_url(
            &answered_from,
            page.base.as_deref().unwrap_or_default(),
        ));
    }
    page
}

fn parse(stored: &StoredPage) -> Result<ProjectPage, IndexParseError> {
    if is_json(&stored.content_type) {
        parse_project_json(&stored.body)
    } else {
        parse_project_html(&stored.body)
    }
}

/// Whether a page of this `Content-Type` is PEP 691 JSON (else it is read as HTML).
fn is_json(content_type: &str) -> bool {
    content_type.contains("json")
}

/// The files `old` listed (or still kept as retired) that `new` does not.
fn retired_files(old: Option<&CachedPage>, new: &ProjectPage) -> Vec<(IndexFile, SystemTime)> {
    let Some(old) = old else { return Vec::new() };
    let listed: std::collections::HashSet<&str> =
        new.files.iter().map(|f| f.filename.as_str()).collect();
    let now = SystemTime::now();
    let mut retired: Vec<(IndexFile, SystemTime)> = old
        .retired
        .iter()
        .filter(|(f, at)| !listed.contains(f.filename.as_str()) && younger_than(*at, RETIRED_FOR))
        .cloned()
        .collect();
    retired.extend(
        old.page
            .files
            .iter()
            .filter(|f| !listed.contains(f.filename.as_str()))
            .map(|f| (f.clone(), now)),
    );
    if !retired.is_empty() {
        info!(url = %redact(&old.url), dropped = retired.len(), "the upstream page no longer lists some files; they stay downloadable for an hour");
    }
    retired
}

fn retry_due(page: &CachedPage) -> bool {
    now_ms() >= page.retry_at_ms.load(Ordering::Relaxed)
}

fn defer_retry(page: &CachedPage) {
    let later =
        now_ms().saturating_add(u64::try_from(RETRY_AFTER_FAILURE.as_millis()).unwrap_or(0));
    page.retry_at_ms.store(later, Ordering::Relaxed);
}

fn younger_than(at: SystemTime, age: Duration) -> bool {
    at.elapsed().is_ok_and(|elapsed| elapsed < age)
}

/// Temporary files of page writes a crash interrupted (`<hash>.tmp<pid>`). Only those older than
/// a minute: a write takes milliseconds, and another process (a `mirror sync` into a directory a
/// server reads) may be writing one right now.
fn remove_temporary_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_temp = path
            .extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| ext.starts_with("tmp"));
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| !younger_than(modified, Duration::from_mins(1)));
        if is_temp && old {
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    info!(path = %path.display(), "removed a temporary index file left by an earlier run");
                }
                Err(err) => {
                    warn!(path = %path.display(), error = %err, "cannot remove a temporary index file");
                }
            }
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
