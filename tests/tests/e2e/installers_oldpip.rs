//! The pips of long-term-support distributions beside the current one (`install`, `auth`):
//! pip 22.0.2 on Python 3.10 (Ubuntu 22.04) and pip 23.0.1 (Debian 12), each installing torch
//! through a machine token and through a server that needs credentials in the index URL.

use wheelgate_e2e::installers::imported_version;
use wheelgate_e2e::installers::installed;
use wheelgate_e2e::installers::project::{Tool, pip_install_with, with_credentials};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::authenticated;
use crate::support::{assert_routing_safe, version};

/// Installs torch with `tool`'s pip from `url` and checks that `machine`'s build landed and
/// imports with that pip's Python.
async fn installs(tool: Tool, pip: &str, url: &str, machine: TestMachine) {
    let python = tool.path();
    let dir = tempfile::tempdir().unwrap();
    let (outcome, pip_version) = pip_install_with(&python, url, &["torch"], dir.path()).await;
    assert!(
        pip_version.starts_with(&format!("pip {pip} ")) && pip_version.contains("(python 3.10)"),
        "`{}` is not pip {pip} on Python 3.10: {pip_version}",
        python.display()
    );
    outcome.assert_success();
    let dists = installed(dir.path());
    assert_eq!(version(&dists, "torch"), machine.torch(), "pip {pip}");
    assert_eq!(version(&dists, "filelock"), "3.20.0");
    assert_eq!(
        imported_version(Some(&python), Some(dir.path()), "torch").await,
        machine.torch()
    );
}

async fn through_a_token(tool: Tool, pip: &str) {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let url = proxy.machine_url(&machines::GTX_1080_TI.machine());
    installs(tool, pip, &url, machines::GTX_1080_TI).await;
    assert_routing_safe(&upstreams);
}

async fn with_credentials_in_the_url(tool: Tool, pip: &str) {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let dir = tempfile::tempdir().unwrap();
    let (refused, _) =
        pip_install_with(&tool.path(), &proxy.simple_url(), &["torch"], dir.path()).await;
    assert!(
        !refused.success,
        "pip {pip} installed without credentials: {refused}"
    );
    installs(
        tool,
        pip,
        &with_credentials(&proxy.simple_url()),
        machines::H100,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_22_0_installs_the_token_machines_build() {
    through_a_token(Tool::Pip22, "22.0.2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_23_0_installs_the_token_machines_build() {
    through_a_token(Tool::Pip23, "23.0.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_22_0_installs_with_credentials_in_the_index_url() {
    with_credentials_in_the_url(Tool::Pip22, "22.0.2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_23_0_installs_with_credentials_in_the_index_url() {
    with_credentials_in_the_url(Tool::Pip23, "23.0.1").await;
}
