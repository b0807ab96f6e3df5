//! The shared layer behind the local file cache: committed files in an S3-compatible bucket
//! under `<prefix>/files/<key>`, through the `object_store` crate.
//!
//! - **Lookup**: a local miss asks the bucket (`HEAD`) before the upstream; a file found there
//!   is copied into the local cache by the usual single-flight download (so it is verified
//!   against the page's sha256 again, and served while it arrives), never buffered whole.
//! - **Upload**: a file downloaded from the upstream is uploaded once committed locally, in the
//!   background: one `PUT` up to [`SINGLE_PUT_MAX`], else a multipart upload that is aborted on
//!   any failure. S3 makes an object visible only when its `PUT` or multipart upload completes,
//!   so other replicas never see part of a file.
//! - **Index pages** (`bucket/pages.rs`): the index cache shares its pages under
//!   `<prefix>/index/`, so a cold replica serves a project without the upstream.
//! - **Faults**: the bucket is an optimisation, never a dependency. A bucket that refuses a
//!   request or cannot be reached is logged (bucket and error, never credentials) and recorded
//!   in [`BucketHealth`]; the request goes on from local disk or the upstream. After a failed
//!   lookup the bucket is not asked again for [`RETRY_AFTER`], so a dead endpoint does not add
//!   its timeout to every request.

use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig, WriteMultipart,
};
use serde::Serialize;
use tracing::{debug, error, info, warn};

use crate::upstream::redact;
use wheelgate_config::ObjectStoreConfig;

use super::read_at::read_at;

mod pages;

/// Files up to this size are uploaded with one `PUT`; larger ones in parts of this size.
pub const SINGLE_PUT_MAX: u64 = 8 * 1024 * 1024;
/// Parts uploaded at once by one multipart upload (memory: this many parts plus one).
const PART_CONCURRENCY: usize = 2;
/// How long lookups skip a bucket that just failed.
pub const RETRY_AFTER: Duration = Duration::from_secs(15);
/// Connecting to the endpoint: a dead one must not hold a request for long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// No byte for this long ends a transfer (there is no overall limit: wheels are gigabytes).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong with the bucket. Carries the cause as text with credentials removed, not as a
/// `#[source]`: an S3 error body can echo the access key id, and the source chain is logged.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("the [object_store] configuration for bucket `{bucket}` is invalid: {message}")]
    Config { bucket: String, message: String },
    #[error("the object store bucket `{bucket}` does not exist at `{endpoint}`")]
    NoSuchBucket { bucket: String, endpoint: String },
    #[error(
        "object store bucket `{bucket}` at `{endpoint}`: {operation} `{object}` failed: {message}"
    )]
    Request {
        bucket: String,
        endpoint: String,
        operation: &'static str,
        object: String,
        message: String,
    },
    #[error("cannot read the cached file `{key}` to upload it to bucket `{bucket}`")]
    ReadLocal {
        bucket: String,
        key: String,
        #[source]
        source: std::io::Error,
    },
}

/// The bucket's state, for `/readyz`, `/metrics` and the status page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BucketHealth {
    pub bucket: String,
    pub prefix: String,
    /// The endpoint, credentials removed (`aws` for AWS S3).
    pub endpoint: String,
    /// Whether the last request that needed the bucket to answer got an answer (an object that
    /// does not exist is an answer). `false` from a failed startup check until a request works.
    pub available: bool,
    /// The last failure of any request, uploads included, if any.
    pub last_error: Option<String>,
    /// Uploads running now.
    pub uploads_in_flight: u64,
    /// Uploads completed since start.
    pub uploads_completed: u64,
    /// Uploads that failed (and were aborted) since start.
    pub uploads_failed: u64,
    /// Files found in the bucket on a local miss (each one an upstream download saved).
    pub hits: u64,
    /// Index pages served from the bucket's copy (a cold replica's, or a refresh that adopted
    /// another replica's fresher copy instead of asking the upstream).
    pub page_hits: u64,
    /// Index pages this replica published (after fetching or revalidating them upstream).
    pub pages_published: u64,
    /// Index pages this replica could not publish.
    pub page_publishes_failed: u64,
}

