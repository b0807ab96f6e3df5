//! Universal locks and cross-platform resolves (issue 42, item 3): a page holds, per version,
//! the build this kind of machine runs on each platform, so a lock made anywhere holds each
//! platform's build, and `uv pip compile --python-platform` gets the target platform's.
//!
//! Observed with uv 0.13.9 and PDM against the fake index (torch 2.9.0: cu130, cu128 and cpu on
//! Linux x86_64, Linux aarch64 and Windows, cu126 and XPU without aarch64, ROCm on Linux x86_64
//! only, and one unlabelled macOS wheel), for an MI300X:
//! - uv takes one version per fork of its resolution: the highest version, and for a platform it
//!   has no wheel for, the plain version (`2.9.0`) when that has one there. The page lists each
//!   platform's build the highest version lacks under the plain version too
//!   (`server/plain_version.rs`), so a default lock holds ROCm for Linux x86_64, CPU for Linux
//!   aarch64 and Windows (as `2.9.0`) and the macOS wheel. With `[tool.uv]
//!   required-environments` naming the four platforms it forks per platform and locks each
//!   platform's labelled build: ROCm, CPU, CPU, macOS.
//! - PDM locks the public version with every file the page lists for it: each platform's build,
//!   under the plain version too.
//! - Poetry locks one version for every platform: the labelled build uv would take by default,
//!   with its files only.

use wheelgate_e2e::installers::imported_version;
use wheelgate_e2e::installers::project::{Project, Tool, locked_versions, pyproject};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::assert_venv_has;
use crate::support::assert_routing_safe;

/// The four platforms a universal lock is asked to cover, as uv's `required-environments`.
const REQUIRED_ENVIRONMENTS: &str = "[tool.uv]\nrequired-environments = [\n\
    \"sys_platform == 'linux' and platform_machine == 'x86_64'\",\n\
    \"sys_platform == 'linux' and platform_machine == 'aarch64'\",\n\
    \"sys_platform == 'win32' and platform_machine == 'AMD64'\",\n\
    \"sys_platform == 'darwin' and platform_machine == 'arm64'\",\n]\n";

fn uv_project(url: &str, tables: &str) -> Project {
    Project::new(&pyproject(
        &["torch", "torchvision"],
        &format!(
            "[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"{url}\"\ndefault = true\n\n{tables}"
        ),
    ))
}

/// The torch and torchvision wheels `lock` names.
fn locked_wheels(lock: &str, project: &str) -> Vec<String> {
    let prefix = format!("{project}-");
    let mut wheels: Vec<String> = lock
        .split(['"', '/'])
        .filter(|part| {
            part.starts_with(&prefix)
                && std::path::Path::new(part)
                    .extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("whl"))
        })
        .map(|part| part.replace("%2B", "+"))
        .collect();
    wheels.sort();
    wheels.dedup();
    wheels
}

fn sorted(wheels: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut wheels: Vec<String> = wheels.into_iter().collect();
    wheels.sort();
    wheels
}

