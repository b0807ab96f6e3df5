//! One build for the whole stack, bound by page: PyG-style extensions (`torch-scatter`) are
//! published on a find-links page per torch release and build, with no torch pin in their
//! metadata. Through a `[[sources]]` URL template, real pip 26.3 (which refuses a wheel whose
//! `METADATA` differs from its `.metadata`) and uv must install the torch-scatter of the very
//! torch build they install, and the installed wheel's own `METADATA` carries the pin.
//!
//! The PyG host has pages for torch 2.9.0 (`cpu`, `cu128`, `cu130`) and 2.8.0 (`cpu`, `cu128`,
//! `cu129`); none for 2.9.0 `cu129`. Under driver 570 an H100's torch 2.9.0 is `+cu129`, which
//! has no torch-scatter: the installers take torch 2.8.0 `+cu129` with `2.1.2+pt28cu129`.
//! Under driver 580, `torch==2.8.0` must come with `pt28cu129`, though `pt29cu130` sorts higher.

use wheelgate_config::SourceConfig;
use wheelgate_e2e::find_links::FindLinks;
use wheelgate_e2e::installers::project::{Tool, pip_install_with};
use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::{BuiltWheel, WheelSpec};

use crate::support::{install_into, version};

pub(crate) const TORCH_TAGS: &str = "py3-none-manylinux_2_28_x86_64";
pub(crate) const PYG_TAGS: &str = "py3-none-linux_x86_64";
pub(crate) const H100_DRIVER_570: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"570.86.10","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
const H100_DRIVER_580: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA H100 80GB HBM3","compute_capability":"9.0"}]}}"#;
const CPU_ONLY: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;

pub(crate) async fn pytorch_index() -> SimpleIndex {
    let mut wheels = Vec::new();
    for backend in ["cpu", "cu128", "cu129", "cu130"] {
        wheels.push(WheelSpec::new("torch", &format!("2.9.0+{backend}"), TORCH_TAGS).build());
    }
    for backend in ["cpu", "cu128", "cu129"] {
        wheels.push(WheelSpec::new("torch", &format!("2.8.0+{backend}"), TORCH_TAGS).build());
    }
    SimpleIndex::start(wheels).await
}

fn scatter(torch: &str, backend: &str) -> BuiltWheel {
    let label = format!(
        "pt{}{backend}",
        torch.replace('.', "").trim_end_matches('0')
    );
    WheelSpec::new("torch_scatter", &format!("2.1.2+{label}"), PYG_TAGS).build()
}

pub(crate) async fn pyg_host() -> FindLinks {
    let mut pages = Vec::new();
    for (torch, backends) in [
        ("2.9.0", ["cpu", "cu128", "cu130"]),
        ("2.8.0", ["cpu", "cu128", "cu129"]),
    ] {
        for backend in backends {
            pages.push((
                format!("torch-{torch}+{backend}.html"),
                vec![scatter(torch, backend)],
            ));
        }
    }
    FindLinks::start(pages).await
}

pub(crate) fn pyg_source(pyg: &FindLinks) -> SourceConfig {
    wheelgate_e2e::proxy::source("pyg", &pyg.template(), &["torch-scatter"])
}

async fn proxy_for(
    upstreams: &Upstreams,
    pytorch: &SimpleIndex,
    pypi: &SimpleIndex,
    pyg: &FindLinks,
    machine: &str,
) -> Proxy {
    let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
    let machine = serde_json::from_str(machine).unwrap();
    let source = pyg_source(pyg);
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.pytorch_url = pytorch_url;
        config.pypi_url = pypi_url;
        config.sources = vec![source];
    })
    .await
}

