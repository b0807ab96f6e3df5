//! The PEP 658 `.metadata` of a chosen variant wheel, served with its PEP 817 `variant_label`
//! markers decided for the variant's label, which released installers cannot evaluate.
//!
//! The upstream file is read whole through the file cache (verified against the page's hash)
//! before a byte is answered, so a download that fails (bytes that do not verify, a cut
//! connection, an error status) is still answered with a status code: `502`, the upstream's
//! fault, never `400`; the upstream URL goes to the log only.

use std::io;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::{debug, error, warn};
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::{CoreMetadata, ProjectPage};
use wheelgate_resolver::variants::decide_variant_label;

use crate::listing::Listing;
use wheelgate_files::cache::{
    CORE_METADATA_LIMIT, FailureKind, FileCacheError, FileSpec, SmallReadError,
};
use wheelgate_index::error_chain::source_chain;

use super::super::error::ApiError;
use super::super::files::FilesError;
use super::super::lookup::find_file;
use super::super::state::AppState;
use super::METADATA_SUFFIX;

/// Why a variant's metadata could not be served.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// Refused before reading (not a file of the project, no metadata) or the file route's own
    /// failure (the upstream refused the file, offline and not cached).
    #[error(transparent)]
    Files(#[from] FilesError),
    /// The download or the cached copy broke while it was read.
    #[error("the metadata of `{dist}` could not be read from the upstream")]
    Unreadable {
        dist: String,
        #[source]
        source: io::Error,
    },
    /// The upstream's file is larger than any core metadata.
    #[error("the upstream's metadata of `{dist}` is larger than {limit} bytes")]
    TooLarge { dist: String, limit: usize },
}

impl IntoResponse for MetadataError {
    fn into_response(self) -> Response {
        let this = match self {
            MetadataError::Files(files) => return files.into_response(),
            other => other,
        };
        let status = match &this {
            MetadataError::Files(_) => unreachable!("answered above"),
            MetadataError::Unreadable { source, .. }
                if cache_failure(source).is_some_and(|e| e.kind() == FailureKind::Local) =>
            {
                error!(error = %this, cause = %source_chain(&this), "variant metadata unreadable from the cache");
                StatusCode::INTERNAL_SERVER_ERROR
            }
            MetadataError::Unreadable { .. } | MetadataError::TooLarge { .. } => {
                warn!(error = %this, cause = %source_chain(&this), "variant metadata upstream failed");
                StatusCode::BAD_GATEWAY
            }
        };
        // The message names the file, never the upstream URL (the log has the cause).
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{this}\n"),
        )
            .into_response()
    }
}

/// The file cache's error inside an error of a cached file's stream, when it carries one.
fn cache_failure(error: &io::Error) -> Option<&FileCacheError> {
    let inner = error.get_ref()?;
    inner
        .downcast_ref::<Arc<FileCacheError>>()
        .map(AsRef::as_ref)
        .or_else(|| inner.downcast_ref::<FileCacheError>())
}

/// The metadata file `spec` of the upstream wheel `dist`, read whole through the file cache
/// (at most [`CORE_METADATA_LIMIT`] bytes); `requested` is the name the client asked for.
async fn read(
    state: &AppState,
    spec: &FileSpec,
    dist: &str,
    requested: &str,
    cached_only: bool,
) -> Result<Vec<u8>, MetadataError> {
    let cached = state
        .files
        .fetch(&state.client, spec, state.config.offline || cached_only)
        .await
        .map_err(|source| FilesError::Cache {
            filename: requested.to_string(),
            source,
        })?;
    cached
        .read_small(CORE_METADATA_LIMIT)
        .await
        .map_err(|err| match err {
            SmallReadError::TooLarge { limit } => MetadataError::TooLarge {
                dist: dist.to_string(),
                limit,
            },
            SmallReadError::Io(source) => MetadataError::Unreadable {
                dist: dist.to_string(),
                source,
            },
        })
}

