//! Selection over an index page: group a project's files by version and backend, decide per
//! version, and say which files a per-machine page keeps.

use std::collections::BTreeMap;

use pep440_rs::Version;

use crate::backend::{Backend, BackendParseError};
use crate::catalog::{Catalog, Release};
use crate::filename::{FilenameError, normalize_name};
use crate::machine::{Machine, Platform};
use crate::platform_tags::platform_matches;

use super::decide::{Decision, Offer, Policy, decide};
use super::group::{FileGroups, VersionFiles, wheel_platform};
use super::reason::Rejection;
use super::signals::{Verdict, judge};

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
    /// Its backend was not chosen for its version on its platform.
    NotChosen {
        /// The file's backend.
        backend: Backend,
        /// The platform the file is built for, whose choice it is not (the machine's own for a
        /// wheel whose platform tag names none).
        platform: Platform,
    },
    /// A wheel-variant file (PEP 825): plain installers cannot parse its name, so it is left to
    /// `variants::choose_variants`, which serves one variant per plain filename.
    Variant,
    /// The filename is not a valid wheel or sdist name. Boxed: rare, and the error (its
    /// filename and reasons) half again the size of every other variant, in a list with an
    /// entry for nearly every file of a page.
    Unparseable(Box<FilenameError>),
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
            Dropped::NotChosen { backend, platform } => {
                write!(f, "{backend} was not chosen for {platform}")
            }
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
    /// Indices of the files a per-machine page keeps: on each platform, the chosen build's.
    pub kept: Vec<usize>,
    /// The choice on each other platform the version's wheels are built for, for the same
    /// accelerators there (`decision` is the machine's own platform's); empty when the version's
    /// files carry no backend.
    pub platforms: Vec<PlatformChoice>,
}

/// The choice for one version on a platform other than the machine's own.
#[derive(Debug, Clone)]
pub struct PlatformChoice {
    /// The platform.
    pub platform: Platform,
    /// The choice there, for the machine's accelerators ([`Machine::elsewhere`]).
    pub decision: Decision,
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

/// Chooses, for every version on a project page, the build for `machine` on each platform the
/// version's wheels are built for: on its own platform as it is, elsewhere with the same
/// accelerators ([`Machine::elsewhere`]).
pub fn select_page(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
) -> PageSelection {
    let mut groups = FileGroups::default();
    groups.add(files);
    select_grouped(catalog, machine, policy, project, files, &groups)
}

/// [`select_page`] from the page's files already grouped (`groups`, made from `files`, or
/// merged from the groupings of the pages `files` come from): what [`select_page`] chooses,
/// without its per-file part.
pub fn select_grouped(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
    groups: &FileGroups,
) -> PageSelection {
    select_grouped_for(
        catalog,
        machine,
        policy,
        project,
        files,
        groups,
        Reasons::Recorded,
    )
}

/// [`select_grouped`] without the reasons files are dropped for: its `dropped` is empty, all
/// else the same. What a page's rendering reads (the kept files, the versions and their
/// decisions), for less work: nearly every file of a page is dropped, and each reason was an
/// entry made, moved into page order and freed.
pub fn select_grouped_kept(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
    groups: &FileGroups,
) -> PageSelection {
    select_grouped_for(
        catalog,
        machine,
        policy,
        project,
        files,
        groups,
        Reasons::Skipped,
    )
}

/// Whether a selection keeps the reasons files are dropped for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reasons {
    Recorded,
    Skipped,
}

fn select_grouped_for(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    project: &str,
    files: &[FileRef<'_>],
    groups: &FileGroups,
    reasons: Reasons,
) -> PageSelection {
    if groups.len() != files.len() {
        // Groups of some other files: grouped again, rather than read out of bounds.
        let mut regrouped = FileGroups::default();
        regrouped.add(files);
        return select_grouped_for(
            catalog, machine, policy, project, files, &regrouped, reasons,
        );
    }
    let project = normalize_name(project);
    let keep_reasons = reasons == Reasons::Recorded;
    // Most files of a page are dropped (all but one build per version): sized once.
    let mut dropped = Vec::with_capacity(if keep_reasons { files.len() } else { 0 });
    if keep_reasons {
        dropped.extend_from_slice(groups.dropped());
    }
    let versions = groups.versions(catalog, &project, files);
    let mut decisions = Decisions::default();
    let mut elsewhere = Elsewhere::default();
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
                platforms: Vec::new(),
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
        let offers = offers_on(machine, &files);
        let mut decision = decisions.decide(catalog, machine, policy, train.release, offers);
        if let Some(inferred) = &train.inferred {
            decision.notes.insert(0, inferred.to_string());
            decision.rests_on_inference = true;
        }
        decision.notes.extend(signal_notes);
        // Every other platform the version's wheels cover gets its own choice, for the same
        // accelerators there: one page then serves a cross-platform resolve or a universal lock.
        let wheel_platforms = wheel_platforms(&files);
        let platforms: Vec<PlatformChoice> = platforms_of(&wheel_platforms, machine.platform)
            .into_iter()
            .map(|platform| {
                let there = elsewhere.machine(machine, platform);
                let offers = offers_elsewhere(&files, &wheel_platforms, platform);
                let mut decision = decisions.decide(catalog, there, policy, train.release, offers);
                if let Some(inferred) = &train.inferred {
                    decision.notes.insert(0, inferred.to_string());
                    decision.rests_on_inference = true;
                }
                PlatformChoice { platform, decision }
            })
            .collect();
        let mut kept = keep_chosen(
            files,
            &wheel_platforms,
            (machine.platform, &decision),
            &platforms,
            keep_reasons.then_some(&mut dropped),
        );
        kept.sort_unstable();
        selections.push(VersionSelection {
            version,
            decision: Some(decision),
            kept,
            platforms,
        });
    }
    if !keep_reasons {
        // Those few `judge_disagreements` gave, which are reasons too.
        dropped.clear();
    }
    PageSelection {
        project,
        versions: selections,
        dropped: in_page_order(dropped, files.len()),
    }
}

