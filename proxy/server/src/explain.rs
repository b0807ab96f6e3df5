//! `GET /explain/<project>/` under every route prefix (`/explain/torch/`,
//! `/b/cu128/explain/torch/`, `/m/<token>/explain/torch/`): for each version on the project's
//! page, the build the matching `/simple/` page keeps and the reason every other build was
//! dropped. HTML for people; JSON (`Accept: application/json` or `?format=json`) for tools.
//!
//! The explanation runs exactly the selection the rewritten page runs (same machine, policy,
//! User-Agent refinement where the route allows it, and cached upstream page), so it cannot
//! disagree with what pip got.
//! Also here: the one-line description of a machine, and the comment at the top of every
//! rewritten HTML page that names the machine and this URL.

use std::fmt::Write as _;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::select::{Dropped, FileRef, select_page};
use wheelgate_resolver::{Machine, Policy};

use super::client_addr::{Client, ClientReport};
use super::error::ApiError;
pub use super::explanation::{
    BuildVerdict, DroppedFile, Explanation, FileCounts, PlatformExplanation, SourceReport,
    VersionExplanation,
};
use super::html::escape;
use super::lookup::{no_page, project_page};
use super::route::{Target, check_project_name, machine_and_policy, parse_backend, parse_token};
use super::state::AppState;
use wheelgate_index::sources::merge::drop_same_builds;
use wheelgate_index::upstream::redact;

/// The explain routes, one per route prefix of the simple index.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/explain/{project}/", get(explain_default))
        .route("/b/{backend}/explain/{project}/", get(explain_pinned))
        .route("/m/{token}/explain/{project}/", get(explain_token))
}

#[derive(Deserialize, Default)]
pub struct ExplainQuery {
    format: Option<String>,
}

async fn explain_default(
    State(state): State<AppState>,
    client: Client,
    Path(project): Path<String>,
    headers: HeaderMap,
    Query(query): Query<ExplainQuery>,
) -> Result<Response, ApiError> {
    let report = (!state.networks.rules.is_empty()).then(|| client.report());
    explain_response(
        &state,
        &Target::Default(client.rule),
        "",
        &project,
        &headers,
        &query,
        report,
    )
    .await
}

async fn explain_pinned(
    State(state): State<AppState>,
    Path((backend, project)): Path<(String, String)>,
    headers: HeaderMap,
    Query(query): Query<ExplainQuery>,
) -> Result<Response, ApiError> {
    let pinned = parse_backend(&backend)?;
    let base = format!("/b/{backend}");
    explain_response(
        &state,
        &Target::Pinned(pinned),
        &base,
        &project,
        &headers,
        &query,
        None,
    )
    .await
}

async fn explain_token(
    State(state): State<AppState>,
    Path((token, project)): Path<(String, String)>,
    headers: HeaderMap,
    Query(query): Query<ExplainQuery>,
) -> Result<Response, ApiError> {
    let machine = parse_token(&token)?;
    let base = format!("/m/{token}");
    explain_response(
        &state,
        &Target::Token(Box::new(machine)),
        &base,
        &project,
        &headers,
        &query,
        None,
    )
    .await
}

