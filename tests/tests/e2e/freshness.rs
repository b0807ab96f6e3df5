//! Freshness: a release published upstream is installable through the proxy with default
//! settings within 30 s, by pip (which asks for pages with `Cache-Control: max-age=0`) and by
//! uv (which sends none). The proxy revalidates a page older than its freshness window
//! (`index_ttl_secs`, 10 s) before answering it, and tells clients the same `max-age`.

use std::time::{Duration, Instant};

use wheelgate_e2e::installers::{self, Installer};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::simple_index::SimpleIndex;
use wheelgate_e2e::upstream::Upstreams;
use wheelgate_e2e::wheels::WheelSpec;

use crate::support::{install_into, version};

/// What the README promises; the default window (10 s) plus a client's retry.
const PROMISED: Duration = Duration::from_secs(30);

async fn a_new_release_is_installable_within_30_s(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let internal = SimpleIndex::start(vec![
        WheelSpec::new("acme_utils", "1.0", "py3-none-any").build(),
    ])
    .await;
    let url = internal.url();
    let proxy = Proxy::start_with(&upstreams, move |config| {
        config.sources = vec![wheelgate_e2e::proxy::source("internal", &url, &["acme-*"])];
    })
    .await;
    // The page is cached (and fresh) with 1.0 only.
    let dir = tempfile::tempdir().unwrap();
    let outcome = install_into(installer, &proxy.simple_url(), &["acme-utils"], dir.path()).await;
    outcome.assert_success();
    assert_eq!(
        version(&installers::installed(dir.path()), "acme-utils"),
        "1.0"
    );

    internal.publish(WheelSpec::new("acme_utils", "2.0", "py3-none-any").build());
    let published = Instant::now();
    loop {
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(
            installer,
            &proxy.simple_url(),
            &["acme-utils==2.0"],
            dir.path(),
        )
        .await;
        if outcome.success {
            eprintln!(
                "{installer}: installable {:?} after publication",
                published.elapsed()
            );
            break;
        }
        assert!(
            published.elapsed() < PROMISED,
            "{installer}: 2.0 not installable {PROMISED:?} after publication: {outcome}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_a_new_release_within_30_s() {
    a_new_release_is_installable_within_30_s(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_a_new_release_within_30_s() {
    a_new_release_is_installable_within_30_s(Installer::Uv).await;
}
