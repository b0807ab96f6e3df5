//! A wheel-variant index (PEP 825, like `download.pytorch.org/whl/variant/`) through wheelgate:
//! released pip and uv, which reject variant filenames, install torch, and the wheel that lands
//! is the variant the machine needs (read back from the installed `*.dist-info/variant.json`).
//! Through the server's default machine, a token (`/m/<token>/`) and a pinned backend
//! (`/b/cu128/`), and for a variants file of every schema generation.

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::variant_index::{VariantIndex, installed_variant};

use crate::support::{install_into, install_ok, version};

/// How the client reaches its index.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `/simple/` of a server configured for the machine.
    Default,
    /// `/m/<token>/simple/` of a server configured for a CPU-only machine.
    Token,
    /// `/b/<backend>/simple/` of a server configured for the machine.
    Pinned(&'static str),
}

/// Installs `requirement` for `machine` through `route` and checks the installed variant.
async fn variant_for(
    installer: Installer,
    route: Route,
    machine: TestMachine,
    requirement: &str,
    expected: &str,
) {
    let upstreams = Upstreams::start().await;
    let index = VariantIndex::start().await;
    let default_machine = match route {
        Route::Token => machines::CPU_ONLY.machine(),
        Route::Default | Route::Pinned(_) => machine.machine(),
    };
    let proxy = Proxy::start_with(&upstreams, |config| {
        config.pytorch_url = index.url();
        config.machine = Some(default_machine);
    })
    .await;
    let url = match route {
        Route::Default => proxy.simple_url(),
        Route::Token => proxy.machine_url(&machine.machine()),
        Route::Pinned(backend) => proxy.backend_url(backend),
    };
    let (dir, dists) = install_ok(installer, &url, &[requirement]).await;
    let wanted = requirement.trim_start_matches("torch==");
    assert_eq!(
        version(&dists, "torch"),
        wanted,
        "{installer} through {url}"
    );
    assert_eq!(
        installed_variant(dir.path()).as_deref(),
        Some(expected),
        "{installer} on {} through {url}",
        machine.name
    );
    // Each variants file was read from the upstream once, whatever the installer asked.
    assert!(index.hits(&format!("/whl/variant/torch-{wanted}-variants.json")) <= 1);
    drop(proxy);
}

/// Arc A770 (Alchemist) with its Level Zero device IP known, as the Intel provider reports it.
const ARC_A770: TestMachine = TestMachine {
    name: "arc-a770",
    json: r#"{"platform":"linux-x86_64","glibc":"2.36","intel":{"gpus":[{"name":"Intel Arc A770 Graphics","pci_device":22176,"device_ip":"12.55.8","xpu_capable":true}]}}"#,
    backend: "xpu",
    aarch64: "cpu",
    windows: "xpu",
};

macro_rules! variant_tests {
    ($($name:ident: $installer:ident, $route:expr, $machine:expr, $requirement:literal => $label:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            variant_for(Installer::$installer, $route, $machine, $requirement, $label).await;
        }
    )*};
}

