//! `wheelgate mirror sync` end to end: sync from the fake upstreams into a store, stop the
//! upstreams, serve the store offline, and install with real pip and uv on two machines with
//! different GPUs; a rerun skips everything; a config naming nothing that exists fails naming
//! it; a dry run lists and sizes without writing; a full disk (a file-size limit) fails with a
//! clear message, leaves no marker, and a rerun completes the store.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

use crate::support::{install_ok, version};

/// torch 2.9.0 and torchvision for cu130 and cpu, filelock (newest) from the general upstream.
fn config_text(upstreams: &Upstreams) -> String {
    format!(
        r#"
pytorch_url = "{}"
pypi_url = "{}"
python = ["3.11", "3.12"]
platforms = ["linux-x86_64"]
backends = ["cu130", "cpu"]

[[package]]
name = "torch"
versions = "==2.9.0"

[[package]]
name = "torchvision"
versions = "==0.24.0"

[[package]]
name = "filelock"
"#,
        upstreams.pytorch_url(),
        upstreams.pypi_url()
    )
}

fn parse(text: &str) -> MirrorConfig {
    MirrorConfig::parse(text, Path::new("mirror.toml")).unwrap()
}

fn options(store: &Path) -> SyncOptions {
    SyncOptions {
        store: store.to_path_buf(),
        jobs: 4,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_server_on_a_synced_store_installs_with_pip_and_uv_on_two_machines() {
    let upstreams = Upstreams::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let config = parse(&config_text(&upstreams));

    let report = mirror::sync(&config, &options(&store), &NoProgress)
        .await
        .unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    // torch and torchvision for two backends on one platform, each with its .metadata, and
    // filelock 3.20.0 with its .metadata.
    let names: Vec<&str> = report
        .plan
        .files
        .iter()
        .map(|f| f.filename.as_str())
        .collect();
    // The .metadata files were fetched into the store while resolving: the sync finds them.
    assert_eq!((report.downloaded, report.skipped), (5, 5), "{names:#?}");
    assert!(names.contains(&"torch-2.9.0+cu130-py3-none-manylinux_2_28_x86_64.whl"));
    assert!(names.contains(&"torch-2.9.0+cpu-py3-none-manylinux_2_28_x86_64.whl.metadata"));
    assert!(names.contains(&"torchvision-0.24.0+cu130-py3-none-manylinux_2_28_x86_64.whl"));
    assert!(names.contains(&"filelock-3.20.0-py3-none-any.whl"));
    assert!(
        !names
            .iter()
            .any(|n| n.contains("aarch64") || n.contains("cu128"))
    );
    // Aggregated and per-backend pages of the PyTorch projects, filelock's PyPI page.
    let pages: Vec<&str> = report.plan.pages.iter().map(|p| p.url.as_str()).collect();
    let pytorch = upstreams.pytorch_url();
    for page in [
        format!("{pytorch}/torch/"),
        format!("{pytorch}/cu130/torch/"),
        format!("{pytorch}/cpu/torchvision/"),
        format!("{}/filelock/", upstreams.pypi_url()),
    ] {
        assert!(pages.contains(&page.as_str()), "{page} not in {pages:?}");
    }
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(mirror::MARKER)).unwrap()).unwrap();
    assert_eq!(marker["files"].as_array().unwrap().len(), 10);
    assert_eq!(marker["pytorch_url"], upstreams.pytorch_url());
    assert!(report.summary().starts_with("files 5 ("));
    assert_environments_recorded(&store, &marker);

    // A rerun downloads nothing and completes again.
    let again = mirror::sync(&config, &options(&store), &NoProgress)
        .await
        .unwrap();
    assert!(again.is_complete(), "{:?}", again.failures);
    assert_eq!((again.downloaded, again.skipped), (0, 10));

    // The upstreams go away; the store is served offline, under the same upstream URLs.
    let (pytorch_url, pypi_url) = (upstreams.pytorch_url(), upstreams.pypi_url());
    let proxy = Proxy::start_with(&upstreams, |config| {
        config.offline = true;
        config.cache_dir.clone_from(&store);
        config.machine = Some(machines::CPU_ONLY.machine());
    })
    .await;
    drop(upstreams);
    assert!(
        reqwest::get(format!("{pytorch_url}/torch/")).await.is_err()
            && reqwest::get(format!("{pypi_url}/filelock/")).await.is_err(),
        "the upstreams are still up"
    );

    // Every mirrored .metadata file is served.
    let client = reqwest::Client::new();
    for file in &report.plan.files {
        let url = format!(
            "{}/files/{}/{}",
            proxy.base(),
            file.project,
            file.filename.replace('+', "%2B")
        );
        let response = client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
    }

    let h100 = machines::H100.machine();
    for installer in [Installer::Pip, Installer::Uv] {
        // The server's own machine: no GPU.
        let (_dir, dists) =
            install_ok(installer, &proxy.simple_url(), &["torch", "torchvision"]).await;
        assert_eq!(version(&dists, "torch"), "2.9.0+cpu", "{installer}");
        assert_eq!(version(&dists, "torchvision"), "0.24.0+cpu", "{installer}");
        assert_eq!(version(&dists, "filelock"), "3.20.0", "{installer}");
        // An H100 client through its token.
        let (_dir, dists) = install_ok(
            installer,
            &proxy.machine_url(&h100),
            &["torch", "torchvision"],
        )
        .await;
        assert_eq!(version(&dists, "torch"), "2.9.0+cu130", "{installer}");
        assert_eq!(
            version(&dists, "torchvision"),
            "0.24.0+cu130",
            "{installer}"
        );
        assert_eq!(version(&dists, "filelock"), "3.20.0", "{installer}");
    }
    // A pinned backend reads the per-backend page, stored too.
    let (_dir, dists) = install_ok(Installer::Pip, &proxy.backend_url("cu130"), &["torch"]).await;
    assert_eq!(version(&dists, "torch"), "2.9.0+cu130");
}

