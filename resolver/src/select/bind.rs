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

use super::group::wheel_platform;
use super::torch_pin::TorchPin;
use super::{Considered, Decision, FileRef, PageSelection, Policy, Rejection, select_page};
use crate::filename::WheelParts;
use crate::machine::Platform;
use crate::{Backend, Catalog, Machine};

/// The build torch gets on a machine, per public version, as its page's selection says: on the
/// machine's own platform, and on each other platform torch's page has wheels for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorchChoices {
    /// Every torch version on the page, oldest first.
    pub versions: Vec<Version>,
    /// The chosen build of each version that has one, on the machine's own platform.
    pub chosen: BTreeMap<Version, Backend>,
    /// The same on each other platform ([`super::PlatformChoice`]).
    pub elsewhere: Vec<(Platform, BTreeMap<Version, Backend>)>,
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
        let mut elsewhere: Vec<(Platform, BTreeMap<Version, Backend>)> = Vec::new();
        for version in &selection.versions {
            for choice in &version.platforms {
                let Some(backend) = &choice.decision.chosen else {
                    continue;
                };
                let at = if let Some(at) = elsewhere.iter().position(|(p, _)| *p == choice.platform)
                {
                    at
                } else {
                    elsewhere.push((choice.platform, BTreeMap::new()));
                    elsewhere.len() - 1
                };
                elsewhere[at]
                    .1
                    .insert(version.version.clone(), backend.clone());
            }
        }
        TorchChoices {
            versions,
            chosen,
            elsewhere,
        }
    }

    /// The builds torch gets on `platform` (`None`: the machine's own), per version.
    pub fn on(&self, platform: Option<Platform>) -> &BTreeMap<Version, Backend> {
        static NONE: BTreeMap<Version, Backend> = BTreeMap::new();
        match platform {
            None => &self.chosen,
            Some(platform) => self
                .elsewhere
                .iter()
                .find(|(p, _)| *p == platform)
                .map_or(&NONE, |(_, chosen)| chosen),
        }
    }
}

/// A version's build: its public version and backend.
pub type Build = (Version, Backend);

/// The files of each offered build, per version, as pinning that backend selects them, and
/// the platform each file of the page is built for.
#[derive(Debug, Clone)]
pub struct BoundBuilds {
    files: HashMap<Build, Vec<usize>>,
    /// Per file of the page, its wheel's platform (`None`: an sdist, or a tag naming none).
    platforms: Vec<Option<Platform>>,
    /// The machine's own platform, where a file of no platform goes.
    own: Platform,
}

