//! The simple-index routes: `/simple/...` for the server's machine, `/b/<backend>/simple/...`
//! with a backend pinned, `/m/<token>/simple/...` for the client's machine.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use wheelgate_resolver::filename::{normalize_name, normalized_name};
use wheelgate_resolver::index::{
    ProjectLink, ProjectList, render_project_html, render_project_json, render_project_list_html,
    render_project_list_json,
};
use wheelgate_resolver::select::{select_grouped_kept, select_page};
use wheelgate_resolver::variants::lists_variants;
use wheelgate_resolver::{Machine, Policy};

use super::binding;
use super::client_addr::Client;
use super::error::ApiError;
use super::explain::{explain_url, page_comment, with_leading_comment};
use super::lookup::{no_page, project_page};
use super::negotiate::{Format, negotiate};
use super::precompressed::accepts_gzip;
use super::rendered::{RenderKey, Rendered};
use super::rewrite::{
    Rewritten, link_selected_files, rewrite_page, rewrite_selected, select_files,
};
use super::route::{Target, check_project_name, machine_and_policy, parse_backend, parse_token};
use super::state::AppState;
use super::targets::TargetKey;
use wheelgate_index::sources::ProjectPages;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/simple/", get(root_default))
        .route("/simple/{project}/", get(project_default))
        .route("/simple/{project}", get(add_slash_default))
        .route("/b/{backend}/simple/", get(root_pinned))
        .route("/b/{backend}/simple/{project}/", get(project_pinned))
        .route("/b/{backend}/simple/{project}", get(add_slash_pinned))
        .route("/m/{token}/simple/", get(root_token))
        .route("/m/{token}/simple/{project}/", get(project_token))
        .route("/m/{token}/simple/{project}", get(add_slash_token))
}

#[derive(Deserialize, Default)]
pub struct FormatQuery {
    format: Option<String>,
}

async fn root_default(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    root(&state, &headers, &query)
}

async fn root_pinned(
    State(state): State<AppState>,
    Path(backend): Path<String>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    parse_backend(&backend)?;
    root(&state, &headers, &query)
}

async fn root_token(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    Query(query): Query<FormatQuery>,
) -> Result<Response, ApiError> {
    parse_token(&token)?;
    root(&state, &headers, &query)
}

async fn project_default(
    State(state): State<AppState>,
    client: Client,
    Path(project): Path<String>,
    Query(query): Query<FormatQuery>,
    // The whole request last rather than a `HeaderMap`, which axum would copy.
    request: Request,
) -> Result<Response, ApiError> {
    project_response(
        &state,
        Target::Default(client.rule),
        "/simple",
        &project,
        request.headers(),
        &query,
    )
    .await
}

async fn project_pinned(
    State(state): State<AppState>,
    Path((backend, project)): Path<(String, String)>,
    Query(query): Query<FormatQuery>,
    // The whole request last rather than a `HeaderMap`, which axum would copy.
    request: Request,
) -> Result<Response, ApiError> {
    let pinned = parse_backend(&backend)?;
    let prefix = format!("/b/{backend}/simple");
    project_response(
        &state,
        Target::Pinned(pinned),
        &prefix,
        &project,
        request.headers(),
        &query,
    )
    .await
}

async fn project_token(
    State(state): State<AppState>,
    Path((token, project)): Path<(String, String)>,
    Query(query): Query<FormatQuery>,
    // The whole request last rather than a `HeaderMap`, which axum would copy.
    request: Request,
) -> Result<Response, ApiError> {
    let machine = parse_token(&token)?;
    let prefix = format!("/m/{token}/simple");
    project_response(
        &state,
        Target::Token(Box::new(machine)),
        &prefix,
        &project,
        request.headers(),
        &query,
    )
    .await
}

async fn add_slash_default(Path(project): Path<String>) -> Result<Redirect, ApiError> {
    Ok(Redirect::permanent(&format!(
        "/simple/{}/",
        redirect_segment(&project, true)?
    )))
}