/// Each of the 4 environments (Python 3.11 and 3.12, cu130 and cpu) resolved to torch,
/// torchvision and filelock, recorded in the marker with its lock.
fn assert_environments_recorded(store: &Path, marker: &serde_json::Value) {
    let environments = marker["environments"].as_array().unwrap();
    assert_eq!(environments.len(), 4);
    for environment in environments {
        let packages: Vec<&str> = environment["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(packages, ["filelock", "torch", "torchvision"]);
        assert!(store.join(environment["lock"].as_str().unwrap()).is_file());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_naming_nothing_that_exists_fails_naming_the_entries() {
    let upstreams = Upstreams::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Without resolution, every entry is checked on its own.
    let text = format!(
        "dependencies = false\n{}\n[[package]]\nname = \"no-such-project\"\n\n[[package]]\nname = \"torchaudio\"\nversions = \"==2.9.0\"\n",
        config_text(&upstreams).replace("versions = \"==2.9.0\"", "versions = \"==9.9\"")
    );
    let config = parse(&text);
    let err = mirror::sync(&config, &options(&store), &NoProgress)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`torch`: no file matches versions `==9.9`, backends [cu130, cpu]"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`no-such-project`: no project named `no-such-project` at `{}/no-such-project/`",
            upstreams.pypi_url()
        )),
        "{err}"
    );
    assert!(err.contains("`torchaudio`: no project named"), "{err}");
    assert!(!err.contains("`filelock`"), "{err}");
    assert!(!store.join(mirror::MARKER).exists());
    let downloaded = std::fs::read_dir(store.join("files")).unwrap().count();
    assert_eq!(
        downloaded, 0,
        "nothing is downloaded before the plan is sound"
    );

    // The binary says the same and exits with 1.
    let config_path = dir.path().join("mirror.toml");
    std::fs::write(&config_path, &text).unwrap();
    let output = wheelgate(&["mirror", "sync", "--config"], &config_path, &store, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`no-such-project`: no project named"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_lists_and_sizes_everything_and_writes_nothing() {
    let upstreams = Upstreams::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let config = parse(&config_text(&upstreams));
    let dry = mirror::dry_run(&config, &store, 4).await.unwrap();
    assert_eq!(dry.plan.files.len(), 10);
    let (bytes, unknown) = dry.total();
    // download.pytorch.org's HTML gives no sizes: each comes from a HEAD request.
    assert_eq!(unknown, 0);
    let torch = upstreams
        .catalog
        .torch_wheel("2.9.0", "cu130", wheelgate_e2e::catalog::LINUX_X86_64)
        .unwrap();
    let index = dry
        .plan
        .files
        .iter()
        .position(|f| f.filename == torch.wheel.filename)
        .unwrap();
    assert_eq!(dry.sizes[index], Some(torch.wheel.bytes.len() as u64));
    assert!(bytes > torch.wheel.bytes.len() as u64);
    assert!(!store.exists());

    let config_path = dir.path().join("mirror.toml");
    std::fs::write(&config_path, config_text(&upstreams)).unwrap();
    let output = wheelgate(
        &["mirror", "sync", "--dry-run", "--config"],
        &config_path,
        &store,
        &[],
    );
    assert!(output.status.success(), "{}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("torch  {}", torch.wheel.filename)),
        "{stdout}"
    );
    assert!(
        stdout.contains("would fetch 7 pages and 10 files, "),
        "{stdout}"
    );
    assert!(stdout.contains("(dry run: nothing written)"), "{stdout}");
    // Per environment: the resolved set, its files and size, what the store already has.
    assert!(
        stdout.contains(
            "py311-linux-x86_64-cu130 (Python 3.11, linux-x86_64): 3 packages, 6 files, "
        ),
        "{stdout}"
    );
    assert!(stdout.contains("  torch 2.9.0  (cu130)\n"), "{stdout}");
    assert!(stdout.contains("  filelock 3.20.0\n"), "{stdout}");
    assert!(
        stdout.contains(", 0 already in the store (dry run"),
        "{stdout}"
    );
    assert!(!store.exists(), "the dry run created the store");

    // `mirror lock` writes one PEP 751 lock per environment, URLs under --server-url.
    let out = dir.path().join("locks");
    let output = Command::new(wheelgate_e2e::binary::path())
        .args(["mirror", "lock", "--config"])
        .arg(&config_path)
        .arg("--out")
        .arg(&out)
        .args(["--server-url", "http://mirror.example:3141/"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("4 locks written in "), "{stdout}");
    let lock = std::fs::read_to_string(out.join("pylock.py312-linux-x86_64-cu130.toml")).unwrap();
    assert!(lock.contains("lock-version = \"1.0\""), "{lock}");
    assert!(
        lock.contains("environments = [\"python_version == '3.12' and sys_platform == 'linux' and platform_machine == 'x86_64'\"]"),
        "{lock}"
    );
    assert!(
        lock.contains(&format!(
            "url = \"http://mirror.example:3141/files/torch/{}\"",
            torch.wheel.filename.replace('+', "%2B")
        )),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("sha256 = \"{}\"", torch.wheel.sha256)),
        "{lock}"
    );
    assert!(!store.exists(), "mirror lock created the store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_clearly_leaves_no_marker_and_a_rerun_completes() {
    let upstreams = Upstreams::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let config_path = dir.path().join("mirror.toml");
    std::fs::write(&config_path, config_text(&upstreams)).unwrap();

    // A 1 KiB file-size limit (SIGXFSZ ignored, so writes fail with EFBIG, as on a full disk):
    // the pages and most files cannot be written.
    let output = wheelgate(
        &["mirror", "sync", "--config"],
        &config_path,
        &store,
        &["1"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the disk is full"), "{stderr}");
    assert!(stderr.contains("the store"), "{stderr}");
    assert!(
        stderr.contains("is incomplete (no mirror-complete.json)"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("failed "), "{stdout}");
    assert!(!store.join(mirror::MARKER).exists());
    assert!(
        !store.join("locks").exists(),
        "a lock naming files not stored"
    );
    let parts: Vec<PathBuf> = std::fs::read_dir(store.join("files"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "part"))
        .collect();
    assert!(parts.is_empty(), "partial downloads left behind: {parts:?}");

    // Space again: the same command resumes and completes.
    let output = wheelgate(&["mirror", "sync", "--config"], &config_path, &store, &[]);
    assert!(output.status.success(), "{}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("failed 0"), "{stdout}");
    assert!(
        stdout.contains("wheelgate serve --offline --cache-dir"),
        "{stdout}"
    );
    assert!(store.join(mirror::MARKER).exists());
    assert!(
        store
            .join("locks/pylock.py312-linux-x86_64-cpu.toml")
            .is_file()
    );
    assert!(stdout.contains("all (union)"), "{stdout}");
}

/// Runs the `wheelgate` binary with `args`, then `<config> --store <store>`; with a file-size
/// limit in KiB when `limit` has one.
fn wheelgate(args: &[&str], config: &Path, store: &Path, limit: &[&str]) -> Output {
    let binary = wheelgate_e2e::binary::path();
    let mut command = if let [limit] = limit {
        // Ignored signals stay ignored across exec, so the limit makes writes fail instead of
        // killing the process.
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f {limit}; exec \"$0\" \"$@\""
            ))
            .arg(&binary);
        command
    } else {
        Command::new(&binary)
    };
    command
        .args(args)
        .arg(config)
        .arg("--store")
        .arg(store)
        .env("WHEELGATE_LOG_FORMAT", "text")
        .env("RUST_LOG", "warn");
    command.output().unwrap()
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
