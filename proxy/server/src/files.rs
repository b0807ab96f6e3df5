//! `/files/<project>/<filename>`: wheels, sdists and their PEP 658 `.metadata` files, through the
//! file cache, with the HTTP semantics pip and uv rely on: `HEAD`, `Range` (uv reads a wheel's
//! metadata by `HEAD` then `Range` when no `.metadata` is offered; pip resumes with `Range` plus
//! `If-Range`), a strong `ETag` and `304`, `Cache-Control: immutable`.
//!
//! The path is only ever used to look the file up in its project's index page: the upstream URL
//! and hash come from the page, and the cache key from those, so no client input reaches the
//! file system.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tracing::{debug, error, warn};
use wheelgate_index::error_chain::source_chain;
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::CoreMetadata;

use wheelgate_files::cache::{CachedFile, FailureKind, FileCache, FileCacheError, FileSpec};
use wheelgate_index::upstream::{UpstreamClient, UpstreamError};

use super::error::ApiError;
use super::lookup::{FileSource, find_file};
use super::ranges::RangeBody;
use super::state::AppState;

/// Files never change under one name, so clients may keep them forever (what PyPI sends).
const CACHE_CONTROL: &str = "max-age=365000000, immutable";
const METADATA_SUFFIX: &str = ".metadata";

/// The file routes: `GET` and `HEAD` on `/files/{project}/{filename}`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/files/{project}/{filename}", get(get_file).head(head_file))
}

async fn get_file(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::GET, &project, &filename, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn head_file(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::HEAD, &project, &filename, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

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

/// A validated file request.
#[derive(Debug, PartialEq, Eq)]
struct FileRequest {
    project: String,
    /// The distribution's filename (without `.metadata`).
    filename: String,
    /// Whether the PEP 658 metadata file is asked for.
    metadata: bool,
}

/// Checks the two path segments (already percent-decoded by the router). Only names are
/// accepted, never anything path-like, though they never reach a path: they are looked up in
/// the project's page.
fn parse_request(project: &str, filename: &str) -> Result<FileRequest, ApiError> {
    let valid_project = !project.is_empty()
        && project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && normalize_name(project) == project;
    if !valid_project {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a normalized project name (PEP 503)",
            printable(project)
        )));
    }
    if filename.is_empty()
        || filename.contains(['/', '\\'])
        || filename.contains("..")
        || filename.chars().any(char::is_control)
    {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a file name",
            printable(filename)
        )));
    }
    let (dist, metadata) = match filename.strip_suffix(METADATA_SUFFIX) {
        Some(dist) => (dist, true),
        None => (filename, false),
    };
    // A wheel or sdist names its project: another's is refused at once. Any other name
    // (`.zip` and `.tar.bz2` sdists of older releases, `.egg`, `.exe`) is served only if the
    // project's page lists it, as every name is: it is looked up there, never on a path.
    if let Ok(parsed) = dist.parse::<DistFilename>()
        && normalize_name(parsed.name()) != project
    {
        return Err(ApiError::NotFound(format!(
            "`{dist}` is not a file of `{project}`"
        )));
    }
    Ok(FileRequest {
        project: project.to_string(),
        filename: dist.to_string(),
        metadata,
    })
}

/// Control characters escaped, so an error message cannot forge log lines or headers.
fn printable(text: &str) -> String {
    text.chars().flat_map(char::escape_default).collect()
}

/// Serves `filename` of `project` (also for [`super::variants`], which names the upstream
/// variant file).
pub(super) async fn serve(
    state: &AppState,
    method: &Method,
    project: &str,
    filename: &str,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let request = parse_request(project, filename)?;
    serve_listed(
        state,
        method,
        &request.project,
        &request.filename,
        request.metadata,
        headers,
    )
    .await
}

/// Serves `filename` (or its `.metadata` file) of `project`, checked by the caller, as its
/// project page lists it (also for [`super::variants`]' `*-variants.json` files, which are not
/// distribution names).
pub(super) async fn serve_listed(
    state: &AppState,
    method: &Method,
    project: &str,
    filename: &str,
    metadata: bool,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let request = FileRequest {
        project: project.to_string(),
        filename: filename.to_string(),
        metadata,
    };
    let source = find_file(state, &request.project, &request.filename)
        .await
        .map_err(ApiError::Owners)?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "`{}` has no file `{}`",
                request.project, request.filename
            ))
        })?;
    if request.metadata
        && source.core_metadata == CoreMetadata::Absent
        && wheelgate_resolver::filename::is_wheel(&request.filename)
        && source.sha256.is_some()
    {
        // Listed with `.metadata` though the upstream offers none (`server/rewrite.rs`).
        let wheel = file_spec(&source, false).expect("a file's own spec");
        return super::derived_metadata::serve(state, &wheel, &request.filename, method, headers)
            .await;
    }
    let spec = file_spec(&source, request.metadata).ok_or_else(|| {
        ApiError::NotFound(format!(
            "`{}` has no metadata file (PEP 658)",
            request.filename
        ))
    })?;
    state.metrics.file_lookup(state.files.contains(&spec));
    respond(state, &spec, method, headers)
        .await
        .map_err(|source| FilesError::Cache {
            // The name the client asked for, `.metadata` included.
            filename: if metadata {
                format!("{filename}{METADATA_SUFFIX}")
            } else {
                filename.to_string()
            },
            source,
        })
}