async fn add_slash_pinned(
    Path((backend, project)): Path<(String, String)>,
) -> Result<Redirect, ApiError> {
    Ok(Redirect::permanent(&format!(
        "/b/{}/simple/{}/",
        redirect_segment(&backend, false)?,
        redirect_segment(&project, true)?
    )))
}

async fn add_slash_token(
    Path((token, project)): Path<(String, String)>,
) -> Result<Redirect, ApiError> {
    Ok(Redirect::permanent(&format!(
        "/m/{}/simple/{}/",
        redirect_segment(&token, false)?,
        redirect_segment(&project, true)?
    )))
}

/// A path segment echoed into a `Location` header: only the characters of project names,
/// backends and tokens (`[A-Za-z0-9._~-]`, RFC 3986 unreserved), so a `%0D%0A` in the request can never become a
/// header (and is a 400, not a 500). A project name is normalized (PEP 503).
fn redirect_segment(segment: &str, project: bool) -> Result<String, ApiError> {
    let valid = !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~'));
    if !valid {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a project name, backend or token",
            segment.escape_default()
        )));
    }
    Ok(if project {
        normalize_name(segment)
    } else {
        segment.to_string()
    })
}

fn format_of(headers: &HeaderMap, query: &FormatQuery) -> Result<Format, ApiError> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    negotiate(accept, query.format.as_deref()).ok_or(ApiError::NotAcceptable)
}

/// The root lists the projects this server resolves builds for; every other name is served on
/// request from the sources that own it (`wheelgate_index::sources`).
fn root(state: &AppState, headers: &HeaderMap, query: &FormatQuery) -> Result<Response, ApiError> {
    let format = format_of(headers, query)?;
    let mut names: Vec<&String> = state.catalog().pytorch_projects().collect();
    names.sort();
    let list = ProjectList {
        projects: names
            .into_iter()
            .map(|name| ProjectLink {
                name: name.clone(),
                href: format!("{name}/"),
            })
            .collect(),
        meta: wheelgate_resolver::index::Meta::default(),
    };
    let body = match format {
        Format::Json => render_project_list_json(&list),
        Format::Html | Format::LegacyHtml => render_project_list_html(&list),
    };
    let etag = etag_of(body.as_bytes());
    let mut response = page_response(headers, format, Bytes::from(body), &etag);
    vary_without_agent(&mut response);
    cache_control(&mut response, state, false);
    Ok(response)
}

