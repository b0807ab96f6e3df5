//! A file answered: conditional requests, ranges (from the cached copy, or from the upstream
//! by range when a download is far behind), the headers pip and uv rely on, and the one place
//! file errors become status codes. `/files/`, `/bound/` and derived `.metadata` all answer
//! through [`respond`].

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::{debug, error, warn};
use wheelgate_index::error_chain::source_chain;

use wheelgate_files::cache::{CachedFile, FailureKind, FileCache, FileCacheError, FileSpec};
use wheelgate_index::upstream::{UpstreamClient, UpstreamError};

use super::error::ApiError;
use super::ranges::RangeBody;
use super::state::AppState;

/// Files never change under one name, so clients may keep them forever (what PyPI sends).
const CACHE_CONTROL: &str = "max-age=365000000, immutable";

/// What a file request failed with; the one place file errors become status codes.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("cannot serve `{filename}`")]
    Cache {
        filename: String,
        #[source]
        source: FileCacheError,
    },
    /// The verified wheel holds no `METADATA` that can be served faithfully.
    #[error("cannot serve `{filename}`")]
    Derived {
        filename: String,
        #[source]
        source: wheelgate_files::derived_metadata::DerivedMetadataError,
    },
}

impl IntoResponse for FilesError {
    fn into_response(self) -> Response {
        let (filename, source) = match self {
            FilesError::Api(api) => {
                debug!(error = %api, "file request refused");
                return api.into_response();
            }
            FilesError::Cache { filename, source } => (filename, source),
            FilesError::Derived { filename, source } => {
                warn!(filename = %filename, error = %source, cause = %source_chain(&source), "no metadata can be read from the verified wheel");
                return (
                    StatusCode::BAD_GATEWAY,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    format!("`{filename}` cannot be served: {source}\n"),
                )
                    .into_response();
            }
        };
        let status = match source.kind() {
            // Never 403: uv tolerates a 403 only from download.pytorch.org itself.
            FailureKind::NotFound => StatusCode::NOT_FOUND,
            FailureKind::Upstream => StatusCode::BAD_GATEWAY,
            FailureKind::Local => StatusCode::INTERNAL_SERVER_ERROR,
            FailureKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        };
        match status {
            StatusCode::NOT_FOUND => {
                debug!(filename = %filename, error = %source, "file not found");
            }
            StatusCode::BAD_GATEWAY => {
                warn!(filename = %filename, error = %source, "file upstream failed");
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                warn!(filename = %filename, error = %source, "file refused: downloads in flight at their cap");
            }
            _ => {
                error!(filename = %filename, error = %source, cause = %source_chain(&source), "file cache failed");
            }
        }
        // The upstream URL stays in the log: clients only ever see the proxy's URLs.
        let text = format!("{}\n", client_message(&filename, source.root()));
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text,
        )
            .into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // pip and uv retry a 503; a download in flight usually ends within seconds.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        }
        response
    }
}

fn client_message(filename: &str, error: &FileCacheError) -> String {
    match error {
        FileCacheError::NotCached { .. } => {
            format!("`{filename}` is not cached and this server is offline")
        }
        FileCacheError::Upstream {
            source: UpstreamError::Status { status, .. },
            ..
        } if status.is_client_error() => {
            format!("the upstream has no file `{filename}`")
        }
        FileCacheError::Upstream {
            source: UpstreamError::Status { status, .. },
            ..
        } => {
            format!("the upstream answered {status} for `{filename}`; try again later")
        }
        FileCacheError::Upstream {
            source:
                UpstreamError::CircuitOpen {
                    upstream,
                    retry_in_secs,
                },
            ..
        } => format!(
            "`{filename}` is not cached and the upstream `{upstream}` is failing; it is asked again in {retry_in_secs} s"
        ),
        FileCacheError::Upstream { .. } => {
            format!("the upstream could not be reached for `{filename}`; try again later")
        }
        FileCacheError::Interrupted { .. } => {
            format!("the upstream download of `{filename}` broke off (timeout or reset); try again")
        }
        FileCacheError::SizeMismatch {
            expected, actual, ..
        } => {
            format!(
                "the upstream sent `{filename}` with {actual} bytes instead of {expected}; nothing was kept"
            )
        }
        FileCacheError::TooLarge { limit, .. } => {
            format!(
                "the upstream's `{filename}` is larger than the {limit} bytes it may be; nothing was kept"
            )
        }
        FileCacheError::HashMismatch { .. } => {
            format!(
                "the upstream sent `{filename}` with bytes that do not match the sha256 of its index page; nothing was kept"
            )
        }
        FileCacheError::PlannedFromOtherBytes { .. } => format!(
            "the upstream answered ranged reads of the file `{filename}` is derived from with bytes the file does not hold; nothing was kept"
        ),
        FileCacheError::InvalidHash { hash, .. } => format!(
            "the index page gives `{hash}` as the sha256 of `{filename}`, which is not a sha256"
        ),
        FileCacheError::Bucket { .. } => {
            format!("the shared cache failed serving `{filename}`; try again")
        }
        FileCacheError::Busy { busy, .. } => format!(
            "`{filename}` is not cached and this server is downloading as many files as it may ({} at once); try again in a few seconds",
            busy.limit
        ),
        FileCacheError::Abandoned { .. } => {
            format!("the download of `{filename}` was abandoned; try again")
        }
        FileCacheError::Io { .. } | FileCacheError::Shared(_) => {
            format!("the file cache failed serving `{filename}`")
        }
    }
}

