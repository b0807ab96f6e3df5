//! Several owners' pages of one project as one page: each file once (the higher-priority
//! source's copy of a filename both list), every link made absolute so it needs no base, and
//! which source each file came from. One owner's page is used as it is, borrowed.
//!
//! After selection, a build two sources both offer is served once ([`drop_same_builds`]):
//! PyPI's `torch-2.9.0-cp312-...whl` is the default build PyTorch's index also lists as
//! `torch-2.9.0+cu128-cp312-...whl`; the PyTorch index's file is kept.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use wheelgate_resolver::index::{IndexFile, ProjectPage};
use wheelgate_resolver::select::{FileGroups, FileRef};

use super::SourceId;
use crate::cache::index::CachedPage;

/// One owner's page.
#[derive(Debug, Clone)]
pub struct SourcePage {
    pub source: SourceId,
    pub cached: Arc<CachedPage>,
}

/// Where each file of a page came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origins {
    /// Every file, from one source.
    One(SourceId),
    /// Per file, in page order.
    PerFile(Vec<SourceId>),
}

impl Origins {
    /// These origins for `reduced`, a copy of `whole` with some files left out (an offline
    /// page reduced to the stored files): each kept file keeps its source.
    #[must_use]
    pub fn reindexed(&self, whole: &ProjectPage, reduced: &ProjectPage) -> Origins {
        match self {
            Origins::One(id) => Origins::One(*id),
            Origins::PerFile(ids) => {
                let mut kept = reduced.files.iter().peekable();
                let mut reindexed = Vec::with_capacity(reduced.files.len());
                for (file, id) in whole.files.iter().zip(ids) {
                    if kept.peek().is_some_and(|k| k.filename == file.filename) {
                        kept.next();
                        reindexed.push(*id);
                    }
                }
                Origins::PerFile(reindexed)
            }
        }
    }

    /// The source of file `index`.
    pub fn of(&self, index: usize) -> SourceId {
        match self {
            Origins::One(id) => *id,
            Origins::PerFile(ids) => ids[index],
        }
    }
}

/// The pages of a project's owners as one list of files, borrowed where they lie.
#[derive(Debug)]
pub struct MergedPage<'a> {
    parts: &'a [SourcePage],
    /// Each filename once, in priority order (the first source's copy).
    pub files: Vec<&'a IndexFile>,
    /// The source of each file.
    pub origins: Origins,
    /// The part each file comes from (several parts only).
    homes: Vec<usize>,
    /// Per part, where each of its files lies in `files` (`None`: a file an earlier part
    /// listed); several parts only.
    places: Vec<Vec<Option<usize>>>,
}

impl<'a> MergedPage<'a> {
    /// The merged files grouped for selection, from the groupings their pages were parsed with;
    /// `None` when a page has none (selection then groups the files itself).
    pub fn groups(&self) -> Option<Cow<'a, FileGroups>> {
        if let [only] = self.parts {
            return only.cached.groups.as_deref().map(Cow::Borrowed);
        }
        if self.parts.iter().any(|part| part.cached.groups.is_none()) {
            return None;
        }
        let parts = self
            .parts
            .iter()
            .zip(&self.places)
            .filter_map(|(part, places)| Some((part.cached.groups.as_deref()?, &places[..])));
        Some(Cow::Owned(FileGroups::merged(parts)))
    }

    /// The owners' pages merged, in priority order.
    pub fn parts(&self) -> &'a [SourcePage] {
        self.parts
    }

    /// The first (highest-priority) page: its name, meta and status stand for the project.
    pub fn first(&self) -> &'a ProjectPage {
        &self.parts[0].cached.page
    }

    /// What the selection reads of each file.
    pub fn refs(&self) -> Vec<FileRef<'a>> {
        self.files.iter().map(|file| FileRef::from(*file)).collect()
    }

    /// As one page whose links resolve against [`MergedPage::base_url`]: the one page as it
    /// is, or a copy of every file with its link made absolute.
    pub fn page(&self) -> Cow<'a, ProjectPage> {
        if let [only] = self.parts {
            return Cow::Borrowed(&only.cached.page);
        }
        let first = self.first();
        let mut versions: BTreeSet<&str> = BTreeSet::new();
        for part in self.parts {
            versions.extend(part.cached.page.versions.iter().map(String::as_str));
        }
        let files = self
            .files
            .iter()
            .zip(&self.homes)
            .map(|(file, &home)| {
                let part = &self.parts[home].cached;
                let mut merged = (*file).clone();
                merged.url = part.page.file_url(file, &part.url);
                merged
            })
            .collect();
        Cow::Owned(ProjectPage {
            name: first.name.clone(),
            files,
            versions: versions.into_iter().map(str::to_string).collect(),
            meta: first.meta.clone(),
            base: None,
            status: first.status.clone(),
            dropped: self
                .parts
                .iter()
                .flat_map(|part| part.cached.page.dropped.iter().cloned())
                .collect(),
        })
    }

    /// What relative links of [`MergedPage::page`] resolve against: the one page's URL (a
    /// merged page's links are absolute).
    pub fn base_url(&self) -> &'a str {
        match self.parts {
            [only] => &only.cached.url,
            _ => "",
        }
    }
}

