//! The pass-through index for variant-aware installers (the WheelNext uv build):
//! `/variants/simple/<project>/`, `/m/<token>/variants/simple/<project>/` and
//! `/b/<backend>/variants/simple/<project>/` serve the upstream page unrewritten except for its
//! links, variant wheels and `*-variants.json` files included, so such an installer makes its own
//! choice and still goes through the caches. The page is the same for every machine; the token
//! form exists so one client configuration serves both kinds of installer.
//!
//! Variants files are linked as `/files/<project>/variants-json/<name>`: they are not
//! distribution names, so the ordinary file route would refuse them.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::index::{ProjectPage, render_project_html, render_project_json};
use wheelgate_resolver::variants::choose::VARIANTS_JSON_SUFFIX;

use super::super::error::ApiError;
use super::super::lookup::{no_page, project_page};
use super::super::negotiate::{Format, negotiate};
use super::super::rewrite::file_link;
use super::super::route::{check_project_name, parse_backend, parse_token};
use super::super::state::AppState;

/// Pages are revalidated by installers after this long, as on `/simple/`.
const CACHE_CONTROL: &str = "max-age=600, public";

/// The pass-through page routes and the variants-file route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/variants/simple/{project}/", get(page_default))
        .route("/b/{backend}/variants/simple/{project}/", get(page_pinned))
        .route("/m/{token}/variants/simple/{project}/", get(page_token))
        .route(
            "/files/{project}/variants-json/{filename}",
            get(get_variants_json).head(head_variants_json),
        )
}

#[derive(Deserialize, Default)]
pub struct FormatQuery {
    format: Option<String>,
}

async fn page_default(
    State(state): State<AppState>,
    Path(project): Path<String>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    page(&state, None, "/variants/simple", &project, &headers, &query).await
}

async fn page_pinned(
    State(state): State<AppState>,
    Path((backend, project)): Path<(String, String)>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    let pinned = parse_backend(&backend)?;
    let prefix = format!("/b/{backend}/variants/simple");
    page(&state, Some(pinned), &prefix, &project, &headers, &query).await
}

async fn page_token(
    State(state): State<AppState>,
    Path((token, project)): Path<(String, String)>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    parse_token(&token)?;
    let prefix = format!("/m/{token}/variants/simple");
    page(&state, None, &prefix, &project, &headers, &query).await
}

async fn page(
    state: &AppState,
    pinned: Option<wheelgate_resolver::Backend>,
    prefix: &str,
    raw: &str,
    headers: &HeaderMap,
    query: &FormatQuery,
) -> Result<Response, ApiError> {
    let project = normalize_name(raw);
    // Checked before any redirect: a name with a CR/LF must never reach a `Location` header.
    check_project_name(&project, raw)?;
    if project != raw {
        return Ok(Redirect::permanent(&format!("{prefix}/{project}/")).into_response());
    }
    if !state.sources.selects(&project) {
        return Err(ApiError::NotFound(format!(
            "`{project}` is not a project of the PyTorch index; the variant index serves only those"
        )));
    }
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = negotiate(accept, query.format.as_deref()).ok_or(ApiError::NotAcceptable)?;
    let pages = project_page(state, &project, pinned.as_ref())
        .await?
        .ok_or_else(|| no_page(state, &project))?;
    let page = relinked(&project, &pages.merged().page());
    let body = match format {
        Format::Json => render_project_json(&page),
        Format::Html | Format::LegacyHtml => render_project_html(&page),
    };
    let mut response = ([(header::CONTENT_TYPE, format.content_type())], body).into_response();
    let out = response.headers_mut();
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    out.insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(response)
}

/// `upstream` with every link pointing at the proxy, nothing else changed.
fn relinked(project: &str, upstream: &ProjectPage) -> ProjectPage {
    let mut page = upstream.clone();
    page.name = project.to_string();
    page.base = None;
    for file in &mut page.files {
        file.url = if file.filename.ends_with(VARIANTS_JSON_SUFFIX) {
            // Project names hold only `[a-z0-9-]`: nothing to encode in the prefix.
            file_link(&format!("{project}/variants-json"), &file.filename)
        } else {
            file_link(project, &file.filename)
        };
    }
    page
}

async fn get_variants_json(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    variants_json(&state, &Method::GET, &project, &filename, &headers).await
}

async fn head_variants_json(
    State(state): State<AppState>,
    Path((project, filename)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    variants_json(&state, &Method::HEAD, &project, &filename, &headers).await
}

/// Serves a `{name}-{version}-variants.json` of `project` as its page lists it.
async fn variants_json(
    state: &AppState,
    method: &Method,
    project: &str,
    filename: &str,
    headers: &HeaderMap,
) -> Response {
    let named_here = filename
        .strip_suffix(VARIANTS_JSON_SUFFIX)
        .and_then(|stem| stem.rsplit_once('-'))
        .is_some_and(|(name, _)| normalize_name(name) == project);
    if !named_here || normalize_name(project) != project || filename.contains(['/', '\\']) {
        let printable: String = filename.chars().flat_map(char::escape_default).collect();
        return ApiError::NotFound(format!(
            "`{printable}` is not a variants file of `{}`",
            project.escape_default()
        ))
        .into_response();
    }
    super::super::files::serve_listed(state, method, project, filename, false, headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}
