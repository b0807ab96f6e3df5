//! pip-tools: `pip-compile --generate-hashes` through wheelgate, then `pip-sync` into a fresh
//! venv; credentials from `PIP_INDEX_URL`; the compiled file on another machine's token.
//!
//! Observed: `requirements.txt` pins the build (`torch==2.9.0+cu128`) with its hashes, and by
//! default also `--index-url`, password included in plain text, whether the URL came from the
//! command line or from `PIP_INDEX_URL`; `--no-emit-index-url` leaves it out, and `pip-sync` takes the index
//! from `PIP_INDEX_URL`. On another machine's URL `pip-sync` fails: no such version there.

use std::path::PathBuf;

use wheelgate_e2e::installers::project::{PASSWORD, Project, Tool, with_credentials};
use wheelgate_e2e::installers::{Outcome, Tools, imported_version, installed};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::authenticated;
use crate::support::{assert_routing_safe, version};

/// A directory with `requirements.in` asking for `torch`.
fn project() -> Project {
    let project = Project::new("");
    project.write("requirements.in", "torch\n");
    project
}

async fn compile(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut all = vec!["--quiet", "--generate-hashes", "--strip-extras"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["requirements.in"]);
    project.run(&Tool::PipCompile.path(), &all, env).await
}

/// A fresh venv (with the pip its Python bundles, as `pip-sync` needs) in the project; its
/// interpreter.
async fn fresh_venv(project: &Project) -> PathBuf {
    project
        .run(&Tools::get().python, &["-m", "venv", "target-venv"], &[])
        .await
        .assert_success();
    project.dir().join("target-venv/bin/python")
}

async fn sync(project: &Project, python: &std::path::Path, env: &[(&str, &str)]) -> Outcome {
    let python = python.to_str().expect("a UTF-8 path");
    project
        .run(
            &Tool::PipSync.path(),
            &[
                "--python-executable",
                python,
                "--pip-args",
                "--no-cache-dir",
                "requirements.txt",
            ],
            env,
        )
        .await
}

async fn assert_synced(project: &Project, python: &std::path::Path, machine: TestMachine) {
    let dists = installed(&project.dir().join("target-venv"));
    assert_eq!(version(&dists, "torch"), machine.torch(), "{dists:?}");
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert_eq!(
        imported_version(Some(python), None, "torch").await,
        machine.torch()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_compile_and_pip_sync_install_the_token_machines_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let url = proxy.machine_url(&machines::V100.machine());
    let project = project();
    compile(&project, &["--index-url", &url], &[])
        .await
        .assert_success();
    let pins = project.read("requirements.txt");
    assert!(pins.contains(&format!("--index-url {url}\n")), "{pins}");
    assert!(
        pins.contains(&format!(
            "torch=={} \\\n    --hash=sha256:",
            machines::V100.torch()
        )),
        "{pins}"
    );
    let python = fresh_venv(&project).await;
    sync(&project, &python, &[]).await.assert_success();
    assert_synced(&project, &python, machines::V100).await;
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_tools_take_credentials_from_pip_index_url() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let index = with_credentials(&proxy.simple_url());
    let project = project();
    let env = [("PIP_INDEX_URL", index.as_str())];
    compile(&project, &["--no-emit-index-url"], &env)
        .await
        .assert_success();
    let pins = project.read("requirements.txt");
    assert!(!pins.contains(PASSWORD), "{pins}");
    assert!(
        pins.contains(&format!("torch=={} ", machines::H100.torch())),
        "{pins}"
    );
    let python = fresh_venv(&project).await;
    let refused = sync(&project, &python, &[]).await;
    assert!(!refused.success, "synced without credentials: {refused}");
    sync(&project, &python, &env).await.assert_success();
    assert_synced(&project, &python, machines::H100).await;

    // Without `--no-emit-index-url`, the password lands in the file in plain text.
    compile(&project, &["--output-file", "emitted.txt"], &env)
        .await
        .assert_success();
    let emitted = project.read("emitted.txt");
    assert!(
        emitted.contains(&format!("--index-url {index}\n")),
        "{emitted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_sync_of_one_machines_pins_with_another_machines_token() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let project = project();
    compile(
        &project,
        &[
            "--no-emit-index-url",
            "--index-url",
            &proxy.machine_url(&machines::H100.machine()),
        ],
        &[],
    )
    .await
    .assert_success();
    let python = fresh_venv(&project).await;
    let v100 = proxy.machine_url(&machines::V100.machine());
    let refused = sync(&project, &python, &[("PIP_INDEX_URL", v100.as_str())]).await;
    assert!(!refused.success, "{refused}");
    assert!(
        refused.stderr.contains(&format!(
            "No matching distribution found for torch=={}",
            machines::H100.torch()
        )),
        "{refused}"
    );
    assert!(!installed(&project.dir().join("target-venv")).contains_key("torch"));
}