/// One S3-compatible bucket holding committed files.
#[derive(Debug)]
pub struct Bucket {
    store: AmazonS3,
    name: String,
    prefix: String,
    endpoint: String,
    /// Credential strings removed from every error message before it is kept or logged.
    secrets: Vec<String>,
    state: Mutex<State>,
    uploads_in_flight: AtomicU64,
    uploads_completed: AtomicU64,
    uploads_failed: AtomicU64,
    hits: AtomicU64,
    page_hits: AtomicU64,
    pages_published: AtomicU64,
    page_publishes_failed: AtomicU64,
}

#[derive(Debug)]
struct State {
    available: bool,
    last_error: Option<String>,
    /// When a lookup last failed; lookups skip the bucket for [`RETRY_AFTER`] after it.
    failed_at: Option<Instant>,
}

impl Bucket {
    /// The client for `config`'s bucket, credentials from the environment (or the config's
    /// programmatic ones). No request is made: see [`Bucket::check`].
    pub fn connect(config: &ObjectStoreConfig) -> Result<Bucket, BucketError> {
        validate(config)?;
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&config.bucket)
            // `allow_http` is a client option: set with the others, or they would reset it.
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(config.allow_http)
                    .with_connect_timeout(CONNECT_TIMEOUT)
                    .with_timeout_disabled()
                    .with_read_timeout(READ_TIMEOUT),
            )
            .with_retry(retry_config());
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(region) = &config.region {
            builder = builder.with_region(region);
        }
        if let Some(credentials) = &config.credentials {
            builder = builder
                .with_access_key_id(&credentials.access_key_id)
                .with_secret_access_key(&credentials.secret_access_key);
            if let Some(token) = &credentials.session_token {
                builder = builder.with_token(token);
            }
        }
        let secrets: Vec<String> = [
            AmazonS3ConfigKey::AccessKeyId,
            AmazonS3ConfigKey::SecretAccessKey,
            AmazonS3ConfigKey::Token,
        ]
        .iter()
        .filter_map(|key| builder.get_config_value(key))
        .filter(|value| !value.is_empty())
        .collect();
        let endpoint = builder
            .get_config_value(&AmazonS3ConfigKey::Endpoint)
            .map_or_else(|| "aws".to_string(), |url| redact(&url));
        let store = builder.build().map_err(|err| BucketError::Config {
            bucket: config.bucket.clone(),
            message: scrub(&err.to_string(), &secrets),
        })?;
        Ok(Bucket {
            store,
            name: config.bucket.clone(),
            prefix: config.prefix.trim_matches('/').to_string(),
            endpoint,
            secrets,
            state: Mutex::new(State {
                available: true,
                last_error: None,
                failed_at: None,
            }),
            uploads_in_flight: AtomicU64::new(0),
            uploads_completed: AtomicU64::new(0),
            uploads_failed: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            page_hits: AtomicU64::new(0),
            pages_published: AtomicU64::new(0),
            page_publishes_failed: AtomicU64::new(0),
        })
    }

    /// Checks that the bucket exists and answers (one listing of the prefix, bounded in time).
    /// A failure is recorded in the health and returned; the caller decides whether to go on.
    pub async fn check(&self) -> Result<(), BucketError> {
        let prefix = Path::from(self.prefix.as_str());
        let listing = tokio::time::timeout(
            CONNECT_TIMEOUT * 3,
            self.store.list_with_delimiter(Some(&prefix)),
        )
        .await;
        let result = match listing {
            Ok(Ok(_)) => Ok(()),
            // S3 answers 404 `NoSuchBucket` to a listing only when the bucket is missing.
            Ok(Err(err))
                if matches!(err, object_store::Error::NotFound { .. })
                    || err.to_string().contains("NoSuchBucket") =>
            {
                Err(BucketError::NoSuchBucket {
                    bucket: self.name.clone(),
                    endpoint: self.endpoint.clone(),
                })
            }
            Ok(Err(err)) => Err(self.request_error("list", &self.prefix, &err)),
            Err(_) => Err(self.request_error_text(
                "list",
                &self.prefix,
                format!("no answer within {:?}", CONNECT_TIMEOUT * 3),
            )),
        };
        match &result {
            Ok(()) => self.record_ok(),
            Err(err) => self.record_failure(err, true),
        }
        result
    }

    /// The bucket's state now.
    pub fn health(&self) -> BucketHealth {
        let state = self.lock();
        BucketHealth {
            bucket: self.name.clone(),
            prefix: self.prefix.clone(),
            endpoint: self.endpoint.clone(),
            available: state.available,
            last_error: state.last_error.clone(),
            uploads_in_flight: self.uploads_in_flight.load(Ordering::Relaxed),
            uploads_completed: self.uploads_completed.load(Ordering::Relaxed),
            uploads_failed: self.uploads_failed.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            page_hits: self.page_hits.load(Ordering::Relaxed),
            pages_published: self.pages_published.load(Ordering::Relaxed),
            page_publishes_failed: self.page_publishes_failed.load(Ordering::Relaxed),
        }
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The object a key is stored as: `<prefix>/files/<key>`.
    fn path(&self, key: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(format!("files/{key}"))
        } else {
            Path::from(format!("{}/files/{}", self.prefix, key))
        }
    }

    /// The size of `key`'s object when the bucket holds it. `None` when it does not, or when the
    /// bucket fails (logged; the caller goes to the upstream instead), or was failing moments ago.
    pub async fn find(&self, key: &str) -> Option<u64> {
        if self.resting() {
            return None;
        }
        match self.store.head(&self.path(key)).await {
            Ok(meta) => {
                self.record_ok();
                Some(meta.size)
            }
            Err(object_store::Error::NotFound { .. }) => {
                self.record_ok();
                None
            }
            Err(err) => {
                let err = self.request_error("look up", key, &err);
                warn!(bucket = %self.name, key = key, error = %err, "object store lookup failed; going to the upstream");
                self.record_failure(&err, true);
                None
            }
        }
    }

    /// Counts a file copied from the bucket into the local cache.
    pub fn count_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// `key`'s object, or the bytes `range` of it, as a stream; with its total size.
    pub async fn get(
        self: &Arc<Self>,
        key: &str,
        range: Option<Range<u64>>,
    ) -> Result<(u64, BoxStream<'static, Result<Bytes, BucketError>>), BucketError> {
        let options = GetOptions {
            range: range.clone().map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let result = match self.store.get_opts(&self.path(key), options).await {
            Ok(result) => result,
            Err(err) => {
                let not_found = matches!(err, object_store::Error::NotFound { .. });
                let err = self.request_error("read", key, &err);
                if !not_found {
                    self.record_failure(&err, true);
                }
                return Err(err);
            }
        };
        if let Some(range) = range
            && result.range != range
        {
            return Err(self.request_error_text(
                "read",
                key,
                format!(
                    "asked for bytes {range:?}, the server sent {:?}",
                    result.range
                ),
            ));
        }
        self.record_ok();
        let size = result.meta.size;
        let bucket = Arc::clone(self);
        let object = key.to_string();
        let stream = result
            .into_stream()
            .map_err(move |err| bucket.request_error("read", &object, &err))
            .boxed();
        Ok((size, stream))
    }

    /// Deletes an object whose bytes do not match its key, so the next lookup goes upstream
    /// and the next upload replaces it.
    pub async fn remove_corrupt(&self, key: &str) {
        match self.store.delete(&self.path(key)).await {
            Ok(()) => {
                warn!(bucket = %self.name, key = key, "removed an object from the object store whose bytes do not match its hash");
            }
            Err(err) => {
                let err = self.request_error("delete", key, &err);
                warn!(bucket = %self.name, key = key, error = %err, "an object in the object store does not match its hash and cannot be removed");
            }
        }
    }

    /// Uploads a committed file (read through its open handle, so eviction cannot pull it away)
    /// unless the bucket already holds it. Logs the outcome; never fails the caller.
    pub async fn upload(self: Arc<Self>, key: String, file: Arc<File>, size: u64) {
        self.uploads_in_flight.fetch_add(1, Ordering::Relaxed);
        let result = self.try_upload(&key, file, size).await;
        self.uploads_in_flight.fetch_sub(1, Ordering::Relaxed);
        match result {
            Ok(true) => {
                self.uploads_completed.fetch_add(1, Ordering::Relaxed);
                info!(bucket = %self.name, key = key, size, "file uploaded to the object store");
            }
            Ok(false) => {
                debug!(bucket = %self.name, key = key, "the object store already holds the file");
            }
            Err(err) => {
                self.uploads_failed.fetch_add(1, Ordering::Relaxed);
                warn!(bucket = %self.name, key = key, error = %err, "cannot upload a file to the object store; it stays cached on this replica only");
                self.record_failure(&err, false);
            }
        }
    }

    /// `Ok(false)`: already there.
    async fn try_upload(&self, key: &str, file: Arc<File>, size: u64) -> Result<bool, BucketError> {
        let path = self.path(key);
        match self.store.head(&path).await {
            Ok(meta) if meta.size == size => return Ok(false),
            // A different size under a content key is a broken object: replace it.
            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
            Err(err) => return Err(self.request_error("look up", key, &err)),
        }
        let read_local = |source| BucketError::ReadLocal {
            bucket: self.name.clone(),
            key: key.to_string(),
            source,
        };
        if size <= SINGLE_PUT_MAX {
            let bytes = read_at(Arc::clone(&file), 0, size)
                .await
                .map_err(read_local)?;
            self.store
                .put(&path, bytes.into())
                .await
                .map_err(|err| self.request_error("upload", key, &err))?;
            return Ok(true);
        }
        let upload = self
            .store
            .put_multipart(&path)
            .await
            .map_err(|err| self.request_error("start uploading", key, &err))?;
        let mut writer = WriteMultipart::new_with_chunk_size(
            upload,
            usize::try_from(SINGLE_PUT_MAX).expect("a part fits in memory"),
        );
        let mut pos = 0;
        while pos < size {
            let len = (size - pos).min(SINGLE_PUT_MAX);
            let step = async {
                writer
                    .wait_for_capacity(PART_CONCURRENCY)
                    .await
                    .map_err(|err| self.request_error("upload a part of", key, &err))?;
                read_at(Arc::clone(&file), pos, len)
                    .await
                    .map_err(read_local)
            }
            .await;
            match step {
                Ok(bytes) => writer.put(bytes),
                Err(err) => {
                    self.abort(writer, key).await;
                    return Err(err);
                }
            }
            pos += len;
        }
        // `finish` aborts the upload itself when completing it fails.
        writer
            .finish()
            .await
            .map_err(|err| self.request_error("complete the upload of", key, &err))?;
        Ok(true)
    }

    /// Aborts a multipart upload, so its parts neither linger nor ever become an object.
    async fn abort(&self, writer: WriteMultipart, key: &str) {
        if let Err(err) = writer.abort().await {
            let err = self.request_error("abort the upload of", key, &err);
            // An upload that is neither completed nor aborted stays invisible; a lifecycle rule
            // (`AbortIncompleteMultipartUpload`) reclaims its parts.
            warn!(bucket = %self.name, key = key, error = %err, "cannot abort a multipart upload");
        }
    }

    fn resting(&self) -> bool {
        let state = self.lock();
        state.failed_at.is_some_and(|at| at.elapsed() < RETRY_AFTER)
    }

    fn record_ok(&self) {
        let mut state = self.lock();
        if !state.available {
            info!(bucket = %self.name, endpoint = %self.endpoint, "the object store answers again");
        }
        state.available = true;
        state.failed_at = None;
    }

    /// Records a failure; `reads`: the bucket failed to answer (lookups rest for a while), not
    /// only refused a write.
    fn record_failure(&self, err: &BucketError, reads: bool) {
        let mut state = self.lock();
        state.last_error = Some(err.to_string());
        if reads {
            if state.available {
                error!(bucket = %self.name, endpoint = %self.endpoint, error = %err, "the object store is unavailable; serving from local disk and the upstream until it answers again");
            }
            state.available = false;
            state.failed_at = Some(Instant::now());
        }
    }

    fn request_error(
        &self,
        operation: &'static str,
        object: &str,
        err: &object_store::Error,
    ) -> BucketError {
        self.request_error_text(operation, object, source_chain(err))
    }

    fn request_error_text(
        &self,
        operation: &'static str,
        object: &str,
        message: impl AsRef<str>,
    ) -> BucketError {
        BucketError::Request {
            bucket: self.name.clone(),
            endpoint: self.endpoint.clone(),
            operation,
            object: object.to_string(),
            message: scrub(message.as_ref(), &self.secrets),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What the client would only find out at its first request: a missing bucket name, an
/// endpoint that is not an `http(s)` URL, plain HTTP without `allow_http`.
fn validate(config: &ObjectStoreConfig) -> Result<(), BucketError> {
    let invalid = |message: String| BucketError::Config {
        bucket: config.bucket.clone(),
        message,
    };
    if config.bucket.trim().is_empty() {
        return Err(invalid("`bucket` is empty".into()));
    }
    if let Some(endpoint) = &config.endpoint {
        let url = reqwest::Url::parse(endpoint).map_err(|err| {
            invalid(format!(
                "`endpoint` `{}` is not a URL ({err})",
                redact(endpoint)
            ))
        })?;
        match url.scheme() {
            "https" => {}
            "http" if config.allow_http => {}
            "http" => {
                return Err(invalid(format!(
                    "`endpoint` `{}` is plain HTTP; set `allow_http = true` to allow it",
                    redact(endpoint)
                )));
            }
            other => {
                return Err(invalid(format!(
                    "`endpoint` `{}` has scheme `{other}`; use http or https",
                    redact(endpoint)
                )));
            }
        }
    }
    Ok(())
}

/// Few, quick retries: the bucket is a shortcut, and the upstream is the fallback.
fn retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: 2,
        retry_timeout: Duration::from_secs(10),
        ..RetryConfig::default()
    }
}

fn source_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = source.and_then(std::error::Error::source);
    }
    text
}

