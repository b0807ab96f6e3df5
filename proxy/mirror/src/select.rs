//! Which files of a project page a mirror entry takes: pure, on the parsed page.
//!
//! - PyTorch projects: for each declared backend and platform, the files the server's own
//!   selection keeps with that backend pinned; for each declared machine, the files it keeps for
//!   that machine on its own platform and on each declared platform (so each version gets, on
//!   each platform, the backend that kind of machine is served there);
//! - general projects: every file of the wanted versions;
//! - then, for both: wanted versions only (newest final version when no specifier is given), a
//!   wheel only when its platform tags fit a declared platform (or the machine's) and its Python
//!   tags a declared Python, an sdist only for a version with no fitting wheel, yanked files only
//!   for an exact `==` pin.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::{Version, VersionSpecifiers};
use wheelgate_resolver::filename::{DistFilename, WheelParts};
use wheelgate_resolver::index::ProjectPage;
use wheelgate_resolver::platform_tags::platform_matches;
use wheelgate_resolver::select::{FileRef, PageSelection};
use wheelgate_resolver::{Backend, Catalog, Machine, Policy, select_page};

use super::bind::Binding;
use super::config::{PackageEntry, PythonVersion};
use super::variants::{VariantsFiles, take_variants, variants_files_of};
use wheelgate_index::sources::ProjectKind;

/// What an entry takes from one project page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Indices into the page's files, in page order.
    pub files: Vec<usize>,
    /// The backends whose files were taken (their `/whl/<backend>/<project>/` pages are
    /// mirrored too, so `/b/<backend>/simple/` works offline).
    pub backends: BTreeSet<Backend>,
    /// The versions taken, oldest first.
    pub versions: BTreeSet<Version>,
}

/// The files `entry` takes from `page`, the project's aggregated page on its upstream; wheel
/// variants (PEP 825) are left out.
pub fn select_files(catalog: &Catalog, entry: &PackageEntry, page: &ProjectPage) -> Selection {
    select_files_with_variants(catalog, entry, page, None, None)
}

/// [`select_files`], with the variant wheels the entry takes when `variants` (the page's
/// variants files, parsed) is given, and their versions' variants files
/// ([`super::variants`]); each machine's builds bound to torch's there by `binding`
/// ([`super::bind`]) when given.
pub fn select_files_with_variants(
    catalog: &Catalog,
    entry: &PackageEntry,
    page: &ProjectPage,
    variants: Option<&VariantsFiles>,
    binding: Option<&Binding>,
) -> Selection {
    let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    // Candidates by public version: (file index, wheel platform check passed).
    let mut candidates: BTreeMap<Version, BTreeSet<usize>> = BTreeMap::new();
    let mut backends = BTreeSet::new();
    match entry.kind {
        ProjectKind::Pytorch => {
            for platform in &entry.platforms {
                let machine = Machine::cpu_only(*platform);
                for backend in &entry.backends {
                    let policy = Policy {
                        pinned: Some(backend.clone()),
                        prefer: Vec::new(),
                    };
                    let selection = select_page(catalog, &machine, &policy, &entry.project, &refs);
                    take(
                        entry,
                        std::slice::from_ref(&machine),
                        &refs,
                        selection,
                        &mut candidates,
                        &mut backends,
                    );
                }
            }
            for machine in &entry.machines {
                // One selection holds every platform's build for the machine; each declared
                // platform's files are taken, and the machine's own platform's.
                let mut selection =
                    select_page(catalog, machine, &entry.policy, &entry.project, &refs);
                if let Some(binding) = binding {
                    binding.apply(
                        machine,
                        &entry.policy,
                        &entry.project,
                        &refs,
                        &mut selection,
                    );
                }
                let mut on = vec![machine.clone()];
                on.extend(
                    entry
                        .platforms
                        .iter()
                        .filter(|p| **p != machine.platform)
                        .map(|p| machine.elsewhere(*p)),
                );
                take(entry, &on, &refs, selection, &mut candidates, &mut backends);
            }
            if let Some(variants) = variants {
                take_variants(catalog, entry, &refs, variants, &mut candidates);
            }
        }
        ProjectKind::General => {
            let machines: Vec<Machine> = entry
                .platforms
                .iter()
                .map(|p| Machine::cpu_only(*p))
                .collect();
            for (index, file) in page.files.iter().enumerate() {
                let Ok(dist) = file.filename.parse::<DistFilename>() else {
                    continue;
                };
                let version = dist.version().clone().without_local();
                if entry.wants(&version) && machines.iter().any(|m| fits(m, &refs, index)) {
                    candidates.entry(version).or_default().insert(index);
                }
            }
        }
    }
    // Python tags, requires-python and yanked status.
    for (version, files) in &mut candidates {
        files.retain(|&i| {
            let file = &page.files[i];
            (!file.is_yanked() || entry.allows_yanked(version))
                && python_fits(&file.filename, &entry.python)
                && requires_python_fits(file.requires_python.as_deref(), &entry.python)
        });
        // An sdist only where no wheel fits.
        if files.iter().any(|&i| is_wheel(&page.files[i].filename)) {
            files.retain(|&i| is_wheel(&page.files[i].filename));
        }
    }
    candidates.retain(|_, files| !files.is_empty());
    if entry.versions.is_none() {
        // Only the newest version that has a file (a final release when there is one).
        let newest = candidates
            .keys()
            .rev()
            .find(|v| !v.any_prerelease())
            .or_else(|| candidates.keys().next_back())
            .cloned();
        candidates.retain(|v, _| Some(v) == newest.as_ref());
    }
    let mut files: Vec<usize> = candidates.values().flatten().copied().collect();
    if variants.is_some() {
        let variants_files = variants_files_of(&entry.project, &refs, &files);
        files.extend(variants_files);
    }
    files.sort_unstable();
    files.dedup();
    Selection {
        files,
        backends,
        versions: candidates.into_keys().collect(),
    }
}