/// `parts` (never empty, priority order) as one list of files.
pub fn merge(parts: &[SourcePage]) -> MergedPage<'_> {
    if let [only] = parts {
        return MergedPage {
            parts,
            files: only.cached.page.files.iter().collect(),
            origins: Origins::One(only.source),
            homes: Vec::new(),
            places: Vec::new(),
        };
    }
    // The names' hashes, made where each page was grouped as it arrived: found shared from
    // them, the pages' names are read only where two hash alike. Reading every name of both
    // torch pages (cached by the other core, which parsed them) was a tenth of the work between
    // a cold page's arrival and its answer.
    let hashes: Option<Vec<&[u64]>> = parts
        .iter()
        .map(|part| {
            let hashes = part.cached.groups.as_deref()?.name_hashes()?;
            (hashes.len() == part.cached.page.files.len()).then_some(hashes)
        })
        .collect();
    hashes
        .and_then(|hashes| merge_by(parts, NameKeys::Hashes(&hashes)))
        .or_else(|| merge_by(parts, NameKeys::Names))
        .expect("a merge by the names themselves always completes")
}

/// What a merge tells files' names apart by.
#[derive(Clone, Copy)]
enum NameKeys<'h> {
    /// Per part, the hash of each file's name ([`FileGroups::name_hashes`]).
    Hashes(&'h [&'h [u64]]),
    /// The names themselves.
    Names,
}

/// The merge, each name's first copy kept. `None` when two different names hash alike (the
/// caller merges by the names instead).
fn merge_by<'a>(parts: &'a [SourcePage], keys: NameKeys<'_>) -> Option<MergedPage<'a>> {
    let capacity = parts.iter().map(|p| p.cached.page.files.len()).sum();
    let mut files: Vec<&'a IndexFile> = Vec::with_capacity(capacity);
    let mut origins = Vec::with_capacity(capacity);
    let mut homes = Vec::with_capacity(capacity);
    // Fx rather than SipHash: every filename of every part is hashed, and no client chooses
    // them (an upstream can only slow its own pages).
    let mut seen_hashes: FxHashMap<u64, usize> = FxHashMap::default();
    let mut seen_names: FxHashSet<&str> = FxHashSet::default();
    match keys {
        NameKeys::Hashes(_) => seen_hashes.reserve(capacity),
        NameKeys::Names => seen_names.reserve(capacity),
    }
    let mut places = Vec::with_capacity(parts.len());
    for (home, part) in parts.iter().enumerate() {
        let page_files = &part.cached.page.files;
        let mut where_each = Vec::with_capacity(page_files.len());
        for (at, file) in page_files.iter().enumerate() {
            let first = match keys {
                NameKeys::Hashes(hashes) => match seen_hashes.entry(hashes[home][at]) {
                    Entry::Vacant(vacant) => {
                        vacant.insert(files.len());
                        true
                    }
                    Entry::Occupied(held) if files[*held.get()].filename == file.filename => false,
                    Entry::Occupied(_) => return None,
                },
                NameKeys::Names => seen_names.insert(&file.filename),
            };
            if first {
                where_each.push(Some(files.len()));
                files.push(file);
                origins.push(part.source);
                homes.push(home);
            } else {
                where_each.push(None);
            }
        }
        places.push(where_each);
    }
    Some(MergedPage {
        parts,
        files,
        origins: Origins::PerFile(origins),
        homes,
        places,
    })
}

