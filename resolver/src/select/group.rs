//! A page's files grouped by public version and backend: the per-file part of a selection
//! (splitting each filename, reading its label and link directory), most of a selection's time.
//!
//! A grouping depends on the files alone, neither on the machine nor on the catalog, so it can
//! be made where a page is parsed, while its text is still in the cache (the proxy groups an
//! upstream page as it arrives), kept with the page, and merged with other pages' groupings
//! for a selection ([`FileGroups::merged`], [`super::select_grouped`]). What depends on the
//! catalog (the default build of an unlabelled torch wheel) is decided at selection.

use std::collections::BTreeMap;

use pep440_rs::Version;

use crate::backend::Backend;
use crate::catalog::Catalog;
use crate::filename::{SdistFilename, WheelFilename, WheelParts};
use crate::machine::{Arch, Os, Platform};
use crate::variants::choose::VARIANTS_JSON_SUFFIX;

use super::page::{Dropped, FileRef};
use super::signals::{ParsedNames, read_signals};
use super::text_hash::TextMap;

/// One wheel of a version as selection reads it: its index on the page, its platform tags
/// (`manylinux_2_28_x86_64`, dot-separated when several), and the backend its directory names
/// where that disagrees with its label.
pub(super) type Wheel<'a> = (usize, PlatformTags<'a>, Option<Backend>);

/// Where a wheel's platform tags lie in its name, read only when asked for: a selection needs
/// the tags of a few wheels of each build (until one runs here), and reading every name of a
/// page just parsed on another core was a cache miss per file.
#[derive(Clone, Copy)]
pub(super) struct PlatformTags<'a> {
    name: &'a str,
    at: (u32, u32),
}

impl<'a> PlatformTags<'a> {
    /// The tags, dot-separated when several.
    pub(super) fn get(self) -> &'a str {
        let (start, end) = self.at;
        self.name
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }
}

/// The files of one public version, by backend.
#[derive(Default)]
pub(super) struct VersionFiles<'a> {
    /// Backend-specific wheels; `None` keys plain wheels of projects without a release train.
    pub(super) by_backend: BTreeMap<Option<Backend>, Vec<Wheel<'a>>>,
    /// Sdists and other backend-neutral files, always kept.
    pub(super) neutral: Vec<usize>,
}

/// The files of a page grouped by public version and by the backend their signals name.
///
/// Made file by file with [`FileGroups::add`], in page order (a page that arrives in pieces is
/// grouped piece by piece). Each distinct text (version, label, directory) is parsed once and
/// each file costs a few hash lookups: files are gathered per version text into slots, and only
/// the slots are sorted by version, at selection.
#[derive(Debug, Clone, Default)]
pub struct FileGroups {
    slots: Vec<Slot>,
    /// Files that cannot be served whatever the machine, with the reason.
    dropped: Vec<(usize, Dropped)>,
    /// How many files were grouped: the next file's index.
    grouped: usize,
    /// Each distinct version text's slot (`None`: it does not parse).
    slot_of_text: TextMap<String, Option<usize>>,
    /// The slot of each public version text (`2.9.0` for `2.9.0+cu128` and `2.9.0+cpu`).
    slot_of_public: TextMap<String, usize>,
    names: ParsedNames,
    /// Whether a file is a variant file (`lists_variants`), found here on the parser's thread
    /// rather than by a second pass over the names at each selection.
    lists_variants: bool,
    /// The [`name_hash`] of each file's name, in page order, made here on the parser's thread:
    /// a merge of pages finds the names they share from these, without reading every name of
    /// every page on the thread the request waits for ([`FileGroups::name_hashes`]).
    name_hashes: Vec<u64>,
}

/// The files of one public version while a page is grouped.
#[derive(Debug, Clone)]
struct Slot {
    version: Version,
    neutral: Vec<usize>,
    /// Per backend named by the wheels' signals (few per version, so a list beats a map);
    /// `None` for wheels that name none.
    wheels: Vec<(Option<Backend>, Vec<GroupedWheel>)>,
}

#[derive(Debug, Clone)]
struct GroupedWheel {
    index: usize,
    /// Where its platform tags lie in its filename.
    platform: (u32, u32),
    directory_disagrees: Option<Backend>,
}

impl FileGroups {
    /// How many files were grouped.
    pub fn len(&self) -> usize {
        self.grouped
    }

    /// Whether no file was grouped.
    pub fn is_empty(&self) -> bool {
        self.grouped == 0
    }

