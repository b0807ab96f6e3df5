//! The HTTP client for upstream indexes and file hosts: rustls with the system's trust store
//! (reqwest's platform verifier, which on Linux reads the system bundle or `SSL_CERT_FILE`),
//! connect and read timeouts, bounded retries with backoff for idempotent requests,
//! `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY` from the environment (reqwest's system proxy
//! support), connection reuse, compressed index responses. Each private upstream's credentials
//! and CA bundle apply to its origins only ([`super::transport`]).
//!
//! Every page fetch is bounded twice: each attempt (connection, headers and whole body) by
//! `attempt_timeout`, and all attempts together by `deadline`, so an upstream that stalls or
//! drips its page costs a client at most the deadline, and with a cached copy nothing (the index
//! cache answers from it and refreshes in the background). A page body is read up to
//! `max_page_bytes` and must be as long as its `Content-Length`. A [`Breakers`] per upstream
//! fails requests at once while an upstream is known down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, ETAG, HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use tracing::{debug, warn};

use super::access::OriginAccess;
use super::arriving_text::ArrivingText;
use super::breaker::{Admission, BreakerSettings, Breakers};
use super::transport::Transport;
use crate::metrics::RequestKind;
use crate::metrics::{Metrics, UpstreamOutcome, upstream_label};

/// Timeouts, retries and limits of the upstream client.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub connect_timeout: Duration,
    /// Longest wait between two reads of a response body.
    pub read_timeout: Duration,
    /// Longest one page request may take, body included; for a file, until its headers.
    pub attempt_timeout: Duration,
    /// Longest a page fetch may take over all its attempts.
    pub deadline: Duration,
    /// Retries of an idempotent request after a connection error or a 5xx answer.
    pub retries: u32,
    /// Largest page body accepted.
    pub max_page_bytes: u64,
    pub breaker: BreakerSettings,
    pub user_agent: String,
    /// Credentials, headers and CA bundles of private upstreams, each for its origins
    /// (`[upstreams.*]`, read by [`super::resolve_sources`]).
    pub access: Vec<OriginAccess>,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            attempt_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(14),
            retries: 2,
            max_page_bytes: wheelgate_config::limits::DEFAULT_MAX_PAGE_BYTES,
            breaker: BreakerSettings::default(),
            user_agent: format!("wheelgate/{}", env!("CARGO_PKG_VERSION")),
            access: Vec::new(),
        }
    }
}

impl ClientSettings {
    /// The settings `[limits]` asks for.
    pub fn from_limits(limits: &wheelgate_config::LimitsConfig) -> ClientSettings {
        ClientSettings {
            attempt_timeout: limits.upstream_attempt(),
            deadline: limits.upstream_deadline(),
            max_page_bytes: limits.max_page_bytes,
            breaker: BreakerSettings {
                failures_to_open: limits.breaker_failures,
                open_for: limits.breaker_open(),
            },
            ..ClientSettings::default()
        }
    }
}

/// What went wrong talking to an upstream.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("could not build the HTTP client")]
    Build(#[source] reqwest::Error),
    #[error("could not build the HTTP client for `{section}` (its `ca_bundle`?)")]
    BuildScoped {
        section: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("request to `{url}` failed")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("`{url}` answered {status}")]
    Status { url: String, status: StatusCode },
    #[error("`{url}` did not answer within {secs:.1} s")]
    Timeout { url: String, secs: f64 },
    #[error(
        "the upstream `{upstream}` failed its last requests; not asking it again for {retry_in_secs} s"
    )]
    CircuitOpen {
        upstream: String,
        retry_in_secs: u64,
    },
    #[error(
        "the page `{url}` is larger than the limit of {limit} bytes; raise `[limits] max_page_bytes` if it is real"
    )]
    PageTooLarge { url: String, limit: u64 },
    #[error(
        "the page `{url}` ended after {received} of the {expected} bytes its Content-Length announced"
    )]
    Truncated {
        url: String,
        expected: u64,
        received: u64,
    },
}