fn is_wheel(filename: &str) -> bool {
    std::path::Path::new(filename)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("whl"))
}

/// Whether file `index` runs on `machine`'s platform; sdists always do.
/// Adds what one selection keeps for the entry's versions, for files that run on one of
/// `machines` (one machine on several platforms).
fn take(
    entry: &PackageEntry,
    machines: &[Machine],
    refs: &[FileRef<'_>],
    selection: PageSelection,
    candidates: &mut BTreeMap<Version, BTreeSet<usize>>,
    backends: &mut BTreeSet<Backend>,
) {
    for version in selection.versions {
        if !entry.wants(&version.version) {
            continue;
        }
        let on_platforms = version.decision.iter().chain(
            version
                .platforms
                .iter()
                .filter(|p| machines.iter().any(|m| m.platform == p.platform))
                .map(|p| &p.decision),
        );
        backends.extend(on_platforms.filter_map(|d| d.chosen.clone()));
        let kept = version
            .kept
            .into_iter()
            .filter(|&i| machines.iter().any(|machine| fits(machine, refs, i)));
        candidates.entry(version.version).or_default().extend(kept);
    }
}

fn fits(machine: &Machine, refs: &[FileRef<'_>], index: usize) -> bool {
    let filename = refs[index].filename;
    if !is_wheel(filename) {
        return true;
    }
    WheelParts::split(filename).is_ok_and(|w| platform_matches(machine, w.platform_tags()))
}

/// Whether a wheel's Python and ABI tags install on one of `pythons` (PEP 425): `py3`, `py3N`
/// up to the version, `cp3N` with `abi3` up to the version, `cp3N` with its own ABI (or
/// `none`) for exactly that version, `cp3Nt` only on a free-threaded one. Other
/// implementations (`pp`, `graalpy`) are left out. Sdists and an empty list always fit.
fn python_fits(filename: &str, pythons: &[PythonVersion]) -> bool {
    if pythons.is_empty() || !is_wheel(filename) {
        return true;
    }
    let Ok(wheel) = WheelParts::split(filename) else {
        return false;
    };
    pythons.iter().any(|target| {
        wheel.python.split('.').any(|python| {
            wheel
                .abi
                .split('.')
                .any(|abi| tag_fits(python, abi, *target))
        })
    })
}

fn tag_fits(python: &str, abi: &str, target: PythonVersion) -> bool {
    let minor_of = |digits: &str| -> Option<u32> {
        let rest = digits.strip_prefix(&target.major.to_string())?;
        if rest.is_empty() {
            return None;
        }
        rest.parse().ok()
    };
    if let Some(digits) = python.strip_prefix("py") {
        if digits == target.major.to_string() {
            return true;
        }
        return minor_of(digits).is_some_and(|minor| minor <= target.minor);
    }
    let Some(digits) = python.strip_prefix("cp") else {
        return false;
    };
    let Some(minor) = minor_of(digits) else {
        return false;
    };
    if abi == "abi3" {
        return !target.free_threaded && minor <= target.minor;
    }
    if minor != target.minor {
        return false;
    }
    abi.ends_with('t') == target.free_threaded || abi == "none"
}

/// Whether one of `pythons` satisfies the file's `Requires-Python` (an unparseable one is
/// ignored: the tags decide).
fn requires_python_fits(requires_python: Option<&str>, pythons: &[PythonVersion]) -> bool {
    let Some(text) = requires_python else {
        return true;
    };
    let Ok(specifiers) = text.parse::<VersionSpecifiers>() else {
        return true;
    };
    pythons.is_empty()
        || pythons.iter().any(|p| {
            format!("{}.{}", p.major, p.minor)
                .parse::<Version>()
                .is_ok_and(|v| specifiers.contains(&v))
        })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wheelgate_resolver::index::{IndexFile, Yanked};

    use super::*;
    use crate::config::MirrorConfig;

    fn entry(toml: &str) -> PackageEntry {
        // Selection alone, as without resolution.
        let toml = format!("dependencies = false\n{toml}");
        MirrorConfig::parse(&toml, Path::new("mirror.toml"))
            .unwrap()
            .packages
            .remove(0)
    }

    fn page(names: &[&str]) -> ProjectPage {
        ProjectPage {
            files: names
                .iter()
                .map(|n| IndexFile::new(*n, format!("/whl/{n}")))
                .collect(),
            ..ProjectPage::default()
        }
    }

    fn names(page: &ProjectPage, selection: &Selection) -> Vec<String> {
        selection
            .files
            .iter()
            .map(|&i| page.files[i].filename.clone())
            .collect()
    }

    fn py(text: &str) -> PythonVersion {
        text.parse().unwrap()
    }

    #[test]
    fn python_tags() {
        let both = [py("3.11"), py("3.12")];
        for (filename, fits) in [
            ("a-1-py3-none-any.whl", true),
            ("a-1-py2.py3-none-any.whl", true),
            ("a-1-py312-none-any.whl", true),
            ("a-1-py313-none-any.whl", false),
            ("a-1-cp312-cp312-manylinux_2_28_x86_64.whl", true),
            ("a-1-cp310-cp310-manylinux_2_28_x86_64.whl", false),
            ("a-1-cp39-abi3-manylinux_2_28_x86_64.whl", true),
            ("a-1-cp313-abi3-manylinux_2_28_x86_64.whl", false),
            ("a-1-cp312-cp312t-manylinux_2_28_x86_64.whl", false),
            ("a-1-pp310-pypy310_pp73-manylinux_2_28_x86_64.whl", false),
            ("a-1.tar.gz", true),
        ] {
            assert_eq!(python_fits(filename, &both), fits, "{filename}");
        }
        assert!(python_fits(
            "a-1-cp313-cp313t-manylinux_2_28_x86_64.whl",
            &[py("3.13t")]
        ));
        assert!(!python_fits(
            "a-1-cp313-cp313-manylinux_2_28_x86_64.whl",
            &[py("3.13t")]
        ));
        assert!(python_fits("a-1-cp310-cp310-win_amd64.whl", &[]));
        assert!(requires_python_fits(Some(">=3.10"), &both));
        assert!(!requires_python_fits(Some(">=3.13"), &both));
        assert!(requires_python_fits(Some("not a specifier"), &both));
    }

    // Names as download.pytorch.org's aggregated page lists them.
    const TORCH_PAGE: &[&str] = &[
        "cu130/torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
        "cu130/torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl",
        "cu130/torch-2.9.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
        "cu128/torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
        "cpu/torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "cpu/torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        "cu126/torch-2.6.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
        "cpu/torch-2.6.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "cu130/torch-2.10.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
    ];

    fn torch_page() -> ProjectPage {
        ProjectPage {
            files: TORCH_PAGE
                .iter()
                .map(|path| {
                    let (_, name) = path.split_once('/').unwrap();
                    IndexFile::new(name, format!("/whl/{path}"))
                })
                .collect(),
            ..ProjectPage::default()
        }
    }

    #[test]
    fn backends_platforms_python_and_versions() {
        let entry = entry(
            "backends = [\"cu130\", \"cpu\"]\npython = [\"3.12\"]\n[[package]]\nname = \"torch\"\nversions = \">=2.6,<2.10\"\n",
        );
        let page = torch_page();
        let selection = select_files(Catalog::embedded(), &entry, &page);
        assert_eq!(
            names(&page, &selection),
            [
                "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.6.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            ]
        );
        assert_eq!(
            selection
                .backends
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["cpu", "cu130"]
        );
    }

    #[test]
    fn machines_get_their_build_per_version() {
        let entry = entry(
            r#"
            python = ["3.12"]
            machines = [
                { platform = "linux-x86_64", glibc = "2.36", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } },
                { platform = "macos-arm64" },
            ]
            [[package]]
            name = "torch"
            versions = ">=2.6,<2.10"
            "#,
        );
        let page = torch_page();
        let selection = select_files(Catalog::embedded(), &entry, &page);
        // The H100 gets cu130 for 2.9.0 and falls back to cu126 for 2.6.0; the Mac the plain
        // wheel on its own platform and, on the declared platform (the default, Linux x86_64),
        // the CPU build a machine without a GPU runs there.
        assert_eq!(
            names(&page, &selection),
            [
                "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
                "torch-2.6.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.6.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            ]
        );
    }

    #[test]
    fn general_projects_newest_version_wheels_before_sdists_no_yanked() {
        let mut page = page(&[
            "filelock-3.19.1-py3-none-any.whl",
            "filelock-3.19.1.tar.gz",
            "filelock-3.20.0-py3-none-any.whl",
            "filelock-3.20.0.tar.gz",
            "filelock-3.21.0.tar.gz",
            "filelock-3.22.0rc1-py3-none-any.whl",
        ]);
        page.files[4].yanked = Yanked::Yes { reason: None };
        let newest = entry("[[package]]\nname = \"filelock\"\n");
        let selection = select_files(Catalog::embedded(), &newest, &page);
        assert_eq!(
            names(&page, &selection),
            ["filelock-3.20.0-py3-none-any.whl"]
        );
        let pinned = entry("[[package]]\nname = \"filelock\"\nversions = \"==3.21.0\"\n");
        let selection = select_files(Catalog::embedded(), &pinned, &page);
        assert_eq!(names(&page, &selection), ["filelock-3.21.0.tar.gz"]);
        let range = entry("[[package]]\nname = \"filelock\"\nversions = \">=3.19\"\n");
        let selection = select_files(Catalog::embedded(), &range, &page);
        assert_eq!(
            names(&page, &selection),
            [
                "filelock-3.19.1-py3-none-any.whl",
                "filelock-3.20.0-py3-none-any.whl"
            ]
        );
        let none = entry("[[package]]\nname = \"filelock\"\nversions = \"==9.9\"\n");
        assert!(
            select_files(Catalog::embedded(), &none, &page)
                .files
                .is_empty()
        );
    }
}