async fn project_response(
    state: &AppState,
    target: Target,
    prefix: &str,
    raw: &str,
    headers: &HeaderMap,
    query: &FormatQuery,
) -> Result<Response, ApiError> {
    let project = normalized_name(raw);
    // Checked before any redirect: a name with a CR/LF must never reach a `Location` header.
    check_project_name(&project, raw)?;
    if project != raw {
        return Ok(Redirect::permanent(&format!("{prefix}/{project}/")).into_response());
    }
    let format = format_of(headers, query)?;
    let rule = match &target {
        Target::Default(Some(rule)) => rule.label.as_str(),
        _ => "",
    };
    // A target the User-Agent does not refine is resolved once for every client, and its page
    // says so in `Vary`.
    let by_agent = target.refined_by_user_agent();
    let user_agent = headers
        .get(header::USER_AGENT)
        .filter(|_| by_agent)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let resolved = state.targets.resolve(prefix, rule, user_agent, || {
        let (machine, policy) = machine_and_policy(state, &target, headers);
        (machine.into_owned(), policy)
    });
    let (machine, policy) = (&resolved.machine, &resolved.policy);
    let per_network = matches!(target, Target::Default(_)) && !state.networks.rules.is_empty();
    let owners = state.sources.per_build_owners(&project);
    if !owners.is_empty() {
        let bound = (&project[..], &owners[..]);
        // Boxed, as the page's making below: what most requests never run, kept out of the
        // future every request makes and moves.
        return Box::pin(per_build_response(
            state,
            &resolved,
            bound,
            (format, headers),
            (per_network, by_agent),
        ))
        .await;
    }
    let pinned = policy.pinned.clone();
    let pages = project_page(state, &project, pinned.as_ref())
        .await?
        .ok_or_else(|| no_page(state, &project))?;
    let select = state.sources.selects(&project);
    let (mut pages_key, mut generation) = pages.key();
    let torch = bound_to_torch(state, &project, policy, &mut pages_key, &mut generation).await?;
    let key = RenderKey {
        url: pages_key,
        json: format == Format::Json,
        // The HTML page names its explain URL, which differs per route prefix.
        prefix: if select && format != Format::Json {
            prefix.to_string()
        } else {
            String::new()
        },
        target: if select {
            TargetKey::of(&resolved)
        } else {
            TargetKey::any_machine()
        },
    };
    let rendered = if let Some(hit) = state.rendered.get(&key, generation) {
        hit
    } else {
        let torch =
            torch.map(|pages| binding::torch_choices(state, machine, policy, pages.as_ref()));
        let Some((page, complete, inferred)) = Box::pin(rewritten(
            state,
            machine,
            policy,
            &project,
            &pages,
            select,
            torch.as_ref(),
        ))
        .await
        else {
            return Err(pages
                .into_failure(&state.sources, &project)
                .expect("a source failed")
                .into());
        };
        let explain = explain_url(prefix, &project);
        let body = page_body(&page, format, select.then_some((machine, policy, &explain)));
        let rendered = Rendered {
            generation,
            etag: etag_of(body.as_bytes()),
            body: exact_bytes(body),
            compressed: Arc::default(),
            inferred,
        };
        // A page made without some of its metadata is not kept: the next request reads again.
        if complete {
            state.rendered.put(key, rendered.clone());
        }
        rendered
    };
    let mut response = counted_response(state, headers, format, rendered);
    if !select || !by_agent {
        vary_without_agent(&mut response);
    }
    cache_control(&mut response, state, per_network);
    Ok(response)
}

/// A rewritten page's body in `format`. A page selected for a machine (`selected_for`: the
/// machine, its policy and the page's explain URL) opens its HTML with a comment saying what it
/// was selected for and where to ask why.
fn page_body(
    page: &Rewritten<'_>,
    format: Format,
    selected_for: Option<(&Machine, &Policy, &String)>,
) -> String {
    match (format, selected_for) {
        (Format::Json, _) => page.render_json(),
        (Format::Html | Format::LegacyHtml, Some((machine, policy, explain))) => {
            with_leading_comment(&page.render_html(), &page_comment(machine, policy, explain))
        }
        (Format::Html | Format::LegacyHtml, None) => page.render_html(),
    }
}

/// `body` as `Bytes` holding no more memory than its length: a rendering grows its buffer by
/// doubling, and `Bytes` keeps the whole buffer for as long as the page is held, up to twice
/// the budget [`RenderedPages`] counts.
fn exact_bytes(mut body: String) -> Bytes {
    body.shrink_to_fit();
    Bytes::from(body)
}

/// How long installers may keep a page before they ask again: the proxy's own freshness window
/// (`index_ttl_secs`), so a release published upstream reaches a client's HTTP cache (uv keeps
/// pages by `max-age` and sends no `Cache-Control` of its own) as soon as it reaches the proxy;
/// asking again costs a 304. Which machine a `/simple/` page is rewritten for depends on the
/// client's network once rules exist (`per_network`): a shared cache between clients and this
/// server must not hand one network's page to another.
fn cache_control(response: &mut Response, state: &AppState, per_network: bool) {
    let value = cache_control_value(state.config.index_ttl_secs, per_network);
    response.headers_mut().insert(header::CACHE_CONTROL, value);
}

