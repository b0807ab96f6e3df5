//! The catalog against a real listing of torch's files (`wheelgate catalog check`): what the
//! listing has that the catalog does not describe (a release, a backend on a platform, a label
//! it cannot read), what the catalog describes that the listing does not have, and which
//! answers rest on inference. Pure: the caller fetches the page.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Catalog, ReleaseLine};
use crate::backend::Backend;
use crate::filename::{DistFilename, WheelParts};
use crate::machine::{Machine, Platform};
use crate::platform_tags::platform_matches;
use crate::select::FileRef;

/// The platforms a torch wheel is judged for.
const PLATFORMS: [&str; 7] = [
    "linux-x86_64",
    "linux-aarch64",
    "linux-s390x",
    "windows-x86_64",
    "windows-arm64",
    "macos-arm64",
    "macos-x86_64",
];

/// What kind of finding, and whether it needs an operator's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// A release line the listing has and the catalog does not, newer than its oldest.
    ReleaseMissing,
    /// A release line older than the catalog's oldest: left out of the catalog on purpose.
    BeforeCatalog,
    /// A backend the listing has on a platform and the catalog does not describe there.
    BackendMissing,
    /// A backend the catalog describes on a platform and the listing does not have.
    BackendNotListed,
    /// A file whose label names no backend wheelgate can read.
    UnreadableLabel,
    /// An answer resting on inference (a release or backend marked inferred, compiled
    /// architectures not given).
    Inferred,
    /// A `*-variants.json` file's `sm_arch` or `gfx_arch` disagrees with the catalog's set.
    VariantsDisagree,
}

