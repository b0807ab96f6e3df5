//! Selection over whole project pages in download.pytorch.org's aggregated form: per-version
//! fallback, one backend per version, release-train consistency, plain and variant wheels.

use wheelgate_resolver::select::{Dropped, FileRef, PageSelection, select_page};
use wheelgate_resolver::{Catalog, Machine, Policy};

/// A torch-like page: for each (version, backends) every backend's wheels for Linux x86_64 and
/// aarch64, Windows, plus unlabelled macOS wheels, in download.pytorch.org's link form.
fn page(project: &str, releases: &[(&str, &[&str])]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for (version, backends) in releases {
        for backend in *backends {
            for platform in [
                "manylinux_2_28_x86_64",
                "manylinux_2_28_aarch64",
                "win_amd64",
            ] {
                let name = format!("{project}-{version}+{backend}-cp312-cp312-{platform}.whl");
                let url = format!("/whl/{backend}/{}", name.replace('+', "%2B"));
                files.push((name, url));
            }
        }
        let mac = format!("{project}-{version}-cp312-none-macosx_11_0_arm64.whl");
        files.push((mac.clone(), format!("/whl/cpu/{mac}")));
    }
    files
}

fn select(machine: &str, project: &str, files: &[(String, String)]) -> PageSelection {
    let machine: Machine = serde_json::from_str(machine).unwrap();
    let refs: Vec<FileRef<'_>> = files
        .iter()
        .map(|(filename, url)| FileRef { filename, url })
        .collect();
    select_page(
        Catalog::embedded(),
        &machine,
        &Policy::default(),
        project,
        &refs,
    )
}

fn kept_names(selection: &PageSelection, files: &[(String, String)], version: &str) -> Vec<String> {
    let entry = selection
        .versions
        .iter()
        .find(|v| v.version.to_string() == version)
        .unwrap();
    entry.kept.iter().map(|i| files[*i].0.clone()).collect()
}

const H100: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
const TORCH_29: (&str, &[&str]) = (
    "2.9.0",
    &["cpu", "cu126", "cu128", "cu130", "rocm6.4", "xpu"],
);
const TORCH_26: (&str, &[&str]) = (
    "2.6.0",
    &["cpu", "cu118", "cu124", "cu126", "rocm6.2.4", "xpu"],
);

#[test]
fn per_version_fallback_keeps_exactly_one_backend() {
    let files = page("torch", &[TORCH_29, TORCH_26]);
    let selection = select(H100, "torch", &files);
    let versions: Vec<String> = selection
        .versions
        .iter()
        .map(|v| v.version.to_string())
        .collect();
    assert_eq!(versions, ["2.9.0", "2.6.0"]);
    // Per platform: cu130 on Linux x86_64, aarch64 and Windows, and macOS's only build.
    let kept = kept_names(&selection, &files, "2.9.0");
    assert_eq!(
        kept,
        [
            "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.9.0+cu130-cp312-cp312-win_amd64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        ]
    );
    let kept = kept_names(&selection, &files, "2.6.0");
    assert!(
        kept.iter()
            .all(|n| n.contains("+cu126") || n.contains("macosx")),
        "{kept:?}"
    );
    assert_eq!(kept.len(), 4, "{kept:?}");
    // Every other file is dropped with a reason.
    assert_eq!(selection.dropped.len() + 8, files.len());
    assert!(
        selection
            .dropped
            .iter()
            .all(|(_, why)| matches!(why, Dropped::NotChosen { .. }))
    );
}

#[test]
fn release_train_companions_follow_torch() {
    let torch = page("torch", &[TORCH_29]);
    let vision = page("torchvision", &[("0.24.0", TORCH_29.1)]);
    let audio = page("torchaudio", &[("2.9.0", TORCH_29.1)]);
    let v100 = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"7.0"}]}}"#;
    for machine in [H100, v100] {
        let chosen = |project: &str, files: &[(String, String)]| {
            select(machine, project, files).versions[0]
                .decision
                .as_ref()
                .unwrap()
                .chosen
                .clone()
        };
        let torch_choice = chosen("torch", &torch);
        assert_eq!(chosen("torchvision", &vision), torch_choice);
        assert_eq!(chosen("torchaudio", &audio), torch_choice);
    }
}

#[test]
fn macos_gets_the_unlabelled_cpu_wheels() {
    let files = page("torch", &[TORCH_29]);
    let selection = select(r#"{"platform":"macos-arm64"}"#, "torch", &files);
    let kept = kept_names(&selection, &files, "2.9.0");
    // The unlabelled macOS wheel lives under /whl/cpu/, so it is one group with the +cpu wheels;
    // all of them stay and the installer picks by platform tag.
    assert_eq!(
        kept,
        [
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.9.0+cpu-cp312-cp312-win_amd64.whl",
            "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
        ]
    );
    let decision = selection.versions[0].decision.as_ref().unwrap();
    let text: Vec<String> = decision
        .considered
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        text.contains(&"cu130: no file of this build for macos-arm64".to_string()),
        "{text:#?}"
    );
}

