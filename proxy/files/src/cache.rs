//! The file cache: wheels, sdists and `.metadata` files on local disk under `<root>/files/`.
//!
//! - **Identity**: a file is stored under a key derived from its upstream identity, never from
//!   anything a client wrote: `sha256-<hex>` when the index page gives the file's sha256, else
//!   `url-<sha256 of the upstream URL>`. No client input reaches a path.
//! - **Single flight**: the first request for an uncached file starts one download task; every
//!   request for that file while it runs follows the same growing `*.part` file. The task writes
//!   to disk at upstream speed and each client reads from disk at its own pace (positioned reads
//!   on a shared file handle), so a slow client stalls neither the download nor the others, and
//!   nothing is ever held in memory beyond one chunk per reader.
//! - **Verification and commit**: the sha256 (when the page gives one) and the size (when
//!   known) are checked before the `*.part` file is fsynced and renamed to its key. Readers get
//!   every byte but the last while it downloads; the last only once the file is committed, so a
//!   response that completes carries a verified file that is already cached. A download
//!   that fails or does not verify is deleted and every response following it ends with an error
//!   (pip and uv see a broken transfer, never a short or wrong file); the next request starts
//!   afresh.
//! - **Client disconnects** do not stop a download at once: it runs in its own task, so a client
//!   that retries or resumes joins it again and it is committed for the next client. Once
//!   nobody has read it for a few seconds and it is not nearly done, it is cancelled
//!   (`download.rs`): a dropped `GET` must not pull a multi-gigabyte wheel into the cache.
//! - **Eviction**: least recently used first, after a commit pushes the total past the limit.
//!   Access order lives in memory and is rebuilt at open from the files' modification times
//!   (touched on every hit). An evicted file that is still being served stays readable through
//!   its open handle (the inode lives until the last handle closes).
//! - **Shared bucket** (optional, [`Bucket`]): committed files are uploaded to an S3-compatible
//!   bucket and a local miss looks there before the upstream, so replicas share one cache; local
//!   disk stays a bounded LRU in front of it.

mod direct_write;
mod download;
pub mod range_checks;
mod reader;
mod recent;
pub mod slots;
pub mod splice;
mod store;
pub mod writers;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures_util::Stream;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use wheelgate_index::upstream::{UpstreamClient, UpstreamError, redact};

use self::download::{Origin, Progress};
use self::store::{Lookup, Store};

pub use wheelgate_index::cache::bucket::{Bucket, BucketError, BucketHealth};

/// What the cache needs to know about one upstream file: where it is and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Absolute upstream URL.
    pub url: String,
    /// Hex sha256 from the index page, when it gives one; the download must match it.
    pub sha256: Option<String>,
    /// Size in bytes from the index page (PEP 700), when it gives one; the download must match.
    pub size: Option<u64>,
    /// When set, the file cached is not the upstream's but made from it as it streams in (a
    /// derived wheel); `sha256` and `size` still verify the upstream's bytes. Its own key, never
    /// shared through the bucket (which verifies by the upstream's hash).
    pub splice: Option<std::sync::Arc<splice::Splice>>,
    /// The page that lists it (its URL): the download carries the access of that page's source
    /// only, on that source's origins (`None`: no access). Not part of its key.
    pub listed_on: Option<Arc<str>>,
}

impl FileSpec {
    /// The upstream file this spec's file is made from: itself, unless it is derived.
    #[must_use]
    pub fn upstream(&self) -> FileSpec {
        FileSpec {
            splice: None,
            ..self.clone()
        }
    }
}

/// The most a core metadata file (PEP 658) may weigh when the server or the mirror reads it
/// itself: real ones are kilobytes (torch's about 2 KB).
pub const CORE_METADATA_LIMIT: usize = 8 * 1024 * 1024;

/// Why [`CachedFile::read_small`] gave no bytes.
#[derive(Debug, thiserror::Error)]
pub enum SmallReadError {
    #[error("larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("reading it failed")]
    Io(#[source] io::Error),
}

/// The broad class of a [`FileCacheError`], for the one place that maps errors to HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The upstream has no such file (404, 403, 410), or offline and not cached.
    NotFound,
    /// The upstream failed, stalled, or sent bytes that do not verify.
    Upstream,
    /// The local disk failed.
    Local,
    /// Too many downloads in flight: the client should retry shortly.
    Busy,
}