variant_tests! {
    pip_h100_driver_580_gets_cuda13_0: Pip, Route::Default, machines::H100, "torch==2.9.0" => "cuda13.0";
    pip_v100_driver_580_gets_cuda12_8: Pip, Route::Default, machines::V100, "torch==2.9.0" => "cuda12.8";
    pip_gtx1080ti_gets_cuda12_6: Pip, Route::Default, machines::GTX_1080_TI, "torch==2.9.0" => "cuda12.6";
    pip_rtx5090_driver_570_gets_cuda12_8: Pip, Route::Default, machines::RTX_5090, "torch==2.9.0" => "cuda12.8";
    pip_cpu_only_gets_null: Pip, Route::Default, machines::CPU_ONLY, "torch==2.9.0" => "null";
    pip_arc_a770_gets_xpu: Pip, Route::Default, ARC_A770, "torch==2.9.0" => "xpu";
    pip_arc_b580_without_device_ip_gets_xpu: Pip, Route::Default, machines::ARC_B580, "torch==2.9.0" => "xpu";
    pip_mi300x_without_rocm_gets_rocm6_4: Pip, Route::Default, machines::MI300X, "torch==2.9.0" => "rocm6.4";
    uv_h100_driver_580_gets_cuda13_0: Uv, Route::Default, machines::H100, "torch==2.9.0" => "cuda13.0";
    uv_v100_driver_580_gets_cuda12_8: Uv, Route::Default, machines::V100, "torch==2.9.0" => "cuda12.8";
    uv_gtx1080ti_gets_cuda12_6: Uv, Route::Default, machines::GTX_1080_TI, "torch==2.9.0" => "cuda12.6";
    uv_rtx5090_driver_570_gets_cuda12_8: Uv, Route::Default, machines::RTX_5090, "torch==2.9.0" => "cuda12.8";
    uv_cpu_only_gets_null: Uv, Route::Default, machines::CPU_ONLY, "torch==2.9.0" => "null";
    uv_arc_a770_gets_xpu: Uv, Route::Default, ARC_A770, "torch==2.9.0" => "xpu";
    uv_mi300x_without_rocm_gets_rocm6_4: Uv, Route::Default, machines::MI300X, "torch==2.9.0" => "rocm6.4";
    pip_token_h100_gets_cuda13_0: Pip, Route::Token, machines::H100, "torch==2.9.0" => "cuda13.0";
    uv_token_mi300x_gets_rocm6_4: Uv, Route::Token, machines::MI300X, "torch==2.9.0" => "rocm6.4";
    pip_pinned_cu128_on_h100_gets_cuda12_8: Pip, Route::Pinned("cu128"), machines::H100, "torch==2.9.0" => "cuda12.8";
    uv_pinned_cu128_on_h100_gets_cuda12_8: Uv, Route::Pinned("cu128"), machines::H100, "torch==2.9.0" => "cuda12.8";
    pip_unversioned_schema_h100_gets_cu129: Pip, Route::Default, machines::H100, "torch==2.8.0" => "cu129";
    pip_v0_0_3_schema_v100_gets_cuda12_8: Pip, Route::Default, machines::V100, "torch==2.10.0" => "cuda12.8";
    uv_pep_825_schema_h100_gets_cuda13_0: Uv, Route::Default, machines::H100, "torch==2.9.1" => "cuda13.0";
    uv_pep_825_schema_gtx1080ti_gets_cuda12_6: Uv, Route::Default, machines::GTX_1080_TI, "torch==2.9.1" => "cuda12.6";
}

/// PyTorch's variant wheels name per-variant requirements with PEP 817's `variant_label`
/// marker. The proxy serves the chosen variant's `.metadata` with those markers decided, so uv
/// resolves exactly the chosen variant's requirements. (pip 26.2 and newer also parse the
/// wheel's own METADATA after download and refuse the marker there: see the next test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_gets_the_requirements_of_the_chosen_variant_only() {
    let upstreams = Upstreams::start().await;
    let index = VariantIndex::start_with(true).await;
    let proxy = Proxy::start_with(&upstreams, |config| {
        config.pytorch_url = index.url();
        config.machine = Some(machines::H100.machine());
    })
    .await;
    let (dir, dists) = install_ok(Installer::Uv, &proxy.simple_url(), &["torch==2.9.0"]).await;
    assert_eq!(installed_variant(dir.path()).as_deref(), Some("cuda13.0"));
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert!(!dists.contains_key("never-installed"), "{dists:?}");
}

