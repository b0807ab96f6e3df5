//! Device extras (AMD TheRock's multi-arch packaging): torch from AMD's index is host code only,
//! its GPU kernels in `amd-torch-device-gfxNNNN` packages behind extras. Through the proxy a
//! plain `pip install torch` (real pip 26.3 and uv) on an MI300X installs the device package of
//! gfx942 with it; on a GPU whose target has no extra, that build is left out and the
//! installers take a version whose build runs there.

use wheelgate_config::SourceConfig;
use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

use crate::support::{install_into, version};

pub(crate) const TAGS: &str = "py3-none-manylinux_2_28_x86_64";
pub(crate) const MI300X: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"gpus":[{"name":"AMD Instinct MI300X","gfx":"gfx942"}]}}"#;
pub(crate) const RX_7900_XTX: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","amd":{"gpus":[{"name":"Radeon RX 7900 XTX","gfx":"gfx1100"}]}}"#;

/// The PyTorch index: torch 2.9.0 for ROCm 6.4 and the CPU.
pub(crate) async fn pytorch_index() -> SimpleIndex {
    SimpleIndex::start(vec![
        WheelSpec::new("torch", "2.9.0+rocm6.4", TAGS).build(),
        WheelSpec::new("torch", "2.9.0+cpu", TAGS).build(),
    ])
    .await
}

/// AMD's index: a multi-arch torch 2.10.0 whose kernels for gfx942 and gfx90a are device
/// packages behind extras, and those packages.
pub(crate) async fn amd_index() -> SimpleIndex {
    let mut torch = WheelSpec::new("torch", "2.10.0+rocm7.1", TAGS).requires("filelock");
    for gfx in ["gfx942", "gfx90a"] {
        torch = torch
            .provides_extra(&format!("device-{gfx}"))
            .requires(&format!(
                "amd-torch-device-{gfx}==2.10.0; extra == \"device-{gfx}\""
            ));
    }
    SimpleIndex::start(vec![
        torch.build(),
        WheelSpec::new("amd_torch_device_gfx942", "2.10.0", TAGS).build(),
        WheelSpec::new("amd_torch_device_gfx90a", "2.10.0", TAGS).build(),
        WheelSpec::new("filelock", "3.20.0", "py3-none-any").build(),
    ])
    .await
}

pub(crate) fn amd_source(index: &SimpleIndex) -> SourceConfig {
    wheelgate_e2e::proxy::source(
        "amd",
        &index.url(),
        &["torch", "amd-torch-device-*", "filelock"],
    )
}

/// The proxy for `machine`, with the PyTorch index, AMD's index as a source, and PyPI.
async fn proxy_for(
    upstreams: &Upstreams,
    (pytorch, amd, pypi): (&SimpleIndex, &SimpleIndex, &SimpleIndex),
    machine: &str,
) -> Proxy {
    let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
    let source = amd_source(amd);
    let machine = serde_json::from_str(machine).unwrap();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.pytorch_url = pytorch_url;
        config.pypi_url = pypi_url;
        config.sources = vec![source];
    })
    .await
}

async fn device_package_follows_the_gpu(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let amd = amd_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    for (machine, torch, device) in [
        (MI300X, "2.10.0+rocm7.1", Some("amd-torch-device-gfx942")),
        (RX_7900_XTX, "2.9.0+rocm6.4", None),
    ] {
        let proxy = proxy_for(&upstreams, (&pytorch, &amd, &pypi), machine).await;
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(installer, &proxy.simple_url(), &["torch"], dir.path()).await;
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "torch"), torch, "{installer}: {outcome}");
        let devices: Vec<&String> = dists
            .keys()
            .filter(|name| name.starts_with("amd-torch-device-"))
            .collect();
        assert_eq!(
            devices.first().map(|d| d.as_str()),
            device,
            "{installer}: {dists:?}"
        );
        assert!(
            devices.len() <= 1,
            "one device package per target: {dists:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_the_device_package_of_the_machines_gpu() {
    device_package_follows_the_gpu(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_the_device_package_of_the_machines_gpu() {
    device_package_follows_the_gpu(Installer::Uv).await;
}

/// `/explain/torch/` says what device extras do on each machine: required on an MI300X, the
/// build left out on a GPU whose target has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_says_which_device_extras_are_required() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let amd = amd_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    for (machine, note, kept) in [
        (
            MI300X,
            "served with the extras `device-gfx942` required",
            true,
        ),
        (
            RX_7900_XTX,
            "none for this machine's `device-gfx1100`: left out",
            false,
        ),
    ] {
        let proxy = proxy_for(&upstreams, (&pytorch, &amd, &pypi), machine).await;
        let text = reqwest::get(format!("{}/explain/torch/?format=json", proxy.base()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let explain: serde_json::Value = serde_json::from_str(&text).unwrap();
        let version = explain["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == "2.10.0")
            .unwrap_or_else(|| panic!("{text}"));
        assert!(version["notes"].to_string().contains(note), "{version}");
        assert_eq!(
            !version["kept"].as_array().unwrap().is_empty(),
            kept,
            "{version}"
        );
    }
}

/// `wheel` without its `*.dist-info/METADATA` member (its `.metadata` still served): a wheel
/// whose device extras can be read but whose derived form cannot be made.
fn without_metadata_member(
    wheel: wheelgate_e2e::wheels::BuiltWheel,
) -> wheelgate_e2e::wheels::BuiltWheel {
    use std::io::{Read as _, Write as _};
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel.bytes.clone())).unwrap();
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).unwrap();
        let name = member.name().unwrap().to_string();
        if name.ends_with(".dist-info/METADATA") {
            continue;
        }
        let mut content = Vec::new();
        member.read_to_end(&mut content).unwrap();
        writer.start_file(name, stored).unwrap();
        writer.write_all(&content).unwrap();
    }
    let bytes = writer.finish().unwrap().into_inner();
    wheelgate_e2e::wheels::BuiltWheel {
        sha256: wheelgate_e2e::wheels::sha256_hex(&bytes),
        bytes,
        ..wheel
    }
}

/// A build whose extras the machine has but whose wheel cannot be served with them required
/// (no `METADATA` inside to rewrite) is left off its page, with the reason in `/explain/`: pip
/// then takes the version whose build runs here, instead of failing on a file that cannot be
/// made (issue 41 item 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wheel_that_cannot_be_served_with_its_extras_is_left_off() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let mut torch = WheelSpec::new("torch", "2.10.0+rocm7.1", TAGS).requires("filelock");
    for gfx in ["gfx942", "gfx90a"] {
        torch = torch
            .provides_extra(&format!("device-{gfx}"))
            .requires(&format!(
                "amd-torch-device-{gfx}==2.10.0; extra == \"device-{gfx}\""
            ));
    }
    let amd = SimpleIndex::start(vec![
        without_metadata_member(torch.build()),
        WheelSpec::new("amd_torch_device_gfx942", "2.10.0", TAGS).build(),
        WheelSpec::new("filelock", "3.20.0", "py3-none-any").build(),
    ])
    .await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let proxy = proxy_for(&upstreams, (&pytorch, &amd, &pypi), MI300X).await;

    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(Installer::Pip, &proxy.simple_url(), &["torch"], dir.path()).await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    assert_eq!(version(&dists, "torch"), "2.9.0+rocm6.4", "{outcome}");

    let text = reqwest::get(format!("{}/explain/torch/?format=json", proxy.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("cannot be served with the extras required") && text.contains("METADATA"),
        "{text}"
    );
}