/// What went wrong getting a file.
#[derive(Debug, thiserror::Error)]
pub enum FileCacheError {
    #[error("cannot use the file cache directory `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{url}` is not cached and the server is offline")]
    NotCached { url: String },
    #[error("the index page gives `{hash}` as the sha256 of `{url}`, which is not a sha256")]
    InvalidHash { url: String, hash: String },
    #[error("the upstream request for `{url}` failed")]
    Upstream {
        url: String,
        #[source]
        source: UpstreamError,
    },
    #[error("the download of `{url}` broke off after {received} bytes")]
    Interrupted {
        url: String,
        received: u64,
        #[source]
        source: reqwest::Error,
    },
    #[error("`{url}` is {actual} bytes long, but {expected} bytes were expected")]
    SizeMismatch {
        url: String,
        expected: u64,
        actual: u64,
    },
    #[error("`{url}` has sha256 `{actual}`, but the index page says `{expected}`")]
    HashMismatch {
        url: String,
        expected: String,
        actual: String,
    },
    #[error(
        "`{url}` verified, but its bytes at offset {offset} differ from what its upstream answered to a ranged read there: the derived file was planned from bytes this file does not hold, and nothing of it is kept"
    )]
    PlannedFromOtherBytes { url: String, offset: u64 },
    #[error("reading `{url}` from the shared object store failed")]
    Bucket {
        url: String,
        #[source]
        source: Box<BucketError>,
    },
    #[error("the download task for `{url}` ended without a result")]
    Abandoned { url: String },
    #[error(
        "`{url}` is larger than the {limit} bytes it may be{}: refused, nothing of it kept",
        announced.map_or(String::new(), |n| format!(" ({n} bytes announced)"))
    )]
    TooLarge {
        url: String,
        limit: u64,
        announced: Option<u64>,
    },
    #[error(
        "`{url}` is not cached and {} downloads are in flight (the `{}` cap of `[limits]`), none of which ended within {} s: retry shortly",
        busy.limit,
        busy.cap,
        busy.waited.as_secs()
    )]
    Busy {
        url: String,
        busy: self::slots::Busy,
    },
    /// The failure of a download shared by several requests.
    #[error(transparent)]
    Shared(Arc<FileCacheError>),
}

impl FileCacheError {
    /// The error itself, seen through a shared download failure.
    pub fn root(&self) -> &FileCacheError {
        match self {
            FileCacheError::Shared(inner) => inner.root(),
            other => other,
        }
    }

    /// The broad class of this error.
    pub fn kind(&self) -> FailureKind {
        match self {
            FileCacheError::Io { .. } => FailureKind::Local,
            FileCacheError::NotCached { .. } => FailureKind::NotFound,
            FileCacheError::Upstream {
                source: UpstreamError::Status { status, .. },
                ..
            } if matches!(status.as_u16(), 403 | 404 | 410) => FailureKind::NotFound,
            FileCacheError::Shared(inner) => inner.kind(),
            FileCacheError::Busy { .. } => FailureKind::Busy,
            _ => FailureKind::Upstream,
        }
    }
}

/// The on-disk file cache; cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct FileCache {
    inner: Arc<Inner>,
}

struct Inner {
    /// `<root>/files`.
    dir: PathBuf,
    store: Mutex<Store>,
    /// The shared bucket, when one is configured.
    bucket: Option<Arc<Bucket>>,
    /// The sha256 of each derived file written since start, by key: what its listing names
    /// once it is known (a page lists a derived file without a hash before, never a wrong one).
    derived: Mutex<std::collections::HashMap<String, String>>,
    /// Derived files committed by an earlier run whose hash is being read back now.
    rehashing: Mutex<std::collections::HashSet<String>>,
    /// Makes every `*.part` name unique, so an abandoned download's file never collides with
    /// the next attempt's.
    part_counter: AtomicU64,
    /// Caps on upstream downloads in flight.
    pub(super) slots: self::slots::DownloadSlots,
    /// Facts read from files by ranges, waiting for the files' verified bytes.
    range_checks: self::range_checks::WaitingChecks,
    /// Where downloads are hashed and written ([`writers`]); tokio's blocking pool without.
    writers: Option<wheelgate_index::cpu_pool::CpuPool>,
}

