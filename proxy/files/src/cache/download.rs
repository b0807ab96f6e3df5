//! One download: the task that streams an upstream file (or the shared bucket's copy of it) into
//! its `*.part` file, hashing as it goes, publishes how far it got, and commits or discards the
//! result; a file that came from the upstream is then uploaded to the bucket.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use wheelgate_index::error_chain::source_chain;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT_ENCODING, HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tracing::{info, warn};

use wheelgate_index::upstream::{UpstreamClient, redact};

use super::direct_write::{DIRECT_FROM, FileWriter, open_direct};
use super::range_checks::{StreamChecks, run_checks};
use super::recent::{Recent, Window};
use super::splice::Splicer;
use super::store::remove_evicted;
use super::{CacheKey, FileCacheError, FileSpec, Inner, remove_quietly};
use wheelgate_index::cache::bucket::BucketError;

/// Bytes gathered from the network before one write: large enough to keep system calls few,
/// small enough that memory stays flat and readers see progress often.
const WRITE_CHUNK: usize = 256 * 1024;
/// How long a download goes on with nobody reading it before it is cancelled: long enough for
/// an installer's retry or resume to join it again.
const ABANDONED_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How far a download got; every reader of the file watches it.
#[derive(Debug, Clone)]
pub(super) enum Progress {
    /// The request is on its way upstream.
    Connecting,
    /// The first `written` bytes are on disk and readable; `total` is the expected length when
    /// the page or the upstream's `Content-Length` gave it. While the length is known the last
    /// byte only becomes readable with `Committed`. The latest of them are in `recent` too.
    Streaming {
        written: u64,
        total: Option<u64>,
        recent: Recent,
    },
    /// Verified and renamed to its key; `size` bytes.
    Committed { size: u64 },
    /// Nothing was kept; every reader ends with this error.
    Failed(Arc<FileCacheError>),
}

/// Whether a finished download is committed to the cache, or only served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    Yes,
    No(&'static str),
}

/// Where a download reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    Upstream,
    /// The shared bucket holds the file; when it fails before the first byte, the upstream
    /// instead if `upstream_fallback` (not offline).
    Bucket {
        upstream_fallback: bool,
    },
    /// A derived file whose upstream file this cache holds: spliced from that copy, with no
    /// upstream request (and so offline too).
    Local,
}

/// A body chunk's failure, by where the body comes from.
enum BodyError {
    Upstream(reqwest::Error),
    Bucket(BucketError),
    Local(io::Error),
}

type Body = BoxStream<'static, Result<Bytes, BodyError>>;

/// Input chunks gathered for the next write, as they arrived (hyper's buffers, not copied).
#[derive(Default)]
struct Pending {
    chunks: Vec<Bytes>,
    /// Their bytes together.
    len: u64,
}

impl Pending {
    fn push(&mut self, chunk: Bytes) {
        // An empty chunk would be an empty slice: a vectored write of only those writes nothing.
        if !chunk.is_empty() {
            self.len += len_u64(chunk.len());
            self.chunks.push(chunk);
        }
    }
}

/// What a download has hashed, read and written so far; moved to the blocking writer and back.
struct WriteState {
    /// The upstream's bytes, checked against the page's sha256.
    input: Sha256,
    /// The written bytes, when they differ from the input (a splice): the derived file's hash.
    /// Forked from `input` where the identical prefix ends, so the bytes both share (nearly all
    /// of a derived wheel) are hashed once.
    output: Option<Sha256>,
    /// Whether the output is spliced (its own hash is wanted).
    spliced: bool,
    /// The output's first bytes that are the input's own ([`Splicer::identical_prefix`]).
    prefix: u64,
    splicer: Option<Splicer>,
    /// Input bytes consumed.
    read: u64,
    /// Bytes of the output made (in `writer`'s file, or staged for it).
    written: u64,
    writer: FileWriter,
    /// A spliced file's plan, whose ranged reads the input is compared with as it passes.
    checked: Option<Arc<super::splice::Splice>>,
    /// The first input offset that differed from what the plan read by ranges.
    differs_at: Option<u64>,
    /// Facts read from the input by ranges, compared as it passes.
    facts: StreamChecks,
}