/// The files kept of a version's: its neutral ones, and on each platform the chosen build's
/// wheels (`own`: the machine's platform and its decision, for wheels of no other platform);
/// the others go to `dropped` with the platform whose choice they are not, when reasons are
/// kept.
fn keep_chosen(
    files: VersionFiles<'_>,
    wheel_platforms: &[Vec<Option<Platform>>],
    own: (Platform, &Decision),
    platforms: &[PlatformChoice],
    mut dropped: Option<&mut Vec<(usize, Dropped)>>,
) -> Vec<usize> {
    let chosen_on = |platform: Option<Platform>| -> (Platform, Option<&Backend>) {
        platform
            .and_then(|platform| platforms.iter().find(|p| p.platform == platform))
            .map_or((own.0, own.1.chosen.as_ref()), |p| {
                (p.platform, p.decision.chosen.as_ref())
            })
    };
    let mut kept = files.neutral;
    for ((backend, wheels), platforms) in files.by_backend.iter().zip(wheel_platforms) {
        for ((index, ..), platform) in wheels.iter().zip(platforms) {
            let (platform, chosen) = chosen_on(*platform);
            match (backend, &mut dropped) {
                (Some(backend), _) if Some(backend) == chosen => kept.push(*index),
                (Some(backend), Some(dropped)) => dropped.push((
                    *index,
                    Dropped::NotChosen {
                        backend: backend.clone(),
                        platform,
                    },
                )),
                // Plain wheels beside labelled ones, in a project without a release train: of
                // unknown build, so they are served only where no labelled build was chosen for
                // their platform.
                (None, _) if chosen.is_none() => kept.push(*index),
                (Some(_), None) | (None, _) => {}
            }
        }
    }
    kept
}

/// `dropped` in page order. Nearly every file of a page is dropped, and a sort moved each entry
/// (the size of a [`Dropped`]) again and again; each file is dropped once at most, so each
/// entry goes straight to its file's place, then the places are read in order.
fn in_page_order(dropped: Vec<(usize, Dropped)>, files: usize) -> Vec<(usize, Dropped)> {
    if dropped.is_empty() {
        return dropped;
    }
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
    made: Vec<(&'c Release, Platform, Vec<Offer>, Decision)>,
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
        let made = self.made.iter().find(|(line, platform, made_for, _)| {
            std::ptr::eq(*line, release) && *platform == machine.platform && *made_for == offers
        });
        if let Some((.., decision)) = made {
            return decision.clone();
        }
        let decision = decide(catalog, machine, policy, release, &offers);
        self.made
            .push((release, machine.platform, offers, decision.clone()));
        decision
    }
}

/// The backends a version offers, each with whether it has a wheel that runs on `machine`'s
/// platform.
fn offers_on(machine: &Machine, files: &VersionFiles<'_>) -> Vec<Offer> {
    files
        .by_backend
        .iter()
        .filter_map(|(backend, wheels)| {
            backend.as_ref().map(|backend| Offer {
                backend: backend.clone(),
                has_platform_file: wheels
                    .iter()
                    .any(|(_, platform, _)| platform_matches(machine, platform.get().split('.'))),
            })
        })
        .collect()
}

/// The platform of each wheel of a version (`None`: a tag naming none), in the order of
/// `files.by_backend`'s wheels: read once per version, as every platform's choice reads them.
fn wheel_platforms(files: &VersionFiles<'_>) -> Vec<Vec<Option<Platform>>> {
    files
        .by_backend
        .values()
        .map(|wheels| {
            wheels
                .iter()
                .map(|(_, tags, _)| wheel_platform(tags.get()))
                .collect()
        })
        .collect()
}

/// The backends a version offers, each with whether it has a wheel built for `platform` (a
/// platform other than the machine's own, where libc and CPU level are unknown).
fn offers_elsewhere(
    files: &VersionFiles<'_>,
    wheel_platforms: &[Vec<Option<Platform>>],
    platform: Platform,
) -> Vec<Offer> {
    files
        .by_backend
        .keys()
        .zip(wheel_platforms)
        .filter_map(|(backend, platforms)| {
            backend.as_ref().map(|backend| Offer {
                backend: backend.clone(),
                has_platform_file: platforms.contains(&Some(platform)),
            })
        })
        .collect()
}

/// The platforms other than `own` that a version's labelled wheels are built for, in a fixed
/// order.
fn platforms_of(wheel_platforms: &[Vec<Option<Platform>>], own: Platform) -> Vec<Platform> {
    // A handful of platforms among many wheels: gathered without repeats, then ordered by name.
    let mut platforms: Vec<Platform> = Vec::new();
    for platform in wheel_platforms.iter().flatten().flatten() {
        if *platform != own && !platforms.contains(platform) {
            platforms.push(*platform);
        }
    }
    platforms.sort_by_key(|platform| platform.names());
    platforms
}

/// The machine on each other platform, made once per page ([`Machine::elsewhere`]).
#[derive(Default)]
struct Elsewhere {
    machines: Vec<Machine>,
}

impl Elsewhere {
    fn machine(&mut self, machine: &Machine, platform: Platform) -> &Machine {
        let at = if let Some(at) = self.machines.iter().position(|m| m.platform == platform) {
            at
        } else {
            self.machines.push(machine.elsewhere(platform));
            self.machines.len() - 1
        };
        &self.machines[at]
    }
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
