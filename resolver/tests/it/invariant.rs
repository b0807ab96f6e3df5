//! The promise of wheelgate over the whole catalog, property-based (issue 8): for generated
//! machines (every GPU architecture and gfx target the catalog mentions, drivers around every
//! floor, one and several GPUs, every platform) and a page listing every backend the catalog
//! knows plus unknown ones (`cu129` where unlisted, `cu134`, `rocm7.14`) for every release:
//!
//! 1. the chosen build is never one whose known or inferred requirements exclude one of the
//!    machine's GPUs, nor one that a known neighbour of an inferred build rejects;
//! 2. a GPU build is chosen whenever one is usable;
//! 3. a GPU build that does not use a GPU here is chosen only on a machine with no GPU of its
//!    vendor, as a CPU build of last resort when nothing on the page runs as built (issue 18),
//!    and then the page never empties: the same page without its CPU wheels is checked too.
//!
//! The oracle below re-states the rules of DESIGN.md independently of `select/check.rs`, and
//! finds the known neighbours of an inferred build itself. Seeded: the same cases every run.

use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use wheelgate_resolver::catalog::{Release, Requirement};
use wheelgate_resolver::machine::{Amd, AmdGpu, GfxTarget, Intel, IntelGpu, Nvidia, NvidiaGpu};
use wheelgate_resolver::select::{FileRef, select_page};
use wheelgate_resolver::{
    Arch, Backend, BackendKind, Catalog, ComputeCapability, CudaVersion, DottedVersion, Machine,
    Os, Platform, Policy,
};

const CASES: u32 = 256;
const SEED: [u8; 32] = *b"wheelgate issue 8 invariant seed";

const PLATFORMS: &[&str] = &[
    "linux-x86_64",
    "linux-aarch64",
    "linux-s390x",
    "windows-x86_64",
    "windows-arm64",
    "macos-arm64",
    "macos-x86_64",
];

/// Backends the catalog does not know for some or all releases.
const UNKNOWN_BACKENDS: &[&str] = &["cu129", "cu134", "rocm7.14"];

/// Every backend the catalog names anywhere, plus the unknown ones.
static BACKENDS: LazyLock<Vec<Backend>> = LazyLock::new(|| {
    let mut all: Vec<Backend> = Catalog::embedded()
        .releases()
        .iter()
        .flat_map(|r| r.backends.keys().cloned())
        .chain(UNKNOWN_BACKENDS.iter().map(|b| b.parse().unwrap()))
        .collect();
    all.sort();
    all.dedup();
    all
});

/// The page: every release's `.0` version with every backend, for Linux x86_64 and aarch64
/// and Windows x86_64 (`%2B` links in backend directories, `linux_x86_64` and
/// `manylinux_2_28_*` tags mixed), CPU wheels for Windows on Arm and IBM Z, unlabelled macOS
/// wheels.
static PAGE: LazyLock<Vec<(String, String)>> = LazyLock::new(|| page(true));

/// The same page without a CPU build: only GPU builds, as PyPI's torch on Linux x86_64.
static GPU_ONLY_PAGE: LazyLock<Vec<(String, String)>> = LazyLock::new(|| page(false));

fn page(with_cpu: bool) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for release in Catalog::embedded().releases() {
        let version = format!("{}.0", release.torch);
        for backend in BACKENDS.iter().filter(|b| with_cpu || **b != Backend::Cpu) {
            for tag in ["linux_x86_64", "manylinux_2_28_aarch64", "win_amd64"] {
                let name = format!("torch-{version}+{backend}-cp312-cp312-{tag}.whl");
                files.push((
                    name.clone(),
                    format!("/whl/{backend}/{}", name.replace('+', "%2B")),
                ));
            }
        }
        if !with_cpu {
            continue;
        }
        for tag in ["win_arm64", "manylinux_2_28_s390x"] {
            let cpu = format!("torch-{version}+cpu-cp312-cp312-{tag}.whl");
            files.push((cpu.clone(), format!("/whl/cpu/{}", cpu.replace('+', "%2B"))));
        }
        let mac = format!("torch-{version}-cp312-none-macosx_11_0_arm64.whl");
        files.push((mac.clone(), format!("/whl/cpu/{mac}")));
    }
    files
}