impl WriteState {
    /// Nothing read or written yet of `spec`'s file, to be written by `writer`.
    fn for_spec(spec: &FileSpec, writer: FileWriter) -> WriteState {
        let splicer = spec
            .splice
            .as_ref()
            .map(|splice| Splicer::new(splice.segments.clone()));
        WriteState {
            input: Sha256::new(),
            output: None,
            prefix: splicer.as_ref().map_or(0, Splicer::identical_prefix),
            spliced: spec.splice.is_some(),
            splicer,
            read: 0,
            written: 0,
            writer,
            checked: spec
                .splice
                .clone()
                .filter(|splice| !splice.checks.is_empty()),
            differs_at: None,
            facts: StreamChecks::default(),
        }
    }

    /// Hashes input bytes `data` (read from `self.read` on), forking the output's hash where
    /// the identical prefix ends.
    fn hash_input(&mut self, data: &[u8]) {
        self.facts.see(self.read, data);
        if self.differs_at.is_none()
            && let Some(splice) = &self.checked
        {
            self.differs_at = splice.first_difference(self.read, data);
        }
        if !self.spliced || self.output.is_some() {
            self.input.update(data);
            return;
        }
        let end = self.read + len_u64(data.len());
        if end < self.prefix {
            self.input.update(data);
            return;
        }
        let cut = usize::try_from(self.prefix.saturating_sub(self.read))
            .unwrap_or(usize::MAX)
            .min(data.len());
        self.input.update(&data[..cut]);
        self.output = Some(self.input.clone());
        self.input.update(&data[cut..]);
    }
}

/// Everything the download task owns.
pub(super) struct Download {
    pub(super) cache: Arc<Inner>,
    pub(super) client: UpstreamClient,
    pub(super) spec: FileSpec,
    pub(super) key: CacheKey,
    pub(super) origin: Origin,
    /// The most bytes the file may be ([`super::FileCache::fetch_small`]).
    pub(super) limit: Option<u64>,
    pub(super) part: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) progress: watch::Sender<Progress>,
}

/// Unregisters the download if its task ends without a result (a panic, or the runtime shutting
/// down), so later requests start afresh instead of following a dead download.
struct Registration<'a> {
    cache: &'a Inner,
    key: &'a CacheKey,
    armed: bool,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.cache.lock().abandon(self.key);
        }
    }
}

impl Download {
    /// Runs the download to the end: commit, or discard and tell every reader.
    pub(super) async fn run(self) {
        let mut registration = Registration {
            cache: &self.cache,
            key: &self.key,
            armed: true,
        };
        let url = redact(&self.spec.url);
        let result = match self.transfer().await {
            Ok((size, origin, Keep::Yes)) => self.commit(size).await.map(|size| (size, origin)),
            Ok((size, _, Keep::No(why))) => {
                // Every reader got (or gets) the whole verified file from its open handle; the
                // file itself is not kept.
                drop(registration);
                remove_quietly(self.part.clone()).await;
                self.client.metrics().file_uncached();
                info!(url = %url, key = self.key.as_str(), size, reason = why, "file served without being cached");
                self.progress.send_replace(Progress::Committed { size });
                return;
            }
            Err(err) => Err(err),
        };
        match result {
            Ok((size, origin)) => {
                registration.armed = false;
                info!(url = %url, key = self.key.as_str(), size, from_bucket = origin != Origin::Upstream, "file downloaded, verified and cached");
                if let Some(bucket) = &self.cache.bucket
                    && self.spec.splice.is_none()
                {
                    if origin == Origin::Upstream {
                        // Its own task: uploading never delays the clients, who already have
                        // every byte from local disk.
                        tokio::spawn(Arc::clone(bucket).upload(
                            self.key.as_str().to_owned(),
                            Arc::clone(&self.file),
                            size,
                        ));
                    } else {
                        bucket.count_hit();
                    }
                }
            }
            Err(err) => {
                // Unregistered (by the guard) before readers hear of the failure, so a retry
                // starts afresh.
                drop(registration);
                warn!(url = %url, key = self.key.as_str(), error = %err, cause = %source_chain(&err), "file download failed; nothing kept");
                // Deleted before readers hear of the failure, so once a client sees its error
                // nothing of the download is left. Readers keep their open handle meanwhile.
                remove_quietly(self.part.clone()).await;
                if let (Origin::Bucket { .. }, Some(bucket)) = (self.origin, &self.cache.bucket)
                    && matches!(
                        err,
                        FileCacheError::HashMismatch { .. } | FileCacheError::SizeMismatch { .. }
                    )
                {
                    // The object's name is its content's hash: these bytes are not that content.
                    bucket.remove_corrupt(self.key.as_str()).await;
                }
                self.progress.send_replace(Progress::Failed(Arc::new(err)));
            }
        }
    }

