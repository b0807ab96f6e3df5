//! One page for every platform: per version, each platform its files cover keeps the build that
//! runs best there for the machine's accelerators, and a torch-bound project follows torch's
//! choice platform by platform.

use std::collections::BTreeMap;

use wheelgate_resolver::select::bind::{Pins, TorchChoices, apply_pins, bound_builds};
use wheelgate_resolver::select::{FileRef, PageSelection, TorchPin, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy};

const X86: &str = "manylinux_2_28_x86_64";
const ARM: &str = "manylinux_2_28_aarch64";
const WIN: &str = "win_amd64";
const MAC: &str = "macosx_11_0_arm64";

/// Driver 575 supports CUDA 12.9: cu129 where it is published, cu128 elsewhere.
const H100_575: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"575.51.03","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
const MI300X: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#;
const NO_GPU: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;

/// `project` `version`'s wheels: each `(backend, platforms)` as PyTorch's index links them,
/// plus the unlabelled macOS wheel.
fn page(project: &str, version: &str, builds: &[(&str, &[&str])]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for (backend, platforms) in builds {
        for platform in *platforms {
            let name = format!("{project}-{version}+{backend}-cp312-cp312-{platform}.whl");
            let url = format!("/whl/{backend}/{}", name.replace('+', "%2B"));
            files.push((name, url));
        }
    }
    let mac = format!("{project}-{version}-cp312-none-{MAC}.whl");
    files.push((mac.clone(), format!("/whl/cpu/{mac}")));
    files
}

/// torch 2.9.0 as PyTorch publishes builds that differ by platform: cu129 on Linux only, ROCm
/// on Linux x86_64 only.
fn torch_page() -> Vec<(String, String)> {
    page(
        "torch",
        "2.9.0",
        &[
            ("cpu", &[X86, ARM, WIN]),
            ("cu126", &[X86, ARM, WIN]),
            ("cu128", &[X86, ARM, WIN]),
            ("cu129", &[X86, ARM]),
            ("rocm6.4", &[X86]),
        ],
    )
}

fn refs(files: &[(String, String)]) -> Vec<FileRef<'_>> {
    files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect()
}

fn select(machine: &Machine, project: &str, files: &[(String, String)]) -> PageSelection {
    select_page(
        Catalog::embedded(),
        machine,
        &Policy::default(),
        project,
        &refs(files),
    )
}

fn machine(json: &str) -> Machine {
    serde_json::from_str(json).unwrap()
}

/// The kept files of the only version: for each platform, the label of its kept wheels (`-`
/// for the unlabelled macOS one).
fn kept_by_platform(selection: &PageSelection, files: &[(String, String)]) -> Vec<String> {
    selection.versions[0]
        .kept
        .iter()
        .map(|&i| {
            let name = &files[i].0;
            let label = name
                .split_once('+')
                .map_or("-", |(_, rest)| rest.split('-').next().unwrap());
            let platform = [X86, ARM, WIN, MAC]
                .into_iter()
                .find(|p| name.contains(p))
                .unwrap();
            format!("{platform}:{label}")
        })
        .collect()
}

#[test]
fn each_platform_keeps_the_build_that_runs_best_there() {
    let files = torch_page();
    for (machine_json, expected) in [
        (
            H100_575,
            [
                "manylinux_2_28_x86_64:cu129",
                "manylinux_2_28_aarch64:cu129",
                "win_amd64:cu128",
            ],
        ),
        (
            MI300X,
            [
                "manylinux_2_28_x86_64:rocm6.4",
                "manylinux_2_28_aarch64:cpu",
                "win_amd64:cpu",
            ],
        ),
        (
            NO_GPU,
            [
                "manylinux_2_28_x86_64:cpu",
                "manylinux_2_28_aarch64:cpu",
                "win_amd64:cpu",
            ],
        ),
    ] {
        let selection = select(&machine(machine_json), "torch", &files);
        let mut kept = kept_by_platform(&selection, &files);
        kept.sort();
        let mut want: Vec<String> = expected.iter().map(ToString::to_string).collect();
        want.push(format!("{MAC}:-"));
        want.sort();
        assert_eq!(kept, want, "{machine_json}");
        // Every file not kept is dropped with the platform whose choice it is not.
        assert_eq!(
            selection.dropped.len() + selection.versions[0].kept.len(),
            files.len()
        );
    }
}

