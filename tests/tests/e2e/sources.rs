//! Sources (`[[sources]]`): real pip and uv through one index URL that serves a company's own
//! packages from its internal index and torch from both the PyTorch index and PyPI.
//!
//! - An internal index owns `acme-*`; a fake PyPI squats `acme-utils` 99.0. The squatter is
//!   never installed nor even fetched, with the internal index up, answering 503, or never
//!   reachable: then the install fails, naming the source.
//! - An `accelerate`-like package (1.0 needs torch; 0.0.1, the ancient release, does not) with
//!   the PyTorch index down and nothing cached: torch comes from PyPI's default build where it
//!   runs; where it cannot run (a GTX 1080 Ti and 2.9's cu128 default build) the torch page is
//!   an error naming the sources and uv fails loudly (pip takes any failed index page for "no
//!   versions" and backtracks, whatever the proxy answers; it never gets a torch that does not
//!   run).
//! - `torchtune` 0.7.0, only on PyPI, is installable beside 0.6.0 on the PyTorch index.
//! - A CPU-only machine gets PyPI's CUDA torch as a CPU build of last resort when nothing
//!   else exists.

use axum::http::StatusCode;
use wheelgate_config::SourceConfig;
use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

use crate::support::{install_into, version};

const LINUX: &str = "py3-none-manylinux_2_28_x86_64";

fn internal_source(url: &str) -> SourceConfig {
    wheelgate_e2e::proxy::source("internal", url, &["acme-*"])
}

/// `acme-utils` 1.0 on the internal index; PyPI squats it at 99.0 (and has `filelock`).
async fn company_indexes() -> (SimpleIndex, SimpleIndex) {
    let internal = SimpleIndex::start(vec![
        WheelSpec::new("acme-utils", "1.0", "py3-none-any")
            .requires("acme-core")
            .build(),
        WheelSpec::new("acme-core", "2.1", "py3-none-any").build(),
    ])
    .await;
    let pypi = SimpleIndex::start(vec![
        WheelSpec::new("acme-utils", "99.0", "py3-none-any").build(),
        WheelSpec::new("acme-core", "99.0", "py3-none-any").build(),
        WheelSpec::new("filelock", "3.20.0", "py3-none-any").build(),
    ])
    .await;
    (internal, pypi)
}

async fn company_proxy(upstreams: &Upstreams, pypi: &SimpleIndex, internal_url: &str) -> Proxy {
    let source = internal_source(internal_url);
    let pypi_url = pypi.url();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machines::CPU_ONLY.machine());
        config.pypi_url = pypi_url;
        config.sources = vec![source];
    })
    .await
}

fn squatter_fetched(pypi: &SimpleIndex) -> Vec<String> {
    pypi.requests()
        .into_iter()
        .filter(|path| path.contains("acme"))
        .collect()
}