    /// Opens the body: from the bucket when it holds the file, else (or when the bucket fails
    /// before the first byte, unless offline) from the upstream. Returns the announced length
    /// and where the body really comes from.
    async fn open(&self) -> Result<(Option<u64>, Body, Origin), FileCacheError> {
        let url = || redact(&self.spec.url);
        if let Origin::Bucket { upstream_fallback } = self.origin
            && let Some(bucket) = &self.cache.bucket
        {
            match bucket.get(self.key.as_str(), None).await {
                Ok((size, body)) => {
                    let body = body.map(|chunk| chunk.map_err(BodyError::Bucket)).boxed();
                    return Ok((Some(size), body, self.origin));
                }
                Err(err) if upstream_fallback => {
                    warn!(url = %url(), bucket = bucket.name(), error = %err, "cannot read the file from the object store; downloading it from the upstream");
                }
                Err(source) => {
                    return Err(FileCacheError::Bucket {
                        url: url(),
                        source: Box::new(source),
                    });
                }
            }
        }
        if self.origin == Origin::Local {
            return self.open_local().await;
        }
        let mut headers = HeaderMap::new();
        // The bytes on disk must be the file's own bytes, the ones its sha256 is of.
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        let response = self
            .client
            .get_stream(&self.spec.url, headers, self.spec.listed_on.as_deref())
            .await
            .map_err(|source| FileCacheError::Upstream { url: url(), source })?;
        let announced = response.content_length();
        let body = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(BodyError::Upstream))
            .boxed();
        Ok((announced, body, Origin::Upstream))
    }

    /// Opens this cache's copy of the upstream file a derived file is spliced from. An eviction
    /// meanwhile removes only its name: the open handle reads on.
    async fn open_local(&self) -> Result<(Option<u64>, Body, Origin), FileCacheError> {
        let upstream = self.spec.upstream();
        let path = self.cache.dir.join(CacheKey::for_spec(&upstream)?.as_str());
        let io_error = |source| FileCacheError::Io {
            path: path.clone(),
            source,
        };
        let file = tokio::fs::File::open(&path).await.map_err(io_error)?;
        let len = file.metadata().await.map_err(io_error)?.len();
        let body = tokio_util::io::ReaderStream::with_capacity(file, WRITE_CHUNK)
            .map(|chunk| chunk.map_err(BodyError::Local))
            .boxed();
        Ok((Some(len), body, Origin::Local))
    }

    /// Whether the file, `total` bytes long when known, can be kept: it must be verifiable (a
    /// hash, or at least a known length: a body cut short by a closed connection otherwise
    /// looks complete) and fit the cache's limit next to the other downloads. The room is
    /// reserved now and made as the file is written ([`Download::make_room`]), so the limit
    /// holds while it downloads and a download cancelled early evicts little.
    fn keep(&self, total: Option<u64>) -> Keep {
        if self.spec.sha256.is_none() && total.is_none() {
            warn!(url = %redact(&self.spec.url), "the page gives no hash and the upstream no length: streaming the file without caching it");
            return Keep::No("neither a hash nor a length to verify it");
        }
        let Some(total) = total else {
            return Keep::Yes;
        };
        if self.cache.lock().reserve(&self.key, total) {
            Keep::Yes
        } else {
            warn!(url = %redact(&self.spec.url), size = total, "the file does not fit the cache limit next to the downloads in flight: streaming it without caching it");
            Keep::No("it does not fit the cache limit")
        }
    }

    /// Evicts what must go before the file grows to `written` bytes, when it is to be kept (a
    /// file that is not is counted nowhere: it is deleted once served).
    async fn make_room(&self, written: u64, keep: &Keep) {
        if !matches!(keep, Keep::Yes) {
            return;
        }
        let victims = self.cache.lock().grow(&self.key, written);
        if !victims.is_empty() {
            let _ = tokio::task::spawn_blocking(move || remove_evicted(&victims)).await;
        }
    }

    /// Streams the body to disk (spliced when the spec says so); returns the length written,
    /// where it came from, and whether it is to be kept. The upstream's bytes are verified
    /// against the page's size and sha256 either way.
    async fn transfer(&self) -> Result<(u64, Origin, Keep), FileCacheError> {
        let url = || redact(&self.spec.url);
        // An upstream download waits for a slot among those in flight (registered already, so
        // every request for this file meanwhile joins it rather than queueing for its own).
        let _slot = match self.origin {
            Origin::Upstream => Some(
                self.cache
                    .slots
                    .acquire(&self.spec.url)
                    .await
                    .map_err(|busy| FileCacheError::Busy { url: url(), busy })?,
            ),
            Origin::Bucket { .. } | Origin::Local => None,
        };
        let (announced, mut body, origin) = self.open().await?;
        if let (Some(expected), Some(actual)) = (self.spec.size, announced)
            && expected != actual
        {
            return Err(FileCacheError::SizeMismatch {
                url: url(),
                expected,
                actual,
            });
        }
        let input_total = self.spec.size.or(announced);
        // Refused before a byte is stored or any room made for it.
        self.within_limit(input_total, true)?;
        let total = match &self.spec.splice {
            Some(splice) => Some(splice.len),
            None => input_total,
        };
        let keep = self.keep(total);
        self.progress.send_replace(Progress::Streaming {
            written: 0,
            total,
            recent: Recent::default(),
        });

        let mut state = WriteState::for_spec(&self.spec, self.writer(total).await);
        if origin != Origin::Local {
            state.facts =
                StreamChecks::new(self.cache.range_checks.take(self.input_key()?.as_str()));
        }
        let mut pending = Pending::default();
        let mut window = Window::default();
        let mut unread_since: Option<std::time::Instant> = None;
        loop {
            match body.next().await {
                Some(Ok(chunk)) => {
                    let received = state.read + pending.len + len_u64(chunk.len());
                    self.within_limit(Some(received), false)?;
                    if let Some(expected) = input_total
                        && received > expected
                    {
                        return Err(FileCacheError::SizeMismatch {
                            url: url(),
                            expected,
                            actual: received,
                        });
                    }
                    pending.push(chunk);
                    if pending.len >= len_u64(WRITE_CHUNK) {
                        self.make_room(state.written + pending.len, &keep).await;
                        state = self.write(&mut pending, state, &mut window, false).await?;
                        self.publish(state.writer.on_disk(), total, &window);
                        self.check_readers(&mut unread_since, state.written, total)?;
                    }
                }
                // A read timeout (stalled upstream), a reset, or a body shorter than its
                // `Content-Length`.
                Some(Err(BodyError::Upstream(source))) => {
                    return Err(FileCacheError::Interrupted {
                        url: url(),
                        received: state.read + pending.len,
                        source,
                    });
                }
                Some(Err(BodyError::Bucket(source))) => {
                    return Err(FileCacheError::Bucket {
                        url: url(),
                        source: Box::new(source),
                    });
                }
                Some(Err(BodyError::Local(source))) => {
                    return Err(FileCacheError::Io {
                        path: self.cache.dir.clone(),
                        source,
                    });
                }
                None => break,
            }
        }
        self.make_room(state.written + pending.len, &keep).await;
        state = self.write(&mut pending, state, &mut window, true).await?;
        // Everything but the last byte, while the file is verified and made durable.
        self.publish(state.writer.on_disk(), total, &window);
        let written = self.verify(state, input_total)?;
        Ok((written, origin, keep))
    }

    /// The writer of the `*.part` file: past the page cache for a large file
    /// ([`super::direct_write`]).
    async fn writer(&self, total: Option<u64>) -> FileWriter {
        let direct = if total.is_some_and(|total| total >= DIRECT_FROM) {
            let part = self.part.clone();
            tokio::task::spawn_blocking(move || open_direct(&part))
                .await
                .ok()
                .flatten()
        } else {
            None
        };
        FileWriter::new(Arc::clone(&self.file), direct)
    }

    /// The key of the upstream file this download reads (its own, unless it is derived).
    fn input_key(&self) -> Result<CacheKey, FileCacheError> {
        CacheKey::for_spec(&self.spec.upstream())
    }

    /// Refuses a file larger than [`Download::limit`]: `size` bytes announced, or received so
    /// far.
    fn within_limit(&self, size: Option<u64>, announced: bool) -> Result<(), FileCacheError> {
        match (self.limit, size) {
            (Some(limit), Some(size)) if size > limit => Err(FileCacheError::TooLarge {
                url: redact(&self.spec.url),
                limit,
                announced: announced.then_some(size),
            }),
            _ => Ok(()),
        }
    }

    /// Cancels a download nobody has read for [`ABANDONED_GRACE`] (every client that wanted it
    /// went away: a `GET` dropped, an installer that backtracked), unless it is nearly done
    /// (nine tenths written): it would otherwise fill the cache with a file nobody asked to
    /// keep, and pay the upstream for it. The map of downloads holds one receiver of the
    /// progress; every reader holds another.
    fn check_readers(
        &self,
        unread_since: &mut Option<std::time::Instant>,
        written: u64,
        total: Option<u64>,
    ) -> Result<(), FileCacheError> {
        if self.progress.receiver_count() > 1 {
            *unread_since = None;
            return Ok(());
        }
        let nearly_done = total.is_some_and(|total| written.saturating_mul(10) >= total * 9);
        let since = *unread_since.get_or_insert_with(std::time::Instant::now);
        if !nearly_done && since.elapsed() >= ABANDONED_GRACE {
            info!(url = %redact(&self.spec.url), written, "nobody reads this download any more: cancelled");
            return Err(FileCacheError::Abandoned {
                url: redact(&self.spec.url),
            });
        }
        Ok(())
    }

    /// Checks the upstream's bytes against the page's size and sha256, and a spliced file's
    /// length against its plan; records a derived file's hash.
    fn verify(&self, state: WriteState, input_total: Option<u64>) -> Result<u64, FileCacheError> {
        let url = || redact(&self.spec.url);
        if let Some(expected) = input_total
            && state.read != expected
        {
            return Err(FileCacheError::SizeMismatch {
                url: url(),
                expected,
                actual: state.read,
            });
        }
        let actual = hex::encode(state.input.finalize());
        if let Some(expected) = &self.spec.sha256
            && !expected.eq_ignore_ascii_case(&actual)
        {
            return Err(FileCacheError::HashMismatch {
                url: url(),
                expected: expected.to_ascii_lowercase(),
                actual,
            });
        }
        if self.spec.sha256.is_some() {
            state.facts.verified(&url());
        }
        if let Some(offset) = state.differs_at {
            // The file verified, but the plan was read from other bytes: what it would add
            // (a METADATA, a RECORD) is not this file's. Nothing is kept or delivered whole.
            return Err(FileCacheError::PlannedFromOtherBytes { url: url(), offset });
        }
        if let Some(splice) = &self.spec.splice
            && state.written != splice.len
        {
            // The upstream file is what its page says, but not what the splice was planned
            // from (a page that changed): nothing is kept.
            return Err(FileCacheError::SizeMismatch {
                url: url(),
                expected: splice.len,
                actual: state.written,
            });
        }
        if let Some(output) = state.output {
            self.cache
                .record_derived(&self.key, hex::encode(output.finalize()));
        }
        Ok(state.written)
    }

    /// Hashes `pending` (input bytes), splices it when the spec says so, and writes the result
    /// at the output's end, off the async threads, then adds it to `window`; leaves `pending`
    /// empty. `last`: the input ended, so what the splice adds after it is written too.
    async fn write(
        &self,
        pending: &mut Pending,
        state: WriteState,
        window: &mut Window,
        last: bool,
    ) -> Result<WriteState, FileCacheError> {
        let offset = state.written;
        let (state, written) = self.write_off_thread(pending, state, last).await?;
        let mut at = offset;
        for chunk in written {
            let len = len_u64(chunk.len());
            window.push(at, chunk);
            at += len;
        }
        Ok(state)
    }

    /// [`Download::write`]'s blocking part: returns the chunks written, in order.
    async fn write_off_thread(
        &self,
        pending: &mut Pending,
        mut state: WriteState,
        last: bool,
    ) -> Result<(WriteState, Vec<Bytes>), FileCacheError> {
        let chunks = std::mem::take(pending).chunks;
        let input_len = len_u64(chunks.iter().map(Bytes::len).sum());
        let job = move || {
            let mut splicer = state.splicer.take();
            let mut out = splicer
                .as_ref()
                .map(|_| Vec::with_capacity(usize::try_from(input_len).unwrap_or(0)));
            for chunk in &chunks {
                state.hash_input(chunk);
                if let (Some(splicer), Some(out)) = (&mut splicer, &mut out) {
                    splicer.feed(state.read, chunk, out);
                }
                state.read += len_u64(chunk.len());
            }
            let Some(mut out) = out else {
                // The upstream's own bytes, written as they arrived: no copy into one buffer.
                state.writer.append_chunks(&chunks)?;
                state.written += input_len;
                if last {
                    state.writer.finish()?;
                }
                return Ok::<_, io::Error>((state, chunks));
            };
            if last && let Some(splicer) = &mut splicer {
                splicer.finish(&mut out);
            }
            state.splicer = splicer;
            if let Some(output) = &mut state.output {
                // Output bytes before the identical prefix's end are the input's, hashed as such.
                let skip = state.prefix.saturating_sub(state.written);
                let skip = usize::try_from(skip).unwrap_or(usize::MAX).min(out.len());
                output.update(&out[skip..]);
            }
            state.writer.append(&out)?;
            state.written += len_u64(out.len());
            if last {
                state.writer.finish()?;
            }
            Ok::<_, io::Error>((state, vec![Bytes::from(out)]))
        };
        let result = match &self.cache.writers {
            Some(writers) => writers.run(job).await,
            None => tokio::task::spawn_blocking(job)
                .await
                .map_err(io::Error::other)
                .flatten(),
        };
        result.map_err(|source| FileCacheError::Io {
            path: self.part.clone(),
            source,
        })
    }

    /// Tells readers how far they may read. The last byte is held back until the file is
    /// verified and committed: a client whose response completes has received a verified file
    /// that is already in the cache, and a corrupt download can only ever end in an error.
    fn publish(&self, written: u64, total: Option<u64>, window: &Window) {
        // Held back even while the total is unknown: a reader that knows the file's length
        // from elsewhere (its listing, a range) must not reach the end before it is verified.
        let readable = match total {
            Some(total) => written.min(total.saturating_sub(1)),
            None => written.saturating_sub(1),
        };
        self.progress.send_replace(Progress::Streaming {
            written: readable,
            total,
            recent: window.snapshot(),
        });
    }

    /// Makes the file durable under its key, then records it and evicts past the limit.
    async fn commit(&self, size: u64) -> Result<u64, FileCacheError> {
        let file = Arc::clone(&self.file);
        let part = self.part.clone();
        let dir = self.cache.dir.clone();
        let dest = dir.join(self.key.as_str());
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            file.sync_all()?;
            std::fs::rename(&part, &dest)?;
            // The rename itself must survive a crash too.
            File::open(&dir)?.sync_all()
        })
        .await
        .map_err(io::Error::other)
        .flatten()
        .map_err(|source| FileCacheError::Io {
            path: self.part.clone(),
            source,
        })?;
        let (victims, waiting) = {
            let mut store = self.cache.lock();
            let victims = store.commit(&self.key, size);
            // Facts read by ranges while this download ran; taken under the store's lock, as
            // they are kept (`FileCache::check_ranges`).
            let waiting = match self.spec.splice {
                None => self.cache.range_checks.take(self.key.as_str()),
                Some(_) => Vec::new(),
            };
            (victims, waiting)
        };
        if !waiting.is_empty() {
            let file = Arc::clone(&self.file);
            let url = redact(&self.spec.url);
            tokio::task::spawn_blocking(move || run_checks(&file, &url, waiting));
        }
        if !victims.is_empty() {
            let _ = tokio::task::spawn_blocking(move || remove_evicted(&victims)).await;
        }
        self.progress.send_replace(Progress::Committed { size });
        Ok(size)
    }
}

fn len_u64(len: usize) -> u64 {
    u64::try_from(len).expect("a buffer length fits in u64")
}
