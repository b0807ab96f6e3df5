//! Client authentication (`[auth]`): pip and uv install through a server that requires
//! credentials, given in the index URL (`http://user:password@host/simple/`), which they send on
//! every request to that host, files included; without credentials, or with wrong ones, both
//! fail.

use wheelgate_config::AuthConfig;
use wheelgate_config::auth::BasicUser;
use wheelgate_e2e::installers::Installer;
use wheelgate_e2e::machines;
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{install_into, install_ok, version};

fn auth() -> AuthConfig {
    AuthConfig {
        basic: vec![BasicUser {
            user: "ci".to_string(),
            password: None,
            // `printf %s s3cret | sha256sum`
            password_sha256: Some(
                "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0".to_string(),
            ),
        }],
        bearer: vec!["tok-123".to_string()],
        public_metrics: false,
    }
}

async fn start(upstreams: &Upstreams) -> Proxy {
    let machine = machines::H100.machine();
    Proxy::start_with(upstreams, move |config| {
        config.machine = Some(machine);
        config.auth = auth();
    })
    .await
}

async fn installs_with_credentials(installer: Installer, userinfo: &str) {
    let upstreams = Upstreams::start().await;
    let proxy = start(&upstreams).await;
    let url = format!("http://{userinfo}@{}/simple/", proxy.addr);
    let (_dir, dists) = install_ok(installer, &url, &["torch"]).await;
    assert_eq!(version(&dists, "torch"), machines::H100.torch());
}

async fn fails_without_credentials(installer: Installer) {
    let upstreams = Upstreams::start().await;
    let proxy = start(&upstreams).await;
    for url in [
        proxy.simple_url(),
        format!("http://ci:wrong@{}/simple/", proxy.addr),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let outcome = install_into(installer, &url, &["torch"], dir.path()).await;
        assert!(
            !outcome.success,
            "{installer} installed without valid credentials: {outcome}"
        );
    }
    // Nothing was fetched upstream on behalf of a refused client.
    assert_eq!(upstreams.pytorch.log.count_prefix("/"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_installs_with_basic_credentials_in_the_index_url() {
    installs_with_credentials(Installer::Pip, "ci:s3cret").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_with_basic_credentials_in_the_index_url() {
    installs_with_credentials(Installer::Uv, "ci:s3cret").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_installs_with_a_token_as_the_password() {
    installs_with_credentials(Installer::Uv, "__token__:tok-123").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_fails_without_credentials() {
    fails_without_credentials(Installer::Pip).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_fails_without_credentials() {
    fails_without_credentials(Installer::Uv).await;
}