/// Every compute capability the catalog's sets mention, and the next minor of each (8.6 → 8.7:
/// a GPU a set covers only through an older minor).
fn capabilities() -> Vec<ComputeCapability> {
    let mut all: Vec<ComputeCapability> = Catalog::embedded()
        .sm_sets()
        .flat_map(|(_, set)| set.iter().copied())
        .flat_map(|cc| [cc, ComputeCapability::new(cc.major, cc.minor + 1)])
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Every gfx target of the catalog, and two it has never heard of.
fn gfx_targets() -> Vec<GfxTarget> {
    let mut all: Vec<GfxTarget> = Catalog::embedded()
        .rocm_gfx()
        .iter()
        .flat_map(|(_, list)| list.iter().cloned())
        .chain(["gfx803", "gfx1036"].iter().map(|g| g.parse().unwrap()))
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Drivers at, just below and just above every floor, on both operating systems.
fn drivers() -> Vec<DottedVersion> {
    let catalog = Catalog::embedded();
    let mut all = Vec::new();
    for family in [11, 12, 13] {
        let floor = catalog.driver_floor(family).unwrap();
        for version in [&floor.linux, &floor.windows] {
            let parts = version.parts();
            let below = if parts.len() > 1 && parts[parts.len() - 1] > 0 {
                let mut p = parts.to_vec();
                *p.last_mut().unwrap() -= 1;
                p
            } else {
                vec![parts[0] - 1, 99]
            };
            let mut above = parts.to_vec();
            *above.last_mut().unwrap() += 1;
            for candidate in [parts.to_vec(), below, above] {
                let text: Vec<String> = candidate.iter().map(ToString::to_string).collect();
                all.push(text.join(".").parse().unwrap());
            }
        }
    }
    all
}

fn machines() -> impl Strategy<Value = Machine> {
    let nvidia_gpu = (
        prop::sample::select(capabilities()),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(cc, integrated)| NvidiaGpu {
            name: None,
            compute_capability: Some(cc),
            integrated,
        });
    let cuda_versions: Vec<CudaVersion> = ["11.8", "12.4", "12.8", "12.9", "13.0", "13.4"]
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    let nvidia = (
        prop::option::weighted(0.9, prop::sample::select(drivers())),
        prop::option::weighted(0.3, prop::sample::select(cuda_versions)),
        prop::collection::vec(nvidia_gpu, 0..=3),
    )
        .prop_map(|(driver_version, cuda_version, gpus)| Nvidia {
            driver_version,
            cuda_version,
            gpus,
        });
    let amd_gpu = (
        prop::sample::select(gfx_targets()),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(gfx, integrated)| AmdGpu {
            name: None,
            gfx,
            integrated,
        });
    let amd = prop::collection::vec(amd_gpu, 1..=3).prop_map(|gpus| Amd {
        rocm_version: None,
        gpus,
    });
    let mut ips: Vec<String> = Catalog::embedded().xpu_device_ips().to_vec();
    ips.push("12.0.0".to_string());
    let intel_gpu = (
        prop::option::weighted(0.8, prop::sample::select(ips)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(device_ip, xpu_capable, integrated)| IntelGpu {
            name: None,
            pci_device: None,
            device_ip,
            xpu_capable,
            integrated,
        });
    let intel = prop::collection::vec(intel_gpu, 1..=2).prop_map(|gpus| Intel { gpus });
    (
        prop::sample::select(PLATFORMS),
        prop::option::weighted(0.7, nvidia),
        prop::option::weighted(0.3, amd),
        prop::option::weighted(0.3, intel),
    )
        .prop_map(|(platform, nvidia, amd, intel)| {
            let platform: Platform = platform.parse().unwrap();
            let mut machine = Machine::cpu_only(platform);
            if platform.os == Os::Linux {
                machine.glibc = Some("2.39".parse().unwrap());
            }
            machine.nvidia = nvidia;
            machine.amd = amd;
            machine.intel = intel;
            machine
        })
}

fn covers(sm: &[ComputeCapability], ptx: &[ComputeCapability], gpu: ComputeCapability) -> bool {
    sm.iter()
        .any(|s| s.major == gpu.major && s.minor <= gpu.minor)
        || ptx.iter().any(|p| *p <= gpu)
}

/// The sm set of a catalog entry on a platform, as DESIGN.md states it.
fn known_sm<'c>(
    catalog: &'c Catalog,
    release: &Release,
    backend: &Backend,
    platform: Platform,
) -> Option<&'c [ComputeCapability]> {
    let entry = release.backends.get(backend)?;
    let name = match (platform.os, platform.arch) {
        (Os::Linux, Arch::Aarch64) => entry.sm_aarch64.as_ref(),
        (Os::Windows, _) => entry.sm_windows.as_ref().or(entry.sm.as_ref()),
        _ => entry.sm.as_ref(),
    }?;
    catalog.sm_set(name)
}

/// The known builds an inferred CUDA build must agree with: the release's own nearest builds of
/// the same family (below and above) and the same backend in the nearest older and newer
/// releases that have a list for the platform.
fn cuda_neighbours<'c>(
    catalog: &'c Catalog,
    release: &Release,
    backend: &Backend,
    cuda: CudaVersion,
    platform: Platform,
) -> Vec<&'c [ComputeCapability]> {
    let mut found = Vec::new();
    let family: Vec<(CudaVersion, &[ComputeCapability])> = release
        .backends
        .keys()
        .filter_map(|b| match b {
            Backend::Cuda(v) if v.major == cuda.major && *v != cuda => {
                known_sm(catalog, release, b, platform).map(|set| (*v, set))
            }
            _ => None,
        })
        .collect();
    found.extend(
        family
            .iter()
            .filter(|(v, _)| *v < cuda)
            .max_by_key(|(v, _)| *v)
            .map(|(_, s)| *s),
    );
    found.extend(
        family
            .iter()
            .filter(|(v, _)| *v > cuda)
            .min_by_key(|(v, _)| *v)
            .map(|(_, s)| *s),
    );
    let releases = catalog.releases();
    found.extend(
        releases
            .iter()
            .filter(|r| r.torch < release.torch)
            .find_map(|r| known_sm(catalog, r, backend, platform)),
    );
    found.extend(
        releases
            .iter()
            .rev()
            .filter(|r| r.torch > release.torch)
            .find_map(|r| known_sm(catalog, r, backend, platform)),
    );
    found
}

