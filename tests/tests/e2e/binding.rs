//! One build for the whole stack, bound by metadata: xformers-like wheels on the PyTorch index
//! pin `torch==2.9.0` or `torch==2.8.0` in their metadata, and real pip and uv must install
//! the xformers build of the very build torch gets on the machine.
//!
//! Under driver 570 an H100's torch 2.9.0 is `+cu129`; xformers 0.0.33 has only `+cu128` and
//! `+cu130`, so it is left out and the installers take 0.0.32 (`+cu129`, pinning torch 2.8.0),
//! with torch 2.8.0 `+cu129`. Before binding, they got xformers 0.0.33 `+cu128` beside torch
//! 2.9.0 `+cu129`: an extension that does not load. Under driver 580, 0.0.33 `+cu130` with
//! torch 2.9.0 `+cu130`.

use wheelgate_e2e::installers::project::{Tool, pip_install_with};
use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

use crate::support::{install_into, version};

const LINUX: &str = "py3-none-manylinux_2_28_x86_64";
const H100_DRIVER_570: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
/// A V100 (compute capability 7.0) under driver 580: the driver runs CUDA 13, but cu130 has no
/// code for 7.0, so torch 2.9.0 is `+cu129` here, as under driver 570 on an H100.
pub(crate) const V100_DRIVER_580: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"Tesla V100-SXM2-32GB","compute_capability":"7.0"}]}}"#;
const H100_DRIVER_580: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;

async fn pytorch_index() -> SimpleIndex {
    let mut wheels = Vec::new();
    for backend in ["cpu", "cu128", "cu129", "cu130"] {
        wheels.push(WheelSpec::new("torch", &format!("2.9.0+{backend}"), LINUX).build());
    }
    for backend in ["cu128", "cu129"] {
        wheels.push(WheelSpec::new("torch", &format!("2.8.0+{backend}"), LINUX).build());
    }
    for backend in ["cu128", "cu130"] {
        wheels.push(
            WheelSpec::new("xformers", &format!("0.0.33+{backend}"), LINUX)
                .requires("torch==2.9.0")
                .build(),
        );
    }
    for backend in ["cu128", "cu129"] {
        wheels.push(
            WheelSpec::new("xformers", &format!("0.0.32+{backend}"), LINUX)
                .requires("torch==2.8.0")
                .build(),
        );
    }
    SimpleIndex::start(wheels).await
}

async fn proxy_for(
    upstreams: &Upstreams,
    pytorch: &SimpleIndex,
    pypi: &SimpleIndex,
    machine: &str,
) -> Proxy {
    let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
    let machine = serde_json::from_str(machine).unwrap();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.pytorch_url = pytorch_url;
        config.pypi_url = pypi_url;
    })
    .await
}

/// Each machine, and the torch and xformers it must get.
const PAIRS: [(&str, &str, &str); 3] = [
    (H100_DRIVER_570, "2.8.0+cu129", "0.0.32+cu129"),
    (H100_DRIVER_580, "2.9.0+cu130", "0.0.33+cu130"),
    (V100_DRIVER_580, "2.8.0+cu129", "0.0.32+cu129"),
];

