//! Poetry: `poetry source add --priority=primary`, `poetry lock`, `poetry install`; the lock on
//! another machine's token; credentials from `POETRY_HTTP_BASIC_*` and in the source URL.
//!
//! Observed: `poetry.lock` pins the build (`2.9.0+cu130`) and lists its files by name. With
//! another machine's URL in `pyproject.toml`, `poetry install` refuses (the file changed
//! significantly); `poetry lock` keeps the locked version, which that URL does not offer, so
//! `poetry install` then finds no candidate; `poetry lock --regenerate` takes the new URL's
//! build. Credentials in the source URL work but are copied into `poetry.lock`;
//! `POETRY_HTTP_BASIC_<SOURCE>_*` (or `poetry config http-basic.<source>`) keeps them out.

use wheelgate_e2e::installers::Outcome;
use wheelgate_e2e::installers::project::{
    PASSWORD, Project, Tool, USER, locked_version, pyproject, with_credentials,
};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::{assert_venv_has, authenticated};
use crate::support::assert_routing_safe;

/// A Poetry project (no package of its own) needing `torch`, with `url` added as its primary
/// source the way the README says.
async fn project(url: &str) -> Project {
    let project = Project::new(&pyproject(
        &["torch"],
        "[tool.poetry]\npackage-mode = false\n",
    ));
    poetry(
        &project,
        &["source", "add", "--priority=primary", "wheelgate", url],
        &[],
    )
    .await
    .assert_success();
    assert!(
        project.read("pyproject.toml").contains(&format!(
            "[[tool.poetry.source]]\nname = \"wheelgate\"\nurl = \"{url}\"\npriority = \"primary\""
        )),
        "{}",
        project.read("pyproject.toml")
    );
    project
}

async fn poetry(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    project.run(&Tool::Poetry.path(), args, env).await
}

fn locked_torch(project: &Project) -> String {
    locked_version(&project.read("poetry.lock"), "torch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poetry_primary_source_locks_and_installs_the_token_machines_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let project = project(&proxy.machine_url(&machines::V100.machine())).await;
    poetry(&project, &["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::V100.torch());
    poetry(&project, &["install"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poetry_lock_of_one_machine_with_another_machines_token() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let h100 = proxy.machine_url(&machines::H100.machine());
    let v100 = proxy.machine_url(&machines::V100.machine());
    let project = project(&h100).await;
    poetry(&project, &["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::H100.torch());

    project.replace("pyproject.toml", &h100, &v100);
    let refused = poetry(&project, &["install"], &[]).await;
    assert!(!refused.success, "{refused}");
    assert!(
        format!("{}{}", refused.stdout, refused.stderr).contains("changed significantly"),
        "{refused}"
    );
    // `poetry lock` keeps what is locked, a build the V100's index does not list.
    poetry(&project, &["lock"], &[]).await.assert_success();
    assert_eq!(locked_torch(&project), machines::H100.torch());
    let missing = poetry(&project, &["install"], &[]).await;
    assert!(!missing.success, "{missing}");
    assert!(
        format!("{}{}", missing.stdout, missing.stderr)
            .contains("Unable to find installation candidates for torch (2.9.0+cu130)"),
        "{missing}"
    );
    assert!(!project.installed().contains_key("torch"));
    // `--regenerate` resolves again through the V100's URL.
    poetry(&project, &["lock", "--regenerate"], &[])
        .await
        .assert_success();
    assert_eq!(locked_torch(&project), machines::V100.torch());
    poetry(&project, &["install"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poetry_takes_credentials_from_http_basic_variables() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let project = project(&proxy.simple_url()).await;
    let refused = poetry(&project, &["lock"], &[]).await;
    assert!(!refused.success, "locked without credentials: {refused}");
    let credentials = [
        ("POETRY_HTTP_BASIC_WHEELGATE_USERNAME", USER),
        ("POETRY_HTTP_BASIC_WHEELGATE_PASSWORD", PASSWORD),
    ];
    poetry(&project, &["lock"], &credentials)
        .await
        .assert_success();
    poetry(&project, &["install"], &credentials)
        .await
        .assert_success();
    assert_venv_has(&project, machines::H100).await;
    for file in ["pyproject.toml", "poetry.lock"] {
        assert!(!project.read(file).contains(PASSWORD), "{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poetry_takes_credentials_in_the_source_url() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    let project = project(&with_credentials(&proxy.simple_url())).await;
    poetry(&project, &["lock"], &[]).await.assert_success();
    poetry(&project, &["install"], &[]).await.assert_success();
    assert_venv_has(&project, machines::H100).await;
    // It works, but Poetry copies the source's URL, password included, into `poetry.lock`
    // (`[package.source] url`): hence `http-basic` in the README and `pip-config`.
    let lock = project.read("poetry.lock");
    assert!(lock.contains(&format!("{USER}:{PASSWORD}@")), "{lock}");
}