/// Whether `backend` of `release` runs on `machine` by its (known or inferred) requirements and
/// every known neighbour of an inferred list. `Err` says why not.
fn runs(
    catalog: &Catalog,
    release: &Release,
    backend: &Backend,
    machine: &Machine,
) -> Result<(), String> {
    let platform = machine.platform;
    let rules = catalog.backend_rules(release, backend, platform);
    match &rules.requirement {
        Requirement::Nothing => Ok(()),
        Requirement::Cuda {
            cuda,
            floor,
            sm,
            ptx,
        } => {
            let nvidia = machine.nvidia.as_ref().ok_or("no NVIDIA")?;
            if nvidia.gpus.is_empty() {
                return Err("no NVIDIA GPU".into());
            }
            let floor = floor.as_ref().ok_or("no floor")?;
            let floor = if platform.os == Os::Windows {
                &floor.windows
            } else {
                &floor.linux
            };
            let driver_ok = match (&nvidia.driver_version, nvidia.cuda_version) {
                (Some(driver), _) => driver >= floor,
                (None, Some(version)) => version.major >= cuda.major,
                (None, None) => false,
            };
            if !driver_ok {
                return Err("driver".into());
            }
            let inferred = known_sm(catalog, release, backend, platform).is_none();
            let neighbours = if inferred {
                cuda_neighbours(catalog, release, backend, *cuda, platform)
            } else {
                Vec::new()
            };
            for gpu in nvidia.gpus.iter().filter_map(|g| g.compute_capability) {
                if !covers(sm, ptx, gpu) {
                    return Err(format!("{gpu} not in {sm:?}"));
                }
                if let Some(rejecting) = neighbours.iter().find(|set| !covers(set, &[], gpu)) {
                    return Err(format!(
                        "{gpu} rejected by the known neighbour {rejecting:?}"
                    ));
                }
            }
            Ok(())
        }
        Requirement::Rocm { gfx } => {
            let gpus = machine.amd_gpus_in_use();
            if gpus.is_empty() {
                return Err("no AMD GPU".into());
            }
            let Backend::Rocm(version) = backend else {
                unreachable!()
            };
            let known = catalog.rocm_gfx();
            let exact = known.iter().any(|(v, _)| v == version);
            let neighbours: Vec<&Vec<GfxTarget>> = if exact {
                Vec::new()
            } else {
                let below = known.iter().find(|(v, _)| v < version).map(|(_, l)| l);
                let above = known
                    .iter()
                    .rev()
                    .find(|(v, _)| v > version)
                    .map(|(_, l)| l);
                below.into_iter().chain(above).collect()
            };
            for gpu in gpus {
                if !gfx.contains(&gpu.gfx) || neighbours.iter().any(|l| !l.contains(&gpu.gfx)) {
                    return Err(format!("{} not covered", gpu.gfx));
                }
            }
            Ok(())
        }
        Requirement::Xpu { device_ips } => {
            let intel = machine.intel.as_ref().map_or(&[][..], |i| &i.gpus);
            intel
                .iter()
                .any(|g| {
                    g.xpu_capable
                        && g.device_ip
                            .as_ref()
                            .is_none_or(|ip| device_ips.contains(ip))
                })
                .then_some(())
                .ok_or_else(|| "no supported Intel GPU".into())
        }
    }
}

/// Whether the machine has no GPU at all of `backend`'s vendor, so the build would run on the
/// CPU alone (DESIGN.md: a CPU build of last resort). Any GPU of the vendor counts, one the
/// build cannot use included.
fn no_gpu_of_vendor(machine: &Machine, backend: &Backend) -> bool {
    match backend.kind() {
        BackendKind::Cpu => false,
        BackendKind::Cuda => machine.nvidia.as_ref().is_none_or(|n| n.gpus.is_empty()),
        BackendKind::Rocm => machine.amd.as_ref().is_none_or(|a| a.gpus.is_empty()),
        BackendKind::Xpu => machine.intel.as_ref().is_none_or(|i| i.gpus.is_empty()),
    }
}