impl BoundBuilds {
    /// The reads [`apply_pins`] still needs, given the `pins` read so far: per version and
    /// platform, the first build in the decision's order whose pin is unknown, unless an
    /// earlier build already decides it. Reading these, then asking again until none is left,
    /// reads one build per version where the machine's own choice matches torch (the common
    /// case), not every build of every version.
    pub fn pending(
        &self,
        selection: &PageSelection,
        pins: &Pins,
        torch: &TorchChoices,
    ) -> Vec<(Build, usize)> {
        let mut reads: Vec<(Build, usize)> = Vec::new();
        for version in &selection.versions {
            let Some(decision) = &version.decision else {
                continue;
            };
            let on_platforms = std::iter::once((decision, None)).chain(
                version
                    .platforms
                    .iter()
                    .map(|p| (&p.decision, Some(p.platform))),
            );
            for (decision, platform) in on_platforms {
                let chosen = torch.on(platform);
                for considered in &decision.considered {
                    let key = (version.version.clone(), considered.backend.clone());
                    let Some(files) = self.files_on(&key, platform.unwrap_or(self.own)) else {
                        continue;
                    };
                    match pins.get(&key) {
                        None => {
                            if !reads.iter().any(|(build, _)| *build == key) {
                                reads.push((key, files[0]));
                            }
                            break;
                        }
                        Some(Ok(pin)) if decides(pin, considered, &torch.versions, chosen) => {
                            break;
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        reads.sort_by_key(|&(_, index)| index);
        reads
    }

    /// The files of `build`, if it is offered.
    pub fn files(&self, build: &Build) -> Option<&Vec<usize>> {
        self.files.get(build)
    }

    /// The platform of file `index`'s wheel; the machine's own for a file of none.
    fn platform_of(&self, index: usize) -> Platform {
        self.platforms
            .get(index)
            .copied()
            .flatten()
            .unwrap_or(self.own)
    }

    /// The files of `build` built for `platform`, if it has any there.
    fn files_on(&self, build: &Build, platform: Platform) -> Option<&Vec<usize>> {
        self.files(build)
            .filter(|files| files.iter().any(|&i| self.platform_of(i) == platform))
    }
}

/// Whether a build with `pin` settles its version in [`choose_build`]: kept (built against a
/// torch that gets this build here, or against no single release and running here).
fn decides(
    pin: &TorchPin,
    considered: &Considered,
    versions: &[Version],
    chosen: &BTreeMap<Version, Backend>,
) -> bool {
    match pin.bound_to(versions) {
        Some(release) => chosen.get(release) == Some(&considered.backend),
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
        .flat_map(|v| {
            v.decision
                .iter()
                .chain(v.platforms.iter().map(|p| &p.decision))
        })
        .flat_map(|d| d.considered.iter().map(|c| c.backend.clone()))
        .collect();
    let mut builds = HashMap::new();
    let platforms = files
        .iter()
        .map(|file| {
            WheelParts::split(file.filename)
                .ok()
                .and_then(|wheel| wheel_platform(wheel.platform))
        })
        .collect();
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
    BoundBuilds {
        files: builds,
        platforms,
        own: machine.platform,
    }
}

/// Binds `selection` to torch's builds, on each platform apart: per version, the first of its
/// builds, in the decision's order there, whose pin names a torch release that gets that very
/// build on that platform (or that pins no single release and runs there); none: the version is
/// dropped there. Each change is said in the decision's notes.
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
        let own = bind_decision(
            (&version.version, builds.own),
            decision,
            builds,
            pins,
            torch.on(None),
            &torch.versions,
        );
        let elsewhere: Vec<Bound> = version
            .platforms
            .iter_mut()
            .map(|choice| {
                let chosen = torch.on(Some(choice.platform));
                bind_decision(
                    (&version.version, choice.platform),
                    &mut choice.decision,
                    builds,
                    pins,
                    chosen,
                    &torch.versions,
                )
            })
            .collect();
        if matches!(own, Bound::Unchanged)
            && elsewhere.iter().all(|b| matches!(b, Bound::Unchanged))
        {
            continue;
        }
        // Each file goes with its platform's binding; a file of no other platform listed (an
        // sdist, a tag naming none) goes with the machine's own.
        let bound_on = |platform: Platform| -> &Bound {
            version
                .platforms
                .iter()
                .position(|p| p.platform == platform)
                .map_or(&own, |at| &elsewhere[at])
        };
        let mut kept: Vec<usize> = version
            .kept
            .iter()
            .copied()
            .filter(|&index| matches!(bound_on(builds.platform_of(index)), Bound::Unchanged))
            .collect();
        // A kept build's files count on the platforms bound to it alone.
        for bound in std::iter::once(&own).chain(&elsewhere) {
            if let Bound::Kept(files) = bound {
                kept.extend(
                    files
                        .iter()
                        .copied()
                        .filter(|&index| std::ptr::eq(bound_on(builds.platform_of(index)), bound)),
                );
            }
        }
        kept.sort_unstable();
        kept.dedup();
        version.kept = kept;
    }
}

/// What binding did to one platform's decision.
enum Bound<'b> {
    /// Nothing was pinned there: the decision stands, and so do its files.
    Unchanged,
    /// A build was kept: its files (those of this platform count).
    Kept(&'b Vec<usize>),
    /// No build matches the torch it was built against: the version is left out there.
    Dropped,
}

/// Binds one platform's `decision` of `version`, given the builds torch gets there (`chosen`);
/// its choice and notes are updated.
fn bind_decision<'b>(
    version: (&Version, Platform),
    decision: &mut Decision,
    builds: &'b BoundBuilds,
    pins: &Pins,
    chosen: &BTreeMap<Version, Backend>,
    versions: &[Version],
) -> Bound<'b> {
    let (kept, mut verdicts) = choose_build(version, decision, builds, pins, chosen, versions);
    let bound = match kept {
        Some((backend, files)) => {
            decision.chosen = Some(backend);
            Bound::Kept(files)
        }
        None if verdicts.is_empty() => return Bound::Unchanged,
        None => {
            decision.chosen = None;
            verdicts.push("no build matches the torch it was built against: this version is left out, so installers move to one that has it".to_string());
            Bound::Dropped
        }
    };
    // Nothing is said where the machine's own choice stands and no pin was involved.
    decision.notes.extend(verdicts);
    bound
}

/// The first build of `version`, in the decision's order, built against the torch that gets
/// it here (or against no single torch release, and running here), with what was found.
fn choose_build<'b>(
    (version, platform): (&Version, Platform),
    decision: &Decision,
    builds: &'b BoundBuilds,
    pins: &Pins,
    chosen: &BTreeMap<Version, Backend>,
    versions: &[Version],
) -> (Option<(Backend, &'b Vec<usize>)>, Vec<String>) {
    let mut verdicts = Vec::new();
    for considered in &decision.considered {
        let backend = &considered.backend;
        let key = (version.clone(), backend.clone());
        let (Some(files), Some(pin)) = (builds.files_on(&key, platform), pins.get(&key)) else {
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
        match pin.bound_to(versions) {
            Some(release) => {
                let torch_build = chosen.get(release);
                let pinned = pin.describe();
                if torch_build == Some(backend) {
                    verdicts.push(format!("{backend}: built against torch {release} ({pinned}), which gets {backend} on this machine: kept"));
                    return (Some((backend.clone(), files)), verdicts);
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
                return (Some((backend.clone(), files)), verdicts);
            }
            None => {}
        }
    }
    (None, verdicts)
}
