//! The HTTP client for upstream indexes and file hosts: rustls, connect and read timeouts,
//! bounded retries with backoff for idempotent requests, `HTTPS_PROXY`/`NO_PROXY` from the
//! environment (reqwest's system proxy support), connection reuse, compressed index responses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, ETAG, HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use tracing::{debug, warn};

use crate::metrics::{Metrics, UpstreamOutcome};

/// Timeouts and retries of the upstream client.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub connect_timeout: Duration,
    /// Longest wait between two reads of a response body.
    pub read_timeout: Duration,
    /// Retries of an idempotent request after a connection error or a 5xx answer.
    pub retries: u32,
    pub user_agent: String,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            retries: 2,
            user_agent: format!("wheelgate/{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// What went wrong talking to an upstream.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("could not build the HTTP client")]
    Build(#[source] reqwest::Error),
    #[error("request to `{url}` failed")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("`{url}` answered {status}")]
    Status { url: String, status: StatusCode },
}

/// Validators of a cached page, sent for conditional revalidation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// The answer to a page request.
#[derive(Debug)]
pub enum PageResponse {
    /// A new body.
    Fresh {
        body: String,
        content_type: String,
        validators: Validators,
    },
    /// The cached copy is still current (304).
    NotModified,
    /// The upstream has no such project (404, or PyTorch's 403 for a missing project).
    NotFound,
}

/// The shared upstream client; cheap to clone.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    http: reqwest::Client,
    retries: u32,
    metrics: Arc<Metrics>,
}

impl UpstreamClient {
    pub fn new(settings: &ClientSettings) -> Result<Self, UpstreamError> {
        let http = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .read_timeout(settings.read_timeout)
            .user_agent(settings.user_agent.clone())
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .map_err(UpstreamError::Build)?;
        Ok(UpstreamClient {
            http,
            retries: settings.retries,
            metrics: Arc::default(),
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

    /// The underlying client, for streaming file downloads.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Fetches an index page, conditionally when `validators` are given.
    pub async fn get_page(
        &self,
        url: &str,
        accept: &str,
        validators: Option<&Validators>,
    ) -> Result<PageResponse, UpstreamError> {
        let result = self.fetch_page(url, accept, validators).await;
        let error = result.as_ref().err().map(ToString::to_string);
        self.metrics.page_fetch(url, error);
        result
    }

    async fn fetch_page(
        &self,
        url: &str,
        accept: &str,
        validators: Option<&Validators>,
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
        let response = self.send_with_retries(url, headers).await?;
        let status = response.status();
        if status == StatusCode::NOT_MODIFIED {
            return Ok(PageResponse::NotModified);
        }
        if status == StatusCode::NOT_FOUND
            || status == StatusCode::FORBIDDEN
            || status == StatusCode::GONE
        {
            return Ok(PageResponse::NotFound);
        }
        if !status.is_success() {
            return Err(UpstreamError::Status {
                url: redact(url),
                status,
            });
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
        let body = response
            .text()
            .await
            .map_err(|source| UpstreamError::Request {
                url: redact(url),
                source,
            })?;
        Ok(PageResponse::Fresh {
            body,
            content_type,
            validators,
        })
    }

    /// Starts a GET whose body the caller streams. Retries only before any byte was received.
    pub async fn get_stream(
        &self,
        url: &str,
        headers: HeaderMap,
    ) -> Result<reqwest::Response, UpstreamError> {
        let response = self.send_with_retries(url, headers).await?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(UpstreamError::Status {
                url: redact(url),
                status: response.status(),
            })
        }
    }

    async fn send_with_retries(
        &self,
        url: &str,
        headers: HeaderMap,
    ) -> Result<reqwest::Response, UpstreamError> {
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let result = self.http.get(url).headers(headers.clone()).send().await;
            let outcome = match &result {
                Ok(response) if response.status().is_server_error() => UpstreamOutcome::ServerError,
                Ok(_) => UpstreamOutcome::Answered,
                Err(_) => UpstreamOutcome::Failed,
            };
            self.metrics
                .upstream_attempt(url, started.elapsed(), outcome);
            let retryable = match &result {
                Ok(response) => response.status().is_server_error(),
                Err(err) => err.is_connect() || err.is_timeout() || err.is_request(),
            };
            if !retryable || attempt >= self.retries {
                return result.map_err(|source| UpstreamError::Request {
                    url: redact(url),
                    source,
                });
            }
            attempt += 1;
            let backoff = Duration::from_millis(200 * 2u64.pow(attempt - 1));
            match &result {
                Ok(response) => {
                    warn!(url = %redact(url), status = %response.status(), attempt, "upstream error, retrying");
                }
                Err(err) => {
                    warn!(url = %redact(url), error = %err, attempt, "upstream request failed, retrying");
                }
            }
            tokio::time::sleep(backoff).await;
            debug!(url = %redact(url), attempt, "retrying upstream request");
        }
    }
}

/// A URL with any `user:password@` removed, for logs and errors.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some(at) = rest.find('@')
        && rest[..at].find('/').is_none()
    {
        return format!("{scheme}://***@{}", &rest[at + 1..]);
    }
    url.to_string()
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
    }
}
