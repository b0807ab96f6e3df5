//! Looking up what a build needs: the release train a project version belongs to, and the
//! requirement of one backend of that release on one platform, inferred where the data is silent.

use pep440_rs::Version;

use super::{Catalog, DriverFloor, Release, ReleaseLine};
use crate::backend::Backend;
use crate::machine::{Arch, GfxTarget, Os, Platform};
use crate::version::{ComputeCapability, CudaVersion};

/// Something the catalog did not say and selection assumed; shown in explanations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inferred(pub String);

impl std::fmt::Display for Inferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The torch release whose rules apply to a project version.
#[derive(Debug, Clone)]
pub struct TrainRelease<'c> {
    /// The catalog entry of the release.
    pub release: &'c Release,
    /// Why these rules are an assumption, when they are.
    pub inferred: Option<Inferred>,
}

/// What one backend of one release needs from a machine on one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendRules {
    /// The backend these rules are for.
    pub backend: Backend,
    /// What the build needs from the machine.
    pub requirement: Requirement,
    /// What was assumed to get here.
    pub inferred: Vec<Inferred>,
    /// The catalog's note on the backend, shown with the choice.
    pub note: Option<String>,
}

/// The hardware a build needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// A CPU build runs anywhere its platform tags allow.
    Nothing,
    /// An NVIDIA driver of the CUDA family and GPUs covered by the compiled architectures.
    Cuda {
        /// The CUDA version of the build (`12.8` for `cu128`).
        cuda: CudaVersion,
        /// `None` when the catalog knows no floor for the family.
        floor: Option<DriverFloor>,
        /// The compute capabilities the build has SASS code for.
        sm: Vec<ComputeCapability>,
        /// The compute capabilities the build also ships PTX for.
        ptx: Vec<ComputeCapability>,
    },
    /// AMD GPUs whose gfx target the build was compiled for.
    Rocm {
        /// The gfx targets compiled in.
        gfx: Vec<GfxTarget>,
    },
    /// An Intel GPU the XPU build supports: one the probes found usable whose device IP, where
    /// known, is among these.
    Xpu {
        /// The device IP versions PyTorch's XPU builds list (`20.1.0`).
        device_ips: Vec<String>,
    },
}

