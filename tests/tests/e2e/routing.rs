//! Dependency confusion cannot happen: the fake PyPI has a `pytorch-triton` 99.0 (the December
//! 2022 `torchtriton` attack's shape: a name only the PyTorch index publishes, a placeholder on
//! the real PyPI), and it is never served nor even asked for; unknown projects are `404`, never
//! the PyTorch index's `403`. (torch itself is published on PyPI by PyTorch's maintainers and
//! is merged from both: `sources.rs`.)

use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{assert_routing_safe, install_into, version};

async fn planted_packages_never_served(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;

    // pytorch-triton exists only on the PyTorch index (3.5.0) here: installing it either gets
    // that one or fails, and never the planted 99.0.
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(
        installer,
        &proxy.simple_url(),
        &["pytorch-triton"],
        dir.path(),
    )
    .await;
    let dists = wheelgate_e2e::installers::installed(dir.path());
    if outcome.success {
        assert_eq!(version(&dists, "pytorch-triton"), "3.5.0", "{outcome}");
    } else {
        assert!(dists.is_empty(), "{dists:?}");
    }

    assert_routing_safe(&upstreams);
    let planted: Vec<String> = upstreams
        .pypi
        .log
        .paths()
        .into_iter()
        .filter(|p| p.contains("99.0"))
        .collect();
    assert!(
        planted.is_empty(),
        "planted files were fetched from PyPI: {planted:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_never_gets_the_planted_pypi_pytorch_triton() {
    planted_packages_never_served(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_never_gets_the_planted_pypi_pytorch_triton() {
    planted_packages_never_served(Installer::Uv).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_projects_are_404_never_403() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let client = reqwest::Client::new();
    // torchaudio belongs to the PyTorch upstream, which answers 403 for it, and to PyPI (where
    // PyTorch publishes it too), which answers 404; no-such-project to the general upstream
    // alone, which answers 404.
    for project in ["torchaudio", "no-such-project"] {
        for prefix in [
            proxy.simple_url(),
            proxy.backend_url("cu128"),
            proxy.machine_url(&machines::MI300X.machine()),
        ] {
            let url = format!("{prefix}{project}/");
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.status(), 404, "{url}");
        }
    }
    assert!(
        upstreams.pytorch.log.count_prefix("/whl/") > 0,
        "the PyTorch upstream was never asked for torchaudio"
    );
    let asked = proxy_asked_pypi_for_pytorch_only_names(&upstreams);
    assert!(asked.is_empty(), "PyPI was asked for {asked:?}");
    let asked: Vec<String> = upstreams
        .pytorch
        .log
        .paths()
        .into_iter()
        .filter(|p| p.contains("no-such-project"))
        .collect();
    assert!(
        asked.is_empty(),
        "the PyTorch upstream was asked for a general project: {asked:?}"
    );
}

fn proxy_asked_pypi_for_pytorch_only_names(upstreams: &Upstreams) -> Vec<String> {
    upstreams
        .pypi
        .log
        .paths()
        .into_iter()
        .filter(|p| p.contains("pytorch-triton"))
        .collect()
}
