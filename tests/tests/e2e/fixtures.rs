//! The fakes are what real installers accept: pip and uv install straight from the fake
//! PyTorch index the way users point them at download.pytorch.org/whl/<backend>, and the pages
//! have the real format.

use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{install_ok, version};

async fn installs_from_fake_pytorch_index(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let index = format!("{}/cu130/", upstreams.pytorch_url());
    let (dir, dists) = install_ok(installer, &index, &["torch", "torchvision"]).await;
    assert_eq!(version(&dists, "torch"), "2.9.0+cu130");
    assert_eq!(version(&dists, "torchvision"), "0.24.0+cu130");
    // filelock, republished by the PyTorch index, from the same index.
    assert_eq!(version(&dists, "filelock"), "3.13.1");
    let imported =
        wheelgate_e2e::installers::imported_version(None, Some(dir.path()), "torch").await;
    assert_eq!(imported, "2.9.0+cu130");
    // torch cu130 is linked absolutely to the primary host, torchvision to the second host.
    let r2 = upstreams.r2.log.paths();
    assert!(
        r2.iter()
            .any(|p| p.starts_with("/whl/cu130/torchvision-0.24.0+cu130-")),
        "{r2:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_straight_from_the_fake_pytorch_index() {
    installs_from_fake_pytorch_index(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_straight_from_the_fake_pytorch_index() {
    installs_from_fake_pytorch_index(Installer::Uv).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_straight_from_the_fake_pypi() {
    let upstreams = Upstreams::start().await;
    let (_dir, dists) = install_ok(
        Installer::Pip,
        &format!("{}/", upstreams.pypi_url()),
        &["filelock"],
    )
    .await;
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    // pip asks for JSON, then takes the metadata file and the wheel from the file host.
    let requests = upstreams.pypi.log.all();
    assert!(requests.iter().any(|r| r.path == "/simple/filelock/"
        && r.accept.as_deref().is_some_and(|a| a.contains("json"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_pytorch_pages_have_the_real_format() {
    let upstreams = Upstreams::start().await;
    let client = reqwest::Client::new();
    let page = client
        .get(format!("{}/cu130/torch/", upstreams.pytorch_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.starts_with(
            "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n    <a href=\""
        ),
        "{page}"
    );
    assert!(
        page.ends_with("  </body>\n</html>\n<!--TIMESTAMP 1774772182-->"),
        "{page}"
    );
    let wheel = upstreams
        .catalog
        .torch_wheel("2.9.0", "cu130", wheelgate_e2e::catalog::LINUX_X86_64)
        .unwrap();
    let hash = &wheel.wheel.metadata_sha256;
    let line = format!(
        "    <a href=\"/whl/cu130/torch-2.9.0%2Bcu130-py3-none-manylinux_2_28_x86_64.whl#sha256={}\" data-dist-info-metadata=\"sha256={hash}\" data-core-metadata=\"sha256={hash}\" data-upload-time=\"2026-04-05T10:11:12Z\">torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl</a><br/>\n",
        wheel.wheel.sha256
    );
    assert!(page.contains(&line), "{line}\nnot in\n{page}");
    assert!(
        page.contains("<a href=\"/whl/torch-0.4.1-py3-none-macosx_10_7_x86_64.whl#sha256="),
        "{page}"
    );

    let aggregated = client
        .get(format!("{}/torch/", upstreams.pytorch_url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for backend in [
        "cpu",
        "cu118",
        "cu126",
        "cu128",
        "cu130",
        "rocm6.4",
        "rocm6.2.4",
        "xpu",
    ] {
        assert!(
            aggregated.contains(&format!("+{backend}-py3-none-")),
            "{backend} missing from the aggregated page"
        );
    }
    assert!(aggregated.contains(&format!(
        "href=\"http://{}/whl/cu128/torch-2.9.0%2Bcu128-",
        upstreams.r2.host()
    )));
    assert!(aggregated.contains(&format!(
        "href=\"http://{}/whl/cu126/torch-2.9.0%2Bcu126-",
        upstreams.pytorch.host()
    )));
    assert!(
        aggregated.contains("href=\"/whl/cpu/torch-2.9.0-py3-none-macosx_11_0_arm64.whl#sha256=")
    );

    for missing in ["/cu130/torchaudio/", "/torchaudio/", "/cu999/torch/"] {
        let response = client
            .get(format!("{}{missing}", upstreams.pytorch_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{missing}");
    }
    let metadata = client
        .get(format!(
            "http://{}/whl/cu130/torch-2.9.0%2Bcu130-py3-none-manylinux_2_28_x86_64.whl.metadata",
            upstreams.pytorch.host()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), 200);
    assert_eq!(metadata.bytes().await.unwrap(), wheel.wheel.metadata);
    assert_eq!(
        upstreams.pytorch_file_requests(
            "/whl/cu130/torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl.metadata"
        ),
        1
    );
}