// Bounded so a file deleted behind the cache's back cannot make a request loop.
const LOOKUP_ATTEMPTS: usize = 3;

impl FileCache {
    /// Opens (creating) the cache under `root/files/`, removes leftover `*.part` files of a
    /// crashed run, rebuilds the access order from the files' modification times and evicts
    /// down to `max_bytes`. Called once at startup; blocking file I/O.
    pub fn open(root: PathBuf, max_bytes: u64) -> Result<FileCache, FileCacheError> {
        FileCache::open_with_bucket(root, max_bytes, None, self::slots::SlotLimits::default())
    }

    /// [`FileCache::open`], with committed files shared through `bucket` and upstream
    /// downloads in flight capped by `slots`.
    pub fn open_with_bucket(
        root: PathBuf,
        max_bytes: u64,
        bucket: Option<Arc<Bucket>>,
        slots: self::slots::SlotLimits,
    ) -> Result<FileCache, FileCacheError> {
        let mut dir = root;
        dir.push("files");
        let store = Store::open(&dir, max_bytes)?;
        info!(dir = %dir.display(), files = store.len(), bytes = store.total_bytes(), max_bytes, "file cache opened");
        Ok(FileCache {
            inner: Arc::new(Inner {
                dir,
                store: Mutex::new(store),
                bucket,
                derived: Mutex::default(),
                rehashing: Mutex::default(),
                part_counter: AtomicU64::new(0),
                slots: self::slots::DownloadSlots::new(slots),
                range_checks: self::range_checks::WaitingChecks::default(),
                writers: None,
            }),
        })
    }

