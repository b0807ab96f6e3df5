//! Resolution of every target environment: the declared requirements and everything they need,
//! as an installer on such a machine would choose it. The [`solver`](super::solver) decides;
//! this module feeds it: project pages through the index cache (each project only from the
//! upstream the server routes it to, so a name squatted on the general upstream is never
//! consulted for a PyTorch project), the files of each version that fit the environment (the
//! mirror's own [`select_files`], so PyTorch projects get exactly the build the server would
//! serve that environment's machine or backend), and core metadata: the PEP 658 `.metadata`
//! file through the file cache, else the wheel's `METADATA` by ranged reads.
//!
//! Environments are resolved concurrently; pages and metadata are fetched once for all of them.
//! When the solver stops for something unknown, that is fetched together with the pages of the
//! new requirements it will ask for next (and their newest version's metadata), then it solves
//! again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use futures_util::TryStreamExt;
use futures_util::future::{join_all, try_join_all};
use pep440_rs::{Version, VersionSpecifier, VersionSpecifiers};
use pubgrub::Ranges;
use tokio::sync::OnceCell;
use wheelgate_resolver::Catalog;
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::{CoreMetadata, IndexFile, ProjectPage};

use super::config::{MirrorConfig, PackageEntry};
use super::environment::{Build, Environment, environments};
use super::metadata::{Metadata, MetadataError, parse_metadata};
use super::select::select_files;
use super::solver::{Candidate, Need, ProjectState, RootRequirement, Solve, Universe, solve};
use super::wheel_metadata::{WheelMetadataError, read_wheel_metadata};
use crate::cache::files::{FileCache, FileCacheError, FileSpec};
use crate::cache::index::{CachedPage, IndexCache, IndexError};
use crate::upstream::{Upstream, UpstreamClient, route};

/// One project of an environment's resolution.
#[derive(Debug, Clone)]
pub struct ResolvedPackage {
    /// Normalized name.
    pub project: String,
    /// The public version (no local label).
    pub version: Version,
    /// The full version of its files (`2.9.0+cu130`).
    pub full_version: String,
    pub upstream: Upstream,
    /// The page its files are listed on.
    pub page: Arc<CachedPage>,
    /// Indices into the page's files: every file of this version that fits the environment.
    pub files: Vec<usize>,
}

impl ResolvedPackage {
    /// The build's label where it has one (`cu130`, `cpu`).
    pub fn backend(&self) -> Option<&str> {
        self.full_version.split_once('+').map(|(_, local)| local)
    }

    /// The files on the page.
    pub fn index_files(&self) -> impl Iterator<Item = &IndexFile> {
        self.files.iter().map(|&i| &self.page.page.files[i])
    }
}

/// One environment's complete, consistent set.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub environment: Environment,
    /// By project name.
    pub packages: Vec<ResolvedPackage>,
}

