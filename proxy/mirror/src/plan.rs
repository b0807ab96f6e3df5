//! The plan of a sync: fetch every page an offline server will look up (through the index cache,
//! so they land in the store exactly as the server keeps them), select each entry's files, and
//! list the files and `.metadata` files to download, each as the file cache's [`FileSpec`], the
//! same the server derives from the same page.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;
use wheelgate_resolver::index::CoreMetadata;
use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::lists_variants;

use super::bind::Binding;
use super::config::{MirrorConfig, PackageEntry};
use super::environment::Build;
use super::fetch::{Fetcher, ResolveError, page_url};
use super::resolve::{Resolution, resolve_all};
use super::select::select_files_with_variants;
use wheelgate_files::cache::{FileCache, FileSpec};
use wheelgate_index::cache::index::{CachedPage, IndexCache, IndexError};
use wheelgate_index::sources::{ProjectKind, ProjectPages};
use wheelgate_index::upstream::UpstreamClient;
use wheelgate_server::variants::read_variants_files;

/// One index page the store holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedPage {
    pub project: String,
    /// The upstream page URL: the key the offline server looks it up by.
    pub url: String,
}

/// What a planned file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// A wheel or sdist.
    Distribution,
    /// Its PEP 658 `.metadata` file.
    Metadata,
}

/// One file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub project: String,
    /// The name clients ask for (`<dist>.metadata` for a metadata file).
    pub filename: String,
    pub kind: FileKind,
    /// What the file cache downloads and verifies.
    pub spec: FileSpec,
}

/// Everything one sync will fetch.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub pages: Vec<PlannedPage>,
    /// Without duplicates (a file listed by two entries is downloaded once).
    pub files: Vec<PlannedFile>,
    /// Each environment's resolution (empty when no entry resolves its dependencies).
    pub resolutions: Vec<Resolution>,
}

impl Plan {
    /// The total of the sizes the pages give, and how many files have none.
    pub fn known_size(&self) -> (u64, usize) {
        self.files
            .iter()
            .fold((0, 0), |(bytes, unknown), file| match file.spec.size {
                Some(size) => (bytes + size, unknown),
                None => (bytes, unknown + 1),
            })
    }
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot fetch the index page of `{name}`")]
    Page {
        name: String,
        #[source]
        source: IndexError,
    },
    #[error("{}", unmatched_message(.0))]
    NothingMatched(Vec<Unmatched>),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
}

/// An entry that matched nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmatched {
    pub name: String,
    pub reason: String,
}

fn unmatched_message(entries: &[Unmatched]) -> String {
    let mut text = String::from("the mirror configuration matches nothing for ");
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            text.push_str("; ");
        }
        let _ = write!(text, "`{}`: {}", entry.name, entry.reason);
    }
    text.push_str(" (fix or remove these `[[package]]` entries; nothing was downloaded)");
    text
}