    /// Hashes and writes downloads on `writers` ([`writers::start`]) instead of tokio's
    /// blocking pool. Given before the cache is shared: a cache already cloned keeps the pool.
    #[must_use]
    pub fn with_writers(mut self, writers: wheelgate_index::cpu_pool::CpuPool) -> FileCache {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.writers = Some(writers);
        } else {
            warn!(
                "the file cache was shared before its writers were given: downloads are written on the blocking pool"
            );
        }
        self
    }

    /// The directory files are stored in (`<root>/files`).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The shared bucket, when one is configured.
    pub fn bucket(&self) -> Option<&Arc<Bucket>> {
        self.inner.bucket.as_ref()
    }

    /// The shared bucket's state (for `/readyz` and `/metrics`); `None` without a bucket.
    pub fn object_store_health(&self) -> Option<BucketHealth> {
        self.inner.bucket.as_ref().map(|bucket| bucket.health())
    }

    /// The number of committed files.
    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    /// Whether no file is committed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The total size of committed files in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.inner.lock().total_bytes()
    }

    /// Whether the shared bucket holds `spec`'s file (`false` without a bucket).
    pub async fn in_bucket(&self, spec: &FileSpec) -> bool {
        let (Some(bucket), Ok(key)) = (&self.inner.bucket, CacheKey::for_spec(spec)) else {
            return false;
        };
        spec.splice.is_none() && bucket.find(key.as_str()).await.is_some()
    }

    /// Whether `spec`'s file is being downloaded now.
    pub fn is_downloading(&self, spec: &FileSpec) -> bool {
        CacheKey::for_spec(spec).is_ok_and(|key| self.inner.lock().is_downloading(&key))
    }

    /// Whether `spec`'s file is committed in the cache.
    pub fn contains(&self, spec: &FileSpec) -> bool {
        CacheKey::for_spec(spec).is_ok_and(|key| self.inner.lock().contains(&key))
    }

    /// The path of `spec`'s committed file, to read parts of it in place (a derived wheel is
    /// planned from it); `None` when it is not committed. It may be evicted after: open it once
    /// and read through that handle.
    pub fn committed_path(&self, spec: &FileSpec) -> Option<PathBuf> {
        let key = CacheKey::for_spec(spec).ok()?;
        self.inner
            .lock()
            .contains(&key)
            .then(|| self.inner.dir.join(key.as_str()))
    }

    /// Checks `reads` (`(offset, bytes)` read from `spec`'s upstream file by ranges, which
    /// nothing verified) against the file's verified bytes: now when the cache holds the file,
    /// else as its next download from the upstream passes (a derived file's download too) or
    /// when it is committed. `forget` is called when they differ, or when they cannot be
    /// checked (a download that fails verification, too many files waiting). A file listed
    /// without a sha256 is never verified: nothing is checked.
    pub fn check_ranges(
        &self,
        spec: &FileSpec,
        reads: Vec<(u64, Bytes)>,
        forget: self::range_checks::Forget,
    ) {
        let upstream = spec.upstream();
        if spec.sha256.is_none() {
            return;
        }
        let Ok(key) = CacheKey::for_spec(&upstream) else {
            return;
        };
        let check = self::range_checks::RangeCheck::new(reads, forget);
        {
            let store = self.inner.lock();
            if !store.contains(&key) {
                // Under the store's lock: a commit cannot pass between the look and the wait.
                self.inner.range_checks.wait(key.as_str(), check);
                return;
            }
        }
        let path = self.inner.dir.join(key.as_str());
        let url = redact(&spec.url);
        tokio::task::spawn_blocking(move || match std::fs::File::open(&path) {
            Ok(file) => self::range_checks::run_checks(&file, &url, vec![check]),
            // Evicted meanwhile: nothing to check against now.
            Err(_) => check.forget(),
        });
    }

    /// The sha256 of `spec`'s derived file, once one was written here (`None` before, or for
    /// a file that is not derived).
    pub fn derived_sha256(&self, spec: &FileSpec) -> Option<String> {
        spec.splice.as_ref()?;
        let key = CacheKey::for_spec(spec).ok()?;
        self.inner
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key.as_str())
            .cloned()
    }

    /// The sha256 of `spec`'s derived file once it is committed here: remembered, else (a file
    /// a previous run wrote) read back from disk and remembered. `None` for a file that is not
    /// derived or not committed.
    pub async fn derived_sha256_committed(&self, spec: &FileSpec) -> Option<String> {
        if let Some(known) = self.derived_sha256(spec) {
            return Some(known);
        }
        let path = self.committed_path(spec)?;
        let key = CacheKey::for_spec(spec).ok()?;
        let hashed = tokio::task::spawn_blocking(move || sha256_of_file(&path))
            .await
            .ok()?
            .ok()?;
        self.inner.record_derived(&key, hashed.clone());
        Some(hashed)
    }

    /// The quoted strong `ETag` of `spec`'s file, known without fetching it: the page's sha256,
    /// else the key derived from the URL.
    pub fn etag(spec: &FileSpec) -> Result<String, FileCacheError> {
        CacheKey::for_spec(spec).map(|key| key.etag())
    }

    /// The file of `spec`: from the cache, joining a download in flight, or starting one (never
    /// when `offline`). Returns once the upstream answered with headers, so a missing file is an
    /// error here rather than a broken body; the bytes then stream through [`CachedFile::stream`].
    pub async fn fetch(
        &self,
        client: &UpstreamClient,
        spec: &FileSpec,
        offline: bool,
    ) -> Result<CachedFile, FileCacheError> {
        self.fetch_within(client, spec, offline, None).await
    }

    /// [`FileCache::fetch`] of a file the server reads itself (a core metadata file): a
    /// download it starts is refused ([`FileCacheError::TooLarge`]) once the upstream announces
    /// or sends more than `limit` bytes, before anything past the limit is stored, so a hostile
    /// upstream's 100 MB "metadata" neither fills the cache nor evicts what it holds. A copy
    /// already cached, or a download a client started, is joined as it is (read it with
    /// [`CachedFile::read_small`]).
    pub async fn fetch_small(
        &self,
        client: &UpstreamClient,
        spec: &FileSpec,
        offline: bool,
        limit: u64,
    ) -> Result<CachedFile, FileCacheError> {
        self.fetch_within(client, spec, offline, Some(limit)).await
    }

    async fn fetch_within(
        &self,
        client: &UpstreamClient,
        spec: &FileSpec,
        offline: bool,
        limit: Option<u64>,
    ) -> Result<CachedFile, FileCacheError> {
        let key = CacheKey::for_spec(spec)?;
        let etag = key.etag();
        for _ in 0..LOOKUP_ATTEMPTS {
            let lookup = self.inner.lock().lookup(&key);
            match lookup {
                Lookup::Cached { size, generation } => {
                    let path = self.inner.dir.join(key.as_str());
                    match open_for_reading(path.clone()).await {
                        Ok(file) => {
                            debug!(url = %redact(&spec.url), key = key.as_str(), "file cache hit");
                            if spec.splice.is_some() {
                                Arc::clone(&self.inner).rehash_derived(&key, path.clone());
                            }
                            return Ok(CachedFile {
                                file: Arc::new(file),
                                etag,
                                url: redact(&spec.url),
                                len: Some(size),
                                progress: None,
                            });
                        }
                        // Evicted between the lookup and the open, or deleted behind our back.
                        Err(err) if err.kind() == io::ErrorKind::NotFound => {
                            self.inner.lock().forget(&key, generation);
                        }
                        Err(source) => return Err(FileCacheError::Io { path, source }),
                    }
                }
                Lookup::InFlight { file, progress } => {
                    return CachedFile::follow(file, progress, etag, redact(&spec.url)).await;
                }
                Lookup::Miss => {
                    // A derived file is spliced from this cache's copy of its upstream file
                    // when there is one: no upstream request, offline too.
                    let local = spec.splice.is_some() && self.contains(&spec.upstream());
                    // The bucket is not an upstream: it is asked offline too.
                    let in_bucket = match &self.inner.bucket {
                        Some(bucket) if spec.splice.is_none() => {
                            bucket.find(key.as_str()).await.is_some()
                        }
                        _ => false,
                    };
                    if offline && !in_bucket && !local {
                        return Err(FileCacheError::NotCached {
                            url: redact(&spec.url),
                        });
                    }
                    let origin = if local {
                        Origin::Local
                    } else if in_bucket {
                        Origin::Bucket {
                            upstream_fallback: !offline,
                        }
                    } else {
                        Origin::Upstream
                    };
                    let started = self
                        .start_download(client, spec, &key, (origin, limit))
                        .await?;
                    if let Some(joined) = started {
                        return CachedFile::follow(joined.0, joined.1, etag, redact(&spec.url))
                            .await;
                    }
                }
            }
        }
        Err(FileCacheError::Abandoned {
            url: redact(&spec.url),
        })
    }

    /// Creates the `*.part` file and registers the download, unless another request registered
    /// one meanwhile (then `None`: look up again).
    async fn start_download(
        &self,
        client: &UpstreamClient,
        spec: &FileSpec,
        key: &CacheKey,
        (origin, limit): (Origin, Option<u64>),
    ) -> Result<Option<(Arc<std::fs::File>, watch::Receiver<Progress>)>, FileCacheError> {
        let n = self.inner.part_counter.fetch_add(1, Ordering::Relaxed);
        let part = self
            .inner
            .dir
            .join(format!("{}.{}.{n}.part", key.as_str(), std::process::id()));
        // Created before taking the lock so no file I/O happens under it.
        let file =
            Arc::new(
                create_part(part.clone())
                    .await
                    .map_err(|source| FileCacheError::Io {
                        path: part.clone(),
                        source,
                    })?,
            );
        let (tx, rx) = watch::channel(Progress::Connecting);
        let registered = self
            .inner
            .lock()
            .register(key, Arc::clone(&file), rx.clone());
        if !registered {
            remove_quietly(part).await;
            return Ok(None);
        }
        info!(url = %redact(&spec.url), key = key.as_str(), from_bucket = matches!(origin, Origin::Bucket { .. }), local = origin == Origin::Local, "downloading file");
        let task = download::Download {
            cache: Arc::clone(&self.inner),
            client: client.clone(),
            spec: spec.clone(),
            key: key.clone(),
            origin,
            limit,
            part,
            file: Arc::clone(&file),
            progress: tx,
        };
        // Its own task: a client that disconnects does not stop the download at once.
        tokio::spawn(task.run());
        Ok(Some((file, rx)))
    }
}

