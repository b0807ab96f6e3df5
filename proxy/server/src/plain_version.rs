//! Each platform's build under the plain version (`wheelgate_resolver::select::plain_aliases`):
//! where a version's kept builds carry labels that differ by platform, the page also lists the
//! builds of the platforms its highest version lacks under the plain version, so a universal
//! `uv lock` finds torch on every platform without `required-environments`.
//!
//! - **Link**: `/files/<project>/p/<label>/<plain filename>`; the route puts the label back
//!   (`torch-2.9.0-...` with `cpu` is `torch-2.9.0+cpu-...`) and looks that file up on the
//!   project's pages like any other, so a client only ever gets a file a page listed.
//! - **Bytes**: a derived wheel (`wheelgate_files::derive`, [`Change::PlainVersion`]): its
//!   `METADATA` says the plain version, its `.dist-info` directory is renamed to match, every
//!   other member is copied as it is. Its `.metadata` is that `METADATA`.
//! - **Listed** without a hash until a download here has computed the derived wheel's sha256,
//!   and not planned before it is listed: a torch page for an MI300X lists about ten such wheels
//!   per release, and planning each costs ranged reads that only the one a lock reads needs. A
//!   wheel that cannot be derived (ZIP64, no ranges and no cached copy) answers 404 with why.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use wheelgate_resolver::index::{CoreMetadata, Hashes, IndexFile, LinkedPage, ProjectPage};
use wheelgate_resolver::select::PageSelection;
use wheelgate_resolver::select::plain_aliases::{
    PlainAlias, labelled_upstream_name, plain_aliases, version_aliases,
};

use crate::binding::files::{check_wheel_of, derived_response, split_metadata};
use crate::error::ApiError;
use crate::file_response::FilesError;
use crate::listing::Listing;
use crate::rewrite::file_link;
use crate::state::AppState;
use wheelgate_files::cache::FileSpec;
use wheelgate_files::derive::Change;

/// The route of the aliases' files: `GET` and `HEAD`.
pub fn routes() -> Router<AppState> {
    Router::new().route(
        "/files/{project}/p/{label}/{filename}",
        get(get_alias).head(head_alias),
    )
}

