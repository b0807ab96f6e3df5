//! One build for the whole stack, bound by metadata: a file of a PyTorch project outside torch's
//! release train (xformers, fbgemm-gpu, torchrec, torch-tensorrt, ...) whose core metadata pins
//! torch to one release (`Requires-Dist: torch==2.9.0`) is built against that release's build
//! of torch. Of a version's builds, only the one torch of that release gets on this machine is
//! kept; a version without that build is dropped, so the installer moves to one that has it.
//! (torch's own companions, torchvision and torchaudio, are bound by the catalog's release
//! trains in the resolver.)
//!
//! Without this, an H100 under driver 570 got torch 2.9.0 `+cu129` and xformers 0.0.33 `+cu128`
//! (pinning `torch==2.9.0`): pip installs both, and xformers' extension does not load.
//!
//! Each pin is read once per file (`metadata.rs`: its PEP 658 file, else the wheel's `METADATA`
//! by ranges) and remembered by sha256; a file whose metadata cannot be read is not kept, with
//! its reason.

pub mod by_page;
pub mod extras;
pub mod files;
pub mod metadata;
pub mod pin;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures_util::StreamExt;
use futures_util::stream;
use pep440_rs::Version;
use wheelgate_resolver::index::ProjectPage;
use wheelgate_resolver::select::{Decision, FileRef, PageSelection, Rejection};
use wheelgate_resolver::{Backend, Machine, Policy, select_page};

use self::pin::TorchPin;
use super::state::AppState;
use crate::sources::ProjectPages;
use crate::sources::pages::OwnersFailed;

/// Metadata reads in flight at once for one page.
const CONCURRENT_READS: usize = 16;

/// Whether `project`'s builds are bound by their metadata: a PyTorch project (selected per
/// machine) outside torch's release train.
pub fn applies(state: &AppState, project: &str) -> bool {
    state.sources.selects(project) && !state.catalog.is_release_train_project(project)
}

/// torch's pages as the machine's `/simple/torch/` reads them (`Ok(None)`: no torch anywhere),
/// for the rendering key and [`TorchChoices`]. Not counted in the sources' metrics: no client
/// asked for torch.
pub async fn torch_pages(
    state: &AppState,
    policy: &Policy,
) -> Result<Option<ProjectPages>, OwnersFailed> {
    ProjectPages::fetch(
        &state.sources,
        &state.index,
        &state.client,
        "torch",
        policy.pinned.as_ref(),
    )
    .await
}

/// The build torch gets on this machine, per public version, as `/simple/torch/` serves it.
#[derive(Debug, Default)]
pub struct TorchChoices {
    /// Every torch version on the page.
    pub versions: Vec<Version>,
    /// The chosen build of each version that has one.
    pub chosen: BTreeMap<Version, Backend>,
}

impl TorchChoices {
    /// From torch's pages (none: nothing is known, so no bound file is kept).
    pub fn of(
        state: &AppState,
        machine: &Machine,
        policy: &Policy,
        pages: Option<&ProjectPages>,
    ) -> TorchChoices {
        let Some(pages) = pages else {
            return TorchChoices::default();
        };
        let merged = pages.merged();
        // Offline, torch's page is what the store holds, as `/simple/torch/` serves it.
        let selection = if state.config.offline {
            let whole = merged.page();
            let offered = super::offline::offered(&whole, merged.base_url(), &state.files, true);
            let refs: Vec<FileRef<'_>> = offered.files.iter().map(FileRef::from).collect();
            select_page(state.catalog, machine, policy, "torch", &refs)
        } else {
            select_page(state.catalog, machine, policy, "torch", &merged.refs())
        };
        let mut versions: Vec<Version> = selection
            .versions
            .iter()
            .map(|v| v.version.clone())
            .collect();
        versions.sort();
        let chosen = selection
            .versions
            .iter()
            .filter_map(|v| {
                let backend = v.decision.as_ref()?.chosen.clone()?;
                Some((v.version.clone(), backend))
            })
            .collect();
        TorchChoices { versions, chosen }
    }
}

/// A project's page to bind: its name, and the page (fetched from `base_url`).
#[derive(Debug, Clone, Copy)]
pub struct Bindable<'a> {
    pub project: &'a str,
    pub page: &'a ProjectPage,
    pub base_url: &'a str,
}