/// `max-age=<ttl>, public` or `, private`, made once per thread and freshness window rather
/// than formatted for every page answered.
fn cache_control_value(ttl_secs: u64, private: bool) -> HeaderValue {
    thread_local! {
        static MADE: std::cell::RefCell<Option<(u64, [HeaderValue; 2])>> =
            const { std::cell::RefCell::new(None) };
    }
    MADE.with_borrow_mut(|made| {
        let values = match made {
            Some((ttl, values)) if *ttl == ttl_secs => values,
            _ => {
                let value = |scope: &str| {
                    HeaderValue::from_str(&format!("max-age={ttl_secs}, {scope}"))
                        .expect("digits and letters")
                };
                &mut made
                    .insert((ttl_secs, [value("public"), value("private")]))
                    .1
            }
        };
        values[usize::from(private)].clone()
    })
}

/// The page of a project owned by per-build sources (`binding/by_page.rs`): made from the pages
/// of the builds torch gets on this machine, each file pinned to its torch. `per_network`: the
/// machine depends on the client's network; `by_agent`: on its User-Agent.
async fn per_build_response(
    state: &AppState,
    resolved: &super::targets::ResolvedTarget,
    (project, owners): (&str, &[wheelgate_index::sources::SourceId]),
    (format, headers): (Format, &HeaderMap),
    (per_network, by_agent): (bool, bool),
) -> Result<Response, ApiError> {
    let (machine, policy) = (&resolved.machine, &resolved.policy);
    let bound = binding::by_page::page(state, machine, policy, project, owners)
        .await?
        .ok_or_else(|| ApiError::no_such_project(state.config.offline, project))?;
    tracing::debug!(
        project,
        pages = bound.pages_asked,
        files = bound.page.files.len(),
        "per-build page"
    );
    let key = RenderKey {
        url: bound.key,
        json: format == Format::Json,
        prefix: String::new(),
        target: TargetKey::of(resolved),
    };
    let rendered = if let Some(hit) = state.rendered.get(&key, bound.generation) {
        hit
    } else {
        let body = match format {
            Format::Json => render_project_json(&bound.page),
            Format::Html | Format::LegacyHtml => render_project_html(&bound.page),
        };
        let rendered = Rendered {
            generation: bound.generation,
            etag: etag_of(body.as_bytes()),
            body: exact_bytes(body),
            compressed: Arc::default(),
            // Bound to torch's builds, not judged against the catalog here.
            inferred: false,
        };
        // Rendered again while a page failed or a derived wheel's hash is still unknown.
        if bound.complete {
            state.rendered.put(key, rendered.clone());
        }
        rendered
    };
    let mut response = rendered_response(headers, format, rendered);
    if !by_agent {
        vary_without_agent(&mut response);
    }
    cache_control(&mut response, state, per_network);
    Ok(response)
}

/// torch's pages when `project` is bound to torch's builds (`binding/`), its rendering then
/// keyed by them too: it changes when torch's page does. torch's sources all failing fails the
/// request (bound builds cannot be judged without it).
async fn bound_to_torch(
    state: &AppState,
    project: &str,
    policy: &Policy,
    pages_key: &mut String,
    generation: &mut u64,
) -> Result<Option<Option<ProjectPages>>, ApiError> {
    if !binding::applies(state, project) {
        return Ok(None);
    }
    // Boxed: only bound projects fetch torch's pages; every other request's future would
    // hold this one's kilobytes.
    let torch = Box::pin(binding::torch_pages(state, policy)).await?;
    if let Some(torch) = &torch {
        let (url, torch_generation) = torch.key();
        *pages_key = format!("{pages_key} bound to {url}");
        *generation = wheelgate_index::sources::pages::combine([*generation, torch_generation]);
    }
    Ok(Some(torch))
}

