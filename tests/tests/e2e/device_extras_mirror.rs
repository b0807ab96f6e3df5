//! Device extras in the mirror: `mirror sync` for an MI300X and a Radeon RX 7900 XTX, with AMD's
//! index as a source. On the MI300X, AMD's multi-arch torch 2.10.0 is resolved with its
//! `device-gfx942` extra required (so `amd-torch-device-gfx942` is in the store and the lock),
//! its derived wheel stored and locked under `/files/torch/x/device-gfx942/`; the RX 7900 XTX
//! (gfx1100, no extra) gets torch 2.9.0 `+rocm6.4` and no device package. With every upstream
//! gone, real pip (through the offline server) and uv (from the lock) install the MI300X's set.

use std::collections::BTreeMap;
use std::path::Path;

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

use crate::device_extras::{MI300X, RX_7900_XTX, TAGS, amd_index, amd_source, pytorch_index};
use crate::support::{free_port, install_into, toml_inline, version};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_stores_and_locks_the_device_package_of_each_machines_gpu() {
    let upstreams = Upstreams::start().await;
    let pytorch = pytorch_index().await;
    let amd = amd_index().await;
    let pypi = SimpleIndex::start(Vec::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let port = free_port();
    let text = format!(
        "pytorch_url = \"{}\"\npypi_url = \"{}\"\npython = [\"3.11\"]\nplatforms = [\"linux-x86_64\"]\nmachines = [{}, {}]\nserver_url = \"http://127.0.0.1:{port}\"\n\n[[package]]\nname = \"torch\"\n\n[[sources]]\nname = \"amd\"\nurl = \"{}\"\nprojects = [\"torch\", \"amd-torch-device-*\", \"filelock\"]\n",
        pytorch.url(),
        pypi.url(),
        toml_inline(MI300X),
        toml_inline(RX_7900_XTX),
        amd.url(),
    );
    let config = MirrorConfig::parse(&text, Path::new("mirror.toml"))
        .unwrap_or_else(|err| panic!("{err}\n{text}"));
    let options = SyncOptions {
        store: store.clone(),
        jobs: 2,
    };
    let report = mirror::sync(&config, &options, &NoProgress).await.unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    let resolved: BTreeMap<&str, BTreeMap<&str, &str>> = report
        .plan
        .resolutions
        .iter()
        .map(|r| {
            let packages = r
                .packages
                .iter()
                .map(|p| (p.project.as_str(), p.full_version.as_str()))
                .collect();
            (r.environment.name.as_str(), packages)
        })
        .collect();
    let mi300x = &resolved["py311-linux-x86_64-machine1"];
    assert_eq!(mi300x["torch"], "2.10.0+rocm7.1", "{resolved:?}");
    assert_eq!(mi300x["amd-torch-device-gfx942"], "2.10.0", "{resolved:?}");
    assert!(
        !mi300x.contains_key("amd-torch-device-gfx90a"),
        "{resolved:?}"
    );
    let radeon = &resolved["py311-linux-x86_64-machine2"];
    assert_eq!(radeon["torch"], "2.9.0+rocm6.4", "{resolved:?}");
    assert!(
        !radeon.keys().any(|p| p.starts_with("amd-torch-device-")),
        "{resolved:?}"
    );

    let lock = store.join("locks/pylock.py311-linux-x86_64-machine1.toml");
    let text = std::fs::read_to_string(&lock).unwrap();
    let torch = format!("torch-2.10.0%2Brocm7.1-{TAGS}.whl");
    assert!(
        text.contains(&format!("/files/torch/x/device-gfx942/{torch}")),
        "{text}"
    );
    // The lock names the derived wheel's bytes, not the upstream's.
    let upstream = report
        .plan
        .files
        .iter()
        .find(|f| f.filename == format!("torch-2.10.0+rocm7.1-{TAGS}.whl"))
        .unwrap();
    assert!(
        !text.contains(upstream.spec.sha256.as_deref().unwrap()),
        "{text}"
    );

    // Every upstream goes away; an offline server on the store, for the MI300X.
    let (pytorch_url, pypi_url) = (pytorch.url(), pypi.url());
    let source = amd_source(&amd);
    drop((pytorch, amd, pypi));
    let machine = serde_json::from_str(MI300X).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(Installer::Pip, &proxy.simple_url(), &["torch"], dir.path()).await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    assert_eq!(version(&dists, "torch"), "2.10.0+rocm7.1", "{outcome}");
    assert_eq!(
        version(&dists, "amd-torch-device-gfx942"),
        "2.10.0",
        "{outcome}"
    );

    let venv = tempfile::tempdir().unwrap();
    let python = installers::create_venv(&venv.path().join("venv")).await;
    installers::uv_install_lock(&lock, &python)
        .await
        .assert_success();
    let dists = installers::installed(&venv.path().join("venv"));
    assert_eq!(version(&dists, "torch"), "2.10.0+rocm7.1");
    assert_eq!(version(&dists, "amd-torch-device-gfx942"), "2.10.0");
}
