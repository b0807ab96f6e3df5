//! pip and uv install `torch` (and `torch torchvision`) through wheelgate and get the build the
//! machine needs: through the server's default machine (`/simple/`, the machine set in its
//! configuration) and through a client machine's token (`/m/<token>/simple/`, with a server
//! default chosen to differ); per-version fallback; a pinned backend.

use wheelgate_e2e::installers::{self, Destination, Installer, imported_version};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{assert_routing_safe, install_ok, version};

/// How the client reaches its machine's index.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `/simple/` of a server configured for the machine.
    Default,
    /// `/m/<token>/simple/` of a server configured for another machine.
    Token,
}

async fn torch_for(installer: Installer, route: Route, machine: TestMachine) {
    let upstreams = Upstreams::start().await;
    let (proxy, url) = match route {
        Route::Default => {
            let proxy = Proxy::start(&upstreams, &machine.machine()).await;
            let url = proxy.simple_url();
            (proxy, url)
        }
        Route::Token => {
            let decoy = if machine.backend == "cpu" {
                machines::H100
            } else {
                machines::CPU_ONLY
            };
            let proxy = Proxy::start(&upstreams, &decoy.machine()).await;
            let url = proxy.machine_url(&machine.machine());
            (proxy, url)
        }
    };
    let (dir, dists) = install_ok(installer, &url, &["torch"]).await;
    assert_eq!(
        version(&dists, "torch"),
        machine.torch(),
        "{installer} on {} through {url}",
        machine.name
    );
    // The dependency comes from the general upstream, not the PyTorch index's older copy.
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert_eq!(
        imported_version(None, Some(dir.path()), "torch").await,
        machine.torch()
    );
    assert_routing_safe(&upstreams);
    drop(proxy);
}

macro_rules! torch_tests {
    ($($name:ident: $installer:ident, $route:ident, $machine:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            torch_for(Installer::$installer, Route::$route, machines::$machine).await;
        }
    )*};
}

torch_tests! {
    pip_default_cpu_only_gets_cpu: Pip, Default, CPU_ONLY;
    pip_default_h100_gets_cu130: Pip, Default, H100;
    pip_default_rtx5090_driver_570_gets_cu128: Pip, Default, RTX_5090;
    pip_default_v100_gets_cu128: Pip, Default, V100;
    pip_default_gtx1080ti_gets_cu126: Pip, Default, GTX_1080_TI;
    pip_default_mi300x_gets_rocm: Pip, Default, MI300X;
    pip_default_arc_b580_gets_xpu: Pip, Default, ARC_B580;
    pip_token_cpu_only_gets_cpu: Pip, Token, CPU_ONLY;
    pip_token_h100_gets_cu130: Pip, Token, H100;
    pip_token_rtx5090_driver_570_gets_cu128: Pip, Token, RTX_5090;
    pip_token_v100_gets_cu128: Pip, Token, V100;
    pip_token_gtx1080ti_gets_cu126: Pip, Token, GTX_1080_TI;
    pip_token_mi300x_gets_rocm: Pip, Token, MI300X;
    pip_token_arc_b580_gets_xpu: Pip, Token, ARC_B580;
    uv_default_cpu_only_gets_cpu: Uv, Default, CPU_ONLY;
    uv_default_h100_gets_cu130: Uv, Default, H100;
    uv_default_rtx5090_driver_570_gets_cu128: Uv, Default, RTX_5090;
    uv_default_v100_gets_cu128: Uv, Default, V100;
    uv_default_gtx1080ti_gets_cu126: Uv, Default, GTX_1080_TI;
    uv_default_mi300x_gets_rocm: Uv, Default, MI300X;
    uv_default_arc_b580_gets_xpu: Uv, Default, ARC_B580;
    uv_token_cpu_only_gets_cpu: Uv, Token, CPU_ONLY;
    uv_token_h100_gets_cu130: Uv, Token, H100;
    uv_token_rtx5090_driver_570_gets_cu128: Uv, Token, RTX_5090;
    uv_token_v100_gets_cu128: Uv, Token, V100;
    uv_token_gtx1080ti_gets_cu126: Uv, Token, GTX_1080_TI;
    uv_token_mi300x_gets_rocm: Uv, Token, MI300X;
    uv_token_arc_b580_gets_xpu: Uv, Token, ARC_B580;
}

