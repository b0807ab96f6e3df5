//! One upstream download per file, however many installers ask, at once or one after another.

use wheelgate_e2e::catalog::LINUX_X86_64;
use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{install_into, install_ok, version};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_and_repeated_installs_download_each_file_once() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::RTX_5090.machine()).await;
    let url = proxy.simple_url();
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    // pip and uv at once, then pip again from the cache.
    let (pip, uv) = tokio::join!(
        install_into(Installer::Pip, &url, &["torch"], dirs[0].path()),
        install_into(Installer::Uv, &url, &["torch"], dirs[1].path()),
    );
    pip.assert_success();
    uv.assert_success();
    let (_dir, dists) = install_ok(Installer::Pip, &url, &["torch"]).await;
    assert_eq!(version(&dists, "torch"), "2.9.0+cu128");

    // torch cu128 is linked to the second host (download-r2).
    let wheel = upstreams
        .catalog
        .torch_wheel("2.9.0", "cu128", LINUX_X86_64)
        .unwrap();
    assert_eq!(
        upstreams.pytorch_file_requests(&wheel.path()),
        1,
        "upstream requests: {:?} / {:?}",
        upstreams.pytorch.log.paths(),
        upstreams.r2.log.paths()
    );
    let filelock = upstreams
        .catalog
        .pypi_project("filelock")
        .into_iter()
        .find(|f| f.version == "3.20.0")
        .unwrap();
    let filelock = format!(
        "/packages/{}/{}",
        filelock.wheel.sha256, filelock.wheel.filename
    );
    assert_eq!(
        upstreams.pypi.log.count_get(&filelock),
        1,
        "{:?}",
        upstreams.pypi.log.paths()
    );
}