/// JSON when the client asks for it (`Accept: application/json`, or `?format=json`), else HTML.
fn wants_json(headers: &HeaderMap, query: &ExplainQuery) -> Result<bool, ApiError> {
    if let Some(format) = query.format.as_deref() {
        return match format {
            "json" => Ok(true),
            "html" => Ok(false),
            other => Err(ApiError::BadRequest(format!(
                "unknown format `{other}`; use `json` or `html`"
            ))),
        };
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    Ok(accept.split(',').any(|part| {
        let media = part.split(';').next().unwrap_or_default().trim();
        media.eq_ignore_ascii_case("application/json") || media.ends_with("+json")
    }))
}

async fn explain_response(
    state: &AppState,
    target: &Target,
    base: &str,
    raw: &str,
    headers: &HeaderMap,
    query: &ExplainQuery,
    client: Option<ClientReport>,
) -> Result<Response, ApiError> {
    let project = normalize_name(raw);
    // Checked before any redirect: a name with a CR/LF must never reach a `Location` header.
    check_project_name(&project, raw)?;
    if project != raw {
        return Ok(Redirect::permanent(&format!("{base}/explain/{project}/")).into_response());
    }
    let json = wants_json(headers, query)?;
    let (machine, policy) = machine_and_policy(state, target, headers);
    let owners = state.sources.per_build_owners(&project);
    let explanation = if owners.is_empty() {
        explain_pages(state, (&machine, &policy), (base, &project), client).await?
    } else {
        let bound = super::binding::by_page::page(state, &machine, &policy, &project, &owners)
            .await?
            .ok_or_else(|| ApiError::no_such_project(state.config.offline, &project))?;
        bound_explanation(&machine, &policy, (base, &project), &bound, client)
    };
    let mut response = if json {
        let body = serde_json::to_string_pretty(&explanation)
            .map_err(|err| ApiError::BadRequest(format!("cannot encode the explanation: {err}")))?;
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            render_html(&explanation),
        )
            .into_response()
    };
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // As the page it explains: by the User-Agent only where it refines the machine.
    let vary = if target.refined_by_user_agent() {
        "Accept, User-Agent"
    } else {
        "Accept"
    };
    out.insert(header::VARY, HeaderValue::from_static(vary));
    Ok(response)
}

/// The explanation of a project served from its sources' project pages.
async fn explain_pages(
    state: &AppState,
    (machine, policy): (&Machine, &Policy),
    (base, project): (&str, &str),
    client: Option<ClientReport>,
) -> Result<Explanation, ApiError> {
    let project = project.to_string();
    let machine = std::borrow::Cow::Borrowed(machine);
    let pages = project_page(state, &project, policy.pinned.as_ref())
        .await?
        .ok_or_else(|| no_page(state, &project))?;
    let selected = state.sources.selects(&project);
    let merged = pages.merged();
    let source_name = |index: usize| state.sources.get(merged.origins.of(index)).name.clone();
    let mut explanation = Explanation {
        project: project.clone(),
        machine: describe_machine(&machine),
        machine_detail: machine.clone().into_owned(),
        policy: policy.clone(),
        simple_url: format!("{base}/simple/{project}/"),
        upstream_url: redact(&pages.first().cached.url),
        sources: source_reports(state, &project, policy.pinned.as_ref(), &pages),
        file_sources: merged
            .files
            .iter()
            .enumerate()
            .map(|(i, file)| (file.filename.clone(), source_name(i)))
            .collect(),
        selected,
        counts: None,
        versions: Vec::new(),
        dropped: Vec::new(),
        client,
    };
    // Offline, the page served is reduced to the stored files before selection: the
    // explanation selects over the same page and lists what was left out and why.
    let whole = merged.page();
    let (page, left_out) = if state.config.offline {
        let stored = super::offline::stored_only(&whole, merged.base_url(), &state.files);
        (std::borrow::Cow::Owned(stored.page), stored.left_out)
    } else {
        (std::borrow::Cow::Borrowed(&*whole), Vec::new())
    };
    if selected {
        let (versions, dropped, other_builds) = explain_selection(
            state,
            &machine,
            policy,
            &project,
            &page,
            super::listing::Listing::of(&merged),
            &merged.origins.reindexed(&whole, &page),
        )
        .await?;
        explanation.versions = versions;
        explanation.dropped = dropped;
        let listing = super::listing::Listing::of(&merged);
        explain_device_extras(state, &machine, &page, listing, &mut explanation).await;
        super::plain_version::explain(&mut explanation);
        super::variants::explain(state, &machine, policy, &page, listing, &mut explanation).await;
        explanation.counts = Some(FileCounts {
            listed: whole.files.len(),
            kept: explanation.versions.iter().map(|v| v.kept.len()).sum(),
            plain_aliases: explanation
                .versions
                .iter()
                .map(|v| v.plain_aliases.len())
                .sum(),
            other_builds,
            other_reasons: 0,
        });
    }
    explanation
        .dropped
        .extend(left_out.into_iter().map(|filename| DroppedFile {
            filename,
            reason: super::offline::NOT_MIRRORED.to_string(),
        }));
    // Entries an upstream page lists that could not be read as files: never served, and said
    // here, since a client sees only that they are missing.
    explanation
        .dropped
        .extend(whole.dropped.iter().map(|entry| DroppedFile {
            filename: entry.entry.clone(),
            reason: format!("the upstream page's entry cannot be read: {}", entry.reason),
        }));
    if let Some(counts) = &mut explanation.counts {
        counts.other_reasons = explanation.dropped.len();
    }
    Ok(explanation)
}

