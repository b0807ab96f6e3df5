//! `/files/<project>/<wheel>.metadata` for a wheel whose upstream offers no PEP 658 metadata:
//! kept from an earlier request, or read from the wheel once the file cache has it whole and
//! verified (downloading it first: what pip would have downloaded to read it anyway), then kept
//! (`cache/derived_metadata.rs`). The client gets kilobytes either way.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::files::FilesError;
use super::state::AppState;
use crate::cache::derived_metadata::read_wheel_metadata;
use crate::cache::files::FileSpec;

/// Answers a `GET` or `HEAD` of `filename`'s `.metadata`, read from `wheel` (its spec, with the
/// page's sha256).
pub(super) async fn serve(
    state: &AppState,
    wheel: &FileSpec,
    filename: &str,
    method: &Method,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let sha256 = wheel
        .sha256
        .as_deref()
        .expect("only a wheel with a sha256 is offered with derived metadata");
    let kept = state.derived_metadata.get(sha256).await;
    state.metrics.file_lookup(kept.is_some());
    let metadata = if let Some(kept) = kept {
        kept
    } else {
        let read = read_verified(state, wheel, filename).await?;
        state.derived_metadata.put(sha256, read.clone()).await;
        read
    };
    Ok(response(&metadata, method, headers))
}

/// The wheel's `METADATA`, read from its committed (verified) copy in the file cache.
async fn read_verified(
    state: &AppState,
    wheel: &FileSpec,
    filename: &str,
) -> Result<Vec<u8>, FilesError> {
    let cache_error = |source| FilesError::Cache {
        filename: filename.to_string(),
        source,
    };
    let mut file = state
        .files
        .fetch(&state.client, wheel, state.config.offline)
        .await
        .map_err(cache_error)?;
    file.wait_committed().await.map_err(cache_error)?;
    let Some(path) = state.files.committed_path(wheel) else {
        // Verified but not kept (no room in the cache next to the downloads in flight): read
        // again by the next request, when there may be room.
        return Err(FilesError::Cache {
            filename: filename.to_string(),
            source: crate::cache::files::FileCacheError::Abandoned {
                url: crate::upstream::redact(&wheel.url),
            },
        });
    };
    let name = filename.to_string();
    tokio::task::spawn_blocking(move || read_wheel_metadata(&path, &name))
        .await
        .expect("reading a wheel does not panic")
        .map_err(|source| FilesError::Derived {
            filename: format!("{filename}.metadata"),
            source,
        })
}

/// The `.metadata` answer: its sha256 as a strong `ETag`, a body only for `GET` without a
/// matching `If-None-Match`.
fn response(metadata: &[u8], method: &Method, headers: &HeaderMap) -> Response {
    let etag = format!("\"{}\"", hex::encode(Sha256::digest(metadata)));
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == etag));
    let builder = Response::builder()
        .header(header::ETAG, &etag)
        .header(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=365000000, immutable"),
        )
        .header(header::CONTENT_TYPE, "application/octet-stream");
    if not_modified {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .expect("valid response");
    }
    let builder = builder
        .status(StatusCode::OK)
        .header(header::CONTENT_LENGTH, metadata.len());
    let body = if *method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(metadata.to_vec())
    };
    builder.body(body).expect("valid response")
}
