//! uv projects: `[[tool.uv.index]]` pointing at wheelgate with `default = true`, `uv lock`,
//! `uv sync`; what the lock means when another machine uses it; credentials from the
//! environment and in the URL.
//!
//! What a lock means (observed here, and what the README says): `uv.lock` records the index URL
//! and the one build that URL served when it was locked. With another machine's URL in the
//! project, `uv sync --locked` refuses, `uv sync --frozen` installs the locked (other
//! machine's) build, and `uv sync` locks again for the new URL. With the same URL serving
//! another machine (`/simple/`), `uv sync --locked` installs the locked build.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use wheelgate_e2e::installers::project::{
    PASSWORD, Project, USER, locked_versions, pyproject, with_credentials,
};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::{assert_venv_has, authenticated};
use crate::support::assert_routing_safe;

/// A uv project needing `torch` whose only index is `url`.
fn project(url: &str) -> Project {
    Project::new(&pyproject(
        &["torch"],
        &format!("[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"{url}\"\ndefault = true\n"),
    ))
}

/// The torch build `uv.lock` pins for Linux x86_64. The page holds every platform's build, and
/// uv locks the labelled one and, in a fork of its own, the unlabelled macOS wheel (it takes the
/// plain version where a local one has no wheel).
fn locked_torch(project: &Project) -> String {
    let lock = project.read("uv.lock");
    let versions = locked_versions(&lock, "torch");
    assert!(versions.iter().any(|v| v == "2.9.0"), "{lock}");
    let labelled: Vec<String> = versions.into_iter().filter(|v| v.contains('+')).collect();
    assert_eq!(labelled.len(), 1, "{lock}");
    labelled[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_project_locks_and_syncs_the_token_machines_build() {
    let upstreams = Upstreams::start().await;
    // The server's own machine is an H100; the client's token is a V100's.
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let url = proxy.machine_url(&machines::V100.machine());
    let project = project(&url);
    project.uv(&["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::V100.torch());
    assert!(
        project
            .read("uv.lock")
            .contains(&format!("source = {{ registry = \"{url}\" }}")),
        "{}",
        project.read("uv.lock")
    );
    project.uv(&["sync"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_of_one_machine_with_another_machines_token() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let h100 = proxy.machine_url(&machines::H100.machine());
    let v100 = proxy.machine_url(&machines::V100.machine());
    let project = project(&h100);
    project.uv(&["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::H100.torch());

    // The V100 machine checks out the same project with its own token in the index URL, over
    // the file's by name or in the file itself.
    let over = format!("wheelgate={v100}");
    let locked = project
        .uv(&["sync", "--locked"], &[("UV_INDEX", over.as_str())])
        .await;
    assert!(
        !locked.success && locked.stderr.contains("needs to be updated"),
        "{locked}"
    );
    project.replace("pyproject.toml", &h100, &v100);
    let locked = project.uv(&["sync", "--locked"], &[]).await;
    assert!(!locked.success, "{locked}");
    assert!(
        locked.stderr.contains("needs to be updated"),
        "{}",
        locked.stderr
    );
    // `--frozen` trusts the lock: the H100's build, which this server would not offer a V100.
    project
        .uv(&["sync", "--frozen"], &[])
        .await
        .assert_success();
    assert_venv_has(&project, machines::H100).await;
    // A plain `uv sync` locks again through the new URL and installs the V100's build.
    project.uv(&["sync"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::V100.torch());
    assert_venv_has(&project, machines::V100).await;
    assert_routing_safe(&upstreams);
}

/// Waits until `addr` can be bound again (the previous server on it has stopped).
async fn wait_until_free(addr: SocketAddr) {
    let start = Instant::now();
    while std::net::TcpListener::bind(addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "`{addr}` is still in use"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_lock_through_one_url_keeps_the_locking_machines_build() {
    let upstreams = Upstreams::start().await;
    let h100_server = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let addr = h100_server.addr;
    let url = h100_server.simple_url();
    let project = project(&url);
    project.uv(&["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::H100.torch());

    // The same URL now answers for a V100 (another server's machine, as a client-network rule
    // would): the lock still says cu130, and `--locked` installs it without asking the index.
    drop(h100_server);
    wait_until_free(addr).await;
    let v100 = machines::V100.machine();
    let _v100_server = Proxy::start_with(&upstreams, move |config| {
        config.listen = addr;
        config.machine = Some(v100);
    })
    .await;
    project
        .uv(&["sync", "--locked"], &[])
        .await
        .assert_success();
    assert_venv_has(&project, machines::H100).await;
    // Asking again for torch is what takes the URL's current build.
    project
        .uv(&["lock", "--upgrade-package", "torch"], &[])
        .await
        .assert_success();
    assert_eq!(locked_torch(&project), machines::V100.torch());
    project.uv(&["sync"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_project_takes_credentials_from_the_environment() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let project = project(&proxy.simple_url());
    let refused = project.uv(&["lock"], &[]).await;
    assert!(!refused.success, "locked without credentials: {refused}");
    let credentials = [
        ("UV_INDEX_WHEELGATE_USERNAME", USER),
        ("UV_INDEX_WHEELGATE_PASSWORD", PASSWORD),
    ];
    project.uv(&["lock"], &credentials).await.assert_success();
    project.uv(&["sync"], &credentials).await.assert_success();
    assert_venv_has(&project, machines::H100).await;
    assert!(!project.read("uv.lock").contains(PASSWORD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_project_takes_credentials_in_the_index_url_and_keeps_them_out_of_the_lock() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let project = project(&with_credentials(&proxy.simple_url()));
    project.uv(&["lock"], &[]).await.assert_success();
    project
        .uv(&["sync", "--locked"], &[])
        .await
        .assert_success();
    assert_venv_has(&project, machines::H100).await;
    let lock = project.read("uv.lock");
    assert!(!lock.contains(PASSWORD), "{lock}");
}