/// Answers a `GET` or `HEAD` for `spec`'s file: conditionals, ranges, headers and the body.
pub async fn respond(
    state: &AppState,
    spec: &FileSpec,
    method: &Method,
    headers: &HeaderMap,
) -> Result<Response, FileCacheError> {
    let (files, client, offline) = (&*state.files, &state.client, state.config.offline);
    let etag = FileCache::etag(spec)?;
    // Answered without touching the file: the ETag is the page's sha256 (or the URL's key).
    if if_none_match(headers, &etag) {
        return Ok(
            with_file_headers(Response::builder().status(StatusCode::NOT_MODIFIED), &etag)
                .body(Body::empty())
                .expect("valid response"),
        );
    }
    // A HEAD asks for headers only: for a file not held here they come from the page (its
    // size) or a HEAD upstream, never from a whole download (27 HEADs once pulled 849 MB).
    if *method == Method::HEAD
        && !offline
        && !files.contains(spec)
        && let Some(len) = upstream_len(client, spec).await
    {
        // Nothing verified is behind it: a weak ETag, as for a download in flight.
        return Ok(with_file_headers(
            Response::builder().status(StatusCode::OK),
            &format!("W/{etag}"),
        )
        .header(header::CONTENT_LENGTH, len)
        .body(Body::empty())
        .expect("valid response"));
    }
    // A range of a file neither held nor downloading is read from the upstream by range, never
    // by downloading the whole file: uv reads a wheel's METADATA by ranges where no `.metadata`
    // is offered, and downloading whole files for it once pulled 243 MB for the 1.36 MB sent.
    // The whole file is fetched, verified and cached when a client asks for the whole file.
    if *method == Method::GET
        && !offline
        && spec.splice.is_none()
        && headers.contains_key(header::RANGE)
        && !headers.contains_key(header::IF_RANGE)
        && !files.contains(spec)
        && !files.is_downloading(spec)
        && !files.in_bucket(spec).await
        && let Some(response) = range_from_upstream(state, spec, headers, &etag).await
    {
        return Ok(response);
    }
    let mut file = files.fetch(client, spec, offline).await?;
    if let Some(failed) = file.failure() {
        return Err(failed);
    }
    // Bytes of a download in flight are not verified yet: answers made of them carry a weak
    // ETag, so a client can never resume (`If-Range`, which compares strongly) from them.
    let etag = if file.is_committed() {
        etag
    } else {
        format!("W/{etag}")
    };
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .filter(|_| if_range_allows(headers, &etag));
    if let Some(range) = range {
        let len = file.wait_len().await?;
        match parse_range(range, len) {
            RangeOutcome::Partial { start, end } => {
                if *method == Method::GET
                    && let Some(response) =
                        upstream_range(state, spec, &file, (start, end, len), &etag).await
                {
                    return Ok(response);
                }
                let builder = with_file_headers(
                    Response::builder().status(StatusCode::PARTIAL_CONTENT),
                    &etag,
                )
                .header(
                    header::CONTENT_RANGE,
                    format!("bytes {start}-{}/{len}", end - 1),
                )
                .header(header::CONTENT_LENGTH, end - start);
                return Ok(builder
                    .body(body(method, &file, start, Some(end)))
                    .expect("valid response"));
            }
            RangeOutcome::Unsatisfiable => {
                return Ok(Response::builder()
                    .status(StatusCode::RANGE_NOT_SATISFIABLE)
                    .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                    .header(header::ACCEPT_RANGES, "bytes")
                    .body(Body::empty())
                    .expect("valid response"));
            }
            RangeOutcome::Full => {}
        }
    }
    // A HEAD must say how long the file is (uv needs it before its range requests).
    let len = if *method == Method::HEAD {
        Some(file.wait_len().await?)
    } else {
        file.known_len()
    };
    let mut builder = with_file_headers(Response::builder().status(StatusCode::OK), &etag);
    if let Some(len) = len {
        builder = builder.header(header::CONTENT_LENGTH, len);
    }
    Ok(builder
        .body(body(method, &file, 0, len))
        .expect("valid response"))
}

