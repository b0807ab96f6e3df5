//! Selection over an index page: group a project's files by version and backend, decide per
//! version, and say which files a per-machine page keeps.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use pep440_rs::Version;

use crate::backend::Backend;
use crate::catalog::Catalog;
use crate::filename::{FilenameError, SdistFilename, WheelParts, normalize_name};
use crate::machine::{Arch, Machine, Os, Platform};
use crate::platform_tags::platform_matches;

use super::decide::{Decision, Offer, Policy, decide};

/// One file of a project page, as selection needs it.
#[derive(Debug, Clone, Copy)]
pub struct FileRef<'a> {
    pub filename: &'a str,
    /// The link as written on the page (its path may name the backend: `/whl/cu124/...`).
    pub url: &'a str,
}

impl<'a> From<&'a crate::index::IndexFile> for FileRef<'a> {
    fn from(file: &'a crate::index::IndexFile) -> Self {
        FileRef {
            filename: &file.filename,
            url: &file.url,
        }
    }
}

/// Why a file is left off a per-machine page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// Its backend was not chosen for its version.
    NotChosen { backend: Backend },
    /// A wheel-variant file (PEP 825): plain installers cannot parse its name.
    Variant,
    /// The filename is not a valid wheel or sdist name.
    Unparseable(FilenameError),
}

/// The choice for one version of a project.
#[derive(Debug, Clone)]
pub struct VersionSelection {
    /// The public version (without local label).
    pub version: Version,
    /// `None` when the version's files carry no backend (a pure-Python package): all kept.
    pub decision: Option<Decision>,
    /// Indices of the files a per-machine page keeps.
    pub kept: Vec<usize>,
}

/// Selection over a whole project page.
#[derive(Debug, Clone)]
pub struct PageSelection {
    pub project: String,
    /// Newest version first.
    pub versions: Vec<VersionSelection>,
    /// Files left off, with the reason.
    pub dropped: Vec<(usize, Dropped)>,
}

impl PageSelection {
    /// Whether file `index` stays on the per-machine page.
    pub fn keeps(&self, index: usize) -> bool {
        self.versions.iter().any(|v| v.kept.contains(&index))
    }
}

#[derive(Default)]
struct VersionFiles<'a> {
    /// Backend-specific wheels; `None` keys plain wheels of projects without a release train.
    /// Each wheel as its index and its compressed platform tag set (`win_amd64`).
    by_backend: BTreeMap<Option<Backend>, Vec<(usize, &'a str)>>,
    /// Sdists and other backend-neutral files, always kept.
    neutral: Vec<usize>,
}

/// Chooses, for every version on a project page, the build for `machine`.
pub fn select_page(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
) -> PageSelection {
    let project = normalize_name(project);
    let mut dropped = Vec::new();
    let versions = group_by_version(catalog, &project, files, &mut dropped);
    let mut selections = Vec::new();
    for (version, files) in versions.into_iter().rev() {
        let labelled = files.by_backend.keys().any(Option::is_some);
        if !labelled {
            let mut kept = files.neutral;
            kept.extend(files.by_backend.into_values().flatten().map(|(i, _)| i));
            kept.sort_unstable();
            selections.push(VersionSelection {
                version,
                decision: None,
                kept,
            });
            continue;
        }
        let train = catalog.train_release(&project, &version);
        let offers: Vec<Offer> = files
            .by_backend
            .iter()
            .filter_map(|(backend, wheels)| {
                backend.as_ref().map(|backend| Offer {
                    backend: backend.clone(),
                    has_platform_file: wheels
                        .iter()
                        .any(|(_, platform)| platform_matches(machine, platform.split('.'))),
                })
            })
            .collect();
        let mut decision = decide(catalog, machine, policy, train.release, &offers);
        if let Some(inferred) = &train.inferred {
            decision.notes.insert(0, inferred.to_string());
        }
        let mut kept = files.neutral;
        for (backend, wheels) in files.by_backend {
            match backend {
                Some(backend) if Some(&backend) == decision.chosen.as_ref() => {
                    kept.extend(wheels.iter().map(|(i, _)| *i));
                }
                Some(backend) => dropped.extend(wheels.iter().map(|(i, _)| {
                    (
                        *i,
                        Dropped::NotChosen {
                            backend: backend.clone(),
                        },
                    )
                })),
                // Plain wheels beside labelled ones, in a project without a release train: of
                // unknown build, so they are served only when no labelled build was chosen.
                None if decision.chosen.is_none() => {
                    kept.extend(wheels.iter().map(|(i, _)| *i));
                }
                None => {}
            }
        }
        kept.sort_unstable();
        selections.push(VersionSelection {
            version,
            decision: Some(decision),
            kept,
        });
    }
    // Indices are unique: an unstable sort gives the same order, without the stable sort's
    // buffer.
    dropped.sort_unstable_by_key(|(i, _)| *i);
    PageSelection {
        project,
        versions: selections,
        dropped,
    }
}

