//! Pages and core metadata for resolution, shared by every environment and each fetched once:
//! pages through the index cache (each project only from the upstream the server routes it to),
//! metadata through the file cache (the PEP 658 file, which the sync then finds in the store)
//! or, where a page offers none, from the wheel by ranged reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;
use wheelgate_resolver::index::{CoreMetadata, IndexFile};
use wheelgate_resolver::variants::choose::variant_label;
use wheelgate_resolver::variants::decide_variant_label;

use super::config::MirrorConfig;
use super::variants::VariantsFiles;
use wheelgate_files::cache::{FileCache, FileCacheError, FileSpec, SmallReadError};
use wheelgate_files::metadata::{Metadata, MetadataError, parse_metadata};
use wheelgate_files::wheel_metadata::{WheelMetadataError, read_wheel_metadata};
use wheelgate_index::cache::index::{CachedPage, IndexCache, IndexError};
use wheelgate_index::metrics::upstream_label;
use wheelgate_index::sources::{ProjectPages, Sources};
use wheelgate_index::upstream::UpstreamClient;
use wheelgate_server::variants::read_variants_files;

/// How metadata could not be fetched or read.
#[derive(Debug, thiserror::Error)]
pub enum MetadataFetchError {
    #[error(transparent)]
    Download(#[from] FileCacheError),
    #[error("reading the downloaded file failed")]
    Read(#[source] std::io::Error),
    #[error("the metadata file is larger than {limit} bytes: not core metadata")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Wheel(#[from] WheelMetadataError),
    #[error(transparent)]
    Parse(#[from] MetadataError),
}

impl MetadataFetchError {
    /// Whether the upstream answered and what it sent is not usable metadata (not core
    /// metadata, an invalid `Requires-Dist`, a wheel that is not a zip): the version can be
    /// skipped, as pip and uv skip such a candidate. A download that failed or whose sha256
    /// disagrees with the page is not: that is the upstream failing or lying, and stops the
    /// sync.
    pub fn is_invalid_metadata(&self) -> bool {
        matches!(
            self,
            MetadataFetchError::Parse(_)
                | MetadataFetchError::TooLarge { .. }
                | MetadataFetchError::Wheel(WheelMetadataError::Zip { .. })
        )
    }
}

/// The page of a project (its owners' pages merged), or `None` where no owner has one.
type PageSlot = Arc<OnceCell<Option<Arc<CachedPage>>>>;
/// The metadata of a file, or why it could not be had: a failure is remembered too, so a file
/// whose upstream failed after its retries is not asked again by the next environment or by
/// the solver after a prefetch.
type MetadataSlot = Arc<OnceCell<Result<Arc<Metadata>, Arc<MetadataFetchError>>>>;
/// The parsed variants files of a page (PEP 825), by page URL.
type VariantsSlot = Arc<OnceCell<Arc<VariantsFiles>>>;

/// Pages and metadata shared by all environments' resolutions, each fetched once.
pub struct Fetcher<'a> {
    config: &'a MirrorConfig,
    sources: Sources,
    /// The URLs of the owners' pages each project's page was made from, for the plan.
    page_urls: Mutex<HashMap<String, Vec<String>>>,
    client: &'a UpstreamClient,
    index: &'a IndexCache,
    files: &'a FileCache,
    pages: Mutex<HashMap<String, PageSlot>>,
    metadata: Mutex<HashMap<String, MetadataSlot>>,
    variants: Mutex<HashMap<String, VariantsSlot>>,
}

impl<'a> Fetcher<'a> {
    /// A fetcher reading pages through `index` and metadata files through `files`.
    pub fn new(
        config: &'a MirrorConfig,
        client: &'a UpstreamClient,
        index: &'a IndexCache,
        files: &'a FileCache,
    ) -> Self {
        Fetcher {
            config,
            sources: config.sources(),
            page_urls: Mutex::default(),
            client,
            index,
            files,
            pages: Mutex::default(),
            metadata: Mutex::default(),
            variants: Mutex::default(),
        }
    }

    /// The configuration resolved.
    pub fn config(&self) -> &'a MirrorConfig {
        self.config
    }

    /// The aggregated page of `project` from every source that owns it, merged.
    pub(super) async fn page(
        &self,
        project: &str,
    ) -> Result<Option<Arc<CachedPage>>, ResolveError> {
        let slot = self
            .pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(project.to_string())
            .or_default()
            .clone();
        slot.get_or_try_init(|| async {
            let pages = ProjectPages::fetch(&self.sources, self.index, self.client, project, None)
                .await
                .map_err(|failed| ResolveError::Page {
                    project: project.to_string(),
                    host: upstream_label(failed.error.url()),
                    source: failed.error,
                })?;
            // A source that failed would leave its builds out of the store unnoticed.
            let pages = match pages {
                Some(pages) if !pages.failed.is_empty() => {
                    let failed = pages
                        .into_failure(&self.sources, project)
                        .expect("a source failed");
                    return Err(ResolveError::Page {
                        project: project.to_string(),
                        host: upstream_label(failed.error.url()),
                        source: failed.error,
                    });
                }
                other => other,
            };
            Ok(pages.map(|pages| {
                self.page_urls
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(
                        project.to_string(),
                        pages.urls().map(str::to_string).collect(),
                    );
                pages.as_cached()
            }))
        })
        .await
        .cloned()
    }

    /// A per-build source's page (`torch-2.9.0+cu129.html`), through the index cache (so the
    /// store holds it); `None` for a 404: that build has no files.
    pub(super) async fn template_page(
        &self,
        url: &str,
    ) -> Result<Option<Arc<CachedPage>>, wheelgate_index::cache::index::IndexError> {
        self.index.get(self.client, url).await
    }

    /// Records template pages `project`'s files were listed on, for the plan.
    pub(super) fn add_page_urls(&self, project: &str, urls: &[String]) {
        let mut known = self
            .page_urls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let list = known.entry(project.to_string()).or_default();
        for url in urls {
            if !list.contains(url) {
                list.push(url.clone());
            }
        }
    }

    /// The upstream pages `project`'s page was made from (after [`Fetcher::page`]).
    pub(super) fn page_urls(&self, project: &str) -> Vec<String> {
        self.page_urls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(project)
            .cloned()
            .unwrap_or_default()
    }

    /// The variants files (PEP 825) of `page`, read (and so stored) through the file cache and
    /// parsed, once for all environments; empty for a page without variant files.
    pub(super) async fn variants(&self, page: &CachedPage) -> Arc<VariantsFiles> {
        let slot = self
            .variants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(page.url.clone())
            .or_default()
            .clone();
        slot.get_or_init(|| async {
            Arc::new(
                read_variants_files(
                    self.files,
                    self.client,
                    false,
                    &page.page,
                    wheelgate_server::listing::Listing::Page(&page.url),
                )
                .await,
            )
        })
        .await
        .clone()
    }

    /// The metadata of one file: its PEP 658 file when the page offers one, else the wheel's;
    /// a variant wheel's with its PEP 817 `variant_label` markers decided for its label, as the
    /// server serves it. Fetched once per sync, failure included.
    pub(super) async fn metadata(
        &self,
        page: &CachedPage,
        file: &IndexFile,
    ) -> Result<Arc<Metadata>, Arc<MetadataFetchError>> {
        self.metadata_with(page, file, &[]).await
    }

    /// The metadata of `file` as the server serves it to a machine whose GPUs need the device
    /// extras `extras` (one per gfx target): where the file declares device extras and each of
    /// `extras` among them, with those extras' requirements made unconditional; else as it is
    /// (whether a missing extra leaves the version out is the caller's to judge).
    pub(super) async fn metadata_for(
        &self,
        page: &CachedPage,
        file: &IndexFile,
        extras: &[String],
    ) -> Result<Arc<Metadata>, Arc<MetadataFetchError>> {
        let plain = self.metadata(page, file).await?;
        if extras.is_empty()
            || plain.device_extras.is_empty()
            || !extras
                .iter()
                .all(|extra| plain.device_extras.contains(extra))
        {
            return Ok(plain);
        }
        self.metadata_with(page, file, extras).await
    }

    /// The metadata of `file` with `extras` required (none: as served to every machine), read
    /// once per sync for each, failure included.
    async fn metadata_with(
        &self,
        page: &CachedPage,
        file: &IndexFile,
        extras: &[String],
    ) -> Result<Arc<Metadata>, Arc<MetadataFetchError>> {
        let url = page.page.file_url(file, &page.url);
        let key = if extras.is_empty() {
            url.clone()
        } else {
            format!("{url}#{}", extras.join("+"))
        };
        let slot = self
            .metadata
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        slot.get_or_init(|| async {
            let read = async {
                let mut bytes = self.metadata_bytes(&url, &page.url, file).await?;
                if let Some(label) = variant_label(&file.filename) {
                    bytes =
                        decide_variant_label(&String::from_utf8_lossy(&bytes), label).into_bytes();
                }
                if !extras.is_empty() {
                    bytes = wheelgate_files::derive::metadata::with_extras_required(&bytes, extras);
                }
                Ok::<_, MetadataFetchError>(Arc::new(parse_metadata(&bytes, &file.filename)?))
            };
            read.await.map_err(Arc::new)
        })
        .await
        .clone()
    }

    /// The metadata bytes of `file` at `url`, listed on the page at `page_url`.
    async fn metadata_bytes(
        &self,
        url: &str,
        page_url: &str,
        file: &IndexFile,
    ) -> Result<Vec<u8>, MetadataFetchError> {
        let sha256 = match &file.core_metadata {
            CoreMetadata::Absent => {
                return Ok(
                    read_wheel_metadata(self.client, (url, Some(page_url)), &file.filename).await?,
                );
            }
            CoreMetadata::Present => None,
            CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
        };
        // The same spec the plan downloads, so the store keeps this copy.
        let spec = FileSpec {
            url: format!("{url}.metadata"),
            sha256,
            size: None,
            splice: None,
            listed_on: Some(Arc::from(page_url)),
        };
        // Refused past the limit as it arrives: nothing of a 100 MB "metadata" file is kept.
        let limit = wheelgate_files::cache::CORE_METADATA_LIMIT;
        let too_large = MetadataFetchError::TooLarge { limit };
        let cached = match self
            .files
            .fetch_small(self.client, &spec, false, limit as u64)
            .await
        {
            Err(err) if is_too_large(&err) => return Err(too_large),
            fetched => fetched?,
        };
        // As the server reads them: a core metadata file is kilobytes; a "metadata" file of
        // hundreds of megabytes is refused without holding it in memory.
        cached.read_small(limit).await.map_err(|err| match err {
            SmallReadError::TooLarge { .. } => too_large,
            // The download refused it as it arrived (a body without a length).
            SmallReadError::Io(source)
                if source
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<Arc<FileCacheError>>())
                    .is_some_and(|inner| is_too_large(inner)) =>
            {
                too_large
            }
            SmallReadError::Io(source) => MetadataFetchError::Read(source),
        })
    }
}