/// Binds `selection` (of `page`, fetched from `base_url`) to torch's builds: per version, the
/// first of its builds, in the selection's order, whose metadata pins a torch release that gets
/// that very build here (or that pins no single release and runs here); none: the version is
/// dropped. Each change is said in the version's notes. Returns whether every pin was read (a
/// selection made without some should not be kept for long: the read may succeed next time).
pub async fn bind(
    state: &AppState,
    machine: &Machine,
    policy: &Policy,
    bound: Bindable<'_>,
    torch: &TorchChoices,
    selection: &mut PageSelection,
) -> bool {
    let Bindable {
        project,
        page,
        base_url,
    } = bound;
    let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    // Each offered backend's files per version, as a pin to that backend selects them.
    let offered: BTreeSet<Backend> = selection
        .versions
        .iter()
        .filter_map(|v| v.decision.as_ref())
        .flat_map(|d| d.considered.iter().map(|c| c.backend.clone()))
        .collect();
    let mut files_of: Builds = HashMap::new();
    for backend in offered {
        let pinned = Policy {
            pinned: Some(backend.clone()),
            prefer: policy.prefer.clone(),
        };
        for version in select_page(state.catalog, machine, &pinned, project, &refs).versions {
            let is_backend = version
                .decision
                .as_ref()
                .is_some_and(|d| d.chosen.as_ref() == Some(&backend));
            if is_backend && !version.kept.is_empty() {
                files_of.insert((version.version, backend.clone()), version.kept);
            }
        }
    }
    // One file's pin stands for its build of its version (every file of a build pins the same
    // torch: it was built against it).
    let reads: Vec<((Version, Backend), usize)> = files_of
        .iter()
        .map(|(key, files)| (key.clone(), files[0]))
        .collect();
    let pins: Pins = stream::iter(reads)
        .map(|(key, index)| read_pin(state, page, base_url, key, index))
        .buffer_unordered(CONCURRENT_READS)
        .collect()
        .await;
    let complete = pins.values().all(Result::is_ok);
    for version in &mut selection.versions {
        let Some(decision) = version.decision.as_mut() else {
            continue;
        };
        let (kept, mut verdicts) =
            choose_build(&version.version, decision, &files_of, &pins, torch);
        match kept {
            Some((backend, files)) => {
                decision.chosen = Some(backend);
                version.kept = files;
            }
            None if verdicts.is_empty() => continue,
            None => {
                decision.chosen = None;
                version.kept.clear();
                verdicts.push("no build matches the torch it was built against: this version is left out, so installers move to one that has it".to_string());
            }
        }
        // Nothing is said where the machine's own choice stands and no pin was involved.
        decision.notes.extend(verdicts);
    }
    complete
}

type Builds = HashMap<(Version, Backend), Vec<usize>>;
type Pins = HashMap<(Version, Backend), Result<TorchPin, String>>;

/// The first build of `version`, in the decision's order, built against the torch that gets
/// it here (or against no single torch release, and running here), with what was found.
fn choose_build(
    version: &Version,
    decision: &Decision,
    files_of: &Builds,
    pins: &Pins,
    torch: &TorchChoices,
) -> (Option<(Backend, Vec<usize>)>, Vec<String>) {
    let mut verdicts = Vec::new();
    for considered in &decision.considered {
        let backend = &considered.backend;
        let key = (version.clone(), backend.clone());
        let (Some(files), Some(pin)) = (files_of.get(&key), pins.get(&key)) else {
            continue;
        };
        let pin = match pin {
            Ok(pin) => pin,
            Err(error) => {
                verdicts.push(format!(
                    "{backend}: its metadata cannot be read ({error}), so it is not kept"
                ));
                continue;
            }
        };
        match pin.bound_to(&torch.versions) {
            Some(release) => {
                let torch_build = torch.chosen.get(release);
                let pinned = pin.describe();
                if torch_build == Some(backend) {
                    verdicts.push(format!("{backend}: built against torch {release} ({pinned}), which gets {backend} on this machine: kept"));
                    return (Some((backend.clone(), files.clone())), verdicts);
                }
                verdicts.push(match torch_build {
                    Some(other) => format!("{backend}: built against torch {release} ({pinned}), which gets {other} on this machine"),
                    None => format!("{backend}: built against torch {release} ({pinned}), of which no build runs on this machine"),
                });
            }
            None if considered
                .rejection
                .as_ref()
                .is_none_or(Rejection::is_usable) =>
            {
                // Not built against one torch release: the machine's rules decide.
                if !verdicts.is_empty() {
                    verdicts.push(format!(
                        "{backend}: {}, bound to no single torch release: kept",
                        pin.describe()
                    ));
                }
                return (Some((backend.clone(), files.clone())), verdicts);
            }
            None => {}
        }
    }
    (None, verdicts)
}

async fn read_pin(
    state: &AppState,
    page: &ProjectPage,
    base_url: &str,
    key: (Version, Backend),
    index: usize,
) -> ((Version, Backend), Result<TorchPin, String>) {
    let pin = metadata::torch_pin(state, page, base_url, &page.files[index]).await;
    (key, pin)
}
