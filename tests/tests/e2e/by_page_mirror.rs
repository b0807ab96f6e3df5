//! One build for the whole stack in the mirror, bound by page: `mirror sync` of `torch` and
//! `torch-scatter` for an H100 under driver 570 (torch 2.9.0 is `+cu129` there, and the PyG host
//! has no `torch-2.9.0+cu129.html`) resolves torch 2.8.0 `+cu129` with `2.1.2+pt28cu129`, stores
//! the template pages and the derived wheel, and locks its `/bound/` link with the derived
//! wheel's hash; with every upstream gone, real pip (through the offline server) and uv (from
//! the lock) install that pair, the wheel's own `METADATA` pinning torch's release line.

use std::path::Path;

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

use crate::by_page::{
    H100_DRIVER_570, PYG_TAGS, installed_requirements, pyg_host, pyg_source, pytorch_index,
};
use crate::support::{free_port, install_into, toml_inline, version};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_stores_and_locks_the_torch_scatter_of_torchs_build() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let pyg = pyg_host().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let port = free_port();
    let text = format!(
        "pytorch_url = \"{}\"\npypi_url = \"{}\"\npython = [\"3.11\"]\nplatforms = [\"linux-x86_64\"]\nmachines = [{}]\nserver_url = \"http://127.0.0.1:{port}\"\n\n[[package]]\nname = \"torch\"\n\n[[package]]\nname = \"torch-scatter\"\n\n[[sources]]\nname = \"pyg\"\nurl = \"{}\"\nprojects = [\"torch-scatter\"]\n",
        pytorch.url(),
        pypi.url(),
        toml_inline(H100_DRIVER_570),
        pyg.template(),
    );
    let config = MirrorConfig::parse(&text, Path::new("mirror.toml"))
        .unwrap_or_else(|err| panic!("{err}\n{text}"));
    let options = SyncOptions {
        store: store.clone(),
        jobs: 2,
    };
    let report = mirror::sync(&config, &options, &NoProgress).await.unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    let [resolution] = report.plan.resolutions.as_slice() else {
        panic!("one environment");
    };
    let versions: std::collections::BTreeMap<&str, &str> = resolution
        .packages
        .iter()
        .map(|p| (p.project.as_str(), p.full_version.as_str()))
        .collect();
    assert_eq!(versions["torch"], "2.8.0+cu129", "{versions:?}");
    assert_eq!(versions["torch-scatter"], "2.1.2+pt28cu129", "{versions:?}");
    // Only the pages of the builds torch gets on this machine were read: one per release.
    let pages: Vec<&str> = report.plan.pages.iter().map(|p| p.url.as_str()).collect();
    assert!(
        pages.iter().any(|u| u.ends_with("torch-2.8.0+cu129.html")),
        "{pages:?}"
    );
    assert!(
        !pages
            .iter()
            .any(|u| u.contains("cu130") || u.contains("cpu")),
        "{pages:?}"
    );

    let lock = std::fs::read_dir(store.join("locks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .unwrap();
    let text = std::fs::read_to_string(&lock).unwrap();
    let scatter = format!("torch_scatter-2.1.2%2Bpt28cu129-{PYG_TAGS}.whl");
    assert!(
        text.contains(&format!(
            "/bound/pyg/2.8.0/cu129/%3D%3D2.8.%2A/torch-scatter/{scatter}"
        )),
        "{text}"
    );

    // Every upstream goes away; an offline server on the store, with the same sources.
    let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
    let source = pyg_source(&pyg);
    drop((pytorch, pypi, pyg));
    let machine = serde_json::from_str(H100_DRIVER_570).unwrap();
    let proxy = Proxy::start_with(&upstreams, move |server| {
        server.offline = true;
        server.cache_dir.clone_from(&store);
        server.machine = Some(machine);
        server.pytorch_url = pytorch_url;
        server.pypi_url = pypi_url;
        server.sources = vec![source];
        server.listen = format!("127.0.0.1:{port}").parse().unwrap();
    })
    .await;
    // pip 26.3 checks the wheel's METADATA against its `.metadata`: the derived wheel passes.
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(
        Installer::Pip,
        &proxy.simple_url(),
        &["torch", "torch-scatter"],
        dir.path(),
    )
    .await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    assert_eq!(version(&dists, "torch"), "2.8.0+cu129", "{outcome}");
    assert_eq!(
        version(&dists, "torch-scatter"),
        "2.1.2+pt28cu129",
        "{outcome}"
    );
    assert_eq!(installed_requirements(dir.path()), ["torch==2.8.*"]);

    // uv from the lock: the hash it names is the derived wheel's, the bytes the server sends.
    let venv = tempfile::tempdir().unwrap();
    let python = installers::create_venv(&venv.path().join("venv")).await;
    installers::uv_install_lock(&lock, &python)
        .await
        .assert_success();
    let dists = installers::installed(&venv.path().join("venv"));
    assert_eq!(version(&dists, "torch"), "2.8.0+cu129");
    assert_eq!(version(&dists, "torch-scatter"), "2.1.2+pt28cu129");
}