impl Catalog {
    /// The release train a project version belongs to: torch by its own `major.minor`, companions
    /// (torchvision, torchaudio) by the catalog's trains or their numbering rule, anything else
    /// PyTorch builds by the newest release line (marked inferred).
    pub fn train_release(&self, normalized_project: &str, version: &Version) -> TrainRelease<'_> {
        let Some(torch_line) = self.torch_line(normalized_project, version) else {
            let newest = self.newest_release();
            return TrainRelease {
                release: newest,
                inferred: Some(Inferred(format!(
                    "{normalized_project} {version} is not part of a known torch release train; the rules of torch {} were used",
                    newest.torch
                ))),
            };
        };
        if let Some(exact) = self.releases.iter().find(|r| r.torch == torch_line) {
            let inferred = exact.inferred.then(|| {
                Inferred(format!(
                    "the build list of torch {torch_line} is not confirmed from a primary source"
                ))
            });
            return TrainRelease {
                release: exact,
                inferred,
            };
        }
        // Nearest known line: the newest older one, or the oldest when older than every entry.
        let nearest = self
            .releases
            .iter()
            .find(|r| r.torch < torch_line)
            .unwrap_or_else(|| {
                self.releases
                    .last()
                    .expect("a catalog has at least one release")
            });
        TrainRelease {
            release: nearest,
            inferred: Some(Inferred(format!(
                "torch {torch_line} is not in the catalog; the rules of torch {} were used",
                nearest.torch
            ))),
        }
    }

    /// What `backend` of `release` needs on `platform`, inferring from the newest known rule of
    /// the same family where the catalog has no entry (`cu134` is CUDA 13.4, family 13).
    pub fn backend_rules(
        &self,
        release: &Release,
        backend: &Backend,
        platform: Platform,
    ) -> BackendRules {
        let entry = release.backends.get(backend);
        let mut inferred = Vec::new();
        if entry.is_some_and(|e| e.inferred) {
            inferred.push(Inferred(format!(
                "{backend} for torch {} is not confirmed from a primary source",
                release.torch
            )));
        }
        let note = entry.and_then(|e| e.note.clone());
        let requirement = match backend {
            Backend::Cpu => Requirement::Nothing,
            Backend::Xpu => Requirement::Xpu {
                device_ips: self.xpu_device_ips.clone(),
            },
            Backend::Rocm(version) => {
                let gfx = if let Some((_, targets)) =
                    self.rocm_gfx.iter().find(|(v, _)| v == version)
                {
                    targets.clone()
                } else if let Some(agreed) = self.infer_gfx(release, version) {
                    inferred.push(Inferred(format!(
                        "{backend} is not in the catalog; assumed {}: {}",
                        assumed_from(&agreed.sources, "gfx targets"),
                        shown(&agreed.list)
                    )));
                    agreed.list
                } else {
                    inferred.push(Inferred(format!(
                        "{backend} is not in the catalog and no ROCm build is; its gfx targets are unknown"
                    )));
                    Vec::new()
                };
                Requirement::Rocm { gfx }
            }
            Backend::Cuda(cuda) => {
                let floor = self.cuda_families.get(&cuda.major).cloned();
                let sm = self.sm_for(release, backend, platform, &mut inferred);
                let ptx = entry.map(|e| e.ptx.clone()).unwrap_or_default();
                Requirement::Cuda {
                    cuda: *cuda,
                    floor,
                    sm,
                    ptx,
                }
            }
        };
        BackendRules {
            backend: backend.clone(),
            requirement,
            inferred,
            note,
        }
    }

    fn sm_for(
        &self,
        release: &Release,
        backend: &Backend,
        platform: Platform,
        inferred: &mut Vec<Inferred>,
    ) -> Vec<ComputeCapability> {
        if let Some(set) = release
            .backends
            .get(backend)
            .and_then(|e| sm_set_name(e, platform))
        {
            return self.sm_sets[set].clone();
        }
        let Backend::Cuda(cuda) = backend else {
            return Vec::new();
        };
        if let Some(agreed) = self.infer_sm(release, backend, *cuda, platform) {
            inferred.push(Inferred(format!(
                "the compiled compute capabilities of {backend} for torch {} on {platform} are not in the catalog; assumed {}: {}",
                release.torch,
                assumed_from(&agreed.sources, "compute capabilities"),
                shown(&agreed.list)
            )));
            return agreed.list;
        }
        inferred.push(Inferred(format!(
            "no CUDA {} build on {platform} is in the catalog; the compiled compute capabilities are unknown",
            cuda.major
        )));
        Vec::new()
    }

    /// The backends a release offers on a platform according to the catalog alone, leaving out
    /// builds whose existence is only inferred (an index page is the final word on those).
    pub fn offered_backends(&self, release: &Release, platform: Platform) -> Vec<Backend> {
        release
            .backends
            .iter()
            .filter(|(_, entry)| !entry.inferred)
            .filter(|(_, entry)| {
                entry
                    .os
                    .as_ref()
                    .is_none_or(|list| list.contains(&platform.os))
            })
            .filter(|(backend, entry)| {
                entry.platforms.as_ref().map_or_else(
                    || default_platform(backend, entry, platform),
                    |list| list.contains(&platform),
                )
            })
            .map(|(backend, _)| backend.clone())
            .collect()
    }

    /// What an unlabelled wheel of a release is on a platform (PyPI's default build).
    pub fn plain_backend(&self, release: &Release, platform: Platform) -> Option<Backend> {
        if platform.os == Os::Macos {
            return Some(Backend::Cpu);
        }
        release.plain.get(&Catalog::platform_key(platform)).cloned()
    }
}

/// Where a build of this kind exists when the catalog gives no `platforms`: CPU builds on every
/// platform (`linux-s390x` included) but Windows on Arm (published for a few releases only,
/// listed there), CUDA on Linux
/// and Windows `x86_64` and on Linux aarch64 where an aarch64 sm set is given, ROCm on Linux
/// `x86_64`, XPU on Linux and Windows `x86_64`.
fn default_platform(backend: &Backend, entry: &super::BackendEntry, platform: Platform) -> bool {
    match backend {
        Backend::Cpu => !(platform.os == Os::Windows && platform.arch == Arch::Aarch64),
        Backend::Cuda(_) => match (platform.os, platform.arch) {
            (Os::Linux | Os::Windows, Arch::X86_64) => true,
            (Os::Linux, Arch::Aarch64) => entry.sm_aarch64.is_some(),
            _ => false,
        },
        Backend::Rocm(_) => platform.os == Os::Linux && platform.arch == Arch::X86_64,
        Backend::Xpu => {
            platform.arch == Arch::X86_64 && matches!(platform.os, Os::Linux | Os::Windows)
        }
    }
}

