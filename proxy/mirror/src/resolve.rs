//! Resolution of every target environment: the declared requirements and everything they need,
//! as an installer on such a machine would choose it. The [`solver`](super::solver) decides;
//! this module feeds it: project pages and core metadata from the [`fetch`](super::fetch)er
//! (each project only from the upstream the server routes it to, so a name squatted on the
//! general upstream is never consulted for a PyTorch project) and the versions that have files
//! for the environment ([`candidates`](super::candidates)).
//!
//! Environments are resolved concurrently; pages and metadata are fetched once for all of them.
//! When the solver stops for something unknown, that is fetched together with the pages of the
//! new requirements it will ask for next (and their newest version's metadata), then it solves
//! again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use futures_util::future::{join_all, try_join_all};
use pep440_rs::Version;
use pep508_rs::Requirement;
use pubgrub::Ranges;
use wheelgate_resolver::filename::{DistFilename, normalize_name};
use wheelgate_resolver::index::IndexFile;
use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::select::bind::TorchChoices;
use wheelgate_resolver::variants::lists_variants;

use super::bind::Binding;
use super::by_page::{self, BoundListing, environment_torch};
use super::candidates::{candidates, is_wheel};
use super::config::MirrorConfig;
use super::environment::{Build, Environment, environments};
use super::extras::{device_extras_of, missing_device_extra};
pub use super::fetch::{Fetcher, MetadataFetchError, ResolveError, page_url};
use super::solver::{Need, ProjectState, RootRequirement, Solve, Universe, solve};
use tracing::warn;
use wheelgate_files::metadata::Metadata;

use super::failure::error_chain;
use wheelgate_index::cache::index::CachedPage;
use wheelgate_index::metrics::upstream_label;
use wheelgate_index::sources::{ProjectKind, Sources};

