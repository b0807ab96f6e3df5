//! Where a project's pages and files live upstream: the pages of every source that owns the
//! project (`wheelgate_index::sources`), and the lookup of a file's upstream URL and hash from them.
//! Files are only ever fetched from URLs an owner's page listed, so a client cannot make the
//! proxy fetch anything else.

use std::sync::Arc;
use std::time::Duration;

use wheelgate_resolver::Backend;
use wheelgate_resolver::index::CoreMetadata;

use wheelgate_index::cache::index::Revalidation;
use wheelgate_index::sources::ProjectPages;
use wheelgate_index::sources::pages::OwnersFailed;

use super::error::ApiError;
use super::state::AppState;

/// Where a file comes from and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSource {
    /// Absolute upstream URL.
    pub url: String,
    /// Lowercase hex sha256 from the index page, when it gives one.
    pub sha256: Option<String>,
    pub size: Option<u64>,
    pub core_metadata: CoreMetadata,
    /// The URL of the page that lists it: its download carries that page's source's access
    /// only ([`wheelgate_files::cache::FileSpec::listed_on`]).
    pub listed_on: Arc<str>,
}

/// A failed lookup.
pub type LookupError = OwnersFailed;

/// The cached or fetched pages of a project from each source that owns it.
pub async fn project_page(
    state: &AppState,
    project: &str,
    pinned: Option<&Backend>,
) -> Result<Option<ProjectPages>, OwnersFailed> {
    pages_with(state, project, pinned, Revalidation::Wait).await
}

/// Why `project` has no page: the reason no source serves it (`pytorch_index = false` and a
/// name only the PyTorch index publishes), else that none has it.
pub fn no_page(state: &AppState, project: &str) -> ApiError {
    match state.sources.unserved(project) {
        Some(unserved) => ApiError::NotFound(unserved.to_string()),
        None => ApiError::no_such_project(state.config.offline, project),
    }
}

async fn pages_with(
    state: &AppState,
    project: &str,
    pinned: Option<&Backend>,
    revalidation: Revalidation,
) -> Result<Option<ProjectPages>, OwnersFailed> {
    // A name no source owns has no page to fetch, from anyone.
    if state.sources.unserved(project).is_some() {
        return Ok(None);
    }
    ProjectPages::fetch_counted(
        &state.sources,
        &state.index,
        &state.client,
        project,
        pinned,
        Some(&state.source_counters),
        revalidation,
    )
    .await
}

/// The upstream source of `filename` of `project`, from its owners' aggregated pages (a file
/// a newer copy of a page dropped stays findable for a while, so a download a client started
/// can finish). `Ok(None)` when the project or the file is unknown.
pub async fn find_file(
    state: &AppState,
    project: &str,
    filename: &str,
) -> Result<Option<FileSource>, LookupError> {
    // The copies at once: a file they list needs no newer page (the soak's cached files waited
    // the 2 s of their page's revalidation while the upstream stalled).
    let Some(mut pages) = pages_with(state, project, None, Revalidation::Background).await? else {
        return Ok(None);
    };
    if pages.find(filename).is_none() {
        // An expired copy answered at once may predate the file (a release published since):
        // this one request waits for the owners' copies.
        let ttl = Duration::from_secs(state.config.index_ttl_secs);
        for part in &mut pages.parts {
            if part.cached.fetched_at().elapsed().unwrap_or_default() >= ttl {
                // A failed refresh leaves the copy in hand: the file may be on another owner's.
                if let Ok(Some(refreshed)) = state
                    .index
                    .get_refreshed(&state.client, &part.cached.url)
                    .await
                {
                    part.cached = refreshed;
                }
            }
        }
    }
    let Some((part, file)) = pages.find(filename) else {
        // A source that failed may list it: say so, rather than that it does not exist.
        return match pages.into_failure(&state.sources, project) {
            Some(failed) => Err(failed),
            None => Ok(None),
        };
    };
    Ok(Some(FileSource {
        url: part.cached.page.file_url(file, &part.cached.url),
        sha256: file.sha256().map(str::to_ascii_lowercase),
        size: file.size,
        core_metadata: file.core_metadata.clone(),
        listed_on: Arc::from(part.cached.url.as_str()),
    }))
}
