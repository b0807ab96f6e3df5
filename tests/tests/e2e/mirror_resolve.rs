//! The complete air-gapped mirror: upstreams whose wheels carry torch's real dependency
//! structure (`wheelgate_e2e::reference`); the configuration declares only `torch` and
//! `torchvision`; the sync resolves 12 environments (Python 3.10 to 3.12, Linux x86_64 and
//! aarch64, cu130 and cpu) and stores the union; then, with the upstreams gone, real pip and uv
//! install from `serve --offline`, resolve for other Pythons and platforms, and uv installs from
//! the PEP 751 locks. Bad input: a requirement no environment can satisfy, a conflict, a project
//! that exists only as a squatted name on the wrong upstream.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::reference::{CU128_PINS, CU130_PINS, reference};
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, Resolution, SyncOptions};

use crate::support::{assert_routing_safe, free_port, install_ok, version};

fn version_of(dists: &BTreeMap<String, String>, name: &str) -> String {
    version(dists, name).to_string()
}

fn config(upstreams: &Upstreams, server_url: &str, python: &str, extra: &str) -> MirrorConfig {
    let text = format!(
        r#"
pytorch_url = "{}"
pypi_url = "{}"
server_url = "{server_url}"
python = {python}
platforms = ["linux-x86_64", "linux-aarch64"]
backends = ["cu130", "cpu"]

[[package]]
name = "torch"
versions = "==2.9.0"

[[package]]
name = "torchvision"
versions = "==0.24.0"
{extra}"#,
        upstreams.pytorch_url(),
        upstreams.pypi_url()
    );
    MirrorConfig::parse(&text, Path::new("mirror.toml")).unwrap()
}

/// name → full version of one environment's resolution.
fn resolved<'a>(resolutions: &'a [Resolution], environment: &str) -> BTreeMap<&'a str, &'a str> {
    let resolution = resolutions
        .iter()
        .find(|r| r.environment.name == environment)
        .unwrap_or_else(|| panic!("no environment `{environment}`"));
    resolution
        .packages
        .iter()
        .map(|p| (p.project.as_str(), p.full_version.as_str()))
        .collect()
}