/// Why resolution failed.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot fetch the index page of `{project}`")]
    Page {
        project: String,
        #[source]
        source: IndexError,
    },
    #[error("cannot read the metadata of `{file}`")]
    Metadata {
        file: String,
        #[source]
        source: MetadataFetchError,
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

/// How metadata could not be fetched or read.
#[derive(Debug, thiserror::Error)]
pub enum MetadataFetchError {
    #[error(transparent)]
    Download(#[from] FileCacheError),
    #[error("reading the downloaded file failed")]
    Read(#[source] std::io::Error),
    #[error(transparent)]
    Wheel(#[from] WheelMetadataError),
    #[error(transparent)]
    Parse(#[from] MetadataError),
}

/// The page of a project, or `None` where its upstream has none.
type PageSlot = Arc<OnceCell<Option<Arc<CachedPage>>>>;
type MetadataSlot = Arc<OnceCell<Arc<Metadata>>>;

/// Pages and metadata shared by all environments' resolutions, each fetched once.
pub struct Fetcher<'a> {
    config: &'a MirrorConfig,
    client: &'a UpstreamClient,
    index: &'a IndexCache,
    files: &'a FileCache,
    pages: Mutex<HashMap<String, PageSlot>>,
    metadata: Mutex<HashMap<String, MetadataSlot>>,
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
            client,
            index,
            files,
            pages: Mutex::default(),
            metadata: Mutex::default(),
        }
    }

    /// The aggregated page of `project` on the upstream that owns it.
    async fn page(&self, project: &str) -> Result<Option<Arc<CachedPage>>, ResolveError> {
        let slot = self
            .pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(project.to_string())
            .or_default()
            .clone();
        let url = page_url(self.config, project);
        slot.get_or_try_init(|| async {
            self.index
                .get(self.client, &url)
                .await
                .map_err(|source| ResolveError::Page {
                    project: project.to_string(),
                    source,
                })
        })
        .await
        .cloned()
    }

    /// The metadata of one file: its PEP 658 file when the page offers one, else the wheel's.
    async fn metadata(
        &self,
        page: &CachedPage,
        file: &IndexFile,
    ) -> Result<Arc<Metadata>, ResolveError> {
        let url = page.page.file_url(file, &page.url);
        let slot = self
            .metadata
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(url.clone())
            .or_default()
            .clone();
        slot.get_or_try_init(|| async {
            let bytes =
                self.metadata_bytes(&url, file)
                    .await
                    .map_err(|source| ResolveError::Metadata {
                        file: file.filename.clone(),
                        source,
                    })?;
            parse_metadata(&bytes, &file.filename)
                .map(Arc::new)
                .map_err(|source| ResolveError::Metadata {
                    file: file.filename.clone(),
                    source: source.into(),
                })
        })
        .await
        .cloned()
    }

    async fn metadata_bytes(
        &self,
        url: &str,
        file: &IndexFile,
    ) -> Result<Vec<u8>, MetadataFetchError> {
        let sha256 = match &file.core_metadata {
            CoreMetadata::Absent => {
                return Ok(read_wheel_metadata(self.client, url, &file.filename).await?);
            }
            CoreMetadata::Present => None,
            CoreMetadata::Hashes(hashes) => hashes.get("sha256").cloned(),
        };
        // The same spec the plan downloads, so the store keeps this copy.
        let spec = FileSpec {
            url: format!("{url}.metadata"),
            sha256,
            size: None,
        };
        let cached = self.files.fetch(self.client, &spec, false).await?;
        let chunks: Vec<bytes::Bytes> = cached
            .stream(0, None)
            .try_collect()
            .await
            .map_err(MetadataFetchError::Read)?;
        Ok(chunks.concat())
    }
}

/// Resolves every environment of the configuration's resolving entries.
pub async fn resolve_all(fetcher: &Fetcher<'_>) -> Result<Vec<Resolution>, ResolveError> {
    let constraints: BTreeMap<String, Ranges<Version>> =
        fetcher
            .config
            .constraints
            .iter()
            .fold(BTreeMap::new(), |mut map, constraint| {
                let range = Ranges::from(constraint.versions.clone());
                map.entry(constraint.project.clone())
                    .and_modify(|r: &mut Ranges<Version>| *r = r.intersection(&range))
                    .or_insert(range);
                map
            });
    let environments = environments(fetcher.config);
    try_join_all(
        environments
            .into_iter()
            .map(|env| resolve_environment(fetcher, env, &constraints)),
    )
    .await
}

/// What one environment knows: the solver's universe, and for each version the files behind it.
struct EnvironmentState {
    universe: Universe,
    pages: HashMap<String, Arc<CachedPage>>,
    files: HashMap<String, BTreeMap<Version, Vec<usize>>>,
}

async fn resolve_environment(
    fetcher: &Fetcher<'_>,
    environment: Environment,
    constraints: &BTreeMap<String, Ranges<Version>>,
) -> Result<Resolution, ResolveError> {
    let roots: Vec<RootRequirement> = fetcher
        .config
        .packages
        .iter()
        .filter(|entry| entry.dependencies && environment.declares(entry))
        .map(|entry| RootRequirement {
            project: entry.project.clone(),
            versions: entry.versions.clone(),
            extras: entry.extras.clone(),
        })
        .collect();
    let python = format!(
        "{}.{}.0",
        environment.python.major, environment.python.minor
    );
    let mut state = EnvironmentState {
        universe: Universe {
            python: python.parse().expect("a valid version"),
            markers: environment.markers().clone(),
            projects: HashMap::new(),
            metadata: HashMap::new(),
        },
        pages: HashMap::new(),
        files: HashMap::new(),
    };
    loop {
        match solve(&state.universe, &roots, constraints) {
            Solve::Resolved(versions) => {
                return Ok(resolution(&environment, &state, versions));
            }
            Solve::Conflict(derivation) => {
                return Err(conflict(fetcher.config, &environment, &state, derivation));
            }
            Solve::Stopped(Need::Unsupported(message)) => {
                return Err(ResolveError::Unsupported {
                    environment: environment.name.clone(),
                    message,
                });
            }
            Solve::Stopped(Need::Page(project)) => {
                load_projects(fetcher, &environment, &mut state, vec![project]).await?;
            }
            Solve::Stopped(Need::Metadata(project, version)) => {
                load_metadata(fetcher, &environment, &mut state, &project, &version).await?;
                // Ahead of the solver: the pages of what this version requires, and the
                // metadata of their newest versions.
                let wanted = requirements_of(&state, &project, &version);
                let unknown: Vec<String> = wanted
                    .into_iter()
                    .filter(|p| !state.universe.projects.contains_key(p))
                    .collect();
                load_projects(fetcher, &environment, &mut state, unknown.clone()).await?;
                prefetch_newest(fetcher, &environment, &mut state, &unknown).await?;
            }
        }
    }
}

/// The projects `project` at `version` requires here (markers evaluated, extras ignored).
fn requirements_of(state: &EnvironmentState, project: &str, version: &Version) -> Vec<String> {
    let Some(metadata) = state
        .universe
        .metadata
        .get(&(project.to_string(), version.clone()))
    else {
        return Vec::new();
    };
    let mut names: BTreeSet<String> = BTreeSet::new();
    for requirement in &metadata.requires_dist {
        if requirement.evaluate_markers(&state.universe.markers, &[]) {
            names.insert(normalize_name(requirement.name.as_ref()));
        }
    }
    names.into_iter().collect()
}

/// Fetches the pages of `projects` at once and records their versions for the environment.
async fn load_projects(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    projects: Vec<String>,
) -> Result<(), ResolveError> {
    let pages = try_join_all(projects.iter().map(|p| fetcher.page(p))).await?;
    for (project, page) in projects.into_iter().zip(pages) {
        let Some(page) = page else {
            state.universe.projects.insert(
                project.clone(),
                ProjectState::NoPage {
                    url: page_url(fetcher.config, &project),
                },
            );
            continue;
        };
        let (versions, files) = candidates(fetcher.config, environment, &project, &page.page);
        state
            .universe
            .projects
            .insert(project.clone(), ProjectState::Versions(versions));
        state.files.insert(project.clone(), files);
        state.pages.insert(project, page);
    }
    Ok(())
}

/// The metadata of the newest non-yanked version of each of `projects` (best effort: a failure
/// here is reported when the solver asks for that version, if it does).
async fn prefetch_newest(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    projects: &[String],
) -> Result<(), ResolveError> {
    let newest: Vec<(String, Version)> = projects
        .iter()
        .filter_map(|project| match state.universe.projects.get(project) {
            Some(ProjectState::Versions(versions)) => versions
                .iter()
                .rev()
                .find(|(_, c)| !c.yanked)
                .map(|(v, _)| (project.clone(), v.clone())),
            _ => None,
        })
        .collect();
    let results = join_all(newest.iter().map(|(project, version)| async {
        let file = metadata_file(environment, state, project, version).ok()?;
        let page = state.pages.get(project)?;
        fetcher.metadata(page, file).await.ok()
    }))
    .await;
    for ((project, version), metadata) in newest.into_iter().zip(results) {
        if let Some(metadata) = metadata {
            state.universe.metadata.insert((project, version), metadata);
        }
    }
    Ok(())
}

async fn load_metadata(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    project: &str,
    version: &Version,
) -> Result<(), ResolveError> {
    let file = metadata_file(environment, state, project, version)?;
    let page = &state.pages[project];
    let metadata = fetcher.metadata(page, file).await?;
    state
        .universe
        .metadata
        .insert((project.to_string(), version.clone()), metadata);
    Ok(())
}

/// The file whose metadata stands for `version` here: a wheel with a PEP 658 file, else any
/// wheel (read by ranges). Wheels of one version share their requirements, as installers assume.
fn metadata_file<'s>(
    environment: &Environment,
    state: &'s EnvironmentState,
    project: &str,
    version: &Version,
) -> Result<&'s IndexFile, ResolveError> {
    let page = &state.pages[project];
    let indices = state
        .files
        .get(project)
        .and_then(|f| f.get(version))
        .map_or(&[][..], Vec::as_slice);
    let wheels: Vec<&IndexFile> = indices
        .iter()
        .map(|&i| &page.page.files[i])
        .filter(|f| is_wheel(&f.filename))
        .collect();
    wheels
        .iter()
        .find(|f| f.core_metadata.is_present())
        .or_else(|| wheels.first())
        .copied()
        .ok_or_else(|| ResolveError::SdistOnly {
            project: project.to_string(),
            version: version.to_string(),
            environment: environment.name.clone(),
        })
}