/// The cache's view of a page's file, or of its `.metadata` file (`None` when the page offers
/// none).
fn file_spec(source: &FileSource, metadata: bool) -> Option<FileSpec> {
    if !metadata {
        return Some(FileSpec {
            url: source.url.clone(),
            sha256: source.sha256.clone(),
            size: source.size,
            splice: None,
            listed_on: Some(std::sync::Arc::clone(&source.listed_on)),
        });
    }
    let sha256 = match &source.core_metadata {
        CoreMetadata::Absent => return None,
        CoreMetadata::Present => None,
        CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
    };
    Some(FileSpec {
        url: format!("{}{METADATA_SUFFIX}", source.url),
        sha256,
        size: None,
        splice: None,
        listed_on: Some(std::sync::Arc::clone(&source.listed_on)),
    })
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

    #[test]
    fn accepts_only_names() {
        let wheel = "torch-2.9.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
        assert_eq!(
            parse_request("torch", wheel).unwrap(),
            FileRequest {
                project: "torch".into(),
                filename: wheel.into(),
                metadata: false
            }
        );
        assert!(
            parse_request("torch", &format!("{wheel}.metadata"))
                .unwrap()
                .metadata
        );
        assert!(
            parse_request(
                "nvidia-cudnn-cu12",
                "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"
            )
            .is_ok()
        );
        assert!(parse_request("demo", "demo-1.0.tar.gz").is_ok());
        for (project, filename) in [
            ("torch", "../../etc/passwd"),
            ("torch", "..%2F..%2Fetc%2Fpasswd"),
            ("torch", "..\\..\\x.whl"),
            ("torch", "torch-2.9.0-cp311-cp311-linux_x86_64.whl\0"),
            ("torch", "torch-2.9.0-cp311-cp311-linux_x86_64.whl/x"),
            ("torch", ""),
            ("..", "x"),
            ("Torch", wheel),
            ("torch_x", "torch_x-1.0.tar.gz"),
            ("", wheel),
            ("torch\n", wheel),
        ] {
            assert!(
                matches!(
                    parse_request(project, filename),
                    Err(ApiError::BadRequest(_))
                ),
                "{project:?} {filename:?} must be refused"
            );
        }
        assert!(matches!(
            parse_request("numpy", wheel),
            Err(ApiError::NotFound(_))
        ));
        let err = parse_request("torch", "a\nb").unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        // Names that are neither wheels nor `.tar.gz` sdists are looked up like any other: a
        // page may list them (older sdists, eggs, installers).
        for listed in [
            "demo-0.6c1.zip",
            "demo-1.0.tar.bz2",
            "demo-0.4-py2.7.egg",
            "demo-1.0.win32.exe",
            "passwd",
        ] {
            assert_eq!(
                parse_request("demo", listed).unwrap().filename,
                listed,
                "{listed}"
            );
        }
    }

    #[test]
    fn metadata_spec_follows_the_page() {
        let mut source = FileSource {
            url: "https://files.example/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
            sha256: Some("a".repeat(64)),
            size: Some(10),
            core_metadata: CoreMetadata::Absent,
            listed_on: "https://files.example/simple/torch/".into(),
        };
        assert_eq!(file_spec(&source, false).unwrap().size, Some(10));
        assert_eq!(file_spec(&source, true), None);
        source.core_metadata =
            CoreMetadata::Hashes([("sha256".to_string(), "b".repeat(64))].into());
        let spec = file_spec(&source, true).unwrap();
        assert_eq!(spec.url, format!("{}.metadata", source.url));
        assert_eq!(spec.sha256, Some("b".repeat(64)));
        assert_eq!(spec.size, None);
        source.core_metadata = CoreMetadata::Present;
        assert_eq!(file_spec(&source, true).unwrap().sha256, None);
    }
}