/// Groups a page's files by public version and backend; what cannot be served goes to `dropped`.
///
/// This runs on every cold page request over a page of thousands of files (download.pytorch.org's
/// aggregated `/whl/torch/` lists about 2,800), so each distinct text (a version, a local label)
/// is parsed once, and versions are gathered in a vector indexed through a hash map rather than
/// compared in a tree for every file.
fn group_by_version<'a>(
    catalog: &Catalog,
    project: &str,
    files: &[FileRef<'a>],
    dropped: &mut Vec<(usize, Dropped)>,
) -> BTreeMap<Version, VersionFiles<'a>> {
    let mut slots: Vec<(Version, VersionFiles<'a>)> = Vec::new();
    // Only torch and its release-train companions have a known default build for unlabelled
    // wheels; pytorch-triton and friends are published once, unlabelled, for every backend.
    let has_train = catalog.is_release_train_project(project);
    // A page repeats each version and local label once per Python and platform: parse each
    // distinct text once. `None`: the version text does not parse.
    let mut version_slots: FastMap<&str, Option<usize>> = FastMap::default();
    let mut public_slots: FastMap<&str, Option<usize>> = FastMap::default();
    let mut slot_of_version: FastMap<Version, usize> = FastMap::default();
    let mut parsed_labels: FastMap<&str, Option<Backend>> = FastMap::default();
    for (index, file) in files.iter().enumerate() {
        if file.filename.ends_with("-variants.json") {
            dropped.push((index, Dropped::Variant));
            continue;
        }
        if !has_extension(file.filename, b".whl") {
            match file.filename.parse::<SdistFilename>() {
                Ok(sdist) => {
                    let slot = slot_for(
                        sdist.version.without_local(),
                        &mut slots,
                        &mut slot_of_version,
                    );
                    slots[slot].1.neutral.push(index);
                }
                Err(err) => dropped.push((index, Dropped::Unparseable(err))),
            }
            continue;
        }
        let wheel = match WheelParts::split(file.filename) {
            Ok(wheel) => wheel,
            Err(err) => {
                dropped.push((index, Dropped::Unparseable(err)));
                continue;
            }
        };
        let slot = *version_slots.entry(wheel.version).or_insert_with(|| {
            // `2.9.0+cu128`, `2.9.0+cpu`, ... share one public version: parse it once, and
            // check the label alone (PEP 440: dot-, dash- or underscore-separated letters and
            // digits); anything unusual goes through the full parser.
            let public =
                match wheel.version.split_once('+') {
                    Some((public, local)) if is_plain_local_label(local) => public,
                    Some(_) => {
                        return wheel.version.parse::<Version>().ok().map(|v| {
                            slot_for(v.without_local(), &mut slots, &mut slot_of_version)
                        });
                    }
                    None => wheel.version,
                };
            *public_slots.entry(public).or_insert_with(|| {
                public
                    .parse::<Version>()
                    .ok()
                    .map(|v| slot_for(v.without_local(), &mut slots, &mut slot_of_version))
            })
        });
        let Some(slot) = slot else {
            let err = file
                .filename
                .parse::<crate::filename::WheelFilename>()
                .expect_err("the version did not parse");
            dropped.push((index, Dropped::Unparseable(err)));
            continue;
        };
        if wheel.variant_label.is_some() {
            dropped.push((index, Dropped::Variant));
            continue;
        }
        let label_backend = wheel.local_label().and_then(|label| {
            parsed_labels
                .entry(label)
                .or_insert_with(|| label.parse().ok())
                .clone()
        });
        let backend = label_backend
            .or_else(|| backend_from_url(file.url))
            .or_else(|| {
                // An unlabelled wheel of a PyTorch release is the release's default build for the
                // wheel's platform (PyPI's torch on Linux x86_64 is a CUDA build).
                has_train
                    .then(|| plain_backend(catalog, project, &slots[slot].0, &wheel))
                    .flatten()
            });
        slots[slot]
            .1
            .by_backend
            .entry(backend)
            .or_default()
            .push((index, wheel.platform));
    }
    slots.into_iter().collect()
}

