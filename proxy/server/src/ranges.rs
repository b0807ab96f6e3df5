//! Ranges read from the upstream by range (of a file not cached, or far ahead of its download),
//! shared and capped: before, 300 clients asking a range far ahead and not reading opened 301
//! upstream connections to one file and held 296 MB.
//!
//! - A small range (uv reads a wheel's central directory and `METADATA`, kilobytes) is read once
//!   for every client asking it at the same time, into memory, and each gets the same bytes;
//!   the bytes are kept [`RECENT_FOR`] for the clients that ask next (at most [`RECENT_BYTES`]).
//! - At most [`MAX_READS`] upstream range reads are in flight; past that the caller answers
//!   another way (the whole file's download, on disk, which a client that does not read holds
//!   nothing of in memory).
//! - A large range streams from the upstream holding its slot until it ends; a client that does
//!   not read holds at most the connection's buffers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use bytes::Bytes;
use futures_util::future::{BoxFuture, FutureExt, Shared};
use futures_util::{Stream, StreamExt, TryStreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::debug;

use wheelgate_index::upstream::{UpstreamClient, redact};

/// Upstream range reads in flight at once.
pub const MAX_READS: usize = 16;
/// Ranges up to this long are read once into memory and shared.
pub const SHARED_MAX: u64 = 1024 * 1024;
/// How long a small range read stays in memory for the next clients.
pub const RECENT_FOR: Duration = Duration::from_secs(10);
/// The most bytes of recently read ranges kept.
pub const RECENT_BYTES: usize = 16 * 1024 * 1024;

type SharedRead = Shared<BoxFuture<'static, Option<Bytes>>>;

/// The server's upstream range reads.
pub struct UpstreamRanges {
    slots: Arc<Semaphore>,
    /// Small reads in flight and done lately, under one lock so a range is always in one or
    /// the other from its first request until it expires.
    small: Arc<Mutex<SmallReads>>,
}

type RangeKey = (String, u64, u64);

#[derive(Default)]
struct SmallReads {
    /// In flight, by URL and range.
    reading: HashMap<RangeKey, SharedRead>,
    /// Done lately, by URL and range, with when they were read.
    recent: Recent,
}

#[derive(Default)]
struct Recent {
    reads: HashMap<RangeKey, (Bytes, Instant)>,
    bytes: usize,
}

impl Recent {
    fn get(&mut self, key: &RangeKey) -> Option<Bytes> {
        let (bytes, at) = self.reads.get(key)?;
        if at.elapsed() < RECENT_FOR {
            return Some(bytes.clone());
        }
        let (gone, _) = self.reads.remove(key)?;
        self.bytes -= gone.len();
        None
    }

    fn put(&mut self, key: RangeKey, bytes: Bytes) {
        if self.bytes + bytes.len() > RECENT_BYTES {
            // Simplest bound: start over (these are re-read cheaply by range).
            *self = Recent::default();
        }
        self.bytes += bytes.len();
        if let Some((old, _)) = self.reads.insert(key, (bytes, Instant::now())) {
            self.bytes -= old.len();
        }
    }
}

impl Default for UpstreamRanges {
    fn default() -> Self {
        UpstreamRanges {
            slots: Arc::new(Semaphore::new(MAX_READS)),
            small: Arc::default(),
        }
    }
}

/// The bytes of a range, as the upstream sent them.
pub enum RangeBody {
    /// Read whole (a small range), shared with the other clients that asked it.
    Whole(Bytes),
    /// Streamed (a large range), its slot held until it ends.
    Stream(std::pin::Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>),
}

impl UpstreamRanges {
    /// Bytes `start..end` of the upstream file at `url` (`len` bytes long), listed on the page
    /// at `listed_on` (whose source's access the read carries); `None` when every slot is
    /// taken, or the upstream fails or does not answer exactly that range.
    pub async fn read(
        &self,
        client: &UpstreamClient,
        (url, listed_on): (&str, Option<&Arc<str>>),
        (start, end, len): (u64, u64, u64),
    ) -> Option<RangeBody> {
        if end - start > SHARED_MAX {
            let slot = Arc::clone(&self.slots).try_acquire_owned().ok()?;
            let body = fetch(
                client,
                url,
                listed_on.map(|page| &**page),
                (start, end, len),
            )
            .await?;
            return Some(RangeBody::Stream(Box::pin(holding(body, slot))));
        }
        // Shared only between reads made with the same access: one source's bytes are never
        // another's.
        let key = (
            format!(
                "{}\n{url}",
                client
                    .section_for(listed_on.map(|page| &**page))
                    .unwrap_or_default()
            ),
            start,
            end,
        );
        let read = {
            let mut small = lock(&self.small);
            if let Some(bytes) = small.recent.get(&key) {
                return Some(RangeBody::Whole(bytes));
            }
            if let Some(read) = small.reading.get(&key) {
                read.clone()
            } else {
                let slot = Arc::clone(&self.slots).try_acquire_owned().ok()?;
                let (client, url) = (client.clone(), url.to_string());
                let listed_on = listed_on.cloned();
                let (reads, done) = (Arc::clone(&self.small), key.clone());
                let read = async move {
                    let _slot = slot;
                    let read = async {
                        let body =
                            fetch(&client, &url, listed_on.as_deref(), (start, end, len)).await?;
                        let chunks: Vec<Bytes> = body.try_collect().await.ok()?;
                        Some(Bytes::from(chunks.concat()))
                    };
                    let bytes = read.await;
                    // In flight to done in one step: a request meanwhile finds it in one.
                    let mut small = lock(&reads);
                    small.reading.remove(&done);
                    if let Some(bytes) = &bytes {
                        small.recent.put(done, bytes.clone());
                    }
                    bytes
                }
                .boxed()
                .shared();
                small.reading.insert(key, read.clone());
                read
            }
        };
        read.await.map(RangeBody::Whole)
    }

    /// Upstream range reads in flight now.
    pub fn in_flight(&self) -> usize {
        MAX_READS - self.slots.available_permits()
    }
}

fn lock(reads: &Mutex<SmallReads>) -> std::sync::MutexGuard<'_, SmallReads> {
    reads
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The upstream's body of exactly `start..end`, or `None`.
async fn fetch(
    client: &UpstreamClient,
    url: &str,
    listed_on: Option<&str>,
    (start, end, len): (u64, u64, u64),
) -> Option<impl Stream<Item = std::io::Result<Bytes>> + Send + 'static + use<>> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::RANGE,
        HeaderValue::from_str(&format!("bytes={start}-{}", end - 1)).ok()?,
    );
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    let response = match client.get_stream(url, headers, listed_on).await {
        Ok(response) => response,
        Err(err) => {
            debug!(url = %redact(url), error = %err, "upstream range request failed");
            return None;
        }
    };
    let expected = format!("bytes {start}-{}/{len}", end - 1);
    let answered = response
        .headers()
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok());
    if response.status() != StatusCode::PARTIAL_CONTENT || answered != Some(expected.as_str()) {
        debug!(url = %redact(url), status = %response.status(), "upstream did not answer the range exactly");
        return None;
    }
    Some(response.bytes_stream().map_err(std::io::Error::other))
}

/// `body`, holding `slot` until it ends or is dropped.
fn holding(
    body: impl Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    slot: OwnedSemaphorePermit,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    body.map(move |chunk| {
        let _ = &slot;
        chunk
    })
}