/// Where an inferred list came from: `the compute capabilities of cu128 for torch 2.11`, or with
/// several sources `only the gfx targets that rocm7.2 and rocm7.14 all have`.
fn assumed_from(sources: &[String], what: &str) -> String {
    match sources {
        [one] => format!("the {what} of {one}"),
        [init @ .., last] => format!(
            "only the {what} that {} and {last} all have",
            init.join(", ")
        ),
        [] => format!("no {what}"),
    }
}

/// A list for explanations: `7.5, 8.0, 8.6`.
fn shown<T: std::fmt::Display>(list: &[T]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name of a build's sm set on a platform: Windows falls back to the Linux `x86_64` set.
pub(super) fn sm_set_name(entry: &super::BackendEntry, platform: Platform) -> Option<&String> {
    match (platform.os, platform.arch) {
        (Os::Linux, Arch::Aarch64) => entry.sm_aarch64.as_ref(),
        (Os::Windows, _) => entry.sm_windows.as_ref().or(entry.sm.as_ref()),
        _ => entry.sm.as_ref(),
    }
}

impl Catalog {
    /// The torch release line a project version goes with: torch's own `major.minor`, a
    /// companion's (torchvision, torchaudio) by the catalog's trains or else their numbering
    /// rule (so past the catalog too); `None` for any other project, or a version no rule
    /// places.
    pub fn torch_line(&self, normalized_project: &str, version: &Version) -> Option<ReleaseLine> {
        let release = version.release();
        let line = ReleaseLine {
            major: release.first().copied().unwrap_or(0),
            minor: release.get(1).copied().unwrap_or(0),
        };
        if normalized_project == "torch" {
            return Some(line);
        }
        if let Some(found) = self
            .releases
            .iter()
            .find(|r| r.companions.get(normalized_project) == Some(&line))
        {
            return Some(found.torch);
        }
        companion_rule(normalized_project, line)
    }
}

/// The numbering rules of release trains: torchvision `0.X` goes with torch `2.(X-15)`,
/// torchaudio `2.X` with torch `2.X`.
fn companion_rule(project: &str, line: ReleaseLine) -> Option<ReleaseLine> {
    match project {
        "torchvision" if line.major == 0 && line.minor >= 15 => Some(ReleaseLine {
            major: 2,
            minor: line.minor - 15,
        }),
        "torchaudio" if line.major == 2 => Some(line),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> Version {
        text.parse().unwrap()
    }

    #[test]
    fn companions_map_to_their_torch_release() {
        let catalog = Catalog::embedded();
        assert_eq!(
            catalog
                .train_release("torchvision", &version("0.24.0"))
                .release
                .torch
                .to_string(),
            "2.9"
        );
        assert_eq!(
            catalog
                .train_release("torchaudio", &version("2.11.0"))
                .release
                .torch
                .to_string(),
            "2.11"
        );
        let future = catalog.train_release("torchvision", &version("0.31.0"));
        assert_eq!(future.release.torch.to_string(), "2.15");
        assert!(
            future
                .inferred
                .unwrap()
                .0
                .contains("torch 2.16 is not in the catalog")
        );
        let other = catalog.train_release("torchao", &version("0.13.0"));
        assert!(other.inferred.is_some());
    }

    #[test]
    fn unknown_cuda_backend_is_inferred_from_its_family() {
        let catalog = Catalog::embedded();
        let release = catalog.train_release("torch", &version("2.13.0")).release;
        let rules = catalog.backend_rules(
            release,
            &"cu134".parse().unwrap(),
            "linux-x86_64".parse().unwrap(),
        );
        let Requirement::Cuda { floor, sm, .. } = &rules.requirement else {
            panic!("not CUDA")
        };
        assert_eq!(floor.as_ref().unwrap().linux.to_string(), "580");
        assert!(!sm.iter().any(|cc| cc.to_string() == "7.0"));
        assert!(
            rules.inferred[0].0.contains("cu132"),
            "{:?}",
            rules.inferred
        );
    }

    #[test]
    fn inferred_cuda_sets_never_admit_what_a_known_neighbour_rejects() {
        let catalog = Catalog::embedded();
        let release = catalog.train_release("torch", &version("2.11.0")).release;
        let rules = |platform: &str| {
            let rules = catalog.backend_rules(
                release,
                &"cu129".parse().unwrap(),
                platform.parse().unwrap(),
            );
            let Requirement::Cuda { sm, .. } = &rules.requirement else {
                panic!("not CUDA")
            };
            (shown(sm), rules.inferred[0].0.clone())
        };
        // 2.11's cu128 dropped Volta; 2.10's cu129 has it: the inferred 2.11 cu129 must not.
        let (sm, why) = rules("linux-x86_64");
        assert_eq!(sm, "7.5, 8.0, 8.6, 9.0, 10.0, 12.0");
        assert!(
            why.contains("cu128 for torch 2.11 and cu129 for torch 2.10"),
            "{why}"
        );
        // aarch64: 2.11 cu128 has no 11.0 (Jetson Thor), so neither has the inferred cu129;
        // 12.1 stays, as 12.0 code runs on it either way.
        let (sm, _) = rules("linux-aarch64");
        assert_eq!(sm, "8.0, 9.0, 10.0, 12.0, 12.1");
    }

    #[test]
    fn unknown_rocm_between_known_lists_takes_their_intersection() {
        let catalog = Catalog::embedded();
        let release = catalog.newest_release();
        let rules = catalog.backend_rules(
            release,
            &"rocm7.3".parse().unwrap(),
            "linux-x86_64".parse().unwrap(),
        );
        let Requirement::Rocm { gfx } = &rules.requirement else {
            panic!("not ROCm")
        };
        let has = |t: &str| gfx.iter().any(|g| g.as_str() == t);
        // gfx906 is dropped by rocm7.14, gfx1103 added only there: neither is assumed.
        assert!(!has("gfx906") && !has("gfx1103"));
        assert!(has("gfx942") && has("gfx1151"));
        assert!(
            rules.inferred[0].0.contains("rocm7.2 and rocm7.14"),
            "{:?}",
            rules.inferred
        );
    }

    #[test]
    fn unknown_rocm_backend_uses_newest_older_list() {
        let catalog = Catalog::embedded();
        let release = catalog.newest_release();
        let rules = catalog.backend_rules(
            release,
            &"rocm7.15".parse().unwrap(),
            "linux-x86_64".parse().unwrap(),
        );
        let Requirement::Rocm { gfx } = &rules.requirement else {
            panic!("not ROCm")
        };
        assert!(gfx.iter().any(|g| g.as_str() == "gfx1103"));
        assert!(rules.inferred[0].0.contains("rocm7.14"));
    }

    #[test]
    fn catalog_offers_per_platform() {
        let catalog = Catalog::embedded();
        let release = catalog.train_release("torch", &version("2.9.0")).release;
        let shown = |p: &str| {
            catalog
                .offered_backends(release, p.parse().unwrap())
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            shown("linux-x86_64"),
            "cpu cu126 cu128 cu129 cu130 rocm6.3 rocm6.4 xpu"
        );
        assert_eq!(shown("macos-arm64"), "cpu");
        assert_eq!(shown("linux-aarch64"), "cpu cu126 cu128 cu129 cu130");
        assert_eq!(shown("windows-x86_64"), "cpu cu126 cu128 cu129 cu130 xpu");
        assert_eq!(shown("windows-arm64"), "cpu");
    }

    #[test]
    fn catalog_offers_follow_the_listing() {
        let catalog = Catalog::embedded();
        let shown = |torch: &str, p: &str| {
            let release = catalog.train_release("torch", &version(torch)).release;
            catalog
                .offered_backends(release, p.parse().unwrap())
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        // 2.8.0's aarch64 CUDA build is cu129 only; 2.11's cu129 is Linux only.
        assert_eq!(shown("2.8.0", "linux-aarch64"), "cpu cu129");
        assert_eq!(
            shown("2.11.0", "linux-aarch64"),
            "cpu cu126 cu128 cu129 cu130"
        );
        assert_eq!(
            shown("2.11.0", "windows-x86_64"),
            "cpu cu126 cu128 cu130 xpu"
        );
        assert_eq!(shown("2.11.0", "linux-s390x"), "cpu");
        // CPU builds for Windows on Arm exist for 2.7 to 2.10 only.
        assert_eq!(shown("2.7.0", "windows-arm64"), "cpu");
        assert_eq!(shown("2.6.0", "windows-arm64"), "");
        assert_eq!(shown("2.11.0", "windows-arm64"), "");
    }
}
