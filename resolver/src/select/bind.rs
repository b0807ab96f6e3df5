//! One build for the whole stack, bound by metadata, as a pure step after [`select_page`]: a
//! file of a PyTorch project outside torch's release train (xformers, fbgemm-gpu, torchrec, ...)
//! whose core metadata pins torch to one release (`Requires-Dist: torch==2.9.0`) is built
//! against that release's build of torch. Of a version's builds, only the one torch of that
//! release gets on this machine is kept; a version without that build is dropped, so the
//! installer moves to one that has it.
//!
//! Reading the metadata is the caller's: the proxy reads PEP 658 files or wheels by ranges, an
//! installer embedding this crate has its own. The steps: [`bound_builds`] says which files
//! stand for which build, the caller reads the pins still needed ([`BoundBuilds::pending`],
//! until none is), and [`apply_pins`] keeps, per version, the build that matches torch.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pep440_rs::Version;

use super::torch_pin::TorchPin;
use super::{Considered, Decision, FileRef, PageSelection, Policy, Rejection, select_page};
use crate::{Backend, Catalog, Machine};

/// The build torch gets on a machine, per public version, as its page's selection says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorchChoices {
    /// Every torch version on the page, oldest first.
    pub versions: Vec<Version>,
    /// The chosen build of each version that has one.
    pub chosen: BTreeMap<Version, Backend>,
}

impl TorchChoices {
    /// From the selection of torch's page for the machine.
    pub fn from_selection(selection: &PageSelection) -> TorchChoices {
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

/// A version's build: its public version and backend.
pub type Build = (Version, Backend);

/// The files of each offered build, per version, as pinning that backend selects them.
#[derive(Debug, Clone, Default)]
pub struct BoundBuilds(HashMap<Build, Vec<usize>>);

impl BoundBuilds {
    /// The reads [`apply_pins`] still needs, given the `pins` read so far: per version, the
    /// first build in the decision's order whose pin is unknown, unless an earlier build
    /// already decides the version. Reading these, then asking again until none is left, reads
    /// one build per version where the machine's own choice matches torch (the common case),
    /// not every build of every version.
    pub fn pending(
        &self,
        selection: &PageSelection,
        pins: &Pins,
        torch: &TorchChoices,
    ) -> Vec<(Build, usize)> {
        let mut reads = Vec::new();
        for version in &selection.versions {
            let Some(decision) = &version.decision else {
                continue;
            };
            for considered in &decision.considered {
                let key = (version.version.clone(), considered.backend.clone());
                let Some(files) = self.files(&key) else {
                    continue;
                };
                match pins.get(&key) {
                    None => {
                        reads.push((key, files[0]));
                        break;
                    }
                    Some(Ok(pin)) if decides(pin, considered, torch) => break,
                    Some(_) => {}
                }
            }
        }
        reads.sort_by_key(|&(_, index)| index);
        reads
    }

    /// The files of `build`, if it is offered.
    pub fn files(&self, build: &Build) -> Option<&Vec<usize>> {
        self.0.get(build)
    }
}

/// Whether a build with `pin` settles its version in [`choose_build`]: kept (built against a
/// torch that gets this build here, or against no single release and running here).
fn decides(pin: &TorchPin, considered: &Considered, torch: &TorchChoices) -> bool {
    match pin.bound_to(&torch.versions) {
        Some(release) => torch.chosen.get(release) == Some(&considered.backend),
        None => considered
            .rejection
            .as_ref()
            .is_none_or(Rejection::is_usable),
    }
}

/// Each build's pin, or why its metadata could not be read.
pub type Pins = HashMap<Build, Result<TorchPin, String>>;

/// The builds `selection` (of `files`, `project`'s page, for `machine`) offers, each with the
/// files pinning its backend keeps.
pub fn bound_builds(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
    selection: &PageSelection,
) -> BoundBuilds {
    let offered: BTreeSet<Backend> = selection
        .versions
        .iter()
        .filter_map(|v| v.decision.as_ref())
        .flat_map(|d| d.considered.iter().map(|c| c.backend.clone()))
        .collect();
    let mut builds = HashMap::new();
    for backend in offered {
        let pinned = Policy {
            pinned: Some(backend.clone()),
            prefer: policy.prefer.clone(),
        };
        for version in select_page(catalog, machine, &pinned, project, files).versions {
            let is_backend = version
                .decision
                .as_ref()
                .is_some_and(|d| d.chosen.as_ref() == Some(&backend));
            if is_backend && !version.kept.is_empty() {
                builds.insert((version.version, backend.clone()), version.kept);
            }
        }
    }
    BoundBuilds(builds)
}

/// Binds `selection` to torch's builds: per version, the first of its builds, in the
/// decision's order, whose pin names a torch release that gets that very build here (or that
/// pins no single release and runs here); none: the version is dropped. Each change is said in
/// the version's notes.
pub fn apply_pins(
    selection: &mut PageSelection,
    builds: &BoundBuilds,
    pins: &Pins,
    torch: &TorchChoices,
) {
    for version in &mut selection.versions {
        let Some(decision) = version.decision.as_mut() else {
            continue;
        };
        let (kept, mut verdicts) = choose_build(&version.version, decision, builds, pins, torch);
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
}

/// The first build of `version`, in the decision's order, built against the torch that gets
/// it here (or against no single torch release, and running here), with what was found.
fn choose_build(
    version: &Version,
    decision: &Decision,
    builds: &BoundBuilds,
    pins: &Pins,
    torch: &TorchChoices,
) -> (Option<(Backend, Vec<usize>)>, Vec<String>) {
    let mut verdicts = Vec::new();
    for considered in &decision.considered {
        let backend = &considered.backend;
        let key = (version.clone(), backend.clone());
        let (Some(files), Some(pin)) = (builds.files(&key), pins.get(&key)) else {
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