/// What device extras (`binding/extras.rs`) do to the kept builds on this machine: each version's
/// note, and a version left out loses its kept files.
async fn explain_device_extras(
    state: &AppState,
    machine: &Machine,
    upstream: &wheelgate_resolver::index::ProjectPage,
    listing: super::listing::Listing<'_>,
    explanation: &mut Explanation,
) {
    if super::binding::extras::machine_extras(machine).is_empty() {
        return;
    }
    let kept: std::collections::HashSet<&str> = explanation
        .versions
        .iter()
        .flat_map(|v| v.kept.iter().map(String::as_str))
        .collect();
    let mut served = upstream.clone();
    served.files.retain(|f| kept.contains(f.filename.as_str()));
    let notes = super::binding::extras::apply(
        state,
        machine,
        &explanation.project,
        upstream,
        listing,
        &mut served,
    )
    .await;
    for note in notes {
        if let Some(version) = explanation
            .versions
            .iter_mut()
            .find(|v| v.version == note.version)
        {
            if !note.kept {
                version.kept.clear();
            }
            version.notes.push(note.note);
        }
    }
}

/// The explanation of a project served from per-build pages (`binding/by_page.rs`): each page
/// asked for as a source, and per version its files with the torch build they are bound to.
fn bound_explanation(
    machine: &Machine,
    policy: &Policy,
    (base, project): (&str, &str),
    bound: &super::binding::by_page::BoundPage,
    client: Option<ClientReport>,
) -> Explanation {
    let mut versions: std::collections::BTreeMap<String, VersionExplanation> =
        std::collections::BTreeMap::new();
    for binding in &bound.bindings {
        let version = binding
            .filename
            .parse::<wheelgate_resolver::filename::DistFilename>()
            .map(|parsed| parsed.version().to_string())
            .unwrap_or_default();
        let entry = versions
            .entry(version.clone())
            .or_insert_with(|| VersionExplanation {
                version,
                chosen: Some(binding.backend.to_string()),
                ..VersionExplanation::default()
            });
        entry.kept.push(binding.filename.clone());
        let note = format!(
            "bound by page: listed for torch {} {}, which gets {} on this machine; served with `Requires-Dist: torch{}` added to its core metadata (its `.metadata` and a derived wheel)",
            binding.release, binding.backend, binding.backend, binding.pin
        );
        if !entry.notes.contains(&note) {
            entry.notes.push(note);
        }
    }
    let first_url = bound
        .reports
        .first()
        .map(|r| r.url.clone())
        .unwrap_or_default();
    Explanation {
        project: project.to_string(),
        machine: describe_machine(machine),
        machine_detail: machine.clone(),
        policy: policy.clone(),
        simple_url: format!("{base}/simple/{project}/"),
        upstream_url: first_url,
        sources: bound
            .reports
            .iter()
            .map(|report| SourceReport {
                name: report.source.clone(),
                url: report.url.clone(),
                files: report.files,
                error: report.error.clone(),
            })
            .collect(),
        file_sources: bound
            .bindings
            .iter()
            .map(|b| {
                (
                    b.filename.clone(),
                    bound
                        .reports
                        .first()
                        .map(|r| r.source.clone())
                        .unwrap_or_default(),
                )
            })
            .collect(),
        selected: true,
        counts: None,
        // Newest first, as for every project.
        versions: versions.into_values().rev().collect(),
        dropped: bound
            .left_off
            .iter()
            .map(|left| DroppedFile {
                filename: left.filename.clone(),
                reason: left.reason.clone(),
            })
            .collect(),
        client,
    }
}