/// Removes from `kept` (indices of files named by `filename`) a file whose build a
/// higher-priority source also offers among the kept files ([`build_key`]: same project, version
/// as a number, Python and ABI tags and platform family, the local label and the platform
/// version aside). Returns each removed file with the source whose file is
/// served instead.
pub fn drop_same_builds<'a>(
    filename: impl Fn(usize) -> &'a str,
    origins: &Origins,
    kept: &mut Vec<usize>,
) -> Vec<(usize, SourceId)> {
    if matches!(origins, Origins::One(_)) {
        return Vec::new();
    }
    let mut best: FxHashMap<BuildKey<'a>, SourceId> =
        FxHashMap::with_capacity_and_hasher(kept.len(), FxBuildHasher);
    for &index in kept.iter() {
        let source = origins.of(index);
        best.entry(build_key(filename(index)))
            .and_modify(|b| *b = (*b).min(source))
            .or_insert(source);
    }
    let mut dropped = Vec::new();
    kept.retain(|&index| {
        let winner = best[&build_key(filename(index))];
        if winner == origins.of(index) {
            true
        } else {
            dropped.push((index, winner));
            false
        }
    });
    dropped
}

/// What makes two kept files the same build for an installer, read from the filename: the
/// project, the public version as a number (`2.9.0.0` is `2.9.0` is `2.9`), the Python and ABI
/// tags, and the platform's family (operating system and architecture, whatever the glibc or
/// macOS version its tag names). So `torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl`
/// from the PyTorch index and PyPI's `torch-2.9.0.0+cpu-...-manylinux_2_35_x86_64.whl` are one
/// build: PyPI's would otherwise be kept beside it, and pip and uv would prefer its more
/// specific tag. A file that is not a wheel is compared by its whole name.
///
/// Borrowed from the name, as it is made twice per kept file of a page (hundreds on a torch
/// page): byte searches and slices, no allocation.
fn build_key(filename: &str) -> BuildKey<'_> {
    let whole = (filename, "", "", "", "", "", "");
    let Some(stem) = filename.strip_suffix(".whl") else {
        return whole;
    };
    let parts: [Option<&str>; 5] = {
        let mut split = stem.rsplitn(4, '-');
        let platform = split.next();
        let abi = split.next();
        let python = split.next();
        let head = split.next();
        [head, python, abi, platform, None]
    };
    let [Some(head), Some(python), Some(abi), Some(platform), None] = parts else {
        return whole;
    };
    // `name-version` or `name-version-build`: the version is the second dash-separated part.
    let mut head = head.splitn(3, '-');
    let (Some(name), Some(version)) = (head.next(), head.next()) else {
        return whole;
    };
    let public = memchr::memchr(b'+', version.as_bytes()).map_or(version, |plus| &version[..plus]);
    let (release, suffix) = release_and_suffix(public);
    let first_platform = platform.split('.').next().unwrap_or(platform);
    let (os, arch) = platform_family(first_platform);
    (name, release, suffix, python, abi, os, arch)
}

/// `2.9.0.0` as `2.9`, and what follows the release (`rc1`, `.post1`): trailing zero segments
/// do not change a version's value (PEP 440).
fn release_and_suffix(public: &str) -> (&str, &str) {
    let end = public
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(public.len());
    let (mut release, suffix) = public.split_at(end);
    // A suffix such as `.post1` starts with the dot the release ended on.
    if !suffix.is_empty() && release.ends_with('.') {
        release = &release[..release.len() - 1];
    }
    while let Some(shorter) = release.strip_suffix(".0") {
        release = shorter;
    }
    (release, suffix)
}

/// A platform tag's operating system and architecture: `manylinux_2_28_x86_64`,
/// `manylinux2014_x86_64` and `linux_x86_64` are all `linux` on `x86_64`; `macosx_11_0_arm64`
/// is `macosx` on `arm64`; `win_amd64` is `win` on `amd64`.
fn platform_family(tag: &str) -> (&'static str, &str) {
    let (os, rest) = if let Some(rest) = tag.strip_prefix("manylinux") {
        ("linux", rest)
    } else if let Some(rest) = tag.strip_prefix("musllinux") {
        ("musllinux", rest)
    } else if let Some(rest) = tag.strip_prefix("linux") {
        ("linux", rest)
    } else if let Some(rest) = tag.strip_prefix("macosx") {
        ("macosx", rest)
    } else if let Some(rest) = tag.strip_prefix("win") {
        ("win", rest)
    } else {
        return ("", tag);
    };
    // Past the version numbers the tag names (`_2_28`, `2014`, `_11_0`): the architecture.
    let arch = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
    (os, arch)
}

