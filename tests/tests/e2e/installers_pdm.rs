//! PDM: `[[tool.pdm.source]]` named `pypi` (replacing PyPI) pointing at wheelgate, `pdm lock`,
//! `pdm install`; the lock on another machine's token; credentials from `${VARIABLES}` in the
//! source URL.
//!
//! Observed: `pdm.lock` records `torch` as `2.9.0` (no local label) with the locked build's
//! files by name and sha256, and no URL. With another machine's URL, `pdm install` sees the
//! changed `pyproject.toml`, locks again keeping the locked pins (the other machine's files and
//! hashes), finds no file matching those hashes on the new URL and fails: it never installs
//! another build than the locked one. `pdm lock` takes the new URL's build.

use wheelgate_e2e::installers::Outcome;
use wheelgate_e2e::installers::project::{PASSWORD, Project, Tool, USER, pyproject};
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::installers_support::{assert_venv_has, authenticated};
use crate::support::assert_routing_safe;

/// A PDM project (no package of its own) needing `torch`, whose only source is `url`.
fn project(url: &str) -> Project {
    Project::new(&pyproject(
        &["torch"],
        &format!(
            "[tool.pdm]\ndistribution = false\n\n[[tool.pdm.source]]\nname = \"pypi\"\nurl = \"{url}\"\n"
        ),
    ))
}

async fn pdm(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    project.run(&Tool::Pdm.path(), args, env).await
}

/// Whether `pdm.lock` holds `machine`'s torch wheel for each platform, and no other build: PDM
/// locks a public version with every file the page lists for it, one build per platform, and
/// the builds whose label differs from the highest version's also under the plain version
/// (`server/plain_version.rs`): the same builds under a second name.
fn assert_locked(project: &Project, machine: TestMachine) {
    let lock = project.read("pdm.lock");
    let wheels = machine.torch_wheels();
    let lead = format!("torch-{}-", machine.torch());
    let aliases: Vec<String> = wheels
        .iter()
        .filter(|wheel| wheel.contains('+') && !wheel.starts_with(&lead))
        .map(|wheel| {
            let (head, tail) = wheel.split_once('+').unwrap();
            format!("{head}{}", &tail[tail.find('-').unwrap()..])
        })
        .collect();
    for wheel in wheels.iter().chain(&aliases) {
        assert!(
            lock.contains(wheel.as_str()),
            "`{wheel}` is not locked:\n{lock}"
        );
    }
    assert_eq!(
        lock.matches("{file = \"torch-2.9.0").count(),
        wheels.len() + aliases.len(),
        "another build is locked too:\n{lock}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdm_locks_and_installs_the_token_machines_build() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::H100.machine()).await;
    let project = project(&proxy.machine_url(&machines::V100.machine()));
    pdm(&project, &["lock"], &[]).await.assert_success();
    assert_locked(&project, machines::V100);
    pdm(&project, &["install"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdm_lock_of_one_machine_with_another_machines_token() {
    let upstreams = Upstreams::start().await;
    let proxy = Proxy::start(&upstreams, &machines::CPU_ONLY.machine()).await;
    let h100 = proxy.machine_url(&machines::H100.machine());
    let v100 = proxy.machine_url(&machines::V100.machine());
    let project = project(&h100);
    pdm(&project, &["lock"], &[]).await.assert_success();
    assert_locked(&project, machines::H100);

    project.replace("pyproject.toml", &h100, &v100);
    // `pdm install` relocks on its own (the sources changed) but keeps the H100's pins.
    let refused = pdm(&project, &["install"], &[]).await;
    assert!(!refused.success, "{refused}");
    assert!(
        format!("{}{}", refused.stdout, refused.stderr)
            .contains("CandidateNotFound: No candidate is found for `torch`"),
        "{refused}"
    );
    assert!(!project.installed().contains_key("torch"));
    pdm(&project, &["lock"], &[]).await.assert_success();
    assert_locked(&project, machines::V100);
    pdm(&project, &["install"], &[]).await.assert_success();
    assert_venv_has(&project, machines::V100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdm_expands_credentials_from_variables_in_the_source_url() {
    let upstreams = Upstreams::start().await;
    let proxy = authenticated(&upstreams).await;
    // What `wheelgate pip-config --format pdm` writes for a URL with credentials.
    let url = proxy
        .simple_url()
        .replacen("://", "://${WHEELGATE_USER}:${WHEELGATE_PASSWORD}@", 1);
    let project = project(&url);
    let credentials = [("WHEELGATE_USER", USER), ("WHEELGATE_PASSWORD", PASSWORD)];
    let refused = pdm(
        &project,
        &["lock"],
        &[("WHEELGATE_USER", USER), ("WHEELGATE_PASSWORD", "wrong")],
    )
    .await;
    assert!(!refused.success, "locked with a wrong password: {refused}");
    pdm(&project, &["lock"], &credentials)
        .await
        .assert_success();
    pdm(&project, &["install"], &credentials)
        .await
        .assert_success();
    assert_venv_has(&project, machines::H100).await;
    for file in ["pyproject.toml", "pdm.lock"] {
        assert!(!project.read(file).contains(PASSWORD), "{file}");
    }
}
