//! Selection over an index page: group a project's files by version and backend, decide per
//! version, and say which files a per-machine page keeps.

use std::collections::BTreeMap;

use pep440_rs::Version;

use crate::backend::{Backend, BackendParseError};
use crate::catalog::{Catalog, Release};
use crate::filename::{FilenameError, SdistFilename, WheelParts, normalize_name};
use crate::machine::{Arch, Machine, Os, Platform};
use crate::platform_tags::platform_matches;

use super::decide::{Decision, Offer, Policy, decide};
use super::reason::Rejection;
use super::signals::{ParsedNames, Verdict, judge, read_signals};
use super::text_hash::TextMap;

/// One file of a project page, as selection needs it.
#[derive(Debug, Clone, Copy)]
pub struct FileRef<'a> {
    /// The filename as written on the page.
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
    NotChosen {
        /// The file's backend.
        backend: Backend,
    },
    /// A wheel-variant file (PEP 825): plain installers cannot parse its name, so it is left to
    /// `variants::choose_variants`, which serves one variant per plain filename.
    Variant,
    /// The filename is not a valid wheel or sdist name.
    Unparseable(FilenameError),
    /// Its local label is shaped like a backend but names none (`+cu12.8`, `+xpu2`).
    UnknownBackend(BackendParseError),
    /// Its label and its directory name different backends, and the machine does not run the
    /// directory's reading (the stricter reading: both must run). Boxed: rare, and large
    /// beside the other variants in a list the size of a page.
    SignalsDisagree(Box<Disagreement>),
}

/// A file's label and directory that name different backends, and why the directory's
/// reading does not run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The backend the filename's local label names.
    pub label: Backend,
    /// The backend the link's directory names.
    pub directory: Backend,
    /// Why the directory's backend does not run on the machine.
    pub rejection: Rejection,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::NotChosen { backend } => write!(f, "{backend} was not chosen"),
            Dropped::Variant => {
                f.write_str("a wheel-variant file, which plain installers cannot read: served under its plain name only when it is the variant chosen for the machine")
            }
            Dropped::Unparseable(error) => write!(f, "{error}"),
            Dropped::UnknownBackend(error) => {
                write!(f, "{error}; a file of an unknown build is never served")
            }
            Dropped::SignalsDisagree(disagreement) => {
                let Disagreement {
                    label,
                    directory,
                    rejection,
                } = &**disagreement;
                write!(
                    f,
                    "labelled {label} but in the {directory} directory; by the stricter reading it must run as both, and {directory}: {rejection}"
                )
            }
        }
    }
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
    /// The normalized project name.
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

/// One wheel of a version: its index on the page, its platform tags (`manylinux_2_28_x86_64`,
/// dot-separated when several), and the backend its directory names where that disagrees with
/// its label.
type Wheel<'a> = (usize, &'a str, Option<Backend>);