async fn xformers_follows_torch(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    for (machine, torch, xformers) in PAIRS {
        let proxy = proxy_for(&upstreams, &pytorch, &pypi, machine).await;
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(
            installer,
            &proxy.simple_url(),
            &["torch", "xformers"],
            dir.path(),
        )
        .await;
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "torch"), torch, "{installer}: {outcome}");
        assert_eq!(
            version(&dists, "xformers"),
            xformers,
            "{installer}: {outcome}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_the_xformers_build_of_torchs_build() {
    xformers_follows_torch(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_the_xformers_build_of_torchs_build() {
    xformers_follows_torch(Installer::Uv).await;
}

/// pip 26.1.2, which does not compare a wheel's METADATA with its `.metadata`, resolves the
/// same pairs (from `scripts/e2e-tools-setup`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_26_1_installs_the_xformers_build_of_torchs_build() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let python = Tool::Pip26_1.path();
    for (machine, torch, xformers) in PAIRS {
        let proxy = proxy_for(&upstreams, &pytorch, &pypi, machine).await;
        let dir = tempfile::tempdir().unwrap();
        let (outcome, pip) = pip_install_with(
            &python,
            &proxy.simple_url(),
            &["torch", "xformers"],
            dir.path(),
        )
        .await;
        assert!(pip.starts_with("pip 26.1.2 "), "{pip}");
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "torch"), torch, "{outcome}");
        assert_eq!(version(&dists, "xformers"), xformers, "{outcome}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_says_which_torch_each_build_is_bound_to() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let proxy = proxy_for(&upstreams, &pytorch, &pypi, H100_DRIVER_570).await;
    let text = reqwest::get(format!("{}/explain/xformers/?format=json", proxy.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let explain: serde_json::Value = serde_json::from_str(&text).unwrap();
    let versions = explain["versions"].as_array().unwrap();
    let newest = versions.iter().find(|v| v["version"] == "0.0.33").unwrap();
    assert!(newest["kept"].as_array().unwrap().is_empty(), "{newest}");
    let notes = newest["notes"].to_string();
    assert!(
        notes
            .contains("built against torch 2.9.0 (torch==2.9.0), which gets cu129 on this machine")
            && notes.contains("left out"),
        "{notes}"
    );
    let older = versions.iter().find(|v| v["version"] == "0.0.32").unwrap();
    assert_eq!(older["chosen"], "cu129", "{older}");
    // The metadata was read once per build, through the cache: a second explanation reads none.
    let reads = || {
        pytorch
            .requests()
            .iter()
            .filter(|p| p.ends_with(".metadata"))
            .count()
    };
    let before = reads();
    let _ = reqwest::get(format!("{}/explain/xformers/?format=json", proxy.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(reads(), before);
}

/// `wheelgate select --index` answers what the proxy serves: torch's page read from the same
/// index, each build's pin from its metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_with_an_index_binds_as_the_proxy_does() {
    let pytorch = pytorch_index().await;
    let dir = tempfile::tempdir().unwrap();
    let select = |machine: &str, requirement: &str| {
        let file = dir.path().join("machine.json");
        std::fs::write(&file, machine).unwrap();
        let output = std::process::Command::new(wheelgate_e2e::binary::path())
            .args(["select", "--json", "--index", &pytorch.url(), "--machine"])
            .arg(&file)
            .arg(requirement)
            .env_remove("WHEELGATE_BACKEND")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let answers: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        answers[0].clone()
    };
    let answer = tokio::task::block_in_place(|| select(H100_DRIVER_570, "xformers"));
    assert_eq!(answer["version"], "0.0.32", "{answer}");
    assert_eq!(answer["backend"], "cu129", "{answer}");
    assert_eq!(
        answer["files"][0],
        "xformers-0.0.32+cu129-py3-none-manylinux_2_28_x86_64.whl"
    );
    // The newest version pinned: none of its builds is torch 2.9.0's here (cu129), so nothing.
    let answer = tokio::task::block_in_place(|| select(H100_DRIVER_570, "xformers==0.0.33"));
    assert_eq!(answer["backend"], serde_json::Value::Null, "{answer}");
    let notes = answer["notes"].to_string();
    assert!(
        notes.contains("built against torch 2.9.0 (torch==2.9.0), which gets cu129"),
        "{notes}"
    );
    let answer = tokio::task::block_in_place(|| select(H100_DRIVER_580, "xformers"));
    assert_eq!(answer["version"], "0.0.33", "{answer}");
    assert_eq!(answer["backend"], "cu130", "{answer}");
}

/// A mirror config for one machine: `torch` and `xformers`, resolved or (`dependencies =
/// false`) xformers alone.
fn mirror_config(
    pytorch: &SimpleIndex,
    pypi: &SimpleIndex,
    resolve: bool,
) -> wheelgate_mirror::MirrorConfig {
    let machine = H100_DRIVER_570
        .replace("{\"platform\":", "{ platform = ")
        .replace("\"glibc\":", "glibc = ")
        .replace(
            "\"nvidia\":{\"driver_version\":",
            "nvidia = { driver_version = ",
        )
        .replace("\"gpus\":[{\"name\":", "gpus = [{ name = ")
        .replace("\"compute_capability\":", "compute_capability = ");
    let packages = if resolve {
        "[[package]]\nname = \"torch\"\n\n[[package]]\nname = \"xformers\"\n"
    } else {
        "[[package]]\nname = \"xformers\"\ndependencies = false\n"
    };
    let text = format!(
        "pytorch_url = \"{}\"\npypi_url = \"{}\"\npython = [\"3.12\"]\nplatforms = [\"linux-x86_64\"]\nmachines = [{machine}]\n\n{packages}",
        pytorch.url(),
        pypi.url()
    );
    wheelgate_mirror::MirrorConfig::parse(&text, std::path::Path::new("mirror.toml"))
        .unwrap_or_else(|err| panic!("{err}\n{text}"))
}

/// The mirror takes what the server serves the machine: xformers in the build of the torch it
/// was built against, in its lock and in its store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_takes_the_xformers_build_of_torchs_build() {
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = mirror_config(&pytorch, &pypi, true);
    let (plan, _) = wheelgate_mirror::lock(&config, dir.path()).await.unwrap();
    let [resolution] = plan.resolutions.as_slice() else {
        panic!("one environment: {:?}", plan.resolutions.len());
    };
    let versions: std::collections::BTreeMap<&str, &str> = resolution
        .packages
        .iter()
        .map(|p| (p.project.as_str(), p.full_version.as_str()))
        .collect();
    assert_eq!(versions["xformers"], "0.0.32+cu129", "{versions:?}");
    assert_eq!(versions["torch"], "2.8.0+cu129", "{versions:?}");

    let config = mirror_config(&pytorch, &pypi, false);
    let store = dir.path().join("store");
    let dry = wheelgate_mirror::dry_run(&config, &store, 2).await.unwrap();
    let names: Vec<&str> = dry
        .plan
        .files
        .iter()
        .filter(|f| f.kind == wheelgate_mirror::plan::FileKind::Distribution)
        .map(|f| f.filename.as_str())
        .collect();
    assert_eq!(
        names,
        ["xformers-0.0.32+cu129-py3-none-manylinux_2_28_x86_64.whl"]
    );
}
