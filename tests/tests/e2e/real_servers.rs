//! Real index servers behind wheelgate (`wheelgate_e2e::real_servers`, installed by
//! `scripts/real-servers-setup`): pypiserver, devpi-server (a user index with uploads),
//! simple-repository-server in front of a directory, proxpi in front of a static tree, and a
//! static tree written by simple-repository-generator. Each publishes the same wheels and `.zip`
//! sdist, one wheel yanked where the server can yank, and is put behind wheelgate as the general
//! upstream, and as the owner of `acme-*` in a `[[sources]]` entry beside a general index that
//! squats those names at 99.0.
//!
//! Real pip and uv must resolve and install through wheelgate exactly what they resolve and
//! install from the server directly, which must be what the test published: the same names,
//! versions, filenames and sha256 (pip's `--report`, uv's PEP 751 lock), the same installed
//! files byte for byte, and every file fetched from wheelgate, never from the server. Where the
//! server yanks, the yanked wheel is skipped by both and still resolved for an exact pin.

use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::{Proxy, source};
use wheelgate_e2e::real_servers::release::{REQUIREMENTS, Release, YANKED_PIN};
use wheelgate_e2e::real_servers::resolution::{self, Installation};
use wheelgate_e2e::real_servers::{Running, Server};
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

/// Where the server stands in wheelgate's configuration.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// `pypi_url`: every name that is not PyTorch's.
    General,
    /// A `[[sources]]` entry owning `acme-*`, the general index squatting them.
    Owner,
}

/// A general index publishing every `acme-*` name at 99.0: any of them installed, or even asked
/// for, means wheelgate routed an owned name elsewhere.
async fn squatter() -> SimpleIndex {
    SimpleIndex::start(
        ["acme-utils", "acme-core", "acme-legacy"]
            .into_iter()
            .map(|name| WheelSpec::new(name, "99.0", "py3-none-any").build())
            .collect(),
    )
    .await
}

async fn proxy_for(
    upstreams: &Upstreams,
    running: &Running,
    squatter: &SimpleIndex,
    role: Role,
) -> Proxy {
    let index = running.index_url.clone();
    let squatter_url = squatter.url();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machines::CPU_ONLY.machine());
        match role {
            Role::General => config.pypi_url = index,
            Role::Owner => {
                config.pypi_url = squatter_url;
                config.sources = vec![source("internal", &index, &["acme-*"])];
            }
        }
    })
    .await
}

/// `installer` from `index_url`, or a panic with its output and the server's log.
async fn install(
    installer: Installer,
    index_url: &str,
    what: &str,
    running: &Running,
) -> Installation {
    resolution::install(installer, index_url, REQUIREMENTS)
        .await
        .unwrap_or_else(|output| panic!("{what} failed:\n{output}\n{}", running.logs()))
}

async fn same_through_wheelgate(server: Server, role: Role) {
    let release = Release::build();
    let running = server.start(&release).await;
    let upstreams = Upstreams::start().await;
    let squatter = squatter().await;
    let proxy = proxy_for(&upstreams, &running, &squatter, role).await;
    let expected = release.expected(running.yanks);

    for installer in [Installer::Pip, Installer::Uv] {
        let direct = install(
            installer,
            &running.index_url,
            &format!("{installer} from {server} directly"),
            &running,
        )
        .await;
        // Else the comparison below could hold between two wrong answers.
        assert_eq!(
            direct.resolved, expected,
            "{installer} from {server} directly did not resolve what it publishes:\n{}",
            direct.output
        );
        let through = install(
            installer,
            &proxy.simple_url(),
            &format!("{installer} through wheelgate ({role:?}) from {server}"),
            &running,
        )
        .await;
        let both = format!(
            "--- directly\n{}\n--- through wheelgate\n{}\n{}",
            direct.output,
            through.output,
            running.logs()
        );
        assert_eq!(
            through.resolved, direct.resolved,
            "{installer} resolved otherwise through wheelgate ({role:?}) than from {server}:\n{both}"
        );
        assert_eq!(
            through.installed, direct.installed,
            "{installer} installed otherwise through wheelgate ({role:?}) than from {server}:\n{both}"
        );
        assert_eq!(
            through.tree, direct.tree,
            "{installer} installed other files through wheelgate ({role:?}) than from {server}:\n{both}"
        );
        let elsewhere: Vec<&String> = through
            .urls
            .iter()
            .filter(|url| !url.starts_with(&format!("{}/", proxy.base())))
            .collect();
        assert!(
            elsewhere.is_empty(),
            "{installer} was sent past wheelgate to {elsewhere:?}:\n{both}"
        );
        if running.yanks {
            yanked_file_still_pinnable(installer, &running, &proxy, &release).await;
        }
    }
    let owned_names_asked: Vec<String> = squatter
        .requests()
        .into_iter()
        .filter(|path| path.contains("acme"))
        .collect();
    if let Role::Owner = role {
        assert!(
            owned_names_asked.is_empty(),
            "the general index was asked for names {server} owns: {owned_names_asked:?}"
        );
    }
}

/// A yanked file is kept, marked, not dropped (PEP 592): `acme-utils==1.1` still resolves to it,
/// through wheelgate as from the server. Without this, a proxy that dropped yanked files would
/// pass the comparison above.
async fn yanked_file_still_pinnable(
    installer: Installer,
    running: &Running,
    proxy: &Proxy,
    release: &Release,
) {
    let server = running.server;
    let resolve = |index_url: String, what: String| async move {
        resolution::resolve(installer, &index_url, YANKED_PIN)
            .await
            .unwrap_or_else(|output| panic!("{what} failed:\n{output}\n{}", running.logs()))
    };
    let (direct, direct_output) = resolve(
        running.index_url.clone(),
        format!("{installer} resolving {YANKED_PIN:?} from {server} directly"),
    )
    .await;
    assert_eq!(
        direct,
        release.expected_with("1.1"),
        "{installer} from {server} directly did not resolve the yanked file for a pin:\n{direct_output}"
    );
    let (through, through_output) = resolve(
        proxy.simple_url(),
        format!("{installer} resolving {YANKED_PIN:?} through wheelgate from {server}"),
    )
    .await;
    assert_eq!(
        through, direct,
        "{installer} resolved {YANKED_PIN:?} otherwise through wheelgate than from {server}:\n--- directly\n{direct_output}\n--- through wheelgate\n{through_output}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pypiserver_as_the_general_upstream() {
    same_through_wheelgate(Server::Pypiserver, Role::General).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pypiserver_as_the_owner_of_its_projects() {
    same_through_wheelgate(Server::Pypiserver, Role::Owner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devpi_user_index_as_the_general_upstream() {
    same_through_wheelgate(Server::Devpi, Role::General).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devpi_user_index_as_the_owner_of_its_projects() {
    same_through_wheelgate(Server::Devpi, Role::Owner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_repository_server_as_the_general_upstream() {
    same_through_wheelgate(Server::SimpleRepositoryServer, Role::General).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_repository_server_as_the_owner_of_its_projects() {
    same_through_wheelgate(Server::SimpleRepositoryServer, Role::Owner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxpi_as_the_general_upstream() {
    same_through_wheelgate(Server::Proxpi, Role::General).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxpi_as_the_owner_of_its_projects() {
    same_through_wheelgate(Server::Proxpi, Role::Owner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_static_tree_as_the_general_upstream() {
    same_through_wheelgate(Server::StaticTree, Role::General).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_static_tree_as_the_owner_of_its_projects() {
    same_through_wheelgate(Server::StaticTree, Role::Owner).await;
}