#[derive(Default)]
struct VersionFiles<'a> {
    /// Backend-specific wheels; `None` keys plain wheels of projects without a release train.
    by_backend: BTreeMap<Option<Backend>, Vec<Wheel<'a>>>,
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
    // Most files of a page are dropped (all but one build per version): sized once.
    let mut dropped = Vec::with_capacity(files.len());
    let versions = group_by_version(catalog, &project, files, &mut dropped);
    let mut decisions = Decisions::default();
    let mut selections = Vec::new();
    for (version, files) in versions.into_iter().rev() {
        let labelled = files.by_backend.keys().any(Option::is_some);
        if !labelled {
            let mut kept = files.neutral;
            kept.extend(files.by_backend.into_values().flatten().map(|(i, ..)| i));
            kept.sort_unstable();
            selections.push(VersionSelection {
                version,
                decision: None,
                kept,
            });
            continue;
        }
        let train = catalog.train_release(&project, &version);
        let mut files = files;
        let signal_notes = judge_disagreements(
            catalog,
            machine,
            policy,
            train.release,
            &mut files,
            &mut dropped,
        );
        let offers: Vec<Offer> = files
            .by_backend
            .iter()
            .filter_map(|(backend, wheels)| {
                backend.as_ref().map(|backend| Offer {
                    backend: backend.clone(),
                    has_platform_file: wheels
                        .iter()
                        .any(|(_, platform, _)| platform_matches(machine, platform.split('.'))),
                })
            })
            .collect();
        let mut decision = decisions.decide(catalog, machine, policy, train.release, offers);
        if let Some(inferred) = &train.inferred {
            decision.notes.insert(0, inferred.to_string());
            decision.rests_on_inference = true;
        }
        decision.notes.extend(signal_notes);
        let mut kept = files.neutral;
        for (backend, wheels) in files.by_backend {
            match backend {
                Some(backend) if Some(&backend) == decision.chosen.as_ref() => {
                    kept.extend(wheels.iter().map(|(i, ..)| *i));
                }
                Some(backend) => dropped.extend(wheels.iter().map(|(i, ..)| {
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
                    kept.extend(wheels.iter().map(|(i, ..)| *i));
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
    PageSelection {
        project,
        versions: selections,
        dropped: in_page_order(dropped, files.len()),
    }
}

/// `dropped` in page order. Nearly every file of a page is dropped, and a sort moved each entry
/// (the size of a [`Dropped`]) again and again; each file is dropped once at most, so each
/// entry goes straight to its file's place, then the places are read in order.
fn in_page_order(dropped: Vec<(usize, Dropped)>, files: usize) -> Vec<(usize, Dropped)> {
    let count = dropped.len();
    let mut places: Vec<Option<Dropped>> = std::iter::repeat_with(|| None).take(files).collect();
    for (index, why) in dropped {
        debug_assert!(places[index].is_none(), "file {index} dropped twice");
        places[index] = Some(why);
    }
    let mut ordered = Vec::with_capacity(count);
    ordered.extend(
        places
            .into_iter()
            .enumerate()
            .filter_map(|(index, why)| why.map(|why| (index, why))),
    );
    ordered
}

/// The decisions of one page's selection, by release line and offers: the versions of a line
/// (`2.9.0`, `2.9.1`) mostly offer the same builds, and deciding again re-read the catalog's rules
/// and wrote their notes anew each time (a fifth of a selection).
#[derive(Default)]
struct Decisions<'c> {
    made: Vec<(&'c Release, Vec<Offer>, Decision)>,
}

impl<'c> Decisions<'c> {
    fn decide(
        &mut self,
        catalog: &Catalog,
        machine: &Machine,
        policy: &Policy,
        release: &'c Release,
        offers: Vec<Offer>,
    ) -> Decision {
        let made = self
            .made
            .iter()
            .find(|(line, made_for, _)| std::ptr::eq(*line, release) && *made_for == offers);
        if let Some((_, _, decision)) = made {
            return decision.clone();
        }
        let decision = decide(catalog, machine, policy, release, &offers);
        self.made.push((release, offers, decision.clone()));
        decision
    }
}

/// Groups a page's files by public version and backend; what cannot be served goes to `dropped`.
///
/// This runs over every file of a page of thousands per cold request, so each distinct text
/// (version, label, directory) is parsed once and each file costs a few hash lookups: files are
/// gathered per version text into slots, and only the slots are sorted by version.
fn group_by_version<'a>(
    catalog: &Catalog,
    project: &str,
    files: &[FileRef<'a>],
    dropped: &mut Vec<(usize, Dropped)>,
) -> BTreeMap<Version, VersionFiles<'a>> {
    let mut slots: Vec<VersionSlot<'a>> = Vec::new();
    // Only torch and its release-train companions have a known default build for unlabelled
    // wheels; pytorch-triton and friends are published once, unlabelled, for every backend.
    let has_train = catalog.is_release_train_project(project);
    // A page repeats each version and local label once per Python and platform: each distinct
    // version text maps to its slot (`None`: it does not parse).
    let mut slot_of_text: TextMap<&str, Option<usize>> = TextMap::default();
    let mut slot_of_public: TextMap<&str, usize> = TextMap::default();
    let mut parsed_names = ParsedNames::default();
    for (index, file) in files.iter().enumerate() {
        if file.filename.ends_with("-variants.json") {
            dropped.push((index, Dropped::Variant));
            continue;
        }
        if !has_extension(file.filename, ".whl") {
            match file.filename.parse::<SdistFilename>() {
                Ok(sdist) => {
                    let slot = slot_for(&mut slots, sdist.version.without_local());
                    slots[slot].neutral.push(index);
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
        let slot = *slot_of_text.entry(wheel.version).or_insert_with(|| {
            // `2.9.0+cu128` and `2.9.0+cpu` share a slot: found by the public text, without
            // comparing versions, once the first of them made it.
            let (public_text, local) = match wheel.version.split_once('+') {
                Some((public, local)) => (public, Some(local)),
                None => (wheel.version, None),
            };
            // Nor parsed, then: that public text parsed already, and a label of this shape
            // always does.
            if local.is_none_or(is_plain_local_label)
                && let Some(&slot) = slot_of_public.get(public_text)
            {
                return Some(slot);
            }
            let public = wheel.version.parse::<Version>().ok()?.without_local();
            Some(
                *slot_of_public
                    .entry(public_text)
                    .or_insert_with(|| slot_for(&mut slots, public)),
            )
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
        let signals = match read_signals(
            file.filename,
            wheel.local_label(),
            file.url,
            &mut parsed_names,
        ) {
            Ok(signals) => signals,
            Err(error) => {
                dropped.push((index, Dropped::UnknownBackend(error)));
                continue;
            }
        };
        let slot = &mut slots[slot];
        let backend = match signals.backend {
            Some(backend) => Some(backend),
            // An unlabelled wheel of a PyTorch release is the release's default build for the
            // wheel's platform (PyPI's torch on Linux x86_64 is a CUDA build).
            None if has_train => slot.plain_backend(catalog, project, &wheel),
            None => None,
        };
        slot.add(
            backend,
            (index, wheel.platform, signals.directory_disagrees),
        );
    }
    slots
        .into_iter()
        .map(|slot| {
            let files = VersionFiles {
                by_backend: slot.wheels.into_iter().collect(),
                neutral: slot.neutral,
            };
            (slot.version, files)
        })
        .collect()
}

/// The files of one public version while a page is grouped.
struct VersionSlot<'a> {
    version: Version,
    neutral: Vec<usize>,
    /// Per backend (few per version, so a list beats a map).
    wheels: Vec<(Option<Backend>, Vec<Wheel<'a>>)>,
    /// The default build of an unlabelled wheel, per platform.
    plain: Vec<(Platform, Option<Backend>)>,
}

impl<'a> VersionSlot<'a> {
    fn add(&mut self, backend: Option<Backend>, wheel: Wheel<'a>) {
        if let Some((_, wheels)) = self.wheels.iter_mut().find(|(b, _)| *b == backend) {
            wheels.push(wheel);
        } else {
            // A version's build has one wheel per Python and platform: a dozen or more.
            let mut wheels = Vec::with_capacity(16);
            wheels.push(wheel);
            self.wheels.push((backend, wheels));
        }
    }

    fn plain_backend(
        &mut self,
        catalog: &Catalog,
        project: &str,
        wheel: &WheelParts<'_>,
    ) -> Option<Backend> {
        let platform = wheel_platform(wheel)?;
        if let Some((_, backend)) = self.plain.iter().find(|(p, _)| *p == platform) {
            return backend.clone();
        }
        let train = catalog.train_release(project, &self.version);
        let backend = catalog.plain_backend(train.release, platform);
        self.plain.push((platform, backend.clone()));
        backend
    }
}

/// The slot of `version`, added when new (a version written two ways, `2.9` and `2.9.0`, is
/// one version).
fn slot_for(slots: &mut Vec<VersionSlot<'_>>, version: Version) -> usize {
    if let Some(at) = slots.iter().position(|slot| slot.version == version) {
        return at;
    }
    slots.push(VersionSlot {
        version,
        neutral: Vec::new(),
        wheels: Vec::new(),
        plain: Vec::new(),
    });
    slots.len() - 1
}

/// Whether `label` is a PEP 440 local version label of the plainest form, letters and digits in
/// segments joined by `.` (`cu128`, `rocm6.4`, `cpu`), which every version parser accepts.
fn is_plain_local_label(label: &str) -> bool {
    !label.is_empty()
        && label.split('.').all(|segment| {
            !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Whether `filename` ends in `suffix` (`.whl`), in any case; a byte comparison, as it runs
/// for every file of a page.
fn has_extension(filename: &str, suffix: &str) -> bool {
    filename.len() >= suffix.len()
        && filename.as_bytes()[filename.len() - suffix.len()..]
            .eq_ignore_ascii_case(suffix.as_bytes())
}

/// Judges the files whose label and directory disagree (see [`super::signals`]): those the
/// machine cannot run by the stricter reading are dropped, and a backend left without files is
/// no longer offered. Returns the notes that explain it.
fn judge_disagreements(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    release: &Release,
    files: &mut VersionFiles<'_>,
    dropped: &mut Vec<(usize, Dropped)>,
) -> Vec<String> {
    let mut pairs: BTreeMap<(Backend, Backend), usize> = BTreeMap::new();
    for (backend, wheels) in &files.by_backend {
        for (_, _, directory) in wheels {
            if let (Some(label), Some(directory)) = (backend, directory) {
                *pairs.entry((label.clone(), directory.clone())).or_default() += 1;
            }
        }
    }
    if pairs.is_empty() {
        return Vec::new();
    }
    let (verdicts, notes) = judge(catalog, machine, policy, release, &pairs);
    for (backend, wheels) in &mut files.by_backend {
        let Some(label) = backend else { continue };
        wheels.retain(|(index, _, directory)| {
            let Some(directory) = directory else {
                return true;
            };
            match &verdicts[&(label.clone(), directory.clone())] {
                Verdict::Kept => true,
                Verdict::Dropped(rejection) => {
                    dropped.push((
                        *index,
                        Dropped::SignalsDisagree(Box::new(Disagreement {
                            label: label.clone(),
                            directory: directory.clone(),
                            rejection: rejection.clone(),
                        })),
                    ));
                    false
                }
            }
        });
    }
    files.by_backend.retain(|_, wheels| !wheels.is_empty());
    notes
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
    } else if tag.ends_with("_s390x") {
        (Os::Linux, Arch::S390x)
    } else {
        return None;
    };
    Some(Platform { os, arch })
}