#[test]
fn unlabelled_aarch64_wheels_take_their_backend_from_the_link() {
    // torch 2.5's aarch64 CUDA wheels on /whl/cu124/ carry no +cu124 label.
    let files = vec![
        (
            "torch-2.5.0-cp312-cp312-manylinux_2_28_aarch64.whl".to_string(),
            "/whl/cu124/torch-2.5.0-cp312-cp312-manylinux_2_28_aarch64.whl".to_string(),
        ),
        (
            "torch-2.5.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl".to_string(),
            "/whl/cpu/torch-2.5.0%2Bcpu-cp312-cp312-manylinux_2_28_aarch64.whl".to_string(),
        ),
    ];
    let gh200 = r#"{"platform":"linux-aarch64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}"#;
    let selection = select(gh200, "torch", &files);
    assert_eq!(
        kept_names(&selection, &files, "2.5.0"),
        [files[0].0.clone()]
    );
}

#[test]
fn variant_wheels_and_garbage_never_reach_a_plain_installer() {
    let mut files = page("torch", &[TORCH_29]);
    files.push((
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64-cuda13.0.whl".into(),
        "/whl/variant/x.whl".into(),
    ));
    files.push((
        "torch-2.9.0-variants.json".into(),
        "/whl/variant/torch-2.9.0-variants.json".into(),
    ));
    files.push(("not a wheel at all".into(), "/whl/garbage".into()));
    let selection = select(H100, "torch", &files);
    let n = files.len();
    assert!(matches!(
        selection.dropped.iter().find(|(i, _)| *i == n - 3),
        Some((_, Dropped::Variant))
    ));
    assert!(matches!(
        selection.dropped.iter().find(|(i, _)| *i == n - 2),
        Some((_, Dropped::Variant))
    ));
    assert!(matches!(
        selection.dropped.iter().find(|(i, _)| *i == n - 1),
        Some((_, Dropped::Unparseable(_)))
    ));
    assert!(!selection.keeps(n - 3));
}

#[test]
fn pure_python_projects_are_left_alone() {
    let files = vec![
        (
            "filelock-3.20.0-py3-none-any.whl".to_string(),
            "https://files.example/filelock-3.20.0-py3-none-any.whl".to_string(),
        ),
        (
            "filelock-3.20.0.tar.gz".to_string(),
            "https://files.example/filelock-3.20.0.tar.gz".to_string(),
        ),
    ];
    let selection = select(H100, "filelock", &files);
    assert_eq!(selection.versions[0].kept, [0, 1]);
    assert!(selection.versions[0].decision.is_none());
}

#[test]
fn an_unusable_gpu_is_never_silent() {
    let files = page("torch", &[TORCH_29]);
    let t4_old = r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"470.256.02","gpus":[{"name":"Tesla T4","compute_capability":"7.5"}]}}"#;
    let selection = select(t4_old, "torch", &files);
    let decision = selection.versions[0].decision.as_ref().unwrap();
    assert_eq!(
        decision.chosen.as_ref().map(ToString::to_string).as_deref(),
        Some("cpu")
    );
    assert!(
        decision
            .notes
            .iter()
            .any(|n| n.contains("NVIDIA GPU cannot run any CUDA build")),
        "{:?}",
        decision.notes
    );
}

#[test]
fn unlabelled_triton_wheels_are_served_to_every_machine() {
    // download.pytorch.org lists pytorch-triton once, unlabelled, at the /whl/ root.
    let files = vec![(
        "pytorch_triton-3.5.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
            .to_string(),
        "/whl/pytorch_triton-3.5.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
            .to_string(),
    )];
    for machine in [H100, r#"{"platform":"linux-x86_64"}"#] {
        let selection = select(machine, "pytorch-triton", &files);
        assert_eq!(selection.versions[0].kept, [0], "{machine}");
    }
}