impl FileCache {
    /// The bytes `start..end` of `spec`'s file straight from the bucket, when it holds the
    /// file: for a range far ahead of a download in flight. `None` without a bucket, when the
    /// bucket does not hold the file (yet), or fails.
    pub async fn bucket_range(
        &self,
        spec: &FileSpec,
        start: u64,
        end: u64,
    ) -> Option<impl Stream<Item = io::Result<Bytes>> + Send + 'static + use<>> {
        use futures_util::TryStreamExt;
        let bucket = self.inner.bucket.as_ref()?;
        let key = CacheKey::for_spec(spec).ok()?;
        bucket.find(key.as_str()).await?;
        match bucket.get(key.as_str(), Some(start..end)).await {
            Ok((_, stream)) => {
                debug!(
                    key = key.as_str(),
                    start, end, "range answered from the object store"
                );
                Some(stream.map_err(io::Error::other))
            }
            Err(err) => {
                debug!(error = %err, "object store range request failed");
                None
            }
        }
    }
}

impl Inner {
    /// Reads back, in the background, the hash of a derived file an earlier run committed (this
    /// run has not hashed it), so pages list it with its hash again after a restart.
    fn rehash_derived(self: Arc<Self>, key: &CacheKey, path: PathBuf) {
        let name = key.as_str().to_string();
        let known = self
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&name);
        let started = !known
            && self
                .rehashing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.clone());
        if !started {
            return;
        }
        let key = key.clone();
        tokio::task::spawn_blocking(move || {
            match sha256_of_file(&path) {
                Ok(sha256) => self.record_derived(&key, sha256),
                // Evicted meanwhile: the next download hashes it again.
                Err(err) => {
                    debug!(key = key.as_str(), error = %err, "cannot read a derived file back");
                }
            }
            self.rehashing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(key.as_str());
        });
    }

    fn record_derived(&self, key: &CacheKey, sha256: String) {
        /// Hashes remembered at most; a forgotten one only leaves a listing without its hash.
        const REMEMBERED: usize = 65_536;
        let mut derived = self
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if derived.len() >= REMEMBERED {
            derived.clear();
        }
        derived.insert(key.as_str().to_string(), sha256);
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock leaves plain maps and counters behind, still usable.
        self.store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One file being served: committed in the cache or still downloading. Cloneable: each clone
/// reads independently.
#[derive(Debug, Clone)]
pub struct CachedFile {
    file: Arc<std::fs::File>,
    etag: String,
    /// The upstream URL, redacted, for messages.
    url: String,
    len: Option<u64>,
    /// `None` for a committed file.
    progress: Option<watch::Receiver<Progress>>,
}

impl CachedFile {
    /// Waits until the upstream answered (or failed) and the length is known if it can be
    /// known from the headers.
    async fn follow(
        file: Arc<std::fs::File>,
        mut progress: watch::Receiver<Progress>,
        etag: String,
        url: String,
    ) -> Result<CachedFile, FileCacheError> {
        let len = loop {
            let current = progress.borrow_and_update().clone();
            match current {
                Progress::Connecting => {}
                Progress::Streaming { total, .. } => break total,
                Progress::Committed { size } => break Some(size),
                Progress::Failed(err) => return Err(FileCacheError::Shared(err)),
            }
            if progress.changed().await.is_err() {
                // The download task ended; its last word (if any) is in the channel.
                if let Progress::Failed(err) = &*progress.borrow() {
                    return Err(FileCacheError::Shared(Arc::clone(err)));
                }
                if let Progress::Committed { size } = *progress.borrow() {
                    break Some(size);
                }
                return Err(FileCacheError::Abandoned { url });
            }
        };
        Ok(CachedFile {
            file,
            etag,
            url,
            len,
            progress: Some(progress),
        })
    }

    /// The quoted strong `ETag`.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The length when known now: always for a committed file; for a download in flight when
    /// the page or the upstream's `Content-Length` gave it.
    pub fn known_len(&self) -> Option<u64> {
        self.len
    }

    /// Whether the file was already committed when this handle was made.
    pub fn is_committed(&self) -> bool {
        self.progress.is_none()
    }

    /// The download's failure, when it has already failed (a small file whose bytes did not
    /// verify can fail before its response has begun: it is then answered with a status, not
    /// a body that breaks before its first byte).
    pub fn failure(&self) -> Option<FileCacheError> {
        match &*self.progress.as_ref()?.borrow() {
            Progress::Failed(err) => Some(FileCacheError::Shared(Arc::clone(err))),
            _ => None,
        }
    }

    /// How many bytes from the start can be read now without waiting for the download.
    pub fn readable_now(&self) -> u64 {
        match &self.progress {
            None => self.len.unwrap_or(0),
            Some(progress) => match &*progress.borrow() {
                Progress::Streaming { written, .. } => *written,
                Progress::Committed { size } => *size,
                Progress::Connecting | Progress::Failed(_) => 0,
            },
        }
    }

    /// The length, waiting for the download to finish when no header gave it.
    pub async fn wait_len(&mut self) -> Result<u64, FileCacheError> {
        if let Some(len) = self.len {
            return Ok(len);
        }
        let Some(progress) = self.progress.as_mut() else {
            unreachable!("a committed file has a length")
        };
        loop {
            let current = progress.borrow_and_update().clone();
            match current {
                Progress::Committed { size } => {
                    self.len = Some(size);
                    return Ok(size);
                }
                Progress::Failed(err) => return Err(FileCacheError::Shared(err)),
                Progress::Connecting | Progress::Streaming { .. } => {}
            }
            if progress.changed().await.is_err()
                && !matches!(
                    *progress.borrow(),
                    Progress::Committed { .. } | Progress::Failed(_)
                )
            {
                return Err(FileCacheError::Abandoned {
                    url: self.url.clone(),
                });
            }
        }
    }

    /// Waits until the file is committed: downloaded whole and verified against its page's
    /// sha256. For what the server reads from a file itself (a wheel's `METADATA`), which must
    /// come from verified bytes only.
    pub async fn wait_committed(&mut self) -> Result<u64, FileCacheError> {
        let Some(progress) = self.progress.as_mut() else {
            return Ok(self.len.unwrap_or(0));
        };
        loop {
            let current = progress.borrow_and_update().clone();
            match current {
                Progress::Committed { size } => return Ok(size),
                Progress::Failed(err) => return Err(FileCacheError::Shared(err)),
                Progress::Connecting | Progress::Streaming { .. } => {}
            }
            if progress.changed().await.is_err()
                && !matches!(
                    *progress.borrow(),
                    Progress::Committed { .. } | Progress::Failed(_)
                )
            {
                return Err(FileCacheError::Abandoned {
                    url: self.url.clone(),
                });
            }
        }
    }

    /// The whole file in memory, for the small files the server reads itself (core metadata,
    /// variants files): at most `limit` bytes, reading no further past it, so a hostile
    /// upstream's 300 MB "metadata" costs no more memory than a real one.
    pub async fn read_small(&self, limit: usize) -> Result<Vec<u8>, SmallReadError> {
        use futures_util::TryStreamExt;
        let mut bytes = Vec::new();
        let mut stream = std::pin::pin!(self.stream(0, None));
        while let Some(chunk) = stream.try_next().await.map_err(SmallReadError::Io)? {
            if bytes.len() + chunk.len() > limit {
                return Err(SmallReadError::TooLarge { limit });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// The bytes from `start` to `end` (exclusive; to the end of the file when `None`), read
    /// from disk as they become available. Ends with an error if the download fails or does not
    /// verify, so a client never mistakes a broken transfer for a complete one.
    pub fn stream(
        &self,
        start: u64,
        end: Option<u64>,
    ) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
        let end = if self.progress.is_none() {
            end.or(self.len)
        } else {
            end
        };
        reader::stream(Arc::clone(&self.file), start, end, self.progress.clone())
    }
}

/// The name a file is stored under: `sha256-<hex>` or `url-<hex>`, only `[a-z0-9-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey(String);

impl CacheKey {
    fn for_spec(spec: &FileSpec) -> Result<CacheKey, FileCacheError> {
        if let Some(splice) = &spec.splice {
            let upstream = CacheKey::for_spec(&spec.upstream())?;
            let mut hasher = Sha256::new();
            hasher.update(upstream.as_str().as_bytes());
            hasher.update(splice.identity.as_bytes());
            return Ok(CacheKey(format!(
                "derived-{}",
                hex::encode(hasher.finalize())
            )));
        }
        match &spec.sha256 {
            Some(hash) => {
                let hash = hash.to_ascii_lowercase();
                if !is_sha256_hex(&hash) {
                    return Err(FileCacheError::InvalidHash {
                        url: redact(&spec.url),
                        hash,
                    });
                }
                Ok(CacheKey(format!("sha256-{hash}")))
            }
            None => Ok(CacheKey(format!(
                "url-{}",
                hex::encode(Sha256::digest(spec.url.as_bytes()))
            ))),
        }
    }

    /// A key read back from a file name in the cache directory.
    fn from_file_name(name: &str) -> Option<CacheKey> {
        let hash = name
            .strip_prefix("sha256-")
            .or_else(|| name.strip_prefix("url-"))
            .or_else(|| name.strip_prefix("derived-"))?;
        is_sha256_hex(hash).then(|| CacheKey(name.to_string()))
    }

    fn as_str(&self) -> &str {
        &self.0
    }

    fn etag(&self) -> String {
        match self.0.strip_prefix("sha256-") {
            Some(hash) => format!("\"{hash}\""),
            None => format!("\"{}\"", self.0),
        }
    }
}

/// The sha256 of the file at `path`, in hex (blocking).
fn sha256_of_file(path: &Path) -> io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

async fn open_for_reading(path: PathBuf) -> io::Result<std::fs::File> {
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(path)?;
        // Persists the access order for the next start; failing to is harmless.
        let _ = file.set_modified(std::time::SystemTime::now());
        Ok(file)
    })
    .await
    .map_err(io::Error::other)?
}

async fn create_part(path: PathBuf) -> io::Result<std::fs::File> {
    tokio::task::spawn_blocking(move || {
        wheelgate_index::cache::private::file_options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    })
    .await
    .map_err(io::Error::other)?
}

async fn remove_quietly(path: PathBuf) {
    let result =
        tokio::task::spawn_blocking(move || std::fs::remove_file(&path).map_err(|err| (path, err)))
            .await;
    if let Ok(Err((path, err))) = result
        && err.kind() != io::ErrorKind::NotFound
    {
        warn!(path = %path.display(), error = %err, "cannot remove a file from the file cache");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_the_upstream_identity_only() {
        let hash = "AB".repeat(32);
        let spec = FileSpec {
            url: "https://h.example/a/../../etc/passwd".into(),
            sha256: Some(hash.clone()),
            size: None,
            splice: None,
            listed_on: None,
        };
        let key = CacheKey::for_spec(&spec).unwrap();
        assert_eq!(
            key.as_str(),
            format!("sha256-{}", hash.to_ascii_lowercase())
        );
        assert_eq!(key.etag(), format!("\"{}\"", hash.to_ascii_lowercase()));

        let spec = FileSpec {
            url: "https://h.example/../x.whl".into(),
            sha256: None,
            size: None,
            splice: None,
            listed_on: None,
        };
        let key = CacheKey::for_spec(&spec).unwrap();
        assert!(key.as_str().starts_with("url-"));
        assert!(
            key.as_str()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "{}",
            key.as_str()
        );
        assert_eq!(CacheKey::from_file_name(key.as_str()), Some(key.clone()));
    }

    #[test]
    fn rejects_a_page_hash_that_is_not_sha256() {
        let spec = FileSpec {
            url: "https://h.example/x.whl".into(),
            sha256: Some("../../etc".into()),
            size: None,
            splice: None,
            listed_on: None,
        };
        assert!(matches!(
            CacheKey::for_spec(&spec),
            Err(FileCacheError::InvalidHash { .. })
        ));
        assert_eq!(CacheKey::from_file_name("sha256-xyz"), None);
        assert_eq!(
            CacheKey::from_file_name(&format!("other-{}", "a".repeat(64))),
            None
        );
    }

    #[test]
    fn status_classes() {
        let missing = FileCacheError::NotCached { url: "u".into() };
        assert_eq!(missing.kind(), FailureKind::NotFound);
        let shared = FileCacheError::Shared(Arc::new(FileCacheError::SizeMismatch {
            url: "u".into(),
            expected: 1,
            actual: 2,
        }));
        assert_eq!(shared.kind(), FailureKind::Upstream);
    }
}
