//! The files whose core metadata binding changes, each as its `.metadata` and the derived wheel
//! (`wheelgate_files::derive`) whose own `METADATA` is the same bytes:
//!
//! - `/bound/<source>/<torch>/<backend>/<pin>/<project>/<filename>`: a file of a per-build page
//!   ([`super::by_page`]) with its torch pin, looked up on the template page of that torch
//!   release and build;
//! - `/files/<project>/x/<extras>/<filename>`: a build with the machine's device extras required
//!   ([`super::extras`]), looked up on the project's pages.
//!
//! Never fetched from a URL a client wrote.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use wheelgate_resolver::filename::{DistFilename, normalize_name};

use super::by_page::{BoundRequest, requirement, upstream_spec};
use crate::error::ApiError;
use crate::file_response::{FilesError, respond};
use crate::state::AppState;
use wheelgate_files::derive::Change;

/// What every file under `/bound/` may be cached as by clients: it never changes under one
/// name (the name carries the torch build and pin it was derived for).
const CACHE_CONTROL: &str = "max-age=365000000, immutable";

type Segments = (String, String, String, String, String, String);

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/bound/{source}/{torch}/{backend}/{pin}/{project}/{filename}",
            get(get_bound).head(head_bound),
        )
        .route(
            "/files/{project}/x/{extras}/{filename}",
            get(get_extras).head(head_extras),
        )
}