    /// Whether any file grouped is a variant file: what [`crate::variants::lists_variants`]
    /// says of the same files.
    pub fn lists_variants(&self) -> bool {
        self.lists_variants
    }

    /// The [`name_hash`] of each grouped file's name, in page order; `None` for a grouping
    /// that does not have them all (merged from one that did not).
    pub fn name_hashes(&self) -> Option<&[u64]> {
        (self.name_hashes.len() == self.grouped).then_some(&self.name_hashes[..])
    }

    /// Groups `files`, the page's next files after those grouped so far.
    pub fn add(&mut self, files: &[FileRef<'_>]) {
        let first = self.grouped;
        self.grouped += files.len();
        self.dropped.reserve(files.len());
        self.name_hashes.reserve(files.len());
        for (at, file) in files.iter().enumerate() {
            self.name_hashes.push(name_hash(file.filename));
            self.add_one(first + at, file);
        }
    }

    fn add_one(&mut self, index: usize, file: &FileRef<'_>) {
        // Whether the page lists variants (`is_variant_file`) is read off the split below,
        // not by splitting every name a second time.
        if file.filename.ends_with(VARIANTS_JSON_SUFFIX) {
            self.lists_variants = true;
            self.dropped.push((index, Dropped::Variant));
            return;
        }
        if !has_extension(file.filename, ".whl") {
            match file.filename.parse::<SdistFilename>() {
                Ok(sdist) => {
                    let slot = slot_for(&mut self.slots, sdist.version.without_local());
                    self.slots[slot].neutral.push(index);
                }
                Err(err) => self
                    .dropped
                    .push((index, Dropped::Unparseable(Box::new(err)))),
            }
            return;
        }
        let wheel = match WheelParts::split(file.filename) {
            Ok(wheel) => wheel,
            Err(err) => {
                self.dropped
                    .push((index, Dropped::Unparseable(Box::new(err))));
                return;
            }
        };
        self.lists_variants |= wheel.variant_label.is_some();
        let slot = if let Some(&slot) = self.slot_of_text.get(wheel.version) {
            slot
        } else {
            let slot = self.slot_of_version_text(wheel.version);
            self.slot_of_text.insert(wheel.version.to_string(), slot);
            slot
        };
        let Some(slot) = slot else {
            let err = file
                .filename
                .parse::<WheelFilename>()
                .expect_err("the version did not parse");
            self.dropped
                .push((index, Dropped::Unparseable(Box::new(err))));
            return;
        };
        if wheel.variant_label.is_some() {
            self.dropped.push((index, Dropped::Variant));
            return;
        }
        let signals = match read_signals(
            file.filename,
            wheel.local_label(),
            file.url,
            &mut self.names,
        ) {
            Ok(signals) => signals,
            Err(error) => {
                self.dropped.push((index, Dropped::UnknownBackend(error)));
                return;
            }
        };
        let start = offset_in(file.filename, wheel.platform);
        let wheel = GroupedWheel {
            index,
            platform: (
                u32::try_from(start).unwrap_or(u32::MAX),
                u32::try_from(start + wheel.platform.len()).unwrap_or(u32::MAX),
            ),
            directory_disagrees: signals.directory_disagrees,
        };
        self.slots[slot].add(signals.backend, wheel);
    }

    /// The slot of a version text seen for the first time; `None` when it does not parse.
    fn slot_of_version_text(&mut self, text: &str) -> Option<usize> {
        // `2.9.0+cu128` and `2.9.0+cpu` share a slot: found by the public text, without
        // comparing versions, once the first of them made it.
        let (public_text, local) = match text.split_once('+') {
            Some((public, local)) => (public, Some(local)),
            None => (text, None),
        };
        // Nor parsed, then: that public text parsed already, and a label of this shape always
        // does.
        if local.is_none_or(is_plain_local_label)
            && let Some(&slot) = self.slot_of_public.get(public_text)
        {
            return Some(slot);
        }
        let public = text.parse::<Version>().ok()?.without_local();
        if let Some(&slot) = self.slot_of_public.get(public_text) {
            return Some(slot);
        }
        let slot = slot_for(&mut self.slots, public);
        self.slot_of_public.insert(public_text.to_string(), slot);
        Some(slot)
    }

    /// The grouping of a page made of `parts` one after another, each with where each of its
    /// files lies on that page (`None`: left off, as a file an earlier part listed).
    pub fn merged<'p>(
        parts: impl IntoIterator<Item = (&'p FileGroups, &'p [Option<usize>])>,
    ) -> FileGroups {
        let mut merged = FileGroups::default();
        let mut all_hashed = true;
        for (part, places) in parts {
            let place = |index: usize| places.get(index).copied().flatten();
            // Placed files keep their order, so their names' hashes follow one another.
            match part.name_hashes() {
                Some(hashes) if all_hashed && hashes.len() == places.len() => {
                    merged.name_hashes.extend(
                        hashes
                            .iter()
                            .zip(places)
                            .filter(|(_, place)| place.is_some())
                            .map(|(hash, _)| *hash),
                    );
                }
                _ => all_hashed = false,
            }
            merged.dropped.extend(
                part.dropped
                    .iter()
                    .filter_map(|(index, why)| Some((place(*index)?, why.clone()))),
            );
            for slot in &part.slots {
                let into = slot_for(&mut merged.slots, slot.version.clone());
                let into = &mut merged.slots[into];
                // Reserved first: a filtered iterator promises no length, so each list grew
                // by doubling, several hundred reallocations for a merged torch page.
                into.neutral.reserve(slot.neutral.len());
                into.neutral
                    .extend(slot.neutral.iter().filter_map(|&index| place(index)));
                for (backend, wheels) in &slot.wheels {
                    let placed = wheels.iter().filter_map(|wheel| {
                        Some(GroupedWheel {
                            index: place(wheel.index)?,
                            ..wheel.clone()
                        })
                    });
                    let into = into.wheels_of(backend.as_ref());
                    into.reserve(wheels.len());
                    into.extend(placed);
                }
            }
            merged.grouped += places.iter().filter(|place| place.is_some()).count();
            // A file left off has the name of one placed from an earlier part.
            merged.lists_variants |= part.lists_variants;
        }
        if !all_hashed {
            merged.name_hashes.clear();
        }
        merged
    }