#[test]
fn the_machines_own_platform_is_decided_as_before_and_the_others_are_listed() {
    let files = torch_page();
    let selection = select(&machine(MI300X), "torch", &files);
    let version = &selection.versions[0];
    let own = version.decision.as_ref().unwrap();
    assert_eq!(own.chosen.as_ref().unwrap().to_string(), "rocm6.4");
    let elsewhere: BTreeMap<String, String> = version
        .platforms
        .iter()
        .map(|p| {
            (
                p.platform.to_string(),
                p.decision.chosen.as_ref().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        elsewhere,
        BTreeMap::from([
            ("linux-aarch64".to_string(), "cpu".to_string()),
            ("macos-arm64".to_string(), "cpu".to_string()),
            ("windows-x86_64".to_string(), "cpu".to_string()),
        ])
    );
    // ROCm on Windows is said to have no file there, not silently skipped.
    let windows = version
        .platforms
        .iter()
        .find(|p| p.platform.to_string() == "windows-x86_64")
        .unwrap();
    let rocm = windows
        .decision
        .considered
        .iter()
        .find(|c| c.backend.to_string() == "rocm6.4")
        .unwrap();
    assert_eq!(
        rocm.rejection.as_ref().unwrap().to_string(),
        "no file of this build for windows-x86_64"
    );
    let reasons: Vec<String> = selection
        .dropped
        .iter()
        .map(|(i, why)| format!("{}: {why}", files[*i].0))
        .collect();
    let dropped = |name: &str, why: &str| reasons.contains(&format!("{name}: {why}"));
    assert!(
        dropped(
            "torch-2.9.0+cu128-cp312-cp312-win_amd64.whl",
            "cu128 was not chosen for windows-x86_64"
        ),
        "{reasons:#?}"
    );
    assert!(
        !reasons
            .iter()
            .any(|r| r.starts_with("torch-2.9.0+cpu-cp312-cp312-win_amd64.whl")),
        "{reasons:#?}"
    );
}

#[test]
fn an_aarch64_machine_reading_pypi_keeps_the_x86_64_cuda_default_as_last_resort_there() {
    // PyPI's torch 2.9.0, unlabelled: a CUDA build on Linux x86_64, CPU builds elsewhere. An
    // aarch64 machine without a GPU keeps its own CPU wheel and, for x86_64, the only build.
    let files: Vec<(String, String)> = [X86, ARM, WIN, MAC]
        .iter()
        .map(|platform| {
            let abi = if *platform == MAC { "none" } else { "cp312" };
            let name = format!("torch-2.9.0-cp312-{abi}-{platform}.whl");
            (name.clone(), format!("https://files.example/{name}"))
        })
        .collect();
    let selection = select(
        &machine(r#"{"platform":"linux-aarch64","glibc":"2.36"}"#),
        "torch",
        &files,
    );
    assert_eq!(selection.versions[0].kept, [0, 1, 2, 3]);
    let x86 = selection.versions[0]
        .platforms
        .iter()
        .find(|p| p.platform.to_string() == "linux-x86_64")
        .unwrap();
    assert_eq!(x86.decision.chosen.as_ref().unwrap().to_string(), "cu128");
    assert!(x86.decision.cpu_last_resort.is_some());
}

/// `files` of an xformers-like project, every build pinning `torch==2.9.0`, selected for
/// `machine` and bound to `torch`'s choices, reading pins until none is pending; with the
/// rounds of reads that took.
fn bound_to_torch_29(
    machine: &Machine,
    torch: &TorchChoices,
    files: &[(String, String)],
) -> (PageSelection, usize) {
    let refs = refs(files);
    let catalog = Catalog::embedded();
    let policy = Policy::default();
    let mut selection = select_page(catalog, machine, &policy, "xformers", &refs);
    let builds = bound_builds(catalog, machine, &policy, "xformers", &refs, &selection);
    let mut pins = Pins::new();
    let mut rounds = 0;
    loop {
        let pending = builds.pending(&selection, &pins, torch);
        if pending.is_empty() {
            break;
        }
        rounds += 1;
        for (build, _) in pending {
            pins.insert(build, Ok(TorchPin::Specifiers("==2.9.0".parse().unwrap())));
        }
    }
    apply_pins(&mut selection, &builds, &pins, torch);
    (selection, rounds)
}

#[test]
fn a_torch_bound_project_follows_torchs_choice_on_each_platform() {
    let machine = machine(H100_575);
    let torch_files = torch_page();
    let torch = TorchChoices::from_selection(&select(&machine, "torch", &torch_files));
    // xformers-like: every build pins torch==2.9.0; cu129 only on Linux x86_64, as torch's.
    let files = page(
        "xformers",
        "0.0.33",
        &[
            ("cu126", &[X86, WIN]),
            ("cu128", &[X86, WIN]),
            ("cu129", &[X86]),
        ],
    );
    let (selection, _) = bound_to_torch_29(&machine, &torch, &files);
    let mut kept = kept_by_platform(&selection, &files);
    kept.sort();
    assert_eq!(
        kept,
        [
            "macosx_11_0_arm64:-",
            "manylinux_2_28_x86_64:cu129",
            "win_amd64:cu128"
        ]
    );
    let windows = selection.versions[0]
        .platforms
        .iter()
        .find(|p| p.platform.to_string() == "windows-x86_64")
        .unwrap();
    assert!(
        windows
            .decision
            .notes
            .iter()
            .any(|n| n.contains("cu128: built against torch 2.9.0")),
        "{:?}",
        windows.decision.notes
    );
}

#[test]
fn a_torch_bound_build_is_left_out_only_where_torch_gets_another() {
    let machine = machine(H100_575);
    let torch = TorchChoices::from_selection(&select(&machine, "torch", &torch_page()));
    // Only a cu128 build, on both platforms: torch gets cu129 on Linux, so Linux loses this
    // version and Windows keeps it.
    let files = page("xformers", "0.0.33", &[("cu128", &[X86, WIN])]);
    let (selection, rounds) = bound_to_torch_29(&machine, &torch, &files);
    // One build to read, on both platforms: one round of reads settles it.
    assert_eq!(rounds, 1);
    let mut kept = kept_by_platform(&selection, &files);
    kept.sort();
    assert_eq!(kept, ["macosx_11_0_arm64:-", "win_amd64:cu128"]);
    assert_eq!(
        selection.versions[0].decision.as_ref().unwrap().chosen,
        None
    );
}