/// Fetches the pages of every entry through `index` and lists the files to download: for
/// entries with `dependencies = false` their own selection, for the others each environment's
/// resolution (metadata read through `files`). Fails before anything but metadata is downloaded
/// when an entry matches nothing or an environment does not resolve.
pub async fn make_plan(
    config: &MirrorConfig,
    client: &UpstreamClient,
    index: &IndexCache,
    files: &FileCache,
) -> Result<Plan, PlanError> {
    let catalog = &*config.catalog;
    let mut plan = Planner {
        config,
        client,
        index,
        plan: Plan::default(),
        seen_files: BTreeSet::new(),
        seen_pages: BTreeSet::new(),
    };
    let mut unmatched = Vec::new();
    let sources = config.sources();
    // Pages and metadata read once for every entry and environment.
    let fetcher = Fetcher::new(config, client, index, files);
    for entry in config.packages.iter().filter(|e| !e.dependencies) {
        let page_error = |source| PlanError::Page {
            name: entry.name.clone(),
            source,
        };
        let Some(pages) = entry_pages(&sources, index, client, entry).await? else {
            unmatched.push(Unmatched {
                name: entry.name.clone(),
                reason: format!(
                    "no project named `{}` at `{}`",
                    entry.project,
                    page_url(config, &entry.project)
                ),
            });
            continue;
        };
        let cached = pages.as_cached();
        // A wheel-variant index (PEP 825): its variants files are read (and so stored) first,
        // to choose each machine's variant as the server does.
        let refs: Vec<FileRef<'_>> = cached.page.files.iter().map(FileRef::from).collect();
        let variants = if entry.kind == ProjectKind::Pytorch && lists_variants(&refs) {
            Some(
                read_variants_files(
                    files,
                    client,
                    false,
                    &cached.page,
                    wheelgate_server::listing::Listing::Page(&cached.url),
                )
                .await,
            )
        } else {
            None
        };
        // Each machine's builds of a project built against torch follow torch's there.
        let binding = Binding::read(
            &fetcher,
            entry.kind,
            &entry.project,
            &cached,
            &entry.machines,
            &entry.policy,
        )
        .await?;
        let selection = select_files_with_variants(
            catalog,
            entry,
            &cached.page,
            variants.as_ref(),
            binding.as_ref(),
        );
        if selection.files.is_empty() {
            unmatched.push(Unmatched {
                name: entry.name.clone(),
                reason: describe_filters(entry),
            });
            continue;
        }
        for url in pages.urls() {
            plan.add_page(&entry.project, url);
        }
        if entry.kind == ProjectKind::Pytorch {
            for backend in &selection.backends {
                plan.add_backend_page(entry, &backend.to_string())
                    .await
                    .map_err(page_error)?;
            }
        }
        plan.add_files(&entry.project, &cached, &selection.files);
    }
    if !unmatched.is_empty() {
        return Err(PlanError::NothingMatched(unmatched));
    }
    if config.resolves() {
        let resolutions = resolve_all(&fetcher).await?;
        plan.add_resolutions(&fetcher, &resolutions).await?;
        plan.plan.resolutions = resolutions;
    }
    Ok(plan.plan)
}

/// The pages of an entry's project from every source that owns it; a source that failed fails
/// the plan (its builds would be left out of the store unnoticed).
async fn entry_pages(
    sources: &wheelgate_index::sources::Sources,
    index: &IndexCache,
    client: &UpstreamClient,
    entry: &PackageEntry,
) -> Result<Option<ProjectPages>, PlanError> {
    let page_error = |source| PlanError::Page {
        name: entry.name.clone(),
        source,
    };
    let pages = ProjectPages::fetch(sources, index, client, &entry.project, None)
        .await
        .map_err(|failed| page_error(failed.error))?;
    match pages {
        Some(pages) if !pages.failed.is_empty() => {
            let failed = pages
                .into_failure(sources, &entry.project)
                .expect("a source failed");
            Err(page_error(failed.error))
        }
        other => Ok(other),
    }
}

/// A plan being made: pages and files, each listed once.
struct Planner<'a> {
    config: &'a MirrorConfig,
    client: &'a UpstreamClient,
    index: &'a IndexCache,
    plan: Plan,
    seen_files: BTreeSet<String>,
    seen_pages: BTreeSet<String>,
}