/// The versions of `project` with files for the environment, and those files: the mirror's
/// selection for one Python, one platform and the environment's build; yanked versions marked.
fn candidates(
    config: &MirrorConfig,
    environment: &Environment,
    project: &str,
    page: &ProjectPage,
) -> (BTreeMap<Version, Candidate>, BTreeMap<Version, Vec<usize>>) {
    let catalog = Catalog::embedded();
    let upstream = route(catalog, project);
    let mut entry = PackageEntry {
        name: project.to_string(),
        project: project.to_string(),
        upstream,
        versions: Some(VersionSpecifiers::empty()),
        backends: Vec::new(),
        machines: Vec::new(),
        policy: config.policy.clone(),
        python: vec![environment.python],
        platforms: vec![environment.platform],
        dependencies: true,
        extras: Vec::new(),
    };
    match &environment.build {
        Build::Backend(backend) => entry.backends.push(backend.clone()),
        Build::Machine { machine, .. } => entry.machines.push(machine.as_ref().clone()),
        Build::None => {}
    }
    let mut versions = BTreeMap::new();
    let mut files: BTreeMap<Version, Vec<usize>> = BTreeMap::new();
    let selection = select_files(catalog, &entry, page);
    for &index in &selection.files {
        if let Some(version) = public_version(&page.files[index]) {
            versions.insert(version.clone(), Candidate { yanked: false });
            files.entry(version).or_default().push(index);
        }
    }
    // Pre-releases only where a declared requirement names one (PEP 440: `==2.10.0rc1`).
    let declared = config.packages.iter().filter(|p| p.project == project);
    for specifiers in declared.filter_map(|p| p.versions.as_ref()) {
        if !specifiers.iter().any(VersionSpecifier::any_prerelease) {
            continue;
        }
        entry.versions = Some(specifiers.clone());
        for index in select_files(catalog, &entry, page).files {
            if let Some(version) = public_version(&page.files[index])
                && version.any_prerelease()
            {
                versions.insert(version.clone(), Candidate { yanked: false });
                files.entry(version).or_default().push(index);
            }
        }
    }
    // Versions whose only files are yanked: selected only when pinned, as `==` pins select.
    let yanked: BTreeSet<Version> = page
        .files
        .iter()
        .filter(|f| f.is_yanked())
        .filter_map(public_version)
        .filter(|v| !versions.contains_key(v))
        .collect();
    for version in yanked {
        entry.versions = format!("=={version}").parse().ok();
        let selection = select_files(catalog, &entry, page);
        if !selection.files.is_empty() {
            versions.insert(version.clone(), Candidate { yanked: true });
            files.insert(version, selection.files);
        }
    }
    (versions, files)
}