/// One project of an environment's resolution.
#[derive(Debug, Clone)]
pub struct ResolvedPackage {
    /// Normalized name.
    pub project: String,
    /// The public version (no local label).
    pub version: Version,
    /// The full version of its files (`2.9.0+cu130`).
    pub full_version: String,
    pub kind: ProjectKind,
    /// The page its files are listed on.
    pub page: Arc<CachedPage>,
    /// Indices into the page's files: every file of this version that fits the environment.
    pub files: Vec<usize>,
    /// For a project of a per-build source: what each file of `page` is bound to.
    pub bound: Option<Arc<BoundListing>>,
    /// The device extras its wheels are served with (AMD's multi-arch torch on a machine with
    /// AMD GPUs: `device-gfx942`), each wheel then derived; empty for most.
    pub device_extras: Vec<String>,
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

/// Resolves every environment of the configuration's resolving entries.
pub async fn resolve_all(fetcher: &Fetcher<'_>) -> Result<Vec<Resolution>, ResolveError> {
    let constraints: BTreeMap<String, Ranges<Version>> =
        fetcher
            .config()
            .constraints
            .iter()
            .fold(BTreeMap::new(), |mut map, constraint| {
                let range = Ranges::from(constraint.versions.clone());
                map.entry(constraint.project.clone())
                    .and_modify(|r: &mut Ranges<Version>| *r = r.intersection(&range))
                    .or_insert(range);
                map
            });
    let environments = environments(fetcher.config());
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
    /// The projects of per-build sources, their files bound to torch's builds here.
    bound: HashMap<String, Arc<BoundListing>>,
    /// What torch gets here per version, once a per-build project needed it.
    torch: Option<TorchChoices>,
    /// How many versions of each project the solver asked metadata for.
    asked: HashMap<String, usize>,
}

async fn resolve_environment(
    fetcher: &Fetcher<'_>,
    environment: Environment,
    constraints: &BTreeMap<String, Ranges<Version>>,
) -> Result<Resolution, ResolveError> {
    let roots: Vec<RootRequirement> = fetcher
        .config()
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
            unusable: HashMap::new(),
        },
        pages: HashMap::new(),
        files: HashMap::new(),
        bound: HashMap::new(),
        torch: None,
        asked: HashMap::new(),
    };
    loop {
        match solve(&state.universe, &roots, constraints) {
            Solve::Resolved(versions) => {
                return Ok(resolution(fetcher.config(), &environment, &state, versions));
            }
            Solve::Conflict(derivation) => {
                return Err(conflict(fetcher.config(), &environment, &state, derivation));
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
                prefetch_older(fetcher, &environment, &mut state, &project, &version).await;
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
    let sources = fetcher.config().sources();
    let (per_build, projects): (Vec<String>, Vec<String>) = projects
        .into_iter()
        .partition(|p| !sources.per_build_owners(p).is_empty());
    for project in per_build {
        load_bound_project(fetcher, environment, state, &sources, project).await?;
    }
    let pages = try_join_all(projects.iter().map(|p| fetcher.page(p))).await?;
    for (project, page) in projects.into_iter().zip(pages) {
        let Some(page) = page else {
            state.universe.projects.insert(
                project.clone(),
                ProjectState::NoPage {
                    url: page_url(fetcher.config(), &project),
                },
            );
            continue;
        };
        let refs: Vec<FileRef<'_>> = page.page.files.iter().map(FileRef::from).collect();
        let variants = if lists_variants(&refs) {
            Some(fetcher.variants(&page).await)
        } else {
            None
        };
        // A machine's builds of a project built against torch follow torch's there.
        let binding = match &environment.build {
            Build::Machine { machine, .. } => {
                let kind = fetcher.config().sources().kind(&project);
                let machines = std::slice::from_ref(machine.as_ref());
                let policy = &fetcher.config().policy;
                Binding::read(fetcher, kind, &project, &page, machines, policy).await?
            }
            Build::Backend(_) | Build::None => None,
        };
        let (versions, files) = candidates(
            fetcher.config(),
            environment,
            &project,
            &page.page,
            variants.as_deref(),
            binding.as_ref(),
        );
        state
            .universe
            .projects
            .insert(project.clone(), ProjectState::Versions(versions));
        state.files.insert(project.clone(), files);
        state.pages.insert(project, page);
    }
    Ok(())
}

/// A per-build source's project: its files on the template pages of the builds torch gets
/// here, each version offered with the torch releases some file of it admits.
async fn load_bound_project(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    sources: &Sources,
    project: String,
) -> Result<(), ResolveError> {
    if state.torch.is_none() {
        state.torch = Some(environment_torch(fetcher, environment).await?);
    }
    let torch = state.torch.as_ref().expect("set above");
    let owners = sources.per_build_owners(&project);
    let listing = by_page::listing(fetcher, sources, &project, &owners, torch).await?;
    fetcher.add_page_urls(&project, &listing.urls);
    let (mut versions, mut files) = candidates(
        fetcher.config(),
        environment,
        &project,
        &listing.page.page,
        None,
        None,
    );
    // A version no torch release here admits cannot be installed beside any torch.
    versions.retain(|version, _| listing.solver_pin(version, torch).is_some());
    files.retain(|version, _| versions.contains_key(version));
    state
        .universe
        .projects
        .insert(project.clone(), ProjectState::Versions(versions));
    state.files.insert(project.clone(), files);
    state.pages.insert(project.clone(), listing.page.clone());
    state.bound.insert(project, Arc::new(listing));
    Ok(())
}

/// `result` with, for a per-build project, the torch pin its version stands for.
fn with_torch_pin(
    state: &EnvironmentState,
    project: &str,
    version: &Version,
    result: Result<Arc<Metadata>, Arc<MetadataFetchError>>,
) -> Result<Arc<Metadata>, Arc<MetadataFetchError>> {
    let (Some(listing), Some(torch)) = (state.bound.get(project), state.torch.as_ref()) else {
        return result;
    };
    let metadata = result?;
    let Some(pin) = listing.solver_pin(version, torch) else {
        return Ok(metadata);
    };
    let mut pinned = (*metadata).clone();
    pinned
        .requires_dist
        .push(Requirement::from_str(&format!("torch{pin}")).expect("a pin is a requirement"));
    Ok(Arc::new(pinned))
}

/// The metadata of the newest non-yanked version of each of `projects` (best effort: a failed
/// fetch is tried again and reported when the solver asks for that version, if it does; invalid
/// metadata is recorded at once, so it is read only once).
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
    prefetch(fetcher, environment, state, newest).await;
    Ok(())
}

/// How many older versions of a project are read ahead once the solver backtracks through it.
const BACKTRACK_AHEAD: usize = 16;

/// Once the solver asks for a second version of `project` (it is backtracking through its
/// versions, which it does one at a time), the metadata of the next [`BACKTRACK_AHEAD`] older
/// versions, read at once: a resolution walking back through hundreds of releases once read
/// their metadata one after another.
async fn prefetch_older(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    project: &str,
    version: &Version,
) {
    let asked = state.asked.entry(project.to_string()).or_default();
    *asked += 1;
    if *asked < 2 {
        return;
    }
    let older: Vec<(String, Version)> = match state.universe.projects.get(project) {
        Some(ProjectState::Versions(versions)) => versions
            .range(..version.clone())
            .rev()
            .filter(|(v, c)| {
                !c.yanked
                    && !state
                        .universe
                        .metadata
                        .contains_key(&(project.to_string(), (*v).clone()))
                    && !state
                        .universe
                        .unusable
                        .contains_key(&(project.to_string(), (*v).clone()))
            })
            .take(BACKTRACK_AHEAD)
            .map(|(v, _)| (project.to_string(), v.clone()))
            .collect(),
        _ => Vec::new(),
    };
    prefetch(fetcher, environment, state, older).await;
}

/// The metadata of `wanted` versions, read at once (best effort, as [`prefetch_newest`]).
async fn prefetch(
    fetcher: &Fetcher<'_>,
    environment: &Environment,
    state: &mut EnvironmentState,
    newest: Vec<(String, Version)>,
) {
    let results = join_all(newest.iter().map(|(project, version)| async {
        let file = metadata_file(environment, state, project, version).ok()?;
        let page = state.pages.get(project)?;
        let extras = device_extras_of(environment);
        let metadata = fetcher.metadata_for(page, file, &extras).await;
        let result = with_torch_pin(state, project, version, metadata);
        Some((
            file.filename.clone(),
            page.page.file_url(file, &page.url),
            result,
        ))
    }))
    .await;
    for ((project, version), fetched) in newest.into_iter().zip(results) {
        if let Some((filename, url, result)) = fetched {
            // Best effort: an upstream failure is met again when the solver asks.
            let _ = settle(
                environment,
                state,
                (project, version),
                &filename,
                &url,
                result,
            );
        }
    }
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
    let url = page.page.file_url(file, &page.url);
    let filename = file.filename.clone();
    let extras = device_extras_of(environment);
    let metadata = fetcher.metadata_for(page, file, &extras).await;
    let result = with_torch_pin(state, project, version, metadata);
    settle(
        environment,
        state,
        (project.to_string(), version.clone()),
        &filename,
        &url,
        result,
    )
}

/// Records what fetching a version's metadata (from `filename` at `url`) gave: the metadata;
/// invalid metadata as a reason the version is unavailable, skipped as pip and uv skip it (an
/// older version may do; if none does, the conflict names this reason); or the upstream's
/// failure as an error naming the project, version and host.
fn settle(
    environment: &Environment,
    state: &mut EnvironmentState,
    key: (String, Version),
    filename: &str,
    url: &str,
    result: Result<Arc<Metadata>, Arc<MetadataFetchError>>,
) -> Result<(), ResolveError> {
    let host = upstream_label(url);
    match result {
        Ok(metadata) => {
            if let Some(reason) = missing_device_extra(environment, &metadata) {
                state.universe.unusable.insert(key, reason);
                return Ok(());
            }
            state.universe.metadata.insert(key, metadata);
            Ok(())
        }
        Err(err) if err.is_invalid_metadata() => {
            let reason = format!(
                "because its metadata (`{filename}` from `{host}`) is invalid: {}",
                error_chain(&err)
            );
            warn!(environment = %environment.name, project = %key.0, version = %key.1, reason = %reason, "skipping a version with invalid metadata");
            state.universe.unusable.insert(key, reason);
            Ok(())
        }
        Err(source) => Err(ResolveError::Metadata {
            project: key.0,
            version: key.1.to_string(),
            file: filename.to_string(),
            host,
            source,
        }),
    }
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

fn resolution(
    config: &MirrorConfig,
    environment: &Environment,
    state: &EnvironmentState,
    versions: BTreeMap<String, Version>,
) -> Resolution {
    let sources = config.sources();
    let resolved_torch = versions.get("torch").cloned();
    let resolved_torch = resolved_torch.as_ref();
    let packages = versions
        .into_iter()
        .map(|(project, version)| {
            let page = state.pages[&project].clone();
            let mut files = state.files[&project][&version].clone();
            let bound = state.bound.get(&project).cloned();
            let declares_extras = state
                .universe
                .metadata
                .get(&(project.clone(), version.clone()))
                .is_some_and(|m| !m.device_extras.is_empty());
            let device_extras = if declares_extras {
                device_extras_of(environment)
            } else {
                Vec::new()
            };
            // Of a version listed for several torch releases, the files of the resolved one.
            if let (Some(listing), Some(torch)) = (&bound, resolved_torch) {
                files = listing.files_for(&files, torch);
            }
            let full_version = files
                .iter()
                .find_map(|&i| {
                    let dist: DistFilename = page.page.files[i].filename.parse().ok()?;
                    Some(dist.version().to_string())
                })
                .unwrap_or_else(|| version.to_string());
            ResolvedPackage {
                kind: sources.kind(&project),
                project,
                version,
                full_version,
                page,
                files,
                bound,
                device_extras,
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
    // By name, so the message is the same from run to run.
    let known: BTreeMap<&String, &ProjectState> = state.universe.projects.iter().collect();
    for (project, known) in known {
        match known {
            ProjectState::NoPage { url } if derivation.contains(project.as_str()) => {
                let _ = write!(notes, "\n- `{project}` has no page at `{url}`");
                let sources = config.sources();
                let owners: Vec<String> = sources
                    .owners(project)
                    .into_iter()
                    .map(|id| format!("`{}`", sources.get(id).name))
                    .collect();
                let _ = write!(
                    notes,
                    " (served only from the sources that own it: {}; no other index is consulted)",
                    owners.join(", ")
                );
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