/// Each version's verdicts, the files dropped for other reasons than their backend, and how many
/// files of other builds were left off per platform.
type ExplainedSelection = (
    Vec<VersionExplanation>,
    Vec<DroppedFile>,
    std::collections::BTreeMap<String, usize>,
);

/// Each version's verdicts and the files dropped for other reasons than their backend, as the
/// rewritten page selects (each build once when several sources offer it: `origins`, the
/// source of each file of `page`).
async fn explain_selection(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    page: &wheelgate_resolver::index::ProjectPage,
    listing: super::listing::Listing<'_>,
    origins: &wheelgate_index::sources::merge::Origins,
) -> Result<ExplainedSelection, ApiError> {
    let files = &page.files;
    let refs: Vec<FileRef<'_>> = files.iter().map(FileRef::from).collect();
    let mut selection = select_page(state.catalog(), machine, policy, project, &refs);
    // Bound to torch's builds by their metadata, as the page is (`binding/`).
    if super::binding::applies(state, project) {
        let torch_pages = super::binding::torch_pages(state, policy).await?;
        let torch = super::binding::torch_choices(state, machine, policy, torch_pages.as_ref());
        let bound = super::binding::Bindable {
            project,
            page,
            listing,
        };
        super::binding::bind(state, machine, policy, bound, &torch, &mut selection).await;
    }
    let mut kept: Vec<usize> = selection
        .versions
        .iter()
        .flat_map(|v| v.kept.iter().copied())
        .collect();
    let twice = drop_same_builds(|i| &files[i].filename, origins, &mut kept);
    for version in &mut selection.versions {
        version.kept.retain(|index| kept.contains(index));
    }
    let versions = selection
        .versions
        .iter()
        .map(|version| explain_version(version, files))
        .collect();
    let mut other_builds = std::collections::BTreeMap::new();
    for (_, dropped) in &selection.dropped {
        if let Dropped::NotChosen { platform, .. } = dropped {
            *other_builds.entry(platform.to_string()).or_insert(0) += 1;
        }
    }
    let mut dropped: Vec<DroppedFile> = twice
        .iter()
        .map(|&(index, winner)| DroppedFile {
            filename: files[index].filename.clone(),
            reason: format!(
                "the same build is served from the source `{}`, which comes first",
                state.sources.get(winner).name
            ),
        })
        .collect();
    dropped.extend(selection.dropped.iter().filter_map(|(index, dropped)| {
        let reason = match dropped {
            Dropped::NotChosen { .. } => return None,
            Dropped::Variant => {
                "a wheel-variant file (PEP 825): plain pip and uv cannot parse its name".to_string()
            }
            Dropped::Unparseable(err) => format!("not a valid wheel or sdist name: {err}"),
            // The resolver's own words (unknown builds, disagreeing signals).
            other => other.to_string(),
        };
        Some(DroppedFile {
            filename: files[*index].filename.clone(),
            reason,
        })
    }));
    Ok((versions, dropped, other_builds))
}

/// Each owner of `project`: its page URL, how many files it gave, or why it gave none.
fn source_reports(
    state: &AppState,
    project: &str,
    pinned: Option<&wheelgate_resolver::Backend>,
    pages: &wheelgate_index::sources::ProjectPages,
) -> Vec<SourceReport> {
    state
        .sources
        .owners(project)
        .into_iter()
        .map(|id| {
            let source = state.sources.get(id);
            let part = pages.parts.iter().find(|part| part.source == id);
            let failed = pages.failed.iter().find(|(failed, _)| *failed == id);
            SourceReport {
                name: source.name.clone(),
                url: redact(&part.map_or_else(
                    || source.page_url(project, pinned),
                    |part| part.cached.url.clone(),
                )),
                files: part.map_or(0, |part| part.cached.page.files.len()),
                error: failed.map(|(_, error)| {
                    format!(
                        "{}; its builds are missing from the page until it answers",
                        super::error::client_message(error.root())
                    )
                }),
            }
        })
        .collect()
}