fn public_version(file: &IndexFile) -> Option<Version> {
    let dist: DistFilename = file.filename.parse().ok()?;
    Some(dist.version().clone().without_local())
}

fn is_wheel(filename: &str) -> bool {
    std::path::Path::new(filename)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("whl"))
}

fn resolution(
    environment: &Environment,
    state: &EnvironmentState,
    versions: BTreeMap<String, Version>,
) -> Resolution {
    let packages = versions
        .into_iter()
        .map(|(project, version)| {
            let page = state.pages[&project].clone();
            let files = state.files[&project][&version].clone();
            let full_version = files
                .iter()
                .find_map(|&i| {
                    let dist: DistFilename = page.page.files[i].filename.parse().ok()?;
                    Some(dist.version().to_string())
                })
                .unwrap_or_else(|| version.to_string());
            ResolvedPackage {
                upstream: route(Catalog::embedded(), &project),
                project,
                version,
                full_version,
                page,
                files,
            }
        })
        .collect();
    Resolution {
        environment: environment.clone(),
        packages,
    }
}

/// The conflict error, with notes on projects that had no page or no files here.
fn conflict(
    config: &MirrorConfig,
    environment: &Environment,
    state: &EnvironmentState,
    derivation: String,
) -> ResolveError {
    let mut notes = String::new();
    for (project, known) in &state.universe.projects {
        match known {
            ProjectState::NoPage { url } if derivation.contains(project.as_str()) => {
                let _ = write!(notes, "\n- `{project}` has no page at `{url}`");
                if route(Catalog::embedded(), project) == Upstream::Pytorch {
                    let _ = write!(
                        notes,
                        " (a PyTorch project: only the PyTorch upstream is consulted, never `{}`)",
                        config.pypi_root()
                    );
                }
            }
            ProjectState::Versions(versions)
                if versions.is_empty() && derivation.contains(project.as_str()) =>
            {
                let _ = write!(
                    notes,
                    "\n- `{project}` has no file for Python {} on {}{}",
                    environment.python,
                    environment.platform,
                    build_text(&environment.build)
                );
            }
            _ => {}
        }
    }
    for constraint in &config.constraints {
        if derivation.contains(constraint.project.as_str()) {
            let _ = write!(
                notes,
                "\n- the `[[constraint]]` `{}{}` narrows every requirement on `{}` (`∅`: nothing is left)",
                constraint.name, constraint.versions, constraint.project
            );
        }
    }
    ResolveError::Conflict {
        environment: environment.name.clone(),
        described: format!(
            "Python {}, {}{}",
            environment.python,
            environment.platform,
            build_text(&environment.build)
        ),
        derivation: derivation + &notes,
    }
}

