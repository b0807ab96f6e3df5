//! `/files/<project>/<wheel>.metadata` for a wheel whose upstream offers no PEP 658 metadata:
//! kept from an earlier request, or read from the wheel once the file cache has it whole and
//! verified (downloading it first: what pip would have downloaded to read it anyway), then kept
//! (`cache/derived_metadata.rs`). The client gets kilobytes either way.

use axum::http::{HeaderMap, Method};
use axum::response::Response;

use super::file_response::FilesError;
use super::state::AppState;
use wheelgate_files::cache::FileSpec;
use wheelgate_files::derived_metadata::read_wheel_metadata;

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
    Ok(super::binding::files::metadata_response(
        method,
        headers,
        &bytes::Bytes::from(metadata),
    ))
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
            source: wheelgate_files::cache::FileCacheError::Abandoned {
                url: wheelgate_index::upstream::redact(&wheel.url),
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