/// The length of `spec`'s file without downloading it: the page's `size`, else the upstream's
/// answer to a `HEAD`; `None` when neither says (the caller then follows a download).
async fn upstream_len(client: &UpstreamClient, spec: &FileSpec) -> Option<u64> {
    // A derived file's length is planned before a byte of it is written.
    if let Some(splice) = &spec.splice {
        return Some(splice.len);
    }
    match spec.size {
        Some(size) => Some(size),
        None => {
            client
                .head_length(&spec.url, spec.listed_on.as_deref())
                .await
        }
    }
}

/// The client's single byte range of an uncached file, read from the upstream by range, under
/// a weak `ETag` (`etag`, quoted: a part of a file cannot be verified). The file's length comes
/// from the page's size or one `HEAD` (remembered); a range past it is a `416` here. `None`
/// (download the file instead) for several ranges, a range that does not parse, an unknown
/// length, or an upstream that does not answer the range exactly.
async fn range_from_upstream(
    state: &AppState,
    spec: &FileSpec,
    headers: &HeaderMap,
    etag: &str,
) -> Option<Response> {
    let client = &state.client;
    let value = headers.get(header::RANGE)?.to_str().ok()?;
    // Several ranges, or none that parses: the download path answers (with the whole file).
    if !matches!(parse_range(value, u64::MAX), RangeOutcome::Partial { .. }) {
        return None;
    }
    let len = upstream_len(client, spec).await?;
    let (start, end) = match parse_range(value, len) {
        RangeOutcome::Partial { start, end } => (start, end),
        RangeOutcome::Unsatisfiable => {
            return Some(
                Response::builder()
                    .status(StatusCode::RANGE_NOT_SATISFIABLE)
                    .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                    .header(header::ACCEPT_RANGES, "bytes")
                    .body(Body::empty())
                    .expect("valid response"),
            );
        }
        RangeOutcome::Full => return None,
    };
    // Every slot taken, or the upstream does not answer the range: the file is downloaded.
    let body = state
        .ranges
        .read(
            client,
            (&spec.url, spec.listed_on.as_ref()),
            (start, end, len),
        )
        .await?;
    Some(range_response(
        body,
        &format!("W/{etag}"),
        (start, end, len),
    ))
}

/// A `206` of `body`, bytes `start..end` of a file `len` long.
fn range_response(body: RangeBody, etag: &str, (start, end, len): (u64, u64, u64)) -> Response {
    let body = match body {
        RangeBody::Whole(bytes) => Body::from(bytes),
        RangeBody::Stream(stream) => Body::from_stream(stream),
    };
    with_file_headers(
        Response::builder().status(StatusCode::PARTIAL_CONTENT),
        etag,
    )
    .header(
        header::CONTENT_RANGE,
        format!("bytes {start}-{}/{len}", end - 1),
    )
    .header(header::CONTENT_LENGTH, end - start)
    .body(body)
    .expect("valid response")
}

/// How far ahead of the download a range must start to be fetched from the upstream directly.
const RANGE_AHEAD: u64 = 4 * 1024 * 1024;

/// A range far ahead of a download in flight, fetched from the upstream directly: uv reads a
/// wheel's central directory from its end by `Range` when no `.metadata` is offered, and waiting
/// for a multi-gigabyte download to get there could exceed its 30 s read timeout. The download
/// goes on and is cached as usual. These bytes are not verified (a part of a file cannot be);
/// the client checks the hash of the whole file it installs. `None` (follow the download
/// instead) when the range is close, or the upstream does not answer the range exactly. When
/// the shared bucket holds the file, the range comes from there instead of the upstream.
async fn upstream_range(
    state: &AppState,
    spec: &FileSpec,
    file: &CachedFile,
    (start, end, len): (u64, u64, u64),
    etag: &str,
) -> Option<Response> {
    // A derived file's bytes exist only as its download writes them.
    if spec.splice.is_some()
        || file.is_committed()
        || start < file.readable_now().saturating_add(RANGE_AHEAD)
    {
        return None;
    }
    if let Some(body) = state.files.bucket_range(spec, start, end).await {
        let body = RangeBody::Stream(Box::pin(body));
        return Some(range_response(body, etag, (start, end, len)));
    }
    // Every slot taken, or the upstream does not answer the range: the download is followed.
    let body = state
        .ranges
        .read(
            &state.client,
            (&spec.url, spec.listed_on.as_ref()),
            (start, end, len),
        )
        .await?;
    Some(range_response(body, etag, (start, end, len)))
}

fn body(method: &Method, file: &CachedFile, start: u64, end: Option<u64>) -> Body {
    if *method == Method::HEAD {
        Body::empty()
    } else {
        Body::from_stream(file.stream(start, end))
    }
}