impl UpstreamError {
    /// Whether this failure says the upstream is unavailable (as opposed to answering with
    /// something unwanted): these count towards its circuit breaker.
    fn is_unavailability(&self) -> bool {
        match self {
            UpstreamError::Request { .. }
            | UpstreamError::Timeout { .. }
            | UpstreamError::Truncated { .. } => true,
            UpstreamError::Status { status, .. } => status.is_server_error(),
            UpstreamError::Build(_)
            | UpstreamError::BuildScoped { .. }
            | UpstreamError::CircuitOpen { .. }
            | UpstreamError::PageTooLarge { .. } => false,
        }
    }

    /// The upstream (`host:port`) this error is about, for messages to clients that must not
    /// see upstream URLs.
    pub fn upstream(&self) -> Option<String> {
        match self {
            UpstreamError::Request { url, .. }
            | UpstreamError::Status { url, .. }
            | UpstreamError::Timeout { url, .. }
            | UpstreamError::PageTooLarge { url, .. }
            | UpstreamError::Truncated { url, .. } => Some(upstream_label(url)),
            UpstreamError::CircuitOpen { upstream, .. } => Some(upstream.clone()),
            UpstreamError::Build(_) | UpstreamError::BuildScoped { .. } => None,
        }
    }
}

/// Validators of a cached page, sent for conditional revalidation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// Sees a page body while it arrives: the index cache parses an HTML page chunk by chunk, so
/// that a page of thousands of links is parsed by the time its last bytes land. Called on the
/// connection's thread, between reads: whatever takes time belongs elsewhere.
pub trait BodyReader: Send {
    /// An answer's body begins (again, on a retry), of this `Content-Type`, and of this length
    /// when the upstream announced it.
    fn begin(&mut self, content_type: &str, length: Option<usize>);
    /// The body's next bytes.
    fn arrived(&mut self, chunk: &bytes::Bytes);
    /// Whether it keeps the body's text itself, so that the fetch need not: the body then comes
    /// back as the chunks it arrived in ([`PageBody::Chunks`]), shared, not copied.
    fn keeps_text(&self) -> bool {
        false
    }
}

/// A page's body as the fetch hands it over.
#[derive(Debug)]
pub enum PageBody {
    /// The whole text.
    Text(String),
    /// The chunks it arrived in, when its reader kept the text ([`BodyReader::keeps_text`]):
    /// copying a real-size torch page here as well as on the parser threads cost the
    /// connection's thread a sixth of its work for a cold merged page.
    Chunks(Vec<bytes::Bytes>),
}

impl PageBody {
    /// The whole text; bytes that are not UTF-8 become U+FFFD.
    pub fn into_text(self) -> String {
        match self {
            PageBody::Text(text) => text,
            PageBody::Chunks(chunks) => {
                let length = chunks.iter().map(bytes::Bytes::len).sum();
                let mut text = ArrivingText::with_capacity(length);
                for chunk in &chunks {
                    text.push(chunk);
                }
                text.finish()
            }
        }
    }
}

/// The answer to a page request.
#[derive(Debug)]
pub enum PageResponse {
    /// A new body.
    Fresh {
        body: PageBody,
        content_type: String,
        validators: Validators,
        /// Where the page was answered from when a redirect moved it (devpi answers
        /// `/<user>/<index>/+simple/<project>/` from `/<user>/<index>/<project>/`): its path
        /// and query when it stayed on the origin asked (so that URL's own credentials still
        /// apply), else the whole URL without credentials. Its relative links resolve against
        /// it, not against the URL asked for.
        moved_to: Option<String>,
    },
    /// The cached copy is still current (304).
    NotModified,
    /// The upstream has no such project (404, or PyTorch's 403 for a missing project).
    NotFound,
}