/// `text` with every credential string replaced.
fn scrub(text: &str, secrets: &[String]) -> String {
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret.as_str(), "<redacted>")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_scrubbed_from_messages() {
        let secrets = vec!["AKIDEXAMPLE".to_string(), "s3cr3t".to_string()];
        assert_eq!(
            scrub(
                "<AWSAccessKeyId>AKIDEXAMPLE</AWSAccessKeyId> s3cr3t",
                &secrets
            ),
            "<AWSAccessKeyId><redacted></AWSAccessKeyId> <redacted>"
        );
    }

    #[test]
    fn objects_live_under_the_prefix() {
        let mut config = ObjectStoreConfig::new("b");
        config.endpoint = Some("http://127.0.0.1:1".into());
        config.allow_http = true;
        config.prefix = "/team/cache/".into();
        let bucket = Bucket::connect(&config).unwrap();
        let key = format!("sha256-{}", "a".repeat(64));
        assert_eq!(
            bucket.path(&key).as_ref(),
            format!("team/cache/files/sha256-{}", "a".repeat(64))
        );
        config.prefix = String::new();
        let bucket = Bucket::connect(&config).unwrap();
        assert!(bucket.path(&key).as_ref().starts_with("files/sha256-"));
        assert!(bucket.health().available);
    }

    #[test]
    fn configuration_mistakes_are_named() {
        let mut config = ObjectStoreConfig::new("b");
        config.endpoint = Some("http://127.0.0.1:9000".into());
        let err = Bucket::connect(&config).unwrap_err().to_string();
        assert!(err.contains("set `allow_http = true`"), "{err}");
        config.endpoint = Some("not a url".into());
        let err = Bucket::connect(&config).unwrap_err().to_string();
        assert!(err.contains("`not a url` is not a URL"), "{err}");
        config.endpoint = None;
        config.bucket = " ".into();
        let err = Bucket::connect(&config).unwrap_err().to_string();
        assert!(err.contains("`bucket` is empty"), "{err}");
    }
}