impl FindingKind {
    /// Whether the catalog needs work: a release or backend it does not describe, or one it
    /// describes that is gone. An inference it declares is known; a label that names no
    /// backend is a naming question no catalog entry can answer (such files are left out of
    /// every page).
    pub fn needs_attention(self) -> bool {
        !matches!(
            self,
            FindingKind::Inferred | FindingKind::UnreadableLabel | FindingKind::BeforeCatalog
        )
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// The kind of finding.
    pub kind: FindingKind,
    /// The release line concerned (`2.15`), when one is.
    pub release: Option<String>,
    /// What was found, in words.
    pub message: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// The torch wheels read.
    pub files: usize,
    /// Per release line the listing has: per platform, its backends.
    pub listing: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Every finding, sorted.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether anything needs an operator's attention.
    pub fn needs_attention(&self) -> bool {
        self.findings.iter().any(|f| f.kind.needs_attention())
    }
}

impl Catalog {
    /// Compares the catalog with `files`, a listing of torch's wheels (the aggregated
    /// `/whl/torch/` page, or one backend's).
    pub fn check_listing(&self, files: &[FileRef<'_>]) -> CheckReport {
        let platforms: Vec<Platform> = PLATFORMS
            .iter()
            .map(|p| p.parse().expect("a known platform"))
            .collect();
        let mut report = CheckReport::default();
        // Platforms by their index in `PLATFORMS` (a `Platform` has no order).
        let mut listing: BTreeMap<ReleaseLine, BTreeMap<usize, BTreeSet<Backend>>> =
            BTreeMap::new();
        let mut findings = BTreeSet::new();
        // (release, label) → (files, the first one's error).
        let mut unreadable: BTreeMap<(ReleaseLine, String), (usize, String)> = BTreeMap::new();
        for file in files {
            let Ok(DistFilename::Wheel(_)) = file.filename.parse::<DistFilename>() else {
                continue;
            };
            let Ok(wheel) = WheelParts::split(file.filename) else {
                continue;
            };
            if wheel.name != "torch" {
                continue;
            }
            report.files += 1;
            let Some(line) = release_line(wheel.version) else {
                continue;
            };
            let backend = match wheel.local_label().map(str::parse::<Backend>) {
                Some(Ok(backend)) => Some(backend),
                None => None,
                Some(Err(err)) => {
                    let label = wheel.local_label().unwrap_or_default().to_string();
                    unreadable
                        .entry((line, label))
                        .or_insert_with(|| (0, err.to_string()))
                        .0 += 1;
                    continue;
                }
            };
            let tags: Vec<&str> = wheel.platform_tags().collect();
            for (number, platform) in platforms.iter().enumerate() {
                if !platform_matches(&Machine::cpu_only(*platform), tags.iter().copied()) {
                    continue;
                }
                // An unlabelled wheel is its directory's build (`/whl/cu124/`), else the
                // platform's plain build (what PyPI serves).
                let backend = backend
                    .clone()
                    .or_else(|| directory_backend(file.url))
                    .or_else(|| {
                        let release = self.releases.iter().find(|r| r.torch == line)?;
                        self.plain_backend(release, *platform)
                    });
                if let Some(backend) = backend {
                    listing
                        .entry(line)
                        .or_default()
                        .entry(number)
                        .or_default()
                        .insert(backend);
                }
            }
        }
        for ((line, label), (count, error)) in unreadable {
            findings.insert(Finding {
                kind: FindingKind::UnreadableLabel,
                release: Some(line.to_string()),
                message: format!(
                    "torch {line}: {count} file(s) labelled `{label}`, left out of every page: {error}"
                ),
            });
        }
        // One backend in the whole listing: a backend's own page (`/whl/cu130/torch/`), where
        // the others' absence says nothing.
        let distinct: BTreeSet<&Backend> = listing
            .values()
            .flat_map(|by_platform| by_platform.values().flatten())
            .collect();
        let whole_listing = distinct.len() > 1;
        for (line, by_platform) in &listing {
            let by_platform: Vec<(Platform, &BTreeSet<Backend>)> = by_platform
                .iter()
                .map(|(&number, backends)| (platforms[number], backends))
                .collect();
            self.compare_release(*line, &by_platform, whole_listing, &mut findings);
        }
        report.listing = listing
            .into_iter()
            .map(|(line, by_platform)| {
                let by_platform = by_platform
                    .into_iter()
                    .map(|(number, backends)| {
                        (
                            PLATFORMS[number].to_string(),
                            backends.iter().map(ToString::to_string).collect(),
                        )
                    })
                    .collect();
                (line.to_string(), by_platform)
            })
            .collect();
        report.findings = findings.into_iter().collect();
        report
    }

    fn compare_release(
        &self,
        line: ReleaseLine,
        listed: &[(Platform, &BTreeSet<Backend>)],
        whole_listing: bool,
        findings: &mut BTreeSet<Finding>,
    ) {
        let finding = |kind, message: String| Finding {
            kind,
            release: Some(line.to_string()),
            message: format!("torch {line}: {message}"),
        };
        let Some(release) = self.releases.iter().find(|r| r.torch == line) else {
            let builds: BTreeSet<String> = listed
                .iter()
                .flat_map(|(_, backends)| backends.iter().map(ToString::to_string))
                .collect();
            let builds = builds.into_iter().collect::<Vec<_>>().join(", ");
            let oldest = self.releases.last().map(|r| r.torch);
            findings.insert(if oldest.is_some_and(|oldest| line < oldest) {
                finding(
                    FindingKind::BeforeCatalog,
                    format!("listed ({builds}), older than the catalog's first release: not described"),
                )
            } else {
                finding(
                    FindingKind::ReleaseMissing,
                    format!("listed ({builds}) but not in the catalog: its answers rest on the rules of the nearest release it has"),
                )
            });
            return;
        };
        if release.inferred {
            findings.insert(finding(
                FindingKind::Inferred,
                "its whole entry is inferred, not confirmed from a primary source".to_string(),
            ));
        }
        for &(platform, backends) in listed {
            let described = self.offered_backends(release, platform);
            for backend in backends {
                if described.contains(backend) {
                    continue;
                }
                let known = release.backends.get(backend);
                let (kind, what) = match known {
                    Some(entry) if entry.inferred => (FindingKind::Inferred, "marked inferred"),
                    Some(_) => (
                        FindingKind::BackendMissing,
                        "described for other platforms only",
                    ),
                    None => (FindingKind::BackendMissing, "not described"),
                };
                findings.insert(finding(
                    kind,
                    format!("{backend} on {platform} is listed; the catalog has it {what}"),
                ));
            }
            let gone = described
                .iter()
                .filter(|b| whole_listing && !backends.contains(*b));
            for backend in gone {
                findings.insert(finding(
                    FindingKind::BackendNotListed,
                    format!("{backend} on {platform} is in the catalog but not listed"),
                ));
            }
        }
        for (backend, entry) in &release.backends {
            let cuda = matches!(backend, Backend::Cuda(_));
            if cuda && entry.sm.is_none() && !entry.inferred {
                findings.insert(finding(
                    FindingKind::Inferred,
                    format!("{backend}'s compiled architectures are not given: inferred from its neighbours"),
                ));
            }
        }
    }
}

/// The backend a link's directory names (`/whl/cu124/torch-...`), if one does.
fn directory_backend(url: &str) -> Option<Backend> {
    let path = url.split(['#', '?']).next().unwrap_or(url);
    let mut segments: Vec<&str> = path.split('/').collect();
    segments.pop();
    segments
        .iter()
        .rev()
        .find_map(|segment| segment.parse().ok())
}

/// The release line of a torch version (`2.10.0+cu128` → `2.10`).
pub(super) fn release_line(version: &str) -> Option<ReleaseLine> {
    let public = version.split('+').next()?;
    let mut parts = public.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some(ReleaseLine {
        major,
        minor: minor.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(names: &[&str]) -> CheckReport {
        let files: Vec<FileRef<'_>> = names
            .iter()
            .map(|name| FileRef {
                filename: name,
                url: name,
            })
            .collect();
        Catalog::embedded().check_listing(&files)
    }

    #[test]
    fn a_release_a_backend_and_a_label_the_catalog_lacks_are_found() {
        let report = check(&[
            "torch-2.10.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.10.0+cu134-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.10.0+cu12.8-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.99.0+cu140-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torchvision-0.25.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",
        ]);
        assert_eq!(report.files, 4);
        assert!(report.needs_attention());
        let text: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{:?} {}", f.kind, f.message))
            .collect();
        let has = |needle: &str| text.iter().any(|t| t.contains(needle));
        assert!(
            has("ReleaseMissing torch 2.99: listed (cu140)"),
            "{text:#?}"
        );
        assert!(
            has(
                "BackendMissing torch 2.10: cu134 on linux-x86_64 is listed; the catalog has it not described"
            ),
            "{text:#?}"
        );
        assert!(
            has("UnreadableLabel torch 2.10: 1 file(s) labelled `cu12.8`"),
            "{text:#?}"
        );
        assert!(
            has(
                "BackendNotListed torch 2.10: cu126 on linux-x86_64 is in the catalog but not listed"
            ),
            "{text:#?}"
        );
        assert!(!has("cu128 on linux-x86_64"), "{text:#?}");
    }

    #[test]
    fn a_listing_the_catalog_describes_needs_nothing() {
        let mut names = Vec::new();
        for backend in [
            "cpu", "cu126", "cu128", "cu129", "cu130", "rocm6.3", "rocm6.4", "xpu",
        ] {
            names.push(format!(
                "torch-2.9.0+{backend}-cp312-cp312-manylinux_2_28_x86_64.whl"
            ));
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let report = check(&names);
        let x86: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.message.contains("linux-x86_64"))
            .collect();
        assert!(x86.is_empty(), "{x86:#?}");
    }

    #[test]
    fn one_backends_page_says_nothing_of_the_others() {
        let report = check(&[
            "torch-2.10.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.10.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl",
        ]);
        assert!(!report.needs_attention(), "{:#?}", report.findings);
    }
}