/// The current pip (`scripts/e2e-setup`: 26.3) with the same wheels: it resolves from the
/// served `.metadata` (markers decided), then parses the downloaded wheel's own METADATA and
/// refuses a wheel whose METADATA differs from its `.metadata` or has `variant_label` markers
/// (pip 26.2 and newer; 24.0 to 26.1.2 install either way). The proxy serves a derived wheel
/// (`crate::derive`) whose METADATA is the `.metadata`'s, so pip installs the chosen variant's
/// requirements only, with or without `--no-deps`; the derived wheel's sha256 is listed once
/// computed, and `/explain/` says what was done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_a_variant_wheel_whose_own_metadata_has_variant_label_markers() {
    let upstreams = Upstreams::start().await;
    let index = VariantIndex::start_with(true).await;
    let proxy = Proxy::start_with(&upstreams, |config| {
        config.pytorch_url = index.url();
        config.machine = Some(machines::H100.machine());
    })
    .await;
    for requirements in [&["torch==2.9.0"][..], &["--no-deps", "torch==2.9.0"]] {
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(
            Installer::Pip,
            &proxy.simple_url(),
            requirements,
            dir.path(),
        )
        .await;
        outcome.assert_success();
        assert_eq!(installed_variant(dir.path()).as_deref(), Some("cuda13.0"));
        let dists = installers::installed(dir.path());
        assert!(!dists.contains_key("never-installed"), "{dists:?}");
        if requirements.len() == 1 {
            assert_eq!(version(&dists, "filelock"), "3.20.0");
        }
        let metadata =
            std::fs::read_to_string(dir.path().join("torch-2.9.0.dist-info/METADATA")).unwrap();
        assert!(!metadata.contains("variant_label"), "{metadata}");
    }
    let body = reqwest::get(format!("{}/explain/torch/?format=json", proxy.base()))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let explain: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let version = explain["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "2.9.0")
        .unwrap();
    let notes = version["notes"].to_string();
    assert!(
        notes.contains("derived wheel") && notes.contains("variant_label"),
        "{notes}"
    );
}

/// One build across a release published two ways: torch 2.9.0 as variants and torchaudio
/// 2.9.0 as local-labelled wheels on the same index. Where strict PEP 825 would differ from the
/// catalog's choice for torchaudio (a site that prefers cu128; an A100 beside a T4, where no
/// `sm_arch` is shared), torch follows the release train's decision, so pip and uv install a
/// matching pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torch_as_variants_and_torchaudio_as_local_labels_get_one_build() {
    const A100_T4: &str = r#"{"platform":"linux-x86_64","glibc":"2.36","nvidia":{"driver_version":"580.65.06","gpus":[{"name":"NVIDIA A100","compute_capability":"8.0"},{"name":"Tesla T4","compute_capability":"7.5"}]}}"#;
    let prefer_cu128 = wheelgate_resolver::Policy {
        pinned: None,
        prefer: vec!["cu128".parse().unwrap()],
    };
    let a100_t4: wheelgate_resolver::Machine = serde_json::from_str(A100_T4).unwrap();
    for (machine, policy, label, backend) in [
        (machines::H100.machine(), prefer_cu128, "cuda12.8", "cu128"),
        (
            a100_t4,
            wheelgate_resolver::Policy::default(),
            "cuda13.0",
            "cu130",
        ),
    ] {
        let upstreams = Upstreams::start().await;
        let index = VariantIndex::start().await;
        let proxy = Proxy::start_with(&upstreams, |config| {
            config.pytorch_url = index.url();
            config.machine = Some(machine.clone());
            config.policy = policy.clone();
        })
        .await;
        for installer in [Installer::Pip, Installer::Uv] {
            let (dir, dists) = install_ok(
                installer,
                &proxy.simple_url(),
                &["torch==2.9.0", "torchaudio==2.9.0"],
            )
            .await;
            assert_eq!(
                installed_variant(dir.path()).as_deref(),
                Some(label),
                "{installer} {policy:?}"
            );
            assert_eq!(
                version(&dists, "torchaudio"),
                format!("2.9.0+{backend}"),
                "{installer} {policy:?}"
            );
        }
    }
}
