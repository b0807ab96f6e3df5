//! A project's pages from every source that owns it, fetched concurrently through the index
//! cache, and what to do when some of them fail.
//!
//! - Some owners answered: their pages are served, merged ([`super::merge`]); the owners that
//!   failed with nothing cached are named (in `/explain/` and the log) and their builds are
//!   missing until they answer. torch resolves from PyPI while download.pytorch.org is down.
//! - No owner has the project (each answered 404): no such project.
//! - Every owner that could have it failed: the request fails naming them, and no other source
//!   is asked, so a squatter on the general index is never offered in their place.

use std::sync::Arc;

use futures_util::future::join_all;
use wheelgate_resolver::Backend;
use wheelgate_resolver::index::IndexFile;

use super::counters::{PageResult, SourceCounters};
use super::merge::{MergedPage, SourcePage, merge};
use super::{SourceId, SourceKind, Sources};
use crate::cache::index::{CachedPage, IndexCache, IndexError, Revalidation};
use crate::upstream::UpstreamClient;

/// The pages of a project's owners that answered, in priority order, and those that failed.
#[derive(Debug)]
pub struct ProjectPages {
    /// Never empty.
    pub parts: Vec<SourcePage>,
    /// Owners that failed with no cached copy: their builds are missing from the page.
    pub failed: Vec<(SourceId, IndexError)>,
}

/// Every owner of a project failed (none answered with a page or a 404).
#[derive(Debug, thiserror::Error)]
#[error("`{project}` is served only from {}, and no page of it could be had", named.owners)]
pub struct OwnersFailed {
    pub project: String,
    /// The first owner's failure.
    #[source]
    pub error: IndexError,
    /// Which owners failed (boxed: every handler's error type holds this one).
    pub named: Box<NamedFailures>,
}

/// The owners that failed, by name: the answer to a client names each, with its failure (torch's
/// 502 says why download.pytorch.org and PyPI both could not serve it).
#[derive(Debug)]
pub struct NamedFailures {
    /// Every owner, named for messages: "the source `internal`", "the sources `pytorch` and
    /// `pypi`".
    pub owners: String,
    /// The name of the first owner that failed, whose failure is [`OwnersFailed::error`].
    pub first: String,
    /// Every other owner that failed, with its failure.
    pub others: Vec<(String, IndexError)>,
}

impl ProjectPages {
    /// The pages of `project` from each source that owns it; `Ok(None)` when none has it.
    /// With a backend pinned, the PyTorch index's page of that backend, or its aggregated page
    /// where it has no such directory (a wheel-variant index has none), which the pin then
    /// selects from.
    pub async fn fetch(
        sources: &Sources,
        index: &IndexCache,
        client: &UpstreamClient,
        project: &str,
        pinned: Option<&Backend>,
    ) -> Result<Option<ProjectPages>, OwnersFailed> {
        Self::fetch_counted(
            sources,
            index,
            client,
            project,
            pinned,
            None,
            Revalidation::Wait,
        )
        .await
    }

    /// [`ProjectPages::fetch`], counting each owner's answer in `counters`, waiting for
    /// expired pages' revalidation as `revalidation` says.
    pub async fn fetch_counted(
        sources: &Sources,
        index: &IndexCache,
        client: &UpstreamClient,
        project: &str,
        pinned: Option<&Backend>,
        counters: Option<&SourceCounters>,
        revalidation: Revalidation,
    ) -> Result<Option<ProjectPages>, OwnersFailed> {
        if let Some(pages) = Self::fresh(sources, index, client, project, pinned, counters) {
            return Ok(Some(pages));
        }
        // Boxed: the fetches' futures are kilobytes, which every caller's future would otherwise
        // hold (and move) for every request, though nearly all find their pages fresh above.
        Box::pin(Self::fetched(
            sources,
            index,
            client,
            project,
            pinned,
            counters,
            revalidation,
        ))
        .await
    }

    /// [`ProjectPages::fetch_counted`] for pages not all fresh in memory: each owner's through
    /// the index cache, concurrently.
    async fn fetched(
        sources: &Sources,
        index: &IndexCache,
        client: &UpstreamClient,
        project: &str,
        pinned: Option<&Backend>,
        counters: Option<&SourceCounters>,
        revalidation: Revalidation,
    ) -> Result<Option<ProjectPages>, OwnersFailed> {
        // A per-build source's pages are per torch release and build, fetched for a machine
        // (`wheelgate::server::binding::by_page`), never as a project page.
        let owners = sources.page_owners(project);
        // The pages of a project whose builds are selected are grouped for selection where
        // they are parsed (`cache/index/arriving.rs`).
        let grouped = sources.selects(project);
        let answers = join_all(owners.iter().map(|&id| async move {
            let source = sources.get(id);
            let url = source.page_url(project, pinned);
            let page = index.get_with(client, &url, revalidation, grouped).await;
            match page {
                Ok(None) if pinned.is_some() && source.kind == SourceKind::Pytorch => {
                    let unpinned = source.page_url(project, None);
                    index
                        .get_with(client, &unpinned, revalidation, grouped)
                        .await
                }
                other => other,
            }
        }))
        .await;
        let mut parts = Vec::with_capacity(owners.len());
        let mut failed = Vec::new();
        for (&source, answer) in owners.iter().zip(answers) {
            if let Some(counters) = counters {
                let result = match &answer {
                    Ok(Some(_)) => PageResult::Page,
                    Ok(None) => PageResult::Absent,
                    Err(_) => PageResult::Failed,
                };
                counters.count(source, result);
                if let Err(error) = &answer {
                    counters.count_failure(source, super::counters::FailureReason::of(error));
                }
            }
            match answer {
                Ok(Some(cached)) => parts.push(SourcePage { source, cached }),
                Ok(None) => {}
                Err(error) => failed.push((source, error)),
            }
        }
        if parts.is_empty() {
            if failed.is_empty() {
                return Ok(None);
            }
            return Err(failure(sources, project, failed));
        }
        for (id, error) in &failed {
            // Per request while a source is down: the fetch itself logged the failure once.
            tracing::debug!(project, source = %sources.get(*id).name, error = %crate::error_chain::source_chain(error), "a source of this project failed; serving the others' builds");
        }
        Ok(Some(ProjectPages { parts, failed }))
    }

