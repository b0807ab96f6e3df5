//! `wheelgate mirror sync` from a wheel-variant index (PEP 825): the variant a declared machine
//! gets and every wheel of a declared label are stored with their `.metadata` and the version's
//! `*-variants.json`; with the index gone, an offline server on the store gives real pip and uv
//! the declared machine's variant under the plain filename, a CPU machine the stored `null`,
//! and a machine whose own variant was not mirrored the best stored one it runs.

use std::path::Path;

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::variant_index::{TAGS, VariantIndex, installed_variant};
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

use crate::support::{free_port, install_ok, version};

/// torch 2.9.0 for an H100 on driver 580 (its variant: `cuda13.0`) and the `null` label.
fn config_text(index: &VariantIndex, upstreams: &Upstreams) -> String {
    format!(
        r#"
pytorch_url = "{}"
pypi_url = "{}"
platforms = ["linux-x86_64"]
dependencies = false

[[package]]
name = "torch"
versions = "==2.9.0"
machines = [{{ platform = "linux-x86_64", glibc = "2.36", nvidia = {{ driver_version = "580.65.06", gpus = [{{ name = "NVIDIA H100 80GB HBM3", compute_capability = "9.0" }}] }} }}]
variant_labels = ["null"]
"#,
        index.url(),
        upstreams.pypi_url()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_server_serves_mirrored_variants_per_machine_and_per_label() {
    let upstreams = Upstreams::start().await;
    let index = VariantIndex::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let config =
        MirrorConfig::parse(&config_text(&index, &upstreams), Path::new("mirror.toml")).unwrap();
    let options = SyncOptions {
        store: store.clone(),
        jobs: 4,
    };
    let report = mirror::sync(&config, &options, &NoProgress).await.unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    let mut names: Vec<&str> = report
        .plan
        .files
        .iter()
        .map(|f| f.filename.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            format!("torch-2.9.0-{TAGS}-cuda13.0.whl"),
            format!("torch-2.9.0-{TAGS}-cuda13.0.whl.metadata"),
            format!("torch-2.9.0-{TAGS}-null.whl"),
            format!("torch-2.9.0-{TAGS}-null.whl.metadata"),
            "torch-2.9.0-variants.json".to_string(),
        ]
    );
    // The variants file was stored while planning, to choose the machine's variant.
    assert_eq!(index.hits("/whl/variant/torch-2.9.0-variants.json"), 1);

    let proxy = Proxy::start_with(&upstreams, |server| {
        server.offline = true;
        server.cache_dir.clone_from(&store);
        server.pytorch_url = index.url();
        server.machine = Some(machines::H100.machine());
    })
    .await;
    let index_url = index.url();
    drop(index);
    drop(upstreams);
    assert!(
        reqwest::get(format!("{index_url}/torch/")).await.is_err(),
        "the variant index is still up"
    );

    for installer in [Installer::Pip, Installer::Uv] {
        for (machine, url, expected) in [
            ("h100 (declared)", proxy.simple_url(), "cuda13.0"),
            (
                "cpu-only (by label)",
                proxy.machine_url(&machines::CPU_ONLY.machine()),
                "null",
            ),
            // V100's own variant, cuda12.8, was not mirrored; cuda13.0 has no sm_70.
            (
                "v100 (not declared)",
                proxy.machine_url(&machines::V100.machine()),
                "null",
            ),
        ] {
            let (dir, dists) = install_ok(installer, &url, &["torch==2.9.0"]).await;
            assert_eq!(version(&dists, "torch"), "2.9.0", "{installer} {machine}");
            assert_eq!(
                installed_variant(dir.path()).as_deref(),
                Some(expected),
                "{installer} {machine} through {url}"
            );
        }
    }

    // The explanation says which variants the store lacks.
    let body = reqwest::get(format!("{}/explain/torch/?format=json", proxy.base()))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let explain: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let dropped = explain["dropped"].to_string();
    assert!(
        dropped.contains(&format!("torch-2.9.0-{TAGS}-cuda12.8.whl"))
            && dropped.contains("not mirrored"),
        "{dropped}"
    );
}

/// A resolving mirror (the default) on a variant index: the declared machine's variant is
/// resolved with the requirements its `variant_label` markers give that label (`filelock`,
/// never `never-installed`), stored with its variants file, and installed offline by uv through
/// the server and from the environment's PEP 751 lock (plain filename, the variant route).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolving_mirror_takes_the_variant_and_its_requirements() {
    let upstreams = Upstreams::start().await;
    let index = VariantIndex::start_with(true).await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let port = free_port();
    let text = config_text(&index, &upstreams).replace(
        "dependencies = false",
        &format!("python = [\"3.11\"]\nserver_url = \"http://127.0.0.1:{port}\""),
    );
    let text = text.replace("variant_labels = [\"null\"]\n", "");
    let config = MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap();
    let options = SyncOptions {
        store: store.clone(),
        jobs: 4,
    };
    let report = mirror::sync(&config, &options, &NoProgress).await.unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    let resolution = &report.plan.resolutions[0];
    let mut resolved: Vec<(String, String)> = resolution
        .packages
        .iter()
        .map(|p| (p.project.clone(), p.full_version.clone()))
        .collect();
    resolved.sort();
    assert_eq!(
        resolved,
        [
            ("filelock".to_string(), "3.20.0".to_string()),
            ("torch".to_string(), "2.9.0".to_string())
        ]
    );
    let names: Vec<&str> = report
        .plan
        .files
        .iter()
        .map(|f| f.filename.as_str())
        .collect();
    assert!(
        names.contains(&format!("torch-2.9.0-{TAGS}-cuda13.0.whl").as_str()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("-null.whl")), "{names:?}");
    assert!(names.contains(&"torch-2.9.0-variants.json"), "{names:?}");

    let proxy = Proxy::start_with(&upstreams, |server| {
        server.offline = true;
        server.cache_dir.clone_from(&store);
        server.pytorch_url = index.url();
        server.listen = format!("127.0.0.1:{port}").parse().unwrap();
        server.machine = Some(machines::H100.machine());
    })
    .await;
    drop(index);
    // pip 26.2 and later refuse a wheel whose METADATA differs from its `.metadata`: the store
    // holds the derived wheel, its markers decided as the `.metadata` has them.
    for installer in [Installer::Uv, Installer::Pip] {
        let (dir, dists) = install_ok(installer, &proxy.simple_url(), &["torch==2.9.0"]).await;
        assert_eq!(
            installed_variant(dir.path()).as_deref(),
            Some("cuda13.0"),
            "{installer}"
        );
        assert_eq!(version(&dists, "filelock"), "3.20.0", "{installer}");
        assert!(
            !dists.contains_key("never-installed"),
            "{installer}: {dists:?}"
        );
    }

    let lock = std::fs::read_dir(store.join("locks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .unwrap();
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(
        text.contains(&format!("/files/torch/v/cuda13.0/torch-2.9.0-{TAGS}.whl")),
        "{text}"
    );
    assert!(!text.contains("variants.json"), "{text}");
    // The lock names the derived wheel's bytes, the ones the server answers with.
    let upstream = report
        .plan
        .files
        .iter()
        .find(|f| f.filename == format!("torch-2.9.0-{TAGS}-cuda13.0.whl"))
        .unwrap();
    let upstream_sha256 = upstream.spec.sha256.as_deref().unwrap();
    assert!(!text.contains(upstream_sha256), "{text}");
    let venv = tempfile::tempdir().unwrap();
    let python = installers::create_venv(&venv.path().join("venv")).await;
    installers::uv_install_lock(&lock, &python)
        .await
        .assert_success();
    let dists = installers::installed(&venv.path().join("venv"));
    assert_eq!(version(&dists, "torch"), "2.9.0");
    assert_eq!(version(&dists, "filelock"), "3.20.0");
}