/// The `Requires-Dist` lines of the installed `torch_scatter`'s own `METADATA`.
pub(crate) fn installed_requirements(dir: &std::path::Path) -> Vec<String> {
    let dist_info = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("torch_scatter-"))
                && p.extension().is_some_and(|e| e == "dist-info")
        })
        .expect("torch_scatter installed");
    std::fs::read_to_string(dist_info.join("METADATA"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        .map(str::to_string)
        .collect()
}

/// Each machine, what is asked for, and the torch, torch-scatter and installed pin it must get.
const CASES: [(&str, &[&str], &str, &str, &str); 5] = [
    (
        H100_DRIVER_570,
        &["torch", "torch-scatter"],
        "2.8.0+cu129",
        "2.1.2+pt28cu129",
        "torch==2.8.*",
    ),
    (
        H100_DRIVER_580,
        &["torch", "torch-scatter"],
        "2.9.0+cu130",
        "2.1.2+pt29cu130",
        "torch==2.9.*",
    ),
    (
        H100_DRIVER_580,
        &["torch==2.8.0", "torch-scatter"],
        "2.8.0+cu129",
        "2.1.2+pt28cu129",
        "torch==2.8.*",
    ),
    (
        crate::binding::V100_DRIVER_580,
        &["torch", "torch-scatter"],
        "2.8.0+cu129",
        "2.1.2+pt28cu129",
        "torch==2.8.*",
    ),
    (
        CPU_ONLY,
        &["torch", "torch-scatter"],
        "2.9.0+cpu",
        "2.1.2+pt29cpu",
        "torch==2.9.*",
    ),
];

async fn scatter_follows_torch(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = pyg_host().await;
    for (machine, requirements, torch, scatter, pin) in CASES {
        let proxy = proxy_for(&upstreams, &pytorch, &pypi, &pyg, machine).await;
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(installer, &proxy.simple_url(), requirements, dir.path()).await;
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "torch"), torch, "{installer}: {outcome}");
        assert_eq!(
            version(&dists, "torch-scatter"),
            scatter,
            "{installer}: {outcome}"
        );
        // The wheel installed is the derived one: its own METADATA pins torch's release line.
        assert_eq!(installed_requirements(dir.path()), [pin], "{installer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_the_torch_scatter_of_torchs_build() {
    scatter_follows_torch(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_the_torch_scatter_of_torchs_build() {
    scatter_follows_torch(Installer::Uv).await;
}

/// pip 26.1.2, which does not compare a wheel's METADATA with its `.metadata`, installs the
/// same torch-scatter, with the same pin in its own METADATA (from `scripts/e2e-tools-setup`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_26_1_installs_the_torch_scatter_of_torchs_build() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = pyg_host().await;
    let python = Tool::Pip26_1.path();
    for (machine, requirements, torch, scatter, pin) in CASES {
        let proxy = proxy_for(&upstreams, &pytorch, &pypi, &pyg, machine).await;
        let dir = tempfile::tempdir().unwrap();
        let (outcome, pip) =
            pip_install_with(&python, &proxy.simple_url(), requirements, dir.path()).await;
        assert!(pip.starts_with("pip 26.1.2 "), "{pip}");
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "torch"), torch, "{outcome}");
        assert_eq!(version(&dists, "torch-scatter"), scatter, "{outcome}");
        assert_eq!(installed_requirements(dir.path()), [pin]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_pages_of_the_machines_builds_are_fetched() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = pyg_host().await;
    let proxy = proxy_for(&upstreams, &pytorch, &pypi, &pyg, H100_DRIVER_570).await;
    let page = reqwest::Client::new()
        .get(format!("{}/simple/torch-scatter/", proxy.base()))
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let page: serde_json::Value = serde_json::from_str(&page).unwrap();
    let files: Vec<&str> = page["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [format!("torch_scatter-2.1.2+pt28cu129-{PYG_TAGS}.whl")]
    );
    let file = &page["files"][0];
    assert_eq!(file["core-metadata"], true, "{file}");
    assert!(
        file["url"]
            .as_str()
            .unwrap()
            .starts_with("/bound/pyg/2.8.0/cu129/"),
        "{file}"
    );
    // Driver 570: torch 2.9.0 and 2.8.0 both get cu129; one page each, the 2.9.0 one a 404.
    let mut asked: Vec<String> = pyg
        .requests()
        .into_iter()
        .filter(|p| p.starts_with("/whl/torch-"))
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        ["/whl/torch-2.8.0+cu129.html", "/whl/torch-2.9.0+cu129.html"]
    );

    // The `.metadata` adds the pin; the derived wheel's METADATA is the same bytes, and once
    // one download computed its sha256, the page lists it.
    let base = proxy.base();
    let link = format!("{base}{}", file["url"].as_str().unwrap());
    let metadata = reqwest::get(format!("{link}.metadata"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&metadata).contains("\nRequires-Dist: torch==2.8.*\n"),
        "{}",
        String::from_utf8_lossy(&metadata)
    );
    let wheel = reqwest::get(&link).await.unwrap().bytes().await.unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel.to_vec())).unwrap();
    let mut inside = Vec::new();
    std::io::Read::read_to_end(
        &mut archive
            .by_name("torch_scatter-2.1.2+pt28cu129.dist-info/METADATA")
            .unwrap(),
        &mut inside,
    )
    .unwrap();
    assert_eq!(inside, metadata.to_vec());
    let again = reqwest::Client::new()
        .get(format!("{base}/simple/torch-scatter/"))
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(
        again["files"][0]["hashes"]["sha256"],
        wheelgate_e2e::wheels::sha256_hex(&wheel),
        "{again}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_names_each_page_and_binding_and_foreign_links_are_refused() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = pyg_host().await;
    let proxy = proxy_for(&upstreams, &pytorch, &pypi, &pyg, H100_DRIVER_570).await;
    let base = proxy.base();
    // `/explain/` names each page asked for and each binding.
    let explain = reqwest::get(format!("{base}/explain/torch-scatter/?format=json"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let explain: serde_json::Value = serde_json::from_str(&explain).unwrap();
    let version = &explain["versions"][0];
    assert_eq!(version["version"], "2.1.2+pt28cu129", "{explain}");
    assert_eq!(version["chosen"], "cu129", "{explain}");
    let notes = version["notes"].to_string();
    assert!(
        notes.contains("bound by page") && notes.contains("torch==2.8.*"),
        "{notes}"
    );
    let pages: Vec<(String, u64)> = explain["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let url = s["url"].as_str().unwrap();
            (
                url[url.rfind('/').unwrap()..].to_string(),
                s["files"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pages,
        [
            ("/torch-2.9.0+cu129.html".to_string(), 0),
            ("/torch-2.8.0+cu129.html".to_string(), 1)
        ]
    );

    // A pin or torch a page would never list is refused, never derived.
    for path in [
        "/bound/pyg/2.8.0/cu129/%3E%3D1/torch-scatter/x-1-py3-none-any.whl",
        "/bound/nope/2.8.0/cu129/%3D%3D2.8.%2A/torch-scatter/x-1-py3-none-any.whl",
    ] {
        let status = reqwest::get(format!("{base}{path}"))
            .await
            .unwrap()
            .status();
        assert_eq!(status, 400, "{path}");
    }
}