impl Planner<'_> {
    /// Every environment's resolved packages: their pages, their builds' pages and files.
    async fn add_resolutions(
        &mut self,
        fetcher: &Fetcher<'_>,
        resolutions: &[Resolution],
    ) -> Result<(), PlanError> {
        let config = self.config;
        for resolution in resolutions {
            for package in &resolution.packages {
                for url in fetcher.page_urls(&package.project) {
                    self.add_page(&package.project, &url);
                }
                // Its build's page (`/b/<backend>/simple/<project>/` offline): the file's local
                // label, else (pytorch-triton, unlabelled wheels) the environment's backend.
                let backend = package.backend().map(str::to_string).or_else(|| {
                    match &resolution.environment.build {
                        Build::Backend(backend) => Some(backend.to_string()),
                        Build::Machine { .. } | Build::None => None,
                    }
                });
                if package.kind == ProjectKind::Pytorch
                    && let Some(backend) = backend
                {
                    let entry = PackageEntry::resolved(config, &package.project);
                    self.add_backend_page(&entry, &backend)
                        .await
                        .map_err(|source| PlanError::Page {
                            name: package.project.clone(),
                            source,
                        })?;
                }
                self.add_files(&package.project, &package.page, &package.files);
            }
        }
        Ok(())
    }

    fn add_page(&mut self, project: &str, url: &str) {
        if self.seen_pages.insert(url.to_string()) {
            self.plan.pages.push(PlannedPage {
                project: project.to_string(),
                url: url.to_string(),
            });
        }
    }

    /// The per-backend page `/b/<backend>/simple/<project>/` reads; a backend without a page
    /// for this project is skipped (its files come from the aggregated page anyway).
    async fn add_backend_page(
        &mut self,
        entry: &PackageEntry,
        backend: &str,
    ) -> Result<(), IndexError> {
        let url = backend_page_url(self.config, entry, backend);
        if self.seen_pages.contains(&url) {
            return Ok(());
        }
        if self.index.get(self.client, &url).await?.is_some() {
            self.add_page(&entry.project, &url);
        }
        Ok(())
    }

    /// Files `indices` of `cached` and their `.metadata` files.
    fn add_files(&mut self, project: &str, cached: &CachedPage, indices: &[usize]) {
        for &i in indices {
            // The server finds a file by name, taking the first on the page with that name.
            let name = &cached.page.files[i].filename;
            let Some(file) = cached.page.files.iter().find(|f| &f.filename == name) else {
                continue;
            };
            let file_url = cached.page.file_url(file, &cached.url);
            // The same spec the server's file route derives from this page.
            let spec = FileSpec {
                url: file_url.clone(),
                sha256: file.sha256().map(str::to_ascii_lowercase),
                size: file.size,
                splice: None,
                listed_on: Some(std::sync::Arc::from(cached.url.as_str())),
            };
            if self.seen_files.insert(spec.url.clone()) {
                self.plan.files.push(PlannedFile {
                    project: project.to_string(),
                    filename: file.filename.clone(),
                    kind: FileKind::Distribution,
                    spec,
                });
            }
            let metadata_sha256 = match &file.core_metadata {
                CoreMetadata::Absent => continue,
                CoreMetadata::Present => None,
                CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
            };
            let spec = FileSpec {
                url: format!("{file_url}.metadata"),
                sha256: metadata_sha256,
                size: None,
                splice: None,
                listed_on: Some(std::sync::Arc::from(cached.url.as_str())),
            };
            if self.seen_files.insert(spec.url.clone()) {
                self.plan.files.push(PlannedFile {
                    project: project.to_string(),
                    filename: format!("{}.metadata", file.filename),
                    kind: FileKind::Metadata,
                    spec,
                });
            }
        }
    }
}

/// The PyTorch index's page of a backend of an entry's project: what the server reads for
/// `/b/<backend>/simple/<project>/`.
fn backend_page_url(config: &MirrorConfig, entry: &PackageEntry, backend: &str) -> String {
    format!("{}/{backend}/{}/", config.pytorch_root(), entry.project)
}

/// The filters of an entry, for "matched nothing" messages.
fn describe_filters(entry: &PackageEntry) -> String {
    let list = |items: Vec<String>| items.join(", ");
    let mut text = String::from("no file matches versions ");
    match &entry.versions {
        Some(specifiers) => {
            let _ = write!(text, "`{specifiers}`");
        }
        None => text.push_str("(newest)"),
    }
    if !entry.backends.is_empty() {
        let _ = write!(
            text,
            ", backends [{}]",
            list(entry.backends.iter().map(ToString::to_string).collect())
        );
    }
    if !entry.machines.is_empty() {
        let _ = write!(text, ", {} machine(s)", entry.machines.len());
    }
    if !entry.python.is_empty() {
        let _ = write!(
            text,
            ", python [{}]",
            list(entry.python.iter().map(ToString::to_string).collect())
        );
    }
    let _ = write!(
        text,
        ", platforms [{}]",
        list(entry.platforms.iter().map(ToString::to_string).collect())
    );
    text
}