    /// Appends `tail`, the grouping of the files that follow these on the same page (grouped
    /// on its own, from index 0): the grouping adding them here would have made, the same
    /// slots in the same order. Takes `tail`'s parts rather than copying them, as `merged`
    /// must for groupings it only borrows: a page read in pieces on several threads is joined
    /// on the thread its request waits for.
    pub fn append(&mut self, tail: FileGroups) {
        let offset = self.grouped;
        self.dropped.extend(
            tail.dropped
                .into_iter()
                .map(|(index, why)| (index + offset, why)),
        );
        let mut moved_to = Vec::with_capacity(tail.slots.len());
        for slot in tail.slots {
            let into = slot_for(&mut self.slots, slot.version);
            moved_to.push(into);
            let into = &mut self.slots[into];
            into.neutral
                .extend(slot.neutral.into_iter().map(|index| index + offset));
            for (backend, wheels) in slot.wheels {
                into.wheels_of(backend.as_ref())
                    .extend(wheels.into_iter().map(|wheel| GroupedWheel {
                        index: wheel.index + offset,
                        ..wheel
                    }));
            }
        }
        // What later `add`s look up: the tail's version texts, pointing at the slots here.
        for (text, slot) in tail.slot_of_text {
            let slot = slot.and_then(|slot| moved_to.get(slot).copied());
            self.slot_of_text.entry(text).or_insert(slot);
        }
        for (text, slot) in tail.slot_of_public {
            if let Some(&slot) = moved_to.get(slot) {
                self.slot_of_public.entry(text).or_insert(slot);
            }
        }
        if self.name_hashes.len() == offset && tail.name_hashes.len() == tail.grouped {
            self.name_hashes.extend(tail.name_hashes);
        } else {
            self.name_hashes.clear();
        }
        self.grouped += tail.grouped;
        self.lists_variants |= tail.lists_variants;
    }

    /// The files that cannot be served whatever the machine.
    pub(super) fn dropped(&self) -> &[(usize, Dropped)] {
        &self.dropped
    }