/// Whether the page has a file of `backend` for the machine's platform.
fn has_file(platform: Platform, backend: &Backend, with_cpu: bool) -> bool {
    if !with_cpu && *backend == Backend::Cpu {
        return false;
    }
    match (platform.os, platform.arch) {
        (Os::Linux, Arch::X86_64 | Arch::Aarch64) | (Os::Windows, Arch::X86_64) => true,
        (Os::Linux, Arch::S390x) | (Os::Windows | Os::Macos, Arch::Aarch64) => {
            *backend == Backend::Cpu
        }
        // PyTorch stopped publishing Intel macOS wheels; the page has none.
        // And `Platform` admits IBM Z on Linux only.
        (Os::Macos, Arch::X86_64) | (Os::Windows | Os::Macos, Arch::S390x) => false,
    }
}

fn check_machine(machine: &Machine) -> Result<(), TestCaseError> {
    check_page(machine, &PAGE, true)?;
    check_page(machine, &GPU_ONLY_PAGE, false)
}

fn check_page(
    machine: &Machine,
    page: &[(String, String)],
    with_cpu: bool,
) -> Result<(), TestCaseError> {
    let catalog = Catalog::embedded();
    let has_file = |backend: &Backend| has_file(machine.platform, backend, with_cpu);
    let refs: Vec<FileRef<'_>> = page
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    let selection = select_page(catalog, machine, &Policy::default(), "torch", &refs);
    prop_assert_eq!(selection.versions.len(), catalog.releases().len());
    for version in &selection.versions {
        let decision = version
            .decision
            .as_ref()
            .expect("torch versions are labelled");
        let release = catalog.train_release("torch", &version.version).release;
        let explained = || {
            let lines: Vec<String> = decision
                .considered
                .iter()
                .map(ToString::to_string)
                .collect();
            format!(
                "torch {} on {}\n{}\n{}",
                version.version,
                serde_json::to_string(machine).unwrap(),
                lines.join("\n"),
                decision.notes.join("\n")
            )
        };
        // What runs here as built, the CPU build included.
        let runs_as_built = BACKENDS
            .iter()
            .find(|b| has_file(b) && runs(catalog, release, b, machine).is_ok());
        if let Some(chosen) = &decision.chosen {
            let verdict = runs(catalog, release, chosen, machine);
            // A build that does not run as built is chosen only as a CPU build of last resort:
            // no GPU of its vendor here, and nothing on the page runs as built.
            prop_assert!(
                verdict.is_ok() || (no_gpu_of_vendor(machine, chosen) && runs_as_built.is_none()),
                "{chosen} was chosen but does not run: {:?} (and {:?} runs as built)\n{}",
                verdict,
                runs_as_built,
                explained()
            );
            prop_assert_eq!(
                decision.cpu_last_resort.is_some(),
                verdict.is_err(),
                "the decision says whether {} is a CPU build of last resort\n{}",
                chosen,
                explained()
            );
        }
        // Where the page has a build that runs here, as built or on the CPU alone, something
        // is chosen: the page never empties on a machine without a GPU of the build's vendor.
        if let Some(runs_somehow) = BACKENDS.iter().find(|b| {
            has_file(b)
                && (no_gpu_of_vendor(machine, b) || runs(catalog, release, b, machine).is_ok())
        }) {
            prop_assert!(
                decision.chosen.is_some(),
                "nothing chosen although {runs_somehow} runs here\n{}",
                explained()
            );
        }
        let usable_gpu_build = BACKENDS.iter().find(|b| {
            b.kind() != BackendKind::Cpu
                && has_file(b)
                && runs(catalog, release, b, machine).is_ok()
        });
        if let Some(usable) = usable_gpu_build {
            let kind = decision.chosen.as_ref().map(Backend::kind);
            prop_assert!(
                kind.is_some_and(|k| k != BackendKind::Cpu),
                "{usable} runs here, yet {:?} was chosen\n{}",
                decision.chosen,
                explained()
            );
        }
        // Where the page has a CPU file for the platform, something is always chosen.
        if has_file(&Backend::Cpu) {
            prop_assert!(decision.chosen.is_some(), "nothing chosen\n{}", explained());
        }
    }
    Ok(())
}

#[test]
fn no_machine_gets_a_build_it_cannot_run_and_every_usable_gpu_is_used() {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let result = runner.run(&machines(), |machine| check_machine(&machine));
    if let Err(error) = result {
        panic!("{error}");
    }
}