/// `torch torchvision` together: both from the machine's backend, though torchvision only
/// requires `torch==2.9.0` and every backend's torchvision exists upstream.
async fn train_from_one_backend(installer: Installer, machine: TestMachine) {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machine.machine()).await;
    let (_dir, dists) = install_ok(installer, &proxy.simple_url(), &["torch", "torchvision"]).await;
    assert_eq!(version(&dists, "torch"), machine.torch());
    assert_eq!(
        version(&dists, "torchvision"),
        format!("0.24.0+{}", machine.backend)
    );
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_torch_and_torchvision_from_one_backend_h100() {
    train_from_one_backend(Installer::Pip, machines::H100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_torch_and_torchvision_from_one_backend_h100() {
    train_from_one_backend(Installer::Uv, machines::H100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_torch_and_torchvision_from_one_backend_rtx5090() {
    train_from_one_backend(Installer::Pip, machines::RTX_5090).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_torch_and_torchvision_from_one_backend_mi300x() {
    train_from_one_backend(Installer::Uv, machines::MI300X).await;
}

/// `torch==2.6.0` on a CUDA 13 machine: 2.6.0 was never built for cu130, so the newest backend
/// it was built for that fits (cu126), while plain `torch` on the same index gets cu130.
async fn per_version_fallback(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let (dir, dists) = install_ok(installer, &proxy.simple_url(), &["torch==2.6.0"]).await;
    assert_eq!(version(&dists, "torch"), "2.6.0+cu126");
    assert_eq!(
        imported_version(None, Some(dir.path()), "torch").await,
        "2.6.0+cu126"
    );
    let (_dir, dists) = install_ok(installer, &proxy.simple_url(), &["torch"]).await;
    assert_eq!(version(&dists, "torch"), "2.9.0+cu130");
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_torch_2_6_0_falls_back_to_cu126_on_h100() {
    per_version_fallback(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_torch_2_6_0_falls_back_to_cu126_on_h100() {
    per_version_fallback(Installer::Uv).await;
}

/// `/b/cu128/simple/`: the pinned backend whatever the server's machine (an H100 here, which
/// would get cu130), merged with PyPI for the dependencies.
async fn pinned_backend(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let (_dir, dists) = install_ok(
        installer,
        &proxy.backend_url("cu128"),
        &["torch", "torchvision"],
    )
    .await;
    assert_eq!(version(&dists, "torch"), "2.9.0+cu128");
    assert_eq!(version(&dists, "torchvision"), "0.24.0+cu128");
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_pinned_cu128_gets_cu128() {
    pinned_backend(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_pinned_cu128_gets_cu128() {
    pinned_backend(Installer::Uv).await;
}

/// `/b/cu128/simple/` serves what download.pytorch.org/whl/cu128/ serves, including PyTorch
/// packages without a local label stored at the root of `/whl/` (pytorch-triton).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_pinned_cu128_installs_unlabelled_pytorch_triton() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let (_dir, dists) = install_ok(
        Installer::Pip,
        &proxy.backend_url("cu128"),
        &["pytorch-triton"],
    )
    .await;
    assert_eq!(version(&dists, "pytorch-triton"), "3.5.0");
    assert_routing_safe(&upstreams);
}

/// The usual user flow: a fresh venv, `uv pip install --python` into it through a machine
/// token, and the venv's interpreter imports the right build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_into_a_fresh_venv_through_a_token() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let root = tempfile::tempdir().unwrap();
    let python = installers::create_venv(&root.path().join("venv")).await;
    let url = proxy.machine_url(&machines::V100.machine());
    installers::install(
        Installer::Uv,
        &url,
        &["torch", "torchvision"],
        &Destination::Venv(python.clone()),
    )
    .await
    .assert_success();
    let dists = installers::installed(&root.path().join("venv"));
    assert_eq!(version(&dists, "torch"), "2.9.0+cu128");
    assert_eq!(version(&dists, "torchvision"), "0.24.0+cu128");
    assert_eq!(
        imported_version(Some(&python), None, "torch").await,
        "2.9.0+cu128"
    );
    assert_routing_safe(&upstreams);
}