/// torchvision 0.24.0's wheels matching `machine`'s torch wheels, platform by platform.
fn torchvision_wheels(machine: TestMachine) -> Vec<String> {
    sorted(
        machine
            .torch_wheels()
            .map(|torch| torch.replacen("torch-2.9.0", "torchvision-0.24.0", 1)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_with_required_environments_holds_each_platforms_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    for machine in [machines::MI300X, machines::V100] {
        let project = uv_project(
            &proxy.machine_url(&machine.machine()),
            REQUIRED_ENVIRONMENTS,
        );
        project.uv(&["lock"], &[]).await.assert_success();
        let lock = project.read("uv.lock");
        assert_eq!(
            locked_wheels(&lock, "torch"),
            sorted(machine.torch_wheels()),
            "{}:\n{lock}",
            machine.name
        );
        assert_eq!(
            locked_wheels(&lock, "torchvision"),
            torchvision_wheels(machine),
            "{}:\n{lock}",
            machine.name
        );
        // On this host (Linux x86_64), `uv sync` installs the lock's build for it.
        project
            .uv(&["sync", "--locked"], &[])
            .await
            .assert_success();
        assert_venv_has(&project, machine).await;
    }
    assert_routing_safe(&upstreams);
}

/// `wheel` (`torch-2.9.0+cpu-py3-none-...`) under its plain version (`torch-2.9.0-py3-none-...`).
fn unlabelled(wheel: &str) -> String {
    match wheel.split_once('+') {
        Some((head, tail)) => format!("{head}{}", &tail[tail.find('-').expect("tags follow")..]),
        None => wheel.to_string(),
    }
}

/// What a default universal lock holds for `machine`: the highest version's wheels (its Linux
/// x86_64 build, for the machines asked) as they are, and every other platform's build under
/// the plain version (`server/plain_version.rs`).
fn default_lock_wheels(machine: TestMachine, wheels: [String; 4]) -> Vec<String> {
    let lead = wheels[0].clone();
    let lead_version = format!("{}-", lead.split('-').take(2).collect::<Vec<_>>().join("-"));
    assert!(lead_version.ends_with(&format!("+{}-", machine.backend)));
    sorted(wheels.into_iter().map(|wheel| {
        if wheel.starts_with(&lead_version) {
            wheel
        } else {
            unlabelled(&wheel)
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_by_default_holds_each_platforms_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    // Linux x86_64's build is the highest version for both; the other platforms' builds differ
    // from it (MI300X: CPU on Linux aarch64 and Windows; V100: CPU and cu126).
    for machine in [machines::MI300X, machines::V100] {
        let project = uv_project(&proxy.machine_url(&machine.machine()), "");
        project.uv(&["lock"], &[]).await.assert_success();
        let lock = project.read("uv.lock");
        // uv forks where the plain version has a wheel for a platform the highest one lacks:
        // the page lists each such platform's build under the plain version.
        assert_eq!(
            sorted(locked_versions(&lock, "torch")),
            ["2.9.0".to_string(), machine.torch()],
            "{}:\n{lock}",
            machine.name
        );
        assert_eq!(
            locked_wheels(&lock, "torch"),
            default_lock_wheels(machine, machine.torch_wheels()),
            "{}:\n{lock}",
            machine.name
        );
        let torchvision = machine
            .torch_wheels()
            .map(|torch| torch.replacen("torch-2.9.0", "torchvision-0.24.0", 1));
        assert_eq!(
            locked_wheels(&lock, "torchvision"),
            default_lock_wheels(machine, torchvision),
            "{}:\n{lock}",
            machine.name
        );
        // `uv sync` for another platform installs that platform's build from the lock: the
        // derived wheel installs as the plain version (its METADATA and `.dist-info` renamed),
        // and what it holds is the build (its module says `2.9.0+cpu`); a second sync finds it
        // installed as locked.
        let [_, aarch64, ..] = machine.torch_wheels();
        let build = aarch64
            .trim_start_matches("torch-")
            .split("-py3")
            .next()
            .unwrap()
            .to_string();
        project
            .uv(
                &[
                    "sync",
                    "--locked",
                    "--python-platform",
                    "aarch64-manylinux_2_28",
                ],
                &[],
            )
            .await
            .assert_success();
        let dists = project.installed();
        assert_eq!(
            dists.get("torch").map(String::as_str),
            Some("2.9.0"),
            "{dists:?}"
        );
        assert_eq!(
            imported_version(Some(&project.venv_python()), None, "torch").await,
            build,
            "{}",
            machine.name
        );
        let again = project
            .uv(
                &[
                    "sync",
                    "--locked",
                    "--python-platform",
                    "aarch64-manylinux_2_28",
                ],
                &[],
            )
            .await;
        again.assert_success();
        assert!(
            !again.stderr.contains("Uninstalled"),
            "{}: the second sync reinstalled:\n{again}",
            machine.name
        );
        // On this host (Linux x86_64), the lock's build for it.
        project
            .uv(&["sync", "--locked"], &[])
            .await
            .assert_success();
        assert_venv_has(&project, machine).await;
    }
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_pip_compile_for_another_platform_gets_that_platforms_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    for machine in [machines::MI300X, machines::H100, machines::CPU_ONLY] {
        let url = proxy.machine_url(&machine.machine());
        let project = uv_project(&url, "");
        project.write("requirements.in", "torch\n");
        let [x86_64, aarch64, windows, macos] = machine.torch_wheels();
        for (platform, wheel) in [
            ("x86_64-manylinux_2_28", x86_64),
            ("aarch64-manylinux_2_28", aarch64),
            ("x86_64-pc-windows-msvc", windows),
            ("aarch64-apple-darwin", macos),
        ] {
            let compiled = project
                .uv(
                    &[
                        "pip",
                        "compile",
                        "requirements.in",
                        "--index-url",
                        &url,
                        "--python-platform",
                        platform,
                        "--python-version",
                        "3.12",
                        "--no-header",
                        "--no-annotate",
                    ],
                    &[],
                )
                .await;
            compiled.assert_success();
            // `torch-2.9.0+rocm6.4-py3-none-...` pins `torch==2.9.0+rocm6.4`.
            let version = wheel
                .trim_start_matches("torch-")
                .split("-py3")
                .next()
                .unwrap()
                .to_string();
            assert!(
                compiled
                    .stdout
                    .lines()
                    .any(|line| line.trim() == format!("torch=={version}")),
                "{} on {platform}: want torch=={version}:\n{compiled}",
                machine.name
            );
        }
    }
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poetry_locks_one_build_for_every_platform() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let machine = machines::MI300X;
    let project = Project::new(&pyproject(
        &["torch"],
        "[tool.poetry]\npackage-mode = false\n",
    ));
    let url = proxy.machine_url(&machine.machine());
    let poetry = Tool::Poetry.path();
    project
        .run(
            &poetry,
            &["source", "add", "--priority=primary", "wheelgate", &url],
            &[],
        )
        .await
        .assert_success();
    project.run(&poetry, &["lock"], &[]).await.assert_success();
    let lock = project.read("poetry.lock");
    // One version for every platform: the highest local version, with its files only.
    assert_eq!(locked_versions(&lock, "torch"), ["2.9.0+rocm6.4"], "{lock}");
    let [x86_64, ..] = machine.torch_wheels();
    assert_eq!(locked_wheels(&lock, "torch"), [x86_64], "{lock}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_version_link_serves_only_a_listed_labelled_wheel() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let base = proxy.base();
    let client = reqwest::Client::new();
    let status = |path: String| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let response = client.get(&url).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let plain = "torch-2.9.0-py3-none-manylinux_2_28_aarch64.whl";
    // The CPU build, renamed: the wheel and its `.metadata` say the plain version.
    let (code, _) = status(format!("/files/torch/p/cpu/{plain}")).await;
    assert_eq!(code, 200);
    let (code, metadata) = status(format!("/files/torch/p/cpu/{plain}.metadata")).await;
    assert_eq!(code, 200);
    assert!(metadata.contains("\nVersion: 2.9.0\n"), "{metadata}");
    // A label no listed wheel carries, one that is no local label, a labelled name, a file of
    // another project: refused, nothing derived.
    for (path, expected) in [
        (format!("/files/torch/p/cu999/{plain}"), 404),
        (format!("/files/torch/p/cu-128/{plain}"), 400),
        (
            "/files/torch/p/cpu/torch-2.9.0+cpu-py3-none-manylinux_2_28_aarch64.whl".to_string(),
            400,
        ),
        (format!("/files/torchvision/p/cpu/{plain}"), 404),
    ] {
        let (code, body) = status(path.clone()).await;
        assert_eq!(code, expected, "{path}: {body}");
    }
    assert_routing_safe(&upstreams);
}

/// An H100 under driver 575: CUDA 12.9 runs, and the index has `cu129` on Linux only, so torch
/// and the torch-bound xformers are `+cu129` on Linux and `+cu128` on Windows.
const H100_DRIVER_575: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"575.57.08","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_by_default_holds_a_torch_bound_package_for_each_platform() {
    use wheelgate_e2e::simple_index::SimpleIndex;
    use wheelgate_e2e::wheels::WheelSpec;
    const LINUX: &str = "py3-none-manylinux_2_28_x86_64";
    const WINDOWS: &str = "py3-none-win_amd64";
    let mut wheels = Vec::new();
    for (backend, tags) in [
        ("cu129", &[LINUX][..]),
        ("cu128", &[LINUX, WINDOWS][..]),
        ("cpu", &[LINUX, WINDOWS][..]),
    ] {
        for tags in tags {
            wheels.push(WheelSpec::new("torch", &format!("2.9.0+{backend}"), tags).build());
            if backend != "cpu" {
                wheels.push(
                    WheelSpec::new("xformers", &format!("0.0.33+{backend}"), tags)
                        .requires("torch==2.9.0")
                        .build(),
                );
            }
        }
    }
    let pytorch = SimpleIndex::start(wheels).await;
    let upstreams = Upstreams::start().await;
    let pytorch_url = pytorch.url();
    let proxy = Proxy::start_with(&upstreams, move |config| {
        config.machine = Some(serde_json::from_str(H100_DRIVER_575).unwrap());
        config.pytorch_url = pytorch_url;
    })
    .await;
    let project = Project::new(&pyproject(
        &["torch", "xformers"],
        &format!(
            "[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"{}\"\ndefault = true\n",
            proxy.simple_url()
        ),
    ));
    project.uv(&["lock"], &[]).await.assert_success();
    let lock = project.read("uv.lock");
    // Linux's `+cu129` as published; Windows' `+cu128` under the plain version, where uv's
    // fork for the platform the highest version lacks finds it.
    for name in ["torch", "xformers"] {
        let version = if name == "torch" { "2.9.0" } else { "0.0.33" };
        assert_eq!(
            locked_wheels(&lock, name),
            [
                format!("{name}-{version}+cu129-{LINUX}.whl"),
                format!("{name}-{version}-{WINDOWS}.whl"),
            ],
            "{lock}"
        );
    }
    project
        .uv(
            &[
                "sync",
                "--locked",
                "--python-platform",
                "x86_64-pc-windows-msvc",
            ],
            &[],
        )
        .await
        .assert_success();
    assert_eq!(
        imported_version(Some(&project.venv_python()), None, "xformers").await,
        "0.0.33+cu128"
    );
    assert_eq!(
        imported_version(Some(&project.venv_python()), None, "torch").await,
        "2.9.0+cu128"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_a_build_listed_under_the_plain_version() {
    use wheelgate_e2e::installers::{Destination, Installer, install, installed};
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let url = proxy.machine_url(&machines::MI300X.machine());
    let dir = tempfile::tempdir().unwrap();
    // `===` takes the plain version alone (`==2.9.0` would take the higher `2.9.0+cpu`): the
    // CPU build renamed, as a universal lock holds it for Linux aarch64.
    let outcome = install(
        Installer::Pip,
        &url,
        &[
            "--platform",
            "manylinux_2_28_aarch64",
            "--no-deps",
            "torch===2.9.0",
        ],
        &Destination::Target(dir.path().to_path_buf()),
    )
    .await;
    outcome.assert_success();
    assert!(
        outcome
            .stdout
            .contains("torch-2.9.0-py3-none-manylinux_2_28_aarch64.whl"),
        "{outcome}"
    );
    let dists = installed(dir.path());
    assert_eq!(
        dists.get("torch").map(String::as_str),
        Some("2.9.0"),
        "{dists:?}"
    );
    assert_eq!(
        imported_version(None, Some(dir.path()), "torch").await,
        "2.9.0+cpu"
    );
    assert_routing_safe(&upstreams);
}