/// What [`build_key`] compares: project, release, version suffix, Python tag, ABI tag,
/// operating system, architecture (a file that is not a wheel: its whole name, the rest empty).
type BuildKey<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'static str,
    &'a str,
);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wheelgate_resolver::index::parse_project_html;

    use super::*;
    use crate::cache::index::CachedPage;

    fn part(source: u16, url: &str, html: &str) -> SourcePage {
        SourcePage {
            source: SourceId(source),
            cached: Arc::new(CachedPage::for_tests(
                url,
                parse_project_html(html).unwrap(),
            )),
        }
    }

    /// `part`, grouped as a page is where it arrives.
    fn grouped_part(source: u16, url: &str, html: &str) -> SourcePage {
        let page = parse_project_html(html).unwrap();
        let mut groups = FileGroups::default();
        let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
        groups.add(&refs);
        let mut cached = CachedPage::for_tests(url, page);
        cached.groups = Some(Arc::new(groups));
        SourcePage {
            source: SourceId(source),
            cached: Arc::new(cached),
        }
    }

    /// What a merge made: each file's name and source, and each part's places.
    type Made = (Vec<(String, SourceId)>, Vec<Vec<Option<usize>>>);

    fn made(merged: &MergedPage<'_>) -> Made {
        let files = merged
            .files
            .iter()
            .enumerate()
            .map(|(i, file)| (file.filename.clone(), merged.origins.of(i)))
            .collect();
        (files, merged.places.clone())
    }

    const PYTORCH: &str = r#"<a href="/whl/cu128/torch-2.9.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=aa">torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl</a>
<a href="/whl/cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl#sha256=bb">torch-2.9.0-cp312-none-macosx_11_0_arm64.whl</a>"#;
    const PYPI: &str = r#"<a href="https://files.example/packages/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=cc">torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl</a>