fn with_file_headers(
    builder: axum::http::response::Builder,
    etag: &str,
) -> axum::http::response::Builder {
    builder
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CACHE_CONTROL, CACHE_CONTROL)
        .header(
            header::ETAG,
            HeaderValue::from_str(etag).expect("an ETag is hex and quotes"),
        )
}

/// `If-None-Match` (weak comparison, RFC 9110 §13.1.2).
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag
        })
}

/// Whether `If-Range` lets the `Range` apply: absent, or our strong `ETag` exactly (never while
/// the file is still downloading and unverified). A date never matches (we send no
/// `Last-Modified`), so the client gets the whole file.
fn if_range_allows(headers: &HeaderMap, etag: &str) -> bool {
    match headers.get(header::IF_RANGE) {
        None => true,
        // Strong comparison (RFC 9110 §13.1.5): a weak tag on either side never matches.
        Some(value) => !etag.starts_with("W/") && value.to_str().is_ok_and(|v| v.trim() == etag),
    }
}

/// The answer to a `Range` header for a file of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
enum RangeOutcome {
    /// Ignore the header (malformed, another unit, or several ranges): send the whole file.
    Full,
    /// `start..end`, `end` exclusive.
    Partial { start: u64, end: u64 },
    /// `416`.
    Unsatisfiable,
}

// Examples of its input: `bytes=0-1023`, `bytes=1024-`, `bytes=-22` (uv reads a wheel's
// end-of-central-directory this way).
fn parse_range(value: &str, len: u64) -> RangeOutcome {
    let Some((unit, spec)) = value.split_once('=') else {
        return RangeOutcome::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return RangeOutcome::Full;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeOutcome::Full;
    };
    let number = |text: &str| -> Option<u64> {
        if text.bytes().all(|b| b.is_ascii_digit()) {
            text.parse().ok()
        } else {
            None
        }
    };
    match (first.trim(), last.trim()) {
        ("", "") => RangeOutcome::Full,
        ("", suffix) => match number(suffix) {
            None => RangeOutcome::Full,
            Some(0) => RangeOutcome::Unsatisfiable,
            Some(_) if len == 0 => RangeOutcome::Unsatisfiable,
            Some(n) => RangeOutcome::Partial {
                start: len.saturating_sub(n),
                end: len,
            },
        },
        (start, "") => match number(start) {
            None => RangeOutcome::Full,
            Some(start) if start >= len => RangeOutcome::Unsatisfiable,
            Some(start) => RangeOutcome::Partial { start, end: len },
        },
        (start, last) => match (number(start), number(last)) {
            (Some(start), Some(last)) if start <= last => {
                if start >= len {
                    RangeOutcome::Unsatisfiable
                } else {
                    RangeOutcome::Partial {
                        start,
                        end: last.min(len - 1) + 1,
                    }
                }
            }
            _ => RangeOutcome::Full,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeOutcome::{Full, Partial, Unsatisfiable};
        assert_eq!(parse_range("bytes=0-9", 100), Partial { start: 0, end: 10 });
        assert_eq!(
            parse_range("bytes=90-200", 100),
            Partial {
                start: 90,
                end: 100
            }
        );
        assert_eq!(
            parse_range("bytes=10-", 100),
            Partial {
                start: 10,
                end: 100
            }
        );
        assert_eq!(
            parse_range("bytes=-22", 100),
            Partial {
                start: 78,
                end: 100
            }
        );
        assert_eq!(
            parse_range("bytes=-500", 100),
            Partial { start: 0, end: 100 }
        );
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=100-101", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-1", 100), Full);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Full);
        assert_eq!(parse_range("items=0-1", 100), Full);
        assert_eq!(parse_range("bytes=+1-2", 100), Full);
        assert_eq!(parse_range("bytes=-", 100), Full);
    }

    #[test]
    fn conditionals() {
        let etag = "\"abc\"";
        let mut headers = HeaderMap::new();
        assert!(!if_none_match(&headers, etag));
        assert!(if_range_allows(&headers, etag));
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"abc\""),
        );
        assert!(if_none_match(&headers, etag));
        headers.insert(header::IF_RANGE, HeaderValue::from_static("\"abc\""));
        assert!(if_range_allows(&headers, etag));
        headers.insert(header::IF_RANGE, HeaderValue::from_static("W/\"abc\""));
        assert!(
            !if_range_allows(&headers, etag),
            "If-Range needs a strong match"
        );
        headers.insert(
            header::IF_RANGE,
            HeaderValue::from_static("Sat, 01 Jan 2000 00:00:00 GMT"),
        );
        assert!(!if_range_allows(&headers, etag));
    }
}