/// The page a client gets from `pages`: reduced offline to the stored files, rewritten for the
/// machine, with the chosen variants, and whether everything it depends on was read (every
/// bound file's metadata). `None` when it would be empty because a source failed: the
/// installer is then told so, rather than "no versions".
async fn rewritten<'p>(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    pages: &'p ProjectPages,
    select: bool,
    torch: Option<&binding::TorchChoices>,
) -> Option<(Rewritten<'p>, bool, bool)> {
    let merged = pages.merged();
    let refs = merged.refs();
    let plain = select && torch.is_none() && !state.config.offline;
    let groups = plain.then(|| merged.groups()).flatten();
    let variants = match &groups {
        Some(groups) => groups.lists_variants(),
        None => lists_variants(&refs),
    };
    // The common case, selected from the pages where they lie: no copy of a merged page.
    if plain && !variants {
        let (page, inferred) =
            selected_in_place(state, (machine, policy), project, &merged, &refs, groups).await;
        return (!page.is_empty() || pages.failed.is_empty()).then_some((page, true, inferred));
    }
    drop(refs);
    let whole = merged.page();
    let offered = super::offline::offered(
        &whole,
        merged.base_url(),
        &state.files,
        state.config.offline,
    );
    // Offline the page is reduced to the stored files: each file's source follows it.
    let origins = merged.origins.reindexed(&whole, &offered);
    let mut complete = true;
    let mut inferred = false;
    let mut aliases = Vec::new();
    let mut page = if select {
        let mut selection = select_files(state.catalog(), machine, policy, project, &offered);
        inferred = rests_on_inference(&selection);
        if let Some(torch) = torch {
            let bound = binding::Bindable {
                project,
                page: &offered,
                listing: super::listing::Listing::of(&merged),
            };
            complete = binding::bind(state, machine, policy, bound, torch, &mut selection).await;
        }
        let files: Vec<&wheelgate_resolver::index::IndexFile> = offered.files.iter().collect();
        aliases = super::plain_version::needed(&selection, &files);
        rewrite_selected(project, &offered, &origins, &selection)
    } else {
        rewrite_page(
            state.catalog(),
            machine,
            policy,
            project,
            &offered,
            &origins,
            false,
        )
    };
    if select {
        let (with_variants, settled) = super::variants::with_variants(
            state,
            machine,
            policy,
            project,
            &offered,
            super::listing::Listing::of(&merged),
            page,
        )
        .await;
        page = with_variants;
        // A page made while a variants file was still downloading is not kept.
        complete &= settled;
        binding::extras::apply(
            state,
            machine,
            project,
            &offered,
            super::listing::Listing::of(&merged),
            &mut page,
        )
        .await;
        let files: Vec<&wheelgate_resolver::index::IndexFile> = offered.files.iter().collect();
        super::plain_version::apply(
            state,
            project,
            (&files, &offered, super::listing::Listing::of(&merged)),
            aliases,
            &mut page,
        );
    }
    (!page.files.is_empty() || pages.failed.is_empty()).then_some((
        Rewritten::Copied(page),
        complete,
        inferred,
    ))
}

/// The selection of `merged` for the machine (without the reasons files are dropped for, which
/// the page does not show), its kept files linked where they lie (copied only
/// for the machine's extras to be added), and whether its answer rests on inference.
async fn selected_in_place<'p>(
    state: &AppState,
    (machine, policy): (&Machine, &Policy),
    project: &str,
    merged: &wheelgate_index::sources::merge::MergedPage<'p>,
    refs: &[wheelgate_resolver::select::FileRef<'p>],
    groups: Option<Cow<'_, wheelgate_resolver::select::FileGroups>>,
) -> (Rewritten<'p>, bool) {
    let selection = match groups {
        Some(groups) => {
            select_grouped_kept(state.catalog(), machine, policy, project, refs, &groups)
        }
        None => select_page(state.catalog(), machine, policy, project, refs),
    };
    let inferred = rests_on_inference(&selection);
    let linked = link_selected_files(
        project,
        &merged.files,
        merged.first(),
        &merged.origins,
        &selection,
    );
    let aliases = super::plain_version::needed(&selection, &merged.files);
    let source = (
        &merged.files[..],
        merged.first(),
        super::listing::Listing::of(merged),
    );
    if binding::extras::machine_extras(machine).is_empty() {
        let mut linked = linked;
        super::plain_version::apply_linked(state, project, source, aliases, &mut linked);
        return (Rewritten::Linked(linked), inferred);
    }
    let mut page = linked.to_page();
    let whole = merged.page();
    binding::extras::apply(
        state,
        machine,
        project,
        &whole,
        super::listing::Listing::of(merged),
        &mut page,
    )
    .await;
    super::plain_version::apply(state, project, source, aliases, &mut page);
    (Rewritten::Copied(page), inferred)
}