    /// The grouped files by version, read from `files` (the files grouped), with the default
    /// build of each unlabelled wheel of a release-train project (torch) decided.
    pub(super) fn versions<'a>(
        &self,
        catalog: &Catalog,
        project: &str,
        files: &[FileRef<'a>],
    ) -> BTreeMap<Version, VersionFiles<'a>> {
        // Only torch and its release-train companions have a known default build for
        // unlabelled wheels; pytorch-triton and friends are published once, unlabelled, for
        // every backend.
        let has_train = catalog.is_release_train_project(project);
        let platform_of = |wheel: &GroupedWheel| PlatformTags {
            name: files[wheel.index].filename,
            at: wheel.platform,
        };
        let read = |wheel: &GroupedWheel| -> Wheel<'a> {
            (
                wheel.index,
                platform_of(wheel),
                wheel.directory_disagrees.clone(),
            )
        };
        self.slots
            .iter()
            .map(|slot| {
                let mut by_backend: BTreeMap<Option<Backend>, Vec<Wheel<'a>>> = BTreeMap::new();
                let mut plain: Vec<(Platform, Option<Backend>)> = Vec::new();
                for (backend, wheels) in &slot.wheels {
                    if backend.is_some() || !has_train {
                        by_backend
                            .entry(backend.clone())
                            .or_default()
                            .extend(wheels.iter().map(read));
                        continue;
                    }
                    // An unlabelled wheel of a PyTorch release is the release's default build
                    // for the wheel's platform (PyPI's torch on Linux x86_64 is a CUDA build).
                    for wheel in wheels {
                        let backend =
                            wheel_platform(platform_of(wheel).get()).and_then(|platform| {
                                plain_backend(catalog, project, &slot.version, platform, &mut plain)
                            });
                        by_backend.entry(backend).or_default().push(read(wheel));
                    }
                }
                let files = VersionFiles {
                    by_backend,
                    neutral: slot.neutral.clone(),
                };
                (slot.version.clone(), files)
            })
            .collect()
    }
}

impl Slot {
    fn add(&mut self, backend: Option<Backend>, wheel: GroupedWheel) {
        if let Some((_, wheels)) = self.wheels.iter_mut().find(|(b, _)| *b == backend) {
            wheels.push(wheel);
        } else {
            // A version's build has one wheel per Python and platform: a dozen or more.
            let mut wheels = Vec::with_capacity(16);
            wheels.push(wheel);
            self.wheels.push((backend, wheels));
        }
    }

    /// The wheels of `backend`, a list added when it has none yet.
    fn wheels_of(&mut self, backend: Option<&Backend>) -> &mut Vec<GroupedWheel> {
        let at = if let Some(at) = self.wheels.iter().position(|(b, _)| b.as_ref() == backend) {
            at
        } else {
            self.wheels.push((backend.cloned(), Vec::new()));
            self.wheels.len() - 1
        };
        &mut self.wheels[at].1
    }
}

/// A file name's hash as [`FileGroups::name_hashes`] holds it: Fx, as selection hashes
/// texts. Equal names hash alike; names that hash alike must still be compared.
pub fn name_hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(name)
}

/// The default build of an unlabelled wheel of `version` for `platform`, remembered per
/// platform in `plain`.
fn plain_backend(
    catalog: &Catalog,
    project: &str,
    version: &Version,
    platform: Platform,
    plain: &mut Vec<(Platform, Option<Backend>)>,
) -> Option<Backend> {
    if let Some((_, backend)) = plain.iter().find(|(p, _)| *p == platform) {
        return backend.clone();
    }
    let train = catalog.train_release(project, version);
    let backend = catalog.plain_backend(train.release, platform);
    plain.push((platform, backend.clone()));
    backend
}

/// The slot of `version`, added when new (a version written two ways, `2.9` and `2.9.0`, is
/// one version).
fn slot_for(slots: &mut Vec<Slot>, version: Version) -> usize {
    if let Some(at) = slots.iter().position(|slot| slot.version == version) {
        return at;
    }
    slots.push(Slot {
        version,
        neutral: Vec::new(),
        wheels: Vec::new(),
    });
    slots.len() - 1
}

/// Where `part`, a slice of `whole`, begins in it.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
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

/// The platform a wheel is built for, from its first platform tag.
pub(super) fn wheel_platform(platform_tags: &str) -> Option<Platform> {
    let tag = platform_tags.split('.').next()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variants::choose::lists_variants;

    #[test]
    fn a_grouping_lists_variants_exactly_when_the_page_does() {
        let names = [
            "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu128.whl",
            "torch-2.9.0-1-cp312-cp312-manylinux_2_28_x86_64-cu128.whl",
            "torch-2.9.0-1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-Bad.whl",
            "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cu128.WHL",
            "torch-2.9.0-variants.json",
            "torch-2.9.0.tar.gz",
            "torch-notaversion-cp312-cp312-any-cu128.whl",
            "torch-2.9.0-cp312-cp312-any-x-y.whl",
        ];
        for name in names {
            let files = [FileRef {
                filename: name,
                url: "/whl/cu128/x.whl",
            }];
            let mut groups = FileGroups::default();
            groups.add(&files);
            assert_eq!(groups.lists_variants(), lists_variants(&files), "{name}");
        }
    }
}