/// The shared upstream client; cheap to clone.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    transport: Transport,
    retries: u32,
    attempt_timeout: Duration,
    deadline: Duration,
    max_page_bytes: u64,
    breakers: Arc<Breakers>,
    metrics: Arc<Metrics>,
    /// File lengths learned by `HEAD`, by URL: a client reading a file by ranges asks for its
    /// length once, not before every range. Cleared whole past [`LENGTHS_REMEMBERED`].
    lengths: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
}

/// File lengths remembered at most.
const LENGTHS_REMEMBERED: usize = 4096;

impl UpstreamClient {
    pub fn new(settings: &ClientSettings) -> Result<Self, UpstreamError> {
        Ok(UpstreamClient {
            transport: Transport::build(settings)?,
            retries: settings.retries,
            attempt_timeout: settings.attempt_timeout,
            deadline: settings.deadline,
            max_page_bytes: settings.max_page_bytes,
            breakers: Arc::new(Breakers::new(settings.breaker)),
            metrics: Arc::default(),
            lengths: Arc::default(),
        })
    }

    /// This client, recording its requests in `metrics` (the server's registry).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The registry this client records into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The circuit breakers of the upstreams (for `/metrics` and the status page).
    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }

    /// The access of the private upstream whose origins hold `url` (none: a public one), for
    /// the status page: its origins, header names and CA bundle (values stay in the headers,
    /// marked sensitive).
    pub fn access_for(&self, url: &str) -> Option<&OriginAccess> {
        let url = reqwest::Url::parse(url).ok()?;
        self.transport
            .access()
            .find(|access| access.applies_to(&url))
    }

    /// The underlying client without any private upstream's credentials or CA bundle (those
    /// go only through [`UpstreamClient::get_page`], [`UpstreamClient::get_stream`] and
    /// [`UpstreamClient::send`]).
    pub fn http(&self) -> &reqwest::Client {
        self.transport.default_client()
    }

    /// How long one page fetch may take in all (`[limits] upstream_deadline_secs`): the bound
    /// for other small reads too.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// One request with a source's access (credentials, headers, CA bundle), redirects followed
    /// as for pages and files; no retries and no breaker. For ranged reads of a wheel and `HEAD`s
    /// for sizes.
    ///
    /// `for_page` is the page the request is made for (the page that lists the file): only its
    /// source's access is used, on that source's origins (`None`: no access).
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &HeaderMap,
        for_page: Option<&str>,
    ) -> Result<reqwest::Response, reqwest::Error> {
        self.transport.send(method, url, headers, for_page).await
    }

    /// The section whose access requests made for the page at `for_page` carry (`None`: no
    /// access): what shares reads between requests must tell sources apart by it.
    pub fn section_for(&self, for_page: Option<&str>) -> Option<&str> {
        self.transport.section_for(for_page)
    }

    /// The length of the file at `url` by a `HEAD` made for the page at `for_page` (with its
    /// source's access, as [`UpstreamClient::send`]); `None` when the upstream does not say
    /// (logged when it fails).
    pub async fn head_length(&self, url: &str, for_page: Option<&str>) -> Option<u64> {
        // Remembered per source: a length learned with one source's access is not another's.
        let key = format!(
            "{}\n{url}",
            self.transport.section_for(for_page).unwrap_or_default()
        );
        let remembered =
            |lengths: &std::collections::HashMap<String, u64>| lengths.get(&key).copied();
        if let Some(len) = remembered(&self.lengths()) {
            return Some(len);
        }
        let len = self.head_length_now(url, for_page).await?;
        let mut lengths = self.lengths();
        if lengths.len() >= LENGTHS_REMEMBERED {
            lengths.clear();
        }
        lengths.insert(key, len);
        Some(len)
    }

    fn lengths(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, u64>> {
        self.lengths
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn head_length_now(&self, url: &str, for_page: Option<&str>) -> Option<u64> {
        let response = self
            .send(reqwest::Method::HEAD, url, &HeaderMap::new(), for_page)
            .await
            .ok()?;
        if !response.status().is_success() {
            tracing::warn!(url = %redact(url), status = %response.status(), "HEAD failed; size unknown");
            return None;
        }
        response
            .headers()
            .get(reqwest::header::CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .parse()
            .ok()
    }

    /// Fetches an index page, conditionally when `validators` are given, within the deadline;
    /// `reader` sees the body as it arrives. Made for the page itself: with the access of the
    /// source whose origins hold `url`, on that source's origins only.
    pub async fn get_page(
        &self,
        url: &str,
        accept: &str,
        validators: Option<&Validators>,
        reader: Option<&mut dyn BodyReader>,
    ) -> Result<PageResponse, UpstreamError> {
        let retries = self.admit(url, RequestKind::Pages)?;
        let result = match tokio::time::timeout(
            self.deadline,
            self.fetch_page(url, accept, validators, retries, reader),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::Timeout {
                url: redact(url),
                secs: self.deadline.as_secs_f64(),
            }),
        };
        self.settle(url, RequestKind::Pages, result.as_ref().err());
        let error = result.as_ref().err().map(ToString::to_string);
        self.metrics.page_fetch(url, error);
        result
    }

    /// Asks the breaker; the retries this request may make (none for a probe).
    fn admit(&self, url: &str, kind: RequestKind) -> Result<u32, UpstreamError> {
        match self.breakers.admit(url, kind) {
            Admission::Allowed => Ok(self.retries),
            Admission::Probe => {
                debug!(upstream = %upstream_label(url), "probing an upstream whose breaker is open");
                Ok(0)
            }
            Admission::Refused { retry_in } => Err(UpstreamError::CircuitOpen {
                upstream: upstream_label(url),
                retry_in_secs: retry_in.as_secs().max(1),
            }),
        }
    }

    /// Tells the breaker how a request ended.
    fn settle(&self, url: &str, kind: RequestKind, error: Option<&UpstreamError>) {
        let answered = error.is_none_or(|err| !err.is_unavailability());
        if matches!(error, Some(UpstreamError::CircuitOpen { .. })) {
            return;
        }
        if self.breakers.record(url, kind, answered) {
            warn!(upstream = %upstream_label(url), requests = kind.as_str(), "upstream breaker opened: these requests to it fail at once for a while; cached pages and files are served");
        }
    }

    async fn fetch_page(
        &self,
        url: &str,
        accept: &str,
        validators: Option<&Validators>,
        retries: u32,
        mut reader: Option<&mut dyn BodyReader>,
    ) -> Result<PageResponse, UpstreamError> {
        let mut headers = HeaderMap::new();
        if let Ok(value) = accept.parse() {
            headers.insert(ACCEPT, value);
        }
        if let Some(validators) = validators {
            if let Some(etag) = validators.etag.as_ref().and_then(|v| v.parse().ok()) {
                headers.insert(IF_NONE_MATCH, etag);
            }
            if let Some(date) = validators
                .last_modified
                .as_ref()
                .and_then(|v| v.parse().ok())
            {
                headers.insert(IF_MODIFIED_SINCE, date);
            }
        }
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = match tokio::time::timeout(
                self.attempt_timeout,
                self.page_attempt(url, &headers, reader.as_deref_mut()),
            )
            .await
            {
                Ok(result) => result,
                Err(_) => Err(UpstreamError::Timeout {
                    url: redact(url),
                    secs: self.attempt_timeout.as_secs_f64(),
                }),
            };
            let outcome = match &result {
                Err(UpstreamError::Status { status, .. }) if status.is_server_error() => {
                    UpstreamOutcome::ServerError
                }
                Err(err) if err.is_unavailability() => UpstreamOutcome::Failed,
                // An answer, even one that is refused later (too large, not a page).
                Ok(_) | Err(_) => UpstreamOutcome::Answered,
            };
            self.metrics
                .upstream_attempt(url, started.elapsed(), outcome);
            match result {
                Err(err) if err.is_unavailability() && attempt < retries => {
                    attempt += 1;
                    warn!(url = %redact(url), error = %err, attempt, "upstream page request failed, retrying");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                other => return other,
            }
        }
    }

    /// One page request: status, headers, and the whole body within the size limit.
    async fn page_attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        mut reader: Option<&mut (dyn BodyReader + '_)>,
    ) -> Result<PageResponse, UpstreamError> {
        let request_error = |source| UpstreamError::Request {
            url: redact(url),
            source,
        };
        let mut response = self
            .transport
            .get(url, headers, Some(url))
            .await
            .map_err(request_error)?;
        if let Some(answer) = self.bodiless_answer(url, response.status()) {
            return answer;
        }
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let validators = Validators {
            etag: header(ETAG),
            last_modified: header(LAST_MODIFIED),
        };
        let content_type =
            header(reqwest::header::CONTENT_TYPE).unwrap_or_else(|| "text/html".to_string());
        let too_large = || UpstreamError::PageTooLarge {
            url: redact(url),
            limit: self.max_page_bytes,
        };
        // Known when the body is not compressed: a page announced too large is not read at all.
        let announced = response.content_length();
        if announced.is_some_and(|len| len > self.max_page_bytes) {
            return Err(too_large());
        }
        let length = announced.and_then(|len| usize::try_from(len).ok());
        if let Some(reader) = reader.as_deref_mut() {
            reader.begin(&content_type, length);
        }
        let kept = reader.as_deref().is_some_and(BodyReader::keeps_text);
        let mut text = ArrivingText::with_capacity(if kept { 0 } else { length.unwrap_or(0) });
        let mut chunks = Vec::new();
        let mut received = 0usize;
        let truncated = |received: usize| UpstreamError::Truncated {
            url: redact(url),
            expected: announced.unwrap_or(0),
            received: u64::try_from(received).unwrap_or(u64::MAX),
        };
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                // The connection closed before the announced length: a page cut short.
                Err(_) if announced.is_some_and(|n| (received as u64) < n) => {
                    return Err(truncated(received));
                }
                Err(source) => return Err(request_error(source)),
            };
            if u64::try_from(received + chunk.len()).unwrap_or(u64::MAX) > self.max_page_bytes {
                return Err(too_large());
            }
            if let Some(reader) = reader.as_deref_mut() {
                reader.arrived(&chunk);
            }
            received += chunk.len();
            if kept {
                chunks.push(chunk);
            } else {
                text.push(&chunk);
            }
        }
        if let Some(expected) = announced
            && expected != u64::try_from(received).unwrap_or(u64::MAX)
        {
            return Err(truncated(received));
        }
        Ok(PageResponse::Fresh {
            body: if kept {
                PageBody::Chunks(chunks)
            } else {
                PageBody::Text(text.finish())
            },
            content_type,
            validators,
            moved_to: moved_to(url, response.url()),
        })
    }

    /// The answer to a page request whose `status` says there is no page to read: 304, "no such
    /// project", or an error; `None` for a success.
    fn bodiless_answer(
        &self,
        url: &str,
        status: StatusCode,
    ) -> Option<Result<PageResponse, UpstreamError>> {
        if status == StatusCode::NOT_MODIFIED {
            return Some(Ok(PageResponse::NotModified));
        }
        if status == StatusCode::NOT_FOUND
            || status == StatusCode::FORBIDDEN
            || status == StatusCode::GONE
        {
            if status == StatusCode::FORBIDDEN && self.transport.has_access(url) {
                // Taken as "no such project" (what download.pytorch.org means by it), but from
                // an upstream given credentials it may be a permission the token lacks.
                warn!(url = %redact(url), "a private upstream answered 403; taken as no such project (check its credentials' permissions if the project exists)");
            }
            return Some(Ok(PageResponse::NotFound));
        }
        (!status.is_success()).then(|| {
            Err(UpstreamError::Status {
                url: redact(url),
                status,
            })
        })
    }

    /// Starts a GET whose body the caller streams, made for the page at `for_page` (the page
    /// that lists the file: its source's access only, as [`UpstreamClient::send`]). Retries only
    /// before any byte was received.
    pub async fn get_stream(
        &self,
        url: &str,
        headers: HeaderMap,
        for_page: Option<&str>,
    ) -> Result<reqwest::Response, UpstreamError> {
        let retries = self.admit(url, RequestKind::Files)?;
        let result = match self
            .send_with_retries(url, headers, retries, for_page)
            .await
        {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => Err(UpstreamError::Status {
                url: redact(url),
                status: response.status(),
            }),
            Err(err) => Err(err),
        };
        self.settle(url, RequestKind::Files, result.as_ref().err());
        result
    }

    async fn send_with_retries(
        &self,
        url: &str,
        headers: HeaderMap,
        retries: u32,
        for_page: Option<&str>,
    ) -> Result<reqwest::Response, UpstreamError> {
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = match tokio::time::timeout(
                self.attempt_timeout,
                self.transport.get(url, &headers, for_page),
            )
            .await
            {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(source)) => Err(UpstreamError::Request {
                    url: redact(url),
                    source,
                }),
                Err(_) => Err(UpstreamError::Timeout {
                    url: redact(url),
                    secs: self.attempt_timeout.as_secs_f64(),
                }),
            };
            let outcome = match &result {
                Ok(response) if response.status().is_server_error() => UpstreamOutcome::ServerError,
                Ok(_) => UpstreamOutcome::Answered,
                Err(_) => UpstreamOutcome::Failed,
            };
            self.metrics
                .upstream_attempt(url, started.elapsed(), outcome);
            let retryable = match &result {
                Ok(response) => response.status().is_server_error(),
                Err(_) => true,
            };
            if !retryable || attempt >= retries {
                return result;
            }
            attempt += 1;
            match &result {
                Ok(response) => {
                    warn!(url = %redact(url), status = %response.status(), attempt, "upstream error, retrying");
                }
                Err(err) => {
                    warn!(url = %redact(url), error = %err, attempt, "upstream request failed, retrying");
                }
            }
            tokio::time::sleep(backoff(attempt)).await;
        }
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200 * 2u64.pow(attempt.saturating_sub(1).min(6)))
}