async fn get_extras(
    State(state): State<AppState>,
    Path(segments): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve_extras(&state, &Method::GET, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn head_extras(
    State(state): State<AppState>,
    Path(segments): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve_extras(&state, &Method::HEAD, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn serve_extras(
    state: &AppState,
    method: &Method,
    (project, extras, filename): (String, String, String),
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let extras = super::extras::parse_extras(&extras).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{}` is not a list of device extras (`device-gfx942+device-gfx90a`)",
            extras.escape_default()
        ))
    })?;
    let (wheel, metadata) = split_metadata(&filename);
    check_wheel_of(wheel, &project)?;
    let source = crate::lookup::find_file(state, &project, wheel)
        .await
        .map_err(ApiError::Owners)?
        .ok_or_else(|| ApiError::NotFound(format!("`{project}` has no file `{wheel}`")))?;
    let upstream = wheelgate_files::cache::FileSpec {
        url: source.url,
        sha256: source.sha256,
        size: source.size,
        splice: None,
        listed_on: Some(source.listed_on),
    };
    derived_response(
        state,
        method,
        headers,
        (&upstream, wheel, metadata),
        &Change::RequireExtras(extras),
    )
    .await
}

/// The wheel's name and whether its `.metadata` is asked for.
pub(crate) fn split_metadata(filename: &str) -> (&str, bool) {
    match filename.strip_suffix(".metadata") {
        Some(wheel) => (wheel, true),
        None => (filename, false),
    }
}

/// Refuses what is not a wheel of `project`.
pub(crate) fn check_wheel_of(wheel: &str, project: &str) -> Result<(), ApiError> {
    let is_wheel = matches!(
        wheel.parse::<DistFilename>(),
        Ok(parsed @ DistFilename::Wheel(_)) if normalize_name(parsed.name()) == project
    );
    if is_wheel {
        Ok(())
    } else {
        Err(ApiError::NotFound(format!(
            "`{}` is not a wheel of `{}`",
            wheel.escape_default(),
            project.escape_default()
        )))
    }
}

/// The `.metadata` (`metadata`) or the wheel of `upstream` (the wheel `wheel`) with `change`:
/// derived, or the upstream's own where the change changes nothing.
pub(crate) async fn derived_response(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    (upstream, wheel, metadata): (&wheelgate_files::cache::FileSpec, &str, bool),
    change: &Change,
) -> Result<Response, FilesError> {
    let derivation = state
        .derivations
        .get((&state.client, &state.files), upstream, wheel, change)
        .await
        .map_err(|err| {
            tracing::warn!(file = wheel, error = %wheelgate_index::error_chain::source_chain(&err), "cannot derive a wheel");
            ApiError::NotFound(format!(
                "`{wheel}` cannot be served with its metadata changed: {err}"
            ))
        })?;
    if metadata {
        return Ok(metadata_response(method, headers, &derivation.metadata));
    }
    respond(state, &derivation.spec, method, headers)
        .await
        .map_err(|source| FilesError::Cache {
            filename: wheel.to_string(),
            source,
        })
}

async fn get_bound(
    State(state): State<AppState>,
    Path(segments): Path<Segments>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::GET, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn head_bound(
    State(state): State<AppState>,
    Path(segments): Path<Segments>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::HEAD, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn serve(
    state: &AppState,
    method: &Method,
    (source, torch, backend, pin, project, filename): Segments,
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let request = BoundRequest::parse(state, &source, &torch, &backend, &pin)
        .map_err(ApiError::BadRequest)?;
    let (wheel, metadata) = split_metadata(&filename);
    check_wheel_of(wheel, &project)?;
    if !state
        .sources
        .per_build_owners(&project)
        .contains(&request.source)
    {
        return Err(ApiError::NotFound(format!(
            "`{}` is not served from the source `{source}`, so no page links it there",
            project.escape_default()
        ))
        .into());
    }
    check_linked(state, &request).await?;
    let cached = state
        .index
        .get_with(
            &state.client,
            &request.page_url,
            wheelgate_index::cache::index::Revalidation::Background,
            false,
        )
        .await
        .map_err(ApiError::Upstream)?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "`{source}` has no page for torch {} {}",
                request.release, request.backend
            ))
        })?;
    let file = cached.find(wheel).ok_or_else(|| {
        ApiError::NotFound(format!(
            "`{source}`'s page for torch {} {} has no file `{wheel}`",
            request.release, request.backend
        ))
    })?;
    let upstream = upstream_spec(&cached, file);
    let change = Change::AddRequirements(vec![requirement(&request.pin)]);
    derived_response(
        state,
        method,
        headers,
        (&upstream, wheel, metadata),
        &change,
    )
    .await
}

/// Refuses a `/bound/` request for a template page no served page links, before anything is
/// fetched (issue 41 item 7: any release and backend a client wrote made the proxy fetch and
/// store that page). Linked are the template pages the proxy read for a page it served (so
/// held by its index cache), and on a replica that has not served it yet, the pages of a torch
/// release and build torch's pages list (`torch-2.10.0+cu128-...`), the only ones a page can
/// link.
async fn check_linked(state: &AppState, request: &BoundRequest) -> Result<(), ApiError> {
    if state.index.peek(&request.page_url).await.is_some() {
        return Ok(());
    }
    let wanted = format!("{}+{}", request.release, request.backend);
    let torch = super::torch_pages(state, &wheelgate_resolver::Policy::default())
        .await
        .map_err(ApiError::Owners)?;
    let listed = torch.iter().flat_map(|pages| &pages.parts).any(|part| {
        part.cached.page.files.iter().any(|file| {
            matches!(
                file.filename.parse::<DistFilename>(),
                Ok(parsed) if normalize_name(parsed.name()) == "torch"
                    && parsed.version().to_string() == wanted
            )
        })
    });
    if listed {
        Ok(())
    } else {
        Err(ApiError::NotFound(format!(
            "no page served here links torch {} {} of `{}`: torch's pages list no such build",
            request.release,
            request.backend,
            state.sources.get(request.source).name
        )))
    }
}

/// A `.metadata` file the proxy made (planned with a derived wheel, or read from a verified
/// one: `server/derived_metadata.rs`), from memory: a few kilobytes, its sha256 a strong `ETag`.
pub(crate) fn metadata_response(
    method: &Method,
    headers: &HeaderMap,
    bytes: &bytes::Bytes,
) -> Response {
    let etag = format!("\"{}\"", hex::encode(Sha256::digest(bytes)));
    let held = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|value| value.split(',').any(|tag| tag.trim() == etag));
    let builder = Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CACHE_CONTROL, CACHE_CONTROL)
        .header(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex in quotes"),
        );
    if held {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .expect("valid response");
    }
    let builder = builder
        .status(StatusCode::OK)
        .header(header::CONTENT_LENGTH, bytes.len());
    let body = if *method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes.clone())
    };
    builder.body(body).expect("valid response")
}