fn build_text(build: &Build) -> String {
    match build {
        Build::Backend(backend) => format!(", backend {backend}"),
        Build::Machine { number, .. } => format!(", declared machine {number}"),
        Build::None => String::new(),
    }
}

/// The upstream page of `project`: the server's `lookup::page_url` (PyTorch's aggregated
/// `<root>/<project>/`).
pub fn page_url(config: &MirrorConfig, project: &str) -> String {
    match route(Catalog::embedded(), project) {
        Upstream::Pytorch => format!("{}/{project}/", config.pytorch_root()),
        Upstream::General => format!("{}/{project}/", config.pypi_root()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wheelgate_resolver::index::parse_project_html;

    use super::*;

    /// download.pytorch.org's `/whl/cu130/torch/` as captured in `shared/fixtures`, or `None`
    /// (after saying so) where the shared fixtures are not checked out beside the workspace.
    fn real_cu130_torch_page() -> Option<ProjectPage> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/pytorch-index/whl_cu130_torch.html"
        );
        let Ok(html) = std::fs::read_to_string(path) else {
            println!("NOT RUN: fixture `{path}` is not readable");
            return None;
        };
        Some(parse_project_html(&html).unwrap())
    }

    fn files_of(
        page: &ProjectPage,
        python: &str,
        platform: &str,
        backend: &str,
        version: &str,
    ) -> (usize, Vec<String>) {
        let config = MirrorConfig::parse(
            "python = [\"3.12\"]\n[[package]]\nname = \"six\"\n",
            Path::new("mirror.toml"),
        )
        .unwrap();
        let environment = Environment::new(
            python.parse().unwrap(),
            platform.parse().unwrap(),
            Build::Backend(backend.parse().unwrap()),
        );
        let (versions, files) = candidates(&config, &environment, "torch", page);
        let names = files
            .get(&version.parse::<Version>().unwrap())
            .map(|indices| {
                indices
                    .iter()
                    .map(|&i| page.files[i].filename.clone())
                    .collect()
            })
            .unwrap_or_default();
        (versions.len(), names)
    }

    #[test]
    fn each_environment_gets_exactly_its_wheel_of_the_real_page() {
        let Some(page) = real_cu130_torch_page() else {
            return;
        };
        let (count, files) = files_of(&page, "3.12", "linux-x86_64", "cu130", "2.9.0");
        assert!(count >= 4, "2.9.0, 2.9.1, 2.10.0, 2.11.0 at least: {count}");
        assert_eq!(
            files,
            ["torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"]
        );
        let (_, files) = files_of(&page, "3.13t", "linux-aarch64", "cu130", "2.9.0");
        assert_eq!(
            files,
            ["torch-2.9.0+cu130-cp313-cp313t-manylinux_2_28_aarch64.whl"]
        );
        let (_, files) = files_of(&page, "3.10", "windows-x86_64", "cu130", "2.9.0");
        assert_eq!(files, ["torch-2.9.0+cu130-cp310-cp310-win_amd64.whl"]);
        // The CPU build is not on this page: no version at all for a cpu environment.
        let (count, _) = files_of(&page, "3.12", "linux-x86_64", "cpu", "2.9.0");
        assert_eq!(count, 0);
    }
}