<a href="https://files.example/packages/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl#sha256=dd">torch-2.9.0-cp312-none-macosx_11_0_arm64.whl</a>
<a href="https://files.example/packages/torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ee">torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl</a>"#;

    #[test]
    fn one_page_is_used_as_it_is() {
        let parts = [part(0, "https://download.example/whl/torch/", PYTORCH)];
        let merged = merge(&parts);
        assert!(matches!(merged.page(), Cow::Borrowed(_)));
        assert_eq!(merged.base_url(), "https://download.example/whl/torch/");
        assert_eq!(merged.origins, Origins::One(SourceId(0)));
    }

    #[test]
    fn merged_pages_keep_each_filename_once_from_the_first_source_with_absolute_links() {
        let parts = [
            part(0, "https://download.example/whl/torch/", PYTORCH),
            part(2, "https://pypi.example/simple/torch/", PYPI),
        ];
        let merged = merge(&parts);
        let page = merged.page();
        let names: Vec<(&str, &str, SourceId)> = page
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.filename.as_str(), f.url.as_str(), merged.origins.of(i)))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "https://download.example/whl/cu128/torch-2.9.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl",
                    SourceId(0)
                ),
                (
                    "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
                    "https://download.example/whl/cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
                    SourceId(0)
                ),
                (
                    "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "https://files.example/packages/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    SourceId(2)
                ),
                (
                    "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "https://files.example/packages/torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    SourceId(2)
                ),
            ]
        );
        // The mac wheel's hash is the PyTorch index's.
        assert_eq!(page.files[1].sha256(), Some("bb"));
        assert_eq!(merged.base_url(), "");
    }

    #[test]
    fn reduced_pages_keep_each_files_source() {
        let parts = [
            part(0, "https://download.example/whl/torch/", PYTORCH),
            part(2, "https://pypi.example/simple/torch/", PYPI),
        ];
        let merged = merge(&parts);
        let whole = merged.page().into_owned();
        let mut reduced = whole.clone();
        // As an offline store that holds the first and the last file only.
        reduced.files = vec![whole.files[0].clone(), whole.files[3].clone()];
        assert_eq!(
            merged.origins.reindexed(&whole, &reduced),
            Origins::PerFile(vec![SourceId(0), SourceId(2)])
        );
        assert_eq!(
            Origins::One(SourceId(1)).reindexed(&whole, &reduced),
            Origins::One(SourceId(1))
        );
    }

    #[test]
    fn a_build_both_offer_is_served_from_the_higher_priority_source() {
        let parts = [
            part(0, "https://download.example/whl/torch/", PYTORCH),
            part(2, "https://pypi.example/simple/torch/", PYPI),
        ];
        let merged = merge(&parts);
        let mut kept = vec![0, 2, 3];
        let dropped = drop_same_builds(|i| &merged.files[i].filename, &merged.origins, &mut kept);
        assert_eq!(kept, [0, 3]);
        assert_eq!(dropped, [(2, SourceId(0))]);
    }

    /// issue 41 item 5: PyPI's files of a build the PyTorch index publishes never stand beside
    /// its own, whatever their glibc tag or the spelling of their version.
    #[test]
    fn builds_are_compared_as_parsed_not_as_text() {
        let key = build_key;
        let pytorch = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";
        for same in [
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
            "torch-2.9.0.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9+cpu-cp312-cp312-manylinux2014_x86_64.whl",
            "torch-2.9.0-cp312-cp312-linux_x86_64.whl",
            "torch-2.9.0-1-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        ] {
            assert_eq!(key(same), key(pytorch), "{same}");
        }
        for other in [
            "torch-2.9.1+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0rc1+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0.post1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.9.0+cpu-cp312-cp312-musllinux_1_2_x86_64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
            "torch-2.9.0+cpu-cp312-cp312-win_amd64.whl",
            "torch-2.9.0.tar.gz",
        ] {
            assert_ne!(key(other), key(pytorch), "{other}");
        }
        assert_eq!(
            key("torch-2.9.0.post1-cp312-cp312-linux_x86_64.whl"),
            key("torch-2.9.0.0post1-cp312-cp312-manylinux_2_28_x86_64.whl")
        );
        assert_eq!(key("a-1.0.tar.gz"), key("a-1.0.tar.gz"));
        assert_ne!(key("a-1.0.tar.gz"), key("a-1.0.zip"));
    }

    #[test]
    fn pages_merged_by_their_names_hashes_merge_as_by_their_names() {
        // The PyPI page lists one of its names twice and one of the PyTorch page's.
        let pypi_twice = format!("{PYPI}\n{}", PYPI.lines().next().unwrap());
        for (first, second) in [
            (PYTORCH, pypi_twice.as_str()),
            (pypi_twice.as_str(), PYTORCH),
        ] {
            let grouped = [
                grouped_part(0, "https://download.example/whl/torch/", first),
                grouped_part(2, "https://pypi.example/simple/torch/", second),
            ];
            let by_hashes = merge(&grouped);
            let by_names = merge_by(&grouped, NameKeys::Names).unwrap();
            assert_eq!(made(&by_hashes), made(&by_names));
            let plain = [
                part(0, "https://download.example/whl/torch/", first),
                part(2, "https://pypi.example/simple/torch/", second),
            ];
            assert_eq!(made(&merge(&plain)), made(&by_names));
        }
        let grouped = [
            grouped_part(0, "https://download.example/whl/torch/", PYTORCH),
            grouped_part(2, "https://pypi.example/simple/torch/", &pypi_twice),
        ];
        let (files, places) = made(&merge(&grouped));
        assert_eq!(files.len(), 4, "{files:?}");
        assert_eq!(places[1], [Some(2), None, Some(3), None]);
    }

    #[test]
    fn different_names_that_hash_alike_are_merged_by_their_names() {
        let parts = [
            grouped_part(0, "https://download.example/whl/torch/", PYTORCH),
            grouped_part(2, "https://pypi.example/simple/torch/", PYPI),
        ];
        // Every name hashing alike: the second name differs from the first.
        let alike = [&[7u64; 2][..], &[7u64; 3][..]];
        assert!(merge_by(&parts, NameKeys::Hashes(&alike)).is_none());
        // Equal names hashing alike are one name.
        let same = [&[1u64, 2][..], &[3u64, 2, 4][..]];
        let (files, places) = made(&merge_by(&parts, NameKeys::Hashes(&same)).unwrap());
        assert_eq!(files.len(), 4);
        assert_eq!(places[1], [Some(2), None, Some(3)]);
    }
}