fn assert_closure(resolutions: &[Resolution]) {
    assert_eq!(resolutions.len(), 12);
    for python in ["310", "311", "312"] {
        for platform in ["linux-x86_64", "linux-aarch64"] {
            for backend in ["cu130", "cpu"] {
                let name = format!("py{python}-{platform}-{backend}");
                let set = resolved(resolutions, &name);
                assert_eq!(set["torch"], format!("2.9.0+{backend}"), "{name}");
                assert_eq!(set["torchvision"], format!("0.24.0+{backend}"), "{name}");
                // Requires-Python: 3.10 needs the older releases.
                let old = python == "310";
                assert_eq!(
                    set["filelock"],
                    if old { "3.19.1" } else { "4.2.11" },
                    "{name}"
                );
                assert_eq!(
                    set["networkx"],
                    if old { "3.4.2" } else { "3.6.1" },
                    "{name}"
                );
                assert_eq!(set["numpy"], if old { "2.2.6" } else { "2.4.6" }, "{name}");
                assert_eq!(
                    set["pillow"],
                    if old { "11.3.0" } else { "13.0.0" },
                    "{name}"
                );
                // Markers: setuptools from 3.12 only.
                assert_eq!(set.contains_key("setuptools"), python == "312", "{name}");
                // Chains and pins.
                assert_eq!(set["mpmath"], "1.3.0", "{name}");
                assert_eq!(set["markupsafe"], "3.0.4", "{name}");
                for name_ in ["sympy", "jinja2", "fsspec", "typing-extensions"] {
                    assert!(set.contains_key(name_), "{name}: {name_} missing");
                }
                assert!(!set.contains_key("opt-einsum"), "an extra nobody asked for");
                // The CUDA libraries: only for cu130 on x86_64, and cu130's own.
                let cuda = backend == "cu130" && platform == "linux-x86_64";
                for (pin, pinned) in CU130_PINS {
                    assert_eq!(set.get(pin) == Some(&pinned), cuda, "{name}: {pin}");
                }
                for (pin, _) in CU128_PINS.iter().filter(|(p, _)| *p != "triton") {
                    assert!(!set.contains_key(pin), "{name}: {pin} of another backend");
                }
                let expected = 12 + usize::from(python == "312") + if cuda { 7 } else { 0 };
                assert_eq!(set.len(), expected, "{name}: {set:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_top_level_only_the_store_installs_offline_with_pip_uv_and_the_locks() {
    let upstreams = Upstreams::start_with(reference()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let port = free_port();
    let server_url = format!("http://127.0.0.1:{port}");
    let config = config(&upstreams, &server_url, r#"["3.10", "3.11", "3.12"]"#, "");

    let report = mirror::sync(
        &config,
        &SyncOptions {
            store: store.clone(),
            jobs: 8,
        },
        &NoProgress,
    )
    .await
    .unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    assert_closure(&report.plan.resolutions);
    // No squatter, no version the pins exclude, no build nobody declared.
    let names: Vec<&str> = report
        .plan
        .files
        .iter()
        .map(|f| f.filename.as_str())
        .collect();
    for absent in ["-99.0-", "mpmath-1.4.0", "+cu128", "cu12-"] {
        assert!(
            !names.iter().any(|n| n.contains(absent)),
            "{absent} in {names:?}"
        );
    }
    assert_routing_safe(&upstreams);
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(mirror::MARKER)).unwrap()).unwrap();
    assert_eq!(marker["environments"].as_array().unwrap().len(), 12);

    assert_mirror_lock_matches(&config, dir.path(), &store).await;

    // The upstreams go away; the store is served offline at the address the locks name.
    let proxy = Proxy::start_with(&upstreams, |c| {
        c.offline = true;
        c.cache_dir.clone_from(&store);
        c.machine = Some(machines::CPU_ONLY.machine());
        c.listen = format!("127.0.0.1:{port}").parse().unwrap();
    })
    .await;
    drop(upstreams);

    assert_offers_only_stored(&proxy).await;
    install_offline(&proxy).await;
    resolve_other_targets(&proxy).await;

    install_from_locks(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requirements_name_the_environment_and_the_chain_and_write_nothing() {
    let upstreams = Upstreams::start_with(reference()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let sync = |config: MirrorConfig| {
        let store = store.clone();
        async move {
            mirror::sync(&config, &SyncOptions { store, jobs: 4 }, &NoProgress)
                .await
                .map(|_| ())
                .unwrap_err()
                .to_string()
        }
    };

    // A pin that exists nowhere for one platform: the environment and requirement are named.
    let err = sync(config(
        &upstreams,
        "http://m",
        r#"["3.12"]"#,
        "[[package]]\nname = \"nvidia-cublas-cu13\"\nversions = \"==13.1.0.3\"\n",
    ))
    .await;
    assert!(err.contains("`py312-linux-aarch64-"), "{err}");
    assert!(err.contains("nvidia-cublas-cu13"), "{err}");
    assert!(err.contains("13.1.0.3"), "{err}");

    // A constraint against a pin: the derivation chain in words.
    let err = sync(config(
        &upstreams,
        "http://m",
        r#"["3.12"]"#,
        "[[constraint]]\nname = \"mpmath\"\nversions = \">=1.4\"\n",
    ))
    .await;
    for part in [
        "mpmath",
        "sympy 1.14.0 depends on mpmath",
        "torch 2.9.0 depends on sympy",
        "the declared requirements depend on torch",
        "the `[[constraint]]` `mpmath>=1.4`",
    ] {
        assert!(err.contains(part), "{part} not in {err}");
    }

    // Only the general upstream has `pytorch-triton` 99.0: never taken from there.
    let err = sync(config(
        &upstreams,
        "http://m",
        r#"["3.12"]"#,
        "[[package]]\nname = \"pytorch-triton\"\nversions = \"==99.0\"\nbackends = [\"cu130\"]\n",
    ))
    .await;
    assert!(err.contains("pytorch-triton"), "{err}");
    assert!(
        err.contains(
            "served only from the sources that own it: `pytorch`; no other index is consulted"
        ),
        "{err}"
    );
    assert!(!store.join(mirror::MARKER).exists());
    assert!(!store.join("locks").exists());
    assert_routing_safe(&upstreams);
}

/// `mirror lock` writes the same locks without downloading; and the resolution figure: six
/// environments (three Pythons, cu130 and cpu on x86_64) from the local upstreams.
async fn assert_mirror_lock_matches(config: &MirrorConfig, dir: &Path, store: &Path) {
    let locks = dir.join("locks");
    let (_, written) = mirror::lock(config, &locks).await.unwrap();
    assert_eq!(written.len(), 12);
    for path in &written {
        let stored = store.join("locks").join(path.file_name().unwrap());
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            std::fs::read_to_string(&stored).unwrap(),
            "{}",
            path.display()
        );
    }
    let six = {
        let mut six = config.clone();
        six.packages
            .iter_mut()
            .for_each(|p| p.platforms.truncate(1));
        six
    };
    let started = Instant::now();
    let (plan, _) = mirror::lock(&six, &dir.join("six")).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(plan.resolutions.len(), 6);
    eprintln!("resolved 6 environments in {elapsed:?}");

    // An extra the entry requests brings its requirements.
    let mut extra = six;
    extra.packages[0].extras = vec!["opt-einsum".to_string()];
    let (plan, _) = mirror::lock(&extra, &dir.join("extra")).await.unwrap();
    for resolution in &plan.resolutions {
        let set = resolved(&plan.resolutions, &resolution.environment.name);
        assert_eq!(set.get("opt-einsum"), Some(&"3.4.0"), "{set:?}");
    }
}

/// pip and uv install torch and torchvision from the offline store for a CPU machine and an
/// H100 (CUDA 13).
async fn install_offline(proxy: &Proxy) {
    let h100 = machines::H100.machine();
    for installer in [Installer::Pip, Installer::Uv] {
        let (_dir, dists) =
            install_ok(installer, &proxy.simple_url(), &["torch", "torchvision"]).await;
        assert_eq!(version(&dists, "torch"), "2.9.0+cpu", "{installer}");
        assert_eq!(version(&dists, "filelock"), "4.2.11", "{installer}");
        assert_eq!(version(&dists, "mpmath"), "1.3.0", "{installer}");
        assert!(
            !dists.keys().any(|n| n.starts_with("nvidia")),
            "{installer}: {dists:?}"
        );
        let (_dir, dists) = install_ok(
            installer,
            &proxy.machine_url(&h100),
            &["torch", "torchvision"],
        )
        .await;
        assert_eq!(version(&dists, "torch"), "2.9.0+cu130", "{installer}");
        assert_eq!(
            version(&dists, "nvidia-cublas-cu13"),
            "13.1.0.3",
            "{installer}"
        );
        assert_eq!(version(&dists, "triton"), "3.5.0", "{installer}");
    }
}

/// pip's dry run and `uv pip compile` for other Pythons and platforms, from the store alone.
async fn resolve_other_targets(proxy: &Proxy) {
    let h100 = machines::H100.machine();
    let report = installers::pip_dry_run(
        &proxy.simple_url(),
        &["torch", "torchvision"],
        "3.10",
        "manylinux_2_28_x86_64",
    )
    .await;
    report.assert_success();
    assert!(report.stdout.contains("\"filelock\""), "{report}");
    assert!(
        report.stdout.contains("\"version\": \"3.19.1\""),
        "{report}"
    );
    let report = installers::pip_dry_run(
        &proxy.simple_url(),
        &["torch", "torchvision"],
        "3.12",
        "manylinux_2_28_x86_64",
    )
    .await;
    report.assert_success();
    // pip checks Requires-Python for the target but evaluates markers for the running
    // interpreter (3.11 here), so its 3.12 answer has no setuptools; uv's below has.
    assert!(
        report.stdout.contains("\"version\": \"4.2.11\""),
        "{report}"
    );
    // Linux aarch64, CPU build (pip would ask for the CUDA libraries of a CUDA build, whose
    // markers it evaluates for this x86_64 host; uv below does the CUDA build right).
    let report = installers::pip_dry_run(
        &proxy.simple_url(),
        &["torch", "torchvision"],
        "3.11",
        "manylinux_2_28_aarch64",
    )
    .await;
    report.assert_success();
    for wheel in [
        "torch-2.9.0%2Bcpu-py3-none-manylinux_2_28_aarch64.whl",
        "numpy-2.4.6-py3-none-manylinux_2_28_aarch64.whl",
    ] {
        assert!(report.stdout.contains(wheel), "{wheel}: {report}");
    }
    for (python, platform, url, expect, reject) in [
        (
            "3.10",
            "x86_64-manylinux_2_28",
            proxy.machine_url(&h100),
            "filelock==3.19.1",
            "setuptools",
        ),
        (
            "3.12",
            "x86_64-manylinux_2_28",
            proxy.simple_url(),
            "setuptools==84.2.1",
            "nvidia",
        ),
        (
            "3.12",
            "aarch64-manylinux_2_28",
            proxy.machine_url(&h100),
            "torch==2.9.0+cu130",
            "nvidia",
        ),
    ] {
        let compiled =
            installers::uv_compile(&url, &["torch", "torchvision"], python, platform).await;
        compiled.assert_success();
        assert!(
            compiled.stdout.contains(expect),
            "{python} {platform}: {compiled}"
        );
        assert!(
            !compiled.stdout.contains(reject),
            "{python} {platform}: {compiled}"
        );
        if python == "3.10" {
            assert!(
                compiled.stdout.contains("nvidia-cudnn-cu13==9.13.0.50"),
                "{compiled}"
            );
        }
    }
}

/// uv installs from the locks of this machine's Python (3.11) for both platforms into a target
/// directory (and refuses the other Pythons' locks), and into a venv for its own environments.
async fn install_from_locks(store: &Path) {
    for python in ["310", "311", "312"] {
        for (platform, uv_platform) in [
            ("linux-x86_64", "x86_64-manylinux_2_28"),
            ("linux-aarch64", "aarch64-manylinux_2_28"),
        ] {
            for backend in ["cu130", "cpu"] {
                let lock = store
                    .join("locks")
                    .join(format!("pylock.py{python}-{platform}-{backend}.toml"));
                let target = tempfile::tempdir().unwrap();
                let version = format!("3.{}", &python[1..]);
                let outcome =
                    installers::uv_install_lock_for(&lock, &version, uv_platform, target.path())
                        .await;
                if python != "311" {
                    // uv checks a lock's Requires-Python against the interpreter it runs with
                    // (3.11 here), whatever `--python-version` says.
                    assert!(!outcome.success, "{outcome}");
                    assert!(
                        outcome.stderr.contains(&format!(
                            "incompatible with the `pylock.toml`'s Python requirement: `=={version}.*`"
                        )),
                        "{outcome}"
                    );
                    continue;
                }
                outcome.assert_success();
                let dists = installers::installed(target.path());
                assert_eq!(
                    version_of(&dists, "torch"),
                    format!("2.9.0+{backend}"),
                    "{}",
                    lock.display()
                );
                assert_eq!(
                    dists.contains_key("setuptools"),
                    python == "312",
                    "{}: {dists:?}",
                    lock.display()
                );
            }
        }
    }
    for (lock, torch) in [
        ("pylock.py311-linux-x86_64-cu130.toml", "2.9.0+cu130"),
        ("pylock.py311-linux-x86_64-cpu.toml", "2.9.0+cpu"),
    ] {
        let venv = tempfile::tempdir().unwrap();
        let python = installers::create_venv(&venv.path().join("venv")).await;
        let outcome = installers::uv_install_lock(&store.join("locks").join(lock), &python).await;
        outcome.assert_success();
        let dists = installers::installed(&venv.path().join("venv"));
        assert_eq!(version(&dists, "torch"), torch, "{lock}");
        assert_eq!(version(&dists, "filelock"), "4.2.11", "{lock}");
    }
}

/// The offline server lists only what the store holds, in HTML and JSON: never mpmath 1.4.0
/// (excluded by sympy's pin), never a cu128 build (not declared), no `.metadata` link that
/// cannot be served.
async fn assert_offers_only_stored(proxy: &Proxy) {
    let client = reqwest::Client::new();
    for accept in ["application/vnd.pypi.simple.v1+json", "text/html"] {
        let get = |path: String| {
            client
                .get(format!("{}{path}", proxy.base()))
                .header("accept", accept)
                .send()
        };
        let mpmath = get("/simple/mpmath/".into())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(mpmath.contains("mpmath-1.3.0-py3-none-any.whl"), "{mpmath}");
        assert!(!mpmath.contains("1.4.0"), "{accept}: {mpmath}");
        let cu128 = get("/b/cu128/simple/torch/".into())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!cu128.contains("torch-2.9.0"), "{accept}: {cu128}");
        let torch = get("/b/cu130/simple/torch/".into())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            torch.contains("torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl"),
            "{torch}"
        );
        assert!(torch.contains("core-metadata"), "{accept}: {torch}");
    }
}