fn explain_version(
    version: &wheelgate_resolver::select::VersionSelection,
    files: &[wheelgate_resolver::index::IndexFile],
) -> VersionExplanation {
    let kept = version
        .kept
        .iter()
        .map(|&i| files[i].filename.clone())
        .collect();
    let Some(decision) = &version.decision else {
        return VersionExplanation {
            version: version.version.to_string(),
            kept,
            notes: vec!["its files name no backend: every file is served".to_string()],
            ..VersionExplanation::default()
        };
    };
    VersionExplanation {
        version: version.version.to_string(),
        chosen: decision.chosen.as_ref().map(ToString::to_string),
        kept,
        builds: verdicts(decision),
        notes: decision.notes.clone(),
        platforms: version
            .platforms
            .iter()
            .map(|choice| PlatformExplanation {
                platform: choice.platform.to_string(),
                chosen: choice.decision.chosen.as_ref().map(ToString::to_string),
                builds: verdicts(&choice.decision),
                notes: choice.decision.notes.clone(),
            })
            .collect(),
        plain_aliases: Vec::new(),
    }
}

/// Every backend a decision considered, with its verdict.
fn verdicts(decision: &wheelgate_resolver::select::Decision) -> Vec<BuildVerdict> {
    decision
        .considered
        .iter()
        .map(|considered| BuildVerdict {
            backend: considered.backend.to_string(),
            verdict: considered.verdict(),
            reason: considered.rejection.as_ref().map(ToString::to_string),
        })
        .collect()
}