    /// The pages of `project`'s owners when each is fresh in memory, counted in `counters` as
    /// [`ProjectPages::fetch_counted`] counts them: nearly every request's case, answered
    /// without a future (the fetches' futures are a few kilobytes each, made and moved for
    /// every request otherwise). `None` when any owner's page needs fetching or revalidating.
    pub fn fresh(
        sources: &Sources,
        index: &IndexCache,
        client: &UpstreamClient,
        project: &str,
        pinned: Option<&Backend>,
        counters: Option<&SourceCounters>,
    ) -> Option<ProjectPages> {
        // Each URL written into one buffer per thread, only to look the page up.
        thread_local! {
            static URL: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let parts = URL.with_borrow_mut(|url| {
            sources
                .page_owners(project)
                .into_iter()
                .map(|source| {
                    sources.get(source).write_page_url(url, project, pinned);
                    let cached = index.fresh_in_memory(client, url)?;
                    Some(SourcePage { source, cached })
                })
                .collect::<Option<Vec<SourcePage>>>()
        })?;
        if let Some(counters) = counters {
            for part in &parts {
                counters.count(part.source, PageResult::Page);
            }
        }
        Some(ProjectPages {
            parts,
            failed: Vec::new(),
        })
    }

    /// Why no build could be served: the failures of the owners that did not answer, for a
    /// page whose answering owners offer nothing that runs (an installer told "no versions"
    /// would move to an ancient release that needs no torch; it is told the source failed).
    /// `None` when every owner answered.
    pub fn into_failure(self, sources: &Sources, project: &str) -> Option<OwnersFailed> {
        (!self.failed.is_empty()).then(|| failure(sources, project, self.failed))
    }

    /// The only page, when one owner answered.
    pub fn single(&self) -> Option<&Arc<CachedPage>> {
        match self.parts.as_slice() {
            [only] => Some(&only.cached),
            _ => None,
        }
    }

    /// What renderings of these pages are cached by: the pages' URLs, and a generation that
    /// changes whenever any of them does.
    pub fn key(&self) -> (String, u64) {
        match self.parts.as_slice() {
            [only] => (only.cached.url.clone(), only.cached.generation),
            parts => {
                let length = parts.iter().map(|p| p.cached.url.len() + 1).sum();
                let mut url = String::with_capacity(length);
                for part in parts {
                    if !url.is_empty() {
                        url.push(' ');
                    }
                    url.push_str(&part.cached.url);
                }
                (url, combine(parts.iter().map(|p| p.cached.generation)))
            }
        }
    }

    /// The page to select from and rewrite, with each file's source: one owner's page as it
    /// is, or several merged (links made absolute, each file once).
    pub fn merged(&self) -> MergedPage<'_> {
        merge(&self.parts)
    }

    /// The page and URL a file named `filename` is listed on (or was, recently), in priority
    /// order.
    pub fn find(&self, filename: &str) -> Option<(&SourcePage, &IndexFile)> {
        self.parts
            .iter()
            .find_map(|part| part.cached.find(filename).map(|file| (part, file)))
    }

    /// The pages as one cached page: the one page itself, or the merged page (absolute links,
    /// each filename once) under the first page's URL. For the mirror, which reads one page per
    /// project; [`ProjectPages::urls`] are the pages it stores.
    pub fn as_cached(&self) -> Arc<CachedPage> {
        if let Some(only) = self.single() {
            return Arc::clone(only);
        }
        let merged = self.merged();
        let (_, generation) = self.key();
        Arc::new(CachedPage::merged(
            &self.parts[0].cached.url,
            merged.page().into_owned(),
            generation,
        ))
    }

    /// The URLs of the pages that answered, in priority order.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().map(|part| part.cached.url.as_str())
    }

    /// The first page: the highest-priority owner's.
    pub fn first(&self) -> &SourcePage {
        &self.parts[0]
    }
}

/// The failure of `failed` (never empty), naming every owner of `project`; the first failed
/// owner's error kept.
fn failure(
    sources: &Sources,
    project: &str,
    mut failed: Vec<(SourceId, IndexError)>,
) -> OwnersFailed {
    let names: Vec<String> = sources
        .owners(project)
        .into_iter()
        .map(|id| format!("`{}`", sources.get(id).name))
        .collect();
    let (first, error) = failed.remove(0);
    OwnersFailed {
        project: project.to_string(),
        error,
        named: Box::new(NamedFailures {
            owners: match names.as_slice() {
                [one] => format!("the source {one}"),
                many => format!("the sources {}", many.join(" and ")),
            },
            first: sources.get(first).name.clone(),
            others: failed
                .into_iter()
                .map(|(id, error)| (sources.get(id).name.clone(), error))
                .collect(),
        }),
    }
}

/// One generation standing for several (FNV-1a over their bytes): each is unique to one copy of
/// one page, so a change of any of them changes it.
pub fn combine(generations: impl IntoIterator<Item = u64>) -> u64 {
    let mut combined: u64 = 0xcbf2_9ce4_8422_2325;
    for generation in generations {
        for byte in generation.to_le_bytes() {
            combined ^= u64::from(byte);
            combined = combined.wrapping_mul(0x0100_0000_01b3);
        }
    }
    combined
}