/// Whether a download was refused for its size ([`FileCache::fetch_small`]).
fn is_too_large(err: &FileCacheError) -> bool {
    matches!(err.root(), FileCacheError::TooLarge { .. })
}

/// The upstream pages of `project` on every source that owns it, for messages.
pub fn page_url(config: &MirrorConfig, project: &str) -> String {
    let sources = config.sources();
    sources
        .owners(project)
        .into_iter()
        .map(|id| sources.get(id).page_url(project, None))
        .collect::<Vec<_>>()
        .join("` and `")
}

/// Why resolution failed.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot fetch the index page of `{project}` from `{host}`")]
    Page {
        project: String,
        /// `host[:port]` of the page's URL, never its credentials.
        host: String,
        #[source]
        source: IndexError,
    },
    #[error("cannot read the metadata of `{project}` {version} (`{file}` from `{host}`)")]
    Metadata {
        project: String,
        version: String,
        file: String,
        /// `host[:port]` of the file's URL, never its credentials.
        host: String,
        #[source]
        source: Arc<MetadataFetchError>,
    },
    #[error(
        "the requirements cannot be resolved for the environment `{environment}` ({described}):\n{derivation}\nNo package was downloaded (only metadata); change the `[[package]]` versions or `[[constraint]]` entries, or drop this environment's Python, platform or backend"
    )]
    Conflict {
        environment: String,
        /// `Python 3.12, linux-x86_64, backend cu130`.
        described: String,
        /// `PubGrub`'s derivation in words, then notes on projects with no page or no file.
        derivation: String,
    },
    #[error("in the environment `{environment}`: {message}")]
    Unsupported {
        environment: String,
        message: String,
    },
    #[error(
        "`{project}` {version} has only an sdist for `{environment}`; its dependencies cannot be read without building it (pin a version with wheels)"
    )]
    SdistOnly {
        project: String,
        version: String,
        environment: String,
    },
}