const STYLE: &str = "
body{font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1100px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:24px;margin:0 0 6px}h2{font-size:17px;margin:22px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e8}
th,td{text-align:left;padding:4px 10px;border-bottom:1px solid #eef0f4;vertical-align:top}
th{width:130px;color:#4a5263;font-weight:600}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace}
.chosen{color:#17803d;font-weight:700}.usable{color:#4a5263}.rejected{color:#b42318}
.muted{color:#6b7385}ul{margin:4px 0;padding-left:20px}
";

/// The explanation as one self-contained HTML document; every value escaped.
pub fn render_html(explanation: &Explanation) -> String {
    let mut out = String::with_capacity(16 * 1024 + explanation.versions.len() * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Why these builds of {project}</title><style>{STYLE}</style></head><body><main>\n\
         <h1>Why these builds of <code>{project}</code></h1>\n\
         <p>The page <a href=\"{simple}\"><code>{simple}</code></a> is rewritten for \
         <strong>{machine}</strong>{pinned}, from <code>{upstream}</code>.</p>\n",
        project = escape(&explanation.project),
        simple = escape(&explanation.simple_url),
        machine = escape(&explanation.machine),
        pinned = explanation
            .policy
            .pinned
            .as_ref()
            .map(|b| format!(
                ", backend pinned to <code>{}</code>",
                escape(&b.to_string())
            ))
            .unwrap_or_default(),
        upstream = escape(&explanation.upstream_url),
    );
    if let Some(client) = &explanation.client {
        let _ = writeln!(out, "<p>{}</p>", inline_code(&client.summary));
        if let Some(refused) = &client.refused {
            let _ = writeln!(out, "<p class=\"muted\">{}</p>", inline_code(refused));
        }
    }
    render_sources(&mut out, explanation);
    render_counts(&mut out, explanation);
    if !explanation.selected {
        out.push_str(
            "<p>This project is not a PyTorch project: its page is passed through whole, \
             with links pointing at this server. No build is selected.</p>\n",
        );
    }
    for version in &explanation.versions {
        let chosen = match (&version.chosen, version.builds.is_empty()) {
            (Some(backend), _) => format!("<span class=\"chosen\">{}</span>", escape(backend)),
            (None, true) => "every file".to_string(),
            (None, false) => "<span class=\"rejected\">no usable build</span>".to_string(),
        };
        // With other platforms listed below, the heading's choice is the machine's own one's.
        let own = if version.platforms.is_empty() {
            String::new()
        } else {
            format!(" on {}", explanation.machine_detail.platform)
        };
        let _ = writeln!(
            out,
            "<h2 id=\"v{id}\">{project} {version}: {chosen}{own} <span class=\"muted\">({files} files kept)</span></h2>",
            id = escape(&version.version),
            project = escape(&explanation.project),
            version = escape(&version.version),
            files = version.kept.len(),
        );
        if !version.notes.is_empty() {
            out.push_str("<ul>");
            for note in &version.notes {
                let _ = write!(out, "<li>{}</li>", escape(note));
            }
            out.push_str("</ul>\n");
        }
        if !version.builds.is_empty() {
            out.push_str("<table>");
            for build in &version.builds {
                let _ = write!(
                    out,
                    "<tr><th><code>{}</code></th><td class=\"{}\">{}</td></tr>",
                    escape(&build.backend),
                    build.verdict,
                    escape(build.reason.as_deref().unwrap_or("chosen")),
                );
            }
            out.push_str("</table>\n");
        }
        render_platforms(&mut out, version);
    }
    if !explanation.dropped.is_empty() {
        out.push_str("<h2>Other files left off</h2><table>");
        for file in &explanation.dropped {
            let source = explanation
                .file_sources
                .get(&file.filename)
                .map_or(String::new(), |name| {
                    format!(" <span class=\"muted\">from {}</span>", escape(name))
                });
            let _ = write!(
                out,
                "<tr><td><code>{}</code>{source}</td><td>{}</td></tr>",
                escape(&file.filename),
                escape(&file.reason)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</main></body></html>\n");
    out
}

/// How many files the page lists, serves and leaves off.
fn render_counts(out: &mut String, explanation: &Explanation) {
    let Some(counts) = &explanation.counts else {
        return;
    };
    let other_builds: usize = counts.other_builds.values().sum();
    let per_platform: Vec<String> = counts
        .other_builds
        .iter()
        .map(|(platform, n)| format!("{n} for {platform}"))
        .collect();
    let _ = writeln!(
        out,
        "<p>The upstream page lists {listed} files: {kept} are served (on each platform, one build          per version), {other_builds} are other builds of their version and platform{breakdown},          and {others} are left off for another reason{below}.</p>",
        listed = counts.listed,
        kept = counts.kept,
        breakdown = if per_platform.is_empty() {
            String::new()
        } else {
            format!(" ({})", escape(&per_platform.join(", ")))
        },
        others = counts.other_reasons,
        below = if counts.other_reasons > 0 {
            " (listed below)"
        } else {
            ""
        },
    );
}

/// A version's choice on each other platform: one row each, the chosen build and why each other
/// was not.
fn render_platforms(out: &mut String, version: &VersionExplanation) {
    if version.platforms.is_empty() {
        return;
    }
    out.push_str("<table class=\"platforms\">");
    for platform in &version.platforms {
        let chosen = platform.chosen.as_ref().map_or_else(
            || "<span class=\"rejected\">no usable build</span>".to_string(),
            |backend| format!("<span class=\"chosen\">{}</span>", escape(backend)),
        );
        let others: Vec<String> = platform
            .builds
            .iter()
            .filter_map(|build| {
                build.reason.as_ref().map(|reason| {
                    format!(
                        "<code>{}</code>: <span class=\"{}\">{}</span>",
                        escape(&build.backend),
                        build.verdict,
                        escape(reason)
                    )
                })
            })
            .collect();
        let mut notes = String::new();
        for note in &platform.notes {
            let _ = write!(notes, "<br><span class=\"muted\">{}</span>", escape(note));
        }
        let _ = write!(
            out,
            "<tr><th>on {}</th><td>{chosen}{}{}{notes}</td></tr>",
            escape(&platform.platform),
            if others.is_empty() { "" } else { "; " },
            others.join("; "),
        );
    }
    out.push_str("</table>\n");
}

/// The sources table, when the project has more than one or one failed.
fn render_sources(out: &mut String, explanation: &Explanation) {
    if explanation.sources.len() > 1 || explanation.sources.iter().any(|s| s.error.is_some()) {
        out.push_str("<h2>Sources</h2><table>");
        for source in &explanation.sources {
            let state = match &source.error {
                Some(error) => format!("<span class=\"rejected\">{}</span>", escape(error)),
                None => format!("{} files", source.files),
            };
            let _ = write!(
                out,
                "<tr><th><code>{}</code></th><td><code>{}</code></td><td>{state}</td></tr>",
                escape(&source.name),
                escape(&source.url),
            );
        }
        out.push_str("</table>\n");
    }
}

/// Escaped text with its `backticked` parts shown as code.
pub fn inline_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// A machine in one line, for people: platform, then each vendor's driver and GPUs
/// (`linux-x86_64, glibc 2.36; NVIDIA driver 580.65.06: GPU 0 NVIDIA H100 (compute capability 9.0)`).
pub fn describe_machine(machine: &Machine) -> String {
    let mut out = machine.platform.to_string();
    if let Some(glibc) = &machine.glibc {
        let _ = write!(out, ", glibc {glibc}");
    }
    let mut any_gpu = false;
    if let Some(nvidia) = &machine.nvidia {
        let driver = nvidia
            .driver_version
            .as_ref()
            .map_or_else(|| "unknown".to_string(), ToString::to_string);
        let _ = write!(out, "; NVIDIA driver {driver}");
        if let Some(cuda) = &nvidia.cuda_version {
            let _ = write!(out, " (CUDA {cuda})");
        }
        if nvidia.gpus.is_empty() {
            out.push_str(", no GPU visible");
        }
        for (i, gpu) in nvidia.gpus.iter().enumerate() {
            let _ = write!(out, "{} GPU {i}", if i == 0 { ":" } else { "," });
            if let Some(name) = &gpu.name {
                let _ = write!(out, " {name}");
            }
            match &gpu.compute_capability {
                Some(cc) => {
                    let _ = write!(out, " (compute capability {cc})");
                }
                None => out.push_str(" (compute capability unknown)"),
            }
            any_gpu = true;
        }
    }
    if let Some(amd) = machine.amd.as_ref().filter(|a| !a.gpus.is_empty()) {
        out.push_str("; AMD");
        for (i, gpu) in amd.gpus.iter().enumerate() {
            let _ = write!(out, "{} GPU {i}", if i == 0 { ":" } else { "," });
            if let Some(name) = &gpu.name {
                let _ = write!(out, " {name}");
            }
            let _ = write!(out, " ({})", gpu.gfx);
            any_gpu = true;
        }
    }
    if let Some(intel) = machine.intel.as_ref().filter(|i| !i.gpus.is_empty()) {
        out.push_str("; Intel");
        for (i, gpu) in intel.gpus.iter().enumerate() {
            let _ = write!(
                out,
                "{} GPU {i} {}",
                if i == 0 { ":" } else { "," },
                gpu.name.as_deref().unwrap_or("(unnamed)")
            );
            any_gpu = true;
        }
    }
    if !any_gpu && machine.nvidia.is_none() {
        out.push_str("; no GPU");
    }
    out
}

/// The explain URL of a simple-index route prefix (`/simple`, `/b/cu128/simple`,
/// `/m/<token>/simple`): `/explain/torch/`, `/b/cu128/explain/torch/`, ...
pub fn explain_url(simple_prefix: &str, project: &str) -> String {
    let base = simple_prefix
        .strip_suffix("/simple")
        .unwrap_or(simple_prefix);
    format!("{base}/explain/{project}/")
}

/// The comment at the top of a rewritten HTML page: for whom it was rewritten and where to read
/// why, so that a user who saves or inspects the page finds out.
pub fn page_comment(machine: &Machine, policy: &Policy, explain: &str) -> String {
    let pinned = policy
        .pinned
        .as_ref()
        .map(|b| format!(", backend pinned to {b}"))
        .unwrap_or_default();
    let text = format!(
        "wheelgate: this page keeps one build of each version, rewritten for {}{pinned}. \
         Why each build was kept or dropped: {explain}",
        describe_machine(machine)
    );
    format!("<!-- {} -->", comment_safe(&text))
}

/// Text that cannot end or nest an HTML comment (names in a token come from outside):
/// no `--`, `<` or `>`.
fn comment_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push('('),
            '>' => out.push(')'),
            '-' if out.ends_with('-') => out.push_str(" -"),
            c => out.push(c),
        }
    }
    out
}

/// `html` with `comment` as its first line after the doctype (pip, uv and browsers read a
/// comment there like any other).
pub fn with_leading_comment(html: &str, comment: &str) -> String {
    const DOCTYPE: &str = "<!DOCTYPE html>\n";
    let (head, rest) = html
        .strip_prefix(DOCTYPE)
        .map_or(("", html), |rest| (DOCTYPE, rest));
    let mut out = String::with_capacity(html.len() + comment.len() + 1);
    out.push_str(head);
    out.push_str(comment);
    out.push('\n');
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(json: &str) -> Machine {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn describes_gpus_drivers_and_their_absence() {
        let h100 = machine(
            r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100","compute_capability":"9.0"},{"compute_capability":"7.0"}]}}"#,
        );
        assert_eq!(
            describe_machine(&h100),
            "linux-x86_64, glibc 2.36; NVIDIA driver 580.65.06: GPU 0 NVIDIA H100 (compute capability 9.0), GPU 1 (compute capability 7.0)"
        );
        assert_eq!(
            describe_machine(&machine(r#"{"platform":"macos-aarch64"}"#)),
            "macos-arm64; no GPU"
        );
        let amd = machine(
            r#"{"platform":"linux-x86_64","amd":{"gpus":[{"name":"MI300X","gfx":"gfx942"}]}}"#,
        );
        assert_eq!(
            describe_machine(&amd),
            "linux-x86_64; AMD: GPU 0 MI300X (gfx942)"
        );
    }

    #[test]
    fn explain_url_follows_the_route_prefix() {
        assert_eq!(explain_url("/simple", "torch"), "/explain/torch/");
        assert_eq!(
            explain_url("/b/cu128/simple", "torch"),
            "/b/cu128/explain/torch/"
        );
        assert_eq!(
            explain_url("/m/abc/simple", "torchvision"),
            "/m/abc/explain/torchvision/"
        );
    }

    #[test]
    fn a_hostile_gpu_name_cannot_close_the_comment() {
        let hostile = machine(
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"x --> <script>alert(1)</script> <!--","compute_capability":"9.0"}]}}"#,
        );
        let comment = page_comment(&hostile, &Policy::default(), "/explain/torch/");
        let inner = comment
            .strip_prefix("<!-- ")
            .and_then(|c| c.strip_suffix(" -->"))
            .unwrap();
        assert!(!inner.contains("--"), "{inner}");
        assert!(!inner.contains('<') && !inner.contains('>'), "{inner}");
        assert!(inner.ends_with("Why each build was kept or dropped: /explain/torch/"));
    }

    #[test]
    fn the_comment_goes_right_after_the_doctype() {
        let html = "<!DOCTYPE html>\n<html>\n</html>\n".to_string();
        assert_eq!(
            with_leading_comment(&html, "<!-- c -->"),
            "<!DOCTYPE html>\n<!-- c -->\n<html>\n</html>\n"
        );
        assert_eq!(
            with_leading_comment("<html></html>", "<!-- c -->"),
            "<!-- c -->\n<html></html>"
        );
    }
}