#[test]
fn pypi_torch_on_a_machine_without_a_gpu_keeps_the_cuda_wheel_as_a_cpu_build_of_last_resort() {
    // PyPI's torch 2.9.0: unlabelled wheels, the release's default build per platform (a CUDA
    // 12.8 build on Linux x86_64, CPU builds elsewhere), on PyPI's file host.
    let files: Vec<(String, String)> = [
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        "torch-2.9.0-cp312-cp312-win_amd64.whl",
        "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl",
    ]
    .iter()
    .map(|name| {
        (
            (*name).to_string(),
            format!("https://files.pythonhosted.org/packages/3a/9f/{name}"),
        )
    })
    .collect();
    let selection = select(
        r#"{"platform":"linux-x86_64","glibc":"2.36"}"#,
        "torch",
        &files,
    );
    // Each platform keeps its own build: no platform loses torch.
    let every: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
    assert_eq!(kept_names(&selection, &files, "2.9.0"), every);
    let decision = selection.versions[0].decision.as_ref().unwrap();
    assert_eq!(
        decision.chosen.as_ref().map(ToString::to_string).as_deref(),
        Some("cu128")
    );
    let elsewhere: Vec<(String, Option<String>)> = selection.versions[0]
        .platforms
        .iter()
        .map(|p| {
            (
                p.platform.to_string(),
                p.decision.chosen.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    let cpu = Some("cpu".to_string());
    assert_eq!(
        elsewhere,
        [
            ("linux-aarch64".to_string(), cpu.clone()),
            ("macos-arm64".to_string(), cpu.clone()),
            ("windows-x86_64".to_string(), cpu),
        ]
    );
    assert!(decision.cpu_last_resort.is_some());
    assert!(
        decision.notes.iter().any(|n| n.starts_with(
            "cu128: kept as a CPU build of last resort: no NVIDIA GPU on this machine, so its CUDA code goes unused"
        )),
        "{:?}",
        decision.notes
    );
    // The same page for a Mac: its own choice is its CPU wheel, never the Linux CUDA one; the
    // page still holds every platform's build.
    let selection = select(r#"{"platform":"macos-arm64"}"#, "torch", &files);
    assert_eq!(kept_names(&selection, &files, "2.9.0"), every);
    let decision = selection.versions[0].decision.as_ref().unwrap();
    assert!(decision.cpu_last_resort.is_none());
    assert_eq!(
        decision.chosen.as_ref().map(ToString::to_string).as_deref(),
        Some("cpu")
    );
}

#[test]
fn versions_of_one_release_line_are_decided_by_their_own_offers() {
    // 2.9.0 and 2.9.1 share a release line, and the decision made for one is reused for the
    // other only when both offer the same builds: 2.9.1 without cu130 falls back to cu128.
    let files = page(
        "torch",
        &[
            ("2.9.0", &["cpu", "cu128", "cu130"]),
            ("2.9.1", &["cpu", "cu128"]),
            ("2.9.2", &["cpu", "cu128", "cu130"]),
        ],
    );
    let selection = select(H100, "torch", &files);
    for (version, chosen) in [
        ("2.9.0", "+cu130"),
        ("2.9.1", "+cu128"),
        ("2.9.2", "+cu130"),
    ] {
        let kept = kept_names(&selection, &files, version);
        // The three platforms' wheels of the chosen build, and macOS's only one.
        assert!(
            kept.iter()
                .all(|n| n.contains(chosen) || n.contains("macosx")),
            "{version}: {kept:?}"
        );
        assert_eq!(kept.len(), 4, "{version}: {kept:?}");
    }
}

#[test]
fn a_bad_local_label_is_unparseable_beside_good_ones_of_its_version() {
    // The version `2.9.0` parsed already (from `+cu128`); a label that is not PEP 440 still
    // makes its file unparseable rather than joining that version.
    let mut files = page("torch", &[("2.9.0", &["cpu", "cu128"])]);
    for label in ["cu128!", "cu128..1", "cu.", "cu128_1"] {
        let name = format!("torch-2.9.0+{label}-cp312-cp312-manylinux_2_28_x86_64.whl");
        files.push((name.clone(), format!("/whl/cu128/{name}")));
    }
    let selection = select(H100, "torch", &files);
    let unparseable: Vec<&str> = selection
        .dropped
        .iter()
        .filter(|(_, why)| matches!(why, Dropped::Unparseable(_)))
        .map(|(i, _)| files[*i].0.as_str())
        .collect();
    assert_eq!(
        unparseable,
        [
            "torch-2.9.0+cu128!-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu128..1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.9.0+cu.-cp312-cp312-manylinux_2_28_x86_64.whl",
        ],
        "`cu128_1` is a valid label (PEP 440 allows `_` between segments)"
    );
}

#[test]
fn dropped_files_are_listed_in_page_order() {
    // Versions are decided newest first, so drops are made out of page order.
    let files = page("torch", &[TORCH_26, TORCH_29]);
    let selection = select(H100, "torch", &files);
    let indices: Vec<usize> = selection.dropped.iter().map(|(i, _)| *i).collect();
    assert!(indices.is_sorted(), "{indices:?}");
    let kept: usize = selection.versions.iter().map(|v| v.kept.len()).sum();
    assert_eq!(
        indices.len() + kept,
        files.len(),
        "every file kept or dropped, once"
    );
    let mut unique = indices.clone();
    unique.dedup();
    assert_eq!(unique, indices);
}
