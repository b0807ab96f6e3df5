//! Where a project's page and files live upstream: page URLs per upstream and route, and the
//! lookup of a file's upstream URL and hash from its (cached) project page. Files are only ever
//! fetched from URLs an upstream page listed, so a client cannot make the proxy fetch anything
//! else.

use std::sync::Arc;

use wheelgate_resolver::Backend;
use wheelgate_resolver::index::CoreMetadata;

use crate::cache::index::{CachedPage, IndexError};
use crate::upstream::{Upstream, route};

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
}

/// A failed lookup.
pub type LookupError = IndexError;

/// The upstream page URL of a project: PyTorch's aggregated `<root>/<project>/` (every backend),
/// or `<root>/<backend>/<project>/` when a backend is pinned; the general upstream's
/// `<root>/<project>/`.
pub fn page_url(state: &AppState, project: &str, pinned: Option<&Backend>) -> (Upstream, String) {
    match route(state.catalog, project) {
        Upstream::Pytorch => {
            let root = state.config.pytorch_root();
            let url = match pinned {
                Some(backend) => format!("{root}/{backend}/{project}/"),
                None => format!("{root}/{project}/"),
            };
            (Upstream::Pytorch, url)
        }
        Upstream::General => (
            Upstream::General,
            format!("{}/{project}/", state.config.pypi_root()),
        ),
    }
}

/// The cached or fetched page of a project. With a backend pinned and no such backend
/// directory upstream (a wheel-variant index, `.../whl/variant/`, has none), the aggregated
/// page, which the pin then selects from.
pub async fn project_page(
    state: &AppState,
    project: &str,
    pinned: Option<&Backend>,
) -> Result<Option<Arc<CachedPage>>, IndexError> {
    let (_, url) = page_url(state, project, pinned);
    let page = state.index.get(&state.client, &url).await?;
    if page.is_none() && pinned.is_some() {
        let (_, aggregated) = page_url(state, project, None);
        return state.index.get(&state.client, &aggregated).await;
    }
    Ok(page)
}

/// The upstream source of `filename` of `project`, from the project's aggregated page (a file
/// a newer copy of the page dropped stays findable for a while, so a download a client started
/// can finish). `Ok(None)` when the project or the file is unknown.
pub async fn find_file(
    state: &AppState,
    project: &str,
    filename: &str,
) -> Result<Option<FileSource>, LookupError> {
    let Some(mut cached) = project_page(state, project, None).await? else {
        return Ok(None);
    };
    if cached.find(filename).is_none() {
        // An expired copy answered at once may predate the file (a release published since):
        // this one request waits for the upstream's copy.
        let (_, url) = page_url(state, project, None);
        if cached.fetched_at().elapsed().unwrap_or_default()
            >= std::time::Duration::from_secs(state.config.index_ttl_secs)
            && let Some(refreshed) = state.index.get_refreshed(&state.client, &url).await?
        {
            cached = refreshed;
        }
    }
    let Some(file) = cached.find(filename) else {
        return Ok(None);
    };
    Ok(Some(FileSource {
        url: cached.page.file_url(file, &cached.url),
        sha256: file.sha256().map(str::to_ascii_lowercase),
        size: file.size,
        core_metadata: file.core_metadata.clone(),
    }))
}