/// The slot of public version `version`, added when new (`2.4` and `2.4.0` share one).
fn slot_for(
    version: Version,
    slots: &mut Vec<(Version, VersionFiles<'_>)>,
    slot_of_version: &mut FastMap<Version, usize>,
) -> usize {
    *slot_of_version
        .entry(version)
        .or_insert_with_key(|version| {
            slots.push((version.clone(), VersionFiles::default()));
            slots.len() - 1
        })
}

/// A PEP 440 local version label of the plain form (`cu128`, `rocm6.2.4`, `cpu.cxx11.abi`):
/// segments of ASCII letters and digits separated by `.`, `-` or `_`.
fn is_plain_local_label(label: &str) -> bool {
    !label.is_empty()
        && label.split(['.', '-', '_']).all(|segment| {
            !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Whether `filename` ends in `extension` (`.whl`), in any case.
fn has_extension(filename: &str, extension: &[u8]) -> bool {
    let name = filename.as_bytes();
    name.len() > extension.len()
        && name[name.len() - extension.len()..].eq_ignore_ascii_case(extension)
}

/// A hash map keyed by short texts and versions of one page: `FxHash` (rustc's hasher) instead
/// of `SipHash`, since the keys come from one upstream page and no table outlives the call.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// rustc's `FxHash`: one multiply per word; fast on short keys.
#[derive(Default)]
struct FxHasher(u64);

const FX_SEED: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        for &byte in chunks.remainder() {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(FX_SEED);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The backend named by the directory of a link (`/whl/cu124/torch-2.5.0-...whl`), which
/// download.pytorch.org uses for the few wheels that carry no local label.
fn backend_from_url(url: &str) -> Option<Backend> {
    let path = url.split(['#', '?']).next().unwrap_or_default();
    let mut segments = path.rsplit('/');
    segments.next()?;
    segments.next()?.parse().ok()
}

fn plain_backend(
    catalog: &Catalog,
    project: &str,
    version: &Version,
    wheel: &WheelParts<'_>,
) -> Option<Backend> {
    let platform = wheel_platform(wheel)?;
    let train = catalog.train_release(project, version);
    catalog.plain_backend(train.release, platform)
}

/// The platform a wheel is built for, from its first platform tag.
fn wheel_platform(wheel: &WheelParts<'_>) -> Option<Platform> {
    let tag = wheel.platform_tags().next()?;
    let (os, arch) = if tag.starts_with("macosx_") {
        (
            Os::Macos,
            if tag.ends_with("_x86_64") {
                Arch::X86_64
            } else {
                Arch::Aarch64
            },
        )
    } else if tag == "win_amd64" {
        (Os::Windows, Arch::X86_64)
    } else if tag == "win_arm64" {
        (Os::Windows, Arch::Aarch64)
    } else if tag.ends_with("_x86_64") {
        (Os::Linux, Arch::X86_64)
    } else if tag.ends_with("_aarch64") {
        (Os::Linux, Arch::Aarch64)
    } else {
        return None;
    };
    Some(Platform { os, arch })
}