/// Whether the core metadata of the upstream variant wheel at `index` of `upstream` (fetched
/// as `listing` says) has PEP 817 `variant_label` markers, which pip refuses in the wheel itself
/// (see the README); `None` when the page offers no metadata file or it cannot be read. Only
/// from the cache when `cached_only`.
pub(super) async fn has_variant_label_markers(
    state: &AppState,
    upstream: &ProjectPage,
    listing: Listing<'_>,
    index: usize,
    cached_only: bool,
) -> Option<bool> {
    let file = upstream.files.get(index)?;
    let sha256 = match &file.core_metadata {
        CoreMetadata::Absent => return None,
        CoreMetadata::Present => None,
        CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
    };
    let spec = FileSpec {
        url: format!(
            "{}{METADATA_SUFFIX}",
            upstream.file_url(file, listing.base_url())
        ),
        sha256,
        size: None,
        splice: None,
        listed_on: listing.page_of(file),
    };
    let requested = format!("{}{METADATA_SUFFIX}", file.filename);
    match read(state, &spec, &file.filename, &requested, cached_only).await {
        Ok(bytes) => Some(uses_variant_label(&String::from_utf8_lossy(&bytes))),
        Err(err) => {
            debug!(file = %file.filename, error = %err, "variant metadata unread for an explanation");
            None
        }
    }
}

/// Whether a core metadata text has a `Requires-Dist` with a `variant_label` marker.
fn uses_variant_label(metadata: &str) -> bool {
    metadata.lines().any(|line| {
        line.get(..14)
            .is_some_and(|head| head.eq_ignore_ascii_case("requires-dist:"))
            && line
                .split_once(';')
                .is_some_and(|(_, marker)| marker.contains("variant_label"))
    })
}

/// The PEP 658 metadata of the upstream variant wheel `dist`, read through the file cache
/// (verified against the page's hash) and served with its `variant_label` markers decided for
/// `label` ([`decide_variant_label`]). The page therefore offers it without a hash.
pub(super) async fn decided(
    state: &AppState,
    method: &Method,
    project: &str,
    dist: &str,
    label: &str,
    requested: &str,
) -> Result<Response, MetadataError> {
    if dist
        .parse::<DistFilename>()
        .map_or(true, |parsed| normalize_name(parsed.name()) != project)
    {
        return Err(FilesError::from(ApiError::NotFound(format!(
            "`{dist}` is not a file of `{project}`"
        )))
        .into());
    }
    let source = find_file(state, project, dist)
        .await
        .map_err(|err| FilesError::from(ApiError::Owners(err)))?
        .ok_or_else(|| {
            FilesError::from(ApiError::NotFound(format!(
                "`{project}` has no file `{dist}`"
            )))
        })?;
    let sha256 = match &source.core_metadata {
        CoreMetadata::Absent => {
            return Err(FilesError::from(ApiError::NotFound(format!(
                "`{dist}` has no metadata file (PEP 658)"
            )))
            .into());
        }
        CoreMetadata::Present => None,
        CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
    };
    let spec = FileSpec {
        url: format!("{}{METADATA_SUFFIX}", source.url),
        sha256,
        size: None,
        splice: None,
        listed_on: Some(source.listed_on),
    };
    let bytes = read(state, &spec, dist, requested, false).await?;
    let text = String::from_utf8_lossy(&bytes);
    let decided = decide_variant_label(&text, label).into_bytes();
    let response = Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CONTENT_LENGTH, decided.len())
        .header(header::CACHE_CONTROL, "max-age=365000000, immutable");
    if *method == Method::HEAD {
        return Ok(response.body(Body::empty()).expect("valid response"));
    }
    Ok(response.body(Body::from(decided)).expect("valid response"))
}

#[cfg(test)]
mod tests {
    use super::uses_variant_label;

    #[test]
    fn finds_variant_label_markers_in_requirements_only() {
        assert!(uses_variant_label(
            "Name: torch\nRequires-Dist: nvidia-cublas-cu12==12.8.4.1; variant_label == 'cuda12.8'\n"
        ));
        assert!(!uses_variant_label(
            "Name: torch\nRequires-Dist: filelock\nSummary: mentions variant_label; in prose\n"
        ));
    }
}