async fn get_alias(
    State(state): State<AppState>,
    Path(segments): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::GET, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn head_alias(
    State(state): State<AppState>,
    Path(segments): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    serve(&state, &Method::HEAD, segments, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn serve(
    state: &AppState,
    method: &Method,
    (project, label, filename): (String, String, String),
    headers: &HeaderMap,
) -> Result<Response, FilesError> {
    let (plain, metadata) = split_metadata(&filename);
    check_wheel_of(plain, &project)?;
    let upstream_name = labelled_upstream_name(plain, &label).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{}` with the label `{}` names no labelled wheel (expected a wheel whose version has no local label, and a label of ASCII letters, digits and `.`)",
            plain.escape_default(),
            label.escape_default()
        ))
    })?;
    let source = crate::lookup::find_file(state, &project, &upstream_name)
        .await
        .map_err(ApiError::Owners)?
        .ok_or_else(|| ApiError::NotFound(format!("`{project}` has no file `{upstream_name}`")))?;
    let upstream = FileSpec {
        url: source.url,
        sha256: source.sha256,
        size: source.size,
        splice: None,
        listed_on: Some(source.listed_on),
    };
    let version = plain_version(plain).expect("a wheel checked above");
    derived_response(
        state,
        method,
        headers,
        (&upstream, &upstream_name, metadata),
        &Change::PlainVersion(version),
    )
    .await
}

/// The version a plain wheel filename gives.
fn plain_version(plain: &str) -> Option<String> {
    wheelgate_resolver::filename::WheelParts::split(plain)
        .ok()
        .map(|parts| parts.version.to_string())
}

/// `aliases` (of a selection made from `files`, listed as `listing` says) added to `page`
/// (rewritten from it): see [`alias_files`].
pub fn apply(
    state: &AppState,
    project: &str,
    source: (&[&IndexFile], &ProjectPage, Listing<'_>),
    aliases: Vec<PlainAlias>,
    page: &mut ProjectPage,
) {
    let listed = page
        .files
        .iter()
        .map(|f| (f.filename.as_str(), f.url.as_str()));
    let added = alias_files(state, project, source, aliases, listed);
    page.files.extend(added);
}

/// [`apply`] for a page of kept files linked where they lie: the aliases are held by the page,
/// the kept files still not copied.
pub fn apply_linked(
    state: &AppState,
    project: &str,
    source: (&[&IndexFile], &ProjectPage, Listing<'_>),
    aliases: Vec<PlainAlias>,
    page: &mut LinkedPage<'_>,
) {
    let listed = page
        .files()
        .map(|(file, link)| (file.filename.as_str(), link));
    let added = alias_files(state, project, source, aliases, listed);
    for file in added {
        page.push_owned(file);
    }
}

/// The files of `aliases` for a page that lists `listed` (filename and link): one per kept
/// wheel the page links as it is (a file the page serves derived already, bound or with
/// extras, gets none), each named once.
fn alias_files<'l>(
    state: &AppState,
    project: &str,
    (files, first, listing): (&[&IndexFile], &ProjectPage, Listing<'_>),
    aliases: Vec<PlainAlias>,
    listed: impl Iterator<Item = (&'l str, &'l str)>,
) -> Vec<IndexFile> {
    if aliases.is_empty() {
        return Vec::new();
    }
    let listed: std::collections::HashMap<&str, &str> = listed.collect();
    let mut named: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut added = Vec::with_capacity(aliases.len());
    for alias in aliases {
        let upstream = files[alias.index];
        let linked_as_is = listed
            .get(upstream.filename.as_str())
            .is_some_and(|link| *link == file_link(project, &upstream.filename));
        if !linked_as_is
            || listed.contains_key(alias.filename.as_str())
            || !named.insert(alias.filename.clone())
        {
            continue;
        }
        let spec = listing.upstream_spec(first, upstream);
        let change = Change::PlainVersion(alias.version.clone());
        // One that cannot be derived (ZIP64: past 4 GiB) is left off once its plan was refused;
        // until then it is listed and answers 404 with why.
        if state.derivations.refused(&spec, &change) {
            tracing::debug!(file = %upstream.filename, "not listed under the plain version: its derivation was refused");
            continue;
        }
        let sha256 = state
            .derivations
            .known(&spec, &change)
            .and_then(|derivation| state.files.derived_sha256(&derivation.spec));
        let mut file = upstream.clone();
        file.url = file_link(&format!("{project}/p/{}", alias.label), &alias.filename);
        file.filename = alias.filename;
        file.hashes = sha256
            .map(|sha256| Hashes::from([("sha256".to_string(), sha256)]))
            .unwrap_or_default();
        file.size = None;
        file.provenance = None;
        file.core_metadata = CoreMetadata::Present;
        added.push(file);
    }
    added
}

/// The aliases of `selection` over `files`.
pub fn needed(selection: &PageSelection, files: &[&IndexFile]) -> Vec<PlainAlias> {
    plain_aliases(selection, |index| files[index].filename.as_str())
}

/// `/explain/`'s note on each version whose kept builds are also listed under the plain
/// version, naming them.
pub fn explain(explanation: &mut crate::explanation::Explanation) {
    for version in &mut explanation.versions {
        let aliases = version_aliases(
            version
                .kept
                .iter()
                .enumerate()
                .map(|(index, name)| (index, name.as_str())),
        );
        if aliases.is_empty() {
            continue;
        }
        let listed: Vec<String> = aliases
            .iter()
            .map(|alias| format!("`{}` as `{}`", version.kept[alias.index], alias.filename))
            .collect();
        version
            .plain_aliases
            .extend(aliases.iter().map(|alias| alias.filename.clone()));
        version.notes.push(format!(
            "also listed under the plain version {}, for a universal lock (uv takes the highest version and looks for the platforms it lacks only under the plain one): {}; each is a derived wheel, the build's own bytes with its METADATA version and `.dist-info` directory renamed, listed without a hash until a download here has computed its sha256",
            aliases[0].version,
            listed.join(", ")
        ));
    }
}
