//! Universal locks and cross-platform resolves (issue 42, item 3): a page holds, per version,
//! the build this kind of machine runs on each platform, so a lock made anywhere holds each
//! platform's build, and `uv pip compile --python-platform` gets the target platform's.
//!
//! Observed with uv 0.13.9 and PDM against the fake index (torch 2.9.0: cu130, cu128 and cpu on
//! Linux x86_64, Linux aarch64 and Windows, cu126 and XPU without aarch64, ROCm on Linux x86_64
//! only, and one unlabelled macOS wheel), for an MI300X:
//! - uv takes one version per fork of its resolution. By default it forks only where the plain
//!   version (`2.9.0`, the macOS wheel) has a wheel the labelled one lacks, so the lock holds
//!   ROCm for Linux x86_64 and the macOS wheel, and nothing for Linux aarch64 or Windows. With
//!   `[tool.uv] required-environments` naming the four platforms it forks per platform and locks
//!   each platform's build: ROCm, CPU, CPU, macOS.
//! - PDM locks the public version with every file the page lists for it: each platform's build.
//! - Poetry locks one version for every platform: the labelled build uv would take by default,
//!   with its files only.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_by_default_forks_only_where_the_plain_version_has_a_wheel() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let machine = machines::MI300X;
    let project = uv_project(&proxy.machine_url(&machine.machine()), "");
    project.uv(&["lock"], &[]).await.assert_success();
    let lock = project.read("uv.lock");
    // One labelled build for every platform but macOS (the highest local version), and the
    // plain macOS wheel in a fork of its own: why the docs ask for `required-environments`.
    assert_eq!(
        sorted(locked_versions(&lock, "torch")),
        ["2.9.0", "2.9.0+rocm6.4"],
        "{lock}"
    );
    let [x86_64, _, _, macos] = machine.torch_wheels();
    assert_eq!(
        locked_wheels(&lock, "torch"),
        sorted([x86_64, macos]),
        "{lock}"
    );
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