/// A URL with any `user:password@` removed, for logs and errors.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        // The authority ends at the path, query or fragment; its last `@` ends the userinfo (a
        // password may hold an unencoded `@`: `ci:p@ss@host`).
        let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
        if let Some(at) = authority.rfind('@') {
            return format!("{scheme}://***@{}", &rest[at + 1..]);
        }
    }
    url.to_string()
}

/// Where a response to a request for `asked` came from, when a redirect moved it there (see
/// [`PageResponse::Fresh`]'s `moved_to`); `None` when it did not move.
fn moved_to(asked: &str, answered: &reqwest::Url) -> Option<String> {
    let asked = reqwest::Url::parse(asked).ok()?;
    let same_place = |a: &reqwest::Url, b: &reqwest::Url| {
        a.path() == b.path() && a.query() == b.query() && a.origin() == b.origin()
    };
    if same_place(&asked, answered) {
        return None;
    }
    if asked.origin() == answered.origin() {
        let mut path = answered.path().to_string();
        if let Some(query) = answered.query() {
            path.push('?');
            path.push_str(query);
        }
        return Some(path);
    }
    let mut elsewhere = answered.clone();
    let _ = elsewhere.set_username("");
    let _ = elsewhere.set_password(None);
    elsewhere.set_fragment(None);
    Some(elsewhere.to_string())
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact("https://user:secret@mirror.example/simple/"),
            "https://***@mirror.example/simple/"
        );
        assert_eq!(
            redact("https://mirror.example/a@b"),
            "https://mirror.example/a@b"
        );
        assert_eq!(
            redact("http://ci:p@ss@mirror.example/simple/"),
            "http://***@mirror.example/simple/"
        );
    }
}