/// The response of a rendering, counted on `/metrics` when its answer rests on inference.
fn counted_response(
    state: &AppState,
    headers: &HeaderMap,
    format: Format,
    rendered: Rendered,
) -> Response {
    if rendered.inferred {
        state.metrics.inferred_answer();
    }
    rendered_response(headers, format, rendered)
}

/// Whether a version's answer rests on an inferred fact of the catalog.
fn rests_on_inference(selection: &wheelgate_resolver::select::PageSelection) -> bool {
    selection
        .versions
        .iter()
        .any(|v| v.decision.as_ref().is_some_and(|d| d.rests_on_inference))
}

/// A rendering's strong entity tag: `XXH3-128` of its body. Made on the cold page's path:
/// `SHA-256`'s first half, as it was, took 0.15 to 0.2 ms of a cold merged torch page (152 KB);
/// this takes about a tenth of that. The tag only has to change when the body does; nothing is
/// verified by it (a file's tag, its `SHA-256`, is another matter: `cache/files.rs`).
fn etag_of(body: &[u8]) -> HeaderValue {
    let digest = xxhash_rust::xxh3::xxh3_128(body);
    HeaderValue::from_str(&format!("\"{digest:032x}\"")).expect("hex is a valid header value")
}

/// The rendering as the client asked for it: gzip-compressed when it accepts that and the
/// compressed form is ready, else as it is; 304 when it holds either form already.
fn rendered_response(headers: &HeaderMap, format: Format, rendered: Rendered) -> Response {
    let accept_encoding = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok());
    let gzip = accepts_gzip(accept_encoding)
        .then(|| {
            rendered
                .compressed
                .gzip_or_start(&rendered.body, &rendered.etag)
        })
        .flatten();
    // A client holding either form of this rendering holds the current page: a client that
    // accepts gzip may well have cached the plain form, sent before the gzip one was ready.
    let held = [Some(&rendered.etag), gzip.as_ref().map(|g| &g.etag)]
        .into_iter()
        .flatten()
        .find(|etag| if_none_match(headers, etag))
        .cloned();
    match (held, gzip) {
        (Some(etag), _) => not_modified(&etag),
        (None, Some(encoded)) => {
            let mut response = page_response(headers, format, encoded.body, &encoded.etag);
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            response
        }
        (None, None) => page_response(headers, format, rendered.body, &rendered.etag),
    }
}

/// Whether the request's `If-None-Match` names `etag` (or `*`).
fn if_none_match(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let etag = etag.to_str().unwrap_or_default();
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|value| {
            super::header_list::elements(value).any(|tag| tag.trim() == etag || tag.trim() == "*")
        })
}

/// `body` as a page, or 304 when the client holds it already.
fn page_response(headers: &HeaderMap, format: Format, body: Bytes, etag: &HeaderValue) -> Response {
    if if_none_match(headers, etag) {
        return not_modified(etag);
    }
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    with_page_headers(response, etag)
}

fn not_modified(etag: &HeaderValue) -> Response {
    with_page_headers(StatusCode::NOT_MODIFIED.into_response(), etag)
}

fn with_page_headers(mut response: Response, etag: &HeaderValue) -> Response {
    let out = response.headers_mut();
    out.insert(header::ETAG, etag.clone());
    out.insert(
        header::VARY,
        HeaderValue::from_static("Accept, User-Agent, Accept-Encoding"),
    );
    response
}

/// A page whose content does not depend on the client's User-Agent (one not selected per
/// machine, the root, one whose machine the User-Agent does not refine) says so: a shared HTTP
/// cache in front of the proxy then keeps one copy for every client, not one per pip version.
fn vary_without_agent(response: &mut Response) {
    response.headers_mut().insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
}