async fn internal_packages_come_only_from_the_internal_index(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let (internal, pypi) = company_indexes().await;
    let proxy = company_proxy(&upstreams, &pypi, &internal.url()).await;

    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(
        installer,
        &proxy.simple_url(),
        &["acme-utils", "filelock"],
        dir.path(),
    )
    .await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    assert_eq!(version(&dists, "acme-utils"), "1.0", "{outcome}");
    assert_eq!(version(&dists, "acme-core"), "2.1", "{outcome}");
    assert_eq!(version(&dists, "filelock"), "3.20.0", "{outcome}");
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());

    // The internal index goes down; the proxy has its pages and files cached, so a reinstall
    // still works, from the cache.
    internal.set_failing(Some(StatusCode::SERVICE_UNAVAILABLE));
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["acme-utils"], dir.path()).await;
    outcome.assert_success();
    assert_eq!(
        version(&installers::installed(dir.path()), "acme-utils"),
        "1.0"
    );
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_internal_packages_only_from_the_internal_index() {
    internal_packages_come_only_from_the_internal_index(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_internal_packages_only_from_the_internal_index() {
    internal_packages_come_only_from_the_internal_index(Installer::Uv).await;
}

async fn a_failing_owner_fails_the_install(installer: Installer, internal_down: bool) {
    let upstreams = Upstreams::start().await;
    let (internal, pypi) = company_indexes().await;
    let internal_url = if internal_down {
        internal.set_failing(Some(StatusCode::SERVICE_UNAVAILABLE));
        internal.url()
    } else {
        SimpleIndex::unreachable_url().await
    };
    let proxy = company_proxy(&upstreams, &pypi, &internal_url).await;
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["acme-utils"], dir.path()).await;
    assert!(!outcome.success, "installed with the owner down: {outcome}");
    assert!(installers::installed(dir.path()).is_empty());
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());
    // What the installer was told names the source.
    let response = reqwest::get(format!("{}acme-utils/", proxy.simple_url()))
        .await
        .unwrap();
    assert!(response.status().is_server_error(), "{}", response.status());
    let text = response.text().await.unwrap();
    assert!(
        text.contains("served only from the source `internal`"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_never_gets_the_squatter_while_the_internal_index_answers_503() {
    a_failing_owner_fails_the_install(Installer::Pip, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_never_gets_the_squatter_while_the_internal_index_answers_503() {
    a_failing_owner_fails_the_install(Installer::Uv, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_never_gets_the_squatter_when_the_internal_index_is_never_reached() {
    a_failing_owner_fails_the_install(Installer::Pip, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_never_gets_the_squatter_when_the_internal_index_is_never_reached() {
    a_failing_owner_fails_the_install(Installer::Uv, false).await;
}

/// A PyTorch index (a plain index in PyTorch's `<root>/<project>/` layout) and a PyPI, the
/// way both publish torch 2.9.0: labelled builds on the first, the default build (cu128 on
/// Linux x86_64 for 2.9) unlabelled on the second; `accelerate` 0.0.1 (no torch) and 1.0
/// (needs torch) on PyPI; `torchtune` 0.6.0 on both and 0.7.0 only on PyPI.
async fn torch_indexes() -> (SimpleIndex, SimpleIndex) {
    let pytorch = SimpleIndex::start(vec![
        WheelSpec::new("torch", "2.9.0+cu130", LINUX).build(),
        WheelSpec::new("torch", "2.9.0+cpu", LINUX).build(),
        WheelSpec::new("torchtune", "0.6.0", "py3-none-any").build(),
    ])
    .await;
    let pypi = SimpleIndex::start(vec![
        WheelSpec::new("torch", "2.9.0", LINUX).build(),
        WheelSpec::new("accelerate", "0.0.1", "py3-none-any").build(),
        WheelSpec::new("accelerate", "1.0", "py3-none-any")
            .requires("torch>=2.0")
            .build(),
        WheelSpec::new("torchtune", "0.6.0", "py3-none-any").build(),
        WheelSpec::new("torchtune", "0.7.0", "py3-none-any").build(),
    ])
    .await;
    (pytorch, pypi)
}

async fn torch_proxy(
    upstreams: &Upstreams,
    pytorch_url: String,
    pypi: &SimpleIndex,
    machine: &wheelgate_resolver::Machine,
) -> Proxy {
    let (pypi_url, machine) = (pypi.url(), machine.clone());
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.pytorch_url = pytorch_url;
        config.pypi_url = pypi_url;
    })
    .await
}

async fn accelerate_with_the_pytorch_index_down(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let (pytorch, pypi) = torch_indexes().await;
    pytorch.set_failing(Some(StatusCode::SERVICE_UNAVAILABLE));

    // An H100 runs PyPI's default build (cu128 has sm 9.0).
    let proxy = torch_proxy(&upstreams, pytorch.url(), &pypi, &machines::H100.machine()).await;
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["accelerate"], dir.path()).await;
    outcome.assert_success();
    let dists = installers::installed(dir.path());
    assert_eq!(version(&dists, "accelerate"), "1.0", "{outcome}");
    assert_eq!(version(&dists, "torch"), "2.9.0", "{outcome}");

    // An unreachable PyTorch index, a cold cache, and a GTX 1080 Ti (Pascal, 6.1), which 2.9's
    // cu128 (PyPI's default build) has no code for: no torch runs here, and the install fails
    // rather than taking accelerate 0.0.1.
    let proxy = torch_proxy(
        &upstreams,
        SimpleIndex::unreachable_url().await,
        &pypi,
        &machines::GTX_1080_TI.machine(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["accelerate"], dir.path()).await;
    let dists = installers::installed(dir.path());
    assert!(!dists.contains_key("torch"), "{dists:?}: {outcome}");
    // The torch page is an error naming the source, never an empty page.
    let response = reqwest::get(format!("{}torch/", proxy.simple_url()))
        .await
        .unwrap();
    assert!(response.status().is_server_error(), "{}", response.status());
    let text = response.text().await.unwrap();
    assert!(
        text.contains("served only from the sources `pytorch` and `pypi`"),
        "{text}"
    );
    match installer {
        // uv stops on an index page that fails.
        Installer::Uv => assert!(
            !outcome.success && dists.is_empty(),
            "installed {dists:?} without a torch that runs: {outcome}"
        ),
        // pip takes any failed index page for "no versions" (its LinkCollector logs and skips
        // it), so it backtracks to the release without torch whatever the proxy answers: what
        // a proxy can do is never give it a torch that does not run.
        Installer::Pip => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_torch_from_pypi_while_the_pytorch_index_is_down() {
    accelerate_with_the_pytorch_index_down(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_torch_from_pypi_while_the_pytorch_index_is_down() {
    accelerate_with_the_pytorch_index_down(Installer::Uv).await;
}

async fn pypi_and_pytorch_merged(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let (pytorch, pypi) = torch_indexes().await;
    let proxy = torch_proxy(&upstreams, pytorch.url(), &pypi, &machines::H100.machine()).await;

    // torchtune 0.7.0 is only on PyPI.
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["torchtune"], dir.path()).await;
    outcome.assert_success();
    assert_eq!(
        version(&installers::installed(dir.path()), "torchtune"),
        "0.7.0"
    );
    // torch: the H100 gets the PyTorch index's cu130, not PyPI's default cu128.
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["torch"], dir.path()).await;
    outcome.assert_success();
    assert_eq!(
        version(&installers::installed(dir.path()), "torch"),
        "2.9.0+cu130"
    );
    // The shared torchtune 0.6.0 wheel came from the PyTorch index, which comes first.
    let dir = tempfile::tempdir().unwrap();
    install_into(
        installer,
        &proxy.simple_url(),
        &["torchtune==0.6.0"],
        dir.path(),
    )
    .await
    .assert_success();
    assert!(
        pytorch
            .requests()
            .iter()
            .any(|p| p == "/files/torchtune-0.6.0-py3-none-any.whl"),
        "{:?}",
        pytorch.requests()
    );
    assert!(
        !pypi
            .requests()
            .iter()
            .any(|p| p.starts_with("/files/torch") && p.contains("0.6.0")),
        "{:?}",
        pypi.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_sees_pypi_only_releases_of_pytorch_projects() {
    pypi_and_pytorch_merged(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_sees_pypi_only_releases_of_pytorch_projects() {
    pypi_and_pytorch_merged(Installer::Uv).await;
}

async fn cpu_machine_gets_a_cuda_build_of_last_resort(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let pytorch = SimpleIndex::start(Vec::new()).await;
    let pypi = SimpleIndex::start(vec![WheelSpec::new("torch", "2.9.0", LINUX).build()]).await;
    let proxy = torch_proxy(
        &upstreams,
        pytorch.url(),
        &pypi,
        &machines::CPU_ONLY.machine(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["torch"], dir.path()).await;
    outcome.assert_success();
    assert_eq!(
        version(&installers::installed(dir.path()), "torch"),
        "2.9.0"
    );
    let text = reqwest::get(format!("{}/explain/torch/?format=json", proxy.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let explain: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(text.contains("last resort"), "{text}");
    assert_eq!(
        explain["file_sources"][&format!("torch-2.9.0-{LINUX}.whl")],
        "pypi"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_on_a_cpu_machine_gets_pypis_cuda_torch_as_a_last_resort() {
    cpu_machine_gets_a_cuda_build_of_last_resort(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_on_a_cpu_machine_gets_pypis_cuda_torch_as_a_last_resort() {
    cpu_machine_gets_a_cuda_build_of_last_resort(Installer::Uv).await;
}

/// A mirror of `acme-utils` (resolved for Python 3.11 on Linux x86_64) with `sources` as its
/// `[[sources]]` entries, synced into `store`.
async fn sync_acme_utils(
    upstreams: &Upstreams,
    pypi: &SimpleIndex,
    sources: &str,
    store: &std::path::Path,
) -> Result<wheelgate_mirror::SyncReport, wheelgate_mirror::SyncError> {
    use wheelgate_mirror::{self as mirror, MirrorConfig, NoProgress, SyncOptions};

    let text = format!(
        "pytorch_url = \"{}\"\npypi_url = \"{}\"\npython = [\"3.11\"]\nplatforms = [\"linux-x86_64\"]\n\n[[package]]\nname = \"acme-utils\"\n{sources}",
        upstreams.pytorch_url(),
        pypi.url(),
    );
    let config = MirrorConfig::parse(&text, std::path::Path::new("mirror.toml")).unwrap();
    let options = SyncOptions {
        store: store.to_path_buf(),
        jobs: 2,
    };
    mirror::sync(&config, &options, &NoProgress).await
}

fn source_entry(name: &str, url: &str, projects: &str) -> String {
    format!("\n[[sources]]\nname = \"{name}\"\nurl = \"{url}\"\nprojects = [{projects}]\n")
}

/// `mirror sync` with `[[sources]]`: `acme-utils` and its dependency come from the internal
/// index (the PyPI squatter never asked), and an offline server on the store installs them
/// with the internal index gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_stores_internal_packages_from_their_source_and_serves_them_offline() {
    let upstreams = Upstreams::start().await;
    let (internal, pypi) = company_indexes().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let sources = source_entry("internal", &internal.url(), "\"acme-*\"");
    let report = sync_acme_utils(&upstreams, &pypi, &sources, &store)
        .await
        .unwrap();
    assert!(report.is_complete(), "{:?}", report.failures);
    let names: Vec<&str> = report
        .plan
        .files
        .iter()
        .map(|f| f.filename.as_str())
        .collect();
    assert!(
        names.contains(&"acme_utils-1.0-py3-none-any.whl"),
        "{names:?}"
    );
    assert!(
        names.contains(&"acme_core-2.1-py3-none-any.whl"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("99.0")), "{names:?}");
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());

    // The internal index goes away; an offline server on the store, configured by the
    // `serve.toml` the sync wrote into it, as the command it prints says (no flag can say which
    // source owns which names).
    let serve_toml = report
        .serve_config
        .clone()
        .expect("a store synced with [[sources]] has its serve.toml");
    assert_eq!(
        report.serve_command(),
        format!("wheelgate serve --config {}", serve_toml.display())
    );
    let from_store = wheelgate_config::ServeConfig::from_file(&serve_toml).unwrap();
    assert!(from_store.offline);
    assert_eq!(from_store.cache_dir, store);
    assert_eq!(from_store.sources, vec![internal_source(&internal.url())]);
    drop(internal);
    let proxy = Proxy::start_with(&upstreams, move |config| {
        config.offline = from_store.offline;
        config.cache_dir = from_store.cache_dir;
        config.pytorch_url = from_store.pytorch_url;
        config.pypi_url = from_store.pypi_url;
        config.sources = from_store.sources;
        config.machine = Some(machines::CPU_ONLY.machine());
    })
    .await;
    // A project the store does not hold is said to be missing from this mirror.
    let response = reqwest::get(format!("{}numpy/", proxy.simple_url()))
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let text = response.text().await.unwrap();
    assert!(text.contains("`numpy` is not in this mirror"), "{text}");
    for installer in [Installer::Pip, Installer::Uv] {
        let dir = tempfile::tempdir().unwrap();
        let outcome =
            install_into(installer, &proxy.simple_url(), &["acme-utils"], dir.path()).await;
        outcome.assert_success();
        let dists = installers::installed(dir.path());
        assert_eq!(version(&dists, "acme-utils"), "1.0", "{installer}");
        assert_eq!(version(&dists, "acme-core"), "2.1", "{installer}");
    }
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());
}

/// A mirror of a name two sources own, one of them unreachable: the sync fails naming it,
/// rather than completing a store without that source's builds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_fails_while_an_owner_is_unreachable() {
    let upstreams = Upstreams::start().await;
    let (internal, pypi) = company_indexes().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let sources = source_entry("internal", &internal.url(), "\"acme-*\"")
        + &source_entry(
            "team",
            &SimpleIndex::unreachable_url().await,
            "\"acme-utils\"",
        );
    let result = sync_acme_utils(&upstreams, &pypi, &sources, &store).await;
    let err = match result {
        Ok(report) => panic!("completed without an owner: {:?}", report.plan.files),
        Err(err) => format!(
            "{err}: {}",
            wheelgate_index::error_chain::source_chain(&err)
        ),
    };
    assert!(err.contains("acme-utils"), "{err}");
    assert!(!store.join(wheelgate_mirror::MARKER).exists());
    assert!(squatter_fetched(&pypi).is_empty(), "{:?}", pypi.requests());
}
